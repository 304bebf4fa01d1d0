/*
 * The arbiter's device-side gate and HP completion words, end to end on
 * the simulated GPU: the built mosaic-sched, an HP client (the client
 * library, in this process) whose requests make the hold-be policy hold BE
 * work, and gate_prog under the shim (LD_PRELOAD=libmosaic.so) as the BE
 * or HP program. Times are CLOCK_MONOTONIC, which the simulated GPU's
 * events share; every assertion about time is a bound that load cannot make
 * true by accident (a kernel started no earlier than the moment its grant
 * became possible; nothing started inside a window the daemon held).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
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
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mosaic/sched.h"
#include "sched_test_util.h"

#define DUR_NS 20000000ull /* each kernel: k_gate__simus20000, 20 ms */
#define MAXK 64

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct dmn {
    pid_t pid;
    char dir[64], sock[96], conf[128], log[128];
    unsigned port;
    const char *extra;
};

static char simgpu_name[64];

static void dmn_spawn(struct dmn *d)
{
    char text[1024];
    int n = snprintf(text, sizeof(text), "socket %s\nmetrics-port %u\nheartbeat-ms 100\n"
                     "be-timeout-ms 300\npolicy hold-be\nlog-level debug\nmps off\n"
                     "rule requested any\n%s\n", d->sock, d->port, d->extra ? d->extra : "");

    assert_true(n > 0 && (size_t)n < sizeof(text));
    d->pid = stu_daemon_spawn(MOSAIC_SCHED_BIN, d->conf, text, d->log, d->sock);
}

static void dmn_start(struct dmn *d, const char *extra)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->dir, sizeof(d->dir), "/tmp/mosaic-g-XXXXXX");
    assert_non_null(mkdtemp(d->dir));
    snprintf(d->sock, sizeof(d->sock), "%s/s.sock", d->dir);
    snprintf(d->conf, sizeof(d->conf), "%s/d.conf", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/d.log", d->dir);
    d->port = stu_free_port();
    d->extra = extra;
    dmn_spawn(d);
}

static void dmn_kill(struct dmn *d, int sig)
{
    if (d->pid > 0) {
        kill(d->pid, sig);
        waitpid(d->pid, NULL, 0);
        stu_untrack(d->pid);
    }
    d->pid = 0;
}

static void dmn_stop(struct dmn *d)
{
    dmn_kill(d, SIGTERM);
    stu_rmdir(d->dir);
}

/* GET /metrics; returns a static buffer. */
static const char *scrape(const struct dmn *d)
{
    return stu_scrape(d->port);
}

static double metric(const struct dmn *d, const char *name)
{
    const char *m = scrape(d), *p;
    char key[160];

    snprintf(key, sizeof(key), "\n%s ", name);
    p = strstr(m, key);
    return p ? atof(p + strlen(key)) : -1;
}

/* The BE client's waiting kernels, from `status` (via the metrics text:
 * the held counter moves once per held kernel). */
static int be_waiting(const struct dmn *d)
{
    return (int)metric(d, "mosaic_be_held_total");
}

/* gate_prog under the shim, its stdout into a pipe. */
struct prog {
    pid_t pid;
    int out;
    char stats[160];
};

