#!/usr/bin/env bash
# What-if targets from the command line: `nklab target show`, --target-file on
# run, bench and profile (every error with its exact message and exit code),
# a what-if run whose device time and profile show the modified table, and
# timing-only runs that never allocate their generated inputs.
# Uses $NK_BUILD/nklab (default build/nklab, made by `make test`). The last
# line is "N passed, N failed".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
make_workdir cli

# expect_ok NAME ARGS...: `nklab ARGS` succeeds (output in $W/out)
expect_ok() {
    local name=$1
    shift
    run "$NK" "$@"
    if [ "$rc" -eq 0 ]; then ok; else bad "$name" "exit $rc" "stderr: $(head -c 400 "$W/err")"; fi
}

# ---- nklab target show

expect_ok "target show" target show
cp "$W/out" "$W/trn1.txt"
expect_match "target show starts from trn1" "$W/trn1.txt" '^base = trn1$'
expect_match "target show: hbm_gbps with its meaning and source" "$W/trn1.txt" '^hbm_gbps += 410 +# HBM bandwidth per core, GB/s; \[A2\] derived$'
expect_match "target show: shortest decimals" "$W/trn1.txt" '^pe_ghz += 2\.8 +#'
expect_ok "target show trn2" target show trn2
expect_match "target show trn2: its clock" "$W/out" '^pe_ghz += 2\.4 +#'
expect_match "target show trn2: a value carried over from trn1" "$W/out" '^pe_mm_init_cycles += 64 +# .*; carried \[A2\]$'
# the printed table is a target file that reads back to the same table
expect_ok "target show --target-file of its own output" target show --target-file "$W/trn1.txt"
if cmp -s "$W/out" "$W/trn1.txt"; then ok; else bad "target show round trip" "$(diff "$W/out" "$W/trn1.txt" | head)"; fi
printf '# trn1 with twice the DMA and HBM bandwidth\nbase = trn1\nname = fast-dma\ndma_engine_gbps = 34\nhbm_gbps = 820\n' \
    >"$W/fast.txt"
expect_ok "target show a modified target" target show --target-file "$W/fast.txt"
expect_match "the file's name" "$W/out" '^name += fast-dma +#'
expect_match "the file's value" "$W/out" '^dma_engine_gbps += 34 +#'
expect_match "the base's value" "$W/out" '^dve_ghz += 1\.12 +#'
expect_match "nklab --help lists target" <("$NK" --help) '^  target +print a target table'

expect_fail "target without show" 2 "nklab: target: expected \`nklab target show [trn1|trn2 | --target-file FILE]\`" target
expect_fail "target list" 2 "nklab: target: expected \`nklab target show [trn1|trn2 | --target-file FILE]\`" target list
expect_fail "target show unknown" 2 "nklab: target show: unknown target 'trn3' (trn1 or trn2)" target show trn3
expect_fail "target show two names" 2 "nklab: target show: unexpected argument 'trn2' (one target)" \
    target show trn1 trn2
expect_fail "target show name and file" 2 "nklab: target show: a target name or --target-file, not both" \
    target show trn1 --target-file "$W/fast.txt"
expect_fail "target show unknown option" 2 "nklab: target show: unknown option '--bogus' (see nklab target --help)" \
    target show --bogus
expect_fail "target show --target-file without a value" 2 "nklab: option --target-file needs a value" \
    target show --target-file

# ---- the loader's errors, printed as they are (PATH:LINE: message), exit 1

printf 'base = trn1\nbogus = 1\n' >"$W/key.txt"
expect_fail "unknown key" 1 "$W/key.txt:2: unknown key 'bogus'" target show --target-file "$W/key.txt"
printf 'base = trn1\nhbm_gbps = fast\n' >"$W/value.txt"
expect_fail "bad value" 1 "$W/value.txt:2: bad value 'fast' for 'hbm_gbps': expected a number in [0.001, 1e+07]" \
    target show --target-file "$W/value.txt"
printf 'base = trn1\npartitions = 256\n' >"$W/range.txt"
expect_fail "value out of range" 1 \
    "$W/range.txt:2: bad value '256' for 'partitions': expected an integer in [1, 128]" \
    target show --target-file "$W/range.txt"
printf '# no base\nhbm_gbps = 100\n' >"$W/nobase.txt"
expect_fail "no base first" 1 "$W/nobase.txt:2: the first setting must be 'base = trn1' or 'base = trn2'" \
    target show --target-file "$W/nobase.txt"
printf 'base = trn1\nbase = trn2\n' >"$W/base2.txt"
expect_fail "base twice" 1 "$W/base2.txt:2: 'base' may appear only once, as the first setting" \
    target show --target-file "$W/base2.txt"
printf 'base = trn4\n' >"$W/base4.txt"
expect_fail "unknown base" 1 "$W/base4.txt:1: unknown base target 'trn4' (known: trn1, trn2)" \
    target show --target-file "$W/base4.txt"
printf 'base = trn1\nhbm_gbps = 100\nhbm_gbps = 200\n' >"$W/twice.txt"
expect_fail "key twice" 1 "$W/twice.txt:3: 'hbm_gbps' is set twice (first on line 2)" \
    target show --target-file "$W/twice.txt"
