/*
 * ops.c - the kernel API: ISA-level instructions with the checks the
 * compiler makes, and the language-level ops built from them.
 *
 * Every check reports one message naming the kernel's file:line, the op and
 * the offending values. ISA ops validate and emit exactly one instruction;
 * language ops allocate their result tiles and call ISA ops.
 */
#include "trace.h"
#include "isa/optable.h"

#include <stdio.h>
#include <string.h>

/* ---- names in messages: the call the kernel wrote (loc.call: "nk_matmul",
 * "nl.matmul", "nisa.nc_matmul"), with the instruction it lowered to in
 * parentheses when that is another name: "nk_matmul (nc_matmul): ...". */

static const char *isa_label(char *buf, size_t n, nk_loc loc, const char *instr)
{
    const char *c = loc.call;
    if (!c || !c[0])
        return instr;
    if (nk__call_is_op(c, instr))
        return c; /* the instruction itself: nk_isa_nc_matmul, nisa.nc_matmul */
    snprintf(buf, n, "%s (%s)", c, instr);
    return buf;
}

/* A language-level op: the call's own name, else the op's. */
static const char *lang_label(nk_loc loc, const char *name) { return loc.call && loc.call[0] ? loc.call : name; }

#define ISA_OP(instr)                                                                                               \
    char op_buf_[160];                                                                                             \
    const char *op = isa_label(op_buf_, sizeof op_buf_, loc, (instr))
#define LANG_OP(name) const char *op = lang_label(loc, (name))

/* ---- checks */

static int ok_tensor(nk_ctx *nc, nk_loc loc, const char *op, const char *what, nk_tensor t)
{
    if (nc->status)
        return 0;
    if (!t.buf || t.buf >= nc->p->nbufs || t.ndim < 1 || t.ndim > NK_MAXDIM) {
        nk__fail(nc, loc, NK_EINVAL, "%s: %s is %s", op, what,
                 t.mem == NK__MEM_SCALAR ? "a scalar argument, not a tensor (read it with nk_scalar)"
                                         : "not a valid tensor");
        return 0;
    }
    if (t.pdim) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: %s is a tile array with %d block dimension%s before its partition "
                 "dimension; index the blocks to get a tile (e.g. nk_block(t, k))", op, what, t.pdim,
                 t.pdim == 1 ? "" : "s");
        return 0;
    }
    if (t.buf < nc->cap_bs && nc->bs[t.buf].moved) {
        char where[256];
        const nk_locinfo *l = &nc->p->locs[nc->bs[t.buf].moved - 1];
        nk__buf_where(nc, t.buf, where, sizeof where);
        nk__fail(nc, loc, NK_EINVAL, "%s: %s is the tile made at %s, whose value was assigned into another tile at "
                 "%s:%d; use that tile", op, what, where, nc->p->files[l->file], l->line);
        return 0;
    }
    return 1;
}

/* A tile operand (SBUF or PSUM). Language-level ops check their inputs with
 * it before allocating results shaped like them. */
static int ok_tile_in(nk_ctx *nc, nk_loc loc, const char *op, const char *what, nk_tensor t)
{
    if (!ok_tensor(nc, loc, op, what, t))
        return 0;
    if (t.mem == NK_SHARED_HBM) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: %s is an HBM tensor; engines work on SBUF/PSUM tiles (nk_load it first)",
                 op, what);
        return 0;
    }
    return 1;
}

/* An on-chip operand of a compute engine; psum_ok says whether PSUM is allowed. */
static int ok_onchip(nk_ctx *nc, nk_loc loc, const char *op, const char *what, nk_tensor t, int psum_ok,
                     const char *who)
{
    if (!ok_tile_in(nc, loc, op, what, t))
        return 0;
    if (t.mem == NK_PSUM && !psum_ok) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: %s is in PSUM, which %s cannot access", op, what, who);
        return 0;
    }
    int n = t.shape[0], p0 = t.part0, pmax = nc->arch->partitions;
    if (n > pmax || p0 + n > pmax) {
        nk__fail(nc, loc, NK_EPARTITION, "%s: %s spans partitions %d..%d, beyond the %d partitions", op, what, p0,
                 p0 + n - 1, pmax);
        return 0;
    }
    if (n > 0 && ((n > 64 && p0 != 0) || (n > 32 && p0 != 0 && p0 != 64) || p0 % 32 != 0)) {
        nk__fail(nc, loc, NK_EPARTITION,
                 "%s: %s covers %d partitions starting at partition %d; an access of more than 64 partitions "
                 "starts at 0, of 33-64 at 0 or 64, of up to 32 at 0, 32, 64 or 96",
                 op, what, n, p0);
        return 0;
    }
    return 1;
}

static int ok_read(nk_ctx *nc, nk_loc loc, const char *op, const char *what, nk_tensor t)
{
    if (nc->status)
        return 0;
    if (!nc->p->bufs[t.buf].written) {
        char where[256], shape[64];
        nk__buf_where(nc, t.buf, where, sizeof where);
        nk__format_shape(shape, sizeof shape, t.shape, t.ndim);
        nk__fail(nc, loc, NK_EUNINIT, "%s: %s is %s %s allocated at %s that was never written", op, what,
                 t.mem == NK_PSUM ? "a PSUM tile" : t.mem == NK_SBUF ? "an SBUF tile" : "an HBM tensor", shape,
                 where);
        return 0;
    }
    return 1;
}

static void wrote(nk_ctx *nc, nk_tensor t)
{
    if (t.buf)
        nc->p->bufs[t.buf].written = 1;
}

static void shape_str(char *buf, size_t n, nk_tensor t) { nk__format_shape(buf, n, t.shape, t.ndim); }

/* Same partitions and the same number of free elements. */
static int ok_same_size(nk_ctx *nc, nk_loc loc, const char *op, const char *wa, nk_tensor a, const char *wb,
                        nk_tensor b)
{
    if (nc->status)
        return 0;
    if (a.shape[0] != b.shape[0] || nk__free_size(&a) != nk__free_size(&b)) {
        char sa[64], sb[64];
        shape_str(sa, sizeof sa, a);
        shape_str(sb, sizeof sb, b);
        nk__fail(nc, loc, NK_ESHAPE, "%s: %s %s and %s %s differ in partitions or free size", op, wa, sa, wb, sb);
        return 0;
    }
    return 1;
}

/* A per-partition column [P, 1] matching partitions p. */
static int ok_column(nk_ctx *nc, nk_loc loc, const char *op, const char *what, nk_tensor t, int p)
{
    if (!ok_onchip(nc, loc, op, what, t, 1, "this engine") || !ok_read(nc, loc, op, what, t))
        return 0;
    if (t.shape[0] != p || nk__free_size(&t) != 1) {
        char s[64];
        shape_str(s, sizeof s, t);
        nk__fail(nc, loc, NK_ESHAPE, "%s: %s must be a per-partition column [%d, 1], got %s", op, what, p, s);
        return 0;
    }
    return 1;
}

static int ok_vector_fsize(nk_ctx *nc, nk_loc loc, const char *op, nk_tensor t, int any_psum)
{
    int64_t lim = any_psum ? nc->arch->vector_fmax_psum : nc->arch->vector_fmax_sbuf;
    if (nk__free_size(&t) > lim) {
        nk__fail(nc, loc, NK_ELIMIT, "%s: free size %lld exceeds the Vector engine's %lld elements per instruction%s",
                 op, (long long)nk__free_size(&t), (long long)lim, any_psum ? " from PSUM" : "");
        return 0;
    }
    return 1;
}

static int is_bitwise(nk_alu op)
{
    return op == NK_ALU_BITWISE_AND || op == NK_ALU_BITWISE_OR || op == NK_ALU_BITWISE_XOR;
}

static int ok_alu(nk_ctx *nc, nk_loc loc, const char *op, nk_alu alu, const nk_tensor *ts, int n, int allow_bypass)
{
    if ((unsigned)alu >= NK_ALU_COUNT || (alu == NK_ALU_BYPASS && !allow_bypass)) {
        nk__fail(nc, loc, NK_EINVAL, "%s: invalid ALU operator %d", op, (int)alu);
        return 0;
    }
    if (is_bitwise(alu))
        for (int i = 0; i < n; i++)
            if (nk_dtype_is_float(ts[i].dtype)) {
                nk__fail(nc, loc, NK_EDTYPE, "%s: %s needs integer operands, got %s", op, nk_alu_name(alu),
                         nk_dtype_name(ts[i].dtype));
                return 0;
            }
    return 1;
}

/* The engine an op runs on: the kernel's choice, else the op table's
 * default; only engines the table allows. */
static int pick_engine(nk_ctx *nc, nk_loc loc, const char *op, int opcode, nk_engine eng)
{
    const nk_opdef *d = nk__op_def(opcode);
    if (eng == NK_ENGINE_DEFAULT)
        eng = (nk_engine)d->default_engine;
    if ((unsigned)eng >= NK_ENGINE_COUNT || !(d->engines & (1u << eng))) {
        nk__fail(nc, loc, NK_EINVAL, "%s: cannot run on the %s engine", op, nk_engine_name(eng));
        return -1;
    }
    return (int)eng;
}


static int any_psum(const nk_tensor *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (ts[i].buf && ts[i].mem == NK_PSUM)
            return 1;
    return 0;
}

/* Engine memory rules shared by the elementwise ops: GpSimd has no PSUM
 * access; Vector has a free-size limit. */
