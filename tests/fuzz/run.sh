#!/usr/bin/env bash
# Fuzzes every reader and every consumer: builds the libFuzzer targets
# (clang, ASan, UBSan), generates seed corpora from real inputs
# (gen_seeds.c), and for each target replays its seeds and its regression
# inputs (tests/fuzz/regress/TARGET: inputs that once failed, one file
# each, named for the bug), then fuzzes it a bounded while with a fixed
# seed, one target at a time. Prints "N passed, N failed[, N skipped]" last.
#   profile  the profile reader and every consumer of a profile
#   program  the program file reader and the listing
#   target   the target-file parser and its format round trip
#   npy      the .npy reader (from memory and from a file)
#   args     the command-line parsers
#   diff     the comparison of two profiles
#   FUZZ_TARGETS="a b"  the targets (default: all)
#   FUZZ_TIME=S   seconds of fuzzing per target (default 4)
#   FUZZ_RUNS=N   executions per target at most (default 30000; -1: no bound)
#   FUZZ_KEEP=1   keep each target's corpus between runs (make fuzz) instead
#                 of starting again from the seeds
#   FUZZ_BUILD, FUZZ_CC  build directory (build/fuzz) and compiler (clang)
set -u
cd "$(dirname "$0")/../.."
B=${FUZZ_BUILD:-build/fuzz}
CC=${FUZZ_CC:-clang}
RUNS=${FUZZ_RUNS:-30000}
TIME=${FUZZ_TIME:-4}
TARGETS=${FUZZ_TARGETS:-profile program target npy args diff}
SAN="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -DNK_DEBUG"
INC="-std=c11 -D_DEFAULT_SOURCE -Iinclude -Isrc -Ikernels"
WARN="-Wall -Wextra -Wno-missing-field-initializers"
LIBS="$B/libnklab_kernels.a $B/libnklab.a -lm -lpthread -ldl"
CLI_OBJ="$B/src/cli/args.o $B/src/cli/npy.o $B/src/cli/userkernel.o"
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

# the library and the CLI's parsers instrumented for coverage, the targets
# (the args target links the CLI's parsers) and the seed generator
built=1
make --no-print-directory -j2 BUILD="$B" CC="$CC" CFLAGS="$SAN -fsanitize=fuzzer-no-link" \
    "$B/libnklab.a" "$B/libnklab_kernels.a" $CLI_OBJ >"$B/build.log" 2>&1 || built=0
for t in $TARGETS; do
    [ $built = 1 ] || break
    extra=""
    [ "$t" = args ] && extra=$CLI_OBJ
    [ "$t" = npy ] && extra="$B/src/cli/npy.o"
    $CC $INC $SAN $WARN -Werror -fsanitize=fuzzer "tests/fuzz/fuzz_$t.c" $extra $LIBS -o "$B/fuzz_$t" \
        >>"$B/build.log" 2>&1 || built=0
done
[ $built = 1 ] && $CC $INC $SAN $WARN -Werror -fsanitize=fuzzer-no-link tests/fuzz/gen_seeds.c $LIBS \
    -o "$B/gen_seeds" >>"$B/build.log" 2>&1 || built=0
if [ $built = 1 ]; then
    ok "build the fuzz targets ($(echo $TARGETS | wc -w))"
else
    tail -n 20 "$B/build.log"
    bad "build the fuzz targets"
    finish
fi

# seeds from real inputs, one directory per target
rm -rf "$B/seeds"
mkdir -p "$B/seeds"
if out=$("$B/gen_seeds" "$B/seeds" 2>&1) && [ "$(ls "$B/seeds" | wc -l)" -ge 6 ]; then
    ok "seed corpora: $out"
else
    echo "$out"
    bad "seed corpora"
    finish
fi

total=0
for t in $TARGETS; do
    bin="$B/fuzz_$t"
    # every seed holds up in every later stage
    if "$bin" -runs=0 -artifact_prefix="$B/$t-" "$B/seeds/$t" >"$B/replay-$t.log" 2>&1; then
        ok "$t: replay $(ls "$B/seeds/$t" | wc -l) seeds"
    else
        tail -n 30 "$B/replay-$t.log"
        bad "$t: replay the seeds"
    fi
    # inputs that once failed
    if [ -d "tests/fuzz/regress/$t" ]; then
        if "$bin" -runs=0 -artifact_prefix="$B/$t-" "tests/fuzz/regress/$t" >"$B/regress-$t.log" 2>&1; then
            ok "$t: replay $(ls "tests/fuzz/regress/$t" | wc -l) regression inputs"
        else
            tail -n 30 "$B/regress-$t.log"
            bad "$t: replay the regression inputs"
        fi
    fi
    # the campaign: fixed seed, bounded runs and time
    [ "${FUZZ_KEEP:-0}" = 1 ] || rm -rf "$B/corpus/$t"
    mkdir -p "$B/corpus/$t"
    if "$bin" -seed=1 -runs="$RUNS" -max_total_time="$TIME" -rss_limit_mb=2048 -timeout=10 -max_len=262144 \
            -artifact_prefix="$B/$t-" -print_final_stats=1 "$B/corpus/$t" "$B/seeds/$t" >"$B/fuzz-$t.log" 2>&1; then
        n=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$B/fuzz-$t.log" | grep -oE '[0-9]+$')
        total=$((total + ${n:-0}))
        ok "$t: fuzz ${n:-?} inputs"
    else
        tail -n 40 "$B/fuzz-$t.log"
        bad "$t: fuzz campaign (artifacts in $B/$t-*)"
    fi
done
echo "executions: $total"
finish
