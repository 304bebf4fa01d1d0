/*
 * mosaic-train: trains the Mosaic predictor's models on the co-run dataset
 * and evaluates them strictly leave-family-out, with a lockbox and two
 * baselines (issues 4, 9).
 *
 *   mosaic-train --out DIR [--data DIR] [--doc FILE] [--lockbox FILE|none]
 *                [--no-eval] [--trees N] [--depth N] [--clip Y] [--no-monotone]
 *                [--no-coef-fit]
 *   mosaic-train --eval-only MODELS [--data DIR] [--max-p95 SHARED,PARTITIONED]
 *                [--max-iso-p95 P] [--dump CSV]
 *   mosaic-train --features
 *   mosaic-train --check-forests MODELS [--data DIR]
 *
 * --check-forests compares MODELS' inter.json and shared.json as the
 * library evaluates them with XGBoost's own predictions on every row of the
 * dataset (and on each with one feature missing); exit status 1 past 1e-5.
 * --features prints the two models' feature lists (position, name, unit,
 * monotone constraint, meaning: predictor/feature_list.h), the names being
 * what every model file records in its "features" array.
 * --eval-only scores trained models (e.g. the committed ones) on every
 * kernel of another dataset (a hold-out set of kernels they never saw)
 * and prints p50/p95 per mode beside the no-interference floor, for all
 * kernels and those measured >= 1.1x, the shared conservative value
 * against every repeat, and the same with the isolated durations left for
 * the predictor to estimate; nothing is trained or written; with --max-p95
 * it exits 1 when the models' p95 exceeds either limit, or when nothing
 * was scored; --dump writes each measurement's predictions (measured and
 * estimated isolated durations). When DIR has a time.jsonl (`mosaic-zoo
 * time --sms ...`), it also scores the isolated-duration estimate on fewer
 * SMs against it; with --max-iso-p95 it exits 1 when that p95 exceeds P.
 *
 * Training writes (--out is required, so that a run in a checkout never
 * overwrites its committed models unless told to; --doc defaults to
 * OUT/predictor-eval.md) OUT/inter.json, OUT/shared.json (XGBoost JSON,
 * XGBoosterSaveModel), OUT/analytic.json (all data), then, unless
 * --no-eval, OUT/lofo/<family>/ for every family outside the lockbox
 * (trained without it and without the lockbox), OUT/lockbox/ (trained
 * without the lockbox families) and the doc. The lockbox file lists the
 * families kept out of every fitting and choice (predictor/models/h200/
 * LOCKBOX). Inference during the evaluation goes through libmosaic_predict
 * (flat-array trees); libxgboost is used for training only.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <xgboost/c_api.h>

#include "core.h"
#include "json.h"
#include "train_internal.h"

/* Frozen 2026-12-01 (issue 9): chosen in issue 4's model steps
 * (docs/predictor.md) on all 18 families, before the lockbox; no longer
 * changed on evaluation results (docs/predictor-eval.md, "What was fitted
 * where"). */
static int g_trees = 80, g_depth = 4, g_use_mono = 1;
/* --no-coef-fit: keep the default analytic coefficients (coef.c) instead
 * of the grid search, for the accuracy gate's deliberately weak model set
 * (the search is most of a fold's time under the sanitizers). */
static int g_fit_coef = 1;

/* The records of time.jsonl that eval_iso_on scores: a variant's kernel,
 * the SMs it ran on and its median duration. */
struct iso_time {
    const struct mosaic_pkernel *k; /* the variant's kernel */
    int sms;
    double us;
};
struct iso_times {
    const struct mosaic__dataset *ds;
    int N; /* the GPU's SMs: a larger count is the whole GPU */
    struct iso_time *t;
    size_t nt, cap;
};

/* One line of time.jsonl: a successful "time" record of a variant the
 * dataset knows is kept; other records (the run's header, failed runs)
 * are skipped. */
static int on_time(void *ctx, const char *where, long line, cJSON *r, char *err,
                   size_t errlen)
{
    struct iso_times *c = ctx;
    cJSON *rec = cJSON_GetObjectItemCaseSensitive(r, "record");
    cJSON *ok = cJSON_GetObjectItemCaseSensitive(r, "ok");
    cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "variant");
    cJSON *sms = cJSON_GetObjectItemCaseSensitive(r, "sms");
    cJSON *med = cJSON_GetObjectItemCaseSensitive(r, "median_us");
    (void)line;
    if (!cJSON_IsString(rec) || strcmp(rec->valuestring, "time") || !cJSON_IsTrue(ok))
        return 0;
    if (!cJSON_IsString(v) || !cJSON_IsNumber(sms) || !cJSON_IsNumber(med) ||
        !(med->valuedouble > 0) || !(sms->valuedouble >= 1))
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, where, NULL,
                            "a successful time record needs variant (a string), sms (>= 1) "
                            "and median_us (> 0)");
    if (c->nt == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 256;
        struct iso_time *t = realloc(c->t, cap * sizeof *t);
        if (!t) return mosaic__errf(err, errlen, MOSAIC_ENOMEM, where, NULL, "out of memory");
        c->t = t;
        c->cap = cap;
    }
    c->t[c->nt].k = NULL;
    for (size_t i = 0; i < c->ds->nv; i++)
        if (!strcmp(c->ds->v[i].name, v->valuestring)) c->t[c->nt].k = c->ds->v[i].pk;
    c->t[c->nt].sms = sms->valuedouble >= c->N ? c->N : sms->valueint;
    c->t[c->nt].us = med->valuedouble;
    if (c->t[c->nt].k) c->nt++;
    return 0;
}

/* --eval-only, when DATA/time.jsonl exists (`mosaic-zoo time --sms ...`):
 * the isolated-duration estimate on fewer SMs (mosaic__place_iso_on)
 * against the measured slow-down from the full GPU to n SMs, per n. */
static int eval_iso_on(const char *data, const struct mosaic_predictor *p,
                       const struct mosaic__dataset *ds, double max95)
{
    int bad = 0;
    enum { MAXN = 16 };
    struct iso_times c = {ds, p->gpu.sm_count, NULL, 0, 0};
    struct iso_time *t;
    size_t nt;
    char path[4096], err[1024];
    int ns[MAXN], nn = 0, N = p->gpu.sm_count;
    struct mosaic__errs e[MAXN + 1];
    struct stat st;

    if (snprintf(path, sizeof path, "%s/time.jsonl", data) >= (int)sizeof path) {
        fprintf(stderr, "mosaic-train: %s: data directory path too long\n", data);
        return 1;
    }
    /* time.jsonl is optional; any other failure (a FIFO, a bad line) is an
     * error, not a silently smaller score. */
    if (stat(path, &st) != 0 && errno == ENOENT) return 0;
    if (mosaic__jsonl_read_file(path, 1L << 30, on_time, &c, err, sizeof err)) {
        fprintf(stderr, "mosaic-train: %s\n", err);
        free(c.t);
        return 1;
    }
    t = c.t;
    nt = c.nt;
    memset(e, 0, sizeof e);
    for (size_t i = 0; i < nt; i++) {
        const struct mosaic_pkernel *k = t[i].k;
        double full = 0, meas, est;
        int j;
        if (t[i].sms >= N) continue;
        for (size_t m = 0; m < nt; m++)
            if (t[m].k == k && t[m].sms == N) full = t[m].us;
        if (!(full > 0)) continue;
        for (j = 0; j < nn && ns[j] != t[i].sms; j++) {}
        if (j == nn) {
            if (nn == MAXN) continue;
            ns[nn++] = t[i].sms;
        }
        meas = t[i].us / full;
        est = mosaic__place_iso_on(&p->gpu, k, t[i].sms) / k->dur_us;
        if (mosaic__errs_push(&e[j], fabs(est - meas) / meas * 100) ||
            mosaic__errs_push(&e[MAXN], fabs(est - meas) / meas * 100)) {
            fprintf(stderr, "mosaic-train: out of memory\n");
            exit(1);
        }
    }
    free(t);
    printf("\nisolated duration on n SMs, estimated from the profile against %s\n", path);
    printf("%-24s %7s %8s %8s %8s\n", "SMs", "points", "p50", "p95", "worst");
    for (int j = 0; j <= nn; j++) {
        struct mosaic__errs *x = &e[j == nn ? MAXN : j];
        double p50, p95, w = 0;
        char lab[32];
        if (!x->n) continue;
        for (size_t i = 0; i < x->n; i++) w = x->e[i] > w ? x->e[i] : w;
        mosaic__eval_pcts(x->e, x->n, &p50, &p95);
        if (j == nn) snprintf(lab, sizeof lab, "all");
        else snprintf(lab, sizeof lab, "%d", ns[j]);
        printf("%-24s %7zu %7.2f%% %7.2f%% %7.2f%%\n", lab, x->n, p50, p95, w);
        mosaic__errs_free(x);
        if (j == nn && !(p95 <= max95)) {
            fprintf(stderr, "mosaic-train: isolated-duration estimate p95 %.2f%% is above "
                            "the limit given\n", p95);
            bad = 1;
        }
    }
    return bad;
}

