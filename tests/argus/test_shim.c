/*
 * argus-shim's region building (profiler/argus/shim_build.c) and its
 * recording reader (shim_input.c) on recorded inputs: tests/argus/shim/
 * basic.jsonl holds nested and crossing ranges, ranges of two threads, a
 * kernel outside every range, a range never closed, an unknown correlation
 * ID, a launch with no kernel and a pop with no push. Every number below
 * was worked out by hand from that file (its timestamps are round), not
 * read back from the code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "argus/shim.h"

#define FIXTURE ARGUS_SRC_DIR "/shim/basic.jsonl"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 16);
    assert_non_null(buf);
    *len = fread(buf, 1, (1 << 16) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

typedef struct want_region {
    const char *path;
    int kind;
    uint64_t count, partial;
    double total_ns;
} want_region;

static const argus_region_stats *find(const argus_shim_result *r, argus_region_stats *st, size_t n,
                                      const char *path)
{
    for (size_t i = 0; i < n; i++) {
        char p[512];
        assert_int_equal(argus_node_path(&r->trace, r->reg, st[i].node, p, sizeof(p)), 0);
        if (strcmp(p, path) == 0)
            return &st[i];
    }
    return NULL;
}

static void build_fixture(argus_shim_input *in, argus_shim_result *r)
{
    char msg[512] = "";
    int truncated = -1;
    assert_int_equal(argus_shim_input_load(FIXTURE, in, &truncated, msg, sizeof(msg)), 0);
    assert_int_equal(truncated, 0);
    assert_int_equal(in->nev, 22);
    assert_int_equal(in->cupti, ARGUS_SHIM_CUPTI_OK);
    assert_string_equal(in->command, "./train --steps 1");
    assert_int_equal(in->nunavailable, 1);
    assert_string_equal(in->unavailable[0].what, "pc_sampling");
    assert_int_equal(argus_shim_build(in, r, msg, sizeof(msg)), 0);
}

static void test_regions_exact(void **state)
{
    (void)state;
    argus_shim_input in;
    argus_shim_result r;
    build_fixture(&in, &r);
    assert_int_equal(r.nthreads, 2);
    assert_int_equal(r.nstreams, 2);
    assert_int_equal(r.ranges, 5);
    assert_int_equal(r.kernels, 6);
    assert_int_equal(r.kernels_in_ranges, 4);
    assert_int_equal(r.kernels_outside, 1);
    assert_int_equal(r.kernels_unknown, 1);
    assert_int_equal(r.launches_without_kernel, 1);
    /* Span: the first range begin (1000) to the last kernel end (2300). */
    assert_int_equal(r.trace.gt_min, 1000);
    assert_int_equal(r.trace.gt_max, 2300);

    const want_region want[] = {
        {"step", ARGUS_SHIM_NODE_RANGE, 1, 0, 600},
        {"step/forward", ARGUS_SHIM_NODE_RANGE, 1, 0, 200},
        {"step/forward/gemm", ARGUS_SHIM_NODE_KERNEL, 1, 0, 200},
        {"step/prefetch", ARGUS_SHIM_NODE_STARTEND, 1, 0, 300},
        {"step/prefetch/copy", ARGUS_SHIM_NODE_KERNEL, 1, 0, 100},
        {"gemm", ARGUS_SHIM_NODE_KERNEL, 1, 0, 100},
        {"never", ARGUS_SHIM_NODE_RANGE, 1, 1, 0},
        {"never/gemm", ARGUS_SHIM_NODE_KERNEL, 1, 0, 100},
        {"loader", ARGUS_SHIM_NODE_RANGE, 1, 0, 400},
        {"loader/decode", ARGUS_SHIM_NODE_KERNEL, 1, 0, 100},
        {ARGUS_SHIM_UNKNOWN_LAUNCH "/mystery", ARGUS_SHIM_NODE_KERNEL, 1, 0, 100},
    };
    argus_region_stats *st;
    size_t n;
    assert_int_equal(argus_stats(&r.trace, NULL, &st, &n), 0);
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++) {
        const argus_region_stats *s = find(&r, st, n, want[i].path);
        if (s == NULL)
            fail_msg("region %s missing", want[i].path);
        assert_int_equal(r.node_kind[s->node], want[i].kind);
        assert_int_equal(s->count, want[i].count);
        assert_int_equal(s->partial, want[i].partial);
        assert_true(s->total_ns == want[i].total_ns);
    }
    /* The two gemm kernels under different ranges are different regions
     * (IDs hash the parent), and step/forward/gemm's ID is record.h's. */
    const argus_region_stats *g1 = find(&r, st, n, "gemm");
    const argus_region_stats *g2 = find(&r, st, n, "step/forward/gemm");
    assert_int_not_equal(g1->region, g2->region);
    uint32_t step = argus_region_id("step", 0), fwd = argus_region_id("forward", step);
    assert_int_equal(g2->region, argus_region_id("gemm", fwd));
    assert_int_equal(g1->region, argus_region_id("gemm", 0));
    free(st);

    /* Occurrence flags and tracks: step closed while prefetch (begun later
     * on its thread) was open: overlap; prefetch crosses step's end and
     * goes to a sub-track; "never" is held open to its thread's last event
     * (the launch at 2100). */
    int seen = 0;
    for (size_t i = 0; i < r.trace.nocc; i++) {
        const argus_occurrence *o = &r.trace.occ[i];
        const char *name = argus_registry_name(r.reg, o->region);
        if (strcmp(name, "step") == 0) {
            assert_int_equal(o->flags, ARGUS_OCC_OVERLAP);
            assert_int_equal(o->track, 0);
            assert_int_equal(o->slot, 0);
            seen++;
        } else if (strcmp(name, "prefetch") == 0) {
            assert_int_equal(o->track, 1);
            assert_int_equal(o->clk_begin, 1400);
            assert_int_equal(o->clk_end, 1700);
            seen++;
        } else if (strcmp(name, "never") == 0) {
            assert_int_equal(o->flags, ARGUS_OCC_NO_END);
            assert_int_equal(o->clk_end, 2100);
            seen++;
        } else if (strcmp(name, "loader") == 0) {
            assert_int_equal(o->slot, 1); /* thread 200, second to appear */
            seen++;
        } else if (strcmp(name, "decode") == 0 || strcmp(name, "mystery") == 0) {
            assert_int_equal(o->slot, 3); /* stream 13: its first kernel began second */
            assert_int_equal(o->sm, 1);
            seen++;
        } else if (strcmp(name, "gemm") == 0 || strcmp(name, "copy") == 0) {
            assert_int_equal(o->slot, 2);
            assert_int_equal(o->track, 0); /* one stream: kernels never overlap */
            seen++;
        }
    }
    assert_int_equal(seen, 10);

    /* Diagnostics: the pop on thread 200 (line 10), "never", the kernel of
     * correlation 99 (line 23), the launch of correlation 6 (line 17). */
    assert_int_equal(r.trace.ndiags, 4);
    int kinds[ARGUS_DIAG_COUNT] = {0};
    for (size_t i = 0; i < r.trace.ndiags; i++) {
        const argus_diag *d = &r.trace.diags[i];
        kinds[d->kind]++;
        if (d->kind == ARGUS_DIAG_END_WITHOUT_BEGIN) {
            assert_int_equal(d->slot, 1);
            assert_int_equal(d->index, 10);
        } else if (d->kind == ARGUS_DIAG_UNKNOWN_CORRELATION) {
            assert_int_equal(d->value, 99);
            assert_int_equal(d->index, 23);
        } else if (d->kind == ARGUS_DIAG_NO_KERNEL) {
            assert_int_equal(d->value, 6);
            assert_int_equal(d->index, 17);
        } else {
            assert_int_equal(d->kind, ARGUS_DIAG_NEVER_ENDED);
            assert_int_equal(d->value, argus_region_id("never", 0));
        }
    }
    assert_int_equal(kinds[ARGUS_DIAG_NEVER_ENDED], 1);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
}

