/*
 * The decoder against buffers written by the device model (devmodel.h):
 * exact intervals, nesting, overlap, scopes, wraps, clock conversion and
 * hostile buffers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "argus/argus.h"
#include "devmodel.h"

#define B ARGUS_REC_BEGIN
#define E ARGUS_REC_END

static uint32_t id_outer, id_load, id_compute;

static int setup_ids(void **state)
{
    (void)state;
    id_outer = argus_region_id("outer", 0);
    id_load = argus_region_id("load", id_outer);
    id_compute = argus_region_id("compute", id_outer);
    return 0;
}

static argus_trace decode_ok(dm_buf *b, double ghz, const argus_registry *reg)
{
    argus_trace t;
    char msg[256] = "";
    argus_decode_opts o = {.cycles_per_ns = ghz, .reg = reg};
    int rc = argus_decode(b->p, b->len, &o, &t, msg, sizeof(msg));
    if (rc != 0)
        fprintf(stderr, "decode: %s\n", msg);
    assert_int_equal(rc, 0);
    return t;
}

/* The same IDs as the static_asserts in region.cuh: the device and host
 * hashes agree. */
static void test_region_id_known_answers(void **state)
{
    (void)state;
    uint32_t m = argus_region_id("mainloop", 0);
    assert_int_equal(m, 0xcb827cf);
    assert_int_equal(argus_region_id("load", m), 0xe693e43);
    assert_int_not_equal(argus_region_id("load", 0), argus_region_id("load", m));
    assert_true(argus_region_id("x", 0) <= ARGUS_VALUE_MASK);
}