static int ok_engine_operands(nk_ctx *nc, nk_loc loc, const char *op, int eng, const nk_tensor *ts, int n)
{
    if (eng == NK_ENGINE_GPSIMD)
        for (int i = 0; i < n; i++)
            if (ts[i].buf && ts[i].mem == NK_PSUM) {
                char where[256], shape[64];
                nk__buf_where(nc, ts[i].buf, where, sizeof where);
                nk__format_shape(shape, sizeof shape, ts[i].shape, ts[i].ndim);
                nk__fail(nc, loc, NK_EMEMORY, "%s: the GpSimd engine cannot access PSUM, and an operand is the PSUM "
                         "tile %s allocated at %s", op, shape, where);
                return 0;
            }
    if (eng == NK_ENGINE_VECTOR)
        return ok_vector_fsize(nc, loc, op, ts[0], any_psum(ts, n));
    return 1;
}

/* ---- ISA ops */

void nk_isa_nc_matmul_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor st, nk_tensor mv, int accumulate)
{
    ISA_OP("nc_matmul");
    if (!ok_onchip(nc, loc, op, "stationary", st, 0, "nc_matmul (operands come from SBUF)") ||
        !ok_onchip(nc, loc, op, "moving", mv, 0, "nc_matmul (operands come from SBUF)") ||
        !ok_onchip(nc, loc, op, "dst", dst, 1, ""))
        return;
    if (dst.mem != NK_PSUM) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: dst must be a PSUM tile (the Tensor engine writes PSUM), got SBUF", op);
        return;
    }
    if (!ok_read(nc, loc, op, "stationary", st) || !ok_read(nc, loc, op, "moving", mv))
        return;
    if (accumulate && !nc->p->bufs[dst.buf].written) {
        char where[256];
        nk__buf_where(nc, dst.buf, where, sizeof where);
        nk__fail(nc, loc, NK_EUNINIT,
                 "%s: accumulates into the PSUM tile allocated at %s that was never written (start it with "
                 "nk_zeros or accumulate=0)", op, where);
        return;
    }
    for (int i = 0; i < 2; i++) {
        nk_tensor t = i ? mv : st;
        if (!nk_dtype_is_float(t.dtype)) {
            nk__fail(nc, loc, NK_EDTYPE, "%s: the Tensor engine multiplies float types, %s is %s", op,
                     i ? "moving" : "stationary", nk_dtype_name(t.dtype));
            return;
        }
    }
    int fp8s = nk_dtype_size(st.dtype) == 1, fp8m = nk_dtype_size(mv.dtype) == 1;
    if (st.dtype != mv.dtype && !(fp8s && fp8m)) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: stationary is %s but moving is %s; cast one with nk_copy", op,
                 nk_dtype_name(st.dtype), nk_dtype_name(mv.dtype));
        return;
    }
    if (dst.dtype != NK_F32) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: PSUM accumulates in float32, dst is %s", op, nk_dtype_name(dst.dtype));
        return;
    }
    int64_t K = st.shape[0], M = nk__free_size(&st), N = nk__free_size(&mv);
    if (mv.shape[0] != K) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: contraction (partition) sizes differ: stationary K=%lld, moving K=%d", op,
                 (long long)K, mv.shape[0]);
        return;
    }
    if (M > nc->arch->gemm_stationary_fmax) {
        nk__fail(nc, loc, NK_ELIMIT, "%s: stationary free size %lld exceeds %lld (gemm_stationary_fmax)", op,
                 (long long)M, (long long)nc->arch->gemm_stationary_fmax);
        return;
    }
    if (N > nc->arch->gemm_moving_fmax) {
        nk__fail(nc, loc, NK_ELIMIT, "%s: moving free size %lld exceeds %lld (gemm_moving_fmax)", op, (long long)N,
                 (long long)nc->arch->gemm_moving_fmax);
        return;
    }
    if (dst.shape[0] != M || nk__free_size(&dst) != N) {
        char s[64];
        shape_str(s, sizeof s, dst);
        nk__fail(nc, loc, NK_ESHAPE, "%s: dst %s must be [%lld, %lld] (stationary free x moving free)", op, s,
                 (long long)M, (long long)N);
        return;
    }
    /* PSUM tiles start on a bank boundary (the allocator aligns them) */
    int64_t lo, hi, bank = nc->arch->psum_bank_bytes;
    nk__extent(&dst, &lo, &hi);
    int64_t a0 = lo * 4, a1 = hi * 4 + 3;
    if (a0 / bank != a1 / bank) {
        nk__fail(nc, loc, NK_ECAPACITY,
                 "%s: the accumulation group spans PSUM bytes %lld..%lld per partition, crossing a %lld-byte bank "
                 "(at most %lld float32 in one bank)", op, (long long)a0, (long long)a1, (long long)bank,
                 (long long)(bank / 4));
        return;
    }
    if (K == 0 || M == 0 || N == 0)
        return;
    /* nl.zeros then += : the matmul starts the accumulation group instead */
    if (accumulate && nk__take_zero(nc, loc, dst))
        accumulate = 0;
    if (nc->status)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_MATMUL, NK_ENGINE_TENSOR);
    if (!in)
        return;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], st);
    nk__emit_opnd(nc, loc, &in->src[1], mv);
    in->nsrc = 2;
    in->flags = accumulate ? NK_IF_ACCUMULATE : 0;
    wrote(nc, dst);
}

void nk_isa_nc_transpose_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor src, nk_engine eng)
{
    ISA_OP("nc_transpose");
    int e = pick_engine(nc, loc, op, NK_OP_TRANSPOSE, eng);
    if (e < 0 || !ok_onchip(nc, loc, op, "src", src, e != NK_ENGINE_TENSOR, "the Tensor engine") ||
        !ok_onchip(nc, loc, op, "dst", dst, 1, "") || !ok_read(nc, loc, op, "src", src))
        return;
    int64_t P = src.shape[0], F = nk__free_size(&src);
    int64_t lim = e == NK_ENGINE_TENSOR ? nc->arch->pe_transpose_max : nc->arch->dve_transpose_max;
    if (P > lim || F > lim) {
        nk__fail(nc, loc, NK_ELIMIT, "%s: on the %s engine a transpose is at most %lldx%lld, src is [%lld, %lld]", op,
                 nk_engine_name(e), (long long)lim, (long long)lim, (long long)P, (long long)F);
        return;
    }
    if (dst.shape[0] != F || nk__free_size(&dst) != P) {
        char s[64];
        shape_str(s, sizeof s, dst);
        nk__fail(nc, loc, NK_ESHAPE, "%s: dst %s must be [%lld, %lld]", op, s, (long long)F, (long long)P);
        return;
    }
    if (e == NK_ENGINE_TENSOR && dst.mem != NK_PSUM) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: a Tensor-engine transpose writes PSUM; dst is in SBUF", op);
        return;
    }
    if (e == NK_ENGINE_TENSOR && dst.dtype != NK_F32 && dst.dtype != src.dtype) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: dst must be float32 or %s, got %s", op, nk_dtype_name(src.dtype),
                 nk_dtype_name(dst.dtype));
        return;
    }
    if (e == NK_ENGINE_TENSOR && !nk_dtype_is_float(src.dtype)) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: the Tensor engine transposes float types, src is %s", op,
                 nk_dtype_name(src.dtype));
        return;
    }
    if (P == 0 || F == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_TRANSPOSE, e);
    if (!in)
        return;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], src);
    in->nsrc = 1;
    wrote(nc, dst);
}

static int ok_operand(nk_ctx *nc, nk_loc loc, const char *op, const char *what, nk_operand o, int parts)
{
    if (!o.is_tensor)
        return 1;
    return ok_column(nc, loc, op, what, o.t, parts);
}

/* activation and activation_reduce (one instruction: Activate with the
 * accumulator read out [A2]); op names the call the kernel made. */
static void activation(nk_ctx *nc, nk_loc loc, const char *op, nk_tensor dst, nk_act f, nk_tensor src,
                       nk_operand bias, nk_operand scale, nk_tensor reduce_dst)
{
    if (!ok_onchip(nc, loc, op, "src", src, 1, "") || !ok_onchip(nc, loc, op, "dst", dst, 1, "") ||
        !ok_read(nc, loc, op, "src", src) || !ok_same_size(nc, loc, op, "dst", dst, "src", src) ||
        !ok_operand(nc, loc, op, "bias", bias, src.shape[0]) || !ok_operand(nc, loc, op, "scale", scale, src.shape[0]))
        return;
    if ((unsigned)f >= NK_ACT_COUNT) {
        nk__fail(nc, loc, NK_EINVAL, "%s: invalid activation function %d", op, (int)f);
        return;
    }
    if (reduce_dst.buf) {
        if (!ok_onchip(nc, loc, op, "reduce_res", reduce_dst, 1, ""))
            return;
        if (reduce_dst.shape[0] != src.shape[0] || nk__free_size(&reduce_dst) != 1) {
            char s[64];
            shape_str(s, sizeof s, reduce_dst);
            nk__fail(nc, loc, NK_ESHAPE, "%s: reduce_res must be [%d, 1], got %s", op, src.shape[0], s);
            return;
        }
    }
    if (nk__numel(&dst) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_ACTIVATION, NK_ENGINE_SCALAR);
    if (!in)
        return;
    in->func = (uint8_t)f;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], src);
    in->nsrc = 1;
    if (bias.is_tensor) {
        nk__emit_opnd(nc, loc, &in->src[1], bias.t);
        in->flags |= NK_IF_OPND0_T;
        in->nsrc = 2;
    } else {
        nk__emit_imm(nc, loc, in, 0, bias.value);
    }
    if (scale.is_tensor) {
        nk__emit_src2(nc, loc, in, scale.t);
        in->flags |= NK_IF_OPND1_T;
        in->nsrc = 3;
    } else {
        nk__emit_imm(nc, loc, in, 1, scale.value);
    }
    if (reduce_dst.buf) {
        nk__emit_dst2(nc, loc, in, reduce_dst);
        in->flags |= NK_IF_REDUCE;
        wrote(nc, reduce_dst);
    }
    wrote(nc, dst);
}

