/*
 * Decoding a raw region buffer into occurrences per warp.
 *
 * The buffer comes from a GPU (or a file of its bytes) and is treated as
 * hostile: every size in its header is checked against the buffer's length
 * and Argus's limits before anything is allocated from it, and every word of
 * a ring is checked to be a record. What cannot be trusted is reported as a
 * diagnostic and kept out of the timing statistics, never dropped silently.
 *
 * Clocks: a record holds the low 32 bits of the SM clock. They are unwrapped
 * backwards from the warp's %clock64 at ARGUS_CTA_END (the PTX ISA defines
 * %clock as the low half of %clock64), which also works when the ring
 * wrapped and the oldest records are gone; a warp that never ended is
 * unwrapped forwards from its start anchor. Cycles become globaltimer
 * nanoseconds through the warp's own start anchor and one SM clock rate,
 * given or estimated from all warps' start/end anchors, because a single
 * short warp's anchors are too close together to measure a rate.
 */
#include <stdlib.h>
#include <string.h>

#include "argus_internal.h"

const char *argus_diag_name(int kind)
{
    static const char *const names[] = {
#define ARGUS_X_DIAG(name, what) what,
        ARGUS_DIAGS(ARGUS_X_DIAG)
#undef ARGUS_X_DIAG
    };
    if (kind < 0 || kind >= ARGUS_DIAG_COUNT)
        return "unknown diagnostic";
    return names[kind];
}

void argus_trace_free(argus_trace *t)
{
    if (t == NULL)
        return;
    free(t->warps);
    free(t->occ);
    free(t->nodes);
    free(t->diags);
    memset(t, 0, sizeof(*t));
}

/* Decoder state shared by the per-warp passes. */
typedef struct decoder {
    argus_trace *t;
    size_t occ_cap, node_cap, diag_cap;
    const argus_registry *reg;
    uint32_t *unknown; /* region IDs already reported unknown */
    size_t nunknown, unknown_cap;
    int32_t *open; /* open occurrence indices of the current warp */
    size_t open_cap;
    uint64_t *clk; /* unwrapped clocks of the current warp's records */
    size_t clk_cap;
    uint32_t *hash; /* node index + 1 by (region, parent); 0: empty */
    size_t hash_cap;
} decoder;

static int add_diag(decoder *d, int kind, uint32_t slot, uint32_t index,
                    uint32_t value, uint64_t count)
{
    argus_trace *t = d->t;
    if (t->ndiags >= ARGUS_MAX_DIAGS) {
        t->diags_dropped++;
        return 0;
    }
    if (argus__grow((void **)&t->diags, &d->diag_cap, t->ndiags + 1,
                    sizeof(*t->diags)) != 0)
        return ARGUS_ENOMEM;
    argus_diag *g = &t->diags[t->ndiags++];
    g->kind = kind;
    g->slot = slot;
    g->index = index;
    g->value = value;
    g->count = count;
    return 0;
}

/* The dynamic tree's nodes are found through an open-addressing hash of
 * (region, parent), so that a buffer with many distinct paths (a hostile
 * one can have millions) decodes in linear time. */
static size_t node_slot(uint32_t region, int32_t parent, size_t mask)
{
    uint64_t h = ((uint64_t)region << 32) ^ (uint32_t)parent;
    h *= 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & mask;
}

static int node_rehash(decoder *d, size_t cap)
{
    uint32_t *tab = calloc(cap, sizeof(*tab));
    if (tab == NULL)
        return ARGUS_ENOMEM;
    for (size_t i = 0; i < d->t->nnodes; i++) {
        size_t k = node_slot(d->t->nodes[i].region, d->t->nodes[i].parent, cap - 1);
        while (tab[k] != 0)
            k = (k + 1) & (cap - 1);
        tab[k] = (uint32_t)i + 1;
    }
    free(d->hash);
    d->hash = tab;
    d->hash_cap = cap;
    return 0;
}

