#!/usr/bin/env bash
# `nklab run` and `nklab kernels` from the command line: results against a
# reference computed by tests/cli/npytool (its own .npy code and libm's exp in
# double), and every error with its exact message and exit code.
# Uses $NK_BUILD/nklab (default build/nklab, made by `make test`) and builds
# $NK_BUILD/npytool. The last line is "N passed, N failed".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
need_npytool
make_workdir cli
# shellcheck disable=SC2034 # read by expect_match in lib.sh
match_show=400

# float32 tolerance of exp: libm's expf is within 1 ulp, 2^-23 relative; plus
# the rounding of the result: 2 * 2^-23 = 2.4e-7.
RTOL=2.4e-7

# ---- kernels
run "$NK" kernels
if [ "$rc" -eq 0 ]; then ok; else bad "kernels exits 0" "exit $rc"; fi
expect_match "kernels lists tensor_exp with shape and dtype" "$W/out" '^tensor_exp +in\[250,512\]:float32$'

# ---- a real run: exp over [250, 512] float32
"$T" rand "$W/x.npy" f4 7 -4 4 250 512
"$T" exp "$W/x.npy" "$W/ref.npy"
run "$NK" run tensor_exp --in "$W/x.npy" --out "$W/y.npy"
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ]; then ok; else bad "run tensor_exp exits 0" "exit $rc" "$(cat "$W/err")"; fi
if [ "$(cat "$W/out")" = "wrote $W/y.npy [250, 512] float32" ]; then ok; else
    bad "run reports the output it wrote" "$(cat "$W/out")"
fi
info=$("$T" info "$W/y.npy" 2>&1)
if [ "$info" = "<f4 [250, 512]" ]; then ok; else bad "output is float32 [250, 512]" "$info"; fi
if cmp=$("$T" cmp "$W/y.npy" "$W/ref.npy" "$RTOL" 0); then ok; else bad "y = exp(x) within $RTOL" "$cmp"; fi
# the comparison can fail: a reference of other values is rejected
"$T" rand "$W/x2.npy" f4 8 -4 4 250 512
"$T" exp "$W/x2.npy" "$W/ref2.npy"
if ! "$T" cmp "$W/y.npy" "$W/ref2.npy" "$RTOL" 0 >/dev/null; then ok; else bad "cmp detects a wrong result"; fi

# --target, --opt=value forms
run "$NK" run tensor_exp --in="$W/x.npy" --out="$W/y2.npy" --target=trn2
if [ "$rc" -eq 0 ] && "$T" cmp "$W/y2.npy" "$W/ref.npy" "$RTOL" 0 >/dev/null; then ok; else
    bad "--target=trn2 gives the same values" "exit $rc" "$(cat "$W/err")"
fi
run "$NK" run --target trn1 --out "$W/y3.npy" tensor_exp --in "$W/x.npy"
if [ "$rc" -eq 0 ] && cmp -s "$W/y.npy" "$W/y3.npy"; then ok; else bad "options in any order" "exit $rc"; fi

# other input dtypes are converted to the kernel's float32
"$T" rand "$W/x8.npy" f8 9 -3 3 130 70
"$T" exp "$W/x8.npy" "$W/ref8.npy"
run "$NK" run tensor_exp --in "$W/x8.npy" --out "$W/y8.npy"
if [ "$rc" -eq 0 ] && cmp8=$("$T" cmp "$W/y8.npy" "$W/ref8.npy" "$RTOL" 0); then ok; else
    bad "float64 input [130, 70] converted" "exit $rc" "$(cat "$W/err")" "${cmp8:-}"
fi
"$T" rand "$W/xi.npy" i4 10 -20 20 3 129
"$T" exp "$W/xi.npy" "$W/refi.npy"
run "$NK" run tensor_exp --in "$W/xi.npy" --out "$W/yi.npy"
if [ "$rc" -eq 0 ] && cmpi=$("$T" cmp "$W/yi.npy" "$W/refi.npy" "$RTOL" 0); then ok; else
    bad "int32 input [3, 129] converted" "exit $rc" "$(cat "$W/err")" "${cmpi:-}"