void nk_isa_activation_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_act f, nk_tensor src, nk_operand bias,
                          nk_operand scale, nk_tensor reduce_dst)
{
    ISA_OP("activation");
    activation(nc, loc, op, dst, f, src, bias, scale, reduce_dst);
}

/* nisa.activation_reduce: activation with reduce_cmd reset_reduce and a
 * reduce_res [ISA]; the reduction adds ("reduce_op must be nl.add" [ISA]). */
void nk_isa_activation_reduce_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_act f, nk_tensor src, nk_alu reduce_op,
                                 nk_tensor reduce_res, nk_operand bias, nk_operand scale)
{
    ISA_OP("activation_reduce");
    if (nc->status)
        return;
    if (reduce_op != NK_ALU_ADD) {
        nk__fail(nc, loc, NK_EINVAL, "%s: reduce_op %s is not supported; the Scalar engine's accumulator adds "
                 "(reduce_op=nl.add)", op, nk_alu_name(reduce_op));
        return;
    }
    if (!reduce_res.buf) {
        nk__fail(nc, loc, NK_EINVAL, "%s: reduce_res is %s; it takes a [%d, 1] tile for the sums", op,
                 reduce_res.mem == NK__MEM_SCALAR ? "a scalar argument" : "missing", src.shape[0]);
        return;
    }
    activation(nc, loc, op, dst, f, src, bias, scale, reduce_res);
}

void nk_isa_tensor_tensor_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor a, nk_tensor b, nk_alu alu,
                             nk_engine eng)
{
    ISA_OP("tensor_tensor");
    int e = pick_engine(nc, loc, op, NK_OP_TENSOR_TENSOR, eng);
    nk_tensor ts[3] = {dst, a, b};
    if (e < 0 || !ok_onchip(nc, loc, op, "in0", a, 1, "") || !ok_onchip(nc, loc, op, "in1", b, 1, "") ||
        !ok_onchip(nc, loc, op, "dst", dst, 1, "") || !ok_read(nc, loc, op, "in0", a) ||
        !ok_read(nc, loc, op, "in1", b) || !ok_same_size(nc, loc, op, "in0", a, "in1", b) ||
        !ok_same_size(nc, loc, op, "dst", dst, "in0", a) || !ok_alu(nc, loc, op, alu, ts, 3, 0) ||
        !ok_engine_operands(nc, loc, op, e, ts, 3))
        return;
    if (a.mem == NK_PSUM && b.mem == NK_PSUM) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: both inputs are in PSUM; at most one input may come from PSUM", op);
        return;
    }
    if (nk__numel(&dst) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_TENSOR_TENSOR, e);
    if (!in)
        return;
    in->alu0 = (uint8_t)alu;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], a);
    nk__emit_opnd(nc, loc, &in->src[1], b);
    in->nsrc = 2;
    wrote(nc, dst);
}

void nk_isa_tensor_scalar_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor src, nk_alu op0, nk_operand o0,
                             int rev0, nk_alu op1, nk_operand o1, int rev1, nk_engine eng)
{
    ISA_OP("tensor_scalar");
    int e = pick_engine(nc, loc, op, NK_OP_TENSOR_SCALAR, eng);
    nk_tensor ts[4] = {dst, src, o0.is_tensor ? o0.t : NK_NONE, o1.is_tensor ? o1.t : NK_NONE};
    if (e < 0 || !ok_onchip(nc, loc, op, "src", src, 1, "") || !ok_onchip(nc, loc, op, "dst", dst, 1, "") ||
        !ok_read(nc, loc, op, "src", src) || !ok_same_size(nc, loc, op, "dst", dst, "src", src) ||
        !ok_operand(nc, loc, op, "operand0", o0, src.shape[0]) ||
        !ok_operand(nc, loc, op, "operand1", o1, src.shape[0]) || !ok_alu(nc, loc, op, op0, ts, 2, 0) ||
        !ok_alu(nc, loc, op, op1, ts, 2, 1) || !ok_engine_operands(nc, loc, op, e, ts, 4))
        return;
    if (nk__numel(&dst) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_TENSOR_SCALAR, e);
    if (!in)
        return;
    in->alu0 = (uint8_t)op0;
    in->alu1 = (uint8_t)op1;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], src);
    in->nsrc = 1;
    in->flags = (uint16_t)((rev0 ? NK_IF_REV0 : 0) | (rev1 ? NK_IF_REV1 : 0));
    if (o0.is_tensor) {
        nk__emit_opnd(nc, loc, &in->src[1], o0.t);
        in->flags |= NK_IF_OPND0_T;
        in->nsrc = 2;
    } else {
        nk__emit_imm(nc, loc, in, 0, o0.value);
    }
    if (o1.is_tensor) {
        nk__emit_src2(nc, loc, in, o1.t);
        in->flags |= NK_IF_OPND1_T;
        in->nsrc = 3;
    } else {
        nk__emit_imm(nc, loc, in, 1, o1.value);
    }
    wrote(nc, dst);
}

void nk_isa_tensor_reduce_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor src, nk_alu alu, int axis,
                             int keepdims)
{
    ISA_OP("tensor_reduce");
    nk_tensor ts[2] = {dst, src};
    if (!ok_onchip(nc, loc, op, "src", src, 1, "") || !ok_onchip(nc, loc, op, "dst", dst, 1, "") ||
        !ok_read(nc, loc, op, "src", src) || !ok_alu(nc, loc, op, alu, ts, 2, 0) ||
        !ok_engine_operands(nc, loc, op, NK_ENGINE_VECTOR, ts + 1, 1))
        return;
    if (alu != NK_ALU_ADD && alu != NK_ALU_MAX && alu != NK_ALU_MIN && alu != NK_ALU_MULTIPLY && !is_bitwise(alu)) {
        nk__fail(nc, loc, NK_EINVAL, "%s: %s is not a reduction operator (add, maximum, minimum, multiply, "
                 "bitwise)", op, nk_alu_name(alu));
        return;
    }
    if (axis != -1 && (axis < 1 || axis >= src.ndim)) {
        nk__fail(nc, loc, NK_EINVAL, "%s: axis %d is not a free axis of a %d-dim tile (1..%d, or -1 for all)", op,
                 axis, src.ndim, src.ndim - 1);
        return;
    }
    int64_t kept = 1;
    for (int d = 1; d < src.ndim; d++)
        if (axis != -1 && d != axis)
            kept *= src.shape[d];
    if (dst.shape[0] != src.shape[0] || nk__free_size(&dst) != kept) {
        char s[64], d[64];
        shape_str(s, sizeof s, src);
        shape_str(d, sizeof d, dst);
        nk__fail(nc, loc, NK_ESHAPE, "%s: reducing %s along axis %d gives %d partitions x %lld, dst is %s", op, s,
                 axis, src.shape[0], (long long)kept, d);
        return;
    }
    if (nk__numel(&src) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_TENSOR_REDUCE, NK_ENGINE_VECTOR);
    if (!in)
        return;
    in->alu0 = (uint8_t)alu;
    in->axis = (int8_t)axis;
    in->flags = keepdims ? NK_IF_KEEPDIMS : 0;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], src);
    in->nsrc = 1;
    wrote(nc, dst);
}

void nk_isa_tensor_copy_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor src, nk_engine eng)
{
    ISA_OP("tensor_copy");
    int e = pick_engine(nc, loc, op, NK_OP_TENSOR_COPY, eng);
    nk_tensor ts[2] = {dst, src};
    if (e < 0 || !ok_onchip(nc, loc, op, "src", src, 1, "") || !ok_onchip(nc, loc, op, "dst", dst, 1, "") ||
        !ok_read(nc, loc, op, "src", src) || !ok_same_size(nc, loc, op, "dst", dst, "src", src) ||
        !ok_engine_operands(nc, loc, op, e, ts, 2))
        return;
    if (nk__numel(&dst) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_TENSOR_COPY, e);
    if (!in)
        return;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], src);
    in->nsrc = 1;
    wrote(nc, dst);
}

void nk_isa_memset_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, double value, nk_engine eng)
{
    ISA_OP("memset");
    int e = pick_engine(nc, loc, op, NK_OP_MEMSET, eng);
    if (e < 0 || !ok_onchip(nc, loc, op, "dst", dst, 1, "") || !ok_engine_operands(nc, loc, op, e, &dst, 1))
        return;
    if (nk__numel(&dst) == 0) {
        wrote(nc, dst);
        return;
    }
    nk_instr *in = nk__emit(nc, loc, NK_OP_MEMSET, e);
    if (!in)
        return;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_imm(nc, loc, in, 0, value);
    wrote(nc, dst);
}

