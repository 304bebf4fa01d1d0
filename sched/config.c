/*
 * mosaic-sched's configuration: one list of keys (SCHED_KEYS below) from
 * which the defaults, the file parser, the MOSAIC_SCHED_* environment and
 * the --flags are all derived, so a key cannot exist in one and not the
 * others. The shipped sched/mosaic-sched.conf documents every key; a test
 * checks that it names each one with its default.
 *
 * Precedence (main.c): the file, then the environment, then flags.
 */
#define _GNU_SOURCE 1
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

enum ktype { K_STR, K_UINT, K_MODE, K_SLO, K_ENUM };

/* X(key, type, field, min, max, enum names, default, what it is) */
#define SCHED_KEYS(X)                                                                  \
    X("socket", K_STR, socket, 0, 0, NULL, "/run/mosaic/sched.sock",                   \
      "the control socket's path")                                                     \
    X("socket-mode", K_MODE, socket_mode, 0, 0, NULL, "0600",                          \
      "0600 (the daemon's user only) or 0660 (also socket-group)")                     \
    X("socket-group", K_STR, socket_group, 0, 0, NULL, "",                             \
      "a group name, or empty for the daemon's group")                                 \
    X("slo", K_SLO, slo, 0, 0, NULL, "1.25",                                           \
      "a number above 1.0: the HP p99 bound as a multiple of its isolated p99")        \
    X("policy", K_ENUM, policy, 0, 0, policy_names, "hold-be",                         \
      "none, hold-be, mps-priority, orion, mosaic or static")                          \
    X("metrics-port", K_UINT, metrics_port, 0, 65535, NULL, "9464",                    \
      "a TCP port on 127.0.0.1, or 0 for no metrics")                                  \
    X("mps", K_ENUM, mps, 0, 0, mps_names, "check", "check, start or off")             \
    X("mps-pipe-dir", K_STR, mps_pipe_dir, 0, 0, NULL, "/tmp/nvidia-mps",              \
      "the MPS pipe directory (CUDA_MPS_PIPE_DIRECTORY)")                              \
    X("mps-control", K_STR, mps_control, 0, 0, NULL, "nvidia-cuda-mps-control",        \
      "the MPS control program, a path or a name found in PATH")                       \
    X("heartbeat-ms", K_UINT, heartbeat_ms, 5, 60000, NULL, "100",                     \
      "milliseconds between heartbeats, 5 to 60000")                                   \
    X("ring-entries", K_UINT, ring_entries, MOSAIC__RING_MIN, MOSAIC__RING_MAX, NULL,  \
      "1024", "a power of two from 8 to 65536")                                        \
    X("max-clients", K_UINT, max_clients, 1, 4096, NULL, "256",                        \
      "1 to 4096 connected processes")                                                 \
    X("spin-us", K_UINT, spin_us, 0, 1000000, NULL, "200",                             \
      "microseconds the daemon polls rings after activity before sleeping")            \
    X("gate-ahead", K_UINT, gate_ahead, 0, MOSAIC__GATE_AHEAD_MAX, NULL, "0",          \
      "BE kernels of a gated stream granted beyond its running one, 0 to 7")           \
    X("be-timeout-ms", K_UINT, be_timeout_ms, 0, 86400000, NULL, "2000",               \
      "milliseconds a BE kernel waits for an absent daemon")                           \
    X("hp-request-timeout-ms", K_UINT, hp_request_timeout_ms, 10, 3600000, NULL, "10000",  \
      "milliseconds, 10 to 3600000, after which an unfinished HP request is ended")    \
    X("be-on-timeout", K_ENUM, be_on_timeout, 0, 0, timeout_names, "run",              \
      "run or hold")                                                                   \
    X("log-level", K_ENUM, log_level, 0, 0, level_names, "info",                       \
      "error, warn, info or debug")                                                    \
    X("profile-dir", K_STR, profile_dir, 0, 0, NULL, "",                               \
      "a directory of mosaic-profile/1 files, or empty for none")                      \
    X("model-dir", K_STR, model_dir, 0, 0, NULL, "",                                   \
      "the predictor's model directory, or empty for none")                            \
    X("hp-sms", K_UINT, hp_sms, 0, 4096, NULL, "0",                                    \
      "the HP partition's SMs (policy static, or sm-mode partition), or 0")            \
    X("hp-kernels", K_STR, hp_kernels, 0, 0, NULL, "",                                 \
      "a file of the HP service's profile keys, one a line")                           \
    X("sm-mode", K_ENUM, sm_mode, 0, 0, sm_mode_names, "full",                         \
      "full (HP and BE share every SM) or partition (HP on hp-sms SMs, BE the rest)")  \
    X("beside-hp", K_ENUM, beside_hp, 0, 0, beside_names, "admit",                     \
      "admit (orion and mosaic decide BE beside requests) or hold (between them only)")  \
    X("tune-hp-command", K_STR, tune_hp_command, 0, 0, NULL, "",                       \
      "tune: the HP service's shell command, or empty (then --hp-command)")            \
    X("tune-be-command", K_STR, tune_be_command, 0, 0, NULL, "",                       \
      "tune: the BE job's shell command, or empty (then --be-command)")                \
    X("tune-trial-ms", K_UINT, tune_trial_ms, 200, 3600000, NULL, "5000",              \
      "tune: milliseconds per trial run, 200 to 3600000")                              \
    X("tune-splits", K_STR, tune_splits, 0, 0, NULL, "",                               \
      "tune: HP SM counts to try (space-separated), or empty for every one")