/* --eval-only --dump: each measurement's predicted durations (the observed
 * order's), with the isolated durations measured and estimated. */
static int eval_dump(struct mosaic_predictor *p, const struct mosaic__dataset *ds, FILE *f,
                     char *err, size_t errlen)
{
    fprintf(f, "mode,a,b,sms_a,sms_b,b_first,iso_a,iso_b,meas_a,meas_b,pred_a,pred_b,"
               "est_iso_a,est_iso_b,pred_est_a,pred_est_b\n");
    for (size_t i = 0; i < ds->npt; i++) {
        const struct mosaic__ds_point *pt = &ds->pt[i];
        struct mosaic_pred_query q;
        struct mosaic_pred_result r, re;
        memset(&q, 0, sizeof q);
        q.a = ds->v[pt->va].pk;
        q.b = ds->v[pt->vb].pk;
        q.mode = pt->mode;
        q.sms_a = pt->sms_a;
        q.sms_b = pt->sms_b;
        if (mosaic__predict_order(p, &q, pt->b_first, &re, err, errlen)) return 1;
        q.iso_a_us = pt->iso_a;
        q.iso_b_us = pt->iso_b;
        if (mosaic__predict_order(p, &q, pt->b_first, &r, err, errlen)) return 1;
        fprintf(f, "%s,%s,%s,%d,%d,%d,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g\n",
                pt->mode == MOSAIC_MODE_SHARED ? "shared" : "partitioned", ds->v[pt->va].name,
                ds->v[pt->vb].name, pt->sms_a, pt->sms_b, pt->b_first, pt->iso_a, pt->iso_b,
                pt->meas_a, pt->meas_b, r.k[0].duration_us, r.k[1].duration_us,
                re.k[0].iso_us, re.k[1].iso_us, re.k[0].duration_us, re.k[1].duration_us);
    }
    return 0;
}

static double pct(struct mosaic__errs *e, int which);

/* --eval-only: the models given on every kernel of another dataset, with
 * the no-interference floor, the rows measured >= 1.1x and the shared
 * conservative value against every repeat. An empty score fails. */
static int eval_only(const char *dir, const char *data, const struct mosaic__dataset *ds,
                     double max95_shared, double max95_part, double max95_iso, FILE *dump)
{
    int bad = 0;
    static const struct { const char *name; unsigned disable; } cfg[3] = {
        {"Mosaic (these models)", 0},
        {"placement only", MOSAIC_PC_PACKING | MOSAIC_PC_INTER | MOSAIC_PC_INTRA},
        {"Mosaic, iso estimated", MOSAIC__EVAL_EST_ISO}};
    struct mosaic_predictor *p;
    char err[1024];
    if (mosaic_predictor_open(dir, NULL, &p, err, sizeof err)) {
        fprintf(stderr, "mosaic-train: %s\n", err);
        return 1;
    }
    printf("%-22s %-12s %7s %7s %7s %7s %7s | %6s %7s %7s %7s %7s\n", "models", "mode",
           "kernels", "p50", "p95", "fl.p50", "fl.p95", ">=1.1x", "p50", "p95", "fl.p50",
           "fl.p95");
    for (int c = 0; c < 3; c++) {
        struct mosaic__score sc[2];
        memset(sc, 0, sizeof sc);
        if (mosaic__eval_points(p, ds, NULL, cfg[c].disable, sc, err, sizeof err) ||
            (c == 0 && mosaic__eval_conservative(p, ds, NULL, sc, err, sizeof err))) {
            fprintf(stderr, "mosaic-train: %s\n", err);
            mosaic_predictor_close(p);
            return 1;
        }
        for (int mode = 1; mode >= 0; mode--) {
            struct mosaic__score *s = &sc[mode];
            double p95 = pct(&s->model, 1);
            if (!s->model.n) continue;
            printf("%-22s %-12s %7zu %6.2f%% %6.2f%% %6.2f%% %6.2f%% | %6zu %6.2f%% %6.2f%% "
                   "%6.2f%% %6.2f%%\n",
                   cfg[c].name, mode == MOSAIC_MODE_SHARED ? "shared" : "partitioned",
                   s->model.n, pct(&s->model, 0), p95, pct(&s->floor, 0), pct(&s->floor, 1),
                   s->model_hi.n, pct(&s->model_hi, 0), pct(&s->model_hi, 1),
                   pct(&s->floor_hi, 0), pct(&s->floor_hi, 1));
            if (c == 0 && !(p95 <= (mode == MOSAIC_MODE_SHARED ? max95_shared : max95_part))) {
                fprintf(stderr, "mosaic-train: %s p95 %.2f%% is above the limit given\n",
                        mode == MOSAIC_MODE_SHARED ? "shared" : "partitioned", p95);
                bad = 1;
            }
        }
        if (c == 0 && sc[0].rep_n)
            printf("conservative value (shared, order unknown): %zu repeats, %.1f%% covered, "
                   "median excess %.1f%%\n", sc[0].rep_n,
                   100.0 * (double)sc[0].rep_covered / (double)sc[0].rep_n,
                   pct(&sc[0].rep_excess, 0));
        if (c == 0 && !sc[0].model.n && !sc[1].model.n) {
            fprintf(stderr, "mosaic-train: %s: no measurement was scored\n", data);
            bad = 1;
        }
        mosaic__score_free(&sc[0]);
        mosaic__score_free(&sc[1]);
    }
    bad |= eval_iso_on(data, p, ds, max95_iso);
    if (dump && eval_dump(p, ds, dump, err, sizeof err)) {
        fprintf(stderr, "mosaic-train: %s\n", err);
        bad = 1;
    }
    mosaic_predictor_close(p);
    return bad;
}

#define XG(call)                                                             \
    do {                                                                     \
        if ((call) != 0) {                                                   \
            fprintf(stderr, "mosaic-train: xgboost: %s\n", XGBGetLastError()); \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

struct rows {
    float *x;
    float *y;
    size_t n, cap, d;
};

static void rows_push(struct rows *r, const float *x, float y)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 4096;
        r->x = realloc(r->x, r->cap * r->d * sizeof(float));
        r->y = realloc(r->y, r->cap * sizeof(float));
        if (!r->x || !r->y) {
            fprintf(stderr, "mosaic-train: out of memory\n");
            exit(1);
        }
    }
    memcpy(r->x + r->n * r->d, x, r->d * sizeof(float));
    r->y[r->n++] = y;
}

static void rows_free(struct rows *r)
{
    free(r->x);
    free(r->y);
    r->x = NULL;
    r->y = NULL;
    r->n = r->cap = 0;
}

/* Trains a regression forest and saves it (XGBoost JSON). */
static const char *g_mono; /* monotone constraints of the next training */

