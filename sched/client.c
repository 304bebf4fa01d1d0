/*
 * The client side of mosaic-sched (include/mosaic/sched.h): what the shim
 * links to be admitted by the daemon.
 *
 * Threads: any number of application threads post events; one monitor
 * thread (or the caller through mosaic_sched_client_poll) owns the socket,
 * watches the daemon's heartbeat and reconnects. A connection is a
 * `struct conn` published through one atomic pointer; posting threads read
 * it with an acquire load and never take a lock, so the HP path is a load,
 * a compare-and-swap on the ring head and a release store.
 *
 * A connection that ends is retired, not freed: a thread that loaded the
 * pointer just before may still write into its ring, so its mapping and
 * its socket descriptor stay open (the socket shut down, so that a
 * doorbell can never reach a descriptor number the host program reused)
 * until the client is closed. The list is capped (MAX_RETIRED), beyond
 * which the oldest is released; a thread would have to stall across that
 * many daemon restarts to touch it.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "proto.h"

#define MAX_RETIRED 32
#define GRANT_SLOTS 256
#define SPIN_NS 20000ull /* spin this long for a grant before sleeping */

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

struct conn {
    struct mosaic__shm shm;
    int sock;
    int role;
    uint32_t id;
    uint32_t heartbeat_ms;
    _Atomic int dead;
    uint64_t gen;          /* the client's generation this connection is */
    uint64_t dead_ns;      /* when it was retired (under c->lock) */
    int gates_released;    /* its gate slots were released (under c->lock) */
    /* 1 once a post found the ring past half full and rang the doorbell;
     * back to 0 when a post finds it below half again. A daemon that is
     * starved of CPU leaves the ring full for a while, and a doorbell per
     * launch in that time would be a system call per launch (measured:
     * +199 ns each) that tells it nothing new. */
    _Atomic int rung;
    /* A post looks at how full the ring is only when the head it leaves is
     * a multiple of check_mask + 1 (every 64 posts, every post of a ring
     * of 8), since that needs the daemon's tail, a cache line the
     * draining daemon writes: reading it on every post would be a cache
     * miss per launch while the daemon keeps up. */
    uint32_t check_mask;
    uint64_t last_beat;    /* monitor only: the daemon's counter last seen */
    uint64_t beat_seen_ns; /* monitor only: when it last changed */
    struct conn *next;     /* retired list */
    /* BE: the kernel each gate slot last asked for (a hint for the want
     * that asks a new daemon on the slot's behalf, below). */
    _Atomic uint64_t slot_kernel[MOSAIC__GATE_SLOTS];
    /* BE, once retired (under c->lock): each slot's stand-in want on a
     * new daemon's connection (stale_gates). */
    struct {
        uint64_t gen;    /* the connection it was posted on, 0: none */
        uint32_t ticket; /* its ticket there */
        uint32_t seq;    /* released up to this: BE_DONE once done reaches it */
        int state;       /* PROXY_* */
    } proxy[MOSAIC__GATE_SLOTS];
};

/* A retired BE connection's gate slot, as stale_gates takes it through. */
enum { PROXY_NONE, PROXY_ASKED, PROXY_RUNNING, PROXY_SETTLED };

struct mosaic_sched_client {
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int req_role;
    int hp_end_always; /* opts.hp_end_doorbell_always */
    uint32_t reconnect_ms;
    _Atomic uint32_t be_timeout_ms;
    _Atomic int be_on_timeout;
    _Atomic unsigned sms; /* the daemon's partition for this role, 0: full GPU */
    _Atomic uint64_t partition_seq; /* bumped after each PARTITION message's sms */
    /* Bumped after the generation or partition_seq moved: one word for a
     * caller that follows both (the shim's HP launch path). */
    _Atomic uint64_t epoch;
    /* When a BE caller first found the daemon away (0: connected). The
     * timeout runs from then, not per kernel: once it has passed, every BE
     * kernel runs uncontrolled at once until the daemon is back. */
    _Atomic uint64_t be_away_since;
    _Atomic(struct conn *) cur;
    _Atomic int role;
    _Atomic uint64_t generation;
    _Atomic uint32_t gen_futex; /* bumped when a connection starts or ends */
    _Atomic uint32_t next_ticket;
    _Atomic uint64_t dropped;
    _Atomic uint64_t doorbells; /* doorbell packets sent */
    _Atomic uint64_t released; /* gate slots released for a daemon that went away */
    /* Stale gate slots whose stand-in want is asked or whose kernels run
     * (under c->lock): the monitor then looks every millisecond. */
    unsigned proxies;
    pthread_mutex_t lock;      /* reason, retired list, retiring */
    pthread_mutex_t poll_lock; /* one monitor step (and connect) at a time */
    char reason[MOSAIC__SCHED_REASON_LEN + 64];
    struct conn *retired;
    int nretired;
    uint64_t next_try_ns;
    /* Grants drained by one waiting thread on behalf of the others. */
    pthread_mutex_t grant_lock;
    struct {
        struct conn *conn;
        uint32_t ticket;
    } granted[GRANT_SLOTS];
    unsigned granted_next;
    int has_thread;
    int stop_fd;
    pthread_t thread;
};

