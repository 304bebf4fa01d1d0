/*
 * Stream configurations of the zoo harness (declared in zoo_streams.h): the
 * full GPU or a green context (greenctx.h), two non-blocking streams each,
 * or the two disjoint parts of one SM split; and the self-check every run
 * records for each ("stream_check"), since it rests on driver behaviour.
 *
 * Tested on an H200 (sm_90, 132 SMs), driver 580.159.04, CUDA 13.0: green
 * contexts of 8..128 SMs and a 66/remainder split (72 + 60 SMs, disjoint),
 * graphs captured on green-context streams, events across the primary
 * context and green contexts. The checks of the dataset's runs are the
 * "stream_check" records in profiler/data/h200/ (corun.jsonl and
 * splits/time.jsonl, for example).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "greenctx.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"
#include "zoo_probes.h"
#include "zoo_streams.h"
#include "zoo_timing.h"

static void cfg_init(struct xcfg *c, const char *label)
{
    memset(c, 0, sizeof(*c));
    copy_str(c->label, sizeof(c->label), label);
}

int cfg_open_full(struct xcfg *c, const char *label)
{
    int rc = 0, i;

    cfg_init(c, label);
    c->sms_requested = g_dev.sm_count;
    c->sms = g_dev.sm_count;
    c->sms_ctx = g_dev.sm_count;
    for (i = 0; i < 2; i++)
        CK(cudaStreamCreateWithFlags(&c->s[i], cudaStreamNonBlocking));
    c->ok = 1;
out:
    if (rc)
        copy_str(c->err, sizeof(c->err), g_err);
    return rc;
}

static int cfg_green_streams(struct xcfg *c)
{
    int rc = 0, i;
    char err[256];

    for (i = 0; i < 2; i++) {
        err[0] = 0;
        rc = gc_stream_create(&c->part, &c->s[i], err, sizeof(err));
        if (rc) {
            seterr("%s", err);
            return rc;
        }
    }
    c->ok = 1;
    return 0;
}

int cfg_open_green(struct xcfg *c, int n, const char *label)
{
    char err[512];
    int rc;

    cfg_init(c, label);
    c->green = 1;
    c->sms_requested = n;
    err[0] = 0;
    rc = gc_create(g_opt.device, n, &c->part, NULL, err, sizeof(err));
    if (rc) {
        seterr("%s", err);
    } else {
        c->sms = c->part.sm_split;
        c->sms_ctx = c->part.sm_ctx;
        rc = cfg_green_streams(c);
    }
    if (rc)
        copy_str(c->err, sizeof(c->err), g_err);
    return rc;
}

/* Both parts from one split, so their SM sets are disjoint. */
int cfg_open_split(struct xcfg *a, struct xcfg *b, int x)
{
    char err[512];
    int rc;

    cfg_init(a, "group");
    cfg_init(b, "rest");
    a->green = b->green = 1;
    a->sms_requested = x;
    b->sms_requested = g_dev.sm_count - x;
    err[0] = 0;
    rc = gc_create(g_opt.device, x, &a->part, &b->part, err, sizeof(err));
    if (rc) {
        seterr("%s", err);
    } else {
        a->sms = a->part.sm_split;
        a->sms_ctx = a->part.sm_ctx;
        b->sms = b->part.sm_split;
        b->sms_ctx = b->part.sm_ctx;
        rc = cfg_green_streams(a);
        if (!rc)
            rc = cfg_green_streams(b);
    }
    if (rc) {
        copy_str(a->err, sizeof(a->err), g_err);
        copy_str(b->err, sizeof(b->err), g_err);
        a->ok = b->ok = 0;
    }
    return rc;
}

void cfg_close(struct xcfg *c)
{
    int i;

    for (i = 0; i < 2; i++) {
        if (!c->s[i])
            continue;
        if (c->green)
            gc_stream_destroy(c->s[i]);
        else
            cudaStreamDestroy(c->s[i]);
        c->s[i] = NULL;
    }
    if (c->green)
        gc_destroy(&c->part);
    c->ok = 0;
}

/*
 * The self-check of one configuration: a probe grid large enough for
 * several waves must reach exactly the configuration's SMs, also when
 * replayed from a CUDA graph captured on its stream; an event recorded on
 * its stream must time against the gate event on the primary context's
 * stream (the co-run timeline relies on it); and two parts of a split must
 * not share an SM.
 */