static void prog_start(struct prog *p, const struct dmn *d, const char *role,
                       const char *const *env_extra, const char *args)
{
    int fds[2];
    char cmd[512];

    assert_int_equal(pipe(fds), 0);
    snprintf(p->stats, sizeof(p->stats), "%s/stats-%s-%d.json", d->dir, role, rand());
    p->pid = fork();
    assert_true(p->pid >= 0);
    if (p->pid > 0)
        stu_track(p->pid);
    if (p->pid == 0) {
        const char *pre = getenv("GATE_PRELOAD");
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        setenv("LD_PRELOAD", pre && pre[0] ? pre : SHIM_PATH, 1);
        setenv("LD_LIBRARY_PATH", FAKECUDA_DIR, 1);
        setenv("MOSAIC_ROLE", role, 1);
        setenv("MOSAIC_SCHED_SOCKET", d->sock, 1);
        setenv("MOSAIC_SIMGPU", simgpu_name, 1);
        setenv("MOSAIC_SIMGPU_SCALE", "1", 1);
        setenv("MOSAIC_STATS", p->stats, 1);
        for (int i = 0; env_extra && env_extra[i]; i += 2)
            setenv(env_extra[i], env_extra[i + 1], 1);
        snprintf(cmd, sizeof(cmd), "exec %s %s", GATE_PROG, args);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    p->out = fds[0];
}

struct kern {
    uint64_t launch, end_lo, end_hi;
};

/* Reads gate_prog's lines; returns the kernels read, and the HP line. */
static int prog_finish(struct prog *p, struct kern *k, char *tail, size_t tail_len)
{
    static char buf[16384];
    size_t got = 0;
    ssize_t n;
    int status = 0, nk = 0;

    while (got < sizeof(buf) - 1 && (n = read(p->out, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(p->out);
    waitpid(p->pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    if (tail)
        tail[0] = '\0';
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        int i, s;
        unsigned long long a, b, c;
        if (sscanf(line, "{\"k\": %d, \"stream\": %d, \"launch_ns\": %llu, \"end_lo_ns\": %llu, "
                         "\"end_hi_ns\": %llu}", &i, &s, &a, &b, &c) == 5 && i == nk && nk < MAXK) {
            k[nk++] = (struct kern){a, b, c};
        } else if (tail) {
            snprintf(tail, tail_len, "%s", line);
        }
    }
    return nk;
}

/* A number from the shim's stats file (written at the program's exit). */
static long stat_of(const struct prog *p, const char *field)
{
    char buf[65536], key[96];
    FILE *fp = fopen(p->stats, "r");
    size_t n;
    const char *q;

    assert_non_null(fp);
    n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    snprintf(key, sizeof(key), "\"%s\": ", field);
    q = strstr(buf, key);
    assert_non_null(q);
    return atol(q + strlen(key));
}

/* The bounds gate_prog gives are a few us apart (its reference event is
 * pinned between two host clock reads); comparisons with host times allow
 * this much more. */
#define SLACK_NS 100000ull

static uint64_t start_lo(const struct kern *k)
{
    return k->end_lo - DUR_NS + SLACK_NS;
}

static uint64_t start_hi(const struct kern *k)
{
    return k->end_hi - DUR_NS - SLACK_NS;
}

static struct mosaic_sched_client *hp_client(const struct dmn *d)
{
    struct mosaic_sched_client_opts o = {.socket_path = d->sock, .role = MOSAIC_SCHED_ROLE_HP,
                                         .reconnect_ms = 50};
    struct mosaic_sched_client *c;

    assert_int_equal(mosaic_sched_client_open(&o, &c), 0);
    assert_int_equal(mosaic_sched_client_state(c), MOSAIC_SCHED_CONNECTED);
    return c;
}

#define WAIT_UNTIL STU_WAIT_UNTIL

/* A daemon, an HP client with request 1 open, and gate_prog as BE with
 * args: returned once the first want is decided and held (all of the
 * program's launches are on the device by then), and 200 ms more. */
static struct mosaic_sched_client *be_held_by_request(struct dmn *d, struct prog *p,
                                                      const char *const *env, const char *args)
{
    struct mosaic_sched_client *hp;

    dmn_start(d, NULL);
    hp = hp_client(d);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 0), 0);
    prog_start(p, d, "be", env, args);
    WAIT_UNTIL(be_waiting(d) >= 1, 20000);
    stu_msleep(200);
    return hp;
}

/* ---- tests --------------------------------------------------------------- */

/*
 * Eight kernels enqueued into one BE stream while an HP request holds BE
 * work: every launch returns at once (the stream is 8 deep), no kernel
 * starts before the request ends, each starts after the one before it
 * finished (the daemon grants kernel n once n - 1 is done), and a second
 * request stops the stream mid-way: nothing starts while it is open.
 */
static void be_stream_8_deep_starts_each_kernel_after_its_grant(void **state)
{
    struct dmn d;
    struct prog p;
    struct kern k[MAXK];
    struct mosaic_sched_client *hp;
    uint64_t t1, t2, t3;
    int n, after_r2 = 0;

    (void)state;
    hp = be_held_by_request(&d, &p, NULL, "--kernels 8 --us 20000");
    t1 = now_ns();
    assert_int_equal(mosaic_sched_hp_request_end(hp, 1, 0), 0);
    /* About three and a half kernels in, a second request holds the rest. */
    stu_msleep(70);
    t2 = now_ns();
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 2, 0), 0);
    stu_msleep(250);
    t3 = now_ns();
    assert_int_equal(mosaic_sched_hp_request_end(hp, 2, 0), 0);
    n = prog_finish(&p, k, NULL, 0);
    assert_int_equal(n, 8);
    for (int i = 0; i < n; i++) {
        /* Launched long before it could start: the launch did not wait. */
        assert_true(k[i].launch < t1);
        /* Started only after the first request ended (its grant). */
        assert_true(start_lo(&k[i]) >= t1);
        /* Started after its predecessor on the stream finished (the same
         * reference event, so the comparison is exact up to rounding). */
        if (i > 0)
            assert_true(start_lo(&k[i]) >= k[i - 1].end_lo);
        /* Nothing started while the second request was open (after the
         * one kernel the daemon may have granted just before it saw the
         * request begin). */
        assert_true(start_hi(&k[i]) < t2 + 50000000ull || start_lo(&k[i]) >= t3);
        after_r2 += start_lo(&k[i]) >= t3;
    }
    assert_true(after_r2 >= 2);
    assert_int_equal(stat_of(&p, "be_gated_device"), 8);
    assert_int_equal(stat_of(&p, "be_gate_fallbacks"), 0);
    assert_true(metric(&d, "mosaic_be_gated_grants_total") >= 8);
    mosaic_sched_client_close(hp);
    dmn_stop(&d);
}

