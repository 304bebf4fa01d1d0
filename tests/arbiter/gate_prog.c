/*
 * gate_prog: the program that tests/arbiter/test_gate.c runs under the
 * shim (LD_PRELOAD=libmosaic.so, MOSAIC_ROLE=be or hp) on the simulated GPU,
 * to watch the arbiter's gate from the application's side. It launches N
 * kernels of D us each into S streams (round robin) without synchronising
 * in between, records an event after each, then synchronises and prints one
 * JSON object per line:
 *
 *   {"k": i, "stream": j, "launch_ns": T, "end_lo_ns": L, "end_hi_ns": U}
 *
 * launch_ns is CLOCK_MONOTONIC when the launch call returned; the kernel's
 * end lies in [L, U] on the same clock (an event's time is the simulated
 * GPU's, wall-clock ns; it is placed against a reference event recorded on
 * an idle stream between two host clock reads). With --hp-request the
 * program calls the shim's exported mosaic_request_begin() before the first
 * launch and mosaic_request_end() right after the last one, before any
 * synchronisation: the daemon has to find the request's real end from the
 * device's completion words. With --late-end MS it instead ends the request
 * MS milliseconds after the synchronisation returned (a service that
 * post-processes on the CPU before it ends the request): the device's
 * words say the GPU work ended long before. With --one-graph the N kernels are
 * captured on the first stream as one CUDA graph and launched once (one
 * output line, k 0, for the graph's end). With --watch-hp it also watches its own HP
 * completion words (the shim's segment, found in /proc/self/maps) and
 * prints {"hp_done_in_order": 0|1, "hp_done_final": [..]} at the end.
 *
 * With --settle MS it synchronises its first stream and waits MS
 * milliseconds before its first launch, so that the shim's connection
 * (made in the background from the first call its HP side sees) is up
 * when a learned request begins.
 *
 * With --graph G each of the N launches is a launch of one CUDA graph of G
 * such kernels (captured from a stream once, before the first launch), and
 * its end is the graph's. With --library the kernel is a library's CUkernel
 * (cuLibraryLoadData + cuLibraryGetKernel), launched cast to CUfunction as
 * the CUDA runtime launches its kernels: under lazy module loading its
 * first launch loads it (tests/fakecuda).
 *
 *   gate_prog --kernels N --us D [--streams S] [--graph G | --one-graph]
 *             [--hp-request] [--late-end MS] [--watch-hp] [--library] [--settle MS]
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo_util.h"
#include "proto.h"

#define MAX_K 64
#define MAX_S 4

static uint64_t host_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The shim's segment in this process: the memfd the daemon created. */
static struct mosaic__shm_hdr *find_segment(void)
{
    FILE *fp = fopen("/proc/self/maps", "r");
    char line[512];
    void *base = NULL;

    if (!fp)
        return NULL;
    while (!base && fgets(line, sizeof(line), fp)) {
        unsigned long lo;
        if (strstr(line, "memfd:mosaic-sched") && sscanf(line, "%lx-", &lo) == 1)
            base = (void *)lo;
    }
    fclose(fp);
    return base;
}

static _Atomic int watching = 1;
static int in_order = 1;
static uint64_t final_done[MAX_S];
static int nstreams_watched;

/* Each slot's completion word must only grow (one stream's launches finish
 * in order); the values seen are checked as they change. */
static void *watch_hp(void *arg)
{
    uint64_t last[MOSAIC__GATE_SLOTS] = {0};
    struct mosaic__shm_hdr *h = NULL;

    (void)arg;
    while (atomic_load(&watching)) {
        if (!h) {
            h = find_segment();
            continue;
        }
        struct mosaic__gate_slot *g = (struct mosaic__gate_slot *)((char *)h + h->gate_off);
        for (unsigned s = 0; s < MOSAIC__GATE_SLOTS; s++) {
            uint64_t v = atomic_load(&g[s].hp_done);
            if (v < last[s])
                in_order = 0;
            last[s] = v;
        }
    }
    for (int s = 0; h && s < nstreams_watched; s++)
        final_done[s] = last[s];
    return NULL;
}

