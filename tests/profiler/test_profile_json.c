/*
 * The profile JSON writer and reader: round trip (nulls, hostile strings,
 * exact doubles), reader errors that name the file and the field, the key
 * index, derived features and the occupancy arithmetic.
 */
#define _GNU_SOURCE 1
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mosaic/profile.h"

static const char *tmp_path(void)
{
    static char path[256];
    snprintf(path, sizeof(path), "/tmp/mosaic_prof_test_%ld.json", (long)getpid());
    return path;
}

static void build(struct mosaic_profile *p)
{
    mosaic_profile_init(p);
    assert_int_equal(mosaic_set_str(&p->gpu.name, "NVIDIA H200"), 0);
    p->gpu.sm_count = 132;
    p->gpu.l2_bytes = 62914560;
    mosaic_set_str(&p->gpu.driver, "580.159.04");
    mosaic_set_str(&p->gpu.cuda, "13.0");
    mosaic_set_str(&p->gpu.cc, "9.0");
    mosaic_set_str(&p->date, "2026-11-20T10:00:00Z");
    mosaic_set_str(&p->method, MOSAIC_METHOD_CUPTI);
    mosaic_set_str(&p->source, "./prog --n 'a b'");
    p->passes = 38;

    static const char *names[] = {
        "_Z6vecaddPKfS0_Pfi",
        "void k<\"q\", 2>(char const*)\\ \t tab\n newline \x01 ctl",
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 ok",
        "bad \xff\xfe utf8 \xc3",
    };
    for (int i = 0; i < 4; i++) {
        struct mosaic_kernel *k = mosaic_profile_add_kernel(p);
        assert_non_null(k);
        k->name = strdup(names[i]);
        int64_t g[3] = {4096 + i, 1, 1}, b[3] = {256, 1, 1};
        memcpy(k->grid, g, sizeof(g));
        memcpy(k->block, b, sizeof(b));
        k->dyn_smem = i * 1024;
        k->key = mosaic_kernel_key(k->name, k->grid, k->block, k->dyn_smem);
        k->static_smem = 0;
        k->regs = 16 + i;
        k->local_bytes = 0;
        k->max_threads = 1024;
        k->carveout = -1;
        k->occ.blocks_per_sm = 8;
        k->occ.limit_threads = 8;
        k->occ.limit_regs = 16;
        k->occ.limit_smem = 228;
        k->occ.limit_blocks = 32;
        k->occ.reserved_smem_per_block = 1024;
        k->launches = 3 + i;
        for (int m = 0; m < MOSAIC_N_METRICS; m++)
            k->metrics[m] = (m + 1) * 1.1 + i / 3.0;
        k->metrics[MOSAIC_M_duration_ns] = 12345.678901234567;
        k->metrics[MOSAIC_M_dram_read_bw] = 3.2e12;
        k->metrics[MOSAIC_M_l1_hit_rate_pct] = 1e-300;
        if (i == 1) {
            k->metrics[MOSAIC_M_pipe_tensor_gmma_pct] = NAN;
            k->regs = MOSAIC_NULL;
            k->occ.blocks_per_sm = MOSAIC_NULL;
        }
        mosaic_kernel_derive(k);
    }
    mosaic_profile_add_problem(p, "metric %s dropped: \"quoted\"", "x");
}

