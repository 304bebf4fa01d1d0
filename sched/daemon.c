/*
 * The mosaic-sched event loop: one thread, one epoll set (control socket,
 * clients' sockets, signals, metrics), and a scan of every client's event
 * ring on each turn.
 *
 * Clients post events without system calls, so the daemon polls their
 * rings: it keeps polling for spin-us after the last activity (a BE grant
 * round trip then costs a few microseconds), then sets NEED_WAKEUP in every
 * segment and sleeps in epoll_wait until a doorbell packet, a socket event
 * or the next heartbeat tick. This is io_uring's SQPOLL idea, with the
 * same fence pairing on both sides so that no event is left unseen.
 *
 * Nothing a client writes is trusted: ring indices are the daemon's own,
 * every entry is checked against the client's role, and a client that
 * keeps sending bad entries or messages is disconnected, which affects no
 * other client.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "daemon.h"
#include "mosaic/predict.h"

int mosaic__dlog_level = MOSAIC__L_INFO;

void mosaic__dlog(int level, const char *fmt, ...)
{
    static const char *const tags[] = {"error", "warn", "info", "debug"};
    char line[1400];
    int n;
    va_list ap;

    if (level > mosaic__dlog_level)
        return;
    n = snprintf(line, sizeof(line), "mosaic-sched %s: ", tags[level]);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One write per line so that lines never interleave. */
    n = (int)strlen(line);
    if ((size_t)n >= sizeof(line) - 1)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}

/* ---- the control socket --------------------------------------------------- */

int mosaic__listen_socket(const struct mosaic__sched_config *cfg, int *out, char *err,
                          size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    mode_t old;
    int fd, rc;

    *out = -1;
    if (strlen(cfg->socket) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "socket %s: the path is too long for a Unix socket", cfg->socket);
        return MOSAIC_EINVAL;
    }
    strcpy(sa.sun_path, cfg->socket);
    if (lstat(cfg->socket, &st) == 0) {
        int probe;
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "socket %s: something that is not a socket is there (%s); "
                     "it is not replaced: remove it or choose another `socket` path",
                     cfg->socket, S_ISLNK(st.st_mode) ? "a symlink" : "a file");
            return MOSAIC_EUNSAFE;
        }
        /* A socket that still answers belongs to a running daemon. */
        probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            close(probe);
            snprintf(err, errlen, "socket %s: another mosaic-sched is listening there; stop "
                     "it first (one daemon per GPU node)", cfg->socket);
            return MOSAIC_EUNSAFE;
        }
        if (probe >= 0)
            close(probe);
        if (st.st_uid != geteuid()) {
            snprintf(err, errlen, "socket %s: a stale socket owned by uid %u, not this "
                     "daemon's: remove it by hand", cfg->socket, (unsigned)st.st_uid);
            return MOSAIC_EUNSAFE;
        }
        mosaic__dlog(MOSAIC__L_INFO, "removing the stale socket %s (no daemon answers it)",
                     cfg->socket);
        if (unlink(cfg->socket) != 0) {
            snprintf(err, errlen, "socket %s: cannot remove the stale socket: %s", cfg->socket,
                     strerror(errno));
            return MOSAIC_ESYS;
        }
    }
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return MOSAIC_ESYS;
    /* The umask makes the socket's mode right from the moment it exists
     * (a chmod afterwards would leave a window). */
    old = umask(cfg->socket_mode == 0660 ? 0117 : 0177);
    rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc != 0) {
        snprintf(err, errlen, "socket %s: cannot bind: %s (does the directory exist? "
                 "systemd's RuntimeDirectory=mosaic creates /run/mosaic)",
                 cfg->socket, strerror(errno));
        close(fd);
        return MOSAIC_ESYS;
    }
    if (cfg->socket_group[0]) {
        struct group *gr = getgrnam(cfg->socket_group);
        if (!gr || fchownat(AT_FDCWD, cfg->socket, (uid_t)-1, gr->gr_gid,
                            AT_SYMLINK_NOFOLLOW) != 0) {
            snprintf(err, errlen, "socket-group %s: %s", cfg->socket_group,
                     gr ? strerror(errno) : "no such group");
            close(fd);
            unlink(cfg->socket);
            return MOSAIC_ECONFIG;
        }
    }
    if (listen(fd, 64) != 0) {
        close(fd);
        return MOSAIC_ESYS;
    }
    *out = fd;
    return 0;
}

/* ---- clients ---------------------------------------------------------------- */

#define MAX_OPEN_REQUESTS 64
#define BAD_LIMIT 64 /* bad entries or messages before a client is dropped */

struct want {
    uint32_t ticket;
    uint64_t kernel_id, predicted_ns, since_ns;
    int held; /* a decision already held it once */
    int gated; /* waits on the device behind gate slot `slot` for grant >= seq */
    unsigned slot;
    uint32_t seq;
};

#define MAX_PENDING_ENDS 8

/* Cyclic compare of stream sequence numbers, as CU_STREAM_WAIT_VALUE_GEQ. */
static int seq_geq(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) >= 0;
}

/* BE, device gate: one slot's granted kernels not yet seen done, in grant
 * order (the running one first, then up to gate-ahead more). */
struct be_slot {
    uint32_t seq[MOSAIC__GATE_AHEAD_MAX + 1];
    uint64_t kernel_id[MOSAIC__GATE_AHEAD_MAX + 1];
    unsigned head, n;
};
#define BE_SLOT_AT(r, i) (((r)->head + (i)) % (MOSAIC__GATE_AHEAD_MAX + 1))

struct client {
    int fd;
    int active; /* handshake done */
    uint32_t id;
    int role;
    struct mosaic__peer peer;
    uint64_t accepted_ns;
    uint64_t posted_ns; /* when the daemon last found an event in its ring */
    struct mosaic__shm shm;
    uint32_t ev_pos, gr_pos;
    struct {
        uint64_t id, begin_ns; /* begin_ns: the client's clock, for latency */
        uint64_t seen_ns;      /* the daemon's, for hp-request-timeout-ms */
    } open[MAX_OPEN_REQUESTS];
    unsigned nopen;
    struct want *wants;
    unsigned nwants, cap_wants;
    unsigned be_in_flight;
    struct be_slot be_run[MOSAIC__GATE_SLOTS];
    unsigned be_gated_running;
    /* HP, device completion: the last launch posted per slot, the last
     * completion seen, and request ends that wait for the device. */
    uint32_t hp_launched[MOSAIC__GATE_SLOTS], hp_done_seen[MOSAIC__GATE_SLOTS];
    uint64_t hp_done_ns[MOSAIC__GATE_SLOTS]; /* when the daemon saw the word move */
    uint64_t hp_used; /* a bit per slot that ever had a gated launch */
    /* An HP launch without a completion write since the first open request
     * began: the device words do not cover the request's work, so its end
     * is the host's. */
    int hp_untracked;
    struct {
        uint64_t id, ts_ns, seen_ns;
        uint32_t target[MOSAIC__GATE_SLOTS];
        uint64_t mask; /* slots whose completion is still awaited */
    } pend[MAX_PENDING_ENDS];
    unsigned npend;
    uint64_t events, bad, dropped_seen, drop_logged_ns;
    uint64_t client_beat, client_beat_ns; /* its counter, and when it last moved */
};

#define NBUCKETS 12
static const double hist_le[NBUCKETS] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                         0.05,   0.1,   0.2,   0.5,   1.0,  2.0};

struct daemon {
    const struct mosaic__sched_config *cfg;
    struct mosaic__policy policy;
    int ep, lfd, sfd, mfd;
    struct client **clients;
    unsigned nclients;
    uint32_t next_id;
    int concurrent;
    char mps_msg[512];
    uint64_t started_ns, last_activity_ns, next_tick_ns, beat;
    uint64_t watchdog_ns, next_watchdog_ns;
    unsigned rr; /* round-robin start among BE clients */
    struct mosaic__partition part; /* policy static's split; hp_sms 0: none */
    /* Metrics. */
    uint64_t admit_immediate, admit_after_hold, held_total, held_ns_total;
    uint64_t proto_errors, refused, hp_expired;
    uint64_t gated_grants, gated_ahead, gated_passed;
    uint64_t hp_device_done, hp_ends_deferred, hp_ends_device;
    uint64_t hist[NBUCKETS + 1], hist_count;
    double hist_sum;
    uint64_t clients_total;
    unsigned hp_clients_seen; /* HP clients welcomed since the start */
};

