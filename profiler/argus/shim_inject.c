/*
 * libargus_inject.so: argus-shim's recorder, a CUPTI injection library
 * (CUDA_INJECTION64_PATH; the driver calls InitializeInjection during
 * cuInit). It only records, one JSON line per event, into the
 * "argus.shim.events" v1 file (profiler/argus/shim_input.c has the format,
 * docs/argus.md the rules); argus-shim builds the regions from the file
 * afterwards (shim_build.c), so that a recording can be replayed.
 *
 * What it records:
 *   - one CUPTI subscriber (cuptiSubscribe): the enter callback of every
 *     driver kernel launch entry point (cuLaunchKernel, cuLaunchKernelEx,
 *     cuLaunchCooperativeKernel and their _ptsz forms, which the runtime's
 *     launches reach; cuGraphLaunch, whose correlation ID the graph's
 *     kernels carry) gives the launching thread, a host timestamp
 *     (cuptiGetTimestamp, the clock CUPTI's activity records use) and the
 *     correlation ID;
 *   - CUPTI activity of kind CONCURRENT_KERNEL (CUpti_ActivityKernel10 in
 *     CUDA 13.0): the kernel's function symbol, GPU start/end, stream and
 *     the same correlation ID; dropped records are counted;
 *   - when cuptiSubscribe says another subscriber holds CUPTI
 *     (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), the header says so
 *     and nothing of CUPTI is touched (its activity buffers belong to the
 *     other tool): the recording keeps what does not need CUPTI.
 *   - NVTX ranges through the project's NVTX injection core
 *     (core/nvtx_inject.h; argus-shim points NVTX_INJECTION64_PATH at this
 *     same library): push/pop on the calling thread, start/end with the
 *     tag this recorder handed out at the start as the range's ID (the
 *     core gives end() that tag on whatever thread ends the range), each
 *     with the thread and a cuptiGetTimestamp. NVTX may start before CUDA
 *     does, so the recording is opened by whichever comes first; its
 *     header then says CUDA had not started, and a "cupti" line written
 *     at cuInit gives the state.
 *
 * Environment (argus-shim sets it):
 *   ARGUS_SHIM_OUT        the recording's path (required; without it the
 *                         library does nothing and says so on stderr)
 *   ARGUS_SHIM_ROOT_PID   a process with another pid (a CUDA child of the
 *                         command) writes <OUT>.<pid> beside it
 *   ARGUS_SHIM_KERNELS=0  no CUPTI subscription (NVTX only)
 *   ARGUS_SHIM_NVTX=1     record NVTX ranges
 *   ARGUS_SHIM_PC_SAMPLING=1  PC sampling (the "PC sampling" part below)
 *   ARGUS_SHIM_PCS_MODE   kernel_serialized (default) or continuous
 *   ARGUS_SHIM_PCS_PERIOD log2 of the sampling period in SM cycles (5-31,
 *                         default 12)
 *   ARGUS_SHIM_COMMAND    the command line, for the header
 *   ARGUS_SHIM_ARM=0      instrumented kernels are not armed (shim_arm.c;
 *                         ARGUS_SHIM_ARM_CAP records per warp, default
 *                         1024, ARGUS_SHIM_ARM_MAX launches, default 256;
 *                         ARGUS_SHIM_ARM_RAW=DIR also writes each collected
 *                         buffer there, as arm.<corr>.raw)
 *
 *   - with --pc-sampling, CUPTI's PC Sampling API (cupti_pcsampling.h),
 *     configured and enabled in each context's creation callback: the
 *     stall reason names, the module images (resource callback
 *     MODULE_LOADED: saved beside the recording as <OUT>.cubin.<CRC>, the
 *     cuptiGetCubinCrc that the samples carry), the samples per PC (function,
 *     offset, correlation ID in kernel-serialized mode, count per stall
 *     reason) collected with cuptiPCSamplingGetData after every
 *     cuCtxSynchronize/cuStreamSynchronize/cuEventSynchronize, at context
 *     destruction and at exit, and each new PC's source line from
 *     cuptiGetSassToSourceCorrelation. A refusal (CUPTI_ERROR_INSUFFICIENT_
 *     PRIVILEGES, NOT_SUPPORTED on the device, another subscriber) becomes
 *     an "unavailable" line with the reason and the fix; the rest goes on.
 *
 * Tested against tests/argus/fake_cupti.c (no GPU here) and written to the
 * CUPTI of CUDA 13.0 (CUPTI 2025.3); the activity record layout is the
 * CUpti_ActivityKernel10 of those headers.
 */
#define _GNU_SOURCE 1
#include <cupti.h>
#include <cupti_pcsampling.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "json.h"
#include "nvtx_inject.h"
#include "shim_arm.h"

#define EXPORT __attribute__((visibility("default")))

/* The entry point the CUDA driver looks up in CUDA_INJECTION64_PATH. */
EXPORT int InitializeInjection(void);
#define ACT_BUF_BYTES (8u << 20)

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_out;
static int g_cupti_on;
static CUpti_SubscriberHandle g_sub;
static int g_open_failed; /* no recording: the reason went to stderr once */
/* The recording's time origin: CUPTI's timestamps (ns since 1970 on the
 * H200, beyond a JSON double's 2^53) are written relative to it. */
