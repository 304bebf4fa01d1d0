/*
 * mosaic-zoo corun-offset: co-runs of two kernels of one process where the
 * second ("the follower") starts a chosen delay after the first ("the
 * leader") has been dispatched on the GPU (issue 14), against the same
 * kernels alone under the same protocol.
 *
 *   mosaic-zoo corun-offset --pairs FILE [--mode shared|partitioned]
 *       [--split X] [--order ab|ba|both] [--delays LIST] [--repeats R]
 *       [--gate-us US] [--peer-timeout-ms MS]
 *
 * Each round is gated like `corun` (a one-block gate kernel on a third
 * stream; both streams wait on its event), then runs the launch offset
 * protocol of offset.h: the leader's stream marks and launches its kernel,
 * the follower's stream spins until mark + delay and launches its kernel;
 * events around each kernel give its duration and its start after the gate,
 * as in `corun`. Order ab: A leads (delay_us = start(B) - start(A) >= 0);
 * ba: B leads (delay_us <= 0). A pair's rounds (isolated protocol rounds for
 * variants not measured yet, then every order and delay, a warm-up and R
 * repeats each) are enqueued at once, each round's gate waiting for the
 * previous round's kernels, and synchronised once: the host enqueues far
 * ahead, so no gate expires for want of host speed.
 *
 * Records: one `corun_offset` per pair, order and delay, with every field
 * of a `corun` record (docs/dataset.md) and delay_spec, delay_us,
 * offset_meas_us (= start_offset_us), offset_gpu_us (the same offset from
 * %globaltimer: the follower's release minus the leader's mark, the
 * measure the two-process runs must use), iso_sync_*_us (each kernel alone
 * under the protocol in the same role) and slowdown_sync_*.
 */

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offset.h"
#include "offset_plan.h"
#include "offset_run.h"
#include "zoo.h"
#include "zoo_cmds.h"
#include "zoo_corun.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"
#include "zoo_streams.h"
#include "zoo_timing.h"

/*
 * Enqueues rounds [0, n) of X->rounds on A's stream st[0] and B's st[1],
 * each behind its own gate, and waits for them. lead_iso_us[side] resolves
 * relative delays.
 */
static int off_local_batch(struct off_run *X, struct zoo_inst *in[2],
                           cudaStream_t st[2], const double lead_iso_us[2],
                           int n, double expect_us)
{
    struct zoo_step steps[ZOO_ROUND_MAX_STEPS];
    int rc = 0, k, j, s, n_st;
    float ms = 0;

    CKZ(off_events(X, 5 * n));
    for (k = 0; k < n; k++) {
        const struct zoo_round *r = &X->rounds[k];
        cudaEvent_t *e = &X->ev[5 * k];
        unsigned long long abs_ns, rel_ns;
        cudaError_t q;

        off_delay_ns(X, r, lead_iso_us[r->leader], &abs_ns, &rel_ns);
        if (k > 0) {
            /* The next gate starts once both kernels of this round ended. */
            CK(cudaStreamWaitEvent(g_gate_stream, X->ev[5 * k - 3], 0));
            CK(cudaStreamWaitEvent(g_gate_stream, X->ev[5 * k - 1], 0));
        }
        /* The shared gate, then this round's own event behind it. */
        CKZ(gate_launch());
        CK(cudaEventRecord(e[0], g_gate_stream));
        /* zoo_round_steps puts both halves of the handshake before either
         * measured kernel (offset_plan.h says why). */
        n_st = zoo_round_steps(r, steps);
        for (j = 0; j < n_st; j++) {
            s = steps[j].side;
            switch (steps[j].op) {
            case ZOO_STEP_WAIT_GATE:
                CK(cudaStreamWaitEvent(st[s], e[0], 0));
                break;
            case ZOO_STEP_SYNC:
                if (s == r->leader)
                    CKZ(zoo_sync_lead(X->sync, r->seq, 1, rel_ns, 0,
                                      X->timeout_ns, &X->drec[2 * k + s],
                                      st[s]));
                else
                    CKZ(zoo_sync_follow(X->sync, r->seq, abs_ns,
                                        X->timeout_ns, &X->drec[2 * k + s],
                                        st[s]));
                break;
            case ZOO_STEP_EV_START:
                CK(cudaEventRecord(e[1 + 2 * s], st[s]));
                break;
            case ZOO_STEP_KERNEL:
                CKZ(launch_one(in[s], st[s]));
                break;
            default:
                CK(cudaEventRecord(e[2 + 2 * s], st[s]));
                break;
            }
        }
        q = cudaEventQuery(e[0]);
        if (q != cudaSuccess && q != cudaErrorNotReady)
            CK(q);
        X->res[k].expired = q == cudaSuccess;
    }
    CKZ(wait_stream_for(st[0], 1e-6 * expect_us));
    CKZ(wait_stream_for(st[1], 1e-6 * expect_us));
    CKZ(wait_stream(g_gate_stream));
    CK(cudaMemcpy(X->hrec, X->drec, 2 * (size_t)n * sizeof(*X->hrec),
                  cudaMemcpyDeviceToHost));
    for (k = 0; k < n; k++) {
        cudaEvent_t *e = &X->ev[5 * k];

        for (s = 0; s < 2; s++) {
            CK(cudaEventElapsedTime(&ms, e[0], e[1 + 2 * s]));
            X->res[k].t_s[s] = 1e3 * ms;
            CK(cudaEventElapsedTime(&ms, e[0], e[2 + 2 * s]));
            X->res[k].t_e[s] = 1e3 * ms;
            X->res[k].rec[s] = X->hrec[2 * k + s];
        }
    }
out:
    return rc;
}

