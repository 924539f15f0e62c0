#!/usr/bin/env bash
# User kernels (FILE.c:FUNCTION) that go wrong, and their compile cache
# (docs/cli.md, "Kernels from C files"): a corrupted, truncated or stale cache
# entry is rebuilt; a cache directory someone else could write to is refused;
# a kernel that crashes ends with a message naming its file and last traced
# line and exit 1; a data symbol named as the kernel is refused; a misspelt
# API call is a compile error at its line; a runaway trace stops at its
# instruction or memory bound; an HBM tensor too large for the file format is
# refused when traced. Uses $NK_BUILD/nklab (default build/nklab).
# The last line is "N passed, N failed[, N skipped]".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
need_npytool
make_workdir uks
case $NK in /*) ;; *) NK=$PWD/$NK ;; esac
export NKLAB_CACHE_DIR=$W/cache

# a kernel whose output is FILL_VALUE (from a header it includes) everywhere
mkdir -p "$W/k"
cat >"$W/k/fill.c" <<'EOF'
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
EOF
echo "#define FILL_VALUE 3.0" >"$W/k/fill_value.h"
"$T" rand "$W/c3.npy" f4 1 3 3 4 4
"$T" rand "$W/c5.npy" f4 1 5 5 4 4
FILL=$W/k/fill.c:fill

# fill_is NAME WANT.npy: `nklab run fill` succeeded and wrote WANT's values
fill_is() {
    run "$NK" run "$FILL" --random x=4x4 --out "$W/f.npy"
    if [ "$rc" -eq 0 ] && "$T" cmp "$W/f.npy" "$1" 0 0 >/dev/null; then ok; else
        bad "$2" "exit $rc" "$(cat "$W/err")"
    fi
}
fill_is "$W/c3.npy" "a user kernel runs (fresh cache)"
so=$(ls "$NKLAB_CACHE_DIR"/k*.so)
if [ "$(echo "$so" | wc -l)" -eq 1 ] && [ -s "$so.deps" ] && head -1 "$so.deps" | grep -qx "nklab kernel cache 1" &&
    grep -q "^so [0-9a-f]\{16\} $(stat -c %s "$so")\$" "$so.deps" && grep -q " $W/k/fill_value.h\$" "$so.deps"; then
    ok
else
    bad "the manifest records the object's hash and size and the header" "$(cat "$so.deps" 2>&1)"
fi
if [ -z "$(find "$NKLAB_CACHE_DIR" -mindepth 1 -name '.*')" ]; then ok; else
    bad "no build directory or temporary file left in the cache" "$(ls -a "$NKLAB_CACHE_DIR")"
fi

# ---- corrupted entries are rebuilt, not loaded
ino=$(stat -c %i "$so")
fill_is "$W/c3.npy" "a cached kernel runs again"
if [ "$(stat -c %i "$so")" = "$ino" ]; then ok; else bad "a valid entry is not rebuilt"; fi
truncate -s 100 "$so" # was: "file too short" on every run
fill_is "$W/c3.npy" "a truncated cached object is rebuilt"
if [ "$(stat -c %s "$so")" -gt 100 ]; then ok; else bad "the truncated object was replaced"; fi
# same size, the code overwritten with bytes that trap (ud2, 0f 0b): was SIGILL
size=$(stat -c %s "$so")
off=$(objdump -h "$so" 2>/dev/null | awk '$2 == ".text" { print $6 }')
if [ -n "$off" ]; then off=$((0x$off)); else off=4096; fi
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do printf '\017\013'; done >"$W/ud2"
dd if="$W/ud2" of="$so" bs=1 seek="$off" conv=notrunc status=none
if [ "$(stat -c %s "$so")" -eq "$size" ]; then
    fill_is "$W/c3.npy" "a cached object with corrupted code (same size) is rebuilt"
else
    bad "corrupting the object in place kept its size"
fi
: >"$so.deps"
echo "#define FILL_VALUE 5.0" >"$W/k/fill_value.h"
fill_is "$W/c5.npy" "an empty manifest is stale: the edited header is compiled in"
rm -f "$so.deps"
echo "#define FILL_VALUE 3.0" >"$W/k/fill_value.h"
fill_is "$W/c3.npy" "a missing manifest is stale"
echo "#define FILL_VALUE 5.0" >"$W/k/fill_value.h"
fill_is "$W/c5.npy" "an edited header rebuilds the kernel"
head -c 30 "$so.deps" >"$W/half" && cat "$W/half" >"$so.deps"
echo "#define FILL_VALUE 3.0" >"$W/k/fill_value.h"
fill_is "$W/c3.npy" "a truncated manifest is stale"

# ---- cache directories another user could write to are refused
mkdir -m 0777 "$W/open"
chmod 0777 "$W/open"
NKLAB_CACHE_DIR=$W/open expect_fail "a cache directory writable by others is refused" 1 \
    "nklab: the cache directory $W/open is writable by its group and others (mode 0777): anyone who can write there could plant a kernel; chmod go-w it, or set NKLAB_CACHE_DIR to a private directory" \
    run "$FILL" --random x=4x4 --out "$W/f.npy"
if [ -z "$(ls -A "$W/open")" ]; then ok; else bad "nothing compiled into the refused directory" "$(ls -A "$W/open")"; fi
mkdir -m 0770 "$W/grp"
chmod 0770 "$W/grp"
NKLAB_CACHE_DIR=$W/grp/sub expect_fail "a cache directory inside a group-writable directory is refused" 1 \
    "nklab: the cache directory $W/grp/sub is inside $W/grp, which is writable by its group (mode 0770): they could replace the cache; set NKLAB_CACHE_DIR to a directory of your own" \
    run "$FILL" --random x=4x4 --out "$W/f.npy"
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
    mkdir -m 0700 "$W/theirs"
    chown nobody "$W/theirs"
    NKLAB_CACHE_DIR=$W/theirs expect_fail "a cache directory of another user is refused" 1 \
        "nklab: the cache directory $W/theirs belongs to uid $(id -u nobody), not to you (uid 0): nklab loads only kernels it compiled into a directory of your own; set NKLAB_CACHE_DIR to one" \
        run "$FILL" --random x=4x4 --out "$W/f.npy"
    if [ -z "$(ls -A "$W/theirs")" ]; then ok; else bad "nothing compiled into another user's directory"; fi
elif [ "$(id -u)" -ne 0 ]; then
    NKLAB_CACHE_DIR=/ expect_fail "a cache directory of another user is refused" 1 \
        "nklab: the cache directory / belongs to uid 0, not to you (uid $(id -u)): nklab loads only kernels it compiled into a directory of your own; set NKLAB_CACHE_DIR to one" \
        run "$FILL" --random x=4x4 --out "$W/f.npy"
else
    skip=$((skip + 1))
fi
# a link to the user's own private directory is followed; to an open one, refused
mkdir -m 0700 "$W/real"
ln -s "$W/real" "$W/link"
run env NKLAB_CACHE_DIR="$W/link" "$NK" run "$FILL" --random x=4x4 --out "$W/f.npy"
if [ "$rc" -eq 0 ] && [ -n "$(ls "$W/real"/k*.so 2>/dev/null)" ]; then ok; else
    bad "a link to a private directory is a cache directory" "exit $rc" "$(cat "$W/err")"
fi
ln -s "$W/open" "$W/openlink"
run env NKLAB_CACHE_DIR="$W/openlink" "$NK" run "$FILL" --random x=4x4 --out "$W/f.npy"
if [ "$rc" -eq 1 ] && grep -q "writable by its group and others" "$W/err"; then ok; else
    bad "a link to an open directory is refused" "exit $rc" "$(cat "$W/err")"
fi
# no predictable fallback: without HOME, XDG_CACHE_HOME and NKLAB_CACHE_DIR, refuse
run env -u HOME -u XDG_CACHE_HOME -u NKLAB_CACHE_DIR "$NK" run "$FILL" --random x=4x4 --out "$W/f.npy"
if [ "$rc" -eq 1 ] && [ "$(cat "$W/err")" = "nklab: no directory for compiled kernels: HOME and XDG_CACHE_HOME are unset (or not absolute paths); set NKLAB_CACHE_DIR to a directory of your own" ] &&
    [ ! -e "/tmp/nklab-$(id -u)/k" ]; then ok; else
    bad "no cache directory without HOME" "exit $rc" "$(cat "$W/err")"
fi
# the XDG default is created private
run env -u NKLAB_CACHE_DIR XDG_CACHE_HOME="$W/xdg" "$NK" run "$FILL" --random x=4x4 --out "$W/f.npy"
if [ "$rc" -eq 0 ] && [ "$(stat -c %a "$W/xdg/nklab")" = 700 ] && [ -n "$(ls "$W/xdg/nklab"/k*.so)" ]; then ok; else
    bad "XDG_CACHE_HOME/nklab is created with mode 0700" "exit $rc" "$(cat "$W/err")"
fi

# ---- kernels that crash: a message naming the file and the last traced line, exit 1
cat >"$W/crash.c" <<'EOF'
#include "nklab.h"
#include <stdint.h>
#include <stdlib.h>

int table[4] = {1, 2, 3, 4};

static void poke(intptr_t where) { *(volatile int *)where = 1; }

void segv(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]);
    nk_tensor y = nk_exp(nc, x);
    (void)y;
    poke(nargs - 1);
}

void aborts(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nc, (void)args, (void)nargs;
    abort();
}

void fpe(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    nk_tensor x = nk_load(nc, args[0]);
    (void)x;
    volatile int zero = nargs - 1;
    volatile int q = 7 / zero;
    (void)q;
}

static int deep(volatile int n) { volatile char pad[512]; pad[0] = (char)n; return n ? deep(n - 1) + pad[0] : 0; }

void recurse(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    nk_tensor x = nk_load(nc, args[0]);
    (void)x;
    deep(nargs << 30);
}

/* SPMD: the second instance crashes; the last line is the second's */
void second(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(4, 4), NK_F32, NK_SHARED_HBM);
    nk_tensor x = nk_load(nc, args[0]);
    if (nk_program_id(nc, 0) == 1)
        poke(0);
    nk_store(nc, out, x);
    nk_return(nc, out);
}
EOF
C=$W/crash.c
for k in segv:"SIGSEGV, an invalid memory access); the last line it traced: $C:13" \
    aborts:"SIGABRT, abort() or a failed assert) before tracing anything" \
    fpe:"SIGFPE, an arithmetic error such as an integer division by zero); the last line it traced: $C:26" \
    recurse:"SIGSEGV, an invalid memory access); the last line it traced: $C:37" \
    second:"SIGSEGV, an invalid memory access); the last line it traced: $C:47"; do
    fn=${k%%:*}
    grid=
    [ "$fn" = second ] && grid="--grid 2"
    # shellcheck disable=SC2086
    run "$NK" run "$C:$fn" --random x=4x4 --out "$W/c.npy" $grid
    last=$(tail -1 "$W/err")
    if [ "$rc" -eq 1 ] && [ "$last" = "nklab: $C: the kernel '$fn' crashed (${k#*:}" ] && [ ! -e "$W/c.npy" ]; then ok; else
        bad "a crashing kernel ($fn) is reported, exit 1" "exit $rc" "stderr: $(cat "$W/err")" \
            "want:   nklab: $C: the kernel '$fn' crashed (${k#*:}"
    fi
