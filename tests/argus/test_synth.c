/*
 * The synthesis rules (include/argus/synth.h) on evidence written in the
 * test, with answers worked out by hand:
 *   - pc_attribute: the calls kernel's shape (a __noinline__ function
 *     `work` at PCs 0x400-0x430 executed 3072 times per PC under
 *     callA/work and 1024 under callB/work, tests/argus/fixtures/discover/
 *     attrib_calls.*) as pc_sampling and sass_metrics evidence: the 3:1
 *     split exact, a stall reason's share and threads per instruction
 *     lifted as numerator and denominator, the entropy of each work PC;
 *   - probe_latency: region buffers from the device model, the probe run
 *     with every warp's load at iteration 4 taking 250 cycles more and
 *     anchors a second later than the base run: the latency is 250 cycles
 *     at iteration 4 (joined iteration to iteration, not by time);
 *   - kernel_stats and metric_per_kernel passed through with their marks;
 *   - bad input: evidence missing (a crashed run), from a non-matching
 *     variant or backend, not JSON, unavailable, bad base64; a probe of
 *     another base variant; an unknown rule.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "argus/discover.h"
#include "argus/synth.h"
#include "devmodel.h"

#define assert_near(got, want, eps)                                                                \
    do {                                                                                           \
        double got_ = (got), want_ = (want);                                                       \
        if (!(fabs(got_ - want_) <= (eps)))                                                        \
            fail_msg("%s = %.17g, want %.17g (within %g)", #got, got_, want_, (double)(eps));      \
    } while (0)

/* -(3/4 log2 3/4 + 1/4 log2 1/4) = 0.75 * 0.415037 + 0.25 * 2 bits. */
#define H_3_1 0.8112781244591328

static const char *VAR = "calls+markers_on";

/* ---- building evidence ------------------------------------------------------ */

static cJSON *ev_new(const char *backend, const char *variant)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "schema", "argus.evidence");
    cJSON_AddNumberToObject(o, "version", 1);
    cJSON_AddStringToObject(o, "backend", backend);
    cJSON_AddStringToObject(o, "variant", variant);
    cJSON_AddStringToObject(o, "status", "ok");
    return o;
}

static char *ev_text(cJSON *o)
{
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return t;
}

static void map_add(cJSON *map, unsigned pc, const char *region, double count)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "function", "g16_calls");
    cJSON_AddNumberToObject(e, "pc", pc);
    cJSON_AddStringToObject(e, "region", region);
    cJSON_AddNumberToObject(e, "count", count);
    cJSON_AddItemToArray(map, e);
}

/* The PC-to-region map of attrib_calls.exec.tsv. */
static char *map_evidence(const char *variant)
{
    cJSON *o = ev_new("sanitizer_patch", variant);
    cJSON *map = cJSON_AddArrayToObject(o, "map");
    map_add(map, 0x100, "callA", 1024);
    map_add(map, 0x110, "callA", 1024);
    map_add(map, 0x200, "callB", 1024);
    map_add(map, 0x210, "callB", 1024);
    for (unsigned pc = 0x400; pc <= 0x430; pc += 0x10) {
        map_add(map, pc, "callA/work", 3072);
        map_add(map, pc, "callB/work", 1024);
    }
    map_add(map, 0x500, "", 128);
    return ev_text(o);
}

/* PC samples of attrib_calls.metrics.tsv: stall reason 0 is long
 * scoreboard (300 of 0x410's 800 samples), 1 "selected" (the rest). */
static char *samples_evidence(void)
{
    cJSON *o = ev_new("pc_sampling", VAR);
    cJSON *names = cJSON_AddArrayToObject(o, "stall_reasons");
    cJSON_AddItemToArray(names, cJSON_CreateString("long_scoreboard"));
    cJSON_AddItemToArray(names, cJSON_CreateString("selected"));
    cJSON *pcs = cJSON_AddArrayToObject(o, "pcs");
    static const unsigned pc[] = {0x100, 0x110, 0x200, 0x210, 0x400, 0x410, 0x420, 0x430, 0x500, 0x600};
    static const int n[] = {40, 20, 12, 8, 400, 800, 200, 600, 4, 16};
    for (int i = 0; i < 10; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "function", "g16_calls");
        cJSON_AddNumberToObject(e, "pc", pc[i]);
        cJSON *st = cJSON_AddArrayToObject(e, "stall");
        int ls = pc[i] == 0x410 ? 300 : 0;
        if (ls) {
            int p0[2] = {0, ls};
            cJSON_AddItemToArray(st, cJSON_CreateIntArray(p0, 2));
        }
        int p1[2] = {1, n[i] - ls};
        cJSON_AddItemToArray(st, cJSON_CreateIntArray(p1, 2));
        cJSON_AddItemToArray(pcs, e);
    }
    return ev_text(o);
}

