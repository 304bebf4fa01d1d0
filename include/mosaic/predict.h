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
    /* The SM partitions the GPU can make (green contexts): a side of a
     * split has at least sm_partition_min SMs and is a multiple of
     * sm_partition_align, or is the remainder of the GPU beside such a
     * side (132 = 64 + 68). The driver's minSmPartitionSize and
     * smCoscheduledAlignment: 8 and 8 on the H200 (profiler/zoo/greenctx.h;
     * the "meta" records of profiler/data/h200/, green_min_partition and
     * green_alignment). 0 reads as 1 (no rule). */
    int sm_partition_min;        /* 8 */
    int sm_partition_align;      /* 8 */
};
void mosaic_gpu_desc_h200(struct mosaic_gpu_desc *g);

/* Whether g can run two kernels side by side on sms_a and sms_b SMs: each
 * side at least sm_partition_min, together at most sm_count, and each
 * side a multiple of sm_partition_align or the remainder of the GPU beside
 * an aligned one. 0, or MOSAIC_EINVAL with the rule in err ("sms_a/sms_b =
 * 66/66: ... the H200's partitions are multiples of 8 SMs ..."). The
 * predictor refuses other splits (mosaic_predict, mosaic_predict_timeline):
 * the GPU cannot make them, so no measurement can confirm a prediction. */
int mosaic_gpu_split_check(const struct mosaic_gpu_desc *g, int sms_a, int sms_b,
                           char *err, size_t errlen);

enum mosaic_share_mode { MOSAIC_MODE_SHARED = 0, MOSAIC_MODE_PARTITIONED = 1 };

/* Components of a prediction; a query may switch some off (ablation). */
#define MOSAIC_PC_PACKING 0x1u /* block packing (eq. 1-2) */
#define MOSAIC_PC_INTER 0x2u   /* inter-SM model (L2/DRAM contention) */
#define MOSAIC_PC_INTRA 0x4u   /* intra-SM pipe/issue model + residual */
#define MOSAIC_PC_ALL 0x7u

struct mosaic_kernel;   /* mosaic/profile.h */
struct mosaic_pkernel;  /* a kernel prepared for prediction (features) */
struct mosaic_predictor;

/* Dispatch order in shared mode. Two kernels enqueued on two streams within
 * the dispatch jitter reach the GPU in either order: in the H200 dataset
 * (profiler/data/h200/corun.jsonl, shared mode, 31,892 repeats of pairs
 * enqueued back to back) |start_offset_samples_us| had median 1.6 us, p95
 * 2.5 us and p99 3.2 us, and the kernel enqueued first dispatched first in
 * 50.4% of repeats. Beyond MOSAIC_DISPATCH_JITTER_US (the p99) the order is
 * taken to follow from the offset; within it both orders are predicted,
 * the one enqueued first with likelihood MOSAIC_ENQUEUED_FIRST_P. */
#define MOSAIC_DISPATCH_JITTER_US 3.2
#define MOSAIC_ENQUEUED_FIRST_P 0.504
/* The largest launch offset accepted, us (a second). */
#define MOSAIC_OFFSET_MAX_US 1e6

/* What a scheduler knows about a pair: the kernels, the mode and SM split,
 * and when each was enqueued, never the order the GPU will dispatch them. */
struct mosaic_pred_query {
    const struct mosaic_pkernel *a, *b;
    int mode;          /* enum mosaic_share_mode */
    int sms_a, sms_b;  /* partitioned: SMs of each side; shared: ignored */
    /* B's enqueue time minus A's, us, in [-MOSAIC_OFFSET_MAX_US,
     * MOSAIC_OFFSET_MAX_US]; 0: launched together (A taken as enqueued
     * first). Beyond the jitter the later kernel starts |offset| later and
     * its duration is counted from its own enqueue. */
    double offset_us;
    int protect;       /* 0: A, 1: B: the kernel whose conservative value is wanted */
    unsigned disable;  /* MOSAIC_PC_* bits to leave out; 0: use all */
    /* Isolated durations on the given SM counts (us), as measured (for a
     * co-run timed with events around one launch, the single launch timed
     * the same way); 0 or NaN: estimated from the profile (waves, the
     * per-SM speed-up fewer SMs give, DRAM share; docs/predictor.md). */
    double iso_a_us, iso_b_us;
};

struct mosaic_pred_kernel {
    double duration_us;  /* predicted co-run duration, from its own enqueue */
    double slowdown;     /* duration_us / iso_us */
    double iso_us;       /* the isolated duration used */
    double start_us;     /* when its first block is predicted to start, from the first dispatch */
    double waves;        /* waves on its SMs when alone */
    double placement;    /* slowdown from placement (waiting for SMs) */
    double packing;      /* factor from co-located block packing */
    double inter_sm;     /* factor from the inter-SM model */
    double intra_sm;     /* factor from the intra-SM model (with residual) */
};

