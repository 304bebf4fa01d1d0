/*
 * Kernel preparation: what the models need of a profiled kernel, checked and
 * extracted once (mosaic_pkernel_prepare), and the dependent-kernel link.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "placement.h"

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

MOSAIC__EXPORT const char *mosaic_pkernel_key(const struct mosaic_pkernel *k)
{
    return k ? k->key : "";
}

MOSAIC__EXPORT double mosaic_pkernel_profiled_us(const struct mosaic_pkernel *k)
{
    return k ? k->dur_us : 0;
}

MOSAIC__EXPORT int mosaic_pkernel_set_follow(struct mosaic_pkernel *k,
                                          const struct mosaic_kernel *next, const char *what,
                                          char *err, size_t errlen)
{
    double d;
    if (!k || !next || !what) {
        snprintf(err, errlen, "mosaic_pkernel_set_follow: NULL argument");
        return MOSAIC_EINVAL;
    }
    d = next->metrics[MOSAIC_M_duration_ns];
    if (!isfinite(d) || d <= 0 || d > 1e12) {
        snprintf(err, errlen, "%s: kernel %s: metrics.duration_ns is missing or out of range",
                 what, next->key ? next->key : "(no key)");
        return MOSAIC_EINVAL;
    }
    k->follow_us = d * 1e-3;
    /* a different prediction than the kernel alone: a different cache key */
    k->hash = fnv(k->key) ^ (0x9e3779b97f4a7c15ull * (uint64_t)(d + 1));
    return 0;
}

MOSAIC__EXPORT void mosaic_pkernel_free(struct mosaic_pkernel *k)
{
    if (!k) return;
    free(k->key);
    free(k);
}

