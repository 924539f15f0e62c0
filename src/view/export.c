/*
 * export.c - a profile for other tools: Chrome Trace Event JSON (opens in
 * ui.perfetto.dev and chrome://tracing), JSON (summary and instruction
 * list) and CSV (one row per instruction).
 */
#include "view/view.h"
#include "view/opnd.h"
#include "isa/optable.h"
#include "core/atomicfile.h"
#include "core/vbuf.h"

#include <errno.h>
#include <unistd.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t ps(double ns) { return isfinite(ns) ? llround(ns * 1000.0) : 0; }

/* ---- nk__export_to: the text goes out to its file a megabyte at a time as
 * it is made (nk__vb_out), and the operand text of repeated instructions
 * comes from a cache (view/opnd.h), the calling thread's for the length of
 * one export. */

static _Thread_local nk_opnd_cache *cur_opnd;

static void export_operands(const nk_program *p, uint32_t i, char *buf, size_t n)
{
    if (cur_opnd && i < p->ninstr)
        nk__opnd_text(cur_opnd, i, buf, n);
    else
        nk__view_operands(p, i, buf, n);
}

/* Picoseconds as microseconds with six decimals: exact, so slices that touch
 * in the model still touch in the trace. */
static void put_us(nk_text *t, int64_t v)
{
    uint64_t u = (uint64_t)v;
    if (v < 0) {
        nk__vb_chr(t, '-');
        u = (uint64_t)0 - u; /* INT64_MIN too */
    }
    nk__vb_u64(t, u / 1000000u);
    uint64_t f = u % 1000000u;
    if (!f)
        return;
    char d[6];
    int nd = 6;
    for (int i = 5; i >= 0; i--, f /= 10)
        d[i] = (char)('0' + f % 10);
    while (d[nd - 1] == '0')
        nd--;
    nk__vb_chr(t, '.');
    nk__vb_mem(t, d, (size_t)nd);
}

/* The duration written for a slice from s to e ps on a thread whose first
 * slice starts at base: e - s, or less by a picosecond or two where a reader
 * adding ts and dur in double precision would get past e and see the slice
 * overlap the next one on its thread, which may begin at e. Readers add them
 * as they are (most) or after subtracting the thread's first start
 * (speedscope); both are checked. The decimals parse to the doubles nearest
 * s / 1e6, e / 1e6 and base / 1e6, as the divisions round. */
static int64_t dur_ps(int64_t s, int64_t e, int64_t base)
{
    int64_t d = e - s;
    double sd = (double)s / 1e6, ed = (double)e / 1e6, bd = (double)base / 1e6;
    while (d > 0 && (sd + (double)d / 1e6 > ed || (sd - bd) + (double)d / 1e6 > ed - bd))
        d--;
    return d;
}

/* Per instruction: first and last event (UINT32_MAX when none). */
typedef struct instr_ev {
    uint32_t *first, *last;
} instr_ev;

static int instr_ev_build(const nk_profile *pr, instr_ev *ie)
{
    uint32_t n = pr->prog->ninstr ? pr->prog->ninstr : 1;
    ie->first = malloc(n * sizeof *ie->first);
    ie->last = malloc(n * sizeof *ie->last);
    if (!ie->first || !ie->last)
        return NK_ENOMEM;
    memset(ie->first, 0xff, n * sizeof *ie->first);
    memset(ie->last, 0xff, n * sizeof *ie->last);
    const nk_timeline *tl = pr->tl;
    for (uint32_t e = 0; e < tl->nevents; e++) {
        uint32_t i = tl->events[e].instr;
        if (i >= pr->prog->ninstr)
            continue;
        if (ie->first[i] == UINT32_MAX)
            ie->first[i] = e;
        if (ie->last[i] == UINT32_MAX || tl->events[e].end >= tl->events[ie->last[i]].end)
            ie->last[i] = e;
    }
    return NK_OK;
}

static void instr_ev_free(instr_ev *ie)
{
    free(ie->first);
    free(ie->last);
}

/* Start and end of an instruction: the timeline's, else its events'. */
static void instr_span(const nk_profile *pr, const instr_ev *ie, uint32_t i, double *s, double *e)
{
    const nk_timeline *tl = pr->tl;
    if (tl->instr_start && tl->instr_end) {
        *s = tl->instr_start[i];
        *e = tl->instr_end[i];
    } else if (ie->first[i] != UINT32_MAX) {
        *s = tl->events[ie->first[i]].start;
        *e = tl->events[ie->last[i]].end;
    } else {
        *s = *e = 0;
    }
}

