/*
 * Mosaic kernel profiles (library mosaic_profile, profiler/profile/): what
 * `mosaic-profile` writes and the predictor, the tools and the arbiter read
 * ("mosaic-profile/1", docs/profile-schema.md).
 *
 *   - the model: struct mosaic_profile, its GPU and its kernels, each kernel
 *     under its profile key (name + grid + block + dynamic shared memory);
 *   - the JSON writer (libc only: the capture library links it on GPU
 *     machines with no extra packages) and the reader (cJSON);
 *   - the occupancy arithmetic (blocks per SM from a kernel's resources).
 * The feature list (hardware counters and derived values) is the X-macro
 * list of mosaic/profile_metrics.h, included here. Producers of profiles:
 * the CUPTI capture library (profiler/capture/) and the ncu importer
 * (profiler/ncu/).
 *
 * Unknown values: integers hold MOSAIC_NULL (written as JSON null), doubles
 * hold NaN (written as null). Functions that can fail return 0 or a negative
 * MOSAIC_E* code (mosaic/mosaic.h; mosaic_strerror gives the sentence).
 */
#ifndef MOSAIC_PROFILE_H
#define MOSAIC_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mosaic/mosaic.h"
#include "mosaic/profile_metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MOSAIC_PROFILE_SCHEMA "mosaic-profile/1"
#define MOSAIC_PROFILE_TOOL "mosaic-profile 0.1.0"
#define MOSAIC_NULL INT64_MIN

#define MOSAIC_METHOD_CUPTI "cupti_range_profiler_kernel_replay"
#define MOSAIC_METHOD_NCU "ncu_csv"

struct mosaic_occupancy {
    int64_t blocks_per_sm;           /* cuOccupancyMaxActiveBlocksPerMultiprocessor */
    int64_t limit_threads;           /* blocks/SM allowed by warps (threads) */
    int64_t limit_regs;              /* ... by the register file */
    int64_t limit_smem;              /* ... by shared memory */
    int64_t limit_blocks;            /* the hardware's blocks/SM limit */
    int64_t reserved_smem_per_block; /* driver-reserved shared memory */
};

struct mosaic_kernel {
    char *key;  /* mosaic_kernel_key(name, grid, block, dyn_smem) */
    char *name;
    int64_t grid[3];
    int64_t block[3];
    int64_t dyn_smem;
    int64_t static_smem;
    int64_t regs;
    int64_t local_bytes;
    int64_t max_threads;
    int64_t carveout; /* preferred shared-memory carveout, %, -1 = default */
    struct mosaic_occupancy occ;
    int64_t launches; /* launches of this key seen */
    double metrics[MOSAIC_N_METRICS];
    double derived[MOSAIC_N_DERIVED];
};

struct mosaic_gpu {
    char *name;
    int64_t sm_count;
    int64_t l2_bytes;
    char *driver; /* e.g. "580.159.04" */
    char *cuda;   /* e.g. "13.0" */
    char *cc;     /* e.g. "9.0" */
};

struct mosaic_profile {
    struct mosaic_gpu gpu;
    char *date;   /* ISO 8601, UTC */
    char *method; /* MOSAIC_METHOD_* */
    char *source; /* the profiled command line, or the imported file */
    int complete; /* 1 when problems is empty and nothing was left out */
    int64_t passes; /* replay passes per kernel (capture only) */
    char **problems;
    size_t n_problems;
    size_t cap_problems;
    struct mosaic_kernel *kernels;
    size_t n_kernels;
    size_t cap_kernels;
};

/* Metric table (from mosaic/profile_metrics.h). */
const char *mosaic_metric_key(int id);
const char *mosaic_metric_name(int id);
const char *mosaic_metric_unit(int id);
enum mosaic_dim mosaic_metric_dim(int id);
int mosaic_metric_by_key(const char *key);   /* -1 if none */
int mosaic_metric_by_name(const char *name); /* -1 if none */
const char *mosaic_derived_key(int id);
const char *mosaic_derived_formula(int id);
const char *mosaic_derived_unit(int id);
int mosaic_derived_by_key(const char *key); /* -1 if none */

