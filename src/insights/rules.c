/*
 * rules.c - findings from the analysis: each rule measures one known way a
 * NeuronCore kernel loses time, estimates the time at stake (the score that
 * ranks findings), names the instructions and source lines involved and says
 * what to change. Two rules report good news.
 *
 * Thresholds cite neuroncore.md's sources ([PG] "what good looks like",
 * [DMAbw], [A2], [ISA-old]) or say they are judgement calls; docs/insights.md
 * lists them.
 */
#include "insights/insights.h"
#include "sched/program_io.h"
#include "timing/timing.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Judgement call: a problem worth a line costs at least 1% of the kernel. */
#define MIN_SHARE 0.01
/* Judgement call: severity by the share of total time at stake. */
#define HIGH_SHARE 0.20
#define MEDIUM_SHARE 0.05
/* Judgement call: restructuring a loop (tiling, multi-buffering) is worth
 * suggesting from 5% of the kernel (a few percent of DMA start latency stay
 * even in good pipelines of small kernels: the first store cannot start
 * before one tile went through). */
#define STRUCTURAL_MIN_SHARE 0.05
/* Judgement call: DMA and compute count as overlapped when at least half of
 * the shorter of the two runs under the other. */
#define OVERLAP_MIN_FRAC 0.5
/* Judgement call: a kernel is DMA-bound when DMA holds at least half of its
 * critical path. */
#define DMA_BOUND_PATH_SHARE 0.5
/* Judgement call: two engines "never overlap" below 5% of the shorter one's
 * busy time, when each is busy at least 5% of the kernel. */
#define NEVER_OVERLAP_FRAC 0.05
#define ENGINE_USED_SHARE 0.05
/* [DMAbw]: >= 2 KiB per partition is the recommended minimum; < 256 B is
 * severely overhead-bound; >= 4 KiB saturates. */
#define DMA_RECOMMENDED_BYTES 2048
#define DMA_TINY_BYTES 256
/* Judgement call from [A2][PG] (about 100 cycles of static overhead, MIN_II
 * 64 [ISA-old]): below 128 elements per partition fixed costs dominate. */
#define STATIC_FREE_MIN 128
/* Judgement call: the static-overhead rule needs 5% of the kernel. */
#define STATIC_MIN_SHARE 0.05
/* The Neuron profiler's warning: a tensor loaded more than twice. */
#define RELOAD_MAX 2.0
/* [PG] "what good looks like": compute-bound at >= 90% active on the busiest
 * engine, memory-bound at >= 60% of DMA bandwidth. */
#define GOOD_ENGINE_ACTIVE 0.90
#define GOOD_DMA_BW 0.60

#define NONE UINT32_MAX

/* ---- building findings */

static nk_finding *add(nk_insights *ins, int rule, const char *subject)
{
    if (ins->n == ins->cap) {
        uint32_t cap = ins->cap ? ins->cap * 2 : 8;
        nk_finding *f = realloc(ins->f, cap * sizeof *f);
        if (!f)
            return NULL;
        ins->f = f;
        ins->cap = cap;
    }
    nk_finding *f = &ins->f[ins->n++];
    memset(f, 0, sizeof *f);
    f->rule = rule;
    snprintf(f->key, sizeof f->key, "%s%s%s", nk__ins_rule_name(rule), subject ? ":" : "", subject ? subject : "");
    return f;
}

