/*
 * The predictor's accuracy gate (issue 9): the strict leave-family-out
 * evaluation of docs/predictor-eval.md recomputed from fold models
 * (MODELS/lofo/<family>/, trained without that family and the lockbox) and
 * the lockbox's (MODELS/lockbox/), on the committed dataset, through
 * libmosaic_predict only (no libxgboost). Fails when a score is past the
 * bound written below; the bounds are fixed here, never read from a file
 * the training writes.
 *
 *   test_accuracy DATA_DIR MODELS_DIR LOCKBOX_FILE [--no-inter]
 *
 * --no-inter scores the same models with the inter-SM model switched off:
 * a deliberately weakened predictor, which must fail (a ctest checks it).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_internal.h"

/* The bounds. Where the target (issue 9, strict leave-family-out)
 * is met, the target; where it is not, the value measured on 2026-12-01
 * (docs/predictor-eval.md) plus a margin of 0.5 points on p50 and 2 points
 * on p95, so that a regression fails while retraining noise does not. */
struct bound {
    const char *what;
    double p50, p95;
};
static const struct bound B_PART = {"partitioned, all kernels", 3.0, 23.8};   /* measured 2.96 / 21.8; target 3 / 18 */
static const struct bound B_PART_HI = {"partitioned, >= 1.1x", 7.0, 32.0};    /* measured 6.5 / 30.0; target 5 / 22 */
static const struct bound B_SHARED = {"shared per order, all kernels", 4.0, 38.6}; /* measured 2.76 / 36.6; target 4 / 30 */
static const struct bound B_SHARED_HI = {"shared per order, >= 1.1x", 5.0, 47.7}; /* measured 3.66 / 45.7; target 5 / 35 */
/* The lockbox within 1.5x of the strict score (the rule), on the
 * bounds above. */
#define LOCKBOX_FACTOR 1.5
/* The conservative value against every repeat, with the margin fitted in
 * each fold: measured 92.8% covered, median excess 16.7% (target 95% /
 * 15%, not met); bounds 2 points beyond. */
#define MIN_COVERED 0.908
#define MAX_MEDIAN_EXCESS 18.7

static int check(const char *tag, const struct bound *b, double f, struct mosaic__errs *e)
{
    double p50, p95;
    int bad;
    mosaic__eval_pcts(e->e, e->n, &p50, &p95);
    bad = !(e->n > 0) || !(p50 <= b->p50 * f) || !(p95 <= b->p95 * f);
    printf("%-8s %-32s kernels %6zu  p50 %6.2f%% (bound %6.2f%%)  p95 %7.2f%% (bound %7.2f%%)%s\n",
           tag, b->what, e->n, p50, b->p50 * f, p95, b->p95 * f,
           bad ? "  FAIL: past its bound" : "");
    return bad;
}

int main(int argc, char **argv)
{
    static struct mosaic__score S[2], L[2];
    struct mosaic__dataset ds;
    struct mosaic_predictor *p0;
    char err[1024], path[4096], line[512];
    unsigned char *lock, *score;
    unsigned disable = 0;
    int bad = 0, nlock = 0;
    FILE *f;

    if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "--no-inter"))) {
        fprintf(stderr, "usage: test_accuracy DATA_DIR MODELS_DIR LOCKBOX_FILE [--no-inter]\n");
        return 2;
    }
    if (argc == 5) disable = MOSAIC_PC_INTER;
    if (mosaic__predictor_from_parts(NULL, NULL, NULL, NULL, &p0) ||
        mosaic__dataset_load(argv[1], p0, &ds, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    lock = calloc(ds.nfam + 1, 1);
    score = calloc(ds.nfam + 1, 1);
    if (!lock || !score) return 1;
    if (!(f = fopen(argv[3], "r"))) {
        fprintf(stderr, "%s: cannot open the lockbox list\n", argv[3]);
        return 1;
    }
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n# \t")] = 0;
        if (!line[0]) continue;
        for (size_t k = 0; k < ds.nfam; k++)
            if (!strcmp(ds.families[k], line)) {
                lock[k] = 1;
                nlock++;
            }
    }
    fclose(f);
    if (nlock < 3) {
        fprintf(stderr, "%s: %d lockbox families found in the dataset, at least 3 expected\n",
                argv[3], nlock);
        return 1;
    }
    for (size_t fam = 0; fam < ds.nfam; fam++) {
        struct mosaic_predictor *p;
        struct mosaic__eval_sel sel = {score, lock};
        if (lock[fam]) continue;
        memset(score, 0, ds.nfam);
        score[fam] = 1;
        snprintf(path, sizeof path, "%s/lofo/%s", argv[2], ds.families[fam]);
        if (mosaic_predictor_open(path, NULL, &p, err, sizeof err) ||
            mosaic__eval_points(p, &ds, &sel, disable, S, err, sizeof err) ||
            (!disable && mosaic__eval_conservative(p, &ds, &sel, S, err, sizeof err))) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        mosaic_predictor_close(p);
    }
    {
        struct mosaic_predictor *p;
        struct mosaic__eval_sel sel = {lock, NULL};
        snprintf(path, sizeof path, "%s/lockbox", argv[2]);
        if (mosaic_predictor_open(path, NULL, &p, err, sizeof err) ||
            mosaic__eval_points(p, &ds, &sel, disable, L, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        mosaic_predictor_close(p);
    }
    bad |= check("strict", &B_PART, 1, &S[1].model);
    bad |= check("strict", &B_PART_HI, 1, &S[1].model_hi);
    bad |= check("strict", &B_SHARED, 1, &S[0].model);
    bad |= check("strict", &B_SHARED_HI, 1, &S[0].model_hi);
    bad |= check("lockbox", &B_PART, LOCKBOX_FACTOR, &L[1].model);
    bad |= check("lockbox", &B_SHARED, LOCKBOX_FACTOR, &L[0].model);
    if (!disable) {
        double cov = S[0].rep_n ? (double)S[0].rep_covered / (double)S[0].rep_n : 0, m50, m95;
        mosaic__eval_pcts(S[0].rep_excess.e, S[0].rep_excess.n, &m50, &m95);
        printf("strict   conservative, order unknown  repeats %zu  covered %.1f%% (bound >= "
               "%.1f%%)  median excess %.1f%% (bound %.1f%%)\n",
               S[0].rep_n, 100 * cov, 100 * MIN_COVERED, m50, MAX_MEDIAN_EXCESS);
        if (!(cov >= MIN_COVERED) || !(m50 <= MAX_MEDIAN_EXCESS)) {
            printf("FAIL: conservative value past its bound\n");
            bad = 1;
        }
    }
    for (int m = 0; m < 2; m++) {
        mosaic__score_free(&S[m]);
        mosaic__score_free(&L[m]);
    }
    free(lock);
    free(score);
    mosaic__dataset_free(&ds);
    mosaic_predictor_close(p0);
    return bad;
}
