/*
 * Issue 16 on the H200 (scripts/gpu/argus16_run.sh builds and runs this):
 *
 *   argus16 truth OUTDIR      the known-ground-truth kernels
 *                             (gpu_truth_kernels.cu): arm, run, collect,
 *                             save OUTDIR/truth_*.raw, check (gpu_truth_check.c),
 *                             rows in OUTDIR/truth.tsv
 *   argus16 overhead OUTDIR [ROUNDS]
 *                             the Fig. 14a overhead kernels
 *                             (gpu_overhead_kernels.cu): marker-free, built in
 *                             but unarmed, and armed, each marker design
 *                             (the default, the previous one,
 *                             ARGUS_MARKER_DESIGN=1, and the candidates 3
 *                             and 4: include/argus/region.cuh), interleaved
 *                             in one process, rows in OUTDIR/overhead.tsv
 *
 * Timing (docs/argus.md, "Issue 16 runs"): 10 warm-up launches; a CUDA
 * graph of n launches, n chosen so that one replay takes about 1 ms
 * (1 to 100); a sample is one replay's event time / n; a measurement is
 * the median of G16_REPLAYS samples. When capture fails, n launches are
 * timed with events instead and the method says cuda_event_fallback.
 *
 * Exit status: 0 every check held; 1 a check failed; 2 a CUDA or Argus
 * call failed (the message says which); 3 no GPU.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/argus.h"
#include "gpu_truth.h"

extern "C" {
const void *g16_truth_kernel_on(int kind);
const void *g16_truth_kernel_off(int kind);
unsigned g16_truth_threads_on(int kind);
cudaError_t g16_truth_launch_on(int kind, float *out, g16_spin_rec *log, cudaStream_t s);
cudaError_t g16_truth_launch_off(int kind, float *out, g16_spin_rec *log, cudaStream_t s);
const void *g16_ovh_kernel_on(int body);
cudaError_t g16_ovh_launch_on(int body, const float *in, float *out, int iters, unsigned mask,
                              cudaStream_t s);
cudaError_t g16_ovh_launch_off(int body, const float *in, float *out, int iters, unsigned mask,
                               cudaStream_t s);
const void *g16_ovh_kernel_prev(int body);
cudaError_t g16_ovh_launch_prev(int body, const float *in, float *out, int iters, unsigned mask,
                                cudaStream_t s);
const void *g16_ovh_kernel_d3(int body);
cudaError_t g16_ovh_launch_d3(int body, const float *in, float *out, int iters, unsigned mask,
                              cudaStream_t s);
const void *g16_ovh_kernel_d4(int body);
cudaError_t g16_ovh_launch_d4(int body, const float *in, float *out, int iters, unsigned mask,
                              cudaStream_t s);
cudaError_t g16_ovh_launch_d5(int body, const float *in, float *out, int iters, unsigned mask,
                              cudaStream_t s);
}

#define G16_WARMUP 10
#define G16_REPLAYS 20
#define G16_TARGET_REPLAY_US 1000.0
#define G16_MAX_NREP 100

static bool cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return true;
    fprintf(stderr, "argus16: %s failed: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
    return false;
}

/* The driver calls this program makes, resolved through the runtime
 * (cudaGetDriverEntryPointByVersion) rather than linked, so that the
 * binary starts on a machine without libcuda.so.1 and says there is no
 * GPU instead of failing to load. */
typedef struct drv_fns {
    CUresult (*get_error_name)(CUresult, const char **);
    CUresult (*func_get_module)(CUmodule *, CUfunction);
    CUresult (*htod)(CUdeviceptr, const void *, size_t);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*memset8)(CUdeviceptr, unsigned char, size_t);
} drv_fns;
static drv_fns cu;

