/*
 * SM partitions for best-effort work: the BE shim's green context
 * (docs/partitions.md).
 *
 * With MOSAIC_ROLE=be and N SMs given by the arbiter (its WELCOME carries
 * the partition of the client's role, mosaic__green_offer, and so does a
 * later PARTITION message) or by MOSAIC_BE_SMS=N (which overrides the
 * arbiter, for tests and for trying a size by hand), the shim makes, at the
 * first BE launch after the size was given, a green context of N SMs and a
 * few streams of it (a new one at each change: change()), and runs
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
 * A cooperative launch the driver finds too large for the partition's SMs
 * (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: a grid sized for the device),
 * or a cluster it cannot place (CUDA_ERROR_INVALID_CLUSTER_SIZE), is made
 * again on the application's stream, each time it happens.
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

/*
 * One partition: a green context of `sms` SMs and its streams. The
 * partition can change while the process runs (a new connection's WELCOME,
 * a PARTITION message: docs/partitions.md, "Changing the partition"); a
 * replaced one is kept, never destroyed, since launches already on its
 * streams may still run and another thread may be between the two halves
 * of a redirected launch on it. There are as many as the changes asked.
 */
struct part {
    int wanted;             /* the size asked */
    CUgreenCtx ctx;
    CUcontext cu;           /* the green context as a CUcontext */
    CUstream streams[GREEN_STREAMS];
    unsigned sms;           /* SMs the green context reports */
    struct mosaic__pmap fn; /* CUkernel -> its CUfunction in this green ctx */
    struct part *retired;
};

static struct {
    pthread_mutex_t lock;   /* a change of partition, src */
    int hp;                 /* the HP side: a group, not the remainder */
    int from_env;           /* the variable was set: it overrides the arbiter's word */
    _Atomic int target;     /* the size asked now, 0: the full GPU */
    _Atomic int offer_said; /* the variable's override was said once */
    int drv;                /* 0: not set up yet, 1: usable, -1: green contexts unusable */
    const char *var;        /* the variable's name, for messages */
    char src[96];           /* "MOSAIC_BE_SMS=60" or "the arbiter's BE partition of 60 SMs" */
    const char *who;        /* "BE" or "HP" */
    struct green_drv d;
    CUdevice dev;
    CUdevResource all;      /* the device's SMs */
    unsigned total, align, min;
    _Atomic(struct part *) cur; /* NULL: the full GPU */
    struct part *retired;
    struct mosaic__pmap refused; /* handles the driver would not redirect */
    pthread_key_t key;      /* destroys a thread's event pair at its exit */
    _Atomic uint64_t redirected, not_redirected, refused_n, changes;
    _Atomic uint64_t coop_full; /* cooperative launches too large, run on the full GPU */
    _Atomic unsigned next_slot; /* the default streams' green stream, in turn */
} G = {.lock = PTHREAD_MUTEX_INITIALIZER,
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
    struct part *p = atomic_load(&G.cur);

    if (!p && !atomic_load(&G.changes))
        return;
    MOSAIC__LOG(MOSAIC__LOG_INFO,
                "%s partition (%u SMs at exit, 0: the full GPU; %llu changes): %llu launches "
                "redirected, %llu not (capturing streams, refused handles), %llu handles "
                "refused by the driver, %llu cooperative or cluster launches too large for it "
                "run on the full GPU",
                G.who, p ? p->sms : 0, (unsigned long long)atomic_load(&G.changes),
                (unsigned long long)atomic_load(&G.redirected),
                (unsigned long long)atomic_load(&G.not_redirected),
                (unsigned long long)atomic_load(&G.refused_n),
                (unsigned long long)atomic_load(&G.coop_full));
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
    atomic_store(&G.target, (int)n);
    G.from_env = 1;
    if (snprintf(G.src, sizeof(G.src), "%s=%ld", G.var, n) < 0)
        G.src[0] = '\0';
    atomic_store(&mosaic__green_on, MOSAIC__GREEN_PENDING);
}

