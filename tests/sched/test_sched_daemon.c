/*
 * mosaic-sched end to end: the built daemon binary, with the client
 * library standing in for the shim (and raw sockets standing in for a
 * hostile client).
 *
 * Timing on a loaded 2-core machine: every wait is "until it happens, at
 * most several seconds", and the only assertions about time are ones that
 * load cannot make true by accident (a held kernel is still held after
 * 150 ms; a BE kernel waited at least the timeout before running
 * uncontrolled).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "sched_test_util.h"

#define RING 64

struct dmn {
    pid_t pid;
    char dir[64];
    char sock[128];
    char conf[128];
    char log[128];
    char extra[512];
    unsigned metrics_port;
};

static void dmn_spawn(struct dmn *d)
{
    char text[1024];
    int n;

    /* heartbeat-ms 100: a client declares the daemon gone after 500 ms
     * without a beat, which a loaded machine does not reach by accident. */
    n = snprintf(text, sizeof(text), "socket %s\nmetrics-port %u\nheartbeat-ms 100\n"
                 "ring-entries %d\nbe-timeout-ms 300\nlog-level debug\nmps off\n%s\n",
                 d->sock, d->metrics_port, RING, d->extra);
    assert_true(n > 0 && (size_t)n < sizeof(text));
    d->pid = stu_daemon_spawn(MOSAIC_SCHED_BIN, d->conf, text, d->log, d->sock);
}

/* Starts a daemon in a fresh directory; extra is appended to its config. */
static void dmn_start(struct dmn *d, const char *extra)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->dir, sizeof(d->dir), "/tmp/mosaic-d-XXXXXX");
    assert_non_null(mkdtemp(d->dir));
    snprintf(d->sock, sizeof(d->sock), "%s/s.sock", d->dir);
    snprintf(d->conf, sizeof(d->conf), "%s/d.conf", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/d.log", d->dir);
    snprintf(d->extra, sizeof(d->extra), "%s", extra ? extra : "rule requested any");
    dmn_spawn(d);
}

static int dmn_kill(struct dmn *d, int sig)
{
    int status = 0;

    if (d->pid <= 0)
        return -1;
    kill(d->pid, sig);
    waitpid(d->pid, &status, 0);
    stu_untrack(d->pid);
    d->pid = 0;
    return status;
}

static void dmn_stop(struct dmn *d)
{
    dmn_kill(d, SIGTERM);
    stu_rmdir(d->dir);
}

static int log_has(const struct dmn *d, const char *text)
{
    FILE *fp = fopen(d->log, "r");
    char line[2048];
    int found = 0;

    if (!fp)
        return 0;
    while (!found && fgets(line, sizeof(line), fp))
        found = strstr(line, text) != NULL;
    fclose(fp);
    return found;
}

/* The daemon's status JSON through the protocol (as `mosaic-sched status`). */
static char *status(const struct dmn *d)
{
    static char buf[MOSAIC__SCHED_STATUS_MAX];
    struct mosaic__msg_hdr h;
    int fd = stu_connect(d->sock);
    long n;

    assert_true(fd >= 0);
    mosaic__msg_init(&h, MOSAIC__MSG_STATUS, sizeof(h));
    assert_int_equal(mosaic__send_msg(fd, &h, sizeof(h), -1), 0);
    n = mosaic__recv_msg(fd, buf, sizeof(buf) - 1, NULL, 0);
    close(fd);
    assert_true(n > (long)sizeof(h));
    buf[n] = '\0';
    return buf + sizeof(h);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static struct mosaic_sched_client *client(const struct dmn *d, int role)
{
    struct mosaic_sched_client_opts o = {.socket_path = d->sock, .role = role,
                                         .reconnect_ms = 50, .be_timeout_ms = 300};
    struct mosaic_sched_client *c;

    assert_int_equal(mosaic_sched_client_open(&o, &c), 0);
    assert_int_equal(mosaic_sched_client_state(c), MOSAIC_SCHED_CONNECTED);
    assert_int_equal(mosaic_sched_client_role(c), role);
    return c;
}

#define WAIT_UNTIL STU_WAIT_UNTIL

/* A BE admission on its own thread, to watch it wait. */
struct admit {
    struct mosaic_sched_client *c;
    pthread_t t;
    _Atomic int done;
    int rc, outcome;
};

static void *admit_thread(void *arg)
{
    struct admit *a = arg;

    a->rc = mosaic_sched_be_admit(a->c, 7, 1000, &a->outcome);
    atomic_store(&a->done, 1);
    return NULL;
}

static void admit_start(struct admit *a, struct mosaic_sched_client *c)
{
    memset(a, 0, sizeof(*a));
    a->c = c;
    assert_int_equal(pthread_create(&a->t, NULL, admit_thread, a), 0);
}

static void admit_join(struct admit *a)
{
    WAIT_UNTIL(atomic_load(&a->done), 10000);
    pthread_join(a->t, NULL);
}

/* Every listed client's heartbeat moved within the last second. */
static int client_beats_fresh(const char *s)
{
    int n = 0;

    for (const char *p = s; (p = strstr(p, "\"heartbeat_age_ms\":")); n++) {
        p += strlen("\"heartbeat_age_ms\":");
        if (atof(p) >= 1000.0)
            return 0;
    }
    return n > 0;
}

/* ---- tests --------------------------------------------------------------- */

static void handshake_status_and_metrics(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp, *be;
    const char *m;
    char *s;
    int outcome;

    (void)state;
    memset(&d, 0, sizeof(d));
    dmn_start(&d, NULL);
    dmn_kill(&d, SIGTERM);
    d.metrics_port = stu_free_port();
    dmn_spawn(&d);
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 1000000), 0);
    assert_int_equal(mosaic_sched_hp_launch(hp, 11), 0);
    assert_int_equal(mosaic_sched_hp_complete(hp, 11, 2000), 0);
    assert_int_equal(mosaic_sched_hp_request_end(hp, 1, 1000000 + 3000000), 0);
    assert_int_equal(mosaic_sched_be_admit(be, 5, 100, &outcome), 0);
    assert_int_equal(outcome, MOSAIC_SCHED_GRANTED);
    assert_int_equal(mosaic_sched_be_done(be, 5), 0);

    /* The clients' monitors bump their heartbeat (every 50 ms here): after
     * longer than the freshness bound, every beat is still recent. */
    stu_msleep(1200);
    WAIT_UNTIL(client_beats_fresh(status(&d)), 5000);
    s = status(&d);
    assert_non_null(strstr(s, "\"role\":\"hp\""));
    assert_non_null(strstr(s, "\"role\":\"be\""));
    assert_non_null(strstr(s, "\"policy\":\"hold-be\""));
    assert_non_null(strstr(s, "\"concurrent\":false"));
    m = stu_scrape(d.metrics_port);
    assert_non_null(strstr(m, "HTTP/1.0 200 OK"));
    assert_non_null(strstr(m, "mosaic_clients{role=\"hp\"} 1\n"));
    assert_non_null(strstr(m, "mosaic_clients{role=\"be\"} 1\n"));
    assert_non_null(strstr(m, "mosaic_admissions_total{decision=\"immediate\"} 1\n"));
    /* The 3 ms request lands in the 5 ms bucket, not the 2 ms one. */
    assert_non_null(strstr(m, "mosaic_hp_request_duration_seconds_bucket{le=\"0.002\"} 0\n"));
    assert_non_null(strstr(m, "mosaic_hp_request_duration_seconds_bucket{le=\"0.005\"} 1\n"));
    assert_non_null(strstr(m, "mosaic_hp_request_duration_seconds_count 1\n"));
    mosaic_sched_client_close(hp);
    mosaic_sched_client_close(be);
    dmn_stop(&d);
}

