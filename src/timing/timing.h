/*
 * timing.h - the timing model's output: a timeline of a compiled program.
 *
 * Timing never depends on data values: it is computed from the program and a
 * target table alone, so it runs without executing anything (--no-exec).
 * This header is the contract between the timing model (src/timing), the
 * profile (src/profile), the viewer (src/view), insights and the bench
 * harness. Times are nanoseconds from the kernel's start (double).
 */
#ifndef NK_TIMING_H
#define NK_TIMING_H

#include "nkint.h"

/* What an event is a part of. A matmul shows as LoadStationary followed by
 * MultiplyMoving, as the hardware profiler shows it. */
enum {
    NK_EV_INSTR = 0,        /* a whole instruction (non-matmul) */
    NK_EV_LOAD_STATIONARY,  /* nc_matmul: weight load */
    NK_EV_MULTIPLY_MOVING,  /* nc_matmul: streaming the moving operand */
    NK_EV_DMA_ISSUE,        /* a load/store instruction on its DMA queue row: issue to completion */
    NK_EV_DMA_TRIGGER,      /* the instruction on the issuing engine (Sync) that triggers a DMA */
    NK_EV_KIND_COUNT
};

/* The kernel launch around a NeuronCore's instructions, as a real profile
 * shows it: start-up from the start notification to the first instruction,
 * tear-down from the last completion to the stop notification. */
enum {
    NK_REGION_STARTUP = 0,
    NK_REGION_TEARDOWN,
    NK_REGION_KIND_COUNT
};

typedef struct nk_region {
    uint8_t kind;     /* NK_REGION_* */
    uint8_t core;     /* physical NeuronCore */
    double start, end;
} nk_region;

/* One bar on an engine or DMA-queue row. A DMA instruction has an
 * NK_EV_DMA_TRIGGER bar on the Sync row and an NK_EV_DMA_ISSUE bar on its
 * queue's row. */
typedef struct nk_event {
    uint32_t instr;   /* index into the program's instrs */
    uint8_t engine;   /* nk_engine (NK_ENGINE_DMA for DMA-queue rows) */
    uint8_t kind;     /* NK_EV_* */
    uint16_t queue;   /* DMA queue (DMA events) */
    double start, end;
} nk_event;

/* When one load/store moved data: a maximal interval in which at least one
 * of its descriptors was being transferred, with the descriptors that
 * started in it. The timeline keeps these, not each descriptor (a matmul
 * has about ten descriptors per instruction; the spans, mostly one per DMA
 * instruction): their union is the DMA engines' active time exactly, and
 * the first span's start is when the instruction's first byte moved. */
typedef struct nk_dma_span {
    uint32_t instr;       /* the load/store it belongs to */
    uint16_t queue;       /* DMA queue id */
    uint8_t to_hbm;       /* 1 = SBUF -> HBM (store), 0 = HBM -> SBUF (load) */
    uint8_t pad;
    uint32_t descriptors; /* descriptors started in the span (>= 1) */
    uint32_t partitions;  /* partitions they cover */
    uint64_t bytes;       /* bytes they move */
    uint64_t engines;     /* bit e: DMA engine e (0 .. the target's dma_engines - 1) moved one */
    double start, end;
} nk_dma_span;

/* One DMA descriptor transfer on one of the DMA engines: kept only when
 * asked for (nk__time_program_detail, NK_TL_DESCRIPTORS), to examine the
 * model's mechanics; profiles hold the spans. */
typedef struct nk_dma_xfer {
    uint32_t instr;      /* the load/store it belongs to */
    uint16_t queue;      /* DMA queue id */
    uint8_t dma_engine;  /* 0 .. the target's dma_engines - 1 */
    uint8_t to_hbm;      /* 1 = SBUF -> HBM (store), 0 = HBM -> SBUF (load) */
    uint32_t partitions; /* partitions this descriptor covers */
    uint64_t bytes;
    double start, end;
} nk_dma_xfer;

/* A sampled counter: value holds from t[i] until t[i+1]. */
typedef struct nk_counter {
    char name[32];   /* "dma_throughput", "sbuf_bytes", "psum_bytes" */
    char unit[16];   /* "GB/s", "bytes" */
    uint32_t n;
    double *t;
    double *value;
} nk_counter;

