/*
 * argus-shim: kernel-level regions of an unmodified program.
 *
 *   argus-shim [--nvtx] [--kernels] [--pc-sampling [--pc-mode MODE] [--pc-period N]]
 *              [--metrics PROFILE | --hw-metrics] [-o DIR] -- CMD [ARG...]
 *   argus-shim --replay FILE [--metrics PROFILE] [-o DIR]
 *
 * Runs CMD with libargus_inject.so as its CUDA injection library, which
 * records NVTX ranges, launches and CUPTI kernel activity into
 * DIR/events.jsonl; then builds the regions from that recording and writes
 * DIR/report.json (argus.report v1), DIR/trace.json (Perfetto) and
 * DIR/report.txt, and prints the text. --replay builds the same outputs
 * from a recording made earlier (or written by hand: docs/argus.md).
 * --metrics joins each kernel to its entry in a mosaic-profile/1 kernel
 * profile (include/argus/metrics.h): counters, % of peak, a bottleneck.
 * --hw-metrics makes that profile first: CUPTI has one subscriber per
 * process and the capture (kernel replay through the range profiler) and
 * the recorder are two, so CMD runs twice, under `mosaic-profile capture`
 * and then under the recorder, and the two runs are joined by kernel name
 * and launch configuration like any other profile.
 *
 * Exit status: CMD's (128 + signal when a signal ended it), so that a
 * wrapper script sees the program's failure; 0 after a clean replay; 1 when
 * the recording is bad, missing (CMD never initialised CUDA) or the outputs
 * cannot be written, or the --metrics profile was refused or is of another
 * GPU than the kernels ran on (the report is written, without those
 * metrics, and says why), CMD itself having succeeded; 2 for a usage error; 127
 * when CMD cannot be run.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "argus/metrics.h"
#include "argus/shim.h"

#define MSG_LEN 1024

static void usage(FILE *f)
{
    fputs("usage: argus-shim [--nvtx] [--kernels] [--pc-sampling [--pc-mode MODE] [--pc-period N]]\n"
          "                  [--metrics PROFILE | --hw-metrics] [-o DIR] -- CMD [ARG...]\n"
          "       argus-shim --replay FILE [--metrics PROFILE] [-o DIR]\n"
          "--metrics PROFILE: each kernel joined (by name, grid, block and dynamic shared\n"
          "  memory) to its entry in a mosaic-profile/1 kernel profile (`mosaic-profile\n"
          "  capture`): counters with units, %% of the GPU's peak, a bottleneck label\n"
          "--hw-metrics: the same from a capture argus-shim runs first: CMD runs twice, once\n"
          "  under `mosaic-profile capture` (DIR/profile.json) and once recorded\n"
          "--pc-sampling: CUPTI PC samples per kernel, device function and source line;\n"
          "  --pc-mode kernel_serialized (default: kernels run one at a time, samples tied to\n"
          "  each launch) or continuous (kernels overlap, samples tied to kernels by name);\n"
          "  --pc-period N: one active warp per SM sampled every 2^N cycles (5-31, default 12)\n"
          "Runs CMD with NVTX ranges and CUPTI kernel activity recorded (both unless one is\n"
          "named) and writes DIR/report.json, DIR/trace.json (ui.perfetto.dev) and\n"
          "DIR/report.txt (DIR defaults to argus-shim.out); the recording is\n"
          "DIR/events.jsonl, which --replay reads again (docs/argus.md).\n",
          f);
}

/* A file of the build beside this binary (REL from its folder), or the
 * path in the environment variable ENV when set (an install that moved
 * it, the tests). */