void mosaic_profile_init(struct mosaic_profile *p);
void mosaic_profile_free(struct mosaic_profile *p);
/* Sets a string field (frees the old value); NULL clears it. 0 or
 * MOSAIC_ENOMEM (the field is then unchanged). */
int mosaic_set_str(char **field, const char *value);
/* Appends a problem (printf format); duplicates are dropped. Clears
 * p->complete. Returns 0, or MOSAIC_ENOMEM. */
int mosaic_profile_add_problem(struct mosaic_profile *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends a kernel with every field unknown and launches 0; NULL on ENOMEM.
 * The pointer is valid until the next add. */
struct mosaic_kernel *mosaic_profile_add_kernel(struct mosaic_profile *p);
void mosaic_kernel_init(struct mosaic_kernel *k);
void mosaic_kernel_free(struct mosaic_kernel *k);
/* "name|grid=X,Y,Z|block=X,Y,Z|dsmem=N" (malloc'd; NULL on ENOMEM). */
char *mosaic_kernel_key(const char *name, const int64_t grid[3],
                        const int64_t block[3], int64_t dyn_smem);
/* The same key into buf (cap bytes, NUL-terminated when cap > 0), for a
 * lookup that should not allocate. Returns the key's length like snprintf
 * (>= cap: it was cut), or MOSAIC_EINVAL when formatting failed. */
int mosaic_kernel_key_buf(char *buf, size_t cap, const char *name,
                          const int64_t grid[3], const int64_t block[3],
                          int64_t dyn_smem);
/* An index of a profile's kernels by key (open addressing). */
struct mosaic_kindex {
    size_t *slot; /* kernel index + 1; 0 = empty */
    size_t cap;   /* power of two, or 0 */
};
/* Index of the kernel with this key, or -1. */
long mosaic_kindex_find(const struct mosaic_kindex *ix,
                        const struct mosaic_profile *p, const char *key);
/* Indexes p->kernels[idx] (already appended). 0, or MOSAIC_ENOMEM. */
int mosaic_kindex_add(struct mosaic_kindex *ix, const struct mosaic_profile *p,
                      size_t idx);
void mosaic_kindex_free(struct mosaic_kindex *ix);

/* Fills k->derived from k->metrics. */
void mosaic_kernel_derive(struct mosaic_kernel *k);
/* Number of metrics of k that are NaN. */
int mosaic_kernel_n_missing(const struct mosaic_kernel *k);

/* The current time as "YYYY-MM-DDTHH:MM:SSZ". */
void mosaic_now_iso8601(char buf[32]);

/* Writes p as JSON (strings always valid UTF-8). Returns 0, or MOSAIC_EIO
 * (errno set) when f reports a write error. */
int mosaic_profile_write(const struct mosaic_profile *p, FILE *f);
/* Writes p to path through a temporary file and rename(2). Returns 0, or
 * MOSAIC_EIO / MOSAIC_ENOMEM with a message naming the file in err. */
int mosaic_profile_write_file(const struct mosaic_profile *p, const char *path,
                              char *err, size_t errlen);

/* Reads a profile (profile_read.c, needs cJSON). Returns 0, or MOSAIC_EIO
 * (cannot read; not a regular file), MOSAIC_ETOOBIG, MOSAIC_EFORMAT (not JSON,
 * not a profile, a field of the wrong type) or MOSAIC_ENOMEM, with a message
 * naming the file and the field in err; *p is then empty.
 * The JSON is read strictly (core/json.h): text after the document, a key
 * given twice in one object, a NUL byte or nesting deeper than 64 levels is
 * refused. So are values no GPU has: gpu.sm_count outside
 * 1..MOSAIC_GPU_MAX_SMS, gpu.l2_bytes outside 1..MOSAIC_GPU_MAX_L2_BYTES, a
 * gpu.cc that is not "MAJOR.MINOR", a grid or block dimension outside CUDA's
 * launch limits, more than 1024 threads per block. Unknown (null) GPU
 * values are kept as unknown; mosaic_profile_check_gpu decides whether a
 * consumer can use the profile. */
int mosaic_profile_read_file(const char *path, struct mosaic_profile *p,
                             char *err, size_t errlen);
int mosaic_profile_read_string(const char *json, const char *what,
                               struct mosaic_profile *p, char *err,
                               size_t errlen);

/* ---- which GPU ---------------------------------------------------------- */

/* The most SMs and L2 bytes the reader accepts: far above any GPU made
 * (the H200 has 132 SMs and 60 MiB), low enough that 0, a negative number
 * or a byte count in the SM field is refused. */
#define MOSAIC_GPU_MAX_SMS 1024
#define MOSAIC_GPU_MAX_L2_BYTES (1LL << 30)

/*
 * Whether the profile p (named what in messages) was taken on the GPU that
 * want describes, for a consumer whose models or decisions are only valid
 * there (the predictor's models are fitted on one GPU). Compared: sm_count
 * and cc, and name when want has one; a field of want that is NULL or
 * MOSAIC_NULL is not compared. A profile that does not say (null) where
 * want does is refused as well: it cannot be vouched for. Returns 0, or
 * MOSAIC_EFORMAT with e.g.
 *   a100.json: gpu.sm_count: the profile was taken on a GPU with 108 SMs
 *   (NVIDIA A100-SXM4-80GB), but this needs 132 (NVIDIA H200); profile the
 *   kernels on that GPU
 * in err, or MOSAIC_EINVAL when p or want is NULL.
 */
int mosaic_profile_check_gpu(const struct mosaic_profile *p, const char *what,
                             const struct mosaic_gpu *want, char *err,
                             size_t errlen);

/* ---- launch sizes -------------------------------------------------------- */

/*
 * The number of blocks of a grid (grid[0] * grid[1] * grid[2]) and of
 * threads of a launch (blocks * block threads), with checked arithmetic
 * (a product of int64_t dimensions can overflow, and did). Return 0 with
 * the product in *out, MOSAIC_EFORMAT when a dimension is unknown
 * (MOSAIC_NULL) or below 1, or MOSAIC_ETOOBIG when the product does not fit
 * in int64_t; *out is then 0. Every consumer multiplies through these.
 */
int mosaic_launch_blocks(const int64_t grid[3], int64_t *out);
int mosaic_launch_threads(const int64_t grid[3], const int64_t block[3],
                          int64_t *out);

/* ---- occupancy ------------------------------------------------------- */

struct mosaic_occ_device {
    int cc_major, cc_minor;
    int warp_size;              /* 32 */
    int max_threads_per_sm;     /* 2048 */
    int max_blocks_per_sm;      /* 32 */
    int regs_per_sm;            /* 65536 */
    int regs_per_block;         /* 65536 */
    int smem_per_sm;            /* bytes, e.g. 233472 */
    int smem_per_block_optin;   /* bytes, e.g. 232448 */
    int reserved_smem_per_block;/* bytes, e.g. 1024 */
};

struct mosaic_occ_kernel {
    int threads_per_block;
    int regs_per_thread;
    int static_smem;
    int dyn_smem;
    int carveout; /* %, -1 = default */
};

/* The per-resource blocks/SM limits, as the CUDA occupancy calculator
 * (cuda_occupancy.h) computes them; fills the limit_* and
 * reserved_smem_per_block fields of out (blocks_per_sm is left alone). */
void mosaic_occupancy_limits(const struct mosaic_occ_device *d,
                             const struct mosaic_occ_kernel *k,
                             struct mosaic_occupancy *out);

#ifdef __cplusplus
}
#endif
#endif /* MOSAIC_PROFILE_H */
