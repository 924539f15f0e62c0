/*
 * viewjson.c - the viewer's data model as compact JSON: columnar arrays,
 * a string table for operand text, event starts as deltas in picoseconds.
 * docs/viewer.md describes the fields.
 */
#include "view/view.h"
#include "core/vbuf.h"
#include "view/opnd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- string table: operand texts repeat across loop iterations */

typedef struct strtab {
    char *pool;
    size_t len, cap;
    size_t *off;      /* start of string k in pool */
    uint32_t n, cap_n;
    uint32_t *slot;   /* open addressing: string index + 1, 0 = empty */
    uint32_t nslot;   /* power of two */
} strtab;

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    while (*s)
        h = (h ^ (uint8_t)*s++) * 16777619u;
    return h;
}

static int strtab_grow_slots(strtab *t)
{
    uint32_t ns = t->nslot ? t->nslot * 2 : 1024;
    uint32_t *slot = calloc(ns, sizeof *slot);
    if (!slot)
        return NK_ENOMEM;
    for (uint32_t k = 0; k < t->n; k++) {
        uint32_t h = hash_str(t->pool + t->off[k]) & (ns - 1);
        while (slot[h])
            h = (h + 1) & (ns - 1);
        slot[h] = k + 1;
    }
    free(t->slot);
    t->slot = slot;
    t->nslot = ns;
    return NK_OK;
}

/* Index of s in the table, adding it if new; negative on failure. */
static int64_t strtab_add(strtab *t, const char *s)
{
    if ((uint64_t)(t->n + 1) * 2 > t->nslot && strtab_grow_slots(t))
        return NK_ENOMEM;
    uint32_t h = hash_str(s) & (t->nslot - 1);
    for (; t->slot[h]; h = (h + 1) & (t->nslot - 1))
        if (!strcmp(t->pool + t->off[t->slot[h] - 1], s))
            return t->slot[h] - 1;
    size_t n = strlen(s) + 1;
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 65536;
        while (cap < t->len + n)
            cap *= 2;
        char *pool = realloc(t->pool, cap);
        if (!pool)
            return NK_ENOMEM;
        t->pool = pool;
        t->cap = cap;
    }
    if (t->n == t->cap_n) {
        uint32_t cap = t->cap_n ? t->cap_n * 2 : 1024;
        size_t *off = realloc(t->off, cap * sizeof *off);
        if (!off)
            return NK_ENOMEM;
        t->off = off;
        t->cap_n = cap;
    }
    memcpy(t->pool + t->len, s, n);
    t->off[t->n] = t->len;
    t->len += n;
    t->slot[h] = t->n + 1;
    return t->n++;
}