static void test_nesting_exact(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 1, 64, 16), 0);
    for (uint32_t wi = 0; wi < 2; wi++) {
        dm_warp w;
        dm_begin(&w, &b, 0, wi, 3, 10000, 1000000 + wi * 7, 2.0);
        dm_emit(&w, B, id_outer, 10);
        dm_emit(&w, B, id_load, 20);
        dm_emit(&w, E, id_load, 100 + wi * 50);
        dm_emit(&w, B, id_compute, 4);
        dm_emit(&w, E, id_compute, 200);
        dm_emit(&w, E, id_outer, 6);
        dm_end(&w, 10);
    }
    argus_trace t = decode_ok(&b, 2.0, NULL);
    assert_int_equal(t.nocc, 6);
    assert_int_equal(t.nnodes, 3);
    assert_int_equal(t.ndiags, 0);
    assert_int_equal(t.warps_active, 2);
    const argus_occurrence *o = t.occ;
    assert_int_equal(o[0].region, id_outer);
    assert_int_equal(o[0].parent, -1);
    assert_int_equal(o[1].region, id_load);
    assert_int_equal(o[1].parent, 0);
    assert_int_equal(o[1].depth, 1);
    assert_int_equal(o[2].parent, 0);
    assert_int_equal(o[3].parent, -1);
    assert_int_equal(o[4].parent, 3); /* warp 1's load inside warp 1's outer */
    assert_int_equal(o[1].node, o[4].node);
    assert_int_equal(o[0].clk_begin, 1000010);
    assert_int_equal(o[0].clk_end, 1000010 + 20 + 100 + 4 + 200 + 6);
    assert_int_equal(o[1].clk_end - o[1].clk_begin, 100);
    assert_int_equal(o[4].clk_end - o[4].clk_begin, 150);
    assert_int_equal(o[0].sm, 3);
    assert_int_equal(o[4].warp, 1);
    /* 2 cycles per ns, from the warp's start anchor. */
    assert_true(o[1].t_begin_ns == 10000 + 30 / 2.0);
    assert_true(o[1].t_end_ns == 10000 + 130 / 2.0);
    assert_int_equal(o[0].flags | o[1].flags | o[2].flags, 0);
    char path[64];
    assert_int_equal(argus_node_path(&t, NULL, o[1].node, path, sizeof(path)), 0);
    char want[64];
    snprintf(want, sizeof(want), "0x%07x/0x%07x", id_outer, id_load);
    assert_string_equal(path, want);
    argus_region_stats *st;
    size_t n;
    assert_int_equal(argus_stats(&t, NULL, &st, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(st[1].region, id_load);
    assert_int_equal(st[1].count, 2);
    assert_int_equal(st[1].total_cycles, 250);
    assert_true(st[1].total_ns == 125.0);
    assert_true(st[1].p50_ns == 50.0);
    assert_true(st[1].p99_ns == 75.0);
    /* Each warp lives 350 + its 150-cycle load: share of 2 * 175 ns + ... */
    double life0 = (10 + 20 + 100 + 4 + 200 + 6 + 10) / 2.0;
    double life1 = life0 + 25;
    assert_true(st[1].share > 125.0 / (life0 + life1) - 1e-12 &&
                st[1].share < 125.0 / (life0 + life1) + 1e-12);
    free(st);
    argus_trace_free(&t);
    free(b.p);
}

/* CTAs on two SMs whose clocks have unrelated bases: times line up on the
 * globaltimer, and the estimated rate is the one the model ran at. */
static void test_clock_alignment_across_ctas(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 2, 32, 8), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 1000, 123456789ull, 1.5);
    dm_emit(&w, B, id_outer, 300);
    dm_emit(&w, E, id_outer, 3000);
    dm_end(&w, 300);
    dm_begin(&w, &b, 1, 0, 7, 1500, 5000000000000ull, 1.5);
    dm_emit(&w, B, id_outer, 150);
    dm_emit(&w, E, id_outer, 1500);
    dm_end(&w, 1500);
    argus_trace t = decode_ok(&b, 0, NULL);
    assert_int_equal(t.clock_method, ARGUS_CLOCK_ANCHORS);
    assert_true(t.cycles_per_ns > 1.5 - 1e-9 && t.cycles_per_ns < 1.5 + 1e-9);
    assert_true(t.occ[0].t_begin_ns > 1200 - 1e-6 && t.occ[0].t_begin_ns < 1200 + 1e-6);
    assert_true(t.occ[1].t_begin_ns > 1600 - 1e-6 && t.occ[1].t_begin_ns < 1600 + 1e-6);
    assert_true(t.occ[1].t_end_ns > 2600 - 1e-6 && t.occ[1].t_end_ns < 2600 + 1e-6);
    assert_int_equal(t.gt_min, 1000);
    assert_int_equal(t.gt_max, 1500 + 2100);
    assert_int_equal(t.occ[1].sm, 7);
    argus_trace_free(&t);
    free(b.p);
}

/* The 32-bit clock in a record wraps; the decoder unwraps it from %clock64. */
static void test_clock32_wrap(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 1, 32, 8), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 0, 0x1FFFFFF00ull, 1.0);
    dm_emit(&w, B, id_outer, 0x80);
    dm_emit(&w, E, id_outer, 0x100); /* crosses 2^32 * k */
    dm_emit(&w, B, id_load, 0xF0000000u);
    dm_emit(&w, E, id_load, 0x10);
    dm_end(&w, 0x20);
    argus_trace t = decode_ok(&b, 1.0, NULL);
    assert_int_equal(t.nocc, 2);
    assert_int_equal(t.occ[0].clk_begin, 0x1FFFFFF80ull);
    assert_int_equal(t.occ[0].clk_end - t.occ[0].clk_begin, 0x100);
    assert_int_equal(t.occ[1].clk_begin - t.occ[0].clk_end, 0xF0000000ull);
    argus_trace_free(&t);
    free(b.p);
}

