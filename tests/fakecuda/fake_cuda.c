/*
 * Fake CUDA driver: libcuda.so.1 for GPU-free tests (see fake_cuda.h).
 *
 * It implements just enough of the driver API, with the real driver's
 * documented semantics, for the shim and its tests: code loading (a code
 * image is the C string "name1;name2;..." naming its kernels), function and
 * kernel identity, kernel launches, stream capture, graphs and
 * cuGetProcAddress. By default nothing runs: a launch is counted (or, on a
 * capturing stream, recorded as a graph node) and fake_tally() reports the
 * counts; streams and events complete at once.
 *
 * With MOSAIC_SIMGPU=<name> set, the same entry points drive the simulated
 * GPU of simgpu.c (docs/simgpu.md): launches also run, in real time, on a
 * GPU that all processes naming that segment share, and the synchronising,
 * event, stream-memory-operation and host-memory entry points follow it.
 *
 * __CUDA_API_VERSION_INTERNAL makes cuda.h declare every ABI variant under
 * its own exported name (cuLaunchKernel_ptsz, cuGetProcAddress_v2, ...)
 * instead of #defining the plain names to the newest variant, so the
 * compiler checks each definition here against the real prototype.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "fake_cuda.h"
#include "simgpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The project builds with -fvisibility=hidden; everything not static in this
 * file is driver ABI (or a fake_* control entry) and must be exported. */
#pragma GCC visibility push(default)

/* Control entry points (fake_cuda.h gives only their pointer types, since
 * tests reach them through dlsym). */
CUfunction fake_function_create(const char *name, int regs, int static_smem);
CUkernel fake_kernel_create(const char *name, int regs, int static_smem);
void fake_trace_start(void);
size_t fake_trace_get(struct fake_trace_entry *out, size_t cap);
void fake_green_counts(int *ctxs, int *streams);
void fake_tally(struct fake_tally *out);
void fake_reset(void);
CUresult fake_sim_event_ns(CUevent event, double *ns);

/* ------------------------------------------------------------------------
 * Handles: heap structs whose first field is a magic tag, so that every API
 * can reject a handle of the wrong kind with CUDA_ERROR_INVALID_HANDLE (as
 * the real driver does, e.g. cuFuncGetName on a CUkernel).
 */
enum tag {
    TAG_FUNCTION = 0xFA4E0001u,
    TAG_KERNEL,
    TAG_LIBRARY,
    TAG_MODULE,
    TAG_STREAM,
    TAG_GRAPH,
    TAG_NODE,
    TAG_GRAPH_EXEC,
    TAG_EVENT,
};

/* Code and function handles live until exit, like code that is never
 * unloaded in the real driver (the fake has no unload); they are chained
 * on one list so that they stay reachable (LeakSanitizer). */
struct kept {
    struct kept *next;
};

/* CUfunction (TAG_FUNCTION) or CUkernel (TAG_KERNEL). */
struct fn {
    uint32_t tag;
    struct kept kept;
    char *name;
    int regs, smem;
    struct fn *func; /* KERNEL: its CUfunction, made on first request */
    struct green *green; /* FUNCTION: the green context it was made in */
    _Atomic int loaded;  /* KERNEL: loaded into the primary context */
};

/* CUmodule (handles are FUNCTIONs) or CUlibrary (handles are KERNELs). */
struct code {
    uint32_t tag;
    struct kept kept;
    unsigned n;
    struct fn **fns;
};

struct graph;
struct green;

/* Green contexts (the section "Green contexts" below). */
static CUresult green_launch_check(const void *f, const struct green *g);
struct node;
struct stream;
static CUresult coop_check(const struct node *k, const struct stream *s);
static void trace_op(int kind, CUstream s, const void *obj, const char *name);
static struct green *current_green(void);
static CUresult green_function(struct fn *k, struct green *g, CUfunction *out);
static int env_int(const char *name, int dflt, int lo, int hi);
static void green_stream_gone(void);
static int driver_version(void);

struct stream {
    uint32_t tag;
    int sim;               /* simulated stream slot, -1 without the sim */
    struct graph *capture; /* non-NULL while capturing */
    bool to_graph;         /* capture goes into a caller's graph */
    struct green *green;   /* made by cuGreenCtxStreamCreate, else NULL */
};

/* Graph nodes carry no edges: nothing here depends on ordering. */
struct node {
    uint32_t tag;
    CUgraphNodeType type;
    void *fn;             /* KERNEL node: a FUNCTION or KERNEL handle */
    unsigned grid[3], block[3], shmem;
    struct graph *child;  /* GRAPH node: owned clone of the child graph */
};

struct graph {
    uint32_t tag;
    size_t n, cap;
    struct node **nodes;
};

/* An exec owns a clone of its graph, as a real exec is independent of the
 * graph it was instantiated from, and caches its flattened kernel count. */
struct exec {
    uint32_t tag;
    struct graph *g;
    uint64_t nkernels;
};

/* Guards capture state, graph contents and lazily made handles. Counters
 * are atomics so that concurrent launches on default streams never lock. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    _Atomic uint64_t kernels_executed, direct_executed, graph_kernels_executed,
        graph_launches, captured, getproc_calls, per_entry[FAKE_ENTRY_COUNT];
} g_count;

static void bump(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static _Atomic(struct kept *) g_kept;

static void keep(struct kept *k)
{
    k->next = atomic_load(&g_kept);
    while (!atomic_compare_exchange_weak(&g_kept, &k->next, k))
        ;
}

static bool is(const void *h, uint32_t tag)
{
    return h != NULL && *(const uint32_t *)h == tag;
}

/* What a getter checks first, in the driver's order: an output pointer
 * (CUDA_ERROR_INVALID_VALUE when NULL), then the handle it reads, which
 * must be one of ours of that kind (CUDA_ERROR_INVALID_HANDLE). */
static CUresult out_and_handle(const void *out, const void *h, uint32_t tag)
{
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return is(h, tag) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static bool is_fn(const void *h)
{
    return is(h, TAG_FUNCTION) || is(h, TAG_KERNEL);
}

static struct fn *fn_new(uint32_t tag, const char *name, int regs, int smem)
{
    struct fn *f = calloc(1, sizeof *f);
    if (f == NULL || name == NULL || (f->name = strdup(name)) == NULL) {
        free(f);
        return NULL;
    }
    f->tag = tag;
    f->regs = regs;
    f->smem = smem;
    keep(&f->kept);
    return f;
}

/* ------------------------------------------------------------------------
 * Streams. NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are the default
 * streams: they cannot be captured, so a launch on them always executes.
 */
static bool is_default_stream(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* *out = NULL for a default stream. */
static CUresult get_stream(CUstream hs, struct stream **out)
{
    *out = NULL;
    if (is_default_stream(hs))
        return CUDA_SUCCESS;
    if (!is(hs, TAG_STREAM))
        return CUDA_ERROR_INVALID_HANDLE;
    *out = (struct stream *)hs;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------
 * The simulated GPU (simgpu.h): 1 when on, 0 when off, and a CUresult for
 * its errors.
 */
static int sim_on(void)
{
    return sim_active();
}

static CUresult sim_result(int r)
{
    switch (r) {
    case 0: return CUDA_SUCCESS;
    case SIM_EINVAL: return CUDA_ERROR_INVALID_HANDLE;
    case SIM_ENOMEM: return CUDA_ERROR_OUT_OF_MEMORY;
    case SIM_ENOTREADY: return CUDA_ERROR_NOT_READY;
    default: return CUDA_ERROR_NOT_INITIALIZED;
    }
}

/* ------------------------------------------------------------------------
 * Lazy loading, as the H200 (driver 580.159.04) showed it: a module's
 * CUfunction is loaded when cuModuleGetFunction returns it, while a
 * library's CUkernel (what the CUDA runtime launches) is loaded into the
 * context at its first launch or cuKernelGetFunction, and that load waits
 * for the work the context has queued on every stream: behind an
 * unreleased cuStreamWaitValue32 the call does not return until the wait
 * is released (docs/results/2026-12-02-gpu/). CUDA_MODULE_LOADING=EAGER
 * loads each kernel when it is made; LAZY, the real driver's default since
 * CUDA 12.2, is the default here too. Modelled for the primary context;
 * green-context functions are loaded when made.
 */
static bool lazy_loading(void)
{
    static int lazy = -1;
    if (lazy < 0) {
        const char *v = getenv("CUDA_MODULE_LOADING");
        lazy = !(v != NULL && strcmp(v, "EAGER") == 0);
    }
    return lazy == 1;
}

/* Loads kernel k into the primary context: on the simulated GPU, first
 * waits until every stream of this process has drained (the real load's
 * wait for queued work); without it all work is already complete. */
static CUresult kernel_load(struct fn *k)
{
    if (atomic_load(&k->loaded) || !lazy_loading())
        return CUDA_SUCCESS;
    int sim = sim_on();
    if (sim < 0)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (sim > 0) {
        CUresult r = sim_result(sim_ctx_sync());
        if (r != CUDA_SUCCESS)
            return r;
    }
    atomic_store(&k->loaded, 1);
    return CUDA_SUCCESS;
}

/* The simulated slot of a stream (s NULL: the process's default stream). */
static CUresult sim_slot(const struct stream *s, int *slot)
{
    if (s != NULL) {
        *slot = s->sim;
        return CUDA_SUCCESS;
    }
    return sim_result(sim_default_stream(slot));
}

/* ------------------------------------------------------------------------
 * Graph helpers; callers hold g_lock where the graph may be shared.
 */
static struct graph *graph_new(void)
{
    struct graph *g = calloc(1, sizeof *g);
    if (g != NULL)
        g->tag = TAG_GRAPH;
    return g;
}

/* Appends a copy of *tmpl; the node takes ownership of tmpl->child. */
static struct node *graph_add(struct graph *g, const struct node *tmpl)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 8;
        struct node **nodes = realloc(g->nodes, cap * sizeof *nodes);
        if (nodes == NULL)
            return NULL;
        g->nodes = nodes;
        g->cap = cap;
    }
    struct node *n = malloc(sizeof *n);
    if (n == NULL)
        return NULL;
    *n = *tmpl;
    n->tag = TAG_NODE;
    g->nodes[g->n++] = n;
    return n;
}

static void graph_free(struct graph *g)
{
    for (size_t i = 0; i < g->n; i++) {
        if (g->nodes[i]->child != NULL)
            graph_free(g->nodes[i]->child);
        g->nodes[i]->tag = 0; /* stale handles now fail the tag check */
        free(g->nodes[i]);
    }
    free(g->nodes);
    g->tag = 0;
    free(g);
}

/* Deep copy: child graphs are embedded by value in the real driver too. */
static struct graph *graph_clone(const struct graph *g)
{
    struct graph *c = graph_new();
    for (size_t i = 0; c != NULL && i < g->n; i++) {
        struct node t = *g->nodes[i];
        if (t.child != NULL && (t.child = graph_clone(t.child)) == NULL) {
            graph_free(c);
            return NULL;
        }
        if (graph_add(c, &t) == NULL) {
            if (t.child != NULL)
                graph_free(t.child);
            graph_free(c);
            return NULL;
        }
    }
    return c;
}

/* Kernels a launch of g runs, child graphs expanded. */
static uint64_t graph_kernels(const struct graph *g)
{
    uint64_t n = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (g->nodes[i]->type == CU_GRAPH_NODE_TYPE_KERNEL)
            n++;
        else if (g->nodes[i]->type == CU_GRAPH_NODE_TYPE_GRAPH)
            n += graph_kernels(g->nodes[i]->child);
    }
    return n;
}

