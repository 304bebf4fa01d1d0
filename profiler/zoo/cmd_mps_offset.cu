/*
 * mosaic-zoo mps-offset: the offset co-runs of corun-offset with the two
 * kernels in two processes (run both under the MPS control daemon, or they
 * are time-sliced, not concurrent), issue 14.
 *
 *   mosaic-zoo mps-offset --role a --ipc-file F --pairs FILE [options] &
 *   mosaic-zoo mps-offset --role b --ipc-file F --pairs FILE [options]
 *
 * Both processes get the same --pairs, --delays, --order and --repeats:
 * process a runs the A variant of every pair, process b the B variant, and
 * they take part in the same rounds of the protocol of offset.h (whose
 * schedule each computes, offset_plan.h; process a writes its hash into the
 * handle file and process b refuses a different one). Process a allocates
 * the sync block and writes its IPC handle to F (mode 0600); process b
 * opens it. Before each pair a control round, led by process a, says go or
 * stop (process a's --time-budget decides for both). Isolated baselines are
 * the protocol's rounds with the other process's kernel absent: the same
 * gating, the same process arrangement. There is no graph-replay timing
 * here (the two processes would time each other's work); the one-process
 * runs of the same pairs give it.
 *
 * Offsets come from %globaltimer, one clock for both processes: the
 * follower's protocol kernel sees the leader's mark and writes its own
 * release, so the follower's record carries offset_meas_us (start(B) -
 * start(A)); each record also has its kernel's start on %globaltimer per
 * repeat (start_gpu_ns_samples). Durations are events around the kernel
 * inside the process, as in every other zoo record. Every protocol wait is
 * bounded (--peer-timeout-ms; the first control round waits
 * --handle-wait-s for the peer to start): a dead peer makes the rounds
 * fail, `ok` false, and both sides stop instead of hanging.
 *
 * Records (per process): `mps_offset` per pair, order and delay; one
 * `mps_offset_iso` per variant and role; meta and end as always.
 */

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

#define ZOO_CMD_GO   1ull
#define ZOO_CMD_STOP 2ull

struct mps_off {
    struct off_run X;
    int me;                         /* 0: process a, 1: process b */
    struct xcfg c;
    /* corun's instance cache (only C.cache is used): a variant that comes
     * back in a later pair is not set up again. */
    struct corun_state C;
    struct zoo_inst *inst;          /* this pair's, or NULL (inst_err) */
    char inst_err[512];
    double dur[ZOO_OFF_MAX_ROUNDS];
    unsigned long long start_timeout_ns;
    int peer_lost;
};

/* Enqueues rounds [k0, k1) for this process's side and waits for them. */
static int mps_batch(struct mps_off *M, int vi_me, int k0, int k1,
                     double expect_us)
{
    struct off_run *X = &M->X;
    struct zoo_inst *in = M->inst;
    cudaStream_t st = M->c.s[0];
    const struct off_iso *lead_iso = off_iso_of(X, vi_me, M->me, 0);
    int rc = 0, k;
    float ms = 0;

    CKZ(off_events(X, 2 * (k1 - k0)));
    for (k = k0; k < k1; k++) {
        const struct zoo_round *r = &X->rounds[k];
        cudaEvent_t *e = &X->ev[2 * (k - k0)];
        unsigned long long abs_ns, rel_ns;
        unsigned long long tmo = r->kind == ZOO_ROUND_CONTROL
                                     ? M->start_timeout_ns : X->timeout_ns;

        off_delay_ns(X, r, lead_iso ? lead_iso->med : NAN, &abs_ns, &rel_ns);
        if (r->leader == M->me)
            CKZ(zoo_sync_lead(X->sync, r->seq, 1, rel_ns,
                              r->kind == ZOO_ROUND_CONTROL
                                  ? (should_stop() ? ZOO_CMD_STOP
                                                   : ZOO_CMD_GO) : 0,
                              tmo, &X->drec[k], st));
        else
            CKZ(zoo_sync_follow(X->sync, r->seq, abs_ns, tmo, &X->drec[k],
                                st));
        CK(cudaEventRecord(e[0], st));
        if (r->run[M->me] && in)
            CKZ(launch_one(in, st));
        CK(cudaEventRecord(e[1], st));
    }
    /* The peer may still be setting up its variant: allow the protocol's
     * timeouts on top of the work. */
    CKZ(wait_stream_for(st, 1e-6 * expect_us +
                                1e-9 * (double)X->timeout_ns * 2));
    CK(cudaMemcpy(X->hrec + k0, X->drec + k0,
                  (size_t)(k1 - k0) * sizeof(*X->hrec),
                  cudaMemcpyDeviceToHost));
    for (k = k0; k < k1; k++) {
        cudaEvent_t *e = &X->ev[2 * (k - k0)];

        CK(cudaEventElapsedTime(&ms, e[0], e[1]));
        M->dur[k] = 1e3 * ms;
        X->res[k].rec[M->me] = X->hrec[k];
        if (X->hrec[k].status == ZOO_SYNC_TIMEOUT ||
            X->hrec[k].status == ZOO_SYNC_PEER_DEAD)
            M->peer_lost = 1;
    }
out:
    return rc;
}

