/*
 * What an HP service's request costs on the host, one request at a time:
 * a request is one CUDA graph of K kernels (graph, the default, as the
 * ResNet-50 service of scripts/gpu/issue15_services.sh replays one) or K
 * eager launches (eager), then cuCtxSynchronize, which is how the shim
 * learns a request of an unmodified program (the first launch after a
 * synchronisation begins it, the synchronisation's return ends it). Each
 * request is timed on the host from before its first launch call to the
 * synchronisation's return: the latency a service measures.
 *
 * Run the same binary with no shim, under LD_PRELOAD=libmosaic.so
 * observing, and as an HP client of a daemon (MOSAIC_ROLE=hp), side by
 * side (tests/arbiter/bench_hp_request.sh); what differs is the shim. With
 * the fake driver (tests/fakecuda) a kernel takes no time, so a request's
 * latency is the calls' CPU cost alone; on a GPU (real libcuda) the
 * kernels are empty ones loaded from PTX and the latency includes what
 * the shim adds on the GPU (a completion write is a stream operation).
 *
 * The entry points come from cuGetProcAddress_v2 on dlopen("libcuda.so.1"),
 * as the CUDA runtime gets them, so that the shim sees them when preloaded.
 * Warm-up: BENCH_REQUEST_WARM_MS (default 500) of requests, long enough
 * for an HP client to connect in the background and its daemon to settle.
 * BENCH_REQUEST_LAT=FILE writes each timed request's latency in ns, one a
 * line. Prints one JSON line (median, p99, mean, in ns).
 *
 * With the fake driver a request's work takes no GPU time, and requests
 * would come hundreds of times faster than a real service's (a 280-kernel
 * ResNet-50 request takes 2.44 ms on the H200): gpu_us stands in for the
 * GPU's time, a spin from the request's start before the synchronisation
 * (the host waits that long in cuCtxSynchronize on a GPU). What the shim
 * does after the launch returned is then hidden behind it, as on a GPU,
 * and what it does after the synchronisation returned is not.
 *
 * usage: bench_request [requests=2000] [kernels=280] [graph|eager] [gpu_us=0]
 */
#define _GNU_SOURCE 1
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "bench_request"
#include "bench_driver.h"