static void set_reason(struct mosaic_sched_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * HP launch time stamps from the time-stamp counter. A launch's stamp is
 * only recorded (mosaic-sched record) and ordered by nothing (the daemon
 * orders events by their ring position), while CLOCK_MONOTONIC through
 * the vDSO costs 25 ns a call on the machine this was measured on against
 * 10 ns for rdtsc, the largest part of an HP post. CLOCK_MONOTONIC_COARSE
 * would be cheaper still but moves in whole ticks (4 ms at HZ=250), as
 * long as a kernel: a trace would put a request's launches at one time.
 *
 * The counter is turned into CLOCK_MONOTONIC nanoseconds by a pair read
 * together (ns0, tsc0) and the rate measured since the first pair, both
 * refreshed at every monitor step (mosaic_sched_client_poll): the stamp is
 * CLOCK_MONOTONIC within the rate's error times the time since the last
 * step (a few us in the first second, when the rate is measured over
 * 20 ms; nanoseconds after a minute). Used only where the kernel's own
 * clock source is the TSC (so the counter is invariant and synchronised
 * across cores, as the kernel checked); otherwise, before the first rate,
 * and while a step rewrites the pair, the stamp is clock_gettime's.
 */
static struct {
    _Atomic uint32_t seq; /* odd while a step rewrites the fields */
    _Atomic uint64_t tsc0, ns0, mult; /* mult: ns per tick, 32.32 fixed point */
    uint64_t first_tsc, first_ns;     /* under tsc_lock */
    int usable;                       /* under tsc_lock: -1 no, 0 unknown, 1 yes */
} tsc;
static pthread_mutex_t tsc_lock = PTHREAD_MUTEX_INITIALIZER;

#if defined(__x86_64__)
/* The kernel's clock source is the TSC: it checked that the counter is
 * invariant and synchronised, and CLOCK_MONOTONIC is computed from it. */
static int tsc_is_clocksource(void)
{
    char buf[32] = "";
    FILE *fp = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

    if (!fp)
        return 0;
    if (!fgets(buf, sizeof(buf), fp))
        buf[0] = '\0';
    fclose(fp);
    return strcmp(buf, "tsc\n") == 0;
}

/* One step of the calibration (any thread; the monitor's in the shim). */
static void tsc_step(void)
{
    uint64_t a, t, b, n;

    if (pthread_mutex_trylock(&tsc_lock) != 0)
        return;
    if (tsc.usable == 0)
        tsc.usable = tsc_is_clocksource() ? 1 : -1;
    if (tsc.usable < 0)
        goto out;
    /* A pair read within a microsecond of each other, or none this step. */
    a = mosaic__now_ns();
    t = __rdtsc();
    b = mosaic__now_ns();
    if (b - a > 1000)
        goto out;
    n = a + (b - a) / 2;
    if (!tsc.first_ns) {
        tsc.first_ns = n;
        tsc.first_tsc = t;
        goto out;
    }
    if (n - tsc.first_ns < 20000000ull || t <= tsc.first_tsc)
        goto out;
    atomic_fetch_add_explicit(&tsc.seq, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&tsc.tsc0, t, memory_order_relaxed);
    atomic_store_explicit(&tsc.ns0, n, memory_order_relaxed);
    atomic_store_explicit(&tsc.mult,
                          (uint64_t)(((unsigned __int128)(n - tsc.first_ns) << 32) /
                                     (t - tsc.first_tsc)),
                          memory_order_relaxed);
    atomic_fetch_add_explicit(&tsc.seq, 1, memory_order_release);
out:
    pthread_mutex_unlock(&tsc_lock);
}

/* An HP launch's stamp: CLOCK_MONOTONIC ns, from the counter where it can. */
static inline uint64_t launch_stamp(void)
{
    uint32_t seq = atomic_load_explicit(&tsc.seq, memory_order_acquire);
    uint64_t mult = atomic_load_explicit(&tsc.mult, memory_order_relaxed);
    uint64_t t0 = atomic_load_explicit(&tsc.tsc0, memory_order_relaxed);
    uint64_t n0 = atomic_load_explicit(&tsc.ns0, memory_order_relaxed);
    uint64_t t = __rdtsc();

    atomic_thread_fence(memory_order_acquire);
    if (MOSAIC__UNLIKELY((seq & 1) || !mult || t < t0 ||
                         atomic_load_explicit(&tsc.seq, memory_order_relaxed) != seq))
        return mosaic__now_ns();
    return n0 + (uint64_t)(((unsigned __int128)(t - t0) * mult) >> 32);
}
#else
static void tsc_step(void)
{
}

static inline uint64_t launch_stamp(void)
{
    return mosaic__now_ns();
}
#endif

/* Under c->lock. */
static void set_reason(struct mosaic_sched_client *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (vsnprintf(c->reason, sizeof(c->reason), fmt, ap) < 0)
        c->reason[0] = '\0';
    va_end(ap);
}

/* The same, for code that does not hold c->lock. */
#define SET_REASON(c, ...)                    \
    do {                                      \
        pthread_mutex_lock(&(c)->lock);       \
        set_reason((c), __VA_ARGS__);         \
        pthread_mutex_unlock(&(c)->lock);     \
    } while (0)

/*
 * Under c->lock: lets every device-side wait on k's gate slots pass. The
 * grant word is set 2^30 past the highest sequence the client asked for,
 * which passes (as a cyclic GEQ compare) that one, every earlier one and
 * any a late thread might still enqueue; the stream then runs
 * uncontrolled. Only BE connections have waits.
 */
static void release_gates(struct mosaic_sched_client *c, struct conn *k)
{
    if (k->gates_released || k->role != MOSAIC_SCHED_ROLE_BE || !k->shm.gate)
        return;
    k->gates_released = 1;
    for (uint32_t i = 0; i < MOSAIC__GATE_SLOTS; i++) {
        struct mosaic__gate_slot *g = &k->shm.gate[i];
        uint32_t want = atomic_load_explicit(&g->want, memory_order_acquire);

        /* A slot asked of a new daemon (stale_gates) is settled here. */
        if (k->proxy[i].state == PROXY_ASKED || k->proxy[i].state == PROXY_RUNNING)
            c->proxies--;
        if (k->proxy[i].state == PROXY_RUNNING || k->proxy[i].state == PROXY_SETTLED)
            continue; /* released already, and counted */
        k->proxy[i].state = PROXY_SETTLED;

        /* Every slot, used or not (a sequence may have wrapped to 0). */
        atomic_store_explicit(&g->released, 1, memory_order_relaxed);
        atomic_store_explicit(&g->grant, want + MOSAIC__GATE_RELEASE, memory_order_release);
        if (want)
            atomic_fetch_add_explicit(&c->released, 1, memory_order_relaxed);
    }
}

static void release_conn(struct conn *k)
{
    mosaic__shm_unmap(&k->shm);
    if (k->sock >= 0)
        close(k->sock);
    free(k);
}

/* Under c->lock: ends the current connection (if it is k). */
static void retire(struct mosaic_sched_client *c, struct conn *k, const char *why)
{
    struct conn *expect = k;

    if (!atomic_compare_exchange_strong(&c->cur, &expect, NULL))
        return;
    atomic_store(&k->dead, 1);
    k->dead_ns = mosaic__now_ns();
    shutdown(k->sock, SHUT_RDWR);
    k->next = c->retired;
    c->retired = k;
    if (++c->nretired > MAX_RETIRED) {
        struct conn **pp = &c->retired;
        while ((*pp)->next)
            pp = &(*pp)->next;
        /* Its memory goes away: nothing may wait on it any more. */
        release_gates(c, *pp);
        release_conn(*pp);
        *pp = NULL;
        c->nretired--;
    }
    set_reason(c, "%s", why);
    atomic_fetch_add(&c->gen_futex, 1);
    mosaic__futex_wake(&c->gen_futex);
    /* BE threads sleeping on the old segment's grant word wake up too. */
    atomic_fetch_add(&k->shm.hdr->grant_futex, 1);
    mosaic__futex_wake(&k->shm.hdr->grant_futex);
}

/*
 * One connection attempt, by the one thread that holds c->poll_lock. It
 * does its socket I/O without c->lock, so that a daemon that accepts but
 * does not answer (stopped, or hostile) cannot block the threads that ask
 * for the client's state.
 */
static int try_connect(struct mosaic_sched_client *c)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct mosaic__msg_hello hello;
    struct timeval tv = {.tv_sec = 2};
    union {
        char buf[MOSAIC__SCHED_MSG_MAX];
        struct mosaic__msg_hdr align;
    } in;
    struct mosaic__msg msg;
    char why[160];
    struct conn *k;
    long n;
    int sock, fd = -1, rc;

    memcpy(sa.sun_path, c->path, sizeof(sa.sun_path));
    sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return MOSAIC_ESYS;
    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        SET_REASON(c, "no daemon at %s: %s", c->path, strerror(errno));
        close(sock);
        return MOSAIC_EDISCONNECTED;
    }
    memset(&hello, 0, sizeof(hello));
    mosaic__msg_init(&hello.h, MOSAIC__MSG_HELLO, sizeof(hello));
    hello.pid = (int32_t)getpid();
    hello.role = (uint32_t)c->req_role;
    rc = mosaic__send_msg(sock, &hello, sizeof(hello), -1);
    if (rc == 0) {
        n = mosaic__recv_msg(sock, in.buf, sizeof(in.buf), &fd, 0);
        rc = n > 0 ? mosaic__msg_parse(in.buf, (size_t)n, &msg, why, sizeof(why))
                   : (n == 0 ? MOSAIC_EDISCONNECTED : (int)n);
        if (n > 0 && rc != 0)
            SET_REASON(c, "bad answer from the daemon: %s", why);
        else if (n <= 0)
            SET_REASON(c, "the daemon at %s did not answer the handshake", c->path);
    }
    if (rc == 0 && msg.h.type == MOSAIC__MSG_REFUSE) {
        SET_REASON(c, "refused: %s", msg.u.refuse.reason);
        rc = MOSAIC_EREFUSED;
    } else if (rc == 0 && (msg.h.type != MOSAIC__MSG_WELCOME || fd < 0)) {
        SET_REASON(c, "the daemon answered message type %u without a segment", msg.h.type);
        rc = MOSAIC_EPROTO;
    }
    if (rc != 0) {
        if (fd >= 0)
            close(fd);
        close(sock);
        return rc;
    }
    k = calloc(1, sizeof(*k));
    if (!k) {
        close(fd);
        close(sock);
        return MOSAIC_ENOMEM;
    }
    rc = mosaic__shm_attach(fd, msg.u.welcome.shm_size, &k->shm, why, sizeof(why));
    close(fd);
    if (rc != 0) {
        SET_REASON(c, "the daemon's segment is not usable: %s", why);
        free(k);
        close(sock);
        return rc;
    }
    k->sock = sock;
    k->check_mask = k->shm.ev_mask / 8 < 63 ? k->shm.ev_mask / 8 : 63;
    k->role = (int)msg.u.welcome.role;
    k->id = msg.u.welcome.client_id;
    k->heartbeat_ms = msg.u.welcome.heartbeat_ms ? msg.u.welcome.heartbeat_ms : 100;
    k->last_beat = atomic_load(&k->shm.hdr->daemon_beat);
    k->beat_seen_ns = mosaic__now_ns();
    atomic_store(&c->be_timeout_ms, msg.u.welcome.be_timeout_ms);
    atomic_store(&c->be_on_timeout, (int)msg.u.welcome.be_on_timeout);
    atomic_store(&c->sms, msg.u.welcome.sms);
    atomic_store(&c->role, k->role);
    SET_REASON(c, "%s", "");
    /* Published before the generation moves, so that whoever sees the new
     * generation also sees the connection. */
    k->gen = atomic_load(&c->generation) + 1;
    atomic_store_explicit(&c->cur, k, memory_order_release);
    atomic_fetch_add(&c->generation, 1);
    atomic_fetch_add_explicit(&c->epoch, 1, memory_order_release);
    atomic_fetch_add(&c->gen_futex, 1);
    mosaic__futex_wake(&c->gen_futex);
    return 0;
}

