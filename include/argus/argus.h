/*
 * Argus: region profiling inside GPU kernels, the host side.
 *
 * Kernels mark regions with include/argus/region.cuh. For one launch the
 * host arms a buffer (argus_launch_arm), runs the kernel, reads the buffer
 * back (argus_launch_collect) and decodes it (argus_decode) into region
 * occurrences per warp, with SM clocks converted to globaltimer
 * nanoseconds. argus_stats summarises the occurrences a scope selects;
 * the report and trace writers turn them into a text summary, a versioned
 * JSON report and a Perfetto trace (docs/argus.md).
 *
 * Every function that can fail returns 0 or a negative ARGUS_E* code
 * (argus_strerror); functions that take `msg` also write a sentence there
 * that names the field, the problem and what to do. No function exits.
 */
#ifndef ARGUS_ARGUS_H
#define ARGUS_ARGUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "record.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARGUS_ERRORS(X)                                                       \
    X(ARGUS_OK, 0, "success")                                                 \
    X(ARGUS_EINVAL, -1, "invalid argument")                                   \
    X(ARGUS_ENOMEM, -2, "out of memory")                                      \
    X(ARGUS_EIO, -3, "input/output error")                                    \
    X(ARGUS_EFORMAT, -4, "not an Argus region buffer (wrong magic or version)") \
    X(ARGUS_ETRUNC, -5, "the region buffer is shorter than its header says")  \
    X(ARGUS_ELIMIT, -6, "a size in the region buffer is beyond Argus's limits") \
    X(ARGUS_EDRIVER, -7, "a CUDA driver call failed")                         \
    X(ARGUS_ENOTINSTR, -8,                                                    \
      "the module has no argus_desc_v1: build the kernel with -DARGUS_ENABLE") \
    X(ARGUS_ENOREGION, -9, "no region of that name in the registry")          \
    X(ARGUS_EREGISTRY, -10, "the region registry or source is not valid")     \
    X(ARGUS_ERANGE, -11, "the output buffer is too small for the result")

enum argus_error {
#define ARGUS_X_ENUM(name, value, msg) name = value,
    ARGUS_ERRORS(ARGUS_X_ENUM)
#undef ARGUS_X_ENUM
};

/* A static sentence for an ARGUS_E* code (never NULL). */
const char *argus_strerror(int err);

/* Limits a buffer must respect (a hostile header cannot make the decoder
 * allocate more than these imply). */
#define ARGUS_MAX_SLOTS (1u << 24)
#define ARGUS_MAX_CAP (1u << 20)
/* Open regions per warp; a begin past it is a diagnostic (no kernel nests
 * that deep; a damaged buffer could, and would cost quadratic time). */
#define ARGUS_MAX_DEPTH 256u
/* Sub-tracks per warp in a trace; more crossing regions share the last. */
#define ARGUS_MAX_TRACKS 16u

/* ---- the registry: region IDs to names and lexical parents ----------- */

typedef struct argus_registry argus_registry;

int argus_registry_new(argus_registry **out);
void argus_registry_free(argus_registry *r);
/* Adds a region (or, with is_role, a warp role); *id gets its ID. Adding
 * the same name and parent again is not an error. Two different names
 * with one ID (a 28-bit hash collision) are: ARGUS_EREGISTRY. */
int argus_registry_add(argus_registry *r, const char *name, uint32_t parent,
                       int is_role, uint32_t *id, char *msg, size_t msglen);
/* The region's (or role's) name, or NULL when the ID is not registered. */
const char *argus_registry_name(const argus_registry *r, uint32_t id);
/* The region's lexical parent ID (0: root); -1 when not registered. */
int64_t argus_registry_parent(const argus_registry *r, uint32_t id);
size_t argus_registry_count(const argus_registry *r);
/* The i-th entry, in insertion order. */
int argus_registry_entry(const argus_registry *r, size_t i, uint32_t *id,
                         const char **name, uint32_t *parent, int *is_role);
/* Finds the regions named `name` (any parent); returns how many there are
 * and stores up to max IDs. */
size_t argus_registry_find(const argus_registry *r, const char *name,
                           uint32_t *ids, size_t max);
/* Adds what a CUDA source text declares: ARGUS_REGION_BEGIN/END("...") in
 * file order (their lexical nesting gives the parents) and ARGUS_ROLE("...").
 * `file` names the source in messages (file:line). */