static void ev(nk_finding *f, const char *name, int unit, double v)
{
    if (f->nev >= NK_INS_MAX_EVIDENCE)
        return;
    nk_ins_evidence *e = &f->ev[f->nev++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->unit = unit;
    e->value = v;
}

static void say(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

static void rate(nk_finding *f, double total)
{
    double share = total > 0 ? f->score_ns / total : 0;
    f->severity = share >= HIGH_SHARE ? NK_SEV_HIGH : share >= MEDIUM_SHARE ? NK_SEV_MEDIUM : NK_SEV_LOW;
}

static int cmp_line_busy(const void *x, const void *y)
{
    const nk_ins_line *a = x, *b = y;
    if (a->busy_ns != b->busy_ns)
        return a->busy_ns > b->busy_ns ? -1 : 1;
    return a->line < b->line ? -1 : a->line > b->line;
}

static int cmp_range_len(const void *x, const void *y)
{
    const nk_ins_ival *a = x, *b = y;
    double la = a->e - a->s, lb = b->e - b->s;
    return la > lb ? -1 : la < lb;
}

static int cmp_range_start(const void *x, const void *y)
{
    const double *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Fills ranges from a merged interval list: the longest ones, in time order. */
static void set_ranges(nk_finding *f, nk_ins_ivlist *l)
{
    qsort(l->v, l->n, sizeof *l->v, cmp_range_len);
    f->nranges = 0;
    for (uint32_t i = 0; i < l->n && f->nranges < NK_INS_MAX_RANGES; i++) {
        f->ranges[f->nranges][0] = l->v[i].s;
        f->ranges[f->nranges][1] = l->v[i].e;
        f->nranges++;
    }
    qsort(f->ranges, (size_t)f->nranges, sizeof f->ranges[0], cmp_range_start);
}

/* Instructions, lines (most time first) and time ranges of a finding from
 * the list of instructions involved. Extra lines (e.g. where a tile was
 * declared) can be added before with line_add. */
static int involve(const nk_insights *ins, nk_finding *f, const uint32_t *idx, uint32_t n)
{
    const nk_program *p = ins->pr->prog;
    const nk_timeline *tl = ins->pr->tl;
    nk_ins_line *lines = calloc(n ? n : 1, sizeof *lines);
    nk_ins_ivlist l = {nk__big_fixed((n ? n : 1) * sizeof(nk_ins_ival)), 0};
    if (!lines || !l.v) {
        free(lines);
        free(l.v);
        return NK_ENOMEM;
    }
    uint32_t nl = 0;
    f->ninstrs_total = n;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = idx[k];
        if (f->ninstrs < NK_INS_MAX_INSTRS)
            f->instrs[f->ninstrs++] = i;
        const nk_locinfo *loc = &p->locs[p->instrs[i].loc];
        uint32_t j = 0;
        while (j < nl && (lines[j].file != loc->file || lines[j].line != loc->line))
            j++;
        if (j == nl)
            lines[nl++] = (nk_ins_line){loc->file, loc->line, 0, 0, 0, 0};
        lines[j].ninstr++;
        lines[j].engines |= 1u << (p->instrs[i].engine % 32);
        lines[j].busy_ns += ins->a.busy[i];
        if (tl->instr_end[i] > tl->instr_start[i])
            l.v[l.n++] = (nk_ins_ival){tl->instr_start[i], tl->instr_end[i]};
    }
    qsort(lines, nl, sizeof *lines, cmp_line_busy);
    for (uint32_t j = 0; j < nl && f->nlines < NK_INS_MAX_LINES; j++)
        f->lines[f->nlines++] = lines[j];
    nk__ins_iv_merge(&l);
    set_ranges(f, &l);
    free(lines);
    free(l.v);
    return 0;
}

static void line_add(const nk_program *p, nk_finding *f, uint32_t loc)
{
    if (f->nlines >= NK_INS_MAX_LINES || loc >= p->nlocs)
        return;
    const nk_locinfo *l = &p->locs[loc];
    for (int j = 0; j < f->nlines; j++)
        if (f->lines[j].file == l->file && f->lines[j].line == l->line)
            return;
    f->lines[f->nlines++] = (nk_ins_line){l->file, l->line, 0, 0, 0, 0};
}

static void where(const nk_program *p, uint32_t loc, char *buf, size_t n)
{
    if (loc >= p->nlocs) {
        snprintf(buf, n, "?");
        return;
    }
    snprintf(buf, n, "%s:%d", nk__ins_basename(p, p->locs[loc].file), p->locs[loc].line);
}

/* Collects instruction indices passing a test into a growable list. */
typedef struct ulist {
    uint32_t *v;
    uint32_t n, cap;
} ulist;

static int ul_push(ulist *l, uint32_t x)
{
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 64;
        uint32_t *v = nk__big_grow(l->v, cap * sizeof *v);
        if (!v)
            return NK_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return 0;
}

/* Union of the instructions' intervals. */
static double union_ns(const nk_timeline *tl, const uint32_t *idx, uint32_t n)
{
    nk_ins_ivlist l = {nk__big_fixed((n ? n : 1) * sizeof(nk_ins_ival)), 0};
    if (!l.v)
        return 0;
    for (uint32_t k = 0; k < n; k++)
        l.v[l.n++] = (nk_ins_ival){tl->instr_start[idx[k]], tl->instr_end[idx[k]]};
    nk__ins_iv_merge(&l);
    double t = nk__ins_iv_len(&l);
    free(l.v);
    return t;
}

/* Union of the data-moving intervals of the instructions' DMA spans
 * (sorted list of instruction ids); without spans, of the instructions. */
static double xfer_union_ns(const nk_profile *pr, const uint32_t *idx, uint32_t n)
{
    const nk_timeline *tl = pr->tl;
    if (!tl->ndspans)
        return union_ns(tl, idx, n);
    nk_ins_ivlist l = {nk__big_fixed(tl->ndspans * sizeof(nk_ins_ival)), 0}; /* filled from its start */
    if (!l.v)
        return 0;
    for (uint32_t k = 0; k < tl->ndspans; k++) {
        const nk_dma_span *x = &tl->dspans[k];
        uint32_t lo = 0, hi = n; /* binary search: idx is ascending */
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (idx[mid] < x->instr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n && idx[lo] == x->instr && x->end > x->start)
            l.v[l.n++] = (nk_ins_ival){x->start, x->end};
    }
    nk__ins_iv_merge(&l);
    double t = nk__ins_iv_len(&l);
    free(l.v);
    return t;
}

/* ---- loop advice */

/* The loop (instance + 1) most of the instructions' time is spent in. */
static uint32_t main_loop(const nk_insights *ins, const uint32_t *idx, uint32_t n)
{
    const nk_program *p = ins->pr->prog;
    uint32_t best = 0;
    double best_t = -1;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t lp = p->instrs[idx[k]].loop;
        double t = 0;
        for (uint32_t m = 0; m < n; m++)
            if (p->instrs[idx[m]].loop == lp)
                t += ins->a.busy[idx[m]];
        if (t > best_t) {
            best_t = t;
            best = lp;
        }
        if (n > 256)
            break; /* long lists: the first instruction's loop is representative */
    }
    return best;
}

/* What a piece of advice asks for: a buffer count nklab can set itself
 * (nk_options.default_bufs, which a re-trace tries), or a change to the
 * kernel's code (an estimate). */
enum { ADV_REWRITE = 0, ADV_BUFFERS };

/* What to change about a loop so tiles of consecutive iterations overlap. */
static int pipeline_advice(const nk_program *p, uint32_t loop, char *buf, size_t n)
{
    if (!loop || loop > p->nloops) {
        say(buf, n, "Split the work into tiles processed in an NK_AFFINE_RANGE loop with the tiles allocated "
            "inside the body: each tile then gets several buffers, so the load of tile i+1 and the store of "
            "tile i-1 overlap the compute on tile i.");
        return ADV_REWRITE;
    }
    const nk_loopinfo *L = &p->loops[loop - 1];
    char w[96];
    where(p, L->loc, w, sizeof w);
    int kind = L->kind == NK_LOOP_AFFINE && L->trip > L->bufs ? ADV_BUFFERS : ADV_REWRITE;
    if (L->kind == NK_LOOP_SEQUENTIAL)
        say(buf, n, "The loop at %s is an NK_SEQUENTIAL_RANGE, so its tiles have one buffer and iteration i+1 "
            "waits for iteration i. If the iterations are independent (or only accumulate into PSUM), make it "
            "NK_AFFINE_RANGE so loads of tile i+1 overlap compute on tile i; if they carry a value, prefetch by "
            "hand: load tile i+1 into a second tile before computing on tile i.", w);
    else if (L->bufs < 2)
        say(buf, n, "The affine loop at %s keeps %d buffer per tile, so iteration i+1 cannot load while "
            "iteration i computes. Give it 2-3 buffers (NK_AFFINE_RANGE_BUFS(nc, i, n, 3)).", w, L->bufs);
    else if (L->trip <= L->bufs)
        say(buf, n, "The affine loop at %s runs only %lld iteration%s (%d buffers per tile): with so few tiles "
            "the first and last stages of the pipeline have nothing to overlap. Use more iterations over "
            "smaller tiles (keeping >= 2 KiB per partition per DMA) with a buffer for each tile in flight.",
            w, (long long)L->trip, L->trip == 1 ? "" : "s", L->bufs);
    else
        say(buf, n, "The affine loop at %s has %d buffers per tile for %lld iterations. Raise the buffers "
            "(NK_AFFINE_RANGE_BUFS(nc, i, n, %d)) so more loads are in flight, and make sure no tile used in "
            "the body is declared outside it.", w, L->bufs, (long long)L->trip, L->bufs + 1);
    return kind;
}

/* ---- advice tested by simulation (the simulation itself is below) */

static void simulate(nk_insights *ins);
static int sim_helps(const nk_insights *ins);
static int sim_evidence(nk_insights *ins, nk_finding *f);
static void sim_say(const nk_insights *ins, char *buf, size_t n);

/* Appends to a finding's suggestion. */
static void say_more(nk_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say_more(nk_finding *f, const char *fmt, ...)
{
    size_t len = strlen(f->suggestion);
    if (len + 1 >= sizeof f->suggestion)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->suggestion + len, sizeof f->suggestion - len, fmt, ap);
    va_end(ap);
}

/* Tests a finding's advice where nklab can make the change itself: a buffer
 * count for the loop `loop` (instance + 1) whose count came from the default
 * (nk_options.default_bufs, which the re-trace varies). With a re-trace the
 * saving simulated replaces the estimate (score, evidence, the variant in
 * the suggestion); the advice that does not help is not given: returns 1,
 * and the caller drops the finding. Otherwise the suggestion says the time
 * at stake is an estimate and why. */
static int advice_tested(nk_insights *ins, nk_finding *f, int kind, uint32_t loop)
{
    const nk_program *p = ins->pr->prog;
    const nk_loopinfo *L = loop && loop <= p->nloops ? &p->loops[loop - 1] : NULL;
    /* set by the kernel (even to the default's count), or lowered to fit */
    int own = L && (L->explicit_bufs || L->bufs != p->bufs_default);
    if (kind == ADV_BUFFERS && !own && ins->rt && ins->rt->retime) {
        simulate(ins);
        if (!sim_helps(ins))
            return 1;
        sim_evidence(ins, f);
        char sv[300];
        sim_say(ins, sv, sizeof sv);
        say_more(f, " %s", sv);
        return 0;
    }
    if (kind == ADV_BUFFERS && own)
        say_more(f, " Estimate, not simulated: the loop's %d buffers were set by the kernel or lowered to fit "
                 "SBUF/PSUM, which a re-trace with another default count does not change.", L->bufs);
    else if (kind == ADV_BUFFERS)
        say_more(f, " Estimate, not simulated: re-tracing with other buffer counts needs the kernel (`nklab "
                 "insights KERNEL ...` instead of a profile file).");
    else
        say_more(f, " Estimate, not simulated: the change is to the kernel's code, which nklab cannot make itself.");
    return 0;
}

/* Drops the finding just added (the last one). */
static void drop_last(nk_insights *ins)
{
    if (ins->n)
        ins->n--;
}

/* ---- problem rules */

/* Highlights where the DMA instructions dl run with every compute engine
 * idle (cl: the compute instructions' merged intervals). */
static void exposed_ranges(const nk_timeline *tl, nk_finding *f, const ulist *dl, const nk_ins_ivlist *cl)
{
    nk_ins_ivlist dmal = {malloc((dl->n ? dl->n : 1) * sizeof(nk_ins_ival)), 0};
    nk_ins_ivlist exposed = {malloc((dl->n + cl->n + 1) * sizeof(nk_ins_ival)), 0};
    if (dmal.v && exposed.v) {
        for (uint32_t k = 0; k < dl->n; k++)
            dmal.v[dmal.n++] = (nk_ins_ival){tl->instr_start[dl->v[k]], tl->instr_end[dl->v[k]]};
        nk__ins_iv_merge(&dmal);
        uint32_t j = 0;
        for (uint32_t k = 0; k < dmal.n; k++) {
            double s = dmal.v[k].s, e = dmal.v[k].e;
            while (j < cl->n && cl->v[j].e <= s)
                j++;
            for (uint32_t m = j; m < cl->n && cl->v[m].s < e && s < e; m++) {
                if (cl->v[m].s > s)
                    exposed.v[exposed.n++] = (nk_ins_ival){s, cl->v[m].s};
                s = fmax(s, cl->v[m].e);
            }
            if (s < e)
                exposed.v[exposed.n++] = (nk_ins_ival){s, e};
        }
        set_ranges(f, &exposed);
    }
    free(dmal.v);
    free(exposed.v);
}

static int rule_dma_overlap(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    const nk_timeline *tl = ins->pr->tl;
    double dma = a->active_ns[NK_ENGINE_DMA], comp = a->compute_ns, ov = a->dma_compute_ns;
    double shorter = fmin(dma, comp);
    if (shorter <= 0 || a->total_ns <= 0)
        return 0;
    double lost = shorter - ov;
    if (ov >= OVERLAP_MIN_FRAC * shorter || lost < STRUCTURAL_MIN_SHARE * a->total_ns)
        return 0;
    /* the DMA instructions whose time no compute engine covers, most first */
    ulist dl = {0};
    nk_ins_ivlist cl = {malloc((p->ninstr ? p->ninstr : 1) * sizeof(nk_ins_ival)), 0};
    int rc = cl.v ? 0 : NK_ENOMEM;
    for (uint32_t i = 0; !rc && i < p->ninstr; i++) {
        if (p->instrs[i].engine == NK_ENGINE_DMA)
            rc = ul_push(&dl, i);
        else if (p->instrs[i].engine <= NK_ENGINE_GPSIMD && tl->instr_end[i] > tl->instr_start[i])
            cl.v[cl.n++] = (nk_ins_ival){tl->instr_start[i], tl->instr_end[i]};
    }
    nk_finding *f = rc ? NULL : add(ins, NK_RULE_DMA_NOT_OVERLAPPED, NULL);
    if (!f) {
        free(dl.v);
        free(cl.v);
        return NK_ENOMEM;
    }
    nk__ins_iv_merge(&cl);
    f->score_ns = lost;
    rate(f, a->total_ns);
    int dma_longer = dma >= comp;
    say(f->title, sizeof f->title, "DMA is not overlapped with compute: only %.0f%% of the %s time runs under %s",
        100.0 * ov / shorter, dma_longer ? "compute" : "DMA", dma_longer ? "DMA" : "compute");
    char d[32], c[32], o[32];
    nk__ins_fmt_ns(d, sizeof d, dma);
    nk__ins_fmt_ns(c, sizeof c, comp);
    nk__ins_fmt_ns(o, sizeof o, ov);
    say(f->detail, sizeof f->detail,
        "DMA is busy %s (%.1f%% of the kernel) and the compute engines %s (%.1f%%), but they overlap only %s. "
        "A pipelined kernel hides the shorter of the two under the longer; here up to %.1f%% of the kernel "
        "could be saved.", d, 100 * dma / a->total_ns, c, 100 * comp / a->total_ns, o,
        100 * lost / a->total_ns);
    ev(f, "dma_active", NK_UNIT_NS, dma);
    ev(f, "compute_active", NK_UNIT_NS, comp);
    ev(f, "overlap", NK_UNIT_NS, ov);
    ev(f, "hidden", NK_UNIT_PERCENT, 100 * ov / shorter);
    ev(f, "total", NK_UNIT_NS, a->total_ns);
    rc = involve(ins, f, dl.v, dl.n);
    if (!rc)
        exposed_ranges(tl, f, &dl, &cl);
    uint32_t loop = main_loop(ins, dl.v, dl.n);
    if (!rc && advice_tested(ins, f, pipeline_advice(p, loop, f->suggestion, sizeof f->suggestion), loop))
        drop_last(ins);
    free(dl.v);
    free(cl.v);
    return rc;
}

/* The DMAs that wait out their start latency during the analysis' latency
 * gaps (no data moving). */
static int waiting_dmas(const nk_insights *ins, ulist *l)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    const nk_timeline *tl = ins->pr->tl;
    int rc = 0;
    for (uint32_t i = 0; !rc && i < p->ninstr; i++) {
        if (p->instrs[i].engine != NK_ENGINE_DMA || a->xfer_first[i] <= tl->instr_start[i])
            continue;
        /* the first gap ending after the DMA's trigger (gaps are sorted, disjoint) */
        uint32_t lo = 0, hi = a->nlat_gaps;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (a->lat_gaps[mid].e <= tl->instr_start[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < a->nlat_gaps && a->xfer_first[i] > a->lat_gaps[lo].s)
            rc = ul_push(l, i);
    }
    return rc;
}

/* What to change about a loop so DMAs are issued ahead of need. */
static int latency_advice(const nk_program *p, uint32_t loop, char *buf, size_t n)
{
    const nk_loopinfo *L = loop && loop <= p->nloops ? &p->loops[loop - 1] : NULL;
    char w[64];
    if (L)
        where(p, L->loc, w, sizeof w);
    if (L && L->trip <= L->bufs) {
        say(buf, n,
            "Issue DMAs ahead so their start latency overlaps transfers already running. The loop at %s runs "
            "only %lld iteration%s: split the work into more, smaller tiles (keep >= 2 KiB per partition per "
            "transfer) with a buffer per iteration, up to 4 (NK_AFFINE_RANGE_BUFS(nc, i, n, 4)), so all loads "
            "are issued up front and the first stores start while later tiles still load.",
            w, (long long)L->trip, L->trip == 1 ? "" : "s");
        return ADV_REWRITE;
    } else if (L) {
        long long want = L->trip < L->bufs + 2 ? (long long)L->trip : (long long)L->bufs + 2;
        say(buf, n,
            "Issue DMAs ahead so their start latency overlaps transfers already running. The loop at %s keeps "
            "%d buffer%s per tile for %lld iterations, so each load waits until a buffer frees up and then pays "
            "the full latency: give it more buffers (NK_AFFINE_RANGE_BUFS(nc, i, n, %lld)) if SBUF allows.",
            w, L->bufs, L->bufs == 1 ? "" : "s", (long long)L->trip, want);
        return L->kind == NK_LOOP_AFFINE ? ADV_BUFFERS : ADV_REWRITE;
    } else {
        say(buf, n,
            "Issue DMAs ahead so their start latency overlaps transfers already running: process the data in "
            "tiles in an NK_AFFINE_RANGE loop with several buffers per tile, so loads are issued up front and "
            "the first stores start while later tiles still load.");
    }
    return ADV_REWRITE;
}

/* DMA-bound kernels lose time when every DMA engine idles while the next
 * DMA waits out its start latency (~1.3 us from trigger to first byte
 * [DMAbw]): DMAs issued only when needed, not ahead. */
static int rule_dma_latency(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    double lost = a->dma_latency_gap_ns, path_dma = a->path_busy_ns[NK_ENGINE_DMA];
    if (a->total_ns <= 0 || path_dma < DMA_BOUND_PATH_SHARE * a->total_ns || lost < STRUCTURAL_MIN_SHARE * a->total_ns)
        return 0;
    ulist l = {0};
    int rc = waiting_dmas(ins, &l);
    nk_finding *f = rc ? NULL : add(ins, NK_RULE_DMA_LATENCY, NULL);
    if (!f) {
        free(l.v);
        return NK_ENOMEM;
    }
    f->score_ns = lost;
    rate(f, a->total_ns);
    char g[32], d[32], pl[32];
    nk__ins_fmt_ns(g, sizeof g, lost);
    nk__ins_fmt_ns(d, sizeof d, a->dma_data_ns);
    nk__ins_fmt_ns(pl, sizeof pl, a->path_dma_latency_ns);
    say(f->title, sizeof f->title, "DMA-bound, but the DMA engines idle %.1f%% of the time waiting for DMAs to "
        "start", 100 * lost / a->total_ns);
    say(f->detail, sizeof f->detail,
        "DMA holds %.0f%% of the critical path. After the first transfer, no data moves for %s while issued "
        "DMAs wait out their start latency (about 1.3 us from trigger to first byte [DMAbw]); data moves %s in "
        "all. DMA start latency on the critical path: %s.", 100 * path_dma / a->total_ns, g, d, pl);
    ev(f, "idle_waiting", NK_UNIT_NS, lost);
    ev(f, "data_moving", NK_UNIT_NS, a->dma_data_ns);
    ev(f, "path_dma", NK_UNIT_PERCENT, 100 * path_dma / a->total_ns);
    ev(f, "path_latency", NK_UNIT_NS, a->path_dma_latency_ns);
    ev(f, "dma_waiting", NK_UNIT_COUNT, l.n);
    rc = involve(ins, f, l.v, l.n);
    /* highlight the gaps themselves (set_ranges sorts its list: a copy) */
    nk_ins_ivlist gl = {malloc((a->nlat_gaps ? a->nlat_gaps : 1) * sizeof(nk_ins_ival)), a->nlat_gaps};
    if (gl.v) {
        memcpy(gl.v, a->lat_gaps, gl.n * sizeof *gl.v);
        set_ranges(f, &gl);
        free(gl.v);
    } else if (!rc) {
        rc = NK_ENOMEM;
    }
    uint32_t loop = main_loop(ins, l.v, l.n);
    if (!rc && advice_tested(ins, f, latency_advice(p, loop, f->suggestion, sizeof f->suggestion), loop))
        drop_last(ins);
    free(l.v);
    return rc;
}

static int rule_engines_overlap(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    for (int r = 0; r <= NK_ENGINE_GPSIMD; r++)
        for (int s = r + 1; s <= NK_ENGINE_GPSIMD; s++) {
            double ar = a->active_ns[r], as = a->active_ns[s], ov = a->overlap_ns[r][s];
            double mutual = a->wait_on[r][s] + a->wait_on[s][r];
            double shorter = fmin(ar, as), lost = fmin(shorter - ov, mutual);
            if (a->total_ns <= 0 || ar < ENGINE_USED_SHARE * a->total_ns || as < ENGINE_USED_SHARE * a->total_ns ||
                ov >= NEVER_OVERLAP_FRAC * shorter || lost < STRUCTURAL_MIN_SHARE * a->total_ns)
                continue;
            char subj[32];
            say(subj, sizeof subj, "%s+%s", nk_engine_name((nk_engine)r), nk_engine_name((nk_engine)s));
            ulist l = {0};
            int rc = 0;
            for (uint32_t i = 0; !rc && i < p->ninstr; i++)
                if (p->instrs[i].engine == r || p->instrs[i].engine == s)
                    rc = ul_push(&l, i);
            nk_finding *f = rc ? NULL : add(ins, NK_RULE_ENGINES_NO_OVERLAP, subj);
            if (!f) {
                free(l.v);
                return NK_ENOMEM;
            }
            f->score_ns = lost;
            rate(f, a->total_ns);
            say(f->title, sizeof f->title, "The %s and %s engines never work at the same time",
                nk_engine_name((nk_engine)r), nk_engine_name((nk_engine)s));
            char x[32], y[32], o[32], m[32];
            nk__ins_fmt_ns(m, sizeof m, mutual);
            nk__ins_fmt_ns(x, sizeof x, ar);
            nk__ins_fmt_ns(y, sizeof y, as);
            nk__ins_fmt_ns(o, sizeof o, ov);
            say(f->detail, sizeof f->detail,
                "%s is busy %s and %s %s, overlapping only %s (%.1f%% of the shorter). They idle %s waiting for "
                "each other's results, so their work runs back to back instead of in parallel.",
                nk_engine_name((nk_engine)r), x, nk_engine_name((nk_engine)s), y, o, 100 * ov / shorter, m);
            ev(f, "a_active", NK_UNIT_NS, ar);
            ev(f, "b_active", NK_UNIT_NS, as);
            ev(f, "overlap", NK_UNIT_NS, ov);
            ev(f, "mutual_wait", NK_UNIT_NS, mutual);
            rc = involve(ins, f, l.v, l.n);
            char adv[400];
            uint32_t loop = main_loop(ins, l.v, l.n);
            int kind = pipeline_advice(p, loop, adv, sizeof adv);
            say(f->suggestion, sizeof f->suggestion,
                "Let the engines pipeline: the tiles passed from one to the other need at least two buffers. %s",
                adv);
            if (!rc && advice_tested(ins, f, kind, loop))
                drop_last(ins);
            free(l.v);
            if (rc)
                return rc;
        }
    return 0;
}

static int rule_small_dma(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    ulist l = {0};
    double bytes = 0, desc_bytes = 0, ndesc = 0, tiny = 0, strided = 0;
    int rc = 0;
    for (uint32_t i = 0; !rc && i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (in->op != NK_OP_LOAD && in->op != NK_OP_STORE)
            continue;
        int64_t nd = 0, b = nk__ins_desc_bytes(p, in, &nd);
        if (b >= DMA_RECOMMENDED_BYTES)
            continue;
        const nk_opnd *tile = in->op == NK_OP_LOAD ? &in->dst : &in->src[0];
        const nk_opnd *hbm = in->op == NK_OP_LOAD ? &in->src[0] : &in->dst;
        bytes += (double)nk__opnd_numel(p, hbm) * nk_dtype_size(nk__opnd_dtype(p, hbm));
        desc_bytes += (double)b * (double)nd;
        ndesc += (double)nd;
        tiny += b < DMA_TINY_BYTES;
        strided += b < nk__opnd_free_size(p, tile) * nk_dtype_size(nk__opnd_dtype(p, tile));
        rc = ul_push(&l, i);
    }
    double t = rc ? 0 : xfer_union_ns(ins->pr, l.v, l.n);
    double ideal = a->dma_peak_bps > 0 ? bytes / a->dma_peak_bps : 0;
    double lost = t - ideal;
    if (rc || !l.n || a->total_ns <= 0 || lost < MIN_SHARE * a->total_ns) {
        free(l.v);
        return rc;
    }
    nk_finding *f = add(ins, NK_RULE_SMALL_DMA, NULL);
    if (!f) {
        free(l.v);
        return NK_ENOMEM;
    }
    double avg = desc_bytes / ndesc;
    f->score_ns = lost;
    rate(f, a->total_ns);
    say(f->title, sizeof f->title, "Small DMA transfers: %u load/store%s move %.0f bytes per partition per "
        "descriptor on average", l.n, l.n == 1 ? "" : "s", avg);
    char ts[32], is[32];
    nk__ins_fmt_ns(ts, sizeof ts, t);
    nk__ins_fmt_ns(is, sizeof is, ideal);
    say(f->detail, sizeof f->detail,
        "DMA cost is dominated by fixed per-descriptor overhead below 2 KiB per partition (below 256 B it is "
        "severely overhead-bound; 4 KiB and up saturates) [DMAbw]. These transfers move data for %s where the "
        "same bytes at peak DMA bandwidth take %s.%s", ts, is,
        tiny > 0 ? " Some are under 256 B per partition." : "");
    ev(f, "transfers", NK_UNIT_COUNT, l.n);
    ev(f, "descriptors", NK_UNIT_COUNT, ndesc);
    ev(f, "avg_descriptor", NK_UNIT_BYTES, avg);
    ev(f, "bytes", NK_UNIT_BYTES, bytes);
    ev(f, "moving", NK_UNIT_NS, t);
    ev(f, "at_peak", NK_UNIT_NS, ideal);
    rc = involve(ins, f, l.v, l.n);
    say(f->suggestion, sizeof f->suggestion, "%s",
        strided > 0 ? "The HBM side is strided, so each partition's data arrives in small contiguous pieces: lay "
                      "the tensor out (or choose the tiling) so each partition reads one contiguous run of at least "
                      "2 KiB, ideally 4 KiB or more."
                    : "Move at least 2 KiB per partition per transfer, ideally 4 KiB or more: widen the tiles "
                      "along the free axis (for example [128, 512] float32 or [128, 1024] bfloat16) and load "
                      "several small tensors' rows in one transfer.");
    say_more(f, " Estimate, not simulated (the change is to the kernel's tiling or layout): the time at stake is "
             "the transfers' time less the same bytes at peak DMA bandwidth.");
    free(l.v);
    return rc;
}

static double engine_ghz(const nk_arch *arch, int engine)
{
    if (!arch)
        return 0;
    switch (engine) {
    case NK_ENGINE_VECTOR: return arch->dve_ghz;
    case NK_ENGINE_SCALAR: return arch->act_ghz;
    case NK_ENGINE_GPSIMD: return arch->pool_ghz;
    default: return 0;
    }
}

static int rule_static_overhead(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    const nk_arch *arch = nk__ins_arch(ins->pr);
    ulist l = {0};
    double busy = 0, ideal = 0, elems = 0;
    int rc = 0;
    for (uint32_t i = 0; !rc && i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        double ghz = engine_ghz(arch, in->engine);
        int64_t nfree = nk__opnd_free_size(p, &in->dst); /* elements streamed: the largest operand */
        for (int k = 0; k < in->nsrc; k++) {
            const nk_opnd *t = nk__src(p, in, k);
            if (t->buf && nk__opnd_free_size(p, t) > nfree)
                nfree = nk__opnd_free_size(p, t);
        }
        if (ghz <= 0 || nfree >= STATIC_FREE_MIN)
            continue;
        busy += a->busy[i];
        ideal += (double)nfree / ghz; /* one element per lane per cycle [A2] */
        elems += (double)nfree;
        rc = ul_push(&l, i);
    }
    double lost = busy - ideal;
    if (rc || !l.n || a->total_ns <= 0 || lost < STATIC_MIN_SHARE * a->total_ns) {
        free(l.v);
        return rc;
    }
    nk_finding *f = add(ins, NK_RULE_STATIC_OVERHEAD, NULL);
    if (!f) {
        free(l.v);
        return NK_ENOMEM;
    }
    f->score_ns = lost;
    rate(f, a->total_ns);
    say(f->title, sizeof f->title, "%u instruction%s on Vector/Scalar/GpSimd process fewer than %d elements "
        "per partition: static overhead dominates", l.n, l.n == 1 ? "" : "s", STATIC_FREE_MIN);
    char b[32], id[32];
    nk__ins_fmt_ns(b, sizeof b, busy);
    nk__ins_fmt_ns(id, sizeof id, ideal);
    say(f->detail, sizeof f->detail,
        "Each Vector/Scalar instruction pays about 100 cycles of fixed cost and at least MIN_II = 64 cycles "
        "[A2][PG][ISA-old]. These instructions average %.1f elements per partition and take %s; streaming "
        "the same elements would take %s.", elems / l.n, b, id);
    ev(f, "instructions", NK_UNIT_COUNT, l.n);
    ev(f, "avg_free_elements", NK_UNIT_COUNT, elems / l.n);
    ev(f, "busy", NK_UNIT_NS, busy);
    ev(f, "streaming", NK_UNIT_NS, ideal);
    rc = involve(ins, f, l.v, l.n);
    say(f->suggestion, sizeof f->suggestion,
        "Give each instruction more work: operate on whole [128, F] tiles with F >= 512 instead of slices or "
        "columns, fold scale and bias into one activation (about 3x faster than separate ops [PG]), and pack "
        "two 64-partition operations into one 128-partition instruction (about 2x [PG]).");
    say_more(f, " Estimate, not simulated (the change is to the kernel's code): the time at stake is their busy "
             "time less streaming their elements.");
    free(l.v);
    return rc;
}

static int rule_matmul(nk_insights *ins, int rule)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    const nk_arch *arch = nk__ins_arch(ins->pr);
    double floor_n = arch && arch->pe_mm_init_cycles > 0 ? arch->pe_mm_init_cycles : 0;
    double fp32x = arch && arch->pe_fp32_factor > 1 ? arch->pe_fp32_factor : 0;
    ulist l = {0};
    double busy = 0, lost = 0, nsum = 0;
    uint32_t nlowered = 0;     /* of them, lowered from a call that is no matmul (a broadcast) */
    const char *lowered = NULL; /* the first such call */
    int rc = 0;
    for (uint32_t i = 0; !rc && i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (in->op != NK_OP_MATMUL)
            continue;
        double n = (double)nk__opnd_free_size(p, &in->src[1]);
        if (rule == NK_RULE_MATMUL_SHORT_MOVING) {
            if (!(n < floor_n))
                continue;
            lost += a->busy[i] * (1 - n / floor_n); /* II ~ max(N, 64) [ISA-old][A2] */
        } else {
            if (fp32x <= 0 || (nk__opnd_dtype(p, &in->src[0]) != NK_F32 && nk__opnd_dtype(p, &in->src[1]) != NK_F32))
                continue;
            lost += a->busy[i] * (1 - 1 / fp32x); /* fp32 about 4x slower [ISA-old][A2] */
        }
        /* nk_matmul, nl.matmul: a matmul the kernel wrote, lowered to nc_matmul */
        const char *from = nk__instr_lowered_from(p, in);
        if (from && !strstr(from, "matmul")) {
            nlowered++;
            lowered = lowered ? lowered : from;
        }
        busy += a->busy[i];
        nsum += n;
        rc = ul_push(&l, i);
    }
    if (rc || !l.n || a->total_ns <= 0 || lost < MIN_SHARE * a->total_ns) {
        free(l.v);
        return rc;
    }
    nk_finding *f = add(ins, rule, NULL);
    if (!f) {
        free(l.v);
        return NK_ENOMEM;
    }
    f->score_ns = lost;
    rate(f, a->total_ns);
    char b[32];
    nk__ins_fmt_ns(b, sizeof b, busy);
    if (rule == NK_RULE_MATMUL_SHORT_MOVING) {
        say(f->title, sizeof f->title, "%u matmul%s with a moving operand of fewer than %.0f columns", l.n,
            l.n == 1 ? "" : "s", floor_n);
        say(f->detail, sizeof f->detail,
            "A MultiplyMoving costs at least %.0f cycles whatever its width [ISA-old][A2]; these matmuls stream "
            "%.1f columns on average and take %s.", floor_n, nsum / l.n, b);
        say(f->suggestion, sizeof f->suggestion,
            "Make the moving operand wider, up to 512 columns (gemm_moving_fmax): batch more columns per "
            "nc_matmul, or swap the operands so the larger free size streams.");
    } else {
        say(f->title, sizeof f->title, "%u matmul%s read float32 operands (quarter speed)", l.n,
            l.n == 1 ? "" : "s");
        say(f->detail, sizeof f->detail,
            "The Tensor engine runs float32 matmuls about %.0fx slower than bfloat16/float16 [ISA-old][A2]; "
            "these take %s.", fp32x, b);
        if (nlowered == l.n)
            say(f->suggestion, sizeof f->suggestion,
                "The kernel wrote no matmul here: %s is carried out as these matmuls (see \"not written\"). "
                "Give it bfloat16 data (cast its source first, nk_copy(nc, x, NK_BF16)) if that precision "
                "suffices; PSUM still accumulates in float32.", lowered);
        else
            say(f->suggestion, sizeof f->suggestion,
                "Cast the operands to bfloat16 before the matmul (nk_copy(nc, x, NK_BF16), or load bfloat16 "
                "data); PSUM still accumulates in float32.%s%s%s", nlowered ? " Some of them are how " : "",
                nlowered ? lowered : "", nlowered ? " is carried out: cast its source instead." : "");
    }
    ev(f, "matmuls", NK_UNIT_COUNT, l.n);
    ev(f, "avg_moving_columns", NK_UNIT_COUNT, nsum / l.n);
    ev(f, "busy", NK_UNIT_NS, busy);
    ev(f, "saving", NK_UNIT_NS, lost);
    say_more(f, " Estimate, not simulated (the change is to the kernel's code): %s.",
             rule == NK_RULE_MATMUL_SHORT_MOVING ? "the matmuls' busy time beyond the columns they stream"
                                                 : "the matmuls' busy time at bfloat16 speed, the casts not counted");
    rc = involve(ins, f, l.v, l.n);
    free(l.v);
    return rc;
}

