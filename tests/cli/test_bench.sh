#!/usr/bin/env bash
# `nklab bench` (and the errors every kernel command shares): the table's
# columns and their relations, --json keys and values checked against each
# other and against `nklab profile` and `run --no-exec`, progress only on a
# terminal, and every bad input with its exact message and exit code.
# Uses $NK_BUILD/nklab (default build/nklab). The last line is
# "N passed, N failed, N skipped".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
need_npytool
make_workdir bench
export NKLAB_CACHE_DIR=$W/cache # compiled user kernels

# check NAME AWK-CONDITION [VALUES...]: the condition holds (awk, v1 v2 ... bound)
check() {
    local name=$1 cond=$2
    shift 2
    local vars=() i=1
    for v in "$@"; do vars+=(-v "v$i=$v"); i=$((i + 1)); done
    if awk "${vars[@]}" "BEGIN { exit !($cond) }"; then ok; else bad "$name" "($cond) with $*"; fi
}

# jget FILE KEY: a top-level value of the JSON (one key per line)
jget() { sed -n "s/^  \"$2\": \\(.*\\),\$/\\1/p; s/^  \"$2\": \\([^,]*\\)\$/\\1/p" "$1" | tr -d '"'; }
# jpct FILE OBJECT KEY: one entry of latency_us / nc_latency_us
jpct() { grep "^  \"$2\": {" "$1" | grep -oE "\"$3\": [0-9.]+" | sed 's/.*: //'; }

# ---- the table
run "$NK" bench tensor_exp --iters 30 --warmup 2
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ]; then ok; else bad "bench tensor_exp exits 0, quiet stderr" "exit $rc" "$(cat "$W/err")"; fi
if [ "$(sed -n 1p "$W/out")" = \
    "tensor_exp on trn1: 30 iterations after 2 warm-up, values computed; latencies in microseconds" ]; then ok; else
    bad "first line names kernel, target, iterations" "$(sed -n 1p "$W/out")"
fi
if sed -n 2p "$W/out" | grep -Eq \
    '^B +NC +NC-USED +WEIGHTS +MODE +INF/S +IRES/S +L\(1\) +L\(50\) +L\(99\) +NCL\(1\) +NCL\(50\) +NCL\(99\) +%USER$'; then
    ok
else
    bad "table header has the 14 columns" "$(sed -n 2p "$W/out")"
fi
read -r c_b c_nc c_ncu c_w c_mode c_inf c_ires c_l1 c_l50 c_l99 c_n1 c_n50 c_n99 c_user c_extra <<<"$(sed -n 3p "$W/out")"
# WEIGHTS: the input's bytes, 250 x 512 float32 = 512000
if [ "$c_b $c_nc $c_ncu $c_w $c_mode" = "1 1 1 512000 sim" ] && [ -z "${c_extra:-}" ] && [ -n "${c_user:-}" ]; then ok; else
    bad "row: B NC NC-USED WEIGHTS MODE = 1 1 1 512000 sim, 14 values" "$(sed -n 3p "$W/out")"
fi
check "L(1) <= L(50) <= L(99)" 'v1 <= v2 && v2 <= v3' "$c_l1" "$c_l50" "$c_l99"
check "NCL is one modelled time: NCL(1) = NCL(50) = NCL(99) > 0" 'v1 == v2 && v2 == v3 && v1 > 0' "$c_n1" "$c_n50" "$c_n99"
# host I/O: 250 x 512 float32 in and out over the 16 GB/s host link
# (neuroncore.md: Memory, "Host link"): 2 * 512000 B / 16 B/ns = 64 us
check "L(1) >= NCL(1) + 64 us of host I/O" 'v1 >= v2 + 64 - 0.01' "$c_l1" "$c_n1"
check "IRES/S = 1e6 / NCL(50)" 'v1 > 0 && (v1 - 1e6 / v2) ^ 2 <= (2e-3 * v1) ^ 2' "$c_ires" "$c_n50"
check "INF/S between 1e6 / L(99) and 1e6 / L(1)" 'v1 >= 1e6 / v3 - 1 && v1 <= 1e6 / v2 + 1' "$c_inf" "$c_l1" "$c_l99"
check "%USER is a percentage or -" 'v1 == "-" || (v1 + 0 >= 0 && v1 + 0 < 1000)' "$c_user"
parts=$(sed -n 4p "$W/out")
if [[ $parts =~ ^L\(50\)\ =\ dispatch\ ([0-9.]+)\ \(measured\)\ \+\ host\ I/O\ 64\.00\ \(modelled\)\ \+\ device\ ([0-9.]+)\ \(modelled\)$ ]]; then
    ok
    check "dispatch + host I/O + device = L(50)" '(v1 + 64 + v2 - v3) ^ 2 <= 0.03 ^ 2' \
        "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$c_l50"
    check "device in the breakdown = NCL(50)" 'v1 == v2' "${BASH_REMATCH[2]}" "$c_n50"