static struct node kernel_node(void *fn, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shmem)
{
    return (struct node){ .type = CU_GRAPH_NODE_TYPE_KERNEL, .fn = fn,
                          .grid = { gx, gy, gz }, .block = { bx, by, bz },
                          .shmem = shmem };
}

/* What the driver checks of any launch: a FUNCTION or a KERNEL (a CUkernel
 * cast to CUfunction is launchable), non-empty grid and block, and at most
 * 1024 threads per block. */
static CUresult check_kernel_node(const struct node *k)
{
    if (!is_fn(k->fn))
        return CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < 3; i++)
        if (k->grid[i] == 0 || k->block[i] == 0)
            return CUDA_ERROR_INVALID_VALUE;
    if ((uint64_t)k->block[0] * k->block[1] * k->block[2] > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Launches: executed (counted) on a non-capturing stream, recorded as a
 * kernel node on a capturing one.
 */
static CUresult launch(enum fake_entry e, CUfunction f, unsigned gx,
                       unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shmem, CUstream hs, bool coop)
{
    struct node k = kernel_node(f, gx, gy, gz, bx, by, bz, shmem);
    struct stream *s;
    if (hs == NULL && (e == FAKE_cuLaunchKernel_ptsz ||
                       e == FAKE_cuLaunchKernelEx_ptsz ||
                       e == FAKE_cuLaunchCooperativeKernel_ptsz))
        hs = CU_STREAM_PER_THREAD;
    CUresult r = check_kernel_node(&k);
    if (r == CUDA_SUCCESS)
        r = get_stream(hs, &s);
    if (r == CUDA_SUCCESS)
        r = green_launch_check(f, s != NULL ? s->green : NULL);
    if (r == CUDA_SUCCESS && coop)
        r = coop_check(&k, s);
    /* A CUkernel's first launch in the primary context loads it. */
    if (r == CUDA_SUCCESS && is(f, TAG_KERNEL) && (s == NULL || s->green == NULL))
        r = kernel_load((struct fn *)f);
    if (r != CUDA_SUCCESS)
        return r;

    bool recorded = false;
    if (s != NULL) {
        pthread_mutex_lock(&g_lock);
        if (s->capture != NULL) {
            recorded = true;
            if (graph_add(s->capture, &k) == NULL)
                r = CUDA_ERROR_OUT_OF_MEMORY;
        }
        pthread_mutex_unlock(&g_lock);
    }
    if (r != CUDA_SUCCESS)
        return r;
    int sim = recorded ? 0 : sim_on();
    if (sim < 0)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (sim > 0) {
        int slot;
        r = sim_slot(s, &slot);
        if (r == CUDA_SUCCESS)
            r = sim_result(sim_enqueue_kernel(slot, ((struct fn *)f)->name,
                                              k.grid, k.block, k.shmem));
        if (r != CUDA_SUCCESS)
            return r;
    }
    trace_op(recorded ? FAKE_OP_CAPTURED : FAKE_OP_LAUNCH, hs, f,
             ((struct fn *)f)->name);
    if (recorded) {
        bump(&g_count.captured, 1);
    } else {
        bump(&g_count.kernels_executed, 1);
        bump(&g_count.direct_executed, 1);
    }
    bump(&g_count.per_entry[e], 1);
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                        unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes,
                        CUstream hStream, void **kernelParams, void **extra)
{
    (void)kernelParams;
    (void)extra;
    return launch(FAKE_cuLaunchKernel, f, gridDimX, gridDimY, gridDimZ,
                  blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, false);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                             unsigned int gridDimY, unsigned int gridDimZ,
                             unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ,
                             unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra)
{
    (void)kernelParams;
    (void)extra;
    return launch(FAKE_cuLaunchKernel_ptsz, f, gridDimX, gridDimY, gridDimZ,
                  blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, false);
}

static CUresult launch_ex(enum fake_entry e, const CUlaunchConfig *c,
                          CUfunction f)
{
    if (c == NULL || (c->numAttrs != 0 && c->attrs == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    bool coop = false;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && c->attrs[i].value.cooperative)
            coop = true;
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            /* A green context's SMs hold clusters of at most
             * FAKECUDA_GREEN_CLUSTER_MAX (2) blocks here: on the H200 a
             * 12-SM partition refused cuBLAS's clusters (error 912). */
            uint64_t n = (uint64_t)c->attrs[i].value.clusterDim.x *
                         c->attrs[i].value.clusterDim.y * c->attrs[i].value.clusterDim.z;
            struct stream *s = NULL;
            if (get_stream(c->hStream, &s) == CUDA_SUCCESS && s != NULL && s->green != NULL &&
                n > (uint64_t)env_int("FAKECUDA_GREEN_CLUSTER_MAX", 2, 1, 16))
                return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        }
    }
    return launch(e, f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                  c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream, coop);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                          void **kernelParams, void **extra)
{
    (void)kernelParams;
    (void)extra;
    return launch_ex(FAKE_cuLaunchKernelEx, config, f);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                               void **kernelParams, void **extra)
{
    (void)kernelParams;
    (void)extra;
    return launch_ex(FAKE_cuLaunchKernelEx_ptsz, config, f);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                   unsigned int gridDimY,
                                   unsigned int gridDimZ,
                                   unsigned int blockDimX,
                                   unsigned int blockDimY,
                                   unsigned int blockDimZ,
                                   unsigned int sharedMemBytes,
                                   CUstream hStream, void **kernelParams)
{
    (void)kernelParams;
    return launch(FAKE_cuLaunchCooperativeKernel, f, gridDimX, gridDimY,
                  gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream, true);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                        unsigned int gridDimY,
                                        unsigned int gridDimZ,
                                        unsigned int blockDimX,
                                        unsigned int blockDimY,
                                        unsigned int blockDimZ,
                                        unsigned int sharedMemBytes,
                                        CUstream hStream, void **kernelParams)
{
    (void)kernelParams;
    return launch(FAKE_cuLaunchCooperativeKernel_ptsz, f, gridDimX, gridDimY,
                  gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream, true);
}

/* Queues a graph's kernels on the simulated stream in node order, child
 * graphs expanded in place (nodes carry no edges, so order is insertion
 * order, which is the capture order). */
