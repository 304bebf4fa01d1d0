/*
 * predictor/trees.c against libxgboost itself: small regression models are
 * trained here with the xgboost C API, saved as JSON, loaded with
 * mosaic__forest_load, and both predict 1000 rows (copies of training rows,
 * so that features equal to thresholds occur, fresh random rows, and rows
 * with NaN features). The two must agree within 1e-5, relative.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <xgboost/c_api.h>

#include "trees.h"

#define N_TEST_ROWS 1000
#define REL_TOL 1e-5

struct train_cfg {
    int nrows, nfeat;
    const char *max_depth, *tree_method, *gamma, *grow_policy;
    int rounds;
    double nan_fraction;
    unsigned seed;
};

/* A deterministic generator, so that a failure reproduces. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

/* A target with interactions and a dependence on missingness, so that the
 * trees use many features and both default directions. */
static float target(const float *x, int d)
{
    double y = 0;
    for (int j = 0; j < d; j++) {
        double v = isnan(x[j]) ? (j % 2 ? 2.0 : -1.5) : x[j];
        y += (j + 1) * sin(v * (1 + j % 3)) + (j % 4 == 0 ? v * v : 0);
    }
    return (float)y;
}

static void random_rows(float *X, int n, int d, double nan_fraction, uint64_t *s)
{
    for (int i = 0; i < n * d; i++) {
        /* Values on a coarse grid repeat, as counters in profiles do. */
        X[i] = (float)((int)(rng_unit(s) * 400) / 100.0 - 2.0);
        if (rng_unit(s) < nan_fraction)
            X[i] = NAN;
    }
}

static void check_xgb(int rc)
{
    if (rc != 0)
        fail_msg("xgboost: %s", XGBGetLastError());
}

/* Trains a model on random data and saves it to path; returns the booster
 * and the training matrix (for rows to test on). */
static BoosterHandle train(const struct train_cfg *c, const char *path, float **Xtrain)
{
    uint64_t s = 0x9e3779b97f4a7c15ULL ^ c->seed;
    float *X = malloc(sizeof(float) * (size_t)c->nrows * (size_t)c->nfeat);
    float *y = malloc(sizeof(float) * (size_t)c->nrows);
    DMatrixHandle dm;
    BoosterHandle b;

    assert_non_null(X);
    assert_non_null(y);
    random_rows(X, c->nrows, c->nfeat, c->nan_fraction, &s);
    for (int i = 0; i < c->nrows; i++)
        y[i] = target(&X[(size_t)i * c->nfeat], c->nfeat);
    check_xgb(XGDMatrixCreateFromMat(X, (bst_ulong)c->nrows, (bst_ulong)c->nfeat, NAN, &dm));
    check_xgb(XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)c->nrows));
    check_xgb(XGBoosterCreate(&dm, 1, &b));
    check_xgb(XGBoosterSetParam(b, "objective", "reg:squarederror"));
    check_xgb(XGBoosterSetParam(b, "max_depth", c->max_depth));
    check_xgb(XGBoosterSetParam(b, "eta", "0.1"));
    check_xgb(XGBoosterSetParam(b, "tree_method", c->tree_method));
    check_xgb(XGBoosterSetParam(b, "gamma", c->gamma));
    check_xgb(XGBoosterSetParam(b, "nthread", "1"));
    check_xgb(XGBoosterSetParam(b, "seed", "1"));
    if (c->grow_policy) {
        check_xgb(XGBoosterSetParam(b, "grow_policy", c->grow_policy));
        check_xgb(XGBoosterSetParam(b, "max_leaves", "40"));
    }
    for (int it = 0; it < c->rounds; it++)
        check_xgb(XGBoosterUpdateOneIter(b, it, dm));
    check_xgb(XGBoosterSaveModel(b, path));
    check_xgb(XGDMatrixFree(dm));
    free(y);
    *Xtrain = X;
    return b;
}

/* Test rows: a third copied from training rows, a third fresh, a third
 * fresh with half their features NaN. */