static void strtab_free(strtab *t)
{
    free(t->pool);
    free(t->off);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

/* ---- writers */

static int64_t ps(double ns) { return isfinite(ns) ? llround(ns * 1000.0) : 0; }

static void put_header(const nk_profile *pr, nk_text *t)
{
    const nk_program *p = pr->prog;
    nk__vb_str(t, "{\"format\":\"nklab-view\",\"version\":1,\"kernel\":");
    nk__vb_jstr(t, p->kernel);
    nk__vb_str(t, ",\"target\":");
    nk__vb_jstr(t, p->target);
    nk__vb_str(t, ",\"nklab\":");
    nk__vb_jstr(t, pr->nklab_version);
    nk__vb_str(t, ",\"created\":");
    nk__vb_num(t, pr->created_unix, 3);
    nk__vb_str(t, ",\"total_ns\":");
    nk__vb_num(t, pr->tl->total_ns, 3);
    nk__vb_str(t, ",\"host_in_ns\":");
    nk__vb_num(t, pr->tl->host_in_ns, 3);
    nk__vb_str(t, ",\"host_out_ns\":");
    nk__vb_num(t, pr->tl->host_out_ns, 3);
    nk__vb_str(t, ",\"ops\":[");
    for (int i = 0; i < NK_OP_COUNT; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_jstr(t, nk__op_name(i));
    }
    nk__vb_str(t, "],\"engines\":[");
    for (int i = 0; i < NK_ENGINE_COUNT; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_jstr(t, nk_engine_name((nk_engine)i));
    }
    nk__vb_str(t, "],\"kernels\":[");
    for (uint32_t k = 0; k < (p->nseg > 1 ? p->nseg : 1); k++) {
        if (k)
            nk__vb_chr(t, ',');
        nk__vb_jstr(t, p->nseg > 1 ? p->seg_name[k] : p->kernel);
    }
    nk__vb_str(t, "],\"calls\":["); /* the API calls instructions came from (instr.lowered) */
    for (uint32_t k = 0; p->calls && k < p->ncalls; k++) {
        if (k)
            nk__vb_chr(t, ',');
        nk__vb_jstr(t, p->calls[k]);
    }
    nk__vb_str(t, "],\"kinds\":[\"instr\",\"LoadStationary\",\"MultiplyMoving\",\"dma\"]");
}

static void put_rows(const nk_view_rows *rows, nk_text *t)
{
    nk__vb_str(t, ",\"rows\":[");
    for (uint32_t r = 0; r < rows->n; r++) {
        nk__vb_str(t, r ? ",{\"name\":" : "{\"name\":");
        nk__vb_jstr(t, rows->row[r].name);
        nk__vb_str(t, ",\"engine\":");
        nk__vb_u64(t, rows->row[r].engine);
        nk__vb_str(t, ",\"queue\":");
        nk__vb_i64(t, rows->row[r].engine == NK_ENGINE_DMA ? rows->row[r].queue : -1);
        nk__vb_str(t, ",\"core\":");
        nk__vb_u64(t, rows->row[r].core);
        nk__vb_chr(t, '}');
    }
    nk__vb_chr(t, ']');
}

static void put_sources(const nk_profile *pr, nk_text *t)
{
    const nk_program *p = pr->prog;
    nk__vb_str(t, ",\"files\":[");
    for (uint32_t f = 0; f < p->nfiles; f++) {
        nk__vb_str(t, f ? ",{\"path\":" : "{\"path\":");
        nk__vb_jstr(t, p->files[f]);
        nk__vb_str(t, ",\"text\":");
        nk__vb_jstr(t, pr->sources ? pr->sources[f].text : NULL);
        nk__vb_chr(t, '}');
    }
    nk__vb_str(t, "],\"locs\":{\"file\":[");
    for (uint32_t l = 0; l < p->nlocs; l++) {
        if (l)
            nk__vb_chr(t, ',');
        nk__vb_u64(t, p->locs[l].file);
    }
    nk__vb_str(t, "],\"line\":[");
    for (uint32_t l = 0; l < p->nlocs; l++) {
        if (l)
            nk__vb_chr(t, ',');
        nk__vb_i64(t, p->locs[l].line);
    }
    nk__vb_str(t, "]}");
}

/* The memory view's data: every on-chip tile with its place (memory, core,
 * partitions, byte range within a partition) and its lifetime on the
 * timeline (first use's start to last use's end), as columns. */
static int put_tiles(const nk_profile *pr, nk_text *t)
{
    const nk_program *p = pr->prog;
    const nk_timeline *tl = pr->tl;
    uint32_t *first, *last, *ids = malloc((size_t)p->nbufs * sizeof *ids);
    if (!ids || nk__view_tile_uses(p, &first, &last)) {
        free(ids);
        return NK_ENOMEM;
    }
    uint32_t n = 0; /* live from its first use's start to its last use's end, as the JSON export has it */
    for (uint32_t b = 1; b < p->nbufs; b++)
        if (p->bufs[b].mem != NK_SHARED_HBM && first[b] != UINT32_MAX)
            ids[n++] = b;
    static const char *const cols[] = {"mem", "core", "parts", "addr", "bytes", "loc", "spill", "t0", "t1"};
    nk__vb_str(t, ",\"tiles\":{\"sbuf_bytes\":");
    nk__vb_i64(t, p->arch ? p->arch->sbuf_partition_bytes - p->arch->sbuf_reserved_bytes : 0);
    nk__vb_str(t, ",\"psum_bytes\":");
    nk__vb_i64(t, p->arch ? p->arch->psum_partition_bytes : 0);
    for (int c = 0; c < (int)(sizeof cols / sizeof cols[0]); c++) {
        nk__vb_str(t, ",\"");
        nk__vb_str(t, cols[c]);
        nk__vb_str(t, "\":[");
        for (uint32_t k = 0; k < n; k++) {
            const nk_bufinfo *bi = &p->bufs[ids[k]];
            if (k)
                nk__vb_chr(t, ',');
            switch (c) {
            case 0: nk__vb_u64(t, bi->mem == NK_PSUM); break;
            case 1: nk__vb_u64(t, nk__inst_core(p, bi->inst)); break;
            case 2: nk__vb_i64(t, bi->shape[0]); break;
            case 3: nk__vb_i64(t, bi->addr); break;
            case 4: nk__vb_i64(t, bi->bytes); break;
            case 5: nk__vb_u64(t, bi->loc); break;
            case 6: nk__vb_u64(t, bi->spill); break;
            case 7: nk__vb_num(t, tl->instr_start[first[ids[k]]], 3); break;
            default: nk__vb_num(t, tl->instr_end[last[ids[k]]], 3); break;
            }
        }
        nk__vb_chr(t, ']');
    }
    nk__vb_chr(t, '}');
    free(first);
    free(last);
    free(ids);
    return t->oom ? NK_ENOMEM : 0;
}

/* One per-instruction column of unsigned values. */
typedef uint64_t (*col_fn)(const nk_program *p, uint32_t i);
static uint64_t col_op(const nk_program *p, uint32_t i) { return p->instrs[i].op; }
static uint64_t col_engine(const nk_program *p, uint32_t i) { return p->instrs[i].engine; }
static uint64_t col_queue(const nk_program *p, uint32_t i) { return p->instrs[i].queue; }
static uint64_t col_core(const nk_program *p, uint32_t i) { return nk__instr_core(p, &p->instrs[i]); }
static uint64_t col_inst(const nk_program *p, uint32_t i) { return p->instrs[i].inst; }
static uint64_t col_seg(const nk_program *p, uint32_t i) { return p->instrs[i].seg; }
static uint64_t col_loop(const nk_program *p, uint32_t i) { return p->instrs[i].loop; }
static uint64_t col_iter(const nk_program *p, uint32_t i) { return p->instrs[i].iter; }

/* DMA instructions: the first DMA engine their descriptors use and how many (viewer tooltips) */
static void put_dma_engines(const nk_profile *pr, nk_text *t)
{
    const nk_program *p = pr->prog;
    const nk_timeline *tl = pr->tl;
    /* (written whole: huge pages where they are large) */
    uint8_t *e0 = nk__big_fixed0(p->ninstr ? p->ninstr : 1, 1), *ne = nk__big_fixed0(p->ninstr ? p->ninstr : 1, 1);
    uint64_t *seen = nk__big_fixed0(p->ninstr ? p->ninstr : 1, sizeof *seen); /* engines used, bit e (< 64) */
    if (!e0 || !ne || !seen) {
        t->oom = 1;
        goto out;
    }
    for (uint32_t k = 0; k < tl->ndspans; k++)
        if (tl->dspans[k].instr < p->ninstr)
            seen[tl->dspans[k].instr] |= tl->dspans[k].engines;
    for (uint32_t i = 0; i < p->ninstr; i++)
        if (seen[i]) {
            e0[i] = (uint8_t)__builtin_ctzll(seen[i]);
            ne[i] = (uint8_t)__builtin_popcountll(seen[i]);
        }
    nk__vb_str(t, ",\"dma_engine\":[");
    for (uint32_t i = 0; i < p->ninstr; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_u64(t, e0[i]);
    }
    nk__vb_str(t, "],\"dma_engines\":[");
    for (uint32_t i = 0; i < p->ninstr; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_u64(t, ne[i]);
    }
    nk__vb_chr(t, ']');
out:
    free(e0);
    free(ne);
    free(seen);
}
static uint64_t col_loc(const nk_program *p, uint32_t i) { return p->instrs[i].loc; }
/* the construct an instruction was lowered from: its call + 1 into "calls"; 0 when the kernel wrote it */
static uint64_t col_lowered(const nk_program *p, uint32_t i)
{
    return nk__instr_lowered_from(p, &p->instrs[i]) ? p->instrs[i].call : 0;
}
static uint64_t col_ndep(const nk_program *p, uint32_t i) { return p->instrs[i].ndep; }

static void put_col(const nk_program *p, const char *name, col_fn fn, nk_text *t)
{
    nk__vb_str(t, ",\"");
    nk__vb_str(t, name);
    nk__vb_str(t, "\":[");
    for (uint32_t i = 0; i < p->ninstr; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_u64(t, fn(p, i));
    }
    nk__vb_chr(t, ']');
}

/* Operand text as a template and numbers: each " +N" (an HBM offset, which
 * differs in every loop iteration) becomes " +\x01" and N goes to a separate
 * list, so the templates repeat and the string table stays small. The
 * templates come from the operand cache (view/opnd.h): formatted once per
 * distinct instruction, not per instruction. */
static int put_instrs(const nk_profile *pr, nk_text *t, strtab *st, uint32_t *opnd)
{
    const nk_program *p = pr->prog;
    uint64_t num[NK_OPND_NUMS];
    nk_text nums = {0};
    nk_opnd_cache *oc = nk__opnd_new(p);
    uint32_t *tindex = NULL, ntindex = 0; /* template id -> string index */
    if (!oc)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const char *tpl;
        uint32_t id;
        int nn = nk__opnd_template(oc, i, &tpl, &id, num);
        if (nn < 0) {
            nk__text_free(&nums);
            nk__opnd_free(oc);
            free(tindex);
            return nn;
        }
        for (int k = 0; k < nn; k++) {
            if (nums.len)
                nk__vb_chr(&nums, ',');
            nk__vb_u64(&nums, num[k]);
        }
        int64_t k;
        if (id != UINT32_MAX && id < ntindex && tindex[id] != UINT32_MAX)
            k = tindex[id];
        else
            k = strtab_add(st, tpl);
        if (k >= 0 && id != UINT32_MAX && id >= ntindex) {
            uint32_t cap = ntindex ? 2 * ntindex : 256;
            while (cap <= id)
                cap *= 2;
            uint32_t *ti = realloc(tindex, cap * sizeof *ti);
            if (!ti)
                k = NK_ENOMEM;
            else {
                memset(ti + ntindex, 0xff, (cap - ntindex) * sizeof *ti);
                tindex = ti;
                ntindex = cap;
            }
        }
        if (k < 0) {
            nk__text_free(&nums);
            nk__opnd_free(oc);
            free(tindex);
            return (int)k;
        }
        if (id != UINT32_MAX)
            tindex[id] = (uint32_t)k;
        opnd[i] = (uint32_t)k;
    }
    nk__opnd_free(oc);
    free(tindex);
    if (nums.oom) {
        nk__text_free(&nums);
        return NK_ENOMEM;
    }
    nk__vb_str(t, ",\"instr\":{\"n\":");
    nk__vb_u64(t, p->ninstr);
    nk__vb_str(t, ",\"opnd_num\":[");
    if (nums.len)
        nk__vb_mem(t, nums.s, nums.len);
    nk__vb_chr(t, ']');
    nk__text_free(&nums);
    put_col(p, "op", col_op, t);
    put_col(p, "engine", col_engine, t);
    put_col(p, "queue", col_queue, t);
    put_col(p, "core", col_core, t); /* SPMD: NeuronCore and program instance */
    put_col(p, "inst", col_inst, t);
    put_col(p, "seg", col_seg, t); /* sequences: the kernel (index into "kernels") */
    put_col(p, "loop", col_loop, t); /* innermost loop instance + 1 (0: none), into "loops" */
    put_col(p, "iter", col_iter, t);
    put_dma_engines(pr, t);
    put_col(p, "loc", col_loc, t);
    if (p->ncalls)
        put_col(p, "lowered", col_lowered, t);
    nk__vb_str(t, ",\"opnd\":[");
    for (uint32_t i = 0; i < p->ninstr; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_u64(t, opnd[i]);
    }
    nk__vb_str(t, "],\"bytes\":[");
    for (uint32_t i = 0; i < p->ninstr; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_u64(t, nk__view_instr_bytes(p, i));
    }
    nk__vb_chr(t, ']');
    put_col(p, "ndep", col_ndep, t);
    /* dependency j of instruction i as i - j: small numbers */
    nk__vb_str(t, ",\"dep_delta\":[");
    int first = 1;
    for (uint32_t i = 0; i < p->ninstr; i++)
        for (uint32_t d = 0; d < p->instrs[i].ndep; d++) {
            uint32_t j = p->deps[p->instrs[i].dep_off + d];
            if (!first)
                nk__vb_chr(t, ',');
            first = 0;
            nk__vb_i64(t, (int64_t)i - (int64_t)j);
        }
    nk__vb_str(t, "]}");
    return NK_OK;
}

