/*
 * hp_service: a latency-critical "inference service" for the simulated GPU
 * (docs/simgpu.md). Each request is a fixed sequence of zoo kernels on one
 * stream followed by cuStreamSynchronize; the request's latency is the host
 * time from its first launch to the sync's return. Prints one JSON object:
 * request count and latency p50/p99/mean/max in ms of wall time (which on
 * the simulated GPU is MOSAIC_SIMGPU_SCALE times H200 time), plus the GPU
 * span of each request from events.
 *
 *   hp_service [--requests N] [--warmup N] [--gap-ms MS] [--kernel KEY]...
 *              [--latencies FILE] [--gpu-latencies FILE] [--times FILE]
 *              [--prequeue] [--period-ms MS] [--touch-after N FILE]
 *              [--preroll N]
 *
 * --latencies writes every measured request's host latency (ms, one a line,
 * in request order) for the arbiter evaluation's share of requests over p.
 * --gpu-latencies writes each request's GPU span (ms, from an event before
 * its first kernel to one after its last, in the simulated GPU's time):
 * what interference changes, without the host's wake-up and scheduling
 * delays that a loaded test machine adds to the host latency.
 * --times writes "start_ms latency_ms" per measured request, the start on
 * CLOCK_MONOTONIC, so that a fault test can tell which requests ran while
 * the daemon was away (tests/arbiter/arbiter_faults.py).
 * --preroll makes N requests after the warm-up at the measured requests'
 * schedule (--period-ms), not recorded, as scripts/gpu/workloads/svc_hp.py
 * --preroll does: the measured requests are the steady state, past the
 * daemon's learning of the request; "first_start_ms" in the JSON is the
 * first scheduled request's start (CLOCK_MONOTONIC ms), the pre-roll's
 * when there is one.
 * --prequeue holds the stream (a wait on a host word) until the request's
 * event, kernels and closing event are all enqueued, then releases it: the
 * GPU span then holds no gap where the GPU waited for a descheduled host
 * thread between two launches (on a loaded 2-core machine, milliseconds:
 * as much as p = 1.1's slack), only the GPU's own time.
 * --period-ms replaces --gap-ms's idle time after each request with an
 * open-loop period, as scripts/gpu/workloads/svc_hp.py has: measured
 * request r+1 starts at r's slot plus MS, or at once when r ended later
 * (the schedule then moves on from r's end), so that a load is the share
 * of time a request is in flight (scripts/gpu/issue15_services.sh, LOAD).
 * --touch-after creates FILE once the N-th measured request has ended (the
 * pre-roll's are not counted): the
 * service's own progress, by which a fault test kills the daemon while
 * requests are being served rather than after a guessed time.
 */
#include "demo_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A small vision-model request: convolution, normalisation, a GEMM and a
 * softmax, 0.65 ms on the H200 (zoo.profile.json). */
static const char *const default_keys[] = {
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808",
    "_Z11k_batchnormPK6float4PS_PKfii|grid=131072,1,1|block=64,1,1|dsmem=0",
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT|grid=2,64,1|block=384,1,1|dsmem=213188",
    "_Z14k_softmax_warpPK6float4PS_ii|grid=8192,1,1|block=256,1,1|dsmem=0",
};

static int usage(void)
{
    fprintf(stderr, "usage: hp_service [--requests N] [--warmup N] "
            "[--gap-ms MS] [--kernel KEY]... [--graph] [--latencies FILE] "
            "[--gpu-latencies FILE] [--times FILE] [--prequeue]\n"
            "       [--period-ms MS] [--touch-after N FILE] [--preroll N]\n"
            "  KEY: a profile key, NAME|grid=X,Y,Z|block=X,Y,Z|dsmem=N\n"
            "  --graph: capture the sequence once, launch it as a CUDA graph\n");
    return 2;
}

