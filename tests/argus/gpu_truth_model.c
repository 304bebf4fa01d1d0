/*
 * The issue-16 checker (gpu_truth_check.c) on buffers from the device model
 * (devmodel.h) shaped like the GPU kernels of gpu_truth_kernels.cu and
 * gpu_overhead_kernels.cu: written with the true durations every check
 * passes, and each way of making a buffer wrong (a region 3% long, a
 * marker-free time 5% off, a call ratio of 2:1, a warp's skew region
 * 300 ns longer than its spin, a warp with the wrong role, a warp that never
 * ran) fails the check that should catch it, while a spin that overshoots
 * its target (the ground truth's own error, seen in its log) fails nothing.
 * So the GPU run's verdicts can fail, and the checker is exercised here
 * without a GPU. Each kernel's spin log (gpu_truth.h) is modelled with a
 * 32 ns globaltimer step.
 */
#include <math.h>
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
#include "gpu_truth.h"

#define GHZ 1.98
/* Cycles for a number of ns at the model's clock. */
#define CYC(ns) ((uint64_t)((double)(ns) * GHZ + 0.5))

/* The modelled globaltimer's step, ns. */
#define GT_STEP 32u
/* Cycles from a marker's clock read to the spin's first reading. */
#define SPIN_LEAD 4u

/* What to make wrong in a generated buffer. */
typedef struct fault {
    double spin5_scale;     /* spin5us region vs the spin inside it (1: true) */
    double spin_over;       /* every spin's length vs its target, in region and log (1: exact) */
    uint32_t callb_calls;   /* work() calls in callB (G16_CALL_B: true) */
    int skew_warp;          /* warp whose skew is 300 ns long, -1: none */
    int producer_warp1;     /* warp 1 also says "producer" */
    int drop_cta0_warp0;    /* slot 0 never written */
} fault;

static const fault no_fault = {1.0, 1.0, G16_CALL_B, -1, 0, 0};

/* The spin log of the model (one per kernel), zeroed by reset_log. */
static g16_spin_rec model_log[G16_LOG_ENTRIES];

static void reset_log(void)
{
    memset(model_log, 0, sizeof(model_log));
}

/* The modelled %globaltimer at the warp's clock clk, on its step. */
static uint64_t gt_at(const dm_warp *w, uint64_t clk)
{
    uint64_t t = w->gt0 + (uint64_t)((double)(clk - w->clk0) / w->ghz);
    return t - t % GT_STEP;
}

/* Logs a spin of `cycles` that starts SPIN_LEAD cycles after the warp's
 * last marker, as the warp's k-th entry. */
static void log_spin(const dm_warp *w, uint32_t wpc, uint32_t c, uint32_t wi, unsigned k,
                     uint64_t cycles)
{
    g16_spin_rec *e = &model_log[(c * wpc + wi) * G16_LOG_PER_WARP + k];
    e->clk0 = w->clk + SPIN_LEAD;
    e->clk1 = e->clk0 + cycles;
    e->gt0 = gt_at(w, e->clk0);
    e->gt1 = gt_at(w, e->clk1);
}

/* Starts warp wi of CTA c: CTAs on distinct SMs with unrelated clock bases,
 * started 20 ns apart. */
static void start(dm_warp *w, dm_buf *b, uint32_t c, uint32_t wi)
{
    dm_begin(w, b, c, wi, 3 + c, 5000000 + 20ull * c, 1000003ull * (c + 7) + 13ull * wi, GHZ);
}

static int dropped(const fault *f, uint32_t c, uint32_t wi)
{
    return f->drop_cta0_warp0 && c == 0 && wi == 0;
}

