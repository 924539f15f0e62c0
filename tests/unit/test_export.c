/*
 * test_export.c - the view's outputs: Perfetto/Chrome trace JSON, JSON and
 * CSV exports parsed back and checked against the profile; the viewer's data
 * model and page (escaping, decoding); the terminal timeline against a golden
 * file; the text helpers.
 *
 * The fixed profile below is written by hand, so the expected values are
 * known without running the timing model:
 *   #0 load  q0  [   0, 1000]  kern.c:2
 *   #1 load  q0  [ 200, 1200]  kern.c:2   overlaps #0 on the same queue
 *   #2 matmul    [1200, 1300] LoadStationary + [1300, 1700] MultiplyMoving, kern.c:3, waits for 0, 1
 *   #3 activation [1700, 2100] kern.c:4, waits for 2
 *   #4 tensor_tensor [2100, 2300] kern.c:4, waits for 3
 *   #5 store q1  [2300, 3300] kern.c:5, waits for 4
 */
#include "test.h"
#include "kernels.h"
#include "profile/profile.h"
#include "profile_fixture.h"
#include "core/vbuf.h"
#include "view/view.h"

#include <stdlib.h>

/* ---------------------------------------------------------------- a small JSON reader */

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct jv {
    int type;
    double num;
    char *str;          /* J_STR (decoded UTF-8) */
    struct jv **item;   /* J_ARR items / J_OBJ values */
    char **key;         /* J_OBJ keys */
    int n;
} jv;

typedef struct jp {
    const char *s;
    int err;
} jp;

static void ws(jp *p) { while (*p->s == ' ' || *p->s == '\n' || *p->s == '\r' || *p->s == '\t') p->s++; }
static jv *jparse(jp *p);

static void put_utf8(char **o, unsigned c)
{
    char *d = *o;
    if (c < 0x80) *d++ = (char)c;
    else if (c < 0x800) { *d++ = (char)(0xC0 | c >> 6); *d++ = (char)(0x80 | (c & 63)); }
    else if (c < 0x10000) { *d++ = (char)(0xE0 | c >> 12); *d++ = (char)(0x80 | ((c >> 6) & 63)); *d++ = (char)(0x80 | (c & 63)); }
    else { *d++ = (char)(0xF0 | c >> 18); *d++ = (char)(0x80 | ((c >> 12) & 63)); *d++ = (char)(0x80 | ((c >> 6) & 63)); *d++ = (char)(0x80 | (c & 63)); }
    *o = d;
}

static unsigned hex4(jp *p)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *p->s++;
        v = v * 16 + (unsigned)(c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : (p->err = 1, 0));
    }
    return v;
}

static char *jstring(jp *p)
{
    if (*p->s != '"') { p->err = 1; return NULL; }
    p->s++;
    size_t len = 0; /* the decoded string is no longer than its source up to the closing quote */
    while (p->s[len] && p->s[len] != '"')
        len += p->s[len] == '\\' && p->s[len + 1] ? 2 : 1;
    char *out = malloc(len + 1), *o = out;
    while (*p->s && *p->s != '"') {
        unsigned char c = (unsigned char)*p->s;
        if (c < 0x20) { p->err = 1; break; } /* raw control characters are not JSON */
        if (c != '\\') { *o++ = *p->s++; continue; }
        p->s++;
        char e = *p->s++;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned u = hex4(p);
            if (u >= 0xD800 && u < 0xDC00 && p->s[0] == '\\' && p->s[1] == 'u') {
                p->s += 2;
                u = 0x10000 + ((u - 0xD800) << 10) + (hex4(p) - 0xDC00);
            }
            put_utf8(&o, u);
            break;
        }
        default: p->err = 1;
        }
    }
    if (*p->s != '"') p->err = 1; else p->s++;
    *o = 0;
    return out;
}

static jv *jnew(int type) { jv *v = calloc(1, sizeof *v); v->type = type; return v; }

static void jpush(jv *v, char *key, jv *item)
{
    if (!(v->n & (v->n - 1))) { /* at 0, 1, 2, 4, ...: double, so long arrays parse in linear time */
        size_t cap = v->n ? 2 * (size_t)v->n : 1;
        v->item = realloc(v->item, cap * sizeof *v->item);
        v->key = realloc(v->key, cap * sizeof *v->key);
    }
    v->item[v->n] = item;
    v->key[v->n] = key;
    v->n++;
}

static jv *jparse(jp *p)
{
    ws(p);
    jv *v;
    if (*p->s == '{' || *p->s == '[') {
        int obj = *p->s == '{';
        v = jnew(obj ? J_OBJ : J_ARR);
        p->s++;
        ws(p);
        if (*p->s == (obj ? '}' : ']')) { p->s++; return v; }
        for (;;) {
            char *key = NULL;
            if (obj) {
                ws(p);
                key = jstring(p);
                ws(p);
                if (*p->s++ != ':') { p->err = 1; return v; }
            }
            jpush(v, key, jparse(p));
            ws(p);
            if (*p->s == ',') { p->s++; continue; }
            if (*p->s == (obj ? '}' : ']')) { p->s++; return v; }
            p->err = 1;
            return v;
        }
    }
    if (*p->s == '"') { v = jnew(J_STR); v->str = jstring(p); return v; }
    if (!strncmp(p->s, "true", 4) || !strncmp(p->s, "false", 5)) {
        v = jnew(J_BOOL); v->num = *p->s == 't'; p->s += *p->s == 't' ? 4 : 5; return v;
    }
    if (!strncmp(p->s, "null", 4)) { p->s += 4; return jnew(J_NULL); }
    /* JSON numbers: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
    const char *s = p->s;
    if (*s == '-') s++;
    if (*s == '0') s++;
    else if (*s >= '1' && *s <= '9') while (*s >= '0' && *s <= '9') s++;
    else { p->err = 1; return jnew(J_NULL); }
    if (*s == '.') { s++; if (!(*s >= '0' && *s <= '9')) p->err = 1; while (*s >= '0' && *s <= '9') s++; }
    if (*s == 'e' || *s == 'E') { s++; if (*s == '+' || *s == '-') s++; if (!(*s >= '0' && *s <= '9')) p->err = 1; while (*s >= '0' && *s <= '9') s++; }
    v = jnew(J_NUM);
    v->num = strtod(p->s, NULL);
    p->s = s;
    return v;
}

/* Parses a whole document; NULL if it is not valid JSON. */
static jv *jdoc(const char *s)
{
    jp p = {s, 0};
    jv *v = jparse(&p);
    ws(&p);
    if (p.err || *p.s)
        return NULL;
    return v;
}

static jv *jget(const jv *o, const char *key)
{
    if (!o || o->type != J_OBJ)
        return NULL;
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->key[i], key))
            return o->item[i];
    return NULL;
}

static double jnum(const jv *o, const char *key) { jv *v = jget(o, key); return v && v->type == J_NUM ? v->num : NAN; }
static const char *jstr(const jv *o, const char *key) { jv *v = jget(o, key); return v && v->type == J_STR ? v->str : NULL; }

static void jfree(jv *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->n; i++) {
        jfree(v->item[i]);
        if (v->key)
            free(v->key[i]);
    }
    free(v->item);
    free(v->key);
    free(v->str);
    free(v);
}

/* ---------------------------------------------------------------- the fixed profile */

typedef struct fixture {
    nk_program p;
    nk_timeline tl;
    nk_profile pr;
    nk_instr instrs[6];
    nk_bufinfo bufs[5];
    nk_locinfo locs[4];
    char *files[1];
    uint32_t deps[5];
    nk_event events[7];
    double istart[6], iend[6];
    nk_counter counter;
    double ct[3], cv[3];
    nk_source src;
    nk_layout lays[4];
    nk_xarg xarg[1]; /* the program's layout table, static as the rest */
} fixture;

