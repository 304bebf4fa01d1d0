/*
 * The Mosaic predictor: prepared kernels, the shared-mode timeline,
 * inter-/intra-SM factors, the public API and the per-pair cache.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "predictor_internal.h"

MOSAIC__API void mosaic_gpu_desc_h200(struct mosaic_gpu_desc *g)
{
    static const int steps[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
    memset(g, 0, sizeof *g);
    g->sm_count = 132;
    g->sms_per_tpc = 2;
    g->cc_major = 9;
    g->cc_minor = 0;
    g->max_threads_per_sm = 2048;
    g->max_blocks_per_sm = 32;
    g->regs_per_sm = 65536;
    g->regs_per_block = 65536;
    g->smem_per_sm = 233472;
    g->smem_per_block_optin = 232448;
    g->reserved_smem_per_block = 1024;
    g->n_carveouts = (int)(sizeof steps / sizeof steps[0]);
    for (int i = 0; i < g->n_carveouts; i++)
        g->carveout_kib[i] = steps[i];
    g->l2_bytes = 62914560;
    g->dram_bw = 4.8e12;
}

/* ---- analytic coefficients --------------------------------------------- */

void mosaic__coef_default(struct mosaic__coef *c)
{
    c->pack = 0;
    c->gap_us = 1.6;
    c->intra_w = 1;
}

int mosaic__coef_save(const char *path, const struct mosaic__coef *c,
                         char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return MOSAIC_EIO;
    }
    fprintf(f,
            "{\"schema\": \"mosaic-analytic/1\",\n"
            " \"pack\": %.17g,\n \"gap_us\": %.17g,\n \"intra_w\": %.17g}\n",
            c->pack, c->gap_us, c->intra_w);
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return MOSAIC_EIO;
    }
    return 0;
}

static int coef_num(cJSON *root, const char *path, const char *key, double lo,
                    double hi, double *out, char *err, size_t errlen)
{
    cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
        it->valuedouble < lo || it->valuedouble > hi) {
        snprintf(err, errlen, "%s: field \"%s\" missing or not a number in [%g, %g]",
                 path, key, lo, hi);
        return MOSAIC_EINVAL;
    }
    *out = it->valuedouble;
    return 0;
}

int mosaic__coef_load(const char *path, struct mosaic__coef *c, char *err,
                         size_t errlen)
{
    char *txt;
    cJSON *root, *sch;
    int rc;

    err[0] = 0;
    rc = mosaic_read_text(path, 1L << 20, &txt, err, errlen);
    if (rc) return rc;
    root = cJSON_Parse(txt);
    free(txt);
    if (!root || !cJSON_IsObject(root)) {
        snprintf(err, errlen, "%s: not a JSON object (malformed or truncated)", path);
        cJSON_Delete(root);
        return MOSAIC_EINVAL;
    }
    sch = cJSON_GetObjectItemCaseSensitive(root, "schema");
    if (!cJSON_IsString(sch) || strcmp(sch->valuestring, "mosaic-analytic/1") != 0) {
        snprintf(err, errlen, "%s: field \"schema\" is not \"mosaic-analytic/1\"", path);
        cJSON_Delete(root);
        return MOSAIC_EINVAL;
    }
    rc = coef_num(root, path, "pack", 0, 10, &c->pack, err, errlen);
    if (!rc) rc = coef_num(root, path, "gap_us", 0, 100, &c->gap_us, err, errlen);
    if (!rc) rc = coef_num(root, path, "intra_w", 0, 10, &c->intra_w, err, errlen);
    cJSON_Delete(root);
    return rc;
}

/* ---- prepared kernels ---------------------------------------------------- */

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

MOSAIC__API const char *mosaic_pkernel_key(const struct mosaic_pkernel *k)
{
    return k ? k->key : "";
}

