/*
 * SM partitions for best-effort work: the BE shim's green context
 * (docs/partitions.md).
 *
 * With MOSAIC_ROLE=be and N SMs given by the arbiter (its WELCOME carries
 * the partition of the client's role, mosaic__green_offer) or by
 * MOSAIC_BE_SMS=N (which overrides the arbiter, for tests and for trying a
 * size by hand), the shim makes, at the first BE
 * launch, one green context of N SMs and a few streams of it, and runs
 * every BE kernel and graph launch on one of those streams instead of the
 * application's, keeping the application's stream order:
 *
 *   cuEventRecord(in, app)          the launch waits for what came before
 *   cuStreamWaitEvent(green, in)
 *   launch on green
 *   cuEventRecord(out, green)       what comes after waits for the launch
 *   cuStreamWaitEvent(app, out)
 *
 * so a synchronisation of the application's stream, a host callback or a
 * kernel enqueued behind the launch, an event recorded on the stream, and a
 * stream waiting on such an event all see the redirected kernel as if it
 * had run on the application's stream. One event pair per thread suffices:
 * cuStreamWaitEvent waits for the record most recent at its call, so the
 * pair can be recorded again at the next launch at once.
 *
 * Which SMs: the BE partition is the remainder of a split that gives the
 * rest of the GPU (total - N SMs) as one group, so that an HP process
 * confined with MOSAIC_ROLE=hp MOSAIC_HP_SMS=total-N (the same mechanism,
 * taking the group of the same split) runs on the other SMs (the split
 * hands out groups from the low SMs: the fake driver does, and the H200
 * check of it is open, docs/partitions.md). An HP process pays the
 * redirect only when MOSAIC_HP_SMS is set. The group size must
 * be a multiple of the resource's smCoscheduledAlignment and at least its
 * minSmPartitionSize, both read from the driver; N itself at least the
 * minimum. A size that cannot be made is named with the nearest ones that
 * can, and BE runs on the full GPU.
 *
 * Kernels: a CUkernel (cuLibraryGetKernel, and what the CUDA runtime
 * launches) gets its function in the green context with cuKernelGetFunction
 * while the green context's CUcontext (cuCtxFromGreenCtx) is current
 * (cuCtxPushCurrent/cuCtxPopCurrent), cached per kernel. A CUfunction of a
 * module the application loaded in the primary context is launched as it is
 * on the green stream: a green context retains the primary context, and the
 * driver is taken to run the primary context's functions in it (to be
 * checked on the H200; docs/partitions.md). If the driver refuses it
 * (CUDA_ERROR_INVALID_HANDLE or _INVALID_CONTEXT), the launch is made again
 * on the application's stream, that function is never redirected again,
 * and the shim says so once. Graph launches are redirected the same way.
 *
 * Never redirected: a launch into a stream being captured (it is recorded,
 * not run; asked of the driver with cuStreamIsCapturing at every BE launch,
 * since an event record on a capturing stream would become part of the
 * graph) or whose capture status cannot be read.
 *
 * Unsupported driver: the entry points are looked up with the driver's own
 * cuGetProcAddress at its version; if any is missing (a driver before CUDA
 * 12.4/12.5, or one that refuses green contexts, e.g. under MPS limits) or
 * creating the context fails, the shim says why once and BE runs on the full
 * GPU.
 *
 * Tested on: the fake driver (tests/fakecuda, CUDA 13.0 headers). Not yet
 * run on the H200 (driver 580.159.04).
 */
#define _GNU_SOURCE 1
#include <stdlib.h>
#include <string.h>

#include "green.h"

_Atomic int mosaic__green_on;

