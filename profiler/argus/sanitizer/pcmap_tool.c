/*
 * libargus_pcmap.so (argus-pcmap): the CUDA Sanitizer backend of Argus, a
 * PC-to-region map of instrumented kernels (docs/argus-backends.md). Loaded
 * into the target process as a CUDA injection library
 * (CUDA_INJECTION64_PATH: the driver calls InitializeInjection during
 * cuInit) or with LD_PRELOAD (a constructor starts it); argus-shim's
 * --pc-map sets the environment and does the former.
 *
 * What it does:
 *   - opens the Sanitizer API (libsanitizer-public.so: ARGUS_SANITIZER_LIB,
 *     else the toolkit's places, argus_pcmap_find_sanitizer) with dlopen
 *     and subscribes (one subscriber per process: another Sanitizer tool,
 *     compute-sanitizer itself, makes sanitizerSubscribe refuse);
 *   - at each module load, when the cubin has the Argus descriptor
 *     (argus_desc_v1: built with -DARGUS_ENABLE), loads the patch fatbin
 *     (ARGUS_PCMAP_PATCH, default argus_pcmap_patch.fatbin beside this
 *     library) once per context and patches the module's memory accesses,
 *     barriers, syncwarps, shuffles, calls, returns and exits
 *     (ARGUS_SAN_PATCHES); other modules are left alone;
 *   - at each launch of such a module's kernel: reads its descriptor
 *     (cuModuleGetGlobal, then a copy on the launch's stream, after the
 *     program's own arming copies); when the launch is not armed, arms it
 *     with a ring of one record per warp (the markers then store, and the
 *     store is what the patch reads; nobody decodes that ring), allocates
 *     the device tables (pcmap_dev.h) and hands them to the launch;
 *   - at the program's next synchronisation of the launch's stream or
 *     context (SYNCHRONIZE domain; no launch callback waits for the GPU)
 *     or at argus_pcmap_tool_flush: copies the tables back, disarms what
 *     it armed and adds the counts to the map (one launch at a time: the
 *     backend serialises kernels, its recipe says so): each PC as (function, offset)
 *     from the cubin's symbols and sanitizerGetFunctionPcAndSize, each path
 *     named through the registry (embedded in the cubin, or
 *     ARGUS_PCMAP_REGISTRY);
 *   - writes the map (argus.pcmap v1, include/argus/pcmap.h) to
 *     ARGUS_PCMAP_OUT at exit (and at argus_pcmap_tool_flush).
 *
 * Inside someone else's program: never exit(), no signal, no thread, no
 * descriptor kept open; silent unless ARGUS_PCMAP_OUT is set (without it the
 * library does nothing); every failure is one "argus-pcmap: ..." line on
 * stderr, written into the map's problems (marked incomplete), and
 * instrumentation stops while the program goes on (fail-open).
 *
 * Environment: ARGUS_PCMAP_OUT (required), ARGUS_PCMAP_LOG (the step trace:
 * a path or "stderr"; off by default), ARGUS_PCMAP_LOCK_WAIT (seconds a
 * callback waits for another's lock, default 10), ARGUS_PCMAP_PATCH,
 * ARGUS_SANITIZER_LIB, ARGUS_PCMAP_REGISTRY, ARGUS_PCMAP_TABLE (count
 * table entries per launch, a power of two, default 65536),
 * ARGUS_PCMAP_CUDA_LIB (the driver library, default libcuda.so.1).
 *
 * Tested on: the fake Sanitizer (tests/argus/fake_sanitizer.c, ctest
 * argus_pcmap) against the CUDA 13.0 headers' layouts (san_abi.h, checked
 * by ctest argus_pcmap_abi). On the H200 (driver 580, CUDA 13.0):
 * scripts/gpu/argus16_pcmap.sh; session 8's preload run hung there with no
 * output (cause not known; the candidates this file removed are in
 * docs/argus-backends.md). Unverified: that the patch callbacks see only
 * the threads whose predicate is on (the markers' store is lane 0's
 * alone), that cuModuleGetGlobal may be called from a launch callback, and
 * that subscribing inside cuInit (injection) is safe; ARGUS_PCMAP_LOG
 * names the step if one of them hangs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "argus/pcmap.h"
#include "argus/shim.h"
#include "argus/workspace.h"
#include "argus_internal.h"
#include "pcmap_dev.h"
#include "san_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* The library's two entry points (exported; nothing else is). */
EXPORT int InitializeInjection(void);
EXPORT int argus_pcmap_tool_flush(void);
#define MAX_MODULES 256
#define MAX_CTX 16

typedef struct san_api {
#define ARGUS_X_FN(name, args) argus_san_result(*name) args;
    ARGUS_SAN_FUNCS(ARGUS_X_FN)
#undef ARGUS_X_FN
} san_api;

typedef struct fn_range {
    char *name;
    uint64_t pc, size;
} fn_range;

typedef struct module_rec {
    CUmodule module;
    CUcontext ctx;
    size_t map_module;  /* index in the map */
    argus_registry *reg;
    argus_cubin cubin;
    int parsed;         /* cubin holds */
    fn_range *fns;
    size_t nfns;
    int resolved;       /* fns looked up */
    uint64_t desc;      /* device address of argus_desc_v1, 0 not yet */
} module_rec;

typedef struct launch_rec {
    int active;
    module_rec *mod;
    argus_san_stream hstream;
    long tid;           /* the thread of its LAUNCH_BEGIN */
    int ended;          /* LAUNCH_END seen */
    CUcontext ctx;
    argus_pcmap_dev host;
    void *dev, *warps, *table, *paths, *ring;
    int armed_by_tool;
    argus_pcmap_launch_info info;
} launch_rec;

