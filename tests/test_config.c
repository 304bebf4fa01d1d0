/* MOSAIC_* settings: valid values apply; a bad one is named with the
 * accepted values and turns the shim to pass-through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static struct mosaic__config cfg;

static void defaults_when_nothing_is_set(void **state)
{
    char *env[] = {"PATH=/bin", "HOME=/root", NULL};

    (void)state;
    assert_int_equal(mosaic__config_parse(&cfg, env), 0);
    assert_int_equal(cfg.mode, MOSAIC__MODE_OBSERVE);
    assert_int_equal(cfg.level, MOSAIC__LOG_OFF);
    assert_int_equal(cfg.role, MOSAIC__ROLE_NONE);
    assert_string_equal(cfg.stats_path, "");
    assert_string_equal(cfg.problems, "");
}

static void valid_values_apply(void **state)
{
    char *env[] = {"MOSAIC_LOG=debug", "MOSAIC_STATS=/tmp/s-%p.json",
                   "MOSAIC_ROLE=be", "MOSAIC_MODE=passthrough", NULL};

    (void)state;
    assert_int_equal(mosaic__config_parse(&cfg, env), 0);
    assert_int_equal(cfg.level, MOSAIC__LOG_DEBUG);
    assert_int_equal(cfg.role, MOSAIC__ROLE_BE);
    assert_int_equal(cfg.mode, MOSAIC__MODE_PASSTHROUGH);
    assert_string_equal(cfg.stats_path, "/tmp/s-%p.json");
    assert_string_equal(cfg.problems, "");
}

static void bad_value_names_variable_and_accepted_values(void **state)
{
    char *env[] = {"MOSAIC_LOG=verbose", NULL};

    (void)state;
    assert_int_equal(mosaic__config_parse(&cfg, env), MOSAIC_ECONFIG);
    assert_int_equal(cfg.mode, MOSAIC__MODE_PASSTHROUGH);
    assert_int_equal(cfg.level, MOSAIC__LOG_OFF);
    assert_non_null(strstr(cfg.problems, "MOSAIC_LOG='verbose'"));
    assert_non_null(strstr(cfg.problems, "off, error, warn, info, debug"));
    assert_non_null(strstr(cfg.problems, "pass-through"));
    /* exactly one line */
    assert_ptr_equal(strchr(cfg.problems, '\n'),
                     cfg.problems + strlen(cfg.problems) - 1);
}

static void each_bad_setting_is_reported(void **state)
{
    char *env[] = {"MOSAIC_ROLE=HP", "MOSAIC_MODE=", "MOSAIC_STATS=", NULL};
    int lines = 0;

    (void)state;
    assert_int_equal(mosaic__config_parse(&cfg, env), MOSAIC_ECONFIG);
    assert_int_equal(cfg.mode, MOSAIC__MODE_PASSTHROUGH);
    for (const char *p = cfg.problems; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 3);
    assert_non_null(strstr(cfg.problems, "MOSAIC_ROLE='HP'"));
    assert_non_null(strstr(cfg.problems, "none, hp, be"));
    assert_non_null(strstr(cfg.problems, "MOSAIC_MODE=''"));
    assert_non_null(strstr(cfg.problems, "MOSAIC_STATS must be a file path"));
}

static void unknown_variable_is_reported_but_harmless(void **state)
{
    char *env[] = {"MOSAIC_LGO=debug", "MOSAICX=1", NULL};

    (void)state;
    assert_int_equal(mosaic__config_parse(&cfg, env), 0);
    assert_int_equal(cfg.mode, MOSAIC__MODE_OBSERVE);
    assert_non_null(strstr(cfg.problems, "unknown variable MOSAIC_LGO"));
    assert_non_null(strstr(cfg.problems, "MOSAIC_LOG"));
    assert_null(strstr(cfg.problems, "MOSAICX"));
}

static void hostile_values_stay_bounded(void **state)
{
    static char longval[10000];
    static char longpath[5000 + 16];
    char *env[3];

    (void)state;
    memset(longval, 'x', sizeof(longval) - 1);
    memcpy(longval, "MOSAIC_LOG=", 11);
    memcpy(longpath, "MOSAIC_STATS=", 13);
    memset(longpath + 13, 'p', 5000);
    env[0] = longval;
    env[1] = longpath;
    env[2] = NULL;
    assert_int_equal(mosaic__config_parse(&cfg, env), MOSAIC_ECONFIG);
    assert_true(strlen(cfg.problems) < sizeof(cfg.problems));
    assert_string_equal(cfg.stats_path, "");
    assert_non_null(strstr(cfg.problems, "MOSAIC_LOG="));
}

