/*
 * mosaic-zoo placement: where the hardware places thread blocks. A fixed
 * list of experiments launches the placement probe (zoo_probes.h) alone or
 * two at once, in shapes that vary grid, threads, shared memory and
 * carveout, and records every block (SM, start, end) and a summary per
 * experiment: fill order, blocks per SM, residency, sharing of SMs.
 *
 * The shapes assume the H200 they were run on (132 SMs, so 66, 132 and
 * 264 blocks are half a wave, one and two at one block per SM; 100 KB of
 * shared memory asks whether two blocks fit an SM by shared memory),
 * driver 580.159.04, CUDA 13.0; the results are
 * profiler/data/h200/placement.jsonl, described in docs/placement.md.
 * --spin-us scales the probes: single launches spin that long, the first
 * kernel of a pair 5/3 of it (default 30 us, so 30 and 50 us).
 */
#include <cuda_runtime.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "zoo.h"
#include "zoo_cmds.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"
#include "zoo_probes.h"
#include "zoo_streams.h"
#include "zoo_timing.h"

/* The smallest step of %globaltimer seen in a short loop: the resolution of
 * every placement timestamp. */
__global__ void zoo_timer_step_kernel(unsigned long long *out)
{
    unsigned long long prev = gtimer();
    unsigned long long best = ~0ull;
    int changes = 0;
    long long i;

    for (i = 0; i < 50000000LL && changes < 64; i++) {
        unsigned long long t = gtimer();

        if (t != prev) {
            if (t - prev < best)
                best = t - prev;
            prev = t;
            changes++;
        }
    }
    out[0] = best;
}

struct pk {
    int grid, threads, smem, carveout; /* carveout -1: the default */
    double spin_us;
};

struct pexp {
    const char *name;
    const char *question;
    int n_kernels;
    struct pk k[2];
};

#define KB 1024
/* (a) single launches: fill order and blocks per SM. */
#define PA(g, t, s, c) \
    {"a_g" #g "_t" #t "_s" #s "k_c" #c, "single launch", 1, \
     {{g, t, (s) * KB, c, 30.0}, {0, 0, 0, 0, 0}}}
static const struct pexp g_pexps[] = {
    PA(66, 128, 0, -1), PA(132, 128, 0, -1), PA(264, 128, 0, -1),
    PA(1000, 128, 0, -1),
    PA(66, 256, 0, -1), PA(132, 256, 0, -1), PA(264, 256, 0, -1),
    PA(1000, 256, 0, -1),
    PA(66, 1024, 0, -1), PA(132, 1024, 0, -1), PA(264, 1024, 0, -1),
    PA(1000, 1024, 0, -1),
    PA(66, 256, 32, -1), PA(132, 256, 32, -1), PA(264, 256, 32, -1),
    PA(1000, 256, 32, -1),
    PA(66, 256, 100, -1), PA(132, 256, 100, -1), PA(264, 256, 100, -1),
    PA(1000, 256, 100, -1),
    PA(1000, 256, 0, 0), PA(1000, 256, 0, 100), PA(1000, 256, 32, 0),
    /* (b) two kernels, the second enqueued right behind the first. */
    {"b1_half_then_half", "66x256 then 66x256: idle SMs first?", 2,
     {{66, 256, 0, -1, 50.0}, {66, 256, 0, -1, 30.0}}},
    {"b2_full_then_full_small", "132x256 then 132x256: beside?", 2,
     {{132, 256, 0, -1, 50.0}, {132, 256, 0, -1, 30.0}}},
    {"b3_full_then_full_1024", "132x1024 then 132x1024: beside (2 fit)?", 2,
     {{132, 1024, 0, -1, 50.0}, {132, 1024, 0, -1, 30.0}}},
    {"b4_threads_full", "264x1024 (all thread slots) then 132x256: waits?",
     2, {{264, 1024, 0, -1, 50.0}, {132, 256, 0, -1, 30.0}}},
    {"b5_smem_two_fit", "132x256 100KB then 132x256 100KB: 2 fit by smem?",
     2, {{132, 256, 100 * KB, -1, 50.0}, {132, 256, 100 * KB, -1, 30.0}}},
    {"b6_smem_full_then_nosmem",
     "264x256 100KB (smem full) then 66x256 no smem: beside?", 2,
     {{264, 256, 100 * KB, -1, 50.0}, {66, 256, 0, -1, 30.0}}},
    {"b7_long_grid_then_small", "1000x128 then 132x128: interleaved?", 2,
     {{1000, 128, 0, -1, 50.0}, {132, 128, 0, -1, 30.0}}},
    {"b8_half_1024_then_many", "66x1024 then 264x128: idle SMs first?", 2,
     {{66, 1024, 0, -1, 50.0}, {264, 128, 0, -1, 30.0}}},
    {"b9_second_big", "132x256 then 1000x256: where does the big one go?", 2,
     {{132, 256, 0, -1, 50.0}, {1000, 256, 0, -1, 30.0}}},
    /* (c) different carveouts: do blocks ever share an SM? */
    {"c1_c0_then_c100", "carveout 0 then 100, no smem", 2,
     {{132, 256, 0, 0, 50.0}, {132, 256, 0, 100, 30.0}}},
    {"c2_c100_then_c0", "carveout 100 then 0, no smem", 2,
     {{132, 256, 0, 100, 50.0}, {132, 256, 0, 0, 30.0}}},
    {"c3_c0_then_c100_32k", "carveout 0 then 100 with 32KB", 2,
     {{132, 256, 0, 0, 50.0}, {132, 256, 32 * KB, 100, 30.0}}},
    {"c4_c100_32k_both", "control: carveout 100, 32KB, both", 2,
     {{132, 256, 32 * KB, 100, 50.0}, {132, 256, 32 * KB, 100, 30.0}}},
    {"c5_c0_half_then_c100", "carveout 0 on 66 blocks then 100 on 132", 2,
     {{66, 256, 0, 0, 50.0}, {132, 256, 0, 100, 30.0}}},
    {"c6_c0_both", "control: carveout 0, both", 2,
     {{132, 256, 0, 0, 50.0}, {132, 256, 0, 0, 30.0}}},
    {"c7_c0_32k_then_c100_100k", "carveout 0 32KB then 100 100KB", 2,
     {{132, 256, 32 * KB, 0, 50.0}, {132, 256, 100 * KB, 100, 30.0}}},
};
#undef PA
#undef KB

