#!/usr/bin/env bash
# SPMD launch grids from the command line: a built-in SPMD kernel runs on its
# example grid, --grid overrides it (ints, nc(K)*M, M*nc(K), none), the summary
# names the grid and each core, and bad grids are refused with their message.
# Uses $NK_BUILD/nklab (default build/nklab). The last line is "N passed, N failed".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
make_workdir spmd

# the example grid (2 x 2) over trn2's two cores
run "$NK" profile spmd_matmul --target trn2 --no-exec -o "$W/a.nkp"
if [ "$rc" -eq 0 ]; then ok; else bad "profile spmd_matmul" "exit $rc" "$(cat "$W/err")"; fi
run "$NK" summary "$W/a.nkp"
expect_match "summary names the grid" "$W/out" '^grid +\[2, 2\]: 4 program instances on 2 NeuronCores$'
expect_match "summary lists core 1" "$W/out" '^  NC1 +2 instances, busy '
# the same run with values, against the reference (run checks built-ins' outputs when asked to write them)
run "$NK" run spmd_tensor_add --target trn2 --random a=250x1000 --random b=250x1000 --out "$W/c.npy"
if [ "$rc" -eq 0 ] && [ -s "$W/c.npy" ]; then ok; else bad "run spmd_tensor_add" "exit $rc" "$(cat "$W/err")"; fi

# --grid: annotated axes on trn2, none, and the sequence of instances on trn1's one core
for g in 'nc(2)*2,2' '2*nc(2)x2' '4' 'none'; do
    run "$NK" profile spmd_matmul --target trn2 --no-exec --grid "$g" -o "$W/g.nkp"
    if [ "$rc" -eq 0 ]; then ok; else bad "--grid $g" "exit $rc" "$(cat "$W/err")"; fi
done
run "$NK" summary "$W/g.nkp"
if grep -q '^grid ' "$W/out"; then bad "--grid none has no grid line"; else ok; fi
run "$NK" profile spmd_matmul --no-exec --grid 4 -o "$W/t1.nkp"
run "$NK" summary "$W/t1.nkp"
expect_match "trn1 runs the instances in sequence" "$W/out" '^grid +\[4\]: 4 program instances on 1 NeuronCore, one after another$'

# refusals
run "$NK" profile spmd_matmul --no-exec --grid 'nc(2)*2' -o "$W/x.nkp"
expect_match "nc(2) on trn1" "$W/err" 'launch grid: nl.nc\(2\) on axis 0, but a launch on trn1 spreads over 1 physical NeuronCore'
for g in '0' '2,2,2,2' 'nc(2)*nc(2)' 'three' '2*3'; do
    run "$NK" profile spmd_matmul --no-exec --grid "$g" -o "$W/x.nkp"
    if [ "$rc" -eq 2 ] && grep -q -- '--grid' "$W/err"; then ok; else bad "--grid $g is a usage error" "exit $rc" "$(cat "$W/err")"; fi
done
finish