static void test_round_trip(void **state)
{
    (void)state;
    struct mosaic_profile p, q;
    char err[1024];

    build(&p);
    assert_false(p.complete);
    assert_int_equal(mosaic_profile_write_file(&p, tmp_path(), err, sizeof(err)), 0);
    if (mosaic_profile_read_file(tmp_path(), &q, err, sizeof(err)) != 0)
        fail_msg("read back failed: %s", err);

    assert_string_equal(q.gpu.name, "NVIDIA H200");
    assert_int_equal(q.gpu.sm_count, 132);
    assert_int_equal(q.gpu.l2_bytes, 62914560);
    assert_string_equal(q.gpu.driver, "580.159.04");
    assert_string_equal(q.gpu.cuda, "13.0");
    assert_string_equal(q.gpu.cc, "9.0");
    assert_string_equal(q.date, p.date);
    assert_string_equal(q.method, p.method);
    assert_string_equal(q.source, p.source);
    assert_int_equal(q.passes, 38);
    assert_false(q.complete);
    assert_int_equal(q.n_problems, 1);
    assert_string_equal(q.problems[0], p.problems[0]);
    assert_int_equal(q.n_kernels, p.n_kernels);
    for (size_t i = 0; i < p.n_kernels; i++) {
        const struct mosaic_kernel *a = &p.kernels[i], *b = &q.kernels[i];
        if (i < 3) {
            assert_string_equal(a->name, b->name);
            assert_string_equal(a->key, b->key);
        } else {
            /* invalid UTF-8 became U+FFFD */
            assert_string_equal(b->name, "bad \xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd");
        }
        assert_memory_equal(a->grid, b->grid, sizeof(a->grid));
        assert_memory_equal(a->block, b->block, sizeof(a->block));
        assert_int_equal(a->dyn_smem, b->dyn_smem);
        assert_int_equal(a->static_smem, b->static_smem);
        assert_int_equal(a->regs, b->regs);
        assert_int_equal(a->local_bytes, b->local_bytes);
        assert_int_equal(a->max_threads, b->max_threads);
        assert_int_equal(a->carveout, b->carveout);
        assert_memory_equal(&a->occ, &b->occ, sizeof(a->occ));
        assert_int_equal(a->launches, b->launches);
        for (int m = 0; m < MOSAIC_N_METRICS; m++) {
            if (isnan(a->metrics[m]))
                assert_true(isnan(b->metrics[m]));
            else if (a->metrics[m] != b->metrics[m])
                fail_msg("kernel %zu metric %s: %.17g != %.17g", i,
                         mosaic_metric_key(m), a->metrics[m], b->metrics[m]);
        }
        for (int d = 0; d < MOSAIC_N_DERIVED; d++) {
            if (isnan(a->derived[d]))
                assert_true(isnan(b->derived[d]));
            else
                assert_true(a->derived[d] == b->derived[d]);
        }
    }
    assert_int_equal(mosaic_kernel_n_missing(&q.kernels[1]), 1);
    mosaic_profile_free(&p);
    mosaic_profile_free(&q);
    unlink(tmp_path());
}

static void test_complete_empty(void **state)
{
    (void)state;
    struct mosaic_profile p, q;
    char err[512];

    mosaic_profile_init(&p);
    mosaic_set_str(&p.method, MOSAIC_METHOD_NCU);
    assert_true(p.complete);
    assert_int_equal(mosaic_profile_write_file(&p, tmp_path(), err, sizeof(err)), 0);
    assert_int_equal(mosaic_profile_read_file(tmp_path(), &q, err, sizeof(err)), 0);
    assert_true(q.complete);
    assert_int_equal(q.n_kernels, 0);
    assert_null(q.gpu.name);
    assert_int_equal(q.gpu.sm_count, MOSAIC_NULL);
    mosaic_profile_free(&p);
    mosaic_profile_free(&q);
    unlink(tmp_path());
}

/* Reads json; expects failure naming what and containing want. */
static void expect_read_error(const char *json, const char *want)
{
    struct mosaic_profile p;
    char err[1024] = "";
    int rc = mosaic_profile_read_string(json, "x.json", &p, err, sizeof(err));
    if (rc == 0)
        fail_msg("read succeeded, wanted \"%s\"", want);
    /* Input that is not a profile is malformed, not a caller's mistake. */
    assert_int_equal(rc, MOSAIC_EFORMAT);
    assert_int_equal(strncmp(err, "x.json: ", 8), 0);
    if (!strstr(err, want))
        fail_msg("error lacks \"%s\": %s", want, err);
    assert_int_equal(p.n_kernels, 0);
}

static char *good_json(void)
{
    struct mosaic_profile p;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    build(&p);
    assert_int_equal(mosaic_profile_write(&p, f), 0);
    fclose(f);
    mosaic_profile_free(&p);
    return buf;
}

