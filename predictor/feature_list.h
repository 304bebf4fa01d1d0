/*
 * The models' feature vectors, each from one X-macro list (name, meaning,
 * unit, monotone constraint), and the rows built from them (features.c).
 * The training tool (mosaic-train), the inference code and the model files
 * all take the layout from here: the enums give each feature's position,
 * mosaic-train writes the names into every model file it trains ("features",
 * mosaic__features_stamp) and the loader refuses a model whose list differs
 * (mosaic__features_check). Changing a list means retraining the models.
 * Internal to predictor/; named feature_list.h, not features.h, which
 * would hide the C library's <features.h> on the predictor's include path.
 *
 * An entry is X(who, name, meaning, unit, mono): who is self (the kernel
 * whose slowdown is predicted), other (its co-runner) or pair (both); the
 * feature is called who_name in the model files; mono is XGBoost's monotone
 * constraint for the inter-SM model (1: the slowdown never falls as the
 * feature grows; the residual model has none). Units of profile metrics
 * are those of docs/profile-schema.md.
 */
#ifndef MOSAIC_PREDICTOR_FEATURE_LIST_H
#define MOSAIC_PREDICTOR_FEATURE_LIST_H

#include <stddef.h>

#include "predictor_internal.h"

/* The ten features of one kernel, first self's and then other's in both
 * models; m is the monotone constraint of its bandwidth features (set for
 * the co-runner only: more of its traffic never speeds self up). */
#define MOSAIC__FEATURES_KERNEL(X, who, m)                                            \
    X(who, sms_frac, "SMs it runs on over the GPU's SMs", "fraction", 0)                \
    X(who, dram_rd, "DRAM read bandwidth on the full GPU (profile)", "GB/s", m)          \
    X(who, dram_wr, "DRAM write bandwidth on the full GPU (profile)", "GB/s", m)         \
    X(who, l2_rd, "L2 read bandwidth on the full GPU (profile, 32-byte sectors)", "GB/s", m) \
    X(who, l2_wr, "L2 write bandwidth on the full GPU (profile, 32-byte sectors)", "GB/s", m) \
    X(who, warps_elig, "eligible warps per cycle (profile)", "warps/cycle", 0)             \
    X(who, stall_lsb, "long-scoreboard stalls per issue (profile)", "warps per issue", 0)  \
    X(who, issue_idle, "cycles without an issue: 1 - issue_active", "fraction", 0)          \
    X(who, log_c2lsu, "log1p of compute (FMA+ALU+XU) over LSU instructions", "log ratio", 0) \
    X(who, sectors_per_req, "global-load sectors per request", "sectors/request", 0)

/* The inter-SM model (inter.json): log of a kernel's slowdown beside a
 * co-runner on other SMs, at full overlap (mosaic__feat_inter). */
#define MOSAIC__FEATURES_INTER(X)                                                      \
    MOSAIC__FEATURES_KERNEL(X, self, 0)                                                 \
    MOSAIC__FEATURES_KERNEL(X, other, 1)                                                \
    X(pair, dram_demand, "both DRAM bandwidths scaled by each side's SM share", "GB/s", 1) \
    X(pair, l2_demand, "both L2 bandwidths scaled by each side's SM share", "GB/s", 1)     \
    X(self, waves, "waves of its grid on its SMs", "waves", 0)                          \
    X(other, waves, "waves of the co-runner's grid on its SMs", "waves", 0)             \
    X(self, dram_share, "its DRAM demand on its SMs over the full GPU's copy bandwidth",   \
      "fraction", 0)                                                                       \
    X(other, dram_share, "the co-runner's DRAM demand on its SMs over the full GPU's copy " \
      "bandwidth", "fraction", 1)                                                          \
    X(pair, dram_share, "both DRAM demands over the full GPU's copy bandwidth", "fraction", 1) \
    X(self, mem_wait, "long-scoreboard stalls per issue times the idle issue fraction",    \
      "warps per issue", 0)                                                                \
    X(self, l2_hit, "L2 hit rate (profile), clamped to 0..1", "fraction", 0)            \
    X(self, l2_evict, "l2_hit x mem_wait x the co-runner's DRAM share", "dimensionless", 1) \
    X(self, l2_queue, "mem_wait x the co-runner's L2 bandwidth on its SMs / 1000", "TB/s x warps/issue", 1) \
    X(other, inflight_share, "the co-runner's share of the DRAM sectors in flight", "fraction", 1) \
    X(other, inflight_dram, "inflight_share x the co-runner's DRAM share", "fraction", 1)

/* The shared-mode residual model (shared.json): log of the measured over
 * the timeline's co-run duration when both share all SMs
 * (mosaic__feat_shared). */