/* SASS counts: instructions of attrib_calls.metrics.tsv, and thread
 * instructions 32 per instruction outside work, 16 inside (half the lanes
 * active); the ratio threads per instruction declared. */
static char *sass_evidence(void)
{
    cJSON *o = ev_new("sass_metrics", VAR);
    cJSON *pcs = cJSON_AddArrayToObject(o, "pcs");
    static const unsigned pc[] = {0x100, 0x110, 0x200, 0x210, 0x400, 0x410, 0x420, 0x430, 0x500};
    static const double n[] = {1024, 1024, 1024, 1024, 4096, 8192, 4096, 2048, 128};
    for (int i = 0; i < 9; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "function", "g16_calls");
        cJSON_AddNumberToObject(e, "pc", pc[i]);
        cJSON *v = cJSON_AddObjectToObject(e, "values");
        cJSON_AddNumberToObject(v, "inst", n[i]);
        cJSON_AddNumberToObject(v, "thread_inst", n[i] * (pc[i] >= 0x400 && pc[i] < 0x500 ? 16 : 32));
        cJSON_AddItemToArray(pcs, e);
    }
    cJSON *rs = cJSON_AddArrayToObject(o, "ratios");
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "name", "threads_per_inst");
    cJSON_AddStringToObject(r, "numerator", "thread_inst");
    cJSON_AddStringToObject(r, "denominator", "inst");
    cJSON_AddItemToArray(rs, r);
    return ev_text(o);
}

static argus_synth_input ev_input(const char *task, const char *rt, const char *backend,
                                  const char *variant, const char *text)
{
    argus_synth_input in = {.kind = ARGUS_SYNTH_IN_EVIDENCE,
                            .task = task,
                            .rt_id = rt,
                            .output = "e1",
                            .object = text ? "0123abcd" : NULL,
                            .backend = backend,
                            .variant = variant,
                            .data = text,
                            .len = text ? strlen(text) : 0};
    return in;
}

/* ---- reading results ------------------------------------------------------- */

static cJSON *run(const char *rule, uint64_t op, int64_t iter, const argus_registry *reg,
                  const argus_synth_input *in, size_t nin, int want_complete)
{
    argus_synth_req r = {.task = "synthesize:test", .rule = rule, .signal = "s", .op = op,
                         .iter = iter, .reg = reg, .in = in, .nin = nin};
    argus_scope_all(&r.scope);
    argus_synth_out out;
    char msg[512] = "";
    int rc = argus_synth_run(&r, &out, msg, sizeof msg);
    if (rc != 0)
        fail_msg("argus_synth_run %s: %s", rule, msg);
    if (out.complete != want_complete)
        fail_msg("%s: complete %d, want %d: %s\n%s", rule, out.complete, want_complete,
                 out.first_problem, out.json);
    cJSON *o = cJSON_Parse(out.json);
    assert_non_null(o);
    assert_string_equal(cJSON_GetObjectItem(o, "schema")->valuestring, "argus.synthesis");
    assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(o, "complete")), want_complete);
    argus_synth_out_free(&out);
    return o;
}

/* A region of function 0's attribution. */
static const cJSON *region(const cJSON *res, const char *path)
{
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "results"),
                                                            "functions"),
                                        0);
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(f, "regions"))
    if (strcmp(cJSON_GetObjectItem(g, "path")->valuestring, path) == 0)
        return g;
    fail_msg("no region %s", path);
    return NULL;
}

