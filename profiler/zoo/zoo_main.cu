/*
 * mosaic-zoo: the harness that runs the kernel zoo (zoo.h) on a GPU and
 * writes what it measures as JSON Lines.
 *
 *   mosaic-zoo list
 *   mosaic-zoo time      [--variants LIST|all] [--sms N,...] [--replays N]
 *   mosaic-zoo corun     --pairs FILE | --all-pairs [--variants LIST]
 *                        [--mode shared|partitioned] [--split X]
 *                        [--repeats R] [--order ab|ba|both] [--gate-us US]
 *   mosaic-zoo placement [--sms N] [--repeats R] [--spin-us US]
 *   mosaic-zoo mps-corun --variant A --start-at EPOCH_NS|+SECONDS
 *                        [--repeats R] [--interval-ms MS] [--sms N]
 *   common: --device N, -o FILE, --seed S, --time-budget SECONDS,
 *           --sync-timeout SECONDS
 *
 * Every output starts with a "meta" record and ends with an "end" record.
 * Exit status: 0 all measurements succeeded; 1 some failed (their records
 * say "ok":false) or a variant's check() failed; 2 bad usage; 3 the time
 * budget ran out (what was measured is written); 4 the CUDA context became
 * unusable (sticky error) or a stream hung, so the run stopped early.
 *
 * Timing follows DESIGN.md ("Timing methodology"): 10 warm-up launches, a
 * CUDA graph of n_repeat launches sized to about 1 ms, 100 event-timed
 * replays, sample = elapsed / n_repeat; per-launch event timing when a graph
 * cannot be captured. Co-runs are "event gated": a one-block kernel spins on
 * a third stream while both kernels are enqueued behind an event it
 * records, so both become ready on the GPU at the same moment regardless of
 * host enqueue cost.
 *
 * Tested on an H200 (sm_90, 132 SMs), driver 580.159.04, CUDA 13.0, with
 * stub variants only (copy, FMA loop, an invalid launch, an out-of-bounds
 * store): green contexts of 8..128 SMs and a 66/remainder split (72 + 60
 * SMs, disjoint), graphs captured on green-context streams, events across
 * the primary context and green contexts, sticky-error and time-budget
 * exits. Every run still prints a "stream_check" record per stream
 * configuration (SMs reached directly and from a graph, SM sets disjoint,
 * cross-stream event timing), since these rest on driver behaviour.
 *
 * --spin-us scales the placement probes: single launches spin that long,
 * the first kernel of a pair 5/3 of it (default 30 us, so 30 and 50 us).
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "greenctx.h"
#include "zoo.h"

/* ---- limits and defaults ------------------------------------------------ */

#define ZOO_WARMUP            10
#define ZOO_TARGET_REPLAY_US  1000.0
#define ZOO_MAX_N_REPEAT      1000
#define ZOO_DEFAULT_REPLAYS   100
#define ZOO_MAX_REPLAYS       1000
#define ZOO_MAX_SLOTS         16
/* Cached instances are evicted when free device memory drops below this. */
#define ZOO_EVICT_BELOW       (10ull << 30)
/* Rotation slots never take the last few GB: families allocate extras. */
#define ZOO_SLOT_RESERVE      (4ull << 30)
#define ZOO_EV_POOL           (2 * ZOO_MAX_REPLAYS + 8)
#define ZOO_MAX_SMID          1024
#define ZOO_PROBE_CAP         8192
#define ZOO_MAX_LIST          64
#define ZOO_MAX_REPEATS       1000
#define ZOO_ERRLEN            1024

enum {
    ZOO_EXIT_OK = 0,
    ZOO_EXIT_FAILED = 1,
    ZOO_EXIT_USAGE = 2,
    ZOO_EXIT_BUDGET = 3,
    ZOO_EXIT_FATAL = 4
};

enum zoo_cmd {
    CMD_NONE, CMD_LIST, CMD_ONCE, CMD_TIME, CMD_CORUN, CMD_PLACEMENT, CMD_MPS,
    CMD_BEHIND, CMD_RESIDENCY
};

struct zoo_opts {
    enum zoo_cmd cmd;
    const char *cmd_name;
    int device;
    const char *out_path;
    unsigned int seed;
    double time_budget_s;
    const char *variants;         /* NULL or "all": every variant */
    int sms[ZOO_MAX_LIST];
    int n_sms;
    const char *pairs_path;
    int all_pairs;
    int partitioned;
    int split;                    /* 0: half the SMs, rounded down to 8 */
    int repeats;                  /* 0: the subcommand's default */
    int order_ab, order_ba;
    const char *variant;
    long long start_at_ns;
    int start_at_set;
    int replays;
    double gate_us;
    double spin_us;
    double interval_ms;
    double sync_timeout_s;
    const char *probes;           /* behind: GxT[+SMEM],... */
    int free_threads[ZOO_MAX_LIST]; /* residency: threads left free per SM */
    int n_free;
};

struct devinfo {
    int ok;
    char name[256];
    char pci[32];
    char driver_str[64];
    int cc_major, cc_minor;
    int sm_count;
    long long l2_bytes;
    int clock_khz, mem_clock_khz, bus_width;
    long long total_mem;
    int smem_per_sm, smem_per_block_optin;
    int max_threads_per_sm, max_blocks_per_sm, regs_per_sm;
    int driver_api, runtime;
    struct gc_info gc;
    int gc_ok;
    char gc_err[256];
};

/* One way of running work: the full GPU or a green context, two streams. */
struct xcfg {
    char label[32];
    int green;
    int sms_requested;
    int sms;                      /* SMs the work may use */
    int sms_ctx;                  /* what the green context reports */
    struct gc_part part;
    cudaStream_t s[2];
    int ok;
    char err[512];
    unsigned char seen[ZOO_MAX_SMID];
    int n_seen;
};

/* Isolated timing of one variant in one configuration. */
struct timing {
    const char *method;           /* "cuda_graph" or "cuda_event_fallback" */
    int n_repeat;
    int n_samples;
    double est_us;
    double samples[ZOO_MAX_REPLAYS];
    double mean, median, min, max, stdev;
    int check;                    /* -1 none, 0 pass, 1 fail */
    char graph_err[384];          /* why the graph path was not used */
};

/* A block's record from the placement probe (written by thread 0). */
struct probe_rec {
    unsigned int block;
    unsigned int smid;
    unsigned long long t0;
    unsigned long long t1;
};

static struct zoo_opts O;
static struct devinfo D;
static FILE *g_out;
static char g_err[ZOO_ERRLEN];
static int g_n_ok, g_n_failed, g_n_check_fail;
static int g_budget_hit;
static int g_fatal;
static char g_fatal_msg[ZOO_ERRLEN + 256];
static double g_t_start;
static cudaEvent_t g_ev[ZOO_EV_POOL];
static int g_n_ev;
static cudaStream_t g_gate_stream;
static cudaEvent_t g_gate_ev;
static struct probe_rec *g_dprobe[2];
static struct probe_rec *g_hprobe[2];
static char g_argv[2048];

/* ---- small helpers ------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long long realtime_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Keeps the first error of a measurement: the root cause, not its echoes. */
static void seterr(const char *fmt, ...)
{
    va_list ap;

    if (g_err[0])
        return;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof(g_err), fmt, ap);
    va_end(ap);
}

static void clear_err(void)
{
    g_err[0] = 0;
}

/* Copies with truncation; snprintf("%s") would do, but draws warnings. */
static void copy_str(char *dst, size_t n, const char *src)
{
    size_t len = strlen(src);

    if (!n)
        return;
    if (len >= n)
        len = n - 1;
    memcpy(dst, src, len);
    dst[len] = 0;
}

/* Families return 0 or a cudaError_t; print both the number and its name. */
static const char *zerr(int rc)
{
    static char buf[160];

    snprintf(buf, sizeof(buf), "%d (%s)", rc,
             rc > 0 ? cudaGetErrorName((cudaError_t)rc) : "harness error");
    return buf;
}

#define CK(call)                                                            \
    do {                                                                    \
        cudaError_t ck__ = (call);                                          \
        if (ck__ != cudaSuccess) {                                          \
            seterr("%s: %s: %s [%s:%d]", #call, cudaGetErrorName(ck__),     \
                   cudaGetErrorString(ck__), __FILE__, __LINE__);           \
            rc = (int)ck__;                                                 \
            goto out;                                                       \
        }                                                                   \
    } while (0)

/* For calls returning 0 or an error code, which may already have said why
 * (seterr keeps the inner, more precise message). */
#define CKZ(call)                                                           \
    do {                                                                    \
        int ckz__ = (call);                                                 \
        if (ckz__ != 0) {                                                   \
            seterr("%s: %s [%s:%d]", #call, zerr(ckz__), __FILE__,          \
                   __LINE__);                                               \
            rc = ckz__;                                                     \
            goto out;                                                       \
        }                                                                   \
    } while (0)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;

    return x < y ? -1 : x > y ? 1 : 0;
}

