/*
 * mosaic-zoo: the harness that runs the kernel zoo (zoo.h) on a GPU and
 * writes what it measures as JSON Lines. This file parses the options that
 * all subcommands share and dispatches to the subcommand (zoo_cmds.h).
 *
 *   mosaic-zoo list
 *   mosaic-zoo once      [--variants LIST|all]
 *   mosaic-zoo time      [--variants LIST|all] [--sms N,...] [--replays N]
 *   mosaic-zoo corun     --pairs FILE | --all-pairs [--variants LIST]
 *                        [--mode shared|partitioned] [--split X]
 *                        [--repeats R] [--order ab|ba|both] [--gate-us US]
 *   mosaic-zoo placement [--sms N] [--repeats R] [--spin-us US]
 *   mosaic-zoo mps-corun --variant A --start-at EPOCH_NS|+SECONDS
 *                        [--repeats R] [--interval-ms MS] [--sms N]
 *   mosaic-zoo behind    --variants LIST --probes GxT[+SMEM],...
 *                        [--repeats R] [--spin-us US]
 *   mosaic-zoo residency --variants LIST [--free-threads N,...] [--repeats R]
 *   mosaic-zoo corun-offset --pairs FILE [--mode shared|partitioned]
 *                        [--split X] [--order ab|ba|both] [--delays LIST]
 *                        [--repeats R] [--gate-us US] [--peer-timeout-ms MS]
 *   mosaic-zoo mps-offset --role a|b --ipc-file F --pairs FILE
 *                        [--order ab|ba|both] [--delays LIST] [--repeats R]
 *                        [--peer-timeout-ms MS] [--handle-wait-s S]
 *   common: --device N, -o FILE, --seed S, --time-budget SECONDS,
 *           --sync-timeout SECONDS, --check-args
 *
 * Every output starts with a "meta" record and ends with an "end" record.
 * Exit status: 0 all measurements succeeded; 1 some failed (their records
 * say "ok":false) or a variant's check() failed; 2 bad usage; 3 the time
 * budget ran out (what was measured is written); 4 the CUDA context became
 * unusable (sticky error) or a stream hung, so the run stopped early.
 *
 * Where the parts are:
 *   zoo_harness.{h,cu}   the run's options, device, counters, errors,
 *                        instances of variants, "meta" and "end" records
 *   zoo_jsonl.{h,cu}     the JSON Lines writer
 *   zoo_timing.{h,cu}    the timing method (docs/dataset.md, "How the zoo
 *                        times a kernel") and the gating of co-runs
 *   zoo_streams.{h,cu}   the full GPU or green contexts, two streams each,
 *                        and their self-check; greenctx.{h,cu} the driver
 *                        calls for green contexts
 *   zoo_probes.{h,cu}    the placement probe and its record buffers
 *   cmd_*.cu             one file per subcommand
 *   zoo_corun.h          the co-run cache and isolated timings that corun
 *                        and corun-offset share (defined in cmd_corun.cu)
 *   offset*.{h,cu}       the launch-offset protocol (GPU-side), its
 *                        schedule and run state, for corun-offset and
 *                        mps-offset
 *   kernels_*.cu         the kernel families by category; zoo_variants.cu
 *                        the registry of variants
 *
 * Tested on an H200 (sm_90, 132 SMs), driver 580.159.04, CUDA 13.0; the
 * measurements it took there are profiler/data/h200/ (docs/dataset.md).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offset_plan.h"
#include "zoo.h"
#include "zoo_cmds.h"
#include "zoo_corun.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"

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
"  corun-offset --pairs FILE [--mode shared|partitioned] [--split X]\n"
"        [--order ab|ba|both] [--delays LIST] [--repeats R] [--gate-us US]\n"
"        [--peer-timeout-ms MS]\n"
"                                 co-runs with B started a delay after A was\n"
"                                 dispatched (ba: A after B), GPU-side;\n"
"                                 LIST: us or multiples of the leader's\n"
"                                 isolated duration (default\n"
"                                 0,2,5,10,20,50,0.5x,1x,1.5x), R = 5\n"
"  mps-offset --role a|b --ipc-file F --pairs FILE [--order ab|ba|both]\n"
"        [--delays LIST] [--repeats R] [--peer-timeout-ms MS]\n"
"        [--handle-wait-s S]\n"
"                                 the same with A and B in two processes\n"
"                                 (run both, under MPS); process a writes\n"
"                                 the IPC handle to F (0600), b opens it\n"
"common: --device N  -o FILE  --seed S  --time-budget SECONDS\n"
"        --sync-timeout SECONDS (default 300)\n"
"        --check-args: check the arguments (and --pairs) and exit, no GPU\n"
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
        g_opt.start_at_ns = realtime_ns() + (long long)(off * 1e9);
    } else {
        g_opt.start_at_ns = strtoll(s, &end, 10);
        if (*end || g_opt.start_at_ns <= 0)
            return -1;
    }
    g_opt.start_at_set = 1;
    return 0;
}

static const struct {
    const char *name;
    enum zoo_cmd cmd;
    int (*run)(void);
} g_cmds[] = {
#define ZOO_CMD_ROW(e, name, fn) {name, e, fn},
    ZOO_COMMANDS(ZOO_CMD_ROW)
#undef ZOO_CMD_ROW
};

static int parse_cmd(const char *s)
{
    size_t i;

    for (i = 0; i < sizeof(g_cmds) / sizeof(g_cmds[0]); i++)
        if (strcmp(s, g_cmds[i].name) == 0) {
            g_opt.cmd = g_cmds[i].cmd;
            g_opt.cmd_name = g_cmds[i].name;
            return 0;
        }
    return -1;
}

enum {
    OPT_VARIANTS = 256, OPT_SMS, OPT_PAIRS, OPT_ALL_PAIRS, OPT_MODE,
    OPT_SPLIT, OPT_REPEATS, OPT_ORDER, OPT_VARIANT, OPT_START_AT,
    OPT_DEVICE, OPT_SEED, OPT_BUDGET, OPT_REPLAYS, OPT_GATE_US, OPT_SPIN_US,
    OPT_INTERVAL, OPT_SYNC_TIMEOUT, OPT_PROBES, OPT_FREE_THREADS,
    OPT_DELAYS, OPT_PEER_TIMEOUT, OPT_ROLE, OPT_IPC_FILE, OPT_HANDLE_WAIT,
    OPT_CHECK_ARGS
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
        g_opt.out_path = a;
        return 0;
    case 'h':
        usage(stdout);
        exit(ZOO_EXIT_OK);
    case OPT_VARIANTS:
        g_opt.variants = a;
        return 0;
    case OPT_SMS:
        g_opt.n_sms = parse_int_list(a, g_opt.sms, ZOO_MAX_LIST);
        return g_opt.n_sms > 0 ? 0 : bad("--sms", a);
    case OPT_PAIRS:
        g_opt.pairs_path = a;
        return 0;
    case OPT_ALL_PAIRS:
        g_opt.all_pairs = 1;
        return 0;
    case OPT_MODE:
        if (strcmp(a, "shared") && strcmp(a, "partitioned"))
            return bad("--mode", a);
        g_opt.partitioned = strcmp(a, "partitioned") == 0;
        return 0;
    case OPT_SPLIT:
        g_opt.split = atoi(a);
        return g_opt.split > 0 ? 0 : bad("--split", a);
    case OPT_REPEATS:
        g_opt.repeats = atoi(a);
        return g_opt.repeats > 0 && g_opt.repeats <= ZOO_MAX_REPEATS
                   ? 0 : bad("--repeats (1..1000)", a);
    case OPT_ORDER:
        g_opt.order_ab = strcmp(a, "ab") == 0 || strcmp(a, "both") == 0;
        g_opt.order_ba = strcmp(a, "ba") == 0 || strcmp(a, "both") == 0;
        return g_opt.order_ab || g_opt.order_ba ? 0 : bad("--order", a);
    case OPT_VARIANT:
        g_opt.variant = a;
        return 0;
    case OPT_START_AT:
        return parse_start_at(a) ? bad("--start-at", a) : 0;
    case OPT_DEVICE:
        g_opt.device = atoi(a);
        return 0;
    case OPT_SEED:
        g_opt.seed = (unsigned int)strtoul(a, NULL, 0);
        return 0;
    case OPT_BUDGET:
        return parse_double(a, &g_opt.time_budget_s) ? bad("--time-budget", a)
                                                  : 0;
    case OPT_REPLAYS:
        g_opt.replays = atoi(a);
        return g_opt.replays > 0 && g_opt.replays <= ZOO_MAX_REPLAYS
                   ? 0 : bad("--replays (1..1000)", a);
    case OPT_GATE_US:
        return parse_double(a, &g_opt.gate_us) || g_opt.gate_us <= 0
                   ? bad("--gate-us", a) : 0;
    case OPT_SPIN_US:
        return parse_double(a, &g_opt.spin_us) || g_opt.spin_us <= 0
                   ? bad("--spin-us", a) : 0;
    case OPT_INTERVAL:
        return parse_double(a, &g_opt.interval_ms) || g_opt.interval_ms <= 0
                   ? bad("--interval-ms", a) : 0;
    case OPT_PROBES:
        g_opt.probes = a;
        return 0;
    case OPT_FREE_THREADS:
        g_opt.n_free = parse_int_list(a, g_opt.free_threads, ZOO_MAX_LIST);
        return g_opt.n_free > 0 ? 0 : bad("--free-threads", a);
    case OPT_SYNC_TIMEOUT:
        if (parse_double(a, &d) || d <= 0)
            return bad("--sync-timeout", a);
        g_opt.sync_timeout_s = d;
        return 0;
    case OPT_DELAYS: {
        struct zoo_delay tmp[ZOO_OFF_MAX_DELAYS];
        char err[512];

        g_opt.delays = a;
        if (zoo_parse_delays(a, tmp, ZOO_OFF_MAX_DELAYS, err,
                             sizeof(err)) < 0) {
            fprintf(stderr, "mosaic-zoo: %s\n", err);
            return -1;
        }
        return 0;
    }
    case OPT_PEER_TIMEOUT:
        return parse_double(a, &g_opt.peer_timeout_ms) ||
                       g_opt.peer_timeout_ms <= 0 ||
                       g_opt.peer_timeout_ms > 600000
                   ? bad("--peer-timeout-ms (0..600000]", a) : 0;
    case OPT_ROLE:
        if (strcmp(a, "a") && strcmp(a, "b"))
            return bad("--role (a or b)", a);
        g_opt.role = a[0] == 'b';
        g_opt.role_set = 1;
        return 0;
    case OPT_IPC_FILE:
        g_opt.ipc_file = a;
        return 0;
    case OPT_HANDLE_WAIT:
        return parse_double(a, &g_opt.handle_wait_s) ||
                       g_opt.handle_wait_s <= 0 || g_opt.handle_wait_s > 3600
                   ? bad("--handle-wait-s (0..3600]", a) : 0;
    case OPT_CHECK_ARGS:
        g_opt.check_args = 1;
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
        {"delays", required_argument, NULL, OPT_DELAYS},
        {"peer-timeout-ms", required_argument, NULL, OPT_PEER_TIMEOUT},
        {"role", required_argument, NULL, OPT_ROLE},
        {"ipc-file", required_argument, NULL, OPT_IPC_FILE},
        {"handle-wait-s", required_argument, NULL, OPT_HANDLE_WAIT},
        {"check-args", no_argument, NULL, OPT_CHECK_ARGS},
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
    g_opt.seed = 12345;
    g_opt.replays = ZOO_DEFAULT_REPLAYS;
    g_opt.gate_us = 100.0;
    g_opt.spin_us = 30.0;
    g_opt.interval_ms = 50.0;
    g_opt.sync_timeout_s = 300.0;
    g_opt.order_ab = 1;
    g_opt.delays = "0,2,5,10,20,50,0.5x,1x,1.5x";
    g_opt.peer_timeout_ms = 10000.0;
    g_opt.handle_wait_s = 60.0;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        if (c == '?' || parse_opt(c, optarg))
            return -1;
    }
    if (optind != argc - 1 || parse_cmd(argv[optind])) {
        fprintf(stderr, "mosaic-zoo: need exactly one subcommand\n");
        return -1;
    }
    if (g_opt.cmd == CMD_CORUN && !g_opt.pairs_path == !g_opt.all_pairs) {
        fprintf(stderr, "mosaic-zoo: corun needs --pairs FILE or "
                "--all-pairs\n");
        return -1;
    }
    if (g_opt.cmd == CMD_RESIDENCY && !g_opt.variants) {
        fprintf(stderr, "mosaic-zoo: residency needs --variants\n");
        return -1;
    }
    if (g_opt.cmd == CMD_BEHIND && (!g_opt.variants || !g_opt.probes)) {
        fprintf(stderr, "mosaic-zoo: behind needs --variants and --probes\n");
        return -1;
    }
    if (g_opt.cmd == CMD_MPS && (!g_opt.variant || !g_opt.start_at_set)) {
        fprintf(stderr, "mosaic-zoo: mps-corun needs --variant and "
                "--start-at\n");
        return -1;
    }
    if ((g_opt.cmd == CMD_CORUN_OFFSET || g_opt.cmd == CMD_MPS_OFFSET) &&
        !g_opt.pairs_path) {
        fprintf(stderr, "mosaic-zoo: %s needs --pairs FILE\n",
                g_opt.cmd_name);
        return -1;
    }
    if ((g_opt.cmd == CMD_CORUN_OFFSET || g_opt.cmd == CMD_MPS_OFFSET) &&
        g_opt.repeats > ZOO_OFF_MAX_REPEATS) {
        fprintf(stderr, "mosaic-zoo: %s: --repeats at most %d\n",
                g_opt.cmd_name, ZOO_OFF_MAX_REPEATS);
        return -1;
    }
    if (g_opt.cmd == CMD_MPS_OFFSET && (!g_opt.role_set || !g_opt.ipc_file)) {
        fprintf(stderr, "mosaic-zoo: mps-offset needs --role a|b and "
                "--ipc-file FILE (the same file for both processes)\n");
        return -1;
    }
    if (g_opt.cmd == CMD_CORUN_OFFSET && g_opt.ipc_file) {
        fprintf(stderr, "mosaic-zoo: corun-offset runs in one process: "
                "--ipc-file is for mps-offset\n");
        return -1;
    }
    return 0;
}

/* --check-args: what can be checked without a GPU (the variant names of
 * --pairs and --variants), so that a GPU script can be dry-run. Returns 0
 * when the run would start; the problems go to stderr. */
