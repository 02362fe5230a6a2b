#!/usr/bin/env bash
# Builds out/deb/stage-compositor_<version>_amd64.deb with dpkg-deb: a release build with the
# Swift runtime linked in (--static-swift-stdlib: at run time the binary needs only Debian's
# C libraries), the systemd unit, /etc/stage-compositor/config.json as a conffile (loopback,
# auth off), the layout presets and the demo stage under /usr/share/stage-compositor, and
# maintainer scripts that make the system user and /var/lib/stage-compositor. Depends: is
# computed by dpkg-shlibdeps from the libraries the binary links. Prints the .deb's path.
#
#   scripts/build-deb.sh [--skip-build] [--out DIR]
#
# DEB_SCRATCH (default .build-deb): SwiftPM's scratch path for this build (its own, because the
# static runtime changes every module's flags; `make release` keeps .build/release) and the
# staging root. The version is BuildInfo.version (Sources/Server/Operations/BuildInfo.swift);
# the commit is stamped in by scripts/stamp-build-info.sh. Packaging files: packaging/.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

skip_build=""
out=out/deb
while [[ $# -gt 0 ]]; do
  case "$1" in
    --skip-build) skip_build=1; shift ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build-deb.sh: unknown argument '$1' (--skip-build, --out DIR)" >&2; exit 2 ;;
  esac
done

swift=${SWIFT:-swift}
scratch=${DEB_SCRATCH:-.build-deb}
mkdir -p "$scratch" "$out"
scratch=$(cd "$scratch" && pwd)
out=$(cd "$out" && pwd)

version=$(sed -n 's/.*static let version = "\([^"]*\)".*/\1/p' Sources/Server/Operations/BuildInfo.swift)
[[ -n "$version" ]] || { echo "build-deb.sh: no version in Sources/Server/Operations/BuildInfo.swift" >&2; exit 1; }
changelog_version=$(sed -n '1s/^stage-compositor (\([^)]*\)).*/\1/p' packaging/changelog)
if [[ "$changelog_version" != "$version" ]]; then
  echo "build-deb.sh: packaging/changelog is at $changelog_version, BuildInfo.version is $version: add an entry" >&2
  exit 1
fi
arch=$(dpkg --print-architecture)
[[ "$arch" == amd64 ]] || { echo "build-deb.sh: builds amd64 packages only (this is $arch)" >&2; exit 1; }

# 1. The binary.
scripts/stamp-build-info.sh "$scratch/build-info"
if [[ -z "$skip_build" ]]; then
  echo "build-deb.sh: swift build -c release --static-swift-stdlib (scratch $scratch; about 15 min from nothing on 2 cores)" >&2
  # -z now: with the default relro, a read-only GOT (lintian's hardening-no-bindnow); it only
  # changes the link.
  nice -n 10 "$swift" build -c release --static-swift-stdlib --product stage-compositor \
    --scratch-path "$scratch" -Xcc "-I$scratch/build-info" -Xlinker -z -Xlinker now >&2
fi
binary="$scratch/release/stage-compositor"
[[ -x "$binary" ]] || { echo "build-deb.sh: $binary is missing (run without --skip-build)" >&2; exit 1; }
if ldd "$binary" | grep -q 'libswift\|/usr/lib/swift'; then
  echo "build-deb.sh: $binary links the Swift runtime dynamically:" >&2
  ldd "$binary" | grep 'swift' >&2
  exit 1
fi

# 2. The tree, every file root-owned (dpkg-deb --root-owner-group) with Debian's modes.
root="$scratch/deb-root"
rm -rf "$root"
install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" \
  "$root/usr/share/stage-compositor/layouts" "$root/usr/share/stage-compositor/stages" \
  "$root/usr/share/doc/stage-compositor" "$root/usr/share/man/man1" "$root/etc/stage-compositor"

# dh_strip's flags for an executable (symbols go; Swift's metadata sections stay).
install -m 0755 "$binary" "$root/usr/bin/stage-compositor"
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/stage-compositor"

# The unit of systemd/, pointed at the packaged paths.
sed -e 's#/usr/local/bin/stage-compositor#/usr/bin/stage-compositor#g' \
    -e 's#^Documentation=.*#Documentation=man:stage-compositor(1) file:/usr/share/doc/stage-compositor/README.md#' \
    -e 's#^\# Installed by deploy/install.sh;#\# Installed by the stage-compositor package;#' \
    systemd/stage-compositor.service > "$root/lib/systemd/system/stage-compositor.service"
chmod 0644 "$root/lib/systemd/system/stage-compositor.service"
if grep -q /usr/local "$root/lib/systemd/system/stage-compositor.service"; then
  echo "build-deb.sh: the packaged unit still names /usr/local" >&2
  exit 1
fi

install -m 0644 packaging/config.json "$root/etc/stage-compositor/config.json"
install -m 0644 layouts/*.json "$root/usr/share/stage-compositor/layouts/"
cp -R fixtures/four-grid "$root/usr/share/stage-compositor/stages/four-grid"

doc="$root/usr/share/doc/stage-compositor"
install -m 0644 deploy/README.md "$doc/README.md"
install -m 0644 deploy/config.example.json "$doc/config.example.json"
gzip -9n < packaging/changelog > "$doc/changelog.gz"
gzip -9n < packaging/stage-compositor.1 > "$root/usr/share/man/man1/stage-compositor.1.gz"

# copyright: ours, then every package SwiftPM resolved (those the binary links among them), with
# its license file; Apache-2.0 by reference to common-licenses, as Debian asks.
{
  echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
  echo "Upstream-Name: stage-compositor"
  echo
  echo "Files: *"
  echo "Copyright: the stage-compositor authors"
  echo "License: none-granted"
  echo " No license has been granted for stage-compositor itself yet; all rights are"
  echo " reserved by its authors."
  echo
  echo "Files: usr/bin/stage-compositor (the Swift runtime, Foundation and Dispatch, linked in)"
  echo "Copyright: Apple Inc. and the Swift project authors"
  echo "License: Apache-2.0 with Runtime Library Exception"
  echo " See /usr/share/common-licenses/Apache-2.0 and https://swift.org/LICENSE.txt."
  echo " Foundation's internationalization carries ICU (Unicode-3.0 license)."
  python3 - "$scratch" <<'PY'
import json, os, sys
scratch = sys.argv[1]
state = json.load(open(os.path.join(scratch, "workspace-state.json")))
for dep in sorted(state["object"]["dependencies"], key=lambda d: d["packageRef"]["identity"]):
    name = dep["packageRef"]["identity"]
    version = dep.get("state", {}).get("checkoutState", {}).get("version") or "?"
    folder = os.path.join(scratch, "checkouts", dep.get("subpath", name))
    text = ""
    for candidate in ("LICENSE", "LICENSE.txt", "LICENSE.md", "COPYING"):
        path = os.path.join(folder, candidate)
        if os.path.exists(path):
            text = open(path, encoding="utf-8", errors="replace").read()
            break
    print()
    print(f"Files: usr/bin/stage-compositor ({name} {version})")
    if "Apache License" in text and "Version 2.0" in text:
        print("License: Apache-2.0")
        print(" See /usr/share/common-licenses/Apache-2.0.")
    elif text:
        if "Permission is hereby granted, free of charge" in text:
            name_of_license = "MIT"
        elif "Redistribution and use in source and binary forms" in text:
            name_of_license = "BSD"
        else:
            name_of_license = next((l.strip() for l in text.splitlines() if l.strip()), "see below")
        print(f"License: {name_of_license}")
        for line in text.splitlines():
            print(" " + line if line.strip() else " .")
    else:
        print("License: unknown (no license file in the checkout)")
PY
} > "$doc/copyright"
chmod 0644 "$doc/copyright"

# lintian tags this package keeps on purpose, each with its reason (packaging/lintian-overrides).
if [[ -s packaging/lintian-overrides ]]; then
  install -d -m 0755 "$root/usr/share/lintian/overrides"
  install -m 0644 packaging/lintian-overrides "$root/usr/share/lintian/overrides/stage-compositor"
fi

install -m 0755 packaging/postinst packaging/prerm packaging/postrm "$root/DEBIAN/"
echo "/etc/stage-compositor/config.json" > "$root/DEBIAN/conffiles"

# 3. Depends: the Debian packages of the libraries the binary links (dpkg-shlibdeps reads their
# shlibs/symbols files), plus adduser for postinst and the overlays' default font (DejaVu);
# Recommends: the fonts text falls back on (CJK, colour emoji).
shlib_work="$scratch/shlibdeps"
rm -rf "$shlib_work"; mkdir -p "$shlib_work/debian"
printf 'Source: stage-compositor\n\nPackage: stage-compositor\nArchitecture: amd64\n' > "$shlib_work/debian/control"
shlibs=$(cd "$shlib_work" && dpkg-shlibdeps -O -e "$root/usr/bin/stage-compositor" 2> "$shlib_work/warnings" \
  | sed -n 's/^shlibs:Depends=//p')
[[ -n "$shlibs" ]] || { echo "build-deb.sh: dpkg-shlibdeps found nothing:" >&2; cat "$shlib_work/warnings" >&2; exit 1; }
if [[ -s "$shlib_work/warnings" ]]; then sed 's/^/build-deb.sh: /' "$shlib_work/warnings" >&2; fi
depends="$shlibs, adduser, fonts-dejavu-core"

(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/conffiles"
installed_size=$(du -sk --apparent-size --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@INSTALLED_SIZE@/$installed_size/" -e "s/@DEPENDS@/$depends/" \
  packaging/control.in > "$root/DEBIAN/control"
chmod 0644 "$root/DEBIAN/control"
find "$root" -type d -exec chmod 0755 {} +
find "$root/usr/share" "$root/etc" -type f -exec chmod 0644 {} +

deb="$out/stage-compositor_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
