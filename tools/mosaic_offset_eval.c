/*
 * mosaic-offset-eval: scores the predictor on the offset co-runs and the
 * two-process MPS co-runs of issue 14 (profiler/data/h200/offsets/), with
 * only what a scheduler knows: the requested delay and which kernel leads,
 * never the observed dispatch order or the measured offset.
 *
 *   mosaic-offset-eval [--data DIR] [--offsets DIR] [--models DIR]
 *                      [--lockbox-models DIR] [--ignore-offsets] [--point likely|mean]
 *                      [--expect SET,STAT,MAX ...] [--expect-worse]
 *                      [--doc FILE] [--dump CSV]
 *
 * --data: the dataset whose profiles name the variants (profiler/data/h200);
 * --offsets: the issue 14 rows (DATA/offsets). Rows with a family listed in
 * MODELS/LOCKBOX are predicted with --lockbox-models (MODELS/lockbox), which
 * never saw those families; the others with the shipped MODELS.
 * Sets: shared, part32, part64 (one process; A on 32 or 64 SMs, B on the
 * rest), mps (two processes under MPS), one (the same pairs as mps, one
 * process, shared), lowprio (two processes, B's at CUDA_MPS_CLIENT_PRIORITY
 * 1; the priority is not a query input) and lowprio_n (the same rows at
 * normal priority, from mps). Two processes are compared with one (where
 * they differ, whether the shift is systematic, and a per-group correction
 * fitted leave-family-out without the lockbox families and scored). Each kernel's co-run duration is predicted from the
 * query offset +-delay (B after A: +, A after B: -; a delay of 0 is +-0.1
 * us, so that the kernel launched first is known) with the isolated
 * durations measured the same way (iso_sync_*). The point prediction within
 * the dispatch jitter is the most likely order's outcome (the kernel
 * launched first dispatches first), or with --point mean the
 * likelihood-weighted mean of the two orders' outcomes (bimodal outcomes
 * make that mean land between them).
 * --ignore-offsets: every query launched back to back, +-0.1 us, the
 * leader kept and the delay dropped (a deliberately wrong input). --expect SET,STAT,MAX: fails (exit 1) when STAT (p50, p95, p50hi,
 * p95hi: abs. % error; excess: median conservative excess %) of SET is past
 * MAX; --expect-worse: fails unless the offsets-ignored prediction and the
 * no-interference floor have a larger p50 than the model on every set.
 * --doc FILE: the whole evaluation as markdown (docs/offset-eval.md, which
 * the ctest predictor_offset_eval_doc compares with a fresh one); --dump
 * CSV: one line per scored kernel.
 * Exit status 0, 1 (a bound failed) or 2 (bad input, with a message).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core.h"
#include "json.h"
#include "train_internal.h"

#define MAXS 16 /* repeats kept per row (the data has 5) */

enum { S_SHARED, S_P32, S_P64, S_MPS, S_ONE, S_LOW, S_LOWN, S_N };
static const char *set_name[S_N] = {"shared", "part32", "part64", "mps", "one", "lowprio",
                                    "lowprio_n"};

struct row {
    int set, mode, sms_a, sms_b, leader_b, va, vb, lock;
    double delay, iso[2], meas[2], lo[2], hi[2];
    double pred[2]; /* the point prediction (score_rows) */
    int n[2];
    double s[2][MAXS];
    char a[96], b[96], spec[16], cat[2][16];
};

struct rows {
    struct row *r;
    size_t n, cap;
    const struct mosaic__dataset *ds;
    int set;        /* the set of the file being read */
    int mps_side;   /* 0: mps_a.jsonl, 1: mps_b.jsonl */
    size_t unknown; /* rows naming a variant the dataset lacks */
    size_t no_iso;  /* rows without an iso_sync baseline */
};

