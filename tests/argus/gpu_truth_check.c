/*
 * Issue 16: the checks of the known-ground-truth kernels (gpu_truth.h says
 * what each kernel does). Each check decodes a region buffer with the
 * Argus core and compares what the markers saw with what the kernel was
 * built to do: occurrence counts exactly, region times within G16_REL_TOL
 * of the spin targets, per-role counts exactly.
 *
 * Times are the decoder's: SM cycles converted to ns at the clock rate it
 * estimates from the warps' %globaltimer/%clock64 anchors, so a spin on
 * %globaltimer checks the conversion against a clock the decoder did not
 * use for the region itself, and a spin on %clock64 checks the cycles.
 *
 * The truth of a %globaltimer spin is what the spin measured of itself
 * (its log, gpu_truth.h), not its target: decoded cycles against the
 * spin's own %clock64 cycles (exact, same clock: the difference is what
 * the markers add inside the region), decoded ns against the spin's own
 * %globaltimer readings. The targets stay as information rows (the spin's
 * overshoot).
 */
#include "gpu_truth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "argus/argus.h"

void g16_check(g16_sink *s, const char *test, const char *what, double got, double want,
               double tol, const char *unit)
{
    int ok = fabs(got - want) <= tol;
    s->checks++;
    s->failures += !ok;
    if (!s->quiet)
        printf("%s %-8s %-44s %14.3f want %14.3f +- %.3f %s\n", ok ? "ok  " : "FAIL", test, what,
               got, want, tol, unit);
    if (s->tsv)
        fprintf(s->tsv, "%s\t%s\t%.6f\t%.6f\t%.6f\t%s\t%s\n", test, what, got, want, tol, unit,
                ok ? "pass" : "fail");
}

void g16_info(g16_sink *s, const char *test, const char *what, double got, const char *unit)
{
    if (!s->quiet)
        printf("info %-8s %-44s %14.3f %s\n", test, what, got, unit);
    if (s->tsv)
        fprintf(s->tsv, "%s\t%s\t%.6f\t\t\t%s\tinfo\n", test, what, got, unit);
}

/* One decoded buffer with the registry of its kernel. */
typedef struct g16_buf {
    argus_trace t;
    argus_registry *reg;
    const char *test;
} g16_buf;

static int reg_add(g16_buf *b, const char *name, uint32_t parent, int role, uint32_t *id,
                   char *msg, size_t msglen)
{
    uint32_t v;
    int rc = argus_registry_add(b->reg, name, parent, role, &v, msg, msglen);
    if (rc == 0 && id != NULL)
        *id = v;
    return rc;
}

/* Decodes raw and records what every buffer must show: all warps wrote
 * their slot, no diagnostics, nothing lost, the clock from the anchors. */
static int open_buf(g16_buf *b, const void *raw, size_t len, uint64_t warps, g16_sink *s,
                    char *msg, size_t msglen)
{
    argus_decode_opts o = {.cycles_per_ns = 0, .reg = b->reg};
    int rc = argus_decode(raw, len, &o, &b->t, msg, msglen);
    if (rc != 0)
        return rc;
    g16_check(s, b->test, "warps that wrote their slot", (double)b->t.warps_active,
              (double)warps, 0, "warps");
    g16_check(s, b->test, "decoder diagnostics", (double)b->t.ndiags, 0, 0, "count");
    g16_check(s, b->test, "records lost", (double)b->t.records_lost, 0, 0, "records");
    g16_check(s, b->test, "clock from globaltimer anchors (1 = yes)",
              b->t.clock_method == ARGUS_CLOCK_ANCHORS, 1, 0, "bool");
    g16_info(s, b->test, "SM clock estimated from the anchors", b->t.cycles_per_ns, "GHz");
    g16_info(s, b->test, "kernel span (globaltimer, first start to last end)",
             (double)(b->t.gt_max - b->t.gt_min), "ns");
    return 0;
}

/* The statistics of the node whose path is `path` under scope sc (a zeroed
 * entry when no occurrence of it is in scope). */
