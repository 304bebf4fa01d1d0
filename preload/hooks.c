/*
 * The interposed driver entry points: one exported wrapper per row of
 * MOSAIC__HOOKS (hooks.h), each calling its family's handler with its hook
 * id. A handler calls the real entry point of exactly that ABI variant and
 * does the shim's bookkeeping around it.
 *
 * Hot path (a kernel launch, observe mode): one acquire load of the
 * binding, the real call, a lock-free lookup of the kernel's identity by
 * handle, and two relaxed atomic increments. Only while some stream is
 * being captured (counted from the capture entry points) does a launch also
 * ask the driver whether its stream is capturing.
 */
#define _GNU_SOURCE 1
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "green.h"
#include "internal.h"
#include "sched_link.h"

_Atomic int mosaic__active_captures;
static unsigned char hook_is_ptsz[MOSAIC__HOOK_COUNT];

const char *const mosaic__hook_names[MOSAIC__HOOK_COUNT] = {
#define MOSAIC__X_NAME(sym, fam, is_launch) #sym,
    MOSAIC__HOOKS(MOSAIC__X_NAME)
#undef MOSAIC__X_NAME
};

const unsigned char mosaic__hook_is_launch[MOSAIC__HOOK_COUNT] = {
#define MOSAIC__X_LAUNCH(sym, fam, is_launch) is_launch,
    MOSAIC__HOOKS(MOSAIC__X_LAUNCH)
#undef MOSAIC__X_LAUNCH
};