static const char *str_of(cJSON *r, const char *k)
{
    cJSON *x = cJSON_GetObjectItemCaseSensitive(r, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

static double num_of(cJSON *r, const char *k)
{
    cJSON *x = cJSON_GetObjectItemCaseSensitive(r, k);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static int variant(const struct mosaic__dataset *ds, const char *name)
{
    for (size_t i = 0; i < ds->nv; i++)
        if (!strcmp(ds->v[i].name, name)) return (int)i;
    return -1;
}

/* Reads samples k of a row; their min and max give the run-to-run spread. */
static int samples(cJSON *r, const char *key, struct row *w, int k)
{
    cJSON *a = cJSON_GetObjectItemCaseSensitive(r, key), *x;
    w->n[k] = 0;
    w->lo[k] = INFINITY;
    w->hi[k] = -INFINITY;
    if (!cJSON_IsArray(a)) return -1;
    cJSON_ArrayForEach(x, a)
    {
        if (!cJSON_IsNumber(x) || !(x->valuedouble > 0)) return -1;
        if (w->n[k] < MAXS) w->s[k][w->n[k]++] = x->valuedouble;
        if (x->valuedouble < w->lo[k]) w->lo[k] = x->valuedouble;
        if (x->valuedouble > w->hi[k]) w->hi[k] = x->valuedouble;
    }
    return w->n[k] ? 0 : -1;
}

static int copy_name(char *dst, size_t n, const char *src)
{
    return !src || snprintf(dst, n, "%s", src) >= (int)n ? -1 : 0;
}

static struct row *push(struct rows *c, const char *where, char *err, size_t errlen)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1024;
        struct row *r = realloc(c->r, cap * sizeof *r);
        if (!r) {
            mosaic__errf(err, errlen, MOSAIC_ENOMEM, where, NULL, "out of memory");
            return NULL;
        }
        c->r = r;
        c->cap = cap;
    }
    memset(&c->r[c->n], 0, sizeof c->r[c->n]);
    return &c->r[c->n];
}

/* The fields both record kinds share: the pair, its order and delay. */
static int common(struct rows *c, cJSON *r, struct row *w, const char *where, char *err,
                  size_t errlen)
{
    const char *order = str_of(r, "order");
    /* delay_us is B's requested start minus A's: negative when B leads */
    w->delay = fabs(num_of(r, "delay_us"));
    if (copy_name(w->a, sizeof w->a, str_of(r, "a")) ||
        copy_name(w->b, sizeof w->b, str_of(r, "b")) ||
        copy_name(w->spec, sizeof w->spec, str_of(r, "delay_spec")) ||
        copy_name(w->cat[0], sizeof w->cat[0], str_of(r, "category_a")) ||
        copy_name(w->cat[1], sizeof w->cat[1], str_of(r, "category_b")) || !order ||
        (strcmp(order, "ab") && strcmp(order, "ba")) || !(w->delay >= 0))
        return mosaic__errf(err, errlen, MOSAIC_EFORMAT, where, NULL,
                            "a row needs a and b (variant names), category_a/_b, "
                            "delay_spec, order (\"ab\" or \"ba\") and delay_us (a number)");
    w->leader_b = !strcmp(order, "ba");
    w->va = variant(c->ds, w->a);
    w->vb = variant(c->ds, w->b);
    return 0;
}

/* One line of offset_{shared,part32,part64}.jsonl: a successful
 * corun_offset record; the header, stream checks and failed rows are
 * skipped. */
static int on_offset(void *ctx, const char *where, long line, cJSON *r, char *err,
                     size_t errlen)
{
    struct rows *c = ctx;
    const char *rec = str_of(r, "record"), *mode = str_of(r, "mode");
    struct row *w;
    int rc;
    (void)line;
    if (!rec || strcmp(rec, "corun_offset") || !cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")))
        return 0;
    if (!(w = push(c, where, err, errlen))) return MOSAIC_ENOMEM;
    if ((rc = common(c, r, w, where, err, errlen))) return rc;
    w->set = c->set;
    w->mode = mode && !strcmp(mode, "partitioned") ? MOSAIC_MODE_PARTITIONED : MOSAIC_MODE_SHARED;
    w->sms_a = (int)num_of(r, "sms_a");
    w->sms_b = (int)num_of(r, "sms_b");
    w->iso[0] = num_of(r, "iso_sync_a_us");
    w->iso[1] = num_of(r, "iso_sync_b_us");
    w->meas[0] = num_of(r, "corun_a_us");
    w->meas[1] = num_of(r, "corun_b_us");
    /* Some rows have no baseline under the protocol (it was not measured
     * for that kernel in that role); without it there is no slowdown to
     * score, so they are counted and left out. */
    if (!(w->iso[0] > 0 && w->iso[1] > 0)) {
        c->no_iso++;
        return 0;
    }
    if (!(w->meas[0] > 0 && w->meas[1] > 0) ||
        samples(r, "corun_a_samples_us", w, 0) || samples(r, "corun_b_samples_us", w, 1))
        return mosaic__errf(err, errlen, MOSAIC_EFORMAT, where, NULL,
                            "a successful corun_offset row needs corun_a_us, corun_b_us (> 0) "
                            "and corun_{a,b}_samples_us");
    if (w->va < 0 || w->vb < 0) {
        c->unknown++;
        return 0;
    }
    c->n++;
    return 0;
}

/* One line of mps_a.jsonl or mps_b.jsonl: one process's side of a row
 * (its own kernel's iso_sync_us, corun_us and samples). */
static int on_mps(void *ctx, const char *where, long line, cJSON *r, char *err, size_t errlen)
{
    struct rows *c = ctx;
    const char *rec = str_of(r, "record");
    struct row *w;
    int rc, k = c->mps_side;
    (void)line;
    if (!rec || strcmp(rec, "mps_offset") || !cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")))
        return 0;
    if (!(w = push(c, where, err, errlen))) return MOSAIC_ENOMEM;
    if ((rc = common(c, r, w, where, err, errlen))) return rc;
    w->set = c->set;
    w->mode = MOSAIC_MODE_SHARED;
    w->iso[k] = num_of(r, "iso_sync_us");
    w->meas[k] = num_of(r, "corun_us");
    if (!(w->iso[k] > 0 && w->meas[k] > 0) || samples(r, "corun_samples_us", w, k))
        return mosaic__errf(err, errlen, MOSAIC_EFORMAT, where, NULL,
                            "a successful mps_offset row needs iso_sync_us and corun_us (> 0) "
                            "and corun_samples_us");
    if (w->va < 0 || w->vb < 0) {
        c->unknown++;
        return 0;
    }
    c->n++;
    return 0;
}

static int same_row(const struct row *x, const struct row *y)
{
    return !strcmp(x->a, y->a) && !strcmp(x->b, y->b) && x->leader_b == y->leader_b &&
           !strcmp(x->spec, y->spec);
}

/* Joins process B's sides (src) into process A's rows of dst; rows
 * without their other side are dropped. */
static void join_mps(struct rows *dst, const struct rows *src)
{
    size_t keep = 0;
    for (size_t i = 0; i < dst->n; i++) {
        struct row *w = &dst->r[i];
        for (size_t j = 0; j < src->n; j++) {
            const struct row *o = &src->r[j];
            if (!same_row(w, o)) continue;
            w->iso[1] = o->iso[1];
            w->meas[1] = o->meas[1];
            w->lo[1] = o->lo[1];
            w->hi[1] = o->hi[1];
            w->n[1] = o->n[1];
            memcpy(w->s[1], o->s[1], sizeof w->s[1]);
            dst->r[keep++] = *w;
            break;
        }
    }
    dst->n = keep;
}

static int read_lockbox(const char *path, const struct mosaic__dataset *ds, unsigned char *lock)
{
    char line[256];
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "mosaic-offset-eval: %s: cannot open the lockbox list (give "
                "--models a directory with LOCKBOX)\n", path);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, " \t\r\n#")] = 0;
        for (size_t i = 0; line[0] && i < ds->nfam; i++)
            if (!strcmp(ds->families[i], line)) lock[i] = 1;
    }
    fclose(f);
    return 0;
}

/* The query of a row: the offset a scheduler requests. */
static void query_of(const struct mosaic__dataset *ds, const struct row *w, int ignore,
                     int protect, struct mosaic_pred_query *q)
{
    double d = ignore || w->delay == 0 ? 0.1 : w->delay;
    memset(q, 0, sizeof *q);
    q->a = ds->v[w->va].pk;
    q->b = ds->v[w->vb].pk;
    q->mode = w->mode;
    q->sms_a = w->sms_a;
    q->sms_b = w->sms_b;
    q->offset_us = w->leader_b ? -d : d;
    q->protect = protect;
    q->iso_a_us = w->iso[0];
    q->iso_b_us = w->iso[1];
}

#define NSPEC 9 /* the delay specs of the data, in order */
static const char *spec_name[NSPEC] = {"0", "2", "5", "10", "20", "50", "0.5x", "1x", "1.5x"};

struct score {
    struct mosaic__errs model, floor, model_hi, floor_hi, ign;
    struct mosaic__errs by_spec[NSPEC][2]; /* model, floor */
    struct mosaic__errs lock_model, lock_floor; /* rows with a lockbox family */
    size_t rep_n, rep_cov, n_lock, n_ship;
    struct mosaic__errs excess;
    /* the followers at the 1x delay, and those released while the
     * leader's isolated duration had not yet run out (0 < leader's iso -
     * delay <= the dispatch jitter): model, floor */
    size_t n_1x_follow;
    struct mosaic__errs edge_m, edge_f;
};

static double p(struct mosaic__errs *e, int p95)
{
    double a, b;
    mosaic__eval_pcts(e->e, e->n, &a, &b);
    return p95 ? b : a;
}

static int push_err(struct mosaic__errs *e, double v)
{
    if (mosaic__errs_push(e, v)) {
        fprintf(stderr, "mosaic-offset-eval: out of memory\n");
        return -1;
    }
    return 0;
}