static char tag_listen, tag_signal, tag_metrics;

static void policy_event(struct daemon *d, int type, uint32_t client, uint64_t id, uint64_t ts)
{
    struct mosaic__policy_event e = {.type = type, .client_id = client, .id = id, .ts_ns = ts};

    if (d->policy.observe)
        d->policy.observe(d->policy.state, &e);
}

static unsigned hp_words(struct daemon *d, struct client *c, uint64_t now);
static unsigned hp_pending(struct daemon *d, struct client *c, uint64_t now, int final);

/* One kernel of a BE graph's definition, checked by mosaic__entry_check:
 * passed to the policy, which keeps the graphs (the daemon's wants,
 * grants and dones name a graph by its id as they would a kernel). */
static void graph_event(struct daemon *d, struct client *c, const struct mosaic__entry *e)
{
    struct mosaic__policy_event pe = {.type = MOSAIC__PEV_BE_GRAPH, .client_id = c->id,
                                      .id = e->id, .kernel = e->value, .index = e->ticket,
                                      .count = e->aux};

    if (d->policy.observe)
        d->policy.observe(d->policy.state, &pe);
}

static void client_free(struct daemon *d, struct client *c, const char *why)
{
    /* Request ends the host posted that waited for the device are ended
     * now (a service that exits right after its last request): the words
     * are read a last time. */
    if (c->active && c->npend) {
        uint64_t now = mosaic__now_ns();
        hp_words(d, c, now);
        hp_pending(d, c, now, 1);
    }
    if (c->active)
        mosaic__dlog(MOSAIC__L_INFO, "client %u (pid %d, %s) gone: %s; its state is freed",
                     c->id, (int)c->peer.pid, mosaic__role_str(c->role), why);
    if (c->active)
        policy_event(d, MOSAIC__PEV_CLIENT_GONE, c->id, 0, mosaic__now_ns());
    epoll_ctl(d->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    mosaic__shm_unmap(&c->shm);
    free(c->wants);
    for (unsigned i = 0; i < d->nclients; i++) {
        if (d->clients[i] == c) {
            d->clients[i] = d->clients[--d->nclients];
            break;
        }
    }
    free(c);
}

static void send_refuse(struct client *c, int code, const char *reason)
{
    struct mosaic__msg_refuse r;

    memset(&r, 0, sizeof(r));
    mosaic__msg_init(&r.h, MOSAIC__MSG_REFUSE, sizeof(r));
    r.code = code;
    /* Cut to fit (the message is fixed-size); memset above terminates it. */
    memcpy(r.reason, reason, strnlen(reason, sizeof(r.reason) - 1));
    mosaic__send_msg(c->fd, &r, sizeof(r), -1);
}

static void protocol_error(struct daemon *d, struct client *c, const char *what)
{
    d->proto_errors++;
    c->bad++;
    /* The first few are logged; a flood is summarised by the drop. */
    if (c->bad <= 4)
        mosaic__dlog(MOSAIC__L_WARN, "client %u (pid %d, uid %u): rejected: %s", c->id,
                     (int)c->peer.pid, (unsigned)c->peer.uid, what);
}

static unsigned count_role(struct daemon *d, int role)
{
    unsigned n = 0;

    for (unsigned i = 0; i < d->nclients; i++)
        n += d->clients[i]->active && d->clients[i]->role == role;
    return n;
}

static cJSON *status_json(struct daemon *d);

static int handle_status(struct daemon *d, struct client *c)
{
    cJSON *j = status_json(d);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    size_t n = text ? strlen(text) : 0;
    char *buf;
    int rc = MOSAIC_ENOMEM;

    /* Hundreds of clients with long paths may not fit one message: the
     * per-client list is then left out and says so, the totals stay. */
    if (text && n + sizeof(struct mosaic__msg_hdr) > MOSAIC__SCHED_STATUS_MAX) {
        cJSON_DeleteItemFromObjectCaseSensitive(j, "clients");
        cJSON_AddNumberToObject(j, "clients_omitted", count_role(d, MOSAIC_SCHED_ROLE_HP) +
                                                          count_role(d, MOSAIC_SCHED_ROLE_BE));
        free(text);
        text = cJSON_PrintUnformatted(j);
        n = text ? strlen(text) : 0;
    }
    cJSON_Delete(j);
    if (text && n + sizeof(struct mosaic__msg_hdr) <= MOSAIC__SCHED_STATUS_MAX &&
        (buf = malloc(n + sizeof(struct mosaic__msg_hdr)))) {
        mosaic__msg_init((struct mosaic__msg_hdr *)(void *)buf, MOSAIC__MSG_STATUS_REPLY,
                         n + sizeof(struct mosaic__msg_hdr));
        memcpy(buf + sizeof(struct mosaic__msg_hdr), text, n);
        rc = mosaic__send_msg(c->fd, buf, n + sizeof(struct mosaic__msg_hdr), -1);
        free(buf);
    }
    free(text);
    return rc;
}

/* Sends text as a STATUS_REPLY (the answer to a control message). */
static int send_text(struct client *c, const char *text)
{
    char buf[MOSAIC__SCHED_REASON_LEN + sizeof(struct mosaic__msg_hdr)];
    size_t n = strlen(text);

    if (n > MOSAIC__SCHED_REASON_LEN)
        n = MOSAIC__SCHED_REASON_LEN;
    mosaic__msg_init((struct mosaic__msg_hdr *)(void *)buf, MOSAIC__MSG_STATUS_REPLY,
                     n + sizeof(struct mosaic__msg_hdr));
    memcpy(buf + sizeof(struct mosaic__msg_hdr), text, n);
    return mosaic__send_msg(c->fd, buf, n + sizeof(struct mosaic__msg_hdr), -1);
}

/*
 * `mosaic-sched partition HP_SMS`: a new split for the connected clients
 * and the ones still to come (their WELCOME), HP on a group of hp_sms, BE
 * on the rest; 0 puts both on the full GPU. Each connected client gets a
 * PARTITION message with its role's size, which its shim applies between
 * two launches (docs/partitions.md, "Changing the partition"). Only the
 * daemon's own user or root may ask: a partition takes SMs from the HP
 * service. A size the GPU cannot make is refused with the nearest ones.
 */
static void handle_partition_set(struct daemon *d, struct client *c,
                                 const struct mosaic__msg_partition_set *m)
{
    char why[MOSAIC__SCHED_REASON_LEN], text[MOSAIC__SCHED_REASON_LEN];
    struct mosaic__msg_partition pm;
    unsigned hp = m->hp_sms, be = 0, sent = 0;

    if (c->peer.uid != geteuid() && c->peer.uid != 0) {
        snprintf(why, sizeof(why), "uid %u may not change the partition: only the daemon's "
                 "user (uid %u) or root", (unsigned)c->peer.uid, (unsigned)geteuid());
        send_refuse(c, MOSAIC_EREFUSED, why);
        return;
    }
    if (hp) {
        struct mosaic_gpu_desc g;
        if (mosaic__static_hp_size_check(hp, why, sizeof(why)) != 0) {
            send_refuse(c, MOSAIC_ECONFIG, why);
            return;
        }
        mosaic_gpu_desc_h200(&g);
        be = (unsigned)g.sm_count - hp;
    }
    d->part.hp_sms = hp;
    d->part.be_sms = be;
    d->part.from_config = 1;
    for (unsigned i = 0; i < d->nclients; i++) {
        struct client *k = d->clients[i];
        if (!k->active)
            continue;
        memset(&pm, 0, sizeof(pm));
        mosaic__msg_init(&pm.h, MOSAIC__MSG_PARTITION, sizeof(pm));
        pm.sms = k->role == MOSAIC_SCHED_ROLE_HP ? hp : be;
        sent += mosaic__send_msg(k->fd, &pm, sizeof(pm), -1) == 0;
    }
    if (hp)
        snprintf(text, sizeof(text), "partition: HP %u SMs, BE %u SMs; sent to %u clients", hp,
                 be, sent);
    else
        snprintf(text, sizeof(text), "partition: HP and BE on the full GPU; sent to %u "
                 "clients", sent);
    mosaic__dlog(MOSAIC__L_INFO, "pid %d (uid %u) set the %s", (int)c->peer.pid,
                 (unsigned)c->peer.uid, text);
    send_text(c, text);
}

static void handle_hello(struct daemon *d, struct client *c, const struct mosaic__msg_hello *h)
{
    struct mosaic__msg_welcome w;
    char why[MOSAIC__SCHED_REASON_LEN];
    int role, fd, rc;

    if (h->pid != c->peer.pid)
        mosaic__dlog(MOSAIC__L_DEBUG, "client pid %d says it is %d (another pid namespace?); "
                     "the kernel's SO_PEERCRED pid is used", (int)c->peer.pid, (int)h->pid);
    role = mosaic__role_decide(d->cfg, &c->peer, (int)h->role, why, sizeof(why));
    if (role < 0) {
        d->refused++;
        mosaic__dlog(MOSAIC__L_WARN, "refused pid %d (uid %u, %s): %s", (int)c->peer.pid,
                     (unsigned)c->peer.uid, c->peer.exe[0] ? c->peer.exe : "?", why);
        send_refuse(c, MOSAIC_EREFUSED, why);
        client_free(d, c, "refused");
        return;
    }
    rc = mosaic__shm_create(d->cfg->ring_entries, c->id, (uint32_t)role, &c->shm, &fd);
    if (rc != 0) {
        mosaic__dlog(MOSAIC__L_ERROR, "cannot create a segment for pid %d: %s (%s)",
                     (int)c->peer.pid, mosaic_strerror(rc), strerror(errno));
        send_refuse(c, rc, "the daemon could not create the shared segment");
        client_free(d, c, "no segment");
        return;
    }
    c->role = role;
    c->cap_wants = d->cfg->ring_entries;
    c->wants = calloc(c->cap_wants, sizeof(*c->wants));
    atomic_store(&c->shm.hdr->daemon_beat, d->beat);
    memset(&w, 0, sizeof(w));
    mosaic__msg_init(&w.h, MOSAIC__MSG_WELCOME, sizeof(w));
    w.role = (uint32_t)role;
    w.client_id = c->id;
    w.shm_size = (uint32_t)c->shm.size;
    w.heartbeat_ms = d->cfg->heartbeat_ms;
    w.be_timeout_ms = d->cfg->be_timeout_ms;
    w.be_on_timeout = (uint32_t)d->cfg->be_on_timeout;
    /* Policy static's split, each role its side (0 elsewhere: full GPU). */
    w.sms = role == MOSAIC_SCHED_ROLE_HP ? d->part.hp_sms : d->part.be_sms;
    rc = c->wants ? mosaic__send_msg(c->fd, &w, sizeof(w), fd) : MOSAIC_ENOMEM;
    close(fd);
    if (rc != 0) {
        client_free(d, c, "the welcome could not be sent");
        return;
    }
    c->active = 1;
    /* A new client counts as busy for a heartbeat (any_waiting): an HP
     * service starts posting at once, and a ring left to a sleeping
     * daemon until then could fill before its backlog doorbell is heard. */
    c->posted_ns = mosaic__now_ns();
    d->clients_total++;
    if (role == MOSAIC_SCHED_ROLE_HP)
        d->hp_clients_seen++;
    mosaic__dlog(MOSAIC__L_INFO, "client %u: pid %d uid %u %s granted %s", c->id,
                 (int)c->peer.pid, (unsigned)c->peer.uid, c->peer.exe[0] ? c->peer.exe : "?",
                 mosaic__role_str(role));
}

/* A packet on a client's socket (or its end). */
static unsigned drain_client(struct daemon *d, struct client *c);

static void handle_socket(struct daemon *d, struct client *c, uint32_t events)
{
    union {
        char buf[MOSAIC__SCHED_MSG_MAX];
        struct mosaic__msg_hdr align;
    } in;
    struct mosaic__msg m;
    char why[200];
    long n;
    int rc;

    (void)events;
    for (int round = 0; round < 16; round++) {
        n = mosaic__recv_msg(c->fd, in.buf, sizeof(in.buf), NULL, MSG_DONTWAIT);
        if (n == MOSAIC_ETIMEDOUT)
            return; /* nothing more to read */
        if (n == 0 || n == MOSAIC_EDISCONNECTED) {
            /* What it posted before it went (an HP service's last
             * request end, which rings no doorbell while no BE kernel
             * waits) is read first. */
            if (c->active)
                drain_client(d, c);
            client_free(d, c, "socket closed");
            return;
        }
        if (n < 0) {
            protocol_error(d, c, "a message longer than the protocol allows");
            if (!c->active) {
                send_refuse(c, MOSAIC_EPROTO, "message too long");
                client_free(d, c, "oversized handshake");
                return;
            }
            continue;
        }
        rc = mosaic__msg_parse(in.buf, (size_t)n, &m, why, sizeof(why));
        if (rc == 0 && m.h.type == MOSAIC__MSG_STATUS) {
            handle_status(d, c);
            if (!c->active) {
                client_free(d, c, "status answered");
                return;
            }
            continue;
        }
        if (rc == 0 && m.h.type == MOSAIC__MSG_PARTITION_SET && !c->active) {
            handle_partition_set(d, c, &m.u.partition_set);
            client_free(d, c, "partition request answered");
            return;
        }
        if (!c->active) {
            if (rc == 0 && m.h.type == MOSAIC__MSG_HELLO) {
                handle_hello(d, c, &m.u.hello);
                return;
            }
            if (rc == 0)
                snprintf(why, sizeof(why), "message type %u before the handshake", m.h.type);
            protocol_error(d, c, why);
            send_refuse(c, rc ? rc : MOSAIC_EPROTO, why);
            client_free(d, c, "bad handshake");
            return;
        }
        if (rc == 0 && m.h.type == MOSAIC__MSG_DOORBELL)
            continue; /* the wake-up itself was the point */
        if (rc == 0)
            snprintf(why, sizeof(why), "unexpected message type %u", m.h.type);
        protocol_error(d, c, why);
        if (c->bad > BAD_LIMIT) {
            client_free(d, c, "too many bad messages");
            return;
        }
    }
}

static void observe_latency(struct daemon *d, uint64_t ns)
{
    double s = (double)ns / 1e9;
    int b = 0;

    while (b < NBUCKETS && s > hist_le[b])
        b++;
    d->hist[b]++;
    d->hist_count++;
    d->hist_sum += s;
}

/* Ends open request i at ts (the client's clock, the daemon's for a
 * device-observed end). */
static void hp_end(struct daemon *d, struct client *c, unsigned i, uint64_t ts)
{
    uint64_t id = c->open[i].id;

    if (ts >= c->open[i].begin_ns)
        observe_latency(d, ts - c->open[i].begin_ns);
    c->open[i] = c->open[--c->nopen];
    policy_event(d, MOSAIC__PEV_HP_END, c->id, id, ts);
}

/*
 * A request's end as the host saw it may come before its kernels finished
 * (mosaic_request_end called without a synchronisation). When the client
 * posts device completion words, the end waits until every stream's word
 * has reached the last launch posted before the end: the request ends
 * when the daemon sees the device finish it. Returns 1 when deferred.
 */
static int hp_defer_end(struct daemon *d, struct client *c, uint64_t id, uint64_t ts)
{
    uint64_t mask = 0;

    for (unsigned s = 0; s < MOSAIC__GATE_SLOTS; s++) {
        if (!(c->hp_used & (1ull << s)))
            continue;
        if (!seq_geq((uint32_t)atomic_load_explicit(&c->shm.gate[s].hp_done,
                                                    memory_order_acquire),
                     c->hp_launched[s]))
            mask |= 1ull << s;
    }
    if (!mask)
        return 0;
    if (c->npend >= MAX_PENDING_ENDS)
        return 0; /* too many in a row: the host's end is the best there is */
    c->pend[c->npend].id = id;
    c->pend[c->npend].ts_ns = ts;
    c->pend[c->npend].seen_ns = mosaic__now_ns();
    c->pend[c->npend].mask = mask;
    memcpy(c->pend[c->npend].target, c->hp_launched, sizeof(c->hp_launched));
    c->npend++;
    d->hp_ends_deferred++;
    return 1;
}

/* Reads an HP client's completion words; returns how many moved. */
static unsigned hp_words(struct daemon *d, struct client *c, uint64_t now)
{
    unsigned work = 0;

    for (unsigned s = 0; c->hp_used && s < MOSAIC__GATE_SLOTS; s++) {
        uint32_t done;
        if (!(c->hp_used & (1ull << s)))
            continue;
        done = (uint32_t)atomic_load_explicit(&c->shm.gate[s].hp_done, memory_order_acquire);
        if (done != c->hp_done_seen[s]) {
            d->hp_device_done += (uint32_t)(done - c->hp_done_seen[s]);
            c->hp_done_seen[s] = done;
            c->hp_done_ns[s] = now;
            work++;
        }
    }
    return work;
}

/*
 * When the device finished the work of a request whose end the host
 * posted at host_ts: the last moment the daemon saw a completion word move,
 * when every launch of the request had a completion write and every word
 * has reached its last launch; host_ts otherwise, and never later than it
 * (the daemon's sight of a word lags the device by its polling interval).
 * A service that synchronises, then post-processes on the CPU and only
 * then ends the request frees its GPU time from the device's moment on.
 */
static uint64_t hp_end_time(struct daemon *d, struct client *c, uint64_t begin, uint64_t host_ts)
{
    uint64_t gpu = 0;

    if (c->hp_untracked || !c->hp_used)
        return host_ts;
    for (unsigned s = 0; s < MOSAIC__GATE_SLOTS; s++) {
        if (!(c->hp_used & (1ull << s)))
            continue;
        if (!seq_geq(c->hp_done_seen[s], c->hp_launched[s]))
            return host_ts;
        if (c->hp_done_ns[s] > gpu)
            gpu = c->hp_done_ns[s];
    }
    if (gpu >= host_ts || gpu < begin)
        return host_ts;
    d->hp_ends_device++;
    return gpu;
}

/*
 * Ends the deferred request ends whose streams' words reached their last
 * launch, at the time the daemon saw it; with final (the client is going
 * away) or past hp-request-timeout-ms, also the others, at the host's
 * time. Returns how many it ended.
 */
static unsigned hp_pending(struct daemon *d, struct client *c, uint64_t now, int final)
{
    unsigned work = 0;

    for (unsigned p = 0; p < c->npend; p++) {
        uint64_t mask = c->pend[p].mask;
        for (unsigned s = 0; mask && s < MOSAIC__GATE_SLOTS; s++)
            if ((mask & (1ull << s)) && seq_geq(c->hp_done_seen[s], c->pend[p].target[s]))
                mask &= ~(1ull << s);
        c->pend[p].mask = mask;
        /* A word that never moves (a device that stopped, a client that
         * lied) must not keep the request open for ever. */
        if (mask && !final &&
            now - c->pend[p].seen_ns < (uint64_t)d->cfg->hp_request_timeout_ms * 1000000ull)
            continue;
        for (unsigned r = 0; r < c->nopen; r++) {
            if (c->open[r].id == c->pend[p].id) {
                if (!mask)
                    d->hp_ends_device++;
                hp_end(d, c, r, mask ? c->pend[p].ts_ns : now);
                break;
            }
        }
        c->pend[p--] = c->pend[--c->npend];
        work++;
    }
    return work;
}

/*
 * Reads the device-written words of every client: a BE kernel granted on
 * a gate slot is done once the slot's done word reached its number; an HP
 * slot's completion word counts finished launches and completes deferred
 * request ends. Returns how many changes it saw (activity, for the loop).
 */
static unsigned poll_gates(struct daemon *d)
{
    uint64_t now = mosaic__now_ns();
    unsigned work = 0;

    for (unsigned i = 0; i < d->nclients; i++) {
        struct client *c = d->clients[i];

        if (!c->active)
            continue;
        if (c->role == MOSAIC_SCHED_ROLE_BE) {
            for (unsigned s = 0; c->be_gated_running && s < MOSAIC__GATE_SLOTS; s++) {
                struct be_slot *r = &c->be_run[s];
                uint32_t done;
                if (!r->n)
                    continue;
                done = atomic_load_explicit(&c->shm.gate[s].done, memory_order_acquire);
                /* A stream runs its kernels in order: the done word passing
                 * a granted kernel's number ends it and every one before. */
                while (r->n && seq_geq(done, r->seq[r->head])) {
                    uint64_t id = r->kernel_id[r->head];
                    r->head = BE_SLOT_AT(r, 1);
                    r->n--;
                    c->be_gated_running--;
                    if (c->be_in_flight)
                        c->be_in_flight--;
                    policy_event(d, MOSAIC__PEV_BE_DONE, c->id, id, now);
                    work++;
                }
            }
            continue;
        }
        work += hp_words(d, c, now);
        work += hp_pending(d, c, now, 0);
    }
    return work;
}

/*
 * A learned request's two ends (the shim, MOSAIC__EF_COVERS): the covered
 * one, posted with its completion write as the synchronisation began, and
 * the host's, posted when it returned. The request ends at the earlier of
 * the moment the daemon saw the word land (polled every millisecond while
 * the end waits) and the host's return: the word wins when the host ran
 * late (a wake-up on a loaded machine, the process descheduled), the
 * return when the device was quicker than the daemon's next look.
 */
static void hp_covered_end(struct daemon *d, struct client *c, const struct mosaic__entry *e)
{
    unsigned slot = e->flags & MOSAIC__EF_SLOT_MASK;
    unsigned i;

    for (i = 0; i < c->nopen && c->open[i].id != e->id; i++)
        ;
    if (!(e->flags & MOSAIC__EF_GATED)) {
        /* The host's end: the device's may have come first. */
        for (unsigned p = 0; p < c->npend; p++)
            if (c->pend[p].id == e->id)
                c->pend[p--] = c->pend[--c->npend];
        if (i < c->nopen)
            hp_end(d, c, i, e->value);
        return;
    }
    if (i == c->nopen) {
        protocol_error(d, c, "end of an HP request that never began");
        return;
    }
    c->hp_launched[slot] = e->aux;
    c->hp_used |= 1ull << slot;
    /* Seen landed by an earlier look: that look's moment (not before the
     * end was posted). */
    if (seq_geq(c->hp_done_seen[slot], e->aux)) {
        d->hp_ends_device++;
        hp_end(d, c, i, c->hp_done_ns[slot] > e->value ? c->hp_done_ns[slot] : e->value);
        return;
    }
    if (c->npend >= MAX_PENDING_ENDS)
        return; /* the host's end will end it */
    c->pend[c->npend].id = e->id;
    c->pend[c->npend].ts_ns = e->value;
    c->pend[c->npend].seen_ns = mosaic__now_ns();
    c->pend[c->npend].mask = 1ull << slot;
    c->pend[c->npend].target[slot] = e->aux;
    c->npend++;
    d->hp_ends_deferred++;
}

static void handle_event(struct daemon *d, struct client *c, const struct mosaic__entry *e)
{
    switch (e->type) {
    case MOSAIC__EV_HP_REQ_BEGIN:
        if (c->nopen == 0)
            c->hp_untracked = 0;
        if (c->nopen < MAX_OPEN_REQUESTS) {
            c->open[c->nopen].id = e->id;
            c->open[c->nopen].begin_ns = e->value;
            c->open[c->nopen].seen_ns = mosaic__now_ns();
            c->nopen++;
            policy_event(d, MOSAIC__PEV_HP_BEGIN, c->id, e->id, e->value);
        } else {
            protocol_error(d, c, "more than 64 HP requests open at once");
        }
        break;
    case MOSAIC__EV_HP_REQ_END:
        if (e->flags & MOSAIC__EF_COVERS) {
            hp_covered_end(d, c, e);
            break;
        }
        if (e->flags & MOSAIC__EF_GATED) {
            /* The device writes aux behind the request's work: its end. */
            unsigned slot = e->flags & MOSAIC__EF_SLOT_MASK;
            c->hp_launched[slot] = e->aux;
            c->hp_used |= 1ull << slot;
        }
        for (unsigned i = 0; i < c->nopen; i++) {
            if (c->open[i].id == e->id) {
                hp_words(d, c, mosaic__now_ns());
                if (hp_defer_end(d, c, e->id, e->value))
                    return;
                hp_end(d, c, i, hp_end_time(d, c, c->open[i].begin_ns, e->value));
                return;
            }
        }
        protocol_error(d, c, "end of an HP request that never began");
        break;
    case MOSAIC__EV_HP_LAUNCH:
        if (e->flags & MOSAIC__EF_GATED) {
            unsigned slot = e->flags & MOSAIC__EF_SLOT_MASK;
            c->hp_launched[slot] = e->aux;
            c->hp_used |= 1ull << slot;
        } else {
            c->hp_untracked = 1;
        }
        /* The model-driven policies learn each request type's kernel
         * sequence from these. */
        policy_event(d, MOSAIC__PEV_HP_LAUNCH, c->id, e->id, e->value);
        break;
    case MOSAIC__EV_HP_COMPLETE:
        break;
    case MOSAIC__EV_BE_WANT:
        if (c->nwants >= c->cap_wants) {
            protocol_error(d, c, "more BE kernels waiting than the ring holds");
            break;
        }
        c->wants[c->nwants++] = (struct want){.ticket = e->ticket, .kernel_id = e->id,
                                              .predicted_ns = e->value,
                                              .since_ns = mosaic__now_ns(),
                                              .gated = !!(e->flags & MOSAIC__EF_GATED),
                                              .slot = e->flags & MOSAIC__EF_SLOT_MASK,
                                              .seq = e->aux};
        break;
    case MOSAIC__EV_BE_DONE:
        if (c->be_in_flight)
            c->be_in_flight--;
        policy_event(d, MOSAIC__PEV_BE_DONE, c->id, e->id, mosaic__now_ns());
        break;
    case MOSAIC__EV_BE_GRAPH:
        graph_event(d, c, e);
        break;
    default:
        break;
    }
}

/* Drains client c's event ring (bounded per turn, so that one busy
 * client cannot starve others); returns how many events were read. */
static unsigned drain_client(struct daemon *d, struct client *c)
{
    struct mosaic__entry e;
    uint64_t dropped;
    char why[160];
    unsigned k;

    for (k = 0; k < 4096 && mosaic__ring_pop_private(c->shm.ev_ctl, c->shm.ev, c->shm.ev_mask,
                                                     &c->ev_pos, &e);
         k++) {
        c->events++;
        if (mosaic__entry_check(&e, c->role, why, sizeof(why)) != 0)
            protocol_error(d, c, why);
        else
            handle_event(d, c, &e);
    }
    if (k)
        c->posted_ns = mosaic__now_ns();
    dropped = atomic_load_explicit(&c->shm.hdr->ev_dropped, memory_order_relaxed);
    /* Logged at most once a second per client; the metric counts all. */
    if (dropped != c->dropped_seen && mosaic__now_ns() - c->drop_logged_ns >= 1000000000ull) {
        c->drop_logged_ns = mosaic__now_ns();
        mosaic__dlog(MOSAIC__L_WARN, "client %u (pid %d): its ring was full, %llu events "
                     "dropped so far (raise ring-entries)", c->id, (int)c->peer.pid,
                     (unsigned long long)dropped);
    }
    c->dropped_seen = dropped;
    return k;
}

/* Drains every client's event ring; returns how many events were read. */
static unsigned drain(struct daemon *d)
{
    unsigned total = 0;

    for (unsigned i = 0; i < d->nclients; i++)
        if (d->clients[i]->active)
            total += drain_client(d, d->clients[i]);
    for (unsigned i = 0; i < d->nclients; i++) {
        if (d->clients[i]->bad > BAD_LIMIT) {
            client_free(d, d->clients[i], "too many bad ring entries");
            i--;
        }
    }
    return total;
}

static struct mosaic__sched_view view(struct daemon *d)
{
    struct mosaic__sched_view v = {.slo = d->cfg->slo, .now_ns = mosaic__now_ns(),
                                   .hp_clients_seen = d->hp_clients_seen};

    for (unsigned i = 0; i < d->nclients; i++) {
        struct client *c = d->clients[i];
        if (!c->active)
            continue;
        if (c->role == MOSAIC_SCHED_ROLE_HP) {
            v.hp_clients++;
            v.hp_requests_in_flight += c->nopen;
        } else {
            v.be_in_flight += c->be_in_flight;
        }
    }
    return v;
}

/* The books of one grant, by the ring or by the gate word: the admission
 * metrics, the client's and this turn's view of BE in flight, and the
 * policy's event. */
static void count_grant(struct daemon *d, struct client *c, const struct want *w,
                        struct mosaic__sched_view *v, uint64_t now)
{
    if (w->held) {
        d->admit_after_hold++;
        d->held_ns_total += now - w->since_ns;
    } else {
        d->admit_immediate++;
    }
    c->be_in_flight++;
    v->be_in_flight++;
    policy_event(d, MOSAIC__PEV_BE_GRANT, c->id, w->kernel_id, now);
}

/* A want the policy (or its stream's order) did not admit this turn: held
 * counts once per want, however many turns it waits. */
static void count_hold(struct daemon *d, struct want *w)
{
    if (!w->held) {
        w->held = 1;
        d->held_total++;
    }
}

/* Runs the policy over every waiting BE kernel; returns grants made. */
static unsigned decide(struct daemon *d)
{
    struct mosaic__sched_view v = view(d);
    uint64_t now = mosaic__now_ns();
    unsigned granted = 0, n = d->nclients;

    for (unsigned r = 0; r < n; r++) {
        struct client *c = d->clients[(d->rr + r) % n];
        unsigned kept = 0, here = 0;
        uint64_t blocked = 0; /* gate slots whose earlier kernel still waits */

        if (!c->active || c->nwants == 0)
            continue;
        for (unsigned i = 0; i < c->nwants; i++) {
            struct want *w = &c->wants[i];
            struct mosaic__be_want bw = {.client_id = c->id, .kernel_id = w->kernel_id,
                                         .predicted_ns = w->predicted_ns,
                                         .waited_ns = now - w->since_ns};
            struct mosaic__entry g = {.type = MOSAIC__EV_GRANT, .ticket = w->ticket,
                                      .id = w->kernel_id, .value = now};

            if (w->gated) {
                uint64_t bit = 1ull << w->slot;
                uint32_t done = atomic_load_explicit(&c->shm.gate[w->slot].done,
                                                     memory_order_acquire);
                if (blocked & bit) {
                    c->wants[kept++] = *w;
                    continue;
                }
                if (seq_geq(done, w->seq)) {
                    /* It ran without a grant: the client released its
                     * slot (a daemon before this one went away). */
                    d->gated_passed++;
                    continue;
                }
                /* Granted behind a finished predecessor, so that the grant
                 * is the moment it starts, or (gate-ahead) behind its
                 * granted predecessor while fewer than gate-ahead wait
                 * behind the running one; either wait is not a policy hold. */
                struct be_slot *q = &c->be_run[w->slot];
                bw.ahead = q->n > 0;
                if (bw.ahead ? q->n > d->cfg->gate_ahead ||
                                   q->seq[BE_SLOT_AT(q, q->n - 1)] != w->seq - 1
                             : !seq_geq(done, w->seq - 1)) {
                    blocked |= bit;
                    c->wants[kept++] = *w;
                    continue;
                }
                if (d->policy.decide(d->policy.state, &v, &bw) == MOSAIC__ADMIT) {
                    unsigned at = BE_SLOT_AT(q, q->n);
                    atomic_store_explicit(&c->shm.gate[w->slot].grant, w->seq,
                                          memory_order_release);
                    q->seq[at] = w->seq;
                    q->kernel_id[at] = w->kernel_id;
                    q->n++;
                    c->be_gated_running++;
                    d->gated_grants++;
                    d->gated_ahead += bw.ahead;
                    granted++;
                    count_grant(d, c, w, &v, now);
                    continue;
                }
                blocked |= bit;
                if (!bw.ahead)
                    count_hold(d, w);
                c->wants[kept++] = *w;
                continue;
            }
            if (d->policy.decide(d->policy.state, &v, &bw) == MOSAIC__ADMIT &&
                mosaic__ring_push_private(c->shm.gr_ctl, c->shm.gr, c->shm.gr_mask,
                                          &c->gr_pos, &g) == 0) {
                here++;
                count_grant(d, c, w, &v, now);
                continue;
            }
            count_hold(d, w);
            c->wants[kept++] = *w;
        }
        c->nwants = kept;
        if (here) {
            atomic_fetch_add_explicit(&c->shm.hdr->grant_futex, 1, memory_order_release);
            if (atomic_load(&c->shm.hdr->grant_waiters))
                mosaic__futex_wake(&c->shm.hdr->grant_futex);
            granted += here;
        }
    }
    if (n)
        d->rr = (d->rr + 1) % n;
    return granted;
}

/* Whether any BE kernel waits for a decision (an HP end could release it). */
static int any_be_want(const struct daemon *d)
{
    for (unsigned i = 0; i < d->nclients; i++)
        if (d->clients[i]->active && d->clients[i]->nwants)
            return 1;
    return 0;
}

/*
 * Going to sleep (on): NEED_WAKEUP in every segment, and in HP segments
 * HP_END_QUIET while no BE kernel waits, so that an HP client's request
 * end rings no doorbell (a system call on its request path) that could
 * release nothing. Both are set before the caller's fence and last look
 * at the rings, so an end posted before them is seen there, and a client
 * posting after them sees the flags as they are. A BE want arriving
 * while asleep rings its own doorbell, and the daemon drains every ring,
 * HP ends included, before it decides.
 */
static void set_wakeup(struct daemon *d, int on)
{
    int quiet = on && !any_be_want(d);

    for (unsigned i = 0; i < d->nclients; i++) {
        struct client *c = d->clients[i];
        if (!c->active)
            continue;
        if (!on) {
            atomic_fetch_and(&c->shm.hdr->daemon_flags,
                             ~(MOSAIC__SHM_NEED_WAKEUP | MOSAIC__SHM_HP_END_QUIET));
            continue;
        }
        if (quiet && c->role == MOSAIC_SCHED_ROLE_HP)
            atomic_fetch_or(&c->shm.hdr->daemon_flags, MOSAIC__SHM_HP_END_QUIET);
        else
            atomic_fetch_and(&c->shm.hdr->daemon_flags, ~MOSAIC__SHM_HP_END_QUIET);
        atomic_fetch_or(&c->shm.hdr->daemon_flags, MOSAIC__SHM_NEED_WAKEUP);
    }
}

static void tick(struct daemon *d, uint64_t now)
{
    d->beat++;
    for (unsigned i = 0; i < d->nclients; i++) {
        struct client *c = d->clients[i];
        if (c->active) {
            uint64_t beat = atomic_load_explicit(&c->shm.hdr->client_beat, memory_order_relaxed);
            atomic_store_explicit(&c->shm.hdr->daemon_beat, d->beat, memory_order_release);
            if (beat != c->client_beat || !c->client_beat_ns) {
                c->client_beat = beat;
                c->client_beat_ns = now;
            }
        } else if (now - c->accepted_ns > 2000000000ull) {
            protocol_error(d, c, "no handshake within 2 s");
            client_free(d, c, "handshake timeout");
            i--;
            continue;
        }
        /* An HP request that never ends (a client bug, a lost event) would
         * hold BE work forever under hold-be: past the timeout it is ended. */
        for (unsigned r = 0; c->active && r < c->nopen; r++) {
            /* seen_ns may be later than now (taken when the loop turn
             * began, before draining): never subtract into a wrap. */
            if (now > c->open[r].seen_ns &&
                now - c->open[r].seen_ns > (uint64_t)d->cfg->hp_request_timeout_ms * 1000000ull) {
                mosaic__dlog(MOSAIC__L_WARN, "client %u (pid %d): HP request %llu open for more "
                             "than %u ms: treated as ended, BE work no longer waits for it "
                             "(raise hp-request-timeout-ms if requests really last this long)",
                             c->id, (int)c->peer.pid, (unsigned long long)c->open[r].id,
                             d->cfg->hp_request_timeout_ms);
                policy_event(d, MOSAIC__PEV_HP_END, c->id, c->open[r].id, mosaic__now_ns());
                c->open[r--] = c->open[--c->nopen];
                d->hp_expired++;
            }
        }
        /* A process that died while a forked child still holds its socket
         * is noticed here rather than by EOF. */
        if (c->active && kill(c->peer.pid, 0) != 0 && errno == ESRCH) {
            client_free(d, c, "its process is gone");
            i--;
        }
    }
    if (d->watchdog_ns && now >= d->next_watchdog_ns) {
        mosaic__sd_notify("WATCHDOG=1");
        d->next_watchdog_ns = now + d->watchdog_ns / 2;
    }
}

/* ---- status and metrics ----------------------------------------------------- */

static cJSON *status_json(struct daemon *d)
{
    cJSON *j = cJSON_CreateObject(), *arr, *adm;
    struct mosaic__sched_view v = view(d);

    if (!j)
        return NULL;
    cJSON_AddStringToObject(j, "version", MOSAIC_VERSION_STRING);
    cJSON_AddNumberToObject(j, "protocol", MOSAIC__SCHED_PROTO);
    cJSON_AddNumberToObject(j, "pid", getpid());
    cJSON_AddNumberToObject(j, "uptime_s", (double)(mosaic__now_ns() - d->started_ns) / 1e9);
    cJSON_AddNumberToObject(j, "slo", d->cfg->slo);
    cJSON_AddStringToObject(j, "policy", d->policy.name);
    cJSON_AddStringToObject(j, "mode", d->part.hp_sms ? "partition" : "full-gpu");
    cJSON_AddBoolToObject(j, "concurrent", d->concurrent);
    cJSON_AddStringToObject(j, "mps", d->mps_msg);
    cJSON_AddNumberToObject(j, "hp_requests_in_flight", v.hp_requests_in_flight);
    cJSON_AddNumberToObject(j, "be_in_flight", v.be_in_flight);
    adm = cJSON_AddObjectToObject(j, "admissions");
    cJSON_AddNumberToObject(adm, "immediate", (double)d->admit_immediate);
    cJSON_AddNumberToObject(adm, "after_hold", (double)d->admit_after_hold);
    cJSON_AddNumberToObject(adm, "held", (double)d->held_total);
    cJSON_AddNumberToObject(adm, "device_gated", (double)d->gated_grants);
    cJSON_AddNumberToObject(j, "protocol_errors", (double)d->proto_errors);
    cJSON_AddNumberToObject(j, "refused", (double)d->refused);
    arr = cJSON_AddArrayToObject(j, "clients");
    for (unsigned i = 0; i < d->nclients; i++) {
        struct client *c = d->clients[i];
        cJSON *o;
        if (!c->active)
            continue;
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", c->id);
        cJSON_AddNumberToObject(o, "pid", c->peer.pid);
        cJSON_AddNumberToObject(o, "uid", c->peer.uid);
        cJSON_AddStringToObject(o, "role", mosaic__role_str(c->role));
        cJSON_AddStringToObject(o, "exe", c->peer.exe);
        cJSON_AddStringToObject(o, "cgroup", c->peer.cgroup);
        cJSON_AddNumberToObject(o, "requests_in_flight", c->nopen);
        cJSON_AddNumberToObject(o, "be_waiting", c->nwants);
        cJSON_AddNumberToObject(o, "be_in_flight", c->be_in_flight);
        cJSON_AddNumberToObject(o, "events", (double)c->events);
        cJSON_AddNumberToObject(o, "dropped", (double)c->dropped_seen);
        cJSON_AddNumberToObject(o, "rejected", (double)c->bad);
        /* A client whose monitor stopped (hung, or a caller that never
         * polls) shows here; its socket still decides when it is gone. */
        cJSON_AddNumberToObject(o, "heartbeat_age_ms",
                                c->client_beat_ns
                                    ? (double)(mosaic__now_ns() - c->client_beat_ns) / 1e6
                                    : 0.0);
        cJSON_AddItemToArray(arr, o);
    }
    return j;
}

struct sbuf {
    char *p;
    size_t n, cap;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->n >= b->cap)
        return;
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->n = b->n + (size_t)n < b->cap ? b->n + (size_t)n : b->cap;
}

