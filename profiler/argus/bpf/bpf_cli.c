/*
 * argus-bpf: the BPF system-tracing backend's collector (include/argus/bpf.h,
 * docs/argus-backends.md).
 *
 *   argus-bpf probe                         can this process trace? (exit 0
 *                                           yes, 3 no, with the reason)
 *   argus-bpf run -o OUT [--lib LIB] -- CMD [ARG...]
 *                                           runs CMD with uprobes on LIB's
 *                                           driver calls (default: the
 *                                           first libcuda.so.1 found) and
 *                                           writes OUT (argus.bpf.events v1,
 *                                           JSON Lines); exits with CMD's
 *                                           status (3: tracing refused)
 *
 * OUT: a header line {"schema": "argus.bpf.events", "version": 1, "pid",
 * "lib", "clock": "CLOCK_MONOTONIC", "attached": [...], "lost",
 * "complete"}, one line per event {"t_ns", "tid", "call", "site":
 * "entry"|"return"; for "call": "sched_switch", "off_cpu"|"on_cpu"} in
 * order of arrival, and one {"thread": TID, "launches", "syncs",
 * "sync_wait_ns", "off_cpu", "off_cpu_ns"} line per thread: a wait is a
 * synchronising call's return minus its entry on that thread, an off-CPU
 * time the thread's return to a CPU minus its leaving it. The header's
 * "sched" says whether scheduling was traced ("sched_why" why not). The times
 * are CLOCK_MONOTONIC, the clock CUPTI's timestamps are taken on where
 * argus-shim records launches, so events join launches by thread and time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "argus/argus.h"
#include "argus/bpf.h"

static int usage(void)
{
    fprintf(stderr, "usage: argus-bpf probe\n"
                    "       argus-bpf run -o OUT [--lib LIB] -- CMD [ARG...]\n");
    return 2;
}

static const char *find_libcuda(void)
{
    static const char *const places[] = {
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1",
        "/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib/libcuda.so.1"};
    struct stat st;
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++)
        if (stat(places[i], &st) == 0)
            return places[i];
    return NULL;
}

typedef struct thread_sum {
    uint32_t tid;
    uint64_t launches, syncs, wait_ns, open_t;
    uint64_t offs, off_ns, off_t;
    int open, off;
} thread_sum;

static int write_out(const char *path, int pid, const char *lib, const argus_bpf_trace *t)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "argus-bpf: %s: cannot write: %s\n", path, strerror(errno));
        return -1;
    }
    size_t n;
    const argus_bpf_event *ev = argus_bpf_events(t, &n);
    uint64_t lost = argus_bpf_lost(t);
    fprintf(f, "{\"schema\":\"argus.bpf.events\",\"version\":1,\"pid\":%d,\"lib\":", pid);
    fputc('"', f);
    for (const char *p = lib; *p; p++)
        fprintf(f, (*p == '"' || *p == '\\') ? "\\%c" : "%c", *p);
    const char *sw = argus_bpf_sched(t);
    fprintf(f, "\",\"clock\":\"CLOCK_MONOTONIC\",\"attached\":%d,\"sched\":%s,\"lost\":%llu,"
               "\"complete\":%s",
            argus_bpf_n_attached(t), sw ? "false" : "true", (unsigned long long)lost,
            lost ? "false" : "true");
    if (sw != NULL) {
        fputs(",\"sched_why\":\"", f);
        for (const char *p = sw; *p; p++)
            fprintf(f, (*p == '"' || *p == '\\') ? "\\%c" : "%c", *p);
        fputc('"', f);
    }
    fputs("}\n", f);
    thread_sum *ts = calloc(n + 1, sizeof(*ts));
    size_t nts = 0;
    for (size_t i = 0; i < n; i++) {
        const argus_bpf_event *e = &ev[i];
        int sched = e->call == ARGUS_BPF_SCHED;
        fprintf(f, "{\"t_ns\":%llu,\"tid\":%u,\"call\":\"%s\",\"site\":\"%s\"}\n",
                (unsigned long long)e->t_ns, e->tid, argus_bpf_call_name((int)e->call),
                sched ? (e->ret ? "on_cpu" : "off_cpu") : (e->ret ? "return" : "entry"));
        if (ts == NULL)
            continue;
        size_t k = 0;
        while (k < nts && ts[k].tid != e->tid)
            k++;
        if (k == nts)
            ts[nts++].tid = e->tid;
        if (sched) {
            if (!e->ret) {
                ts[k].off = 1;
                ts[k].off_t = e->t_ns;
            } else if (ts[k].off) {
                ts[k].offs++;
                ts[k].off_ns += e->t_ns - ts[k].off_t;
                ts[k].off = 0;
            }
        } else if (e->call == ARGUS_BPF_LAUNCH || e->call == ARGUS_BPF_LAUNCH_EX) {
            ts[k].launches++;
        } else if (!e->ret) {
            ts[k].open = 1;
            ts[k].open_t = e->t_ns;
        } else if (ts[k].open) {
            ts[k].syncs++;
            ts[k].wait_ns += e->t_ns - ts[k].open_t;
            ts[k].open = 0;
        }
    }
    for (size_t k = 0; ts != NULL && k < nts; k++)
        fprintf(f,
                "{\"thread\":%u,\"launches\":%llu,\"syncs\":%llu,\"sync_wait_ns\":%llu,"
                "\"off_cpu\":%llu,\"off_cpu_ns\":%llu}\n",
                ts[k].tid, (unsigned long long)ts[k].launches, (unsigned long long)ts[k].syncs,
                (unsigned long long)ts[k].wait_ns, (unsigned long long)ts[k].offs,
                (unsigned long long)ts[k].off_ns);
    free(ts);
    if (fclose(f) != 0) {
        fprintf(stderr, "argus-bpf: %s: cannot write: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    const char *out = NULL, *lib = NULL;
    int i = 2;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--lib") == 0 && i + 1 < argc)
            lib = argv[++i];
        else
            return usage();
    }
    if (out == NULL || i + 1 >= argc)
        return usage();
    if (lib == NULL && (lib = find_libcuda()) == NULL) {
        fprintf(stderr, "argus-bpf: no libcuda.so.1 found in the driver's usual places: give the "
                        "target's driver library with --lib\n");
        return 2;
    }
    int go[2];
    if (pipe(go) != 0) {
        perror("argus-bpf: pipe");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("argus-bpf: fork");
        return 2;
    }
    if (pid == 0) {
        /* Wait until the probes are in place, so that no call escapes. */
        char b;
        close(go[1]);
        if (read(go[0], &b, 1) != 1)
            _exit(127);
        close(go[0]);
        execvp(argv[i + 1], argv + i + 1);
        fprintf(stderr, "argus-bpf: %s: %s\n", argv[i + 1], strerror(errno));
        _exit(127);
    }
    close(go[0]);
    argus_bpf_trace *t;
    char msg[1024];
    if (argus_bpf_attach(pid, lib, &t, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus-bpf: %s\n", msg);
        kill(pid, SIGKILL);
        close(go[1]);
        waitpid(pid, NULL, 0);
        return 3;
    }
    if (write(go[1], "g", 1) != 1) {
        perror("argus-bpf: starting the command");
    }
    close(go[1]);
    int st = 0;
    for (;;) {
        argus_bpf_poll(t);
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    argus_bpf_poll(t);
    int rc = write_out(out, pid, lib, t);
    argus_bpf_close(t);
    if (rc != 0)
        return 2;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "probe") == 0 && argc == 2) {
        argus_bpf_caps c;
        argus_bpf_probe(&c);
        char why[512];
        int ok = argus_bpf_usable(&c, why, sizeof why);
        printf("bpf: %s%s%s\n", ok ? "available" : "not available", why[0] ? ": " : "", why);
        return ok ? 0 : 3;
    }
    if (argc >= 2 && strcmp(argv[1], "run") == 0)
        return cmd_run(argc, argv);
    return usage();
}
