/*
 * What the policy tests share (tests/sched/test_sched_policy.c,
 * test_sched_graph.c, test_sched_partition.c): the HP request type they
 * learn (three profiled convolutions of profiler/data/h200), opening the
 * mosaic policy on a profile directory, and passing it one event as the
 * daemon would.
 */
#ifndef MOSAIC_TESTS_POLICY_TEST_UTIL_H
#define MOSAIC_TESTS_POLICY_TEST_UTIL_H

#include <stdint.h>

#include "daemon.h"

/* The kernels of the HP request type, profile keys of zoo.profile.json. */
extern const char *const ptu_hp_keys[3];

/* The mosaic policy at SLO slo on the profiles of profile_dir and the
 * lockbox models (MODEL_DIR); fails the test when it cannot open. */
struct mosaic__policy ptu_open_mosaic(double slo, const char *profile_dir);
/* Any policy of policy_model.c (MOSAIC__POLICY_ORION or _MOSAIC). */
struct mosaic__policy ptu_open_policy(int policy, double slo, const char *profile_dir);
/* The same with beside-hp set (enum mosaic__beside). */
struct mosaic__policy ptu_open_beside(int policy, double slo, const char *profile_dir,
                                      int beside_hp);

/* One event of client, as the daemon passes it to the policy. */
void ptu_ev(struct mosaic__policy *p, uint32_t client, int type, uint64_t id, uint64_t ts);

#endif /* MOSAIC_TESTS_POLICY_TEST_UTIL_H */
