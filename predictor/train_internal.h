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
/* A prediction in one dispatch order (b_first) at the query's offset taken
 * as within the jitter, that also returns the shared-mode residual rows xa
 * and xb (MOSAIC__NF_SHARED floats each, may be NULL; untouched in
 * partitioned mode); the query is not checked and the cache not used. */
int mosaic__predict_rows(struct mosaic_predictor *p,
                         const struct mosaic_pred_query *q, int b_first,
                         struct mosaic_pred_result *res, float *xa,
                         float *xb);
/* One dispatch order, checked and cached, as a scheduler that makes the
 * order certain (it releases B only once A has dispatched) meets it: what
 * the per-order evaluation scores and what mosaic_predict calls once per
 * order. Beyond the jitter b_first must be the order the offset gives
 * (MOSAIC_EINVAL otherwise); partitioned mode ignores it. */
int mosaic__predict_order(struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                          int b_first, struct mosaic_pred_result *res, char *err,
                          size_t errlen);

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

/* One measurement whole: every repeat of both kernels, and the enqueue
 * order, which is all a scheduler knows. */
struct mosaic__ds_record {
    int mode, sms_a, sms_b, va, vb;
    int enq_b_first;     /* B was enqueued first ("order": "ba") */
    double iso_a, iso_b; /* gated isolated durations, us */
    int n;
    double *samples;     /* n pairs: A's and B's co-run duration, us */
};

struct mosaic__dataset {
    struct mosaic_profile prof;
    struct mosaic__ds_record *rec;
    size_t nrec, caprec;
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

/* A growing array of absolute percentage errors. */
struct mosaic__errs {
    double *e;
    size_t n, cap;
};
int mosaic__errs_push(struct mosaic__errs *e, double v);
void mosaic__errs_free(struct mosaic__errs *e);
/* p50/p95 of e (nearest rank; sorts e; NaN when empty). */
void mosaic__eval_pcts(double *e, size_t n, double *p50, double *p95);

/* The rows a scheduler must get right: measured slowdown at least this. */
#define MOSAIC__EVAL_HI 1.1

/* One mode's score: the model's and the no-interference floor's (predict
 * the isolated duration) abs. % errors on every scored kernel, and on the
 * kernels measured >= MOSAIC__EVAL_HI; in shared mode also the
 * conservative value against every single repeat (share of repeats where
 * it is >= the measured duration, and the signed excess in %). */
struct mosaic__score {
    struct mosaic__errs model, floor, model_hi, floor_hi;
    size_t rep_n, rep_covered;
    struct mosaic__errs rep_excess;
};
void mosaic__score_free(struct mosaic__score *s);

/* Which kernels count: those of the families with score[f] set (NULL:
 * every kernel), in the rows that involve no family with skip[f] set
 * (NULL: none). Strict leave-family-out scores fold f with score = {f} and
 * skip = the lockbox; a model trained without every family scored sees
 * none of the scored kernels. */
struct mosaic__eval_sel {
    const unsigned char *score, *skip;
};

/* An evaluation flag beside the MOSAIC_PC_* bits of mosaic__eval_points'
 * comp: leave the isolated durations out of the queries, so that the
 * predictor estimates them from the profiles (mosaic__place_iso_on). */
#define MOSAIC__EVAL_EST_ISO 0x100u
/* Scores every point of the dataset the selection takes, per observed
 * dispatch order (as a scheduler that makes the order certain meets it),
 * with predictor p; comp: MOSAIC_PC_* bits to disable, and EST_ISO.
 * Appends to sc[mode]. */
int mosaic__eval_points(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                        const struct mosaic__eval_sel *sel, unsigned comp,
                        struct mosaic__score sc[2], char *err, size_t errlen);
/* Shared mode, order unknown: for every measurement the selection takes,
 * the conservative value of each scored kernel (mosaic_predict with the
 * record's enqueue order, protect = that kernel) against every repeat;
 * appends to sc[MOSAIC_MODE_SHARED]. */
int mosaic__eval_conservative(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                              const struct mosaic__eval_sel *sel, struct mosaic__score sc[2],
                              char *err, size_t errlen);

#endif
