/*
 * The model-driven admission policies: `mosaic` (the paper's eq. 5 with the
 * interference predictor) and `orion` (an Orion-like baseline). Both keep
 * the same picture of the node, built from the daemon's events:
 *
 *   - each HP client's current request: when it began, which kernels it
 *     launched, and how far through its isolated kernel sequence it is
 *     ("done", in wall nanoseconds of isolated work), integrated over time
 *     at the rate the BE kernels running beside it allow;
 *   - each request type (named by its first kernel): its kernel sequence
 *     (learned from the launches of its first request), the isolated
 *     duration of each kernel from the profile store, and its isolated
 *     latency T_iso, learned online from requests that no BE kernel
 *     overlapped. T_iso over the profiles' sum is the time scale between
 *     the profiled GPU and this one (20x on the simulated GPU);
 *   - the BE kernels running: granted when, and predicted to end when.
 *
 * Eq. 5 for a BE kernel asking admission while a request is in flight:
 * completed + in-flight + predicted overlap + remaining <= p * T_iso. Here
 * the left side is the predicted finish of the request, simulated forward
 * from its progress with the BE kernels running and the candidate: each
 * HP kernel runs at 1 / (1 + f * sum_b (s_hb - 1)) of its isolated speed
 * while BE kernels b run, s_hb the predictor's slowdown of that HP kernel
 * beside b (the predictor's conservative value: the worse of the two
 * dispatch orders, since the order is not known beforehand) and f >= 1 the
 * drift factor below. While no request is
 * in flight the same test is made for the next request, expected at the
 * last end plus the shortest gap seen between requests: a BE kernel that
 * is still running then slows it just the same.
 *
 * Drift: at each request's end that BE work overlapped, the observed
 * latency is compared with the prediction made at its last grant. When it
 * is over by more than DRIFT_RATIO, f grows by 1.5x (2x when the request
 * broke the SLO), or to what would have predicted that request's
 * interference, whichever is more (at most F_MAX): the policy becomes more conservative
 * by itself, logs it and counts it (mosaic_policy_drift_total,
 * mosaic_policy_overlap_factor). f starts at F_START, not 1: a predictor
 * meets kernels it never saw (on the simulated GPU the fold model without
 * the conv family under-predicted conv beside conv by about 1.3x), and a
 * violation costs the SLO while a margin costs only BE throughput. After
 * DECAY_AFTER requests within prediction f shrinks by 1.25x, not below 1.
 */
#define _GNU_SOURCE 1
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "mosaic/predict.h"
#include "mosaic/profile.h"
#include "policy_learn.h"

#define MAX_SEQ 32        /* kernels of a request type that the model follows */
#define MAX_TYPES 16
#define MAX_HP 8
#define MAX_RUN 128
#define ISO_SAMPLES 64
#define MIN_ISO_SAMPLES 5 /* isolated requests seen before BE may overlap HP */
#define HP_IDLE_NS 1000000000ull /* no request for 1 s: the HP service is idle */
#define DRIFT_RATIO 1.10
#define F_MAX 16.0
#define F_START 2.0
#define DECAY_AFTER 100
/* Orion's duration cap: in-flight BE work beside a request at most this
 * share of the request's isolated latency (Orion's DUR_THRESHOLD idea). */
#define ORION_DUR_SHARE 0.10
/* A kernel moving more than this share of the H200's 3918 GB/s of DRAM
 * traffic counts as memory-bound for orion's complementarity test. */
#define ORION_MEM_SHARE 0.40
#define H200_DRAM_BPS 3918e9

/* Admitting reasons come first (model_decide admits at R_FITS or below). */
enum reason { R_NO_HP, R_LEARNED, R_FITS, R_OVER, R_UNKNOWN, R_LEARNING, R_ORION_MISMATCH,
              R_COUNT };
static const char *const reason_names[R_COUNT] = {"no_hp", "learned_bound", "fits", "over_slo",
                                                 "unknown_kernel", "learning", "orion_mismatch"};

struct kinfo {
    uint64_t id;
    const struct mosaic_kernel *k; /* NULL: not in the profile store */
    struct mosaic_pkernel *pk;     /* prepared for the predictor (mosaic only) */
    double iso_ns;                 /* profiled duration, profiled-GPU ns */
    double sm_demand;              /* share of the GPU's block slots its grid fills */
    int mem_bound;
};

struct pair {
    uint64_t hp, be;
    double s_hp, s_be; /* NaN: no prediction */
};

