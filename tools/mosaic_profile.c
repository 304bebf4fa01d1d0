/*
 * mosaic-profile: kernel profiles for Mosaic's interference predictor.
 *
 *   mosaic-profile capture -o prof.json [--max-kernels N] -- cmd args...
 *   mosaic-profile import-ncu file.csv -o prof.json
 *   mosaic-profile show prof.json
 *   mosaic-profile gpu prof.json [--sms N] [--cc X.Y] [--name NAME]
 *   mosaic-profile ncu-metrics
 *
 * See usage() and docs/profile-schema.md.
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "mosaic/profile.h"
#include "ncu_import.h"

enum {
    EXIT_OK = 0,
    EXIT_USAGE = 1,      /* bad arguments, unreadable or invalid input */
    EXIT_NOTHING = 2,    /* no kernel launched / no kernel rows */
    EXIT_INCOMPLETE = 3, /* profile written but incomplete */
    EXIT_CHILD = 4,      /* the profiled program failed */
    EXIT_SETUP = 5,      /* capture library missing, command not runnable,
                            output not writable */
    EXIT_OTHER_GPU = 6   /* gpu: the profile was taken on another GPU */
};

static const char *prog = "mosaic-profile";

static void usage(FILE *f)
{
    fprintf(f,
"usage:\n"
"  %s capture -o PROF.json [--max-kernels N] [--lib LIB.so] -- CMD [ARGS...]\n"
"      Run CMD with the capture library injected (CUDA_INJECTION64_PATH) and\n"
"      write, for each distinct kernel (name, grid, block, dynamic shared\n"
"      memory), its launch configuration, resources, occupancy limits and\n"
"      hardware counters (CUPTI range profiler, kernel replay; only the first\n"
"      launch of each kernel is profiled). --max-kernels N profiles at most N\n"
"      distinct kernels (default 2000). The library is found at\n"
"      ../lib/libmosaic_capture.so next to this program, or from --lib or\n"
"      $MOSAIC_CAPTURE_LIB. CUDA child processes of CMD write\n"
"      PROF.<pid>.json beside PROF.json.\n"
"  %s import-ncu FILE.csv -o PROF.json\n"
"      Convert Nsight Compute CSV to the same format. Produce FILE.csv with\n"
"        ncu --csv --page raw --print-kernel-base mangled \\\n"
"            --metrics $(%s ncu-metrics) CMD > FILE.csv\n"
"  %s show PROF.json\n"
"      Print a short table of the profile.\n"
"  %s gpu PROF.json [--sms N] [--cc X.Y] [--name NAME]\n"
"      Print the GPU the profile was taken on as one JSON object (name,\n"
"      sm_count, cc, l2_bytes, driver, cuda; null where unknown). With\n"
"      --sms/--cc/--name, also check that it is that GPU: a profile of\n"
"      another GPU, or one that does not say, exits with status 6.\n"
"  %s ncu-metrics\n"
"      Print the comma-separated metric list for ncu --metrics.\n"
"\n"
"exit status:\n"
"  0  success\n"
"  1  usage error, unreadable or invalid input file\n"
"  2  nothing to profile: CMD launched no kernel / the CSV has no kernel row\n"
"  3  the profile was written but is incomplete (problems are listed)\n"
"  4  CMD failed (non-zero exit or a signal); any partial profile is kept\n"
"  5  cannot start: capture library missing, CMD not runnable, output not\n"
"     writable\n"
"  6  gpu: the profile was taken on another GPU than --sms/--cc/--name say\n",
            prog, prog, prog, prog, prog, prog);
}