static void put_events(const nk_timeline *tl, const nk_view_rows *rows, nk_text *t)
{
    const nk_event *ev = tl->events;
    uint32_t n = tl->nevents;
    nk__vb_str(t, ",\"events\":{\"n\":");
    nk__vb_u64(t, n);
    nk__vb_str(t, ",\"instr_delta\":[");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_i64(t, (int64_t)ev[i].instr - (i ? (int64_t)ev[i - 1].instr : 0));
    }
    nk__vb_str(t, "],\"row\":[");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_u64(t, nk__view_event_row(rows, &ev[i]));
    }
    nk__vb_str(t, "],\"kind\":[");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_u64(t, ev[i].kind);
    }
    nk__vb_str(t, "],\"start_ps_delta\":[");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_i64(t, ps(ev[i].start) - (i ? ps(ev[i - 1].start) : 0));
    }
    nk__vb_str(t, "],\"dur_ps\":[");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            nk__vb_chr(t, ',');
        nk__vb_i64(t, ps(ev[i].end) - ps(ev[i].start));
    }
    nk__vb_str(t, "]}");
}

static void put_counters(const nk_timeline *tl, nk_text *t)
{
    nk__vb_str(t, ",\"counters\":[");
    for (uint32_t c = 0; c < tl->ncounters; c++) {
        const nk_counter *k = &tl->counters[c];
        char name[sizeof k->name + 1], unit[sizeof k->unit + 1];
        memcpy(name, k->name, sizeof k->name);
        name[sizeof k->name] = 0;
        memcpy(unit, k->unit, sizeof k->unit);
        unit[sizeof k->unit] = 0;
        nk__vb_str(t, c ? ",{\"name\":" : "{\"name\":");
        nk__vb_jstr(t, name);
        nk__vb_str(t, ",\"unit\":");
        nk__vb_jstr(t, unit);
        nk__vb_str(t, ",\"t\":[");
        for (uint32_t i = 0; i < k->n; i++) {
            if (i)
                nk__vb_chr(t, ',');
            nk__vb_num(t, k->t[i], 3);
        }
        nk__vb_str(t, "],\"v\":[");
        for (uint32_t i = 0; i < k->n; i++) {
            if (i)
                nk__vb_chr(t, ',');
            nk__vb_num(t, k->value[i], 3);
        }
        nk__vb_str(t, "]}");
    }
    nk__vb_chr(t, ']');
}