else
    bad "the breakdown line of L(50)" "$parts"
fi
if sed -n 5p "$W/out" | grep -Eq '^compiled once in [0-9.]+ ms \(6 instructions\); host simulation [0-9.]+ ms per iteration \(in no latency\)$'; then
    ok
else
    bad "compile and simulation line" "$(sed -n 5p "$W/out")"
fi

# ---- --json
run "$NK" bench tensor_exp --json --iters 25 --warmup 0
J=$W/b.json
cp "$W/out" "$J"
if [ "$rc" -eq 0 ] && [ "$(head -n 1 "$J")" = "{" ] && [ "$(tail -n 1 "$J")" = "}" ]; then ok; else
    bad "--json prints one object" "exit $rc" "$(head -c 300 "$J")"
fi
if command -v python3 >/dev/null && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$J" 2>/dev/null; then ok
elif command -v python3 >/dev/null; then bad "--json is valid JSON" "$(cat "$J")"
else skip=$((skip + 1)); fi
want="kernel=tensor_exp target=trn1 mode=sim batch=1 nc=1 nc_used=1 weights=512000 warmup=0 iters=25 instructions=6"
got=""
for kv in $want; do got="$got ${kv%%=*}=$(jget "$J" "${kv%%=*}")"; done
if [ "${got# }" = "$want" ]; then ok; else bad "--json identity keys" "got:  ${got# }" "want: $want"; fi
dev=$(jget "$J" device_us); hin=$(jget "$J" host_in_us); hout=$(jget "$J" host_out_us)
check "host_in_us = host_out_us = 512000 B / 16 B/ns = 32 us" 'v1 == 32 && v2 == 32' "$hin" "$hout"
check "host_in_us = weights / 16 B/ns" 'v1 == v2 / 16000' "$hin" "$(jget "$J" weights)"
check "exec_us > 0 when values are computed" 'v1 > 0' "$(jget "$J" exec_us)"
missing=""
prev=0
for p in p0 p1 p10 p25 p50 p90 p99 p100; do
    l=$(jpct "$J" latency_us "$p"); n=$(jpct "$J" nc_latency_us "$p")
    if [ -z "$l" ] || [ -z "$n" ]; then missing="$missing $p"; continue; fi
    check "latency_us.$p >= the one before" 'v1 >= v2' "$l" "$prev"
    check "latency_us.$p >= device + host I/O" 'v1 >= v2 + v3 + v4 - 0.002' "$l" "$dev" "$hin" "$hout"
    check "nc_latency_us.$p = device_us" 'v1 == v2' "$n" "$dev"
    prev=$l
done
if [ -z "$missing" ]; then ok; else bad "--json has every percentile of both latencies" "missing:$missing"; fi
mean=$(jpct "$J" latency_us mean)
check "mean latency within [p0, p100]" 'v1 >= v2 && v1 <= v3' "$mean" "$(jpct "$J" latency_us p0)" "$(jpct "$J" latency_us p100)"
check "inf_per_s = 1e6 / mean latency" '(v1 - 1e6 / v2) ^ 2 <= (1e-3 * v1) ^ 2' "$(jget "$J" inf_per_s)" "$mean"
check "ires_per_s = 1e6 / device_us" '(v1 - 1e6 / v2) ^ 2 <= (1e-3 * v1) ^ 2' "$(jget "$J" ires_per_s)" "$dev"

# the same device time from `profile` and `run --no-exec` (the model is deterministic)
run "$NK" profile tensor_exp -o "$W/p.nkp"
if [ "$rc" -eq 0 ] && [ "$(cat "$W/out")" = "wrote $W/p.nkp (6 instructions, device time $dev us on trn1)" ]; then ok; else
    bad "profile reports bench's device time" "exit $rc" "$(cat "$W/out" "$W/err")" "device_us $dev"
