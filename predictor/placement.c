/*
 * Thread-block placement and what blocks do to each other on one SM (issue
 * 4, docs/placement.md, docs/predictor.md): exact occupancy, waves, room for
 * a second kernel's blocks beside the first's, where a second kernel's
 * batches land, block packing, issue and pipe starvation, and a kernel's
 * isolated duration on fewer SMs. placement.h is the interface.
 *
 * The placement rules (one SM per TPC first, idle SMs first, the carveout
 * rule, blocks landing behind a running kernel) were measured on the H200,
 * driver 580.159.04, CUDA 13.0: profiler/data/h200/placement.jsonl and
 * behind.jsonl, described in docs/placement.md.
 */
#include <math.h>

#include "placement.h"

static int64_t rup(int64_t v, int64_t g) { return g > 0 ? (v + g - 1) / g * g : v; }

/* The smallest carveout step (bytes) >= want; the largest if none. */
static int smem_step(const struct mosaic_gpu_desc *g, int64_t want)
{
    for (int i = 0; i < g->n_carveouts; i++)
        if (want <= (int64_t)g->carveout_kib[i] * 1024)
            return g->carveout_kib[i] * 1024;
    return g->smem_per_sm;
}

int mosaic__place_occupancy(const struct mosaic_gpu_desc *g,
                            const struct mosaic_kernel *k, int *bps,
                            int *smem_cfg, int *smem_block, int *regs_block)
{
    struct mosaic_occ_device d = {
        .cc_major = g->cc_major, .cc_minor = g->cc_minor, .warp_size = 32,
        .max_threads_per_sm = g->max_threads_per_sm,
        .max_blocks_per_sm = g->max_blocks_per_sm,
        .regs_per_sm = g->regs_per_sm, .regs_per_block = g->regs_per_block,
        .smem_per_sm = g->smem_per_sm,
        .smem_per_block_optin = g->smem_per_block_optin,
        .reserved_smem_per_block = g->reserved_smem_per_block};
    int64_t thr = k->block[0] * k->block[1] * k->block[2];
    struct mosaic_occ_kernel ok = {
        .threads_per_block = (int)thr, .regs_per_thread = (int)k->regs,
        .static_smem = (int)k->static_smem, .dyn_smem = (int)k->dyn_smem,
        .carveout = (int)k->carveout};
    struct mosaic_occupancy o;
    int64_t m;

    mosaic_occupancy_limits(&d, &ok, &o);
    m = o.limit_threads;
    if (o.limit_regs < m) m = o.limit_regs;
    if (o.limit_smem < m) m = o.limit_smem;
    if (o.limit_blocks < m) m = o.limit_blocks;
    *bps = (int)m;
    *smem_block = (int)rup(k->static_smem + k->dyn_smem + g->reserved_smem_per_block, 128);
    {
        int64_t pref = (k->carveout < 0 || k->carveout > 100)
                           ? g->smem_per_sm
                           : smem_step(g, k->carveout * (int64_t)g->smem_per_sm / 100);
        *smem_cfg = pref >= *smem_block ? (int)pref : smem_step(g, *smem_block);
    }
    {
        int64_t wpb = (thr + 31) / 32;
        *regs_block = (int)(rup(k->regs * 32, 256) * rup(wpb, 4));
    }
    return m > 0 ? 0 : -1;
}

double mosaic__place_waves(const struct mosaic_pkernel *k, int n)
{
    double cap = (double)k->bps * (n > 0 ? n : 1);
    return cap > 0 ? (double)k->grid / cap : 0;
}

int mosaic__place_room(const struct mosaic_gpu_desc *g,
                       const struct mosaic_pkernel *f, int nf,
                       const struct mosaic_pkernel *s)
{
    int room, r;

    if (nf <= 0)
        return s->bps; /* an empty SM takes s's configuration */
    if (f->carveout < 0 && s->carveout < 0) {
        /* Default carveouts: the driver sizes each kernel's shared-memory
         * configuration from its own full-occupancy need, and an SM running
         * f takes blocks of s only if s needs at most 4x what f does (2x
         * when s's blocks use shared memory of their own): the probes of
         * `mosaic-zoo behind` behind 24 zoo kernels (docs/placement.md). */
        int own = s->smem > g->reserved_smem_per_block;
        if ((double)s->smem_need > (own ? 2.0 : 4.0) * f->smem_need)
            return 0;
    } else if (f->smem_cfg > s->smem_cfg) {
        /* An SM configured for more shared memory than s prefers does not
         * take it; nor one configured with less than the SM's blocks need. */
        return 0;
    }
    room = (g->max_threads_per_sm - nf * f->threads) / (s->threads > 0 ? s->threads : 1);
    r = g->max_blocks_per_sm - nf;
    if (r < room) room = r;
    if (s->regs_block > 0) {
        r = (g->regs_per_sm - nf * f->regs_block) / s->regs_block;
        if (r < room) room = r;
    }
    if (s->smem > 0) {
        r = (f->smem_cfg - nf * f->smem) / s->smem;
        if (r < room) room = r;
    }
    if (room > s->bps) room = s->bps;
    return room > 0 ? room : 0;
}