static size_t metrics_text(struct daemon *d, char *buf, size_t cap)
{
    struct sbuf b = {buf, 0, cap};
    uint64_t cum = 0;

    sb_printf(&b, "# HELP mosaic_admissions_total BE kernels admitted, by decision.\n"
                  "# TYPE mosaic_admissions_total counter\n"
                  "mosaic_admissions_total{decision=\"immediate\"} %llu\n"
                  "mosaic_admissions_total{decision=\"after_hold\"} %llu\n",
              (unsigned long long)d->admit_immediate, (unsigned long long)d->admit_after_hold);
    sb_printf(&b, "# HELP mosaic_be_held_total BE kernels held at least once.\n"
                  "# TYPE mosaic_be_held_total counter\nmosaic_be_held_total %llu\n",
              (unsigned long long)d->held_total);
    sb_printf(&b, "# HELP mosaic_be_held_seconds_total Time BE kernels spent held before "
                  "admission.\n# TYPE mosaic_be_held_seconds_total counter\n"
                  "mosaic_be_held_seconds_total %.9f\n",
              (double)d->held_ns_total / 1e9);
    sb_printf(&b, "# HELP mosaic_clients Connected client processes, by role.\n"
                  "# TYPE mosaic_clients gauge\nmosaic_clients{role=\"hp\"} %u\n"
                  "mosaic_clients{role=\"be\"} %u\n",
              count_role(d, MOSAIC_SCHED_ROLE_HP), count_role(d, MOSAIC_SCHED_ROLE_BE));
    sb_printf(&b, "# HELP mosaic_hp_request_duration_seconds HP request latency (client "
                  "CLOCK_MONOTONIC, begin to end).\n"
                  "# TYPE mosaic_hp_request_duration_seconds histogram\n");
    for (int i = 0; i < NBUCKETS; i++) {
        cum += d->hist[i];
        sb_printf(&b, "mosaic_hp_request_duration_seconds_bucket{le=\"%g\"} %llu\n", hist_le[i],
                  (unsigned long long)cum);
    }
    sb_printf(&b, "mosaic_hp_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
                  "mosaic_hp_request_duration_seconds_sum %.9f\n"
                  "mosaic_hp_request_duration_seconds_count %llu\n",
              (unsigned long long)d->hist_count, d->hist_sum,
              (unsigned long long)d->hist_count);
    {
        uint64_t dropped = 0;
        for (unsigned i = 0; i < d->nclients; i++)
            dropped += d->clients[i]->dropped_seen;
        sb_printf(&b, "# HELP mosaic_ring_dropped_events Events connected clients could not "
                      "post because their ring was full.\n"
                      "# TYPE mosaic_ring_dropped_events gauge\nmosaic_ring_dropped_events %llu\n",
                  (unsigned long long)dropped);
    }
    sb_printf(&b, "# HELP mosaic_protocol_errors_total Rejected messages and ring entries.\n"
                  "# TYPE mosaic_protocol_errors_total counter\n"
                  "mosaic_protocol_errors_total %llu\n"
                  "# HELP mosaic_refused_total Clients refused a role.\n"
                  "# TYPE mosaic_refused_total counter\nmosaic_refused_total %llu\n"
                  "# HELP mosaic_hp_requests_expired_total HP requests ended by "
                  "hp-request-timeout-ms.\n"
                  "# TYPE mosaic_hp_requests_expired_total counter\n"
                  "mosaic_hp_requests_expired_total %llu\n",
              (unsigned long long)d->proto_errors, (unsigned long long)d->refused,
              (unsigned long long)d->hp_expired);
    sb_printf(&b, "# HELP mosaic_be_gated_grants_total BE kernels granted by a write of "
                  "their device-side gate word.\n# TYPE mosaic_be_gated_grants_total counter\n"
                  "mosaic_be_gated_grants_total %llu\n"
                  "# HELP mosaic_be_gated_ahead_total Of those, granted behind a granted "
                  "kernel of their stream not yet done (gate-ahead).\n"
                  "# TYPE mosaic_be_gated_ahead_total counter\n"
                  "mosaic_be_gated_ahead_total %llu\n"
                  "# HELP mosaic_be_gated_passed_total Gated BE kernels that ran without a "
                  "grant (their client released the gate of a daemon that went away).\n"
                  "# TYPE mosaic_be_gated_passed_total counter\n"
                  "mosaic_be_gated_passed_total %llu\n"
                  "# HELP mosaic_hp_device_completions_total HP launches whose completion "
                  "the device wrote.\n# TYPE mosaic_hp_device_completions_total counter\n"
                  "mosaic_hp_device_completions_total %llu\n"
                  "# HELP mosaic_hp_request_ends_deferred_total HP request ends that waited "
                  "for the device to finish the request's kernels.\n"
                  "# TYPE mosaic_hp_request_ends_deferred_total counter\n"
                  "mosaic_hp_request_ends_deferred_total %llu\n"
                  "# HELP mosaic_hp_request_ends_device_total HP request ends timed by the "
                  "device's completion words instead of the host's end call.\n"
                  "# TYPE mosaic_hp_request_ends_device_total counter\n"
                  "mosaic_hp_request_ends_device_total %llu\n",
              (unsigned long long)d->gated_grants, (unsigned long long)d->gated_ahead,
              (unsigned long long)d->gated_passed,
              (unsigned long long)d->hp_device_done, (unsigned long long)d->hp_ends_deferred,
              (unsigned long long)d->hp_ends_device);
    sb_printf(&b, "# HELP mosaic_concurrent 1 when kernels of separate processes can run "
                  "concurrently (MPS).\n# TYPE mosaic_concurrent gauge\nmosaic_concurrent %d\n"
                  "# HELP mosaic_slo_ratio The configured HP p99 bound over isolated p99.\n"
                  "# TYPE mosaic_slo_ratio gauge\nmosaic_slo_ratio %g\n",
              d->concurrent, d->cfg->slo);
    if (d->policy.metrics && b.n < b.cap)
        b.n += d->policy.metrics(d->policy.state, b.p + b.n, b.cap - b.n);
    return b.n;
}

