/*
 * Placement, the predictor's one interface to where thread blocks go and
 * what they do to each other on one SM (placement.c, docs/placement.md):
 * the timeline (timeline.c), the feature rows (features.c) and kernel
 * preparation (kernel.c) ask these questions and nothing else about
 * placement. Internal to predictor/.
 */
#ifndef MOSAIC_PREDICTOR_PLACEMENT_H
#define MOSAIC_PREDICTOR_PLACEMENT_H

#include "predictor_internal.h"

/* ---- one kernel ---------------------------------------------------------- */

/* Occupancy from the GPU's limits (exact, cuda_occupancy.h rules): blocks
 * per SM, the shared-memory configuration the kernel runs with, its
 * shared memory and registers per block. 0, or -1 when no block fits. */
int mosaic__place_occupancy(const struct mosaic_gpu_desc *g,
                            const struct mosaic_kernel *k, int *bps,
                            int *smem_cfg, int *smem_block, int *regs_block);
/* Waves of a grid on n SMs (real: full waves + last-wave fraction). */
double mosaic__place_waves(const struct mosaic_pkernel *k, int n);

/* The isolated density of k on N SMs: blocks per SM, at least 1. */
static inline double mosaic__place_density(const struct mosaic_pkernel *k, int N)
{
    double d0 = (double)k->grid / N;
    if (d0 > k->bps) d0 = k->bps;
    return d0 < 1 ? 1 : d0;
}

/* The busiest pipe's (or issue's) utilisation of k, 0..1. */
static inline double mosaic__place_busiest(const struct mosaic_pkernel *k)
{
    double u = k->issue;
    for (int i = 0; i < 8; i++)
        if (k->pipe[i] > u) u = k->pipe[i];
    return u > 1 ? 1 : u;
}

/* Block packing (eq. 1-2): how much longer a wave of k takes with d blocks
 * per SM than at its isolated density on N SMs, weighted by w. */
double mosaic__place_pack_factor(const struct mosaic_pkernel *k, int N, double d, double w);

/* Isolated duration estimate (us) on n SMs from the full-GPU profile:
 * DRAM-bound part by the bandwidth n SMs reach, the rest by waves, or for a
 * kernel of less than one wave by rounds and block packing. */
double mosaic__place_iso_on(const struct mosaic_gpu_desc *g,
                            const struct mosaic_pkernel *k, int n);

/* ---- two kernels on one SM ----------------------------------------------- */

/* Blocks of s that fit on an SM holding nf blocks of f (0: none; the
 * carveout rule of docs/placement.md). */
int mosaic__place_room(const struct mosaic_gpu_desc *g,
                       const struct mosaic_pkernel *f, int nf,
                       const struct mosaic_pkernel *s);
/* Slowdown of a's warps (fa: its blocks on the SM over its isolated
 * density) beside b's (fb), issue and pipe by pipe. */
double mosaic__place_starve_on(const struct mosaic_pkernel *a, double fa,
                               const struct mosaic_pkernel *b, double fb);
/* The analytic intra-SM contention on an SM holding nf blocks of f and ns
 * of s: the busiest unit's combined utilisation, at least 1. */
double mosaic__place_intra_term(const struct mosaic_pkernel *f, int nf,
                                const struct mosaic_pkernel *s, int ns);

/* ---- the batches of a second, single-wave kernel -------------------------- */

/* The most batches one timeline keeps. */
#define MOSAIC__MAXB 24

/* Dispatched batches of a single-wave second kernel: blocks, progress,
 * packing factor, fraction beside the first kernel's blocks, intra-SM
 * factors of the second and of the first. */
struct mosaic__batches {
    int n;
    double blocks[MOSAIC__MAXB];
    double progress[MOSAIC__MAXB];    /* 0..1 of its isolated work */
    double packing[MOSAIC__MAXB];     /* block-packing factor */
    double beside_frac[MOSAIC__MAXB]; /* fraction beside the first's blocks */
    double starve_second[MOSAIC__MAXB], starve_first[MOSAIC__MAXB]; /* intra-SM */
};

/* Where the second kernel's blocks land once the first releases SMs, kept
 * across the timeline runs of one query (the components switched on and
 * off). */
struct mosaic__landing {
    double chunk;          /* second's blocks one retiring first block makes room for */
    double last_blocks, last_per_sm; /* the last land_max query and its answer */
};

/* What placing a single-wave second kernel's batches needs of one timeline
 * run. */
struct mosaic__batch_ctx {
    const struct mosaic__coef *coef;
    const struct mosaic_pkernel *first, *second; /* dispatched first, second */
    struct mosaic__landing *land;
    int n_sms;
    int second_dominates; /* the second's warps keep the issue slots */
    int intra;            /* the intra-SM component is on */
    double pack_weight;   /* block packing's weight; 0 when off */
};

/* Where a batch of up to blocks blocks of the second kernel lands, given
 * idle SMs and SMs beside the first kernel's blocks (first_per_sm of them
 * there, with room for room blocks each) not yet taken; released: the
 * first kernel is running and its blocks hold every SM or it is releasing
 * them. Adds the batch's parts to bt, updates the SMs taken, returns the
 * blocks placed. */
double mosaic__place_batch(struct mosaic__batches *bt, const struct mosaic__batch_ctx *x,
                           double blocks, double idle_sms, double beside_sms, double room,
                           double first_per_sm, int released, double *taken_idle,
                           double *taken_beside);

#endif
