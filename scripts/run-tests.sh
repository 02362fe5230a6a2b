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
# A whole run (no arguments) puts the daemon tests that mostly wait beside the rest: the S3
# outage tests hold a blackholed proxy for 60 s at a time, using little CPU. They run from the
# test bundle in a process of their own (`swift test` holds SwiftPM's lock for its whole run),
# their output kept apart and shown after the main run's. STAGE_COMPOSITOR_SIDE_TESTS: other
# XCTest classes (comma-separated, `ServerTests.Class`), or empty for none; with arguments
# (a filtered run, e.g. the PostgreSQL leg) only when it is set, the arguments kept.
if (($# == 0)); then
  side=${STAGE_COMPOSITOR_SIDE_TESTS-ServerTests.S3DaemonTests}
else
  side=${STAGE_COMPOSITOR_SIDE_TESTS:-}
fi
side_pid=""
if [[ -n "$side" ]]; then
  "$swift" build --build-tests 2>&1 | tee "$log" || exit 1
  bundle=$("$swift" build --show-bin-path)/stage-compositorPackageTests.xctest
  side_log="${log%.log}-side.log"
  "$bundle" "$side" > "$side_log" 2>&1 &
  side_pid=$!
  skips=()
  IFS=, read -r -a side_classes <<< "$side"
  for class in "${side_classes[@]}"; do skips+=(--skip "${class#*.}"); done
  kept=()
  for arg in "$@"; do [[ "$arg" == --skip-build ]] || kept+=("$arg"); done
  set -- --skip-build "${skips[@]}" "${kept[@]}"
fi
"$swift" test "$@" 2>&1 | tee -a "$log"
status=${PIPESTATUS[0]}
if [[ -n "$side_pid" ]]; then
  wait "$side_pid"
  side_status=$?
  echo
  echo "==== beside the main run: $side"
  cat "$side_log" | tee -a "$log"
  ((side_status == 0)) || status=$side_status
fi
if ((status != 0)); then
  echo
  echo "==== swift test failed (exit $status). What failed (the whole output is in $log):"
  grep -E -n "error:|' failed|✘|Fatal error|fatal error|Exited with|Segmentation|Illegal instruction|Traceback|AssertionError|FAIL [a-z_]+:" "$log" \
    | grep -v "error destinations-tests\|\[Destinations\]" | tail -n 80
fi
exit "$status"