/*
 * A library's kernel (a CUkernel, as the CUDA runtime launches them) under
 * lazy module loading: its first launch loads it, and the load waits for
 * the context's queued work, the gate's unreleased wait included (the
 * fake driver models the H200's behaviour, tests/fakecuda). The gate loads
 * the kernel before it enqueues the first wait, so even the first of eight
 * launches returns before the grant; without that load the first launch
 * returned only when the HP request ended.
 */
static void first_launch_of_a_lazy_library_kernel_does_not_wait(void **state)
{
    static const char *const lazy[] = {"CUDA_MODULE_LOADING", "LAZY", NULL};
    struct dmn d;
    struct prog p;
    struct kern k[MAXK];
    struct mosaic_sched_client *hp;
    uint64_t t1;

    (void)state;
    hp = be_held_by_request(&d, &p, lazy, "--kernels 8 --us 20000 --library");
    t1 = now_ns();
    assert_int_equal(mosaic_sched_hp_request_end(hp, 1, 0), 0);
    assert_int_equal(prog_finish(&p, k, NULL, 0), 8);
    for (int i = 0; i < 8; i++) {
        assert_true(k[i].launch < t1);
        assert_true(start_lo(&k[i]) >= t1);
    }
    assert_int_equal(stat_of(&p, "be_gated_device"), 8);
    assert_int_equal(stat_of(&p, "be_gate_loads"), 1);
    assert_int_equal(stat_of(&p, "be_gate_fallbacks"), 0);
    mosaic_sched_client_close(hp);
    dmn_stop(&d);
}

/*
 * A driver that refuses stream memory operations (the fake driver's
 * MOSAIC_SIMGPU_NO_MEMOPS), and MOSAIC_BE_GATE=host: the kernel is held on
 * the host, in the launch call, and the shim counts why.
 */