static CUresult sim_graph(int slot, const struct graph *g)
{
    for (size_t i = 0; i < g->n; i++) {
        const struct node *n = g->nodes[i];
        CUresult r = CUDA_SUCCESS;
        if (n->type == CU_GRAPH_NODE_TYPE_KERNEL)
            r = sim_result(sim_enqueue_kernel(slot,
                                              ((struct fn *)n->fn)->name,
                                              n->grid, n->block, n->shmem));
        else if (n->type == CU_GRAPH_NODE_TYPE_GRAPH)
            r = sim_graph(slot, n->child);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

/* A graph launch runs the exec's kernels; into a capturing stream it is
 * recorded as a child-graph node holding a copy of the exec's graph. */
static CUresult graph_launch(enum fake_entry e, CUgraphExec hx, CUstream hs)
{
    struct stream *s;
    if (!is(hx, TAG_GRAPH_EXEC))
        return CUDA_ERROR_INVALID_HANDLE;
    if (hs == NULL && e == FAKE_cuGraphLaunch_ptsz)
        hs = CU_STREAM_PER_THREAD;
    CUresult r = get_stream(hs, &s);
    if (r != CUDA_SUCCESS)
        return r;

    struct exec *x = (struct exec *)hx;
    bool recorded = false;
    uint64_t n = 0;
    pthread_mutex_lock(&g_lock);
    if (s != NULL && s->capture != NULL) {
        struct node c = { .type = CU_GRAPH_NODE_TYPE_GRAPH,
                          .child = graph_clone(x->g) };
        recorded = true;
        if (c.child == NULL || graph_add(s->capture, &c) == NULL) {
            if (c.child != NULL)
                graph_free(c.child);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    } else {
        n = x->nkernels;
        int sim = sim_on();
        int slot;
        if (sim < 0)
            r = CUDA_ERROR_NOT_INITIALIZED;
        else if (sim > 0 && (r = sim_slot(s, &slot)) == CUDA_SUCCESS)
            r = sim_graph(slot, x->g); /* g_lock keeps the exec's graph */
    }
    pthread_mutex_unlock(&g_lock);
    if (r != CUDA_SUCCESS)
        return r;
    trace_op(recorded ? FAKE_OP_CAPTURED : FAKE_OP_GRAPH, hs, hx, NULL);
    if (recorded) {
        bump(&g_count.captured, 1);
    } else {
        bump(&g_count.graph_launches, 1);
        bump(&g_count.graph_kernels_executed, n);
        bump(&g_count.kernels_executed, n);
    }
    bump(&g_count.per_entry[e], 1);
    return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec hGraph, CUstream hStream)
{
    return graph_launch(FAKE_cuGraphLaunch, hGraph, hStream);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_launch(FAKE_cuGraphLaunch_ptsz, hGraphExec, hStream);
}

/* ------------------------------------------------------------------------
 * Context and device: one device, one implicit context.
 */
CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_on() < 0 ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = driver_version();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    if (phStream == NULL || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    int sim = sim_on();
    if (sim < 0)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->sim = -1;
    if (sim > 0) {
        CUresult r = sim_result(sim_stream_new(&s->sim));
        if (r != CUDA_SUCCESS) {
            free(s);
            return r;
        }
    }
    s->tag = TAG_STREAM;
    *phStream = (CUstream)s;
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    if (!is(hStream, TAG_STREAM))
        return CUDA_ERROR_INVALID_HANDLE;
    struct stream *s = (struct stream *)hStream;
    pthread_mutex_lock(&g_lock);
    if (s->capture != NULL && !s->to_graph) /* capture abandoned */
        graph_free(s->capture);
    if (s->sim >= 0) /* freed once its queued work is done, as in CUDA */
        sim_stream_release(s->sim);
    if (s->green != NULL)
        green_stream_gone();
    s->tag = 0;
    free(s);
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Code: a module holds FUNCTIONs, a library KERNELs, one per name in the
 * image, each with the default 32 registers and no static shared memory.
 */
static CUresult code_load(struct code **out, uint32_t tag, const void *image)
{
    if (out == NULL || image == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct code *c = calloc(1, sizeof *c);
    char *names = strdup(image), *save = NULL;
    size_t len = strlen(image);
    /* n names need at most len/2+1 slots ("a;b;c"). */
    if (c != NULL && names != NULL)
        c->fns = calloc(len / 2 + 1, sizeof *c->fns);
    if (c == NULL || names == NULL || c->fns == NULL)
        goto oom;
    c->tag = tag;
    for (char *t = strtok_r(names, ";", &save); t != NULL;
         t = strtok_r(NULL, ";", &save)) {
        c->fns[c->n] = fn_new(tag == TAG_MODULE ? TAG_FUNCTION : TAG_KERNEL,
                              t, 32, 0);
        if (c->fns[c->n++] == NULL)
            goto oom;
    }
    free(names);
    keep(&c->kept);
    *out = c;
    return CUDA_SUCCESS;
oom:
    free(names);
    if (c != NULL)
        free(c->fns);
    free(c);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult code_get(struct fn **out, const void *hc, uint32_t tag,
                         const char *name)
{
    if (out == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!is(hc, tag))
        return CUDA_ERROR_INVALID_HANDLE;
    const struct code *c = hc;
    for (unsigned i = 0; i < c->n; i++) {
        if (strcmp(c->fns[i]->name, name) == 0) {
            *out = c->fns[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    struct code *c = NULL;
    CUresult r = code_load(module != NULL ? &c : NULL, TAG_MODULE, image);
    if (r == CUDA_SUCCESS)
        *module = (CUmodule)c;
    return r;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
                             const char *name)
{
    struct fn *f = NULL;
    CUresult r = code_get(hfunc != NULL ? &f : NULL, hmod, TAG_MODULE, name);
    if (r == CUDA_SUCCESS)
        *hfunc = (CUfunction)f;
    return r;
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                           CUjit_option *jitOptions, void **jitOptionsValues,
                           unsigned int numJitOptions,
                           CUlibraryOption *libraryOptions,
                           void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    struct code *c = NULL;
    CUresult r = code_load(library != NULL ? &c : NULL, TAG_LIBRARY, code);
    if (r == CUDA_SUCCESS)
        *library = (CUlibrary)c;
    return r;
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
                            const char *name)
{
    struct fn *k = NULL;
    CUresult r = code_get(pKernel != NULL ? &k : NULL, library, TAG_LIBRARY,
                          name);
    if (r == CUDA_SUCCESS)
        *pKernel = (CUkernel)k;
    return r;
}

CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    CUresult bad = out_and_handle(count, lib, TAG_LIBRARY);
    if (bad != CUDA_SUCCESS)
        return bad;
    *count = ((struct code *)lib)->n;
    return CUDA_SUCCESS;
}

CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels,
                                   CUlibrary lib)
{
    CUresult bad = out_and_handle(kernels, lib, TAG_LIBRARY);
    if (bad != CUDA_SUCCESS)
        return bad;
    const struct code *c = (struct code *)lib;
    for (unsigned i = 0; i < numKernels && i < c->n; i++)
        kernels[i] = (CUkernel)c->fns[i];
    return CUDA_SUCCESS;
}

/* The kernel's function in the (only) context: made once, then the same. */
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    CUresult bad = out_and_handle(pFunc, kernel, TAG_KERNEL);
    if (bad != CUDA_SUCCESS)
        return bad;
    struct fn *k = (struct fn *)kernel;
    struct green *g = current_green();
    if (g != NULL)
        return green_function(k, g, pFunc);
    CUresult r = kernel_load(k);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&g_lock);
    if (k->func == NULL)
        k->func = fn_new(TAG_FUNCTION, k->name, k->regs, k->smem);
    *pFunc = (CUfunction)k->func;
    pthread_mutex_unlock(&g_lock);
    return *pFunc != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUfunction fake_function_create(const char *name, int regs, int static_smem)
{
    return (CUfunction)fn_new(TAG_FUNCTION, name, regs, static_smem);
}

/* Every CUfunction this fake hands out is loaded (a module's when it is
 * returned, a kernel's by cuKernelGetFunction), so cuFuncLoad has nothing
 * left to do; both check the handle as the driver does. */
CUresult cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function)
{
    CUresult bad = out_and_handle(state, function, TAG_FUNCTION);
    if (bad != CUDA_SUCCESS)
        return bad;
    *state = CU_FUNCTION_LOADING_STATE_LOADED;
    return CUDA_SUCCESS;
}

CUresult cuFuncLoad(CUfunction function)
{
    return is(function, TAG_FUNCTION) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUkernel fake_kernel_create(const char *name, int regs, int static_smem)
{
    return (CUkernel)fn_new(TAG_KERNEL, name, regs, static_smem);
}

/* ------------------------------------------------------------------------
 * Identity and attributes: the FUNCTION-only and KERNEL-only entry points
 * reject the other kind, so the shim has to handle both.
 */
static CUresult get_name(const char **name, const void *h, uint32_t tag)
{
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!is(h, tag))
        return CUDA_ERROR_INVALID_HANDLE;
    *name = ((const struct fn *)h)->name;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    return get_name(name, hfunc, TAG_FUNCTION);
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    return get_name(name, hfunc, TAG_KERNEL);
}

static CUresult get_attribute(int *pi, CUfunction_attribute attrib,
                              const void *h, uint32_t tag)
{
    if (pi == NULL || (unsigned)attrib >= CU_FUNC_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (!is(h, tag))
        return CUDA_ERROR_INVALID_HANDLE;
    const struct fn *f = h;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = f->regs; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = f->smem; break;
    default: *pi = 0; break; /* LOCAL_SIZE_BYTES and the rest */
    }
    return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
                            CUfunction hfunc)
{
    return get_attribute(pi, attrib, hfunc, TAG_FUNCTION);
}

CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib,
                              CUkernel kernel, CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return get_attribute(pi, attrib, kernel, TAG_KERNEL);
}

/* ------------------------------------------------------------------------
 * Stream capture.
 */
static CUresult begin_capture(CUstream hs, CUstreamCaptureMode mode,
                              struct graph *into)
{
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (is_default_stream(hs))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!is(hs, TAG_STREAM))
        return CUDA_ERROR_INVALID_HANDLE;
    struct stream *s = (struct stream *)hs;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&g_lock);
    if (s->capture != NULL)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if ((s->capture = into != NULL ? into : graph_new()) == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else
        s->to_graph = into != NULL;
    pthread_mutex_unlock(&g_lock);
    return r;
}

/* v1 predates capture modes and behaves as GLOBAL. */
CUresult cuStreamBeginCapture(CUstream hStream)
{
    return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL);
}

CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
    return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL);
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    return begin_capture(hStream, mode, NULL);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream,
                                      CUstreamCaptureMode mode)
{
    return begin_capture(hStream, mode, NULL);
}

/* Captures into an existing graph; dependencies are accepted and ignored
 * (the fake keeps no edges). */
static CUresult begin_capture_to_graph(CUstream hs, CUgraph hg,
                                       const CUgraphNode *deps, size_t ndeps,
                                       CUstreamCaptureMode mode)
{
    if (ndeps != 0 && deps == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!is(hg, TAG_GRAPH))
        return CUDA_ERROR_INVALID_HANDLE;
    return begin_capture(hs, mode, (struct graph *)hg);
}

CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                     const CUgraphNode *dependencies,
                                     const CUgraphEdgeData *dependencyData,
                                     size_t numDependencies,
                                     CUstreamCaptureMode mode)
{
    (void)dependencyData;
    return begin_capture_to_graph(hStream, hGraph, dependencies,
                                  numDependencies, mode);
}

CUresult cuStreamBeginCaptureToGraph_ptsz(
    CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
    const CUgraphEdgeData *dependencyData, size_t numDependencies,
    CUstreamCaptureMode mode)
{
    (void)dependencyData;
    return begin_capture_to_graph(hStream, hGraph, dependencies,
                                  numDependencies, mode);
}

static CUresult end_capture(CUstream hs, CUgraph *out)
{
    struct stream *s;
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = get_stream(hs, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s == NULL)
        return CUDA_ERROR_ILLEGAL_STATE;
    pthread_mutex_lock(&g_lock);
    if (s->capture == NULL) {
        r = CUDA_ERROR_ILLEGAL_STATE;
    } else {
        *out = (CUgraph)s->capture;
        s->capture = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    return end_capture(hStream, phGraph);
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    return end_capture(hStream, phGraph);
}

static CUresult is_capturing(CUstream hs, CUstreamCaptureStatus *status)
{
    struct stream *s;
    if (status == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = get_stream(hs, &s);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&g_lock);
    *status = s != NULL && s->capture != NULL ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                              : CU_STREAM_CAPTURE_STATUS_NONE;
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream hStream,
                             CUstreamCaptureStatus *captureStatus)
{
    return is_capturing(hStream, captureStatus);
}

CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
                                  CUstreamCaptureStatus *captureStatus)
{
    return is_capturing(hStream, captureStatus);
}

