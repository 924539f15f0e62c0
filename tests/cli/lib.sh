# shellcheck shell=bash
# Shared by the suites tests/cli/test_*.sh, which source it first thing:
#     . "$(dirname "$0")/lib.sh"
# It moves to the repository's root and sets B (the build directory,
# $NK_BUILD or build), NK ($B/nklab) and the counters pass, fail and skip.
# A suite counts with ok and bad, checks its tools with need_nklab and
# need_npytool, gets a scratch directory W from make_workdir, and ends with
# finish, which prints "N passed, N failed[, N skipped]" and is the suite's
# exit status. (Not named test_*.sh: scripts/run-tests.sh does not run it.)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
B=${NK_BUILD:-build}
NK=$B/nklab
pass=0
fail=0
skip=0
rc=0 # the last exit code seen by run

ok() { pass=$((pass + 1)); }

# bad NAME [DETAIL...]: a failed check, with its details indented below
bad() {
    fail=$((fail + 1))
    echo "FAIL $1"
    shift
    for l in "$@"; do echo "    $l"; done
}

# the last line of a suite, and its exit status
finish() {
    if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
    [ "$fail" -eq 0 ]
}

# need_nklab: stop the suite (one failure) when $NK is not built
need_nklab() {
    if [ ! -x "$NK" ]; then
        echo "FAIL $NK is not built (make BUILD=$B $B/nklab)"
        echo "0 passed, 1 failed"
        exit 1
    fi
}

# need_npytool: build T=$B/npytool (the .npy reference tool) or stop the suite
need_npytool() {
    T=$B/npytool
    if ! make -s --no-print-directory BUILD="$B" "$T" >/dev/null; then
        echo "FAIL could not build $T"
        echo "0 passed, 1 failed"
        exit 1
    fi
}

# make_workdir NAME: W=/tmp/nklab_NAME_XXXXXX, removed when the suite exits
make_workdir() {
    W=$(mktemp -d "/tmp/nklab_$1_XXXXXX")
    trap 'rm -rf "$W"' EXIT
}

# run CMD...: stdout in $W/out, stderr in $W/err, exit code in $rc
run() {
    "$@" >"$W/out" 2>"$W/err"
    rc=$?
}

# expect_fail NAME CODE MESSAGE ARGS...: `nklab ARGS` exits CODE with MESSAGE
# as its only line on stderr and nothing on stdout.
expect_fail() {
    local name=$1 code=$2 msg=$3
    shift 3
    run "$NK" "$@"
    local err
    err=$(cat "$W/err")
    if [ "$rc" -eq "$code" ] && [ "$err" = "$msg" ] && [ ! -s "$W/out" ] && [ "$(wc -l <"$W/err")" -eq 1 ]; then
        ok
    else
        bad "$name" "exit $rc (want $code)" "stderr: $err" "want:   $msg" "stdout: $(head -c 200 "$W/out")"
    fi
}

# expect_match NAME FILE PATTERN: FILE contains a line matching PATTERN (ERE);
# a failure shows the first $match_show bytes of FILE
match_show=600
expect_match() {
    if grep -Eq -- "$3" "$2"; then ok; else bad "$1" "no line matches /$3/ in:" "$(head -c "$match_show" "$2")"; fi
}
