#!/usr/bin/env bash
# Kernels from the user's C files (`FILE.c:FUNCTION`) through run, bench and
# profile: values against tests/cli/npytool's reference, inputs from .npy
# files (the file's dtype, or a :DTYPE conversion) and from --random (seeded,
# in the documented ranges), --no-exec, --profile, the compile cache and the
# compile progress line. Uses $NK_BUILD/nklab (default build/nklab).
# The last line is "N passed, N failed[, N skipped]".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
need_npytool
make_workdir uk
export NKLAB_CACHE_DIR=$W/cache

# expect_out NAME EXPECTED-STDOUT ARGS...: `nklab ARGS` exits 0, prints exactly
# that, and nothing on stderr
expect_out() {
    local name=$1 want=$2
    shift 2
    run "$NK" "$@"
    if [ "$rc" -eq 0 ] && [ "$(cat "$W/out")" = "$want" ] && [ ! -s "$W/err" ]; then ok; else
        bad "$name" "exit $rc" "stdout: $(cat "$W/out")" "want:   $want" "stderr: $(cat "$W/err")"
    fi
}

# float32 exp: 1 ulp of libm plus the result's rounding (as tests/cli/test_run.sh)
RTOL=2.4e-7
EXP=examples/tensor_exp.c:tensor_exp

# a kernel that copies its [rows, cols] input to its output, any dtype
cat >"$W/copy.c" <<'EOF'
#include "nklab.h"

void copy(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    int64_t rows = in.shape[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, in.shape[1]), in.dtype, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, t, (rows + NK_PMAX - 1) / NK_PMAX) {
        nk_range r = nk_rmask(t * NK_PMAX, (t + 1) * NK_PMAX, rows);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), nk_load(nc, nk_ix(nc, in, r, NK_ALL)));
    }
    nk_return(nc, out);
}
EOF
COPY=$W/copy.c:copy

# ---- values of a user kernel: examples/tensor_exp.c against exp in double
"$T" rand "$W/x.npy" f4 7 -4 4 250 512
"$T" exp "$W/x.npy" "$W/ref.npy"
expect_out "run a user kernel on a .npy input" "wrote $W/y.npy [250, 512] float32" \
    run "$EXP" --in "$W/x.npy" --out "$W/y.npy"
if c=$("$T" cmp "$W/y.npy" "$W/ref.npy" "$RTOL" 0); then ok; else bad "user tensor_exp = exp(x) within $RTOL" "$c"; fi
run "$NK" run tensor_exp --in "$W/x.npy" --out "$W/yb.npy"
if [ "$rc" -eq 0 ] && cmp -s "$W/y.npy" "$W/yb.npy"; then ok; else bad "user and built-in tensor_exp agree bit for bit"; fi

# ---- --random: deterministic, seeded, in the documented ranges
expect_out "--random input, float32 by default" "wrote $W/r7.npy [250, 512] float32" \
    run "$EXP" --random in=250x512 --seed 7 --out "$W/r7.npy"
run "$NK" run "$EXP" --random in=250x512:float32 --seed 7 --out "$W/r7b.npy"
if [ "$rc" -eq 0 ] && cmp -s "$W/r7.npy" "$W/r7b.npy"; then ok; else bad "same seed, same values"; fi
run "$NK" run "$EXP" --random in=250x512 --seed 8 --out "$W/r8.npy"
if [ "$rc" -eq 0 ] && ! cmp -s "$W/r7.npy" "$W/r8.npy"; then ok; else bad "another seed, other values"; fi
run "$NK" run "$EXP" --random in=250x512 --out "$W/r0.npy"
run "$NK" run "$EXP" --random in=250x512 --seed 0 --out "$W/r0b.npy"
if cmp -s "$W/r0.npy" "$W/r0b.npy"; then ok; else bad "the default seed is 0"; fi