static double median_of(const double *x, int n)
{
    static double tmp[ZOO_MAX_REPLAYS > ZOO_MAX_REPEATS ? ZOO_MAX_REPLAYS
                                                         : ZOO_MAX_REPEATS];

    if (n <= 0)
        return NAN;
    memcpy(tmp, x, (size_t)n * sizeof(double));
    qsort(tmp, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

static void minmax_of(const double *x, int n, double *mn, double *mx)
{
    int i;

    *mn = n > 0 ? x[0] : NAN;
    *mx = n > 0 ? x[0] : NAN;
    for (i = 1; i < n; i++) {
        if (x[i] < *mn)
            *mn = x[i];
        if (x[i] > *mx)
            *mx = x[i];
    }
}

static void timing_stats(struct timing *t)
{
    double sum = 0, sq = 0;
    int i, n = t->n_samples;

    for (i = 0; i < n; i++)
        sum += t->samples[i];
    t->mean = n ? sum / n : NAN;
    for (i = 0; i < n; i++)
        sq += (t->samples[i] - t->mean) * (t->samples[i] - t->mean);
    t->stdev = n > 1 ? sqrt(sq / (n - 1)) : 0;
    t->median = median_of(t->samples, n);
    minmax_of(t->samples, n, &t->min, &t->max);
}

/* Stop starting new measurements once the budget is spent or the context
 * is unusable; what was measured is already written. */
static int should_stop(void)
{
    if (g_fatal)
        return 1;
    if (O.time_budget_s > 0 && now_s() - g_t_start > O.time_budget_s) {
        if (!g_budget_hit)
            fprintf(stderr, "mosaic-zoo: time budget of %.0f s spent; "
                    "stopping\n", O.time_budget_s);
        g_budget_hit = 1;
        return 1;
    }
    return 0;
}

/* ---- JSON Lines writer -------------------------------------------------- */

static struct {
    char *b;
    size_t len, cap;
    int n;
} J;

static void j_raw(const char *s, size_t n)
{
    if (J.len + n + 1 > J.cap) {
        size_t cap = J.cap ? J.cap : 65536;
        char *nb;

        while (J.len + n + 1 > cap)
            cap *= 2;
        nb = (char *)realloc(J.b, cap);
        if (!nb) {
            fprintf(stderr, "mosaic-zoo: out of host memory for output\n");
            _exit(ZOO_EXIT_FATAL);
        }
        J.b = nb;
        J.cap = cap;
    }
    memcpy(J.b + J.len, s, n);
    J.len += n;
}

static void j_fmt(const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        j_raw(tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void j_esc(const char *s)
{
    j_raw("\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\') {
            j_raw("\\", 1);
            j_raw(s, 1);
        } else if (c < 0x20) {
            j_fmt("\\u%04x", c);
        } else {
            j_raw(s, 1);
        }
    }
    j_raw("\"", 1);
}

static void j_key(const char *k)
{
    if (J.n++)
        j_raw(",", 1);
    j_esc(k);
    j_raw(":", 1);
}

static void j_str(const char *k, const char *v)
{
    j_key(k);
    if (v)
        j_esc(v);
    else
        j_raw("null", 4);
}

static void j_int(const char *k, long long v)
{
    j_key(k);
    j_fmt("%lld", v);
}

static void j_num(const char *k, double v)
{
    j_key(k);
    if (isfinite(v))
        j_fmt("%.4f", v);
    else
        j_raw("null", 4);
}

static void j_bool(const char *k, int v)
{
    j_key(k);
    if (v)
        j_raw("true", 4);
    else
        j_raw("false", 5);
}

static void j_null(const char *k)
{
    j_key(k);
    j_raw("null", 4);
}

static void j_nums(const char *k, const double *a, int n)
{
    int i;

    j_key(k);
    j_raw("[", 1);
    for (i = 0; i < n; i++) {
        if (i)
            j_raw(",", 1);
        if (isfinite(a[i]))
            j_fmt("%.4f", a[i]);
        else
            j_raw("null", 4);
    }
    j_raw("]", 1);
}

static void j_ints(const char *k, const int *a, int n)
{
    int i;

    j_key(k);
    j_raw("[", 1);
    for (i = 0; i < n; i++) {
        if (i)
            j_raw(",", 1);
        j_fmt("%d", a[i]);
    }
    j_raw("]", 1);
}

static void j_begin(const char *record)
{
    J.len = 0;
    J.n = 0;
    j_raw("{", 1);
    j_str("record", record);
}

/* "ok" of a measurement record; these are what the exit status counts. */
static void j_result(int ok)
{
    j_bool("ok", ok);
    if (ok)
        g_n_ok++;
    else
        g_n_failed++;
    if (!ok)
        j_str("error", g_err[0] ? g_err : "unknown error");
}

static void j_end(void)
{
    j_raw("}\n", 2);
    if (fwrite(J.b, 1, J.len, g_out) != J.len)
        fprintf(stderr, "mosaic-zoo: writing output failed: %s\n",
                strerror(errno));
    fflush(g_out);
}

/* ---- fatal conditions --------------------------------------------------- */

static void write_end(int code);

/* A stream that never finishes means a hung kernel: nothing in this process
 * can continue, and tearing down CUDA could block, so leave at once. */
static void fatal_hang(const char *what)
{
    snprintf(g_fatal_msg, sizeof(g_fatal_msg),
             "%s did not finish within %.0f s (hung kernel?); run stopped",
             what, O.sync_timeout_s);
    fprintf(stderr, "mosaic-zoo: %s\n", g_fatal_msg);
    g_fatal = 1;
    write_end(ZOO_EXIT_FATAL);
    _exit(ZOO_EXIT_FATAL);
}

/* Waits for s, giving up (fatally) after --sync-timeout plus three times
 * the work the caller expects to be queued (expect_s). */
static int wait_stream_for(cudaStream_t s, double expect_s)
{
    struct timespec nap = {0, 20000};
    double t0 = now_s();
    double limit = O.sync_timeout_s + 3.0 * expect_s;
    cudaError_t e;

    for (;;) {
        e = cudaStreamQuery(s);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady) {
            seterr("stream: %s: %s", cudaGetErrorName(e),
                   cudaGetErrorString(e));
            return (int)e;
        }
        if (now_s() - t0 > limit)
            fatal_hang("a stream");
        nanosleep(&nap, NULL);
    }
}

static int wait_stream(cudaStream_t s)
{
    return wait_stream_for(s, 0);
}

/* After a failed measurement: clear a non-sticky error so the next one can
 * run, or notice a sticky one (illegal address, launch failure...) that has
 * made the whole context unusable, and stop. */
static void recover(void)
{
    cudaError_t e;

    cudaGetLastError();
    cudaDeviceSynchronize();
    cudaGetLastError();
    e = cudaDeviceSynchronize();
    if (e != cudaSuccess && !g_fatal) {
        g_fatal = 1;
        snprintf(g_fatal_msg, sizeof(g_fatal_msg),
                 "CUDA context unusable after '%s' (%s); remaining "
                 "measurements not run: rerun them in a fresh process",
                 g_err[0] ? g_err : "?", cudaGetErrorName(e));
        fprintf(stderr, "mosaic-zoo: %s\n", g_fatal_msg);
    }
}

/* ---- device code -------------------------------------------------------- */

static __device__ __forceinline__ unsigned long long gtimer(void)
{
    unsigned long long t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ __forceinline__ unsigned int smid_reg(void)
{
    unsigned int s;

    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

/* Holds the gate event back for spin_ns, long enough for the host to
 * enqueue both co-running kernels behind it. The default is 100 us, not the
 * 30 us first planned: on the H200 a 30 us gate had already expired in one
 * of five samples of a pair of trivial kernels, and library launches cost
 * the host more. Each co-run flags samples where it expired anyway. */
__global__ void zoo_gate_kernel(unsigned long long spin_ns)
{
    unsigned long long t0 = gtimer();

    while (gtimer() - t0 < spin_ns) {
    }
}

/* Every thread spins so that the whole block stays resident for spin_ns;
 * thread 0 records where and when the block ran. */
static __device__ __forceinline__ void probe_body(struct probe_rec *out,
                                                  unsigned long long spin_ns)
{
    unsigned long long t0 = gtimer();
    unsigned int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y *
                                               blockIdx.z);

    while (gtimer() - t0 < spin_ns) {
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        out[b].block = b;
        out[b].smid = smid_reg();
        out[b].t0 = t0;
        out[b].t1 = gtimer();
    }
}

/* Two identical probes: the carveout is a per-function attribute, so two
 * co-running kernels with different carveouts must be different functions. */
__global__ void zoo_probe_k1(struct probe_rec *out, unsigned long long spin_ns)
{
    probe_body(out, spin_ns);
}

__global__ void zoo_probe_k2(struct probe_rec *out, unsigned long long spin_ns)
{
    probe_body(out, spin_ns);
}

__global__ void zoo_stamp_kernel(unsigned long long *dst)
{
    *dst = gtimer();
}

/* Blockers for `residency`: hold part of every SM for spin_ns. The sleep
 * one waits in __nanosleep (it issues almost nothing); the issue one runs
 * dependent FMAs between clock reads. */
__global__ void zoo_block_sleep(unsigned long long spin_ns, float *sink)
{
    unsigned long long t0 = gtimer();

    (void)sink;
    while (gtimer() - t0 < spin_ns)
        __nanosleep(2000);
}

__global__ void zoo_block_issue(unsigned long long spin_ns, float *sink)
{
    unsigned long long t0 = gtimer();
    float a = (float)threadIdx.x, b = 1.0001f;
    int i;

    while (gtimer() - t0 < spin_ns)
        for (i = 0; i < 64; i++)
            a = a * b + 0.5f;
    if (a == 0.123f)
        *sink = a;
}

/* The smallest step of %globaltimer seen in a short loop: the resolution of
 * every placement timestamp. */
__global__ void zoo_timer_step_kernel(unsigned long long *out)
{
    unsigned long long prev = gtimer();
    unsigned long long best = ~0ull;
    int changes = 0;
    long long i;

    for (i = 0; i < 50000000LL && changes < 64; i++) {
        unsigned long long t = gtimer();

        if (t != prev) {
            if (t - prev < best)
                best = t - prev;
            prev = t;
            changes++;
        }
    }
    out[0] = best;
}

typedef void (*probe_fn)(struct probe_rec *, unsigned long long);

/* ---- zoo glue ----------------------------------------------------------- */

/* zoo.h declares zoo_category_name for the families' file; this weak
 * fallback keeps the harness linkable whether or not that file defines it
 * (a definition there wins). */
extern "C" __attribute__((weak)) const char *
zoo_category_name(enum zoo_category c)
{
    switch (c) {
    case ZOO_MEMORY:
        return "memory";
    case ZOO_COMPUTE:
        return "compute";
    case ZOO_LATENCY:
        return "latency";
    case ZOO_SMEM:
        return "smem";
    }
    return "unknown";
}

static size_t working_set(const struct zoo_variant *v)
{
    return v->working_set ? v->working_set(v) : 0;
}

static int find_variant(const char *name)
{
    int i;

    for (i = 0; i < zoo_n_variants; i++)
        if (strcmp(zoo_variants[i].name, name) == 0)
            return i;
    return -1;
}

/* One launch of a variant, then the next rotation slot: inside a captured
 * graph this bakes the rotation into the graph. */
static int launch_one(struct zoo_inst *in, cudaStream_t s)
{
    int rc = in->v->launch(in, s);

    in->slot = (in->slot + 1) % in->slots;
    if (rc)
        seterr("%s: launch: %s", in->v->name, zerr(rc));
    return rc;
}

/* Rotation so that the data touched between two uses of one buffer is at
 * least twice L2; capped at ZOO_MAX_SLOTS and by free memory. */
static int choose_slots(const struct zoo_variant *v)
{
    size_t ws = working_set(v);
    size_t l2x2 = 2 * (size_t)D.l2_bytes;
    size_t fr = 0, tot = 0, budget;
    int slots;

    if (ws == 0 || ws >= l2x2)
        return 1;
    slots = (int)((l2x2 + ws - 1) / ws);
    if (slots > ZOO_MAX_SLOTS)
        slots = ZOO_MAX_SLOTS;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
        cudaGetLastError();
        return slots;
    }
    budget = fr > ZOO_SLOT_RESERVE ? fr - ZOO_SLOT_RESERVE : 0;
    while (slots > 1 && (size_t)slots * ws > budget)
        slots--;
    return slots;
}

/* A seed per variant, so a variant's data does not depend on which other
 * variants ran before it. */
static unsigned int variant_seed(const struct zoo_variant *v)
{
    unsigned int h = 2166136261u;
    const char *p;

    for (p = v->name; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h ^ O.seed;
}

static int inst_setup(struct zoo_inst *in, const struct zoo_variant *v,
                      double *setup_s)
{
    double t0 = now_s();
    int rc = 0;

    memset(in, 0, sizeof(*in));
    in->v = v;
    in->slots = choose_slots(v);
    in->slot = 0;
    srand(variant_seed(v));
    rc = v->setup(in);
    if (rc) {
        seterr("%s: setup (slots=%d, working set %zu B): %s", v->name,
               in->slots, working_set(v), zerr(rc));
        /* Families must tolerate teardown of a partial setup; without it a
         * failed large allocation would leak the parts that succeeded. */
        if (in->state && v->teardown)
            v->teardown(in);
        in->state = NULL;
        in->v = NULL;
        cudaGetLastError();
        goto out;
    }
    /* Setup may initialise data on the legacy default stream, which our
     * non-blocking streams do not wait for. */
    CK(cudaDeviceSynchronize());
out:
    *setup_s = now_s() - t0;
    return rc;
}

static void inst_teardown(struct zoo_inst *in)
{
    if (in->v && in->v->teardown)
        in->v->teardown(in);
    in->v = NULL;
    in->state = NULL;
    cudaGetLastError();
}

/* check() reads "the last launch's output": point inst->slot at the slot
 * that launch used while it runs. */
static int run_check(struct zoo_inst *in)
{
    int next = in->slot;
    int r;

    in->slot = (in->slot + in->slots - 1) % in->slots;
    r = in->v->check(in);
    in->slot = next;
    cudaGetLastError();
    return r == 0 ? 0 : 1;
}

/* ---- isolated timing ---------------------------------------------------- */

static int n_repeat_for(double per_launch_us, int slots)
{
    double want = per_launch_us > 0 ? ZOO_TARGET_REPLAY_US / per_launch_us
                                     : ZOO_MAX_N_REPEAT;
    int n = want > ZOO_MAX_N_REPEAT ? ZOO_MAX_N_REPEAT : (int)(want + 0.5);

    if (n < 1)
        n = 1;
    /* A whole number of rotations per replay: otherwise the last launch of
     * one replay and the first of the next reuse the same buffer and hit in
     * L2. This can make a replay of a long kernel longer than 1 ms. */
    if (slots > 1) {
        n = ((n + slots / 2) / slots) * slots;
        if (n < slots)
            n = slots;
        if (n > ZOO_MAX_N_REPEAT)
            n = (ZOO_MAX_N_REPEAT / slots) * slots;
    }
    return n;
}

/* Per-launch duration from back-to-back launches, to size the graph. */
static int estimate_us(struct zoo_inst *in, cudaStream_t s, double *us)
{
    float ms = 0;
    int rc = 0, k, i;

    CK(cudaEventRecord(g_ev[0], s));
    CKZ(launch_one(in, s));
    CK(cudaEventRecord(g_ev[1], s));
    CKZ(wait_stream(s));
    CK(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1]));
    *us = 1e3 * ms;
    if (*us >= ZOO_TARGET_REPLAY_US / 4)
        goto out;
    k = (int)(ZOO_TARGET_REPLAY_US / (*us > 1.0 ? *us : 1.0));
    k = k < 2 ? 2 : k > 200 ? 200 : k;
    CK(cudaEventRecord(g_ev[0], s));
    for (i = 0; i < k; i++)
        CKZ(launch_one(in, s));
    CK(cudaEventRecord(g_ev[1], s));
    CKZ(wait_stream(s));
    CK(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1]));
    *us = 1e3 * ms / k;
out:
    return rc;
}

static int graph_build(struct zoo_inst *in, cudaStream_t s, int n_repeat,
                       cudaGraphExec_t *exec)
{
    cudaGraph_t g = NULL;
    cudaError_t e;
    int rc = 0, lrc = 0, i;

    *exec = NULL;
    /* Thread-local mode: only this thread's unsafe calls break the capture. */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (i = 0; i < n_repeat && !lrc; i++)
        lrc = launch_one(in, s);
    /* Always end the capture, even after a failed launch, so that the
     * stream leaves capture mode. */
    e = cudaStreamEndCapture(s, &g);
    if (lrc) {
        rc = lrc;
        goto out;
    }
    CK(e);
    if (!g) {
        seterr("cudaStreamEndCapture returned no graph");
        rc = -1;
        goto out;
    }
    CK(cudaGraphInstantiate(exec, g, 0));
    CK(cudaGraphUpload(*exec, s));
out:
    if (g)
        cudaGraphDestroy(g);
    if (rc) {
        if (*exec)
            cudaGraphExecDestroy(*exec);
        *exec = NULL;
        cudaGetLastError();
    }
    return rc;
}

/* Replays back to back, one event between each: sample r spans replay r. */
static int graph_time(cudaGraphExec_t ge, cudaStream_t s, int n_replays,
                      int n_repeat, double expect_us, double *samples)
{
    float ms = 0;
    int rc = 0, r;

    CK(cudaEventRecord(g_ev[0], s));
    for (r = 0; r < n_replays; r++) {
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(g_ev[r + 1], s));
    }
    CKZ(wait_stream_for(s, 1e-6 * expect_us * n_replays));
    for (r = 0; r < n_replays; r++) {
        CK(cudaEventElapsedTime(&ms, g_ev[r], g_ev[r + 1]));
        samples[r] = 1e3 * ms / n_repeat;
    }
out:
    return rc;
}

static int graph_replay_us(cudaGraphExec_t ge, cudaStream_t s, double *us)
{
    float ms = 0;
    int rc = 0;

    CK(cudaEventRecord(g_ev[0], s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(g_ev[1], s));
    CKZ(wait_stream(s));
    CK(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1]));
    *us = 1e3 * ms;
out:
    return rc;
}

/* The graph path. A first replay checks the size estimate; when it was far
 * off (back-to-back launches of a short kernel are limited by the host), the
 * graph is captured once more with a corrected n_repeat. */
static int time_with_graph(struct zoo_inst *in, cudaStream_t s,
                           struct timing *t)
{
    cudaGraphExec_t ge = NULL;
    double replay_us = 0;
    int rc = 0, n;

    CKZ(graph_build(in, s, t->n_repeat, &ge));
    CKZ(graph_replay_us(ge, s, &replay_us));
    n = n_repeat_for(replay_us / t->n_repeat, in->slots);
    if (n != t->n_repeat &&
        (replay_us < 0.5 * ZOO_TARGET_REPLAY_US ||
         replay_us > 2.0 * ZOO_TARGET_REPLAY_US)) {
        cudaGraphExecDestroy(ge);
        ge = NULL;
        t->n_repeat = n;
        CKZ(graph_build(in, s, t->n_repeat, &ge));
        CKZ(graph_replay_us(ge, s, &replay_us));
    }
    CKZ(graph_time(ge, s, O.replays, t->n_repeat, replay_us, t->samples));
    t->n_samples = O.replays;
    t->method = "cuda_graph";
out:
    if (ge)
        cudaGraphExecDestroy(ge);
    return rc;
}

static int time_with_events(struct zoo_inst *in, cudaStream_t s,
                            struct timing *t)
{
    float ms = 0;
    int rc = 0, r;

    for (r = 0; r < O.replays; r++) {
        CK(cudaEventRecord(g_ev[2 * r], s));
        CKZ(launch_one(in, s));
        CK(cudaEventRecord(g_ev[2 * r + 1], s));
    }
    CKZ(wait_stream_for(s, 1e-6 * t->est_us * O.replays));
    for (r = 0; r < O.replays; r++) {
        CK(cudaEventElapsedTime(&ms, g_ev[2 * r], g_ev[2 * r + 1]));
        t->samples[r] = 1e3 * ms;
    }
    t->n_samples = O.replays;
    t->n_repeat = 1;
    t->method = "cuda_event_fallback";
out:
    return rc;
}

/* DESIGN.md's methodology for one variant on one stream. */
static int measure_iso(struct zoo_inst *in, cudaStream_t s, int do_check,
                       struct timing *t)
{
    int rc = 0, i;