/* The outcome of one dispatch order. */
struct mosaic_pred_result {
    struct mosaic_pred_kernel k[2]; /* [0] = A, [1] = B */
    double overlap_us;  /* time both kernels were running */
    double coresident;  /* fraction of the overlap with both on one SM */
    int cached;         /* 1 when the answer came from the cache */
};

/* A prediction: one outcome per dispatch order that can happen (one in
 * partitioned mode or beyond the jitter, else two), each with its
 * likelihood, and the conservative value for the protected kernel: its
 * longest predicted duration over those orders. */
struct mosaic_pred_answer {
    int n_orders;
    struct {
        int b_first;        /* B's blocks are dispatched first */
        double likelihood;  /* of this order; the orders' sum to 1 */
        struct mosaic_pred_result r;
    } order[2];
    int protect;                  /* as in the query */
    double conservative_us;       /* the protected kernel's worst duration */
    double conservative_slowdown; /* over its isolated duration */
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

/* Whether the profile prof (named what in messages) was taken on the GPU
 * the predictor's models are for (its SM count and compute capability;
 * mosaic_profile_check_gpu): a profile from another GPU (an A100's 108
 * SMs, sm_count 0 or null) must not be predicted with them. 0, or
 * MOSAIC_EFORMAT with a message naming the profile's GPU and the models'.
 * Call it before mosaic_pkernel_prepare on the profile's kernels. */
struct mosaic_profile;
int mosaic_predictor_check_profile(const struct mosaic_predictor *p,
                                   const struct mosaic_profile *prof, const char *what,
                                   char *err, size_t errlen);

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

/* Predicts every dispatch order the query allows; ans is fully written on
 * success, zeroed on error (MOSAIC_EINVAL: a bad split, offset or
 * protected index, named in err). */
int mosaic_predict(struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                   struct mosaic_pred_answer *ans, char *err, size_t errlen);

/* A protected (HP) kernel overlapping best-effort kernels in turn, as eq. 5
 * admission needs it: the BE kernels run in order on one stream (each
 * starts at its enqueue time or when the one before it ends, whichever is
 * later), all times in us from the HP kernel's enqueue. While a BE kernel
 * runs, the HP kernel runs slower by the in-overlap factor of their pair
 * prediction (the conservative order when the BE kernel starts within the
 * dispatch jitter of the HP kernel, else HP first); the HP kernel's
 * progress is summed over the pieces (docs/predictor.md, "Timelines of
 * more than two kernels"). */
#define MOSAIC_TIMELINE_MAX 16
struct mosaic_timeline_query {
    const struct mosaic_pkernel *hp;
    double hp_iso_us;       /* 0 or NaN: estimated */
    int mode;               /* enum mosaic_share_mode */
    int sms_hp, sms_be;     /* partitioned: the HP side's and the BE side's SMs */
    size_t n_be;            /* 1 .. MOSAIC_TIMELINE_MAX */
    struct {
        const struct mosaic_pkernel *k;
        double iso_us;      /* 0 or NaN: estimated */
        double enqueue_us;  /* >= 0, from the HP kernel's enqueue */
    } be[MOSAIC_TIMELINE_MAX];
    unsigned disable;       /* MOSAIC_PC_* bits */
};
struct mosaic_timeline_result {
    double hp_duration_us;  /* predicted (conservative), from its enqueue */
    double hp_iso_us;
    double hp_slowdown;
    double be_start_us[MOSAIC_TIMELINE_MAX], be_end_us[MOSAIC_TIMELINE_MAX];
    size_t n_overlapping;   /* BE kernels that start before the HP kernel ends */
};
int mosaic_predict_timeline(struct mosaic_predictor *p, const struct mosaic_timeline_query *q,
                            struct mosaic_timeline_result *res, char *err, size_t errlen);

/* Per-pair cache, keyed by both kernels' identities (their key hashes), the
 * mode, the SM split, the dispatch order, the start delay (buckets of 0.25
 * us), the components and the isolated durations (buckets of 1/32 of an
 * octave, 2.2%): a re-measured duration in the same bucket hits, and the
 * cached slowdowns are applied to the durations given. entries 0 disables
 * it (the default), else rounded up to a power of two. */
int mosaic_predictor_set_cache(struct mosaic_predictor *p, size_t entries);

#ifdef __cplusplus
}
#endif
#endif
