/*
 * libmosaic_capture.so: a CUPTI injection library that profiles every
 * distinct kernel of a program (key = name + grid + block + dynamic shared
 * memory) and writes a "mosaic-profile/1" JSON file at exit
 * (docs/profile-schema.md).
 *
 * Loaded by the CUDA driver through CUDA_INJECTION64_PATH, which calls
 * InitializeInjection() during cuInit. `mosaic-profile capture` sets it up;
 * by hand:
 *   CUDA_INJECTION64_PATH=build/lib/libmosaic_capture.so \
 *   MOSAIC_PROFILE_OUT=prof.json ./program
 *
 * Environment:
 *   MOSAIC_PROFILE_OUT          output path (required; "%p" becomes the pid)
 *   MOSAIC_PROFILE_MAX_KERNELS  distinct kernels to profile (default 2000);
 *                               later keys get launch data but no counters
 *   MOSAIC_PROFILE_ROOT_PID     set by the CLI: a process with another pid
 *                               (a CUDA child of the command) writes
 *                               <stem>.<pid>.json beside the output
 *   MOSAIC_PROFILE_SOURCE       the command line, recorded as "source"
 *   MOSAIC_CAPTURE_VERBOSE=1    one stderr line per profiled kernel
 *   MOSAIC_CAPTURE_REENABLE=1   disable and re-enable the range profiler
 *                               after every kernel (slower; a fallback if
 *                               reusing one profiler object misbehaves)
 *
 * How it works:
 *   - The CUPTI callback API on the driver launch entry points
 *     (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and their
 *     _ptsz forms) gives each launch's function, grid, block, dynamic shared
 *     memory and stream; cuFuncGetAttribute / cuOccupancy* give resources
 *     and occupancy. The CUDA runtime's launches reach these entry points.
 *   - Counters come from the CUPTI Range Profiler (cupti_range_profiler.h)
 *     with auto range and kernel replay: at the API-enter callback of the
 *     FIRST launch of a key the profiler is started, at the API-exit
 *     callback it is stopped and the one range decoded and evaluated with
 *     the Profiler Host API (cupti_profiler_host.h). Kernel replay runs the
 *     kernel once per pass, saving and restoring the memory it writes, so
 *     the program's results are unchanged. Later launches of a key are only
 *     counted. While a launch is being profiled every other launch of the
 *     process waits at its enter callback (one recursive lock), so that no
 *     other kernel lands in the range.
 *   - Each metric of mosaic/profile_metrics.h is validated on its own
 *     with the host API (GetMetricProperties, ConfigAddMetrics); one that
 *     the chip or CUPTI rejects is dropped with one stderr line and
 *     recorded as a problem.
 *   - Kernels launched under stream capture execute nothing at launch and
 *     are not profiled there (their launch data is kept; a later direct
 *     launch of the same key is profiled). Kernels that run only inside
 *     CUDA graphs (cuGraphLaunch) are not seen; graph launches are counted
 *     and reported as a problem.
 *
 * Depends on libc, libcupti and the driver (resolved with dlopen/dlsym from
 * the libcuda.so.1 that loaded this library) only.
 *
 * Seen working on an H200 (driver 580.159.04, CUDA 13.0, CUPTI 2025.3.1),
 * 2026-11-30: all 34 metrics accepted (35 passes), one profiler object
 * reused across kernels (Stop, DecodeData, CounterDataImageInitialize,
 * SetConfig, Start), results of the replayed program unchanged, counts equal
 * to ncu's (tests/profiler/gpu/run_gpu.sh; docs/profile-schema.md).
 */
#define _GNU_SOURCE 1
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "cudrv.h"
#include "mosaic/profile.h"

#define TAG "mosaic-capture: "
#define MAX_DEVICES 64
#define MAX_KEYS 200000       /* distinct keys recorded at all */
#define FLUSH_EVERY 50        /* rewrite the file every N profiled kernels */
#define MAX_CTX_FAILURES 3    /* then the context is no longer profiled */

/* ---- driver entry points ---------------------------------------------- */

/* The list shared with the shim (core/cudrv.h); this library uses the
 * device, function, occupancy and stream-capture entries of it. */
static struct mosaic__drv drv;

static void load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        return;
    mosaic__drv_load(&drv, h, dlsym);
}

/* ---- state ------------------------------------------------------------ */

enum kstate {
    K_PENDING = 0, /* not profiled yet: the next direct launch will be */
    K_DONE,        /* counters collected */
    K_FAILED,      /* profiling failed; launch data only */
    K_SKIPPED      /* over MOSAIC_PROFILE_MAX_KERNELS */
};

struct kextra {
    unsigned char state;
    unsigned char attempts;
    int device;
};

struct dev_state {
    int seen;
    int host_tried, host_ok;
    char chip[64];
    struct mosaic_occ_device occ;
    CUpti_Profiler_Host_Object *host;
    uint8_t *avail; /* counter availability image, kept for the host object */
    uint8_t *config;
    size_t config_size;
    const char *names[MOSAIC_N_METRICS]; /* accepted metric names */
    int ids[MOSAIC_N_METRICS];           /* their metric ids */
    int n;
};

struct ctx_state {
    CUcontext ctx;
    int device;
    CUpti_RangeProfiler_Object *obj;
    uint8_t *counter_data;
    size_t counter_data_size;
    int need_config;
    int fresh; /* obj enabled and not used for a range yet */
    int failures;
    int disabled;
    struct ctx_state *next;
};

static pthread_mutex_t g_lock;
static pthread_once_t g_lock_once = PTHREAD_ONCE_INIT;
static __thread int t_in_profile; /* this thread is inside a profiled launch */

static struct mosaic_profile g_prof;
static struct mosaic_kindex g_index;
static struct kextra *g_extra;
static size_t g_extra_cap;
static struct dev_state g_dev[MAX_DEVICES];
static struct ctx_state *g_ctxs;

