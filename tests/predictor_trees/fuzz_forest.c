/*
 * Fuzz target for the XGBoost model loader (predictor/trees.c): any input
 * must give either a forest that predicts a finite value or an error
 * message, never a crash, a leak or an out-of-bounds access.
 *
 * libFuzzer build (clang):
 *   clang -g -fsanitize=fuzzer,address -Ipredictor -Iinclude \
 *         tests/predictor_trees/fuzz_forest.c predictor/trees.c -lcjson -lm
 * Standalone build (any compiler; a ctest): with tests/fuzz_main.c, the
 * driver every fuzz target of the project shares.
 */
#define _GNU_SOURCE 1
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trees.h"

/* Larger feature counts are valid but would make the test row huge. */
#define MAX_PREDICT_FEATURES 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Predicts an all-NaN row and an all-zero row: every node path is followed
 * down to a leaf, so an invalid index would be caught by ASan. */
static void exercise(const struct mosaic__forest *f)
{
    int d = mosaic__forest_nfeatures(f);
    float *x;

    if (d <= 0 || d > MAX_PREDICT_FEATURES)
        return;
    x = malloc(sizeof(float) * (size_t)d);
    if (!x)
        return;
    for (int j = 0; j < d; j++)
        x[j] = NAN;
    if (!isfinite(mosaic__forest_predict(f, x)))
        abort();
    for (int j = 0; j < d; j++)
        x[j] = 0.0f;
    if (!isfinite(mosaic__forest_predict(f, x)))
        abort();
    free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *json = malloc(size + 1);
    char err[512];
    struct mosaic__forest *f = NULL;

    if (!json)
        return 0;
    memcpy(json, data, size);
    json[size] = '\0';
    if (mosaic__forest_load_string(json, "fuzz", &f, err, sizeof(err)) == 0) {
        if (!f)
            abort();
        exercise(f);
        mosaic__forest_free(f);
    } else if (f != NULL || err[0] == '\0') {
        /* A failure must leave no forest and always explain itself. */
        abort();
    }
    free(json);
    return 0;
}
