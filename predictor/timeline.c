/*
 * The shared-mode timeline: two kernels dispatched one after the other onto
 * all SMs, followed step by step until both end (docs/predictor.md).
 */
#include <math.h>

#include "placement.h"
#include "timeline.h"

#define TL_RAMP 8

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

/* What the timeline needs of F and S that does not depend on the
 * components: computed by its first run, reused by the others. */
struct tl_pre {
    int done, room1, roomL;
    double satS, sp;
    struct mosaic__landing land; /* where S's batches land (placement.h) */
};

static void timeline(const struct mosaic_gpu_desc *g, const struct mosaic__coef *c,
                     const struct mosaic_pkernel *F, const struct mosaic_pkernel *S,
                     double TF, double TS, double interF, double interS,
                     unsigned comp, struct tl_pre *pre, struct tl_out *o)
{
    const int N = g->sm_count;
    double wF = mosaic__place_waves(F, N);
    double nwF = ceil(wF);
    double lastfrac, uF0, ulast, sp, bp[TL_RAMP + 4], bu[TL_RAMP + 4];
    int nbp = 0, nF1, nFl, room1, roomL, domS;
    double capS = (double)S->bps * N;
    double needS = (double)S->grid < capS ? (double)S->grid : capS;
    int single = (double)S->grid <= capS;
    double t = 0, pF = 0, pS = 0, gap = c->gap_us, plast;
    double ixs1 = 1, ixsL = 1, ixf1 = 1, wpack = (comp & MOSAIC_PC_PACKING) ? c->pack : 0;
    int intra = (comp & MOSAIC_PC_INTRA) != 0;
    struct mosaic__batches bt;
    struct mosaic__batch_ctx x = {.c = c, .F = F, .S = S, .land = &pre->land, .N = N, .intra = intra,
                       .wpack = wpack};
    double rem = (double)S->grid, taken_idle = 0, taken_beside = 0;
    double satS; /* the residency fraction S needs for its isolated speed */

    bt.n = 0;
    if (nwF < 1) nwF = 1;
    lastfrac = wF - (nwF - 1);
    if (lastfrac <= 0) lastfrac = 1;
    nF1 = (int)ceil((double)F->grid / N);
    if (nF1 > F->bps) nF1 = F->bps;
    uF0 = (double)F->grid / N;
    if (uF0 > 1) uF0 = 1;
    ulast = nwF > 1 ? lastfrac * F->bps : uF0;
    if (ulast > 1) ulast = 1;
    nFl = (int)ceil(lastfrac * F->bps / ulast);
    if (nFl < 1) nFl = 1;
    if (nFl > F->bps) nFl = F->bps;
    if (!pre->done) {
        pre->room1 = mosaic__place_room(g, F, nF1, S);
        pre->roomL = mosaic__place_room(g, F, nFl, S);
        pre->satS = resid_need(S);
        pre->sp = release_spread(F, N);
        pre->land.chunk = mosaic__place_room(g, F, F->bps - 1, S) - mosaic__place_room(g, F, F->bps, S);
        if (pre->land.chunk < 1)
            pre->land.chunk = mosaic__place_room(g, F, 1, S) > 0 ? 1 : S->bps;
        pre->done = 1;
    }
    room1 = pre->room1;
    roomL = pre->roomL;
    satS = pre->satS;
    /* the readier kernel keeps the issue slots, but an older one that keeps
     * them busy (issue >= 0.8) is not displaced: greedy-then-oldest picks
     * its ready warps first (the residency probes' issue-bound blocker
     * starved every memory-bound kernel beside it) */
    domS = mosaic__place_busiest(S) / mosaic__place_density(S, N) > mosaic__place_busiest(F) / mosaic__place_density(F, N) && F->issue < 0.8;
    x.domS = domS;
    if (comp & MOSAIC_PC_INTRA) {
        /* Issue and pipe contention on an SM holding both (eq. 3-4): the
         * kernel whose warps are readier (higher per-block demand) keeps
         * its share, the other gets what is left (greedy-then-oldest warp
         * scheduling keeps issuing from a warp while it is ready). Per-block
         * demand: the profiled busiest-unit utilisation over the
         * kernel's isolated density. */
        double ff1 = nF1 / mosaic__place_density(F, N), ffl = nFl / mosaic__place_density(F, N);
        double fs1 = room1 / mosaic__place_density(S, N), fsl = roomL / mosaic__place_density(S, N);
        if (domS) {
            ixf1 = 1 + c->intra_w * (mosaic__place_starve_on(F, ff1, S, fs1) - 1);
        } else {
            ixs1 = 1 + c->intra_w * (mosaic__place_starve_on(S, fs1, F, ff1) - 1);
            ixsL = 1 + c->intra_w * (mosaic__place_starve_on(S, fsl, F, ffl) - 1);
        }
    }
    sp = pre->sp;
    plast = (nwF - 1) / nwF;
    {
        /* F's progress breakpoints; bu[i]: its SM-active fraction before bp[i] */
        double pr = 1 - sp, ustart;
        if (nwF > 1 && plast < pr) {
            bp[nbp] = plast; bu[nbp++] = 1;
            ustart = ulast;
        } else {
            ustart = nwF > 1 ? 1 : uF0;
        }
        bp[nbp] = pr; bu[nbp++] = ustart;
        for (int i = 1; i <= TL_RAMP; i++) {
            bp[nbp] = pr + (1 - pr) * i / TL_RAMP;
            bu[nbp++] = ustart * (1 - (double)i / (TL_RAMP + 1));
        }
    }
    o->start_s = -1;
    o->overlap = 0;
    o->co = 0;
    {
        int seg = 0, iter = 0;
        double endF = -1, endS = -1, coacc = 0;
        /* when each has dispatched its last block (F: its last wave
         * starts; S: its last wave, or its last batch) */
        double tdF = nwF > 1 ? -1 : 0, tdS = -1;
        double wS = mosaic__place_waves(S, N), thS = wS > 1 ? 1 - 1 / ceil(wS) : 0;
        while ((endF < 0 || endS < 0) && iter++ < 400) {
            double u, rF, dt = 1e300, slots, roomX, ix, ixF, fF = 1, fSi = 1, actS = 0, coF = 0;
            double ixFb = 1;
            int started = t >= gap - 1e-12, fl = endF < 0;
            while (seg < nbp && pF >= bp[seg] - 1e-12) seg++;
            u = !fl ? 0 : (seg < nbp ? bu[seg] : 0);
            roomX = (fl && (nwF <= 1 || pF >= plast)) ? roomL : room1;
            ixF = ixf1;
            ix = roomX == roomL ? ixsL : ixs1;
            slots = (1 - u) * N * S->bps + u * N * roomX;
            if (fl && (comp & MOSAIC_PC_INTER)) fSi = 1 + (interS - 1) * u;
            if (single) {
                double running = 0;
                for (int i = 0; i < bt.n; i++)
                    if (bt.prog[i] < 1) running += bt.b[i];
                if (started && rem > 0.5 && slots - running >= 1 && bt.n < MOSAIC__MAXB - 1) {
                    /* a batch: the newly available SMs */
                    double b = slots - running < rem ? floor(slots - running) : rem;
                    double idle = (1 - u) * N - taken_idle, besd = 0;
                    double nfh = (nwF <= 1 || pF >= plast) ? nFl : nF1;
                    if (idle < 0) idle = 0;
                    if (fl && roomX > 0) besd = u * N - taken_beside;
                    if (besd < 0) besd = 0;
                    b = mosaic__place_batch(&bt, &x, b, idle, besd, roomX, nfh,
                                    fl && (nwF > 1 || u < uF0 - 1e-9), &taken_idle,
                                    &taken_beside);
                    rem -= b;
                    if (rem < 0.5 && tdS < 0) tdS = t;
                    if (o->start_s < 0) o->start_s = t;
                }
                for (int i = 0; i < bt.n; i++)
                    if (bt.prog[i] < 1) {
                        actS += bt.b[i];
                        if (fl && bt.co[i] > 0) {
                            double fx = 1 + (bt.ixf[i] - 1) * bt.co[i];
                            coF = coF > bt.co[i] ? coF : bt.co[i];
                            ixFb = ixFb > fx ? ixFb : fx;
                        }
                    }
                actS = needS > 0 ? actS / needS : 0;
                if (actS > 1) actS = 1;
            } else if (started && endS < 0) {
                actS = needS > 0 ? slots / needS : 1;
                /* the slack only once F has no blocks left to dispatch:
                 * before that F's own blocks take every slot it frees */
                if (!fl || nwF <= 1 || pF >= plast) actS /= satS;
                if (actS > 1) actS = 1;
                if (fl && roomX > 0 && u > 0) coF = 1;
                if (actS > 0 && o->start_s < 0) o->start_s = t;
            }
            if (fl && actS > 0) {
                if (comp & MOSAIC_PC_INTER) fF *= 1 + (interF - 1) * actS;
                if (comp & MOSAIC_PC_INTRA) {
                    if (single) {
                        fF *= ixFb;
                    } else {
                        fF *= 1 + (ixF - 1) * coF;
                    }
                }
            }
            rF = fl ? 1 / fF : 0;
            if (!started) dt = gap - t;
            if (fl && seg < nbp) {
                double d = (bp[seg] - pF) * TF / rF;
                if (d < dt) dt = d;
            }
            if (fl && seg >= nbp) dt = 0;
            if (single) {
                for (int i = 0; i < bt.n; i++)
                    if (bt.prog[i] < 1) {
                        double f = bt.pack[i] * fSi;
                        if (fl && (comp & MOSAIC_PC_INTRA)) f *= 1 + (bt.ixs[i] - 1) * bt.co[i];
                        double d = (1 - bt.prog[i]) * TS * f;
                        if (d < dt) dt = d;
                    }
            } else if (actS > 0 && endS < 0) {
                double coS = slots > 0 ? u * N * roomX / slots : 0, f = fSi;
                if (fl && (comp & MOSAIC_PC_INTRA)) f *= 1 + (ix - 1) * coS;
                double d = (1 - pS) * TS * f / actS;
                if (d < dt) dt = d;
            }
            if (dt > 1e299) break;
            if (dt < 0) dt = 0;
            if (fl && actS > 0) {
                o->overlap += dt;
                coacc += dt * coF;
            }
            /* advance */
            if (single) {
                int alldone = rem < 0.5;
                for (int i = 0; i < bt.n; i++)
                    if (bt.prog[i] < 1) {
                        double f = bt.pack[i] * fSi;
                        if (fl && (comp & MOSAIC_PC_INTRA)) f *= 1 + (bt.ixs[i] - 1) * bt.co[i];
                        bt.prog[i] += dt / (TS * f);
                        if (bt.prog[i] >= 1 - 1e-9) bt.prog[i] = 1;
                        else alldone = 0;
                    }
                t += dt;
                if (alldone && bt.n > 0 && endS < 0) endS = t;
            } else {
                if (actS > 0 && endS < 0) {
                    double coS = slots > 0 ? u * N * roomX / slots : 0, f = fSi, p0 = pS;
                    if (fl && (comp & MOSAIC_PC_INTRA)) f *= 1 + (ix - 1) * coS;
                    pS += dt * actS / (TS * f);
                    if (tdS < 0 && pS >= thS)
                        tdS = pS > p0 ? t + dt * (thS - p0) / (pS - p0) : t;
                }
                t += dt;
                if (endS < 0 && pS >= 1 - 1e-9) endS = t;
            }
            if (fl) {
                double p0 = pF;
                pF += dt * rF / TF;
                if (tdF < 0 && pF >= plast)
                    tdF = pF > p0 ? t - dt + dt * (plast - p0) / (pF - p0) : t;
                if (pF >= 1 - 1e-9) endF = t;
            }
        }
        if (endF < 0) endF = t > TF ? t : TF;
        if (endS < 0) endS = t + TS * (1 - pS);
        /* A dependent kernel launched after the main one on the same stream
         * (a split-K reduce) is dispatched behind the other kernel's pending
         * blocks: it starts once the other has dispatched its last one. */
        if (F->follow_us > 0 && tdS > endF) endF = tdS + F->follow_us;
        if (S->follow_us > 0 && tdF > endS) endS = tdF + S->follow_us;
        o->end_f = endF;
        o->end_s = endS;
        o->co = o->overlap > 0 ? coacc / o->overlap : 0;
        if (o->start_s < 0) o->start_s = gap;
    }
}

