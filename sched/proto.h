/*
 * The protocol between mosaic-sched and its clients: the socket messages,
 * the shared segment's layout and its rings. Internal to sched/ (the
 * daemon and sched/client.c); the layout is described in docs/sched.md.
 *
 * Everything a peer sends, and everything in a shared segment, is
 * untrusted: the parsers here check sizes, magic, version and every field
 * before anything is used, and the daemon keeps its own copies of ring
 * indices so that a client scribbling over its segment hurts only itself.
 */
#ifndef MOSAIC_SCHED_PROTO_H
#define MOSAIC_SCHED_PROTO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "mosaic/mosaic.h"
#include "mosaic/sched.h"

/* ---- socket messages (SOCK_SEQPACKET: one message per packet) -------- */

#define MOSAIC__SCHED_MAGIC 0x4843534du /* "MSCH" little-endian */
/* 2: the gate slots (device-side BE gate and HP completion words) and the
 * entries' stream sequence (aux). 3: BE graph definitions on the event ring
 * (MOSAIC__EV_BE_GRAPH), which a version-2 daemon would reject entry by
 * entry until it dropped the client, and the partition messages after the
 * handshake (PARTITION, PARTITION_SET). 4: MOSAIC__EF_COVERS on HP_REQ_END
 * (a learned request's two-part end), which a version-3 daemon would
 * reject entry by entry. A peer of another version is refused with the
 * reason at the handshake, never half-understood. */
#define MOSAIC__SCHED_PROTO 4u
/* The largest message a peer may send the daemon; anything longer is cut
 * by the kernel (MSG_TRUNC) and refused. Status replies go the other way
 * and may be longer. */
#define MOSAIC__SCHED_MSG_MAX 512u
#define MOSAIC__SCHED_STATUS_MAX 65536u
#define MOSAIC__SCHED_REASON_LEN 192u

enum mosaic__msg_type {
    MOSAIC__MSG_HELLO = 1,   /* client -> daemon: who I am, which role */
    MOSAIC__MSG_WELCOME = 2, /* daemon -> client: granted, segment attached */
    MOSAIC__MSG_REFUSE = 3,  /* daemon -> client: refused, with the reason */
    MOSAIC__MSG_DOORBELL = 4, /* client -> daemon: the ring has work, wake up */
    MOSAIC__MSG_STATUS = 5,  /* client -> daemon: send the status JSON */
    MOSAIC__MSG_STATUS_REPLY = 6,
    /* daemon -> connected client: the SM partition of its role from now
     * on (the WELCOME's sms, changed), applied by the shim between
     * launches. */
    MOSAIC__MSG_PARTITION = 7,
    /* operator -> daemon (no handshake, like STATUS; the daemon's own user
     * or root): set the split, answered by STATUS_REPLY or REFUSE. */
    MOSAIC__MSG_PARTITION_SET = 8,
};

struct mosaic__msg_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t length; /* the whole message, header included */
    uint32_t reserved; /* 0 */
};

struct mosaic__msg_hello {
    struct mosaic__msg_hdr h;
    int32_t pid;    /* the sender's own pid (informational: SO_PEERCRED rules) */
    uint32_t role;  /* enum mosaic_sched_role requested */
    uint32_t flags; /* 0 */
    uint32_t reserved;
};

struct mosaic__msg_welcome {
    struct mosaic__msg_hdr h;
    uint32_t role;
    uint32_t client_id;
    uint32_t shm_size;
    uint32_t heartbeat_ms;
    uint32_t be_timeout_ms;
    uint32_t be_on_timeout;
    /* The SM partition of this client's role (policy static: HP's group or
     * BE's rest of the split), applied by the shim's green context; 0: the
     * full GPU. At most MOSAIC__SCHED_MAX_SMS. */
    uint32_t sms;
    uint32_t reserved; /* 0 */
};
/* The most SMs a WELCOME may name: far above any GPU (the H200 has 132),
 * low enough that a garbage word is refused. */
#define MOSAIC__SCHED_MAX_SMS 1024u

struct mosaic__msg_partition {
    struct mosaic__msg_hdr h;
    uint32_t sms; /* at most MOSAIC__SCHED_MAX_SMS; 0: the full GPU */
    uint32_t reserved; /* 0 */
};