static char *subst(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    assert_non_null(at);
    char *out = malloc(strlen(s) + strlen(to) + 1);
    memcpy(out, s, (size_t)(at - s));
    strcpy(out + (at - s), to);
    strcat(out, at + strlen(from));
    return out;
}

static void test_read_errors(void **state)
{
    (void)state;
    char *g = good_json();
    char *t;

    expect_read_error("", "not valid JSON");
    expect_read_error("[1,2]", "top level");
    expect_read_error("{\"schema\": 3}", "schema");
    expect_read_error("{\"schema\": \"mosaic-profile/9\"}", "mosaic-profile/9");
    /* truncated */
    t = strndup(g, strlen(g) / 2);
    expect_read_error(t, "truncated");
    free(t);
    t = subst(g, "\"grid\": [4097, 1, 1]", "\"grid\": [4097, 1]");
    expect_read_error(t, "kernels[1].grid");
    free(t);
    t = subst(g, "\"grid\": [4097, 1, 1]", "\"grid\": [4097, -1, 1]");
    expect_read_error(t, "kernels[1].grid");
    free(t);
    t = subst(g, "\"launches\": 4", "\"launches\": \"4\"");
    expect_read_error(t, "kernels[1].launches");
    free(t);
    t = subst(g, "\"launches\": 4", "\"launches\": 4.5");
    expect_read_error(t, "kernels[1].launches");
    free(t);
    t = subst(g, "\"dram_read_bytes\": ", "\"dram_read_bytes\": \"x\", \"y\": ");
    expect_read_error(t, "kernels[0].metrics.dram_read_bytes");
    free(t);
    t = subst(g, "\"complete\": false", "\"complete\": 0");
    expect_read_error(t, "complete");
    free(t);
    t = subst(g, "\"kernels\": [", "\"kernels\": {\"a\":[");
    /* not an array any more (and now invalid JSON) */
    expect_read_error(t, "not valid JSON");
    free(t);
    t = subst(g, "\"gpu\": {", "\"gpu\": 5, \"gpx\": {");
    expect_read_error(t, "gpu");
    free(t);
    t = subst(g, "\"sm_count\": 132", "\"sm_count\": 1e400");
    expect_read_error(t, "sm_count");
    free(t);
    free(g);

    struct mosaic_profile p;
    char err[512];
    assert_int_equal(mosaic_profile_read_file("/nonexistent/p.json", &p, err, sizeof(err)),
                     MOSAIC_EIO);
    assert_non_null(strstr(err, "/nonexistent/p.json: cannot open"));
    assert_int_equal(mosaic_profile_read_file("/", &p, err, sizeof(err)), MOSAIC_EIO);
    assert_non_null(strstr(err, "not a regular file"));
}

/* A name that is not valid UTF-8 (as a driver may hand back) is written
 * escaped, and the file still reads back, with U+FFFD in its place. */
static void test_escaping(void **state)
{
    (void)state;
    static const char raw[] = "a\"b\\c\n\x01\x7f\xc3\xa9\xed\xa0\x80z";
    struct mosaic_profile p, q;
    char *buf = NULL, err[512] = "";
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    mosaic_profile_init(&p);
    assert_int_equal(mosaic_set_str(&p.method, MOSAIC_METHOD_NCU), 0);
    assert_int_equal(mosaic_set_str(&p.gpu.name, raw), 0);
    assert_int_equal(mosaic_profile_write(&p, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "\"name\": \"a\\\"b\\\\c\\n\\u0001\\u007f\xc3\xa9"
                                "\\ufffd\\ufffd\\ufffdz\""));
    assert_int_equal(mosaic_profile_read_string(buf, "esc.json", &q, err, sizeof(err)), 0);
    assert_string_equal(q.gpu.name, "a\"b\\c\n\x01\x7f\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd"
                                    "\xef\xbf\xbdz");
    mosaic_profile_free(&q);
    mosaic_profile_free(&p);
    free(buf);
}

