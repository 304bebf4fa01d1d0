/*
 * Internal interfaces of libmosaic.so. Nothing here is exported from the
 * library (it is built with -fvisibility=hidden); the mosaic__ prefix marks
 * internal names.
 */
#ifndef MOSAIC_PRELOAD_INTERNAL_H
#define MOSAIC_PRELOAD_INTERNAL_H

/* Declare every driver ABI variant under its own exported name. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core.h"
#include "cudrv.h"
#include "hooks.h"
#include "json.h"
#include "mosaic/mosaic.h"

/* For code that a sanitizer runtime may call before it has initialised
 * itself (it resolves its interceptors through dlsym, and so through us). */
#define MOSAIC__NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

/* ---- config.c: MOSAIC_* environment ---------------------------------- */

enum mosaic__mode { MOSAIC__MODE_OBSERVE, MOSAIC__MODE_PASSTHROUGH };
enum mosaic__role { MOSAIC__ROLE_NONE, MOSAIC__ROLE_HP, MOSAIC__ROLE_BE };
enum mosaic__level {
    MOSAIC__LOG_OFF,
    MOSAIC__LOG_ERROR,
    MOSAIC__LOG_WARN,
    MOSAIC__LOG_INFO,
    MOSAIC__LOG_DEBUG
};

struct mosaic__config {
    int mode;  /* enum mosaic__mode */
    int role;  /* enum mosaic__role */
    int level; /* enum mosaic__level */
    char stats_path[4096];
    /* One line per problem found, each ending in '\n': the invalid values
     * (the reasons for pass-through) first, then one line naming unknown
     * variables. Bounded: what does not fit is counted, never overflows. */
    char problems[2048];
    size_t problems_dropped; /* invalid settings not described for room */
};

/*
 * Fills cfg from an environment array (NULL-terminated "NAME=value"). An
 * unknown or malformed value of a known variable is a problem that turns
 * the shim to pass-through; an unknown MOSAIC_* name is a problem that is
 * only reported. Returns 0, or MOSAIC_ECONFIG if any value was invalid.
 */
int mosaic__config_parse(struct mosaic__config *cfg, char *const *envp);

const char *mosaic__mode_name(int mode);
const char *mosaic__role_name(int role);

/* The process's configuration, parsed once at load. */
extern struct mosaic__config mosaic__cfg;

static inline int mosaic__observing(void)
{
    return mosaic__cfg.mode == MOSAIC__MODE_OBSERVE;
}

/* ---- log.c ----------------------------------------------------------- */

void mosaic__log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Writes text to stderr whatever the level (for problems the user caused). */
void mosaic__say(const char *text);

#define MOSAIC__LOG(lvl, ...)                                   \
    do {                                                        \
        if (MOSAIC__UNLIKELY(mosaic__cfg.level >= (lvl)))       \
            mosaic__log((lvl), __VA_ARGS__);                    \
    } while (0)

/* ---- pmap.c: pointer map with lock-free lookups ---------------------- */

struct mosaic__pmap_tab;
struct mosaic__pmap {
    _Atomic(struct mosaic__pmap_tab *) tab;
    pthread_mutex_t lock;
    size_t used;                    /* keys ever inserted (guarded by lock) */
    struct mosaic__pmap_tab *retired; /* older tables, freed by destroy */
};

#define MOSAIC__PMAP_INITIALIZER {.lock = PTHREAD_MUTEX_INITIALIZER}

void mosaic__pmap_init(struct mosaic__pmap *m);
void mosaic__pmap_destroy(struct mosaic__pmap *m);
/* Lock-free lookup; NULL when absent. */
void *mosaic__pmap_get(struct mosaic__pmap *m, const void *key);
/* Inserts or replaces (val NULL removes). Returns 0 or MOSAIC_ENOMEM. */
int mosaic__pmap_put(struct mosaic__pmap *m, const void *key, void *val);
/* Inserts val unless key is present; returns the value now in the map
 * (val, or the one present before), or NULL on allocation failure. */