static int rule_reloaded(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    const nk_timeline *tl = ins->pr->tl;
    for (uint32_t h = 0; h < p->nhbm; h++) {
        uint32_t b = p->hbm_list[h];
        const nk_bufinfo *B = &p->bufs[b];
        ulist l = {0};
        double loaded = 0;
        int rc = 0;
        for (uint32_t i = 0; !rc && i < p->ninstr; i++) {
            const nk_instr *in = &p->instrs[i];
            if (in->op != NK_OP_LOAD || in->src[0].buf != b)
                continue;
            loaded += (double)nk__opnd_numel(p, &in->src[0]) * nk_dtype_size(nk__opnd_dtype(p, &in->src[0]));
            rc = ul_push(&l, i);
        }
        double times = B->bytes > 0 ? loaded / (double)B->bytes : 0;
        double t = rc ? 0 : union_ns(tl, l.v, l.n);
        double lost = times > 0 ? t * (1 - 1 / times) : 0;
        if (rc || times <= RELOAD_MAX || a->total_ns <= 0 || lost < MIN_SHARE * a->total_ns) {
            free(l.v);
            if (rc)
                return rc;
            continue;
        }
        char name[96], label[64];
        if (B->role == NK_ROLE_INPUT && p->in_name && p->in_name[B->index])
            say(name, sizeof name, "input %s", nk__buf_label(p, b, label, sizeof label));
        else if (B->role == NK_ROLE_INPUT)
            say(name, sizeof name, "input %d", B->index);
        else if (B->role == NK_ROLE_OUTPUT)
            say(name, sizeof name, "output %d", B->index);
        else
            say(name, sizeof name, "HBM tensor %u", b);
        char subj[32];
        say(subj, sizeof subj, "hbm%u", b);
        nk_finding *f = add(ins, NK_RULE_TENSOR_RELOADED, subj);
        if (!f) {
            free(l.v);
            return NK_ENOMEM;
        }
        f->score_ns = lost;
        rate(f, a->total_ns);
        char sz[32], ld[32], w[64];
        nk__ins_fmt_bytes(sz, sizeof sz, (double)B->bytes);
        nk__ins_fmt_bytes(ld, sizeof ld, loaded);
        where(p, B->loc, w, sizeof w);
        say(f->title, sizeof f->title, "%s is loaded %.1f times from HBM", name, times);
        say(f->detail, sizeof f->detail,
            "%s (%s, from %s) is read %.1f times over: %s in %u loads. Every extra pass costs HBM bandwidth "
            "and DMA time.", name, sz, w, times, ld, l.n);
        ev(f, "tensor", NK_UNIT_BYTES, (double)B->bytes);
        ev(f, "loaded", NK_UNIT_BYTES, loaded);
        ev(f, "times", NK_UNIT_RATIO, times);
        ev(f, "loads", NK_UNIT_COUNT, l.n);
        ev(f, "load_time", NK_UNIT_NS, t);
        rc = involve(ins, f, l.v, l.n);
        say(f->suggestion, sizeof f->suggestion,
            "Load the reused part once and keep it in SBUF: hoist its load out of the inner loop, or reorder "
            "the loops so the tensor that is reused belongs to the outer loop (%lld bytes per partition of SBUF "
            "are free for kernels on this target).",
            (long long)(nk__ins_arch(ins->pr)->sbuf_partition_bytes - nk__ins_arch(ins->pr)->sbuf_reserved_bytes));
        say_more(f, " Estimate, not simulated (the change is to the kernel's loops): the loads' time beyond one pass.");
        free(l.v);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- serialized tiles: a tile that iteration i+1 overwrites while iteration
 * i still uses it (declared outside the loop, or single-buffered) */

typedef struct tsite {
    uint32_t loc;       /* where the tile was allocated */
    uint32_t buf;       /* one of its buffers */
    uint32_t loop;      /* the loop it serializes */
    int outside, carry;
    uint32_t waits;     /* cross-iteration write-after-read/write dependencies */
    double stall_ns;
    ulist instrs;
} tsite;

static int same_memory(const nk_program *p, const nk_opnd *t, const nk_bufinfo *B)
{
    if (!t->buf || t->buf >= p->nbufs)
        return 0;
    const nk_bufinfo *T = &p->bufs[t->buf];
    return T->mem == B->mem && T->mem != NK_SHARED_HBM && T->addr < B->addr + B->bytes && B->addr < T->addr + T->bytes;
}

/* 1 if instruction j reads (as_write 0) or writes (1) the memory of tile B. */
static int touches(const nk_program *p, uint32_t j, const nk_bufinfo *B, int as_write)
{
    const nk_instr *in = &p->instrs[j];
    if (as_write)
        return same_memory(p, &in->dst, B) || same_memory(p, nk__dst2(p, in), B);
    for (int k = 0; k < in->nsrc; k++)
        if (same_memory(p, nk__src(p, in, k), B))
            return 1;
    return (in->flags & NK_IF_ACCUMULATE) && same_memory(p, &in->dst, B);
}

static tsite *site_of(tsite **sites, uint32_t *n, uint32_t *cap, uint32_t loc, uint32_t buf, uint32_t loop,
                      int outside)
{
    for (uint32_t k = 0; k < *n; k++)
        if ((*sites)[k].loc == loc && (*sites)[k].loop == loop)
            return &(*sites)[k];
    if (*n == *cap) {
        uint32_t c = *cap ? *cap * 2 : 8;
        tsite *s = realloc(*sites, c * sizeof *s);
        if (!s)
            return NULL;
        *sites = s;
        *cap = c;
    }
    tsite *s = &(*sites)[(*n)++];
    memset(s, 0, sizeof *s);
    s->loc = loc;
    s->buf = buf;
    s->loop = loop;
    s->outside = outside;
    return s;
}

static int earlier_iter(const nk_instr *j, const nk_instr *i) { return j->loop == i->loop && j->iter < i->iter; }

/* Records instruction i's cross-iteration waits on the memory of the tile it
 * writes through t. */
static int scan_write(nk_insights *ins, uint32_t i, const nk_opnd *t, tsite **sites, uint32_t *n, uint32_t *cap)
{
    const nk_program *p = ins->pr->prog;
    const nk_timeline *tl = ins->pr->tl;
    const nk_instr *in = &p->instrs[i];
    if (!t->buf || t->buf >= p->nbufs || nk__opnd_mem(p, t) == NK_SHARED_HBM)
        return 0;
    const nk_bufinfo *B = &p->bufs[t->buf];
    int outside = B->loop != in->loop;
    if (!outside && B->nslots > 1)
        return 0;
    double flagged = -1, other = ins->a.prev_same[i] != NONE ? tl->instr_end[ins->a.prev_same[i]] : 0;
    uint32_t waits = 0;
    for (uint32_t k = 0; k < in->ndep; k++) {
        uint32_t j = p->deps[in->dep_off + k];
        const nk_instr *jn = &p->instrs[j];
        if (earlier_iter(jn, in) && (touches(p, j, B, 0) || touches(p, j, B, 1))) {
            waits++;
            flagged = fmax(flagged, tl->instr_end[j]);
        } else {
            other = fmax(other, tl->instr_end[j]);
        }
    }
    if (!waits)
        return 0;
    tsite *s = site_of(sites, n, cap, B->loc, t->buf, in->loop, outside);
    if (!s)
        return NK_ENOMEM;
    s->waits += waits;
    s->stall_ns += fmax(0, fmin(tl->instr_start[i], flagged) - other);
    return ul_push(&s->instrs, i);
}

/* A read of a tile declared outside the loop that depends on a write of it
 * in an earlier iteration carries a value between iterations: that tile is
 * meant to persist. */
static void scan_carry(const nk_program *p, uint32_t i, tsite *sites, uint32_t n)
{
    const nk_instr *in = &p->instrs[i];
    for (uint32_t s = 0; s < n; s++) {
        if (!sites[s].outside || sites[s].loop != in->loop || sites[s].carry)
            continue;
        const nk_bufinfo *B = &p->bufs[sites[s].buf];
        if (!touches(p, i, B, 0))
            continue;
        for (uint32_t k = 0; k < in->ndep && !sites[s].carry; k++) {
            uint32_t j = p->deps[in->dep_off + k];
            sites[s].carry = earlier_iter(&p->instrs[j], in) && touches(p, j, B, 1);
        }
    }
}

static int report_site(nk_insights *ins, tsite *s)
{
    const nk_program *p = ins->pr->prog;
    const nk_ins_analysis *a = &ins->a;
    char subj[48], w[64], lw[64];
    where(p, s->loc, w, sizeof w);
    say(subj, sizeof subj, "%s", w);
    nk_finding *f = add(ins, NK_RULE_SERIALIZED_TILE, subj);
    if (!f)
        return NK_ENOMEM;
    int kind = ADV_REWRITE;
    const nk_loopinfo *L = s->loop && s->loop <= p->nloops ? &p->loops[s->loop - 1] : NULL;
    if (L)
        where(p, L->loc, lw, sizeof lw);
    else
        say(lw, sizeof lw, "?");
    f->score_ns = s->stall_ns;
    rate(f, a->total_ns);
    char st[32];
    nk__ins_fmt_ns(st, sizeof st, s->stall_ns);
    if (s->outside) {
        say(f->title, sizeof f->title, "The tile declared at %s, outside the loop at %s, serializes its "
            "iterations", w, lw);
        say(f->suggestion, sizeof f->suggestion,
            "Declare the tile inside the loop body (at its first use): an NK_AFFINE_RANGE then gives it "
            "several buffers, so iteration i+1 writes a different buffer while iteration i still reads its "
            "own [PG][ALLOC].");
    } else {
        say(f->title, sizeof f->title, "The single-buffered tile at %s serializes the loop at %s", w, lw);
        kind = pipeline_advice(p, s->loop, f->suggestion, sizeof f->suggestion);
    }
    say(f->detail, sizeof f->detail,
        "Each iteration overwrites the same memory, so its writes wait for the previous iteration's reads "
        "and writes to finish (%u write-after-read/write waits across iterations); the engines stalled %s "
        "on them.", s->waits, st);
    ev(f, "waits", NK_UNIT_COUNT, s->waits);
    ev(f, "stall", NK_UNIT_NS, s->stall_ns);
    if (L)
        ev(f, "iterations", NK_UNIT_COUNT, (double)L->trip);
    int rc = involve(ins, f, s->instrs.v, s->instrs.n);
    if (f->nlines == NK_INS_MAX_LINES)
        f->nlines--;
    line_add(p, f, s->loc);
    if (!rc && advice_tested(ins, f, kind, s->loop))
        drop_last(ins);
    return rc;
}

static int rule_serialized_tile(nk_insights *ins)
{
    const nk_program *p = ins->pr->prog;
    tsite *sites = NULL;
    uint32_t n = 0, cap = 0;
    int rc = 0;
    for (uint32_t i = 0; !rc && i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (!in->loop || (in->flags & NK_IF_ACCUMULATE))
            continue;
        rc = scan_write(ins, i, &in->dst, &sites, &n, &cap);
        if (!rc && nk__dst2(p, in)->buf)
            rc = scan_write(ins, i, nk__dst2(p, in), &sites, &n, &cap);
    }
    for (uint32_t i = 0; !rc && n && i < p->ninstr; i++)
        if (p->instrs[i].loop)
            scan_carry(p, i, sites, n);
    for (uint32_t s = 0; s < n; s++) {
        if (!rc && !sites[s].carry && sites[s].stall_ns >= MIN_SHARE * ins->a.total_ns && ins->a.total_ns > 0)
            rc = report_site(ins, &sites[s]);
        free(sites[s].instrs.v);
    }
    free(sites);
    return rc;
}

/* ---- partitions: instructions on tiles of fewer partitions than the
 * engines have lanes. The model's compute cost does not depend on the
 * partition count (src/timing/cost.c: Vector/Scalar/GpSimd cost follows the
 * free size N [ISA-old]), so the saving of using more partitions is in the
 * instructions: a source line's k instructions over P partitions in all need
 * only ceil(P / 128) instructions of the same cost on full tiles (the
 * estimate; an edge tile's leftover rows are no loss). A DMA spreads its
 * partitions over the DMA engines (cost.c's DMA plan: min(partitions,
 * engines) engines), so only a transfer of fewer partitions than DMA engines
 * leaves engines idle: its data-moving time x (1 - partitions / engines).
 * Matmuls are not judged: a contraction over fewer than 128 rows is often
 * the algorithm itself (a broadcast through a row of ones). */

/* Judgement call: worth a finding when such instructions take at least 10%
 * of their engine's busy time. */
#define PARTITION_ENGINE_SHARE 0.10

/* Partitions an instruction works on (0: not judged). */
static int64_t partitions_used(const nk_program *p, const nk_instr *in)
{
    const nk_opnd *t = NULL;
    if (in->op == NK_OP_LOAD)
        t = &in->dst;
    else if (in->op == NK_OP_STORE)
        t = &in->src[0];
    else if (in->engine == NK_ENGINE_TENSOR || in->engine == NK_ENGINE_DMA)
        return 0;
    else if (in->engine <= NK_ENGINE_GPSIMD)
        t = in->dst.buf ? &in->dst : in->nsrc ? &in->src[0] : NULL;
    if (!t || !t->buf || nk__opnd_mem(p, t) == NK_SHARED_HBM || nk__opnd_ndim(p, t) < 1)
        return 0;
    return nk__opnd_shape(p, t)[0];
}

typedef struct pline {
    double parts, busy, path;
    uint32_t n;
} pline;

static int rule_partitions(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    const nk_timeline *tl = ins->pr->tl;
    const nk_arch *arch = nk__ins_arch(ins->pr);
    if (!arch || a->total_ns <= 0 || arch->partitions <= 0)
        return 0;
    double busy[NK_INS_ROWS] = {0}, under[NK_INS_ROWS] = {0}, lost[NK_INS_ROWS] = {0}, parts[NK_INS_ROWS] = {0};
    double path[NK_INS_ROWS] = {0}; /* the part of lost on the critical path: what the kernel could gain */
    uint32_t count[NK_INS_ROWS] = {0};
    /* compute: per engine and source line (loc), the partitions and busy time of under-full instructions */
    pline *pl = calloc((size_t)(p->nlocs ? p->nlocs : 1) * (NK_ENGINE_GPSIMD + 1), sizeof *pl);
    if (!pl)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        int e = in->engine;
        if (e >= NK_INS_ROWS)
            continue;
        busy[e] += a->busy[i];
        int64_t np = partitions_used(p, in);
        int64_t lanes = e == NK_ENGINE_DMA ? arch->dma_engines : arch->partitions;
        if (np <= 0 || lanes <= 0 || np >= lanes)
            continue;
        under[e] += a->busy[i];
        parts[e] += (double)np;
        count[e]++;
        if (e == NK_ENGINE_DMA) {
            double moving = a->xfer_first[i] >= 0 ? tl->instr_end[i] - a->xfer_first[i] : 0;
            double x = moving * (1 - (double)np / (double)lanes);
            lost[e] += x;
            path[e] += a->busy[i] > 0 ? x * fmin(1, a->path_ns[i] / a->busy[i]) : 0;
        } else if (in->loc < p->nlocs) {
            pline *x = &pl[(size_t)in->loc * (NK_ENGINE_GPSIMD + 1) + (size_t)e];
            x->parts += (double)np;
            x->busy += a->busy[i];
            x->path += a->path_ns[i];
            x->n++;
        }
    }
    for (size_t k = 0; k < (size_t)p->nlocs * (NK_ENGINE_GPSIMD + 1); k++)
        if (pl[k].n) {
            double need = ceil(pl[k].parts / arch->partitions);
            lost[k % (NK_ENGINE_GPSIMD + 1)] += pl[k].busy * (1 - need / pl[k].n);
            path[k % (NK_ENGINE_GPSIMD + 1)] += pl[k].path * (1 - need / pl[k].n);
        }
    free(pl);
    for (int e = 0; e < NK_INS_ROWS; e++) {
        if (!count[e] || under[e] < PARTITION_ENGINE_SHARE * busy[e] || path[e] < STRUCTURAL_MIN_SHARE * a->total_ns)
            continue;
        ulist l = {0};
        int rc = 0;
        int64_t lanes = e == NK_ENGINE_DMA ? arch->dma_engines : arch->partitions;
        for (uint32_t i = 0; !rc && i < p->ninstr; i++) {
            int64_t np = p->instrs[i].engine == e ? partitions_used(p, &p->instrs[i]) : 0;
            if (np > 0 && np < lanes)
                rc = ul_push(&l, i);
        }
        nk_finding *f = rc ? NULL : add(ins, NK_RULE_PARTITIONS, nk_engine_name((nk_engine)e));
        if (!f) {
            free(l.v);
            return NK_ENOMEM;
        }
        f->score_ns = path[e];
        rate(f, a->total_ns);
        double avg = parts[e] / count[e];
        char u[32], b[32], c[32];
        nk__ins_fmt_ns(u, sizeof u, under[e]);
        nk__ins_fmt_ns(b, sizeof b, lost[e]);
        nk__ins_fmt_ns(c, sizeof c, path[e]);
        if (e == NK_ENGINE_DMA) {
            say(f->title, sizeof f->title, "%u load/store%s spread over %.1f partitions on average, fewer than the "
                "%lld DMA engines", count[e], count[e] == 1 ? "" : "s", avg, (long long)lanes);
            say(f->detail, sizeof f->detail,
                "A DMA spreads its partitions over the DMA engines, so a transfer of fewer partitions than engines "
                "leaves some idle [DMAbw]. These take %s from trigger to completion, %.0f%% of the DMA queues' "
                "busy time; moving their data on all %lld engines would take about %s less, %s of it on the "
                "critical path.", u, 100 * under[e] / busy[e], (long long)lanes, b, c);
            say(f->suggestion, sizeof f->suggestion,
                "Put the data on more partitions: tile the tensor so each transfer covers at least %lld rows "
                "(partitions), or load several small tensors side by side into one tile. Estimate, not "
                "simulated (the change is to the kernel's tiling): the data-moving time the idle engines would "
                "take over, counted where it is on the critical path.", (long long)lanes);
        } else {
            say(f->title, sizeof f->title, "%u %s instruction%s work on %.1f of the %lld partitions on average",
                count[e], nk_engine_name((nk_engine)e), count[e] == 1 ? "" : "s", avg, (long long)lanes);
            say(f->detail, sizeof f->detail,
                "An instruction costs the same whatever its partition count (the cost follows the free size "
                "[ISA-old]), so lanes left idle are time lost. These take %s, %.0f%% of the %s engine's busy "
                "time; the same data on full %lld-partition tiles needs fewer instructions of each line: about "
                "%s less, %s of it on the critical path.", u, 100 * under[e] / busy[e], nk_engine_name((nk_engine)e),
                (long long)lanes, b, c);
            say(f->suggestion, sizeof f->suggestion,
                "Use all %lld partitions: give each instruction a full tile (two %.0f-partition pieces in one "
                "instruction, or independent rows batched into one tile), or put the longer axis on the "
                "partitions. Estimate, not simulated (the change is to the kernel's tiling): each line's busy "
                "time beyond ceil(partitions / %lld) instructions, counted where it is on the critical path.", (long long)lanes, avg, (long long)lanes);
        }
        ev(f, "instructions", NK_UNIT_COUNT, count[e]);
        ev(f, "avg_partitions", NK_UNIT_COUNT, avg);
        ev(f, "lanes", NK_UNIT_COUNT, (double)lanes);
        ev(f, "busy", NK_UNIT_NS, under[e]);
        ev(f, "engine_share", NK_UNIT_PERCENT, 100 * under[e] / busy[e]);
        ev(f, "engine_saving", NK_UNIT_NS, lost[e]);
        ev(f, "path_saving", NK_UNIT_NS, path[e]);
        rc = involve(ins, f, l.v, l.n);
        free(l.v);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- PSUM banks: accumulation groups waiting for a PSUM buffer an earlier
 * iteration still uses, when the 8 banks of 2 KiB per partition [A2] leave
 * no room for more buffers (or the tile has fewer than the default). */

static int rule_psum_banks(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    const nk_timeline *tl = ins->pr->tl;
    const nk_arch *arch = nk__ins_arch(ins->pr);
    if (!arch || arch->psum_bank_bytes <= 0 || a->total_ns <= 0)
        return 0;
    int cap = arch->psum_banks > 0 ? arch->psum_banks : (int)(arch->psum_partition_bytes / arch->psum_bank_bytes);
    /* the stall: writes that start a PSUM tile wait for an earlier iteration's use of its memory */
    ulist l = {0};
    double stall = 0;
    uint32_t waits = 0, loop = 0, tile = 0;
    int rc = 0;
    for (uint32_t i = 0; !rc && i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (!in->loop || nk__opnd_mem(p, &in->dst) != NK_PSUM || !in->dst.buf || in->dst.buf >= p->nbufs ||
            (in->flags & NK_IF_ACCUMULATE))
            continue;
        const nk_bufinfo *B = &p->bufs[in->dst.buf];
        double flagged = -1, other = a->prev_same[i] != NONE ? tl->instr_end[a->prev_same[i]] : 0;
        uint32_t w = 0;
        for (uint32_t k = 0; k < in->ndep; k++) {
            uint32_t j = p->deps[in->dep_off + k];
            if (earlier_iter(&p->instrs[j], in) && (touches(p, j, B, 0) || touches(p, j, B, 1))) {
                w++;
                flagged = fmax(flagged, tl->instr_end[j]);
            } else {
                other = fmax(other, tl->instr_end[j]);
            }
        }
        /* to the end, not the start: a matmul's LoadStationary starts before the moving operand may */
        double s = w && a->path_ns[i] > 0 ? fmax(0, fmin(tl->instr_end[i], flagged) - other) : 0;
        if (s <= 0)
            continue;
        if (!l.n) {
            loop = in->loop;
            tile = in->dst.buf;
        }
        stall += s;
        waits += w;
        rc = ul_push(&l, i);
    }
    if (rc || !l.n || stall < MIN_SHARE * a->total_ns) {
        free(l.v);
        return rc;
    }
    rc = 0;
    /* banks allocated at the high-water mark (the allocator's PSUM peak) */
    int peak = (int)((p->psum_peak + arch->psum_bank_bytes - 1) / arch->psum_bank_bytes);
    const nk_bufinfo *T = &p->bufs[tile];
    const nk_loopinfo *L = loop && loop <= p->nloops ? &p->loops[loop - 1] : NULL;
    int tile_banks = (int)((T->bytes + arch->psum_bank_bytes - 1) / arch->psum_bank_bytes);
    int room = peak + tile_banks <= cap;   /* another buffer of the tile would fit */
    int fewer = L && L->bufs < p->bufs_default; /* lowered to fit (or chosen by the kernel) */
    char subj[64], w[64], lw[64];
    where(p, T->loc, w, sizeof w);
    say(subj, sizeof subj, "%s", w);
    nk_finding *f = add(ins, NK_RULE_PSUM_BANKS, subj);
    if (!f) {
        free(l.v);
        return NK_ENOMEM;
    }
    if (L)
        where(p, L->loc, lw, sizeof lw);
    else
        say(lw, sizeof lw, "?");
    f->score_ns = stall;
    rate(f, a->total_ns);
    char st[32];
    nk__ins_fmt_ns(st, sizeof st, stall);
    if (room && !fewer)
        say(f->title, sizeof f->title, "PSUM buffers: the accumulation groups into the tile at %s wait for a free "
            "buffer (%d of %d banks allocated at the peak)", w, peak, cap);
    else
        say(f->title, sizeof f->title, "PSUM bank pressure: the accumulation groups into the tile at %s wait for "
            "a free PSUM buffer (%d of %d banks allocated at the peak)", w, peak, cap);
    say(f->detail, sizeof f->detail,
        "PSUM has %d banks of %lld bytes per partition [A2]; the tile at %s takes %d bank%s per buffer and has "
        "%d buffer%s in the loop at %s; the program's PSUM peak is %d bank%s. On the critical path, %u writes "
        "that start an accumulation group waited for an earlier iteration's use of the same PSUM memory (%u "
        "waits): %s in all.",
        cap, (long long)arch->psum_bank_bytes, w, tile_banks, tile_banks == 1 ? "" : "s", T->nslots,
        T->nslots == 1 ? "" : "s", lw, peak, peak == 1 ? "" : "s", l.n, waits, st);
    ev(f, "stall", NK_UNIT_NS, stall);
    ev(f, "waits", NK_UNIT_COUNT, waits);
    ev(f, "peak_banks", NK_UNIT_COUNT, peak);
    ev(f, "banks", NK_UNIT_COUNT, cap);
    ev(f, "tile_banks", NK_UNIT_COUNT, tile_banks);
    ev(f, "tile_buffers", NK_UNIT_COUNT, T->nslots);
    rc = involve(ins, f, l.v, l.n);
    free(l.v);
    if (f->nlines == NK_INS_MAX_LINES)
        f->nlines--;
    line_add(p, f, T->loc);
    if (room) {
        say(f->suggestion, sizeof f->suggestion,
            "Give the PSUM tile more buffers: %d bank%s per buffer still fit beside the %d in use at the peak "
            "(NK_AFFINE_RANGE_BUFS on the loop at %s, or nk_options.default_bufs).", tile_banks,
            tile_banks == 1 ? "" : "s", peak, lw);
        if (!rc && advice_tested(ins, f, ADV_BUFFERS, loop))
            drop_last(ins);
    } else {
        say(f->suggestion, sizeof f->suggestion,
            "Free banks sooner: copy each finished accumulation out of PSUM (to SBUF) right after its last "
            "matmul, keep fewer PSUM tiles live at once (one bank of 512 float32 per partition per tile, [128, "
            "512]), or split a multi-bank tile so its parts are released one by one; then the loop's buffers "
            "fit the %d banks.", cap);
        advice_tested(ins, f, ADV_REWRITE, loop);
    }
    return rc;
}

/* ---- good news */

static int rule_good(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    if (a->total_ns <= 0)
        return 0;
    int best = 0;
    for (int e = 1; e <= NK_ENGINE_GPSIMD; e++)
        if (a->active_ns[e] > a->active_ns[best])
            best = e;
    double frac = a->active_ns[best] / a->total_ns;
    if (frac >= GOOD_ENGINE_ACTIVE) {
        nk_finding *f = add(ins, NK_RULE_COMPUTE_BOUND, nk_engine_name((nk_engine)best));
        if (!f)
            return NK_ENOMEM;
        f->severity = NK_SEV_GOOD;
        say(f->title, sizeof f->title, "Compute-bound: the %s engine is busy %.1f%% of the time",
            nk_engine_name((nk_engine)best), 100 * frac);
        say(f->detail, sizeof f->detail, "The busiest engine is at or above the 90%% a compute-bound kernel "
            "should reach [PG]. Further gains come from doing less work on it.");
        say(f->suggestion, sizeof f->suggestion, "Look for work to move to an idle engine, fuse instructions, "
            "or use cheaper dtypes (bfloat16, fp8) on the busiest engine.");
        ev(f, "active", NK_UNIT_NS, a->active_ns[best]);
        ev(f, "active", NK_UNIT_PERCENT, 100 * frac);
        ulist l = {0};
        int rc = 0;
        for (uint32_t i = 0; !rc && i < p->ninstr; i++)
            if (p->instrs[i].engine == best)
                rc = ul_push(&l, i);
        if (!rc)
            rc = involve(ins, f, l.v, l.n);
        free(l.v);
        if (rc)
            return rc;
    }
    if (a->dma_bw_frac >= GOOD_DMA_BW) {
        nk_finding *f = add(ins, NK_RULE_MEMORY_BOUND, NULL);
        if (!f)
            return NK_ENOMEM;
        f->severity = NK_SEV_GOOD;
        say(f->title, sizeof f->title, "Memory-bound: DMA moves data at %.0f%% of the target's bandwidth",
            100 * a->dma_bw_frac);
        say(f->detail, sizeof f->detail, "%.0f bytes in the kernel's time is at or above the 60%% of DMA "
            "bandwidth a memory-bound kernel should reach [PG].", a->dma_bytes);
        say(f->suggestion, sizeof f->suggestion, "Further gains need fewer bytes: keep reused data in SBUF, "
            "use narrower dtypes, or fuse this kernel with its neighbours to avoid HBM round trips.");
        ev(f, "bytes", NK_UNIT_BYTES, a->dma_bytes);
        ev(f, "bandwidth", NK_UNIT_PERCENT, 100 * a->dma_bw_frac);
    }
    return 0;
}

/* ---- ranking */

static int cmp_finding(const void *x, const void *y)
{
    const nk_finding *a = x, *b = y;
    int pa = a->severity > NK_SEV_GOOD, pb = b->severity > NK_SEV_GOOD;
    if (pa != pb)
        return pa ? -1 : 1;
    if (a->score_ns != b->score_ns)
        return a->score_ns > b->score_ns ? -1 : 1;
    return strcmp(a->key, b->key);
}

/* ---- spills: SBUF ran short with one buffer per tile and the compile step
 * moved tiles to HBM and back (docs/compile.md) */

static int rule_spill(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    ulist l = {0};
    double stored = 0, reloaded = 0;
    uint32_t tiles = 0;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (!(in->flags & NK_IF_SPILL))
            continue;
        const nk_opnd *t = in->op == NK_OP_STORE ? &in->dst : &in->src[0];
        double bytes = (double)nk__opnd_numel(p, t) * nk_dtype_size((nk_dtype)nk__opnd_dtype(p, t));
        if (in->op == NK_OP_STORE) {
            stored += bytes;
            tiles++;
        } else {
            reloaded += bytes;
        }
        if (ul_push(&l, i)) {
            free(l.v);
            return NK_ENOMEM;
        }
    }
    if (!l.n) {
        free(l.v);
        return 0;
    }
    nk_finding *f = add(ins, NK_RULE_SPILL, NULL);
    if (!f) {
        free(l.v);
        return NK_ENOMEM;
    }
    double t = xfer_union_ns(ins->pr, l.v, l.n);
    f->score_ns = t;
    rate(f, a->total_ns);
    char st[32], rl[32];
    nk__ins_fmt_bytes(st, sizeof st, stored);
    nk__ins_fmt_bytes(rl, sizeof rl, reloaded);
    const nk_arch *arch = nk__ins_arch(ins->pr);
    long long cap = (long long)(arch->sbuf_partition_bytes - arch->sbuf_reserved_bytes);
    say(f->title, sizeof f->title, "SBUF ran short: %u tile%s spilled to HBM and reloaded", tiles,
        tiles == 1 ? "" : "s");
    say(f->detail, sizeof f->detail,
        "With one buffer per tile the live tiles need more than the %lld bytes per partition of SBUF kernels "
        "may use, so the compile step stored %s to HBM and loaded %s back. Those DMAs move data for %.2f us.",
        cap, st, rl, t / 1000);
    ev(f, "tiles", NK_UNIT_COUNT, tiles);
    ev(f, "stored", NK_UNIT_BYTES, stored);
    ev(f, "reloaded", NK_UNIT_BYTES, reloaded);
    ev(f, "spill_time", NK_UNIT_NS, t);
    int rc = involve(ins, f, l.v, l.n);
    say(f->suggestion, sizeof f->suggestion,
        "Keep fewer bytes live at once: tile the free axis more finely, use a narrower dtype (bfloat16) for "
        "tiles that are only moved, or end a tile's use before the next large one is loaded (the spilled "
        "tiles' lines are listed).");
    say_more(f, " Estimate, not simulated (the change is to the kernel's tiles): the time the spill DMAs move data.");
    free(l.v);
    return rc;
}

/* ---- sequences: data a kernel stores to HBM only for the next kernel to
 * load it back (the round trip NKI's kernel boundary requires; nk_launch can
 * hand the tile on chip) */

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* Two whole-tile views of the same shape and dtype (a store of tile a, a
 * load into tile b): the load's result can be a itself. */
static int whole_same(const nk_program *p, const nk_opnd *ao, const nk_opnd *bo)
{
    nk_tensor at = nk__opnd_tensor(p, ao), bt = nk__opnd_tensor(p, bo);
    const nk_tensor *a = &at, *b = &bt;
    if (a->ndim != b->ndim || a->dtype != b->dtype || a->off || b->off || a->part0 || b->part0)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] || a->stride[d] != b->stride[d])
            return 0;
    return p->bufs[a->buf].bytes == p->bufs[b->buf].bytes;
}

