/*
 * The predictor's API and its per-pair cache: opening the models, checking a
 * query, the partitioned-mode prediction and the shared-mode one (timeline,
 * then the residual model).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core.h"
#include "json.h"

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
    p->gpu_name = g ? NULL : "the NVIDIA H200";
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

/* Both models predict the logarithm of a factor on a duration, and their
 * outputs are clamped to a few units of it (inter_factor, the residual
 * below); no single leaf or base score of a model worth loading comes near
 * this bound. The committed H200 models (predictor/models/h200: the shipped
 * pair, the lockbox pair and the twenty fold models of lofo/) had leaves in
 * [-0.0533, 0.1871] and base score 0.5 when it was set (2026-12-01), so the
 * bound leaves a margin of ten over the largest leaf, while a damaged leaf
 * such as -1e6 (which the clamps would silently turn into a factor of 0.6
 * on every kernel it reaches) is refused at load with its file and tree. */
#define MODEL_VALUE_MAX 2.0

/* Loads dir/name as a forest of nf features trained with feature list
 * list: its num_feature first, then its "features" array, must match; then
 * its values must lie within MODEL_VALUE_MAX. The file is read once,
 * through the core's strict reader (regular files only, trailing data and
 * duplicate keys refused). */
static int load_forest(const char *dir, const char *name, int nf,
                       const struct mosaic__feature *list, struct mosaic__forest **f,
                       char *err, size_t errlen)
{
    char path[4096];
    cJSON *root;
    int rc;
    *f = NULL;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, dir, NULL,
                            "model directory path too long");
    rc = mosaic__json_read_file(path, MODEL_MAX_BYTES, &root, err, errlen);
    if (rc) return rc == MOSAIC_EFORMAT ? MOSAIC_EINVAL : rc;
    rc = mosaic__forest_load_json(root, path, f, err, errlen);
    if (!rc && mosaic__forest_nfeatures(*f) != nf)
        rc = mosaic__errf(err, errlen, MOSAIC_EINVAL, path,
                          "learner.learner_model_param.num_feature",
                          "%d features, the predictor needs %d",
                          mosaic__forest_nfeatures(*f), nf);
    if (!rc) rc = mosaic__features_check(root, path, list, nf, err, errlen);
    if (!rc) rc = mosaic__forest_check_range(*f, MODEL_VALUE_MAX, path, err, errlen);
    cJSON_Delete(root);
    if (rc) {
        mosaic__forest_free(*f);
        *f = NULL;
    }
    return rc;
}

MOSAIC__EXPORT int mosaic_predictor_open(const char *model_dir,
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

MOSAIC__EXPORT int mosaic_predictor_check_profile(const struct mosaic_predictor *p,
                                                  const struct mosaic_profile *prof,
                                                  const char *what, char *err, size_t errlen)
{
    struct mosaic_gpu want;
    char cc[32], why[768];
    int rc;
    if (!p || !prof)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, what, NULL,
                            "mosaic_predictor_check_profile: NULL argument");
    /* The models' GPU as the profile describes a GPU: its SM count and
     * compute capability (the description has no name to compare). */
    memset(&want, 0, sizeof want);
    want.sm_count = p->gpu.sm_count;
    want.l2_bytes = MOSAIC_NULL;
    snprintf(cc, sizeof cc, "%d.%d", p->gpu.cc_major, p->gpu.cc_minor);
    want.cc = cc;
    rc = mosaic_profile_check_gpu(prof, what, &want, why, sizeof why);
    if (rc)
        snprintf(err, errlen, "%s (the predictor's models are for a GPU with %d SMs, compute "
                 "capability %s: %s)", why, p->gpu.sm_count, cc,
                 p->gpu_name ? p->gpu_name : "the GPU given to mosaic_predictor_open");
    return rc;
}

MOSAIC__EXPORT void mosaic_predictor_close(struct mosaic_predictor *p)
{
    if (!p) return;
    mosaic__forest_free(p->inter);
    mosaic__forest_free(p->shared);
    free(p->cache_keys);
    free(p->cache_res);
    free(p);
}

MOSAIC__EXPORT const struct mosaic_gpu_desc *mosaic_predictor_gpu(const struct mosaic_predictor *p)
{
    return p ? &p->gpu : NULL;
}

