#!/usr/bin/env bash
# Runs the libFuzzer build of StageFuzz (see Sources/Fuzz) on each named target for SECONDS,
# starting from its committed corpus (Tests/FuzzTests/Corpus/<target>) plus what earlier runs
# found (.build-fuzz/corpus/<target>). A crash, a broken bound, a leak, a single allocation
# over 256 MiB or RSS over 2 GiB stops the target; its input is left in
# .build-fuzz/artifacts/<target>-* and the script exits non-zero after the other targets ran.
#
#   scripts/fuzz.sh SECONDS target...          fuzz
#   scripts/fuzz.sh --merge target...          minimize what was found into the committed corpus
#
# Every run appends "date target seconds executions result" to .build-fuzz/fuzz-log.tsv,
# the record of how long each target has been fuzzed.
set -uo pipefail
cd "$(dirname "$0")/.."
binary=${FUZZ_BINARY:-.build-fuzz/release/StageFuzz}
[ -x "$binary" ] || { echo "build it first: make fuzz-build" >&2; exit 2; }
mkdir -p .build-fuzz/artifacts
mode=$1; shift
failed=()
for target in "$@"; do
    committed=Tests/FuzzTests/Corpus/$target
    found=.build-fuzz/corpus/$target
    mkdir -p "$found" "$committed"
    if [ "$mode" = "--merge" ]; then
        FUZZ_TARGET=$target "$binary" -merge=1 -max_len=65536 -rss_limit_mb=2048 "$committed" "$found" 2>&1 | tail -2
        continue
    fi
    log=.build-fuzz/artifacts/$target.log
    start=$(date +%s)
    SWIFT_BACKTRACE=enable=no FUZZ_TARGET=$target "$binary" "$found" "$committed" -max_len=65536 -max_total_time="$mode" \
        -rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=20 -print_final_stats=1 \
        -artifact_prefix=".build-fuzz/artifacts/$target-" >"$log" 2>&1
    status=$?
    seconds=$(( $(date +%s) - start ))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    result=$([ $status -eq 0 ] && echo ok || echo "FAILED($status)")
    printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$seconds" "${runs:-?}" "$result" >> .build-fuzz/fuzz-log.tsv
    echo "$target: ${seconds} s, ${runs:-?} executions, $result"
    if [ $status -ne 0 ]; then
        failed+=("$target")
        grep -E "ERROR|Fatal error|bound exceeded|SUMMARY" "$log" | head -5
        echo "  log: $log; input: $(ls .build-fuzz/artifacts/$target-* 2>/dev/null | head -1)"
    fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz findings in: ${failed[*]}" >&2; exit 1; }
