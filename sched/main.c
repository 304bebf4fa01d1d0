/*
 * mosaic-sched: the arbiter daemon's command line.
 *
 *   mosaic-sched [--config FILE] [--KEY VALUE ...] daemon
 *   mosaic-sched [--socket PATH] status [--json]
 *   mosaic-sched [--socket PATH] partition HP_SMS
 *   mosaic-sched [--KEY VALUE ...] record -o FILE
 *   mosaic-sched [--KEY VALUE ...] replay [--mode full|partition] [--warmup N] [--json] TRACE...
 *   mosaic-sched --config FILE [--KEY VALUE ...] tune [--hp-command CMD] [--be-command CMD]
 *                [--keep DIR] [--json]
 *   mosaic-sched version
 *
 * Settings come from the config file (--config, else $MOSAIC_SCHED_CONFIG,
 * else /etc/mosaic/sched.conf when it exists), then MOSAIC_SCHED_<KEY>
 * variables, then --KEY flags: each later source wins.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cJSON.h>

#include "daemon.h"
#include "replay.h"
#include "tune.h"

extern char **environ;

#define DEFAULT_CONFIG "/etc/mosaic/sched.conf"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: mosaic-sched [--config FILE] [--KEY VALUE ...] daemon\n"
            "       mosaic-sched [--socket PATH] status [--json]\n"
            "       mosaic-sched [--socket PATH] partition HP_SMS\n"
            "       mosaic-sched [--KEY VALUE ...] record -o FILE\n"
            "       mosaic-sched [--KEY VALUE ...] replay [--mode full|partition] [--warmup N]\n"
            "                    [--be-lead-ms MS] [--decide-us US] [--seed N] [--part-f0 F]\n"
            "                    [--f-min F] [--metrics FILE]\n"
            "                    [--json] TRACE...\n"
            "       mosaic-sched --config FILE [--KEY VALUE ...] tune [--hp-command CMD]\n"
            "                    [--be-command CMD] [--keep DIR] [--json]\n"
            "       mosaic-sched version\n"
            "KEY is any key of the config file (sched/mosaic-sched.conf lists them with\n"
            "their defaults), e.g. --slo 1.25 --socket /run/mosaic/sched.sock.\n"
            "record runs the daemon and writes what its clients post to FILE (a\n"
            "mosaic-trace/1 file); replay runs traces through --policy at --slo on a\n"
            "simulated timeline (docs/replay.md). partition gives the running daemon's\n"
            "HP clients a group of HP_SMS SMs and BE the rest, or both the full GPU\n"
            "with 0; connected clients change at their next launch (docs/partitions.md).\n"
            "tune runs the HP and BE commands under a daemon of each candidate mode\n"
            "(full GPU, each HP partition) and writes the best to FILE with the\n"
            "evidence (docs/tune.md).\n");
}

/* Sends one control message (no handshake) and returns the daemon's text
 * answer in *text (malloc'd), or its refusal's reason in err. */
static int exchange(const char *path, const void *msg, size_t len, char **text, char *err,
                    size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct timeval tv = {.tv_sec = 5};
    struct mosaic__msg m;
    char *buf = malloc(MOSAIC__SCHED_STATUS_MAX);
    long n;
    int fd, rc;

    *text = NULL;
    if (!buf)
        return MOSAIC_ENOMEM;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        snprintf(err, errlen, "no mosaic-sched daemon answers at %s (start `mosaic-sched "
                 "daemon`, or pass --socket PATH)", path);
        if (fd >= 0)
            close(fd);
        free(buf);
        return MOSAIC_EDISCONNECTED;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    rc = mosaic__send_msg(fd, msg, len, -1);
    n = rc == 0 ? mosaic__recv_msg(fd, buf, MOSAIC__SCHED_STATUS_MAX - 1, NULL, 0) : rc;
    close(fd);
    if (n <= 0) {
        snprintf(err, errlen, "the daemon at %s did not answer", path);
        free(buf);
        return n < 0 ? (int)n : MOSAIC_EDISCONNECTED;
    }
    rc = mosaic__msg_parse(buf, (size_t)n, &m, err, errlen);
    if (rc == 0 && m.h.type == MOSAIC__MSG_REFUSE) {
        snprintf(err, errlen, "the daemon refused: %s", m.u.refuse.reason);
        rc = m.u.refuse.code < 0 ? m.u.refuse.code : MOSAIC_EREFUSED;
    } else if (rc == 0 && m.h.type != MOSAIC__MSG_STATUS_REPLY) {
        snprintf(err, errlen, "the daemon answered message type %u, not a reply", m.h.type);
        rc = MOSAIC_EPROTO;
    }
    if (rc == 0) {
        memmove(buf, m.text, m.text_len);
        buf[m.text_len] = '\0';
        *text = buf;
        return 0;
    }
    free(buf);
    return rc;
}

