/*
 * test_arch.c - the target tables against the published figures, and
 * loading modified targets from text files.
 */
#include "test.h"
#include "nkint.h"

#include <stdlib.h>
#include <unistd.h>

/* ---- the tables agree with the sources' derived figures */

TEST(arch_trn1_matches_published_figures)
{
    const nk_arch *a = nk__arch_get("trn1");
    CHECK(a != NULL);
    if (!a)
        return;
    CHECK_STR(a->name, "trn1");
    CHECK(nk__arch_get(NULL) == a && nk__arch_get("") == a);
    /* 128x128 PEs, 2 flops per MAC, 2.8 GHz: 92 TFLOPS bf16, 23 fp32 [A2] */
    CHECK_NEAR(128.0 * 128 * 2 * a->pe_ghz / 1000, 92, 0.01, 0);
    CHECK_NEAR(128.0 * 128 * 2 * a->pe_ghz / 1000 / a->pe_fp32_factor, 23, 0.01, 0);
    /* 24 MiB SBUF, 2 MiB PSUM of 8 banks [A2] */
    CHECK_INT(a->partitions * a->sbuf_partition_bytes, 24 << 20);
    CHECK_INT(a->partitions * a->psum_partition_bytes, 2 << 20);
    CHECK_INT(a->psum_banks * a->psum_bank_bytes, a->psum_partition_bytes);
    /* 16 DMA engines x 17 B/ns = 272 GB/s per core [DMAbw]; 820 GB/s HBM for 2 cores [A2] */
    CHECK_NEAR(a->dma_engines * a->dma_engine_gbps, 272, 1e-12, 0);
    CHECK_NEAR(2 * a->hbm_gbps, 820, 1e-12, 0);
    CHECK_INT(a->sbuf_dve_pool_exclusive, 1);
    CHECK_INT(a->psum_dve_act_exclusive, 1);
}

TEST(arch_trn2_matches_published_figures)
{
    const nk_arch *a = nk__arch_get("trn2");
    CHECK(a != NULL);
    if (!a)
        return;
    /* 79 bf16 / 20 fp32 dense TFLOPS at 2.4 GHz [A3] */
    CHECK_NEAR(128.0 * 128 * 2 * a->pe_ghz / 1000, 79, 0.01, 0);
    CHECK_NEAR(128.0 * 128 * 2 * a->pe_ghz / 1000 / a->pe_fp32_factor, 20, 0.02, 0);
    CHECK_INT(a->partitions * a->sbuf_partition_bytes, 28 << 20); /* 28 MiB [A3] */
    CHECK_NEAR(a->dma_engines * a->dma_engine_gbps, 368, 1e-12, 0); /* [DMAbw] */
    /* one profiled trn2 engine moved 32 KiB in 1416 ns: 23 B/ns [DMA] */
    CHECK_NEAR(32768 / 1416.0, a->dma_engine_gbps, 0.01, 0);
    CHECK_NEAR(8 * a->hbm_gbps, 3000, 1e-12, 0); /* 3 TB/s for 8 cores [A3] */
    CHECK_INT(a->sbuf_dve_pool_exclusive, 0);
    CHECK_INT(a->psum_dve_act_exclusive, 0);
    CHECK(nk__arch_get("trn3") == NULL);
}

/* ---- loading */

static int load(const char *text, nk_arch *a, char *err, size_t n) { return nk__arch_load_text(text, "t.cfg", a, err, n); }

TEST(arch_load_overrides_the_base)
{
    nk_arch a;
    char err[256] = "x";
    const char *text = "# a slower HBM on trn2\n"
                       "\n"
                       "  base = trn2   # start here\n"
                       "hbm_gbps = 200\n"
                       "name=trn2-slow\n"
                       "dma_engines = 8\n"
                       "sbuf_dve_pool_exclusive = 1\n"
                       "pe_ghz = 1.5e0\n";
    CHECK_INT(load(text, &a, err, sizeof err), 0);
    CHECK_STR(err, "");
    const nk_arch *b = nk__arch_get("trn2");
    CHECK_STR(a.name, "trn2-slow");
    CHECK(a.hbm_gbps == 200);
    CHECK_INT(a.dma_engines, 8);
    CHECK_INT(a.sbuf_dve_pool_exclusive, 1);
    CHECK(a.pe_ghz == 1.5);
    /* everything else as the base */
    CHECK(a.dve_ghz == b->dve_ghz && a.act_ghz == b->act_ghz && a.dma_engine_gbps == b->dma_engine_gbps);
    CHECK_INT(a.sbuf_partition_bytes, b->sbuf_partition_bytes);
    CHECK_INT(a.psum_dve_act_exclusive, 0);
    /* the base alone is the base */
    CHECK_INT(load("base = trn1", &a, err, sizeof err), 0);
    CHECK_STR(a.name, "trn1");
    CHECK(a.pe_ghz == nk__arch_get("trn1")->pe_ghz);
}