void mosaic__timeline_shared(const struct mosaic_gpu_desc *g,
                             const struct mosaic__coef *c,
                             const struct mosaic_pkernel *a,
                             const struct mosaic_pkernel *b, int b_first,
                             double iso_a, double iso_b, double inter_a,
                             double inter_b, unsigned comp,
                             struct mosaic_pred_result *res)
{
    const struct mosaic_pkernel *F = b_first ? b : a, *S = b_first ? a : b;
    double TF = b_first ? iso_b : iso_a, TS = b_first ? iso_a : iso_b;
    double iF = b_first ? inter_b : inter_a, iS = b_first ? inter_a : inter_b;
    struct tl_out o0, o1, o2, o3;
    struct tl_pre pre = {0};
    double d[4][2];
    int fi = b_first ? 1 : 0, si = 1 - fi;

    timeline(g, c, F, S, TF, TS, iF, iS, 0, &pre, &o0);
    timeline(g, c, F, S, TF, TS, iF, iS, comp & MOSAIC_PC_PACKING, &pre, &o1);
    timeline(g, c, F, S, TF, TS, iF, iS, comp & (MOSAIC_PC_PACKING | MOSAIC_PC_INTER), &pre, &o2);
    timeline(g, c, F, S, TF, TS, iF, iS, comp, &pre, &o3);
    d[0][fi] = o0.end_f; d[0][si] = o0.end_s;
    d[1][fi] = o1.end_f; d[1][si] = o1.end_s;
    d[2][fi] = o2.end_f; d[2][si] = o2.end_s;
    d[3][fi] = o3.end_f; d[3][si] = o3.end_s;
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
