/*
 * The Mosaic interference predictor (issue 4): given two kernels' isolated
 * profiles (docs/profile-schema.md), predict each one's duration and
 * slowdown when they co-run, on disjoint SM partitions or sharing all SMs.
 * Models: predictor/models/<gpu>/ (mosaic-train); docs/predictor-eval.md.
 *
 * Every function that can fail returns 0 or a negative MOSAIC_E* code
 * (mosaic.h) and writes a message naming the file and the field into err.
 * Thread safety: a predictor may be used by one thread at a time (the cache
 * is not locked); prepared kernels are read-only and may be shared.
 */
#ifndef MOSAIC_PREDICT_H
#define MOSAIC_PREDICT_H

#include <stddef.h>
#include <stdint.h>

#include "mosaic/mosaic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The GPU: SMs and their per-SM limits, shared-memory carveout steps, L2
 * and DRAM. mosaic_gpu_desc_h200() fills the H200's values, as its driver
 * reports them and as measured on it (H200, driver 580.159.04, CUDA 13.0:
 * the device in profiler/data/h200/zoo.profile.json's "gpu", the carveout
 * steps and placement rules in docs/placement.md, the copy bandwidth that
 * n SMs reach in docs/predictor.md). */
struct mosaic_gpu_desc {
    int sm_count;                /* 132 */
    int sms_per_tpc;             /* 2 */
    int cc_major, cc_minor;      /* 9, 0 */
    int max_threads_per_sm;      /* 2048 */
    int max_blocks_per_sm;       /* 32 */
    int regs_per_sm;             /* 65536 (4 sub-partitions, 256-reg units) */
    int regs_per_block;          /* 65536 */
    int smem_per_sm;             /* 233472 bytes: the largest carveout */
    int smem_per_block_optin;    /* 232448 */
    int reserved_smem_per_block; /* 1024 */
    int n_carveouts;             /* steps of the L1/shared split, KiB */
    int carveout_kib[16];        /* 0 8 16 32 64 100 132 164 196 228 */
    double l2_bytes;             /* 62914560 */
    double dram_bw;              /* bytes/s, peak */
};
void mosaic_gpu_desc_h200(struct mosaic_gpu_desc *g);

enum mosaic_share_mode { MOSAIC_MODE_SHARED = 0, MOSAIC_MODE_PARTITIONED = 1 };

/* Components of a prediction; a query may switch some off (ablation). */
#define MOSAIC_PC_PACKING 0x1u /* block packing (eq. 1-2) */
#define MOSAIC_PC_INTER 0x2u   /* inter-SM model (L2/DRAM contention) */
#define MOSAIC_PC_INTRA 0x4u   /* intra-SM pipe/issue model + residual */
#define MOSAIC_PC_ALL 0x7u

struct mosaic_kernel;   /* mosaic/profile.h */
struct mosaic_pkernel;  /* a kernel prepared for prediction (features) */
struct mosaic_predictor;

struct mosaic_pred_query {
    const struct mosaic_pkernel *a, *b;
    int mode;          /* enum mosaic_share_mode */
    int sms_a, sms_b;  /* partitioned: SMs of each side; shared: ignored */
    int b_first;       /* shared: B's blocks are dispatched first */
    unsigned disable;  /* MOSAIC_PC_* bits to leave out; 0: use all */
    /* Isolated durations on the given SM counts (us), as measured; 0 or
     * NaN: estimated from the profile (waves, the per-SM speed-up fewer
     * SMs give, DRAM share; docs/predictor.md). */
    double iso_a_us, iso_b_us;
};

struct mosaic_pred_kernel {
    double duration_us;  /* predicted co-run duration, from the common start */
    double slowdown;     /* duration_us / iso_us */
    double iso_us;       /* the isolated duration used */
    double start_us;     /* when its first block is predicted to start */
    double waves;        /* waves on its SMs when alone */
    double placement;    /* slowdown from placement (waiting for SMs) */
    double packing;      /* factor from co-located block packing */
    double inter_sm;     /* factor from the inter-SM model */
    double intra_sm;     /* factor from the intra-SM model (with residual) */
};

struct mosaic_pred_result {
    struct mosaic_pred_kernel k[2]; /* [0] = A, [1] = B */
    double overlap_us;  /* time both kernels were running */
    double coresident;  /* fraction of the overlap with both on one SM */
    int cached;         /* 1 when the answer came from the cache */
};

/* Opens the models in model_dir (inter.json, shared.json, analytic.json).
 * gpu may be NULL (the H200). */
int mosaic_predictor_open(const char *model_dir,
                          const struct mosaic_gpu_desc *gpu,
                          struct mosaic_predictor **out, char *err,
                          size_t errlen);
void mosaic_predictor_close(struct mosaic_predictor *p);

/* The GPU the predictor models (the one given to mosaic_predictor_open,
 * or the H200); valid until mosaic_predictor_close. */
const struct mosaic_gpu_desc *mosaic_predictor_gpu(const struct mosaic_predictor *p);

/* Extracts what the models need from a profile's kernel once; names the
 * kernel (what, e.g. the file) and the field on missing/out-of-range data. */
int mosaic_pkernel_prepare(const struct mosaic_predictor *p,
                           const struct mosaic_kernel *k, const char *what,
                           struct mosaic_pkernel **out, char *err,
                           size_t errlen);
void mosaic_pkernel_free(struct mosaic_pkernel *k);

/* Declares that k's launch also runs next, a dependent kernel enqueued
 * right after it on the same stream (e.g. cuBLAS's split-K reduce): in
 * shared mode it is dispatched behind the co-runner's pending blocks.
 * next's profiled duration is used; call before sharing k. */
int mosaic_pkernel_set_follow(struct mosaic_pkernel *k,
                              const struct mosaic_kernel *next, const char *what,
                              char *err, size_t errlen);
const char *mosaic_pkernel_key(const struct mosaic_pkernel *k);
/* The kernel's profiled duration on the full GPU (metrics.duration_ns), us. */
double mosaic_pkernel_profiled_us(const struct mosaic_pkernel *k);

/* Predicts; res is fully written on success, zeroed on error. */
int mosaic_predict(struct mosaic_predictor *p,
                   const struct mosaic_pred_query *q,
                   struct mosaic_pred_result *res, char *err, size_t errlen);

/* Per-pair cache (hash of both kernel keys, mode, SMs, order, components,
 * isolated durations): entries 0 disables it (the default), else rounded
 * up to a power of two. */
int mosaic_predictor_set_cache(struct mosaic_predictor *p, size_t entries);

#ifdef __cplusplus
}
#endif
#endif