done
# profile: the same message, no profile and no temporary file written
run "$NK" profile "$C:segv" --random x=4x4 -o "$W/c.nkp"
if [ "$rc" -eq 1 ] && [ ! -e "$W/c.nkp" ] && [ -z "$(find "$W" -maxdepth 1 -name '.*.tmp')" ]; then ok; else
    bad "profile of a crashing kernel: exit 1, no profile" "exit $rc" "$(cat "$W/err")"
fi
expect_fail "a data symbol named as the kernel is refused" 1 \
    "nklab: $C: 'table' is not a function but data (a variable or an array); kernels are \`void table(nk_ctx *nc, const nk_tensor *args, int nargs)\`" \
    run "$C:table" --random x=4x4 --out "$W/c.npy"
expect_fail "a function of another library is not the kernel" 1 \
    "nklab: $C has no function 'abort' (kernels are \`void abort(nk_ctx *nc, const nk_tensor *args, int nargs)\` and must not be static)" \
    run "$C:abort" --random x=4x4 --out "$W/c.npy"

# ---- a misspelt API call is an error at its line, without macro-expansion notes
cat >"$W/typo.c" <<'EOF'
#include "nklab.h"

void typo(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(4, 4), NK_F32, NK_SHARED_HBM);
    nk_tensor x = nk_load(nc, args[0]);
    NK_AFFINE_RANGE(nc, i, 2) {
        nk_stor(nc, out, x);
    }
    nk_return(nc, out);
}
EOF
for cc in gcc clang; do
    if ! command -v "$cc" >/dev/null; then
        skip=$((skip + 1))
        continue
    fi
    run env CC="$cc" "$NK" run "$W/typo.c:typo" --random x=4x4 --out "$W/t.npy"
    if [ "$rc" -eq 1 ] && grep -q "^$W/typo.c:9:[0-9]*: error: .*implicit.*nk_stor" "$W/err" &&
        ! grep -q "in definition of macro\|in expansion of macro" "$W/err" &&
        [ "$(tail -1 "$W/err")" = "nklab: compiling failed ($cc exited with status 1); the compiler's messages are above" ]; then ok; else
        bad "$cc: a misspelt call is an error at its line" "exit $rc" "$(cat "$W/err")"
    fi