typedef struct nk_timeline {
    double total_ns;        /* device time: start notification to the last tear-down's end */
    double host_in_ns;      /* modelled host->device copy of the inputs */
    double host_out_ns;     /* modelled device->host copy of the outputs */
    nk_event *events;       /* sorted by start */
    uint32_t nevents;
    nk_dma_span *dspans;    /* DMA spans, sorted by start */
    uint32_t ndspans;
    double *instr_start;    /* per instruction: earliest start of its events */
    double *instr_end;      /* per instruction: latest end of its events */
    nk_counter *counters;
    uint32_t ncounters;
    /* added after the first version of this contract */
    char target[16];        /* the target table it was timed on */
    double active_ns[NK_ENGINE_COUNT]; /* per engine: union of its event intervals;
                                          NK_ENGINE_DMA: union of the DMA spans */
    /* format version 5 */
    nk_region *regions;     /* launch regions: a start-up and a tear-down per core, by start */
    uint32_t nregions;      /* 0 in profiles of earlier versions */
    /* only with NK_TL_DESCRIPTORS: every descriptor, sorted by start (NULL otherwise) */
    nk_dma_xfer *xfers;
    uint32_t nxfers;
} nk_timeline;

/* Launch time within the device time: the start-up and tear-down of the
 * core that ends last (0 without launch regions). */
double nk__timeline_launch_ns(const nk_timeline *tl);

/* Times program p on target arch (NULL: the program's own target). */
int nk__time_program(const nk_program *p, const nk_arch *arch, nk_timeline **out);

/* The same, with more detail: flags NK_TL_DESCRIPTORS also keeps every DMA
 * descriptor's transfer in tl->xfers (the timeline is otherwise the same). */
enum { NK_TL_DESCRIPTORS = 1 };
int nk__time_program_detail(const nk_program *p, const nk_arch *arch, unsigned flags, nk_timeline **out);

/* The events' merge gives back the pages of the per-engine streams it has
 * read past, each time it has read more than nk__merge_give_step bytes of
 * a stream since the last, when the events take nk__merge_give_min bytes
 * or more (tunable for tests);
 * nk__merge_given counts the bytes given back. */
extern size_t nk__merge_give_min, nk__merge_give_step;
/* 0: each DMA engine is timed on its own, never as one of a gang (the same
 * timeline: for the tests, which compare the two). The counts: the gangs'
 * events (each a descriptor on every engine of a core), and the gangs
 * parted, over every run so far. */
extern int nk__dma_gangs;
extern _Atomic uint64_t nk__dma_gang_starts, nk__dma_gang_parts;
extern _Atomic size_t nk__merge_given;

/* A change of a tile counter: at t, delta bytes (+ a tile's first write,
 * - its last use). nk__tile_count gives the number of points of memory
 * mem's tiles (the buffers of p with first[b] finite, alive [first[b],
 * last[b])); nk__tile_points hands them to emit in time order, frees first
 * at equal times, with pt and tmp room for np each (written only where
 * the tiles cannot be grouped by address or a group's come out of order;
 * tmp NULL there is NK_ENOMEM): 0, or NK_ENOMEM before any point is
 * emitted. */
typedef struct nk__mpoint {
    double t, delta;
} nk__mpoint;
size_t nk__tile_count(const nk_program *p, int mem, const double *first);
int nk__tile_points(const nk_program *p, int mem, const double *first, const double *last, size_t np,
                    nk__mpoint *pt, nk__mpoint *tmp, void (*emit)(void *, const nk__mpoint *), void *ctx);

/* DMA spans from descriptor transfers sorted by start (profiles of format
 * versions before 7 hold the transfers): each instruction's transfers
 * merged where they overlap or touch, in the order the spans start. The
 * instructions are below ninstr (NK_EINVAL otherwise). */
int nk__dma_spans_of(const nk_dma_xfer *x, uint32_t n, uint32_t ninstr, nk_dma_span **out, uint32_t *nout);
void nk__timeline_free(nk_timeline *tl);

#endif