/* Sends raw bytes as a first message; returns the refusal code (or 0 when
 * the daemon answered otherwise) and checks that it hung up. */
static int hostile(const struct dmn *d, const void *buf, size_t len)
{
    union {
        char b[MOSAIC__SCHED_MSG_MAX];
        struct mosaic__msg_hdr a;
    } in;
    struct mosaic__msg m;
    struct timeval tv = {.tv_sec = 10};
    char why[200];
    int fd = stu_connect(d->sock), code = 0;
    long n;

    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
    n = mosaic__recv_msg(fd, in.b, sizeof(in.b), NULL, 0);
    if (n > 0 && mosaic__msg_parse(in.b, (size_t)n, &m, why, sizeof(why)) == 0 &&
        m.h.type == MOSAIC__MSG_REFUSE)
        code = m.u.refuse.code;
    assert_int_equal(mosaic__recv_msg(fd, in.b, sizeof(in.b), NULL, 0), 0); /* closed */
    close(fd);
    return code;
}

static void hostile_handshakes_are_refused(void **state)
{
    struct dmn d;
    struct mosaic__msg_hello h;
    struct mosaic__msg_hdr bell;
    char big[2048], garbage[64];
    struct mosaic_sched_client *hp, *be;
    int outcome;

    (void)state;
    dmn_start(&d, NULL);
    hp = client(&d, MOSAIC_SCHED_ROLE_HP); /* a bystander that must not notice */
    memset(&h, 0, sizeof(h));
    mosaic__msg_init(&h.h, MOSAIC__MSG_HELLO, sizeof(h));
    h.pid = getpid();
    h.h.magic = 0xdeadbeef;
    assert_int_equal(hostile(&d, &h, sizeof(h)), MOSAIC_EPROTO);
    h.h.magic = MOSAIC__SCHED_MAGIC;
    h.h.version = MOSAIC__SCHED_PROTO + 1;
    assert_int_equal(hostile(&d, &h, sizeof(h)), MOSAIC_EVERSION);
    h.h.version = MOSAIC__SCHED_PROTO;
    assert_int_equal(hostile(&d, &h, sizeof(h) - 6), MOSAIC_EPROTO); /* truncated */
    memset(big, 'A', sizeof(big));
    memcpy(big, &h, sizeof(h));
    assert_int_equal(hostile(&d, big, sizeof(big)), MOSAIC_EPROTO); /* oversized */
    h.role = 9;
    assert_int_equal(hostile(&d, &h, sizeof(h)), MOSAIC_EPROTO);
    mosaic__msg_init(&bell, MOSAIC__MSG_DOORBELL, sizeof(bell));
    assert_int_equal(hostile(&d, &bell, sizeof(bell)), MOSAIC_EPROTO);
    for (size_t i = 0; i < sizeof(garbage); i++)
        garbage[i] = (char)(i * 37 + 11);
    assert_int_equal(hostile(&d, garbage, sizeof(garbage)), MOSAIC_EPROTO);
    assert_true(log_has(&d, "rejected: bad magic"));
    assert_true(log_has(&d, "rejected: protocol version"));

    /* The daemon still serves: the bystander works and a newcomer joins. */
    assert_int_equal(mosaic_sched_client_state(hp), MOSAIC_SCHED_CONNECTED);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 0), 0);
    assert_int_equal(mosaic_sched_hp_request_end(hp, 1, 0), 0);
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(mosaic_sched_be_admit(be, 1, 1, &outcome), 0);
    assert_int_equal(outcome, MOSAIC_SCHED_GRANTED);
    assert_non_null(strstr(status(&d), "\"protocol_errors\":7"));
    mosaic_sched_client_close(hp);
    mosaic_sched_client_close(be);
    dmn_stop(&d);
}

