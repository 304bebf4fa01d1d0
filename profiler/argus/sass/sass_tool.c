/*
 * libargus_sass.so: argus-sass's collector inside the target process
 * (docs/argus-backends.md, "argus-sass"). argus-sass loads it as the CUDA
 * injection library (CUDA_INJECTION64_PATH: the driver calls
 * InitializeInjection during cuInit, in whatever way the program reached
 * the driver: a static cudart, a dlopen'd libcuda as PyTorch does, a
 * child process), rather than with LD_PRELOAD, whose constructor runs
 * before the driver exists and in every process of a pipeline whether it
 * uses CUDA or not; argus-pcmap and argus-shim's recorder load the same way.
 *
 * What it does:
 *   - opens CUPTI with dlopen (ARGUS_SASS_CUPTI, else libcupti.so.13 on the
 *     loader's path, else the toolkit's places), so that a CUPTI without
 *     the SASS Metrics API is named with the version it needs instead of
 *     failing to load;
 *   - subscribes to CUPTI's callbacks: at each context creation on the
 *     device asked for (ARGUS_SASS_DEVICE, a CUDA device index; unset: the
 *     first context's), looks the metrics up for the chip
 *     (cuptiSassMetricsGetProperties), sets the configuration
 *     (cuptiSassMetricsSetConfig, GPU granularity) and enables collection
 *     with lazy patching (a kernel is patched at its first launch);
 *   - at each module load: the cubin's SHA-256 (what argus-pcmap names a
 *     module by) and its CUPTI CRC (cuptiGetCubinCrc, low 32 bits; and the
 *     names of its functions, for a CRC that does not match);
 *   - at the end of each kernel launch call: waits for the context
 *     (cuCtxSynchronize: the collector serialises kernels, as its recipe
 *     says), flushes CUPTI's records (cuptiSassMetricsFlushData) and adds
 *     them per (function, cubin) and PC, with the launch's totals; then
 *     rewrites its file (after each of the first 16 launches, then at most
 *     once a second), so that a program killed later keeps what was
 *     written;
 *   - at the context's destruction: flushes, disables and unsets the
 *     configuration; then, and at exit, writes ARGUS_SASS_DIR/sass.PID.json
 *     (argus.sassmetrics v1, include/argus/sass.h) atomically.
 *
 * Inside someone else's program: never exit(), no signal, starts no thread
 * of its own, keeps no descriptor open (each write opens and closes its
 * file); does nothing without ARGUS_SASS_DIR; silent unless ARGUS_SASS_LOG
 * is set (then one "argus-sass: ..." line per event on stderr); every
 * failure is a sentence in the file's problems, and collection stops while
 * the program goes on (fail-open).
 *
 * Tested on: the fake CUPTI of tests/argus/fake_cupti_sass.c (ctest
 * argus_sass), compiled against the CUDA 13.0 headers so that a signature
 * that drifts fails to build. On the H200 (driver 580, CUDA 13.0):
 * scripts/gpu/argus16_sass.sh, not run there yet. Unverified until then:
 * that the records' cubinCrc is the low half of cuptiGetCubinCrc's value
 * (else modules are matched by function name, and the file says so), that
 * cuCtxSynchronize may be called from a launch's exit callback with SASS
 * metrics enabled, and that CUPTI starts no thread for this API.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include "argus/sass.h"
#include "argus/shim.h"
#include "argus/workspace.h"

#define EXPORT __attribute__((visibility("default")))
EXPORT int InitializeInjection(void);

/* The CUPTI entry points used, each typed from the header's declaration. */
#define SASS_CUPTI_BASE(X)                                                                         \
    X(cuptiSubscribe)                                                                              \
    X(cuptiUnsubscribe)                                                                            \
    X(cuptiEnableCallback)                                                                         \
    X(cuptiEnableDomain)                                                                           \
    X(cuptiGetResultString)                                                                        \
    X(cuptiGetDeviceId)                                                                            \
    X(cuptiGetCubinCrc)                                                                            \
    X(cuptiDeviceGetChipName)                                                                      \
    X(cuptiProfilerInitialize)