static void test_overlap_kept_apart(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 1, 32, 8), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 0, 0, 1.0);
    dm_emit(&w, B, id_outer, 10);
    dm_emit(&w, B, id_compute, 10);
    dm_emit(&w, E, id_outer, 10); /* outer ends while compute is open */
    dm_emit(&w, E, id_compute, 10);
    dm_end(&w, 10);
    argus_trace t = decode_ok(&b, 1.0, NULL);
    assert_int_equal(t.nocc, 2);
    assert_int_equal(t.ndiags, 0);
    assert_int_equal(t.occ[0].flags, ARGUS_OCC_OVERLAP);
    assert_int_equal(t.occ[0].clk_end - t.occ[0].clk_begin, 20);
    assert_int_equal(t.occ[1].clk_end - t.occ[1].clk_begin, 20);
    assert_int_equal(t.occ[1].parent, 0);
    assert_int_equal(t.occ[0].track, 0);
    assert_int_equal(t.occ[1].track, 1);
    argus_region_stats *st;
    size_t n;
    assert_int_equal(argus_stats(&t, NULL, &st, &n), 0);
    assert_int_equal(st[0].timed, 1); /* an overlap is complete: timed */
    free(st);
    argus_trace_free(&t);
    free(b.p);
}

static int has_diag(const argus_trace *t, int kind, uint32_t value)
{
    for (size_t i = 0; i < t->ndiags; i++)
        if (t->diags[i].kind == kind && t->diags[i].value == value)
            return 1;
    return 0;
}

static void test_unbalanced(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 1, 32, 8), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 0, 0, 1.0);
    dm_emit(&w, E, id_load, 10); /* end without begin, no wrap */
    dm_emit(&w, B, id_outer, 10);
    dm_emit(&w, B, id_compute, 10);
    dm_emit(&w, E, id_compute, 10);
    dm_end(&w, 10); /* outer never ends */
    argus_trace t = decode_ok(&b, 1.0, NULL);
    assert_int_equal(t.nocc, 2);
    assert_true(has_diag(&t, ARGUS_DIAG_END_WITHOUT_BEGIN, id_load));
    assert_true(has_diag(&t, ARGUS_DIAG_NEVER_ENDED, id_outer));
    assert_int_equal(t.occ[0].flags, ARGUS_OCC_NO_END);
    assert_int_equal(t.occ[0].clk_end, 50); /* held open to the warp's end */
    argus_region_stats *st;
    size_t n;
    assert_int_equal(argus_stats(&t, NULL, &st, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(st[0].count, 1);
    assert_int_equal(st[0].partial, 1);
    assert_int_equal(st[0].timed, 0);
    assert_true(st[0].total_ns == 0); /* never a number from a partial region */
    assert_int_equal(st[1].timed, 1);
    free(st);
    argus_trace_free(&t);
    free(b.p);
}

static void test_wrap_counts_lost(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 1, 32, 4), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 0, 0, 1.0);
    dm_emit(&w, B, id_outer, 10);
    for (int i = 0; i < 4; i++) {
        dm_emit(&w, B, id_load, 10);
        dm_emit(&w, E, id_load, 5);
    }
    dm_emit(&w, E, id_outer, 10);
    dm_end(&w, 10);
    argus_trace t = decode_ok(&b, 1.0, NULL);
    assert_int_equal(t.records_lost, 6);
    assert_int_equal(t.warps[0].n_written, 10);
    assert_int_equal(t.warps[0].n_lost, 6);
    assert_true(t.warps[0].flags & ARGUS_WARP_WRAPPED);
    assert_true(has_diag(&t, ARGUS_DIAG_WRAPPED, 0));
    assert_int_equal(t.diags[0].count, 6);
    assert_false(has_diag(&t, ARGUS_DIAG_END_WITHOUT_BEGIN, id_load));
    /* Survivors: E load, B load, E load, E outer. The lost begins of outer
     * and of the first load are opened first, so that the load that
     * survived whole is still outer's child. */
    assert_int_equal(t.nocc, 3);
    assert_int_equal(t.occ[0].region, id_outer);
    assert_int_equal(t.occ[0].flags, ARGUS_OCC_NO_BEGIN);
    assert_int_equal(t.occ[0].clk_end, 80);
    assert_int_equal(t.occ[1].region, id_load);
    assert_int_equal(t.occ[1].flags, ARGUS_OCC_NO_BEGIN);
    assert_int_equal(t.occ[1].parent, 0);
    assert_int_equal(t.occ[2].flags, 0);
    assert_int_equal(t.occ[2].parent, 0);
    assert_int_equal(t.occ[2].node, t.occ[1].node);
    assert_int_equal(t.occ[2].clk_end - t.occ[2].clk_begin, 5);
    assert_int_equal(t.occ[2].clk_begin, 10 + 15 * 3 + 10);
    argus_region_stats *st;
    size_t n;
    assert_int_equal(argus_stats(&t, NULL, &st, &n), 0);
    assert_int_equal(n, 2); /* outer and outer/load */
    assert_int_equal(st[1].count, 2);
    assert_int_equal(st[1].partial, 1);
    assert_int_equal(st[1].timed, 1);
    assert_int_equal(st[1].total_cycles, 5);
    free(st);
    argus_trace_free(&t);
    free(b.p);
}