/* ------------------------------------------------------------------------
 * Graphs.
 */
CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    if (phGraph == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct graph *g = graph_new();
    if (g == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = (CUgraph)g;
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
    if (!is(hGraph, TAG_GRAPH))
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_lock);
    graph_free((struct graph *)hGraph);
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

/* Adds a copy of *tmpl to hg; tmpl->child, if any, is cloned from the
 * caller's graph (the real driver embeds a copy too). */
static CUresult add_node(CUgraphNode *out, CUgraph hg,
                         const CUgraphNode *deps, size_t ndeps,
                         const struct node *tmpl)
{
    if (out == NULL || (ndeps != 0 && deps == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < ndeps; i++)
        if (!is(deps[i], TAG_NODE))
            return CUDA_ERROR_INVALID_VALUE;
    if (!is(hg, TAG_GRAPH) ||
        (tmpl->child != NULL && !is(tmpl->child, TAG_GRAPH)))
        return CUDA_ERROR_INVALID_HANDLE;
    if (tmpl->type == CU_GRAPH_NODE_TYPE_KERNEL) {
        CUresult r = check_kernel_node(tmpl);
        if (r != CUDA_SUCCESS)
            return r;
    }
    struct node t = *tmpl, *n = NULL;
    pthread_mutex_lock(&g_lock);
    if (t.child == NULL || (t.child = graph_clone(t.child)) != NULL) {
        n = graph_add((struct graph *)hg, &t);
        if (n == NULL && t.child != NULL)
            graph_free(t.child);
    }
    pthread_mutex_unlock(&g_lock);
    if (n == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = (CUgraphNode)n;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies,
                              size_t numDependencies,
                              const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    if (nodeParams == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const CUDA_KERNEL_NODE_PARAMS_v1 *p = nodeParams;
    struct node k = kernel_node(p->func, p->gridDimX, p->gridDimY,
                                p->gridDimZ, p->blockDimX, p->blockDimY,
                                p->blockDimZ, p->sharedMemBytes);
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &k);
}

/* v2: kern is used only when func is NULL. */
CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                 const CUgraphNode *dependencies,
                                 size_t numDependencies,
                                 const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    if (nodeParams == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const CUDA_KERNEL_NODE_PARAMS *p = nodeParams;
    if (p->func == NULL && !is(p->kern, TAG_KERNEL))
        return CUDA_ERROR_INVALID_HANDLE;
    struct node k = kernel_node(p->func != NULL ? (void *)p->func
                                                : (void *)p->kern,
                                p->gridDimX, p->gridDimY, p->gridDimZ,
                                p->blockDimX, p->blockDimY, p->blockDimZ,
                                p->sharedMemBytes);
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &k);
}

CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                  const CUgraphNode *dependencies,
                                  size_t numDependencies, CUgraph childGraph)
{
    if (childGraph == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct node c = { .type = CU_GRAPH_NODE_TYPE_GRAPH,
                      .child = (struct graph *)childGraph };
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &c);
}

CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                             const CUgraphNode *dependencies,
                             size_t numDependencies)
{
    struct node e = { .type = CU_GRAPH_NODE_TYPE_EMPTY };
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &e);
}

/* nodes == NULL: *numNodes = the count. Else up to *numNodes nodes are
 * written, surplus slots set to NULL, and *numNodes = the count. */
CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    CUresult bad = out_and_handle(numNodes, hGraph, TAG_GRAPH);
    if (bad != CUDA_SUCCESS)
        return bad;
    const struct graph *g = (struct graph *)hGraph;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; nodes != NULL && i < *numNodes; i++)
        nodes[i] = i < g->n ? (CUgraphNode)g->nodes[i] : NULL;
    *numNodes = g->n;
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    CUresult bad = out_and_handle(type, hNode, TAG_NODE);
    if (bad != CUDA_SUCCESS)
        return bad;
    *type = ((struct node *)hNode)->type;
    return CUDA_SUCCESS;
}

static CUresult get_node(const void *hn, CUgraphNodeType type,
                         const struct node **out)
{
    if (!is(hn, TAG_NODE))
        return CUDA_ERROR_INVALID_HANDLE;
    *out = hn;
    return (*out)->type == type ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* v1 has only func: a node recorded from a CUkernel gives the CUkernel
 * back cast to CUfunction, as it was launched. kernelParams/extra are not
 * kept and read back as NULL. */
CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                    CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    const struct node *n;
    CUresult r = get_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (nodeParams == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *nodeParams = (CUDA_KERNEL_NODE_PARAMS_v1){
        .func = n->fn, .gridDimX = n->grid[0], .gridDimY = n->grid[1],
        .gridDimZ = n->grid[2], .blockDimX = n->block[0],
        .blockDimY = n->block[1], .blockDimZ = n->block[2],
        .sharedMemBytes = n->shmem };
    return CUDA_SUCCESS;
}

/* v2: func for a FUNCTION, kern (func NULL) for a KERNEL. */
CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
                                       CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    const struct node *n;
    CUresult r = get_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (nodeParams == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    bool is_kern = is(n->fn, TAG_KERNEL);
    *nodeParams = (CUDA_KERNEL_NODE_PARAMS){
        .func = is_kern ? NULL : n->fn, .kern = is_kern ? n->fn : NULL,
        .gridDimX = n->grid[0], .gridDimY = n->grid[1],
        .gridDimZ = n->grid[2], .blockDimX = n->block[0],
        .blockDimY = n->block[1], .blockDimZ = n->block[2],
        .sharedMemBytes = n->shmem };
    return CUDA_SUCCESS;
}

/* The embedded graph; it belongs to the node (do not destroy it). */
CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph)
{
    const struct node *n;
    CUresult r = get_node(hNode, CU_GRAPH_NODE_TYPE_GRAPH, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (phGraph == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *phGraph = (CUgraph)n->child;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Graph execs.
 */
static CUresult instantiate(CUgraphExec *out, CUgraph hg)
{
    CUresult bad = out_and_handle(out, hg, TAG_GRAPH);
    if (bad != CUDA_SUCCESS)
        return bad;
    struct exec *x = calloc(1, sizeof *x);
    if (x == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&g_lock);
    x->g = graph_clone((struct graph *)hg);
    if (x->g != NULL)
        x->nkernels = graph_kernels(x->g);
    pthread_mutex_unlock(&g_lock);
    if (x->g == NULL) {
        free(x);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    x->tag = TAG_GRAPH_EXEC;
    *out = (CUgraphExec)x;
    return CUDA_SUCCESS;
}

/* The flags cuda.h knows; the driver rejects any other bit. */
#define INSTANTIATE_FLAGS                                                  \
    (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |                     \
     CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |                                  \
     CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |                           \
     CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                            CUgraphNode *phErrorNode, char *logBuffer,
                            size_t bufferSize)
{
    (void)phErrorNode; /* written only on failure, which cannot happen here */
    (void)logBuffer;
    (void)bufferSize;
    return instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                               CUgraphNode *phErrorNode, char *logBuffer,
                               size_t bufferSize)
{
    (void)phErrorNode;
    (void)logBuffer;
    (void)bufferSize;
    return instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags)
{
    if (flags & ~(unsigned long long)INSTANTIATE_FLAGS)
        return CUDA_ERROR_INVALID_VALUE;
    return instantiate(phGraphExec, hGraph);
}

static CUresult instantiate_params(CUgraphExec *out, CUgraph hg,
                                   CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    if (p == NULL || (p->flags & ~(cuuint64_t)INSTANTIATE_FLAGS))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = instantiate(out, hg);
    p->hErrNode_out = NULL;
    p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                                      : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}

CUresult cuGraphInstantiateWithParams(
    CUgraphExec *phGraphExec, CUgraph hGraph,
    CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return instantiate_params(phGraphExec, hGraph, instantiateParams);
}

CUresult cuGraphInstantiateWithParams_ptsz(
    CUgraphExec *phGraphExec, CUgraph hGraph,
    CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return instantiate_params(phGraphExec, hGraph, instantiateParams);
}

/* An update succeeds when the new graph has the exec's topology; with no
 * edges kept, that means the same number of nodes, of the same types in
 * order. The exec then runs the new graph's kernels. */
static CUresult exec_update(CUgraphExec hx, CUgraph hg,
                            CUgraphExecUpdateResultInfo *info)
{
    *info = (CUgraphExecUpdateResultInfo){ CU_GRAPH_EXEC_UPDATE_ERROR, NULL,
                                           NULL };
    if (!is(hx, TAG_GRAPH_EXEC) || !is(hg, TAG_GRAPH))
        return CUDA_ERROR_INVALID_HANDLE;
    struct exec *x = (struct exec *)hx;
    const struct graph *g = (struct graph *)hg;
    CUresult r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    pthread_mutex_lock(&g_lock);
    if (g->n != x->g->n) {
        info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        goto out;
    }
    for (size_t i = 0; i < g->n; i++) {
        if (g->nodes[i]->type != x->g->nodes[i]->type) {
            info->result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
            info->errorNode = (CUgraphNode)g->nodes[i];
            goto out;
        }
    }
    struct graph *c = graph_clone(g);
    if (c == NULL) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    graph_free(x->g);
    x->g = c;
    x->nkernels = graph_kernels(c);
    info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    r = CUDA_SUCCESS;
out:
    pthread_mutex_unlock(&g_lock);
    return r;
}

CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                           CUgraphNode *hErrorNode_out,
                           CUgraphExecUpdateResult *updateResult_out)
{
    CUgraphExecUpdateResultInfo info;
    CUresult r = exec_update(hGraphExec, hGraph, &info);
    if (hErrorNode_out != NULL)
        *hErrorNode_out = info.errorNode;
    if (updateResult_out != NULL)
        *updateResult_out = info.result;
    return r;
}

CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                              CUgraphExecUpdateResultInfo *resultInfo)
{
    if (resultInfo == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return exec_update(hGraphExec, hGraph, resultInfo);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    if (!is(hGraphExec, TAG_GRAPH_EXEC))
        return CUDA_ERROR_INVALID_HANDLE;
    struct exec *x = (struct exec *)hGraphExec;
    pthread_mutex_lock(&g_lock);
    graph_free(x->g);
    x->tag = 0;
    free(x);
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Synchronisation, events, stream memory operations and host memory. They
 * follow the simulated GPU when it is on; without it nothing runs, so work
 * is always complete, events are stamped with the host clock when
 * recorded, and a stream's write-value happens at once.
 *
 * cuda.h declares some of these names only as macro targets, so the ABI
 * variants are declared here with the real prototypes.
 */
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuStreamQuery_ptsz(CUstream hStream);
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
                                unsigned int Flags);
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                     unsigned int flags);
CUresult cuEventDestroy_v2(CUevent hEvent);
CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart,
                               CUevent hEnd);
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
                                      unsigned int Flags);