static const char kern_src[] = "void kern(nk_ctx *nc)\n    x = load(in)\n    y = matmul(x)\n    z = add(exp(y), y)\n    store(out, z)\n";

static nk_tensor ap(uint32_t buf, uint8_t mem, int64_t off)
{
    nk_tensor t = {0};
    t.buf = buf;
    t.dtype = NK_F32;
    t.ndim = 2;
    t.mem = mem;
    t.shape[0] = 128;
    t.shape[1] = 512;
    t.stride[0] = mem == NK_SHARED_HBM ? 512 : 1;
    t.stride[1] = 1;
    t.off = off;
    return t;
}

/* t as an operand of the fixture's program: its layout found or added in
 * f->lays (no hash table, nothing to free). */
static nk_opnd fop(fixture *f, nk_tensor t)
{
    nk_program *p = &f->p;
    nk_layout l = nk__layout_of(&t);
    uint32_t k = 0;
    while (k < p->nlays && memcmp(&p->lays[k], &l, sizeof l))
        k++;
    if (k == p->nlays && k < NK_ARRAY_LEN(f->lays))
        memcpy(&p->lays[p->nlays++], &l, sizeof l);
    nk_opnd o = {.buf = t.buf, .lay = k + 1, .part0 = t.part0, .off = t.off};
    return o;
}

static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    nk_program *p = &f->p;
    snprintf(p->kernel, sizeof p->kernel, "kern");
    snprintf(p->target, sizeof p->target, "trn1");
    p->arch = nk__arch_get("trn1");
    p->lays = f->lays;
    p->cap_lays = NK_ARRAY_LEN(f->lays);
    p->xarg = f->xarg; /* room for one: nothing to free */
    p->cap_xarg = NK_ARRAY_LEN(f->xarg);
    f->files[0] = "tests/kern.c";
    p->files = f->files;
    p->nfiles = 1;
    for (int i = 0; i < 4; i++)
        f->locs[i] = (nk_locinfo){0, 2 + i};
    p->locs = f->locs;
    p->nlocs = 4;
    f->bufs[1] = (nk_bufinfo){.mem = NK_SHARED_HBM, .role = NK_ROLE_INPUT, .index = 0};
    f->bufs[2] = (nk_bufinfo){.mem = NK_SHARED_HBM, .role = NK_ROLE_OUTPUT, .index = 0};
    f->bufs[3] = (nk_bufinfo){.mem = NK_SBUF, .role = NK_ROLE_TILE, .addr = 0};
    f->bufs[4] = (nk_bufinfo){.mem = NK_PSUM, .role = NK_ROLE_TILE, .addr = 0};
    p->bufs = f->bufs;
    p->nbufs = 5;
    static const uint8_t op[6] = {NK_OP_LOAD, NK_OP_LOAD, NK_OP_MATMUL, NK_OP_ACTIVATION, NK_OP_TENSOR_TENSOR, NK_OP_STORE};
    static const uint8_t eng[6] = {NK_ENGINE_DMA, NK_ENGINE_DMA, NK_ENGINE_TENSOR, NK_ENGINE_SCALAR, NK_ENGINE_VECTOR, NK_ENGINE_DMA};
    static const uint32_t loc[6] = {0, 0, 1, 2, 2, 3};
    static const uint32_t ndep[6] = {0, 0, 2, 1, 1, 1};
    static const uint32_t deps[5] = {0, 1, 2, 3, 4};
    memcpy(f->deps, deps, sizeof deps);
    uint32_t off = 0;
    for (int i = 0; i < 6; i++) {
        nk_instr *in = &f->instrs[i];
        in->op = op[i];
        in->engine = eng[i];
        in->loc = loc[i];
        in->queue = i == 5 ? 1 : 0;
        in->dep_off = off;
        in->ndep = ndep[i];
        off += ndep[i];
        in->dst = fop(f, ap(3, NK_SBUF, i * 512));
        in->src[0] = fop(f, ap(3, NK_SBUF, 0));
        in->nsrc = 1;
    }
    f->instrs[0].src[0] = fop(f, ap(1, NK_SHARED_HBM, 0));
    f->instrs[1].src[0] = fop(f, ap(1, NK_SHARED_HBM, 65536));
    f->instrs[2].dst = fop(f, ap(4, NK_PSUM, 0));
    f->instrs[2].src[1] = fop(f, ap(3, NK_SBUF, 512));
    f->instrs[2].nsrc = 2;
    f->instrs[3].func = NK_ACT_EXP;
    nk__xarg_w(p, &f->instrs[3])->imm1 = 1.0;
    f->instrs[4].alu0 = NK_ALU_ADD;
    f->instrs[4].src[1] = fop(f, ap(4, NK_PSUM, 0));
    f->instrs[4].nsrc = 2;
    f->instrs[5].dst = fop(f, ap(2, NK_SHARED_HBM, 0));
    p->instrs = f->instrs;
    p->ninstr = 6;
    p->deps = f->deps;
    p->ndeps = 5;
    static const nk_event ev[7] = {
        {0, NK_ENGINE_DMA, NK_EV_DMA_ISSUE, 0, 0, 1000},
        {1, NK_ENGINE_DMA, NK_EV_DMA_ISSUE, 0, 200, 1200},
        {2, NK_ENGINE_TENSOR, NK_EV_LOAD_STATIONARY, 0, 1200, 1300},
        {2, NK_ENGINE_TENSOR, NK_EV_MULTIPLY_MOVING, 0, 1300, 1700},
        {3, NK_ENGINE_SCALAR, NK_EV_INSTR, 0, 1700, 2100},
        {4, NK_ENGINE_VECTOR, NK_EV_INSTR, 0, 2100, 2300},
        {5, NK_ENGINE_DMA, NK_EV_DMA_ISSUE, 1, 2300, 3300},
    };
    memcpy(f->events, ev, sizeof ev);
    static const double is[6] = {0, 200, 1200, 1700, 2100, 2300}, ie[6] = {1000, 1200, 1700, 2100, 2300, 3300};
    memcpy(f->istart, is, sizeof is);
    memcpy(f->iend, ie, sizeof ie);
    f->tl.total_ns = 3300;
    f->tl.events = f->events;
    f->tl.nevents = 7;
    f->tl.instr_start = f->istart;
    f->tl.instr_end = f->iend;
    snprintf(f->counter.name, sizeof f->counter.name, "sbuf_bytes");
    snprintf(f->counter.unit, sizeof f->counter.unit, "bytes");
    f->ct[0] = 0, f->ct[1] = 1000, f->ct[2] = 2300;
    f->cv[0] = 65536, f->cv[1] = 131072, f->cv[2] = 0;
    f->counter.n = 3;
    f->counter.t = f->ct;
    f->counter.value = f->cv;
    f->tl.counters = &f->counter;
    f->tl.ncounters = 1;
    f->src = (nk_source){f->files[0], (char *)kern_src};
    f->pr.prog = p;
    f->pr.tl = &f->tl;
    f->pr.sources = &f->src;
    snprintf(f->pr.nklab_version, sizeof f->pr.nklab_version, "0.1.0");
    f->pr.created_unix = 1700000000;
    f->pr.arch = *nk__arch_get("trn1");
}

static int count_str(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *s = hay; (s = strstr(s, needle)); s += strlen(needle))
        n++;
    return n;
}

/* ---------------------------------------------------------------- Perfetto / Chrome trace */

/* tid -> row name, from the thread_name metadata */
static const char *thread_name(const jv *evs, double tid)
{
    for (int i = 0; i < evs->n; i++) {
        const jv *e = evs->item[i];
        if (!strcmp(jstr(e, "ph"), "M") && !strcmp(jstr(e, "name"), "thread_name") && jnum(e, "tid") == tid)
            return jstr(jget(e, "args"), "name");
    }
    return NULL;
}