static int node_of(decoder *d, uint32_t region, int32_t parent, uint32_t *out)
{
    argus_trace *t = d->t;
    if ((t->nnodes + 1) * 2 > d->hash_cap && node_rehash(d, d->hash_cap ? d->hash_cap * 2 : 64) != 0)
        return ARGUS_ENOMEM;
    size_t mask = d->hash_cap - 1, k = node_slot(region, parent, mask);
    for (; d->hash[k] != 0; k = (k + 1) & mask) {
        const argus_node *n = &t->nodes[d->hash[k] - 1];
        if (n->region == region && n->parent == parent) {
            *out = d->hash[k] - 1;
            return 0;
        }
    }
    if (argus__grow((void **)&t->nodes, &d->node_cap, t->nnodes + 1,
                    sizeof(*t->nodes)) != 0)
        return ARGUS_ENOMEM;
    t->nodes[t->nnodes].region = region;
    t->nodes[t->nnodes].parent = parent;
    d->hash[k] = (uint32_t)t->nnodes + 1;
    *out = (uint32_t)t->nnodes++;
    return 0;
}

static int check_known(decoder *d, uint32_t region, uint32_t slot, uint32_t index)
{
    if (d->reg == NULL || argus_registry_name(d->reg, region) != NULL)
        return 0;
    for (size_t i = 0; i < d->nunknown; i++)
        if (d->unknown[i] == region)
            return 0;
    if (argus__grow((void **)&d->unknown, &d->unknown_cap, d->nunknown + 1,
                    sizeof(*d->unknown)) != 0)
        return ARGUS_ENOMEM;
    d->unknown[d->nunknown++] = region;
    return add_diag(d, ARGUS_DIAG_UNKNOWN_REGION, slot, index, region, 1);
}

static int check_header(const void *buf, size_t len, argus_buf_header *h,
                        size_t *stride, char *msg, size_t msglen)
{
    if (buf == NULL || len < sizeof(*h))
        return argus__fail(ARGUS_ETRUNC, msg, msglen,
                           "region buffer: %zu bytes, shorter than its %zu-byte "
                           "header; it is not a whole Argus buffer",
                           len, sizeof(*h));
    memcpy(h, buf, sizeof(*h));
    if (h->magic != ARGUS_BUF_MAGIC)
        return argus__fail(ARGUS_EFORMAT, msg, msglen,
                           "region buffer: magic is 0x%08x, not 0x%08x (\"ARGB\"); "
                           "this is not a buffer from argus_launch_collect",
                           h->magic, ARGUS_BUF_MAGIC);
    if (h->version != ARGUS_FORMAT_VERSION || h->header_bytes != ARGUS_HEADER_BYTES)
        return argus__fail(ARGUS_EFORMAT, msg, msglen,
                           "region buffer: format version %u (header %u bytes), "
                           "this decoder reads version %u (%u bytes); decode it "
                           "with the Argus that recorded it",
                           h->version, h->header_bytes, ARGUS_FORMAT_VERSION,
                           ARGUS_HEADER_BYTES);
    if (h->cap == 0 || h->cap > ARGUS_MAX_CAP || (h->cap & (h->cap - 1)) != 0)
        return argus__fail(ARGUS_ELIMIT, msg, msglen,
                           "region buffer: cap (records per warp) is %u; it must "
                           "be a power of two from 1 to %u",
                           h->cap, ARGUS_MAX_CAP);
    if (h->nslots == 0 || h->nslots > ARGUS_MAX_SLOTS || h->warps_per_cta == 0 ||
        h->warps_per_cta > 32)
        return argus__fail(ARGUS_ELIMIT, msg, msglen,
                           "region buffer: nslots %u / warps_per_cta %u out of "
                           "range (1..%u slots, 1..32 warps per CTA)",
                           h->nslots, h->warps_per_cta, ARGUS_MAX_SLOTS);
    /* Multiplied step by step under the slot limit, so that a hostile grid
     * cannot overflow into a product that matches nslots. */
    uint64_t ctas = 1, threads = 1;
    for (int i = 0; i < 3; i++) {
        if (h->grid[i] > ARGUS_MAX_SLOTS || h->block[i] > 1024)
            ctas = 0;
        ctas = ctas > ARGUS_MAX_SLOTS ? 0 : ctas * h->grid[i];
        threads = threads > 1024 ? 0 : threads * h->block[i];
    }
    if (ctas * h->warps_per_cta != h->nslots || threads > 1024 ||
        (threads + 31) / 32 != h->warps_per_cta)
        return argus__fail(ARGUS_EFORMAT, msg, msglen,
                           "region buffer: grid %ux%ux%u and block %ux%ux%u do not "
                           "give nslots %u with %u warps per CTA; the header is "
                           "corrupt",
                           h->grid[0], h->grid[1], h->grid[2], h->block[0],
                           h->block[1], h->block[2], h->nslots, h->warps_per_cta);
    *stride = ARGUS_SLOT_HEADER_BYTES + (size_t)h->cap * 8u;
    uint64_t need = ARGUS_HEADER_BYTES + (uint64_t)h->nslots * (uint64_t)*stride;
    if (need > len)
        return argus__fail(ARGUS_ETRUNC, msg, msglen,
                           "region buffer: %zu bytes, its header (%u slots of %u "
                           "records) needs %llu; the copy or file was cut short",
                           len, h->nslots, h->cap, (unsigned long long)need);
    return 0;
}