void *mosaic__pmap_put_new(struct mosaic__pmap *m, const void *key, void *val);
/* Calls fn on every present value, under the map's lock. */
void mosaic__pmap_foreach(struct mosaic__pmap *m,
                          void (*fn)(const void *key, void *val, void *arg),
                          void *arg);

/* ---- driver.c: binding to the real libcuda ---------------------------- */

/* The real entry points of the hooked names (hooks.h), and the driver
 * functions the shim calls for itself: the list shared with the capture
 * library (core/cudrv.h). */
struct mosaic__binding {
    void *libcuda;
    void *real[MOSAIC__HOOK_COUNT];
    struct mosaic__drv drv;
};

extern _Atomic(const struct mosaic__binding *) mosaic__bound;
const struct mosaic__binding *mosaic__driver_bind(void);

/* The binding, made on first use; NULL while libcuda.so.1 is not loaded. */
static inline const struct mosaic__binding *mosaic__binding(void)
{
    const struct mosaic__binding *b =
        atomic_load_explicit(&mosaic__bound, memory_order_acquire);
    return b ? b : mosaic__driver_bind();
}

/* Our wrapper for a real driver pointer, or NULL when it is not hooked. */
void *mosaic__wrapper_for(const struct mosaic__binding *b, const void *real);
/* Whether p is one of the shim's own wrappers (never wrapped again). */
int mosaic__is_our_wrapper(const void *p);
/* The name fallback for a pointer that is not the driver's export (another
 * interposer's trampoline): a wrapper that forwards to foreign, chosen by
 * the base name symbol (+ _ptsz when ptsz), for entry points whose ABI is
 * the same at every version; NULL otherwise (hooks.c). */
void *mosaic__wrapper_by_name(const char *symbol, int ptsz, void *foreign);
/* Whether symbol names a hooked entry point (in any ABI variant). */
int mosaic__symbol_is_hooked(const char *symbol);
/* The real dlsym of the C library (never our interposed one). */
void *mosaic__real_dlsym(void *handle, const char *name);

extern const char *const mosaic__hook_names[MOSAIC__HOOK_COUNT];
extern const unsigned char mosaic__hook_is_launch[MOSAIC__HOOK_COUNT];
extern void *const mosaic__hook_wrappers[MOSAIC__HOOK_COUNT];

/* ---- kcache.c: kernel identity ---------------------------------------- */

/*
 * Counters on the launch path are sharded: each thread counts into one of
 * MOSAIC__SHARDS cache-line-aligned shards (assigned round-robin at its
 * first count, so up to MOSAIC__SHARDS launching threads never share a
 * line), and a report sums the shards. One shared counter per kernel would
 * bounce its cache line between the cores of every launching thread.
 */
#define MOSAIC__SHARDS 8 /* a power of two */
#define MOSAIC__CACHE_LINE 64

extern __thread unsigned mosaic__tls_shard
    __attribute__((tls_model("initial-exec")));
unsigned mosaic__shard_assign(void);

/* This thread's shard, 0 .. MOSAIC__SHARDS-1. */
static inline unsigned mosaic__shard(void)
{
    unsigned s = mosaic__tls_shard; /* shard + 1; 0 before the first count */

    return MOSAIC__UNLIKELY(!s) ? mosaic__shard_assign() : s - 1;
}

/* One launch configuration of a kernel: with the kernel's name, the key
 * under which profiles are kept (name + grid + block + dynamic smem). Its
 * launch count is in the kernel's shards. */
struct mosaic__config_count {
    _Atomic int state; /* 0 free, 1 being filled, 2 ready */
    unsigned int grid[3], block[3], dyn_smem;
};

#define MOSAIC__KERNEL_CONFIGS 4

/* A kernel's counts in one shard: one cache line. */
struct mosaic__kshard {
    _Atomic uint64_t config_launches[MOSAIC__KERNEL_CONFIGS];
    _Atomic uint64_t other_config_launches; /* further configurations */
    _Atomic uint64_t captured;              /* launches recorded into graphs */
} __attribute__((aligned(MOSAIC__CACHE_LINE)));