static void serve_metrics(struct daemon *d)
{
    static char body[32768];
    char req[1024], head[160];
    struct pollfd p;
    size_t n;
    int fd = accept4(d->mfd, NULL, NULL, SOCK_CLOEXEC), h;

    if (fd < 0)
        return;
    /* A scraper sends its request at once; a silent peer gets 50 ms, so
     * that it cannot stall BE grants. */
    p = (struct pollfd){.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 50) == 1 && recv(fd, req, sizeof(req) - 1, MSG_DONTWAIT) > 0) {
        n = metrics_text(d, body, sizeof(body));
        h = snprintf(head, sizeof(head), "HTTP/1.0 200 OK\r\nContent-Type: text/plain; "
                     "version=0.0.4\r\nContent-Length: %zu\r\n\r\n", n);
        if (h > 0 && (size_t)h < sizeof(head) &&
            send(fd, head, (size_t)h, MSG_NOSIGNAL | MSG_DONTWAIT) == h)
            send(fd, body, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    close(fd);
}

static int metrics_listen(unsigned port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 16) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ---- the loop ------------------------------------------------------------- */

static void accept_clients(struct daemon *d)
{
    for (;;) {
        int fd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        struct client *c;
        struct epoll_event ev = {.events = EPOLLIN};

        if (fd < 0)
            return;
        c = calloc(1, sizeof(*c));
        if (!c || d->nclients >= d->cfg->max_clients ||
            mosaic__peer_identify(fd, &c->peer, NULL) != 0) {
            if (c) {
                c->fd = fd;
                send_refuse(c, MOSAIC_EREFUSED, "the daemon has max-clients connected");
                mosaic__dlog(MOSAIC__L_WARN, "refused a connection: %u clients (max-clients)",
                             d->nclients);
            }
            free(c);
            close(fd);
            continue;
        }
        c->fd = fd;
        c->id = ++d->next_id;
        c->accepted_ns = mosaic__now_ns();
        ev.data.ptr = c;
        d->clients[d->nclients++] = c;
        if (epoll_ctl(d->ep, EPOLL_CTL_ADD, fd, &ev) != 0)
            client_free(d, c, "epoll");
    }
}

static int handle_signals(struct daemon *d)
{
    struct signalfd_siginfo si;

    while (read(d->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            mosaic__dlog(MOSAIC__L_INFO, "signal %u: stopping; clients continue uncontrolled "
                         "and reconnect when a daemon returns", si.ssi_signo);
            return 1;
        }
    }
    return 0;
}

/* Whether an HP client's completion words are behind its launches: the
 * daemon then looks every millisecond, so that a request's device end is
 * seen within that, not at the host's end call. */
static int hp_words_pending(const struct client *c)
{
    for (unsigned s = 0; c->hp_used && s < MOSAIC__GATE_SLOTS; s++)
        if ((c->hp_used & (1ull << s)) &&
            !seq_geq((uint32_t)atomic_load_explicit(&c->shm.gate[s].hp_done,
                                                    memory_order_acquire),
                     c->hp_launched[s]))
            return 1;
    return 0;
}

/* Whether anything waits on a decision or on a device-written word (which
 * rings no doorbell, so a sleeping daemon must look at it), or an HP
 * client is busy (below). */
static int any_waiting(const struct daemon *d, uint64_t now)
{
    for (unsigned i = 0; i < d->nclients; i++) {
        const struct client *c = d->clients[i];
        if (c->active && (c->nwants || c->be_gated_running || c->npend))
            return 1;
        /* An open HP request whose device word is behind its launches
         * (which rings no doorbell), or an HP client that posted within
         * the last heartbeat: its ends ring no doorbell while no BE kernel
         * waits (HP_END_QUIET) and its launches none until its ring is
         * half full, so look every millisecond while it is busy. A
         * 280-kernel graph a request fills a 1024-entry ring in under four
         * requests (about 10 ms on the H200), and a backlog doorbell is a
         * system call on the launch path. */
        if (c->active && c->role == MOSAIC_SCHED_ROLE_HP &&
            ((c->nopen && hp_words_pending(c)) ||
             c->posted_ns + (uint64_t)d->cfg->heartbeat_ms * 1000000ull > now))
            return 1;
    }
    return 0;
}

static int run_loop(struct daemon *d)
{
    struct epoll_event evs[64];

    for (;;) {
        uint64_t now = mosaic__now_ns();
        unsigned work = drain(d);
        int timeout = 0, n;

        work += poll_gates(d);
        work += decide(d);
        if (work)
            d->last_activity_ns = now;
        if (now >= d->next_tick_ns) {
            tick(d, now);
            d->next_tick_ns = now + (uint64_t)d->cfg->heartbeat_ms * 1000000ull;
        }
        if (now - d->last_activity_ns >= (uint64_t)d->cfg->spin_us * 1000ull) {
            /* About to sleep: say so, then look once more (see the top). */
            set_wakeup(d, 1);
            atomic_thread_fence(memory_order_seq_cst);
            if (drain(d) + poll_gates(d) + decide(d) == 0) {
                uint64_t left = d->next_tick_ns > now ? d->next_tick_ns - now : 0;
                timeout = (int)(left / 1000000ull) + 1;
                /* A held BE kernel may become admissible by time alone (an
                 * HP request's predicted progress, the gap before the
                 * next one): look again every millisecond while any waits. */
                if (timeout > 1 && any_waiting(d, now))
                    timeout = 1;
            } else {
                d->last_activity_ns = mosaic__now_ns();
            }
        }
        n = epoll_wait(d->ep, evs, 64, timeout);
        set_wakeup(d, 0);
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &tag_signal) {
                if (handle_signals(d))
                    return 0;
            } else if (p == &tag_listen) {
                accept_clients(d);
            } else if (p == &tag_metrics) {
                serve_metrics(d);
            } else {
                /* A client freed by an earlier event of this batch has
                 * been removed from epoll, but its pointer may still sit
                 * in evs: only act on a client still in the table. */
                for (unsigned k = 0; k < d->nclients; k++) {
                    if (d->clients[k] == p) {
                        handle_socket(d, p, evs[i].events);
                        break;
                    }
                }
            }
            d->last_activity_ns = mosaic__now_ns();
        }
    }
}

