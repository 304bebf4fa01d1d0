/*
 * The device-side launch-offset protocol of the zoo's offset co-runs
 * (issue 14): one kernel ("the follower", B) starts a chosen delay after
 * another ("the leader", A) has been dispatched, with the moment taken on
 * the GPU, not on the host, so that a host that enqueues ahead or a second
 * process does not move it.
 *
 * One round r of the protocol, on two streams (one process) or on two
 * processes' streams under MPS (the sync block then lives in the leader
 * process's memory and the follower opens it through CUDA IPC):
 *
 *   follower stream:  follow(r, d) ........................ B
 *                     sets ready = r, spins until mark == r, then until
 *                     %globaltimer >= mark_ns + d, and lets B go
 *   leader stream:    lead(r) ...... A
 *                     spins until ready == r, writes mark_ns then mark = r
 *
 * The ready handshake makes sure the follower's spinner is on the GPU
 * before the leader marks, so a late follower never turns into a larger
 * offset than asked for; sequence numbers make stale words from an earlier
 * round harmless. Every wait is bounded by %globaltimer: on a timeout the
 * kernel sets the sticky `dead` word, records the round as failed and
 * returns, and every later wait of either side returns at once, so a dead
 * peer never hangs the GPU.
 *
 * Both the mark and the release sit one kernel boundary before the kernel
 * they time, so the boundary's latency (~1 us) appears on both sides and
 * cancels in the offset; what remains is the follower's polling delay. The
 * spinners are one thread: while the follower waits it holds one warp slot
 * on one SM (in shared mode, an SM that the leader also uses).
 *
 * Written for CUDA 13.0 and an H200 (sm_90, driver 580.159.04), where
 * %globaltimer advances in 32 ns steps (profiler/data/h200/placement.jsonl,
 * "globaltimer_step_ns"); that CUDA IPC memory handles open between two
 * MPS clients is NVIDIA's documented behaviour, seen working on the H200
 * run of 2026-12-01 (profiler/data/h200/offsets: the achieved offset within
 * 1.2-1.6 us of the requested one in one process, 0.08 us across two). The
 * protocol's kernels must be loaded before the first round
 * (zoo_sync_preload says why).
 */
#ifndef MOSAIC_ZOO_OFFSET_H
#define MOSAIC_ZOO_OFFSET_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#define ZOO_SYNC_MAGIC   0x4d5a4f4f53594e31ull /* "MZOOSYN1" */
#define ZOO_SYNC_VERSION 1u

/* Lives in device memory, written only by the protocol's kernels (and
 * zeroed by the host that allocates it). Each word on its own 32 bytes: a
 * word one side spins on is not rewritten by the other side's stores. */
struct zoo_sync {
    unsigned long long magic;       /* ZOO_SYNC_MAGIC, set at creation */
    unsigned long long pad0[3];
    unsigned long long mark_seq;    /* leader: round last marked */
    unsigned long long mark_ns;     /* leader: %globaltimer at that mark */
    unsigned long long mark_delay_ns; /* leader: delay it adds (below) */
    unsigned long long mark_cmd;    /* leader: a word for the follower's host */
    unsigned long long ready_seq;   /* follower: round whose spinner runs */
    unsigned long long pad2[3];
    unsigned long long dead;        /* sticky: a wait timed out (its round) */
    unsigned long long pad3[3];
};

/* What a protocol kernel saw in one round, in the caller's process's
 * device memory (one per round). */
enum zoo_sync_status {
    ZOO_SYNC_OK = 0,
    ZOO_SYNC_TIMEOUT = 1,   /* this wait ran past its timeout */
    ZOO_SYNC_PEER_DEAD = 2, /* an earlier wait (either side) had timed out */
    ZOO_SYNC_LATE = 3       /* follower: mark seen after mark + delay */
};

struct zoo_sync_rec {
    unsigned long long t_start;     /* the protocol kernel began */
    unsigned long long t_release;   /* it let the kernel behind it go */
    unsigned long long t_mark;      /* the leader's mark it saw */
    unsigned long long delay_ns;    /* follower: the delay it applied */
    unsigned long long cmd;         /* the leader's mark_cmd */
    unsigned int status;            /* enum zoo_sync_status */
    unsigned int polls;             /* loads of the awaited word */
};