static int beside_binary(const char *env, const char *rel, char *buf, size_t len)
{
    const char *v = getenv(env);
    if (v && v[0]) {
        int w = snprintf(buf, len, "%s", v);
        return w < 0 || (size_t)w >= len ? -1 : 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    int w = snprintf(buf, len, "%s/%s", dirname(exe), rel);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* The injection library: ../lib/libargus_inject.so, or ARGUS_SHIM_INJECT. */
static int inject_path(char *buf, size_t len)
{
    return beside_binary("ARGUS_SHIM_INJECT", "../lib/libargus_inject.so", buf, len);
}

static int write_file(const char *dir, const char *name, const argus_shim_result *r, int which)
{
    char path[PATH_MAX];
    int w = snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (w < 0 || (size_t)w >= sizeof(path)) {
        fprintf(stderr, "argus-shim: %s: the output directory's name is too long\n", dir);
        return -1;
    }
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "argus-shim: %s: cannot create: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = which == 0   ? argus_shim_report_json(r, NULL, f)
             : which == 1 ? argus_shim_trace_json(r, f)
                          : argus_shim_report_text(r, NULL, f);
    if (rc == 0 && which == 2)
        rc = argus_shim_metrics_text(r, NULL, f);
    if (fclose(f) != 0 && rc == 0)
        rc = ARGUS_EIO;
    if (rc != 0) {
        fprintf(stderr, "argus-shim: %s: writing failed: %s\n", path, argus_strerror(rc));
        return -1;
    }
    return 0;
}

/* Recording -> regions -> the three files and the text on stdout; with
 * metrics (NULL: none asked) joined in. Returns -1 when a file could not be
 * written or the recording is bad, 1 when the metrics were refused or of
 * another GPU (the report is written and says why), else 0. */
static int report(const char *events, const char *dir, const argus_metrics *metrics)
{
    argus_shim_input in;
    int truncated = 0;
    char msg[MSG_LEN] = "";
    int rc = argus_shim_input_load(events, &in, &truncated, msg, sizeof(msg));
    if (rc != 0) {
        fprintf(stderr, "argus-shim: %s\n", msg[0] ? msg : argus_strerror(rc));
        return -1;
    }
    if (truncated)
        fprintf(stderr, "argus-shim: %s: the last line was cut off (the program ended while it "
                        "was written); it was dropped, the lines before it are kept\n",
                events);
    argus_shim_result r;
    if ((rc = argus_shim_build(&in, &r, msg, sizeof(msg))) != 0) {
        fprintf(stderr, "argus-shim: %s: %s\n", events, msg[0] ? msg : argus_strerror(rc));
        argus_shim_input_free(&in);
        return -1;
    }
    r.metrics = metrics;
    int bad = write_file(dir, "report.json", &r, 0) | write_file(dir, "trace.json", &r, 1) |
              write_file(dir, "report.txt", &r, 2);
    if (!bad) {
        argus_shim_report_text(&r, NULL, stdout);
        argus_shim_metrics_text(&r, NULL, stdout);
    }
    int hw = 0;
    uint64_t c[4] = {0};
    if (metrics && metrics->state == ARGUS_METRICS_REFUSED) {
        fprintf(stderr, "argus-shim: --metrics: %s\n", metrics->why);
        hw = 1;
    } else if (metrics && argus_shim_metrics_counts(&r, NULL, c) == 0 && c[3]) {
        fprintf(stderr, "argus-shim: --metrics %s: %llu kernel configurations ran on another GPU "
                        "than the profile's: they have no hardware metrics (report.json says "
                        "why in hw_metrics[].join)\n",
                metrics->path, (unsigned long long)c[3]);
        hw = 1;
    }
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
    return bad ? -1 : hw;
}

/* mosaic-profile beside this binary, or MOSAIC_PROFILE_BIN. */
static int profile_tool(char *buf, size_t len)
{
    return beside_binary("MOSAIC_PROFILE_BIN", "mosaic-profile", buf, len);
}

/* --hw-metrics: CMD under `mosaic-profile capture -o DIR/profile.json`,
 * then the profile loaded into *m. Returns 0 to go on to the recorded run
 * (with *m loaded, or refused when the capture gave no usable profile: the
 * report then says why), or an exit status for argus-shim. A partial
 * profile (counters refused, a metric dropped) is kept and used, its
 * problems said; another CUPTI subscriber stops here, as the recorded run
 * would see nothing either. */
static int hw_capture(const char *dir, char **cmd, argus_metrics *m)
{
    char tool[PATH_MAX], out[PATH_MAX];
    if (profile_tool(tool, sizeof(tool)) != 0 || access(tool, X_OK) != 0) {
        fprintf(stderr, "argus-shim: --hw-metrics: mosaic-profile is not beside argus-shim (%s); "
                        "build it (needs libcsv-dev) or set MOSAIC_PROFILE_BIN; nothing was run\n",
                tool);
        return 1;
    }
    int w = snprintf(out, sizeof(out), "%s/profile.json", dir);
    if (w < 0 || (size_t)w >= sizeof(out)) {
        fprintf(stderr, "argus-shim: %s: the output directory's name is too long\n", dir);
        return 1;
    }
    if (unlink(out) != 0 && errno != ENOENT) {
        fprintf(stderr, "argus-shim: %s: cannot remove the old profile: %s\n", out, strerror(errno));
        return 1;
    }
    size_t n = 0;
    while (cmd[n])
        n++;
    char **av = calloc(n + 6, sizeof(char *));
    if (av == NULL) {
        fprintf(stderr, "argus-shim: out of memory\n");
        return 1;
    }
    av[0] = tool;
    av[1] = "capture";
    av[2] = "-o";
    av[3] = out;
    av[4] = "--";
    memcpy(av + 5, cmd, n * sizeof(char *));
    fprintf(stderr, "argus-shim: --hw-metrics: run 1 of 2: %s capture -o %s -- %s ...\n", tool, out,
            cmd[0]);
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "argus-shim: fork failed: %s\n", strerror(errno));
        free(av);
        return 1;
    }
    if (child == 0) {
        execv(tool, av);
        fprintf(stderr, "argus-shim: cannot run %s: %s\n", tool, strerror(errno));
        _exit(5);
    }
    free(av);
    int status;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "argus-shim: waiting for mosaic-profile failed: %s\n", strerror(errno));
            return 1;
        }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    /* mosaic-profile's exit status (docs/profile-schema.md): 0 complete,
     * 2 no kernel, 3 incomplete, 4 CMD failed, 5 cannot start. */
    if (code == 4) {
        fprintf(stderr, "argus-shim: --hw-metrics: %s failed under mosaic-profile capture (any "
                        "partial profile is kept in %s); it is not run a second time\n",
                cmd[0], out);
        return 1;
    }
    if (code != 0 && code != 2 && code != 3) {
        fprintf(stderr, "argus-shim: --hw-metrics: mosaic-profile capture could not run (exit "
                        "%d, its message above); nothing was recorded\n",
                code);
        return 1;
    }
    char msg[MSG_LEN];
    if (argus_metrics_load(m, out, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "argus-shim: --hw-metrics: %s; the recorded run goes on without hardware "
                        "metrics\n",
                msg);
        return 0;
    }
    int perm = 0;
    for (size_t i = 0; i < m->prof.n_problems; i++) {
        const char *p = m->prof.problems[i];
        if (strstr(p, "another CUPTI tool")) {
            fprintf(stderr, "argus-shim: --hw-metrics: %s; CUPTI allows one subscriber per "
                            "process, so argus-shim's recorder could not work either: nothing "
                            "more was run (the capture's profile is %s)\n",
                    p, out);
            return 1;
        }
        perm |= strstr(p, "ERR_NVGPUCTRPERM") != NULL;
    }
    if (perm)
        fprintf(stderr, "argus-shim: --hw-metrics: the GPU's performance counters are restricted to "
                        "admin users (ERR_NVGPUCTRPERM): run as root, or load the nvidia module "
                        "with NVreg_RestrictProfilingToAdminUsers=0; the partial profile (launch "
                        "data, no counters) is kept in %s and joined, its kernels' counters marked "
                        "missing\n",
                out);
    else if (!m->prof.complete)
        fprintf(stderr, "argus-shim: --hw-metrics: the profile is incomplete (%zu problems, in %s "
                        "and the report's metrics.profile_problems)\n",
                m->prof.n_problems, out);
    fprintf(stderr, "argus-shim: --hw-metrics: run 2 of 2: the recorded run\n");
    return 0;
}