static void test_scopes(void **state)
{
    (void)state;
    uint32_t prod = argus_region_id("producer", 0), cons = argus_region_id("consumer", 0);
    dm_buf b;
    assert_int_equal(dm_init(&b, 2, 64, 32), 0);
    for (uint32_t c = 0; c < 2; c++) {
        for (uint32_t wi = 0; wi < 2; wi++) {
            dm_warp w;
            dm_begin(&w, &b, c, wi, c * 2, 0, 0, 1.0);
            dm_emit(&w, ARGUS_REC_ROLE, wi == 0 ? prod : cons, 1);
            for (uint32_t i = 0; i < 4; i++) {
                dm_emit(&w, ARGUS_REC_ITER, i, 1);
                dm_emit(&w, B, id_load, 1);
                dm_emit(&w, E, id_load, 10 * (i + 1));
            }
            dm_end(&w, 1);
        }
    }
    argus_trace t = decode_ok(&b, 1.0, NULL);
    assert_int_equal(t.nocc, 16);
    assert_int_equal(t.occ[5].iter, 1);
    assert_int_equal(t.occ[5].role, cons);
    argus_scope s;
    argus_region_stats *st;
    size_t n;
    argus_scope_all(&s);
    s.iter_lo = 1;
    s.iter_hi = 2;
    assert_int_equal(argus_stats(&t, &s, &st, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(st[0].count, 8);
    assert_int_equal(st[0].total_cycles, 4 * (20 + 30));
    free(st);
    argus_scope_all(&s);
    s.role = prod;
    s.sm_lo = s.sm_hi = 2; /* CTA 1 runs on SM 2 */
    assert_int_equal(argus_stats(&t, &s, &st, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(st[0].count, 4);
    assert_true(st[0].p99_ns == 40.0);
    free(st);
    argus_scope_all(&s);
    s.cta_lo = s.cta_hi = 5; /* no such CTA: nothing, not an error */
    assert_int_equal(argus_stats(&t, &s, &st, &n), 0);
    assert_int_equal(n, 0);
    free(st);
    argus_trace_free(&t);
    free(b.p);
}

static void test_unknown_region_and_bad_record(void **state)
{
    (void)state;
    argus_registry *reg;
    assert_int_equal(argus_registry_new(&reg), 0);
    assert_int_equal(argus_registry_add(reg, "outer", 0, 0, NULL, NULL, 0), 0);
    dm_buf b;
    assert_int_equal(dm_init(&b, 1, 32, 8), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 0, 0, 1.0);
    dm_emit(&w, B, id_outer, 1);
    dm_emit(&w, B, 0x1234567, 1);
    dm_emit(&w, E, 0x1234567, 1);
    dm_emit(&w, B, 0x1234567, 1);
    dm_emit(&w, E, 0x1234567, 1);
    dm_emit(&w, 15, 7, 1); /* no such kind */
    dm_emit(&w, E, id_outer, 1);
    dm_end(&w, 1);
    argus_trace t = decode_ok(&b, 1.0, reg);
    size_t unknown = 0;
    for (size_t i = 0; i < t.ndiags; i++)
        unknown += t.diags[i].kind == ARGUS_DIAG_UNKNOWN_REGION;
    assert_int_equal(unknown, 1); /* once per ID, not per occurrence */
    assert_true(has_diag(&t, ARGUS_DIAG_UNKNOWN_REGION, 0x1234567));
    assert_true(has_diag(&t, ARGUS_DIAG_BAD_RECORD, 15));
    assert_int_equal(t.nocc, 3);
    argus_trace_free(&t);
    argus_registry_free(reg);
    free(b.p);
}

static void test_warp_not_ended_and_empty(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 2, 32, 8), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 0, 100, 1.0);
    dm_emit(&w, B, id_outer, 5);
    dm_emit(&w, E, id_outer, 5);
    dm_emit(&w, B, id_load, 5); /* the kernel stopped here (a trap) */
    argus_trace t = decode_ok(&b, 1.0, NULL);
    assert_int_equal(t.warps_active, 1);
    assert_true(t.warps[0].flags & ARGUS_WARP_NOT_ENDED);
    assert_true(t.warps[1].flags & ARGUS_WARP_EMPTY);
    assert_true(has_diag(&t, ARGUS_DIAG_WARP_NOT_ENDED, 0));
    assert_int_equal(t.nocc, 2);
    assert_int_equal(t.occ[0].clk_begin, 105);
    assert_int_equal(t.occ[0].clk_end, 110);
    assert_int_equal(t.occ[1].flags, ARGUS_OCC_NO_END);
    argus_trace_free(&t);
    free(b.p);
}

static int decode_rc(const void *p, size_t len, char *msg, size_t msglen)
{
    argus_trace t;
    int rc = argus_decode(p, len, NULL, &t, msg, msglen);
    if (rc == 0)
        argus_trace_free(&t);
    else
        assert_null(t.warps);
    return rc;
}

static void test_hostile_headers(void **state)
{
    (void)state;
    dm_buf b;
    char msg[256];
    assert_int_equal(dm_init(&b, 4, 96, 16), 0);
    argus_buf_header *h = (argus_buf_header *)b.p;
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), 0);
    assert_int_equal(decode_rc(NULL, 0, msg, sizeof(msg)), ARGUS_ETRUNC);
    assert_int_equal(decode_rc(b.p, 10, msg, sizeof(msg)), ARGUS_ETRUNC);
    assert_int_equal(decode_rc(b.p, b.len - 1, msg, sizeof(msg)), ARGUS_ETRUNC);
    assert_non_null(strstr(msg, "cut short"));
    h->magic ^= 1;
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "magic"));
    h->magic ^= 1;
    h->version = 9;
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), ARGUS_EFORMAT);
    h->version = ARGUS_FORMAT_VERSION;
    h->cap = 12;
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), ARGUS_ELIMIT);
    assert_non_null(strstr(msg, "power of two"));
    h->cap = 1u << 31;
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), ARGUS_ELIMIT);
    h->cap = 16;
    h->nslots = UINT32_MAX;
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), ARGUS_ELIMIT);
    /* Consistent with a huge grid, but the buffer is not that long. */
    h->nslots = ARGUS_MAX_SLOTS;
    h->grid[0] = ARGUS_MAX_SLOTS / 3;
    h->grid[1] = 1;
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), ARGUS_EFORMAT);
    h->nslots = 3 * 65536;
    h->grid[0] = 65536;
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), ARGUS_ETRUNC);
    h->nslots = 12;
    h->grid[0] = 4;
    h->block[0] = 33; /* 2 warps per CTA, not 3 */
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "grid"));
    /* A grid far past the slot limit (its product is checked step by step). */
    h->block[0] = 96;
    h->grid[0] = 0x80000000u;
    h->grid[1] = 0x80000000u;
    h->grid[2] = 1;
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), ARGUS_EFORMAT);
    h->grid[0] = 4;
    h->grid[1] = 1;
    assert_int_equal(decode_rc(b.p, b.len, msg, sizeof(msg)), 0);
    free(b.p);
}