static dm_buf make_spin(const fault *f, double *lifetime_ns)
{
    dm_buf b;
    reset_log();
    assert_int_equal(dm_init(&b, G16_CTAS, G16_SPIN_THREADS, G16_CAP), 0);
    static const unsigned ns[G16_SPIN_GT_REGIONS] = G16_SPIN_NS_LIST;
    static const char *const names[G16_SPIN_GT_REGIONS] = G16_SPIN_NAMES;
    for (uint32_t c = 0; c < G16_CTAS; c++) {
        for (uint32_t wi = 0; wi < G16_SPIN_THREADS / 32; wi++) {
            if (dropped(f, c, wi))
                continue;
            dm_warp w;
            start(&w, &b, c, wi);
            for (uint32_t r = 0; r < G16_SPIN_REPS; r++) {
                for (unsigned i = 0; i < G16_SPIN_GT_REGIONS; i++) {
                    double spin = ns[i] * f->spin_over;
                    double d = spin * (i == 1 ? f->spin5_scale : 1.0);
                    dm_emit(&w, ARGUS_REC_BEGIN, argus_region_id(names[i], 0), 6);
                    log_spin(&w, G16_SPIN_THREADS / 32, c, wi, r * G16_SPIN_GT_REGIONS + i, CYC(spin));
                    dm_emit(&w, ARGUS_REC_END, argus_region_id(names[i], 0), CYC(d) + 20);
                }
                dm_emit(&w, ARGUS_REC_BEGIN, argus_region_id("clk20k", 0), 6);
                dm_emit(&w, ARGUS_REC_END, argus_region_id("clk20k", 0), G16_CLK_CYCLES + 30);
            }
            dm_end(&w, 12);
            *lifetime_ns = (double)(w.clk - w.clk0) / GHZ;
        }
    }
    return b;
}

static dm_buf make_calls(const fault *f)
{
    dm_buf b;
    assert_int_equal(dm_init(&b, G16_CTAS, G16_CALL_THREADS, G16_CAP), 0);
    uint32_t a = argus_region_id("callA", 0), bb = argus_region_id("callB", 0);
    uint32_t work = argus_region_id("work", 0);
    for (uint32_t c = 0; c < G16_CTAS; c++) {
        for (uint32_t wi = 0; wi < G16_CALL_THREADS / 32; wi++) {
            dm_warp w;
            start(&w, &b, c, wi);
            for (uint32_t i = 0; i < G16_CALL_ITERS; i++) {
                dm_emit(&w, ARGUS_REC_BEGIN, a, 5);
                for (uint32_t k = 0; k < G16_CALL_A; k++) {
                    dm_emit(&w, ARGUS_REC_BEGIN, work, 25);
                    dm_emit(&w, ARGUS_REC_END, work, G16_WORK_CYCLES + 12);
                }
                dm_emit(&w, ARGUS_REC_END, a, 20);
                dm_emit(&w, ARGUS_REC_BEGIN, bb, 5);
                for (uint32_t k = 0; k < f->callb_calls; k++) {
                    dm_emit(&w, ARGUS_REC_BEGIN, work, 25);
                    dm_emit(&w, ARGUS_REC_END, work, G16_WORK_CYCLES + 12);
                }
                dm_emit(&w, ARGUS_REC_END, bb, 20);
            }
            dm_end(&w, 12);
        }
    }
    return b;
}

static dm_buf make_barrier(const fault *f)
{
    dm_buf b;
    reset_log();
    assert_int_equal(dm_init(&b, G16_CTAS, G16_BAR_WARPS * 32, G16_CAP), 0);
    uint32_t skew = argus_region_id("skew", 0), bar = argus_region_id("bar", 0);
    for (uint32_t c = 0; c < G16_CTAS; c++) {
        for (uint32_t wi = 0; wi < G16_BAR_WARPS; wi++) {
            dm_warp w;
            start(&w, &b, c, wi);
            double extra = (int)wi == f->skew_warp ? 300.0 : 0.0;
            for (uint32_t i = 0; i < G16_BAR_ITERS; i++) {
                dm_emit(&w, ARGUS_REC_BEGIN, skew, 5);
                /* Every warp starts its iteration at the same time (the
                 * previous barrier), so the log's spins end where the
                 * nominal skews say; the faulty warp's region is longer
                 * than its spin. */
                log_spin(&w, G16_BAR_WARPS, c, wi, i, CYC(wi * G16_BAR_SKEW_NS));
                dm_emit(&w, ARGUS_REC_END, skew, CYC(wi * G16_BAR_SKEW_NS + extra) + 10);
                dm_emit(&w, ARGUS_REC_BEGIN, bar, 5);
                /* Everyone leaves the barrier together (the faulty warp
                 * arrives late and so waits less). */
                double wait = (G16_BAR_WARPS - 1 - wi) * (double)G16_BAR_SKEW_NS - extra;
                dm_emit(&w, ARGUS_REC_END, bar, CYC(wait > 0 ? wait : 0) + 40);
            }
            dm_end(&w, 12);
        }
    }
    return b;
}

