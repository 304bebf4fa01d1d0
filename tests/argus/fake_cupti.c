/*
 * The smallest fake CUPTI that libargus_inject.so runs on without a GPU:
 * built as libcupti.so.13 in a folder of its own and put in front of the
 * real one with LD_LIBRARY_PATH (the recorder has a RUNPATH, which
 * LD_LIBRARY_PATH overrides).
 *
 * It has the entry points the recorder calls, with the CUDA 13.0
 * signatures (cupti.h is included, so a signature that drifts fails to
 * compile), and behaves as CUPTI does for them: one subscriber, whose
 * driver-API callbacks fire only for the callback IDs it enabled, with a
 * fresh correlation ID per launch; activity buffers asked from the client
 * and handed back full or at cuptiActivityFlushAll, holding
 * CUpti_ActivityKernel10 records with the launch's correlation ID.
 *
 * The test program (shim_prog.c) drives it with fake_cupti_launch() and
 * fake_cupti_graph_launch(), the stand-ins for a kernel launch and a graph
 * launch reaching the driver. Environment:
 *   FAKE_CUPTI_OTHER_SUBSCRIBER=1  cuptiSubscribe fails with
 *       CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another tool holds
 *       CUPTI), as the real one does under nsys or ncu
 *   FAKE_CUPTI_DROPPED=N  cuptiActivityGetNumDroppedRecords reports N once
 *   FAKE_CUPTI_GRID=X,Y,Z FAKE_CUPTI_BLOCK=X,Y,Z FAKE_CUPTI_DSMEM=N  the launch
 *       configuration of every kernel record (unset: zeros, no configuration)
 *   FAKE_CUPTI_DEVICE=NAME FAKE_CUPTI_SMS=N  the device record given when
 *       CUPTI_ACTIVITY_KIND_DEVICE is enabled (default NVIDIA H200, 132 SMs)
 *
 * PC sampling (cupti_pcsampling.h), fed from a recorded sample set rather
 * than a GPU: fake_cupti_context_create() and fake_cupti_module_load(PATH)
 * fire the resource callbacks, fake_cupti_sync() a cuCtxSynchronize exit.
 * While sampling is enabled, each launch of kernel K adds the samples that
 * FAKE_CUPTI_PCS_SAMPLES (a file of lines "K FUNCTION PC R:N [R:N...]",
 * made by hand from a test model) lists for K, with the launch's
 * correlation ID in kernel-serialized mode and 0 in continuous mode;
 * cuptiPCSamplingGetData hands them over at most collectNumPcs at a time.
 * Source lines come from FAKE_CUPTI_NVDISASM, the `nvdisasm -g` listing of
 * the cubin (what NVIDIA's disassembler says the lines are), and the cubin
 * CRC is FNV-1a 64 of the image. FAKE_CUPTI_PCS_ERROR=N makes
 * cuptiPCSamplingEnable fail with CUptiResult N (35: insufficient
 * privileges, 27: not supported), as a locked-down or old system does.
 */
#include <cupti.h>
#include <cupti_pcsampling.h>

#include <stdio.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int fake_cupti_launch(const char *name, uint32_t stream, uint64_t dur_ns);
EXPORT int fake_cupti_graph_launch(const char *name, int n, uint32_t stream, uint64_t dur_ns);

static CUpti_CallbackFunc g_cb;
static void *g_ud;
static int g_subscribed;
static unsigned char g_enabled[1024];
static unsigned char g_res_enabled[64];
static CUpti_BuffersCallbackRequestFunc g_req;
static CUpti_BuffersCallbackCompleteFunc g_done;
static int g_kernels_on;
/* Records of every kind sit in slots of one size, as the walk below steps. */
#define REC_STRIDE                                                             \
    (sizeof(CUpti_ActivityKernel10) > sizeof(CUpti_ActivityDevice5)           \
         ? sizeof(CUpti_ActivityKernel10)                                      \
         : sizeof(CUpti_ActivityDevice5))
static uint8_t *g_buf;
static size_t g_size, g_valid;
static uint32_t g_corr;
/* Starts where the H200's clock was (ns since 1970, beyond a double's
 * 2^53), so that a recording that lost precision shows in the times. */
static uint64_t g_clock = 1796156437637826496ull;
static int g_dropped_told;
/* Kernel names live as long as the process, as CUPTI's own do: a static
 * pool rather than heap copies that nobody frees. */