static argus_region_stats stats_of(const g16_buf *b, const argus_scope *sc, const char *path)
{
    argus_region_stats r;
    memset(&r, 0, sizeof(r));
    argus_region_stats *st = NULL;
    size_t n = 0;
    if (argus_stats(&b->t, sc, &st, &n) != 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        char p[256];
        if (argus_node_path(&b->t, b->reg, st[i].node, p, sizeof(p)) == 0 && strcmp(p, path) == 0) {
            r = st[i];
            break;
        }
    }
    free(st);
    return r;
}

static argus_region_stats stats_all(const g16_buf *b, const char *path)
{
    argus_scope sc;
    argus_scope_all(&sc);
    return stats_of(b, &sc, path);
}

static argus_region_stats stats_warp(const g16_buf *b, uint32_t warp, const char *path)
{
    argus_scope sc;
    argus_scope_all(&sc);
    sc.warp_lo = sc.warp_hi = warp;
    return stats_of(b, &sc, path);
}

static argus_region_stats stats_role(const g16_buf *b, uint32_t role, const char *path)
{
    argus_scope sc;
    argus_scope_all(&sc);
    sc.role = role;
    return stats_of(b, &sc, path);
}

static void close_buf(g16_buf *b)
{
    argus_trace_free(&b->t);
    argus_registry_free(b->reg);
    b->reg = NULL;
}

static int new_buf(g16_buf *b, const char *test)
{
    memset(b, 0, sizeof(*b));
    b->test = test;
    return argus_registry_new(&b->reg);
}

/* ---- the spins' own log ----------------------------------------------------- */

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* What a set of logged spins measured of themselves: entries k0, k0 + dk,
 * ... (nk of them) of warps warp_lo..warp_hi of every CTA, wpc warps per
 * CTA. step: the gcd of their globaltimer readings' distances (the timer's
 * step as these readings show it; 0 when none). */
typedef struct own_t {
    uint64_t n;      /* entries found (never-written ones are all zeros) */
    double ns;       /* mean of gt1 - gt0 */
    double cycles;   /* mean of clk1 - clk0 */
    uint64_t step;
} own_t;

static own_t own_of(const g16_spin_rec *log, uint32_t wpc, uint32_t warp_lo, uint32_t warp_hi,
                    unsigned k0, unsigned dk, unsigned nk)
{
    own_t o = {0, 0, 0, 0};
    double ns = 0, cyc = 0;
    for (uint32_t c = 0; c < G16_CTAS; c++)
        for (uint32_t w = warp_lo; w <= warp_hi && w < wpc; w++)
            for (unsigned j = 0; j < nk; j++) {
                unsigned k = k0 + j * dk;
                if (k >= G16_LOG_PER_WARP)
                    continue;
                const g16_spin_rec *e = &log[(c * wpc + w) * G16_LOG_PER_WARP + k];
                if (e->gt1 == 0 && e->clk1 == 0)
                    continue;
                o.n++;
                ns += (double)(e->gt1 - e->gt0);
                cyc += (double)(e->clk1 - e->clk0);
                o.step = gcd64(o.step, e->gt1 - e->gt0);
            }
    if (o.n) {
        o.ns = ns / (double)o.n;
        o.cycles = cyc / (double)o.n;
    }
    return o;
}

/* The checks of one region around one spin against the spin's own log:
 * how many were logged, the decoded mean cycles against the spin's own
 * cycles, the decoded mean ns against its own globaltimer time, and, as
 * information, the spin's overshoot of its target and the cycles the
 * markers add inside the region.
 *
 * Tolerances: G16_REL_TOL (the 2%) of the spin's own time. For the
 * ns check one timer step more, because the truth there is itself a
 * difference of two %globaltimer readings: each spin reads the timer at
 * its start somewhere within a step and ends on the first reading at or
 * past its target, so the readings' difference can differ from the real
 * elapsed time by up to one step either way, in the mean too (the phase
 * within a step is not uniform when spins start right after a barrier or
 * a previous spin). The step is the one these readings show (gcd of their
 * distances; 32 ns in the first H200 run). The cycle check needs no such
 * allowance: %clock64 counts every cycle. */