/*
 * Folds a batch's isolated rounds into X->iso. vi[side]: the variants. A
 * (variant, side, role) with a failed round is forgotten (no samples, and
 * the planner measures it again with the variant's next pair): otherwise
 * one failed pair would leave every later row of the variant without its
 * iso_sync baseline, as on the H200 run of 2026-12-01. One process only:
 * two processes must keep computing the same schedule.
 */
static void off_collect_iso(struct off_run *X, const int vi[2], int n)
{
    int k, touched[8], n_t = 0, i;

    for (k = 0; k < n; k++) {
        const struct zoo_round *r = &X->rounds[k];
        const struct off_res *o = &X->res[k];
        int s = r->iso_side, key, role;
        struct off_iso *e;

        if (r->kind != ZOO_ROUND_ISO || r->warm)
            continue;
        role = off_role(r, s);
        key = zoo_plan_iso_key(&X->plan, vi[s], s, role);
        e = &X->iso[key];
        for (i = 0; i < n_t && touched[i] != key; i++) {
        }
        if (i == n_t && n_t < 8)
            touched[n_t++] = key;
        if (o->rec[0].status != ZOO_SYNC_OK ||
            o->rec[1].status != ZOO_SYNC_OK) {
            e->bad++;
            continue;
        }
        if (e->n < ZOO_OFF_MAX_REPEATS)
            e->samples[e->n++] = o->t_e[s] - o->t_s[s];
    }
    for (i = 0; i < n_t; i++) {
        struct off_iso *e = &X->iso[touched[i]];

        if (e->bad) {
            fprintf(stderr, "mosaic-zoo: corun-offset: %d isolated protocol "
                    "rounds of %s failed; measured again with its next "
                    "pair\n", e->bad,
                    zoo_variants[touched[i] / 4].name);
            memset(e, 0, sizeof(*e));
            zoo_plan_forget(&X->plan, touched[i]);
            continue;
        }
        e->med = median_of(e->samples, e->n);
        minmax_of(e->samples, e->n, &e->mn, &e->mx);
    }
}

static void j_iso_fields(const struct iso_ent *ie, const struct off_iso *is,
                         const char *side)
{
    char k[48];

#define SK(name) (snprintf(k, sizeof(k), name, side), k)
    if (ie && !ie->rc) {
        j_num(SK("iso_%s_us"), ie->t.median);
        j_str(SK("iso_%s_method"), ie->t.method);
        j_num(SK("iso_gated_%s_us"), ie->gated_med);
        j_str(SK("check_%s"), ie->t.check < 0 ? "none"
                              : ie->t.check ? "fail" : "pass");
    }
    if (is) {
        j_num(SK("iso_sync_%s_us"), is->med);
        j_num(SK("iso_sync_%s_min_us"), is->mn);
        j_num(SK("iso_sync_%s_max_us"), is->mx);
        j_nums(SK("iso_sync_%s_samples_us"), is->samples, is->n);
    }
#undef SK
}

