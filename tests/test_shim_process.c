/*
 * The shim inside whole processes: silent by default, the stats file at
 * exit, one clear line for a bad setting and then pass-through, an
 * unwritable stats path reported without harm, fork giving the child its
 * own counters, and programs that never touch CUDA left alone.
 */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

static char dir[256];

struct result {
    int status;
    char out[4096];
    char err[8192];
    pid_t pid;
};

static void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;

    buf[n] = '\0';
    if (f)
        fclose(f);
}

/* Called in the child just before exec, when set (the pid is known). */
static void (*before_exec)(void);

/* Runs argv under the shim with extra environment settings (NULL-ended). */
static void run(struct result *r, char *const argv[], const char *const *extra)
{
    char outp[300], errp[300];
    pid_t pid;

    snprintf(outp, sizeof(outp), "%s/out", dir);
    snprintf(errp, sizeof(errp), "%s/err", dir);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        unsetenv("MOSAIC_LOG");
        unsetenv("MOSAIC_STATS");
        unsetenv("MOSAIC_MODE");
        setenv("LD_PRELOAD", getenv("MTEST_PRELOAD"), 1);
        for (; extra && *extra; extra++)
            putenv((char *)*extra);
        if (before_exec)
            before_exec();
        execv(argv[0], argv);
        _exit(127);
    }
    waitpid(pid, &r->status, 0);
    before_exec = NULL;
    r->pid = pid;
    slurp(outp, r->out, sizeof(r->out));
    slurp(errp, r->err, sizeof(r->err));
}

static char *child_path(void)
{
    static char p[512];

    snprintf(p, sizeof(p), "%s/shim_child", getenv("MTEST_HELPER_DIR"));
    return p;
}

static cJSON *stats_of(pid_t pid)
{
    char path[300], buf[1 << 16];

    snprintf(path, sizeof(path), "%s/stats-%d.json", dir, (int)pid);
    slurp(path, buf, sizeof(buf));
    return cJSON_Parse(buf);
}

static long long num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    return cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
}

static char stats_env[400];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/mosaic-proc-test-%d", (int)getpid());
    mkdir(dir, 0755);
    snprintf(stats_env, sizeof(stats_env), "MOSAIC_STATS=%s/stats-%%p.json", dir);
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd);
}

static void silent_and_counts_at_exit(void **state)
{
    struct result r;
    char *argv[] = {child_path(), "5", NULL};
    const char *extra[] = {stats_env, NULL};
    cJSON *s;

    (void)state;
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_string_equal(r.out, "executed 5 wrapped 1\n");
    assert_string_equal(r.err, ""); /* never prints unless asked */
    s = stats_of(r.pid);
    assert_non_null(s);
    assert_int_equal(num(s, "launches_total"), 5);
    assert_int_equal(num(cJSON_GetObjectItem(s, "kernels"), "child_fn"), 5);
    cJSON_Delete(s);
}