static void role_rules_refuse_with_a_reason(void **state)
{
    struct mosaic_sched_client_opts o = {.role = MOSAIC_SCHED_ROLE_HP, .reconnect_ms = 50};
    struct mosaic_sched_client *c;
    struct dmn d;
    char extra[128], reason[300];

    (void)state;
    snprintf(extra, sizeof(extra), "rule hp uid %u\n", (unsigned)geteuid() + 1);
    dmn_start(&d, extra);
    o.socket_path = d.sock;
    assert_int_equal(mosaic_sched_client_open(&o, &c), MOSAIC_EREFUSED);
    assert_int_equal(mosaic_sched_client_state(c), MOSAIC_SCHED_DISCONNECTED);
    mosaic_sched_client_reason(c, reason, sizeof(reason));
    assert_non_null(strstr(reason, "no rule grants a role"));
    /* HP calls return at once, uncontrolled. */
    assert_int_equal(mosaic_sched_hp_launch(c, 1), MOSAIC_EDISCONNECTED);
    mosaic_sched_client_close(c);
    dmn_stop(&d);

    snprintf(extra, sizeof(extra), "rule be uid %u\n", (unsigned)geteuid());
    dmn_start(&d, extra);
    o.socket_path = d.sock;
    assert_int_equal(mosaic_sched_client_open(&o, &c), MOSAIC_EREFUSED);
    mosaic_sched_client_reason(c, reason, sizeof(reason));
    assert_non_null(strstr(reason, "MOSAIC_ROLE=hp was requested"));
    mosaic_sched_client_close(c);
    o.role = MOSAIC_SCHED_ROLE_NONE; /* no request: the rule's role */
    assert_int_equal(mosaic_sched_client_open(&o, &c), 0);
    assert_int_equal(mosaic_sched_client_role(c), MOSAIC_SCHED_ROLE_BE);
    mosaic_sched_client_close(c);
    assert_true(log_has(&d, "refused pid"));
    /* An asynchronous open returns at once; the monitor connects. */
    o.async_connect = 1;
    assert_int_equal(mosaic_sched_client_open(&o, &c), 0);
    WAIT_UNTIL(mosaic_sched_client_state(c) == MOSAIC_SCHED_CONNECTED, 5000);
    assert_int_equal(mosaic_sched_client_role(c), MOSAIC_SCHED_ROLE_BE);
    mosaic_sched_client_close(c);
    dmn_stop(&d);
}

static void be_held_while_hp_request_in_flight(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp, *be;
    struct admit a;

    (void)state;
    dmn_start(&d, NULL);
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 42, 0), 0);
    WAIT_UNTIL(strstr(status(&d), "\"hp_requests_in_flight\":1"), 5000);
    admit_start(&a, be);
    stu_msleep(150);
    assert_false(atomic_load(&a.done)); /* held */
    assert_non_null(strstr(status(&d), "\"be_waiting\":1"));
    assert_int_equal(mosaic_sched_hp_request_end(hp, 42, 0), 0);
    admit_join(&a);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.outcome, MOSAIC_SCHED_GRANTED);
    assert_non_null(strstr(status(&d), "\"after_hold\":1"));
    mosaic_sched_client_close(hp);
    mosaic_sched_client_close(be);
    dmn_stop(&d);

    /* The no-control policy admits the same kernel at once. */
    dmn_start(&d, "rule requested any\npolicy none");
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 42, 0), 0);
    WAIT_UNTIL(strstr(status(&d), "\"hp_requests_in_flight\":1"), 5000);
    admit_start(&a, be);
    admit_join(&a);
    assert_int_equal(a.outcome, MOSAIC_SCHED_GRANTED);
    assert_non_null(strstr(status(&d), "\"immediate\":1"));
    mosaic_sched_client_close(hp);
    mosaic_sched_client_close(be);
    dmn_stop(&d);
}

static void an_hp_request_that_never_ends_expires(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp, *be;
    struct admit a;

    (void)state;
    dmn_start(&d, "rule requested any\nhp-request-timeout-ms 300");
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 5, 0), 0);
    WAIT_UNTIL(strstr(status(&d), "\"hp_requests_in_flight\":1"), 5000);
    admit_start(&a, be);
    admit_join(&a); /* granted once the request expired, with no end event */
    assert_int_equal(a.outcome, MOSAIC_SCHED_GRANTED);
    assert_true(log_has(&d, "HP request 5 open for more than 300 ms: treated as ended"));
    mosaic_sched_client_close(hp);
    mosaic_sched_client_close(be);
    dmn_stop(&d);
}

