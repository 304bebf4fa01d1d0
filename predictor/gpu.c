/*
 * The GPU description: the H200's limits (mosaic_gpu_desc_h200) and the DRAM
 * bandwidth a partition of n SMs reaches (the copy curve).
 */
#include <string.h>

#include "core.h"
#include "predictor_internal.h"

/* The H200 as its driver reports it (H200, driver 580.159.04, CUDA 13.0;
 * the device of profiler/data/h200/zoo.profile.json, "gpu"): the per-SM
 * limits are the sm_90 occupancy rules, and the shared-memory carveout
 * steps (KiB) are those of the occupancy calculator for sm_90, the same
 * as mosaic_occupancy_limits' (the profile component), which the profiles'
 * recorded occupancy confirms (tests/predictor_trees/
 * test_occupancy_profiles.c); how the driver picks a step when two kernels
 * meet is in docs/placement.md. */
MOSAIC__EXPORT void mosaic_gpu_desc_h200(struct mosaic_gpu_desc *g)
{
    static const int steps[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
    memset(g, 0, sizeof *g);
    g->sm_count = 132;
    g->sms_per_tpc = 2;
    g->cc_major = 9;
    g->cc_minor = 0;
    g->max_threads_per_sm = 2048;
    g->max_blocks_per_sm = 32;
    g->regs_per_sm = 65536;
    g->regs_per_block = 65536;
    g->smem_per_sm = 233472;
    g->smem_per_block_optin = 232448;
    g->reserved_smem_per_block = 1024;
    g->n_carveouts = (int)(sizeof steps / sizeof steps[0]);
    for (int i = 0; i < g->n_carveouts; i++)
        g->carveout_kib[i] = steps[i];
    g->l2_bytes = 62914560;
    g->dram_bw = 4.8e12;
    g->sm_partition_min = 8;
    g->sm_partition_align = 8;
}

/* A side of n SMs beside one of other SMs: aligned itself, or the rest of
 * the GPU beside an aligned side (what cuDevSmResourceSplitByCount gives:
 * groups of the aligned count and the remainder). */
static int side_ok(const struct mosaic_gpu_desc *g, int n, int other, int align)
{
    return n % align == 0 || (n + other == g->sm_count && other % align == 0);
}

MOSAIC__EXPORT int mosaic_gpu_split_check(const struct mosaic_gpu_desc *g, int sms_a,
                                          int sms_b, char *err, size_t errlen)
{
    int mn, al;
    if (!g)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, "mosaic_gpu_split_check", NULL,
                            "no GPU description");
    mn = g->sm_partition_min > 1 ? g->sm_partition_min : 1;
    al = g->sm_partition_align > 1 ? g->sm_partition_align : 1;
    if (sms_a < mn || sms_b < mn || sms_a > g->sm_count - sms_b)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, "SM split", NULL,
                            "%d/%d: each side needs at least %d SMs (the GPU's smallest "
                            "partition) and together at most its %d", sms_a, sms_b, mn,
                            g->sm_count);
    if (!side_ok(g, sms_a, sms_b, al) || !side_ok(g, sms_b, sms_a, al)) {
        /* the nearest split it can make with A's side rounded down */
        int a = sms_a / al * al > mn ? sms_a / al * al : mn;
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, "SM split", NULL,
                            "%d/%d: the GPU cannot make it: a partition is a multiple of %d "
                            "SMs, or the rest of the %d beside one (e.g. %d/%d)", sms_a,
                            sms_b, al, g->sm_count, a, g->sm_count - a);
    }
    return 0;
}

/* DRAM bandwidth (read + write, GB/s) reachable from n SMs: the H200's
 * copy bandwidth on green contexts of 8/16/32/64/128 SMs, interpolated,
 * scaled to the GPU's peak. Measured on the H200 (driver 580.159.04, CUDA
 * 13.0) by the project's first green-context copy runs, whose records are
 * not in the repository; the later `mosaic-zoo time` runs
 * (profiler/data/h200/splits/time.jsonl, confirm/time.jsonl: copy_1G on n
 * SMs) reach more from about 44 SMs on, and docs/predictor.md ("What is not
 * done or not good enough") says why this curve stays: the measured one did
 * not improve the estimate. */
double mosaic__gpu_copy_bw(const struct mosaic_gpu_desc *g, int n)
{
    static const double sm[] = {0, 8, 16, 32, 64, 128, 1e9};
    static const double bw[] = {0, 773, 1540, 2895, 3740, 3918, 3918};
    double scale = g->dram_bw / 4.8e12;
    for (int i = 1; i < 7; i++)
        if (n <= sm[i])
            return scale * (bw[i - 1] + (bw[i] - bw[i - 1]) * (n - sm[i - 1]) / (sm[i] - sm[i - 1]));
    return scale * 3918;
}