CUresult cuStreamWaitValue32_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                     cuuint32_t value, unsigned int flags);
CUresult cuStreamWaitValue64_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                     cuuint64_t value, unsigned int flags);
CUresult cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                      cuuint32_t value, unsigned int flags);
CUresult cuStreamWriteValue64_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                      cuuint64_t value, unsigned int flags);
CUresult cuStreamBatchMemOp_v2_ptsz(CUstream stream, unsigned int count,
                                    CUstreamBatchMemOpParams *paramArray,
                                    unsigned int flags);

struct event {
    uint32_t tag;
    int sim;            /* simulated event slot, -1 without the sim */
    unsigned flags;
    bool recorded;
    double host_ns;     /* without the sim: the host clock at record */
};

static CUresult get_event(CUevent he, struct event **out)
{
    if (!is(he, TAG_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    *out = (struct event *)he;
    return CUDA_SUCCESS;
}

/* The simulated slot of any stream handle, or -1 without the sim. */
static CUresult stream_slot(CUstream hs, int *slot)
{
    struct stream *s;
    CUresult r = get_stream(hs, &s);
    if (r != CUDA_SUCCESS)
        return r;
    int sim = sim_on();
    *slot = -1;
    if (sim < 0)
        return CUDA_ERROR_NOT_INITIALIZED;
    return sim > 0 ? sim_slot(s, slot) : CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    int sim = sim_on();
    if (sim < 0)
        return CUDA_ERROR_NOT_INITIALIZED;
    return sim > 0 ? sim_result(sim_ctx_sync()) : CUDA_SUCCESS;
}

/* The CUDA 13.0 headers' context-argument form; NULL is the current
 * context, the only one the fake driver has. */
CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    (void)ctx;
    return cuCtxSynchronize();
}

static int env_int(const char *name, int dflt, int lo, int hi);

/* FAKECUDA_SYNC_STALL_MS: a stream synchronisation returns that long after
 * the stream's work finished (a host that ran something else before the
 * waiting thread woke), to test what the shim makes of the host's end. */
static CUresult stream_sync(CUstream hs)
{
    int slot, stall_ms;
    CUresult r = stream_slot(hs, &slot);
    if (r != CUDA_SUCCESS || slot < 0)
        return r;
    r = sim_result(sim_stream_sync(slot));
    stall_ms = env_int("FAKECUDA_SYNC_STALL_MS", 0, 0, 10000);
    if (r == CUDA_SUCCESS && stall_ms > 0) {
        struct timespec t = {.tv_sec = stall_ms / 1000, .tv_nsec = (stall_ms % 1000) * 1000000L};
        nanosleep(&t, NULL);
    }
    return r;
}

CUresult cuStreamSynchronize(CUstream hStream) { return stream_sync(hStream); }
CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    return stream_sync(hStream);
}

static CUresult stream_query(CUstream hs)
{
    int slot;
    CUresult r = stream_slot(hs, &slot);
    if (r != CUDA_SUCCESS || slot < 0)
        return r;
    return sim_result(sim_stream_query(slot));
}

