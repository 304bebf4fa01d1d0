/*
 * The shared-mode timeline: two kernels dispatched one after the other onto
 * all SMs, followed event by event until both end (docs/predictor.md, "How
 * a prediction is made"). Where their blocks go and what they do to each
 * other on an SM is placement's (placement.h); this file keeps the clock.
 *
 * The dispatch and warp-scheduling behaviour it assumes (a dispatch gap,
 * the older kernel keeping issue-busy warps, the residency a kernel needs
 * for its speed) was measured on the H200, driver 580.159.04, CUDA 13.0:
 * profiler/data/h200/corun.jsonl (the co-runs the gap and weights are
 * fitted on) and residency.jsonl (`mosaic-zoo residency`), described in
 * docs/dataset.md and docs/predictor.md.
 */
#include <math.h>

#include "placement.h"
#include "timeline.h"

/* Breakpoints of the first kernel's release of SMs after its last wave. */
#define TL_RAMP 8

/* What one run of the timeline predicts: the first and second kernel's
 * ends and the second's start (us from the common start), the time both
 * ran and the co-resident fraction of it. */
struct tl_out {
    double end_f, end_s, start_s, overlap, co;
};

/* Release spread of k: the fraction of its run over which its SMs finish
 * (sm__cycles_active min/avg/max over the SMs it used). */
static double release_spread(const struct mosaic_pkernel *k, int N)
{
    double used = (double)k->grid < N ? (double)k->grid : N, avg, mn, sp;
    if (!(k->cyc_max > 0)) return 0;
    avg = k->cyc_avg * N / used;
    mn = used < N ? 2 * avg - k->cyc_max : k->cyc_min;
    sp = (k->cyc_max - mn) / k->cyc_max;
    return sp < 0 ? 0 : sp > 0.9 ? 0.9 : sp;
}

/* The fraction of its isolated residency (blocks per SM) a multi-wave
 * kernel needs to keep its isolated speed: below it, it slows in proportion
 * (Little's law: throughput follows the warps in flight until a bottleneck
 * saturates). Until the second session this was 1 - s for a kernel moving s
 * of the DRAM bandwidth; the residency probes replaced it (below). */
static double resid_need(const struct mosaic_pkernel *k)
{
    /* A warp's cycles per instruction at full residency (resident warps per
     * scheduler over issue rate) are mostly waiting; with fewer warps the
     * memory system queues less and each warp goes faster. Measured
     * (`mosaic-zoo residency`, 12 kernels): the speed kept at residency a is
     * min(1, a K) with K ~ 1.5 (CPI / 20)^0.66 (copy 6.3, silu 2.7, reduce
     * 1.5); an issue-bound kernel keeps its speed down to 1 / eligible. */
    double cpi = k->occ * 16 / (k->issue > 1e-3 ? k->issue : 1e-3), kk, m;
    kk = 1.5 * pow(cpi / 20, 0.66);
    if (k->warps_elig > kk) kk = k->warps_elig;
    m = 1 / kk;
    return m < 0.1 ? 0.1 : m > 1 ? 1 : m;
}

/* What the timeline needs of the two kernels that does not depend on the
 * components: computed by its first run, reused by the others. */
struct tl_pre {
    int done;
    int room_first_wave, room_last_wave; /* second's blocks beside first's */
    double second_resid_need;            /* resid_need(second) */
    double first_release_spread;         /* release_spread(first) */
    struct mosaic__landing land;         /* where the second's batches land */
};

/* The inputs of one timeline run: the kernel dispatched first and the one
 * dispatched second, their isolated durations and inter-SM factors (us;
 * factors at full overlap), and the components switched on. */
struct tl_pair {
    const struct mosaic_gpu_desc *g;
    const struct mosaic__coef *c;
    const struct mosaic_pkernel *first, *second;
    double iso_first, iso_second;
    double inter_first, inter_second;
    unsigned comp;
    /* when the second kernel's blocks may start: after the dispatch gap
     * behind the first, or at its own enqueue when that is later (the
     * delay, 0 within the jitter) */
    double release_us;
};

/* One timeline run: the kernels' shapes (fixed) and where the run stands.
 * Progress is the fraction of a kernel's isolated work done; "use" is the
 * fraction of the SMs a kernel's blocks hold. */