/* The modelled saving of handing tiles on chip: the program re-timed with
 * each store-and-load-back pair removed and the load's readers reading the
 * stored tile (timing only; pairs whose views are not whole tiles of one
 * shape are kept). -1 when no pair can be removed. */
static double handoff_saving(const nk_profile *pr, const uint32_t *st, const uint32_t *ld, uint32_t n)
{
    const nk_program *p = pr->prog;
    nk_program *q = NULL;
    if (nk__program_copy(p, &q))
        return -1;
    uint8_t *drop = calloc(q->ninstr ? q->ninstr : 1, 1);
    double saving = -1;
    uint32_t removed = 0;
    if (!drop)
        goto out;
    for (uint32_t k = 0; k < n; k++) {
        nk_instr *s = &q->instrs[st[k]], *l = &q->instrs[ld[k]];
        if (!whole_same(q, &s->src[0], &l->dst))
            continue;
        uint32_t from = l->dst.buf, to = s->src[0].buf;
        for (uint32_t i = ld[k] + 1; i < q->ninstr; i++) {
            nk_instr *in = &q->instrs[i];
            nk_opnd *ts[5];
            nk__operands_w(q, in, ts);
            for (int t = 0; t < 5; t++)
                if (ts[t] && ts[t]->buf == from)
                    ts[t]->buf = to;
        }
        drop[st[k]] = drop[ld[k]] = 1;
        removed++;
    }
    if (!removed)
        goto out;
    uint32_t m = 0;
    for (uint32_t i = 0; i < q->ninstr; i++)
        if (!drop[i])
            q->instrs[m++] = q->instrs[i];
    q->ninstr = m;
    nk_timeline *tl = NULL;
    if (!nk__schedule(q, NK_SCHED_TRACE_ORDER) && !nk__time_program(q, &pr->arch, &tl))
        saving = pr->tl->total_ns - tl->total_ns;
    nk__timeline_free(tl);
out:
    free(drop);
    nk_program_free(q);
    return saving;
}