static int in_range(const nk_export_opts *o, double s, double e)
{
    if (!o || o->to_ns <= o->from_ns)
        return 1;
    return e >= o->from_ns && s <= o->to_ns;
}

/* ---- Chrome Trace Event format */

/* Lanes keep slices on one thread properly nested: an event that overlaps
 * the previous one on its row (DMA queues can have several transfers in
 * flight) goes to the first lane that is free at its start. */
typedef struct lanes {
    uint16_t *lane;      /* per event */
    uint32_t *tid_base;  /* per row: tid of lane 0 */
    uint32_t *nlanes;    /* per row */
    int64_t *first;      /* per row and lane (MAX_LANES a row): start of its first slice, ps */
} lanes;

#define MAX_LANES 64

static int lanes_build(const nk_timeline *tl, const nk_view_rows *rows, lanes *L)
{
    L->lane = calloc(tl->nevents ? tl->nevents : 1, sizeof *L->lane);
    L->tid_base = calloc(rows->n, sizeof *L->tid_base);
    L->nlanes = calloc(rows->n, sizeof *L->nlanes);
    int64_t *end = calloc((size_t)rows->n * MAX_LANES, sizeof *end);
    L->first = calloc((size_t)rows->n * MAX_LANES, sizeof *L->first);
    if (!L->lane || !L->tid_base || !L->nlanes || !end || !L->first) {
        free(end);
        return NK_ENOMEM;
    }
    for (uint32_t e = 0; e < tl->nevents; e++) {
        uint32_t r = nk__view_event_row(rows, &tl->events[e]);
        int64_t s = ps(tl->events[e].start);
        int64_t *re = end + (size_t)r * MAX_LANES;
        uint32_t k = 0;
        while (k < L->nlanes[r] && re[k] > s)
            k++;
        if (k == MAX_LANES)
            k = MAX_LANES - 1; /* more in flight than lanes: nest in the last */
        if (k == L->nlanes[r]) /* events come by start: a new lane's first is its earliest */
            L->first[(size_t)r * MAX_LANES + L->nlanes[r]++] = s;
        re[k] = ps(tl->events[e].end);
        L->lane[e] = (uint16_t)k;
    }
    uint32_t tid = 1;
    for (uint32_t r = 0; r < rows->n; r++) {
        L->tid_base[r] = tid;
        tid += L->nlanes[r] ? L->nlanes[r] : 1;
    }
    free(end);
    return NK_OK;
}

static void lanes_free(lanes *L)
{
    free(L->lane);
    free(L->tid_base);
    free(L->nlanes);
    free(L->first);
}

