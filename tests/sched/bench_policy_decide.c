/*
 * What one admission decision of the mosaic policy costs the daemon, on
 * the H200 services' profiles: the HP request type is the ResNet-50
 * service's size (REQ_KERNELS launches over the profile's kernels), the
 * candidates the ResNet-18 trainer's kernels. The daemon decides for a
 * gated BE stream's next kernel only after the one before it finished, so
 * a decision's time is added to every BE kernel's start: beside a trainer
 * whose kernels run tens of microseconds each it is BE throughput.
 * Reports ns per warm decision (every pair predicted once before the
 * timed ones) in each state of the HP client (unproven beside an open
 * request, trusted beside an open one, trusted between requests), with the
 * policy's caches and without them (mosaic__policy_before_cache: the same
 * decisions), in alternating blocks of one run, and the ratio; asserts
 * nothing. tests/arbiter/bench_decide times the same call on a
 * three-kernel type (the costs phase's "admission decision" line, ~0.1 us
 * on the H200 host); the served type of 282 kernels costs tens of times
 * that, since eq. 5 simulates the request forward (on the H200 host,
 * 2026-12-04, before the warm-up: 6.4 us trusted beside a request; the
 * unproven figure there, 10.0 us, held the pairs' first predictions).
 *
 *   bench_policy_decide PROFILE_DIR MODEL_DIR [DECISIONS]
 */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "mosaic/profile.h"
#include "mosaic/sched.h"
#include "policy_learn.h"

#define REQ_KERNELS 282
#define T_REQ 2450000ull /* the request's isolated latency, ns */
#define MAX_KEYS 512

