/*
 * What the two offset co-run subcommands share (cmd_corun_offset.cu: one
 * process; cmd_mps_offset.cu: two processes): a run's delays, schedule,
 * sync block, per-round results and isolated protocol timings, and the
 * helpers that resolve a round's delay and collect its results.
 */
#ifndef MOSAIC_ZOO_OFFSET_RUN_H
#define MOSAIC_ZOO_OFFSET_RUN_H

#include <cuda_runtime.h>

#include "offset.h"
#include "offset_plan.h"

struct off_iso {
    int n;                 /* samples */
    int bad;               /* rounds whose protocol failed */
    double med, mn, mx;
    double samples[ZOO_OFF_MAX_REPEATS];
};

/* One round after its pair's batch: event times after the round's gate. */
struct off_res {
    double t_s[2], t_e[2];          /* A's and B's start and end events, us */
    struct zoo_sync_rec rec[2];     /* what A's and B's protocol kernel saw */
    int expired;                    /* the gate had finished at enqueue */
};

struct off_run {
    struct zoo_delay delays[ZOO_OFF_MAX_DELAYS];
    int n_delays;
    struct zoo_plan_state plan;
    struct zoo_round *rounds;       /* [ZOO_OFF_MAX_ROUNDS] */
    struct off_res *res;            /* [ZOO_OFF_MAX_ROUNDS] */
    struct zoo_sync *sync;          /* device */
    struct zoo_sync_rec *drec;      /* device [2 * ZOO_OFF_MAX_ROUNDS] */
    struct zoo_sync_rec *hrec;
    cudaEvent_t *ev;
    int n_ev;
    struct off_iso *iso;            /* [zoo_plan_iso_key] */
    unsigned long long timeout_ns;
};

/* Parses --delays, allocates the tables (host and device) for one pair's
 * rounds. collapse_sides: see zoo_plan_state. Returns 0 or -1 (g_err). */
int off_run_init(struct off_run *X, int collapse_sides);
void off_run_fini(struct off_run *X);
/* At least n events in X->ev. Returns 0 or a cudaError_t (g_err). */
int off_events(struct off_run *X, int n);
/* The follower's delay of round r in ns, split in what the follower adds
 * itself (abs) and what the leader publishes with its mark (rel, from the
 * leader's isolated duration lead_iso_us). */
void off_delay_ns(const struct off_run *X, const struct zoo_round *r,
                  double lead_iso_us, unsigned long long *abs_ns,
                  unsigned long long *rel_ns);
/* The requested start(B) - start(A) of delay delay_i with the leader's
 * isolated duration lead_iso_us (negative when B leads). */
double off_requested_us(const struct off_run *X, int delay_i, int leader,
                        double lead_iso_us);
/* Role of side s in round r: 0 it leads, 1 it follows. */
int off_role(const struct zoo_round *r, int s);
/* The isolated protocol timing of (variant, side, role), NULL when none. */
const struct off_iso *off_iso_of(const struct off_run *X, int vi, int side,
                                 int role);

#endif /* MOSAIC_ZOO_OFFSET_RUN_H */