fi
"$T" rand "$W/x.npy" f4 7 -4 4 250 512
run "$NK" run tensor_exp --in "$W/x.npy" --no-exec
if [ "$rc" -eq 0 ] && [ "$(sed -n 1p "$W/out")" = "tensor_exp on trn1: 6 instructions, device time $dev us (modelled)" ] &&
    [ "$(sed -n 2p "$W/out")" = "--no-exec: no values computed, no outputs written" ]; then ok; else
    bad "run --no-exec reports the same device time" "exit $rc" "$(cat "$W/out" "$W/err")"
fi

# ---- --no-exec, --target, inputs, --profile
run "$NK" bench tensor_exp --no-exec --json --iters 5
if [ "$(jget "$W/out" mode)" = model ] && [ "$(jget "$W/out" exec_us)" = "0.000" ] &&
    [ "$(jget "$W/out" device_us)" = "$dev" ]; then ok; else
    bad "--no-exec: mode model, nothing executed, same device time" "$(cat "$W/out" "$W/err")"
fi
run "$NK" bench tensor_exp --no-exec --iters 5
if sed -n 3p "$W/out" | grep -Eq '^1 +1 +1 +512000 +model '; then ok; else bad "--no-exec: MODE model in the table" "$(cat "$W/out")"; fi
run "$NK" bench tensor_exp --target trn2 --json --iters 3
d2=$(jget "$W/out" device_us)
if [ "$rc" -eq 0 ] && [ "$(jget "$W/out" target)" = trn2 ]; then ok; else bad "--target trn2" "$(cat "$W/out" "$W/err")"; fi
check "trn2's device time differs from trn1's" 'v1 != v2 && v1 > 0' "$d2" "$dev"
run "$NK" bench tensor_exp --in "$W/x.npy" --iters 3 --json
if [ "$rc" -eq 0 ] && [ "$(jget "$W/out" device_us)" = "$dev" ]; then ok; else bad "bench --in FILE" "$(cat "$W/out" "$W/err")"; fi
run "$NK" bench tensor_exp --random in=130x70 --iters 3 --json
if [ "$rc" -eq 0 ] && [ "$(jget "$W/out" device_us)" != "$dev" ]; then ok; else
    bad "bench --random with another shape times another program" "$(cat "$W/out" "$W/err")"
fi
if [ "$(jget "$W/out" weights)" = $((130 * 70 * 4)) ]; then ok; else bad "weights of a 130x70 float32 input" "$(jget "$W/out" weights)"; fi
run "$NK" bench tensor_exp --random in=130x70:bfloat16 --iters 3 --json
if [ "$(jget "$W/out" weights)" = $((130 * 70 * 2)) ]; then ok; else bad "weights of a 130x70 bfloat16 input" "$(jget "$W/out" weights)"; fi
run "$NK" bench tensor_exp --iters 3 --json --profile "$W/b.nkp"
if [ "$rc" -eq 0 ] && [ -s "$W/b.nkp" ] && [ "$(cat "$W/err")" = "wrote $W/b.nkp (6 instructions, device time $dev us on trn1)" ] &&
    [ "$(tail -n 1 "$W/out")" = "}" ]; then ok; else
    bad "bench --json --profile: the profile's note on stderr, JSON alone on stdout" "exit $rc" "$(cat "$W/err")"
fi
if "$NK" summary --help >/dev/null 2>&1; then
    if "$NK" summary "$W/b.nkp" | grep -Eq '^kernel +tensor_exp$'; then ok; else bad "summary reads bench's profile"; fi
else
    skip=$((skip + 1))
fi
run "$NK" bench matmul_tiled --iters 2 --warmup 0
if [ "$rc" -eq 0 ] && sed -n 1p "$W/out" | grep -q '^matmul_tiled on trn1: 2 iterations after 0 warm-up'; then ok; else
    bad "bench a built-in kernel with two arguments on its examples" "$(cat "$W/out" "$W/err")"
fi
# WEIGHTS sums both inputs: lhsT [1024, 256] and rhs [1024, 1024] bfloat16
w=$(sed -n 3p "$W/out" | awk '{ print $4 }')
if [ "$w" = $(((1024 * 256 + 1024 * 1024) * 2)) ]; then ok; else bad "matmul_tiled's WEIGHTS: both inputs' bytes" "$w"; fi