static int rule_hbm_round_trip(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    if (p->nseg < 2)
        return 0;
    ulist l = {0}, pst = {0}, pld = {0};
    double stored = 0;
    uint32_t ka = 0, kb = 0, pairs = 0;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *st = &p->instrs[i];
        if (st->op != NK_OP_STORE || (st->flags & NK_IF_SPILL) || nk__opnd_mem(p, &st->dst) != NK_SHARED_HBM)
            continue;
        nk__region w = nk__region_of(p, &st->dst);
        int found = 0;
        for (uint32_t j = i + 1; j < p->ninstr; j++) {
            const nk_instr *ld = &p->instrs[j];
            if (ld->seg == st->seg || ld->op != NK_OP_LOAD || ld->src[0].buf != st->dst.buf)
                continue;
            nk__region r = nk__region_of(p, &ld->src[0]);
            if (!nk__regions_overlap(&w, &r))
                continue;
            if (!pairs++) {
                ka = st->seg;
                kb = ld->seg;
            }
            if (ul_push(&l, j) || ul_push(&pst, i) || ul_push(&pld, j)) {
                free(l.v);
                free(pst.v);
                free(pld.v);
                return NK_ENOMEM;
            }
            found = 1;
        }
        if (found) {
            stored += (double)nk__opnd_numel(p, &st->dst) * nk_dtype_size((nk_dtype)nk__opnd_dtype(p, &st->dst));
            if (ul_push(&l, i)) {
                free(l.v);
                return NK_ENOMEM;
            }
        }
    }
    if (!pairs) {
        free(l.v);
        return 0;
    }
    double saved = handoff_saving(ins->pr, pst.v, pld.v, pst.n);
    free(pst.v);
    free(pld.v);
    nk_finding *f = add(ins, NK_RULE_HBM_ROUND_TRIP, p->seg_name[ka]);
    if (!f) {
        free(l.v);
        return NK_ENOMEM;
    }
    qsort(l.v, l.n, sizeof *l.v, cmp_u32);
    double t = union_ns(ins->pr->tl, l.v, l.n); /* issue to completion: the start latency included */
    f->score_ns = t;
    rate(f, a->total_ns);
    char b[32];
    nk__ins_fmt_bytes(b, sizeof b, stored);
    say(f->title, sizeof f->title, "%s go to HBM and straight back between kernels %s and %s", b, p->seg_name[ka],
        p->seg_name[kb]);
    say(f->detail, sizeof f->detail,
        "Kernel %s stores %s to HBM that kernel %s%s loads back: %u load%s of data the first kernel had on chip. "
        "Those stores and loads, from issue to completion, span %.2f us of the timeline.",
        p->seg_name[ka], b, p->seg_name[kb], pairs > 1 ? " (and others)" : "", pairs, pairs == 1 ? "" : "s",
        t / 1000);
    ev(f, "bytes", NK_UNIT_BYTES, stored);
    ev(f, "loads", NK_UNIT_COUNT, pairs);
    ev(f, "round_trip_time", NK_UNIT_NS, t);
    if (saved >= 0) {
        ev(f, "simulated_saving", NK_UNIT_NS, saved);
        f->score_ns = saved;
        rate(f, a->total_ns);
    }
    int rc = involve(ins, f, l.v, l.n);
    char sv[96] = "";
    if (saved >= 0)
        say(sv, sizeof sv, " Re-timed without the round trip, the kernel takes %.2f us less (%.1f%%).", saved / 1000,
            a->total_ns > 0 ? 100 * saved / a->total_ns : 0);
    say(f->suggestion, sizeof f->suggestion,
        "Hand the tile on chip: return the SBUF tile from %s (nk_return / Python return of the tile) instead of "
        "storing it, and pass it to %s, whose load of an on-chip tile is then the tile itself.%s", p->seg_name[ka],
        p->seg_name[kb], sv);
    free(l.v);
    return rc;
}
/* ---- simulated savings: the program, or with a re-trace the kernel,
 * re-timed with the change a finding suggests */

