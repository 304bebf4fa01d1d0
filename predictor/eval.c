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

int mosaic__eval_points(struct mosaic_predictor *p, const struct mosaic__dataset *ds,
                        int fam, unsigned disable, struct mosaic__errs errs[2],
                        char *err, size_t errlen)
{
    for (size_t i = 0; i < ds->npt; i++) {
        const struct mosaic__ds_point *pt = &ds->pt[i];
        const struct mosaic__ds_variant *va = &ds->v[pt->va], *vb = &ds->v[pt->vb];
        struct mosaic_pred_query q;
        struct mosaic_pred_result r;
        int rc;
        if (fam >= 0 && va->fam != fam && vb->fam != fam)
            continue;
        memset(&q, 0, sizeof q);
        q.a = va->pk;
        q.b = vb->pk;
        q.mode = pt->mode;
        q.sms_a = pt->sms_a;
        q.sms_b = pt->sms_b;
        q.b_first = pt->b_first;
        q.disable = disable & MOSAIC_PC_ALL;
        if (!(disable & MOSAIC__EVAL_EST_ISO)) {
            q.iso_a_us = pt->iso_a;
            q.iso_b_us = pt->iso_b;
        }
        rc = mosaic_predict(p, &q, &r, err, errlen);
        if (rc) return rc;
        if (mosaic__errs_push(&errs[pt->mode], 100 * fabs(r.k[0].duration_us - pt->meas_a) / pt->meas_a) ||
            mosaic__errs_push(&errs[pt->mode], 100 * fabs(r.k[1].duration_us - pt->meas_b) / pt->meas_b)) {
            snprintf(err, errlen, "out of memory");
            return MOSAIC_ENOMEM;
        }
    }
    return 0;
}
