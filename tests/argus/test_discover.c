/*
 * Discovery of asynchronous operations and forced-completion probe
 * variants (include/argus/discover.h) on the committed PTX and SASS of
 * tests/argus/async_cpasync.cu and async_tma.cu
 * (tests/argus/fixtures/discover/), and on small PTX written here for the
 * cases the kernels do not have. test_discover.sh compiles the variants.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "argus/discover.h"

#define FIX ARGUS_SRC_DIR "/fixtures/discover/"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Line `line` (1-based) of text, copied into buf. */
static const char *line_of(const char *text, uint32_t line, char *buf, size_t len)
{
    const char *p = text;
    for (uint32_t i = 1; i < line && p; i++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    assert_non_null(p);
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n >= len)
        n = len - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

/* The text with every line containing `drop` removed. */
static char *without(const char *text, const char *drop)
{
    size_t n = strlen(text);
    char *out = malloc(n + 1), *w = out;
    assert_non_null(out);
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p + 1) : strlen(p);
        const char *hit = strstr(p, drop);
        if (hit == NULL || hit >= p + l) {
            memcpy(w, p, l);
            w += l;
        }
        p += l;
    }
    *w = '\0';
    return out;
}

static size_t occurrences(const char *text, const char *s)
{
    size_t n = 0;
    for (const char *p = strstr(text, s); p; p = strstr(p + 1, s))
        n++;
    return n;
}

static argus_discovery *discover_file(const char *name, char **text, size_t *len)
{
    *text = slurp(name, len);
    argus_discovery *d;
    char msg[512] = "";
    int rc = argus_discover_ptx(*text, *len, &d, msg, sizeof msg);
    if (rc != 0)
        fail_msg("%s: %s", name, msg);
    return d;
}

static const argus_async_op *op(const argus_discovery *d, uint32_t region, uint32_t ordinal)
{
    long k = argus_discovery_find(d, ARGUS_OP_ID(region, ordinal));
    if (k < 0)
        fail_msg("no operation 0x%07x.%u", region, ordinal);
    return &d->ops[k];
}

#define R_PROLOGUE argus_region_id("prologue", 0)
#define R_MAINLOOP argus_region_id("mainloop", 0)
#define R_LOAD     argus_region_id("load", R_MAINLOOP)
#define R_MMA      argus_region_id("mma", R_MAINLOOP)

/* The cp.async GEMM: four 16-byte copies in "prologue" (once) and four in
 * "mainloop/load" (once per K step, in the loop with ARGUS_ITER), each
 * committed and then waited for with wait_group 1. */