struct mosaic__msg_partition_set {
    struct mosaic__msg_hdr h;
    uint32_t hp_sms; /* HP's group; BE gets the rest. 0: both on the full GPU */
    uint32_t reserved; /* 0 */
};

struct mosaic__msg_refuse {
    struct mosaic__msg_hdr h;
    int32_t code; /* MOSAIC_E* */
    uint32_t reserved;
    char reason[MOSAIC__SCHED_REASON_LEN]; /* NUL-terminated */
};

/* A parsed message: the header plus the body of its type. */
struct mosaic__msg {
    struct mosaic__msg_hdr h;
    union {
        struct mosaic__msg_hello hello;
        struct mosaic__msg_welcome welcome;
        struct mosaic__msg_refuse refuse;
        struct mosaic__msg_partition partition;
        struct mosaic__msg_partition_set partition_set;
    } u;
    const char *text; /* STATUS_REPLY: the JSON inside the caller's buffer */
    size_t text_len;
};

/*
 * Parses one received message of len bytes. Returns 0, MOSAIC_EVERSION for
 * another protocol version, or MOSAIC_EPROTO (why says what was wrong).
 */
int mosaic__msg_parse(const void *buf, size_t len, struct mosaic__msg *out,
                      char *why, size_t whylen);
void mosaic__msg_init(struct mosaic__msg_hdr *h, int type, size_t length);

/* ---- the shared segment ---------------------------------------------- */

#define MOSAIC__SHM_MAGIC 0x314d48534153534dull /* "MSSAHSM1" */
#define MOSAIC__SHM_VERSION 2u
#define MOSAIC__RING_MIN 8u
#define MOSAIC__RING_MAX 65536u
#define MOSAIC__CACHELINE 64

/* Event types, client -> daemon (the ev ring) and daemon -> client (gr). */
enum mosaic__ev_type {
    MOSAIC__EV_HP_REQ_BEGIN = 1, /* id: request id, value: ts ns */
    MOSAIC__EV_HP_REQ_END = 2,   /* id: request id, value: ts ns */
    MOSAIC__EV_HP_LAUNCH = 3,    /* id: kernel id, value: ts ns */
    MOSAIC__EV_HP_COMPLETE = 4,  /* id: kernel id, value: duration ns */
    MOSAIC__EV_BE_WANT = 5,      /* ticket, id: kernel id, value: predicted ns */
    MOSAIC__EV_BE_DONE = 6,      /* ticket, id: kernel id */
    /* BE: one kernel of a graph definition (below): id: the graph's id,
     * ticket: the kernel's index, aux: the graph's kernel count, value: the
     * kernel's id. */
    MOSAIC__EV_BE_GRAPH = 7,
    MOSAIC__EV_GRANT = 16,       /* daemon -> client: ticket granted */
};

/*
 * Entry flags. MOSAIC__EF_GATED on a BE_WANT, HP_LAUNCH or HP_REQ_END says
 * the kernel (the request's work) is tracked through gate slot (flags & MOSAIC__EF_SLOT_MASK) with stream
 * sequence number aux: for BE it waits on the device for that slot's grant
 * word to reach aux, for HP the device writes aux to the slot's completion
 * word once it finished. Any other flag, or a slot past the segment's, is
 * rejected.
 */
#define MOSAIC__EF_GATED 0x8000u
#define MOSAIC__EF_SLOT_MASK 0x00ffu
/* On an HP_REQ_END only. With MOSAIC__EF_GATED: the write follows every
 * launch of the request (one stream), so the word reaching aux is the
 * request's device end even where its launches carry no write of their
 * own (mosaic_sched_hp_request_end_covered, posted as a synchronisation
 * begins). Alone (aux 0): the host's end of such a request, at the
 * synchronisation's return (mosaic_sched_hp_request_end_host); the
 * request ends at the earlier of the two. */
#define MOSAIC__EF_COVERS 0x4000u

/*
 * BE graphs as admission units. The shim gives an executable graph an id
 * when it is instantiated (mosaic__graph_unit_id: a hash of its kernels'
 * ids in node order, never 0) and, once per connection before the graph's
 * first launch, posts one MOSAIC__EV_BE_GRAPH entry per kernel; a launch
 * then asks admission once, naming the graph's id where a kernel's would
 * be. A definition is a run of fixed-size entries rather than one message
 * because the rings carry only fixed-size entries and no lock is taken to
 * post them: entries of several threads may interleave, so each names its
 * graph, index and count. A graph of more kernels than this is never
 * defined (the entries would crowd the ring, and the policies' forward
 * model follows at most that many BE kernels): the shim asks for it as
 * kernel 0, unknown, and says so once in its log.
 */