static uint64_t g_t0;

static int ensure_out_locked(void);

static uint64_t now_ns(void)
{
    uint64_t ts = 0;
    if (cuptiGetTimestamp(&ts) != CUPTI_SUCCESS)
        ts = 0;
    return ts;
}

/* A time as the recording holds it: signed ns after g_t0. */
static long long rel(uint64_t t)
{
    return t >= g_t0 ? (long long)(t - g_t0) : -(long long)(g_t0 - t);
}

static unsigned long long tid_now(void)
{
    return (unsigned long long)syscall(SYS_gettid);
}

static const char *cupti_str(CUptiResult r)
{
    const char *s = NULL;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == NULL)
        return "unknown CUPTI error";
    return s;
}

/* One line under the lock; a recording is read line by line, so a line is
 * written whole or (if the process dies inside fputs) cut last. */
static void emit_launch(uint64_t corr, const char *name)
{
    uint64_t ts = now_ns();
    pthread_mutex_lock(&g_lock);
    if (ensure_out_locked() == 0) {
        fprintf(g_out, "{\"e\":\"launch\",\"tid\":%llu,\"ts\":%lld,\"corr\":%llu", tid_now(),
                rel(ts), (unsigned long long)corr);
        if (name && name[0]) {
            fputs(",\"name\":", g_out);
            mosaic__json_fputs(g_out, name);
        }
        fputs("}\n", g_out);
    }
    pthread_mutex_unlock(&g_lock);
}

static int is_launch_cbid(CUpti_CallbackId cbid);
static void arm_callback(CUpti_CallbackId cbid, const CUpti_CallbackData *cb);
static void pcs_on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd);
static int pcs_on_driver(CUpti_CallbackId cbid, const CUpti_CallbackData *cb);

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)ud;
    if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
        pcs_on_resource(cbid, data);
        return;
    }
    const CUpti_CallbackData *cb = data;
    if (dom != CUPTI_CB_DOMAIN_DRIVER_API || cb == NULL)
        return;
    /* Arming sees every driver callback it enabled (launches and the
     * application's synchronisations) before PC sampling takes the
     * synchronisations it collects at. */
    arm_callback(cbid, cb);
    if (pcs_on_driver(cbid, cb))
        return;
    if (cb->callbackSite != CUPTI_API_ENTER || !is_launch_cbid(cbid))
        return;
    emit_launch(cb->correlationId, cb->symbolName);
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = aligned_alloc(8, ACT_BUF_BYTES);
    *size = *buf ? ACT_BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid)
{
    (void)size;
    CUpti_Activity *rec = NULL;
    pthread_mutex_lock(&g_lock);
    while (g_out && cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
            /* The GPU, so that a kernel profile of another GPU is never
             * joined to these kernels (argus-shim --metrics). */
            const CUpti_ActivityDevice5 *dv = (const CUpti_ActivityDevice5 *)rec;
            fprintf(g_out, "{\"e\":\"device\",\"id\":%u,\"name\":", dv->id);
            mosaic__json_fputs(g_out, dv->name && dv->name[0] ? dv->name : "(unnamed GPU)");
            fprintf(g_out, ",\"sm_count\":%u,\"cc\":\"%u.%u\"}\n", dv->numMultiprocessors,
                    dv->computeCapabilityMajor, dv->computeCapabilityMinor);
            continue;
        }
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        fputs("{\"e\":\"kernel\",\"name\":", g_out);
        mosaic__json_fputs(g_out, k->name ? k->name : "(unnamed kernel)");
        fprintf(g_out, ",\"corr\":%u,\"start\":%lld,\"end\":%lld,\"stream\":%u", k->correlationId,
                rel(k->start), rel(k->end), k->streamId);
        /* The launch configuration joins the kernel to its profile entry
         * (argus-shim --metrics); CUPTI fills it for every kernel. */
        if (k->gridX > 0 && k->gridY > 0 && k->gridZ > 0 && k->blockX > 0 && k->blockY > 0 &&
            k->blockZ > 0)
            fprintf(g_out, ",\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d]", k->gridX, k->gridY,
                    k->gridZ, k->blockX, k->blockY, k->blockZ);
        if (k->dynamicSharedMemory >= 0)
            fprintf(g_out, ",\"dsmem\":%d", k->dynamicSharedMemory);
        fprintf(g_out, ",\"device\":%u}\n", k->deviceId);
    }
    size_t dropped = 0;
    if (g_out && cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        fprintf(g_out, "{\"e\":\"dropped\",\"count\":%zu}\n", dropped);
    if (g_out)
        fflush(g_out);
    pthread_mutex_unlock(&g_lock);
    free(buf);
}

static void arm_finish(void);
static void pcs_at_exit(void);

static void at_exit(void)
{
    arm_finish();
    pcs_at_exit();
    if (g_cupti_on)
        cuptiActivityFlushAll(1);
    pthread_mutex_lock(&g_lock);
    if (g_out) {
        fclose(g_out);
        g_out = NULL;
    }
    /* A range ended by a later exit handler must not reopen (and so
     * truncate) the recording. */
    g_open_failed = 1;
    pthread_mutex_unlock(&g_lock);
}