static void check_own(g16_sink *s, const char *test, const char *name, argus_region_stats r,
                      own_t o, uint64_t want_n, double target_ns)
{
    char what[128];
    snprintf(what, sizeof(what), "%s spins in the log", name);
    g16_check(s, test, what, (double)o.n, (double)want_n, 0, "count");
    double cyc = r.timed ? (double)r.total_cycles / (double)r.timed : 0;
    snprintf(what, sizeof(what), "%s mean cycles vs the spin's own", name);
    g16_check(s, test, what, cyc, o.cycles, G16_REL_TOL * o.cycles, "cycles");
    snprintf(what, sizeof(what), "%s mean time vs the spin's own", name);
    g16_check(s, test, what, r.mean_ns, o.ns, G16_REL_TOL * o.ns + (double)o.step, "ns");
    snprintf(what, sizeof(what), "%s spin's own time - target", name);
    g16_info(s, test, what, o.ns - target_ns, "ns");
    snprintf(what, sizeof(what), "%s cycles in region outside the spin", name);
    g16_info(s, test, what, cyc - o.cycles, "cycles");
    snprintf(what, sizeof(what), "%s mean time - target", name);
    g16_info(s, test, what, r.mean_ns - target_ns, "ns");
}

int g16_check_spin(const void *raw, size_t len, double free_ns, const g16_spin_rec *log,
                   g16_sink *s, char *msg, size_t msglen)
{
    if (log == NULL) {
        snprintf(msg, msglen, "g16_check_spin: no spin log (the kernel's own readings are the truth)");
        return ARGUS_EINVAL;
    }
    static const char *const names[G16_SPIN_GT_REGIONS] = G16_SPIN_NAMES;
    static const unsigned targets[G16_SPIN_GT_REGIONS] = G16_SPIN_NS_LIST;
    g16_buf b;
    int rc = new_buf(&b, "spin");
    for (unsigned i = 0; rc == 0 && i < G16_SPIN_GT_REGIONS; i++)
        rc = reg_add(&b, names[i], 0, 0, NULL, msg, msglen);
    if (rc == 0)
        rc = reg_add(&b, "clk20k", 0, 0, NULL, msg, msglen);
    if (rc == 0)
        rc = open_buf(&b, raw, len, (uint64_t)G16_CTAS * (G16_SPIN_THREADS / 32), s, msg, msglen);
    if (rc != 0) {
        argus_registry_free(b.reg);
        return rc;
    }
    uint64_t warps = (uint64_t)G16_CTAS * (G16_SPIN_THREADS / 32);
    double per_rep_ns = 0;
    char what[128];
    for (unsigned i = 0; i < G16_SPIN_GT_REGIONS; i++) {
        argus_region_stats r = stats_all(&b, names[i]);
        snprintf(what, sizeof(what), "%s occurrences", names[i]);
        g16_check(s, b.test, what, (double)r.count, (double)(warps * G16_SPIN_REPS), 0, "count");
        own_t o = own_of(log, G16_SPIN_THREADS / 32, 0, G16_SPIN_THREADS / 32 - 1, i,
                         G16_SPIN_GT_REGIONS, G16_SPIN_REPS);
        check_own(s, b.test, names[i], r, o, warps * G16_SPIN_REPS, targets[i]);
        per_rep_ns += r.mean_ns;
    }
    argus_region_stats c = stats_all(&b, "clk20k");
    g16_check(s, b.test, "clk20k occurrences", (double)c.count, (double)(warps * G16_SPIN_REPS),
              0, "count");
    double cyc = c.timed ? (double)c.total_cycles / (double)c.timed : 0;
    g16_check(s, b.test, "clk20k mean cycles (spin on clock64)", cyc, G16_CLK_CYCLES,
              G16_REL_TOL * G16_CLK_CYCLES, "cycles");
    per_rep_ns += c.mean_ns;
    g16_info(s, b.test, "clk20k mean time at the estimated clock", c.mean_ns, "ns");
    double body_ns = per_rep_ns * G16_SPIN_REPS;
    g16_info(s, b.test, "regions summed per warp (decoded)", body_ns, "ns");
    if (free_ns > 0) {
        /* Every warp runs the same sequence at the same time, so one warp's
         * regions add up to the marker-free kernel's duration, less the
         * launch and CTA start that lie outside every region. */
        g16_check(s, b.test, "regions per warp vs marker-free kernel time", body_ns, free_ns,
                  G16_REL_TOL * free_ns, "ns");
        g16_check(s, b.test, "decoded span vs marker-free kernel time",
                  (double)(b.t.gt_max - b.t.gt_min), free_ns, G16_REL_TOL * free_ns, "ns");
    }
    close_buf(&b);
    return 0;
}