/* Writes one byte of every page of buf, so that the kernel maps the pages
 * now: calloc hands out untouched zero pages, and the first write to each
 * then faulted inside a prediction (a 4096-entry cache is about 200 pages;
 * those faults, 1-5 us each on this workplace's VM, were the cold-cache
 * p99 of partitioned mode, 4.1-4.5 us against 0.9-1.7 us uncached). The
 * stores are volatile so that no compiler folds them into the calloc. */
static void prefault(void *buf, size_t bytes)
{
    volatile unsigned char *b = buf;
    for (size_t i = 0; i < bytes; i += 4096) b[i] = 0;
    if (bytes) b[bytes - 1] = 0;
}

MOSAIC__EXPORT int mosaic_predictor_set_cache(struct mosaic_predictor *p, size_t entries)
{
    size_t n = MOSAIC__CACHE_WAYS;
    if (!p) return MOSAIC_EINVAL;
    free(p->cache_keys);
    free(p->cache_res);
    p->cache_keys = NULL;
    p->cache_res = NULL;
    p->cache_set_mask = 0;
    if (entries == 0) return 0;
    if (entries > ((size_t)1 << 24)) return MOSAIC_EINVAL;
    while (n < entries) n <<= 1;
    p->cache_keys = calloc(n, sizeof *p->cache_keys);
    p->cache_res = calloc(n, sizeof *p->cache_res);
    if (!p->cache_keys || !p->cache_res) {
        free(p->cache_keys);
        free(p->cache_res);
        p->cache_keys = NULL;
        p->cache_res = NULL;
        return MOSAIC_ENOMEM;
    }
    prefault(p->cache_keys, n * sizeof *p->cache_keys);
    prefault(p->cache_res, n * sizeof *p->cache_res);
    p->cache_set_mask = n / MOSAIC__CACHE_WAYS - 1;
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

/* The shortest isolated duration a query may give, us: 1 ns, the floor of
 * a profile's metrics.duration_ns (kernel.c) and of mosaic-predict's
 * --iso-a/--iso-b. */
#define ISO_MIN_US 1e-3

/* 0 when every duration and slowdown of r is a finite positive number;
 * else MOSAIC_EINVAL naming the kernel, so that no answer computed from a
 * value the checks let through (a model or profile out of its range) is
 * returned as a prediction. */
static int check_result(const struct mosaic_pred_query *q, const struct mosaic_pred_result *r,
                        char *err, size_t errlen)
{
    for (int i = 0; i < 2; i++) {
        const struct mosaic_pred_kernel *k = &r->k[i];
        if (isfinite(k->duration_us) && k->duration_us > 0 && isfinite(k->slowdown) &&
            k->slowdown > 0 && isfinite(k->iso_us) && k->iso_us > 0)
            continue;
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, "prediction", i ? "b" : "a",
                            "kernel %s: duration %g us, slowdown %g over %g us: not a "
                            "finite positive result (a profile or model value outside what "
                            "the models were fitted on); no prediction is returned",
                            mosaic_pkernel_key(i ? q->b : q->a), k->duration_us, k->slowdown,
                            k->iso_us);
    }
    return 0;
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
    if (q->mode == MOSAIC_MODE_PARTITIONED) {
        char why[512];
        if (mosaic_gpu_split_check(&p->gpu, q->sms_a, q->sms_b, why, sizeof why))
            return mosaic__errf(err, errlen, MOSAIC_EINVAL, "query", "sms_a/sms_b", "%s", why);
    }
    if (q->disable & ~MOSAIC_PC_ALL) {
        snprintf(err, errlen, "query: field disable has unknown bits 0x%x",
                 q->disable);
        return MOSAIC_EINVAL;
    }
    /* A measured duration is at least ISO_MIN_US: below it (1e-300 us)
     * the slowdowns over it overflowed to inf and were returned as a
     * prediction. */
    if ((isfinite(q->iso_a_us) && q->iso_a_us != 0 &&
         (q->iso_a_us < ISO_MIN_US || q->iso_a_us > 1e9)) ||
        (isfinite(q->iso_b_us) && q->iso_b_us != 0 &&
         (q->iso_b_us < ISO_MIN_US || q->iso_b_us > 1e9)) ||
        isinf(q->iso_a_us) || isinf(q->iso_b_us)) {
        snprintf(err, errlen, "query: field iso_a_us/iso_b_us = %g/%g: a measured duration "
                 "is in [%g, 1e9] us (0 or NaN: estimated from the profile)", q->iso_a_us,
                 q->iso_b_us, ISO_MIN_US);
        return MOSAIC_EINVAL;
    }
    if (!(fabs(q->offset_us) <= MOSAIC_OFFSET_MAX_US)) {
        snprintf(err, errlen,
                 "query: field offset_us = %g: B's enqueue minus A's must be a number in "
                 "[-%g, %g] us", q->offset_us, MOSAIC_OFFSET_MAX_US, MOSAIC_OFFSET_MAX_US);
        return MOSAIC_EINVAL;
    }
    if (q->protect != 0 && q->protect != 1) {
        snprintf(err, errlen, "query: field protect = %d: 0 (kernel A) or 1 (kernel B)",
                 q->protect);
        return MOSAIC_EINVAL;
    }
    return 0;
}