static void client_killed_mid_request_frees_its_state(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *be;
    struct admit a;
    int pipefd[2];
    pid_t child;
    char ch;

    (void)state;
    dmn_start(&d, NULL);
    assert_int_equal(pipe(pipefd), 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct mosaic_sched_client_opts o = {.socket_path = d.sock,
                                             .role = MOSAIC_SCHED_ROLE_HP};
        struct mosaic_sched_client *c;
        if (mosaic_sched_client_open(&o, &c) != 0 ||
            mosaic_sched_hp_request_begin(c, 1, 0) != 0)
            _exit(1);
        if (write(pipefd[1], "x", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    assert_int_equal(read(pipefd[0], &ch, 1), 1);
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    WAIT_UNTIL(strstr(status(&d), "\"hp_requests_in_flight\":1"), 5000);
    admit_start(&a, be);
    stu_msleep(100);
    assert_false(atomic_load(&a.done));
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    admit_join(&a);
    assert_int_equal(a.outcome, MOSAIC_SCHED_GRANTED);
    assert_non_null(strstr(status(&d), "\"hp_requests_in_flight\":0"));
    assert_true(log_has(&d, "its state is freed"));
    close(pipefd[0]);
    close(pipefd[1]);
    mosaic_sched_client_close(be);
    dmn_stop(&d);
}

/* A client that handshakes properly, then writes garbage into its ring. */
static void hostile_ring_entries_are_rejected(void **state)
{
    struct dmn d;
    struct mosaic__msg_hello h;
    union {
        char b[MOSAIC__SCHED_MSG_MAX];
        struct mosaic__msg_hdr a;
    } in;
    struct mosaic__msg m;
    struct mosaic__shm shm;
    struct mosaic__msg_hdr bell;
    struct mosaic_sched_client *hp, *be;
    char why[200];
    int fd, seg = -1, outcome;
    long n;

    (void)state;
    dmn_start(&d, NULL);
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    fd = stu_connect(d.sock);
    memset(&h, 0, sizeof(h));
    mosaic__msg_init(&h.h, MOSAIC__MSG_HELLO, sizeof(h));
    h.pid = getpid();
    h.role = MOSAIC_SCHED_ROLE_BE;
    assert_int_equal(mosaic__send_msg(fd, &h, sizeof(h), -1), 0);
    n = mosaic__recv_msg(fd, in.b, sizeof(in.b), &seg, 0);
    assert_true(n > 0);
    assert_int_equal(mosaic__msg_parse(in.b, (size_t)n, &m, why, sizeof(why)), 0);
    assert_int_equal(m.h.type, MOSAIC__MSG_WELCOME);
    assert_int_equal(mosaic__shm_attach(seg, m.u.welcome.shm_size, &shm, why, sizeof(why)), 0);
    close(seg);
    /* HP events from a BE client, unknown types and flags, a grant forged
     * into its own event ring: all rejected, more than the limit. */
    for (int i = 0; i < 80; i++) {
        struct mosaic__entry e = {.type = (uint16_t)(i % 3 == 0   ? MOSAIC__EV_HP_REQ_BEGIN
                                                     : i % 3 == 1 ? 777
                                                                  : MOSAIC__EV_GRANT),
                                  .flags = (uint16_t)(i & 1), .id = (uint64_t)i};
        while (mosaic__ring_push_mp(shm.ev_ctl, shm.ev, shm.ev_mask, &e) != 0)
            stu_msleep(1);
    }
    mosaic__msg_init(&bell, MOSAIC__MSG_DOORBELL, sizeof(bell));
    mosaic__send_msg(fd, &bell, sizeof(bell), -1);
    {
        struct timeval tv = {.tv_sec = 10};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        assert_int_equal(mosaic__recv_msg(fd, in.b, sizeof(in.b), NULL, 0), 0); /* dropped */
    }
    assert_true(log_has(&d, "too many bad ring entries"));
    /* A scribbled header of its own segment cannot hurt the daemon either. */
    mosaic__shm_unmap(&shm);
    close(fd);

    assert_int_equal(mosaic_sched_client_state(hp), MOSAIC_SCHED_CONNECTED);
    assert_int_equal(mosaic_sched_be_admit(be, 3, 1, &outcome), 0);
    assert_int_equal(outcome, MOSAIC_SCHED_GRANTED);
    mosaic_sched_client_close(hp);
    mosaic_sched_client_close(be);
    dmn_stop(&d);
}

static void ring_full_is_reported_and_never_blocks_hp(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp;
    char want[64];
    int full = 0;
    uint64_t t0, t1, bells;

    (void)state;
    /* A slow heartbeat, so that the stopped daemon is not declared gone
     * while the ring fills. */
    dmn_start(&d, "rule requested any\nheartbeat-ms 2000");
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    /* Long enough for the idle daemon to be asleep (NEED_WAKEUP set) when
     * it is stopped, as a daemon starved of CPU would be. */
    stu_msleep(300);
    kill(d.pid, SIGSTOP); /* the daemon stops draining */
    bells = mosaic_sched_client_doorbells(hp);
    t0 = mosaic__now_ns();
    for (int i = 0; i < RING + 100; i++)
        full += mosaic_sched_hp_launch(hp, (uint64_t)i) == MOSAIC_ERINGFULL;
    t1 = mosaic__now_ns();
    bells = mosaic_sched_client_doorbells(hp) - bells;
    kill(d.pid, SIGCONT);
    /* At most RING fit; the rest were refused without waiting. */
    assert_true(full >= 100);
    /* One doorbell when the ring passed half full, none for the launches
     * after it (a system call each, for a daemon that cannot run); 0 would
     * mean the daemon was not asleep and the test saw nothing. */
    if (bells != 1)
        fail_msg("%llu doorbells for %d launches into a ring the stopped daemon left full "
                 "(want exactly 1)", (unsigned long long)bells, RING + 100);
    assert_int_equal(mosaic_sched_client_dropped(hp), (uint64_t)full);
    assert_true(t1 - t0 < 1000000000ull);
    snprintf(want, sizeof(want), "\"dropped\":%d", full);
    WAIT_UNTIL(strstr(status(&d), want), 5000);
    assert_true(log_has(&d, "its ring was full"));
    mosaic_sched_client_close(hp);
    dmn_stop(&d);
}

/* n HP requests (begin, end) 3 ms apart; the doorbells they rang. */
static uint64_t hp_requests_bells(struct mosaic_sched_client *hp, uint64_t first, int n)
{
    uint64_t bells = mosaic_sched_client_doorbells(hp);

    for (int i = 0; i < n; i++) {
        assert_int_equal(mosaic_sched_hp_request_begin(hp, first + (uint64_t)i, 0), 0);
        stu_msleep(3);
        assert_int_equal(mosaic_sched_hp_request_end(hp, first + (uint64_t)i, 0), 0);
    }
    return mosaic_sched_client_doorbells(hp) - bells;
}

/*
 * An HP request's end wakes a sleeping daemon (a system call in the
 * service's request path) only while a BE kernel waits for a decision the
 * end may change (HP_END_QUIET): none for a service alone, some once a BE
 * kernel is held. The control is a client that rings at every end
 * (hp_end_doorbell_always, the behaviour before): it must ring, or the
 * zero above would say nothing.
 */
static void hp_end_rings_only_while_be_waits(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp, *always, *be;
    struct mosaic_sched_client_opts o;
    struct admit a;
    uint64_t bells;
    char want[64];

    (void)state;
    dmn_start(&d, NULL);
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    stu_msleep(300); /* idle: the daemon sleeps between its looks */
    /* 12 requests: 24 events, under half the test's ring of 64 (a ring
     * past half full rings the backlog doorbell, which is not this). */
    bells = hp_requests_bells(hp, 1, 12);
    if (bells != 0)
        fail_msg("%llu doorbells for 12 HP request ends with no BE kernel waiting (want 0)",
                 (unsigned long long)bells);
    /* The daemon still got every begin and end, from the ring. */
    snprintf(want, sizeof(want), "\"events\":%d", 24);
    WAIT_UNTIL(strstr(status(&d), want), 5000);
    WAIT_UNTIL(strstr(status(&d), "\"hp_requests_in_flight\":0"), 5000);

    /* A BE kernel held beside HP: the ends ring (the daemon looks every
     * millisecond while it holds one, so some ends find it awake). */
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 100, 0), 0);
    WAIT_UNTIL(strstr(status(&d), "\"hp_requests_in_flight\":1"), 5000);
    admit_start(&a, be);
    WAIT_UNTIL(strstr(status(&d), "\"be_waiting\":1"), 5000);
    bells = hp_requests_bells(hp, 200, 40);
    assert_int_equal(mosaic_sched_hp_request_end(hp, 100, 0), 0);
    admit_join(&a);
    assert_int_equal(a.outcome, MOSAIC_SCHED_GRANTED);
    if (bells == 0)
        fail_msg("no doorbell for 40 HP request ends while a BE kernel was held (want some)");
    mosaic_sched_client_close(be);

    /* The control: a client ringing at every end rings with no BE too. */
    memset(&o, 0, sizeof(o));
    o.socket_path = d.sock;
    o.role = MOSAIC_SCHED_ROLE_HP;
    o.reconnect_ms = 50;
    o.hp_end_doorbell_always = 1;
    assert_int_equal(mosaic_sched_client_open(&o, &always), 0);
    assert_int_equal(mosaic_sched_client_state(always), MOSAIC_SCHED_CONNECTED);
    stu_msleep(300);
    bells = hp_requests_bells(always, 1000, 12);
    if (bells == 0)
        fail_msg("the control rang no doorbell for 12 HP request ends: the daemon was never "
                 "asleep, so the zero above shows nothing");
    mosaic_sched_client_close(always);
    mosaic_sched_client_close(hp);
    dmn_stop(&d);
}

static void daemon_sigkill_and_restart(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp, *be;
    uint64_t t0;
    int outcome;

    (void)state;
    dmn_start(&d, NULL);
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 0), 0);
    dmn_kill(&d, SIGKILL);
    WAIT_UNTIL(mosaic_sched_client_state(hp) == MOSAIC_SCHED_DISCONNECTED &&
                   mosaic_sched_client_state(be) == MOSAIC_SCHED_DISCONNECTED,
               5000);
    /* HP continues uncontrolled at once. */
    assert_int_equal(mosaic_sched_hp_request_end(hp, 1, 0), MOSAIC_EDISCONNECTED);
    assert_int_equal(mosaic_sched_hp_launch(hp, 2), MOSAIC_EDISCONNECTED);
    /* BE waits be-timeout-ms (300 in this config), then runs uncontrolled. */
    t0 = mosaic__now_ns();
    assert_int_equal(mosaic_sched_be_admit(be, 9, 1, &outcome), 0);
    assert_int_equal(outcome, MOSAIC_SCHED_UNCONTROLLED);
    assert_true(mosaic__now_ns() - t0 >= 290000000ull);

    /* The daemon returns over its stale socket; both clients reconnect. */
    dmn_spawn(&d);
    WAIT_UNTIL(mosaic_sched_client_generation(hp) == 2 &&
                   mosaic_sched_client_generation(be) == 2,
               5000);
    assert_true(log_has(&d, "removing the stale socket"));
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 3, 0), 0);
    assert_int_equal(mosaic_sched_hp_request_end(hp, 3, 0), 0);
    assert_int_equal(mosaic_sched_be_admit(be, 9, 1, &outcome), 0);
    assert_int_equal(outcome, MOSAIC_SCHED_GRANTED);
    mosaic_sched_client_close(hp);
    mosaic_sched_client_close(be);
    dmn_stop(&d);

    /* be-on-timeout hold: the kernel stays held, reported as a timeout. */
    dmn_start(&d, "rule requested any\nbe-on-timeout hold");
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    dmn_kill(&d, SIGKILL);
    WAIT_UNTIL(mosaic_sched_client_state(be) == MOSAIC_SCHED_DISCONNECTED, 5000);
    assert_int_equal(mosaic_sched_be_admit(be, 9, 1, &outcome), MOSAIC_ETIMEDOUT);
    mosaic_sched_client_close(be);
    dmn_stop(&d);
}