__attribute__((format(printf, 1, 2))) static void err(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---- helpers ---------------------------------------------------------- */

static char *join_argv(char **argv)
{
    size_t n = 1;
    char *s, *p;

    for (char **a = argv; *a; a++)
        n += strlen(*a) * 2 + 3;
    s = malloc(n);
    if (!s)
        return NULL;
    p = s;
    for (char **a = argv; *a; a++) {
        int quote = (*a)[0] == '\0' || strpbrk(*a, " \t\"'\\$") != NULL;
        if (a != argv)
            *p++ = ' ';
        if (quote)
            *p++ = '\'';
        for (const char *c = *a; *c; c++) {
            if (*c == '\'' && quote) {
                memcpy(p, "'\\''", 4);
                p += 4;
            } else {
                *p++ = *c;
            }
        }
        if (quote)
            *p++ = '\'';
    }
    *p = '\0';
    return s;
}

/* An absolute version of path (its folder must exist). */
static char *absolute_path(const char *path)
{
    char *copy1 = strdup(path), *copy2 = strdup(path), *res = NULL;
    char dir_real[PATH_MAX];

    if (!copy1 || !copy2)
        goto out;
    const char *dir = dirname(copy1);
    const char *base = basename(copy2);
    if (!realpath(dir, dir_real))
        goto out;
    if (asprintf(&res, "%s/%s", strcmp(dir_real, "/") == 0 ? "" : dir_real,
                 base) < 0)
        res = NULL;
out:
    free(copy1);
    free(copy2);
    return res;
}

static char *find_capture_lib(const char *opt)
{
    const char *env = getenv("MOSAIC_CAPTURE_LIB");
    char exe[PATH_MAX];
    ssize_t n;
    char *path = NULL;

    if (opt && *opt)
        return strdup(opt);
    if (env && *env)
        return strdup(env);
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *dir = dirname(exe);
    if (asprintf(&path, "%s/../lib/libmosaic_capture.so", dir) < 0)
        return NULL;
    return path;
}

static void print_problems(const struct mosaic_profile *p)
{
    for (size_t i = 0; i < p->n_problems; i++)
        fprintf(stderr, "  - %s\n", p->problems[i]);
}

/* Sibling profiles "<stem>.<pid>.json" written by CUDA child processes. */
static int list_siblings(const char *out_abs, int print)
{
    char *c1 = strdup(out_abs), *c2 = strdup(out_abs);
    int count = 0;

    if (!c1 || !c2)
        goto out;
    const char *dir = dirname(c1);
    const char *base = basename(c2);
    size_t bl = strlen(base);
    size_t stem = bl > 5 && strcmp(base + bl - 5, ".json") == 0 ? bl - 5 : bl;
    DIR *d = opendir(dir);
    if (!d)
        goto out;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        size_t nl = strlen(nm);
        if (nl <= stem + 6 || strncmp(nm, base, stem) != 0 || nm[stem] != '.' ||
            strcmp(nm + nl - 5, ".json") != 0)
            continue;
        const char *q = nm + stem + 1;
        const char *end = nm + nl - 5;
        int digits = q < end;
        for (; q < end; q++)
            digits &= *q >= '0' && *q <= '9';
        if (!digits)
            continue;
        if (print)
            fprintf(stderr, "  %s/%s\n", dir, nm);
        count++;
    }
    closedir(d);
out:
    free(c1);
    free(c2);
    return count;
}

/* ---- capture ---------------------------------------------------------- */