/* Unwraps the surviving records' 32-bit clocks into d->clk. A hostile
 * anchor near 0 or 2^64 would make the unwrapped clock wrap around; it is
 * held at the limit instead, so that clocks stay monotonic, and *bad is set
 * for a CLOCK diagnostic. */
static int unwrap_clocks(decoder *d, const uint64_t *ring, uint32_t mask,
                         uint32_t start, uint32_t n, const argus_warp_info *w,
                         int ended, int *bad)
{
    if (argus__grow((void **)&d->clk, &d->clk_cap, n ? n : 1, sizeof(*d->clk)) != 0)
        return ARGUS_ENOMEM;
    *bad = 0;
    if (ended) {
        uint64_t next = w->clk_end;
        for (uint32_t k = n; k-- > 0;) {
            uint32_t lo = ARGUS_REC_CLOCK(ring[(start + k) & mask]);
            uint32_t back = (uint32_t)next - lo;
            if (back > next) {
                *bad = 1;
                back = (uint32_t)next;
            }
            next -= back;
            d->clk[k] = next;
        }
    } else {
        uint64_t prev = w->clk_start;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t lo = ARGUS_REC_CLOCK(ring[(start + k) & mask]);
            uint32_t ahead = lo - (uint32_t)prev;
            if (ahead > UINT64_MAX - prev) {
                *bad = 1;
                ahead = (uint32_t)(UINT64_MAX - prev);
            }
            prev += ahead;
            d->clk[k] = prev;
        }
    }
    return 0;
}

static int new_occ(decoder *d, int32_t *index)
{
    argus_trace *t = d->t;
    if (argus__grow((void **)&t->occ, &d->occ_cap, t->nocc + 1, sizeof(*t->occ)) != 0)
        return ARGUS_ENOMEM;
    memset(&t->occ[t->nocc], 0, sizeof(t->occ[0]));
    *index = (int32_t)t->nocc++;
    return 0;
}

/* A wrapped ring starts in the middle of regions whose begins were
 * overwritten. Their ends come later, innermost first, as ends without a
 * begin; a first pass finds them, and they are opened (flagged NO_BEGIN)
 * outermost first before decoding, so that the regions that survived whole
 * keep their real parents ("outer/load", not "load"). */
