/*
 * The profile library's failures come back as MOSAIC_E* codes that
 * mosaic_strerror turns into the right sentence, with a message naming the
 * file:
 *   - out of memory, by fault injection: malloc, calloc and realloc are
 *     wrapped (ld --wrap, tests/profiler/CMakeLists.txt) and the Nth call
 *     made after arm(N) fails; every N up to the last allocation is tried;
 *   - I/O errors: a directory, a FIFO (which must not block the reader), a
 *     missing file, a write to /dev/full, a folder that does not exist;
 *   - malformed input: not JSON, not a profile, a NUL byte in the file.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
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

/* ---- fault injection ------------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static long g_fail_at = -1; /* the allocation (1-based) that fails; -1 none */
static long g_count;        /* allocations since arm() */
static int g_failed;        /* whether the armed failure happened */

static void arm(long n)
{
    g_count = 0;
    g_failed = 0;
    g_fail_at = n;
}

static void disarm(void)
{
    g_fail_at = -1;
}

static int should_fail(void)
{
    if (g_fail_at < 0)
        return 0;
    if (++g_count == g_fail_at) {
        g_failed = 1;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : __real_realloc(p, n);
}

/* ---- helpers ---------------------------------------------------------- */

static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/mosaic_prof_err_%ld", (long)getpid());
    return mkdir(g_dir, 0700);
}

