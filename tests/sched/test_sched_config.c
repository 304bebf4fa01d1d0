/*
 * mosaic-sched's configuration: the shipped file states every default,
 * bad keys and values are refused with file and line, the environment
 * overrides the file, and rules parse.
 */
#define _GNU_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/mosaic-cfg-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];
    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *write_conf(const char *name, const char *text)
{
    static char path[128];
    FILE *fp;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return path;
}

/* The shipped file, loaded over a deliberately wrong configuration, must
 * give exactly the built-in defaults: so it names every key and states the
 * default value of each. */
static void shipped_file_states_every_default(void **state)
{
    struct mosaic__sched_config def, got;
    char err[1024];
    FILE *fp;
    char line[512];
    int seen[64] = {0};

    (void)state;
    mosaic__config_defaults(&def);
    memset(&got, 0x5a, sizeof(got));
    got.nrules = 0;
    assert_int_equal(mosaic__config_load_file(&got, SHIPPED_CONF, 0, err, sizeof(err)), 0);
    assert_string_equal(got.socket, def.socket);
    assert_int_equal(got.socket_mode, def.socket_mode);
    assert_string_equal(got.socket_group, def.socket_group);
    assert_true(got.slo == def.slo);
    assert_int_equal(got.policy, def.policy);
    assert_int_equal(got.metrics_port, def.metrics_port);
    assert_int_equal(got.mps, def.mps);
    assert_string_equal(got.mps_pipe_dir, def.mps_pipe_dir);
    assert_string_equal(got.mps_control, def.mps_control);
    assert_int_equal(got.heartbeat_ms, def.heartbeat_ms);
    assert_int_equal(got.ring_entries, def.ring_entries);
    assert_int_equal(got.max_clients, def.max_clients);
    assert_int_equal(got.spin_us, def.spin_us);
    assert_int_equal(got.be_timeout_ms, def.be_timeout_ms);
    assert_int_equal(got.hp_request_timeout_ms, def.hp_request_timeout_ms);
    assert_int_equal(got.be_on_timeout, def.be_on_timeout);
    assert_int_equal(got.log_level, def.log_level);
    assert_int_equal(got.nrules, 1);
    assert_int_equal(got.rules[0].grant, MOSAIC__GRANT_REQUESTED);
    assert_int_equal(got.rules[0].match, MOSAIC__MATCH_ANY);

    /* Each key is written exactly once, with a comment above it. */
    fp = fopen(SHIPPED_CONF, "r");
    assert_non_null(fp);
    int prev_comment = 0;
    while (fgets(line, sizeof(line), fp)) {
        for (int i = 0; mosaic__config_key(i); i++) {
            size_t n = strlen(mosaic__config_key(i));
            if (strncmp(line, mosaic__config_key(i), n) == 0 && line[n] == ' ') {
                seen[i]++;
                assert_true(prev_comment);
            }
        }
        prev_comment = line[0] == '#';
    }
    fclose(fp);
    for (int i = 0; mosaic__config_key(i); i++) {
        if (seen[i] != 1)
            fail_msg("key %s appears %d times in the shipped file", mosaic__config_key(i),
                     seen[i]);
    }
}

static void bad_key_names_file_and_line(void **state)
{
    struct mosaic__sched_config cfg;
    char err[1024];
    const char *p = write_conf("a.conf", "# comment\n\nslo 1.5\nsloo 1.6\n");

    (void)state;
    mosaic__config_defaults(&cfg);
    assert_int_equal(mosaic__config_load_file(&cfg, p, 0, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "a.conf:4"));
    assert_non_null(strstr(err, "unknown key 'sloo'"));
    assert_non_null(strstr(err, "slo, policy")); /* the list of keys */
    assert_true(cfg.slo == 1.5); /* the lines before were applied */
}

static void bad_values_are_refused_with_the_fix(void **state)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"slo 1.0\n", "slo: '1.0' is not valid: use a number above 1.0"},
        {"slo abc\n", "slo: 'abc'"},
        {"ring-entries 1000\n", "not a power of two"},
        {"ring-entries 4\n", "ring-entries: '4' is not valid"},
        {"socket-mode 0666\n", "world-accessible"},
        {"policy fastest\n", "use none, hold-be, mps-priority, orion, mosaic or static"},
        {"heartbeat-ms -5\n", "heartbeat-ms: '-5'"},
        {"metrics-port 70000\n", "metrics-port: '70000'"},
        {"socket relative.sock\n", "not an absolute path"},
        {"be-on-timeout maybe\n", "use run or hold"},
        {"slo\n", "'slo' has no value"},
        {"rule admin uid 0\n", "is not a rule"},
        {"rule hp cgroup relative\n", "must be an absolute path"},
        {"rule hp any extra\n", "`any` takes no value"},
        {"rule hp uid no-such-user-here\n", "no user 'no-such-user-here'"},
    };
    char err[1024];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mosaic__sched_config cfg;
        char text[256];
        const char *p;

        snprintf(text, sizeof(text), "# line 1\n%s", cases[i].text);
        p = write_conf("b.conf", text);
        mosaic__config_defaults(&cfg);
        err[0] = '\0';
        assert_int_equal(mosaic__config_load_file(&cfg, p, 0, err, sizeof(err)),
                         MOSAIC_ECONFIG);
        if (!strstr(err, "b.conf:2") || !strstr(err, cases[i].want))
            fail_msg("case %zu: '%s' does not say b.conf:2 and '%s'", i, err, cases[i].want);
    }
}