static int open_lost(decoder *d, const argus_warp_info *w, const uint64_t *ring, uint32_t mask,
                     uint32_t start, uint32_t n, uint64_t first_clk, size_t *nopen)
{
    argus_trace *t = d->t;
    uint32_t *stack = malloc((n ? n : 1) * sizeof(uint32_t));
    uint32_t *lost = malloc((n ? n : 1) * sizeof(uint32_t));
    size_t depth = 0, nlost = 0;
    int rc = ARGUS_ENOMEM;
    if (stack == NULL || lost == NULL)
        goto out;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t rec = ring[(start + k) & mask];
        uint32_t kind = ARGUS_REC_KIND(rec), value = ARGUS_REC_VALUE(rec);
        if (kind == ARGUS_REC_BEGIN) {
            if (depth < ARGUS_MAX_DEPTH) /* as the main pass: deeper begins are dropped */
                stack[depth++] = value;
        } else if (kind == ARGUS_REC_END && nlost < ARGUS_MAX_DEPTH) {
            size_t p = depth;
            while (p > 0 && stack[p - 1] != value)
                p--;
            if (p > 0) {
                memmove(&stack[p - 1], &stack[p], (depth - p) * sizeof(*stack));
                depth--;
            } else {
                lost[nlost++] = value;
            }
        }
    }
    for (size_t j = nlost; j-- > 0;) {
        int32_t oi;
        if ((rc = new_occ(d, &oi)) != 0)
            goto out;
        argus_occurrence *o = &t->occ[oi];
        o->region = lost[j];
        o->parent = *nopen ? d->open[*nopen - 1] : -1;
        int32_t pnode = o->parent >= 0 ? (int32_t)t->occ[o->parent].node : -1;
        if ((rc = node_of(d, lost[j], pnode, &o->node)) != 0)
            goto out;
        o->slot = w->slot;
        o->cta = w->cta;
        o->warp = w->warp;
        o->sm = w->sm;
        o->depth = (uint32_t)*nopen;
        o->iter = -1;
        o->flags = ARGUS_OCC_NO_BEGIN;
        o->clk_begin = first_clk;
        if ((rc = argus__grow((void **)&d->open, &d->open_cap, *nopen + 1, sizeof(*d->open))) != 0)
            goto out;
        d->open[(*nopen)++] = oi;
    }
    rc = 0;
out:
    free(stack);
    free(lost);
    return rc;
}

