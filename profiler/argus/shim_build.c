/*
 * argus-shim's region building: a pure function from recorded NVTX ranges,
 * launch correlation records and CUPTI kernel activity to an argus_trace
 * on the host timebase (include/argus/shim.h, docs/argus.md).
 *
 * Why a trace and not a structure of its own: the report, the Perfetto
 * trace and the statistics (count, partial, mean, p50, p99) of the argus
 * CLI then apply unchanged, and a kernel region reads like a device region
 * (a node of the dynamic tree, occurrences on tracks).
 *
 * Rules (the tests in tests/argus/test_shim.c hold them):
 *   - Events are taken in timestamp order, ties in recording order, so the
 *     result does not depend on how the recorder interleaved threads.
 *   - A thread's open ranges are kept in begin order. A push/pop range and
 *     a start/end range started on that thread both count; a pop closes the
 *     innermost open push range of its thread; an end closes the range of
 *     its ID wherever it was started (NVTX allows that). A range closed
 *     while a later-begun range of its thread is still open crosses it: it
 *     is flagged ARGUS_OCC_OVERLAP and the trace puts it on a sub-track.
 *   - A range's parent is the innermost open range of its thread at its
 *     begin; its region ID hashes its name under the parent's ID exactly as
 *     record.h does for device regions.
 *   - A kernel belongs to the innermost open range of its launching thread
 *     at the launch (its correlation ID joins the CUPTI record to the launch
 *     record). Kernels launched outside every range sit at the root; those
 *     whose correlation ID has no launch record sit under the root region
 *     "(launch not recorded)" with a diagnostic, never in a guessed range.
 *   - A range never closed is flagged ARGUS_OCC_NO_END and held open to its
 *     thread's last event: counted, not timed. A pop with no open push, an
 *     end of an ID never started: diagnostics.
 *   - Kernel times are CUPTI's GPU start/end (observed); range times are
 *     the host timestamps the recorder took with cuptiGetTimestamp, on the
 *     same clock.
 *   - Device regions of an armed launch (dnode/region lines, shim_arm.c)
 *     sit under their kernel's node, joined by the correlation ID, each
 *     warp on a track of its own (stream, CTA, warp); an occurrence is
 *     placed at the kernel's CUPTI start plus its offset from the kernel's
 *     first CTA start. A launch whose regions cannot be joined (no kernel
 *     record, or its armed line says they were not decoded) is a
 *     diagnostic, never regions placed at a guessed time.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/shim.h"
#include "argus_internal.h"

/* Ranges (and streams) of a thread and its state while building. */
typedef struct thread_state {
    uint64_t tid;
    uint32_t slot;
    size_t *open; /* occurrence indices, begin order */
    size_t nopen, capopen;
    uint64_t first_ts, last_ts;
} thread_state;

typedef struct range_ref { /* a start/end range ID and its occurrence */
    uint64_t id;
    size_t occ;
    uint32_t thread;
} range_ref;

typedef struct launch_ref { /* a launch's correlation ID and its range */
    uint64_t corr;
    int64_t occ; /* the innermost open range at the launch, -1 none */
    int used;
    long line;
    uint32_t slot;
} launch_ref;

typedef struct kernel_ref { /* the first kernel record of a correlation ID */
    uint64_t corr;
    uint32_t node, stream;
    uint64_t start;
} kernel_ref;

typedef struct dnode_ref { /* an armed launch's device node, mapped */
    uint64_t corr;
    uint32_t dnode, node;
} dnode_ref;

typedef struct builder {
    argus_shim_result *r;
    argus_trace *t;
    size_t occ_cap, node_cap, diag_cap, kind_cap;
    thread_state *th;
    size_t nth, capth;
    uint64_t *streams;
    size_t nstreams, capstreams;
    range_ref *ranges;
    size_t nranges, capranges;
    launch_ref *launches;
    size_t nlaunches, caplaunches;
    kernel_ref *krefs;
    size_t nkrefs, capkrefs;
    dnode_ref *drefs;
    size_t ndrefs, capdrefs;
    uint64_t *dslots; /* device tracks: stream << 29 | cta << 5 | warp */
    size_t ndslots, capdslots;
    size_t *dslot_hash; /* open addressing over dslots, index + 1 */
    size_t dslot_hcap;
    size_t sites_cap, freg_cap;
    struct kcorr { /* a kernel record's correlation ID and node */
        uint64_t corr;
        uint32_t node;
    } *kcorr;
    size_t nkcorr, capkcorr;
    struct kev { /* a kernel occurrence and the event it came from */
        size_t occ;
        const argus_shim_event *e;
    } *kev;
    size_t nkev, capkev;
} builder;

static int add_diag(builder *b, int kind, uint32_t slot, long line, uint32_t value, uint64_t count)
{
    argus_trace *t = b->t;
    if (t->ndiags >= ARGUS_MAX_DIAGS) {
        t->diags_dropped++;
        return 0;
    }
    if (argus__grow((void **)&t->diags, &b->diag_cap, t->ndiags + 1, sizeof(argus_diag)) != 0)
        return ARGUS_ENOMEM;
    argus_diag *d = &t->diags[t->ndiags++];
    d->kind = kind;
    d->slot = slot;
    d->index = line > 0 && line < (long)UINT32_MAX ? (uint32_t)line : 0;
    d->value = value;
    d->count = count;
    return 0;
}

/* The node of region `name` under node `parent` (-1: root), made when new;
 * the region is registered under the parent's region ID. */
static int node_for(builder *b, const char *name, int32_t parent, int kind, uint32_t *node,
                    char *msg, size_t msglen)
{
    argus_trace *t = b->t;
    uint32_t pid = parent >= 0 ? t->nodes[parent].region : 0;
    uint32_t id;
    int rc = argus_registry_add(b->r->reg, name, pid, 0, &id, msg, msglen);
    if (rc != 0)
        return rc;
    for (size_t k = 0; k < t->nnodes; k++)
        if (t->nodes[k].region == id && t->nodes[k].parent == parent) {
            *node = (uint32_t)k;
            return 0;
        }
    if (argus__grow((void **)&t->nodes, &b->node_cap, t->nnodes + 1, sizeof(argus_node)) != 0 ||
        argus__grow((void **)&b->r->node_kind, &b->kind_cap, t->nnodes + 1, sizeof(int)) != 0)
        return ARGUS_ENOMEM;
    t->nodes[t->nnodes].region = id;
    t->nodes[t->nnodes].parent = parent;
    b->r->node_kind[t->nnodes] = kind;
    *node = (uint32_t)t->nnodes++;
    return 0;
}

static int new_occ(builder *b, size_t *idx)
{
    argus_trace *t = b->t;
    if (argus__grow((void **)&t->occ, &b->occ_cap, t->nocc + 1, sizeof(argus_occurrence)) != 0)
        return ARGUS_ENOMEM;
    memset(&t->occ[t->nocc], 0, sizeof(argus_occurrence));
    t->occ[t->nocc].parent = -1;
    t->occ[t->nocc].iter = -1;
    *idx = t->nocc++;
    return 0;
}