/* The enqueue delay of the kernel enqueued later, us: 0 within the dispatch
 * jitter, where the dataset measured both kernels from their own enqueue
 * with the GPU choosing the order. */
static double query_delay(const struct mosaic_pred_query *q)
{
    return fabs(q->offset_us) > MOSAIC_DISPATCH_JITTER_US ? fabs(q->offset_us) : 0;
}

/* Partitioned: each starts at its enqueue on its own SMs; while both run
 * each runs f times slower (inter-SM model: the full-overlap factor), alone
 * at its isolated speed. A co-runner on other SMs only takes memory
 * bandwidth away: f >= 1 (the forest, fitted to noisy labels, dips below 1
 * where it extrapolates, e.g. a split of 128/4 SMs). start_b: B's start
 * minus A's (us, signed; 0 within the jitter). */
static void predict_partitioned(const struct mosaic_predictor *p,
                                const struct mosaic_pred_query *q, unsigned comp,
                                double iso_a, double iso_b, double start_b,
                                struct mosaic_pred_result *res)
{
    int sa = q->sms_a, sb = q->sms_b;
    double f[2] = {1, 1}, iso[2] = {iso_a, iso_b}, st[2], end[2], done[2] = {0, 0};
    double t, both_end;
    if (comp & MOSAIC_PC_INTER) {
        f[0] = inter_factor(p, q->a, sa, iso_a, q->b, sb, iso_b);
        f[1] = inter_factor(p, q->b, sb, iso_b, q->a, sa, iso_a);
    }
    for (int i = 0; i < 2; i++)
        if (f[i] < 1) f[i] = 1;
    st[0] = start_b < 0 ? -start_b : 0;
    st[1] = start_b > 0 ? start_b : 0;
    /* the earlier one alone until the later starts (or it ends) */
    t = st[0] > st[1] ? st[0] : st[1];
    for (int i = 0; i < 2; i++) {
        done[i] = (t - st[i]) / iso[i];
        if (done[i] > 1) done[i] = 1;
    }
    for (int i = 0; i < 2; i++) end[i] = done[i] >= 1 ? st[i] + iso[i] : -1;
    if (end[0] < 0 && end[1] < 0) {
        /* both run at 1/f until the first ends, the other alone after */
        double ta = (1 - done[0]) * iso[0] * f[0], tb = (1 - done[1]) * iso[1] * f[1];
        int fi = ta <= tb ? 0 : 1, si = 1 - fi;
        double dt = fi == 0 ? ta : tb;
        end[fi] = t + dt;
        done[si] += dt / (iso[si] * f[si]);
        end[si] = end[fi] + (1 - done[si]) * iso[si];
    } else {
        for (int i = 0; i < 2; i++)
            if (end[i] < 0) end[i] = t + (1 - done[i]) * iso[i];
    }
    both_end = fmin(end[0], end[1]);
    for (int i = 0; i < 2; i++) {
        struct mosaic_pred_kernel *r = &res->k[i];
        r->iso_us = iso[i];
        r->waves = mosaic__place_waves(i == 0 ? q->a : q->b, i == 0 ? sa : sb);
        r->placement = r->packing = r->intra_sm = 1;
        r->start_us = st[i];
        r->duration_us = end[i] - st[i];
        r->slowdown = r->duration_us / r->iso_us;
        r->inter_sm = r->slowdown;
    }
    res->overlap_us = both_end > t ? both_end - t : 0;
}