done

# ---- bounded traces: a loop of 5e9 iterations stops at the bound, at its line, fast
cat >"$W/runaway.c" <<'EOF'
#include "nklab.h"

void runaway(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(4, 4), NK_F32, NK_SHARED_HBM);
    nk_tensor x = nk_load(nc, args[0]);
    NK_SEQUENTIAL_RANGE(nc, i, 5000000000ll) {
        x = nk_add(nc, x, x);
    }
    nk_store(nc, out, x);
    nk_return(nc, out);
}

void tiles(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs, (void)args;
    NK_SEQUENTIAL_RANGE(nc, i, 5000000000ll) {
        nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 4), NK_F32, NK_SBUF);
        (void)t;
    }
}

void huge(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(1 << 20, 1 << 19), NK_F32, NK_SHARED_HBM);
    nk_tensor x = nk_load(nc, args[0]);
    nk_store(nc, nk_ix(nc, out, nk_r(0, 4), nk_r(0, 4)), x);
    nk_return(nc, out);
}

void largest(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(1 << 20, 1 << 18), NK_F32, NK_SHARED_HBM);
    nk_tensor x = nk_load(nc, args[0]);
    nk_store(nc, nk_ix(nc, out, nk_r(0, 4), nk_r(0, 4)), x);
    nk_return(nc, out);
}
EOF
R=$W/runaway.c
s0=$(date +%s)
expect_fail "a runaway loop stops at --max-instructions" 1 \
    "$R:9: the kernel traced more than 10000 instructions (a loop of more iterations than meant?): raise nk_options.max_instructions, or --max-instructions on the command line" \
    run "$R:runaway" --random x=4x4 --out "$W/r.npy" --max-instructions 10000