void nk_isa_iota_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_affine expr)
{
    ISA_OP("iota");
    if (!ok_onchip(nc, loc, op, "dst", dst, 0, "the GpSimd engine"))
        return;
    if (nk__numel(&dst) == 0) {
        wrote(nc, dst);
        return;
    }
    nk_instr *in = nk__emit(nc, loc, NK_OP_IOTA, NK_ENGINE_GPSIMD);
    if (!in)
        return;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_aff(nc, loc, in, expr);
    wrote(nc, dst);
}

void nk_isa_affine_select_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_affine pred, nk_cmp cmp, nk_tensor on_true,
                             float on_false)
{
    ISA_OP("affine_select");
    if (!ok_onchip(nc, loc, op, "on_true", on_true, 0, "the GpSimd engine") ||
        !ok_onchip(nc, loc, op, "dst", dst, 0, "the GpSimd engine") || !ok_read(nc, loc, op, "on_true", on_true) ||
        !ok_same_size(nc, loc, op, "dst", dst, "on_true", on_true))
        return;
    if ((unsigned)cmp > NK_CMP_LT) {
        nk__fail(nc, loc, NK_EINVAL, "%s: invalid comparison %d", op, (int)cmp);
        return;
    }
    if (nk__numel(&dst) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_AFFINE_SELECT, NK_ENGINE_GPSIMD);
    if (!in)
        return;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], on_true);
    in->nsrc = 1;
    nk__emit_aff(nc, loc, in, pred);
    in->cmp = (uint8_t)cmp;
    nk__emit_imm(nc, loc, in, 0, on_false);
    wrote(nc, dst);
}

/* ---- batch-norm statistics: nisa.bn_stats, nisa.bn_aggr [ISA] */

/* A Vector-engine op reading data into dst: both on chip, data written,
 * the Vector free-size limit. */
static int ok_vector_io(nk_ctx *nc, nk_loc loc, const char *op, const char *wd, nk_tensor dst, const char *ws,
                        nk_tensor src)
{
    nk_tensor ts[2] = {src, dst};
    return ok_onchip(nc, loc, op, ws, src, 1, "") && ok_onchip(nc, loc, op, wd, dst, 1, "") &&
           ok_read(nc, loc, op, ws, src) && ok_engine_operands(nc, loc, op, NK_ENGINE_VECTOR, ts, 2);
}

/* dst [P, want] for a per-partition result of src. */
static int ok_per_partition(nk_ctx *nc, nk_loc loc, const char *op, nk_tensor dst, nk_tensor src, int64_t want,
                            const char *what)
{
    if (dst.shape[0] == src.shape[0] && nk__free_size(&dst) == want)
        return 1;
    char sd[64], ss[64];
    shape_str(sd, sizeof sd, dst);
    shape_str(ss, sizeof ss, src);
    nk__fail(nc, loc, NK_ESHAPE, "%s: dst %s must be [%d, %lld] (%s per partition of data %s)", op, sd,
             src.shape[0], (long long)want, what, ss);
    return 0;
}

void nk_isa_bn_stats_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data)
{
    ISA_OP("bn_stats");
    if (!ok_vector_io(nc, loc, op, "dst", dst, "data", data))
        return;
    int64_t F = nk__free_size(&data), fmax = nc->arch->bn_stats_fmax;
    if (F > fmax) {
        char s[64];
        shape_str(s, sizeof s, data);
        nk__fail(nc, loc, NK_ELIMIT, "%s: data %s has %lld elements per partition, more than %lld "
                 "(nl.tile_size.bn_stats_fmax); run bn_stats on chunks of at most %lld and combine them with "
                 "bn_aggr", op, s, (long long)F, (long long)fmax, (long long)fmax);
        return;
    }
    if (!ok_per_partition(nc, loc, op, dst, data, 6,
                          "count, mean and variance*count of the even and of the odd elements"))
        return;
    if (nk__numel(&data) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_BN_STATS, NK_ENGINE_VECTOR);
    if (!in)
        return;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], data);
    in->nsrc = 1;
    wrote(nc, dst);
}

void nk_isa_bn_aggr_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data)
{
    ISA_OP("bn_aggr");
    if (!ok_vector_io(nc, loc, op, "dst", dst, "data", data))
        return;
    int64_t F = nk__free_size(&data);
    if (F % 3 || F == 0) {
        char s[64];
        shape_str(s, sizeof s, data);
        nk__fail(nc, loc, NK_ESHAPE, "%s: data %s has %lld elements per partition, not a positive multiple of 3 "
                 "(the (count, mean, variance*count) tuples bn_stats writes)", op, s, (long long)F);
        return;
    }
    if (!ok_per_partition(nc, loc, op, dst, data, 2, "mean and variance"))
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_BN_AGGR, NK_ENGINE_VECTOR);
    if (!in)
        return;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], data);
    in->nsrc = 1;
    wrote(nc, dst);
}

/* ---- scans and fused ALU ops: tensor_tensor_scan, scalar_tensor_tensor,
 * tensor_scalar_reduce [ISA] */

/* An arithmetic operator: not bypass, not a bitvec operator [ISA]. */
static int ok_arith(nk_ctx *nc, nk_loc loc, const char *op, const char *what, nk_alu alu)
{
    if ((unsigned)alu < NK_ALU_COUNT && alu != NK_ALU_BYPASS && !is_bitwise(alu))
        return 1;
    if ((unsigned)alu < NK_ALU_COUNT)
        nk__fail(nc, loc, NK_EINVAL, "%s: %s %s is not an arithmetic operator (bitvec operators and bypass are not "
                 "supported)", op, what, nk_alu_name(alu));
    else
        nk__fail(nc, loc, NK_EINVAL, "%s: invalid ALU operator %d for %s", op, (int)alu, what);
    return 0;
}

static int ok_not_both_psum(nk_ctx *nc, nk_loc loc, const char *op, const char *wa, nk_tensor a, const char *wb,
                            nk_tensor b)
{
    if (a.mem != NK_PSUM || b.mem != NK_PSUM)
        return 1;
    nk__fail(nc, loc, NK_EMEMORY, "%s: %s and %s are both in PSUM; at most one of them may come from PSUM", op, wa,
             wb);
    return 0;
}

/* reduce_res [P, 1] on chip */
static int ok_reduce_res(nk_ctx *nc, nk_loc loc, const char *op, nk_tensor r, int parts)
{
    if (!r.buf && !nc->status) {
        nk__fail(nc, loc, NK_EINVAL, "%s: reduce_res is missing; it takes a [%d, 1] tile", op, parts);
        return 0;
    }
    if (!ok_onchip(nc, loc, op, "reduce_res", r, 1, ""))
        return 0;
    if (r.shape[0] != parts || nk__free_size(&r) != 1) {
        char s[64];
        shape_str(s, sizeof s, r);
        nk__fail(nc, loc, NK_ESHAPE, "%s: reduce_res must be [%d, 1], got %s", op, parts, s);
        return 0;
    }
    return 1;
}

/* The operands of a Vector op with two tile inputs a and b, a destination
 * and a scalar-or-column operand o, and two arithmetic operators: the checks
 * tensor_tensor_scan and scalar_tensor_tensor share (messages name the
 * operands as the op names them; b_first: a size mismatch names b first). */
static int ok_two_inputs(nk_ctx *nc, nk_loc loc, const char *op, const char *na, nk_tensor a, const char *nb,
                         nk_tensor b, nk_tensor dst, const char *no, nk_operand o, nk_alu op0, nk_alu op1,
                         int b_first)
{
    nk_tensor ts[4] = {a, b, dst, o.is_tensor ? o.t : NK_NONE};
    return ok_onchip(nc, loc, op, na, a, 1, "") && ok_onchip(nc, loc, op, nb, b, 1, "") &&
           ok_onchip(nc, loc, op, "dst", dst, 1, "") && ok_read(nc, loc, op, na, a) && ok_read(nc, loc, op, nb, b) &&
           (b_first ? ok_same_size(nc, loc, op, nb, b, na, a) : ok_same_size(nc, loc, op, na, a, nb, b)) &&
           ok_same_size(nc, loc, op, "dst", dst, na, a) &&
           ok_operand(nc, loc, op, no, o, a.shape[0]) && ok_arith(nc, loc, op, "op0", op0) &&
           ok_arith(nc, loc, op, "op1", op1) && ok_not_both_psum(nc, loc, op, na, a, nb, b) &&
           ok_engine_operands(nc, loc, op, NK_ENGINE_VECTOR, ts, 4);
}

void nk_isa_tensor_tensor_scan_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data0, nk_tensor data1,
                                  nk_operand initial, nk_alu op0, nk_alu op1, int reverse0, int reverse1)
{
    ISA_OP("tensor_tensor_scan");
    if (!ok_two_inputs(nc, loc, op, "data0", data0, "data1", data1, dst, "initial", initial, op0, op1, 0))
        return;
    if (nk__numel(&dst) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_TENSOR_TENSOR_SCAN, NK_ENGINE_VECTOR);
    if (!in)
        return;
    in->alu0 = (uint8_t)op0;
    in->alu1 = (uint8_t)op1;
    in->flags = (uint16_t)((reverse0 ? NK_IF_REV0 : 0) | (reverse1 ? NK_IF_REV1 : 0));
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], data0);
    nk__emit_opnd(nc, loc, &in->src[1], data1);
    in->nsrc = 2;
    if (initial.is_tensor) {
        nk__emit_src2(nc, loc, in, initial.t);
        in->flags |= NK_IF_OPND1_T;
        in->nsrc = 3;
    } else {
        nk__emit_imm(nc, loc, in, 0, initial.value);
    }
    wrote(nc, dst);
}

