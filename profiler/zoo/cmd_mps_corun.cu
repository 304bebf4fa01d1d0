/*
 * mosaic-zoo mps-corun: timed launches of one variant at agreed wall-clock
 * instants (CLOCK_REALTIME), so that two processes started side by side,
 * with or without MPS, run their kernels at the same moments; the GPU clock
 * read before and after each launch lets their spans be compared. Checked
 * on the H200 (driver 580.159.04, CUDA 13.0): profiler/data/h200/mps.jsonl.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zoo.h"
#include "zoo_cmds.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"
#include "zoo_probes.h"
#include "zoo_streams.h"
#include "zoo_timing.h"

/* Sleeps to 2 ms before t, then spins: a plain sleep wakes 100+ us late,
 * which would skew the two processes' launches against each other. */
static void sleep_until_ns(long long t)
{
    struct timespec ts;
    long long early = t - 2000000LL;

    if (early > realtime_ns()) {
        ts.tv_sec = (time_t)(early / 1000000000LL);
        ts.tv_nsec = (long)(early % 1000000000LL);
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) ==
               EINTR) {
        }
    }
    while (realtime_ns() < t) {
    }
}

int cmd_mps(void)
{
    struct zoo_inst in;
    struct xcfg c;
    unsigned long long *dstamp = NULL;
    unsigned long long *hstamp = NULL;
    double dur[ZOO_MAX_REPEATS];
    long long target[ZOO_MAX_REPEATS], wake[ZOO_MAX_REPEATS];
    long long interval_ns = (long long)(g_opt.interval_ms * 1e6);
    int reps = g_opt.repeats ? g_opt.repeats : 7;
    int vi, rc = 0, r, i, n_late = 0, n_done = 0;
    double setup_s = 0, mn, mx;
    float ms = 0;

    memset(&in, 0, sizeof(in));
    clear_err();
    vi = find_variant(g_opt.variant);
    if (g_opt.n_sms && g_opt.sms[0] < g_dev.sm_count)
        cfg_open_green(&c, g_opt.sms[0], "green");
    else
        cfg_open_full(&c, "full");
    if (vi < 0) {
        seterr("unknown variant '%s'", g_opt.variant);
        rc = -1;
        goto out;
    }
    if (!c.ok) {
        rc = -1;
        goto out;
    }
    CK(cudaMalloc((void **)&dstamp, 2 * (size_t)reps * sizeof(*dstamp)));
    hstamp = (unsigned long long *)calloc(2 * (size_t)reps, sizeof(*hstamp));
    if (!hstamp) {
        seterr("out of host memory");
        rc = -1;
        goto out;
    }
    CKZ(inst_setup(&in, &zoo_variants[vi], &setup_s));
    for (i = 0; i < ZOO_WARMUP; i++)
        CKZ(launch_one(&in, c.s[0]));
    CKZ(wait_stream(c.s[0]));
    if (realtime_ns() > g_opt.start_at_ns)
        fprintf(stderr, "mosaic-zoo: start-at is %.3f s in the past after "
                "setup; repeats will start late\n",
                (realtime_ns() - g_opt.start_at_ns) * 1e-9);
    for (r = 0; r < reps; r++) {
        target[r] = g_opt.start_at_ns + r * interval_ns;
        sleep_until_ns(target[r]);
        wake[r] = realtime_ns();
        /* GPU-side timestamps around the kernel: the same %globaltimer in
         * both processes, so their spans can be compared directly. */
        zoo_stamp_kernel<<<1, 1, 0, c.s[0]>>>(dstamp + 2 * r);
        CK(cudaGetLastError());
        CKZ(enqueue_timed(&in, c.s[0], g_ev[0], g_ev[1]));
        zoo_stamp_kernel<<<1, 1, 0, c.s[0]>>>(dstamp + 2 * r + 1);
        CK(cudaGetLastError());
        CKZ(wait_stream(c.s[0]));
        CK(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1]));
        dur[r] = 1e3 * ms;
        n_done++;
    }
    CK(cudaMemcpy(hstamp, dstamp, 2 * (size_t)reps * sizeof(*hstamp),
                  cudaMemcpyDeviceToHost));
out:
    for (r = 0; r < n_done; r++) {
        double late_us = (wake[r] - target[r]) * 1e-3;

        n_late += late_us > 1000.0;
        j_begin("mps_repeat");
        j_bool("ok", 1);
        j_str("variant", zoo_variants[vi].name);
        j_int("rep", r);
        j_int("target_ns", target[r]);
        j_int("wake_ns", wake[r]);
        j_num("late_us", late_us);
        j_num("duration_us", dur[r]);
        j_int("gpu_before_ns", rc == 0 ? (long long)hstamp[2 * r] : -1);
        j_int("gpu_after_ns", rc == 0 ? (long long)hstamp[2 * r + 1] : -1);
        j_end();
    }
    j_begin("mps_corun");
    j_result(rc == 0 && n_done == reps);
    j_str("variant", g_opt.variant);
    if (c.ok)
        j_cfg(&c);
    j_int("pid", (long long)getpid());
    j_int("start_at_ns", g_opt.start_at_ns);
    j_num("interval_ms", g_opt.interval_ms);
    j_int("repeats", n_done);
    j_int("slots", in.slots);
    j_num("setup_s", setup_s);
    j_str("method", "event_single_launch");
    if (n_done) {
        minmax_of(dur, n_done, &mn, &mx);
        j_num("median_us", median_of(dur, n_done));
        j_num("min_us", mn);
        j_num("max_us", mx);
        j_nums("durations_us", dur, n_done);
        j_int("repeats_late_over_1ms", n_late);
    }
    j_end();
    if (rc)
        recover();
    if (in.v)
        inst_teardown(&in);
    if (dstamp)
        cudaFree(dstamp);
    free(hstamp);
    cfg_close(&c);
    return rc;
}