static void test_cpasync_kernel(void **state)
{
    (void)state;
    char *ptx, line[512];
    size_t len;
    argus_discovery *d = discover_file(FIX "async_cpasync.ptx", &ptx, &len);
    assert_int_equal(d->n_ops, 8);
    assert_int_equal(d->n_markers, 10); /* 5 regions, BEGIN and END */
    assert_int_equal(d->n_functions, 1);
    assert_int_equal(d->n_diags, 0);
    assert_int_equal(d->ptx_ops[ARGUS_ASYNC_CP_ASYNC], 8);
    for (uint32_t i = 0; i < 4; i++) {
        const argus_async_op *o = op(d, R_PROLOGUE, i);
        assert_int_equal(o->kind, ARGUS_ASYNC_CP_ASYNC);
        assert_string_equal(o->function, "async_gemm_cpasync");
        assert_false(o->in_loop);
        assert_non_null(
            strstr(line_of(ptx, o->line, line, sizeof line), "cp.async.cg.shared.global"));
        assert_non_null(
            strstr(line_of(ptx, o->commit_line, line, sizeof line), "cp.async.commit_group"));
        assert_non_null(
            strstr(line_of(ptx, o->wait_line, line, sizeof line), "cp.async.wait_group 1"));
        assert_int_equal(o->wait_n, 1);
        assert_true(o->line < o->commit_line && o->commit_line < o->wait_line);

        const argus_async_op *l = op(d, R_LOAD, i);
        assert_int_equal(l->kind, ARGUS_ASYNC_CP_ASYNC);
        assert_true(l->in_loop);
        assert_true(l->loop_has_iter);
        assert_true(l->loop_head < l->line && l->line < l->loop_end);
        assert_non_null(strstr(line_of(ptx, l->loop_end, line, sizeof line), "bra"));
        assert_non_null(strstr(line_of(ptx, l->loop_head, line, sizeof line), ":"));
        assert_true(l->line < l->commit_line && l->commit_line < l->wait_line &&
                    l->wait_line < l->loop_end);
        if (i > 0)
            assert_true(op(d, R_LOAD, i - 1)->line < l->line);
    }
    /* The IDs print as region.ordinal and parse back. */
    char id[32];
    uint64_t back;
    assert_int_equal(argus_op_id_format(ARGUS_OP_ID(R_LOAD, 2), id, sizeof id), 0);
    char want[32];
    snprintf(want, sizeof want, "0x%07x.2", R_LOAD);
    assert_string_equal(id, want);
    assert_int_equal(argus_op_id_parse(id, &back), 0);
    assert_true(back == ARGUS_OP_ID(R_LOAD, 2));
    assert_int_equal(argus_op_id_parse("0x1.x", &back), ARGUS_EINVAL);
    assert_int_equal(argus_op_id_parse("0x10000000.1", &back), ARGUS_EINVAL);
    assert_int_equal(argus_op_id_parse("0x1.70000", &back), ARGUS_EINVAL);

    /* The SASS has the same eight LDGSTS; a listing that is not SASS is
     * refused. */
    size_t sl;
    char *sass = slurp(FIX "async_cpasync.sass", &sl);
    char msg[512];
    assert_int_equal(argus_discover_sass(d, sass, sl, msg, sizeof msg), 0);
    assert_true(d->sass_seen);
    assert_int_equal(d->sass_ops[ARGUS_ASYNC_CP_ASYNC], 8);
    assert_int_equal(d->sass_ops[ARGUS_ASYNC_TMA], 0);
    assert_int_equal(argus_discover_sass(d, ptx, len, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "cuobjdump -sass"));
    free(sass);
    argus_discovery_free(d);
    free(ptx);
}

/* The TMA kernel: two bulk tensor loads on one mbarrier in "prologue", two
 * more per step in "mainloop/load" after the stage's arrive.expect_tx, and
 * one wgmma per step in "mainloop/mma", committed and waited for with
 * wait_group 1. */
static void test_tma_kernel(void **state)
{
    (void)state;
    char *ptx, line[512];
    size_t len;
    argus_discovery *d = discover_file(FIX "async_tma.ptx", &ptx, &len);
    assert_int_equal(d->n_ops, 5);
    assert_int_equal(d->n_diags, 0);
    uint32_t regions[2] = {R_PROLOGUE, R_LOAD};
    for (int r = 0; r < 2; r++) {
        const argus_async_op *a = op(d, regions[r], 0), *b = op(d, regions[r], 1);
        assert_int_equal(a->kind, ARGUS_ASYNC_TMA);
        assert_int_equal(b->kind, ARGUS_ASYNC_TMA);
        assert_int_equal(a->in_loop, r == 1);
        assert_int_equal(a->loop_has_iter, r == 1);
        assert_string_equal(a->barrier, b->barrier);
        assert_int_equal(a->arrive_line, b->arrive_line);
        const char *al = line_of(ptx, a->arrive_line, line, sizeof line);
        assert_non_null(strstr(al, "mbarrier.arrive.expect_tx"));
        char want[64];
        snprintf(want, sizeof want, "[%s]", a->barrier);
        assert_non_null(strstr(al, want));
        /* Both loads complete one phase: a forced wait goes after the
         * second. */
        assert_int_equal(a->phase_last_line, b->line);
        assert_int_equal(b->phase_last_line, b->line);
        assert_true(a->arrive_line < a->line && a->line < b->line);
        assert_non_null(strstr(line_of(ptx, a->wait_line, line, sizeof line), "mbarrier.try_wait"));
    }
    const argus_async_op *w = op(d, R_MMA, 0);
    assert_int_equal(w->kind, ARGUS_ASYNC_WGMMA);
    assert_true(w->in_loop);
    assert_non_null(strstr(line_of(ptx, w->line, line, sizeof line), "wgmma.mma_async"));
    assert_non_null(strstr(line_of(ptx, w->commit_line, line, sizeof line), "wgmma.commit_group"));
    assert_non_null(
        strstr(line_of(ptx, w->wait_line, line, sizeof line), "wgmma.wait_group.sync.aligned 1"));
    assert_int_equal(w->wait_n, 1);

    size_t sl;
    char *sass = slurp(FIX "async_tma.sass", &sl);
    char msg[512];
    assert_int_equal(argus_discover_sass(d, sass, sl, msg, sizeof msg), 0);
    assert_int_equal(d->sass_ops[ARGUS_ASYNC_TMA], 4);
    assert_int_equal(d->sass_ops[ARGUS_ASYNC_WGMMA], 1);
    assert_int_equal(d->ptx_ops[ARGUS_ASYNC_TMA], 4);
    free(sass);
    argus_discovery_free(d);
    free(ptx);
}