static int decode_warp(decoder *d, const argus_warp_info *w, const uint64_t *ring,
                       uint32_t cap, int ended, uint32_t n_avail)
{
    argus_trace *t = d->t;
    uint32_t mask = cap - 1;
    uint32_t n = n_avail;
    uint32_t start = w->n_lost ? (w->n_written & mask) : 0;
    int wrapped = w->n_lost > 0;
    int bad_clock;
    int rc = unwrap_clocks(d, ring, mask, start, n, w, ended, &bad_clock);
    if (rc != 0)
        return rc;
    if (bad_clock && (rc = add_diag(d, ARGUS_DIAG_CLOCK, w->slot, 0, 0, 1)) != 0)
        return rc;
    size_t nopen = 0;
    uint32_t role = 0;
    int64_t iter = -1;
    uint64_t first_clk = n ? d->clk[0] : w->clk_start;
    if (wrapped && (rc = open_lost(d, w, ring, mask, start, n, first_clk, &nopen)) != 0)
        return rc;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t rec = ring[(start + k) & mask];
        uint32_t kind = ARGUS_REC_KIND(rec), value = ARGUS_REC_VALUE(rec);
        int32_t oi;
        switch (kind) {
        case ARGUS_REC_BEGIN: {
            if (nopen >= ARGUS_MAX_DEPTH) {
                /* Deeper than any real kernel nests: a damaged buffer. The
                 * limit also bounds the search of each end below. */
                if ((rc = add_diag(d, ARGUS_DIAG_TOO_DEEP, w->slot, k, value, 1)) != 0)
                    return rc;
                break;
            }
            if ((rc = check_known(d, value, w->slot, k)) != 0 || (rc = new_occ(d, &oi)) != 0)
                return rc;
            argus_occurrence *o = &t->occ[oi];
            o->region = value;
            o->parent = nopen ? d->open[nopen - 1] : -1;
            int32_t pnode = o->parent >= 0 ? (int32_t)t->occ[o->parent].node : -1;
            if ((rc = node_of(d, value, pnode, &o->node)) != 0)
                return rc;
            o = &t->occ[oi];
            o->slot = w->slot;
            o->cta = w->cta;
            o->warp = w->warp;
            o->sm = w->sm;
            o->depth = (uint32_t)nopen;
            o->role = role;
            o->iter = iter;
            o->clk_begin = d->clk[k];
            if (argus__grow((void **)&d->open, &d->open_cap, nopen + 1, sizeof(*d->open)) != 0)
                return ARGUS_ENOMEM;
            d->open[nopen++] = oi;
            break;
        }
        case ARGUS_REC_END: {
            size_t p = nopen;
            while (p > 0 && t->occ[d->open[p - 1]].region != value)
                p--;
            if (p > 0) {
                argus_occurrence *o = &t->occ[d->open[p - 1]];
                o->clk_end = d->clk[k];
                if (p != nopen)
                    o->flags |= ARGUS_OCC_OVERLAP;
                memmove(&d->open[p - 1], &d->open[p], (nopen - p) * sizeof(*d->open));
                nopen--;
            } else if (wrapped) {
                /* Not opened by open_lost (it cannot happen with well-formed
                 * records; kept for damaged ones): keep the part that
                 * survived, flagged, so that the lost time is visible but
                 * not timed. */
                if ((rc = new_occ(d, &oi)) != 0)
                    return rc;
                argus_occurrence *o = &t->occ[oi];
                o->region = value;
                o->parent = -1;
                if ((rc = node_of(d, value, -1, &o->node)) != 0)
                    return rc;
                o = &t->occ[oi];
                o->slot = w->slot;
                o->cta = w->cta;
                o->warp = w->warp;
                o->sm = w->sm;
                o->role = role;
                o->iter = iter;
                o->flags = ARGUS_OCC_NO_BEGIN;
                o->clk_begin = first_clk;
                o->clk_end = d->clk[k];
            } else if ((rc = add_diag(d, ARGUS_DIAG_END_WITHOUT_BEGIN, w->slot, k, value, 1)) != 0) {
                return rc;
            }
            break;
        }
        case ARGUS_REC_ITER:
            iter = value;
            break;
        case ARGUS_REC_ROLE:
            role = value;
            break;
        default:
            if ((rc = add_diag(d, ARGUS_DIAG_BAD_RECORD, w->slot, k, kind, 1)) != 0)
                return rc;
            break;
        }
    }
    uint64_t last = ended ? w->clk_end : (n ? d->clk[n - 1] : w->clk_start);
    for (size_t p = 0; p < nopen; p++) {
        argus_occurrence *o = &t->occ[d->open[p]];
        o->flags |= ARGUS_OCC_NO_END;
        o->clk_end = last;
        if ((rc = add_diag(d, ARGUS_DIAG_NEVER_ENDED, w->slot, n, o->region, 1)) != 0)
            return rc;
    }
    return 0;
}

/* Sub-tracks: each occurrence goes on the lowest track where it nests
 * properly inside (or after) what is already open there, so that a trace
 * viewer that requires nesting per track shows overlapping regions apart. */
