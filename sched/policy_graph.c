/*
 * The BE graph definitions of the model-driven policies (policy_graph.h).
 * A flat table searched linearly: at most MOSAIC__GRAPHS_MAX entries, and
 * it is read once per decision about a graph, which is rarer than the
 * decisions about its kernels would be.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "policy_graph.h"
#include "proto.h"

struct gdef {
    int used;
    uint32_t client;
    uint64_t id;
    uint32_t count;
    uint64_t have; /* a bit per index that arrived (count <= 64) */
    int ok;        /* complete, and the kernels hash to id */
    uint64_t k[MOSAIC__GRAPH_MAX_KERNELS];
};

struct mosaic__graphs {
    struct gdef d[MOSAIC__GRAPHS_MAX];
    unsigned used; /* entries in use: 0 (no BE graphs) keeps every lookup free */
    uint64_t dropped, rejected;
};

_Static_assert(MOSAIC__GRAPH_MAX_KERNELS <= 64, "a definition's arrivals fit one 64-bit mask");

int mosaic__graphs_open(struct mosaic__graphs **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : MOSAIC_ENOMEM;
}

void mosaic__graphs_close(struct mosaic__graphs *g)
{
    free(g);
}

static struct gdef *find(const struct mosaic__graphs *g, uint32_t client, uint64_t id)
{
    if (g->used == 0)
        return NULL;
    for (int i = 0; i < MOSAIC__GRAPHS_MAX; i++)
        if (g->d[i].used && g->d[i].client == client && g->d[i].id == id)
            return (struct gdef *)&g->d[i];
    return NULL;
}

int mosaic__graphs_define(struct mosaic__graphs *g, uint32_t client, uint64_t id,
                          uint32_t index, uint32_t count, uint64_t kernel)
{
    struct gdef *d = find(g, client, id);
    uint64_t all;

    /* mosaic__entry_check refused anything else before it got here; the
     * test is repeated because the table's masks depend on it. */
    if (!id || !kernel || count == 0 || count > MOSAIC__GRAPH_MAX_KERNELS || index >= count)
        return 0;
    if (d && d->count != count) {
        /* Redefined with another count: the old one is not this graph. */
        d->used = 0;
        g->used--;
        d = NULL;
    }
    if (!d) {
        for (int i = 0; i < MOSAIC__GRAPHS_MAX && !d; i++)
            if (!g->d[i].used)
                d = &g->d[i];
        if (!d) {
            g->dropped++;
            return 0;
        }
        *d = (struct gdef){.used = 1, .client = client, .id = id, .count = count};
        g->used++;
    }
    all = count == 64 ? ~0ull : (1ull << count) - 1;
    /* A definition is sent again whole after one was cut short by a full
     * ring, so its entries may complete it before the repeat is over: a
     * repeat of what a complete definition holds changes nothing, and
     * anything else starts it again (unknown until it completes). */
    if (d->ok) {
        if (d->k[index] == kernel)
            return 0;
        d->ok = 0;
        d->have = 0;
    }
    d->k[index] = kernel;
    d->have |= 1ull << index;
    if (d->have != all || d->ok)
        return 0;
    if (mosaic__graph_unit_id(d->k, count) != id) {
        g->rejected++;
        d->used = 0;
        g->used--;
        return -1;
    }
    d->ok = 1;
    return 1;
}

const uint64_t *mosaic__graphs_get(const struct mosaic__graphs *g, uint32_t client,
                                   uint64_t id, unsigned *n)
{
    const struct gdef *d = id ? find(g, client, id) : NULL;

    if (!d || !d->ok)
        return NULL;
    *n = d->count;
    return d->k;
}

void mosaic__graphs_client_gone(struct mosaic__graphs *g, uint32_t client)
{
    for (int i = 0; i < MOSAIC__GRAPHS_MAX; i++)
        if (g->d[i].used && g->d[i].client == client) {
            g->d[i].used = 0;
            g->used--;
        }
}

uint64_t mosaic__graphs_dropped(const struct mosaic__graphs *g)
{
    return g->dropped;
}

uint64_t mosaic__graphs_rejected(const struct mosaic__graphs *g)
{
    return g->rejected;
}
