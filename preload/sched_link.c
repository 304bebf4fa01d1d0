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
 * cuCtxSynchronize or cuEventSynchronize to return ends it. The first
 * explicit signal (API or NVTX) ends learning for good (docs/sched.md,
 * "HP requests: where they come from"). All of it is ring writes: no system
 * call, no wait; with no daemon the client returns MOSAIC_EDISCONNECTED at
 * once and the program runs uncontrolled.
 *
 * BE: each kernel and graph launch is held in the launch hook until
 * granted. A host-side hold alone does not tell the arbiter when the kernel
 * starts on the GPU (a deep stream could start it much later), so before
 * asking, the gate waits for this process's previously granted kernels to
 * finish (a stream synchronise of their streams) and then reports them
 * done: a granted kernel starts at once, and the daemon knows what runs.
 * Why not the device-side gate (cuStreamWaitValue32 on a grant word of the
 * shared segment) here: docs/sched.md, "Where a BE kernel waits".
 *
 * Tested with the fake driver's simulated GPU (tests/fakecuda); on a real
 * driver this relies only on documented entry points (580.159.04, CUDA 13.0
 * headers).
 */
#define _GNU_SOURCE 1
#include <stdlib.h>
#include <string.h>

#include "mosaic/sched.h"
#include "sched_link.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct mosaic_sched_client *client;

/* HP requests. Ids are 32-bit and never 0, so that an NVTX range's tag
 * (core/nvtx_inject.h) can carry one; only the open ones must differ. */
static _Atomic uint32_t req_next;
static _Atomic int req_explicit;    /* the program marks requests (API or NVTX) */
static _Atomic uint32_t learned_id; /* the learned request open, 0: none */
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

static void child_after_fork(void)
{
    /* The child must not post into the parent's rings; it connects as a
     * client of its own, with no request open and nothing granted. */
    pthread_mutex_init(&be_lock, NULL);
    be_nout = 0;
    atomic_store(&learned_id, 0);
    atomic_store(&api_id, 0);
    if (client)
        mosaic_sched_client_atfork_child(client);
}

