/*
 * optable.h - the op table: every fact about an instruction, one row per
 * opcode (enum nk_op), read by every stage.
 *
 * A row says which engines may run the op and which one it takes by
 * default, what its operands are called and where they may live, which
 * instruction flags it may carry, how the legacy cost table prices it, how
 * its attributes print, what shape relations and limits a program must
 * respect, and which executor function runs it. Limits that depend on the
 * hardware (tile sizes, transpose sizes) are target-table fields
 * (src/arch); the row's check reads them from the program's table.
 *
 * Adding an op: a row in optable.c and its executor function (src/exec),
 * plus the tracer entry point that emits it. See docs/op-table.md.
 */
#ifndef NK_ISA_OPTABLE_H
#define NK_ISA_OPTABLE_H

#include "nkint.h"

/* Memories as a mask: NK_MEM(NK_SBUF) | NK_MEM(NK_PSUM). */
#define NK_MEM(m) (1u << (m))
#define NK_MEM_ONCHIP (NK_MEM(NK_SBUF) | NK_MEM(NK_PSUM))
/* Engines as a mask: NK_ENG(NK_ENGINE_VECTOR) | ... */
#define NK_ENG(e) (1u << (e))

/* Operand slots of an instruction, in this order everywhere (dst, dst2,
 * src[0..2]). */
enum { NK_OPND_DST = 0, NK_OPND_DST2, NK_OPND_SRC0, NK_OPND_COUNT = 5 };

/* One operand of an op: the name the kernel API gives it, the memories it
 * may live in (before the engine's own rule, nk__op_operand_mems), and, for an
 * optional operand, the instruction flag that says it is present. An unused
 * slot has no name. */
typedef struct nk_opslot {
    const char *name;
    uint8_t mem;
    uint16_t present_if; /* 0: always present (when named) */
} nk_opslot;

/* Tensor engine ops: LoadStationary of src[0] + MultiplyMoving of ... */
enum {
    NK_PE_NONE = 0,
    NK_PE_MOVING,   /* ... src[1] (nc_matmul) */
    NK_PE_IDENTITY  /* ... an identity of src[0]'s partitions (nc_transpose) */
};

/* Extra cycles of a legacy cost-table entry. */
enum {
    NK_COST_EXTRA_NONE = 0,
    NK_COST_EXTRA_MIN_II,    /* + MIN_II when the instruction has flag extra_if */
    NK_COST_EXTRA_POOL_FIXED /* + the target's pool_fixed_cycles (150 + N) */
};

/* Which Vector 16-bit performance mode applies [A3]. */
enum {
    NK_FAST16_NONE = 0,
    NK_FAST16_ONE_INPUT, /* src[0] -> dst: the copy rate when contiguous in SBUF */
    NK_FAST16_TWO_INPUT  /* src[0], src[1] -> dst, all in SBUF */
};

/* The cost of an op on Vector/Scalar/GpSimd from the legacy cost table
 * [ISA-old]: cycles = max(floor, work) + extra, with N the free elements per
 * partition of src[0] (of dst when it has no source); and how the Tensor
 * engine runs it. The timing model (src/timing/cost.c) adds clocks, the
 * static overhead, stride penalties and performance modes. */
typedef struct nk_opcost {
    double (*work)(const nk_program *p, const nk_instr *in, double n); /* NULL: N */
    uint8_t min_ii_floor; /* 1: floor MIN_II; 0: none */
    uint8_t extra;        /* NK_COST_EXTRA_* */
    uint16_t extra_if;    /* NK_COST_EXTRA_MIN_II: the flag that adds it (0: always) */
    uint8_t no_overhead;  /* 1: the documented figure already holds the fixed part */
    uint8_t fast16;       /* NK_FAST16_* */
    uint8_t pe;           /* NK_PE_*: how the Tensor engine runs it */
} nk_opcost;

/* Where attribute text goes: a fixed buffer, always NUL-terminated. */
typedef struct nk_opbuf {
    char *s;
    size_t n, len;
    const nk_xarg *x; /* the instruction's scalars */
} nk_opbuf;

struct nk__exec; /* the executor's state during one run (src/exec) */

typedef struct nk_opdef {
    const char *name;       /* NKI's name: "nc_matmul" */
    uint8_t engines;        /* NK_ENG mask of the engines that may run it */
    uint8_t default_engine; /* when the kernel does not choose */
    uint16_t flags;         /* the NK_IF_* flags it may carry */
    nk_opslot opnd[NK_OPND_COUNT]; /* dst, dst2, src[0..2] */
    nk_opcost cost;
    /* Shape relations and limits on target a beyond the generic checks,
     * given each operand's element count n[slot] (0 when absent). On a
     * violation writes why to msg and returns nonzero. NULL: none. */
    int (*check)(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg, size_t len);
    /* The attributes, "func=exp bias=0 scale=1" (nothing for an op without). */
    void (*attrs)(nk_opbuf *b, const nk_instr *in);
    /* Runs one instruction (src/exec/exec.h). */
    int (*exec)(struct nk__exec *x, const nk_instr *in);
} nk_opdef;

/* The row of op, or NULL when op is out of range. */
const nk_opdef *nk__op_def(int op);

/* Is operand slot k (NK_OPND_*) of in used? */
int nk__op_operand_present(const nk_instr *in, int k);
/* Source operands an instruction records (in->nsrc): one past the last
 * present source. */
int nk__op_nsrc(const nk_instr *in);
/* Most source operands the op ever has. */
int nk__op_max_srcs(const nk_opdef *d);
/* The memories operand slot k may live in on the instruction's engine. */
unsigned nk__op_operand_mems(const nk_instr *in, int k);
/* The memories an engine may read (write = 0) or write. */
unsigned nk__engine_mems(int engine, int write);
/* The kernel API's name of operand slot k ("stationary"), or "?". */
const char *nk__op_operand_name(const nk_instr *in, int k);
/* The operand itself (nk__no_opnd when absent). */
const nk_opnd *nk__op_operand(const nk_program *p, const nk_instr *in, int k);
/* "sbuf", "sbuf or psum" for a memory mask. */
const char *nk__mem_names(unsigned mask);

/* The instruction's attribute text, as every listing, view and export
 * shows it, into buf (truncated to n - 1 bytes); returns its length. */
size_t nk__op_attrs(const nk_program *p, const nk_instr *in, char *buf, size_t n);

#endif