/* 0: the point prediction is the most likely order's outcome (within the
 * jitter the kernel launched first, MOSAIC_ENQUEUED_FIRST_P); 1: the
 * likelihood-weighted mean of the orders' outcomes (--point mean). */
static int g_point_mean;

static double point_of(const struct mosaic_pred_answer *a, int k)
{
    double v = 0;
    int best = 0;
    for (int o = 0; o < a->n_orders; o++) {
        v += a->order[o].likelihood * a->order[o].r.k[k].duration_us;
        if (a->order[o].likelihood > a->order[best].likelihood) best = o;
    }
    return g_point_mean ? v : a->order[best].r.k[k].duration_us;
}

/* --dump FILE: one CSV line per scored kernel (set, pair, order, delay,
 * which kernel, its isolated and measured durations, the point
 * prediction), for looking into the scores. */
static FILE *g_dump;

static int score_rows(struct mosaic_predictor *ship, struct mosaic_predictor *lockp,
                      const struct mosaic__dataset *ds, const unsigned char *lock,
                      struct rows *rs, struct score sc[S_N])
{
    char err[1024];
    for (size_t i = 0; i < rs->n; i++) {
        struct row *w = &rs->r[i];
        struct score *s = &sc[w->set];
        int lk = lock[ds->v[w->va].fam] || lock[ds->v[w->vb].fam];
        struct mosaic_predictor *pr = lk ? lockp : ship;
        for (int k = 0; k < 2; k++) {
            struct mosaic_pred_query q;
            struct mosaic_pred_answer an, ai;
            double pred = 0, predi = 0, em, ef;
            query_of(ds, w, 0, k, &q);
            if (mosaic_predict(pr, &q, &an, err, sizeof err)) goto fail;
            query_of(ds, w, 1, k, &q);
            if (mosaic_predict(pr, &q, &ai, err, sizeof err)) goto fail;
            pred = point_of(&an, k);
            predi = point_of(&ai, k);
            w->pred[k] = pred;
            if (g_dump)
                fprintf(g_dump, "%s,%s,%s,%s,%s,%.4f,%c,%d,%.4f,%.4f,%.4f,%.4f,%.4f\n",
                        set_name[w->set], w->a, w->b, w->leader_b ? "ba" : "ab", w->spec,
                        w->delay, "ab"[k], (k == 1) == w->leader_b, w->iso[k], w->meas[k],
                        pred, w->lo[k], w->hi[k]);
            em = 100 * fabs(pred - w->meas[k]) / w->meas[k];
            ef = 100 * fabs(w->iso[k] - w->meas[k]) / w->meas[k];
            if (push_err(&s->model, em) || push_err(&s->floor, ef) ||
                push_err(&s->ign, 100 * fabs(predi - w->meas[k]) / w->meas[k]))
                return -1;
            for (int d = 0; d < NSPEC; d++)
                if (!strcmp(w->spec, spec_name[d]) &&
                    (push_err(&s->by_spec[d][0], em) || push_err(&s->by_spec[d][1], ef)))
                    return -1;
            if (w->meas[k] / w->iso[k] >= MOSAIC__EVAL_HI &&
                (push_err(&s->model_hi, em) || push_err(&s->floor_hi, ef)))
                return -1;
            if (lk && (push_err(&s->lock_model, em) || push_err(&s->lock_floor, ef))) return -1;
            if (k != w->leader_b && !strcmp(w->spec, "1x")) {
                double gap = w->iso[w->leader_b] - w->delay;
                s->n_1x_follow++;
                if (gap > 0 && gap <= MOSAIC_DISPATCH_JITTER_US &&
                    (push_err(&s->edge_m, em) || push_err(&s->edge_f, ef)))
                    return -1;
            }
            if (lk) s->n_lock++;
            else s->n_ship++;
            /* The conservative value is what admission uses where the
             * order is unknown: within the jitter. */
            if (w->delay > MOSAIC_DISPATCH_JITTER_US) continue;
            for (int j = 0; j < w->n[k]; j++) {
                s->rep_n++;
                s->rep_cov += an.conservative_us >= w->s[k][j];
                if (push_err(&s->excess, 100 * (an.conservative_us - w->s[k][j]) / w->s[k][j]))
                    return -1;
            }
        }
        continue;
    fail:
        fprintf(stderr, "mosaic-offset-eval: %s + %s (%s, delay %s): %s\n", w->a, w->b,
                set_name[w->set], w->spec, err);
        return -1;
    }
    return 0;
}

/* Two processes against one: a kernel differs when the ranges of its
 * per-repeat slowdowns in the two arrangements do not overlap (the rule of
 * docs/dataset.md, "Offset co-runs and two processes"). Counted by
 * category pair, by which kernel leads (and whether the kernel is the
 * leader), and by delay. */
struct tally {
    char key[48];
    size_t n, diff, big; /* big: differs, and the slowdowns by more than 10% */
    struct mosaic__errs d; /* signed (mps - one) / one, % */
};

static int tally_add(struct tally *t, size_t *nt, size_t cap, const char *key, int differs,
                     double d)
{
    size_t i;
    for (i = 0; i < *nt && strcmp(t[i].key, key); i++) {}
    if (i == *nt) {
        if (*nt == cap) return 0;
        memset(&t[i], 0, sizeof t[i]);
        if (snprintf(t[i].key, sizeof t[i].key, "%s", key) >= (int)sizeof t[i].key) return 0;
        (*nt)++;
    }
    t[i].n++;
    t[i].diff += differs;
    t[i].big += differs && fabs(d) > 10;
    return differs ? push_err(&t[i].d, d) : 0;
}

/* The groups of the systematic check and of the MPS correction: the
 * kernel's role and whether the delay is within the dispatch jitter (where
 * the GPU picks the order). */
#define NGRP 4
static const char *grp_name[NGRP] = {"leader, delay <= jitter", "leader, delay > jitter",
                                     "follower, delay <= jitter", "follower, delay > jitter"};

static int grp_of(const struct row *m, int k)
{
    int leads = (k == 1) == m->leader_b;
    return (leads ? 0 : 2) + (m->delay > MOSAIC_DISPATCH_JITTER_US);
}

/* One kernel of a two-process row with its one-process twin. */
struct citem {
    int fam, ofam, lock, g;
    double ratio; /* two-process slowdown / one-process slowdown */
    double pred, meas, iso;
};

struct cmp {
    struct tally t[3][64];
    size_t nt[3], n, diff, flip;
    /* the signed difference (two-process / one-process slowdown - 1, %)
     * of every kernel, by group; [NGRP]: all */
    struct mosaic__errs d[NGRP + 1];
    size_t pos[NGRP + 1];
    /* the correction, leave-family-out on the non-lockbox rows, and on the
     * lockbox rows with factors from all non-lockbox rows */
    struct mosaic__errs unc, cor, flo, unc_l, cor_l, flo_l;
    double k_all[NGRP];
    size_t n_folds;
};

static double med_of(struct mosaic__errs *e)
{
    return e->n ? p(e, 0) : NAN;
}