struct tl_run {
    const struct tl_pair *in;
    struct tl_out *out;
    int n_sms;
    /* the first kernel */
    double first_waves;          /* its waves on all SMs */
    double first_n_waves;        /* ceil of that, at least 1 */
    double first_last_wave_frac; /* how full its last wave is */
    double first_one_wave_use;   /* use of a grid of less than one wave */
    double first_last_wave_use;  /* use during its last wave */
    double first_last_wave_at;   /* progress when its last wave starts */
    int first_per_sm_first_wave; /* its blocks per SM in its first wave */
    int first_per_sm_last_wave;  /* and in its last */
    int room_first_wave, room_last_wave; /* second's blocks beside them */
    /* the first kernel's release of SMs: progress breakpoints, and its use
     * before each */
    int n_breaks;
    double break_at[TL_RAMP + 4], break_use[TL_RAMP + 4];
    /* the second kernel */
    double second_capacity;      /* its blocks on all SMs at full occupancy */
    double second_need;          /* its blocks in flight at isolated speed */
    int second_one_wave;         /* its grid fits in one wave: batches */
    double second_resid_need;    /* residency it needs for its speed */
    double second_last_wave_at;  /* progress when its last wave starts */
    /* intra-SM: which kernel keeps the issue slots, the other's slowdown */
    int second_dominates;
    double starve_second_first_wave, starve_second_last_wave, starve_first;
    /* where the run stands */
    int iter, next_break;
    double t, first_progress, second_progress;
    double second_blocks_left, taken_idle, taken_beside;
    double first_end, second_end;              /* -1: still running */
    double first_dispatched, second_dispatched; /* last block dispatched; -1: not yet */
    double coresident_time;
    struct mosaic__batches batches;
    int first_live; /* the batches before it have ended: the loops skip them */
    struct mosaic__batch_ctx place;
};

/* One step of a run: the state between two events. */
struct tl_step {
    int first_running, second_released; /* the second is past the dispatch gap */
    double first_use;        /* the first kernel's use of the SMs now */
    double room;             /* second's blocks beside the first's per SM now */
    double starve_second;    /* the second's intra-SM factor beside them */
    double slots;            /* second's block slots on all SMs now */
    double inter_second;     /* the second's inter-SM factor now */
    double second_active;    /* the second's activity, 0..1 of isolated */
    double first_coresident; /* fraction of the first's SMs shared now */
    double starve_first_batches; /* the first's intra-SM factor from the batches */
    double first_slowdown, first_rate;
    double second_slowdown;  /* a multi-wave second kernel's, while active */
    double dt;
};

/* The first kernel's waves, its blocks per SM in its first and last wave
 * and the fraction of the SMs it holds; the second kernel's capacity. */
static void tl_shapes(struct tl_run *r)
{
    const struct mosaic_pkernel *F = r->in->first, *S = r->in->second;
    const int N = r->n_sms;
    r->first_waves = mosaic__place_waves(F, N);
    r->first_n_waves = ceil(r->first_waves);
    r->second_capacity = (double)S->bps * N;
    r->second_need = (double)S->grid < r->second_capacity ? (double)S->grid : r->second_capacity;
    r->second_one_wave = (double)S->grid <= r->second_capacity;
    if (r->first_n_waves < 1) r->first_n_waves = 1;
    r->first_last_wave_frac = r->first_waves - (r->first_n_waves - 1);
    if (r->first_last_wave_frac <= 0) r->first_last_wave_frac = 1;
    r->first_per_sm_first_wave = (int)ceil((double)F->grid / N);
    if (r->first_per_sm_first_wave > F->bps) r->first_per_sm_first_wave = F->bps;
    r->first_one_wave_use = (double)F->grid / N;
    if (r->first_one_wave_use > 1) r->first_one_wave_use = 1;
    r->first_last_wave_use = r->first_n_waves > 1 ? r->first_last_wave_frac * F->bps
                                                  : r->first_one_wave_use;
    if (r->first_last_wave_use > 1) r->first_last_wave_use = 1;
    r->first_per_sm_last_wave =
        (int)ceil(r->first_last_wave_frac * F->bps / r->first_last_wave_use);
    if (r->first_per_sm_last_wave < 1) r->first_per_sm_last_wave = 1;
    if (r->first_per_sm_last_wave > F->bps) r->first_per_sm_last_wave = F->bps;
    r->first_last_wave_at = (r->first_n_waves - 1) / r->first_n_waves;
    {
        double wS = mosaic__place_waves(S, N);
        r->second_last_wave_at = wS > 1 ? 1 - 1 / ceil(wS) : 0;
    }
}