/* The q-quantile of sorted v, nearest rank. */
static double quantile(const double *v, int n, double q)
{
    int i = (int)(q * n + 0.999999) - 1;

    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

struct bench {
    int graph, kernels;
    double gpu_ns; /* the GPU's time a request stands for (a spin), 0: none */
    CUfunction f;
    CUstream stream;
    CUgraphExec exec;
    launch_fn launch;
    CUresult (*graph_launch)(CUgraphExec, CUstream);
    CUresult (*ctx_sync)(void);
};

/* The K launches of a request, each its own configuration as a network's
 * layers are (grid x = 1 + i % 64), so that each has its own kernel id. */
static void launches(const struct bench *b)
{
    for (int i = 0; i < b->kernels; i++)
        CHECK(b->launch(b->f, 1u + (unsigned)(i % 64), 1, 1, 32, 1, 1, 0, b->stream, NULL,
                        NULL));
}

static void request(const struct bench *b)
{
    double t0 = b->gpu_ns > 0 ? now_ns() : 0;

    if (b->graph)
        CHECK(b->graph_launch(b->exec, b->stream));
    else
        launches(b);
    while (b->gpu_ns > 0 && now_ns() - t0 < b->gpu_ns)
        ;
    CHECK(b->ctx_sync());
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    struct bench b = {.kernels = argc > 2 ? atoi(argv[2]) : 280,
                      .graph = !(argc > 3 && !strcmp(argv[3], "eager")),
                      .gpu_ns = argc > 4 ? atof(argv[4]) * 1e3 : 0};
    const char *warm_env = getenv("BENCH_REQUEST_WARM_MS"), *lat = getenv("BENCH_REQUEST_LAT");
    double warm_ms = warm_env && warm_env[0] ? atof(warm_env) : 500.0;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    CUfunction (*fake_fn)(const char *, int, int);
    const char *target;
    double *v, t_end, sum = 0;
    int warm = 0;

    if (n < 1 || b.kernels < 1 || b.gpu_ns < 0 ||
        (argc > 3 && strcmp(argv[3], "eager") && strcmp(argv[3], "graph"))) {
        fprintf(stderr, "usage: bench_request [requests>=1] [kernels>=1] [graph|eager] "
                        "[gpu_us>=0]\n");
        return 2;
    }
    if (!cuda) {
        fprintf(stderr, "bench_request: cannot load libcuda.so.1: %s\n", dlerror());
        return 2;
    }
    getproc = (getproc_fn)dlsym(cuda, "cuGetProcAddress_v2");
    if (!getproc) {
        fprintf(stderr, "bench_request: libcuda.so.1 has no cuGetProcAddress_v2\n");
        return 2;
    }
    CHECK(((CUresult(*)(unsigned))proc("cuInit"))(0));
    fake_fn = (CUfunction(*)(const char *, int, int))dlsym(cuda, "fake_function_create");
    if (fake_fn) {
        target = "fake driver (CPU only)";
        b.f = fake_fn("mosaic_bench_empty", 8, 0);
    } else {
        CUdevice dev;
        CUcontext ctx;
        CUmodule mod;
        target = "GPU (empty kernels from PTX)";
        CHECK(((CUresult(*)(CUdevice *, int))proc("cuDeviceGet"))(&dev, 0));
        CHECK(((CUresult(*)(CUcontext *, CUdevice))proc("cuDevicePrimaryCtxRetain"))(&ctx, dev));
        CHECK(((CUresult(*)(CUcontext))proc("cuCtxSetCurrent"))(ctx));
        CHECK(((CUresult(*)(CUmodule *, const void *))proc("cuModuleLoadData"))(&mod, empty_ptx));
        CHECK(((CUresult(*)(CUfunction *, CUmodule, const char *))proc("cuModuleGetFunction"))(
            &b.f, mod, "mosaic_bench_empty"));
    }
    CHECK(((CUresult(*)(CUstream *, unsigned))proc("cuStreamCreate"))(&b.stream,
                                                                       CU_STREAM_NON_BLOCKING));
    b.launch = (launch_fn)proc("cuLaunchKernel");
    b.ctx_sync = (CUresult(*)(void))proc("cuCtxSynchronize");
    if (b.graph) {
        CUgraph g;
        b.graph_launch = (CUresult(*)(CUgraphExec, CUstream))proc("cuGraphLaunch");
        CHECK(((CUresult(*)(CUstream, CUstreamCaptureMode))proc("cuStreamBeginCapture"))(
            b.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        launches(&b);
        CHECK(((CUresult(*)(CUstream, CUgraph *))proc("cuStreamEndCapture"))(b.stream, &g));
        CHECK(((CUresult(*)(CUgraphExec *, CUgraph, unsigned long long))proc(
            "cuGraphInstantiateWithFlags"))(&b.exec, g, 0));
    }
    CHECK(b.ctx_sync());
    t_end = now_ns() + warm_ms * 1e6;
    while (now_ns() < t_end || warm < 10) {
        request(&b);
        warm++;
    }
    v = calloc((size_t)n, sizeof(*v));
    if (!v)
        return 2;
    for (int i = 0; i < n; i++) {
        double t0 = now_ns();
        request(&b);
        v[i] = now_ns() - t0;
    }
    if (lat && lat[0]) {
        FILE *fp = fopen(lat, "w");
        if (!fp) {
            fprintf(stderr, "bench_request: cannot write BENCH_REQUEST_LAT=%s\n", lat);
            return 2;
        }
        for (int i = 0; i < n; i++)
            fprintf(fp, "%.0f\n", v[i]);
        if (fclose(fp) != 0)
            return 2;
    }
    for (int i = 0; i < n; i++)
        sum += v[i];
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    printf("{\"bench\":\"hp_request\",\"target\":\"%s\",\"launch\":\"%s\",\"kernels\":%d,"
           "\"gpu_us\":%.1f,\"requests\":%d,\"warmup_requests\":%d,\"p50_ns\":%.0f,\"p99_ns\":%.0f,"
           "\"mean_ns\":%.0f,\"timing\":\"host CLOCK_MONOTONIC from before the first launch "
           "call to cuCtxSynchronize returning\"}\n",
           target, b.graph ? "graph" : "eager", b.kernels, b.gpu_ns / 1e3, n, warm, quantile(v, n, 0.5),
           quantile(v, n, 0.99), sum / n);
    free(v);
    return 0;
}