/* The driver entry points used here, looked up at setup. */
struct green_drv {
    CUresult(CUDAAPI *DeviceGet)(CUdevice *, int);
    CUresult(CUDAAPI *DriverGetVersion)(int *);
    CUresult(CUDAAPI *DeviceGetDevResource)(CUdevice, CUdevResource *, CUdevResourceType);
    CUresult(CUDAAPI *DevSmResourceSplitByCount)(CUdevResource *, unsigned *,
                                                 const CUdevResource *, CUdevResource *,
                                                 unsigned, unsigned);
    CUresult(CUDAAPI *DevResourceGenerateDesc)(CUdevResourceDesc *, CUdevResource *, unsigned);
    CUresult(CUDAAPI *GreenCtxCreate)(CUgreenCtx *, CUdevResourceDesc, CUdevice, unsigned);
    CUresult(CUDAAPI *GreenCtxDestroy)(CUgreenCtx);
    CUresult(CUDAAPI *GreenCtxGetDevResource)(CUgreenCtx, CUdevResource *, CUdevResourceType);
    CUresult(CUDAAPI *CtxFromGreenCtx)(CUcontext *, CUgreenCtx);
    CUresult(CUDAAPI *GreenCtxStreamCreate)(CUstream *, CUgreenCtx, unsigned, int);
    CUresult(CUDAAPI *CtxPushCurrent)(CUcontext);
    CUresult(CUDAAPI *CtxPopCurrent)(CUcontext *);
    CUresult(CUDAAPI *KernelGetFunction)(CUfunction *, CUkernel);
    CUresult(CUDAAPI *StreamIsCapturing)(CUstream, CUstreamCaptureStatus *);
    CUresult(CUDAAPI *EventCreate)(CUevent *, unsigned);
    CUresult(CUDAAPI *EventDestroy)(CUevent);
    CUresult(CUDAAPI *EventRecord)(CUevent, CUstream);
    CUresult(CUDAAPI *StreamWaitEvent)(CUstream, CUevent, unsigned);
};

/* The name each is looked up by, and the CUDA version it appeared in. */
#define GREEN_DRV(X)                                       \
    X(DeviceGet, "cuDeviceGet", 2000)                      \
    X(DriverGetVersion, "cuDriverGetVersion", 2020)        \
    X(DeviceGetDevResource, "cuDeviceGetDevResource", 12040) \
    X(DevSmResourceSplitByCount, "cuDevSmResourceSplitByCount", 12040) \
    X(DevResourceGenerateDesc, "cuDevResourceGenerateDesc", 12040) \
    X(GreenCtxCreate, "cuGreenCtxCreate", 12040)           \
    X(GreenCtxDestroy, "cuGreenCtxDestroy", 12040)         \
    X(GreenCtxGetDevResource, "cuGreenCtxGetDevResource", 12040) \
    X(CtxFromGreenCtx, "cuCtxFromGreenCtx", 12040)         \
    X(GreenCtxStreamCreate, "cuGreenCtxStreamCreate", 12050) \
    X(CtxPushCurrent, "cuCtxPushCurrent", 4000)            \
    X(CtxPopCurrent, "cuCtxPopCurrent", 4000)              \
    X(KernelGetFunction, "cuKernelGetFunction", 12000)     \
    X(StreamIsCapturing, "cuStreamIsCapturing", 10000)     \
    X(EventCreate, "cuEventCreate", 2000)                  \
    X(EventDestroy, "cuEventDestroy", 4000)                \
    X(EventRecord, "cuEventRecord", 2000)                  \
    X(StreamWaitEvent, "cuStreamWaitEvent", 3020)

/* Application streams are spread over this many green streams by handle
 * (the default streams by thread), so that independent application streams
 * can still run side by side; two that share one are serialised, which
 * keeps every order the application asked for and adds one it did not. */
#define GREEN_STREAMS 4