/* What does not depend on the components, once per query: the room beside
 * the first kernel's blocks, the second's residency need, the first's
 * release spread and how the second's blocks land. */
static void tl_fill_pre(const struct tl_run *r, struct tl_pre *pre)
{
    const struct mosaic_gpu_desc *g = r->in->g;
    const struct mosaic_pkernel *F = r->in->first, *S = r->in->second;
    if (pre->done) return;
    pre->room_first_wave = mosaic__place_room(g, F, r->first_per_sm_first_wave, S);
    pre->room_last_wave = mosaic__place_room(g, F, r->first_per_sm_last_wave, S);
    pre->second_resid_need = resid_need(S);
    pre->first_release_spread = release_spread(F, r->n_sms);
    pre->land.chunk = mosaic__place_room(g, F, F->bps - 1, S) - mosaic__place_room(g, F, F->bps, S);
    if (pre->land.chunk < 1)
        pre->land.chunk = mosaic__place_room(g, F, 1, S) > 0 ? 1 : S->bps;
    pre->done = 1;
}

/* Which kernel keeps the issue slots on an SM holding both, and the other's
 * intra-SM slowdown there. */
static void tl_intra_factors(struct tl_run *r)
{
    const struct mosaic__coef *c = r->in->c;
    const struct mosaic_pkernel *F = r->in->first, *S = r->in->second;
    const int N = r->n_sms;
    r->starve_second_first_wave = r->starve_second_last_wave = r->starve_first = 1;
    /* the readier kernel keeps the issue slots, but an older one that keeps
     * them busy (issue >= 0.8) is not displaced: greedy-then-oldest picks
     * its ready warps first (the residency probes' issue-bound blocker
     * starved every memory-bound kernel beside it) */
    r->second_dominates = mosaic__place_busiest(S) / mosaic__place_density(S, N) >
                              mosaic__place_busiest(F) / mosaic__place_density(F, N) &&
                          F->issue < 0.8;
    if (r->in->comp & MOSAIC_PC_INTRA) {
        /* Issue and pipe contention on an SM holding both (eq. 3-4): the
         * kernel whose warps are readier (higher per-block demand) keeps
         * its share, the other gets what is left (greedy-then-oldest warp
         * scheduling keeps issuing from a warp while it is ready). Per-block
         * demand: the profiled busiest-unit utilisation over the
         * kernel's isolated density. */
        double ff1 = r->first_per_sm_first_wave / mosaic__place_density(F, N);
        double ffl = r->first_per_sm_last_wave / mosaic__place_density(F, N);
        double fs1 = r->room_first_wave / mosaic__place_density(S, N);
        double fsl = r->room_last_wave / mosaic__place_density(S, N);
        if (r->second_dominates) {
            r->starve_first = 1 + c->intra_w * (mosaic__place_starve_on(F, ff1, S, fs1) - 1);
        } else {
            r->starve_second_first_wave =
                1 + c->intra_w * (mosaic__place_starve_on(S, fs1, F, ff1) - 1);
            r->starve_second_last_wave =
                1 + c->intra_w * (mosaic__place_starve_on(S, fsl, F, ffl) - 1);
        }
    }
}

/* The first kernel's SMs: all held until its last wave starts, then its
 * last wave's use until its release spread begins, then a ramp down over
 * TL_RAMP breakpoints as its SMs finish. */
