#!/usr/bin/env bash
# Runs every test suite and sums their "N passed, N failed[, N skipped]" lines.
# Suites: the unit tests, the same under ASan/UBSan, the CLI tests
# (tests/cli/test_*.sh) and any other runner in tests/*/run.sh.
set -u
cd "$(dirname "$0")/.."
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
run_suite unit build/test_nklab
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_suite "unit (ASan/UBSan)" build/asan/test_nklab
for t in tests/cli/test_*.sh; do
    [ -e "$t" ] || continue
    run_suite "$t" bash "$t"
done
for r in tests/*/run.sh; do
    [ -e "$r" ] || continue
    run_suite "$r" bash "$r"
done
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