TEST(export_perfetto_structure_and_counts)
{
    fixture f;
    fixture_init(&f);
    nk_text t = {0};
    CHECK_INT(nk__export_perfetto(&f.pr, NULL, &t), NK_OK);
    jv *doc = jdoc(t.s);
    CHECK(doc != NULL);
    if (!doc) { nk__text_free(&t); return; }
    jv *evs = jget(doc, "traceEvents");
    CHECK(evs && evs->type == J_ARR);
    CHECK_STR(jstr(doc, "displayTimeUnit"), "ns");
    int nx = 0, nc = 0, ns = 0, nf = 0, nproc = 0, nthread = 0;
    for (int i = 0; i < evs->n; i++) {
        const jv *e = evs->item[i];
        const char *ph = jstr(e, "ph");
        CHECK(ph != NULL);
        CHECK_INT(jnum(e, "pid"), 1);
        if (!strcmp(ph, "X")) {
            nx++;
            const jv *a = jget(e, "args");
            CHECK(jstr(a, "opcode") && jstr(a, "operands") && jstr(a, "source"));
        }
        nc += !strcmp(ph, "C");
        ns += !strcmp(ph, "s");
        nf += !strcmp(ph, "f");
        if (!strcmp(ph, "M")) {
            nproc += !strcmp(jstr(e, "name"), "process_name");
            nthread += !strcmp(jstr(e, "name"), "thread_name");
        }
    }
    CHECK_INT(nx, 7);          /* one slice per event */
    CHECK_INT(nc, 3);          /* one sample per counter value */
    CHECK_INT(ns, 5);          /* one arrow per dependency */
    CHECK_INT(nf, 5);
    CHECK_INT(nproc, 1);
    /* Tensor Vector Scalar GpSimd Sync, DMA q0 in two lanes (#0 and #1 overlap), DMA q1 */
    CHECK_INT(nthread, 8);
    jfree(doc);
    nk__text_free(&t);
}

TEST(export_perfetto_slices_match_events)
{
    fixture f;
    fixture_init(&f);
    nk_text t = {0};
    CHECK_INT(nk__export_perfetto(&f.pr, NULL, &t), NK_OK);
    jv *doc = jdoc(t.s);
    jv *evs = jget(doc, "traceEvents");
    if (!evs) { jfree(doc); nk__text_free(&t); CHECK(0); return; }
    /* expected: instr, name, row, ts (us), dur (us), source */
    static const struct { int instr; const char *name, *row; double ts, dur; const char *src; } want[7] = {
        {0, "load", "DMA q0", 0, 1.0, "tests/kern.c:2"},
        {1, "load", "DMA q0 (2)", 0.2, 1.0, "tests/kern.c:2"},
        {2, "LoadStationary", "Tensor", 1.2, 0.1, "tests/kern.c:3"},
        {2, "MultiplyMoving", "Tensor", 1.3, 0.4, "tests/kern.c:3"},
        {3, "activation", "Scalar", 1.7, 0.4, "tests/kern.c:4"},
        {4, "tensor_tensor", "Vector", 2.1, 0.2, "tests/kern.c:4"},
        {5, "store", "DMA q1", 2.3, 1.0, "tests/kern.c:5"},
    };
    int k = 0;
    for (int i = 0; i < evs->n && k < 7; i++) {
        const jv *e = evs->item[i];
        if (strcmp(jstr(e, "ph"), "X"))
            continue;
        const jv *a = jget(e, "args");
        CHECK_INT(jnum(a, "instr"), want[k].instr);
        CHECK_STR(jstr(e, "name"), want[k].name);
        CHECK_STR(thread_name(evs, jnum(e, "tid")), want[k].row);
        CHECK_NEAR(jnum(e, "ts"), want[k].ts, 0, 1e-9);
        /* exact, or a picosecond short where ts + dur would round past the end */
        CHECK_NEAR(jnum(e, "dur"), want[k].dur, 0, 1e-6 + 1e-9);
        CHECK(jnum(e, "dur") <= want[k].dur + 1e-12);
        CHECK_STR(jstr(a, "source"), want[k].src);
        k++;
    }
    CHECK_INT(k, 7);
    /* the activation's operands, written out by hand */
    const jv *act = NULL;
    for (int i = 0; i < evs->n; i++)
        if (!strcmp(jstr(evs->item[i], "ph"), "X") && jnum(jget(evs->item[i], "args"), "instr") == 3)
            act = evs->item[i];
    CHECK_STR(jstr(jget(act, "args"), "operands"),
              "func=exp bias=0 scale=1 dst=sbuf[0:128]@6144 [128, 512] float32 src=sbuf[0:128]@0 [128, 512] float32");
    CHECK_STR(jstr(jget(act, "args"), "opcode"), "activation");
    jfree(doc);
    nk__text_free(&t);
}

TEST(export_perfetto_flows_bind_inside_slices)
{
    fixture f;
    fixture_init(&f);
    nk_text t = {0};
    CHECK_INT(nk__export_perfetto(&f.pr, NULL, &t), NK_OK);
    jv *doc = jdoc(t.s);
    jv *evs = jget(doc, "traceEvents");
    if (!evs) { jfree(doc); nk__text_free(&t); CHECK(0); return; }
    /* every s/f pair shares an id, and each end lies inside an X slice of its
     * thread: predecessor -> successor, as in the dependency list */
    static const int edge[5][2] = {{0, 2}, {1, 2}, {2, 3}, {3, 4}, {4, 5}};
    for (int k = 0; k < 5; k++) {
        const jv *s = NULL, *fl = NULL;
        for (int i = 0; i < evs->n; i++) {
            const jv *e = evs->item[i];
            if (jnum(e, "id") != k + 1)
                continue;
            if (!strcmp(jstr(e, "ph"), "s")) s = e;
            if (!strcmp(jstr(e, "ph"), "f")) fl = e;
        }
        CHECK(s && fl);
        if (!s || !fl)
            continue;
        CHECK_STR(jstr(fl, "bp"), "e");
        int from = -1, to = -1;
        for (int i = 0; i < evs->n; i++) {
            const jv *e = evs->item[i];
            if (strcmp(jstr(e, "ph"), "X"))
                continue;
            double ts = jnum(e, "ts"), te = ts + jnum(e, "dur");
            if (jnum(e, "tid") == jnum(s, "tid") && jnum(s, "ts") >= ts && jnum(s, "ts") <= te)
                from = (int)jnum(jget(e, "args"), "instr");
            if (jnum(e, "tid") == jnum(fl, "tid") && jnum(fl, "ts") >= ts && jnum(fl, "ts") <= te)
                to = (int)jnum(jget(e, "args"), "instr");
        }
        CHECK_INT(from, edge[k][0]);
        CHECK_INT(to, edge[k][1]);
        CHECK(jnum(fl, "ts") >= jnum(s, "ts")); /* never back in time */
    }
    /* into the matmul (#2): load #0 filled its stationary operand (src[0],
     * sbuf@0), load #1 its moving one (src[1], sbuf@2048) */
    static const char *const into_mm[2] = {"LoadStationary", "MultiplyMoving"};
    for (int k = 0; k < 2; k++) {
        const jv *fl = NULL, *slice = NULL;
        for (int i = 0; i < evs->n; i++)
            if (jnum(evs->item[i], "id") == k + 1 && !strcmp(jstr(evs->item[i], "ph"), "f"))
                fl = evs->item[i];
        for (int i = 0; fl && i < evs->n; i++) {
            const jv *e = evs->item[i];
            double ts = jnum(e, "ts");
            if (!strcmp(jstr(e, "ph"), "X") && jnum(e, "tid") == jnum(fl, "tid") && jnum(fl, "ts") > ts &&
                jnum(fl, "ts") < ts + jnum(e, "dur"))
                slice = e;
        }
        CHECK(slice != NULL);
        CHECK_STR(slice ? jstr(slice, "name") : NULL, into_mm[k]);
    }
    jfree(doc);
    nk__text_free(&t);
    nk_export_opts o = {.no_flows = 1};
    CHECK_INT(nk__export_perfetto(&f.pr, &o, &t), NK_OK);
    CHECK_INT(count_str(t.s, "\"ph\":\"s\""), 0);
    CHECK_INT(count_str(t.s, "\"ph\":\"X\""), 7);
    nk__text_free(&t);
}

