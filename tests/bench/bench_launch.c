/*
 * What the shim adds to one kernel launch, measured in one process.
 *
 * Under LD_PRELOAD=libmosaic.so the program launches the same kernel into
 * the same stream through two entry points: the shim's wrapper (what every
 * program gets) and the driver's own cuLaunchKernel (from
 * mosaic_shim_driver_entry). Blocks of launches through each alternate, so
 * drift of the machine hits both alike; each block is timed on the host
 * clock around the launch calls only (the stream is drained between
 * blocks, outside the timed part). Reported: median ns per launch of each,
 * their difference and ratio, and the median of the per-round differences.
 *
 * With the fake driver (tests/fakecuda) this measures the shim's CPU cost
 * against a driver call of a few nanoseconds; on a GPU (real libcuda) the
 * kernel is an empty one loaded from PTX.
 *
 * With threads > 1 it instead measures many threads launching at once:
 * each thread launches the same kernel rounds * launches_per_block times
 * through the shim and then through the driver's own entry point (all
 * threads together, each phase started by a barrier), and reports the
 * wall time per launch per thread of each phase. Counters that all
 * threads share would show here as a shim cost growing with threads.
 *
 * With BENCH_LAUNCH_ROUNDS set to a file name, each round's paired
 * difference (ns per launch, shim minus driver) is also written there, one
 * per line, so that a script can pair the rounds of two runs (observe-only
 * against connected, tests/arbiter/bench_arbiter.sh).
 *
 * usage: bench_launch [rounds=400] [launches_per_block=256] [threads=1]
 */
#define _GNU_SOURCE 1
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "bench_launch"
#include "bench_driver.h"

/*
 * Under MOSAIC_ROLE=hp the shim connects to the daemon in the background,
 * and a launch before the connection posts nothing (cheaper than a
 * connected one): wait until an explicit request reaches the daemon (the
 * shim's exported API answers MOSAIC_EDISCONNECTED, negative, until
 * then), then give the client's monitor a few steps, so that the timed
 * launches are those of a process that has been connected a while.
 */
static void wait_connected(void)
{
    int (*begin)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "mosaic_request_begin");
    int (*end)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "mosaic_request_end");
    const char *role = getenv("MOSAIC_ROLE");
    struct timespec step = {.tv_nsec = 10000000}, settle = {.tv_nsec = 300000000};
    int i;

    if (!begin || !end || !role || strcmp(role, "hp") != 0)
        return;
    /* A begin that failed leaves its request open in the shim: end it at
     * once, while still unconnected, so that no end of a request the
     * daemon never saw begin reaches it later. */
    for (i = 0; i < 500 && begin() != 0; i++) {
        end();
        nanosleep(&step, NULL);
    }
    end();
    if (i == 500) {
        fprintf(stderr, "bench_launch: MOSAIC_ROLE=hp but no daemon answered in 5 s\n");
        exit(2);
    }
    nanosleep(&settle, NULL);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct mt_arg {
    launch_fn fn;
    CUfunction f;
    CUstream stream;
    long n;
    pthread_barrier_t *start;
    double t0, t1;
};

static void *mt_launch(void *p)
{
    struct mt_arg *a = p;

    pthread_barrier_wait(a->start);
    a->t0 = now_ns();
    for (long i = 0; i < a->n; i++)
        a->fn(a->f, 1, 1, 1, 32, 1, 1, 0, a->stream, NULL, NULL);
    a->t1 = now_ns();
    return NULL;
}

/* Time per launch with threads launching through fn at once: from the
 * first thread's start to the last one's end, per launch of one thread
 * (each thread times itself, so a descheduled main thread does not
 * matter). */