# ranges (docs/cli.md): floats [-1, 1), signed ints [-64, 64), unsigned [0, 128);
# checked as |y - c| <= atol against a constant tensor c, and not within a
# smaller atol (the values spread over the range)
"$T" rand "$W/zero.npy" f4 1 0 0 130 70
"$T" rand "$W/c64.npy" f4 1 64 64 130 70
range_check() { # NAME SPEC FROMTEXT CONST ATOL SMALLER
    local name=$1 spec=$2 from=$3 c=$4 atol=$5 smaller=$6
    run "$NK" run "$COPY" --random "$spec" --seed 3 --out "$W/rc.npy"
    if [ "$rc" -eq 0 ] && [ "$(cat "$W/out")" = "wrote $W/rc.npy [130, 70] float32$from" ]; then ok; else
        bad "$name: dtype of --random" "exit $rc" "$(cat "$W/out" "$W/err")"
    fi
    if "$T" cmp "$W/rc.npy" "$c" 0 "$atol" >/dev/null; then ok; else bad "$name: values within $atol of $c"; fi
    if ! "$T" cmp "$W/rc.npy" "$c" 0 "$smaller" >/dev/null; then ok; else bad "$name: values spread past $smaller"; fi
}
range_check "float32 in [-1, 1)" x=130x70 "" "$W/zero.npy" 1 0.98
range_check "bfloat16 in [-1, 1)" x=130x70:bfloat16 " (from bfloat16)" "$W/zero.npy" 1 0.98
range_check "int32 in [-64, 64)" x=130x70:int32 " (from int32)" "$W/zero.npy" 64 62
range_check "uint8 in [0, 128)" x=130x70:uint8 " (from uint8)" "$W/c64.npy" 64 62

# ---- .npy dtypes: the file's own, or a :DTYPE conversion
run "$NK" run "$EXP" --in "$W/x.npy:bfloat16" --out "$W/ybf.npy"
if [ "$rc" -eq 0 ] && [ "$(cat "$W/out")" = "wrote $W/ybf.npy [250, 512] float32 (from bfloat16)" ]; then ok; else
    bad "--in FILE:bfloat16 gives the user kernel bfloat16" "$(cat "$W/out" "$W/err")"
fi
# bf16 input rounding (2^-9 relative, |x| <= 4: exp off by up to 4 * 2^-9 = 0.8%)
# and bf16 output rounding (2^-9): rtol 1.2e-2
if c=$("$T" cmp "$W/ybf.npy" "$W/ref.npy" 1.2e-2 0); then ok; else bad "bfloat16 exp within 1.2e-2" "$c"; fi
if ! "$T" cmp "$W/ybf.npy" "$W/ref.npy" "$RTOL" 0 >/dev/null; then ok; else bad "bfloat16 run is not float32-exact"; fi
run "$NK" run tensor_exp --in "$W/x.npy:bf16" --out "$W/ybb.npy"
if [ "$rc" -eq 0 ] && [ "$(cat "$W/out")" = "wrote $W/ybb.npy [250, 512] float32 (from bfloat16)" ] &&
    cmp -s "$W/ybf.npy" "$W/ybb.npy"; then ok; else
    bad "--in FILE:bf16 overrides a built-in's declared float32" "$(cat "$W/out" "$W/err")"
fi
"$T" rand "$W/xi.npy" i4 10 -20 20 3 129
expect_out "an int32 .npy stays int32" "wrote $W/yi.npy [3, 129] float32 (from int32)" run "$COPY" --in "$W/xi.npy" --out "$W/yi.npy"
if "$T" cmp "$W/yi.npy" "$W/xi.npy" 0 0 >/dev/null; then ok; else bad "int32 copied exactly"; fi
"$T" rand "$W/x8.npy" f8 9 -3 3 130 70
expect_out "a float64 .npy becomes float32" "wrote $W/y8.npy [130, 70] float32" run "$COPY" --in "$W/x8.npy" --out "$W/y8.npy"
# float64 -> float32 rounds once: 2^-24 relative
if c=$("$T" cmp "$W/y8.npy" "$W/x8.npy" 6e-8 0); then ok; else bad "float64 input rounded to float32" "$c"; fi

# ---- --no-exec, --profile, profile
run "$NK" run "$EXP" --random in=250x512 --out "$W/none.npy" --no-exec
if [ "$rc" -eq 0 ] && grep -Eq '^tensor_exp on trn1: 6 instructions, device time [0-9.]+ us \(modelled\)$' "$W/out" &&
    [ "$(sed -n 2p "$W/out")" = "--no-exec: no values computed, no outputs written" ] && [ ! -e "$W/none.npy" ]; then ok; else
    bad "run --no-exec writes no outputs and says so" "exit $rc" "$(cat "$W/out" "$W/err")"
fi
run "$NK" run "$EXP" --random in=250x512 --out "$W/yp.npy" --profile "$W/run.nkp"
if [ "$rc" -eq 0 ] && [ -s "$W/run.nkp" ] && [ -s "$W/yp.npy" ] &&
    grep -Eq "^wrote $W/run\\.nkp \\(6 instructions, device time [0-9.]+ us on trn1\\)$" "$W/out"; then ok; else
    bad "run --profile writes the profile and the outputs" "exit $rc" "$(cat "$W/out" "$W/err")"