int mosaic__daemon_run(const struct mosaic__sched_config *cfg)
{
    struct daemon d = {.cfg = cfg, .lfd = -1, .sfd = -1, .mfd = -1, .ep = -1};
    struct epoll_event ev = {.events = EPOLLIN};
    char err[600], ready[700];
    sigset_t mask;
    const char *wd = getenv("WATCHDOG_USEC");
    int rc;

    mosaic__dlog_level = cfg->log_level;
    signal(SIGPIPE, SIG_IGN);
    rc = mosaic__policy_open(cfg, &d.policy, err, sizeof(err));
    if (rc != 0) {
        mosaic__dlog(MOSAIC__L_ERROR, "%s", err);
        return rc;
    }
    /* Policy static, and policy mosaic's sm-mode partition (its split
     * checked by the policy's open), send each client its side. */
    if (cfg->policy == MOSAIC__POLICY_STATIC || cfg->sm_mode == MOSAIC__SM_PARTITION) {
        rc = mosaic__static_partition(cfg, &d.part, err, sizeof(err));
        if (rc != 0) {
            mosaic__dlog(MOSAIC__L_ERROR, "%s", err);
            mosaic__policy_close(&d.policy);
            return rc;
        }
        if (d.part.from_config)
            mosaic__dlog(MOSAIC__L_INFO, "policy %s: HP on %u SMs, BE on %u (hp-sms)",
                         mosaic__policy_name(cfg->policy), d.part.hp_sms, d.part.be_sms);
        else
            mosaic__dlog(d.part.under ? MOSAIC__L_INFO : MOSAIC__L_WARN,
                         "policy static: HP on %u SMs, BE on %u: HP's isolated slowdown there "
                         "%.3fx %s %.2fx (%u HP kernels: %u sized from measured split times, "
                         "%u from the predictor's partition model)",
                         d.part.hp_sms, d.part.be_sms, d.part.hp_slowdown,
                         d.part.under ? "under" : "over, the largest split the GPU makes; "
                                                  "no split keeps it under",
                         d.part.bound, d.part.hp_kernels, d.part.measured, d.part.predicted);
    }
    d.clients = calloc(cfg->max_clients, sizeof(*d.clients));
    if (!d.clients) {
        mosaic__policy_close(&d.policy);
        return MOSAIC_ENOMEM;
    }
    d.concurrent = mosaic__mps_check(cfg, d.mps_msg, sizeof(d.mps_msg));
    mosaic__dlog(d.concurrent ? MOSAIC__L_INFO : MOSAIC__L_WARN, "%s", d.mps_msg);
    rc = mosaic__listen_socket(cfg, &d.lfd, err, sizeof(err));
    if (rc != 0) {
        mosaic__dlog(MOSAIC__L_ERROR, "%s", err);
        free(d.clients);
        mosaic__policy_close(&d.policy);
        return rc;
    }
    if (cfg->metrics_port) {
        d.mfd = metrics_listen(cfg->metrics_port);
        if (d.mfd < 0)
            mosaic__dlog(MOSAIC__L_WARN, "metrics: cannot listen on 127.0.0.1:%u (%s); "
                         "continuing without metrics (set metrics-port)", cfg->metrics_port,
                         strerror(errno));
    }
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    d.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    d.ep = epoll_create1(EPOLL_CLOEXEC);
    if (d.sfd < 0 || d.ep < 0) {
        rc = MOSAIC_ESYS;
        goto out;
    }
    ev.data.ptr = &tag_listen;
    epoll_ctl(d.ep, EPOLL_CTL_ADD, d.lfd, &ev);
    ev.data.ptr = &tag_signal;
    epoll_ctl(d.ep, EPOLL_CTL_ADD, d.sfd, &ev);
    if (d.mfd >= 0) {
        ev.data.ptr = &tag_metrics;
        epoll_ctl(d.ep, EPOLL_CTL_ADD, d.mfd, &ev);
    }
    if (wd && atoll(wd) > 0)
        d.watchdog_ns = (uint64_t)atoll(wd) * 1000ull;
    d.started_ns = d.last_activity_ns = mosaic__now_ns();
    mosaic__dlog(MOSAIC__L_INFO, "listening on %s (mode %04o), policy %s, slo %g, metrics %s%u",
                 cfg->socket, cfg->socket_mode, d.policy.name, cfg->slo,
                 d.mfd >= 0 ? "127.0.0.1:" : "off ", d.mfd >= 0 ? cfg->metrics_port : 0);
    if (snprintf(ready, sizeof(ready), "READY=1\nSTATUS=policy %s, slo %g, %s", d.policy.name,
                 cfg->slo, d.concurrent ? "MPS: concurrent" : "no MPS: time-sliced") <
        (int)sizeof(ready))
        mosaic__sd_notify(ready);
    rc = run_loop(&d);
    mosaic__sd_notify("STOPPING=1");
out:
    while (d.nclients)
        client_free(&d, d.clients[0], "daemon stopping");
    if (d.lfd >= 0) {
        close(d.lfd);
        unlink(cfg->socket);
    }
    if (d.mfd >= 0)
        close(d.mfd);
    if (d.sfd >= 0)
        close(d.sfd);
    if (d.ep >= 0)
        close(d.ep);
    free(d.clients);
    mosaic__policy_close(&d.policy);
    return rc;
}