/* A number {value, unit, mark, from}: its value, after checking mark. */
static double val(const cJSON *o, const char *key, const char *mark)
{
    const cJSON *n = cJSON_GetObjectItem(o, key);
    if (n == NULL)
        fail_msg("no number %s", key);
    assert_string_equal(cJSON_GetObjectItem(n, "mark")->valuestring, mark);
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(n, "from")));
    const cJSON *v = cJSON_GetObjectItem(n, "value");
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const cJSON *obj(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItem(o, key);
    if (x == NULL)
        fail_msg("no %s", key);
    return x;
}

/* ---- pc_attribute ----------------------------------------------------------- */

static void test_attribute_samples(void **state)
{
    (void)state;
    char *map = map_evidence(VAR), *smp = samples_evidence();
    argus_synth_input in[] = {
        ev_input("collect:pc_region_map@v1", "run2", "sanitizer_patch", VAR, map),
        ev_input("collect:pc_samples@v1", "run1", "pc_sampling", VAR, smp)};
    cJSON *o = run("pc_attribute", 0, -1, NULL, in, 2, 1);
    const cJSON *a = region(o, "callA/work"), *b = region(o, "callB/work");
    const cJSON *ca = region(o, "callA"), *cb = region(o, "callB");
    /* work's 2000 samples split 3:1. */
    assert_near(val(obj(a, "self"), "samples", "attributed"), 1500, 0);
    assert_near(val(obj(b, "self"), "samples", "attributed"), 500, 0);
    assert_near(val(obj(ca, "self"), "samples", "attributed"), 60, 0);
    assert_near(val(obj(ca, "inclusive"), "samples", "attributed"), 1560, 0);
    assert_near(val(obj(cb, "inclusive"), "samples", "attributed"), 520, 0);
    /* 0x410's 300 long-scoreboard samples: 225 and 75. */
    assert_near(val(obj(a, "self"), "stall:long_scoreboard", "attributed"), 225, 0);
    assert_near(val(obj(b, "self"), "stall:long_scoreboard", "attributed"), 75, 0);
    /* The reason's share: 225 / 1500 under callA/work, 225 / 1560 for callA
     * inclusive: the quotient of attributed sums (derived). */
    const cJSON *q = obj(obj(a, "ratios"), "stall:long_scoreboard/samples");
    assert_near(val(q, "numerator", "attributed"), 225, 0);
    assert_near(val(q, "denominator", "attributed"), 1500, 0);
    assert_near(val(q, "value", "derived"), 0.15, 1e-15);
    q = obj(obj(ca, "ratios"), "stall:long_scoreboard/samples");
    assert_near(val(q, "value", "derived"), 225.0 / 1560.0, 1e-15);
    /* Per PC: observed executions and the entropy (derived). */
    const cJSON *f = cJSON_GetArrayItem(obj(obj(o, "results"), "functions"), 0);
    const cJSON *p;
    int seen = 0;
    cJSON_ArrayForEach(p, obj(f, "pcs"))
    {
        double pc = cJSON_GetObjectItem(p, "pc")->valuedouble;
        double h = val(p, "entropy", "derived");
        if (pc >= 0x400 && pc <= 0x430) {
            assert_near(h, H_3_1, 1e-12);
            assert_near(val(p, "executions", "observed"), 4096, 0);
            seen++;
        } else {
            assert_near(h, 0, 0);
        }
    }
    assert_int_equal(seen, 4);
    /* 0x600 is not in the map: 16 samples unmapped, 2100 in all. */
    assert_near(val(obj(f, "unmapped"), "samples", "observed"), 16, 0);
    assert_near(val(obj(f, "total"), "samples", "observed"), 2100, 0);
    /* Every number names its inputs: the shares both runs. */
    const cJSON *from = cJSON_GetObjectItem(obj(obj(a, "self"), "samples"), "from");
    assert_int_equal(cJSON_GetArraySize(from), 2);
    const cJSON *ins = obj(o, "inputs");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ins, 0), "rt_id")->valuestring,
                        "run2");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ins, 1), "state")->valuestring,
                        "used");
    cJSON_Delete(o);
    cJSON_free(map);
    cJSON_free(smp);
}