    memset(t, 0, sizeof(*t));
    t->check = -1;
    for (i = 0; i < ZOO_WARMUP; i++)
        CKZ(launch_one(in, s));
    CKZ(wait_stream(s));
    if (do_check && in->v->check) {
        t->check = run_check(in);
        if (t->check)
            g_n_check_fail++;
    }
    CKZ(estimate_us(in, s, &t->est_us));
    t->n_repeat = n_repeat_for(t->est_us, in->slots);
    if (time_with_graph(in, s, t) != 0) {
        /* Keep why, then try per-launch events on a clean slate. */
        copy_str(t->graph_err, sizeof(t->graph_err), g_err);
        clear_err();
        cudaGetLastError();
        CKZ(wait_stream(s));
        CKZ(time_with_events(in, s, t));
    }
    timing_stats(t);
out:
    return rc;
}

/* ---- the gate and gated launches ---------------------------------------- */

static int gate_launch(void)
{
    int rc = 0;

    zoo_gate_kernel<<<1, 1, 0, g_gate_stream>>>(
        (unsigned long long)(O.gate_us * 1e3));
    CK(cudaGetLastError());
    CK(cudaEventRecord(g_gate_ev, g_gate_stream));
out:
    return rc;
}

static int enqueue_timed(struct zoo_inst *in, cudaStream_t s, cudaEvent_t e0,
                         cudaEvent_t e1)
{
    int rc = 0;

    CK(cudaEventRecord(e0, s));
    CKZ(launch_one(in, s));
    CK(cudaEventRecord(e1, s));
out:
    return rc;
}

/* One launch alone behind the gate: the co-run's own baseline, timed the
 * same way as the co-run (a single event-bracketed launch). */
static int gated_solo(struct zoo_inst *in, cudaStream_t s, int reps,
                      double *samples)
{
    float ms = 0;
    int rc = 0, r;

    for (r = 0; r < reps; r++) {
        CKZ(gate_launch());
        CK(cudaStreamWaitEvent(s, g_gate_ev, 0));
        CKZ(enqueue_timed(in, s, g_ev[0], g_ev[1]));
        CKZ(wait_stream(s));
        CKZ(wait_stream(g_gate_stream));
        CK(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1]));
        samples[r] = 1e3 * ms;
    }
out:
    return rc;
}

struct co_sample {
    double a_us, b_us;            /* each kernel's start-to-end */
    double t_sa, t_sb, t_ea, t_eb; /* relative to the gate's event */
    int gate_expired;
};

static int corun_once(struct zoo_inst *ia, cudaStream_t sa,
                      struct zoo_inst *ib, cudaStream_t sb, int b_first,
                      struct co_sample *o)
{
    cudaError_t q;
    float ms = 0;
    int rc = 0;

    CKZ(gate_launch());
    CK(cudaStreamWaitEvent(sa, g_gate_ev, 0));
    CK(cudaStreamWaitEvent(sb, g_gate_ev, 0));
    if (b_first) {
        CKZ(enqueue_timed(ib, sb, g_ev[2], g_ev[3]));
        CKZ(enqueue_timed(ia, sa, g_ev[0], g_ev[1]));
    } else {
        CKZ(enqueue_timed(ia, sa, g_ev[0], g_ev[1]));
        CKZ(enqueue_timed(ib, sb, g_ev[2], g_ev[3]));
    }
    /* If the gate already finished, the host was slower than the gate and
     * the first kernel may have started alone: flag the sample. */
    q = cudaEventQuery(g_gate_ev);
    if (q != cudaSuccess && q != cudaErrorNotReady)
        CK(q);
    o->gate_expired = q == cudaSuccess;
    CKZ(wait_stream(sa));
    CKZ(wait_stream(sb));
    CKZ(wait_stream(g_gate_stream));
    CK(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1]));
    o->a_us = 1e3 * ms;
    CK(cudaEventElapsedTime(&ms, g_ev[2], g_ev[3]));
    o->b_us = 1e3 * ms;
    CK(cudaEventElapsedTime(&ms, g_gate_ev, g_ev[0]));
    o->t_sa = 1e3 * ms;
    CK(cudaEventElapsedTime(&ms, g_gate_ev, g_ev[1]));
    o->t_ea = 1e3 * ms;
    CK(cudaEventElapsedTime(&ms, g_gate_ev, g_ev[2]));
    o->t_sb = 1e3 * ms;
    CK(cudaEventElapsedTime(&ms, g_gate_ev, g_ev[3]));
    o->t_eb = 1e3 * ms;
out:
    return rc;
}

/* ---- stream configurations ---------------------------------------------- */

static void cfg_init(struct xcfg *c, const char *label)
{
    memset(c, 0, sizeof(*c));
    copy_str(c->label, sizeof(c->label), label);
}

static int cfg_open_full(struct xcfg *c, const char *label)
{
    int rc = 0, i;

    cfg_init(c, label);
    c->sms_requested = D.sm_count;
    c->sms = D.sm_count;
    c->sms_ctx = D.sm_count;
    for (i = 0; i < 2; i++)
        CK(cudaStreamCreateWithFlags(&c->s[i], cudaStreamNonBlocking));
    c->ok = 1;
out:
    if (rc)
        copy_str(c->err, sizeof(c->err), g_err);
    return rc;
}

static int cfg_green_streams(struct xcfg *c)
{
    int rc = 0, i;
    char err[256];

    for (i = 0; i < 2; i++) {
        err[0] = 0;
        rc = gc_stream_create(&c->part, &c->s[i], err, sizeof(err));
        if (rc) {
            seterr("%s", err);
            return rc;
        }
    }
    c->ok = 1;
    return 0;
}

static int cfg_open_green(struct xcfg *c, int n, const char *label)
{
    char err[512];
    int rc;

    cfg_init(c, label);
    c->green = 1;
    c->sms_requested = n;
    err[0] = 0;
    rc = gc_create(O.device, n, &c->part, NULL, err, sizeof(err));
    if (rc) {
        seterr("%s", err);
    } else {
        c->sms = c->part.sm_split;
        c->sms_ctx = c->part.sm_ctx;
        rc = cfg_green_streams(c);
    }
    if (rc)
        copy_str(c->err, sizeof(c->err), g_err);
    return rc;
}

/* Both parts from one split, so their SM sets are disjoint. */
static int cfg_open_split(struct xcfg *a, struct xcfg *b, int x)
{
    char err[512];
    int rc;

    cfg_init(a, "group");
    cfg_init(b, "rest");
    a->green = b->green = 1;
    a->sms_requested = x;
    b->sms_requested = D.sm_count - x;
    err[0] = 0;
    rc = gc_create(O.device, x, &a->part, &b->part, err, sizeof(err));
    if (rc) {
        seterr("%s", err);
    } else {
        a->sms = a->part.sm_split;
        a->sms_ctx = a->part.sm_ctx;
        b->sms = b->part.sm_split;
        b->sms_ctx = b->part.sm_ctx;
        rc = cfg_green_streams(a);
        if (!rc)
            rc = cfg_green_streams(b);
    }
    if (rc) {
        copy_str(a->err, sizeof(a->err), g_err);
        copy_str(b->err, sizeof(b->err), g_err);
        a->ok = b->ok = 0;
    }
    return rc;
}

static void cfg_close(struct xcfg *c)
{
    int i;

    for (i = 0; i < 2; i++) {
        if (!c->s[i])
            continue;
        if (c->green)
            gc_stream_destroy(c->s[i]);
        else
            cudaStreamDestroy(c->s[i]);
        c->s[i] = NULL;
    }
    if (c->green)
        gc_destroy(&c->part);
    c->ok = 0;
}

static int probe_alloc(void)
{
    int rc = 0, k;

    for (k = 0; k < 2; k++) {
        if (g_dprobe[k])
            continue;
        CK(cudaMalloc((void **)&g_dprobe[k],
                      ZOO_PROBE_CAP * sizeof(struct probe_rec)));
        g_hprobe[k] = (struct probe_rec *)calloc(ZOO_PROBE_CAP,
                                                 sizeof(struct probe_rec));
        if (!g_hprobe[k]) {
            seterr("out of host memory");
            rc = -1;
            goto out;
        }
    }
out:
    return rc;
}

/* Resets a probe function's attributes: placement experiments change them
 * and they persist per function. */
static int probe_attrs(probe_fn fn, int smem, int carveout)
{
    int rc = 0;

    CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            smem));
    CK(cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout,
                            carveout));
out:
    return rc;
}

/* Distinct SMs in probe buffer k (n blocks); -1 when a block wrote nothing. */
static int probe_count_sms(int k, int n, unsigned char *seen)
{
    int i, cnt = 0;

    memset(seen, 0, ZOO_MAX_SMID);
    for (i = 0; i < n; i++) {
        const struct probe_rec *p = &g_hprobe[k][i];

        if (p->t0 == 0 || p->smid >= ZOO_MAX_SMID)
            return -1;
        if (!seen[p->smid]++)
            cnt++;
    }
    return cnt;
}

static int probe_run(probe_fn fn, int k, int grid, int threads, int smem,
                     double spin_us, cudaStream_t s)
{
    int rc = 0;

    CK(cudaMemsetAsync(g_dprobe[k], 0, (size_t)grid * sizeof(struct probe_rec),
                       s));
    fn<<<grid, threads, smem, s>>>(g_dprobe[k],
                                   (unsigned long long)(spin_us * 1e3));
    CK(cudaGetLastError());
out:
    return rc;
}

static int probe_fetch(int k, int grid, cudaStream_t s)
{
    int rc = 0;

    CKZ(wait_stream(s));
    CK(cudaMemcpy(g_hprobe[k], g_dprobe[k],
                  (size_t)grid * sizeof(struct probe_rec),
                  cudaMemcpyDeviceToHost));
out:
    return rc;
}

/*
 * The self-check of one configuration: a probe grid large enough for
 * several waves must reach exactly the configuration's SMs, also when
 * replayed from a CUDA graph captured on its stream; an event recorded on
 * its stream must time against the gate event on the primary context's
 * stream (the co-run timeline relies on it); and two parts of a split must
 * not share an SM.
 */
static void cfg_check(struct xcfg *c, const struct xcfg *other)
{
    unsigned char seen_graph[ZOO_MAX_SMID];
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    int grid = 8 * D.sm_count;
    int rc = 0, n_graph = -1, overlap = -1, i, n_list = 0;
    int smids[ZOO_MAX_SMID];
    double cross_us = NAN;
    float ms = 0;
    int ok;

    clear_err();
    c->n_seen = -1;
    if (!c->ok) {
        seterr("%s", c->err);
        rc = -1;
        goto out;
    }
    if (grid > ZOO_PROBE_CAP)
        grid = ZOO_PROBE_CAP;
    CKZ(probe_alloc());
    CKZ(probe_attrs(zoo_probe_k1, 0, -1));
    CKZ(probe_run(zoo_probe_k1, 0, grid, 1024, 0, 5.0, c->s[0]));
    CKZ(probe_fetch(0, grid, c->s[0]));
    c->n_seen = probe_count_sms(0, grid, c->seen);

    CK(cudaMemsetAsync(g_dprobe[0], 0, (size_t)grid * sizeof(struct probe_rec),
                       c->s[0]));
    CKZ(wait_stream(c->s[0]));
    CK(cudaStreamBeginCapture(c->s[0], cudaStreamCaptureModeThreadLocal));
    zoo_probe_k1<<<grid, 1024, 0, c->s[0]>>>(g_dprobe[0], 5000ull);
    CK(cudaStreamEndCapture(c->s[0], &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, c->s[0]));
    CKZ(probe_fetch(0, grid, c->s[0]));
    n_graph = probe_count_sms(0, grid, seen_graph);

    CKZ(gate_launch());
    CK(cudaStreamWaitEvent(c->s[1], g_gate_ev, 0));
    CK(cudaEventRecord(g_ev[0], c->s[1]));
    CKZ(wait_stream(c->s[1]));
    CKZ(wait_stream(g_gate_stream));
    CK(cudaEventElapsedTime(&ms, g_gate_ev, g_ev[0]));
    cross_us = 1e3 * ms;

    if (other && other->n_seen > 0) {
        overlap = 0;
        for (i = 0; i < ZOO_MAX_SMID; i++)
            overlap += c->seen[i] && other->seen[i];
    }
out:
    if (ge)
        cudaGraphExecDestroy(ge);
    if (g)
        cudaGraphDestroy(g);
    if (rc) {
        /* A capture left open would poison every later call on s[0]. */
        cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;

        if (c->ok && cudaStreamIsCapturing(c->s[0], &st) == cudaSuccess &&
            st != cudaStreamCaptureStatusNone) {
            cudaGraph_t junk = NULL;

            cudaStreamEndCapture(c->s[0], &junk);
            if (junk)
                cudaGraphDestroy(junk);
        }
        recover();
    }
    for (i = 0; c->n_seen > 0 && i < ZOO_MAX_SMID; i++)
        if (c->seen[i])
            smids[n_list++] = i;
    ok = rc == 0 && c->n_seen > 0 && c->n_seen <= c->sms &&
         n_graph > 0 && n_graph <= c->sms && overlap <= 0 &&
         (!c->green || c->sms_ctx == c->sms);
    if (rc == 0 && !ok)
        seterr("configuration check failed: observed %d SMs (graph %d) for "
               "%d provisioned (context reports %d), %d shared with the "
               "other part", c->n_seen, n_graph, c->sms, c->sms_ctx, overlap);
    j_begin("stream_check");
    j_result(ok);
    j_str("label", c->label);
    j_bool("green", c->green);
    j_int("sms_requested", c->sms_requested);
    j_int("sms", c->sms);
    j_int("sms_ctx", c->sms_ctx);
    j_int("sms_observed", c->n_seen);
    j_int("sms_observed_graph", n_graph);
    if (other)
        j_int("sms_shared_with_other", overlap);
    j_num("gate_to_stream_event_us", cross_us);
    j_ints("smids", smids, n_list);
    j_end();
    if (!ok && c->green)
        fprintf(stderr, "mosaic-zoo: stream check of %s (%d SMs) failed: %s\n",
                c->label, c->sms, g_err);
}

/* ---- records ------------------------------------------------------------ */

static void j_variant(const struct zoo_variant *v)
{
    j_str("variant", v->name);
    j_str("family", v->family);
    j_str("category", zoo_category_name(v->category));
}

static void j_cfg(const struct xcfg *c)
{
    j_int("sms", c->sms);
    j_int("sms_requested", c->sms_requested);
    j_bool("green", c->green);
}

