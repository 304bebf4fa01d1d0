/*
 * HP requests from NVTX ranges, end to end: the built mosaic-sched daemon
 * (policy orion, which logs each HP request type's kernel count the first
 * time it sees one), an HP program (nvtx_app) with libmosaic.so preloaded
 * over the fake driver, and the daemon's view read back from its metrics
 * (mosaic_hp_request_duration_seconds_count: requests ended) and its log
 * ("HP request type <first kernel id>: N kernels").
 *
 * What it holds: exactly the ranges named mosaic:request are requests,
 * with the kernels inside them (a nested one is part of its outer one; an
 * HP graph launch posts its kernel nodes); the other ranges, and a name
 * that only starts with mosaic:request, are not; before the first marked
 * request the learned pattern is on, after it off. A library whose NVTX
 * initialised in its constructor, before the shim's, stays without NVTX
 * (a limit, docs/sched.md) unless the user names the shim in
 * NVTX_INJECTION64_PATH, which the shim then takes as its own. A user's
 * NVTX_INJECTION64_PATH naming another tool is left alone, that tool gets
 * the ranges and the requests fall back to the learned pattern. Without
 * MOSAIC_ROLE=hp the shim does not touch NVTX at all.
 *
 * Waits are "until it happens, at most 20 s"; the only exact assertions are
 * counts, checked again after a pause so that a late extra request shows.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mosaic/sched.h"
#include "sched_test_util.h"

struct dmn {
    pid_t pid;
    char dir[64];
    char sock[128];
    char conf[128];
    char log[128];
    unsigned port;
};

static struct dmn d;
static pid_t app_pid; /* the HP program running, killed if a test fails */
static int no_preload; /* start the program without LD_PRELOAD */

/* A metric's value, or -1 when absent. */
static long metric(const char *name)
{
    const char *m = stu_scrape_try(d.port), *p = strstr(m, name);

    while (p && p > m && p[-1] != '\n')
        p = strstr(p + 1, name);
    return p ? atol(p + strlen(name)) : -1;
}

static int dmn_start(void **state)
{
    char text[512];

    (void)state;
    memset(&d, 0, sizeof(d));
    snprintf(d.dir, sizeof(d.dir), "/tmp/mosaic-nvtx-XXXXXX");
    assert_non_null(mkdtemp(d.dir));
    snprintf(d.sock, sizeof(d.sock), "%s/s.sock", d.dir);
    snprintf(d.conf, sizeof(d.conf), "%s/d.conf", d.dir);
    snprintf(d.log, sizeof(d.log), "%s/d.log", d.dir);
    d.port = stu_free_port();
    snprintf(text, sizeof(text), "socket %s\nmetrics-port %u\nheartbeat-ms 100\nlog-level info\n"
             "mps off\npolicy orion\nhp-request-timeout-ms 60000\nrule requested any\n",
             d.sock, d.port);
    d.pid = stu_daemon_spawn(MOSAIC_SCHED_BIN, d.conf, text, d.log, d.sock);
    for (int j = 0; j < 500 && metric("mosaic_clients{role=\"hp\"} ") < 0; j++)
        stu_msleep(10);
    return 0;
}