static void missing_file(void **state)
{
    struct mosaic__sched_config cfg;
    char err[1024];

    (void)state;
    mosaic__config_defaults(&cfg);
    assert_int_equal(mosaic__config_load_file(&cfg, "/nonexistent/x.conf", 1, err, sizeof(err)),
                     0);
    assert_int_equal(mosaic__config_load_file(&cfg, "/nonexistent/x.conf", 0, err, sizeof(err)),
                     MOSAIC_EIO);
    assert_non_null(strstr(err, "/nonexistent/x.conf: cannot open"));
}

static void environment_overrides_file(void **state)
{
    struct mosaic__sched_config cfg;
    char err[1024];
    const char *p = write_conf("c.conf", "slo 1.5\npolicy none\n");
    char *env_ok[] = {"PATH=/bin", "MOSAIC_SCHED_SLO=1.6", "MOSAIC_SCHED_SPIN_US=7",
                      "MOSAIC_SCHED_CONFIG=/ignored", NULL};
    char *env_bad[] = {"MOSAIC_SCHED_SLO=0.5", NULL};
    char *env_rule[] = {"MOSAIC_SCHED_RULE=hp any", NULL};
    char *env_unknown[] = {"MOSAIC_SCHED_SLOW=1", NULL};

    (void)state;
    mosaic__config_defaults(&cfg);
    assert_int_equal(mosaic__config_load_file(&cfg, p, 0, err, sizeof(err)), 0);
    assert_int_equal(mosaic__config_load_env(&cfg, env_ok, err, sizeof(err)), 0);
    assert_true(cfg.slo == 1.6);
    assert_int_equal(cfg.spin_us, 7);
    assert_int_equal(cfg.policy, MOSAIC__POLICY_NONE); /* the file's, untouched */
    /* A flag is applied last (main.c), through the same setter. */
    assert_int_equal(mosaic__config_set(&cfg, "slo", "1.1", "--slo", 0, err, sizeof(err)), 0);
    assert_true(cfg.slo == 1.1);

    assert_int_equal(mosaic__config_load_env(&cfg, env_bad, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "environment MOSAIC_SCHED_SLO"));
    assert_int_equal(mosaic__config_load_env(&cfg, env_rule, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "config file only"));
    assert_int_equal(mosaic__config_load_env(&cfg, env_unknown, err, sizeof(err)),
                     MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "unknown key 'slow'"));
}

static void rules_parse(void **state)
{
    struct mosaic__sched_config cfg;
    char err[1024];
    const char *p = write_conf("d.conf", "rule hp uid 1000\nrule be uid root\n"
                                         "rule requested cgroup /system.slice/x.service\n"
                                         "rule be exe /usr/bin/python3\nrule deny any\n");

    (void)state;
    mosaic__config_defaults(&cfg);
    /* The built-in rule (the shipped file's) lets MOSAIC_ROLE decide... */
    assert_int_equal(cfg.nrules, 1);
    assert_int_equal(cfg.rules[0].grant, MOSAIC__GRANT_REQUESTED);
    assert_int_equal(cfg.rules[0].match, MOSAIC__MATCH_ANY);
    /* ...and written rules replace it rather than follow it. */
    assert_int_equal(mosaic__config_load_file(&cfg, p, 0, err, sizeof(err)), 0);
    assert_int_equal(cfg.nrules, 5);
    assert_int_equal(cfg.rules[0].grant, MOSAIC__GRANT_HP);
    assert_int_equal(cfg.rules[0].id, 1000);
    assert_int_equal(cfg.rules[1].id, 0);
    assert_int_equal(cfg.rules[1].line, 2);
    assert_string_equal(cfg.rules[2].path, "/system.slice/x.service");
    assert_int_equal(cfg.rules[3].match, MOSAIC__MATCH_EXE);
    assert_int_equal(cfg.rules[4].grant, MOSAIC__GRANT_DENY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shipped_file_states_every_default),
        cmocka_unit_test(bad_key_names_file_and_line),
        cmocka_unit_test(bad_values_are_refused_with_the_fix),
        cmocka_unit_test(missing_file),
        cmocka_unit_test(environment_overrides_file),
        cmocka_unit_test(rules_parse),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