/* This process's variant for the pair, from the cache; on failure the
 * rounds still run, without it (the peer must see every round). */
static void mps_inst(struct mps_off *M, int vi)
{
    clear_err();
    M->inst = cache_get(&M->C, vi, 0, NULL);
    if (!M->inst)
        copy_str(M->inst_err, sizeof(M->inst_err), g_err);
    else
        M->inst_err[0] = 0;
}

static void mps_iso_fold(struct mps_off *M, int vi, int k0, int k1)
{
    struct off_run *X = &M->X;
    struct off_iso *e = NULL;
    int k, key = -1, bad = 0;

    for (k = k0; k < k1; k++) {
        const struct zoo_round *r = &X->rounds[k];
        int role;

        if (r->kind != ZOO_ROUND_ISO || r->iso_side != M->me || r->warm)
            continue;
        role = off_role(r, M->me);
        key = zoo_plan_iso_key(&X->plan, vi, M->me, role);
        e = &X->iso[key];
        if (X->res[k].rec[M->me].status != ZOO_SYNC_OK &&
            X->res[k].rec[M->me].status != ZOO_SYNC_LATE) {
            e->bad++;
            bad++;
            continue;
        }
        if (e->n < ZOO_OFF_MAX_REPEATS)
            e->samples[e->n++] = M->dur[k];
    }
    (void)bad;
    for (k = 0; k < 2; k++) {
        e = &X->iso[zoo_plan_iso_key(&X->plan, vi, M->me, k)];
        if (e->n) {
            e->med = median_of(e->samples, e->n);
            minmax_of(e->samples, e->n, &e->mn, &e->mx);
        }
    }
}

static void mps_common_fields(const struct mps_off *M, int va, int vb)
{
    const char *prio = getenv("CUDA_MPS_CLIENT_PRIORITY");
    int vi = M->me ? vb : va;

    j_str("process", M->me ? "b" : "a");
    j_str("a", zoo_variants[va].name);
    j_str("b", zoo_variants[vb].name);
    j_str("variant", zoo_variants[vi].name);
    j_str("family", zoo_variants[vi].family);
    j_str("category", zoo_category_name(zoo_variants[vi].category));
    j_str("category_a", zoo_category_name(zoo_variants[va].category));
    j_str("category_b", zoo_category_name(zoo_variants[vb].category));
    j_str("mps_client_priority", prio ? prio : "0");
    j_bool("mps", getenv("CUDA_MPS_PIPE_DIRECTORY") != NULL);
    j_int("sms", M->c.sms);
    j_int("pid", (long long)getpid());
}