static void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = { (time_t)(ms / 1e3),
                           (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) *
                                  1e6) };
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    int requests = 100, warmup = 3, preroll = 0;
    double gap_ms = 2, period_ms = 0;
    int touch_after = -1;
    const char *touch_path = NULL;
    static struct demo_seq seq;
    bool graph = false, prequeue = false;
    const char *lat_path = NULL, *times_path = NULL, *gpu_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--graph") == 0) {
            graph = true;
            continue;
        }
        if (strcmp(argv[i], "--prequeue") == 0) {
            prequeue = true;
            continue;
        }
        if (strcmp(argv[i], "--touch-after") == 0) {
            if (i + 2 >= argc)
                return usage();
            touch_after = atoi(argv[++i]);
            touch_path = argv[++i];
            continue;
        }
        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--requests") == 0)
            requests = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0)
            warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--preroll") == 0)
            preroll = atoi(argv[++i]);
        else if (strcmp(argv[i], "--gap-ms") == 0)
            gap_ms = atof(argv[++i]);
        else if (strcmp(argv[i], "--period-ms") == 0)
            period_ms = atof(argv[++i]);
        else if (strcmp(argv[i], "--latencies") == 0)
            lat_path = argv[++i];
        else if (strcmp(argv[i], "--times") == 0)
            times_path = argv[++i];
        else if (strcmp(argv[i], "--gpu-latencies") == 0)
            gpu_path = argv[++i];
        else if (strcmp(argv[i], "--kernel") == 0) {
            if (demo_add_key(&seq, argv[++i]) != 0)
                return 2;
        } else
            return usage();
    }
    if (requests < 1 || warmup < 0 || preroll < 0)
        return usage();
    if (seq.n == 0) {
        for (size_t i = 0; i < sizeof default_keys / sizeof default_keys[0];
             i++)
            if (demo_add_key(&seq, default_keys[i]) != 0)
                return 1;
    }
    if (demo_load(&seq) != 0)
        return 1;
    CUstream s;
    CUevent e0, e1;
    if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        cuEventCreate(&e0, 0) != CUDA_SUCCESS ||
        cuEventCreate(&e1, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "hp_service: cannot create a stream or events\n");
        return 1;
    }
    /* --prequeue: request r's work waits until *hold reaches its number. */
    uint32_t *hold = NULL;
    CUdeviceptr dhold = 0;
    if (prequeue &&
        (cuMemHostAlloc((void **)&hold, 64, CU_MEMHOSTALLOC_DEVICEMAP) != CUDA_SUCCESS ||
         cuMemHostGetDevicePointer(&dhold, hold, 0) != CUDA_SUCCESS)) {
        fprintf(stderr, "hp_service: --prequeue: cannot map a host word for the device\n");
        return 1;
    }
    CUgraphExec exec = NULL;
    if (graph && demo_graph(&seq, s, &exec) != CUDA_SUCCESS) {
        fprintf(stderr, "hp_service: cannot capture the sequence as a "
                "graph\n");
        return 1;
    }
    double *lat = calloc((size_t)requests, sizeof *lat);
    double *gpu = calloc((size_t)requests, sizeof *gpu);
    double *start = calloc((size_t)requests, sizeof *start);
    if (lat == NULL || gpu == NULL || start == NULL)
        return 1;
    double slot = 0, first_start = 0;
    /* r counts the scheduled requests (the warm-up's negative), m the
     * measured ones (the pre-roll's negative too, and not recorded). */
    for (int r = -warmup; r < preroll + requests; r++) {
        int m = r - preroll;
        if (period_ms > 0 && r > 0) {
            /* Open loop from the first scheduled request on (the pre-roll's
             * or the first measured one): wait for the slot, or go at once
             * when the last request ended after it. */
            double now = demo_now_ms();
            slot += period_ms;
            if (slot > now)
                sleep_ms(slot - now);
            else
                slot = now;
        }
        double t0 = demo_now_ms();
        if (r == 0)
            slot = first_start = t0;
        uint32_t n = (uint32_t)(r + warmup + 1);
        CUresult c = prequeue ? cuStreamWaitValue32(s, dhold, n, CU_STREAM_WAIT_VALUE_GEQ)
                              : CUDA_SUCCESS;
        if (c == CUDA_SUCCESS)
            c = cuEventRecord(e0, s);
        if (c == CUDA_SUCCESS)
            c = exec != NULL ? cuGraphLaunch(exec, s)
                             : demo_launch(&seq, s);
        if (c == CUDA_SUCCESS)
            c = cuEventRecord(e1, s);
        if (prequeue)
            __atomic_store_n(hold, n, __ATOMIC_RELEASE);
        if (c == CUDA_SUCCESS)
            c = cuStreamSynchronize(s);
        double t1 = demo_now_ms();
        float ms = 0;
        if (c == CUDA_SUCCESS)
            c = cuEventElapsedTime(&ms, e0, e1);
        if (c != CUDA_SUCCESS) {
            fprintf(stderr, "hp_service: request %d failed (CUresult %d)\n",
                    r, (int)c);
            return 1;
        }
        if (m >= 0) {
            start[m] = t0;
            lat[m] = t1 - t0;
            gpu[m] = ms;
        }
        if (touch_path != NULL && m + 1 == touch_after) {
            FILE *f = fopen(touch_path, "w");
            if (f == NULL || fclose(f) != 0) {
                fprintf(stderr, "hp_service: --touch-after %s: cannot be created\n", touch_path);
                return 1;
            }
        }
        if (period_ms <= 0 || r < 0)
            sleep_ms(gap_ms);
    }
    double sum = 0;
    for (int r = 0; r < requests; r++)
        sum += lat[r];
    if (lat_path != NULL) {
        FILE *f = fopen(lat_path, "w");
        if (f == NULL) {
            fprintf(stderr, "hp_service: --latencies %s: cannot be written\n",
                    lat_path);
            return 1;
        }
        for (int r = 0; r < requests; r++)
            fprintf(f, "%.6f\n", lat[r]);
        if (fclose(f) != 0) {
            fprintf(stderr, "hp_service: --latencies %s: write failed\n",
                    lat_path);
            return 1;
        }
    }
    if (gpu_path != NULL) {
        FILE *f = fopen(gpu_path, "w");
        if (f == NULL) {
            fprintf(stderr, "hp_service: --gpu-latencies %s: cannot be written\n", gpu_path);
            return 1;
        }
        for (int r = 0; r < requests; r++)
            fprintf(f, "%.6f\n", gpu[r]);
        if (fclose(f) != 0) {
            fprintf(stderr, "hp_service: --gpu-latencies %s: write failed\n", gpu_path);
            return 1;
        }
    }
    if (times_path != NULL) {
        FILE *f = fopen(times_path, "w");
        if (f == NULL) {
            fprintf(stderr, "hp_service: --times %s: cannot be written\n",
                    times_path);
            return 1;
        }
        for (int r = 0; r < requests; r++)
            fprintf(f, "%.6f %.6f\n", start[r], lat[r]);
        if (fclose(f) != 0) {
            fprintf(stderr, "hp_service: --times %s: write failed\n",
                    times_path);
            return 1;
        }
    }
    demo_sort(lat, requests);
    demo_sort(gpu, requests);
    printf("{\"program\": \"hp_service\", \"requests\": %d, "
           "\"preroll\": %d, \"first_start_ms\": %.6f, "
           "\"kernels_per_request\": %d, \"launch\": \"%s\", "
           "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"mean_ms\": %.3f, "
           "\"max_ms\": %.3f, \"gpu_p50_ms\": %.3f, \"gpu_p99_ms\": %.3f, "
           "\"method\": \"host CLOCK_MONOTONIC from first launch to "
           "cuStreamSynchronize return; gpu_* from events\"}\n",
           requests, preroll, first_start, seq.n, graph ? "graph" : "kernels",
           demo_quantile(lat, requests, 0.5),
           demo_quantile(lat, requests, 0.99), sum / requests,
           lat[requests - 1], demo_quantile(gpu, requests, 0.5),
           demo_quantile(gpu, requests, 0.99));
    free(lat);
    free(gpu);
    free(start);
    if (hold != NULL)
        cuMemFreeHost(hold);
    cuEventDestroy(e0);
    cuEventDestroy(e1);
    if (exec != NULL)
        cuGraphExecDestroy(exec);
    cuStreamDestroy(s);
    return 0;
}