struct ksum {
    int n, sms_used, max_blocks_per_sm, max_resident_per_sm, occupancy;
    long long first_start, last_start, first_end, last_end;
    int per_sm[ZOO_MAX_SMID];
    int fill_order[ZOO_MAX_SMID];
    int n_fill;
};

static struct ksum g_ks[2];

static void summarise_kernel(int k, int n, unsigned long long base,
                             struct ksum *s)
{
    const struct probe_rec *r = g_hprobe[k];
    long long first_t[ZOO_MAX_SMID];
    int i, j;

    s->n = n;
    s->sms_used = 0;
    s->max_blocks_per_sm = 0;
    s->first_start = s->first_end = LLONG_MAX;
    s->last_start = s->last_end = LLONG_MIN;
    memset(s->per_sm, 0, sizeof(s->per_sm));
    for (i = 0; i < ZOO_MAX_SMID; i++)
        first_t[i] = LLONG_MAX;
    for (i = 0; i < n; i++) {
        long long t0 = (long long)(r[i].t0 - base);
        long long t1 = (long long)(r[i].t1 - base);

        if (!s->per_sm[r[i].smid]++)
            s->sms_used++;
        if (t0 < first_t[r[i].smid])
            first_t[r[i].smid] = t0;
        s->first_start = t0 < s->first_start ? t0 : s->first_start;
        s->last_start = t0 > s->last_start ? t0 : s->last_start;
        s->first_end = t1 < s->first_end ? t1 : s->first_end;
        s->last_end = t1 > s->last_end ? t1 : s->last_end;
    }
    for (i = 0; i < ZOO_MAX_SMID; i++)
        if (s->per_sm[i] > s->max_blocks_per_sm)
            s->max_blocks_per_sm = s->per_sm[i];
    s->max_resident_per_sm = max_resident(k, n);
    /* SMs by the start of their first block (insertion sort: <= 1024). */
    s->n_fill = 0;
    for (i = 0; i < ZOO_MAX_SMID; i++) {
        if (first_t[i] == LLONG_MAX)
            continue;
        j = s->n_fill++;
        while (j > 0 && first_t[s->fill_order[j - 1]] > first_t[i]) {
            s->fill_order[j] = s->fill_order[j - 1];
            j--;
        }
        s->fill_order[j] = i;
    }
}

