/*
 * mosaic/sched.h: the client side of the arbiter daemon (mosaic-sched), the
 * library a process links (the shim, libmosaic.so, or a test program) to be
 * admitted by the daemon. Protocol and failure behaviour: docs/sched.md.
 *
 * A client opens one connection per process. The daemon answers the
 * handshake with a role (hp or be) and a shared-memory segment of rings;
 * from then on every event is a memory write:
 *
 *   - HP calls (request begin/end, launch posted, kernel completed) never
 *     wait on the daemon and never make a system call on the launch path.
 *     While the daemon is away they return MOSAIC_EDISCONNECTED at once,
 *     and the caller simply runs uncontrolled.
 *   - mosaic_sched_be_admit() holds the calling thread until the daemon
 *     grants the kernel (spin briefly, then a futex on the shared segment),
 *     or, when the daemon is away, up to the configured timeout after which
 *     the kernel runs uncontrolled or stays held (configurable).
 *
 * A monitor thread watches the socket and the daemon's heartbeat and
 * reconnects when the daemon returns. Every function returns 0 or a
 * negative MOSAIC_E* code (mosaic/mosaic.h).
 */
#ifndef MOSAIC_SCHED_H
#define MOSAIC_SCHED_H

#include <stdint.h>

#include "mosaic/mosaic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The same numbering as the shim's MOSAIC_ROLE (preload/internal.h). */
enum mosaic_sched_role {
    MOSAIC_SCHED_ROLE_NONE = 0, /* ask the daemon to choose from its rules */
    MOSAIC_SCHED_ROLE_HP = 1,
    MOSAIC_SCHED_ROLE_BE = 2,
};

/* What a BE process does once the daemon has been away for be_timeout_ms. */
enum mosaic_sched_on_timeout {
    MOSAIC_SCHED_TIMEOUT_RUN = 0,  /* run the kernel uncontrolled */
    MOSAIC_SCHED_TIMEOUT_HOLD = 1, /* keep it held until the daemon returns */
};

/* The outcome of mosaic_sched_be_admit(). */
enum mosaic_sched_admit {
    MOSAIC_SCHED_GRANTED = 0,      /* the daemon admitted the kernel */
    MOSAIC_SCHED_UNCONTROLLED = 1, /* no daemon: running without control */
};

enum mosaic_sched_state {
    MOSAIC_SCHED_DISCONNECTED = 0,
    MOSAIC_SCHED_CONNECTED = 1,
};

struct mosaic_sched_client_opts {
    const char *socket_path;   /* NULL: MOSAIC_SCHED_DEFAULT_SOCKET */
    int role;                  /* enum mosaic_sched_role, requested */
    /* Until the first handshake (the daemon's values replace these). */
    uint32_t be_timeout_ms;    /* 0: 2000 */
    int be_on_timeout;         /* enum mosaic_sched_on_timeout */
    uint32_t reconnect_ms;     /* 0: 200; how often to retry the daemon */
    int no_monitor_thread;     /* 1: the caller drives mosaic_sched_client_poll() */
    int async_connect;         /* 1: open returns at once, the monitor connects */
    /* 1: an HP request's end wakes a sleeping daemon always (the doorbell,
     * a system call), as before protocol flag HP_END_QUIET; 0: only when
     * the daemon asked, i.e. a BE kernel waits for a decision. */
    int hp_end_doorbell_always;
};

#define MOSAIC_SCHED_DEFAULT_SOCKET "/run/mosaic/sched.sock"

struct mosaic_sched_client;

/*
 * Creates a client and tries to connect once (unless async_connect: a
 * daemon that accepts but does not answer could hold the first attempt up
 * to 2 s, too long for a library constructor). A daemon that is not there
 * is not an error (the client retries in the background): *out is set and
 * 0 returned. MOSAIC_EREFUSED when the daemon refused the role (the reason
 * is in mosaic_sched_client_reason()); the client is still returned and
 * keeps retrying, since the daemon's rules may change on restart.
 */
int mosaic_sched_client_open(const struct mosaic_sched_client_opts *opts,
                             struct mosaic_sched_client **out);
void mosaic_sched_client_close(struct mosaic_sched_client *c);