/* One corun_offset record: rounds of order `leader` and delay di. */
static void off_emit(struct off_run *X, struct corun_state *C, int va, int vb,
                     int leader, int di, const struct iso_ent *iso[2],
                     int n, int ok)
{
    double a[ZOO_OFF_MAX_REPEATS], b[ZOO_OFF_MAX_REPEATS];
    double off[ZOO_OFF_MAX_REPEATS], offg[ZOO_OFF_MAX_REPEATS];
    double ea[ZOO_OFF_MAX_REPEATS], eb[ZOO_OFF_MAX_REPEATS];
    double appl[ZOO_OFF_MAX_REPEATS];
    const struct off_iso *is_a, *is_b;
    double lead_iso, req, ma, mb, med_off;
    int k, m = 0, expired = 0, late = 0, failed = 0;

    is_a = off_iso_of(X, va, 0, leader == 0 ? 0 : 1);
    is_b = off_iso_of(X, vb, 1, leader == 1 ? 0 : 1);
    lead_iso = iso[leader] && !iso[leader]->rc ? iso[leader]->gated_med : NAN;
    req = off_requested_us(X, di, leader, lead_iso);
    for (k = 0; ok && k < n; k++) {
        const struct zoo_round *r = &X->rounds[k];
        const struct off_res *o = &X->res[k];
        const struct zoo_sync_rec *f = &o->rec[1 - leader];
        const struct zoo_sync_rec *l = &o->rec[leader];
        double first;

        if (r->kind != ZOO_ROUND_CORUN || r->leader != leader ||
            r->delay_i != di || r->warm)
            continue;
        if ((f->status != ZOO_SYNC_OK && f->status != ZOO_SYNC_LATE) ||
            l->status != ZOO_SYNC_OK) {
            failed++;
            continue;
        }
        late += f->status == ZOO_SYNC_LATE;
        expired += o->expired;
        first = o->t_s[0] < o->t_s[1] ? o->t_s[0] : o->t_s[1];
        a[m] = o->t_e[0] - o->t_s[0];
        b[m] = o->t_e[1] - o->t_s[1];
        off[m] = o->t_s[1] - o->t_s[0];
        offg[m] = 1e-3 * ((double)f->t_release - (double)l->t_release) *
                  (leader ? -1.0 : 1.0);
        ea[m] = o->t_e[0] - first;
        eb[m] = o->t_e[1] - first;
        appl[m] = 1e-3 * (double)f->delay_ns;
        m++;
    }
    if (ok && failed) {
        seterr("%d rounds failed: a protocol wait ran past "
               "--peer-timeout-ms (%.0f ms), so the two streams did not run "
               "at the same time", failed, g_opt.peer_timeout_ms);
        ok = 0;
    }
    j_begin("corun_offset");
    j_result(ok && m > 0);
    j_str("mode", g_opt.partitioned ? "partitioned" : "shared");
    j_int("sms_a", C->a.sms);
    j_int("sms_b", C->b.sms);
    if (g_opt.partitioned)
        j_int("split_requested", g_opt.split);
    else
        j_null("split_requested");
    j_str("order", leader ? "ba" : "ab");
    j_str("leader", leader ? "b" : "a");
    j_str("a", zoo_variants[va].name);
    j_str("b", zoo_variants[vb].name);
    j_str("family_a", zoo_variants[va].family);
    j_str("family_b", zoo_variants[vb].family);
    j_str("category_a", zoo_category_name(zoo_variants[va].category));
    j_str("category_b", zoo_category_name(zoo_variants[vb].category));
    j_str("method", "event_gated_offset");
    j_int("repeats", m);
    j_int("warmup", 1);
    j_num("gate_us", g_opt.gate_us);
    j_str("delay_spec", X->delays[di].spec);
    j_num("delay_us", req);
    j_iso_fields(iso[0], is_a, "a");
    j_iso_fields(iso[1], is_b, "b");
    if (!ok || m == 0) {
        j_end();
        return;
    }
    med_off = median_of(off, m);
    j_corun_durations(a, b, m, &ma, &mb);
    if (iso[0] && !iso[0]->rc) {
        j_num("slowdown_a", ma / iso[0]->t.median);
        j_num("slowdown_gated_a", ma / iso[0]->gated_med);
    }
    if (iso[1] && !iso[1]->rc) {
        j_num("slowdown_b", mb / iso[1]->t.median);
        j_num("slowdown_gated_b", mb / iso[1]->gated_med);
    }
    if (is_a)
        j_num("slowdown_sync_a", ma / is_a->med);
    if (is_b)
        j_num("slowdown_sync_b", mb / is_b->med);
    j_num("start_offset_us", med_off);
    j_num("offset_meas_us", med_off);
    j_num("offset_err_us", med_off - req);
    j_num("offset_gpu_us", median_of(offg, m));
    j_num("delay_applied_us", median_of(appl, m));
    j_num("end_a_us", median_of(ea, m));
    j_num("end_b_us", median_of(eb, m));
    j_int("gate_expired", expired);
    j_int("sync_late", late);
    j_nums("corun_a_samples_us", a, m);
    j_nums("corun_b_samples_us", b, m);
    j_nums("start_offset_samples_us", off, m);
    j_nums("offset_gpu_samples_us", offg, m);
    j_nums("end_a_samples_us", ea, m);
    j_nums("end_b_samples_us", eb, m);
    j_end();
}

/* GPU time a batch is expected to take, for the hang detector. */
static double off_expect_us(const struct off_run *X, int n,
                            const double iso_us[2])
{
    double t = 0, d_max = 0;
    int k;

    for (k = 0; k < X->n_delays; k++) {
        double d = X->delays[k].us +
                   X->delays[k].x * (iso_us[0] > iso_us[1] ? iso_us[0]
                                                           : iso_us[1]);

        if (d > d_max)
            d_max = d;
    }
    for (k = 0; k < n; k++)
        t += g_opt.gate_us + iso_us[0] + iso_us[1] + d_max + 20.0;
    return t;
}