static bool resolve_driver(void)
{
    static const char *const names[5] = {"cuGetErrorName", "cuFuncGetModule", "cuMemcpyHtoD",
                                         "cuMemcpyDtoH", "cuMemsetD8"};
    void *p[5];
    for (int i = 0; i < 5; i++) {
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion(names[i], &p[i], 12000, cudaEnableDefault, &q) !=
                cudaSuccess ||
            q != cudaDriverEntryPointSuccess || p[i] == NULL) {
            fprintf(stderr, "argus16: the driver has no %s (CUDA 12.0 version)\n", names[i]);
            return false;
        }
    }
    memcpy(&cu.get_error_name, &p[0], sizeof(void *));
    memcpy(&cu.func_get_module, &p[1], sizeof(void *));
    memcpy(&cu.htod, &p[2], sizeof(void *));
    memcpy(&cu.dtoh, &p[3], sizeof(void *));
    memcpy(&cu.memset8, &p[4], sizeof(void *));
    return true;
}

static bool cu_ok(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return true;
    const char *name = "unknown";
    cu.get_error_name(r, &name);
    fprintf(stderr, "argus16: %s failed: CUresult %d (%s)\n", what, (int)r, name);
    return false;
}

/* ---- timing -------------------------------------------------------------- */

typedef cudaError_t (*launch_fn)(void *ctx, cudaStream_t s);

typedef struct timer {
    launch_fn fn;
    void *ctx;
    cudaGraphExec_t exec; /* NULL: event fallback */
    int nrep;
    cudaEvent_t a, b;
} timer;

static const char *timer_method(const timer *t)
{
    return t->exec ? "cuda_graph" : "cuda_event_fallback";
}

/* The time of n launches (one graph replay, or n plain launches), in us. */
static bool timer_once(timer *t, cudaStream_t s, double *us)
{
    if (!cuda_ok(cudaEventRecord(t->a, s), "cudaEventRecord"))
        return false;
    if (t->exec) {
        if (!cuda_ok(cudaGraphLaunch(t->exec, s), "cudaGraphLaunch"))
            return false;
    } else {
        for (int i = 0; i < t->nrep; i++)
            if (!cuda_ok(t->fn(t->ctx, s), "kernel launch"))
                return false;
    }
    float ms = 0;
    if (!cuda_ok(cudaEventRecord(t->b, s), "cudaEventRecord") ||
        !cuda_ok(cudaEventSynchronize(t->b), "kernel run") ||
        !cuda_ok(cudaEventElapsedTime(&ms, t->a, t->b), "cudaEventElapsedTime"))
        return false;
    *us = (double)ms * 1e3;
    return true;
}

