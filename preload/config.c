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

        if (strncmp(*e, "MOSAIC_", 7) != 0 || !eq)
            continue;
        nlen = (size_t)(eq - *e);
        value = eq + 1;
#define MOSAIC__IS(var) (nlen == sizeof(#var) - 1 && strncmp(*e, #var, nlen) == 0)
        if (MOSAIC__IS(MOSAIC_LOG)) {
            v = enum_setting(cfg, "MOSAIC_LOG", value, level_names, 5);
            if (v < 0)
                invalid = 1;
            else
                cfg->level = v;
        } else if (MOSAIC__IS(MOSAIC_MODE)) {
            v = enum_setting(cfg, "MOSAIC_MODE", value, mode_names, 2);
            if (v < 0)
                invalid = 1;
            else
                cfg->mode = v;
        } else if (MOSAIC__IS(MOSAIC_ROLE)) {
            v = enum_setting(cfg, "MOSAIC_ROLE", value, role_names, 3);
            if (v < 0)
                invalid = 1;
            else
                cfg->role = v;
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