#define NEED(id, lo, hi, dst, scale)                                            \
    do {                                                                        \
        double v_ = k->metrics[MOSAIC_M_##id];                                  \
        if (!isfinite(v_)) {                                                    \
            snprintf(err, errlen, "%s: kernel %s: metrics.%s is missing (null)", \
                     what, key, #id);                                           \
            goto bad;                                                           \
        }                                                                       \
        if (v_ < (lo) || v_ > (hi)) {                                           \
            snprintf(err, errlen,                                               \
                     "%s: kernel %s: metrics.%s = %g is out of range [%g, %g]", \
                     what, key, #id, v_, (double)(lo), (double)(hi));           \
            goto bad;                                                           \
        }                                                                       \
        (dst) = v_ * (scale);                                                   \
    } while (0)

MOSAIC__EXPORT int mosaic_pkernel_prepare(const struct mosaic_predictor *p,
                                       const struct mosaic_kernel *k, const char *what,
                                       struct mosaic_pkernel **out, char *err,
                                       size_t errlen)
{
    struct mosaic_pkernel *pk;
    const char *key;
    int64_t thr, grid;
    int smem_block;

    *out = NULL;
    if (!p || !k || !what) {
        snprintf(err, errlen, "mosaic_pkernel_prepare: NULL argument");
        return MOSAIC_EINVAL;
    }
    key = k->key ? k->key : "(no key)";
    /* CUDA's launch limits: a grid of at most 2^31 - 1 blocks in x and
     * 65535 in y and z, a block of at most 1024 threads. */
    for (int i = 0; i < 3; i++) {
        int64_t gmax = i == 0 ? INT32_MAX : 65535;
        if (k->grid[i] == MOSAIC_NULL || k->grid[i] < 1 || k->grid[i] > gmax)
            return mosaic__errf(err, errlen, MOSAIC_EINVAL, what, NULL,
                                "kernel %s: field grid[%d] is %s: want 1 .. %lld", key, i,
                                k->grid[i] == MOSAIC_NULL ? "missing" : "out of range",
                                (long long)gmax);
        if (k->block[i] == MOSAIC_NULL || k->block[i] < 1 || k->block[i] > 1024)
            return mosaic__errf(err, errlen, MOSAIC_EINVAL, what, NULL,
                                "kernel %s: field block[%d] is %s: want 1 .. 1024", key, i,
                                k->block[i] == MOSAIC_NULL ? "missing" : "out of range");
    }
    /* Checked products (the unchecked ones overflowed: UBSan fired and a
     * release build predicted "waves 0.00"). The timeline counts blocks
     * per SM in int, so the whole grid is bounded by CUDA's x limit. */
    if (mosaic_launch_blocks(k->grid, &grid) != 0 || grid > INT32_MAX)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, what, NULL,
                            "kernel %s: field grid: %lld x %lld x %lld blocks is more than "
                            "the %d the predictor handles (CUDA's limit of one grid "
                            "dimension)", key, (long long)k->grid[0], (long long)k->grid[1],
                            (long long)k->grid[2], INT32_MAX);
    {
        static const int64_t one[3] = {1, 1, 1};
        if (mosaic_launch_threads(one, k->block, &thr) != 0 || thr > 1024)
            return mosaic__errf(err, errlen, MOSAIC_EINVAL, what, NULL,
                                "kernel %s: field block: %lld x %lld x %lld threads is more "
                                "than 1024 a block", key, (long long)k->block[0],
                                (long long)k->block[1], (long long)k->block[2]);
    }
    if (k->regs == MOSAIC_NULL || k->regs < 0 || k->regs > 255) {
        snprintf(err, errlen, "%s: kernel %s: field regs missing or out of range [0, 255]",
                 what, key);
        return MOSAIC_EINVAL;
    }
    if (k->dyn_smem == MOSAIC_NULL || k->dyn_smem < 0 || k->dyn_smem > p->gpu.smem_per_block_optin ||
        k->static_smem == MOSAIC_NULL || k->static_smem < 0 ||
        k->static_smem > p->gpu.smem_per_block_optin) {
        snprintf(err, errlen, "%s: kernel %s: field dyn_smem/static_smem missing or out of range",
                 what, key);
        return MOSAIC_EINVAL;
    }
    if (k->carveout != MOSAIC_NULL && (k->carveout < -1 || k->carveout > 100)) {
        snprintf(err, errlen, "%s: kernel %s: field carveout out of range [-1, 100]", what, key);
        return MOSAIC_EINVAL;
    }
    pk = calloc(1, sizeof *pk);
    if (!pk || !(pk->key = strdup(key))) {
        free(pk);
        snprintf(err, errlen, "%s: out of memory", what);
        return MOSAIC_ENOMEM;
    }
    pk->hash = fnv(key);
    pk->grid = grid;
    pk->threads = (int)thr;
    pk->warps = (int)((thr + 31) / 32);
    pk->regs = (int)k->regs;
    pk->carveout = k->carveout == MOSAIC_NULL ? -1 : (int)k->carveout;
    {
        struct mosaic_kernel kk = *k;
        kk.carveout = pk->carveout;
        if (mosaic__place_occupancy(&p->gpu, &kk, &pk->bps, &pk->smem_cfg,
                                   &smem_block, &pk->regs_block) != 0) {
            snprintf(err, errlen,
                     "%s: kernel %s: no block fits on an SM (fields block, regs, "
                     "static_smem, dyn_smem)", what, key);
            goto bad;
        }
        pk->smem = smem_block;
        pk->smem_need = pk->bps * smem_block;
    }
    NEED(duration_ns, 1, 1e12, pk->dur_us, 1e-3);
    NEED(dram_read_bw, 0, 1e14, pk->dram_rd, 1e-9);
    NEED(dram_write_bw, 0, 1e14, pk->dram_wr, 1e-9);
    NEED(l2_read_sector_rate, 0, 1e13, pk->l2_rd, 32e-9);
    NEED(l2_write_sector_rate, 0, 1e13, pk->l2_wr, 32e-9);
    NEED(warps_eligible_per_cycle, 0, 64, pk->warps_elig, 1);
    NEED(stall_long_scoreboard, 0, 1e6, pk->stall_lsb, 1);
    NEED(stall_mio_throttle, 0, 1e6, pk->stall_mio, 1);
    NEED(issue_active, 0, 1.0001, pk->issue, 1);
    NEED(ipc, 0, 16, pk->ipc, 1);
    NEED(pipe_fma_pct, 0, 1000, pk->pipe[0], 0.01);
    NEED(pipe_alu_pct, 0, 1000, pk->pipe[1], 0.01);
    NEED(pipe_xu_pct, 0, 1000, pk->pipe[2], 0.01);
    NEED(pipe_lsu_pct, 0, 1000, pk->pipe[3], 0.01);
    NEED(pipe_tensor_hmma_pct, 0, 1000, pk->pipe[4], 0.01);
    NEED(pipe_tensor_gmma_pct, 0, 1000, pk->pipe[5], 0.01);
    NEED(pipe_fp64_pct, 0, 1000, pk->pipe[6], 0.01);
    NEED(l1_hit_rate_pct, 0, 1000, pk->l1_hit, 0.01);
    NEED(l2_hit_rate_pct, 0, 1000, pk->l2_hit, 0.01);
    NEED(achieved_occupancy_pct, 0, 1000, pk->occ, 0.01);
    NEED(sm_cycles_active_min, 0, 1e13, pk->cyc_min, 1);
    NEED(sm_cycles_active_avg, 0, 1e13, pk->cyc_avg, 1);
    NEED(sm_cycles_active_max, 0, 1e13, pk->cyc_max, 1);
    {
        double fma_, alu, xu, lsu, sec, req;
        NEED(inst_fma, 0, 1e18, fma_, 1);
        NEED(inst_alu, 0, 1e18, alu, 1);
        NEED(inst_xu, 0, 1e18, xu, 1);
        NEED(inst_lsu, 0, 1e18, lsu, 1);
        NEED(gld_sectors, 0, 1e18, sec, 1);
        NEED(gld_requests, 0, 1e18, req, 1);
        {
            /* The L1/shared data pipe: one wavefront per LSU instruction,
             * one more per shared-memory bank conflict, and a global load
             * takes one per 128-byte line it touches (4 sectors when
             * coalesced, up to 16 sectors a request; beyond that the
             * sectors are scattered, one line each). Per SM cycle. */
            double conf, wf, spr = req > 0 ? sec / req : 0, cyc = pk->cyc_avg * p->gpu.sm_count;
            NEED(smem_bank_conflicts, 0, 1e18, conf, 1);
            wf = sec * (spr > 16 ? 1 : 0.25) - req;
            wf = lsu + conf + (wf > 0 ? wf : 0);
            pk->pipe[7] = cyc > 0 ? wf / cyc : 0;
            if (pk->pipe[7] > 1) pk->pipe[7] = 1;
        }
        pk->c2lsu = lsu > 0 ? (fma_ + alu + xu) / lsu : 1000;
        if (pk->c2lsu > 1000) pk->c2lsu = 1000;
        pk->spr = req > 0 ? sec / req : 0;
        pk->lc2lsu = log1p(pk->c2lsu);
        pk->lgrid = log2((double)pk->grid);
    }
    *out = pk;
    return 0;
bad:
    mosaic_pkernel_free(pk);
    return MOSAIC_EINVAL;
}