void mosaic__green_offer(unsigned sms)
{
    if (!G.who || !mosaic__observing())
        return; /* neither BE nor HP: never partitioned */
    if (G.from_env) {
        if (atomic_exchange(&G.offer_said, 1) == 0 && (int)sms != atomic_load(&G.target))
            MOSAIC__LOG(MOSAIC__LOG_INFO, "%s overrides the arbiter's %s partition of %u SMs",
                        G.src, G.who, sms);
        return;
    }
    pthread_mutex_lock(&G.lock);
    if ((int)sms == atomic_load(&G.target)) {
        pthread_mutex_unlock(&G.lock);
        return; /* the size asked already (0 at the start: the full GPU) */
    }
    atomic_store(&G.target, (int)sms);
    if (sms && snprintf(G.src, sizeof(G.src), "the arbiter's %s partition of %u SMs", G.who,
                        sms) < 0)
        G.src[0] = '\0';
    /* Applied by the next launch (mosaic__green_enter: change). Release: a
     * launch that sees PENDING sees the target. */
    atomic_store_explicit(&mosaic__green_on, MOSAIC__GREEN_PENDING, memory_order_release);
    pthread_mutex_unlock(&G.lock);
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

/* Once: the driver's version, entry points and SMs. 0, or -1 (said why:
 * every partition of this process is the full GPU). */
static int drv_init(void)
{
    const struct mosaic__binding *b = mosaic__binding();
    int version = 0;
    char why[320];
    CUresult r;

    if (G.drv)
        return G.drv > 0 ? 0 : -1;
    G.drv = -1;
    if (!b || !b->real[MOSAIC__HOOK_cuGetProcAddress_v2]) {
        say_full_gpu("the driver has no cuGetProcAddress_v2 (green contexts need CUDA 12.4)");
        return -1;
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
        return -1;
    }
    if (lookup(b, version) != 0)
        return -1;
    memset(&G.all, 0, sizeof(G.all));
    if ((r = G.d.DeviceGet(&G.dev, 0)) != CUDA_SUCCESS ||
        (r = G.d.DeviceGetDevResource(G.dev, &G.all, CU_DEV_RESOURCE_TYPE_SM)) !=
            CUDA_SUCCESS) {
        int w = snprintf(why, sizeof(why), "cuDeviceGetDevResource(SM) failed (CUresult %d)",
                         (int)r);
        say_full_gpu(w > 0 ? why : "cuDeviceGetDevResource failed");
        return -1;
    }
    if (pthread_key_create(&G.key, destroy_events) != 0) {
        say_full_gpu("no thread-specific key for the redirect's events");
        return -1;
    }
    G.total = G.all.sm.smCount;
    G.align = G.all.sm.smCoscheduledAlignment ? G.all.sm.smCoscheduledAlignment : 1;
    G.min = G.all.sm.minSmPartitionSize ? G.all.sm.minSmPartitionSize : 1;
    G.drv = 1;
    return 0;
}

/* A partition of want SMs for this side, or NULL (said why: the full
 * GPU). Under G.lock. */
static struct part *make_part(int want)
{
    CUdevResource all, group, rest, got, *mine;
    CUdevResourceDesc desc = NULL;
    unsigned nb = 1, below, above, total, align, min;
    struct part *p;
    char why[320];
    CUresult r;

    if (drv_init() != 0)
        return NULL;
    all = G.all;
    total = G.total;
    align = G.align;
    min = G.min;
    if ((unsigned)want >= total) {
        MOSAIC__LOG(MOSAIC__LOG_INFO, "%s: the GPU has %u SMs; %s runs on all", G.src,
                    total, G.who);
        return NULL;
    }
    if (!valid_count(total, align, min, (unsigned)want)) {
        char alt[96] = "none";
        int w;
        nearest(total, align, min, (unsigned)want, &below, &above);
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
                         want, align, min, total, alt);
        else
            w = snprintf(why, sizeof(why),
                         "this GPU cannot make a BE partition of %d SMs (it is the rest beside "
                         "a group of a multiple of %u SMs, at least %u, of %u; at least %u SMs "
                         "itself); the nearest it can make: %s",
                         want, align, min, total, min, alt);
        say_full_gpu(w > 0 ? why : "invalid partition size");
        return NULL;
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        say_full_gpu("out of memory");
        return NULL;
    }
    p->wanted = want;
    p->fn = (struct mosaic__pmap)MOSAIC__PMAP_INITIALIZER;
    memset(&group, 0, sizeof(group));
    memset(&rest, 0, sizeof(rest));
    {
        unsigned ask = G.hp ? (unsigned)want : total - (unsigned)want;
        r = G.d.DevSmResourceSplitByCount(&group, &nb, &all, &rest, 0, ask);
        mine = G.hp ? &group : &rest;
        if (r != CUDA_SUCCESS || nb != 1 || mine->sm.smCount != (unsigned)want) {
            int w = snprintf(why, sizeof(why),
                             "cuDevSmResourceSplitByCount(%u) gave CUresult %d, %u group(s) "
                             "of %u SMs, a remainder of %u",
                             ask, (int)r, nb, group.sm.smCount, rest.sm.smCount);
            say_full_gpu(w > 0 ? why : "the SM split failed");
            free(p);
            return NULL;
        }
    }
    if ((r = G.d.DevResourceGenerateDesc(&desc, mine, 1)) != CUDA_SUCCESS ||
        (r = G.d.GreenCtxCreate(&p->ctx, desc, G.dev, CU_GREEN_CTX_DEFAULT_STREAM)) !=
            CUDA_SUCCESS) {
        int w = snprintf(why, sizeof(why),
                         "creating the green context failed (CUresult %d; under MPS, "
                         "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE may forbid it)",
                         (int)r);
        say_full_gpu(w > 0 ? why : "creating the green context failed");
        free(p);
        return NULL;
    }
    memset(&got, 0, sizeof(got));
    if (G.d.GreenCtxGetDevResource(p->ctx, &got, CU_DEV_RESOURCE_TYPE_SM) != CUDA_SUCCESS ||
        G.d.CtxFromGreenCtx(&p->cu, p->ctx) != CUDA_SUCCESS)
        goto fail;
    p->sms = got.sm.smCount;
    for (int i = 0; i < GREEN_STREAMS; i++)
        /* CU_STREAM_NON_BLOCKING is required by cuGreenCtxStreamCreate. */
        if ((r = G.d.GreenCtxStreamCreate(&p->streams[i], p->ctx, CU_STREAM_NON_BLOCKING, 0)) !=
            CUDA_SUCCESS)
            goto fail;
    MOSAIC__LOG(MOSAIC__LOG_INFO, "%s partition: a green context of %u SMs (asked %d of %u)",
                G.who, p->sms, want, total);
    return p;
fail:
    say_full_gpu("setting up the green context's streams failed");
    /* The streams already made go with the context. */
    G.d.GreenCtxDestroy(p->ctx);
    free(p);
    return NULL;
}