fi

# ---- help
run "$NK" run --help
if [ "$rc" -eq 0 ] && grep -q '^  nklab run tensor_exp --in x.npy --out y.npy$' "$W/out"; then ok; else
    bad "run --help has an example" "exit $rc"
fi
run "$NK" --help
expect_match "nklab --help lists run" "$W/out" '^  run +'

# ---- bad command lines: exit 2
expect_fail "unknown kernel" 2 "nklab: unknown kernel 'nope' (\`nklab kernels\` lists them)" \
    run nope --in "$W/x.npy" --out "$W/o.npy"
expect_fail "misspelt kernel: did you mean" 2 \
    "nklab: unknown kernel 'tensr_exp'; did you mean 'tensor_exp'? (\`nklab kernels\` lists them)" \
    run tensr_exp --in "$W/x.npy" --out "$W/o.npy"
expect_fail "misspelt kernel: the nearest name" 2 \
    "nklab: unknown kernel 'mamba_v4'; did you mean 'mamba_v1'? (\`nklab kernels\` lists them)" \
    run mamba_v4 --in "$W/x.npy" --out "$W/o.npy"
expect_fail "missing kernel" 2 "nklab: run: missing KERNEL (see nklab run --help)" \
    run --in "$W/x.npy" --out "$W/o.npy"
expect_fail "no --in" 2 "nklab: tensor_exp takes 1 input (one --in or --random per argument), got 0" \
    run tensor_exp --out "$W/o.npy"
expect_fail "two --in" 2 "nklab: tensor_exp takes 1 input (one --in or --random per argument), got 2" \
    run tensor_exp --in "$W/x.npy" --in "$W/x.npy" --out "$W/o.npy"
expect_fail "no --out" 2 "nklab: tensor_exp has 1 output (one --out per output), got 0" \
    run tensor_exp --in "$W/x.npy"
expect_fail "two --out" 2 "nklab: tensor_exp has 1 output (one --out per output), got 2" \
    run tensor_exp --in "$W/x.npy" --out "$W/o.npy" --out "$W/p.npy"
expect_fail "--in without a value" 2 "nklab: option --in needs a value" \
    run tensor_exp --out "$W/o.npy" --in
expect_fail "--in followed by an option" 2 "nklab: option --in needs a value" \
    run tensor_exp --in --out "$W/o.npy"
expect_fail "unknown option" 2 "nklab: run: unknown option '--bogus' (see nklab run --help)" \
    run tensor_exp --bogus --in "$W/x.npy" --out "$W/o.npy"
expect_fail "second positional" 2 \
    "nklab: run: unexpected argument 'extra' (one KERNEL; files go after --in or --out)" \
    run tensor_exp extra --in "$W/x.npy" --out "$W/o.npy"
expect_fail "unknown target" 2 "nklab: unknown target 'trn3' (trn1 or trn2)" \
    run tensor_exp --in "$W/x.npy" --out "$W/o.npy" --target trn3

# ---- failed runs: exit 1, no output file
expect_fail "missing input" 1 "nklab: $W/missing.npy: cannot open: No such file or directory" \
    run tensor_exp --in "$W/missing.npy" --out "$W/o.npy"
printf 'just some text\n' >"$W/bad.npy"
expect_fail "not a .npy file" 1 "nklab: $W/bad.npy: not a .npy file (bad magic)" \
    run tensor_exp --in "$W/bad.npy" --out "$W/o.npy"
head -c -4 "$W/x.npy" >"$W/trunc.npy"
expect_fail "truncated input" 1 "nklab: $W/trunc.npy: truncated data (512000 bytes expected, 511996 present)" \
    run tensor_exp --in "$W/trunc.npy" --out "$W/o.npy"
"$T" rand "$W/x3.npy" f4 1 -1 1 2 3 4
expect_fail "wrong rank" 1 "nklab: $W/x3.npy: tensor_exp's argument 'in' has 2 dims, the file has 3 ([2, 3, 4])" \
    run tensor_exp --in "$W/x3.npy" --out "$W/o.npy"