static void tl_release_breaks(struct tl_run *r, double spread)
{
    double pr = 1 - spread, ustart;
    r->n_breaks = 0;
    if (r->first_n_waves > 1 && r->first_last_wave_at < pr) {
        r->break_at[r->n_breaks] = r->first_last_wave_at;
        r->break_use[r->n_breaks++] = 1;
        ustart = r->first_last_wave_use;
    } else {
        ustart = r->first_n_waves > 1 ? 1 : r->first_one_wave_use;
    }
    r->break_at[r->n_breaks] = pr;
    r->break_use[r->n_breaks++] = ustart;
    for (int i = 1; i <= TL_RAMP; i++) {
        r->break_at[r->n_breaks] = pr + (1 - pr) * i / TL_RAMP;
        r->break_use[r->n_breaks++] = ustart * (1 - (double)i / (TL_RAMP + 1));
    }
}

/* A run of the timeline set up: the shapes, the intra-SM factors, the
 * release breakpoints, and both kernels at the common start. */
static void tl_setup(struct tl_run *r, const struct tl_pair *in, struct tl_pre *pre,
                     struct tl_out *o)
{
    r->in = in;
    r->out = o;
    r->n_sms = in->g->sm_count;
    tl_shapes(r);
    tl_fill_pre(r, pre);
    r->room_first_wave = pre->room_first_wave;
    r->room_last_wave = pre->room_last_wave;
    r->second_resid_need = pre->second_resid_need;
    tl_intra_factors(r);
    tl_release_breaks(r, pre->first_release_spread);
    r->place = (struct mosaic__batch_ctx){
        .coef = in->c, .first = in->first, .second = in->second, .land = &pre->land,
        .n_sms = r->n_sms, .second_dominates = r->second_dominates,
        .intra = (in->comp & MOSAIC_PC_INTRA) != 0,
        .pack_weight = (in->comp & MOSAIC_PC_PACKING) ? in->c->pack : 0};
    r->batches.n = 0;
    r->first_live = 0;
    r->second_blocks_left = (double)in->second->grid;
    r->taken_idle = r->taken_beside = 0;
    o->start_s = -1;
    o->overlap = 0;
    o->co = 0;
    r->next_break = 0;
    r->iter = 0;
    r->t = r->first_progress = r->second_progress = 0;
    r->first_end = r->second_end = -1;
    r->coresident_time = 0;
    r->first_dispatched = r->first_n_waves > 1 ? -1 : 0;
    r->second_dispatched = -1;
}

/* The first kernel is in its last wave (or has only one). */
static int tl_first_in_last_wave(const struct tl_run *r)
{
    return r->first_n_waves <= 1 || r->first_progress >= r->first_last_wave_at;
}

/* What holds between now and the next event: the first kernel's use of the
 * SMs, the room beside it and the second's slots there. */
static void tl_step_begin(struct tl_run *r, struct tl_step *st)
{
    const int N = r->n_sms;
    *st = (struct tl_step){.dt = 1e300, .first_slowdown = 1, .inter_second = 1,
                           .starve_first_batches = 1};
    st->second_released = r->t >= r->in->release_us - 1e-12;
    st->first_running = r->first_end < 0;
    while (r->next_break < r->n_breaks &&
           r->first_progress >= r->break_at[r->next_break] - 1e-12)
        r->next_break++;
    st->first_use = !st->first_running
                        ? 0
                        : (r->next_break < r->n_breaks ? r->break_use[r->next_break] : 0);
    st->room = (st->first_running && tl_first_in_last_wave(r)) ? r->room_last_wave
                                                                 : r->room_first_wave;
    st->starve_second = st->room == r->room_last_wave ? r->starve_second_last_wave
                                                       : r->starve_second_first_wave;
    st->slots = (1 - st->first_use) * N * r->in->second->bps + st->first_use * N * st->room;
    if (st->first_running && (r->in->comp & MOSAIC_PC_INTER))
        st->inter_second = 1 + (r->in->inter_second - 1) * st->first_use;
}

/* A single-wave second kernel: dispatches a batch on the slots that have
 * come free (placement.c says where it lands), then sums the batches still
 * running into its activity and their effect on the first kernel. */