static void host_hold_when_memops_refused_or_asked(void **state)
{
    static const char *const refuse[] = {"MOSAIC_SIMGPU_NO_MEMOPS", "1", NULL};
    static const char *const host[] = {"MOSAIC_BE_GATE", "host", NULL};
    const char *const *envs[2] = {refuse, host};
    struct dmn d;
    struct kern k[MAXK];

    (void)state;
    dmn_start(&d, NULL);
    for (int run = 0; run < 2; run++) {
        struct mosaic_sched_client *hp = hp_client(&d);
        struct prog p;
        int held0 = be_waiting(&d);
        uint64_t t1;

        assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 0), 0);
        prog_start(&p, &d, "be", envs[run], "--kernels 3 --us 20000");
        WAIT_UNTIL(be_waiting(&d) > held0, 20000);
        stu_msleep(150);
        t1 = now_ns();
        assert_int_equal(mosaic_sched_hp_request_end(hp, 1, 0), 0);
        assert_int_equal(prog_finish(&p, k, NULL, 0), 3);
        /* The first launch call itself waited for the grant. */
        assert_true(k[0].launch >= t1);
        assert_true(start_lo(&k[0]) >= t1);
        assert_int_equal(stat_of(&p, "be_gated_device"), 0);
        assert_int_equal(stat_of(&p, "be_held_host"), 3);
        assert_int_equal(stat_of(&p, "be_gate_fallbacks"), run == 0 ? 3 : 0);
        mosaic_sched_client_close(hp);
    }
    dmn_stop(&d);
}

/*
 * The daemon is SIGKILLed while four BE kernels wait on the device. With
 * be-on-timeout run the shim's monitor releases the waits be-timeout-ms
 * (300) after it noticed; with hold they wait until a daemon is back, and
 * then run (the new daemon never heard of them).
 */
static void daemon_killed_while_kernels_wait_on_the_device(void **state)
{
    struct dmn d;
    struct prog p;
    struct kern k[MAXK];
    struct mosaic_sched_client *hp;
    uint64_t tk, tr;

    (void)state;
    dmn_start(&d, NULL);
    hp = hp_client(&d);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 0), 0);
    prog_start(&p, &d, "be", NULL, "--kernels 4 --us 20000");
    WAIT_UNTIL(be_waiting(&d) >= 1, 20000);
    stu_msleep(100);
    tk = now_ns();
    dmn_kill(&d, SIGKILL);
    assert_int_equal(prog_finish(&p, k, NULL, 0), 4);
    for (int i = 0; i < 4; i++)
        assert_true(start_lo(&k[i]) >= tk + 290000000ull);
    assert_int_equal(stat_of(&p, "be_gated_device"), 4);
    mosaic_sched_client_close(hp);
    dmn_stop(&d);

    dmn_start(&d, "be-on-timeout hold");
    hp = hp_client(&d);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 0), 0);
    prog_start(&p, &d, "be", NULL, "--kernels 2 --us 20000");
    WAIT_UNTIL(be_waiting(&d) >= 1, 20000);
    stu_msleep(100);
    dmn_kill(&d, SIGKILL);
    stu_msleep(900); /* three times the timeout: still held */
    tr = now_ns();
    dmn_spawn(&d);
    assert_int_equal(prog_finish(&p, k, NULL, 0), 2);
    for (int i = 0; i < 2; i++)
        assert_true(start_lo(&k[i]) >= tr);
    mosaic_sched_client_close(hp);
    dmn_stop(&d);
}

/*
 * HP: six launches on two streams inside one explicit request whose end is
 * posted right after the last launch, before the kernels ran. The device
 * writes each stream's completion word in order, and the daemon ends the
 * request when the device finished it, not when the host said so: its
 * latency is at least the three 20 ms kernels of one stream.
 */
static void hp_completion_words_advance_in_order(void **state)
{
    struct dmn d;
    struct prog p;
    struct kern k[MAXK];
    char tail[256];
    const char *m;

    static const char *const on[] = {"MOSAIC_HP_COMPLETION", "kernel", NULL};

    (void)state;
    dmn_start(&d, NULL);
    prog_start(&p, &d, "hp", on, "--kernels 6 --us 20000 --streams 2 --hp-request --watch-hp");
    assert_int_equal(prog_finish(&p, k, tail, sizeof(tail)), 6);
    assert_string_equal(tail, "{\"hp_done_in_order\": 1, \"hp_done_final\": [3, 3]}");
    assert_int_equal(stat_of(&p, "hp_completion_writes"), 6);
    WAIT_UNTIL(metric(&d, "mosaic_hp_request_duration_seconds_count") == 1, 5000);
    assert_int_equal((int)metric(&d, "mosaic_hp_device_completions_total"), 6);
    assert_int_equal((int)metric(&d, "mosaic_hp_request_ends_deferred_total"), 1);
    m = scrape(&d);
    assert_non_null(strstr(m, "mosaic_hp_request_duration_seconds_bucket{le=\"0.05\"} 0\n"));
    dmn_stop(&d);
}

