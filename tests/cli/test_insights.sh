#!/usr/bin/env bash
# `nklab insights` and `nklab diff` from the command line: NKI's profiling
# example (tensor_exp [250, 512] float32) and its pipelined rewrite
# (kernels/variants/tensor_exp.c), the JSON form, and every usage error with
# its exact message and exit code.
# Uses $NK_BUILD/nklab (default build/nklab). The last line is "N passed, N failed".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
make_workdir ins

expect_no_match() {
    if grep -Eq -- "$3" "$2"; then bad "$1" "a line matches /$3/:" "$(grep -E -- "$3" "$2" | head -3)"; else ok; fi
}

# ---- the two profiles
run "$NK" profile tensor_exp --no-exec -o "$W/before.nkp"
if [ "$rc" -eq 0 ]; then ok; else bad "profile tensor_exp" "exit $rc" "$(cat "$W/err")"; fi
run "$NK" profile kernels/variants/tensor_exp.c:nk_kernel_tensor_exp_pipelined --random in=250x512:float32 \
    --no-exec -o "$W/after.nkp"
if [ "$rc" -eq 0 ]; then ok; else bad "profile the rewrite" "exit $rc" "$(cat "$W/err")"; fi

# ---- insights: engines, overlap, what to change
run "$NK" insights "$W/before.nkp"
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ]; then ok; else bad "insights exits 0" "exit $rc" "$(cat "$W/err")"; fi
cp "$W/out" "$W/before.txt"
expect_match "insights names the kernel" "$W/before.txt" '^Insights: kernel tensor_exp on trn1, [0-9.]+ us device time \([0-9.]+ us without launch\), 6 instructions$'
expect_match "insights lists Scalar" "$W/before.txt" '^  scalar +[0-9.]+% active .*2 instructions$'
expect_match "insights lists DMA" "$W/before.txt" '^  dma +[0-9.]+% active .*4 instructions on 2 queues: data moving; queues busy \(trigger to completion\) [0-9.]+% '
expect_match "insights says DMA overlaps compute" "$W/before.txt" '100% of the compute time runs under DMA'
expect_match "insights ranks the latency finding first" "$W/before.txt" '^1\. \[medium\] DMA-bound, but the DMA engines idle'
expect_match "insights says what to change" "$W/before.txt" 'do: Issue DMAs ahead .*tensor_exp\.c:13 runs only 2 iterations'
expect_match "insights shows the source line" "$W/before.txt" 'tensor_exp\.c:17 \(2 instr, .*nk_store\(nc, nk_ix\(nc, out, r, NK_ALL\), e\);'

run "$NK" insights "$W/after.nkp"
expect_match "the rewrite has no problem" "$W/out" '^Findings: 0 problems, 1 good$'

# ---- JSON
run "$NK" insights --json "$W/before.nkp"
if [ "$rc" -eq 0 ]; then ok; else bad "insights --json exits 0" "exit $rc"; fi
if [ "$(head -c 1 "$W/out")" = "[" ] && [ "$(tail -c 2 "$W/out" | head -c 1)" = "]" ]; then ok; else
    bad "insights --json prints an array" "$(head -c 100 "$W/out")"
fi
expect_match "json finding" "$W/out" '"rule":"dma-latency-exposed","key":"dma-latency-exposed","severity":"medium"'
expect_match "json line" "$W/out" '"lines":\[\{"file":"kernels/tensor_exp.c","line":17,'
if command -v python3 >/dev/null; then
    if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d, list) and d[0]["ranges"]' "$W/out"; then
        ok
    else
        bad "insights --json parses as JSON"
    fi
fi

# ---- diff
run "$NK" diff "$W/before.nkp" "$W/after.nkp"
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ]; then ok; else bad "diff exits 0" "exit $rc" "$(cat "$W/err")"; fi
expect_match "diff shows the gain" "$W/out" '^  time without launch +[0-9.]+ us +[0-9.]+ us +-[0-9.]+ (ns|us) +\(-[0-9.]+%\)$'
expect_match "diff: finding gone" "$W/out" '^  gone: +\[medium\] dma-latency-exposed'
expect_no_match "diff: no new problem" "$W/out" '^  new: +\[(low|medium|high)\]'
expect_match "diff pairs moved lines by text" "$W/out" '^  tensor_exp\.c:16 +tensor_exp\.c:26 .*nk_tensor e = nk_exp\(nc, tile\);$'
expect_match "diff per opcode" "$W/out" '^  load +2 +4 '

# ---- usage errors and unreadable files
expect_fail "insights without a profile" 2 "nklab: insights: which profile? (nklab insights PROFILE.nkp)" insights
expect_fail "insights unknown option" 2 "nklab: insights: unknown option '--html' (see nklab insights --help)" \
    insights --html "$W/before.nkp"
expect_fail "insights two profiles" 2 "nklab: insights: one profile at a time ('$W/before.nkp' and '$W/after.nkp')" \
    insights "$W/before.nkp" "$W/after.nkp"
expect_fail "diff one profile" 2 "nklab: diff: needs two profiles (nklab diff A.nkp B.nkp)" diff "$W/before.nkp"
expect_fail "diff three profiles" 2 "nklab: diff: compares two profiles, got a third ('$W/x.nkp')" \
    diff "$W/before.nkp" "$W/after.nkp" "$W/x.nkp"