expect_fail "tiles without instructions stop at --max-trace-bytes" 1 \
    "$R:19: the trace would take more than 1000000 bytes of memory (0 instructions and 8191 tensors and tiles so far): raise nk_options.max_trace_bytes, or --max-trace-bytes on the command line" \
    profile "$R:tiles" --random x=4x4 -o "$W/r.nkp" --max-trace-bytes 1000000
s1=$(date +%s)
if [ $((s1 - s0)) -le 10 ]; then ok; else bad "bounded traces fail within seconds" "$((s1 - s0)) s"; fi
expect_fail "--max-instructions 0 is refused" 2 \
    "nklab: --max-instructions '0': expected an integer from 1 to 4294967294" \
    run "$R:runaway" --random x=4x4 --out "$W/r.npy" --max-instructions 0
# an HBM tensor beyond what a profile can hold: refused when traced, no file
expect_fail "an HBM tensor over 1 TiB is refused at its line" 1 \
    "$R:27: nk_ndarray: an HBM tensor [1048576, 524288] float32 takes more than 1099511627776 bytes (1 TiB), the most a program or profile file holds" \
    profile "$R:huge" --random x=4x4 --no-exec -o "$W/h.nkp"
if [ ! -e "$W/h.nkp" ]; then ok; else bad "no profile of a refused kernel"; fi
run "$NK" profile "$R:largest" --random x=4x4 --no-exec -o "$W/l.nkp"
if [ "$rc" -eq 0 ] && "$NK" summary "$W/l.nkp" >/dev/null 2>"$W/err2"; then ok; else
    bad "a 1 TiB HBM tensor is profiled and its profile reads back" "exit $rc" "$(cat "$W/err" "$W/err2")"
fi

finish
