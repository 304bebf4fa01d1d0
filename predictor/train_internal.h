/*
 * The training side of the predictor, internal: what mosaic-train (and the
 * tests and benchmarks) need beyond include/mosaic/predict.h. Training reads
 * the prepared kernels' metrics, builds the models' feature rows from the
 * dataset, fits the analytic coefficients inside a predictor assembled from
 * parts and scores it point by point; no service should do any of that, so
 * it stays out of the public header. Not installed; include only from
 * tools/mosaic_train.c, tests/ and predictor/.
 */
#ifndef MOSAIC_PREDICTOR_TRAIN_INTERNAL_H
#define MOSAIC_PREDICTOR_TRAIN_INTERNAL_H

#include "feature_list.h"
#include "linreg.h"
#include "placement.h"
#include "predictor_internal.h"

/* ---- a predictor from parts (predict.c) ----------------------------------- */

/* Opens with already-loaded parts (either forest may be NULL: factor 1;
 * g NULL: the H200; c NULL: the default coefficients). The predictor owns
 * the forests. */
int mosaic__predictor_from_parts(const struct mosaic_gpu_desc *g,
                                 struct mosaic__forest *inter,
                                 struct mosaic__forest *shared,
                                 const struct mosaic__coef *c,
                                 struct mosaic_predictor **out);
/* A prediction that also returns the shared-mode residual rows xa and xb
 * (MOSAIC__NF_SHARED floats each, may be NULL; untouched in partitioned
 * mode); the query is not checked and the cache not used. */
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
int mosaic__dataset_load(const char *dir, const struct mosaic_predictor *p,
                         struct mosaic__dataset *ds, char *err, size_t errlen);
void mosaic__dataset_free(struct mosaic__dataset *ds);

/* ---- evaluation (eval.c) ------------------------------------------------- */

/* p50/p95 of the absolute percentage errors. */
void mosaic__eval_pcts(double *e, size_t n, double *p50, double *p95);
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
int mosaic__eval_points(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                        int fam, unsigned comp, struct mosaic__errs errs[2], char *err,
                        size_t errlen);
int mosaic__errs_push(struct mosaic__errs *e, double v);
void mosaic__errs_free(struct mosaic__errs *e);

#endif
