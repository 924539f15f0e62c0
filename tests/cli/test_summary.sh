#!/usr/bin/env bash
# `nklab summary` from the command line: the text and JSON forms of a real
# profile (tensor_exp [250, 512] float32, whose traffic is known: 512000 bytes
# each way), reproducible files with NK_PROFILE_FIXED_TIME, and every error
# with its exact message and exit code.
# Uses $NK_BUILD/nklab (default build/nklab). The last line is "N passed, N failed".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
make_workdir sum

# ---- a profile, twice with a fixed creation time: identical bytes
for n in 1 2; do
    NK_PROFILE_FIXED_TIME=1700000000 run "$NK" profile tensor_exp --no-exec -o "$W/p$n.nkp"
    if [ "$rc" -eq 0 ] && [ -s "$W/p$n.nkp" ]; then ok; else bad "profile tensor_exp ($n)" "exit $rc" "$(cat "$W/err")"; fi
done
if cmp -s "$W/p1.nkp" "$W/p2.nkp"; then ok; else bad "profiles with a fixed time are identical"; fi
P=$W/p1.nkp

# ---- text
run "$NK" summary "$P"
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ]; then ok; else bad "summary exits 0" "exit $rc" "$(cat "$W/err")"; fi
cp "$W/out" "$W/text"
expect_match "names the profile" "$W/text" "^profile +$P\$"
expect_match "names the kernel" "$W/text" '^kernel +tensor_exp$'
expect_match "names the target" "$W/text" '^target +trn1 \(program traced for trn1\)$'
expect_match "counts instructions" "$W/text" '^instructions +6$'
expect_match "fixed creation time" "$W/text" '^captured +2023-11-14 22:13:20 UTC by nklab '
expect_match "total time in us" "$W/text" '^  total_time +[0-9]+\.[0-9]{3} us$'
expect_match "scalar instructions" "$W/text" '^  scalar_engine_instruction_count +2$'
expect_match "percent unit" "$W/text" '^  scalar_engine_active_time_percent +[0-9]+\.[0-9]{2} %$'
expect_match "HBM read bytes" "$W/text" '^  hbm_read_bytes +512000 B +\(500\.00 KiB\)$'
expect_match "HBM write bytes" "$W/text" '^  hbm_write_bytes +512000 B +\(500\.00 KiB\)$'
expect_match "no matmul" "$W/text" '^  matmul_instruction_count +0$'
expect_match "ridge point" "$W/text" '^  peak_flops_bandwidth_ratio +223\.78 FLOP/B$'
# every value sits in the same column
cols=$(grep -E '^  [a-z_]+ ' "$W/text" | awk '{ print index($0, $2) + length($2) }' | sort -u | wc -l)
if [ "$cols" -eq 1 ]; then ok; else bad "values right-aligned in one column" "$cols different columns"; fi

# ---- the top findings follow the metrics: the first (at most) three of
# `nklab insights`, in its order, each with its suggestion
sed -n '/^Top findings/,$p' "$W/text" >"$W/top"
if [ "$(sed -n '1p' "$W/top")" = "Top findings (nklab insights for all):" ] &&
    [ "$(grep -n '^Top findings' "$W/text" | cut -d: -f1)" -gt "$(grep -n '^  spill_reload_bytes ' "$W/text" | cut -d: -f1)" ] &&
    [ -z "$(grep -B1 '^Top findings' "$W/text" | head -n 1)" ]; then ok; else
    bad "a 'Top findings' heading after the metrics and a blank line" "$(tail -n 20 "$W/text")"
fi
# the same headings as `nklab insights` for tensor_exp and two kernels with
# more findings (tensor_add, matmul_tiled)
same_top() {
    local name=$1 prof=$2
    run "$NK" insights "$prof"
    grep -E '^[0-9]+\. \[' "$W/out" | head -n 3 >"$W/want_top"
    run "$NK" summary "$prof"
    sed -n '/^Top findings/,$p' "$W/out" | grep -E '^[0-9]+\. \[' >"$W/got_top"
    if [ "$rc" -eq 0 ] && [ -s "$W/want_top" ] && cmp -s "$W/want_top" "$W/got_top"; then ok; else
        bad "$name: the summary's findings are the insights' first three" "got:  $(cat "$W/got_top")" \
            "want: $(cat "$W/want_top")"
    fi
}
same_top tensor_exp "$P"
if [ "$(grep -c '^   do: ' "$W/top")" -eq "$(wc -l <"$W/got_top")" ]; then ok; else bad "each finding has its suggestion"; fi
for k in tensor_add matmul_tiled; do
    run "$NK" profile "$k" --no-exec -o "$W/$k.nkp"
    same_top "$k" "$W/$k.nkp"