static int fetch_status(const char *path, char **json, char *err, size_t errlen)
{
    struct mosaic__msg_hdr h;

    mosaic__msg_init(&h, MOSAIC__MSG_STATUS, sizeof(h));
    return exchange(path, &h, sizeof(h), json, err, errlen);
}

/* `partition HP_SMS`: the daemon checks the size and tells its clients. */
static int set_partition(const char *path, const char *arg)
{
    struct mosaic__msg_partition_set m;
    char err[512], *end, *text = NULL;
    long hp = arg ? strtol(arg, &end, 10) : -1;
    int rc;

    if (!arg || *end != '\0' || hp < 0 || hp > (long)MOSAIC__SCHED_MAX_SMS) {
        fprintf(stderr, "mosaic-sched partition: '%s' is not a number of SMs for HP: give "
                "the HP group's size (e.g. 72 on the H200, BE gets the rest) or 0 for the "
                "full GPU\n", arg ? arg : "");
        return 2;
    }
    memset(&m, 0, sizeof(m));
    mosaic__msg_init(&m.h, MOSAIC__MSG_PARTITION_SET, sizeof(m));
    m.hp_sms = (uint32_t)hp;
    rc = exchange(path, &m, sizeof(m), &text, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "mosaic-sched partition: %s\n", err);
        return 1;
    }
    printf("%s\n", text);
    free(text);
    return 0;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "?";
}

static int print_status(const char *json)
{
    cJSON *j = cJSON_Parse(json), *c, *adm;

    if (!j) {
        fprintf(stderr, "mosaic-sched status: the daemon's status is not JSON\n");
        return 1;
    }
    adm = cJSON_GetObjectItemCaseSensitive(j, "admissions");
    printf("mosaic-sched %s (pid %.0f, up %.1f s): policy %s, slo %g, mode %s\n",
           str(j, "version"), num(j, "pid"), num(j, "uptime_s"), str(j, "policy"),
           num(j, "slo"), str(j, "mode"));
    printf("concurrency: %s\n",
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "concurrent")) ? "yes (MPS)"
                                                                            : "NO (time-sliced)");
    printf("  %s\n", str(j, "mps"));
    printf("HP requests in flight: %.0f; BE kernels in flight: %.0f\n",
           num(j, "hp_requests_in_flight"), num(j, "be_in_flight"));
    printf("BE admissions: %.0f immediate, %.0f after a hold (%.0f held); %.0f rejected "
           "messages, %.0f refused clients\n",
           num(adm, "immediate"), num(adm, "after_hold"), num(adm, "held"),
           num(j, "protocol_errors"), num(j, "refused"));
    printf("%-4s %-8s %-6s %-4s %-9s %-8s %-10s %-9s %s\n", "id", "pid", "uid", "role",
           "requests", "waiting", "events", "beat_ms", "exe");
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(j, "clients"))
    {
        printf("%-4.0f %-8.0f %-6.0f %-4s %-9.0f %-8.0f %-10.0f %-9.0f %s\n", num(c, "id"),
               num(c, "pid"), num(c, "uid"), str(c, "role"), num(c, "requests_in_flight"),
               num(c, "be_waiting"), num(c, "events"), num(c, "heartbeat_age_ms"),
               str(c, "exe"));
    }
    if (cJSON_GetObjectItemCaseSensitive(j, "clients_omitted"))
        printf("(%.0f clients not listed: the list did not fit one status message)\n",
               num(j, "clients_omitted"));
    cJSON_Delete(j);
    return 0;
}