static void xgb_train(const struct rows *r, const char *path, int trees, int depth)
{
    DMatrixHandle dm;
    BoosterHandle b;
    char buf[32];
    XG(XGDMatrixCreateFromMat(r->x, r->n, r->d, NAN, &dm));
    XG(XGDMatrixSetFloatInfo(dm, "label", r->y, r->n));
    XG(XGBoosterCreate(&dm, 1, &b));
    XG(XGBoosterSetParam(b, "objective", "reg:squarederror"));
    XG(XGBoosterSetParam(b, "tree_method", "hist"));
    snprintf(buf, sizeof buf, "%d", depth);
    XG(XGBoosterSetParam(b, "max_depth", buf));
    XG(XGBoosterSetParam(b, "eta", "0.08"));
    XG(XGBoosterSetParam(b, "subsample", "0.8"));
    XG(XGBoosterSetParam(b, "colsample_bytree", "0.8"));
    XG(XGBoosterSetParam(b, "min_child_weight", "5"));
    XG(XGBoosterSetParam(b, "lambda", "2"));
    XG(XGBoosterSetParam(b, "seed", "20261130"));
    XG(XGBoosterSetParam(b, "nthread", "1"));
    XG(XGBoosterSetParam(b, "verbosity", "0"));
    if (g_mono) XG(XGBoosterSetParam(b, "monotone_constraints", g_mono));
    for (int i = 0; i < trees; i++)
        XG(XGBoosterUpdateOneIter(b, i, dm));
    XG(XGBoosterSaveModel(b, path));
    XG(XGBoosterFree(b));
    XG(XGDMatrixFree(dm));
}

static struct mosaic__forest *load_forest(const char *path)
{
    struct mosaic__forest *f;
    char err[512];
    if (mosaic__forest_load(path, &f, err, sizeof err) != 0) {
        fprintf(stderr, "mosaic-train: %s\n", err);
        exit(1);
    }
    return f;
}

static void mkdirs(const char *p)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", p);
    for (char *s = buf + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(buf, 0755);
            *s = '/';
        }
    mkdir(buf, 0755);
}

/* The point involves a family left out of this training (skip NULL: none). */
static int involves(const struct mosaic__dataset *ds, const struct mosaic__ds_point *p,
                    const unsigned char *skip)
{
    return skip && (skip[ds->v[p->va].fam] || skip[ds->v[p->vb].fam]);
}

/* ---- the Mosaic models of one fold ------------------------------------------ */

static struct mosaic_predictor *base_pred(const struct mosaic_gpu_desc *g)
{
    struct mosaic_predictor *p;
    if (mosaic__predictor_from_parts(g, NULL, NULL, NULL, &p)) exit(1);
    return p;
}

/* The full-overlap slowdown factor of a kernel that took t (isolated: iso)
 * beside one that took t_other, both from launch: t / iso when it ended
 * first; else it ran t_other at 1/f speed, then alone:
 * t = t_other + iso - t_other / f. */
static double overlap_factor(double t, double t_other, double iso)
{
    double f, den;
    if (t <= t_other)
        f = t / iso;
    else {
        den = t_other - t + iso;
        f = den > 0.05 * t_other ? t_other / den : 20;
    }
    return f < 0.67 ? 0.67 : f > 20 ? 20 : f;
}

static void inter_rows(const struct mosaic__dataset *ds, const unsigned char *fam, struct rows *r,
                       const struct mosaic_gpu_desc *g)
{
    float x[MOSAIC__NF_INTER];
    r->d = MOSAIC__NF_INTER;
    for (size_t i = 0; i < ds->npt; i++) {
        const struct mosaic__ds_point *p = &ds->pt[i];
        const struct mosaic_pkernel *a = ds->v[p->va].pk, *b = ds->v[p->vb].pk;
        if (p->mode != MOSAIC_MODE_PARTITIONED || involves(ds, p, fam)) continue;
        mosaic__feat_inter(g, a, p->sms_a, p->iso_a, b, p->sms_b, p->iso_b, x);
        rows_push(r, x, (float)log(overlap_factor(p->meas_a, p->meas_b, p->iso_a)));
        mosaic__feat_inter(g, b, p->sms_b, p->iso_b, a, p->sms_a, p->iso_a, x);
        rows_push(r, x, (float)log(overlap_factor(p->meas_b, p->meas_a, p->iso_b)));
    }
}

static void query_of(const struct mosaic__dataset *ds, const struct mosaic__ds_point *p,
                     struct mosaic_pred_query *q)
{
    memset(q, 0, sizeof *q);
    q->a = ds->v[p->va].pk;
    q->b = ds->v[p->vb].pk;
    q->mode = p->mode;
    q->sms_a = p->sms_a;
    q->sms_b = p->sms_b;
    q->iso_a_us = p->iso_a;
    q->iso_b_us = p->iso_b;
}

/* Median |log(pred/meas)| of the shared timeline (no residual) over the
 * training points, for the analytic coefficients. */
static double coef_loss(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                        const unsigned char *fam)
{
    double *e = malloc(ds->npt * 2 * sizeof *e), s = 0;
    size_t n = 0;
    for (size_t i = 0; i < ds->npt; i++) {
        const struct mosaic__ds_point *pt = &ds->pt[i];
        struct mosaic_pred_query q;
        struct mosaic_pred_result r;
        if (pt->mode != MOSAIC_MODE_SHARED || involves(ds, pt, fam) || (i % 3)) continue;
        query_of(ds, pt, &q);
        mosaic__predict_rows(p, &q, pt->b_first, &r, NULL, NULL);
        e[n++] = fabs(log(r.k[0].duration_us / pt->meas_a));
        e[n++] = fabs(log(r.k[1].duration_us / pt->meas_b));
    }
    for (size_t i = 0; i < n; i++) s += e[i];
    free(e);
    return n ? s / n : 0;
}

/* The analytic coefficients, grid-searched inside each fold on the fold's
 * training points (the grid itself is issue 4's, frozen). */
static void fit_coef(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                     const unsigned char *fam)
{
    static const double packs[] = {0, 0.5, 0.75, 1, 1.25};
    static const double ws[] = {0, 1, 2, 3, 5};
    static const double gaps[] = {0, 1.6, 3};
    struct mosaic__forest *keep = p->shared;
    struct mosaic__coef best = p->coef;
    double bl = 1e300;
    p->shared = NULL;
    for (size_t i = 0; i < sizeof packs / sizeof *packs; i++)
        for (size_t j = 0; j < sizeof ws / sizeof *ws; j++)
            for (size_t k = 0; k < sizeof gaps / sizeof *gaps; k++) {
                double l;
                p->coef.pack = packs[i];
                p->coef.intra_w = ws[j];
                p->coef.gap_us = gaps[k];
                l = coef_loss(p, ds, fam);
                if (l < bl) {
                    bl = l;
                    best = p->coef;
                }
            }
    p->coef = best;
    p->shared = keep;
}

/* Residual labels are clipped so that a few bimodal outliers do not pull
 * the squared-error fit away from the typical point. The value is frozen
 * (issue 4's choice on all families; issue 9). */
static double g_clip = 0.4;
static float clip(double y)
{
    return (float)(y > g_clip ? g_clip : y < -g_clip ? -g_clip : y);
}

static void shared_rows(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                        const unsigned char *fam, struct rows *r)
{
    float xa[MOSAIC__NF_SHARED], xb[MOSAIC__NF_SHARED];
    r->d = MOSAIC__NF_SHARED;
    for (size_t i = 0; i < ds->npt; i++) {
        const struct mosaic__ds_point *pt = &ds->pt[i];
        struct mosaic_pred_query q;
        struct mosaic_pred_result res;
        if (pt->mode != MOSAIC_MODE_SHARED || involves(ds, pt, fam)) continue;
        query_of(ds, pt, &q);
        mosaic__predict_rows(p, &q, pt->b_first, &res, xa, xb);
        rows_push(r, xa, clip(log(pt->meas_a / res.k[0].duration_us)));
        rows_push(r, xb, clip(log(pt->meas_b / res.k[1].duration_us)));
    }
}

/* XGBoost's monotone_constraints, "(c0,c1,...)", from a feature list. */
static const char *monotone_of(const struct mosaic__feature *list, int n, char *buf)
{
    char *w = buf;
    *w++ = '(';
    for (int i = 0; i < n; i++)
        w += sprintf(w, "%s%d", i ? "," : "", list[i].mono);
    strcpy(w, ")");
    return buf;
}