# ---- help
run "$NK" bench --help
if [ "$rc" -eq 0 ] && grep -q '^  nklab bench tensor_exp$' "$W/out"; then ok; else bad "bench --help has examples"; fi
for col in B NC NC-USED WEIGHTS MODE INF/S IRES/S 'L(p)' 'NCL(p)' %USER; do
    if grep -qF "  $col " "$W/out"; then ok; else bad "bench --help defines $col"; fi
done
run "$NK" --help
if grep -Eq '^  bench +' "$W/out" && grep -Eq '^  profile +' "$W/out"; then ok; else bad "nklab --help lists bench and profile"; fi

# ---- progress: on a terminal only
if command -v script >/dev/null && script -qec true /dev/null >/dev/null 2>&1; then
    script -qec "$NK bench tensor_exp --iters 20" /dev/null >"$W/tty" 2>&1
    if grep -q 'benchmarking tensor_exp' "$W/tty" && grep -q $'\r' "$W/tty"; then ok; else
        bad "progress shown on a terminal" "$(head -c 300 "$W/tty")"
    fi
    NKLAB_PROGRESS=0 script -qec "$NK bench tensor_exp --iters 20" /dev/null >"$W/tty" 2>&1
    if ! grep -q 'benchmarking' "$W/tty"; then ok; else bad "NKLAB_PROGRESS=0 turns it off"; fi
else
    skip=$((skip + 2))
fi

# ---- user kernels: compile errors, kernel errors, missing files
mkdir -p "$W/k"
cat >"$W/k/bad.c" <<'EOF'
#include "nklab.h"

void bad(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    nk_tensor t = nk_load(nc, args[0])
}
EOF
run "$NK" bench "$W/k/bad.c:bad" --random x=4x4:float32
if [ "$rc" -eq 1 ] && grep -Eq "^$W/k/bad\\.c:[0-9]+:[0-9]+: error: " "$W/err" &&
    tail -n 1 "$W/err" | grep -Eq "^nklab: compiling failed \\(.* exited with status 1\\); the compiler's messages are above$" &&
    [ ! -s "$W/out" ]; then ok; else
    bad "a syntax error: the compiler's own message, exit 1" "exit $rc" "$(cat "$W/err")"
fi
# a 200-partition tile: the tracer names the user's file and line
cat >"$W/k/wide.c" <<'EOF'
#include "nklab.h"

void wide(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(200, 64), args[0].dtype, NK_SHARED_HBM);
    nk_tensor t = nk_load(nc, args[0]);
    nk_store(nc, out, t);
    nk_return(nc, out);
}
EOF
run "$NK" bench "$W/k/wide.c:wide" --random x=200x64:float32
if [ "$rc" -eq 1 ] && [ "$(wc -l <"$W/err")" -eq 1 ] && grep -Eq "^$W/k/wide\\.c:7: nk_load: .*200" "$W/err" &&
    [ ! -s "$W/out" ]; then ok; else
    bad "a 200-partition tile: error at the user's file:line, exit 1" "exit $rc" "$(cat "$W/err")"
fi
expect_fail "missing C file" 1 "nklab: cannot read $W/k/nope.c: No such file or directory" \
    bench "$W/k/nope.c:k" --random x=4x4
expect_fail "missing function" 1 "nklab: $W/k/wide.c has no function 'nofn' (kernels are \`void nofn(nk_ctx *nc, const nk_tensor *args, int nargs)\` and must not be static)" \
    bench "$W/k/wide.c:nofn" --random x=4x4
expect_fail "user kernel without inputs" 2 \
    "nklab: bench: a kernel from a C file needs its inputs: --in FILE.npy or --random NAME=SHAPE:DTYPE, one per argument" \
    bench "$W/k/wide.c:wide"
expect_fail "neither built-in nor FILE.c:FUNCTION" 2 "nklab: 'kern.c' is neither a built-in kernel nor FILE.c:FUNCTION" \
    bench kern.c

# ---- bad inputs and options
expect_fail "missing --in file" 1 "nklab: $W/missing.npy: cannot open: No such file or directory" \
    bench tensor_exp --in "$W/missing.npy"
expect_fail "unknown --in dtype" 2 \
    "nklab: --in '$W/x.npy:bf17': unknown dtype 'bf17' (one of float32, bfloat16, float16, float8_e4m3, float8_e4m3fn, float8_e5m2, int8, int16, int32, uint8, uint16, uint32)" \
    bench tensor_exp --in "$W/x.npy:bf17"
