/* MOSAIC_* settings: valid values apply; a bad one is named with the
 * accepted values and turns the shim to pass-through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
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
        cmocka_unit_test(strerror_covers_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
