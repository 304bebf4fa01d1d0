/*
 * mosaic-predict: predicted co-run durations and slowdowns of two kernels
 * (issue 4), from their mosaic-profile files.
 *
 *   mosaic-predict A.json B.json --mode shared|partitioned [--sms N]
 *                  [--models DIR] [--offset-us US] [--protect a|b]
 *                  [--key-a KEY] [--key-b KEY] [--follow-a KEY] [--follow-b KEY]
 *                  [--iso-a US] [--iso-b US] [--sweep STEP]
 *
 * A and B are the first kernel of each file, or the kernel with that key, or
 * the one kernel whose key contains the text given (a name, "grid=...").
 * --sms N (partitioned): A gets N SMs, B the rest (default: half, rounded
 * down to the GPU's partition alignment: 64/68 on the H200); a split the
 * GPU cannot make (on the H200 a side below 8 SMs, or neither side a
 * multiple of 8: docs/predictor.md) is refused.
 * --offset-us US: B is enqueued US microseconds after A (negative: before);
 * default 0, launched together. Within the dispatch jitter (3.2 us on the
 * H200) the GPU picks the order: both orders are printed with their
 * likelihoods, then the conservative value of the protected kernel
 * (--protect, default a): its longest predicted duration over the orders.
 * --iso-a/--iso-b: measured isolated durations on those SMs (otherwise
 * estimated from the profile: waves, per-SM speed-up, DRAM share;
 * docs/predictor.md).
 * --sweep STEP (partitioned): a table over A's SM count, STEP, 2 STEP, ...,
 * with each kernel's predicted duration on its partition beside the other
 * and that over its duration alone on the whole GPU (what a split costs
 * each side); durations on the partitions are estimated.
 * Exit status: 0, or 1 with a message
 * naming the file and field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosaic/predict.h"
#include "mosaic/profile.h"

#ifndef MOSAIC_DEFAULT_MODELS
#define MOSAIC_DEFAULT_MODELS "predictor/models/h200"
#endif

static void usage(void)
{
    fprintf(stderr,
            "usage: mosaic-predict A.json B.json --mode shared|partitioned [--sms N]\n"
            "       [--models DIR] [--offset-us US] [--protect a|b]\n"
            "       [--key-a KEY] [--key-b KEY]\n"
            "       [--follow-a KEY] [--follow-b KEY]  (a dependent kernel of the same\n"
            "       file enqueued right after, e.g. cuBLAS's split-K reduce)\n"
            "       [--iso-a US] [--iso-b US] [--sweep STEP]\n");
}

/* The kernel whose key is KEY, or else the one kernel whose key contains
 * KEY (a name or part of one, e.g. "k_copy" or "grid=8192"). */
static int find_key(const char *path, const struct mosaic_profile *prof,
                    const char *key, const struct mosaic_kernel **k)
{
    size_t n = 0;
    for (size_t i = 0; i < prof->n_kernels; i++)
        if (prof->kernels[i].key && strcmp(prof->kernels[i].key, key) == 0) {
            *k = &prof->kernels[i];
            return 0;
        }
    for (size_t i = 0; i < prof->n_kernels; i++)
        if (prof->kernels[i].key && strstr(prof->kernels[i].key, key)) {
            *k = &prof->kernels[i];
            n++;
        }
    if (n == 1) return 0;
    if (n == 0) {
        fprintf(stderr, "mosaic-predict: %s: no kernel key contains '%s' "
                "(mosaic-profile show %s lists them)\n", path, key, path);
        return -1;
    }
    fprintf(stderr, "mosaic-predict: %s: %zu kernel keys contain '%s'; give more of the key:\n",
            path, n, key);
    for (size_t i = 0, shown = 0; i < prof->n_kernels && shown < 8; i++)
        if (prof->kernels[i].key && strstr(prof->kernels[i].key, key)) {
            fprintf(stderr, "  %s\n", prof->kernels[i].key);
            shown++;
        }
    return -1;
}

static int pick(const struct mosaic_predictor *p, const char *path, const char *key,
                struct mosaic_profile *prof, const struct mosaic_kernel **k)
{
    char err[1024];
    if (mosaic_profile_read_file(path, prof, err, sizeof err) != 0) {
        fprintf(stderr, "mosaic-predict: %s\n", err);
        return -1;
    }
    /* A profile of another GPU would be predicted with models fitted on
     * this one, without a word. */
    if (mosaic_predictor_check_profile(p, prof, path, err, sizeof err) != 0) {
        fprintf(stderr, "mosaic-predict: %s\n", err);
        return -1;
    }
    if (prof->n_kernels == 0) {
        fprintf(stderr, "mosaic-predict: %s: field kernels is empty\n", path);
        return -1;
    }
    if (!key) {
        *k = &prof->kernels[0];
        return 0;
    }
    return find_key(path, prof, key, k);
}

