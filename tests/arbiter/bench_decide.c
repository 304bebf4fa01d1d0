/*
 * The mosaic policy's admission decision with a warm cache: after the HP
 * request type is learned and every pair predicted once, how long one
 * decide() takes for a profiled BE kernel beside an HP request in flight
 * (the forward simulation of eq. 5; no predictor call). Prints the median
 * and p99 over blocks of 1000 decisions, in ns per decision.
 *
 *   bench_decide PROFILE_DIR MODEL_DIR [BLOCKS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "mosaic/sched.h"

static const char *const hp_keys[] = {
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192",
};
static const char *const be_key = "_Z9k_conv3x3PKfS0_Pfiiii|grid=16,4,32|block=16,16,1|dsmem=14976";

static void ev(struct mosaic__policy *p, int type, uint64_t id, uint64_t ts)
{
    struct mosaic__policy_event e = {.type = type, .client_id = 1, .id = id, .ts_ns = ts};
    p->observe(p->state, &e);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    struct mosaic__sched_config cfg;
    struct mosaic__policy p;
    char err[1024];
    int blocks = argc > 3 ? atoi(argv[3]) : 200;
    double *ns;

    if (argc < 3 || blocks < 1) {
        fprintf(stderr, "usage: bench_decide PROFILE_DIR MODEL_DIR [BLOCKS]\n");
        return 2;
    }
    mosaic__dlog_level = MOSAIC__L_ERROR;
    mosaic__config_defaults(&cfg);
    cfg.policy = MOSAIC__POLICY_MOSAIC;
    cfg.slo = 1.6;
    if (snprintf(cfg.profile_dir, sizeof(cfg.profile_dir), "%s", argv[1]) >=
            (int)sizeof(cfg.profile_dir) ||
        snprintf(cfg.model_dir, sizeof(cfg.model_dir), "%s", argv[2]) >=
            (int)sizeof(cfg.model_dir)) {
        fprintf(stderr, "bench_decide: a directory name is too long\n");
        return 2;
    }
    if (mosaic__policy_open(&cfg, &p, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_decide: %s\n", err);
        return 1;
    }
    uint64_t t = mosaic__now_ns() - 2000000000ull;
    for (int r = 0; r < 8; r++, t += 20000000ull) {
        ev(&p, MOSAIC__PEV_HP_BEGIN, (uint64_t)r + 1, t);
        for (int k = 0; k < 3; k++)
            ev(&p, MOSAIC__PEV_HP_LAUNCH, mosaic_sched_kernel_id(hp_keys[k]), t);
        ev(&p, MOSAIC__PEV_HP_END, (uint64_t)r + 1, t + 11000000ull);
    }
    uint64_t now = mosaic__now_ns();
    ev(&p, MOSAIC__PEV_HP_BEGIN, 100, now);
    ev(&p, MOSAIC__PEV_HP_LAUNCH, mosaic_sched_kernel_id(hp_keys[0]), now);
    struct mosaic__be_want w = {.client_id = 2, .kernel_id = mosaic_sched_kernel_id(be_key)};
    struct mosaic__sched_view v = {.hp_clients = 1, .hp_requests_in_flight = 1};
    v.now_ns = mosaic__now_ns();
    p.decide(p.state, &v, &w); /* predicts and caches every pair */
    ns = calloc((size_t)blocks, sizeof(*ns));
    if (!ns)
        return 1;
    int admitted = 0;
    for (int b = 0; b < blocks; b++) {
        uint64_t t0 = mosaic__now_ns();
        for (int i = 0; i < 1000; i++) {
            v.now_ns = t0;
            admitted += p.decide(p.state, &v, &w) == MOSAIC__ADMIT;
        }
        ns[b] = (double)(mosaic__now_ns() - t0) / 1000.0;
    }
    qsort(ns, (size_t)blocks, sizeof(*ns), cmp);
    printf("mosaic admission decision, warm pair cache (%d blocks of 1000, BE conv beside "
           "an HP request of 3 convs in flight, %s): p50 %.0f ns, p99 %.0f ns per decision\n",
           blocks, admitted ? "admitted" : "held", ns[blocks / 2],
           ns[blocks - 1 - blocks / 100]);
    free(ns);
    mosaic__policy_close(&p);
    return 0;
}
