/*
 * fuzz_args.c - libFuzzer target over the command-line parsers shared by
 * the commands (src/cli/args.c).
 *
 * The input is an argv: words separated by NUL bytes (at most 64; the
 * first byte picks the nk_cli_kernel_check flags). Each word goes through
 * nk_cli_kernel_arg as a command's option loop would, and, whatever the
 * loop made of it, through nk_cli_parse_int, nk_cli_parse_double and
 * nk_cli_parse_dim with bounds taken from the input. Errors are expected;
 * what must hold: no crash or leak, each error is a message, and whatever
 * was accepted is in range (numbers read back as strtol/strtod read them,
 * shapes positive, at most NK_CLI_MAX_FILES files, names terminated).
 * nk_cli_error (main.c in nklab) is replaced here by a function that keeps
 * the message, so nothing prints.
 */
#include "fuzz_common.h"
#include "cli/args.h"

#include <errno.h>
#include <stdarg.h>

static char last_msg[1024];
static int nmsg;

int nk_cli_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    va_end(ap);
    REQUIRE(n > 0);
    nmsg++;
    return code;
}

static const long bounds[][2] = {{0, 0}, {1, 10000000}, {0, LONG_MAX}, {-5, 5}, {LONG_MIN, LONG_MAX}, {1, 1},
                                 {-1000, -10}, {1, UINT32_MAX - 1}};

static void numbers(const char *w, uint8_t sel)
{
    const long *b = bounds[sel % (sizeof bounds / sizeof bounds[0])];
    long v = 12345;
    int before = nmsg;
    if (!nk_cli_parse_int("--n", w, b[0], b[1], &v)) {
        REQUIRE(v >= b[0] && v <= b[1] && nmsg == before);
        errno = 0;
        char *end;
        REQUIRE(strtol(w, &end, 10) == v && !*end && !errno);
    } else {
        REQUIRE(nmsg == before + 1 && v == 12345);
    }
    double lo = b[0] < -1e6 ? -1e300 : (double)b[0], hi = (double)b[1], d = 0.5;
    before = nmsg;
    if (!nk_cli_parse_double("--x", w, lo, hi, &d)) {
        REQUIRE(isfinite(d) && d >= lo && d <= hi && nmsg == before);
        REQUIRE(strtod(w, NULL) == d);
    } else {
        REQUIRE(nmsg == before + 1 && d == 0.5);
    }
    const char *x = strchr(w, 'x');
    const char *end = x ? x : w + strlen(w);
    long hi_dim = b[1] > 0 ? b[1] : 1;
    v = 12345;
    if (!nk_cli_parse_dim("--random", w, end, hi_dim, &v))
        REQUIRE(v >= 1 && v <= hi_dim);
    else
        REQUIRE(v == 12345);
}

static void check_cmd(const nk_kernel_cmd *c, int argc, char **argv)
{
    REQUIRE(c->nin >= 0 && c->nin <= NK_CLI_MAX_FILES && c->nout >= 0 && c->nout <= NK_CLI_MAX_FILES);
    for (int i = 0; i < c->nin; i++) {
        const nk_input_spec *s = &c->in[i];
        REQUIRE(s->text && memchr(s->path, 0, sizeof s->path) && memchr(s->name, 0, sizeof s->name));
        if (s->random) {
            REQUIRE(s->name[0] && s->ndim >= 1 && s->ndim <= NK_MAXDIM);
            int64_t numel = 1;
            for (int d = 0; d < s->ndim; d++) {
                REQUIRE(s->shape[d] >= 1 && s->shape[d] <= INT32_MAX);
                numel *= s->shape[d];
            }
            REQUIRE(numel <= ((int64_t)1 << 31));
        } else {
            REQUIRE(s->path[0]);
        }
        REQUIRE(!s->has_dtype || (s->dtype >= 0 && s->dtype < NK_DTYPE_COUNT));
    }
    for (int k = 0; k < NK_MAX_GRID; k++)
        REQUIRE(c->grid[k] >= 0 && c->grid[k] <= NK_MAX_INSTANCES && abs(c->grid_nc[k]) <= c->grid[k]);
    if (c->kernel) {
        int found = 0;
        for (int i = 0; i < argc; i++)
            found |= c->kernel == argv[i];
        REQUIRE(found);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    int flags = data[0] & (NK_CHECK_OUTS | NK_CHECK_EXAMPLES);
    uint8_t sel = data[0] >> 2;
    char *buf = malloc(size + 1);
    REQUIRE(buf);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    char *argv[65];
    int argc = 0;
    for (char *p = buf; p < buf + size - 1 && argc < 64; p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;

    nk_kernel_cmd *c = calloc(1, sizeof *c);
    REQUIRE(c);
    c->cmd = "run";
    int rc = 0;
    for (int i = 0; i < argc && rc >= 0; i++) {
        int at = i, before = nmsg;
        rc = nk_cli_kernel_arg(argc, argv, &i, c);
        REQUIRE(rc >= -1 && rc <= 1 && i >= at && i < argc);
        REQUIRE(rc < 0 ? nmsg == before + 1 : nmsg == before);
        if (rc == 0) /* a command's own option: skipped here */
            REQUIRE(argv[i][0] == '-' && i == at);
    }
    check_cmd(c, argc, argv);
    if (rc >= 0) {
        const nk_kernel_info *ki = (const void *)1;
        int before = nmsg;
        int code = nk_cli_kernel_check(c, flags, &ki);
        REQUIRE(code == NK_EXIT_OK || code == NK_EXIT_USAGE);
        REQUIRE(code == NK_EXIT_OK ? nmsg == before : nmsg == before + 1 && ki == NULL);
        if (code == NK_EXIT_OK && ki)
            REQUIRE(c->kernel && !strcmp(ki->name, c->kernel) && (c->nin == 0 || c->nin == ki->nargs));
    }
    for (int i = 0; i < argc; i++) {
        numbers(argv[i], (uint8_t)(sel + i));
        const char *v = NULL;
        int j = i;
        int r = nk_cli_optval(argc, argv, &j, "--in", &v);
        REQUIRE(r >= -1 && r <= 1 && (r != 1 || (v && *v)));
    }
    free(c);
    free(buf);
    return 0;
}