static void test_kindex(void **state)
{
    (void)state;
    struct mosaic_profile p;
    struct mosaic_kindex ix = {NULL, 0};
    char name[32];

    mosaic_profile_init(&p);
    for (int i = 0; i < 3000; i++) {
        struct mosaic_kernel *k = mosaic_profile_add_kernel(&p);
        snprintf(name, sizeof(name), "k%d", i);
        int64_t g[3] = {i, 1, 1}, b[3] = {32, 1, 1};
        k->name = strdup(name);
        k->key = mosaic_kernel_key(name, g, b, 0);
        assert_int_equal(mosaic_kindex_add(&ix, &p, p.n_kernels - 1), 0);
    }
    for (int i = 0; i < 3000; i += 7) {
        snprintf(name, sizeof(name), "k%d", i);
        int64_t g[3] = {i, 1, 1}, b[3] = {32, 1, 1};
        char *key = mosaic_kernel_key(name, g, b, 0);
        assert_int_equal(mosaic_kindex_find(&ix, &p, key), i);
        free(key);
    }
    int64_t g[3] = {1, 1, 1}, b[3] = {32, 1, 1};
    char *key = mosaic_kernel_key("k1", g, b, 4);
    assert_int_equal(mosaic_kindex_find(&ix, &p, key), -1);
    free(key);
    mosaic_kindex_free(&ix);
    mosaic_profile_free(&p);
}

/* The key in a caller's buffer is the documented format, the same as the
 * allocated one, and says when it was cut. */
static void test_key_buf(void **state)
{
    (void)state;
    int64_t g[3] = {4294967295LL, 2, 3}, b[3] = {256, 1, 1};
    char buf[128], small[10];
    const char *want = "_Z3fooPf|grid=4294967295,2,3|block=256,1,1|dsmem=49152";
    char *key = mosaic_kernel_key("_Z3fooPf", g, b, 49152);

    assert_string_equal(key, want);
    assert_int_equal(mosaic_kernel_key_buf(buf, sizeof(buf), "_Z3fooPf", g, b, 49152),
                     (int)strlen(want));
    assert_string_equal(buf, want);
    assert_int_equal(mosaic_kernel_key_buf(small, sizeof(small), "_Z3fooPf", g, b,
                                           49152),
                     (int)strlen(want));
    assert_string_equal(small, "_Z3fooPf|");
    assert_int_equal(mosaic_kernel_key_buf(buf, sizeof(buf), NULL, g, b, 0),
                     (int)strlen("?|grid=4294967295,2,3|block=256,1,1|dsmem=0"));
    assert_string_equal(buf, "?|grid=4294967295,2,3|block=256,1,1|dsmem=0");
    free(key);
}

static void test_derived(void **state)
{
    (void)state;
    struct mosaic_kernel k;
    mosaic_kernel_init(&k);
    mosaic_kernel_derive(&k);
    for (int d = 0; d < MOSAIC_N_DERIVED; d++)
        assert_true(isnan(k.derived[d]));
    k.metrics[MOSAIC_M_inst_fma] = 10;
    k.metrics[MOSAIC_M_inst_alu] = 20;
    k.metrics[MOSAIC_M_inst_xu] = 10;
    k.metrics[MOSAIC_M_inst_lsu] = 8;
    k.metrics[MOSAIC_M_gld_sectors] = 32;
    k.metrics[MOSAIC_M_gld_requests] = 0;
    k.metrics[MOSAIC_M_issue_active] = 0.25;
    mosaic_kernel_derive(&k);
    assert_true(k.derived[MOSAIC_D_compute_to_lsu] == 5.0);
    assert_true(isnan(k.derived[MOSAIC_D_sectors_per_request]));
    assert_true(k.derived[MOSAIC_D_issue_stall_ratio] == 0.75);
    assert_int_equal(mosaic_metric_by_name("gpu__time_duration.sum"), MOSAIC_M_duration_ns);
    assert_int_equal(mosaic_metric_by_key("ipc"), MOSAIC_M_ipc);
    assert_int_equal(mosaic_derived_by_key("compute_to_lsu"), MOSAIC_D_compute_to_lsu);
    assert_int_equal(mosaic_metric_by_name("nope"), -1);
}

