/*
 * The shim as a client of the arbiter (mosaic-sched, docs/sched.md): what
 * the launch and synchronisation hooks call. Every function is a no-op
 * (one load and a branch) unless MOSAIC_ROLE is hp or be.
 */
#ifndef MOSAIC_PRELOAD_SCHED_LINK_H
#define MOSAIC_PRELOAD_SCHED_LINK_H

#include "internal.h"

/* BE: before a kernel or graph launch into stream s, hold the calling
 * thread until the daemon grants it (fn NULL: a graph launch of exec). */
void mosaic__sched_be_gate(const struct mosaic__binding *b, int hook, const void *fn,
                           CUgraphExec exec, CUstream s, const unsigned *grid,
                           const unsigned *block, unsigned dyn_smem);
/* HP: after a launch executed (not captured): post it, beginning a learned
 * request when none is open (fn NULL: a graph launch). */
void mosaic__sched_hp_launched(const void *fn, const unsigned *grid, const unsigned *block,
                               unsigned dyn_smem);
/* After a synchronising call returned: s is the stream (NULL with ctx 1 for
 * cuCtxSynchronize, NULL with ctx 0 for an event). */
void mosaic__sched_synced(CUstream s, int ctx);

#endif /* MOSAIC_PRELOAD_SCHED_LINK_H */
