/*
 * test_names.c - what a profile calls the kernel's inputs and where it says
 * an instruction came from: parameter names and the kernel's declaration
 * line (nk_kernel_set_params) instead of "in0" at "KERNEL:0", and the API
 * call a lowered instruction was made by ("nc_matmul (lowered from
 * nk_broadcast ...)"), through the profile file, the operand text, the
 * exports and the insights.
 */
#include "test.h"
#include "kernels.h"
#include "core/vbuf.h"
#include "insights/insights.h"
#include "profile/profile.h"
#include "view/view.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* loads its first input twice per tile of the second: the "tensor reloaded"
 * finding names the first input */
static const int reload_decl_line = __LINE__ + 1;
static void k_reload(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = args[0], b = args[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, i, 8) {
        nk_tensor ta = nk_load(nc, a);
        nk_tensor tb = nk_load(nc, nk_ix(nc, b, nk_r(i * 128, (i + 1) * 128), NK_ALL));
        nk_store(nc, out, nk_add(nc, ta, tb));
    }
    nk_return(nc, out);
}

static nk_profile *profile_of(nk_kernel *k, const nk_array *args, int nargs)
{
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    if (nk_kernel_compile(k, args, nargs, NULL, &p)) {
        printf("  compile: %s\n", nk_kernel_error(k));
        return NULL;
    }
    if (nk_profile_capture(p, NULL, &pr))
        return NULL;
    return pr;
}

static nk_profile *reload_profile(int named)
{
    nk_array a[2];
    nk_array_alloc(&a[0], NK_F32, 2, (int64_t[]){128, 512});
    nk_array_alloc(&a[1], NK_F32, 2, (int64_t[]){1024, 512});
    nk_kernel *k = nk_kernel_new("reload", k_reload);
    const char *names[] = {"a_tensor", "b_tensor"};
    if (named)
        CHECK_INT(nk_kernel_set_params(k, (nk_loc){__FILE__, reload_decl_line, NULL}, names, 2), 0);
    nk_profile *pr = profile_of(k, a, 2);
    nk_kernel_free(k);
    nk_array_free(&a[0]);
    nk_array_free(&a[1]);
    return pr;
}

static const nk_finding *reload_finding(const nk_insights *ins)
{
    return ins ? nk__insights_find(ins, NK_RULE_TENSOR_RELOADED) : NULL;
}

TEST(names_inputs_by_parameter_and_declaration_line)
{
    nk_profile *pr = reload_profile(1);
    CHECK(pr != NULL);
    if (!pr)
        return;
    char line[32];
    snprintf(line, sizeof line, "test_names.c:%d", reload_decl_line);
    nk_insights *ins = NULL;
    CHECK_INT(nk__insights_build(pr, &ins), 0);
    const nk_finding *f = reload_finding(ins);
    CHECK(f != NULL);
    if (f) {
        CHECK_STR(f->title, "input a_tensor is loaded 8.0 times from HBM");
        CHECK_CONTAINS(f->detail, "input a_tensor (256.0 KiB, from ");
        CHECK_CONTAINS(f->detail, line);
    }
    nk__insights_free(ins);

    /* every export shows the names */
    nk_text csv = {0}, js = {0}, pf = {0};
    CHECK_INT(nk__export_csv(pr, NULL, &csv), 0);
    CHECK_INT(nk__export_json(pr, NULL, &js), 0);
    CHECK_INT(nk__export_perfetto(pr, NULL, &pf), 0);
    CHECK_CONTAINS(csv.s, "src=a_tensor[128, 512] float32 +0");
    CHECK_CONTAINS(csv.s, "src=b_tensor[128, 512] float32 +65536");
    CHECK_CONTAINS(js.s, "src=a_tensor[128, 512] float32 +0");
    CHECK_CONTAINS(pf.s, "src=b_tensor[128, 512] float32 +0");
    CHECK(!strstr(csv.s, "in0") && !strstr(js.s, "in1[") && !strstr(pf.s, "in0["));
    nk__text_free(&csv);
    nk__text_free(&js);
    nk__text_free(&pf);

    /* and the profile file keeps them */
    char path[] = "/tmp/nklab-names-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK_INT(nk_profile_write(pr, path), 0);
    nk_profile *back = NULL;
    char err[256];
    CHECK_INT(nk_profile_read(path, &back, err, sizeof err), 0);
    unlink(path);
    if (back) {
        const nk_program *p = back->prog;
        char b[64];
        CHECK_STR(nk__buf_label(p, p->input_buf[0], b, sizeof b), "a_tensor");
        CHECK_STR(nk__buf_label(p, p->input_buf[1], b, sizeof b), "b_tensor");
        CHECK_STR(nk__buf_label(p, p->output_buf[0], b, sizeof b), "out0");
        const nk_locinfo *l = &p->locs[p->bufs[p->input_buf[0]].loc];
        CHECK_INT(l->line, reload_decl_line);
        CHECK_STR(p->files[l->file], __FILE__);
        CHECK_STR(nk__instr_call(p, &p->instrs[0]), "nk_load");
        nk_profile_free(back);
    }
    nk_profile_free(pr);
}

