#!/usr/bin/env bash
# Writes DIR/stage_compositor_commit.h, the commit that Sources/CBuildInfo stamps into the
# build when the build passes `-Xcc -IDIR` (`make release`, `make deb`). The file is rewritten
# only when the commit changes, so a rebuild at the same commit recompiles nothing; a new commit
# recompiles one C file. A tree with uncommitted changes to tracked files says `<commit>-dirty`;
# outside a git checkout, "unknown".
#
#   scripts/stamp-build-info.sh DIR
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
repo=$(cd "$(dirname "$0")/.." && pwd)

commit=unknown
if git -C "$repo" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  commit=$(git -C "$repo" rev-parse --short=12 HEAD)
  if [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
    commit="$commit-dirty"
  fi
fi
[[ "$commit" =~ ^[0-9a-zA-Z-]+$ ]] || commit=unknown

mkdir -p "$dir"
header="$dir/stage_compositor_commit.h"
line="#define STAGE_COMPOSITOR_COMMIT \"$commit\""
if [[ ! -f "$header" ]] || [[ "$(cat "$header")" != "$line" ]]; then
  echo "$line" > "$header"
fi