static dm_buf make_roles(const fault *f)
{
    dm_buf b;
    reset_log();
    assert_int_equal(dm_init(&b, G16_CTAS, G16_ROLE_WARPS * 32, G16_CAP), 0);
    uint32_t prod = argus_region_id("producer", 0), cons = argus_region_id("consumer", 0);
    uint32_t produce = argus_region_id("produce", 0), consume = argus_region_id("consume", 0);
    uint32_t handoff = argus_region_id("handoff", 0), drain = argus_region_id("drain", 0);
    for (uint32_t c = 0; c < G16_CTAS; c++) {
        for (uint32_t wi = 0; wi < G16_ROLE_WARPS; wi++) {
            dm_warp w;
            start(&w, &b, c, wi);
            int is_prod = wi == 0;
            dm_emit(&w, ARGUS_REC_ROLE, is_prod || (f->producer_warp1 && wi == 1) ? prod : cons, 4);
            for (uint32_t i = 0; i < G16_ROLE_ITERS; i++) {
                if (is_prod) {
                    dm_emit(&w, ARGUS_REC_BEGIN, produce, 5);
                    log_spin(&w, G16_ROLE_WARPS, c, wi, i, CYC(G16_PRODUCE_NS));
                    dm_emit(&w, ARGUS_REC_END, produce, CYC(G16_PRODUCE_NS) + 16);
                }
                dm_emit(&w, ARGUS_REC_BEGIN, handoff, 5);
                dm_emit(&w, ARGUS_REC_END, handoff, is_prod ? 40 : CYC(G16_PRODUCE_NS) + 60);
                if (!is_prod) {
                    dm_emit(&w, ARGUS_REC_BEGIN, consume, 5);
                    log_spin(&w, G16_ROLE_WARPS, c, wi, i, CYC(G16_CONSUME_NS));
                    dm_emit(&w, ARGUS_REC_END, consume, CYC(G16_CONSUME_NS) + 16);
                }
                dm_emit(&w, ARGUS_REC_BEGIN, drain, 5);
                dm_emit(&w, ARGUS_REC_END, drain, is_prod ? CYC(G16_CONSUME_NS) + 60 : 40);
            }
            dm_end(&w, 12);
        }
    }
    return b;
}

static g16_sink quiet(void)
{
    g16_sink s = {NULL, 1, 0, 0};
    return s;
}

static void test_spin(void **state)
{
    (void)state;
    char msg[512];
    double life = 0;
    dm_buf b = make_spin(&no_fault, &life);
    /* The marker-free kernel: the regions plus about 1 us of launch. */
    double free_ns = life + 1000.0;
    g16_sink s = quiet();
    assert_int_equal(g16_check_spin(b.p, b.len, free_ns, model_log, &s, msg, sizeof(msg)), 0);
    /* 4 per buffer; per globaltimer region count, logged spins, cycles and
     * ns; clk20k count and cycles; 2 against the marker-free time. */
    assert_int_equal(s.checks, 4 + 4 * G16_SPIN_GT_REGIONS + 2 + 2);
    assert_int_equal(s.failures, 0);
    /* No log: the truth is missing, which is an error, not a verdict. */
    s = quiet();
    assert_int_equal(g16_check_spin(b.p, b.len, free_ns, NULL, &s, msg, sizeof(msg)), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "spin log"));

    s = quiet();
    assert_int_equal(g16_check_spin(b.p, b.len, free_ns * 1.05, model_log, &s, msg, sizeof(msg)), 0);
    assert_int_equal(s.failures, 2); /* regions per warp and span vs marker-free */
    free(b.p);

    fault f = no_fault;
    f.spin5_scale = 1.03;
    b = make_spin(&f, &life);
    s = quiet();
    assert_int_equal(g16_check_spin(b.p, b.len, free_ns, model_log, &s, msg, sizeof(msg)), 0);
    /* spin5us cycles and time against its spin's own */
    assert_int_equal(s.failures, 2);
    free(b.p);

    /* Spins 3% past their targets, regions exactly around them: the
     * ground truth's overshoot, which the log shows; no check fails. */
    f = no_fault;
    f.spin_over = 1.03;
    b = make_spin(&f, &life);
    s = quiet();
    assert_int_equal(g16_check_spin(b.p, b.len, life + 1000.0, model_log, &s, msg, sizeof(msg)), 0);
    assert_int_equal(s.failures, 0);
    free(b.p);

    f = no_fault;
    f.drop_cta0_warp0 = 1;
    b = make_spin(&f, &life);
    s = quiet();
    assert_int_equal(g16_check_spin(b.p, b.len, free_ns, model_log, &s, msg, sizeof(msg)), 0);
    /* The warp count, every region's occurrence count and the logged
     * spins of each globaltimer region. */
    assert_int_equal(s.failures, 1 + G16_SPIN_GT_REGIONS + 1 + G16_SPIN_GT_REGIONS);
    free(b.p);
}

