/*
 * The co-run machinery that `corun` and the offset co-runs (corun-offset)
 * share, so that their records are measured the same way: instances of
 * variants cached across pairs (evicted least recently used first when
 * device memory runs low), each variant's isolated timing per side measured
 * once, and the pairs file reader. Defined in cmd_corun.cu.
 */
#ifndef MOSAIC_ZOO_CORUN_H
#define MOSAIC_ZOO_CORUN_H

#include <stddef.h>

#include "zoo.h"
#include "zoo_streams.h"
#include "zoo_timing.h"

struct cache_ent {
    struct zoo_inst inst;
    int live;
    int failed;
    unsigned long long last_use;
    size_t bytes;
    double setup_s;
    char err[512];
};

struct iso_ent {
    int done;
    int rc;
    struct timing t;
    double gated_med, gated_min, gated_max;
    char err[512];
};

struct corun_state {
    struct xcfg a, b;             /* where A runs, where B runs */
    struct cache_ent *cache;      /* [variant * 2 + copy] */
    struct iso_ent *iso;          /* [variant * 2 + side] */
    unsigned long long clock;
    int repeats;
    int n_live;
};

void cache_evict(struct corun_state *C, struct cache_ent *e);
/* Variant vi's instance number `copy` (0, or 1 for a variant paired with
 * itself), set up on first use; NULL (with g_err set) when setup failed.
 * keep is never evicted to make room. */
struct zoo_inst *cache_get(struct corun_state *C, int vi, int copy,
                           const struct cache_ent *keep);
/* Variant vi's isolated timing on side 0 (A's configuration) or 1 (B's):
 * the graph-replay time and the gated single launch, measured once. */
struct iso_ent *iso_get(struct corun_state *C, int vi, int side,
                        struct zoo_inst *in);
/* Pairs from a file of "A B" lines ('#' starts a comment); a bad line is
 * an error record. Returns 0 (pairs malloc'ed, 2 ints each) or -1. */
int read_pairs(const char *path, int **pairs, int *n_pairs);
/* Writes corun_{a,b}_us (the medians of a and b, n samples each) with their
 * _min_us and _max_us into the current record; returns the medians. */
void j_corun_durations(const double *a, const double *b, int n, double *ma,
                       double *mb);

#endif /* MOSAIC_ZOO_CORUN_H */