/* A bucket of the daemon's HP request latency histogram (le in seconds). */
static int bucket(const struct dmn *d, const char *le)
{
    const char *m = scrape(d), *p;
    char key[128];

    snprintf(key, sizeof(key), "mosaic_hp_request_duration_seconds_bucket{le=\"%s\"} ", le);
    p = strstr(m, key);
    return p ? atoi(p + strlen(key)) : -1;
}

/*
 * HP, the default (MOSAIC_HP_COMPLETION unset: a write at each request's
 * end): an explicit request ended before its kernels ran is ended by the
 * daemon when the device's word shows them done, with one completion write
 * for the whole request instead of one per launch.
 */
static void hp_request_end_write_defers_an_early_end(void **state)
{
    struct dmn d;
    struct prog p;
    struct kern k[MAXK];

    (void)state;
    dmn_start(&d, NULL);
    prog_start(&p, &d, "hp", NULL, "--kernels 4 --us 20000 --hp-request");
    assert_int_equal(prog_finish(&p, k, NULL, 0), 4);
    assert_int_equal(stat_of(&p, "hp_completion_writes"), 1);
    WAIT_UNTIL(metric(&d, "mosaic_hp_request_duration_seconds_count") == 1, 5000);
    assert_int_equal((int)metric(&d, "mosaic_hp_request_ends_deferred_total"), 1);
    assert_int_equal((int)metric(&d, "mosaic_hp_request_ends_device_total"), 1);
    /* Four 20 ms kernels on one stream: at least 80 ms, not the host's
     * microseconds between begin and end. */
    assert_int_equal(bucket(&d, "0.05"), 0);
    dmn_stop(&d);
}

/*
 * HP: a request whose host end comes 400 ms after its GPU work finished (a
 * synchronisation, then CPU work) is accounted to the daemon and its
 * policy at the device's time when every launch had a completion write
 * (MOSAIC_HP_COMPLETION=kernel): two 20 ms kernels, so under 0.2 s. With
 * the writes off the same program's request lasts past the host's end.
 */
static void hp_late_host_end_is_timed_by_the_device(void **state)
{
    static const char *const kernel[] = {"MOSAIC_HP_COMPLETION", "kernel", NULL};
    static const char *const off[] = {"MOSAIC_HP_COMPLETION", "off", NULL};
    struct dmn d;
    struct prog p;
    struct kern k[MAXK];

    (void)state;
    dmn_start(&d, NULL);
    prog_start(&p, &d, "hp", kernel, "--kernels 2 --us 20000 --late-end 400");
    assert_int_equal(prog_finish(&p, k, NULL, 0), 2);
    assert_int_equal(stat_of(&p, "hp_completion_writes"), 2);
    WAIT_UNTIL(metric(&d, "mosaic_hp_request_duration_seconds_count") == 1, 5000);
    assert_int_equal((int)metric(&d, "mosaic_hp_request_ends_device_total"), 1);
    assert_int_equal(bucket(&d, "0.02"), 0);
    assert_int_equal(bucket(&d, "0.2"), 1);
    dmn_stop(&d);

    dmn_start(&d, NULL);
    prog_start(&p, &d, "hp", off, "--kernels 2 --us 20000 --late-end 400");
    assert_int_equal(prog_finish(&p, k, NULL, 0), 2);
    assert_int_equal(stat_of(&p, "hp_completion_writes"), 0);
    WAIT_UNTIL(metric(&d, "mosaic_hp_request_duration_seconds_count") == 1, 5000);
    assert_int_equal((int)metric(&d, "mosaic_hp_request_ends_device_total"), 0);
    assert_int_equal(bucket(&d, "0.2"), 0);
    dmn_stop(&d);
}

/*
 * HP, the default mode: a request of one CUDA graph (four 20 ms kernels)
 * whose host end comes 400 ms after the synchronisation is timed by the
 * one completion write behind the graph: under 0.2 s, not the host's
 * half second.
 */