/* Opens the recording on the first event (NVTX's or CUDA's), with the
 * header; called with g_lock held. Returns 0 when there is a recording. */
static int ensure_out_locked(void)
{
    if (g_out)
        return 0;
    if (g_open_failed)
        return -1;
    g_open_failed = 1;
    const char *out = getenv("ARGUS_SHIM_OUT");
    if (out == NULL || out[0] == '\0') {
        fputs("libargus_inject: ARGUS_SHIM_OUT is not set: nothing is recorded (run the program "
              "through argus-shim)\n",
              stderr);
        return -1;
    }
    char path[4096];
    const char *root = getenv("ARGUS_SHIM_ROOT_PID");
    int w = root && atol(root) != (long)getpid()
                ? snprintf(path, sizeof(path), "%s.%ld", out, (long)getpid())
                : snprintf(path, sizeof(path), "%s", out);
    if (w < 0 || (size_t)w >= sizeof(path)) {
        fprintf(stderr, "libargus_inject: ARGUS_SHIM_OUT is too long (%zu bytes): nothing is "
                        "recorded\n", strlen(out));
        return -1;
    }
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "libargus_inject: %s: cannot create the recording: nothing is recorded\n",
                path);
        return -1;
    }
    g_out = f;
    g_open_failed = 0;
    const char *cmd = getenv("ARGUS_SHIM_COMMAND");
    fputs("{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"unavailable\","
          "\"note\":\"the program never initialised CUDA\"",
          g_out);
    if (cmd && cmd[0]) {
        fputs(",\"command\":", g_out);
        mosaic__json_fputs(g_out, cmd);
    }
    g_t0 = now_ns();
    fprintf(g_out, ",\"t0\":\"%llu\",\"pid\":%ld}\n", (unsigned long long)g_t0, (long)getpid());
    atexit(at_exit);
    return 0;
}

static void unavailable(const char *what, const char *why)
{
    fputs("{\"e\":\"unavailable\",\"what\":", g_out);
    mosaic__json_fputs(g_out, what);
    fputs(",\"why\":", g_out);
    mosaic__json_fputs(g_out, why);
    fputs("}\n", g_out);
}

static const CUpti_CallbackId k_launch_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    /* The kernels of a graph launch carry the cuGraphLaunch's correlation
     * ID, so they land in the range open at the graph's launch. */
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

static int is_launch_cbid(CUpti_CallbackId cbid)
{
    for (size_t i = 0; i < sizeof(k_launch_cbids) / sizeof(k_launch_cbids[0]); i++)
        if (k_launch_cbids[i] == cbid)
            return 1;
    return 0;
}

/* ---- arming instrumented kernels (shim_arm.c) --------------------------- */

static int g_arm_on;

static void arm_emit(void *ud, const char *line)
{
    (void)ud;
    pthread_mutex_lock(&g_lock);
    if (ensure_out_locked() == 0) {
        fputs(line, g_out);
        fputc('\n', g_out);
    }
    pthread_mutex_unlock(&g_lock);
}

static uint32_t env_u32(const char *name, uint32_t dflt)
{
    const char *v = getenv(name);
    char *end = NULL;
    unsigned long n = v && v[0] ? strtoul(v, &end, 10) : 0;
    return v && v[0] && end && *end == '\0' && n > 0 && n <= UINT32_MAX ? (uint32_t)n : dflt;
}

/* Called with CUPTI subscribed: arming listens to the launches' exits and
 * the application's synchronisations as well. Failing to set it up costs
 * the device regions only, said in an "unavailable" line. */
static void arm_start(void)
{
    const char *arm = getenv("ARGUS_SHIM_ARM");
    if (arm && strcmp(arm, "0") == 0)
        return;
    argus_driver drv;
    argus__arm_ops ops;
    char msg[512];
    argus__arm_config cfg = {.cap = env_u32("ARGUS_SHIM_ARM_CAP", ARGUS__ARM_CAP),
                             .max_launches = env_u32("ARGUS_SHIM_ARM_MAX", ARGUS__ARM_MAX_LAUNCHES),
                             .max_bytes = ARGUS__ARM_MAX_BYTES,
                             .raw_dir = getenv("ARGUS_SHIM_ARM_RAW")};
    if (cfg.raw_dir != NULL && cfg.raw_dir[0] == '\0')
        cfg.raw_dir = NULL;
    if ((cfg.cap & (cfg.cap - 1)) != 0 || cfg.cap > ARGUS_MAX_CAP) {
        snprintf(msg, sizeof(msg), "ARGUS_SHIM_ARM_CAP=%u is not a power of two from 1 to %u: "
                                   "instrumented kernels are not armed", cfg.cap, ARGUS_MAX_CAP);
        unavailable("device_regions", msg);
        return;
    }
    if (argus_driver_cuda(&drv, msg, sizeof(msg)) != 0 ||
        argus__arm_ops_cuda(&ops, msg, sizeof(msg)) != 0 ||
        argus__arm_init(&drv, &ops, &cfg, arm_emit, NULL) != 0) {
        unavailable("device_regions", msg);
        return;
    }
    for (size_t i = 0; i < argus__arm_nsync_cbids; i++)
        if (cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, argus__arm_sync_cbids[i]) !=
            CUPTI_SUCCESS) {
            /* Without the sync callbacks, launches and the exit still
             * collect: later, not wrong. */
            break;
        }
    g_arm_on = 1;
}