fi
(cd "$W" && "$OLDPWD/$NK" profile "$OLDPWD/$EXP" --random in=250x512 >"$W/out" 2>"$W/err")
rc=$?
if [ "$rc" -eq 0 ] && [ -s "$W/tensor_exp.nkp" ]; then ok; else
    bad "profile writes FUNCTION.nkp by default" "exit $rc" "$(cat "$W/out" "$W/err")"
fi
if "$NK" summary --help >/dev/null 2>&1; then
    if "$NK" summary "$W/tensor_exp.nkp" | grep -Eq '^kernel +tensor_exp$'; then ok; else bad "summary reads the profile"; fi
else
    skip=$((skip + 1))
fi
run "$NK" profile "$EXP" --random in=250x512 -o "$W/o.nkp" --out "$W/po.npy"
if [ "$rc" -eq 0 ] && "$T" cmp "$W/po.npy" "$W/r0.npy" 0 0 >/dev/null; then ok; else
    bad "profile --out writes the run's outputs" "exit $rc" "$(cat "$W/err")"
fi
run "$NK" profile "$EXP" --random in=250x512 --no-exec --out "$W/po.npy"
if [ "$rc" -eq 2 ] && [ "$(cat "$W/err")" = "nklab: profile: --out needs values; --no-exec computes none" ]; then ok; else
    bad "profile --no-exec --out is refused" "exit $rc" "$(cat "$W/err")"
fi
run "$NK" bench "$EXP" --random in=250x512 --iters 3 --json
if [ "$rc" -eq 0 ] && grep -q '"kernel": "tensor_exp"' "$W/out"; then ok; else bad "bench a user kernel" "$(cat "$W/err")"; fi

# ---- the compile cache: one object per source; an edit compiles again
n1=$(ls "$NKLAB_CACHE_DIR"/*.so 2>/dev/null | wc -l)
run "$NK" run "$EXP" --random in=4x4 --out "$W/s.npy"
n2=$(ls "$NKLAB_CACHE_DIR"/*.so | wc -l)
# (examples/tensor_exp.c by a relative and by an absolute path, copy.c)
if [ "$n1" -eq 3 ] && [ "$n2" -eq 3 ]; then ok; else bad "one cached object per source and path" "$n1 then $n2"; fi
cp "$W/copy.c" "$W/copy2.c"
run "$NK" run "$W/copy2.c:copy" --random x=4x4 --out "$W/s.npy"
echo "/* edited */" >>"$W/copy2.c"
run "$NK" run "$W/copy2.c:copy" --random x=4x4 --out "$W/s.npy"
n3=$(ls "$NKLAB_CACHE_DIR"/*.so | wc -l)
if [ "$rc" -eq 0 ] && [ "$n3" -eq 5 ]; then ok; else bad "an edited file compiles again" "$n3 objects"; fi

# ---- compile progress: on a terminal, only when compiling
if command -v script >/dev/null && script -qec true /dev/null >/dev/null 2>&1; then
    echo "/* edited again */" >>"$W/copy2.c"
    script -qec "$NK run $W/copy2.c:copy --random x=4x4 --out $W/s.npy" /dev/null >"$W/tty" 2>&1
    if grep -q "compiling $W/copy2.c" "$W/tty"; then ok; else bad "compiling shown on a terminal" "$(cat "$W/tty")"; fi
    script -qec "$NK run $W/copy2.c:copy --random x=4x4 --out $W/s.npy" /dev/null >"$W/tty" 2>&1
    if ! grep -q "compiling" "$W/tty"; then ok; else bad "a cached kernel is not compiled again"; fi
else
    skip=$((skip + 2))
fi
echo "/* edited once more */" >>"$W/copy2.c"
run "$NK" run "$W/copy2.c:copy" --random x=4x4 --out "$W/s.npy"
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ]; then ok; else bad "no progress when stderr is a file" "$(cat "$W/err")"; fi

# ---- an edit to a header the kernel includes rebuilds it (not only its own file)
mkdir -p "$W/inc"
cat >"$W/inc/fill.c" <<'EOF_K'
#include <nklab.h>
#include "fill_value.h"
void fill(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(4, 4), NK_F32, NK_SHARED_HBM);
    nk_tensor t = nk_full(nc, NK_SHAPE(4, 4), FILL_VALUE, NK_F32, NK_SBUF);
    nk_tensor x = nk_load(nc, args[0]);
    nk_store(nc, out, nk_add(nc, nk_multiply_s(nc, x, 0.0f), t));
    nk_return(nc, out);
}
EOF_K
echo "#define FILL_VALUE 3.0" >"$W/inc/fill_value.h"
run "$NK" run "$W/inc/fill.c:fill" --random x=4x4 --out "$W/f3.npy"
r1=$rc
echo "#define FILL_VALUE 5.0" >"$W/inc/fill_value.h"
run "$NK" run "$W/inc/fill.c:fill" --random x=4x4 --out "$W/f5.npy"
r2=$rc
echo "#define FILL_VALUE 3.0" >"$W/inc/fill_value.h"
run "$NK" run "$W/inc/fill.c:fill" --random x=4x4 --out "$W/f3b.npy"
r3=$rc
if [ "$r1$r2$r3" = 000 ] && ! "$T" cmp "$W/f3.npy" "$W/f5.npy" 0 0 >/dev/null 2>&1 &&
    "$T" cmp "$W/f3.npy" "$W/f3b.npy" 0 0 >/dev/null 2>&1; then ok; else
    bad "an edited included header rebuilds the kernel" "exits $r1 $r2 $r3" "$(cat "$W/err")"
