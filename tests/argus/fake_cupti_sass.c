/*
 * A fake CUPTI for argus-sass's tests (ctest argus_sass*): the entry points
 * libargus_sass.so calls, with the CUDA 13.0 signatures (the headers are
 * included, so a signature that drifts fails to compile), over a model of
 * the GPU instead of one. The test program (sass_prog.c) is the "driver":
 * it loads the injection library as cuInit would (fake_sass_driver_init),
 * fires context creation, module loads and launches at the subscriber, and
 * destroys the context.
 *
 * The model of a launch: every 16-byte instruction of the launched
 * function (its size from the real cubin's symbol table, argus_cubin_parse)
 * gets one record; an instruction in the loop [LO, HI] executes TRIP times
 * per warp, one up to EXIT once per warp, one after EXIT never, with all 32
 * lanes on (FAKE_SASS_MODEL="LO:HI:EXIT:TRIP", offsets in hex, worked out
 * by the test from the cubin's SASS listing). smsp__sass_inst_executed is
 * the warp count, smsp__sass_thread_inst_executed 32 per warp instruction;
 * any other metric name is "not a metric of the chip".
 *
 * Environment:
 *   FAKE_SASS_MODEL   the loop (above); unset: every instruction once per warp
 *   FAKE_SASS_FAIL=FN:CODE  FN (a cuptiSassMetrics* entry point, or
 *                     cuptiSubscribe) returns CUptiResult CODE (35:
 *                     CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, 27: not supported,
 *                     39: another subscriber)
 *   FAKE_SASS_CRC_OFF=1  the records' cubinCrc is not cuptiGetCubinCrc's low
 *                     half (the collector then matches modules by name)
 *   FAKE_SASS_DROP=N  cuptiSassMetricsDisable reports N dropped records
 * Built twice: libfake_cupti_sass.so, and with FAKE_SASS_OLD the same
 * without the SASS Metrics entry points (a CUPTI older than CUDA 12.2).
 */
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/shim.h"
#include "fake_cupti_sass.h"

#define EXPORT __attribute__((visibility("default")))

#define ID_INST 0x1001u
#define ID_THREAD 0x1002u

static struct {
    CUpti_CallbackFunc cb;
    void *ud;
    int subscribed;
    int enabled_res[8], enabled_drv;
    int configured, on;
    uint64_t ids[16];
    size_t nids;
    struct {
        uint32_t crc;
        argus_cubin cub;
    } mods[8];
    size_t nmods;
    /* records collected since the last flush */
    struct rec {
        uint32_t crc;
        char fn[256];
        uint32_t pc;
        uint64_t id, value;
    } *recs;
    size_t nrecs, caprecs;
} fk;

