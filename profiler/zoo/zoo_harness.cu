/*
 * The run state that every subcommand of mosaic-zoo shares (declared in
 * zoo_harness.h): the options, the device, the counters behind the exit
 * status; errors, waiting for streams and recovering from failures;
 * instances of variants (setup with input rotation, launch, check,
 * teardown); variant selection; the device set-up and the "meta" and "end"
 * records that open and close every output.
 */
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "greenctx.h"
#include "zoo.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"
#include "zoo_probes.h"
#include "zoo_timing.h"

struct zoo_opts g_opt;
struct devinfo g_dev;
char g_err[ZOO_ERRLEN];
int g_n_ok, g_n_failed, g_n_check_fail;
int g_budget_hit;
int g_fatal;
char g_fatal_msg[ZOO_ERRLEN + 256];
double g_t_start;
char g_argv[2048];

/* ---- small helpers ------------------------------------------------------ */

double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

long long realtime_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Keeps the first error of a measurement: the root cause, not its echoes. */
void seterr(const char *fmt, ...)
{
    va_list ap;

    if (g_err[0])
        return;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof(g_err), fmt, ap);
    va_end(ap);
}

void clear_err(void)
{
    g_err[0] = 0;
}

/* Copies with truncation; snprintf("%s") would do, but draws warnings. */
void copy_str(char *dst, size_t n, const char *src)
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
const char *zerr(int rc)
{
    static char buf[160];

    snprintf(buf, sizeof(buf), "%d (%s)", rc,
             rc > 0 ? cudaGetErrorName((cudaError_t)rc) : "harness error");
    return buf;
}

/* Stop starting new measurements once the budget is spent or the context
 * is unusable; what was measured is already written. */
int should_stop(void)
{
    if (g_fatal)
        return 1;
    if (g_opt.time_budget_s > 0 && now_s() - g_t_start > g_opt.time_budget_s) {
        if (!g_budget_hit)
            fprintf(stderr, "mosaic-zoo: time budget of %.0f s spent; "
                    "stopping\n", g_opt.time_budget_s);
        g_budget_hit = 1;
        return 1;
    }
    return 0;
}

/* ---- fatal conditions --------------------------------------------------- */

/* A stream that never finishes means a hung kernel: nothing in this process
 * can continue, and tearing down CUDA could block, so leave at once. */
void fatal_hang(const char *what)
{
    snprintf(g_fatal_msg, sizeof(g_fatal_msg),
             "%s did not finish within %.0f s (hung kernel?); run stopped",
             what, g_opt.sync_timeout_s);
    fprintf(stderr, "mosaic-zoo: %s\n", g_fatal_msg);
    g_fatal = 1;
    write_end(ZOO_EXIT_FATAL);
    _exit(ZOO_EXIT_FATAL);
}

/* Waits for s, giving up (fatally) after --sync-timeout plus three times
 * the work the caller expects to be queued (expect_s). */
int wait_stream_for(cudaStream_t s, double expect_s)
{
    struct timespec nap = {0, 20000};
    double t0 = now_s();
    double limit = g_opt.sync_timeout_s + 3.0 * expect_s;
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

int wait_stream(cudaStream_t s)
{
    return wait_stream_for(s, 0);
}

/* After a failed measurement: clear a non-sticky error so the next one can
 * run, or notice a sticky one (illegal address, launch failure...) that has
 * made the whole context unusable, and stop. */
void recover(void)
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

/* ---- instances of variants --------------------------------------------- */

size_t working_set(const struct zoo_variant *v)
{
    return v->working_set ? v->working_set(v) : 0;
}

int find_variant(const char *name)
{
    int i;

    for (i = 0; i < zoo_n_variants; i++)
        if (strcmp(zoo_variants[i].name, name) == 0)
            return i;
    return -1;
}

/* One launch of a variant, then the next rotation slot: inside a captured
 * graph this bakes the rotation into the graph. */
int launch_one(struct zoo_inst *in, cudaStream_t s)
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
    size_t l2x2 = 2 * (size_t)g_dev.l2_bytes;
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
    return h ^ g_opt.seed;
}