static float *test_rows(const struct train_cfg *c, const float *Xtrain, uint64_t *s)
{
    const int d = c->nfeat;
    float *X = malloc(sizeof(float) * N_TEST_ROWS * (size_t)d);

    assert_non_null(X);
    random_rows(X, N_TEST_ROWS, d, 0.0, s);
    for (int i = 0; i < N_TEST_ROWS; i++) {
        if (i % 3 == 0) {
            int r = (int)(rng_next(s) % (uint64_t)c->nrows);
            memcpy(&X[(size_t)i * d], &Xtrain[(size_t)r * d], sizeof(float) * (size_t)d);
        } else if (i % 3 == 2) {
            for (int j = 0; j < d; j++)
                if (rng_unit(s) < 0.5)
                    X[(size_t)i * d + j] = NAN;
        }
    }
    return X;
}

static void compare_model(const struct train_cfg *c)
{
    char path[] = "/tmp/mosaic_forest_xgb_XXXXXX.json";
    char err[512];
    float *Xtrain, *X;
    const float *pred;
    bst_ulong npred;
    DMatrixHandle dm;
    BoosterHandle b;
    struct mosaic__forest *f = NULL;
    uint64_t s = 12345u + c->seed;
    double worst = 0;
    int fd = mkstemps(path, 5);

    assert_true(fd >= 0);
    close(fd);
    b = train(c, path, &Xtrain);
    assert_int_equal(mosaic__forest_load(path, &f, err, sizeof(err)), 0);
    assert_int_equal(mosaic__forest_nfeatures(f), c->nfeat);
    assert_int_equal(mosaic__forest_ntrees(f), c->rounds);

    X = test_rows(c, Xtrain, &s);
    check_xgb(XGDMatrixCreateFromMat(X, N_TEST_ROWS, (bst_ulong)c->nfeat, NAN, &dm));
    check_xgb(XGBoosterPredict(b, dm, 0, 0, 0, &npred, &pred));
    assert_int_equal(npred, N_TEST_ROWS);
    for (int i = 0; i < N_TEST_ROWS; i++) {
        double ours = mosaic__forest_predict(f, &X[(size_t)i * c->nfeat]);
        double diff = fabs(ours - pred[i]) / fmax(1.0, fabs(pred[i]));
        if (diff > worst)
            worst = diff;
        if (diff > REL_TOL)
            fail_msg("row %d: mosaic %.9g, xgboost %.9g", i, ours, (double)pred[i]);
    }
    print_message("%s%s%s, max_depth %s, gamma %s, %d rounds, %d features: "
                  "max relative difference %.3g\n",
                  c->tree_method, c->grow_policy ? " " : "",
                  c->grow_policy ? c->grow_policy : "", c->max_depth, c->gamma, c->rounds,
                  c->nfeat, worst);

    check_xgb(XGDMatrixFree(dm));
    check_xgb(XGBoosterFree(b));
    mosaic__forest_free(f);
    free(X);
    free(Xtrain);
    unlink(path);
}

static void test_hist_depth6(void **state)
{
    (void)state;
    struct train_cfg c = {2000, 8, "6", "hist", "0", NULL, 50, 0.1, 1};
    compare_model(&c);
}

static void test_exact_depth6(void **state)
{
    (void)state;
    struct train_cfg c = {1500, 5, "6", "exact", "0", NULL, 50, 0.15, 2};
    compare_model(&c);
}

/* gamma > 0 makes the pruner delete nodes, which stay in the arrays with a
 * marker feature id and must be skipped. */
static void test_pruned(void **state)
{
    (void)state;
    struct train_cfg c = {1500, 6, "6", "exact", "2", NULL, 50, 0.1, 3};
    compare_model(&c);
}

/* Loss-guided growth numbers nodes in a different order. */
static void test_lossguide(void **state)
{
    (void)state;
    struct train_cfg c = {2000, 7, "0", "hist", "0", "lossguide", 50, 0.1, 4};
    compare_model(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hist_depth6),
        cmocka_unit_test(test_exact_depth6),
        cmocka_unit_test(test_pruned),
        cmocka_unit_test(test_lossguide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