static int num(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

/* --sweep: every split of the GPU in steps of step SMs that the GPU can
 * make (mosaic_gpu_split_check: on the H200 each side has at least 8 SMs
 * and one of them is a multiple of 8). */
static int print_sweep(struct mosaic_predictor *p, struct mosaic_pred_query *q, int step,
                       const char *models)
{
    int n = mosaic_predictor_gpu(p)->sm_count;
    char err[1024];
    if (step >= n) {
        fprintf(stderr, "mosaic-predict: --sweep %d: the step must be below the GPU's %d SMs\n",
                step, n);
        return -1;
    }
    printf("mode partitioned, sweep of A's SMs, models %s\n", models);
    printf("%5s %5s | %10s %10s %8s | %10s %10s %8s\n", "A SMs", "B SMs", "A us",
           "A corun", "A/full", "B us", "B corun", "B/full");
    for (int s = step; s < n; s += step) {
        struct mosaic_pred_answer ans;
        const struct mosaic_pred_result *rr = &ans.order[0].r;
        q->sms_a = s;
        q->sms_b = n - s;
        if (mosaic_gpu_split_check(mosaic_predictor_gpu(p), s, n - s, err, sizeof err))
            continue;
        if (mosaic_predict(p, q, &ans, err, sizeof err)) {
            fprintf(stderr, "mosaic-predict: %s\n", err);
            return -1;
        }
        printf("%5d %5d | %10.2f %10.2f %8.2f | %10.2f %10.2f %8.2f\n", s, n - s,
               rr->k[0].iso_us, rr->k[0].duration_us,
               rr->k[0].duration_us / mosaic_pkernel_profiled_us(q->a), rr->k[1].iso_us,
               rr->k[1].duration_us, rr->k[1].duration_us / mosaic_pkernel_profiled_us(q->b));
    }
    printf("(A us, B us: alone on the partition, estimated; A/full, B/full: the co-run "
           "duration over the kernel's alone on all %d SMs)\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *keys[2] = {NULL, NULL}, *mode = NULL;
    const char *follow[2] = {NULL, NULL};
    const char *models = getenv("MOSAIC_MODELS");
    struct mosaic_pred_query q;
    struct mosaic_pred_answer ans;
    struct mosaic_predictor *p = NULL;
    struct mosaic_profile prof[2];
    const struct mosaic_kernel *k[2];
    struct mosaic_pkernel *pk[2] = {NULL, NULL};
    char err[1024];
    int nf = 0, sms = -1, sweep = 0, rc = 1;
    double v;

    memset(&q, 0, sizeof q);
    if (!models) models = MOSAIC_DEFAULT_MODELS;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--mode") && more) mode = argv[++i];
        else if (!strcmp(a, "--sms") && more) {
            if (num(argv[++i], 1, 100000, &v) || v != (int)v) {
                fprintf(stderr, "mosaic-predict: --sms: not a whole positive SM count: %s\n",
                        argv[i]);
                return 1;
            }
            sms = (int)v;
        } else if (!strcmp(a, "--sweep") && more) {
            if (num(argv[++i], 1, 1000, &v) || v != (int)v) {
                fprintf(stderr, "mosaic-predict: --sweep: not a whole positive SM step: %s\n",
                        argv[i]);
                return 1;
            }
            sweep = (int)v;
        } else if (!strcmp(a, "--models") && more) models = argv[++i];
        else if (!strcmp(a, "--offset-us") && more) {
            if (num(argv[++i], -MOSAIC_OFFSET_MAX_US, MOSAIC_OFFSET_MAX_US, &v)) {
                fprintf(stderr, "mosaic-predict: --offset-us: not a launch offset in us within "
                                "+-%g: %s\n", MOSAIC_OFFSET_MAX_US, argv[i]);
                return 1;
            }
            q.offset_us = v;
        } else if (!strcmp(a, "--protect") && more) {
            const char *w = argv[++i];
            if (strcmp(w, "a") && strcmp(w, "b")) {
                fprintf(stderr, "mosaic-predict: --protect: a or b, not %s\n", w);
                return 1;
            }
            q.protect = w[0] == 'b';
        }
        else if (!strcmp(a, "--key-a") && more) keys[0] = argv[++i];
        else if (!strcmp(a, "--key-b") && more) keys[1] = argv[++i];
        else if (!strcmp(a, "--follow-a") && more) follow[0] = argv[++i];
        else if (!strcmp(a, "--follow-b") && more) follow[1] = argv[++i];
        else if ((!strcmp(a, "--iso-a") || !strcmp(a, "--iso-b")) && more) {
            if (num(argv[++i], 1e-3, 1e9, &v)) {
                fprintf(stderr, "mosaic-predict: %s: not a duration in us: %s\n", a, argv[i]);
                return 1;
            }
            if (a[6] == 'a') q.iso_a_us = v;
            else q.iso_b_us = v;
        } else if (a[0] == '-' && a[1]) {
            usage();
            return 1;
        } else if (nf < 2) files[nf++] = a;
        else {
            usage();
            return 1;
        }
    }
    if (nf != 2 || !mode) {
        usage();
        return 1;
    }
    if (!strcmp(mode, "shared")) q.mode = MOSAIC_MODE_SHARED;
    else if (!strcmp(mode, "partitioned")) q.mode = MOSAIC_MODE_PARTITIONED;
    else {
        fprintf(stderr, "mosaic-predict: --mode: shared or partitioned, not %s\n", mode);
        return 1;
    }
    if (sweep && (q.mode != MOSAIC_MODE_PARTITIONED || sms >= 0 || q.iso_a_us > 0 ||
                  q.iso_b_us > 0)) {
        fprintf(stderr, "mosaic-predict: --sweep goes with --mode partitioned and without "
                        "--sms, --iso-a, --iso-b (it tries every split)\n");
        return 1;
    }
    mosaic_profile_init(&prof[0]);
    mosaic_profile_init(&prof[1]);
    if (mosaic_predictor_open(models, NULL, &p, err, sizeof err)) {
        fprintf(stderr, "mosaic-predict: %s\n", err);
        goto out;
    }
    for (int i = 0; i < 2; i++) {
        if (pick(p, files[i], keys[i], &prof[i], &k[i])) goto out;
        if (mosaic_pkernel_prepare(p, k[i], files[i], &pk[i], err, sizeof err)) {
            fprintf(stderr, "mosaic-predict: %s\n", err);
            goto out;
        }
        if (follow[i]) {
            const struct mosaic_kernel *next;
            if (find_key(files[i], &prof[i], follow[i], &next)) goto out;
            if (mosaic_pkernel_set_follow(pk[i], next, files[i], err, sizeof err)) {
                fprintf(stderr, "mosaic-predict: %s\n", err);
                goto out;
            }
        }
    }
    q.a = pk[0];
    q.b = pk[1];
    if (sweep) {
        rc = print_sweep(p, &q, sweep, models) ? 1 : 0;
        if (!rc) printf("A: %s\nB: %s\n", mosaic_pkernel_key(pk[0]), mosaic_pkernel_key(pk[1]));
        goto out;
    }
    if (q.mode == MOSAIC_MODE_PARTITIONED) {
        const struct mosaic_gpu_desc *g = mosaic_predictor_gpu(p);
        int n = g->sm_count, al = g->sm_partition_align > 1 ? g->sm_partition_align : 1;
        /* half the SMs rounded down to the partitions' alignment, as
         * mosaic-zoo corun splits by default (64/68 on the H200) */
        if (sms < 0) sms = n / 2 / al * al;
        if (sms >= n) {
            fprintf(stderr, "mosaic-predict: --sms %d: must be below %d (B gets the rest)\n",
                    sms, n);
            goto out;
        }
        if (mosaic_gpu_split_check(g, sms, n - sms, err, sizeof err)) {
            fprintf(stderr, "mosaic-predict: --sms %d: %s\n", sms, err);
            goto out;
        }
        q.sms_a = sms;
        q.sms_b = n - sms;
    }
    if (mosaic_predict(p, &q, &ans, err, sizeof err)) {
        fprintf(stderr, "mosaic-predict: %s\n", err);
        goto out;
    }
    printf("mode %s", mode);
    if (q.mode == MOSAIC_MODE_PARTITIONED) printf(", SMs %d/%d", q.sms_a, q.sms_b);
    printf(", B enqueued %+.2f us after A, models %s\n", q.offset_us, models);
    for (int o = 0; o < ans.n_orders; o++) {
        const struct mosaic_pred_result *r = &ans.order[o].r;
        if (q.mode == MOSAIC_MODE_SHARED)
            printf("order %s dispatched first, likelihood %.3f (%s)\n",
                   ans.order[o].b_first ? "B" : "A", ans.order[o].likelihood,
                   ans.n_orders > 1 ? "within the dispatch jitter: the GPU picks"
                                    : "beyond the dispatch jitter: follows from the offset");
        printf("%-4s %10s %10s %8s %8s %7s | %9s %8s %8s %8s\n", "", "iso_us", "corun_us",
               "slowdown", "start_us", "waves", "placement", "packing", "inter_sm", "intra_sm");
        for (int i = 0; i < 2; i++) {
            const struct mosaic_pred_kernel *x = &r->k[i];
            printf("%-4s %10.2f %10.2f %8.3f %8.2f %7.2f | %9.3f %8.3f %8.3f %8.3f\n",
                   i ? "B" : "A", x->iso_us, x->duration_us, x->slowdown, x->start_us, x->waves,
                   x->placement, x->packing, x->inter_sm, x->intra_sm);
        }
        printf("overlap %.2f us, co-resident fraction of the overlap %.2f\n", r->overlap_us,
               r->coresident);
    }
    printf("conservative %s: %.2f us, slowdown %.3f (the worse of %d order%s for it)\n",
           ans.protect ? "B" : "A", ans.conservative_us, ans.conservative_slowdown,
           ans.n_orders, ans.n_orders > 1 ? "s" : "");
    printf("A: %s\nB: %s\n", mosaic_pkernel_key(pk[0]), mosaic_pkernel_key(pk[1]));
    rc = 0;
out:
    mosaic_pkernel_free(pk[0]);
    mosaic_pkernel_free(pk[1]);
    mosaic_profile_free(&prof[0]);
    mosaic_profile_free(&prof[1]);
    mosaic_predictor_close(p);
    return rc;
}
