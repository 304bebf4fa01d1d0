/*
 * Evaluation helpers: absolute percentage errors of predicted co-run
 * durations over the dataset's points, through the public API (flat-array
 * trees, no libxgboost).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_internal.h"

int mosaic__errs_push(struct mosaic__errs *e, double v)
{
    if (e->n == e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 1024;
        double *ne = realloc(e->e, nc * sizeof *ne);
        if (!ne) return -1;
        e->e = ne;
        e->cap = nc;
    }
    e->e[e->n++] = v;
    return 0;
}

void mosaic__errs_free(struct mosaic__errs *e)
{
    free(e->e);
    memset(e, 0, sizeof *e);
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentiles (sorts e). */
void mosaic__eval_pcts(double *e, size_t n, double *p50, double *p95)
{
    if (n == 0) {
        *p50 = *p95 = NAN;
        return;
    }
    qsort(e, n, sizeof *e, cmpd);
    *p50 = e[(size_t)ceil(0.50 * n) - 1];
    *p95 = e[(size_t)ceil(0.95 * n) - 1];
}

void mosaic__score_free(struct mosaic__score *s)
{
    mosaic__errs_free(&s->model);
    mosaic__errs_free(&s->floor);
    mosaic__errs_free(&s->model_hi);
    mosaic__errs_free(&s->floor_hi);
    mosaic__errs_free(&s->rep_excess);
    memset(s, 0, sizeof *s);
}

/* The row is taken (no skipped family in it); *sa, *sb: whether each of
 * its kernels is scored. */
static int selected(const struct mosaic__dataset *ds, const struct mosaic__eval_sel *sel,
                    int va, int vb, int *sa, int *sb)
{
    int fa = ds->v[va].fam, fb = ds->v[vb].fam;
    if (sel && sel->skip && (sel->skip[fa] || sel->skip[fb])) return 0;
    *sa = !sel || !sel->score || sel->score[fa];
    *sb = !sel || !sel->score || sel->score[fb];
    return *sa || *sb;
}

/* One scored kernel: predicted pred, measured meas, isolated iso. */
static int score_one(struct mosaic__score *sc, double pred, double meas, double iso)
{
    double em = 100 * fabs(pred - meas) / meas, ef = 100 * fabs(iso - meas) / meas;
    if (mosaic__errs_push(&sc->model, em) || mosaic__errs_push(&sc->floor, ef)) return -1;
    if (meas / iso >= MOSAIC__EVAL_HI &&
        (mosaic__errs_push(&sc->model_hi, em) || mosaic__errs_push(&sc->floor_hi, ef)))
        return -1;
    return 0;
}

int mosaic__eval_points(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                        const struct mosaic__eval_sel *sel, unsigned disable,
                        struct mosaic__score sc[2], char *err, size_t errlen)
{
    for (size_t i = 0; i < ds->npt; i++) {
        const struct mosaic__ds_point *pt = &ds->pt[i];
        const struct mosaic__ds_variant *va = &ds->v[pt->va], *vb = &ds->v[pt->vb];
        struct mosaic_pred_query q;
        struct mosaic_pred_result r;
        int rc, sa, sb;
        if (!selected(ds, sel, pt->va, pt->vb, &sa, &sb)) continue;
        memset(&q, 0, sizeof q);
        q.a = va->pk;
        q.b = vb->pk;
        q.mode = pt->mode;
        q.sms_a = pt->sms_a;
        q.sms_b = pt->sms_b;
        q.disable = disable & MOSAIC_PC_ALL;
        if (!(disable & MOSAIC__EVAL_EST_ISO)) {
            q.iso_a_us = pt->iso_a;
            q.iso_b_us = pt->iso_b;
        }
        rc = mosaic__predict_order(p, &q, pt->b_first, &r, err, errlen);
        if (rc) return rc;
        if ((sa && score_one(&sc[pt->mode], r.k[0].duration_us, pt->meas_a, pt->iso_a)) ||
            (sb && score_one(&sc[pt->mode], r.k[1].duration_us, pt->meas_b, pt->iso_b))) {
            snprintf(err, errlen, "out of memory");
            return MOSAIC_ENOMEM;
        }
    }
    return 0;
}

int mosaic__eval_conservative(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                              const struct mosaic__eval_sel *sel, struct mosaic__score sc[2],
                              char *err, size_t errlen)
{
    struct mosaic__score *s = &sc[MOSAIC_MODE_SHARED];
    for (size_t i = 0; i < ds->nrec; i++) {
        const struct mosaic__ds_record *r = &ds->rec[i];
        int pick[2];
        if (r->mode != MOSAIC_MODE_SHARED || !selected(ds, sel, r->va, r->vb, &pick[0], &pick[1]))
            continue;
        for (int k = 0; k < 2; k++) {
            /* launched back to back in the enqueue order: within the
             * jitter, so both orders are predicted */
            struct mosaic_pred_query q = {.a = ds->v[r->va].pk, .b = ds->v[r->vb].pk,
                                          .mode = r->mode, .offset_us = r->enq_b_first ? -0.1 : 0.1,
                                          .protect = k, .iso_a_us = r->iso_a, .iso_b_us = r->iso_b};
            struct mosaic_pred_answer a;
            int rc;
            if (!pick[k]) continue;
            rc = mosaic_predict(p, &q, &a, err, errlen);
            if (rc) return rc;
            for (int j = 0; j < r->n; j++) {
                double m = r->samples[2 * j + k];
                s->rep_n++;
                s->rep_covered += a.conservative_us >= m;
                if (mosaic__errs_push(&s->rep_excess, 100 * (a.conservative_us - m) / m)) {
                    snprintf(err, errlen, "out of memory");
                    return MOSAIC_ENOMEM;
                }
            }
        }
    }
    return 0;
}