static void mps_emit_iso(const struct mps_off *M, int va, int vb, int role,
                         int ok)
{
    int vi = M->me ? vb : va;
    const struct off_iso *e = &M->X.iso[zoo_plan_iso_key(&M->X.plan, vi,
                                                         M->me, role)];

    j_begin("mps_offset_iso");
    j_result(ok && e->n > 0);
    mps_common_fields(M, va, vb);
    j_str("role", role ? "follower" : "leader");
    j_str("method", "sync_gated_event");
    j_int("repeats", e->n);
    j_int("rounds_failed", e->bad);
    if (e->n) {
        j_num("median_us", e->med);
        j_num("min_us", e->mn);
        j_num("max_us", e->mx);
        j_nums("samples_us", e->samples, e->n);
    }
    j_end();
}

static void mps_emit(struct mps_off *M, int va, int vb, int leader, int di,
                     int k0, int k1, int ok)
{
    struct off_run *X = &M->X;
    double dur[ZOO_OFF_MAX_REPEATS], off[ZOO_OFF_MAX_REPEATS];
    double appl[ZOO_OFF_MAX_REPEATS];
    long long start[ZOO_OFF_MAX_REPEATS];
    int vi = M->me ? vb : va;
    int role = leader == M->me ? 0 : 1;
    const struct off_iso *is = off_iso_of(X, vi, M->me, role);
    const struct off_iso *lead = off_iso_of(X, vi, M->me, 0);
    int k, m = 0, late = 0, failed = 0;
    double req = NAN, med;

    for (k = k0; ok && k < k1; k++) {
        const struct zoo_round *r = &X->rounds[k];
        const struct zoo_sync_rec *s = &X->res[k].rec[M->me];

        if (r->kind != ZOO_ROUND_CORUN || r->leader != leader ||
            r->delay_i != di || r->warm)
            continue;
        if (s->status != ZOO_SYNC_OK && s->status != ZOO_SYNC_LATE) {
            failed++;
            continue;
        }
        late += s->status == ZOO_SYNC_LATE;
        dur[m] = M->dur[k];
        start[m] = (long long)s->t_release;
        /* Only the follower sees both clocks' ends of the offset. */
        off[m] = role ? 1e-3 * ((double)s->t_release - (double)s->t_mark) *
                            (leader ? -1.0 : 1.0)
                      : NAN;
        appl[m] = role ? 1e-3 * (double)s->delay_ns : NAN;
        m++;
    }
    if (ok && failed) {
        seterr("%d rounds' protocol waits failed (peer gone or slower than "
               "--peer-timeout-ms %.0f)", failed, g_opt.peer_timeout_ms);
        ok = 0;
    }
    if (ok && !M->inst) {
        seterr("%s", M->inst_err[0] ? M->inst_err : "variant not set up");
        ok = 0;
    }
    /* The leader knows its own isolated duration (relative delays); the
     * follower knows the delay it applied. */
    if (role == 0)
        req = off_requested_us(X, di, leader, lead ? lead->med : NAN);
    else if (m)
        req = (leader ? -1.0 : 1.0) * median_of(appl, m);
    j_begin("mps_offset");
    j_result(ok && m > 0);
    mps_common_fields(M, va, vb);
    j_str("order", leader ? "ba" : "ab");
    j_str("leader", leader ? "b" : "a");
    j_str("role", role ? "follower" : "leader");
    j_str("method", "sync_gated_event");
    j_str("delay_spec", X->delays[di].spec);
    j_num("delay_us", req);
    j_int("repeats", m);
    j_int("warmup", 1);
    if (is) {
        j_num("iso_sync_us", is->med);
        j_num("iso_sync_min_us", is->mn);
        j_num("iso_sync_max_us", is->mx);
    }
    if (!ok || m == 0) {
        j_end();
        return;
    }
    med = median_of(dur, m);
    j_num("corun_us", med);
    if (is)
        j_num("slowdown_sync", med / is->med);
    if (role) {
        double mo = median_of(off, m);

        j_num("offset_meas_us", mo);
        j_num("offset_err_us", mo - req);
        j_nums("offset_samples_us", off, m);
    }
    j_int("sync_late", late);
    j_nums("corun_samples_us", dur, m);
    j_key("start_gpu_ns_samples");
    j_raw("[", 1);
    for (k = 0; k < m; k++)
        j_fmt(k ? ",%lld" : "%lld", start[k]);
    j_raw("]", 1);
    j_end();
}