static char *report_of(const char *text, size_t len)
{
    argus_shim_input in;
    argus_shim_result r;
    char msg[512] = "";
    assert_int_equal(argus_shim_input_parse("mem", text, len, &in, NULL, msg, sizeof(msg)), 0);
    assert_int_equal(argus_shim_build(&in, &r, msg, sizeof(msg)), 0);
    char *out = NULL;
    size_t olen = 0;
    FILE *f = open_memstream(&out, &olen);
    assert_non_null(f);
    assert_int_equal(argus_shim_report_json(&r, NULL, f), 0);
    assert_int_equal(argus_shim_trace_json(&r, f), 0);
    assert_int_equal(argus_shim_report_text(&r, NULL, f), 0);
    fclose(f);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
    /* Diagnostics name the recording's line ("record"), which moves with
     * the line order by design; everything else must not. */
    for (char *p = strstr(out, "\"record\":"); p; p = strstr(p, "\"record\":")) {
        char *q = p + 9;
        while (*q >= '0' && *q <= '9')
            q++;
        memmove(p, q, strlen(q) + 1);
    }
    return out;
}

static void append_line(char *buf, size_t *len, const char *line)
{
    assert_non_null(line);
    size_t n = strlen(line);
    memcpy(buf + *len, line, n);
    buf[*len + n] = '\n';
    buf[*len + n + 1] = '\0';
    *len += n + 1;
}