/* H100/H200 (sm_90) device limits. */
static const struct mosaic_occ_device h200 = {
    .cc_major = 9, .cc_minor = 0, .warp_size = 32, .max_threads_per_sm = 2048,
    .max_blocks_per_sm = 32, .regs_per_sm = 65536, .regs_per_block = 65536,
    .smem_per_sm = 233472, .smem_per_block_optin = 232448,
    .reserved_smem_per_block = 1024,
};

static void occ(int threads, int regs, int ssmem, int dsmem, int carveout,
                int64_t lt, int64_t lr, int64_t ls)
{
    struct mosaic_occ_kernel k = {threads, regs, ssmem, dsmem, carveout};
    struct mosaic_occupancy o;
    memset(&o, 0, sizeof(o));
    mosaic_occupancy_limits(&h200, &k, &o);
    if (o.limit_threads != lt || o.limit_regs != lr || o.limit_smem != ls)
        fail_msg("threads %d regs %d smem %d+%d carveout %d: got threads %lld "
                 "regs %lld smem %lld, want %lld %lld %lld", threads, regs,
                 ssmem, dsmem, carveout, (long long)o.limit_threads,
                 (long long)o.limit_regs, (long long)o.limit_smem,
                 (long long)lt, (long long)lr, (long long)ls);
    assert_int_equal(o.limit_blocks, 32);
    assert_int_equal(o.reserved_smem_per_block, 1024);
}

static void test_occupancy(void **state)
{
    (void)state;
    /* Values from the CUDA occupancy calculator (cuda_occupancy.h). */
    occ(256, 32, 0, 0, -1, 8, 8, 228);
    occ(256, 16, 0, 0, -1, 8, 16, 228);
    occ(128, 64, 0, 0, -1, 16, 8, 228);
    occ(1024, 64, 0, 0, -1, 2, 1, 228);
    occ(1024, 72, 0, 0, -1, 2, 0, 228);       /* 72*32*32 > 65536 */
    occ(96, 40, 0, 0, -1, 21, 16, 228);      /* 3 warps/block, 1280 regs/warp */
    occ(256, 32, 48 * 1024, 0, -1, 8, 8, 4); /* 49 KiB/block into 228 KiB */
    occ(256, 32, 0, 100 * 1024, -1, 8, 8, 2);
    occ(256, 32, 0, 227 * 1024, -1, 8, 8, 1);
    occ(256, 32, 0, 228 * 1024, -1, 8, 8, 0); /* over the opt-in limit */
    occ(256, 32, 16 * 1024, 0, 25, 8, 8, 3);  /* carveout 25% -> 64 KiB config */
    occ(256, 255, 0, 0, -1, 8, 1, 228);
    occ(0, 32, 0, 0, -1, 0, 0, 0);
}

