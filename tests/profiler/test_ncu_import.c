/*
 * The ncu CSV importer on a hand-written `ncu --csv --page raw` fixture and
 * on corrupt, truncated and hostile inputs: every error names the file and
 * the line, nothing crashes.
 */
#define _GNU_SOURCE 1
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ncu_import.h"
#include "mosaic/profile.h"

#ifndef FIXTURES
#error "FIXTURES must name tests/profiler/fixtures"
#endif

static const char *fixture(const char *name)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf), "%s/%s", FIXTURES, name);
    return buf;
}

static const struct mosaic_kernel *find(const struct mosaic_profile *p,
                                        const char *name, int64_t gx)
{
    for (size_t i = 0; i < p->n_kernels; i++)
        if (strcmp(p->kernels[i].name, name) == 0 && p->kernels[i].grid[0] == gx)
            return &p->kernels[i];
    return NULL;
}

#define assert_near(a, b) assert_true(fabs((a) - (b)) <= 1e-9 * fabs(b) + 1e-12)

/* ncu_raw.csv: the exact layout of ncu 2025.3's raw page, base units. */
static void test_fixture_real_layout(void **state)
{
    (void)state;
    struct mosaic_profile p;
    char err[1024] = "";

    if (mosaic_ncu_import(fixture("ncu_raw.csv"), &p, err, sizeof(err)) != 0)
        fail_msg("import failed: %s", err);
    assert_int_equal(p.n_kernels, 2);
    assert_true(p.complete);
    assert_string_equal(p.gpu.name, "NVIDIA H200");
    assert_int_equal(p.gpu.l2_bytes, 62914560);
    const struct mosaic_kernel *a = find(&p, "_Z6vecaddPKfS0_Pfi", 65536);
    assert_non_null(a);
    assert_int_equal(a->launches, 2);
    assert_int_equal(a->regs, 16);
    /* The exact column is used, not a rollup sibling (.avg/.max). */
    assert_near(a->metrics[MOSAIC_M_dram_read_bytes], 134226176.0);
    assert_near(a->metrics[MOSAIC_M_duration_ns], 58176.0);
    assert_near(a->metrics[MOSAIC_M_issue_active], 0.22);
    assert_near(a->metrics[MOSAIC_M_stall_long_scoreboard], 40.21);
    assert_near(a->metrics[MOSAIC_M_dram_read_bw], 2307243328523.14);
    assert_near(a->metrics[MOSAIC_M_sm_cycles_active_avg], 110598.40);
    assert_near(a->derived[MOSAIC_D_sectors_per_request], 4.0);
    const struct mosaic_kernel *b = find(&p, "void smem<float, 256>(float *, int)", 4096);
    assert_non_null(b);
    assert_int_equal(b->dyn_smem, 1024);
    assert_int_equal(b->occ.blocks_per_sm, 8);
    assert_near(b->metrics[MOSAIC_M_smem_bank_conflicts], 233277.0);
    assert_true(isnan(b->metrics[MOSAIC_M_pipe_tensor_gmma_pct]));
    mosaic_profile_free(&p);
}

/* ncu_raw_h200_testprog.csv: real output of ncu 2025.3.1 on an H200
 * (tests/profiler/gpu/testprog.cu, --cache-control none --clock-control
 * none), 11 launches of 8 distinct kernels. */
static void test_real_ncu_output(void **state)
{
    (void)state;
    struct mosaic_profile p;
    char err[1024] = "";

    if (mosaic_ncu_import(fixture("ncu_raw_h200_testprog.csv"), &p, err,
                          sizeof(err)) != 0)
        fail_msg("import failed: %s", err);
    assert_int_equal(p.n_kernels, 8);
    assert_true(p.complete);
    assert_int_equal(p.gpu.sm_count, 132);
    int64_t launches = 0;
    for (size_t i = 0; i < p.n_kernels; i++) {
        launches += p.kernels[i].launches;
        assert_int_equal(mosaic_kernel_n_missing(&p.kernels[i]), 0);
    }
    assert_int_equal(launches, 11);
    const struct mosaic_kernel *v = find(&p, "_Z6vecaddPKfS0_Pfi", 65536);
    assert_non_null(v);
    assert_int_equal(v->launches, 3);
    assert_near(v->metrics[MOSAIC_M_gld_requests], 1048576.0);
    assert_near(v->metrics[MOSAIC_M_inst_fma], 2621440.0);
    assert_near(v->metrics[MOSAIC_M_duration_ns], 58176.0);
    const struct mosaic_kernel *s = find(&p, "_Z11smem_kernelPfi", 4096);
    assert_non_null(s);
    assert_int_equal(s->dyn_smem, 1024);
    assert_near(s->metrics[MOSAIC_M_smem_bank_conflicts], 233277.0);
    const struct mosaic_kernel *g = find(&p, "_Z4incrPii", 16384);
    assert_non_null(g);
    assert_int_equal(g->launches, 2); /* graph replays, seen by ncu */
    mosaic_profile_free(&p);
}