static char *g_out_path;
static long g_max_kernels = 2000;
static int g_verbose;
static pid_t g_pid;
static int g_initialized;
static int g_subscribed;
static int g_profiler_initialized;
static int g_profiler_broken; /* cuptiProfilerInitialize failed */
static CUpti_SubscriberHandle g_subscriber;

static uint64_t g_profiled, g_launches, g_capture_launches, g_graph_launches;
static uint64_t g_legacy_launches, g_overflow_launches, g_reenables;
static int g_reenable_each; /* MOSAIC_CAPTURE_REENABLE=1 */
static int g_first_device = -1;
static int g_devices_used;
static int g_last_flush_profiled = -1;

static void lock_init(void)
{
    pthread_mutexattr_t a;

    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&g_lock, &a);
    pthread_mutexattr_destroy(&a);
}

static void lock(void)
{
    pthread_once(&g_lock_once, lock_init);
    pthread_mutex_lock(&g_lock);
}

static void unlock(void)
{
    pthread_mutex_unlock(&g_lock);
}

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    va_list ap;

    fputs(TAG, stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Records a problem once (and prints it the first time). Caller holds the
 * lock or runs single-threaded. */
__attribute__((format(printf, 1, 2))) static void problem(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    size_t before = g_prof.n_problems;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    mosaic_profile_add_problem(&g_prof, "%s", msg);
    if (g_prof.n_problems != before)
        say("%s", msg);
}

static const char *cupti_str(CUptiResult r)
{
    const char *s = NULL;

    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
        return "unknown CUPTI error";
    return s;
}

/* ---- output ----------------------------------------------------------- */

/* The kernel module's version, e.g. "580.159.04", from a line such as
 * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  ...". */
static void read_driver_version(void)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    char line[512];

    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        char *p = strstr(line, "Kernel Module");
        if (!p)
            continue;
        char *save = NULL;
        for (char *tok = strtok_r(p, " \t\n", &save); tok;
             tok = strtok_r(NULL, " \t\n", &save)) {
            int dots = 0, ok = tok[0] >= '0' && tok[0] <= '9';
            for (char *q = tok; ok && *q; q++) {
                dots += *q == '.';
                ok = (*q >= '0' && *q <= '9') || *q == '.';
            }
            if (ok && dots >= 1) {
                mosaic_set_str(&g_prof.gpu.driver, tok);
                break;
            }
        }
        break;
    }
    fclose(f);
}

/* Caller holds the lock. final: at exit (else a partial flush). */
static void write_profile(int final)
{
    char date[32], err[512];
    size_t n_before = g_prof.n_problems;
    int complete_before = g_prof.complete;

    if (!g_out_path)
        return;
    mosaic_now_iso8601(date);
    mosaic_set_str(&g_prof.date, date);
    for (size_t i = 0; i < g_prof.n_kernels; i++)
        mosaic_kernel_derive(&g_prof.kernels[i]);
    if (!final)
        mosaic_profile_add_problem(&g_prof, "partial profile: written while "
                                   "the program was still running (it did "
                                   "not reach a normal exit)");
    if (mosaic_profile_write_file(&g_prof, g_out_path, err, sizeof(err)) != 0)
        say("cannot write the profile: %s", err);
    /* Drop the temporary problem again. */
    while (g_prof.n_problems > n_before)
        free(g_prof.problems[--g_prof.n_problems]);
    g_prof.complete = complete_before;
}

static void finish_problems(void)
{
    size_t pending = 0, failed = 0, skipped = 0;

    for (size_t i = 0; i < g_prof.n_kernels; i++) {
        switch (g_extra[i].state) {
        case K_PENDING:
            pending++;
            break;
        case K_FAILED:
            failed++;
            break;
        case K_SKIPPED:
            skipped++;
            break;
        default:
            break;
        }
    }
    if (pending)
        problem("%zu kernel(s) were never profiled: every launch of them was "
                "under stream capture, the profiler was unavailable for "
                "their context, or the context failed before their counters "
                "were read (a kernel fault); they have launch data but no "
                "counters", pending);
    if (failed)
        problem("%zu kernel(s) could not be profiled (see the earlier "
                "problems); they have launch data but no counters", failed);
    if (skipped)
        problem("%zu kernel(s) beyond MOSAIC_PROFILE_MAX_KERNELS=%ld were not "
                "profiled; raise --max-kernels to profile them", skipped,
                g_max_kernels);
    if (g_graph_launches)
        problem("the program launched CUDA graphs %" PRIu64 " time(s): kernels "
                "that run only inside graphs are not seen; profile the "
                "program without graphs (e.g. eager mode) to cover them",
                g_graph_launches);
    if (g_legacy_launches)
        problem("%" PRIu64 " launch(es) through legacy or multi-device entry "
                "points (cuLaunch, cuLaunchGrid*, "
                "cuLaunchCooperativeKernelMultiDevice) were not profiled",
                g_legacy_launches);
    if (g_overflow_launches)
        problem("more than %d distinct kernel keys: %" PRIu64 " launch(es) of "
                "further keys were only counted", MAX_KEYS,
                g_overflow_launches);
    if (g_devices_used > 1)
        problem("kernels ran on %d devices; \"gpu\" describes device %d only",
                g_devices_used, g_first_device);
}

static void at_exit(void)
{
    struct timespec deadline;
    int locked;

    if (!g_initialized || getpid() != g_pid)
        return; /* a forked child: the parent writes the profile */
    pthread_once(&g_lock_once, lock_init);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    locked = pthread_mutex_timedlock(&g_lock, &deadline) == 0;
    if (!locked) {
        say("another thread is inside a profiled launch at exit; the profile "
            "is written without waiting for it");
        mosaic_profile_add_problem(&g_prof, "the program exited while a "
                                   "kernel was being profiled");
    }
    finish_problems();
    write_profile(1);
    if (g_verbose)
        say("%zu kernel(s), %" PRIu64 " profiled, %" PRIu64 " launches, %"
            PRIu64 " under stream capture, %" PRIu64 " profiler re-enable(s) "
            "-> %s", g_prof.n_kernels, g_profiled, g_launches,
            g_capture_launches, g_reenables,
            g_out_path ? g_out_path : "(nowhere)");
    if (locked)
        unlock();
}