/* The strict reader and the values no GPU has (issue 9, bad input). */
static void test_read_strict(void **state)
{
    (void)state;
    char *g = good_json();
    char *t, *u;

    /* Trailing data: a second document, or text after the first. */
    t = malloc(2 * strlen(g) + 1);
    strcpy(t, g);
    strcat(t, g);
    expect_read_error(t, "text after the end of the document");
    free(t);
    t = malloc(strlen(g) + 8);
    strcpy(t, g);
    strcat(t, "\n,\n");
    expect_read_error(t, "text after the end of the document");
    free(t);
    /* Duplicate keys at the top, in the GPU and deep in a kernel: the
     * message names the path. */
    t = subst(g, "\"schema\": ", "\"complete\": true, \"schema\": ");
    expect_read_error(t, "x.json: complete: the key appears twice");
    free(t);
    t = subst(g, "\"sm_count\": 132", "\"sm_count\": 132, \"sm_count\": 108");
    expect_read_error(t, "x.json: gpu.sm_count: the key appears twice");
    free(t);
    t = subst(g, "\"dram_read_bytes\": ", "\"ipc\": 9, \"dram_read_bytes\": ");
    expect_read_error(t, "x.json: kernels[0].metrics.ipc: the key appears twice");
    free(t);
    t = subst(g, "\"grid\": [4097, 1, 1]", "\"grid\": [4097, 1, 1], \"grid\": [1, 1, 1]");
    expect_read_error(t, "x.json: kernels[1].grid: the key appears twice");
    free(t);

    /* The GPU description: impossible values are refused, by field. */
    t = subst(g, "\"sm_count\": 132", "\"sm_count\": 0");
    expect_read_error(t, "x.json: gpu.sm_count: 0 SMs: a GPU has 1..1024");
    free(t);
    t = subst(g, "\"sm_count\": 132", "\"sm_count\": -132");
    expect_read_error(t, "gpu.sm_count: -132 SMs");
    free(t);
    t = subst(g, "\"sm_count\": 132", "\"sm_count\": 62914560");
    expect_read_error(t, "gpu.sm_count: 62914560 SMs");
    free(t);
    t = subst(g, "\"l2_bytes\": 62914560", "\"l2_bytes\": 0");
    expect_read_error(t, "gpu.l2_bytes: 0 bytes");
    free(t);
    t = subst(g, "\"cc\": \"9.0\"", "\"cc\": \"nine\"");
    expect_read_error(t, "gpu.cc: \"nine\" is not a compute capability");
    free(t);
    t = subst(g, "\"cc\": \"9.0\"", "\"cc\": \"9.\"");
    expect_read_error(t, "gpu.cc");
    free(t);
    t = subst(g, "\"name\": \"NVIDIA H200\"", "\"name\": \"\"");
    expect_read_error(t, "gpu.name: empty");
    free(t);

    /* Launch dimensions outside CUDA's limits. */
    t = subst(g, "\"grid\": [4097, 1, 1]", "\"grid\": [0, 1, 1]");
    expect_read_error(t, "kernels[1].grid: x = 0 blocks is outside");
    free(t);
    t = subst(g, "\"grid\": [4097, 1, 1]", "\"grid\": [4097, 65536, 1]");
    expect_read_error(t, "kernels[1].grid: y = 65536 blocks");
    free(t);
    t = subst(g, "\"grid\": [4097, 1, 1]", "\"grid\": [4294967295, 4294967295, 4294967295]");
    expect_read_error(t, "kernels[1].grid: x = 4294967295");
    free(t);
    u = subst(g, "\"grid\": [4097, 1, 1]", "\"grid\": [4097, 1, 1]");
    t = subst(u, "\"block\": [256, 1, 1]", "\"block\": [256, 8, 1]");
    expect_read_error(t, "kernels[0].block: 2048 threads per block");
    free(t);
    free(u);
    t = subst(g, "\"block\": [256, 1, 1]", "\"block\": [1, 1, 65]");
    expect_read_error(t, "kernels[0].block: z = 65 threads");
    free(t);
    free(g);
}

static void test_read_file_fifo(void **state)
{
    char dir[] = "/tmp/mosaic_prof_fifo_XXXXXX", path[128], err[512] = "";
    struct mosaic_profile p;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/p.json", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    /* No writer: a blocking open would wait for ever; the alarm fails the
     * test instead of hanging it. */
    alarm(10);
    assert_int_equal(mosaic_profile_read_file(path, &p, err, sizeof(err)), MOSAIC_EIO);
    alarm(0);
    assert_non_null(strstr(err, "is a FIFO, not a regular file"));
    assert_int_equal(p.n_kernels, 0);
    unlink(path);
    rmdir(dir);
}