/*
 * How much of the residual applies to a delayed co-run, per kernel. The
 * residual forest learned from co-runs launched together; what it adds to
 * a kernel's time is interference while the two ran together, so behind a
 * delay it scales with the time they still overlap: kernel i's extra time
 * is (f - 1) * d0_i * overlap / overlap0, where d0_i and overlap0 are the
 * duration and overlap of the same pair launched together (the timeline at
 * delay 0). As a factor on the delayed duration d_i that is a weight w_i =
 * (d0_i / d_i) * (overlap / overlap0) on f - 1, at most 1. Without it, a
 * sliver of overlap (B released as A's last blocks finish, the delay of 1x
 * A's time) took the whole residual of a full co-run (issue 14: at 1x the
 * predictor scored worse than the no-interference floor). Nothing is
 * fitted here; at delay 0 the weight is 1.
 */
static void residual_share(const struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                           int b_first, unsigned comp, double iso_a, double iso_b, double ia,
                           double ib, const struct mosaic_pred_result *res, double w[2])
{
    struct mosaic_pred_result r0;
    mosaic__timeline_shared(&p->gpu, &p->coef, q->a, q->b, b_first, 0, iso_a, iso_b, ia, ib,
                            comp, &r0);
    for (int i = 0; i < 2; i++) {
        double d = res->k[i].duration_us, v = 1;
        if (r0.overlap_us > 0 && d > 0)
            v = (r0.k[i].duration_us / d) * (res->overlap_us / r0.overlap_us);
        w[i] = isfinite(v) ? clampd(v, 0, 1) : 1;
    }
}

/* What the orders of one query share, computed by the first order that
 * needs it: in shared mode each kernel's inter-SM factor on all SMs does
 * not depend on the dispatch order, so mosaic_predict's two orders take
 * one pair of forest evaluations instead of two (a quarter of a shared
 * answer's forest work). */
struct pred_shared_ctx {
    int have_inter;
    double inter_a, inter_b;
};

/* Shared: the inter-SM factor of each at an even split (from ctx when an
 * order before this one computed them), then the timeline (timeline.c),
 * then the residual model on the rows features.c builds from the
 * timeline's result; the rows go to xa_out/xb_out when given. */
static void predict_shared(const struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                           int b_first, double delay, unsigned comp, double iso_a,
                           double iso_b, struct pred_shared_ctx *ctx,
                           struct mosaic_pred_result *res, float *xa_out, float *xb_out)
{
    const struct mosaic_gpu_desc *g = &p->gpu;
    int N = g->sm_count;
    double ia = 1, ib = 1;
    float xa[MOSAIC__NF_SHARED], xb[MOSAIC__NF_SHARED];
    if (comp & MOSAIC_PC_INTER) {
        if (!ctx->have_inter) {
            ctx->inter_a = inter_factor(p, q->a, N, iso_a, q->b, N, iso_b);
            ctx->inter_b = inter_factor(p, q->b, N, iso_b, q->a, N, iso_a);
            ctx->have_inter = 1;
        }
        ia = ctx->inter_a;
        ib = ctx->inter_b;
    }
    mosaic__timeline_shared(g, &p->coef, q->a, q->b, b_first, delay, iso_a, iso_b, ia, ib,
                            comp, res);
    mosaic__feat_shared(g, q->a, q->b, b_first, iso_a, iso_b, res, xa, xb);
    if (xa_out) memcpy(xa_out, xa, sizeof xa);
    if (xb_out) memcpy(xb_out, xb, sizeof xb);
    /* the residual corrects the interference of a co-run; kernels that did
     * not overlap (the later one enqueued after the first ended) had none */
    if ((comp & MOSAIC_PC_INTRA) && p->shared && res->overlap_us > 0) {
        double w[2] = {1, 1};
        if (delay > 0) residual_share(p, q, b_first, comp, iso_a, iso_b, ia, ib, res, w);
        for (int i = 0; i < 2; i++) {
            double y = mosaic__forest_predict(p->shared, i == 0 ? xa : xb);
            double f = 1 + w[i] * ((isfinite(y) ? exp(clampd(y, -2, 3)) : 1) - 1);
            struct mosaic_pred_kernel *r = &res->k[i];
            r->intra_sm *= f;
            r->duration_us *= f;
        }
    }
    /* No slowdown below 1: no mechanism measured on the H200 makes a kernel
     * run faster beside another one in shared mode. The dataset's co-runs
     * below their isolated time (242 of 9112 kernel measurements, 209 of
     * them cuBLAS bf16 GEMMs, down to 0.83x) are the gated isolated
     * baseline's launch cost, which the co-run hides (issue 9); a residual
     * fitted to them learned that artefact. */
    for (int i = 0; i < 2; i++) {
        struct mosaic_pred_kernel *r = &res->k[i];
        if (r->duration_us < r->iso_us) {
            r->intra_sm *= r->iso_us / r->duration_us;
            r->duration_us = r->iso_us;
        }
        r->slowdown = r->duration_us / r->iso_us;
    }
}