static void test_hostile_slots(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 2, 32, 4), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 0, 0, 1.0);
    dm_emit(&w, B, id_outer, 5);
    dm_emit(&w, E, id_outer, 5);
    dm_end(&w, 5);
    dm_slot(&b, 0)->n_written = UINT32_MAX; /* a huge count */
    dm_begin(&w, &b, 1, 0, 0, 0, 0, 1.0);
    dm_end(&w, 5);
    dm_slot(&b, 1)->cta = 0; /* claims to be another warp's slot */
    argus_trace t = decode_ok(&b, 1.0, NULL);
    assert_int_equal(t.warps[0].n_lost, UINT32_MAX - 4);
    assert_true(has_diag(&t, ARGUS_DIAG_WRAPPED, 0));
    assert_true(has_diag(&t, ARGUS_DIAG_SLOT_MISMATCH, ARGUS_SLOT_MAGIC));
    assert_true(t.warps[1].flags & ARGUS_WARP_EMPTY);
    /* Two zero words in the written part of the ring are not records. */
    assert_true(has_diag(&t, ARGUS_DIAG_BAD_RECORD, 0));
    argus_trace_free(&t);
    /* A clock that runs backwards is not converted. */
    dm_slot(&b, 0)->n_written = 2;
    dm_slot(&b, 0)->clk_end = 0;
    dm_slot(&b, 0)->clk_start = 100;
    t = decode_ok(&b, 0, NULL);
    assert_true(has_diag(&t, ARGUS_DIAG_CLOCK, 0));
    assert_int_equal(t.clock_method, ARGUS_CLOCK_NONE);
    argus_trace_free(&t);
    free(b.p);
}