/* A variant differs from its base by the probe's lines only, the wait sits
 * where the operation completes at the chosen execution, and the variant
 * has the same operations with the same IDs (stable across variants). */
static void check_variant(const char *fixture, uint32_t region, uint32_t ordinal, uint32_t iter,
                          const char *wait_text, size_t want_changed)
{
    char *ptx, line[512], msg[512] = "";
    size_t len;
    argus_discovery *d = discover_file(fixture, &ptx, &len);
    const argus_async_op *o = op(d, region, ordinal);
    char *v;
    size_t vl;
    int rc = argus_probe_ptx(ptx, len, d, o->id, iter, &v, &vl, msg, sizeof msg);
    if (rc != 0)
        fail_msg("probe: %s", msg);
    assert_int_equal(strlen(v), vl);
    assert_int_equal(occurrences(v, wait_text), occurrences(ptx, wait_text) + 1);
    char sel[96];
    snprintf(sel, sizeof sel, "%%argus_probe_q, %%argus_probe_n, %u;", iter + 1);
    assert_int_equal(occurrences(v, sel), 1);
    /* The block follows the line where the operation completes. */
    uint32_t at = o->kind == ARGUS_ASYNC_TMA     ? o->phase_last_line
                  : o->kind == ARGUS_ASYNC_WGMMA ? o->commit_line
                                                 : o->line;
    /* Lines before `at` in the variant: the base's plus the counter's
     * declarations and initialisation (2, or 3 with the TMA state). */
    uint32_t extra = o->kind == ARGUS_ASYNC_TMA ? 3 : 2;
    assert_non_null(
        strstr(line_of(v, at + extra + 1, line, sizeof line), "{ // argus-probe: force"));
    assert_non_null(strstr(line_of(v, o->fn_open_line + extra, line, sizeof line),
                           "mov.u32 %argus_probe_n, 0;"));
    /* Without the probe's lines, the variant is the base (less the TMA
     * arrive, which the probe rewrites). */
    char *stripped = without(v, "argus-probe");
    char *base = want_changed ? without(ptx, "mbarrier.arrive.expect_tx") : strdup(ptx);
    if (want_changed) {
        /* Only the arrive of the probed phase is rewritten. */
        assert_int_equal(occurrences(ptx, "mbarrier.arrive.expect_tx") -
                             occurrences(stripped, "mbarrier.arrive.expect_tx"),
                         1);
        free(base);
        char arrive[512];
        line_of(ptx, o->arrive_line, arrive, sizeof arrive);
        base = without(ptx, arrive);
        assert_non_null(
            strstr(line_of(v, o->arrive_line + extra, line, sizeof line), "%argus_probe_st, ["));
    }
    assert_string_equal(stripped, base);

    argus_discovery *dv;
    assert_int_equal(argus_discover_ptx(v, vl, &dv, msg, sizeof msg), 0);
    /* A variant is not probed again (one forced wait per variant). */
    char *vv = NULL;
    assert_int_equal(argus_probe_ptx(v, vl, dv, o->id, iter, &vv, NULL, msg, sizeof msg),
                     ARGUS_EINVAL);
    assert_non_null(strstr(msg, "already a probe variant"));
    assert_null(vv);
    assert_int_equal(dv->n_ops, d->n_ops);
    for (size_t i = 0; i < d->n_ops; i++) {
        assert_true(dv->ops[i].id == d->ops[i].id);
        assert_int_equal(dv->ops[i].kind, d->ops[i].kind);
        assert_int_equal(dv->ops[i].in_loop, d->ops[i].in_loop);
    }
    argus_discovery_free(dv);
    free(stripped);
    free(base);
    free(v);
    argus_discovery_free(d);
    free(ptx);
}