static void release_stale_gates(struct mosaic_sched_client *c, uint64_t now);

/* A message from the daemon after the handshake: a PARTITION is stored
 * (the size first, then the sequence, which the shim reads in the other
 * order); anything else is ignored. */
static void partition_msg(struct mosaic_sched_client *c, const void *buf, size_t len)
{
    struct mosaic__msg m;
    char why[160];

    if (mosaic__msg_parse(buf, len, &m, why, sizeof(why)) != 0 ||
        m.h.type != MOSAIC__MSG_PARTITION)
        return;
    atomic_store(&c->sms, m.u.partition.sms);
    atomic_fetch_add_explicit(&c->partition_seq, 1, memory_order_release);
    atomic_fetch_add_explicit(&c->epoch, 1, memory_order_release);
}

MOSAIC__EXPORT int mosaic_sched_client_poll(struct mosaic_sched_client *c)
{
    struct conn *k;
    uint64_t now = mosaic__now_ns();
    int rc = 0;

    /* Another thread is already doing this step. */
    if (pthread_mutex_trylock(&c->poll_lock) != 0)
        return 0;
    tsc_step();
    k = atomic_load(&c->cur);
    if (k) {
        struct pollfd p = {.fd = k->sock, .events = POLLIN};
        uint64_t beat = atomic_load_explicit(&k->shm.hdr->daemon_beat, memory_order_acquire);

        atomic_fetch_add_explicit(&k->shm.hdr->client_beat, 1, memory_order_relaxed);
        pthread_mutex_lock(&c->lock);
        if (poll(&p, 1, 0) > 0) {
            /* After the handshake the daemon sends only PARTITION; else
             * what is readable is its end of the socket closing. */
            char tmp[MOSAIC__SCHED_MSG_MAX];
            long n = mosaic__recv_msg(k->sock, tmp, sizeof(tmp), NULL, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && n != MOSAIC_ETIMEDOUT))
                retire(c, k, "the daemon closed the connection");
            else if (n > 0)
                partition_msg(c, tmp, (size_t)n);
        } else if (beat != k->last_beat) {
            k->last_beat = beat;
            k->beat_seen_ns = now;
        } else if (now - k->beat_seen_ns > 5ull * k->heartbeat_ms * 1000000ull) {
            retire(c, k, "the daemon's heartbeat stopped");
        }
        pthread_mutex_unlock(&c->lock);
    }
    if (!atomic_load(&c->cur) && now >= c->next_try_ns) {
        rc = try_connect(c);
        /* A refusal is a rule, not an accident: ask again less often. */
        c->next_try_ns = mosaic__now_ns() + (uint64_t)c->reconnect_ms * 1000000ull *
                                                (rc == MOSAIC_EREFUSED ? 10 : 1);
    }
    release_stale_gates(c, mosaic__now_ns());
    pthread_mutex_unlock(&c->poll_lock);
    return rc;
}