static int mps_connect(struct mps_off *M, unsigned long long hash)
{
    struct off_run *X = &M->X;
    struct zoo_sync_peer peer;
    char err[1024];
    int rc = 0;

    err[0] = 0;
    memset(&peer, 0, sizeof(peer));
    if (M->me == 0) {
        CKZ(zoo_sync_alloc(&X->sync));
        CKZ(zoo_sync_export(X->sync, &peer.handle));
        peer.pid = (long long)getpid();
        peer.schedule_hash = hash;
        if (zoo_sync_write_handle(g_opt.ipc_file, &peer, err, sizeof(err))) {
            seterr("%s", err);
            rc = -1;
        }
        goto out;
    }
    if (zoo_sync_read_handle(g_opt.ipc_file, g_opt.handle_wait_s, &peer, err,
                             sizeof(err))) {
        seterr("%s", err);
        rc = -1;
        goto out;
    }
    if (peer.schedule_hash != hash) {
        seterr("--ipc-file %s: process a (pid %lld) runs another schedule "
               "(hash %016llx, this one %016llx): give both processes the "
               "same --pairs, --delays, --order and --repeats", g_opt.ipc_file,
               peer.pid, peer.schedule_hash, hash);
        rc = -1;
        goto out;
    }
    CKZ(zoo_sync_open(&peer.handle, &X->sync));
    if (zoo_sync_check(X->sync)) {
        seterr("--ipc-file %s: the mapped memory is not a zoo sync block",
               g_opt.ipc_file);
        rc = -1;
    }
out:
    return rc;
}