TEST(export_perfetto_lanes_never_overlap_on_a_thread)
{
    fixture f;
    fixture_init(&f);
    nk_text t = {0};
    CHECK_INT(nk__export_perfetto(&f.pr, NULL, &t), NK_OK);
    jv *doc = jdoc(t.s);
    jv *evs = jget(doc, "traceEvents");
    if (!evs) { jfree(doc); nk__text_free(&t); CHECK(0); return; }
    for (int i = 0; i < evs->n; i++)
        for (int j = 0; j < evs->n; j++) {
            const jv *a = evs->item[i], *b = evs->item[j];
            if (i == j || strcmp(jstr(a, "ph"), "X") || strcmp(jstr(b, "ph"), "X") || jnum(a, "tid") != jnum(b, "tid"))
                continue;
            double a0 = jnum(a, "ts"), a1 = a0 + jnum(a, "dur"), b0 = jnum(b, "ts");
            CHECK(!(b0 > a0 && b0 < a1)); /* b starts inside a: a partial overlap */
        }
    jfree(doc);
    nk__text_free(&t);
}

/* ---------------------------------------------------------------- JSON and CSV */

TEST(export_json_summary_and_instructions)
{
    fixture f;
    fixture_init(&f);
    nk_text t = {0};
    CHECK_INT(nk__export_json(&f.pr, NULL, &t), NK_OK);
    jv *doc = jdoc(t.s);
    CHECK(doc != NULL);
    jv *ins = jget(doc, "instructions"), *sum = jget(doc, "summary");
    if (!ins || !sum) { jfree(doc); nk__text_free(&t); CHECK(0); return; }
    CHECK_STR(jstr(doc, "kernel"), "kern");
    CHECK_INT(ins->n, 6);
    CHECK_NEAR(jnum(sum, "total_time"), 3300e-9, 1e-9, 0);
    CHECK_INT(jnum(sum, "instruction_count"), 6);
    CHECK_INT(jnum(sum, "event_count"), 7);
    CHECK_NEAR(jnum(sum, "tensor_engine_active_time_percent"), 100.0 * 500 / 3300, 1e-6, 0);
    CHECK_STR(jstr(jget(sum, "units"), "total_time"), "s");
    /* opcode table: matmul counts as its two parts */
    jv *ops = jget(sum, "opcodes");
    CHECK(ops && ops->n == 6);
    for (int i = 0; ops && i < ops->n; i++)
        if (!strcmp(jstr(ops->item[i], "opcode"), "load")) {
            CHECK_INT(jnum(ops->item[i], "count"), 2);
            CHECK_NEAR(jnum(ops->item[i], "total_ns"), 2000, 0, 1e-9);
            CHECK_NEAR(jnum(ops->item[i], "average_ns"), 1000, 0, 1e-9);
        }
    static const double start[6] = {0, 200, 1200, 1700, 2100, 2300}, dur[6] = {1000, 1000, 500, 400, 200, 1000};
    static const char *const op[6] = {"load", "load", "nc_matmul", "activation", "tensor_tensor", "store"};
    static const char *const engine[6] = {"dma", "dma", "tensor", "scalar", "vector", "dma"};
    static const int line[6] = {2, 2, 3, 4, 4, 5}, ndep[6] = {0, 0, 2, 1, 1, 1};
    for (int i = 0; i < 6 && i < ins->n; i++) {
        const jv *x = ins->item[i];
        CHECK_INT(jnum(x, "index"), i);
        CHECK_NEAR(jnum(x, "start_ns"), start[i], 0, 1e-9);
        CHECK_NEAR(jnum(x, "duration_ns"), dur[i], 0, 1e-9);
        CHECK_STR(jstr(x, "opcode"), op[i]);
        CHECK_STR(jstr(x, "engine"), engine[i]);
        CHECK_STR(jstr(x, "file"), "tests/kern.c");
        CHECK_INT(jnum(x, "line"), line[i]);
        CHECK_INT(jget(x, "deps")->n, ndep[i]);
        CHECK_INT(jnum(x, "bytes"), 128 * 512 * 4);
    }
    CHECK_STR(jstr(ins->item[1], "operands"), "dst=sbuf[0:128]@2048 [128, 512] float32 src=in0[128, 512] float32 +65536");
    jfree(doc);
    nk__text_free(&t);
    /* a time range keeps the instructions overlapping it: [1250, 1800] holds #2 and #3 */
    nk_export_opts o = {.from_ns = 1250, .to_ns = 1800};
    CHECK_INT(nk__export_json(&f.pr, &o, &t), NK_OK);
    doc = jdoc(t.s);
    ins = jget(doc, "instructions");
    CHECK(ins && ins->n == 2);
    if (ins && ins->n == 2) {
        CHECK_INT(jnum(ins->item[0], "index"), 2);
        CHECK_INT(jnum(ins->item[1], "index"), 3);
    }
    jfree(doc);
    nk__text_free(&t);
}

/* Splits RFC 4180 CSV into rows of fields; returns the number of rows. */
static int csv_parse(const char *s, char fields[][18][256], int maxrows, int *nfields)
{
    int r = 0;
    while (*s && r < maxrows) {
        int c = 0;
        for (;;) {
            char *o = fields[r][c];
            int k = 0;
            if (*s == '"') {
                s++;
                while (*s && !(*s == '"' && s[1] != '"')) {
                    if (*s == '"') s++;
                    if (k < 255) o[k++] = *s;
                    s++;
                }
                if (*s == '"') s++;
            } else {
                while (*s && *s != ',' && *s != '\r' && *s != '\n')
                    if (k < 255) o[k++] = *s++;
                    else s++;
            }
            o[k] = 0;
            c++;
            if (*s == ',' && c < 18) { s++; continue; }
            break;
        }
        nfields[r++] = c;
        if (*s == '\r') s++;
        if (*s == '\n') s++;
    }
    return r;
}

TEST(export_csv_rows_and_quoting)
{
    fixture f;
    fixture_init(&f);
    nk_text t = {0};
    CHECK_INT(nk__export_csv(&f.pr, NULL, &t), NK_OK);
    static char fields[8][18][256];
    int nf[8];
    int rows = csv_parse(t.s, fields, 8, nf);
    CHECK_INT(rows, 7); /* header + 6 instructions */
    CHECK_STR(fields[0][0], "index");
    CHECK_STR(fields[0][7], "operands");
    for (int r = 0; r < rows; r++)
        CHECK_INT(nf[r], 17);
    CHECK_STR(fields[0][15], "call");
    CHECK_STR(fields[0][16], "lowered_from");
    CHECK_STR(fields[2][15], ""); /* a program built by hand records no API calls */
    CHECK_STR(fields[2][0], "1");
    CHECK_STR(fields[2][1], "200");
    CHECK_STR(fields[2][3], "1000");
    CHECK_STR(fields[2][4], "dma");
    CHECK_STR(fields[2][5], "0");
    CHECK_STR(fields[2][6], "load");
    /* operands hold ", " (shapes): quoted, and read back whole */
    CHECK_STR(fields[2][7], "dst=sbuf[0:128]@2048 [128, 512] float32 src=in0[128, 512] float32 +65536");
    CHECK_STR(fields[3][11], "0 1");
    CHECK_STR(fields[3][9], "tests/kern.c");
    CHECK_STR(fields[3][10], "3");
    CHECK_STR(fields[0][12], "core");
    CHECK_STR(fields[3][12], "0");
    CHECK_STR(fields[3][13], "0");
    CHECK(strstr(t.s, "\"dst=sbuf[0:128]@2048 [128, 512] float32") != NULL);
    nk__text_free(&t);
}