static void j_timing(const struct timing *t, const char *prefix)
{
    char k[64];

#define TK(name) (snprintf(k, sizeof(k), "%s%s", prefix, name), k)
    j_str(TK("method"), t->method);
    j_int(TK("n_repeat"), t->n_repeat);
    j_num(TK("mean_us"), t->mean);
    j_num(TK("median_us"), t->median);
    j_num(TK("min_us"), t->min);
    j_num(TK("max_us"), t->max);
    j_num(TK("stdev_us"), t->stdev);
    j_num(TK("estimate_us"), t->est_us);
    j_str(TK("check"), t->check < 0 ? "none" : t->check ? "fail" : "pass");
    if (t->graph_err[0])
        j_str(TK("graph_error"), t->graph_err);
#undef TK
}

/* ---- variant selection -------------------------------------------------- */

static void error_record(const char *what)
{
    clear_err();
    seterr("%s", what);
    j_begin("error");
    j_result(0);
    j_end();
    fprintf(stderr, "mosaic-zoo: %s\n", what);
}

/* spec: NULL/"all", or comma-separated variant names or family names. */
static int select_variants(const char *spec, unsigned char *sel)
{
    char buf[4096];
    char *tok, *save = NULL;
    char msg[256];
    int i, n = 0;

    memset(sel, 0, (size_t)zoo_n_variants);
    if (!spec || strcmp(spec, "all") == 0) {
        memset(sel, 1, (size_t)zoo_n_variants);
        return zoo_n_variants;
    }
    snprintf(buf, sizeof(buf), "%s", spec);
    for (tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int hit = 0;

        for (i = 0; i < zoo_n_variants; i++) {
            if (strcmp(zoo_variants[i].name, tok) == 0 ||
                strcmp(zoo_variants[i].family, tok) == 0) {
                sel[i] = 1;
                hit = 1;
            }
        }
        if (!hit) {
            snprintf(msg, sizeof(msg), "unknown variant or family '%s'", tok);
            error_record(msg);
        }
    }
    for (i = 0; i < zoo_n_variants; i++)
        n += sel[i];
    return n;
}

/* ---- list --------------------------------------------------------------- */

static int cmd_list(void)
{
    int i;

    for (i = 0; i < zoo_n_variants; i++) {
        const struct zoo_variant *v = &zoo_variants[i];
        long long p[4];
        int k;

        for (k = 0; k < 4; k++)
            p[k] = v->p[k];
        j_begin("variant");
        j_str("name", v->name);
        j_str("family", v->family);
        j_str("category", zoo_category_name(v->category));
        j_int("working_set_bytes", (long long)working_set(v));
        j_key("p");
        j_fmt("[%lld,%lld,%lld,%lld]", p[0], p[1], p[2], p[3]);
        j_bool("has_check", v->check != NULL);
        j_end();
    }
    return 0;
}

/* ---- once --------------------------------------------------------------- */

/*
 * One launch of each selected variant, nothing else on the GPU: the program
 * a profiler (mosaic-profile capture, ncu) runs to see every zoo kernel
 * exactly once. Setup and teardown work is not launched between the marks
 * the record gives, but initialisation kernels of setup do run.
 */
static int cmd_once(void)
{
    unsigned char *sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1);
    cudaStream_t s;
    int i;

    if (!sel || cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        error_record("cannot create a stream or out of host memory");
        free(sel);
        return -1;
    }
    select_variants(O.variants, sel);
    for (i = 0; i < zoo_n_variants && !should_stop(); i++) {
        struct zoo_inst in;
        double setup_s = 0;
        int ok;

        if (!sel[i])
            continue;
        clear_err();
        ok = inst_setup(&in, &zoo_variants[i], &setup_s) == 0 &&
             launch_one(&in, s) == 0 &&
             cudaStreamSynchronize(s) == cudaSuccess;
        if (!ok)
            cudaGetLastError();
        j_begin("once");
        j_str("variant", zoo_variants[i].name);
        j_result(ok);
        j_end();
        inst_teardown(&in);
    }
    cudaStreamDestroy(s);
    free(sel);
    return 0;
}

/* ---- time --------------------------------------------------------------- */

static void emit_time(const struct zoo_variant *v, const struct xcfg *c,
                      const struct zoo_inst *in, const struct timing *t,
                      int ok, double setup_s)
{
    size_t ws = working_set(v);

    j_begin("time");
    j_result(ok);
    j_variant(v);
    j_cfg(c);
    j_int("working_set_bytes", (long long)ws);
    j_int("l2_bytes", D.l2_bytes);
    j_int("slots", in ? in->slots : 0);
    j_int("rotation_bytes", in ? (long long)ws * in->slots : 0);
    j_num("setup_s", setup_s);
    if (ok) {
        j_timing(t, "");
        j_int("n_replays", t->n_samples);
        j_num("gbps_at_median",
              ws > 0 && t->median > 0 ? ws / (t->median * 1e3) : NAN);
        j_nums("samples_us", t->samples, t->n_samples);
    }
    j_end();
}

static int open_cfgs_for_sms(struct xcfg *cfgs, int *n)
{
    char label[32];
    int i;

    if (O.n_sms == 0) {
        clear_err();
        cfg_open_full(&cfgs[0], "full");
        *n = 1;
        return 0;
    }
    for (i = 0; i < O.n_sms; i++) {
        clear_err();
        if (O.sms[i] >= D.sm_count) {
            cfg_open_full(&cfgs[i], "full");
        } else {
            snprintf(label, sizeof(label), "green%d", O.sms[i]);
            if (O.sms[i] % 8)
                fprintf(stderr, "mosaic-zoo: --sms %d is not a multiple of "
                        "8; the driver rounds it up\n", O.sms[i]);
            cfg_open_green(&cfgs[i], O.sms[i], label);
        }
        if (!cfgs[i].ok)
            fprintf(stderr, "mosaic-zoo: configuration for %d SMs: %s\n",
                    O.sms[i], cfgs[i].err);
    }
    *n = O.n_sms;
    return 0;
}

static void time_variant(const struct zoo_variant *v, struct xcfg *cfgs,
                         int n_cfg, struct timing *t)
{
    struct zoo_inst in;
    double setup_s = 0;
    int i, rc;

    clear_err();
    memset(&in, 0, sizeof(in));
    fprintf(stderr, "mosaic-zoo: time %s\n", v->name);
    rc = inst_setup(&in, v, &setup_s);
    if (rc) {
        for (i = 0; i < n_cfg; i++)
            emit_time(v, &cfgs[i], NULL, t, 0, setup_s);
        recover();
        return;
    }
    for (i = 0; i < n_cfg && !should_stop(); i++) {
        clear_err();
        if (!cfgs[i].ok) {
            seterr("configuration unavailable: %s", cfgs[i].err);
            emit_time(v, &cfgs[i], &in, t, 0, setup_s);
            continue;
        }
        rc = measure_iso(&in, cfgs[i].s[0], 1, t);
        emit_time(v, &cfgs[i], &in, t, rc == 0, setup_s);
        if (rc)
            recover();
        if (g_fatal)
            break;
    }
    inst_teardown(&in);
}

static int cmd_time(void)
{
    struct xcfg cfgs[ZOO_MAX_LIST];
    unsigned char *sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1);
    struct timing *t = (struct timing *)calloc(1, sizeof(struct timing));
    int n_cfg = 0, i;

    if (!sel || !t) {
        error_record("out of host memory");
        free(sel);
        free(t);
        return -1;
    }
    select_variants(O.variants, sel);
    open_cfgs_for_sms(cfgs, &n_cfg);
    for (i = 0; i < n_cfg; i++)
        cfg_check(&cfgs[i], NULL);
    for (i = 0; i < zoo_n_variants && !should_stop(); i++)
        if (sel[i])
            time_variant(&zoo_variants[i], cfgs, n_cfg, t);
    for (i = 0; i < n_cfg; i++)
        cfg_close(&cfgs[i]);
    free(sel);
    free(t);
    return 0;
}

/* ---- corun -------------------------------------------------------------- */

struct cache_ent {
    struct zoo_inst inst;
    int live;
    int failed;
    unsigned long long last_use;
    size_t bytes;
    double setup_s;
    char err[512];
};

struct iso_ent {
    int done;
    int rc;
    struct timing t;
    double gated_med, gated_min, gated_max;
    char err[512];
};

struct corun_state {
    struct xcfg a, b;             /* where A runs, where B runs */
    struct cache_ent *cache;      /* [variant * 2 + copy] */
    struct iso_ent *iso;          /* [variant * 2 + side] */
    unsigned long long clock;
    int repeats;
    int n_live;
};

static void cache_evict(struct corun_state *C, struct cache_ent *e)
{
    inst_teardown(&e->inst);
    e->live = 0;
    C->n_live--;
}

/* Keeps free memory above ZOO_EVICT_BELOW plus what the next setup needs,
 * dropping the least recently used instances first (never keep). */
static void cache_make_room(struct corun_state *C, size_t need,
                            const struct cache_ent *keep)
{
    size_t fr = 0, tot = 0;
    int i;

    for (;;) {
        struct cache_ent *lru = NULL;

        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
            cudaGetLastError();
            return;
        }
        if (fr >= ZOO_EVICT_BELOW + need)
            return;
        for (i = 0; i < 2 * zoo_n_variants; i++) {
            struct cache_ent *e = &C->cache[i];

            if (e->live && e != keep && (!lru || e->last_use < lru->last_use))
                lru = e;
        }
        if (!lru)
            return;
        fprintf(stderr, "mosaic-zoo: %zu MB free; evicting %s\n", fr >> 20,
                lru->inst.v->name);
        cache_evict(C, lru);
    }
}

static struct zoo_inst *cache_get(struct corun_state *C, int vi, int copy,
                                  const struct cache_ent *keep)
{
    struct cache_ent *e = &C->cache[vi * 2 + copy];
    const struct zoo_variant *v = &zoo_variants[vi];
    size_t ws;

    e->last_use = ++C->clock;
    if (e->live)
        return &e->inst;
    if (e->failed) {
        seterr("%s", e->err);
        return NULL;
    }
    /* Rotation makes a small variant allocate about 2 * L2 in all. */
    ws = working_set(v);
    cache_make_room(C, ws + (ws > 2 * (size_t)D.l2_bytes
                             ? 0 : 2 * (size_t)D.l2_bytes), keep);
    fprintf(stderr, "mosaic-zoo: setup %s (copy %d)\n", v->name, copy);
    if (inst_setup(&e->inst, v, &e->setup_s)) {
        e->failed = 1;
        copy_str(e->err, sizeof(e->err), g_err);
        recover();
        return NULL;
    }
    e->live = 1;
    C->n_live++;
    return &e->inst;
}

/* Isolated timing of variant vi on side 0 (A's configuration) or 1 (B's),
 * measured once and reused by every pair. */
static struct iso_ent *iso_get(struct corun_state *C, int vi, int side,
                               struct zoo_inst *in)
{
    struct iso_ent *e = &C->iso[vi * 2 + side];
    struct xcfg *c = side ? &C->b : &C->a;
    double g[ZOO_MAX_REPEATS];
    int rc = 0;

    if (e->done) {
        if (e->rc)
            seterr("%s", e->err);
        return e;
    }
    e->done = 1;
    CKZ(measure_iso(in, c->s[0], 1, &e->t));
    CKZ(gated_solo(in, c->s[0], C->repeats, g));
    e->gated_med = median_of(g, C->repeats);
    minmax_of(g, C->repeats, &e->gated_min, &e->gated_max);
out:
    e->rc = rc;
    if (rc) {
        snprintf(e->err, sizeof(e->err), "isolated timing of %s: ",
                 in->v->name);
        copy_str(e->err + strlen(e->err), sizeof(e->err) - strlen(e->err),
                 g_err);
        /* Report the same message now as for every later pair. */
        clear_err();
        seterr("%s", e->err);
        recover();
    }
    return e;
}

static void emit_corun(struct corun_state *C, int va, int vb, int b_first,
                       const struct iso_ent *ia, const struct iso_ent *ib,
                       const struct co_sample *s, int n, int ok)
{
    double a[ZOO_MAX_REPEATS], b[ZOO_MAX_REPEATS], off[ZOO_MAX_REPEATS];
    double ea[ZOO_MAX_REPEATS], eb[ZOO_MAX_REPEATS];
    double ma, mb, mn, mx;
    int i, expired = 0;

    for (i = 0; i < n; i++) {
        double first = s[i].t_sa < s[i].t_sb ? s[i].t_sa : s[i].t_sb;

        a[i] = s[i].a_us;
        b[i] = s[i].b_us;
        off[i] = s[i].t_sb - s[i].t_sa;
        ea[i] = s[i].t_ea - first;
        eb[i] = s[i].t_eb - first;
        expired += s[i].gate_expired;
    }
    j_begin("corun");
    j_result(ok);
    j_str("mode", O.partitioned ? "partitioned" : "shared");
    j_int("sms_a", C->a.sms);
    j_int("sms_b", C->b.sms);
    if (O.partitioned)
        j_int("split_requested", O.split);
    else
        j_null("split_requested");
    j_str("order", b_first ? "ba" : "ab");
    j_str("a", zoo_variants[va].name);
    j_str("b", zoo_variants[vb].name);
    j_str("family_a", zoo_variants[va].family);
    j_str("family_b", zoo_variants[vb].family);
    j_str("method", "event_gated");
    j_int("repeats", n);
    j_int("warmup", 1);
    j_num("gate_us", O.gate_us);
    if (ia && !ia->rc) {
        j_num("iso_a_us", ia->t.median);
        j_str("iso_a_method", ia->t.method);
        j_num("iso_gated_a_us", ia->gated_med);
        j_str("check_a", ia->t.check < 0 ? "none" : ia->t.check ? "fail"
                                                                 : "pass");
    }
    if (ib && !ib->rc) {
        j_num("iso_b_us", ib->t.median);
        j_str("iso_b_method", ib->t.method);
        j_num("iso_gated_b_us", ib->gated_med);
        j_str("check_b", ib->t.check < 0 ? "none" : ib->t.check ? "fail"
                                                                 : "pass");
    }
    if (!ok || n == 0) {
        j_end();
        return;
    }
    ma = median_of(a, n);
    mb = median_of(b, n);
    j_num("corun_a_us", ma);
    minmax_of(a, n, &mn, &mx);
    j_num("corun_a_min_us", mn);
    j_num("corun_a_max_us", mx);
    j_num("corun_b_us", mb);
    minmax_of(b, n, &mn, &mx);
    j_num("corun_b_min_us", mn);
    j_num("corun_b_max_us", mx);
    j_num("slowdown_a", ma / ia->t.median);
    j_num("slowdown_b", mb / ib->t.median);
    j_num("slowdown_gated_a", ma / ia->gated_med);
    j_num("slowdown_gated_b", mb / ib->gated_med);
    j_num("start_offset_us", median_of(off, n));
    j_num("end_a_us", median_of(ea, n));
    j_num("end_b_us", median_of(eb, n));
    j_int("gate_expired", expired);
    j_nums("corun_a_samples_us", a, n);
    j_nums("corun_b_samples_us", b, n);
    j_nums("start_offset_samples_us", off, n);
    j_nums("end_a_samples_us", ea, n);
    j_nums("end_b_samples_us", eb, n);
    j_end();
}

