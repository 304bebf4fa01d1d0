/*
 * Prediction latency as the scheduler calls it (issue 9): random pairs from
 * a pool of kernels (the zoo's and ResNet-50's, 242 kernels: 58,564 pairs,
 * far more than the cache holds), given isolated durations re-measured
 * each call (the profiled duration with +-1% noise), mosaic_predict's full
 * answer (both orders in shared mode, the conservative value), each call
 * timed on its own; p50 and p99 per mode, with the cache off, cold (random
 * pairs over the whole pool) and warm (a working set of 256 pairs, as an
 * arbiter meets the same service kernels again, after as many warm-up
 * calls as are timed: with durations re-measured each call, a pair's
 * kernels fall into one or two duration buckets each, so the first
 * thousand calls still miss). Each row also gives the share of cache hits
 * and the page faults taken while it ran, and the table the machine's
 * load average before and after.
 *
 *   bench_predict [DATA_DIR] [MODELS_DIR] [CALLS]
 *
 * Run it pinned to one core (taskset -c 1) for the one-core figure;
 * tests/predictor/bench_compare.sh runs it against an older revision's
 * library in the same session.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "train_internal.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The load average (1, 5, 15 minutes) as /proc/loadavg gives it, or "?". */
static void print_load(const char *when)
{
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) snprintf(buf, sizeof buf, "?");
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
    printf("(load average %s: %s)\n", when, buf);
}

static long minor_faults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : 0;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *data = argc > 1 ? argv[1] : DATA;
    const char *models = argc > 2 ? argv[2] : MODELS;
    long calls = argc > 3 ? atol(argv[3]) : 20000;
    static const char *files[2] = {"zoo.profile.json", "resnet50_b8.profile.json"};
    static const char *cname[3] = {"cache off", "cache cold (random pairs, 4096 entries)",
                                   "cache warm (256-pair working set)"};
    struct mosaic_predictor *p;
    struct mosaic_profile prof[2];
    struct mosaic_pkernel **pool = NULL;
    size_t n = 0;
    char err[1024], path[4096];
    double sink = 0, *t;

    if (calls < 100 || calls > 10000000) calls = 20000;
    t = malloc((size_t)calls * sizeof *t);
    if (!t || mosaic_predictor_open(models, NULL, &p, err, sizeof err)) {
        fprintf(stderr, "bench_predict: %s\n", t ? err : "out of memory");
        return 1;
    }
    /* the samples' pages mapped now, not on a first write between two timed calls */
    for (long k = 0; k < calls; k++) t[k] = (double)k;
    for (int f = 0; f < 2; f++) {
        mosaic_profile_init(&prof[f]);
        snprintf(path, sizeof path, "%s/%s", data, files[f]);
        if (mosaic_profile_read_file(path, &prof[f], err, sizeof err)) {
            fprintf(stderr, "bench_predict: %s\n", err);
            return 1;
        }
        pool = realloc(pool, (n + prof[f].n_kernels) * sizeof *pool);
        if (!pool) return 1;
        for (size_t i = 0; i < prof[f].n_kernels; i++)
            if (mosaic_pkernel_prepare(p, &prof[f].kernels[i], path, &pool[n], err,
                                       sizeof err) == 0)
                n++;
    }
    print_load("before");
    printf("| mode | cache | p50 ns | p99 ns | mean ns | cache hits | page faults |\n"
           "| --- | --- | --- | --- | --- | --- | --- |\n");
    for (int mode = 1; mode >= 0; mode--)
        for (int c = 0; c < 3; c++) {
            size_t ws[256][2];
            double sum = 0;
            long hits = 0, faults;
            if (mosaic_predictor_set_cache(p, c ? 4096 : 0)) return 1;
            for (int w = 0; w < 256; w++) {
                ws[w][0] = next() % n;
                ws[w][1] = next() % n;
            }
            faults = minor_faults();
            for (long k = -(c == 2 ? calls : 0); k < calls; k++) {
                size_t w = next() % 256;
                size_t i = c == 2 ? ws[w][0] : next() % n;
                size_t j = c == 2 ? ws[w][1] : next() % n;
                int split = 8 * (1 + (int)(next() % 15)); /* 8 .. 120, green-context steps */
                double ja = 1 + ((double)(next() % 2001) - 1000) * 1e-5;
                double jb = 1 + ((double)(next() % 2001) - 1000) * 1e-5;
                struct mosaic_pred_query q = {
                    .a = pool[i], .b = pool[j], .mode = mode, .sms_a = split,
                    .sms_b = 132 - split,
                    .iso_a_us = mosaic_pkernel_profiled_us(pool[i]) * ja,
                    .iso_b_us = mosaic_pkernel_profiled_us(pool[j]) * jb};
                struct mosaic_pred_answer a;
                double t0;
                if (c == 2) q.sms_a = 64, q.sms_b = 68;
                t0 = now_ns();
                if (mosaic_predict(p, &q, &a, err, sizeof err)) {
                    fprintf(stderr, "bench_predict: %s\n", err);
                    return 1;
                }
                if (k >= 0) t[k] = now_ns() - t0;
                if (k >= 0) hits += a.order[0].r.cached;
                sink += a.conservative_us;
            }
            for (long k = 0; k < calls; k++) sum += t[k];
            qsort(t, (size_t)calls, sizeof *t, cmpd);
            faults = minor_faults() - faults;
            printf("| %s | %s | %.0f | %.0f | %.0f | %.1f%% | %ld |\n",
                   mode ? "partitioned" : "shared", cname[c], t[calls / 2],
                   t[(size_t)((double)calls * 0.99)], sum / (double)calls,
                   100.0 * (double)hits / (double)calls, faults);
        }
    printf("(%zu kernels in the pool, %ld calls per row, each timed alone with "
           "CLOCK_MONOTONIC, ~20-30 ns of it the clock; cache hits: the first order's)\n", n,
           calls);
    print_load("after");
    fprintf(stderr, "(checksum %g)\n", sink);
    for (size_t i = 0; i < n; i++) mosaic_pkernel_free(pool[i]);
    free(pool);
    free(t);
    for (int f = 0; f < 2; f++) mosaic_profile_free(&prof[f]);
    mosaic_predictor_close(p);
    return 0;
}