static void test_attribute_sass_ratio(void **state)
{
    (void)state;
    char *map = map_evidence(VAR), *sass = sass_evidence();
    argus_synth_input in[] = {
        ev_input("collect:pc_region_map@v1", "run2", "sanitizer_patch", VAR, map),
        ev_input("collect:sass_counts@v1", "run3", "sass_metrics", VAR, sass)};
    cJSON *o = run("pc_attribute", 0, -1, NULL, in, 2, 1);
    const cJSON *a = region(o, "callA/work"), *ca = region(o, "callA");
    /* work's 18432 instructions: 13824 and 4608. */
    assert_near(val(obj(a, "self"), "inst", "attributed"), 13824, 0);
    assert_near(val(obj(region(o, "callB/work"), "self"), "inst", "attributed"), 4608, 0);
    /* Threads per instruction: 16 in work; callA inclusive (2048 x 32 +
     * 13824 x 16) / (2048 + 13824) = 286720 / 15872, not the mean of its
     * PCs' ratios. */
    assert_near(val(obj(obj(a, "ratios"), "threads_per_inst"), "value", "derived"), 16, 1e-15);
    const cJSON *q = obj(obj(ca, "ratios"), "threads_per_inst");
    assert_near(val(q, "numerator", "attributed"), 286720, 0);
    assert_near(val(q, "denominator", "attributed"), 15872, 0);
    assert_near(val(q, "value", "derived"), 286720.0 / 15872.0, 1e-12);
    cJSON_Delete(o);
    cJSON_free(map);
    cJSON_free(sass);
}

/* ---- probe_latency ------------------------------------------------------------ */

static char *b64(const unsigned char *p, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *s = malloc(n / 3 * 4 + 8), *o = s;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *o++ = a[w >> 18 & 63];
        *o++ = a[w >> 12 & 63];
        *o++ = i + 1 < n ? a[w >> 6 & 63] : '=';
        *o++ = i + 2 < n ? a[w & 63] : '=';
    }
    *o = '\0';
    return s;
}

static uint32_t R_MAIN, R_LOAD;

/* 1 CTA x 2 warps, 6 iterations of mainloop/load: warp w's load takes
 * 500 + 100 w cycles (+ extra at iteration probe_iter); anchors at gt0. */
static char *trace_evidence(const char *variant, long probe_iter, unsigned extra, uint64_t gt0,
                            const char *raw_override)
{
    dm_buf b;
    assert_int_equal(dm_init(&b, 1, 64, 64), 0);
    for (uint32_t wi = 0; wi < 2; wi++) {
        dm_warp w;
        dm_begin(&w, &b, 0, wi, 1, gt0, 77777 + gt0 * 3, 1.98);
        dm_emit(&w, ARGUS_REC_BEGIN, R_MAIN, 2);
        for (uint32_t s = 0; s < 6; s++) {
            dm_emit(&w, ARGUS_REC_ITER, s, 2);
            dm_emit(&w, ARGUS_REC_BEGIN, R_LOAD, 2);
            dm_emit(&w, ARGUS_REC_END, R_LOAD, 500 + 100 * wi + ((long)s == probe_iter ? extra : 0));
        }
        dm_emit(&w, ARGUS_REC_END, R_MAIN, 2);
        dm_end(&w, 4);
    }
    char *raw = b64(b.p, b.len);
    free(b.p);
    cJSON *o = ev_new("region_runtime", variant);
    cJSON *ls = cJSON_AddArrayToObject(o, "launches");
    cJSON *l = cJSON_CreateObject();
    cJSON_AddStringToObject(l, "kernel", "k");
    cJSON_AddStringToObject(l, "raw_base64", raw_override ? raw_override : raw);
    cJSON_AddNumberToObject(l, "clock_ghz", 1.98);
    cJSON_AddItemToArray(ls, l);
    free(raw);
    return ev_text(o);
}

static argus_registry *make_reg(void)
{
    argus_registry *reg;
    char msg[256];
    assert_int_equal(argus_registry_new(&reg), 0);
    assert_int_equal(argus_registry_add(reg, "mainloop", 0, 0, &R_MAIN, msg, sizeof msg), 0);
    assert_int_equal(argus_registry_add(reg, "load", R_MAIN, 0, &R_LOAD, msg, sizeof msg), 0);
    return reg;
}