int cmd_mps_offset(void)
{
    struct mps_off *M = (struct mps_off *)calloc(1, sizeof(struct mps_off));
    struct off_run *X;
    const char **na = NULL, **nb = NULL;
    int *pairs = NULL;
    int n_pairs = 0, i, rc = 0, k, o, d, stop = 0, reps;
    unsigned long long hash;

    if (!M) {
        error_record("out of host memory");
        return -1;
    }
    X = &M->X;
    M->me = g_opt.role;
    M->start_timeout_ns = (unsigned long long)(g_opt.handle_wait_s * 1e9);
    reps = g_opt.repeats ? g_opt.repeats : 5;
    clear_err();
    M->C.cache = (struct cache_ent *)calloc(2 * (size_t)zoo_n_variants + 2,
                                            sizeof(struct cache_ent));
    if (!M->C.cache || off_run_init(X, 0)) {
        error_record(M->C.cache ? g_err : "out of host memory");
        goto out;
    }
    if (read_pairs(g_opt.pairs_path, &pairs, &n_pairs))
        goto out;
    na = (const char **)calloc((size_t)n_pairs + 1, sizeof(*na));
    nb = (const char **)calloc((size_t)n_pairs + 1, sizeof(*nb));
    if (!na || !nb) {
        error_record("out of host memory");
        goto out;
    }
    for (i = 0; i < n_pairs; i++) {
        na[i] = zoo_variants[pairs[2 * i]].name;
        nb[i] = zoo_variants[pairs[2 * i + 1]].name;
    }
    hash = zoo_plan_hash(na, nb, n_pairs, X->delays, X->n_delays, g_opt.order_ab,
                         g_opt.order_ba, reps);
    if (cfg_open_full(&M->c, "mps") || mps_connect(M, hash)) {
        error_record(g_err);
        goto out;
    }
    /* Each process waits only on the other's kernels, so a lazy load here
     * cannot deadlock the handshake as it did in one process; it would
     * still delay the first control round, so the kernels load first. */
    rc = zoo_sync_preload(&M->c.s[0], 1);
    if (rc) {
        seterr("loading the offset protocol's kernels: %s", zerr(rc));
        error_record(g_err);
        goto out;
    }
    for (i = 0; i <= n_pairs && !stop && !M->peer_lost; i++) {
        int va = i < n_pairs ? pairs[2 * i] : 0;
        int vb = i < n_pairs ? pairs[2 * i + 1] : 0;
        int vi = M->me ? vb : va, n, n_iso = 0;
        int iso_new[2] = {0, 0};

        clear_err();
        /* After the last pair, one more control round tells process b
         * to stop. */
        if (i == n_pairs) {
            X->rounds[0].seq = ++X->plan.seq;
            X->rounds[0].kind = ZOO_ROUND_CONTROL;
            X->rounds[0].leader = 0;
            X->rounds[0].run[0] = X->rounds[0].run[1] = 0;
            n = 1;
        } else {
            n = zoo_plan_pair(&X->plan, va, vb, g_opt.order_ab, g_opt.order_ba,
                              X->n_delays, reps, 1, X->rounds,
                              ZOO_OFF_MAX_ROUNDS);
        }
        if (n < 0) {
            /* Same in both processes: both stop here. */
            error_record("a pair needs more rounds than the zoo allows: "
                         "fewer --delays or --repeats");
            break;
        }
        if (i < n_pairs)
            mps_inst(M, vi);
        /* Round 0: control. A last control round always says stop. */
        if (i == n_pairs && M->me == 0) {
            zoo_sync_lead(X->sync, X->rounds[0].seq, 1, 0, ZOO_CMD_STOP,
                          M->start_timeout_ns, &X->drec[0], M->c.s[0]);
            rc = wait_stream_for(M->c.s[0], 1e-9 * M->start_timeout_ns);
            break;
        }
        rc = mps_batch(M, vi, 0, 1, 0);
        if (rc || M->peer_lost) {
            error_record(rc ? g_err : "the other process did not take part "
                         "in the control round: it died, or started with "
                         "other arguments, or later than --handle-wait-s");
            break;
        }
        if (M->me == 1 && X->res[0].rec[1].cmd != ZOO_CMD_GO) {
            stop = 1;
            break;
        }
        if (M->me == 0 && X->res[0].rec[0].cmd == ZOO_CMD_STOP) {
            stop = 1;
            break;
        }
        for (k = 1; k < n && X->rounds[k].kind == ZOO_ROUND_ISO; k++)
            iso_new[off_role(&X->rounds[k], X->rounds[k].iso_side)] |=
                X->rounds[k].iso_side == M->me;
        n_iso = k;
        fprintf(stderr, "mosaic-zoo: mps-offset (%s) %s + %s\n",
                M->me ? "b" : "a", zoo_variants[va].name,
                zoo_variants[vb].name);
        rc = 0;
        if (n_iso > 1)
            rc = mps_batch(M, vi, 1, n_iso, 2e3 * n_iso);
        if (!rc) {
            mps_iso_fold(M, vi, 1, n_iso);
            rc = mps_batch(M, vi, n_iso, n, 4e3 * (n - n_iso));
        }
        if (rc)
            recover();
        for (k = 0; k < 2; k++)
            if (iso_new[k])
                mps_emit_iso(M, va, vb, k, rc == 0);
        for (o = 0; o < 2; o++) {
            if (!(o ? g_opt.order_ba : g_opt.order_ab))
                continue;
            for (d = 0; d < X->n_delays; d++)
                mps_emit(M, va, vb, o, d, n_iso, n, rc == 0);
        }
        if (rc)
            break;
    }
out:
    for (i = 0; M->C.cache && i < 2 * zoo_n_variants; i++)
        if (M->C.cache[i].live)
            cache_evict(&M->C, &M->C.cache[i]);
    free(M->C.cache);
    if (X->sync && M->me == 1) {
        cudaIpcCloseMemHandle(X->sync);
        X->sync = NULL;
    } else if (X->sync) {
        /* Process b's last protocol kernel may still read the block after
         * this process's last mark; give it a moment before freeing. */
        usleep(200000);
    }
    if (M->me == 0 && g_opt.ipc_file)
        unlink(g_opt.ipc_file);
    cfg_close(&M->c);
    off_run_fini(X);
    free(na);
    free(nb);
    free(pairs);
    free(M);
    return rc;
}