static void tl_dispatch_batches(struct tl_run *r, struct tl_step *st)
{
    struct mosaic__batches *bt = &r->batches;
    const int N = r->n_sms;
    double running = 0;
    for (int i = r->first_live; i < bt->n; i++)
        if (bt->progress[i] < 1) running += bt->blocks[i];
    if (st->second_released && r->second_blocks_left > 0.5 && st->slots - running >= 1 &&
        bt->n < MOSAIC__MAXB - 1) {
        /* a batch: the newly available SMs */
        double b = st->slots - running < r->second_blocks_left ? floor(st->slots - running)
                                                               : r->second_blocks_left;
        double idle = (1 - st->first_use) * N - r->taken_idle, besd = 0;
        double nfh = tl_first_in_last_wave(r) ? r->first_per_sm_last_wave
                                              : r->first_per_sm_first_wave;
        if (idle < 0) idle = 0;
        if (st->first_running && st->room > 0) besd = st->first_use * N - r->taken_beside;
        if (besd < 0) besd = 0;
        b = mosaic__place_batch(bt, &r->place, b, idle, besd, st->room, nfh,
                                st->first_running && (r->first_n_waves > 1 ||
                                                      st->first_use < r->first_one_wave_use - 1e-9),
                                &r->taken_idle, &r->taken_beside);
        r->second_blocks_left -= b;
        if (r->second_blocks_left < 0.5 && r->second_dispatched < 0) r->second_dispatched = r->t;
        if (r->out->start_s < 0) r->out->start_s = r->t;
    }
    for (int i = r->first_live; i < bt->n; i++)
        if (bt->progress[i] < 1) {
            st->second_active += bt->blocks[i];
            if (st->first_running && bt->beside_frac[i] > 0) {
                double fx = 1 + (bt->starve_first[i] - 1) * bt->beside_frac[i];
                if (bt->beside_frac[i] > st->first_coresident)
                    st->first_coresident = bt->beside_frac[i];
                st->starve_first_batches = st->starve_first_batches > fx ? st->starve_first_batches
                                                                         : fx;
            }
        }
    st->second_active = r->second_need > 0 ? st->second_active / r->second_need : 0;
    if (st->second_active > 1) st->second_active = 1;
}

/* A multi-wave second kernel: its activity is the slots it has over the
 * blocks it needs in flight for its isolated speed. */
static void tl_multiwave_activity(struct tl_run *r, struct tl_step *st)
{
    if (!(st->second_released && r->second_end < 0)) return;
    st->second_active = r->second_need > 0 ? st->slots / r->second_need : 1;
    /* the slack only once the first has no blocks left to dispatch: before
     * that its own blocks take every slot it frees */
    if (!st->first_running || tl_first_in_last_wave(r)) st->second_active /= r->second_resid_need;
    if (st->second_active > 1) st->second_active = 1;
    if (st->first_running && st->room > 0 && st->first_use > 0) st->first_coresident = 1;
    if (st->second_active > 0 && r->out->start_s < 0) r->out->start_s = r->t;
}

/* The first kernel's slowdown now: inter-SM by the second's activity,
 * intra-SM on the SMs they share. */
static void tl_first_rate(const struct tl_run *r, struct tl_step *st)
{
    unsigned comp = r->in->comp;
    if (st->first_running && st->second_active > 0) {
        if (comp & MOSAIC_PC_INTER)
            st->first_slowdown *= 1 + (r->in->inter_first - 1) * st->second_active;
        if (comp & MOSAIC_PC_INTRA) {
            if (r->second_one_wave) {
                st->first_slowdown *= st->starve_first_batches;
            } else {
                st->first_slowdown *= 1 + (r->starve_first - 1) * st->first_coresident;
            }
        }
    }
    st->first_rate = st->first_running ? 1 / st->first_slowdown : 0;
}

/* How much slower than isolated batch i of a single-wave second kernel
 * runs now. */
static inline double tl_batch_slowdown(const struct tl_run *r, const struct tl_step *st, int i)
{
    const struct mosaic__batches *bt = &r->batches;
    double f = bt->packing[i] * st->inter_second;
    if (st->first_running && (r->in->comp & MOSAIC_PC_INTRA))
        f *= 1 + (bt->starve_second[i] - 1) * bt->beside_frac[i];
    return f;
}

/* How much slower than isolated a multi-wave second kernel runs now. */
static double tl_multiwave_slowdown(const struct tl_run *r, const struct tl_step *st)
{
    double coS = st->slots > 0 ? st->first_use * r->n_sms * st->room / st->slots : 0;
    double f = st->inter_second;
    if (st->first_running && (r->in->comp & MOSAIC_PC_INTRA))
        f *= 1 + (st->starve_second - 1) * coS;
    return f;
}