static void put_strings(const strtab *st, nk_text *t)
{
    nk__vb_str(t, ",\"strings\":[");
    for (uint32_t k = 0; k < st->n; k++) {
        if (k)
            nk__vb_chr(t, ',');
        nk__vb_jstr(t, st->pool + st->off[k]);
    }
    nk__vb_chr(t, ']');
}

/* Copies JSON text with <, > and & written as \u escapes (they can only
 * occur inside strings of valid JSON). */
static void put_json_escaped(nk_text *t, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            nk__vb_str(t, "\\u003c");
        else if (*s == '>')
            nk__vb_str(t, "\\u003e");
        else if (*s == '&')
            nk__vb_str(t, "\\u0026");
        else
            nk__vb_chr(t, *s);
    }
}

/* The kernel launch regions as a JSON array, one object per region:
 * {"region": "start-up" | "tear-down", "core", "start_ns", "end_ns"}
 * (the viewer's data and the JSON export). */
void nk__view_regions_json(const nk_timeline *tl, nk_text *t)
{
    nk__vb_chr(t, '[');
    for (uint32_t k = 0; k < tl->nregions; k++) {
        const nk_region *g = &tl->regions[k];
        nk__vb_str(t, k ? ",{\"region\":" : "{\"region\":");
        nk__vb_jstr(t, g->kind == NK_REGION_STARTUP ? "start-up" : "tear-down");
        nk__vb_str(t, ",\"core\":");
        nk__vb_u64(t, g->core);
        nk__vb_str(t, ",\"start_ns\":");
        nk__vb_num(t, g->start, 3);
        nk__vb_str(t, ",\"end_ns\":");
        nk__vb_num(t, g->end, 3);
        nk__vb_chr(t, '}');
    }
    nk__vb_chr(t, ']');
}

