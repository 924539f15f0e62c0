/*
 * mkprofile.c - writes the viewer pages the browser tests open:
 *   mkprofile kernel NAME OUT.nkp FACTS.json    a built-in kernel at its example
 *       shapes, captured as a profile file (`nklab view` turns it into the page);
 *       FACTS.json holds what the test checks against, counted here from the
 *       program (instructions per source line, opcodes, instruction and event
 *       counts)
 *   mkprofile synthetic N OUT.html             N instructions on every engine
 *       and four DMA queues, to measure the viewer at scale
 */
#include "kernels.h"
#include "nkint.h"
#include "view/view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_html(const nk_profile *pr, const char *out)
{
    nk_text t = {0};
    int rc = nk__view_html(pr, NULL, &t);
    if (!rc)
        rc = nk__view_write_file(out, &t);
    nk__text_free(&t);
    if (rc)
        fprintf(stderr, "mkprofile: %s: %s\n", out, nk_strerror(rc));
    return rc;
}

static int facts(const nk_profile *pr, const char *path)
{
    const nk_program *p = pr->prog;
    FILE *f = fopen(path, "w");
    if (!f)
        return NK_EIO;
    fprintf(f, "{\"instructions\":%u,\"events\":%u,\"lines\":{", (unsigned)p->ninstr, (unsigned)pr->tl->nevents);
    int first = 1;
    for (uint32_t l = 0; l < p->nlocs; l++) {
        int n = 0, seen = 0;
        for (uint32_t k = 0; k < l; k++) /* one entry per distinct file:line */
            seen |= p->locs[k].file == p->locs[l].file && p->locs[k].line == p->locs[l].line;
        if (seen)
            continue;
        for (uint32_t i = 0; i < p->ninstr; i++) {
            const nk_locinfo *li = &p->locs[p->instrs[i].loc];
            n += li->file == p->locs[l].file && li->line == p->locs[l].line;
        }
        if (!n)
            continue;
        const char *file = p->files[p->locs[l].file], *base = strrchr(file, '/');
        fprintf(f, "%s\"%s:%d\":%d", first ? "" : ",", base ? base + 1 : file, p->locs[l].line, n);
        first = 0;
    }
    fprintf(f, "},\"instrs\":[");
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_locinfo *li = &p->locs[p->instrs[i].loc];
        const char *file = p->files[li->file], *base = strrchr(file, '/');
        fprintf(f, "%s{\"op\":\"%s\",\"loc\":\"%s:%d\",\"ndep\":%u}", i ? "," : "", nk__op_name(p->instrs[i].op),
                base ? base + 1 : file, li->line, (unsigned)p->instrs[i].ndep);
    }
    fprintf(f, "]}\n");
    return fclose(f) ? NK_EIO : NK_OK;
}

static int kernel_page(const char *name, const char *out, const char *facts_path)
{
    const nk_kernel_info *ki = nk_builtin_kernel(name);
    if (!ki) {
        fprintf(stderr, "mkprofile: no kernel %s\n", name);
        return 1;
    }
    nk_array args[NK_KERNEL_MAX_ARGS];
    for (int a = 0; a < ki->nargs; a++)
        if (nk_array_alloc(&args[a], ki->args[a].dtype, ki->args[a].ndim, ki->args[a].shape))
            return 1;
    nk_kernel *k = nk_builtin_kernel_new(ki);
    const nk_program *prog;
    nk_options o = {getenv("NK_TARGET") ? getenv("NK_TARGET") : "trn1", 0};
    memcpy(o.grid, ki->grid, sizeof o.grid); /* SPMD kernels on their example grid */
    int rc = nk_kernel_compile(k, args, ki->nargs, &o, &prog);
    if (rc) {
        fprintf(stderr, "mkprofile: %s\n", nk_kernel_error(k));
        return 1;
    }
    nk_profile *pr;
    rc = nk_profile_capture(prog, NULL, &pr);
    if (rc) {
        fprintf(stderr, "mkprofile: capture: %s\n", nk_strerror(rc));
        return 1;
    }
    rc = nk_profile_write(pr, out);
    if (rc)
        fprintf(stderr, "mkprofile: %s: %s\n", out, nk_strerror(rc));
    rc = rc || facts(pr, facts_path);
    nk_profile_free(pr);
    nk_kernel_free(k);
    for (int a = 0; a < ki->nargs; a++)
        nk_array_free(&args[a]);
    return rc ? 1 : 0;
}

