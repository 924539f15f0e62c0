#!/usr/bin/env bash
# Fuzzes the profile reader and the program decoder: builds the libFuzzer
# target (clang, ASan, UBSan), generates a seed corpus from real profiles of
# the built-in kernels, replays it, then runs a bounded campaign with a fixed
# seed. Inputs that once failed live in tests/fuzz/regress and are replayed
# every time. Prints "N passed, N failed[, N skipped]" last.
#   FUZZ_RUNS=N  executions of the campaign (default 30000)
#   FUZZ_TIME=S  its time cap in seconds (default 20)
set -u
cd "$(dirname "$0")/../.."
B=${FUZZ_BUILD:-build/fuzz}
CC=${FUZZ_CC:-clang}
RUNS=${FUZZ_RUNS:-30000}
TIME=${FUZZ_TIME:-20}
SAN="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
INC="-std=c11 -D_DEFAULT_SOURCE -Iinclude -Isrc -Ikernels"
LIBS="$B/libnklab_kernels.a $B/libnklab.a -lopenblas -lsleef -lm -lpthread"
pass=0; fail=0; skip=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
finish() { echo "$pass passed, $fail failed, $skip skipped"; [ "$fail" -eq 0 ]; exit; }

mkdir -p "$B"
probe=$(mktemp -d)
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; return (int)(n * 0); }\n' \
    >"$probe/p.c"
if ! command -v "$CC" >/dev/null 2>&1 || ! "$CC" -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" 2>/dev/null; then
    rm -rf "$probe"
    echo "skipped: $CC with libFuzzer not available (scripts/install-deps.sh test installs it)"
    skip=1
    finish
fi
rm -rf "$probe"

# the library instrumented for coverage, the target and the seed generator
if make --no-print-directory -j2 BUILD="$B" CC="$CC" CFLAGS="$SAN -fsanitize=fuzzer-no-link" \
        "$B/libnklab.a" "$B/libnklab_kernels.a" >"$B/build.log" 2>&1 &&
    $CC $INC $SAN -fsanitize=fuzzer tests/fuzz/fuzz_profile.c $LIBS -o "$B/fuzz_profile" >>"$B/build.log" 2>&1 &&
    $CC $INC $SAN -fsanitize=fuzzer-no-link tests/fuzz/gen_seeds.c $LIBS -o "$B/gen_seeds" >>"$B/build.log" 2>&1; then
    ok "build the fuzz target"
else
    tail -n 20 "$B/build.log"
    bad "build the fuzz target"
    finish
fi

# seeds from real profiles
rm -rf "$B/seeds" "$B/corpus"
mkdir -p "$B/seeds" "$B/corpus"
if out=$("$B/gen_seeds" "$B/seeds" 2>&1) && [ "$(ls "$B/seeds" | wc -l)" -ge 6 ]; then
    ok "seed corpus: $out"
else
    echo "$out"
    bad "seed corpus"
    finish
fi

# every seed decodes and holds up in every later stage
if "$B/fuzz_profile" -runs=0 -artifact_prefix="$B/" "$B/seeds" >"$B/replay.log" 2>&1; then
    ok "replay the seeds"
else
    tail -n 30 "$B/replay.log"
    bad "replay the seeds"
fi

# inputs that once failed (tests/fuzz/regress: one file each, named for the bug)
if "$B/fuzz_profile" -runs=0 -artifact_prefix="$B/" tests/fuzz/regress >"$B/regress.log" 2>&1; then
    ok "replay $(ls tests/fuzz/regress | wc -l) regression inputs"
else
    tail -n 30 "$B/regress.log"
    bad "replay the regression inputs"
fi

# the campaign: fixed seed, bounded runs and time
if "$B/fuzz_profile" -seed=1 -runs="$RUNS" -max_total_time="$TIME" -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix="$B/" -print_final_stats=1 "$B/corpus" "$B/seeds" >"$B/fuzz.log" 2>&1; then
    ok "fuzz $(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$B/fuzz.log" | grep -oE '[0-9]+$') inputs"
else
    tail -n 40 "$B/fuzz.log"
    bad "fuzz campaign (artifacts in $B/)"
fi
finish