int g16_check_calls(const void *raw, size_t len, g16_sink *s, char *msg, size_t msglen)
{
    g16_buf b;
    int rc = new_buf(&b, "calls");
    if (rc == 0)
        rc = reg_add(&b, "callA", 0, 0, NULL, msg, msglen);
    if (rc == 0)
        rc = reg_add(&b, "callB", 0, 0, NULL, msg, msglen);
    if (rc == 0)
        rc = reg_add(&b, "work", 0, 0, NULL, msg, msglen);
    uint64_t warps = (uint64_t)G16_CTAS * (G16_CALL_THREADS / 32);
    if (rc == 0)
        rc = open_buf(&b, raw, len, warps, s, msg, msglen);
    if (rc != 0) {
        argus_registry_free(b.reg);
        return rc;
    }
    argus_region_stats a = stats_all(&b, "callA"), bb = stats_all(&b, "callB");
    argus_region_stats wa = stats_all(&b, "callA/work"), wb = stats_all(&b, "callB/work");
    argus_region_stats wroot = stats_all(&b, "work");
    uint64_t n = warps * G16_CALL_ITERS;
    g16_check(s, b.test, "callA occurrences", (double)a.count, (double)n, 0, "count");
    g16_check(s, b.test, "callB occurrences", (double)bb.count, (double)n, 0, "count");
    g16_check(s, b.test, "work() calls seen under callA", (double)wa.count,
              (double)(n * G16_CALL_A), 0, "count");
    g16_check(s, b.test, "work() calls seen under callB", (double)wb.count,
              (double)(n * G16_CALL_B), 0, "count");
    g16_check(s, b.test, "work() outside any caller", (double)wroot.count, 0, 0, "count");
    g16_check(s, b.test, "call ratio callA:callB", wb.count ? (double)wa.count / wb.count : 0,
              (double)G16_CALL_A / G16_CALL_B, 0, "ratio");
    double ratio = wb.total_ns > 0 ? wa.total_ns / wb.total_ns : 0;
    g16_check(s, b.test, "work() time under callA / under callB", ratio,
              (double)G16_CALL_A / G16_CALL_B, G16_REL_TOL * G16_CALL_A / G16_CALL_B, "ratio");
    double cyc = wa.timed + wb.timed
                     ? (double)(wa.total_cycles + wb.total_cycles) / (double)(wa.timed + wb.timed)
                     : 0;
    g16_check(s, b.test, "work() mean cycles (spin on clock64)", cyc, G16_WORK_CYCLES,
              G16_REL_TOL * G16_WORK_CYCLES, "cycles");
    g16_info(s, b.test, "callA mean time", a.mean_ns, "ns");
    g16_info(s, b.test, "callB mean time", bb.mean_ns, "ns");
    close_buf(&b);
    return 0;
}