int argus_registry_scan(argus_registry *r, const char *text, const char *file,
                        char *msg, size_t msglen);
/* JSON registry files (schema argus.registry, docs/argus.md). */
int argus_registry_load(const char *path, argus_registry **out, char *msg,
                        size_t msglen);
int argus_registry_save(const argus_registry *r, const char *path, char *msg,
                        size_t msglen);
/* The same document from text in memory (path names it in messages). */
int argus_registry_parse(const char *text, const char *path, argus_registry **out,
                         char *msg, size_t msglen);

/* The registry in the binary. `argus registry --embed OUT.cuh` writes a
 * header defining extern "C" __device__ const char argus_registry_v1[],
 * the registry JSON, so that a module built with it carries its names:
 *   argus_registry_from_module reads it with cuModuleGetGlobal (through
 *     the driver table) from a loaded module;
 *   argus_registry_find_embedded finds it in the bytes of a cubin (or an
 *     uncompressed fatbin or executable); argus_registry_load falls back
 *     to it for a file that is not JSON.
 * A module without it: ARGUS_ENOREGION; two in one file: ARGUS_EREGISTRY. */
#define ARGUS_REGISTRY_SYMBOL "argus_registry_v1"
int argus_registry_embed(const argus_registry *r, const char *path, char *msg,
                         size_t msglen);
int argus_registry_find_embedded(const void *bytes, size_t len, const char *where,
                                 argus_registry **out, char *msg, size_t msglen);
struct argus_driver;
int argus_registry_from_module(const struct argus_driver *drv, void *module,
                               argus_registry **out, char *msg, size_t msglen);

/* ---- decoding --------------------------------------------------------- */

/* Occurrence flags: what is partial about an occurrence. Only occurrences
 * with no flag but ARGUS_OCC_OVERLAP count in timing statistics. */
#define ARGUS_OCC_OVERLAP 1u  /* ended while a later region was still open */
#define ARGUS_OCC_NO_END 2u   /* never ended (unbalanced); end = warp end */
#define ARGUS_OCC_NO_BEGIN 4u /* its begin was lost to a ring wrap */

typedef struct argus_occurrence {
    uint32_t region; /* region ID */
    uint32_t node;   /* index into argus_trace.nodes (the dynamic path) */
    int32_t parent;  /* enclosing occurrence in the same warp, -1 if none */
    uint32_t slot;   /* warp slot (CTA * warps_per_cta + warp) */
    uint32_t cta, warp, sm;
    uint32_t depth; /* open regions around it at its begin */
    uint32_t track; /* sub-track (< ARGUS_MAX_TRACKS): 0 unless it crosses
                       another occurrence's boundary */
    uint32_t role;  /* role ID in force at its begin, 0 if none */
    int64_t iter;   /* iteration in force at its begin, -1 if none */
    uint32_t flags; /* ARGUS_OCC_* */
    uint64_t clk_begin, clk_end; /* SM cycles, unwrapped (observed) */
    double t_begin_ns, t_end_ns; /* globaltimer ns (derived, see clock), for
                          placing an occurrence: as doubles they step by 256 ns
                          at the H200's 1.8e18 ns, so the statistics and trace
                          time it from the integer clocks instead */
} argus_occurrence;

/* Warp flags. */
#define ARGUS_WARP_EMPTY 1u     /* the slot was never written */
#define ARGUS_WARP_NOT_ENDED 2u /* ARGUS_CTA_END did not run */
#define ARGUS_WARP_WRAPPED 4u   /* the ring overwrote records */

typedef struct argus_warp_info {
    uint32_t slot, cta, warp, sm;
    uint32_t flags;
    uint32_t n_written; /* records the warp wrote (observed) */
    uint32_t n_lost;    /* of them, overwritten by the ring */
    uint64_t gt_start, gt_end, clk_start, clk_end;
} argus_warp_info;

/* A node of the dynamic region tree: a region under a given path. */
typedef struct argus_node {
    uint32_t region;
    int32_t parent; /* node index, -1: the kernel */
} argus_node;

