/*
 * CUDA graphs: a graph launch is one unit whose kernels the shim knows.
 *
 * When a graph is instantiated (or an executable graph updated), the shim
 * walks the graph once (kernel nodes, and child graphs recursively) and
 * keeps the executable's kernel list. A graph launch then costs one lookup
 * and one atomic increment of the executable's run count, however many
 * kernels it holds; run counts are folded into the kernels' own counts when
 * the executable is destroyed or updated, and read live for statistics.
 *
 * In an HP process (MOSAIC_ROLE=hp) the walk also keeps each kernel node's
 * id on the arbiter's rings (its profile key's hash: name, grid, block and
 * dynamic shared memory from the node's parameters, as a direct launch of
 * it would post), so that an HP graph launch posts its kernels in node
 * order and the daemon's eq. 5 sees inside it (sched_link.c). Node order is
 * the order cuGraphGetNodes gives, which for a graph captured from one
 * stream is the capture order; independent branches have no order to keep.
 *
 * In a BE process (MOSAIC_ROLE=be) the same ids make the graph one
 * admission unit: the executable gets an id of its own (a hash of its
 * kernels' ids, sched/proto.h), which the shim defines to the daemon once
 * per connection, before the graph's first launch on it, and a launch then
 * asks admission once, for the whole graph (sched_link.c). Why an id
 * defined once rather than the kernel list in every request: a request is
 * one fixed-size ring entry on the launch path, and a graph may hold
 * dozens of kernels; defining it costs one entry per kernel once per
 * connection, and each launch stays one entry. A graph of more kernels
 * than a definition carries (MOSAIC__GRAPH_MAX_KERNELS) is asked for as
 * one unknown kernel, and says so at instantiation.
 *
 * Kernels inside conditional nodes (CUDA 12.4+) may or may not run: such a
 * graph is marked unknown and its launches are counted apart. Kernel nodes
 * whose function changes through cuGraphExecKernelNodeSetParams are not
 * followed. Tested on driver 580.159.04 / CUDA 13.0.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto.h"
#include "sched_link.h"

struct mosaic__pmap mosaic__gmap = MOSAIC__PMAP_INITIALIZER;

struct graph_rec {
    _Atomic uint64_t runs;
    int complete;       /* every kernel that can run is in k[] */
    size_t n, cap;
    struct mosaic__kernel **k;
    uint64_t *ids; /* HP and BE: k[i]'s id on the arbiter's rings, else NULL */
    uint64_t unit_id; /* BE: the graph's id as one admission unit; 0: none */
    _Atomic uint64_t defined_gen; /* BE: the connection it was last defined on */
    struct graph_rec *next_retired;
};

/* Records replaced or destroyed are kept (a launch racing with destroy may
 * still hold one) and freed never: their number is bounded by the
 * program's instantiations. */
static pthread_mutex_t retire_lock = PTHREAD_MUTEX_INITIALIZER;
static struct graph_rec *retired;

void mosaic__graph_fork_lock(void)
{
    pthread_mutex_lock(&retire_lock);
}

void mosaic__graph_fork_unlock(int child)
{
    if (child)
        pthread_mutex_init(&retire_lock, NULL);
    else
        pthread_mutex_unlock(&retire_lock);
}

#define MOSAIC__GRAPH_DEPTH 16

/* want_ids: an HP or BE process, which tells the arbiter a graph's kernels. */
static int push(struct graph_rec *g, struct mosaic__kernel *k, const CUDA_KERNEL_NODE_PARAMS *p,
                int want_ids)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        struct mosaic__kernel **nk = realloc(g->k, cap * sizeof(*nk));
        if (!nk)
            return -1;
        g->k = nk;
        if (want_ids) {
            uint64_t *ni = realloc(g->ids, cap * sizeof(*ni));
            if (!ni)
                return -1;
            g->ids = ni;
        }
        g->cap = cap;
    }
    if (want_ids)
        g->ids[g->n] = mosaic__sched_key_id(
            k->name, (unsigned[3]){p->gridDimX, p->gridDimY, p->gridDimZ},
            (unsigned[3]){p->blockDimX, p->blockDimY, p->blockDimZ}, p->sharedMemBytes);
    g->k[g->n++] = k;
    return 0;
}

static int collect(const struct mosaic__binding *b, CUgraph graph,
                   struct graph_rec *g, int depth, int want_ids)
{
    CUgraphNode *nodes;
    size_t n = 0;
    int rc = 0;

    if (depth > MOSAIC__GRAPH_DEPTH ||
        b->drv.cuGraphGetNodes(graph, NULL, &n) != CUDA_SUCCESS)
        return -1;
    if (n == 0)
        return 0;
    nodes = calloc(n, sizeof(*nodes));
    if (!nodes || b->drv.cuGraphGetNodes(graph, nodes, &n) != CUDA_SUCCESS) {
        free(nodes);
        return -1;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        CUgraphNodeType type;
        CUDA_KERNEL_NODE_PARAMS p;
        CUgraph child;

        if (b->drv.cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS) {
            rc = -1;
            break;
        }
        switch (type) {
        case CU_GRAPH_NODE_TYPE_KERNEL:
            memset(&p, 0, sizeof(p));
            if (b->drv.cuGraphKernelNodeGetParams_v2(nodes[i], &p) != CUDA_SUCCESS)
                rc = -1;
            else if (p.func)
                rc = push(g, mosaic__kernel_get(p.func, MOSAIC__KIND_FUNCTION), &p, want_ids);
            else
                rc = push(g, mosaic__kernel_get(p.kern, MOSAIC__KIND_KERNEL), &p, want_ids);
            break;
        case CU_GRAPH_NODE_TYPE_GRAPH:
            if (b->drv.cuGraphChildGraphNodeGetGraph(nodes[i], &child) !=
                CUDA_SUCCESS)
                rc = -1;
            else
                rc = collect(b, child, g, depth + 1, want_ids);
            break;
        case CU_GRAPH_NODE_TYPE_CONDITIONAL:
            rc = -1;
            break;
        default:
            break;
        }
    }
    free(nodes);
    return rc;
}