static struct {
    pthread_mutex_t mu;
    int started, dead;
    void *lib;
    san_api san;
    argus_san_subscriber sub;
    CUresult (*get_global)(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name);
    argus_pcmap *map;
    char out[4096], patch[4096];
    argus_registry *reg_env;
    uint32_t table_cap;
    CUcontext patched_ctx[MAX_CTX];
    size_t n_ctx;
    module_rec mods[MAX_MODULES];
    size_t n_mods;
    launch_rec launch;
    /* The step the lock's holder is in (a string literal) and its thread,
     * for the trace of a thread that waits for the lock. */
    const char *volatile step;
    volatile long step_tid;
    int lock_gave_up; /* a callback gave up waiting for the lock (atomic) */
    int reentered;    /* a callback came in on a thread already inside one (atomic) */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- the trace (ARGUS_PCMAP_LOG) -------------------------------------------
 * One line per step, written with one write(2) each so that a line is in the
 * file (the kernel's page cache) as soon as the step starts: when the process
 * hangs and is killed, the last line names the step it was in. Off (and
 * nothing opened) unless ARGUS_PCMAP_LOG is a path or "stderr". The format,
 * which scripts/gpu/argus16_pcmap.sh reads:
 *   argus-pcmap +SECONDS.mmm tid TID STEP: what
 * SECONDS from the tool's start (CLOCK_MONOTONIC); STEP one word of init,
 * subscribe, module, patch, launch, sync, collect, flush, write, lock,
 * reenter, exit. */
static int trace_fd = -1;
static struct timespec trace_t0;

static long tid_now(void)
{
    return (long)syscall(SYS_gettid);
}

__attribute__((format(printf, 2, 3))) static void trace(const char *step, const char *fmt, ...)
{
    /* The step of the lock's holder; a waiter's lines (lock, reenter) are
     * not its step. */
    if (strcmp(step, "lock") != 0 && strcmp(step, "reenter") != 0)
        g.step = step;
    if (trace_fd < 0)
        return;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double s = (double)(t.tv_sec - trace_t0.tv_sec) + (t.tv_nsec - trace_t0.tv_nsec) * 1e-9;
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "argus-pcmap +%.3f tid %ld %s: ", s, tid_now(), step);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof buf)
        n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof buf - 1)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    int saved = errno; /* the program's errno is left as it was */
    ssize_t w = write(trace_fd, buf, (size_t)n);
    (void)w; /* a trace that cannot be written is not the program's problem */
    errno = saved;
}

static void trace_open(void)
{
    clock_gettime(CLOCK_MONOTONIC, &trace_t0);
    const char *p = getenv("ARGUS_PCMAP_LOG");
    if (p == NULL || p[0] == '\0')
        return;
    if (strcmp(p, "stderr") == 0)
        trace_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    else
        trace_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (trace_fd < 0) {
        fprintf(stderr, "argus-pcmap: ARGUS_PCMAP_LOG=%s cannot be opened (%s): no trace; "
                        "point it at a writable file or \"stderr\"\n",
                p, strerror(errno));
        return;
    }
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    trace("init", "pid %ld exe %s; trace to %s", (long)getpid(), exe, p);
}

/* One line on stderr and a problem in the map; instrumentation stops when
 * fatal (the program goes on). */
__attribute__((format(printf, 2, 3))) static void problem(int fatal, const char *fmt, ...)
{
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "argus-pcmap: %s\n", buf);
    trace(g.step ? g.step : "init", "problem%s: %s", fatal ? " (instrumentation stops)" : "", buf);
    if (g.map != NULL)
        argus_pcmap_problem(g.map, "%s", buf);
    if (fatal)
        g.dead = 1;
}

static const char *san_str(argus_san_result r)
{
    const char *s = NULL;
    if (g.san.sanitizerGetResultString == NULL || g.san.sanitizerGetResultString(r, &s) != 0 ||
        s == NULL)
        return "unknown Sanitizer result";
    return s;
}

static const char *kind_name(uint32_t kind)
{
    switch (kind) {
#define ARGUS_X_PATCH(name, id, callback, str)                                                    \
    case id:                                                                                      \
        return str;
        ARGUS_SAN_PATCHES(ARGUS_X_PATCH)
#undef ARGUS_X_PATCH
    default:
        return "unknown";
    }
}

/* How long a callback (or the flush) waits for the lock held by another
 * thread before it gives up on its event (the program goes on; the map says
 * so): ARGUS_PCMAP_LOCK_WAIT seconds, default 10. */
static int lock_wait_s = 10;
#define LOCK_WAIT_S lock_wait_s

static void callback(void *ud, int domain, uint32_t cbid, const void *data);