/* A branch result of the probe of op at iteration it, 250 cycles more. */
static char *branch(const argus_registry *reg, uint64_t op, long it, const char *variant,
                    unsigned extra, int want_complete)
{
    char *ev = trace_evidence(variant, it, extra, 1000000000000ull, NULL);
    argus_synth_input in = ev_input("collect:probe_trace@v2", "run3", "region_runtime", variant, ev);
    cJSON *o = run("probe_latency", op, it, reg, &in, 1, want_complete);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    cJSON_free(ev);
    return t;
}

static void test_probe_latency(void **state)
{
    (void)state;
    argus_registry *reg = make_reg();
    uint64_t op = ARGUS_OP_ID(R_LOAD, 1);
    char opb[32];
    argus_op_id_format(op, opb, sizeof opb);
    char v4[128], v2[128];
    snprintf(v4, sizeof v4, "%s+probe(op=%s,iter=4)", VAR, opb);
    snprintf(v2, sizeof v2, "%s+probe(op=%s,iter=2)", VAR, opb);
    char *b4 = branch(reg, op, 4, v4, 250, 1), *b2 = branch(reg, op, 2, v2, 40, 1);
    /* The branch: the probe's mean load at iteration 4, (750 + 850) / 2. */
    cJSON *bo = cJSON_Parse(b4);
    assert_near(val(obj(obj(bo, "results"), "probe"), "mean_cycles", "derived"), 800, 0);
    assert_near(val(obj(obj(bo, "results"), "probe"), "count", "observed"), 2, 0);
    cJSON_Delete(bo);
    char *base = trace_evidence(VAR, -1, 0, 5000, NULL);
    argus_synth_input in[] = {
        ev_input("collect:region_trace@v1", "run0", "region_runtime", VAR, base),
        {.kind = ARGUS_SYNTH_IN_OPS, .task = "control:discover_async_ops@v1", .rt_id = "t4",
         .output = "ops", .data = "[]", .len = 2, .object = "aa"},
        {.kind = ARGUS_SYNTH_IN_RESULT, .task = "synthesize:probe_latency(4)", .rt_id = "t9",
         .output = "synthesis", .data = b4, .len = strlen(b4), .object = "bb"},
        {.kind = ARGUS_SYNTH_IN_RESULT, .task = "synthesize:probe_latency(2)", .rt_id = "t12",
         .output = "synthesis", .data = b2, .len = strlen(b2), .object = "cc"}};
    cJSON *o = run("probe_latency", 0, -1, reg, in, 4, 1);
    const cJSON *lat = obj(obj(o, "results"), "latencies");
    assert_int_equal(cJSON_GetArraySize(lat), 2);
    for (int k = 0; k < 2; k++) {
        const cJSON *l = cJSON_GetArrayItem(lat, k);
        int it = (int)cJSON_GetObjectItem(l, "iter")->valuedouble;
        assert_string_equal(cJSON_GetObjectItem(l, "region")->valuestring, "load");
        assert_string_equal(cJSON_GetObjectItem(l, "op")->valuestring, opb);
        /* Base mean at any iteration: (500 + 600) / 2 = 550. */
        assert_near(val(l, "base_cycles", "derived"), 550, 0);
        assert_near(val(l, "latency_cycles", "derived"), it == 4 ? 250 : 40, 0);
        assert_near(val(l, "latency_ns", "derived"), (it == 4 ? 250 : 40) / 1.98, 1e-9);
        const cJSON *from = cJSON_GetObjectItem(cJSON_GetObjectItem(l, "latency_cycles"), "from");
        assert_int_equal(cJSON_GetArraySize(from), 2);
        assert_int_equal((int)cJSON_GetArrayItem(from, 0)->valuedouble, 0);
    }
    /* The branch's own inputs are carried, naming the probe run. */
    const cJSON *bin = obj(cJSON_GetArrayItem(obj(o, "inputs"), 2), "inputs");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(bin, 0), "rt_id")->valuestring,
                        "run3");
    cJSON_Delete(o);

    /* A probe made from another variant, and one branch missing: refused
     * or said; the good branch keeps its number. */
    char vo[128];
    snprintf(vo, sizeof vo, "other+markers_on+probe(op=%s,iter=2)", opb);
    char *bx = branch(reg, op, 2, vo, 40, 1);
    in[3].data = bx;
    in[3].len = strlen(bx);
    argus_synth_input in5[5];
    memcpy(in5, in, sizeof in);
    in5[4] = (argus_synth_input){.kind = ARGUS_SYNTH_IN_RESULT,
                                 .task = "synthesize:probe_latency(5)",
                                 .rt_id = "t15",
                                 .output = "synthesis",
                                 .missing = "not run: task 'run7' it depends on failed"};
    o = run("probe_latency", 0, -1, reg, in5, 5, 0);
    lat = obj(obj(o, "results"), "latencies");
    assert_int_equal(cJSON_GetArraySize(lat), 1);
    assert_near(val(cJSON_GetArrayItem(lat, 0), "latency_cycles", "derived"), 250, 0);
    char *text = cJSON_PrintUnformatted(obj(o, "problems"));
    assert_non_null(strstr(text, "\"task\":\"synthesize:probe_latency(2)\""));
    assert_non_null(strstr(text, "is not made from the base variant \\\"calls+markers_on\\\""));
    assert_non_null(strstr(text, "t15 did not succeed (not run: task 'run7' it depends on failed)"));
    cJSON_free(text);
    cJSON_Delete(o);

    /* The base run without iteration 7: no join, said. */
    char v7[128];
    snprintf(v7, sizeof v7, "%s+probe(op=%s,iter=7)", VAR, opb);
    char *b7 = branch(reg, op, 7, v7, 40, 0); /* the probe run has no iteration 7 either */
    in[3].data = b7;
    in[3].len = strlen(b7);
    o = run("probe_latency", 0, -1, reg, in, 4, 0);
    text = cJSON_PrintUnformatted(obj(o, "problems"));
    assert_non_null(strstr(text, "the base run has no timed occurrence of region load at iteration 7"));
    cJSON_free(text);
    cJSON_Delete(o);
    free(b4);
    free(b2);
    free(bx);
    free(b7);
    cJSON_free(base);
    argus_registry_free(reg);
}