/* A checked query in one dispatch order: the isolated durations (given,
 * else placement's estimate on the kernels' SMs), then the mode's
 * prediction; delay: the later kernel's enqueue delay (0 within the
 * jitter). */
static void predict_core(struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                         int b_first, double delay, struct pred_shared_ctx *ctx,
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
        predict_partitioned(p, q, comp, iso_a, iso_b, b_first ? -delay : delay, res);
    else
        predict_shared(p, q, b_first, delay, comp, iso_a, iso_b, ctx, res, xa_out, xb_out);
}

int mosaic__predict_rows(struct mosaic_predictor *p,
                         const struct mosaic_pred_query *q, int b_first,
                         struct mosaic_pred_result *res, float *xa, float *xb)
{
    struct pred_shared_ctx ctx = {0};
    predict_core(p, q, b_first, 0, &ctx, res, xa, xb);
    return 0;
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* An isolated duration's cache bucket: 0 when it is estimated (the
 * estimate is a function of the kernel, in the key already), else 1/32 of
 * an octave (2.2%). */
static uint64_t iso_bucket(double us)
{
    if (!(isfinite(us) && us > 0)) return 0;
    return (uint64_t)(int64_t)floor(log2(us) * 32 + 4096) + 1;
}

/* A cached outcome applied to the durations given: the slowdowns are kept,
 * the times scaled by the ratio of the given isolated duration to the one
 * cached (within one bucket, at most 2.2%). */
static void cache_apply(const struct mosaic_pred_query *q, const struct mosaic_pred_result *c,
                        struct mosaic_pred_result *res)
{
    const double given[2] = {q->iso_a_us, q->iso_b_us};
    *res = *c;
    for (int i = 0; i < 2; i++) {
        struct mosaic_pred_kernel *k = &res->k[i];
        if (isfinite(given[i]) && given[i] > 0 && k->iso_us > 0) {
            double s = given[i] / k->iso_us;
            k->iso_us = given[i];
            k->duration_us *= s;
            k->start_us *= s;
        }
    }
    res->cached = 1;
}

/* The cache's description of a query in one order, beside the kernels'
 * identities: mode, order, components, SM split (partitioned mode only:
 * shared mode ignores it) and the start delay in buckets of 0.25 us.
 * 0 when it does not fit the key's fields (an SM count beyond 16 bits):
 * such a query is predicted without the cache. */
static uint64_t cache_cfg(const struct mosaic_pred_query *q, int b_first, double delay)
{
    unsigned comp = MOSAIC_PC_ALL & ~q->disable;
    uint64_t dbk = (uint64_t)llround(delay * 4); /* <= 4e6: 22 bits */
    uint64_t cfg = (uint64_t)q->mode | (uint64_t)b_first << 1 | (uint64_t)comp << 2 | dbk << 40 |
                   MOSAIC__CACHE_USED;
    if (q->mode == MOSAIC_MODE_PARTITIONED) {
        if (q->sms_a < 0 || q->sms_a > 0xffff || q->sms_b < 0 || q->sms_b > 0xffff) return 0;
        cfg |= (uint64_t)q->sms_a << 8 | (uint64_t)q->sms_b << 24;
    }
    return cfg;
}

/* One order of a checked query, through the cache when there is one.
 * Sets-associative: a key hashes to a set of MOSAIC__CACHE_WAYS ways; a
 * miss takes a free way, else the one the victim counter points at. */