static void arm_callback(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    if (g_arm_on)
        argus__arm_on_callback(cbid, cb->callbackSite == CUPTI_API_ENTER, cb);
}

/* At exit: what is still being read back is waited for, so that a program
 * that never synchronised keeps its regions. */
static void arm_finish(void)
{
    if (!g_arm_on)
        return;
    argus__arm_poll(1);
    argus__arm_shutdown();
    g_arm_on = 0;
}
static void pcs_init(const char *state);

/* Subscribes and enables what is recorded; returns the header's state and
 * writes the reason for anything less into note. */
static const char *start_cupti(char *note, size_t len)
{
    CUptiResult r = cuptiSubscribe(&g_sub, on_callback, NULL);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        snprintf(note, len, "another CUPTI subscriber holds CUPTI in this process (a profiler "
                            "such as nsys or ncu?): no launch or kernel records; run without "
                            "the other tool for kernels");
        return "another_subscriber";
    }
    if (r != CUPTI_SUCCESS) {
        snprintf(note, len, "cuptiSubscribe failed (%s): no launch or kernel records", cupti_str(r));
        return "unavailable";
    }
    for (size_t i = 0; i < sizeof(k_launch_cbids) / sizeof(k_launch_cbids[0]); i++)
        if ((r = cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, k_launch_cbids[i])) !=
            CUPTI_SUCCESS) {
            snprintf(note, len, "cuptiEnableCallback failed (%s): no launch records", cupti_str(r));
            cuptiUnsubscribe(g_sub);
            return "unavailable";
        }
    if ((r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS ||
        (r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS) {
        snprintf(note, len, "CUPTI activity could not be enabled (%s): no kernel records",
                 cupti_str(r));
        cuptiUnsubscribe(g_sub);
        return "unavailable";
    }
    /* Device records name the GPU (CUpti_ActivityDevice5); without them the
     * report says the kernels' GPU was not checked. */
    (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
    g_cupti_on = 1;
    return "subscribed";
}

/* ---- PC sampling (argus-shim --pc-sampling) ------------------------------
 * Written to CUDA 13.0's cupti_pcsampling.h and run on the fake CUPTI only
 * (tests/argus/fake_cupti.c); the H200 run is the Argus-on-H200 issue's.
 * Each function here is called with g_lock not held unless it says so. */

#define PCS_MAX_CTX 16
#define PCS_COLLECT_PCS 4096          /* PCs per cuptiPCSamplingGetData */
#define PCS_SCRATCH_BYTES (32u << 20) /* CUPTI's buffer between GetData calls */
#define PCS_MAX_MODULES 1024
#define PCS_MAX_SEEN (1u << 16)       /* PCs whose line was already asked */

static pthread_mutex_t g_pcs_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_pcs_asked, g_pcs_dead; /* dead: refused once, not asked again */
static int g_pcs_serialized = 1;
static uint32_t g_pcs_period = 12;
static CUcontext g_pcs_ctx[PCS_MAX_CTX];
static size_t g_pcs_nctx;
static size_t g_pcs_nreasons;
static uint32_t *g_pcs_reason_idx;
static CUpti_PCSamplingData g_pcs_data;
static int g_pcs_told_reasons;
static struct pcs_module {
    uint64_t crc;
    void *cubin;
    size_t size;
} g_pcs_mod[PCS_MAX_MODULES];
static size_t g_pcs_nmod;
static struct pcs_seen {
    uint64_t crc, pc;
    uint32_t fhash;
} *g_pcs_seen;
static size_t g_pcs_nseen;

static void pcs_unavailable(const char *why)
{
    pthread_mutex_lock(&g_lock);
    if (ensure_out_locked() == 0) {
        unavailable("pc_sampling", why);
        fflush(g_out);
    }
    pthread_mutex_unlock(&g_lock);
    fprintf(stderr, "argus-shim: PC sampling unavailable: %s\n", why);
}

/* Why CUPTI refused, in words a user can act on. */
static void pcs_refused(const char *call, CUptiResult r)
{
    char why[512];
    const char *fix =
        r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
            ? "profiling needs admin rights on this system: run as root, or load the driver "
              "with NVreg_RestrictProfilingToAdminUsers=0"
        : r == CUPTI_ERROR_NOT_SUPPORTED || r == CUPTI_ERROR_NOT_COMPATIBLE
            ? "this GPU or driver does not offer the PC Sampling API (it needs compute "
              "capability 7.0 or later and a driver of CUDA 11.0 or later)"
        : r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
            ? "another profiler holds CUPTI in this process"
            : "see CUPTI's documentation of this error";
    snprintf(why, sizeof(why), "%s failed (%s): %s; kernels and NVTX ranges are kept", call,
             cupti_str(r), fix);
    pcs_unavailable(why);
    g_pcs_dead = 1;
}

/* Called from InitializeInjection once CUPTI's state is known. */
static void pcs_init(const char *state)
{
    if (strcmp(state, "subscribed") != 0) {
        pcs_unavailable(strcmp(state, "another_subscriber") == 0
                            ? "another CUPTI subscriber holds CUPTI in this process (nsys, ncu?): "
                              "no PC samples; run without the other tool"
                            : "CUPTI is not subscribed (see the cupti note): no PC samples");
        return;
    }
    const char *mode = getenv("ARGUS_SHIM_PCS_MODE");
    g_pcs_serialized = !(mode && strcmp(mode, "continuous") == 0);
    const char *per = getenv("ARGUS_SHIM_PCS_PERIOD");
    if (per && per[0]) {
        long v = strtol(per, NULL, 10);
        g_pcs_period = v >= 5 && v <= 31 ? (uint32_t)v : g_pcs_period;
    }
    static const CUpti_CallbackId res[] = {CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
                                           CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                                           CUPTI_CBID_RESOURCE_MODULE_LOADED};
    static const CUpti_CallbackId sync[] = {
        CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize};
    CUptiResult r;
    for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++)
        if ((r = cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, res[i])) != CUPTI_SUCCESS) {
            pcs_refused("cuptiEnableCallback (resource callbacks)", r);
            return;
        }
    for (size_t i = 0; i < sizeof(sync) / sizeof(sync[0]); i++)
        if ((r = cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, sync[i])) != CUPTI_SUCCESS) {
            pcs_refused("cuptiEnableCallback (synchronisation calls)", r);
            return;
        }
    g_pcs_asked = 1;
}