void nk_isa_scalar_tensor_tensor_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data, nk_alu op0,
                                    nk_operand operand0, nk_alu op1, nk_tensor operand1, int reverse0, int reverse1)
{
    ISA_OP("scalar_tensor_tensor");
    if (!ok_two_inputs(nc, loc, op, "data", data, "operand1", operand1, dst, "operand0", operand0, op0, op1, 1))
        return;
    if (nk__numel(&dst) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_SCALAR_TENSOR_TENSOR, NK_ENGINE_VECTOR);
    if (!in)
        return;
    in->alu0 = (uint8_t)op0;
    in->alu1 = (uint8_t)op1;
    in->flags = (uint16_t)((reverse0 ? NK_IF_REV0 : 0) | (reverse1 ? NK_IF_REV1 : 0));
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], data);
    nk__emit_src2(nc, loc, in, operand1);
    in->nsrc = 3;
    if (operand0.is_tensor) {
        nk__emit_opnd(nc, loc, &in->src[1], operand0.t);
        in->flags |= NK_IF_OPND0_T;
    } else {
        nk__emit_imm(nc, loc, in, 0, operand0.value);
    }
    wrote(nc, dst);
}

void nk_isa_tensor_scalar_reduce_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data, nk_alu op0,
                                    nk_operand operand0, nk_alu reduce_op, nk_tensor reduce_res)
{
    ISA_OP("tensor_scalar_reduce");
    nk_tensor ts[4] = {data, dst, reduce_res, operand0.is_tensor ? operand0.t : NK_NONE};
    if (!ok_onchip(nc, loc, op, "data", data, 1, "") || !ok_onchip(nc, loc, op, "dst", dst, 1, "") ||
        !ok_read(nc, loc, op, "data", data) || !ok_same_size(nc, loc, op, "dst", dst, "data", data) ||
        !ok_operand(nc, loc, op, "operand0", operand0, data.shape[0]) || !ok_arith(nc, loc, op, "op0", op0) ||
        !ok_reduce_res(nc, loc, op, reduce_res, data.shape[0]) ||
        !ok_engine_operands(nc, loc, op, NK_ENGINE_VECTOR, ts, 4))
        return;
    if (reduce_op != NK_ALU_ADD && reduce_op != NK_ALU_MULTIPLY && reduce_op != NK_ALU_MAX &&
        reduce_op != NK_ALU_MIN) {
        nk__fail(nc, loc, NK_EINVAL, "%s: reduce_op %s is not supported (add, multiply, maximum or minimum)", op,
                 nk_alu_name(reduce_op));
        return;
    }
    if (nk__numel(&dst) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_TENSOR_SCALAR_REDUCE, NK_ENGINE_VECTOR);
    if (!in)
        return;
    in->alu0 = (uint8_t)op0;
    in->alu1 = (uint8_t)reduce_op;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_dst2(nc, loc, in, reduce_res);
    nk__emit_opnd(nc, loc, &in->src[0], data);
    in->nsrc = 1;
    if (operand0.is_tensor) {
        nk__emit_opnd(nc, loc, &in->src[1], operand0.t);
        in->flags |= NK_IF_OPND0_T;
        in->nsrc = 2;
    } else {
        nk__emit_imm(nc, loc, in, 0, operand0.value);
    }
    wrote(nc, dst);
    wrote(nc, reduce_res);
}

/* ---- language-level ops */

static nk_tensor tile_like(nk_ctx *nc, nk_loc loc, const char *op, nk_tensor x, nk_dtype dt, nk_buffer mem)
{
    int64_t shape[NK_MAXDIM];
    for (int i = 0; i < x.ndim; i++)
        shape[i] = x.shape[i];
    return nk__tile(nc, loc, op, mem, shape, x.ndim, dt);
}

static nk_tensor tile2(nk_ctx *nc, nk_loc loc, const char *op, int64_t p, int64_t f, nk_dtype dt, nk_buffer mem)
{
    int64_t shape[2] = {p, f};
    return nk__tile(nc, loc, op, mem, shape, 2, dt);
}

nk_tensor nk_zeros_at(nk_ctx *nc, nk_loc loc, nk_shape shape, nk_dtype dt, nk_buffer mem)
{
    return nk_full_at(nc, loc, shape, 0.0, dt, mem);
}

nk_tensor nk_full_at(nk_ctx *nc, nk_loc loc, nk_shape shape, double value, nk_dtype dt, nk_buffer mem)
{
    if (nc->status)
        return NK_NONE;
    if (mem != NK_SBUF && mem != NK_PSUM) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: fills SBUF or PSUM tiles; create HBM tensors with nk_ndarray",
                 lang_label(loc, "nk_full"));
        return NK_NONE;
    }
    if (shape.n < 1 || shape.n > NK_MAXDIM) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: 1 to %d dims, got %d", lang_label(loc, "nk_full"), NK_MAXDIM, shape.n);
        return NK_NONE;
    }
    int pdim = nk__parse_pdim(nc, loc, "nk_full", &shape, mem);
    if (pdim < 0)
        return NK_NONE;
    nk_tensor t = nk__tile_array(nc, loc, lang_label(loc, "nk_full"), mem, shape.d, shape.n, dt, pdim);
    /* a tile array: each block is its own tile, filled by its own memset */
    int64_t nblocks = nk__dims_product(shape.d, pdim);
    for (int64_t k = 0; k < nblocks && !nc->status; k++) {
        nk_tensor b = t;
        b.buf = t.buf + (uint32_t)k;
        b.pdim = 0;
        b.ndim = (uint8_t)(t.ndim - pdim);
        for (int d = 0; d < NK_MAXDIM; d++) {
            b.shape[d] = d < b.ndim ? t.shape[d + pdim] : 0;
            b.stride[d] = d < b.ndim ? t.stride[d + pdim] : 0;
        }
        nk_isa_memset_at(nc, loc, b, value, NK_ENGINE_VECTOR);
    }
    return nc->status ? NK_NONE : t;
}

/* Records a DMA instruction dst <- src (none for an empty view) and marks
 * dst written; 0 when out of memory. */
static int record_dma(nk_ctx *nc, nk_loc loc, int opcode, nk_tensor dst, nk_tensor src)
{
    if (nk__numel(&src) > 0 && nk__numel(&dst) > 0) {
        nk_instr *in = nk__emit(nc, loc, opcode, NK_ENGINE_DMA);
        if (!in)
            return 0;
        nk__emit_opnd(nc, loc, &in->dst, dst);
        nk__emit_opnd(nc, loc, &in->src[0], src);
        in->nsrc = 1;
    }
    wrote(nc, dst);
    return 1;
}

nk_tensor nk_load_at(nk_ctx *nc, nk_loc loc, nk_tensor src)
{
    LANG_OP("nk_load");
    if (!ok_tensor(nc, loc, op, "source", src))
        return NK_NONE;
    if (src.mem == NK_SBUF && nk__in_launch(nc)) { /* a tile handed on chip by the previous kernel: no DMA */
        if (!ok_read(nc, loc, op, "the source", src))
            return NK_NONE;
        return src;
    }
    if (src.mem != NK_SHARED_HBM) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: the source is %s tile; nk_load reads HBM tensors%s", op,
                 src.mem == NK_SBUF ? "an SBUF" : "a PSUM",
                 src.mem == NK_SBUF ? " (in a kernel launched by nk_launch, a load of an SBUF tile is the tile)" : "");
        return NK_NONE;
    }
    if (!ok_read(nc, loc, op, "the source", src))
        return NK_NONE;
    if (src.shape[0] > nc->arch->partitions) {
        char s[64];
        shape_str(s, sizeof s, src);
        nk__fail(nc, loc, NK_EPARTITION, "%s: the source %s has partition dimension %d, which exceeds %d; load tiles of at "
                 "most %d rows", op, s, src.shape[0], nc->arch->partitions, nc->arch->partitions);
        return NK_NONE;
    }
    nk_tensor t = tile_like(nc, loc, op, src, (nk_dtype)src.dtype, NK_SBUF);
    if (nc->status)
        return NK_NONE;
    return record_dma(nc, loc, NK_OP_LOAD, t, src) ? t : NK_NONE;
}

void nk_store_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor value)
{
    LANG_OP("nk_store");
    if (!ok_tensor(nc, loc, op, "destination", dst) || !ok_tensor(nc, loc, op, "value", value))
        return;
    if (dst.mem == NK_SHARED_HBM && nc->p->bufs[dst.buf].role == NK_ROLE_CONSTANT) {
        char where[256];
        nk__buf_where(nc, dst.buf, where, sizeof where);
        nk__fail(nc, loc, NK_EMEMORY, "%s: the destination is the shared constant made at %s, which is read-only", op,
                 where);
        return;
    }
    if (dst.mem != NK_SHARED_HBM) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: the destination is %s tile; nk_store writes HBM tensors (use "
                 "nk_isa_tensor_copy between tiles)", op, dst.mem == NK_SBUF ? "an SBUF" : "a PSUM");
        return;
    }
    if (value.mem == NK_PSUM) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: cannot store straight from PSUM; copy the tile to SBUF first (nk_copy)", op);
        return;
    }
    if (value.mem != NK_SBUF) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: the value is an HBM tensor; store an SBUF tile", op);
        return;
    }
    if (!ok_read(nc, loc, op, "the value", value))
        return;
    int same = dst.ndim == value.ndim;
    for (int i = 0; same && i < dst.ndim; i++)
        same = dst.shape[i] == value.shape[i];
    if (!same) {
        char a[64], b[64];
        shape_str(a, sizeof a, value);
        shape_str(b, sizeof b, dst);
        nk__fail(nc, loc, NK_ESHAPE, "%s: value %s does not match destination %s", op, a, b);
        return;
    }
    if (dst.dtype != value.dtype) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: value is %s but the destination is %s (DMA does not convert; cast with "
                 "nk_copy)", op, nk_dtype_name(value.dtype), nk_dtype_name(dst.dtype));
        return;
    }
    if (nk__numel(&dst) > 0) {
        nk_instr *in = nk__emit(nc, loc, NK_OP_STORE, NK_ENGINE_DMA);
        if (!in)
            return;
        nk__emit_opnd(nc, loc, &in->dst, dst);
        nk__emit_opnd(nc, loc, &in->src[0], value);
        in->nsrc = 1;
    }
    wrote(nc, dst);
}