/* Judgement call: a simulated change is worth suggesting from 1% of the
 * device time. */
#define SIM_MIN_SHARE 0.01
/* Judgement call: an instruction is small below 1 us (a few times the ~100
 * cycles of static overhead and the ~50 ns semaphore hand-off). */
#define SMALL_INSTR_NS 1000.0
/* Judgement call: a ping-pong needs at least 4 hand-offs on the path. */
#define PING_PONG_MIN 4

/* The fastest variant the profile's program (list schedule) or, with a
 * re-trace, the kernel (more buffers per tile in affine loops, list
 * schedule) can be given; computed once. sim_bufs 0: the buffers stay. A
 * variant that cannot be timed is not chosen; running out of memory is
 * kept in sim_rc, which the build returns (the findings would depend on
 * the memory left). */
static void simulate(nk_insights *ins)
{
    if (ins->sim_done)
        return;
    ins->sim_done = 1;
    const nk_profile *pr = ins->pr;
    double base = pr->tl->total_ns, l = -1;
    ins->sim_ns = base;
    ins->sim_bufs = 0;
    /* a program list-scheduled for the table it was timed on has the list
     * schedule already: scheduling it again can only shuffle ties, which is
     * nothing to suggest (and at a million instructions half the analysis) */
    int listed = pr->prog->sched == NK_SCHED_LIST && !strcmp(pr->tl->target, pr->prog->target);
    int rc = listed ? NK_EINVAL : nk__schedule_total(pr->prog, NK_SCHED_LIST, &pr->arch, &l);
    if (rc == NK_ENOMEM) {
        ins->sim_rc = rc;
        return;
    }
    if (!rc && l >= 0 && l < ins->sim_ns * (1 - 1e-9))
        ins->sim_ns = l;
    if (!ins->rt || !ins->rt->retime || !pr->prog->nloops)
        return;
    ins->sim_retraced = 1;
    int cur = pr->prog->bufs_default > 0 ? pr->prog->bufs_default : 2;
    int top = cur + 2 > 4 ? cur + 2 : 4;
    if (top > NK_IO_MAX_LOOP_BUFS)
        top = NK_IO_MAX_LOOP_BUFS;
    for (int b = cur + 1; b <= top; b++) {
        double t = -1;
        rc = ins->rt->retime(ins->rt->ctx, b, NK_SCHED_LIST, &t);
        if (rc == NK_ENOMEM) {
            ins->sim_rc = rc;
            return;
        }
        /* a buffer more is worth it only when it saves a further 1% */
        if (!rc && t >= 0 && t < ins->sim_ns - SIM_MIN_SHARE * base) {
            ins->sim_ns = t;
            ins->sim_bufs = b;
        }
    }
}