/*
 * Applies the size asked (G.target) at a launch: the safe point, since
 * every earlier redirected launch of this thread already ordered its
 * application stream after it (mosaic__green_leave), so whatever this
 * launch goes to, the new partition's stream or the application's own,
 * it follows them in stream order. Another thread's launch between its
 * enter and leave keeps the partition it entered with (kept, never
 * destroyed). A size that cannot be made is said and leaves the full GPU.
 */
static void change(void)
{
    struct part *old, *np;
    int want;

    pthread_mutex_lock(&G.lock);
    if (atomic_load(&mosaic__green_on) != MOSAIC__GREEN_PENDING) {
        pthread_mutex_unlock(&G.lock); /* another thread's launch applied it */
        return;
    }
    want = atomic_load(&G.target);
    old = atomic_load(&G.cur);
    np = old && old->wanted == want ? old : want > 0 ? make_part(want) : NULL;
    if (np != old) {
        atomic_store(&G.cur, np);
        if (old) {
            old->retired = G.retired;
            G.retired = old;
            atomic_fetch_add(&G.changes, 1);
            MOSAIC__LOG(MOSAIC__LOG_INFO, "%s partition changed from %u SMs to %u (0: the "
                        "full GPU), between two launches", G.who, old->sms,
                        np ? np->sms : 0);
        }
    }
    atomic_store(&mosaic__green_on, np ? MOSAIC__GREEN_ACTIVE : MOSAIC__GREEN_OFF);
    pthread_mutex_unlock(&G.lock);
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
static const void *green_function(struct part *p, const void *fn)
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
    have = mosaic__pmap_get(&p->fn, fn);
    if (have)
        return have;
    if (G.d.CtxPushCurrent(p->cu) != CUDA_SUCCESS)
        return NULL;
    r = G.d.KernelGetFunction(&f, (CUkernel)(uintptr_t)fn);
    G.d.CtxPopCurrent(&popped);
    if (r != CUDA_SUCCESS || !f)
        return NULL;
    have = mosaic__pmap_put_new(&p->fn, fn, (void *)f);
    return have ? have : (const void *)f;
}

