/*
 * Argus hardware metrics: a kernel profile of the project's own format
 * ("mosaic-profile/1", docs/profile-schema.md) joined to the kernels of an
 * Argus report, the GPU's peaks, % of peak, and a bottleneck label per
 * kernel (docs/argus.md, "Hardware metrics").
 *
 *   argus_metrics_load    reads and checks a profile (strictly: a FIFO, a
 *                         directory, a truncated or hostile file, another
 *                         schema version are refused with the reason);
 *   argus_metrics_join    finds a kernel's profile entry by name AND launch
 *                         configuration (grid, block, dynamic shared memory,
 *                         each compared where both sides have it): exactly
 *                         one, none, or refused as ambiguous, never guessed;
 *   argus_gpu_find        the peak table of a GPU (only the H200 is known),
 *                         every number with its source;
 *   argus_metrics_pct     % of peak of a profile entry (derived);
 *   argus_bottleneck_of   the label and the inputs that decided it (derived);
 *   argus_report_json_metrics, argus_shim_metrics_text: the reports with them.
 *
 * Profile values are "observed" (CUPTI or ncu measured them, in the
 * profile's own run), % of peak and labels "derived". Needs cJSON (the
 * profile reader); in argus_io.
 */
#ifndef ARGUS_METRICS_H
#define ARGUS_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "argus.h"
#include "mosaic/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the peak table ------------------------------------------------------
 *   X(enum suffix, key, unit, what)
 * A GPU's table gives each a value (NaN: no sourced figure) and a source. */
#define ARGUS_PEAKS(X)                                                        \
    X(SM_COUNT, "sm_count", "SMs", "streaming multiprocessors")               \
    X(SM_CLOCK_MAX, "sm_clock_max", "GHz", "highest SM clock")                \
    X(MEM_CLOCK, "mem_clock", "GHz", "memory clock")                          \
    X(HBM_BW, "hbm_bandwidth", "bytes/s", "DRAM (HBM) bandwidth")             \
    X(L2_BW, "l2_bandwidth", "bytes/s", "L2 bandwidth")                       \
    X(FP64, "fp64", "FLOP/s", "FP64 (non-tensor)")                            \
    X(FP32, "fp32", "FLOP/s", "FP32 FMA throughput (non-tensor)")             \
    X(FP32_LANES, "fp32_lanes_per_sm", "lanes/cycle", "FP32 FMA lanes per SM") \
    X(TF32_TENSOR, "tf32_tensor", "FLOP/s", "TF32 tensor, dense")             \
    X(FP16_TENSOR, "fp16_tensor", "FLOP/s", "FP16 tensor, dense")             \
    X(BF16_TENSOR, "bf16_tensor", "FLOP/s", "BF16 tensor, dense")             \
    X(FP8_TENSOR, "fp8_tensor", "FLOP/s", "FP8 tensor, dense")

enum argus_peak_id {
#define ARGUS_X_PEAK(sfx, key, unit, what) ARGUS_PEAK_##sfx,
    ARGUS_PEAKS(ARGUS_X_PEAK)
#undef ARGUS_X_PEAK
    ARGUS_N_PEAKS
};

const char *argus_peak_key(int id);
const char *argus_peak_unit(int id);
const char *argus_peak_what(int id);

typedef struct argus_gpu_spec {
    const char *name;   /* exactly as the driver names it (cuDeviceGetName) */
    int64_t sm_count;
    const char *cc;     /* "9.0" */
    double value[ARGUS_N_PEAKS];
    const char *source[ARGUS_N_PEAKS];
} argus_gpu_spec;

/* The table of the GPU a profile names (name, SM count and compute
 * capability must all match an entry), or NULL with why the GPU is unknown
 * (then no % of peak is given: never a guess from a similar GPU). */
const argus_gpu_spec *argus_gpu_find(const struct mosaic_gpu *g, char *why, size_t whylen);

/* ---- profile and join ------------------------------------------------------ */

/* A kernel launch as a report knows it: the name (mangled, as CUPTI names
 * it) and, where known, its configuration. */
typedef struct argus_kcfg {
    const char *name;
    int have_grid, have_block, have_dsmem;
    int64_t grid[3], block[3], dsmem;
} argus_kcfg;

/* What was asked and what the profile gave. */
#define ARGUS_METRICS_NOT_ASKED 0
#define ARGUS_METRICS_LOADED 1
#define ARGUS_METRICS_REFUSED 2 /* the profile could not be used: why says */

typedef struct argus_metrics {
    int state;
    char path[1024];
    char why[1280]; /* the reader's message (up to 1024 bytes) and what follows */
    struct mosaic_profile prof;
    const argus_gpu_spec *spec; /* NULL: unknown GPU, % of peak omitted */
    char spec_why[256];
} argus_metrics;

void argus_metrics_init(argus_metrics *m);
void argus_metrics_free(argus_metrics *m);

/* Reads the profile at path into m (state LOADED), or returns ARGUS_EFORMAT
 * / ARGUS_EIO / ARGUS_ELIMIT / ARGUS_ENOMEM with m->state REFUSED and the
 * reason (file, field, fix) in m->why and msg. */
int argus_metrics_load(argus_metrics *m, const char *path, char *msg, size_t msglen);

/* Checks that a recording's device (name, SM count; NULL / <= 0: not
 * recorded) is the profile's GPU. 0, or ARGUS_EFORMAT with the reason. */