/* ---- device facts and the host side (per device) ----------------------- */

static int dev_attr(CUdevice dev, CUdevice_attribute a)
{
    int v = 0;

    if (!drv.cuDeviceGetAttribute || drv.cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS)
        return -1;
    return v;
}

static void note_device(int dev)
{
    struct dev_state *d = &g_dev[dev];

    if (d->seen)
        return;
    d->seen = 1;
    g_devices_used++;
    d->occ.cc_major = dev_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d->occ.cc_minor = dev_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    d->occ.warp_size = dev_attr(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    d->occ.max_threads_per_sm =
        dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    d->occ.max_blocks_per_sm =
        dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    d->occ.regs_per_sm =
        dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    d->occ.regs_per_block = dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    d->occ.smem_per_sm =
        dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    d->occ.smem_per_block_optin =
        dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    d->occ.reserved_smem_per_block =
        dev_attr(dev, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);

    if (g_first_device >= 0)
        return;
    g_first_device = dev;
    char name[256] = "";
    if (drv.cuDeviceGetName && drv.cuDeviceGetName(name, sizeof(name), dev) == CUDA_SUCCESS)
        mosaic_set_str(&g_prof.gpu.name, name);
    int v = dev_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    g_prof.gpu.sm_count = v >= 0 ? v : MOSAIC_NULL;
    v = dev_attr(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    g_prof.gpu.l2_bytes = v >= 0 ? v : MOSAIC_NULL;
    if (d->occ.cc_major >= 0) {
        char cc[16];
        snprintf(cc, sizeof(cc), "%d.%d", d->occ.cc_major, d->occ.cc_minor);
        mosaic_set_str(&g_prof.gpu.cc, cc);
    }
    int dv = 0;
    if (drv.cuDriverGetVersion && drv.cuDriverGetVersion(&dv) == CUDA_SUCCESS) {
        char s[16];
        snprintf(s, sizeof(s), "%d.%d", dv / 1000, (dv % 1000) / 10);
        mosaic_set_str(&g_prof.gpu.cuda, s);
    }
    read_driver_version();
}

/* cuptiProfilerInitialize, once, before any other profiler call. */
static int profiler_init(void)
{
    CUptiResult r;

    if (g_profiler_initialized)
        return 0;
    if (g_profiler_broken)
        return -1;
    CUpti_Profiler_Initialize_Params pi = {
        .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    if ((r = cuptiProfilerInitialize(&pi)) != CUPTI_SUCCESS) {
        g_profiler_broken = 1;
        problem("cuptiProfilerInitialize failed (%s): no counters", cupti_str(r));
        return -1;
    }
    g_profiler_initialized = 1;
    return 0;
}

/* Chip name, counter availability, host object, validated metric list and
 * config image for one device. 0 when the device can be profiled. */
static int host_setup(int dev, CUcontext ctx)
{
    struct dev_state *d = &g_dev[dev];
    CUptiResult r;
    uint8_t *avail = NULL;

    if (d->host_tried)
        return d->host_ok ? 0 : -1;
    d->host_tried = 1;
    if (profiler_init() != 0)
        return -1;

    CUpti_Device_GetChipName_Params cn = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = (size_t)dev;
    if ((r = cuptiDeviceGetChipName(&cn)) != CUPTI_SUCCESS || !cn.pChipName) {
        problem("device %d: cuptiDeviceGetChipName failed (%s): no counters "
                "for this device", dev, cupti_str(r));
        return -1;
    }
    snprintf(d->chip, sizeof(d->chip), "%s", cn.pChipName);

    CUpti_Profiler_GetCounterAvailability_Params ca = {.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    ca.ctx = ctx;
    if ((r = cuptiProfilerGetCounterAvailability(&ca)) == CUPTI_SUCCESS &&
        ca.counterAvailabilityImageSize > 0) {
        avail = calloc(1, ca.counterAvailabilityImageSize);
        if (avail) {
            ca.pCounterAvailabilityImage = avail;
            r = cuptiProfilerGetCounterAvailability(&ca);
        }
    }
    if (r != CUPTI_SUCCESS) {
        if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
            problem("device %d: the driver allows GPU performance counters to "
                    "admin users only (ERR_NVGPUCTRPERM): run as root, or load "
                    "the nvidia module with NVreg_RestrictProfilingToAdminUsers=0",
                    dev);
        else
            problem("device %d: cuptiProfilerGetCounterAvailability failed "
                    "(%s): no counters for this device", dev, cupti_str(r));
        free(avail);
        return -1;
    }

    CUpti_Profiler_Host_Initialize_Params hi = {.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = d->chip;
    hi.pCounterAvailabilityImage = avail;
    r = cuptiProfilerHostInitialize(&hi);
    d->avail = avail; /* may be referenced by the host object: kept */
    if (r != CUPTI_SUCCESS || !hi.pHostObject) {
        problem("device %d (chip %s): cuptiProfilerHostInitialize failed (%s): "
                "no counters for this device", dev, d->chip, cupti_str(r));
        return -1;
    }
    d->host = hi.pHostObject;

    /* Validate every metric on its own; drop the ones CUPTI rejects. */
    d->n = 0;
    for (int m = 0; m < MOSAIC_N_METRICS; m++) {
        const char *name = mosaic_metric_name(m);
        CUpti_Profiler_Host_GetMetricProperties_Params mp = {.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
        mp.pHostObject = d->host;
        mp.pMetricName = name;
        r = cuptiProfilerHostGetMetricProperties(&mp);
        if (r == CUPTI_SUCCESS) {
            CUpti_Profiler_Host_ConfigAddMetrics_Params am = {.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
            am.pHostObject = d->host;
            am.ppMetricNames = &name;
            am.numMetrics = 1;
            r = cuptiProfilerHostConfigAddMetrics(&am);
        }
        if (r != CUPTI_SUCCESS) {
            problem("metric %s (feature %s) dropped: chip %s / this CUPTI does "
                    "not accept it (%s)", name, mosaic_metric_key(m), d->chip,
                    cupti_str(r));
            continue;
        }
        d->names[d->n] = name;
        d->ids[d->n] = m;
        d->n++;
    }
    if (d->n == 0) {
        problem("device %d (chip %s): no metric was accepted: no counters",
                dev, d->chip);
        return -1;
    }

    CUpti_Profiler_Host_GetConfigImageSize_Params cs = {.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    cs.pHostObject = d->host;
    if ((r = cuptiProfilerHostGetConfigImageSize(&cs)) != CUPTI_SUCCESS ||
        cs.configImageSize == 0 || !(d->config = calloc(1, cs.configImageSize))) {
        problem("device %d: cuptiProfilerHostGetConfigImageSize failed (%s)",
                dev, cupti_str(r));
        return -1;
    }
    CUpti_Profiler_Host_GetConfigImage_Params ci = {.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    ci.pHostObject = d->host;
    ci.configImageSize = cs.configImageSize;
    ci.pConfigImage = d->config;
    if ((r = cuptiProfilerHostGetConfigImage(&ci)) != CUPTI_SUCCESS) {
        problem("device %d: cuptiProfilerHostGetConfigImage failed (%s)", dev,
                cupti_str(r));
        return -1;
    }
    d->config_size = cs.configImageSize;

    CUpti_Profiler_Host_GetNumOfPasses_Params np = {.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    np.pConfigImage = d->config;
    np.configImageSize = d->config_size;
    if (cuptiProfilerHostGetNumOfPasses(&np) == CUPTI_SUCCESS &&
        g_prof.passes == MOSAIC_NULL)
        g_prof.passes = (int64_t)np.numOfPasses;
    if (g_verbose)
        say("device %d: chip %s, %d of %d metrics, %zu replay pass(es)", dev,
            d->chip, d->n, MOSAIC_N_METRICS, (size_t)np.numOfPasses);
    d->host_ok = 1;
    return 0;
}

/* ---- the target side (per context) ------------------------------------ */

static struct ctx_state *find_ctx(CUcontext ctx, int create)
{
    struct ctx_state *c;

    for (c = g_ctxs; c; c = c->next)
        if (c->ctx == ctx)
            return c;
    if (!create || !(c = calloc(1, sizeof(*c))))
        return NULL;
    c->ctx = ctx;
    c->device = -1;
    c->next = g_ctxs;
    g_ctxs = c;
    return c;
}

static void ctx_teardown(struct ctx_state *c)
{
    if (c->obj) {
        CUpti_RangeProfiler_Disable_Params dp = {.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
        dp.pRangeProfilerObject = c->obj;
        cuptiRangeProfilerDisable(&dp);
        c->obj = NULL;
    }
    free(c->counter_data);
    c->counter_data = NULL;
    c->counter_data_size = 0;
    c->need_config = 1;
}

static void ctx_failed(struct ctx_state *c, const char *what, CUptiResult r)
{
    problem("range profiler: %s failed (%s)", what, cupti_str(r));
    ctx_teardown(c);
    if (++c->failures >= MAX_CTX_FAILURES && !c->disabled) {
        c->disabled = 1;
        problem("range profiler failed %d times in one context; its further "
                "kernels are recorded without counters", MAX_CTX_FAILURES);
    }
}

/* Enables the range profiler in the context and sizes its counter data
 * image for one range. 0 when ready. */
static int ctx_setup(struct ctx_state *c)
{
    struct dev_state *d = &g_dev[c->device];
    CUptiResult r;

    if (c->obj)
        return 0;
    CUpti_RangeProfiler_Enable_Params en = {.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = c->ctx;
    if ((r = cuptiRangeProfilerEnable(&en)) != CUPTI_SUCCESS || !en.pRangeProfilerObject) {
        if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
            problem("the driver allows GPU performance counters to admin users "
                    "only (ERR_NVGPUCTRPERM): run as root, or load the nvidia "
                    "module with NVreg_RestrictProfilingToAdminUsers=0");
        ctx_failed(c, "cuptiRangeProfilerEnable", r);
        return -1;
    }
    c->obj = en.pRangeProfilerObject;

    CUpti_RangeProfiler_GetCounterDataSize_Params gs = {.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    gs.pRangeProfilerObject = c->obj;
    gs.pMetricNames = d->names;
    gs.numMetrics = (size_t)d->n;
    gs.maxNumOfRanges = 1;
    gs.maxNumRangeTreeNodes = 1;
    if ((r = cuptiRangeProfilerGetCounterDataSize(&gs)) != CUPTI_SUCCESS ||
        gs.counterDataSize == 0) {
        ctx_failed(c, "cuptiRangeProfilerGetCounterDataSize", r);
        return -1;
    }
    c->counter_data = calloc(1, gs.counterDataSize);
    if (!c->counter_data) {
        ctx_failed(c, "allocating the counter data image", CUPTI_ERROR_OUT_OF_MEMORY);
        return -1;
    }
    c->counter_data_size = gs.counterDataSize;
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ii = {.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ii.pRangeProfilerObject = c->obj;
    ii.counterDataSize = c->counter_data_size;
    ii.pCounterData = c->counter_data;
    if ((r = cuptiRangeProfilerCounterDataImageInitialize(&ii)) != CUPTI_SUCCESS) {
        ctx_failed(c, "cuptiRangeProfilerCounterDataImageInitialize", r);
        return -1;
    }
    c->need_config = 1;
    c->fresh = 1;
    return 0;
}

/* Before the profiled launch: (re)configure and start. 0 when started. */
static int range_start(struct ctx_state *c)
{
    struct dev_state *d = &g_dev[c->device];
    CUptiResult r;

    for (int attempt = 0; attempt < 2; attempt++) {
        if (ctx_setup(c) != 0)
            return -1;
        int fresh = c->fresh;
        const char *what = NULL;
        if (c->need_config) {
            CUpti_RangeProfiler_SetConfig_Params sc = {
                .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
            sc.pRangeProfilerObject = c->obj;
            sc.configSize = d->config_size;
            sc.pConfig = d->config;
            sc.counterDataImageSize = c->counter_data_size;
            sc.pCounterDataImage = c->counter_data;
            sc.range = CUPTI_AutoRange;
            sc.replayMode = CUPTI_KernelReplay;
            sc.maxRangesPerPass = 1;
            sc.numNestingLevels = 1;
            sc.minNestingLevel = 1;
            sc.passIndex = 0;
            sc.targetNestingLevel = 1;
            if ((r = cuptiRangeProfilerSetConfig(&sc)) != CUPTI_SUCCESS)
                what = "cuptiRangeProfilerSetConfig";
            else
                c->need_config = 0;
        }
        if (!what) {
            CUpti_RangeProfiler_Start_Params st = {
                .structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
            st.pRangeProfilerObject = c->obj;
            if ((r = cuptiRangeProfilerStart(&st)) != CUPTI_SUCCESS)
                what = "cuptiRangeProfilerStart";
        }
        if (!what) {
            c->fresh = 0;
            return 0;
        }
        if (fresh) {
            ctx_failed(c, what, r);
            return -1;
        }
        /* A reused profiler object refused: start over with a new one. */
        if (g_verbose)
            say("%s failed on a reused range profiler object (%s); enabling "
                "a new one", what, cupti_str(r));
        g_reenables++;
        ctx_teardown(c);
    }
    return -1;
}

/* Evaluates the one range into k->metrics. */
static void evaluate(struct ctx_state *c, size_t range, struct mosaic_kernel *k)
{
    struct dev_state *d = &g_dev[c->device];
    double vals[MOSAIC_N_METRICS];
    CUptiResult r;

    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = d->host;
    ev.pCounterDataImage = c->counter_data;
    ev.counterDataImageSize = c->counter_data_size;
    ev.rangeIndex = range;
    ev.ppMetricNames = d->names;
    ev.numMetrics = (size_t)d->n;
    ev.pMetricValues = vals;
    if ((r = cuptiProfilerHostEvaluateToGpuValues(&ev)) == CUPTI_SUCCESS) {
        for (int i = 0; i < d->n; i++)
            k->metrics[d->ids[i]] = vals[i];
        return;
    }
    /* One metric may spoil the lot: evaluate them one at a time. */
    for (int i = 0; i < d->n; i++) {
        double v = NAN;
        ev.ppMetricNames = &d->names[i];
        ev.numMetrics = 1;
        ev.pMetricValues = &v;
        CUptiResult r1 = cuptiProfilerHostEvaluateToGpuValues(&ev);
        if (r1 == CUPTI_SUCCESS)
            k->metrics[d->ids[i]] = v;
        else
            problem("metric %s could not be evaluated (%s; all together: %s)",
                    d->names[i], cupti_str(r1), cupti_str(r));
    }
}

/* After the profiled launch: stop, decode, evaluate, reset. 0 on success. */
static int range_finish(struct ctx_state *c, struct mosaic_kernel *k,
                        CUresult launch_rc)
{
    CUptiResult r;
    int rc = -1;

    CUpti_RangeProfiler_Stop_Params sp = {.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = c->obj;
    if ((r = cuptiRangeProfilerStop(&sp)) != CUPTI_SUCCESS) {
        ctx_failed(c, "cuptiRangeProfilerStop", r);
        return -1;
    }
    if (!sp.isAllPassSubmitted)
        problem("range profiler: kernel replay did not submit every pass for "
                "%s; its counters may be incomplete", k->name);
    CUpti_RangeProfiler_DecodeData_Params dd = {.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dd.pRangeProfilerObject = c->obj;
    if ((r = cuptiRangeProfilerDecodeData(&dd)) != CUPTI_SUCCESS) {
        ctx_failed(c, "cuptiRangeProfilerDecodeData", r);
        return -1;
    }
    if (dd.numOfRangeDropped)
        problem("range profiler dropped %zu range(s) (more than one kernel in "
                "a range?)", (size_t)dd.numOfRangeDropped);
    CUpti_RangeProfiler_GetCounterDataInfo_Params gi = {.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    gi.pCounterDataImage = c->counter_data;
    gi.counterDataImageSize = c->counter_data_size;
    if ((r = cuptiRangeProfilerGetCounterDataInfo(&gi)) != CUPTI_SUCCESS) {
        ctx_failed(c, "cuptiRangeProfilerGetCounterDataInfo", r);
        return -1;
    }
    if (gi.numTotalRanges >= 1) {
        if (gi.numTotalRanges > 1)
            problem("range profiler recorded %zu ranges for one launch; the "
                    "first is used", (size_t)gi.numTotalRanges);
        evaluate(c, 0, k);
        rc = 0;
    } else if (launch_rc == CUDA_SUCCESS) {
        problem("range profiler recorded no range for a launch of %s", k->name);
    }

    /* Reset the image for the next kernel; SetConfig again before Start. */
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ii = {.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ii.pRangeProfilerObject = c->obj;
    ii.counterDataSize = c->counter_data_size;
    ii.pCounterData = c->counter_data;
    if ((r = cuptiRangeProfilerCounterDataImageInitialize(&ii)) != CUPTI_SUCCESS)
        ctx_failed(c, "cuptiRangeProfilerCounterDataImageInitialize", r);
    c->need_config = 1;
    if (rc == 0)
        c->failures = 0;
    if (g_reenable_each)
        ctx_teardown(c); /* the most conservative mode: a new object per kernel */
    return rc;
}

/* ---- launch records ----------------------------------------------------- */

struct launch {
    CUfunction f;
    unsigned grid[3], block[3];
    unsigned dyn_smem;
    CUstream stream;
};

static int parse_launch(CUpti_CallbackId cbid, const void *params, struct launch *L)
{
    memset(L, 0, sizeof(*L));
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        /* cuLaunchKernel_params and _ptsz_params have the same layout. */
        const cuLaunchKernel_params *p = params;
        L->f = p->f;
        L->grid[0] = p->gridDimX, L->grid[1] = p->gridDimY, L->grid[2] = p->gridDimZ;
        L->block[0] = p->blockDimX, L->block[1] = p->blockDimY, L->block[2] = p->blockDimZ;
        L->dyn_smem = p->sharedMemBytes;
        L->stream = p->hStream;
        return 0;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
        const cuLaunchCooperativeKernel_params *p = params;
        L->f = p->f;
        L->grid[0] = p->gridDimX, L->grid[1] = p->gridDimY, L->grid[2] = p->gridDimZ;
        L->block[0] = p->blockDimX, L->block[1] = p->blockDimY, L->block[2] = p->blockDimZ;
        L->dyn_smem = p->sharedMemBytes;
        L->stream = p->hStream;
        return 0;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        const cuLaunchKernelEx_params *p = params;
        if (!p->config)
            return -1;
        L->f = p->f;
        L->grid[0] = p->config->gridDimX, L->grid[1] = p->config->gridDimY;
        L->grid[2] = p->config->gridDimZ;
        L->block[0] = p->config->blockDimX, L->block[1] = p->config->blockDimY;
        L->block[2] = p->config->blockDimZ;
        L->dyn_smem = p->config->sharedMemBytes;
        L->stream = p->config->hStream;
        return 0;
    }
    default:
        return -1;
    }
}

/* The identity of a launch handle, which may be a CUkernel cast to
 * CUfunction (the runtime launches library kernels that way), from the
 * resolver shared with the shim. The callback runs inside the launch, in
 * its context, so the CUfunction of a CUkernel can be asked for. Where no
 * name could be read, id->func is still the handle, which the attribute
 * and occupancy queries may accept. */
static void identify(CUfunction f, struct mosaic__kident *id)
{
    mosaic__kident_resolve(&drv, (const void *)f, MOSAIC__KIND_FUNCTION,
                           MOSAIC__KIDENT_FUNCTION, id);
    if (!id->func)
        id->func = f;
}

static int64_t known_or_null(int v)
{
    return v >= 0 ? v : MOSAIC_NULL;
}

static int64_t fattr(CUfunction f, CUfunction_attribute a)
{
    int v = 0;

    if (!drv.cuFuncGetAttribute || drv.cuFuncGetAttribute(&v, a, f) != CUDA_SUCCESS)
        return MOSAIC_NULL;
    return v;
}

static void fill_resources(struct mosaic_kernel *k,
                           const struct mosaic__kident *id, int dev)
{
    struct dev_state *d = &g_dev[dev];
    CUfunction f = id->func;

    /* The resolver's attributes; for a handle it could not name, asked of
     * the handle directly, as before the resolver was shared. */
    k->regs = id->name ? known_or_null(id->num_regs)
                       : fattr(f, CU_FUNC_ATTRIBUTE_NUM_REGS);
    k->static_smem = id->name ? known_or_null(id->static_smem)
                              : fattr(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    k->local_bytes = id->name ? known_or_null(id->local_bytes)
                              : fattr(f, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    k->max_threads = id->name ? known_or_null(id->max_threads)
                              : fattr(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    k->carveout = fattr(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);

    int threads = (int)(k->block[0] * k->block[1] * k->block[2]);
    int blocks = 0;
    if (drv.cuOccupancyMaxActiveBlocksPerMultiprocessor &&
        drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks, f, threads, (size_t)k->dyn_smem) == CUDA_SUCCESS)
        k->occ.blocks_per_sm = blocks;
    if (d->occ.max_threads_per_sm > 0 && d->occ.regs_per_sm > 0 &&
        d->occ.smem_per_sm > 0) {
        struct mosaic_occ_kernel ok = {
            .threads_per_block = threads,
            .regs_per_thread = k->regs == MOSAIC_NULL ? 0 : (int)k->regs,
            .static_smem = k->static_smem == MOSAIC_NULL ? 0 : (int)k->static_smem,
            .dyn_smem = (int)k->dyn_smem,
            .carveout = k->carveout == MOSAIC_NULL ? -1 : (int)k->carveout,
        };
        int64_t bps = k->occ.blocks_per_sm;
        mosaic_occupancy_limits(&d->occ, &ok, &k->occ);
        k->occ.blocks_per_sm = bps;
    }
}

static int ensure_extra(size_t n)
{
    if (n <= g_extra_cap)
        return 0;
    size_t ncap = g_extra_cap ? 2 * g_extra_cap : 256;
    while (ncap < n)
        ncap *= 2;
    struct kextra *ne = realloc(g_extra, ncap * sizeof(*ne));
    if (!ne)
        return -1;
    memset(ne + g_extra_cap, 0, (ncap - g_extra_cap) * sizeof(*ne));
    g_extra = ne;
    g_extra_cap = ncap;
    return 0;
}

/* Finds or creates the kernel for a launch; -1 when over MAX_KEYS or out of
 * memory. Caller holds the lock. */
static long lookup_kernel(const struct launch *L, const char *symbol,
                          CUcontext ctx)
{
    char buf[2048];
    const char *name = symbol;
    int64_t grid[3] = {L->grid[0], L->grid[1], L->grid[2]};
    int64_t block[3] = {L->block[0], L->block[1], L->block[2]};
    char *key;
    long idx;
    struct mosaic__kident id;
    int identified = 0;

    if (!name || !*name) {
        identify(L->f, &id);
        identified = 1;
        name = id.name ? id.name : "?";
    }
    /* Most keys fit the stack buffer: a known one is found without an
     * allocation. */
    int n = mosaic_kernel_key_buf(buf, sizeof(buf), name, grid, block,
                                  L->dyn_smem);
    if (n >= 0 && (size_t)n < sizeof(buf)) {
        idx = mosaic_kindex_find(&g_index, &g_prof, buf);
        if (idx >= 0)
            return idx;
    }
    key = mosaic_kernel_key(name, grid, block, L->dyn_smem);
    if (!key)
        return -1;
    if ((size_t)n >= sizeof(buf) && (idx = mosaic_kindex_find(&g_index, &g_prof, key)) >= 0) {
        free(key);
        return idx;
    }
    if (g_prof.n_kernels >= MAX_KEYS || ensure_extra(g_prof.n_kernels + 1) != 0) {
        free(key);
        return -1;
    }
    struct mosaic_kernel *k = mosaic_profile_add_kernel(&g_prof);
    if (!k) {
        free(key);
        return -1;
    }
    k->key = key;
    k->name = strdup(name);
    memcpy(k->grid, grid, sizeof(grid));
    memcpy(k->block, block, sizeof(block));
    k->dyn_smem = L->dyn_smem;
    idx = (long)(g_prof.n_kernels - 1);
    if (!k->name || mosaic_kindex_add(&g_index, &g_prof, (size_t)idx) != 0) {
        mosaic_kernel_free(k);
        g_prof.n_kernels--;
        return -1;
    }

    /* Resources and occupancy, once per key. */
    uint32_t devid = 0;
    int dev = -1;
    if (cuptiGetDeviceId(ctx, &devid) == CUPTI_SUCCESS && devid < MAX_DEVICES)
        dev = (int)devid;
    g_extra[idx].device = dev;
    g_extra[idx].state = K_PENDING;
    if (dev >= 0) {
        note_device(dev);
        if (!identified)
            identify(L->f, &id);
        fill_resources(k, &id, dev);
    }
    if (g_max_kernels >= 0 && (long)g_prof.n_kernels > g_max_kernels)
        g_extra[idx].state = K_SKIPPED;
    return idx;
}

static int stream_is_capturing(CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r;

    if (!drv.cuStreamIsCapturing)
        return 0;
    r = drv.cuStreamIsCapturing(s, &st);
    if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
        return 1;
    return r == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* correlationData values */
#define CORR_NONE 0
#define CORR_PROFILING 0x4d4f53 /* we hold the lock until the exit callback */

static void on_launch_enter(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    struct launch L;
    long idx;

    if (cb->correlationData)
        *cb->correlationData = CORR_NONE;
    if (t_in_profile)
        return; /* a launch made inside a profiled launch (CUPTI's own) */
    if (parse_launch(cbid, cb->functionParams, &L) != 0)
        return;

    lock();
    g_launches++;
    idx = lookup_kernel(&L, cb->symbolName, cb->context);
    if (idx < 0) {
        g_overflow_launches++;
        unlock();
        return;
    }
    struct mosaic_kernel *k = &g_prof.kernels[idx];
    struct kextra *x = &g_extra[idx];
    k->launches++;
    if (x->state != K_PENDING || x->device < 0 || g_profiler_broken ||
        !cb->correlationData) {
        unlock();
        return;
    }
    if (stream_is_capturing(L.stream)) {
        g_capture_launches++;
        unlock();
        return;
    }
    struct ctx_state *c = find_ctx(cb->context, 1);
    if (!c || c->disabled) {
        unlock();
        return;
    }
    c->device = x->device;
    if (host_setup(x->device, cb->context) != 0) {
        c->disabled = 1;
        unlock();
        return;
    }
    x->attempts++;
    if (range_start(c) != 0) {
        if (x->attempts >= 2)
            x->state = K_FAILED;
        unlock();
        return;
    }
    /* Keep the lock until the exit callback: no other launch may run. */
    t_in_profile = 1;
    *cb->correlationData = CORR_PROFILING | ((uint64_t)idx << 24);
}

static void flush_if_due(void)
{
    if (g_profiled == 1 || (g_profiled % FLUSH_EVERY) == 0) {
        if ((int)g_profiled != g_last_flush_profiled) {
            g_last_flush_profiled = (int)g_profiled;
            write_profile(0);
        }
    }
}

static void on_launch_exit(const CUpti_CallbackData *cb)
{
    if (!cb->correlationData ||
        (*cb->correlationData & 0xffffff) != CORR_PROFILING)
        return;
    long idx = (long)(*cb->correlationData >> 24);
    *cb->correlationData = CORR_NONE;
    /* The lock is held since the enter callback. */
    struct ctx_state *c = find_ctx(cb->context, 0);
    struct mosaic_kernel *k = &g_prof.kernels[idx];
    struct kextra *x = &g_extra[idx];
    CUresult launch_rc = cb->functionReturnValue
                             ? *(const CUresult *)cb->functionReturnValue
                             : CUDA_SUCCESS;
    if (c && c->obj && range_finish(c, k, launch_rc) == 0) {
        x->state = K_DONE;
        g_profiled++;
        mosaic_kernel_derive(k);
        if (g_verbose)
            say("profiled %s grid (%" PRId64 ",%" PRId64 ",%" PRId64 ") block (%"
                PRId64 ",%" PRId64 ",%" PRId64 "): %.0f ns, %d metric(s) missing",
                k->name, k->grid[0], k->grid[1], k->grid[2], k->block[0],
                k->block[1], k->block[2], k->metrics[MOSAIC_M_duration_ns],
                mosaic_kernel_n_missing(k));
        flush_if_due();
    } else if (x->attempts >= 2) {
        x->state = K_FAILED;
    }
    t_in_profile = 0;
    unlock();
}

static void on_context_destroy(CUcontext ctx)
{
    lock();
    struct ctx_state *c = find_ctx(ctx, 0);
    if (c)
        ctx_teardown(c);
    unlock();
}

static void CUPTIAPI callback(void *userdata, CUpti_CallbackDomain domain,
                              CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        const CUpti_CallbackData *cb = data;
        switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
            if (cb->callbackSite == CUPTI_API_ENTER)
                on_launch_enter(cbid, cb);
            else
                on_launch_exit(cb);
            break;
        case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
        case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
            if (cb->callbackSite == CUPTI_API_ENTER)
                __atomic_add_fetch(&g_graph_launches, 1, __ATOMIC_RELAXED);
            break;
        case CUPTI_DRIVER_TRACE_CBID_cuLaunch:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice:
            if (cb->callbackSite == CUPTI_API_ENTER)
                __atomic_add_fetch(&g_legacy_launches, 1, __ATOMIC_RELAXED);
            break;
        default:
            break;
        }
    } else if (domain == CUPTI_CB_DOMAIN_RESOURCE &&
               cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        const CUpti_ResourceData *rd = data;
        on_context_destroy(rd->context);
    }
}

/* ---- initialisation ---------------------------------------------------- */

static char *output_path(void)
{
    const char *out = getenv("MOSAIC_PROFILE_OUT");
    const char *root = getenv("MOSAIC_PROFILE_ROOT_PID");
    char *path = NULL;

    if (!out || !*out)
        return NULL;
    /* "%p" -> pid */
    const char *pp = strstr(out, "%p");
    if (pp) {
        if (asprintf(&path, "%.*s%ld%s", (int)(pp - out), out, (long)getpid(),
                     pp + 2) < 0)
            return NULL;
        return path;
    }
    if (root && *root && atol(root) != (long)getpid()) {
        /* A child process of the profiled command: <stem>.<pid>.json */
        size_t n = strlen(out);
        if (n > 5 && strcmp(out + n - 5, ".json") == 0) {
            if (asprintf(&path, "%.*s.%ld.json", (int)(n - 5), out,
                         (long)getpid()) < 0)
                return NULL;
        } else if (asprintf(&path, "%s.%ld.json", out, (long)getpid()) < 0) {
            return NULL;
        }
        return path;
    }
    return strdup(out);
}

/* The launch entry points the shim interposes too (core/cudrv.h), then the
 * legacy ones that only this library watches (their launches are counted
 * and reported as a problem). */
static const CUpti_CallbackId launch_cbids[] = {
#define MOSAIC__X_CBID(sym, family, is_launch) CUPTI_DRIVER_TRACE_CBID_##sym,
    MOSAIC__LAUNCH_ENTRIES(MOSAIC__X_CBID)
#undef MOSAIC__X_CBID
    CUPTI_DRIVER_TRACE_CBID_cuLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice,
};

MOSAIC__EXPORT int InitializeInjection(void);

MOSAIC__EXPORT int InitializeInjection(void)
{
    CUptiResult r;
    const char *s;

    if (g_initialized)
        return 1;
    g_initialized = 1;
    g_pid = getpid();
    pthread_once(&g_lock_once, lock_init);
    mosaic_profile_init(&g_prof);
    mosaic_set_str(&g_prof.method, MOSAIC_METHOD_CUPTI);
    if ((s = getenv("MOSAIC_PROFILE_SOURCE")) && *s)
        mosaic_set_str(&g_prof.source, s);
    g_verbose = (s = getenv("MOSAIC_CAPTURE_VERBOSE")) && *s && *s != '0';
    g_reenable_each = (s = getenv("MOSAIC_CAPTURE_REENABLE")) && *s && *s != '0';
    if ((s = getenv("MOSAIC_PROFILE_MAX_KERNELS")) && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end || v < 0)
            say("MOSAIC_PROFILE_MAX_KERNELS=\"%s\" is not a non-negative "
                "integer; using 2000", s);
        else
            g_max_kernels = v;
    }
    g_out_path = output_path();
    if (!g_out_path)
        say("MOSAIC_PROFILE_OUT is not set: nothing will be written (use "
            "`mosaic-profile capture -o FILE -- PROGRAM`)");
    load_driver();
    if (!drv.cuFuncGetAttribute)
        problem("driver entry points not found in libcuda.so.1: resources and "
                "occupancy are missing");
    atexit(at_exit);

    CUpti_SubscriberParams sp = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE};
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = "";
    sp.subscriberName = "mosaic-profile";
    sp.oldSubscriberName = old;
    sp.oldSubscriberSize = sizeof(old);
    r = cuptiSubscribe_v2(&g_subscriber, callback, NULL, &sp);
    if (r != CUPTI_SUCCESS) {
        if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
            problem("another CUPTI tool (%s) is attached to this process and "
                    "CUPTI allows one subscriber: no kernel could be seen or "
                    "profiled; run the program without the other tool (Nsight "
                    "Systems/Compute, a framework profiler, "
                    "CUDA_INJECTION64_PATH set twice)",
                    old[0] ? old : "name unknown");
        else
            problem("cuptiSubscribe failed (%s): no kernel could be seen or "
                    "profiled", cupti_str(r));
        return 1;
    }
    g_subscribed = 1;
    for (size_t i = 0; i < sizeof(launch_cbids) / sizeof(launch_cbids[0]); i++) {
        r = cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                launch_cbids[i]);
        if (r != CUPTI_SUCCESS) {
            const char *name = NULL;
            cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, launch_cbids[i], &name);
            problem("cannot enable the CUPTI callback for %s (%s): launches "
                    "through it are not seen", name ? name : "?", cupti_str(r));
        }
    }
    r = cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                            CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (r != CUPTI_SUCCESS)
        say("cannot enable the context-destroy callback (%s)", cupti_str(r));
    return 1;
}