/* Warms up, estimates one launch's time, and captures the graph. */
static bool timer_make(timer *t, launch_fn fn, void *ctx, cudaStream_t s)
{
    memset(t, 0, sizeof(*t));
    t->fn = fn;
    t->ctx = ctx;
    t->nrep = 1;
    if (!cuda_ok(cudaEventCreate(&t->a), "cudaEventCreate") ||
        !cuda_ok(cudaEventCreate(&t->b), "cudaEventCreate"))
        return false;
    for (int i = 0; i < G16_WARMUP; i++)
        if (!cuda_ok(fn(ctx, s), "warm-up launch"))
            return false;
    t->nrep = 5;
    double us;
    if (!timer_once(t, s, &us))
        return false;
    double one = us / t->nrep;
    int n = (int)(G16_TARGET_REPLAY_US / (one > 0.1 ? one : 0.1) + 0.5);
    t->nrep = n < 1 ? 1 : n > G16_MAX_NREP ? G16_MAX_NREP : n;
    cudaGraph_t g = NULL;
    bool captured = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
    for (int i = 0; captured && i < t->nrep; i++)
        captured = fn(ctx, s) == cudaSuccess;
    /* End the capture whatever happened, so that the stream is usable. */
    cudaError_t e = cudaStreamEndCapture(s, &g);
    captured = captured && e == cudaSuccess && g != NULL &&
               cudaGraphInstantiate(&t->exec, g, 0) == cudaSuccess;
    if (g)
        cudaGraphDestroy(g);
    if (!captured) {
        t->exec = NULL;
        (void)cudaGetLastError();
        fprintf(stderr, "argus16: graph capture failed; timing %d plain launches with events\n",
                t->nrep);
    }
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The median over G16_REPLAYS samples of one kernel's time, in us. */
static bool timer_median(timer *t, cudaStream_t s, double *us)
{
    double v[G16_REPLAYS];
    for (int i = 0; i < G16_REPLAYS; i++) {
        if (!timer_once(t, s, &v[i]))
            return false;
        v[i] /= t->nrep;
    }
    *us = median(v, G16_REPLAYS);
    return true;
}

static void timer_free(timer *t)
{
    if (t->exec)
        cudaGraphExecDestroy(t->exec);
    if (t->a)
        cudaEventDestroy(t->a);
    if (t->b)
        cudaEventDestroy(t->b);
}

/* ---- files ---------------------------------------------------------------- */

static bool path_in(char *buf, size_t len, const char *dir, const char *name)
{
    int w = snprintf(buf, len, "%s/%s", dir, name);
    if (w < 0 || (size_t)w >= len) {
        fprintf(stderr, "argus16: the path %s/%s is longer than %zu bytes\n", dir, name, len);
        return false;
    }
    return true;
}

static bool save(const char *dir, const char *name, const void *p, size_t len)
{
    char path[4096];
    if (!path_in(path, sizeof(path), dir, name))
        return false;
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL && fwrite(p, 1, len, f) == len;
    if (f != NULL && fclose(f) != 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "argus16: cannot write %s\n", path);
    return ok;
}

static bool module_of(const void *kernel, CUmodule *mod)
{
    cudaFunction_t fn;
    return cuda_ok(cudaGetFuncBySymbol(&fn, kernel), "cudaGetFuncBySymbol") &&
           cu_ok(cu.func_get_module(mod, (CUfunction)fn), "cuFuncGetModule");
}

/* The greatest common divisor of the warps' globaltimer anchors' distances
 * from the first: the timer's update step, or a divisor of it. */
static unsigned long long gt_step(const void *raw, size_t len)
{
    argus_trace t;
    char msg[256];
    if (argus_decode(raw, len, NULL, &t, msg, sizeof(msg)) != 0)
        return 0;
    unsigned long long step = 0;
    for (size_t i = 0; i < t.nwarps; i++) {
        if (t.warps[i].flags & ARGUS_WARP_EMPTY)
            continue;
        unsigned long long v[2] = {t.warps[i].gt_start - t.gt_min, t.warps[i].gt_end - t.gt_min};
        for (int k = 0; k < 2; k++) {
            unsigned long long a = step, b = v[k];
            while (b) {
                unsigned long long r = a % b;
                a = b;
                b = r;
            }
            step = a;
        }
    }
    argus_trace_free(&t);
    return step;
}

/* ---- truth ---------------------------------------------------------------- */

typedef struct truth_ctx {
    int kind;
    bool on;
    float *out;
    g16_spin_rec *log;
} truth_ctx;

static cudaError_t truth_launch(void *p, cudaStream_t s)
{
    truth_ctx *c = (truth_ctx *)p;
    return c->on ? g16_truth_launch_on(c->kind, c->out, c->log, s)
                 : g16_truth_launch_off(c->kind, c->out, c->log, s);
}

static int run_truth(const char *out)
{
    static const char *const names[4] = {"spin", "calls", "barrier", "roles"};
    char path[4096];
    if (!path_in(path, sizeof(path), out, "truth.tsv"))
        return 2;
    FILE *tsv = fopen(path, "w");
    if (tsv == NULL) {
        fprintf(stderr, "argus16: cannot write %s\n", path);
        return 2;
    }
    g16_sink sink = {tsv, 0, 0, 0};
    float *dout;
    g16_spin_rec *dlog;
    static g16_spin_rec hlog[G16_LOG_ENTRIES];
    cudaStream_t s;
    argus_driver drv;
    char msg[1024];
    CUmodule mod;
    if (!cuda_ok(cudaMalloc(&dout, G16_CTAS * 1024 * sizeof(float)), "cudaMalloc") ||
        !cuda_ok(cudaMalloc(&dlog, sizeof(hlog)), "cudaMalloc (spin log)") ||
        !cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate") || !module_of(g16_truth_kernel_on(0), &mod))
        return 2;
    if (argus_driver_cuda(&drv, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    int rc = 0;
    /* The GPU idles at a low SM clock: about 100 ms of the marker-free spin
     * kernel first, so that the clock has settled before anything is timed
     * or recorded. */
    for (int i = 0; i < 500 && rc == 0; i++)
        if (!cuda_ok(g16_truth_launch_off(0, dout, dlog, s), "warm-up launch"))
            rc = 2;
    if (rc == 0 && !cuda_ok(cudaStreamSynchronize(s), "warm-up"))
        rc = 2;
    for (int kind = 0; kind < 4 && rc == 0; kind++) {
        /* Both builds write the spin log, so that the marker-free time
         * includes its stores as the armed kernel's does. */
        truth_ctx off = {kind, false, dout, dlog}, on = {kind, true, dout, dlog};
        timer toff, ton;
        double off_us = 0, on_us = 0;
        /* The marker-free time is measured before any arming, the unarmed
         * one as information (its markers run, writing nothing). */
        if (!timer_make(&toff, truth_launch, &off, s) || !timer_median(&toff, s, &off_us) ||
            !timer_make(&ton, truth_launch, &on, s) || !timer_median(&ton, s, &on_us)) {
            rc = 2;
            break;
        }
        g16_info(&sink, names[kind], "marker-free kernel time (median per launch)", off_us * 1e3, "ns");
        g16_info(&sink, names[kind], "markers built in, unarmed (median per launch)", on_us * 1e3, "ns");
        fprintf(tsv, "%s\ttiming method\t\t\t\t%s, %d launches per replay, %d replays\tinfo\n",
                names[kind], timer_method(&toff), toff.nrep, G16_REPLAYS);
        timer_free(&toff);
        timer_free(&ton);
        argus_launch l;
        uint32_t grid[3] = {G16_CTAS, 1, 1}, block[3] = {g16_truth_threads_on(kind), 1, 1};
        if (argus_launch_arm(&drv, mod, grid, block, G16_CAP, &l, msg, sizeof(msg)) != 0) {
            fprintf(stderr, "argus16: arm: %s\n", msg);
            rc = 2;
            break;
        }
        void *raw = NULL;
        size_t len = 0;
        /* Wait for the descriptor copy before the launch (see set_desc). */
        /* The log is cleared first, so that what is checked is the armed
         * launch's own. */
        bool ran = cuda_ok(cudaMemsetAsync(dlog, 0, sizeof(hlog), s), "clearing the spin log") &&
                   cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize after arming") &&
                   cuda_ok(truth_launch(&on, s), "armed launch") &&
                   cuda_ok(cudaStreamSynchronize(s), "armed kernel") &&
                   cuda_ok(cudaMemcpy(hlog, dlog, sizeof(hlog), cudaMemcpyDeviceToHost),
                           "reading the spin log");
        int crc = ran ? argus_launch_collect(&l, &raw, &len, msg, sizeof(msg)) : ARGUS_EDRIVER;
        argus_launch_release(&l);
        if (crc != 0) {
            if (ran)
                fprintf(stderr, "argus16: collect: %s\n", msg);
            rc = 2;
            break;
        }
        char name[64];
        snprintf(name, sizeof(name), "truth_%s.raw", names[kind]);
        if (!save(out, name, raw, len))
            rc = 2;
        char lname[64];
        snprintf(lname, sizeof(lname), "truth_%s_spinlog.bin", names[kind]);
        if (kind != 1 && !save(out, lname, hlog, sizeof(hlog)))
            rc = 2;
        int drc;
        switch (kind) {
        case 0:
            drc = g16_check_spin(raw, len, off_us * 1e3, hlog, &sink, msg, sizeof(msg));
            g16_info(&sink, "spin", "globaltimer anchors' step (gcd of distances)",
                     (double)gt_step(raw, len), "ns");
            break;
        case 1:
            drc = g16_check_calls(raw, len, &sink, msg, sizeof(msg));
            break;
        case 2:
            drc = g16_check_barrier(raw, len, hlog, &sink, msg, sizeof(msg));
            break;
        default:
            drc = g16_check_roles(raw, len, hlog, &sink, msg, sizeof(msg));
            break;
        }
        if (drc != 0) {
            fprintf(stderr, "argus16: decode %s: %s\n", name, msg);
            rc = 2;
        }
        free(raw);
    }
    fclose(tsv);
    cudaFree(dout);
    cudaFree(dlog);
    cudaStreamDestroy(s);
    printf("truth: %d checks, %d failed\n", sink.checks, sink.failures);
    return rc ? rc : sink.failures ? 1 : 0;
}

/* ---- overhead -------------------------------------------------------------- */

/* Which build of the overhead kernels a launch runs: marker-free, then the
 * marker builds (B_ON the default design, B_PREV design 1, B_D3 and B_D4
 * the candidates of region.cuh), and B_FLOOR, region.cuh's design 5:
 * markers that write nothing, timed unarmed only, the floor of any marker
 * that keeps the kernel's loops as a marker does. */
enum { B_OFF, B_ON, B_PREV, B_D3, B_D4, B_FLOOR, B_COUNT };
#define G16_NMARKED 4 /* builds with markers that are armed: B_ON..B_D4 */
static const char *const build_tags[B_COUNT] = {"off", "", "_prev", "_d3", "_d4", "_floor"};

typedef struct ovh_ctx {
    int body, iters;
    int build; /* B_* */
    const float *in;
    float *out;
    unsigned mask;
} ovh_ctx;

static cudaError_t ovh_launch(void *p, cudaStream_t s)
{
    ovh_ctx *c = (ovh_ctx *)p;
    switch (c->build) {
    case B_ON:
        return g16_ovh_launch_on(c->body, c->in, c->out, c->iters, c->mask, s);
    case B_PREV:
        return g16_ovh_launch_prev(c->body, c->in, c->out, c->iters, c->mask, s);
    case B_D3:
        return g16_ovh_launch_d3(c->body, c->in, c->out, c->iters, c->mask, s);
    case B_D4:
        return g16_ovh_launch_d4(c->body, c->in, c->out, c->iters, c->mask, s);
    case B_FLOOR:
        return g16_ovh_launch_d5(c->body, c->in, c->out, c->iters, c->mask, s);
    default:
        return g16_ovh_launch_off(c->body, c->in, c->out, c->iters, c->mask, s);
    }
}

/* Writes the descriptor (the armed one or zeros) and waits for the copy:
 * from pageable memory it may still be in flight when cuMemcpyHtoD
 * returns, and the next launch must see it. */
static bool set_desc(const argus_launch *l, const argus_device_desc *d)
{
    return cu_ok(cu.htod((CUdeviceptr)l->desc, d, sizeof(*d)), "writing argus_desc_v1") &&
           cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the descriptor write");
}

/* The default marker design's unarmed and armed builds, the marker-free
 * build twice (A/A), the previous design (ARGUS_MARKER_DESIGN=1) and the
 * candidates 3 and 4, unarmed and armed, and the floor (design 5,
 * unarmed): added % is against V_FREE in every row. */
enum {
    V_FREE,
    V_UNARMED,
    V_ARMED,
    V_FREE2,
    V_PREV_UNARMED,
    V_PREV_ARMED,
    V_D3_UNARMED,
    V_D3_ARMED,
    V_D4_UNARMED,
    V_D4_ARMED,
    V_FLOOR,
    V_COUNT
};
static const char *const variant_names[V_COUNT] = {
    "marker_free", "unarmed",    "armed",    "marker_free_again", "prev_unarmed",
    "prev_armed",  "d3_unarmed", "d3_armed", "d4_unarmed",        "d4_armed",
    "floor"};
static int variant_build(int v)
{
    switch (v) {
    case V_FREE:
    case V_FREE2:
        return B_OFF;
    case V_PREV_UNARMED:
    case V_PREV_ARMED:
        return B_PREV;
    case V_D3_UNARMED:
    case V_D3_ARMED:
        return B_D3;
    case V_D4_UNARMED:
    case V_D4_ARMED:
        return B_D4;
    case V_FLOOR:
        return B_FLOOR;
    default:
        return B_ON;
    }
}
static bool variant_armed(int v)
{
    return v == V_ARMED || v == V_PREV_ARMED || v == V_D3_ARMED || v == V_D4_ARMED;
}

static void spread(const double *v, int n, double *med, double *lo, double *hi)
{
    double tmp[64];
    *lo = *hi = v[0];
    for (int i = 0; i < n; i++) {
        tmp[i] = v[i];
        *lo = v[i] < *lo ? v[i] : *lo;
        *hi = v[i] > *hi ? v[i] : *hi;
    }
    *med = median(tmp, n);
}

#define G16_INPUT_FLOATS (1u << 24) /* 64 MiB, beyond the H200's L2 */

static int run_overhead(const char *out, int rounds)
{
    static const int iters_list[] = {8, 16, 32, 64, 128, 256, 512};
    const int niters = (int)(sizeof(iters_list) / sizeof(iters_list[0]));
    char path[4096];
    if (rounds < 3 || rounds > 64)
        rounds = 7;
    if (!path_in(path, sizeof(path), out, "overhead.tsv"))
        return 2;
    FILE *tsv = fopen(path, "w");
    if (tsv == NULL) {
        fprintf(stderr, "argus16: cannot write %s\n", path);
        return 2;
    }
    if (!path_in(path, sizeof(path), out, "overhead_checks.tsv"))
        return 2;
    FILE *ctsv = fopen(path, "w");
    if (ctsv == NULL) {
        fprintf(stderr, "argus16: cannot write %s\n", path);
        fclose(tsv);
        return 2;
    }
    g16_sink sink = {ctsv, 0, 0, 0};
    fprintf(tsv, "body\titers\tvariant\tkernel_us_median\tkernel_us_min\tkernel_us_max\t"
                 "added_pct_median\tadded_pct_min\tadded_pct_max\tlaunches_per_replay\t"
                 "replays\trounds\tmethod\n");
    float *in, *dout;
    cudaStream_t s;
    CUmodule mods[G16_NMARKED];
    argus_driver drv;
    char msg[1024];
    if (!cuda_ok(cudaMalloc(&in, G16_INPUT_FLOATS * sizeof(float)), "cudaMalloc") ||
        /* Every float 0x3c3c3c3c (about 0.0115): not zeros, which can time
         * differently from real data. */
        !cuda_ok(cudaMemset(in, 0x3c, G16_INPUT_FLOATS * sizeof(float)), "cudaMemset") ||
        !cuda_ok(cudaMalloc(&dout, G16_OVH_CTAS * G16_OVH_THREADS * sizeof(float)), "cudaMalloc") ||
        !cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate") || !module_of(g16_ovh_kernel_on(0), &mods[0]) ||
        !module_of(g16_ovh_kernel_prev(0), &mods[1]) || !module_of(g16_ovh_kernel_d3(0), &mods[2]) ||
        !module_of(g16_ovh_kernel_d4(0), &mods[3]))
        return 2;
    if (argus_driver_cuda(&drv, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    /* About 100 ms of the largest compute kernel first, so that the SM
     * clock has left its idle state before the first configuration. */
    for (int i = 0; i < 100; i++)
        if (!cuda_ok(g16_ovh_launch_off(0, in, dout, 512, G16_INPUT_FLOATS - 1, s), "warm-up launch"))
            return 2;
    if (!cuda_ok(cudaStreamSynchronize(s), "warm-up"))
        return 2;
    /* One armed buffer per marker design (each build is a module of its
     * own, with its own argus_desc_v1) for the whole run: arming is a
     * descriptor write, so switching between armed and unarmed is copying
     * the armed descriptor or zeros into argus_desc_v1 (synchronous,
     * between replays). */
    /* ls[b - 1], armed[b - 1]: build b's launch and armed descriptor. */
    argus_launch ls[G16_NMARKED];
    argus_device_desc armed[G16_NMARKED], unarmed;
    uint32_t grid[3] = {G16_OVH_CTAS, 1, 1}, block[3] = {G16_OVH_THREADS, 1, 1};
    int narmed = 0, rc = 0;
    for (; narmed < G16_NMARKED; narmed++) {
        if (argus_launch_arm(&drv, mods[narmed], grid, block, 2 * G16_OVH_REGIONS, &ls[narmed], msg,
                             sizeof(msg)) != 0) {
            fprintf(stderr, "argus16: arm (build %s): %s\n", build_tags[narmed + 1], msg);
            rc = 2;
            break;
        }
        if (!cu_ok(cu.dtoh(&armed[narmed], (CUdeviceptr)ls[narmed].desc, sizeof(armed[narmed])),
                   "reading argus_desc_v1")) {
            narmed++;
            rc = 2;
            break;
        }
    }
    memset(&unarmed, 0, sizeof(unarmed));
    printf("%-8s %5s %11s %11s %11s %9s %9s %9s %8s %11s %8s %9s %9s %9s %9s %9s\n", "body", "iters",
           "free_us", "unarmed_us", "armed_us", "armed_%", "spread_%", "unarm_%", "A/A_%",
           "prev_arm_%", "new/prev", "d3_arm_%", "d3_unarm%", "d4_arm_%", "d4_unarm%", "floor_%");
    for (int body = 0; body < 2 && rc == 0; body++) {
        for (int ii = 0; ii < niters && rc == 0; ii++) {
            ovh_ctx cx[B_COUNT];
            timer tm[B_COUNT];
            int made = 0;
            for (int b = 0; b < B_COUNT; b++)
                cx[b] = (ovh_ctx){body, iters_list[ii], b, in, dout, G16_INPUT_FLOATS - 1};
            /* Every build armed while its graph is captured and warmed up
             * (as before); each variant then sets its own descriptor. */
            for (int b = 0; b < G16_NMARKED && rc == 0; b++)
                if (!set_desc(&ls[b], &armed[b]))
                    rc = 2;
            for (; made < B_COUNT && rc == 0; made++)
                if (!timer_make(&tm[made], ovh_launch, &cx[made], s))
                    rc = 2;
            if (rc != 0) {
                for (int b = 0; b < made; b++)
                    timer_free(&tm[b]);
                break;
            }
            double t[V_COUNT][64], added[V_COUNT][64];
            for (int r = 0; r < rounds && rc == 0; r++) {
                /* Rotate the order each round, so that no variant always
                 * runs first (after the previous configuration). */
                for (int k = 0; k < V_COUNT && rc == 0; k++) {
                    int v = (k + r) % V_COUNT, b = variant_build(v);
                    bool ok = true;
                    if (b != B_OFF && b != B_FLOOR)
                        ok = set_desc(&ls[b - 1], variant_armed(v) ? &armed[b - 1] : &unarmed);
                    ok = ok && timer_median(&tm[b], s, &t[v][r]);
                    if (!ok)
                        rc = 2;
                }
                for (int v = 0; v < V_COUNT && rc == 0; v++)
                    added[v][r] = 100.0 * (t[v][r] - t[V_FREE][r]) / t[V_FREE][r];
            }
            if (rc != 0)
                break;
            static const char *const bodies[2] = {"compute", "memory"};
            double med[V_COUNT], amed[V_COUNT], alo[V_COUNT], ahi[V_COUNT];
            for (int v = 0; v < V_COUNT; v++) {
                double lo, hi;
                spread(t[v], rounds, &med[v], &lo, &hi);
                spread(added[v], rounds, &amed[v], &alo[v], &ahi[v]);
                const timer *tv = &tm[variant_build(v)];
                fprintf(tsv, "%s\t%d\t%s\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%d\t%d\t%d\t%s\n",
                        bodies[body], iters_list[ii], variant_names[v], med[v], lo, hi, amed[v],
                        alo[v], ahi[v], tv->nrep, G16_REPLAYS, rounds, timer_method(tv));
            }
            /* The new design's added time over the previous one's, both
             * armed, against the same marker-free time. */
            double ratio = amed[V_PREV_ARMED] != 0.0 ? amed[V_ARMED] / amed[V_PREV_ARMED] : 0.0;
            printf("%-8s %5d %11.3f %11.3f %11.3f %9.3f %4.2f:%4.2f %9.3f %8.3f %11.3f %8.3f %9.3f "
                   "%9.3f %9.3f %9.3f %9.3f\n",
                   bodies[body], iters_list[ii], med[V_FREE], med[V_UNARMED], med[V_ARMED],
                   amed[V_ARMED], alo[V_ARMED], ahi[V_ARMED], amed[V_UNARMED], amed[V_FREE2],
                   amed[V_PREV_ARMED], ratio, amed[V_D3_ARMED], amed[V_D3_UNARMED],
                   amed[V_D4_ARMED], amed[V_D4_UNARMED], amed[V_FLOOR]);
            fflush(stdout);
            for (int b = 0; b < B_COUNT; b++)
                timer_free(&tm[b]);
            /* One armed launch of each design into a cleared buffer,
             * decoded: every warp's 64 occurrences are there, and the
             * device's own span. */
            for (int d = 0; d < G16_NMARKED && rc == 0; d++) {
                argus_launch *ld = &ls[d];
                void *raw = malloc(ld->bytes);
                bool ran = raw != NULL && set_desc(ld, &armed[d]) &&
                           cu_ok(cu.memset8((CUdeviceptr)(ld->buf + ARGUS_HEADER_BYTES), 0,
                                            ld->bytes - ARGUS_HEADER_BYTES),
                                 "clearing the region buffer") &&
                           cuda_ok(ovh_launch(&cx[d + 1], s), "armed launch") &&
                           cuda_ok(cudaStreamSynchronize(s), "armed kernel") &&
                           cu_ok(cu.dtoh(raw, (CUdeviceptr)ld->buf, ld->bytes), "reading the buffer");
                char test[64];
                snprintf(test, sizeof(test), "ovh_%s_%d%s", bodies[body], iters_list[ii],
                         build_tags[d + 1]);
                double mean_ns = 0;
                if (!ran ||
                    g16_check_overhead(raw, ld->bytes, test, &mean_ns, &sink, msg, sizeof(msg)) != 0) {
                    if (ran)
                        fprintf(stderr, "argus16: decode %s: %s\n", test, msg);
                    rc = 2;
                }
                if (ran && ii == 0) {
                    char name[96];
                    snprintf(name, sizeof(name), "%s.raw", test);
                    if (!save(out, name, raw, ld->bytes))
                        rc = 2;
                }
                free(raw);
            }
        }
    }
    for (int b = 0; b < narmed; b++)
        argus_launch_release(&ls[b]);
    fclose(tsv);
    fclose(ctsv);
    cudaFree(in);
    cudaFree(dout);
    cudaStreamDestroy(s);
    printf("overhead: %d buffer checks, %d failed\n", sink.checks, sink.failures);
    return rc ? rc : sink.failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "truth") != 0 && strcmp(argv[1], "overhead") != 0)) {
        fprintf(stderr, "usage: argus16 truth OUTDIR | argus16 overhead OUTDIR [ROUNDS]\n");
        return 2;
    }
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("argus16: no GPU present: nothing measured\n");
        return 3;
    }
    if (!resolve_driver())
        return 2;
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) == cudaSuccess)
        printf("argus16: %s, %d SMs, compute capability %d.%d\n", p.name, p.multiProcessorCount,
               p.major, p.minor);
    if (strcmp(argv[1], "truth") == 0)
        return run_truth(argv[2]);
    return run_overhead(argv[2], argc > 3 ? atoi(argv[3]) : 7);
}