static void test_region_stats(void **state)
{
    (void)state;
    argus_registry *reg = make_reg();
    char *base = trace_evidence(VAR, -1, 0, 5000, NULL);
    argus_synth_input in = ev_input("collect:region_trace@v1", "run0", "region_runtime", VAR, base);
    argus_synth_req r = {.task = "t", .rule = "region_stats", .reg = reg, .in = &in, .nin = 1};
    argus_scope_all(&r.scope);
    r.scope.iter_lo = 1;
    r.scope.iter_hi = 2;
    argus_synth_out out;
    char msg[256];
    assert_int_equal(argus_synth_run(&r, &out, msg, sizeof msg), 0);
    assert_true(out.complete);
    cJSON *o = cJSON_Parse(out.json);
    const cJSON *L = cJSON_GetArrayItem(obj(obj(o, "results"), "launches"), 0);
    const cJSON *g = cJSON_GetArrayItem(obj(L, "regions"), 0);
    assert_string_equal(cJSON_GetObjectItem(g, "path")->valuestring, "mainloop/load");
    assert_near(val(g, "count", "observed"), 4, 0);
    assert_near(val(g, "total_cycles", "observed"), 2 * (500 + 600), 0);
    assert_near(val(g, "mean", "derived"), 550 / 1.98, 1e-9);
    const cJSON *it = cJSON_GetArrayItem(obj(L, "iterations"), 1);
    assert_near(cJSON_GetObjectItem(it, "iter")->valuedouble, 2, 0);
    assert_near(val(cJSON_GetArrayItem(obj(it, "regions"), 0), "mean_cycles", "derived"), 550, 0);
    cJSON_Delete(o);
    argus_synth_out_free(&out);
    cJSON_free(base);
    argus_registry_free(reg);
}

/* ---- passed through ------------------------------------------------------------ */