/* The analytic intra-SM contention on an SM holding nf blocks of f and ns of
 * s (eq. 3-4 style): the busiest pipe's (or issue's) combined utilisation,
 * each kernel's profiled utilisation scaled by its block fraction. */
double mosaic__place_intra_term(const struct mosaic_pkernel *f, int nf,
                                const struct mosaic_pkernel *s, int ns)
{
    double ff = f->bps > 0 ? (double)nf / f->bps : 0;
    double fs = s->bps > 0 ? (double)ns / s->bps : 0;
    double m = f->issue * ff + s->issue * fs;
    for (int i = 0; i < 8; i++) {
        double u = f->pipe[i] * ff + s->pipe[i] * fs;
        if (u > m) m = u;
    }
    return m > 1 ? m : 1;
}

/* Block packing (Mosaic eq. 1-2): the time of a wave whose blocks sit d per
 * SM, relative to the kernel's isolated density d0 = clamp(grid/N, 1, bps):
 * the busiest pipe or issue slot (U from the profile) is loaded in
 * proportion to the warps on the busiest of the SM's 4 warp schedulers,
 * l(d) = max(1, d warps / 4), so a wave at density d takes
 * max(1, U l(d) / l(d0)) / max(1, U) times as long; the L1/shared data
 * pipe, one per SM, is loaded in proportion to the blocks, d / d0; c->pack
 * weights the term (fitted per GPU). */
double mosaic__place_pack_factor(const struct mosaic_pkernel *k, int N, double d, double w)
{
    double d0 = (double)k->grid / N, u = k->issue, ul1 = k->pipe[7], ub, p;
    if (d0 > k->bps) d0 = k->bps;
    if (d0 < 1) d0 = 1;
    for (int i = 0; i < 7; i++)
        if (k->pipe[i] > u) u = k->pipe[i];
    if (u > 1) u = 1;
    if (ul1 > 1) ul1 = 1;
    {
        /* the issue load of the busiest of the SM's 4 warp schedulers, in
         * warps: a block of fewer than 4 warps keeps some schedulers idle
         * at its isolated density, so packing fills those first; the
         * L1/shared data pipe is one per SM, loaded by every block */
        double l0 = d0 * k->warps / 4, l = d * k->warps / 4, b1 = ul1 * d / d0;
        if (l0 < 1) l0 = 1;
        if (l < 1) l = 1;
        ub = u * l / l0;
        if (b1 > ub) ub = b1;
        if (ul1 > u) u = ul1;
    }
    p = (ub > 1 ? ub : 1) / (u > 1 ? u : 1);
    return 1 + w * (p - 1);
}

/* Slowdown of the newer warps (demand u_new) beside older ones (u_old) on
 * one SM: none while the busiest unit has room, else they get the rest. */
static double starve(double u_new, double u_old)
{
    double left, r;
    if (u_new + u_old <= 1 || u_new <= 0) return 1;
    left = 1 - (u_old < 1 ? u_old : 1);
    if (left < 0.05) left = 0.05;
    r = u_new / left;
    return r < 1 ? 1 : r > 20 ? 20 : r;
}

/* Slowdown of a's warps (fa: its blocks on the SM over its isolated
 * density) beside b's (fb), unit by unit: issue and each pipe is shared
 * only with the other kernel's demand on the same unit. */
double mosaic__place_starve_on(const struct mosaic_pkernel *a, double fa,
                               const struct mosaic_pkernel *b, double fb)
{
    double r = starve(a->issue * fa, b->issue * fb), x;
    for (int i = 0; i < 8; i++)
        if ((x = starve(a->pipe[i] * fa, b->pipe[i] * fb)) > r) r = x;
    return r;
}