#define MOSAIC__FEATURES_SHARED(X)                                                     \
    MOSAIC__FEATURES_KERNEL(X, self, 0)                                                 \
    MOSAIC__FEATURES_KERNEL(X, other, 0)                                                \
    X(self, first, "1 when its blocks are dispatched first", "flag", 0)                 \
    X(self, waves, "waves of its grid on all SMs", "waves", 0)                          \
    X(other, waves, "waves of the co-runner's grid on all SMs", "waves", 0)             \
    X(self, bps, "its blocks per SM (occupancy)", "blocks", 0)                          \
    X(other, bps, "the co-runner's blocks per SM (occupancy)", "blocks", 0)             \
    X(self, room, "its blocks that fit beside the co-runner's full SM", "blocks", 0)    \
    X(other, room, "the co-runner's blocks that fit beside its full SM", "blocks", 0)   \
    X(self, log_slowdown, "log of its timeline slowdown", "log ratio", 0)               \
    X(other, log_slowdown, "log of the co-runner's timeline slowdown", "log ratio", 0)  \
    X(self, log_placement, "log of its slowdown from placement alone", "log ratio", 0)  \
    X(pair, coresident, "fraction of the overlap with both on one SM", "fraction", 0)   \
    X(self, overlap, "the overlap over its isolated duration", "fraction", 0)           \
    X(self, intra_term, "analytic intra-SM contention beside the co-runner's room",        \
      "utilisation", 0)                                                                    \
    X(pair, issue_sum, "both issue_active", "fraction of cycles", 0)                    \
    X(self, log_iso, "log of its isolated duration", "log us", 0)                       \
    X(other, log_iso, "log of the co-runner's isolated duration", "log us", 0)          \
    X(pair, log_iso_ratio, "log of the co-runner's over its isolated duration", "log ratio", 0) \
    X(self, fill, "grid over the GPU's block capacity (as self_waves)", "waves", 0)     \
    X(pair, same_smem_cfg, "1 when both run with the same shared-memory configuration", "flag", 0) \
    X(self, log_inter, "log of its inter-SM factor", "log ratio", 0)                    \
    X(pair, log_duration_ratio, "log of the co-runner's over its timeline duration",       \
      "log ratio", 0)                                                                      \
    X(other, log_grid, "log2 of the co-runner's grid", "log2 blocks", 0)                \
    X(other, busiest, "the co-runner's busiest unit (issue or a pipe)", "fraction", 0)  \
    X(self, busiest, "its busiest unit (issue or a pipe)", "fraction", 0)               \
    X(self, ready_warps, "its warps at its isolated density on an SM", "warps", 0)      \
    X(other, ready_warps, "the co-runner's warps at its isolated density", "warps", 0)  \
    X(self, issue_need, "its busiest unit over its share of the warp schedulers", "fraction", 0)

/* Positions: MOSAIC__FK_<name> within one kernel's ten, MOSAIC__FI_<who>_<name>
 * in the inter-SM row, MOSAIC__FS_<who>_<name> in the residual row. */
#define MOSAIC__FEAT_ENUM_K(who, name, meaning, unit, mono) MOSAIC__FK_##name,
#define MOSAIC__FEAT_ENUM_I(who, name, meaning, unit, mono) MOSAIC__FI_##who##_##name,
#define MOSAIC__FEAT_ENUM_S(who, name, meaning, unit, mono) MOSAIC__FS_##who##_##name,
enum { MOSAIC__FEATURES_KERNEL(MOSAIC__FEAT_ENUM_K, self, 0) MOSAIC__NF_KERNEL };
enum { MOSAIC__FEATURES_INTER(MOSAIC__FEAT_ENUM_I) MOSAIC__NF_INTER };
enum { MOSAIC__FEATURES_SHARED(MOSAIC__FEAT_ENUM_S) MOSAIC__NF_SHARED };

/* One feature as the lists give it; name is who_name. */
struct mosaic__feature {
    const char *name, *meaning, *unit;
    int mono;
};
extern const struct mosaic__feature mosaic__features_inter[MOSAIC__NF_INTER];
extern const struct mosaic__feature mosaic__features_shared[MOSAIC__NF_SHARED];

/* The inter-SM row (MOSAIC__NF_INTER floats) of self on sms_self SMs beside
 * other on sms_other, with their isolated durations there (us; NaN or 0:
 * unknown). */
void mosaic__feat_inter(const struct mosaic_gpu_desc *g,
                        const struct mosaic_pkernel *self, int sms_self, double iso_self,
                        const struct mosaic_pkernel *other, int sms_other, double iso_other,
                        float *x);

/* The shared-mode residual rows (MOSAIC__NF_SHARED floats) of a (xa) and b
 * (xb; either may be NULL) from the timeline's result res for them sharing
 * all SMs. */
void mosaic__feat_shared(const struct mosaic_gpu_desc *g,
                         const struct mosaic_pkernel *a, const struct mosaic_pkernel *b,
                         int b_first, double iso_a, double iso_b,
                         const struct mosaic_pred_result *res, float *xa, float *xb);

/* Checks the "features" array of the parsed model root (read from path)
 * against list (n entries): 0, or MOSAIC_EINVAL with a message naming path
 * and the first feature that differs, is missing or is extra. */
struct cJSON;
int mosaic__features_check(const struct cJSON *root, const char *path,
                           const struct mosaic__feature *list, int n, char *err,
                           size_t errlen);

/* Writes list's names into the model file at path as its "features" array:
 * inserted as text right after the opening brace, every other byte kept (a
 * model saved by XGBoosterSaveModel; a file that already has the array is
 * refused). 0, or a negative MOSAIC_E* code with a message naming path. */
int mosaic__features_stamp(const char *path, const struct mosaic__feature *list, int n,
                           char *err, size_t errlen);

#endif
