/*
 * The models' feature rows (the lists are in feature_list.h): the inter-SM
 * row of a kernel beside a co-runner, the shared-mode residual row built
 * from the timeline's result, and the "features" array that ties a model
 * file to the list it was trained with.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core.h"
#include "feature_list.h"
#include "placement.h"

/* kfeat fills one kernel's ten features at an offset: both rows must hold
 * self's and then other's block, in that order, at their start. */
_Static_assert(MOSAIC__FI_self_sms_frac == 0 &&
                   (int)MOSAIC__FI_other_sms_frac == (int)MOSAIC__NF_KERNEL &&
                   MOSAIC__FS_self_sms_frac == 0 &&
                   (int)MOSAIC__FS_other_sms_frac == (int)MOSAIC__NF_KERNEL,
               "each row starts with self's and then other's kernel features");

#define MOSAIC__FEAT_ENTRY(who, name, meaning, unit, mono) {#who "_" #name, meaning, unit, mono},
const struct mosaic__feature mosaic__features_inter[MOSAIC__NF_INTER] = {
    MOSAIC__FEATURES_INTER(MOSAIC__FEAT_ENTRY)};
const struct mosaic__feature mosaic__features_shared[MOSAIC__NF_SHARED] = {
    MOSAIC__FEATURES_SHARED(MOSAIC__FEAT_ENTRY)};

/* One kernel's ten features (MOSAIC__FEATURES_KERNEL) into x, on sms of the
 * GPU's n SMs. */