static void fold(struct graph_rec *g)
{
    uint64_t runs = atomic_exchange(&g->runs, 0);

    if (!runs)
        return;
    for (size_t i = 0; i < g->n; i++)
        atomic_fetch_add_explicit(&g->k[i]->graph_runs, runs,
                                  memory_order_relaxed);
    MOSAIC__ADD(graph_kernel_launches, runs * g->n);
}

static void retire(struct graph_rec *g)
{
    if (!g)
        return;
    fold(g);
    pthread_mutex_lock(&retire_lock);
    g->next_retired = retired;
    retired = g;
    pthread_mutex_unlock(&retire_lock);
}

void mosaic__graph_note_exec(CUgraphExec exec, CUgraph graph)
{
    const struct mosaic__binding *b = mosaic__binding();
    struct graph_rec *g = calloc(1, sizeof(*g));
    struct graph_rec *old = mosaic__pmap_get(&mosaic__gmap, exec);

    if (!g || !b || !b->drv.cuGraphGetNodes || !b->drv.cuGraphNodeGetType ||
        !b->drv.cuGraphKernelNodeGetParams_v2 ||
        !b->drv.cuGraphChildGraphNodeGetGraph) {
        free(g);
        MOSAIC__INC(errors);
        return;
    }
    g->complete = collect(b, graph, g, 0,
                          mosaic__cfg.role == MOSAIC__ROLE_HP ||
                              mosaic__cfg.role == MOSAIC__ROLE_BE) == 0;
    if (!g->complete) {
        MOSAIC__LOG(MOSAIC__LOG_WARN,
                    "graph exec %p: kernels not fully known (conditional "
                    "node, or a node the driver would not describe)",
                    (void *)exec);
    }
    MOSAIC__LOG(MOSAIC__LOG_DEBUG, "graph exec %p: %zu kernels", (void *)exec,
                g->n);
    if (mosaic__cfg.role == MOSAIC__ROLE_BE && g->complete && g->n > 0) {
        int named = 1;
        for (size_t i = 0; i < g->n; i++)
            named &= g->ids[i] != 0; /* a name too long for a key has no id */
        if (g->n > MOSAIC__GRAPH_MAX_KERNELS)
            MOSAIC__LOG(MOSAIC__LOG_WARN,
                        "graph exec %p: %zu kernels, more than the %u a BE graph "
                        "definition carries: each launch of it asks admission as one "
                        "unknown kernel (held while an HP request is in flight)",
                        (void *)exec, g->n, MOSAIC__GRAPH_MAX_KERNELS);
        else if (named)
            g->unit_id = mosaic__graph_unit_id(g->ids, g->n);
    }
    if (mosaic__pmap_put(&mosaic__gmap, exec, g) != 0) {
        free(g->k);
        free(g->ids);
        free(g);
        MOSAIC__INC(errors);
        return;
    }
    retire(old);
}

void mosaic__graph_forget_exec(CUgraphExec exec)
{
    struct graph_rec *old = mosaic__pmap_get(&mosaic__gmap, exec);

    if (old && mosaic__pmap_put(&mosaic__gmap, exec, NULL) == 0)
        retire(old);
}

int mosaic__graph_note_launch(CUgraphExec exec)
{
    struct graph_rec *g = mosaic__pmap_get(&mosaic__gmap, exec);

    if (!g)
        return -1;
    atomic_fetch_add_explicit(&g->runs, 1, memory_order_relaxed);
    return g->complete ? 0 : -1;
}

const uint64_t *mosaic__graph_hp_ids(CUgraphExec exec, size_t *n)
{
    static const uint64_t no_kernels[1];
    /* A record stays valid after a racing destroy or update (retired
     * records are never freed), so the ids may be read without a lock. */
    struct graph_rec *g = mosaic__pmap_get(&mosaic__gmap, exec);

    if (!g || !g->complete)
        return NULL;
    *n = g->n;
    if (g->n == 0)
        return no_kernels; /* nothing to post, and nothing unknown */
    return g->ids;
}

const uint64_t *mosaic__graph_be_unit(CUgraphExec exec, size_t *n, uint64_t *unit_id,
                                      _Atomic uint64_t **defined_gen)
{
    /* Read without a lock, as mosaic__graph_hp_ids. */
    struct graph_rec *g = mosaic__pmap_get(&mosaic__gmap, exec);

    if (!g || !g->complete || !g->unit_id)
        return NULL;
    *n = g->n;
    *unit_id = g->unit_id;
    *defined_gen = &g->defined_gen;
    return g->ids;
}

static void snapshot_one(const void *key, void *val, void *arg)
{
    struct graph_rec *g = val;
    uint64_t runs = atomic_load_explicit(&g->runs, memory_order_relaxed);

    (void)key;
    for (size_t i = 0; i < g->n; i++)
        g->k[i]->snap += runs;
    *(uint64_t *)arg += runs * g->n;
}

uint64_t mosaic__graph_snapshot(void)
{
    uint64_t total = 0;

    mosaic__pmap_foreach(&mosaic__gmap, snapshot_one, &total);
    return total;
}

static void reset_one(const void *key, void *val, void *arg)
{
    (void)key;
    (void)arg;
    atomic_store(&((struct graph_rec *)val)->runs, 0);
}

void mosaic__graph_reset_counts(void)
{
    mosaic__pmap_foreach(&mosaic__gmap, reset_one, NULL);
}
