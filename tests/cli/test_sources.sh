#!/usr/bin/env bash
# Profiles of built-in kernels hold their source text wherever they are
# captured: nklab runs in an empty temporary directory (where the recorded
# path kernels/tensor_exp.c names nothing), and the source must reach the
# viewer page (byte for byte, the repository's file), the insights' line
# texts and diff's line matching. A decoy kernels/tensor_exp.c in the
# working directory must not replace the compiled source.
# Uses $NK_BUILD/nklab (default build/nklab). The last line is "N passed, N failed".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
ROOT=$(pwd)
NK=$ROOT/$B/nklab
need_nklab
make_workdir src

# in DIR, run nklab ARGS: output in $W/out, $W/err, exit code in rc
run_in() {
    local dir=$1
    shift
    (cd "$dir" && "$NK" "$@") >"$W/out" 2>"$W/err"
    rc=$?
}

# the text the page holds for FILE equals the repository's FILE (without
# python3: the page holds FILE's kernel function line, as JSON text)
page_has_source() {
    if ! command -v python3 >/dev/null; then
        local fn
        fn=$(grep -m 1 '^void nk_kernel_' "$ROOT/$2")
        grep -qF -- "$fn" "$1" || { echo "no '$fn' in $1"; return 1; }
        return 0
    fi
    python3 - "$1" "$2" "$ROOT/$2" <<'EOF'
import json, sys
page, path, ref = sys.argv[1], sys.argv[2], sys.argv[3]
html = open(page, encoding="utf-8").read()
key = '{"path":' + json.dumps(path) + ',"text":'
at = html.find(key)
assert at >= 0, "no file entry for " + path
text, _ = json.JSONDecoder().raw_decode(html, at + len(key))
assert text == open(ref, encoding="utf-8").read(), "text of %s differs (%r...)" % (path, str(text)[:80])
EOF
}

E=$W/empty
mkdir -p "$E"

# ---- every built-in kernel, profiled in an empty directory
for k in $("$NK" kernels | grep -E '^[a-z_]+ ' | awk '{ print $1 }'); do
    run_in "$E" profile "$k" --no-exec -o "$k.nkp"
    if [ "$rc" -eq 0 ] && [ -s "$E/$k.nkp" ]; then ok; else bad "profile $k in $E" "exit $rc" "$(cat "$W/err")"; fi
    run_in "$E" view "$k.nkp" -o "$k.html"
    if [ "$rc" -eq 0 ]; then ok; else bad "view $k.nkp" "exit $rc" "$(cat "$W/err")"; fi
    file=kernels/$k.c
    case $k in spmd_*) file=kernels/spmd.c ;; seq_*) file=kernels/sequence.c ;; esac # files shared by several kernels
    if msg=$(page_has_source "$E/$k.html" "$file" 2>&1); then ok; else bad "$k's page holds $file" "$msg"; fi
done
if [ "$(ls "$E" | grep -c '\.nkp$')" -ge 6 ]; then ok; else bad "six built-in kernels profiled" "$(ls "$E")"; fi

# ---- the insights quote the kernel's lines (kernels/tensor_exp.c:15-17)
run_in "$E" insights tensor_exp.nkp
for n in 15 16 17; do
    line=$(sed -n "${n}p" kernels/tensor_exp.c | sed 's/^ *//')
    if [ "$rc" -eq 0 ] && grep -Fq -- "tensor_exp.c:$n " "$W/out" &&
        grep -E "^  tensor_exp\.c:$n " "$W/out" | grep -Fq -- "$line"; then ok; else
        bad "insights quotes tensor_exp.c:$n ($line)" "exit $rc" "$(grep "tensor_exp.c:$n" "$W/out")"
    fi
done

# ---- a decoy file at the recorded path does not replace the compiled source
D=$W/decoy
mkdir -p "$D/kernels"
printf 'int decoy;\n' >"$D/kernels/tensor_exp.c"
run_in "$D" profile tensor_exp --no-exec -o t.nkp
if [ "$rc" -eq 0 ]; then ok; else bad "profile in $D" "exit $rc" "$(cat "$W/err")"; fi
run_in "$D" view t.nkp -o t.html
if msg=$(page_has_source "$D/t.html" kernels/tensor_exp.c 2>&1); then ok; else bad "the decoy is ignored" "$msg"; fi
if grep -q 'int decoy' "$D/t.html"; then bad "the decoy's text is in the page"; else ok; fi

# ---- diff pairs lines by file name and text: the built-in kernel, profiled
# here, against its pipelined variant (kernels/variants/tensor_exp.c, the
# same lines moved down), profiled as a user kernel from a copy
mkdir -p "$E/v"
cp kernels/variants/tensor_exp.c "$E/v/tensor_exp.c"
NKLAB_CACHE_DIR=$W/cache run_in "$E" profile v/tensor_exp.c:nk_kernel_tensor_exp_pipelined --random in=250x512 \
    --no-exec -o v.nkp
if [ "$rc" -eq 0 ]; then ok; else bad "profile the variant" "exit $rc" "$(cat "$W/err")"; fi
run_in "$E" diff tensor_exp.nkp v.nkp
if [ "$rc" -eq 0 ]; then ok; else bad "diff" "exit $rc" "$(cat "$W/err")"; fi
for n in 15 16 17; do
    line=$(sed -n "${n}p" kernels/tensor_exp.c | sed 's/^ *//')
    m=$(grep -nF -- "$line" kernels/variants/tensor_exp.c | head -n 1 | cut -d: -f1)
    if [ -n "$m" ] && [ "$m" -ne "$n" ] && grep -E "^  tensor_exp\.c:$n +tensor_exp\.c:$m " "$W/out" | grep -Fq -- "$line"
    then ok; else
        bad "diff pairs tensor_exp.c:$n with the variant's line ${m:-?}" "$(sed -n '/By source/,/^$/p' "$W/out")"
    fi
done

finish
