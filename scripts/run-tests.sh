#!/usr/bin/env bash
# `make test`'s test run: swift test, with its whole output kept in a log and, when it fails,
# the failures repeated at the end, where a CI page that shows only the tail will show them.
set -uo pipefail
swift=${SWIFT:-swift}
# The tests run `python3`, `aws` and `moto_server` from PATH: those of the virtual environment
# scripts/install-deps.sh --test made (PyPI packages; Debian's Python refuses them system-wide).
venv=${STAGE_COMPOSITOR_VENV:-$(cd "$(dirname "$0")/.." && pwd)/.build/venv}
if [[ -x "$venv/bin/python3" ]]; then
  export PATH="$venv/bin:$PATH"
else
  echo "run-tests.sh: no $venv (make test-deps makes it): the tests use the python3, aws and moto_server on PATH" >&2
fi
log=$(mktemp "${TMPDIR:-/tmp}/stage-compositor-test-XXXXXX.log")
"$swift" test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if ((status != 0)); then
  echo
  echo "==== swift test failed (exit $status). What failed (the whole output is in $log):"
  grep -E -n "error:|' failed|✘|Fatal error|fatal error|Exited with|Segmentation|Illegal instruction|Traceback|AssertionError|FAIL [a-z_]+:" "$log" \
    | grep -v "error destinations-tests\|\[Destinations\]" | tail -n 80
fi
exit "$status"