static void corun_measure(struct corun_state *C, int va, int vb, int b_first)
{
    struct co_sample s[ZOO_MAX_REPEATS];
    struct co_sample warm;
    struct zoo_inst *ia, *ib;
    struct iso_ent *isa = NULL, *isb = NULL;
    int rc = 0, r, n = 0;

    clear_err();
    fprintf(stderr, "mosaic-zoo: corun %s + %s (%s)\n", zoo_variants[va].name,
            zoo_variants[vb].name, b_first ? "ba" : "ab");
    ia = cache_get(C, va, 0, NULL);
    if (!ia) {
        rc = -1;
        goto out;
    }
    /* A variant paired with itself needs a second copy of its buffers. */
    ib = cache_get(C, vb, va == vb ? 1 : 0, &C->cache[va * 2]);
    if (!ib) {
        rc = -1;
        goto out;
    }
    isa = iso_get(C, va, 0, ia);
    if (isa->rc) {
        rc = isa->rc;
        goto out;
    }
    isb = iso_get(C, vb, O.partitioned ? 1 : 0, ib);
    if (isb->rc) {
        rc = isb->rc;
        goto out;
    }
    CKZ(corun_once(ia, C->a.s[0], ib, C->b.s[0], b_first, &warm));
    for (r = 0; r < C->repeats; r++) {
        CKZ(corun_once(ia, C->a.s[0], ib, C->b.s[0], b_first, &s[r]));
        n++;
    }
out:
    emit_corun(C, va, vb, b_first, isa, isb, s, n, rc == 0);
    if (rc)
        recover();
}

/* Pairs from a file of "A B" lines; '#' starts a comment. */
static int read_pairs(const char *path, int **pairs, int *n_pairs)
{
    char line[1024], msg[512];
    FILE *f = fopen(path, "r");
    int cap = 64, n = 0, lineno = 0;
    int *p;

    *pairs = NULL;
    *n_pairs = 0;
    if (!f) {
        snprintf(msg, sizeof(msg), "cannot open pairs file %s: %s", path,
                 strerror(errno));
        error_record(msg);
        return -1;
    }
    p = (int *)malloc(2 * (size_t)cap * sizeof(int));
    while (p && fgets(line, sizeof(line), f)) {
        char *save = NULL, *a, *b, *extra, *hash = strchr(line, '#');
        int ia, ib;

        lineno++;
        if (hash)
            *hash = 0;
        a = strtok_r(line, " \t\r\n", &save);
        if (!a)
            continue;
        b = strtok_r(NULL, " \t\r\n", &save);
        extra = strtok_r(NULL, " \t\r\n", &save);
        if (!b || extra) {
            snprintf(msg, sizeof(msg), "%s:%d: expected two variant names",
                     path, lineno);
            error_record(msg);
            continue;
        }
        ia = find_variant(a);
        ib = find_variant(b);
        if (ia < 0 || ib < 0) {
            snprintf(msg, sizeof(msg), "%s:%d: unknown variant '%s'", path,
                     lineno, ia < 0 ? a : b);
            error_record(msg);
            continue;
        }
        if (n == cap) {
            int *np = (int *)realloc(p, 4 * (size_t)cap * sizeof(int));

            if (!np)
                break;
            p = np;
            cap *= 2;
        }
        p[2 * n] = ia;
        p[2 * n + 1] = ib;
        n++;
    }
    fclose(f);
    if (!p) {
        error_record("out of host memory");
        return -1;
    }
    *pairs = p;
    *n_pairs = n;
    return 0;
}

/* Unordered pairs of the selected variants, each with itself too. */
static int all_pairs(int **pairs, int *n_pairs)
{
    unsigned char *sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1);
    int i, j, n = 0, m;
    int *p;

    *pairs = NULL;
    *n_pairs = 0;
    if (!sel)
        return -1;
    m = select_variants(O.variants, sel);
    p = (int *)malloc(((size_t)m * (m + 1) + 2) * sizeof(int));
    if (!p) {
        free(sel);
        return -1;
    }
    for (i = 0; i < zoo_n_variants; i++) {
        if (!sel[i])
            continue;
        for (j = i; j < zoo_n_variants; j++) {
            if (!sel[j])
                continue;
            p[2 * n] = i;
            p[2 * n + 1] = j;
            n++;
        }
    }
    free(sel);
    *pairs = p;
    *n_pairs = n;
    return 0;
}

static int cmd_corun(void)
{
    struct corun_state C;
    int *pairs = NULL;
    int n_pairs = 0, i, rc;

    memset(&C, 0, sizeof(C));
    C.repeats = O.repeats ? O.repeats : 7;
    rc = O.pairs_path ? read_pairs(O.pairs_path, &pairs, &n_pairs)
                      : all_pairs(&pairs, &n_pairs);
    if (rc) {
        if (!O.pairs_path)
            error_record("out of host memory");
        return -1;
    }
    C.cache = (struct cache_ent *)calloc(2 * (size_t)zoo_n_variants + 2,
                                         sizeof(struct cache_ent));
    C.iso = (struct iso_ent *)calloc(2 * (size_t)zoo_n_variants + 2,
                                     sizeof(struct iso_ent));
    if (!C.cache || !C.iso) {
        error_record("out of host memory");
        goto out;
    }
    clear_err();
    if (O.partitioned) {
        cfg_open_split(&C.a, &C.b, O.split);
    } else {
        cfg_open_full(&C.a, "shared_a");
        cfg_open_full(&C.b, "shared_b");
    }
    cfg_check(&C.a, NULL);
    cfg_check(&C.b, O.partitioned ? &C.a : NULL);
    if (!C.a.ok || !C.b.ok) {
        fprintf(stderr, "mosaic-zoo: no streams for the co-runs: %s\n",
                C.a.ok ? C.b.err : C.a.err);
        goto out;
    }
    for (i = 0; i < n_pairs && !should_stop(); i++) {
        if (O.order_ab && !should_stop())
            corun_measure(&C, pairs[2 * i], pairs[2 * i + 1], 0);
        if (O.order_ba && !should_stop())
            corun_measure(&C, pairs[2 * i], pairs[2 * i + 1], 1);
    }
out:
    for (i = 0; C.cache && i < 2 * zoo_n_variants; i++)
        if (C.cache[i].live)
            cache_evict(&C, &C.cache[i]);
    cfg_close(&C.a);
    cfg_close(&C.b);
    free(C.cache);
    free(C.iso);
    free(pairs);
    return 0;
}

/* ---- placement ---------------------------------------------------------- */

struct pk {
    int grid, threads, smem, carveout; /* carveout -1: the default */
    double spin_us;
};

struct pexp {
    const char *name;
    const char *question;
    int n_kernels;
    struct pk k[2];
};

#define KB 1024
/* (a) single launches: fill order and blocks per SM. */
#define PA(g, t, s, c) \
    {"a_g" #g "_t" #t "_s" #s "k_c" #c, "single launch", 1, \
     {{g, t, (s) * KB, c, 30.0}, {0, 0, 0, 0, 0}}}
static const struct pexp g_pexps[] = {
    PA(66, 128, 0, -1), PA(132, 128, 0, -1), PA(264, 128, 0, -1),
    PA(1000, 128, 0, -1),
    PA(66, 256, 0, -1), PA(132, 256, 0, -1), PA(264, 256, 0, -1),
    PA(1000, 256, 0, -1),
    PA(66, 1024, 0, -1), PA(132, 1024, 0, -1), PA(264, 1024, 0, -1),
    PA(1000, 1024, 0, -1),
    PA(66, 256, 32, -1), PA(132, 256, 32, -1), PA(264, 256, 32, -1),
    PA(1000, 256, 32, -1),
    PA(66, 256, 100, -1), PA(132, 256, 100, -1), PA(264, 256, 100, -1),
    PA(1000, 256, 100, -1),
    PA(1000, 256, 0, 0), PA(1000, 256, 0, 100), PA(1000, 256, 32, 0),
    /* (b) two kernels, the second enqueued right behind the first. */
    {"b1_half_then_half", "66x256 then 66x256: idle SMs first?", 2,
     {{66, 256, 0, -1, 50.0}, {66, 256, 0, -1, 30.0}}},
    {"b2_full_then_full_small", "132x256 then 132x256: beside?", 2,
     {{132, 256, 0, -1, 50.0}, {132, 256, 0, -1, 30.0}}},
    {"b3_full_then_full_1024", "132x1024 then 132x1024: beside (2 fit)?", 2,
     {{132, 1024, 0, -1, 50.0}, {132, 1024, 0, -1, 30.0}}},
    {"b4_threads_full", "264x1024 (all thread slots) then 132x256: waits?",
     2, {{264, 1024, 0, -1, 50.0}, {132, 256, 0, -1, 30.0}}},
    {"b5_smem_two_fit", "132x256 100KB then 132x256 100KB: 2 fit by smem?",
     2, {{132, 256, 100 * KB, -1, 50.0}, {132, 256, 100 * KB, -1, 30.0}}},
    {"b6_smem_full_then_nosmem",
     "264x256 100KB (smem full) then 66x256 no smem: beside?", 2,
     {{264, 256, 100 * KB, -1, 50.0}, {66, 256, 0, -1, 30.0}}},
    {"b7_long_grid_then_small", "1000x128 then 132x128: interleaved?", 2,
     {{1000, 128, 0, -1, 50.0}, {132, 128, 0, -1, 30.0}}},
    {"b8_half_1024_then_many", "66x1024 then 264x128: idle SMs first?", 2,
     {{66, 1024, 0, -1, 50.0}, {264, 128, 0, -1, 30.0}}},
    {"b9_second_big", "132x256 then 1000x256: where does the big one go?", 2,
     {{132, 256, 0, -1, 50.0}, {1000, 256, 0, -1, 30.0}}},
    /* (c) different carveouts: do blocks ever share an SM? */
    {"c1_c0_then_c100", "carveout 0 then 100, no smem", 2,
     {{132, 256, 0, 0, 50.0}, {132, 256, 0, 100, 30.0}}},
    {"c2_c100_then_c0", "carveout 100 then 0, no smem", 2,
     {{132, 256, 0, 100, 50.0}, {132, 256, 0, 0, 30.0}}},
    {"c3_c0_then_c100_32k", "carveout 0 then 100 with 32KB", 2,
     {{132, 256, 0, 0, 50.0}, {132, 256, 32 * KB, 100, 30.0}}},
    {"c4_c100_32k_both", "control: carveout 100, 32KB, both", 2,
     {{132, 256, 32 * KB, 100, 50.0}, {132, 256, 32 * KB, 100, 30.0}}},
    {"c5_c0_half_then_c100", "carveout 0 on 66 blocks then 100 on 132", 2,
     {{66, 256, 0, 0, 50.0}, {132, 256, 0, 100, 30.0}}},
    {"c6_c0_both", "control: carveout 0, both", 2,
     {{132, 256, 0, 0, 50.0}, {132, 256, 0, 0, 30.0}}},
    {"c7_c0_32k_then_c100_100k", "carveout 0 32KB then 100 100KB", 2,
     {{132, 256, 32 * KB, 0, 50.0}, {132, 256, 100 * KB, 100, 30.0}}},
};
#undef PA
#undef KB

struct ksum {
    int n, sms_used, max_blocks_per_sm, max_resident_per_sm, occupancy;
    long long first_start, last_start, first_end, last_end;
    int per_sm[ZOO_MAX_SMID];
    int fill_order[ZOO_MAX_SMID];
    int n_fill;
};

static struct ksum g_ks[2];

/* Blocks of the same kernel resident on one SM at once, at most. */
static int max_resident(int k, int n)
{
    const struct probe_rec *r = g_hprobe[k];
    int best = 0, i, j;

    for (i = 0; i < n; i++) {
        int c = 0;

        for (j = 0; j < n; j++)
            if (r[j].smid == r[i].smid && r[j].t0 <= r[i].t0 &&
                r[i].t0 < r[j].t1)
                c++;
        if (c > best)
            best = c;
    }
    return best;
}

static void summarise_kernel(int k, int n, unsigned long long base,
                             struct ksum *s)
{
    const struct probe_rec *r = g_hprobe[k];
    long long first_t[ZOO_MAX_SMID];
    int i, j;

    s->n = n;
    s->sms_used = 0;
    s->max_blocks_per_sm = 0;
    s->first_start = s->first_end = LLONG_MAX;
    s->last_start = s->last_end = LLONG_MIN;
    memset(s->per_sm, 0, sizeof(s->per_sm));
    for (i = 0; i < ZOO_MAX_SMID; i++)
        first_t[i] = LLONG_MAX;
    for (i = 0; i < n; i++) {
        long long t0 = (long long)(r[i].t0 - base);
        long long t1 = (long long)(r[i].t1 - base);

        if (!s->per_sm[r[i].smid]++)
            s->sms_used++;
        if (t0 < first_t[r[i].smid])
            first_t[r[i].smid] = t0;
        s->first_start = t0 < s->first_start ? t0 : s->first_start;
        s->last_start = t0 > s->last_start ? t0 : s->last_start;
        s->first_end = t1 < s->first_end ? t1 : s->first_end;
        s->last_end = t1 > s->last_end ? t1 : s->last_end;
    }
    for (i = 0; i < ZOO_MAX_SMID; i++)
        if (s->per_sm[i] > s->max_blocks_per_sm)
            s->max_blocks_per_sm = s->per_sm[i];
    s->max_resident_per_sm = max_resident(k, n);
    /* SMs by the start of their first block (insertion sort: <= 1024). */
    s->n_fill = 0;
    for (i = 0; i < ZOO_MAX_SMID; i++) {
        if (first_t[i] == LLONG_MAX)
            continue;
        j = s->n_fill++;
        while (j > 0 && first_t[s->fill_order[j - 1]] > first_t[i]) {
            s->fill_order[j] = s->fill_order[j - 1];
            j--;
        }
        s->fill_order[j] = i;
    }
}

static void j_ksum(const char *p, const struct ksum *s, int n_smid)
{
    char k[64];

#define PK(name) (snprintf(k, sizeof(k), "%s%s", p, name), k)
    j_int(PK("blocks"), s->n);
    j_int(PK("sms_used"), s->sms_used);
    j_int(PK("max_blocks_per_sm"), s->max_blocks_per_sm);
    j_int(PK("max_resident_per_sm"), s->max_resident_per_sm);
    j_int(PK("occupancy_api_blocks_per_sm"), s->occupancy);
    j_int(PK("first_start_ns"), s->first_start);
    j_int(PK("last_start_ns"), s->last_start);
    j_int(PK("first_end_ns"), s->first_end);
    j_int(PK("last_end_ns"), s->last_end);
    j_ints(PK("blocks_per_smid"), s->per_sm, n_smid);
    j_ints(PK("sm_fill_order"), s->fill_order, s->n_fill);
#undef PK
}