TEST(names_unnamed_inputs_keep_in0_and_the_kernel_pseudo_location)
{
    nk_profile *pr = reload_profile(0);
    CHECK(pr != NULL);
    if (!pr)
        return;
    nk_insights *ins = NULL;
    CHECK_INT(nk__insights_build(pr, &ins), 0);
    const nk_finding *f = reload_finding(ins);
    CHECK(f != NULL);
    if (f) {
        CHECK_STR(f->title, "input 0 is loaded 8.0 times from HBM");
        CHECK_CONTAINS(f->detail, "from reload:0)");
    }
    nk__insights_free(ins);
    nk_profile_free(pr);
}

/* A front-end's call name outside the file format's rules (a blank here)
 * is stored with '_' for it, once: later instructions of the same call find
 * it, whichever call came between. */
static void k_odd_calls(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor t = nk_load(nc, args[0]);
    for (int i = 0; i < 4; i++)
        t = nk_unary_at(nc, NK_CALL(i % 2 ? "my exp" : "nk_exp"), NK_ACT_EXP, t);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SHARED_HBM);
    nk_store(nc, out, t);
    nk_return(nc, out);
}

TEST(names_a_call_outside_the_format_rules_is_stored_once)
{
    nk_array a;
    nk_array_alloc(&a, NK_F32, 2, (int64_t[]){128, 64});
    nk_kernel *k = nk_kernel_new("odd_calls", k_odd_calls);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &a, 1, NULL, &p), 0);
    if (p) {
        CHECK_INT(p->ncalls, 4); /* nk_load, nk_exp, my_exp, nk_store */
        int odd = 0;
        for (uint32_t i = 0; i < p->ninstr; i++) {
            const char *c = nk__instr_call(p, &p->instrs[i]);
            odd += c && !strcmp(c, "my_exp");
        }
        CHECK_INT(odd, 2);
    }
    nk_kernel_free(k);
    nk_array_free(&a);
}

TEST(names_set_params_checks_its_names)
{
    nk_kernel *k = nk_kernel_new("reload", k_reload);
    const char *blank[] = {"a tensor", "b"}, *quote[] = {"a\"", "b"}, *ok[] = {"a", NULL};
    CHECK_INT(nk_kernel_set_params(k, NK_HERE, blank, 2), NK_EINVAL);
    CHECK_INT(nk_kernel_set_params(k, NK_HERE, quote, 2), NK_EINVAL);
    CHECK_INT(nk_kernel_set_params(k, NK_HERE, ok, -1), NK_EINVAL);
    CHECK_INT(nk_kernel_set_params(k, NK_HERE, ok, 2), 0);
    /* a call with another number of arguments than names: unnamed */
    nk_array a[3];
    for (int i = 0; i < 3; i++)
        nk_array_alloc(&a[i], NK_F32, 2, i == 1 ? (int64_t[]){1024, 512} : (int64_t[]){128, 512});
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, a, 3, NULL, &p), 0);
    char b[64];
    if (p)
        CHECK_STR(nk__buf_label(p, p->input_buf[0], b, sizeof b), "in0");
    nk_kernel_free(k);
    for (int i = 0; i < 3; i++)
        nk_array_free(&a[i]);
}

/* layernorm broadcasts gamma and beta to 128 partitions with a matmul
 * against ones: the float32-matmul finding says it was not written as one */