void cfg_check(struct xcfg *c, const struct xcfg *other)
{
    unsigned char seen_graph[ZOO_MAX_SMID];
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    int grid = 8 * g_dev.sm_count;
    int rc = 0, n_graph = -1, overlap = -1, i, n_list = 0;
    int smids[ZOO_MAX_SMID];
    double cross_us = NAN;
    float ms = 0;
    int ok;

    clear_err();
    c->n_seen = -1;
    if (!c->ok) {
        seterr("%s", c->err);
        rc = -1;
        goto out;
    }
    if (grid > ZOO_PROBE_CAP)
        grid = ZOO_PROBE_CAP;
    CKZ(probe_alloc());
    CKZ(probe_attrs(zoo_probe_k1, 0, -1));
    CKZ(probe_run(zoo_probe_k1, 0, grid, 1024, 0, 5.0, c->s[0]));
    CKZ(probe_fetch(0, grid, c->s[0]));
    c->n_seen = probe_count_sms(0, grid, c->seen);

    CK(cudaMemsetAsync(g_dprobe[0], 0, (size_t)grid * sizeof(struct probe_rec),
                       c->s[0]));
    CKZ(wait_stream(c->s[0]));
    CK(cudaStreamBeginCapture(c->s[0], cudaStreamCaptureModeThreadLocal));
    zoo_probe_k1<<<grid, 1024, 0, c->s[0]>>>(g_dprobe[0], 5000ull);
    CK(cudaStreamEndCapture(c->s[0], &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, c->s[0]));
    CKZ(probe_fetch(0, grid, c->s[0]));
    n_graph = probe_count_sms(0, grid, seen_graph);

    CKZ(gate_launch());
    CK(cudaStreamWaitEvent(c->s[1], g_gate_ev, 0));
    CK(cudaEventRecord(g_ev[0], c->s[1]));
    CKZ(wait_stream(c->s[1]));
    CKZ(wait_stream(g_gate_stream));
    CK(cudaEventElapsedTime(&ms, g_gate_ev, g_ev[0]));
    cross_us = 1e3 * ms;

    if (other && other->n_seen > 0) {
        overlap = 0;
        for (i = 0; i < ZOO_MAX_SMID; i++)
            overlap += c->seen[i] && other->seen[i];
    }
out:
    if (ge)
        cudaGraphExecDestroy(ge);
    if (g)
        cudaGraphDestroy(g);
    if (rc) {
        /* A capture left open would poison every later call on s[0]. */
        cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;

        if (c->ok && cudaStreamIsCapturing(c->s[0], &st) == cudaSuccess &&
            st != cudaStreamCaptureStatusNone) {
            cudaGraph_t junk = NULL;

            cudaStreamEndCapture(c->s[0], &junk);
            if (junk)
                cudaGraphDestroy(junk);
        }
        recover();
    }
    for (i = 0; c->n_seen > 0 && i < ZOO_MAX_SMID; i++)
        if (c->seen[i])
            smids[n_list++] = i;
    ok = rc == 0 && c->n_seen > 0 && c->n_seen <= c->sms &&
         n_graph > 0 && n_graph <= c->sms && overlap <= 0 &&
         (!c->green || c->sms_ctx == c->sms);
    if (rc == 0 && !ok)
        seterr("configuration check failed: observed %d SMs (graph %d) for "
               "%d provisioned (context reports %d), %d shared with the "
               "other part", c->n_seen, n_graph, c->sms, c->sms_ctx, overlap);
    j_begin("stream_check");
    j_result(ok);
    j_str("label", c->label);
    j_bool("green", c->green);
    j_int("sms_requested", c->sms_requested);
    j_int("sms", c->sms);
    j_int("sms_ctx", c->sms_ctx);
    j_int("sms_observed", c->n_seen);
    j_int("sms_observed_graph", n_graph);
    if (other)
        j_int("sms_shared_with_other", overlap);
    j_num("gate_to_stream_event_us", cross_us);
    j_ints("smids", smids, n_list);
    j_end();
    if (!ok && c->green)
        fprintf(stderr, "mosaic-zoo: stream check of %s (%d SMs) failed: %s\n",
                c->label, c->sms, g_err);
}

void j_cfg(const struct xcfg *c)
{
    j_int("sms", c->sms);
    j_int("sms_requested", c->sms_requested);
    j_bool("green", c->green);
}

int cfg_open_corun_pair(struct xcfg *a, struct xcfg *b, int partitioned, int x)
{
    if (partitioned) {
        cfg_open_split(a, b, x);
    } else {
        cfg_open_full(a, "shared_a");
        cfg_open_full(b, "shared_b");
    }
    cfg_check(a, NULL);
    cfg_check(b, partitioned ? a : NULL);
    if (!a->ok || !b->ok) {
        fprintf(stderr, "mosaic-zoo: no streams for the co-runs: %s\n",
                a->ok ? b->err : a->err);
        return -1;
    }
    return 0;
}