static struct {
    pthread_once_t once;
    int wanted;             /* MOSAIC_BE_SMS / MOSAIC_HP_SMS as asked, 0: unset */
    int hp;                 /* the HP side: a group, not the remainder */
    int from_env;           /* the variable was set: it overrides the arbiter's word */
    _Atomic int offered;    /* the arbiter's size was taken (mosaic__green_offer) */
    _Atomic int offer_said; /* a later, different size was said once */
    const char *var;        /* the variable's name, for messages */
    char src[96];           /* "MOSAIC_BE_SMS=60" or "the arbiter's BE partition of 60 SMs" */
    const char *who;        /* "BE" or "HP" */
    struct green_drv d;
    CUgreenCtx ctx;
    CUcontext cu;           /* the green context as a CUcontext */
    CUstream streams[GREEN_STREAMS];
    unsigned sms;           /* SMs the green context reports */
    struct mosaic__pmap fn; /* CUkernel -> its CUfunction in the green ctx */
    struct mosaic__pmap refused; /* handles the driver would not redirect */
    pthread_key_t key;      /* destroys a thread's event pair at its exit */
    _Atomic uint64_t redirected, not_redirected, refused_n;
    _Atomic unsigned next_slot; /* the default streams' green stream, in turn */
} G = {.once = PTHREAD_ONCE_INIT,
       .fn = MOSAIC__PMAP_INITIALIZER,
       .refused = MOSAIC__PMAP_INITIALIZER};

struct evpair {
    CUevent in, out;
};
static __thread struct evpair *t_ev;
static __thread unsigned t_slot; /* this thread's green stream + 1, 0: none yet */

/* What the partition did, said at exit at MOSAIC_LOG=info: how many
 * launches went to the green context, how many stayed (capturing streams,
 * refused handles) and how many handles the driver refused. */
__attribute__((destructor)) static void green_report(void)
{
    if (atomic_load(&mosaic__green_on) != MOSAIC__GREEN_ACTIVE)
        return;
    MOSAIC__LOG(MOSAIC__LOG_INFO,
                "%s partition of %u SMs: %llu launches redirected, %llu not (capturing "
                "streams, refused handles), %llu handles refused by the driver",
                G.who, G.sms, (unsigned long long)atomic_load(&G.redirected),
                (unsigned long long)atomic_load(&G.not_redirected),
                (unsigned long long)atomic_load(&G.refused_n));
}

/* ---- configuration ---------------------------------------------------- */

void mosaic__green_configure(void)
{
    const char *v;
    char *end;
    long n;

    if (mosaic__cfg.role == MOSAIC__ROLE_BE)
        G.var = "MOSAIC_BE_SMS", G.who = "BE";
    else if (mosaic__cfg.role == MOSAIC__ROLE_HP)
        G.var = "MOSAIC_HP_SMS", G.who = "HP", G.hp = 1;
    else
        return;
    v = getenv(G.var);
    if (!v || !*v || !mosaic__observing())
        return;
    n = strtol(v, &end, 10);
    if (*end != '\0' || n < 1 || n > 100000) {
        char msg[256];
        /* Still an override: the user asked for a size of their own. */
        G.from_env = 1;
        if (snprintf(G.src, sizeof(G.src), "%s=\"%.40s\"", G.var, v) < 0)
            G.src[0] = '\0';
        int w = snprintf(msg, sizeof(msg),
                         "mosaic: %s=\"%.40s\" is not a number of SMs (1 to the GPU's SM "
                         "count); %s kernels run on the full GPU\n",
                         G.var, v, G.who);
        if (w > 0)
            mosaic__say(msg);
        return;
    }
    G.wanted = (int)n;
    G.from_env = 1;
    if (snprintf(G.src, sizeof(G.src), "%s=%ld", G.var, n) < 0)
        G.src[0] = '\0';
    atomic_store(&mosaic__green_on, MOSAIC__GREEN_PENDING);
}