/* --features: one model's list as a table. */
static void print_features(const char *file, const struct mosaic__feature *list, int n)
{
    printf("%s: %d features\n%4s %-28s %-20s %4s  %s\n", file, n, "pos", "name", "unit",
           "mono", "meaning");
    for (int i = 0; i < n; i++)
        printf("%4d %-28s %-20s %4d  %s\n", i, list[i].name, list[i].unit, list[i].mono,
               list[i].meaning);
}

/* Records the feature list in a model file just trained (the predictor
 * refuses a model whose list differs from its own). */
static void stamp(const char *path, const struct mosaic__feature *list, int n)
{
    char err[4200];
    if (mosaic__features_stamp(path, list, n, err, sizeof err)) {
        fprintf(stderr, "mosaic-train: %s\n", err);
        exit(1);
    }
}

/* The conservative value's margin: the 95th percentile, over every repeat
 * of the training records' shared measurements and both kernels, of the
 * measured duration over the worse order's prediction (at least 1). */
static void fit_margin(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                       const unsigned char *fam)
{
    struct mosaic__errs r = {0};
    char err[1024];
    double p50, p95;
    p->coef.cons_margin = 1;
    for (size_t i = 0; i < ds->nrec; i++) {
        const struct mosaic__ds_record *rc = &ds->rec[i];
        if (rc->mode != MOSAIC_MODE_SHARED || (fam && (fam[ds->v[rc->va].fam] ||
                                                       fam[ds->v[rc->vb].fam])))
            continue;
        for (int k = 0; k < 2; k++) {
            struct mosaic_pred_query q = {.a = ds->v[rc->va].pk, .b = ds->v[rc->vb].pk,
                                          .mode = rc->mode,
                                          .offset_us = rc->enq_b_first ? -0.1 : 0.1,
                                          .protect = k, .iso_a_us = rc->iso_a,
                                          .iso_b_us = rc->iso_b};
            struct mosaic_pred_answer a;
            if (mosaic_predict(p, &q, &a, err, sizeof err)) {
                fprintf(stderr, "mosaic-train: %s\n", err);
                exit(1);
            }
            for (int j = 0; j < rc->n; j++)
                if (mosaic__errs_push(&r, rc->samples[2 * j + k] / a.conservative_us)) {
                    fprintf(stderr, "mosaic-train: out of memory\n");
                    exit(1);
                }
        }
    }
    if (!r.n) return;
    mosaic__eval_pcts(r.e, r.n, &p50, &p95);
    p->coef.cons_margin = p95 > 1 ? (p95 < 4 ? p95 : 4) : 1;
    mosaic__errs_free(&r);
}

/* Trains inter -> coefficients -> shared residual into dir; returns the
 * predictor (loaded back through the flat-array trees). */
static struct mosaic_predictor *train_mosaic(const struct mosaic_gpu_desc *g,
                                             const struct mosaic__dataset *ds,
                                             const unsigned char *fam, const char *dir)
{
    struct rows r = {0};
    char path[4096], err[512], mono[4 * MOSAIC__NF_INTER + 8];
    struct mosaic_predictor *p = base_pred(g);

    mkdirs(dir);
    inter_rows(ds, fam, &r, g);
    snprintf(path, sizeof path, "%s/inter.json", dir);
    /* more traffic from the co-runner never speeds a kernel up: the list's
     * monotone column */
    g_mono = g_use_mono ? monotone_of(mosaic__features_inter, MOSAIC__NF_INTER, mono) : NULL;
    xgb_train(&r, path, g_trees, g_depth);
    g_mono = NULL;
    rows_free(&r);
    stamp(path, mosaic__features_inter, MOSAIC__NF_INTER);
    p->inter = load_forest(path);
    if (g_fit_coef) fit_coef(p, ds, fam);
    snprintf(path, sizeof path, "%s/analytic.json", dir);
    if (mosaic__coef_save(path, &p->coef, err, sizeof err)) {
        fprintf(stderr, "mosaic-train: %s\n", err);
        exit(1);
    }
    shared_rows(p, ds, fam, &r);
    snprintf(path, sizeof path, "%s/shared.json", dir);
    xgb_train(&r, path, g_trees, g_depth);
    rows_free(&r);
    stamp(path, mosaic__features_shared, MOSAIC__NF_SHARED);
    p->shared = load_forest(path);
    fit_margin(p, ds, fam);
    snprintf(path, sizeof path, "%s/analytic.json", dir);
    if (mosaic__coef_save(path, &p->coef, err, sizeof err)) {
        fprintf(stderr, "mosaic-train: %s\n", err);
        exit(1);
    }
    return p;
}

/* ---- baselines ------------------------------------------------------------------ */

/* The baselines' features have names too (their models live only in the
 * training's temporary directory, so no file records them): each list is
 * X(name, meaning). */
#define KACE_KERNEL(X)                                    \
    X(dram_tbs, "DRAM read + write bandwidth, TB/s")      \
    X(l2_tbs, "L2 read + write bandwidth, TB/s")          \
    X(ipc, "instructions per cycle")                      \
    X(issue, "issue_active, fraction of cycles")          \
    X(occ, "achieved occupancy, fraction")                \
    X(sms_frac, "its SMs over the H200's 132")
#define KACE_ENUM(name, meaning) KACE_##name,
enum { KACE_KERNEL(KACE_ENUM) KACE_NK };
/* the kernel's six, its co-runner's six, then 1 when it is dispatched first */
enum { KACE_SELF = 0, KACE_OTHER = KACE_NK, KACE_FIRST = 2 * KACE_NK, KACE_D };

/* KACE-like: exclusive metrics of the kernel and of its co-runner. */
static void kace_x(const struct mosaic_pkernel *s, int ss, const struct mosaic_pkernel *o,
                   int so, int first, double *x)
{
    const struct mosaic_pkernel *k[2] = {s, o};
    int sm[2] = {ss, so};
    for (int i = 0; i < 2; i++) {
        double *y = x + (i == 0 ? KACE_SELF : KACE_OTHER);
        y[KACE_dram_tbs] = (k[i]->dram_rd + k[i]->dram_wr) / 1000;
        y[KACE_l2_tbs] = (k[i]->l2_rd + k[i]->l2_wr) / 1000;
        y[KACE_ipc] = k[i]->ipc;
        y[KACE_issue] = k[i]->issue;
        y[KACE_occ] = k[i]->occ;
        y[KACE_sms_frac] = sm[i] / 132.0;
    }
    x[KACE_FIRST] = first;
}

#define GP_FEATURES(X)                                               \
    X(dram, "both kernels' DRAM read + write bandwidth, GB/s")       \
    X(l2, "both kernels' L2 read + write bandwidth, GB/s")           \
    X(ipc, "both kernels' instructions per cycle")                   \
    X(issue, "both kernels' issue_active")                           \
    X(occ, "both kernels' achieved occupancy")                       \
    X(warps_elig, "both kernels' eligible warps per cycle")          \
    X(sms_self, "the kernel's SMs over the H200's 132")              \
    X(sms_other, "the co-runner's SMs over the H200's 132")          \
    X(first, "1 when the kernel is dispatched first")
#define GP_ENUM(name, meaning) GP_##name,
enum { GP_FEATURES(GP_ENUM) GP_D };

/* GPUPool-like: aggregate metrics of the pair. */
static void gp_x(const struct mosaic_pkernel *s, int ss, const struct mosaic_pkernel *o,
                 int so, int first, float *x)
{
    x[GP_dram] = (float)(s->dram_rd + s->dram_wr + o->dram_rd + o->dram_wr);
    x[GP_l2] = (float)(s->l2_rd + s->l2_wr + o->l2_rd + o->l2_wr);
    x[GP_ipc] = (float)(s->ipc + o->ipc);
    x[GP_issue] = (float)(s->issue + o->issue);
    x[GP_occ] = (float)(s->occ + o->occ);
    x[GP_warps_elig] = (float)(s->warps_elig + o->warps_elig);
    x[GP_sms_self] = (float)(ss / 132.0);
    x[GP_sms_other] = (float)(so / 132.0);
    x[GP_first] = (float)first;
}