/* The per-group factors: the median ratio over the items train() accepts. */
static int fit_k(const struct citem *it, size_t n, int hold_fam, double k[NGRP])
{
    for (int g = 0; g < NGRP; g++) {
        struct mosaic__errs e = {0};
        for (size_t i = 0; i < n; i++) {
            const struct citem *c = &it[i];
            if (c->g != g || c->lock || c->fam == hold_fam || c->ofam == hold_fam) continue;
            if (push_err(&e, c->ratio)) {
                mosaic__errs_free(&e);
                return -1;
            }
        }
        k[g] = e.n ? med_of(&e) : 1;
        mosaic__errs_free(&e);
    }
    return 0;
}

static int err3(struct mosaic__errs *u, struct mosaic__errs *c, struct mosaic__errs *f,
                const struct citem *x, double k)
{
    return push_err(u, 100 * fabs(x->pred - x->meas) / x->meas) ||
           push_err(c, 100 * fabs(x->pred * k - x->meas) / x->meas) ||
           push_err(f, 100 * fabs(x->iso - x->meas) / x->meas);
}

/* Leave-family-out: for each family outside the lockbox, factors fitted on
 * the rows with neither that family nor a lockbox family, applied to that
 * family's own kernels (as mosaic-train's strict folds); the lockbox rows
 * get the factors of all non-lockbox rows. */
static int mps_correct(const struct citem *it, size_t n, const struct mosaic__dataset *ds,
                       const unsigned char *lock, struct cmp *C)
{
    double k[NGRP];
    for (size_t f = 0; f < ds->nfam; f++) {
        int any = 0;
        if (lock[f]) continue;
        for (size_t i = 0; i < n && !any; i++) any = !it[i].lock && it[i].fam == (int)f;
        if (!any) continue;
        if (fit_k(it, n, (int)f, k)) return -1;
        C->n_folds++;
        for (size_t i = 0; i < n; i++)
            if (!it[i].lock && it[i].fam == (int)f &&
                err3(&C->unc, &C->cor, &C->flo, &it[i], k[it[i].g]))
                return -1;
    }
    if (fit_k(it, n, -1, C->k_all)) return -1;
    for (size_t i = 0; i < n; i++)
        if (it[i].lock && err3(&C->unc_l, &C->cor_l, &C->flo_l, &it[i], C->k_all[it[i].g]))
            return -1;
    return 0;
}

static int compare_mps(const struct rows *mps, const struct rows *one,
                       const struct mosaic__dataset *ds, const unsigned char *lock, struct cmp *C)
{
    enum { CAP = 64 };
    static const char *title[3] = {"category pair (A/B)", "leader, kernel", "delay"};
    struct citem *it = calloc(2 * mps->n + 1, sizeof *it);
    size_t ni = 0;
    int rc = 0;
    if (!it) {
        fprintf(stderr, "mosaic-offset-eval: out of memory\n");
        return -1;
    }
    for (size_t i = 0; i < mps->n && !rc; i++) {
        const struct row *m = &mps->r[i], *o = NULL;
        int lk;
        if (m->set != S_MPS) continue;
        for (size_t j = 0; j < one->n && !o; j++)
            if (one->r[j].set == S_ONE && same_row(m, &one->r[j])) o = &one->r[j];
        if (!o) continue;
        lk = lock[ds->v[m->va].fam] || lock[ds->v[m->vb].fam];
        /* The slowdown on the other kernel: in each arrangement one kernel
         * alone is slowed >= 1.1x, and not the same one. */
        {
            int hm0 = m->meas[0] / m->iso[0] >= MOSAIC__EVAL_HI,
                hm1 = m->meas[1] / m->iso[1] >= MOSAIC__EVAL_HI,
                ho0 = o->meas[0] / o->iso[0] >= MOSAIC__EVAL_HI,
                ho1 = o->meas[1] / o->iso[1] >= MOSAIC__EVAL_HI;
            C->flip += hm0 != hm1 && ho0 != ho1 && hm0 != ho0;
        }
        for (int k = 0; k < 2 && !rc; k++) {
            double sm = m->meas[k] / m->iso[k], so = o->meas[k] / o->iso[k];
            int d = m->lo[k] / m->iso[k] > o->hi[k] / o->iso[k] ||
                    o->lo[k] / o->iso[k] > m->hi[k] / m->iso[k];
            double sd = 100 * (sm - so) / so;
            int g = grp_of(m, k);
            char key[3][48];
            struct citem *c = &it[ni++];
            snprintf(key[0], sizeof key[0], "%s/%s", m->cat[0], m->cat[1]);
            snprintf(key[1], sizeof key[1], "%s leads, %s", m->leader_b ? "B" : "A",
                     (k == 1) == m->leader_b ? "leader" : "follower");
            snprintf(key[2], sizeof key[2], "%s", m->spec);
            C->n++;
            C->diff += d;
            for (int t = 0; t < 3 && !rc; t++)
                rc = tally_add(C->t[t], &C->nt[t], CAP, key[t], d, sd);
            if (!rc) rc = push_err(&C->d[g], sd) || push_err(&C->d[NGRP], sd);
            C->pos[g] += sm > so;
            C->pos[NGRP] += sm > so;
            c->fam = ds->v[k ? m->vb : m->va].fam;
            c->ofam = ds->v[k ? m->va : m->vb].fam;
            c->lock = lk;
            c->g = g;
            c->ratio = sm / so;
            c->pred = m->pred[k];
            c->meas = m->meas[k];
            c->iso = m->iso[k];
        }
    }
    if (!rc) rc = mps_correct(it, ni, ds, lock, C);
    free(it);
    if (rc) return rc;
    printf("\nTwo processes under MPS against one process (same pairs, shared): %zu kernels, "
           "%zu differ beyond the run-to-run spread; %zu rows with the slowdown (>= 1.1x, "
           "one kernel only) on the other kernel\n"
           "  (median d slow%%: (two-process - one-process) / one-process slowdown of the "
           "differing kernels; >10%%: differing by more than 10%%)\n", C->n, C->diff, C->flip);
    for (int g = 0; g < 3; g++) {
        printf("  %-24s %6s %6s %8s %14s %7s\n", title[g], "kern", "differ", "share",
               "median d slow%", ">10%");
        for (size_t i = 0; i < C->nt[g]; i++) {
            struct tally *t = &C->t[g][i];
            printf("  %-24s %6zu %6zu %7.1f%% %+13.1f%% %7zu\n", t->key, t->n, t->diff,
                   100.0 * t->diff / t->n, med_of(&t->d), t->big);
        }
    }
    printf("\nSystematic? every compared kernel's (two-process / one-process slowdown - 1), "
           "by role and delay: count, median, share with two processes slower, sign-test z "
           "(|z| > 3: a shift no chance explains); factor fitted on all non-lockbox rows\n");
    for (int g = 0; g <= NGRP; g++) {
        size_t n = C->d[g].n;
        double z = n ? ((double)C->pos[g] - 0.5 * (double)n) / sqrt(0.25 * (double)n) : NAN;
        printf("  %-26s %5zu %+7.2f%% %6.1f%% z %+5.1f", g < NGRP ? grp_name[g] : "all", n,
               med_of(&C->d[g]), n ? 100.0 * (double)C->pos[g] / (double)n : NAN, z);
        if (g < NGRP) printf("  factor %.4f", C->k_all[g]);
        printf("\n");
    }
    printf("MPS correction (duration x the group's median two-process / one-process slowdown "
           "ratio, fitted leave-family-out in %zu folds, no lockbox family in any fit), "
           "p50/p95 abs. %% error of the two-process rows: uncorrected %.1f/%.1f, corrected "
           "%.1f/%.1f, floor %.1f/%.1f (%zu kernels); lockbox rows: uncorrected %.1f/%.1f, "
           "corrected %.1f/%.1f, floor %.1f/%.1f (%zu kernels)\n",
           C->n_folds, p(&C->unc, 0), p(&C->unc, 1), p(&C->cor, 0), p(&C->cor, 1),
           p(&C->flo, 0), p(&C->flo, 1), C->unc.n, p(&C->unc_l, 0), p(&C->unc_l, 1),
           p(&C->cor_l, 0), p(&C->cor_l, 1), p(&C->flo_l, 0), p(&C->flo_l, 1), C->unc_l.n);
    return 0;
}