int g16_check_barrier(const void *raw, size_t len, const g16_spin_rec *log, g16_sink *s,
                      char *msg, size_t msglen)
{
    if (log == NULL) {
        snprintf(msg, msglen, "g16_check_barrier: no spin log (the kernel's own readings are the truth)");
        return ARGUS_EINVAL;
    }
    g16_buf b;
    int rc = new_buf(&b, "barrier");
    if (rc == 0)
        rc = reg_add(&b, "skew", 0, 0, NULL, msg, msglen);
    if (rc == 0)
        rc = reg_add(&b, "bar", 0, 0, NULL, msg, msglen);
    uint64_t warps = (uint64_t)G16_CTAS * G16_BAR_WARPS;
    if (rc == 0)
        rc = open_buf(&b, raw, len, warps, s, msg, msglen);
    if (rc != 0) {
        argus_registry_free(b.reg);
        return rc;
    }
    argus_region_stats bar = stats_all(&b, "bar");
    g16_check(s, b.test, "barrier regions (one __syncthreads each)", (double)bar.count,
              (double)(warps * G16_BAR_ITERS), 0, "count");
    /* Times are judged against the longest skew: a warp that spins 0 ns
     * has no relative scale of its own. The truth is the log: a warp's
     * skew is its spin's own time, and its wait is from the end of its
     * spin to the end of the CTA's last spin of that iteration (both
     * %globaltimer readings, so one timer step more, as in check_own; the
     * barrier's release and the markers around it are in the decoded wait
     * and not in the truth, and must fit in the 2%). */
    double full = (double)(G16_BAR_WARPS - 1) * G16_BAR_SKEW_NS;
    own_t all = own_of(log, G16_BAR_WARPS, 0, G16_BAR_WARPS - 1, 0, 1, G16_BAR_ITERS);
    double tol = G16_REL_TOL * full + (double)all.step;
    double wait_sum[G16_BAR_WARPS] = {0};
    uint64_t wait_n[G16_BAR_WARPS] = {0};
    for (uint32_t c = 0; c < G16_CTAS; c++)
        for (unsigned i = 0; i < G16_BAR_ITERS; i++) {
            uint64_t last = 0;
            int complete = 1;
            for (uint32_t w = 0; w < G16_BAR_WARPS; w++) {
                const g16_spin_rec *e = &log[(c * G16_BAR_WARPS + w) * G16_LOG_PER_WARP + i];
                complete &= e->gt1 != 0;
                last = e->gt1 > last ? e->gt1 : last;
            }
            for (uint32_t w = 0; complete && w < G16_BAR_WARPS; w++) {
                wait_sum[w] += (double)(last - log[(c * G16_BAR_WARPS + w) * G16_LOG_PER_WARP + i].gt1);
                wait_n[w]++;
            }
        }
    char what[128];
    g16_check(s, b.test, "skew spins in the log", (double)all.n,
              (double)warps * G16_BAR_ITERS, 0, "count");
    for (uint32_t w = 0; w < G16_BAR_WARPS; w++) {
        argus_region_stats sk = stats_warp(&b, w, "skew"), br = stats_warp(&b, w, "bar");
        own_t o = own_of(log, G16_BAR_WARPS, w, w, 0, 1, G16_BAR_ITERS);
        double wait = wait_n[w] ? wait_sum[w] / (double)wait_n[w] : 0;
        snprintf(what, sizeof(what), "warp %u: skew mean time vs its spin's own", w);
        g16_check(s, b.test, what, sk.mean_ns, o.ns, tol, "ns");
        snprintf(what, sizeof(what), "warp %u: barrier wait vs the last spin's end", w);
        g16_check(s, b.test, what, br.mean_ns, wait, tol, "ns");
        snprintf(what, sizeof(what), "warp %u: barrier wait - nominal", w);
        g16_info(s, b.test, what, br.mean_ns - (full - (double)w * G16_BAR_SKEW_NS), "ns");
        snprintf(what, sizeof(what), "warp %u: barrier regions", w);
        g16_check(s, b.test, what, (double)br.count, (double)G16_CTAS * G16_BAR_ITERS, 0, "count");
    }
    close_buf(&b);
    return 0;
}

