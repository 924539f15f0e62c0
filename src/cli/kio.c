/*
 * kio.c - loading a kernel's inputs from .npy files and writing its outputs.
 */
#include "kio.h"
#include "npy.h"

#include <stdio.h>
#include <string.h>

void nk_cli_free_arrays(nk_array *a, int n)
{
    for (int i = 0; i < n; i++)
        nk_array_free(&a[i]);
}

static void shape_text(char *buf, size_t n, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

int nk_cli_load_inputs(const nk_kernel_info *k, const nk_kernel_cmd *c, nk_array *args)
{
    char err[512];
    for (int i = 0; i < k->nargs; i++) {
        const nk_argspec *s = &k->args[i];
        if (nk_npy_read(c->in[i], s->dtype, &args[i], NULL, err, sizeof err)) {
            nk_cli_free_arrays(args, i);
            return nk_cli_error(NK_EXIT_FAIL, "%s", err);
        }
        if (args[i].ndim != s->ndim) {
            char sh[96];
            shape_text(sh, sizeof sh, args[i].shape, args[i].ndim);
            nk_cli_free_arrays(args, i + 1);
            return nk_cli_error(NK_EXIT_FAIL, "%s: %s's argument '%s' has %d dim%s, the file has %d (%s)",
                                c->in[i], k->name, s->name, s->ndim, s->ndim == 1 ? "" : "s",
                                args[i].ndim, sh);
        }
    }
    return NK_EXIT_OK;
}

int nk_cli_alloc_outputs(const nk_program *p, nk_array *outs)
{
    int n = nk_program_num_outputs(p);
    for (int i = 0; i < n; i++) {
        nk_array d;
        nk_program_output(p, i, &d);
        if (nk_array_alloc(&outs[i], d.dtype, d.ndim, d.shape)) {
            nk_cli_free_arrays(outs, i);
            return nk_cli_error(NK_EXIT_FAIL, "out of memory for output %d", i);
        }
    }
    return NK_EXIT_OK;
}

int nk_cli_write_outputs(const nk_kernel_cmd *c, const nk_array *outs, int n, int quiet)
{
    char err[512];
    for (int i = 0; i < n && i < c->nout; i++) {
        if (nk_npy_write(c->out[i], &outs[i], err, sizeof err))
            return nk_cli_error(NK_EXIT_FAIL, "%s", err);
        if (!quiet) {
            char sh[96];
            shape_text(sh, sizeof sh, outs[i].shape, outs[i].ndim);
            printf("wrote %s %s float32", c->out[i], sh);
            if (outs[i].dtype != NK_F32)
                printf(" (from %s)", nk_dtype_name(outs[i].dtype));
            printf("\n");
        }
    }
    return NK_EXIT_OK;
}