static void test_probe_cpasync(void **state)
{
    (void)state;
    check_variant(FIX "async_cpasync.ptx", R_LOAD, 2, 3, "cp.async.wait_all", 0);
    check_variant(FIX "async_cpasync.ptx", R_PROLOGUE, 0, 0, "cp.async.wait_all", 0);
}

static void test_probe_tma(void **state)
{
    (void)state;
    check_variant(FIX "async_tma.ptx", R_LOAD, 0, 2, "mbarrier.try_wait", 1);
    check_variant(FIX "async_tma.ptx", R_PROLOGUE, 1, 0, "mbarrier.try_wait", 1);
}

static void test_probe_wgmma(void **state)
{
    (void)state;
    check_variant(FIX "async_tma.ptx", R_MMA, 0, 5, "wgmma.wait_group.sync.aligned 0", 0);
}

/* Small PTX for cases the kernels lack. A marker is the high word in a
 * register and the record store. */
static size_t marker(char *p, size_t room, int kind, uint32_t id)
{
    int n = snprintf(p, room,
                     "\tmov.u32 %%r9, %u;\n\t@argus_p st.global.v2.u32 [%%rd9], {argus_l, %%r9};\n",
                     ((uint32_t)kind << 28) | id);
    assert_true(n > 0 && (size_t)n < room);
    return (size_t)n;
}