/* SMs holding blocks of both kernels, ever and at the same time, and k2
 * blocks that started on an SM with no k1 block resident. */
static void pair_stats(int n1, int n2, int *sms_both, int *sms_both_conc,
                       int *k2_on_idle)
{
    const struct probe_rec *a = g_hprobe[0];
    const struct probe_rec *b = g_hprobe[1];
    unsigned char conc[ZOO_MAX_SMID];
    int i, j;

    memset(conc, 0, sizeof(conc));
    *sms_both = 0;
    *sms_both_conc = 0;
    *k2_on_idle = 0;
    for (i = 0; i < ZOO_MAX_SMID; i++)
        *sms_both += g_ks[0].per_sm[i] && g_ks[1].per_sm[i];
    for (j = 0; j < n2; j++) {
        int busy = 0;

        for (i = 0; i < n1; i++) {
            if (a[i].smid != b[j].smid)
                continue;
            if (a[i].t0 < b[j].t1 && b[j].t0 < a[i].t1)
                conc[b[j].smid] = 1;
            if (a[i].t0 <= b[j].t0 && b[j].t0 < a[i].t1)
                busy = 1;
        }
        *k2_on_idle += !busy;
    }
    for (i = 0; i < ZOO_MAX_SMID; i++)
        *sms_both_conc += conc[i];
}

static int placement_run(const struct pexp *e, int rep, struct xcfg *c)
{
    static const probe_fn fns[2] = {zoo_probe_k1, zoo_probe_k2};
    unsigned long long base = ~0ull;
    int rc = 0, k, i, missing = 0, n_smid = 0, expired = 0;
    int sms_both = 0, sms_conc = 0, k2_idle = 0;
    cudaError_t q;

    clear_err();
    for (k = 0; k < e->n_kernels; k++) {
        CKZ(probe_attrs(fns[k], e->k[k].smem, e->k[k].carveout));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &g_ks[k].occupancy, fns[k], e->k[k].threads, e->k[k].smem));
        CK(cudaMemsetAsync(g_dprobe[k], 0,
                           (size_t)e->k[k].grid * sizeof(struct probe_rec),
                           c->s[k]));
        CKZ(wait_stream(c->s[k]));
    }
    CKZ(gate_launch());
    for (k = 0; k < e->n_kernels; k++)
        CK(cudaStreamWaitEvent(c->s[k], g_gate_ev, 0));
    for (k = 0; k < e->n_kernels; k++) {
        fns[k]<<<e->k[k].grid, e->k[k].threads, e->k[k].smem, c->s[k]>>>(
            g_dprobe[k], (unsigned long long)(e->k[k].spin_us * 1e3 *
                                              O.spin_us / 30.0));
        CK(cudaGetLastError());
    }
    q = cudaEventQuery(g_gate_ev);
    expired = q == cudaSuccess;
    for (k = 0; k < e->n_kernels; k++)
        CKZ(probe_fetch(k, e->k[k].grid, c->s[k]));
    CKZ(wait_stream(g_gate_stream));
    for (k = 0; k < e->n_kernels; k++)
        for (i = 0; i < e->k[k].grid; i++) {
            const struct probe_rec *r = &g_hprobe[k][i];

            if (r->t0 == 0 || r->smid >= ZOO_MAX_SMID ||
                r->block != (unsigned int)i) {
                missing++;
                continue;
            }
            if (r->t0 < base)
                base = r->t0;
            if ((int)r->smid + 1 > n_smid)
                n_smid = (int)r->smid + 1;
        }
    if (missing) {
        seterr("%d block records missing or malformed", missing);
        rc = -1;
        goto out;
    }
    for (k = 0; k < e->n_kernels; k++) {
        for (i = 0; i < e->k[k].grid; i++) {
            const struct probe_rec *r = &g_hprobe[k][i];

            j_begin("block");
            j_str("experiment", e->name);
            j_int("rep", rep);
            j_int("kernel", k + 1);
            j_int("block", i);
            j_int("smid", r->smid);
            j_int("t_start_ns", (long long)(r->t0 - base));
            j_int("t_end_ns", (long long)(r->t1 - base));
            j_end();
        }
        summarise_kernel(k, e->k[k].grid, base, &g_ks[k]);
    }
    if (e->n_kernels == 2)
        pair_stats(e->k[0].grid, e->k[1].grid, &sms_both, &sms_conc,
                   &k2_idle);
out:
    j_begin("placement_summary");
    j_result(rc == 0);
    j_str("experiment", e->name);
    j_str("question", e->question);
    j_int("rep", rep);
    j_cfg(c);
    j_int("kernels", e->n_kernels);
    for (k = 0; k < e->n_kernels; k++) {
        char p[8];
        char key[64];

        snprintf(p, sizeof(p), "k%d_", k + 1);
#define PKEY(name) (snprintf(key, sizeof(key), "%s%s", p, name), key)
        j_int(PKEY("grid"), e->k[k].grid);
        j_int(PKEY("threads"), e->k[k].threads);
        j_int(PKEY("smem_bytes"), e->k[k].smem);
        j_int(PKEY("carveout"), e->k[k].carveout);
        j_num(PKEY("spin_us"), e->k[k].spin_us * O.spin_us / 30.0);
#undef PKEY
        if (rc == 0)
            j_ksum(p, &g_ks[k], n_smid);
    }
    if (rc == 0 && e->n_kernels == 2) {
        j_int("sms_both", sms_both);
        j_int("sms_both_concurrent", sms_conc);
        j_int("k2_blocks_started_on_sm_without_k1", k2_idle);
        j_int("k2_first_start_after_k1_first_start_ns",
              g_ks[1].first_start - g_ks[0].first_start);
        j_int("k1_last_end_after_k1_first_start_ns",
              g_ks[0].last_end - g_ks[0].first_start);
        j_int("k2_first_start_minus_k1_last_end_ns",
              g_ks[1].first_start - g_ks[0].last_end);
    }
    j_bool("gate_expired", expired);
    j_end();
    if (rc)
        recover();
    return rc;
}

static int timer_step_ns(long long *step)
{
    unsigned long long *d = NULL, h = 0;
    int rc = 0;

    *step = -1;
    CK(cudaMalloc((void **)&d, sizeof(*d)));
    zoo_timer_step_kernel<<<1, 1, 0, g_gate_stream>>>(d);
    CK(cudaGetLastError());
    CKZ(wait_stream(g_gate_stream));
    CK(cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost));
    *step = h == ~0ull ? -1 : (long long)h;
out:
    if (d)
        cudaFree(d);
    return rc;
}

static int cmd_placement(void)
{
    struct xcfg c;
    long long step = -1;
    int reps = O.repeats ? O.repeats : 1;
    int e, r;
    size_t n = sizeof(g_pexps) / sizeof(g_pexps[0]);

    clear_err();
    if (O.n_sms && O.sms[0] < D.sm_count)
        cfg_open_green(&c, O.sms[0], "green");
    else
        cfg_open_full(&c, "full");
    cfg_check(&c, NULL);
    clear_err();
    if (timer_step_ns(&step))
        recover();
    j_begin("timer");
    j_bool("ok", step > 0);
    j_int("globaltimer_step_ns", step);
    j_end();
    if (!c.ok || probe_alloc()) {
        error_record(c.ok ? g_err : c.err);
        cfg_close(&c);
        return -1;
    }
    for (e = 0; e < (int)n && !should_stop(); e++)
        for (r = 0; r < reps && !should_stop(); r++)
            placement_run(&g_pexps[e], r, &c);
    probe_attrs(zoo_probe_k1, 0, -1);
    probe_attrs(zoo_probe_k2, 0, -1);
    cfg_close(&c);
    return 0;
}

/* ---- mps-corun ---------------------------------------------------------- */

/* Sleeps to 2 ms before t, then spins: a plain sleep wakes 100+ us late,
 * which would skew the two processes' launches against each other. */
/* A variant given up on: its error recorded, its buffers freed, the
 * context checked. */
static void inst_abandon(struct zoo_inst *in)
{
    error_record(g_err);
    inst_teardown(in);
    recover();
}

/* Sets up variant i and runs it once on s (a warm-up); on failure abandons
 * it and returns -1. */
static int inst_ready(struct zoo_inst *in, int i, cudaStream_t s)
{
    double setup_s = 0;

    clear_err();
    if (inst_setup(in, &zoo_variants[i], &setup_s) || launch_one(in, s) || wait_stream(s)) {
        inst_abandon(in);
        return -1;
    }
    return 0;
}

/* ---- behind: where a second kernel's blocks land behind a real one ------- */

/*
 * The first kernel is a zoo variant, launched on its own; the second is the
 * placement probe in a given shape (grid x threads [+ dynamic shared
 * memory]), launched on another stream right after it, so that it arrives
 * while the variant's blocks hold the SMs (the host's launch gap, a few us).
 * Stamp kernels before and after the variant on its stream bound its run on
 * the probe's clock (%globaltimer). Per run: the probe's blocks per SM, how
 * many started before the variant ended, and each block's start relative to
 * the variant's end.
 */
struct bprobe {
    int grid, threads, smem;
};

#define ZOO_MAX_BPROBES 16

static int parse_bprobes(const char *s, struct bprobe *out, int max)
{
    char buf[512];
    char *tok, *save = NULL;
    int n = 0;

    snprintf(buf, sizeof(buf), "%s", s ? s : "");
    for (tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        struct bprobe b = {0, 0, 0};
        char tail = 0;
        int k = sscanf(tok, "%dx%d+%d%c", &b.grid, &b.threads, &b.smem, &tail);

        if (n >= max || k < 2 || k > 3 || b.grid <= 0 ||
            b.grid > ZOO_PROBE_CAP || b.threads <= 0 || b.threads > 1024 ||
            b.smem < 0 || b.smem > 227 * 1024)
            return -1;
        out[n++] = b;
    }
    return n;
}

static int behind_run(struct zoo_inst *in, const struct bprobe *p, int rep,
                      cudaStream_t sf, cudaStream_t ss,
                      unsigned long long *d_stamp, double spin_us)
{
    unsigned long long st[2] = {0, 0};
    const struct probe_rec *r = g_hprobe[1];
    int per_sm[ZOO_MAX_SMID];
    long long rel[ZOO_PROBE_CAP];
    int rc = 0, i, n_smid = 0, before = 0, used = 0, maxb = 0;

    clear_err();
    CK(cudaMemsetAsync(g_dprobe[1], 0, (size_t)p->grid * sizeof(*r), ss));
    CKZ(wait_stream(ss));
    zoo_stamp_kernel<<<1, 1, 0, sf>>>(d_stamp);
    CK(cudaGetLastError());
    CKZ(launch_one(in, sf));
    zoo_probe_k2<<<p->grid, p->threads, p->smem, ss>>>(
        g_dprobe[1], (unsigned long long)(spin_us * 1e3));
    CK(cudaGetLastError());
    zoo_stamp_kernel<<<1, 1, 0, sf>>>(d_stamp + 1);
    CK(cudaGetLastError());
    CKZ(probe_fetch(1, p->grid, ss));
    CKZ(wait_stream(sf));
    CK(cudaMemcpy(st, d_stamp, sizeof(st), cudaMemcpyDeviceToHost));
    memset(per_sm, 0, sizeof(per_sm));
    for (i = 0; i < p->grid; i++) {
        if (r[i].t0 == 0 || r[i].smid >= ZOO_MAX_SMID ||
            r[i].block != (unsigned int)i) {
            seterr("probe block %d wrote no record", i);
            rc = -1;
            goto out;
        }
        if (!per_sm[r[i].smid]++)
            used++;
        if ((int)r[i].smid + 1 > n_smid)
            n_smid = (int)r[i].smid + 1;
        rel[i] = (long long)(r[i].t0 - st[1]);
        before += r[i].t0 < st[1];
    }
    for (i = 0; i < n_smid; i++)
        maxb = per_sm[i] > maxb ? per_sm[i] : maxb;
out:
    j_begin("behind");
    j_result(rc == 0);
    j_str("first", in->v->name);
    j_int("rep", rep);
    j_int("probe_grid", p->grid);
    j_int("probe_threads", p->threads);
    j_int("probe_smem_bytes", p->smem);
    j_num("probe_spin_us", spin_us);
    if (rc == 0) {
        int hist[33];

        memset(hist, 0, sizeof(hist));
        for (i = 0; i < n_smid; i++)
            hist[per_sm[i] > 32 ? 32 : per_sm[i]]++;
        j_int("first_run_ns", (long long)(st[1] - st[0]));
        j_int("sms_used", used);
        j_int("max_blocks_per_sm", maxb);
        j_int("max_resident_per_sm", max_resident(1, p->grid));
        j_int("started_before_first_end", before);
        j_ints("sms_with_n_blocks", hist, maxb + 1);
        j_ints("blocks_per_smid", per_sm, n_smid);
        {
            /* start of each block relative to the first kernel's end, in
             * ns, in block order */
            char key[] = "start_minus_first_end_ns";
            j_key(key);
            j_raw("[", 1);
            for (i = 0; i < p->grid; i++)
                j_fmt("%s%lld", i ? "," : "", rel[i]);
            j_raw("]", 1);
        }
    } else {
        j_str("error", g_err);
    }
    j_end();
    if (rc)
        recover();
    return rc;
}

static int cmd_behind(void)
{
    struct bprobe pr[ZOO_MAX_BPROBES];
    unsigned char *sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1);
    unsigned long long *d_stamp = NULL;
    cudaStream_t sf = NULL, ss = NULL;
    int np = parse_bprobes(O.probes, pr, ZOO_MAX_BPROBES);
    int reps = O.repeats ? O.repeats : 3, i, p, r;

    if (np <= 0 || !sel || probe_alloc() ||
        cudaStreamCreateWithFlags(&sf, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&ss, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc((void **)&d_stamp, 2 * sizeof(*d_stamp)) != cudaSuccess) {
        error_record(np <= 0 ? "behind: bad --probes (GxT[+SMEM],...)"
                             : "behind: cannot allocate streams or buffers");
        goto done;
    }
    select_variants(O.variants, sel);
    for (i = 0; i < zoo_n_variants && !should_stop(); i++) {
        struct zoo_inst in;

        if (!sel[i] || inst_ready(&in, i, sf))
            continue;
        for (p = 0; p < np && !should_stop(); p++) {
            if (probe_attrs(zoo_probe_k2, pr[p].smem, -1)) {
                error_record(g_err);
                recover();
                continue;
            }
            for (r = 0; r < reps && !should_stop(); r++)
                behind_run(&in, &pr[p], r, sf, ss, d_stamp, O.spin_us);
        }
        inst_teardown(&in);
    }
    probe_attrs(zoo_probe_k2, 0, -1);
done:
    if (d_stamp)
        cudaFree(d_stamp);
    if (sf)
        cudaStreamDestroy(sf);
    if (ss)
        cudaStreamDestroy(ss);
    free(sel);
    return 0;
}

