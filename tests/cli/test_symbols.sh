#!/usr/bin/env bash
# Library hygiene at the symbol level: the API is what include/nklab.h (and,
# for the kernels library, kernels/kernels.h) declares, and nothing else is
# exported. Checks that every nk_ (single underscore) symbol libnklab.a
# defines is declared in nklab.h, that every other symbol of the archives is
# hidden, that the CLI exports (for the kernels it loads) the API only, that a
# shared object linked from the library's objects exports the API only, and
# that the Python extension exports its module init and nothing else.
# Uses the build in $NK_BUILD (default build). The last line is
# "N passed, N failed[, N skipped]".
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_nklab
make_workdir symbols
CC=${CC:-cc}

# The functions and extern variables a header declares, after preprocessing
# (macros are gone).
declared() {
    "$CC" -E -P -Iinclude -Ikernels "$1" | tr -s ' \t\n' ' ' | tr ';' '\n' >"$W/pp"
    {
        grep -oE '\bnk_[A-Za-z0-9_]+ ?\(' "$W/pp" | sed -E 's/ ?\($//'
        grep -E '^ ?extern ' "$W/pp" | grep -oE '\bnk_[A-Za-z0-9_]+ ?(\[\])? ?$' | grep -oE 'nk_[A-Za-z0-9_]+'
    } | sort -u
}
declared include/nklab.h >"$W/api"
declared kernels/kernels.h | sort -u - "$W/api" >"$W/api_all"
if [ "$(wc -l <"$W/api")" -gt 100 ] && grep -qx nk_kernel_new "$W/api" && grep -qx nk_load_at "$W/api"; then ok; else
    bad "the API list from nklab.h has the runtime and the kernel API" "$(wc -l <"$W/api") names"
fi

# ---- every public-looking name of libnklab.a is declared in nklab.h
nm -g --defined-only "$B/libnklab.a" | awk 'NF == 3 {print $3}' | grep -E '^nk_[^_]' | sort -u >"$W/lib_pub"
undeclared=$(comm -23 "$W/lib_pub" "$W/api")
if [ -s "$W/lib_pub" ] && [ -z "$undeclared" ]; then ok; else
    bad "every nk_ symbol of libnklab.a is declared in include/nklab.h (internal functions are nk__)" $undeclared
fi
nm -g --defined-only "$B/libnklab_kernels.a" | awk 'NF == 3 {print $3}' | grep -E '^nk_[^_]' | sort -u >"$W/kern_pub"
undeclared=$(comm -23 "$W/kern_pub" "$W/api_all")
if [ -z "$undeclared" ]; then ok; else
    bad "every nk_ symbol of libnklab_kernels.a is declared in kernels/kernels.h" $undeclared
fi
# no global name of the archives outside the nk_ prefix (a static link
# with a user's program must not clash)
other=$(nm -g --defined-only "$B/libnklab.a" "$B/libnklab_kernels.a" 2>/dev/null | awk 'NF == 3 {print $3}' | grep -v '^nk_' | sort -u)
if [ -z "$other" ]; then ok; else bad "every global symbol of the libraries starts with nk_" $other; fi

# ---- no process-wide side effects: the library reads no environment
# variable and sets no OpenBLAS thread count (the front-ends pass NK_THREADS
# and NK_PROFILE_FIXED_TIME in explicitly)
uses=$(nm -u "$B/libnklab.a" "$B/libnklab_kernels.a" 2>/dev/null | awk '{print $NF}' |
    grep -E '^(getenv|secure_getenv|setenv|unsetenv|putenv|clearenv|openblas_set_num_threads.*|goto_set_num_threads)$' | sort -u)
if [ -z "$uses" ]; then ok; else bad "the libraries call no environment or OpenBLAS-setting function" $uses; fi
# OpenBLAS is loaded with dlopen (src/exec/blas.c): a setting looked up
# with dlsym would be a string in the objects
named=$(strings -a "$B/libnklab.a" "$B/libnklab_kernels.a" 2>/dev/null |
    grep -oE '(openblas_set_num_threads[a-z_]*|goto_set_num_threads|openblas_set_[a-z_]*)' | sort -u)
looked=$(strings -a "$B/libnklab.a" 2>/dev/null | grep -cx 'cblas_sgemm')
if [ -z "$named" ] && [ "$looked" -ge 1 ]; then ok; else
    bad "the libraries look up cblas_sgemm and no OpenBLAS setting" "setters: $named" "cblas_sgemm strings: $looked"
fi

# ---- visibility in the objects: the API default, everything else hidden
readelf -sW "$B/libnklab.a" "$B/libnklab_kernels.a" 2>/dev/null |
    awk '$5 == "GLOBAL" && $7 != "UND" {print $6, $8}' | sort -u >"$W/vis"
bad_vis=$(awk 'NR == FNR {api[$1] = 1; next} ($2 in api) != ($1 == "DEFAULT") {print $1, $2}' "$W/api_all" "$W/vis" | head -n 20)
if [ -s "$W/vis" ] && [ -z "$bad_vis" ]; then ok; else
    bad "the API has default visibility and every other symbol is hidden (-fvisibility=hidden)" $bad_vis
fi

# ---- what the CLI exports to the kernels it loads (-rdynamic): the API
nm -D --defined-only "$NK" | awk 'NF == 3 {print $3}' | grep '^nk_' | sort -u >"$W/cli"
extra=$(comm -23 "$W/cli" "$W/api_all")
if [ -z "$extra" ] && grep -qx nk_load_at "$W/cli" && grep -qx nk_store_at "$W/cli"; then ok; else
    bad "the CLI's dynamic symbols are the API (nk_load_at and nk_store_at among them)" $extra
fi

# ---- a shared object linked from the library's own objects exports the API only
if [ -d "$B/pic/src" ]; then
    mapfile -t objs < <(find "$B/pic/src" -name '*.o' -not -path '*/cli/*' | sort)
    arch=$("$CC" -print-multiarch 2>/dev/null)
    if "$CC" -shared -o "$W/libnklab.so" "${objs[@]}" "$B/pic/gen/view_assets.o" \
        -lm -lpthread -ldl 2>"$W/ld"; then
        nm -D --defined-only "$W/libnklab.so" | awk 'NF == 3 {print $3}' | sort -u >"$W/so"
        extra=$(comm -23 "$W/so" "$W/api")
        if [ -z "$extra" ] && grep -qx nk_kernel_new "$W/so"; then ok; else
            bad "a shared libnklab exports nklab.h's functions only" $extra
        fi
    else
        bad "linking a shared object from $B/pic/src" "$(head -n 5 "$W/ld")"
    fi
else
    skip=$((skip + 1)) # the position-independent objects come with `make python`
fi

# ---- the Python extension: its module init, nothing of the library
so=$(ls "$B"/python/nklab/_nklab*.so 2>/dev/null | head -n 1)
if [ -n "$so" ]; then
    syms=$(nm -D --defined-only "$so" | awk 'NF == 3 {print $3}' | tr '\n' ' ')
    if [ "$syms" = "PyInit__nklab " ]; then ok; else
        bad "the extension's dynamic symbols are PyInit__nklab only" "$syms"
    fi
else
    skip=$((skip + 1))
fi
finish
