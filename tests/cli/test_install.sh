#!/usr/bin/env bash
# `make install PREFIX=...` into a temporary directory: the installed files,
# pkg-config's flags, an out-of-tree program (examples/exp_program.c) built
# against the installed copy and run, and a user kernel run by the installed
# nklab, which finds nklab.h in <bindir>/../include and nowhere else.
# Uses the build in $NK_BUILD (default build). The last line is
# "N passed, N failed".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
make_workdir install
P=$W/prefix
export NKLAB_CACHE_DIR=$W/cache

if make -s --no-print-directory BUILD="$B" PREFIX="$P" install >"$W/log" 2>&1; then ok; else
    bad "make install PREFIX=$P" "$(tail -n 20 "$W/log")"
    finish
    exit 1
fi
for f in bin/nklab lib/libnklab.a lib/libnklab_kernels.a include/nklab.h include/nklab_kernels.h lib/pkgconfig/nklab.pc; do
    if [ -f "$P/$f" ]; then ok; else bad "installed $f"; fi
done
if [ -x "$P/bin/nklab" ]; then ok; else bad "bin/nklab is executable"; fi
if cmp -s include/nklab.h "$P/include/nklab.h"; then ok; else bad "the installed header is include/nklab.h"; fi

# ---- pkg-config
if ! command -v pkg-config >/dev/null; then
    bad "pkg-config is not installed (apt-get install pkg-config)"
    finish
    exit 1
fi
export PKG_CONFIG_PATH=$P/lib/pkgconfig
version=$(sed -n 's/^#define NK_VERSION "\(.*\)"/\1/p' include/nklab.h)
if [ "$(pkg-config --modversion nklab)" = "$version" ]; then ok; else bad "pkg-config version $version" "$(pkg-config --modversion nklab)"; fi
cflags=$(pkg-config --cflags nklab | sed 's/ *$//')
libs=$(pkg-config --libs nklab | sed 's/ *$//')
if [ "$cflags" = "-I$P/include" ]; then ok; else bad "Cflags" "$cflags"; fi
if [ "$libs" = "-L$P/lib -lnklab -lm -lpthread -ldl" ]; then ok; else bad "Libs" "$libs"; fi

# ---- an out-of-tree program against the installed copy (not the source tree)
mkdir -p "$W/app"
cp examples/exp_program.c "$W/app/"
# shellcheck disable=SC2046
if (cd "$W/app" && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 exp_program.c $(pkg-config --cflags --libs nklab) \
    -o exp_program) >"$W/log" 2>&1; then ok; else
    bad "build examples/exp_program.c with pkg-config" "$(cat "$W/log")"
fi
if [ -x "$W/app/exp_program" ]; then
    "$W/app/exp_program" >"$W/out" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] && grep -Eq '^max relative error [0-9.e+-]+ \(bound 2\.38e-07\)$' "$W/out" &&
        grep -Eq '^device [0-9.]+ us, L\(50\) [0-9.]+ us, NCL\(50\) [0-9.]+ us over 100 iterations$' "$W/out"; then ok; else
        bad "the program runs, checks exp and benchmarks" "exit $rc" "$(cat "$W/out")"
    fi
fi

# ---- the installed nklab
if [ "$("$P/bin/nklab" --version)" = "nklab $version" ]; then ok; else bad "installed nklab --version"; fi
cp examples/tensor_exp.c "$W/app/k.c"
(cd "$W/app" && "$P/bin/nklab" run k.c:tensor_exp --random in=250x512 --out y.npy) >"$W/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && [ "$(cat "$W/out")" = "wrote y.npy [250, 512] float32" ]; then ok; else
    bad "the installed nklab runs a user kernel" "exit $rc" "$(cat "$W/out")"
fi
run_b=$("$B/nklab" run examples/tensor_exp.c:tensor_exp --random in=250x512 --out "$W/yb.npy" 2>&1)
if cmp -s "$W/app/y.npy" "$W/yb.npy"; then ok; else bad "installed and build-tree nklab agree" "$run_b"; fi
(cd "$W/app" && "$P/bin/nklab" bench tensor_exp --iters 3) >"$W/out" 2>&1
if [ $? -eq 0 ] && sed -n 1p "$W/out" | grep -q '^tensor_exp on trn1: 3 iterations'; then ok; else
    bad "the installed nklab benchmarks" "$(cat "$W/out")"
fi
# its profiles of built-in kernels carry their source (embedded at build time)
(cd "$W/app" && "$P/bin/nklab" profile tensor_exp --no-exec -o e.nkp && "$P/bin/nklab" insights e.nkp) >"$W/out" 2>&1
if [ $? -eq 0 ] && grep -q '^  tensor_exp\.c:16 .*nk_tensor e = nk_exp(nc, tile);$' "$W/out"; then ok; else
    bad "the installed nklab's profile holds the built-in kernel's source" "$(cat "$W/out")"
fi
# without the installed header the user kernel cannot compile: it was that one
mv "$P/include/nklab.h" "$W/nklab.h.away"
echo "/* another object */" >>"$W/app/k.c"
(cd "$W/app" && "$P/bin/nklab" run k.c:tensor_exp --random in=250x512 --out y2.npy) >"$W/out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] &&
    [ "$(cat "$W/out")" = "nklab: cannot find nklab.h next to this executable (expected <bindir>/../include)" ]; then ok; else
    bad "the installed nklab uses <bindir>/../include" "exit $rc" "$(cat "$W/out")"
fi
mv "$W/nklab.h.away" "$P/include/nklab.h"

# DESTDIR stages the same tree under another root
if make -s --no-print-directory BUILD="$B" PREFIX=/opt/nk DESTDIR="$W/stage" install >"$W/log" 2>&1 &&
    [ -x "$W/stage/opt/nk/bin/nklab" ] && grep -qx 'prefix=/opt/nk' "$W/stage/opt/nk/lib/pkgconfig/nklab.pc"; then ok; else
    bad "DESTDIR staging keeps PREFIX in nklab.pc" "$(cat "$W/log")"
fi

finish
