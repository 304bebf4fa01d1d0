/*
 * Attribution of PC-keyed metrics to regions (include/argus/attrib.h) on
 * evidence with known answers: tests/argus/fixtures/discover/attrib_calls.*
 * (a __noinline__ function `work` whose PCs execute 3:1 under callA and
 * callB), worked out by hand below; then the rules one at a time on small
 * evidence built in the test, and bad input.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "argus/attrib.h"
#include "argus_test_util.h"

#define FIX ARGUS_SRC_DIR "/fixtures/discover/"


/* -(3/4 log2 3/4 + 1/4 log2 1/4), computed by hand: 0.75 * 0.415037 +
 * 0.25 * 2 = 0.811278 bits. */
#define H_3_1 0.8112781244591328

static argus_attrib_result *load_calls(void)
{
    argus_attrib *a;
    char msg[512] = "";
    assert_int_equal(argus_attrib_new(&a), 0);
    assert_int_equal(argus_attrib_load(a, FIX "attrib_calls.exec.tsv", msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_load(a, FIX "attrib_calls.metrics.tsv", msg, sizeof msg), 0);
    argus_attrib_result *r;
    int rc = argus_attrib_compute(a, &r, msg, sizeof msg);
    if (rc != 0)
        fail_msg("compute: %s", msg);
    argus_attrib_free(a);
    return r;
}

static double self_of(const argus_attrib_result *r, const char *region, const char *metric)
{
    long g = argus_attrib_find_region(r, region), m = argus_attrib_find_metric(r, metric);
    assert_true(g >= 0);
    assert_true(m >= 0);
    return r->regions[g].self[m].value;
}

static double incl_of(const argus_attrib_result *r, const char *region, const char *metric)
{
    long g = argus_attrib_find_region(r, region), m = argus_attrib_find_metric(r, metric);
    assert_true(g >= 0);
    assert_true(m >= 0);
    return r->regions[g].inclusive[m].value;
}

/* The work function's 2000 samples split 3:1 (1500 and 500), exactly;
 * its 18432 instructions 13824 and 4608; the stall reason's 300 at one PC
 * 225 and 75. callA's own 60 samples and 2048 instructions add to its
 * inclusive 1560 and 15872. */
static void test_split_exact(void **state)
{
    (void)state;
    argus_attrib_result *r = load_calls();
    assert_string_equal(r->program, "fixture:calls-3to1/v1");
    assert_int_equal(r->n_regions, 5); /* "", callA, callA/work, callB, callB/work */
    assert_true(self_of(r, "callA/work", "samples") == 1500.0);
    assert_true(self_of(r, "callB/work", "samples") == 500.0);
    assert_true(self_of(r, "callA/work", "inst_executed") == 13824.0);
    assert_true(self_of(r, "callB/work", "inst_executed") == 4608.0);
    assert_true(self_of(r, "callA/work", "stall_long_scoreboard") == 225.0);
    assert_true(self_of(r, "callB/work", "stall_long_scoreboard") == 75.0);
    assert_true(self_of(r, "callA", "samples") == 60.0);
    assert_true(incl_of(r, "callA", "samples") == 1560.0);
    assert_true(incl_of(r, "callA", "inst_executed") == 15872.0);
    assert_true(incl_of(r, "callB", "samples") == 520.0);
    assert_true(incl_of(r, "callB", "inst_executed") == 6656.0);
    /* Code outside every region is its own region, not every region's
     * parent. */
    assert_true(self_of(r, "", "samples") == 4.0);
    assert_true(incl_of(r, "", "samples") == 4.0);
    /* The sampled PC the map lacks is kept apart, and nothing is lost. */
    long s = argus_attrib_find_metric(r, "samples");
    assert_true(r->unmapped[s].value == 16.0);
    assert_int_equal(r->unmapped_pcs[s], 1);
    assert_true(r->total[s].value == 2100.0);
    double sum = r->unmapped[s].value;
    for (size_t i = 0; i < r->n_regions; i++)
        sum += r->regions[i].self[s].value;
    assert_true(sum == r->total[s].value);
    /* Marks: per-PC totals observed, region shares attributed. */
    long g = argus_attrib_find_region(r, "callA/work");
    assert_int_equal(r->regions[g].self[s].mark, ARGUS_MARK_ATTRIBUTED);
    assert_int_equal(r->total[s].mark, ARGUS_MARK_OBSERVED);
    assert_int_equal(r->unmapped[s].mark, ARGUS_MARK_OBSERVED);
    argus_attrib_result_free(r);
}

/* samples_per_inst is lifted: per region the attributed numerator over the
 * attributed denominator. For work under either caller that is
 * 2000 / 18432 = 0.108507 (1500 / 13824 and 500 / 4608), not the mean of
 * its PCs' ratios (400/4096, 800/8192, 200/4096, 600/2048: 0.134277). */
static void test_ratio_lifted(void **state)
{
    (void)state;
    argus_attrib_result *r = load_calls();
    long q = argus_attrib_find_ratio(r, "samples_per_inst");
    assert_true(q >= 0);
    long a = argus_attrib_find_region(r, "callA/work"),
         b = argus_attrib_find_region(r, "callB/work");
    assert_true(r->regions[a].ratio_num[q].value == 1500.0);
    assert_true(r->regions[a].ratio_den[q].value == 13824.0);
    assert_true(r->regions[a].ratio_defined[q]);
    assert_near(r->regions[a].ratio[q].value, 2000.0 / 18432.0, 1e-15);
    assert_near(r->regions[b].ratio[q].value, 2000.0 / 18432.0, 1e-15);
    double naive = (400.0 / 4096 + 800.0 / 8192 + 200.0 / 4096 + 600.0 / 2048) / 4;
    assert_true(fabs(r->regions[a].ratio[q].value - naive) > 0.02);
    assert_int_equal(r->regions[a].ratio[q].mark, ARGUS_MARK_DERIVED);
    assert_int_equal(r->regions[a].ratio_num[q].mark, ARGUS_MARK_ATTRIBUTED);
    /* Inclusive: callA = 1560 / 15872, callB = 520 / 6656 = 0.078125. */
    long ca = argus_attrib_find_region(r, "callA"), cb = argus_attrib_find_region(r, "callB");
    assert_near(r->regions[ca].ratio[q].value, 1560.0 / 15872.0, 1e-15);
    assert_true(r->regions[cb].ratio[q].value == 0.078125);
    argus_attrib_result_free(r);
}

/* Each of work's PCs has entropy 0.811 bits; callA's and callB's own PCs
 * and the one outside regions 0. */
static void test_entropy(void **state)
{
    (void)state;
    argus_attrib_result *r = load_calls();
    assert_int_equal(r->n_pcs, 9);
    for (uint64_t pc = 0x400; pc <= 0x430; pc += 0x10) {
        long k = argus_attrib_find_pc(r, pc);
        assert_true(k >= 0);
        assert_int_equal(r->pcs[k].n_regions, 2);
        assert_int_equal(r->pcs[k].executions, 4096);
        assert_near(r->pcs[k].entropy_bits, H_3_1, 1e-12);
        assert_near(r->pcs[k].entropy_bits, 0.811, 0.0005);
    }
    uint64_t single[] = {0x100, 0x110, 0x200, 0x210, 0x500};
    for (size_t i = 0; i < 5; i++) {
        long k = argus_attrib_find_pc(r, single[i]);
        assert_true(k >= 0);
        assert_true(r->pcs[k].entropy_bits == 0.0);
    }
    assert_int_equal(argus_attrib_find_pc(r, 0x600), -1);
    /* The table shows the values, their marks and the ambiguous PCs. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(argus_attrib_write(r, f), 0);
    fclose(f);
    assert_non_null(strstr(text, "callA/work\tsamples\t1500\t1500\tattributed\n"));
    assert_non_null(strstr(
        text,
        "callB/work\tsamples_per_inst = samples / inst_executed\t500 / 4608\t0.108507\tderived\n"));
    assert_non_null(strstr(text, "(unmapped PCs: 1)\tsamples\t16\t16\tobserved\n"));
    assert_non_null(strstr(text, "pc 0x410\t2 regions\t4096 executions\tH 0.8113 bits\n"));
    assert_null(strstr(text, "pc 0x100\t"));
    free(text);
    argus_attrib_result_free(r);
}

/* Evidence of another build is refused, with both names in the message. */
static void test_other_program_refused(void **state)
{
    (void)state;
    argus_attrib *a;
    char msg[512] = "";
    assert_int_equal(argus_attrib_new(&a), 0);
    assert_int_equal(argus_attrib_load(a, FIX "attrib_calls.exec.tsv", msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_load(a, FIX "attrib_other.metrics.tsv", msg, sizeof msg),
                     ARGUS_EINVAL);
    assert_non_null(strstr(msg, "attrib_other.metrics.tsv:4"));
    assert_non_null(strstr(msg, "fixture:calls-3to1/v2"));
    assert_non_null(strstr(msg, "fixture:calls-3to1/v1"));
    assert_non_null(strstr(msg, "not joined"));
    argus_attrib_free(a);
}

/* Small evidence: an even split is 1 bit; three regions 1:1:2 are 1.5
 * bits and split 0.25/0.25/0.5; a PC whose every count is 0 is unmapped;
 * a ratio whose denominator has nothing in a region is undefined there,
 * not 0 or infinite. */
static void test_rules(void **state)
{
    (void)state;
    argus_attrib *a;
    char msg[512] = "";
    assert_int_equal(argus_attrib_new(&a), 0);
    assert_int_equal(argus_attrib_compute(a, &(argus_attrib_result *){NULL}, msg, sizeof msg),
                     ARGUS_EINVAL);
    assert_non_null(strstr(msg, "no program named"));
    assert_int_equal(argus_attrib_program(a, "p", "test", msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_exec(a, 0x10, "x", 5, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_exec(a, 0x10, "y", 2, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_exec(a, 0x10, "y", 3, msg, sizeof msg), 0); /* adds up */
    assert_int_equal(argus_attrib_add_exec(a, 0x20, "x", 1, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_exec(a, 0x20, "y", 1, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_exec(a, 0x20, "z/w", 2, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_exec(a, 0x30, "x", 0, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_metric(a, 0x10, "s", 10, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_metric(a, 0x20, "s", 8, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_metric(a, 0x30, "s", 3, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_metric(a, 0x10, "d", 4, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_ratio(a, "s_per_d", "s", "d", msg, sizeof msg), 0);
    argus_attrib_result *r;
    assert_int_equal(argus_attrib_compute(a, &r, msg, sizeof msg), 0);
    long k = argus_attrib_find_pc(r, 0x10);
    assert_near(r->pcs[k].entropy_bits, 1.0, 1e-15);
    k = argus_attrib_find_pc(r, 0x20);
    assert_near(r->pcs[k].entropy_bits, 1.5, 1e-15);
    assert_int_equal(r->pcs[k].n_regions, 3);
    /* x: 10 * 5/10 + 8 * 1/4 = 7; y: 5 + 2 = 7; z/w: 4; 0x30's 3 unmapped. */
    assert_true(self_of(r, "x", "s") == 7.0);
    assert_true(self_of(r, "y", "s") == 7.0);
    assert_true(self_of(r, "z/w", "s") == 4.0);
    assert_true(incl_of(r, "z", "s") == 4.0);
    long z = argus_attrib_find_region(r, "z");
    assert_int_equal(r->regions[z].mapped, 0);
    long s = argus_attrib_find_metric(r, "s");
    assert_true(r->unmapped[s].value == 3.0);
    long q = argus_attrib_find_ratio(r, "s_per_d");
    long x = argus_attrib_find_region(r, "x");
    assert_true(r->regions[x].ratio_defined[q]);
    assert_true(r->regions[x].ratio[q].value == 3.5); /* 7 / (4 * 5/10) */
    assert_false(r->regions[z].ratio_defined[q]);
    assert_true(isnan(r->regions[z].ratio[q].value));
    argus_attrib_result_free(r);

    /* The same evidence added in another order gives the same numbers. */
    argus_attrib *b;
    assert_int_equal(argus_attrib_new(&b), 0);
    assert_int_equal(argus_attrib_program(b, "p", "test", msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_metric(b, 0x20, "s", 8, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_exec(b, 0x20, "z/w", 2, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_exec(b, 0x20, "y", 1, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_exec(b, 0x20, "x", 1, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_compute(b, &r, msg, sizeof msg), 0);
    assert_true(self_of(r, "z/w", "s") == 4.0);
    assert_true(self_of(r, "x", "s") == 2.0);
    argus_attrib_result_free(r);
    argus_attrib_free(b);
    argus_attrib_free(a);
}

static void test_bad_evidence(void **state)
{
    (void)state;
    argus_attrib *a;
    char msg[512] = "";
    assert_int_equal(argus_attrib_new(&a), 0);
    assert_int_equal(argus_attrib_program(a, "p", "t", msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_metric(a, 1, "s", -1, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "finite count >= 0"));
    assert_int_equal(argus_attrib_add_metric(a, 1, "s", NAN, msg, sizeof msg), ARGUS_EINVAL);
    assert_int_equal(argus_attrib_add_metric(a, 1, "", 1, msg, sizeof msg), ARGUS_EINVAL);
    assert_int_equal(argus_attrib_add_exec(a, 1, "a\tb", 1, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "control character"));
    assert_int_equal(argus_attrib_add_exec(a, 1, "a//b", 1, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "empty component"));
    assert_int_equal(argus_attrib_add_exec(a, 1, "/a", 1, msg, sizeof msg), ARGUS_EINVAL);
    assert_int_equal(argus_attrib_add_exec(a, 1, "a/", 1, msg, sizeof msg), ARGUS_EINVAL);
    assert_int_equal(argus_attrib_add_exec(a, 1, "a", (UINT64_C(1) << 53) + 1, msg, sizeof msg),
                     ARGUS_EINVAL);
    assert_int_equal(argus_attrib_add_ratio(a, "r", "s", "t", msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_ratio(a, "r", "s", "t", msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "declared twice"));
    /* A ratio over a metric never measured. */
    assert_int_equal(argus_attrib_add_metric(a, 1, "s", 1, msg, sizeof msg), 0);
    argus_attrib_result *r = NULL;
    assert_int_equal(argus_attrib_compute(a, &r, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "no metric t"));
    assert_null(r);
    argus_attrib_free(a);

    /* Two values of one metric at one PC. */
    assert_int_equal(argus_attrib_new(&a), 0);
    assert_int_equal(argus_attrib_program(a, "p", "t", msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_metric(a, 7, "s", 1, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_metric(a, 7, "s", 2, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_compute(a, &r, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "two values of metric s at PC 0x7"));
    argus_attrib_free(a);

    /* Files: each case a line and the words its message must hold. */
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"argus.attrib\t2\n", ":1: not an argus.attrib v1 file"},
        {"", "is empty"},
        {"argus.attrib\t1\nexec\t0x1\ta\t1\n", ":2: exec before the program line"},
        {"argus.attrib\t1\nprogram\tp\nexec\tzz\ta\t1\n", ":3: exec: PC 'zz' is not hex"},
        {"argus.attrib\t1\nprogram\tp\nexec\t0x1\ta\t-1\n", ":3: exec: count '-1'"},
        {"argus.attrib\t1\nprogram\tp\nmetric\t0x1\ts\tlots\n", ":3: metric: value 'lots'"},
        {"argus.attrib\t1\nprogram\tp\nmetric\t0x1\ts\n", ":3: 'metric' with 3 fields"},
        {"argus.attrib\t1\nprogram\tp\nsample\t0x1\n", ":3: 'sample' with 2 fields"},
        {"argus.attrib\t1\nprogram\tp\nmetric\t0x1\ts\t-4\n", ":3: attrib: metric s"},
        {"argus.attrib\t1\n# only a comment\n", "has no program line"},
    };
    char path[] = "/tmp/argus_attrib_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(cases[i].text, f);
        fclose(f);
        assert_int_equal(argus_attrib_new(&a), 0);
        msg[0] = '\0';
        int rc = argus_attrib_load(a, path, msg, sizeof msg);
        if (rc == 0 || strstr(msg, cases[i].want) == NULL)
            fail_msg("case %zu: rc %d, message '%s', want '%s'", i, rc, msg, cases[i].want);
        argus_attrib_free(a);
    }
    remove(path);
    assert_int_equal(argus_attrib_new(&a), 0);
    assert_int_equal(argus_attrib_load(a, "/nonexistent/evidence.tsv", msg, sizeof msg), ARGUS_EIO);
    assert_non_null(strstr(msg, "/nonexistent/evidence.tsv: cannot open"));
    argus_attrib_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_exact), cmocka_unit_test(test_ratio_lifted),
        cmocka_unit_test(test_entropy),     cmocka_unit_test(test_other_program_refused),
        cmocka_unit_test(test_rules),       cmocka_unit_test(test_bad_evidence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
