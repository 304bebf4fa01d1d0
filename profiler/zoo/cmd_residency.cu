/*
 * mosaic-zoo residency: each selected variant beside a blocker kernel that
 * holds all but N threads of every SM, against its time alone: its speed at
 * the residency N threads allow. The two blocker kernels are here. Results
 * on the H200 (driver 580.159.04, CUDA 13.0):
 * profiler/data/h200/residency.jsonl.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <unistd.h>

#include "zoo.h"
#include "zoo_cmds.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"
#include "zoo_probes.h"
#include "zoo_timing.h"

/* Blockers for `residency`: hold part of every SM for spin_ns. The sleep
 * one waits in __nanosleep (it issues almost nothing); the issue one runs
 * dependent FMAs between clock reads. */
__global__ void zoo_block_sleep(unsigned long long spin_ns, float *sink)
{
    unsigned long long t0 = gtimer();

    (void)sink;
    while (gtimer() - t0 < spin_ns)
        __nanosleep(2000);
}

__global__ void zoo_block_issue(unsigned long long spin_ns, float *sink)
{
    unsigned long long t0 = gtimer();
    float a = (float)threadIdx.x, b = 1.0001f;
    int i;

    while (gtimer() - t0 < spin_ns)
        for (i = 0; i < 64; i++)
            a = a * b + 0.5f;
    if (a == 0.123f)
        *sink = a;
}

/*
 * A blocker (two blocks per SM, each with 16 KiB of dynamic shared memory so
 * that default-carveout kernels mix with it) holds all but F threads of
 * every SM while the variant runs beside it; the variant's time against its
 * time alone (both single event-bracketed launches) gives its speed at the
 * residency F threads allow. Two blockers: one that sleeps (the variant's
 * own residency limit) and one that keeps the issue slots busy.
 */
static int residency_once(struct zoo_inst *in, cudaStream_t sb, cudaStream_t ss,
                          int free_thr, int kind, double spin_us, float *sink,
                          double *us, int *expired)
{
    int thr = (g_dev.max_threads_per_sm - free_thr) / 2;
    unsigned long long ns = (unsigned long long)(spin_us * 1e3);
    float ms = 0;
    int rc = 0;

    *expired = 0;
    if (thr > 0) {
        if (kind == 0)
            zoo_block_sleep<<<2 * g_dev.sm_count, thr, 16 * 1024, sb>>>(ns, sink);
        else
            zoo_block_issue<<<2 * g_dev.sm_count, thr, 16 * 1024, sb>>>(ns, sink);
        CK(cudaGetLastError());
        CK(cudaEventRecord(g_ev[4], sb));
        usleep(200); /* the blocker's blocks are resident before the variant */
    }
    CKZ(enqueue_timed(in, ss, g_ev[0], g_ev[1]));
    CKZ(wait_stream(ss));
    CK(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1]));
    *us = 1e3 * ms;
    if (thr > 0) {
        *expired = cudaEventQuery(g_ev[4]) == cudaSuccess;
        CKZ(wait_stream(sb));
    }
out:
    return rc;
}

int cmd_residency(void)
{
    static const int def_free[] = {256, 512, 1024};
    static const char *kinds[2] = {"sleep", "issue"};
    unsigned char *sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1);
    cudaStream_t sb = NULL, ss = NULL;
    float *sink = NULL;
    int nf = g_opt.n_free ? g_opt.n_free : 3;
    int reps = g_opt.repeats ? g_opt.repeats : 3, i, f, k, r;
    const int *frees = g_opt.n_free ? g_opt.free_threads : def_free;

    if (!sel || cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&ss, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc((void **)&sink, sizeof(float)) != cudaSuccess ||
        cudaFuncSetAttribute(zoo_block_sleep, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             16 * 1024) != cudaSuccess ||
        cudaFuncSetAttribute(zoo_block_issue, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             16 * 1024) != cudaSuccess) {
        error_record("residency: cannot allocate streams or buffers");
        goto done;
    }
    select_variants(g_opt.variants, sel);
    for (i = 0; i < zoo_n_variants && !should_stop(); i++) {
        struct zoo_inst in;
        double alone[16], iso = 0;
        int exp_ = 0;

        if (!sel[i] || inst_ready(&in, i, ss))
            continue;
        for (r = 0; r < reps && r < 16; r++)
            if (residency_once(&in, sb, ss, g_dev.max_threads_per_sm, 0, 0,
                               sink, &alone[r], &exp_))
                break;
        if (r < reps && r < 16) {
            inst_abandon(&in);
            continue;
        }
        iso = median_of(alone, r);
        for (f = 0; f < nf; f++)
            for (k = 0; k < 2; k++) {
                double t[16];
                int n_exp = 0, n = 0, e = 0;
                /* long enough for a slow run at low residency */
                double spin = 30 * iso + 500;

                if (spin > 200000)
                    spin = 200000;
                for (r = 0; r < reps && r < 16 && !should_stop(); r++) {
                    if (residency_once(&in, sb, ss, frees[f], k, spin, sink, &t[n], &e)) {
                        recover();
                        break;
                    }
                    n_exp += e;
                    n++;
                }
                j_begin("residency");
                j_result(n > 0);
                j_str("variant", zoo_variants[i].name);
                j_int("free_threads", frees[f]);
                j_str("blocker", kinds[k]);
                j_num("alone_us", iso);
                j_nums("alone_samples_us", alone, reps < 16 ? reps : 16);
                j_nums("samples_us", t, n);
                if (n) {
                    j_num("median_us", median_of(t, n));
                    j_num("slowdown", median_of(t, n) / iso);
                }
                j_int("blocker_ended_first", n_exp);
                j_end();
            }
        inst_teardown(&in);
    }
done:
    if (sink)
        cudaFree(sink);
    if (sb)
        cudaStreamDestroy(sb);
    if (ss)
        cudaStreamDestroy(ss);
    free(sel);
    return 0;
}