static int cmd_capture(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"max-kernels", required_argument, NULL, 'm'},
        {"lib", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *out = NULL, *lib_opt = NULL;
    long max_kernels = -1;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'm': {
            char *end;
            errno = 0;
            max_kernels = strtol(optarg, &end, 10);
            if (errno || *end || max_kernels < 0 || max_kernels > 100000000) {
                err("--max-kernels \"%s\": expected an integer >= 0", optarg);
                return EXIT_USAGE;
            }
            break;
        }
        case 'l':
            lib_opt = optarg;
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (!out) {
        err("capture: -o PROF.json is required");
        usage(stderr);
        return EXIT_USAGE;
    }
    if (optind >= argc) {
        err("capture: no command given; put it after --, e.g. "
            "%s capture -o prof.json -- ./my_cuda_program", prog);
        return EXIT_USAGE;
    }
    char **cmd = argv + optind;

    char *lib = find_capture_lib(lib_opt);
    if (!lib || access(lib, R_OK) != 0) {
        err("capture library not found at %s: build it (it needs CUPTI: "
            "cmake finds libcupti in the CUDA toolkit) or point --lib or "
            "MOSAIC_CAPTURE_LIB at libmosaic_capture.so",
            lib ? lib : "../lib/libmosaic_capture.so");
        free(lib);
        return EXIT_SETUP;
    }
    char *lib_abs = realpath(lib, NULL);
    free(lib);
    if (!lib_abs) {
        err("capture library: %s", strerror(errno));
        return EXIT_SETUP;
    }

    char *out_abs = absolute_path(out);
    if (!out_abs) {
        err("%s: the folder does not exist (%s); create it first", out,
            strerror(errno));
        free(lib_abs);
        return EXIT_SETUP;
    }
    /* The output must be writable, and a stale file must not be mistaken
     * for this run's. */
    {
        int fd = open(out_abs, O_WRONLY | O_CREAT, 0644);
        if (fd < 0) {
            err("%s: cannot write: %s", out_abs, strerror(errno));
            free(lib_abs);
            free(out_abs);
            return EXIT_SETUP;
        }
        close(fd);
        unlink(out_abs);
    }
    if (getenv("CUDA_INJECTION64_PATH") && *getenv("CUDA_INJECTION64_PATH"))
        fprintf(stderr, "%s: note: CUDA_INJECTION64_PATH was set (%s); it is "
                "replaced by the capture library for this run\n", prog,
                getenv("CUDA_INJECTION64_PATH"));

    char *source = join_argv(cmd);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        err("pipe: %s", strerror(errno));
        return EXIT_SETUP;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        err("fork: %s", strerror(errno));
        return EXIT_SETUP;
    }
    if (pid == 0) {
        char pidbuf[32], maxbuf[32];
        close(pipefd[0]);
        snprintf(pidbuf, sizeof(pidbuf), "%ld", (long)getpid());
        setenv("CUDA_INJECTION64_PATH", lib_abs, 1);
        setenv("MOSAIC_PROFILE_OUT", out_abs, 1);
        setenv("MOSAIC_PROFILE_ROOT_PID", pidbuf, 1);
        if (source)
            setenv("MOSAIC_PROFILE_SOURCE", source, 1);
        if (max_kernels >= 0) {
            snprintf(maxbuf, sizeof(maxbuf), "%ld", max_kernels);
            setenv("MOSAIC_PROFILE_MAX_KERNELS", maxbuf, 1);
        }
        execvp(cmd[0], cmd);
        int e = errno;
        if (write(pipefd[1], &e, sizeof(e)) < 0) {
            /* nothing more to do */
        }
        _exit(127);
    }
    close(pipefd[1]);
    /* Ctrl-C goes to the whole foreground group: let the child handle it
     * and report afterwards. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);

    int exec_errno = 0;
    ssize_t rn;
    do
        rn = read(pipefd[0], &exec_errno, sizeof(exec_errno));
    while (rn < 0 && errno == EINTR);
    close(pipefd[0]);

    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            err("waitpid: %s", strerror(errno));
            return EXIT_SETUP;
        }
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);

    int rc;
    if (rn == (ssize_t)sizeof(exec_errno)) {
        err("cannot run \"%s\": %s", cmd[0], strerror(exec_errno));
        rc = EXIT_SETUP;
        goto done;
    }

    int child_failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char child_desc[128];
    if (WIFEXITED(status))
        snprintf(child_desc, sizeof(child_desc), "exited with status %d",
                 WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(child_desc, sizeof(child_desc), "was killed by signal %d (%s)",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(child_desc, sizeof(child_desc), "ended abnormally");

    struct stat st;
    if (stat(out_abs, &st) != 0) {
        int sib = list_siblings(out_abs, 0);
        if (child_failed) {
            err("\"%s\" %s and wrote no profile (the profile is written when "
                "the program exits normally%s)", source ? source : cmd[0],
                child_desc, sib ? "; child processes wrote profiles" : "");
            rc = EXIT_CHILD;
        } else if (sib) {
            err("\"%s\" itself launched no kernel, but %d CUDA child "
                "process(es) did; their profiles:", source ? source : cmd[0], sib);
            list_siblings(out_abs, 1);
            rc = EXIT_NOTHING;
        } else {
            err("no kernel was launched by %s; nothing to profile",
                source ? source : cmd[0]);
            rc = EXIT_NOTHING;
        }
        if (sib && child_failed)
            list_siblings(out_abs, 1);
        goto done;
    }

    struct mosaic_profile p;
    char msg[1024];
    if (mosaic_profile_read_file(out_abs, &p, msg, sizeof(msg)) != 0) {
        err("the profile is unreadable: %s", msg);
        rc = child_failed ? EXIT_CHILD : EXIT_USAGE;
        goto done;
    }
    size_t profiled = 0;
    int64_t launches = 0;
    for (size_t i = 0; i < p.n_kernels; i++) {
        profiled += mosaic_kernel_n_missing(&p.kernels[i]) < MOSAIC_N_METRICS;
        launches += p.kernels[i].launches;
    }
    if (child_failed) {
        err("\"%s\" %s; the partial profile is kept in %s (%zu kernel(s))",
            source ? source : cmd[0], child_desc, out_abs, p.n_kernels);
        if (p.n_problems)
            print_problems(&p);
        rc = EXIT_CHILD;
    } else if (!p.complete || p.n_problems) {
        err("the profile in %s is incomplete (%zu kernel(s), %zu with "
            "counters):", out_abs, p.n_kernels, profiled);
        print_problems(&p);
        rc = EXIT_INCOMPLETE;
    } else if (p.n_kernels == 0) {
        err("no kernel was launched by %s; nothing to profile",
            source ? source : cmd[0]);
        rc = EXIT_NOTHING;
    } else {
        printf("%s: profiled %zu kernel(s) (%" PRId64 " launch(es)) -> %s\n",
               prog, p.n_kernels, launches, out_abs);
        rc = EXIT_OK;
    }
    if (list_siblings(out_abs, 0)) {
        fprintf(stderr, "%s: CUDA child processes wrote their own profiles:\n",
                prog);
        list_siblings(out_abs, 1);
    }
    mosaic_profile_free(&p);
done:
    free(source);
    free(lib_abs);
    free(out_abs);
    return rc;
}

/* ---- import-ncu --------------------------------------------------------- */