/* Anchors at the ends of the 64-bit range: the unwrapped clocks are held
 * at the limit, stay monotonic, and the warp is reported. */
static void test_hostile_anchors(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 2, 32, 8), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 0, UINT64_MAX - 20, 1.0); /* never ends */
    dm_emit(&w, B, id_outer, 10);
    dm_emit(&w, E, id_outer, 30);
    dm_begin(&w, &b, 1, 0, 0, 0, 0, 1.0);
    dm_emit(&w, B, id_outer, 10);
    dm_emit(&w, E, id_outer, 30);
    dm_end(&w, 1);
    dm_slot(&b, 1)->clk_start = 0;
    dm_slot(&b, 1)->clk_end = 5; /* earlier than the records' clocks */
    argus_trace t = decode_ok(&b, 1.0, NULL);
    assert_int_equal(t.nocc, 2);
    size_t clock_diags = 0;
    for (size_t i = 0; i < t.ndiags; i++)
        clock_diags += t.diags[i].kind == ARGUS_DIAG_CLOCK;
    assert_int_equal(clock_diags, 2);
    for (size_t i = 0; i < t.nocc; i++)
        assert_true(t.occ[i].clk_end >= t.occ[i].clk_begin);
    assert_int_equal(t.occ[0].clk_end, UINT64_MAX);
    argus_trace_free(&t);
    free(b.p);
}

/* Nesting past ARGUS_MAX_DEPTH: the deeper begins are reported, not
 * opened, and their ends then have no begin. */
static void test_too_deep(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 1, 32, 1024), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 0, 0, 1.0);
    for (uint32_t i = 1; i <= 300; i++)
        dm_emit(&w, B, i, 1);
    for (uint32_t i = 300; i >= 1; i--)
        dm_emit(&w, E, i, 1);
    dm_end(&w, 1);
    argus_trace t = decode_ok(&b, 1.0, NULL);
    assert_int_equal(t.nocc, ARGUS_MAX_DEPTH);
    size_t deep = 0, orphan = 0;
    for (size_t i = 0; i < t.ndiags; i++) {
        deep += t.diags[i].kind == ARGUS_DIAG_TOO_DEEP;
        orphan += t.diags[i].kind == ARGUS_DIAG_END_WITHOUT_BEGIN;
    }
    assert_int_equal(deep, 300 - ARGUS_MAX_DEPTH);
    assert_int_equal(orphan, 300 - ARGUS_MAX_DEPTH);
    assert_int_equal(t.occ[ARGUS_MAX_DEPTH - 1].depth, ARGUS_MAX_DEPTH - 1);
    assert_int_equal(t.occ[0].clk_end, 600); /* the outermost closes last */
    argus_trace_free(&t);
    free(b.p);
}

