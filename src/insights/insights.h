/*
 * insights.h - what a profile says, in words: an analysis of the timeline
 * (engine activity and overlap, the critical path, idle gaps and their
 * causes, roofline position, DMA efficiency, time per source line) and rules
 * that turn it into ranked findings with evidence, source lines, time ranges
 * to highlight and a concrete suggestion. Also the comparison of two
 * profiles (`nklab diff`).
 *
 * Everything here reads an nk_profile; rules that suggest a change nklab can
 * make re-time the profile's program with it (or, given a re-trace, the kernel).
 * docs/insights.md describes each rule, its threshold and its source.
 */
#ifndef NK_INSIGHTS_H
#define NK_INSIGHTS_H

#include "profile/profile.h"

#include <stdio.h>

/* Rows the analysis measures: the five engines and "DMA" (any queue). */
#define NK_INS_ROWS NK_ENGINE_COUNT

/* Why a compute engine sat idle between two of its instructions. */
typedef enum nk_ins_cause {
    NK_CAUSE_DMA = 0,     /* the next instruction waited for a load/store */
    NK_CAUSE_ENGINE,      /* ... for another compute engine's result */
    NK_CAUSE_SEMAPHORE,   /* its inputs were ready: cross-engine sync latency */
    NK_CAUSE_INORDER,     /* a later instruction on this engine was ready: in-order stall */
    NK_CAUSE_START,       /* before the engine's first instruction, nothing to wait for */
    NK_CAUSE_COUNT
} nk_ins_cause;
const char *nk__ins_cause_name(int cause);

/* Time intervals: merged lists are sorted and disjoint. */
typedef struct nk_ins_ival {
    double s, e;
} nk_ins_ival;
typedef struct nk_ins_ivlist {
    nk_ins_ival *v;
    uint32_t n;
} nk_ins_ivlist;

/* One step of the critical path. */
typedef struct nk_ins_step {
    uint32_t instr;
    uint8_t engine;   /* nk_engine */
    uint16_t queue;   /* DMA queue (DMA steps) */
    double start, end; /* from its start or its predecessor's end, whichever is later */
    double wait_ns;   /* from the predecessor's end to this start (latency) */
} nk_ins_step;

/* Time per source line (file index into the program's files, line). */
typedef struct nk_ins_line {
    uint32_t file;
    int32_t line;
    uint32_t ninstr;
    uint32_t engines;   /* bit mask of nk_engine */
    double busy_ns;     /* sum of its events' durations */
    double path_ns;     /* time its instructions spend on the critical path */
} nk_ins_line;

/* DMA descriptor size classes by contiguous bytes per partition [DMAbw]. */
enum { NK_DMA_TINY = 0, NK_DMA_SMALL, NK_DMA_FAIR, NK_DMA_LARGE, NK_DMA_CLASSES };

typedef struct nk_ins_analysis {
    double total_ns;            /* the kernel's own time (device time without launch): rules judge by it */
    /* activity: union of busy intervals per row; DMA = any queue's events,
     * trigger to completion (the metric dma_queue_busy_time; "DMA active"
     * is the union of transfers, dma_data_ns) */
    double active_ns[NK_INS_ROWS];
    uint64_t ninstr[NK_INS_ROWS];
    double overlap_ns[NK_INS_ROWS][NK_INS_ROWS]; /* both rows busy */
    double compute_ns;          /* any of Tensor, Vector, Scalar, GpSimd busy */
    double dma_compute_ns;      /* DMA and some compute engine busy together */
    uint32_t dma_queues;        /* distinct queues used */
    /* critical path, in time order */
    nk_ins_step *path;
    uint32_t npath;
    double path_busy_ns[NK_INS_ROWS];
    double path_wait_ns;        /* latencies between steps, start-up included */
    /* idle time of each engine before its last instruction, by cause */
    double idle_ns[NK_INS_ROWS][NK_CAUSE_COUNT];
    double wait_on[NK_INS_ROWS][NK_INS_ROWS]; /* idle of engine r waiting on engine s's result */
    /* roofline: matmul FLOPs per HBM byte against peak FLOPs / HBM bandwidth */
    uint64_t nmatmul;
    double flops, hbm_bytes, intensity, ridge;
    double peak_flops;          /* bf16 peak of the target (FLOP/ns) */
    double achieved_flops;      /* FLOP/ns over the whole kernel */
    /* DMA efficiency */
    uint64_t dma_instrs, descriptors;
    double dma_bytes;
    double desc_bytes_avg;      /* contiguous bytes per partition per descriptor */
    uint64_t desc_class[NK_DMA_CLASSES];
    double dma_peak_bps;        /* bytes per ns the target's DMA can move */
    double dma_bw_frac;         /* dma_bytes / total_ns / dma_peak_bps */
    /* DMA transfers (descriptors actually moving data) */
    double dma_data_ns;         /* union of transfers */
    double dma_latency_gap_ns;  /* no transfer moving while a DMA waits out its start
                                   latency, after the first transfer began */
    double path_dma_latency_ns; /* DMA start latency (issue to first transfer) on the critical path */
    double dma_latency_ns;      /* the target's trigger-to-first-byte latency */
    nk_ins_ival *lat_gaps;   /* those idle periods, merged, in time order */
    uint32_t nlat_gaps;
    /* time per source line, busiest first */
    nk_ins_line *lines;
    uint32_t nlines;
    double busy_sum_ns;         /* sum of every event's duration */
    /* per instruction (program order) */
    double *busy;               /* sum of its events' durations */
    uint32_t *prev_same;        /* previous instruction on its engine / queue, UINT32_MAX none */
    double *path_ns;            /* time it spends on the critical path (0: not on it) */
    double *xfer_first;         /* start of its first transfer; -1 when none */
} nk_ins_analysis;