/* The stall reasons and the sample buffer, made at the first context. */
static int pcs_reasons(CUcontext ctx)
{
    if (g_pcs_reason_idx)
        return 0;
    CUpti_PCSamplingGetNumStallReasonsParams np = {0};
    np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
    np.ctx = ctx;
    size_t n = 0;
    np.numStallReasons = &n;
    CUptiResult r = cuptiPCSamplingGetNumStallReasons(&np);
    if (r != CUPTI_SUCCESS) {
        pcs_refused("cuptiPCSamplingGetNumStallReasons", r);
        return -1;
    }
    uint32_t *idx = calloc(n ? n : 1, sizeof(uint32_t));
    char **names = calloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; names && i < n; i++)
        if ((names[i] = calloc(CUPTI_STALL_REASON_STRING_SIZE, 1)) == NULL)
            n = i; /* out of memory: fewer reasons named, the others stay indices */
    CUpti_PCSamplingGetStallReasonsParams sp = {0};
    sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
    sp.ctx = ctx;
    sp.numStallReasons = n;
    sp.stallReasonIndex = idx;
    sp.stallReasons = names;
    r = idx && names ? cuptiPCSamplingGetStallReasons(&sp) : CUPTI_ERROR_OUT_OF_MEMORY;
    if (r == CUPTI_SUCCESS) {
        pthread_mutex_lock(&g_lock);
        for (size_t i = 0; ensure_out_locked() == 0 && i < n && !g_pcs_told_reasons; i++) {
            fprintf(g_out, "{\"e\":\"stall\",\"index\":%u,\"name\":", idx[i]);
            mosaic__json_fputs(g_out, names[i][0] ? names[i] : "(unnamed)");
            fputs("}\n", g_out);
        }
        g_pcs_told_reasons = 1;
        pthread_mutex_unlock(&g_lock);
    }
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    if (r != CUPTI_SUCCESS) {
        free(idx);
        pcs_refused("cuptiPCSamplingGetStallReasons", r);
        return -1;
    }
    /* The buffer GetData fills: PCs, each with room for every reason. */
    CUpti_PCSamplingPCData *pcs = calloc(PCS_COLLECT_PCS, sizeof(CUpti_PCSamplingPCData));
    for (size_t i = 0; pcs && i < PCS_COLLECT_PCS; i++) {
        pcs[i].size = sizeof(CUpti_PCSamplingPCData);
        if ((pcs[i].stallReason = calloc(n ? n : 1, sizeof(CUpti_PCSamplingStallReason))) == NULL) {
            for (size_t k = 0; k < i; k++)
                free(pcs[k].stallReason);
            free(pcs);
            pcs = NULL;
        }
    }
    if (pcs == NULL) {
        free(idx);
        pcs_unavailable("out of memory for the PC sample buffer");
        g_pcs_dead = 1;
        return -1;
    }
    g_pcs_data.size = sizeof(CUpti_PCSamplingData);
    g_pcs_data.collectNumPcs = PCS_COLLECT_PCS;
    g_pcs_data.pPcData = pcs;
    g_pcs_nreasons = n;
    g_pcs_reason_idx = idx;
    return 0;
}