struct rtype {
    uint64_t first; /* the first kernel's id names the type */
    int n;          /* 0 until the first request ended */
    int known;      /* every kernel has a profile */
    const struct kinfo *ki[MAX_SEQ];
    double iso_sum_ns;
    double samples[ISO_SAMPLES];
    int nsamples, next_sample;
    double t_iso; /* wall ns: the median of the isolated samples */
};

struct hpc {
    int used;
    uint32_t client;
    int open;
    uint64_t t0, last_t, last_end, last_begin, min_gap;
    int ngaps;
    double done; /* wall ns of isolated work completed in this request */
    int nl;
    uint64_t launched[MAX_SEQ];
    struct rtype *type;
    int overlapped;
    double pred_finish; /* predicted end, wall ns, at the last grant */
};

struct bek {
    uint32_t client;
    const struct kinfo *ki;
    uint64_t start;
    double end_pred, wall;
};

struct model {
    int orion;
    double slo;
    struct mosaic__pstore *store;
    struct mosaic_predictor *pred;
    struct mosaic__learn *learn; /* BE kernels without a profile or prediction */
    struct kinfo *kinfo;
    size_t kmask, kcount;
    struct pair *pairs;
    size_t pmask, pcount;
    struct rtype types[MAX_TYPES];
    int ntypes;
    struct hpc hp[MAX_HP];
    struct bek run[MAX_RUN];
    int nrun;
    double f, scale;
    double now; /* the time of the decision or event being handled */
    unsigned ok_streak;
    uint64_t decisions[R_COUNT], drift, overlapped_requests, over_slo;
    double pred_sum_s, obs_sum_s;
};

/* ---- kernels and pairs ----------------------------------------------------- */

static const struct kinfo *kinfo_get(struct model *m, uint64_t id)
{
    size_t i;

    if (!id)
        return NULL;
    for (i = id & m->kmask; m->kinfo[i].id; i = (i + 1) & m->kmask)
        if (m->kinfo[i].id == id)
            return m->kinfo[i].k ? &m->kinfo[i] : NULL;
    if (2 * (m->kcount + 1) > m->kmask + 1)
        return NULL; /* full: an id this late is treated as unknown */
    struct kinfo *ki = &m->kinfo[i];
    ki->id = id;
    m->kcount++;
    ki->k = mosaic__pstore_get(m->store, id);
    if (!ki->k)
        return NULL;
    ki->iso_ns = ki->k->metrics[MOSAIC_M_duration_ns];
    if (!(ki->iso_ns > 0)) {
        mosaic__dlog(MOSAIC__L_WARN, "profile of %s has no duration_ns: treated as unknown",
                     ki->k->key);
        ki->k = NULL;
        return NULL;
    }
    {
        double blocks = (double)ki->k->grid[0] * (double)ki->k->grid[1] * (double)ki->k->grid[2];
        double per_sm = ki->k->occ.blocks_per_sm > 0 ? (double)ki->k->occ.blocks_per_sm : 1;
        double bytes = ki->k->metrics[MOSAIC_M_dram_read_bytes] +
                       ki->k->metrics[MOSAIC_M_dram_write_bytes];
        ki->sm_demand = fmin(1.0, blocks / (per_sm * 132.0));
        ki->mem_bound = isfinite(bytes) && bytes / (ki->iso_ns * 1e-9) >
                                               ORION_MEM_SHARE * H200_DRAM_BPS;
    }
    if (m->pred) {
        char err[512];
        if (mosaic_pkernel_prepare(m->pred, ki->k, ki->k->key, &ki->pk, err, sizeof(err)) != 0) {
            mosaic__dlog(MOSAIC__L_WARN, "predictor: %s; this kernel counts as unknown", err);
            ki->pk = NULL;
        }
    }
    return ki;
}

/* The predicted slowdowns of HP kernel h beside BE kernel b, the worse of
 * the two dispatch orders for each, cached per pair. */