static int assign_tracks(argus_trace *t, size_t first, size_t last)
{
    uint64_t *stack[ARGUS_MAX_TRACKS] = {0};
    size_t depth[ARGUS_MAX_TRACKS] = {0};
    size_t n = last - first;
    int rc = 0;
    for (size_t i = first; i < last; i++) {
        argus_occurrence *o = &t->occ[i];
        uint32_t tr;
        for (tr = 0; tr < ARGUS_MAX_TRACKS; tr++) {
            if (stack[tr] == NULL && (stack[tr] = malloc((n ? n : 1) * sizeof(uint64_t))) == NULL) {
                rc = ARGUS_ENOMEM;
                goto out;
            }
            while (depth[tr] > 0 && stack[tr][depth[tr] - 1] <= o->clk_begin)
                depth[tr]--;
            if (depth[tr] == 0 || stack[tr][depth[tr] - 1] >= o->clk_end)
                break;
        }
        if (tr == ARGUS_MAX_TRACKS)
            tr = ARGUS_MAX_TRACKS - 1; /* more crossing regions: share the last */
        o->track = tr;
        if (depth[tr] < n)
            stack[tr][depth[tr]++] = o->clk_end;
    }
out:
    for (unsigned k = 0; k < ARGUS_MAX_TRACKS; k++)
        free(stack[k]);
    return rc;
}

static void convert_times(argus_trace *t)
{
    double cyc = 0, ns = 0;
    for (size_t i = 0; i < t->nwarps; i++) {
        const argus_warp_info *w = &t->warps[i];
        if (w->flags & (ARGUS_WARP_EMPTY | ARGUS_WARP_NOT_ENDED))
            continue;
        if (w->clk_end > w->clk_start && w->gt_end > w->gt_start) {
            cyc += (double)(w->clk_end - w->clk_start);
            ns += (double)(w->gt_end - w->gt_start);
        }
    }
    if (t->clock_method != ARGUS_CLOCK_GIVEN) {
        if (ns > 0) {
            t->cycles_per_ns = cyc / ns;
            t->clock_method = ARGUS_CLOCK_ANCHORS;
        } else {
            t->cycles_per_ns = 1.0;
            t->clock_method = ARGUS_CLOCK_NONE;
        }
    }
    for (size_t i = 0; i < t->nocc; i++) {
        argus_occurrence *o = &t->occ[i];
        const argus_warp_info *w = &t->warps[o->slot];
        double base = t->clock_method == ARGUS_CLOCK_NONE ? 0.0 : (double)w->gt_start;
        /* The clock differences in integers first (clock64 values pass
         * 2^53); the absolute result is only as fine as a double at the
         * globaltimer's magnitude, so durations come from argus__occ_time. */
        o->t_begin_ns = base + (double)(int64_t)(o->clk_begin - w->clk_start) / t->cycles_per_ns;
        o->t_end_ns = base + (double)(int64_t)(o->clk_end - w->clk_start) / t->cycles_per_ns;
    }
}

