/*
 * The shim as a client of the arbiter daemon (docs/sched.md): with
 * MOSAIC_ROLE=hp or be, libmosaic.so connects to mosaic-sched through the
 * client library (include/mosaic/sched.h) at the first driver call it sees,
 * asynchronously, so that neither the host program's start nor its first
 * launch waits for a daemon that may not be there.
 *
 * HP: every executed launch is posted (its kernel id: the hash of the
 * profile key the shim computes, name + launch configuration; a graph
 * launch posts its kernel nodes' ids, known from instantiation, graph.c)
 * and requests are delimited by the exported mosaic_request_begin/end, by
 * NVTX ranges named "mosaic:request" (nvtx.c), or, for an unmodified
 * program, learned from its pattern: the first launch after a
 * synchronisation begins a request, and the next cuStreamSynchronize,
 * cuCtxSynchronize(_v2) or cuEventSynchronize to return ends it. The first
 * explicit signal (API or NVTX) ends learning for good (docs/sched.md,
 * "HP requests: where they come from"). All of it is ring writes: no wait,
 * and no system call unless a BE kernel waits for a decision that a
 * request's end may change (the doorbell, MOSAIC_HP_END_DOORBELL) or the
 * ring is past half full; with no daemon the client returns
 * MOSAIC_EDISCONNECTED at once and the program runs uncontrolled.
 *
 * BE: each kernel and graph launch is admitted before it may start (a
 * graph as one unit, defined to the daemon by its kernels: graph.c). By
 * default (MOSAIC_BE_GATE=device) on the device: the launch hook asks the
 * daemon (a ring write), enqueues cuStreamWaitValue32 on the stream's
 * grant word in the shared segment (mapped for the device with
 * cuMemHostRegister), lets the launch through, and enqueues
 * cuStreamWriteValue32 of the stream's done word behind it. The launch
 * returns at once and the stream stays deep; the grant is the daemon's
 * memory write, made once the kernel before it on the stream finished, so
 * the daemon knows which granted kernel runs. Where the driver refuses
 * (no host-pointer mapping, no stream memory operations, a per-thread
 * default stream, more streams than slots) or MOSAIC_BE_GATE=host, the
 * kernel is held on the host: the gate first waits for this process's
 * previously granted kernels to finish (a stream synchronise of their
 * streams) and reports them done, then asks and waits for the grant.
 *
 * HP completion from the device (MOSAIC_HP_COMPLETION): the shim enqueues
 * cuStreamWriteValue64 of a number to the stream's completion word in the
 * segment and posts the events it covers with that number; the daemon
 * reads the word reaching it as their completion. By default (request)
 * once per explicit request end (API or NVTX: the write goes behind this
 * thread's last HP launch, so that an end posted before the GPU finished
 * is ended by the device), once per graph launch inside an explicit
 * request (behind the whole graph) and once per learned request, as the
 * synchronisation that ends it begins, when all its launches went to one
 * stream: the sync's return is the host's moment, later than the GPU's by
 * its wake-up and by any time the process was not running, and the
 * daemon ends the request at the earlier of the word landing as it saw it
 * and the return (the CI host's recordings on the simulated GPU had ms of
 * such host time after some requests, which the policy took for BE's
 * interference: docs/sched.md, "A learned request's end").
 * graph writes behind every graph launch (the default before 2026-12-02);
 * kernel adds one after every launch; off posts none. One driver
 * call per write, no wait, no system call of ours; the segment is mapped
 * for the device once per connection, at its first write (request) or by
 * the first launching thread that sees the connection (kernel).
 *
 * The HP launch path is a role check, one compare of the client's epoch
 * (moved by a new connection and by a partition change) against the one
 * followed (everything per connection is done when it changes: the
 * partition, the mapping, which writes to make), the
 * kernel id from a per-thread cache and the ring post; no lock, no system
 * call.
 *
 * Tested with the fake driver's simulated GPU (tests/fakecuda), not yet on
 * a real driver; it relies only on documented entry points (the CUDA 13.0
 * headers, driver 580.159.04 on the H200 to test): cuStreamWaitValue32_v2 / cuStreamWriteValue32_v2 /
 * cuStreamWriteValue64_v2 (and _ptsz), cuMemHostRegister_v2 with
 * CU_MEMHOSTREGISTER_DEVICEMAP on a MAP_SHARED memfd mapping, and
 * cuMemHostGetDevicePointer_v2. scripts/gpu/issue10_gate.sh measures the
 * same operations on the H200.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mosaic/sched.h"
#include "proto.h"
#include "green.h"
#include "sched_link.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct mosaic_sched_client *client;

/* HP requests. Ids are 32-bit and never 0, so that an NVTX range's tag
 * (core/nvtx_inject.h) can carry one; only the open ones must differ. */
static _Atomic uint32_t req_next;
static _Atomic int req_explicit;    /* the program marks requests (API or NVTX) */
static _Atomic uint32_t learned_id; /* the learned request open, 0: none */
/* The learned request whose begin reached no daemon (the client was not
 * connected yet, or was between connections): its end is not posted, so
 * that the daemon is not told of the end of a request it never saw. */
static _Atomic uint32_t learned_unposted;
static _Atomic uint32_t api_id;     /* the request mosaic_request_begin opened */

/* BE: kernels granted and not yet known finished. */
#define BE_OUT 16
static pthread_mutex_t be_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint64_t id;
    CUstream s;
    int ptsz;
} be_out[BE_OUT];
static int be_nout;

static void gate_after_fork(void);
static void hp_after_fork(void);

static void child_after_fork(void)
{
    /* The child must not post into the parent's rings; it connects as a
     * client of its own, with no request open and nothing granted. */
    pthread_mutex_init(&be_lock, NULL);
    be_nout = 0;
    gate_after_fork();
    hp_after_fork();
    atomic_store(&learned_id, 0);
    atomic_store(&learned_unposted, 0);
    atomic_store(&api_id, 0);
    if (client)
        mosaic_sched_client_atfork_child(client);
}

/*
 * MOSAIC_HP_END_DOORBELL: asked (the default) rings the daemon at an HP
 * request's end only while it sleeps with a BE kernel waiting (the daemon
 * says so in the segment); always rings whenever it sleeps, the
 * behaviour until 2026-12-02, kept to measure what it cost.
 */
static int hp_end_doorbell_from_env(void)
{
    const char *v = getenv("MOSAIC_HP_END_DOORBELL");

    if (!v || !v[0] || !strcmp(v, "asked"))
        return 0;
    if (!strcmp(v, "always"))
        return 1;
    MOSAIC__LOG(MOSAIC__LOG_WARN, "MOSAIC_HP_END_DOORBELL=\"%s\" is not asked or always: using "
                "asked (a doorbell at an HP request's end only while a BE kernel waits)", v);
    return 0;
}

