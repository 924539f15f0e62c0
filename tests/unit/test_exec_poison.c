/*
 * test_exec_poison.c - on-chip bytes a run never wrote read as the poison
 * (all bits set) however the run's writes cut them up: strided writes,
 * single elements, partitions, PSUM, whatever an earlier run left there.
 */
#include "test.h"

#include "nklab.h"

#include <stdint.h>
#include <stdlib.h>

/* Fills [128, 4096] fp32 of SBUF and [128, 512] of PSUM with 7.0: a run that
 * leaves values wherever the next kernel's tiles will be. */
static void fill_all(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)args;
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 4096), NK_F32, NK_SHARED_HBM);
    nk_tensor t = nk_full(nc, NK_SHAPE(128, 4096), 7.0, NK_F32, NK_SBUF);
    nk_tensor ps = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_PSUM);
    nk_isa_memset_at(nc, NK_HERE, ps, 7.0, NK_ENGINE_VECTOR);
    nk_tensor back = nk_copy(nc, ps, NK_F32);
    nk_store(nc, nk_ix(nc, out, NK_ALL, nk_r(0, 512)), back);
    nk_store(nc, nk_ix(nc, out, NK_ALL, nk_r(512, 4096)), nk_ix(nc, t, NK_ALL, nk_r(512, 4096)));
    nk_return(nc, out);
}

/* Three tiles, each partly written: every other column of partitions 0..99
 * (strided), one element (column 70 of partition 32), and a PSUM tile's
 * columns 100..163 of partitions 64..70; each stored whole. */
static void partial_writes(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)args;
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(3, 128, 200), NK_F32, NK_SHARED_HBM);
    nk_tensor a = nk_ndarray(nc, NK_SHAPE(128, 200), NK_F32, NK_SBUF);
    nk_tensor b = nk_ndarray(nc, NK_SHAPE(128, 200), NK_F32, NK_SBUF);
    nk_tensor c = nk_ndarray(nc, NK_SHAPE(128, 200), NK_F32, NK_PSUM);
    nk_isa_memset_at(nc, NK_HERE, nk_ix(nc, a, nk_r(0, 100), nk_rs(0, 200, 2)), 1.0, NK_ENGINE_VECTOR);
    nk_isa_memset_at(nc, NK_HERE, nk_ix(nc, b, nk_r(32, 33), nk_r(70, 71)), 2.0, NK_ENGINE_VECTOR);
    nk_isa_memset_at(nc, NK_HERE, nk_ix(nc, c, nk_r(64, 71), nk_r(100, 164)), 3.0, NK_ENGINE_VECTOR);
    nk_tensor cs = nk_copy(nc, c, NK_F32);
    nk_store(nc, nk_ix(nc, out, nk_i(0), NK_ALL, NK_ALL), a);
    nk_store(nc, nk_ix(nc, out, nk_i(1), NK_ALL, NK_ALL), b);
    nk_store(nc, nk_ix(nc, out, nk_i(2), NK_ALL, NK_ALL), cs);
    nk_return(nc, out);
}

/* What partial_writes must produce at tile t, partition p, column f: the
 * value written, or 0 for the poison. */
static float expected(int t, int p, int f)
{
    if (t == 0)
        return p < 100 && f % 2 == 0 ? 1.0f : 0.0f;
    if (t == 1)
        return p == 32 && f == 70 ? 2.0f : 0.0f;
    return p >= 64 && p < 71 && f >= 100 && f < 164 ? 3.0f : 0.0f;
}

TEST(exec_unwritten_bytes_are_poisoned_between_partial_writes)
{
    nk_kernel *fill = nk_kernel_new("fill_all", fill_all);
    nk_kernel *part = nk_kernel_new("partial_writes", partial_writes);
    nk_array dummy, f[1], r[2][1];
    int n;
    CHECK_INT(nk_array_alloc(&dummy, NK_F32, 1, (int64_t[]){1}), 0);
    for (int run = 0; run < 2; run++) {
        int rc = nk_call(fill, &dummy, 1, NULL, f, 1, &n);
        CHECK_INT(rc, 0);
        if (rc) {
            printf("  %s\n", nk_kernel_error(fill));
            return;
        }
        CHECK_NEAR(((float *)f[0].data)[4095], 7.0, 0, 0);
        CHECK_NEAR(((float *)f[0].data)[0], 7.0, 0, 0);
        nk_array_free(&f[0]);
        rc = nk_call(part, &dummy, 1, NULL, r[run], 1, &n);
        CHECK_INT(rc, 0);
        if (rc) {
            printf("  %s\n", nk_kernel_error(part));
            return;
        }
    }
    const uint32_t *u0 = r[0][0].data, *u1 = r[1][0].data;
    const float *v = r[0][0].data;
    int bad = 0;
    for (int t = 0; t < 3; t++)
        for (int p = 0; p < 128; p++)
            for (int c = 0; c < 200; c++) {
                size_t i = ((size_t)t * 128 + (size_t)p) * 200 + (size_t)c;
                float want = expected(t, p, c);
                int ok = want != 0.0f ? v[i] == want : u0[i] == 0xffffffffu;
                ok &= u0[i] == u1[i];
                if (!ok && bad++ < 5)
                    CHECK_INT(u0[i], want != 0.0f ? 0 : 0xffffffffu); /* prints the first few */
            }
    CHECK_INT(bad, 0);
    nk_array_free(&r[0][0]);
    nk_array_free(&r[1][0]);
    nk_array_free(&dummy);
    nk_kernel_free(fill);
    nk_kernel_free(part);
}