CUresult cuStreamQuery(CUstream hStream) { return stream_query(hStream); }
CUresult cuStreamQuery_ptsz(CUstream hStream) { return stream_query(hStream); }

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                           CU_EVENT_INTERPROCESS;
    if (phEvent == NULL || (Flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    int sim = sim_on();
    if (sim < 0)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct event *e = calloc(1, sizeof *e);
    if (e == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->sim = -1;
    e->flags = Flags;
    if (sim > 0) {
        CUresult r = sim_result(sim_event_new(&e->sim));
        if (r != CUDA_SUCCESS) {
            free(e);
            return r;
        }
    }
    e->tag = TAG_EVENT;
    *phEvent = (CUevent)e;
    return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent he)
{
    struct event *e;
    CUresult r = get_event(he, &e);
    if (r != CUDA_SUCCESS)
        return r;
    if (e->sim >= 0)
        sim_event_release(e->sim);
    e->tag = 0;
    free(e);
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent) { return event_destroy(hEvent); }
CUresult cuEventDestroy_v2(CUevent hEvent) { return event_destroy(hEvent); }

static CUresult event_record(CUevent he, CUstream hs, unsigned flags)
{
    struct event *e;
    int slot;
    CUresult r = get_event(he, &e);
    if (r == CUDA_SUCCESS && (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = stream_slot(hs, &slot);
    if (r != CUDA_SUCCESS)
        return r;
    trace_op(FAKE_OP_RECORD, hs, he, NULL);
    e->recorded = true;
    if (slot < 0 || e->sim < 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        e->host_ns = (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
        return CUDA_SUCCESS;
    }
    return sim_result(sim_enqueue_record(slot, e->sim));
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream, 0);
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream ? hStream : CU_STREAM_PER_THREAD, 0);
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream,
                                unsigned int flags)
{
    return event_record(hEvent, hStream, flags);
}

CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                     unsigned int flags)
{
    return event_record(hEvent, hStream ? hStream : CU_STREAM_PER_THREAD,
                        flags);
}

/* An event never recorded counts as complete, as in CUDA. */
CUresult cuEventQuery(CUevent hEvent)
{
    struct event *e;
    CUresult r = get_event(hEvent, &e);
    if (r != CUDA_SUCCESS || e->sim < 0)
        return r;
    return sim_result(sim_event_query(e->sim));
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    struct event *e;
    CUresult r = get_event(hEvent, &e);
    if (r != CUDA_SUCCESS || e->sim < 0)
        return r;
    return sim_result(sim_event_sync(e->sim));
}

static CUresult event_time(const struct event *e, double *ns)
{
    if (!e->recorded || (e->flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    if (e->sim < 0) {
        *ns = e->host_ns;
        return CUDA_SUCCESS;
    }
    return sim_result(sim_event_time(e->sim, ns));
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart,
                            CUevent hEnd)
{
    struct event *a, *b;
    double ta = 0, tb = 0;
    CUresult r = pMilliseconds == NULL ? CUDA_ERROR_INVALID_VALUE
                                       : get_event(hStart, &a);
    if (r == CUDA_SUCCESS)
        r = get_event(hEnd, &b);
    if (r == CUDA_SUCCESS)
        r = event_time(a, &ta);
    if (r == CUDA_SUCCESS)
        r = event_time(b, &tb);
    if (r == CUDA_SUCCESS)
        *pMilliseconds = (float)((tb - ta) / 1e6);
    return r;
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart,
                               CUevent hEnd)
{
    return cuEventElapsedTime(pMilliseconds, hStart, hEnd);
}

/* The time an event completed, in ns of CLOCK_MONOTONIC: the one clock of
 * every process on a simulated GPU, so that tests can compare the events
 * of two processes (cuEventElapsedTime compares only one's). */
CUresult fake_sim_event_ns(CUevent event, double *ns)
{
    struct event *e;
    CUresult r = ns == NULL ? CUDA_ERROR_INVALID_VALUE : get_event(event, &e);
    return r == CUDA_SUCCESS ? event_time(e, ns) : r;
}

static CUresult stream_wait_event(CUstream hs, CUevent he, unsigned flags)
{
    struct event *e;
    int slot;
    CUresult r = get_event(he, &e);
    if (r == CUDA_SUCCESS && (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = stream_slot(hs, &slot);
    if (r == CUDA_SUCCESS)
        trace_op(FAKE_OP_WAIT, hs, he, NULL);
    if (r != CUDA_SUCCESS || slot < 0 || e->sim < 0)
        return r;
    return sim_result(sim_enqueue_wait_event(slot, e->sim));
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                           unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags);
}

CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
                                unsigned int Flags)
{
    return stream_wait_event(hStream ? hStream : CU_STREAM_PER_THREAD, hEvent,
                             Flags);
}

/* MOSAIC_SIMGPU_NO_MEMOPS=1 plays a driver or device that refuses stream
 * memory operations and host-memory registration (CUDA_ERROR_NOT_SUPPORTED),
 * so that tests can check a client's fallback when a real one does. */
static bool memops_refused(void)
{
    static int refused = -1;
    if (refused < 0) {
        const char *v = getenv("MOSAIC_SIMGPU_NO_MEMOPS");
        refused = v != NULL && strcmp(v, "1") == 0;
    }
    return refused == 1;
}

/* Device pointers of host memory are its host addresses (unified
 * addressing), so a stream memory operation reads or writes the issuing
 * process's memory at that address. */
static CUresult wait_value(CUstream hs, CUdeviceptr addr, uint64_t value,
                           unsigned flags, bool is64)
{
    int slot;
    unsigned how = flags & 0xfu;
    if (memops_refused())
        return CUDA_ERROR_NOT_SUPPORTED;
    if (addr == 0 || how > CU_STREAM_WAIT_VALUE_NOR ||
        (flags & ~(0xfu | CU_STREAM_WAIT_VALUE_FLUSH)))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_slot(hs, &slot);
    if (r != CUDA_SUCCESS || slot < 0)
        return r;
    return sim_result(sim_enqueue_wait_value(slot, addr, value,
                                             (enum sim_wait)how, is64));
}

static CUresult write_value(CUstream hs, CUdeviceptr addr, uint64_t value,
                            unsigned flags, bool is64)
{
    int slot;
    if (memops_refused())
        return CUDA_ERROR_NOT_SUPPORTED;
    if (addr == 0 || (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_slot(hs, &slot);
    if (r != CUDA_SUCCESS)
        return r;
    if (slot >= 0)
        return sim_result(sim_enqueue_write_value(slot, addr, value, is64));
    if (is64)
        __atomic_store_n((uint64_t *)(uintptr_t)addr, value, __ATOMIC_RELEASE);
    else
        __atomic_store_n((uint32_t *)(uintptr_t)addr, (uint32_t)value,
                         __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

#define VALUE_OPS(suffix)                                                  \
    CUresult cuStreamWaitValue32##suffix(CUstream stream, CUdeviceptr addr, \
                                         cuuint32_t value,                  \
                                         unsigned int flags)                \
    {                                                                      \
        return wait_value(stream, addr, value, flags, false);              \
    }                                                                      \
    CUresult cuStreamWaitValue64##suffix(CUstream stream, CUdeviceptr addr, \
                                         cuuint64_t value,                  \
                                         unsigned int flags)                \
    {                                                                      \
        return wait_value(stream, addr, value, flags, true);               \
    }                                                                      \
    CUresult cuStreamWriteValue32##suffix(CUstream stream,                 \
                                          CUdeviceptr addr,                \
                                          cuuint32_t value,                \
                                          unsigned int flags)              \
    {                                                                      \
        return write_value(stream, addr, value, flags, false);             \
    }                                                                      \
    CUresult cuStreamWriteValue64##suffix(CUstream stream,                 \
                                          CUdeviceptr addr,                \
                                          cuuint64_t value,                \
                                          unsigned int flags)              \
    {                                                                      \
        return write_value(stream, addr, value, flags, true);              \
    }                                                                      \
    CUresult cuStreamBatchMemOp##suffix(CUstream stream, unsigned int count, \
                                        CUstreamBatchMemOpParams *ops,     \
                                        unsigned int flags)                \
    {                                                                      \
        return batch_mem_op(stream, count, ops, flags);                    \
    }

/* Wait and write operations in order; the others (flush, barrier) have
 * nothing to do on host memory and are accepted. Checked before any is
 * queued, so a bad batch queues nothing. */
static CUresult batch_mem_op(CUstream hs, unsigned count,
                             CUstreamBatchMemOpParams *ops, unsigned flags)
{
    if (flags != 0 || (count != 0 && ops == NULL) || count > 256)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++) {
        switch (ops[i].operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            if (ops[i].waitValue.address == 0)
                return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        case CU_STREAM_MEM_OP_BARRIER:
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    for (unsigned i = 0; i < count; i++) {
        const CUstreamBatchMemOpParams *o = &ops[i];
        CUresult r = CUDA_SUCCESS;
        switch (o->operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
            r = wait_value(hs, o->waitValue.address, o->waitValue.value,
                           o->waitValue.flags, false);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            r = wait_value(hs, o->waitValue.address, o->waitValue.value64,
                           o->waitValue.flags, true);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
            r = write_value(hs, o->writeValue.address, o->writeValue.value,
                            o->writeValue.flags, false);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            r = write_value(hs, o->writeValue.address, o->writeValue.value64,
                            o->writeValue.flags, true);
            break;
        default:
            break;
        }
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

VALUE_OPS()
VALUE_OPS(_ptsz)
VALUE_OPS(_v2)
VALUE_OPS(_v2_ptsz)

/* Host memory is ordinary memory; its device pointer is its address. */
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    const unsigned known = CU_MEMHOSTALLOC_PORTABLE |
                           CU_MEMHOSTALLOC_DEVICEMAP |
                           CU_MEMHOSTALLOC_WRITECOMBINED;
    if (pp == NULL || bytesize == 0 || (Flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytesize) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(p, 0, bytesize);
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemFreeHost(void *p)
{
    free(p);
    return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    const unsigned known = CU_MEMHOSTREGISTER_PORTABLE |
                           CU_MEMHOSTREGISTER_DEVICEMAP |
                           CU_MEMHOSTREGISTER_IOMEMORY |
                           CU_MEMHOSTREGISTER_READ_ONLY;
    if (p == NULL || bytesize == 0 || (Flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    return memops_refused() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p)
{
    return p == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
                                      unsigned int Flags)
{
    if (pdptr == NULL || p == NULL || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Green contexts: the SM resource of the device, its split by count, a
 * descriptor, the green context and its streams, with the validation rules
 * of the CUDA 13.0 headers' documentation and the values measured on the
 * H200 (driver 580.159.04): 132 SMs, minSmPartitionSize 8,
 * smCoscheduledAlignment 8, a request for 66 SMs made into a group of 72.
 *
 * Every resource carries, in its _internal_padding (which the header says
 * belongs to the driver), the set of SMs it stands for as a bit mask: a
 * split hands out the lowest SMs of its input as its groups, one group
 * after the other, and the rest as the remainder, so that green contexts
 * made from one split are disjoint, and a green-context stream on the
 * simulated GPU knows its SMs (docs/simgpu.md, "SM partitions").
 *
 * Contexts: the fake has one implicit primary context. cuCtxFromGreenCtx
 * gives a green context's CUcontext; cuCtxPushCurrent/cuCtxPopCurrent keep
 * a per-thread stack of them, and cuKernelGetFunction called while a green
 * context is current makes a CUfunction of that green context.
 */
CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPopCurrent_v2(CUcontext *pctx);
CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData);

enum { TAG_GREEN = 0xFA4E0100u, TAG_CTX, TAG_DESC };
#define RES_MAGIC 0x5345524bu /* "KRES": a resource this fake filled in */
#define MASK_WORDS 4          /* up to 256 SMs */

struct res_priv {
    uint32_t magic;
    uint32_t from_split; /* outputs of a split cannot be split again */
    uint64_t split_id;   /* which split made it (for a multi-resource desc) */
    uint64_t mask[MASK_WORDS];
};

struct desc {
    uint32_t tag;
    struct kept kept;
    unsigned n;
    uint64_t mask[MASK_WORDS];
};

struct green;
struct gctx {
    uint32_t tag; /* TAG_CTX */
    struct green *g;
};

struct green {
    uint32_t tag;
    unsigned n;
    uint64_t mask[MASK_WORDS];
    struct gctx ctx; /* what cuCtxFromGreenCtx hands out */
};

static _Atomic uint64_t g_split_ids;
static _Atomic int g_green_ctxs, g_green_streams;

static int env_int(const char *name, int dflt, int lo, int hi)
{
    const char *v = getenv(name);
    char *end;
    long x;
    if (v == NULL || *v == '\0')
        return dflt;
    x = strtol(v, &end, 10);
    return *end == '\0' && x >= lo && x <= hi ? (int)x : dflt;
}

static int dev_sms(void) { return env_int("FAKECUDA_SMS", 132, 1, 64 * MASK_WORDS); }
static int dev_align(void) { return env_int("FAKECUDA_SM_ALIGN", 8, 1, 64); }
static int dev_min(void) { return env_int("FAKECUDA_SM_MIN", 8, 1, 64); }

static unsigned mask_count(const uint64_t *m)
{
    unsigned n = 0;
    for (int i = 0; i < MASK_WORDS; i++)
        n += (unsigned)__builtin_popcountll(m[i]);
    return n;
}

/* A copy of the fake's part of a resource: the padding sits at offset 4 of
 * the caller's struct, too little aligned to be read in place. */
static struct res_priv res_priv(const CUdevResource *r)
{
    struct res_priv p;
    memcpy(&p, r->_internal_padding, sizeof p);
    return p;
}

static void res_fill(CUdevResource *r, const uint64_t *mask, int from_split,
                     uint64_t split_id)
{
    struct res_priv p = { .magic = RES_MAGIC, .from_split = (uint32_t)from_split,
                          .split_id = split_id };
    _Static_assert(sizeof p <= sizeof r->_internal_padding, "padding");
    memcpy(p.mask, mask, sizeof p.mask);
    memset(r, 0, sizeof *r);
    r->type = CU_DEV_RESOURCE_TYPE_SM;
    memcpy(r->_internal_padding, &p, sizeof p);
    r->sm.smCount = mask_count(mask);
    r->sm.minSmPartitionSize = (unsigned)dev_min();
    r->sm.smCoscheduledAlignment = (unsigned)dev_align();
}

static bool res_valid(const CUdevResource *r)
{
    return r != NULL && r->type == CU_DEV_RESOURCE_TYPE_SM &&
           res_priv(r).magic == RES_MAGIC;
}

CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource,
                                CUdevResourceType type)
{
    uint64_t mask[MASK_WORDS] = { 0 };
    if (resource == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (device != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    for (int i = 0; i < dev_sms(); i++)
        mask[i / 64] |= 1ull << (i % 64);
    res_fill(resource, mask, 0, 0);
    return CUDA_SUCCESS;
}

/* Groups of minCount SMs rounded up to the alignment (and at least the
 * minimum partition size), as many as asked and as fit; the rest is the
 * remainder. minCount 0 asks for the smallest group. */
CUresult cuDevSmResourceSplitByCount(CUdevResource *result,
                                     unsigned int *nbGroups,
                                     const CUdevResource *input,
                                     CUdevResource *remaining,
                                     unsigned int useFlags,
                                     unsigned int minCount)
{
    if (nbGroups == NULL || input == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!res_valid(input))
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (res_priv(input).from_split)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    /* IGNORE_SM_COSCHEDULING would lower the granularity; the measured
     * values are those of the default, the only mode the fake offers. */
    if (useFlags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned have = input->sm.smCount;
    if (minCount > have)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned align = (unsigned)dev_align(), min = (unsigned)dev_min();
    unsigned size = (minCount + align - 1) / align * align;
    if (size < min)
        size = min;
    unsigned fit = size <= have ? have / size : 0;
    if (result == NULL) {
        *nbGroups = fit;
        return CUDA_SUCCESS;
    }
    unsigned groups = *nbGroups < fit ? *nbGroups : fit;
    uint64_t id = atomic_fetch_add(&g_split_ids, 1) + 1;
    uint64_t left[MASK_WORDS];
    memcpy(left, res_priv(input).mask, sizeof left);
    for (unsigned g = 0; g < groups; g++) {
        uint64_t take[MASK_WORDS] = { 0 };
        unsigned got = 0;
        for (int b = 0; b < 64 * MASK_WORDS && got < size; b++) {
            if (left[b / 64] & (1ull << (b % 64))) {
                left[b / 64] &= ~(1ull << (b % 64));
                take[b / 64] |= 1ull << (b % 64);
                got++;
            }
        }
        res_fill(&result[g], take, 1, id);
    }
    *nbGroups = groups;
    if (remaining != NULL)
        res_fill(remaining, left, 1, id);
    return CUDA_SUCCESS;
}

CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc,
                                   CUdevResource *resources,
                                   unsigned int nbResources)
{
    if (phDesc == NULL || resources == NULL || nbResources == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct desc *d = calloc(1, sizeof *d);
    if (d == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < nbResources; i++) {
        if (!res_valid(&resources[i])) {
            free(d);
            return CUDA_ERROR_INVALID_RESOURCE_TYPE;
        }
        /* Several SM resources must come from one split. */
        struct res_priv pi = res_priv(&resources[i]);
        if (nbResources > 1 && (!pi.from_split ||
                                pi.split_id != res_priv(&resources[0]).split_id)) {
            free(d);
            return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
        }
        for (int w = 0; w < MASK_WORDS; w++)
            d->mask[w] |= pi.mask[w];
    }
    d->n = mask_count(d->mask);
    if (d->n == 0) {
        free(d);
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    }
    d->tag = TAG_DESC;
    keep(&d->kept); /* descriptors have no destroy call */
    *phDesc = (CUdevResourceDesc)(void *)d;
    return CUDA_SUCCESS;
}

CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc,
                          CUdevice dev, unsigned int flags)
{
    CUresult bad = out_and_handle(phCtx, desc, TAG_DESC);
    if (bad != CUDA_SUCCESS)
        return bad;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    /* CU_GREEN_CTX_DEFAULT_STREAM is documented as required. */
    if (flags != CU_GREEN_CTX_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_on() < 0)
        return CUDA_ERROR_NOT_INITIALIZED;
    const struct desc *d = (const struct desc *)(const void *)desc;
    struct green *g = calloc(1, sizeof *g);
    if (g == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->tag = TAG_GREEN;
    g->n = d->n;
    memcpy(g->mask, d->mask, sizeof g->mask);
    g->ctx.tag = TAG_CTX;
    g->ctx.g = g;
    atomic_fetch_add(&g_green_ctxs, 1);
    *phCtx = (CUgreenCtx)(void *)g;
    return CUDA_SUCCESS;
}

CUresult cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    if (!is(hCtx, TAG_GREEN))
        return CUDA_ERROR_INVALID_HANDLE;
    struct green *g = (struct green *)(void *)hCtx;
    g->tag = 0;
    g->ctx.tag = 0;
    atomic_fetch_sub(&g_green_ctxs, 1);
    free(g);
    return CUDA_SUCCESS;
}

CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
{
    CUresult bad = out_and_handle(pContext, hCtx, TAG_GREEN);
    if (bad != CUDA_SUCCESS)
        return bad;
    *pContext = (CUcontext)(void *)&((struct green *)(void *)hCtx)->ctx;
    return CUDA_SUCCESS;
}

CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource *resource,
                                  CUdevResourceType type)
{
    CUresult bad = out_and_handle(resource, hCtx, TAG_GREEN);
    if (bad != CUDA_SUCCESS)
        return bad;
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    res_fill(resource, ((struct green *)(void *)hCtx)->mask, 0, 0);
    return CUDA_SUCCESS;
}

CUresult cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx,
                                unsigned int flags, int priority)
{
    (void)priority; /* stream priorities are not modelled */
    if (phStream == NULL || !(flags & CU_STREAM_NON_BLOCKING) ||
        (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE; /* NON_BLOCKING is required */
    if (!is(greenCtx, TAG_GREEN))
        return CUDA_ERROR_INVALID_HANDLE;
    struct green *g = (struct green *)(void *)greenCtx;
    int sim = sim_on();
    if (sim < 0)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->sim = -1;
    if (sim > 0) {
        CUresult r = sim_result(sim_stream_new(&s->sim));
        if (r == CUDA_SUCCESS)
            r = sim_result(sim_stream_set_sms(s->sim, g->mask, MASK_WORDS));
        if (r != CUDA_SUCCESS) {
            if (s->sim >= 0)
                sim_stream_release(s->sim);
            free(s);
            return r;
        }
    }
    s->tag = TAG_STREAM;
    s->green = g;
    atomic_fetch_add(&g_green_streams, 1);
    *phStream = (CUstream)s;
    return CUDA_SUCCESS;
}

CUresult cuStreamGetGreenCtx(CUstream hStream, CUgreenCtx *phCtx)
{
    struct stream *s;
    if (phCtx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = get_stream(hStream, &s);
    if (r == CUDA_SUCCESS)
        *phCtx = s != NULL ? (CUgreenCtx)(void *)s->green : NULL;
    return r;
}

/* The per-thread stack of current contexts; empty: the primary context. */
#define CTX_DEPTH 16
static __thread const void *t_ctx[CTX_DEPTH];
static __thread int t_nctx;

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (!is(ctx, TAG_CTX))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (t_nctx == CTX_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    t_ctx[t_nctx++] = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    if (t_nctx == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    t_nctx--;
    if (pctx != NULL)
        *pctx = (CUcontext)(uintptr_t)t_ctx[t_nctx];
    return CUDA_SUCCESS;
}

/* The green context current in this thread, or NULL (the primary). */
static struct green *current_green(void)
{
    if (t_nctx == 0 || !is(t_ctx[t_nctx - 1], TAG_CTX))
        return NULL;
    struct green *g = ((const struct gctx *)t_ctx[t_nctx - 1])->g;
    return is(g, TAG_GREEN) ? g : NULL;
}

/* A kernel's function in a green context: a new CUfunction of that
 * context, made once per (kernel, green context) pair by the caller's
 * cache; each is kept until exit like every code handle. */
static CUresult green_function(struct fn *k, struct green *g, CUfunction *out)
{
    struct fn *f = fn_new(TAG_FUNCTION, k->name, k->regs, k->smem);
    if (f == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    f->green = g;
    *out = (CUfunction)f;
    return CUDA_SUCCESS;
}

/* What a green-context stream accepts: a CUkernel (loaded into the
 * stream's context on demand), a CUfunction of that green context, and a
 * CUfunction of the primary context's modules unless
 * FAKECUDA_GREEN_MODULES=0 says the driver does not share them. */
/* A cooperative launch needs its whole grid resident at once: more blocks
 * than FAKECUDA_COOP_BLOCKS_PER_SM (default 4) on each SM of where it runs
 * (a green context's SMs, else the device's) is refused, as the driver
 * refuses it (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE; cuDNN's batch-norm
 * sizes such a grid for the whole device: 2026-12-02 H200). */
static CUresult coop_check(const struct node *k, const struct stream *s)
{
    uint64_t blocks = (uint64_t)k->grid[0] * k->grid[1] * k->grid[2];
    uint64_t sms = s != NULL && s->green != NULL ? s->green->n : (uint64_t)dev_sms();
    return blocks > sms * (uint64_t)env_int("FAKECUDA_COOP_BLOCKS_PER_SM", 4, 1, 64)
               ? CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
               : CUDA_SUCCESS;
}

static CUresult green_launch_check(const void *f, const struct green *g)
{
    const struct fn *fn = f;
    if (g == NULL || !is(f, TAG_FUNCTION))
        return CUDA_SUCCESS;
    if (fn->green == g)
        return CUDA_SUCCESS;
    if (fn->green != NULL)
        return CUDA_ERROR_INVALID_HANDLE; /* another green context's */
    return env_int("FAKECUDA_GREEN_MODULES", 1, 0, 1) ? CUDA_SUCCESS
                                                      : CUDA_ERROR_INVALID_HANDLE;
}

/* Host functions: without the simulated GPU all work is complete, so the
 * function runs at once; on it, the caller waits for the stream to reach
 * it and then runs it (a simplification: a real driver runs it on its own
 * thread and does not block the caller). */
static CUresult launch_host_func(CUstream hs, CUhostFn fn, void *data)
{
    struct stream *s;
    if (fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = get_stream(hs, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s != NULL && s->capture != NULL)
        return CUDA_ERROR_NOT_SUPPORTED; /* host nodes are not modelled */
    trace_op(FAKE_OP_HOSTFN, hs, data, NULL);
    r = stream_sync(hs);
    if (r == CUDA_SUCCESS)
        fn(data);
    return r;
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return launch_host_func(hStream, fn, userData);
}

CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return launch_host_func(hStream ? hStream : CU_STREAM_PER_THREAD, fn,
                            userData);
}

static void green_stream_gone(void)
{
    atomic_fetch_sub(&g_green_streams, 1);
}

void fake_green_counts(int *ctxs, int *streams)
{
    if (ctxs != NULL)
        *ctxs = atomic_load(&g_green_ctxs);
    if (streams != NULL)
        *streams = atomic_load(&g_green_streams);
}

/* ------------------------------------------------------------------------
 * The operation trace (fake_cuda.h): a fixed array filled by an atomic
 * index while tracing is on, so that concurrent launches never lock.
 */
#define TRACE_CAP 4096
static struct fake_trace_entry g_trace[TRACE_CAP];
static _Atomic size_t g_trace_n;
static _Atomic bool g_tracing;

void fake_trace_start(void)
{
    atomic_store(&g_tracing, false);
    atomic_store(&g_trace_n, 0);
    atomic_store(&g_tracing, true);
}

size_t fake_trace_get(struct fake_trace_entry *out, size_t cap)
{
    size_t n = atomic_load(&g_trace_n);
    for (size_t i = 0; i < n && i < cap && i < TRACE_CAP; i++)
        out[i] = g_trace[i];
    return n;
}

static void trace_op(int kind, CUstream s, const void *obj, const char *name)
{
    if (!atomic_load_explicit(&g_tracing, memory_order_relaxed))
        return;
    size_t i = atomic_fetch_add(&g_trace_n, 1);
    if (i >= TRACE_CAP)
        return;
    const struct stream *st =
        !is_default_stream(s) && is(s, TAG_STREAM) ? (const struct stream *)s : NULL;
    g_trace[i] = (struct fake_trace_entry){
        .op = kind, .stream = s, .obj = obj, .name = name,
        .sms = st != NULL && st->green != NULL ? st->green->n : 0,
        .tid = (unsigned long)pthread_self() };
}

/* ------------------------------------------------------------------------
 * cuGetProcAddress. symbol is a base name (no _v2/_ptsz suffix). Rows of
 * one name are adjacent, newest ABI first: the first row whose `since` is
 * <= cudaVersion answers; the last row's `since` is the symbol's minimum.
 *
 * Each pointer is the address of this library's own definition of that
 * exact ABI name: the library is linked with -Bsymbolic-functions, so these
 * addresses bind locally even when an LD_PRELOADed shim exports the same
 * names (as with the real driver, whose table is internal).
 */
struct proc {
    const char *name;
    int since;
    void *plain, *ptsz; /* ptsz NULL: no per-thread variant */
};

#define P(name, since, plain, ptsz)                                       \
    { name, since, (void *)(plain), (void *)(ptsz) }
#define P1(fn, since) P(#fn, since, fn, NULL)
#define P2(fn, since) P(#fn, since, fn, fn##_ptsz)

static const struct proc procs[] = {
    P("cuGetProcAddress", 12000, cuGetProcAddress_v2, NULL),
    P1(cuGetProcAddress, 2000),
    P1(cuInit, 2000),
    P1(cuDriverGetVersion, 2000),
    P1(cuDeviceGet, 2000),
    P1(cuCtxGetDevice, 2000),
    P1(cuStreamCreate, 2000),
    P("cuStreamDestroy", 2000, cuStreamDestroy_v2, NULL),
    P1(cuModuleLoadData, 2000),
    P1(cuModuleGetFunction, 2000),
    P1(cuLibraryLoadData, 12000),
    P1(cuLibraryGetKernel, 12000),
    P1(cuLibraryGetKernelCount, 12000),
    P1(cuLibraryEnumerateKernels, 12000),
    P1(cuKernelGetFunction, 12000),
    P1(cuKernelGetAttribute, 12000),
    P1(cuKernelGetName, 12030),
    P1(cuFuncGetName, 12030),
    P1(cuFuncGetAttribute, 2000),
    P1(cuFuncIsLoaded, 12040),
    P1(cuFuncLoad, 12040),
    P2(cuLaunchKernel, 4000),
    P2(cuLaunchKernelEx, 11060),
    P2(cuLaunchCooperativeKernel, 9000),
    P2(cuGraphLaunch, 10000),
    P("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2,
      cuStreamBeginCapture_v2_ptsz),
    P2(cuStreamBeginCapture, 2000),
    P2(cuStreamBeginCaptureToGraph, 12030),
    P2(cuStreamEndCapture, 2000),
    P2(cuStreamIsCapturing, 2000),
    P1(cuGraphCreate, 2000),
    P1(cuGraphDestroy, 2000),
    P("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2, NULL),
    P1(cuGraphAddKernelNode, 2000),
    P1(cuGraphAddChildGraphNode, 2000),
    P1(cuGraphAddEmptyNode, 2000),
    P1(cuGraphGetNodes, 2000),
    P1(cuGraphNodeGetType, 2000),
    P("cuGraphKernelNodeGetParams", 12000, cuGraphKernelNodeGetParams_v2,
      NULL),
    P1(cuGraphKernelNodeGetParams, 2000),
    P1(cuGraphChildGraphNodeGetGraph, 2000),
    P("cuGraphInstantiate", 11000, cuGraphInstantiate_v2, NULL),
    P1(cuGraphInstantiate, 2000),
    P1(cuGraphInstantiateWithFlags, 2000),
    P2(cuGraphInstantiateWithParams, 2000),
    P("cuGraphExecUpdate", 12000, cuGraphExecUpdate_v2, NULL),
    P1(cuGraphExecUpdate, 2000),
    P1(cuGraphExecDestroy, 2000),
    P1(cuCtxSynchronize, 2000),
    P1(cuCtxSynchronize_v2, 13000),
    P2(cuStreamSynchronize, 2000),
    P2(cuStreamQuery, 2000),
    P2(cuStreamWaitEvent, 2000),
    P1(cuEventCreate, 2000),
    P("cuEventDestroy", 4000, cuEventDestroy_v2, NULL),
    P1(cuEventDestroy, 2000),
    P2(cuEventRecord, 2000),
    P2(cuEventRecordWithFlags, 11010),
    P1(cuEventQuery, 2000),
    P1(cuEventSynchronize, 2000),
    P("cuEventElapsedTime", 12080, cuEventElapsedTime_v2, NULL),
    P1(cuEventElapsedTime, 2000),
    P("cuStreamWaitValue32", 11070, cuStreamWaitValue32_v2,
      cuStreamWaitValue32_v2_ptsz),
    P2(cuStreamWaitValue32, 8000),
    P("cuStreamWaitValue64", 11070, cuStreamWaitValue64_v2,
      cuStreamWaitValue64_v2_ptsz),
    P2(cuStreamWaitValue64, 9000),
    P("cuStreamWriteValue32", 11070, cuStreamWriteValue32_v2,
      cuStreamWriteValue32_v2_ptsz),
    P2(cuStreamWriteValue32, 8000),
    P("cuStreamWriteValue64", 11070, cuStreamWriteValue64_v2,
      cuStreamWriteValue64_v2_ptsz),
    P2(cuStreamWriteValue64, 9000),
    P("cuStreamBatchMemOp", 11070, cuStreamBatchMemOp_v2,
      cuStreamBatchMemOp_v2_ptsz),
    P2(cuStreamBatchMemOp, 8000),
    P1(cuMemHostAlloc, 2020),
    P("cuMemAllocHost", 3020, cuMemAllocHost_v2, NULL),
    P1(cuMemFreeHost, 2000),
    P("cuMemHostRegister", 6050, cuMemHostRegister_v2, NULL),
    P1(cuMemHostUnregister, 4000),
    P("cuMemHostGetDevicePointer", 3020, cuMemHostGetDevicePointer_v2, NULL),
    P1(cuDeviceGetDevResource, 12040),
    P1(cuDevSmResourceSplitByCount, 12040),
    P1(cuDevResourceGenerateDesc, 12040),
    P1(cuGreenCtxCreate, 12040),
    P1(cuGreenCtxDestroy, 12040),
    P1(cuCtxFromGreenCtx, 12040),
    P1(cuGreenCtxGetDevResource, 12040),
    P1(cuGreenCtxStreamCreate, 12050),
    P1(cuStreamGetGreenCtx, 12050),
    P("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2, NULL),
    P("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2, NULL),
    P2(cuLaunchHostFunc, 10000),
};

/* FAKECUDA_DRIVER_VERSION: an older driver has no entry points newer than
 * itself (fake_cuda.h). */
static int driver_version(void)
{
    return env_int("FAKECUDA_DRIVER_VERSION", 13000, 2000, 99999);
}

static bool proc_in_driver(const struct proc *p)
{
    return p->since <= driver_version();
}

static CUresult getproc(const char *symbol, void **pfn, int cudaVersion,
                        cuuint64_t flags,
                        CUdriverProcAddressQueryResult *symbolStatus)
{
    bump(&g_count.getproc_calls, 1);
    /* DEFAULT, LEGACY_STREAM or PER_THREAD_DEFAULT_STREAM: one at most. */
    if (symbol == NULL || pfn == NULL ||
        (flags != CU_GET_PROC_ADDRESS_DEFAULT &&
         flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
         flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;

    CUdriverProcAddressQueryResult status =
        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *pfn = NULL;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        const struct proc *p = &procs[i];
        if (strcmp(p->name, symbol) != 0 || !proc_in_driver(p))
            continue;
        status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        if (cudaVersion >= p->since) {
            bool ptds = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
            *pfn = ptds && p->ptsz != NULL ? p->ptsz : p->plain;
            status = CU_GET_PROC_ADDRESS_SUCCESS;
            break;
        }
    }
    if (symbolStatus != NULL)
        *symbolStatus = status;
    /* As measured on driver 580.159.04: a symbol that exists but is newer
     * than cudaVersion is CUDA_SUCCESS with a NULL pointer and the
     * VERSION_NOT_SUFFICIENT status; an unknown one is CUDA_ERROR_NOT_FOUND.
     * (docs/results/2026-11-30-getproc/getproc_identity.txt) */
    if (*pfn == NULL && status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
        return CUDA_ERROR_NOT_FOUND;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          cuuint64_t flags)
{
    return getproc(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    return getproc(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* ------------------------------------------------------------------------
 * Tally.
 */
void fake_tally(struct fake_tally *out)
{
    memset(out, 0, sizeof *out);
    out->kernels_executed = atomic_load(&g_count.kernels_executed);
    out->direct_executed = atomic_load(&g_count.direct_executed);
    out->graph_kernels_executed = atomic_load(&g_count.graph_kernels_executed);
    out->graph_launches = atomic_load(&g_count.graph_launches);
    out->captured = atomic_load(&g_count.captured);
    out->getproc_calls = atomic_load(&g_count.getproc_calls);
    for (int i = 0; i < FAKE_ENTRY_COUNT; i++)
        out->per_entry[i] = atomic_load(&g_count.per_entry[i]);
}

void fake_reset(void)
{
    atomic_store(&g_count.kernels_executed, 0);
    atomic_store(&g_count.direct_executed, 0);
    atomic_store(&g_count.graph_kernels_executed, 0);
    atomic_store(&g_count.graph_launches, 0);
    atomic_store(&g_count.captured, 0);
    atomic_store(&g_count.getproc_calls, 0);
    for (int i = 0; i < FAKE_ENTRY_COUNT; i++)
        atomic_store(&g_count.per_entry[i], 0);
}

#pragma GCC visibility pop