static int thread_of(builder *b, uint64_t tid, uint64_t ts, thread_state **out)
{
    for (size_t i = 0; i < b->nth; i++)
        if (b->th[i].tid == tid) {
            *out = &b->th[i];
            return 0;
        }
    if (argus__grow((void **)&b->th, &b->capth, b->nth + 1, sizeof(thread_state)) != 0)
        return ARGUS_ENOMEM;
    thread_state *s = &b->th[b->nth];
    memset(s, 0, sizeof(*s));
    s->tid = tid;
    s->slot = (uint32_t)b->nth++;
    s->first_ts = s->last_ts = ts;
    *out = s;
    return 0;
}

static int cmp_event(const void *a, const void *b)
{
    const argus_shim_event *x = *(const argus_shim_event *const *)a;
    const argus_shim_event *y = *(const argus_shim_event *const *)b;
    uint64_t tx = x->kind == ARGUS_SHIM_KERNEL ? x->start : x->ts;
    uint64_t ty = y->kind == ARGUS_SHIM_KERNEL ? y->start : y->ts;
    if (tx != ty)
        return tx < ty ? -1 : 1;
    return (x > y) - (x < y); /* recording order: the events are one array */
}

/* Opens a range occurrence on thread s. */
static int open_range(builder *b, thread_state *s, const argus_shim_event *e, int kind,
                      size_t *idx, char *msg, size_t msglen)
{
    int32_t parent_node = -1;
    int32_t parent_occ = -1;
    if (s->nopen) {
        parent_occ = (int32_t)s->open[s->nopen - 1];
        parent_node = (int32_t)b->t->occ[parent_occ].node;
    }
    uint32_t node;
    int rc = node_for(b, e->name, parent_node, kind, &node, msg, msglen);
    if (rc != 0)
        return rc;
    if ((rc = new_occ(b, idx)) != 0)
        return rc;
    argus_occurrence *o = &b->t->occ[*idx];
    o->region = b->t->nodes[node].region;
    o->node = node;
    o->parent = parent_occ;
    o->slot = s->slot;
    o->cta = s->slot;
    o->depth = (uint32_t)s->nopen;
    o->clk_begin = e->ts;
    o->t_begin_ns = (double)e->ts;
    if (argus__grow((void **)&s->open, &s->capopen, s->nopen + 1, sizeof(size_t)) != 0)
        return ARGUS_ENOMEM;
    s->open[s->nopen++] = *idx;
    b->r->ranges++;
    return 0;
}

/* Closes the open entry at position pos of s->open at time ts. */
static void close_at(builder *b, thread_state *s, size_t pos, uint64_t ts)
{
    argus_occurrence *o = &b->t->occ[s->open[pos]];
    o->clk_end = ts;
    o->t_end_ns = (double)ts;
    if (pos + 1 < s->nopen)
        o->flags |= ARGUS_OCC_OVERLAP;
    memmove(&s->open[pos], &s->open[pos + 1], (s->nopen - pos - 1) * sizeof(size_t));
    s->nopen--;
}

static int host_event(builder *b, const argus_shim_event *e, char *msg, size_t msglen)
{
    thread_state *s;
    int rc = thread_of(b, e->tid, e->ts, &s);
    if (rc != 0)
        return rc;
    if (e->ts > s->last_ts)
        s->last_ts = e->ts;
    size_t idx;
    switch (e->kind) {
    case ARGUS_SHIM_PUSH:
        return open_range(b, s, e, ARGUS_SHIM_NODE_RANGE, &idx, msg, msglen);
    case ARGUS_SHIM_START:
        /* An ID started again while open (NVTX hands out unique IDs, so
         * only a damaged recording does this): an end closes the latest
         * start of its ID (the search runs backwards), and the older range
         * stays open, never ended, instead of being joined. */
        if ((rc = open_range(b, s, e, ARGUS_SHIM_NODE_STARTEND, &idx, msg, msglen)) != 0)
            return rc;
        if (argus__grow((void **)&b->ranges, &b->capranges, b->nranges + 1, sizeof(range_ref)) != 0)
            return ARGUS_ENOMEM;
        b->ranges[b->nranges++] = (range_ref){e->id, idx, (uint32_t)(s - b->th)};
        return 0;
    case ARGUS_SHIM_POP:
        for (size_t k = s->nopen; k-- > 0;)
            if (b->r->node_kind[b->t->occ[s->open[k]].node] == ARGUS_SHIM_NODE_RANGE) {
                close_at(b, s, k, e->ts);
                return 0;
            }
        return add_diag(b, ARGUS_DIAG_END_WITHOUT_BEGIN, s->slot, e->line, 0, 1);
    case ARGUS_SHIM_END:
        for (size_t i = b->nranges; i-- > 0;) {
            if (b->ranges[i].id != e->id)
                continue;
            thread_state *owner = &b->th[b->ranges[i].thread];
            for (size_t k = 0; k < owner->nopen; k++)
                if (owner->open[k] == b->ranges[i].occ) {
                    close_at(b, owner, k, e->ts);
                    b->ranges[i].id = UINT64_MAX;
                    return 0;
                }
        }
        return add_diag(b, ARGUS_DIAG_END_WITHOUT_BEGIN, s->slot, e->line, (uint32_t)e->id, 1);
    case ARGUS_SHIM_LAUNCH:
        if (argus__grow((void **)&b->launches, &b->caplaunches, b->nlaunches + 1,
                        sizeof(launch_ref)) != 0)
            return ARGUS_ENOMEM;
        b->launches[b->nlaunches++] = (launch_ref){
            e->id, s->nopen ? (int64_t)s->open[s->nopen - 1] : -1, 0, e->line, s->slot};
        return 0;
    default:
        return 0;
    }
}