static void test_synthetic(void **state)
{
    (void)state;
    uint32_t outer = argus_region_id("outer", 0), inner = argus_region_id("inner", outer);
    char ptx[8192], msg[512];
    size_t n = 0;
    n += (size_t)snprintf(ptx + n, sizeof ptx - n,
                          ".version 9.0\n.target sm_90\n.address_size 64\n"
                          "/* cp.async.cg.shared.global [%%r1], [%%rd1], 16;\n"
                          "   a block comment is not code */\n"
                          ".func helper()\n{\n\tcp.async.ca.shared.global [%%r1], [%%rd1], 4;\n"
                          "\tcp.async.commit_group;\n\tcp.async.wait_all;\n\tret;\n}\n"
                          ".visible .entry k()\n{\n\t.reg .b32 %%r<10>;\n");
    n += marker(ptx + n, sizeof ptx - n, ARGUS_REC_BEGIN, outer);
    n += (size_t)snprintf(ptx + n, sizeof ptx - n, "$L_outer:\n");
    n += marker(ptx + n, sizeof ptx - n, ARGUS_REC_BEGIN, inner);
    n += (size_t)snprintf(ptx + n, sizeof ptx - n,
                          "$L_inner:\n\tcp.async.cg.shared.global [%%r1], [%%rd1], 16;\n"
                          "\t@%%p1 bra $L_inner;\n");
    n += marker(ptx + n, sizeof ptx - n, ARGUS_REC_END, inner);
    n += (size_t)snprintf(
        ptx + n, sizeof ptx - n,
        "\tcp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%%r2], [%%rd2, {%%r3}], [%%r4];\n"
        "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%%f1, %%f2, %%f3, %%f4},"
        " %%rd5, %%rd6, 1, 1, 1, 0, 0;\n"
        "\t@%%p2 bra.uni $L_outer;\n");
    n += marker(ptx + n, sizeof ptx - n, ARGUS_REC_END, outer);
    /* An END with no BEGIN in text order. */
    n += marker(ptx + n, sizeof ptx - n, ARGUS_REC_END, inner);
    n += (size_t)snprintf(ptx + n, sizeof ptx - n, "\tret;\n}\n");
    assert_true(n < sizeof ptx);

    argus_discovery *d;
    assert_int_equal(argus_discover_ptx(ptx, n, &d, msg, sizeof msg), 0);
    assert_int_equal(d->n_functions, 2);
    assert_int_equal(d->n_ops, 4);
    assert_int_equal(d->n_diags, 1);
    assert_non_null(strstr(d->diag, "k, PTX line"));
    const argus_async_op *h = op(d, 0, 0);
    assert_string_equal(h->function, "helper");
    assert_false(h->in_loop);
    assert_int_equal(h->wait_n, 0); /* wait_all */
    const argus_async_op *c = op(d, inner, 0);
    assert_true(c->in_loop);
    /* The innermost loop: $L_inner's, not $L_outer's. */
    assert_int_equal(c->loop_end, c->line + 1);
    assert_int_equal(c->loop_head, c->line - 1);
    assert_false(c->loop_has_iter);
    const argus_async_op *t = op(d, outer, 0), *w = op(d, outer, 1);
    assert_int_equal(t->kind, ARGUS_ASYNC_TMA);
    assert_int_equal(w->kind, ARGUS_ASYNC_WGMMA);
    assert_true(t->in_loop && w->in_loop);
    assert_int_equal(t->arrive_line, 0);

    /* A TMA load with no arrive.expect_tx before it cannot be forced; a
     * wgmma never committed has no completion; an unknown ID, another PTX
     * and an iteration past the counter are refused. */
    char *v = NULL;
    assert_int_equal(argus_probe_ptx(ptx, n, d, t->id, 0, &v, NULL, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "no mbarrier.arrive.expect_tx on [%r4]"));
    assert_int_equal(argus_probe_ptx(ptx, n, d, w->id, 0, &v, NULL, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "no wgmma.commit_group after it"));
    assert_int_equal(
        argus_probe_ptx(ptx, n, d, ARGUS_OP_ID(outer, 7), 0, &v, NULL, msg, sizeof msg),
        ARGUS_ENOREGION);
    assert_non_null(strstr(msg, ".7 in the discovery"));
    assert_int_equal(argus_probe_ptx(ptx, n, d, c->id, UINT32_MAX, &v, NULL, msg, sizeof msg),
                     ARGUS_EINVAL);
    const char *other = ".version 9.0\n.visible .entry k()\n{\n\tret;\n}\n";
    assert_int_equal(argus_probe_ptx(other, strlen(other), d, c->id, 0, &v, NULL, msg, sizeof msg),
                     ARGUS_EINVAL);
    assert_non_null(strstr(msg, "discover this same PTX again"));
    assert_null(v);
    /* PTX that matches the operation's line but ends before its TMA
     * phase's last issue: refused, never a variant without its wait. */
    {
        char *tma;
        size_t tl;
        argus_discovery *dt = discover_file(FIX "async_tma.ptx", &tma, &tl);
        const argus_async_op *a0 = op(dt, R_PROLOGUE, 0);
        /* Cut the text right after the first load's line. */
        const char *p = tma;
        for (uint32_t i = 0; i < a0->line && p; i++) {
            p = strchr(p, '\n');
            p = p ? p + 1 : NULL;
        }
        assert_non_null(p);
        size_t cut = (size_t)(p - tma);
        assert_int_equal(argus_probe_ptx(tma, cut, dt, a0->id, 0, &v, NULL, msg, sizeof msg),
                         ARGUS_EINVAL);
        assert_non_null(strstr(msg, "past the end of this PTX"));
        assert_null(v);
        argus_discovery_free(dt);
        free(tma);
    }
    /* The helper's cp.async can be forced, outside every region. */
    size_t vl;
    assert_int_equal(argus_probe_ptx(ptx, n, d, h->id, 0, &v, &vl, msg, sizeof msg), 0);
    assert_int_equal(occurrences(v, "cp.async.wait_all"), 2);
    free(v);
    argus_discovery_free(d);

    /* Text that is not whole PTX. */
    assert_int_equal(argus_discover_ptx(ptx, n - 3, &d, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "ends inside a block"));
    assert_null(d);
    const char *stray = ".version 9.0\n}\n";
    assert_int_equal(argus_discover_ptx(stray, strlen(stray), &d, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "line 2"));
    /* No operations is not an error. */
    assert_int_equal(argus_discover_ptx(other, strlen(other), &d, msg, sizeof msg), 0);
    assert_int_equal(d->n_ops, 0);
    assert_int_equal(d->n_functions, 1);
    argus_discovery_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpasync_kernel), cmocka_unit_test(test_tma_kernel),
        cmocka_unit_test(test_probe_cpasync),  cmocka_unit_test(test_probe_tma),
        cmocka_unit_test(test_probe_wgmma),    cmocka_unit_test(test_synthetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