/*
 * In a child after fork(): drops the parent's connection (the child must
 * not post into the parent's rings), restarts the monitor thread, and lets
 * the child connect as a client of its own. Call it from a pthread_atfork
 * child handler, before the child posts anything.
 */
int mosaic_sched_client_atfork_child(struct mosaic_sched_client *c);

/* One monitor step (socket, heartbeat, reconnect); for no_monitor_thread. */
int mosaic_sched_client_poll(struct mosaic_sched_client *c);

int mosaic_sched_client_state(const struct mosaic_sched_client *c);
int mosaic_sched_client_role(const struct mosaic_sched_client *c);
/* The SM partition the daemon gave this client's role in its last
 * handshake (policy static: the HP group's or BE's SMs), 0 for the full
 * GPU or before the first connection. The shim applies it to its green
 * context (docs/partitions.md). */
unsigned mosaic_sched_client_sms(const struct mosaic_sched_client *c);
/* How many partition changes (PARTITION messages after a handshake) this
 * client has received: the shim applies mosaic_sched_client_sms() anew
 * when it or the generation moves. */
uint64_t mosaic_sched_client_partition_seq(const struct mosaic_sched_client *c);
/* The daemon's last refusal or the last connection problem ("" if none). */
const char *mosaic_sched_client_reason(struct mosaic_sched_client *c, char *buf,
                                       unsigned len);
/* How many connections this client has made (a reconnect counts again). */
uint64_t mosaic_sched_client_generation(const struct mosaic_sched_client *c);
/* Moves (after them) whenever the generation or the partition sequence
 * moves, and at a fork's child: a caller following both compares this one
 * word, then reads the two. Kept in this process (the daemon sends no
 * epoch), so it needs nothing of the protocol. */
uint64_t mosaic_sched_client_epoch(const struct mosaic_sched_client *c);
/* Events dropped because the ring was full (also counted by the daemon). */
uint64_t mosaic_sched_client_dropped(const struct mosaic_sched_client *c);
/* Doorbell packets sent to a sleeping daemon: at most one per backlog
 * while the ring stays past half full (for the tests and the stats). */
uint64_t mosaic_sched_client_doorbells(const struct mosaic_sched_client *c);

/*
 * A kernel's id on the rings: the 64-bit FNV-1a hash of its profile key
 * (mosaic_kernel_key: "NAME|grid=X,Y,Z|block=X,Y,Z|dsmem=N"), never 0. The
 * daemon finds the kernel's profile by the same hash.
 */
uint64_t mosaic_sched_kernel_id(const char *profile_key);

/* HP side: never waits. ts_ns: CLOCK_MONOTONIC, 0 to read it here. */
int mosaic_sched_hp_request_begin(struct mosaic_sched_client *c, uint64_t request_id,
                                  uint64_t ts_ns);
int mosaic_sched_hp_request_end(struct mosaic_sched_client *c, uint64_t request_id,
                                uint64_t ts_ns);
int mosaic_sched_hp_launch(struct mosaic_sched_client *c, uint64_t kernel_id);
int mosaic_sched_hp_complete(struct mosaic_sched_client *c, uint64_t kernel_id,
                             uint64_t duration_ns);

/*
 * BE side: asks admission for one kernel (its id and predicted isolated
 * duration) and waits. *outcome is enum mosaic_sched_admit. Returns 0, or
 * MOSAIC_ETIMEDOUT when held past the timeout with be_on_timeout "hold"
 * (the caller asks again), or MOSAIC_ERINGFULL.
 */
int mosaic_sched_be_admit(struct mosaic_sched_client *c, uint64_t kernel_id,
                          uint64_t predicted_ns, int *outcome);
/* The granted kernel finished (optional; lets the daemon count BE in flight). */
int mosaic_sched_be_done(struct mosaic_sched_client *c, uint64_t kernel_id);