fi

# ---- run's errors with user kernels
run "$NK" run "$COPY" --random x=4x4
if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: copy returned 1 outputs, 0 --out given" ]; then ok; else
    bad "a user kernel's outputs need --out" "exit $rc" "$(cat "$W/err")"
fi
run "$NK" run "$W/missing.c:k" --random x=4x4 --out "$W/s.npy"
if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: cannot read $W/missing.c: No such file or directory" ]; then ok; else
    bad "run: a missing C file" "exit $rc" "$(cat "$W/err")"
fi
run "$NK" run "$W/copy.c:9x" --random x=4x4 --out "$W/s.npy"
if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: '9x' is not a C function name" ]; then ok; else
    bad "run: a bad function name" "exit $rc" "$(cat "$W/err")"
fi

# ---- the inputs of a C kernel: named as --random names them, at the function's definition line
cat >"$W/reload.c" <<'EOF'
#include "nklab.h"

/* loads a_tensor again for every tile of b_tensor */
void reload(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, i, 4) {
        nk_tensor b = nk_load(nc, nk_ix(nc, args[1], nk_r(i * 128, (i + 1) * 128), NK_ALL));
        nk_store(nc, out, nk_add(nc, nk_load(nc, args[0]), b));
    }
    nk_return(nc, out);
}
EOF
run "$NK" profile "$W/reload.c:reload" --random a_tensor=128x512 --random b_tensor=512x512 --no-exec -o "$W/reload.nkp"
run "$NK" insights "$W/reload.nkp"
expect_match "a C kernel's input named by --random" "$W/out" "^1\. \[[a-z]+\] input a_tensor is loaded 4\.0 times from HBM$"
expect_match "a C kernel's input declared at its definition" "$W/out" "input a_tensor \(256\.0 KiB, from reload\.c:4\)"
run "$NK" export "$W/reload.nkp" --format csv
expect_match "the CSV export names both inputs" "$W/out" 'src=b_tensor\[128, 512\] float32 \+65536",262144,[^,]*reload\.c,9,'

# a prototype over two lines before the definition (a comment before its body) is not the definition
cat >"$W/reload2.c" <<'EOF'
#include "nklab.h"

void reload2(nk_ctx *nc, const nk_tensor *args,
             int nargs);

void reload2(nk_ctx *nc, const nk_tensor *args, int nargs) /* the kernel */
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, i, 4) {
        nk_tensor b = nk_load(nc, nk_ix(nc, args[1], nk_r(i * 128, (i + 1) * 128), NK_ALL));
        nk_store(nc, out, nk_add(nc, nk_load(nc, args[0]), b));
    }
    nk_return(nc, out);
}
EOF
run "$NK" profile "$W/reload2.c:reload2" --random a_tensor=128x512 --random b_tensor=512x512 --no-exec -o "$W/reload2.nkp"
run "$NK" insights "$W/reload2.nkp"
expect_match "a C kernel's inputs at its definition, not at a prototype" "$W/out" \
    "input a_tensor \(256\.0 KiB, from reload2\.c:6\)"

finish