/* The same events with the lines in another order (the header first):
 * the outputs are byte for byte the same, but for the line numbers that
 * diagnostics cite. */
static void test_order_independent(void **state)
{
    (void)state;
    size_t len;
    char *text = slurp(FIXTURE, &len);
    char *lines[64] = {NULL};
    size_t n = 0;
    for (char *p = strtok(text, "\n"); p && n < 64; p = strtok(NULL, "\n"))
        lines[n++] = p;
    assert_int_equal(n, 24);
    char *a = malloc(len + 64), *b = malloc(len + 64);
    assert_non_null(a);
    assert_non_null(b);
    size_t la = 0, lb = 0;
    for (size_t i = 0; i < n; i++)
        append_line(a, &la, lines[i]);
    append_line(b, &lb, lines[0]);
    for (size_t i = n - 1; i >= 1; i--)
        append_line(b, &lb, lines[i]);
    char *ra = report_of(a, la), *rb = report_of(b, lb);
    assert_string_equal(ra, rb);
    /* And the check can fail: moving one timestamp changes the output. */
    char *c = strdup(a);
    char *p = strstr(c, "\"ts\":1600");
    assert_non_null(p);
    p[6] = '5';
    char *rc = report_of(c, la);
    assert_string_not_equal(ra, rc);
    free(ra);
    free(rb);
    free(rc);
    free(a);
    free(b);
    free(c);
    free(text);
}

/* The fixture with its header's t0 set to an H200-sized clock (ns since
 * 1970, beyond a double's 2^53): the same regions and times, to the ns. */
static void test_t0_exact(void **state)
{
    (void)state;
    size_t len;
    char *text = slurp(FIXTURE, &len);
    char *shifted = malloc(len + 64);
    assert_non_null(shifted);
    const char *cut = strstr(text, ",\"pid\"");
    assert_non_null(cut);
    size_t head = (size_t)(cut - text);
    memcpy(shifted, text, head);
    size_t n = head + (size_t)sprintf(shifted + head, ",\"t0\":\"1796156437637826496\"");
    memcpy(shifted + n, cut, len - head + 1);
    n += len - head;
    argus_shim_input in;
    argus_shim_result r;
    char msg[512] = "";
    assert_int_equal(argus_shim_input_parse("t0", shifted, n, &in, NULL, msg, sizeof(msg)), 0);
    assert_int_equal(argus_shim_build(&in, &r, msg, sizeof(msg)), 0);
    assert_true(r.trace.gt_min == 1796156437637826496ull + 1000);
    assert_true(r.trace.gt_max == 1796156437637826496ull + 2300);
    char *a = report_of(text, len), *b = report_of(shifted, n);
    assert_string_equal(a, b);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
    /* A bad origin. */
    const char *bad = "{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"subscribed\","
                      "\"t0\":\"18446744073709551616\"}\n";
    assert_int_equal(argus_shim_input_parse("bad", bad, strlen(bad), &in, NULL, msg, sizeof(msg)),
                     ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "t0"));
    free(a);
    free(b);
    free(shifted);
    free(text);
}

/* A recording cut mid-line (the program died while writing) keeps every
 * whole line and says the last one was dropped. */