/* A batch of blocks blocks of the second kernel packed per_sm per SM, a
 * fraction beside_frac of them beside the first kernel's blocks at
 * beside_per_sm per SM (the first holding first_per_sm per SM there). */
static void add_batch(struct mosaic__batches *bt, const struct mosaic__batch_ctx *x,
                      double blocks, double per_sm, double beside_frac, double beside_per_sm,
                      double first_per_sm)
{
    const struct mosaic_pkernel *first = x->first, *second = x->second;
    int i = bt->n;
    double first_frac = first_per_sm / mosaic__place_density(first, x->n_sms);
    double second_frac = (beside_per_sm < 1 && beside_per_sm > 0 ? 1 : beside_per_sm) /
                         mosaic__place_density(second, x->n_sms);
    if (i >= MOSAIC__MAXB || !(blocks > 0)) return;
    if (per_sm < 1) per_sm = 1;
    if (per_sm > second->bps) per_sm = second->bps;
    bt->blocks[i] = blocks;
    bt->progress[i] = 0;
    bt->packing[i] = mosaic__place_pack_factor(second, x->n_sms, per_sm, x->pack_weight);
    bt->beside_frac[i] = beside_frac;
    bt->starve_second[i] = bt->starve_first[i] = 1;
    if (x->intra && x->second_dominates)
        bt->starve_first[i] = 1 + x->coef->intra_w *
                             (mosaic__place_starve_on(first, first_frac, second, second_frac) - 1);
    if (x->intra && !x->second_dominates)
        bt->starve_second[i] = 1 + x->coef->intra_w *
                             (mosaic__place_starve_on(second, second_frac, first, first_frac) - 1);
    bt->n++;
}

/* The most blocks one SM ends up with when b blocks land `chunk` at a time
 * in slots that free up on n SMs in random order: the median of the
 * largest of n Poisson(k/n) counts, k = b/chunk groups, times chunk; at
 * most cap (the behind probes: 132 blocks one at a time on 132 SMs give
 * 4-5 on the densest). */
static double land_max(double b, int n, double chunk, int cap)
{
    double k = ceil(b / chunk), lam = k / n, p = exp(-lam), cdf = p, d;
    int m = 0;
    while (n * (1 - cdf) > 0.5 && m < 64) {
        m++;
        p *= lam / m;
        cdf += p;
    }
    d = (m < 1 ? 1 : m) * chunk;
    return d > cap ? cap : d;
}

/* Where a batch of up to b blocks of S lands, given idle SMs and SMs beside
 * F (with room for roomX blocks each) not yet taken; released: F is
 * running and its blocks hold every SM or it is releasing them. Adds the
 * batch's parts to bt, updates the SMs taken, returns the blocks placed. */
