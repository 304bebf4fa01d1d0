/*
 * Arming instrumented kernels under argus-shim, in the same run as the
 * NVTX and kernel recording (docs/argus.md, "Instrumented kernels under
 * argus-shim").
 *
 * How a launch is armed, without a synchronisation the application did not
 * ask for:
 *   - At the enter callback of a kernel launch, the function's module
 *     (cuFuncGetModule) is looked up once: a module is instrumented when it
 *     carries an embedded registry (argus_registry_v1, read through a
 *     private non-blocking stream) and argus_desc_v1. Looking modules up at
 *     their first launch, rather than at cuModuleLoad/cuLibraryLoad, also
 *     covers lazy loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA
 *     12.2), context-independent libraries and modules loaded before the
 *     recorder was.
 *   - The buffer's zeroing, its header and the descriptor go into the
 *     launch's own stream as asynchronous copies from pinned memory, so
 *     that they take effect exactly before this kernel, in stream order.
 *     The synchronous cuMemcpyHtoD that argus_launch_arm uses would run on
 *     the legacy default stream and wait for the device's other work.
 *   - At the exit callback the disarm (a zero descriptor), an event
 *     (kernel done) go into the same stream; a private non-blocking stream
 *     waits for that event and copies the buffer into pinned host memory,
 *     then records a second event. Nothing waits on the host.
 *   - The sync point: the second event is polled (cuEventQuery, no wait)
 *     when the application itself synchronises (cuCtxSynchronize,
 *     cuStreamSynchronize, cuEventSynchronize, a synchronous cuMemcpyDtoH:
 *     their exit callbacks), at every later launch of an instrumented kernel
 *     into a stream not under capture, and waited for at the process's
 *     exit. A program without instrumented kernels (PyTorch's) sees no
 *     query at all: per launch, one lookup of its function in a hash. A collected buffer is decoded here and written into
 *     the recording as "dnode", "region" and "armed" lines, joined to the
 *     kernel's CUPTI record by the correlation ID.
 *   - A launch into a stream that is being captured (a CUDA graph) is not
 *     armed: the copies and events would become graph nodes. Its kernel
 *     runs at each graph launch, unarmed ("armed" line "not_armed").
 *   - The descriptor is per module. On one stream, stream order keeps
 *     armed launches apart. A launch of the same module on another stream
 *     while an armed one may still run would write into that buffer (or
 *     read its descriptor): it is not armed, and the armed one is
 *     discarded ("armed" line state "discarded"), never decoded into wrong
 *     numbers.
 *
 * Tested here against a driver over host memory (tests/argus/
 * test_shim_arm.c); written to the CUDA 13.0 driver API (cuFuncGetModule
 * since CUDA 11.0, the _v2 copy entry points). Not yet run on a GPU.
 */
#define _GNU_SOURCE 1
#include "shim_arm.h"

#include <cupti.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus_internal.h"
#include "json.h"

/* Pinned staging of one armed launch: what the stream-ordered copies read
 * when they run, which may be after the callback returned. */
typedef struct staging {
    argus_buf_header hdr;
    argus_device_desc on, off;
} staging;

typedef struct arm_launch {
    int used;      /* armed and not yet collected */
    int exited;    /* the exit callback enqueued the read-back */
    int result;    /* the launch's CUresult */
    int discarded; /* another launch of the module ran while it was armed */
    uint64_t corr;
    size_t mod;
    void *stream;
    uint64_t dbuf;
    size_t bytes, cap_bytes;
    void *host;
    staging *st;
    void *ev_kernel, *ev_copied;
    char kernel[256];
} arm_launch;

typedef struct mod_entry {
    void *module;
    argus_registry *reg; /* NULL: not instrumented */
    uint64_t desc;
    long inflight; /* the armed launch index, -1 none */
} mod_entry;

typedef struct func_entry {
    void *func;
    long mod; /* -1: the function has no module we can use */
} func_entry;

static pthread_mutex_t a_lock = PTHREAD_MUTEX_INITIALIZER;
/* Set while arming calls the driver, whose callbacks then return at once
 * (arming's own cuMemcpyDtoH would otherwise re-enter the poll). */
static __thread int a_busy;
static int a_on;
static argus_driver a_drv;
static argus__arm_ops a_ops;
static argus__arm_config a_cfg;
static argus__arm_emit_fn a_emit;
static void *a_ud;
static void *a_priv; /* the private non-blocking stream */
static mod_entry *a_mods;
static size_t a_nmods, a_capmods;
static func_entry *a_funcs;
static size_t a_nfuncs, a_capfuncs;
/* Open addressing over a_funcs (index + 1): a launch looks its function up
 * in constant time, since a PyTorch process launches thousands of
 * distinct kernels. */