#define SASS_CUPTI_SASS(X)                                                                         \
    X(cuptiSassMetricsGetProperties)                                                               \
    X(cuptiSassMetricsGetNumOfMetrics)                                                             \
    X(cuptiSassMetricsGetMetrics)                                                                  \
    X(cuptiSassMetricsSetConfig)                                                                   \
    X(cuptiSassMetricsUnsetConfig)                                                                 \
    X(cuptiSassMetricsEnable)                                                                      \
    X(cuptiSassMetricsDisable)                                                                     \
    X(cuptiSassMetricsGetDataProperties)                                                           \
    X(cuptiSassMetricsFlushData)

static struct {
#define X_PTR(name) __typeof__(name) *name;
    SASS_CUPTI_BASE(X_PTR) SASS_CUPTI_SASS(X_PTR)
#undef X_PTR
    CUresult (*ctx_sync)(void);
} fn;

#define NMOD 256
#define MAX_LAUNCH_LIST 65536
static struct {
    pthread_mutex_t mu;
    int on, log, stopped, written_once;
    char dir[PATH_MAX];
    char cupti_path[PATH_MAX];
    int want_device; /* -1: the first context's */
    int device;      /* configured device, -1 none yet */
    CUcontext ctx;   /* the context collection is enabled in */
    CUpti_SubscriberHandle sub;
    argus_sass *s;
    uint64_t launches;
    time_t last_write;
    /* ARGUS_SASS_FLUSH: when CUPTI's records are read. launch (default):
     * at each launch's end (after cuCtxSynchronize), per-launch totals;
     * sync: at the program's own synchronisations (cuCtxSynchronize(_v2),
     * cuStreamSynchronize, cuEventSynchronize) and at the context's
     * destruction, the launches in between counted by name. On the H200
     * (driver 580, CUDA 13.0; session 9, calls 4-7) CUPTI counts a kernel
     * until its records are first read: a later launch gives none, however
     * the read is timed (disabling and enabling collection between, eager
     * patching, or reusing the last record counts did not help), so only
     * launches before the first read are counted; launch_end says so. */
    enum { FLUSH_LAUNCH, FLUSH_SYNC } flush_mode;
    int configure_later; /* SetConfig said CUPTI_ERROR_INVALID_CONTEXT at creation */
    struct {
        char name[256];
        uint64_t n;
    } pending[64]; /* sync: launches since the last flush, by function */
    size_t npending;
    uint64_t ids[ARGUS_SASS_MAX_METRICS];
    struct {
        uint32_t crc;
        char sha[65];
        argus_cubin cub;
        int parsed;
    } mods[NMOD];
    size_t nmods;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .want_device = -1, .device = -1};

static __thread int in_cb;

/* sync: one more launch of `name` before the next flush. */
static void pending_add(const char *name)
{
    size_t i = 0;
    while (i < g.npending && strcmp(g.pending[i].name, name) != 0)
        i++;
    if (i == g.npending) {
        if (g.npending == sizeof g.pending / sizeof g.pending[0])
            return;
        snprintf(g.pending[g.npending++].name, sizeof g.pending[0].name, "%s", name);
    }
    g.pending[i].n++;
}

/* The launches a flush's records of `name` stand for: 1 for a flush at a
 * launch's end, the pending count (taken) for one at a synchronisation. */
static uint64_t pending_take(const char *name, int at_launch)
{
    if (at_launch)
        return 1;
    for (size_t i = 0; i < g.npending; i++)
        if (strcmp(g.pending[i].name, name) == 0) {
            uint64_t n = g.pending[i].n;
            g.pending[i].n = 0;
            return n;
        }
    return 0;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    if (!g.log)
        return;
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    fprintf(stderr, "argus-sass: %s\n", b);
}

static const char *res_str(CUptiResult r)
{
    const char *s = NULL;
    if (fn.cuptiGetResultString == NULL || fn.cuptiGetResultString(r, &s) != CUPTI_SUCCESS ||
        s == NULL)
        return "unknown CUPTI error";
    return s;
}