/* One DMA instruction from src to dst, bytes unconverted: with same_shape
 * the same shape (HBM to SBUF), else the same number of elements of one
 * dtype in row-major order (within SBUF or within HBM [ISA][DMA]). */
static void emit_dma(nk_ctx *nc, nk_loc loc, const char *op, int opcode, nk_tensor dst, nk_tensor src,
                     int same_shape)
{
    if (!ok_read(nc, loc, op, "src", src))
        return;
    int same = dst.ndim == src.ndim;
    for (int i = 0; same && i < dst.ndim; i++)
        same = dst.shape[i] == src.shape[i];
    if (same_shape ? !same : nk__numel(&src) != nk__numel(&dst)) {
        char a[64], b[64];
        shape_str(a, sizeof a, src);
        shape_str(b, sizeof b, dst);
        if (same_shape)
            nk__fail(nc, loc, NK_ESHAPE, "%s: src %s does not match dst %s", op, a, b);
        else
            nk__fail(nc, loc, NK_ESHAPE, "%s: src %s has %lld elements but dst %s has %lld; a DMA moves as many as "
                     "it reads", op, a, (long long)nk__numel(&src), b, (long long)nk__numel(&dst));
        return;
    }
    if (dst.dtype != src.dtype) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: src is %s but dst is %s (DMA does not convert; cast with nk_copy)", op,
                 nk_dtype_name(src.dtype), nk_dtype_name(dst.dtype));
        return;
    }
    record_dma(nc, loc, opcode, dst, src);
}

/* nisa.dma_copy: a DMA between HBM and SBUF in either direction, within
 * SBUF or within HBM, into an existing destination; bytes move unconverted. */
void nk_dma_copy_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor src)
{
    LANG_OP("nk_dma_copy");
    if (!ok_tensor(nc, loc, op, "dst", dst) || !ok_tensor(nc, loc, op, "src", src))
        return;
    if (src.mem == NK_PSUM || dst.mem == NK_PSUM) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: DMA does not access PSUM; copy the tile to SBUF first (nk_copy)", op);
        return;
    }
    if (dst.mem == NK_SHARED_HBM && nc->p->bufs[dst.buf].role == NK_ROLE_CONSTANT) {
        char where[256];
        nk__buf_where(nc, dst.buf, where, sizeof where);
        nk__fail(nc, loc, NK_EMEMORY, "%s: dst is the shared constant made at %s, which is read-only", op, where);
        return;
    }
    if (dst.mem == NK_SHARED_HBM && src.mem != NK_SHARED_HBM) {
        nk_store_at(nc, loc, dst, src);
        return;
    }
    /* within SBUF or within HBM: a copy of as many elements; HBM to SBUF: a load of that shape */
    if (dst.mem == NK_SHARED_HBM || src.mem != NK_SHARED_HBM) {
        emit_dma(nc, loc, op, NK_OP_DMA_COPY, dst, src, 0);
        return;
    }
    emit_dma(nc, loc, op, NK_OP_LOAD, dst, src, 1);
}

nk_tensor nk_copy_at(nk_ctx *nc, nk_loc loc, nk_tensor x, nk_dtype dt)
{
    if (!ok_tile_in(nc, loc, lang_label(loc, "nk_copy"), "input", x))
        return NK_NONE;
    nk_tensor t = tile_like(nc, loc, lang_label(loc, "nk_copy"), x, dt, NK_SBUF);
    nk_isa_tensor_copy_at(nc, loc, t, x, NK_ENGINE_VECTOR);
    return nc->status ? NK_NONE : t;
}

nk_tensor nk_unary_at(nk_ctx *nc, nk_loc loc, nk_act f, nk_tensor x)
{
    if (!ok_tile_in(nc, loc, nk_act_name(f), "input", x))
        return NK_NONE;
    nk_tensor t = tile_like(nc, loc, lang_label(loc, nk_act_name(f)), x, (nk_dtype)x.dtype, NK_SBUF);
    nk_isa_activation_at(nc, loc, t, f, x, nk_imm(0.0f), nk_imm(1.0f), NK_NONE);
    return nc->status ? NK_NONE : t;
}

/* NKI's type promotion (NKI API common fields, "NKI Type Promotion"): float
 * beats int; otherwise the wider type wins; two different floats of one
 * width widen (bf16 with fp16 to float32, two 8-bit floats to bfloat16); a
 * signed and an unsigned int give the signed one when it is wider, else the
 * signed type twice the unsigned one's width, float32 past int32 (the
 * hardware has no int64). */
static nk_dtype promote(nk_dtype a, nk_dtype b)
{
    if (a == b)
        return a;
    int fa = nk_dtype_is_float(a), fb = nk_dtype_is_float(b);
    if (fa != fb)
        return fa ? a : b;
    int sa = nk_dtype_size(a), sb = nk_dtype_size(b);
    if (fa)
        return sa != sb ? (sa > sb ? a : b) : sa == 2 ? NK_F32 : NK_BF16;
    int ua = a >= NK_U8, ub = b >= NK_U8;
    if (ua == ub)
        return sa > sb ? a : b;
    int ss = ua ? sb : sa, su = ua ? sa : sb;
    if (ss > su)
        return ua ? b : a;
    return su == 1 ? NK_I16 : su == 2 ? NK_I32 : NK_F32;
}

static int is_column(nk_tensor t) { return t.ndim >= 1 && nk__free_size(&t) == 1; }

nk_tensor nk_binary_at(nk_ctx *nc, nk_loc loc, nk_alu alu, nk_tensor a, nk_tensor b)
{
    LANG_OP(nk_alu_name(alu));
    if (!ok_tile_in(nc, loc, op, "in0", a) || !ok_tile_in(nc, loc, op, "in1", b))
        return NK_NONE;
    nk_dtype dt = promote((nk_dtype)a.dtype, (nk_dtype)b.dtype);
    int same = a.ndim == b.ndim;
    for (int i = 0; same && i < a.ndim; i++)
        same = a.shape[i] == b.shape[i];
    if (same) {
        nk_tensor t = tile_like(nc, loc, op, a, dt, NK_SBUF);
        nk_isa_tensor_tensor_at(nc, loc, t, a, b, alu, NK_ENGINE_VECTOR);
        return nc->status ? NK_NONE : t;
    }
    if (a.shape[0] == b.shape[0] && (is_column(a) || is_column(b))) {
        int rev = is_column(a);
        nk_tensor big = rev ? b : a, col = rev ? a : b;
        nk_tensor t = tile_like(nc, loc, op, big, dt, NK_SBUF);
        nk_isa_tensor_scalar_at(nc, loc, t, big, alu, nk_col(col), rev, NK_ALU_BYPASS, nk_imm(0), 0,
                                NK_ENGINE_VECTOR);
        return nc->status ? NK_NONE : t;
    }
    char sa[64], sb[64];
    shape_str(sa, sizeof sa, a);
    shape_str(sb, sizeof sb, b);
    nk__fail(nc, loc, NK_ESHAPE, "%s: shapes %s and %s do not broadcast (equal shapes, or one a [P, 1] column)", op,
             sa, sb);
    return NK_NONE;
}

nk_tensor nk_binary_scalar_at(nk_ctx *nc, nk_loc loc, nk_alu alu, nk_tensor a, float s, int reverse)
{
    LANG_OP(nk_alu_name(alu));
    if (!ok_tile_in(nc, loc, op, "input", a))
        return NK_NONE;
    nk_tensor t = tile_like(nc, loc, op, a, (nk_dtype)a.dtype, NK_SBUF);
    nk_isa_tensor_scalar_at(nc, loc, t, a, alu, nk_imm(s), reverse, NK_ALU_BYPASS, nk_imm(0), 0, NK_ENGINE_VECTOR);
    return nc->status ? NK_NONE : t;
}

static nk_tensor reduce_tile(nk_ctx *nc, nk_loc loc, const char *op, nk_tensor x, int axis, int keepdims,
                             nk_dtype dt)
{
    int64_t shape[NK_MAXDIM];
    int n = 0;
    shape[n++] = x.shape[0];
    for (int d = 1; d < x.ndim; d++) {
        if (axis == -1 || d == axis) {
            if (keepdims)
                shape[n++] = 1;
        } else {
            shape[n++] = x.shape[d];
        }
    }
    return nk__tile(nc, loc, op, NK_SBUF, shape, n, dt);
}