static void cmp_free(struct cmp *C)
{
    for (int g = 0; g < 3; g++)
        for (size_t i = 0; i < C->nt[g]; i++) mosaic__errs_free(&C->t[g][i].d);
    for (int g = 0; g <= NGRP; g++) mosaic__errs_free(&C->d[g]);
    mosaic__errs_free(&C->unc);
    mosaic__errs_free(&C->cor);
    mosaic__errs_free(&C->flo);
    mosaic__errs_free(&C->unc_l);
    mosaic__errs_free(&C->cor_l);
    mosaic__errs_free(&C->flo_l);
}

/* ---- docs/offset-eval.md ----------------------------------------------- */

/* "p50/p95" of e as "a.b/c.d%", or "-" when empty. */
static const char *pp(struct mosaic__errs *e, char *buf, size_t n)
{
    if (!e->n) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.1f/%.1f%%", p(e, 0), p(e, 1));
    return buf;
}

static const char *set_title[S_N] = {
    "shared (one process, all SMs)", "part32 (A on 32 SMs, B on the rest)",
    "part64 (A on 64 SMs, B on the rest)", "mps (two processes)",
    "one (the mps pairs, one process)", "lowprio (two processes, B at low MPS priority)",
    "lowprio_n (the same rows at normal priority)"};

/*
 * Writes the issue-14 evaluation as markdown (--doc). Everything in it comes
 * from this run's rows and scores, with no date or path from the command
 * line, so that the ctest predictor_offset_eval_doc can check that the
 * committed docs/offset-eval.md is what the tool writes on the committed
 * data and models (mosaic-train rewrites docs/predictor-eval.md whole, so
 * this section lives in a file of its own).
 */
