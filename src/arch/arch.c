/*
 * arch.c - the built-in target tables.
 *
 * Sources (see docs/timing-model.md for the full list):
 *   [A2]    Trainium/Inferentia2 architecture guide (NeuronCore-v2)
 *   [A3]    Trainium2 architecture guide (NeuronCore-v3)
 *   [ALLOC] NKI direct allocation guide
 */
#include "arch.h"

#include <string.h>

static const nk_arch targets[] = {
    {
        .name = "trn1",
        .partitions = 128,                    /* [A2] */
        .sbuf_partition_bytes = 192 * 1024,   /* [A2] 24 MiB = 128 x 192 KiB */
        .sbuf_reserved_bytes = 16 * 1024,     /* [ALLOC] user addresses < 176 KiB */
        .psum_partition_bytes = 16 * 1024,    /* [A2] 2 MiB = 128 x 16 KiB */
        .psum_bank_bytes = 2 * 1024,          /* [A2] 8 banks of 2 KiB */
        .psum_banks = 8,                      /* [A2] */
        .tile_align = 64,   /* assumed: the allocator's alignment is not documented */
        .default_bufs = 2,  /* assumed: double buffering, the guide's usual example */
        .vector_fmax_sbuf = 65536,            /* [A2] 64K elements from SBUF */
        .vector_fmax_psum = 4096,             /* [A2] 4K elements from PSUM */
    },
    {
        .name = "trn2",
        .partitions = 128,                    /* [A3] */
        .sbuf_partition_bytes = 224 * 1024,   /* [A3] 28 MiB = 128 x 224 KiB */
        .sbuf_reserved_bytes = 16 * 1024,     /* assumed: as on trn1 [ALLOC] */
        .psum_partition_bytes = 16 * 1024,    /* [A3] same as v2 */
        .psum_bank_bytes = 2 * 1024,          /* [A3] */
        .psum_banks = 8,                      /* [A3] */
        .tile_align = 64,   /* assumed, as trn1 */
        .default_bufs = 2,  /* assumed, as trn1 */
        .vector_fmax_sbuf = 65536,            /* assumed: as v2 [A2] */
        .vector_fmax_psum = 4096,             /* assumed: as v2 [A2] */
    },
};

const nk_arch *nk_arch_get(const char *name)
{
    if (!name || !*name)
        name = "trn1";
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
        if (!strcmp(targets[i].name, name))
            return &targets[i];
    return 0;
}