static void bad_setting_says_one_line_then_passes_through(void **state)
{
    struct result r;
    char *argv[] = {child_path(), "4", NULL};
    const char *extra[] = {stats_env, "MOSAIC_LOG=verbose", NULL};
    cJSON *s;

    (void)state;
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    /* the program ran, and got the driver's own entry point */
    assert_string_equal(r.out, "executed 4 wrapped 0\n");
    assert_non_null(strstr(r.err, "MOSAIC_LOG='verbose'"));
    assert_non_null(strstr(r.err, "off, error, warn, info, debug"));
    assert_ptr_equal(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
    s = stats_of(r.pid);
    assert_non_null(s);
    assert_string_equal(cJSON_GetObjectItem(s, "mode")->valuestring, "passthrough");
    assert_int_equal(num(s, "launches_total"), 0);
    cJSON_Delete(s);
}

static void passthrough_mode_hands_out_the_driver(void **state)
{
    struct result r;
    char *argv[] = {child_path(), "3", NULL};
    const char *extra[] = {"MOSAIC_MODE=passthrough", NULL};

    (void)state;
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_string_equal(r.out, "executed 3 wrapped 0\n");
    assert_string_equal(r.err, "");
}

static void unwritable_stats_path_is_reported_not_fatal(void **state)
{
    struct result r;
    char *argv[] = {child_path(), "2", NULL};
    const char *extra[] = {"MOSAIC_STATS=/nonexistent-mosaic-dir/s.json", NULL};

    (void)state;
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_string_equal(r.out, "executed 2 wrapped 1\n");
    assert_non_null(strstr(r.err, "MOSAIC_STATS file "
                                  "'/nonexistent-mosaic-dir/s.json' cannot be "
                                  "written"));
}

static void fork_gives_the_child_its_own_counters(void **state)
{
    struct result r;
    char *argv[] = {child_path(), "2", "fork", "3", NULL};
    const char *extra[] = {stats_env, NULL};
    char cmd[400];
    FILE *ls;
    char line[300];
    int files = 0, found_child = 0;
    cJSON *s;

    (void)state;
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    s = stats_of(r.pid);
    assert_non_null(s);
    assert_int_equal(num(s, "launches_total"), 4);
    cJSON_Delete(s);
    /* the forked child wrote its own file with only its own launches */
    snprintf(cmd, sizeof(cmd), "ls %s | grep '^stats-[0-9]*\\.json$'", dir);
    ls = popen(cmd, "r");
    while (fgets(line, sizeof(line), ls)) {
        int pid = atoi(line + 6);
        files++;
        if (pid != r.pid) {
            s = stats_of(pid);
            if (s && num(s, "launches_total") == 3)
                found_child = 1;
            cJSON_Delete(s);
        }
    }
    pclose(ls);
    assert_true(found_child);
}

/* fork() while other threads hold and take every lock of the shim: each
 * child launches and writes its stats file, none deadlocks (shim_child
 * kills a child that is not done within 10 s and fails). */
static void fork_while_threads_launch(void **state)
{
    struct result r;
    char *argv[] = {child_path(), "1", "forkstorm", "40", NULL};
    /* A child forked from a multithreaded process inherits the other
     * threads' allocations in flight, which nobody can free there: the
     * leak checker of the sanitizer build would call them leaks. */
    const char *extra[] = {stats_env,
                           "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0",
                           NULL};
    char cmd[400], line[300];
    FILE *ls;
    int children = 0;

    (void)state;
    run(&r, argv, extra);
    assert_string_equal(r.out, "forkstorm ok\n");
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    snprintf(cmd, sizeof(cmd), "ls %s | grep '^stats-[0-9]*\\.json$'", dir);
    ls = popen(cmd, "r");
    while (fgets(line, sizeof(line), ls)) {
        cJSON *s = stats_of(atoi(line + 6));
        const cJSON *k = s ? cJSON_GetObjectItem(s, "kernels") : NULL;
        /* a forked child: its own 4 launches, none of its parent's */
        if (s && num(s, "pid") != r.pid && num(k, "child_fn") == 1 &&
            num(s, "launches_total") == 4)
            children++;
        cJSON_Delete(s);
    }
    pclose(ls);
    assert_int_equal(children, 40);
}

/* Another interposer in front of the driver (tests/interposer/, preloaded
 * after the shim) answers cuGetProcAddress with its own trampolines: the
 * shim wraps them by name, sees every launch and still calls through
 * them, and counts the lookups it matched by name. */
static void interposer_in_front_of_the_driver(void **state)
{
    struct result r;
    char *argv[] = {child_path(), "5", NULL};
    char preload[1200];
    const char *extra[] = {stats_env, preload, NULL};
    cJSON *s;

    (void)state;
    if (snprintf(preload, sizeof(preload), "LD_PRELOAD=%s:%s",
                 getenv("MTEST_PRELOAD"), getenv("MTEST_INTERPOSER")) >=
        (int)sizeof(preload))
        fail();
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_string_equal(r.out, "executed 5 wrapped 1 interposer 5\n");
    assert_string_equal(r.err, "");
    s = stats_of(r.pid);
    assert_non_null(s);
    assert_int_equal(num(s, "launches_total"), 5);
    assert_int_equal(num(cJSON_GetObjectItem(s, "kernels"), "child_fn"), 5);
    assert_int_equal(num(s, "name_matched_lookups"), 1);
    assert_int_equal(num(s, "unmatched_lookups"), 0);
    cJSON_Delete(s);
}

/* The shim starts no thread and keeps no descriptor open in its host. */
static void no_threads_or_descriptors_added(void **state)
{
    struct result with, without;
    char *argv[] = {child_path(), "50", NULL};
    const char *extra[] = {"MTEST_REPORT_RESOURCES=1", "MOSAIC_LOG=debug", stats_env, NULL};
    const char *bare[] = {"MTEST_REPORT_RESOURCES=1", "LD_PRELOAD=", NULL};
    const char *a, *b;

    (void)state;
    run(&with, argv, extra);
    run(&without, argv, bare);
    assert_true(WIFEXITED(with.status) && WEXITSTATUS(with.status) == 0);
    assert_true(WIFEXITED(without.status) && WEXITSTATUS(without.status) == 0);
    assert_non_null(strstr(with.out, "wrapped 1"));
    assert_non_null(strstr(without.out, "wrapped 0"));
    a = strstr(with.out, "fds ");
    b = strstr(without.out, "fds ");
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
}

static void logging_when_asked(void **state)
{
    struct result r;
    char *argv[] = {child_path(), "1", NULL};
    const char *extra[] = {"MOSAIC_LOG=info", NULL};

    (void)state;
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_non_null(strstr(r.err, "libmosaic 0.1.0 loaded: mode observe"));
    assert_non_null(strstr(r.err, "bound to libcuda.so.1"));
}

static void programs_without_cuda_are_untouched(void **state)
{
    struct result r;
    char *argv[] = {"/bin/echo", "hello", NULL};
    const char *extra[] = {stats_env, NULL};
    char path[300];

    (void)state;
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_string_equal(r.out, "hello\n");
    assert_string_equal(r.err, "");
    /* it never loaded the driver, so it has nothing to report */
    snprintf(path, sizeof(path), "%s/stats-%d.json", dir, (int)r.pid);
    assert_int_equal(access(path, F_OK), -1);
}

/* A wrapper (a shell that outlives its CUDA child; bash, as dash leaves
 * with _exit and runs no destructor) must not replace the
 * child's stats file with its own empty one when both name one file. */
static void wrapper_does_not_overwrite_its_child(void **state)
{
    char cmd[700], env[400];
    char *argv[] = {"/bin/bash", "-c", cmd, NULL};
    const char *extra[] = {env, NULL};
    struct result r;
    cJSON *s;

    (void)state;
    snprintf(cmd, sizeof(cmd), "%s 6; true", child_path());
    snprintf(env, sizeof(env), "MOSAIC_STATS=%s/shared.json", dir);
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_string_equal(r.out, "executed 6 wrapped 1\n");
    {
        char path[300], buf[1 << 16];
        snprintf(path, sizeof(path), "%s/shared.json", dir);
        slurp(path, buf, sizeof(buf));
        s = cJSON_Parse(buf);
    }
    assert_non_null(s);
    assert_int_equal(num(s, "launches_total"), 6);
    cJSON_Delete(s);
}

static char victim[300], link_path[300];

/* The old temporary name was <path>.tmp.<pid>: plant a link there, to a
 * file the attacker wants overwritten, once the pid is known. */
static void plant_tmp_link(void)
{
    char tmp[400];

    snprintf(tmp, sizeof(tmp), "%s/planted.json.tmp.%d", dir, (int)getpid());
    if (symlink(victim, tmp) != 0)
        _exit(126);
}

static void write_victim(void)
{
    FILE *f = fopen(victim, "w");

    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
}

static void assert_victim_intact(void)
{
    char buf[64];

    slurp(victim, buf, sizeof(buf));
    assert_string_equal(buf, "precious\n");
}

static void planted_temporary_link_is_not_followed(void **state)
{
    char env[400], path[300], buf[1 << 16];
    char *argv[] = {child_path(), "2", NULL};
    const char *extra[] = {env, NULL};
    struct result r;
    cJSON *s;

    (void)state;
    snprintf(victim, sizeof(victim), "%s/victim-tmp", dir);
    write_victim();
    snprintf(env, sizeof(env), "MOSAIC_STATS=%s/planted.json", dir);
    before_exec = plant_tmp_link;
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_victim_intact();
    /* the stats file itself was still written, under the name asked for */
    snprintf(path, sizeof(path), "%s/planted.json", dir);
    slurp(path, buf, sizeof(buf));
    s = cJSON_Parse(buf);
    assert_non_null(s);
    assert_int_equal(num(s, "launches_total"), 2);
    cJSON_Delete(s);
    /* and the temporary file was private while it existed: the result is
     * mode 0600 */
    {
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
    }
}

static void symlink_target_is_refused(void **state)
{
    char env[400];
    char *argv[] = {child_path(), "2", NULL};
    const char *extra[] = {env, NULL};
    struct result r;
    struct stat st;

    (void)state;
    snprintf(victim, sizeof(victim), "%s/victim-link", dir);
    write_victim();
    snprintf(link_path, sizeof(link_path), "%s/link.json", dir);
    assert_int_equal(symlink(victim, link_path), 0);
    snprintf(env, sizeof(env), "MOSAIC_STATS=%s", link_path);
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_string_equal(r.out, "executed 2 wrapped 1\n");
    assert_int_equal(lstat(link_path, &st), 0);
    assert_true(S_ISLNK(st.st_mode)); /* not replaced */
    assert_victim_intact();
    assert_non_null(strstr(r.err, "is a symbolic link and is not replaced"));
}

static void fifo_target_is_refused(void **state)
{
    char env[400], fifo[300];
    char *argv[] = {child_path(), "2", NULL};
    const char *extra[] = {env, NULL};
    struct result r;
    struct stat st;

    (void)state;
    snprintf(fifo, sizeof(fifo), "%s/fifo.json", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(env, sizeof(env), "MOSAIC_STATS=%s", fifo);
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_non_null(strstr(r.err, "is not a regular file"));
}

/* Someone else's file in a shared directory is not replaced (only
 * checkable as root, who can make a file another user owns). */
static void foreign_file_is_refused(void **state)
{
    char env[400], buf[64];
    char *argv[] = {child_path(), "2", NULL};
    const char *extra[] = {env, NULL};
    struct result r;

    (void)state;
    if (geteuid() != 0)
        skip();
    snprintf(victim, sizeof(victim), "%s/foreign.json", dir);
    write_victim();
    assert_int_equal(chown(victim, 65534, 65534), 0);
    snprintf(env, sizeof(env), "MOSAIC_STATS=%s", victim);
    run(&r, argv, extra);
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    slurp(victim, buf, sizeof(buf));
    assert_string_equal(buf, "precious\n");
    assert_non_null(strstr(r.err, "belongs to another user"));
}

/* stderr is a pipe whose reader has gone: a log line must not kill the
 * program with SIGPIPE. */
static void closed_stderr_pipe_does_not_kill(void **state)
{
    int p[2];
    pid_t pid;
    int status;
    char *argv[] = {child_path(), "3", NULL};

    (void)state;
    assert_int_equal(pipe(p), 0);
    close(p[0]);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(p[1], 2);
        signal(SIGPIPE, SIG_DFL);
        setenv("LD_PRELOAD", getenv("MTEST_PRELOAD"), 1);
        setenv("MOSAIC_LOG", "debug", 1);
        setenv("MOSAIC_UNKNOWN_THING", "1", 1);
        unsetenv("MOSAIC_STATS");
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_false(WIFSIGNALED(status));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(silent_and_counts_at_exit),
        cmocka_unit_test(bad_setting_says_one_line_then_passes_through),
        cmocka_unit_test(passthrough_mode_hands_out_the_driver),
        cmocka_unit_test(unwritable_stats_path_is_reported_not_fatal),
        cmocka_unit_test(fork_gives_the_child_its_own_counters),
        cmocka_unit_test(fork_while_threads_launch),
        cmocka_unit_test(interposer_in_front_of_the_driver),
        cmocka_unit_test(no_threads_or_descriptors_added),
        cmocka_unit_test(logging_when_asked),
        cmocka_unit_test(programs_without_cuda_are_untouched),
        cmocka_unit_test(wrapper_does_not_overwrite_its_child),
        cmocka_unit_test(planted_temporary_link_is_not_followed),
        cmocka_unit_test(symlink_target_is_refused),
        cmocka_unit_test(fifo_target_is_refused),
        cmocka_unit_test(foreign_file_is_refused),
        cmocka_unit_test(closed_stderr_pipe_does_not_kill),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