TEST(names_layernorm_finding_names_the_broadcast_its_matmul_came_from)
{
    const nk_kernel_info *ki = nk_builtin_kernel("layernorm");
    nk_array a[3];
    CHECK_INT(nk_kernel_example_args(ki, 1, a), 0);
    nk_kernel *k = nk_builtin_kernel_new(ki);
    nk_profile *pr = profile_of(k, a, 3);
    CHECK(pr != NULL);
    if (pr) {
        const nk_program *p = pr->prog;
        /* the inputs: named as the kernel declares them, at its function's line */
        const nk_loc *d = nk_builtin_kernel_decl(ki);
        CHECK(d && d->line == 20 && !strcmp(d->file, "kernels/layernorm.c"));
        char b[64];
        CHECK_STR(nk__buf_label(p, p->input_buf[1], b, sizeof b), "gamma");
        CHECK_INT(p->locs[p->bufs[p->input_buf[1]].loc].line, 20);
        uint32_t nmm = 0;
        for (uint32_t i = 0; i < p->ninstr; i++) {
            const nk_instr *in = &p->instrs[i];
            if (in->op != NK_OP_MATMUL)
                continue;
            nmm++;
            CHECK_STR(nk__instr_lowered_from(p, in), "nk_broadcast");
            char o[160];
            nk__format_instr_origin(o, sizeof o, p, in);
            CHECK(!strcmp(o, "nc_matmul (lowered from nk_broadcast at layernorm.c:31)") ||
                  !strcmp(o, "nc_matmul (lowered from nk_broadcast at layernorm.c:32)"));
        }
        CHECK_INT(nmm, 2);
        nk_insights *ins = NULL;
        CHECK_INT(nk__insights_build(pr, &ins), 0);
        const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_MATMUL_FP32) : NULL;
        CHECK(f != NULL);
        /* the advice is about the broadcast the user wrote, not a matmul */
        if (f)
            CHECK_CONTAINS(f->suggestion, "The kernel wrote no matmul here: nk_broadcast is carried out as these "
                                          "matmuls");
        nk_text txt = {0}, js = {0};
        CHECK_INT(nk__insights_text(ins, &txt), 0);
        CHECK_INT(nk__insights_json(ins, &js), 0);
        CHECK_CONTAINS(txt.s, "   not written: nc_matmul (lowered from nk_broadcast at layernorm.c:31, 32): 2 instr\n");
        CHECK_CONTAINS(js.s, "\"lowered\":[{\"opcode\":\"nc_matmul\",\"call\":\"nk_broadcast\","
                             "\"file\":\"kernels/layernorm.c\",\"lines\":[31,32],\"instructions\":2,");
        /* a load the kernel wrote as nk_load is not "lowered" */
        CHECK(!strstr(txt.s, "lowered from nk_load"));
        nk__text_free(&txt);
        nk__text_free(&js);
        nk__insights_free(ins);

        nk_text csv = {0}, pf = {0};
        CHECK_INT(nk__export_csv(pr, NULL, &csv), 0);
        CHECK_INT(nk__export_perfetto(pr, NULL, &pf), 0);
        CHECK_CONTAINS(csv.s, ",nc_matmul,");
        CHECK_CONTAINS(csv.s, ",layernorm,nk_broadcast,nk_broadcast\r\n");
        CHECK_CONTAINS(csv.s, "src=gamma[1, 512] float32 +0\",2048,kernels/layernorm.c,29,,0,0,layernorm,nk_load,\r\n");
        CHECK_CONTAINS(pf.s, "\"call\":\"nk_broadcast\",\"lowered_from\":\"nk_broadcast at layernorm.c:31\"");
        nk__text_free(&csv);
        nk__text_free(&pf);
        nk_profile_free(pr);
    }
    nk_kernel_free(k);
    for (int i = 0; i < 3; i++)
        nk_array_free(&a[i]);
}

/* files from before parameter names (version 1 here) read, inputs as "in0" */
TEST(names_old_profile_reads_with_in0)
{
    nk_profile *pr = NULL;
    char err[256];
    CHECK_INT(nk_profile_read("tests/golden/v1_tensor_exp_trn2.profile", &pr, err, sizeof err), 0);
    if (!pr)
        return;
    const nk_program *p = pr->prog;
    CHECK(p->in_name == NULL && p->ncalls == 0);
    char b[64];
    CHECK_STR(nk__buf_label(p, p->input_buf[0], b, sizeof b), "in0");
    nk_text csv = {0};
    CHECK_INT(nk__export_csv(pr, NULL, &csv), 0);
    CHECK_CONTAINS(csv.s, "src=in0[");
    CHECK_CONTAINS(csv.s, ",tensor_exp,,\r\n");
    nk__text_free(&csv);
    nk_profile_free(pr);
}