static int cmp_launch(const void *a, const void *b)
{
    const launch_ref *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

static int kernel_event(builder *b, const argus_shim_event *e, char *msg, size_t msglen)
{
    launch_ref key = {.corr = e->id};
    launch_ref *l = b->nlaunches
                        ? bsearch(&key, b->launches, b->nlaunches, sizeof(launch_ref), cmp_launch)
                        : NULL;
    int32_t parent_node = -1;
    int rc;
    uint32_t node;
    if (l == NULL) {
        if ((rc = add_diag(b, ARGUS_DIAG_UNKNOWN_CORRELATION, 0, e->line, (uint32_t)e->id, 1)) != 0)
            return rc;
        if ((rc = node_for(b, ARGUS_SHIM_UNKNOWN_LAUNCH, -1, ARGUS_SHIM_NODE_UNKNOWN, &node, msg,
                           msglen)) != 0)
            return rc;
        parent_node = (int32_t)node;
        b->r->kernels_unknown++;
    } else {
        l->used = 1;
        if (l->occ >= 0) {
            parent_node = (int32_t)b->t->occ[l->occ].node;
            b->r->kernels_in_ranges++;
        } else {
            b->r->kernels_outside++;
        }
    }
    if ((rc = node_for(b, e->name, parent_node, ARGUS_SHIM_NODE_KERNEL, &node, msg, msglen)) != 0)
        return rc;
    /* The stream's track. */
    size_t si = 0;
    while (si < b->nstreams && b->streams[si] != e->stream)
        si++;
    if (si == b->nstreams) {
        if (argus__grow((void **)&b->streams, &b->capstreams, b->nstreams + 1, sizeof(uint64_t)) != 0)
            return ARGUS_ENOMEM;
        b->streams[b->nstreams++] = e->stream;
    }
    size_t idx;
    if ((rc = new_occ(b, &idx)) != 0)
        return rc;
    argus_occurrence *o = &b->t->occ[idx];
    o->region = b->t->nodes[node].region;
    o->node = node;
    o->slot = (uint32_t)si; /* renumbered after the threads once all are known */
    o->sm = 1;
    o->warp = 1;
    o->clk_begin = e->start;
    o->clk_end = e->end;
    o->t_begin_ns = (double)e->start;
    o->t_end_ns = (double)e->end;
    b->r->kernels++;
    if (argus__grow((void **)&b->kev, &b->capkev, b->nkev + 1, sizeof(b->kev[0])) != 0)
        return ARGUS_ENOMEM;
    b->kev[b->nkev++] = (struct kev){idx, e};
    /* A graph launch's kernels share one correlation ID; only a direct
     * launch is armed, so the first record is its kernel. */
    for (size_t i = 0; i < b->nkrefs; i++)
        if (b->krefs[i].corr == e->id)
            return 0;
    if (argus__grow((void **)&b->krefs, &b->capkrefs, b->nkrefs + 1, sizeof(kernel_ref)) != 0)
        return ARGUS_ENOMEM;
    b->krefs[b->nkrefs++] = (kernel_ref){e->id, node, (uint32_t)si, e->start};
    if (argus__grow((void **)&b->kcorr, &b->capkcorr, b->nkcorr + 1, sizeof(b->kcorr[0])) != 0)
        return ARGUS_ENOMEM;
    b->kcorr[b->nkcorr++] = (struct kcorr){e->id, node};
    return 0;
}

static int cmp_kref(const void *a, const void *b)
{
    const kernel_ref *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

static int cmp_dref(const void *a, const void *b)
{
    const dnode_ref *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return (x->dnode > y->dnode) - (x->dnode < y->dnode);
}

static const kernel_ref *kref_of(const builder *b, uint64_t corr)
{
    kernel_ref key = {.corr = corr};
    return b->nkrefs ? bsearch(&key, b->krefs, b->nkrefs, sizeof(kernel_ref), cmp_kref) : NULL;
}

/* The shim node of an armed launch's device node, or -1. drefs is sorted
 * by then when regions are placed; while dnodes are added it is searched
 * from the end (a launch's nodes come together, parents first). */
static int64_t dnode_of(const builder *b, uint64_t corr, uint32_t dnode, int sorted)
{
    if (sorted) {
        dnode_ref key = {corr, dnode, 0};
        const dnode_ref *d =
            b->ndrefs ? bsearch(&key, b->drefs, b->ndrefs, sizeof(dnode_ref), cmp_dref) : NULL;
        return d ? (int64_t)d->node : -1;
    }
    for (size_t i = b->ndrefs; i-- > 0;)
        if (b->drefs[i].corr == corr && b->drefs[i].dnode == dnode)
            return b->drefs[i].node;
    return -1;
}

static int cmp_dnode_event(const void *a, const void *b)
{
    const argus_shim_event *x = *(const argus_shim_event *const *)a;
    const argus_shim_event *y = *(const argus_shim_event *const *)b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return (x > y) - (x < y);
}

/* One diagnostic per launch whose device regions are not joined. */
static int regions_missing(builder *b, uint64_t corr, long line)
{
    for (size_t i = 0; i < b->t->ndiags; i++)
        if (b->t->diags[i].kind == ARGUS_DIAG_DEVICE_REGIONS_MISSING &&
            b->t->diags[i].value == (uint32_t)corr)
            return 0;
    b->r->armed_missing++;
    return add_diag(b, ARGUS_DIAG_DEVICE_REGIONS_MISSING, 0, line, (uint32_t)corr, 1);
}

static int dnode_event(builder *b, const argus_shim_event *e, char *msg, size_t msglen)
{
    const kernel_ref *k = kref_of(b, e->id);
    if (k == NULL)
        return regions_missing(b, e->id, e->line);
    int64_t parent = e->parent < 0 ? (int64_t)k->node : dnode_of(b, e->id, (uint32_t)e->parent, 0);
    if (parent < 0)
        return regions_missing(b, e->id, e->line);
    uint32_t node;
    int rc = node_for(b, e->name, (int32_t)parent, ARGUS_SHIM_NODE_DEVICE, &node, msg, msglen);
    if (rc != 0)
        return rc;
    if (argus__grow((void **)&b->drefs, &b->capdrefs, b->ndrefs + 1, sizeof(dnode_ref)) != 0)
        return ARGUS_ENOMEM;
    b->drefs[b->ndrefs++] = (dnode_ref){e->id, e->node, node};
    return 0;
}

/* The device track of (stream, cta, warp), made when new. */
static int dslot_of(builder *b, uint64_t key, uint32_t *slot)
{
    if ((b->ndslots + 1) * 2 > b->dslot_hcap) {
        size_t cap = b->dslot_hcap ? b->dslot_hcap * 2 : 1024;
        size_t *h = calloc(cap, sizeof(size_t));
        if (h == NULL)
            return ARGUS_ENOMEM;
        for (size_t i = 0; i < b->ndslots; i++) {
            size_t j = (size_t)(b->dslots[i] * 0x9E3779B97F4A7C15ull) & (cap - 1);
            while (h[j])
                j = (j + 1) & (cap - 1);
            h[j] = i + 1;
        }
        free(b->dslot_hash);
        b->dslot_hash = h;
        b->dslot_hcap = cap;
    }
    size_t j = (size_t)(key * 0x9E3779B97F4A7C15ull) & (b->dslot_hcap - 1);
    while (b->dslot_hash[j]) {
        if (b->dslots[b->dslot_hash[j] - 1] == key) {
            *slot = (uint32_t)(b->dslot_hash[j] - 1);
            return 0;
        }
        j = (j + 1) & (b->dslot_hcap - 1);
    }
    if (argus__grow((void **)&b->dslots, &b->capdslots, b->ndslots + 1, sizeof(uint64_t)) != 0)
        return ARGUS_ENOMEM;
    b->dslots[b->ndslots] = key;
    b->dslot_hash[j] = b->ndslots + 1;
    *slot = (uint32_t)b->ndslots++;
    return 0;
}

static int region_event(builder *b, const argus_shim_event *e)
{
    const kernel_ref *k = kref_of(b, e->id);
    int64_t node = k ? dnode_of(b, e->id, e->node, 1) : -1;
    if (node < 0)
        return regions_missing(b, e->id, e->line);
    uint32_t slot;
    uint64_t key = ((uint64_t)k->stream << 29) | ((uint64_t)e->cta << 5) | e->warp;
    size_t idx;
    int rc;
    if ((rc = dslot_of(b, key, &slot)) != 0 || (rc = new_occ(b, &idx)) != 0)
        return rc;
    argus_occurrence *o = &b->t->occ[idx];
    o->region = b->t->nodes[node].region;
    o->node = (uint32_t)node;
    o->slot = slot; /* renumbered after the streams */
    o->sm = 2;
    o->warp = 1;
    o->flags = e->flags;
    o->clk_begin = k->start + e->start;
    o->clk_end = k->start + e->end;
    o->t_begin_ns = (double)o->clk_begin;
    o->t_end_ns = (double)o->clk_end;
    b->r->device_regions++;
    return 0;
}

static int armed_event(builder *b, const argus_shim_event *e)
{
    if (e->state != ARGUS_SHIM_ARMED_DECODED)
        return regions_missing(b, e->id, e->line);
    if (kref_of(b, e->id) == NULL)
        return regions_missing(b, e->id, e->line);
    b->r->armed_decoded++;
    /* Records the rings overwrote: the regions that survived whole are
     * exact, the others are flagged partial in their region lines. */
    return e->lost ? add_diag(b, ARGUS_DIAG_WRAPPED, 0, e->line, (uint32_t)e->id, e->lost) : 0;
}

typedef struct track_key {
    uint32_t slot;
    uint64_t begin, end;
    size_t idx;
} track_key;

/* By slot, then begin, then the longer first (an enclosing occurrence
 * before what it encloses), then recording order. */
static int cmp_track_key(const void *a, const void *b)
{
    const track_key *x = a, *y = b;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Sub-tracks: an occurrence goes on the first track of its slot where it
 * nests with what is already there (every track must nest in a trace). */
static int assign_tracks(argus_trace *t)
{
    size_t n = t->nocc;
    track_key *order = malloc((n ? n : 1) * sizeof(track_key));
    if (order == NULL)
        return ARGUS_ENOMEM;
    for (size_t i = 0; i < n; i++)
        order[i] = (track_key){t->occ[i].slot, t->occ[i].clk_begin, t->occ[i].clk_end, i};
    qsort(order, n, sizeof(track_key), cmp_track_key);
    uint64_t stack[ARGUS_MAX_TRACKS][ARGUS_MAX_DEPTH];
    size_t depth[ARGUS_MAX_TRACKS];
    uint32_t cur = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        argus_occurrence *o = &t->occ[order[i].idx];
        if (o->slot != cur) {
            cur = o->slot;
            memset(depth, 0, sizeof(depth));
        }
        uint32_t k;
        for (k = 0; k < ARGUS_MAX_TRACKS - 1; k++) {
            while (depth[k] && stack[k][depth[k] - 1] <= o->clk_begin)
                depth[k]--;
            if ((depth[k] == 0 || o->clk_end <= stack[k][depth[k] - 1]) && depth[k] < ARGUS_MAX_DEPTH)
                break;
        }
        /* The last track takes whatever fits nowhere else (as the device
         * trace's does): it may then not nest, which the trace says by
         * its "(overlap)" name. */
        while (depth[k] && stack[k][depth[k] - 1] <= o->clk_begin)
            depth[k]--;
        o->track = k;
        if (depth[k] < ARGUS_MAX_DEPTH)
            stack[k][depth[k]++] = o->clk_end;
    }
    free(order);
    return 0;
}

static int name_dup(char **out, const char *fmt, unsigned long long v)
{
    char buf[64];
    int w = snprintf(buf, sizeof(buf), fmt, v);
    if (w < 0 || (size_t)w >= sizeof(buf))
        return ARGUS_EINVAL;
    *out = strdup(buf);
    return *out ? 0 : ARGUS_ENOMEM;
}

static int finish(builder *b)
{
    argus_trace *t = b->t;
    argus_shim_result *r = b->r;
    /* Ranges still open: held to their thread's last event, not timed. */
    for (size_t i = 0; i < b->nth; i++) {
        thread_state *s = &b->th[i];
        for (size_t k = 0; k < s->nopen; k++) {
            argus_occurrence *o = &t->occ[s->open[k]];
            o->flags |= ARGUS_OCC_NO_END;
            o->clk_end = s->last_ts > o->clk_begin ? s->last_ts : o->clk_begin;
            o->t_end_ns = (double)o->clk_end;
            int rc = add_diag(b, ARGUS_DIAG_NEVER_ENDED, s->slot, 0, o->region, 1);
            if (rc != 0)
                return rc;
        }
        s->nopen = 0;
    }
    for (size_t i = 0; i < b->nlaunches; i++)
        if (!b->launches[i].used) {
            r->launches_without_kernel++;
            int rc = add_diag(b, ARGUS_DIAG_NO_KERNEL, b->launches[i].slot, b->launches[i].line,
                              (uint32_t)b->launches[i].corr, 1);
            if (rc != 0)
                return rc;
        }
    if (r->in->dropped) {
        int rc = add_diag(b, ARGUS_DIAG_ACTIVITY_DROPPED, 0, 0, 0, r->in->dropped);
        if (rc != 0)
            return rc;
    }
    r->nthreads = (uint32_t)b->nth;
    r->nstreams = (uint32_t)b->nstreams;
    size_t nslots = b->nth + b->nstreams + b->ndslots;
    /* Kernel tracks follow the thread tracks, device warps the kernels. */
    for (size_t i = 0; i < t->nocc; i++)
        if (t->occ[i].sm == 1 || t->occ[i].sm == 2) {
            t->occ[i].slot += (uint32_t)(t->occ[i].sm == 1 ? b->nth : b->nth + b->nstreams);
            t->occ[i].cta = t->occ[i].slot;
        }
    size_t nsm = b->ndslots ? 3 : 2;
    t->warps = calloc(nslots ? nslots : 1, sizeof(argus_warp_info));
    r->track_names = calloc(nslots ? nslots : 1, sizeof(char *));
    t->sm_names = calloc(nsm, sizeof(char *));
    if (t->warps == NULL || r->track_names == NULL || t->sm_names == NULL)
        return ARGUS_ENOMEM;
    t->nwarps = nslots;
    t->slot_names = r->track_names;
    t->nsm_names = nsm;
    if ((t->sm_names[0] = strdup("host threads (NVTX ranges)")) == NULL ||
        (t->sm_names[1] = strdup("GPU (kernels by stream, CUPTI)")) == NULL ||
        (nsm == 3 && (t->sm_names[2] = strdup("GPU device regions (Argus markers, by stream, "
                                              "CTA and warp)")) == NULL))
        return ARGUS_ENOMEM;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < nslots; i++) {
        argus_warp_info *w = &t->warps[i];
        w->slot = w->cta = (uint32_t)i;
        w->sm = i < b->nth ? 0 : i < b->nth + b->nstreams ? 1 : 2;
        w->flags = ARGUS_WARP_EMPTY;
        int rc;
        if (i < b->nth) {
            rc = name_dup(&r->track_names[i], "thread %llu", (unsigned long long)b->th[i].tid);
        } else if (i < b->nth + b->nstreams) {
            rc = name_dup(&r->track_names[i], "stream %llu",
                          (unsigned long long)b->streams[i - b->nth]);
        } else {
            uint64_t key = b->dslots[i - b->nth - b->nstreams];
            char buf[96];
            int wr = snprintf(buf, sizeof(buf), "stream %llu CTA %llu warp %llu",
                              (unsigned long long)b->streams[key >> 29],
                              (unsigned long long)((key >> 5) & 0xFFFFFFu),
                              (unsigned long long)(key & 31u));
            rc = wr > 0 && (size_t)wr < sizeof(buf) && (r->track_names[i] = strdup(buf)) != NULL
                     ? 0
                     : ARGUS_ENOMEM;
        }
        if (rc != 0)
            return rc;
    }
    for (size_t i = 0; i < t->nocc; i++) {
        argus_occurrence *o = &t->occ[i];
        argus_warp_info *w = &t->warps[o->slot];
        if (w->flags & ARGUS_WARP_EMPTY) {
            w->flags = 0;
            w->clk_start = o->clk_begin;
            w->clk_end = o->clk_end;
        }
        if (o->clk_begin < w->clk_start)
            w->clk_start = o->clk_begin;
        if (o->clk_end > w->clk_end)
            w->clk_end = o->clk_end;
        w->gt_start = w->clk_start;
        w->gt_end = w->clk_end;
        if (o->clk_begin < lo)
            lo = o->clk_begin;
        if (o->clk_end > hi)
            hi = o->clk_end;
    }
    for (size_t i = 0; i < nslots; i++)
        if (!(t->warps[i].flags & ARGUS_WARP_EMPTY)) {
            t->warps_active++;
            t->warp_time_ns += (double)(t->warps[i].clk_end - t->warps[i].clk_start);
        }
    t->gt_min = lo == UINT64_MAX ? 0 : lo;
    t->gt_max = hi;
    t->hdr.nslots = (uint32_t)nslots;
    t->hdr.warps_per_cta = 1;
    t->hdr.grid[0] = (uint32_t)nslots;
    t->hdr.grid[1] = t->hdr.grid[2] = 1;
    t->hdr.block[0] = 32;
    t->hdr.block[1] = t->hdr.block[2] = 1;
    return assign_tracks(t);
}

/* ---- PC sampling: samples joined to kernels, device functions, lines ---- */

#define PCS_MAX_CUBIN (512L << 20)

static void pcs_note(argus_shim_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void pcs_note(argus_shim_result *r, const char *fmt, ...)
{
    char text[sizeof(r->pcs_notes[0])];
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(text, sizeof(text), fmt, ap) < 0)
        text[0] = '\0';
    va_end(ap);
    /* One note per problem, with the first recording line it was seen on:
     * the same PC outside every function in each launch is one note. */
    const char *body = strstr(text, ": ");
    for (size_t i = 0; body && i < r->npcs_notes; i++) {
        const char *b = strstr(r->pcs_notes[i], ": ");
        if (b && strcmp(b, body) == 0)
            return;
    }
    if (r->npcs_notes >= sizeof(r->pcs_notes) / sizeof(r->pcs_notes[0])) {
        r->pcs_notes_more++;
        return;
    }
    memcpy(r->pcs_notes[r->npcs_notes++], text, sizeof(text));
}

/* A module image saved by the recorder, read whole (argus_core has no
 * dependency on the project's file reader). */
static int read_image(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    size_t cap = 0, n = 0;
    uint8_t *buf = NULL;
    for (;;) {
        if (n == cap) {
            if (cap >= (size_t)PCS_MAX_CUBIN)
                break;
            size_t nc = cap ? cap * 2 : 65536;
            uint8_t *nb = realloc(buf, nc);
            if (nb == NULL)
                break;
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f) || !feof(f);
    fclose(f);
    if (bad) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

typedef struct pcs_module {
    uint64_t crc;
    argus_cubin cubin;
    int ok;
} pcs_module;

/* The kernel's name for a sample: its section's kernel in the cubin, else
 * CUPTI's function name ("$KERNEL$callee" gives KERNEL). */
static void kernel_name_of(const char *fn, const argus_cubin *c, const argus_cubin_pc *at, int located,
                           char *buf, size_t len)
{
    if (located && at->kernel >= 0) {
        snprintf(buf, len, "%s", c->fn[at->kernel].name);
        return;
    }
    const char *d = fn[0] == '$' ? strchr(fn + 1, '$') : NULL;
    if (d && (size_t)(d - fn - 1) < len)
        snprintf(buf, len, "%.*s", (int)(d - fn - 1), fn + 1);
    else
        snprintf(buf, len, "%s", fn);
}

static int32_t kernel_node(builder *b, const char *kname, uint64_t corr, int *by_corr, size_t *nmatch)
{
    argus_shim_result *r = b->r;
    const argus_trace *t = b->t;
    *by_corr = 0;
    *nmatch = 0;
    int32_t found = -1;
    if (corr != 0) {
        for (size_t i = 0; i < b->nkcorr; i++) {
            const char *nm = argus_registry_name(r->reg, t->nodes[b->kcorr[i].node].region);
            if (b->kcorr[i].corr == corr && nm && strcmp(nm, kname) == 0) {
                *by_corr = 1;
                *nmatch = 1;
                return (int32_t)b->kcorr[i].node;
            }
        }
    }
    for (size_t k = 0; k < t->nnodes; k++) {
        const char *nm = argus_registry_name(r->reg, t->nodes[k].region);
        if (r->node_kind[k] == ARGUS_SHIM_NODE_KERNEL && nm && strcmp(nm, kname) == 0) {
            (*nmatch)++;
            found = (int32_t)k;
        }
    }
    return *nmatch == 1 ? found : -1;
}

static int site_for(builder *b, int32_t node, const argus_shim_pc *pc, size_t nr, size_t *idx)
{
    argus_shim_result *r = b->r;
    for (size_t i = 0; i < r->nsites; i++) {
        argus_shim_site *s = &r->sites[i];
        if (s->node == node && s->crc == pc->crc && s->pc == pc->pc &&
            strcmp(s->function, pc->function) == 0) {
            *idx = i;
            return 0;
        }
    }
    if (argus__grow((void **)&r->sites, &b->sites_cap, r->nsites + 1, sizeof(argus_shim_site)) != 0)
        return ARGUS_ENOMEM;
    argus_shim_site *s = &r->sites[r->nsites];
    memset(s, 0, sizeof(*s));
    if ((s->stall = calloc(nr + 1, sizeof(uint64_t))) == NULL)
        return ARGUS_ENOMEM;
    s->node = node;
    s->fregion = -1;
    s->crc = pc->crc;
    s->function = pc->function;
    s->pc = pc->pc;
    s->offset = UINT64_MAX;
    *idx = r->nsites++;
    return 0;
}

/* The device-function regions of a kernel region: every function of the
 * kernel's section, made once per (node, module). */
static int fregions_for(builder *b, int32_t node, const argus_cubin *c, int32_t kfn, size_t *first)
{
    argus_shim_result *r = b->r;
    /* A node's functions are made together, so its first one starts them. */
    for (size_t i = 0; i < r->nfregions; i++)
        if (r->fregions[i].node == node) {
            *first = i;
            return 0;
        }
    *first = r->nfregions;
    for (size_t k = 0; k < c->nfn; k++) {
        if (c->fn[k].section != c->fn[kfn].section)
            continue;
        if (argus__grow((void **)&r->fregions, &b->freg_cap, r->nfregions + 1,
                        sizeof(argus_shim_fregion)) != 0)
            return ARGUS_ENOMEM;
        argus_shim_fregion *f = &r->fregions[r->nfregions];
        memset(f, 0, sizeof(*f));
        if ((f->name = strdup(c->fn[k].name)) == NULL)
            return ARGUS_ENOMEM;
        f->node = node;
        f->lo = c->fn[k].lo;
        f->hi = c->fn[k].hi;
        f->kernel_body = (int32_t)k == kfn;
        r->nfregions++;
    }
    return 0;
}

static int build_pcs(builder *b, char *msg, size_t msglen)
{
    (void)msg;
    (void)msglen;
    argus_shim_result *r = b->r;
    const argus_shim_pcs *ps = &r->in->pcs;
    argus_trace *t = b->t;
    if ((r->node_samples = calloc(t->nnodes ? t->nnodes : 1, sizeof(uint64_t))) == NULL)
        return ARGUS_ENOMEM;
    if (ps->npc == 0)
        return 0;
    size_t nr = ps->nreasons;
    pcs_module *mods = calloc(ps->nmodules ? ps->nmodules : 1, sizeof(pcs_module));
    if (mods == NULL)
        return ARGUS_ENOMEM;
    int rc = 0;
    for (size_t m = 0; m < ps->nmodules; m++) {
        uint8_t *img = NULL;
        size_t len = 0;
        char emsg[256] = "";
        mods[m].crc = ps->modules[m].crc;
        if (read_image(ps->modules[m].cubin, &img, &len) != 0) {
            pcs_note(r, "%s: the module image cannot be read: no device functions or cubin lines "
                        "for module %llu", ps->modules[m].cubin, (unsigned long long)mods[m].crc);
            continue;
        }
        int prc = argus_cubin_parse(img, len, ps->modules[m].cubin, &mods[m].cubin, emsg, sizeof(emsg));
        free(img);
        if (prc == ARGUS_ENOMEM) {
            rc = prc;
            goto out;
        }
        if (prc != 0)
            pcs_note(r, "%s (no device functions or cubin lines for this module)", emsg);
        mods[m].ok = prc == 0;
    }
    for (size_t i = 0; i < ps->npc; i++) {
        const argus_shim_pc *pc = &ps->pc[i];
        r->pcs_samples += pc->samples;
        const argus_cubin *c = NULL;
        for (size_t m = 0; m < ps->nmodules && c == NULL; m++)
            if (mods[m].ok && mods[m].crc == pc->crc)
                c = &mods[m].cubin;
        argus_cubin_pc at;
        char emsg[320] = "";
        int located = c && argus_cubin_locate(c, pc->function, pc->pc, &at, emsg, sizeof(emsg)) == 0;
        if (c && !located)
            pcs_note(r, "line %ld: %s", pc->line, emsg);
        char kname[4096];
        kernel_name_of(pc->function, c, &at, located, kname, sizeof(kname));
        int by_corr;
        size_t nmatch;
        int32_t node = kernel_node(b, kname, pc->corr, &by_corr, &nmatch);
        if (node < 0) {
            r->pcs_unattributed += pc->samples;
            if (nmatch > 1)
                pcs_note(r, "line %ld: %llu samples of %s not given to a region: the kernel ran in "
                            "%zu regions and continuous mode does not say which launch they came "
                            "from (use kernel-serialized mode)",
                         pc->line, (unsigned long long)pc->samples, kname, nmatch);
            else
                pcs_note(r, "line %ld: %llu samples of %s not given to a region: no kernel record "
                            "of that name%s",
                         pc->line, (unsigned long long)pc->samples, kname,
                         pc->corr ? " with that correlation ID" : "");
            continue;
        }
        size_t si;
        if ((rc = site_for(b, node, pc, nr, &si)) != 0)
            goto out;
        argus_shim_site *s = &r->sites[si];
        s->by_corr |= by_corr;
        s->samples += pc->samples;
        for (size_t k = 0; k < pc->nstall; k++) {
            const argus_shim_stall *st = &ps->stalls[pc->stall + k];
            size_t pos = nr;
            for (size_t q = 0; q < nr; q++)
                if (ps->reasons[q].index == st->reason)
                    pos = q;
            s->stall[pos] += st->samples;
        }
        if (located) {
            s->offset = at.offset;
            size_t first;
            if (at.kernel >= 0) {
                if ((rc = fregions_for(b, node, c, at.kernel, &first)) != 0)
                    goto out;
                for (size_t f = first; f < r->nfregions && r->fregions[f].node == node; f++)
                    if (strcmp(r->fregions[f].name, c->fn[at.func].name) == 0)
                        s->fregion = (int32_t)f;
                if (s->fregion >= 0)
                    r->fregions[s->fregion].samples += pc->samples;
            }
            if (at.file && s->line_from == ARGUS_SHIM_LINE_NONE) {
                if ((s->file = strdup(at.file)) == NULL) {
                    rc = ARGUS_ENOMEM;
                    goto out;
                }
                s->line = at.line;
                s->line_from = ARGUS_SHIM_LINE_CUBIN;
            }
        }
        /* CUPTI's own line for this PC, where the recorder asked for it. */
        for (size_t l = 0; l < ps->nlines; l++)
            if (ps->lines[l].crc == pc->crc && ps->lines[l].pc == pc->pc &&
                strcmp(ps->lines[l].function, pc->function) == 0) {
                free(s->file);
                if ((s->file = strdup(ps->lines[l].file)) == NULL) {
                    rc = ARGUS_ENOMEM;
                    goto out;
                }
                s->line = ps->lines[l].line;
                s->line_from = ARGUS_SHIM_LINE_CUPTI;
            }
        for (int32_t k = node; k >= 0; k = t->nodes[k].parent)
            r->node_samples[k] += pc->samples;
    }
out:
    for (size_t m = 0; m < ps->nmodules; m++)
        argus_cubin_free(&mods[m].cubin);
    free(mods);
    return rc;
}

int argus_shim_build(const argus_shim_input *in, argus_shim_result *out, char *msg, size_t msglen)
{
    if (in == NULL || out == NULL)
        return ARGUS_EINVAL;
    memset(out, 0, sizeof(*out));
    out->in = in;
    out->trace.clock_method = ARGUS_CLOCK_HOST;
    out->trace.cycles_per_ns = 1.0;
    builder b = {.r = out, .t = &out->trace};
    const argus_shim_event **ev = malloc((in->nev ? in->nev : 1) * sizeof(*ev));
    int rc = argus_registry_new(&out->reg);
    if (rc == 0 && ev == NULL)
        rc = ARGUS_ENOMEM;
    if (rc == 0) {
        for (size_t i = 0; i < in->nev; i++)
            ev[i] = &in->ev[i];
        qsort(ev, in->nev, sizeof(*ev), cmp_event);
        /* Host events first (all launches are known before any kernel is
         * placed: a kernel's record may carry an earlier GPU time than a
         * later launch's host time, never an earlier one than its own). */
        for (size_t i = 0; rc == 0 && i < in->nev; i++)
            if (ev[i]->kind < ARGUS_SHIM_KERNEL)
                rc = host_event(&b, ev[i], msg, msglen);
        if (rc == 0 && b.nlaunches)
            qsort(b.launches, b.nlaunches, sizeof(launch_ref), cmp_launch);
        for (size_t i = 0; rc == 0 && i < in->nev; i++)
            if (ev[i]->kind == ARGUS_SHIM_KERNEL)
                rc = kernel_event(&b, ev[i], msg, msglen);
        /* Device regions last, in recording order (a launch's nodes come
         * before its regions, parents before children). */
        if (rc == 0 && b.nkrefs)
            qsort(b.krefs, b.nkrefs, sizeof(kernel_ref), cmp_kref);
        size_t nd = 0;
        for (size_t i = 0; i < in->nev; i++)
            if (in->ev[i].kind == ARGUS_SHIM_DNODE)
                ev[nd++] = &in->ev[i];
        /* By launch and node: a parent's index is below its children's
         * (the reader checks), so parents are mapped first whatever the
         * order of the lines. */
        qsort(ev, nd, sizeof(*ev), cmp_dnode_event);
        for (size_t i = 0; rc == 0 && i < nd; i++)
            rc = dnode_event(&b, ev[i], msg, msglen);
        if (rc == 0 && b.ndrefs)
            qsort(b.drefs, b.ndrefs, sizeof(dnode_ref), cmp_dref);
        for (size_t i = 0; rc == 0 && i < in->nev; i++)
            if (in->ev[i].kind == ARGUS_SHIM_REGION)
                rc = region_event(&b, &in->ev[i]);
            else if (in->ev[i].kind == ARGUS_SHIM_ARMED)
                rc = armed_event(&b, &in->ev[i]);
        if (rc == 0)
            rc = finish(&b);
        if (rc == 0)
            rc = build_pcs(&b, msg, msglen);
        if (rc == 0 && (out->occ_event = calloc(out->trace.nocc ? out->trace.nocc : 1,
                                                sizeof(*out->occ_event))) == NULL)
            rc = ARGUS_ENOMEM;
        for (size_t i = 0; rc == 0 && i < b.nkev; i++)
            out->occ_event[b.kev[i].occ] = b.kev[i].e;
    }
    free(ev);
    for (size_t i = 0; i < b.nth; i++)
        free(b.th[i].open);
    free(b.th);
    free(b.streams);
    free(b.ranges);
    free(b.launches);
    free(b.krefs);
    free(b.drefs);
    free(b.dslots);
    free(b.dslot_hash);
    free(b.kcorr);
    free(b.kev);
    if (rc != 0) {
        argus_shim_result_free(out);
        if (rc == ARGUS_ENOMEM)
            return argus__fail(rc, msg, msglen, "argus-shim: out of memory building the regions");
        return rc;
    }
    return 0;
}

void argus_shim_result_free(argus_shim_result *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; r->track_names && i < r->trace.nwarps; i++)
        free(r->track_names[i]);
    free(r->track_names);
    for (size_t i = 0; r->trace.sm_names && i < r->trace.nsm_names; i++)
        free(r->trace.sm_names[i]);
    free(r->trace.sm_names);
    free(r->node_kind);
    for (size_t i = 0; i < r->nsites; i++) {
        free(r->sites[i].stall);
        free(r->sites[i].file);
    }
    free(r->sites);
    for (size_t i = 0; i < r->nfregions; i++)
        free(r->fregions[i].name);
    free(r->fregions);
    free(r->node_samples);
    free(r->occ_event);
    argus_registry_free(r->reg);
    argus_trace_free(&r->trace);
    memset(r, 0, sizeof(*r));
}

static const char *node_kind_word(int k)
{
    switch (k) {
    case ARGUS_SHIM_NODE_RANGE:
        return "nvtx range";
    case ARGUS_SHIM_NODE_STARTEND:
        return "nvtx start/end";
    case ARGUS_SHIM_NODE_KERNEL:
        return "kernel";
    case ARGUS_SHIM_NODE_DEVICE:
        return "device region";
    default:
        return "unplaced";
    }
}

/* ---- the text summary's PC sampling part -------------------------------- */

typedef struct text_hot {
    uint64_t samples;
    size_t idx;
} text_hot;

static int cmp_text_hot(const void *a, const void *b)
{
    const text_hot *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static double pct(uint64_t a, uint64_t b)
{
    return b ? 100.0 * (double)a / (double)b : 0.0;
}

static int text_kernel_pcs(const argus_shim_result *r, uint32_t node, const char *path, FILE *f)
{
    const argus_shim_pcs *ps = &r->in->pcs;
    text_hot *k = calloc(r->nsites ? r->nsites : 1, sizeof(text_hot));
    if (k == NULL)
        return ARGUS_ENOMEM;
    size_t n = 0;
    uint64_t total = 0;
    int by_corr = 1;
    for (size_t i = 0; i < r->nsites; i++)
        if (r->sites[i].node == (int32_t)node) {
            k[n++] = (text_hot){r->sites[i].samples, i};
            total += r->sites[i].samples;
            by_corr &= r->sites[i].by_corr;
        }
    qsort(k, n, sizeof(text_hot), cmp_text_hot);
    fprintf(f, "  %s: %llu samples (%s)\n", path, (unsigned long long)total,
            by_corr ? "observed: CUPTI tied them to this kernel's launches"
                    : "attributed by the kernel's name");
    fprintf(f, "    hot PCs: samples (share of the kernel's), source line, stall reasons as "
               "share of the PC's samples (count)\n");
    for (size_t j = 0; j < n && j < ARGUS_SHIM_HOT_TOP; j++) {
        const argus_shim_site *s = &r->sites[k[j].idx];
        char src[4200] = "(no line information)";
        if (s->file && snprintf(src, sizeof(src), "%s:%u", s->file, s->line) < 0)
            src[0] = '\0';
        fprintf(f, "      %s+0x%llx  %llu (%.1f%%)  %s ", s->function, (unsigned long long)s->pc,
                (unsigned long long)s->samples, pct(s->samples, total), src);
        /* The three main reasons (the JSON report has them all). */
        text_hot *rk = calloc(ps->nreasons + 1, sizeof(text_hot));
        if (rk == NULL) {
            free(k);
            return ARGUS_ENOMEM;
        }
        size_t m = 0;
        for (size_t q = 0; q <= ps->nreasons; q++)
            if (s->stall[q])
                rk[m++] = (text_hot){s->stall[q], q};
        qsort(rk, m, sizeof(text_hot), cmp_text_hot);
        for (size_t q = 0; q < m && q < 3; q++)
            fprintf(f, "%s%s %.1f%% (%llu)", q ? ", " : " ",
                    rk[q].idx < ps->nreasons ? ps->reasons[rk[q].idx].name
                                             : "(reason index not named by CUPTI)",
                    pct(rk[q].samples, s->samples), (unsigned long long)rk[q].samples);
        free(rk);
        fputc('\n', f);
    }
    int any_fn = 0;
    for (size_t i = 0; i < r->nfregions; i++) {
        const argus_shim_fregion *fr = &r->fregions[i];
        if (fr->node != (int32_t)node)
            continue;
        if (!any_fn++)
            fprintf(f, "    device functions (attributed by the cubin's symbols):\n");
        fprintf(f, "      %s%s [0x%llx, 0x%llx)  %llu (%.1f%%)\n", fr->name,
                fr->kernel_body ? " (kernel body)" : "", (unsigned long long)fr->lo,
                (unsigned long long)fr->hi, (unsigned long long)fr->samples,
                pct(fr->samples, total));
    }
    free(k);
    return 0;
}

static int text_pcs(const argus_shim_result *r, FILE *f)
{
    const argus_shim_input *in = r->in;
    const argus_shim_pcs *ps = &in->pcs;
    if (ps->state == ARGUS_SHIM_PCS_NOT_ASKED)
        return 0;
    if (ps->state == ARGUS_SHIM_PCS_UNAVAILABLE) {
        fprintf(f, "PC sampling: unavailable (see below); the kernels and ranges above are "
                   "complete without it\n");
        return 0;
    }
    fprintf(f, "PC sampling: %s mode, one active warp per SM sampled every 2^%u cycles; %llu "
               "samples recorded (CUPTI: %llu total, %llu dropped, %llu outside user kernels), "
               "%llu not given to a region\n",
            ps->mode, ps->period, (unsigned long long)r->pcs_samples,
            (unsigned long long)ps->total, (unsigned long long)ps->dropped,
            (unsigned long long)ps->non_user, (unsigned long long)r->pcs_unattributed);
    if (ps->buffer_full)
        fprintf(f, "WARNING: CUPTI's hardware buffer filled %llu times: samples were lost; raise "
                   "the period (--pc-period)\n",
                (unsigned long long)ps->buffer_full);
    const argus_trace *t = &r->trace;
    for (uint32_t k = 0; k < t->nnodes; k++) {
        if (r->node_samples[k] == 0)
            continue;
        char path[1024];
        if (argus_node_path(t, r->reg, k, path, sizeof(path)) != 0 &&
            snprintf(path, sizeof(path), "0x%07x", t->nodes[k].region) < 0)
            path[0] = '\0';
        if (r->node_kind[k] == ARGUS_SHIM_NODE_KERNEL) {
            int rc = text_kernel_pcs(r, k, path, f);
            if (rc != 0)
                return rc;
        } else {
            fprintf(f, "  %s: %llu samples of its kernels (attributed)\n", path,
                    (unsigned long long)r->node_samples[k]);
        }
    }
    for (size_t i = 0; i < r->npcs_notes; i++)
        fprintf(f, "PC sampling note: %s\n", r->pcs_notes[i]);
    if (r->pcs_notes_more)
        fprintf(f, "PC sampling note: %llu more not kept\n", (unsigned long long)r->pcs_notes_more);
    return 0;
}

int argus_shim_report_text(const argus_shim_result *r, const argus_scope *scope, FILE *f)
{
    if (r == NULL || f == NULL)
        return ARGUS_EINVAL;
    const argus_trace *t = &r->trace;
    const argus_shim_input *in = r->in;
    argus_region_stats *st;
    size_t n;
    int rc = argus_stats(t, scope, &st, &n);
    if (rc != 0)
        return rc;
    fprintf(f, "argus-shim report: %s\n", in && in->command[0] ? in->command : "(no command recorded)");
    fprintf(f, "%u host threads, %u streams; %llu NVTX ranges, %llu kernels (%llu in ranges, "
               "%llu outside any range, %llu with no launch record)\n",
            r->nthreads, r->nstreams, (unsigned long long)r->ranges, (unsigned long long)r->kernels,
            (unsigned long long)r->kernels_in_ranges, (unsigned long long)r->kernels_outside,
            (unsigned long long)r->kernels_unknown);
    fprintf(f, "span %.3f us (CUPTI timestamps, observed)\n", (double)(t->gt_max - t->gt_min) / 1e3);
    fprintf(f, "%-40s %-15s %8s %8s %12s %10s %10s %10s\n", "region", "kind", "count", "partial",
            "total_us", "mean_us", "p50_us", "p99_us");
    fprintf(f, "%-40s %-15s %8s %8s %12s %10s %10s %10s\n", "", "", "obs", "obs", "derived",
            "derived", "obs", "obs");
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        if (argus_node_path(t, r->reg, st[i].node, path, sizeof(path)) != 0 &&
            snprintf(path, sizeof(path), "0x%07x", st[i].region) < 0)
            path[0] = '\0';
        if (st[i].timed == 0) {
            /* Only partial occurrences: counted, with no time to show. */
            fprintf(f, "%-40s %-15s %8llu %8llu %12s %10s %10s %10s\n", path,
                    node_kind_word(r->node_kind[st[i].node]), (unsigned long long)st[i].count,
                    (unsigned long long)st[i].partial, "-", "-", "-", "-");
            continue;
        }
        fprintf(f, "%-40s %-15s %8llu %8llu %12.3f %10.3f %10.3f %10.3f\n", path,
                node_kind_word(r->node_kind[st[i].node]), (unsigned long long)st[i].count,
                (unsigned long long)st[i].partial, st[i].total_ns / 1e3, st[i].mean_ns / 1e3,
                st[i].p50_ns / 1e3, st[i].p99_ns / 1e3);
    }
    free(st);
    fprintf(f, "kernel times: CUPTI activity start/end (observed); a kernel's range: the innermost "
               "NVTX range open on its launching thread at the launch (attributed by correlation ID)\n");
    if (r->armed_decoded || r->armed_missing)
        fprintf(f, "device regions: %llu occurrences from %llu armed launches (SM cycles at the clock "
                   "from each launch's anchors, placed at the kernel's CUPTI start); %llu "
                   "instrumented launches without regions (diagnostics)\n",
                (unsigned long long)r->device_regions, (unsigned long long)r->armed_decoded,
                (unsigned long long)r->armed_missing);
    if (in && r->node_samples && (rc = text_pcs(r, f)) != 0)
        return rc;
    if (in && in->cupti != ARGUS_SHIM_CUPTI_OK)
        fprintf(f, "WARNING: kernels unavailable: %s\n",
                in->cupti_note[0] ? in->cupti_note : "CUPTI was not used");
    for (size_t i = 0; in && i < in->nunavailable; i++)
        fprintf(f, "unavailable: %s: %s\n", in->unavailable[i].what, in->unavailable[i].why);
    uint64_t per_kind[ARGUS_DIAG_COUNT] = {0};
    for (size_t i = 0; i < t->ndiags; i++)
        per_kind[t->diags[i].kind] += t->diags[i].count;
    for (int k = 0; k < ARGUS_DIAG_COUNT; k++)
        if (per_kind[k])
            fprintf(f, "diagnostic: %s: %llu\n", argus_diag_name(k), (unsigned long long)per_kind[k]);
    if (t->diags_dropped)
        fprintf(f, "diagnostic: %llu more not kept\n", (unsigned long long)t->diags_dropped);
    return ferror(f) ? ARGUS_EIO : 0;
}