static void test_truncated(void **state)
{
    (void)state;
    size_t len;
    char *text = slurp(FIXTURE, &len);
    char *cut = strstr(text, "{\"e\":\"kernel\",\"corr\":3");
    assert_non_null(cut);
    size_t keep = (size_t)(cut - text) + 20;
    argus_shim_input in;
    argus_shim_result r;
    int truncated = 0;
    char msg[512] = "";
    assert_int_equal(argus_shim_input_parse("cut.jsonl", text, keep, &in, &truncated, msg, sizeof(msg)), 0);
    assert_int_equal(truncated, 1);
    assert_int_equal(in.nev, 19); /* 16 host events and 3 kernels of 6 */
    assert_int_equal(argus_shim_build(&in, &r, msg, sizeof(msg)), 0);
    assert_int_equal(r.kernels, 3);
    /* The launches whose kernels were lost are said to be without one. */
    assert_int_equal(r.launches_without_kernel, 3);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
    free(text);
}

static const char *k_header = "{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"subscribed\"}\n";

static void expect_bad(const char *body, const char *needle)
{
    char text[2048];
    int w = snprintf(text, sizeof(text), "%s%s", strstr(body, "schema") ? "" : k_header, body);
    assert_true(w > 0 && (size_t)w < sizeof(text));
    argus_shim_input in;
    char msg[512] = "";
    int rc = argus_shim_input_parse("bad.jsonl", text, (size_t)w, &in, NULL, msg, sizeof(msg));
    if (rc == 0)
        fail_msg("accepted: %s", body);
    assert_int_equal(rc, ARGUS_EFORMAT);
    if (strstr(msg, needle) == NULL)
        fail_msg("message for %s: %s (wanted \"%s\")", body, msg, needle);
    assert_int_equal(in.nev, 0); /* nothing half-read is left */
}

static void test_hostile(void **state)
{
    (void)state;
    expect_bad("{\"schema\":\"argus.report\",\"version\":1,\"cupti\":\"subscribed\"}\n", "bad.jsonl:1");
    expect_bad("{\"schema\":\"argus.shim.events\",\"version\":2,\"cupti\":\"subscribed\"}\n", "header");
    expect_bad("{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"maybe\"}\n", "cupti");
    expect_bad("{\"e\":\"push\",\"tid\":1,\"ts\":-5,\"name\":\"a\"}\n", "bad.jsonl:2: ts");
    expect_bad("{\"e\":\"push\",\"tid\":1,\"ts\":1.5,\"name\":\"a\"}\n", "whole ns");
    expect_bad("{\"e\":\"push\",\"tid\":1,\"ts\":1e300,\"name\":\"a\"}\n", "2^53");
    expect_bad("{\"e\":\"push\",\"tid\":1,\"ts\":5}\n", "name");
    expect_bad("{\"e\":\"push\",\"tid\":1,\"ts\":5,\"name\":\"\"}\n", "non-empty");
    expect_bad("{\"e\":\"frob\",\"tid\":1,\"ts\":5}\n", "unknown event kind");
    expect_bad("{\"tid\":1,\"ts\":5}\n", "\"e\"");
    expect_bad("[1,2]\n", "one JSON object");
    expect_bad("{\"e\":\"pop\",\"tid\":1,\"ts\":5,\"ts\":6}\n", "twice");
    expect_bad("{\"e\":\"pop\",\"tid\":1,\"ts\":5\n", "bad.jsonl:2");
    expect_bad("{\"e\":\"kernel\",\"corr\":1,\"name\":\"k\",\"start\":9,\"end\":3}\n", "before it starts");
    expect_bad("{\"e\":\"kernel\",\"corr\":1,\"name\":\"k\",\"start\":1,\"end\":3,\"stream\":5000000000}\n",
               "32-bit");
    expect_bad("{\"e\":\"launch\",\"tid\":1,\"ts\":5}\n", "corr");
    expect_bad("{\"e\":\"end\",\"tid\":1,\"ts\":5}\n", "id");
    expect_bad("{\"e\":\"dropped\"}\n", "count");
    expect_bad("{\"e\":\"cupti\",\"state\":\"nope\"}\n", "bad.jsonl:2: state");
    expect_bad("{\"e\":\"unavailable\",\"what\":\"x\"}\n", "why");
    /* Deep nesting inside a line: the strict reader's bound. */
    char deep[600] = "{\"e\":\"pop\",\"tid\":1,\"ts\":5,\"x\":";
    for (int i = 0; i < 100; i++)
        strcat(deep, "[");
    strcat(deep, "\n");
    expect_bad(deep, "bad.jsonl:2");

    argus_shim_input in;
    char msg[512] = "";
    /* No header at all; a file that is not there. */
    assert_int_equal(argus_shim_input_parse("empty", "", 0, &in, NULL, msg, sizeof(msg)), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "no header"));
    assert_int_not_equal(argus_shim_input_load("/nonexistent/events.jsonl", &in, NULL, msg, sizeof(msg)), 0);
    assert_non_null(strstr(msg, "/nonexistent/events.jsonl"));
    /* A NUL inside the text. */
    char nul[] = "{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"subscribed\"}\n{\"e\":\"pop\"\0}\n";
    assert_int_equal(argus_shim_input_parse("nul", nul, sizeof(nul) - 1, &in, NULL, msg, sizeof(msg)),
                     ARGUS_EFORMAT);
}