static const struct pair *pair_get(struct model *m, const struct kinfo *h, const struct kinfo *b)
{
    uint64_t key = h->id * 31 + b->id;
    size_t i;

    for (i = key & m->pmask; m->pairs[i].hp || m->pairs[i].be; i = (i + 1) & m->pmask)
        if (m->pairs[i].hp == h->id && m->pairs[i].be == b->id)
            return &m->pairs[i];
    if (2 * (m->pcount + 1) > m->pmask + 1)
        return NULL;
    struct pair *p = &m->pairs[i];
    p->hp = h->id;
    p->be = b->id;
    p->s_hp = p->s_be = NAN;
    m->pcount++;
    if (m->pred && h->pk && b->pk) {
        /* Launched together (offset 0): both dispatch orders can happen,
         * and the predictor's conservative value for the protected HP
         * kernel is its worse one (issue 9's API). The BE kernel's worst
         * order keeps the overlap estimate on the safe side. */
        struct mosaic_pred_query q = {.a = h->pk, .b = b->pk, .mode = MOSAIC_MODE_SHARED,
                                      .offset_us = 0, .protect = 0};
        struct mosaic_pred_answer ans;
        char err[512];
        double sbe = 0;
        if (mosaic_predict(m->pred, &q, &ans, err, sizeof(err)) != 0) {
            mosaic__dlog(MOSAIC__L_WARN, "predictor: %s", err);
        } else {
            for (int o = 0; o < ans.n_orders && o < 2; o++)
                sbe = fmax(sbe, ans.order[o].r.k[1].slowdown);
            if (isfinite(ans.conservative_slowdown) && isfinite(sbe) && sbe > 0) {
                p->s_hp = fmax(1.0, ans.conservative_slowdown);
                p->s_be = fmax(1.0, sbe);
            }
        }
    }
    return p;
}

/* ---- request types and HP clients ----------------------------------------- */

static struct rtype *type_get(struct model *m, uint64_t first)
{
    for (int i = 0; i < m->ntypes; i++)
        if (m->types[i].first == first)
            return &m->types[i];
    if (m->ntypes == MAX_TYPES)
        return NULL;
    m->types[m->ntypes] = (struct rtype){.first = first};
    return &m->types[m->ntypes++];
}

/* Ready for admission beside it: sequence, profiles and T_iso known. */
static int type_ready(const struct rtype *t)
{
    return t && t->n > 0 && t->known && t->nsamples >= MIN_ISO_SAMPLES && t->iso_sum_ns > 0;
}