done

# ---- JSON: exactly the metric names, in order
run "$NK" summary --json "$P"
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$W/out")" -eq 1 ]; then ok; else bad "summary --json prints one line" "exit $rc"; fi
if grep -q 'finding' "$W/out"; then bad "summary --json has no findings"; else ok; fi
if command -v python3 >/dev/null; then
    if python3 - "$W/out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
want = ["total_time", "launch_time", "total_time_without_launch", "event_count", "total_active_time_percent"]
for e in ["tensor", "vector", "scalar", "gpsimd", "sync"]:
    want += [e + "_engine_instruction_count", e + "_engine_active_time", e + "_engine_active_time_percent"]
want += ["dma_instruction_count", "dma_active_time", "dma_active_time_percent", "dma_transfer_count",
         "dma_transfer_total_bytes", "dma_transfer_average_bytes", "dma_queue_count", "dma_queue_busy_time",
         "dma_queue_busy_time_percent", "hbm_read_bytes", "hbm_write_bytes",
         "sbuf_read_bytes", "sbuf_write_bytes", "psum_read_bytes", "psum_write_bytes", "hardware_flops",
         "hfu_estimated_percent", "mfu_estimated_percent", "mbu_estimated_percent", "mm_arithmetic_intensity",
         "peak_flops_bandwidth_ratio", "matmul_instruction_count", "spill_store_bytes", "spill_reload_bytes"]
assert list(d) == want, list(d)
assert d["hbm_read_bytes"] == 512000 and d["hbm_write_bytes"] == 512000
assert d["scalar_engine_instruction_count"] == 2 and d["event_count"] >= 6
assert 0 < d["total_time"] < 1e-3
assert all(isinstance(v, (int, float)) for v in d.values())
assert 0 <= d["total_active_time_percent"] <= 100
EOF
    then ok; else bad "summary --json keys and values"; fi
fi

# ---- errors
expect_fail "no profile" 2 "nklab: summary: which profile? (nklab summary PROFILE.nkp)" summary
expect_fail "unknown option" 2 "nklab: summary: unknown option '--xml' (see nklab summary --help)" summary "$P" --xml
expect_fail "two profiles" 2 "nklab: summary: one profile at a time ('$P' and '$P')" summary "$P" "$P"
expect_fail "missing file" 1 "nklab: summary: $W/none.nkp: cannot open: No such file or directory" summary "$W/none.nkp"
head -c 100 "$P" >"$W/cut.nkp"
size=$(($(wc -c <"$P") - 32))
expect_fail "truncated file" 1 \
    "nklab: summary: $W/cut.nkp: truncated: the header announces $size bytes of content, the file holds 68" \
    summary "$W/cut.nkp"
printf 'hello, world\n' >"$W/foreign.nkp"
expect_fail "foreign file" 1 "nklab: summary: $W/foreign.nkp: not an nklab profile (wrong magic number)" \
    summary "$W/foreign.nkp"
cp "$P" "$W/flip.nkp"
byte=$(od -An -tu1 -j200 -N1 "$P" | tr -d ' ')
printf "\\$(printf %03o $((byte ^ 16)))" | dd of="$W/flip.nkp" bs=1 seek=200 conv=notrunc 2>/dev/null
if cmp -s "$P" "$W/flip.nkp"; then bad "the flipped copy differs"; else ok; fi
expect_fail "corrupt file" 1 "nklab: summary: $W/flip.nkp: checksum mismatch: the content is corrupt" \
    summary "$W/flip.nkp"
run "$NK" summary --help
if [ "$rc" -eq 0 ] && grep -q '^usage: nklab summary PROFILE.nkp \[--json\]' "$W/out"; then ok; else bad "summary --help"; fi


# the schedule the compile step kept, and the trace-order alternative
run "$NK" profile rmsnorm --no-exec -o "$W/rn_list.nkp"
run "$NK" summary "$W/rn_list.nkp"
expect_match "list schedule kept, with trace order's time" "$W/out" '^schedule +list, (earliest start|critical path) \(trace order: [0-9.]+ us\)$'
run "$NK" profile rmsnorm --no-exec --schedule trace -o "$W/rn_trace.nkp"
run "$NK" summary "$W/rn_trace.nkp"
expect_match "trace order asked for" "$W/out" '^schedule +trace order \(asked for\)$'
expect_fail "bad --schedule" 2 "nklab: profile: --schedule is 'list' or 'trace', not 'fast'" \
    profile rmsnorm --no-exec --schedule fast -o "$W/x.nkp"

finish
