/*
 * The models' feature rows: the inter-SM row of a kernel beside a co-runner
 * and the shared-mode residual row built from the timeline's result.
 */
#include <math.h>

#include "feature_list.h"
#include "placement.h"

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
    return d * mosaic__gpu_copy_bw(g, sms) / mosaic__gpu_copy_bw(g, g->sm_count);
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
        double full = mosaic__gpu_copy_bw(g, n);
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

void mosaic__feat_shared(const struct mosaic_gpu_desc *g,
                         const struct mosaic_pkernel *a, const struct mosaic_pkernel *b,
                         int b_first, double iso_a, double iso_b,
                         const struct mosaic_pred_result *res, float *xa, float *xb)
{
    int fi = b_first ? 1 : 0;
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
        x[32] = (float)mosaic__place_intra_term(me, me->bps, ot, room_ot);
        x[33] = (float)(me->issue + ot->issue);
        x[34] = (float)liso[i];
        x[35] = (float)liso[1 - i];
        x[36] = (float)log(iso_ot / iso_me);
        x[37] = (float)((double)me->grid / ((double)me->bps * n));
        x[38] = (float)(me->smem_cfg == ot->smem_cfg);
        x[39] = (float)log(res->k[i].inter_sm);
        x[40] = (float)log(res->k[1 - i].duration_us / res->k[i].duration_us);
        x[41] = (float)ot->lgrid;
        x[42] = (float)mosaic__place_busiest(ot);
        x[43] = (float)mosaic__place_busiest(me);
        {
            /* warp-scheduler share on an SM holding both: each ready
             * warp gets about an equal turn, so a kernel with few
             * warps beside one with many gets a small share of issue;
             * its slowdown when issue-bound is its demand over that
             * share (both at their isolated densities) */
            double wm = mosaic__place_density(me, n) * me->warps, wo = mosaic__place_density(ot, n) * ot->warps;
            double share = wm / (wm + wo);
            x[44] = (float)wm;
            x[45] = (float)wo;
            x[46] = (float)(mosaic__place_busiest(me) / share);
        }
    }
}