void mosaic__green_offer(unsigned sms)
{
    int expect = 0;

    if (!G.who || !mosaic__observing())
        return; /* neither BE nor HP: never partitioned */
    if (G.from_env) {
        if (atomic_exchange(&G.offer_said, 1) == 0 && (int)sms != G.wanted)
            MOSAIC__LOG(MOSAIC__LOG_INFO, "%s overrides the arbiter's %s partition of %u SMs",
                        G.src, G.who, sms);
        return;
    }
    if (sms == 0)
        return; /* the arbiter's word is the full GPU, the default */
    if (!atomic_compare_exchange_strong(&G.offered, &expect, (int)sms)) {
        /* The partition is made once per process (the green context and its
         * streams live as long as it does); a daemon restarted with another
         * split is said once and not followed. */
        if (expect != (int)sms && atomic_exchange(&G.offer_said, 1) == 0) {
            char msg[256];
            int w = snprintf(msg, sizeof(msg),
                             "mosaic: the arbiter now asks for a %s partition of %u SMs; this "
                             "process keeps the one it was given first (%d SMs) until it "
                             "restarts\n",
                             G.who, sms, expect);
            if (w > 0)
                mosaic__say(msg);
        }
        return;
    }
    G.wanted = (int)sms;
    if (snprintf(G.src, sizeof(G.src), "the arbiter's %s partition of %u SMs", G.who, sms) < 0)
        G.src[0] = '\0';
    /* Release: a launch that sees PENDING sees wanted and src (setup runs
     * under the once after an acquire load of the state). */
    atomic_store_explicit(&mosaic__green_on, MOSAIC__GREEN_PENDING, memory_order_release);
}

/* ---- setup ------------------------------------------------------------ */

static void say_full_gpu(const char *why)
{
    char msg[640];
    int w = snprintf(msg, sizeof(msg), "mosaic: %s: %s; %s kernels run on the full GPU\n",
                     G.src, why, G.who);
    if (w > 0)
        mosaic__say(msg);
}