static void link_init(void)
{
    struct mosaic_sched_client_opts o = {0};
    const char *sock = getenv("MOSAIC_SCHED_SOCKET");
    int rc;

    o.socket_path = sock && sock[0] ? sock : NULL;
    o.role = mosaic__cfg.role == MOSAIC__ROLE_HP ? MOSAIC_SCHED_ROLE_HP : MOSAIC_SCHED_ROLE_BE;
    o.async_connect = 1;
    o.hp_end_doorbell_always = hp_end_doorbell_from_env();
    rc = mosaic_sched_client_open(&o, &client);
    if (rc != 0 && rc != MOSAIC_EREFUSED) {
        MOSAIC__LOG(MOSAIC__LOG_WARN, "arbiter client not started (%s): running uncontrolled",
                    mosaic_strerror(rc));
        client = NULL;
        return;
    }
    pthread_atfork(NULL, NULL, child_after_fork);
    MOSAIC__LOG(MOSAIC__LOG_INFO, "arbiter client: role %s, socket %s (connecting in the "
                "background)", mosaic__role_name(mosaic__cfg.role),
                o.socket_path ? o.socket_path : MOSAIC_SCHED_DEFAULT_SOCKET);
}

/* The daemon's SM partition for this role (policy static, or a later
 * `mosaic-sched partition`), handed to the green context at each new
 * connection and each PARTITION message: the client stores the size before
 * it moves the generation or the partition sequence, so reading them in
 * the other order sees the new size. HP calls it from hp_follow (once per
 * connection and per partition change), BE after each admission. */
static void partition_follow(struct mosaic_sched_client *c)
{
    static _Atomic uint64_t seen;
    uint64_t gen = mosaic_sched_client_generation(c);
    /* Both counters in one word: generations and partition changes are far
     * below 2^32 in any process's life. */
    uint64_t now = gen << 32 | (mosaic_sched_client_partition_seq(c) & 0xffffffffu);

    if (gen && atomic_load_explicit(&seen, memory_order_relaxed) != now &&
        atomic_exchange(&seen, now) != now)
        mosaic__green_offer(mosaic_sched_client_sms(c));
}

/* 1 once link_init has run: the launch path then reads one word instead
 * of calling pthread_once (a call into libc and its own checks, measured
 * at about 15 instructions a launch). */
static _Atomic int linked;

static void link_once(void)
{
    pthread_once(&once, link_init);
    atomic_store_explicit(&linked, 1, memory_order_release);
}

static inline struct mosaic_sched_client *get_client(int role)
{
    if (mosaic__cfg.role != role || !mosaic__observing())
        return NULL;
    if (MOSAIC__UNLIKELY(!atomic_load_explicit(&linked, memory_order_acquire)))
        link_once();
    return client;
}

/* ---- kernel ids -------------------------------------------------------- */

/* A small per-thread cache: the id is a hash of a formatted key, about
 * 100 ns, and a service launches the same few configurations again. */
#define ID_CACHE 64
struct id_slot {
    const void *fn;
    unsigned grid[3], block[3], smem;
    uint64_t id;
};
static __thread __attribute__((tls_model("initial-exec"))) struct id_slot id_cache[ID_CACHE];

uint64_t mosaic__sched_key_id(const char *name, const unsigned *g, const unsigned *bl,
                              unsigned smem)
{
    char tail[128];

    /* The same form as mosaic_kernel_key (include/mosaic/profile.h), so
     * the daemon's profile store finds the kernel by it; the name is
     * hashed in place, whatever its length (a key buffer of 1,200 bytes
     * made the H200 ResNet-18 trainer's two CUTLASS kernels, names of
     * 1,657 and 1,708 characters, kernel 0: unknown, held beside every HP
     * request). The suffix of ten numbers always fits. */
    snprintf(tail, sizeof(tail), "|grid=%u,%u,%u|block=%u,%u,%u|dsmem=%u", g[0], g[1], g[2],
             bl[0], bl[1], bl[2], smem);
    return mosaic__kernel_id_join(name ? name : "", tail);
}

/* A miss: the id formed and hashed (about 100 ns), then cached. Out of
 * line, so that a hit does not pay for this path's registers. */
static __attribute__((noinline)) uint64_t kernel_id_miss(struct id_slot *e, const void *fn,
                                                       const unsigned *g, const unsigned *bl,
                                                       unsigned smem)
{
    uint64_t id = mosaic__sched_key_id(mosaic__kernel_get(fn, -1)->name, g, bl, smem);

    *e = (struct id_slot){.fn = fn, .grid = {g[0], g[1], g[2]},
                          .block = {bl[0], bl[1], bl[2]}, .smem = smem, .id = id};
    return id;
}

static inline uint64_t kernel_id(const void *fn, const unsigned *g, const unsigned *bl,
                                 unsigned smem)
{
    uintptr_t h = ((uintptr_t)fn >> 4) ^ g[0] * 31u ^ g[1] * 131u ^ bl[0] * 7u ^ smem;
    struct id_slot *e = &id_cache[h % ID_CACHE];

    /* Field by field: two memcmp calls cost more than the whole test. */
    if (__builtin_expect(e->fn == fn && e->id && e->grid[0] == g[0] && e->grid[1] == g[1] &&
                       e->grid[2] == g[2] && e->block[0] == bl[0] && e->block[1] == bl[1] &&
                       e->block[2] == bl[2] && e->smem == smem, 1))
        return e->id;
    return kernel_id_miss(e, fn, g, bl, smem);
}

/* ---- the device-side gate and HP completion words ---------------------- */

enum { GATE_DEVICE = 0, GATE_HOST = 1 };
/* MOSAIC_HP_COMPLETION: where the device reports HP progress (see the top). */
enum { HP_WRITES_OFF = 0, HP_WRITES_REQUEST = 1, HP_WRITES_GRAPH = 2, HP_WRITES_KERNEL = 3 };

