/*
 * The predictor's recorded accuracy (issue 4): recomputes the
 * leave-kernel-family-out evaluation of docs/predictor-eval.md from the
 * committed fold models (predictor/models/h200/lofo/<family>/) on the
 * committed dataset, through libmosaic_predict only (no libxgboost), and
 * fails when p50 or p95 of either mode is worse than accuracy.json records
 * plus its margin.
 *
 *   test_accuracy DATA_DIR MODELS_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "train_internal.h"

static double get(cJSON *root, const char *mode, const char *q)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(root, mode);
    cJSON *v = m ? cJSON_GetObjectItemCaseSensitive(m, q) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int main(int argc, char **argv)
{
    struct mosaic__dataset ds;
    struct mosaic_predictor *p0;
    struct mosaic__errs E[2];
    char err[1024], path[4096];
    cJSON *acc;
    double margin;
    int bad = 0;
    FILE *f;
    char *txt;
    long n;

    if (argc != 3) {
        fprintf(stderr, "usage: test_accuracy DATA_DIR MODELS_DIR\n");
        return 2;
    }
    memset(E, 0, sizeof E);
    snprintf(path, sizeof path, "%s/accuracy.json", argv[2]);
    f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    txt = calloc(1, (size_t)n + 1);
    if (!txt || fread(txt, 1, (size_t)n, f) != (size_t)n) return 1;
    fclose(f);
    acc = cJSON_Parse(txt);
    free(txt);
    if (!acc) {
        fprintf(stderr, "%s: not JSON\n", path);
        return 1;
    }
    margin = cJSON_GetObjectItemCaseSensitive(acc, "margin_pct_points")
                 ? cJSON_GetObjectItemCaseSensitive(acc, "margin_pct_points")->valuedouble
                 : 0.5;

    if (mosaic__predictor_from_parts(NULL, NULL, NULL, NULL, &p0) ||
        mosaic__dataset_load(argv[1], p0, &ds, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    for (size_t fam = 0; fam < ds.nfam; fam++) {
        struct mosaic_predictor *p;
        snprintf(path, sizeof path, "%s/lofo/%s", argv[2], ds.families[fam]);
        if (mosaic_predictor_open(path, NULL, &p, err, sizeof err) ||
            mosaic__eval_points(p, &ds, (int)fam, 0, E, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        mosaic_predictor_close(p);
    }
    for (int mode = 0; mode < 2; mode++) {
        const char *mn = mode == MOSAIC_MODE_SHARED ? "shared" : "partitioned";
        double p50, p95, r50 = get(acc, mn, "p50"), r95 = get(acc, mn, "p95");
        mosaic__eval_pcts(E[mode].e, E[mode].n, &p50, &p95);
        printf("%-12s points %6zu  p50 %6.2f%% (recorded %6.2f%%)  p95 %7.2f%% (recorded %7.2f%%)\n",
               mn, E[mode].n, p50, r50, p95, r95);
        if (!(p50 <= r50 + margin) || !(p95 <= r95 + margin)) {
            fprintf(stderr, "%s: accuracy regressed past the recorded threshold + %.2f\n", mn,
                    margin);
            bad = 1;
        }
        mosaic__errs_free(&E[mode]);
    }
    cJSON_Delete(acc);
    mosaic__dataset_free(&ds);
    mosaic_predictor_close(p0);
    return bad;
}