static int lookup(const struct mosaic__binding *b, int version)
{
    typedef CUresult(CUDAAPI * getproc_fn)(const char *, void **, int, cuuint64_t,
                                            CUdriverProcAddressQueryResult *);
    getproc_fn gp = (getproc_fn)b->real[MOSAIC__HOOK_cuGetProcAddress_v2];
    char why[256];

    if (!gp) {
        say_full_gpu("the driver has no cuGetProcAddress_v2 (older than CUDA 12.0, green "
                     "contexts need 12.4)");
        return -1;
    }
#define GREEN_LOOKUP(field, name, since)                                                  \
    {                                                                                     \
        void *p = NULL;                                                                   \
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;         \
        if (gp(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS ||   \
            !p) {                                                                         \
            int w = snprintf(why, sizeof(why),                                           \
                             "the driver (CUDA %d.%d) has no %s (green contexts need "  \
                             "CUDA %d.%d)",                                              \
                             version / 1000, version % 1000 / 10, name, since / 1000,    \
                             since % 1000 / 10);                                          \
            say_full_gpu(w > 0 ? why : name);                                             \
            return -1;                                                                    \
        }                                                                                 \
        memcpy(&G.d.field, &p, sizeof(p));                                                \
    }
    GREEN_DRV(GREEN_LOOKUP)
#undef GREEN_LOOKUP
    return 0;
}

/* Whether the driver can make this side's partition of n SMs: for HP a
 * group of n, a multiple of align and at least min; for BE the rest of the
 * GPU beside such a group of total - n SMs, and n itself at least min. */
static int valid_count(unsigned total, unsigned align, unsigned min, unsigned n)
{
    unsigned g = G.hp ? n : total - n;

    return n >= min && n < total && g >= min && g % align == 0;
}

/* The nearest valid counts under and over want (0 where there is none). */
static void nearest(unsigned total, unsigned align, unsigned min, unsigned want,
                    unsigned *below, unsigned *above)
{
    *below = *above = 0;
    for (unsigned n = want; n >= 1 && !*below; n--)
        if (valid_count(total, align, min, n))
            *below = n;
    for (unsigned n = want; n < total && !*above; n++)
        if (valid_count(total, align, min, n))
            *above = n;
}

static void destroy_events(void *p)
{
    struct evpair *e = p;

    if (e && G.d.EventDestroy) {
        G.d.EventDestroy(e->in);
        G.d.EventDestroy(e->out);
    }
    free(e);
}

static void setup(void)
{
    const struct mosaic__binding *b = mosaic__binding();
    CUdevice dev;
    CUdevResource all, group, rest, got, *mine;
    CUdevResourceDesc desc = NULL;
    unsigned nb = 1, total, align, min, below, above;
    int version = 0;
    char why[320];
    CUresult r;

    if (!b || !b->real[MOSAIC__HOOK_cuGetProcAddress_v2]) {
        say_full_gpu("the driver has no cuGetProcAddress_v2 (green contexts need CUDA 12.4)");
        goto off;
    }
    {
        typedef CUresult(CUDAAPI * ver_fn)(int *);
        ver_fn dv = (ver_fn)mosaic__real_dlsym(b->libcuda, "cuDriverGetVersion");
        if (!dv || dv(&version) != CUDA_SUCCESS)
            version = 0;
    }
    if (version < 12040) {
        int w = snprintf(why, sizeof(why),
                         "the driver is CUDA %d.%d; green contexts need CUDA 12.4 or newer",
                         version / 1000, version % 1000 / 10);
        say_full_gpu(w > 0 ? why : "the driver is too old for green contexts");
        goto off;
    }
    if (lookup(b, version) != 0)
        goto off;
    memset(&all, 0, sizeof(all));
    if ((r = G.d.DeviceGet(&dev, 0)) != CUDA_SUCCESS ||
        (r = G.d.DeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM)) != CUDA_SUCCESS) {
        int w = snprintf(why, sizeof(why), "cuDeviceGetDevResource(SM) failed (CUresult %d)",
                         (int)r);
        say_full_gpu(w > 0 ? why : "cuDeviceGetDevResource failed");
        goto off;
    }
    total = all.sm.smCount;
    align = all.sm.smCoscheduledAlignment ? all.sm.smCoscheduledAlignment : 1;
    min = all.sm.minSmPartitionSize ? all.sm.minSmPartitionSize : 1;
    if ((unsigned)G.wanted >= total) {
        MOSAIC__LOG(MOSAIC__LOG_INFO, "%s: the GPU has %u SMs; %s runs on all", G.src,
                    total, G.who);
        goto off;
    }
    if (!valid_count(total, align, min, (unsigned)G.wanted)) {
        char alt[96] = "none";
        int w;
        nearest(total, align, min, (unsigned)G.wanted, &below, &above);
        if (below && above)
            w = snprintf(alt, sizeof(alt), "%u or %u", below, above);
        else if (below || above)
            w = snprintf(alt, sizeof(alt), "%u", below ? below : above);
        else
            w = 0;
        if (w < 0)
            alt[0] = '\0';
        if (G.hp)
            w = snprintf(why, sizeof(why),
                         "this GPU cannot make an HP partition of %d SMs (a group of a "
                         "multiple of %u SMs, at least %u, of %u); the nearest it can make: %s",
                         G.wanted, align, min, total, alt);
        else
            w = snprintf(why, sizeof(why),
                         "this GPU cannot make a BE partition of %d SMs (it is the rest beside "
                         "a group of a multiple of %u SMs, at least %u, of %u; at least %u SMs "
                         "itself); the nearest it can make: %s",
                         G.wanted, align, min, total, min, alt);
        say_full_gpu(w > 0 ? why : "invalid partition size");
        goto off;
    }
    memset(&group, 0, sizeof(group));
    memset(&rest, 0, sizeof(rest));
    {
        unsigned ask = G.hp ? (unsigned)G.wanted : total - (unsigned)G.wanted;
        r = G.d.DevSmResourceSplitByCount(&group, &nb, &all, &rest, 0, ask);
        mine = G.hp ? &group : &rest;
        if (r != CUDA_SUCCESS || nb != 1 || mine->sm.smCount != (unsigned)G.wanted) {
            int w = snprintf(why, sizeof(why),
                             "cuDevSmResourceSplitByCount(%u) gave CUresult %d, %u group(s) "
                             "of %u SMs, a remainder of %u",
                             ask, (int)r, nb, group.sm.smCount, rest.sm.smCount);
            say_full_gpu(w > 0 ? why : "the SM split failed");
            goto off;
        }
    }
    if ((r = G.d.DevResourceGenerateDesc(&desc, mine, 1)) != CUDA_SUCCESS ||
        (r = G.d.GreenCtxCreate(&G.ctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM)) !=
            CUDA_SUCCESS) {
        int w = snprintf(why, sizeof(why),
                         "creating the green context failed (CUresult %d; under MPS, "
                         "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE may forbid it)",
                         (int)r);
        say_full_gpu(w > 0 ? why : "creating the green context failed");
        G.ctx = NULL;
        goto off;
    }
    memset(&got, 0, sizeof(got));
    if (G.d.GreenCtxGetDevResource(G.ctx, &got, CU_DEV_RESOURCE_TYPE_SM) != CUDA_SUCCESS ||
        G.d.CtxFromGreenCtx(&G.cu, G.ctx) != CUDA_SUCCESS)
        goto fail;
    G.sms = got.sm.smCount;
    for (int i = 0; i < GREEN_STREAMS; i++)
        /* CU_STREAM_NON_BLOCKING is required by cuGreenCtxStreamCreate. */
        if ((r = G.d.GreenCtxStreamCreate(&G.streams[i], G.ctx, CU_STREAM_NON_BLOCKING, 0)) !=
            CUDA_SUCCESS)
            goto fail;
    if (pthread_key_create(&G.key, destroy_events) != 0)
        goto fail;
    MOSAIC__LOG(MOSAIC__LOG_INFO, "%s partition: a green context of %u SMs (asked %d of %u)",
                G.who, G.sms, G.wanted, total);
    atomic_store(&mosaic__green_on, MOSAIC__GREEN_ACTIVE);
    return;
fail:
    say_full_gpu("setting up the green context's streams failed");
    /* The streams already made go with the context. */
    G.d.GreenCtxDestroy(G.ctx);
    G.ctx = NULL;
off:
    atomic_store(&mosaic__green_on, MOSAIC__GREEN_OFF);
}