const char *nk__view_given(void *ctx) { return ctx; }

int nk__view_json(const nk_profile *pr, const char *insights_json, nk_text *t)
{
    nk__view_insights ins = {nk__view_given, (void *)insights_json};
    return nk__view_json_deferred(pr, &ins, t);
}

int nk__view_json_deferred(const nk_profile *pr, const nk__view_insights *ins, nk_text *t)
{
    if (!pr || !pr->prog || !pr->tl)
        return NK_EINVAL;
    const nk_program *p = pr->prog;
    nk_view_rows rows;
    nk_view_summary sum;
    strtab st = {0};
    int rc = nk__view_rows_build(pr->prog, pr->tl, &rows);
    if (rc)
        return rc;
    uint32_t *opnd = nk__big_fixed((p->ninstr ? p->ninstr : 1) * sizeof *opnd);
    rc = opnd ? nk__view_summarize(pr, &sum) : NK_ENOMEM;
    if (rc)
        goto out;
    put_header(pr, t);
    put_rows(&rows, t);
    put_sources(pr, t);
    rc = put_instrs(pr, t, &st, opnd);
    if (rc)
        goto out;
    put_strings(&st, t);
    put_events(pr->tl, &rows, t);
    put_counters(pr->tl, t);
    rc = put_tiles(pr, t);
    if (rc)
        goto out;
    nk__vb_str(t, ",\"loops\":{\"loc\":["); /* per loop instance: its source location and trip count */
    for (uint32_t l = 0; l < p->nloops; l++) {
        if (l)
            nk__vb_chr(t, ',');
        nk__vb_u64(t, p->loops[l].loc);
    }
    nk__vb_str(t, "],\"trip\":[");
    for (uint32_t l = 0; l < p->nloops; l++) {
        if (l)
            nk__vb_chr(t, ',');
        nk__vb_i64(t, p->loops[l].trip);
    }
    nk__vb_str(t, "]}");
    nk__vb_str(t, ",\"regions\":"); /* the kernel launch: start-up and tear-down per core (or per kernel) */
    nk__view_regions_json(pr->tl, t);
    nk__vb_str(t, ",\"summary\":");
    rc = nk__view_summary_json(pr, &sum, t);
    if (rc)
        goto out;
    nk__vb_str(t, ",\"insights\":");
    const char *insights_json = ins && ins->get ? ins->get(ins->ctx) : NULL;
    put_json_escaped(t, insights_json && *insights_json ? insights_json : "[]");
    nk__vb_chr(t, '}');
    rc = t->oom ? NK_ENOMEM : NK_OK;
out:
    strtab_free(&st);
    free(opnd);
    nk__view_rows_free(&rows);
    return rc;
}