static const char *const policy_names[] = {"none", "hold-be", "mps-priority", "orion", "mosaic",
                                           "static", NULL};
static const char *const mps_names[] = {"check", "start", "off", NULL};
static const char *const timeout_names[] = {"run", "hold", NULL};
static const char *const level_names[] = {"error", "warn", "info", "debug", NULL};
static const char *const sm_mode_names[] = {"full", "partition", NULL};
static const char *const beside_names[] = {"admit", "hold", NULL};

struct key {
    const char *name;
    int type;
    size_t off, size;
    unsigned long min, max;
    const char *const *names;
    const char *def;
    const char *what;
};

static const struct key keys[] = {
#define X(k, t, f, lo, hi, nm, d, w)                                                    \
    {k, t, offsetof(struct mosaic__sched_config, f),                                    \
     sizeof(((struct mosaic__sched_config *)0)->f), lo, hi, nm, d, w},
    SCHED_KEYS(X)
#undef X
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static int cfail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int cfail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (vsnprintf(err, errlen, fmt, ap) < 0 && errlen)
        err[0] = '\0';
    va_end(ap);
    return MOSAIC_ECONFIG;
}

const char *mosaic__config_key(int i)
{
    return i >= 0 && (size_t)i < NKEYS ? keys[i].name : NULL;
}

const char *mosaic__policy_name(int policy)
{
    return policy >= 0 && policy < MOSAIC__POLICY_COUNT ? policy_names[policy] : "?";
}

const char *mosaic__beside_name(int beside)
{
    return beside == MOSAIC__BESIDE_ADMIT || beside == MOSAIC__BESIDE_HOLD ? beside_names[beside]
                                                                           : "?";
}

