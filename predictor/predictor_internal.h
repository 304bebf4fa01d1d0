/*
 * Internals of the Mosaic predictor shared by its files: the prepared
 * kernel, the analytic coefficients, the predictor and its cache, the GPU's
 * copy curve. Internal to predictor/ (the tests may include it); tools use
 * include/mosaic/predict.h, and mosaic-train train_internal.h.
 */
#ifndef MOSAIC_PREDICTOR_INTERNAL_H
#define MOSAIC_PREDICTOR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mosaic/predict.h"
#include "mosaic/profile.h"
#include "trees.h"

/* The predictor's public functions (include/mosaic/predict.h) carry the
 * core's MOSAIC__EXPORT, so that they are exported when the library is
 * linked into a shared object built with hidden visibility; the internals
 * below are not. */
#include "core.h"

/* ---- prepared kernel (kernel.c) ------------------------------------------ */

struct mosaic_pkernel {
    uint64_t hash;    /* FNV-1a of the key */
    char *key;
    /* launch and resources */
    int64_t grid;     /* blocks */
    int threads;      /* per block */
    int warps;        /* per block */
    int regs;         /* per thread */
    int smem;         /* static + dynamic + reserve, 128-B units, bytes */
    int carveout;     /* % or -1 */
    int smem_cfg;     /* the SM shared-memory configuration it runs with, bytes */
    int smem_need;    /* shared memory of a full SM of its blocks (bps x smem), bytes */
    int bps;          /* blocks per SM (occupancy) */
    int regs_block;   /* registers per block (allocation granularity) */
    /* profile metrics (units: us, GB/s, fractions) */
    double dur_us;
    double dram_rd, dram_wr, l2_rd, l2_wr; /* GB/s */
    double warps_elig, stall_lsb, stall_mio, issue, ipc;
    double pipe[8];   /* fma alu xu lsu hmma gmma fp64, l1 (wavefronts), fractions */
    double c2lsu, spr, l1_hit, l2_hit, occ;
    double cyc_min, cyc_avg, cyc_max;
    double follow_us; /* a dependent kernel after it on its stream, us; 0: none */
    double lc2lsu, lgrid; /* log1p(c2lsu), log2(grid): precomputed features */
};

/* ---- GPU description (gpu.c) --------------------------------------------- */

/* DRAM bandwidth (read + write, GB/s) that n SMs reach: the copy curve. */
double mosaic__gpu_copy_bw(const struct mosaic_gpu_desc *g, int n);

/* ---- analytic coefficients (coef.c, analytic.json) ------------------------ */

struct mosaic__coef {
    double pack;      /* weight of the block-packing term (eq. 1-2) */
    double gap_us;    /* dispatch gap of the second kernel, us */
    double intra_w;   /* weight of the analytic intra-SM contention term */
    /* the conservative value's factor over the worse order's prediction:
     * fitted by mosaic-train so that it covers 95% of the training
     * repeats (the per-order prediction is a median, so alone it is below
     * about half of them); 1 in partitioned mode's single order too */
    double cons_margin;
};

void mosaic__coef_default(struct mosaic__coef *c);
/* 0, or a negative MOSAIC_E* code with a message naming the file and the
 * field in err. */
int mosaic__coef_load(const char *path, struct mosaic__coef *c, char *err,
                      size_t errlen);
int mosaic__coef_save(const char *path, const struct mosaic__coef *c,
                      char *err, size_t errlen);

/* ---- the predictor and its cache (predict.c) ------------------------------ */

struct mosaic_predictor {
    struct mosaic_gpu_desc gpu;
    const char *gpu_name; /* for messages; NULL when the caller gave the GPU */
    struct mosaic__forest *inter;  /* log slowdown, partitioned-trained */
    struct mosaic__forest *shared; /* log residual of the shared timeline */
    struct mosaic__coef coef;
    /* The per-pair cache (predict.c, mosaic_predictor_set_cache): sets of
     * MOSAIC__CACHE_WAYS keys, and the results in a parallel array, so that
     * a lookup reads one set's keys (two cache lines) and touches a result
     * only on a hit. */
    struct mosaic__cache_key *cache_keys;
    struct mosaic_pred_result *cache_res;
    size_t cache_set_mask; /* sets - 1 */
    uint64_t cache_victim; /* turns over the way a full set gives up */
};
#define MOSAIC__CACHE_WAYS 4
/* What a cached outcome was predicted from: both kernels' identities
 * (their key hashes), and in cfg the mode, order, components, SM split and
 * start-delay bucket with MOSAIC__CACHE_USED set; isok: the isolated
 * durations' buckets. A key of all zeros is an empty way. */
struct mosaic__cache_key {
    uint64_t ha, hb, cfg, isok;
};
#define MOSAIC__CACHE_USED (1ull << 63)

#endif