printf 'base = trn1\nhbm_gbps\n' >"$W/noeq.txt"
expect_fail "no '='" 1 "$W/noeq.txt:2: expected 'key = value', got 'hbm_gbps'" target show --target-file "$W/noeq.txt"
printf 'base = trn1\nsbuf_reserved_bytes = 196608\n' >"$W/rel.txt"
expect_fail "relation between keys" 1 \
    "$W/rel.txt: sbuf_reserved_bytes (196608) must be less than sbuf_partition_bytes (196608)" \
    target show --target-file "$W/rel.txt"
printf '' >"$W/empty.txt"
expect_fail "empty file" 1 "$W/empty.txt: no 'base = trn1' or 'base = trn2' setting" \
    target show --target-file "$W/empty.txt"
expect_fail "missing file" 1 "$W/missing.txt: cannot open: No such file or directory" \
    target show --target-file "$W/missing.txt"

# ---- --target-file on run, bench and profile

for cmd in run bench profile; do
    expect_fail "$cmd: bad target file" 1 "$W/key.txt:2: unknown key 'bogus'" \
        $cmd tensor_exp --random in=250x512 --no-exec --target-file "$W/key.txt"
    expect_fail "$cmd: missing target file" 1 "$W/missing.txt: cannot open: No such file or directory" \
        $cmd tensor_exp --random in=250x512 --no-exec --target-file "$W/missing.txt"
    expect_fail "$cmd: --target and --target-file" 2 \
        "nklab: $cmd: --target and --target-file exclude each other (a target file names its base target)" \
        $cmd tensor_exp --random in=250x512 --no-exec --target trn2 --target-file "$W/fast.txt"
    expect_fail "$cmd: --target-file without a value" 2 "nklab: option --target-file needs a value" \
        $cmd tensor_exp --random in=250x512 --no-exec --target-file
    expect_match "$cmd --help shows --target-file" <("$NK" $cmd --help) '--target-file'
done
# usage errors come before the file is read
expect_fail "unknown kernel before the target file" 2 "nklab: unknown kernel 'nope' (\`nklab kernels\` lists them)" \
    run nope --target-file "$W/missing.txt"

# ---- a what-if run: tensor_add moves 3 tensors for one add, DMA-bound

expect_ok "run on trn1" run tensor_add --random a=1024x2048 --random b=1024x2048 --no-exec
base_us=$(sed -n 's/.*device time \([0-9.]*\) us.*/\1/p' "$W/out")
expect_ok "run on the what-if target" run tensor_add --random a=1024x2048 --random b=1024x2048 --no-exec \
    --target-file "$W/fast.txt"
expect_match "the run names the table" "$W/out" '^tensor_add on fast-dma: [0-9]+ instructions, device time'
fast_us=$(sed -n 's/.*device time \([0-9.]*\) us.*/\1/p' "$W/out")
if awk -v a="$base_us" -v b="$fast_us" 'BEGIN { exit !(b > 0 && b < 0.65 * a) }'; then
    ok
else
    bad "2x DMA and HBM bandwidth: device time well under the trn1 one" "trn1 $base_us us, fast-dma $fast_us us"
fi
expect_ok "profile on the what-if target" profile tensor_add --random a=1024x2048 --random b=1024x2048 \
    --no-exec --target-file "$W/fast.txt" -o "$W/fast.nkp"
expect_match "profile: written on the table" "$W/out" "^wrote $W/fast.nkp \\([0-9]+ instructions, device time $fast_us us on fast-dma\\)$"
expect_ok "summary of the what-if profile" summary "$W/fast.nkp"
expect_match "summary names the table" "$W/out" '^target +fast-dma \(program traced for fast-dma\)$'
expect_ok "insights of the what-if profile" insights "$W/fast.nkp"
expect_match "insights name the table" "$W/out" '^Insights: kernel tensor_add on fast-dma,'
expect_ok "bench on the what-if target" bench tensor_add --random a=1024x2048 --random b=1024x2048 --no-exec \
    --iters 3 --warmup 0 --target-file "$W/fast.txt"
expect_match "bench names the table" "$W/out" '^tensor_add on fast-dma: 3 iterations'
expect_ok "a values run on the what-if target" run tensor_add --random a=256x512 --random b=256x512 \
    --target-file "$W/fast.txt" --out "$W/y.npy"
expect_match "it writes its output" "$W/out" "^wrote $W/y.npy \\[256, 512\\] float32$"

# ---- timing-only runs do not allocate generated inputs: 2^31 float32
# elements (8 GiB) under a 1.5 GiB address-space limit

# (a sanitizer build reserves terabytes of address space: it cannot run under the limit at all)
if ! bash -c 'ulimit -v 1500000 && "$0" --version; exit $?' "$NK" >/dev/null 2>&1; then
    echo "skip: $NK does not start under a 1.5 GiB address-space limit (a sanitizer build?)"
    finish
    exit
fi
if (ulimit -v 1500000 && "$NK" run tensor_exp --random in=262144x8192 --no-exec >"$W/out" 2>"$W/err"); then
    ok
else
    bad "--no-exec run of a 8 GiB input under a 1.5 GiB limit" "$(head -c 300 "$W/err")"
fi
expect_match "--no-exec run of a 8 GiB input: timed" "$W/out" '^tensor_exp on trn1: 6144 instructions, device time'
if (ulimit -v 1500000 && "$NK" profile tensor_exp --random in=262144x8192 --no-exec -o "$W/big.nkp" \
    >"$W/out" 2>"$W/err"); then
    ok
else
    bad "--no-exec profile of a 8 GiB input under a 1.5 GiB limit" "$(head -c 300 "$W/err")"
fi
finish