/*
 * The device-side gate at the protocol level, the test standing in for the
 * device: gated wants on one slot are granted by the daemon's write of the
 * grant word, kernel n only once the done word says n - 1 finished, never
 * while an HP request holds BE work (hold-be); a done word counts as the
 * kernel's BE_DONE; and when the daemon dies the client's monitor releases
 * the words be-timeout-ms (300) later, so nothing waits on a dead daemon.
 */
static void gated_wants_follow_the_done_word_and_are_released(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp, *be;
    struct mosaic_sched_gate g;
    _Atomic uint32_t *grant, *done, *grant1;
    uint64_t tk;

    (void)state;
    dmn_start(&d, NULL);
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(mosaic_sched_gate_get(be, &g), 0);
    assert_int_equal(g.slots, MOSAIC__GATE_SLOTS);
    assert_int_equal(g.bytes % 4096, 0);
    grant = (_Atomic uint32_t *)((char *)g.base + g.grant_off);
    done = (_Atomic uint32_t *)((char *)g.base + g.done_off);
    grant1 = (_Atomic uint32_t *)((char *)g.base + g.stride + g.grant_off);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 0), 0);
    for (uint32_t n = 1; n <= 3; n++)
        assert_int_equal(mosaic_sched_be_want_gated(be, g.generation, 0, n, 40 + n, 1000), 0);
    assert_int_equal(mosaic_sched_be_want_gated(be, g.generation, 1, 1, 50, 1000), 0);
    /* A stale generation is refused, not posted into the wrong segment. */
    assert_int_equal(mosaic_sched_be_want_gated(be, g.generation + 1, 0, 4, 1, 1),
                     MOSAIC_EDISCONNECTED);
    stu_msleep(150);
    assert_int_equal(atomic_load(grant), 0); /* held by the HP request */
    assert_int_equal(atomic_load(grant1), 0);
    assert_int_equal(mosaic_sched_hp_request_end(hp, 1, 0), 0);
    WAIT_UNTIL(atomic_load(grant) == 1 && atomic_load(grant1) == 1, 5000);
    /* Kernel 2 waits for kernel 1's done word, not for the policy. */
    stu_msleep(150);
    assert_int_equal(atomic_load(grant), 1);
    atomic_store(done, 1);
    WAIT_UNTIL(atomic_load(grant) == 2, 5000);
    atomic_store(done, 2);
    WAIT_UNTIL(atomic_load(grant) == 3, 5000);
    /* Kernel 3 runs: one BE kernel in flight on slot 0, one on slot 1. */
    WAIT_UNTIL(strstr(status(&d), "\"be_in_flight\":2") != NULL, 5000);
    atomic_store(done, 3);
    WAIT_UNTIL(strstr(status(&d), "\"be_in_flight\":1") != NULL, 5000);

    /* Kernel 4 waits on the device when the daemon dies: released after
     * the timeout, 2^30 past what was asked. */
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 2, 0), 0);
    assert_int_equal(mosaic_sched_be_want_gated(be, g.generation, 0, 4, 44, 1000), 0);
    stu_msleep(100);
    assert_int_equal(atomic_load(grant), 3);
    tk = mosaic__now_ns();
    dmn_kill(&d, SIGKILL);
    WAIT_UNTIL(atomic_load(grant) != 3, 5000);
    assert_true(mosaic__now_ns() - tk >= 290000000ull);
    assert_int_equal(atomic_load(grant), 4u + MOSAIC__GATE_RELEASE);
    assert_true(mosaic_sched_client_released(be) >= 2);
    mosaic_sched_client_close(hp);
    mosaic_sched_client_close(be);
    dmn_stop(&d);
}