static int load_ids(const char *dir, const char *model, uint64_t *ids, int cap)
{
    char path[4096], err[512];
    struct mosaic_profile prof;
    int n = 0;

    snprintf(path, sizeof(path), "%s/%s.profile.json", dir, model);
    mosaic_profile_init(&prof);
    if (mosaic_profile_read_file(path, &prof, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_policy_decide: %s\n", err);
        return -1;
    }
    for (size_t i = 0; i < prof.n_kernels && n < cap; i++)
        ids[n++] = mosaic_sched_kernel_id(prof.kernels[i].key);
    mosaic_profile_free(&prof);
    if (n == 0)
        fprintf(stderr, "bench_policy_decide: no kernels in %s\n", path);
    return n ? n : -1;
}

static void ev(struct mosaic__policy *p, uint32_t client, int type, uint64_t id, uint64_t ts)
{
    struct mosaic__policy_event e = {.type = type, .client_id = client, .id = id, .ts_ns = ts};
    p->observe(p->state, &e);
}

static uint64_t hp_ids[MAX_KEYS], be_ids[MAX_KEYS];
static int n_hp, n_be;

/* One request of client 1 begun at t; ends it at t + T_REQ when end. */
static void request(struct mosaic__policy *p, uint64_t req, uint64_t t, int end)
{
    ev(p, 1, MOSAIC__PEV_HP_BEGIN, req, t);
    for (int k = 0; k < REQ_KERNELS; k++)
        ev(p, 1, MOSAIC__PEV_HP_LAUNCH, hp_ids[k % n_hp], t);
    if (end)
        ev(p, 1, MOSAIC__PEV_HP_END, req, t + T_REQ);
}

/* ns per decision over n decisions at now, cycling the BE kernels. */
static double time_once(struct mosaic__policy *p, uint64_t now, unsigned in_flight, int n,
                             int *admitted)
{
    struct mosaic__sched_view v = {.now_ns = now, .hp_clients = 1,
                                   .hp_requests_in_flight = in_flight, .hp_clients_seen = 1};
    uint64_t t0;

    /* Each candidate once first: the pairs' predictions are made on first
     * use and kept, so the timed decisions are the warm ones. */
    for (int i = 0; i < n_be; i++) {
        struct mosaic__be_want w = {.client_id = 2, .kernel_id = be_ids[i]};
        (void)p->decide(p->state, &v, &w);
    }
    t0 = mosaic__now_ns();
    *admitted = 0;
    for (int i = 0; i < n; i++) {
        struct mosaic__be_want w = {.client_id = 2, .kernel_id = be_ids[i % n_be]};
        *admitted += p->decide(p->state, &v, &w) == MOSAIC__ADMIT;
    }
    return (double)(mosaic__now_ns() - t0) / n;
}

/* The same decisions without the policy's caches and with them,
 * alternating in blocks so that both see the same machine; prints both
 * under label. */
static void time_decisions(struct mosaic__policy *p, const char *label, uint64_t now,
                           unsigned in_flight, int n)
{
    double with = 0, without = 0;
    int a1 = 0, a0 = 0;

    for (int r = 0; r < 4; r++) {
        mosaic__policy_before_cache = 1;
        without += time_once(p, now, in_flight, n / 4, &a0);
        mosaic__policy_before_cache = 0;
        with += time_once(p, now, in_flight, n / 4, &a1);
    }
    printf("%-40s %8.0f ns a decision (%d of %d admitted)\n"
           "  without the caches %.0f ns (%d of %d admitted): %.2fx the time\n",
           label, with / 4, a1 * 4, n, without / 4, a0 * 4, n, without / with);
}

int main(int argc, char **argv)
{
    struct mosaic__sched_config cfg;
    struct mosaic__policy p;
    char err[1024];
    int n = argc > 3 ? atoi(argv[3]) : 20000;
    uint64_t t, req = 1, now;

    if (argc < 3 || n <= 0) {
        fprintf(stderr, "usage: bench_policy_decide PROFILE_DIR MODEL_DIR [DECISIONS]\n");
        return 2;
    }
    if ((n_hp = load_ids(argv[1], "resnet50", hp_ids, MAX_KEYS)) < 0 ||
        (n_be = load_ids(argv[1], "resnet18_train", be_ids, MAX_KEYS)) < 0)
        return 1;
    mosaic__config_defaults(&cfg);
    cfg.policy = MOSAIC__POLICY_MOSAIC;
    cfg.slo = 1.25;
    snprintf(cfg.profile_dir, sizeof(cfg.profile_dir), "%s", argv[1]);
    snprintf(cfg.model_dir, sizeof(cfg.model_dir), "%s", argv[2]);
    if (mosaic__policy_open(&cfg, &p, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_policy_decide: %s\n", err);
        return 1;
    }
    /* Isolated requests (T_iso), then one open: the unproven type. */
    t = mosaic__now_ns() - 4000000000ull;
    for (int r = 0; r < 16; r++, t += 2 * T_REQ)
        request(&p, req++, t, 1);
    request(&p, req, t, 0);
    time_decisions(&p, "unproven type, beside an open request:", t + T_REQ / 4, 1, n);
    ev(&p, 1, MOSAIC__PEV_HP_END, req++, t + T_REQ);
    t += 2 * T_REQ;
    /* 64 overlapped requests as fast as isolated: the type is trusted. */
    for (int r = 0; r < 64; r++, t += 2 * T_REQ) {
        ev(&p, 2, MOSAIC__PEV_BE_GRANT, be_ids[r % n_be], t);
        request(&p, req++, t + 1000, 1);
        ev(&p, 2, MOSAIC__PEV_BE_DONE, be_ids[r % n_be], t + 20000);
    }
    request(&p, req, t, 0);
    time_decisions(&p, "trusted type, beside an open request:", t + T_REQ / 4, 1, n);
    ev(&p, 1, MOSAIC__PEV_HP_END, req++, t + T_REQ);
    now = t + T_REQ + 100000;
    time_decisions(&p, "trusted type, between requests:", now, 0, n);
    {
        char text[16384];
        size_t m = p.metrics(p.state, text, sizeof(text));
        text[m < sizeof(text) ? m : sizeof(text) - 1] = '\0';
        const char *f = strstr(text, "mosaic_policy_overlap_factor ");
        const char *u = strstr(text, "mosaic_policy_unproven_types ");
        printf("(%d HP kernels in the profile, %d BE; %.*s; %.*s)\n", n_hp, n_be,
               f ? (int)strcspn(f, "\n") : 0, f ? f : "", u ? (int)strcspn(u, "\n") : 0,
               u ? u : "");
    }
    mosaic__policy_close(&p);
    return 0;
}
