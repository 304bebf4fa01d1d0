/*
 * argus-sass: per-PC SASS metrics of a program's kernels through CUPTI's
 * SASS Metrics API (docs/argus-backends.md, "argus-sass").
 *
 *   argus-sass --out FILE [--metrics a,b] [--device N] -- PROG ARGS...
 *
 * Runs PROG with libargus_sass.so as its CUDA injection library
 * (ARGUS_SASS_LIB, else ../lib/libargus_sass.so beside this program), in a
 * private folder (mkdtemp, 0700) where each process of the program writes
 * its own collection; then reads them back strictly, merges them and writes
 * FILE (argus.sassmetrics v1) atomically. The program never writes FILE or
 * anything in FILE's folder, so a path it plants there is not written
 * through.
 *
 * Exit status: PROG's own (128 + N when a signal N killed it); 0 only when
 * something was collected; 3 when PROG exited 0 but nothing was collected
 * (the reason on stderr and in the file's problems); 2 for a bad command
 * line or an --out that cannot be written, before PROG runs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "argus/sass.h"

static volatile sig_atomic_t g_child;

static void forward(int sig)
{
    if (g_child > 0)
        kill((pid_t)g_child, sig);
}

static int usage(const char *why)
{
    if (why != NULL)
        fprintf(stderr, "argus-sass: %s\n", why);
    fputs("usage: argus-sass --out FILE [--metrics a,b] [--device N] -- PROG ARGS...\n"
          "  --out FILE     the argus.sassmetrics v1 file (written atomically)\n"
          "  --metrics a,b  SASS metrics (default " ARGUS_SASS_DEFAULT_METRICS ")\n"
          "  --device N     the CUDA device index to collect on (default: the first context's)\n"
          "environment: ARGUS_SASS_LIB (the injection library), ARGUS_SASS_CUPTI (libcupti),\n"
          "  ARGUS_SASS_LOG=1 (the collector says what it does, on the program's stderr)\n",
          stderr);
    return 2;
}

static int find_lib(char *buf, size_t len)
{
    const char *e = getenv("ARGUS_SASS_LIB");
    if (e != NULL && e[0]) {
        snprintf(buf, len, "%s", e);
        return access(buf, R_OK);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    snprintf(buf, len, "%s/../lib/libargus_sass.so", dirname(exe));
    return access(buf, R_OK);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}

/* Every process's collection in dir, merged into s. */
static size_t gather(const char *dir, argus_sass *s)
{
    size_t files = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, "sass.", 5) != 0 || l < 10 ||
            strcmp(e->d_name + l - 5, ".json") != 0)
            continue;
        char path[PATH_MAX + 256], msg[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            argus_sass_problem(s, "%s is not a regular file: left out", e->d_name);
            continue;
        }
        argus_sass *one = NULL;
        if (argus_sass_load(path, &one, msg, sizeof msg) != 0 ||
            argus_sass_merge(s, one, msg, sizeof msg) != 0)
            argus_sass_problem(s, "a process's collection is left out: %s", msg);
        else
            files++;
        argus_sass_free(one);
    }
    closedir(d);
    return files;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *metrics = NULL, *device = NULL;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(NULL);
            return 0;
        }
        const char **slot = strcmp(argv[i], "--out") == 0       ? &out
                            : strcmp(argv[i], "--metrics") == 0 ? &metrics
                            : strcmp(argv[i], "--device") == 0  ? &device
                                                                : NULL;
        if (slot == NULL) {
            char b[512];
            snprintf(b, sizeof b, "unknown option %.400s (the program comes after --)", argv[i]);
            return usage(b);
        }
        if (i + 1 >= argc) {
            char b[128];
            snprintf(b, sizeof b, "%s needs a value", argv[i]);
            return usage(b);
        }
        *slot = argv[++i];
    }
    if (out == NULL)
        return usage("--out FILE is required");
    if (i >= argc)
        return usage("no program: give it after --");
    char msg[2048];
    argus_sass *s = NULL;
    if (argus_sass_new(&s, metrics, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    if (device != NULL) {
        char *end;
        long d = strtol(device, &end, 10);
        if (*end || end == device || d < 0 || d > 1023) {
            fprintf(stderr,
                    "argus-sass: --device %s: not a CUDA device index (0, 1, ...); the "
                    "program's CUDA_VISIBLE_DEVICES numbering applies\n",
                    device);
            argus_sass_free(s);
            return 2;
        }
    }
    if (argus_sass_check_out(out, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s; the program was not run\n", msg);
        argus_sass_free(s);
        return 2;
    }
    char lib[PATH_MAX];
    if (find_lib(lib, sizeof lib) != 0) {
        fprintf(stderr,
                "argus-sass: the collector library %s is missing: build the argus_sass target "
                "or set ARGUS_SASS_LIB; the program was not run\n",
                lib);
        argus_sass_free(s);
        return 2;
    }
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    if (inj != NULL && inj[0]) {
        fprintf(stderr,
                "argus-sass: CUDA_INJECTION64_PATH is already set (%s): the driver loads one "
                "injection library and another tool holds it; unset it to run under argus-sass; "
                "the program was not run\n",
                inj);
        argus_sass_free(s);
        return 2;
    }
    const char *tmpd = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/argus-sass.XXXXXX", tmpd && tmpd[0] ? tmpd : "/tmp");
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "argus-sass: cannot make a private folder %s: %s; set TMPDIR\n", dir,
                strerror(errno));
        argus_sass_free(s);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "argus-sass: fork: %s\n", strerror(errno));
        remove_dir(dir);
        argus_sass_free(s);
        return 2;
    }
    if (pid == 0) {
        setenv("CUDA_INJECTION64_PATH", lib, 1);
        setenv("ARGUS_SASS_DIR", dir, 1);
        setenv("ARGUS_SASS_METRICS", metrics ? metrics : ARGUS_SASS_DEFAULT_METRICS, 1);
        if (device != NULL)
            setenv("ARGUS_SASS_DEVICE", device, 1);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        execvp(argv[i], argv + i);
        fprintf(stderr, "argus-sass: cannot run %s: %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    g_child = pid;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    g_child = 0;
    size_t files = gather(dir, s);
    remove_dir(dir);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
    if (WIFSIGNALED(st))
        argus_sass_problem(s,
                           "the program was killed by signal %d (%s) after %zu launches were "
                           "collected: their counts are exact, later launches are missing",
                           WTERMSIG(st), strsignal(WTERMSIG(st)), s->n_launches);
    else if (code != 0)
        argus_sass_problem(s,
                           "the program exited with status %d after %zu launches were "
                           "collected: launches it did not reach are missing",
                           code, s->n_launches);
    if (files == 0 && s->n_problems == 0)
        argus_sass_problem(s, "the collector wrote nothing: the program never initialised CUDA "
                              "(cuInit), or replaced CUDA_INJECTION64_PATH");
    else if (files > 0 && s->n_kernels == 0 && s->n_problems == 0)
        argus_sass_problem(s, "no kernel launch was collected: the program launched none");
    int rc = argus_sass_write(s, out, msg, sizeof msg);
    if (rc != 0)
        fprintf(stderr, "%s\n", msg);
    for (size_t p = 0; p < s->n_problems; p++)
        fprintf(stderr, "argus-sass: %s\n", s->problems[p]);
    int nothing = s->n_kernels == 0;
    argus_sass_free(s);
    if (code != 0)
        return code;
    return rc != 0 || nothing ? 3 : 0;
}