static int check_args(void)
{
    FILE *null = fopen("/dev/null", "w");
    unsigned char *sel;
    int *pairs = NULL, n = 0;

    /* The error records go nowhere; error_record says it on stderr too. */
    j_open(null ? null : stderr);
    if (g_opt.pairs_path) {
        if (read_pairs(g_opt.pairs_path, &pairs, &n) == 0 && n == 0)
            error_record("--pairs: no pairs in the file");
        free(pairs);
    }
    if (g_opt.variants &&
        (sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1))) {
        select_variants(g_opt.variants, sel);
        free(sel);
    }
    j_free();
    if (null)
        fclose(null);
    if (g_n_failed)
        return -1;
    fprintf(stderr, "mosaic-zoo: %s: arguments ok%s%s (%d pairs)\n",
            g_opt.cmd_name, g_opt.pairs_path ? ", " : "",
            g_opt.pairs_path ? g_opt.pairs_path : "", n);
    return 0;
}

int main(int argc, char **argv)
{
    FILE *out = stdout;
    size_t i;
    int code;

    g_t_start = now_s();
    if (parse_args(argc, argv)) {
        usage(stderr);
        return ZOO_EXIT_USAGE;
    }
    if (g_opt.check_args)
        return check_args() ? ZOO_EXIT_USAGE : ZOO_EXIT_OK;
    if (g_opt.out_path && !(out = fopen(g_opt.out_path, "w"))) {
        fprintf(stderr, "mosaic-zoo: cannot write %s: %s\n", g_opt.out_path,
                strerror(errno));
        return ZOO_EXIT_USAGE;
    }
    j_open(out);
    clear_err();
    if (device_init() != 0) {
        fprintf(stderr, "mosaic-zoo: no usable GPU: %s\n", g_err);
        cudaGetLastError();
    }
    write_meta();
    if (g_opt.cmd == CMD_LIST) {
        /* The registry needs no GPU. */
        cmd_list();
    } else if (!g_dev.ok) {
        /* Counted as a failed measurement: nothing could be measured. */
        j_begin("error");
        j_result(0);
        j_end();
    } else {
        if (g_opt.cmd == CMD_CORUN && g_opt.partitioned && g_opt.split == 0)
            g_opt.split = (g_dev.sm_count / 2) / 8 * 8;
        for (i = 0; i < sizeof(g_cmds) / sizeof(g_cmds[0]); i++)
            if (g_cmds[i].cmd == g_opt.cmd)
                g_cmds[i].run();
    }
    code = exit_code();
    write_end(code);
    if (g_dev.ok && !g_fatal)
        device_fini();
    if (out != stdout)
        fclose(out);
    j_free();
    return code;
}
