/*
 * check.c - the invariants of a compiled program, asserted (NK_ASSERT) where
 * programs are made: after the compile step and after a program file is
 * read (the reader must have refused anything that breaks one).
 */
#include "nkint.h"

#ifdef NK_DEBUG
static void check_operand(const nk_program *p, const nk_opnd *t)
{
    NK_ASSERT(t->buf < p->nbufs);
    NK_ASSERT(t->lay <= p->nlays);
    if (t->buf && nk__opnd_mem(p, t) != NK_SHARED_HBM)
        NK_ASSERT(p->bufs[t->buf].mem == nk__opnd_mem(p, t));
}
#endif

void nk__program_assert(const nk_program *p)
{
#ifdef NK_DEBUG
    NK_ASSERT(p->nbufs >= 1); /* buffer ids start at 1 */
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        NK_ASSERT(in->loc < p->nlocs || p->nlocs == 0);
        NK_ASSERT(in->loop <= p->nloops);
        NK_ASSERT((uint64_t)in->dep_off + in->ndep <= p->ndeps);
        for (uint32_t d = in->dep_off; d < in->dep_off + in->ndep && d < p->ndeps; d++)
            NK_ASSERT(p->deps[d] < i); /* an instruction waits for earlier ones only */
        check_operand(p, &in->dst);
        NK_ASSERT(in->xsrc2 <= p->nxop && in->xdst2 <= p->nxop && in->xarg <= p->nxarg);
        check_operand(p, nk__dst2(p, in));
        for (int k = 0; k < 3; k++)
            check_operand(p, nk__src(p, in, k));
    }
    for (uint32_t b = 1; b < p->nbufs; b++) {
        const nk_bufinfo *bi = &p->bufs[b];
        if (bi->mem == NK_SBUF)
            NK_ASSERT(bi->addr >= 0 && bi->addr + bi->bytes <= p->sbuf_peak);
        else if (bi->mem == NK_PSUM)
            NK_ASSERT(bi->addr >= 0 && bi->addr + bi->bytes <= p->psum_peak);
        NK_ASSERT(bi->loop <= p->nloops);
    }
    for (int k = 0; k < p->ninputs; k++)
        NK_ASSERT(p->input_buf[k] > 0 && p->input_buf[k] < p->nbufs);
    for (int k = 0; k < p->noutputs; k++)
        NK_ASSERT(p->output_buf[k] > 0 && p->output_buf[k] < p->nbufs);
#else
    (void)p;
#endif
}