static int write_doc(const char *path, struct score *sc, struct cmp *C, size_t no_iso,
                     size_t unknown)
{
    char b[8][32];
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "mosaic-offset-eval: --doc %s: cannot create it\n", path);
        return -1;
    }
    fprintf(f,
            "# Offset and two-process co-runs (issue 14)\n\n"
            "Generated by `mosaic-offset-eval --doc docs/offset-eval.md` (tools/mosaic_offset_eval.c) "
            "from the H200 rows of `profiler/data/h200/offsets/` (how they were measured: its "
            "README.md) with the models of `predictor/models/h200` and, for rows with a lockbox "
            "family, `predictor/models/h200/lockbox`. Do not edit it by hand: the ctest "
            "`predictor_offset_eval_doc` fails when it differs from what the tool writes on the "
            "committed data and models; rerun the command above after a change to either. "
            "`predictor_offset_eval` checks fixed bounds on the same scores "
            "(tests/predictor/CMakeLists.txt).\n\n");
    fprintf(f,
            "Method. Each row is one pair, order and requested delay (0, 2, 5, 10, 20, 50 us, "
            "0.5x/1x/1.5x of the leader's isolated time; `delay_us`, negative when B leads). "
            "The query holds only what a scheduler knows: `offset_us` = the requested delay "
            "with the leader's sign (a delay of 0 is +-0.1 us, so that the kernel launched "
            "first is known), never the observed order or the measured offset; the isolated "
            "durations are the baselines measured under the same protocol and process "
            "arrangement (`iso_sync_*`; %zu one-process rows have none and are left out, "
            "%zu rows name a variant the dataset lacks). Within the dispatch jitter (%.1f us) "
            "the predictor answers both orders; the point prediction is the most likely one "
            "(the kernel launched first dispatches first, likelihood %.3f; `--point mean` "
            "gives the likelihood-weighted mean instead). Measured: each kernel's median "
            "co-run duration from its own start over the repeats. Rows with a lockbox family "
            "(`predictor/models/h200/LOCKBOX`) are predicted with models trained without "
            "those families; the others with the shipped models, which trained on co-runs of "
            "the same variants launched together (corun.jsonl), not on these rows: the "
            "lockbox rows are the out-of-sample figure. Errors: abs. %% error of each kernel's "
            "co-run duration, p50/p95; floor: predicting the isolated duration (no "
            "interference); no delay: the same queries with the delay dropped (+-0.1 us, "
            "leader kept), a deliberately wrong input. The MPS client priority is not an "
            "input of the predictor: the low-priority rows are predicted as if at normal "
            "priority.\n\n",
            no_iso, unknown, MOSAIC_DISPATCH_JITTER_US, MOSAIC_ENQUEUED_FIRST_P);
    fprintf(f, "| set | kernels (lockbox) | model | floor | no delay | kernels >= 1.1x | "
               "model | floor | lockbox rows: model | floor |\n"
               "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int s = 0; s < S_N; s++) {
        struct score *x = &sc[s];
        fprintf(f, "| %s | %zu (%zu) | %s | %s | %s | %zu | %s | %s | %s | %s |\n", set_title[s],
                x->model.n, x->n_lock, pp(&x->model, b[0], 32), pp(&x->floor, b[1], 32),
                pp(&x->ign, b[2], 32), x->model_hi.n, pp(&x->model_hi, b[3], 32),
                pp(&x->floor_hi, b[4], 32), pp(&x->lock_model, b[5], 32),
                pp(&x->lock_floor, b[6], 32));
    }
    fprintf(f, "\nBy requested delay (model | floor, p50/p95):\n\n| delay |");
    for (int s = 0; s < S_N; s++) fprintf(f, " %s |", set_name[s]);
    fprintf(f, "\n| --- |");
    for (int s = 0; s < S_N; s++) fprintf(f, " --- |");
    fprintf(f, "\n");
    for (int d = 0; d < NSPEC; d++) {
        fprintf(f, "| %s |", spec_name[d]);
        for (int s = 0; s < S_N; s++)
            fprintf(f, " %s \\| %s |", pp(&sc[s].by_spec[d][0], b[0], 32),
                    pp(&sc[s].by_spec[d][1], b[1], 32));
        fprintf(f, "\n");
    }
    fprintf(f,
            "\nAt 1x, B is released about when A ends alone, so the truth is near no "
            "interference. Behind a delay the residual model now applies in proportion to the "
            "time the two kernels still overlap (predictor/predict.c, `residual_share`; at "
            "delay 0 nothing changes); before, any overlap at all took the whole residual of a "
            "co-run launched together. What is left at 1x (shared, model %.1f%% against the "
            "floor's %.1f%% at p50): of %zu followers, %zu were released while the leader's "
            "isolated duration had not quite run out (by at most the dispatch jitter, %.1f "
            "us), so the timeline puts the follower's blocks beside the leader's last blocks; "
            "those score model %s, floor %s: the measured follower is not slowed. One "
            "explanation, not tested here: the leader's `iso_sync` is an event-to-event time "
            "that includes the launch boundary, so its blocks leave the SMs a little before "
            "it runs out. The query carries no measure of that, and no constant was fitted "
            "to these rows to move the boundary.\n\n",
            p(&sc[S_SHARED].by_spec[7][0], 0), p(&sc[S_SHARED].by_spec[7][1], 0),
            sc[S_SHARED].n_1x_follow, sc[S_SHARED].edge_m.n, MOSAIC_DISPATCH_JITTER_US,
            pp(&sc[S_SHARED].edge_m, b[0], 32), pp(&sc[S_SHARED].edge_f, b[1], 32));
    fprintf(f, "Conservative value (protect = each kernel in turn) against every repeat of the "
               "rows within the jitter (delay 0 and 2 us); partitioned mode has one order, so "
               "there it is the point prediction:\n\n| set | repeats covered | median excess |\n"
               "| --- | --- | --- |\n");
    for (int s = 0; s < S_N; s++)
        fprintf(f, "| %s | %.1f%% | %+.1f%% |\n", set_name[s],
                sc[s].rep_n ? 100.0 * (double)sc[s].rep_cov / (double)sc[s].rep_n : NAN,
                p(&sc[s].excess, 0));
    fprintf(f,
            "\nLow MPS priority. With B's process at `CUDA_MPS_CLIENT_PRIORITY=1` the "
            "predictor, which has no priority input, scores %s (>= 1.1x: %s) against the "
            "floor's %s (%s); the same pairs and delays at normal priority: %s (%s), floor %s "
            "(%s). Low priority moves slowdown onto B, which the predictor does not model.\n\n",
            pp(&sc[S_LOW].model, b[0], 32), pp(&sc[S_LOW].model_hi, b[1], 32),
            pp(&sc[S_LOW].floor, b[2], 32), pp(&sc[S_LOW].floor_hi, b[3], 32),
            pp(&sc[S_LOWN].model, b[4], 32), pp(&sc[S_LOWN].model_hi, b[5], 32),
            pp(&sc[S_LOWN].floor, b[6], 32), pp(&sc[S_LOWN].floor_hi, b[7], 32));
    fprintf(f,
            "## Two processes under MPS against one process\n\n"
            "The %zu kernels of the mps pairs with a one-process twin (same pair, order and "
            "delay; `one`). A kernel differs when the ranges of its per-repeat slowdowns in "
            "the two arrangements do not overlap (the rule of docs/dataset.md): %zu differ; "
            "%zu rows put the slowdown (one kernel >= 1.1x, the other not) on the other "
            "kernel. d: (two-process - one-process) / one-process slowdown, median over the "
            "differing kernels; > 10%%: differing kernels that differ by more than that.\n\n",
            C->n, C->diff, C->flip);
    {
        static const char *title[3] = {"category pair (A/B)", "leader, kernel", "delay"};
        for (int g = 0; g < 3; g++) {
            fprintf(f, "| %s | kernels | differ | share | median d | > 10%% |\n"
                       "| --- | --- | --- | --- | --- | --- |\n", title[g]);
            for (size_t i = 0; i < C->nt[g]; i++) {
                struct tally *t = &C->t[g][i];
                fprintf(f, "| %s | %zu | %zu | %.1f%% | %+.1f%% | %zu |\n", t->key, t->n, t->diff,
                        100.0 * (double)t->diff / (double)t->n, med_of(&t->d), t->big);
            }
            fprintf(f, "\n");
        }
    }
    fprintf(f, "Is the difference systematic? Every compared kernel's two-process / "
               "one-process slowdown - 1, by role and delay (within the jitter or beyond): "
               "median, share with two processes slower, and the sign test's z (|z| > 3: a "
               "shift that chance does not explain); the factor is the group's median ratio "
               "on all non-lockbox rows.\n\n"
               "| group | kernels | median | two processes slower | z | factor |\n"
               "| --- | --- | --- | --- | --- | --- |\n");
    for (int g = 0; g <= NGRP; g++) {
        size_t n = C->d[g].n;
        double z = n ? ((double)C->pos[g] - 0.5 * (double)n) / sqrt(0.25 * (double)n) : NAN;
        fprintf(f, "| %s | %zu | %+.2f%% | %.1f%% | %+.1f | ", g < NGRP ? grp_name[g] : "all", n,
                med_of(&C->d[g]), n ? 100.0 * (double)C->pos[g] / (double)n : NAN, z);
        if (g < NGRP) fprintf(f, "%.4f |\n", C->k_all[g]);
        else fprintf(f, "- |\n");
    }
    fprintf(f,
            "\nThe correction for the MPS case: each kernel's predicted duration times its "
            "group's factor, fitted leave-family-out (%zu folds: for each family outside the "
            "lockbox, factors from the rows with neither that family nor a lockbox family, "
            "applied to that family's own kernels; the lockbox rows get the factors of all "
            "non-lockbox rows). Two-process rows, p50/p95: uncorrected %s, corrected %s, "
            "floor %s (%zu kernels); lockbox rows: uncorrected %s, corrected ",
            C->n_folds, pp(&C->unc, b[0], 32), pp(&C->cor, b[1], 32), pp(&C->flo, b[2], 32),
            C->unc.n, pp(&C->unc_l, b[3], 32));
    fprintf(f, "%s, floor %s (%zu kernels). ", pp(&C->cor_l, b[0], 32), pp(&C->flo_l, b[1], 32),
            C->unc_l.n);
    {
        double gain = p(&C->unc, 0) - p(&C->cor, 0), gain_l = p(&C->unc_l, 0) - p(&C->cor_l, 0);
        double big = 0;
        for (int g = 0; g < NGRP; g++)
            if (fabs(C->k_all[g] - 1) > big) big = fabs(C->k_all[g] - 1);
        if (fabs(gain) < 0.5 && fabs(gain_l) < 0.5)
            fprintf(f, "The largest factor is %.2f%% away from 1, a fraction of the predictor's "
                       "p50 error: where the sign test finds a shift it is real but small, the "
                       "correction moves p50 by less than half a point, and the shipped "
                       "predictor has none.\n", 100 * big);
        else
            fprintf(f, "The correction moves p50 by %+.1f points (lockbox rows %+.1f): the "
                       "two-process case differs enough to need it; the shipped predictor does "
                       "not apply it yet.\n", -gain, -gain_l);
    }
    if (fclose(f)) {
        fprintf(stderr, "mosaic-offset-eval: --doc %s: write failed\n", path);
        return -1;
    }
    return 0;
}