void mosaic__green_prepare(const void *fn)
{
    struct part *p;

    if (atomic_load_explicit(&mosaic__green_on, memory_order_acquire) == MOSAIC__GREEN_PENDING)
        change(); /* the partition this launch will enter */
    p = atomic_load_explicit(&G.cur, memory_order_acquire);
    if (p)
        (void)green_function(p, fn);
}

int mosaic__green_enter(const struct mosaic__binding *b, int hook, const void *handle,
                        const void *fn, CUstream app, struct mosaic__green_launch *g)
{
    int ptsz = strstr(mosaic__hook_names[hook], "_ptsz") != NULL;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    uintptr_t h;
    struct evpair *e;
    struct part *p;
    int state;

    (void)b;
    g->on = 0;
    /* Acquire: pairs with mosaic__green_offer's release of the state, so
     * that the change reads the size the arbiter gave. */
    state = atomic_load_explicit(&mosaic__green_on, memory_order_acquire);
    if (state == MOSAIC__GREEN_OFF)
        return 0;
    if (state == MOSAIC__GREEN_PENDING)
        change();
    p = atomic_load_explicit(&G.cur, memory_order_acquire);
    if (!p)
        return 0;
    /* The application's stream as the plain entry points name it: NULL of
     * a _ptsz entry point is this thread's per-thread default stream. */
    g->app = ptsz && app == NULL ? CU_STREAM_PER_THREAD : app;
    if (G.d.StreamIsCapturing(g->app, &st) != CUDA_SUCCESS ||
        st != CU_STREAM_CAPTURE_STATUS_NONE || mosaic__pmap_get(&G.refused, handle)) {
        atomic_fetch_add_explicit(&G.not_redirected, 1, memory_order_relaxed);
        return 0;
    }
    g->fn = fn ? green_function(p, fn) : NULL;
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
        g->green = p->streams[t_slot - 1];
    } else {
        h = (uintptr_t)g->app;
        h ^= h >> 17;
        g->green = p->streams[(h ^ (h >> 7)) % GREEN_STREAMS];
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
    if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE || r == CUDA_ERROR_INVALID_CLUSTER_SIZE) {
        /* A cooperative grid sized for the whole device (cuDNN's batch-norm
         * forward, from the device's SM count: 2026-12-02 H200) cannot be
         * resident on the partition's SMs. It runs where the application put
         * it, this launch only: the same kernel with a smaller grid, or in a
         * larger partition, may fit. A thread-block cluster the partition's
         * SMs cannot place (cuBLAS's GEMMs on 12 SMs, error 912) is the same
         * case. */
        if (atomic_fetch_add(&G.coop_full, 1) == 0)
            MOSAIC__LOG(MOSAIC__LOG_INFO,
                        "green context: a cooperative or cluster launch too large for the %s "
                        "partition runs on the full GPU (such launches are counted at exit)",
                        G.who);
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