int g16_check_roles(const void *raw, size_t len, const g16_spin_rec *log, g16_sink *s,
                    char *msg, size_t msglen)
{
    if (log == NULL) {
        snprintf(msg, msglen, "g16_check_roles: no spin log (the kernel's own readings are the truth)");
        return ARGUS_EINVAL;
    }
    g16_buf b;
    uint32_t prod = 0, cons = 0;
    int rc = new_buf(&b, "roles");
    if (rc == 0)
        rc = reg_add(&b, "producer", 0, 1, &prod, msg, msglen);
    if (rc == 0)
        rc = reg_add(&b, "consumer", 0, 1, &cons, msg, msglen);
    static const char *const regions[] = {"produce", "handoff", "consume", "drain"};
    for (unsigned i = 0; rc == 0 && i < 4; i++)
        rc = reg_add(&b, regions[i], 0, 0, NULL, msg, msglen);
    uint64_t ncons = G16_ROLE_WARPS - 1;
    if (rc == 0)
        rc = open_buf(&b, raw, len, (uint64_t)G16_CTAS * G16_ROLE_WARPS, s, msg, msglen);
    if (rc != 0) {
        argus_registry_free(b.reg);
        return rc;
    }
    uint64_t n = (uint64_t)G16_CTAS * G16_ROLE_ITERS;
    argus_region_stats pp = stats_role(&b, prod, "produce"), pc = stats_role(&b, prod, "consume");
    argus_region_stats cp = stats_role(&b, cons, "produce"), cc = stats_role(&b, cons, "consume");
    argus_region_stats ph = stats_role(&b, prod, "handoff"), ch = stats_role(&b, cons, "handoff");
    argus_region_stats pd = stats_role(&b, prod, "drain"), cd = stats_role(&b, cons, "drain");
    g16_check(s, b.test, "producer: produce occurrences", (double)pp.count, (double)n, 0, "count");
    g16_check(s, b.test, "producer: consume occurrences", (double)pc.count, 0, 0, "count");
    g16_check(s, b.test, "consumer: consume occurrences", (double)cc.count, (double)(n * ncons),
              0, "count");
    g16_check(s, b.test, "consumer: produce occurrences", (double)cp.count, 0, 0, "count");
    g16_check(s, b.test, "producer: handoff barriers", (double)ph.count, (double)n, 0, "count");
    g16_check(s, b.test, "consumer: handoff barriers", (double)ch.count, (double)(n * ncons), 0,
              "count");
    g16_check(s, b.test, "producer: drain barriers", (double)pd.count, (double)n, 0, "count");
    g16_check(s, b.test, "consumer: drain barriers", (double)cd.count, (double)(n * ncons), 0,
              "count");
    check_own(s, b.test, "produce", pp, own_of(log, G16_ROLE_WARPS, 0, 0, 0, 1, G16_ROLE_ITERS), n,
              G16_PRODUCE_NS);
    check_own(s, b.test, "consume", cc,
              own_of(log, G16_ROLE_WARPS, 1, G16_ROLE_WARPS - 1, 0, 1, G16_ROLE_ITERS), n * ncons,
              G16_CONSUME_NS);
    /* Each role waits at a barrier for the other's work: the consumers'
     * handoff lasts as long as produce, the producer's drain as long as
     * consume (within 2% of one iteration). */
    double iter = (double)G16_PRODUCE_NS + G16_CONSUME_NS;
    g16_check(s, b.test, "consumer handoff wait vs produce time", ch.mean_ns, pp.mean_ns,
              G16_REL_TOL * iter, "ns");
    g16_check(s, b.test, "producer drain wait vs consume time", pd.mean_ns, cc.mean_ns,
              G16_REL_TOL * iter, "ns");
    g16_info(s, b.test, "producer handoff mean time", ph.mean_ns, "ns");
    g16_info(s, b.test, "consumer drain mean time", cd.mean_ns, "ns");
    close_buf(&b);
    return 0;
}

int g16_check_overhead(const void *raw, size_t len, const char *test, double *mean_ns,
                       g16_sink *s, char *msg, size_t msglen)
{
    g16_buf b;
    int rc = new_buf(&b, test);
    if (rc == 0)
        rc = reg_add(&b, "body", 0, 0, NULL, msg, msglen);
    uint64_t warps = (uint64_t)G16_OVH_CTAS * (G16_OVH_THREADS / 32);
    if (rc == 0)
        rc = open_buf(&b, raw, len, warps, s, msg, msglen);
    if (rc != 0) {
        argus_registry_free(b.reg);
        return rc;
    }
    argus_region_stats r = stats_all(&b, "body");
    g16_check(s, b.test, "body occurrences", (double)r.count, (double)(warps * G16_OVH_REGIONS),
              0, "count");
    g16_info(s, b.test, "body mean time", r.mean_ns, "ns");
    if (mean_ns)
        *mean_ns = r.mean_ns;
    close_buf(&b);
    return 0;
}