/* The options of record and replay that are not config keys. */
static const char *const own_opts[] = {"-o",          "--mode",   "--warmup",  "--be-lead-ms",
                                       "--decide-us", "--seed",   "--part-f0", "--f-min",
                                       "--metrics",   "--hp-command", "--be-command", "--keep",
                                       NULL};

static int own_opt(const char *a)
{
    for (int i = 0; own_opts[i]; i++)
        if (strcmp(a, own_opts[i]) == 0)
            return 1;
    return 0;
}

static int parse_num(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    double d = strtod(v, &end);

    if (end == v || *end || !(d >= lo && d <= hi)) {
        fprintf(stderr, "mosaic-sched replay: %s '%s' is not valid: use a number in "
                "[%g, %g]\n", opt, v, lo, hi);
        return -1;
    }
    *out = d;
    return 0;
}

static int replay_main(const struct mosaic__sched_config *cfg, char **files, int nfiles,
                       const char *mode, struct mosaic__replay_opts *o, int json)
{
    static struct mosaic__sched_config rcfg;
    struct mosaic__trace **tr;
    struct mosaic__replay_result r;
    char err[1200];
    int rc = 0, n = 0;

    if (nfiles == 0) {
        fprintf(stderr, "mosaic-sched replay: no trace given: pass the files `mosaic-sched "
                "record -o FILE` wrote (an HP and a BE trace, or one of both)\n");
        return 2;
    }
    /* --mode is replay's name for sm-mode (the config key and its flag): the
     * split itself is hp-sms, checked where the daemon checks it. Policy
     * static is always a partition, of its own size or hp-sms. */
    if (mode) {
        if (strcmp(mode, "full") != 0 && strcmp(mode, "partition") != 0) {
            fprintf(stderr, "mosaic-sched replay: --mode %s: use full (both workloads on the "
                    "whole GPU) or partition (HP on hp-sms SMs, BE on the rest)\n", mode);
            return 2;
        }
        if (cfg->policy == MOSAIC__POLICY_STATIC && strcmp(mode, "full") == 0) {
            fprintf(stderr, "mosaic-sched replay: --mode full with policy static: policy "
                    "static always splits the GPU (HP on hp-sms SMs, or on the fewest that "
                    "keep it under 1.1x); drop --mode, or replay another policy on the full "
                    "GPU\n");
            return 2;
        }
        rcfg = *cfg;
        rcfg.sm_mode = strcmp(mode, "partition") == 0 && cfg->policy != MOSAIC__POLICY_STATIC
                           ? MOSAIC__SM_PARTITION
                           : MOSAIC__SM_FULL;
        cfg = &rcfg;
    }
    /* The policies log through the daemon's logger, at --log-level. */
    mosaic__dlog_level = cfg->log_level;
    tr = calloc((size_t)nfiles, sizeof(*tr));
    if (!tr)
        return 1;
    /* Every trace is read whole before anything runs: one bad file and
     * nothing is replayed. */
    for (n = 0; n < nfiles && rc == 0; n++)
        rc = mosaic__trace_load(files[n], &tr[n], err, sizeof(err));
    if (rc == 0)
        rc = mosaic__replay_run(cfg, tr, (unsigned)nfiles, o, &r, err, sizeof(err));
    for (int i = 0; i < nfiles; i++)
        mosaic__trace_free(tr[i]);
    free(tr);
    if (rc != 0) {
        fprintf(stderr, "mosaic-sched replay: %s\n", err);
        return 1;
    }
    mode = r.hp_sms ? "partition" : "full";
    if (json) {
        printf("{\"schema\":\"mosaic-replay/1\",\"policy\":\"%s\",\"slo\":%g,\"mode\":\"%s\","
               "\"hp_sms\":%u,\"be_sms\":%u,\"hp_requests\":%u,\"hp_kernels\":%u,\"be_kernels\":%u,"
               "\"be_step_kernels\":%u,\"unprofiled_kernels\":%u,\"hp_isolated_p99_ms\":%.4f,"
               "\"hp_p50_ms\":%.4f,\"hp_p99_ms\":%.4f,\"over_p_pct\":%.3f,"
               "\"be_steps_per_s\":%.3f,\"be_isolated_steps_per_s\":%.3f,\"hp_scale\":%.4f,"
               "\"be_scale\":%.4f,\"gpu_scale\":%.4f,\"simulated_ms\":%.3f,"
               "\"hp_gpu_isolated_p99_ms\":%.4f,\"hp_gpu_p99_ms\":%.4f,"
               "\"over_p_gpu_pct\":%.3f,\"be_step_found\":\"%s\",\"be_step_prefix_kernels\":%u,"
               "\"be_step_full_periods\":%u,\"be_step_tail_kernels\":%u,"
               "\"be_granted_kernels\":%u}\n",
               mosaic__policy_name(cfg->policy), cfg->slo, mode, r.hp_sms, r.be_sms,
               r.hp_requests, r.hp_kernels, r.be_kernels, r.be_step_kernels, r.unprofiled, r.hp_iso_p99_ms, r.hp_p50_ms,
               r.hp_p99_ms, r.over_p_pct, r.be_steps_per_s, r.be_iso_steps_per_s, r.hp_scale,
               r.be_scale, r.gpu_scale, r.sim_ms, r.hp_gpu_iso_p99_ms, r.hp_gpu_p99_ms,
               r.over_p_gpu_pct, r.be_step_found ? "period" : "whole-recording",
               r.be_step_prefix, r.be_step_periods, r.be_step_tail, r.be_granted);
        return 0;
    }
    printf("replay: policy %s, p %g, mode %s", mosaic__policy_name(cfg->policy), cfg->slo, mode);
    if (r.hp_sms)
        printf(" (HP on %u SMs, BE on %u)", r.hp_sms, r.be_sms);
    printf(": %u HP requests counted (%u HP kernels replayed) and %u BE kernels, over %.3f s "
           "of simulated time\n", r.hp_requests, r.hp_kernels, r.be_kernels, r.sim_ms / 1e3);
    printf("HP: p50 %.2f ms, p99 %.2f ms (simulated); %.1f%% of requests over p x the "
           "trace's isolated p99 (%.2f ms)\n",
           r.hp_p50_ms, r.hp_p99_ms, r.over_p_pct, r.hp_iso_p99_ms);
    printf("HP GPU span (first kernel's start to last kernel's end): p99 %.2f ms; %.1f%% "
           "over p x its isolated p99 (%.2f ms)\n",
           r.hp_gpu_p99_ms, r.over_p_gpu_pct, r.hp_gpu_iso_p99_ms);
    printf("BE: %.1f steps/s of simulated time (%u kernels a step; %.1f steps/s alone, by "
           "the trace)\n",
           r.be_steps_per_s, r.be_step_kernels, r.be_iso_steps_per_s);
    if (r.be_step_found)
        printf("BE step: %u kernels, the period of the %u granted kernels after %u start-up "
               "kernels (not replayed); the recording held %u full steps and %u kernels of a "
               "partial one at its end\n", r.be_step_kernels, r.be_granted, r.be_step_prefix,
               r.be_step_periods, r.be_step_tail);
    else
        printf("BE step: none repeats in the %u granted kernels (no period held twice over at "
               "least half of them), so the whole recording counts as one step and steps/s "
               "is passes over it: record the BE job longer, or one with a fixed step\n",
               r.be_granted);
    if (r.unprofiled)
        printf("note: %u kernel ids have no profile in the dataset: each took 100 us x the "
               "trace's scale, and co-ran by the unmeasured-pair rule\n", r.unprofiled);
    return 0;
}

