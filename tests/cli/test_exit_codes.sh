#!/usr/bin/env bash
# Exit codes of every command against docs/cli.md's table (0 success, 1 the
# operation failed, 2 bad command line), with the exact one-line message of
# each error; every command's --help documents them. Messages already pinned
# by the other suites (inputs, user kernels, profile readers) are spot-checked
# here once per command.
# Uses $NK_BUILD/nklab (default build/nklab). The last line is "N passed, N failed".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
make_workdir exit

run "$NK" profile tensor_exp --no-exec -o "$W/p.nkp"
if [ "$rc" -eq 0 ]; then ok; else bad "profile tensor_exp" "exit $rc" "$(cat "$W/err")"; fi
P=$W/p.nkp
N=$W/none.nkp
X=$W/nodir/x

# ---- every command documents its exit codes
for c in kernels run bench profile summary timeline view export insights diff; do
    run "$NK" "$c" --help
    if [ "$rc" -eq 0 ] && grep -q '^exit codes: 0 success, ' "$W/out" && grep -Eq '(^| )2 bad command' "$W/out"; then ok; else
        bad "$c --help documents its exit codes" "exit $rc" "$(tail -n 3 "$W/out")"
    fi
done
run "$NK" --help
if [ "$rc" -eq 0 ] && grep -q '^exit codes: 0 success, 1 the operation failed, 2 bad command line$' "$W/out"; then ok; else
    bad "nklab --help documents the exit codes"
fi

# ---- 2: bad command line
run "$NK"
if [ "$rc" -eq 2 ] && grep -q '^usage: nklab COMMAND' "$W/err" && [ ! -s "$W/out" ]; then ok; else bad "no command: usage, exit 2"; fi
expect_fail "unknown command" 2 "nklab: unknown command 'frob' (see nklab --help)" frob
expect_fail "kernels with an argument" 2 "nklab: kernels: takes no arguments, got 'x'" kernels x
expect_fail "run without a kernel" 2 "nklab: run: missing KERNEL (see nklab run --help)" run
expect_fail "run without inputs" 2 "nklab: tensor_exp takes 1 input (one --in or --random per argument), got 0" run tensor_exp
expect_fail "run without --out" 2 "nklab: tensor_exp has 1 output (one --out per output), got 0" \
    run tensor_exp --random in=4x4
expect_fail "bench --iters 0" 2 "nklab: --iters '0': expected an integer from 1 to 10000000" bench tensor_exp --iters 0
expect_fail "profile --no-exec --out" 2 "nklab: profile: --out needs values; --no-exec computes none" \
    profile tensor_exp --no-exec --out "$W/y.npy"
expect_fail "profile -o without a value" 2 "nklab: option -o needs a value" profile tensor_exp -o
for c in summary timeline insights; do
    expect_fail "$c without a profile" 2 "nklab: $c: which profile? (nklab $c PROFILE.nkp)" "$c"
    expect_fail "$c with two profiles" 2 "nklab: $c: one profile at a time ('$P' and '$P')" "$c" "$P" "$P"
    expect_fail "$c with an unknown option" 2 "nklab: $c: unknown option '--bogus' (see nklab $c --help)" "$c" "$P" --bogus
done
expect_fail "timeline --width 39" 2 "nklab: --width '39': expected an integer from 40 to 1000" \
    timeline "$P" --width 39
expect_fail "view without a profile" 2 "nklab: view: which profile? (nklab view PROFILE.nkp -o OUT.html)" view
expect_fail "export without --format" 2 "nklab: export: --format perfetto, json or csv is required" export "$P"
expect_fail "export --format xml" 2 "nklab: export: unknown format 'xml' (perfetto, json or csv)" export "$P" --format xml
expect_fail "export --from alone" 2 "nklab: export: --from and --to go together" export "$P" --format csv --from 5
expect_fail "export --to before --from" 2 "nklab: export: --to must be after --from" \
    export "$P" --format csv --from 5 --to 2
expect_fail "export perfetto --from" 2 "nklab: export: --from/--to apply to json and csv only" \
    export "$P" --format perfetto --from 1 --to 5
expect_fail "diff with one profile" 2 "nklab: diff: needs two profiles (nklab diff A.nkp B.nkp)" diff "$P"
expect_fail "diff with three" 2 "nklab: diff: compares two profiles, got a third ('$P')" diff "$P" "$P" "$P"