/* Real-function pointer types, one per family. */
#define MOSAIC__PFN(fam) mosaic__pfn_##fam
#define MOSAIC__X_TYPEDEF(fam) \
    typedef CUresult(CUDAAPI *mosaic__pfn_##fam)(MOSAIC__P_##fam);
MOSAIC__X_TYPEDEF(getproc_v1)
MOSAIC__X_TYPEDEF(getproc_v2)
MOSAIC__X_TYPEDEF(launch)
MOSAIC__X_TYPEDEF(launch_ex)
MOSAIC__X_TYPEDEF(launch_coop)
MOSAIC__X_TYPEDEF(graph_launch)
MOSAIC__X_TYPEDEF(capture_begin_v1)
MOSAIC__X_TYPEDEF(capture_begin_v2)
MOSAIC__X_TYPEDEF(capture_begin_to_graph)
MOSAIC__X_TYPEDEF(capture_end)
MOSAIC__X_TYPEDEF(graph_inst_v1)
MOSAIC__X_TYPEDEF(graph_inst_flags)
MOSAIC__X_TYPEDEF(graph_inst_params)
MOSAIC__X_TYPEDEF(graph_update_v1)
MOSAIC__X_TYPEDEF(graph_update_v2)
MOSAIC__X_TYPEDEF(graph_exec_destroy)
MOSAIC__X_TYPEDEF(library_get_kernel)
MOSAIC__X_TYPEDEF(library_enum_kernels)
MOSAIC__X_TYPEDEF(stream_sync)
MOSAIC__X_TYPEDEF(ctx_sync)
MOSAIC__X_TYPEDEF(ctx_sync_v2)
MOSAIC__X_TYPEDEF(event_sync)
#undef MOSAIC__X_TYPEDEF

/*
 * Declares b and real for a handler and returns CUDA_ERROR_NOT_FOUND when
 * this driver has no such entry point (only reachable by calling our
 * export of a name the driver lacks).
 */
#define MOSAIC__REAL(fam)                                                   \
    const struct mosaic__binding *b = mosaic__binding();                    \
    MOSAIC__PFN(fam) real = (MOSAIC__PFN(fam))real_of(b, &hook);            \
    if (MOSAIC__UNLIKELY(!real))                                            \
        return CUDA_ERROR_NOT_FOUND

/*
 * Entry points found by name (the name fallback, below): for each hook,
 * the one foreign pointer (another interposer's trampoline) that the
 * wrapper called with MOSAIC__FOREIGN in its hook id forwards to.
 */
#define MOSAIC__FOREIGN 0x10000
static _Atomic(void *) foreign_next[MOSAIC__HOOK_COUNT];

/* The function a handler calls: the driver's export, or for a wrapper
 * handed out by name the foreign pointer it stands for. Strips the
 * MOSAIC__FOREIGN bit from *hook, which then indexes the counters. */
static inline void *real_of(const struct mosaic__binding *b, int *hook)
{
    if (MOSAIC__UNLIKELY(*hook & MOSAIC__FOREIGN)) {
        *hook &= ~MOSAIC__FOREIGN;
        return atomic_load_explicit(&foreign_next[*hook], memory_order_acquire);
    }
    return b ? b->real[*hook] : NULL;
}

int mosaic__stream_capturing(const struct mosaic__binding *b, int hook,
                             CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult(CUDAAPI * is_capturing)(CUstream, CUstreamCaptureStatus *) =
        !b                   ? NULL
        : hook_is_ptsz[hook] ? b->drv.cuStreamIsCapturing_ptsz
                             : b->drv.cuStreamIsCapturing;

    /* An error here (the legacy stream while another stream captures) means
     * this stream itself is not capturing. */
    if (!is_capturing || is_capturing(s, &st) != CUDA_SUCCESS)
        return 0;
    return st == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

static void note_launch(const struct mosaic__binding *b, int hook,
                        const void *fn, CUstream s, CUresult r,
                        const unsigned *grid, const unsigned *block,
                        unsigned dyn_smem)
{
    struct mosaic__kernel *k;
    unsigned sh;

    if (MOSAIC__UNLIKELY(r != CUDA_SUCCESS)) {
        MOSAIC__INC(launch_errors);
        return;
    }
    k = mosaic__kernel_get(fn, -1);
    if (MOSAIC__UNLIKELY(atomic_load_explicit(&mosaic__active_captures,
                                              memory_order_relaxed) > 0) &&
        mosaic__stream_capturing(b, hook, s)) {
        MOSAIC__INC(captured_launches);
        atomic_fetch_add_explicit(&k->shard[mosaic__shard()].captured, 1,
                                  memory_order_relaxed);
        return;
    }
    /* This thread's shard, read once for both counts. */
    sh = mosaic__shard();
    atomic_fetch_add_explicit(&mosaic__ctr[sh].launches[hook], 1,
                              memory_order_relaxed);
    mosaic__kernel_count_config(k, sh, grid, block, dyn_smem);
    mosaic__sched_hp_launched(b, hook, s, fn, grid, block, dyn_smem);
}

/* ---- cuGetProcAddress ------------------------------------------------- */

static void substitute(const struct mosaic__binding *b, const char *symbol,
                       int version, cuuint64_t flags, void **pfn)
{
    void *w;

    if (!pfn || !*pfn || !mosaic__observing())
        return;
    w = mosaic__wrapper_for(b, *pfn);
    if (w) {
        MOSAIC__LOG(MOSAIC__LOG_DEBUG,
                    "cuGetProcAddress(%s, %d, 0x%llx) -> wrapper", symbol,
                    version, (unsigned long long)flags);
        *pfn = w;
        return;
    }
    if (!symbol || !mosaic__symbol_is_hooked(symbol) ||
        mosaic__is_our_wrapper(*pfn))
        return;
    w = mosaic__wrapper_by_name(
        symbol, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0,
        *pfn);
    if (w) {
        MOSAIC__INC(name_matched_lookups);
        MOSAIC__LOG(MOSAIC__LOG_INFO,
                    "cuGetProcAddress(%s, %d, 0x%llx) returned %p, not the "
                    "driver's export (another interposer in front of the "
                    "driver?): wrapped by name, calls go on to it",
                    symbol, version, (unsigned long long)flags, *pfn);
        *pfn = w;
        return;
    }
    /* A hooked name answered by a pointer we do not know, for an entry
     * point whose ABI depends on the version (or a second foreign pointer
     * for one hook): launches through it would go unseen, so say so. */
    MOSAIC__INC(unmatched_lookups);
    MOSAIC__LOG(MOSAIC__LOG_WARN,
                "cuGetProcAddress(%s, %d, 0x%llx) returned an entry point "
                "that is not a known export; calls through it are not "
                "observed",
                symbol, version, (unsigned long long)flags);
}

static CUresult h_getproc_v1(int hook, MOSAIC__P_getproc_v1)
{
    CUresult r;
    MOSAIC__REAL(getproc_v1);

    r = real(MOSAIC__A_getproc_v1);
    if (r == CUDA_SUCCESS)
        substitute(b, symbol, cudaVersion, flags, pfn);
    return r;
}

static CUresult h_getproc_v2(int hook, MOSAIC__P_getproc_v2)
{
    CUresult r;
    MOSAIC__REAL(getproc_v2);

    r = real(MOSAIC__A_getproc_v2);
    if (r == CUDA_SUCCESS)
        substitute(b, symbol, cudaVersion, flags, pfn);
    return r;
}

/* ---- kernel launches -------------------------------------------------- */

/* The launch handlers are inlined into each of their wrappers (plain,
 * _ptsz and the name-fallback ones), so that the hook id is a constant
 * there and a launch pays no extra call. */

static inline __attribute__((always_inline)) CUresult
h_launch(int hook, MOSAIC__P_launch)
{
    CUresult r;
    MOSAIC__REAL(launch);

    mosaic__sched_be_gate(b, hook, f, NULL, stream, (unsigned[3]){gx, gy, gz},
                          (unsigned[3]){bx, by, bz}, shmem);
    MOSAIC__GREEN_LAUNCH(r, b, hook, f, f, stream,
                         real(gf_, gx, gy, gz, bx, by, bz, shmem, gs_, params, extra),
                         real(MOSAIC__A_launch));
    mosaic__sched_be_launched(b, hook);
    if (mosaic__observing())
        note_launch(b, hook, f, stream, r, (unsigned[3]){gx, gy, gz},
                    (unsigned[3]){bx, by, bz}, shmem);
    return r;
}

static inline __attribute__((always_inline)) CUresult
h_launch_ex(int hook, MOSAIC__P_launch_ex)
{
    CUresult r;
    MOSAIC__REAL(launch_ex);

    if (config)
        mosaic__sched_be_gate(b, hook, f, NULL, config->hStream,
                              (unsigned[3]){config->gridDimX, config->gridDimY,
                                            config->gridDimZ},
                              (unsigned[3]){config->blockDimX, config->blockDimY,
                                            config->blockDimZ},
                              config->sharedMemBytes);
    if (config) {
        CUlaunchConfig gc;
        MOSAIC__GREEN_LAUNCH(r, b, hook, f, f, config->hStream,
                             real(mosaic__green_config(&gc, config, gs_), gf_, params,
                                  extra),
                             real(MOSAIC__A_launch_ex));
    } else {
        r = real(MOSAIC__A_launch_ex);
    }
    mosaic__sched_be_launched(b, hook);
    if (mosaic__observing() && config)
        note_launch(b, hook, f, config->hStream, r,
                    (unsigned[3]){config->gridDimX, config->gridDimY,
                                  config->gridDimZ},
                    (unsigned[3]){config->blockDimX, config->blockDimY,
                                  config->blockDimZ},
                    config->sharedMemBytes);
    else if (mosaic__observing())
        MOSAIC__INC(launch_errors);
    return r;
}

static inline __attribute__((always_inline)) CUresult
h_launch_coop(int hook, MOSAIC__P_launch_coop)
{
    CUresult r;
    MOSAIC__REAL(launch_coop);

    mosaic__sched_be_gate(b, hook, f, NULL, stream, (unsigned[3]){gx, gy, gz},
                          (unsigned[3]){bx, by, bz}, shmem);
    MOSAIC__GREEN_LAUNCH(r, b, hook, f, f, stream,
                         real(gf_, gx, gy, gz, bx, by, bz, shmem, gs_, params),
                         real(MOSAIC__A_launch_coop));
    mosaic__sched_be_launched(b, hook);
    if (mosaic__observing())
        note_launch(b, hook, f, stream, r, (unsigned[3]){gx, gy, gz},
                    (unsigned[3]){bx, by, bz}, shmem);
    return r;
}

static inline __attribute__((always_inline)) CUresult
h_graph_launch(int hook, MOSAIC__P_graph_launch)
{
    CUresult r;
    MOSAIC__REAL(graph_launch);

    mosaic__sched_be_gate(b, hook, NULL, exec, stream, NULL, NULL, 0);
    MOSAIC__GREEN_LAUNCH(r, b, hook, exec, NULL, stream, real(exec, gs_),
                         real(MOSAIC__A_graph_launch));
    mosaic__sched_be_launched(b, hook);
    if (!mosaic__observing())
        return r;
    if (r != CUDA_SUCCESS) {
        MOSAIC__INC(launch_errors);
    } else if (atomic_load_explicit(&mosaic__active_captures,
                                    memory_order_relaxed) > 0 &&
               mosaic__stream_capturing(b, hook, stream)) {
        MOSAIC__INC(captured_launches);
    } else {
        MOSAIC__INC(launches[hook]);
        MOSAIC__INC(graph_launches);
        if (mosaic__graph_note_launch(exec) < 0)
            MOSAIC__INC(graph_launches_unknown);
        mosaic__sched_hp_graph_launched(b, hook, stream, exec);
    }
    return r;
}

/* ---- stream capture --------------------------------------------------- */

static CUresult capture_begun(CUresult r)
{
    if (r == CUDA_SUCCESS)
        atomic_fetch_add(&mosaic__active_captures, 1);
    return r;
}

static CUresult h_capture_begin_v1(int hook, MOSAIC__P_capture_begin_v1)
{
    MOSAIC__REAL(capture_begin_v1);
    return capture_begun(real(MOSAIC__A_capture_begin_v1));
}

static CUresult h_capture_begin_v2(int hook, MOSAIC__P_capture_begin_v2)
{
    MOSAIC__REAL(capture_begin_v2);
    return capture_begun(real(MOSAIC__A_capture_begin_v2));
}

static CUresult h_capture_begin_to_graph(int hook,
                                         MOSAIC__P_capture_begin_to_graph)
{
    MOSAIC__REAL(capture_begin_to_graph);
    return capture_begun(real(MOSAIC__A_capture_begin_to_graph));
}

static CUresult h_capture_end(int hook, MOSAIC__P_capture_end)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult(CUDAAPI * is_capturing)(CUstream, CUstreamCaptureStatus *);
    int was;
    CUresult r;
    MOSAIC__REAL(capture_end);

    /* Ending a capture that is active or invalidated ends it either way;
     * ending a stream that is not capturing changes nothing. */
    is_capturing = hook_is_ptsz[hook] ? b->drv.cuStreamIsCapturing_ptsz
                                      : b->drv.cuStreamIsCapturing;
    was = is_capturing && is_capturing(stream, &st) == CUDA_SUCCESS &&
          st != CU_STREAM_CAPTURE_STATUS_NONE;
    r = real(MOSAIC__A_capture_end);
    if (was && atomic_fetch_sub(&mosaic__active_captures, 1) <= 0)
        atomic_store(&mosaic__active_captures, 0);
    return r;
}

/* ---- graphs ----------------------------------------------------------- */

static CUresult instantiated(CUresult r, CUgraphExec *exec, CUgraph graph)
{
    if (r == CUDA_SUCCESS && exec && *exec && mosaic__observing())
        mosaic__graph_note_exec(*exec, graph);
    return r;
}

static CUresult h_graph_inst_v1(int hook, MOSAIC__P_graph_inst_v1)
{
    MOSAIC__REAL(graph_inst_v1);
    return instantiated(real(MOSAIC__A_graph_inst_v1), exec, graph);
}

static CUresult h_graph_inst_flags(int hook, MOSAIC__P_graph_inst_flags)
{
    MOSAIC__REAL(graph_inst_flags);
    return instantiated(real(MOSAIC__A_graph_inst_flags), exec, graph);
}

static CUresult h_graph_inst_params(int hook, MOSAIC__P_graph_inst_params)
{
    MOSAIC__REAL(graph_inst_params);
    return instantiated(real(MOSAIC__A_graph_inst_params), exec, graph);
}

static CUresult h_graph_update_v1(int hook, MOSAIC__P_graph_update_v1)
{
    MOSAIC__REAL(graph_update_v1);
    return instantiated(real(MOSAIC__A_graph_update_v1), &exec, graph);
}

static CUresult h_graph_update_v2(int hook, MOSAIC__P_graph_update_v2)
{
    MOSAIC__REAL(graph_update_v2);
    return instantiated(real(MOSAIC__A_graph_update_v2), &exec, graph);
}

static CUresult h_graph_exec_destroy(int hook, MOSAIC__P_graph_exec_destroy)
{
    MOSAIC__REAL(graph_exec_destroy);
    if (mosaic__observing())
        mosaic__graph_forget_exec(exec);
    return real(MOSAIC__A_graph_exec_destroy);
}

/* ---- libraries: learn which handles are CUkernels --------------------- */

static CUresult h_library_get_kernel(int hook, MOSAIC__P_library_get_kernel)
{
    CUresult r;
    MOSAIC__REAL(library_get_kernel);

    r = real(MOSAIC__A_library_get_kernel);
    if (r == CUDA_SUCCESS && kernel && *kernel && mosaic__observing())
        mosaic__kernel_get(*kernel, MOSAIC__KIND_KERNEL);
    return r;
}

static CUresult h_library_enum_kernels(int hook,
                                       MOSAIC__P_library_enum_kernels)
{
    CUresult r;
    MOSAIC__REAL(library_enum_kernels);

    r = real(MOSAIC__A_library_enum_kernels);
    for (unsigned int i = 0;
         r == CUDA_SUCCESS && kernels && mosaic__observing() && i < count; i++)
        if (kernels[i])
            mosaic__kernel_get(kernels[i], MOSAIC__KIND_KERNEL);
    return r;
}

/* ---- synchronisation (sched_link.c) ----------------------------------- */

static CUresult h_stream_sync(int hook, MOSAIC__P_stream_sync)
{
    CUresult r;
    MOSAIC__REAL(stream_sync);

    mosaic__sched_syncing(stream, 0);
    r = real(MOSAIC__A_stream_sync);
    if (r == CUDA_SUCCESS)
        mosaic__sched_synced(stream, 0);
    return r;
}

static CUresult h_ctx_sync(int hook, int unused)
{
    CUresult r;
    MOSAIC__REAL(ctx_sync);

    (void)unused;
    mosaic__sched_syncing(NULL, 1);
    r = real();
    if (r == CUDA_SUCCESS)
        mosaic__sched_synced(NULL, 1);
    return r;
}

static CUresult h_ctx_sync_v2(int hook, MOSAIC__P_ctx_sync_v2)
{
    CUresult r;
    MOSAIC__REAL(ctx_sync_v2);

    mosaic__sched_syncing(NULL, 1);
    r = real(MOSAIC__A_ctx_sync_v2);
    if (r == CUDA_SUCCESS)
        mosaic__sched_synced(NULL, 1);
    return r;
}

static CUresult h_event_sync(int hook, MOSAIC__P_event_sync)
{
    CUresult r;
    MOSAIC__REAL(event_sync);

    mosaic__sched_syncing(NULL, 2);
    r = real(MOSAIC__A_event_sync);
    if (r == CUDA_SUCCESS)
        mosaic__sched_synced(NULL, 2);
    return r;
}

/* ---- the exported wrappers, generated from the hook list -------------- */

#define MOSAIC__X_WRAP(sym, fam, is_launch)                      \
    MOSAIC__EXPORT CUresult CUDAAPI sym(MOSAIC__P_##fam);        \
    CUresult CUDAAPI sym(MOSAIC__P_##fam)                        \
    {                                                            \
        return h_##fam(MOSAIC__HOOK_##sym, MOSAIC__A_##fam);     \
    }
MOSAIC__HOOKS(MOSAIC__X_WRAP)
#undef MOSAIC__X_WRAP

void *const mosaic__hook_wrappers[MOSAIC__HOOK_COUNT] = {
#define MOSAIC__X_ADDR(sym, fam, is_launch) (void *)&sym,
    MOSAIC__HOOKS(MOSAIC__X_ADDR)
#undef MOSAIC__X_ADDR
};

/* The wrappers that forward to foreign_next[] instead of the driver. */
#define MOSAIC__X_FWRAP(sym, fam, is_launch)                               \
    static CUresult CUDAAPI mosaic__fw_##sym(MOSAIC__P_##fam)               \
    {                                                                      \
        return h_##fam(MOSAIC__HOOK_##sym | MOSAIC__FOREIGN, MOSAIC__A_##fam); \
    }
MOSAIC__HOOKS(MOSAIC__X_FWRAP)
#undef MOSAIC__X_FWRAP

static void *const foreign_wrappers[MOSAIC__HOOK_COUNT] = {
#define MOSAIC__X_FADDR(sym, fam, is_launch) (void *)&mosaic__fw_##sym,
    MOSAIC__HOOKS(MOSAIC__X_FADDR)
#undef MOSAIC__X_FADDR
};

/* The families whose signature is one at every cudaVersion of their name,
 * so that a wrapper chosen by name alone cannot mismatch the ABI of what
 * the caller asked for. Excluded: cuGetProcAddress, cuStreamBeginCapture,
 * cuGraphInstantiate and cuGraphExecUpdate, whose names mean v1 or _v2
 * signatures depending on the version (only pointer identity tells). */
#define MOSAIC__STABLE_launch 1
#define MOSAIC__STABLE_launch_ex 1
#define MOSAIC__STABLE_launch_coop 1
#define MOSAIC__STABLE_graph_launch 1
#define MOSAIC__STABLE_capture_end 1
#define MOSAIC__STABLE_graph_inst_flags 1
#define MOSAIC__STABLE_graph_inst_params 1
#define MOSAIC__STABLE_graph_exec_destroy 1
#define MOSAIC__STABLE_library_get_kernel 1
#define MOSAIC__STABLE_library_enum_kernels 1
#define MOSAIC__STABLE_stream_sync 1
#define MOSAIC__STABLE_event_sync 1
/* cuCtxSynchronize gained a _v2 (with a context argument) in CUDA 12.x
 * headers; by name alone the ABI is not certain. */
#define MOSAIC__STABLE_ctx_sync 0
#define MOSAIC__STABLE_ctx_sync_v2 1
#define MOSAIC__STABLE_getproc_v1 0
#define MOSAIC__STABLE_getproc_v2 0
#define MOSAIC__STABLE_capture_begin_v1 0
#define MOSAIC__STABLE_capture_begin_v2 0
#define MOSAIC__STABLE_capture_begin_to_graph 0
#define MOSAIC__STABLE_graph_inst_v1 0
#define MOSAIC__STABLE_graph_update_v1 0
#define MOSAIC__STABLE_graph_update_v2 0

static const unsigned char hook_name_stable[MOSAIC__HOOK_COUNT] = {
#define MOSAIC__X_STABLE(sym, fam, is_launch) MOSAIC__STABLE_##fam,
    MOSAIC__HOOKS(MOSAIC__X_STABLE)
#undef MOSAIC__X_STABLE
};

int mosaic__is_our_wrapper(const void *p)
{
    for (int i = 0; i < MOSAIC__HOOK_COUNT; i++)
        if (p == mosaic__hook_wrappers[i] || p == foreign_wrappers[i])
            return 1;
    return 0;
}

/*
 * The name fallback: the hook row for a base name (the _ptsz row when the
 * per-thread default stream was asked for and the name has one), if its
 * family's ABI is the same at every version. The first foreign pointer
 * for a row is kept and its wrapper handed out; the same pointer again
 * gets the same wrapper; a different one gets NULL (unmatched), as one
 * wrapper can forward to one pointer only.
 */
void *mosaic__wrapper_by_name(const char *symbol, int ptsz, void *foreign)
{
    int row = -1;
    size_t len = strlen(symbol);
    void *expected = NULL;

    for (int i = 0; i < MOSAIC__HOOK_COUNT; i++) {
        const char *h = mosaic__hook_names[i];
        if (strncmp(h, symbol, len) != 0)
            continue;
        if (h[len] == '\0' && row < 0)
            row = i;
        else if (ptsz && strcmp(h + len, "_ptsz") == 0)
            row = i;
    }
    if (row < 0 || !hook_name_stable[row])
        return NULL;
    if (atomic_compare_exchange_strong(&foreign_next[row], &expected,
                                       foreign) ||
        expected == foreign)
        return foreign_wrappers[row];
    return NULL;
}

/* ---- load, fork and exit ---------------------------------------------- */

/*
 * No lock of ours may be held by another thread across fork(), or the
 * child could wait for it forever (it has only the forking thread). The
 * prepare handler takes every lock the shim has, in one fixed order that is
 * also the order in which the shim ever nests them (a snapshot holds the
 * stats lock, then each map's lock; a graph record is retired after the
 * map's lock is released): stats, kernel map, graph map, the list of
 * retired graph records. The parent releases them in reverse; the child,
 * where the locks belong to no running thread, initialises them afresh.
 * Binding to the driver takes no lock (driver.c).
 */
static void fork_prepare(void)
{
    pthread_mutex_lock(&mosaic__stats_lock);
    pthread_mutex_lock(&mosaic__kmap.lock);
    pthread_mutex_lock(&mosaic__gmap.lock);
    mosaic__graph_fork_lock();
}

static void fork_parent(void)
{
    mosaic__graph_fork_unlock(0);
    pthread_mutex_unlock(&mosaic__gmap.lock);
    pthread_mutex_unlock(&mosaic__kmap.lock);
    pthread_mutex_unlock(&mosaic__stats_lock);
}

/* The child starts with its own counters: it has launched nothing yet. */
static void fork_child(void)
{
    mosaic__graph_fork_unlock(1);
    pthread_mutex_init(&mosaic__gmap.lock, NULL);
    pthread_mutex_init(&mosaic__kmap.lock, NULL);
    pthread_mutex_init(&mosaic__stats_lock, NULL);
    mosaic__stats_reset();
}

__attribute__((constructor)) static void mosaic__init(void)
{
    extern char **environ;

    mosaic__config_parse(&mosaic__cfg, environ);
    if (mosaic__cfg.problems[0])
        mosaic__say(mosaic__cfg.problems);
    for (int i = 0; i < MOSAIC__HOOK_COUNT; i++)
        hook_is_ptsz[i] = strstr(mosaic__hook_names[i], "_ptsz") != NULL;
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    mosaic__green_configure();
    MOSAIC__LOG(MOSAIC__LOG_INFO, "libmosaic %s loaded: mode %s, role %s",
                MOSAIC_VERSION_STRING, mosaic__mode_name(mosaic__cfg.mode),
                mosaic__role_name(mosaic__cfg.role));
    mosaic__nvtx_setup();
}

__attribute__((destructor)) static void mosaic__fini(void)
{
    if (mosaic__cfg.stats_path[0])
        mosaic__stats_dump();
}