/* ---- findings */

typedef enum nk_ins_rule {
    NK_RULE_DMA_NOT_OVERLAPPED = 0,
    NK_RULE_DMA_LATENCY,
    NK_RULE_ENGINES_NO_OVERLAP,
    NK_RULE_SMALL_DMA,
    NK_RULE_STATIC_OVERHEAD,
    NK_RULE_MATMUL_SHORT_MOVING,
    NK_RULE_MATMUL_FP32,
    NK_RULE_TENSOR_RELOADED,
    NK_RULE_SERIALIZED_TILE,
    NK_RULE_SPILL,
    NK_RULE_HBM_ROUND_TRIP, /* sequences: a kernel's output stored to HBM and loaded back by the next */
    NK_RULE_PING_PONG,      /* dependent small instructions bounce between two engines on the critical path */
    NK_RULE_INORDER_STALL,  /* an engine waits behind an unrelated instruction of its own queue */
    NK_RULE_SYNC_ORDER,     /* DMAs wait behind earlier triggers: the target triggers in program order */
    NK_RULE_PARTITIONS,     /* instructions on tiles of fewer partitions than the engine has lanes */
    NK_RULE_PSUM_BANKS,     /* accumulation groups wait for PSUM buffers: the banks are the limit */
    NK_RULE_COMPUTE_BOUND,  /* good news */
    NK_RULE_MEMORY_BOUND,   /* good news */
    NK_RULE_COUNT
} nk_ins_rule;
const char *nk__ins_rule_name(int rule); /* "dma-not-overlapped", ... */

typedef enum nk_ins_severity { NK_SEV_GOOD = 0, NK_SEV_LOW, NK_SEV_MEDIUM, NK_SEV_HIGH } nk_ins_severity;
const char *nk__ins_severity_name(int sev);

enum { NK_UNIT_NS = 0, NK_UNIT_BYTES, NK_UNIT_PERCENT, NK_UNIT_COUNT, NK_UNIT_RATIO, NK_UNIT_FLOPS };

typedef struct nk_ins_evidence {
    char name[32];  /* JSON key stem; the unit's suffix is added (_ns, _bytes, _pct) */
    int unit;
    double value;
} nk_ins_evidence;

#define NK_INS_MAX_EVIDENCE 10
#define NK_INS_MAX_LINES 8
#define NK_INS_MAX_RANGES 8
#define NK_INS_MAX_INSTRS 64

typedef struct nk_finding {
    int rule;
    int severity;
    double score_ns;          /* estimated time it costs (ranking); 0 for good news */
    char key[64];             /* rule plus subject: matches findings across profiles */
    char title[160];
    char detail[512];
    char suggestion[1024];
    nk_ins_evidence ev[NK_INS_MAX_EVIDENCE];
    int nev;
    nk_ins_line lines[NK_INS_MAX_LINES]; /* involved lines, most time first */
    int nlines;
    double ranges[NK_INS_MAX_RANGES][2]; /* time ranges to highlight, ns */
    int nranges;
    uint32_t instrs[NK_INS_MAX_INSTRS];  /* involved instructions (first ones) */
    uint32_t ninstrs, ninstrs_total;
} nk_finding;

/* Re-traces and re-times the kernel a profile came from with other options
 * (bufs buffers per tile in affine loops, 0: the target's default; the
 * schedule, NK_SCHED_LIST or NK_SCHED_TRACE_ORDER) and writes the device
 * time in ns. Callers that have the kernel (the tests, a front-end that
 * profiles) give it so findings whose fix is a buffer count report a
 * simulated saving; without it those savings are estimates. */