if [ ! -e "$W/o.npy" ]; then ok; else bad "no output file after failed runs"; fi

# a kernel error: a [4, 50000] float32 tile does not fit a 176 KiB SBUF partition
"$T" rand "$W/wide.npy" f4 2 -1 1 4 50000
run "$NK" run tensor_exp --in "$W/wide.npy" --out "$W/o.npy"
if [ "$rc" -eq 1 ] && [ "$(wc -l <"$W/err")" -eq 1 ] &&
    grep -Eq '^kernels/tensor_exp\.c:[0-9]+: nk_load: SBUF capacity exceeded: a tile needs 200000 bytes per partition' \
        "$W/err" && [ ! -e "$W/o.npy" ]; then
    ok
else
    bad "kernel error is printed with the kernel's file:line" "exit $rc" "$(cat "$W/err")"
fi

expect_fail "unwritable output" 1 "nklab: run: cannot write $W/nodir/y.npy: No such file or directory" \
    run tensor_exp --in "$W/x.npy" --out "$W/nodir/y.npy"

# ---- OpenBLAS and SLEEF are loaded when the first matmul, or the first
# exp, log, sin, cos or arctan, runs, not at start-up (src/exec/blas.c,
# src/exec/vmath.c): the loader's log of the objects it maps
# (LD_DEBUG=files) has each for a run that needs it only, and then once
maps() { local lib=$1; shift; LD_DEBUG=files "$NK" "$@" 2>&1 >/dev/null | grep -c "$lib.*generating link map"; }
n=$(maps libopenblas profile matmul_basic --no-exec -o "$W/mm.nkp")
if [ "$n" = 0 ]; then ok; else bad "profile --no-exec of a matmul does not load OpenBLAS" "mapped $n times"; fi
n=$(maps libopenblas run tensor_exp --in "$W/x.npy" --out "$W/y.npy")
if [ "$n" = 0 ]; then ok; else bad "a run without a matmul does not load OpenBLAS" "mapped $n times"; fi
n=$(maps libopenblas profile matmul_basic -o "$W/mm.nkp")
if [ "$n" = 1 ]; then ok; else bad "a matmul's run loads OpenBLAS once" "mapped $n times"; fi
n=$(maps libsleef profile tensor_exp --no-exec -o "$W/te.nkp")
if [ "$n" = 0 ]; then ok; else bad "profile --no-exec of exp does not load SLEEF" "mapped $n times"; fi
n=$(maps libsleef profile matmul_basic -o "$W/mm.nkp")
if [ "$n" = 0 ]; then ok; else bad "a run without exp, log, sin, cos or arctan does not load SLEEF" "mapped $n times"; fi
n=$(maps libsleef run tensor_exp --in "$W/x.npy" --out "$W/y.npy")
if [ "$n" = 1 ]; then ok; else bad "a run of exp loads SLEEF once" "mapped $n times"; fi
# a library of SLEEF's name without its functions: the run fails and says why
mkdir -p "$W/fake"
printf 'int nk_not_sleef;\n' >"$W/fake/s.c"
if ${CC:-cc} -shared -fPIC -o "$W/fake/libsleef.so.3" "$W/fake/s.c" 2>/dev/null; then
    LD_LIBRARY_PATH="$W/fake" "$NK" run tensor_exp --in "$W/x.npy" --out "$W/y.npy" >"$W/out" 2>"$W/err"
    rc=$?
    if [ "$rc" = 1 ] && [ "$(cat "$W/err")" = "nklab: tensor_exp: execution failed: the exp needs SLEEF, which could not be loaded: libsleef.so.3: has no Sleef_expf16_u10avx512f" ]; then ok; else
        bad "a SLEEF without its functions fails the run with the reason" "exit $rc" "$(cat "$W/err")"
    fi
else
    bad "building a stand-in libsleef.so.3"
fi

finish