#define MOSAIC__GRAPH_MAX_KERNELS MOSAIC_SCHED_GRAPH_MAX_KERNELS

uint64_t mosaic__graph_unit_id(const uint64_t *kernel_ids, size_t n);

/* mosaic_sched_kernel_id of the key head followed by tail, without the
 * two joined: a kernel's name (a CUTLASS template's runs past 1,700
 * characters) and its launch configuration's suffix. */
uint64_t mosaic__kernel_id_join(const char *head, const char *tail);

/* One ring entry: 32 bytes, the seq word first (see mosaic__ring_*). */
struct mosaic__entry {
    _Atomic uint32_t seq;
    uint16_t type;
    uint16_t flags;
    uint32_t ticket;
    uint32_t aux; /* the stream sequence of a gated entry, else 0 */
    uint64_t id;
    uint64_t value;
};

/* Ring control words, each on its own cache line. */
struct mosaic__ring_ctl {
    _Alignas(MOSAIC__CACHELINE) _Atomic uint32_t head; /* next to produce */
    _Alignas(MOSAIC__CACHELINE) _Atomic uint32_t tail; /* next to consume */
};

#define MOSAIC__SHM_NEED_WAKEUP 1u /* daemon flag: sleeping, ring the doorbell */
/* Daemon flag, beside NEED_WAKEUP in an HP client's segment: no BE kernel
 * waits for a decision, so an HP request's end can release nothing and
 * need not wake the sleeping daemon (it reads the end, with the client's
 * time stamp, at its next look: at most a millisecond while a request is
 * open). A daemon that never sets it gets a doorbell at every end, as
 * before; a client that ignores it rings as before. */
#define MOSAIC__SHM_HP_END_QUIET 2u

/*
 * Gate slots: one per stream that a client gates (BE) or tracks (HP), in
 * pages of their own at the end of the segment so that the shim can map
 * just them for the device (cuMemHostRegister). One stream's kernels are
 * numbered 1, 2, 3 ... (wrapping, compared cyclically as the driver's
 * CU_STREAM_WAIT_VALUE_GEQ does), so one word per direction covers a
 * stream of any depth, where a word per ticket would need as many words
 * as kernels in flight and a way to recycle them.
 *
 * BE: before kernel n the stream waits (on the device) for grant >= n,
 * and after it the device writes done = n. The client writes want = n
 * before it asks, so that a monitor can release every wait of a dead
 * daemon (grant = want + 2^30 passes every n near want). The daemon grants
 * kernel n only once done >= n - 1: kernel n starts when its grant is
 * written, and at most one granted kernel per stream has not finished.
 *
 * HP: after launch n the device writes hp_done = n; the daemon reads it as
 * that kernel's completion. A gated HP_REQ_END says the same of the
 * request's work before it (the shim's write at a request's end).
 */
#define MOSAIC__GATE_SLOTS 64u
#define MOSAIC__GATE_RELEASE 0x40000000u

struct mosaic__gate_slot {
    _Alignas(MOSAIC__CACHELINE) _Atomic uint32_t grant; /* BE: daemon writes */
    _Atomic uint32_t done;    /* BE: the device writes after kernel n */
    _Atomic uint32_t want;    /* BE: the client writes before it asks */
    _Atomic uint32_t released; /* BE: 1 once a client released the slot */
    _Atomic uint64_t hp_done; /* HP: the device writes after launch n */
};

struct mosaic__shm_hdr {
    uint64_t magic;
    uint32_t version;
    uint32_t hdr_size;   /* sizeof(struct mosaic__shm_hdr) */
    uint32_t total_size; /* the whole segment */
    uint32_t entry_size; /* sizeof(struct mosaic__entry) */
    uint32_t ev_ctl_off, ev_off, ev_entries; /* client -> daemon */
    uint32_t gr_ctl_off, gr_off, gr_entries; /* daemon -> client */
    uint32_t client_id;
    uint32_t role;
    _Alignas(MOSAIC__CACHELINE) _Atomic uint64_t daemon_beat;
    _Atomic uint32_t daemon_flags;
    _Alignas(MOSAIC__CACHELINE) _Atomic uint64_t client_beat;
    _Atomic uint64_t ev_dropped; /* events the client could not post */
    _Alignas(MOSAIC__CACHELINE) _Atomic uint32_t grant_futex; /* bumped per grant batch */
    _Atomic uint32_t grant_waiters;
    uint32_t gate_off, gate_slots; /* page-aligned, MOSAIC__GATE_SLOTS */
};