static void side(const struct mosaic__dataset *ds, const struct mosaic__ds_point *p, int i,
                 const struct mosaic_pkernel **s, int *ss, const struct mosaic_pkernel **o,
                 int *so, int *first, double *iso, double *meas)
{
    *s = i == 0 ? ds->v[p->va].pk : ds->v[p->vb].pk;
    *o = i == 0 ? ds->v[p->vb].pk : ds->v[p->va].pk;
    *ss = i == 0 ? p->sms_a : p->sms_b;
    *so = i == 0 ? p->sms_b : p->sms_a;
    *first = p->mode == MOSAIC_MODE_SHARED ? (i == 0 ? !p->b_first : p->b_first) : 0;
    *iso = i == 0 ? p->iso_a : p->iso_b;
    *meas = i == 0 ? p->meas_a : p->meas_b;
}

/* A kernel of a point the selection scores (the rule of eval.c's). */
static int scored(const struct mosaic__dataset *ds, const struct mosaic__eval_sel *sel,
                  const struct mosaic__ds_point *p, int k)
{
    int fa = ds->v[p->va].fam, fb = ds->v[p->vb].fam;
    if (sel->skip && (sel->skip[fa] || sel->skip[fb])) return 0;
    return !sel->score || sel->score[k == 0 ? fa : fb];
}

/* One baseline prediction scored like Mosaic's (eval.c): the model's and
 * the floor's errors, all rows and rows measured >= 1.1x. */
static void push_score(struct mosaic__score *sc, double pred, double meas, double iso)
{
    double em = 100 * fabs(pred - meas) / meas, ef = 100 * fabs(iso - meas) / meas;
    if (mosaic__errs_push(&sc->model, em) || mosaic__errs_push(&sc->floor, ef) ||
        (meas / iso >= MOSAIC__EVAL_HI &&
         (mosaic__errs_push(&sc->model_hi, em) || mosaic__errs_push(&sc->floor_hi, ef)))) {
        fprintf(stderr, "mosaic-train: out of memory\n");
        exit(1);
    }
}

/* The baselines of one fold: trained on the points that involve no family
 * in skip, scored on the kernels sel takes. */
static void baselines(const struct mosaic__dataset *ds, const unsigned char *skip,
                      const struct mosaic__eval_sel *sel, const char *tmpdir,
                      struct mosaic__score kace[2], struct mosaic__score gp[2])
{
    for (int mode = 0; mode < 2; mode++) {
        double *X = malloc(ds->npt * 2 * KACE_D * sizeof *X), *Y = malloc(ds->npt * 2 * sizeof *Y);
        double coef[KACE_D + 1];
        struct rows r = {0};
        size_t n = 0;
        char path[8192];
        struct mosaic__forest *f;
        if (!X || !Y) {
            fprintf(stderr, "mosaic-train: out of memory\n");
            exit(1);
        }
        r.d = GP_D;
        for (size_t i = 0; i < ds->npt; i++) {
            const struct mosaic__ds_point *p = &ds->pt[i];
            if (p->mode != mode || involves(ds, p, skip)) continue;
            for (int k = 0; k < 2; k++) {
                const struct mosaic_pkernel *s, *o;
                int ss, so, first;
                double iso, meas;
                float gx[GP_D];
                side(ds, p, k, &s, &ss, &o, &so, &first, &iso, &meas);
                kace_x(s, ss, o, so, first, X + n * KACE_D);
                Y[n++] = meas / iso;
                gp_x(s, ss, o, so, first, gx);
                rows_push(&r, gx, (float)log(meas / iso));
            }
        }
        if (mosaic__linreg_fit(X, Y, n, KACE_D, 1e-3, coef) != 0) {
            fprintf(stderr, "mosaic-train: KACE baseline: the fit failed\n");
            exit(1);
        }
        snprintf(path, sizeof path, "%s/gpupool_%d.json", tmpdir, mode);
        xgb_train(&r, path, g_trees, g_depth);
        rows_free(&r);
        f = load_forest(path);
        remove(path);
        for (size_t i = 0; i < ds->npt; i++) {
            const struct mosaic__ds_point *p = &ds->pt[i];
            if (p->mode != mode) continue;
            for (int k = 0; k < 2; k++) {
                const struct mosaic_pkernel *s, *o;
                int ss, so, first;
                double iso, meas, x[KACE_D], sl;
                float gx[GP_D];
                if (!scored(ds, sel, p, k)) continue;
                side(ds, p, k, &s, &ss, &o, &so, &first, &iso, &meas);
                kace_x(s, ss, o, so, first, x);
                sl = mosaic__linreg_predict(coef, KACE_D, x);
                if (!(sl > 0.5)) sl = 0.5;
                push_score(&kace[mode], iso * sl, meas, iso);
                gp_x(s, ss, o, so, first, gx);
                sl = exp(mosaic__forest_predict(f, gx));
                push_score(&gp[mode], iso * sl, meas, iso);
            }
        }
        mosaic__forest_free(f);
        free(X);
        free(Y);
    }
}

/* The method and the frozen constants, written at the end of the doc. */
/* Sections of the doc written by hand (prediction latency, issue 9, from
 * tests/predictor/bench_compare.sh) follow this line, which begins them;
 * mosaic-train keeps them when it rewrites the doc. */
#define DOC_KEEP_MARK                                                                     \
    "<!-- Not generated from here on: mosaic-train keeps this line and what follows it " \
    "when it rewrites this file. -->"

static const char g_method_text[] =
    "## Method\n\n"
    "- **Strict leave-family-out.** For each family outside the lockbox, every model "
    "(Mosaic's inter-SM and residual forests and its analytic coefficients, and the "
    "baselines) is trained on the measurements that involve neither that family nor a "
    "lockbox family, and scored on that family's own kernels only, in the measurements "
    "without a lockbox family (a kernel of another family beside it is not scored: its "
    "family was trained on).\n"
    "- **Lockbox.** One model set trained on every measurement without a lockbox family, "
    "scored on the lockbox families' kernels (every measurement holding one). It is "
    "scored once per model change and never used to keep or revert one "
    "(`predictor/models/h200/LOCKBOX` says how the families were drawn).\n"
    "- **Error.** Absolute percentage error of each scored kernel's predicted co-run "
    "duration, given its gated isolated duration (`iso_gated_*_us`: one launch between "
    "two events, timed as the gated co-run is). **Floor**: predicting no interference "
    "(the isolated duration), on the same kernels. **>= 1.1x**: the kernels whose "
    "measured slowdown is at least 1.1, the ones a scheduler must get right.\n"
    "- **Partitioned**: the per-record median of the repeats. **Shared (order known)**: "
    "the repeats of a record grouped by the observed dispatch order (sign of "
    "`start_offset_samples_us`), each group's median against the prediction for that "
    "order: what a scheduler meets when it makes the order certain by releasing "
    "best-effort work only after the service's kernel has dispatched. **Shared, order "
    "unknown**: the conservative value (`mosaic_predict`, launched together, the worse "
    "order for the protected kernel) against every single repeat.\n"
    "- Predictions go through libmosaic_predict with the fold's models loaded as "
    "flat-array trees; the fold models are kept in `predictor/models/h200/lofo/` and "
    "`lockbox/`, and `mosaic-train` rewrites them.\n\n"
    "## What was fitted where\n\n"
    "| constant or rule | where it is | status |\n"
    "| --- | --- | --- |\n"
    "| inter-SM forest, residual forest | `inter.json`, `shared.json` | fitted inside each "
    "fold |\n"
    "| analytic coefficients (packing weight, intra-SM weight, dispatch gap) | "
    "`analytic.json`, `fit_coef` | grid-searched inside each fold on the fold's training "
    "points |\n"
    "| 80 trees of depth 4, residual label clip 0.4, monotone constraints, both feature "
    "lists | `mosaic_train.c`, `feature_list.h` | frozen 2026-12-01; chosen in issue 4's "
    "model steps (docs/predictor.md) on all 18 families |\n"
    "| carveout rule, landing rules | `placement.c` | frozen; from the placement probes "
    "(`behind.jsonl`, checked on `behind_oos.jsonl`), probe kernels behind 24 zoo kernels "
    "of every category |\n"
    "| residency need, issue-bound threshold 0.8 | `timeline.c` | frozen; from "
    "`residency.jsonl` (12 multi-wave kernels, copy among them) |\n"
    "| forest output clamps (inter [-0.5, 4], residual [-2, 3] in log) | `predict.c` | "
    "frozen; issue 4 |\n"
    "| no shared-mode slowdown below 1 | `predict.c` | rule of issue 9: no measured "
    "mechanism makes a kernel faster beside another; the co-runs measured below 1 are the "
    "gated baseline's launch cost |\n"
    "| conservative value's margin (`cons_margin`) | `analytic.json`, `fit_margin` | fitted "
    "inside each fold: the 95th percentile of measured repeat over the worse order's "
    "prediction on the fold's training records |\n"
    "| dispatch jitter 3.2 us, enqueued-first likelihood 0.504 | `predict.h` | measured: "
    "corun.jsonl shared repeats (p99 of the start offset; 50.4% of 31,892) |\n\n"
    "The frozen rows were chosen before this evaluation existed, on data that included "
    "every family, the lockbox's too: the strict and lockbox scores are free of fitting on "
    "the scored family, not of those earlier choices. From 2026-12-01 no result of this "
    "file is used to change them without saying so here.\n\n"
    "**Baselines.** KACE-like: ridge linear regression of the slowdown on each kernel's "
    "exclusive metrics (DRAM and L2 bandwidth, IPC, issue, occupancy, SM share) and its "
    "co-runner's, as KACE fits a linear model on profiled exclusive metrics. "
    "GPUPool-like: gradient-boosted trees on the pair's summed metrics. Both get the "
    "observed dispatch order as an input and the same training rows as Mosaic's folds. They "
    "are weak reimplementations: neither paper's feature selection nor its training set "
    "(their own GPUs and kernels) is reproduced, and neither models placement; where they "
    "score worse than the floor, that says the reimplementation is weak, not that Mosaic is "
    "strong.\n";