/*
 * gate-ahead 1: a gated stream's next kernel is granted while the one
 * before it still runs (the GPU finds its wait already passed), never two
 * beyond the running one, and not while an HP request holds BE (hold-be);
 * a done word that jumps past several granted kernels ends each of them.
 */
static void gate_ahead_grants_the_next_kernel_before_the_done_word(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp, *be;
    struct mosaic_sched_gate g;
    _Atomic uint32_t *grant, *done;
    const char *m;

    (void)state;
    memset(&d, 0, sizeof(d));
    dmn_start(&d, "rule requested any\ngate-ahead 1");
    dmn_kill(&d, SIGTERM);
    d.metrics_port = stu_free_port();
    dmn_spawn(&d);
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    be = client(&d, MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(mosaic_sched_gate_get(be, &g), 0);
    grant = (_Atomic uint32_t *)((char *)g.base + g.grant_off);
    done = (_Atomic uint32_t *)((char *)g.base + g.done_off);
    for (uint32_t n = 1; n <= 4; n++)
        assert_int_equal(mosaic_sched_be_want_gated(be, g.generation, 0, n, 40 + n, 1000), 0);
    /* Kernel 1 runs, kernel 2 is granted behind it; 3 waits for 1's end. */
    WAIT_UNTIL(atomic_load(grant) == 2, 5000);
    stu_msleep(150);
    assert_int_equal(atomic_load(grant), 2);
    WAIT_UNTIL(strstr(status(&d), "\"be_in_flight\":2") != NULL, 5000);
    atomic_store(done, 1);
    WAIT_UNTIL(atomic_load(grant) == 3, 5000);
    /* Both granted kernels end at once: 4 follows, ahead of none. */
    atomic_store(done, 3);
    WAIT_UNTIL(atomic_load(grant) == 4, 5000);
    WAIT_UNTIL(strstr(status(&d), "\"be_in_flight\":1") != NULL, 5000);
    /* An HP request in flight: kernel 5 is not granted ahead of 4. */
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 0), 0);
    stu_msleep(50);
    assert_int_equal(mosaic_sched_be_want_gated(be, g.generation, 0, 5, 45, 1000), 0);
    stu_msleep(150);
    assert_int_equal(atomic_load(grant), 4);
    atomic_store(done, 4);
    stu_msleep(150);
    assert_int_equal(atomic_load(grant), 4);
    assert_int_equal(mosaic_sched_hp_request_end(hp, 1, 0), 0);
    WAIT_UNTIL(atomic_load(grant) == 5, 5000);
    m = stu_scrape(d.metrics_port);
    assert_non_null(strstr(m, "mosaic_be_gated_grants_total 5\n"));
    assert_non_null(strstr(m, "mosaic_be_gated_ahead_total 2\n"));
    mosaic_sched_client_close(hp);
    mosaic_sched_client_close(be);
    dmn_stop(&d);
}

/* Polls a client without a monitor thread for ms milliseconds. */
static void poll_for(struct mosaic_sched_client *c, unsigned ms)
{
    for (uint64_t end = mosaic__now_ns() + ms * 1000000ull; mosaic__now_ns() < end;) {
        mosaic_sched_client_poll(c);
        stu_msleep(2);
    }
}

/*
 * A BE kernel that waits on the device when the daemon dies is the new
 * daemon's to admit, not the client's to let go. Before, the client
 * released every wait of the dead connection as soon as it reconnected,
 * beside an HP request that the new daemon held BE for (arbiter_faults'
 * kill-hold, BE back before HP: a request 1.01x over p). Here the BE
 * client has no monitor thread, so the test decides that it reconnects
 * after HP, which is in a request on the new daemon by then: the wait
 * stays held through the request, passes once it ends, and its end (the
 * old done word) is the new daemon's BE_DONE.
 */