static void j_ksum(const char *p, const struct ksum *s, int n_smid)
{
    char k[64];

#define PK(name) (snprintf(k, sizeof(k), "%s%s", p, name), k)
    j_int(PK("blocks"), s->n);
    j_int(PK("sms_used"), s->sms_used);
    j_int(PK("max_blocks_per_sm"), s->max_blocks_per_sm);
    j_int(PK("max_resident_per_sm"), s->max_resident_per_sm);
    j_int(PK("occupancy_api_blocks_per_sm"), s->occupancy);
    j_int(PK("first_start_ns"), s->first_start);
    j_int(PK("last_start_ns"), s->last_start);
    j_int(PK("first_end_ns"), s->first_end);
    j_int(PK("last_end_ns"), s->last_end);
    j_ints(PK("blocks_per_smid"), s->per_sm, n_smid);
    j_ints(PK("sm_fill_order"), s->fill_order, s->n_fill);
#undef PK
}

/* SMs holding blocks of both kernels, ever and at the same time, and k2
 * blocks that started on an SM with no k1 block resident. */
static void pair_stats(int n1, int n2, int *sms_both, int *sms_both_conc,
                       int *k2_on_idle)
{
    const struct probe_rec *a = g_hprobe[0];
    const struct probe_rec *b = g_hprobe[1];
    unsigned char conc[ZOO_MAX_SMID];
    int i, j;

    memset(conc, 0, sizeof(conc));
    *sms_both = 0;
    *sms_both_conc = 0;
    *k2_on_idle = 0;
    for (i = 0; i < ZOO_MAX_SMID; i++)
        *sms_both += g_ks[0].per_sm[i] && g_ks[1].per_sm[i];
    for (j = 0; j < n2; j++) {
        int busy = 0;

        for (i = 0; i < n1; i++) {
            if (a[i].smid != b[j].smid)
                continue;
            if (a[i].t0 < b[j].t1 && b[j].t0 < a[i].t1)
                conc[b[j].smid] = 1;
            if (a[i].t0 <= b[j].t0 && b[j].t0 < a[i].t1)
                busy = 1;
        }
        *k2_on_idle += !busy;
    }
    for (i = 0; i < ZOO_MAX_SMID; i++)
        *sms_both_conc += conc[i];
}

static int placement_run(const struct pexp *e, int rep, struct xcfg *c)
{
    static const probe_fn fns[2] = {zoo_probe_k1, zoo_probe_k2};
    unsigned long long base = ~0ull;
    int rc = 0, k, i, missing = 0, n_smid = 0, expired = 0;
    int sms_both = 0, sms_conc = 0, k2_idle = 0;
    cudaError_t q;

    clear_err();
    for (k = 0; k < e->n_kernels; k++) {
        CKZ(probe_attrs(fns[k], e->k[k].smem, e->k[k].carveout));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &g_ks[k].occupancy, fns[k], e->k[k].threads, e->k[k].smem));
        CK(cudaMemsetAsync(g_dprobe[k], 0,
                           (size_t)e->k[k].grid * sizeof(struct probe_rec),
                           c->s[k]));
        CKZ(wait_stream(c->s[k]));
    }
    CKZ(gate_launch());
    for (k = 0; k < e->n_kernels; k++)
        CK(cudaStreamWaitEvent(c->s[k], g_gate_ev, 0));
    for (k = 0; k < e->n_kernels; k++) {
        fns[k]<<<e->k[k].grid, e->k[k].threads, e->k[k].smem, c->s[k]>>>(
            g_dprobe[k], (unsigned long long)(e->k[k].spin_us * 1e3 *
                                              g_opt.spin_us / 30.0));
        CK(cudaGetLastError());
    }
    q = cudaEventQuery(g_gate_ev);
    expired = q == cudaSuccess;
    for (k = 0; k < e->n_kernels; k++)
        CKZ(probe_fetch(k, e->k[k].grid, c->s[k]));
    CKZ(wait_stream(g_gate_stream));
    for (k = 0; k < e->n_kernels; k++)
        for (i = 0; i < e->k[k].grid; i++) {
            const struct probe_rec *r = &g_hprobe[k][i];

            if (r->t0 == 0 || r->smid >= ZOO_MAX_SMID ||
                r->block != (unsigned int)i) {
                missing++;
                continue;
            }
            if (r->t0 < base)
                base = r->t0;
            if ((int)r->smid + 1 > n_smid)
                n_smid = (int)r->smid + 1;
        }
    if (missing) {
        seterr("%d block records missing or malformed", missing);
        rc = -1;
        goto out;
    }
    for (k = 0; k < e->n_kernels; k++) {
        for (i = 0; i < e->k[k].grid; i++) {
            const struct probe_rec *r = &g_hprobe[k][i];

            j_begin("block");
            j_str("experiment", e->name);
            j_int("rep", rep);
            j_int("kernel", k + 1);
            j_int("block", i);
            j_int("smid", r->smid);
            j_int("t_start_ns", (long long)(r->t0 - base));
            j_int("t_end_ns", (long long)(r->t1 - base));
            j_end();
        }
        summarise_kernel(k, e->k[k].grid, base, &g_ks[k]);
    }
    if (e->n_kernels == 2)
        pair_stats(e->k[0].grid, e->k[1].grid, &sms_both, &sms_conc,
                   &k2_idle);