expect_fail "diff unknown option" 2 "nklab: diff: unknown option '--json' (see nklab diff --help)" \
    diff --json "$W/before.nkp" "$W/after.nkp"
run "$NK" insights "$W/missing.nkp"
if [ "$rc" -eq 1 ] && grep -q "^nklab: insights: $W/missing.nkp: " "$W/err" && [ ! -s "$W/out" ]; then ok; else
    bad "insights on a missing file" "exit $rc" "$(cat "$W/err")"
fi
printf 'not a profile' >"$W/junk.nkp"
run "$NK" diff "$W/before.nkp" "$W/junk.nkp"
if [ "$rc" -eq 1 ] && grep -q "^nklab: diff: $W/junk.nkp: " "$W/err" && [ ! -s "$W/out" ]; then ok; else
    bad "diff on a corrupt file" "exit $rc" "$(cat "$W/err")"
fi
run "$NK" insights --help
if [ "$rc" -eq 0 ] && grep -q '^usage: nklab insights PROFILE.nkp \[--json\]$' "$W/out"; then ok; else
    bad "insights --help" "exit $rc"
fi

# ---- a KERNEL instead of a profile: the findings re-trace it to simulate their advice
run "$NK" insights matmul_tiled
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ]; then ok; else bad "insights KERNEL exits 0" "exit $rc" "$(cat "$W/err")"; fi
expect_match "insights KERNEL simulates more buffers" "$W/out" \
    'do: Issue DMAs ahead .*give it more buffers .* Simulated \(re-traced and re-timed\): 4 buffers per tile .*: 48\.72 -> 37\.21 us \(-23\.6%\)\.$'
run "$NK" profile matmul_tiled --bufs 4 --no-exec -o "$W/mt4.nkp"
expect_match "compiling with --bufs 4 realises it" "$W/out" 'device time 37\.207 us on trn1\)$'
run "$NK" profile matmul_tiled --no-exec -o "$W/mt.nkp"
run "$NK" insights "$W/mt.nkp"
expect_match "from the profile alone it is an estimate" "$W/out" \
    'give it more buffers .* Estimate, not simulated: re-tracing with other buffer counts needs the kernel \(`nklab insights KERNEL \.\.\.` instead of a profile file\)\.$'
expect_no_match "from the profile alone nothing is simulated" "$W/out" 'Simulated \(re-traced'
# the same kernel with its loops' 2 buffers written out (NK_AFFINE_RANGE_BUFS(..., 2), the default's
# count): a re-trace with another default cannot change them, so the advice stays, as an estimate
sed -e 's/#include "kernels.h"/#include "nklab.h"/' -e '/NK_KERNEL_DECL/d' \
    -e 's/NK_AFFINE_RANGE(nc, \([a-z]\), \(.*\)) {/NK_AFFINE_RANGE_BUFS(nc, \1, \2, 2) {/' \
    kernels/matmul_tiled.c >"$W/mt2.c"
run "$NK" insights "$W/mt2.c:nk_kernel_matmul_tiled" --random lhsT=1024x256:bfloat16 --random rhs=1024x1024:bfloat16
expect_match "advice for buffers the kernel set is kept, as an estimate" "$W/out" \
    'give it more buffers .* Estimate, not simulated: the loop.s 2 buffers were set by the kernel'
# matmul_blocked_free: more buffers would not help, so with the kernel they are not suggested
run "$NK" insights matmul_blocked_free
expect_no_match "advice that does not help is not given" "$W/out" 'give it more buffers'
run "$NK" view matmul_tiled -o "$W/mt.html"
if [ "$rc" -eq 0 ] && grep -q 'Simulated (re-traced and re-timed): 4 buffers per tile' "$W/mt.html"; then ok; else
    bad "view KERNEL shows the simulated saving" "exit $rc" "$(cat "$W/err")"
fi
# softmax [2048, 256]: the ping-pong finding's simulated time is what --bufs 4 gives
run "$NK" insights softmax --random x=2048x256
expect_match "insights softmax simulates 4 buffers" "$W/out" \
    'do: Keep more tiles in flight .* Simulated \(re-traced and re-timed\): 4 buffers per tile .*: 29\.82 -> 24\.06 us \(-19\.3%\)'
run "$NK" profile softmax --random x=2048x256 --bufs 4 --no-exec -o "$W/sm4.nkp"
expect_match "softmax with --bufs 4 realises it" "$W/out" 'device time 24\.058 us on trn1\)$'
# a file named like a built-in kernel, given to --out or --compare, is a file: the profile's page is written
run env -C "$W" "$(cd "$(dirname "$NK")" && pwd)/nklab" view mt.nkp --out softmax
if [ "$rc" -eq 0 ] && grep -q '^wrote softmax ' "$W/err" && [ -s "$W/softmax" ]; then ok; else
    bad "view PROFILE --out NAME-OF-A-KERNEL writes the profile's page" "exit $rc" "$(cat "$W/err")"
fi
expect_fail "insights KERNEL --out" 2 "nklab: insights: --out needs values; insights only time the kernel" \
    insights tensor_exp --out "$W/x.npy"
expect_fail "insights KERNEL unknown option" 2 "nklab: insights: unknown option '--width' (see nklab insights --help)" \
    insights tensor_exp --width 3

finish