/*
 * Enqueues the leader's half of round seq on s: wait for the follower's
 * ready (when wait_ready), then the mark. delay_ns is published with the
 * mark and added to the follower's own: a delay relative to the leader's
 * isolated duration is known only where the leader runs (in its process,
 * when two processes co-run). cmd is published too: the leader process
 * tells the follower process to go on or stop with it. rec may be NULL.
 * Returns 0 or a cudaError_t.
 */
int zoo_sync_lead(struct zoo_sync *sync, unsigned long long seq,
                  int wait_ready, unsigned long long delay_ns,
                  unsigned long long cmd, unsigned long long timeout_ns,
                  struct zoo_sync_rec *rec, cudaStream_t s);

/* Enqueues the follower's half of round seq on s: ready, wait for the
 * mark, wait delay_ns plus the leader's published delay after it. Returns
 * 0 or a cudaError_t. */
int zoo_sync_follow(struct zoo_sync *sync, unsigned long long seq,
                    unsigned long long delay_ns,
                    unsigned long long timeout_ns, struct zoo_sync_rec *rec,
                    cudaStream_t s);


/*
 * Loads the protocol's two kernels into the context of every stream in st
 * (n of them) before the first round, and returns once they have run there
 * (synchronously). Why: CUDA 12.2+ loads a kernel lazily at its first
 * launch (CUDA_MODULE_LOADING=LAZY is the default), and that load may wait
 * for the context to go idle. The first round's leader kernel spins until
 * the follower kernel runs; if the follower's launch is its first, its load
 * waits for the spinning leader and neither moves until the leader's wait
 * times out. On the H200 run of 2026-12-01 this failed every round of the
 * first pair of each one-process phase, and that pair's failed isolated
 * rounds left two variants without iso_sync baselines for the whole run
 * (profiler/data/h200/offsets/README.md). The warm-up launches use a
 * private block whose dead word is set, so they return at once and touch
 * no peer's state (two processes under MPS share their block). Returns 0
 * or a cudaError_t.
 */
int zoo_sync_preload(const cudaStream_t *st, int n);

/* Clears the sticky dead word (synchronously; no protocol kernel may be
 * queued). One process does this before each pair, so that one pair's
 * timeout does not fail the rest of the run; two processes never do, as a
 * timeout there means the peer is gone. */
int zoo_sync_reset(struct zoo_sync *sync);

/* Allocates a zeroed sync block with its magic set (synchronously). */
int zoo_sync_alloc(struct zoo_sync **sync);

/*
 * The IPC handle file: the leader process writes the sync block's
 * cudaIpcMemHandle_t, its pid and the run's schedule hash (which both sides
 * compute from their arguments: a follower with other arguments would take
 * part in other rounds) to path, mode 0600, through a temporary file and a
 * rename so that a reader never sees half a file. The follower polls for
 * the file for up to wait_s seconds. Both return 0 or -1 with why in err
 * (the path, what was wrong, what to do).
 */
struct zoo_sync_peer {
    cudaIpcMemHandle_t handle;
    long long pid;
    unsigned long long schedule_hash;
};

int zoo_sync_write_handle(const char *path, const struct zoo_sync_peer *p,
                          char *err, size_t errlen);
int zoo_sync_read_handle(const char *path, double wait_s,
                         struct zoo_sync_peer *p, char *err, size_t errlen);

/* Exports the block (leader) or opens the peer's (follower). */
int zoo_sync_export(struct zoo_sync *sync, cudaIpcMemHandle_t *h);
int zoo_sync_open(const cudaIpcMemHandle_t *h, struct zoo_sync **sync);

/* Checks the magic of an opened block (synchronously): 0 when it is a
 * zoo sync block. */
int zoo_sync_check(const struct zoo_sync *sync);

/* FNV-1a over bytes, chained: the schedule hash. */
unsigned long long zoo_sync_hash(unsigned long long h, const void *p,
                                 size_t n);

#endif /* MOSAIC_ZOO_OFFSET_H */
