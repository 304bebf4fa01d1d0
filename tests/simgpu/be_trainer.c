/*
 * be_trainer: a best-effort "training loop" for the simulated GPU
 * (docs/simgpu.md). Each step is a fixed sequence of zoo kernels on one
 * stream followed by cuStreamSynchronize. Runs for --seconds (or --steps, or
 * until SIGTERM/SIGINT) and prints one JSON object: steps, seconds and
 * throughput in steps and kernels per second of wall time.
 *
 *   be_trainer [--seconds S] [--steps N] [--kernel KEY]... [--step-times FILE]
 *
 * --step-times writes each step's end (CLOCK_MONOTONIC ms, one a line) as
 * it happens, so that a fault test can count the steps made while the
 * daemon was away and after it came back (tests/arbiter/arbiter_faults.py).
 */
#include "demo_util.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A memory-bound step: copy, triad and a naive transpose, 2.2 ms on the
 * H200 (zoo.profile.json). */
static const char *const default_keys[] = {
    "_Z6k_copyPK6float4PS_m|grid=131072,1,1|block=128,1,1|dsmem=0",
    "_Z7k_triadP6float4PKS_S2_fm|grid=264,1,1|block=512,1,1|dsmem=0",
    "_Z17k_transpose_naivePKfPfii|grid=256,256,1|block=32,8,1|dsmem=0",
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: be_trainer [--seconds S] [--steps N] "
            "[--kernel KEY]... [--graph] [--step-times FILE]\n"
            "  KEY: a profile key, NAME|grid=X,Y,Z|block=X,Y,Z|dsmem=N\n"
            "  --graph: capture the sequence once, launch it as a CUDA graph\n");
    return 2;
}

int main(int argc, char **argv)
{
    double seconds = 5;
    long steps_max = -1;
    static struct demo_seq seq;
    bool graph = false;
    const char *times_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--graph") == 0) {
            graph = true;
            continue;
        }
        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--seconds") == 0)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0)
            steps_max = atol(argv[++i]);
        else if (strcmp(argv[i], "--step-times") == 0)
            times_path = argv[++i];
        else if (strcmp(argv[i], "--kernel") == 0) {
            if (demo_add_key(&seq, argv[++i]) != 0)
                return 2;
        } else
            return usage();
    }
    if (seq.n == 0) {
        for (size_t i = 0; i < sizeof default_keys / sizeof default_keys[0];
             i++)
            if (demo_add_key(&seq, default_keys[i]) != 0)
                return 1;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (demo_load(&seq) != 0)
        return 1;
    CUstream s;
    if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        fprintf(stderr, "be_trainer: cannot create a stream\n");
        return 1;
    }
    CUgraphExec exec = NULL;
    if (graph && demo_graph(&seq, s, &exec) != CUDA_SUCCESS) {
        fprintf(stderr, "be_trainer: cannot capture the sequence as a "
                "graph\n");
        return 1;
    }
    FILE *times = NULL;
    if (times_path != NULL && (times = fopen(times_path, "w")) == NULL) {
        fprintf(stderr, "be_trainer: --step-times %s: cannot be written\n",
                times_path);
        return 1;
    }
    double t0 = demo_now_ms();
    long steps = 0;
    while (!stop && (steps_max < 0 || steps < steps_max) &&
           (steps_max >= 0 || demo_now_ms() - t0 < seconds * 1e3)) {
        CUresult c = exec != NULL ? cuGraphLaunch(exec, s)
                                  : demo_launch(&seq, s);
        if (c == CUDA_SUCCESS)
            c = cuStreamSynchronize(s);
        if (c != CUDA_SUCCESS) {
            fprintf(stderr, "be_trainer: step %ld failed (CUresult %d)\n",
                    steps, (int)c);
            return 1;
        }
        steps++;
        /* Flushed per step: a reader after a kill still sees every step
         * made (a step takes milliseconds, the write microseconds). */
        if (times != NULL) {
            fprintf(times, "%.6f\n", demo_now_ms());
            fflush(times);
        }
    }
    if (times != NULL && fclose(times) != 0) {
        fprintf(stderr, "be_trainer: --step-times %s: write failed\n",
                times_path);
        return 1;
    }
    double secs = (demo_now_ms() - t0) / 1e3;
    printf("{\"program\": \"be_trainer\", \"steps\": %ld, "
           "\"kernels_per_step\": %d, \"launch\": \"%s\", \"seconds\": %.3f, "
           "\"steps_per_s\": %.3f, \"kernels_per_s\": %.3f, \"method\": "
           "\"host CLOCK_MONOTONIC over the loop, a stream sync per step\"}\n",
           steps, seq.n, graph ? "graph" : "kernels", secs,
           secs > 0 ? (double)steps / secs : 0,
           secs > 0 ? (double)steps * seq.n / secs : 0);
    if (exec != NULL)
        cuGraphExecDestroy(exec);
    cuStreamDestroy(s);
    return 0;
}