static void predict_order_checked(struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                                  int b_first, struct pred_shared_ctx *ctx,
                                  struct mosaic_pred_result *res)
{
    double delay = query_delay(q);
    struct mosaic__cache_key key, *set, *slot = NULL;
    size_t base;
    uint64_t h;
    if (!p->cache_keys || !(key.cfg = cache_cfg(q, b_first, delay))) {
        predict_core(p, q, b_first, delay, ctx, res, NULL, NULL);
        return;
    }
    key.ha = q->a->hash;
    key.hb = q->b->hash;
    key.isok = iso_bucket(q->iso_a_us) << 32 | iso_bucket(q->iso_b_us);
    h = mix(key.ha ^ mix(key.hb + 0x9e3779b97f4a7c15ull) ^ mix(key.cfg * 31 ^ mix(key.isok)));
    base = (size_t)(h & p->cache_set_mask) * MOSAIC__CACHE_WAYS;
    set = &p->cache_keys[base];
    for (size_t w = 0; w < MOSAIC__CACHE_WAYS; w++) {
        if (!set[w].cfg) {
            if (!slot) slot = &set[w];
            continue;
        }
        if (set[w].ha == key.ha && set[w].hb == key.hb && set[w].cfg == key.cfg &&
            set[w].isok == key.isok) {
            cache_apply(q, &p->cache_res[base + w], res);
            return;
        }
    }
    if (!slot) slot = &set[p->cache_victim++ % MOSAIC__CACHE_WAYS];
    predict_core(p, q, b_first, delay, ctx, res, NULL, NULL);
    *slot = key;
    p->cache_res[(size_t)(slot - p->cache_keys)] = *res;
}

/* The order a query may be predicted in: partitioned mode has the one the
 * offset gives; beyond the jitter only that one can happen. */
static int order_check(const struct mosaic_pred_query *q, int *b_first, char *err,
                       size_t errlen)
{
    if (q->mode == MOSAIC_MODE_PARTITIONED) *b_first = q->offset_us < 0;
    *b_first = *b_first != 0;
    if (query_delay(q) > 0 && *b_first != (q->offset_us < 0)) {
        snprintf(err, errlen,
                 "query: offset_us = %g is beyond the dispatch jitter (%g us): only the "
                 "order that follows from it can be predicted", q->offset_us,
                 MOSAIC_DISPATCH_JITTER_US);
        return MOSAIC_EINVAL;
    }
    return 0;
}

int mosaic__predict_order(struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                          int b_first, struct mosaic_pred_result *res, char *err,
                          size_t errlen)
{
    struct pred_shared_ctx ctx = {0};
    int rc;
    if (!res) {
        snprintf(err, errlen, "mosaic__predict_order: NULL result");
        return MOSAIC_EINVAL;
    }
    memset(res, 0, sizeof *res);
    if (!p || !q) {
        snprintf(err, errlen, "mosaic__predict_order: NULL argument");
        return MOSAIC_EINVAL;
    }
    rc = check_query(p, q, err, errlen);
    if (!rc) rc = order_check(q, &b_first, err, errlen);
    if (rc) return rc;
    predict_order_checked(p, q, b_first, &ctx, res);
    return 0;
}

MOSAIC__EXPORT int mosaic_predict(struct mosaic_predictor *p, const struct mosaic_pred_query *q,
                               struct mosaic_pred_answer *ans, char *err, size_t errlen)
{
    struct pred_shared_ctx ctx = {0};
    int rc, pk;
    if (!ans) {
        snprintf(err, errlen, "mosaic_predict: NULL answer");
        return MOSAIC_EINVAL;
    }
    memset(ans, 0, sizeof *ans);
    if (!p || !q) {
        snprintf(err, errlen, "mosaic_predict: NULL argument");
        return MOSAIC_EINVAL;
    }
    rc = check_query(p, q, err, errlen);
    if (rc) return rc;
    pk = q->protect;
    if (q->mode == MOSAIC_MODE_PARTITIONED || query_delay(q) > 0) {
        /* the order is certain: partitions do not share dispatch, and
         * beyond the jitter the kernel enqueued first goes first */
        ans->n_orders = 1;
        ans->order[0].b_first = q->offset_us < 0;
        ans->order[0].likelihood = 1;
    } else {
        int enq_b_first = q->offset_us < 0;
        ans->n_orders = 2;
        ans->order[0].b_first = enq_b_first;
        ans->order[0].likelihood = MOSAIC_ENQUEUED_FIRST_P;
        ans->order[1].b_first = !enq_b_first;
        ans->order[1].likelihood = 1 - MOSAIC_ENQUEUED_FIRST_P;
    }
    for (int i = 0; i < ans->n_orders; i++) {
        /* checked above; the orders are the ones the offset allows */
        predict_order_checked(p, q, ans->order[i].b_first, &ctx, &ans->order[i].r);
        rc = check_result(q, &ans->order[i].r, err, errlen);
        if (rc) {
            memset(ans, 0, sizeof *ans);
            return rc;
        }
        if (ans->order[i].r.k[pk].duration_us > ans->conservative_us) {
            ans->conservative_us = ans->order[i].r.k[pk].duration_us;
            ans->conservative_slowdown = ans->order[i].r.k[pk].slowdown;
        }
    }
    /* the worse order's prediction is a median; the margin makes it a
     * bound (analytic.json's cons_margin, fitted on the training repeats
     * of shared mode, where the spread between repeats is) */
    if (q->mode == MOSAIC_MODE_SHARED) {
        ans->conservative_us *= p->coef.cons_margin;
        ans->conservative_slowdown *= p->coef.cons_margin;
    }
    ans->protect = pk;
    return 0;
}

