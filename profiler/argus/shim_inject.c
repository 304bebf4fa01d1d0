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
 *   ARGUS_SHIM_PC_SAMPLING=1  PC sampling was asked for: recorded as
 *                         unavailable with the reason (not implemented)
 *   ARGUS_SHIM_COMMAND    the command line, for the header
 *   ARGUS_SHIM_ARM=0      instrumented kernels are not armed (shim_arm.c;
 *                         ARGUS_SHIM_ARM_CAP records per warp, default
 *                         1024, ARGUS_SHIM_ARM_MAX launches, default 256)
 *
 * Tested against tests/argus/fake_cupti.c (no GPU here) and written to the
 * CUPTI of CUDA 13.0 (CUPTI 2025.3); the activity record layout is the
 * CUpti_ActivityKernel10 of those headers.
 */
#define _GNU_SOURCE 1
#include <cupti.h>

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

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)ud;
    const CUpti_CallbackData *cb = data;
    if (dom != CUPTI_CB_DOMAIN_DRIVER_API || cb == NULL)
        return;
    arm_callback(cbid, cb);
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
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        fputs("{\"e\":\"kernel\",\"name\":", g_out);
        mosaic__json_fputs(g_out, k->name ? k->name : "(unnamed kernel)");
        fprintf(g_out, ",\"corr\":%u,\"start\":%lld,\"end\":%lld,\"stream\":%u}\n", k->correlationId,
                rel(k->start), rel(k->end), k->streamId);
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

static void at_exit(void)
{
    arm_finish();
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
                             .max_bytes = ARGUS__ARM_MAX_BYTES};
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
    g_cupti_on = 1;
    return "subscribed";
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
    const char *pcs = getenv("ARGUS_SHIM_PC_SAMPLING");
    if (pcs && strcmp(pcs, "1") == 0)
        unavailable("pc_sampling",
                    "not implemented by this argus-shim: CUDA 13.0's CUPTI PC sampling API "
                    "(cupti_pcsampling.h) is present but not wired in yet (issue 12); no "
                    "source-line hot spots");
    fflush(g_out);
    pthread_mutex_unlock(&g_lock);
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
