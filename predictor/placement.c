/*
 * Thread-block placement (issue 4, docs/placement.md): exact occupancy,
 * waves, and how many of a second kernel's blocks fit beside the first's.
 */
#include <math.h>

#include "predictor_internal.h"

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