/* A CUPTI failure as a sentence with its fix; collection stops. */
static void fail_cupti(const char *call, CUptiResult r)
{
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
        r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES)
        argus_sass_problem(g.s,
                           "%s failed with CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (%s): the GPU's "
                           "performance counters are restricted to administrators "
                           "(ERR_NVGPUCTRPERM); run as root, or let every user profile: put "
                           "'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in a file of "
                           "/etc/modprobe.d/ and reload the nvidia module (or reboot); see "
                           "https://developer.nvidia.com/ERR_NVGPUCTRPERM",
                           call, res_str(r));
    else if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
        argus_sass_problem(g.s,
                           "%s failed: another CUPTI tool is attached (nsys, ncu, argus-shim or "
                           "a profiler inside the program): CUPTI takes one subscriber per "
                           "process; run the program under argus-sass alone",
                           call);
    else if (r == CUPTI_ERROR_NOT_SUPPORTED || r == CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED ||
             r == CUPTI_ERROR_NOT_COMPATIBLE)
        argus_sass_problem(g.s,
                           "%s failed with %s: this GPU, driver or CUPTI does not support SASS "
                           "metrics; it needs a GPU of compute capability 7.0 or newer, CUPTI "
                           "from CUDA 12.2 or newer and a driver of R535 or newer (built and "
                           "tested against CUDA 13.0, driver 580), not under MIG, vGPU without "
                           "profiling or WSL",
                           call, res_str(r));
    else
        argus_sass_problem(g.s, "%s failed: %s (CUptiResult %d); nothing more is collected",
                           call, res_str(r), (int)r);
    say("%s", g.s->problems[g.s->n_problems - 1]);
    g.stopped = 1;
}

static void write_file(void)
{
    char path[PATH_MAX + 64], msg[1024];
    snprintf(path, sizeof path, "%s/sass.%ld.json", g.dir, (long)getpid());
    if (argus_sass_write(g.s, path, msg, sizeof msg) != 0)
        say("%s", msg);
    g.written_once = 1;
}

/* ---- CUPTI's library -------------------------------------------------------- */

static void *open_cupti(void)
{
    const char *env = getenv("ARGUS_SASS_CUPTI");
    if (env != NULL && env[0]) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        snprintf(g.cupti_path, sizeof g.cupti_path, "%s", env);
        if (h == NULL)
            argus_sass_problem(g.s,
                               "ARGUS_SASS_CUPTI=%s cannot be loaded (%s): point it at CUDA 13's "
                               "libcupti.so.13 or unset it",
                               env, dlerror());
        return h;
    }
    static const char *const places[] = {
        "libcupti.so.13",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
        "/usr/local/cuda/lib64/libcupti.so.13",
        "/usr/local/cuda-13.0/extras/CUPTI/lib64/libcupti.so.13",
        "/usr/local/cuda-13.0/lib/libcupti.so.13",
        "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti.so.13"};
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        void *h = dlopen(places[i], RTLD_NOW | RTLD_LOCAL);
        if (h != NULL) {
            snprintf(g.cupti_path, sizeof g.cupti_path, "%s", places[i]);
            return h;
        }
    }
    argus_sass_problem(g.s,
                       "CUPTI is missing: no libcupti.so.13 on the loader's path nor under "
                       "/usr/local/cuda/extras/CUPTI/lib64, /usr/local/cuda/lib64 or "
                       "/usr/local/cuda-13.0; install the CUDA 13 toolkit's CUPTI (or pip's "
                       "nvidia-cuda-cupti) and set ARGUS_SASS_CUPTI to its libcupti.so.13");
    return NULL;
}