static size_t *a_fhash;
static size_t a_fhcap;
static arm_launch *a_launch;
static size_t a_nlaunch, a_caplaunch;
static uint32_t a_armed;
static int a_told_max;

/* CUDA_ERROR_NOT_FOUND */
#define CU_NOT_FOUND 500
/* The per-thread default stream's handle (CU_STREAM_PER_THREAD). */
#define CU_STREAM_PTS ((void *)0x2)

static void emitf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emitf(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (w > 0 && (size_t)w < sizeof(line))
        a_emit(a_ud, line);
}

/* A JSON string (quotes included) of s, in buf; cut at the buffer's end. */
static const char *jstr(const char *s, char *buf, size_t len)
{
    char *text = NULL;
    size_t tlen = 0;
    FILE *m = open_memstream(&text, &tlen);
    buf[0] = '\0';
    if (m == NULL)
        return "\"\"";
    mosaic__json_fputs(m, s ? s : "");
    if (fclose(m) != 0 || text == NULL || tlen + 1 > len) {
        free(text);
        return "\"(name too long)\"";
    }
    memcpy(buf, text, tlen + 1);
    free(text);
    return buf;
}

static void emit_unavailable(const char *why)
{
    char w[600];
    emitf("{\"e\":\"unavailable\",\"what\":\"device_regions\",\"why\":%s}",
          jstr(why, w, sizeof(w)));
}

static void emit_armed(const arm_launch *l, const char *state, const char *why)
{
    char k[600], w[600];
    /* The name is CUPTI's symbol, set once the launch was armed; a launch
     * left unarmed has none here (its kernel record names it). */
    if (l->kernel[0])
        emitf("{\"e\":\"armed\",\"corr\":%llu,\"name\":%s,\"state\":\"%s\",\"why\":%s}",
              (unsigned long long)l->corr, jstr(l->kernel, k, sizeof(k)), state,
              jstr(why, w, sizeof(w)));
    else
        emitf("{\"e\":\"armed\",\"corr\":%llu,\"state\":\"%s\",\"why\":%s}",
              (unsigned long long)l->corr, state, jstr(why, w, sizeof(w)));
}

int argus__arm_init(const argus_driver *drv, const argus__arm_ops *ops,
                    const argus__arm_config *cfg, argus__arm_emit_fn emit, void *ud)
{
    if (drv == NULL || ops == NULL || emit == NULL)
        return ARGUS_EINVAL;
    pthread_mutex_lock(&a_lock);
    a_drv = *drv;
    a_ops = *ops;
    a_cfg.cap = ARGUS__ARM_CAP;
    a_cfg.max_launches = ARGUS__ARM_MAX_LAUNCHES;
    a_cfg.max_bytes = ARGUS__ARM_MAX_BYTES;
    if (cfg != NULL)
        a_cfg = *cfg;
    a_emit = emit;
    a_ud = ud;
    a_on = 1;
    pthread_mutex_unlock(&a_lock);
    return 0;
}

/* The registry copy through the private stream: a synchronous cuMemcpyDtoH
 * would run on the legacy default stream and wait for all other work. */
static int priv_dtoh(void *ctx, void *dst, uint64_t src, size_t bytes)
{
    (void)ctx;
    int cr = a_ops.dtoh_async(a_ops.ctx, dst, src, bytes, a_priv);
    void *ev = NULL;
    if (cr == 0 && (cr = a_ops.event_create(a_ops.ctx, &ev)) == 0 &&
        (cr = a_ops.event_record(a_ops.ctx, ev, a_priv)) == 0)
        cr = a_ops.event_sync(a_ops.ctx, ev);
    /* The event is kept (a handful per process, one per module looked up):
     * the ops table has no destroy, and a module is looked up once. */
    return cr;
}

