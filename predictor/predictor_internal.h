/*
 * Internals of the Mosaic predictor: prepared kernels, placement, the
 * feature rows of the models, the dataset reader and the evaluation.
 */
#ifndef MOSAIC_PREDICTOR_INTERNAL_H
#define MOSAIC_PREDICTOR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mosaic/predict.h"
#include "mosaic/profile.h"
#include "trees.h"

#define MOSAIC_VIS __attribute__((visibility("default")))

/* ---- prepared kernel ---------------------------------------------------- */

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
    /* features (units: us, GB/s, fractions) */
    double dur_us;
    double dram_rd, dram_wr, l2_rd, l2_wr; /* GB/s */
    double warps_elig, stall_lsb, stall_mio, issue, ipc;
    double pipe[8];   /* fma alu xu lsu hmma gmma fp64, l1 (wavefronts), fractions */
    double c2lsu, spr, l1_hit, l2_hit, occ;
    double cyc_min, cyc_avg, cyc_max;
    double follow_us; /* a dependent kernel after it on its stream, us; 0: none */
    double lc2lsu, lgrid; /* log1p(c2lsu), log2(grid): precomputed features */
};

/* ---- placement (placement.c) -------------------------------------------- */

/* Occupancy from the GPU's limits (exact, cuda_occupancy.h rules). */
int mosaic_place_occupancy(const struct mosaic_gpu_desc *g,
                           const struct mosaic_kernel *k, int *bps,
                           int *smem_cfg, int *smem_block, int *regs_block);
/* Waves of a grid on n SMs (real: full waves + last-wave fraction). */
double mosaic_place_waves(const struct mosaic_pkernel *k, int n);
/* Blocks of s that fit on an SM holding nf blocks of f (0: none; the
 * carveout rule of docs/placement.md). */
int mosaic_place_room(const struct mosaic_gpu_desc *g,
                      const struct mosaic_pkernel *f, int nf,
                      const struct mosaic_pkernel *s);
/* Isolated duration estimate on n SMs from the full-GPU profile (predict.c:
 * DRAM-bound part by the bandwidth n SMs reach, the rest by waves, or for a
 * kernel of less than one wave by rounds and block packing). */
double mosaic_place_iso_on(const struct mosaic_gpu_desc *g,
                           const struct mosaic_pkernel *k, int n);

/* ---- model features ------------------------------------------------------ */

#define MOSAIC_NF_INTER 33
#define MOSAIC_NF_SHARED 47
void mosaic_feat_inter(const struct mosaic_gpu_desc *g,
                       const struct mosaic_pkernel *self, int sms_self, double iso_self,
                       const struct mosaic_pkernel *other, int sms_other, double iso_other,
                       float *x);

/* Analytic coefficients (analytic.json). */
struct mosaic_coef {
    double pack;      /* weight of the block-packing term (eq. 1-2) */
    double gap_us;    /* dispatch gap of the second kernel, us */
    double intra_w;   /* weight of the analytic intra-SM contention term */
};

/* The shared-mode timeline; fills res and the residual feature row x
 * (MOSAIC_NF_SHARED floats, may be NULL). inter_a/b: inter-SM factors. */
void mosaic_timeline_shared(const struct mosaic_gpu_desc *g,
                            const struct mosaic_coef *c,
                            const struct mosaic_pkernel *a,
                            const struct mosaic_pkernel *b, int b_first,
                            double iso_a, double iso_b, double inter_a,
                            double inter_b, unsigned comp,
                            struct mosaic_pred_result *res, float *xa,
                            float *xb);

/* Predictor internals used by the training tool. */
struct mosaic_predictor {
    struct mosaic_gpu_desc gpu;
    struct mosaic_forest *inter;  /* log slowdown, partitioned-trained */
    struct mosaic_forest *shared; /* log residual of the shared timeline */
    struct mosaic_coef coef;
    /* cache */
    struct mosaic_cache_ent *cache;
    size_t cache_mask;
};
struct mosaic_cache_ent {
    uint64_t tag, ha, hb;
    uint64_t cfg; /* mode, sms, order, comp */
    double iso_a, iso_b;
    struct mosaic_pred_result res;
    int used;
};

