/*
 * MOSAIC_* environment settings of the shim.
 *
 * The shim lives inside programs it does not own, so a bad setting never
 * stops the program: it is reported once, on one line of stderr that names
 * the variable and the accepted values, and the shim then forwards every
 * driver call untouched (pass-through).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct mosaic__config mosaic__cfg = {
    .mode = MOSAIC__MODE_OBSERVE,
    .role = MOSAIC__ROLE_NONE,
    .level = MOSAIC__LOG_OFF,
};

/* The shim's own variables, for the message about an unknown one. */
#define MOSAIC__VAR_LIST "MOSAIC_LOG, MOSAIC_STATS, MOSAIC_MODE, MOSAIC_ROLE"

/*
 * Variables of the project's other components, which a user sets in the
 * same environment as the shim's and which are therefore not "unknown":
 * the predictor's models, the capture library, the profiler, and the
 * arbiter and its client (sched/: every MOSAIC_SCHED_* key of its config,
 * the socket), the SM partitions read by green.c (MOSAIC_BE_SMS, MOSAIC_HP_SMS), the
 * simulated GPU (MOSAIC_SIMGPU and its MOSAIC_SIMGPU_*
 * settings, docs/simgpu.md). Exact names first, then whole prefixes.
 */
static const char *const other_vars[] = {"MOSAIC_MODELS", "MOSAIC_SOCKET",
                                         "MOSAIC_GIT", "MOSAIC_SIMGPU", "MOSAIC_BE_SMS",
                                         "MOSAIC_HP_SMS", "MOSAIC_BE_GATE",
                                         "MOSAIC_HP_COMPLETION", "MOSAIC_HP_END_DOORBELL"};
static const char *const other_prefixes[] = {"MOSAIC_SCHED_", "MOSAIC_CAPTURE_",
                                             "MOSAIC_PROFILE_", "MOSAIC_SIMGPU_"};

static int belongs_elsewhere(const char *entry, size_t nlen)
{
    for (size_t i = 0; i < sizeof(other_vars) / sizeof(other_vars[0]); i++)
        if (strlen(other_vars[i]) == nlen &&
            strncmp(entry, other_vars[i], nlen) == 0)
            return 1;
    for (size_t i = 0; i < sizeof(other_prefixes) / sizeof(other_prefixes[0]);
         i++) {
        size_t pl = strlen(other_prefixes[i]);
        if (nlen > pl && strncmp(entry, other_prefixes[i], pl) == 0)
            return 1;
    }
    return 0;
}

/*
 * Room kept at the end of cfg->problems for the one line about unknown
 * names and the one saying that further invalid settings were not shown,
 * so that neither a flood of unknown names nor a flood of invalid values
 * can push out the reason for pass-through.
 */
#define MOSAIC__PROBLEM_RESERVE 640
#define MOSAIC__UNKNOWN_SHOWN 8

static const char *const level_names[] = {"off", "error", "warn", "info",
                                          "debug"};
static const char *const mode_names[] = {"observe", "passthrough"};
static const char *const role_names[] = {"none", "hp", "be"};

static int pick(const char *value, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(value, names[i]) == 0)
            return i;
    return -1;
}

static void problem(struct mosaic__config *cfg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void problem(struct mosaic__config *cfg, const char *fmt, ...)
{
    size_t used = strlen(cfg->problems);
    size_t room = sizeof(cfg->problems) - MOSAIC__PROBLEM_RESERVE;
    char line[512];
    int n;
    va_list ap;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line))
        n = (int)sizeof(line) - 1;
    if (used + (size_t)n + 2 > room) {
        cfg->problems_dropped++;
        return;
    }
    memcpy(cfg->problems + used, line, (size_t)n);
    cfg->problems[used + (size_t)n] = '\n';
    cfg->problems[used + (size_t)n + 1] = '\0';
}

/* Appends text to the problems inside the reserved room (always fits). */
static void problem_tail(struct mosaic__config *cfg, const char *text)
{
    size_t used = strlen(cfg->problems);

    if (used + strlen(text) + 1 < sizeof(cfg->problems))
        memcpy(cfg->problems + used, text, strlen(text) + 1);
}

/* Parses one enumerated setting; returns its index or -1 after a problem. */
static int enum_setting(struct mosaic__config *cfg, const char *var,
                        const char *value, const char *const *names, int n)
{
    char accepted[128] = "";
    int v = pick(value, names, n);

    if (v >= 0)
        return v;
    for (int i = 0; i < n; i++) {
        if (i)
            strcat(accepted, ", ");
        strcat(accepted, names[i]);
    }
    problem(cfg,
            "mosaic: %s='%.64s' is not valid (accepted: %s); running as "
            "pass-through",
            var, value, accepted);
    return -1;
}

/* The enumerated settings: variable, accepted values (index = value) and
 * the field it sets. */