static double mt_phase(launch_fn fn, CUfunction f, CUstream stream,
                       int threads, long n)
{
    pthread_t *t = calloc((size_t)threads, sizeof(*t));
    struct mt_arg *a = calloc((size_t)threads, sizeof(*a));
    pthread_barrier_t start;
    double t0, t1;

    if (!t || !a) {
        fprintf(stderr, "bench_launch: out of memory\n");
        exit(2);
    }
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++) {
        a[i] = (struct mt_arg){.fn = fn, .f = f, .stream = stream, .n = n,
                               .start = &start};
        pthread_create(&t[i], NULL, mt_launch, &a[i]);
    }
    pthread_barrier_wait(&start);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    t0 = a[0].t0;
    t1 = a[0].t1;
    for (int i = 1; i < threads; i++) {
        t0 = a[i].t0 < t0 ? a[i].t0 : t0;
        t1 = a[i].t1 > t1 ? a[i].t1 : t1;
    }
    pthread_barrier_destroy(&start);
    free(t);
    free(a);
    return (t1 - t0) / (double)n;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 400;
    int per = argc > 2 ? atoi(argv[2]) : 256;
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    void *(*entry)(const char *);
    CUfunction (*fake_fn)(const char *, int, int);
    launch_fn via_shim, direct;
    CUresult (*sync)(CUstream);
    CUstream stream = NULL;
    CUfunction f;
    double *shim_ns, *direct_ns, *diff_ns;
    const char *target;

    if (!cuda) {
        fprintf(stderr, "bench_launch: cannot load libcuda.so.1: %s\n", dlerror());
        return 2;
    }
    getproc = (getproc_fn)dlsym(cuda, "cuGetProcAddress_v2");
    entry = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "mosaic_shim_driver_entry");
    if (!getproc || !entry) {
        fprintf(stderr, "bench_launch: run it under LD_PRELOAD=libmosaic.so\n");
        return 2;
    }
    via_shim = (launch_fn)proc("cuLaunchKernel");
    direct = (launch_fn)entry("cuLaunchKernel");
    if (!direct || direct == via_shim) {
        fprintf(stderr, "bench_launch: the shim hands out the driver's own "
                        "entry point (MOSAIC_MODE=passthrough?): nothing to "
                        "compare\n");
        return 2;
    }
    fake_fn = (CUfunction(*)(const char *, int, int))dlsym(cuda, "fake_function_create");
    if (fake_fn) {
        target = "fake driver (CPU only)";
        f = fake_fn("mosaic_bench_empty", 8, 0);
        sync = NULL;
    } else {
        CUdevice dev;
        CUcontext ctx;
        CUmodule mod;
        target = "GPU (empty kernel from PTX)";
        CHECK(((CUresult(*)(unsigned))proc("cuInit"))(0));
        CHECK(((CUresult(*)(CUdevice *, int))proc("cuDeviceGet"))(&dev, 0));
        CHECK(((CUresult(*)(CUcontext *, CUdevice))proc("cuDevicePrimaryCtxRetain"))(&ctx, dev));
        CHECK(((CUresult(*)(CUcontext))proc("cuCtxSetCurrent"))(ctx));
        CHECK(((CUresult(*)(CUmodule *, const void *))proc("cuModuleLoadData"))(&mod, empty_ptx));
        CHECK(((CUresult(*)(CUfunction *, CUmodule, const char *))proc("cuModuleGetFunction"))(
            &f, mod, "mosaic_bench_empty"));
        CHECK(((CUresult(*)(CUstream *, unsigned))proc("cuStreamCreate"))(&stream, CU_STREAM_NON_BLOCKING));
        sync = (CUresult(*)(CUstream))proc("cuStreamSynchronize");
    }
    wait_connected();
    if (threads > 1) {
        long n = (long)rounds * per;
        double s_ns, d_ns;

        mt_phase(via_shim, f, stream, threads, n / 10 + 1); /* warm-up */
        s_ns = mt_phase(via_shim, f, stream, threads, n);
        d_ns = mt_phase(direct, f, stream, threads, n);
        printf("{\"bench\":\"launch_threads\",\"target\":\"%s\",\"threads\":%d,"
               "\"launches_per_thread\":%ld,\"direct_ns\":%.1f,\"shim_ns\":%.1f,"
               "\"added_ns\":%.1f,\"timing\":\"host CLOCK_MONOTONIC wall time "
               "of all threads, per launch per thread\"}\n",
               target, threads, n, d_ns, s_ns, s_ns - d_ns);
        fprintf(stderr,
                "%-28s %d threads: direct %8.1f ns/launch  via shim %8.1f "
                "ns/launch  added %+7.1f ns (wall time per launch per thread)\n",
                target, threads, d_ns, s_ns, s_ns - d_ns);
        return 0;
    }
    shim_ns = calloc((size_t)rounds, sizeof(double));
    direct_ns = calloc((size_t)rounds, sizeof(double));
    diff_ns = calloc((size_t)rounds, sizeof(double));
    for (int w = 0; w < 2 * per; w++) { /* warm-up: caches, lazy loading */
        CHECK(via_shim(f, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
        CHECK(direct(f, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
    }
    if (sync)
        CHECK(sync(stream));
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            /* alternate which one goes first, so neither always follows a
             * drained stream */
            int use_shim = (r + k) % 2 == 0;
            launch_fn fn = use_shim ? via_shim : direct;
            double t0 = now_ns();
            for (int i = 0; i < per; i++)
                fn(f, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL);
            double per_launch = (now_ns() - t0) / per;
            if (sync)
                CHECK(sync(stream));
            (use_shim ? shim_ns : direct_ns)[r] = per_launch;
        }
        diff_ns[r] = shim_ns[r] - direct_ns[r];
    }
    if (getenv("BENCH_LAUNCH_ROUNDS") && getenv("BENCH_LAUNCH_ROUNDS")[0]) {
        FILE *fp = fopen(getenv("BENCH_LAUNCH_ROUNDS"), "w");
        if (!fp) {
            fprintf(stderr, "bench_launch: cannot write BENCH_LAUNCH_ROUNDS=%s\n",
                    getenv("BENCH_LAUNCH_ROUNDS"));
            return 2;
        }
        for (int r = 0; r < rounds; r++)
            fprintf(fp, "%.3f\n", diff_ns[r]);
        if (fclose(fp) != 0)
            return 2;
    }
    {
        double d = median(diff_ns, rounds);
        double s = median(shim_ns, rounds), n = median(direct_ns, rounds);
        printf("{\"bench\":\"launch_ab\",\"target\":\"%s\",\"rounds\":%d,"
               "\"launches_per_block\":%d,\"direct_ns\":%.1f,\"shim_ns\":%.1f,"
               "\"added_ns\":%.1f,\"ratio\":%.4f,\"median_paired_diff_ns\":%.1f,"
               "\"timing\":\"host CLOCK_MONOTONIC around launch calls\"}\n",
               target, rounds, per, n, s, s - n, s / n, d);
        fprintf(stderr,
                "%-28s direct %8.1f ns/launch  via shim %8.1f ns/launch  "
                "added %+7.1f ns (x%.3f), median paired diff %+7.1f ns\n",
                target, n, s, s - n, s / n, d);
    }
    free(shim_ns);
    free(direct_ns);
    free(diff_ns);
    return 0;
}