/* ---- per launch ------------------------------------------------------- */

static struct evpair *thread_events(void)
{
    struct evpair *e = t_ev;

    if (e != NULL)
        return e;
    e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    /* Timing is never read from these: disabling it is the cheaper kind. */
    if (G.d.EventCreate(&e->in, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
        G.d.EventCreate(&e->out, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
        if (e->in)
            G.d.EventDestroy(e->in);
        free(e);
        return NULL;
    }
    pthread_setspecific(G.key, e);
    t_ev = e;
    return e;
}

/* The CUfunction to launch in the green context: a CUkernel's own there
 * (made once); a CUfunction as it is. NULL on failure. */
static const void *green_function(const void *fn)
{
    struct mosaic__kernel *k;
    CUfunction f = NULL;
    CUcontext popped;
    CUresult r;
    void *have;

    if (!fn)
        return NULL;
    k = mosaic__kernel_get(fn, -1);
    if (k->kind != MOSAIC__KIND_KERNEL)
        return fn;
    have = mosaic__pmap_get(&G.fn, fn);
    if (have)
        return have;
    if (G.d.CtxPushCurrent(G.cu) != CUDA_SUCCESS)
        return NULL;
    r = G.d.KernelGetFunction(&f, (CUkernel)(uintptr_t)fn);
    G.d.CtxPopCurrent(&popped);
    if (r != CUDA_SUCCESS || !f)
        return NULL;
    have = mosaic__pmap_put_new(&G.fn, fn, (void *)f);
    return have ? have : (const void *)f;
}

int mosaic__green_enter(const struct mosaic__binding *b, int hook, const void *handle,
                        const void *fn, CUstream app, struct mosaic__green_launch *g)
{
    int ptsz = strstr(mosaic__hook_names[hook], "_ptsz") != NULL;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    uintptr_t h;
    struct evpair *e;

    (void)b;
    g->on = 0;
    /* Acquire: pairs with mosaic__green_offer's release of the state, so
     * that setup reads the size the arbiter gave. */
    if (atomic_load_explicit(&mosaic__green_on, memory_order_acquire) == MOSAIC__GREEN_OFF)
        return 0;
    pthread_once(&G.once, setup);
    if (atomic_load_explicit(&mosaic__green_on, memory_order_acquire) != MOSAIC__GREEN_ACTIVE)
        return 0;
    /* The application's stream as the plain entry points name it: NULL of
     * a _ptsz entry point is this thread's per-thread default stream. */
    g->app = ptsz && app == NULL ? CU_STREAM_PER_THREAD : app;
    if (G.d.StreamIsCapturing(g->app, &st) != CUDA_SUCCESS ||
        st != CU_STREAM_CAPTURE_STATUS_NONE || mosaic__pmap_get(&G.refused, handle)) {
        atomic_fetch_add_explicit(&G.not_redirected, 1, memory_order_relaxed);
        return 0;
    }
    g->fn = fn ? green_function(fn) : NULL;
    e = thread_events();
    if ((fn && !g->fn) || !e) {
        atomic_fetch_add_explicit(&G.not_redirected, 1, memory_order_relaxed);
        return 0;
    }
    if (g->app == CU_STREAM_PER_THREAD || g->app == NULL) {
        /* The default streams: each thread its own green stream, in turn,
         * so that threads launching on their per-thread streams stay
         * independent (up to GREEN_STREAMS of them). */
        if (!t_slot)
            t_slot = atomic_fetch_add(&G.next_slot, 1) % GREEN_STREAMS + 1;
        g->green = G.streams[t_slot - 1];
    } else {
        h = (uintptr_t)g->app;
        h ^= h >> 17;
        g->green = G.streams[(h ^ (h >> 7)) % GREEN_STREAMS];
    }
    g->handle = handle;
    g->ev = e;
    if (G.d.EventRecord(e->in, g->app) != CUDA_SUCCESS ||
        G.d.StreamWaitEvent(g->green, e->in, 0) != CUDA_SUCCESS) {
        atomic_fetch_add_explicit(&G.not_redirected, 1, memory_order_relaxed);
        return 0;
    }
    g->on = 1;
    return 1;
}

int mosaic__green_leave(struct mosaic__green_launch *g, CUresult r)
{
    struct evpair *e = g->ev;

    if (r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_CONTEXT) {
        /* The driver would not run this handle in the green context: it
         * runs where the application put it, from now on. The green
         * stream's wait for the event is harmless. */
        if (mosaic__pmap_put(&G.refused, g->handle, (void *)1) == 0 &&
            atomic_fetch_add(&G.refused_n, 1) == 0)
            mosaic__say("mosaic: green context: the driver refused a launch on it (a "
                        "function of the application's own context?); such launches run on "
                        "the full GPU\n");
        return 1;
    }
    if (r != CUDA_SUCCESS)
        return 0; /* a launch error of the application's own */
    atomic_fetch_add_explicit(&G.redirected, 1, memory_order_relaxed);
    /* If either call fails the stream order is lost: say so (it has never
     * been seen; both calls only fail for invalid handles). */
    if (G.d.EventRecord(e->out, g->green) != CUDA_SUCCESS ||
        G.d.StreamWaitEvent(g->app, e->out, 0) != CUDA_SUCCESS)
        MOSAIC__LOG(MOSAIC__LOG_ERROR, "green context: could not order the application's "
                    "stream after a redirected launch");
    return 0;
}