struct expect {
    int set, stat;
    double max;
};
static const char *stat_name[5] = {"p50", "p95", "p50hi", "p95hi", "excess"};

static double stat_of(struct score *s, int stat)
{
    switch (stat) {
    case 0: return p(&s->model, 0);
    case 1: return p(&s->model, 1);
    case 2: return p(&s->model_hi, 0);
    case 3: return p(&s->model_hi, 1);
    default: return p(&s->excess, 0);
    }
}

static int parse_expect(const char *s, struct expect *e)
{
    char set[16], stat[16];
    if (sscanf(s, "%15[^,],%15[^,],%lf", set, stat, &e->max) != 3) return -1;
    e->set = e->stat = -1;
    for (int i = 0; i < S_N; i++)
        if (!strcmp(set, set_name[i])) e->set = i;
    for (int i = 0; i < 5; i++)
        if (!strcmp(stat, stat_name[i])) e->stat = i;
    return e->set < 0 || e->stat < 0 ? -1 : 0;
}

static int read_set(const char *dir, const char *file, struct rows *c, int set,
                    mosaic__jsonl_fn fn)
{
    char path[4096], err[1024];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path) {
        fprintf(stderr, "mosaic-offset-eval: --offsets: path too long: %s\n", dir);
        return -1;
    }
    c->set = set;
    if (mosaic__jsonl_read_file(path, 1L << 30, fn, c, err, sizeof err)) {
        fprintf(stderr, "mosaic-offset-eval: %s\n", err);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *data = "profiler/data/h200", *offs = NULL, *models = "predictor/models/h200",
               *lmodels = NULL, *doc = NULL;
    char buf[3][4096], err[1024];
    struct expect ex[32];
    int nex = 0, worse = 0, ignore = 0, bad = 0, rc = 2;
    struct mosaic_predictor *ship = NULL, *lockp = NULL;
    static struct mosaic__dataset ds;
    struct rows r = {0}, mb = {0}, lr = {0};
    static struct score sc[S_N];
    static struct cmp cmp;
    unsigned char *lock = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--offsets") && i + 1 < argc) offs = argv[++i];
        else if (!strcmp(argv[i], "--models") && i + 1 < argc) models = argv[++i];
        else if (!strcmp(argv[i], "--lockbox-models") && i + 1 < argc) lmodels = argv[++i];
        else if (!strcmp(argv[i], "--ignore-offsets")) ignore = 1;
        else if (!strcmp(argv[i], "--doc") && i + 1 < argc) doc = argv[++i];
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc) {
            if (!(g_dump = fopen(argv[++i], "w"))) {
                fprintf(stderr, "mosaic-offset-eval: --dump %s: cannot create it\n", argv[i]);
                return 2;
            }
            fprintf(g_dump, "set,a,b,order,delay_spec,delay_us,kernel,leads,iso_us,meas_us,"
                            "pred_us,meas_min_us,meas_max_us\n");
        }
        else if (!strcmp(argv[i], "--expect-worse")) worse = 1;
        else if (!strcmp(argv[i], "--point") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "likely") || !strcmp(argv[i + 1], "mean")))
            g_point_mean = !strcmp(argv[++i], "mean");
        else if (!strcmp(argv[i], "--expect") && i + 1 < argc && nex < 32) {
            if (parse_expect(argv[++i], &ex[nex++])) {
                fprintf(stderr, "mosaic-offset-eval: --expect %s: want SET,STAT,MAX with SET "
                        "shared|part32|part64|mps|one|lowprio|lowprio_n and STAT p50|p95|p50hi|p95hi|excess\n",
                        argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: mosaic-offset-eval [--data DIR] [--offsets DIR] "
                    "[--models DIR] [--lockbox-models DIR] [--ignore-offsets] [--point likely|mean] "
                    "[--expect SET,STAT,MAX ...] [--expect-worse] [--doc FILE] [--dump CSV]\n");
            return 2;
        }
    }
    if ((!offs && snprintf(buf[0], sizeof buf[0], "%s/offsets", data) >= (int)sizeof buf[0]) ||
        (!lmodels && snprintf(buf[1], sizeof buf[1], "%s/lockbox", models) >= (int)sizeof buf[1]) ||
        snprintf(buf[2], sizeof buf[2], "%s/LOCKBOX", models) >= (int)sizeof buf[2]) {
        fprintf(stderr, "mosaic-offset-eval: --data or --models: path too long\n");
        return 2;
    }
    if (!offs) offs = buf[0];
    if (!lmodels) lmodels = buf[1];
    if (mosaic_predictor_open(models, NULL, &ship, err, sizeof err) ||
        mosaic_predictor_open(lmodels, NULL, &lockp, err, sizeof err) ||
        mosaic__dataset_load(data, ship, &ds, err, sizeof err)) {
        fprintf(stderr, "mosaic-offset-eval: %s\n", err);
        goto done;
    }
    if (!(lock = calloc(ds.nfam + 1, 1)) || read_lockbox(buf[2], &ds, lock)) goto done;
    r.ds = mb.ds = &ds;
    if (read_set(offs, "offset_shared.jsonl", &r, S_SHARED, on_offset) ||
        read_set(offs, "offset_part32.jsonl", &r, S_P32, on_offset) ||
        read_set(offs, "offset_part64.jsonl", &r, S_P64, on_offset))
        goto done;
    {
        /* process A's sides, joined with process B's */
        struct rows ma = {0};
        ma.ds = &ds;
        ma.mps_side = 0;
        mb.mps_side = 1;
        if (read_set(offs, "mps_a.jsonl", &ma, S_MPS, on_mps) ||
            read_set(offs, "mps_b.jsonl", &mb, S_MPS, on_mps)) {
            free(ma.r);
            goto done;
        }
        join_mps(&ma, &mb);
        /* the one-process rows of the MPS pairs, as a set of their own */
        for (size_t i = 0, n0 = r.n; i < n0; i++) {
            if (r.r[i].set != S_SHARED) continue;
            for (size_t j = 0; j < ma.n; j++)
                if (same_row(&r.r[i], &ma.r[j])) {
                    struct row *w = push(&r, "one", err, sizeof err);
                    if (!w) {
                        free(ma.r);
                        goto done;
                    }
                    *w = r.r[i];
                    w->set = S_ONE;
                    r.n++;
                    break;
                }
        }
        free(mb.r);
        mb = ma;
    }
    {
        /* B's process at low MPS client priority, joined the same way, and
         * the same pairs and delays at normal priority (the mps rows) as a
         * set of their own */
        struct rows lb = {0};
        size_t n0;
        lr.ds = lb.ds = &ds;
        lr.mps_side = 0;
        lb.mps_side = 1;
        if (read_set(offs, "mps_lowprio_a.jsonl", &lr, S_LOW, on_mps) ||
            read_set(offs, "mps_lowprio_b.jsonl", &lb, S_LOW, on_mps)) {
            free(lb.r);
            goto done;
        }
        join_mps(&lr, &lb);
        free(lb.r);
        n0 = lr.n;
        for (size_t i = 0; i < n0; i++)
            for (size_t j = 0; j < mb.n; j++)
                if (same_row(&lr.r[i], &mb.r[j])) {
                    struct row *w = push(&lr, "lowprio_n", err, sizeof err);
                    if (!w) goto done;
                    *w = mb.r[j];
                    w->set = S_LOWN;
                    lr.n++;
                    break;
                }
    }
    if (score_rows(ship, lockp, &ds, lock, &r, sc) || score_rows(ship, lockp, &ds, lock, &mb, sc) ||
        score_rows(ship, lockp, &ds, lock, &lr, sc))
        goto done;
    printf("Offset and two-process co-runs (issue 14), %s: queries carry %s; point: %s; isolated = "
           "iso_sync_*; rows with a LOCKBOX family scored with %s, the others with %s; "
           "%zu rows skipped (variant not in %s), %zu without an iso_sync baseline\n", offs,
           ignore ? "NO delay (deliberately wrong)" : "the requested offset and leader",
           g_point_mean ? "likelihood-weighted mean of the orders" : "the most likely order",
           lmodels, models, r.unknown + mb.unknown + lr.unknown, data, r.no_iso);
    printf("%-7s %6s %5s | %12s %12s %12s | %5s %12s %12s | %7s %8s\n", "set", "kern", "lockb",
           "model p50/95", "floor p50/95", "no-off p50/95", ">=1.1", "model p50/95",
           "floor p50/95", "cover", "excess");
    for (int s = 0; s < S_N; s++) {
        struct score *x = &sc[s];
        struct mosaic__errs *m = ignore ? &x->ign : &x->model;
        printf("%-7s %6zu %5zu | %5.1f %6.1f %5.1f %6.1f %5.1f %6.1f | %5zu %5.1f %6.1f %5.1f "
               "%6.1f | %6.1f%% %+7.1f%%\n",
               set_name[s], x->model.n, x->n_lock, p(m, 0), p(m, 1), p(&x->floor, 0),
               p(&x->floor, 1), p(&x->ign, 0), p(&x->ign, 1), x->model_hi.n, p(&x->model_hi, 0),
               p(&x->model_hi, 1), p(&x->floor_hi, 0), p(&x->floor_hi, 1),
               x->rep_n ? 100.0 * x->rep_cov / x->rep_n : NAN, p(&x->excess, 0));
    }
    printf("lockbox rows only (lockbox models, which never saw these families), model "
           "p50/p95 | floor p50/p95:");
    for (int s = 0; s < S_N; s++)
        printf("%s %s %.1f/%.1f | %.1f/%.1f", s ? ";" : "", set_name[s], p(&sc[s].lock_model, 0),
               p(&sc[s].lock_model, 1), p(&sc[s].lock_floor, 0), p(&sc[s].lock_floor, 1));
    printf("\n(cover/excess: the conservative value of each kernel against every repeat of the "
           "rows with delay <= %.1f us, the dispatch jitter)\n", MOSAIC_DISPATCH_JITTER_US);
    printf("\nBy requested delay (us, or times A's isolated duration), all rows: model "
           "p50/p95 | floor p50/p95\n%-6s", "delay");
    for (int s = 0; s < S_N; s++) printf(" | %-23s", set_name[s]);
    printf("\n");
    for (int d = 0; d < NSPEC; d++) {
        printf("%-6s", spec_name[d]);
        for (int s = 0; s < S_N; s++)
            printf(" | %4.1f %5.1f | %4.1f %5.1f", p(&sc[s].by_spec[d][0], 0),
                   p(&sc[s].by_spec[d][0], 1), p(&sc[s].by_spec[d][1], 0),
                   p(&sc[s].by_spec[d][1], 1));
        printf("\n");
    }
    if (compare_mps(&mb, &r, &ds, lock, &cmp)) goto done;
    /* the doc, from the scores as they are here (before --expect reads
     * them; nothing below changes them) */
    if (doc && write_doc(doc, sc, &cmp, r.no_iso, r.unknown + mb.unknown + lr.unknown)) goto done;
    rc = 0;
    for (int i = 0; i < nex; i++) {
        /* with --ignore-offsets the all-rows bounds apply to that prediction */
        double v = ignore && ex[i].stat < 2 ? p(&sc[ex[i].set].ign, ex[i].stat)
                                            : stat_of(&sc[ex[i].set], ex[i].stat);
        if (!(v <= ex[i].max)) {
            printf("FAIL: %s %s = %.2f past its bound %.2f\n", set_name[ex[i].set],
                   stat_name[ex[i].stat], v, ex[i].max);
            bad = 1;
        }
    }
    for (int s = 0; worse && s < S_N; s++) {
        double m = p(&sc[s].model, 0);
        if (!(p(&sc[s].ign, 0) > m && p(&sc[s].floor, 0) > m)) {
            printf("FAIL: %s: the model's p50 %.2f is not below the offsets-ignored %.2f and "
                   "the no-interference floor %.2f\n", set_name[s], m, p(&sc[s].ign, 0),
                   p(&sc[s].floor, 0));
            bad = 1;
        }
    }
    if (bad) rc = 1;
done:
    for (int s = 0; s < S_N; s++) {
        mosaic__errs_free(&sc[s].model);
        mosaic__errs_free(&sc[s].floor);
        mosaic__errs_free(&sc[s].model_hi);
        mosaic__errs_free(&sc[s].floor_hi);
        mosaic__errs_free(&sc[s].ign);
        mosaic__errs_free(&sc[s].excess);
        mosaic__errs_free(&sc[s].lock_model);
        mosaic__errs_free(&sc[s].lock_floor);
        mosaic__errs_free(&sc[s].edge_m);
        mosaic__errs_free(&sc[s].edge_f);
        for (int d = 0; d < NSPEC; d++) {
            mosaic__errs_free(&sc[s].by_spec[d][0]);
            mosaic__errs_free(&sc[s].by_spec[d][1]);
        }
    }
    if (g_dump) fclose(g_dump);
    cmp_free(&cmp);
    free(r.r);
    free(mb.r);
    free(lr.r);
    free(lock);
    mosaic__dataset_free(&ds);
    mosaic_predictor_close(ship);
    mosaic_predictor_close(lockp);
    return rc;
}