static void test_check_gpu(void **state)
{
    struct mosaic_profile p;
    struct mosaic_gpu want_h200 = {.name = "NVIDIA H200", .sm_count = 132,
                              .l2_bytes = MOSAIC_NULL, .cc = "9.0"};
    struct mosaic_gpu any_sms = {.sm_count = MOSAIC_NULL, .l2_bytes = MOSAIC_NULL,
                                 .cc = "9.0"};
    char err[512] = "";

    (void)state;
    build(&p);
    assert_int_equal(mosaic_profile_check_gpu(&p, "h.json", &want_h200, err, sizeof(err)), 0);
    /* A profile of an A100 against H200 models. */
    mosaic_set_str(&p.gpu.name, "NVIDIA A100-SXM4-80GB");
    p.gpu.sm_count = 108;
    mosaic_set_str(&p.gpu.cc, "8.0");
    assert_int_equal(mosaic_profile_check_gpu(&p, "a.json", &want_h200, err, sizeof(err)),
                     MOSAIC_EFORMAT);
    assert_string_equal(err, "a.json: gpu.sm_count: the profile was taken on a GPU "
                             "with 108 SMs (NVIDIA A100-SXM4-80GB), but this needs "
                             "132 (NVIDIA H200); profile the kernels on that GPU");
    assert_int_equal(mosaic_profile_check_gpu(&p, "a.json", &any_sms, err, sizeof(err)),
                     MOSAIC_EFORMAT);
    assert_non_null(strstr(err, "a.json: gpu.cc: the profile was taken on compute "
                                "capability 8.0"));
    /* Same SMs and cc, another name: still another GPU. */
    p.gpu.sm_count = 132;
    mosaic_set_str(&p.gpu.cc, "9.0");
    assert_int_equal(mosaic_profile_check_gpu(&p, "a.json", &want_h200, err, sizeof(err)),
                     MOSAIC_EFORMAT);
    assert_non_null(strstr(err, "gpu.name: the profile was taken on \"NVIDIA A100"));
    assert_int_equal(mosaic_profile_check_gpu(&p, "a.json", &any_sms, err, sizeof(err)), 0);
    /* A profile that does not say is not vouched for. */
    p.gpu.sm_count = MOSAIC_NULL;
    assert_int_equal(mosaic_profile_check_gpu(&p, "n.json", &want_h200, err, sizeof(err)),
                     MOSAIC_EFORMAT);
    assert_non_null(strstr(err, "n.json: gpu.sm_count: unknown (null), but this needs"));
    assert_int_equal(mosaic_profile_check_gpu(NULL, "n.json", &want_h200, err, sizeof(err)),
                     MOSAIC_EINVAL);
    mosaic_profile_free(&p);
}

static void test_launch_sizes(void **state)
{
    int64_t v = -1;
    const int64_t g[3] = {4096, 2, 3}, b[3] = {256, 2, 2};
    const int64_t big[3] = {2147483647, 65535, 65535}, b1024[3] = {1024, 1, 1};
    const int64_t huge[3] = {4294967295LL, 4294967295LL, 4294967295LL};
    const int64_t zero[3] = {5, 0, 1}, unknown[3] = {5, MOSAIC_NULL, 1};

    (void)state;
    assert_int_equal(mosaic_launch_blocks(g, &v), 0);
    assert_int_equal(v, 24576);
    assert_int_equal(mosaic_launch_threads(g, b, &v), 0);
    assert_int_equal(v, 24576 * 1024);
    /* CUDA's largest grid fits in int64_t, its threads do not. */
    assert_int_equal(mosaic_launch_blocks(big, &v), 0);
    assert_int_equal(v, 2147483647LL * 65535 * 65535);
    assert_int_equal(mosaic_launch_threads(big, b1024, &v), MOSAIC_ETOOBIG);
    assert_int_equal(v, 0);
    assert_int_equal(mosaic_launch_blocks(huge, &v), MOSAIC_ETOOBIG);
    assert_int_equal(mosaic_launch_blocks(zero, &v), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_launch_blocks(unknown, &v), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_launch_threads(g, unknown, &v), MOSAIC_EFORMAT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_complete_empty),
        cmocka_unit_test(test_read_errors),
        cmocka_unit_test(test_read_strict),
        cmocka_unit_test(test_read_file_fifo),
        cmocka_unit_test(test_check_gpu),
        cmocka_unit_test(test_launch_sizes),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_kindex),
        cmocka_unit_test(test_key_buf),
        cmocka_unit_test(test_derived),
        cmocka_unit_test(test_occupancy),
    };
    return cmocka_run_group_tests_name("profiler_profile_json", tests, NULL, NULL);
}