#define ARGUS_DIAGS(X)                                                        \
    X(ARGUS_DIAG_END_WITHOUT_BEGIN, "region end without an open begin")       \
    X(ARGUS_DIAG_NEVER_ENDED, "region begun but never ended")                 \
    X(ARGUS_DIAG_WRAPPED, "the warp's ring wrapped: records lost")            \
    X(ARGUS_DIAG_BAD_RECORD, "word is not a record (unknown kind)")           \
    X(ARGUS_DIAG_UNKNOWN_REGION, "region ID not in the registry")             \
    X(ARGUS_DIAG_WARP_NOT_ENDED, "warp did not run ARGUS_CTA_END")            \
    X(ARGUS_DIAG_SLOT_MISMATCH, "slot header names another CTA/warp")         \
    X(ARGUS_DIAG_CLOCK, "clock anchors are inconsistent")                    \
    X(ARGUS_DIAG_TOO_DEEP, "regions nested deeper than ARGUS_MAX_DEPTH")      \
    X(ARGUS_DIAG_UNKNOWN_CORRELATION,                                         \
      "kernel whose launch was not recorded (unknown correlation ID)")        \
    X(ARGUS_DIAG_ACTIVITY_DROPPED, "CUPTI dropped activity records")          \
    X(ARGUS_DIAG_NO_KERNEL, "launch recorded but CUPTI reported no kernel for it") \
    X(ARGUS_DIAG_DEVICE_REGIONS_MISSING,                                      \
      "instrumented launch whose device regions are not in the report "       \
      "(its armed line in the recording says why)")

enum argus_diag_kind {
#define ARGUS_X_DIAG(name, what) name,
    ARGUS_DIAGS(ARGUS_X_DIAG)
#undef ARGUS_X_DIAG
    ARGUS_DIAG_COUNT
};
const char *argus_diag_name(int kind);

typedef struct argus_diag {
    int kind;        /* enum argus_diag_kind */
    uint32_t slot;   /* warp slot */
    uint32_t index;  /* record index in the ring's surviving order */
    uint32_t value;  /* region ID or raw kind, where it applies */
    uint64_t count;  /* lost records (WRAPPED), else 1 */
} argus_diag;

/* How the SM-clock-to-ns rate was found. */
#define ARGUS_CLOCK_GIVEN 0     /* argus_decode_opts.cycles_per_ns */
#define ARGUS_CLOCK_ANCHORS 1   /* from the warps' start/end anchors */
#define ARGUS_CLOCK_NONE 2      /* no usable anchor: times are cycles */
#define ARGUS_CLOCK_HOST 3      /* argus-shim: host/CUPTI timestamps in ns;
                                   clk_* hold the same ns, no SM clock */

typedef struct argus_decode_opts {
    double cycles_per_ns;        /* SM clock (GHz); 0: estimate it */
    const argus_registry *reg;   /* for UNKNOWN_REGION diagnostics; may be NULL */
} argus_decode_opts;

#define ARGUS_MAX_DIAGS 4096u

typedef struct argus_trace {
    argus_buf_header hdr;
    argus_warp_info *warps;
    size_t nwarps;
    argus_occurrence *occ;
    size_t nocc;
    argus_node *nodes;
    size_t nnodes;
    argus_diag *diags;
    size_t ndiags;
    uint64_t diags_dropped; /* diagnostics past ARGUS_MAX_DIAGS, counted */
    uint64_t records_lost;  /* over all warps */
    uint64_t warps_active;  /* slots that were written */
    double cycles_per_ns;
    int clock_method;        /* ARGUS_CLOCK_* */
    uint64_t gt_min, gt_max; /* kernel span by globaltimer (observed) */
    double warp_time_ns;     /* sum of active warps' lifetimes (derived) */
    /* Optional names for the trace writer (argus-shim's host threads and
     * CUDA streams); NULL: "CTA c warp w" per slot and "SM s" per SM. */
    char **slot_names;       /* nwarps entries */
    char **sm_names;         /* nsm_names entries, indexed by sm */
    size_t nsm_names;
} argus_trace;

/* Decodes a raw buffer (as argus_launch_collect returns it, or a file of
 * those bytes). On error *out is left empty and msg says which field. */
int argus_decode(const void *buf, size_t len, const argus_decode_opts *opts,
                 argus_trace *out, char *msg, size_t msglen);
void argus_trace_free(argus_trace *t);

/* ---- scopes and statistics ------------------------------------------- */

/* Which occurrences count. Ranges are inclusive; the defaults
 * (argus_scope_all) select everything. */