typedef CUresult(CUDAAPI *wait32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
typedef CUresult(CUDAAPI *write32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
typedef CUresult(CUDAAPI *write64_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned);
typedef CUresult(CUDAAPI *hreg_fn)(void *, size_t, unsigned);
typedef CUresult(CUDAAPI *hdev_fn)(CUdeviceptr *, void *, unsigned);

/* The driver's own entry points for the gate, found once (by exact ABI
 * name, so that nothing of ours or of another interposer is in between). */
static struct {
    pthread_once_t once;
    int be_mode, hp_mode; /* MOSAIC_BE_GATE, MOSAIC_HP_COMPLETION */
    wait32_fn wait32[2];  /* [ptsz] */
    write32_fn write32[2];
    write64_fn write64[2];
    hreg_fn reg;
    hdev_fn devptr;
} gdrv = {.once = PTHREAD_ONCE_INIT};

/* The current connection's gate slots as mapped for the device. */
static struct {
    pthread_mutex_t lock;
    _Atomic uint64_t gen; /* the generation mapped; 0: none */
    _Atomic int refused;  /* 1: the driver cannot: hold on the host from now on */
    struct mosaic_sched_gate g;
    CUdeviceptr dev;
} gmap = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A stream's slot: its number of the next kernel. Slots are handed out by
 * stream handle and kept across connections; the numbers restart with a
 * connection, since a new segment's words start at 0. */
#define GATE_STREAMS MOSAIC__GATE_STREAMS
struct gstream {
    _Atomic uintptr_t key; /* the stream handle + 1; 0: free */
    pthread_mutex_t lock;  /* BE: one launch into the stream at a time */
    uint64_t gen;          /* BE: the connection next_seq counts for */
    uint32_t next_seq;
    _Atomic uint64_t hp_seq;
};
static struct gstream gstreams[GATE_STREAMS];

/* In a child: the parent's gate mapping and stream numbers are the
 * parent's (its locks may have been held by threads the child lacks). */
static void gate_after_fork(void)
{
    pthread_mutex_init(&gmap.lock, NULL);
    atomic_store(&gmap.gen, 0);
    for (int i = 0; i < GATE_STREAMS; i++) {
        pthread_mutex_init(&gstreams[i].lock, NULL);
        gstreams[i].gen = 0;
    }
}

/* BE: what the gate enqueued for this thread's launch in progress. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
    struct gstream *gs;
    CUstream s;
    int ptsz;
    uint32_t seq;
    CUdeviceptr done;
} pending;

static void *drv_sym(const struct mosaic__binding *b, const char *a, const char *fallback)
{
    void *p = b->libcuda ? mosaic__real_dlsym(b->libcuda, a) : NULL;

    return p ? p : (b->libcuda ? mosaic__real_dlsym(b->libcuda, fallback) : NULL);
}

static int env_choice(const char *name, const char *a, const char *bname, int dflt)
{
    const char *v = getenv(name);

    if (!v || !v[0])
        return dflt;
    if (!strcmp(v, a))
        return 0;
    if (!strcmp(v, bname))
        return 1;
    MOSAIC__LOG(MOSAIC__LOG_WARN, "%s=\"%s\" is not %s or %s: using %s", name, v, a, bname,
                dflt ? bname : a);
    return dflt;
}

static const struct mosaic__binding *gate_binding;

/*
 * request (the default): one completion write where the host cannot know
 * when the GPU finished: per explicit request end (API or NVTX) and per
 * graph launch inside an explicit request. A learned request needs none:
 * it ends when a synchronisation returned (a context's, or its last
 * launch's stream's; any other synchronisation ends it with a write
 * behind that launch). graph: a write after every graph launch, learned
 * requests too (request's behaviour until 2026-12-02, kept to measure
 * it); kernel: one after every HP launch as well (per-kernel completion,
 * one driver call per launch); off: the daemon has only the host's ends.
 * "device" is the name kernel had before request existed.
 */
static int hp_mode_from_env(void)
{
    const char *v = getenv("MOSAIC_HP_COMPLETION");

    if (!v || !v[0] || !strcmp(v, "request"))
        return HP_WRITES_REQUEST;
    if (!strcmp(v, "graph"))
        return HP_WRITES_GRAPH;
    if (!strcmp(v, "kernel") || !strcmp(v, "device"))
        return HP_WRITES_KERNEL;
    if (!strcmp(v, "off"))
        return HP_WRITES_OFF;
    MOSAIC__LOG(MOSAIC__LOG_WARN, "MOSAIC_HP_COMPLETION=\"%s\" is not request, graph, kernel or "
                "off: using request (a completion write per explicit request end, and per graph "
                "launch inside an explicit request)", v);
    return HP_WRITES_REQUEST;
}

static void gate_init(void)
{
    const struct mosaic__binding *b = gate_binding;

    for (int i = 0; i < GATE_STREAMS; i++)
        pthread_mutex_init(&gstreams[i].lock, NULL);
    gdrv.be_mode = env_choice("MOSAIC_BE_GATE", "device", "host", GATE_DEVICE);
    gdrv.hp_mode = hp_mode_from_env();
    gdrv.wait32[0] = (wait32_fn)drv_sym(b, "cuStreamWaitValue32_v2", "cuStreamWaitValue32");
    gdrv.wait32[1] = (wait32_fn)drv_sym(b, "cuStreamWaitValue32_v2_ptsz",
                                        "cuStreamWaitValue32_ptsz");
    gdrv.write32[0] = (write32_fn)drv_sym(b, "cuStreamWriteValue32_v2", "cuStreamWriteValue32");
    gdrv.write32[1] = (write32_fn)drv_sym(b, "cuStreamWriteValue32_v2_ptsz",
                                          "cuStreamWriteValue32_ptsz");
    gdrv.write64[0] = (write64_fn)drv_sym(b, "cuStreamWriteValue64_v2", "cuStreamWriteValue64");
    gdrv.write64[1] = (write64_fn)drv_sym(b, "cuStreamWriteValue64_v2_ptsz",
                                          "cuStreamWriteValue64_ptsz");
    gdrv.reg = (hreg_fn)drv_sym(b, "cuMemHostRegister_v2", "cuMemHostRegister");
    gdrv.devptr = (hdev_fn)drv_sym(b, "cuMemHostGetDevicePointer_v2",
                                   "cuMemHostGetDevicePointer");
}

static void gate_setup(const struct mosaic__binding *b)
{
    gate_binding = b;
    pthread_once(&gdrv.once, gate_init);
}

/* Once: the device gate cannot be used; every BE kernel is held on the host. */
static void gate_refuse(const char *why, int code)
{
    if (atomic_exchange(&gmap.refused, 1))
        return;
    MOSAIC__LOG(MOSAIC__LOG_WARN, "device-side BE gate not usable: %s (CUresult %d); BE "
                "kernels are held on the host instead (one stream synchronise and grant "
                "round trip each; counted as be_gate_fallbacks)", why, code);
}

/*
 * Maps the current connection's gate slots for the device, once per
 * connection. The device attribute says whether the device can reach
 * registered host memory at all; cuMemHostRegister of the memfd mapping
 * then pins the slots' pages. A mapping of an earlier connection is left
 * registered: its streams may still wait on it (the client keeps it
 * mapped, and releases its waits, docs/sched.md). Returns the generation
 * mapped, or 0 when the gate cannot be used now. With try_only, a thread
 * that finds another mapping gives up instead of waiting (the HP path).
 */
static uint64_t gate_map(const struct mosaic__binding *b, struct mosaic_sched_client *c,
                         int try_only)
{
    uint64_t gen = mosaic_sched_client_generation(c), have;
    struct mosaic_sched_gate g;
    CUdeviceptr dev = 0;
    CUresult r;

    have = atomic_load_explicit(&gmap.gen, memory_order_acquire);
    if (have == gen && gen)
        return gen;
    if (atomic_load(&gmap.refused) || !gen)
        return 0;
    if (try_only ? pthread_mutex_trylock(&gmap.lock) != 0 : pthread_mutex_lock(&gmap.lock) != 0)
        return 0;
    if (atomic_load(&gmap.gen) == gen) {
        pthread_mutex_unlock(&gmap.lock);
        return gen;
    }
    if (mosaic_sched_gate_get(c, &g) != 0 || g.generation != gen) {
        pthread_mutex_unlock(&gmap.lock);
        return 0;
    }
    if (!gdrv.reg || !gdrv.devptr || !gdrv.wait32[0] || !gdrv.write32[0] || !gdrv.write64[0]) {
        gate_refuse("the driver lacks cuMemHostRegister, cuMemHostGetDevicePointer or the "
                    "stream memory operations", 0);
        pthread_mutex_unlock(&gmap.lock);
        return 0;
    }
    if (b->drv.cuCtxGetDevice && b->drv.cuDeviceGetAttribute) {
        CUdevice d;
        int can = 1;
        CUresult cr = b->drv.cuCtxGetDevice(&d);
        /* No context on this thread (an HP request ended from a thread
         * that never launched): the registration would fail here and only
         * here, so this thread leaves the mapping to one that has one. */
        if (cr == CUDA_ERROR_INVALID_CONTEXT) {
            pthread_mutex_unlock(&gmap.lock);
            return 0;
        }
        if (cr == CUDA_SUCCESS &&
            b->drv.cuDeviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                                        d) == CUDA_SUCCESS &&
            !can) {
            gate_refuse("the device cannot use host pointers of registered memory "
                        "(CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM is 0)", 0);
            pthread_mutex_unlock(&gmap.lock);
            return 0;
        }
    }
    r = gdrv.reg(g.base, g.bytes, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
    if (r == CUDA_SUCCESS)
        r = gdrv.devptr(&dev, g.base, 0);
    if (r != CUDA_SUCCESS) {
        gate_refuse("cuMemHostRegister or cuMemHostGetDevicePointer of the shared segment "
                    "failed", (int)r);
        pthread_mutex_unlock(&gmap.lock);
        return 0;
    }
    gmap.g = g;
    gmap.dev = dev;
    atomic_store_explicit(&gmap.gen, gen, memory_order_release);
    pthread_mutex_unlock(&gmap.lock);
    MOSAIC__LOG(MOSAIC__LOG_INFO, "arbiter gate: %u stream slots mapped for the device "
                "(connection %llu)", g.slots, (unsigned long long)gen);
    return gen;
}

/* The slot of stream s, claimed on first sight; NULL when all are taken.
 * Lock-free: the HP path must not wait. */
static struct gstream *gate_stream(CUstream s)
{
    uintptr_t key = (uintptr_t)s + 1;

    for (int i = 0; i < GATE_STREAMS; i++) {
        uintptr_t k = atomic_load_explicit(&gstreams[i].key, memory_order_acquire);
        if (k == key)
            return &gstreams[i];
        if (k == 0) {
            uintptr_t zero = 0;
            if (atomic_compare_exchange_strong(&gstreams[i].key, &zero, key))
                return &gstreams[i];
            if (zero == key)
                return &gstreams[i];
        }
    }
    return NULL;
}

/* Streams whose handle does not name one stream: the per-thread default
 * stream is a different stream on every thread. */
static int per_thread_stream(CUstream s, int ptsz)
{
    return s == CU_STREAM_PER_THREAD || (ptsz && (s == NULL || s == CU_STREAM_LEGACY));
}

static CUdeviceptr slot_word(const struct gstream *gs, unsigned off)
{
    return gmap.dev + (CUdeviceptr)((unsigned)(gs - gstreams) * gmap.g.stride + off);
}

/*
 * BE: the id a graph launch asks admission with, on the connection of
 * generation gen: the graph's own id, defined to the daemon on that
 * connection first (graph.c, sched/proto.h), or 0, an unknown kernel, when
 * the graph's kernels are not all known or more than a definition carries,
 * or the definition could not be posted (a full ring: tried again at the
 * next launch). Two threads may both define it; the daemon takes the
 * second as the same graph again.
 */
static uint64_t be_graph_id(struct mosaic_sched_client *c, CUgraphExec exec, uint64_t gen)
{
    _Atomic uint64_t *defined;
    uint64_t unit = 0;
    size_t n = 0;
    const uint64_t *ids = mosaic__graph_be_unit(exec, &n, &unit, &defined);

    if (!ids || !gen)
        return 0;
    if (atomic_load_explicit(defined, memory_order_acquire) == gen)
        return unit;
    if (mosaic_sched_be_graph_define(c, gen, unit, ids, (unsigned)n) != 0)
        return 0;
    atomic_store_explicit(defined, gen, memory_order_release);
    return unit;
}

/*
 * BE, device mode: asks for kernel n of stream s and enqueues the wait for
 * its grant (a graph launch, exec, asks once for the whole graph). Returns 1 when gated (the launch follows, then
 * mosaic__sched_be_launched enqueues the done write and lets the stream's
 * lock go), 0 when this kernel must be held on the host.
 */
static int be_gate_device(const struct mosaic__binding *b, struct mosaic_sched_client *c,
                          CUstream s, int ptsz, uint64_t id, CUgraphExec exec)
{
    struct gstream *gs;
    uint64_t gen;
    uint32_t seq;
    CUresult r;

    if (s == CU_STREAM_LEGACY && !ptsz)
        s = NULL; /* the same stream as NULL: one slot */
    if (per_thread_stream(s, ptsz) || !(gen = gate_map(b, c, 0)) || !(gs = gate_stream(s)))
        return 0;
    if (exec)
        id = be_graph_id(c, exec, gen);
    pthread_mutex_lock(&gs->lock);
    if (gs->gen != gen) {
        gs->gen = gen;
        gs->next_seq = 1;
    }
    seq = gs->next_seq;
    if (mosaic_sched_be_want_gated(c, gen, (unsigned)(gs - gstreams), seq, id, 0) != 0) {
        pthread_mutex_unlock(&gs->lock);
        return 0;
    }
    r = gdrv.wait32[ptsz] ? gdrv.wait32[ptsz](s, slot_word(gs, gmap.g.grant_off), seq,
                                              CU_STREAM_WAIT_VALUE_GEQ)
                          : CUDA_ERROR_NOT_SUPPORTED;
    gs->next_seq = seq + 1; /* wraps: the daemon and the driver compare cyclically */
    if (r != CUDA_SUCCESS) {
        /* The daemon was asked: say this kernel is done, from the host, so
         * that the stream's later kernels are not kept behind it. */
        atomic_store((_Atomic uint32_t *)((char *)gmap.g.base +
                                          (size_t)(gs - gstreams) * gmap.g.stride +
                                          gmap.g.done_off),
                     seq);
        pthread_mutex_unlock(&gs->lock);
        gate_refuse("cuStreamWaitValue32 failed", (int)r);
        return 0;
    }
    pending.gs = gs;
    pending.s = s;
    pending.ptsz = ptsz;
    pending.seq = seq;
    pending.done = slot_word(gs, gmap.g.done_off);
    return 1;
}

void mosaic__sched_be_launched(const struct mosaic__binding *b, int hook)
{
    struct gstream *gs = pending.gs;
    CUresult r;

    (void)b;
    (void)hook;
    if (!gs)
        return;
    pending.gs = NULL;
    /* Also after a failed launch: the number must be done for the next. */
    r = gdrv.write32[pending.ptsz] ? gdrv.write32[pending.ptsz](pending.s, pending.done,
                                                                pending.seq, 0)
                                   : CUDA_ERROR_NOT_SUPPORTED;
    if (r != CUDA_SUCCESS) {
        atomic_store((_Atomic uint32_t *)((char *)gmap.g.base +
                                          (size_t)(gs - gstreams) * gmap.g.stride +
                                          gmap.g.done_off),
                     pending.seq);
        gate_refuse("cuStreamWriteValue32 failed", (int)r);
    }
    pthread_mutex_unlock(&gs->lock);
}

/* ---- lazy module loading before the gate ------------------------------- */

/*
 * With lazy module loading (CUDA_MODULE_LOADING=LAZY, the default since
 * CUDA 12.2) a library's kernel (a CUkernel, what the CUDA runtime
 * launches) is loaded into the context at its first launch, and that load
 * waits for the work the context has queued on every stream. Behind the
 * gate's own unreleased wait a first launch then does not return until the
 * daemon's grant: the BE thread stalls in the shim (H200, driver
 * 580.159.04: 200 ms for a grant written 200 ms later, where a loaded
 * kernel's launch took 0.02 ms; docs/results/2026-12-02-gpu/). So the gate
 * loads each kernel before it enqueues the first wait for it:
 * cuKernelGetFunction loads a CUkernel into the current context (it is the
 * call that waited there), and cuFuncIsLoaded/cuFuncLoad (driver 12.4+;
 * without them nothing more is done) load a CUfunction that is not loaded
 * yet (a module's functions were loaded when cuModuleGetFunction returned
 * them, on that driver). What this cannot avoid: while other gated kernels
 * of this process still wait for their grants, the load waits for them too
 * (measured there also when they wait on another stream). Such a load is
 * logged; CUDA_MODULE_LOADING=EAGER avoids it, at the cost of loading
 * every kernel at start.
 *
 * Once per kernel: the kernel record keeps that it was done, and a
 * per-thread table of the handles seen keeps the launch path's check to
 * one load and compare.
 */
#define LOAD_SEEN 64
static __thread __attribute__((tls_model("initial-exec"))) const void *load_seen[LOAD_SEEN];

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) void gate_load_miss(const struct mosaic__binding *b,
                                                     const void **seen, const void *fn)
{
    struct mosaic__kernel *k = mosaic__kernel_get(fn, -1);
    const struct mosaic__drv *d = &b->drv;
    CUfunctionLoadingState st = CU_FUNCTION_LOADING_STATE_LOADED;
    CUfunction f = (CUfunction)(uintptr_t)fn;
    int own = k->handle == fn; /* not the placeholder of an unknown handle */
    int loads = 0;
    uint64_t t0, ns;

    *seen = fn;
    if (own && atomic_load_explicit(&k->gate_loaded, memory_order_acquire))
        return;
    t0 = mono_ns();
    if (k->kind == MOSAIC__KIND_KERNEL) {
        f = NULL;
        if (d->cuKernelGetFunction &&
            d->cuKernelGetFunction(&f, (CUkernel)(uintptr_t)fn) == CUDA_SUCCESS)
            loads = 1;
    }
    if (f && d->cuFuncIsLoaded && d->cuFuncLoad && d->cuFuncIsLoaded(&st, f) == CUDA_SUCCESS &&
        st == CU_FUNCTION_LOADING_STATE_UNLOADED && d->cuFuncLoad(f) == CUDA_SUCCESS)
        loads = 1;
    ns = mono_ns() - t0;
    if (loads)
        MOSAIC__INC(be_gate_loads);
    /* Tried once, whatever the outcome: a failure here (no context on this
     * thread) leaves the launch as it was without the gate's load. */
    if (own)
        atomic_store_explicit(&k->gate_loaded, 1, memory_order_release);
    if (ns > 1000000)
        MOSAIC__LOG(MOSAIC__LOG_INFO, "loading kernel %s before its first gated launch took "
                    "%.1f ms: the driver waited for queued work (gated kernels of this process "
                    "waiting for their grants); CUDA_MODULE_LOADING=EAGER loads every kernel "
                    "at start instead", k->name, (double)ns / 1e6);
}

/* BE, device mode: kernel fn is loaded before the gate's wait is enqueued
 * in front of its launch (above); with an SM partition also its function
 * in the partition's green context, which is made (and loaded) there. */
static inline void gate_load(const struct mosaic__binding *b, const void *fn)
{
    const void **seen = &load_seen[((uintptr_t)fn >> 4) % LOAD_SEEN];

    if (MOSAIC__UNLIKELY(*seen != fn))
        gate_load_miss(b, seen, fn);
    if (mosaic__green_wanted())
        mosaic__green_prepare(fn);
}

/* HP: what the connection path decided for the launch path. */
static _Atomic uint64_t hp_epoch;   /* the client's epoch followed; 0: none yet */
/* A completion write after a graph launch: 0 none, HP_GRAPH_EXPLICIT
 * inside explicit requests only (request), HP_GRAPH_ALL after every one. */
enum { HP_GRAPH_EXPLICIT = 1, HP_GRAPH_ALL = 2 };
static _Atomic int hp_graph_writes;
static _Atomic int hp_kernel_writes; /* and after each kernel launch */

/* The learned request this thread's synchronisation ended as it began
 * (mosaic__sched_syncing), whose host end its return posts; id 0: none. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
    uint64_t gen;
    uint32_t id;
} hp_sync;

/* The learned request's first stream, and whether any of its launches
 * went to another (then no one write covers it). */
static _Atomic uintptr_t learned_stream;
static _Atomic int learned_mixed;

/* In a child: its connections start from generation 1 again. */
static void hp_after_fork(void)
{
    atomic_store(&learned_mixed, 0);
    hp_sync.id = 0; /* the forking thread's: this process's only one */
    atomic_store(&hp_epoch, 0);
    atomic_store(&hp_graph_writes, 0);
    atomic_store(&hp_kernel_writes, 0);
}

/* HP: this thread's last launch, for the write at a request's end. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
    CUstream s;
    int hook1;   /* its hook + 1; 0: none yet */
    int covered; /* a completion write follows it already (a graph's, or kernel mode's) */
} hp_last;