/* "4 buffers per tile and the list schedule: 29.82 -> 24.06 us (-19.3%)" */
static void sim_say(const nk_insights *ins, char *buf, size_t n)
{
    double base = ins->pr->tl->total_ns, t = ins->sim_ns;
    char change[200];
    if (ins->sim_bufs)
        say(change, sizeof change, "%d buffers per tile (NK_AFFINE_RANGE_BUFS(nc, i, n, %d), or nk_options."
            "default_bufs = %d) and the list schedule", ins->sim_bufs, ins->sim_bufs, ins->sim_bufs);
    else
        say(change, sizeof change, "the list schedule (NK_SCHED_LIST)");
    say(buf, n, "Simulated (re-%s and re-timed): %s: %.2f -> %.2f us (-%.1f%%).",
        ins->sim_bufs ? "traced" : "scheduled", change, base / 1000, t / 1000, base > 0 ? 100 * (base - t) / base : 0);
}

static int sim_helps(const nk_insights *ins)
{
    double base = ins->pr->tl->total_ns;
    return base - ins->sim_ns >= SIM_MIN_SHARE * base;
}

static int sim_evidence(nk_insights *ins, nk_finding *f)
{
    if (!sim_helps(ins))
        return 0;
    ev(f, "simulated_saving", NK_UNIT_NS, ins->pr->tl->total_ns - ins->sim_ns);
    ev(f, "simulated_time", NK_UNIT_NS, ins->sim_ns);
    if (ins->sim_bufs)
        ev(f, "buffers", NK_UNIT_COUNT, ins->sim_bufs);
    f->score_ns = ins->pr->tl->total_ns - ins->sim_ns;
    rate(f, ins->a.total_ns);
    return 1;
}

/* Dependent small instructions handed back and forth between two compute
 * engines along the critical path (softmax: a Vector max, a Scalar exp, a
 * Vector multiply per tile): each hand-off pays the semaphore latency and
 * leaves the other engine idle, unless other iterations fill the gaps. */
static int rule_ping_pong(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    uint32_t hand = 0;
    double wait = 0;
    int pair[2] = {-1, -1};
    ulist l = {0};
    int rc = 0;
    for (uint32_t k = 1; !rc && k < a->npath; k++) {
        const nk_ins_step *x = &a->path[k - 1], *y = &a->path[k];
        if (x->engine > NK_ENGINE_GPSIMD || y->engine > NK_ENGINE_GPSIMD || x->engine == y->engine ||
            a->busy[x->instr] >= SMALL_INSTR_NS || a->busy[y->instr] >= SMALL_INSTR_NS)
            continue;
        if (pair[0] < 0) {
            pair[0] = x->engine < y->engine ? x->engine : y->engine;
            pair[1] = x->engine < y->engine ? y->engine : x->engine;
        }
        hand++;
        wait += y->wait_ns;
        rc = ul_push(&l, y->instr);
        if (!rc && (k == 1 || l.v[l.n - 1] != x->instr))
            rc = ul_push(&l, x->instr);
    }
    if (rc || hand < PING_PONG_MIN || a->total_ns <= 0) {
        free(l.v);
        return rc;
    }
    simulate(ins);
    if (ins->sim_retraced && !sim_helps(ins)) { /* tried, nothing nklab can change helps: no suggestion */
        free(l.v);
        return 0;
    }
    if (!sim_helps(ins) && wait < MIN_SHARE * a->total_ns) {
        free(l.v);
        return 0;
    }
    char subj[32];
    say(subj, sizeof subj, "%s+%s", nk_engine_name((nk_engine)pair[0]), nk_engine_name((nk_engine)pair[1]));
    nk_finding *f = add(ins, NK_RULE_PING_PONG, subj);
    if (!f) {
        free(l.v);
        return NK_ENOMEM;
    }
    f->score_ns = wait;
    rate(f, a->total_ns);
    say(f->title, sizeof f->title, "Small dependent instructions ping-pong between %s and %s on the critical path "
        "(%u hand-offs)", nk_engine_name((nk_engine)pair[0]), nk_engine_name((nk_engine)pair[1]), hand);
    char w[32];
    nk__ins_fmt_ns(w, sizeof w, wait);
    say(f->detail, sizeof f->detail,
        "Along the chain that bounds the kernel, %u times an instruction of under 1 us on one engine waits for "
        "one on the other: %s of semaphore hand-offs, and each engine idles while the other works. Work of other "
        "iterations could fill those gaps if enough tiles were in flight.", hand, w);
    ev(f, "handoffs", NK_UNIT_COUNT, hand);
    ev(f, "handoff_wait", NK_UNIT_NS, wait);
    int simulated = sim_evidence(ins, f);
    qsort(l.v, l.n, sizeof *l.v, cmp_u32);
    rc = involve(ins, f, l.v, l.n);
    char sv[300];
    if (simulated)
        sim_say(ins, sv, sizeof sv);
    else
        say(sv, sizeof sv, "Not simulated: the profile alone cannot re-trace the kernel with more buffers (`nklab "
            "insights KERNEL ...` can), and re-scheduling its program does not help; the time at stake is the "
            "hand-offs' latency.");
    say(f->suggestion, sizeof f->suggestion,
        "Keep more tiles in flight so the engines work on different iterations at once: more buffers per tile in "
        "the affine loop, and let the compile step reorder independent instructions (NK_SCHED_LIST, the "
        "default). %s", sv);
    free(l.v);
    return rc;
}

