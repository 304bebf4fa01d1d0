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
 */
#include <cupti.h>

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
static CUpti_BuffersCallbackRequestFunc g_req;
static CUpti_BuffersCallbackCompleteFunc g_done;
static int g_kernels_on;
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
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (!g_subscribed || subscriber != (CUpti_SubscriberHandle)&g_cb)
        return CUPTI_ERROR_INVALID_PARAMETER;
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

EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if (kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || g_req == NULL)
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
    uint8_t *next = *record == NULL ? buffer : (uint8_t *)*record + sizeof(CUpti_ActivityKernel10);
    if (next + sizeof(CUpti_ActivityKernel10) > buffer + valid)
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
static int kernel_record(const char *name, uint32_t corr, uint32_t stream, uint64_t dur_ns)
{
    if (!g_kernels_on)
        return 0;
    if (g_buf && g_valid + sizeof(CUpti_ActivityKernel10) > g_size)
        complete();
    if (g_buf == NULL) {
        size_t maxrec = 0;
        g_req(&g_buf, &g_size, &maxrec);
        g_valid = 0;
        if (g_buf == NULL)
            return -1;
    }
    CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)(g_buf + g_valid);
    memset(k, 0, sizeof(*k));
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    size_t len = strlen(name) + 1;
    if (g_names_used + len > sizeof(g_names))
        return -1;
    memcpy(g_names + g_names_used, name, len);
    k->name = g_names + g_names_used;
    g_names_used += len;
    k->correlationId = corr;
    k->streamId = stream;
    k->start = g_clock + 5;
    k->end = k->start + dur_ns;
    g_clock = k->end + 1;
    g_valid += sizeof(*k);
    return 0;
}

/* A launch reaching the driver's cuLaunchKernel: the enter callback, then
 * (with kernel activity on) one kernel record. Returns the correlation ID. */
EXPORT int fake_cupti_launch(const char *name, uint32_t stream, uint64_t dur_ns)
{
    uint32_t corr = ++g_corr;
    api_enter(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", name, corr);
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
