/*
 * The predictor's API and its per-pair cache: opening the models, checking a
 * query, the partitioned-mode prediction and the shared-mode one (timeline,
 * then the residual model).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature_list.h"
#include "placement.h"
#include "timeline.h"
#include "train_internal.h"

int mosaic__predictor_from_parts(const struct mosaic_gpu_desc *g,
                                 struct mosaic__forest *inter,
                                 struct mosaic__forest *shared,
                                 const struct mosaic__coef *c,
                                 struct mosaic_predictor **out)
{
    struct mosaic_predictor *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p) return MOSAIC_ENOMEM;
    if (g) p->gpu = *g;
    else mosaic_gpu_desc_h200(&p->gpu);
    p->inter = inter;
    p->shared = shared;
    if (c) p->coef = *c;
    else mosaic__coef_default(&p->coef);
    *out = p;
    return 0;
}

/* The largest model file read: mosaic__forest_load's limit (a forest of 80
 * depth-4 trees is 160 KB). */
#define MODEL_MAX_BYTES (512L * 1024 * 1024)

/* Loads dir/name as a forest of nf features trained with feature list
 * list: its num_feature first, then its "features" array, must match. */
static int load_forest(const char *dir, const char *name, int nf,
                       const struct mosaic__feature *list, struct mosaic__forest **f,
                       char *err, size_t errlen)
{
    char path[4096], *json;
    int rc;
    *f = NULL;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        snprintf(err, errlen, "%s: model directory path too long", dir);
        return MOSAIC_EINVAL;
    }
    rc = mosaic_read_text(path, MODEL_MAX_BYTES, &json, err, errlen);
    if (rc) return rc;
    rc = mosaic__forest_load_string(json, path, f, err, errlen);
    if (!rc && mosaic__forest_nfeatures(*f) != nf) {
        snprintf(err, errlen, "%s: field learner.learner_model_param.num_feature: "
                 "%d features, the predictor needs %d", path,
                 mosaic__forest_nfeatures(*f), nf);
        rc = MOSAIC_EINVAL;
    }
    if (!rc) rc = mosaic__features_check(json, path, list, nf, err, errlen);
    free(json);
    if (rc) {
        mosaic__forest_free(*f);
        *f = NULL;
    }
    return rc;
}

MOSAIC__API int mosaic_predictor_open(const char *model_dir,
                                      const struct mosaic_gpu_desc *gpu,
                                      struct mosaic_predictor **out, char *err,
                                      size_t errlen)
{
    struct mosaic__forest *inter = NULL, *shared = NULL;
    struct mosaic__coef c;
    char path[4096];
    int rc;

    if (!out || !model_dir) {
        snprintf(err, errlen, "mosaic_predictor_open: NULL argument");
        return MOSAIC_EINVAL;
    }
    *out = NULL;
    if (snprintf(path, sizeof path, "%s/analytic.json", model_dir) >= (int)sizeof path) {
        snprintf(err, errlen, "%s: model directory path too long", model_dir);
        return MOSAIC_EINVAL;
    }
    rc = mosaic__coef_load(path, &c, err, errlen);
    if (rc) return rc;
    rc = load_forest(model_dir, "inter.json", MOSAIC__NF_INTER, mosaic__features_inter,
                     &inter, err, errlen);
    if (rc) return rc;
    rc = load_forest(model_dir, "shared.json", MOSAIC__NF_SHARED, mosaic__features_shared,
                     &shared, err, errlen);
    if (rc) {
        mosaic__forest_free(inter);
        return rc;
    }
    rc = mosaic__predictor_from_parts(gpu, inter, shared, &c, out);
    if (rc) {
        mosaic__forest_free(inter);
        mosaic__forest_free(shared);
        snprintf(err, errlen, "%s: out of memory", model_dir);
    }
    return rc;
}

MOSAIC__API void mosaic_predictor_close(struct mosaic_predictor *p)
{
    if (!p) return;
    mosaic__forest_free(p->inter);
    mosaic__forest_free(p->shared);
    free(p->cache);
    free(p);
}

MOSAIC__API const struct mosaic_gpu_desc *mosaic_predictor_gpu(const struct mosaic_predictor *p)
{
    return p ? &p->gpu : NULL;
}

