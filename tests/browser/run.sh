#!/usr/bin/env bash
# Browser tests of the profile viewer (headless Chromium + playwright-core).
# Installs what it needs (Debian chromium, nodejs, npm; `npm ci` here), builds
# the pages (mkprofile writes tensor_exp's profile, `nklab view` its page; the
# 1M-instruction synthetic page comes straight from mkprofile), runs
# viewer.test.js, then speedscope.test.js (layernorm's Perfetto export read by
# speedscope's npm build, offline). Prints "N passed, N failed" for both.
# BUILD selects the build directory (default build).
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/browser
fail() { echo "browser tests: $*"; echo "0 passed, 1 failed"; exit 1; }

scripts/install-deps.sh browser >/dev/null || fail "could not install chromium/nodejs/npm"
if [ ! -f tests/browser/node_modules/playwright-core/package.json ] ||
   [ ! -f tests/browser/node_modules/speedscope/dist/release/index.html ] ||
   [ tests/browser/package-lock.json -nt tests/browser/node_modules/.package-lock.json ]; then
    (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || fail "npm ci failed"
fi
make -s BUILD="$BUILD" "$BUILD/nklab" "$BUILD/libnklab.a" "$BUILD/libnklab_kernels.a" >/dev/null || fail "build failed"
mkdir -p "$OUT"
${CC:-cc} -std=c11 -D_DEFAULT_SOURCE -O2 -Iinclude -Isrc -Ikernels -Wall -Wextra -Wno-missing-field-initializers \
    -o "$OUT/mkprofile" tests/browser/mkprofile.c "$BUILD/libnklab_kernels.a" "$BUILD/libnklab.a" \
    -lm -lpthread -ldl || fail "mkprofile did not build"
"$OUT/mkprofile" kernel tensor_exp "$OUT/te.nkp" "$OUT/te.json" || fail "tensor_exp profile"
"$BUILD/nklab" view "$OUT/te.nkp" -o "$OUT/te.html" 2>/dev/null || fail "nklab view"
cp "$OUT/te.nkp" "$OUT/notes.nkp" # the notes test saves notes.nkp.notes.json beside it
rm -f "$OUT/notes.nkp.notes.json"
NK_TARGET=trn2 "$OUT/mkprofile" kernel spmd_tensor_add "$OUT/spmd.nkp" "$OUT/spmd.json" || fail "spmd profile"
"$BUILD/nklab" view "$OUT/spmd.nkp" -o "$OUT/spmd.html" 2>/dev/null || fail "nklab view (spmd)"
"$OUT/mkprofile" kernel seq_scale_matmul_onchip "$OUT/seq.nkp" "$OUT/seq.json" || fail "sequence profile"
"$BUILD/nklab" view "$OUT/seq.nkp" -o "$OUT/seq.html" 2>/dev/null || fail "nklab view (sequence)"
"$BUILD/nklab" profile kernels/variants/tensor_exp.c:nk_kernel_tensor_exp_pipelined --random in=250x512:float32 \
    --no-exec -o "$OUT/pipe.nkp" >/dev/null 2>&1 || fail "pipelined profile"
"$BUILD/nklab" view "$OUT/te.nkp" --compare "$OUT/pipe.nkp" -o "$OUT/cmp.html" 2>/dev/null || fail "nklab view --compare"
"$OUT/mkprofile" synthetic 1000000 "$OUT/big.html" || fail "synthetic page"
# speedscope reads the Perfetto export of a built-in kernel; nklab's own figures to compare
"$BUILD/nklab" profile layernorm --no-exec -o "$OUT/ln.nkp" >/dev/null 2>&1 || fail "layernorm profile"
"$BUILD/nklab" export "$OUT/ln.nkp" --format perfetto -o "$OUT/ln.trace.json" 2>/dev/null || fail "perfetto export"
"$BUILD/nklab" profile layernorm_bn --no-exec -o "$OUT/lnbn.nkp" >/dev/null 2>&1 || fail "layernorm_bn profile"
"$BUILD/nklab" view "$OUT/lnbn.nkp" -o "$OUT/lnbn.html" 2>/dev/null || fail "nklab view (layernorm_bn)"
"$BUILD/nklab" export "$OUT/ln.nkp" --format json -o "$OUT/ln.json" 2>/dev/null || fail "json export"
"$BUILD/nklab" summary "$OUT/ln.nkp" --json >"$OUT/ln.summary.json" 2>/dev/null || fail "summary --json"
v=$(NK="$BUILD/nklab" node tests/browser/viewer.test.js "$OUT" 2>&1); rv=$?
s=$(node tests/browser/speedscope.test.js "$OUT" 2>&1); rs=$?
printf '%s\n%s\n' "$v" "$s" | grep -v -E '^[0-9]+ passed, [0-9]+ failed$'
count() { printf '%s\n' "$1" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1; }
cv=$(count "$v"); cs=$(count "$s")
[ -n "$cv" ] || { echo "FAIL viewer.test.js printed no summary"; cv="0 passed, 1 failed"; }
[ -n "$cs" ] || { echo "FAIL speedscope.test.js printed no summary"; cs="0 passed, 1 failed"; }
p=$(( $(echo "$cv" | cut -d' ' -f1) + $(echo "$cs" | cut -d' ' -f1) ))
f=$(( $(echo "$cv" | cut -d' ' -f3) + $(echo "$cs" | cut -d' ' -f3) ))
echo "$p passed, $f failed"
[ "$rv" -eq 0 ] && [ "$rs" -eq 0 ] && [ "$f" -eq 0 ]
