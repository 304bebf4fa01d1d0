/*
 * Internals of the Mosaic predictor: prepared kernels, placement, the
 * feature rows of the models, the dataset reader and the evaluation.
 */
#ifndef MOSAIC_PREDICTOR_INTERNAL_H
#define MOSAIC_PREDICTOR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mosaic/predict.h"
#include "profile.h"
#include "trees.h"

/* The predictor's public functions (include/mosaic/predict.h) are exported
 * when the library is linked into a shared object built with hidden
 * visibility; the internals below are not. */
#define MOSAIC__API __attribute__((visibility("default")))

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
int mosaic__place_occupancy(const struct mosaic_gpu_desc *g,
                           const struct mosaic_kernel *k, int *bps,
                           int *smem_cfg, int *smem_block, int *regs_block);
/* Waves of a grid on n SMs (real: full waves + last-wave fraction). */
double mosaic__place_waves(const struct mosaic_pkernel *k, int n);
/* Blocks of s that fit on an SM holding nf blocks of f (0: none; the
 * carveout rule of docs/placement.md). */
int mosaic__place_room(const struct mosaic_gpu_desc *g,
                      const struct mosaic_pkernel *f, int nf,
                      const struct mosaic_pkernel *s);
/* Isolated duration estimate on n SMs from the full-GPU profile (predict.c:
 * DRAM-bound part by the bandwidth n SMs reach, the rest by waves, or for a
 * kernel of less than one wave by rounds and block packing). */
double mosaic__place_iso_on(const struct mosaic_gpu_desc *g,
                           const struct mosaic_pkernel *k, int n);

/* ---- model features ------------------------------------------------------ */

#define MOSAIC__NF_INTER 33
#define MOSAIC__NF_SHARED 47
void mosaic__feat_inter(const struct mosaic_gpu_desc *g,
                       const struct mosaic_pkernel *self, int sms_self, double iso_self,
                       const struct mosaic_pkernel *other, int sms_other, double iso_other,
                       float *x);

/* Analytic coefficients (analytic.json). */
struct mosaic__coef {
    double pack;      /* weight of the block-packing term (eq. 1-2) */
    double gap_us;    /* dispatch gap of the second kernel, us */
    double intra_w;   /* weight of the analytic intra-SM contention term */
};

/* The shared-mode timeline; fills res and the residual feature row x
 * (MOSAIC__NF_SHARED floats, may be NULL). inter_a/b: inter-SM factors. */
void mosaic__timeline_shared(const struct mosaic_gpu_desc *g,
                            const struct mosaic__coef *c,
                            const struct mosaic_pkernel *a,
                            const struct mosaic_pkernel *b, int b_first,
                            double iso_a, double iso_b, double inter_a,
                            double inter_b, unsigned comp,
                            struct mosaic_pred_result *res, float *xa,
                            float *xb);

/* Predictor internals used by the training tool. */
struct mosaic_predictor {
    struct mosaic_gpu_desc gpu;
    struct mosaic__forest *inter;  /* log slowdown, partitioned-trained */
    struct mosaic__forest *shared; /* log residual of the shared timeline */
    struct mosaic__coef coef;
    /* cache */
    struct mosaic__cache_ent *cache;
    size_t cache_mask;
};
struct mosaic__cache_ent {
    uint64_t tag, ha, hb;
    uint64_t cfg; /* mode, sms, order, comp */
    double iso_a, iso_b;
    struct mosaic_pred_result res;
    int used;
};

/* Opens with already-loaded parts (either forest may be NULL: factor 1). */
int mosaic__predictor_from_parts(const struct mosaic_gpu_desc *g,
                                           struct mosaic__forest *inter,
                                           struct mosaic__forest *shared,
                                           const struct mosaic__coef *c,
                                           struct mosaic_predictor **out);
int mosaic__coef_load(const char *path, struct mosaic__coef *c,
                                char *err, size_t errlen);
int mosaic__coef_save(const char *path, const struct mosaic__coef *c,
                                char *err, size_t errlen);
void mosaic__coef_default(struct mosaic__coef *c);
/* The predictor's shared-mode residual rows (for training). */
int mosaic__predict_rows(struct mosaic_predictor *p,
                                   const struct mosaic_pred_query *q,
                                   struct mosaic_pred_result *res, float *xa,
                                   float *xb);

/* ---- dataset (dataset.c) ------------------------------------------------- */

struct mosaic__ds_variant {
    char *name;
    char *family;
    int fam;             /* family index */
    long kernel;         /* index of the main kernel in the profile */
    struct mosaic_pkernel *pk;
};

/* One test/training point: a measurement (shared: one observed dispatch
 * order of it). */
struct mosaic__ds_point {
    int mode;
    int sms_a, sms_b;
    int b_first;
    int va, vb;          /* variant indices */
    double iso_a, iso_b; /* gated isolated durations, us */
    double meas_a, meas_b; /* co-run durations, us (median of the group) */
    int nsamples;
};

struct mosaic__dataset {
    struct mosaic_profile prof;
    struct mosaic__ds_variant *v;
    size_t nv;
    char **families;
    size_t nfam;
    struct mosaic__ds_point *pt;
    size_t npt, cappt;
    size_t n_records;
};

/* Reads dir/zoo.profile.json, variants.jsonl, variant_kernels.json and
 * corun.jsonl; prepares the kernels with p's GPU. */
int mosaic__dataset_load(const char *dir,
                                   const struct mosaic_predictor *p,
                                   struct mosaic__dataset *ds, char *err,
                                   size_t errlen);
void mosaic__dataset_free(struct mosaic__dataset *ds);

/* ---- evaluation (eval.c) ------------------------------------------------- */

/* p50/p95 of the absolute percentage errors. */
void mosaic__eval_pcts(double *e, size_t n, double *p50,
                                 double *p95);
/* Predicts every point of the dataset that involves family fam (-1: all)
 * with predictor p and components comp; appends the abs. % errors of both
 * kernels' co-run durations to errs[mode] (grown with realloc). */
struct mosaic__errs {
    double *e;
    size_t n, cap;
};
/* An evaluation flag beside the MOSAIC_PC_* bits of mosaic__eval_points'
 * comp: leave the isolated durations out of the queries, so that the
 * predictor estimates them from the profiles (mosaic__place_iso_on). */
#define MOSAIC__EVAL_EST_ISO 0x100u
int mosaic__eval_points(struct mosaic_predictor *p,
                                  const struct mosaic__dataset *ds, int fam,
                                  unsigned comp, struct mosaic__errs errs[2],
                                  char *err, size_t errlen);
int mosaic__errs_push(struct mosaic__errs *e, double v);
void mosaic__errs_free(struct mosaic__errs *e);

#endif