static void kfeat(const struct mosaic_pkernel *k, int sms, int n, float *x)
{
    x[MOSAIC__FK_sms_frac] = (float)sms / (float)n;
    x[MOSAIC__FK_dram_rd] = (float)k->dram_rd;
    x[MOSAIC__FK_dram_wr] = (float)k->dram_wr;
    x[MOSAIC__FK_l2_rd] = (float)k->l2_rd;
    x[MOSAIC__FK_l2_wr] = (float)k->l2_wr;
    x[MOSAIC__FK_warps_elig] = (float)k->warps_elig;
    x[MOSAIC__FK_stall_lsb] = (float)k->stall_lsb;
    x[MOSAIC__FK_issue_idle] = (float)(1 - k->issue);
    x[MOSAIC__FK_log_c2lsu] = (float)k->lc2lsu;
    x[MOSAIC__FK_sectors_per_req] = (float)k->spr;
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
    kfeat(self, sms_self, n, x + MOSAIC__FI_self_sms_frac);
    kfeat(other, sms_other, n, x + MOSAIC__FI_other_sms_frac);
    /* demand scaled to the SMs each side has (bandwidth per SM as profiled) */
    x[MOSAIC__FI_pair_dram_demand] = (float)((self->dram_rd + self->dram_wr) * sms_self / n +
                    (other->dram_rd + other->dram_wr) * sms_other / n);
    x[MOSAIC__FI_pair_l2_demand] = (float)((self->l2_rd + self->l2_wr) * sms_self / n +
                    (other->l2_rd + other->l2_wr) * sms_other / n);
    x[MOSAIC__FI_self_waves] = (float)mosaic__place_waves(self, sms_self);
    x[MOSAIC__FI_other_waves] = (float)mosaic__place_waves(other, sms_other);
    {
        /* each side's DRAM demand on its SMs: the bytes per run over the
         * isolated duration there (what its SMs actually reach) */
        double full = mosaic__gpu_copy_bw(g, n);
        double ds = dram_on(g, self, sms_self, iso_self);
        double dth = dram_on(g, other, sms_other, iso_other);
        x[MOSAIC__FI_self_dram_share] = (float)(ds / full);
        x[MOSAIC__FI_other_dram_share] = (float)(dth / full);
        x[MOSAIC__FI_pair_dram_share] = (float)((ds + dth) / full);
        x[MOSAIC__FI_self_mem_wait] = (float)(self->stall_lsb * (1 - self->issue));
        /* latency-bound kernels: the co-runner's DRAM stream evicts what
         * self found in L2 (its hits turn into DRAM misses), and its L2
         * traffic queues ahead of self's requests; both hurt in proportion
         * to how much self waits on memory (long-scoreboard stalls per
         * issue slot left idle) */
        {
            double h = self->l2_hit > 1 ? 1 : self->l2_hit < 0 ? 0 : self->l2_hit;
            double lat = self->stall_lsb * (1 - self->issue);
            x[MOSAIC__FI_self_l2_hit] = (float)h;
            x[MOSAIC__FI_self_l2_evict] = (float)(h * lat * dth / full);
            x[MOSAIC__FI_self_l2_queue] =
                (float)(lat * (other->l2_rd + other->l2_wr) * sms_other / n / 1000);
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
            x[MOSAIC__FI_other_inflight_share] = (float)sh;
            x[MOSAIC__FI_other_inflight_dram] = (float)(sh * dth / full);
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
        kfeat(me, n, n, x + MOSAIC__FS_self_sms_frac);
        kfeat(ot, n, n, x + MOSAIC__FS_other_sms_frac);
        x[MOSAIC__FS_self_first] = (float)me_first;
        x[MOSAIC__FS_self_waves] = (float)mosaic__place_waves(me, n);
        x[MOSAIC__FS_other_waves] = (float)mosaic__place_waves(ot, n);
        x[MOSAIC__FS_self_bps] = (float)me->bps;
        x[MOSAIC__FS_other_bps] = (float)ot->bps;
        x[MOSAIC__FS_self_room] = (float)room_me;
        x[MOSAIC__FS_other_room] = (float)room_ot;
        x[MOSAIC__FS_self_log_slowdown] = (float)lsl[i];
        x[MOSAIC__FS_other_log_slowdown] = (float)lsl[1 - i];
        x[MOSAIC__FS_self_log_placement] = (float)log(res->k[i].placement);
        x[MOSAIC__FS_pair_coresident] = (float)res->coresident;
        x[MOSAIC__FS_self_overlap] = (float)(res->overlap_us / iso_me);
        x[MOSAIC__FS_self_intra_term] = (float)mosaic__place_intra_term(me, me->bps, ot, room_ot);
        x[MOSAIC__FS_pair_issue_sum] = (float)(me->issue + ot->issue);
        x[MOSAIC__FS_self_log_iso] = (float)liso[i];
        x[MOSAIC__FS_other_log_iso] = (float)liso[1 - i];
        x[MOSAIC__FS_pair_log_iso_ratio] = (float)log(iso_ot / iso_me);
        x[MOSAIC__FS_self_fill] = (float)((double)me->grid / ((double)me->bps * n));
        x[MOSAIC__FS_pair_same_smem_cfg] = (float)(me->smem_cfg == ot->smem_cfg);
        x[MOSAIC__FS_self_log_inter] = (float)log(res->k[i].inter_sm);
        x[MOSAIC__FS_pair_log_duration_ratio] =
            (float)log(res->k[1 - i].duration_us / res->k[i].duration_us);
        x[MOSAIC__FS_other_log_grid] = (float)ot->lgrid;
        x[MOSAIC__FS_other_busiest] = (float)mosaic__place_busiest(ot);
        x[MOSAIC__FS_self_busiest] = (float)mosaic__place_busiest(me);
        {
            /* warp-scheduler share on an SM holding both: each ready
             * warp gets about an equal turn, so a kernel with few
             * warps beside one with many gets a small share of issue;
             * its slowdown when issue-bound is its demand over that
             * share (both at their isolated densities) */
            double wm = mosaic__place_density(me, n) * me->warps;
            double wo = mosaic__place_density(ot, n) * ot->warps;
            double share = wm / (wm + wo);
            x[MOSAIC__FS_self_ready_warps] = (float)wm;
            x[MOSAIC__FS_other_ready_warps] = (float)wo;
            x[MOSAIC__FS_self_issue_need] = (float)(mosaic__place_busiest(me) / share);
        }
    }
}

int mosaic__features_check(const cJSON *root, const char *path,
                           const struct mosaic__feature *list, int n, char *err,
                           size_t errlen)
{
    const cJSON *arr, *it;
    int i = 0, rc = 0;

    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "%s: not a JSON object (malformed or truncated)", path);
        return MOSAIC_EINVAL;
    }
    arr = cJSON_GetObjectItemCaseSensitive(root, "features");
    if (!cJSON_IsArray(arr)) {
        snprintf(err, errlen,
                 "%s: field \"features\" missing or not an array: the model does not say "
                 "which features it was trained with (retrain it with mosaic-train)", path);
        return MOSAIC_EINVAL;
    }
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it)) {
            snprintf(err, errlen, "%s: field features[%d] is not a string", path, i);
            rc = MOSAIC_EINVAL;
            break;
        }
        if (i >= n) {
            snprintf(err, errlen,
                     "%s: field features[%d] \"%s\" is extra: this predictor's model takes "
                     "%d features (retrain the model with mosaic-train)",
                     path, i, it->valuestring, n);
            rc = MOSAIC_EINVAL;
            break;
        }
        if (strcmp(it->valuestring, list[i].name) != 0) {
            snprintf(err, errlen,
                     "%s: field features[%d] is \"%s\", this predictor expects \"%s\" "
                     "(the model was trained with another feature list: retrain it with "
                     "mosaic-train)",
                     path, i, it->valuestring, list[i].name);
            rc = MOSAIC_EINVAL;
            break;
        }
        i++;
    }
    if (!rc && i < n) {
        snprintf(err, errlen,
                 "%s: field features has %d entries, feature %d \"%s\" is missing (the "
                 "model was trained with another feature list: retrain it with mosaic-train)",
                 path, i, i, list[i].name);
        rc = MOSAIC_EINVAL;
    }
    return rc;
}

int mosaic__features_stamp(const char *path, const struct mosaic__feature *list, int n,
                           char *err, size_t errlen)
{
    char *txt, *brace;
    FILE *f;
    int rc, ok;

    /* The model files are XGBoost's, saved at their float precision: the
     * array is inserted as text so that nothing else is re-serialised. */
    rc = mosaic__read_file(path, 64L << 20, &txt, err, errlen);
    if (rc) return rc;
    brace = strchr(txt, '{');
    if (!brace || strstr(txt, "\"features\"")) {
        snprintf(err, errlen, "%s: %s", path,
                 brace ? "already has a \"features\" array" : "not a JSON object");
        free(txt);
        return MOSAIC_EINVAL;
    }
    f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        free(txt);
        return MOSAIC_EIO;
    }
    ok = fwrite(txt, 1, (size_t)(brace + 1 - txt), f) == (size_t)(brace + 1 - txt) &&
         fputs("\"features\":[", f) >= 0;
    for (int i = 0; ok && i < n; i++)
        ok = fprintf(f, "%s\"%s\"", i ? "," : "", list[i].name) > 0;
    ok = ok && fputs("],", f) >= 0 && fputs(brace + 1, f) >= 0;
    free(txt);
    if (fclose(f) != 0 || !ok) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return MOSAIC_EIO;
    }
    return 0;
}
