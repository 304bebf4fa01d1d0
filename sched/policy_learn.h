/*
 * Online learning of BE kernels that have no profile (or no prediction),
 * for the model-driven policies (sched/policy_model.c, sched/policy_learn.c).
 *
 * Such a kernel is admitted only while no HP request is in flight. Each of
 * those runs is a measurement of its isolated duration on this GPU: from
 * its grant to its BE_DONE, provided no HP request was in flight at the
 * grant and none began before the done. After MOSAIC__LEARN_SAMPLES clean
 * runs the kernel is "learned": it has a duration (the median of its last
 * clean runs) but still no counters, so its interference cannot be
 * predicted, only bounded (docs/sched.md, "Learned kernels").
 */
#ifndef MOSAIC_SCHED_POLICY_LEARN_H
#define MOSAIC_SCHED_POLICY_LEARN_H

#include <stddef.h>
#include <stdint.h>

/* Clean runs before a kernel counts as learned: the median of five
 * tolerates two outliers (the first launch's module load, a late done
 * word read by a busy daemon) on either side. */
#define MOSAIC__LEARN_SAMPLES 5

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

/* The learned isolated duration of id in ns of this GPU, 0 if not learned. */
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
 * time they ran in [t0, now] (finished runs, of the last 64, and running
 * ones), which a forward model without them counted as HP progress, plus
 * mosaic__learn_remaining_ns.
 */
double mosaic__learn_charge_ns(const struct mosaic__learn *l, uint64_t t0, uint64_t now);
/* Whether an unknown kernel (learned or not) ran at some time in
 * [t0, t1]: then a request over that span measured neither T_iso nor the
 * predictor. */
int mosaic__learn_overlapped(const struct mosaic__learn *l, uint64_t t0, uint64_t t1);
/* Appends Prometheus text; returns the bytes written. */
size_t mosaic__learn_metrics(const struct mosaic__learn *l, char *buf, size_t cap);

#endif /* MOSAIC_SCHED_POLICY_LEARN_H */