/*
 * The device-side gate (docs/sched.md, "Where a BE kernel waits"). The
 * segment holds `slots` gate slots, one per stream the caller numbers; a
 * stream's kernels are numbered 1, 2, 3 ... (32-bit, wrapping). The caller
 * maps [base, base + bytes) for the device and, with the device addresses
 * of the words at base + slot * stride + *_off:
 *   BE: for kernel n, mosaic_sched_be_want_gated(), then on the stream
 *       cuStreamWaitValue32(grant, n, GEQ), the launch, and
 *       cuStreamWriteValue32(done, n). The daemon writes grant = n once it
 *       admits kernel n and kernel n - 1 has finished.
 *   HP: after launch n, cuStreamWriteValue64(hp_done, n), then
 *       mosaic_sched_hp_launch_gated() (or, for a write at a request's
 *       end, mosaic_sched_hp_request_end_gated()).
 * The words belong to one connection (`generation`): after a reconnect
 * the gate must be fetched and mapped again. The monitor thread releases
 * the waits of a connection that ended (a new daemon came, or be-timeout-ms
 * passed with be-on-timeout run), so a stream is never stuck on a dead one.
 */
struct mosaic_sched_gate {
    void *base;
    unsigned long bytes; /* whole pages */
    uint64_t generation;
    unsigned slots, stride;
    unsigned grant_off, done_off; /* uint32_t words */
    unsigned hp_done_off;         /* a uint64_t word */
};

/* The current connection's gate; MOSAIC_EDISCONNECTED when there is none. */
int mosaic_sched_gate_get(struct mosaic_sched_client *c, struct mosaic_sched_gate *g);
/* BE: asks admission for kernel seq of slot's stream; never waits. Returns
 * 0, MOSAIC_EDISCONNECTED (no connection of that generation: hold on the
 * host instead), MOSAIC_ERINGFULL or MOSAIC_EINVAL. */
int mosaic_sched_be_want_gated(struct mosaic_sched_client *c, uint64_t generation,
                               unsigned slot, uint32_t seq, uint64_t kernel_id,
                               uint64_t predicted_ns);
/* HP: launch seq of slot's stream, whose completion the device writes to
 * the slot's hp_done word. Never waits, no system call. */
int mosaic_sched_hp_launch_gated(struct mosaic_sched_client *c, uint64_t generation,
                                 unsigned slot, uint32_t seq, uint64_t kernel_id);
/*
 * BE graphs as admission units (docs/sched.md, "BE graphs"): defines a
 * graph of n kernels (their ids in launch order, at most
 * MOSAIC_SCHED_GRAPH_MAX_KERNELS) on the connection of `generation`, so
 * that a launch of it asks admission once, naming graph_id. Define again
 * after every reconnect. Never waits. 0, MOSAIC_EINVAL (no kernels, too
 * many, an id 0), MOSAIC_EDISCONNECTED or MOSAIC_ERINGFULL (the daemon
 * then treats the graph as unknown until it is defined again).
 */
#define MOSAIC_SCHED_GRAPH_MAX_KERNELS 64u
int mosaic_sched_be_graph_define(struct mosaic_sched_client *c, uint64_t generation,
                                 uint64_t graph_id, const uint64_t *kernel_ids, unsigned n);

/* HP: the end of request_id (ts_ns 0: now), with the device writing seq to
 * slot's hp_done word behind the request's work: the daemon ends the
 * request when the word reaches seq, or at ts_ns if it already had. */
int mosaic_sched_hp_request_end_gated(struct mosaic_sched_client *c, uint64_t generation,
                                      unsigned slot, uint32_t seq, uint64_t request_id,
                                      uint64_t ts_ns);
/*
 * HP, a request's end in two parts, for an end known before the GPU
 * finished (a synchronisation about to wait): _covered as the wait begins,
 * with the device writing seq to slot's hp_done word behind every launch
 * of the request (all on that slot's stream), then _host when the wait
 * returned. The daemon ends the request at the earlier of the moment it
 * saw the word reach seq and the host's end: the host's time after the
 * device finished (a wake-up on a loaded machine, the process
 * descheduled) is not the request's. A _host end after the device's is
 * ignored. Never wait.
 */
int mosaic_sched_hp_request_end_covered(struct mosaic_sched_client *c, uint64_t generation,
                                        unsigned slot, uint32_t seq, uint64_t request_id,
                                        uint64_t ts_ns);
int mosaic_sched_hp_request_end_host(struct mosaic_sched_client *c, uint64_t generation,
                                     uint64_t request_id, uint64_t ts_ns);
/* Gate slots the monitor released because their daemon went away. */
uint64_t mosaic_sched_client_released(const struct mosaic_sched_client *c);

#ifdef __cplusplus
}
#endif
#endif /* MOSAIC_SCHED_H */
