/* Argus internals shared by the files of profiler/argus (not installed). */
#ifndef ARGUS_INTERNAL_H
#define ARGUS_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "argus/argus.h"

/* Writes a formatted sentence into msg (when msg is not NULL) and returns
 * err, so that a failure path is one statement. */
int argus__fail(int err, char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Grows *arr (elements of size elem) so that it holds at least need; cap
 * is the current capacity. Returns 0 or ARGUS_ENOMEM. */
int argus__grow(void **arr, size_t *cap, size_t need, size_t elem);

/* The name of a region or role for output: the registry's name, or the
 * ID as 0x%07x in buf. */
const char *argus__name(const argus_registry *reg, uint32_t id, char *buf,
                        size_t len);

/* Nearest-rank percentile of sorted v[0..n-1] (n > 0), p in [0, 100]. */
double argus__percentile(const double *sorted, size_t n, double p);

/* An occurrence's begin (ns after the trace's first globaltimer anchor, or
 * cycles from its warp's start when there is no clock conversion; ns after
 * the first event on argus-shim's host timebase) and its duration, from the
 * integer clocks. The statistics and the trace use these rather than
 * t_begin_ns/t_end_ns: those are absolute globaltimer values in doubles,
 * whose step at 1.8e18 ns (the H200's clock, ns since 1970) is 256 ns. */
void argus__occ_time(const argus_trace *t, const argus_occurrence *o, double *begin,
                     double *dur);

/* The buffer of a grid x block launch with cap records per warp: its
 * header (*h) and size (*bytes), or ARGUS_EINVAL/ARGUS_ELIMIT with the
 * reason in msg. Shared by argus_launch_arm and argus-shim's arming
 * (shim_arm.c), which enqueues the same buffer asynchronously. */
int argus__launch_plan(const uint32_t grid[3], const uint32_t block[3], uint32_t cap,
                       argus_buf_header *h, size_t *bytes, char *msg, size_t msglen);

/* Writes root (cJSON, NULL when building it ran out of memory) to f as one
 * JSON text and a newline, indented when pretty, and frees it. Returns 0,
 * ARGUS_ENOMEM or ARGUS_EIO. In argus_io (json.c). */
struct cJSON;
int argus__json_write(struct cJSON *root, FILE *f, int pretty);

#endif /* ARGUS_INTERNAL_H */