static void hp_graph_request_is_timed_by_its_write(void **state)
{
    struct dmn d;
    struct prog p;
    struct kern k[MAXK];

    (void)state;
    dmn_start(&d, NULL);
    prog_start(&p, &d, "hp", NULL, "--kernels 4 --us 20000 --one-graph --late-end 400");
    assert_int_equal(prog_finish(&p, k, NULL, 0), 1);
    assert_int_equal(stat_of(&p, "hp_completion_writes"), 1);
    WAIT_UNTIL(metric(&d, "mosaic_hp_request_duration_seconds_count") == 1, 5000);
    assert_int_equal((int)metric(&d, "mosaic_hp_device_completions_total"), 1);
    assert_int_equal((int)metric(&d, "mosaic_hp_request_ends_device_total"), 1);
    assert_int_equal(bucket(&d, "0.05"), 0);
    assert_int_equal(bucket(&d, "0.2"), 1);
    dmn_stop(&d);
}

/*
 * HP, the default mode, a learned request (no markers: the first launch
 * begins it, the synchronisation ends it): two 20 ms kernels whose
 * cuStreamSynchronize returns 400 ms after they finished
 * (FAKECUDA_SYNC_STALL_MS, a host that ran something else first). The
 * write the shim enqueues as the synchronisation begins times the request
 * by the device: under 0.2 s. With the writes off it lasts the host's
 * half second.
 */
static void hp_learned_request_is_timed_by_the_device(void **state)
{
    static const char *const on[] = {"FAKECUDA_SYNC_STALL_MS", "400", NULL};
    static const char *const off[] = {"FAKECUDA_SYNC_STALL_MS", "400", "MOSAIC_HP_COMPLETION",
                                      "off", NULL};
    struct dmn d;
    struct prog p;
    struct kern k[MAXK];

    (void)state;
    dmn_start(&d, NULL);
    prog_start(&p, &d, "hp", on, "--kernels 2 --us 20000 --settle 300");
    assert_int_equal(prog_finish(&p, k, NULL, 0), 2);
    assert_int_equal(stat_of(&p, "hp_completion_writes"), 1);
    WAIT_UNTIL(metric(&d, "mosaic_hp_request_duration_seconds_count") == 1, 5000);
    assert_int_equal((int)metric(&d, "mosaic_hp_request_ends_device_total"), 1);
    assert_int_equal(bucket(&d, "0.02"), 0);
    assert_int_equal(bucket(&d, "0.2"), 1);
    dmn_stop(&d);

    dmn_start(&d, NULL);
    prog_start(&p, &d, "hp", off, "--kernels 2 --us 20000 --settle 300");
    assert_int_equal(prog_finish(&p, k, NULL, 0), 2);
    assert_int_equal(stat_of(&p, "hp_completion_writes"), 0);
    WAIT_UNTIL(metric(&d, "mosaic_hp_request_duration_seconds_count") == 1, 5000);
    assert_int_equal((int)metric(&d, "mosaic_hp_request_ends_device_total"), 0);
    assert_int_equal(bucket(&d, "0.2"), 0);
    dmn_stop(&d);
}