/* ---- main --------------------------------------------------------------------------- */

/* Reads the lockbox's families (one a line, '#' comments) into lock[]
 * (ds's family indices); a name the dataset lacks is an error, so that a
 * typo cannot empty the lockbox. Returns the number of families. */
static int read_lockbox(const char *path, const struct mosaic__dataset *ds, unsigned char *lock)
{
    char err[1024], *txt, *line, *save = NULL;
    int n = 0;
    if (mosaic__read_file(path, 1L << 20, &txt, err, sizeof err)) {
        fprintf(stderr, "mosaic-train: %s (give --lockbox FILE, or --lockbox none to use every "
                        "family)\n", err);
        return -1;
    }
    for (line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        size_t k, len = strcspn(line, "\r#");
        int found = 0;
        line[len] = 0;
        while (len && (line[len - 1] == ' ' || line[len - 1] == '\t')) line[--len] = 0;
        if (!len) continue;
        for (k = 0; k < ds->nfam; k++)
            if (!strcmp(ds->families[k], line)) {
                lock[k] = 1;
                found = 1;
            }
        if (!found) {
            fprintf(stderr, "mosaic-train: %s: family '%s' is not in the dataset's "
                            "variants.jsonl; fix the name\n", path, line);
            free(txt);
            return -1;
        }
        n++;
    }
    free(txt);
    return n;
}

/* The scores of one evaluation: the rows of a table. */
enum { M_MOSAIC, M_PLACE, M_PACK, M_KACE, M_GP, M_N };
static const char *mname[M_N] = {"Mosaic (this predictor)", "placement only",
                                  "+ packing", "KACE-like (linear regression)",
                                  "GPUPool-like (gradient boosting, aggregate)"};

static double pct(struct mosaic__errs *e, int which)
{
    double p50, p95;
    mosaic__eval_pcts(e->e, e->n, &p50, &p95);
    return which ? p95 : p50;
}

/* A table of scores, all rows and rows measured >= 1.1x, each with the
 * no-interference floor on the same rows, to f (markdown) */
static void table(FILE *f, const char *title, struct mosaic__score sc[M_N][2], int nm,
                  const int *which)
{
    fprintf(f, "%s\n\n", title);
    fprintf(f, "| method | mode | kernels | p50 | p95 | floor p50 | floor p95 | kernels >= 1.1x "
               "| p50 | p95 | floor p50 | floor p95 |\n");
    fprintf(f, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < nm; i++)
        for (int mode = 1; mode >= 0; mode--) {
            struct mosaic__score *s = &sc[which[i]][mode];
            if (!s->model.n) continue;
            fprintf(f, "| %s | %s | %zu | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %zu | %.1f%% | "
                       "%.1f%% | %.1f%% | %.1f%% |\n",
                    mname[which[i]], mode ? "partitioned" : "shared (order known)", s->model.n,
                    pct(&s->model, 0), pct(&s->model, 1), pct(&s->floor, 0), pct(&s->floor, 1),
                    s->model_hi.n, pct(&s->model_hi, 0), pct(&s->model_hi, 1),
                    pct(&s->floor_hi, 0), pct(&s->floor_hi, 1));
        }
    fprintf(f, "\n");
}

/* The conservative value's line: share of repeats covered, median excess. */
static void cons_line(FILE *f, const char *what, struct mosaic__score *s)
{
    if (!s->rep_n) return;
    fprintf(f, "| %s | %zu | %.1f%% | %.1f%% | %.1f%% |\n", what, s->rep_n,
            100.0 * (double)s->rep_covered / (double)s->rep_n, pct(&s->rep_excess, 0),
            pct(&s->rep_excess, 1));
}

/* The Mosaic rows of one fold: model, placement only, + packing, and the
 * conservative value. */
static void score_fold(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                       const struct mosaic__eval_sel *sel, struct mosaic__score sc[M_N][2])
{
    char err[1024];
    if (mosaic__eval_points(p, ds, sel, 0, sc[M_MOSAIC], err, sizeof err) ||
        mosaic__eval_points(p, ds, sel, MOSAIC_PC_ALL, sc[M_PLACE], err, sizeof err) ||
        mosaic__eval_points(p, ds, sel, MOSAIC_PC_INTER | MOSAIC_PC_INTRA, sc[M_PACK], err,
                            sizeof err) ||
        mosaic__eval_conservative(p, ds, sel, sc[M_MOSAIC], err, sizeof err)) {
        fprintf(stderr, "mosaic-train: %s\n", err);
        exit(1);
    }
}

/* --check-forests: one model file's predictions through the library
 * (mosaic__forest_predict: its perfect-tree path for rows without NaN, the
 * node array for the others) against XGBoost's own on every row, and on
 * each row again with one feature missing (NaN: its default directions).
 * XGBoost sums the trees in single precision, the library in double: the
 * largest difference allowed is 1e-5, absolute plus relative. 0, or 1
 * with the largest difference and its row named. */
static int check_forest(const char *path, const struct mosaic__forest *f, struct rows *r)
{
    BoosterHandle b;
    DMatrixHandle dm;
    bst_ulong len;
    const float *out;
    double worst = 0;
    size_t worst_row = 0, n = r->n;
    for (size_t i = 0; i < n; i++) {
        float x[(int)MOSAIC__NF_SHARED > (int)MOSAIC__NF_INTER ? (int)MOSAIC__NF_SHARED
                                                               : (int)MOSAIC__NF_INTER];
        memcpy(x, r->x + i * r->d, r->d * sizeof(float));
        x[i % r->d] = NAN;
        rows_push(r, x, r->y[i]);
    }
    XG(XGBoosterCreate(NULL, 0, &b));
    XG(XGBoosterLoadModel(b, path));
    XG(XGDMatrixCreateFromMat(r->x, r->n, r->d, NAN, &dm));
    XG(XGBoosterPredict(b, dm, 0, 0, 0, &len, &out));
    if (len != r->n) {
        fprintf(stderr, "mosaic-train: %s: XGBoost gave %lu predictions for %zu rows\n", path,
                (unsigned long)len, r->n);
        return 1;
    }
    for (size_t i = 0; i < r->n; i++) {
        double mine = mosaic__forest_predict(f, r->x + i * r->d);
        double d = fabs(mine - out[i]) / (1 + fabs((double)out[i]));
        if (!(d <= worst)) {
            worst = d;
            worst_row = i;
        }
    }
    XG(XGDMatrixFree(dm));
    XG(XGBoosterFree(b));
    printf("%s: %zu dataset rows, and each again with one feature missing: largest "
           "difference from XGBoost %.3g (row %zu%s; limit 1e-5)\n", path, n, worst,
           worst_row % n, worst_row >= n ? ", one feature missing" : "");
    return worst <= 1e-5 ? 0 : 1;
}