nk_tensor nk_reduce_at(nk_ctx *nc, nk_loc loc, nk_alu alu, nk_tensor x, int axis, int keepdims)
{
    LANG_OP("nk_reduce");
    if (!ok_tile_in(nc, loc, op, "input", x))
        return NK_NONE;
    if (axis != -1 && (axis < 1 || axis >= x.ndim)) {
        nk__fail(nc, loc, NK_EINVAL, "%s: axis %d is not a free axis of a %d-dim tile (1..%d, or -1 for all); "
                 "reductions along the partition axis need a transpose", op, axis, x.ndim, x.ndim - 1);
        return NK_NONE;
    }
    nk_tensor t = reduce_tile(nc, loc, op, x, axis, keepdims, (nk_dtype)x.dtype);
    nk_isa_tensor_reduce_at(nc, loc, t, x, alu, axis, keepdims);
    return nc->status ? NK_NONE : t;
}

nk_tensor nk_mean_at(nk_ctx *nc, nk_loc loc, nk_tensor x, int axis, int keepdims)
{
    LANG_OP("nk_mean");
    if (!ok_tile_in(nc, loc, op, "input", x))
        return NK_NONE;
    if (axis != -1 && (axis < 1 || axis >= x.ndim)) {
        nk__fail(nc, loc, NK_EINVAL, "%s: axis %d is not a free axis of a %d-dim tile", op, axis, x.ndim);
        return NK_NONE;
    }
    int64_t n = axis == -1 ? nk__free_size(&x) : x.shape[axis];
    nk_tensor s = reduce_tile(nc, loc, op, x, axis, keepdims, NK_F32);
    nk_isa_tensor_reduce_at(nc, loc, s, x, NK_ALU_ADD, axis, keepdims);
    nk_tensor t = reduce_tile(nc, loc, op, x, axis, keepdims, (nk_dtype)x.dtype);
    nk_isa_tensor_scalar_at(nc, loc, t, s, NK_ALU_MULTIPLY, nk_imm(n ? 1.0f / (float)n : 0.0f), 0, NK_ALU_BYPASS,
                            nk_imm(0), 0, NK_ENGINE_VECTOR);
    return nc->status ? NK_NONE : t;
}

nk_tensor nk_transpose_at(nk_ctx *nc, nk_loc loc, nk_tensor x)
{
    LANG_OP("nk_transpose");
    if (!ok_tile_in(nc, loc, op, "input", x))
        return NK_NONE;
    if (x.ndim != 2) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: transposes 2-D tiles, got %d dims", op, x.ndim);
        return NK_NONE;
    }
    nk_tensor ps = tile2(nc, loc, op, x.shape[1], x.shape[0], NK_F32, NK_PSUM);
    nk_isa_nc_transpose_at(nc, loc, ps, x, NK_ENGINE_TENSOR);
    nk_tensor t = tile2(nc, loc, op, x.shape[1], x.shape[0], (nk_dtype)x.dtype, NK_SBUF);
    nk_isa_tensor_copy_at(nc, loc, t, ps, NK_ENGINE_VECTOR);
    return nc->status ? NK_NONE : t;
}

/* The stationary operand [K, M] of x @ y: x itself when transposed, else x^T. */
static nk_tensor stationary_of(nk_ctx *nc, nk_loc loc, nk_tensor x, int transpose_x)
{
    if (transpose_x || nc->status)
        return x;
    if (x.ndim != 2) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: x must be 2-D, got %d dims", lang_label(loc, "nk_matmul"), x.ndim);
        return NK_NONE;
    }
    return nk_transpose_at(nc, loc, x);
}

nk_tensor nk_matmul_at(nk_ctx *nc, nk_loc loc, nk_tensor x, nk_tensor y, int transpose_x)
{
    LANG_OP("nk_matmul");
    if (!ok_tile_in(nc, loc, op, "x", x) || !ok_tile_in(nc, loc, op, "y", y))
        return NK_NONE;
    nk_tensor st = stationary_of(nc, loc, x, transpose_x);
    if (nc->status)
        return NK_NONE;
    nk_tensor ps = tile2(nc, loc, op, nk__free_size(&st), nk__free_size(&y), NK_F32, NK_PSUM);
    nk_isa_nc_matmul_at(nc, loc, ps, st, y, 0);
    return nc->status ? NK_NONE : ps;
}

void nk_matmul_acc_at(nk_ctx *nc, nk_loc loc, nk_tensor acc, nk_tensor x, nk_tensor y, int transpose_x)
{
    if (!ok_tile_in(nc, loc, lang_label(loc, "nk_matmul_acc"), "x", x) ||
        !ok_tile_in(nc, loc, lang_label(loc, "nk_matmul_acc"), "y", y))
        return;
    nk_tensor st = stationary_of(nc, loc, x, transpose_x);
    nk_isa_nc_matmul_at(nc, loc, acc, st, y, 1);
}

/* Are a tile's free elements one contiguous run (so it reshapes)? */
static int free_contiguous(nk_tensor t)
{
    int64_t run = 1;
    for (int d = t.ndim - 1; d >= 1; d--) {
        if (t.shape[d] != 1 && t.stride[d] != run)
            return 0;
        run *= t.shape[d];
    }
    return 1;
}

nk_tensor nk_broadcast_at(nk_ctx *nc, nk_loc loc, nk_tensor x, nk_shape shape)
{
    LANG_OP("nk_broadcast");
    if (!ok_tile_in(nc, loc, op, "input", x))
        return NK_NONE;
    if (shape.n < 2 || shape.n > NK_MAXDIM) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: target shape needs 2 to %d dims", op, NK_MAXDIM);
        return NK_NONE;
    }
    int64_t P = shape.d[0], F = nk__dims_product(shape.d + 1, shape.n - 1);
    if (F < 0) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: a target dimension is negative or their product overflows", op);
        return NK_NONE;
    }
    if (x.shape[0] == P && nk__free_size(&x) == 1) {
        /* free-axis broadcast: a stride-0 view copied on the Vector engine */
        nk_tensor v = x;
        v.ndim = (uint8_t)shape.n;
        for (int i = 1; i < shape.n; i++) {
            v.shape[i] = (int32_t)shape.d[i];
            v.stride[i] = 0;
        }
        nk_tensor t = nk__tile(nc, loc, op, NK_SBUF, shape.d, shape.n, (nk_dtype)x.dtype);
        nk_isa_tensor_copy_at(nc, loc, t, v, NK_ENGINE_VECTOR);
        return nc->status ? NK_NONE : t;
    }
    if (x.shape[0] == 1 && nk__free_size(&x) == F) {
        /* partition broadcast: ones[1, P]^T @ x[1, F] on the Tensor engine
           [A2], in matmuls of at most gemm_moving_fmax columns (one PSUM
           bank each), each copied out to its columns of the result */
        nk_dtype mdt = nk_dtype_is_float(x.dtype) ? (nk_dtype)x.dtype : NK_F32;
        nk_tensor src = x;
        if (mdt != x.dtype || (x.ndim != 2 && !free_contiguous(x)))
            src = nk_copy_at(nc, loc, x, mdt);
        if (src.ndim != 2)
            src = nk_reshape_at(nc, loc, src, NK_SHAPE(1, F));
        int64_t one[2] = {1, P};
        nk_tensor ones = nk__tile(nc, loc, op, NK_SBUF, one, 2, mdt);
        nk_isa_memset_at(nc, loc, ones, 1.0, NK_ENGINE_VECTOR);
        nk_tensor t = nk__tile(nc, loc, op, NK_SBUF, shape.d, shape.n, (nk_dtype)x.dtype);
        nk_tensor flat = shape.n == 2 ? t : nk_reshape_at(nc, loc, t, NK_SHAPE(P, F));
        int64_t w = nc->arch->gemm_moving_fmax;
        for (int64_t c0 = 0; c0 < F && !nc->status; c0 += w) {
            int64_t c1 = c0 + w < F ? c0 + w : F;
            nk_tensor ps = tile2(nc, loc, op, P, c1 - c0, NK_F32, NK_PSUM);
            nk_isa_nc_matmul_at(nc, loc, ps, ones, nk_ix(nc, src, NK_ALL, nk_r(c0, c1)), 0);
            nk_isa_tensor_copy_at(nc, loc, nk_ix(nc, flat, NK_ALL, nk_r(c0, c1)), ps, NK_ENGINE_VECTOR);
        }
        return nc->status ? NK_NONE : t;
    }
    char s[64];
    shape_str(s, sizeof s, x);
    nk__fail(nc, loc, NK_ESHAPE, "%s: cannot broadcast %s to %lld partitions x %lld (from [P, 1] or [1, F])", op, s,
             (long long)P, (long long)F);
    return NK_NONE;
}

nk_tensor nk_iota_at(nk_ctx *nc, nk_loc loc, nk_shape shape, nk_affine expr, nk_dtype dt)
{
    if (nc->status)
        return NK_NONE;
    if (shape.n < 1 || shape.n > NK_MAXDIM) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: 1 to %d dims, got %d", lang_label(loc, "nk_iota"), NK_MAXDIM, shape.n);
        return NK_NONE;
    }
    nk_tensor t = nk__tile(nc, loc, lang_label(loc, "nk_iota"), NK_SBUF, shape.d, shape.n, dt);
    nk_isa_iota_at(nc, loc, t, expr);
    return nc->status ? NK_NONE : t;
}

/* ---- selection: nl.where */

