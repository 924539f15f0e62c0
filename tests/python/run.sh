#!/usr/bin/env bash
# The Python front-end's tests (scripts/run-tests.sh runs every tests/*/run.sh):
# the front-end suite (test_frontend.py), both NKI namespaces, the examples,
# `nklab run|bench|profile FILE.py:FUNCTION`, and the suite again against an
# ASan/UBSan build of the extension. Prints "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/../.."
B=${NK_BUILD:-build}
NK=$B/nklab
PY=/usr/bin/python3
pass=0; fail=0; skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | tail -n 30; }
sum_suite() { # adds a suite's "N passed, N failed, N skipped" line
    local line; line=$(printf '%s\n' "$1" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    if [ -z "$line" ]; then bad "$2 (no summary)" "$1"; return; fi
    printf '%s\n' "$1" | grep -E '^(FAIL|skip) ' -A12 | head -n 60
    pass=$((pass + $(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')))
    fail=$((fail + $(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')))
    skip=$((skip + $(echo "$line" | grep -oE '[0-9]+ skipped' | grep -oE '[0-9]+' || echo 0)))
}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# the suite, through `nklab python`
out=$("$NK" python tests/python/test_frontend.py 2>&1)
sum_suite "$out" "test_frontend.py"

# both namespaces; nothing named neuronxcc or nki outside `nklab python`
cat >"$T/ns.py" <<'EOF'
import numpy as np
import nki
import nki.language as nl
import nki.isa as nisa
from neuronxcc import nki as nki2
import neuronxcc.nki.language as nl2
import neuronxcc.nki.isa as nisa2
import neuronxcc.nki.typing as nt
assert nl is nl2 and nisa is nisa2 and nki.jit is nki2.jit

@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.tensor_tensor(nl.load(a), nl2.load(b), op=nl.add))
    return out

a = np.ones((128, 8), np.float32); b = np.full((128, 8), 2, np.float32)
assert (add(a, b) == 3).all()
print("namespaces ok")
EOF
r=$("$NK" python "$T/ns.py" 2>&1)
[ "$r" = "namespaces ok" ] && ok || bad "nki and neuronxcc.nki namespaces" "$r"
if $PY -c "import neuronxcc" 2>/dev/null || $PY -c "import nki" 2>/dev/null; then
    bad "neuronxcc or nki importable outside nklab python"
else ok; fi

# the profiling example: table, files, viewer
r=$(cd "$T" && "$OLDPWD/$NK" python "$OLDPWD/examples/exp.py" 2>&1)
if printf '%s\n' "$r" | grep -q '^B  NC  NC-USED  WEIGHTS  MODE' && [ -s "$T/file.neff" ] && [ -s "$T/profile.ntff" ]; then
    ok
else bad "examples/exp.py: table and files" "$r"; fi
if "$NK" view "$T/profile.ntff" -o "$T/v.html" >/dev/null 2>&1 && grep -q 'def tensor_exp_kernel(in_tensor):' "$T/v.html"; then
    ok
else bad "nklab view profile.ntff shows the .py source"; fi
"$NK" summary "$T/file.neff" >/dev/null 2>&1; "$NK" summary "$T/profile.ntff" >/dev/null 2>&1 && ok || bad "nklab summary profile.ntff"

# the matmul example: numpy and torch, per-call times
r=$("$NK" python examples/matmul.py 2>&1)
if printf '%s\n' "$r" | grep -q '^numpy: call 1' && printf '%s\n' "$r" | grep -q 'max |error| against lhsT.T @ rhs: 0.00e+00'; then
    ok
else bad "examples/matmul.py (numpy)" "$r"; fi
if $PY -c "import torch" 2>/dev/null; then
    printf '%s\n' "$r" | grep -q '^torch: returns torch.Tensor' && ok || bad "examples/matmul.py (torch)" "$r"
else skip=$((skip + 1)); echo "skip examples/matmul.py with torch: python3-torch is not installed"; fi

# make install puts the package beside the installed nklab, not in site-packages
if make --no-print-directory -s BUILD="$B" install PREFIX="$T/inst" >"$T/inst.log" 2>&1 &&
   r=$(cd "$T" && "$T/inst/bin/nklab" python "$OLDPWD/examples/exp.py" 2>&1) &&
   printf '%s\n' "$r" | grep -q '^B  NC  NC-USED' && [ -d "$T/inst/lib/nklab/python/shim/neuronxcc" ]; then
    ok
else bad "the installed nklab python runs examples/exp.py" "$(cat "$T/inst.log"; printf '%s\n' "${r:-}")"; fi

# nklab run|bench|profile FILE.py:FUNCTION, values equal to the C kernel's
"$NK" run examples/exp.py:tensor_exp_kernel --random in=250x512:float32 --seed 3 --out "$T/py.npy" >/dev/null 2>&1 &&
"$NK" run examples/tensor_exp.c:tensor_exp --random in=250x512:float32 --seed 3 --out "$T/c.npy" >/dev/null 2>&1 &&
cmp -s "$T/py.npy" "$T/c.npy" && ok || bad "nklab run FILE.py:FUNCTION equals the C kernel"
r=$("$NK" bench examples/exp.py:tensor_exp_kernel --random in=250x512:float32 --iters 5 --warmup 1 2>&1)
printf '%s\n' "$r" | grep -q '^tensor_exp_kernel on trn1: 5 iterations' && ok || bad "nklab bench FILE.py:FUNCTION" "$r"
r=$("$NK" profile examples/exp.py:tensor_exp_kernel --random in=250x512:float32 -o "$T/p.nkp" 2>&1)
[ -s "$T/p.nkp" ] && "$NK" insights "$T/p.nkp" | grep -q 'exp.py:23' && ok || bad "nklab profile FILE.py:FUNCTION lines" "$r"
cat >"$T/err.py" <<'EOF'
import neuronxcc.nki.language as nl

def too_big(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out
EOF
r=$("$NK" run "$T/err.py:too_big" --random x=256x8:float32 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s\n' "$r" | grep -q "err.py:5: nl.load: the source \[256, 8\] has partition dimension 256, which exceeds 128" && ok ||
    bad "a Python kernel's error from nklab run names FILE.py:LINE (exit $rc)" "$r"

# the suite against an ASan/UBSan build of the extension (python itself is
# not instrumented: the sanitizer runtime is preloaded)
ASAN_RT=$(clang -print-file-name=libclang_rt.asan-x86_64.so 2>/dev/null)
if [ -n "${NK_SKIP_ASAN:-}" ]; then
    skip=$((skip + 1)); echo "skip the ASan run: NK_SKIP_ASAN is set"
elif ! command -v clang >/dev/null || [ ! -f "$ASAN_RT" ]; then
    skip=$((skip + 1)); echo "skip the ASan run: clang's ASan runtime is not installed (libclang-rt-14-dev)"
else
    AB=$B/asan-py
    if ! make --no-print-directory -j"$(nproc)" BUILD=$AB CC=clang \
        CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -DNK_DEBUG" \
        python >"$T/asan-build.log" 2>&1; then
        bad "building the extension with ASan" "$(tail -n 20 "$T/asan-build.log")"
    else
        out=$(cd "$T" && PYTHONPATH="$OLDPWD/$AB/python/shim:$OLDPWD/$AB/python" NK_BUILD="$OLDPWD/$B" \
              LD_PRELOAD="$ASAN_RT" ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
              $PY "$OLDPWD/tests/python/test_frontend.py" 2>&1)
        if printf '%s\n' "$out" | grep -q 'ERROR: AddressSanitizer\|runtime error:'; then
            bad "ASan/UBSan report in the Python suite" "$(printf '%s\n' "$out" | grep -A20 'ERROR: AddressSanitizer\|runtime error:' | head -40)"
        fi
        sum_suite "$out" "test_frontend.py under ASan"
    fi
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