int argus_decode(const void *buf, size_t len, const argus_decode_opts *opts,
                 argus_trace *out, char *msg, size_t msglen)
{
    if (out == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "argus_decode: out is NULL");
    memset(out, 0, sizeof(*out));
    size_t stride = 0;
    argus_buf_header h;
    int rc = check_header(buf, len, &h, &stride, msg, msglen);
    if (rc != 0)
        return rc;
    decoder d = {.t = out, .reg = opts ? opts->reg : NULL};
    out->hdr = h;
    out->warps = calloc(h.nslots, sizeof(*out->warps));
    if (out->warps == NULL)
        return argus__fail(ARGUS_ENOMEM, msg, msglen,
                           "region buffer: no memory for %u warps", h.nslots);
    out->nwarps = h.nslots;
    out->clock_method = ARGUS_CLOCK_NONE;
    if (opts != NULL && opts->cycles_per_ns > 0) {
        out->cycles_per_ns = opts->cycles_per_ns;
        out->clock_method = ARGUS_CLOCK_GIVEN;
    }
    out->gt_min = UINT64_MAX;
    uint64_t *ring = malloc((size_t)h.cap * sizeof(uint64_t));
    if (ring == NULL) {
        rc = ARGUS_ENOMEM;
        goto fail;
    }
    for (uint32_t s = 0; s < h.nslots; s++) {
        const unsigned char *base = (const unsigned char *)buf + ARGUS_HEADER_BYTES + (size_t)s * stride;
        argus_slot_header sh;
        memcpy(&sh, base, sizeof(sh));
        argus_warp_info *w = &out->warps[s];
        w->slot = s;
        w->cta = s / h.warps_per_cta;
        w->warp = s % h.warps_per_cta;
        if (sh.magic == 0) {
            w->flags = ARGUS_WARP_EMPTY;
            continue;
        }
        if (sh.magic != ARGUS_SLOT_MAGIC || sh.cta != w->cta || sh.warp != w->warp) {
            w->flags = ARGUS_WARP_EMPTY;
            if ((rc = add_diag(&d, ARGUS_DIAG_SLOT_MISMATCH, s, 0, sh.magic, 1)) != 0)
                goto fail;
            continue;
        }
        out->warps_active++;
        w->sm = sh.smid_start;
        w->gt_start = sh.gt_start;
        w->gt_end = sh.gt_end;
        w->clk_start = sh.clk_start;
        w->clk_end = sh.clk_end;
        memcpy(ring, base + ARGUS_SLOT_HEADER_BYTES, (size_t)h.cap * sizeof(uint64_t));
        int ended = sh.ended == 1;
        uint32_t avail;
        if (ended) {
            w->n_written = sh.n_written;
            avail = sh.n_written > h.cap ? h.cap : sh.n_written;
            w->n_lost = sh.n_written - avail;
            if (sh.clk_end < sh.clk_start || sh.gt_end < sh.gt_start || sh.smid_end != sh.smid_start) {
                if ((rc = add_diag(&d, ARGUS_DIAG_CLOCK, s, 0, sh.smid_end, 1)) != 0)
                    goto fail;
                ended = 0;
                w->flags |= ARGUS_WARP_NOT_ENDED;
            }
        } else {
            /* The count is written at the end: without it, the records are
             * the leading words that are records at all. */
            avail = 0;
            while (avail < h.cap && ring[avail] != 0)
                avail++;
            w->n_written = avail;
            w->flags |= ARGUS_WARP_NOT_ENDED;
            if ((rc = add_diag(&d, ARGUS_DIAG_WARP_NOT_ENDED, s, 0, 0, 1)) != 0)
                goto fail;
        }
        if (w->n_lost) {
            w->flags |= ARGUS_WARP_WRAPPED;
            out->records_lost += w->n_lost;
            if ((rc = add_diag(&d, ARGUS_DIAG_WRAPPED, s, 0, 0, w->n_lost)) != 0)
                goto fail;
        }
        if (!(w->flags & ARGUS_WARP_NOT_ENDED)) {
            if (w->gt_start < out->gt_min)
                out->gt_min = w->gt_start;
            if (w->gt_end > out->gt_max)
                out->gt_max = w->gt_end;
            out->warp_time_ns += (double)(w->gt_end - w->gt_start);
        }
        size_t first = out->nocc;
        if ((rc = decode_warp(&d, w, ring, h.cap, ended, avail)) != 0)
            goto fail;
        if ((rc = assign_tracks(out, first, out->nocc)) != 0)
            goto fail;
    }
    if (out->gt_min == UINT64_MAX)
        out->gt_min = 0;
    convert_times(out);
    free(ring);
    free(d.unknown);
    free(d.open);
    free(d.clk);
    free(d.hash);
    return 0;
fail:
    free(ring);
    free(d.unknown);
    free(d.open);
    free(d.clk);
    free(d.hash);
    argus_trace_free(out);
    return argus__fail(rc, msg, msglen, "region buffer: decoding failed: %s",
                       argus_strerror(rc));
}