/*
 * Enqueues the device's completion write behind everything enqueued so far
 * on stream s (the hook's, for its _ptsz flavour) and returns the slot and
 * number written, or NULL when there is none to use: no mapping of this
 * connection (tried without waiting), the per-thread default stream, or
 * all slots taken, or the driver refused. Never waits.
 */
static struct gstream *hp_write(struct mosaic_sched_client *c, int hook, CUstream s,
                                uint64_t *gen, uint64_t *seq)
{
    int ptsz = strstr(mosaic__hook_names[hook], "_ptsz") != NULL;
    struct gstream *gs;

    if (s == CU_STREAM_LEGACY && !ptsz)
        s = NULL; /* the same stream as NULL: one slot */
    if (!gate_binding || per_thread_stream(s, ptsz) || !(*gen = gate_map(gate_binding, c, 1)) ||
        !(gs = gate_stream(s)) || !gdrv.write64[ptsz])
        return NULL;
    *seq = atomic_fetch_add_explicit(&gs->hp_seq, 1, memory_order_relaxed) + 1;
    if (gdrv.write64[ptsz](s, slot_word(gs, gmap.g.hp_done_off), *seq, 0) != CUDA_SUCCESS)
        return NULL;
    MOSAIC__INC(hp_completion_writes);
    return gs;
}