static void *monitor(void *arg)
{
    struct mosaic_sched_client *c = arg;

    for (;;) {
        struct conn *k;
        struct pollfd p[2];
        int ms;

        mosaic_sched_client_poll(c);
        /* Sleep until the daemon's socket or the stop word says something,
         * or the next heartbeat check or reconnect attempt is due. */
        k = atomic_load(&c->cur);
        p[0] = (struct pollfd){.fd = c->stop_fd, .events = POLLIN};
        p[1] = (struct pollfd){.fd = k ? k->sock : -1, .events = POLLIN};
        ms = k ? (int)(k->heartbeat_ms / 2 + 1) : (int)c->reconnect_ms;
        /* A stale slot asked of the new daemon: its grant comes on the
         * ring, not the socket, and the kernels behind it wait for it. */
        pthread_mutex_lock(&c->lock);
        if (c->proxies)
            ms = 1;
        pthread_mutex_unlock(&c->lock);
        if (poll(p, 2, ms) > 0 && (p[0].revents & POLLIN))
            break;
    }
    return NULL;
}

MOSAIC__EXPORT int mosaic_sched_client_open(const struct mosaic_sched_client_opts *opts,
                                            struct mosaic_sched_client **out)
{
    static const struct mosaic_sched_client_opts defaults;
    const char *path;
    struct mosaic_sched_client *c;
    int rc;

    *out = NULL;
    if (!opts)
        opts = &defaults;
    path = opts->socket_path ? opts->socket_path : MOSAIC_SCHED_DEFAULT_SOCKET;
    if (opts->role < MOSAIC_SCHED_ROLE_NONE || opts->role > MOSAIC_SCHED_ROLE_BE ||
        opts->be_on_timeout < MOSAIC_SCHED_TIMEOUT_RUN ||
        opts->be_on_timeout > MOSAIC_SCHED_TIMEOUT_HOLD)
        return MOSAIC_EINVAL;
    c = calloc(1, sizeof(*c));
    if (!c)
        return MOSAIC_ENOMEM;
    if (strlen(path) >= sizeof(c->path)) {
        free(c);
        return MOSAIC_EINVAL;
    }
    strcpy(c->path, path);
    c->req_role = opts->role;
    c->hp_end_always = opts->hp_end_doorbell_always;
    c->reconnect_ms = opts->reconnect_ms ? opts->reconnect_ms : 200;
    atomic_init(&c->be_timeout_ms, opts->be_timeout_ms ? opts->be_timeout_ms : 2000);
    atomic_init(&c->be_on_timeout, opts->be_on_timeout);
    atomic_init(&c->role, opts->role);
    c->stop_fd = -1;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->poll_lock, NULL);
    pthread_mutex_init(&c->grant_lock, NULL);
    tsc_step(); /* the first pair of the launch stamps' calibration */
    if (opts->async_connect && !opts->no_monitor_thread) {
        rc = 0;
        c->next_try_ns = 0; /* the monitor's first step connects */
    } else {
        rc = try_connect(c);
        c->next_try_ns = mosaic__now_ns() + (uint64_t)c->reconnect_ms * 1000000ull;
    }
    if (!opts->no_monitor_thread) {
        c->stop_fd = eventfd(0, EFD_CLOEXEC);
        if (c->stop_fd < 0 || pthread_create(&c->thread, NULL, monitor, c) != 0) {
            mosaic_sched_client_close(c);
            return MOSAIC_ESYS;
        }
        c->has_thread = 1;
    }
    *out = c;
    return rc == MOSAIC_EREFUSED ? rc : 0;
}

MOSAIC__EXPORT void mosaic_sched_client_close(struct mosaic_sched_client *c)
{
    struct conn *k;

    if (!c)
        return;
    if (c->has_thread) {
        uint64_t one = 1;
        if (write(c->stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
            pthread_cancel(c->thread);
        pthread_join(c->thread, NULL);
    }
    if (c->stop_fd >= 0)
        close(c->stop_fd);
    pthread_mutex_lock(&c->lock);
    k = atomic_load(&c->cur);
    if (k)
        retire(c, k, "closed");
    while ((k = c->retired)) {
        c->retired = k->next;
        /* Streams of this process may still hold waits on the segment. */
        release_gates(c, k);
        release_conn(k);
    }
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->poll_lock);
    pthread_mutex_destroy(&c->grant_lock);
    free(c);
}

MOSAIC__EXPORT int mosaic_sched_client_atfork_child(struct mosaic_sched_client *c)
{
    struct conn *k;

    /* Only the forking thread exists in the child: the monitor thread and
     * any thread that held a lock are gone, so the locks start afresh. */
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->poll_lock, NULL);
    pthread_mutex_init(&c->grant_lock, NULL);
    pthread_mutex_init(&tsc_lock, NULL);
    k = atomic_exchange(&c->cur, NULL);
    if (k) {
        k->next = c->retired;
        c->retired = k;
    }
    /* The parent's connections are the parent's: close the child's copies
     * of their sockets (a shutdown would cut the parent's too) and unmap
     * their segments, which the child must never write. */
    while ((k = c->retired)) {
        c->retired = k->next;
        release_conn(k);
    }
    c->nretired = 0;
    memset(c->granted, 0, sizeof(c->granted));
    atomic_store(&c->generation, 0);
    atomic_fetch_add(&c->epoch, 1);
    c->next_try_ns = 0;
    if (c->has_thread) {
        close(c->stop_fd);
        c->has_thread = 0;
        c->stop_fd = eventfd(0, EFD_CLOEXEC);
        if (c->stop_fd < 0 || pthread_create(&c->thread, NULL, monitor, c) != 0)
            return MOSAIC_ESYS;
        c->has_thread = 1;
    }
    return 0;
}