static void test_pass_through(void **state)
{
    (void)state;
    cJSON *e = ev_new("cupti_activity", "cp");
    cJSON *rep = cJSON_AddObjectToObject(e, "report");
    cJSON_AddStringToObject(rep, "schema", "argus.report");
    cJSON_AddNumberToObject(rep, "version", 1);
    const char *regs = "[{\"kind\":\"kernel\",\"name\":\"k\",\"path\":\"step/k\","
                       "\"count\":{\"value\":3,\"unit\":\"kernels\",\"mark\":\"observed\"},"
                       "\"time\":{\"mean\":{\"value\":21800,\"unit\":\"ns\",\"mark\":\"derived\"},"
                       "\"p99\":{\"value\":22100,\"unit\":\"ns\",\"mark\":\"observed\"}}},"
                       "{\"kind\":\"nvtx_range\",\"name\":\"step\",\"path\":\"step\"}]";
    cJSON_AddItemToObject(rep, "regions", cJSON_Parse(regs));
    char *t = ev_text(e);
    argus_synth_input in = ev_input("collect:kernel_activity@v0", "run0", "cupti_activity", "cp", t);
    cJSON *o = run("kernel_stats", 0, -1, NULL, &in, 1, 1);
    const cJSON *ks = obj(obj(o, "results"), "kernels");
    assert_int_equal(cJSON_GetArraySize(ks), 1);
    const cJSON *k = cJSON_GetArrayItem(ks, 0);
    assert_near(val(k, "count", "observed"), 3, 0);
    assert_near(val(k, "mean", "derived"), 21800, 0);
    assert_near(val(k, "p99", "observed"), 22100, 0);
    cJSON_Delete(o);
    cJSON_free(t);

    e = ev_new("range_profiler", "cp");
    cJSON_AddItemToObject(e, "kernels",
                          cJSON_Parse("[{\"name\":\"k\",\"launch\":0,\"metrics\":{"
                                      "\"dram__bytes_read.sum\":{\"value\":1.5e6,\"unit\":\"byte\"}}}]"));
    t = ev_text(e);
    in = ev_input("collect:kernel_counters@v0", "run1", "range_profiler", "cp", t);
    o = run("metric_per_kernel", 0, -1, NULL, &in, 1, 1);
    k = cJSON_GetArrayItem(obj(obj(o, "results"), "kernels"), 0);
    assert_near(val(obj(k, "metrics"), "dram__bytes_read.sum", "observed"), 1.5e6, 0);
    cJSON_Delete(o);
    cJSON_free(t);
}

/* ---- bad input ------------------------------------------------------------------- */

static void expect_problem(const char *rule, const argus_synth_input *in, size_t nin,
                           const char *want)
{
    argus_synth_req r = {.task = "synthesize:x", .rule = rule, .in = in, .nin = nin};
    argus_scope_all(&r.scope);
    argus_synth_out out;
    char msg[256];
    assert_int_equal(argus_synth_run(&r, &out, msg, sizeof msg), 0);
    assert_false(out.complete);
    if (strstr(out.json, want) == NULL)
        fail_msg("%s: want \"%s\" in %s", rule, want, out.json);
    argus_synth_out_free(&out);
}