/* ---- synthetic: blocks of load, matmul, activation, tensor_tensor, memset, store */

static const char synth_src[] =
    "void synthetic(nk_ctx *nc, const nk_tensor *args, int nargs)\n"
    "{\n"
    "    NK_AFFINE_RANGE(nc, i, n) {\n"
    "        nk_tensor x = nk_load(nc, args[0][i]);\n"
    "        nk_tensor y = nk_matmul(nc, w, x, 1);\n"
    "        nk_tensor z = nk_exp(nc, y);\n"
    "        nk_tensor s = nk_add(nc, z, x);\n"
    "        nk_isa_memset(nc, acc, 0);\n"
    "        nk_store(nc, out[i], s);\n"
    "    }\n"
    "}\n";

static nk_tensor tile(uint32_t buf, uint8_t mem, int p, int f, int64_t off)
{
    nk_tensor t = {0};
    t.buf = buf;
    t.dtype = NK_BF16;
    t.ndim = 2;
    t.mem = mem;
    t.shape[0] = p;
    t.shape[1] = f;
    t.stride[0] = mem == NK_SHARED_HBM ? f : 1;
    t.stride[1] = 1;
    t.off = off;
    return t;
}

static int synthetic_page(uint32_t n, const char *out)
{
    enum { BLOCK = 6 };
    static const uint8_t op[BLOCK] = {NK_OP_LOAD, NK_OP_MATMUL, NK_OP_ACTIVATION, NK_OP_TENSOR_TENSOR, NK_OP_MEMSET, NK_OP_STORE};
    static const uint8_t eng[BLOCK] = {NK_ENGINE_DMA, NK_ENGINE_TENSOR, NK_ENGINE_SCALAR, NK_ENGINE_VECTOR, NK_ENGINE_GPSIMD, NK_ENGINE_DMA};
    static const double dur[BLOCK] = {900, 210, 180, 160, 60, 850};
    nk_program p = {0};
    snprintf(p.kernel, sizeof p.kernel, "synthetic");
    snprintf(p.target, sizeof p.target, "trn1");
    p.arch = nk__arch_get("trn1");
    p.ninstr = n;
    p.instrs = calloc(n, sizeof *p.instrs);
    p.deps = calloc(n, sizeof *p.deps);
    p.nbufs = 5;
    p.bufs = calloc(p.nbufs, sizeof *p.bufs);
    p.nfiles = 1;
    char *file = "synthetic.c";
    p.files = &file;
    p.nlocs = BLOCK;
    p.locs = calloc(BLOCK, sizeof *p.locs);
    nk_timeline tl = {0};
    tl.events = calloc((size_t)n * 2, sizeof *tl.events);
    tl.instr_start = calloc(n, sizeof(double));
    tl.instr_end = calloc(n, sizeof(double));
    if (!p.instrs || !p.deps || !p.bufs || !p.locs || !tl.events || !tl.instr_start || !tl.instr_end)
        return 1;
    p.bufs[1] = (nk_bufinfo){.mem = NK_SHARED_HBM, .role = NK_ROLE_INPUT, .index = 0};
    p.bufs[2] = (nk_bufinfo){.mem = NK_SHARED_HBM, .role = NK_ROLE_OUTPUT, .index = 0};
    p.bufs[3] = (nk_bufinfo){.mem = NK_SBUF, .role = NK_ROLE_TILE};
    p.bufs[4] = (nk_bufinfo){.mem = NK_PSUM, .role = NK_ROLE_TILE};
    for (int k = 0; k < BLOCK; k++)
        p.locs[k] = (nk_locinfo){0, 4 + k};
    double free_at[NK_ENGINE_COUNT + 8] = {0};
    for (uint32_t i = 0; i < n; i++) {
        int k = (int)(i % BLOCK);
        uint32_t blk = i / BLOCK;
        nk_instr *in = &p.instrs[i];
        in->op = op[k];
        in->engine = eng[k];
        in->func = NK_ACT_EXP;
        in->loc = (uint32_t)k;
        in->queue = (uint16_t)(k == 0 ? blk % 4 : 4 + blk % 2);
        nk_tensor dt = k == 5 ? tile(2, NK_SHARED_HBM, 128, 512, (int64_t)blk * 65536) : tile(k == 1 ? 4 : 3, k == 1 ? NK_PSUM : NK_SBUF, 128, 512, (blk % 8) * 512);
        nk_tensor s0 = k == 0 ? tile(1, NK_SHARED_HBM, 128, 512, (int64_t)blk * 65536) : tile(3, NK_SBUF, 128, 512, (blk % 8) * 512);
        if (nk__opnd_set(&p, &in->dst, &dt) || nk__opnd_set(&p, &in->src[0], &s0))
            return 1;
        in->nsrc = k == 4 ? 0 : 1;
        in->dep_off = i;
        in->ndep = k ? 1 : 0;
        p.deps[i] = i - 1;
        int unit = eng[k] == NK_ENGINE_DMA ? NK_ENGINE_COUNT + (int)in->queue : eng[k];
        double ready = k ? tl.instr_end[i - 1] : 0;
        double s = ready > free_at[unit] ? ready : free_at[unit];
        double d = dur[k] * (1.0 + 0.25 * (double)((i * 2654435761u) % 7) / 7.0);
        tl.instr_start[i] = s;
        tl.instr_end[i] = s + d;
        free_at[unit] = s + d;
        if (k == 1) {
            tl.events[tl.nevents++] = (nk_event){i, NK_ENGINE_TENSOR, NK_EV_LOAD_STATIONARY, 0, s, s + 0.3 * d};
            tl.events[tl.nevents++] = (nk_event){i, NK_ENGINE_TENSOR, NK_EV_MULTIPLY_MOVING, 0, s + 0.3 * d, s + d};
        } else {
            tl.events[tl.nevents++] = (nk_event){i, eng[k], eng[k] == NK_ENGINE_DMA ? NK_EV_DMA_ISSUE : NK_EV_INSTR,
                                                 in->queue, s, s + d};
        }
        if (s + d > tl.total_ns)
            tl.total_ns = s + d;
    }
    /* events sorted by start, as the timing model gives them */
    int cmp(const void *a, const void *b);
    qsort(tl.events, tl.nevents, sizeof *tl.events, cmp);
    nk_source src = {file, (char *)synth_src};
    nk_profile pr = {.prog = &p, .tl = &tl, .sources = &src, .arch = *nk__arch_get("trn1")};
    snprintf(pr.nklab_version, sizeof pr.nklab_version, "%s", NK_VERSION);
    int rc = write_html(&pr, out);
    free(p.instrs);
    free(p.deps);
    free(p.bufs);
    free(p.locs);
    free(p.lays);
    free(p.lay_hash);
    free(tl.events);
    free(tl.instr_start);
    free(tl.instr_end);
    return rc ? 1 : 0;
}

int cmp(const void *a, const void *b)
{
    const nk_event *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->instr < y->instr ? -1 : x->instr > y->instr;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "kernel"))
        return kernel_page(argv[2], argv[3], argv[4]);
    if (argc == 4 && !strcmp(argv[1], "synthetic"))
        return synthetic_page((uint32_t)strtoul(argv[2], NULL, 10), argv[3]);
    fprintf(stderr, "usage: mkprofile kernel NAME OUT.nkp FACTS.json | mkprofile synthetic N OUT.html\n");
    return 2;
}