MOSAIC__EXPORT int mosaic_sched_client_state(const struct mosaic_sched_client *c)
{
    struct mosaic_sched_client *m = (struct mosaic_sched_client *)c;

    return atomic_load(&m->cur) ? MOSAIC_SCHED_CONNECTED : MOSAIC_SCHED_DISCONNECTED;
}

MOSAIC__EXPORT int mosaic_sched_client_role(const struct mosaic_sched_client *c)
{
    return atomic_load(&((struct mosaic_sched_client *)c)->role);
}

MOSAIC__EXPORT uint64_t mosaic_sched_client_partition_seq(const struct mosaic_sched_client *c)
{
    return atomic_load_explicit(&((struct mosaic_sched_client *)c)->partition_seq,
                                memory_order_acquire);
}

MOSAIC__EXPORT unsigned mosaic_sched_client_sms(const struct mosaic_sched_client *c)
{
    return atomic_load(&((struct mosaic_sched_client *)c)->sms);
}

MOSAIC__EXPORT const char *mosaic_sched_client_reason(struct mosaic_sched_client *c,
                                                      char *buf, unsigned len)
{
    if (!len)
        return buf;
    pthread_mutex_lock(&c->lock);
    if (snprintf(buf, len, "%s", c->reason) < 0)
        buf[0] = '\0';
    pthread_mutex_unlock(&c->lock);
    return buf;
}

MOSAIC__EXPORT uint64_t mosaic_sched_client_generation(const struct mosaic_sched_client *c)
{
    return atomic_load(&((struct mosaic_sched_client *)c)->generation);
}

MOSAIC__EXPORT uint64_t mosaic_sched_client_epoch(const struct mosaic_sched_client *c)
{
    return atomic_load_explicit(&((struct mosaic_sched_client *)c)->epoch,
                                memory_order_acquire);
}

MOSAIC__EXPORT uint64_t mosaic_sched_client_dropped(const struct mosaic_sched_client *c)
{
    return atomic_load(&((struct mosaic_sched_client *)c)->dropped);
}

MOSAIC__EXPORT uint64_t mosaic_sched_client_doorbells(const struct mosaic_sched_client *c)
{
    return atomic_load(&((struct mosaic_sched_client *)c)->doorbells);
}

/* The doorbell: a packet on the socket, only while the daemon sleeps. */
static void ring_doorbell(struct mosaic_sched_client *c, struct conn *k)
{
    struct mosaic__msg_hdr h;

    /* Pairs with the daemon's fence between setting NEED_WAKEUP and its
     * last look at the rings: one of the two sides sees the other. */
    atomic_thread_fence(memory_order_seq_cst);
    if (!(atomic_load_explicit(&k->shm.hdr->daemon_flags, memory_order_relaxed) &
          MOSAIC__SHM_NEED_WAKEUP))
        return;
    mosaic__msg_init(&h, MOSAIC__MSG_DOORBELL, sizeof(h));
    if (mosaic__send_msg(k->sock, &h, sizeof(h), -1) == 0)
        atomic_fetch_add_explicit(&c->doorbells, 1, memory_order_relaxed);
}

/*
 * After an HP request's end: the doorbell only while the daemon sleeps
 * and some BE kernel waits for a decision that the end may change (the
 * daemon clears HP_END_QUIET then). Otherwise the end waits in the ring
 * for the daemon's next look (at most a millisecond while a request is
 * open), carrying its own time stamp: a back-to-back service's every
 * request ended with a system call before (docs/sched.md, "The HP
 * client's cost per request").
 */
static void hp_end_doorbell(struct mosaic_sched_client *c, struct conn *k)
{
    uint32_t f;

    atomic_thread_fence(memory_order_seq_cst);
    f = atomic_load_explicit(&k->shm.hdr->daemon_flags, memory_order_relaxed);
    if ((f & MOSAIC__SHM_HP_END_QUIET) && !c->hp_end_always)
        return;
    ring_doorbell(c, k);
}

/*
 * The ring is running out of room (or out of it): one doorbell for the
 * whole backlog, not one per post. A daemon that is merely asleep wakes
 * on the first and drains the ring below half, which re-arms it; one that
 * cannot run (starved of CPU, stopped) gets nothing from a second.
 */
static void backlog_doorbell(struct mosaic_sched_client *c, struct conn *k)
{
    if (!atomic_load_explicit(&k->rung, memory_order_relaxed) &&
        !atomic_exchange_explicit(&k->rung, 1, memory_order_relaxed))
        ring_doorbell(c, k);
}

/*
 * A sleeping daemon drains HP rings only at its heartbeat; a ring half
 * full wakes it (one non-blocking send, only when the ring is running out
 * of room, never while it has plenty), and one below half again re-arms
 * that doorbell.
 */
static void check_backlog(struct mosaic_sched_client *c, struct conn *k, uint32_t head)
{
    uint32_t used = head - atomic_load_explicit(&k->shm.ev_ctl->tail, memory_order_relaxed);

    if (used > k->shm.ev_mask / 2)
        backlog_doorbell(c, k);
    else if (atomic_load_explicit(&k->rung, memory_order_relaxed))
        atomic_store_explicit(&k->rung, 0, memory_order_relaxed);
}

/* Posts e on k's event ring without waiting: 0 or MOSAIC_ERINGFULL.
 * Inlined into every caller: it is most of an HP launch's post. */
static inline __attribute__((always_inline)) int post(struct mosaic_sched_client *c, struct conn *k, const struct mosaic__entry *e)
{
    uint32_t head;

    if (MOSAIC__UNLIKELY(mosaic__ring_push_mp(k->shm.ev_ctl, k->shm.ev, k->shm.ev_mask, e) !=
                         0)) {
        atomic_fetch_add_explicit(&c->dropped, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&k->shm.hdr->ev_dropped, 1, memory_order_relaxed);
        backlog_doorbell(c, k);
        return MOSAIC_ERINGFULL;
    }
    /* The head line is this process's own (the daemon keeps its own index). */
    head = atomic_load_explicit(&k->shm.ev_ctl->head, memory_order_relaxed);
    if (MOSAIC__UNLIKELY((head & k->check_mask) == 0))
        check_backlog(c, k, head);
    return 0;
}

static struct conn *live(struct mosaic_sched_client *c, int role)
{
    struct conn *k = atomic_load_explicit(&c->cur, memory_order_acquire);

    if (!k || k->role != role)
        return NULL;
    return k;
}