static double type_scale(const struct rtype *t)
{
    return t->t_iso / t->iso_sum_ns;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void type_sample(struct model *m, struct rtype *t, double lat_ns)
{
    double tmp[ISO_SAMPLES];

    t->samples[t->next_sample] = lat_ns;
    t->next_sample = (t->next_sample + 1) % ISO_SAMPLES;
    if (t->nsamples < ISO_SAMPLES)
        t->nsamples++;
    memcpy(tmp, t->samples, sizeof(double) * (size_t)t->nsamples);
    qsort(tmp, (size_t)t->nsamples, sizeof(double), cmp_double);
    t->t_iso = tmp[t->nsamples / 2];
    if (type_ready(t))
        m->scale = type_scale(t);
}

static struct hpc *hp_get(struct model *m, uint32_t client, int create)
{
    struct hpc *free_slot = NULL;

    for (int i = 0; i < MAX_HP; i++) {
        if (m->hp[i].used && m->hp[i].client == client)
            return &m->hp[i];
        if (!m->hp[i].used && !free_slot)
            free_slot = &m->hp[i];
    }
    if (!create || !free_slot)
        return NULL;
    *free_slot = (struct hpc){.used = 1, .client = client};
    return free_slot;
}

/* ---- the forward model ----------------------------------------------------- */

/*
 * When a running BE kernel is taken to end. Its DONE has not come yet, so
 * it is still running now, whatever was predicted: one that outlived its
 * prediction (it was slowed more than predicted) is given half its isolated
 * time again, rather than none, which would let the model think the HP
 * request runs free beside it.
 */
static double be_end(const struct model *m, const struct bek *b)
{
    return b->end_pred > m->now ? b->end_pred : m->now + 0.5 * b->wall;
}

/* The slowdown of HP kernel h at time t: the BE kernels running then
 * (those of set, plus cand while t < cand_end). NaN when a pair has no
 * prediction. */
static double hp_slowdown(struct model *m, const struct kinfo *h, double t,
                          const struct kinfo *cand, double cand_end)
{
    double excess = 0;

    for (int i = 0; i < m->nrun; i++) {
        if (be_end(m, &m->run[i]) <= t)
            continue;
        const struct pair *p = pair_get(m, h, m->run[i].ki);
        if (!p || !isfinite(p->s_hp))
            return NAN;
        excess += p->s_hp - 1;
    }
    if (cand && t < cand_end) {
        const struct pair *p = pair_get(m, h, cand);
        if (!p || !isfinite(p->s_hp))
            return NAN;
        excess += p->s_hp - 1;
    }
    return 1 + m->f * excess;
}

/* The next moment after t when the set of BE kernels changes. */
static double next_be_change(const struct model *m, double t, double cand_end)
{
    double next = INFINITY;

    for (int i = 0; i < m->nrun; i++) {
        double e = be_end(m, &m->run[i]);
        if (e > t && e < next)
            next = e;
    }
    if (cand_end > t && cand_end < next)
        next = cand_end;
    return next;
}

/*
 * Simulates request type t from time `from` with `done` wall ns of its
 * isolated work completed, until `until` (INFINITY: its end). Returns the
 * time reached and updates *done; NaN when a pair has no prediction.
 */
static double simulate(struct model *m, const struct rtype *t, double from, double *done,
                       double until, const struct kinfo *cand, double cand_end)
{
    double scale = type_scale(t), now = from, pos = *done, edge = 0;

    for (int i = 0; i < t->n; i++) {
        edge += t->ki[i]->iso_ns * scale;
        while (pos < edge) {
            double s = hp_slowdown(m, t->ki[i], now, cand, cand_end);
            double change = next_be_change(m, now, cand_end);
            double need = (edge - pos) * s;
            if (!isfinite(s))
                return NAN;
            double stop = fmin(change, until);
            if (now + need <= stop) {
                now += need;
                pos = edge;
            } else {
                pos += (stop - now) / s;
                now = stop;
                if (now >= until) {
                    *done = pos;
                    return now;
                }
            }
        }
    }
    *done = pos;
    return now;
}

/* Brings an open request's progress up to now with the BE set as it was. */
static void advance(struct model *m, struct hpc *h, uint64_t now)
{
    if (!h->open || !type_ready(h->type) || (double)now <= (double)h->last_t) {
        if (h->open && (double)now > (double)h->last_t)
            h->last_t = now;
        return;
    }
    double done = h->done;
    double r = simulate(m, h->type, (double)h->last_t, &done, (double)now, NULL, 0);
    if (isfinite(r))
        h->done = done;
    h->last_t = now;
}

static double be_wall_ns(struct model *m, const struct kinfo *b, const struct rtype *t)
{
    double scale = type_ready(t) ? type_scale(t) : m->scale;
    double sbe = 1;

    /* The BE kernel runs slower beside HP work: the worst of the HP
     * kernels keeps the overlap estimate on the safe side. */
    if (type_ready(t))
        for (int i = 0; i < t->n; i++) {
            const struct pair *p = pair_get(m, t->ki[i], b);
            if (p && isfinite(p->s_be) && p->s_be > sbe)
                sbe = p->s_be;
        }
    return b->iso_ns * scale * (m->orion ? 1 : sbe);
}

/* ---- events ---------------------------------------------------------------- */

static void end_request(struct model *m, struct hpc *h, uint64_t ts)
{
    double lat = (double)ts - (double)h->t0;
    struct rtype *t = h->type;

    h->open = 0;
    h->last_end = ts;
    if (!t || lat <= 0)
        return;
    if (t->n == 0 && h->nl > 0) {
        t->known = 1;
        t->iso_sum_ns = 0;
        for (int i = 0; i < h->nl; i++) {
            t->ki[i] = kinfo_get(m, h->launched[i]);
            if (!t->ki[i])
                t->known = 0;
            else
                t->iso_sum_ns += t->ki[i]->iso_ns;
        }
        t->n = h->nl;
        mosaic__dlog(MOSAIC__L_INFO, "HP request type %016llx: %d kernels, %s",
                     (unsigned long long)t->first, t->n,
                     t->known ? "all profiled" : "some without a profile (BE is held beside it)");
    }
    if (mosaic__learn_overlapped(m->learn, h->t0, ts))
        return; /* beside a kernel with no prediction: no T_iso, no test of the predictor */
    if (!h->overlapped) {
        type_sample(m, t, lat);
        return;
    }
    if (!type_ready(t) || !(h->pred_finish > (double)h->t0))
        return;
    double pred = h->pred_finish - (double)h->t0;
    m->overlapped_requests++;
    m->pred_sum_s += pred / 1e9;
    m->obs_sum_s += lat / 1e9;
    int over = lat > m->slo * t->t_iso;
    m->over_slo += (uint64_t)over;
    if (lat > DRIFT_RATIO * pred || over) {
        double before = m->f;
        /* The interference the model put on this request, against what it
         * took: f is rescaled so that this request would have been
         * predicted, with a fifth more for margin, and at least 1.5x. */
        double pred_extra = pred - t->t_iso, obs_extra = lat - t->t_iso;
        double want = pred_extra > 0 && obs_extra > 0 ? m->f * 1.2 * obs_extra / pred_extra : 0;
        m->f = fmin(F_MAX, fmax(m->f * (over ? 2.0 : 1.5), want));
        m->drift++;
        m->ok_streak = 0;
        mosaic__dlog(MOSAIC__L_WARN, "policy %s: HP request took %.3f ms, predicted %.3f ms "
                     "(SLO %.3f ms): predictions drifted, overlap factor %.2f -> %.2f",
                     m->orion ? "orion" : "mosaic", lat / 1e6, pred / 1e6,
                     m->slo * t->t_iso / 1e6, before, m->f);
    } else if (++m->ok_streak >= DECAY_AFTER && m->f > 1) {
        m->f = fmax(1.0, m->f / 1.25);
        m->ok_streak = 0;
        mosaic__dlog(MOSAIC__L_INFO, "policy mosaic: %d requests within prediction, overlap "
                     "factor now %.2f", DECAY_AFTER, m->f);
    }
}

static void advance_all(struct model *m, uint64_t now)
{
    for (int i = 0; i < MAX_HP; i++)
        if (m->hp[i].used)
            advance(m, &m->hp[i], now);
}

static void refresh_predictions(struct model *m, uint64_t now)
{
    for (int i = 0; i < MAX_HP; i++) {
        struct hpc *h = &m->hp[i];
        if (h->used && h->open && type_ready(h->type)) {
            double done = h->done;
            h->pred_finish = simulate(m, h->type, (double)now, &done, INFINITY, NULL, 0);
        }
    }
}

static void model_observe(void *state, const struct mosaic__policy_event *e)
{
    struct model *m = state;
    uint64_t now = mosaic__now_ns();
    struct hpc *h;

    m->now = (double)now;
    switch (e->type) {
    case MOSAIC__PEV_HP_BEGIN:
        h = hp_get(m, e->client_id, 1);
        if (!h)
            return;
        if (h->last_end && e->ts_ns > h->last_end) {
            uint64_t gap = e->ts_ns - h->last_end;
            h->min_gap = h->ngaps++ == 0 || gap < h->min_gap ? gap : h->min_gap;
        }
        h->open = 1;
        h->t0 = h->last_t = h->last_begin = e->ts_ns;
        h->done = 0;
        h->nl = 0;
        h->overlapped = m->nrun > 0;
        mosaic__learn_hp_begin(m->learn);
        h->pred_finish = NAN;
        if (type_ready(h->type)) {
            double done = 0;
            h->pred_finish = simulate(m, h->type, (double)e->ts_ns, &done, INFINITY, NULL, 0);
        }
        break;
    case MOSAIC__PEV_HP_LAUNCH:
        h = hp_get(m, e->client_id, 0);
        if (!h || !h->open || h->nl >= MAX_SEQ)
            return;
        h->launched[h->nl++] = e->id;
        if (h->nl == 1) {
            struct rtype *t = type_get(m, e->id);
            if (t != h->type) {
                h->type = t;
                h->done = 0;
                h->last_t = h->t0;
                if (type_ready(t)) {
                    double done = 0;
                    h->pred_finish = simulate(m, t, (double)h->t0, &done, INFINITY, NULL, 0);
                }
            }
        }
        break;
    case MOSAIC__PEV_HP_END:
        h = hp_get(m, e->client_id, 0);
        if (!h || !h->open)
            return;
        advance(m, h, now);
        end_request(m, h, e->ts_ns);
        break;
    case MOSAIC__PEV_BE_GRANT: {
        const struct kinfo *ki = kinfo_get(m, e->id);
        const struct rtype *t = NULL;
        int in_flight = 0;
        advance_all(m, now);
        for (int i = 0; i < MAX_HP; i++)
            if (m->hp[i].used) {
                t = m->hp[i].type;
                if (m->hp[i].open)
                    m->hp[i].overlapped = in_flight = 1;
            }
        if (!ki || (!m->orion && !ki->pk)) {
            mosaic__learn_grant(m->learn, e->client_id, e->id, e->ts_ns, in_flight);
            return;
        }
        if (m->nrun == MAX_RUN)
            return;
        double wall = be_wall_ns(m, ki, t);
        m->run[m->nrun++] = (struct bek){.client = e->client_id, .ki = ki, .start = e->ts_ns,
                                         .end_pred = (double)e->ts_ns + wall, .wall = wall};
        refresh_predictions(m, now);
        break;
    }
    case MOSAIC__PEV_BE_DONE:
        advance_all(m, now);
        mosaic__learn_done(m->learn, e->client_id, e->id, e->ts_ns);
        for (int i = 0; i < m->nrun; i++) {
            if (m->run[i].client == e->client_id && m->run[i].ki->id == e->id) {
                memmove(&m->run[i], &m->run[i + 1], sizeof(m->run[0]) * (size_t)(m->nrun - i - 1));
                m->nrun--;
                break;
            }
        }
        break;
    case MOSAIC__PEV_CLIENT_GONE:
        advance_all(m, now);
        mosaic__learn_client_gone(m->learn, e->client_id);
        for (int i = 0; i < m->nrun; i++)
            if (m->run[i].client == e->client_id) {
                m->run[i] = m->run[--m->nrun];
                i--;
            }
        h = hp_get(m, e->client_id, 0);
        if (h)
            h->used = 0;
        break;
    default:
        break;
    }
}

/* ---- decisions ------------------------------------------------------------- */

/* Whether an HP client counts as active: a request open, or one begun
 * within the last HP_IDLE_NS. */
static int hp_active(const struct hpc *h, uint64_t now)
{
    return h->used && (h->open || (h->last_begin && now - h->last_begin < HP_IDLE_NS));
}

/* Whether an active HP client's request type has fewer isolated requests
 * than T_iso needs: a BE kernel without a prediction running between its
 * requests would overlap the next one and keep it from being a sample. */
static int iso_pending(const struct model *m, uint64_t now)
{
    for (int i = 0; i < MAX_HP; i++)
        if (hp_active(&m->hp[i], now) && m->hp[i].type &&
            m->hp[i].type->nsamples < MIN_ISO_SAMPLES)
            return 1;
    return 0;
}

static int mosaic_check(struct model *m, struct hpc *h, const struct kinfo *b, uint64_t now)
{
    const struct rtype *t = h->type;
    double cand_end, start, done = 0, fin;

    if (!type_ready(t))
        return R_LEARNING;
    cand_end = (double)now + be_wall_ns(m, b, t);
    if (h->open) {
        advance(m, h, now);
        done = h->done;
        start = (double)now;
        fin = simulate(m, t, start, &done, INFINITY, b, cand_end) +
              mosaic__learn_remaining_ns(m->learn, now);
        if (!isfinite(fin))
            return R_UNKNOWN;
        return fin - (double)h->t0 <= m->slo * t->t_iso ? R_FITS : R_OVER;
    }
    /* Between requests: the next one is expected one shortest gap after
     * the last end (or now, before a gap was seen or once it is due). */
    start = (double)now;
    if (h->ngaps && (double)(h->last_end + h->min_gap) > start)
        start = (double)(h->last_end + h->min_gap);
    fin = simulate(m, t, start, &done, INFINITY, b, cand_end) +
          mosaic__learn_remaining_ns(m->learn, now);
    if (!isfinite(fin))
        return R_UNKNOWN;
    return fin - start <= m->slo * t->t_iso ? R_FITS : R_OVER;
}

/*
 * A learned BE kernel (a duration, no counters: no prediction) beside the
 * open requests, under the worst case of processor sharing: every cycle it
 * runs is taken from HP, so a request's predicted end moves by the whole
 * remaining work of the learned kernels running and the candidate's whole
 * duration. Safe without a prediction; it lets short kernels run beside HP.
 */
static int learned_check(struct model *m, double dur, uint64_t now)
{
    int open = 0;

    for (int i = 0; i < MAX_HP; i++) {
        struct hpc *h = &m->hp[i];
        double done, fin;
        if (!h->used || !h->open)
            continue;
        if (!type_ready(h->type))
            return R_LEARNING;
        advance(m, h, now);
        done = h->done;
        fin = simulate(m, h->type, (double)now, &done, INFINITY, NULL, 0);
        if (!isfinite(fin))
            return R_UNKNOWN;
        fin += mosaic__learn_remaining_ns(m->learn, now) + dur;
        if (fin - (double)h->t0 > m->slo * h->type->t_iso)
            return R_OVER;
        open++;
    }
    /* A request the daemon sees in flight that this model does not follow
     * (more HP clients than it holds) cannot be bounded. */
    return open ? R_LEARNED : R_UNKNOWN;
}

static int orion_check(struct model *m, struct hpc *h, const struct kinfo *b, uint64_t now)
{
    const struct rtype *t = h->type;
    double inflight = 0, pos, edge = 0;
    const struct kinfo *cur = NULL;

    if (!h->open)
        return R_FITS; /* Orion admits BE freely while HP is idle */
    if (!type_ready(t))
        return R_LEARNING;
    /* The HP kernel running now, by the elapsed time over the isolated
     * sequence (Orion knows it in-process; here only the time is known). */
    pos = ((double)now - (double)h->t0) / type_scale(t);
    for (int i = 0; i < t->n && !cur; i++) {
        edge += t->ki[i]->iso_ns;
        if (pos < edge || i == t->n - 1)
            cur = t->ki[i];
    }
    for (int i = 0; i < m->nrun; i++)
        inflight += be_end(m, &m->run[i]) - (double)now;
    inflight += be_wall_ns(m, b, t);
    if (cur->sm_demand + b->sm_demand > 1.0 || cur->mem_bound == b->mem_bound ||
        inflight > ORION_DUR_SHARE * t->t_iso)
        return R_ORION_MISMATCH;
    return R_FITS;
}

static int model_decide(void *state, const struct mosaic__sched_view *v,
                        const struct mosaic__be_want *w)
{
    struct model *m = state;
    const struct kinfo *b = kinfo_get(m, w->kernel_id);
    uint64_t now = v->now_ns ? v->now_ns : mosaic__now_ns();
    int reason = R_NO_HP;

    m->now = (double)now;
    if (!b || (!m->orion && !b->pk)) {
        /* No profile (or no prediction for it): while no HP request is in
         * flight, as hold-be does, or beside one by the worst-case bound
         * once its duration is learned from those runs (policy_learn.c). */
        double dur = m->orion ? 0 : mosaic__learn_duration(m->learn, w->kernel_id);
        reason = !v->hp_requests_in_flight ? (iso_pending(m, now) ? R_LEARNING : R_NO_HP)
                 : dur > 0                 ? learned_check(m, dur, now)
                                           : R_UNKNOWN;
    } else {
        for (int i = 0; i < MAX_HP && reason <= R_FITS; i++) {
            struct hpc *h = &m->hp[i];
            if (!hp_active(h, now))
                continue;
            reason = m->orion ? orion_check(m, h, b, now) : mosaic_check(m, h, b, now);
        }
    }
    m->decisions[reason]++;
    return reason <= R_FITS ? MOSAIC__ADMIT : MOSAIC__HOLD;
}

static size_t model_metrics(void *state, char *buf, size_t cap)
{
    struct model *m = state;
    size_t n = 0;
    int r;

#define APPEND(...)                                                                        \
    do {                                                                                   \
        r = snprintf(buf + n, cap - n, __VA_ARGS__);                                       \
        if (r < 0 || (size_t)r >= cap - n)                                                 \
            return n;                                                                      \
        n += (size_t)r;                                                                    \
    } while (0)
    APPEND("# HELP mosaic_policy_decisions_total Admission decisions of the policy, by "
           "reason.\n# TYPE mosaic_policy_decisions_total counter\n");
    for (int i = 0; i < R_COUNT; i++)
        APPEND("mosaic_policy_decisions_total{reason=\"%s\"} %llu\n", reason_names[i],
               (unsigned long long)m->decisions[i]);
    APPEND("# HELP mosaic_policy_overlap_factor Drift factor on predicted HP slowdowns (1: "
           "trusting the predictor; larger: more conservative after drift).\n"
           "# TYPE mosaic_policy_overlap_factor gauge\nmosaic_policy_overlap_factor %.3f\n",
           m->f);
    APPEND("# HELP mosaic_policy_drift_total HP requests that took longer than predicted "
           "by more than 10%% or broke the SLO.\n# TYPE mosaic_policy_drift_total counter\n"
           "mosaic_policy_drift_total %llu\n",
           (unsigned long long)m->drift);
    APPEND("# HELP mosaic_hp_overlapped_requests_total HP requests that BE work overlapped.\n"
           "# TYPE mosaic_hp_overlapped_requests_total counter\n"
           "mosaic_hp_overlapped_requests_total %llu\n"
           "# HELP mosaic_hp_overlapped_over_slo_total Of those, over the SLO.\n"
           "# TYPE mosaic_hp_overlapped_over_slo_total counter\n"
           "mosaic_hp_overlapped_over_slo_total %llu\n",
           (unsigned long long)m->overlapped_requests, (unsigned long long)m->over_slo);
    APPEND("# HELP mosaic_hp_predicted_seconds_total Predicted latency of the overlapped HP "
           "requests.\n# TYPE mosaic_hp_predicted_seconds_total counter\n"
           "mosaic_hp_predicted_seconds_total %.9f\n"
           "# HELP mosaic_hp_observed_seconds_total Observed latency of the same requests.\n"
           "# TYPE mosaic_hp_observed_seconds_total counter\n"
           "mosaic_hp_observed_seconds_total %.9f\n",
           m->pred_sum_s, m->obs_sum_s);
#undef APPEND
    n += mosaic__learn_metrics(m->learn, buf + n, cap - n);
    return n;
}

static void model_close(void *state)
{
    struct model *m = state;

    if (!m)
        return;
    for (size_t i = 0; m->kinfo && i <= m->kmask; i++)
        mosaic_pkernel_free(m->kinfo[i].pk);
    free(m->kinfo);
    free(m->pairs);
    mosaic__learn_close(m->learn);
    if (m->pred)
        mosaic_predictor_close(m->pred);
    mosaic__pstore_free(m->store);
    free(m);
}

int mosaic__policy_open(const struct mosaic__sched_config *cfg, struct mosaic__policy *out,
                        char *err, size_t errlen)
{
    struct model *m;
    unsigned loaded = 0, skipped = 0;
    int rc;

    if (cfg->policy != MOSAIC__POLICY_ORION && cfg->policy != MOSAIC__POLICY_MOSAIC) {
        rc = mosaic__policy_get(cfg->policy, out);
        if (rc != 0)
            snprintf(err, errlen, "policy: unknown policy number %d", cfg->policy);
        return rc;
    }
    if (cfg->policy == MOSAIC__POLICY_MOSAIC && !cfg->model_dir[0]) {
        snprintf(err, errlen, "policy mosaic needs the predictor's models: set model-dir "
                 "(e.g. predictor/models/h200)");
        return MOSAIC_ECONFIG;
    }
    if (!cfg->profile_dir[0])
        mosaic__dlog(MOSAIC__L_WARN, "policy %s: profile-dir is empty, so no kernel is known "
                     "and BE runs only while no HP request is in flight (set profile-dir)",
                     mosaic__policy_name(cfg->policy));
    m = calloc(1, sizeof(*m));
    if (!m)
        return MOSAIC_ENOMEM;
    m->orion = cfg->policy == MOSAIC__POLICY_ORION;
    m->slo = cfg->slo;
    m->f = m->orion ? 1 : F_START;
    m->scale = 1;
    m->kmask = 4095;
    m->pmask = 16383;
    m->kinfo = calloc(m->kmask + 1, sizeof(*m->kinfo));
    m->pairs = calloc(m->pmask + 1, sizeof(*m->pairs));
    if (!m->kinfo || !m->pairs || mosaic__learn_open(&m->learn) != 0) {
        model_close(m);
        return MOSAIC_ENOMEM;
    }
    if (cfg->profile_dir[0]) {
        rc = mosaic__pstore_load(cfg->profile_dir, &m->store, &loaded, &skipped, err, errlen);
        if (rc != 0) {
            model_close(m);
            return rc == MOSAIC_EIO ? MOSAIC_ECONFIG : rc;
        }
        mosaic__dlog(MOSAIC__L_INFO, "profile-dir %s: %u files loaded, %u skipped, %zu kernels",
                     cfg->profile_dir, loaded, skipped, mosaic__pstore_count(m->store));
    }
    if (!m->orion) {
        char perr[512];
        rc = mosaic_predictor_open(cfg->model_dir, NULL, &m->pred, perr, sizeof(perr));
        if (rc != 0) {
            snprintf(err, errlen, "model-dir %s: %s (set model-dir to a directory of "
                     "inter.json, shared.json and analytic.json)", cfg->model_dir, perr);
            model_close(m);
            return MOSAIC_ECONFIG;
        }
    }
    *out = (struct mosaic__policy){.name = mosaic__policy_name(cfg->policy),
                                   .decide = model_decide, .observe = model_observe,
                                   .metrics = model_metrics, .close = model_close, .state = m};
    return 0;
}

void mosaic__policy_close(struct mosaic__policy *p)
{
    if (p->close)
        p->close(p->state);
    p->state = NULL;
}
