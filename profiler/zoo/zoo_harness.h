/*
 * What every part of the mosaic-zoo harness shares: limits and defaults,
 * exit codes, the options of the run, the device it runs on, the counters
 * behind the exit status, error handling, and instances of the zoo's
 * variants (zoo.h). Defined in zoo_harness.cu.
 *
 * Error convention: a function returns 0, or a cudaError_t, or -1 for a
 * harness error, and the first error of a measurement is kept in g_err
 * (seterr) for its record, so that a record names the root cause and not
 * its echoes. CK and CKZ jump to the function's "out:" label.
 */
#ifndef MOSAIC_ZOO_HARNESS_H
#define MOSAIC_ZOO_HARNESS_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdio.h>

#include "greenctx.h"
#include "zoo.h"
#include "zoo_cmds.h"

/* ---- limits and defaults ------------------------------------------------ */

/* The timing method's constants (docs/dataset.md, "How the zoo times a
 * kernel"), chosen and checked on an H200 (driver 580.159.04, CUDA 13.0);
 * every run's "meta" record repeats them. */
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

/* ---- the run ------------------------------------------------------------ */

/* The options of all subcommands (zoo_main.cu parses them). */
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
    const char *delays;           /* corun-offset, mps-offset (offset_plan.h) */
    double peer_timeout_ms;       /* bound of every protocol wait */
    int role;                     /* mps-offset: 0 process a, 1 process b */
    int role_set;
    const char *ipc_file;         /* mps-offset: the sync block's handle */
    double handle_wait_s;         /* mps-offset: wait for the peer to start */
    int check_args;               /* parse, validate, exit before the GPU */
};

/* What the device is, read once by device_init. */
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

extern struct zoo_opts g_opt;
extern struct devinfo g_dev;
extern char g_err[ZOO_ERRLEN];    /* the first error of a measurement */
/* Measurement records ok and failed (j_result), failed checks: the exit
 * status. */
extern int g_n_ok, g_n_failed, g_n_check_fail;
extern int g_budget_hit;          /* --time-budget ran out */
extern int g_fatal;               /* the context is unusable: stop */
extern char g_fatal_msg[ZOO_ERRLEN + 256];
extern double g_t_start;          /* now_s() at start */
extern char g_argv[2048];         /* the command line, for "meta" */

double now_s(void);               /* CLOCK_MONOTONIC, seconds */
long long realtime_ns(void);      /* CLOCK_REALTIME, ns */

/* ---- errors ------------------------------------------------------------- */

/* Keeps the first error of a measurement: the root cause, not its echoes. */
void seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void clear_err(void);
/* Copies with truncation; snprintf("%s") would do, but draws warnings. */
void copy_str(char *dst, size_t n, const char *src);
/* Families return 0 or a cudaError_t; "rc (name)" of either, in a static
 * buffer. */
const char *zerr(int rc);

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

/* Stop starting new measurements once the budget is spent or the context
 * is unusable; what was measured is already written. */
int should_stop(void);
/* A hung stream: writes the "end" record and leaves the process at once. */
void fatal_hang(const char *what);
/* Waits for s, giving up (fatally) after --sync-timeout plus three times
 * the work the caller expects to be queued (expect_s). */
int wait_stream_for(cudaStream_t s, double expect_s);
int wait_stream(cudaStream_t s);
/* After a failed measurement: clears a non-sticky error, or notices a
 * sticky one and sets g_fatal. */
void recover(void);

/* ---- instances of variants ---------------------------------------------- */

size_t working_set(const struct zoo_variant *v);
/* The index of the variant called name, or -1. */
int find_variant(const char *name);
/* One launch, then the next rotation slot. */
int launch_one(struct zoo_inst *in, cudaStream_t s);
/* Sets up v with as many input copies as rotation needs; setup_s is how
 * long it took. */
int inst_setup(struct zoo_inst *in, const struct zoo_variant *v,
               double *setup_s);
void inst_teardown(struct zoo_inst *in);
/* The variant's check of its last launch: 0 pass, 1 fail. */
int run_check(struct zoo_inst *in);
/* A variant given up on: its error recorded, its buffers freed, the
 * context checked. */
void inst_abandon(struct zoo_inst *in);
/* Sets up variant i and runs it once on s (a warm-up); on failure abandons
 * it and returns -1. */
int inst_ready(struct zoo_inst *in, int i, cudaStream_t s);

/* ---- records and selection ---------------------------------------------- */

/* "ok" of a measurement record (and "error" when not ok); these are what
 * the exit status counts. */
void j_result(int ok);
/* "variant", "family", "category" of v. */
void j_variant(const struct zoo_variant *v);
/* An "error" record (counted as failed) and the same line on stderr. */
void error_record(const char *what);
/* spec: NULL/"all", or comma-separated variant or family names; sets
 * sel[i] for each selected variant and returns how many. */
int select_variants(const char *spec, unsigned char *sel);

/* ---- the device and the records around a run ---------------------------- */

/* Reads the device, makes its primary context current, creates the timing
 * events and the gate stream; g_dev.ok says whether it worked. */
int device_init(void);
void device_fini(void);
void write_meta(void);
int exit_code(void);
void write_end(int code);

#endif /* MOSAIC_ZOO_HARNESS_H */