struct mosaic__kernel {
    struct mosaic__kshard shard[MOSAIC__SHARDS];
    const void *handle;
    char *name;          /* owned copy; "?0x..." when it could not be read */
    int kind;            /* enum mosaic__kind, as resolved */
    int num_regs;        /* registers per thread */
    int static_smem;     /* bytes of static shared memory per block */
    int max_threads;     /* most threads per block this kernel allows */
    int local_bytes;     /* local memory per thread */
    /* BE gate: loaded in the context (sched_link.c); in what was padding
     * before graph_runs, so the hot fields below keep their offsets. */
    _Atomic int gate_loaded;
    _Atomic uint64_t graph_runs; /* executions inside graphs (folded) */
    uint64_t snap;               /* scratch for stats snapshots */
    /* The first configurations a kernel is launched with, counted; most
     * kernels have one or two. Launches of further ones are only summed. */
    struct mosaic__config_count configs[MOSAIC__KERNEL_CONFIGS];
};

/* A zeroed kernel record, aligned for its shards (free with free()). */
struct mosaic__kernel *mosaic__kernel_alloc(void);
/* Sums over the shards of k: launches of configuration slot i, launches
 * with further configurations, launches recorded into graphs. */
uint64_t mosaic__kernel_config_launches(struct mosaic__kernel *k, int i);
uint64_t mosaic__kernel_other_launches(struct mosaic__kernel *k);
uint64_t mosaic__kernel_captured(struct mosaic__kernel *k);

/* Executed direct launches of k: the sum over its configurations. */
uint64_t mosaic__kernel_launches(struct mosaic__kernel *k);
void mosaic__kernel_add_config(struct mosaic__kernel *k, const unsigned *grid,
                               const unsigned *block, unsigned dyn_smem);

/* Counts one executed launch of k with this configuration. Inline: it is
 * on the launch path, and the common case is the first slot matching. */
static inline void mosaic__kernel_count_config(struct mosaic__kernel *k,
                                               unsigned shard,
                                               const unsigned *grid,
                                               const unsigned *block,
                                               unsigned dyn_smem)
{
    for (int i = 0; i < MOSAIC__KERNEL_CONFIGS; i++) {
        struct mosaic__config_count *c = &k->configs[i];
        if (atomic_load_explicit(&c->state, memory_order_acquire) != 2)
            break;
        if (c->grid[0] == grid[0] && c->grid[1] == grid[1] &&
            c->grid[2] == grid[2] && c->block[0] == block[0] &&
            c->block[1] == block[1] && c->block[2] == block[2] &&
            c->dyn_smem == dyn_smem) {
            atomic_fetch_add_explicit(&k->shard[shard].config_launches[i], 1,
                                      memory_order_relaxed);
            return;
        }
    }
    mosaic__kernel_add_config(k, grid, block, dyn_smem);
}

extern struct mosaic__pmap mosaic__kmap; /* handle -> struct mosaic__kernel */

/* The identity of a launch handle, resolved on first sight and cached.
 * Never NULL: on failure a placeholder record is returned. */
struct mosaic__kernel *mosaic__kernel_get(const void *handle, int kind_hint);
void mosaic__kernel_foreach(void (*fn)(struct mosaic__kernel *k, void *arg),
                            void *arg);

/* ---- graph.c: instantiated graphs and their kernels ------------------- */

extern struct mosaic__pmap mosaic__gmap; /* CUgraphExec -> its kernels */

void mosaic__graph_note_exec(CUgraphExec exec, CUgraph graph);
void mosaic__graph_forget_exec(CUgraphExec exec);
/* Counts one execution of exec; returns 0, or -1 if its kernels are unknown. */
int mosaic__graph_note_launch(CUgraphExec exec);
/* HP: the ids of exec's kernels on the arbiter's rings, in node order (n
 * of them), or NULL when exec is unknown, its kernels are not all known, or
 * this is no HP process. */