/* pred ? x : y elementwise on the Vector engine; y a tile (y_tile) or the
 * value yv. The docs give no lowering for nl.where; it is one select. */
static nk_tensor where(nk_ctx *nc, nk_loc loc, const char *op, nk_tensor cond, nk_tensor x, nk_tensor y, int y_tile,
                       float yv)
{
    nk_tensor ts[3] = {x, cond, y_tile ? y : NK_NONE};
    if (!ok_onchip(nc, loc, op, "condition", cond, 1, "") || !ok_onchip(nc, loc, op, "x", x, 1, "") ||
        (y_tile && !ok_onchip(nc, loc, op, "y", y, 1, "")) || !ok_read(nc, loc, op, "condition", cond) ||
        !ok_read(nc, loc, op, "x", x) || (y_tile && !ok_read(nc, loc, op, "y", y)) ||
        !ok_same_size(nc, loc, op, "condition", cond, "x", x) ||
        (y_tile && !ok_same_size(nc, loc, op, "y", y, "x", x)) ||
        !ok_engine_operands(nc, loc, op, NK_ENGINE_VECTOR, ts, 3))
        return NK_NONE;
    nk_dtype dt = y_tile ? promote((nk_dtype)x.dtype, (nk_dtype)y.dtype) : (nk_dtype)x.dtype;
    nk_tensor t = tile_like(nc, loc, op, x, dt, NK_SBUF);
    if (nc->status)
        return NK_NONE;
    if (nk__numel(&t) > 0) {
        nk_instr *in = nk__emit(nc, loc, NK_OP_SELECT, NK_ENGINE_VECTOR);
        if (!in)
            return NK_NONE;
        nk__emit_opnd(nc, loc, &in->dst, t);
        nk__emit_opnd(nc, loc, &in->src[0], cond);
        nk__emit_opnd(nc, loc, &in->src[1], x);
        in->nsrc = 2;
        if (y_tile) {
            nk__emit_src2(nc, loc, in, y);
            in->flags = NK_IF_OPND1_T;
            in->nsrc = 3;
        } else {
            nk__emit_imm(nc, loc, in, 0, yv);
        }
    }
    wrote(nc, t);
    return t;
}

nk_tensor nk_where_at(nk_ctx *nc, nk_loc loc, nk_tensor cond, nk_tensor x, nk_tensor y)
{
    return where(nc, loc, "nk_where", cond, x, y, 1, 0.0f);
}

nk_tensor nk_where_s_at(nk_ctx *nc, nk_loc loc, nk_tensor cond, nk_tensor x, float y)
{
    return where(nc, loc, "nk_where_s", cond, x, NK_NONE, 0, y);
}

/* nl.all: the logical AND along a free axis, as 0/1 in uint8: x != 0, then
 * the minimum (the docs give no lowering; these are two documented
 * instructions). */
nk_tensor nk_all_at(nk_ctx *nc, nk_loc loc, nk_tensor x, int axis)
{
    LANG_OP("nk_all");
    if (!ok_tile_in(nc, loc, op, "input", x))
        return NK_NONE;
    if (axis != -1 && (axis < 1 || axis >= x.ndim)) {
        nk__fail(nc, loc, NK_EINVAL, "%s: axis %d is not a free axis of a %d-dim tile (1..%d, or -1 for all); "
                 "reductions along the partition axis need a transpose", op, axis, x.ndim, x.ndim - 1);
        return NK_NONE;
    }
    nk_tensor nz = tile_like(nc, loc, op, x, NK_U8, NK_SBUF);
    nk_isa_tensor_scalar_at(nc, loc, nz, x, NK_ALU_NOT_EQUAL, nk_imm(0.0f), 0, NK_ALU_BYPASS, nk_imm(0), 0,
                            NK_ENGINE_VECTOR);
    nk_tensor t = reduce_tile(nc, loc, op, x, axis, 0, NK_U8);
    nk_isa_tensor_reduce_at(nc, loc, t, nz, NK_ALU_MIN, axis, 0);
    return nc->status ? NK_NONE : t;
}

/* ---- random numbers: nl.random_seed, nisa.dropout, nl.dropout */

void nk_random_seed_at(nk_ctx *nc, nk_loc loc, nk_tensor seed)
{
    LANG_OP("nk_random_seed");
    if (!ok_onchip(nc, loc, op, "seed", seed, 1, "") || !ok_read(nc, loc, op, "seed", seed))
        return;
    if (nk__numel(&seed) != 1) {
        char s[64];
        shape_str(s, sizeof s, seed);
        nk__fail(nc, loc, NK_ESHAPE, "%s: seed must be a [1, 1] tile holding one 32-bit value, got %s", op, s);
        return;
    }
    if (nk_dtype_size(seed.dtype) != 4) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: seed must hold a 32-bit value (int32, uint32 or float32), got %s", op,
                 nk_dtype_name(seed.dtype));
        return;
    }
    nc->rng_seed = seed;
    nc->rng_draws = 0;
}

static void dropout(nk_ctx *nc, nk_loc loc, const char *op, nk_tensor dst, nk_tensor data, nk_operand prob)
{
    if (!ok_vector_io(nc, loc, op, "dst", dst, "data", data) || !ok_same_size(nc, loc, op, "dst", dst, "data", data) ||
        !ok_operand(nc, loc, op, "prob", prob, data.shape[0]))
        return;
    if (dst.dtype != data.dtype) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: dst is %s but data is %s; the output dtype must be the input's", op,
                 nk_dtype_name(dst.dtype), nk_dtype_name(data.dtype));
        return;
    }
    if (!prob.is_tensor && !(prob.value >= 0.0f && prob.value <= 1.0f)) {
        nk__fail(nc, loc, NK_EINVAL, "%s: prob %g is outside [0, 1] (the probability of zeroing an element)", op,
                 (double)prob.value);
        return;
    }
    if (prob.is_tensor && !nk_dtype_is_float(data.dtype) && prob.t.dtype != NK_F32) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: %s data needs a float32 prob, got %s", op, nk_dtype_name(data.dtype),
                 nk_dtype_name(prob.t.dtype));
        return;
    }
    if (nc->rng_seed.buf && !ok_read(nc, loc, op, "the seed", nc->rng_seed))
        return;
    if (nk__numel(&dst) == 0)
        return;
    nk_instr *in = nk__emit(nc, loc, NK_OP_DROPOUT, NK_ENGINE_VECTOR);
    if (!in)
        return;
    nk__emit_opnd(nc, loc, &in->dst, dst);
    nk__emit_opnd(nc, loc, &in->src[0], data);
    in->nsrc = 1;
    if (prob.is_tensor) {
        nk__emit_opnd(nc, loc, &in->src[1], prob.t);
        in->flags |= NK_IF_OPND0_T;
        in->nsrc = 2;
    } else {
        nk__emit_imm(nc, loc, in, 0, prob.value);
    }
    if (nc->rng_seed.buf) {
        nk__emit_src2(nc, loc, in, nc->rng_seed);
        in->flags |= NK_IF_OPND1_T;
        in->nsrc = 3;
    }
    nk__emit_imm(nc, loc, in, 1, nc->rng_draws);
    nc->rng_draws += (double)nk__numel(&data);
    wrote(nc, dst);
}

void nk_isa_dropout_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data, nk_operand prob)
{
    dropout(nc, loc, "dropout", dst, data, prob);
}

nk_tensor nk_dropout_at(nk_ctx *nc, nk_loc loc, nk_tensor x, nk_operand rate)
{
    LANG_OP("nk_dropout");
    if (!ok_tile_in(nc, loc, op, "input", x))
        return NK_NONE;
    nk_tensor t = tile_like(nc, loc, op, x, (nk_dtype)x.dtype, NK_SBUF);
    dropout(nc, loc, op, t, x, rate);
    return nc->status ? NK_NONE : t;
}

/* ---- nl.load_transpose2d */

/* HBM [F, P] into a new SBUF tile [P, F]: one DMA whose access pattern
 * transposes [NL][PG]. */
nk_tensor nk_load_transpose2d_at(nk_ctx *nc, nk_loc loc, nk_tensor src)
{
    LANG_OP("nk_load_transpose2d");
    if (!ok_tensor(nc, loc, op, "source", src))
        return NK_NONE;
    if (src.mem != NK_SHARED_HBM) {
        nk__fail(nc, loc, NK_EMEMORY, "%s: the source is %s tile; nk_load_transpose2d reads HBM tensors (transpose "
                 "a tile with nk_transpose)", op, src.mem == NK_SBUF ? "an SBUF" : "a PSUM");
        return NK_NONE;
    }
    if (!ok_read(nc, loc, op, "the source", src))
        return NK_NONE;
    char s[64];
    shape_str(s, sizeof s, src);
    if (src.ndim != 2) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: transposes 2-D tensors, the source %s has %d dims", op, s, src.ndim);
        return NK_NONE;
    }
    if (src.shape[1] > nc->arch->partitions) {
        nk__fail(nc, loc, NK_EPARTITION, "%s: the source %s has %d columns, which become partitions; at most %d", op,
                 s, src.shape[1], nc->arch->partitions);
        return NK_NONE;
    }
    nk_tensor t = tile2(nc, loc, op, src.shape[1], src.shape[0], (nk_dtype)src.dtype, NK_SBUF);
    if (nc->status)
        return NK_NONE;
    return record_dma(nc, loc, NK_OP_LOAD_TRANSPOSE, t, src) ? t : NK_NONE;
}