static uint64_t fnv(const void *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

static CUptiResult injected(const char *name)
{
    const char *f = getenv("FAKE_SASS_FAIL");
    size_t n = strlen(name);
    if (f != NULL && strncmp(f, name, n) == 0 && f[n] == ':')
        return (CUptiResult)atoi(f + n + 1);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud)
{
    CUptiResult r = injected("cuptiSubscribe");
    if (r != CUPTI_SUCCESS)
        return r;
    if (fk.subscribed)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    fk.cb = cb;
    fk.ud = ud;
    fk.subscribed = 1;
    *s = (CUpti_SubscriberHandle)&fk;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s)
{
    (void)s;
    fk.subscribed = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle s,
                                       CUpti_CallbackDomain d, CUpti_CallbackId id)
{
    (void)s;
    if (d == CUPTI_CB_DOMAIN_RESOURCE && id < 8)
        fk.enabled_res[id] = (int)enable;
    if (d == CUPTI_CB_DOMAIN_DRIVER_API && id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
        fk.enabled_drv = (int)enable;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle s,
                                     CUpti_CallbackDomain d)
{
    (void)enable;
    (void)s;
    (void)d;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **str)
{
    switch (r) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: *str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"; break;
    case CUPTI_ERROR_NOT_SUPPORTED: *str = "CUPTI_ERROR_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_INVALID_METRIC_NAME: *str = "CUPTI_ERROR_INVALID_METRIC_NAME"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
        break;
    default: *str = "CUPTI_ERROR_UNKNOWN"; break;
    }
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetDeviceId(CUcontext ctx, uint32_t *dev)
{
    *dev = (uint32_t)(uintptr_t)ctx - 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetCubinCrc(CUpti_GetCubinCrcParams *p)
{
    p->cubinCrc = fnv(p->cubin, p->cubinSize);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *p)
{
    p->pChipName = "GH100";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *p)
{
    (void)p;
    return CUPTI_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    return CUDA_SUCCESS;
}

/* FAKE_SASS_READ_ONCE=1: the H200's CUPTI (driver 580, CUDA 13.0; session
 * 9): once a kernel's records have been read, its later launches add none. */
static char read_fns[16][256];
static size_t n_read_fns;

static int read_once_seen(const char *fn)
{
    const char *e = getenv("FAKE_SASS_READ_ONCE");
    if (e == NULL || strcmp(e, "1") != 0)
        return 0;
    for (size_t i = 0; i < n_read_fns; i++)
        if (strcmp(read_fns[i], fn) == 0)
            return 1;
    return 0;
}

__attribute__((unused)) static void read_once_mark(const char *fn)
{
    for (size_t i = 0; i < n_read_fns; i++)
        if (strcmp(read_fns[i], fn) == 0)
            return;
    if (n_read_fns < 16)
        snprintf(read_fns[n_read_fns++], sizeof read_fns[0], "%s", fn);
}

#ifndef FAKE_SASS_OLD
EXPORT CUptiResult cuptiSassMetricsGetProperties(CUpti_SassMetrics_GetProperties_Params *p)
{
    CUptiResult r = injected("cuptiSassMetricsGetProperties");
    if (r != CUPTI_SUCCESS)
        return r;
    if (strcmp(p->pMetricName, "smsp__sass_inst_executed") == 0)
        p->metric.metricId = ID_INST;
    else if (strcmp(p->pMetricName, "smsp__sass_thread_inst_executed") == 0)
        p->metric.metricId = ID_THREAD;
    else
        return CUPTI_ERROR_INVALID_METRIC_NAME;
    p->metric.pMetricName = p->pMetricName;
    p->metric.pMetricDescription = "fake";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSassMetricsGetNumOfMetrics(CUpti_SassMetrics_GetNumOfMetrics_Params *p)
{
    p->numOfMetrics = 2;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSassMetricsGetMetrics(CUpti_SassMetrics_GetMetrics_Params *p)
{
    if (p->numOfMetrics < 2)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->pMetricsList[0] = (CUpti_SassMetrics_MetricDetails){ID_INST, "smsp__sass_inst_executed", ""};
    p->pMetricsList[1] =
        (CUpti_SassMetrics_MetricDetails){ID_THREAD, "smsp__sass_thread_inst_executed", ""};
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSassMetricsSetConfig(CUpti_SassMetricsSetConfig_Params *p)
{
    CUptiResult r = injected("cuptiSassMetricsSetConfig");
    if (r != CUPTI_SUCCESS)
        return r;
    if (fk.configured)
        return CUPTI_ERROR_INVALID_OPERATION;
    fk.nids = p->numOfMetricConfig < 16 ? p->numOfMetricConfig : 16;
    for (size_t i = 0; i < fk.nids; i++) {
        if (p->pConfigs[i].outputGranularity != CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU)
            return CUPTI_ERROR_INVALID_PARAMETER;
        fk.ids[i] = p->pConfigs[i].metricId;
    }
    fk.configured = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSassMetricsUnsetConfig(CUpti_SassMetricsUnsetConfig_Params *p)
{
    (void)p;
    if (!fk.configured)
        return CUPTI_ERROR_INVALID_OPERATION;
    fk.configured = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSassMetricsEnable(CUpti_SassMetricsEnable_Params *p)
{
    (void)p;
    CUptiResult r = injected("cuptiSassMetricsEnable");
    if (r != CUPTI_SUCCESS)
        return r;
    if (!fk.configured || fk.on)
        return CUPTI_ERROR_INVALID_OPERATION;
    fk.on = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSassMetricsDisable(CUpti_SassMetricsDisable_Params *p)
{
    if (!fk.on)
        return CUPTI_ERROR_INVALID_OPERATION;
    fk.on = 0;
    const char *d = getenv("FAKE_SASS_DROP");
    p->numOfDroppedRecords = fk.nrecs + (d ? strtoull(d, NULL, 10) : 0);
    fk.nrecs = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult
cuptiSassMetricsGetDataProperties(CUpti_SassMetricsGetDataProperties_Params *p)
{
    CUptiResult r = injected("cuptiSassMetricsGetDataProperties");
    if (r != CUPTI_SUCCESS)
        return r;
    if (!fk.on)
        return CUPTI_ERROR_INVALID_OPERATION;
    p->numOfPatchedInstructionRecords = fk.nrecs;
    p->numOfInstances = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSassMetricsFlushData(CUpti_SassMetricsFlushData_Params *p)
{
    if (!fk.on)
        return CUPTI_ERROR_INVALID_OPERATION;
    if (p->numOfPatchedInstructionRecords < fk.nrecs || p->numOfInstances != 1)
        return CUPTI_ERROR_INVALID_PARAMETER;
    /* One record per instruction and metric, its one instance (GPU
     * granularity) the metric's ID and value. */
    for (size_t i = 0; i < fk.nrecs; i++) {
        CUpti_SassMetrics_Data *d = &p->pMetricsData[i];
        d->cubinCrc = fk.recs[i].crc;
        d->functionIndex = 0;
        d->functionName = strdup(fk.recs[i].fn);
        d->pcOffset = fk.recs[i].pc;
        d->pInstanceValues[0].metricId = fk.recs[i].id;
        d->pInstanceValues[0].value = fk.recs[i].value;
        read_once_mark(fk.recs[i].fn);
    }
    fk.nrecs = 0;
    return CUPTI_SUCCESS;
}
#endif

/* ---- the driver's side --------------------------------------------------- */

int fake_sass_driver_init(void)
{
    const char *lib = getenv("CUDA_INJECTION64_PATH");
    if (lib == NULL || !lib[0])
        return 0;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "fake driver: %s\n", dlerror());
        return -1;
    }
    int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
    return init ? init() : -1;
}

static void res_cb(CUpti_CallbackId id, CUcontext ctx, void *desc)
{
    if (!fk.subscribed || id >= 8 || !fk.enabled_res[id])
        return;
    CUpti_ResourceData rd;
    memset(&rd, 0, sizeof rd);
    rd.context = ctx;
    rd.resourceDescriptor = desc;
    fk.cb(fk.ud, CUPTI_CB_DOMAIN_RESOURCE, id, &rd);
}

void fake_sass_ctx_create(int device)
{
    res_cb(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, (CUcontext)(uintptr_t)(device + 1), NULL);
}

void fake_sass_ctx_destroy(int device)
{
    res_cb(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, (CUcontext)(uintptr_t)(device + 1),
           NULL);
}

int fake_sass_module_load(int device, const void *cubin, size_t len)
{
    if (fk.nmods == 8)
        return -1;
    char msg[256];
    if (argus_cubin_parse(cubin, len, "fake", &fk.mods[fk.nmods].cub, msg, sizeof msg) != 0) {
        fprintf(stderr, "fake driver: %s\n", msg);
        return -1;
    }
    fk.mods[fk.nmods].crc = (uint32_t)fnv(cubin, len);
    if (getenv("FAKE_SASS_CRC_OFF"))
        fk.mods[fk.nmods].crc ^= 0x5a5a5a5au;
    CUpti_ModuleResourceData m = {(uint32_t)fk.nmods + 1, len, cubin};
    fk.nmods++;
    res_cb(CUPTI_CBID_RESOURCE_MODULE_LOADED, (CUcontext)(uintptr_t)(device + 1), &m);
    return 0;
}

static void add_rec(uint32_t crc, const char *fn, uint32_t pc, uint64_t inst)
{
    for (size_t m = 0; m < fk.nids; m++) {
        if (fk.nrecs == fk.caprecs) {
            fk.caprecs = fk.caprecs ? 2 * fk.caprecs : 256;
            fk.recs = realloc(fk.recs, fk.caprecs * sizeof *fk.recs);
        }
        struct rec *r = &fk.recs[fk.nrecs++];
        r->crc = crc;
        snprintf(r->fn, sizeof r->fn, "%s", fn);
        r->pc = pc;
        r->id = fk.ids[m];
        r->value = fk.ids[m] == ID_INST ? inst : inst * 32;
    }
}

int fake_sass_launch(int device, const char *kernel, const unsigned grid[3],
                     const unsigned block[3])
{
    CUcontext ctx = (CUcontext)(uintptr_t)(device + 1);
    cuLaunchKernel_params p;
    memset(&p, 0, sizeof p);
    p.gridDimX = grid[0], p.gridDimY = grid[1], p.gridDimZ = grid[2];
    p.blockDimX = block[0], p.blockDimY = block[1], p.blockDimZ = block[2];
    CUpti_CallbackData cd;
    memset(&cd, 0, sizeof cd);
    cd.context = ctx;
    cd.symbolName = kernel;
    cd.functionName = "cuLaunchKernel";
    cd.functionParams = &p;
    if (fk.subscribed && fk.enabled_drv) {
        cd.callbackSite = CUPTI_API_ENTER;
        fk.cb(fk.ud, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cd);
    }
    /* The "kernel": the model's records, when collection is on. */
    if (fk.on && !read_once_seen(kernel)) {
        uint64_t lo = 0, hi = 0, ex = UINT64_MAX, trip = 1;
        const char *m = getenv("FAKE_SASS_MODEL");
        if (m != NULL)
            sscanf(m, "%lx:%lx:%lx:%lu", &lo, &hi, &ex, &trip);
        uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
        uint64_t warps = (uint64_t)grid[0] * grid[1] * grid[2] * ((threads + 31) / 32);
        int found = 0;
        for (size_t i = 0; i < fk.nmods && !found; i++)
            for (size_t f = 0; f < fk.mods[i].cub.nfn; f++) {
                const argus_cubin_func *fn = &fk.mods[i].cub.fn[f];
                if (strcmp(fn->name, kernel) != 0)
                    continue;
                for (uint64_t pc = 0; pc < fn->hi - fn->lo; pc += 16) {
                    uint64_t n = m == NULL              ? warps
                                 : pc >= lo && pc <= hi ? warps * trip
                                 : pc <= ex             ? warps
                                                        : 0;
                    add_rec(fk.mods[i].crc, kernel, (uint32_t)pc, n);
                }
                found = 1;
                break;
            }
        if (!found)
            return -1;
    }
    if (fk.subscribed && fk.enabled_drv) {
        cd.callbackSite = CUPTI_API_EXIT;
        fk.cb(fk.ud, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cd);
    }
    return 0;
}