double mosaic__place_batch(struct mosaic__batches *bt, const struct mosaic__batch_ctx *x,
                           double blocks, double idle_sms, double beside_sms, double room,
                           double first_per_sm, int released, double *taken_idle,
                           double *taken_beside)
{
    const struct mosaic_pkernel *second = x->second;
    if (released) {
        /* the second kernel's blocks take the slots the first's retiring
         * blocks free, a group at a time on whichever SM retires first; the
         * densest SM sets the batch's end */
        struct mosaic__landing *land = x->land;
        double n_used = idle_sms + beside_sms, on_idle;
        if (n_used * second->bps + 1e-9 < blocks) n_used = blocks / second->bps;
        on_idle = n_used > 0 ? blocks * idle_sms / n_used : blocks;
        if (blocks != land->last_blocks) {
            land->last_blocks = blocks;
            land->last_per_sm = land_max(blocks, x->n_sms, land->chunk, second->bps);
        }
        add_batch(bt, x, blocks, land->last_per_sm, blocks > 0 ? (blocks - on_idle) / blocks : 0,
                  beside_sms > 0 ? (blocks - on_idle) / beside_sms : 0, first_per_sm);
        *taken_idle += idle_sms;
        *taken_beside += beside_sms;
    } else if (idle_sms >= 1 && beside_sms > 0 && room < second->bps) {
        /* most room first: idle SMs take blocks until they have no more
         * room than the SMs beside the first kernel's, then the rest spread
         * over both */
        double on_idle_first = idle_sms * (second->bps - room), even;
        if (on_idle_first > blocks) on_idle_first = blocks;
        even = (blocks - on_idle_first) / (idle_sms + beside_sms);
        if (even > room) even = room;
        add_batch(bt, x, on_idle_first + even * idle_sms, on_idle_first / idle_sms + even, 0, 0,
                  first_per_sm);
        if (even * beside_sms >= 0.5)
            add_batch(bt, x, even * beside_sms, even, 1, even, first_per_sm);
        blocks = on_idle_first + even * (idle_sms + beside_sms);
        *taken_idle += idle_sms;
        *taken_beside += even > 0 ? beside_sms : 0;
    } else {
        /* spread over the available SMs, idle ones first */
        double n_used = idle_sms + beside_sms, per_sm, on_idle;
        if (n_used * second->bps + 1e-9 < blocks) n_used = blocks / second->bps;
        per_sm = n_used > 0 ? blocks / n_used : second->bps;
        if (per_sm < 1) per_sm = 1;
        if (per_sm > second->bps) per_sm = second->bps;
        on_idle = idle_sms * per_sm < blocks ? idle_sms * per_sm : blocks;
        add_batch(bt, x, blocks, per_sm, blocks > 0 ? (blocks - on_idle) / blocks : 0,
                  beside_sms > 0 ? (blocks - on_idle) / beside_sms : 0, first_per_sm);
        *taken_idle += on_idle / per_sm;
        *taken_beside += (blocks - on_idle) / per_sm;
    }
    return blocks;
}

/* A kernel's isolated duration on n SMs, from its full-GPU profile.
 * A kernel of at least one wave: each SM has waves(n) / waves(N) times the
 * work, done faster by the gain in per-SM speed that fewer SMs give. For a
 * kernel that only waits on memory the copy curve gives it, G = per-SM
 * copy bandwidth on n SMs over that on all (loads return sooner when fewer
 * SMs queue at DRAM); a kernel waiting a share m of its time
 * (long-scoreboard stalls per cycle, at least its DRAM share of the cycles
 * it does not issue) gains 1 / (1 - m + m / G), never more than its
 * busiest unit (issue, a pipe) leaves room for, and it cannot move its
 * bytes faster than n SMs reach. A kernel of less than one wave: the
 * blocks of the busiest SM, ceil(grid / n), in full rounds of bps blocks
 * and a last round of the rest, each as long as its packing makes it.
 * On the dataset's 393 partition baselines: median error 7.5%, p95 31%
 * (the DRAM share and waves mixed linearly: 11%, 47%). */
double mosaic__place_iso_on(const struct mosaic_gpu_desc *g, const struct mosaic_pkernel *k,
                            int n)
{
    int N = g->sm_count;
    double bw_n = mosaic__gpu_copy_bw(g, n), bw_N = mosaic__gpu_copy_bw(g, N);
    double dram = (k->dram_rd + k->dram_wr) / bw_N, s = dram < 1 ? dram : 1, t;
    if (n >= N || n < 1) return k->dur_us;
    if (mosaic__place_waves(k, N) >= 1) {
        double cpi = k->occ * 16 / (k->issue > 1e-3 ? k->issue : 1e-3);
        double m = cpi > 0 ? k->stall_lsb / cpi : 1, gain, u = k->issue;
        if (m < dram * (1 - k->issue)) m = dram * (1 - k->issue);
        if (m > 1) m = 1;
        gain = 1 / (1 - m + m * (bw_N / N) / (bw_n / n));
        for (int i = 0; i < 8; i++)
            if (k->pipe[i] > u) u = k->pipe[i];
        if (u * gain > 1) gain = u < 1 ? 1 / u : 1;
        t = mosaic__place_waves(k, n) / mosaic__place_waves(k, N) / gain;
        if (t < s * bw_N / bw_n) t = s * bw_N / bw_n;
    } else {
        int bps = k->bps > 0 ? k->bps : 1;
        double d = ceil((double)k->grid / n), full = floor(d / bps), rest = d - full * bps;
        t = full * mosaic__place_pack_factor(k, N, bps, 1) +
            (rest > 0 ? mosaic__place_pack_factor(k, N, rest, 1) : 0);
        t = s * bw_N / bw_n + (1 - s) * t;
    }
    return k->dur_us * (t > 1 ? t : 1);
}