int argus_metrics_check_device(const argus_metrics *m, const char *name, int64_t sm_count,
                               char *why, size_t whylen);

/* The same for a device buffer, which names no GPU: every warp's SM ID
 * must be below the profile GPU's SM count. */
int argus_metrics_check_trace(const argus_metrics *m, const argus_trace *t, char *why,
                              size_t whylen);

#define ARGUS_JOIN_OK 0
#define ARGUS_JOIN_NONE 1
#define ARGUS_JOIN_AMBIGUOUS 2

/* The entry of k in p: ARGUS_JOIN_OK with its index in *idx, ARGUS_JOIN_NONE
 * or ARGUS_JOIN_AMBIGUOUS (*idx = -1) with the reason in why. *ncand: the
 * entries that matched. by (may be NULL) gets the fields compared,
 * e.g. "name,grid,block". */
int argus_metrics_join(const struct mosaic_profile *p, const argus_kcfg *k, long *idx,
                       size_t *ncand, char *by, size_t bylen, char *why, size_t whylen);

/* ---- % of peak -------------------------------------------------------------
 *   X(enum suffix, key, formula) */
#define ARGUS_PCTS(X)                                                         \
    X(DRAM_BW, "dram_bandwidth", "(dram_read_bw + dram_write_bw) / hbm_bandwidth") \
    X(L2_BW, "l2_bandwidth",                                                  \
      "32 B x (l2_read_sector_rate + l2_write_sector_rate) / l2_bandwidth")   \
    X(FMA_LANES, "fma_pipe_lanes",                                            \
      "2 x 32 x inst_fma / (duration_ns x 1e-9) / fp32: the FP32 peak's share " \
      "if every fma-pipe warp instruction were a full-warp FFMA (an upper bound)")

enum argus_pct_id {
#define ARGUS_X_PCT(sfx, key, formula) ARGUS_PCT_##sfx,
    ARGUS_PCTS(ARGUS_X_PCT)
#undef ARGUS_X_PCT
    ARGUS_N_PCTS
};

const char *argus_pct_key(int id);
const char *argus_pct_formula(int id);

typedef struct argus_pct {
    int ok;           /* value is set */
    double value;     /* % of the peak (derived) */
    char why[200];    /* when !ok: which input or peak is missing */
} argus_pct;

/* % of peak of one profile entry on the GPU spec (NULL: unknown GPU). */
void argus_metrics_pct(const struct mosaic_kernel *k, const argus_gpu_spec *spec,
                       argus_pct out[ARGUS_N_PCTS]);

/* ---- the bottleneck label (docs/argus.md, "The bottleneck rule") ---------- */

/* Thresholds of the rule. */
#define ARGUS_BN_ROOF_PCT 60.0      /* a unit at or above this % of its peak is the roof */
#define ARGUS_BN_SHORT_NS 5000.0    /* a kernel shorter than this is launch-bound */
#define ARGUS_BN_ISSUE_LATENCY 0.5  /* issue_active below this: warps mostly stalled */

#define ARGUS_BN_MAX_INPUTS 16

typedef struct argus_bn_input {
    const char *name; /* metric key, pct key or "grid_blocks", "sm_count" */
    double value;     /* NaN: missing */
    const char *unit;
    const char *mark; /* "observed" or "derived" */
} argus_bn_input;

typedef struct argus_bottleneck {
    char label[48];   /* memory-bandwidth, compute-pipe <pipe>, launch/occupancy-bound,
                         latency-bound, issue-bound, unknown */
    char rule[16];    /* which step decided: "R0".."R4" */
    char why[400];    /* the sentence: what decided, or what is missing */
    argus_bn_input in[ARGUS_BN_MAX_INPUTS];
    size_t nin;
} argus_bottleneck;

/* The label of profile entry k, on the GPU g (the profile's) with peaks
 * spec (NULL: unknown GPU). */
void argus_bottleneck_of(const struct mosaic_kernel *k, const struct mosaic_gpu *g,
                         const argus_gpu_spec *spec, argus_bottleneck *out);

/* The text summary's metrics lines for one kernel configuration (the CLI
 * prints them after the region table). */
int argus_metrics_text(const argus_metrics *m, const char *label, const argus_kcfg *k,
                       FILE *f);

/* ---- the reports with metrics ------------------------------------------------ */

/* argus_report_json (argus report's device report) with the top-level
 * "metrics" object and, when m is loaded and k names the launch,
 * "hw_metrics" [one configuration]. m NULL: argus_report_json's output. */
int argus_report_json_metrics(const argus_trace *t, const argus_registry *reg,
                              const argus_scope *s, const char *kernel, const argus_metrics *m,
                              const argus_kcfg *k, FILE *f);

/* The hardware-metrics lines of argus-shim's text summary, for the
 * metrics r->metrics points at (nothing when it is NULL). The JSON report
 * (argus_shim_report_json) carries them when r->metrics is set. */
struct argus_shim_result;
int argus_shim_metrics_text(const struct argus_shim_result *r, const argus_scope *s, FILE *f);
/* The join's outcome over r's kernel configurations: out[0] joined,
 * out[1] without an entry, out[2] ambiguous (refused), out[3] on another
 * GPU than the profile's. */
int argus_shim_metrics_counts(const struct argus_shim_result *r, const argus_scope *s,
                              uint64_t out[4]);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_METRICS_H */