static char g_names[1 << 16];
static size_t g_names_used;

EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS"
           : result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
               ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
           : result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"
           : result == CUPTI_ERROR_NOT_SUPPORTED           ? "CUPTI_ERROR_NOT_SUPPORTED"
                                                           : "CUPTI_ERROR (fake)";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
    /* A clock that only the fake advances, so that runs are reproducible. */
    *timestamp = g_clock++;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                           CUpti_CallbackFunc callback, void *userdata)
{
    const char *other = getenv("FAKE_CUPTI_OTHER_SUBSCRIBER");
    if ((other && strcmp(other, "1") == 0) || g_subscribed)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    g_cb = callback;
    g_ud = userdata;
    g_subscribed = 1;
    *subscriber = (CUpti_SubscriberHandle)&g_cb;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    (void)subscriber;
    g_subscribed = 0;
    g_cb = NULL;
    memset(g_enabled, 0, sizeof(g_enabled));
    memset(g_res_enabled, 0, sizeof(g_res_enabled));
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (!g_subscribed || subscriber != (CUpti_SubscriberHandle)&g_cb)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid < sizeof(g_res_enabled)) {
        g_res_enabled[cbid] = enable != 0;
        return CUPTI_SUCCESS;
    }
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= sizeof(g_enabled))
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_enabled[cbid] = enable != 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                           CUpti_BuffersCallbackCompleteFunc done)
{
    g_req = req;
    g_done = done;
    return CUPTI_SUCCESS;
}

static uint8_t *record_slot(void);