/* ---------------------------------------------------------------- viewer data and page */

/* The JSON inside <script type="application/json" id="nk-data">...</script>. */
static char *page_data(const char *html)
{
    const char *open = "<script type=\"application/json\" id=\"nk-data\">";
    const char *a = strstr(html, open);
    if (!a)
        return NULL;
    a += strlen(open);
    const char *b = strstr(a, "</script>");
    if (!b)
        return NULL;
    char *s = malloc((size_t)(b - a) + 1);
    memcpy(s, a, (size_t)(b - a));
    s[b - a] = 0;
    return s;
}

TEST(view_json_decodes_to_the_timeline)
{
    fixture f;
    fixture_init(&f);
    nk_text t = {0};
    CHECK_INT(nk__view_json(&f.pr, NULL, &t), NK_OK);
    jv *d = jdoc(t.s);
    CHECK(d != NULL);
    if (!d) { nk__text_free(&t); return; }
    CHECK_STR(jstr(d, "format"), "nklab-view");
    jv *ev = jget(d, "events"), *in = jget(d, "instr"), *rows = jget(d, "rows");
    CHECK_INT(jnum(ev, "n"), 7);
    CHECK_INT(jnum(in, "n"), 6);
    CHECK_INT(rows->n, 7); /* five engines, DMA q0, DMA q1 */
    CHECK_STR(jstr(rows->item[5], "name"), "DMA q0");
    CHECK_STR(jstr(rows->item[6], "name"), "DMA q1");
    /* cumulative sums of the deltas give back the events, in picoseconds */
    jv *di = jget(ev, "instr_delta"), *ds = jget(ev, "start_ps_delta"), *du = jget(ev, "dur_ps"), *row = jget(ev, "row");
    double ins = 0, ps = 0;
    for (int e = 0; e < 7; e++) {
        ins += di->item[e]->num;
        ps += ds->item[e]->num;
        CHECK_INT(ins, f.events[e].instr);
        CHECK_NEAR(ps, f.events[e].start * 1000, 0, 1e-9);
        CHECK_NEAR(du->item[e]->num, (f.events[e].end - f.events[e].start) * 1000, 0, 1e-9);
    }
    static const int want_row[7] = {5, 5, 0, 0, 2, 1, 6};
    for (int e = 0; e < 7; e++)
        CHECK_INT(row->item[e]->num, want_row[e]);
    /* operand templates: "\x01" takes the next number of opnd_num */
    jv *strs = jget(d, "strings"), *opnd = jget(in, "opnd"), *num = jget(in, "opnd_num");
    const char *tpl = strs->item[(int)opnd->item[1]->num]->str;
    CHECK_STR(tpl, "dst=sbuf[0:128]@2048 [128, 512] float32 src=in0[128, 512] float32 +\x01");
    CHECK_INT(num->n, 3);          /* the HBM offsets of the two loads and the store */
    CHECK_INT(num->item[1]->num, 65536);
    CHECK_INT(num->item[2]->num, 0);
    /* dependencies as i - j */
    jv *nd = jget(in, "ndep"), *dd = jget(in, "dep_delta");
    CHECK_INT(nd->item[2]->num, 2);
    CHECK_INT(dd->n, 5);
    CHECK_INT(dd->item[0]->num, 2); /* #2 waits for #0 */
    CHECK_INT(dd->item[1]->num, 1); /* #2 waits for #1 */
    CHECK_STR(jstr(jget(d, "files")->item[0], "text"), kern_src);
    jv *c = jget(d, "counters");
    CHECK_INT(c->n, 1);
    CHECK_STR(jstr(c->item[0], "unit"), "bytes");
    CHECK_INT(jget(c->item[0], "v")->item[1]->num, 131072);
    CHECK(jget(d, "insights") && jget(d, "insights")->type == J_ARR);
    jfree(d);
    nk__text_free(&t);
}

TEST(view_html_is_self_contained_and_script_safe)
{
    fixture f;
    fixture_init(&f);
    /* hostile strings everywhere text enters the page */
    static const char evil_src[] = "// </script><script>alert(1)</script> <!-- x --> & \xe2\x80\xa8 end \xff\n";
    f.src.text = (char *)evil_src;
    snprintf(f.p.kernel, sizeof f.p.kernel, "k</script><!--");
    f.files[0] = "a</script>.c";
    nk_text t = {0};
    const char *insights = "[{\"title\":\"</script><!--\",\"detail\":\"a & b\"}]";
    CHECK_INT(nk__view_html(&f.pr, insights, &t), NK_OK);
    /* exactly the template's own closing tags, and no comment opener */
    CHECK_INT(count_str(t.s, "</script"), count_str(nk__view_asset_html, "</script"));
    CHECK_INT(count_str(t.s, "<!--"), 0);
    CHECK_INT(count_str(t.s, "{{"), count_str(nk__view_asset_js, "{{") + count_str(nk__view_asset_css, "{{"));
    /* nothing fetched from elsewhere */
    CHECK_INT(count_str(t.s, "http://") + count_str(t.s, "https://"), 0);
    CHECK_CONTAINS(t.s, "<title>k&lt;/script&gt;&lt;!-- (trn1) - nklab profile</title>");
    char *data = page_data(t.s);
    CHECK(data != NULL);
    jv *d = data ? jdoc(data) : NULL;
    CHECK(d != NULL);
    if (d) {
        CHECK_STR(jstr(d, "kernel"), "k</script><!--");
        CHECK_STR(jstr(jget(d, "files")->item[0], "path"), "a</script>.c");
        /* the text comes back whole; the invalid byte as U+FFFD */
        CHECK_STR(jstr(jget(d, "files")->item[0], "text"),
                  "// </script><script>alert(1)</script> <!-- x --> & \xe2\x80\xa8 end \xef\xbf\xbd\n");
        CHECK_STR(jstr(jget(d, "insights")->item[0], "title"), "</script><!--");
    }
    jfree(d);
    free(data);
    nk__text_free(&t);
}

TEST(view_html_of_a_real_kernel)
{
    const nk_kernel_info *ki = nk_builtin_kernel("tensor_exp");
    CHECK(ki != NULL);
    if (!ki)
        return;
    nk_array in;
    CHECK_INT(nk_array_alloc(&in, ki->args[0].dtype, ki->args[0].ndim, ki->args[0].shape), 0);
    nk_kernel *k = nk_kernel_new("tensor_exp", ki->fn);
    const nk_program *p;
    CHECK_INT(nk_kernel_compile(k, &in, 1, NULL, &p), 0);
    nk_profile *pr = NULL;
    CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    if (!pr) { nk_kernel_free(k); nk_array_free(&in); return; }
    nk_text html = {0}, trace = {0}, csv = {0};
    CHECK_INT(nk__view_html(pr, NULL, &html), NK_OK);
    char *data = page_data(html.s);
    jv *d = data ? jdoc(data) : NULL;
    CHECK(d != NULL);
    CHECK_INT(jnum(jget(d, "instr"), "n"), pr->prog->ninstr);
    CHECK_INT(jnum(jget(d, "events"), "n"), pr->tl->nevents);
    /* the kernel's source came along */
    int has_source = 0;
    for (int i = 0; d && i < jget(d, "files")->n; i++) {
        const jv *fv = jget(d, "files")->item[i];
        const char *path = jstr(fv, "path");
        has_source |= path && strstr(path, "kernels/tensor_exp.c") && jstr(fv, "text") && strstr(jstr(fv, "text"), "nk_exp");
    }
    CHECK(has_source);
    CHECK_INT(nk__export_perfetto(pr, NULL, &trace), NK_OK);
    CHECK(pr->tl->nregions == 2); /* start-up and tear-down */
    CHECK_INT(count_str(trace.s, "\"ph\":\"X\""), pr->tl->nevents + pr->tl->nregions);
    CHECK_INT(nk__export_csv(pr, NULL, &csv), NK_OK);
    CHECK_INT(count_str(csv.s, "\r\n"), pr->prog->ninstr + 1);
    jfree(d);
    free(data);
    nk__text_free(&html);
    nk__text_free(&trace);
    nk__text_free(&csv);
    nk_profile_free(pr);
    nk_kernel_free(k);
    nk_array_free(&in);
}