/*
 * HP: a launch of n kernels (one, or a graph's) into stream s, followed by
 * the device's completion write, each posted with that write's number:
 * the daemon reads the slot's word reaching it as their completion.
 * Returns 1 when posted here, 0 when the caller posts them plainly.
 */
static int hp_complete_device(struct mosaic_sched_client *c, int hook, CUstream s,
                              const uint64_t *ids, size_t n)
{
    struct gstream *gs;
    uint64_t gen, seq;

    if (!(gs = hp_write(c, hook, s, &gen, &seq)))
        return 0;
    for (size_t i = 0; i < n; i++)
        mosaic_sched_hp_launch_gated(c, gen, (unsigned)(gs - gstreams), (uint32_t)seq, ids[i]);
    hp_last.covered = 1;
    return 1;
}

/*
 * HP, once per connection, on the first launching thread that sees it
 * (it has the driver's context current, which the mapping needs): the
 * daemon's partition and which writes the launch path makes. With a write
 * after every launch (kernel) the gate is mapped here; a thread that finds
 * another one mapping leaves the generation unfollowed, so a later launch
 * tries again. With writes per request end and graph (request) it is
 * mapped at the first write instead (an explicit end's, a graph's, or a
 * learned request's synchronisation), so that the registration is paid
 * after a request's work is enqueued, not between two launches of it (the
 * first request after a daemon's restart would be late).
 */