# ---- 1: the operation failed
expect_fail "run: missing --in file" 1 "nklab: $N: cannot open: No such file or directory" \
    run tensor_exp --in "$N" --out "$W/y.npy"
expect_fail "run: unwritable --out" 1 "nklab: run: cannot write $X: No such file or directory" \
    run tensor_exp --random in=4x4 --out "$X"
expect_fail "bench: missing C file" 1 "nklab: cannot read $W/k.c: No such file or directory" bench "$W/k.c:k" --random x=4x4
expect_fail "profile: unwritable profile" 1 "nklab: profile: cannot write $X: No such file or directory" \
    profile tensor_exp --no-exec -o "$X"
run "$NK" run matmul_basic --random lhsT=200x128 --random rhs=200x512 --out "$W/y.npy"
if [ "$rc" -eq 1 ] && [ ! -s "$W/out" ] && [ "$(wc -l <"$W/err")" -eq 1 ] &&
    grep -Eq '^kernels/matmul_basic\.c:[0-9]+: nk_load: the source \[200, 128\] has partition dimension 200, ' "$W/err"; then ok; else
    bad "a kernel error: file:line: message, exit 1" "exit $rc" "$(cat "$W/err")"
fi
for c in summary timeline insights view; do
    expect_fail "$c: missing profile" 1 "nklab: $c: $N: cannot open: No such file or directory" "$c" "$N"
done
expect_fail "export: missing profile" 1 "nklab: export: $N: cannot open: No such file or directory" export "$N" --format csv
expect_fail "diff: missing second profile" 1 "nklab: diff: $N: cannot open: No such file or directory" diff "$P" "$N"
printf 'not a profile\n' >"$W/foreign.nkp"
expect_fail "timeline: foreign file" 1 "nklab: timeline: $W/foreign.nkp: not an nklab profile (wrong magic number)" \
    timeline "$W/foreign.nkp"
expect_fail "view: unwritable page" 1 "nklab: view: cannot write $X: No such file or directory" view "$P" -o "$X"
expect_fail "export: unwritable file" 1 "nklab: export: cannot write $X: No such file or directory" \
    export "$P" --format csv -o "$X"

# a full standard output fails the command, whatever it printed: when the
# buffer is flushed at exit, or (long outputs) when the command writes
if [ -w /dev/full ]; then
    for args in "summary $P" "timeline $P" "kernels" "--help"; do
        # shellcheck disable=SC2086
        "$NK" $args >/dev/full 2>"$W/err"
        rc=$?
        if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: cannot write standard output: No space left on device" ]; then ok
        else bad "nklab $args >/dev/full exits 1" "exit $rc" "$(cat "$W/err")"; fi
    done
    "$NK" export "$P" --format json >/dev/full 2>"$W/err"
    rc=$?
    if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: export: cannot write standard output: No space left on device" ]
    then ok; else bad "nklab export >/dev/full exits 1" "exit $rc" "$(cat "$W/err")"; fi
    "$NK" insights "$P" >/dev/full 2>"$W/err"
    rc=$?
    if [ "$rc" -eq 1 ] && [ "$(wc -l <"$W/err")" -eq 1 ] && grep -Eq '^nklab: (insights: )?cannot write' "$W/err"
    then ok; else bad "nklab insights >/dev/full exits 1" "exit $rc" "$(cat "$W/err")"; fi
fi

# ---- 0 and nothing on stderr
for args in "kernels" "summary $P" "timeline $P" "insights $P" "export $P --format csv" "diff $P $P"; do
    # shellcheck disable=SC2086
    run "$NK" $args
    if [ "$rc" -eq 0 ] && [ -s "$W/out" ] && [ ! -s "$W/err" ]; then ok; else bad "nklab $args exits 0" "exit $rc" "$(cat "$W/err")"; fi
done

# ---- a file written says so on stderr, as view and profile do
for f in perfetto json csv; do
    run "$NK" export "$P" --format "$f" -o "$W/e.$f"
    mb=$(awk -v n="$(wc -c <"$W/e.$f")" 'BEGIN { printf "%.1f", n / 1e6 }')
    if [ "$rc" -eq 0 ] && [ -s "$W/e.$f" ] && [ ! -s "$W/out" ] && [ "$(cat "$W/err")" = "wrote $W/e.$f ($f, $mb MB)" ]
    then ok; else bad "export --format $f -o FILE says what it wrote" "exit $rc" "$(cat "$W/err")"; fi
done

finish
