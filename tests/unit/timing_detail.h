/*
 * timing_detail.h - timing with every DMA descriptor kept, for tests of the
 * model's mechanics; each call also checks that the DMA spans the model made
 * as it ran are those the descriptors make (nk__dma_spans_of).
 */
#ifndef NK_TEST_TIMING_DETAIL_H
#define NK_TEST_TIMING_DETAIL_H

#include "test.h"
#include "timing/timing.h"

#include <stdlib.h>

static inline int time_detail_at(const char *file, int line, const nk_program *p, const nk_arch *a,
                                 nk_timeline **out)
{
    int rc = nk__time_program_detail(p, a, NK_TL_DESCRIPTORS, out);
    if (rc)
        return rc;
    const nk_timeline *tl = *out;
    nk_dma_span *v = NULL;
    uint32_t n = 0;
    if (nk__dma_spans_of(tl->xfers, tl->nxfers, p->ninstr, &v, &n))
        nk_test_fail(file, line, "DMA spans of %u transfers: not made", tl->nxfers);
    else if (n != tl->ndspans)
        nk_test_fail(file, line, "%u DMA spans from the transfers, the model made %u", n, tl->ndspans);
    else
        for (uint32_t k = 0; k < n; k++) {
            const nk_dma_span *x = &v[k], *y = &tl->dspans[k];
            if (x->instr != y->instr || x->queue != y->queue || x->to_hbm != y->to_hbm ||
                x->descriptors != y->descriptors || x->partitions != y->partitions || x->bytes != y->bytes ||
                x->engines != y->engines || x->start != y->start || x->end != y->end) {
                nk_test_fail(file, line, "DMA span %u: from the transfers instr %u %g..%g, %u descriptors; the "
                             "model's instr %u %g..%g, %u descriptors",
                             k, x->instr, x->start, x->end, x->descriptors, y->instr, y->start, y->end,
                             y->descriptors);
                break;
            }
        }
    free(v);
    return 0;
}
#define time_detail(p, a, out) time_detail_at(__FILE__, __LINE__, (p), (a), (out))

#endif
