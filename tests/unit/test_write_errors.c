/*
 * test_write_errors.c - every writer of the library reports a failed write
 * through one channel, nk_last_error(): the path as the call named it and the
 * system's reason. Full devices are nodes of our own (char 1,7, what
 * /dev/full is) in a scratch directory; a file-size limit (RLIMIT_FSIZE, as
 * `ulimit -f`) fails a regular file half-way.
 */
#include "test.h"
#include "profile_fixture.h"

#include "nkint.h"
#include "kernels.h"
#include "cli/npy.h"
#include "profile/profile.h"
#include "view/view.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char dir[64];

static const char *at(const char *name)
{
    static char path[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
    return path[k];
}

static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

/* The library's writers on one small profile, each to path; n_ok counts the
 * writers that returned NK_EIO with nk_last_error() equal to want. */
static int writers_report(const nk_profile *pr, const char *path, const char *want)
{
    int n = 0;
    const char *last;
#define EXPECT_EIO(call)                                                                   \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        last = nk_last_error();                                                            \
        if (rc_ == NK_EIO && !strcmp(last, want))                                          \
            n++;                                                                           \
        else                                                                               \
            nk_test_fail(__FILE__, __LINE__, "%s: status %d, nk_last_error \"%s\", want \"%s\"", \
                         #call, rc_, last, want);                                          \
    } while (0)
    EXPECT_EIO(nk_program_save(nk_profile_program(pr), path));
    EXPECT_EIO(nk_profile_write(pr, path));
    nk_export_opts o = {0};
    uint64_t bytes = 0;
    char why[256];
    EXPECT_EIO(nk__export_to(pr, "json", &o, path, &bytes, why, sizeof why));
    EXPECT_EIO(nk__export_to(pr, "perfetto", &o, path, &bytes, why, sizeof why));
    EXPECT_EIO(nk__export_to(pr, "csv", &o, path, &bytes, why, sizeof why));
    nk_text page = {0};
    if (!nk__view_html(pr, NULL, &page))
        EXPECT_EIO(nk__view_write_file(path, &page));
    else
        nk_test_fail(__FILE__, __LINE__, "nk__view_html failed");
    nk__text_free(&page);
    nk_array a;
    int64_t shape[1] = {4096};
    if (!nk_array_alloc(&a, NK_F32, 1, shape)) {
        EXPECT_EIO(nk_npy_write(path, &a, why, sizeof why));
        nk_array_free(&a);
    }
#undef EXPECT_EIO
    return n;
}

TEST(write_errors_name_the_path_and_the_system_reason)
{
    snprintf(dir, sizeof dir, "/tmp/nklab-werr-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 130, 64);
    nk_profile *pr = NULL;
    CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    if (!pr) {
        nk_kernel_free(k);
        return;
    }
    char want[256];
    /* a full device, written in place */
    if (geteuid() == 0 && !mknod(at("full"), S_IFCHR | 0666, makedev(1, 7))) {
        snprintf(want, sizeof want, "%s: No space left on device", at("full"));
        CHECK_INT(writers_report(pr, at("full"), want), 7);
        unlink(at("full"));
    }
    /* a directory where the file should be */
    CHECK_INT(mkdir(at("d"), 0700), 0);
    snprintf(want, sizeof want, "%s: is a directory", at("d"));
    CHECK_INT(writers_report(pr, at("d"), want), 7);
    rmdir(at("d"));
    /* a missing directory */
    snprintf(want, sizeof want, "%s: No such file or directory", at("no/f"));
    CHECK_INT(writers_report(pr, at("no/f"), want), 7);
    /* a regular file that outgrows the size limit half-way: the temporary
     * file is removed and nothing replaces the target */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 600;
    void (*h)(int) = signal(SIGXFSZ, SIG_IGN);
    if (!setrlimit(RLIMIT_FSIZE, &lim)) {
        snprintf(want, sizeof want, "%s: File too large", at("big"));
        CHECK_INT(writers_report(pr, at("big"), want), 7);
        setrlimit(RLIMIT_FSIZE, &old);
    }
    signal(SIGXFSZ, h);
    CHECK_INT(entries(), 0);
    CHECK_INT(nk__tmpfiles_count(), 0);
    rmdir(dir);
    nk_profile_free(pr);
    nk_kernel_free(k);
}