static const struct {
    const char *var;
    const char *const *names;
    int n;
    size_t field;
} enum_vars[] = {
    {"MOSAIC_LOG", level_names, 5, offsetof(struct mosaic__config, level)},
    {"MOSAIC_MODE", mode_names, 2, offsetof(struct mosaic__config, mode)},
    {"MOSAIC_ROLE", role_names, 3, offsetof(struct mosaic__config, role)},
};

enum { ENUM_VAR_NONE, ENUM_VAR_SET, ENUM_VAR_BAD };

/* Applies entry (a NAME=value string whose name has nlen characters) if it
 * names an enumerated setting. */
static int enum_var(struct mosaic__config *cfg, const char *entry, size_t nlen,
                    const char *value)
{
    for (size_t i = 0; i < sizeof(enum_vars) / sizeof(enum_vars[0]); i++) {
        int v;
        if (strlen(enum_vars[i].var) != nlen ||
            strncmp(entry, enum_vars[i].var, nlen) != 0)
            continue;
        v = enum_setting(cfg, enum_vars[i].var, value, enum_vars[i].names,
                         enum_vars[i].n);
        if (v < 0)
            return ENUM_VAR_BAD;
        *(int *)((char *)cfg + enum_vars[i].field) = v;
        return ENUM_VAR_SET;
    }
    return ENUM_VAR_NONE;
}

int mosaic__config_parse(struct mosaic__config *cfg, char *const *envp)
{
    int invalid = 0;
    char unknown[MOSAIC__UNKNOWN_SHOWN * 52] = "";
    size_t unknown_len = 0, unknown_n = 0;

    memset(cfg, 0, sizeof(*cfg));
    cfg->mode = MOSAIC__MODE_OBSERVE;
    cfg->role = MOSAIC__ROLE_NONE;
    cfg->level = MOSAIC__LOG_OFF;
    if (!envp)
        return 0;

    for (char *const *e = envp; *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t nlen;
        const char *value;
        int v;

        if (strncmp(*e, "MOSAIC_", 7) != 0 || !eq)
            continue;
        nlen = (size_t)(eq - *e);
        value = eq + 1;
#define MOSAIC__IS(var) (nlen == sizeof(#var) - 1 && strncmp(*e, #var, nlen) == 0)
        if ((v = enum_var(cfg, *e, nlen, value)) != ENUM_VAR_NONE) {
            invalid |= v == ENUM_VAR_BAD;
        } else if (MOSAIC__IS(MOSAIC_STATS)) {
            size_t len = strlen(value);
            if (len == 0 || len >= sizeof(cfg->stats_path)) {
                problem(cfg,
                        "mosaic: MOSAIC_STATS must be a file path of 1 to %zu "
                        "characters; running as pass-through",
                        sizeof(cfg->stats_path) - 1);
                invalid = 1;
            } else {
                memcpy(cfg->stats_path, value, len + 1);
            }
        } else if (!belongs_elsewhere(*e, nlen)) {
            /* Only the first few names are shown; the rest are counted. */
            if (unknown_n < MOSAIC__UNKNOWN_SHOWN) {
                int w = snprintf(unknown + unknown_len,
                                 sizeof(unknown) - unknown_len, "%s%.*s",
                                 unknown_n ? ", " : "",
                                 (int)(nlen > 48 ? 48 : nlen), *e);
                if (w > 0 && (size_t)w < sizeof(unknown) - unknown_len)
                    unknown_len += (size_t)w;
            }
            unknown_n++;
        }
#undef MOSAIC__IS
    }
    if (cfg->problems_dropped) {
        char line[160];
        if (snprintf(line, sizeof(line),
                     "mosaic: %zu further invalid settings not shown; running "
                     "as pass-through\n",
                     cfg->problems_dropped) > 0)
            problem_tail(cfg, line);
    }
    if (unknown_n) {
        char line[MOSAIC__PROBLEM_RESERVE - 160], more[48] = "";
        if (unknown_n > MOSAIC__UNKNOWN_SHOWN &&
            snprintf(more, sizeof(more), " and %zu more",
                     unknown_n - MOSAIC__UNKNOWN_SHOWN) < 0)
            more[0] = '\0';
        if (snprintf(line, sizeof(line),
                     "mosaic: unknown variable%s %s%s ignored (known: "
                     MOSAIC__VAR_LIST ")\n",
                     unknown_n > 1 ? "s" : "", unknown, more) > 0)
            problem_tail(cfg, line);
    }
    if (invalid)
        cfg->mode = MOSAIC__MODE_PASSTHROUGH;
    return invalid ? MOSAIC_ECONFIG : 0;
}

const char *mosaic__mode_name(int mode)
{
    return mode_names[mode == MOSAIC__MODE_PASSTHROUGH];
}

const char *mosaic__role_name(int role)
{
    return (role >= 0 && role < 3) ? role_names[role] : "none";
}