/* ---- residency: a kernel's speed with part of every SM held ------------- */

/*
 * A blocker (two blocks per SM, each with 16 KiB of dynamic shared memory so
 * that default-carveout kernels mix with it) holds all but F threads of
 * every SM while the variant runs beside it; the variant's time against its
 * time alone (both single event-bracketed launches) gives its speed at the
 * residency F threads allow. Two blockers: one that sleeps (the variant's
 * own residency limit) and one that keeps the issue slots busy.
 */
static int residency_once(struct zoo_inst *in, cudaStream_t sb, cudaStream_t ss,
                          int free_thr, int kind, double spin_us, float *sink,
                          double *us, int *expired)
{
    int thr = (D.max_threads_per_sm - free_thr) / 2;
    unsigned long long ns = (unsigned long long)(spin_us * 1e3);
    float ms = 0;
    int rc = 0;

    *expired = 0;
    if (thr > 0) {
        if (kind == 0)
            zoo_block_sleep<<<2 * D.sm_count, thr, 16 * 1024, sb>>>(ns, sink);
        else
            zoo_block_issue<<<2 * D.sm_count, thr, 16 * 1024, sb>>>(ns, sink);
        CK(cudaGetLastError());
        CK(cudaEventRecord(g_ev[4], sb));
        usleep(200); /* the blocker's blocks are resident before the variant */
    }
    CKZ(enqueue_timed(in, ss, g_ev[0], g_ev[1]));
    CKZ(wait_stream(ss));
    CK(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1]));
    *us = 1e3 * ms;
    if (thr > 0) {
        *expired = cudaEventQuery(g_ev[4]) == cudaSuccess;
        CKZ(wait_stream(sb));
    }
out:
    return rc;
}

static int cmd_residency(void)
{
    static const int def_free[] = {256, 512, 1024};
    static const char *kinds[2] = {"sleep", "issue"};
    unsigned char *sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1);
    cudaStream_t sb = NULL, ss = NULL;
    float *sink = NULL;
    int nf = O.n_free ? O.n_free : 3, reps = O.repeats ? O.repeats : 3, i, f, k, r;
    const int *frees = O.n_free ? O.free_threads : def_free;

    if (!sel || cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&ss, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc((void **)&sink, sizeof(float)) != cudaSuccess ||
        cudaFuncSetAttribute(zoo_block_sleep, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             16 * 1024) != cudaSuccess ||
        cudaFuncSetAttribute(zoo_block_issue, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             16 * 1024) != cudaSuccess) {
        error_record("residency: cannot allocate streams or buffers");
        goto done;
    }
    select_variants(O.variants, sel);
    for (i = 0; i < zoo_n_variants && !should_stop(); i++) {
        struct zoo_inst in;
        double alone[16], iso = 0;
        int exp_ = 0;

        if (!sel[i] || inst_ready(&in, i, ss))
            continue;
        for (r = 0; r < reps && r < 16; r++)
            if (residency_once(&in, sb, ss, D.max_threads_per_sm, 0, 0, sink, &alone[r],
                               &exp_))
                break;
        if (r < reps && r < 16) {
            inst_abandon(&in);
            continue;
        }
        iso = median_of(alone, r);
        for (f = 0; f < nf; f++)
            for (k = 0; k < 2; k++) {
                double t[16];
                int n_exp = 0, n = 0, e = 0;
                /* long enough for a slow run at low residency */
                double spin = 30 * iso + 500;

                if (spin > 200000)
                    spin = 200000;
                for (r = 0; r < reps && r < 16 && !should_stop(); r++) {
                    if (residency_once(&in, sb, ss, frees[f], k, spin, sink, &t[n], &e)) {
                        recover();
                        break;
                    }
                    n_exp += e;
                    n++;
                }
                j_begin("residency");
                j_result(n > 0);
                j_str("variant", zoo_variants[i].name);
                j_int("free_threads", frees[f]);
                j_str("blocker", kinds[k]);
                j_num("alone_us", iso);
                j_nums("alone_samples_us", alone, reps < 16 ? reps : 16);
                j_nums("samples_us", t, n);
                if (n) {
                    j_num("median_us", median_of(t, n));
                    j_num("slowdown", median_of(t, n) / iso);
                }
                j_int("blocker_ended_first", n_exp);
                j_end();
            }
        inst_teardown(&in);
    }
done:
    if (sink)
        cudaFree(sink);
    if (sb)
        cudaStreamDestroy(sb);
    if (ss)
        cudaStreamDestroy(ss);
    free(sel);
    return 0;
}

static void sleep_until_ns(long long t)
{
    struct timespec ts;
    long long early = t - 2000000LL;

    if (early > realtime_ns()) {
        ts.tv_sec = (time_t)(early / 1000000000LL);
        ts.tv_nsec = (long)(early % 1000000000LL);
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) ==
               EINTR) {
        }
    }
    while (realtime_ns() < t) {
    }
}

static int cmd_mps(void)
{
    struct zoo_inst in;
    struct xcfg c;
    unsigned long long *dstamp = NULL;
    unsigned long long *hstamp = NULL;
    double dur[ZOO_MAX_REPEATS];
    long long target[ZOO_MAX_REPEATS], wake[ZOO_MAX_REPEATS];
    long long interval_ns = (long long)(O.interval_ms * 1e6);
    int reps = O.repeats ? O.repeats : 7;
    int vi, rc = 0, r, i, n_late = 0, n_done = 0;
    double setup_s = 0, mn, mx;
    float ms = 0;

    memset(&in, 0, sizeof(in));
    clear_err();
    vi = find_variant(O.variant);
    if (O.n_sms && O.sms[0] < D.sm_count)
        cfg_open_green(&c, O.sms[0], "green");
    else
        cfg_open_full(&c, "full");
    if (vi < 0) {
        seterr("unknown variant '%s'", O.variant);
        rc = -1;
        goto out;
    }
    if (!c.ok) {
        rc = -1;
        goto out;
    }
    CK(cudaMalloc((void **)&dstamp, 2 * (size_t)reps * sizeof(*dstamp)));
    hstamp = (unsigned long long *)calloc(2 * (size_t)reps, sizeof(*hstamp));
    if (!hstamp) {
        seterr("out of host memory");
        rc = -1;
        goto out;
    }
    CKZ(inst_setup(&in, &zoo_variants[vi], &setup_s));
    for (i = 0; i < ZOO_WARMUP; i++)
        CKZ(launch_one(&in, c.s[0]));
    CKZ(wait_stream(c.s[0]));
    if (realtime_ns() > O.start_at_ns)
        fprintf(stderr, "mosaic-zoo: start-at is %.3f s in the past after "
                "setup; repeats will start late\n",
                (realtime_ns() - O.start_at_ns) * 1e-9);
    for (r = 0; r < reps; r++) {
        target[r] = O.start_at_ns + r * interval_ns;
        sleep_until_ns(target[r]);
        wake[r] = realtime_ns();
        /* GPU-side timestamps around the kernel: the same %globaltimer in
         * both processes, so their spans can be compared directly. */
        zoo_stamp_kernel<<<1, 1, 0, c.s[0]>>>(dstamp + 2 * r);
        CK(cudaGetLastError());
        CKZ(enqueue_timed(&in, c.s[0], g_ev[0], g_ev[1]));
        zoo_stamp_kernel<<<1, 1, 0, c.s[0]>>>(dstamp + 2 * r + 1);
        CK(cudaGetLastError());
        CKZ(wait_stream(c.s[0]));
        CK(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1]));
        dur[r] = 1e3 * ms;
        n_done++;
    }
    CK(cudaMemcpy(hstamp, dstamp, 2 * (size_t)reps * sizeof(*hstamp),
                  cudaMemcpyDeviceToHost));
out:
    for (r = 0; r < n_done; r++) {
        double late_us = (wake[r] - target[r]) * 1e-3;

        n_late += late_us > 1000.0;
        j_begin("mps_repeat");
        j_bool("ok", 1);
        j_str("variant", zoo_variants[vi].name);
        j_int("rep", r);
        j_int("target_ns", target[r]);
        j_int("wake_ns", wake[r]);
        j_num("late_us", late_us);
        j_num("duration_us", dur[r]);
        j_int("gpu_before_ns", rc == 0 ? (long long)hstamp[2 * r] : -1);
        j_int("gpu_after_ns", rc == 0 ? (long long)hstamp[2 * r + 1] : -1);
        j_end();
    }
    j_begin("mps_corun");
    j_result(rc == 0 && n_done == reps);
    j_str("variant", O.variant);
    if (c.ok)
        j_cfg(&c);
    j_int("pid", (long long)getpid());
    j_int("start_at_ns", O.start_at_ns);
    j_num("interval_ms", O.interval_ms);
    j_int("repeats", n_done);
    j_int("slots", in.slots);
    j_num("setup_s", setup_s);
    j_str("method", "event_single_launch");
    if (n_done) {
        minmax_of(dur, n_done, &mn, &mx);
        j_num("median_us", median_of(dur, n_done));
        j_num("min_us", mn);
        j_num("max_us", mx);
        j_nums("durations_us", dur, n_done);
        j_int("repeats_late_over_1ms", n_late);
    }
    j_end();
    if (rc)
        recover();
    if (in.v)
        inst_teardown(&in);
    if (dstamp)
        cudaFree(dstamp);
    free(hstamp);
    cfg_close(&c);
    return rc;
}

/* ---- device setup and the meta record ----------------------------------- */

/* The kernel module's version, e.g. "580.159.04": the first token of
 * /proc/driver/nvidia/version's first line that starts with a digit and
 * holds a dot (the line's wording differs between the open and the
 * proprietary module). */
static void read_driver_string(char *out, size_t n)
{
    char line[512];
    char *tok, *save = NULL;
    FILE *f = fopen("/proc/driver/nvidia/version", "r");

    copy_str(out, n, "unknown");
    if (!f)
        return;
    if (fgets(line, sizeof(line), f)) {
        for (tok = strtok_r(line, " \t\n", &save); tok;
             tok = strtok_r(NULL, " \t\n", &save)) {
            if (tok[0] >= '0' && tok[0] <= '9' && strchr(tok, '.')) {
                copy_str(out, n, tok);
                break;
            }
        }
    }
    fclose(f);
}