static int cmd_import(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *out = NULL, *in = NULL;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind != argc - 1 || !out) {
        err("import-ncu: expected FILE.csv -o PROF.json");
        usage(stderr);
        return EXIT_USAGE;
    }
    in = argv[optind];

    struct mosaic_profile p;
    char msg[1024];
    if (mosaic_ncu_import(in, &p, msg, sizeof(msg)) != 0) {
        err("%s", msg);
        return EXIT_USAGE;
    }
    if (p.n_kernels == 0) {
        err("%s: no kernel rows after the header and units lines: ncu "
            "profiled nothing (check --kernel-name / --launch-count filters)",
            in);
        mosaic_profile_free(&p);
        return EXIT_NOTHING;
    }
    if (mosaic_profile_write_file(&p, out, msg, sizeof(msg)) != 0) {
        err("%s", msg);
        mosaic_profile_free(&p);
        return EXIT_SETUP;
    }
    int rc = EXIT_OK;
    if (p.n_problems) {
        err("imported %zu kernel(s) to %s, but the profile is incomplete:",
            p.n_kernels, out);
        print_problems(&p);
        rc = EXIT_INCOMPLETE;
    } else {
        printf("%s: imported %zu kernel(s) -> %s\n", prog, p.n_kernels, out);
    }
    mosaic_profile_free(&p);
    return rc;
}

/* ---- show ------------------------------------------------------------- */