/* CUPTI gives a device record for each device once the kind is enabled. */
static void device_record(void)
{
    static char name[256];
    const char *n = getenv("FAKE_CUPTI_DEVICE"), *sms = getenv("FAKE_CUPTI_SMS");
    snprintf(name, sizeof(name), "%s", n && n[0] ? n : "NVIDIA H200");
    CUpti_ActivityDevice5 *d = (CUpti_ActivityDevice5 *)record_slot();
    if (d == NULL)
        return;
    memset(d, 0, sizeof(*d));
    d->kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d->name = name;
    d->id = 0;
    d->numMultiprocessors = sms && sms[0] ? (uint32_t)strtoul(sms, NULL, 10) : 132;
    d->computeCapabilityMajor = 9;
    d->computeCapabilityMinor = 0;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if (g_req == NULL)
        return CUPTI_ERROR_NOT_INITIALIZED;
    if (kind == CUPTI_ACTIVITY_KIND_DEVICE) {
        device_record();
        return CUPTI_SUCCESS;
    }
    if (kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        return CUPTI_ERROR_NOT_INITIALIZED;
    g_kernels_on = 1;
    return CUPTI_SUCCESS;
}

static void complete(void)
{
    if (g_buf && g_done) {
        uint8_t *b = g_buf;
        size_t size = g_size, valid = g_valid;
        g_buf = NULL;
        g_valid = g_size = 0;
        g_done(NULL, 0, b, size, valid);
    }
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    complete();
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                                       CUpti_Activity **record)
{
    uint8_t *next = *record == NULL ? buffer : (uint8_t *)*record + REC_STRIDE;
    if (next + REC_STRIDE > buffer + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)next;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                              size_t *dropped)
{
    (void)context;
    (void)streamId;
    const char *n = getenv("FAKE_CUPTI_DROPPED");
    *dropped = n && !g_dropped_told ? strtoul(n, NULL, 10) : 0;
    g_dropped_told = 1;
    return CUPTI_SUCCESS;
}

/* The enter callback of a driver call, when the subscriber enabled it. */
static void api_enter(CUpti_CallbackId cbid, const char *fn, const char *symbol, uint32_t corr)
{
    if (g_cb && g_enabled[cbid]) {
        CUpti_CallbackData d;
        memset(&d, 0, sizeof(d));
        d.callbackSite = CUPTI_API_ENTER;
        d.functionName = fn;
        d.symbolName = symbol;
        d.correlationId = corr;
        g_cb(g_ud, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
    }
}

/* One kernel activity record with correlation ID corr. */
/* The next record's slot in the current buffer (a new one asked for when
 * it is full), or NULL. */
static uint8_t *record_slot(void)
{
    if (g_buf && g_valid + REC_STRIDE > g_size)
        complete();
    if (g_buf == NULL) {
        size_t maxrec = 0;
        g_req(&g_buf, &g_size, &maxrec);
        g_valid = 0;
        if (g_buf == NULL)
            return NULL;
    }
    uint8_t *slot = g_buf + g_valid;
    memset(slot, 0, REC_STRIDE);
    g_valid += REC_STRIDE;
    return slot;
}

/* "X,Y,Z" from the environment into v (zeros when unset or malformed). */
static void env_dims(const char *var, int32_t v[3])
{
    const char *s = getenv(var);
    v[0] = v[1] = v[2] = 0;
    if (s && sscanf(s, "%d,%d,%d", &v[0], &v[1], &v[2]) != 3)
        v[0] = v[1] = v[2] = 0;
}

static int kernel_record(const char *name, uint32_t corr, uint32_t stream, uint64_t dur_ns)
{
    if (!g_kernels_on)
        return 0;
    CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)record_slot();
    if (k == NULL)
        return -1;
    int32_t grid[3], block[3];
    env_dims("FAKE_CUPTI_GRID", grid);
    env_dims("FAKE_CUPTI_BLOCK", block);
    const char *ds = getenv("FAKE_CUPTI_DSMEM");
    k->gridX = grid[0];
    k->gridY = grid[1];
    k->gridZ = grid[2];
    k->blockX = block[0];
    k->blockY = block[1];
    k->blockZ = block[2];
    k->dynamicSharedMemory = ds && ds[0] ? (int32_t)strtol(ds, NULL, 10) : -1;
    size_t len = strlen(name) + 1;
    if (g_names_used + len > sizeof(g_names))
        return -1; /* the slot stays kind 0, which the recorder skips */
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    memcpy(g_names + g_names_used, name, len);
    k->name = g_names + g_names_used;
    g_names_used += len;
    k->correlationId = corr;
    k->streamId = stream;
    k->start = g_clock + 5;
    k->end = k->start + dur_ns;
    g_clock = k->end + 1;
    return 0;
}

static void pcs_launch(const char *name, uint32_t corr);

/* A launch reaching the driver's cuLaunchKernel: the enter callback, then
 * (with kernel activity on) one kernel record. Returns the correlation ID. */
EXPORT int fake_cupti_launch(const char *name, uint32_t stream, uint64_t dur_ns)
{
    uint32_t corr = ++g_corr;
    api_enter(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", name, corr);
    pcs_launch(name, corr);
    return kernel_record(name, corr, stream, dur_ns) == 0 ? (int)corr : -1;
}

/* cuGraphLaunch of a graph of n kernels: one enter callback (no symbol),
 * and n records that all carry the graph launch's correlation ID, as
 * CUPTI's do. */
EXPORT int fake_cupti_graph_launch(const char *name, int n, uint32_t stream, uint64_t dur_ns)
{
    uint32_t corr = ++g_corr;
    api_enter(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", NULL, corr);
    for (int i = 0; i < n; i++)
        if (kernel_record(name, corr, stream, dur_ns) != 0)
            return -1;
    return (int)corr;
}

/* ---- PC sampling --------------------------------------------------------- */

EXPORT void fake_cupti_context_create(void);
EXPORT int fake_cupti_module_load(const char *path);
EXPORT void fake_cupti_sync(void);

/* The stall reasons the fake reports (the names CUPTI uses on sm_90). */
static const struct {
    uint32_t index;
    const char *name;
} k_reasons[] = {
    {1, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
    {2, "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"},
    {3, "smsp__pcsamp_warps_issue_stalled_selected"},
    {7, "smsp__pcsamp_warps_issue_stalled_wait"},
};
#define NREASONS (sizeof(k_reasons) / sizeof(k_reasons[0]))
#define FAKE_CTX ((CUcontext)(uintptr_t)0x1000)

typedef struct pending_pc {
    uint64_t crc, pc;
    char *function;
    uint32_t corr, n;
    CUpti_PCSamplingStallReason st[NREASONS];
} pending_pc;

static int g_pcs_enabled, g_pcs_serialized = 0;
static CUpti_PCSamplingData *g_pcs_buf;
static pending_pc g_pending[4096];
static size_t g_npending;
static uint64_t g_module_crc;

static void resource(CUpti_CallbackId cbid, void *descriptor)
{
    if (g_cb && cbid < sizeof(g_res_enabled) && g_res_enabled[cbid]) {
        CUpti_ResourceData d;
        memset(&d, 0, sizeof(d));
        d.context = FAKE_CTX;
        d.resourceDescriptor = descriptor;
        g_cb(g_ud, CUPTI_CB_DOMAIN_RESOURCE, cbid, &d);
    }
}

EXPORT void fake_cupti_context_create(void)
{
    resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, NULL);
}

static uint64_t fnv64(const void *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

EXPORT int fake_cupti_module_load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    static char img[1 << 20];
    size_t n = fread(img, 1, sizeof(img), f);
    fclose(f);
    g_module_crc = fnv64(img, n);
    CUpti_ModuleResourceData m = {.moduleId = 1, .cubinSize = n, .pCubin = img};
    resource(CUPTI_CBID_RESOURCE_MODULE_LOADED, &m);
    return 0;
}

EXPORT void fake_cupti_sync(void)
{
    if (g_cb && g_enabled[CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize]) {
        CUpti_CallbackData d;
        memset(&d, 0, sizeof(d));
        d.callbackSite = CUPTI_API_EXIT;
        d.functionName = "cuCtxSynchronize";
        d.context = FAKE_CTX;
        g_cb(g_ud, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, &d);
    }
}

/* The samples the set lists for kernel `name`, added once per launch. */
static void pcs_launch(const char *name, uint32_t corr)
{
    const char *path = getenv("FAKE_CUPTI_PCS_SAMPLES");
    if (!g_pcs_enabled || path == NULL)
        return;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        char kernel[256], fn[256];
        int used = 0;
        unsigned long long pc;
        if (line[0] == '#' || sscanf(line, "%255s %255s %lli%n", kernel, fn, &pc, &used) != 3 ||
            strcmp(kernel, name) != 0 || g_npending >= sizeof(g_pending) / sizeof(g_pending[0]))
            continue;
        pending_pc *p = &g_pending[g_npending];
        memset(p, 0, sizeof(*p));
        p->crc = g_module_crc;
        p->pc = pc;
        p->corr = g_pcs_serialized ? corr : 0;
        /* The function name lives as long as the process, like CUPTI's. */
        size_t len = strlen(fn) + 1;
        if (g_names_used + len > sizeof(g_names))
            break;
        memcpy(g_names + g_names_used, fn, len);
        p->function = g_names + g_names_used;
        g_names_used += len;
        const char *q = line + used;
        unsigned r, c;
        int k;
        while (p->n < NREASONS && sscanf(q, " %u:%u%n", &r, &c, &k) == 2) {
            p->st[p->n].pcSamplingStallReasonIndex = r;
            p->st[p->n].samples = c;
            p->n++;
            q += k;
        }
        g_npending++;
    }
    fclose(f);
}

EXPORT CUptiResult CUPTIAPI cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams *p)
{
    if (p == NULL || p->size != CUpti_PCSamplingGetNumStallReasonsParamsSize || p->numStallReasons == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *p->numStallReasons = NREASONS;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiPCSamplingGetStallReasons(CUpti_PCSamplingGetStallReasonsParams *p)
{
    if (p == NULL || p->size != CUpti_PCSamplingGetStallReasonsParamsSize || p->numStallReasons > NREASONS)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < p->numStallReasons; i++) {
        p->stallReasonIndex[i] = k_reasons[i].index;
        snprintf(p->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE, "%s", k_reasons[i].name);
    }
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *p)
{
    if (p == NULL || p->size != CUpti_PCSamplingConfigurationInfoParamsSize || p->ctx != FAKE_CTX)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < p->numAttributes; i++) {
        const CUpti_PCSamplingConfigurationInfo *c = &p->pPCSamplingConfigurationInfo[i];
        switch (c->attributeType) {
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
            if (c->attributeData.samplingPeriodData.samplingPeriod < 5 ||
                c->attributeData.samplingPeriodData.samplingPeriod > 31)
                return CUPTI_ERROR_INVALID_PARAMETER;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
            g_pcs_serialized = c->attributeData.collectionModeData.collectionMode ==
                               CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
            break;
        case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
            g_pcs_buf = c->attributeData.samplingDataBufferData.samplingDataBuffer;
            break;
        default:
            break;
        }
    }
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams *p)
{
    const char *e = getenv("FAKE_CUPTI_PCS_ERROR");
    if (e && e[0])
        return (CUptiResult)atoi(e);
    if (p == NULL || p->size != CUpti_PCSamplingEnableParamsSize || p->ctx != FAKE_CTX || g_pcs_buf == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_pcs_enabled = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams *p)
{
    if (p == NULL || p->size != CUpti_PCSamplingDisableParamsSize)
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_pcs_enabled = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams *p)
{
    if (p == NULL || p->size != CUpti_PCSamplingGetDataParamsSize || p->pcSamplingData == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    CUpti_PCSamplingData *d = p->pcSamplingData;
    size_t n = g_npending < d->collectNumPcs ? g_npending : d->collectNumPcs;
    d->totalSamples = 0;
    d->droppedSamples = 0;
    d->nonUsrKernelsTotalSamples = 0;
    d->hardwareBufferFull = 0;
    for (size_t i = 0; i < n; i++) {
        CUpti_PCSamplingPCData *o = &d->pPcData[i];
        const pending_pc *q = &g_pending[i];
        if (o->stallReasonCount < q->n)
            return CUPTI_ERROR_INVALID_PARAMETER;
        o->cubinCrc = q->crc;
        o->pcOffset = q->pc;
        o->functionName = q->function;
        o->correlationId = q->corr;
        o->stallReasonCount = q->n;
        for (uint32_t k = 0; k < q->n; k++) {
            o->stallReason[k] = q->st[k];
            d->totalSamples += q->st[k].samples;
        }
    }
    memmove(g_pending, g_pending + n, (g_npending - n) * sizeof(pending_pc));
    g_npending -= n;
    d->totalNumPcs = n;
    d->remainingNumPcs = g_npending;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetCubinCrc(CUpti_GetCubinCrcParams *p)
{
    if (p == NULL || p->size != CUpti_GetCubinCrcParamsSize || p->cubin == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->cubinCrc = fnv64(p->cubin, p->cubinSize);
    return CUPTI_SUCCESS;
}

/* PC -> line from the nvdisasm -g listing: the function's label gives its
 * start, "//## File "F", line N" the line of the instructions after it. */
EXPORT CUptiResult CUPTIAPI cuptiGetSassToSourceCorrelation(CUpti_GetSassToSourceCorrelationParams *p)
{
    if (p == NULL || p->size != CUpti_GetSassToSourceCorrelationParamsSize || p->cubin == NULL ||
        p->functionName == NULL || p->cubinSize == 0)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const char *path = getenv("FAKE_CUPTI_NVDISASM");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f == NULL)
        return CUPTI_ERROR_UNKNOWN;
    char line[1024], file[1024] = "", want[300];
    snprintf(want, sizeof(want), "%s:", p->functionName);
    long start = -1;
    unsigned cur = 0, found = 0, last = 0;
    char found_file[1024] = "";
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *fl = strstr(line, "//## File \"");
        unsigned off, ln;
        if (fl) {
            const char *q = fl + 11, *e = strchr(q, '"');
            if (e && sscanf(e, "\", line %u", &ln) == 1) {
                snprintf(file, sizeof(file), "%.*s", (int)(e - q), q);
                cur = ln;
            }
        } else if (strcmp(line, want) == 0) {
            start = -2; /* the next instruction's offset is the start */
        } else if (sscanf(line, " /*%x*/", &off) == 1) {
            last = off;
            if (start == -2)
                start = off;
            if (start >= 0 && (uint64_t)off <= (uint64_t)start + p->pcOffset) {
                found = cur;
                snprintf(found_file, sizeof(found_file), "%s", file);
            }
        }
    }
    fclose(f);
    /* A PC past the last instruction is not in the module. */
    if (start < 0 || found == 0 || (uint64_t)start + p->pcOffset >= (uint64_t)last + 16)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const char *slash = strrchr(found_file, '/');
    p->lineNumber = found;
    p->fileName = strdup(slash ? slash + 1 : found_file);
    p->dirName = slash ? strndup(found_file, (size_t)(slash - found_file)) : strdup("");
    return p->fileName && p->dirName ? CUPTI_SUCCESS : CUPTI_ERROR_OUT_OF_MEMORY;
}