MOSAIC__API int mosaic_pkernel_set_follow(struct mosaic_pkernel *k,
                                  const struct mosaic_kernel *next, const char *what,
                                  char *err, size_t errlen)
{
    double d;
    if (!k || !next || !what) {
        snprintf(err, errlen, "mosaic_pkernel_set_follow: NULL argument");
        return MOSAIC_EINVAL;
    }
    d = next->metrics[MOSAIC_M_duration_ns];
    if (!isfinite(d) || d <= 0 || d > 1e12) {
        snprintf(err, errlen, "%s: kernel %s: metrics.duration_ns is missing or out of range",
                 what, next->key ? next->key : "(no key)");
        return MOSAIC_EINVAL;
    }
    k->follow_us = d * 1e-3;
    /* a different prediction than the kernel alone: a different cache key */
    k->hash = fnv(k->key) ^ (0x9e3779b97f4a7c15ull * (uint64_t)(d + 1));
    return 0;
}

MOSAIC__API void mosaic_pkernel_free(struct mosaic_pkernel *k)
{
    if (!k) return;
    free(k->key);
    free(k);
}

#define NEED(id, lo, hi, dst, scale)                                            \
    do {                                                                        \
        double v_ = k->metrics[MOSAIC_M_##id];                                  \
        if (!isfinite(v_)) {                                                    \
            snprintf(err, errlen, "%s: kernel %s: metrics.%s is missing (null)", \
                     what, key, #id);                                           \
            goto bad;                                                           \
        }                                                                       \
        if (v_ < (lo) || v_ > (hi)) {                                           \
            snprintf(err, errlen,                                               \
                     "%s: kernel %s: metrics.%s = %g is out of range [%g, %g]", \
                     what, key, #id, v_, (double)(lo), (double)(hi));           \
            goto bad;                                                           \
        }                                                                       \
        (dst) = v_ * (scale);                                                   \
    } while (0)

MOSAIC__API int mosaic_pkernel_prepare(const struct mosaic_predictor *p,
                               const struct mosaic_kernel *k, const char *what,
                               struct mosaic_pkernel **out, char *err,
                               size_t errlen)
{
    struct mosaic_pkernel *pk;
    const char *key;
    int64_t thr, grid;
    int smem_block;

    *out = NULL;
    if (!p || !k || !what) {
        snprintf(err, errlen, "mosaic_pkernel_prepare: NULL argument");
        return MOSAIC_EINVAL;
    }
    key = k->key ? k->key : "(no key)";
    for (int i = 0; i < 3; i++) {
        if (k->grid[i] <= 0 || k->grid[i] > (int64_t)1 << 31 ||
            k->block[i] <= 0 || k->block[i] > 1024) {
            snprintf(err, errlen, "%s: kernel %s: field %s[%d] missing or out of range",
                     what, key, (k->grid[i] <= 0 || k->grid[i] > (int64_t)1 << 31) ? "grid" : "block", i);
            return MOSAIC_EINVAL;
        }
    }
    thr = k->block[0] * k->block[1] * k->block[2];
    grid = k->grid[0] * k->grid[1] * k->grid[2];
    if (thr > 1024) {
        snprintf(err, errlen, "%s: kernel %s: field block: %lld threads > 1024", what, key,
                 (long long)thr);
        return MOSAIC_EINVAL;
    }
    if (k->regs == MOSAIC_NULL || k->regs < 0 || k->regs > 255) {
        snprintf(err, errlen, "%s: kernel %s: field regs missing or out of range [0, 255]",
                 what, key);
        return MOSAIC_EINVAL;
    }
    if (k->dyn_smem == MOSAIC_NULL || k->dyn_smem < 0 || k->dyn_smem > p->gpu.smem_per_block_optin ||
        k->static_smem == MOSAIC_NULL || k->static_smem < 0 ||
        k->static_smem > p->gpu.smem_per_block_optin) {
        snprintf(err, errlen, "%s: kernel %s: field dyn_smem/static_smem missing or out of range",
                 what, key);
        return MOSAIC_EINVAL;
    }
    if (k->carveout != MOSAIC_NULL && (k->carveout < -1 || k->carveout > 100)) {
        snprintf(err, errlen, "%s: kernel %s: field carveout out of range [-1, 100]", what, key);
        return MOSAIC_EINVAL;
    }
    pk = calloc(1, sizeof *pk);
    if (!pk || !(pk->key = strdup(key))) {
        free(pk);
        snprintf(err, errlen, "%s: out of memory", what);
        return MOSAIC_ENOMEM;
    }
    pk->hash = fnv(key);
    pk->grid = grid;
    pk->threads = (int)thr;
    pk->warps = (int)((thr + 31) / 32);
    pk->regs = (int)k->regs;
    pk->carveout = k->carveout == MOSAIC_NULL ? -1 : (int)k->carveout;
    {
        struct mosaic_kernel kk = *k;
        kk.carveout = pk->carveout;
        if (mosaic__place_occupancy(&p->gpu, &kk, &pk->bps, &pk->smem_cfg,
                                   &smem_block, &pk->regs_block) != 0) {
            snprintf(err, errlen,
                     "%s: kernel %s: no block fits on an SM (fields block, regs, "
                     "static_smem, dyn_smem)", what, key);
            goto bad;
        }
        pk->smem = smem_block;
        pk->smem_need = pk->bps * smem_block;
    }
    NEED(duration_ns, 1, 1e12, pk->dur_us, 1e-3);
    NEED(dram_read_bw, 0, 1e14, pk->dram_rd, 1e-9);
    NEED(dram_write_bw, 0, 1e14, pk->dram_wr, 1e-9);
    NEED(l2_read_sector_rate, 0, 1e13, pk->l2_rd, 32e-9);
    NEED(l2_write_sector_rate, 0, 1e13, pk->l2_wr, 32e-9);
    NEED(warps_eligible_per_cycle, 0, 64, pk->warps_elig, 1);
    NEED(stall_long_scoreboard, 0, 1e6, pk->stall_lsb, 1);
    NEED(stall_mio_throttle, 0, 1e6, pk->stall_mio, 1);
    NEED(issue_active, 0, 1.0001, pk->issue, 1);
    NEED(ipc, 0, 16, pk->ipc, 1);
    NEED(pipe_fma_pct, 0, 1000, pk->pipe[0], 0.01);
    NEED(pipe_alu_pct, 0, 1000, pk->pipe[1], 0.01);
    NEED(pipe_xu_pct, 0, 1000, pk->pipe[2], 0.01);
    NEED(pipe_lsu_pct, 0, 1000, pk->pipe[3], 0.01);
    NEED(pipe_tensor_hmma_pct, 0, 1000, pk->pipe[4], 0.01);
    NEED(pipe_tensor_gmma_pct, 0, 1000, pk->pipe[5], 0.01);
    NEED(pipe_fp64_pct, 0, 1000, pk->pipe[6], 0.01);
    NEED(l1_hit_rate_pct, 0, 1000, pk->l1_hit, 0.01);
    NEED(l2_hit_rate_pct, 0, 1000, pk->l2_hit, 0.01);
    NEED(achieved_occupancy_pct, 0, 1000, pk->occ, 0.01);
    NEED(sm_cycles_active_min, 0, 1e13, pk->cyc_min, 1);
    NEED(sm_cycles_active_avg, 0, 1e13, pk->cyc_avg, 1);
    NEED(sm_cycles_active_max, 0, 1e13, pk->cyc_max, 1);
    {
        double fma_, alu, xu, lsu, sec, req;
        NEED(inst_fma, 0, 1e18, fma_, 1);
        NEED(inst_alu, 0, 1e18, alu, 1);
        NEED(inst_xu, 0, 1e18, xu, 1);
        NEED(inst_lsu, 0, 1e18, lsu, 1);
        NEED(gld_sectors, 0, 1e18, sec, 1);
        NEED(gld_requests, 0, 1e18, req, 1);
        {
            /* The L1/shared data pipe: one wavefront per LSU instruction,
             * one more per shared-memory bank conflict, and a global load
             * takes one per 128-byte line it touches (4 sectors when
             * coalesced, up to 16 sectors a request; beyond that the
             * sectors are scattered, one line each). Per SM cycle. */
            double conf, wf, spr = req > 0 ? sec / req : 0, cyc = pk->cyc_avg * p->gpu.sm_count;
            NEED(smem_bank_conflicts, 0, 1e18, conf, 1);
            wf = sec * (spr > 16 ? 1 : 0.25) - req;
            wf = lsu + conf + (wf > 0 ? wf : 0);
            pk->pipe[7] = cyc > 0 ? wf / cyc : 0;
            if (pk->pipe[7] > 1) pk->pipe[7] = 1;
        }
        pk->c2lsu = lsu > 0 ? (fma_ + alu + xu) / lsu : 1000;
        if (pk->c2lsu > 1000) pk->c2lsu = 1000;
        pk->spr = req > 0 ? sec / req : 0;
        pk->lc2lsu = log1p(pk->c2lsu);
        pk->lgrid = log2((double)pk->grid);
    }
    *out = pk;
    return 0;
bad:
    mosaic_pkernel_free(pk);
    return MOSAIC_EINVAL;
}

/* ---- features -------------------------------------------------------------- */

static void kfeat(const struct mosaic_pkernel *k, int sms, int n, float *x)
{
    x[0] = (float)sms / (float)n;
    x[1] = (float)k->dram_rd;
    x[2] = (float)k->dram_wr;
    x[3] = (float)k->l2_rd;
    x[4] = (float)k->l2_wr;
    x[5] = (float)k->warps_elig;
    x[6] = (float)k->stall_lsb;
    x[7] = (float)(1 - k->issue);
    x[8] = (float)k->lc2lsu;
    x[9] = (float)k->spr;
}

/* DRAM bandwidth (read + write, GB/s) reachable from n SMs: the H200's
 * copy bandwidth on green contexts of 8/16/32/64/128 SMs (DESIGN.md),
 * interpolated, scaled to the GPU's peak. */
static double part_bw(const struct mosaic_gpu_desc *g, int n)
{
    static const double sm[] = {0, 8, 16, 32, 64, 128, 1e9};
    static const double bw[] = {0, 773, 1540, 2895, 3740, 3918, 3918};
    double scale = g->dram_bw / 4.8e12;
    for (int i = 1; i < 7; i++)
        if (n <= sm[i])
            return scale * (bw[i - 1] + (bw[i] - bw[i - 1]) * (n - sm[i - 1]) / (sm[i] - sm[i - 1]));
    return scale * 3918;
}

/* The DRAM bandwidth (GB/s) k pulls on its SMs: the bytes it moves per run
 * (profile: bandwidth x duration on the full GPU) over its isolated
 * duration there when known, else the profile's bandwidth scaled by the
 * copy bandwidth those SMs reach. */
static double dram_on(const struct mosaic_gpu_desc *g, const struct mosaic_pkernel *k,
                      int sms, double iso)
{
    double d = k->dram_rd + k->dram_wr, r;
    if (isfinite(iso) && iso > 0 && k->dur_us > 0) {
        r = k->dur_us / iso;
        return d * (r < 0.05 ? 0.05 : r > 1.5 ? 1.5 : r);
    }
    return d * part_bw(g, sms) / part_bw(g, g->sm_count);
}

void mosaic__feat_inter(const struct mosaic_gpu_desc *g,
                       const struct mosaic_pkernel *self, int sms_self, double iso_self,
                       const struct mosaic_pkernel *other, int sms_other, double iso_other,
                       float *x)
{
    int n = g->sm_count;
    kfeat(self, sms_self, n, x);
    kfeat(other, sms_other, n, x + 10);
    /* demand scaled to the SMs each side has (bandwidth per SM as profiled) */
    x[20] = (float)((self->dram_rd + self->dram_wr) * sms_self / n +
                    (other->dram_rd + other->dram_wr) * sms_other / n);
    x[21] = (float)((self->l2_rd + self->l2_wr) * sms_self / n +
                    (other->l2_rd + other->l2_wr) * sms_other / n);
    x[22] = (float)mosaic__place_waves(self, sms_self);
    x[23] = (float)mosaic__place_waves(other, sms_other);
    {
        /* each side's DRAM demand on its SMs: the bytes per run over the
         * isolated duration there (what its SMs actually reach) */
        double full = part_bw(g, n);
        double ds = dram_on(g, self, sms_self, iso_self);
        double dth = dram_on(g, other, sms_other, iso_other);
        x[24] = (float)(ds / full);
        x[25] = (float)(dth / full);
        x[26] = (float)((ds + dth) / full);
        x[27] = (float)(self->stall_lsb * (1 - self->issue));
        /* latency-bound kernels: the co-runner's DRAM stream evicts what
         * self found in L2 (its hits turn into DRAM misses), and its L2
         * traffic queues ahead of self's requests; both hurt in proportion
         * to how much self waits on memory (long-scoreboard stalls per
         * issue slot left idle) */
        {
            double h = self->l2_hit > 1 ? 1 : self->l2_hit < 0 ? 0 : self->l2_hit;
            double lat = self->stall_lsb * (1 - self->issue);
            x[28] = (float)h;
            x[29] = (float)(h * lat * dth / full);
            x[30] = (float)(lat * (other->l2_rd + other->l2_wr) * sms_other / n / 1000);
        }
        {
            /* Under contention DRAM serves the requests in flight, so each
             * side's share follows its outstanding sectors (resident warps
             * x sectors per request, on its SMs): a latency-bound chain
             * with a few warps gives way to a stream however much it
             * moves alone */
            double ms = self->occ * 64 * self->spr * sms_self;
            double mo = other->occ * 64 * other->spr * sms_other;
            double sh = ms + mo > 0 ? mo / (ms + mo) : 0;
            x[31] = (float)sh;
            x[32] = (float)(sh * dth / full);
        }
    }
}

/* ---- shared-mode timeline ------------------------------------------------ */

struct tl_out {
    double end_f, end_s, start_s, overlap, co;
};

/* The analytic intra-SM contention on an SM holding nf blocks of f and ns of
 * s (eq. 3-4 style): the busiest pipe's (or issue's) combined utilisation,
 * each kernel's profiled utilisation scaled by its block fraction. */
static double intra_term(const struct mosaic_pkernel *f, int nf,
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
static double pack_factor(const struct mosaic_pkernel *k, int N, double d, double w)
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

/* The busiest pipe's (or issue's) utilisation of k, 0..1. */
static double busiest(const struct mosaic_pkernel *k)
{
    double u = k->issue;
    for (int i = 0; i < 8; i++)
        if (k->pipe[i] > u) u = k->pipe[i];
    return u > 1 ? 1 : u;
}

/* The isolated density of k: blocks per SM, at least 1. */
static double dens0(const struct mosaic_pkernel *k, int N)
{
    double d0 = (double)k->grid / N;
    if (d0 > k->bps) d0 = k->bps;
    return d0 < 1 ? 1 : d0;
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
static double starve_on(const struct mosaic_pkernel *a, double fa,
                        const struct mosaic_pkernel *b, double fb)
{
    double r = starve(a->issue * fa, b->issue * fb), x;
    for (int i = 0; i < 8; i++)
        if ((x = starve(a->pipe[i] * fa, b->pipe[i] * fb)) > r) r = x;
    return r;
}

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

#define TL_RAMP 8
#define TL_MAXB 24

/* What the timeline needs of F and S that does not depend on the
 * components: computed by its first run, reused by the others. */
struct tl_pre {
    int done, room1, roomL;
    double satS, sp;
    double chunk; /* S blocks one retiring block of F makes room for */
    double land_b, land_d; /* the last land_max query and its answer */
};

/* Dispatched batches of a single-wave S: blocks, progress, packing
 * factor, fraction beside F's blocks, intra-SM factors of S and of F. */
struct tl_batches {
    int n;
    double b[TL_MAXB], prog[TL_MAXB], pack[TL_MAXB], co[TL_MAXB];
    double ixs[TL_MAXB], ixf[TL_MAXB];
};

/* What placing a single-wave S's batches needs of one timeline run. */
struct tl_ctx {
    const struct mosaic__coef *c;
    const struct mosaic_pkernel *F, *S;
    struct tl_pre *pre;
    int N, domS, intra;
    double wpack;
};

/* A batch of b blocks of S packed d per SM, a fraction co of them beside
 * F's blocks at db per SM (F holding nfh per SM there). */
static void add_batch(struct tl_batches *bt, const struct tl_ctx *x, double b, double d,
                      double co, double db, double nfh)
{
    const struct mosaic_pkernel *F = x->F, *S = x->S;
    int i = bt->n;
    double ff = nfh / dens0(F, x->N), fs = (db < 1 && db > 0 ? 1 : db) / dens0(S, x->N);
    if (i >= TL_MAXB || !(b > 0)) return;
    if (d < 1) d = 1;
    if (d > S->bps) d = S->bps;
    bt->b[i] = b;
    bt->prog[i] = 0;
    bt->pack[i] = pack_factor(S, x->N, d, x->wpack);
    bt->co[i] = co;
    bt->ixs[i] = bt->ixf[i] = 1;
    if (x->intra && x->domS) bt->ixf[i] = 1 + x->c->intra_w * (starve_on(F, ff, S, fs) - 1);
    if (x->intra && !x->domS) bt->ixs[i] = 1 + x->c->intra_w * (starve_on(S, fs, F, ff) - 1);
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
static double place_batch(struct tl_batches *bt, const struct tl_ctx *x, double b, double idle,
                          double besd, double roomX, double nfh, int released,
                          double *taken_idle, double *taken_beside)
{
    const struct mosaic_pkernel *S = x->S;
    if (released) {
        /* S's blocks take the slots F's retiring blocks free, a group at a
         * time on whichever SM retires first; the densest SM sets the
         * batch's end */
        struct tl_pre *pre = x->pre;
        double nsm = idle + besd, on_idle;
        if (nsm * S->bps + 1e-9 < b) nsm = b / S->bps;
        on_idle = nsm > 0 ? b * idle / nsm : b;
        if (b != pre->land_b) {
            pre->land_b = b;
            pre->land_d = land_max(b, x->N, pre->chunk, S->bps);
        }
        add_batch(bt, x, b, pre->land_d, b > 0 ? (b - on_idle) / b : 0,
                  besd > 0 ? (b - on_idle) / besd : 0, nfh);
        *taken_idle += idle;
        *taken_beside += besd;
    } else if (idle >= 1 && besd > 0 && roomX < S->bps) {
        /* most room first: idle SMs take blocks until they have no more
         * room than the SMs beside F, then the rest spread over both */
        double x1 = idle * (S->bps - roomX), e;
        if (x1 > b) x1 = b;
        e = (b - x1) / (idle + besd);
        if (e > roomX) e = roomX;
        add_batch(bt, x, x1 + e * idle, x1 / idle + e, 0, 0, nfh);
        if (e * besd >= 0.5) add_batch(bt, x, e * besd, e, 1, e, nfh);
        b = x1 + e * (idle + besd);
        *taken_idle += idle;
        *taken_beside += e > 0 ? besd : 0;
    } else {
        /* spread over the available SMs, idle ones first */
        double nsm = idle + besd, d, on_idle;
        if (nsm * S->bps + 1e-9 < b) nsm = b / S->bps;
        d = nsm > 0 ? b / nsm : S->bps;
        if (d < 1) d = 1;
        if (d > S->bps) d = S->bps;
        on_idle = idle * d < b ? idle * d : b;
        add_batch(bt, x, b, d, b > 0 ? (b - on_idle) / b : 0,
                  besd > 0 ? (b - on_idle) / besd : 0, nfh);
        *taken_idle += on_idle / d;
        *taken_beside += (b - on_idle) / d;
    }
    return b;
}

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
    struct tl_batches bt;
    struct tl_ctx x = {.c = c, .F = F, .S = S, .pre = pre, .N = N, .intra = intra,
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
        pre->chunk = mosaic__place_room(g, F, F->bps - 1, S) - mosaic__place_room(g, F, F->bps, S);
        if (pre->chunk < 1)
            pre->chunk = mosaic__place_room(g, F, 1, S) > 0 ? 1 : S->bps;
        pre->done = 1;
    }
    room1 = pre->room1;
    roomL = pre->roomL;
    satS = pre->satS;
    /* the readier kernel keeps the issue slots, but an older one that keeps
     * them busy (issue >= 0.8) is not displaced: greedy-then-oldest picks
     * its ready warps first (the residency probes' issue-bound blocker
     * starved every memory-bound kernel beside it) */
    domS = busiest(S) / dens0(S, N) > busiest(F) / dens0(F, N) && F->issue < 0.8;
    x.domS = domS;
    if (comp & MOSAIC_PC_INTRA) {
        /* Issue and pipe contention on an SM holding both (eq. 3-4): the
         * kernel whose warps are readier (higher per-block demand) keeps
         * its share, the other gets what is left (greedy-then-oldest warp
         * scheduling keeps issuing from a warp while it is ready). Per-block
         * demand: the profiled busiest-unit utilisation over the
         * kernel's isolated density. */
        double ff1 = nF1 / dens0(F, N), ffl = nFl / dens0(F, N);
        double fs1 = room1 / dens0(S, N), fsl = roomL / dens0(S, N);
        if (domS) {
            ixf1 = 1 + c->intra_w * (starve_on(F, ff1, S, fs1) - 1);
        } else {
            ixs1 = 1 + c->intra_w * (starve_on(S, fs1, F, ff1) - 1);
            ixsL = 1 + c->intra_w * (starve_on(S, fsl, F, ffl) - 1);
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
                if (started && rem > 0.5 && slots - running >= 1 && bt.n < TL_MAXB - 1) {
                    /* a batch: the newly available SMs */
                    double b = slots - running < rem ? floor(slots - running) : rem;
                    double idle = (1 - u) * N - taken_idle, besd = 0;
                    double nfh = (nwF <= 1 || pF >= plast) ? nFl : nF1;
                    if (idle < 0) idle = 0;
                    if (fl && roomX > 0) besd = u * N - taken_beside;
                    if (besd < 0) besd = 0;
                    b = place_batch(&bt, &x, b, idle, besd, roomX, nfh,
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
                            struct mosaic_pred_result *res, float *xa,
                            float *xb)
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
    if (xa || xb) {
        int n = g->sm_count;
        /* room for a beside b's full occupancy, and for b beside a's */
        int room_ab = mosaic__place_room(g, b, b->bps, a);
        double lsl[2] = {log(res->k[0].slowdown), log(res->k[1].slowdown)};
        double liso[2] = {log(iso_a), log(iso_b)};
        int room_ba = mosaic__place_room(g, a, a->bps, b);
        for (int i = 0; i < 2; i++) {
            float *x = i == 0 ? xa : xb;
            const struct mosaic_pkernel *me = i == 0 ? a : b, *ot = i == 0 ? b : a;
            double iso_me = i == 0 ? iso_a : iso_b, iso_ot = i == 0 ? iso_b : iso_a;
            int me_first = (i == fi);
            int room_me = i == 0 ? room_ab : room_ba;
            int room_ot = i == 0 ? room_ba : room_ab;
            if (!x) continue;
            mosaic__feat_inter(g, me, n, iso_me, ot, n, iso_ot, x);
            x[20] = (float)me_first;
            x[21] = (float)mosaic__place_waves(me, n);
            x[22] = (float)mosaic__place_waves(ot, n);
            x[23] = (float)me->bps;
            x[24] = (float)ot->bps;
            x[25] = (float)room_me;
            x[26] = (float)room_ot;
            x[27] = (float)lsl[i];
            x[28] = (float)lsl[1 - i];
            x[29] = (float)log(res->k[i].placement);
            x[30] = (float)res->coresident;
            x[31] = (float)(res->overlap_us / iso_me);
            x[32] = (float)intra_term(me, me->bps, ot, room_ot);
            x[33] = (float)(me->issue + ot->issue);
            x[34] = (float)liso[i];
            x[35] = (float)liso[1 - i];
            x[36] = (float)log(iso_ot / iso_me);
            x[37] = (float)((double)me->grid / ((double)me->bps * n));
            x[38] = (float)(me->smem_cfg == ot->smem_cfg);
            x[39] = (float)log(res->k[i].inter_sm);
            x[40] = (float)log(res->k[1 - i].duration_us / res->k[i].duration_us);
            x[41] = (float)ot->lgrid;
            x[42] = (float)busiest(ot);
            x[43] = (float)busiest(me);
            {
                /* warp-scheduler share on an SM holding both: each ready
                 * warp gets about an equal turn, so a kernel with few
                 * warps beside one with many gets a small share of issue;
                 * its slowdown when issue-bound is its demand over that
                 * share (both at their isolated densities) */
                double wm = dens0(me, n) * me->warps, wo = dens0(ot, n) * ot->warps;
                double share = wm / (wm + wo);
                x[44] = (float)wm;
                x[45] = (float)wo;
                x[46] = (float)(busiest(me) / share);
            }
        }
    }
}

/* ---- predictor ------------------------------------------------------------ */

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

static int load_forest(const char *dir, const char *name, int nf,
                       struct mosaic__forest **f, char *err, size_t errlen)
{
    char path[4096];
    int rc;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        snprintf(err, errlen, "%s: model directory path too long", dir);
        return MOSAIC_EINVAL;
    }
    rc = mosaic__forest_load(path, f, err, errlen);
    if (rc) return rc;
    if (mosaic__forest_nfeatures(*f) != nf) {
        snprintf(err, errlen, "%s: field learner.learner_model_param.num_feature: "
                 "%d features, the predictor needs %d", path,
                 mosaic__forest_nfeatures(*f), nf);
        mosaic__forest_free(*f);
        *f = NULL;
        return MOSAIC_EINVAL;
    }
    return 0;
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
    rc = load_forest(model_dir, "inter.json", MOSAIC__NF_INTER, &inter, err, errlen);
    if (rc) return rc;
    rc = load_forest(model_dir, "shared.json", MOSAIC__NF_SHARED, &shared, err, errlen);
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
    double bw_n = part_bw(g, n), bw_N = part_bw(g, N);
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
        t = full * pack_factor(k, N, bps, 1) + (rest > 0 ? pack_factor(k, N, rest, 1) : 0);
        t = s * bw_N / bw_n + (1 - s) * t;
    }
    return k->dur_us * (t > 1 ? t : 1);
}

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
    if (q->mode == MOSAIC_MODE_PARTITIONED) {
        /* Both start at launch on their own SMs; each runs f times slower
         * while the other runs (inter-SM model: the full-overlap factor),
         * then alone at its isolated speed. A co-runner on other SMs only
         * takes memory bandwidth away: f >= 1 (the forest, fitted to noisy
         * labels, dips below 1 where it extrapolates, e.g. a split of
         * 128/4 SMs). */
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
        return 0;
    }
    {
        /* shared: the inter-SM factor of each at an even split, then the
         * timeline, then the residual model */
        double ia = 1, ib = 1;
        float xa[MOSAIC__NF_SHARED], xb[MOSAIC__NF_SHARED];
        if (comp & MOSAIC_PC_INTER) {
            ia = inter_factor(p, q->a, N, iso_a, q->b, N, iso_b);
            ib = inter_factor(p, q->b, N, iso_b, q->a, N, iso_a);
        }
        mosaic__timeline_shared(g, &p->coef, q->a, q->b, q->b_first, iso_a, iso_b,
                               ia, ib, comp, res, xa, xb);
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