uint64_t mosaic__kernel_id_join(const char *head, const char *tail)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (const unsigned char *p = (const unsigned char *)head; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    for (const unsigned char *p = (const unsigned char *)tail; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    /* 0 means "no kernel" on the ring (a graph of unknown kernels). */
    return h ? h : 1;
}

MOSAIC__EXPORT uint64_t mosaic_sched_kernel_id(const char *key)
{
    return mosaic__kernel_id_join(key, "");
}

static int hp_post(struct mosaic_sched_client *c, int type, uint64_t id, uint64_t value)
{
    struct conn *k = live(c, MOSAIC_SCHED_ROLE_HP);
    struct mosaic__entry e = {.type = (uint16_t)type, .id = id, .value = value};

    if (!k)
        return atomic_load(&c->cur) ? MOSAIC_EINVAL : MOSAIC_EDISCONNECTED;
    return post(c, k, &e);
}

MOSAIC__EXPORT int mosaic_sched_hp_request_begin(struct mosaic_sched_client *c,
                                                 uint64_t request_id, uint64_t ts_ns)
{
    return hp_post(c, MOSAIC__EV_HP_REQ_BEGIN, request_id, ts_ns ? ts_ns : mosaic__now_ns());
}

MOSAIC__EXPORT int mosaic_sched_hp_request_end(struct mosaic_sched_client *c,
                                               uint64_t request_id, uint64_t ts_ns)
{
    struct conn *k = live(c, MOSAIC_SCHED_ROLE_HP);
    int rc = hp_post(c, MOSAIC__EV_HP_REQ_END, request_id, ts_ns ? ts_ns : mosaic__now_ns());

    /* The end of a request may release held BE work: wake a sleeping
     * daemon (a non-blocking send, off the launch path) if some waits. */
    if (rc == 0 && k)
        hp_end_doorbell(c, k);
    return rc;
}

MOSAIC__EXPORT int mosaic_sched_hp_launch(struct mosaic_sched_client *c, uint64_t kernel_id)
{
    return hp_post(c, MOSAIC__EV_HP_LAUNCH, kernel_id, launch_stamp());
}

MOSAIC__EXPORT int mosaic_sched_hp_complete(struct mosaic_sched_client *c,
                                            uint64_t kernel_id, uint64_t duration_ns)
{
    return hp_post(c, MOSAIC__EV_HP_COMPLETE, kernel_id, duration_ns);
}

/* Drains k's grant ring into the shared table; 1 if ticket was granted. */
static int take_grant(struct mosaic_sched_client *c, struct conn *k, uint32_t ticket)
{
    struct mosaic__entry e;
    int found = 0;

    pthread_mutex_lock(&c->grant_lock);
    while (mosaic__ring_pop_shared(k->shm.gr_ctl, k->shm.gr, k->shm.gr_mask, &e)) {
        if (e.type != MOSAIC__EV_GRANT)
            continue;
        c->granted[c->granted_next].conn = k;
        c->granted[c->granted_next].ticket = e.ticket;
        c->granted_next = (c->granted_next + 1) % GRANT_SLOTS;
    }
    for (unsigned i = 0; i < GRANT_SLOTS; i++) {
        if (c->granted[i].conn == k && c->granted[i].ticket == ticket) {
            c->granted[i].conn = NULL;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&c->grant_lock);
    return found;
}

/* Cyclic compare of stream sequence numbers, as CU_STREAM_WAIT_VALUE_GEQ. */
static int seq_geq(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) >= 0;
}

/* Under c->lock: lets the waits on one gate slot of k pass (as
 * release_gates does for all of them). */
static void release_slot(struct mosaic_sched_client *c, struct conn *k, unsigned s)
{
    struct mosaic__gate_slot *g = &k->shm.gate[s];
    uint32_t want = atomic_load_explicit(&g->want, memory_order_acquire);

    atomic_store_explicit(&g->released, 1, memory_order_relaxed);
    atomic_store_explicit(&g->grant, want + MOSAIC__GATE_RELEASE, memory_order_release);
    if (want)
        atomic_fetch_add_explicit(&c->released, 1, memory_order_relaxed);
}

/*
 * Under c->lock, with a new daemon's BE connection `cur`: one step of
 * retired connection k's gate slots. A slot whose last kernel was granted
 * (or that never waited) is released at once: nothing of it waits at the
 * gate. A slot with a kernel waiting there is asked for on cur, as a plain
 * want of the slot's last kernel, and released when the new daemon grants
 * that want, which its policy decides as any other (its grace after a
 * start, HP's requests); once the released kernels are done (the old done
 * word, which the device still writes), BE_DONE tells the daemon. Before,
 * every such slot was released as soon as a new daemon was there, beside
 * whatever HP request that daemon did not know of yet (arbiter_faults'
 * kill-hold, BE back before HP: one request 1.01x over p). Returns 1 once
 * every slot of k is released and settled.
 */
static int stale_gates(struct mosaic_sched_client *c, struct conn *k, struct conn *cur)
{
    int settled = 1;

    for (unsigned s = 0; s < MOSAIC__GATE_SLOTS; s++) {
        struct mosaic__gate_slot *g = &k->shm.gate[s];
        uint32_t want = atomic_load_explicit(&g->want, memory_order_acquire);
        uint32_t grant = atomic_load_explicit(&g->grant, memory_order_acquire);
        uint64_t kid = atomic_load_explicit(&k->slot_kernel[s], memory_order_relaxed);

        switch (k->proxy[s].state) {
        case PROXY_NONE:
            if (!want || seq_geq(grant, want)) {
                release_slot(c, k, s);
                k->proxy[s].state = PROXY_SETTLED;
                break;
            }
            k->proxy[s].gen = 0;
            k->proxy[s].state = PROXY_ASKED;
            c->proxies++;
            __attribute__((fallthrough)); /* ask now */
        case PROXY_ASKED:
            if (k->proxy[s].gen != cur->gen) {
                struct mosaic__entry e = {.type = MOSAIC__EV_BE_WANT,
                                          .ticket = atomic_fetch_add(&c->next_ticket, 1),
                                          .id = kid ? kid : 0};
                if (post(c, cur, &e) != 0) {
                    settled = 0; /* ring full: next step */
                    break;
                }
                k->proxy[s].gen = cur->gen;
                k->proxy[s].ticket = e.ticket;
                ring_doorbell(c, cur);
            } else if (take_grant(c, cur, k->proxy[s].ticket)) {
                release_slot(c, k, s);
                k->proxy[s].seq = want;
                k->proxy[s].state = PROXY_RUNNING;
                break;
            }
            settled = 0;
            break;
        case PROXY_RUNNING:
            if (seq_geq(atomic_load_explicit(&g->done, memory_order_acquire), k->proxy[s].seq) ||
                k->proxy[s].gen != cur->gen) {
                /* The grant's daemon hears that its kernels finished (a
                 * daemon after it never heard of them). */
                if (k->proxy[s].gen == cur->gen) {
                    struct mosaic__entry e = {.type = MOSAIC__EV_BE_DONE, .id = kid};
                    if (post(c, cur, &e) != 0) {
                        settled = 0;
                        break;
                    }
                }
                k->proxy[s].state = PROXY_SETTLED;
                c->proxies--;
                break;
            }
            settled = 0;
            break;
        default:
            break;
        }
    }
    return settled;
}

/*
 * BE kernels enqueued behind a device-side wait on a connection that ended
 * have nobody to grant them. Once a new daemon is there they are asked of
 * it (stale_gates), since that one never heard of them; with
 * be-on-timeout run, while no daemon is there, they are released once the
 * daemon has been away be-timeout-ms (counted from the last connection's
 * end); with hold they wait for a daemon's return. So no stream is stuck
 * forever unless the configuration says hold and no daemon ever returns.
 */
static void release_stale_gates(struct mosaic_sched_client *c, uint64_t now)
{
    uint64_t limit = (uint64_t)atomic_load(&c->be_timeout_ms) * 1000000ull;
    int run = atomic_load(&c->be_on_timeout) == MOSAIC_SCHED_TIMEOUT_RUN;
    struct conn *cur = atomic_load(&c->cur);

    pthread_mutex_lock(&c->lock);
    for (struct conn *k = c->retired; k; k = k->next) {
        if (k->gates_released || k->role != MOSAIC_SCHED_ROLE_BE || !k->shm.gate)
            continue;
        if (cur && cur->role == MOSAIC_SCHED_ROLE_BE && !atomic_load(&cur->dead)) {
            if (stale_gates(c, k, cur))
                k->gates_released = 1;
        } else if (cur || (run && now - c->retired->dead_ns >= limit)) {
            /* Connected in another role (nobody to ask), or run's timeout. */
            release_gates(c, k);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

MOSAIC__EXPORT int mosaic_sched_be_admit(struct mosaic_sched_client *c, uint64_t kernel_id,
                                         uint64_t predicted_ns, int *outcome)
{
    uint32_t ticket = atomic_fetch_add(&c->next_ticket, 1);
    uint64_t start = mosaic__now_ns(), away_since;
    struct conn *posted = NULL;

    *outcome = MOSAIC_SCHED_UNCONTROLLED;
    for (;;) {
        struct conn *k = live(c, MOSAIC_SCHED_ROLE_BE);
        uint64_t now = mosaic__now_ns();

        if (!k) {
            uint32_t gen = atomic_load(&c->gen_futex);
            uint64_t limit = (uint64_t)atomic_load(&c->be_timeout_ms) * 1000000ull;
            if (atomic_load(&c->cur))
                return MOSAIC_EINVAL; /* connected, but not as BE */
            away_since = atomic_load(&c->be_away_since);
            if (!away_since) {
                uint64_t zero = 0;
                away_since = now;
                if (!atomic_compare_exchange_strong(&c->be_away_since, &zero, now))
                    away_since = zero;
            }
            if (now - away_since >= limit) {
                if (atomic_load(&c->be_on_timeout) == MOSAIC_SCHED_TIMEOUT_RUN)
                    return 0;
                /* hold: a call made after the timeout had already run out
                 * waits up to be-timeout-ms more for a reconnection before
                 * answering, since a caller that asks again in a loop (the
                 * shim's BE gate) would otherwise spin on a core for the
                 * whole outage (measured: 86% of a core). */
                if (start >= away_since && start - away_since >= limit &&
                    now - start < limit) {
                    if (!c->has_thread)
                        mosaic_sched_client_poll(c);
                    mosaic__futex_wait(&c->gen_futex, gen, 10000);
                    continue;
                }
                return MOSAIC_ETIMEDOUT;
            }
            if (!c->has_thread)
                mosaic_sched_client_poll(c);
            mosaic__futex_wait(&c->gen_futex, gen, 10000);
            continue;
        }
        atomic_store(&c->be_away_since, 0);
        if (posted != k) {
            struct mosaic__entry e = {.type = MOSAIC__EV_BE_WANT, .ticket = ticket,
                                      .id = kernel_id, .value = predicted_ns};
            if (post(c, k, &e) != 0) {
                /* BE may wait: give the daemon a moment to drain. */
                ring_doorbell(c, k);
                if (now - start > 1000000000ull)
                    return MOSAIC_ERINGFULL;
                usleep(100);
                continue;
            }
            posted = k;
            ring_doorbell(c, k);
        }
        uint32_t seen = atomic_load_explicit(&k->shm.hdr->grant_futex, memory_order_acquire);
        if (take_grant(c, k, ticket)) {
            *outcome = MOSAIC_SCHED_GRANTED;
            return 0;
        }
        if (atomic_load(&k->dead))
            continue;
        if (now - start < SPIN_NS) {
            cpu_relax();
            continue;
        }
        atomic_fetch_add(&k->shm.hdr->grant_waiters, 1);
        mosaic__futex_wait(&k->shm.hdr->grant_futex, seen, 10000);
        atomic_fetch_sub(&k->shm.hdr->grant_waiters, 1);
        if (!c->has_thread)
            mosaic_sched_client_poll(c);
    }
}

MOSAIC__EXPORT int mosaic_sched_gate_get(struct mosaic_sched_client *c,
                                         struct mosaic_sched_gate *g)
{
    struct conn *k = atomic_load_explicit(&c->cur, memory_order_acquire);

    memset(g, 0, sizeof(*g));
    if (!k)
        return MOSAIC_EDISCONNECTED;
    g->base = k->shm.gate;
    g->bytes = k->shm.gate_bytes;
    g->generation = k->gen;
    g->slots = MOSAIC__GATE_SLOTS;
    g->stride = sizeof(struct mosaic__gate_slot);
    g->grant_off = offsetof(struct mosaic__gate_slot, grant);
    g->done_off = offsetof(struct mosaic__gate_slot, done);
    g->hp_done_off = offsetof(struct mosaic__gate_slot, hp_done);
    return 0;
}

/* The live connection of this role and generation, or NULL. */
static struct conn *live_gen(struct mosaic_sched_client *c, int role, uint64_t gen)
{
    struct conn *k = live(c, role);

    return k && k->gen == gen && !atomic_load(&k->dead) ? k : NULL;
}

MOSAIC__EXPORT int mosaic_sched_be_want_gated(struct mosaic_sched_client *c,
                                              uint64_t generation, unsigned slot,
                                              uint32_t seq, uint64_t kernel_id,
                                              uint64_t predicted_ns)
{
    struct conn *k = live_gen(c, MOSAIC_SCHED_ROLE_BE, generation);
    uint32_t ticket = atomic_fetch_add(&c->next_ticket, 1);
    struct mosaic__entry e = {.type = MOSAIC__EV_BE_WANT, .ticket = ticket,
                              .flags = (uint16_t)(MOSAIC__EF_GATED | slot), .aux = seq,
                              .id = kernel_id, .value = predicted_ns};
    int rc;

    if (slot >= MOSAIC__GATE_SLOTS)
        return MOSAIC_EINVAL;
    if (!k)
        return MOSAIC_EDISCONNECTED;
    /* Before the daemon can see the want, so that a monitor releasing the
     * slot covers this kernel too. */
    atomic_store_explicit(&k->slot_kernel[slot], kernel_id, memory_order_relaxed);
    atomic_store_explicit(&k->shm.gate[slot].want, seq, memory_order_release);
    rc = post(c, k, &e);
    /* A BE kernel waits for this want: wake a sleeping daemon now. */
    if (rc == 0)
        ring_doorbell(c, k);
    return rc;
}

MOSAIC__EXPORT int mosaic_sched_hp_launch_gated(struct mosaic_sched_client *c,
                                                uint64_t generation, unsigned slot,
                                                uint32_t seq, uint64_t kernel_id)
{
    struct conn *k = live_gen(c, MOSAIC_SCHED_ROLE_HP, generation);
    struct mosaic__entry e = {.type = MOSAIC__EV_HP_LAUNCH,
                              .flags = (uint16_t)(MOSAIC__EF_GATED | slot), .aux = seq,
                              .id = kernel_id, .value = launch_stamp()};

    if (slot >= MOSAIC__GATE_SLOTS)
        return MOSAIC_EINVAL;
    if (!k)
        return atomic_load(&c->cur) ? MOSAIC_EINVAL : MOSAIC_EDISCONNECTED;
    return post(c, k, &e);
}

/* An HP_REQ_END with flags (GATED | slot, the write's number seq; or
 * COVERS alone), on the connection of generation. */
static int hp_end_flagged(struct mosaic_sched_client *c, uint64_t generation, unsigned flags,
                          uint32_t seq, uint64_t request_id, uint64_t ts_ns)
{
    struct conn *k = live_gen(c, MOSAIC_SCHED_ROLE_HP, generation);
    struct mosaic__entry e = {.type = MOSAIC__EV_HP_REQ_END, .flags = (uint16_t)flags,
                              .aux = seq, .id = request_id,
                              .value = ts_ns ? ts_ns : mosaic__now_ns()};
    int rc;

    if (!k)
        return atomic_load(&c->cur) ? MOSAIC_EINVAL : MOSAIC_EDISCONNECTED;
    rc = post(c, k, &e);
    if (rc == 0)
        hp_end_doorbell(c, k); /* as mosaic_sched_hp_request_end */
    return rc;
}

MOSAIC__EXPORT int mosaic_sched_hp_request_end_gated(struct mosaic_sched_client *c,
                                                     uint64_t generation, unsigned slot,
                                                     uint32_t seq, uint64_t request_id,
                                                     uint64_t ts_ns)
{
    if (slot >= MOSAIC__GATE_SLOTS)
        return MOSAIC_EINVAL;
    return hp_end_flagged(c, generation, MOSAIC__EF_GATED | slot, seq, request_id, ts_ns);
}

MOSAIC__EXPORT int mosaic_sched_hp_request_end_covered(struct mosaic_sched_client *c,
                                                       uint64_t generation, unsigned slot,
                                                       uint32_t seq, uint64_t request_id,
                                                       uint64_t ts_ns)
{
    if (slot >= MOSAIC__GATE_SLOTS)
        return MOSAIC_EINVAL;
    return hp_end_flagged(c, generation, MOSAIC__EF_GATED | MOSAIC__EF_COVERS | slot, seq,
                          request_id, ts_ns);
}

MOSAIC__EXPORT int mosaic_sched_hp_request_end_host(struct mosaic_sched_client *c,
                                                    uint64_t generation, uint64_t request_id,
                                                    uint64_t ts_ns)
{
    return hp_end_flagged(c, generation, MOSAIC__EF_COVERS, 0, request_id, ts_ns);
}

MOSAIC__EXPORT uint64_t mosaic_sched_client_released(const struct mosaic_sched_client *c)
{
    return atomic_load(&((struct mosaic_sched_client *)c)->released);
}

MOSAIC__EXPORT int mosaic_sched_be_done(struct mosaic_sched_client *c, uint64_t kernel_id)
{
    struct conn *k = live(c, MOSAIC_SCHED_ROLE_BE);
    struct mosaic__entry e = {.type = MOSAIC__EV_BE_DONE, .id = kernel_id};

    if (!k)
        return MOSAIC_EDISCONNECTED;
    return post(c, k, &e);
}

/* BE: defines graph `graph_id` (its kernels' ids in launch order) on the
 * connection of `generation`, one ring entry per kernel (proto.h says why
 * entries and not a message). Never waits. A definition cut short by a
 * full ring is incomplete for the daemon, whose policies then treat the
 * graph as an unknown kernel; the caller defines it again on its next
 * launch. */
MOSAIC__EXPORT int mosaic_sched_be_graph_define(struct mosaic_sched_client *c,
                                                uint64_t generation, uint64_t graph_id,
                                                const uint64_t *kernel_ids, unsigned n)
{
    struct conn *k = live_gen(c, MOSAIC_SCHED_ROLE_BE, generation);

    if (!graph_id || n == 0 || n > MOSAIC__GRAPH_MAX_KERNELS || !kernel_ids)
        return MOSAIC_EINVAL;
    for (unsigned i = 0; i < n; i++)
        if (!kernel_ids[i])
            return MOSAIC_EINVAL; /* an unnamed kernel: the graph is unknown */
    if (!k)
        return MOSAIC_EDISCONNECTED;
    for (unsigned i = 0; i < n; i++) {
        struct mosaic__entry e = {.type = MOSAIC__EV_BE_GRAPH, .ticket = i, .aux = n,
                                  .id = graph_id, .value = kernel_ids[i]};
        if (post(c, k, &e) != 0)
            return MOSAIC_ERINGFULL;
    }
    return 0;
}