int inst_setup(struct zoo_inst *in, const struct zoo_variant *v,
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

void inst_teardown(struct zoo_inst *in)
{
    if (in->v && in->v->teardown)
        in->v->teardown(in);
    in->v = NULL;
    in->state = NULL;
    cudaGetLastError();
}

/* check() reads "the last launch's output": point inst->slot at the slot
 * that launch used while it runs. */
int run_check(struct zoo_inst *in)
{
    int next = in->slot;
    int r;

    in->slot = (in->slot + in->slots - 1) % in->slots;
    r = in->v->check(in);
    in->slot = next;
    cudaGetLastError();
    return r == 0 ? 0 : 1;
}

/* A variant given up on: its error recorded, its buffers freed, the
 * context checked. */
void inst_abandon(struct zoo_inst *in)
{
    error_record(g_err);
    inst_teardown(in);
    recover();
}

/* Sets up variant i and runs it once on s (a warm-up); on failure abandons
 * it and returns -1. */
int inst_ready(struct zoo_inst *in, int i, cudaStream_t s)
{
    double setup_s = 0;

    clear_err();
    if (inst_setup(in, &zoo_variants[i], &setup_s) || launch_one(in, s) || wait_stream(s)) {
        inst_abandon(in);
        return -1;
    }
    return 0;
}

/* ---- records and variant selection ------------------------------------- */

/* "ok" of a measurement record; these are what the exit status counts. */
void j_result(int ok)
{
    j_bool("ok", ok);
    if (ok)
        g_n_ok++;
    else
        g_n_failed++;
    if (!ok)
        j_str("error", g_err[0] ? g_err : "unknown error");
}

void j_variant(const struct zoo_variant *v)
{
    j_str("variant", v->name);
    j_str("family", v->family);
    j_str("category", zoo_category_name(v->category));
}

void error_record(const char *what)
{
    clear_err();
    seterr("%s", what);
    j_begin("error");
    j_result(0);
    j_end();
    fprintf(stderr, "mosaic-zoo: %s\n", what);
}

/* spec: NULL/"all", or comma-separated variant names or family names. */
int select_variants(const char *spec, unsigned char *sel)
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

    if (cudaDeviceGetAttribute(&v, a, g_opt.device) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return v;
}

int device_init(void)
{
    struct cudaDeviceProp p;
    int rc = 0, n = 0;

    read_driver_string(g_dev.driver_str, sizeof(g_dev.driver_str));
    cudaDriverGetVersion(&g_dev.driver_api);
    cudaRuntimeGetVersion(&g_dev.runtime);
    CK(cudaGetDeviceCount(&n));
    if (g_opt.device < 0 || g_opt.device >= n) {
        seterr("--device %d: this machine has %d CUDA devices", g_opt.device,
               n);
        rc = -1;
        goto out;
    }
    CK(cudaSetDevice(g_opt.device));
    /* Creates and makes current the primary context, which owns the
     * runtime's modules; green contexts are made from it. */
    CK(cudaFree(0));
    CK(cudaGetDeviceProperties(&p, g_opt.device));
    snprintf(g_dev.name, sizeof(g_dev.name), "%s", p.name);
    g_dev.cc_major = p.major;
    g_dev.cc_minor = p.minor;
    g_dev.total_mem = (long long)p.totalGlobalMem;
    g_dev.smem_per_block_optin = (int)p.sharedMemPerBlockOptin;
    if (cudaDeviceGetPCIBusId(g_dev.pci, sizeof(g_dev.pci), g_opt.device) !=
        cudaSuccess)
        cudaGetLastError();
    g_dev.sm_count = attr(cudaDevAttrMultiProcessorCount);
    g_dev.l2_bytes = attr(cudaDevAttrL2CacheSize);
    g_dev.clock_khz = attr(cudaDevAttrClockRate);
    g_dev.mem_clock_khz = attr(cudaDevAttrMemoryClockRate);
    g_dev.bus_width = attr(cudaDevAttrGlobalMemoryBusWidth);
    g_dev.smem_per_sm = attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
    g_dev.max_threads_per_sm = attr(cudaDevAttrMaxThreadsPerMultiProcessor);
    g_dev.max_blocks_per_sm = attr(cudaDevAttrMaxBlocksPerMultiprocessor);
    g_dev.regs_per_sm = attr(cudaDevAttrMaxRegistersPerMultiprocessor);
    if (g_dev.sm_count <= 0 || g_dev.l2_bytes <= 0) {
        seterr("device attributes unreadable (SMs %d, L2 %lld)",
               g_dev.sm_count, g_dev.l2_bytes);
        rc = -1;
        goto out;
    }
    g_dev.gc_ok = gc_query(g_opt.device, &g_dev.gc, g_dev.gc_err,
                           sizeof(g_dev.gc_err)) == 0;
    CKZ(timing_init());
    g_dev.ok = 1;
out:
    return rc;
}

void device_fini(void)
{
    probe_free();
    timing_fini();
}

void write_meta(void)
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
    j_bool("ok", g_dev.ok);
    if (!g_dev.ok)
        j_str("error", g_err);
    j_str("tool", "mosaic-zoo");
    j_int("schema", 1);
    j_str("subcommand", g_opt.cmd_name);
    j_str("argv", g_argv);
    j_str("date_utc", date);
    j_str("git", getenv("MOSAIC_GIT"));
    j_str("hostname", host);
    j_int("pid", (long long)getpid());
    j_int("seed", g_opt.seed);
    j_int("n_variants", zoo_n_variants);
    j_int("device", g_opt.device);
    j_str("driver_version", g_dev.driver_str);
    j_int("cuda_driver_version", g_dev.driver_api);
    j_int("cuda_runtime_version", g_dev.runtime);
    j_str("cuda_visible_devices", getenv("CUDA_VISIBLE_DEVICES"));
    j_str("cuda_mps_pipe_directory", getenv("CUDA_MPS_PIPE_DIRECTORY"));
    if (g_dev.ok) {
        char cc[16];

        snprintf(cc, sizeof(cc), "%d.%d", g_dev.cc_major, g_dev.cc_minor);
        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
            cudaGetLastError();
        j_str("gpu", g_dev.name);
        j_str("pci_bus_id", g_dev.pci);
        j_str("cc", cc);
        j_int("sm_count", g_dev.sm_count);
        j_int("l2_bytes", g_dev.l2_bytes);
        j_int("clock_khz", g_dev.clock_khz);
        j_int("mem_clock_khz", g_dev.mem_clock_khz);
        j_int("mem_bus_width_bits", g_dev.bus_width);
        j_int("total_mem_bytes", g_dev.total_mem);
        j_int("free_mem_bytes", (long long)fr);
        j_int("smem_per_sm_bytes", g_dev.smem_per_sm);
        j_int("smem_per_block_optin_bytes", g_dev.smem_per_block_optin);
        j_int("max_threads_per_sm", g_dev.max_threads_per_sm);
        j_int("max_blocks_per_sm", g_dev.max_blocks_per_sm);
        j_int("regs_per_sm", g_dev.regs_per_sm);
        j_bool("green_ok", g_dev.gc_ok);
        if (g_dev.gc_ok) {
            j_int("green_sm_count", g_dev.gc.sm_count);
            j_int("green_min_partition", g_dev.gc.min_partition);
            j_int("green_alignment", g_dev.gc.alignment);
        } else {
            j_str("green_error", g_dev.gc_err);
        }
    }
    j_int("warmup", ZOO_WARMUP);
    j_num("target_replay_us", ZOO_TARGET_REPLAY_US);
    j_int("max_n_repeat", ZOO_MAX_N_REPEAT);
    j_int("replays", g_opt.replays);
    j_int("max_slots", ZOO_MAX_SLOTS);
    j_num("gate_us", g_opt.gate_us);
    j_end();
}

int exit_code(void)
{
    if (g_fatal)
        return ZOO_EXIT_FATAL;
    if (g_budget_hit)
        return ZOO_EXIT_BUDGET;
    if (g_n_failed || g_n_check_fail)
        return ZOO_EXIT_FAILED;
    return ZOO_EXIT_OK;
}

void write_end(int code)
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