static const struct key *find_key(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

static void key_list(char *buf, size_t len)
{
    size_t at = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < NKEYS && at < len; i++) {
        int n = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", keys[i].name);
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

static int where(char *buf, size_t len, const char *src, int line)
{
    int n = line > 0 ? snprintf(buf, len, "%s:%d", src, line) : snprintf(buf, len, "%s", src);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int parse_ulong(const char *v, int base, unsigned long *out)
{
    char *end;

    if (!*v || *v == '-' || isspace((unsigned char)*v))
        return -1;
    errno = 0;
    *out = strtoul(v, &end, base);
    return errno || *end ? -1 : 0;
}

static int set_key(struct mosaic__sched_config *cfg, const struct key *k, const char *value,
                   const char *at, char *err, size_t errlen)
{
    char *field = (char *)cfg + k->off;
    unsigned long u;

    switch (k->type) {
    case K_STR:
        if (strlen(value) >= k->size)
            return cfail(err, errlen, "%s: %s: the value is %zu bytes, at most %zu fit", at,
                         k->name, strlen(value), k->size - 1);
        if (strcmp(k->name, "socket") == 0 && value[0] != '/')
            return cfail(err, errlen, "%s: socket: '%s' is not an absolute path", at, value);
        strcpy(field, value);
        return 0;
    case K_UINT:
        if (parse_ulong(value, 10, &u) != 0 || u < k->min || u > k->max)
            return cfail(err, errlen, "%s: %s: '%s' is not valid: use %s", at, k->name, value,
                         k->what);
        if (strcmp(k->name, "ring-entries") == 0 && (u & (u - 1)) != 0)
            return cfail(err, errlen, "%s: ring-entries: %lu is not a power of two: use %s",
                         at, u, k->what);
        *(unsigned *)(void *)field = (unsigned)u;
        return 0;
    case K_MODE:
        if (parse_ulong(value, 8, &u) != 0 || (u != 0600 && u != 0660))
            return cfail(err, errlen,
                         "%s: %s: '%s' is not valid: use %s (a world-accessible socket "
                         "would let any user claim a role)",
                         at, k->name, value, k->what);
        *(unsigned *)(void *)field = (unsigned)u;
        return 0;
    case K_SLO: {
        char *end;
        double d;
        errno = 0;
        d = strtod(value, &end);
        if (errno || end == value || *end || !(d > 1.0) || d > 100.0)
            return cfail(err, errlen, "%s: %s: '%s' is not valid: use %s (e.g. 1.25)", at,
                         k->name, value, k->what);
        *(double *)(void *)field = d;
        return 0;
    }
    default:
        for (int i = 0; k->names[i]; i++) {
            if (strcmp(value, k->names[i]) == 0) {
                *(int *)(void *)field = i;
                return 0;
            }
        }
        return cfail(err, errlen, "%s: %s: '%s' is not valid: use %s", at, k->name, value,
                     k->what);
    }
}

/* rule ROLE MATCH VALUE */
static int add_rule(struct mosaic__sched_config *cfg, const char *value, const char *at,
                    int line, char *err, size_t errlen)
{
    static const char *const grants[] = {"hp", "be", "requested", "deny", NULL};
    static const char *const matches[] = {"uid", "gid", "cgroup", "exe", "any", NULL};
    char role[32] = "", match[32] = "", arg[300] = "";
    struct mosaic__rule r = {.line = line};
    int n = sscanf(value, "%31s %31s %299s", role, match, arg);
    const char *usage = "write `rule hp|be|requested|deny uid|gid|cgroup|exe|any VALUE`";

    r.grant = r.match = -1;
    for (int i = 0; grants[i]; i++)
        if (strcmp(role, grants[i]) == 0)
            r.grant = i;
    for (int i = 0; matches[i]; i++)
        if (strcmp(match, matches[i]) == 0)
            r.match = i;
    if (n < 2 || r.grant < 0 || r.match < 0)
        return cfail(err, errlen, "%s: rule: '%s' is not a rule: %s", at, value, usage);
    if ((r.match == MOSAIC__MATCH_ANY) != (n == 2))
        return cfail(err, errlen, "%s: rule: '%s': %s (`any` takes no value)", at, value,
                     usage);
    /* Rules written anywhere replace the built-in one, never extend it:
     * `requested any` ahead of them would match every peer. */
    if (cfg->rules_are_default) {
        cfg->nrules = 0;
        cfg->rules_are_default = 0;
    }
    if (cfg->nrules >= MOSAIC__MAX_RULES)
        return cfail(err, errlen, "%s: rule: more than %d rules: merge some (a cgroup prefix "
                     "covers many services)", at, MOSAIC__MAX_RULES);
    if (r.match == MOSAIC__MATCH_UID || r.match == MOSAIC__MATCH_GID) {
        unsigned long id;
        if (parse_ulong(arg, 10, &id) == 0) {
            r.id = id;
        } else if (r.match == MOSAIC__MATCH_UID) {
            struct passwd *pw = getpwnam(arg);
            if (!pw)
                return cfail(err, errlen, "%s: rule: no user '%s': use a uid or a user name",
                             at, arg);
            r.id = pw->pw_uid;
        } else {
            struct group *gr = getgrnam(arg);
            if (!gr)
                return cfail(err, errlen, "%s: rule: no group '%s': use a gid or a group "
                             "name", at, arg);
            r.id = gr->gr_gid;
        }
    } else if (r.match != MOSAIC__MATCH_ANY) {
        if (arg[0] != '/')
            return cfail(err, errlen, "%s: rule: '%s' must be an absolute path", at, arg);
        strcpy(r.path, arg);
    }
    cfg->rules[cfg->nrules++] = r;
    return 0;
}

int mosaic__config_set(struct mosaic__sched_config *cfg, const char *key, const char *value,
                       const char *src, int line, char *err, size_t errlen)
{
    char at[4200], names[512];
    const struct key *k;

    if (where(at, sizeof(at), src, line) != 0)
        snprintf(at, sizeof(at), "(config)");
    if (strcmp(key, "rule") == 0)
        return add_rule(cfg, value, at, line, err, errlen);
    k = find_key(key);
    if (!k) {
        key_list(names, sizeof(names));
        return cfail(err, errlen, "%s: unknown key '%s': the keys are %s, rule", at, key,
                     names);
    }
    return set_key(cfg, k, value, at, err, errlen);
}

void mosaic__config_defaults(struct mosaic__sched_config *cfg)
{
    char err[256];

    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < NKEYS; i++)
        set_key(cfg, &keys[i], keys[i].def, "default", err, sizeof(err));
    /* With no rules configured, the client's MOSAIC_ROLE decides; the
     * default 0600 socket admits only the daemon's own user anyway. */
    cfg->rules[0] = (struct mosaic__rule){.grant = MOSAIC__GRANT_REQUESTED,
                                          .match = MOSAIC__MATCH_ANY};
    cfg->nrules = 1;
    cfg->rules_are_default = 1;
}

static char *trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int mosaic__config_load_file(struct mosaic__sched_config *cfg, const char *path,
                             int optional, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "r");
    char buf[1024];
    int line = 0, rc = 0;

    if (!fp) {
        if (optional && errno == ENOENT)
            return 0;
        cfail(err, errlen, "%s: cannot open: %s (pass --config FILE or create it from "
              "sched/mosaic-sched.conf)", path, strerror(errno));
        return MOSAIC_EIO;
    }
    while (rc == 0 && fgets(buf, sizeof(buf), fp)) {
        char *s, *v;
        line++;
        if (!strchr(buf, '\n') && !feof(fp)) {
            rc = cfail(err, errlen, "%s:%d: the line is longer than %zu bytes", path, line,
                       sizeof(buf) - 2);
            break;
        }
        s = trim(buf);
        if (*s == '\0' || *s == '#')
            continue;
        v = s;
        while (*v && !isspace((unsigned char)*v))
            v++;
        if (*v)
            *v++ = '\0';
        v = trim(v);
        if (*v == '\0') {
            rc = cfail(err, errlen, "%s:%d: '%s' has no value: write `%s VALUE` (the shipped "
                       "mosaic-sched.conf lists each key's default)", path, line, s, s);
            break;
        }
        /* An empty string is written as "" (socket-group ""). */
        if (strcmp(v, "\"\"") == 0)
            v[0] = '\0';
        rc = mosaic__config_set(cfg, s, v, path, line, err, errlen);
    }
    if (rc == 0 && ferror(fp)) {
        cfail(err, errlen, "%s: read error", path);
        rc = MOSAIC_EIO;
    }
    fclose(fp);
    return rc;
}

int mosaic__config_load_env(struct mosaic__sched_config *cfg, char *const *envp, char *err,
                            size_t errlen)
{
    static const char prefix[] = "MOSAIC_SCHED_";

    for (; envp && *envp; envp++) {
        const char *e = *envp, *eq = strchr(e, '=');
        char key[64], src[96];
        size_t n;
        int rc;

        if (strncmp(e, prefix, sizeof(prefix) - 1) != 0 || !eq)
            continue;
        /* MOSAIC_SCHED_CONFIG names the file itself (main.c). */
        if (strncmp(e, "MOSAIC_SCHED_CONFIG=", 20) == 0)
            continue;
        n = (size_t)(eq - e) - (sizeof(prefix) - 1);
        if (n == 0 || n >= sizeof(key))
            continue;
        for (size_t i = 0; i < n; i++) {
            char ch = e[sizeof(prefix) - 1 + i];
            key[i] = ch == '_' ? '-' : (char)tolower((unsigned char)ch);
        }
        key[n] = '\0';
        if (snprintf(src, sizeof(src), "environment %.*s", (int)(eq - e), e) < 0)
            src[0] = '\0';
        /* Rules are file-only: an environment cannot widen who gets HP. */
        if (strcmp(key, "rule") == 0)
            return cfail(err, errlen, "%s: rules are read from the config file only", src);
        rc = mosaic__config_set(cfg, key, eq + 1, src, 0, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}