static void stale_gates_wait_for_the_new_daemon(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp, *be;
    struct mosaic_sched_client_opts o;
    struct mosaic_sched_gate g;
    _Atomic uint32_t *grant, *done, *grant1;

    (void)state;
    dmn_start(&d, "rule requested any\nbe-on-timeout hold");
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    o = (struct mosaic_sched_client_opts){.socket_path = d.sock, .role = MOSAIC_SCHED_ROLE_BE,
                                          .reconnect_ms = 50, .no_monitor_thread = 1};
    assert_int_equal(mosaic_sched_client_open(&o, &be), 0);
    assert_int_equal(mosaic_sched_client_state(be), MOSAIC_SCHED_CONNECTED);
    assert_int_equal(mosaic_sched_gate_get(be, &g), 0);
    grant = (_Atomic uint32_t *)((char *)g.base + g.grant_off);
    done = (_Atomic uint32_t *)((char *)g.base + g.done_off);
    grant1 = (_Atomic uint32_t *)((char *)g.base + g.stride + g.grant_off);
    /* Slot 0: kernel 1 waits, held by HP's request. Slot 1: kernel 1 was
     * granted (HP idle then) and still runs: nothing of it waits. */
    assert_int_equal(mosaic_sched_be_want_gated(be, g.generation, 1, 1, 50, 1000), 0);
    WAIT_UNTIL((poll_for(be, 1), atomic_load(grant1) == 1), 5000);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 1, 0), 0);
    WAIT_UNTIL(strstr(status(&d), "\"hp_requests_in_flight\":1"), 5000);
    assert_int_equal(mosaic_sched_be_want_gated(be, g.generation, 0, 1, 41, 1000), 0);
    poll_for(be, 100);
    assert_int_equal(atomic_load(grant), 0);

    dmn_kill(&d, SIGKILL);
    WAIT_UNTIL((poll_for(be, 1), mosaic_sched_client_state(be) == MOSAIC_SCHED_DISCONNECTED),
               5000);
    dmn_spawn(&d);
    WAIT_UNTIL(mosaic_sched_client_generation(hp) == 2, 5000);
    assert_int_equal(mosaic_sched_hp_request_begin(hp, 2, 0), 0);
    WAIT_UNTIL(strstr(status(&d), "\"hp_requests_in_flight\":1"), 5000);
    WAIT_UNTIL((poll_for(be, 1), mosaic_sched_client_generation(be) == 2), 5000);
    /* Slot 1 had nothing waiting: let go at once. Slot 0 is asked of the
     * new daemon, which holds it while HP's request is open. */
    assert_int_equal(atomic_load(grant1), 1u + MOSAIC__GATE_RELEASE);
    poll_for(be, 150);
    assert_int_equal(atomic_load(grant), 0);
    assert_non_null(strstr(status(&d), "\"be_waiting\":1"));
    assert_int_equal(mosaic_sched_hp_request_end(hp, 2, 0), 0);
    WAIT_UNTIL((poll_for(be, 1), atomic_load(grant) == 1u + MOSAIC__GATE_RELEASE), 5000);
    WAIT_UNTIL(strstr(status(&d), "\"be_in_flight\":1") != NULL, 5000);
    atomic_store(done, 1); /* the device finished kernel 1 */
    WAIT_UNTIL((poll_for(be, 1), strstr(status(&d), "\"be_in_flight\":0") != NULL), 5000);
    mosaic_sched_client_close(hp);
    mosaic_sched_client_close(be);
    dmn_stop(&d);
}

static void a_stopped_daemon_is_noticed_by_its_heartbeat(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp;
    char reason[300];

    (void)state;
    dmn_start(&d, NULL);
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    kill(d.pid, SIGSTOP); /* hung, its socket still open */
    WAIT_UNTIL(mosaic_sched_client_state(hp) == MOSAIC_SCHED_DISCONNECTED, 5000);
    mosaic_sched_client_reason(hp, reason, sizeof(reason));
    kill(d.pid, SIGCONT);
    assert_non_null(strstr(reason, "heartbeat stopped"));
    WAIT_UNTIL(mosaic_sched_client_state(hp) == MOSAIC_SCHED_CONNECTED, 5000);
    mosaic_sched_client_close(hp);
    dmn_stop(&d);
}

static void forked_child_becomes_its_own_client(void **state)
{
    struct dmn d;
    struct mosaic_sched_client *hp;
    int status_code, go[2];
    pid_t child;
    char ch = 0;

    (void)state;
    dmn_start(&d, NULL);
    hp = client(&d, MOSAIC_SCHED_ROLE_HP);
    assert_int_equal(pipe(go), 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        int ok = mosaic_sched_client_atfork_child(hp) == 0;
        close(go[1]); /* a parent that fails ends this child's wait */
        for (int i = 0; ok && i < 1000 && mosaic_sched_client_generation(hp) == 0; i++)
            stu_msleep(10);
        ok = ok && mosaic_sched_client_state(hp) == MOSAIC_SCHED_CONNECTED &&
             mosaic_sched_hp_request_begin(hp, 77, 0) == 0;
        /* Stay connected until the parent has seen both clients. */
        if (read(go[0], &ch, 1) != 1)
            ok = 0;
        _exit(ok ? 0 : 1);
    }
    WAIT_UNTIL(strstr(status(&d), "\"requests_in_flight\":1"), 10000);
    assert_int_equal(count(status(&d), "\"role\":\"hp\""), 2); /* parent and child */
    assert_int_equal(write(go[1], "x", 1), 1);
    waitpid(child, &status_code, 0);
    assert_true(WIFEXITED(status_code) && WEXITSTATUS(status_code) == 0);
    close(go[0]);
    close(go[1]);
    /* The parent's connection never noticed. */
    assert_int_equal(mosaic_sched_client_generation(hp), 1);
    assert_int_equal(mosaic_sched_hp_launch(hp, 6), 0);
    WAIT_UNTIL(strstr(status(&d), "\"hp_requests_in_flight\":0"), 5000);
    mosaic_sched_client_close(hp);
    dmn_stop(&d);
}

/* Runs the mosaic-sched binary through the shell; returns its exit code
 * and its stdout+stderr in out. */
