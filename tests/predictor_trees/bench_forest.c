/*
 * ns per mosaic__forest_predict for a synthetic 100-tree model of complete
 * depth-6 trees (the inter-SM model's size), on one core. The model is
 * generated as XGBoost JSON and loaded through mosaic__forest_load_string, so
 * the benchmark measures exactly what the predictor runs; no libxgboost is
 * needed. Prints a table of the median and spread over many runs; asserts
 * nothing about time.
 *
 *   bench_forest [RUNS] [ROWS]
 */
#define _GNU_SOURCE 1
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trees.h"

#define NFEAT 24

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static float rng_unit(uint64_t *s)
{
    return (float)((rng_next(s) >> 40) / 16777216.0);
}

/* A complete binary tree of the given depth, nodes numbered breadth first as
 * XGBoost numbers a depth-wise grown tree. */
static cJSON *make_tree(int id, int depth, uint64_t *s)
{
    int n = (1 << (depth + 1)) - 1, inner = (1 << depth) - 1;
    cJSON *t = cJSON_CreateObject();
    cJSON *lc = cJSON_AddArrayToObject(t, "left_children");
    cJSON *rc = cJSON_AddArrayToObject(t, "right_children");
    cJSON *si = cJSON_AddArrayToObject(t, "split_indices");
    cJSON *sc = cJSON_AddArrayToObject(t, "split_conditions");
    cJSON *dl = cJSON_AddArrayToObject(t, "default_left");
    cJSON *bw = cJSON_AddArrayToObject(t, "base_weights");

    cJSON_AddNumberToObject(t, "id", id);
    for (int i = 0; i < n; i++) {
        int leaf = i >= inner;
        float v = leaf ? (rng_unit(s) - 0.5f) * 0.1f : rng_unit(s);
        cJSON_AddItemToArray(lc, cJSON_CreateNumber(leaf ? -1 : 2 * i + 1));
        cJSON_AddItemToArray(rc, cJSON_CreateNumber(leaf ? -1 : 2 * i + 2));
        cJSON_AddItemToArray(si, cJSON_CreateNumber(leaf ? 0 : (double)(rng_next(s) % NFEAT)));
        cJSON_AddItemToArray(sc, cJSON_CreateNumber(v));
        cJSON_AddItemToArray(dl, cJSON_CreateNumber((double)(rng_next(s) & 1)));
        cJSON_AddItemToArray(bw, cJSON_CreateNumber(v));
    }
    return t;
}

static char *make_model(int ntrees, int depth)
{
    uint64_t s = 88172645463325252ULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *learner = cJSON_AddObjectToObject(root, "learner");
    cJSON *obj = cJSON_AddObjectToObject(learner, "objective");
    cJSON *mp = cJSON_AddObjectToObject(learner, "learner_model_param");
    cJSON *gb = cJSON_AddObjectToObject(learner, "gradient_booster");
    cJSON *model = cJSON_AddObjectToObject(gb, "model");
    cJSON *trees = cJSON_AddArrayToObject(model, "trees");
    char nf[16], *text;

    cJSON_AddStringToObject(obj, "name", "reg:squarederror");
    cJSON_AddStringToObject(gb, "name", "gbtree");
    snprintf(nf, sizeof(nf), "%d", NFEAT);
    cJSON_AddStringToObject(mp, "num_feature", nf);
    cJSON_AddStringToObject(mp, "base_score", "5E-1");
    for (int t = 0; t < ntrees; t++)
        cJSON_AddItemToArray(trees, make_tree(t, depth, &s));
    text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ns per prediction over rows (one run), and a checksum so that the calls
 * cannot be optimised away. */
static double time_run(const struct mosaic__forest *f, const float *X, int rows,
                       double *checksum)
{
    double t0 = now_ns(), sum = 0;
    for (int i = 0; i < rows; i++)
        sum += mosaic__forest_predict(f, &X[(size_t)i * NFEAT]);
    *checksum += sum;
    return (now_ns() - t0) / rows;
}

static void bench(const char *label, int ntrees, int depth, double nan_fraction, int runs,
                  int rows)
{
    char *text = make_model(ntrees, depth), err[512];
    struct mosaic__forest *f;
    float *X = malloc(sizeof(float) * (size_t)rows * NFEAT);
    double *ns = malloc(sizeof(double) * (size_t)runs), checksum = 0;
    uint64_t s = 2463534242ULL;

    if (!text || !X || !ns || mosaic__forest_load_string(text, label, &f, err, sizeof(err))) {
        fprintf(stderr, "bench_forest: %s\n", text ? err : "out of memory");
        exit(1);
    }
    for (int i = 0; i < rows * NFEAT; i++)
        X[i] = rng_unit(&s) < nan_fraction ? NAN : rng_unit(&s);
    time_run(f, X, rows, &checksum); /* warm the caches */
    for (int r = 0; r < runs; r++)
        ns[r] = time_run(f, X, rows, &checksum);
    qsort(ns, (size_t)runs, sizeof(double), cmp_double);
    printf("| %-26s | %5d | %5d | %8.1f | %8.1f | %8.1f | %8.1f |\n", label, ntrees, depth,
           ns[0], ns[runs / 2], ns[(runs * 9) / 10], ns[runs / 2] / ntrees);
    if (checksum == 42.0)
        printf("(checksum)\n");
    mosaic__forest_free(f);
    free(text);
    free(X);
    free(ns);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 201;
    int rows = argc > 2 ? atoi(argv[2]) : 1000;

    if (runs < 1 || rows < 1) {
        fprintf(stderr, "usage: %s [RUNS] [ROWS]\n", argv[0]);
        return 2;
    }
    printf("mosaic__forest_predict, one core, %d runs of %d rows (ns per prediction)\n\n",
           runs, rows);
    printf("| %-26s | %5s | %5s | %8s | %8s | %8s | %8s |\n", "model", "trees", "depth",
           "min", "median", "p90", "per tree");
    printf("|----------------------------|-------|-------|----------|----------|----------|----------|\n");
    bench("100 x depth 6", 100, 6, 0.0, runs, rows);
    bench("100 x depth 6, 10% NaN", 100, 6, 0.1, runs, rows);
    bench("50 x depth 6", 50, 6, 0.0, runs, rows);
    bench("200 x depth 6", 200, 6, 0.0, runs, rows);
    return 0;
}