static void off_measure(struct off_run *X, struct corun_state *C, int va,
                        int vb)
{
    struct zoo_inst *in[2] = {NULL, NULL};
    const struct iso_ent *iso[2] = {NULL, NULL};
    cudaStream_t st[2] = {C->a.s[0], C->b.s[0]};
    double lead_iso[2] = {NAN, NAN}, iso_us[2] = {0, 0};
    int vi[2] = {va, vb};
    int rc = 0, n, o, d, s;

    clear_err();
    fprintf(stderr, "mosaic-zoo: corun-offset %s + %s\n",
            zoo_variants[va].name, zoo_variants[vb].name);
    n = zoo_plan_pair(&X->plan, va, vb, g_opt.order_ab, g_opt.order_ba, X->n_delays,
                      C->repeats, 0, X->rounds, ZOO_OFF_MAX_ROUNDS);
    if (n < 0) {
        seterr("a pair needs more than %d rounds: fewer --delays or "
               "--repeats", ZOO_OFF_MAX_ROUNDS);
        rc = -1;
        goto out;
    }
    in[0] = cache_get(C, va, 0, NULL);
    if (!in[0]) {
        rc = -1;
        goto out;
    }
    in[1] = cache_get(C, vb, va == vb ? 1 : 0, &C->cache[va * 2]);
    if (!in[1]) {
        rc = -1;
        goto out;
    }
    for (s = 0; s < 2; s++) {
        const struct iso_ent *e = iso_get(C, vi[s],
                                          s && g_opt.partitioned ? 1 : 0, in[s]);

        iso[s] = e;
        if (e->rc) {
            rc = e->rc;
            goto out;
        }
        lead_iso[s] = e->gated_med;
        iso_us[s] = e->gated_med;
    }
    CKZ(zoo_sync_reset(X->sync));
    CKZ(off_local_batch(X, in, st, lead_iso, n, off_expect_us(X, n, iso_us)));
    off_collect_iso(X, vi, n);
out:
    for (o = 0; o < 2; o++) {
        if (!(o ? g_opt.order_ba : g_opt.order_ab))
            continue;
        for (d = 0; d < X->n_delays; d++)
            off_emit(X, C, va, vb, o, d, iso, n, rc == 0);
    }
    if (rc)
        recover();
}

int cmd_corun_offset(void)
{
    struct corun_state C;
    struct off_run X;
    int *pairs = NULL;
    int n_pairs = 0, i, rc = 0;

    memset(&C, 0, sizeof(C));
    C.repeats = g_opt.repeats ? g_opt.repeats : 5;
    /* The same default split as corun's: half the SMs, rounded down to the
     * green contexts' granularity of 8. */
    if (g_opt.partitioned && g_opt.split == 0)
        g_opt.split = (g_dev.sm_count / 2) / 8 * 8;
    clear_err();
    if (off_run_init(&X, !g_opt.partitioned) ||
        (rc = zoo_sync_alloc(&X.sync)) != 0) {
        if (rc)
            seterr("allocating the sync block: %s", zerr(rc));
        error_record(g_err);
        off_run_fini(&X);
        return -1;
    }
    if (read_pairs(g_opt.pairs_path, &pairs, &n_pairs)) {
        off_run_fini(&X);
        return -1;
    }
    C.cache = (struct cache_ent *)calloc(2 * (size_t)zoo_n_variants + 2,
                                         sizeof(struct cache_ent));
    C.iso = (struct iso_ent *)calloc(2 * (size_t)zoo_n_variants + 2,
                                     sizeof(struct iso_ent));
    if (!C.cache || !C.iso) {
        error_record("out of host memory");
        goto out;
    }
    if (cfg_open_corun_pair(&C.a, &C.b, g_opt.partitioned, g_opt.split))
        goto out;
    {
        cudaStream_t ps[2] = {C.a.s[0], C.b.s[0]};

        rc = zoo_sync_preload(ps, 2);
        if (rc) {
            seterr("loading the offset protocol's kernels: %s", zerr(rc));
            error_record(g_err);
            goto out;
        }
    }
    for (i = 0; i < n_pairs && !should_stop(); i++)
        off_measure(&X, &C, pairs[2 * i], pairs[2 * i + 1]);
out:
    for (i = 0; C.cache && i < 2 * zoo_n_variants; i++)
        if (C.cache[i].live)
            cache_evict(&C, &C.cache[i]);
    cfg_close(&C.a);
    cfg_close(&C.b);
    free(C.cache);
    free(C.iso);
    free(pairs);
    off_run_fini(&X);
    return 0;
}