MOSAIC__API int mosaic_predictor_set_cache(struct mosaic_predictor *p, size_t entries)
{
    size_t n = 1;
    if (!p) return MOSAIC_EINVAL;
    free(p->cache);
    p->cache = NULL;
    p->cache_mask = 0;
    if (entries == 0) return 0;
    if (entries > ((size_t)1 << 24)) return MOSAIC_EINVAL;
    while (n < entries) n <<= 1;
    p->cache = calloc(n, sizeof *p->cache);
    if (!p->cache) return MOSAIC_ENOMEM;
    p->cache_mask = n - 1;
    return 0;
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static double inter_factor(const struct mosaic_predictor *p,
                           const struct mosaic_pkernel *self, int ss, double iso_s,
                           const struct mosaic_pkernel *other, int so, double iso_o)
{
    float x[MOSAIC__NF_INTER];
    double y;
    if (!p->inter) return 1;
    mosaic__feat_inter(&p->gpu, self, ss, iso_s, other, so, iso_o, x);
    y = mosaic__forest_predict(p->inter, x);
    if (!isfinite(y)) return 1;
    return exp(clampd(y, -0.5, 4));
}

static int check_query(const struct mosaic_predictor *p,
                       const struct mosaic_pred_query *q, char *err,
                       size_t errlen)
{
    if (!q->a || !q->b) {
        snprintf(err, errlen, "query: kernel a or b is NULL");
        return MOSAIC_EINVAL;
    }
    if (q->mode != MOSAIC_MODE_SHARED && q->mode != MOSAIC_MODE_PARTITIONED) {
        snprintf(err, errlen, "query: field mode = %d is neither shared nor partitioned",
                 q->mode);
        return MOSAIC_EINVAL;
    }
    if (q->mode == MOSAIC_MODE_PARTITIONED &&
        (q->sms_a <= 0 || q->sms_b <= 0 || q->sms_a + q->sms_b > p->gpu.sm_count)) {
        snprintf(err, errlen,
                 "query: fields sms_a/sms_b = %d/%d: each must be > 0 and together "
                 "at most %d", q->sms_a, q->sms_b, p->gpu.sm_count);
        return MOSAIC_EINVAL;
    }
    if (q->disable & ~MOSAIC_PC_ALL) {
        snprintf(err, errlen, "query: field disable has unknown bits 0x%x",
                 q->disable);
        return MOSAIC_EINVAL;
    }
    if ((isfinite(q->iso_a_us) && (q->iso_a_us < 0 || q->iso_a_us > 1e9)) ||
        (isfinite(q->iso_b_us) && (q->iso_b_us < 0 || q->iso_b_us > 1e9)) ||
        isinf(q->iso_a_us) || isinf(q->iso_b_us)) {
        snprintf(err, errlen, "query: field iso_a_us/iso_b_us out of range [0, 1e9]");
        return MOSAIC_EINVAL;
    }
    return 0;
}

/* Partitioned: both start at launch on their own SMs; each runs f times
 * slower while the other runs (inter-SM model: the full-overlap factor),
 * then alone at its isolated speed. A co-runner on other SMs only takes
 * memory bandwidth away: f >= 1 (the forest, fitted to noisy labels, dips
 * below 1 where it extrapolates, e.g. a split of 128/4 SMs). */
static void predict_partitioned(const struct mosaic_predictor *p,
                                const struct mosaic_pred_query *q, unsigned comp,
                                double iso_a, double iso_b, struct mosaic_pred_result *res)
{
    int sa = q->sms_a, sb = q->sms_b;
    double fa = (comp & MOSAIC_PC_INTER) ? inter_factor(p, q->a, sa, iso_a, q->b, sb, iso_b) : 1;
    double fb = (comp & MOSAIC_PC_INTER) ? inter_factor(p, q->b, sb, iso_b, q->a, sa, iso_a) : 1;
    if (fa < 1) fa = 1;
    if (fb < 1) fb = 1;
    double ta = iso_a * fa, tb = iso_b * fb, da, db;
    if (ta <= tb) {
        da = ta;
        db = ta + (iso_b - ta / fb);
    } else {
        db = tb;
        da = tb + (iso_a - tb / fa);
    }
    for (int i = 0; i < 2; i++) {
        struct mosaic_pred_kernel *r = &res->k[i];
        r->iso_us = i == 0 ? iso_a : iso_b;
        r->waves = mosaic__place_waves(i == 0 ? q->a : q->b, i == 0 ? sa : sb);
        r->placement = r->packing = r->intra_sm = 1;
        r->duration_us = i == 0 ? da : db;
        r->slowdown = r->duration_us / r->iso_us;
        r->inter_sm = r->slowdown;
    }
    res->overlap_us = fmin(res->k[0].duration_us, res->k[1].duration_us);
}

/* Shared: the inter-SM factor of each at an even split, then the timeline
 * (timeline.c), then the residual model on the rows features.c builds from
 * the timeline's result; the rows go to xa_out/xb_out when given. */
static void predict_shared(const struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                           unsigned comp, double iso_a, double iso_b,
                           struct mosaic_pred_result *res, float *xa_out, float *xb_out)
{
    const struct mosaic_gpu_desc *g = &p->gpu;
    int N = g->sm_count;
    double ia = 1, ib = 1;
    float xa[MOSAIC__NF_SHARED], xb[MOSAIC__NF_SHARED];
    if (comp & MOSAIC_PC_INTER) {
        ia = inter_factor(p, q->a, N, iso_a, q->b, N, iso_b);
        ib = inter_factor(p, q->b, N, iso_b, q->a, N, iso_a);
    }
    mosaic__timeline_shared(g, &p->coef, q->a, q->b, q->b_first, iso_a, iso_b, ia, ib, comp,
                            res);
    mosaic__feat_shared(g, q->a, q->b, q->b_first, iso_a, iso_b, res, xa, xb);
    if (xa_out) memcpy(xa_out, xa, sizeof xa);
    if (xb_out) memcpy(xb_out, xb, sizeof xb);
    if ((comp & MOSAIC_PC_INTRA) && p->shared) {
        for (int i = 0; i < 2; i++) {
            double y = mosaic__forest_predict(p->shared, i == 0 ? xa : xb);
            double f = isfinite(y) ? exp(clampd(y, -2, 3)) : 1;
            struct mosaic_pred_kernel *r = &res->k[i];
            r->intra_sm *= f;
            r->duration_us *= f;
            if (r->duration_us < r->iso_us * 0.5) r->duration_us = r->iso_us * 0.5;
            r->slowdown = r->duration_us / r->iso_us;
        }
    }
}

/* A checked query: the isolated durations (given, else placement's
 * estimate on the kernels' SMs), then the mode's prediction. */
static int predict_core(struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                        struct mosaic_pred_result *res, float *xa_out, float *xb_out)
{
    unsigned comp = MOSAIC_PC_ALL & ~q->disable;
    const struct mosaic_gpu_desc *g = &p->gpu;
    int N = g->sm_count;
    double iso_a, iso_b;
    int sa = q->mode == MOSAIC_MODE_PARTITIONED ? q->sms_a : N;
    int sb = q->mode == MOSAIC_MODE_PARTITIONED ? q->sms_b : N;

    memset(res, 0, sizeof *res);
    iso_a = (isfinite(q->iso_a_us) && q->iso_a_us > 0) ? q->iso_a_us
                                                       : mosaic__place_iso_on(g, q->a, sa);
    iso_b = (isfinite(q->iso_b_us) && q->iso_b_us > 0) ? q->iso_b_us
                                                       : mosaic__place_iso_on(g, q->b, sb);
    if (q->mode == MOSAIC_MODE_PARTITIONED)
        predict_partitioned(p, q, comp, iso_a, iso_b, res);
    else
        predict_shared(p, q, comp, iso_a, iso_b, res, xa_out, xb_out);
    return 0;
}

int mosaic__predict_rows(struct mosaic_predictor *p,
                         const struct mosaic_pred_query *q,
                         struct mosaic_pred_result *res, float *xa, float *xb)
{
    return predict_core(p, q, res, xa, xb);
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

MOSAIC__API int mosaic_predict(struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                               struct mosaic_pred_result *res, char *err, size_t errlen)
{
    int rc;
    if (!res) {
        snprintf(err, errlen, "mosaic_predict: NULL result");
        return MOSAIC_EINVAL;
    }
    memset(res, 0, sizeof *res);
    if (!p || !q) {
        snprintf(err, errlen, "mosaic_predict: NULL argument");
        return MOSAIC_EINVAL;
    }
    rc = check_query(p, q, err, errlen);
    if (rc) return rc;
    if (p->cache) {
        unsigned comp = MOSAIC_PC_ALL & ~q->disable;
        uint64_t cfg = (uint64_t)q->mode | (uint64_t)(q->b_first != 0) << 1 |
                       (uint64_t)comp << 2 |
                       (q->mode == MOSAIC_MODE_PARTITIONED
                            ? ((uint64_t)(uint32_t)q->sms_a << 8 | (uint64_t)(uint32_t)q->sms_b << 32)
                            : 0);
        uint64_t ia, ib, h;
        double isa = q->iso_a_us, isb = q->iso_b_us;
        memcpy(&ia, &isa, 8);
        memcpy(&ib, &isb, 8);
        h = mix(q->a->hash ^ mix(q->b->hash + 0x9e3779b97f4a7c15ull) ^ mix(cfg ^ ia * 31 ^ ib));
        {
            /* 4-way probe; a miss takes the first free slot, else the home */
            struct mosaic__cache_ent *e = NULL;
            for (size_t w = 0; w < 4; w++) {
                struct mosaic__cache_ent *c = &p->cache[(h + w) & p->cache_mask];
                if (!c->used) {
                    if (!e) e = c;
                    break;
                }
                if (c->tag == h && c->ha == q->a->hash && c->hb == q->b->hash &&
                    c->cfg == cfg && memcmp(&c->iso_a, &isa, 8) == 0 &&
                    memcmp(&c->iso_b, &isb, 8) == 0) {
                    *res = c->res;
                    res->cached = 1;
                    return 0;
                }
            }
            if (!e) e = &p->cache[h & p->cache_mask];
            rc = predict_core(p, q, res, NULL, NULL);
            if (rc) return rc;
            e->used = 1;
            e->tag = h;
            e->ha = q->a->hash;
            e->hb = q->b->hash;
            e->cfg = cfg;
            e->iso_a = isa;
            e->iso_b = isb;
            e->res = *res;
            return 0;
        }
    }
    return predict_core(p, q, res, NULL, NULL);
}