static int check_forests(const char *models, const struct mosaic__dataset *ds,
                         const struct mosaic_gpu_desc *g)
{
    struct mosaic_predictor *p;
    struct rows ri = {0}, rs = {0};
    char err[4200], path[4096];
    int rc;
    if (mosaic_predictor_open(models, g, &p, err, sizeof err)) {
        fprintf(stderr, "mosaic-train: %s\n", err);
        return 1;
    }
    inter_rows(ds, NULL, &ri, g);
    shared_rows(p, ds, NULL, &rs);
    if (ri.n == 0 || rs.n == 0) {
        fprintf(stderr, "mosaic-train: --check-forests: the dataset has no %s rows\n",
                ri.n ? "shared" : "partitioned");
        rc = 1;
    } else {
        snprintf(path, sizeof path, "%s/inter.json", models);
        rc = check_forest(path, p->inter, &ri);
        snprintf(path, sizeof path, "%s/shared.json", models);
        rc |= check_forest(path, p->shared, &rs);
    }
    rows_free(&ri);
    rows_free(&rs);
    mosaic_predictor_close(p);
    return rc;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: mosaic-train --out DIR [--data DIR] [--doc FILE] [--lockbox FILE|none]\n"
            "                    [--no-eval] [--trees N] [--depth N] [--clip Y] [--no-monotone]\n"
            "                    [--no-coef-fit]\n"
            "       mosaic-train --eval-only MODELS [--data DIR] [--max-p95 S,P] [--max-iso-p95 P]\n"
            "                    [--dump CSV]\n"
            "       mosaic-train --features\n"
            "       mosaic-train --check-forests MODELS [--data DIR]\n"
            "Training writes the models into --out DIR (required: no default, so that the\n"
            "committed predictor/models/h200 is rewritten only when named) and the evaluation\n"
            "into --doc FILE (default DIR/predictor-eval.md; docs/predictor-eval.md only when\n"
            "named). --data defaults to profiler/data/h200.\n");
}

