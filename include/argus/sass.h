/*
 * Argus SASS metrics (issue 13; docs/argus-backends.md, "argus-sass"): per
 * kernel and per PC offset, instruction counts from CUPTI's SASS Metrics API
 * (cupti_sass_metrics.h: smsp__sass_inst_executed,
 * smsp__sass_thread_inst_executed, ...). argus-sass (profiler/argus/sass/)
 * collects them; attribution (attrib.h) splits them between regions with an
 * argus-pcmap map of the same cubin.
 *
 * The file is JSON, `argus.sassmetrics` v1:
 *   {"schema": "argus.sassmetrics", "version": 1, "backend": "sass_metrics",
 *    "complete": true, "problems": [], "granularity": "gpu",
 *    "count": "per PC, summed over the GPU and over the kernel's launches",
 *    "metrics": ["smsp__sass_inst_executed", "smsp__sass_thread_inst_executed"],
 *    "launches": [{"function": "sass_loop", "cubin_crc": "0x1234abcd",
 *                  "grid": [4,1,1], "block": [128,1,1],
 *                  "totals": {"smsp__sass_inst_executed": 16016, ...}}],
 *    "kernels": [{"function": "sass_loop", "cubin_crc": "0x1234abcd",
 *                 "sha256": "64 hex" or null, "launches": 1,
 *                 "pcs": [{"offset": "0x80", "smsp__sass_inst_executed": 16000,
 *                          "smsp__sass_thread_inst_executed": 512000}, ...]}]}
 * - a kernel entry is one (function, cubin) pair; its PCs are offsets from
 *   the function's start (CUPTI's pcOffset, the PC-sampling convention that
 *   argus.pcmap uses), each with one integer per name of `metrics`, summed
 *   over the launches (`launches` says how many) and over the GPU's SMs;
 * - `sha256` is the SHA-256 of the cubin the driver loaded (what argus-pcmap
 *   names a module by, so that attribution joins the two only for one
 *   build), null where the collector could not tell which cubin it was;
 * - `launches` (top level) lists every collected launch in order, with its
 *   totals per metric;
 * - `complete` is false when anything was not collected (a launch whose
 *   data CUPTI dropped, a context of another device, the program killed);
 *   each reason is a sentence in `problems`, and the counts kept are exact
 *   for what was collected.
 * A PC entry holds no numeric member but its metrics (argus exec reads
 * every other number of it as a metric value).
 *
 * Every function that can fail returns 0 or a negative ARGUS_E* code with a
 * sentence in msg naming the file, field and fix.
 */
#ifndef ARGUS_SASS_H
#define ARGUS_SASS_H

#include <stddef.h>
#include <stdint.h>

#include "argus.h"
#include "attrib.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARGUS_SASS_SCHEMA "argus.sassmetrics"
#define ARGUS_SASS_VERSION 1
#define ARGUS_SASS_MAX_METRICS 16
/* The metrics collected when none are asked for. */
#define ARGUS_SASS_DEFAULT_METRICS "smsp__sass_inst_executed,smsp__sass_thread_inst_executed"

typedef struct argus_sass_pc {
    uint64_t offset;
    uint64_t values[ARGUS_SASS_MAX_METRICS]; /* [n_metrics] */
} argus_sass_pc;

typedef struct argus_sass_kernel {
    char *function;
    uint32_t crc;      /* CUPTI's cubinCrc */
    char sha256[65];   /* "" when unknown (written as null) */
    uint64_t launches;
    argus_sass_pc *pcs; /* sorted by offset after argus_sass_sort */
    size_t n_pcs, cap_pcs;
} argus_sass_kernel;

typedef struct argus_sass_launch {
    char *function;
    uint32_t crc;
    uint32_t grid[3], block[3]; /* zeros when the launch's configuration was not seen */
    uint64_t totals[ARGUS_SASS_MAX_METRICS];
} argus_sass_launch;

typedef struct argus_sass {
    char *metrics[ARGUS_SASS_MAX_METRICS];
    size_t n_metrics;
    argus_sass_kernel *kernels;
    size_t n_kernels, cap_kernels;
    argus_sass_launch *launches;
    size_t n_launches, cap_launches;
    int complete;
    char **problems;
    size_t n_problems, cap_problems;
} argus_sass;

/* A collection of the comma-separated metric names (NULL: the default
 * list). A name twice, an empty name or more than ARGUS_SASS_MAX_METRICS is
 * ARGUS_EINVAL. */
int argus_sass_new(argus_sass **out, const char *metrics, char *msg, size_t msglen);
void argus_sass_free(argus_sass *s);

/* The kernel entry of (function, crc), added when new (sha256 NULL or ""
 * unknown; a known one fills an unknown). */
int argus_sass_kernel_of(argus_sass *s, const char *function, uint32_t crc, const char *sha256,
                         size_t *idx);
/* Adds value to metric m of the kernel's PC at offset. */
int argus_sass_add(argus_sass *s, size_t kernel, uint64_t offset, size_t m, uint64_t value,
                   char *msg, size_t msglen);
int argus_sass_add_launch(argus_sass *s, const argus_sass_launch *l);
int argus_sass_problem(argus_sass *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Adds src into dst (the same metrics in the same order, else
 * ARGUS_EINVAL): kernels of the same (function, crc) add up. */
int argus_sass_merge(argus_sass *dst, const argus_sass *src, char *msg, size_t msglen);

/* Writes the file (kernels sorted by function and crc, PCs by offset)
 * atomically: a temporary file in the same folder, renamed over path. A
 * path whose folder does not exist, or that names something other than a
 * regular file, is refused before anything is written. */
int argus_sass_write(argus_sass *s, const char *path, char *msg, size_t msglen);
/* Reads a file, checking every field; unknown keys are refused. */
int argus_sass_load(const char *path, argus_sass **out, char *msg, size_t msglen);

/* Checks that path may be written as an output: its folder exists and it
 * is absent or a regular file. 0, or ARGUS_EIO with the fix in msg. */
int argus_sass_check_out(const char *path, char *msg, size_t msglen);

/* Adds the file's PC values of one kernel to a (argus_attrib_add_metric,
 * PC = the offset in the function) after naming the program as
 * "cubin:sha256:HEX" of the kernel's cubin, as argus_pcmap_to_attrib does:
 * a map of another build is then refused by argus_attrib_program. function
 * NULL: the file must hold one kernel; nvcc's "$KERNEL$NAME" answers to
 * NAME. A kernel whose cubin is unknown (sha256 null) is ARGUS_EINVAL: it
 * could not be told from another build's. */
int argus_sass_to_attrib(const argus_sass *s, const char *function, argus_attrib *a, char *msg,
                         size_t msglen);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_SASS_H */