int main(int argc, char **argv)
{
    static struct mosaic__sched_config cfg;
    const char *cmd = NULL, *config = getenv("MOSAIC_SCHED_CONFIG");
    const char *out_path = NULL, *mode = NULL;
    const char *hp_cmd = NULL, *be_cmd = NULL, *keep = NULL;
    static char *fwd[512];
    int nfwd = 0;
    struct mosaic__replay_opts ro = {.be_lead_ms = -1};
    static char *files[256];
    char err[1200];
    int json = 0, explicit_config = config != NULL, rc, nfiles = 0;

    /* First pass: the command, --config and --json. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (own_opt(argv[i])) {
            const char *a = argv[i], *v = i + 1 < argc ? argv[++i] : NULL;
            double d = 0;
            if (!v) {
                fprintf(stderr, "mosaic-sched: %s needs a value\n", a);
                return 2;
            }
            if (strcmp(a, "-o") == 0) {
                out_path = v;
            } else if (strcmp(a, "--hp-command") == 0) {
                hp_cmd = v;
            } else if (strcmp(a, "--be-command") == 0) {
                be_cmd = v;
            } else if (strcmp(a, "--keep") == 0) {
                keep = v;
            } else if (strcmp(a, "--mode") == 0) {
                mode = v;
            } else if (strcmp(a, "--warmup") == 0) {
                if (parse_num(a, v, 0, 1e6, &d) != 0)
                    return 2;
                ro.warmup = (unsigned)d;
            } else if (strcmp(a, "--be-lead-ms") == 0) {
                if (parse_num(a, v, 0, 1e7, &ro.be_lead_ms) != 0)
                    return 2;
            } else if (strcmp(a, "--decide-us") == 0) {
                if (parse_num(a, v, 1, 1e6, &ro.decide_us) != 0)
                    return 2;
            } else if (strcmp(a, "--f-min") == 0) {
                if (parse_num(a, v, 0.01, 16, &ro.f_min) != 0)
                    return 2;
            } else if (strcmp(a, "--metrics") == 0) {
                ro.metrics = v;
            } else if (strcmp(a, "--part-f0") == 0) {
                if (parse_num(a, v, 1, 16, &ro.part_f0) != 0)
                    return 2;
            } else {
                if (parse_num(a, v, 0, 1e15, &d) != 0)
                    return 2;
                ro.seed = (uint64_t)d;
            }
        } else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            config = argv[++i];
            explicit_config = 1;
        } else if (strncmp(argv[i], "--config=", 9) == 0) {
            config = argv[i] + 9;
            explicit_config = 1;
        } else if (strncmp(argv[i], "--", 2) == 0) {
            if (!strchr(argv[i], '='))
                i++;
        } else if (!cmd) {
            cmd = argv[i];
        } else if ((strcmp(cmd, "replay") == 0 && nfiles < 256) ||
                   (strcmp(cmd, "partition") == 0 && nfiles == 0)) {
            files[nfiles++] = argv[i];
        } else {
            fprintf(stderr, "mosaic-sched: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!cmd) {
        usage(stderr);
        return 2;
    }
    if (strcmp(cmd, "version") == 0) {
        printf("mosaic-sched %s (protocol %u, segment version %u)\n", MOSAIC_VERSION_STRING,
               MOSAIC__SCHED_PROTO, MOSAIC__SHM_VERSION);
        return 0;
    }
    if (strcmp(cmd, "daemon") != 0 && strcmp(cmd, "status") != 0 &&
        strcmp(cmd, "record") != 0 && strcmp(cmd, "replay") != 0 &&
        strcmp(cmd, "partition") != 0 && strcmp(cmd, "tune") != 0) {
        fprintf(stderr, "mosaic-sched: unknown command '%s': use daemon, status, partition, "
                "record, replay, tune or version\n", cmd);
        return 2;
    }
    if (strcmp(cmd, "record") == 0 && !out_path) {
        fprintf(stderr, "mosaic-sched record: -o FILE is needed (where the trace goes)\n");
        return 2;
    }
    mosaic__config_defaults(&cfg);
    /* tune may be given a file that does not exist yet: it creates it. */
    int is_tune = strcmp(cmd, "tune") == 0;
    const char *cpath = config ? config : DEFAULT_CONFIG;
    int config_exists = access(cpath, F_OK) == 0;
    rc = mosaic__config_load_file(&cfg, cpath, !explicit_config || (is_tune && !config_exists),
                                  err, sizeof(err));
    if (rc == 0)
        rc = mosaic__config_load_env(&cfg, environ, err, sizeof(err));
    for (int i = 1; rc == 0 && i < argc; i++) {
        const char *a = argv[i], *eq;
        char key[64], src[80];
        const char *value;

        if (own_opt(a)) {
            i++;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || strcmp(a, "--json") == 0)
            continue;
        if (strcmp(a, "--config") == 0) {
            i++;
            continue;
        }
        if (strncmp(a, "--config=", 9) == 0)
            continue;
        eq = strchr(a, '=');
        if (eq) {
            snprintf(key, sizeof(key), "%.*s", (int)(eq - a - 2), a + 2);
            value = eq + 1;
        } else if (i + 1 < argc) {
            snprintf(key, sizeof(key), "%s", a + 2);
            value = argv[++i];
        } else {
            fprintf(stderr, "mosaic-sched: %s needs a value\n", a);
            return 2;
        }
        if (strcmp(key, "rule") == 0) {
            snprintf(err, sizeof(err), "--rule: rules are read from the config file only");
            rc = MOSAIC_ECONFIG;
            break;
        }
        snprintf(src, sizeof(src), "--%s", key);
        rc = mosaic__config_set(&cfg, key, value, src, 0, err, sizeof(err));
        /* tune gives its trial daemons the same flags. */
        if (nfwd + 2 <= (int)(sizeof(fwd) / sizeof(fwd[0]))) {
            fwd[nfwd++] = argv[eq ? i : i - 1];
            if (!eq)
                fwd[nfwd++] = argv[i];
        }
    }
    if (rc == 0 && hp_cmd)
        rc = mosaic__config_set(&cfg, "tune-hp-command", hp_cmd, "--hp-command", 0, err,
                                sizeof(err));
    if (rc == 0 && be_cmd)
        rc = mosaic__config_set(&cfg, "tune-be-command", be_cmd, "--be-command", 0, err,
                                sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "mosaic-sched: %s\n", err);
        return 2;
    }
    if (strcmp(cmd, "status") == 0) {
        char *text;
        rc = fetch_status(cfg.socket, &text, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "mosaic-sched status: %s\n", err);
            return 1;
        }
        if (json)
            printf("%s\n", text);
        else
            rc = print_status(text);
        free(text);
        return rc ? 1 : 0;
    }
    if (strcmp(cmd, "partition") == 0)
        return set_partition(cfg.socket, nfiles ? files[0] : NULL);
    if (strcmp(cmd, "replay") == 0) {
        return replay_main(&cfg, files, nfiles, mode, &ro, json);
    }
    if (is_tune) {
        struct mosaic__tune_args ta = {.config_path = cpath, .config_exists = config_exists,
                                       .fwd = fwd, .nfwd = nfwd, .keep_dir = keep,
                                       .json = json};
        mosaic__dlog_level = cfg.log_level;
        if (!explicit_config) {
            fprintf(stderr, "mosaic-sched tune: pass --config FILE: tune writes its choice "
                    "there (a new file is created)\n");
            return 2;
        }
        rc = mosaic__tune_run(&cfg, &ta, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "mosaic-sched %s\n", err);
            return 1;
        }
        return 0;
    }
    if (strcmp(cmd, "record") == 0 && mosaic__record_arm(out_path, err, sizeof(err)) != 0) {
        fprintf(stderr, "mosaic-sched record: %s\n", err);
        return 2;
    }
    rc = mosaic__daemon_run(&cfg);
    if (rc != 0) {
        fprintf(stderr, "mosaic-sched: the daemon stopped: %s\n", mosaic_strerror(rc));
        return 1;
    }
    return 0;
}
