/*
 * view.h - what people and tools see of a profile: the self-contained HTML
 * viewer, the terminal timeline and the exports (Perfetto/Chrome trace JSON,
 * JSON, CSV).
 *
 * Everything here reads an nk_profile and writes text into an nk_text; it
 * never re-runs a kernel. Functions return NK_OK or a negative nk_status.
 */
#ifndef NK_VIEW_H
#define NK_VIEW_H

#include "profile/profile.h"

/* ---- rows of the timeline: the five engines, then each DMA queue with events */

/* SPMD programs on more than one NeuronCore get these rows per core, in a
 * group named for the core ("NC1 Vector", "NC1 DMA q3"). */
typedef struct nk_view_row {
    uint8_t engine;  /* nk_engine; NK_ENGINE_DMA for a DMA queue */
    uint8_t core;    /* physical NeuronCore (0 unless the program spans cores) */
    uint16_t queue;  /* DMA queue id (DMA rows) */
    char name[24];   /* "Tensor", ..., "DMA q3"; "NC1 Tensor" when the program spans cores */
} nk_view_row;

typedef struct nk_view_rows {
    nk_view_row *row;
    uint32_t n;
    const nk_program *p;  /* the program the events' instructions index */
    uint32_t ncores;
    uint32_t *engine_row; /* (core, compute engine) -> row: core * NK_ENGINE_DMA + engine */
    uint32_t *queue_row;  /* (core, DMA queue id) -> row: core * (max_queue + 1) + queue */
    uint32_t max_queue;
} nk_view_rows;

int nk__view_rows_build(const nk_program *p, const nk_timeline *tl, nk_view_rows *out);
uint32_t nk__view_event_row(const nk_view_rows *r, const nk_event *e);
void nk__view_rows_free(nk_view_rows *r);

/* ---- tiles: per buffer, the first and last instruction using it as an
 * on-chip tile (UINT32_MAX: unused); the caller frees both arrays */
int nk__view_tile_uses(const nk_program *p, uint32_t **first, uint32_t **last);

/* ---- names and text of one instruction or event */

/* "LoadStationary" / "MultiplyMoving" for matmul parts, else the opcode. */
const char *nk__view_event_name(const nk_program *p, const nk_event *e);
/* Operands and attributes: "func=exp dst=sbuf[0:128]@0 [128, 512] float32 src=...". */
void nk__view_operands(const nk_program *p, uint32_t instr, char *buf, size_t n);
/* Bytes an instruction writes (a DMA: bytes moved). */
uint64_t nk__view_instr_bytes(const nk_program *p, uint32_t instr);
/* Source file and line of an instruction ("?" and 0 when unknown). */
const char *nk__view_instr_file(const nk_program *p, uint32_t instr, int *line);

/* ---- summary: the profile's metrics (nk_profile_metrics) and an opcode table */

typedef struct nk_view_opstat {
    char name[24];      /* event name */
    uint64_t count;
    double total_ns;    /* sum of event durations */
} nk_view_opstat;

typedef struct nk_view_summary {
    uint64_t instr_count, event_count;
    nk_view_opstat op[NK_OP_COUNT + 2]; /* by event name, in first-seen order */
    uint32_t nop;
} nk_view_summary;

int nk__view_summarize(const nk_profile *pr, nk_view_summary *s);
/* One JSON object: every metric by its name (values in the units of
 * nk_metrics_unit), "instruction_count", "units" {name: unit} and "opcodes"
 * [{opcode, count, total_ns, average_ns}]. No trailing newline. */
int nk__view_summary_json(const nk_profile *pr, const nk_view_summary *s, nk_text *out);
/* The launch regions of tl as a JSON array (viewer data and JSON export). */
void nk__view_regions_json(const nk_timeline *tl, nk_text *t);

/* ---- outputs */

/* The viewer's data model as JSON (docs/viewer.md describes it). Every
 * string is escaped so the text can sit inside an HTML <script> element.
 * insights_json: NULL, or a JSON array of findings shown on the Insights tab
 * (objects with "title", "detail", "severity", "lines": ["file:line"]); it
 * is copied with <, > and & escaped. */
int nk__view_json(const nk_profile *pr, const char *insights_json, nk_text *out);
/* Insights the page asks for when it reaches them, last in its data: a
 * caller can compute them meanwhile (on another thread) and wait for them in
 * get. get returns the JSON (NULL: none) and stays valid until the page is
 * made. */
typedef struct nk__view_insights {
    const char *(*get)(void *ctx);
    void *ctx;
} nk__view_insights;
int nk__view_json_deferred(const nk_profile *pr, const nk__view_insights *ins, nk_text *out);
/* A get for insights known already: returns ctx, the JSON itself. */
const char *nk__view_given(void *ctx);
/* One self-contained HTML page: styles, script and data inline. */
int nk__view_html(const nk_profile *pr, const char *insights_json, nk_text *out);
/* The same with the viewer's notes (time markers; a JSON document the page
 * reads and checks, NULL: none) embedded, as `nklab view` finds them beside
 * the profile, and a second profile to compare against (NULL: none), drawn
 * on the same time axis with its instructions matched by source line. */
int nk__view_page(const nk_profile *pr, const char *insights_json, const char *notes_json, const nk_profile *cmp,
                 nk_text *out);
/* nk__view_page written to path (NULL or "-": standard output) as it is
 * made, a chunk at a time, never held whole: the file is replaced only when
 * the whole page is written (core/atomicfile.h). *bytes: what was written.
 * NK_EIO: writing failed, why says how (as nk__export_to). */
int nk__view_page_to(const nk_profile *pr, const char *insights_json, const char *notes_json, const nk_profile *cmp,
                     const char *path, uint64_t *bytes, char *why, size_t whylen);
/* The same with the insights given when the page reaches them. */
int nk__view_page_to_deferred(const nk_profile *pr, const nk__view_insights *ins, const char *notes_json,
                              const nk_profile *cmp, const char *path, uint64_t *bytes, char *why, size_t whylen);
/* A per-row busy-fraction chart `width` characters wide (>= 40). */
int nk__view_timeline(const nk_profile *pr, int width, nk_text *out);

typedef struct nk_export_opts {
    int no_flows;       /* perfetto: leave out dependency arrows */
    double from_ns, to_ns; /* json/csv: instructions overlapping [from, to]; to <= from: all */
} nk_export_opts;

int nk__export_perfetto(const nk_profile *pr, const nk_export_opts *o, nk_text *out);
int nk__export_json(const nk_profile *pr, const nk_export_opts *o, nk_text *out);
int nk__export_csv(const nk_profile *pr, const nk_export_opts *o, nk_text *out);
/* The export in format ("perfetto", "json", "csv") straight to path, as it
 * is made (a large export is never held whole): the file replaced
 * atomically, as nk__file_write does, or standard output for NULL or "-".
 * *bytes: the bytes written. The exporter's status, or NK_EIO with the
 * reason in why. */
int nk__export_to(const nk_profile *pr, const char *format, const nk_export_opts *o, const char *path,
                 uint64_t *bytes, char *why, size_t whylen);

/* Writes text to path as every output is written (core/atomicfile.h): a
 * regular file replaced atomically, a device or FIFO in place; NK_EIO with
 * errno and nk__file_error() saying why. */
int nk__view_write_file(const char *path, const nk_text *t);

/* The viewer's sources, embedded at build time (scripts/embed-assets.sh). */
extern const char nk__view_asset_html[], nk__view_asset_css[], nk__view_asset_js[];

#endif