static void test_bad_evidence(void **state)
{
    (void)state;
    char *map = map_evidence(VAR), *smp = samples_evidence();
    char *other = map_evidence("calls+markers_on+probe(op=0x1.0,iter=0)");
    argus_synth_input in[2] = {
        ev_input("collect:pc_region_map@v1", "run2", "sanitizer_patch", VAR, other),
        ev_input("collect:pc_samples@v1", "run1", "pc_sampling", VAR, smp)};
    /* Evidence from a non-matching variant: refused, named. */
    expect_problem("pc_attribute", in, 2, "non-matching variant");
    expect_problem("pc_attribute", in, 2, "\"task\":\"collect:pc_region_map@v1\"");
    /* Of another backend. */
    in[0] = ev_input("collect:pc_region_map@v1", "run2", "sanitizer_patch", VAR, smp);
    expect_problem("pc_attribute", in, 2, "evidence of backend \\\"pc_sampling\\\" where the run "
                                          "was asked for sanitizer_patch");
    /* Missing: the run crashed. */
    in[0] = ev_input("collect:pc_region_map@v1", "run2", "sanitizer_patch", VAR, NULL);
    in[0].missing = "worker was killed by signal 11 (Segmentation fault)";
    expect_problem("pc_attribute", in, 2, "run2 did not succeed (worker was killed by signal 11");
    /* Not JSON; not evidence; unavailable. */
    in[0] = ev_input("collect:pc_region_map@v1", "run2", "sanitizer_patch", VAR, "{\"a\":1,}");
    expect_problem("pc_attribute", in, 2, "not JSON");
    in[0] = ev_input("collect:pc_region_map@v1", "run2", "sanitizer_patch", VAR,
                     "{\"schema\":\"argus.report\",\"version\":1}");
    expect_problem("pc_attribute", in, 2, "schema \\\"argus.report\\\" version 1, not argus.evidence");
    in[0] = ev_input("collect:pc_region_map@v1", "run2", "sanitizer_patch", VAR,
                     "{\"schema\":\"argus.evidence\",\"version\":1,\"backend\":\"sanitizer_patch\","
                     "\"variant\":\"calls+markers_on\",\"status\":\"unavailable\","
                     "\"why\":\"the driver refuses the patching API\"}");
    expect_problem("pc_attribute", in, 2, "sanitizer_patch evidence unavailable: the driver refuses");
    /* A region buffer that is not base64, or not a buffer. */
    argus_registry *reg = make_reg();
    char *bad = trace_evidence(VAR, -1, 0, 5000, "AAAA*AAA");
    argus_synth_input t = ev_input("collect:region_trace@v1", "run0", "region_runtime", VAR, bad);
    expect_problem("region_stats", &t, 1, "raw_base64: base64: character 4 (0x2a)");
    cJSON_free(bad);
    bad = trace_evidence(VAR, -1, 0, 5000, "AAAAAAAA");
    t = ev_input("collect:region_trace@v1", "run0", "region_runtime", VAR, bad);
    expect_problem("region_stats", &t, 1, "the region buffer does not decode");
    cJSON_free(bad);
    /* Nothing to work on at all. */
    expect_problem("kernel_stats", NULL, 0, "no cupti_activity evidence among the inputs");
    /* An unknown rule is a bad request, not a result. */
    argus_synth_req r = {.task = "x", .rule = "region_stat"};
    argus_synth_out out;
    char msg[256];
    assert_int_equal(argus_synth_run(&r, &out, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "unknown rule \"region_stat\""));
    argus_registry_free(reg);
    cJSON_free(map);
    cJSON_free(smp);
    cJSON_free(other);
}

static void test_base64(void **state)
{
    (void)state;
    unsigned char *o;
    size_t n;
    char msg[256];
    assert_int_equal(argus_base64_decode("TWFu", 4, &o, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 3);
    assert_memory_equal(o, "Man", 3);
    free(o);
    assert_int_equal(argus_base64_decode("TWE=", 4, &o, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 2);
    assert_memory_equal(o, "Ma", 2);
    free(o);
    assert_int_equal(argus_base64_decode("TQ==", 4, &o, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 1);
    assert_memory_equal(o, "M", 1);
    free(o);
    assert_int_equal(argus_base64_decode("", 0, &o, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 0);
    free(o);
    assert_int_equal(argus_base64_decode("TWF", 3, &o, &n, msg, sizeof msg), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "not a multiple of 4"));
    assert_int_equal(argus_base64_decode("TQ==TWFu", 8, &o, &n, msg, sizeof msg), ARGUS_EFORMAT);
    assert_int_equal(argus_base64_decode("T=Fu", 4, &o, &n, msg, sizeof msg), ARGUS_EFORMAT);
    assert_int_equal(argus_base64_decode("TQ=u", 4, &o, &n, msg, sizeof msg), ARGUS_EFORMAT);
    /* Every byte value through the test's own encoder and back. */
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    for (size_t len = 250; len <= 256; len++) {
        char *e = b64(all, len);
        assert_int_equal(argus_base64_decode(e, strlen(e), &o, &n, msg, sizeof msg), 0);
        assert_int_equal(n, len);
        assert_memory_equal(o, all, len);
        free(o);
        free(e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attribute_samples), cmocka_unit_test(test_attribute_sass_ratio),
        cmocka_unit_test(test_probe_latency),     cmocka_unit_test(test_region_stats),
        cmocka_unit_test(test_pass_through),      cmocka_unit_test(test_bad_evidence),
        cmocka_unit_test(test_base64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