/* Another CUPTI subscriber held CUPTI: the recording has ranges only, and
 * the report says why there are no kernels instead of showing none as if
 * none ran. */
static void test_other_subscriber(void **state)
{
    (void)state;
    const char *text =
        "{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"another_subscriber\","
        "\"note\":\"another CUPTI subscriber holds CUPTI in this process\"}\n"
        "{\"e\":\"push\",\"tid\":1,\"ts\":10,\"name\":\"a\"}\n"
        "{\"e\":\"pop\",\"tid\":1,\"ts\":30}\n";
    char *out = report_of(text, strlen(text));
    assert_non_null(strstr(out, "\"state\":\"another_subscriber\""));
    /* The state told at cuInit replaces the header's (the recording was
     * opened by NVTX before CUDA started). */
    const char *later =
        "{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"unavailable\","
        "\"note\":\"the program never initialised CUDA\"}\n"
        "{\"e\":\"cupti\",\"state\":\"another_subscriber\",\"note\":\"held\"}\n";
    argus_shim_input in;
    char msg[256];
    assert_int_equal(argus_shim_input_parse("l", later, strlen(later), &in, NULL, msg, sizeof(msg)), 0);
    assert_int_equal(in.cupti, ARGUS_SHIM_CUPTI_OTHER);
    assert_string_equal(in.cupti_note, "held");
    argus_shim_input_free(&in);
    assert_non_null(strstr(out, "WARNING: kernels unavailable: another CUPTI subscriber holds CUPTI"));
    assert_non_null(strstr(out, "\"path\":\"a\""));
    free(out);
}

/* Mutated recordings through the reader, the builder and the writers:
 * either a clean error or outputs (the ASan build checks the memory). */
static void test_mutations(void **state)
{
    (void)state;
    size_t len;
    char *text = slurp(FIXTURE, &len);
    char *m = malloc(len + 1);
    assert_non_null(m);
    srand(12);
    static const char pool[] = "{}[]\":,0123456789-.e\nabz\\";
    int accepted = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(m, text, len + 1);
        int edits = 1 + rand() % 4;
        for (int k = 0; k < edits; k++)
            m[(size_t)rand() % len] = pool[(size_t)rand() % (sizeof(pool) - 1)];
        argus_shim_input in;
        char msg[512];
        if (argus_shim_input_parse("m", m, len, &in, NULL, msg, sizeof(msg)) != 0)
            continue;
        argus_shim_result r;
        if (argus_shim_build(&in, &r, msg, sizeof(msg)) == 0) {
            FILE *f = fopen("/dev/null", "w");
            assert_non_null(f);
            assert_int_equal(argus_shim_report_json(&r, NULL, f), 0);
            assert_int_equal(argus_shim_trace_json(&r, f), 0);
            assert_int_equal(argus_shim_report_text(&r, NULL, f), 0);
            fclose(f);
            argus_shim_result_free(&r);
            accepted++;
        }
        argus_shim_input_free(&in);
    }
    /* Some mutations land in names or digits and stay valid. */
    assert_true(accepted > 100);
    free(m);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regions_exact),   cmocka_unit_test(test_order_independent),
        cmocka_unit_test(test_truncated),       cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_t0_exact),
        cmocka_unit_test(test_other_subscriber), cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