/* A kernel's progress rate (fraction of its work per us) while its pair
 * co-runner runs, from the pair prediction with both from the start: it
 * took t, the other t_other, iso alone. Ending first, it did all its work
 * in t; ending last, it ran alone at its isolated speed after the other
 * ended, so the overlap held the rest (0 when it waited throughout). */
static double overlap_rate(double t, double t_other, double iso)
{
    double w;
    if (t <= t_other) return 1 / t;
    w = 1 - (t - t_other) / iso;
    return w > 0 ? w / t_other : 0;
}

MOSAIC__EXPORT int mosaic_predict_timeline(struct mosaic_predictor *p,
                                        const struct mosaic_timeline_query *q,
                                        struct mosaic_timeline_result *res, char *err,
                                        size_t errlen)
{
    double iso_hp, done = 0, t = 0, prev_end = 0, hp_end = -1;
    int N;
    if (!res) {
        snprintf(err, errlen, "mosaic_predict_timeline: NULL result");
        return MOSAIC_EINVAL;
    }
    memset(res, 0, sizeof *res);
    if (!p || !q || !q->hp) {
        snprintf(err, errlen, "mosaic_predict_timeline: NULL argument or field hp");
        return MOSAIC_EINVAL;
    }
    if (q->n_be < 1 || q->n_be > MOSAIC_TIMELINE_MAX) {
        snprintf(err, errlen, "timeline: field n_be = %zu: 1 to %d best-effort kernels",
                 q->n_be, MOSAIC_TIMELINE_MAX);
        return MOSAIC_EINVAL;
    }
    N = p->gpu.sm_count;
    if (q->mode != MOSAIC_MODE_SHARED && q->mode != MOSAIC_MODE_PARTITIONED) {
        snprintf(err, errlen, "timeline: field mode = %d is neither shared nor partitioned",
                 q->mode);
        return MOSAIC_EINVAL;
    }
    if (q->mode == MOSAIC_MODE_PARTITIONED) {
        char why[512];
        if (mosaic_gpu_split_check(&p->gpu, q->sms_hp, q->sms_be, why, sizeof why))
            return mosaic__errf(err, errlen, MOSAIC_EINVAL, "timeline", "sms_hp/sms_be", "%s",
                                why);
    }
    if (isinf(q->hp_iso_us) || (isfinite(q->hp_iso_us) && (q->hp_iso_us < 0 || q->hp_iso_us > 1e9))) {
        snprintf(err, errlen, "timeline: field hp_iso_us = %g out of range [0, 1e9]",
                 q->hp_iso_us);
        return MOSAIC_EINVAL;
    }
    for (size_t i = 0; i < q->n_be; i++) {
        if (!q->be[i].k) {
            snprintf(err, errlen, "timeline: field be[%zu].k is NULL", i);
            return MOSAIC_EINVAL;
        }
        if (!(q->be[i].enqueue_us >= 0 && q->be[i].enqueue_us <= MOSAIC_OFFSET_MAX_US)) {
            snprintf(err, errlen,
                     "timeline: field be[%zu].enqueue_us = %g: must be in [0, %g] us from the "
                     "HP kernel's enqueue", i, q->be[i].enqueue_us, MOSAIC_OFFSET_MAX_US);
            return MOSAIC_EINVAL;
        }
    }
    iso_hp = (isfinite(q->hp_iso_us) && q->hp_iso_us > 0)
                 ? q->hp_iso_us
                 : mosaic__place_iso_on(&p->gpu, q->hp,
                                        q->mode == MOSAIC_MODE_PARTITIONED ? q->sms_hp : N);
    for (size_t i = 0; i < q->n_be; i++) {
        struct mosaic_pred_query pq = {.a = q->hp, .b = q->be[i].k, .mode = q->mode,
                                       .sms_a = q->sms_hp, .sms_b = q->sms_be,
                                       .disable = q->disable, .iso_a_us = iso_hp,
                                       .iso_b_us = q->be[i].iso_us, .protect = 0};
        struct mosaic_pred_answer a;
        double start = q->be[i].enqueue_us > prev_end ? q->be[i].enqueue_us : prev_end;
        double d_hp = 0, d_be = 0, iso_be, r_hp, r_be, s_hp, t_hp_left, t_be;
        int rc, worst = 0;
        res->be_start_us[i] = start;
        if (hp_end >= 0) {
            /* the HP kernel has ended: this one runs alone */
            rc = mosaic__predict_order(p, &pq, 0, &a.order[0].r, err, errlen);
            if (rc) return rc;
            res->be_end_us[i] = start + a.order[0].r.k[1].iso_us;
            prev_end = res->be_end_us[i];
            continue;
        }
        /* the HP kernel alone until this one starts */
        if (start > t) {
            done += (start - t) / iso_hp;
            t = start;
            if (done >= 1) {
                hp_end = t - (done - 1) * iso_hp;
                done = 1;
                i--; /* this BE kernel runs after the HP kernel: take it again alone */
                continue;
            }
        }
        /* Within the jitter of the HP kernel's dispatch either order can
         * happen; later, the HP kernel is running and goes first. */
        if (start > MOSAIC_DISPATCH_JITTER_US) pq.offset_us = MOSAIC_DISPATCH_JITTER_US * 2;
        rc = mosaic_predict(p, &pq, &a, err, errlen);
        if (rc) return rc;
        for (int o = 0; o < a.n_orders; o++)
            if (a.order[o].r.k[0].duration_us >= a.order[worst].r.k[0].duration_us) worst = o;
        /* the delay of a beyond-jitter query is not this timeline's: take
         * the durations of the full-overlap outcome */
        d_hp = a.order[worst].r.k[0].duration_us;
        d_be = a.order[worst].r.k[1].duration_us;
        if (pq.offset_us > 0) {
            struct mosaic_pred_query z = pq;
            struct mosaic_pred_result r0;
            z.offset_us = 0;
            rc = mosaic__predict_order(p, &z, 0, &r0, err, errlen);
            if (rc) return rc;
            d_hp = r0.k[0].duration_us;
            d_be = r0.k[1].duration_us;
        }
        /* the HP kernel's conservative duration, as mosaic_predict gives it */
        if (q->mode == MOSAIC_MODE_SHARED) d_hp *= p->coef.cons_margin;
        iso_be = a.order[worst].r.k[1].iso_us;
        /* The span over which this BE kernel holds the HP kernel back: its
         * run, or longer when the HP kernel waited for it and still took
         * more than its isolated time after (the residual's share). */
        s_hp = d_hp > d_be + iso_hp ? d_hp - iso_hp : d_be;
        r_hp = overlap_rate(d_hp, s_hp, iso_hp);
        r_be = overlap_rate(d_be, d_hp, iso_be);
        if (!(r_hp > 0) && !(r_be > 0)) r_hp = 1 / iso_hp;
        res->n_overlapping++;
        t_hp_left = r_hp > 0 ? (1 - done) / r_hp : INFINITY;
        t_be = r_be > 0 ? 1 / r_be : INFINITY;
        if (t_be < s_hp && t_hp_left > s_hp) {
            /* the HP kernel is held back past this one's end */
            done += s_hp * r_hp;
            t += s_hp;
            res->be_end_us[i] = start + t_be;
        } else if (t_hp_left <= t_be) {
            /* the HP kernel ends while this one runs; this one then goes on
             * alone at its isolated speed */
            hp_end = t + t_hp_left;
            done = 1;
            res->be_end_us[i] = hp_end + (1 - t_hp_left * r_be) * iso_be;
        } else {
            done += t_be * r_hp;
            t += t_be;
            res->be_end_us[i] = t;
        }
        prev_end = res->be_end_us[i];
    }
    if (hp_end < 0) hp_end = t + (1 - done) * iso_hp;
    res->hp_duration_us = hp_end;
    res->hp_iso_us = iso_hp;
    res->hp_slowdown = hp_end / iso_hp;
    return 0;
}