static void hp_follow(const struct mosaic__binding *b, struct mosaic_sched_client *c)
{
    /* The epoch first: a change while this runs moves it past the one
     * stored at the end, and the next launch follows again. */
    uint64_t epoch = mosaic_sched_client_epoch(c);
    uint64_t gen = mosaic_sched_client_generation(c);
    int mapped = 0;

    partition_follow(c);
    if (b)
        gate_setup(b);
    if (b && gdrv.hp_mode == HP_WRITES_KERNEL) {
        mapped = gate_map(b, c, 1) == gen;
        if (!mapped && !atomic_load(&gmap.refused) && mosaic_sched_client_generation(c) == gen &&
            mosaic_sched_client_state(c) == MOSAIC_SCHED_CONNECTED)
            return;
    }
    atomic_store(&hp_graph_writes, !b || gdrv.hp_mode == HP_WRITES_OFF ? 0
                                   : gdrv.hp_mode == HP_WRITES_REQUEST ? HP_GRAPH_EXPLICIT
                                                                       : HP_GRAPH_ALL);
    atomic_store(&hp_kernel_writes, mapped);
    atomic_store(&hp_epoch, epoch);
}

/* HP, the launch path's one check of the connection and its partition:
 * the client's epoch (moved by a new connection and by a partition
 * change) against the one followed, two loads. */
static inline void hp_check_connection(const struct mosaic__binding *b,
                                       struct mosaic_sched_client *c)
{
    if (MOSAIC__UNLIKELY(mosaic_sched_client_epoch(c) !=
                         atomic_load_explicit(&hp_epoch, memory_order_relaxed)))
        hp_follow(b, c);
}

/*
 * HP, request mode: a request's end with the device's completion write
 * behind this thread's last launch, so that the daemon ends the request
 * when the GPU finished it even if the host said so earlier. Returns 1
 * when posted here (the caller posts a plain end otherwise).
 */
static int hp_end_device(struct mosaic_sched_client *c, uint32_t id)
{
    struct gstream *gs;
    uint64_t gen, seq;

    /* Nothing after the last launch's own write: the daemon has the
     * device's end from it, and a second write enqueued now could only
     * report the host's moment. */
    if (!hp_last.hook1 || hp_last.covered ||
        !atomic_load_explicit(&hp_graph_writes, memory_order_relaxed) ||
        (gdrv.hp_mode != HP_WRITES_REQUEST && gdrv.hp_mode != HP_WRITES_GRAPH) ||
        !(gs = hp_write(c, hp_last.hook1 - 1, hp_last.s, &gen, &seq)))
        return 0;
    mosaic_sched_hp_request_end_gated(c, gen, (unsigned)(gs - gstreams), (uint32_t)seq, id, 0);
    return 1;
}

static int hp_request_end(struct mosaic_sched_client *c, uint32_t id)
{
    if (hp_end_device(c, id))
        return 0;
    return mosaic_sched_hp_request_end(c, id, 0);
}

/* ---- HP ---------------------------------------------------------------- */

static uint32_t new_request_id(void)
{
    uint32_t id;

    do
        id = atomic_fetch_add_explicit(&req_next, 1, memory_order_relaxed) + 1;
    while (id == 0);
    return id;
}

/* Whether learned request id's begin was posted (and so its end should
 * be); forgets it either way. */
static int learned_posted(uint32_t id)
{
    uint32_t u = id;

    return !atomic_compare_exchange_strong(&learned_unposted, &u, 0);
}

/* A launch with no request open begins a learned one, until the program
 * marks its requests itself. */