/* ncu_raw_scaled.csv: auto-scaled units (usecond, Mbyte, Tbyte/second,
 * Ksector, sector/usecond, Kinst, Mibyte, Kbyte/block). */
static void test_fixture_scaled(void **state)
{
    (void)state;
    struct mosaic_profile p;
    char err[1024] = "";

    int rc = mosaic_ncu_import(fixture("ncu_raw_scaled.csv"), &p, err, sizeof(err));
    if (rc != 0)
        fail_msg("import failed: %s", err);
    assert_int_equal(p.n_kernels, 3);
    assert_string_equal(p.method, "ncu_csv");
    assert_true(p.complete);
    assert_int_equal(p.n_problems, 0);
    assert_string_equal(p.gpu.name, "NVIDIA H200");
    assert_string_equal(p.gpu.cc, "9.0");
    assert_int_equal(p.gpu.sm_count, 132);
    assert_int_equal(p.gpu.l2_bytes, 60 * 1048576);

    const struct mosaic_kernel *a = find(&p, "_Z6vecaddPKfS0_Pfi", 4096);
    assert_non_null(a);
    assert_int_equal(a->launches, 2); /* rows 0 and 2 share the key */
    assert_int_equal(a->block[0], 256);
    assert_int_equal(a->block[1], 1);
    assert_int_equal(a->dyn_smem, 0);
    assert_int_equal(a->regs, 16);
    assert_int_equal(a->static_smem, 0);
    assert_string_equal(a->key, "_Z6vecaddPKfS0_Pfi|grid=4096,1,1|block=256,1,1|dsmem=0");
    /* Units converted; the first launch's values are kept. */
    assert_near(a->metrics[MOSAIC_M_duration_ns], 12500.0);
    assert_near(a->metrics[MOSAIC_M_dram_read_bytes], 33.55e6);
    assert_near(a->metrics[MOSAIC_M_dram_write_bytes], 16777.22e3);
    assert_near(a->metrics[MOSAIC_M_dram_read_bw], 2.68e12);
    assert_near(a->metrics[MOSAIC_M_dram_write_bw], 1342.18e9);
    assert_near(a->metrics[MOSAIC_M_l2_read_sectors], 1048576.0);
    assert_near(a->metrics[MOSAIC_M_l2_write_sectors], 524290.0);
    assert_near(a->metrics[MOSAIC_M_l2_read_sector_rate], 83886.08e6);
    assert_near(a->metrics[MOSAIC_M_l2_write_sector_rate], 41.94e9);
    assert_near(a->metrics[MOSAIC_M_l2_hit_rate_pct], 49.87);
    assert_near(a->metrics[MOSAIC_M_inst_lsu], 98300.0);
    assert_near(a->metrics[MOSAIC_M_sm_cycles_active_avg], 15234.56);
    assert_near(a->metrics[MOSAIC_M_ipc], 0.36);
    /* Derived features. */
    assert_near(a->derived[MOSAIC_D_compute_to_lsu], (65536.0 + 131072.0) / 98300.0);
    assert_near(a->derived[MOSAIC_D_sectors_per_request], 4.0);
    assert_near(a->derived[MOSAIC_D_issue_stall_ratio], 0.91);
    /* Occupancy limits from launch statistics. */
    assert_int_equal(a->occ.limit_regs, 8);
    assert_int_equal(a->occ.limit_threads, 8);
    assert_int_equal(a->occ.blocks_per_sm, 8);
    assert_int_equal(a->local_bytes, MOSAIC_NULL);

    const struct mosaic_kernel *a2 = find(&p, "_Z6vecaddPKfS0_Pfi", 8192);
    assert_non_null(a2);
    assert_int_equal(a2->launches, 1);
    assert_near(a2->metrics[MOSAIC_M_duration_ns], 25000.0);

    const struct mosaic_kernel *b =
        find(&p, "void reduce<float, 256>(const float *, float *, int)", 1024);
    assert_non_null(b);
    assert_int_equal(b->dyn_smem, 1024);
    assert_int_equal(b->static_smem, 4100);
    assert_int_equal(b->regs, 32);
    assert_near(b->metrics[MOSAIC_M_duration_ns], 1234500.0);
    assert_true(isnan(b->metrics[MOSAIC_M_pipe_tensor_gmma_pct])); /* n/a */
    assert_int_equal(mosaic_kernel_n_missing(b), 1);
    assert_true(isnan(b->derived[MOSAIC_D_compute_to_lsu])); /* lsu == 0 */
    assert_int_equal(b->occ.blocks_per_sm, 6);
    mosaic_profile_free(&p);
}