static void link_init(void)
{
    struct mosaic_sched_client_opts o = {0};
    const char *sock = getenv("MOSAIC_SCHED_SOCKET");
    int rc;

    o.socket_path = sock && sock[0] ? sock : NULL;
    o.role = mosaic__cfg.role == MOSAIC__ROLE_HP ? MOSAIC_SCHED_ROLE_HP : MOSAIC_SCHED_ROLE_BE;
    o.async_connect = 1;
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

static inline struct mosaic_sched_client *get_client(int role)
{
    if (mosaic__cfg.role != role || !mosaic__observing())
        return NULL;
    pthread_once(&once, link_init);
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
static __thread struct id_slot id_cache[ID_CACHE];

uint64_t mosaic__sched_key_id(const char *name, const unsigned *g, const unsigned *bl,
                              unsigned smem)
{
    char key[1200];
    int n;

    /* The same form as mosaic_kernel_key (include/mosaic/profile.h), so
     * the daemon's profile store finds the kernel by it. */
    n = snprintf(key, sizeof(key), "%s|grid=%u,%u,%u|block=%u,%u,%u|dsmem=%u", name, g[0],
                 g[1], g[2], bl[0], bl[1], bl[2], smem);
    if (n < 0 || (size_t)n >= sizeof(key))
        return 0; /* a name this long is treated as an unknown kernel */
    return mosaic_sched_kernel_id(key);
}

static uint64_t kernel_id(const void *fn, const unsigned *g, const unsigned *bl, unsigned smem)
{
    uintptr_t h = ((uintptr_t)fn >> 4) ^ g[0] * 31u ^ g[1] * 131u ^ bl[0] * 7u ^ smem;
    struct id_slot *e = &id_cache[h % ID_CACHE];
    uint64_t id;

    if (e->fn == fn && e->id && !memcmp(e->grid, g, sizeof(e->grid)) &&
        !memcmp(e->block, bl, sizeof(e->block)) && e->smem == smem)
        return e->id;
    id = mosaic__sched_key_id(mosaic__kernel_get(fn, -1)->name, g, bl, smem);
    if (id)
        *e = (struct id_slot){.fn = fn, .grid = {g[0], g[1], g[2]},
                              .block = {bl[0], bl[1], bl[2]}, .smem = smem, .id = id};
    return id;
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

/* A launch with no request open begins a learned one, until the program
 * marks its requests itself. */
static inline void learned_begin(struct mosaic_sched_client *c)
{
    uint32_t none = 0, id;

    if (atomic_load_explicit(&req_explicit, memory_order_relaxed) ||
        atomic_load_explicit(&learned_id, memory_order_relaxed))
        return;
    id = new_request_id();
    if (!atomic_compare_exchange_strong(&learned_id, &none, id))
        return; /* another thread's launch began it */
    mosaic_sched_hp_request_begin(c, id, 0);
    /* The first explicit signal may have come between the check and the
     * begin: then this request ends here rather than stay open. */
    if (atomic_load(&req_explicit) && atomic_compare_exchange_strong(&learned_id, &id, 0))
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
    if (l)
        mosaic_sched_hp_request_end(c, l, 0);
}

void mosaic__sched_hp_launched(const void *fn, const unsigned *grid, const unsigned *block,
                               unsigned dyn_smem)
{
    struct mosaic_sched_client *c = get_client(MOSAIC__ROLE_HP);

    if (!c)
        return;
    learned_begin(c);
    mosaic_sched_hp_launch(c, kernel_id(fn, grid, block, dyn_smem));
}

void mosaic__sched_hp_graph_launched(CUgraphExec exec)
{
    struct mosaic_sched_client *c = get_client(MOSAIC__ROLE_HP);
    const uint64_t *ids;
    size_t n = 0;

    if (!c)
        return;
    learned_begin(c);
    /* The graph's kernels in node order, so that eq. 5 sees inside it; a
     * graph whose kernels are not all known (a conditional node) is posted
     * as kernel 0, unknown: the policies then hold BE beside its requests
     * rather than guess. */
    ids = mosaic__graph_hp_ids(exec, &n);
    if (!ids) {
        mosaic_sched_hp_launch(c, 0);
        return;
    }
    for (size_t i = 0; i < n; i++)
        mosaic_sched_hp_launch(c, ids[i]);
}

static void be_release(CUstream s, int all);

void mosaic__sched_synced(CUstream s, int ctx)
{
    struct mosaic_sched_client *c;
    uint32_t l;

    if (mosaic__cfg.role == MOSAIC__ROLE_BE) {
        if (get_client(MOSAIC__ROLE_BE))
            be_release(s, ctx);
        return;
    }
    c = get_client(MOSAIC__ROLE_HP);
    if (!c || atomic_load_explicit(&req_explicit, memory_order_relaxed))
        return;
    l = atomic_exchange_explicit(&learned_id, 0, memory_order_relaxed);
    if (l)
        mosaic_sched_hp_request_end(c, l, 0);
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
    return mosaic_sched_hp_request_end(c, id, 0);
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
        mosaic_sched_hp_request_end(c, old, 0);
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
    return mosaic_sched_hp_request_end(c, id, 0);
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
    int ptsz = strstr(mosaic__hook_names[hook], "_ptsz") != NULL;
    uint64_t id;
    int outcome, rc;

    (void)exec;
    if (!c || !b)
        return;
    /* A launch into a capturing stream is recorded, not run: nothing to
     * admit until the graph is launched. */
    if (atomic_load_explicit(&mosaic__active_captures, memory_order_relaxed) > 0 &&
        mosaic__stream_capturing(b, hook, s))
        return;
    /* A graph's kernels are not one profiled kernel: id 0, which the
     * daemon admits only while no HP request is in flight. */
    id = fn ? kernel_id(fn, grid, block, dyn_smem) : 0;
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
    do {
        rc = mosaic_sched_be_admit(c, id, 0, &outcome);
    } while (rc == MOSAIC_ETIMEDOUT); /* be-on-timeout hold: ask again */
    if (rc == 0 && outcome == MOSAIC_SCHED_GRANTED && be_nout < BE_OUT)
        be_out[be_nout++] = (typeof(be_out[0])){.id = id, .s = s, .ptsz = ptsz};
    pthread_mutex_unlock(&be_lock);
}