static void fmt_int(char *buf, size_t n, int64_t v)
{
    if (v == MOSAIC_NULL)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%" PRId64, v);
}

static void fmt_num(char *buf, size_t n, double v, double scale, int prec)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.*f", prec, v / scale);
}

static int cmd_show(int argc, char **argv)
{
    if (argc != 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        if (argc == 2) {
            usage(stdout);
            return EXIT_OK;
        }
        err("show: expected one file, PROF.json");
        return EXIT_USAGE;
    }
    struct mosaic_profile p;
    char msg[1024];
    if (mosaic_profile_read_file(argv[1], &p, msg, sizeof(msg)) != 0) {
        err("%s", msg);
        return EXIT_USAGE;
    }
    char sms[32], l2[32];
    fmt_int(sms, sizeof(sms), p.gpu.sm_count);
    if (p.gpu.l2_bytes == MOSAIC_NULL)
        snprintf(l2, sizeof(l2), "-");
    else
        snprintf(l2, sizeof(l2), "%.1f MiB", (double)p.gpu.l2_bytes / 1048576.0);
    printf("%s: %s, cc %s, %s SMs, L2 %s, driver %s, CUDA %s\n", argv[1],
           p.gpu.name ? p.gpu.name : "GPU ?", p.gpu.cc ? p.gpu.cc : "?", sms,
           l2, p.gpu.driver ? p.gpu.driver : "?", p.gpu.cuda ? p.gpu.cuda : "?");
    printf("method %s, %s, %zu kernel(s)%s%s\n", p.method ? p.method : "?",
           p.complete && !p.n_problems ? "complete" : "INCOMPLETE",
           p.n_kernels, p.date ? ", " : "", p.date ? p.date : "");
    if (p.n_problems) {
        printf("problems:\n");
        for (size_t i = 0; i < p.n_problems; i++)
            printf("  - %s\n", p.problems[i]);
    }
    printf("%-40s %-15s %-11s %4s %6s %5s %6s %10s %8s %8s %5s %4s\n",
           "kernel", "grid", "block", "regs", "smem", "occ", "launch",
           "time(us)", "DRAM GB/s", "L2hit%", "IPC", "miss");
    for (size_t i = 0; i < p.n_kernels; i++) {
        const struct mosaic_kernel *k = &p.kernels[i];
        char name[41], grid[40], block[40], regs[16], smem[24], occ[16],
            t[24], bw[24], l2h[24], ipc[24];
        size_t nl = strlen(k->name);
        if (nl > 40)
            snprintf(name, sizeof(name), "%.18s..%s", k->name, k->name + nl - 20);
        else
            snprintf(name, sizeof(name), "%s", k->name);
        snprintf(grid, sizeof(grid), "%" PRId64 ",%" PRId64 ",%" PRId64,
                 k->grid[0], k->grid[1], k->grid[2]);
        snprintf(block, sizeof(block), "%" PRId64 ",%" PRId64 ",%" PRId64,
                 k->block[0], k->block[1], k->block[2]);
        fmt_int(regs, sizeof(regs), k->regs);
        int64_t sm = k->dyn_smem;
        if (k->static_smem != MOSAIC_NULL && sm != MOSAIC_NULL)
            sm += k->static_smem;
        fmt_int(smem, sizeof(smem), sm);
        fmt_int(occ, sizeof(occ), k->occ.blocks_per_sm);
        fmt_num(t, sizeof(t), k->metrics[MOSAIC_M_duration_ns], 1e3, 1);
        double dbw = k->metrics[MOSAIC_M_dram_read_bw] + k->metrics[MOSAIC_M_dram_write_bw];
        fmt_num(bw, sizeof(bw), dbw, 1e9, 1);
        fmt_num(l2h, sizeof(l2h), k->metrics[MOSAIC_M_l2_hit_rate_pct], 1, 1);
        fmt_num(ipc, sizeof(ipc), k->metrics[MOSAIC_M_ipc], 1, 2);
        printf("%-40s %-15s %-11s %4s %6s %5s %6" PRId64 " %10s %8s %8s %5s %4d\n",
               name, grid, block, regs, smem, occ, k->launches, t, bw, l2h, ipc,
               mosaic_kernel_n_missing(k));
    }
    mosaic_profile_free(&p);
    return EXIT_OK;
}