const uint64_t *mosaic__graph_hp_ids(CUgraphExec exec, size_t *n);
/* BE: exec as one admission unit: its kernels' ids (n of them, at most
 * MOSAIC__GRAPH_MAX_KERNELS), its id, and the connection generation it was
 * last defined on (the caller stores it once defined); NULL when exec is
 * unknown, its kernels are not all known or too many, or this is no BE
 * process. */
const uint64_t *mosaic__graph_be_unit(CUgraphExec exec, size_t *n, uint64_t *unit_id,
                                      _Atomic uint64_t **defined_gen);
/* Adds each kernel's not-yet-folded graph executions to k->snap and
 * returns the total of those executions. Caller holds the stats lock. */
uint64_t mosaic__graph_snapshot(void);
void mosaic__graph_reset_counts(void);
/* The list of retired graph records has its own lock; fork takes it last
 * (hooks.c) and the child starts it afresh (child != 0). */
void mosaic__graph_fork_lock(void);
void mosaic__graph_fork_unlock(int child);

/* ---- stats.c ---------------------------------------------------------- */

struct mosaic__counters {
    _Atomic uint64_t launches[MOSAIC__HOOK_COUNT]; /* executed, per entry */
    _Atomic uint64_t captured_launches;
    _Atomic uint64_t graph_launches;
    _Atomic uint64_t graph_kernel_launches;        /* folded part */
    _Atomic uint64_t graph_launches_unknown;       /* kernels not known */
    _Atomic uint64_t launch_errors;
    _Atomic uint64_t errors;
    _Atomic uint64_t unmatched_lookups;
    _Atomic uint64_t name_matched_lookups; /* wrapped by the name fallback */
    /* The arbiter's gate (sched_link.c): BE kernels gated on the device,
     * held on the host, host holds because the device gate could not be
     * used, kernels the gate loaded before their first gated launch (lazy
     * module loading), and HP launches followed by a device completion
     * write. */
    _Atomic uint64_t be_gated_device;
    _Atomic uint64_t be_held_host;
    _Atomic uint64_t be_gate_fallbacks;
    _Atomic uint64_t be_gate_loads;
    _Atomic uint64_t hp_completion_writes;
} __attribute__((aligned(MOSAIC__CACHE_LINE)));
/* The process's counters, one copy per shard (summed by mosaic__ctr_sum). */
extern struct mosaic__counters mosaic__ctr[MOSAIC__SHARDS];

#define MOSAIC__ADD(field, n)                                            \
    atomic_fetch_add_explicit(&mosaic__ctr[mosaic__shard()].field, (n),  \
                              memory_order_relaxed)
#define MOSAIC__INC(field) MOSAIC__ADD(field, 1)

/* The sum over the shards of the counter at byte offset off of struct
 * mosaic__counters (offsetof(struct mosaic__counters, launches[i]), ...). */
uint64_t mosaic__ctr_sum(size_t off);
#define MOSAIC__CTR(field)   \
    ((unsigned long long)mosaic__ctr_sum( \
        offsetof(struct mosaic__counters, field)))

/* Serialises snapshots and fork handling. */
extern pthread_mutex_t mosaic__stats_lock;

/* Writes the statistics JSON object to f. Returns 0 or a MOSAIC_E* code. */
int mosaic__stats_write(FILE *f);
/* Writes the stats file named by MOSAIC_STATS (at exit). */
void mosaic__stats_dump(void);
void mosaic__stats_reset(void);

/* ---- hooks.c ---------------------------------------------------------- */

/* Whether a launch into stream s (through hook) is being recorded into a
 * graph rather than executed. */
int mosaic__stream_capturing(const struct mosaic__binding *b, int hook,
                             CUstream s);
extern _Atomic int mosaic__active_captures;

#endif /* MOSAIC_PRELOAD_INTERNAL_H */