static int attr(enum cudaDeviceAttr a)
{
    int v = -1;

    if (cudaDeviceGetAttribute(&v, a, O.device) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return v;
}

static int device_init(void)
{
    struct cudaDeviceProp p;
    int rc = 0, n = 0, i;

    read_driver_string(D.driver_str, sizeof(D.driver_str));
    cudaDriverGetVersion(&D.driver_api);
    cudaRuntimeGetVersion(&D.runtime);
    CK(cudaGetDeviceCount(&n));
    if (O.device < 0 || O.device >= n) {
        seterr("--device %d: this machine has %d CUDA devices", O.device, n);
        rc = -1;
        goto out;
    }
    CK(cudaSetDevice(O.device));
    /* Creates and makes current the primary context, which owns the
     * runtime's modules; green contexts are made from it. */
    CK(cudaFree(0));
    CK(cudaGetDeviceProperties(&p, O.device));
    snprintf(D.name, sizeof(D.name), "%s", p.name);
    D.cc_major = p.major;
    D.cc_minor = p.minor;
    D.total_mem = (long long)p.totalGlobalMem;
    D.smem_per_block_optin = (int)p.sharedMemPerBlockOptin;
    if (cudaDeviceGetPCIBusId(D.pci, sizeof(D.pci), O.device) != cudaSuccess)
        cudaGetLastError();
    D.sm_count = attr(cudaDevAttrMultiProcessorCount);
    D.l2_bytes = attr(cudaDevAttrL2CacheSize);
    D.clock_khz = attr(cudaDevAttrClockRate);
    D.mem_clock_khz = attr(cudaDevAttrMemoryClockRate);
    D.bus_width = attr(cudaDevAttrGlobalMemoryBusWidth);
    D.smem_per_sm = attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
    D.max_threads_per_sm = attr(cudaDevAttrMaxThreadsPerMultiProcessor);
    D.max_blocks_per_sm = attr(cudaDevAttrMaxBlocksPerMultiprocessor);
    D.regs_per_sm = attr(cudaDevAttrMaxRegistersPerMultiprocessor);
    if (D.sm_count <= 0 || D.l2_bytes <= 0) {
        seterr("device attributes unreadable (SMs %d, L2 %lld)", D.sm_count,
               D.l2_bytes);
        rc = -1;
        goto out;
    }
    D.gc_ok = gc_query(O.device, &D.gc, D.gc_err, sizeof(D.gc_err)) == 0;
    for (i = 0; i < ZOO_EV_POOL; i++) {
        CK(cudaEventCreate(&g_ev[i]));
        g_n_ev++;
    }
    CK(cudaStreamCreateWithFlags(&g_gate_stream, cudaStreamNonBlocking));
    CK(cudaEventCreate(&g_gate_ev));
    D.ok = 1;
out:
    return rc;
}

static void device_fini(void)
{
    int i;

    for (i = 0; i < 2; i++) {
        if (g_dprobe[i])
            cudaFree(g_dprobe[i]);
        free(g_hprobe[i]);
        g_dprobe[i] = NULL;
        g_hprobe[i] = NULL;
    }
    for (i = 0; i < g_n_ev; i++)
        cudaEventDestroy(g_ev[i]);
    g_n_ev = 0;
    if (g_gate_ev)
        cudaEventDestroy(g_gate_ev);
    if (g_gate_stream)
        cudaStreamDestroy(g_gate_stream);
    g_gate_ev = NULL;
    g_gate_stream = NULL;
}

static void write_meta(void)
{
    char date[64], host[256];
    time_t t = time(NULL);
    struct tm tm;
    size_t fr = 0, tot = 0;

    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = 0;
    j_begin("meta");
    j_bool("ok", D.ok);
    if (!D.ok)
        j_str("error", g_err);
    j_str("tool", "mosaic-zoo");
    j_int("schema", 1);
    j_str("subcommand", O.cmd_name);
    j_str("argv", g_argv);
    j_str("date_utc", date);
    j_str("git", getenv("MOSAIC_GIT"));
    j_str("hostname", host);
    j_int("pid", (long long)getpid());
    j_int("seed", O.seed);
    j_int("n_variants", zoo_n_variants);
    j_int("device", O.device);
    j_str("driver_version", D.driver_str);
    j_int("cuda_driver_version", D.driver_api);
    j_int("cuda_runtime_version", D.runtime);
    j_str("cuda_visible_devices", getenv("CUDA_VISIBLE_DEVICES"));
    j_str("cuda_mps_pipe_directory", getenv("CUDA_MPS_PIPE_DIRECTORY"));
    if (D.ok) {
        char cc[16];

        snprintf(cc, sizeof(cc), "%d.%d", D.cc_major, D.cc_minor);
        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
            cudaGetLastError();
        j_str("gpu", D.name);
        j_str("pci_bus_id", D.pci);
        j_str("cc", cc);
        j_int("sm_count", D.sm_count);
        j_int("l2_bytes", D.l2_bytes);
        j_int("clock_khz", D.clock_khz);
        j_int("mem_clock_khz", D.mem_clock_khz);
        j_int("mem_bus_width_bits", D.bus_width);
        j_int("total_mem_bytes", D.total_mem);
        j_int("free_mem_bytes", (long long)fr);
        j_int("smem_per_sm_bytes", D.smem_per_sm);
        j_int("smem_per_block_optin_bytes", D.smem_per_block_optin);
        j_int("max_threads_per_sm", D.max_threads_per_sm);
        j_int("max_blocks_per_sm", D.max_blocks_per_sm);
        j_int("regs_per_sm", D.regs_per_sm);
        j_bool("green_ok", D.gc_ok);
        if (D.gc_ok) {
            j_int("green_sm_count", D.gc.sm_count);
            j_int("green_min_partition", D.gc.min_partition);
            j_int("green_alignment", D.gc.alignment);
        } else {
            j_str("green_error", D.gc_err);
        }
    }
    j_int("warmup", ZOO_WARMUP);
    j_num("target_replay_us", ZOO_TARGET_REPLAY_US);
    j_int("max_n_repeat", ZOO_MAX_N_REPEAT);
    j_int("replays", O.replays);
    j_int("max_slots", ZOO_MAX_SLOTS);
    j_num("gate_us", O.gate_us);
    j_end();
}

static int exit_code(void)
{
    if (g_fatal)
        return ZOO_EXIT_FATAL;
    if (g_budget_hit)
        return ZOO_EXIT_BUDGET;
    if (g_n_failed || g_n_check_fail)
        return ZOO_EXIT_FAILED;
    return ZOO_EXIT_OK;
}

static void write_end(int code)
{
    j_begin("end");
    j_bool("ok", code == ZOO_EXIT_OK);
    j_int("exit_code", code);
    j_int("n_ok", g_n_ok);
    j_int("n_failed", g_n_failed);
    j_int("n_check_fail", g_n_check_fail);
    j_bool("budget_hit", g_budget_hit);
    j_bool("fatal", g_fatal);
    if (g_fatal)
        j_str("fatal_error", g_fatal_msg);
    j_num("elapsed_s", now_s() - g_t_start);
    j_end();
}

/* ---- arguments ---------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
"usage: mosaic-zoo SUBCOMMAND [options]\n"
"  list                           variants: name, family, category, bytes\n"
"  once [--variants L|all]       one launch of each variant (for profilers)\n"
"  time [--variants L|all] [--sms N,...] [--replays N]\n"
"                                 isolated timing (CUDA graph, 100 replays);\n"
"                                 --sms N >= the GPU's SMs means the full GPU\n"
"  corun --pairs FILE|--all-pairs [--variants L] [--mode shared|partitioned]\n"
"        [--split X] [--repeats R] [--order ab|ba|both] [--gate-us US]\n"
"                                 gated co-runs against isolated baselines;\n"
"                                 defaults: shared, X = half the SMs rounded\n"
"                                 down to 8, R = 7, ab, gate 100 us\n"
"  placement [--sms N] [--repeats R] [--spin-us US]\n"
"                                 thread-block placement probes (R = 1,\n"
"                                 spin 30 us)\n"
"  mps-corun --variant A --start-at EPOCH_NS|+SECONDS [--repeats R]\n"
"        [--interval-ms MS] [--sms N]\n"
"                                 timed launches for a two-process MPS check\n"
"                                 (R = 7, 50 ms apart, CLOCK_REALTIME)\n"
"  behind --variants L --probes GxT[+SMEM],... [--repeats R] [--spin-us US]\n"
"                                 where a probe kernel's blocks land when it\n"
"                                 arrives behind each variant (R = 3)\n"
"  residency --variants L [--free-threads N,...] [--repeats R]\n"
"                                 each variant beside a blocker that leaves N\n"
"                                 threads of every SM free (sleeping and\n"
"                                 issue-bound blockers; N = 256,512,1024)\n"
"common: --device N  -o FILE  --seed S  --time-budget SECONDS\n"
"        --sync-timeout SECONDS (default 300)\n"
"exit: 0 ok, 1 a measurement or check failed, 2 usage, 3 time budget spent,\n"
"      4 CUDA context unusable or a kernel hung\n");
}

static int parse_int_list(const char *s, int *out, int max)
{
    char buf[1024];
    char *tok, *save = NULL, *end;
    int n = 0;

    snprintf(buf, sizeof(buf), "%s", s);
    for (tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        long v = strtol(tok, &end, 10);

        if (*end || v <= 0 || v > 100000 || n >= max)
            return -1;
        out[n++] = (int)v;
    }
    return n;
}

static int parse_double(const char *s, double *out)
{
    char *end;

    *out = strtod(s, &end);
    return (*end || end == s) ? -1 : 0;
}

static int parse_start_at(const char *s)
{
    double off;
    char *end;

    if (s[0] == '+') {
        if (parse_double(s + 1, &off) || off < 0)
            return -1;
        O.start_at_ns = realtime_ns() + (long long)(off * 1e9);
    } else {
        O.start_at_ns = strtoll(s, &end, 10);
        if (*end || O.start_at_ns <= 0)
            return -1;
    }
    O.start_at_set = 1;
    return 0;
}

static int parse_cmd(const char *s)
{
    static const struct {
        const char *name;
        enum zoo_cmd cmd;
    } cmds[] = {
        {"list", CMD_LIST}, {"once", CMD_ONCE}, {"time", CMD_TIME},
        {"corun", CMD_CORUN},
        {"placement", CMD_PLACEMENT}, {"mps-corun", CMD_MPS},
        {"behind", CMD_BEHIND}, {"residency", CMD_RESIDENCY},
    };
    size_t i;

    for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strcmp(s, cmds[i].name) == 0) {
            O.cmd = cmds[i].cmd;
            O.cmd_name = cmds[i].name;
            return 0;
        }
    return -1;
}

enum {
    OPT_VARIANTS = 256, OPT_SMS, OPT_PAIRS, OPT_ALL_PAIRS, OPT_MODE,
    OPT_SPLIT, OPT_REPEATS, OPT_ORDER, OPT_VARIANT, OPT_START_AT,
    OPT_DEVICE, OPT_SEED, OPT_BUDGET, OPT_REPLAYS, OPT_GATE_US, OPT_SPIN_US,
    OPT_INTERVAL, OPT_SYNC_TIMEOUT, OPT_PROBES, OPT_FREE_THREADS
};

static int bad(const char *what, const char *val)
{
    fprintf(stderr, "mosaic-zoo: bad %s '%s'\n", what, val ? val : "");
    return -1;
}

static int parse_opt(int c, const char *a)
{
    double d;

    switch (c) {
    case 'o':
        O.out_path = a;
        return 0;
    case 'h':
        usage(stdout);
        exit(ZOO_EXIT_OK);
    case OPT_VARIANTS:
        O.variants = a;
        return 0;
    case OPT_SMS:
        O.n_sms = parse_int_list(a, O.sms, ZOO_MAX_LIST);
        return O.n_sms > 0 ? 0 : bad("--sms", a);
    case OPT_PAIRS:
        O.pairs_path = a;
        return 0;
    case OPT_ALL_PAIRS:
        O.all_pairs = 1;
        return 0;
    case OPT_MODE:
        if (strcmp(a, "shared") && strcmp(a, "partitioned"))
            return bad("--mode", a);
        O.partitioned = strcmp(a, "partitioned") == 0;
        return 0;
    case OPT_SPLIT:
        O.split = atoi(a);
        return O.split > 0 ? 0 : bad("--split", a);
    case OPT_REPEATS:
        O.repeats = atoi(a);
        return O.repeats > 0 && O.repeats <= ZOO_MAX_REPEATS
                   ? 0 : bad("--repeats (1..1000)", a);
    case OPT_ORDER:
        O.order_ab = strcmp(a, "ab") == 0 || strcmp(a, "both") == 0;
        O.order_ba = strcmp(a, "ba") == 0 || strcmp(a, "both") == 0;
        return O.order_ab || O.order_ba ? 0 : bad("--order", a);
    case OPT_VARIANT:
        O.variant = a;
        return 0;
    case OPT_START_AT:
        return parse_start_at(a) ? bad("--start-at", a) : 0;
    case OPT_DEVICE:
        O.device = atoi(a);
        return 0;
    case OPT_SEED:
        O.seed = (unsigned int)strtoul(a, NULL, 0);
        return 0;
    case OPT_BUDGET:
        return parse_double(a, &O.time_budget_s) ? bad("--time-budget", a)
                                                  : 0;
    case OPT_REPLAYS:
        O.replays = atoi(a);
        return O.replays > 0 && O.replays <= ZOO_MAX_REPLAYS
                   ? 0 : bad("--replays (1..1000)", a);
    case OPT_GATE_US:
        return parse_double(a, &O.gate_us) || O.gate_us <= 0
                   ? bad("--gate-us", a) : 0;
    case OPT_SPIN_US:
        return parse_double(a, &O.spin_us) || O.spin_us <= 0
                   ? bad("--spin-us", a) : 0;
    case OPT_INTERVAL:
        return parse_double(a, &O.interval_ms) || O.interval_ms <= 0
                   ? bad("--interval-ms", a) : 0;
    case OPT_PROBES:
        O.probes = a;
        return 0;
    case OPT_FREE_THREADS:
        O.n_free = parse_int_list(a, O.free_threads, ZOO_MAX_LIST);
        return O.n_free > 0 ? 0 : bad("--free-threads", a);
    case OPT_SYNC_TIMEOUT:
        if (parse_double(a, &d) || d <= 0)
            return bad("--sync-timeout", a);
        O.sync_timeout_s = d;
        return 0;
    }
    return -1;
}

static int parse_args(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"variants", required_argument, NULL, OPT_VARIANTS},
        {"sms", required_argument, NULL, OPT_SMS},
        {"pairs", required_argument, NULL, OPT_PAIRS},
        {"all-pairs", no_argument, NULL, OPT_ALL_PAIRS},
        {"mode", required_argument, NULL, OPT_MODE},
        {"split", required_argument, NULL, OPT_SPLIT},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"order", required_argument, NULL, OPT_ORDER},
        {"variant", required_argument, NULL, OPT_VARIANT},
        {"start-at", required_argument, NULL, OPT_START_AT},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"output", required_argument, NULL, 'o'},
        {"seed", required_argument, NULL, OPT_SEED},
        {"time-budget", required_argument, NULL, OPT_BUDGET},
        {"replays", required_argument, NULL, OPT_REPLAYS},
        {"gate-us", required_argument, NULL, OPT_GATE_US},
        {"spin-us", required_argument, NULL, OPT_SPIN_US},
        {"interval-ms", required_argument, NULL, OPT_INTERVAL},
        {"sync-timeout", required_argument, NULL, OPT_SYNC_TIMEOUT},
        {"probes", required_argument, NULL, OPT_PROBES},
        {"free-threads", required_argument, NULL, OPT_FREE_THREADS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    size_t len = 0;
    int c, i;

    for (i = 0; i < argc && len + 2 < sizeof(g_argv); i++) {
        int w = snprintf(g_argv + len, sizeof(g_argv) - len, "%s%s",
                         i ? " " : "", argv[i]);

        if (w < 0)
            break;
        len += (size_t)w;
    }
    O.seed = 12345;
    O.replays = ZOO_DEFAULT_REPLAYS;
    O.gate_us = 100.0;
    O.spin_us = 30.0;
    O.interval_ms = 50.0;
    O.sync_timeout_s = 300.0;
    O.order_ab = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        if (c == '?' || parse_opt(c, optarg))
            return -1;
    }
    if (optind != argc - 1 || parse_cmd(argv[optind])) {
        fprintf(stderr, "mosaic-zoo: need exactly one subcommand\n");
        return -1;
    }
    if (O.cmd == CMD_CORUN && !O.pairs_path == !O.all_pairs) {
        fprintf(stderr, "mosaic-zoo: corun needs --pairs FILE or "
                "--all-pairs\n");
        return -1;
    }
    if (O.cmd == CMD_RESIDENCY && !O.variants) {
        fprintf(stderr, "mosaic-zoo: residency needs --variants\n");
        return -1;
    }
    if (O.cmd == CMD_BEHIND && (!O.variants || !O.probes)) {
        fprintf(stderr, "mosaic-zoo: behind needs --variants and --probes\n");
        return -1;
    }
    if (O.cmd == CMD_MPS && (!O.variant || !O.start_at_set)) {
        fprintf(stderr, "mosaic-zoo: mps-corun needs --variant and "
                "--start-at\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int code;

    g_t_start = now_s();
    if (parse_args(argc, argv)) {
        usage(stderr);
        return ZOO_EXIT_USAGE;
    }
    g_out = stdout;
    if (O.out_path && !(g_out = fopen(O.out_path, "w"))) {
        fprintf(stderr, "mosaic-zoo: cannot write %s: %s\n", O.out_path,
                strerror(errno));
        return ZOO_EXIT_USAGE;
    }
    clear_err();
    if (device_init() != 0) {
        fprintf(stderr, "mosaic-zoo: no usable GPU: %s\n", g_err);
        cudaGetLastError();
    }
    write_meta();
    if (O.cmd == CMD_LIST) {
        cmd_list();
    } else if (!D.ok) {
        /* Counted as a failed measurement: nothing could be measured. */
        j_begin("error");
        j_result(0);
        j_end();
    } else {
        if (O.cmd == CMD_CORUN && O.partitioned && O.split == 0)
            O.split = (D.sm_count / 2) / 8 * 8;
        switch (O.cmd) {
        case CMD_ONCE:
            cmd_once();
            break;
        case CMD_TIME:
            cmd_time();
            break;
        case CMD_CORUN:
            cmd_corun();
            break;
        case CMD_PLACEMENT:
            cmd_placement();
            break;
        case CMD_MPS:
            cmd_mps();
            break;
        case CMD_BEHIND:
            cmd_behind();
            break;
        case CMD_RESIDENCY:
            cmd_residency();
            break;
        default:
            break;
        }
    }
    code = exit_code();
    write_end(code);
    if (D.ok && !g_fatal)
        device_fini();
    if (g_out != stdout)
        fclose(g_out);
    free(J.b);
    return code;
}
