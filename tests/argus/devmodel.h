/*
 * A model of the device writer in include/argus/region.cuh, for tests: it
 * lays out a buffer as argus_launch_arm does and writes slot headers and
 * records as ARGUS_CTA_BEGIN, the markers and ARGUS_CTA_END do, with clocks
 * the test chooses. Keep it in step with region.cuh: tests/argus/
 * check_ptx.sh checks the device side, this model the host side.
 */
#ifndef ARGUS_DEVMODEL_H
#define ARGUS_DEVMODEL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/record.h"

typedef struct dm_buf {
    unsigned char *p;
    size_t len;
    uint32_t cap, nslots, wpc;
} dm_buf;

typedef struct dm_warp {
    dm_buf *b;
    uint32_t slot, n;
    uint64_t clk;  /* the SM clock now */
    uint64_t gt0;  /* globaltimer at start */
    uint64_t clk0; /* clock at start */
    double ghz;    /* the SM clock rate that relates them */
} dm_warp;

static inline int dm_init(dm_buf *b, uint32_t ctas, uint32_t threads, uint32_t cap)
{
    b->cap = cap;
    b->wpc = (threads + 31) / 32;
    b->nslots = ctas * b->wpc;
    b->len = ARGUS_HEADER_BYTES + (size_t)b->nslots * (ARGUS_SLOT_HEADER_BYTES + 8u * cap);
    b->p = calloc(1, b->len);
    if (b->p == NULL)
        return -1;
    argus_buf_header h = {.magic = ARGUS_BUF_MAGIC,
                          .version = ARGUS_FORMAT_VERSION,
                          .header_bytes = ARGUS_HEADER_BYTES,
                          .nslots = b->nslots,
                          .cap = cap,
                          .warps_per_cta = b->wpc,
                          .grid = {ctas, 1, 1},
                          .block = {threads, 1, 1}};
    memcpy(b->p, &h, sizeof(h));
    return 0;
}

static inline argus_slot_header *dm_slot(dm_buf *b, uint32_t slot)
{
    return (argus_slot_header *)(b->p + ARGUS_HEADER_BYTES +
                                 (size_t)slot * (ARGUS_SLOT_HEADER_BYTES + 8u * b->cap));
}

/* ARGUS_CTA_BEGIN for warp `warp` of CTA `cta` on SM `sm`. */
static inline void dm_begin(dm_warp *w, dm_buf *b, uint32_t cta, uint32_t warp, uint32_t sm,
                            uint64_t gt, uint64_t clk, double ghz)
{
    w->b = b;
    w->slot = cta * b->wpc + warp;
    w->n = 0;
    w->clk = w->clk0 = clk;
    w->gt0 = gt;
    w->ghz = ghz;
    argus_slot_header *h = dm_slot(b, w->slot);
    h->magic = ARGUS_SLOT_MAGIC;
    h->cta = cta;
    h->warp = warp;
    h->smid_start = sm;
    h->gt_start = gt;
    h->clk_start = clk;
}

/* A marker after `cycles` more cycles. */
static inline void dm_emit(dm_warp *w, uint32_t kind, uint32_t value, uint64_t cycles)
{
    w->clk += cycles;
    uint64_t *rec = (uint64_t *)((unsigned char *)dm_slot(w->b, w->slot) + ARGUS_SLOT_HEADER_BYTES);
    rec[w->n & (w->b->cap - 1)] = ARGUS_REC_MAKE(kind, value, (uint32_t)w->clk);
    w->n++;
}

/* ARGUS_CTA_END after `cycles` more cycles. */
static inline void dm_end(dm_warp *w, uint64_t cycles)
{
    w->clk += cycles;
    argus_slot_header *h = dm_slot(w->b, w->slot);
    h->clk_end = w->clk;
    h->gt_end = w->gt0 + (uint64_t)((double)(w->clk - w->clk0) / w->ghz + 0.5);
    h->smid_end = h->smid_start;
    h->n_written = w->n;
    h->ended = 1;
}

/* Writes the buffer to path and frees it: 0, or -1 when it cannot. */
static inline int dm_write(dm_buf *b, const char *path)
{
    FILE *f = fopen(path, "wb");
    int bad = f == NULL || fwrite(b->p, 1, b->len, f) != b->len;
    if (f != NULL && fclose(f) != 0)
        bad = 1;
    free(b->p);
    b->p = NULL;
    return bad ? -1 : 0;
}

#endif /* ARGUS_DEVMODEL_H */