static int resolve(void *h)
{
#define X_BASE(name)                                                                               \
    if ((fn.name = (__typeof__(name) *)dlsym(h, #name)) == NULL) {                                 \
        argus_sass_problem(g.s,                                                                    \
                           "%s has no " #name ": it is not a CUPTI library (or one older than "    \
                           "CUDA 11.8); point ARGUS_SASS_CUPTI at CUDA 13's libcupti.so.13",       \
                           g.cupti_path);                                                          \
        return -1;                                                                                 \
    }
    SASS_CUPTI_BASE(X_BASE)
#undef X_BASE
#define X_SASS(name)                                                                               \
    if ((fn.name = (__typeof__(name) *)dlsym(h, #name)) == NULL) {                                 \
        argus_sass_problem(g.s,                                                                    \
                           "the CUPTI at %s has no SASS Metrics API (no " #name "): it needs "     \
                           "CUPTI from CUDA 12.2 or newer, with a driver of R535 or newer "        \
                           "(argus-sass is built and tested against CUDA 13.0); point "            \
                           "ARGUS_SASS_CUPTI at a newer libcupti.so",                              \
                           g.cupti_path);                                                          \
        return -1;                                                                                 \
    }
    SASS_CUPTI_SASS(X_SASS)
#undef X_SASS
    return 0;
}

/* cuCtxSynchronize of the driver the program loaded. */
static void resolve_sync(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL) {
        fn.ctx_sync = (CUresult(*)(void))dlsym(h, "cuCtxSynchronize");
        dlclose(h);
    }
    if (fn.ctx_sync == NULL)
        fn.ctx_sync = (CUresult(*)(void))dlsym(RTLD_DEFAULT, "cuCtxSynchronize");
}

/* ---- the callbacks ---------------------------------------------------------- */

static void configure(CUcontext ctx)
{
    uint32_t dev = 0;
    CUptiResult r = fn.cuptiGetDeviceId(ctx, &dev);
    if (r != CUPTI_SUCCESS) {
        fail_cupti("cuptiGetDeviceId", r);
        return;
    }
    if (g.device >= 0 || (g.want_device >= 0 && (uint32_t)g.want_device != dev)) {
        argus_sass_problem(g.s,
                           "a context on device %u was not collected (argus-sass collects one "
                           "device: %d); give --device to choose",
                           dev, g.device >= 0 ? g.device : g.want_device);
        return;
    }
    CUpti_Profiler_Initialize_Params ip = {.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    if ((r = fn.cuptiProfilerInitialize(&ip)) != CUPTI_SUCCESS)
        { fail_cupti("cuptiProfilerInitialize", r); return; }
    CUpti_Device_GetChipName_Params cp = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cp.deviceIndex = dev;
    if ((r = fn.cuptiDeviceGetChipName(&cp)) != CUPTI_SUCCESS)
        { fail_cupti("cuptiDeviceGetChipName", r); return; }
    CUpti_SassMetrics_Config cfg[ARGUS_SASS_MAX_METRICS];
    for (size_t m = 0; m < g.s->n_metrics; m++) {
        CUpti_SassMetrics_GetProperties_Params pp = {
            .structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
        pp.pChipName = cp.pChipName;
        pp.pMetricName = g.s->metrics[m];
        r = fn.cuptiSassMetricsGetProperties(&pp);
        if (r == CUPTI_ERROR_INVALID_METRIC_NAME || r == CUPTI_ERROR_INVALID_PARAMETER) {
            char known[1024] = "";
            CUpti_SassMetrics_GetNumOfMetrics_Params np = {
                .structSize = CUpti_SassMetrics_GetNumOfMetrics_Params_STRUCT_SIZE};
            np.pChipName = cp.pChipName;
            if (fn.cuptiSassMetricsGetNumOfMetrics(&np) == CUPTI_SUCCESS && np.numOfMetrics &&
                np.numOfMetrics < 4096) {
                CUpti_SassMetrics_MetricDetails *d = calloc(np.numOfMetrics, sizeof *d);
                CUpti_SassMetrics_GetMetrics_Params gp = {
                    .structSize = CUpti_SassMetrics_GetMetrics_Params_STRUCT_SIZE};
                gp.pChipName = cp.pChipName;
                gp.numOfMetrics = np.numOfMetrics;
                gp.pMetricsList = d;
                size_t n = 0;
                if (d != NULL && fn.cuptiSassMetricsGetMetrics(&gp) == CUPTI_SUCCESS)
                    for (size_t i = 0; i < np.numOfMetrics && n + 80 < sizeof known; i++)
                        n += (size_t)snprintf(known + n, sizeof known - n, "%s%.70s",
                                              n ? ", " : "", d[i].pMetricName);
                free(d);
            }
            argus_sass_problem(g.s,
                               "the metric %s is not a SASS metric of chip %s "
                               "(cuptiSassMetricsGetProperties: %s); it has: %s",
                               g.s->metrics[m], cp.pChipName ? cp.pChipName : "?", res_str(r),
                               known[0] ? known : "(the list could not be read)");
            g.stopped = 1;
            return;
        }
        if (r != CUPTI_SUCCESS)
            { fail_cupti("cuptiSassMetricsGetProperties", r); return; }
        g.ids[m] = pp.metric.metricId;
        cfg[m].metricId = pp.metric.metricId;
        cfg[m].outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
    }
    CUpti_SassMetricsSetConfig_Params sp = {.structSize = CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
    sp.numOfMetricConfig = g.s->n_metrics;
    sp.pConfigs = cfg;
    sp.deviceIndex = dev;
    if ((r = fn.cuptiSassMetricsSetConfig(&sp)) == CUPTI_ERROR_INVALID_CONTEXT &&
        !g.configure_later) {
        /* Seen on the H200 for a context made with cuCtxCreate, inside its
         * creation callback: configured again at its first launch. */
        g.configure_later = 1;
        say("cuptiSassMetricsSetConfig: CUPTI_ERROR_INVALID_CONTEXT at the context's creation; "
            "again at its first launch");
        return;
    }
    if (r != CUPTI_SUCCESS)
        { fail_cupti("cuptiSassMetricsSetConfig", r); return; }
    CUpti_SassMetricsEnable_Params ep = {.structSize = CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
    ep.ctx = ctx;
    ep.enableLazyPatching = 1;
    if ((r = fn.cuptiSassMetricsEnable(&ep)) != CUPTI_SUCCESS) {
        CUpti_SassMetricsUnsetConfig_Params up = {.structSize = CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE};
        up.deviceIndex = dev;
        fn.cuptiSassMetricsUnsetConfig(&up);
        { fail_cupti("cuptiSassMetricsEnable", r); return; }
    }
    g.device = (int)dev;
    g.ctx = ctx;
    say("collecting %zu SASS metrics on device %u (%s)", g.s->n_metrics, dev,
        cp.pChipName ? cp.pChipName : "?");
}

static void module_loaded(const CUpti_ModuleResourceData *m)
{
    if (m == NULL || m->pCubin == NULL || m->cubinSize == 0 || g.nmods == NMOD)
        return;
    CUpti_GetCubinCrcParams cp = {.size = sizeof cp};
    cp.cubinSize = m->cubinSize;
    cp.cubin = m->pCubin;
    if (fn.cuptiGetCubinCrc(&cp) != CUPTI_SUCCESS)
        cp.cubinCrc = 0;
    g.mods[g.nmods].crc = (uint32_t)cp.cubinCrc;
    argus_sha256_hex(m->pCubin, m->cubinSize, g.mods[g.nmods].sha);
    char msg[256];
    g.mods[g.nmods].parsed = argus_cubin_parse(m->pCubin, m->cubinSize, "the loaded module",
                                               &g.mods[g.nmods].cub, msg, sizeof msg) == 0;
    say("module %u loaded: %zu bytes, sha256 %.12s...", m->moduleId, m->cubinSize,
        g.mods[g.nmods].sha);
    g.nmods++;
}

/* The SHA-256 of the cubin of a record: by CRC, else the one module that
 * has a function of that name. NULL when neither tells. */
static const char *module_sha(uint32_t crc, const char *function)
{
    for (size_t i = 0; i < g.nmods; i++)
        if (g.mods[i].crc == crc)
            return g.mods[i].sha;
    const char *found = NULL;
    for (size_t i = 0; i < g.nmods; i++)
        for (size_t f = 0; g.mods[i].parsed && f < g.mods[i].cub.nfn; f++)
            if (strcmp(g.mods[i].cub.fn[f].name, function) == 0) {
                if (found != NULL && found != g.mods[i].sha)
                    return NULL;
                found = g.mods[i].sha;
            }
    return found;
}

/* Takes CUPTI's records into the collection; l (may be NULL) gets the
 * launch's totals. */
static void flush(CUcontext ctx, argus_sass_launch *l)
{
    CUpti_SassMetricsGetDataProperties_Params dp = {
        .structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
    dp.ctx = ctx;
    CUptiResult r = fn.cuptiSassMetricsGetDataProperties(&dp);
    if (r != CUPTI_SUCCESS)
        { fail_cupti("cuptiSassMetricsGetDataProperties", r); return; }
    if (dp.numOfPatchedInstructionRecords == 0 || dp.numOfInstances == 0)
        return;
    /* Each record's instance array gets room for every metric's instances
     * (the header says "instances per metric"; whether a record holds one
     * metric or all of them is not said), zeroed, and every slot CUPTI
     * filled with a configured metric's ID is read. */
    size_t nr = dp.numOfPatchedInstructionRecords, ni = dp.numOfInstances;
    size_t slots = ni * g.s->n_metrics;
    CUpti_SassMetrics_Data *d = calloc(nr, sizeof *d);
    CUpti_SassMetrics_InstanceValue *v = calloc(nr * slots, sizeof *v);
    if (d == NULL || v == NULL) {
        free(d);
        free(v);
        argus_sass_problem(g.s, "out of memory for %zu SASS records: a launch is missing", nr);
        return;
    }
    for (size_t i = 0; i < nr; i++) {
        d[i].structSize = sizeof d[i];
        d[i].pInstanceValues = v + i * slots;
    }
    CUpti_SassMetricsFlushData_Params fp = {.structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
    fp.ctx = ctx;
    fp.numOfPatchedInstructionRecords = nr;
    fp.numOfInstances = ni;
    fp.pMetricsData = d;
    r = fn.cuptiSassMetricsFlushData(&fp);
    if (r != CUPTI_SUCCESS) {
        free(d);
        free(v);
        { fail_cupti("cuptiSassMetricsFlushData", r); return; }
    }
    size_t unknown = 0, last = (size_t)-1, touched[64], ntouched = 0;
    char msg[512];
    for (size_t i = 0; i < nr; i++) {
        const char *name = d[i].functionName ? d[i].functionName : "(unnamed)";
        size_t k;
        if (last != (size_t)-1 && g.s->kernels[last].crc == d[i].cubinCrc &&
            strcmp(g.s->kernels[last].function, name) == 0)
            k = last;
        else if (argus_sass_kernel_of(g.s, name, d[i].cubinCrc, module_sha(d[i].cubinCrc, name),
                                      &k) != 0)
            continue;
        if (k != last && (l != NULL || g.flush_mode == FLUSH_SYNC)) {
            size_t t = 0;
            while (t < ntouched && touched[t] != k)
                t++;
            if (t == ntouched && ntouched < sizeof touched / sizeof touched[0]) {
                touched[ntouched++] = k;
                g.s->kernels[k].launches += pending_take(name, l != NULL);
            }
        }
        last = k;
        for (size_t j = 0; j < slots; j++) {
            size_t m = 0;
            while (m < g.s->n_metrics && g.ids[m] != d[i].pInstanceValues[j].metricId)
                m++;
            if (m == g.s->n_metrics) {
                /* An unfilled slot past the first ni is not a value. */
                unknown += j < ni;
                continue;
            }
            uint64_t val = d[i].pInstanceValues[j].value;
            if (argus_sass_add(g.s, k, d[i].pcOffset, m, val, msg, sizeof msg) != 0)
                argus_sass_problem(g.s, "%s", msg);
            else if (l != NULL)
                l->totals[m] += val;
        }
        /* CUPTI allocates each record's function name for the caller. */
        free((void *)d[i].functionName);
    }
    if (unknown)
        argus_sass_problem(g.s, "%zu SASS values of metrics not asked for were left out",
                           unknown);
    free(d);
    free(v);
}

static void launch_end(const CUpti_CallbackData *cb, CUpti_CallbackId cbid)
{
    if (g.ctx == NULL || cb->context != g.ctx)
        return;
    argus_sass_launch l;
    memset(&l, 0, sizeof l);
    l.function = (char *)(cb->symbolName ? cb->symbolName : "");
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
        cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
        const cuLaunchKernel_params *p = cb->functionParams;
        l.grid[0] = p->gridDimX, l.grid[1] = p->gridDimY, l.grid[2] = p->gridDimZ;
        l.block[0] = p->blockDimX, l.block[1] = p->blockDimY, l.block[2] = p->blockDimZ;
    } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
               cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
        const cuLaunchKernelEx_params *p = cb->functionParams;
        if (p->config != NULL) {
            l.grid[0] = p->config->gridDimX, l.grid[1] = p->config->gridDimY;
            l.grid[2] = p->config->gridDimZ;
            l.block[0] = p->config->blockDimX, l.block[1] = p->config->blockDimY;
            l.block[2] = p->config->blockDimZ;
        }
    }
    if (g.flush_mode == FLUSH_SYNC) {
        /* Read at the program's next synchronisation. */
        pending_add(l.function);
        g.launches++;
        if (g.s->n_launches < MAX_LAUNCH_LIST)
            argus_sass_add_launch(g.s, &l);
        say("launch %" PRIu64 " of %s: read at the next synchronisation", g.launches,
            l.function);
        return;
    }
    if (fn.ctx_sync == NULL || fn.ctx_sync() != CUDA_SUCCESS) {
        argus_sass_problem(g.s,
                           "cuCtxSynchronize after a launch of %s failed or is missing: its "
                           "counts may be partial",
                           l.function);
    }
    flush(cb->context, &l);
    uint64_t got = 0;
    for (size_t m = 0; m < g.s->n_metrics; m++)
        got += l.totals[m];
    for (size_t k = 0; k < g.s->n_kernels; k++)
        if (strcmp(g.s->kernels[k].function, l.function) == 0) {
            l.crc = g.s->kernels[k].crc;
            if (got == 0 && g.s->kernels[k].launches > 0) {
                /* The H200 (driver 580, CUDA 13.0; session 9, calls 4-7):
                 * once a kernel's records are read, its later launches
                 * give none, whenever the read. */
                argus_sass_problem(g.s,
                                   "a launch of %s after its records were first read gave no "
                                   "SASS records (CUPTI counts a kernel until its first read): "
                                   "its counts hold its first launch only; with "
                                   "ARGUS_SASS_FLUSH=sync the records are read at the "
                                   "program's synchronisations instead, exact for launches "
                                   "before the first one",
                                   l.function);
            }
            break;
        }
    g.launches++;
    if (g.s->n_launches < MAX_LAUNCH_LIST)
        argus_sass_add_launch(g.s, &l);
    else
        argus_sass_problem(g.s,
                           "the launches list keeps the first %d launches; the kernels' per-PC "
                           "counts hold every launch",
                           MAX_LAUNCH_LIST);
    say("launch %" PRIu64 " of %s collected", g.launches, l.function);
    /* The file after each of the first launches, then at most once a
     * second: a program killed later keeps what was written. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (g.launches <= 16 || now.tv_sec > g.last_write) {
        write_file();
        g.last_write = now.tv_sec;
    }
}

static void stop(CUcontext ctx)
{
    if (g.ctx == NULL || ctx != g.ctx)
        return;
    if (!g.stopped)
        flush(ctx, NULL);
    CUpti_SassMetricsDisable_Params dp = {.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
    dp.ctx = ctx;
    if (fn.cuptiSassMetricsDisable(&dp) == CUPTI_SUCCESS && dp.numOfDroppedRecords > 0)
        argus_sass_problem(g.s, "CUPTI dropped %zu SASS records at the end of collection",
                           dp.numOfDroppedRecords);
    CUpti_SassMetricsUnsetConfig_Params up = {.structSize = CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE};
    up.deviceIndex = (uint32_t)g.device;
    fn.cuptiSassMetricsUnsetConfig(&up);
    g.ctx = NULL;
    g.stopped = 1;
}

static void CUPTIAPI on_cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                           const void *data)
{
    (void)ud;
    if (in_cb)
        return;
    in_cb = 1;
    pthread_mutex_lock(&g.mu);
    if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
        const CUpti_ResourceData *rd = data;
        if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && !g.stopped)
            configure(rd->context);
        else if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED)
            module_loaded(rd->resourceDescriptor);
        else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
            stop(rd->context);
            write_file();
        }
    } else if (dom == CUPTI_CB_DOMAIN_DRIVER_API && !g.stopped) {
        const CUpti_CallbackData *cb = data;
        if (cb->callbackSite == CUPTI_API_ENTER) {
            if (g.configure_later && g.ctx == NULL && cb->context != NULL) {
                configure(cb->context);
                g.configure_later = 0;
            }
        } else if (cb->callbackSite != CUPTI_API_EXIT)
            ;
        else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize ||
                 cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2 ||
                 cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize ||
                 cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz ||
                 cbid == CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize) {
            if (g.flush_mode == FLUSH_SYNC && g.ctx != NULL && cb->context == g.ctx) {
                flush(g.ctx, NULL);
                write_file();
            }
        } else
            launch_end(cb, cbid);
    }
    pthread_mutex_unlock(&g.mu);
    in_cb = 0;
}

/* At exit only the file is written: every launch was flushed at its end,
 * and the driver may already be torn down (no CUPTI call is safe then). */
static void at_exit(void)
{
    pthread_mutex_lock(&g.mu);
    if (g.on) {
        write_file();
        g.on = 0;
    }
    pthread_mutex_unlock(&g.mu);
}

EXPORT int InitializeInjection(void)
{
    const char *dir = getenv("ARGUS_SASS_DIR");
    pthread_mutex_lock(&g.mu);
    if (g.on || dir == NULL || dir[0] == '\0' || strlen(dir) >= sizeof g.dir) {
        pthread_mutex_unlock(&g.mu);
        return 1;
    }
    snprintf(g.dir, sizeof g.dir, "%s", dir);
    const char *lg = getenv("ARGUS_SASS_LOG");
    g.log = lg != NULL && lg[0] && strcmp(lg, "0") != 0;
    const char *fm = getenv("ARGUS_SASS_FLUSH");
    g.flush_mode = FLUSH_LAUNCH;
    if (fm != NULL && strcmp(fm, "sync") == 0)
        g.flush_mode = FLUSH_SYNC;
    const char *dv = getenv("ARGUS_SASS_DEVICE");
    if (dv != NULL && dv[0])
        g.want_device = atoi(dv);
    char msg[512];
    if (argus_sass_new(&g.s, getenv("ARGUS_SASS_METRICS"), msg, sizeof msg) != 0 &&
        argus_sass_new(&g.s, NULL, msg, sizeof msg) != 0) {
        pthread_mutex_unlock(&g.mu);
        return 1;
    }
    g.on = 1;
    atexit(at_exit);
    void *h = open_cupti();
    if (h == NULL || resolve(h) != 0) {
        g.stopped = 1;
        say("%s", g.s->problems[g.s->n_problems - 1]);
        write_file();
        pthread_mutex_unlock(&g.mu);
        return 1;
    }
    resolve_sync();
    CUptiResult r = fn.cuptiSubscribe(&g.sub, on_cb, NULL);
    if (r != CUPTI_SUCCESS) {
        fail_cupti("cuptiSubscribe", r);
        write_file();
        pthread_mutex_unlock(&g.mu);
        return 1;
    }
    static const CUpti_CallbackId res[] = {CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
                                           CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                                           CUPTI_CBID_RESOURCE_MODULE_LOADED};
    static const CUpti_CallbackId drv[] = {
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
    for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof res / sizeof res[0]; i++)
        r = fn.cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE, res[i]);
    static const CUpti_CallbackId syncs[] = {
        CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize};
    for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof drv / sizeof drv[0]; i++)
        r = fn.cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, drv[i]);
    for (size_t i = 0; g.flush_mode == FLUSH_SYNC && r == CUPTI_SUCCESS &&
                       i < sizeof syncs / sizeof syncs[0]; i++)
        r = fn.cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, syncs[i]);
    if (r != CUPTI_SUCCESS) {
        fail_cupti("cuptiEnableCallback", r);
        write_file();
    }
    say("loaded %s; metrics %s", g.cupti_path,
        getenv("ARGUS_SASS_METRICS") ? getenv("ARGUS_SASS_METRICS")
                                     : ARGUS_SASS_DEFAULT_METRICS);
    pthread_mutex_unlock(&g.mu);
    return 1;
}
