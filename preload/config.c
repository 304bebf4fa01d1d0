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

/* The known variables, for the message about an unknown one. */
#define MOSAIC__VAR_LIST "MOSAIC_LOG, MOSAIC_STATS, MOSAIC_MODE, MOSAIC_ROLE"

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
    va_list ap;

    if (used + 2 >= sizeof(cfg->problems))
        return;
    va_start(ap, fmt);
    vsnprintf(cfg->problems + used, sizeof(cfg->problems) - used - 1, fmt, ap);
    va_end(ap);
    used = strlen(cfg->problems);
    cfg->problems[used] = '\n';
    cfg->problems[used + 1] = '\0';
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

        /* MOSAIC_SCHED_* belong to the arbiter (the client reads
         * MOSAIC_SCHED_SOCKET in sched_link.c), MOSAIC_SIMGPU* to the
         * simulated GPU: not unknown, not the shim's to check. */
        if (strncmp(*e, "MOSAIC_", 7) != 0 || !eq ||
            strncmp(*e, "MOSAIC_SCHED_", 13) == 0 || strncmp(*e, "MOSAIC_SIMGPU", 13) == 0)
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
        } else {
            problem(cfg,
                    "mosaic: unknown variable %.*s ignored (known: "
                    MOSAIC__VAR_LIST ")",
                    (int)(nlen > 64 ? 64 : nlen), *e);
        }
#undef MOSAIC__IS
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