static void pcs_start(CUcontext ctx)
{
    if (g_pcs_dead || g_pcs_nctx >= PCS_MAX_CTX || pcs_reasons(ctx) != 0)
        return;
    CUpti_PCSamplingConfigurationInfo cfg[5];
    memset(cfg, 0, sizeof(cfg));
    cfg[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
    cfg[0].attributeData.samplingPeriodData.samplingPeriod = g_pcs_period;
    cfg[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
    cfg[1].attributeData.stallReasonData.stallReasonCount = g_pcs_nreasons;
    cfg[1].attributeData.stallReasonData.pStallReasonIndex = g_pcs_reason_idx;
    cfg[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
    cfg[2].attributeData.scratchBufferSizeData.scratchBufferSize = PCS_SCRATCH_BYTES;
    cfg[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    cfg[3].attributeData.collectionModeData.collectionMode =
        g_pcs_serialized ? CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED
                         : CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    cfg[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    cfg[4].attributeData.samplingDataBufferData.samplingDataBuffer = &g_pcs_data;
    CUpti_PCSamplingConfigurationInfoParams cp = {0};
    cp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    cp.ctx = ctx;
    cp.numAttributes = sizeof(cfg) / sizeof(cfg[0]);
    cp.pPCSamplingConfigurationInfo = cfg;
    CUptiResult r = cuptiPCSamplingSetConfigurationAttribute(&cp);
    if (r != CUPTI_SUCCESS) {
        pcs_refused("cuptiPCSamplingSetConfigurationAttribute", r);
        return;
    }
    CUpti_PCSamplingEnableParams ep = {0};
    ep.size = CUpti_PCSamplingEnableParamsSize;
    ep.ctx = ctx;
    if ((r = cuptiPCSamplingEnable(&ep)) != CUPTI_SUCCESS) {
        pcs_refused("cuptiPCSamplingEnable", r);
        return;
    }
    g_pcs_ctx[g_pcs_nctx++] = ctx;
    pthread_mutex_lock(&g_lock);
    if (ensure_out_locked() == 0 && g_pcs_nctx == 1)
        fprintf(g_out, "{\"e\":\"pcs\",\"state\":\"enabled\",\"mode\":\"%s\",\"period\":%u}\n",
                g_pcs_serialized ? "kernel_serialized" : "continuous", g_pcs_period);
    pthread_mutex_unlock(&g_lock);
}

static uint32_t fnv32(const char *s)
{
    uint32_t h = 2166136261u;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* A module image: its CRC (what the samples carry), a copy kept for the
 * line lookups, and the file beside the recording for argus-shim. */
static void pcs_module(const CUpti_ModuleResourceData *m)
{
    if (m == NULL || m->pCubin == NULL || m->cubinSize == 0 || g_pcs_nmod >= PCS_MAX_MODULES)
        return;
    CUpti_GetCubinCrcParams cp = {0};
    cp.size = CUpti_GetCubinCrcParamsSize;
    cp.cubinSize = m->cubinSize;
    cp.cubin = m->pCubin;
    if (cuptiGetCubinCrc(&cp) != CUPTI_SUCCESS)
        return;
    for (size_t i = 0; i < g_pcs_nmod; i++)
        if (g_pcs_mod[i].crc == cp.cubinCrc)
            return;
    void *copy = malloc(m->cubinSize);
    if (copy == NULL)
        return;
    memcpy(copy, m->pCubin, m->cubinSize);
    g_pcs_mod[g_pcs_nmod++] = (struct pcs_module){cp.cubinCrc, copy, m->cubinSize};
    const char *out = getenv("ARGUS_SHIM_OUT");
    char path[4200];
    int w = out ? snprintf(path, sizeof(path), "%s.cubin.%llu", out, (unsigned long long)cp.cubinCrc)
                : -1;
    if (w < 0 || (size_t)w >= sizeof(path))
        return;
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(m->pCubin, 1, m->cubinSize, f) == m->cubinSize;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        return;
    const char *base = strrchr(path, '/');
    pthread_mutex_lock(&g_lock);
    if (ensure_out_locked() == 0) {
        fprintf(g_out, "{\"e\":\"module\",\"crc\":\"%llu\",\"cubin\":", (unsigned long long)cp.cubinCrc);
        mosaic__json_fputs(g_out, base ? base + 1 : path);
        fputs("}\n", g_out);
    }
    pthread_mutex_unlock(&g_lock);
}

/* The source line of a PC not seen before, from CUPTI (needs the cubin). */
static void pcs_line(const CUpti_PCSamplingPCData *pc)
{
    uint32_t fh = fnv32(pc->functionName);
    for (size_t i = 0; i < g_pcs_nseen; i++)
        if (g_pcs_seen[i].crc == pc->cubinCrc && g_pcs_seen[i].pc == pc->pcOffset &&
            g_pcs_seen[i].fhash == fh)
            return;
    if (g_pcs_seen == NULL && (g_pcs_seen = calloc(PCS_MAX_SEEN, sizeof(*g_pcs_seen))) == NULL)
        return;
    if (g_pcs_nseen >= PCS_MAX_SEEN)
        return;
    g_pcs_seen[g_pcs_nseen++] = (struct pcs_seen){pc->cubinCrc, pc->pcOffset, fh};
    const struct pcs_module *m = NULL;
    for (size_t i = 0; i < g_pcs_nmod && m == NULL; i++)
        if (g_pcs_mod[i].crc == pc->cubinCrc)
            m = &g_pcs_mod[i];
    if (m == NULL || pc->functionName == NULL)
        return;
    CUpti_GetSassToSourceCorrelationParams sp = {0};
    sp.size = CUpti_GetSassToSourceCorrelationParamsSize;
    sp.cubin = m->cubin;
    sp.cubinSize = m->size;
    sp.functionName = pc->functionName;
    sp.pcOffset = pc->pcOffset;
    if (cuptiGetSassToSourceCorrelation(&sp) == CUPTI_SUCCESS && sp.fileName && sp.lineNumber) {
        char file[4200];
        int w = sp.dirName && sp.dirName[0] && sp.fileName[0] != '/'
                    ? snprintf(file, sizeof(file), "%s/%s", sp.dirName, sp.fileName)
                    : snprintf(file, sizeof(file), "%s", sp.fileName);
        if (w > 0 && (size_t)w < sizeof(file)) {
            fprintf(g_out, "{\"e\":\"pcline\",\"crc\":\"%llu\",\"function\":",
                    (unsigned long long)pc->cubinCrc);
            mosaic__json_fputs(g_out, pc->functionName);
            fprintf(g_out, ",\"pc\":%llu,\"file\":", (unsigned long long)pc->pcOffset);
            mosaic__json_fputs(g_out, file);
            fprintf(g_out, ",\"line\":%u}\n", sp.lineNumber);
        }
    }
    /* CUPTI allocates both names for the caller. */
    free(sp.fileName);
    free(sp.dirName);
}

/* Everything CUPTI holds for ctx, as pc lines (g_pcs_lock held). */
static void pcs_collect_locked(CUcontext ctx)
{
    for (int round = 0; round < 1 << 20; round++) {
        g_pcs_data.collectNumPcs = PCS_COLLECT_PCS;
        g_pcs_data.totalNumPcs = 0;
        for (size_t i = 0; i < PCS_COLLECT_PCS; i++)
            g_pcs_data.pPcData[i].stallReasonCount = g_pcs_nreasons;
        CUpti_PCSamplingGetDataParams gp = {0};
        gp.size = CUpti_PCSamplingGetDataParamsSize;
        gp.ctx = ctx;
        gp.pcSamplingData = &g_pcs_data;
        CUptiResult r = cuptiPCSamplingGetData(&gp);
        if (r != CUPTI_SUCCESS) {
            char why[400];
            snprintf(why, sizeof(why), "cuptiPCSamplingGetData failed (%s): the samples of this "
                     "collection are lost; those recorded before are kept", cupti_str(r));
            pthread_mutex_lock(&g_lock);
            if (ensure_out_locked() == 0)
                unavailable("pc_sampling_data", why);
            pthread_mutex_unlock(&g_lock);
            return;
        }
        pthread_mutex_lock(&g_lock);
        if (ensure_out_locked() == 0) {
            size_t n = g_pcs_data.totalNumPcs < PCS_COLLECT_PCS ? g_pcs_data.totalNumPcs
                                                                : PCS_COLLECT_PCS;
            for (size_t i = 0; i < n; i++) {
                const CUpti_PCSamplingPCData *pc = &g_pcs_data.pPcData[i];
                fprintf(g_out, "{\"e\":\"pc\",\"crc\":\"%llu\",\"function\":",
                        (unsigned long long)pc->cubinCrc);
                mosaic__json_fputs(g_out, pc->functionName ? pc->functionName : "(unnamed)");
                fprintf(g_out, ",\"pc\":%llu,\"corr\":%u,\"stall\":[", (unsigned long long)pc->pcOffset,
                        pc->correlationId);
                size_t ns = pc->stallReasonCount < g_pcs_nreasons ? pc->stallReasonCount
                                                                  : g_pcs_nreasons;
                for (size_t k = 0; k < ns; k++)
                    fprintf(g_out, "%s[%u,%u]", k ? "," : "", pc->stallReason[k].pcSamplingStallReasonIndex,
                            pc->stallReason[k].samples);
                fputs("]}\n", g_out);
                pcs_line(pc);
            }
            fprintf(g_out, "{\"e\":\"pcs_totals\",\"samples\":%llu,\"dropped\":%llu,\"non_user\":%llu,"
                           "\"buffer_full\":%u}\n",
                    (unsigned long long)g_pcs_data.totalSamples,
                    (unsigned long long)g_pcs_data.droppedSamples,
                    (unsigned long long)g_pcs_data.nonUsrKernelsTotalSamples,
                    g_pcs_data.hardwareBufferFull ? 1u : 0u);
            fflush(g_out);
        }
        pthread_mutex_unlock(&g_lock);
        if (g_pcs_data.remainingNumPcs == 0)
            return;
    }
}

static void pcs_collect(CUcontext ctx, int disable)
{
    pthread_mutex_lock(&g_pcs_lock);
    for (size_t i = 0; i < g_pcs_nctx; i++) {
        if (ctx != NULL && g_pcs_ctx[i] != ctx)
            continue;
        pcs_collect_locked(g_pcs_ctx[i]);
        if (disable) {
            CUpti_PCSamplingDisableParams dp = {0};
            dp.size = CUpti_PCSamplingDisableParamsSize;
            dp.ctx = g_pcs_ctx[i];
            cuptiPCSamplingDisable(&dp);
            g_pcs_ctx[i--] = g_pcs_ctx[--g_pcs_nctx];
        }
    }
    pthread_mutex_unlock(&g_pcs_lock);
}

static void pcs_on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
    if (!g_pcs_asked || rd == NULL)
        return;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        pthread_mutex_lock(&g_pcs_lock);
        pcs_start(rd->context);
        pthread_mutex_unlock(&g_pcs_lock);
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        pcs_collect(rd->context, 1);
    } else if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
        pthread_mutex_lock(&g_pcs_lock);
        pcs_module(rd->resourceDescriptor);
        pthread_mutex_unlock(&g_pcs_lock);
    }
}

/* Synchronisation calls: the samples so far, at their exit. Returns 1 for
 * the callback IDs that are only PC sampling's. */
static int pcs_on_driver(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    if (cbid != CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize &&
        cbid != CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2 &&
        cbid != CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize &&
        cbid != CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz &&
        cbid != CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize)
        return 0;
    if (g_pcs_asked && cb->callbackSite == CUPTI_API_EXIT)
        pcs_collect(cb->context, 0);
    return 1;
}

static void pcs_at_exit(void)
{
    if (g_pcs_asked)
        pcs_collect(NULL, 1);
}

EXPORT int InitializeInjection(void)
{
    static int done;
    if (done++)
        return 1;
    char note[512] = "";
    const char *state = "unavailable";
    const char *kernels = getenv("ARGUS_SHIM_KERNELS");
    pthread_mutex_lock(&g_lock);
    if (ensure_out_locked() != 0) {
        pthread_mutex_unlock(&g_lock);
        return 1;
    }
    if (kernels && strcmp(kernels, "0") == 0)
        snprintf(note, sizeof(note), "kernels were not asked for (argus-shim --nvtx alone)");
    else
        state = start_cupti(note, sizeof(note));
    fputs("{\"e\":\"cupti\",\"state\":", g_out);
    mosaic__json_fputs(g_out, state);
    fputs(",\"note\":", g_out);
    mosaic__json_fputs(g_out, note[0] ? note : "CUPTI subscribed: launches and kernel activity");
    fputs("}\n", g_out);
    if (strcmp(state, "subscribed") == 0)
        arm_start();
    fflush(g_out);
    pthread_mutex_unlock(&g_lock);
    const char *pcs = getenv("ARGUS_SHIM_PC_SAMPLING");
    if (pcs && strcmp(pcs, "1") == 0)
        pcs_init(state);
    if (strcmp(state, "subscribed") != 0)
        fprintf(stderr, "argus-shim: %s\n", note);
    return 1;
}

/* ---- NVTX ranges (core/nvtx_inject.h) ----------------------------------- */

static uint32_t g_next_tag;

static void emit_range(const char *kind, const char *name, int named, uint64_t id, int with_id)
{
    uint64_t ts = now_ns();
    pthread_mutex_lock(&g_lock);
    if (ensure_out_locked() == 0) {
        fprintf(g_out, "{\"e\":\"%s\",\"tid\":%llu,\"ts\":%lld", kind, tid_now(), rel(ts));
        if (with_id)
            fprintf(g_out, ",\"id\":%llu", (unsigned long long)id);
        if (named) {
            fputs(",\"name\":", g_out);
            /* The core passes NULL for a registered string handle or a
             * wide name beyond ASCII: the range is kept, under a name that
             * says why it has no text. */
            mosaic__json_fputs(g_out, name && name[0] ? name : "(unnamed NVTX range)");
        }
        fputs("}\n", g_out);
    }
    pthread_mutex_unlock(&g_lock);
}

static uint32_t nvtx_push(void *ctx, const char *name)
{
    (void)ctx;
    emit_range("push", name, 1, 0, 0);
    return 1;
}

static void nvtx_pop(void *ctx, uint32_t tag)
{
    (void)ctx;
    (void)tag;
    emit_range("pop", NULL, 0, 0, 0);
}

static uint32_t nvtx_start(void *ctx, const char *name)
{
    (void)ctx;
    /* A nonzero tag per range: the ID end() is matched by. */
    uint32_t tag = __atomic_add_fetch(&g_next_tag, 1, __ATOMIC_RELAXED);
    if (tag == 0)
        tag = __atomic_add_fetch(&g_next_tag, 1, __ATOMIC_RELAXED);
    emit_range("start", name, 1, tag, 1);
    return tag;
}

static void nvtx_end(void *ctx, uint32_t tag, uint64_t id)
{
    (void)ctx;
    (void)id;
    emit_range("end", NULL, 0, tag, 1);
}

static const struct mosaic__nvtx_client k_nvtx_client = {
    .push = nvtx_push, .pop = nvtx_pop, .start = nvtx_start, .end = nvtx_end};

/* At load (by the CUDA driver or by NVTX's loader, whichever is first):
 * the NVTX client is registered before any NVTX copy can initialise
 * through this library. */
__attribute__((constructor)) static void shim_load(void)
{
    const char *nvtx = getenv("ARGUS_SHIM_NVTX");
    if (nvtx && strcmp(nvtx, "1") == 0 && getenv("ARGUS_SHIM_OUT"))
        mosaic__nvtx_register(&k_nvtx_client);
}
