/*
 * Prediction latency on one core (issue 4; not a ctest): ns per
 * mosaic_predict over every pair of the zoo's variants' kernels,
 * partitioned vs shared vs cached, printed as a table.
 *
 *   bench_predict [DATA_DIR [MODELS_DIR [ROUNDS]]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train_internal.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    const char *data = argc > 1 ? argv[1] : DATA;
    const char *models = argc > 2 ? argv[2] : MODELS;
    int rounds = argc > 3 ? atoi(argv[3]) : 20;
    struct mosaic_predictor *p;
    struct mosaic__dataset ds;
    char err[1024];
    double sink = 0;
    const char *names[3] = {"partitioned (64/68)", "shared (full GPU)", "shared, cached"};
    double ns[3];
    size_t npairs;

    if (mosaic_predictor_open(models, NULL, &p, err, sizeof err) ||
        mosaic__dataset_load(data, p, &ds, err, sizeof err)) {
        fprintf(stderr, "bench_predict: %s\n", err);
        return 1;
    }
    npairs = ds.nv * ds.nv;
    for (int c = 0; c < 3; c++) {
        double t0;
        size_t calls = 0;
        if (c == 2 && mosaic_predictor_set_cache(p, 2 * npairs)) return 1;
        /* warm (and fill the cache) */
        for (size_t i = 0; i < ds.nv; i++)
            for (size_t j = 0; j < ds.nv; j++) {
                struct mosaic_pred_query q = {.a = ds.v[i].pk, .b = ds.v[j].pk,
                                              .mode = c == 0, .sms_a = 64, .sms_b = 68};
                struct mosaic_pred_result r;
                mosaic_predict(p, &q, &r, err, sizeof err);
            }
        t0 = now_ns();
        for (int k = 0; k < rounds; k++)
            for (size_t i = 0; i < ds.nv; i++)
                for (size_t j = 0; j < ds.nv; j++) {
                    struct mosaic_pred_query q = {.a = ds.v[i].pk, .b = ds.v[j].pk,
                                                  .mode = c == 0, .sms_a = 64, .sms_b = 68,
                                                  .b_first = k & 1 && c != 2};
                    struct mosaic_pred_result r;
                    if (mosaic_predict(p, &q, &r, err, sizeof err)) {
                        fprintf(stderr, "bench_predict: %s\n", err);
                        return 1;
                    }
                    sink += r.k[0].duration_us;
                    calls++;
                }
        ns[c] = (now_ns() - t0) / (double)calls;
    }
    printf("| prediction | ns per call (one core, %zu pairs x %d rounds) |\n| --- | --- |\n",
           npairs, rounds);
    for (int c = 0; c < 3; c++) printf("| %s | %.0f |\n", names[c], ns[c]);
    fprintf(stderr, "(checksum %g)\n", sink);
    mosaic__dataset_free(&ds);
    mosaic_predictor_close(p);
    return 0;
}