/* A flood of unknown MOSAIC_* names (a hostile or careless environment)
 * neither overflows the message nor pushes out the reason for
 * pass-through, whichever order the variables come in. */
static void many_unknown_names_keep_the_reason(void **state)
{
    static char names[300][32];
    static char *env[303];
    int n = 0;

    (void)state;
    for (int i = 0; i < 150; i++) {
        snprintf(names[i], sizeof(names[i]), "MOSAIC_UNKNOWN_%03d=1", i);
        env[n++] = names[i];
    }
    env[n++] = "MOSAIC_LOG=verbose";
    for (int i = 150; i < 300; i++) {
        snprintf(names[i], sizeof(names[i]), "MOSAIC_UNKNOWN_%03d=1", i);
        env[n++] = names[i];
    }
    env[n] = NULL;
    assert_int_equal(mosaic__config_parse(&cfg, env), MOSAIC_ECONFIG);
    assert_int_equal(cfg.mode, MOSAIC__MODE_PASSTHROUGH);
    assert_true(strlen(cfg.problems) < sizeof(cfg.problems));
    assert_non_null(strstr(cfg.problems, "MOSAIC_LOG='verbose'"));
    assert_non_null(strstr(cfg.problems, "pass-through"));
    assert_non_null(strstr(cfg.problems, "MOSAIC_UNKNOWN_000"));
    assert_non_null(strstr(cfg.problems, "and 292 more"));
    assert_null(strstr(cfg.problems, "MOSAIC_UNKNOWN_299"));
    /* the reason line, then the one line about unknown names */
    assert_ptr_equal(strchr(strchr(cfg.problems, '\n') + 1, '\n'),
                     cfg.problems + strlen(cfg.problems) - 1);
}

/* Many invalid values: those that do not fit are counted, and the shim
 * still says it runs as pass-through. */
static void many_invalid_values_are_counted(void **state)
{
    static char vals[100][80];
    static char *env[101];

    (void)state;
    for (int i = 0; i < 100; i++) {
        snprintf(vals[i], sizeof(vals[i]), "MOSAIC_ROLE=%060d", i);
        env[i] = vals[i];
    }
    env[100] = NULL;
    assert_int_equal(mosaic__config_parse(&cfg, env), MOSAIC_ECONFIG);
    assert_true(strlen(cfg.problems) < sizeof(cfg.problems));
    assert_true(cfg.problems_dropped > 0);
    assert_non_null(strstr(cfg.problems, "further invalid settings not shown; "
                                         "running as pass-through"));
}

/* The variables of the project's other components (the predictor, the
 * capture library, the profiler, the arbiter and its client) share the
 * environment with the shim's and are not called unknown. */
static void project_variables_are_not_unknown(void **state)
{
    char *env[] = {"MOSAIC_MODELS=/m", "MOSAIC_CAPTURE_LIB=/c.so",
                   "MOSAIC_PROFILE_OUT=/p", "MOSAIC_SOCKET=/run/mosaic/s",
                   "MOSAIC_SCHED_TIMEOUT_MS=100", "MOSAIC_SCHED_CONFIG=/e",
                   "MOSAIC_CAPTURE_VERBOSE=1", "MOSAIC_SIMGPU=demo",
                   "MOSAIC_SIMGPU_SCALE=20", NULL};

    (void)state;
    assert_int_equal(mosaic__config_parse(&cfg, env), 0);
    assert_string_equal(cfg.problems, "");
}

static void strerror_covers_codes(void **state)
{
    (void)state;
    assert_string_equal(mosaic_strerror(MOSAIC_OK), "success");
    assert_non_null(strstr(mosaic_strerror(MOSAIC_ENODRIVER), "libcuda"));
    assert_string_equal(mosaic_strerror(-999), "unknown Mosaic error code");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_when_nothing_is_set),
        cmocka_unit_test(valid_values_apply),
        cmocka_unit_test(bad_value_names_variable_and_accepted_values),
        cmocka_unit_test(each_bad_setting_is_reported),
        cmocka_unit_test(unknown_variable_is_reported_but_harmless),
        cmocka_unit_test(hostile_values_stay_bounded),
        cmocka_unit_test(many_unknown_names_keep_the_reason),
        cmocka_unit_test(many_invalid_values_are_counted),
        cmocka_unit_test(project_variables_are_not_unknown),
        cmocka_unit_test(strerror_covers_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
