/*
 * Online learning of BE kernels that have no profile (or no prediction),
 * for the model-driven policies (sched/policy_model.c, sched/policy_learn.c).
 *
 * Such a kernel is admitted only while no HP request is in flight, until
 * it is learned. Each of its runs is a measurement on this GPU, from its
 * grant to its BE_DONE. A run with no HP request in flight at the grant
 * and none begun before the done is clean: its isolated duration. A run
 * beside HP is not, but it is an upper bound on it (beside HP a kernel is
 * time-sliced or shares the SMs, so it is never faster, and the done is
 * never early), and it is the kernel's wall time beside HP, which is what
 * the worst-case bound charges to a request. After MOSAIC__LEARN_SAMPLES
 * clean runs, or MOSAIC__LEARN_BOUND_SAMPLES runs beside HP, the kernel is
 * "learned": it has a wall time (the larger of the clean runs' median and
 * the runs beside HP's median) but still no counters, so its interference
 * cannot be predicted, only bounded (docs/sched.md, "Learned kernels";
 * docs/services-eval.md, "BE throughput: the fixes": under an HP service
 * that is never idle a clean run never comes, issue 15).
 */
#ifndef MOSAIC_SCHED_POLICY_LEARN_H
#define MOSAIC_SCHED_POLICY_LEARN_H

#include <stddef.h>
#include <stdint.h>

/* Clean runs before a kernel counts as learned: the median of five
 * tolerates two outliers (the first launch's module load, a late done
 * word read by a busy daemon) on either side. */
#define MOSAIC__LEARN_SAMPLES 5
/* Runs beside HP before a kernel counts as learned from them: each is an
 * upper bound already, so the median of three only guards against one
 * done matched to the wrong run of the kernel (a short sample). */
#define MOSAIC__LEARN_BOUND_SAMPLES 3

/*
 * What-if knobs for tests and replays only; the daemon never sets them.
 * mosaic__learn_bound_factor (1): a run beside HP is taken as this factor
 * times its measured wall time, in what is learned from it and in what it
 * is charged to a request. Below 1 it is believed to cost HP less than its
 * wall time beside it, which no measurement supports (the unsafe setting
 * that tests/sched/test_be_continuous.c shows putting HP over p). mosaic__policy_before_i15 (0): 1 gives the rules
 * before issue 15's fixes (clean runs only, BE held beside a request type
 * with too few isolated samples however long it lasts, a kernel without a
 * prediction ending the bound's admissions beside a request; the charge's
 * longer history applies to both), for the side by side run of
 * docs/services-eval.md.
 */
extern double mosaic__learn_bound_factor;
extern int mosaic__policy_before_i15;
/* 1: the rules before the Llama pair's fixes (policy_model.c, RELEARN_AFTER): a
 * request type's sequence only from its first request, and a type with an HP
 * kernel without a profile never ready. A what-if variable for the tests;
 * the daemon never sets it. */
extern int mosaic__policy_before_llama;
/* 1: the gap rule before the gap credit (policy_model.c, GAP_WINDOW): the
 * next request expected one shortest gap of the client's life after its
 * last end. What-if only; the daemon never sets it. */
extern int mosaic__policy_before_gap;
/* 1: the rule before BE ran alone between requests (policy_model.c,
 * be_finish): a BE kernel granted between requests taken to run at its
 * speed beside HP, the worst HP kernel's slowdown of it, from its grant.
 * What-if only; the daemon never sets it. */
extern int mosaic__policy_before_alone;
/* 1: the rule before partial types could be trusted (policy_model.c,
 * pair_s_hp): a request type with HP kernels without a profile admitted
 * beside by the time-slicing bound only, for good. What-if only; the
 * daemon never sets it. */
extern int mosaic__policy_before_partial;
/* 1: decisions without policy_model.c's caches (a type's BE wall-time
 * factors, the between-requests finish taken without simulation when
 * nothing runs into the next request): the same decisions, slower; for
 * bench_policy_decide's side-by-side timing and replay's identity check.
 * The daemon never sets it. */
extern int mosaic__policy_before_cache;
/* 1: the rule before a request within its type's isolated spread of the
 * replay without interference stopped untrusting the type
 * (policy_model.c, iso_spread). What-if only; the daemon never sets it. */
extern int mosaic__policy_before_noise;

struct mosaic__learn;

/* MOSAIC_ENOMEM or 0. */
int mosaic__learn_open(struct mosaic__learn **out);
void mosaic__learn_close(struct mosaic__learn *l);

/* An unknown kernel was granted at ts; hp_in_flight: whether an HP request
 * was in flight then (its run is then no isolated measurement). */
void mosaic__learn_grant(struct mosaic__learn *l, uint32_t client, uint64_t id, uint64_t ts,
                         int hp_in_flight);
/* Its BE_DONE at ts (ignored for kernels that were never granted here). */
void mosaic__learn_done(struct mosaic__learn *l, uint32_t client, uint64_t id, uint64_t ts);
/* An HP request began: the unknown kernels running now are not isolated. */
void mosaic__learn_hp_begin(struct mosaic__learn *l);
/* Every kernel of client is gone (no done will come). */
void mosaic__learn_client_gone(struct mosaic__learn *l, uint32_t client);

/* The learned wall time of id in ns of this GPU (an upper bound on its
 * isolated duration), 0 if not learned. */
double mosaic__learn_duration(const struct mosaic__learn *l, uint64_t id);
/*
 * The work still ahead of the learned kernels running at now, in ns, summed
 * (the worst case of processor sharing: all of it is taken from HP). One
 * past its learned end is given half its duration again, as
 * policy_model.c's be_end does for profiled kernels. Unknown kernels that
 * are not learned add nothing: they were admitted with no request in flight.
 */
double mosaic__learn_remaining_ns(const struct mosaic__learn *l, uint64_t now);
/*
 * What the unknown kernels may take from a request begun at t0, at now: the
 * time they ran in [t0, now] (finished runs and running ones), which a
 * forward model without them counted as HP progress, plus
 * mosaic__learn_remaining_ns. INFINITY when a run that ended after t0 has
 * left the history (more than its 512 runs since): then it cannot be
 * bounded, and the callers refuse.
 */
double mosaic__learn_charge_ns(const struct mosaic__learn *l, uint64_t t0, uint64_t now);
/* Whether an unknown kernel (learned or not) ran at some time in
 * [t0, t1]: then a request over that span measured neither T_iso nor the
 * predictor. */
int mosaic__learn_overlapped(const struct mosaic__learn *l, uint64_t t0, uint64_t t1);
/* Appends Prometheus text; returns the bytes written. */
size_t mosaic__learn_metrics(const struct mosaic__learn *l, char *buf, size_t cap);

#endif /* MOSAIC_SCHED_POLICY_LEARN_H */
