#!/bin/sh
# fuzz/run.sh - builds the fuzz targets and runs each for a bounded time.
#
# Usage: fuzz/run.sh [TARGET...]     (default: all seven)
# Environment: FUZZ_SECONDS (per target, default 60), FUZZ_OUT (default
# build-fuzz), FUZZ_FLAGS (extra libFuzzer flags, e.g. "-fork=1 -ignore_crashes=1" to keep
# going after a finding), FUZZ_NO_BUILD=1 (skip building and seeding: for a
# second run beside one that is going).
#
# Seeds are copied fresh at every run from ../shared/models,
# tests/errors/data and tests/fuzz_regress (fuzz/seeds.py) into
# FUZZ_OUT/seeds/<target>; what the fuzzer finds accumulates in
# FUZZ_OUT/corpus/<target>; a crash, hang
# (-timeout=25 s per input) or allocation over -malloc_limit_mb/-rss_limit_mb
# (2048 MiB) is written to FUZZ_OUT/artifacts/<target>-*.  The log of each
# run is FUZZ_OUT/logs/<target>.log; its final stats are printed.
# Exit status 1 when any target found something.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
OUT=${FUZZ_OUT:-$ROOT/build-fuzz}
SECS=${FUZZ_SECONDS:-60}
TARGETS=${*:-graphdef_binary pbtxt tfjs config npy model ckpt}

if [ -z "${FUZZ_NO_BUILD:-}" ]; then
    "$HERE/build.sh" "$OUT" || exit 2
    rm -rf "$OUT/seeds"
    python3 "$HERE/seeds.py" "$ROOT/../shared/models" "$ROOT/tests/errors/data" "$OUT/seeds" \
        "$ROOT/tests/fuzz_regress" || exit 2
fi
mkdir -p "$OUT/artifacts" "$OUT/logs"

status=0
for t in $TARGETS; do
    exe=$OUT/fuzz_$t
    [ -x "$exe" ] || { echo "fuzz: no target $t"; exit 2; }
    mkdir -p "$OUT/corpus/$t"
    dict=""
    [ -f "$HERE/$t.dict" ] && dict="-dict=$HERE/$t.dict"
    echo "fuzz: $t for ${SECS}s"
    # shellcheck disable=SC2086
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$exe" -max_total_time="$SECS" -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=131072 \
        -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t-" $dict ${FUZZ_FLAGS:-} \
        "$OUT/corpus/$t" "$OUT/seeds/$t" > "$OUT/logs/$t.log" 2>&1
    rc=$?
    # executions: the final stats, or in -fork mode the last "#N:" status line
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/logs/$t.log" | tail -1)
    if [ -z "$execs" ] || [ "$execs" = 0 ]; then
        execs=$(sed -n 's/^#\([0-9][0-9]*\):* .*/\1/p' "$OUT/logs/$t.log" | tail -1)
    fi
    echo "$(date -u +%FT%TZ) $t seconds=$SECS executions=${execs:-?} exit=$rc" | tee -a "$OUT/logs/summary.txt"
    grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|Done [0-9]+ runs)' \
        "$OUT/logs/$t.log" | sed "s/^/  $t: /"
    if [ $rc -ne 0 ]; then
        status=1
        echo "  $t: FOUND SOMETHING (exit $rc); see $OUT/logs/$t.log and $OUT/artifacts/"
        grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|artifact_prefix|Test unit written)' \
            "$OUT/logs/$t.log" | head -5 | sed "s/^/  $t: /"
    fi
done
exit $status