static size_t fslot(void *func, size_t cap)
{
    return (size_t)(((uint64_t)(uintptr_t)func * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

/* The module entry of func, made (and the module looked up) when new. */
static long module_of(void *func)
{
    if (a_fhcap) {
        for (size_t j = fslot(func, a_fhcap); a_fhash[j]; j = (j + 1) & (a_fhcap - 1))
            if (a_funcs[a_fhash[j] - 1].func == func)
                return a_funcs[a_fhash[j] - 1].mod;
    }
    if ((a_nfuncs + 1) * 2 > a_fhcap) {
        size_t cap = a_fhcap ? a_fhcap * 2 : 256;
        size_t *h = calloc(cap, sizeof(size_t));
        if (h == NULL)
            return -1;
        for (size_t i = 0; i < a_nfuncs; i++) {
            size_t j = fslot(a_funcs[i].func, cap);
            while (h[j])
                j = (j + 1) & (cap - 1);
            h[j] = i + 1;
        }
        free(a_fhash);
        a_fhash = h;
        a_fhcap = cap;
    }
    if (argus__grow((void **)&a_funcs, &a_capfuncs, a_nfuncs + 1, sizeof(func_entry)) != 0)
        return -1;
    size_t j = fslot(func, a_fhcap);
    while (a_fhash[j])
        j = (j + 1) & (a_fhcap - 1);
    a_fhash[j] = a_nfuncs + 1;
    func_entry *fe = &a_funcs[a_nfuncs++];
    fe->func = func;
    fe->mod = -1;
    void *module = NULL, *f2 = NULL;
    if ((a_ops.func_module(a_ops.ctx, func, &module) != 0 || module == NULL) &&
        (a_ops.kernel_function == NULL || a_ops.kernel_function(a_ops.ctx, func, &f2) != 0 ||
         a_ops.func_module(a_ops.ctx, f2, &module) != 0 || module == NULL))
        return -1;
    for (size_t i = 0; i < a_nmods; i++)
        if (a_mods[i].module == module)
            return fe->mod = (long)i;
    if (argus__grow((void **)&a_mods, &a_capmods, a_nmods + 1, sizeof(mod_entry)) != 0)
        return -1;
    mod_entry *m = &a_mods[a_nmods];
    memset(m, 0, sizeof(*m));
    m->module = module;
    m->inflight = -1;
    fe->mod = (long)a_nmods++;
    /* Modules without the registry symbol are the common case (every
     * library kernel): one failed cuModuleGetGlobal, then never again. */
    uint64_t dptr;
    size_t bytes = 0;
    if (a_drv.get_global(a_drv.ctx, module, ARGUS_REGISTRY_SYMBOL, &dptr, &bytes) != 0)
        return fe->mod;
    if (a_priv == NULL && a_ops.stream_create(a_ops.ctx, &a_priv) != 0) {
        emit_unavailable("a module has an Argus registry, but the private stream for reading it "
                         "back could not be created: its kernels are not armed");
        return fe->mod;
    }
    argus_driver d = a_drv;
    d.dtoh = priv_dtoh;
    char msg[512];
    int rc = argus_registry_from_module(&d, module, &m->reg, msg, sizeof(msg));
    if (rc != 0) {
        char why[700];
        snprintf(why, sizeof(why), "a module's embedded registry could not be read (%s): its "
                                   "kernels are not armed", msg);
        emit_unavailable(why);
        m->reg = NULL;
        return fe->mod;
    }
    if (a_drv.get_global(a_drv.ctx, module, ARGUS_DESC_SYMBOL, &m->desc, &bytes) != 0 ||
        bytes != sizeof(argus_device_desc)) {
        emit_unavailable("a module carries an Argus registry but no argus_desc_v1 of this "
                         "Argus's size: build its kernels with -DARGUS_ENABLE and this "
                         "region.cuh; its kernels are not armed");
        argus_registry_free(m->reg);
        m->reg = NULL;
    }
    return fe->mod;
}

/* Done when its exit callback ran and the kernel event has completed. */
static int launch_done(const arm_launch *l)
{
    return l->exited && a_ops.event_query(a_ops.ctx, l->ev_kernel) == 0;
}

/* A launch record for bytes of buffer: a collected one whose buffers are
 * big enough, else a new one with its own. */
static long take_launch(size_t bytes, char *why, size_t whylen)
{
    for (size_t i = 0; i < a_nlaunch; i++)
        if (!a_launch[i].used && a_launch[i].cap_bytes >= bytes)
            return (long)i;
    if (argus__grow((void **)&a_launch, &a_caplaunch, a_nlaunch + 1, sizeof(arm_launch)) != 0) {
        snprintf(why, whylen, "out of host memory");
        return -1;
    }
    arm_launch *l = &a_launch[a_nlaunch];
    memset(l, 0, sizeof(*l));
    int cr;
    void *st = NULL;
    if ((cr = a_drv.mem_alloc(a_drv.ctx, &l->dbuf, bytes)) != 0) {
        snprintf(why, whylen, "cuMemAlloc of a %zu-byte region buffer failed (CUresult %d); "
                              "lower ARGUS_SHIM_ARM_CAP", bytes, cr);
        return -1;
    }
    if ((cr = a_ops.host_alloc(a_ops.ctx, &l->host, bytes)) != 0 ||
        (cr = a_ops.host_alloc(a_ops.ctx, &st, sizeof(staging))) != 0 ||
        (cr = a_ops.event_create(a_ops.ctx, &l->ev_kernel)) != 0 ||
        (cr = a_ops.event_create(a_ops.ctx, &l->ev_copied)) != 0) {
        /* What was allocated stays allocated: a failure here means the
         * device is out of resources, and the pool is small. */
        snprintf(why, whylen, "pinned host memory or events for the read-back could not be "
                              "allocated (CUresult %d)", cr);
        return -1;
    }
    l->st = st;
    l->cap_bytes = bytes;
    return (long)a_nlaunch++;
}

static void collect(arm_launch *l);

int argus__arm_launch_enter(void *func, const uint32_t grid[3], const uint32_t block[3],
                            void *stream, int ptsz, uint64_t corr)
{
    if (!a_on || a_busy || func == NULL)
        return 0;
    a_busy = 1;
    pthread_mutex_lock(&a_lock);
    int armed = 0;
    long mi = module_of(func);
    if (mi < 0 || a_mods[mi].reg == NULL)
        goto out;
    if (stream == NULL && ptsz)
        stream = CU_STREAM_PTS;
    mod_entry *m = &a_mods[mi];
    arm_launch probe = {.corr = corr};
    int capturing = 0;
    if (a_ops.stream_capturing && (a_ops.stream_capturing(a_ops.ctx, stream, &capturing) != 0 ||
                                   capturing)) {
        emit_armed(&probe, "not_armed",
                   "launched into a stream being captured (a CUDA graph): the arming copies would "
                   "become graph nodes; the kernel runs unarmed at each graph launch");
        goto out;
    }
    /* The kernel name CUPTI gives is written by the caller afterwards; the
     * reason lines below only need the correlation ID. */
    if (m->inflight >= 0) {
        arm_launch *prev = &a_launch[m->inflight];
        if (launch_done(prev)) {
            m->inflight = -1;
        } else if (prev->stream != stream) {
            prev->discarded = 1;
            emit_armed(&probe, "not_armed",
                       "another launch of its module was armed on another stream and may still "
                       "run (one descriptor per module); both are left out");
            goto out;
        }
    }
    if (a_armed >= a_cfg.max_launches) {
        if (!a_told_max++) {
            char why[256];
            snprintf(why, sizeof(why), "arming stopped after %u launches (ARGUS_SHIM_ARM_MAX); "
                                       "later instrumented launches ran unarmed",
                     a_cfg.max_launches);
            emit_unavailable(why);
        }
        goto out;
    }
    argus_buf_header h;
    size_t bytes;
    char why[512];
    if (argus__launch_plan(grid, block, a_cfg.cap, &h, &bytes, why, sizeof(why)) != 0) {
        emit_armed(&probe, "not_armed", why);
        goto out;
    }
    if (bytes > a_cfg.max_bytes) {
        snprintf(why, sizeof(why), "its region buffer would be %zu bytes, over the %zu-byte "
                                   "limit; lower ARGUS_SHIM_ARM_CAP", bytes, a_cfg.max_bytes);
        emit_armed(&probe, "not_armed", why);
        goto out;
    }
    long li = take_launch(bytes, why, sizeof(why));
    if (li < 0) {
        emit_armed(&probe, "not_armed", why);
        goto out;
    }
    arm_launch *l = &a_launch[li];
    l->st->hdr = h;
    l->st->on = (argus_device_desc){.slots = l->dbuf + ARGUS_HEADER_BYTES,
                                    .nslots = h.nslots,
                                    .cap_mask = h.cap - 1,
                                    .warps_per_cta = h.warps_per_cta,
                                    .magic = ARGUS_BUF_MAGIC};
    memset(&l->st->off, 0, sizeof(l->st->off));
    int cr;
    if ((cr = a_ops.memset0_async(a_ops.ctx, l->dbuf, bytes, stream)) != 0 ||
        (cr = a_ops.htod_async(a_ops.ctx, l->dbuf, &l->st->hdr, sizeof(h), stream)) != 0 ||
        (cr = a_ops.htod_async(a_ops.ctx, m->desc, &l->st->on, sizeof(l->st->on), stream)) != 0) {
        snprintf(why, sizeof(why), "arming the region buffer in the launch's stream failed "
                                   "(CUresult %d)", cr);
        emit_armed(&probe, "not_armed", why);
        goto out;
    }
    l->used = 1;
    l->exited = 0;
    l->discarded = 0;
    l->result = 0;
    l->corr = corr;
    l->mod = (size_t)mi;
    l->stream = stream;
    l->bytes = bytes;
    l->kernel[0] = '\0';
    m->inflight = li;
    a_armed++;
    armed = 1;
out:
    pthread_mutex_unlock(&a_lock);
    a_busy = 0;
    return armed;
}

static void set_name(uint64_t corr, const char *name)
{
    for (size_t i = 0; i < a_nlaunch; i++)
        if (a_launch[i].used && a_launch[i].corr == corr && name)
            snprintf(a_launch[i].kernel, sizeof(a_launch[i].kernel), "%s", name);
}

void argus__arm_launch_exit(uint64_t corr, int result)
{
    if (!a_on || a_busy)
        return;
    a_busy = 1;
    pthread_mutex_lock(&a_lock);
    for (size_t i = 0; i < a_nlaunch; i++) {
        arm_launch *l = &a_launch[i];
        if (!l->used || l->exited || l->corr != corr)
            continue;
        l->result = result;
        int cr;
        /* Disarmed in stream order right behind the kernel, then the
         * read-back behind an event on the private stream. */
        if ((cr = a_ops.htod_async(a_ops.ctx, a_mods[l->mod].desc, &l->st->off,
                                   sizeof(l->st->off), l->stream)) != 0 ||
            (cr = a_ops.event_record(a_ops.ctx, l->ev_kernel, l->stream)) != 0 ||
            (cr = a_ops.stream_wait_event(a_ops.ctx, a_priv, l->ev_kernel)) != 0 ||
            (cr = a_ops.dtoh_async(a_ops.ctx, l->host, l->dbuf, l->bytes, a_priv)) != 0 ||
            (cr = a_ops.event_record(a_ops.ctx, l->ev_copied, a_priv)) != 0) {
            char why[160];
            snprintf(why, sizeof(why), "enqueueing the disarm and read-back failed (CUresult %d)",
                     cr);
            emit_armed(l, "failed", why);
            /* The buffer may still be written: it is not reused. */
            l->cap_bytes = 0;
            l->exited = 1;
            l->used = 0;
            if (a_mods[l->mod].inflight == (long)i)
                a_mods[l->mod].inflight = -1;
            break;
        }
        l->exited = 1;
        break;
    }
    pthread_mutex_unlock(&a_lock);
    a_busy = 0;
}

/* The buffer as it came back, into a_cfg.raw_dir (ARGUS_SHIM_ARM_RAW).
 * A failure is said in an "unavailable" line, never to stderr: the
 * recording's reader (the executor) then knows why a file is missing. */
static void save_raw(const arm_launch *l)
{
    char path[4096], why[4400];
    int w = snprintf(path, sizeof(path), "%s/arm.%llu.raw", a_cfg.raw_dir,
                     (unsigned long long)l->corr);
    if (w < 0 || (size_t)w >= sizeof(path))
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int err = fd < 0 ? errno : 0;
    size_t done = 0;
    while (fd >= 0 && done < l->bytes) {
        ssize_t n = write(fd, (const char *)l->host + done, l->bytes - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            err = n < 0 ? errno : EIO;
            break;
        }
        done += (size_t)n;
    }
    if (fd >= 0 && close(fd) != 0 && err == 0)
        err = errno;
    if (err != 0) {
        char js[9000];
        snprintf(why, sizeof(why), "ARGUS_SHIM_ARM_RAW: %s: %s", path, strerror(err));
        emitf("{\"e\":\"unavailable\",\"what\":\"raw_buffer\",\"why\":%s}",
              jstr(why, js, sizeof(js)));
    }
}

/* Decodes a read-back buffer and writes its lines. */
static void collect(arm_launch *l)
{
    mod_entry *m = &a_mods[l->mod];
    if (m->inflight >= 0 && &a_launch[m->inflight] == l)
        m->inflight = -1;
    l->used = 0;
    if (l->result != 0) {
        char why[128];
        snprintf(why, sizeof(why), "the launch itself failed (CUresult %d)", l->result);
        emit_armed(l, "failed", why);
        return;
    }
    if (l->discarded) {
        emit_armed(l, "discarded",
                   "another launch of its module, on another stream, ran while it was armed: "
                   "its buffer may hold that launch's records");
        return;
    }
    if (a_cfg.raw_dir != NULL)
        save_raw(l);
    argus_trace t;
    argus_decode_opts o = {.cycles_per_ns = 0, .reg = m->reg};
    char msg[512];
    int rc = argus_decode(l->host, l->bytes, &o, &t, msg, sizeof(msg));
    if (rc != 0) {
        emit_armed(l, "failed", msg);
        return;
    }
    if (t.clock_method != ARGUS_CLOCK_ANCHORS) {
        emit_armed(l, "failed",
                   "no SM clock rate from the warps' anchors (one warp, or none ran "
                   "ARGUS_CTA_BEGIN/END): region times cannot be placed in ns");
        argus_trace_free(&t);
        return;
    }
    for (size_t i = 0; i < t.nnodes; i++) {
        char nb[32], js[600];
        const char *name = argus__name(m->reg, t.nodes[i].region, nb, sizeof(nb));
        if (t.nodes[i].parent >= 0)
            emitf("{\"e\":\"dnode\",\"corr\":%llu,\"node\":%zu,\"parent\":%d,\"name\":%s}",
                  (unsigned long long)l->corr, i, t.nodes[i].parent, jstr(name, js, sizeof(js)));
        else
            emitf("{\"e\":\"dnode\",\"corr\":%llu,\"node\":%zu,\"name\":%s}",
                  (unsigned long long)l->corr, i, jstr(name, js, sizeof(js)));
    }
    for (size_t i = 0; i < t.nocc; i++) {
        const argus_occurrence *oc = &t.occ[i];
        double begin, dur;
        argus__occ_time(&t, oc, &begin, &dur);
        if (begin < 0)
            begin = 0;
        emitf("{\"e\":\"region\",\"corr\":%llu,\"node\":%u,\"cta\":%u,\"warp\":%u,"
              "\"off\":%.0f,\"dur\":%.0f,\"flags\":%u}",
              (unsigned long long)l->corr, oc->node, oc->cta, oc->warp, begin, dur, oc->flags);
    }
    char why[256];
    snprintf(why, sizeof(why), "%zu occurrences in %llu warps; SM clock %.4f GHz from the "
                               "anchors; %llu records lost to ring wraps; %zu decoder "
                               "diagnostics",
             t.nocc, (unsigned long long)t.warps_active, t.cycles_per_ns,
             (unsigned long long)t.records_lost, t.ndiags + (size_t)t.diags_dropped);
    char k[600], w[600];
    emitf("{\"e\":\"armed\",\"corr\":%llu,\"name\":%s,\"state\":\"decoded\",\"why\":%s,"
          "\"records_lost\":%llu,\"diagnostics\":%llu}",
          (unsigned long long)l->corr, jstr(l->kernel[0] ? l->kernel : "(unnamed)", k, sizeof(k)),
          jstr(why, w, sizeof(w)), (unsigned long long)t.records_lost,
          (unsigned long long)(t.ndiags + t.diags_dropped));
    argus_trace_free(&t);
}

/* Collects what has completed (with wait: everything); a_lock held. */
static void poll_locked(int wait)
{
    for (size_t i = 0; i < a_nlaunch; i++) {
        arm_launch *l = &a_launch[i];
        if (!l->used || !l->exited)
            continue;
        int cr = wait ? a_ops.event_sync(a_ops.ctx, l->ev_copied)
                      : a_ops.event_query(a_ops.ctx, l->ev_copied);
        if (cr == 0) {
            collect(l);
        } else if (wait) {
            char why[160];
            snprintf(why, sizeof(why), "the read-back did not complete at the process's exit "
                                       "(CUresult %d)", cr);
            emit_armed(l, "failed", why);
            l->used = 0;
        }
    }
}

void argus__arm_poll(int wait)
{
    if (!a_on || a_busy)
        return;
    a_busy = 1;
    pthread_mutex_lock(&a_lock);
    poll_locked(wait);
    pthread_mutex_unlock(&a_lock);
    a_busy = 0;
}

void argus__arm_shutdown(void)
{
    pthread_mutex_lock(&a_lock);
    /* Device and pinned memory go with the process (the context may be
     * gone at exit, and freeing would synchronise); host tables are freed. */
    for (size_t i = 0; i < a_nmods; i++)
        argus_registry_free(a_mods[i].reg);
    free(a_mods);
    free(a_funcs);
    free(a_fhash);
    free(a_launch);
    a_fhash = NULL;
    a_fhcap = 0;
    a_mods = NULL;
    a_funcs = NULL;
    a_launch = NULL;
    a_nmods = a_capmods = a_nfuncs = a_capfuncs = a_nlaunch = a_caplaunch = 0;
    a_priv = NULL;
    a_armed = 0;
    a_told_max = 0;
    a_on = 0;
    pthread_mutex_unlock(&a_lock);
}

/* ---- the CUPTI side ---------------------------------------------------- */

const unsigned argus__arm_sync_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
};
const size_t argus__arm_nsync_cbids =
    sizeof(argus__arm_sync_cbids) / sizeof(argus__arm_sync_cbids[0]);

void argus__arm_on_callback(unsigned cbid, int enter, const void *data)
{
    const CUpti_CallbackData *cb = data;
    if (!a_on || a_busy || cb == NULL)
        return;
    uint32_t grid[3], block[3];
    void *func = NULL, *stream = NULL;
    int ptsz = 0, launch = 1;
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
        ptsz = 1;
        __attribute__((fallthrough)); /* the same parameters */
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel: {
        const cuLaunchKernel_params *p = cb->functionParams;
        if (p == NULL)
            return;
        func = p->f;
        grid[0] = p->gridDimX, grid[1] = p->gridDimY, grid[2] = p->gridDimZ;
        block[0] = p->blockDimX, block[1] = p->blockDimY, block[2] = p->blockDimZ;
        stream = p->hStream;
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        ptsz = 1;
        __attribute__((fallthrough));
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: {
        const cuLaunchKernelEx_params *p = cb->functionParams;
        if (p == NULL || p->config == NULL)
            return;
        func = p->f;
        const CUlaunchConfig *c = p->config;
        grid[0] = c->gridDimX, grid[1] = c->gridDimY, grid[2] = c->gridDimZ;
        block[0] = c->blockDimX, block[1] = c->blockDimY, block[2] = c->blockDimZ;
        stream = c->hStream;
        break;
    }
    default:
        launch = 0;
        break;
    }
    if (!launch) {
        /* A synchronisation the application asked for: what it made
         * complete is collected without waiting. */
        if (!enter)
            argus__arm_poll(0);
        return;
    }
    if (enter) {
        if (argus__arm_launch_enter(func, grid, block, stream, ptsz, cb->correlationId)) {
            pthread_mutex_lock(&a_lock);
            set_name(cb->correlationId, cb->symbolName);
            pthread_mutex_unlock(&a_lock);
        }
    } else {
        const CUresult *ret = cb->functionReturnValue;
        argus__arm_launch_exit(cb->correlationId, ret ? (int)*ret : 0);
    }
}

/* ---- the real driver ---------------------------------------------------- */

typedef int (*fn_funcmod)(void **, void *);
typedef int (*fn_memsetA)(uint64_t, unsigned char, size_t, void *);
typedef int (*fn_htodA)(uint64_t, const void *, size_t, void *);
typedef int (*fn_dtohA)(void *, uint64_t, size_t, void *);
typedef int (*fn_hostalloc)(void **, size_t);
typedef int (*fn_evcreate)(void **, unsigned);
typedef int (*fn_evrec)(void *, void *);
typedef int (*fn_ev)(void *);
typedef int (*fn_screate)(void **, unsigned);
typedef int (*fn_swait)(void *, void *, unsigned);
typedef int (*fn_capturing)(void *, int *);
typedef int (*fn_kfunc)(void **, void *);

typedef struct cu_ops {
    fn_funcmod funcmod;
    fn_memsetA memset_;
    fn_htodA htod;
    fn_dtohA dtoh;
    fn_hostalloc hostalloc;
    fn_evcreate evcreate;
    fn_evrec evrec;
    fn_ev evquery, evsync;
    fn_screate screate;
    fn_swait swait;
    fn_capturing capturing;
    fn_kfunc kfunc;
} cu_ops;

static cu_ops g_cu;

static int o_funcmod(void *c, void *f, void **m) { return ((cu_ops *)c)->funcmod(m, f); }
static int o_memset(void *c, uint64_t d, size_t b, void *s) { return ((cu_ops *)c)->memset_(d, 0, b, s); }
static int o_htod(void *c, uint64_t d, const void *src, size_t b, void *s)
{
    return ((cu_ops *)c)->htod(d, src, b, s);
}
static int o_dtoh(void *c, void *d, uint64_t src, size_t b, void *s)
{
    return ((cu_ops *)c)->dtoh(d, src, b, s);
}
static int o_kfunc(void *c, void *k, void **f)
{
    return ((cu_ops *)c)->kfunc ? ((cu_ops *)c)->kfunc(f, k) : 500;
}
static int o_hostalloc(void *c, void **p, size_t b) { return ((cu_ops *)c)->hostalloc(p, b); }
/* CU_EVENT_DISABLE_TIMING: the events only order and signal. */
static int o_evcreate(void *c, void **e) { return ((cu_ops *)c)->evcreate(e, 0x2); }
static int o_evrec(void *c, void *e, void *s) { return ((cu_ops *)c)->evrec(e, s); }
static int o_evquery(void *c, void *e) { return ((cu_ops *)c)->evquery(e); }
static int o_evsync(void *c, void *e) { return ((cu_ops *)c)->evsync(e); }
/* CU_STREAM_NON_BLOCKING: the private stream never waits for the legacy
 * default stream, nor that one for it. */
static int o_screate(void *c, void **s) { return ((cu_ops *)c)->screate(s, 0x1); }
static int o_swait(void *c, void *s, void *e) { return ((cu_ops *)c)->swait(s, e, 0); }
/* cuStreamIsCapturing's CUstreamCaptureStatus: 0 none, 1 active, 2
 * invalidated; anything but none is treated as a capture. */
static int o_capturing(void *c, void *s, int *cap)
{
    int st = 0;
    int cr = ((cu_ops *)c)->capturing(s, &st);
    *cap = st != 0;
    return cr;
}

int argus__arm_ops_cuda(argus__arm_ops *ops, char *msg, size_t msglen)
{
    static const char *const names[] = {
        "cuFuncGetModule",   "cuMemsetD8Async",      "cuMemcpyHtoDAsync_v2",
        "cuMemcpyDtoHAsync_v2", "cuMemAllocHost_v2", "cuEventCreate",
        "cuEventRecord",     "cuEventQuery",         "cuEventSynchronize",
        "cuStreamCreate",    "cuStreamWaitEvent",    "cuStreamIsCapturing"};
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL)
        return argus__fail(ARGUS_EDRIVER, msg, msglen, "argus-shim: cannot load libcuda.so.1 (%s)",
                           dlerror());
    void *p[12];
    for (int i = 0; i < 12; i++)
        if ((p[i] = dlsym(h, names[i])) == NULL)
            return argus__fail(ARGUS_EDRIVER, msg, msglen,
                               "argus-shim: libcuda.so.1 has no %s (a driver older than CUDA "
                               "11.0): instrumented kernels are not armed", names[i]);
    memcpy(&g_cu.funcmod, &p[0], sizeof(p[0]));
    memcpy(&g_cu.memset_, &p[1], sizeof(p[0]));
    memcpy(&g_cu.htod, &p[2], sizeof(p[0]));
    memcpy(&g_cu.dtoh, &p[3], sizeof(p[0]));
    memcpy(&g_cu.hostalloc, &p[4], sizeof(p[0]));
    memcpy(&g_cu.evcreate, &p[5], sizeof(p[0]));
    memcpy(&g_cu.evrec, &p[6], sizeof(p[0]));
    memcpy(&g_cu.evquery, &p[7], sizeof(p[0]));
    memcpy(&g_cu.evsync, &p[8], sizeof(p[0]));
    memcpy(&g_cu.screate, &p[9], sizeof(p[0]));
    memcpy(&g_cu.swait, &p[10], sizeof(p[0]));
    memcpy(&g_cu.capturing, &p[11], sizeof(p[0]));
    /* CUDA 12.0+; without it, a CUkernel handle is not resolved. */
    void *kf = dlsym(h, "cuKernelGetFunction");
    if (kf)
        memcpy(&g_cu.kfunc, &kf, sizeof(kf));
    *ops = (argus__arm_ops){.ctx = &g_cu,
                            .func_module = o_funcmod,
                            .kernel_function = o_kfunc,
                            .memset0_async = o_memset,
                            .htod_async = o_htod,
                            .dtoh_async = o_dtoh,
                            .host_alloc = o_hostalloc,
                            .event_create = o_evcreate,
                            .event_record = o_evrec,
                            .event_query = o_evquery,
                            .event_sync = o_evsync,
                            .stream_create = o_screate,
                            .stream_wait_event = o_swait,
                            .stream_capturing = o_capturing};
    return 0;
}