int main(int argc, char **argv)
{
    /* No default for --out: a run in a checkout would otherwise overwrite
     * its shipped models and docs/predictor-eval.md (issue 9). */
    const char *data = "profiler/data/h200", *out = NULL, *doc = NULL,
               *lockbox = "predictor/models/h200/LOCKBOX";
    char docbuf[4096];
    int do_eval = 1;
    const char *eval_models = NULL, *check_models = NULL;
    double max95[2] = {INFINITY, INFINITY}; /* shared, partitioned */
    double max95_iso = INFINITY;
    FILE *dump = NULL;
    const char *dump_path = NULL;
    struct mosaic_gpu_desc g;
    struct mosaic__dataset ds;
    struct mosaic_predictor *p0;
    char err[1024];
    static struct mosaic__score S[M_N][2], L[M_N][2]; /* strict folds, lockbox */
    size_t npts[2] = {0, 0};
    struct mosaic__coef fullc;
    unsigned char *lock = NULL, *skip = NULL, *score = NULL;
    int nlock = 0;
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--doc") && i + 1 < argc) doc = argv[++i];
        else if (!strcmp(argv[i], "--lockbox") && i + 1 < argc) lockbox = argv[++i];
        else if (!strcmp(argv[i], "--no-eval")) do_eval = 0;
        else if (!strcmp(argv[i], "--features")) {
            print_features("inter.json", mosaic__features_inter, MOSAIC__NF_INTER);
            print_features("shared.json", mosaic__features_shared, MOSAIC__NF_SHARED);
            return 0;
        }
        else if (!strcmp(argv[i], "--eval-only") && i + 1 < argc) eval_models = argv[++i];
        else if (!strcmp(argv[i], "--check-forests") && i + 1 < argc) check_models = argv[++i];
        else if (!strcmp(argv[i], "--max-iso-p95") && i + 1 < argc) {
            char *end;
            max95_iso = strtod(argv[++i], &end);
            if (*end || !(max95_iso > 0)) {
                fprintf(stderr, "mosaic-train: --max-iso-p95 PERCENT\n");
                return 1;
            }
        } else if (!strcmp(argv[i], "--max-p95") && i + 1 < argc) {
            if (sscanf(argv[++i], "%lf,%lf", &max95[0], &max95[1]) != 2) {
                fprintf(stderr, "mosaic-train: --max-p95 SHARED,PARTITIONED (percent)\n");
                return 1;
            }
        }
        else if (!strcmp(argv[i], "--no-monotone")) g_use_mono = 0;
        else if (!strcmp(argv[i], "--no-coef-fit")) g_fit_coef = 0;
        else if (!strcmp(argv[i], "--clip") && i + 1 < argc) g_clip = atof(argv[++i]);
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump_path = argv[++i];
        else if (!strcmp(argv[i], "--trees") && i + 1 < argc) g_trees = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--depth") && i + 1 < argc) g_depth = atoi(argv[++i]);
        else {
            usage();
            return 1;
        }
    }
    if (check_models) {
        struct mosaic__dataset cds;
        struct mosaic_predictor *cp;
        int rc;
        mosaic_gpu_desc_h200(&g);
        cp = base_pred(&g);
        if (mosaic__dataset_load(data, cp, &cds, err, sizeof err)) {
            fprintf(stderr, "mosaic-train: %s\n", err);
            mosaic_predictor_close(cp);
            return 1;
        }
        rc = check_forests(check_models, &cds, &g);
        mosaic__dataset_free(&cds);
        mosaic_predictor_close(cp);
        return rc;
    }
    if (!eval_models && !out) {
        fprintf(stderr, "mosaic-train: give --out DIR, the directory the trained models go "
                        "to (there is no default, so that a run cannot overwrite the "
                        "committed predictor/models/h200 by accident; give it to retrain "
                        "them)\n");
        return 1;
    }
    if (!eval_models && !doc) {
        if (snprintf(docbuf, sizeof docbuf, "%s/predictor-eval.md", out) >= (int)sizeof docbuf) {
            fprintf(stderr, "mosaic-train: %s: --out path too long\n", out);
            return 1;
        }
        doc = docbuf;
    }
    if (dump_path && !eval_models) {
        fprintf(stderr, "mosaic-train: --dump goes with --eval-only MODELS (it writes those "
                        "models' predictions)\n");
        return 1;
    }
    if (dump_path && !(dump = fopen(dump_path, "w"))) {
        fprintf(stderr, "mosaic-train: %s: %s\n", dump_path, strerror(errno));
        return 1;
    }
    if (g_trees < 1 || g_trees > 2000 || g_depth < 1 || g_depth > 12) {
        fprintf(stderr, "mosaic-train: --trees in [1, 2000], --depth in [1, 12]\n");
        return 1;
    }
    mosaic_gpu_desc_h200(&g);
    p0 = base_pred(&g);
    if (mosaic__dataset_load(data, p0, &ds, err, sizeof err)) {
        fprintf(stderr, "mosaic-train: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < ds.npt; i++) npts[ds.pt[i].mode]++;
    fprintf(stderr, "mosaic-train: %zu records, %zu points (shared %zu, partitioned %zu), "
                    "%zu variants, %zu families\n",
            ds.n_records, ds.npt, npts[0], npts[1], ds.nv, ds.nfam);
    /* Nothing to train or score on is an error of its own, before any
     * gate: an empty score must never read as one within its bounds. */
    if (ds.npt == 0) {
        fprintf(stderr, "mosaic-train: %s/corun.jsonl: no co-run point (%zu successful "
                        "co-run records): nothing to %s; measure some (mosaic-zoo corun) "
                        "or give another --data\n", data, ds.n_records,
                eval_models ? "score" : "train on");
        mosaic__dataset_free(&ds);
        mosaic_predictor_close(p0);
        if (dump) fclose(dump);
        return 1;
    }
    if (eval_models) {
        int rc = eval_only(eval_models, data, &ds, max95[0], max95[1], max95_iso, dump);
        if (dump) fclose(dump);
        mosaic__dataset_free(&ds);
        mosaic_predictor_close(p0);
        return rc;
    }
    lock = calloc(ds.nfam + 1, 1);
    skip = calloc(ds.nfam + 1, 1);
    score = calloc(ds.nfam + 1, 1);
    if (!lock || !skip || !score) {
        fprintf(stderr, "mosaic-train: out of memory\n");
        return 1;
    }
    if (strcmp(lockbox, "none") && (nlock = read_lockbox(lockbox, &ds, lock)) < 0) return 1;

    /* the shipped models: all data, the lockbox included (issue 9 allows
     * it; the lockbox is scored by the models of its own fold below) */
    {
        struct mosaic_predictor *p = train_mosaic(&g, &ds, NULL, out);
        fullc = p->coef;
        mosaic_predictor_close(p);
    }
    if (!do_eval) goto done;

    /* Strict leave-family-out: fold f trains on the points involving
     * neither f nor a lockbox family, and scores only f's own kernels, in
     * the points without a lockbox family. */
    for (size_t f = 0; f < ds.nfam; f++) {
        char dir[4096];
        struct mosaic_predictor *p;
        struct mosaic__eval_sel sel = {score, lock};
        if (lock[f]) continue;
        memcpy(skip, lock, ds.nfam);
        skip[f] = 1;
        memset(score, 0, ds.nfam);
        score[f] = 1;
        snprintf(dir, sizeof dir, "%s/lofo/%s", out, ds.families[f]);
        p = train_mosaic(&g, &ds, skip, dir);
        score_fold(p, &ds, &sel, S);
        mosaic_predictor_close(p);
        baselines(&ds, skip, &sel, dir, S[M_KACE], S[M_GP]);
        fprintf(stderr, "mosaic-train: fold %zu/%zu (%s) done\n", f + 1, ds.nfam,
                ds.families[f]);
    }
    /* The lockbox: one model set trained without any of its families,
     * scored on their kernels only (every point holding one). */
    if (nlock) {
        char dir[4096];
        struct mosaic_predictor *p;
        struct mosaic__eval_sel sel = {lock, NULL};
        snprintf(dir, sizeof dir, "%s/lockbox", out);
        p = train_mosaic(&g, &ds, lock, dir);
        score_fold(p, &ds, &sel, L);
        mosaic_predictor_close(p);
        baselines(&ds, lock, &sel, dir, L[M_KACE], L[M_GP]);
        fprintf(stderr, "mosaic-train: lockbox done\n");
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);

    /* the doc; what follows DOC_KEEP_MARK in the file it replaces is kept */
    {
        FILE *f;
        char now[32], derr[1024], *prev = NULL;
        const char *keep = NULL;
        time_t t = time(NULL);
        struct stat dst;
        static const int all[] = {M_MOSAIC, M_KACE, M_GP}, abl[] = {M_PLACE, M_PACK, M_MOSAIC};
        strftime(now, sizeof now, "%Y-%m-%d %H:%M UTC", gmtime(&t));
        if (stat(doc, &dst) == 0) {
            if (mosaic__read_file(doc, 16L << 20, &prev, derr, sizeof derr)) {
                fprintf(stderr, "mosaic-train: %s (the doc it would rewrite; give another "
                                "--doc)\n", derr);
                return 1;
            }
            keep = strstr(prev, DOC_KEEP_MARK);
        }
        f = fopen(doc, "w");
        if (!f) {
            fprintf(stderr, "mosaic-train: %s: %s\n", doc, strerror(errno));
            free(prev);
            return 1;
        }
        fprintf(f, "# Predictor accuracy on the H200 dataset (issues 4, 9)\n\n");
        fprintf(f, "Generated by `mosaic-train` on %s from `%s` (corun.jsonl: %zu co-run "
                   "records; zoo.profile.json; variant_kernels.json) in %.0f s on this machine; "
                   "models in `%s`. XGBoost %d trees of depth %d per model; analytic "
                   "coefficients of the all-data model: packing %.3g, intra-SM weight %.3g, "
                   "dispatch gap %.3g us. How to read it, what is frozen and where it came "
                   "from: the end of this file.\n\n",
                now, data, ds.n_records,
                (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), out,
                g_trees, g_depth, fullc.pack, fullc.intra_w, fullc.gap_us);
        fprintf(f, "Lockbox (`%s`, fixed 2026-12-01 before any score was seen):", lockbox);
        for (size_t k = 0; k < ds.nfam; k++)
            if (lock[k]) fprintf(f, " %s", ds.families[k]);
        fprintf(f, ". Its families are in no fold's training and no fold's score; the lockbox "
                   "rows below come from one model set trained without all of them.\n\n");
        table(f, "## Strict leave-family-out (only the held-out family's own kernels)", S, 3, all);
        table(f, "## Lockbox families, models trained without them", L, 3, all);
        fprintf(f, "## Shared mode, order unknown: the conservative value against every repeat\n\n"
                   "For each shared measurement and each scored kernel: `mosaic_predict` with "
                   "the measurement's enqueue order (launched together, within the dispatch "
                   "jitter, so both orders are predicted), protect = that kernel; the "
                   "conservative value (its worse order) against each of the 7 repeats.\n\n");
        fprintf(f, "| models | repeats | conservative >= measured | median excess | p95 excess |\n");
        fprintf(f, "| --- | --- | --- | --- | --- |\n");
        cons_line(f, "strict folds", &S[M_MOSAIC][0]);
        cons_line(f, "lockbox", &L[M_MOSAIC][0]);
        fprintf(f, "\n");
        table(f, "## Ablation (Mosaic's components, strict folds)", S, 3, abl);
        fprintf(f, "In partitioned mode placement and packing add nothing: each kernel's "
                   "isolated duration on its own SMs is an input, so 'placement only' "
                   "predicts no slowdown (it is the floor).\n\n");
        fprintf(f, "%s", g_method_text);
        /* The issue-14 scores are another tool's (this file is rewritten
         * whole): a pointer, so that a retrain keeps the link. */
        fprintf(f, "\n## Offset and two-process co-runs (issue 14)\n\n"
                   "The predictor on the H200 offset co-runs and two-process MPS co-runs "
                   "(profiler/data/h200/offsets/), queried with only what a scheduler knows: "
                   "docs/offset-eval.md, written by `mosaic-offset-eval --doc` and checked "
                   "against it by the ctest predictor_offset_eval_doc.\n");
        if (keep) fprintf(f, "\n%s", keep);
        free(prev);
        if (fclose(f) != 0) {
            fprintf(stderr, "mosaic-train: %s: %s\n", doc, strerror(errno));
            return 1;
        }
    }
    {
        static const int all[] = {M_MOSAIC, M_PLACE, M_PACK, M_KACE, M_GP};
        table(stdout, "strict leave-family-out", S, 5, all);
        table(stdout, "lockbox", L, 5, all);
        printf("| conservative | repeats | covered | median excess | p95 excess |\n");
        cons_line(stdout, "strict folds", &S[M_MOSAIC][0]);
        cons_line(stdout, "lockbox", &L[M_MOSAIC][0]);
    }
done:
    for (int m = 0; m < M_N; m++)
        for (int mode = 0; mode < 2; mode++) {
            mosaic__score_free(&S[m][mode]);
            mosaic__score_free(&L[m][mode]);
        }
    if (dump) fclose(dump);
    free(lock);
    free(skip);
    free(score);
    mosaic__dataset_free(&ds);
    mosaic_predictor_close(p0);
    return 0;
}
