/*
 * opnd.h - the operand text of every instruction of a program, fast
 * (src/view/opnd.c): what nk__view_operands writes, byte for byte.
 *
 * nk__view_operands formats each operand with snprintf, a few microseconds
 * an instruction, which dominates a viewer page or an export of a million
 * instructions. The instructions of a loop differ in their text only by
 * the HBM offsets (" +N"), so the cache formats each distinct instruction
 * once, keeps its text as a template with the offsets cut out, and gives
 * the next ones the template and their own offsets.
 */
#ifndef NK_VIEW_OPND_H
#define NK_VIEW_OPND_H

#include "nkint.h"

#define NK_OPND_TEXT 1024 /* the text's buffer, as nk__view_operands' callers size it */
#define NK_OPND_NUMS 8    /* offsets cut out of one text, at most */

typedef struct nk_opnd_cache nk_opnd_cache;

/* A cache for program p (which must outlive it); NULL when out of memory. */
nk_opnd_cache *nk__opnd_new(const nk_program *p);
void nk__opnd_free(nk_opnd_cache *c);

/* Instruction i's text as a template and numbers: each " +N" of the text
 * (at most NK_OPND_NUMS, the first ones) becomes " +\x01" and N goes to
 * num[], in order; returns the count of numbers, or a negative status. *tpl
 * points into the cache (valid until the next call); *id is the template's
 * number in the cache (0, 1, ... in order of first use: the same id, the
 * same template), UINT32_MAX for a text formatted anew (its template is
 * its own). */
int nk__opnd_template(nk_opnd_cache *c, uint32_t i, const char **tpl, uint32_t *id, uint64_t num[NK_OPND_NUMS]);

/* Instruction i's whole text into buf (n bytes, NUL-terminated, truncated
 * as nk__view_operands truncates). */
void nk__opnd_text(nk_opnd_cache *c, uint32_t i, char *buf, size_t n);

#endif