typedef struct argus_scope {
    int64_t iter_lo, iter_hi; /* -1, -1: any iteration (and none) */
    uint32_t role;            /* 0: any */
    uint32_t cta_lo, cta_hi;
    uint32_t sm_lo, sm_hi;
    uint32_t warp_lo, warp_hi; /* warp index inside the CTA */
    uint32_t region; /* 0: any; else only this region's nodes and the
                        nodes below them (argus_stats) */
} argus_scope;

void argus_scope_all(argus_scope *s);
/* Sets s->region to the region named `name`. ARGUS_ENOREGION when the
 * registry has none (or several, under different parents); msg then lists
 * the registered regions. */
int argus_scope_region(argus_scope *s, const argus_registry *reg, const char *name,
                       char *msg, size_t msglen);
int argus_scope_match(const argus_scope *s, const argus_occurrence *o);

typedef struct argus_region_stats {
    uint32_t node, region;
    uint64_t count;    /* occurrences in scope (observed) */
    uint64_t partial;  /* of them, flagged NO_END/NO_BEGIN: not timed */
    uint64_t timed;    /* count - partial */
    uint64_t total_cycles;               /* observed */
    double total_ns, mean_ns, p50_ns, p99_ns, min_ns, max_ns; /* derived;
                          cycles when the trace's clock_method is NONE */
    double share;      /* total_cycles / the scoped warps' lifetimes in cycles */
} argus_region_stats;

/* One entry per tree node with an occurrence in scope, in node order
 * (parents before children). The caller frees *out. */
int argus_stats(const argus_trace *t, const argus_scope *s,
                argus_region_stats **out, size_t *n);

/* The node's path, "outer/load" (names from reg, else 0x%07x IDs). */
int argus_node_path(const argus_trace *t, const argus_registry *reg,
                    uint32_t node, char *buf, size_t len);

/* ---- outputs ---------------------------------------------------------- */

int argus_report_text(const argus_trace *t, const argus_registry *reg,
                      const argus_scope *s, const char *kernel, FILE *f);
/* Versioned JSON report (schema argus.report v1) and Chrome/Perfetto trace
 * event JSON; both need cJSON. */
int argus_report_json(const argus_trace *t, const argus_registry *reg,
                      const argus_scope *s, const char *kernel, FILE *f);
int argus_trace_json(const argus_trace *t, const argus_registry *reg,
                     const char *kernel, FILE *f);

/* ---- arming launches ---------------------------------------------------- */

/* The driver calls the runtime needs, as a table so that tests (and the
 * shim, which has its own resolved entry points) can supply them. Each
 * returns 0 or the driver's CUresult. */
typedef struct argus_driver {
    void *ctx;
    int (*mem_alloc)(void *ctx, uint64_t *dptr, size_t bytes);
    int (*mem_free)(void *ctx, uint64_t dptr);
    int (*memset0)(void *ctx, uint64_t dptr, size_t bytes);
    int (*htod)(void *ctx, uint64_t dst, const void *src, size_t bytes);
    int (*dtoh)(void *ctx, void *dst, uint64_t src, size_t bytes);
    int (*get_global)(void *ctx, void *module, const char *name,
                      uint64_t *dptr, size_t *bytes);
} argus_driver;

/* Fills *drv from libcuda.so.1 (dlopen; the calls use the current context). */
int argus_driver_cuda(argus_driver *drv, char *msg, size_t msglen);

typedef struct argus_launch {
    argus_driver drv;
    uint64_t buf;      /* device buffer */
    size_t bytes;
    uint64_t desc;     /* device address of argus_desc_v1 */
    argus_buf_header hdr;
} argus_launch;

/* Allocates and zeroes a buffer for a grid x block launch with cap records
 * per warp (a power of two), and points the module's argus_desc_v1 at it.
 * Launch the kernel next; only one armed launch per module at a time. */
int argus_launch_arm(const argus_driver *drv, void *module,
                     const uint32_t grid[3], const uint32_t block[3],
                     uint32_t cap, argus_launch *l, char *msg, size_t msglen);
/* After the kernel completed: copies the buffer back into *raw (malloc'd,
 * *len bytes) and disarms the descriptor. */
int argus_launch_collect(argus_launch *l, void **raw, size_t *len, char *msg,
                         size_t msglen);
/* Frees the device buffer (also after a failed collect). */
void argus_launch_release(argus_launch *l);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_ARGUS_H */
