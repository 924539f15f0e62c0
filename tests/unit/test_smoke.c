#include "test.h"
#include "kernels.h"
#include <stdlib.h>

TEST(tensor_exp_250x512_matches_exp)
{
    nk_kernel *k = nk_kernel_new("tensor_exp", nk_kernel_tensor_exp);
    nk_array in;
    int64_t shape[2] = {250, 512};
    CHECK_INT(nk_array_alloc(&in, NK_F32, 2, shape), 0);
    float *x = in.data;
    for (int i = 0; i < 250 * 512; i++)
        x[i] = (float)((i % 97) - 48) / 16.0f;
    nk_array out[1];
    int n = 0;
    int rc = nk_call(k, &in, 1, NULL, out, 1, &n);
    CHECK_INT(rc, 0);
    if (rc) { printf("%s\n", nk_kernel_error(k)); return; }
    const float *y = out[0].data;
    for (int i = 0; i < 250 * 512; i++)
        CHECK_NEAR(y[i], exp((double)x[i]), 2e-7, 0);
    nk_array_free(&out[0]);
    nk_array_free(&in);
    nk_kernel_free(k);
}