expect_fail "--in with an empty name" 2 "nklab: --in ':float32': no file name" bench tensor_exp --in :float32
R="e.g. x=250x512:float32"
expect_fail "--random without =" 2 "nklab: --random 'x': expected NAME=SHAPE[:DTYPE], $R" bench tensor_exp --random x
expect_fail "--random without a shape" 2 "nklab: --random 'x=': expected NAME=SHAPE[:DTYPE], $R" bench tensor_exp --random x=
expect_fail "--random without a name" 2 "nklab: --random '=4x4': expected NAME=SHAPE[:DTYPE], $R" bench tensor_exp --random =4x4
expect_fail "--random bad dimension" 2 "nklab: --random 'in=4xq': dimension 'q' is not a positive integer" \
    bench tensor_exp --random in=4xq
expect_fail "--random zero dimension" 2 "nklab: --random 'in=0x4': dimension '0' is not a positive integer" \
    bench tensor_exp --random in=0x4
expect_fail "--random trailing x" 2 "nklab: --random 'in=4x': dimension '' is not a positive integer" \
    bench tensor_exp --random in=4x
expect_fail "--random five dimensions" 2 "nklab: --random 'in=1x2x3x4x5': at most 4 dimensions" \
    bench tensor_exp --random in=1x2x3x4x5
expect_fail "--random too many elements" 2 "nklab: --random 'in=65536x65536': more than 2^31 elements" \
    bench tensor_exp --random in=65536x65536
expect_fail "--random unknown dtype" 2 \
    "nklab: --random 'in=4x4:float64': unknown dtype 'float64' (one of float32, bfloat16, float16, float8_e4m3, float8_e4m3fn, float8_e5m2, int8, int16, int32, uint8, uint16, uint32)" \
    bench tensor_exp --random in=4x4:float64
expect_fail "--random names another argument" 2 "nklab: --random 'x=4x4': tensor_exp's argument 1 is 'in', not 'x'" \
    bench tensor_exp --random x=4x4
expect_fail "--random of the wrong rank" 2 "nklab: --random 'in=4': tensor_exp's argument 'in' has 2 dims, not 1" \
    bench tensor_exp --random in=4
expect_fail "too many inputs" 2 "nklab: tensor_exp takes 1 input (one --in or --random per argument), got 2" \
    bench tensor_exp --random in=4x4 --random in=4x4
expect_fail "--iters 0" 2 "nklab: --iters '0': expected an integer from 1 to 10000000" bench tensor_exp --iters 0
expect_fail "--iters abc" 2 "nklab: --iters 'abc': expected an integer from 1 to 10000000" bench tensor_exp --iters abc
expect_fail "--warmup -1" 2 "nklab: --warmup '-1': expected an integer from 0 to 10000000" bench tensor_exp --warmup -1
expect_fail "--seed x" 2 "nklab: --seed 'x': expected an integer from 0 to 9223372036854775807" bench tensor_exp --seed x
expect_fail "--iters without a value" 2 "nklab: option --iters needs a value" bench tensor_exp --iters
expect_fail "--out on bench" 2 "nklab: bench: --out is not used (nklab run writes outputs)" \
    bench tensor_exp --out "$W/y.npy"
expect_fail "unknown option" 2 "nklab: bench: unknown option '--fast' (see nklab bench --help)" bench tensor_exp --fast
expect_fail "unknown kernel" 2 "nklab: unknown kernel 'nope' (\`nklab kernels\` lists them)" bench nope
expect_fail "unknown target" 2 "nklab: unknown target 'trn3' (trn1 or trn2)" bench tensor_exp --target trn3
"$T" rand "$W/wide.npy" f4 2 -1 1 4 50000
run "$NK" bench tensor_exp --in "$W/wide.npy"
if [ "$rc" -eq 1 ] && [ "$(wc -l <"$W/err")" -eq 1 ] &&
    grep -Eq '^kernels/tensor_exp\.c:[0-9]+: nk_load: SBUF capacity exceeded' "$W/err" && [ ! -s "$W/out" ]; then ok; else
    bad "bench: a built-in kernel's error with its file:line" "exit $rc" "$(cat "$W/err")"
fi
expect_fail "unwritable profile" 1 "nklab: profile: cannot write $W/nodir/p.nkp: No such file or directory" \
    profile tensor_exp -o "$W/nodir/p.nkp"

finish