int main(int argc, char **argv)
{
    int n = 8, us = 20000, ns = 1, hp_request = 0, watch = 0, late_ms = -1, graph = 0;
    int one_graph = 0, library = 0, settle_ms = 0;
    static struct demo_seq seq;
    char key[256];

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--us") && i + 1 < argc)
            us = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--streams") && i + 1 < argc)
            ns = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--graph") && i + 1 < argc)
            graph = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hp-request"))
            hp_request = 1;
        else if (!strcmp(argv[i], "--watch-hp"))
            watch = 1;
        else if (!strcmp(argv[i], "--one-graph"))
            one_graph = 1;
        else if (!strcmp(argv[i], "--library"))
            library = 1;
        else if (!strcmp(argv[i], "--late-end") && i + 1 < argc)
            hp_request = 1, late_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--settle") && i + 1 < argc)
            settle_ms = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: gate_prog --kernels N --us D [--streams S] "
                            "[--graph G | --one-graph] [--hp-request] [--late-end MS] "
                            "[--watch-hp] [--library] [--settle MS]\n");
            return 2;
        }
    }
    if (n < 1 || n > MAX_K || ns < 1 || ns > MAX_S || us < 1 || graph < 0 || graph > 256)
        return 2;
    if ((graph && one_graph) || (one_graph && n > DEMO_MAX_KERNELS))
        return 2;
    if (snprintf(key, sizeof(key), "k_gate__simus%d|grid=1,1,1|block=32,1,1|dsmem=0", us) >=
        (int)sizeof(key))
        return 1;
    /* A graph holds the kernel n times; the eager loop launches the one. */
    for (int k = 0; k < (one_graph ? n : 1); k++)
        if (demo_add_key(&seq, key) != 0)
            return 1;
    if (demo_load(&seq) != 0)
        return 1;
    if (library) {
        /* The fake's code image is the kernel's name. */
        CUlibrary lib;
        CUkernel kern;
        if (cuLibraryLoadData(&lib, seq.k[0].name, NULL, NULL, 0, NULL, NULL, 0) != CUDA_SUCCESS ||
            cuLibraryGetKernel(&kern, lib, seq.k[0].name) != CUDA_SUCCESS) {
            fprintf(stderr, "gate_prog: cuLibraryLoadData/cuLibraryGetKernel failed\n");
            return 1;
        }
        seq.k[0].fn = (CUfunction)(void *)kern;
    }

    CUstream st[MAX_S], idle;
    CUgraphExec exec = NULL;
    CUevent ref, end[MAX_K];
    uint64_t launch_ns[MAX_K], t_before = 0, t_after = 0;
    pthread_t watcher;
    CUresult r = cuStreamCreate(&idle, CU_STREAM_NON_BLOCKING);

    for (int s = 0; r == CUDA_SUCCESS && s < ns; s++)
        r = cuStreamCreate(&st[s], CU_STREAM_NON_BLOCKING);
    for (int k = 0; r == CUDA_SUCCESS && k < n; k++)
        r = cuEventCreate(&end[k], CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS)
        r = cuEventCreate(&ref, CU_EVENT_DEFAULT);
    /* The reference: recorded on an idle stream, watched with queries so
     * that its time is pinned between two close host clock reads (the
     * first round wakes the simulated GPU's threads; the second counts). */
    for (int round = 0; round < 2 && r == CUDA_SUCCESS; round++) {
        t_before = host_ns();
        r = cuEventRecord(ref, idle);
        while (r == CUDA_SUCCESS && (r = cuEventQuery(ref)) == CUDA_ERROR_NOT_READY)
            ;
        t_after = host_ns();
    }
    /* The graph: G kernels captured from the idle stream (a launch into a
     * capturing stream is recorded, not admitted). */
    if (graph && r == CUDA_SUCCESS) {
        const struct demo_kernel *d = &seq.k[0];
        CUgraph g;
        CUresult lr = CUDA_SUCCESS;
        r = cuStreamBeginCapture(idle, CU_STREAM_CAPTURE_MODE_GLOBAL);
        for (int k = 0; r == CUDA_SUCCESS && lr == CUDA_SUCCESS && k < graph; k++)
            lr = cuLaunchKernel(d->fn, d->grid[0], d->grid[1], d->grid[2], d->block[0],
                                d->block[1], d->block[2], d->dsmem, idle, NULL, NULL);
        if (r == CUDA_SUCCESS)
            r = cuStreamEndCapture(idle, &g);
        if (r == CUDA_SUCCESS && lr != CUDA_SUCCESS)
            r = lr;
        if (r == CUDA_SUCCESS) {
            r = cuGraphInstantiate(&exec, g, 0);
            cuGraphDestroy(g);
        }
    }
    /* --one-graph: the N kernels captured on the first stream, launched once. */
    if (r == CUDA_SUCCESS && one_graph)
        r = demo_graph(&seq, st[0], &exec);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "gate_prog: setup failed (CUresult %d)\n", (int)r);
        return 1;
    }
    if (one_graph)
        n = ns = 1; /* one launch, of the whole graph, on the first stream */
    nstreams_watched = ns;
    if (watch)
        pthread_create(&watcher, NULL, watch_hp, NULL);
    int (*req_begin)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "mosaic_request_begin");
    int (*req_end)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "mosaic_request_end");
    /* The shim connects in the background from its first call on and an
     * HP call never waits: start the connection, then begin the request
     * once a begin reaches the daemon (it fails while there is no
     * connection; on a loaded machine that can take a while). */
    if (hp_request && req_end && req_begin) {
        struct timespec settle = {.tv_nsec = 50000000};
        req_end();
        for (int i = 0; i < 200 && req_begin() != 0; i++) {
            req_end();
            nanosleep(&settle, NULL);
        }
    }
    if (settle_ms > 0) {
        /* A synchronisation with nothing to end is a driver call the shim's
         * HP side sees: its connection starts there. */
        struct timespec t = {.tv_sec = settle_ms / 1000, .tv_nsec = (settle_ms % 1000) * 1000000L};
        cuStreamSynchronize(st[0]);
        nanosleep(&t, NULL);
    }
    for (int k = 0; k < n; k++) {
        const struct demo_kernel *d = &seq.k[0];
        r = exec ? cuGraphLaunch(exec, st[k % ns])
                 : cuLaunchKernel(d->fn, d->grid[0], d->grid[1], d->grid[2], d->block[0],
                                  d->block[1], d->block[2], d->dsmem, st[k % ns], NULL, NULL);
        launch_ns[k] = host_ns();
        if (r == CUDA_SUCCESS)
            r = cuEventRecord(end[k], st[k % ns]);
        if (r != CUDA_SUCCESS) {
            fprintf(stderr, "gate_prog: launch %d failed (CUresult %d)\n", k, (int)r);
            return 1;
        }
    }
    if (hp_request && req_end && late_ms < 0)
        req_end();
    for (int s = 0; s < ns; s++)
        if (cuStreamSynchronize(st[s]) != CUDA_SUCCESS)
            return 1;
    if (hp_request && req_end && late_ms >= 0) {
        struct timespec late = {.tv_sec = late_ms / 1000, .tv_nsec = (late_ms % 1000) * 1000000L};
        nanosleep(&late, NULL);
        req_end();
    }
    for (int k = 0; k < n; k++) {
        float ms = 0;
        if (cuEventElapsedTime(&ms, ref, end[k]) != CUDA_SUCCESS)
            return 1;
        printf("{\"k\": %d, \"stream\": %d, \"launch_ns\": %llu, \"end_lo_ns\": %llu, "
               "\"end_hi_ns\": %llu}\n",
               k, k % ns, (unsigned long long)launch_ns[k],
               (unsigned long long)(t_before + (uint64_t)((double)ms * 1e6)),
               (unsigned long long)(t_after + (uint64_t)((double)ms * 1e6) + 1000));
    }
    if (watch) {
        /* The device's last writes land when the streams are done. */
        struct timespec pause = {.tv_nsec = 20000000};
        nanosleep(&pause, NULL);
        atomic_store(&watching, 0);
        pthread_join(watcher, NULL);
        printf("{\"hp_done_in_order\": %d, \"hp_done_final\": [", in_order);
        for (int s = 0; s < ns; s++)
            printf("%s%llu", s ? ", " : "", (unsigned long long)final_done[s]);
        printf("]}\n");
    }
    fflush(stdout);
    return 0;
}