/* A mapped segment with its rings located. */
struct mosaic__shm {
    void *base;
    size_t size;
    struct mosaic__shm_hdr *hdr;
    struct mosaic__ring_ctl *ev_ctl, *gr_ctl;
    struct mosaic__entry *ev, *gr;
    uint32_t ev_mask, gr_mask;
    struct mosaic__gate_slot *gate; /* gate_slots of them, page-aligned */
    size_t gate_bytes;              /* a whole number of pages */
};

/* Bytes a segment with two rings of `entries` each (and the gate slots) needs. */
size_t mosaic__shm_size(uint32_t entries);
/* Daemon: a sealed memfd of that size, mode 0600, mapped and initialised. */
int mosaic__shm_create(uint32_t entries, uint32_t client_id, uint32_t role,
                       struct mosaic__shm *shm, int *fd_out);
/* Client: maps fd and checks magic, version, sizes and offsets. */
int mosaic__shm_attach(int fd, size_t expect_size, struct mosaic__shm *shm,
                       char *why, size_t whylen);
/* Checks a mapped segment's header (exposed for the tests and the fuzzer). */
int mosaic__shm_check(const void *base, size_t size, char *why, size_t whylen);
void mosaic__shm_unmap(struct mosaic__shm *shm);

/*
 * Rings: fixed-size entries, a power-of-two count, one seq word per entry
 * (Vyukov's bounded queue). An entry at position p is free to produce when
 * seq == p, and holds a produced event when seq == p + 1; consuming sets it
 * to p + entries. Producers publish with a release store of seq and
 * consumers read it with an acquire load, so no system call and no lock is
 * needed while the ring has room.
 *
 * mosaic__ring_push_mp is for a client's many threads (the head is claimed
 * with a compare-and-swap). The daemon, which trusts nothing in the
 * segment, produces and consumes with its own private index (*pos) and
 * only publishes it to the shared word for the peer's information.
 */
int mosaic__ring_push_mp(struct mosaic__ring_ctl *ctl, struct mosaic__entry *ring,
                         uint32_t mask, const struct mosaic__entry *e);
int mosaic__ring_push_private(struct mosaic__ring_ctl *ctl, struct mosaic__entry *ring,
                              uint32_t mask, uint32_t *pos,
                              const struct mosaic__entry *e);
/* Returns 1 with *e filled, 0 when empty. */
int mosaic__ring_pop_private(struct mosaic__ring_ctl *ctl, struct mosaic__entry *ring,
                             uint32_t mask, uint32_t *pos, struct mosaic__entry *e);
/* Like pop_private but through the shared tail (a client, under its lock). */
int mosaic__ring_pop_shared(struct mosaic__ring_ctl *ctl, struct mosaic__entry *ring,
                            uint32_t mask, struct mosaic__entry *e);

/*
 * Checks one event read from a client's ring against the client's role.
 * Returns 0 or MOSAIC_EPROTO with why filled.
 */
int mosaic__entry_check(const struct mosaic__entry *e, int role, char *why,
                        size_t whylen);

/* ---- small shared helpers -------------------------------------------- */

uint64_t mosaic__now_ns(void);
const char *mosaic__role_str(int role);
/* Sends one SEQPACKET message, optionally with a file descriptor. */
int mosaic__send_msg(int sock, const void *msg, size_t len, int fd);
/* Receives one message (and at most one descriptor, else *fd = -1).
 * Returns the length, 0 at EOF, or a negative MOSAIC_E* code
 * (MOSAIC_EPROTO for a message longer than cap). */
long mosaic__recv_msg(int sock, void *buf, size_t cap, int *fd, int flags);
int mosaic__futex_wait(_Atomic uint32_t *word, uint32_t expect, uint32_t timeout_us);
void mosaic__futex_wake(_Atomic uint32_t *word);

#endif /* MOSAIC_SCHED_PROTO_H */