/* An engine idles while one of its next instructions is ready: it runs its
 * stream in order and the one in front waits for something unrelated. */
static int rule_inorder_stall(nk_insights *ins)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    double stall = 0;
    int worst = -1;
    for (int e = 0; e <= NK_ENGINE_GPSIMD; e++) {
        stall += a->idle_ns[e][NK_CAUSE_INORDER];
        if (a->idle_ns[e][NK_CAUSE_INORDER] > 0 &&
            (worst < 0 || a->idle_ns[e][NK_CAUSE_INORDER] > a->idle_ns[worst][NK_CAUSE_INORDER]))
            worst = e;
    }
    if (worst < 0 || a->total_ns <= 0 || stall < MIN_SHARE * a->total_ns)
        return 0;
    simulate(ins);
    if (!sim_helps(ins)) /* reordering was tried and does not help: no suggestion */
        return 0;
    nk_finding *f = add(ins, NK_RULE_INORDER_STALL, nk_engine_name((nk_engine)worst));
    if (!f)
        return NK_ENOMEM;
    char st[32];
    nk__ins_fmt_ns(st, sizeof st, stall);
    say(f->title, sizeof f->title, "In-order stalls: engines wait %s behind instructions of their own queue",
        st);
    say(f->detail, sizeof f->detail,
        "Each engine runs its instructions in order. For %s in all (most on %s), one of an engine's next 8 "
        "instructions was ready while the one in front of it waited for an unrelated result.", st,
        nk_engine_name((nk_engine)worst));
    ev(f, "stall", NK_UNIT_NS, stall);
    sim_evidence(ins, f);
    ulist l = {0};
    int rc = 0;
    for (uint32_t i = 0; !rc && i < p->ninstr; i++)
        if (p->instrs[i].engine == worst)
            rc = ul_push(&l, i);
    if (!rc)
        rc = involve(ins, f, l.v, l.n);
    free(l.v);
    char sv[300];
    sim_say(ins, sv, sizeof sv);
    say(f->suggestion, sizeof f->suggestion, "Let independent instructions pass each other: compile with the list "
        "schedule (NK_SCHED_LIST, the default; not NK_SCHED_TRACE_ORDER)%s. %s",
        ins->sim_bufs ? " and more buffers so there are independent instructions to pick" : "", sv);
    return rc;
}

/* The target triggers DMAs in program order (dma_trigger_in_order): a DMA
 * whose inputs were ready waited for the trigger of an earlier one, which
 * waited for its own inputs (typically a store waiting for compute holding
 * back the next load). Held time: trigger start minus the DMA's readiness
 * (its producers' outputs visible: a compute bar's end plus its write
 * access, a DMA's last transfer; or the start-up) and the trigger itself. */
/* When each launch unit (SPMD instance, kernel of a sequence) may start,
 * as the timing model releases them: the first on its core after the
 * start-up, each later one at the end of the one before it on that core
 * (in a sequence, plus a tear-down and the next start-up). NULL with one
 * unit (or out of memory: *rc). */
static double *unit_starts(const nk_program *p, const nk_timeline *tl, const nk_arch *arch, int *rc)
{
    uint32_t nu = nk__nunits(p);
    if (nu <= 1)
        return NULL;
    double *start = malloc(nu * sizeof *start), *end = calloc(nu, sizeof *end);
    uint32_t *count = calloc(nu, sizeof *count);
    if (!start || !end || !count) {
        *rc = NK_ENOMEM;
        free(start);
        start = NULL;
        goto out;
    }
    for (uint32_t i = 0; i < p->ninstr; i++) {
        uint32_t u = nk__unit_of(p, &p->instrs[i]);
        if (u < nu) {
            end[u] = fmax(end[u], tl->instr_end[i]);
            count[u]++;
        }
    }
    double next[NK_MAX_CORES];
    for (int c = 0; c < NK_MAX_CORES; c++)
        next[c] = arch->launch_startup_ns;
    for (uint32_t u = 0; u < nu; u++) {
        uint32_t c = nk__unit_core(p, u) % NK_MAX_CORES;
        start[u] = next[c];
        if (count[u])
            next[c] = end[u] + (p->nseg > 1 ? arch->launch_teardown_ns + arch->launch_startup_ns : 0);
    }
out:
    free(end);
    free(count);
    return start;
}

static int rule_sync_order(nk_insights *ins)
{
    const nk_arch *arch = nk__ins_arch(ins->pr);
    const nk_program *p = ins->pr->prog;
    const nk_timeline *tl = ins->pr->tl;
    double total = ins->a.total_ns;
    if (!arch || !arch->dma_trigger_in_order || total <= 0)
        return 0;
    double held = 0, worst_held = 0;
    uint32_t prev[NK_MAX_CORES], worst = NONE, worst_prev = NONE, worst_dep = NONE, dep_of[NK_MAX_CORES];
    for (int c = 0; c < NK_MAX_CORES; c++)
        prev[c] = dep_of[c] = NONE;
    ulist l = {0};
    int rc = 0;
    double *ustart = unit_starts(p, tl, arch, &rc); /* an instance waits for the one before it, not a trigger */
    for (uint32_t i = 0; !rc && i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (in->engine != NK_ENGINE_DMA)
            continue;
        uint32_t c = (uint32_t)nk__instr_core(p, in) % NK_MAX_CORES, late = NONE;
        double ready = ustart ? ustart[nk__unit_of(p, in)] : arch->launch_startup_ns;
        for (uint32_t k = 0; k < in->ndep; k++) {
            uint32_t d = p->deps[in->dep_off + k];
            int e = p->instrs[d].engine;
            double g = e == NK_ENGINE_TENSOR ? arch->pe_ghz : engine_ghz(arch, e);
            double r = tl->instr_end[d] + (g > 0 ? arch->sram_access_cycles / g : 0);
            if (d < i && r > ready)
                ready = r, late = d;
        }
        double h = tl->instr_start[i] - ready - arch->dma_trigger_ns;
        if (h > 1e-3 && prev[c] != NONE) {
            held += h;
            rc = ul_push(&l, i);
            if (h > worst_held)
                worst_held = h, worst = i, worst_prev = prev[c], worst_dep = dep_of[c];
        }
        prev[c] = i, dep_of[c] = late;
    }
    free(ustart);
    if (rc || held < MIN_SHARE * total || worst == NONE) {
        free(l.v);
        return rc;
    }
    nk_finding *f = add(ins, NK_RULE_SYNC_ORDER, "sync");
    if (!f) {
        free(l.v);
        return NK_ENOMEM;
    }
    char hs[32], ws[32], at[64], by[64], from[64] = "";
    nk__ins_fmt_ns(hs, sizeof hs, held);
    nk__ins_fmt_ns(ws, sizeof ws, worst_held);
    where(p, p->instrs[worst].loc, at, sizeof at);
    where(p, p->instrs[worst_prev].loc, by, sizeof by);
    if (worst_dep != NONE)
        say(from, sizeof from, ", which waited for its input from the %s engine",
            nk_engine_name((nk_engine)p->instrs[worst_dep].engine));
    say(f->title, sizeof f->title, "DMA triggers in program order: %u DMA%s wait %s behind earlier triggers on the Sync "
        "engine", l.n, l.n == 1 ? "" : "s", hs);
    say(f->detail, sizeof f->detail,
        "The target triggers DMAs in program order (dma_trigger_in_order = 1: the Sync engine runs its queue as "
        "compiled, without prefetch). The DMA at %s was ready but waited %s for the trigger of the one before it at "
        "%s%s. While a DMA that waits for compute holds back the next one, no DMA runs under that compute.",
        at, ws, by, from);
    f->score_ns = held < total ? held : total;
    rate(f, total);
    ev(f, "held", NK_UNIT_NS, held);
    ev(f, "held_dmas", NK_UNIT_COUNT, l.n);
    rc = involve(ins, f, l.v, l.n);
    free(l.v);
    if (rc)
        return rc;
    line_add(p, f, p->instrs[worst_prev].loc);
    simulate(ins);
    sim_evidence(ins, f);
    char sv[300] = "";
    if (sim_helps(ins))
        sim_say(ins, sv, sizeof sv);
    say(f->suggestion, sizeof f->suggestion,
        "Put the loads ahead of the DMAs that wait for compute in the Sync queue: compile with the list schedule "
        "(NK_SCHED_LIST, the default; not NK_SCHED_TRACE_ORDER), or issue the next tile's load before this "
        "tile's store in the kernel. %s", sv);
    return 0;
}

int nk__ins_rules(nk_insights *ins)
{
    int rc;
    if ((rc = rule_dma_overlap(ins)) || (rc = rule_dma_latency(ins)) || (rc = rule_engines_overlap(ins)) || (rc = rule_small_dma(ins)) ||
        (rc = rule_static_overhead(ins)) || (rc = rule_matmul(ins, NK_RULE_MATMUL_SHORT_MOVING)) ||
        (rc = rule_matmul(ins, NK_RULE_MATMUL_FP32)) || (rc = rule_reloaded(ins)) ||
        (rc = rule_serialized_tile(ins)) || (rc = rule_spill(ins)) || (rc = rule_partitions(ins)) ||
        (rc = rule_psum_banks(ins)) || (rc = rule_hbm_round_trip(ins)) ||
        (rc = rule_ping_pong(ins)) || (rc = rule_inorder_stall(ins)) || (rc = rule_sync_order(ins)) || (rc = rule_good(ins)))
        return rc;
    if (ins->sim_rc)
        return ins->sim_rc;
    if (ins->n > 1)
        qsort(ins->f, ins->n, sizeof *ins->f, cmp_finding);
    return 0;
}

const char *nk__ins_rule_name(int rule)
{
    static const char *names[NK_RULE_COUNT] = {
        "dma-not-overlapped", "dma-latency-exposed", "engines-never-overlap", "small-dma", "static-overhead", "matmul-short-moving",
        "matmul-fp32", "tensor-reloaded", "serialized-tile", "spill", "hbm-round-trip", "engine-ping-pong",
        "in-order-stall", "dma-trigger-order", "partition-underuse", "psum-banks", "compute-bound", "memory-bound"};
    return (unsigned)rule < NK_RULE_COUNT ? names[rule] : "?";
}

const char *nk__ins_severity_name(int sev)
{
    static const char *names[] = {"good", "low", "medium", "high"};
    return (unsigned)sev < 4 ? names[sev] : "?";
}

/* ---- entry points */

int nk__insights_build(const nk_profile *pr, nk_insights **out) { return nk__insights_build_retrace(pr, NULL, out); }

int nk__insights_build_retrace(const nk_profile *pr, const nk_ins_retrace *rt, nk_insights **out)
{
    *out = NULL;
    nk_insights *ins = calloc(1, sizeof *ins);
    if (!ins)
        return NK_ENOMEM;
    ins->pr = pr;
    ins->rt = rt;
    int rc = nk_profile_metrics(pr, &ins->m);
    if (!rc)
        rc = nk__ins_analyze(pr, &ins->a);
    if (!rc)
        rc = nk__ins_rules(ins);
    if (rc) {
        nk__insights_free(ins);
        return rc;
    }
    *out = ins;
    return 0;
}

void nk__insights_free(nk_insights *ins)
{
    if (!ins)
        return;
    nk__ins_analysis_free(&ins->a);
    free(ins->f);
    free(ins);
}

uint32_t nk__insights_problems(const nk_insights *ins)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ins->n; i++)
        n += ins->f[i].severity > NK_SEV_GOOD;
    return n;
}

const nk_finding *nk__insights_find(const nk_insights *ins, int rule)
{
    for (uint32_t i = 0; i < ins->n; i++)
        if (ins->f[i].rule == rule)
            return &ins->f[i];
    return NULL;
}