static inline void learned_begin(struct mosaic_sched_client *c, CUstream s)
{
    uint32_t none = 0, id;

    if (atomic_load_explicit(&req_explicit, memory_order_relaxed))
        return;
    if (atomic_load_explicit(&learned_id, memory_order_relaxed)) {
        if ((uintptr_t)s != atomic_load_explicit(&learned_stream, memory_order_relaxed))
            atomic_store_explicit(&learned_mixed, 1, memory_order_relaxed);
        return;
    }
    id = new_request_id();
    if (!atomic_compare_exchange_strong(&learned_id, &none, id)) {
        learned_begin(c, s); /* another thread's launch began it */
        return;
    }
    atomic_store_explicit(&learned_stream, (uintptr_t)s, memory_order_relaxed);
    if (mosaic_sched_hp_request_begin(c, id, 0) != 0)
        atomic_store(&learned_unposted, id);
    /* The first explicit signal may have come between the check and the
     * begin: then this request ends here rather than stay open. */
    if (atomic_load(&req_explicit) && atomic_compare_exchange_strong(&learned_id, &id, 0) &&
        learned_posted(id))
        mosaic_sched_hp_request_end(c, id, 0);
}

/* The first explicit signal (API or NVTX): learning stops for the rest of
 * the process, and a learned request open at this moment ends now. */
static void go_explicit(struct mosaic_sched_client *c)
{
    uint32_t l;

    if (atomic_load_explicit(&req_explicit, memory_order_relaxed))
        return;
    atomic_store(&req_explicit, 1);
    l = atomic_exchange(&learned_id, 0);
    if (l && learned_posted(l))
        mosaic_sched_hp_request_end(c, l, 0);
}

void mosaic__sched_hp_launched(const struct mosaic__binding *b, int hook, CUstream s,
                               const void *fn, const unsigned *grid, const unsigned *block,
                               unsigned dyn_smem)
{
    struct mosaic_sched_client *c = get_client(MOSAIC__ROLE_HP);
    uint64_t id;

    if (!c)
        return;
    hp_check_connection(b, c);
    learned_begin(c, s);
    id = kernel_id(fn, grid, block, dyn_smem);
    hp_last.s = s;
    hp_last.hook1 = hook + 1;
    hp_last.covered = 0;
    if (MOSAIC__UNLIKELY(atomic_load_explicit(&hp_kernel_writes, memory_order_relaxed)) &&
        hp_complete_device(c, hook, s, &id, 1))
        return;
    mosaic_sched_hp_launch(c, id);
}

void mosaic__sched_hp_graph_launched(const struct mosaic__binding *b, int hook, CUstream s,
                                     CUgraphExec exec)
{
    static const uint64_t unknown = 0;
    struct mosaic_sched_client *c = get_client(MOSAIC__ROLE_HP);
    const uint64_t *ids;
    size_t n = 0;
    int gw;

    if (!c)
        return;
    hp_check_connection(b, c);
    learned_begin(c, s);
    hp_last.s = s;
    hp_last.hook1 = hook + 1;
    hp_last.covered = 0;
    /* The graph's kernels in node order, so that eq. 5 sees inside it; a
     * graph whose kernels are not all known (a conditional node) is posted
     * as kernel 0, unknown: the policies then hold BE beside its requests
     * rather than guess. The device's completion write follows the whole
     * graph, so all of them are posted with its number. */
    ids = mosaic__graph_hp_ids(exec, &n);
    if (!ids || n == 0) {
        ids = &unknown;
        n = 1;
    }
    /* The write only where the host's end may come after the GPU's: in
     * an explicit request (a learned one ends at a synchronisation), or
     * after every graph (MOSAIC_HP_COMPLETION=graph). */
    gw = atomic_load_explicit(&hp_graph_writes, memory_order_relaxed);
    if ((gw == HP_GRAPH_ALL ||
         (gw == HP_GRAPH_EXPLICIT && atomic_load_explicit(&req_explicit, memory_order_relaxed))) &&
        hp_complete_device(c, hook, s, ids, n))
        return;
    for (size_t i = 0; i < n; i++)
        mosaic_sched_hp_launch(c, ids[i]);
}

static void be_release(CUstream s, int all);

/*
 * HP, request mode, as a synchronisation begins: a learned request all of
 * whose launches went to this thread's last stream ends here, with the
 * device's completion write behind its last launch, and again at the
 * return (mosaic__sched_synced); the daemon ends it at the earlier of the
 * write landing as it saw it (polled every millisecond) and the return.
 * One driver call and one more ring entry, no wait. Otherwise (another
 * stream, no write possible) it ends at the return alone, as before.
 */
void mosaic__sched_syncing(CUstream s, int ctx)
{
    struct mosaic_sched_client *c;
    struct gstream *gs;
    uint64_t gen, seq;
    uint32_t l;

    (void)s;
    (void)ctx;
    if (hp_sync.id) { /* the last synchronisation failed: its return never came */
        if ((c = get_client(MOSAIC__ROLE_HP)))
            mosaic_sched_hp_request_end_host(c, hp_sync.gen, hp_sync.id, 0);
        hp_sync.id = 0;
    }
    if (mosaic__cfg.role != MOSAIC__ROLE_HP ||
        atomic_load_explicit(&req_explicit, memory_order_relaxed) ||
        !(l = atomic_load_explicit(&learned_id, memory_order_relaxed)) || !hp_last.hook1 ||
        hp_last.covered || atomic_load_explicit(&learned_mixed, memory_order_relaxed) ||
        (gdrv.hp_mode != HP_WRITES_REQUEST && gdrv.hp_mode != HP_WRITES_GRAPH) ||
        !atomic_load_explicit(&hp_graph_writes, memory_order_relaxed) ||
        !(c = get_client(MOSAIC__ROLE_HP)) ||
        !(gs = hp_write(c, hp_last.hook1 - 1, hp_last.s, &gen, &seq)))
        return;
    hp_last.covered = 1;
    /* Another thread may have ended it meanwhile: the write is then only
     * an early completion of launches already ended. */
    if (!atomic_compare_exchange_strong(&learned_id, &l, 0))
        return;
    int mixed = atomic_exchange_explicit(&learned_mixed, 0, memory_order_relaxed);
    if (!learned_posted(l))
        return;
    if (mixed) {
        mosaic_sched_hp_request_end_gated(c, gen, (unsigned)(gs - gstreams), (uint32_t)seq, l, 0);
    } else if (mosaic_sched_hp_request_end_covered(c, gen, (unsigned)(gs - gstreams),
                                                   (uint32_t)seq, l, 0) == 0) {
        hp_sync.gen = gen;
        hp_sync.id = l;
    } else {
        mosaic_sched_hp_request_end(c, l, 0);
    }
}

