#!/usr/bin/env bash
# The walkthrough (`make demo`): NKI's profiling example, exp over a
# [250, 512] float32 tensor, first as its NKI Python file (examples/exp.py,
# under `nklab python`), then written in C (examples/tensor_exp.c), run,
# benchmarked, profiled and summarised by the nklab in $NK_BUILD (default
# build). Files go to $NK_BUILD/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${NK_BUILD:-build}
NK=$B/nklab
D=$B/demo
K=examples/tensor_exp.c:tensor_exp
IN=(--random in=250x512:float32 --seed 7)
mkdir -p "$D"

step() { printf '\n== %s\n' "$1"; }
show() { printf '$ %s\n' "$*"; "$@"; }
has() { "$NK" "$1" --help >/dev/null 2>&1; }

step "0. NKI's profiling example as the NKI Python file it is (examples/exp.py), run unchanged"
sed -n '/^@nki.benchmark/,/^    return/p' examples/exp.py
rnk=$(realpath --relative-to="$D" "$NK"); rex=$(realpath --relative-to="$D" examples/exp.py)
printf '$ (cd %s && %s python %s)\n' "$D" "$rnk" "$rex"
(cd "$D" && "$rnk" python "$rex")
printf '$ %s view %s -o %s\n' "$NK" "$D/profile.ntff" "$D/exp_py.html"
"$NK" view "$D/profile.ntff" -o "$D/exp_py.html"

step "1. the kernel: NKI's profiling example in C (examples/tensor_exp.c)"
sed -n '/^void tensor_exp/,/^}/p' examples/tensor_exp.c | grep -v '^ *\(/\*\|\*\)'

step "2. run it on the host: values as the hardware rounds them"
show "$NK" run "$K" "${IN[@]}" --out "$D/y.npy"

step "3. benchmark it: 10 warm-up and 100 timed iterations (see nklab bench --help)"
show "$NK" bench "$K" "${IN[@]}"

step "4. profile it: every instruction on every engine and DMA queue, with its source line"
show "$NK" profile "$K" "${IN[@]}" -o "$D/tensor_exp.nkp"

step "5. look at the profile"
if has timeline; then show "$NK" timeline "$D/tensor_exp.nkp"; fi
if has summary; then
    keys='total_time|scalar_engine_active_time_percent|dma_active_time_percent|dma_transfer_count|hbm_(read|write)_bytes|mbu_estimated_percent'
    printf "\$ %s | grep -E '%s'\n" "$NK summary $D/tensor_exp.nkp" "$keys"
    "$NK" summary "$D/tensor_exp.nkp" | grep -E "$keys"
fi
if has insights; then
    step "6. what limits it, and what to change"
    printf '$ %s | sed -n %s\n' "$NK insights $D/tensor_exp.nkp" "'/^Findings/,\$p'"
    "$NK" insights "$D/tensor_exp.nkp" | sed -n '/^Findings/,$p'
fi
if has view; then
    step "7. open it in a browser: one self-contained HTML file, no server"
    show "$NK" view "$D/tensor_exp.nkp" -o "$D/tensor_exp.html"
fi
if has diff; then
    step "8. rewrite it on that advice (kernels/variants/tensor_exp.c) and compare"
    V=kernels/variants/tensor_exp.c:nk_kernel_tensor_exp_pipelined
    show "$NK" profile "$V" "${IN[@]}" -o "$D/tensor_exp_pipelined.nkp"
    show "$NK" diff "$D/tensor_exp.nkp" "$D/tensor_exp_pipelined.nkp"
fi
if has export; then
    printf '\nalso: %s\n' "$NK export $D/tensor_exp.nkp --format perfetto -o $D/trace.json  (opens in ui.perfetto.dev)"
fi