/* Many distinct paths (the node hash), and repeated ones mapping to the
 * same node. */
static void test_many_nodes(void **state)
{
    (void)state;
    enum { N = 20000 };
    dm_buf b;
    assert_int_equal(dm_init(&b, 1, 32, 131072), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 0, 0, 1.0);
    dm_emit(&w, B, id_outer, 1);
    for (uint32_t rep = 0; rep < 2; rep++) {
        for (uint32_t i = 1; i <= N; i++) {
            dm_emit(&w, B, i, 1);
            dm_emit(&w, E, i, 1 + rep);
        }
    }
    dm_emit(&w, E, id_outer, 1);
    dm_end(&w, 1);
    argus_trace t = decode_ok(&b, 1.0, NULL);
    assert_int_equal(t.nnodes, N + 1);
    assert_int_equal(t.nocc, 2 * N + 1);
    assert_int_equal(t.occ[1].node, t.occ[N + 1].node);
    assert_int_equal(t.nodes[t.occ[N].node].region, N);
    assert_int_equal(t.nodes[t.occ[N].node].parent, (int32_t)t.occ[0].node);
    argus_region_stats *st;
    size_t n;
    assert_int_equal(argus_stats(&t, NULL, &st, &n), 0);
    assert_int_equal(n, N + 1);
    assert_int_equal(st[5].count, 2);
    assert_int_equal(st[5].total_cycles, 1 + 2);
    free(st);
    argus_trace_free(&t);
    free(b.p);
}

/* Random damage to a valid buffer never crashes the decoder or makes it
 * read out of bounds (the ASan build runs this). */
static void test_mutations(void **state)
{
    (void)state;
    dm_buf b;
    assert_int_equal(dm_init(&b, 3, 64, 8), 0);
    for (uint32_t c = 0; c < 3; c++) {
        for (uint32_t wi = 0; wi < 2; wi++) {
            dm_warp w;
            dm_begin(&w, &b, c, wi, c, 1000 * c, 77 * c, 1.7);
            dm_emit(&w, B, id_outer, 3);
            for (int i = 0; i < 5; i++) {
                dm_emit(&w, B, id_load, 3);
                dm_emit(&w, E, id_load, 9);
            }
            dm_emit(&w, E, id_outer, 3);
            dm_end(&w, 3);
        }
    }
    unsigned char *copy = malloc(b.len);
    assert_non_null(copy);
    uint32_t seed = 12345;
    int ok = 0;
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, b.p, b.len);
        int flips = 1 + round % 8;
        for (int k = 0; k < flips; k++) {
            seed = seed * 1664525u + 1013904223u;
            size_t at = (seed >> 8) % b.len;
            seed = seed * 1664525u + 1013904223u;
            copy[at] ^= (unsigned char)(1u << ((seed >> 16) & 7));
        }
        argus_trace t;
        if (argus_decode(copy, b.len - (round % 5 == 0 ? (size_t)(seed % 64) : 0), NULL, &t, NULL, 0) == 0) {
            ok++;
            argus_region_stats *st;
            size_t n;
            assert_int_equal(argus_stats(&t, NULL, &st, &n), 0);
            free(st);
            argus_trace_free(&t);
        }
    }
    assert_true(ok > 0);
    free(copy);
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_region_id_known_answers),
        cmocka_unit_test(test_nesting_exact),
        cmocka_unit_test(test_clock_alignment_across_ctas),
        cmocka_unit_test(test_clock32_wrap),
        cmocka_unit_test(test_overlap_kept_apart),
        cmocka_unit_test(test_unbalanced),
        cmocka_unit_test(test_wrap_counts_lost),
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_unknown_region_and_bad_record),
        cmocka_unit_test(test_warp_not_ended_and_empty),
        cmocka_unit_test(test_hostile_headers),
        cmocka_unit_test(test_hostile_slots),
        cmocka_unit_test(test_hostile_anchors),
        cmocka_unit_test(test_too_deep),
        cmocka_unit_test(test_many_nodes),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, setup_ids, NULL);
}