void mosaic__sched_synced(CUstream s, int ctx)
{
    struct mosaic_sched_client *c;
    uint32_t l;

    if (mosaic__cfg.role == MOSAIC__ROLE_BE) {
        if (get_client(MOSAIC__ROLE_BE))
            be_release(s, ctx == 1);
        return;
    }
    c = get_client(MOSAIC__ROLE_HP);
    if (!c)
        return;
    if (hp_sync.id) {
        mosaic_sched_hp_request_end_host(c, hp_sync.gen, hp_sync.id, 0);
        hp_sync.id = 0;
    }
    if (atomic_load_explicit(&req_explicit, memory_order_relaxed))
        return;
    l = atomic_exchange_explicit(&learned_id, 0, memory_order_relaxed);
    if (!l)
        return;
    atomic_store_explicit(&learned_mixed, 0, memory_order_relaxed);
    if (!learned_posted(l))
        return;
    /* The context's synchronisation, or that of the stream this thread
     * last launched into: the GPU finished, and the host's time is the
     * end. Another stream's or an event's may return before this
     * thread's last launch ran: the end then goes behind it (request
     * mode's write, if that launch has none yet). */
    if (ctx == 1 || (ctx == 0 && hp_last.hook1 && s == hp_last.s))
        mosaic_sched_hp_request_end(c, l, 0);
    else
        hp_request_end(c, l);
}

void mosaic__sched_client_counts(uint64_t *doorbells, uint64_t *dropped,
                                 uint64_t *connections)
{
    /* The client exists once the first driver call opened it (or never). */
    struct mosaic_sched_client *c =
        atomic_load_explicit(&linked, memory_order_acquire) ? client : NULL;

    *doorbells = c ? mosaic_sched_client_doorbells(c) : 0;
    *dropped = c ? mosaic_sched_client_dropped(c) : 0;
    *connections = c ? mosaic_sched_client_generation(c) : 0;
}

uint32_t mosaic__sched_hp_request_open(void)
{
    struct mosaic_sched_client *c = get_client(MOSAIC__ROLE_HP);
    uint32_t id;

    if (!c)
        return 0;
    go_explicit(c);
    id = new_request_id();
    mosaic_sched_hp_request_begin(c, id, 0);
    return id;
}

int mosaic__sched_hp_request_close(uint32_t id)
{
    struct mosaic_sched_client *c = get_client(MOSAIC__ROLE_HP);

    if (!c || !id)
        return 0;
    return hp_request_end(c, id);
}

/* The exported request API: a program (or the Python package `mosaic`)
 * marks its requests itself; from the first call on, the learned requests
 * are off. One API request is open at a time: a begin while one is open
 * ends that one first. Returns 0 (also when this process is no HP client)
 * or a MOSAIC_E* code. */
MOSAIC__EXPORT int mosaic_request_begin(void);
MOSAIC__EXPORT int mosaic_request_end(void);

int mosaic_request_begin(void)
{
    struct mosaic_sched_client *c = get_client(MOSAIC__ROLE_HP);
    uint32_t id, old;

    if (!c)
        return 0;
    go_explicit(c);
    id = new_request_id();
    old = atomic_exchange(&api_id, id);
    if (old)
        hp_request_end(c, old);
    return mosaic_sched_hp_request_begin(c, id, 0);
}

int mosaic_request_end(void)
{
    struct mosaic_sched_client *c = get_client(MOSAIC__ROLE_HP);
    uint32_t id;

    if (!c)
        return 0;
    go_explicit(c);
    id = atomic_exchange(&api_id, 0);
    if (!id)
        return MOSAIC_EINVAL; /* no request open */
    return hp_request_end(c, id);
}

/* ---- BE ---------------------------------------------------------------- */

typedef CUresult(CUDAAPI *sync_fn)(CUstream);

/* Reports granted kernels done: those on stream s, or all of them. The
 * caller knows they finished (a synchronisation returned). */
static void be_release_locked(CUstream s, int all)
{
    int kept = 0;

    for (int i = 0; i < be_nout; i++) {
        if (all || be_out[i].s == s)
            mosaic_sched_be_done(client, be_out[i].id);
        else
            be_out[kept++] = be_out[i];
    }
    be_nout = kept;
}

static void be_release(CUstream s, int all)
{
    pthread_mutex_lock(&be_lock);
    be_release_locked(s, all);
    pthread_mutex_unlock(&be_lock);
}

void mosaic__sched_be_gate(const struct mosaic__binding *b, int hook, const void *fn,
                           CUgraphExec exec, CUstream s, const unsigned *grid,
                           const unsigned *block, unsigned dyn_smem)
{
    struct mosaic_sched_client *c = get_client(MOSAIC__ROLE_BE);
    uint64_t id;
    int outcome, rc, ptsz;

    if (!c || !b)
        return; /* every launch of an HP or observe-only process comes here */
    ptsz = strstr(mosaic__hook_names[hook], "_ptsz") != NULL;
    /* A launch into a capturing stream is recorded, not run: nothing to
     * admit until the graph is launched. */
    if (atomic_load_explicit(&mosaic__active_captures, memory_order_relaxed) > 0 &&
        mosaic__stream_capturing(b, hook, s))
        return;
    /* A graph launch asks for the graph as one unit (be_graph_id, once
     * the connection is known); until then, and for a graph that cannot be
     * one, id 0: an unknown kernel, admitted only while no HP request is
     * in flight. */
    id = fn ? kernel_id(fn, grid, block, dyn_smem) : 0;
    gate_setup(b);
    if (gdrv.be_mode == GATE_DEVICE) {
        /* The client connects in the background from the first launch on:
         * a BE kernel may wait, so give the first connection a moment
         * rather than hold this kernel on the host for want of a segment. */
        static _Atomic int first_waited;
        if (!atomic_exchange(&first_waited, 1))
            for (int i = 0; i < 500 && !mosaic_sched_client_generation(c); i++)
                usleep(1000);
        if (fn)
            gate_load(b, fn);
        if (be_gate_device(b, c, s, ptsz, id, exec)) {
            MOSAIC__INC(be_gated_device);
            partition_follow(c);
            return;
        }
        MOSAIC__INC(be_gate_fallbacks);
    }
    MOSAIC__INC(be_held_host);
    pthread_mutex_lock(&be_lock);
    /* Wait for what was granted before, so that this kernel starts on the
     * GPU when it is granted (see the top of the file). */
    for (int i = 0; i < be_nout; i++) {
        sync_fn sync = (sync_fn)b->real[be_out[i].ptsz ? MOSAIC__HOOK_cuStreamSynchronize_ptsz
                                                       : MOSAIC__HOOK_cuStreamSynchronize];
        if (sync)
            sync(be_out[i].s);
    }
    be_release_locked(NULL, 1);
    if (exec)
        id = be_graph_id(c, exec, mosaic_sched_client_generation(c));
    do {
        rc = mosaic_sched_be_admit(c, id, 0, &outcome);
    } while (rc == MOSAIC_ETIMEDOUT); /* be-on-timeout hold: ask again */
    if (rc == 0 && outcome == MOSAIC_SCHED_GRANTED && be_nout < BE_OUT)
        be_out[be_nout++] = (typeof(be_out[0])){.id = id, .s = s, .ptsz = ptsz};
    pthread_mutex_unlock(&be_lock);
    /* After the admission, which waited for the connection: this launch
     * already goes to the partition the daemon gave. */
    partition_follow(c);
}
