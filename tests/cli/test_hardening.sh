#!/usr/bin/env bash
# How nklab writes and reads files (docs/cli.md, "Files"): outputs replace a
# regular file atomically and never rename over a device or FIFO; temporary
# names are unpredictable and a planted symlink is not followed; a failed
# write or a kill keeps the old file and leaves no temporary file; an output
# that names an input is refused; FIFO inputs are refused at once; '-' is
# standard output for view, export and profile; one syntax for numbers.
# Uses $NK_BUILD/nklab (default build/nklab). The last line is "N passed, N failed".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
make_workdir hard
case $NK in /*) ;; *) NK=$PWD/$NK ;; esac

run "$NK" profile tensor_exp --no-exec -o "$W/p.nkp"
if [ "$rc" -eq 0 ]; then ok; else bad "profile tensor_exp" "exit $rc" "$(cat "$W/err")"; fi
P=$W/p.nkp

# is_chr PATH / is_fifo PATH: still what it was
is_chr() { [ -c "$1" ] && [ ! -L "$1" ]; }
# no_temps DIR: no temporary file of an output left in DIR
no_temps() { [ -z "$(find "$1" -type f \( -name '.*.tmp' -o -name '*.tmp*' \))" ]; }

# ---- devices are written in place, never replaced. As root (as CI runs) the
# devices are nodes of our own in $W with the numbers of /dev/null (1,3) and
# /dev/full (1,7): a regression that renamed over its target would replace
# those, not the system's. A user cannot replace /dev/null: there the real ones.
DN=/dev/null
DF=/dev/full
if [ "$(id -u)" -eq 0 ] && mknod "$W/null" c 1 3 2>/dev/null && mknod "$W/full" c 1 7 2>/dev/null; then
    chmod 666 "$W/null" "$W/full"
    DN=$W/null
    DF=$W/full
fi
run "$NK" view "$P" -o "$DN"
if [ "$rc" -eq 0 ] && is_chr "$DN" && grep -q "^wrote $DN " "$W/err"; then ok; else
    bad "view -o $DN" "exit $rc" "$(cat "$W/err")" "$(ls -l "$DN")"
fi
run "$NK" export "$P" --format csv -o "$DN"
if [ "$rc" -eq 0 ] && is_chr "$DN"; then ok; else bad "export -o $DN" "exit $rc" "$(cat "$W/err")"; fi
run "$NK" profile tensor_exp --no-exec -o "$DN"
if [ "$rc" -eq 0 ] && is_chr "$DN"; then ok; else bad "profile -o $DN" "exit $rc" "$(cat "$W/err")"; fi
run "$NK" run tensor_exp --random in=4x4 --out "$DN" --profile "$DN"
if [ "$rc" -eq 0 ] && is_chr "$DN"; then ok; else bad "run --out $DN --profile $DN" "exit $rc" "$(cat "$W/err")"; fi
if [ -c "$DF" ]; then
    expect_fail "view -o full" 1 "nklab: view: cannot write $DF: No space left on device" view "$P" -o "$DF"
    expect_fail "export -o full" 1 "nklab: export: cannot write $DF: No space left on device" \
        export "$P" --format json -o "$DF"
    expect_fail "profile -o full" 1 "nklab: profile: cannot write $DF: No space left on device" \
        profile tensor_exp --no-exec -o "$DF"
    expect_fail "run --out full" 1 "nklab: run: cannot write $DF: No space left on device" \
        run tensor_exp --random in=4x4 --out "$DF"
    if is_chr "$DF"; then ok; else bad "$DF is still a character device" "$(ls -l "$DF")"; fi
fi
rm -f "$W/null" "$W/full"
# /dev/stdout by name, standard output a file: written there (a regression
# would replace that file, in $W, not /dev/stdout)
"$NK" view "$P" -o /dev/stdout >"$W/stdout.html" 2>"$W/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -qi '<!doctype html' "$W/stdout.html" && [ -L /dev/stdout ]; then ok; else
    bad "view -o /dev/stdout" "exit $rc" "$(cat "$W/err")"
fi

# ---- a FIFO with a reader gets the bytes and stays a FIFO
mkfifo "$W/pipe"
timeout 20 cat "$W/pipe" >"$W/from-pipe" &
reader=$!
run timeout 20 "$NK" export "$P" --format csv -o "$W/pipe"
wait "$reader"
"$NK" export "$P" --format csv >"$W/direct.csv"
if [ "$rc" -eq 0 ] && [ -p "$W/pipe" ] && cmp -s "$W/from-pipe" "$W/direct.csv" && [ -s "$W/direct.csv" ]; then ok; else
    bad "export -o FIFO: written through" "exit $rc" "$(cat "$W/err")" "$(ls -l "$W/pipe")"
fi
rm -f "$W/pipe"

# ---- a profile large enough to be streamed to a file (99,328 instructions,
# 16 MB), to a FIFO: one writer, the whole file (a second open would leave
# the reader with nothing and wait for another), the bytes of a regular file
mkfifo "$W/pipe"
timeout 60 cat "$W/pipe" >"$W/from-pipe" &
reader=$!
BIG="matmul_tiled --no-exec --random lhsT=8192x4096:bfloat16 --random rhs=8192x8192:bfloat16"
# shellcheck disable=SC2086
run env NK_PROFILE_FIXED_TIME=1 timeout 60 "$NK" profile $BIG -o "$W/pipe"
wait "$reader"
# shellcheck disable=SC2086
NK_PROFILE_FIXED_TIME=1 "$NK" profile $BIG -o "$W/big.nkp" >/dev/null
if [ "$rc" -eq 0 ] && [ -p "$W/pipe" ] && [ -s "$W/big.nkp" ] && cmp -s "$W/from-pipe" "$W/big.nkp"; then ok; else
    bad "profile -o FIFO, streamed size: written through once" "exit $rc" "$(cat "$W/err")" \
        "$(ls -l "$W/from-pipe" "$W/big.nkp")"
fi
rm -f "$W/pipe" "$W/from-pipe" "$W/big.nkp"

# ---- refused: a directory, a dangling symlink
mkdir "$W/adir"
expect_fail "view -o DIR" 1 "nklab: view: cannot write $W/adir: is a directory" view "$P" -o "$W/adir"
ln -s "$W/missing" "$W/dangling"
expect_fail "export -o dangling link" 1 "nklab: export: cannot write $W/dangling: is a symbolic link to a missing file" \
    export "$P" --format csv -o "$W/dangling"
if [ ! -e "$W/missing" ]; then ok; else bad "the dangling link's target was not created"; fi

# ---- a symlink at the target: the file it names is replaced, the link kept
echo old >"$W/real.html"
ln -s real.html "$W/link.html"
run "$NK" view "$P" -o "$W/link.html"
if [ "$rc" -eq 0 ] && [ -L "$W/link.html" ] && grep -q '<html' "$W/real.html"; then ok; else
    bad "view -o LINK: the linked file is replaced" "exit $rc" "$(ls -l "$W")"
fi

# ---- the mode of a replaced file is kept
echo old >"$W/mode.csv"
chmod 600 "$W/mode.csv"
run "$NK" export "$P" --format csv -o "$W/mode.csv"
if [ "$rc" -eq 0 ] && [ "$(stat -c %a "$W/mode.csv")" = 600 ] && grep -q , "$W/mode.csv"; then ok; else
    bad "a replaced file keeps its mode" "exit $rc" "$(stat -c %a "$W/mode.csv")"
fi

# ---- symlinks planted at the old predictable temporary names are not followed
# (exec keeps the shell's pid, so $$ is nklab's pid: OUT.tmpPID was view's
# and export's name, OUT.tmp-PID-0 the profile writer's)
mkdir "$W/plant"
echo precious >"$W/plant/victim"
(cd "$W/plant" && bash -c 'ln -s victim "out.html.tmp$$"; ln -s victim "out.html.tmp-$$-0"; exec "$0" view "$1" -o out.html' "$NK" "$P") >/dev/null 2>&1
(cd "$W/plant" && bash -c 'ln -s victim "out.nkp.tmp-$$-0"; ln -s victim "out.nkp.tmp$$"; exec "$0" profile tensor_exp --no-exec -o out.nkp' "$NK") >/dev/null 2>&1
(cd "$W/plant" && bash -c 'ln -s victim "y.npy.tmp-$$-0"; ln -s victim "y.npy.$$.tmp"; exec "$0" run tensor_exp --random in=4x4 --out y.npy' "$NK") >/dev/null 2>&1
links=$(find "$W/plant" -type l | wc -l)
if [ "$(cat "$W/plant/victim")" = precious ] && [ "$links" -eq 6 ] && grep -q '<html' "$W/plant/out.html" &&
    [ -s "$W/plant/out.nkp" ] && [ -s "$W/plant/y.npy" ] && no_temps "$W/plant"; then ok; else
    bad "planted symlinks at predictable names are not followed" "victim: $(cat "$W/plant/victim")" "$(ls -la "$W/plant")"
fi

# ---- a failed write keeps the old file and leaves no temporary file. The
# file-size limit (ulimit -f, with SIGXFSZ ignored) makes write(2) fail with
# EFBIG part way through, as a full disk fails it with ENOSPC.
mkdir "$W/full"
echo "the old output" >"$W/full/y.npy"
echo "the old page" >"$W/full/p.html"
(cd "$W/full" && trap '' XFSZ && ulimit -f 8 &&
    exec "$NK" run tensor_exp --random in=256x512 --out y.npy) >"$W/out" 2>"$W/err"
rc=$?
if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: run: cannot write y.npy: File too large" ] &&
    [ "$(cat "$W/full/y.npy")" = "the old output" ] && no_temps "$W/full"; then ok; else
    bad "run --out: a failed write keeps the old file" "exit $rc" "$(cat "$W/err")" "$(ls -la "$W/full")"
fi
(cd "$W/full" && trap '' XFSZ && ulimit -f 8 && exec "$NK" view "$P" -o p.html) >"$W/out" 2>"$W/err"
rc=$?
if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: view: cannot write p.html: File too large" ] &&
    [ "$(cat "$W/full/p.html")" = "the old page" ] && no_temps "$W/full"; then ok; else
    bad "view: a failed write keeps the old page" "exit $rc" "$(cat "$W/err")" "$(ls -la "$W/full")"
fi

# The same without SIGXFSZ ignored by the caller: nklab ignores it itself,
# so the limit is a failed write, not a kill that leaves the temporary file.
(cd "$W/full" && ulimit -f 8 && exec "$NK" run tensor_exp --random in=256x512 --out y.npy) >"$W/out" 2>"$W/err"
rc=$?
if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: run: cannot write y.npy: File too large" ] &&
    [ "$(cat "$W/full/y.npy")" = "the old output" ] && no_temps "$W/full"; then ok; else
    bad "run --out under ulimit -f, SIGXFSZ not ignored by the caller" "exit $rc" "$(cat "$W/err")" \
        "$(ls -la "$W/full")"
fi

# A large profile is written by two threads besides the main one (the
# program's part while the model times it, the timeline's chunks while they
# are encoded): a write that fails on either is reported as one on the
# main thread would be. 198,656 instructions, about 32 MB; the limits fail
# the program's part (8 KiB) and the timeline's (20 MiB).
echo "the old profile" >"$W/full/m.nkp"
for lim in 8 20480; do
    (cd "$W/full" && trap '' XFSZ && ulimit -f $lim && exec "$NK" profile matmul_tiled --no-exec \
        --random lhsT=8192x4096:bfloat16 --random rhs=8192x16384:bfloat16 -o m.nkp) >"$W/out" 2>"$W/err"
    rc=$?
    if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: profile: cannot write m.nkp: File too large" ] &&
        [ "$(cat "$W/full/m.nkp")" = "the old profile" ] && no_temps "$W/full"; then ok; else
        bad "profile: a write failing on a writer thread (ulimit -f $lim)" "exit $rc" "$(cat "$W/err")" \
            "$(ls -la "$W/full")"
    fi
done

# ---- a kill while the output is written keeps the old file, no temporary left
mkdir "$W/kill"
echo "the old output" >"$W/kill/y.npy"
(cd "$W/kill" && exec "$NK" run tensor_exp --random in=8192x4096 --out y.npy) >/dev/null 2>&1 &
pid=$!
seen=0
for _ in $(seq 1 200000); do
    if compgen -G "$W/kill/.y.npy.*.tmp" >/dev/null; then
        seen=1
        kill -TERM "$pid"
        break
    fi
    kill -0 "$pid" 2>/dev/null || break
done
wait "$pid"
rc=$?
if [ "$seen" -eq 1 ] && [ "$rc" -eq 143 ] && [ "$(cat "$W/kill/y.npy")" = "the old output" ] &&
    [ "$(find "$W/kill" -mindepth 1 | wc -l)" -eq 1 ]; then ok; else
    bad "SIGTERM while writing: old file kept, temporary removed" "seen the temporary: $seen, exit $rc" \
        "$(ls -la "$W/kill")"
fi

# ---- an output that names an input, or another output, is refused
cp "$P" "$W/q.nkp"
expect_fail "view -o INPUT" 2 "nklab: view: the output $W/q.nkp is the input $W/q.nkp: write it elsewhere" \
    view "$W/q.nkp" -o "$W/q.nkp"
ln -s q.nkp "$W/q-link.nkp"
expect_fail "export -o a link to the input" 2 \
    "nklab: export: the output $W/q-link.nkp is the input $W/q.nkp: write it elsewhere" \
    export "$W/q.nkp" --format csv -o "$W/q-link.nkp"
if cmp -s "$P" "$W/q.nkp"; then ok; else bad "the refused input is untouched"; fi
"$NK" run tensor_exp --random in=4x4 --out "$W/x.npy" >/dev/null
expect_fail "run --out INPUT" 2 "nklab: run: the output $W/x.npy is the input $W/x.npy: write it elsewhere" \
    run tensor_exp --in "$W/x.npy" --out "$W/x.npy"
expect_fail "profile -o a --in" 2 "nklab: profile: the output $W/x.npy is the input $W/x.npy: write it elsewhere" \
    profile tensor_exp --in "$W/x.npy" -o "$W/x.npy"
expect_fail "run: --out and --profile the same new file" 2 \
    "nklab: run: $W/new.npy and $W/./new.npy are the same file: give each output its own" \
    run tensor_exp --random in=4x4 --out "$W/new.npy" --profile "$W/./new.npy"
if [ ! -e "$W/new.npy" ]; then ok; else bad "nothing written after the refusal"; fi

# ---- FIFO inputs are refused at once (timeout: a regression cannot hang the suite)
mkfifo "$W/in.fifo"
start=$(date +%s)
expect_fail "run --in FIFO" 1 "nklab: $W/in.fifo: not a regular file (a FIFO)" \
    run tensor_exp --in "$W/in.fifo" --out "$W/y.npy"
expect_fail "summary FIFO" 1 "nklab: summary: $W/in.fifo: not a regular file (a FIFO)" summary "$W/in.fifo"
expect_fail "export FIFO" 1 "nklab: export: $W/in.fifo: not a regular file (a FIFO)" export "$W/in.fifo" --format csv
expect_fail "--target-file FIFO" 1 "nklab: run: $W/in.fifo: not a regular file (a FIFO)" \
    run tensor_exp --random in=4x4 --out "$W/y.npy" --target-file "$W/in.fifo"
run timeout 10 "$NK" diff "$P" "$W/in.fifo"
if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: diff: $W/in.fifo: not a regular file (a FIFO)" ]; then ok; else
    bad "diff FIFO" "exit $rc" "$(cat "$W/err")"
fi
if [ $(($(date +%s) - start)) -lt 10 ]; then ok; else bad "FIFO inputs took $(($(date +%s) - start)) s"; fi

# ---- a NUL inside the .npy header
printf '\223NUMPY\001\000\077\000{'"'"'descr'"'"': '"'"'<f4\000'"'"', '"'"'fortran_order'"'"': False, '"'"'shape'"'"': (4,), }    \n' >"$W/nul.npy"
printf '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\100' >>"$W/nul.npy"
expect_fail "NUL in the descr" 1 "nklab: $W/nul.npy: malformed header: a NUL byte at byte 14" \
    run tensor_exp --in "$W/nul.npy" --out "$W/y.npy"

# ---- '-' is standard output for view, export and profile -o, never a file named '-'
mkdir "$W/dash"
(cd "$W/dash" && "$NK" view "$P" -o -) >"$W/dash.html" 2>"$W/err"
rc=$?
if [ "$rc" -eq 0 ] && head -c 200 "$W/dash.html" | grep -qi '<!doctype html' && [ ! -e "$W/dash/-" ] && [ ! -s "$W/err" ]; then ok; else
    bad "view -o -: the page on standard output" "exit $rc" "$(cat "$W/err")" "$(ls -la "$W/dash")"
fi
(cd "$W/dash" && "$NK" export "$P" --format csv -o -) >"$W/dash.csv" 2>"$W/err"
if cmp -s "$W/dash.csv" "$W/direct.csv" && [ ! -e "$W/dash/-" ]; then ok; else bad "export -o -"; fi
(cd "$W/dash" && "$NK" profile tensor_exp --no-exec -o -) >"$W/dash.nkp" 2>"$W/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^wrote standard output (' "$W/err" && [ ! -e "$W/dash/-" ] &&
    "$NK" summary "$W/dash.nkp" >/dev/null; then ok; else
    bad "profile -o -: a readable profile on standard output" "exit $rc" "$(cat "$W/err")"
fi
expect_fail "run --out -" 2 "nklab: run: --out '-': outputs are written to .npy files, not to standard output" \
    run tensor_exp --random in=4x4 --out -
expect_fail "run --profile -" 2 \
    "nklab: run: --profile '-': the profile goes to a file (\`nklab profile -o -\` writes one to standard output)" \
    run tensor_exp --random in=4x4 --out "$W/y.npy" --profile -

# ---- numbers: digits only (no '+', no spaces, no hex), finite, "too large (max N)"
expect_fail "--seed +3" 2 "nklab: --seed '+3': expected an integer from 0 to 9223372036854775807" \
    run tensor_exp --random in=4x4 --out "$W/y.npy" --seed +3
expect_fail "--seed ' 7'" 2 "nklab: --seed ' 7': expected an integer from 0 to 9223372036854775807" \
    run tensor_exp --random in=4x4 --out "$W/y.npy" --seed " 7"
expect_fail "--seed too large" 2 "nklab: --seed '99999999999999999999': too large (max 9223372036854775807)" \
    run tensor_exp --random in=4x4 --out "$W/y.npy" --seed 99999999999999999999
expect_fail "--iters too large" 2 "nklab: --iters '20000000': too large (max 10000000)" bench tensor_exp --iters 20000000
expect_fail "--iters 0x10" 2 "nklab: --iters '0x10': expected an integer from 1 to 10000000" bench tensor_exp --iters 0x10
expect_fail "--width ' 50'" 2 "nklab: --width ' 50': expected an integer from 40 to 1000" timeline "$P" --width " 50"
expect_fail "--random dimension too large" 2 \
    "nklab: --random 'in=99999999999x4': dimension '99999999999' is too large (max 2147483647)" \
    run tensor_exp --random in=99999999999x4 --out "$W/y.npy"
expect_fail "--random dimension +4" 2 "nklab: --random 'in=+4x4': dimension '+4' is not a positive integer" \
    run tensor_exp --random in=+4x4 --out "$W/y.npy"
expect_fail "--from nan" 2 "nklab: --from 'nan': expected a number from 0 to 1e+18" \
    export "$P" --format csv --from nan --to 5
expect_fail "--to inf" 2 "nklab: --to 'inf': expected a number from 0 to 1e+18" export "$P" --format csv --from 0 --to inf
expect_fail "--to 1e999" 2 "nklab: --to '1e999': too large (max 1e+18)" export "$P" --format csv --from 0 --to 1e999
expect_fail "--from ' 5'" 2 "nklab: --from ' 5': expected a number from 0 to 1e+18" \
    export "$P" --format csv --from " 5" --to 9
expect_fail "--from -1" 2 "nklab: --from '-1': expected a number from 0 to 1e+18" export "$P" --format csv --from -1 --to 9
run "$NK" export "$P" --format csv --from 0 --to 2.5e3
if [ "$rc" -eq 0 ] && [ -s "$W/out" ]; then ok; else bad "--from 0 --to 2.5e3 accepted" "exit $rc" "$(cat "$W/err")"; fi
run "$NK" bench tensor_exp --random in=4x4 --iters 3 --warmup 0 --seed 7 --no-exec
if [ "$rc" -eq 0 ]; then ok; else bad "plain integers accepted" "exit $rc" "$(cat "$W/err")"; fi

if no_temps "$W"; then ok; else bad "no temporary file left in the work directory" "$(ls -la "$W")"; fi
finish