static void put_thread_names(const nk_view_rows *rows, const lanes *L, nk_text *t)
{
    char name[48];
    for (uint32_t r = 0; r < rows->n; r++) {
        uint32_t n = L->nlanes[r] ? L->nlanes[r] : 1;
        for (uint32_t k = 0; k < n; k++) {
            if (k)
                snprintf(name, sizeof name, "%s (%u)", rows->row[r].name, (unsigned)k + 1);
            else
                snprintf(name, sizeof name, "%s", rows->row[r].name);
            nk__vb_str(t, ",\n{\"ph\":\"M\",\"pid\":");
            nk__vb_u64(t, 1u + rows->row[r].core);
            nk__vb_str(t, ",\"tid\":");
            nk__vb_u64(t, L->tid_base[r] + k);
            nk__vb_str(t, ",\"name\":\"thread_name\",\"args\":{\"name\":");
            nk__vb_jstr(t, name);
            nk__vb_str(t, "}},\n{\"ph\":\"M\",\"pid\":");
            nk__vb_u64(t, 1u + rows->row[r].core);
            nk__vb_str(t, ",\"tid\":");
            nk__vb_u64(t, L->tid_base[r] + k);
            nk__vb_str(t, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
            nk__vb_u64(t, L->tid_base[r] + k);
            nk__vb_str(t, "}}");
        }
    }
}

/* The API call that produced instruction i ("call"), and, when that is a
 * construct lowered to another instruction, "lowered_from": the call, with
 * `where` "nk_broadcast at layernorm.c:31" (nothing for a program that
 * recorded no calls). */
static void put_call_args(const nk_program *p, uint32_t i, int where, const char *file, int line, nk_text *t)
{
    const nk_instr *in = i < p->ninstr ? &p->instrs[i] : NULL;
    const char *c = in ? nk__instr_call(p, in) : NULL;
    if (!c)
        return;
    nk__vb_str(t, ",\"call\":");
    nk__vb_jstr(t, c);
    if (nk__instr_lowered_from(p, in)) {
        const char *b = strrchr(file, '/');
        char from[256];
        if (where)
            snprintf(from, sizeof from, "%s at %s:%d", c, b ? b + 1 : file, line);
        else
            snprintf(from, sizeof from, "%s", c);
        nk__vb_str(t, ",\"lowered_from\":");
        nk__vb_jstr(t, from);
    }
}
static void put_slice(const nk_profile *pr, const nk_view_rows *rows, const lanes *L, uint32_t e,
                      nk_text *t)
{
    const nk_event *ev = &pr->tl->events[e];
    const nk_program *p = pr->prog;
    uint32_t r = nk__view_event_row(rows, ev);
    char opnd[1024];
    int line;
    const char *file = nk__view_instr_file(p, ev->instr, &line);
    export_operands(p, ev->instr, opnd, sizeof opnd);
    nk__vb_str(t, ",\n{\"ph\":\"X\",\"pid\":");
    nk__vb_u64(t, 1u + rows->row[r].core); /* SPMD: a process per NeuronCore */
    nk__vb_str(t, ",\"tid\":");
    nk__vb_u64(t, L->tid_base[r] + L->lane[e]);
    nk__vb_str(t, ",\"ts\":");
    put_us(t, ps(ev->start));
    nk__vb_str(t, ",\"dur\":");
    put_us(t, dur_ps(ps(ev->start), ps(ev->end), L->first[(size_t)r * MAX_LANES + L->lane[e]]));
    nk__vb_str(t, ",\"name\":");
    nk__vb_jstr(t, nk__view_event_name(p, ev));
    nk__vb_str(t, ",\"cat\":");
    nk__vb_jstr(t, nk_engine_name((nk_engine)ev->engine));
    nk__vb_str(t, ",\"args\":{\"instr\":");
    nk__vb_u64(t, ev->instr);
    if (p->nseg > 1 && ev->instr < p->ninstr && p->instrs[ev->instr].seg < p->nseg) {
        nk__vb_str(t, ",\"kernel\":");
        nk__vb_jstr(t, p->seg_name[p->instrs[ev->instr].seg]);
    }
    nk__vb_str(t, ",\"opcode\":");
    nk__vb_jstr(t, ev->instr < p->ninstr ? nk__op_name(p->instrs[ev->instr].op) : "invalid");
    nk__vb_str(t, ",\"operands\":");
    nk__vb_jstr(t, opnd);
    char loc[512];
    snprintf(loc, sizeof loc, "%s:%d", file, line);
    nk__vb_str(t, ",\"source\":");
    nk__vb_jstr(t, loc);
    put_call_args(p, ev->instr, 1, file, line, t);
    nk__vb_str(t, ",\"bytes\":");
    nk__vb_u64(t, nk__view_instr_bytes(p, ev->instr));
    nk__vb_str(t, "}}");
}

static const char *region_name(const nk_region *g)
{
    return g->kind == NK_REGION_STARTUP ? "start-up" : "tear-down";
}

/* The kernel launch (start-up, tear-down) as slices on a "Launch" thread of
 * its core's process, after that core's engine and queue threads. */
static void put_launch_regions(const nk_timeline *tl, const nk_view_rows *rows, const lanes *L, nk_text *t)
{
    if (!tl->nregions || !rows->n)
        return;
    uint32_t r = rows->n - 1;
    uint32_t tid0 = L->tid_base[r] + (L->nlanes[r] ? L->nlanes[r] : 1); /* the first free tid */
    uint32_t ncores = rows->ncores ? rows->ncores : 1;
    for (uint32_t c = 0; c < ncores; c++) {
        int named = 0;
        double first_start = INFINITY; /* of the core's Launch thread */
        for (uint32_t k = 0; k < tl->nregions; k++)
            if (tl->regions[k].core == c && tl->regions[k].start < first_start)
                first_start = tl->regions[k].start;
        for (uint32_t k = 0; k < tl->nregions; k++) {
            const nk_region *g = &tl->regions[k];
            if (g->core != c)
                continue;
            if (!named) {
                nk__vb_str(t, ",\n{\"ph\":\"M\",\"pid\":");
                nk__vb_u64(t, 1u + c);
                nk__vb_str(t, ",\"tid\":");
                nk__vb_u64(t, tid0 + c);
                nk__vb_str(t, ",\"name\":\"thread_name\",\"args\":{\"name\":\"Launch\"}},\n{\"ph\":\"M\",\"pid\":");
                nk__vb_u64(t, 1u + c);
                nk__vb_str(t, ",\"tid\":");
                nk__vb_u64(t, tid0 + c);
                nk__vb_str(t, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":0}}");
                named = 1;
            }
            nk__vb_str(t, ",\n{\"ph\":\"X\",\"pid\":");
            nk__vb_u64(t, 1u + c);
            nk__vb_str(t, ",\"tid\":");
            nk__vb_u64(t, tid0 + c);
            nk__vb_str(t, ",\"ts\":");
            put_us(t, ps(g->start));
            nk__vb_str(t, ",\"dur\":");
            put_us(t, dur_ps(ps(g->start), ps(g->end), ps(first_start)));
            nk__vb_str(t, ",\"name\":\"launch ");
            nk__vb_str(t, region_name(g));
            nk__vb_str(t, "\",\"cat\":\"launch\",\"args\":{\"region\":");
            nk__vb_jstr(t, region_name(g));
            nk__vb_str(t, "}}");
        }
    }
}

static void put_counter_events(const nk_timeline *tl, nk_text *t)
{
    for (uint32_t c = 0; c < tl->ncounters; c++) {
        const nk_counter *k = &tl->counters[c];
        char name[sizeof k->name + 1], unit[sizeof k->unit + 1];
        memcpy(name, k->name, sizeof k->name);
        name[sizeof k->name] = 0;
        memcpy(unit, k->unit, sizeof k->unit);
        unit[sizeof k->unit] = 0;
        for (uint32_t i = 0; i < k->n; i++) {
            nk__vb_str(t, ",\n{\"ph\":\"C\",\"pid\":1,\"name\":");
            nk__vb_jstr(t, name);
            nk__vb_str(t, ",\"ts\":");
            put_us(t, ps(k->t[i]));
            nk__vb_str(t, ",\"args\":{");
            nk__vb_jstr(t, unit[0] ? unit : "value");
            nk__vb_chr(t, ':');
            nk__vb_num(t, k->value[i], 6);
            nk__vb_str(t, "}}");
        }
    }
}

/* A flow arrow from the middle of the predecessor's last slice to the middle
 * of the successor's slice that consumes it (each end binds to its
 * enclosing slice). */
static void put_flow(const nk_profile *pr, const nk_view_rows *rows, const lanes *L, uint32_t e, int start,
                     uint64_t id, nk_text *t)
{
    const nk_event *ev = &pr->tl->events[e];
    uint32_t r = nk__view_event_row(rows, ev);
    int64_t mid = (ps(ev->start) + ps(ev->end)) / 2;
    nk__vb_str(t, start ? ",\n{\"ph\":\"s\"" : ",\n{\"ph\":\"f\",\"bp\":\"e\"");
    nk__vb_str(t, ",\"pid\":");
    nk__vb_u64(t, 1u + rows->row[r].core);
    nk__vb_str(t, ",\"tid\":");
    nk__vb_u64(t, L->tid_base[r] + L->lane[e]);
    nk__vb_str(t, ",\"ts\":");
    put_us(t, mid);
    nk__vb_str(t, ",\"name\":\"dependency\",\"cat\":\"dependency\",\"id\":");
    nk__vb_u64(t, id);
    nk__vb_str(t, "}");
}

/* The event of instruction i that waits for its dependency j, as the timing
 * model has it: a matmul's LoadStationary waits only for writes into its
 * stationary operand, its MultiplyMoving for everything else. */
static uint32_t consumer_event(const nk_profile *pr, const instr_ev *ie, uint32_t i, uint32_t j)
{
    const nk_program *p = pr->prog;
    const nk_event *ev = pr->tl->events;
    uint32_t f = ie->first[i], l = ie->last[i];
    if (f == l || ev[l].kind != NK_EV_MULTIPLY_MOVING)
        return f;
    return nk__feeds_stationary(p, &p->instrs[i], &p->instrs[j]) ? f : l;
}

static void put_flows(const nk_profile *pr, const nk_view_rows *rows, const lanes *L, const instr_ev *ie,
                      nk_text *t)
{
    const nk_program *p = pr->prog;
    uint64_t id = 1;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (ie->first[i] == UINT32_MAX)
            continue;
        for (uint32_t d = 0; d < in->ndep; d++) {
            uint32_t j = p->deps[in->dep_off + d];
            if (j >= p->ninstr || ie->last[j] == UINT32_MAX)
                continue;
            put_flow(pr, rows, L, ie->last[j], 1, id, t);
            put_flow(pr, rows, L, consumer_event(pr, ie, i, j), 0, id, t);
            id++;
        }
    }
}