static int setup(void **state)
{
    (void)state;
    snprintf(simgpu_name, sizeof(simgpu_name), "gate-test-%d", (int)getpid());
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static int teardown(void **state)
{
    char cmd[256];

    (void)state;
    stu_kill_tracked();
    if (snprintf(cmd, sizeof(cmd), "%s rm %s >/dev/null 2>&1", SIMGPU_BIN, simgpu_name) <
            (int)sizeof(cmd) &&
        system(cmd) != 0)
        print_error("could not remove the simulated GPU %s\n", simgpu_name);
    return 0;
}

/* Whether the daemon's log holds text. */
static int log_has(const struct dmn *d, const char *text)
{
    static char buf[262144];
    FILE *fp = fopen(d->log, "r");
    size_t n;

    if (!fp)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
}

/*
 * A BE graph is one admission unit (docs/sched.md, "BE graphs"): two
 * launches of a graph of three 10 ms kernels into one stream, while an HP
 * request holds BE work (policy orion, which treats a graph without
 * profiles as one unknown kernel: held while HP is in flight). The daemon
 * learns the graph's three kernels (its log), grants each launch once (two
 * gated grants, not six), and no kernel of either graph starts before the
 * request ended: each graph ran whole after its grant. A graph of 65
 * kernels, more than a definition carries, is asked for as one unknown
 * kernel: the shim says so, the daemon never hears of its kernels, and it
 * still runs once the request ended.
 */
static void be_graph_is_one_admission_unit(void **state)
{
    struct dmn d;
    struct prog p;
    struct kern k[MAXK];
    struct mosaic_sched_client *hp;
    char args[256], errlog[160];
    uint64_t t1;
    const uint64_t graph_ns = 3 * 10000000ull;
    int n;

    (void)state;
    dmn_start(&d, "policy orion\nlog-level info");
    hp = hp_client(&d);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 0), 0);
    prog_start(&p, &d, "be", NULL, "--kernels 2 --graph 3 --us 10000");
    WAIT_UNTIL(be_waiting(&d) >= 1, 20000);
    WAIT_UNTIL(log_has(&d, ": 3 kernels, not all predicted"), 20000);
    stu_msleep(200);
    t1 = now_ns();
    assert_int_equal(mosaic_sched_hp_request_end(hp, 1, 0), 0);
    n = prog_finish(&p, k, NULL, 0);
    assert_int_equal(n, 2);
    for (int i = 0; i < n; i++) {
        assert_true(k[i].launch < t1);
        /* The graph's first kernel started after the request's end. */
        assert_true(k[i].end_lo - graph_ns + SLACK_NS >= t1);
        if (i > 0)
            assert_true(k[i].end_lo - graph_ns + SLACK_NS >= k[i - 1].end_lo);
    }
    assert_int_equal(stat_of(&p, "be_gated_device"), 2);
    assert_true(metric(&d, "mosaic_be_gated_grants_total") == 2);

    /* More kernels than a definition carries. */
    snprintf(errlog, sizeof(errlog), "%s/shim.err", d.dir);
    snprintf(args, sizeof(args), "--kernels 1 --graph 65 --us 1000 2>%s", errlog);
    {
        const char *env[] = {"MOSAIC_LOG", "warn", NULL};
        assert_int_equal(mosaic_sched_hp_request_begin(hp, 2, 0), 0);
        prog_start(&p, &d, "be", env, args);
        WAIT_UNTIL(be_waiting(&d) >= 2, 20000);
        stu_msleep(100);
        t1 = now_ns();
        assert_int_equal(mosaic_sched_hp_request_end(hp, 2, 0), 0);
        n = prog_finish(&p, k, NULL, 0);
    }
    assert_int_equal(n, 1);
    assert_true(k[0].end_lo - 65 * 1000000ull + SLACK_NS >= t1);
    assert_false(log_has(&d, ": 65 kernels"));
    {
        char buf[8192];
        FILE *fp = fopen(errlog, "r");
        size_t got;
        assert_non_null(fp);
        got = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        buf[got] = '\0';
        if (!strstr(buf, "65 kernels, more than the 64 a BE graph definition carries"))
            fail_msg("the shim did not say why the graph is unknown:\n%s", buf);
    }
    mosaic_sched_client_close(hp);
    dmn_stop(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(be_stream_8_deep_starts_each_kernel_after_its_grant),
        cmocka_unit_test(first_launch_of_a_lazy_library_kernel_does_not_wait),
        cmocka_unit_test(host_hold_when_memops_refused_or_asked),
        cmocka_unit_test(daemon_killed_while_kernels_wait_on_the_device),
        cmocka_unit_test(hp_completion_words_advance_in_order),
        cmocka_unit_test(hp_learned_request_is_timed_by_the_device),
        cmocka_unit_test(be_graph_is_one_admission_unit),
        cmocka_unit_test(hp_request_end_write_defers_an_early_end),
        cmocka_unit_test(hp_late_host_end_is_timed_by_the_device),
        cmocka_unit_test(hp_graph_request_is_timed_by_its_write),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