/* The time to the next event: the dispatch gap ending, the first kernel
 * reaching its next breakpoint, a batch or the second kernel ending. */
static void tl_next_event(const struct tl_run *r, struct tl_step *st)
{
    double TF = r->in->iso_first, TS = r->in->iso_second;
    if (!st->second_released) st->dt = r->in->release_us - r->t;
    if (st->first_running && r->next_break < r->n_breaks) {
        double d = (r->break_at[r->next_break] - r->first_progress) * TF / st->first_rate;
        if (d < st->dt) st->dt = d;
    }
    if (st->first_running && r->next_break >= r->n_breaks) st->dt = 0;
    if (r->second_one_wave) {
        for (int i = r->first_live; i < r->batches.n; i++)
            if (r->batches.progress[i] < 1) {
                double d = (1 - r->batches.progress[i]) * TS * tl_batch_slowdown(r, st, i);
                if (d < st->dt) st->dt = d;
            }
    } else if (st->second_active > 0 && r->second_end < 0) {
        st->second_slowdown = tl_multiwave_slowdown(r, st);
        double d = (1 - r->second_progress) * TS * st->second_slowdown / st->second_active;
        if (d < st->dt) st->dt = d;
    }
}

/* Moves both kernels on by st->dt and notes what ended or finished
 * dispatching. */
static void tl_advance(struct tl_run *r, const struct tl_step *st)
{
    double TF = r->in->iso_first, TS = r->in->iso_second, dt = st->dt;
    if (r->second_one_wave) {
        struct mosaic__batches *bt = &r->batches;
        int alldone = r->second_blocks_left < 0.5;
        for (int i = r->first_live; i < bt->n; i++)
            if (bt->progress[i] < 1) {
                bt->progress[i] += dt / (TS * tl_batch_slowdown(r, st, i));
                if (bt->progress[i] >= 1 - 1e-9) bt->progress[i] = 1;
                else alldone = 0;
            }
        while (r->first_live < bt->n && bt->progress[r->first_live] >= 1) r->first_live++;
        r->t += dt;
        if (alldone && bt->n > 0 && r->second_end < 0) r->second_end = r->t;
    } else {
        if (st->second_active > 0 && r->second_end < 0) {
            double p0 = r->second_progress, th = r->second_last_wave_at;
            r->second_progress += dt * st->second_active / (TS * st->second_slowdown);
            if (r->second_dispatched < 0 && r->second_progress >= th)
                r->second_dispatched = r->second_progress > p0
                                           ? r->t + dt * (th - p0) / (r->second_progress - p0)
                                           : r->t;
        }
        r->t += dt;
        if (r->second_end < 0 && r->second_progress >= 1 - 1e-9) r->second_end = r->t;
    }
    if (st->first_running) {
        double p0 = r->first_progress, th = r->first_last_wave_at;
        r->first_progress += dt * st->first_rate / TF;
        if (r->first_dispatched < 0 && r->first_progress >= th)
            r->first_dispatched = r->first_progress > p0
                                      ? r->t - dt + dt * (th - p0) / (r->first_progress - p0)
                                      : r->t;
        if (r->first_progress >= 1 - 1e-9) r->first_end = r->t;
    }
}

/* The ends, with a dependent kernel behind each, and the overlap's
 * co-resident fraction. */
static void tl_finish(struct tl_run *r)
{
    const struct tl_pair *in = r->in;
    struct tl_out *o = r->out;
    if (r->first_end < 0) r->first_end = r->t > in->iso_first ? r->t : in->iso_first;
    if (r->second_end < 0) r->second_end = r->t + in->iso_second * (1 - r->second_progress);
    /* A dependent kernel launched after the main one on the same stream
     * (a split-K reduce) is dispatched behind the other kernel's pending
     * blocks: it starts once the other has dispatched its last one. */
    if (in->first->follow_us > 0 && r->second_dispatched > r->first_end)
        r->first_end = r->second_dispatched + in->first->follow_us;
    if (in->second->follow_us > 0 && r->first_dispatched > r->second_end)
        r->second_end = r->first_dispatched + in->second->follow_us;
    o->end_f = r->first_end;
    o->end_s = r->second_end;
    o->co = o->overlap > 0 ? r->coresident_time / o->overlap : 0;
    if (o->start_s < 0) o->start_s = in->release_us;
}

