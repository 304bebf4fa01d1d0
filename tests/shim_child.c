/*
 * A small "application" for the whole-process tests: reaches the driver as
 * the CUDA runtime does, launches kernels, optionally forks a child that
 * launches too, and prints what the driver executed and whether the
 * launch entry point it was handed is the shim's wrapper.
 *
 * usage: shim_child N [fork M | forkstorm FORKS]
 * forkstorm: while three threads launch fresh kernels, instantiate and
 * destroy graphs and take stats snapshots (every lock of the shim, over
 * and over), fork FORKS children that each launch and exit (writing their
 * stats); a child that does not finish within 10 s is a deadlock (exit 4).
 * With MTEST_REPORT_RESOURCES set it also prints its open descriptors and
 * threads, so a test can compare them with and without the shim.
 */
#define _GNU_SOURCE 1
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fakecuda/fake_cuda.h"

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
                              unsigned, unsigned, unsigned, unsigned, CUstream,
                              void **, void **);

/* Entries of a /proc/self directory (open descriptors, threads). */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - (strcmp(dir, "/proc/self/fd") == 0); /* the DIR's own fd */
}

static void launch(launch_fn lk, CUfunction f, int n)
{
    for (int i = 0; i < n; i++)
        if (lk(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
            exit(3);
}

typedef CUresult (*graph_create_fn)(CUgraph *, unsigned int);
typedef CUresult (*add_kernel_fn)(CUgraphNode *, CUgraph, const CUgraphNode *,
                                  size_t, const CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*inst_flags_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*exec_destroy_fn)(CUgraphExec);

struct storm {
    void *cuda;
    getproc_fn gp;
    launch_fn lk;
    CUgraph g;
    inst_flags_fn inst;
    exec_destroy_fn destroy;
    int (*stats_json)(char *, size_t);
    atomic_int stop;
    int id;
};

static void *proc_of(getproc_fn gp, const char *name)
{
    void *p = NULL;

    if (gp(name, &p, 12000, 0, NULL) != CUDA_SUCCESS || !p)
        exit(2);
    return p;
}

/* One thread of the storm: each round takes the kernel map's lock (a new
 * kernel), the graph map's and the retired-records lock (instantiate,
 * destroy) and, now and then, the stats lock (a snapshot). */
static void *churn(void *p)
{
    struct storm *st = p;
    fake_function_create_fn mk =
        (fake_function_create_fn)dlsym(st->cuda, "fake_function_create");
    static __thread char buf[1 << 20];

    for (unsigned i = 0; !atomic_load(&st->stop); i++) {
        char name[48];
        CUgraphExec x;
        snprintf(name, sizeof(name), "churn_%d_%u", st->id, i % 512);
        if (i < 256)
            launch(st->lk, mk(name, 16, 0), 1);
        if (st->inst(&x, st->g, 0) == CUDA_SUCCESS)
            st->destroy(x);
        if (i % 64 == 0 && st->stats_json)
            st->stats_json(buf, sizeof(buf));
    }
    return NULL;
}

/* Waits up to 10 s for pid; returns its status, or -1 after killing it. */
static int wait_bounded(pid_t pid)
{
    struct timespec nap = {0, 1000000};
    int status;

    for (int i = 0; i < 10000; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        nanosleep(&nap, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static int fork_storm(void *cuda, getproc_fn gp, launch_fn lk, CUfunction f,
                      int forks)
{
    struct storm st[3];
    pthread_t t[3];
    graph_create_fn gc = (graph_create_fn)proc_of(gp, "cuGraphCreate");
    add_kernel_fn ak = (add_kernel_fn)proc_of(gp, "cuGraphAddKernelNode");
    CUDA_KERNEL_NODE_PARAMS np = {.func = f, .gridDimX = 1, .gridDimY = 1,
                                  .gridDimZ = 1, .blockDimX = 32,
                                  .blockDimY = 1, .blockDimZ = 1};
    CUgraphNode node;
    CUgraph g;
    int failed = 0;

    if (gc(&g, 0) != CUDA_SUCCESS || ak(&node, g, NULL, 0, &np) != CUDA_SUCCESS)
        return 2;
    for (int i = 0; i < 3; i++) {
        st[i] = (struct storm){
            .cuda = cuda, .gp = gp, .lk = lk, .g = g, .id = i,
            .inst = (inst_flags_fn)proc_of(gp, "cuGraphInstantiateWithFlags"),
            .destroy = (exec_destroy_fn)proc_of(gp, "cuGraphExecDestroy"),
            .stats_json = (int (*)(char *, size_t))dlsym(
                RTLD_DEFAULT, "mosaic_shim_stats_json"),
        };
        pthread_create(&t[i], NULL, churn, &st[i]);
    }
    for (int n = 0; n < forks && !failed; n++) {
        CUgraphExec x;
        pid_t pid;
        int status;

        /* An executable graph the child will destroy through the shim. */
        if (st[0].inst(&x, g, 0) != CUDA_SUCCESS)
            return 2;
        pid = fork();
        if (pid == 0) {
            char name[48];
            /* The fake driver's own lock may be held by a parent thread at
             * fork (that is the fake's business, not the shim's): clear the
             * handle's tag in this copy of memory, so the fake rejects the
             * destroy before locking while the shim still retires its
             * record (the retired-records lock). */
            *(volatile uint32_t *)(void *)x = 0;
            st[0].destroy(x);
            snprintf(name, sizeof(name), "forked_%d", n);
            launch(lk, ((fake_function_create_fn)dlsym(
                           cuda, "fake_function_create"))(name, 8, 0),
                   3);
            launch(lk, f, 1);
            exit(0);
        }
        status = wait_bounded(pid);
        if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
        else
            st[0].destroy(x);
    }
    for (int i = 0; i < 3; i++)
        atomic_store(&st[i].stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    ((CUresult(*)(CUgraph))proc_of(gp, "cuGraphDestroy"))(g);
    printf("forkstorm %s\n", failed ? "deadlock" : "ok");
    return failed ? 4 : 0;
}

int main(int argc, char **argv)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    getproc_fn gp;
    launch_fn lk = NULL;
    CUfunction f;
    struct fake_tally t;
    Dl_info info;
    int wrapped, n = argc > 1 ? atoi(argv[1]) : 0;

    if (!cuda)
        return 2;
    gp = (getproc_fn)dlsym(cuda, "cuGetProcAddress_v2");
    if (!gp || gp("cuLaunchKernel", (void **)&lk, 12000, 0, NULL) != CUDA_SUCCESS)
        return 2;
    f = ((fake_function_create_fn)dlsym(cuda, "fake_function_create"))("child_fn",
                                                                        32, 0);
    wrapped = dladdr((void *)lk, &info) && strstr(info.dli_fname, "libmosaic");
    launch(lk, f, n);
    if (argc > 3 && strcmp(argv[2], "forkstorm") == 0)
        return fork_storm(cuda, gp, lk, f, atoi(argv[3]));
    if (argc > 3 && strcmp(argv[2], "fork") == 0) {
        pid_t pid = fork();
        int status;
        if (pid == 0) {
            launch(lk, f, atoi(argv[3]));
            exit(0);
        }
        waitpid(pid, &status, 0);
        launch(lk, f, n);
    }
    ((fake_tally_fn)dlsym(cuda, "fake_tally"))(&t);
    {
        /* the test interposer (tests/interposer/), when preloaded */
        unsigned long long (*icalls)(void) = (unsigned long long (*)(void))dlsym(
            RTLD_DEFAULT, "interposer_calls");
        printf("executed %llu wrapped %d", (unsigned long long)t.direct_executed,
               wrapped);
        if (icalls)
            printf(" interposer %llu", icalls());
        putchar('\n');
    }
    if (getenv("MTEST_REPORT_RESOURCES"))
        printf("fds %d threads %d\n", count_entries("/proc/self/fd"),
               count_entries("/proc/self/task"));
    return 0;
}