static void test_calls(void **state)
{
    (void)state;
    char msg[512];
    dm_buf b = make_calls(&no_fault);
    g16_sink s = quiet();
    assert_int_equal(g16_check_calls(b.p, b.len, &s, msg, sizeof(msg)), 0);
    assert_int_equal(s.failures, 0);
    free(b.p);

    fault f = no_fault;
    f.callb_calls = 2;
    b = make_calls(&f);
    s = quiet();
    assert_int_equal(g16_check_calls(b.p, b.len, &s, msg, sizeof(msg)), 0);
    /* callB/work count, the call ratio and the time ratio. */
    assert_int_equal(s.failures, 3);
    free(b.p);
}

static void test_barrier(void **state)
{
    (void)state;
    char msg[512];
    dm_buf b = make_barrier(&no_fault);
    g16_sink s = quiet();
    assert_int_equal(g16_check_barrier(b.p, b.len, model_log, &s, msg, sizeof(msg)), 0);
    assert_int_equal(s.failures, 0);
    free(b.p);

    fault f = no_fault;
    f.skew_warp = 3;
    b = make_barrier(&f);
    s = quiet();
    assert_int_equal(g16_check_barrier(b.p, b.len, model_log, &s, msg, sizeof(msg)), 0);
    assert_int_equal(s.failures, 2); /* warp 3's skew and its wait */
    free(b.p);
}

static void test_roles(void **state)
{
    (void)state;
    char msg[512];
    dm_buf b = make_roles(&no_fault);
    g16_sink s = quiet();
    assert_int_equal(g16_check_roles(b.p, b.len, model_log, &s, msg, sizeof(msg)), 0);
    assert_int_equal(s.failures, 0);
    free(b.p);

    fault f = no_fault;
    f.producer_warp1 = 1;
    b = make_roles(&f);
    s = quiet();
    assert_int_equal(g16_check_roles(b.p, b.len, model_log, &s, msg, sizeof(msg)), 0);
    assert_true(s.failures >= 4); /* per-role counts of consume, handoff, drain */
    free(b.p);
}

static void test_overhead(void **state)
{
    (void)state;
    char msg[512];
    dm_buf b;
    assert_int_equal(dm_init(&b, G16_OVH_CTAS, G16_OVH_THREADS, 2 * G16_OVH_REGIONS), 0);
    uint32_t body = argus_region_id("body", 0);
    for (uint32_t c = 0; c < G16_OVH_CTAS; c++) {
        for (uint32_t wi = 0; wi < G16_OVH_THREADS / 32; wi++) {
            dm_warp w;
            dm_begin(&w, &b, c, wi, c % 132, 100000 + c, 777ull * c, GHZ);
            for (uint32_t r = 0; r < G16_OVH_REGIONS; r++) {
                dm_emit(&w, ARGUS_REC_BEGIN, body, 8);
                dm_emit(&w, ARGUS_REC_END, body, 990);
            }
            dm_end(&w, 10);
        }
    }
    g16_sink s = quiet();
    double mean = 0;
    assert_int_equal(g16_check_overhead(b.p, b.len, "ovh", &mean, &s, msg, sizeof(msg)), 0);
    assert_int_equal(s.failures, 0);
    assert_true(fabs(mean - 500.0) < 1.0);
    /* A buffer that is not one: the decoder's error comes back. */
    b.p[0] ^= 0xff;
    assert_true(g16_check_overhead(b.p, b.len, "ovh", &mean, &s, msg, sizeof(msg)) < 0);
    assert_non_null(strstr(msg, "magic"));
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spin),    cmocka_unit_test(test_calls),
        cmocka_unit_test(test_barrier), cmocka_unit_test(test_roles),
        cmocka_unit_test(test_overhead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