static int make_dir(const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "argus-shim: %s: cannot create the output directory: %s\n", dir,
                strerror(errno));
        return -1;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "argus-shim: %s: exists and is not a directory; pick another -o DIR\n", dir);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = "argus-shim.out", *replay = NULL, *profile = NULL;
    const char *pc_mode = "kernel_serialized", *pc_period = "12";
    int nvtx = 0, kernels = 0, pcs = 0, hw = 0, i;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "--nvtx") == 0) {
            nvtx = 1;
        } else if (strcmp(argv[i], "--kernels") == 0) {
            kernels = 1;
        } else if (strcmp(argv[i], "--pc-sampling") == 0) {
            pcs = 1;
        } else if (strcmp(argv[i], "--pc-mode") == 0 && i + 1 < argc) {
            pc_mode = argv[++i];
            if (strcmp(pc_mode, "kernel_serialized") != 0 && strcmp(pc_mode, "continuous") != 0) {
                fprintf(stderr, "argus-shim: --pc-mode %s: expected kernel_serialized or "
                                "continuous\n", pc_mode);
                return 2;
            }
        } else if (strcmp(argv[i], "--pc-period") == 0 && i + 1 < argc) {
            pc_period = argv[++i];
            char *end = NULL;
            long v = strtol(pc_period, &end, 10);
            if (end == pc_period || *end != '\0' || v < 5 || v > 31) {
                fprintf(stderr, "argus-shim: --pc-period %s: expected log2 of the sampling "
                                "period in SM cycles, 5 to 31 (12: every 4096 cycles)\n",
                        pc_period);
                return 2;
            }
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else if (strcmp(argv[i], "--metrics") == 0 && i + 1 < argc) {
            profile = argv[++i];
        } else if (strcmp(argv[i], "--hw-metrics") == 0) {
            hw = 1;
        } else if (strcmp(argv[i], "--replay") == 0 && i + 1 < argc) {
            replay = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "argus-shim: unknown option %s (the command goes after --)\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    argus_metrics metrics;
    argus_metrics_init(&metrics);
    if (hw && (profile || replay)) {
        fprintf(stderr, "argus-shim: --hw-metrics captures a profile by running CMD: it goes "
                        "with neither --metrics nor --replay (replay with --metrics "
                        "DIR/profile.json)\n");
        return 2;
    }
    if (replay) {
        if (i < argc) {
            fprintf(stderr, "argus-shim: --replay reads a recording; it runs no command\n");
            return 2;
        }
        /* A refused profile leaves the regions: the report says why it has
         * no metrics, and the exit status is 1. */
        char msg[MSG_LEN];
        if (profile)
            argus_metrics_load(&metrics, profile, msg, sizeof(msg));
        int rc = make_dir(dir) != 0 || report(replay, dir, profile ? &metrics : NULL) != 0 ? 1 : 0;
        argus_metrics_free(&metrics);
        return rc;
    }
    if (i >= argc) {
        fprintf(stderr, "argus-shim: no command: give it after --, e.g. argus-shim -- ./app\n");
        usage(stderr);
        return 2;
    }
    if (!nvtx && !kernels)
        nvtx = kernels = 1;
    char inject[PATH_MAX], events[PATH_MAX], cmdline[512] = "", pid[32];
    if (inject_path(inject, sizeof(inject)) != 0 || access(inject, R_OK) != 0) {
        fprintf(stderr, "argus-shim: the injection library libargus_inject.so is not beside the "
                        "binary (../lib); set ARGUS_SHIM_INJECT to its path\n");
        return 1;
    }
    int w = snprintf(events, sizeof(events), "%s/events.jsonl", dir);
    if (w < 0 || (size_t)w >= sizeof(events)) {
        fprintf(stderr, "argus-shim: %s: the output directory's name is too long\n", dir);
        return 1;
    }
    if (make_dir(dir) != 0)
        return 1;
    /* A recording left by an earlier run must not be reported as this one's. */
    if (unlink(events) != 0 && errno != ENOENT) {
        fprintf(stderr, "argus-shim: %s: cannot remove the old recording: %s\n", events,
                strerror(errno));
        return 1;
    }
    const char *other_inj = getenv("CUDA_INJECTION64_PATH");
    if (hw && other_inj && other_inj[0]) {
        fprintf(stderr, "argus-shim: --hw-metrics: CUDA_INJECTION64_PATH names another tool (%s); "
                        "CUPTI allows one subscriber per process, so neither the capture nor the "
                        "recorder could work beside it: unset it; nothing was run\n",
                other_inj);
        return 1;
    }
    if (hw) {
        int rc = hw_capture(dir, &argv[i], &metrics);
        if (rc != 0) {
            argus_metrics_free(&metrics);
            return rc;
        }
        profile = metrics.path;
    }
    /* The profile is read before anything runs: a bad one costs no run. */
    if (profile && !hw) {
        char msg[MSG_LEN];
        if (argus_metrics_load(&metrics, profile, msg, sizeof(msg)) != 0) {
            fprintf(stderr, "argus-shim: --metrics: %s; nothing was run\n", msg);
            argus_metrics_free(&metrics);
            return 1;
        }
    }
    size_t off = 0;
    for (int k = i; k < argc && off < sizeof(cmdline); k++) {
        int n = snprintf(cmdline + off, sizeof(cmdline) - off, "%s%s", k > i ? " " : "", argv[k]);
        if (n < 0)
            break;
        off += (size_t)n;
    }
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    /* NVTX has one injection per process: one configured by another tool
     * (nsys, ...) keeps the ranges, and argus-shim says it has none. */
    int nvtx_ours = nvtx;
    const char *other = getenv("NVTX_INJECTION64_PATH");
    if (nvtx && other && other[0] && strcmp(other, inject) != 0) {
        fprintf(stderr, "argus-shim: NVTX_INJECTION64_PATH names another tool (%s): NVTX ranges "
                        "go to it, not to argus-shim; unset it for ranges\n",
                other);
        nvtx_ours = 0;
    }
    /* The child's pid becomes the root pid after the fork. */
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "argus-shim: fork failed: %s\n", strerror(errno));
        argus_metrics_free(&metrics);
        return 1;
    }
    if (child == 0) {
        snprintf(pid, sizeof(pid), "%ld", (long)getpid());
        if (setenv("CUDA_INJECTION64_PATH", inject, 1) != 0 || setenv("ARGUS_SHIM_OUT", events, 1) != 0 ||
            setenv("ARGUS_SHIM_ROOT_PID", pid, 1) != 0 ||
            setenv("ARGUS_SHIM_COMMAND", cmdline, 1) != 0 ||
            setenv("ARGUS_SHIM_KERNELS", kernels ? "1" : "0", 1) != 0 ||
            setenv("ARGUS_SHIM_PC_SAMPLING", pcs ? "1" : "0", 1) != 0 ||
            setenv("ARGUS_SHIM_PCS_MODE", pc_mode, 1) != 0 ||
            setenv("ARGUS_SHIM_PCS_PERIOD", pc_period, 1) != 0 ||
            setenv("ARGUS_SHIM_NVTX", nvtx_ours ? "1" : "0", 1) != 0 ||
            (nvtx_ours && setenv("NVTX_INJECTION64_PATH", inject, 1) != 0)) {
            fprintf(stderr, "argus-shim: cannot set the environment: %s\n", strerror(errno));
            _exit(127);
        }
        execvp(argv[i], &argv[i]);
        fprintf(stderr, "argus-shim: cannot run %s: %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "argus-shim: waiting for %s failed: %s\n", argv[i], strerror(errno));
            argus_metrics_free(&metrics);
            return 1;
        }
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (WIFSIGNALED(status))
        fprintf(stderr, "argus-shim: %s was killed by signal %d\n", argv[i], WTERMSIG(status));
    else if (code != 0)
        fprintf(stderr, "argus-shim: %s exited with status %d\n", argv[i], code);
    if (access(events, F_OK) != 0)
        argus_metrics_free(&metrics);
    if (code == 127 && access(events, F_OK) != 0)
        return 127;
    if (access(events, F_OK) != 0) {
        fprintf(stderr, "argus-shim: %s: no recording: the program never initialised CUDA (the "
                        "driver loads the recorder at cuInit), so there are no regions\n",
                events);
        return code ? code : 1;
    }
    int bad = report(events, dir, profile ? &metrics : NULL);
    argus_metrics_free(&metrics);
    return code ? code : bad ? 1 : 0;
}