/* Every flow of every built-in kernel's profile, on trn1 and trn2 (the SPMD
 * kernels on their launch grid): it starts inside a slice of the
 * predecessor, ends inside the slice of a successor that consumes it (a
 * matmul's LoadStationary only for its stationary operand) and never ends
 * before it starts. */
typedef struct fslice {
    double pid, tid, ts, te;
    int instr, mm; /* mm: 0 other, 1 LoadStationary, 2 MultiplyMoving */
} fslice;

static int cmp_fslice(const void *x, const void *y)
{
    const fslice *a = x, *b = y;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

/* The slices of (pid, tid) that contain ts: [*lo, *hi) of the sorted array. */
static void slices_at(const fslice *s, int n, double pid, double tid, double ts, int *lo, int *hi)
{
    int a = 0, b = n;
    fslice key = {pid, tid, ts, 0, 0, 0};
    while (a < b) { /* first slice starting after ts */
        int m = (a + b) / 2;
        fslice k2 = key;
        k2.ts = ts;
        if (cmp_fslice(&s[m], &k2) <= 0) a = m + 1; else b = m;
    }
    *hi = a;
    int k = a - 1;
    while (k >= 0 && s[k].pid == pid && s[k].tid == tid && s[k].te >= ts)
        k--;
    *lo = k + 1;
}

static int depends_on(const nk_program *p, int i, int j)
{
    const nk_instr *in = &p->instrs[i];
    for (uint32_t d = 0; d < in->ndep; d++)
        if ((int)p->deps[in->dep_off + d] == j)
            return 1;
    return 0;
}

static void check_flows_of(const nk_profile *pr, const char *what, int *nflows, int *nmoving)
{
    const nk_program *p = pr->prog;
    nk_text t = {0};
    CHECK_INT(nk__export_perfetto(pr, NULL, &t), NK_OK);
    jv *doc = jdoc(t.s);
    jv *evs = jget(doc, "traceEvents");
    CHECK(evs != NULL);
    if (!evs) { jfree(doc); nk__text_free(&t); return; }
    fslice *sl = calloc((size_t)evs->n + 1, sizeof *sl);
    const jv **start = calloc((size_t)2 * evs->n + 2, sizeof *start), **fin = start + evs->n + 1;
    int n = 0, bad = 0;
    for (int i = 0; i < evs->n; i++) {
        const jv *e = evs->item[i];
        const char *ph = jstr(e, "ph"), *name = jstr(e, "name");
        if (!strcmp(ph, "X")) {
            double ts = jnum(e, "ts"), instr = jnum(jget(e, "args"), "instr"); /* none: a launch slice */
            sl[n++] = (fslice){jnum(e, "pid"), jnum(e, "tid"), ts, ts + jnum(e, "dur"),
                               instr >= 0 && instr < 1e9 ? (int)instr : -1,
                               !strcmp(name, "LoadStationary") ? 1 : !strcmp(name, "MultiplyMoving") ? 2 : 0};
        } else if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
            double id = jnum(e, "id");
            if (!(id >= 1 && id <= evs->n)) { bad++; continue; }
            (ph[0] == 's' ? start : fin)[(int)id] = e;
        }
    }
    qsort(sl, (size_t)n, sizeof *sl, cmp_fslice);
    for (int id = 1; id <= evs->n; id++) {
        const jv *s = start[id], *f = fin[id];
        if (!s && !f)
            continue;
        if (!s || !f) { bad++; continue; }
        ++*nflows;
        double t0 = jnum(s, "ts"), t1 = jnum(f, "ts");
        if (!(t1 >= t0)) {
            if (bad++ < 3)
                nk_test_fail(__FILE__, __LINE__, "%s: flow %d ends at %.6f us, before its start at %.6f us", what, id, t1, t0);
            continue;
        }
        int a0, a1, b0, b1, ok = 0;
        slices_at(sl, n, jnum(s, "pid"), jnum(s, "tid"), t0, &a0, &a1);
        slices_at(sl, n, jnum(f, "pid"), jnum(f, "tid"), t1, &b0, &b1);
        for (int a = a0; a < a1 && !ok; a++)
            for (int b = b0; b < b1 && !ok; b++) {
                int i = sl[b].instr, j = sl[a].instr;
                if (i < 0 || i >= (int)p->ninstr || j < 0 || j >= (int)p->ninstr || !depends_on(p, i, j))
                    continue;
                int stat = nk__feeds_stationary(p, &p->instrs[i], &p->instrs[j]);
                ok = sl[b].mm == 0 || sl[b].mm == (stat ? 1 : 2);
                *nmoving += ok && sl[b].mm == 2;
            }
        if (!ok && bad++ < 3)
            nk_test_fail(__FILE__, __LINE__, "%s: flow %d (%.6f -> %.6f us) does not join a dependency to the slice "
                         "that consumes it", what, id, t0, t1);
    }
    CHECK_INT(bad, 0);
    free(start);
    free(sl);
    jfree(doc);
    nk__text_free(&t);
}

TEST(export_perfetto_flows_of_every_builtin_point_forward)
{
    static const char *const targets[2] = {"trn1", "trn2"};
    int nflows = 0, nmoving = 0;
    for (int ti = 0; ti < 2; ti++)
        for (int ki = 0; ki < nk_builtin_kernel_count; ki++) {
            const nk_kernel_info *info = &nk_builtin_kernels[ki];
            nk_kernel *k;
            nk_profile *pr = fx_builtin_profile(info, targets[ti], &k);
            if (pr) {
                char what[96];
                snprintf(what, sizeof what, "%s on %s", info->name, targets[ti]);
                int before = nflows;
                check_flows_of(pr, what, &nflows, &nmoving);
                CHECK(nflows - before == (int)pr->prog->ndeps);
            }
            nk_profile_free(pr);
            nk_kernel_free(k);
        }
    CHECK(nflows > 10000);
    CHECK(nmoving > 100); /* the matmul kernels' moving operands do arrive last */
}

/* The kernel launch is a "Launch" thread of each core's process in the
 * trace, and a launch_regions list in the JSON export, both as timed. */
