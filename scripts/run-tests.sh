#!/usr/bin/env bash
# Runs every test suite and sums their "N passed, N failed[, N skipped]" lines.
# Suites: the unit tests, the same under ASan/UBSan, the CLI tests
# (tests/cli/test_*.sh), the CLI suites of ASAN_CLI_SUITES again against the
# sanitizer build's CLI ($NK_BUILD/asan/nklab), and any other runner in
# tests/*/run.sh. NK_BUILD is the build directory (default build; `make
# BUILD=DIR test` passes it); every suite builds and writes there only.
set -u
cd "$(dirname "$0")/.."
B=${NK_BUILD:-build}
export NK_BUILD=$B BUILD=$B FUZZ_BUILD=${FUZZ_BUILD:-$B/fuzz}
# The CLI suites that also run against the sanitizer build (about 30 s in
# all there; test_install builds a whole tree of its own and test_calibrate
# needs the Python extension, which the sanitizer build does not make).
ASAN_CLI_SUITES=${ASAN_CLI_SUITES:-"test_run test_spmd test_summary test_insights test_exit_codes test_hardening
    test_target test_sources test_userkernel test_kernel_safety test_symbols test_bench"}
total_p=0; total_f=0; total_s=0
run_suite() {
    local name=$1; shift
    echo "== $name"
    local out rc
    out=$("$@" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -v -E '^[0-9]+ passed, [0-9]+ failed' | sed 's/^/  /' | tail -n 60
    local line
    line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    if [ -z "$line" ]; then
        echo "  (suite printed no summary; exit $rc: counted as 1 failure)"
        total_f=$((total_f + 1)); return
    fi
    local p f s
    p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    s=$(echo "$line" | grep -oE '[0-9]+ skipped' | grep -oE '[0-9]+' || echo 0)
    echo "  $line"
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "  (exit $rc)"; fi
    total_p=$((total_p + p)); total_f=$((total_f + f)); total_s=$((total_s + ${s:-0}))
}
run_suite unit "$B/test_nklab"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_suite "unit (ASan/UBSan)" "$B/asan/test_nklab"
for t in tests/cli/test_*.sh; do
    [ -e "$t" ] || continue
    run_suite "$t" bash "$t"
done
for s in $ASAN_CLI_SUITES; do
    t=tests/cli/$s.sh
    [ -e "$t" ] || continue
    NK_BUILD=$B/asan ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        run_suite "$t (ASan/UBSan)" bash "$t"
done
for r in tests/*/run.sh; do
    [ -e "$r" ] || continue
    run_suite "$r" bash "$r"
done
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