static int dmn_stop(void **state)
{
    char cmd[256];

    (void)state;
    if (d.pid > 0) {
        kill(d.pid, SIGTERM);
        waitpid(d.pid, NULL, 0);
        stu_untrack(d.pid);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", d.dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- the HP program ------------------------------------------------------ */

struct app {
    pid_t pid;
    FILE *in, *out;
    char env_line[PATH_MAX + 64];
    char early_line[PATH_MAX + 64];
};

/* Starts nvtx_app with the shim preloaded; role NULL: no MOSAIC_ROLE;
 * inj NULL: NVTX_INJECTION64_PATH unset. Returns once it says ready. */
static void app_start(struct app *a, const char *role, const char *inj, const char *tool_out)
{
    int to[2], from[2];
    char line[256], shim_log[160];

    assert_int_equal(pipe(to), 0);
    assert_int_equal(pipe(from), 0);
    snprintf(shim_log, sizeof(shim_log), "%s/shim.log", d.dir);
    a->pid = fork();
    assert_true(a->pid >= 0);
    app_pid = a->pid;
    if (a->pid == 0) {
        int fd = open(shim_log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(to[0], STDIN_FILENO);
        dup2(from[1], STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(to[1]);
        close(from[0]);
        if (no_preload)
            unsetenv("LD_PRELOAD");
        else
            setenv("LD_PRELOAD", SHIM_PRELOAD, 1);
        setenv("LD_LIBRARY_PATH", FAKE_DIR, 1);
        setenv("MOSAIC_SCHED_SOCKET", d.sock, 1);
        setenv("MOSAIC_LOG", "info", 1);
        if (role)
            setenv("MOSAIC_ROLE", role, 1);
        else
            unsetenv("MOSAIC_ROLE");
        if (inj)
            setenv("NVTX_INJECTION64_PATH", inj, 1);
        else
            unsetenv("NVTX_INJECTION64_PATH");
        if (tool_out)
            setenv("NVTX_OTHER_TOOL_OUT", tool_out, 1);
        execl(NVTX_APP_BIN, "nvtx_app", (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    a->in = fdopen(to[1], "w");
    a->out = fdopen(from[0], "r");
    assert_non_null(fgets(line, sizeof(line), a->out));
    assert_string_equal(line, "ready\n");
}

static void app_go(struct app *a)
{
    char line[PATH_MAX + 32];

    fputs("go\n", a->in);
    fflush(a->in);
    a->env_line[0] = a->early_line[0] = '\0';
    while (fgets(line, sizeof(line), a->out) && strcmp(line, "done\n") != 0) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "env ", 4))
            snprintf(a->env_line, sizeof(a->env_line), "%s", line + 4);
        else if (!strncmp(line, "early-env ", 10))
            snprintf(a->early_line, sizeof(a->early_line), "%s", line + 10);
    }
}

/* Waits (at most 20 s) until the daemon counts n HP clients. */
static int hp_clients_become(int n)
{
    for (int i = 0; i < 2000; i++) {
        if (metric("mosaic_clients{role=\"hp\"} ") == n)
            return 1;
        stu_msleep(10);
    }
    return 0;
}

static void app_end(struct app *a)
{
    int status = 0;

    fputs("exit\n", a->in);
    fclose(a->in);
    fclose(a->out);
    waitpid(a->pid, &status, 0);
    app_pid = 0;
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* The next program must not be taken for this one. */
    assert_true(hp_clients_become(0));
}

/* Waits until the daemon counts want ended requests more than base, then
 * a little longer, and returns the count over base (an extra request shows
 * as more than want). */
static long requests_after(long base, long want)
{
    const char *name = "mosaic_hp_request_duration_seconds_count ";

    for (int i = 0; i < 2000 && metric(name) - base < want; i++)
        stu_msleep(10);
    stu_msleep(300);
    return metric(name) - base;
}

static void wait_hp_client(int n)
{
    assert_true(hp_clients_become(n));
}

/* The kernel count the daemon logged for the request type whose first
 * kernel is name (grid gx, block 32), or -1 if it logged none. */
static int logged_kernels(const char *name, unsigned gx)
{
    char key[256], want[64], line[512];
    FILE *fp = fopen(d.log, "r");
    int n = -1;

    snprintf(key, sizeof(key), "%s|grid=%u,1,1|block=32,1,1|dsmem=0", name, gx);
    snprintf(want, sizeof(want), "HP request type %016llx: ",
             (unsigned long long)mosaic_sched_kernel_id(key));
    assert_non_null(fp);
    while (fgets(line, sizeof(line), fp)) {
        const char *p = strstr(line, want);
        if (p)
            n = atoi(p + strlen(want));
    }
    fclose(fp);
    return n;
}

static int count_lines(const char *path, const char *text)
{
    char line[512];
    FILE *fp = fopen(path, "r");
    int n = 0;

    if (!fp)
        return -1;
    while (fgets(line, sizeof(line), fp))
        n += strcmp(line, text) == 0;
    fclose(fp);
    return n;
}

static long base_requests(void)
{
    return metric("mosaic_hp_request_duration_seconds_count ");
}

static int kill_app(void **state)
{
    (void)state;
    if (app_pid > 0 && kill(app_pid, SIGKILL) == 0) {
        waitpid(app_pid, NULL, 0);
        hp_clients_become(0);
    }
    app_pid = 0;
    return 0;
}

/* Lines of the shim's log (all runs of this group) that contain text. */
static int shim_log_lines(const char *text)
{
    char path[160], line[1024];
    FILE *fp;
    int n = 0;

    snprintf(path, sizeof(path), "%s/shim.log", d.dir);
    fp = fopen(path, "r");
    if (!fp)
        return 0;
    while (fgets(line, sizeof(line), fp))
        n += strstr(line, text) != NULL;
    fclose(fp);
    return n;
}

/* ---- tests --------------------------------------------------------------- */

static void ranges_named_mosaic_request_are_the_requests(void **state)
{
    struct app a;
    char shim[PATH_MAX];
    long base = base_requests();

    (void)state;
    assert_true(base >= 0);
    app_start(&a, "hp", NULL, NULL);
    wait_hp_client(1);
    app_go(&a);
    /* A (learned, before any mark) + B 3 + C + D + G + W: phase O's ranges
     * ("other", "mosaic:request:x") are not requests, and neither is X's
     * (below). */
    assert_int_equal(requests_after(base, 8), 8);
    /* The learned request open when the first range began ended there. */
    assert_int_equal(logged_kernels("kL", 1), 1);
    /* The nested mosaic:request is part of its outer one: kA, kB, kB. */
    assert_int_equal(logged_kernels("kA", 1), 3);
    assert_int_equal(logged_kernels("kD", 1), -1);
    /* Started on one thread, ended on another (and again: ignored). */
    assert_int_equal(logged_kernels("kC", 1), 1);
    assert_int_equal(logged_kernels("kE", 1), 4);
    /* The graph's two kernel nodes (kG1 with grid 2 first) and kG3. */
    assert_int_equal(logged_kernels("kG1", 2), 3);
    assert_int_equal(logged_kernels("kW", 1), 1);
    /* A library whose NVTX initialised before the shim's constructor set
     * the variable found no injection, and NVTX keeps it without one. */
    assert_string_equal(a.early_line, "(unset)");
    assert_int_equal(logged_kernels("kX", 1), -1);
    /* The shim pointed NVTX at itself. */
    assert_non_null(realpath(SHIM_PATH, shim));
    assert_string_equal(a.env_line, shim);
    assert_int_equal(metric("mosaic_protocol_errors_total "), 0);
    app_end(&a);
}

/* The user names the shim in NVTX_INJECTION64_PATH: the early library's
 * NVTX initialises through it before the shim's constructor ran, and its
 * ranges count from the constructor on; the shim takes the variable as its
 * own, not as another tool. */
static void the_shim_named_by_the_user_reaches_early_nvtx(void **state)
{
    struct app a;
    char shim[PATH_MAX];
    long base = base_requests();
    int told = shim_log_lines("names another tool");

    (void)state;
    assert_non_null(realpath(SHIM_PATH, shim));
    app_start(&a, "hp", shim, NULL);
    wait_hp_client(1);
    app_go(&a);
    assert_int_equal(requests_after(base, 9), 9);
    assert_string_equal(a.early_line, shim);
    assert_string_equal(a.env_line, shim);
    assert_int_equal(logged_kernels("kX", 1), 1);
    app_end(&a);
    assert_int_equal(shim_log_lines("names another tool"), told);
}

static void another_tools_injection_is_left_alone(void **state)
{
    struct app a;
    char out[160];
    int told = shim_log_lines("names another tool");
    long base = base_requests();

    (void)state;
    /* The daemon keeps request types from the test before; a fresh daemon
     * log is not needed: types are matched by their first kernel, and kD
     * is new here. */
    snprintf(out, sizeof(out), "%s/tool.out", d.dir);
    app_start(&a, "hp", OTHER_TOOL, out);
    wait_hp_client(1);
    app_go(&a);
    /* Every phase is one learned request (B's three each end at their
     * synchronisation, the first with A's kL in it; phase O is two): 10. */
    assert_int_equal(requests_after(base, 10), 10);
    assert_int_equal(logged_kernels("kD", 1), 2);
    assert_string_equal(a.env_line, OTHER_TOOL);
    assert_string_equal(a.early_line, OTHER_TOOL);
    /* The other tool got the program's ranges: B's six pushes, G's and the
     * early library's, "other" and the early constructor's. */
    assert_int_equal(count_lines(out, "push mosaic:request\n"), 8);
    assert_int_equal(count_lines(out, "push other\n"), 1);
    assert_int_equal(count_lines(out, "push early-ctor\n"), 1);
    app_end(&a);
    /* Said once in the shim's log at MOSAIC_LOG=info. */
    assert_int_equal(shim_log_lines("NVTX_INJECTION64_PATH names another tool"), told + 1);
}

static void without_the_hp_role_nvtx_is_untouched(void **state)
{
    struct app a;
    char shim[PATH_MAX];
    long base = base_requests();

    (void)state;
    assert_non_null(realpath(SHIM_PATH, shim));
    /* No role: no client, and no variable set. */
    app_start(&a, NULL, NULL, NULL);
    app_go(&a);
    assert_string_equal(a.env_line, "(unset)");
    app_end(&a);
    app_start(&a, "be", NULL, NULL);
    app_go(&a);
    assert_string_equal(a.env_line, "(unset)");
    app_end(&a);
    /* A child that inherited MOSAIC_ROLE=hp and the variable but not
     * LD_PRELOAD: no HP client appears (NVTX's dlopen of the shim fails
     * there, glibc 2.36: its initial-exec TLS does not fit a late load; were
     * it to load, the shim would decline). */
    no_preload = 1;
    app_start(&a, "hp", shim, NULL);
    no_preload = 0;
    app_go(&a);
    assert_string_equal(a.env_line, shim);
    /* A client would connect within this time (it does in the tests
     * above, from a cold start, in well under it). */
    for (int i = 0; i < 150; i++) {
        assert_int_equal(metric("mosaic_clients{role=\"hp\"} "), 0);
        stu_msleep(10);
    }
    app_end(&a);
    stu_msleep(300);
    assert_int_equal(base_requests(), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(ranges_named_mosaic_request_are_the_requests, kill_app),
        cmocka_unit_test_teardown(the_shim_named_by_the_user_reaches_early_nvtx, kill_app),
        cmocka_unit_test_teardown(another_tools_injection_is_left_alone, kill_app),
        cmocka_unit_test_teardown(without_the_hp_role_nvtx_is_untouched, kill_app),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, dmn_start, dmn_stop);
}