static void check_error(const char *text, int status, const char *msg)
{
    nk_arch a, before;
    memset(&a, 0x5a, sizeof a);
    before = a;
    char err[256] = "";
    CHECK_INT(load(text, &a, err, sizeof err), status);
    CHECK_STR(err, msg);
    CHECK(!memcmp(&a, &before, sizeof a)); /* untouched on failure */
}

TEST(arch_load_errors_name_the_line)
{
    check_error("base = trn1\n\nfoo = 3\n", NK_EINVAL, "t.cfg:3: unknown key 'foo'");
    check_error("base = trn1\npe_ghz = fast\n", NK_EINVAL,
                "t.cfg:2: bad value 'fast' for 'pe_ghz': expected a number in [0.001, 100]");
    check_error("base = trn1\npe_ghz = 0\n", NK_EINVAL,
                "t.cfg:2: bad value '0' for 'pe_ghz': expected a number in [0.001, 100]");
    check_error("base = trn1\npe_ghz = 2.8 GHz\n", NK_EINVAL,
                "t.cfg:2: bad value '2.8 GHz' for 'pe_ghz': expected a number in [0.001, 100]");
    check_error("base = trn1\ndma_engines = 2.5\n", NK_EINVAL,
                "t.cfg:2: bad value '2.5' for 'dma_engines': expected an integer in [1, 64]");
    check_error("base = trn1\nsbuf_dve_pool_exclusive = 2\n", NK_EINVAL,
                "t.cfg:2: bad value '2' for 'sbuf_dve_pool_exclusive': expected an integer in [0, 1]");
    check_error("base = trn1\nhbm_gbps = nan\n", NK_EINVAL,
                "t.cfg:2: bad value 'nan' for 'hbm_gbps': expected a number in [0.001, 1e+07]");
    check_error("base = trn1\nname = my target\n", NK_EINVAL,
                "t.cfg:2: bad value 'my target' for 'name': expected 1 to 15 letters, digits, '_', '-' or '.'");
    check_error("hbm_gbps = 100\nbase = trn1\n", NK_EFORMAT,
                "t.cfg:1: the first setting must be 'base = trn1' or 'base = trn2'");
    check_error("base = trn9\n", NK_ENOTFOUND, "t.cfg:1: unknown base target 'trn9' (known: trn1, trn2)");
    check_error("base = trn1\nbase = trn2\n", NK_EFORMAT, "t.cfg:2: 'base' may appear only once, as the first setting");
    check_error("base = trn1\nhbm_gbps = 1\n# again\nhbm_gbps = 2\n", NK_EINVAL,
                "t.cfg:4: 'hbm_gbps' is set twice (first on line 2)");
    check_error("base = trn1\nhbm_gbps 100\n", NK_EFORMAT, "t.cfg:2: expected 'key = value', got 'hbm_gbps 100'");
    check_error("base = trn1\nhbm_gbps =\n", NK_EFORMAT, "t.cfg:2: expected 'key = value'");
    check_error("# nothing\n\n", NK_EFORMAT, "t.cfg: no 'base = trn1' or 'base = trn2' setting");
    check_error("base = trn1\nsbuf_reserved_bytes = 196608\n", NK_EINVAL,
                "t.cfg: sbuf_reserved_bytes (196608) must be less than sbuf_partition_bytes (196608)");
    check_error("base = trn1\npsum_banks = 16\n", NK_EINVAL,
                "t.cfg: psum_banks x psum_bank_bytes (16 x 2048) exceeds psum_partition_bytes (16384)");
    check_error("base = trn1\npsum_bank_bytes = 1024\n", NK_EINVAL,
                "t.cfg: psum_fmax (512) float32 take 2048 bytes, more than psum_bank_bytes (1024)");
    check_error("base = trn1\ngemm_moving_fmax = 1024\n", NK_EINVAL,
                "t.cfg: gemm_moving_fmax (1024) exceeds psum_fmax (512)");
    check_error("base = trn1\npe_transpose_max = 256\n", NK_EINVAL,
                "t.cfg:2: bad value '256' for 'pe_transpose_max': expected an integer in [1, 128]");
}

