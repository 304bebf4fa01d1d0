/*
 * BE graphs as admission units, for the model-driven policies
 * (sched/policy_model.c): the graph definitions the BE clients post
 * (proto.h, MOSAIC__EV_BE_GRAPH), kept per client and graph id, so that a
 * want, grant or done naming a graph's id can be read as its kernels in
 * launch order.
 *
 * A definition arrives as one event per kernel, possibly interleaved with
 * other events of the same client (several threads post). It is usable
 * once every index of its count arrived and the kernels hash to the
 * graph's id (the client computes the id the same way): a definition cut
 * short by a full ring, or one that does not add up, is never used, and
 * the graph stays an unknown kernel for the policy (held beside HP, learned
 * from its runs as a whole: policy_learn.h).
 */
#ifndef MOSAIC_SCHED_POLICY_GRAPH_H
#define MOSAIC_SCHED_POLICY_GRAPH_H

#include <stddef.h>
#include <stdint.h>

/* Definitions kept at once over all clients; a further one is dropped
 * (its graph stays unknown) and counted. A BE process has a few graphs
 * (one per captured step shape), so this is generous. */
#define MOSAIC__GRAPHS_MAX 256

struct mosaic__graphs;

/* MOSAIC_ENOMEM or 0. */
int mosaic__graphs_open(struct mosaic__graphs **out);
void mosaic__graphs_close(struct mosaic__graphs *g);

/*
 * One kernel of a definition. Returns 1 when this event completed a
 * definition that checks out, -1 when it completed one that does not (the
 * kernels do not hash to the id; logged by the caller), else 0.
 */
int mosaic__graphs_define(struct mosaic__graphs *g, uint32_t client, uint64_t id,
                          uint32_t index, uint32_t count, uint64_t kernel);
/* The kernels of client's graph id, *n of them, when its definition is
 * complete and checks out; NULL otherwise (also for an id that names no
 * graph: a kernel). */
const uint64_t *mosaic__graphs_get(const struct mosaic__graphs *g, uint32_t client,
                                   uint64_t id, unsigned *n);
/* Forgets every definition of a client that left. */
void mosaic__graphs_client_gone(struct mosaic__graphs *g, uint32_t client);
/* Definitions dropped because the table was full, and ones that did not
 * check out. */
uint64_t mosaic__graphs_dropped(const struct mosaic__graphs *g);
uint64_t mosaic__graphs_rejected(const struct mosaic__graphs *g);

#endif /* MOSAIC_SCHED_POLICY_GRAPH_H */