/* Writes text to a temporary file; returns its path (static). */
static const char *tmpfile_with(const char *text, size_t len)
{
    static char path[256];
    snprintf(path, sizeof(path), "/tmp/mosaic_ncu_test_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

static char *slurp_fixture(size_t *len)
{
    FILE *f = fopen(fixture("ncu_raw_scaled.csv"), "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    assert_non_null(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/* Imports text; expects failure with a message that names the file, and
 * (if line > 0) ":<line>:", and contains want. */
static void expect_error(const char *text, size_t len, int line, const char *want)
{
    struct mosaic_profile p;
    char err[1024] = "";
    const char *path = tmpfile_with(text, len);
    int rc = mosaic_ncu_import(path, &p, err, sizeof(err));
    if (rc == 0) {
        unlink(path);
        fail_msg("import of hostile input succeeded (wanted \"%s\")", want);
    }
    if (rc != MOSAIC_EFORMAT)
        fail_msg("hostile input gave %d (%s), not MOSAIC_EFORMAT: %s", rc,
                 mosaic_strerror(rc), err);
    assert_int_equal(p.n_kernels, 0);
    if (strncmp(err, path, strlen(path)) != 0)
        fail_msg("error does not start with the file name: %s", err);
    if (line > 0) {
        char tag[32];
        snprintf(tag, sizeof(tag), ":%d: ", line);
        if (!strstr(err, tag))
            fail_msg("error does not name line %d: %s", line, err);
    }
    if (!strstr(err, want))
        fail_msg("error lacks \"%s\": %s", want, err);
    unlink(path);
}

static void test_empty_and_no_header(void **state)
{
    (void)state;
    expect_error("", 0, 0, "empty file");
    const char *t = "hello\nworld\n==PROF== nothing\n";
    expect_error(t, strlen(t), 0, "no ncu CSV header");
}

static void test_details_page(void **state)
{
    (void)state;
    const char *t =
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\","
        "\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\","
        "\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
        "\"0\",\"1\",\"a\",\"h\",\"k\",\"1\",\"7\",\"(1, 1, 1)\",\"(1, 1, 1)\","
        "\"0\",\"9.0\",\"s\",\"gpu__time_duration.sum\",\"nsecond\",\"5\"\n";
    expect_error(t, strlen(t), 1, "details page");
}

static void test_truncated(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp_fixture(&len);

    /* Cut in the middle of the last row (line 12), inside a quoted field. */
    char *last = buf + len - 2;
    while (last > buf && *last != '\n')
        last--;
    size_t cut = (size_t)(last - buf) + 40;
    expect_error(buf, cut, 12, "unterminated quoted field");

    /* Cut right after a field separator: too few fields. */
    char *p = buf + cut;
    while (*p != ',')
        p++;
    expect_error(buf, (size_t)(p - buf) + 1, 12, "fields but the header has");

    /* Only the header. */
    char *hdr_end = strstr(buf, "\n\"\",");
    assert_non_null(hdr_end);
    expect_error(buf, (size_t)(hdr_end - buf) + 1, 7, "ends after the header");
    free(buf);
}

static void test_header_and_units_only(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp_fixture(&len);
    char *rows = strstr(buf, "\n\"0\",");
    assert_non_null(rows);
    rows[1] = '\0';
    const char *path = tmpfile_with(buf, strlen(buf));
    struct mosaic_profile p;
    char err[1024];
    assert_int_equal(mosaic_ncu_import(path, &p, err, sizeof(err)), 0);
    assert_int_equal(p.n_kernels, 0);
    mosaic_profile_free(&p);
    unlink(path);
    free(buf);
}

/* Replaces the first occurrence of from (after offset start) with to. */
static char *replace_once(const char *s, const char *from, const char *to,
                          size_t start)
{
    const char *at = strstr(s + start, from);
    assert_non_null(at);
    size_t n = strlen(s) - strlen(from) + strlen(to);
    char *out = malloc(n + 1);
    assert_non_null(out);
    size_t pre = (size_t)(at - s);
    memcpy(out, s, pre);
    strcpy(out + pre, to);
    strcat(out, at + strlen(from));
    return out;
}

static size_t row_offset(const char *buf, int id)
{
    char tag[32];
    snprintf(tag, sizeof(tag), "\n\"%d\",", id);
    const char *at = strstr(buf, tag);
    assert_non_null(at);
    return (size_t)(at - buf);
}

static void test_bad_values(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp_fixture(&len);
    char *t;

    t = replace_once(buf, "\"(4096, 1, 1)\"", "\"(4096, x, 1)\"", 0);
    expect_error(t, strlen(t), 9, "Grid Size");
    free(t);
    t = replace_once(buf, "\"(256, 1, 1)\"", "\"(2048, 1, 1)\"", 0);
    expect_error(t, strlen(t), 9, "threads per block");
    free(t);
    t = replace_once(buf, "\"(256, 1, 1)\"", "\"(0, 1, 1)\"", 0);
    expect_error(t, strlen(t), 9, "Block Size");
    free(t);
    t = replace_once(buf, "\"12.50\"", "\"12.5abc\"", 0);
    expect_error(t, strlen(t), 9, "gpu__time_duration.sum");
    free(t);
    t = replace_once(buf, "\"1,234.50\"", "\"1,,234\"", 0);
    expect_error(t, strlen(t), 10, "is not a number");
    free(t);
    t = replace_once(buf, "\"99.00\"", "\"1e999\"", 0);
    expect_error(t, strlen(t), 11, "is not a number");
    free(t);
    t = replace_once(buf, "\"Mbyte\"", "\"furlong\"", 0);
    expect_error(t, strlen(t), 8, "dram__bytes_read.sum");
    free(t);
    t = replace_once(buf, "\"usecond\"", "\"Mbyte\"", 0);
    expect_error(t, strlen(t), 8, "nanoseconds");
    free(t);
    /* A quote inside an unquoted field / text after a closing quote. */
    t = replace_once(buf, "\"_Z6vecaddPKfS0_Pfi\"", "\"_Z6vec\"x\"", row_offset(buf, 2));
    expect_error(t, strlen(t), 11, "malformed CSV");
    free(t);
    /* An empty kernel name. */
    t = replace_once(buf, "\"_Z6vecaddPKfS0_Pfi\"", "\"\"", row_offset(buf, 3));
    expect_error(t, strlen(t), 12, "empty kernel name");
    free(t);
    /* The units line missing: the first data row takes its place. */
    char *units = strstr(buf, "\n\"\",");
    assert_non_null(units);
    char *units_end = strchr(units + 1, '\n');
    size_t ul = (size_t)(units_end - units);
    t = strdup(buf);
    memmove(t + (units - buf), t + (units - buf) + ul, strlen(t) - (size_t)(units - buf) - ul + 1);
    expect_error(t, strlen(t), 8, "expected the units line");
    free(t);
    free(buf);
}

static void test_damaged_header(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp_fixture(&len);
    char *t = replace_once(buf, "\"dram__bytes_read.sum.per_second\"",
                           "\"dram__bytes_read.sum\"", 0);
    expect_error(t, strlen(t), 7, "appears twice");
    free(t);
    t = replace_once(buf, "\"Kernel Name\"", "\"Kernel\"", 0);
    expect_error(t, strlen(t), 7, "no \"Kernel Name\" column");
    free(t);
    t = replace_once(buf, "\"Grid Size\"", "\"Grid\"", 0);
    expect_error(t, strlen(t), 7, "Grid Size");
    free(t);
    free(buf);
}

static void test_missing_metric_column(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp_fixture(&len);
    /* Rename a metric column: the import succeeds, incomplete. */
    char *t = replace_once(buf, "\"sm__cycles_active.max\"", "\"sm__cycles_active.sum\"", 0);
    const char *path = tmpfile_with(t, strlen(t));
    struct mosaic_profile p;
    char err[1024];
    assert_int_equal(mosaic_ncu_import(path, &p, err, sizeof(err)), 0);
    assert_false(p.complete);
    assert_int_equal(p.n_problems, 1);
    assert_non_null(strstr(p.problems[0], "sm__cycles_active.max"));
    assert_true(isnan(p.kernels[0].metrics[MOSAIC_M_sm_cycles_active_max]));
    mosaic_profile_free(&p);
    unlink(path);
    free(t);
    free(buf);
}

static void test_binary_and_huge(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp_fixture(&len);
    /* A NUL byte in a data row. */
    char *t = malloc(len + 1);
    memcpy(t, buf, len + 1);
    t[row_offset(buf, 1) + 5] = '\0';
    expect_error(t, len, 10, "NUL byte");
    free(t);

    /* A header of 100001 fields. */
    size_t n = 4 + 100001 * 4 + 32;
    t = malloc(n);
    strcpy(t, "\"ID\"");
    size_t o = 4;
    for (int i = 0; i < 100001; i++) {
        memcpy(t + o, ",\"x\"", 4);
        o += 4;
    }
    strcpy(t + o, ",\"Kernel Name\"\n");
    expect_error(t, strlen(t), 1, "more than 100000 fields");
    free(t);
    free(buf);
}

/* Grid and block sizes whose products overflow int64_t, and dimensions
 * outside CUDA's limits: refused by row and column, not multiplied (UBSan
 * caught the block product here before). */
static void test_launch_overflow(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp_fixture(&len);
    char *t;

    t = replace_once(buf, "\"(256, 1, 1)\"",
                     "\"(2147483647, 2147483647, 2147483647)\"", 0);
    expect_error(t, strlen(t), 9, "column 8 (Block Size): \"(2147483647, "
                 "2147483647, 2147483647)\" is more than 1024 threads");
    free(t);
    t = replace_once(buf, "\"(256, 1, 1)\"", "\"(1024, 1024, 1024)\"", 0);
    expect_error(t, strlen(t), 9, "more than 1024 threads per block");
    free(t);
    t = replace_once(buf, "\"(256, 1, 1)\"", "\"(1, 1, 128)\"", 0);
    expect_error(t, strlen(t), 9, "z = 128 is more than CUDA's 64");
    free(t);
    t = replace_once(buf, "\"(4096, 1, 1)\"",
                     "\"(2147483647, 2147483647, 2147483647)\"", 0);
    expect_error(t, strlen(t), 9, "column 9 (Grid Size): \"(2147483647, "
                 "2147483647, 2147483647)\" is outside CUDA's grid limits");
    free(t);
    /* CUDA's largest grid is accepted: its block count fits. */
    t = replace_once(buf, "\"(4096, 1, 1)\"", "\"(2147483647, 65535, 65535)\"", 0);
    {
        struct mosaic_profile p;
        char err[1024] = "";
        FILE *f = fmemopen(t, strlen(t), "r");
        assert_non_null(f);
        if (mosaic_ncu_import_stream(f, "max.csv", &p, err, sizeof(err)) != 0)
            fail_msg("the largest grid was refused: %s", err);
        fclose(f);
        assert_non_null(find(&p, "_Z6vecaddPKfS0_Pfi", 2147483647));
        mosaic_profile_free(&p);
    }
    free(t);
    free(buf);
}

/* One line of 64 MiB and no newline, from a pipe: refused once the line
 * passes the 16 MiB limit, without reading (or holding) the rest. The
 * writer counts what the importer took before the pipe closed. */
static void test_endless_line(void **state)
{
    enum { CHUNK = 1 << 20, TOTAL = 64 << 20 };
    int data[2], report[2];
    pid_t pid;

    (void)state;
    assert_int_equal(pipe(data), 0);
    assert_int_equal(pipe(report), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        static char chunk[CHUNK];
        long long sent = 0;
        close(data[0]);
        close(report[0]);
        signal(SIGPIPE, SIG_IGN);
        memset(chunk, 'x', sizeof(chunk));
        memcpy(chunk, "\"ID\",\"", 6);
        while (sent < TOTAL) {
            ssize_t n = write(data[1], chunk, sizeof(chunk));
            if (n <= 0)
                break;
            sent += n;
            chunk[0] = chunk[1] = chunk[2] = chunk[3] = chunk[4] = chunk[5] = 'x';
        }
        close(data[1]);
        if (write(report[1], &sent, sizeof(sent)) != (ssize_t)sizeof(sent))
            _exit(2);
        _exit(0);
    }
    close(data[1]);
    close(report[1]);

    struct mosaic_profile p;
    char err[1024] = "";
    FILE *f = fdopen(data[0], "r");
    assert_non_null(f);
    alarm(60);
    assert_int_equal(mosaic_ncu_import_stream(f, "endless.csv", &p, err, sizeof(err)),
                     MOSAIC_EFORMAT);
    fclose(f); /* the writer now gets EPIPE */
    long long sent = -1;
    assert_int_equal(read(report[0], &sent, sizeof(sent)), (ssize_t)sizeof(sent));
    alarm(0);
    close(report[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (!strstr(err, "endless.csv:1: line longer than 16777216 bytes"))
        fail_msg("unexpected message: %s", err);
    assert_int_equal(p.n_kernels, 0);
    /* The limit, the stdio buffer, the pipe's buffer and one chunk in
     * flight: far less than the 64 MiB on offer. */
    if (sent > (20LL << 20))
        fail_msg("the importer read %lld bytes of an endless line", sent);
}

/* Random corruption of the fixture must never crash the importer. */
static void test_fuzz(void **state)
{
    (void)state;
    size_t len;
    char *buf = slurp_fixture(&len);
    unsigned seed = 12345;
    char *t = malloc(len + 1);

    for (int iter = 0; iter < 400; iter++) {
        memcpy(t, buf, len + 1);
        size_t tl = len;
        int edits = 1 + (int)(rand_r(&seed) % 8);
        for (int e = 0; e < edits && tl > 0; e++) {
            size_t at = (size_t)rand_r(&seed) % tl;
            switch (rand_r(&seed) % 4) {
            case 0: t[at] = (char)(rand_r(&seed) & 0xff); break;
            case 1: t[at] = "\",\n()%,.0"[rand_r(&seed) % 9]; break;
            case 2: tl = at; break; /* truncate */
            default: t[at] = '"'; break;
            }
        }
        struct mosaic_profile p;
        char err[1024] = "";
        const char *path = tmpfile_with(t, tl);
        int rc = mosaic_ncu_import(path, &p, err, sizeof(err));
        if (rc != 0) {
            assert_int_equal(strncmp(err, path, strlen(path)), 0);
        } else {
            char err2[512];
            FILE *f = fopen("/dev/null", "w");
            assert_int_equal(mosaic_profile_write(&p, f), 0);
            fclose(f);
            (void)err2;
            mosaic_profile_free(&p);
        }
        unlink(path);
    }
    free(t);
    free(buf);
}

static void test_units(void **state)
{
    (void)state;
    double s;
    struct {
        const char *unit;
        enum mosaic_dim dim;
        double scale; /* < 0: must be rejected */
    } cases[] = {
        {"nsecond", MOSAIC_DIM_TIME_NS, 1},
        {"usecond", MOSAIC_DIM_TIME_NS, 1e3},
        {"msecond", MOSAIC_DIM_TIME_NS, 1e6},
        {"second", MOSAIC_DIM_TIME_NS, 1e9},
        {"ns", MOSAIC_DIM_TIME_NS, 1},
        {"byte", MOSAIC_DIM_TIME_NS, -1},
        {"byte", MOSAIC_DIM_BYTES, 1},
        {"Kbyte", MOSAIC_DIM_BYTES, 1e3},
        {"Gbyte", MOSAIC_DIM_BYTES, 1e9},
        {"Kibyte", MOSAIC_DIM_BYTES, 1024},
        {"Mibyte", MOSAIC_DIM_BYTES, 1048576},
        {"Kbyte/block", MOSAIC_DIM_BYTES, 1e3},
        {"byte/second", MOSAIC_DIM_BYTES, -1},
        {"inst", MOSAIC_DIM_BYTES, -1},
        {"byte/second", MOSAIC_DIM_BYTES_RATE, 1},
        {"Gbyte/second", MOSAIC_DIM_BYTES_RATE, 1e9},
        {"Tbyte/s", MOSAIC_DIM_BYTES_RATE, 1e12},
        {"byte/usecond", MOSAIC_DIM_BYTES_RATE, 1e6},
        {"byte", MOSAIC_DIM_BYTES_RATE, -1},
        {"sector", MOSAIC_DIM_COUNT, 1},
        {"Ksector", MOSAIC_DIM_COUNT, 1e3},
        {"Minst", MOSAIC_DIM_COUNT, 1e6},
        {"", MOSAIC_DIM_COUNT, 1},
        {"register/thread", MOSAIC_DIM_COUNT, 1},
        {"usecond", MOSAIC_DIM_COUNT, -1},
        {"sector/second", MOSAIC_DIM_COUNT_RATE, 1},
        {"sector/nsecond", MOSAIC_DIM_COUNT_RATE, 1e9},
        {"Gsector/second", MOSAIC_DIM_COUNT_RATE, 1e9},
        {"sector", MOSAIC_DIM_COUNT_RATE, -1},
        {"%", MOSAIC_DIM_PCT, 1},
        {"", MOSAIC_DIM_PCT, 1},
        {"inst", MOSAIC_DIM_PCT, -1},
        {"", MOSAIC_DIM_RATIO, 1},
        {"warp", MOSAIC_DIM_RATIO, 1},
        {"inst/cycle", MOSAIC_DIM_RATIO, 1},
        {"%", MOSAIC_DIM_RATIO, -1},
        {"second", MOSAIC_DIM_RATIO, -1},
        {"a/b/c", MOSAIC_DIM_RATIO, -1},
        {"furlong", MOSAIC_DIM_COUNT, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = mosaic_ncu_unit_scale(cases[i].unit, cases[i].dim, &s);
        if (cases[i].scale < 0) {
            if (rc == 0)
                fail_msg("unit \"%s\" dim %d accepted", cases[i].unit, cases[i].dim);
        } else {
            if (rc != 0)
                fail_msg("unit \"%s\" dim %d rejected", cases[i].unit, cases[i].dim);
            assert_near(s, cases[i].scale);
        }
    }
}

static void test_numbers_and_dims(void **state)
{
    (void)state;
    double v;
    int64_t d[3];
    assert_int_equal(mosaic_ncu_parse_number("1,048,576", &v), 0);
    assert_near(v, 1048576.0);
    assert_int_equal(mosaic_ncu_parse_number("-3.5e2", &v), 0);
    assert_near(v, -350.0);
    assert_int_equal(mosaic_ncu_parse_number("n/a", &v), 1);
    assert_true(isnan(v));
    assert_int_equal(mosaic_ncu_parse_number("", &v), 1);
    assert_int_equal(mosaic_ncu_parse_number(",5", &v), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_ncu_parse_number("5,", &v), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_ncu_parse_number("nan", &v), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_ncu_parse_number("inf", &v), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_ncu_parse_number("1 2", &v), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_ncu_parse_dim3("(1, 2, 3)", d), 0);
    assert_int_equal(d[0], 1);
    assert_int_equal(d[2], 3);
    assert_int_equal(mosaic_ncu_parse_dim3("(1,2,3)", d), 0);
    assert_int_equal(mosaic_ncu_parse_dim3("(1, 2)", d), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_ncu_parse_dim3("(1, 2, 3) x", d), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_ncu_parse_dim3("(1, -2, 3)", d), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_ncu_parse_dim3("(99999999999, 1, 1)", d), MOSAIC_EFORMAT);
    assert_int_equal(mosaic_ncu_parse_dim3("", d), MOSAIC_EFORMAT);
}

static void test_metric_list(void **state)
{
    (void)state;
    const char *l = mosaic_ncu_metric_list();
    for (int m = 0; m < MOSAIC_N_METRICS; m++)
        assert_non_null(strstr(l, mosaic_metric_name(m)));
    assert_non_null(strstr(l, "launch__shared_mem_per_block_dynamic"));
    assert_null(strchr(l, ' '));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_real_layout),
        cmocka_unit_test(test_real_ncu_output),
        cmocka_unit_test(test_fixture_scaled),
        cmocka_unit_test(test_empty_and_no_header),
        cmocka_unit_test(test_details_page),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_header_and_units_only),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_damaged_header),
        cmocka_unit_test(test_missing_metric_column),
        cmocka_unit_test(test_binary_and_huge),
        cmocka_unit_test(test_launch_overflow),
        cmocka_unit_test(test_endless_line),
        cmocka_unit_test(test_fuzz),
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_numbers_and_dims),
        cmocka_unit_test(test_metric_list),
    };
    return cmocka_run_group_tests_name("profiler_ncu_import", tests, NULL, NULL);
}