TEST(export_launch_regions_per_core)
{
    const nk_kernel_info *info = nk_builtin_kernel("spmd_tensor_add");
    CHECK(info != NULL);
    if (!info)
        return;
    nk_kernel *k;
    nk_profile *pr = fx_builtin_profile(info, "trn2", &k);
    if (!pr) {
        nk_kernel_free(k);
        return;
    }
    const nk_timeline *tl = pr->tl;
    CHECK_INT(tl->nregions, 4); /* two cores on trn2, a start-up and a tear-down each */
    nk_text t = {0}, js = {0};
    CHECK_INT(nk__export_perfetto(pr, NULL, &t), NK_OK);
    jv *doc = jdoc(t.s);
    jv *evs = doc ? jget(doc, "traceEvents") : NULL;
    CHECK(evs != NULL);
    int found[8] = {0};
    for (int i = 0; evs && i < evs->n; i++) {
        const jv *e = evs->item[i];
        if (strcmp(jstr(e, "ph"), "X") || strcmp(jstr(e, "cat"), "launch"))
            continue;
        CHECK_STR(thread_name(evs, jnum(e, "tid")), "Launch");
        int core = (int)jnum(e, "pid") - 1;
        const char *kind = jstr(jget(e, "args"), "region");
        int matched = 0;
        for (uint32_t r = 0; r < tl->nregions && r < 8; r++) {
            const nk_region *g = &tl->regions[r];
            if (g->core != core || strcmp(kind, g->kind == NK_REGION_STARTUP ? "start-up" : "tear-down"))
                continue;
            CHECK_NEAR(jnum(e, "ts"), g->start / 1000.0, 0, 1e-6);
            CHECK_NEAR(jnum(e, "dur"), (g->end - g->start) / 1000.0, 0, 2e-6); /* 1 ps short at most */
            found[r]++;
            matched = 1;
        }
        CHECK(matched);
    }
    for (uint32_t r = 0; r < tl->nregions && r < 8; r++)
        CHECK_INT(found[r], 1);
    /* and no instruction slice on the Launch thread */
    CHECK_INT(count_str(t.s, "\"cat\":\"launch\""), (int)tl->nregions);
    CHECK_INT(nk__export_json(pr, NULL, &js), NK_OK);
    jv *jd = jdoc(js.s);
    const jv *lr = jd ? jget(jd, "launch_regions") : NULL;
    CHECK(lr && lr->type == J_ARR && lr->n == (int)tl->nregions);
    for (int r = 0; lr && r < lr->n && r < (int)tl->nregions; r++) {
        CHECK_INT(jnum(lr->item[r], "core"), tl->regions[r].core);
        CHECK_NEAR(jnum(lr->item[r], "end_ns"), tl->regions[r].end, 0, 1e-3);
    }
    jfree(jd);
    jfree(doc);
    nk__text_free(&js);
    nk__text_free(&t);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* ---------------------------------------------------------------- terminal timeline */

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

TEST(timeline_matches_golden_file)
{
    fixture f;
    fixture_init(&f);
    nk_text t = {0};
    CHECK_INT(nk__view_timeline(&f.pr, 100, &t), NK_OK);
    const char *golden = read_file("tests/golden/timeline_fixed.txt");
    CHECK(golden != NULL);
    if (golden && strcmp(t.s, golden)) {
        printf("--- got:\n%s--- want (tests/golden/timeline_fixed.txt):\n%s", t.s, golden);
        CHECK(0);
    }
    nk__text_free(&t);
}

TEST(timeline_rows_widths_and_shares)
{
    fixture f;
    fixture_init(&f);
    for (int width = 40; width <= 160; width += 60) {
        nk_text t = {0};
        CHECK_INT(nk__view_timeline(&f.pr, width, &t), NK_OK);
        /* rows: "Name      |bars|  xx.x%" exactly width characters */
        static const char *const row[7] = {"Tensor", "Vector", "Scalar", "GpSimd", "Sync", "DMA q0", "DMA q1"};
        static const char *const pct[7] = {"15.2%", "6.1%", "12.1%", "0.0%", "0.0%", "36.4%", "30.3%"};
        for (int r = 0; r < 7; r++) {
            const char *l = strstr(t.s, row[r]);
            CHECK(l != NULL);
            if (!l)
                continue;
            const char *e = strchr(l, '\n');
            CHECK_INT(e - l, width);
            char line[256];
            snprintf(line, sizeof line, "%.*s", (int)(e - l), l);
            CHECK_CONTAINS(line, pct[r]);
        }
        nk__text_free(&t);
    }
    /* one column per 3300/81 ns at width 100: the Tensor row's busy columns */
    nk_text t = {0};
    CHECK_INT(nk__view_timeline(&f.pr, 100, &t), NK_OK);
    const char *l = strstr(t.s, "Tensor    |") + 11;
    double dt = 3300.0 / 81;
    for (int c = 0; c < 81; c++) {
        double lo = c * dt, hi = lo + dt;
        double busy = fmax(0, fmin(hi, 1700) - fmax(lo, 1200)) / dt;
        char want = busy <= 0 ? ' ' : busy < 0.2 ? '.' : busy < 0.4 ? ':' : busy < 0.6 ? '-' : busy < 0.8 ? '=' : '#';
        if (l[c] != want)
            nk_test_fail(__FILE__, __LINE__, "column %d: '%c' != '%c' (busy %.3f)", c, l[c], want, busy);
    }
    nk__text_free(&t);
}

TEST(view_rejects_bad_arguments)
{
    fixture f;
    fixture_init(&f);
    nk_text t = {0};
    CHECK_INT(nk__view_timeline(&f.pr, 39, &t), NK_EINVAL);
    CHECK_INT(nk__view_timeline(NULL, 100, &t), NK_EINVAL);
    CHECK_INT(nk__view_html(NULL, NULL, &t), NK_EINVAL);
    CHECK_INT(nk__export_perfetto(NULL, NULL, &t), NK_EINVAL);
    CHECK_INT(nk__export_json(NULL, NULL, &t), NK_EINVAL);
    CHECK_INT(nk__export_csv(NULL, NULL, &t), NK_EINVAL);
    nk__text_printf(&t, "x");
    CHECK_INT(nk__view_write_file("/nonexistent-dir/x.html", &t), NK_EIO);
    nk__text_free(&t);
    /* an empty timeline still prints its header */
    f.tl.nevents = 0;
    f.tl.total_ns = 0;
    CHECK_INT(nk__view_timeline(&f.pr, 100, &t), NK_OK);
    CHECK_CONTAINS(t.s, "(empty timeline)");
    nk__text_free(&t);
}

/* ---------------------------------------------------------------- text helpers */

/* The file a streamed export or page writes (nk__vb_out: a megabyte at a
 * time as the text is made) is the text made in memory, byte for byte, for
 * a profile whose every output is more than two of them (about 10,000
 * instructions); and it reports what it wrote. */
TEST(export_and_page_streamed_are_the_text_in_memory)
{
    nk_array args[2] = {{NK_BF16, 2, {4096, 2048}, NULL}, {NK_BF16, 2, {4096, 4096}, NULL}};
    nk_kernel *k = nk_kernel_new("matmul_tiled", nk_kernel_matmul_tiled);
    nk_options opt = {.target = "trn1"};
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    CHECK_INT(nk_kernel_compile(k, args, 2, &opt, &p), 0);
    if (p)
        CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    static const char *const fmts[3] = {"perfetto", "json", "csv"};
    int (*const fns[3])(const nk_profile *, const nk_export_opts *, nk_text *) = {
        nk__export_perfetto, nk__export_json, nk__export_csv};
    nk_export_opts o = {0};
    for (int f = 0; pr && f < 4; f++) {
        nk_text t = {0};
        uint64_t bytes = 0;
        char why[256] = "x";
        if (f < 3) {
            CHECK_INT(fns[f](pr, &o, &t), 0);
            CHECK_INT(nk__export_to(pr, fmts[f], &o, fx_tmp("e.out"), &bytes, why, sizeof why), 0);
        } else {
            CHECK_INT(nk__view_page(pr, NULL, NULL, NULL, &t), 0);
            CHECK_INT(nk__view_page_to(pr, NULL, NULL, NULL, fx_tmp("e.out"), &bytes, why, sizeof why), 0);
        }
        if (t.len <= (3u << 19)) /* two chunks at least */
            nk_test_fail(__FILE__, __LINE__, "%s: %zu bytes", f < 3 ? fmts[f] : "page", t.len);
        CHECK_INT(bytes, t.len);
        CHECK_STR(why, "");
        if (!fx_file_is(fx_tmp("e.out"), t.s, t.len))
            nk_test_fail(__FILE__, __LINE__, "%s: the streamed file is not the text", f < 3 ? fmts[f] : "page");
        nk__text_free(&t);
    }
    nk_profile_free(pr);
    nk_kernel_free(k);
    unlink(fx_tmp("e.out"));
    fx_tmp_done();
}

/* nk__vb_g10 against snprintf's "%.10g": values of every magnitude (both
 * sides of the fast path's range), integers, halves, exact ties at the tenth
 * digit, numbers that round up to the next power of ten, and random bit
 * patterns; byte for byte. */
TEST(vbuf_g10_is_printf_exactly)
{
    static const double fixed[] = {0, -0.0, 1, -1, 1300, 2.5, 0.1, 1e-4, 9.99999999995e-5, 1.00000000005e-4,
                                   9999999999.4, 9999999999.5, 9999999999.6, 1e10, 123456789.5, 123456788.5,
                                   1234567890.5, 1234567891.5, 0.000123456789012345, 3.14159265358979,
                                   99999.999995, 99999.999985, 1e300, -1e-300, 5e-324, 1.0 / 3, 2.0 / 3, 1e9,
                                   999999999.95, 4.35e8, 396648096.123456};
    uint64_t state = 0x9E3779B97F4A7C15ull;
    int bad = 0, n = 0;
    for (int k = 0; k < 400000; k++) {
        double x;
        if (k < (int)(sizeof fixed / sizeof fixed[0]))
            x = fixed[k];
        else {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if (k % 3 == 0) { /* any finite bit pattern in the range that matters */
                double u = (double)(state >> 11) / 9007199254740992.0;
                x = pow(10, -6 + 17 * u) * (state & 1 ? -1 : 1);
            } else if (k % 3 == 1) { /* a timeline's times: a few ns steps */
                x = (double)(state % 100000000000ull) / 1000.0;
            } else { /* a tie at the tenth digit, scaled by a power of two */
                x = ldexp((double)(state % 2000000000ull) + 0.5, -(int)(state >> 60));
            }
        }
        char want[64];
        snprintf(want, sizeof want, "%.10g", x);
        nk_text t = {0};
        nk__vb_g10(&t, x);
        n++;
        if (!t.s || strcmp(t.s, want)) {
            if (bad++ < 5)
                printf("  %.17g: \"%s\", printf \"%s\"\n", x, t.s ? t.s : "(null)", want);
        }
        nk__text_free(&t);
    }
    CHECK_INT(bad, 0);
    CHECK_INT(n, 400000);
}

TEST(vbuf_numbers_strings_and_csv)
{
    nk_text t = {0};
    nk__vb_num(&t, 1.5, 3);
    nk__vb_chr(&t, ' ');
    nk__vb_num(&t, 2.0, 3);
    nk__vb_chr(&t, ' ');
    nk__vb_num(&t, -0.0004, 3);
    nk__vb_chr(&t, ' ');
    nk__vb_num(&t, -12.3456, 2);
    nk__vb_chr(&t, ' ');
    nk__vb_num(&t, NAN, 3);
    nk__vb_chr(&t, ' ');
    nk__vb_num(&t, 1e20, 0);
    nk__vb_chr(&t, ' ');
    nk__vb_i64(&t, INT64_MIN);
    CHECK_STR(t.s, "1.5 2 0 -12.35 0 100000000000000000000 -9223372036854775808");
    nk__text_free(&t);
    nk__vb_jstr(&t, "a\"b\\c\n\t\x01<>&\xe2\x80\xa9\xc0\x80\xed\xa0\x80\xf0\x9f\x98\x80");
    CHECK_STR(t.s, "\"a\\\"b\\\\c\\n\\t\\u0001\\u003c\\u003e\\u0026\\u2029\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\xf0\x9f\x98\x80\"");
    nk__text_free(&t);
    nk__vb_jstr(&t, NULL);
    CHECK_STR(t.s, "null");
    nk__text_free(&t);
    nk__vb_csv(&t, "plain");
    nk__vb_chr(&t, '|');
    nk__vb_csv(&t, "a,b");
    nk__vb_chr(&t, '|');
    nk__vb_csv(&t, "say \"hi\"");
    nk__vb_chr(&t, '|');
    nk__vb_csv(&t, "two\nlines");
    CHECK_STR(t.s, "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"");
    nk__text_free(&t);
}

/* Slices of one thread, as a reader computes their ends in double precision
 * from the decimals: ts + dur as they are, and after subtracting the
 * thread's first ts (speedscope's import does this); neither may pass the
 * next slice's start. Slices that touch (one instruction ends as the next
 * begins on an engine) overlapped by an ulp before durations were trimmed,
 * and speedscope then misnested them ("Tried to end ..."). */
static int overlaps(const jv *evs, char *why, size_t n)
{
    for (int i = 0; i < evs->n; i++) {
        const jv *a = evs->item[i];
        if (strcmp(jstr(a, "ph"), "X"))
            continue;
        double first = INFINITY, ta = jnum(a, "ts"), da = jnum(a, "dur");
        for (int j = 0; j < evs->n; j++) {
            const jv *b = evs->item[j];
            if (!strcmp(jstr(b, "ph"), "X") && jnum(b, "pid") == jnum(a, "pid") && jnum(b, "tid") == jnum(a, "tid") &&
                jnum(b, "ts") < first)
                first = jnum(b, "ts");
        }
        for (int j = 0; j < evs->n; j++) {
            const jv *b = evs->item[j];
            double tb = jnum(b, "ts");
            if (j == i || strcmp(jstr(b, "ph"), "X") || jnum(b, "pid") != jnum(a, "pid") ||
                jnum(b, "tid") != jnum(a, "tid") || tb < ta || (tb == ta && j < i))
                continue;
            if (ta + da > tb || (ta - first) + da > tb - first) {
                snprintf(why, n, "tid %g: slice at %.6f + %.6f passes the next at %.6f", jnum(a, "tid"), ta, da, tb);
                return 1;
            }
        }
    }
    return 0;
}

TEST(export_perfetto_slices_of_a_thread_never_overlap_in_doubles)
{
    fixture f;
    fixture_init(&f);
    nk_text t = {0};
    char why[160] = "";
    CHECK_INT(nk__export_perfetto(&f.pr, NULL, &t), NK_OK);
    jv *doc = jdoc(t.s);
    CHECK(doc && !overlaps(jget(doc, "traceEvents"), why, sizeof why));
    if (why[0])
        printf("  %s\n", why);
    jfree(doc);
    nk__text_free(&t);
    /* layernorm: Vector instructions back to back at picosecond times */
    const nk_kernel_info *ki = nk_builtin_kernel("layernorm");
    nk_array a[3];
    CHECK_INT(nk_kernel_example_args(ki, 1, a), 0);
    nk_kernel *k = nk_builtin_kernel_new(ki);
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    CHECK_INT(nk_kernel_compile(k, a, 3, NULL, &p), 0);
    CHECK_INT(p ? nk_profile_capture(p, NULL, &pr) : -1, 0);
    nk_text u = {0};
    if (pr)
        CHECK_INT(nk__export_perfetto(pr, NULL, &u), NK_OK);
    doc = u.s ? jdoc(u.s) : NULL;
    why[0] = 0;
    CHECK(doc && !overlaps(jget(doc, "traceEvents"), why, sizeof why));
    if (why[0])
        printf("  %s\n", why);
    jfree(doc);
    nk__text_free(&u);
    nk_profile_free(pr);
    nk_kernel_free(k);
    for (int i = 0; i < 3; i++)
        nk_array_free(&a[i]);
}