/* The tile-size limits of instructions: nl.tile_size and nc_transpose [TS][ISA]. */
TEST(arch_tile_size_limits_are_nkis)
{
    const char *names[2] = {"trn1", "trn2"};
    for (int i = 0; i < 2; i++) {
        const nk_arch *a = nk__arch_get(names[i]);
        CHECK_INT(a->gemm_stationary_fmax, 128);
        CHECK_INT(a->gemm_moving_fmax, 512);
        CHECK_INT(a->psum_fmax, a->psum_bank_bytes / 4); /* one 2 KiB bank of fp32 */
        CHECK_INT(a->psum_fmax, 512);
        CHECK_INT(a->pe_transpose_max, 128);
        CHECK_INT(a->dve_transpose_max, 32);
        char err[160];
        CHECK_INT(nk__arch_check(a, err, sizeof err), 0);
    }
    /* a target file sets them, halving a bank with its fp32 count */
    nk_arch a;
    char err[256] = "";
    CHECK_INT(load("base = trn1\npsum_bank_bytes = 1024\npsum_fmax = 256\ngemm_moving_fmax = 256\n"
                   "gemm_stationary_fmax = 64\ndve_transpose_max = 16\npe_transpose_max = 64\n",
                   &a, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_INT(a.psum_fmax, 256);
    CHECK_INT(a.gemm_moving_fmax, 256);
    CHECK_INT(a.gemm_stationary_fmax, 64);
    CHECK_INT(a.dve_transpose_max, 16);
    CHECK_INT(a.pe_transpose_max, 64);
    char *t = NULL;
    CHECK_INT(nk__arch_format(&a, &t), 0);
    CHECK_CONTAINS(t, "\ngemm_moving_fmax           = 256 ");
    CHECK_CONTAINS(t, "\ndve_transpose_max          = 16 ");
    free(t);
    a.dve_transpose_max = 0;
    CHECK_INT(nk__arch_check(&a, err, sizeof err), NK_EINVAL);
    CHECK_STR(err, "target trn1: dve_transpose_max = 0: expected an integer in [1, 128]");
}

TEST(arch_load_file)
{
    char path[] = "/tmp/nklab_arch_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    const char *text = "base = trn1\nhost_gbps = 32\n";
    CHECK_INT(write(fd, text, strlen(text)), (long long)strlen(text));
    close(fd);
    nk_arch a;
    char err[512];
    CHECK_INT(nk__arch_load_file(path, &a, err, sizeof err), 0);
    CHECK(a.host_gbps == 32);
    /* a message names the file */
    FILE *f = fopen(path, "w");
    fputs("base = trn1\nbogus = 1\n", f);
    fclose(f);
    CHECK_INT(nk__arch_load_file(path, &a, err, sizeof err), NK_EINVAL);
    char want[600];
    snprintf(want, sizeof want, "%s:2: unknown key 'bogus'", path);
    CHECK_STR(err, want);
    unlink(path);
    CHECK_INT(nk__arch_load_file(path, &a, err, sizeof err), NK_EIO);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    CHECK_STR(err, want);
}

TEST(arch_format_round_trips)
{
    const char *names[2] = {"trn1", "trn2"};
    for (int i = 0; i < 2; i++) {
        const nk_arch *b = nk__arch_get(names[i]);
        char *t1 = NULL, *t2 = NULL, err[256];
        CHECK_INT(nk__arch_format(b, &t1), 0);
        if (!t1)
            continue;
        char line[64];
        snprintf(line, sizeof line, "\nbase = %s\n", names[i]);
        CHECK_CONTAINS(t1, line);
        CHECK_CONTAINS(t1, "\ndma_latency_ns ");
        nk_arch a;
        CHECK_INT(load(t1, &a, err, sizeof err), 0);
        CHECK(a.pe_ghz == b->pe_ghz && a.dma_eff_half_bytes == b->dma_eff_half_bytes && a.hbm_gbps == b->hbm_gbps);
        CHECK_INT(a.sbuf_reserved_bytes, b->sbuf_reserved_bytes);
        CHECK_INT(nk__arch_format(&a, &t2), 0);
        CHECK_STR(t2, t1);
        free(t1);
        free(t2);
    }
    /* a renamed target keeps every value */
    nk_arch a, c;
    char err[256], *t = NULL;
    CHECK_INT(load("base = trn2\nname = mine\ndve_ghz = 0.5\n", &a, err, sizeof err), 0);
    CHECK_INT(nk__arch_format(&a, &t), 0);
    CHECK_INT(load(t, &c, err, sizeof err), 0);
    CHECK_STR(c.name, "mine");
    CHECK(c.dve_ghz == 0.5 && c.pe_ghz == nk__arch_get("trn2")->pe_ghz);
    free(t);
}