static int run_cli(const char *args, char *out, size_t len)
{
    char cmd[1024];
    FILE *fp;
    size_t n;
    int st;

    snprintf(cmd, sizeof(cmd), "%s %s 2>&1", MOSAIC_SCHED_BIN, args);
    fp = popen(cmd, "r");
    assert_non_null(fp);
    n = fread(out, 1, len - 1, fp);
    out[n] = '\0';
    st = pclose(fp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void command_line_and_precedence(void **state)
{
    char out[4096], args[512];
    struct dmn d;

    (void)state;
    assert_int_equal(run_cli("version", out, sizeof(out)), 0);
    assert_non_null(strstr(out, "mosaic-sched " MOSAIC_VERSION_STRING " (protocol 4, segment version 2"));
    assert_int_equal(run_cli("frobnicate", out, sizeof(out)), 2);
    assert_non_null(strstr(out, "unknown command 'frobnicate'"));
    assert_int_equal(run_cli("--slo 0.9 daemon", out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--slo: slo: '0.9' is not valid: use a number above 1.0"));
    assert_int_equal(run_cli("--config /nonexistent.conf daemon", out, sizeof(out)), 2);
    assert_non_null(strstr(out, "/nonexistent.conf: cannot open"));

    /* file < environment < flag, seen in the socket status tries. */
    dmn_start(&d, NULL);
    snprintf(args, sizeof(args), "--config %s status", d.conf);
    assert_int_equal(run_cli(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "policy hold-be, slo 1.25"));
    snprintf(args, sizeof(args), "--config %s --json status", d.conf);
    assert_int_equal(run_cli(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "\"clients\":[]"));
    snprintf(args, sizeof(args), "MOSAIC_SCHED_SOCKET=%s/env.sock %s --config %s status", d.dir,
             MOSAIC_SCHED_BIN, d.conf);
    {
        char cmd[1024];
        FILE *fp;
        size_t n;
        snprintf(cmd, sizeof(cmd), "env %s 2>&1", args);
        fp = popen(cmd, "r");
        n = fread(out, 1, sizeof(out) - 1, fp);
        out[n] = '\0';
        assert_int_equal(WEXITSTATUS(pclose(fp)), 1);
        assert_non_null(strstr(out, "env.sock")); /* the environment beat the file */
        snprintf(cmd, sizeof(cmd), "env %s --socket=%s/flag.sock 2>&1", args, d.dir);
        fp = popen(cmd, "r");
        n = fread(out, 1, sizeof(out) - 1, fp);
        out[n] = '\0';
        pclose(fp);
        assert_non_null(strstr(out, "flag.sock")); /* and the flag beat both */
    }
    dmn_stop(&d);
}

static void mps_is_checked_and_started(void **state)
{
    struct dmn d;
    char extra[512], fifo[160], script[160], *s;
    FILE *fp;

    (void)state;
    /* No control FIFO: said plainly, in the log and the status. */
    dmn_start(&d, "rule requested any\nmps check\nmps-pipe-dir /nonexistent-mps");
    s = status(&d);
    assert_non_null(strstr(s, "\"concurrent\":false"));
    assert_non_null(strstr(s, "NOT concurrent"));
    assert_true(log_has(&d, "no MPS control daemon (no /nonexistent-mps/control)"));
    dmn_stop(&d);

    /* A control FIFO present: concurrent. */
    dmn_start(&d, NULL);
    snprintf(fifo, sizeof(fifo), "%s/control", d.dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    dmn_kill(&d, SIGTERM);
    snprintf(extra, sizeof(extra), "rule requested any\nmps check\nmps-pipe-dir %s", d.dir);
    snprintf(d.extra, sizeof(d.extra), "%s", extra);
    dmn_spawn(&d);
    assert_non_null(strstr(status(&d), "\"concurrent\":true"));
    dmn_kill(&d, SIGTERM);

    /* mps start runs the control program (a stand-in that makes the FIFO
     * where CUDA_MPS_PIPE_DIRECTORY says) and waits for its pipe. */
    unlink(fifo);
    snprintf(script, sizeof(script), "%s/fake-mps-control", d.dir);
    fp = fopen(script, "w");
    assert_non_null(fp);
    fprintf(fp, "#!/bin/sh\n[ \"$1\" = -d ] || exit 3\n"
                "mkfifo \"$CUDA_MPS_PIPE_DIRECTORY/control\"\n");
    fclose(fp);
    assert_int_equal(chmod(script, 0700), 0);
    snprintf(d.extra, sizeof(d.extra), "rule requested any\nmps start\nmps-pipe-dir %s\n"
             "mps-control %s", d.dir, script);
    dmn_spawn(&d);
    assert_non_null(strstr(status(&d), "\"concurrent\":true"));
    assert_true(log_has(&d, "MPS control daemon started"));
    dmn_stop(&d);
}

static void systemd_readiness(void **state)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct dmn d;
    char buf[512] = "";
    struct pollfd p;
    int fd;
    ssize_t n;

    (void)state;
    memset(&d, 0, sizeof(d));
    snprintf(d.dir, sizeof(d.dir), "/tmp/mosaic-n-XXXXXX");
    assert_non_null(mkdtemp(d.dir));
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", d.dir);
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    setenv("NOTIFY_SOCKET", sa.sun_path, 1);
    snprintf(d.sock, sizeof(d.sock), "%s/s.sock", d.dir);
    snprintf(d.conf, sizeof(d.conf), "%s/d.conf", d.dir);
    snprintf(d.log, sizeof(d.log), "%s/d.log", d.dir);
    snprintf(d.extra, sizeof(d.extra), "rule requested any");
    dmn_spawn(&d);
    unsetenv("NOTIFY_SOCKET");
    p = (struct pollfd){.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 10000), 1);
    n = recv(fd, buf, sizeof(buf) - 1, 0);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "READY=1\n"));
    assert_non_null(strstr(buf, "STATUS=policy hold-be"));
    dmn_kill(&d, SIGTERM);
    assert_int_equal(poll(&p, 1, 10000), 1);
    n = recv(fd, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    assert_string_equal(buf, "STOPPING=1");
    close(fd);
    dmn_stop(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handshake_status_and_metrics),
        cmocka_unit_test(hostile_handshakes_are_refused),
        cmocka_unit_test(role_rules_refuse_with_a_reason),
        cmocka_unit_test(be_held_while_hp_request_in_flight),
        cmocka_unit_test(an_hp_request_that_never_ends_expires),
        cmocka_unit_test(client_killed_mid_request_frees_its_state),
        cmocka_unit_test(hostile_ring_entries_are_rejected),
        cmocka_unit_test(ring_full_is_reported_and_never_blocks_hp),
        cmocka_unit_test(hp_end_rings_only_while_be_waits),
        cmocka_unit_test(daemon_sigkill_and_restart),
        cmocka_unit_test(gated_wants_follow_the_done_word_and_are_released),
        cmocka_unit_test(stale_gates_wait_for_the_new_daemon),
        cmocka_unit_test(gate_ahead_grants_the_next_kernel_before_the_done_word),
        cmocka_unit_test(a_stopped_daemon_is_noticed_by_its_heartbeat),
        cmocka_unit_test(forked_child_becomes_its_own_client),
        cmocka_unit_test(command_line_and_precedence),
        cmocka_unit_test(mps_is_checked_and_started),
        cmocka_unit_test(systemd_readiness),
    };
    signal(SIGPIPE, SIG_IGN);
    atexit(stu_kill_tracked);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