out:
    j_begin("placement_summary");
    j_result(rc == 0);
    j_str("experiment", e->name);
    j_str("question", e->question);
    j_int("rep", rep);
    j_cfg(c);
    j_int("kernels", e->n_kernels);
    for (k = 0; k < e->n_kernels; k++) {
        char p[8];
        char key[64];

        snprintf(p, sizeof(p), "k%d_", k + 1);
#define PKEY(name) (snprintf(key, sizeof(key), "%s%s", p, name), key)
        j_int(PKEY("grid"), e->k[k].grid);
        j_int(PKEY("threads"), e->k[k].threads);
        j_int(PKEY("smem_bytes"), e->k[k].smem);
        j_int(PKEY("carveout"), e->k[k].carveout);
        j_num(PKEY("spin_us"), e->k[k].spin_us * g_opt.spin_us / 30.0);
#undef PKEY
        if (rc == 0)
            j_ksum(p, &g_ks[k], n_smid);
    }
    if (rc == 0 && e->n_kernels == 2) {
        j_int("sms_both", sms_both);
        j_int("sms_both_concurrent", sms_conc);
        j_int("k2_blocks_started_on_sm_without_k1", k2_idle);
        j_int("k2_first_start_after_k1_first_start_ns",
              g_ks[1].first_start - g_ks[0].first_start);
        j_int("k1_last_end_after_k1_first_start_ns",
              g_ks[0].last_end - g_ks[0].first_start);
        j_int("k2_first_start_minus_k1_last_end_ns",
              g_ks[1].first_start - g_ks[0].last_end);
    }
    j_bool("gate_expired", expired);
    j_end();
    if (rc)
        recover();
    return rc;
}

static int timer_step_ns(long long *step)
{
    unsigned long long *d = NULL, h = 0;
    int rc = 0;

    *step = -1;
    CK(cudaMalloc((void **)&d, sizeof(*d)));
    zoo_timer_step_kernel<<<1, 1, 0, g_gate_stream>>>(d);
    CK(cudaGetLastError());
    CKZ(wait_stream(g_gate_stream));
    CK(cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost));
    *step = h == ~0ull ? -1 : (long long)h;
out:
    if (d)
        cudaFree(d);
    return rc;
}

int cmd_placement(void)
{
    struct xcfg c;
    long long step = -1;
    int reps = g_opt.repeats ? g_opt.repeats : 1;
    int e, r;
    size_t n = sizeof(g_pexps) / sizeof(g_pexps[0]);

    clear_err();
    if (g_opt.n_sms && g_opt.sms[0] < g_dev.sm_count)
        cfg_open_green(&c, g_opt.sms[0], "green");
    else
        cfg_open_full(&c, "full");
    cfg_check(&c, NULL);
    clear_err();
    if (timer_step_ns(&step))
        recover();
    j_begin("timer");
    j_bool("ok", step > 0);
    j_int("globaltimer_step_ns", step);
    j_end();
    if (!c.ok || probe_alloc()) {
        error_record(c.ok ? g_err : c.err);
        cfg_close(&c);
        return -1;
    }
    for (e = 0; e < (int)n && !should_stop(); e++)
        for (r = 0; r < reps && !should_stop(); r++)
            placement_run(&g_pexps[e], r, &c);
    probe_attrs(zoo_probe_k1, 0, -1);
    probe_attrs(zoo_probe_k2, 0, -1);
    cfg_close(&c);
    return 0;
}