static int teardown(void **state)
{
    char cmd[512];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *path_in_dir(const char *name)
{
    static char path[512];
    int n = snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    assert_true(n > 0 && (size_t)n < sizeof(path));
    return path;
}

/* A profile with two kernels and two problems, as a JSON document. */
static char *good_json(void)
{
    struct mosaic_profile p;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    mosaic_profile_init(&p);
    assert_int_equal(mosaic_set_str(&p.method, MOSAIC_METHOD_NCU), 0);
    assert_int_equal(mosaic_set_str(&p.gpu.name, "NVIDIA H200"), 0);
    assert_int_equal(mosaic_profile_add_problem(&p, "first %d", 1), 0);
    assert_int_equal(mosaic_profile_add_problem(&p, "second %d", 2), 0);
    for (int i = 0; i < 2; i++) {
        struct mosaic_kernel *k = mosaic_profile_add_kernel(&p);
        int64_t g[3] = {i + 1, 1, 1}, b[3] = {128, 1, 1};
        assert_non_null(k);
        assert_int_equal(mosaic_set_str(&k->name, i ? "k_two" : "k_one"), 0);
        memcpy(k->grid, g, sizeof(g));
        memcpy(k->block, b, sizeof(b));
        k->dyn_smem = 0;
        k->launches = 1;
        k->key = mosaic_kernel_key(k->name, k->grid, k->block, k->dyn_smem);
        assert_non_null(k->key);
    }
    assert_int_equal(mosaic_profile_write(&p, f), 0);
    fclose(f);
    mosaic_profile_free(&p);
    return buf;
}

static void write_text(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void expect_code(int rc, int want, const char *err, const char *what)
{
    if (rc != want)
        fail_msg("got %d (%s), wanted %d (%s): %s", rc, mosaic_strerror(rc), want,
                 mosaic_strerror(want), err);
    if (!strstr(err, what))
        fail_msg("the message does not say \"%s\": %s", what, err);
}

/* ---- out of memory ---------------------------------------------------- */

/* Every allocation of the reader fails in turn: each run returns ENOMEM
 * with "out of memory" or, once n passes the last allocation, succeeds. */
static void test_read_string_oom(void **state)
{
    char *json = good_json();
    long n;
    int rc = -1;

    (void)state;
    for (n = 1; n < 10000; n++) {
        struct mosaic_profile p;
        char err[512] = "";

        arm(n);
        rc = mosaic_profile_read_string(json, "oom.json", &p, err, sizeof(err));
        disarm();
        if (!g_failed) {
            assert_int_equal(rc, 0);
            assert_int_equal(p.n_kernels, 2);
            assert_int_equal(p.n_problems, 2);
            mosaic_profile_free(&p);
            break;
        }
        expect_code(rc, MOSAIC_ENOMEM, err, "oom.json: ");
        assert_non_null(strstr(err, "out of memory"));
        assert_string_equal(mosaic_strerror(rc), "out of memory");
        assert_int_equal(p.n_kernels, 0); /* left empty, nothing leaked */
    }
    /* The reader allocates at least the strings, kernels and problems. */
    assert_true(n > 5);
    free(json);
}

static void test_read_file_oom(void **state)
{
    char *json = good_json();
    const char *path = path_in_dir("oom.json");
    struct mosaic_profile p;
    char err[512] = "";
    int rc;

    (void)state;
    write_text(path, json, strlen(json));
    arm(1); /* the buffer for the whole file */
    rc = mosaic_profile_read_file(path, &p, err, sizeof(err));
    disarm();
    assert_true(g_failed);
    expect_code(rc, MOSAIC_ENOMEM, err, "out of memory");
    assert_non_null(strstr(err, path));
    free(json);
}

static void test_model_oom(void **state)
{
    struct mosaic_profile p;
    int64_t g[3] = {1, 1, 1};
    char err[512] = "";
    char *s = NULL;

    (void)state;
    mosaic_profile_init(&p);
    arm(1);
    assert_int_equal(mosaic_set_str(&s, "x"), MOSAIC_ENOMEM);
    assert_null(s);
    arm(1);
    assert_int_equal(mosaic_profile_add_problem(&p, "p %d", 1), MOSAIC_ENOMEM);
    arm(2); /* the message is made; growing the list fails */
    assert_int_equal(mosaic_profile_add_problem(&p, "p %d", 2), MOSAIC_ENOMEM);
    assert_int_equal(p.n_problems, 0);
    arm(1);
    assert_null(mosaic_profile_add_kernel(&p));
    arm(1);
    assert_null(mosaic_kernel_key("k", g, g, 0));
    arm(1); /* the temporary file's name */
    assert_int_equal(mosaic_profile_write_file(&p, path_in_dir("w.json"), err,
                                               sizeof(err)),
                     MOSAIC_ENOMEM);
    disarm();
    assert_non_null(strstr(err, "out of memory"));
    mosaic_profile_free(&p);
}

/* ---- I/O errors -------------------------------------------------------- */

static void test_read_io_errors(void **state)
{
    struct mosaic_profile p;
    char err[512] = "";
    const char *fifo = path_in_dir("fifo.json");

    (void)state;
    expect_code(mosaic_profile_read_file(g_dir, &p, err, sizeof(err)), MOSAIC_EIO,
                err, "is a directory, not a regular file");
    assert_string_equal(mosaic_strerror(MOSAIC_EIO), "input/output error");
    expect_code(mosaic_profile_read_file(path_in_dir("none.json"), &p, err,
                                         sizeof(err)),
                MOSAIC_EIO, err, "cannot open: No such file or directory");
    /* Opening a FIFO with no writer would block a plain open(2) forever;
     * the alarm turns a regression into a failed test, not a hung one. */
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(10);
    expect_code(mosaic_profile_read_file(fifo, &p, err, sizeof(err)), MOSAIC_EIO,
                err, "is a FIFO, not a regular file");
    alarm(0);
    assert_int_equal(p.n_kernels, 0);
}

static void test_write_io_errors(void **state)
{
    struct mosaic_profile p;
    char err[512] = "", path[600];
    FILE *f;

    (void)state;
    mosaic_profile_init(&p);
    assert_int_equal(mosaic_set_str(&p.method, MOSAIC_METHOD_NCU), 0);
    /* /dev/full: every write fails with ENOSPC. Unbuffered, so that the
     * failure is seen by the writer itself, not only at fclose. */
    f = fopen("/dev/full", "w");
    if (!f)
        skip();
    setvbuf(f, NULL, _IONBF, 0);
    assert_int_equal(mosaic_profile_write(&p, f), MOSAIC_EIO);
    fclose(f);
    snprintf(path, sizeof(path), "%s/no/such/folder/p.json", g_dir);
    expect_code(mosaic_profile_write_file(&p, path, err, sizeof(err)), MOSAIC_EIO,
                err, "cannot create");
    assert_string_equal(mosaic_strerror(MOSAIC_EIO), "input/output error");
    mosaic_profile_free(&p);
}

/* ---- malformed input --------------------------------------------------- */

static void test_malformed(void **state)
{
    struct mosaic_profile p;
    char err[512] = "";
    const char *nul = path_in_dir("nul.json");

    (void)state;
    expect_code(mosaic_profile_read_string("{", "m.json", &p, err, sizeof(err)),
                MOSAIC_EFORMAT, err, "m.json: not valid JSON");
    expect_code(mosaic_profile_read_string("{\"schema\": \"other/1\"}", "m.json", &p,
                                           err, sizeof(err)),
                MOSAIC_EFORMAT, err, "m.json: schema: 'other/1'");
    assert_non_null(strstr(mosaic_strerror(MOSAIC_EFORMAT), "malformed"));
    write_text(nul, "{\"schema\"\0}", 11);
    expect_code(mosaic_profile_read_file(nul, &p, err, sizeof(err)), MOSAIC_EFORMAT,
                err, "contains a NUL byte");
    write_text(nul, "", 0);
    expect_code(mosaic_profile_read_file(nul, &p, err, sizeof(err)), MOSAIC_EFORMAT,
                err, "empty file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_string_oom),
        cmocka_unit_test(test_read_file_oom),
        cmocka_unit_test(test_model_oom),
        cmocka_unit_test(test_read_io_errors),
        cmocka_unit_test(test_write_io_errors),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests_name("profiler_profile_errors", tests, setup,
                                       teardown);
}
