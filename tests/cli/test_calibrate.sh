#!/usr/bin/env bash
# `nklab calibrate`: the report (every documented figure within tolerance),
# emit's NKI Python files run unchanged under `nklab python --target-file` on
# a known table, and fit recovering that table from their latencies; the
# command line's errors.
# Uses $NK_BUILD/nklab (default build/nklab). The last line is "N passed, N failed".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
make_workdir calib

run "$NK" calibrate report
if [ "$rc" -eq 0 ]; then ok; else bad "calibrate report exits 0" "exit $rc" "$(tail -3 "$W/out")"; fi
expect_match "report: the 189 ns chain beside the model" "$W/out" '^act_dep/n=1 +trn1 +ns +189\.0 +160\.0 +-15\.3% +yes'
expect_match "report: DMA start latency on trn2" "$W/out" '^dma_chain/bytes=4 +trn2 +ns +1300\.0 +1311\.3'

run "$NK" calibrate emit "$W/suite"
if [ "$rc" -eq 0 ] && [ "$(ls "$W/suite"/*.py | wc -l)" -eq 11 ] && [ -f "$W/suite/run_all.sh" ]; then ok; else
    bad "emit writes 11 kernels and run_all.sh" "exit $rc" "$(ls "$W/suite" 2>&1)"; fi

# the known table: every constant the suite fits, away from trn2's values (HBM still
# above what 16 engines load, so the loads stay DMA-bound as on trn2: the fit keeps
# the regime of its start)
cat >"$W/known.cfg" <<'CFG'
base = trn2
name = known
act_ghz = 1.1
dve_ghz = 0.9
pool_ghz = 1.25
pe_ghz = 2.2
static_overhead_cycles = 110
min_ii_cycles = 60
sram_access_cycles = 50
pool_fixed_cycles = 140
pe_mm_init_cycles = 80
pe_fp32_factor = 4.5
sem_latency_ns = 30
dma_engine_gbps = 25
dma_eff_half_bytes = 200
dma_latency_ns = 1100
hbm_gbps = 450
CFG
(cd "$W/suite" && PYTHON="$OLDPWD/$NK python --target-file ../known.cfg" sh run_all.sh) >"$W/run.log" 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then ok; else bad "the emitted kernels run under nklab python" "exit $rc" "$(tail -5 "$W/run.log")"; fi
expect_match "results: the documented header" "$W/suite/calibration-results.csv" '^point,reps,p50_us$'
expect_match "results: a matmul row" "$W/suite/calibration-results.csv" '^pe/m=128:n=512:bf16,16,[0-9.]+$'

run "$NK" calibrate fit "$W/suite/calibration-results.csv" --base trn2 --name known -o "$W/fit.cfg"
if [ "$rc" -eq 0 ]; then ok; else bad "fit" "exit $rc" "$(cat "$W/err")"; fi
# every constant recovered (integers exactly, the rest to 6 significant digits)
for kv in act_ghz=1.1 dve_ghz=0.9 pool_ghz=1.25 pe_ghz=2.2 static_overhead_cycles=110 min_ii_cycles=60 \
    sram_access_cycles=50 pool_fixed_cycles=140 pe_mm_init_cycles=80 pe_fp32_factor=4.5 sem_latency_ns=30 \
    dma_engine_gbps=25 dma_eff_half_bytes=200 dma_latency_ns=1100 hbm_gbps=450; do
    k=${kv%%=*} want=${kv#*=}
    got=$(sed -n "s/^$k *= *\([^ ]*\) .*/\1/p" "$W/fit.cfg")
    if [ -n "$got" ] && awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 1e-5 * w) }'; then
        ok
    else
        bad "fit recovers $k" "got '$got', want $want"
    fi
done
expect_match "fit: the base" "$W/fit.cfg" '^base = trn2$'
expect_match "fit: residuals reported" "$W/fit.cfg" '^# nklab calibrate fit: 30 benchmark points, rms relative residual'
run "$NK" target show --target-file "$W/fit.cfg"
if [ "$rc" -eq 0 ]; then ok; else bad "the fitted file is a target file" "$(cat "$W/err")"; fi

expect_fail "calibrate without a subcommand" 2 \
    "nklab: calibrate: expected report, emit DIR or fit RESULTS (see --help)" calibrate
expect_fail "calibrate fit without results" 2 "nklab: calibrate fit: missing RESULTS.csv" calibrate fit
expect_fail "calibrate fit: bad base" 2 "nklab: calibrate fit: unknown --base 'trn3' (trn1 or trn2)" \
    calibrate fit x.csv --base trn3
printf 'point,reps,us\n' >"$W/bad.csv"
expect_fail "calibrate fit: bad header" 1 "$W/bad.csv:1: expected the header 'point,reps,p50_us'" calibrate fit "$W/bad.csv"
expect_fail "calibrate: unknown subcommand" 2 "nklab: calibrate: unknown subcommand 'go' (report, emit or fit)" \
    calibrate go
finish