int nk__export_perfetto(const nk_profile *pr, const nk_export_opts *o, nk_text *t)
{
    if (!pr || !pr->prog || !pr->tl)
        return NK_EINVAL;
    nk_view_rows rows;
    lanes L = {0};
    instr_ev ie = {0};
    int rc = nk__view_rows_build(pr->prog, pr->tl, &rows);
    if (rc)
        return rc;
    if ((rc = lanes_build(pr->tl, &rows, &L)) || (rc = instr_ev_build(pr, &ie)))
        goto out;
    char proc[160];
    snprintf(proc, sizeof proc, "NeuronCore 0: %s (%s)", pr->prog->kernel, pr->prog->target);
    nk__vb_str(t, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"kernel\":");
    nk__vb_jstr(t, pr->prog->kernel);
    nk__vb_str(t, ",\"target\":");
    nk__vb_jstr(t, pr->prog->target);
    nk__vb_str(t, ",\"nklab\":");
    nk__vb_jstr(t, pr->nklab_version);
    nk__vb_str(t, "},\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":");
    nk__vb_jstr(t, proc);
    nk__vb_str(t, "}}");
    for (uint32_t c = 1; c < rows.ncores; c++) { /* SPMD: the other cores' processes */
        char pn[sizeof proc + 16];
        snprintf(pn, sizeof pn, "%s NC%u", proc, (unsigned)c);
        nk__vb_str(t, ",\n{\"ph\":\"M\",\"pid\":");
        nk__vb_u64(t, 1u + c);
        nk__vb_str(t, ",\"name\":\"process_name\",\"args\":{\"name\":");
        nk__vb_jstr(t, pn);
        nk__vb_str(t, "}}");
    }
    put_thread_names(&rows, &L, t);
    put_launch_regions(pr->tl, &rows, &L, t);
    for (uint32_t e = 0; e < pr->tl->nevents; e++) {
        put_slice(pr, &rows, &L, e, t);
    }
    put_counter_events(pr->tl, t);
    if (!o || !o->no_flows)
        put_flows(pr, &rows, &L, &ie, t);
    nk__vb_str(t, "\n]}\n");
    rc = t->oom ? NK_ENOMEM : NK_OK;
out:
    instr_ev_free(&ie);
    lanes_free(&L);
    nk__view_rows_free(&rows);
    return rc;
}

/* ---- JSON: summary and instruction list */

static void put_deps(const nk_program *p, uint32_t i, nk_text *t, char sep)
{
    const nk_instr *in = &p->instrs[i];
    for (uint32_t d = 0; d < in->ndep; d++) {
        if (d)
            nk__vb_chr(t, sep);
        nk__vb_u64(t, p->deps[in->dep_off + d]);
    }
}

static void put_instr_json(const nk_profile *pr, uint32_t i, double s, double e, int first, nk_text *t)
{
    const nk_program *p = pr->prog;
    const nk_instr *in = &p->instrs[i];
    char opnd[1024];
    int line;
    const char *file = nk__view_instr_file(p, i, &line);
    export_operands(p, i, opnd, sizeof opnd);
    nk__vb_str(t, first ? "\n{\"index\":" : ",\n{\"index\":");
    nk__vb_u64(t, i);
    nk__vb_str(t, ",\"start_ns\":");
    nk__vb_num(t, s, 3);
    nk__vb_str(t, ",\"duration_ns\":");
    nk__vb_num(t, e - s, 3);
    nk__vb_str(t, ",\"opcode\":");
    nk__vb_jstr(t, nk__op_name(in->op));
    nk__vb_str(t, ",\"engine\":");
    nk__vb_jstr(t, nk_engine_name((nk_engine)in->engine));
    if (in->engine == NK_ENGINE_DMA) {
        nk__vb_str(t, ",\"queue\":");
        nk__vb_u64(t, in->queue);
    }
    if (p->nseg > 1 && in->seg < p->nseg) { /* sequences: the kernel it belongs to */
        nk__vb_str(t, ",\"kernel\":");
        nk__vb_jstr(t, p->seg_name[in->seg]);
    }
    if (p->ninst > 1) { /* SPMD: the NeuronCore and the program instance */
        nk__vb_str(t, ",\"core\":");
        nk__vb_u64(t, nk__instr_core(p, in));
        nk__vb_str(t, ",\"instance\":");
        nk__vb_u64(t, in->inst);
    }
    nk__vb_str(t, ",\"operands\":");
    nk__vb_jstr(t, opnd);
    nk__vb_str(t, ",\"bytes\":");
    nk__vb_u64(t, nk__view_instr_bytes(p, i));
    nk__vb_str(t, ",\"file\":");
    nk__vb_jstr(t, file);
    nk__vb_str(t, ",\"line\":");
    nk__vb_i64(t, line);
    put_call_args(p, i, 0, file, line, t);
    char attrs[256];
    nk__op_attrs(p, in, attrs, sizeof attrs);
    nk__vb_str(t, ",\"attrs\":");
    nk__vb_jstr(t, attrs);
    nk__vb_str(t, ",\"deps\":[");
    put_deps(p, i, t, ',');
    nk__vb_str(t, "]}");
}

/* How the compile step ordered the program (docs/compile.md). */
static void put_schedule_json(const nk_program *p, nk_text *t)
{
    static const char *const kept[3] = {"trace order", "earliest start", "critical path"};
    nk__vb_str(t, ",\"schedule\":{\"asked\":");
    nk__vb_jstr(t, p->sched == NK_SCHED_LIST ? "list" : "trace order");
    nk__vb_str(t, ",\"kept\":");
    nk__vb_jstr(t, kept[p->sched_policy % 3]);
    nk__vb_str(t, ",\"trace_order_ns\":");
    if (p->trace_order_ns >= 0)
        nk__vb_num(t, p->trace_order_ns, 3);
    else
        nk__vb_str(t, "null");
    nk__vb_chr(t, '}');
    if (p->ninst < 2)
        return;
    /* SPMD: the launch grid and each instance's NeuronCore */
    nk__vb_str(t, ",\"spmd\":{\"grid\":[");
    for (int a = 0; a < p->grid_ndim; a++) {
        if (a)
            nk__vb_chr(t, ',');
        nk__vb_i64(t, p->grid[a]);
    }
    nk__vb_str(t, "],\"nc\":[");
    for (int a = 0; a < p->grid_ndim; a++) {
        if (a)
            nk__vb_chr(t, ',');
        nk__vb_i64(t, p->grid_nc[a]);
    }
    nk__vb_str(t, "],\"cores\":");
    nk__vb_u64(t, p->ncores);
    nk__vb_str(t, ",\"instance_core\":[");
    for (uint32_t k = 0; k < p->ninst; k++) {
        if (k)
            nk__vb_chr(t, ',');
        nk__vb_u64(t, nk__inst_core(p, k));
    }
    nk__vb_str(t, "]}");
}

/* Every on-chip tile the program uses: where the allocator put it and when
 * it is live (first use to last use, by instruction and on the timeline). */
static int put_allocations_json(const nk_profile *pr, const instr_ev *ie, const nk_export_opts *o, nk_text *t)
{
    const nk_program *p = pr->prog;
    uint32_t *first, *last;
    if (nk__view_tile_uses(p, &first, &last))
        return NK_ENOMEM;
    nk__vb_str(t, ",\"allocations\":[");
    int n = 0;
    for (uint32_t b = 1; b < p->nbufs; b++) {
        const nk_bufinfo *bi = &p->bufs[b];
        if (bi->mem == NK_SHARED_HBM || first[b] == UINT32_MAX)
            continue;
        double s0, e0, s1, e1;
        instr_span(pr, ie, first[b], &s0, &e0);
        instr_span(pr, ie, last[b], &s1, &e1);
        if (!in_range(o, s0, e1))
            continue;
        const nk_locinfo *l = &p->locs[bi->loc];
        int32_t s32[NK_MAXDIM];
        for (int d = 0; d < bi->ndim; d++)
            s32[d] = (int32_t)bi->shape[d];
        char shape[96];
        nk__format_shape(shape, sizeof shape, s32, bi->ndim);
        nk__vb_str(t, n++ ? ",\n{\"tile\":" : "\n{\"tile\":");
        nk__vb_u64(t, b);
        nk__vb_str(t, ",\"memory\":");
        nk__vb_jstr(t, bi->mem == NK_SBUF ? "sbuf" : "psum");
        nk__vb_str(t, ",\"partitions\":");
        nk__vb_i64(t, bi->shape[0]);
        nk__vb_str(t, ",\"addr\":");
        nk__vb_i64(t, bi->addr);
        nk__vb_str(t, ",\"bytes\":");
        nk__vb_i64(t, bi->bytes);
        nk__vb_str(t, ",\"shape\":");
        nk__vb_jstr(t, shape);
        nk__vb_str(t, ",\"dtype\":");
        nk__vb_jstr(t, nk_dtype_name((nk_dtype)bi->dtype));
        nk__vb_str(t, ",\"file\":");
        nk__vb_jstr(t, p->files[l->file]);
        nk__vb_str(t, ",\"line\":");
        nk__vb_i64(t, l->line);
        nk__vb_str(t, ",\"slot\":");
        nk__vb_u64(t, bi->slot);
        nk__vb_str(t, ",\"slots\":");
        nk__vb_u64(t, bi->nslots);
        nk__vb_str(t, ",\"first_instr\":");
        nk__vb_u64(t, first[b]);
        nk__vb_str(t, ",\"last_instr\":");
        nk__vb_u64(t, last[b]);
        nk__vb_str(t, ",\"start_ns\":");
        nk__vb_num(t, s0, 3);
        nk__vb_str(t, ",\"end_ns\":");
        nk__vb_num(t, e1, 3);
        const nk_instr *fi = &p->instrs[first[b]]; /* a spill's reload starts the tile's life */
        int reloaded = fi->op == NK_OP_LOAD && (fi->flags & NK_IF_SPILL) && fi->dst.buf == b;
        nk__vb_str(t, ",\"reloaded\":");
        nk__vb_str(t, reloaded ? "true}" : "false}");
    }
    nk__vb_str(t, "\n]");
    free(first);
    free(last);
    return 0;
}

int nk__export_json(const nk_profile *pr, const nk_export_opts *o, nk_text *t)
{
    if (!pr || !pr->prog || !pr->tl)
        return NK_EINVAL;
    nk_view_summary sum;
    instr_ev ie = {0};
    int rc = nk__view_summarize(pr, &sum);
    if (rc || (rc = instr_ev_build(pr, &ie)))
        goto out;
    nk__vb_str(t, "{\"format\":\"nklab-profile-json\",\"version\":1,\"kernel\":");
    nk__vb_jstr(t, pr->prog->kernel);
    nk__vb_str(t, ",\"target\":");
    nk__vb_jstr(t, pr->prog->target);
    nk__vb_str(t, ",\"nklab\":");
    nk__vb_jstr(t, pr->nklab_version);
    nk__vb_str(t, ",\"summary\":");
    rc = nk__view_summary_json(pr, &sum, t);
    if (rc)
        goto out;
    nk__vb_str(t, ",\"launch_regions\":");
    nk__view_regions_json(pr->tl, t);
    put_schedule_json(pr->prog, t);
    nk__vb_str(t, ",\"instructions\":[");
    int first = 1;
    for (uint32_t i = 0; i < pr->prog->ninstr; i++) {
        double s, e;
        instr_span(pr, &ie, i, &s, &e);
        if (!in_range(o, s, e))
            continue;
        put_instr_json(pr, i, s, e, first, t);
        first = 0;
    }
    nk__vb_str(t, "\n]");
    rc = put_allocations_json(pr, &ie, o, t);
    if (rc)
        goto out;
    nk__vb_str(t, "}\n");
    rc = t->oom ? NK_ENOMEM : NK_OK;
out:
    instr_ev_free(&ie);
    return rc;
}

/* ---- CSV */

int nk__export_csv(const nk_profile *pr, const nk_export_opts *o, nk_text *t)
{
    if (!pr || !pr->prog || !pr->tl)
        return NK_EINVAL;
    instr_ev ie = {0};
    int rc = instr_ev_build(pr, &ie);
    if (rc)
        goto out;
    const nk_program *p = pr->prog;
    nk__vb_str(t, "index,start_ns,end_ns,duration_ns,engine,queue,opcode,operands,bytes,file,line,deps,core,instance,"
                  "kernel,call,lowered_from\r\n");
    char opnd[1024];
    for (uint32_t i = 0; i < p->ninstr; i++) {
        double s, e;
        instr_span(pr, &ie, i, &s, &e);
        if (!in_range(o, s, e))
            continue;
        const nk_instr *in = &p->instrs[i];
        int line;
        const char *file = nk__view_instr_file(p, i, &line);
        export_operands(p, i, opnd, sizeof opnd);
        nk__vb_u64(t, i);
        nk__vb_chr(t, ',');
        nk__vb_num(t, s, 3);
        nk__vb_chr(t, ',');
        nk__vb_num(t, e, 3);
        nk__vb_chr(t, ',');
        nk__vb_num(t, e - s, 3);
        nk__vb_chr(t, ',');
        nk__vb_str(t, nk_engine_name((nk_engine)in->engine));
        nk__vb_chr(t, ',');
        if (in->engine == NK_ENGINE_DMA)
            nk__vb_u64(t, in->queue);
        nk__vb_chr(t, ',');
        nk__vb_str(t, nk__op_name(in->op));
        nk__vb_chr(t, ',');
        nk__vb_csv(t, opnd);
        nk__vb_chr(t, ',');
        nk__vb_u64(t, nk__view_instr_bytes(p, i));
        nk__vb_chr(t, ',');
        nk__vb_csv(t, file);
        nk__vb_chr(t, ',');
        nk__vb_i64(t, line);
        nk__vb_chr(t, ',');
        put_deps(p, i, t, ' ');
        nk__vb_chr(t, ','); /* SPMD: the NeuronCore and the program instance */
        nk__vb_u64(t, nk__instr_core(p, in));
        nk__vb_chr(t, ',');
        nk__vb_u64(t, in->inst);
        nk__vb_chr(t, ','); /* sequences: the kernel the instruction belongs to */
        nk__vb_csv(t, p->nseg > 1 && in->seg < p->nseg ? p->seg_name[in->seg] : p->kernel);
        nk__vb_chr(t, ','); /* the API call that produced it; the construct when lowered from one */
        const char *call = nk__instr_call(p, in);
        if (call)
            nk__vb_csv(t, call);
        nk__vb_chr(t, ',');
        if (nk__instr_lowered_from(p, in))
            nk__vb_csv(t, call);
        nk__vb_str(t, "\r\n");
    }
    rc = t->oom ? NK_ENOMEM : NK_OK;
out:
    instr_ev_free(&ie);
    return rc;
}

/* ---- an export straight to its file */

int nk__export_to(const nk_profile *pr, const char *format, const nk_export_opts *o, const char *path,
                 uint64_t *bytes, char *why, size_t whylen)
{
    int (*fn)(const nk_profile *, const nk_export_opts *, nk_text *) =
        !strcmp(format, "perfetto") ? nk__export_perfetto : !strcmp(format, "json") ? nk__export_json
        : !strcmp(format, "csv") ? nk__export_csv : NULL;
    *bytes = 0;
    if (why && whylen)
        why[0] = 0;
    if (!fn || !pr || !pr->prog)
        return NK_EINVAL;
    nk__vb_out *out = malloc(sizeof *out);
    if (!out)
        return NK_ENOMEM;
    nk_text t = {0};
    int rc = nk__vb_out_begin(out, &t, path);
    if (!rc) {
        cur_opnd = nk__opnd_new(pr->prog); /* NULL: formatted one by one */
        rc = fn(pr, o, &t);
        nk__opnd_free(cur_opnd);
        cur_opnd = NULL;
    }
    rc = nk__vb_out_end(out, &t, rc, bytes, why, whylen);
    free(out);
    return rc;
}