typedef struct nk_ins_retrace {
    int (*retime)(void *ctx, int bufs, int schedule, double *device_ns);
    void *ctx;
} nk_ins_retrace;

typedef struct nk_insights {
    const nk_profile *pr;     /* not owned */
    const nk_ins_retrace *rt; /* not owned; may be NULL */
    /* the fastest variant the rules could simulate (rules.c: simulate);
     * sim_rc: NK_ENOMEM when a variant could not be timed for memory */
    int sim_done, sim_retraced, sim_bufs, sim_rc;
    double sim_ns;
    nk_metrics m;             /* the profile's metrics: every figure they define is shown from here */
    nk_ins_analysis a;
    nk_finding *f;            /* ranked: problems by score, then good news */
    uint32_t n, cap;
} nk_insights;

/* Analyses a profile and applies every rule. */
int nk__insights_build(const nk_profile *pr, nk_insights **out);
/* The same, with a way to re-trace the kernel (may be NULL). */
int nk__insights_build_retrace(const nk_profile *pr, const nk_ins_retrace *rt, nk_insights **out);
void nk__insights_free(nk_insights *ins);
/* Number of problem findings (severity above NK_SEV_GOOD). */
uint32_t nk__insights_problems(const nk_insights *ins);
/* The first finding of a rule, or NULL. */
const nk_finding *nk__insights_find(const nk_insights *ins, int rule);

/* ---- output */

/* The full report: overview (engines, overlap, critical path, idle time,
 * roofline, DMA, busiest lines) then every finding, ranked. */
int nk__insights_text(const nk_insights *ins, nk_text *out);
/* The findings as a JSON array of objects (shape in docs/insights.md). */
int nk__insights_json(const nk_insights *ins, nk_text *out);
/* The analysis as one JSON object (engines, overlap, path, idle, roofline, DMA, lines). */
int nk__insights_analysis_json(const nk_insights *ins, nk_text *out);
/* For the viewer: {"analysis": {...}, "findings": [...]} in one object. */
int nk__insights_view_json(const nk_profile *pr, nk_text *out);
/* The same, the findings simulating their changes through rt (may be NULL). */
int nk__insights_view_json_retrace(const nk_profile *pr, const nk_ins_retrace *rt, nk_text *out);
/* For `nklab summary`: analyses pr and appends (or prints) its top n
 * findings, one paragraph each under a "Top findings" heading; nothing when
 * there are none. */
int nk__insights_top(const nk_profile *pr, int n, nk_text *out);
int nk__insights_print_top(FILE *f, const nk_profile *pr, int n);

/* ---- comparison */

/* Two profiles side by side: total time, per-engine active time, DMA bytes,
 * per-opcode and per-source-line deltas (lines matched by file basename and
 * line text), findings that appeared or disappeared. Names label columns. */
int nk__insights_diff(const nk_profile *a, const char *name_a, const nk_profile *b, const char *name_b,
                     nk_text *out);

/* ---- shared by the module's files */

int nk__ins_analyze(const nk_profile *pr, nk_ins_analysis *a);
void nk__ins_iv_merge(nk_ins_ivlist *l);                                 /* sort and merge in place */
double nk__ins_iv_len(const nk_ins_ivlist *l);                           /* of a merged list */
double nk__ins_iv_overlap(const nk_ins_ivlist *a, const nk_ins_ivlist *b); /* of merged lists */
/* out = a and b both busy (merged lists; out has room for a->n + b->n). */
void nk__ins_iv_intersect(const nk_ins_ivlist *a, const nk_ins_ivlist *b, nk_ins_ivlist *out);
void nk__ins_analysis_free(nk_ins_analysis *a);
int nk__ins_rules(nk_insights *ins);
/* Contiguous bytes per partition per descriptor of a load/store, and the
 * number of descriptors it takes. */
int64_t nk__ins_desc_bytes(const nk_program *p, const nk_instr *in, int64_t *ndesc);
/* An engine row's figures as the metrics define them: active ns (DMA: union
 * of transfers), % of device time, instruction count. */
void nk__ins_row_figures(const nk_metrics *m, int e, double *ns, double *pct, double *count);
/* The target table the profile's timeline was computed on. */
const nk_arch *nk__ins_arch(const nk_profile *pr);
/* File basename of a program file index. */
const char *nk__ins_basename(const nk_program *p, uint32_t file);
/* Text of line `line` of source file `file` (trimmed, copied into buf), or NULL. */
const char *nk__ins_line_text(const nk_profile *pr, uint32_t file, int line, char *buf, size_t n);
/* "12.3 us" style duration. */
void nk__ins_fmt_ns(char *buf, size_t n, double ns);
void nk__ins_fmt_bytes(char *buf, size_t n, double bytes);
/* A JSON string literal (escaped also for an HTML <script>). */

#endif