/* ---- gpu --------------------------------------------------------------- */

static void put_str_field(const char *key, const char *v, int last)
{
    printf("\"%s\": ", key);
    if (v)
        mosaic__json_fputs(stdout, v);
    else
        fputs("null", stdout);
    fputs(last ? "" : ", ", stdout);
}

static void put_int_field(const char *key, int64_t v, int last)
{
    if (v == MOSAIC_NULL)
        printf("\"%s\": null%s", key, last ? "" : ", ");
    else
        printf("\"%s\": %" PRId64 "%s", key, v, last ? "" : ", ");
}

static int cmd_gpu(int argc, char **argv)
{
    static const struct option opts[] = {
        {"sms", required_argument, NULL, 's'},
        {"cc", required_argument, NULL, 'c'},
        {"name", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct mosaic_gpu want = {.sm_count = MOSAIC_NULL, .l2_bytes = MOSAIC_NULL};
    int c, check = 0;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 1 || v > MOSAIC_GPU_MAX_SMS) {
                err("gpu: --sms \"%s\": expected the SM count, an integer "
                    "1..%d (132 on an H200)", optarg, MOSAIC_GPU_MAX_SMS);
                return EXIT_USAGE;
            }
            want.sm_count = v;
            check = 1;
            break;
        }
        case 'c':
            want.cc = optarg;
            check = 1;
            break;
        case 'n':
            want.name = optarg;
            check = 1;
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        err("gpu: expected one file, PROF.json");
        return EXIT_USAGE;
    }
    const char *path = argv[optind];
    struct mosaic_profile p;
    char msg[1024];
    if (mosaic_profile_read_file(path, &p, msg, sizeof(msg)) != 0) {
        err("%s", msg);
        return EXIT_USAGE;
    }
    fputs("{", stdout);
    put_str_field("file", path, 0);
    put_str_field("name", p.gpu.name, 0);
    put_int_field("sm_count", p.gpu.sm_count, 0);
    put_str_field("cc", p.gpu.cc, 0);
    put_int_field("l2_bytes", p.gpu.l2_bytes, 0);
    put_str_field("driver", p.gpu.driver, 0);
    put_str_field("cuda", p.gpu.cuda, 1);
    fputs("}\n", stdout);
    int rc = EXIT_OK;
    if (check && mosaic_profile_check_gpu(&p, path, &want, msg, sizeof(msg)) != 0) {
        err("%s", msg);
        rc = EXIT_OTHER_GPU;
    }
    mosaic_profile_free(&p);
    if (fflush(stdout) != 0) {
        err("gpu: cannot write the output: %s", strerror(errno));
        return EXIT_SETUP;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 ||
        strcmp(sub, "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(sub, "--version") == 0) {
        printf("%s (schema %s)\n", MOSAIC_PROFILE_TOOL, MOSAIC_PROFILE_SCHEMA);
        return EXIT_OK;
    }
    if (strcmp(sub, "capture") == 0)
        return cmd_capture(argc - 1, argv + 1);
    if (strcmp(sub, "import-ncu") == 0)
        return cmd_import(argc - 1, argv + 1);
    if (strcmp(sub, "show") == 0)
        return cmd_show(argc - 1, argv + 1);
    if (strcmp(sub, "gpu") == 0)
        return cmd_gpu(argc - 1, argv + 1);
    if (strcmp(sub, "ncu-metrics") == 0) {
        printf("%s\n", mosaic_ncu_metric_list());
        return EXIT_OK;
    }
    err("unknown command \"%s\"", sub);
    usage(stderr);
    return EXIT_USAGE;
}
