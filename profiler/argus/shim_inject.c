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
 *     launches reach) gives the launching thread, a host timestamp
 *     (cuptiGetTimestamp, the clock CUPTI's activity records use) and the
 *     correlation ID;
 *   - CUPTI activity of kind CONCURRENT_KERNEL (CUpti_ActivityKernel10 in
 *     CUDA 13.0): the kernel's function symbol, GPU start/end, stream and
 *     the same correlation ID; dropped records are counted;
 *   - when cuptiSubscribe says another subscriber holds CUPTI
 *     (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), the header says so
 *     and nothing of CUPTI is touched (its activity buffers belong to the
 *     other tool): the recording keeps what does not need CUPTI.
 *   - NVTX ranges come through the project's NVTX injection core
 *     (core/nvtx_inject.h, branch h-nvtx) once it is merged: not recorded
 *     by this version (issue 12).
 *
 * Environment (argus-shim sets it):
 *   ARGUS_SHIM_OUT        the recording's path (required; without it the
 *                         library does nothing and says so on stderr)
 *   ARGUS_SHIM_ROOT_PID   a process with another pid (a CUDA child of the
 *                         command) writes <OUT>.<pid> beside it
 *   ARGUS_SHIM_KERNELS=0  no CUPTI at all (NVTX only)
 *   ARGUS_SHIM_PC_SAMPLING=1  PC sampling was asked for: recorded as
 *                         unavailable with the reason (not implemented)
 *   ARGUS_SHIM_COMMAND    the command line, for the header
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

#define EXPORT __attribute__((visibility("default")))

/* The entry point the CUDA driver looks up in CUDA_INJECTION64_PATH. */
EXPORT int InitializeInjection(void);
#define ACT_BUF_BYTES (8u << 20)

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_out;
static int g_cupti_on;
static CUpti_SubscriberHandle g_sub;

static uint64_t now_ns(void)
{
    uint64_t ts = 0;
    if (cuptiGetTimestamp(&ts) != CUPTI_SUCCESS)
        ts = 0;
    return ts;
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
    if (g_out) {
        fprintf(g_out, "{\"e\":\"launch\",\"tid\":%llu,\"ts\":%llu,\"corr\":%llu", tid_now(),
                (unsigned long long)ts, (unsigned long long)corr);
        if (name && name[0]) {
            fputs(",\"name\":", g_out);
            mosaic__json_fputs(g_out, name);
        }
        fputs("}\n", g_out);
    }
    pthread_mutex_unlock(&g_lock);
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)ud;
    (void)cbid;
    const CUpti_CallbackData *cb = data;
    if (dom != CUPTI_CB_DOMAIN_DRIVER_API || cb == NULL || cb->callbackSite != CUPTI_API_ENTER)
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
        fprintf(g_out, ",\"corr\":%u,\"start\":%llu,\"end\":%llu,\"stream\":%u}\n", k->correlationId,
                (unsigned long long)k->start, (unsigned long long)k->end, k->streamId);
    }
    size_t dropped = 0;
    if (g_out && cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        fprintf(g_out, "{\"e\":\"dropped\",\"count\":%zu}\n", dropped);
    if (g_out)
        fflush(g_out);
    pthread_mutex_unlock(&g_lock);
    free(buf);
}

static void at_exit(void)
{
    if (g_cupti_on)
        cuptiActivityFlushAll(1);
    pthread_mutex_lock(&g_lock);
    if (g_out) {
        fclose(g_out);
        g_out = NULL;
    }
    pthread_mutex_unlock(&g_lock);
}

static void header(const char *cupti, const char *note)
{
    const char *cmd = getenv("ARGUS_SHIM_COMMAND");
    fputs("{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":", g_out);
    mosaic__json_fputs(g_out, cupti);
    if (note && note[0]) {
        fputs(",\"note\":", g_out);
        mosaic__json_fputs(g_out, note);
    }
    if (cmd && cmd[0]) {
        fputs(",\"command\":", g_out);
        mosaic__json_fputs(g_out, cmd);
    }
    fprintf(g_out, ",\"pid\":%ld}\n", (long)getpid());
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
};

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
    const char *out = getenv("ARGUS_SHIM_OUT");
    if (out == NULL || out[0] == '\0') {
        fputs("libargus_inject: ARGUS_SHIM_OUT is not set: nothing is recorded (run the program "
              "through argus-shim)\n",
              stderr);
        return 1;
    }
    char path[4096];
    const char *root = getenv("ARGUS_SHIM_ROOT_PID");
    int w = root && atol(root) != (long)getpid()
                ? snprintf(path, sizeof(path), "%s.%ld", out, (long)getpid())
                : snprintf(path, sizeof(path), "%s", out);
    if (w < 0 || (size_t)w >= sizeof(path)) {
        fprintf(stderr, "libargus_inject: ARGUS_SHIM_OUT is too long (%zu bytes): nothing is "
                        "recorded\n", strlen(out));
        return 1;
    }
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "libargus_inject: %s: cannot create the recording: nothing is recorded\n",
                path);
        return 1;
    }
    char note[512] = "";
    const char *state = "unavailable";
    const char *kernels = getenv("ARGUS_SHIM_KERNELS");
    pthread_mutex_lock(&g_lock);
    g_out = f;
    if (kernels && strcmp(kernels, "0") == 0)
        snprintf(note, sizeof(note), "kernels were not asked for (argus-shim --nvtx alone)");
    else
        state = start_cupti(note, sizeof(note));
    header(state, note);
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
    atexit(at_exit);
    return 1;
}