/* Resolves the Sanitizer API and subscribes; 0 or -1 (said). */
static int open_sanitizer(void)
{
    char path[4096], msg[1024];
    if (argus_pcmap_find_sanitizer(path, sizeof path, msg, sizeof msg) != 0) {
        problem(1, "%s", msg);
        return -1;
    }
    trace("init", "dlopen(%s)", path);
    g.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (g.lib == NULL) {
        problem(1,
                "the CUDA Sanitizer API is missing: dlopen(%s) failed: %s; install the "
                "toolkit's compute-sanitizer or set ARGUS_SANITIZER_LIB",
                path, dlerror());
        return -1;
    }
#define ARGUS_X_FN(name, args)                                                                   \
    *(void **)&g.san.name = dlsym(g.lib, #name);                                                 \
    if (g.san.name == NULL) {                                                                    \
        problem(1,                                                                               \
                "%s has no %s: it is not the CUDA 13 Sanitizer API; point ARGUS_SANITIZER_LIB "  \
                "at compute-sanitizer's libsanitizer-public.so",                                 \
                path, #name);                                                                    \
        return -1;                                                                               \
    }
    ARGUS_SAN_FUNCS(ARGUS_X_FN)
#undef ARGUS_X_FN
    trace("subscribe", "sanitizerSubscribe");
    argus_san_result r = g.san.sanitizerSubscribe(&g.sub, callback, NULL);
    trace("subscribe", "sanitizerSubscribe returned %d", r);
    if (r == ARGUS_SAN_ERROR_MAX_LIMIT_REACHED) {
        problem(1,
                "another tool is attached: the CUDA Sanitizer takes one subscriber per process "
                "and one is there (compute-sanitizer, or another Sanitizer API tool): run the "
                "program without it to collect the PC-to-region map");
        return -1;
    }
    if (r != ARGUS_SAN_SUCCESS) {
        problem(1, "sanitizerSubscribe failed: %s (%d); nothing is instrumented", san_str(r), r);
        return -1;
    }
    /* Synchronisation callbacks are where a launch's tables are read back
     * (as NVIDIA's MemoryTracker sample does): a launch callback does not
     * wait for the GPU. */
    trace("subscribe", "sanitizerEnableDomain(resource, launch, synchronize)");
    if ((r = g.san.sanitizerEnableDomain(1, g.sub, ARGUS_SAN_DOMAIN_RESOURCE)) != 0 ||
        (r = g.san.sanitizerEnableDomain(1, g.sub, ARGUS_SAN_DOMAIN_LAUNCH)) != 0 ||
        (r = g.san.sanitizerEnableDomain(1, g.sub, ARGUS_SAN_DOMAIN_SYNCHRONIZE)) != 0) {
        problem(1, "sanitizerEnableDomain failed: %s (%d); nothing is instrumented", san_str(r),
                r);
        return -1;
    }
    trace("subscribe", "subscribed");
    return 0;
}

static int open_driver(void)
{
    const char *lib = getenv("ARGUS_PCMAP_CUDA_LIB");
    void *h = dlopen(lib && lib[0] ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h != NULL)
        *(void **)&g.get_global = dlsym(h, "cuModuleGetGlobal_v2");
    if (g.get_global == NULL) {
        problem(1, "cannot resolve cuModuleGetGlobal_v2 in %s: %s; set ARGUS_PCMAP_CUDA_LIB",
                lib && lib[0] ? lib : "libcuda.so.1", h ? "no such symbol" : dlerror());
        return -1;
    }
    /* The handle stays open: the driver is loaded for the process's life
     * anyway (it loaded this library). */
    trace("init", "driver resolved; waiting for module loads and launches");
    return 0;
}

static void start(void)
{
    trace_open();
    const char *out = getenv("ARGUS_PCMAP_OUT");
    if (out == NULL || out[0] == '\0' || strlen(out) >= sizeof g.out) {
        trace("init", "ARGUS_PCMAP_OUT unset or too long: nothing is instrumented");
        return; /* not asked: silent, nothing touched */
    }
    snprintf(g.out, sizeof g.out, "%s", out);
    if (argus_pcmap_new(&g.map) != 0) {
        fprintf(stderr, "argus-pcmap: out of memory; nothing is instrumented\n");
        return;
    }
    g.started = 1;
    const char *patch = getenv("ARGUS_PCMAP_PATCH");
    if (patch != NULL && patch[0] != '\0') {
        snprintf(g.patch, sizeof g.patch, "%s", patch);
    } else {
        Dl_info di;
        if (dladdr((void *)start, &di) != 0 && di.dli_fname != NULL) {
            const char *slash = strrchr(di.dli_fname, '/');
            int n = slash ? (int)(slash - di.dli_fname) : 1;
            snprintf(g.patch, sizeof g.patch, "%.*s/argus_pcmap_patch.fatbin", n,
                     slash ? di.dli_fname : ".");
        }
    }
    FILE *pf = fopen(g.patch, "rb");
    if (pf == NULL) {
        problem(1,
                "the patch %s cannot be opened: build argus_pcmap_patch (nvcc) or set "
                "ARGUS_PCMAP_PATCH to argus_pcmap_patch.fatbin",
                g.patch);
        return;
    }
    fclose(pf);
    const char *tc = getenv("ARGUS_PCMAP_TABLE");
    g.table_cap = 65536;
    if (tc != NULL && tc[0] != '\0') {
        char *end;
        unsigned long v = strtoul(tc, &end, 10);
        if (*end != '\0' || v < 64 || v > (1ul << 24) || (v & (v - 1)) != 0) {
            problem(1, "ARGUS_PCMAP_TABLE=%s: must be a power of two from 64 to 16777216", tc);
            return;
        }
        g.table_cap = (uint32_t)v;
    }
    const char *lw = getenv("ARGUS_PCMAP_LOCK_WAIT");
    if (lw != NULL && lw[0] != '\0') {
        char *end;
        long v = strtol(lw, &end, 10);
        if (*end != '\0' || v < 1 || v > 600) {
            problem(1, "ARGUS_PCMAP_LOCK_WAIT=%s: must be whole seconds from 1 to 600", lw);
            return;
        }
        lock_wait_s = (int)v;
    }
    const char *rp = getenv("ARGUS_PCMAP_REGISTRY");
    if (rp != NULL && rp[0] != '\0') {
        char msg[1024];
        if (argus_registry_load(rp, &g.reg_env, msg, sizeof msg) != 0) {
            problem(1, "ARGUS_PCMAP_REGISTRY: %s", msg);
            return;
        }
    }
    if (open_sanitizer() != 0 || open_driver() != 0)
        return;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The driver's entry (CUDA_INJECTION64_PATH): 1, as CUPTI's convention. */
EXPORT int InitializeInjection(void)
{
    trace("init", "InitializeInjection (the driver's cuInit loaded this library)");
    pthread_once(&once, start);
    return 1;
}

__attribute__((constructor)) static void on_load(void)
{
    pthread_once(&once, start);
    trace("init", "constructor done");
}

/* ---- modules ------------------------------------------------------------- */

static module_rec *find_module(CUmodule m)
{
    for (size_t i = 0; i < g.n_mods; i++)
        if (g.mods[i].module == m)
            return &g.mods[i];
    return NULL;
}

static int has_descriptor(const char *img, size_t len)
{
    static const char sym[] = ARGUS_DESC_SYMBOL;
    return img != NULL && memmem(img, len, sym, sizeof sym) != NULL; /* with its NUL */
}

/* A module going away: its record is dropped, so that a new module at the
 * same handle is not taken for it. */
static void module_unloading(const argus_san_module_data *d)
{
    module_rec *mr = find_module(d->module);
    if (mr == NULL)
        return;
    trace("module", "module %p unloading", (void *)d->module);
    if (g.launch.active && g.launch.mod == mr)
        return; /* its launch is not collected yet: the record is still needed */
    argus_cubin_free(&mr->cubin);
    argus_registry_free(mr->reg);
    free(mr->fns);
    module_rec *last = &g.mods[g.n_mods - 1];
    if (g.launch.active && g.launch.mod == last)
        g.launch.mod = mr;
    *mr = *last;
    g.n_mods--;
}

static void module_loaded(const argus_san_module_data *d)
{
    if (!has_descriptor(d->cubin, d->cubin_size)) {
        trace("module", "module %p loaded (%zu bytes): no %s, left alone", (void *)d->module,
              d->cubin_size, ARGUS_DESC_SYMBOL);
        return; /* not instrumented: left alone */
    }
    trace("module", "module %p loaded (%zu bytes): instrumented, parsing", (void *)d->module,
          d->cubin_size);
    if (g.n_mods == MAX_MODULES) {
        problem(0, "more than %d instrumented modules: the later ones are not mapped",
                MAX_MODULES);
        return;
    }
    char hash[ARGUS_HASH_HEX], msg[1024];
    argus_sha256_hex(d->cubin, d->cubin_size, hash);
    module_rec *mr = &g.mods[g.n_mods];
    memset(mr, 0, sizeof(*mr));
    mr->module = d->module;
    mr->ctx = d->context;
    if (argus_pcmap_module(g.map, hash, &mr->map_module) != 0) {
        problem(1, "out of memory");
        return;
    }
    if (argus_cubin_parse(d->cubin, d->cubin_size, "the module's cubin", &mr->cubin, msg,
                          sizeof msg) == 0)
        mr->parsed = 1;
    else
        problem(0, "%s: PCs of this module are kept as absolute addresses", msg);
    if (argus_registry_find_embedded(d->cubin, d->cubin_size, "the module's cubin", &mr->reg, msg,
                                     sizeof msg) != 0)
        mr->reg = NULL;
    size_t c = 0;
    while (c < g.n_ctx && g.patched_ctx[c] != d->context)
        c++;
    argus_san_result r;
    if (c == g.n_ctx) {
        trace("patch", "sanitizerAddPatchesFromFile(%s, ctx %p)", g.patch, (void *)d->context);
        r = g.san.sanitizerAddPatchesFromFile(g.patch, d->context);
        trace("patch", "sanitizerAddPatchesFromFile returned %d", r);
        if (r != ARGUS_SAN_SUCCESS) {
            if (r == ARGUS_SAN_ERROR_NOT_COMPATIBLE || r == ARGUS_SAN_ERROR_INVALID_DEVICE ||
                r == ARGUS_SAN_ERROR_NOT_SUPPORTED)
                problem(1,
                        "unsupported GPU: the patch %s (built for sm_90) cannot be loaded on this "
                        "device: %s (%d); rebuild it for this GPU (CMake "
                        "ARGUS_PCMAP_ARCH)",
                        g.patch, san_str(r), r);
            else
                problem(1, "sanitizerAddPatchesFromFile(%s) failed: %s (%d)", g.patch,
                        san_str(r), r);
            argus_cubin_free(&mr->cubin);
            argus_registry_free(mr->reg);
            return;
        }
        if (g.n_ctx < MAX_CTX)
            g.patched_ctx[g.n_ctx++] = d->context;
    }
    static const struct {
        int id;
        const char *cb;
    } patches[] = {
#define ARGUS_X_PATCH(name, id, cb, str) {id, cb},
        ARGUS_SAN_PATCHES(ARGUS_X_PATCH)
#undef ARGUS_X_PATCH
    };
    trace("patch", "sanitizerPatchInstructions x %zu", sizeof patches / sizeof patches[0]);
    for (size_t i = 0; i < sizeof patches / sizeof patches[0]; i++) {
        r = g.san.sanitizerPatchInstructions(patches[i].id, d->module, patches[i].cb);
        if (r != ARGUS_SAN_SUCCESS) {
            problem(1, "sanitizerPatchInstructions(%s) failed: %s (%d): is %s the argus-pcmap patch?",
                    patches[i].cb, san_str(r), r, g.patch);
            return;
        }
    }
    trace("patch", "sanitizerPatchModule(%p)", (void *)d->module);
    if ((r = g.san.sanitizerPatchModule(d->module)) != ARGUS_SAN_SUCCESS) {
        problem(1, "sanitizerPatchModule failed: %s (%d)", san_str(r), r);
        return;
    }
    trace("patch", "module %p patched", (void *)d->module);
    g.n_mods++;
}

/* The device address of every function of the cubin that the Sanitizer
 * can place (kernels at least; a callee's "$KERNEL$NAME" copy where it is
 * loaded as a function of its own). */
static void resolve_functions(module_rec *mr)
{
    mr->resolved = 1;
    if (!mr->parsed || mr->cubin.nfn == 0)
        return;
    mr->fns = calloc(mr->cubin.nfn, sizeof(*mr->fns));
    if (mr->fns == NULL)
        return;
    /* Each function as the Sanitizer places it; a callee's copy inside a
     * kernel's section ("$KERNEL$NAME", a local symbol) that it does not
     * place (on the H200 every PC of a __noinline__ function came back in
     * its kernel) at its offset from that kernel's start. */
    for (size_t i = 0; i < mr->cubin.nfn; i++) {
        uint64_t pc = 0, size = 0;
        if (g.san.sanitizerGetFunctionPcAndSize(mr->module, mr->cubin.fn[i].name, &pc, &size) ==
                ARGUS_SAN_SUCCESS &&
            size != 0)
            mr->fns[mr->nfns++] = (fn_range){mr->cubin.fn[i].name, pc, size};
    }
    size_t placed = mr->nfns;
    for (size_t i = 0; i < mr->cubin.nfn; i++) {
        const argus_cubin_func *f = &mr->cubin.fn[i];
        if (f->entry || f->kernel < 0 || (size_t)f->kernel >= mr->cubin.nfn || f->hi <= f->lo)
            continue;
        const argus_cubin_func *k = &mr->cubin.fn[f->kernel];
        size_t j, kj = placed;
        for (j = 0; j < placed && mr->fns[j].name != f->name; j++)
            if (mr->fns[j].name == k->name)
                kj = j;
        if (j < placed || kj == placed)
            continue; /* placed by the Sanitizer, or its kernel is not */
        mr->fns[mr->nfns++] = (fn_range){f->name, mr->fns[kj].pc + (f->lo - k->lo), f->hi - f->lo};
        trace("resolve", "%s placed at its kernel's start + 0x%llx (the Sanitizer does not place it)",
              f->name, (unsigned long long)(f->lo - k->lo));
    }
}

static const fn_range *function_of(const module_rec *mr, uint64_t pc)
{
    const fn_range *best = NULL;
    for (size_t i = 0; i < mr->nfns; i++)
        if (pc >= mr->fns[i].pc && pc - mr->fns[i].pc < mr->fns[i].size &&
            (best == NULL || mr->fns[i].size < best->size))
            best = &mr->fns[i];
    return best;
}

/* ---- launches ------------------------------------------------------------- */

static void release_launch(launch_rec *l)
{
    void *bufs[] = {l->dev, l->warps, l->table, l->paths, l->ring};
    for (size_t i = 0; i < 5; i++)
        if (bufs[i] != NULL)
            g.san.sanitizerFree(l->ctx, bufs[i]);
    memset(l, 0, sizeof(*l));
}

static int alloc0(launch_rec *l, void **p, size_t bytes)
{
    argus_san_result r = g.san.sanitizerAlloc(l->ctx, p, bytes);
    if (r == ARGUS_SAN_SUCCESS)
        r = g.san.sanitizerMemset(*p, 0, bytes, l->hstream);
    if (r != ARGUS_SAN_SUCCESS) {
        problem(0, "sanitizerAlloc/Memset of %zu bytes failed: %s (%d): the launch is not mapped",
                bytes, san_str(r), r);
        return -1;
    }
    return 0;
}

static void launch_begin(const argus_san_launch_data *d)
{
    module_rec *mr = find_module(d->module);
    trace("launch", "LAUNCH_BEGIN %.200s (module %p%s)", d->function_name ? d->function_name : "?",
          (void *)d->module, mr ? "" : ", not instrumented");
    if (mr == NULL)
        return;
    if (g.launch.active) {
        /* Launches are collected one at a time, at the synchronisation
         * that follows them: a second launch before the program
         * synchronises is not mapped. */
        problem(0, "kernel %s was launched before the program synchronised with the one being mapped: it is not mapped",
                d->function_name ? d->function_name : "?");
        return;
    }
    if (!mr->resolved) {
        trace("launch", "sanitizerGetFunctionPcAndSize x %zu", mr->cubin.nfn);
        resolve_functions(mr);
    }
    launch_rec *l = &g.launch;
    memset(l, 0, sizeof(*l));
    l->mod = mr;
    l->hstream = d->hstream;
    l->tid = tid_now();
    l->ctx = d->context;
    snprintf(l->info.kernel, sizeof l->info.kernel, "%s",
             d->function_name ? d->function_name : "?");
    l->info.module = mr->map_module;
    memcpy(l->info.grid, d->grid, sizeof l->info.grid);
    memcpy(l->info.block, d->block, sizeof l->info.block);
    uint64_t threads = (uint64_t)d->block[0] * d->block[1] * d->block[2];
    uint64_t ctas = (uint64_t)d->grid[0] * d->grid[1] * d->grid[2];
    uint32_t wpc = (uint32_t)((threads + 31) / 32);
    if (ctas * wpc > (1u << 24) || wpc == 0) {
        problem(0, "kernel %s: %llu warps is past the map's limit (2^24): not mapped",
                l->info.kernel, (unsigned long long)(ctas * wpc));
        return;
    }
    uint32_t nwarps = (uint32_t)(ctas * wpc);
    if (mr->desc == 0) {
        size_t bytes = 0;
        CUdeviceptr addr = 0;
        trace("launch", "cuModuleGetGlobal(%s) (a driver call inside the launch callback)",
              ARGUS_DESC_SYMBOL);
        int rc = (int)g.get_global(&addr, &bytes, d->module, ARGUS_DESC_SYMBOL);
        trace("launch", "cuModuleGetGlobal returned %d", rc);
        mr->desc = (uint64_t)addr;
        if (rc != 0 || bytes < sizeof(argus_device_desc)) {
            problem(0, "cuModuleGetGlobal(%s) failed (CUresult %d): kernel %s is not mapped",
                    ARGUS_DESC_SYMBOL, rc, l->info.kernel);
            mr->desc = 0;
            return;
        }
    }
    argus_device_desc desc;
    trace("launch", "sanitizerMemcpyDeviceToHost(descriptor, stream %p): waits for the stream's "
                    "earlier work", (void *)d->hstream);
    argus_san_result r = g.san.sanitizerMemcpyDeviceToHost(&desc, (void *)(uintptr_t)mr->desc,
                                                           sizeof desc, d->hstream);
    trace("launch", "descriptor read (%d): %s", r,
          r == 0 && desc.magic == ARGUS_BUF_MAGIC && desc.slots ? "armed by the program" : "unarmed");
    if (r != ARGUS_SAN_SUCCESS) {
        problem(0, "reading %s failed: %s (%d): kernel %s is not mapped", ARGUS_DESC_SYMBOL,
                san_str(r), r, l->info.kernel);
        return;
    }
    if (desc.magic != ARGUS_BUF_MAGIC || desc.slots == 0) {
        /* Not armed: a ring of one record per warp makes the markers store. */
        size_t bytes = (size_t)nwarps * (ARGUS_SLOT_HEADER_BYTES + 8u);
        if (alloc0(l, &l->ring, bytes) != 0) {
            release_launch(l);
            return;
        }
        desc = (argus_device_desc){(uint64_t)(uintptr_t)l->ring, nwarps, 0, wpc, ARGUS_BUF_MAGIC};
        /* Stream-ordered before the kernel; the call returns once the
         * source is staged, so nothing here waits for the GPU. */
        trace("launch", "arming: sanitizerMemcpyHostToDeviceAsync(descriptor, %u warps)", nwarps);
        r = g.san.sanitizerMemcpyHostToDeviceAsync((void *)(uintptr_t)mr->desc, &desc,
                                                   sizeof desc, d->hstream);
        if (r != ARGUS_SAN_SUCCESS) {
            problem(0, "arming kernel %s failed: %s (%d): not mapped", l->info.kernel,
                    san_str(r), r);
            release_launch(l);
            return;
        }
        l->armed_by_tool = 1;
    }
    argus_pcmap_dev *h = &l->host;
    h->magic = ARGUS_PCMAP_MAGIC;
    h->version = ARGUS_PCMAP_DEV_VERSION;
    h->rec_lo = desc.slots;
    h->slot_bytes = ARGUS_SLOT_HEADER_BYTES + 8u * (desc.cap_mask + 1u);
    h->rec_hi = desc.slots + (uint64_t)desc.nslots * h->slot_bytes;
    h->nwarps = nwarps;
    h->warps_per_cta = wpc;
    h->table_cap = g.table_cap;
    h->paths_cap = 4096;
    trace("launch", "sanitizerAlloc + Memset of the tables (%u warps, %u entries)", nwarps,
          h->table_cap);
    if (alloc0(l, &l->warps, (size_t)nwarps * sizeof(argus_pcmap_warp)) != 0 ||
        alloc0(l, &l->table, (size_t)h->table_cap * sizeof(argus_pcmap_entry)) != 0 ||
        alloc0(l, &l->paths, (size_t)h->paths_cap * sizeof(argus_pcmap_pathent)) != 0 ||
        alloc0(l, &l->dev, sizeof(*h)) != 0) {
        release_launch(l);
        return;
    }
    h->warps = (uint64_t)(uintptr_t)l->warps;
    h->table = (uint64_t)(uintptr_t)l->table;
    h->paths = (uint64_t)(uintptr_t)l->paths;
    r = g.san.sanitizerMemcpyHostToDeviceAsync(l->dev, h, sizeof(*h), d->hstream);
    if (r == ARGUS_SAN_SUCCESS)
        r = g.san.sanitizerSetLaunchCallbackData(d->hlaunch, d->function, d->hstream, l->dev);
    trace("launch", "tables handed to the launch (%d)", r);
    if (r != ARGUS_SAN_SUCCESS) {
        problem(0, "handing the tables to kernel %s failed: %s (%d): not mapped",
                l->info.kernel, san_str(r), r);
        release_launch(l);
        return;
    }
    l->active = 1;
}

/* The IDs of path key (outermost first) from the path table, or
 * (size_t)-1 when a link is missing or the depths do not chain. */
static size_t path_ids(const argus_pcmap_pathent *t, uint32_t cap, uint64_t key, uint32_t *ids)
{
    uint32_t rev[ARGUS_PCMAP_DEPTH], depth = 0;
    size_t n = 0;
    while (key != 0) {
        const argus_pcmap_pathent *e = NULL;
        uint32_t i = (uint32_t)key & (cap - 1u);
        for (uint32_t k = 0; k < cap && t[i].key != 0; k++, i = (i + 1u) & (cap - 1u))
            if (t[i].key == key) {
                e = &t[i];
                break;
            }
        if (e == NULL || n == ARGUS_PCMAP_DEPTH || (n == 0 ? e->depth == 0 : e->depth != depth - n))
            return (size_t)-1;
        if (n == 0)
            depth = e->depth;
        rev[n++] = e->id;
        key = e->parent;
    }
    if (n != depth)
        return (size_t)-1;
    for (size_t i = 0; i < n; i++)
        ids[i] = rev[n - 1 - i];
    return n;
}

/* The launch's tables, read back at a synchronisation of its stream or
 * context (or an explicit flush): the kernel is done, so the copies on its
 * stream do not wait for it. */
static void collect(const char *why)
{
    launch_rec *l = &g.launch;
    argus_pcmap_dev *h = &l->host;
    trace("collect", "kernel %s at %s: sanitizerMemcpyDeviceToHost of the tables", l->info.kernel,
          why);
    argus_pcmap_entry *tab = calloc(h->table_cap, sizeof(*tab));
    argus_pcmap_pathent *paths = calloc(h->paths_cap, sizeof(*paths));
    argus_san_result r = g.san.sanitizerMemcpyDeviceToHost(h, l->dev, sizeof(*h), l->hstream);
    if (r == ARGUS_SAN_SUCCESS && tab && paths)
        r = g.san.sanitizerMemcpyDeviceToHost(tab, l->table, h->table_cap * sizeof(*tab),
                                              l->hstream);
    if (r == ARGUS_SAN_SUCCESS && tab && paths)
        r = g.san.sanitizerMemcpyDeviceToHost(paths, l->paths, h->paths_cap * sizeof(*paths),
                                              l->hstream);
    if (l->armed_by_tool && l->mod->desc != 0) {
        argus_device_desc zero;
        memset(&zero, 0, sizeof zero);
        trace("collect", "disarming: sanitizerMemcpyHostToDeviceAsync(descriptor)");
        if (g.san.sanitizerMemcpyHostToDeviceAsync((void *)(uintptr_t)l->mod->desc, &zero,
                                                   sizeof zero, l->hstream) != ARGUS_SAN_SUCCESS)
            problem(0, "disarming kernel %s failed: later launches of its module may record",
                    l->info.kernel);
    }
    if (r != ARGUS_SAN_SUCCESS || tab == NULL || paths == NULL) {
        problem(0, "collecting kernel %s's map failed: %s: its counts are lost", l->info.kernel,
                r != ARGUS_SAN_SUCCESS ? san_str(r) : "out of memory");
        free(tab);
        free(paths);
        release_launch(l);
        return;
    }
    l->info.armed_by_tool = l->armed_by_tool;
    l->info.markers = h->markers;
    l->info.dropped = h->dropped;
    l->info.paths_dropped = h->paths_dropped;
    l->info.depth_overflow = h->depth_overflow;
    l->info.bad_end = h->bad_end;
    l->info.bad_warp = h->bad_warp;
    if (h->dropped)
        problem(0, "kernel %s: %u executions did not fit the count table (%u entries): raise "
                   "ARGUS_PCMAP_TABLE",
                l->info.kernel, h->dropped, h->table_cap);
    if (h->paths_dropped || h->depth_overflow)
        problem(0, "kernel %s: %u region paths lost and %u regions nested deeper than %u: their "
                   "code is counted under an enclosing region",
                l->info.kernel, h->paths_dropped, h->depth_overflow, ARGUS_PCMAP_DEPTH);
    if (h->bad_end || h->bad_warp)
        problem(0, "kernel %s: %u region ends that closed no open region, %u callbacks from "
                   "warps outside the grid: the markers are unbalanced",
                l->info.kernel, h->bad_end, h->bad_warp);
    trace("collect", "kernel %s: %u markers, %u dropped; adding its counts", l->info.kernel,
          h->markers, h->dropped);
    argus_pcmap_add_launch(g.map, &l->info);
    const argus_registry *reg = l->mod->reg ? l->mod->reg : g.reg_env;
    char msg[512];
    uint64_t unnamed = 0;
    for (uint32_t i = 0; i < h->table_cap; i++) {
        const argus_pcmap_entry *e = &tab[i];
        if (e->key == 0 || e->count == 0)
            continue;
        uint32_t ids[ARGUS_PCMAP_DEPTH];
        size_t depth = e->path == 0 ? 0 : path_ids(paths, h->paths_cap, e->path, ids);
        if (argus_pcmap_key(e->pc, e->path, e->iter1, e->role) != e->key ||
            depth == (size_t)-1) {
            unnamed += e->count;
            continue;
        }
        size_t region;
        const fn_range *fn = function_of(l->mod, e->pc);
        char role[16];
        const char *rname = e->role ? argus__name(reg, e->role, role, sizeof role) : "";
        if (argus_pcmap_region_of(g.map, ids, depth, reg, &region) != 0 ||
            argus_pcmap_add(g.map, l->mod->map_module, fn ? fn->name : NULL,
                            fn ? e->pc - fn->pc : e->pc, (int64_t)e->iter1 - 1, rname,
                            kind_name(e->kind), region, e->count, msg, sizeof msg) != 0) {
            problem(0, "kernel %s: %s", l->info.kernel, msg);
            break;
        }
    }
    if (unnamed)
        problem(0, "kernel %s: %llu executions whose region path could not be rebuilt were left "
                   "out",
                l->info.kernel, (unsigned long long)unnamed);
    free(tab);
    free(paths);
    release_launch(l);
    trace("collect", "done");
}

static void launch_end(const argus_san_launch_data *d)
{
    launch_rec *l = &g.launch;
    int ours = l->active && find_module(d->module) == l->mod;
    trace("launch", "LAUNCH_END %.200s%s", d->function_name ? d->function_name : "?",
          ours ? ": its tables are read at the next synchronisation" : "");
    if (ours)
        l->ended = 1;
}

static void synchronized(uint32_t cbid, const argus_san_sync_data *d)
{
    launch_rec *l = &g.launch;
    int ctx = cbid == ARGUS_SAN_CBID_CONTEXT_SYNCHRONIZED;
    /* Not before the launch's end, unless on its own thread (which is past
     * it: a driver that sends no LAUNCH_END does not lose the launch). */
    int match = l->active && (l->ended || tid_now() == l->tid) &&
                (ctx ? d->context == NULL || d->context == l->ctx : d->hstream == l->hstream);
    trace("sync", "%s synchronised (ctx %p, stream %p)%s", ctx ? "context" : "stream",
          (void *)d->context, (void *)d->hstream, match ? ": collecting" : "");
    if (match)
        collect(ctx ? "a context synchronisation" : "a stream synchronisation");
}

/* A thread inside one of this tool's callbacks: a callback that comes in
 * on it again (a Sanitizer or driver call of the tool's that fires one,
 * such as a lazily loaded module's load inside cuModuleGetGlobal) is
 * skipped, not waited for: the lock is not recursive and its holder is this
 * very thread. */
static __thread int in_callback;


static int handled(int domain, uint32_t cbid)
{
    switch (domain) {
    case ARGUS_SAN_DOMAIN_RESOURCE:
        return cbid == ARGUS_SAN_CBID_MODULE_LOADED || cbid == ARGUS_SAN_CBID_MODULE_UNLOAD_STARTING;
    case ARGUS_SAN_DOMAIN_LAUNCH:
        return cbid == ARGUS_SAN_CBID_LAUNCH_BEGIN || cbid == ARGUS_SAN_CBID_LAUNCH_END;
    case ARGUS_SAN_DOMAIN_SYNCHRONIZE:
        return cbid == ARGUS_SAN_CBID_STREAM_SYNCHRONIZED ||
               cbid == ARGUS_SAN_CBID_CONTEXT_SYNCHRONIZED;
    default:
        return 0;
    }
}

/* 0 with the lock held, -1 when it was not had in `wait_s` seconds (said;
 * domain -1: the flush). */
static int lock_bounded(int domain, uint32_t cbid, int wait_s)
{
    if (pthread_mutex_trylock(&g.mu) == 0)
        return 0;
    for (int waited = 1; waited <= wait_s; waited++) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 1;
        if (pthread_mutex_timedlock(&g.mu, &dl) == 0)
            return 0;
        const char *st = g.step;
        if (domain < 0)
            trace("lock", "the flush waited %d s for the lock held by tid %ld in step %s", waited,
                  g.step_tid, st ? st : "?");
        else
            trace("lock", "callback %d/%u waited %d s for the lock held by tid %ld in step %s",
                  domain, cbid, waited, g.step_tid, st ? st : "?");
    }
    if (domain >= 0)
        __atomic_store_n(&g.lock_gave_up, 1, __ATOMIC_RELAXED);
    return -1;
}

static void callback(void *ud, int domain, uint32_t cbid, const void *data)
{
    (void)ud;
    if (!handled(domain, cbid)) {
        /* No lock, nothing touched; one nested in the tool's own call is
         * traced: before the lock was taken for these too, it was the
         * self-deadlock's candidate (session 8; the lead's probe). */
        if (in_callback) {
            const char *st = g.step;
            trace("reenter", "callback %d/%u (not handled) came in inside step %s: passed", domain,
                  cbid, st ? st : "?");
        }
        return;
    }
    if (in_callback) {
        const char *st = g.step;
        trace("reenter", "callback %d/%u came in inside step %s of this thread: skipped", domain,
              cbid, st ? st : "?");
        __atomic_store_n(&g.reentered, 1, __ATOMIC_RELAXED);
        return;
    }
    in_callback = 1;
    if (lock_bounded(domain, cbid, LOCK_WAIT_S) != 0) {
        in_callback = 0;
        return;
    }
    g.step_tid = tid_now();
    if (g.started && !g.dead) {
        if (domain == ARGUS_SAN_DOMAIN_RESOURCE && cbid == ARGUS_SAN_CBID_MODULE_LOADED)
            module_loaded((const argus_san_module_data *)data);
        else if (domain == ARGUS_SAN_DOMAIN_RESOURCE &&
                 cbid == ARGUS_SAN_CBID_MODULE_UNLOAD_STARTING)
            module_unloading((const argus_san_module_data *)data);
        else if (domain == ARGUS_SAN_DOMAIN_LAUNCH && cbid == ARGUS_SAN_CBID_LAUNCH_BEGIN)
            launch_begin((const argus_san_launch_data *)data);
        else if (domain == ARGUS_SAN_DOMAIN_LAUNCH && cbid == ARGUS_SAN_CBID_LAUNCH_END)
            launch_end((const argus_san_launch_data *)data);
        else if (domain == ARGUS_SAN_DOMAIN_SYNCHRONIZE)
            synchronized(cbid, (const argus_san_sync_data *)data);
    }
    g.step = NULL;
    g.step_tid = 0;
    pthread_mutex_unlock(&g.mu);
    in_callback = 0;
}

/* Writes the map; a launch not collected yet is collected first when the
 * Sanitizer may still be called (an explicit flush, not the destructor).
 * 0, -1 (not written, said) or -2 (the lock was not had, said). */
static int flush_map(int may_collect)
{
    /* A callback stuck on another thread (in a driver call) must not hang
     * the program's exit too: the map is then not written, and that said. */
    if (lock_bounded(-1, 0, LOCK_WAIT_S) != 0) {
        if (g.started)
            fprintf(stderr, "argus-pcmap: the tool's lock was held for %d s by a callback stuck "
                            "in step %s: the map %s is not written (ARGUS_PCMAP_LOG=stderr "
                            "shows the steps)\n",
                    LOCK_WAIT_S, g.step ? g.step : "?", g.out);
        return -2;
    }
    g.step_tid = tid_now();
    int rc = 0;
    if (g.started && g.map != NULL) {
        char msg[1024];
        trace("flush", "writing the map (%zu launches mapped)", g.map->n_launches);
        if (g.launch.active && may_collect && !g.dead)
            collect("the flush");
        if (g.launch.active)
            argus_pcmap_problem(g.map, "kernel %s was not synchronised by the program before the "
                                       "map was written: its counts are not in",
                                g.launch.info.kernel);
        if (__atomic_load_n(&g.lock_gave_up, __ATOMIC_RELAXED))
            argus_pcmap_problem(g.map, "a callback waited %d s for the tool's lock and gave up: "
                                       "an event is missing (ARGUS_PCMAP_LOG says which)",
                                LOCK_WAIT_S);
        if (__atomic_load_n(&g.reentered, __ATOMIC_RELAXED))
            argus_pcmap_problem(g.map, "a callback came in inside another on the same thread and "
                                       "was skipped (ARGUS_PCMAP_LOG says which)");
        if (g.map->n_launches == 0 && !g.dead)
            argus_pcmap_problem(g.map, "no launch of an instrumented kernel (built with "
                                       "-DARGUS_ENABLE) was mapped");
        trace("write", "%s", g.out);
        if (argus_pcmap_write(g.map, g.out, msg, sizeof msg) != 0) {
            fprintf(stderr, "argus-pcmap: %s\n", msg);
            trace("write", "failed: %s", msg);
            rc = -1;
        } else {
            trace("write", "done");
        }
    }
    g.step = NULL;
    g.step_tid = 0;
    pthread_mutex_unlock(&g.mu);
    return rc;
}

/* Writes the map now (also done at exit); 0 or -1 (said on stderr). */
EXPORT int argus_pcmap_tool_flush(void)
{
    return flush_map(1) == 0 ? 0 : -1;
}

/* At exit the Sanitizer library, opened after this one, has already run its
 * own destructors, so it is not called again: only this library's memory
 * is released. */
__attribute__((destructor)) static void on_unload(void)
{
    trace("exit", "the library's destructor");
    if (flush_map(0) == -2) {
        /* A callback still holds the lock: its memory stays (the process
         * is ending), rather than a wait for ever. */
        trace("exit", "the lock is still held: the tool's memory is left to the exit");
        return;
    }
    pthread_mutex_lock(&g.mu);
    g.dead = 1;
    for (size_t i = 0; i < g.n_mods; i++) {
        argus_cubin_free(&g.mods[i].cubin);
        argus_registry_free(g.mods[i].reg);
        free(g.mods[i].fns);
    }
    g.n_mods = 0;
    argus_registry_free(g.reg_env);
    g.reg_env = NULL;
    argus_pcmap_free(g.map);
    g.map = NULL;
    g.started = 0;
    pthread_mutex_unlock(&g.mu);
    trace("exit", "done");
    if (trace_fd >= 0) {
        close(trace_fd);
        trace_fd = -1;
    }
}