/* Opens with already-loaded parts (either forest may be NULL: factor 1). */
MOSAIC_VIS int mosaic_predictor_from_parts(const struct mosaic_gpu_desc *g,
                                           struct mosaic_forest *inter,
                                           struct mosaic_forest *shared,
                                           const struct mosaic_coef *c,
                                           struct mosaic_predictor **out);
MOSAIC_VIS int mosaic_coef_load(const char *path, struct mosaic_coef *c,
                                char *err, size_t errlen);
MOSAIC_VIS int mosaic_coef_save(const char *path, const struct mosaic_coef *c,
                                char *err, size_t errlen);
MOSAIC_VIS void mosaic_coef_default(struct mosaic_coef *c);
/* The predictor's shared-mode residual rows (for training). */
MOSAIC_VIS int mosaic_predict_rows(struct mosaic_predictor *p,
                                   const struct mosaic_pred_query *q,
                                   struct mosaic_pred_result *res, float *xa,
                                   float *xb);

/* ---- dataset (dataset.c) ------------------------------------------------- */

struct mosaic_ds_variant {
    char *name;
    char *family;
    int fam;             /* family index */
    long kernel;         /* index of the main kernel in the profile */
    struct mosaic_pkernel *pk;
};

/* One test/training point: a measurement (shared: one observed dispatch
 * order of it). */
struct mosaic_ds_point {
    int mode;
    int sms_a, sms_b;
    int b_first;
    int va, vb;          /* variant indices */
    double iso_a, iso_b; /* gated isolated durations, us */
    double meas_a, meas_b; /* co-run durations, us (median of the group) */
    int nsamples;
};

struct mosaic_dataset {
    struct mosaic_profile prof;
    struct mosaic_ds_variant *v;
    size_t nv;
    char **families;
    size_t nfam;
    struct mosaic_ds_point *pt;
    size_t npt, cappt;
    size_t n_records;
};

/* Reads dir/zoo.profile.json, variants.jsonl, variant_kernels.json and
 * corun.jsonl; prepares the kernels with p's GPU. */
MOSAIC_VIS int mosaic_dataset_load(const char *dir,
                                   const struct mosaic_predictor *p,
                                   struct mosaic_dataset *ds, char *err,
                                   size_t errlen);
MOSAIC_VIS void mosaic_dataset_free(struct mosaic_dataset *ds);

/* ---- evaluation (eval.c) ------------------------------------------------- */

/* p50/p95 of the absolute percentage errors. */
MOSAIC_VIS void mosaic_eval_pcts(double *e, size_t n, double *p50,
                                 double *p95);
/* Predicts every point of the dataset that involves family fam (-1: all)
 * with predictor p and components comp; appends the abs. % errors of both
 * kernels' co-run durations to errs[mode] (grown with realloc). */
struct mosaic_errs {
    double *e;
    size_t n, cap;
};
/* An evaluation flag beside the MOSAIC_PC_* bits of mosaic_eval_points'
 * comp: leave the isolated durations out of the queries, so that the
 * predictor estimates them from the profiles (mosaic_place_iso_on). */
#define MOSAIC_EVAL_EST_ISO 0x100u
MOSAIC_VIS int mosaic_eval_points(struct mosaic_predictor *p,
                                  const struct mosaic_dataset *ds, int fam,
                                  unsigned comp, struct mosaic_errs errs[2],
                                  char *err, size_t errlen);
MOSAIC_VIS int mosaic_errs_push(struct mosaic_errs *e, double v);
MOSAIC_VIS void mosaic_errs_free(struct mosaic_errs *e);

#endif