/* One run of the timeline: from the common start, event by event (at most
 * 400), until both kernels have ended. */
static void timeline(const struct tl_pair *in, struct tl_pre *pre, struct tl_out *o)
{
    struct tl_run r;
    tl_setup(&r, in, pre, o);
    while ((r.first_end < 0 || r.second_end < 0) && r.iter++ < 400) {
        struct tl_step st;
        tl_step_begin(&r, &st);
        if (r.second_one_wave) tl_dispatch_batches(&r, &st);
        else tl_multiwave_activity(&r, &st);
        tl_first_rate(&r, &st);
        tl_next_event(&r, &st);
        if (st.dt > 1e299) break;
        if (st.dt < 0) st.dt = 0;
        if (st.first_running && st.second_active > 0) {
            o->overlap += st.dt;
            r.coresident_time += st.dt * st.first_coresident;
        }
        tl_advance(&r, &st);
    }
    tl_finish(&r);
}

void mosaic__timeline_shared(const struct mosaic_gpu_desc *g,
                             const struct mosaic__coef *c,
                             const struct mosaic_pkernel *a,
                             const struct mosaic_pkernel *b, int b_first,
                             double delay_us, double iso_a, double iso_b,
                             double inter_a, double inter_b, unsigned comp,
                             struct mosaic_pred_result *res)
{
    struct tl_pair in = {
        .g = g, .c = c, .first = b_first ? b : a, .second = b_first ? a : b,
        .iso_first = b_first ? iso_b : iso_a, .iso_second = b_first ? iso_a : iso_b,
        .inter_first = b_first ? inter_b : inter_a, .inter_second = b_first ? inter_a : inter_b,
        .comp = 0, .release_us = delay_us > c->gap_us ? delay_us : c->gap_us};
    struct tl_out o0, o1, o2, o3;
    struct tl_pre pre = {0};
    double d[4][2];
    int fi = b_first ? 1 : 0, si = 1 - fi;

    /* the components one by one: placement alone, + packing, + inter-SM,
     * + intra-SM (the factors of the result are the ratios) */
    timeline(&in, &pre, &o0);
    in.comp = comp & MOSAIC_PC_PACKING;
    /* Block packing acts only through the batches of a single-wave second
     * kernel (mosaic__place_batch); beside a multi-wave one, or at weight
     * 0, the packing run is the placement run, so it is not run again. */
    if (in.comp && c->pack != 0 && (double)in.second->grid <= (double)in.second->bps * g->sm_count)
        timeline(&in, &pre, &o1);
    else
        o1 = o0;
    in.comp = comp & (MOSAIC_PC_PACKING | MOSAIC_PC_INTER);
    timeline(&in, &pre, &o2);
    in.comp = comp;
    timeline(&in, &pre, &o3);
    d[0][fi] = o0.end_f; d[0][si] = o0.end_s;
    d[1][fi] = o1.end_f; d[1][si] = o1.end_s;
    d[2][fi] = o2.end_f; d[2][si] = o2.end_s;
    d[3][fi] = o3.end_f; d[3][si] = o3.end_s;
    /* the second kernel's durations count from its own enqueue */
    for (int j = 0; j < 4; j++) d[j][si] -= delay_us;
    for (int i = 0; i < 2; i++) {
        struct mosaic_pred_kernel *r = &res->k[i];
        double iso = i == 0 ? iso_a : iso_b;
        r->iso_us = iso;
        r->duration_us = d[3][i];
        r->slowdown = d[3][i] / iso;
        r->placement = d[0][i] / iso;
        r->packing = d[1][i] / d[0][i];
        r->inter_sm = d[2][i] / d[1][i];
        r->intra_sm = d[3][i] / d[2][i];
        r->waves = mosaic__place_waves(i == 0 ? a : b, g->sm_count);
        r->start_us = i == fi ? 0 : o3.start_s;
    }
    res->overlap_us = o3.overlap;
    res->coresident = o3.co;
}
