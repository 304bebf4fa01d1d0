/*
 * The shim as a client of the arbiter (mosaic-sched, docs/sched.md): what
 * the launch and synchronisation hooks call. Every function is a no-op
 * (one load and a branch) unless MOSAIC_ROLE is hp or be.
 */
#ifndef MOSAIC_PRELOAD_SCHED_LINK_H
#define MOSAIC_PRELOAD_SCHED_LINK_H

#include "internal.h"

/* Streams one process can gate on the device (the segment's gate slots). */
#define MOSAIC__GATE_STREAMS 64

/* BE: before a kernel or graph launch into stream s, hold the calling
 * thread until the daemon grants it (fn NULL: a graph launch of exec). */
void mosaic__sched_be_gate(const struct mosaic__binding *b, int hook, const void *fn,
                           CUgraphExec exec, CUstream s, const unsigned *grid,
                           const unsigned *block, unsigned dyn_smem);
/* BE: right after the launch that mosaic__sched_be_gate let through (also
 * a failed one): with the device-side gate, enqueues the stream's done
 * write behind the kernel. A no-op when the gate held on the host. */
void mosaic__sched_be_launched(const struct mosaic__binding *b, int hook);
/* HP: after a launch executed (not captured) into stream s: post it,
 * beginning a learned request when none is open,
 * with the device's completion write behind it (MOSAIC_HP_COMPLETION). */
void mosaic__sched_hp_launched(const struct mosaic__binding *b, int hook, CUstream s,
                               const void *fn, const unsigned *grid, const unsigned *block,
                               unsigned dyn_smem);
/* HP: after a graph launch executed into stream s: the same, posting the
 * graph's kernels. */
void mosaic__sched_hp_graph_launched(const struct mosaic__binding *b, int hook, CUstream s,
                                     CUgraphExec exec);
/* HP: an explicitly marked request (an NVTX "mosaic:request" range) begins:
 * learning stops; returns its id (nonzero), or 0 when this process is no
 * HP client. close ends it (0 is ignored); returns 0 or a MOSAIC_E* code. */
uint32_t mosaic__sched_hp_request_open(void);
int mosaic__sched_hp_request_close(uint32_t id);
/* A kernel's id on the rings from its name and launch configuration: the
 * hash of its whole profile key, a name of any length. */
uint64_t mosaic__sched_key_id(const char *name, const unsigned *grid, const unsigned *block,
                              unsigned dyn_smem);
/* Before a synchronising call (mosaic__sched_syncing) and after it
 * returned (mosaic__sched_synced): ctx 0, s the stream
 * (cuStreamSynchronize); ctx 1, s NULL (cuCtxSynchronize); ctx 2, s NULL
 * (cuEventSynchronize). */
void mosaic__sched_syncing(CUstream s, int ctx);
void mosaic__sched_synced(CUstream s, int ctx);

/* The arbiter client's own counts, for the stats file: doorbell packets
 * sent (a system call each), events dropped for a full ring, and the
 * connections made (0: never connected). */
void mosaic__sched_client_counts(uint64_t *doorbells, uint64_t *dropped,
                                 uint64_t *connections);

/* nvtx.c, from the constructor: in an HP process, makes this library the
 * NVTX injection (NVTX_INJECTION64_PATH, only if unset) so that ranges
 * named "mosaic:request" mark requests; in any other, declines NVTX. */
void mosaic__nvtx_setup(void);

#endif /* MOSAIC_PRELOAD_SCHED_LINK_H */
