/*
 * The common core (core/): mosaic_strerror over the one list of codes, the
 * "file: field: message" helper, the whole-file reader (FIFO, directory,
 * size limit, NUL byte), the JSON string writer (invalid UTF-8, overlong
 * encodings, surrogates, control characters; FILE* and buffer forms agree),
 * the strict JSON reader (trailing data, duplicate keys at any depth, NUL
 * bytes, control bytes, UTF-8, nesting depth, JSON Lines)
 * and the kernel-identity resolver over a stand-in driver table.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <iconv.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "core.h"
#include "cudrv.h"
#include "json.h"

/* ---- mosaic_strerror --------------------------------------------------- */

static void test_strerror(void **state)
{
    (void)state;
    /* Every code of the list has its own sentence. */
    static const int codes[] = {
#define X_CODE(name, value, msg) name,
        MOSAIC_ERRORS(X_CODE)
#undef X_CODE
    };
    size_t n = sizeof(codes) / sizeof(codes[0]);
    for (size_t i = 0; i < n; i++) {
        const char *m = mosaic_strerror(codes[i]);
        assert_true(strlen(m) > 5);
        assert_string_not_equal(m, "unknown Mosaic error code");
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(m, mosaic_strerror(codes[j]));
    }
    assert_string_equal(mosaic_strerror(MOSAIC_ENOMEM), "out of memory");
    assert_string_equal(mosaic_strerror(MOSAIC_EIO), "input/output error");
    assert_non_null(strstr(mosaic_strerror(MOSAIC_EFORMAT), "malformed"));
    assert_non_null(strstr(mosaic_strerror(MOSAIC_ETOOBIG), "larger"));
    assert_string_equal(mosaic_strerror(12345), "unknown Mosaic error code");
}

/* ---- mosaic__errf ------------------------------------------------------- */

static void test_errf(void **state)
{
    char err[64];

    (void)state;
    assert_int_equal(mosaic__errf(err, sizeof(err), MOSAIC_EFORMAT, "a.json",
                                  "kernels[3].grid", "expected %d integers", 3),
                     MOSAIC_EFORMAT);
    assert_string_equal(err, "a.json: kernels[3].grid: expected 3 integers");
    assert_int_equal(mosaic__errf(err, sizeof(err), MOSAIC_EIO, "b.csv", "",
                                  "cannot open"),
                     MOSAIC_EIO);
    assert_string_equal(err, "b.csv: cannot open");
    mosaic__errf(err, sizeof(err), MOSAIC_EIO, NULL, NULL, "x");
    assert_string_equal(err, "<input>: x");
    /* Cut at the buffer's end, always terminated. */
    memset(err, 'z', sizeof(err));
    mosaic__errf(err, 8, MOSAIC_EIO, "long-file-name", NULL, "message");
    assert_string_equal(err, "long-fi");
    /* No buffer: only the code. */
    assert_int_equal(mosaic__errf(NULL, 0, MOSAIC_ENOMEM, "f", NULL, "m"),
                     MOSAIC_ENOMEM);
}

/* ---- mosaic__read_file --------------------------------------------------- */

static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/mosaic_core_test_%ld", (long)getpid());
    return mkdir(g_dir, 0700);
}

static int teardown(void **state)
{
    char cmd[512];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *file_with(const char *name, const void *data, size_t len)
{
    static char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return path;
}

static void expect_read(const char *path, long max, int want, const char *what)
{
    char err[512] = "", *out = (char *)1;
    int rc = mosaic__read_file(path, max, &out, err, sizeof(err));

    if (rc != want)
        fail_msg("%s: got %d, wanted %d: %s", path, rc, want, err);
    assert_null(out);
    if (strncmp(err, path, strlen(path)) != 0 || !strstr(err, what))
        fail_msg("%s: the message does not say \"%s\": %s", path, what, err);
}

static void test_read_file(void **state)
{
    char err[512] = "", *out = NULL, fifo[512];
    const char *p;

    (void)state;
    p = file_with("ok.txt", "hello\n", 6);
    assert_int_equal(mosaic__read_file(p, 6, &out, err, sizeof(err)), 0);
    assert_string_equal(out, "hello\n");
    free(out);
    p = file_with("empty.txt", "", 0);
    assert_int_equal(mosaic__read_file(p, 10, &out, err, sizeof(err)), 0);
    assert_string_equal(out, "");
    free(out);

    p = file_with("big.txt", "1234567", 7);
    expect_read(p, 6, MOSAIC_ETOOBIG, "larger than 6 bytes");
    p = file_with("nul.txt", "ab\0cd", 5);
    expect_read(p, 100, MOSAIC_EFORMAT, "NUL byte");
    expect_read(g_dir, 100, MOSAIC_EIO, "is a directory, not a regular file");
    expect_read("/nonexistent/x", 100, MOSAIC_EIO, "cannot open");
    expect_read("/dev/null", 100, MOSAIC_EIO, "is a character device");
    /* A FIFO with no writer: a blocking open would wait forever. */
    snprintf(fifo, sizeof(fifo), "%s/fifo", g_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(10);
    expect_read(fifo, 100, MOSAIC_EIO, "is a FIFO, not a regular file");
    alarm(0);
    assert_int_equal(mosaic__read_file(NULL, 1, &out, err, sizeof(err)), MOSAIC_EINVAL);

    /* The streaming form: a descriptor in blocking mode, or the same
     * refusals. */
    int fd = mosaic__open_regular(file_with("s.txt", "x", 1), err, sizeof(err));
    assert_true(fd >= 0);
    close(fd);
    alarm(10);
    assert_int_equal(mosaic__open_regular(fifo, err, sizeof(err)), MOSAIC_EIO);
    alarm(0);
}

/* ---- JSON string writer ------------------------------------------------- */

static char *via_file(const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    assert_int_equal(mosaic__json_fputs(f, s), 0);
    fclose(f);
    return buf;
}

/* Both forms give want, and what they give parses as JSON. */
static void expect_json(const char *in, const char *want)
{
    char buf[256];
    char *f = via_file(in);
    size_t n = mosaic__json_snprint(buf, sizeof(buf), in);

    assert_string_equal(f, want);
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));
    cJSON *v = cJSON_Parse(f);
    if (!v || !cJSON_IsString(v))
        fail_msg("not a JSON string: %s", f);
    cJSON_Delete(v);
    free(f);
}

static void test_json_escapes(void **state)
{
    (void)state;
    expect_json("plain", "\"plain\"");
    expect_json(NULL, "\"\"");
    expect_json("q\"b\\s/", "\"q\\\"b\\\\s/\"");
    /* Control characters, and DEL. */
    expect_json("\n\t\r", "\"\\n\\t\\r\"");
    expect_json("\x01\x08\x0c\x1f\x7f", "\"\\u0001\\u0008\\u000c\\u001f\\u007f\"");
    /* Well-formed UTF-8 of every length passes unchanged. */
    expect_json("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
                "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"");
    /* Stray continuation bytes and bytes that never start a sequence. */
    expect_json("a\x80z", "\"a\\ufffdz\"");
    expect_json("\xbf\xfe\xff", "\"\\ufffd\\ufffd\\ufffd\"");
    /* Overlong encodings: '/' in two bytes, NUL in two, U+20AC in four. */
    expect_json("\xc0\xaf", "\"\\ufffd\\ufffd\"");
    expect_json("\xc1\xbf", "\"\\ufffd\\ufffd\"");
    expect_json("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");
    expect_json("\xf0\x82\x82\xac", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    /* UTF-16 surrogates encoded as UTF-8 (CESU-8). */
    expect_json("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
    expect_json("\xed\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\"");
    /* Above U+10FFFF. */
    expect_json("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    /* Truncated sequences, in the middle and at the end of the string. */
    expect_json("\xe2\x82z", "\"\\ufffd\\ufffdz\"");
    expect_json("ok\xf0\x9f\x98", "\"ok\\ufffd\\ufffd\\ufffd\"");
}

static void test_json_buffer_cut(void **state)
{
    char buf[8];
    size_t n;

    (void)state;
    /* A cut falls between pieces: never half an escape or a character. */
    n = mosaic__json_snprint(buf, sizeof(buf), "ab\ncd");
    assert_int_equal(n, strlen("\"ab\\ncd\""));
    assert_true(n >= sizeof(buf));
    assert_string_equal(buf, "\"ab\\ncd");
    n = mosaic__json_snprint(buf, 4, "a\xc3\xa9");
    assert_int_equal(n, 5); /* "a + 2 bytes + " */
    assert_string_equal(buf, "\"a");
    n = mosaic__json_snprint(buf, 4, "\x01");
    assert_int_equal(n, 8);
    assert_string_equal(buf, "\"");
    assert_int_equal(mosaic__json_snprint(NULL, 0, "abc"), 5);
}

/* A fixed-seed generator, so a failure repeats. */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

/* Whether s is valid UTF-8, by the C library's converter (not the code
 * under test). */
static int iconv_accepts(const char *s)
{
    iconv_t cd = iconv_open("UTF-32LE", "UTF-8");
    char out[4096], *in = (char *)s, *o = out;
    size_t inleft = strlen(s), outleft = sizeof(out);
    int ok;

    assert_true(cd != (iconv_t)-1);
    ok = iconv(cd, &in, &inleft, &o, &outleft) != (size_t)-1 && inleft == 0;
    iconv_close(cd);
    return ok;
}

/* Random bytes, weighted towards the ones UTF-8 treats specially: the
 * output is always a JSON string that the C library reads as UTF-8, and the
 * two forms agree. */
static void test_json_random_bytes(void **state)
{
    static const unsigned char special[] = {0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf,
                                            0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5,
                                            0xff, 0x7f, 0x01, '"', '\\', '\n'};
    (void)state;
    /* The checker itself refuses what the writer must never emit. */
    assert_false(iconv_accepts("\xc0\xaf"));
    assert_false(iconv_accepts("\xed\xa0\x80"));
    assert_false(iconv_accepts("\xf4\x90\x80\x80"));
    assert_false(iconv_accepts("a\x80"));
    assert_true(iconv_accepts("caf\xc3\xa9"));
    for (int iter = 0; iter < 20000; iter++) {
        char in[40], buf[300];
        size_t len = rnd() % 32;
        for (size_t i = 0; i < len; i++) {
            uint32_t r = rnd();
            unsigned char c = (unsigned char)(r >> 8);
            if (r % 3 == 0)
                c = special[(r >> 4) % sizeof(special)];
            else if (r % 3 == 1)
                c = (unsigned char)(0x80 | (c & 0x3f));
            in[i] = (char)(c ? c : 'x');
        }
        in[len] = '\0';
        size_t n = mosaic__json_snprint(buf, sizeof(buf), in);
        assert_true(n < sizeof(buf));
        char *f = via_file(in);
        assert_string_equal(f, buf);
        free(f);
        if (!iconv_accepts(buf))
            fail_msg("output is not UTF-8 (iteration %d)", iter);
        cJSON *v = cJSON_Parse(buf);
        if (!v || !cJSON_IsString(v))
            fail_msg("output is not a JSON string (iteration %d): %s", iter, buf);
        cJSON_Delete(v);
    }
}

static size_t utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Valid text of random code points (all lengths, control characters
 * included) comes back unchanged through a JSON parser. */
static void test_json_round_trip(void **state)
{
    (void)state;
    for (int iter = 0; iter < 20000; iter++) {
        char in[128], buf[1024];
        size_t len = 0;
        int ncp = (int)(rnd() % 16);
        for (int i = 0; i < ncp; i++) {
            static const uint32_t top[] = {0x80, 0x800, 0x10000, 0x110000};
            uint32_t cp = 1 + rnd() % (top[rnd() % 4] - 1);
            if (cp >= 0xd800 && cp <= 0xdfff)
                cp = 0xfffd;
            len += utf8_encode(cp, in + len);
        }
        in[len] = '\0';
        assert_true(mosaic__json_snprint(buf, sizeof(buf), in) < sizeof(buf));
        cJSON *v = cJSON_Parse(buf);
        if (!v || !cJSON_IsString(v))
            fail_msg("not a JSON string (iteration %d): %s", iter, buf);
        assert_string_equal(v->valuestring, in);
        cJSON_Delete(v);
    }
}

static void test_json_write_error(void **state)
{
    FILE *f = fopen("/dev/full", "w");

    (void)state;
    if (!f)
        skip();
    setvbuf(f, NULL, _IONBF, 0);
    assert_int_equal(mosaic__json_fputs(f, "x"), MOSAIC_EIO);
    fclose(f);
}

/* ---- kernel identity ----------------------------------------------------- */

/* A stand-in driver: FUNC is a CUfunction named "f_kernel", KERN a CUkernel
 * named "k_kernel" whose function in the current context is KERN_FN. */
static char func_obj, kern_obj, kern_fn_obj;
#define FUNC ((CUfunction)(void *)&func_obj)
#define KERN ((CUkernel)(void *)&kern_obj)
#define KERN_FN ((CUfunction)(void *)&kern_fn_obj)

static CUresult fake_func_name(const char **name, CUfunction f)
{
    if (f != FUNC && f != KERN_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f == FUNC ? "f_kernel" : "k_kernel";
    return CUDA_SUCCESS;
}

static CUresult fake_func_attr(int *v, CUfunction_attribute a, CUfunction f)
{
    if (f != FUNC && f != KERN_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    *v = a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 32 : 7;
    return CUDA_SUCCESS;
}

static CUresult fake_kernel_name(const char **name, CUkernel k)
{
    if (k != KERN)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = "k_kernel";
    return CUDA_SUCCESS;
}

static CUresult fake_kernel_attr(int *v, CUfunction_attribute a, CUkernel k,
                                 CUdevice dev)
{
    if (k != KERN || dev != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    *v = a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 40 : 9;
    return CUDA_SUCCESS;
}

static CUresult fake_kernel_function(CUfunction *f, CUkernel k)
{
    if (k != KERN)
        return CUDA_ERROR_INVALID_HANDLE;
    *f = KERN_FN;
    return CUDA_SUCCESS;
}

static CUresult fake_ctx_device(CUdevice *dev)
{
    *dev = 0;
    return CUDA_SUCCESS;
}

static void fake_drv(struct mosaic__drv *d)
{
    memset(d, 0, sizeof(*d));
    d->cuFuncGetName = fake_func_name;
    d->cuFuncGetAttribute = fake_func_attr;
    d->cuKernelGetName = fake_kernel_name;
    d->cuKernelGetAttribute = fake_kernel_attr;
    d->cuKernelGetFunction = fake_kernel_function;
    d->cuCtxGetDevice = fake_ctx_device;
}

static void test_kident(void **state)
{
    struct mosaic__drv d;
    struct mosaic__kident id;

    (void)state;
    fake_drv(&d);
    /* A CUfunction, as hinted. */
    assert_int_equal(mosaic__kident_resolve(&d, FUNC, MOSAIC__KIND_FUNCTION, 0, &id), 0);
    assert_string_equal(id.name, "f_kernel");
    assert_int_equal(id.kind, MOSAIC__KIND_FUNCTION);
    assert_ptr_equal(id.func, FUNC);
    assert_int_equal(id.num_regs, 32);
    assert_int_equal(id.static_smem, 7);
    /* A CUkernel cast to CUfunction (as the runtime launches it): the
     * function lookup fails and the kernel lookup answers. */
    assert_int_equal(mosaic__kident_resolve(&d, KERN, MOSAIC__KIND_FUNCTION, 0, &id), 0);
    assert_string_equal(id.name, "k_kernel");
    assert_int_equal(id.kind, MOSAIC__KIND_KERNEL);
    assert_null(id.func); /* not asked for */
    assert_int_equal(id.num_regs, 40);
    assert_int_equal(mosaic__kident_resolve(&d, KERN, MOSAIC__KIND_FUNCTION,
                                            MOSAIC__KIDENT_FUNCTION, &id), 0);
    assert_ptr_equal(id.func, KERN_FN);
    /* A CUfunction hinted as a CUkernel. */
    assert_int_equal(mosaic__kident_resolve(&d, FUNC, MOSAIC__KIND_KERNEL, 0, &id), 0);
    assert_int_equal(id.kind, MOSAIC__KIND_FUNCTION);
    /* Neither kind knows the handle. */
    assert_int_equal(mosaic__kident_resolve(&d, &state, MOSAIC__KIND_FUNCTION, 0, &id),
                     MOSAIC_EINVAL);
    assert_null(id.name);
    assert_ptr_equal(id.func, (CUfunction)(void *)&state);
    assert_int_equal(mosaic__kident_resolve(&d, NULL, MOSAIC__KIND_FUNCTION, 0, &id),
                     MOSAIC_EINVAL);
    /* A driver older than 12.3: no name entry points; attributes unknown. */
    d.cuFuncGetName = NULL;
    d.cuKernelGetName = NULL;
    assert_int_equal(mosaic__kident_resolve(&d, FUNC, MOSAIC__KIND_FUNCTION, 0, &id),
                     MOSAIC_ENOSYM);
    assert_null(id.name);
    assert_int_equal(id.num_regs, -1);
}

static void *fake_sym(void *lib, const char *name)
{
    (void)lib;
    if (strcmp(name, "cuFuncGetName") == 0)
        return (void *)fake_func_name;
    if (strcmp(name, "cuGraphKernelNodeGetParams_v2") == 0)
        return (void *)fake_ctx_device; /* any address: only found or not */
    return NULL;
}

static void test_drv_load(void **state)
{
    struct mosaic__drv d;

    (void)state;
    memset(&d, 0xff, sizeof(d));
    assert_int_equal(mosaic__drv_load(&d, &d, fake_sym), 2);
    assert_ptr_equal(d.cuFuncGetName, fake_func_name);
    assert_non_null(d.cuGraphKernelNodeGetParams_v2);
    assert_null(d.cuKernelGetName); /* absent ones are NULL, not stale */
    assert_int_equal(mosaic__drv_load(&d, NULL, fake_sym), 0);
    assert_null(d.cuFuncGetName);
}

/* ---- the strict JSON reader ---------------------------------------------- */

/* Parses len bytes copied into a buffer of exactly that size (no NUL after
 * it), so that ASan catches a read past the end. */
static int strict_n(const char *text, size_t len, cJSON **out, char *err,
                    size_t errlen)
{
    char *copy = malloc(len ? len : 1);
    int rc;

    assert_non_null(copy);
    memcpy(copy, text, len);
    rc = mosaic__json_parse_strict("x.json", copy, len, out, err, errlen);
    free(copy);
    return rc;
}

static cJSON *expect_ok(const char *text)
{
    char err[512] = "";
    cJSON *root = NULL;
    int rc = strict_n(text, strlen(text), &root, err, sizeof(err));

    if (rc != 0)
        fail_msg("refused %s: %s", text, err);
    assert_non_null(root);
    return root;
}

/* The parse is refused with MOSAIC_EFORMAT, the message starts with the
 * file's name and holds what. */
static void expect_refused_n(const char *text, size_t len, const char *what)
{
    char err[1024] = "";
    cJSON *root = (cJSON *)1;
    int rc = strict_n(text, len, &root, err, sizeof(err));

    if (rc != MOSAIC_EFORMAT)
        fail_msg("%.60s: got %d, wanted MOSAIC_EFORMAT (%s)", text, rc, err);
    assert_null(root);
    if (strncmp(err, "x.json: ", 8) != 0 || !strstr(err, what))
        fail_msg("%.60s: the message does not say \"%s\": %s", text, what, err);
}

static void expect_refused(const char *text, const char *what)
{
    expect_refused_n(text, strlen(text), what);
}

static void test_strict_valid(void **state)
{
    cJSON *r;

    (void)state;
    r = expect_ok("{\"a\": [1, 2, {\"b\": null}], \"c\": \"\xc3\xa9\\u00e9\","
                  " \"A\": true, \"a b\": \"{[\"}\n\n  \r\n");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "a")), 3);
    assert_string_equal(cJSON_GetObjectItem(r, "c")->valuestring, "\xc3\xa9\xc3\xa9");
    cJSON_Delete(r);
    cJSON_Delete(expect_ok("3"));
    cJSON_Delete(expect_ok("\"s\""));
    /* The same key in sibling objects and in nested ones is not a
     * duplicate; neither are keys that differ only in case. */
    cJSON_Delete(expect_ok("[{\"k\": 1}, {\"k\": 2, \"K\": {\"k\": 3}}]"));
    /* An escaped backslash before "u0000" is not the escape \u0000. */
    r = expect_ok("{\"p\": \"C:\\\\u0000\"}");
    assert_string_equal(cJSON_GetObjectItem(r, "p")->valuestring, "C:\\u0000");
    cJSON_Delete(r);

    /* Nesting: exactly the limit is fine, and brackets in strings do not
     * count. */
    char deep[2 * MOSAIC__JSON_MAX_DEPTH + 16];
    size_t n = 0;
    for (int i = 0; i < MOSAIC__JSON_MAX_DEPTH; i++)
        deep[n++] = '[';
    for (int i = 0; i < MOSAIC__JSON_MAX_DEPTH; i++)
        deep[n++] = ']';
    deep[n] = '\0';
    cJSON_Delete(expect_ok(deep));
    char str[256];
    snprintf(str, sizeof(str), "[\"%.*s\"]", 200,
             "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
             "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
             "{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{"
             "{{{{{{{{");
    cJSON_Delete(expect_ok(str));

    /* Many distinct keys (the sorted path of the duplicate check). */
    char many[4096];
    n = (size_t)snprintf(many, sizeof(many), "{");
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "%s\"k%d\": %d",
                              i ? ", " : "", i, i);
    snprintf(many + n, sizeof(many) - n, "}");
    r = expect_ok(many);
    assert_int_equal(cJSON_GetArraySize(r), 100);
    assert_int_equal(cJSON_GetObjectItem(r, "k99")->valueint, 99);
    cJSON_Delete(r);
}

static void test_strict_trailing(void **state)
{
    (void)state;
    expect_refused("{} {}", "line 1, column 4: text after the end of the document");
    expect_refused("{\"a\": 1}\n{\"a\": 2}\n", "line 2, column 1: text after the end");
    expect_refused("[1] 2", "text after the end of the document (\"2\")");
    expect_refused("{}x", "appended to");
    expect_refused("1 2", "text after the end");
    /* cJSON alone would take 0x01 as white space before the garbage. */
    expect_refused("{}\x01", "control character 0x01 outside a string");
}

static void test_strict_duplicates(void **state)
{
    char many[4096];
    size_t n;

    (void)state;
    expect_refused("{\"a\": 1, \"a\": 2}", "x.json: a: the key appears twice");
    expect_refused("{\"a\": 1, \"a\": 2}", "Python's json the last");
    expect_refused("{\"k\": [1, {\"m\": {\"x\": 1, \"y\": 2, \"x\": 3}}]}",
                   "x.json: k[1].m.x: the key appears twice");
    expect_refused("[[{}, {\"q\": {}, \"q\": []}]]", "x.json: [0][1].q: ");
    /* A key with \u0000 would read as "a" beside "a": refused before. */
    expect_refused("{\"a\\u0000b\": 1, \"a\": 2}", "\\u0000 in a string");
    /* The sorted path: the duplicate among many keys, far apart. */
    n = (size_t)snprintf(many, sizeof(many), "{\"top\": {");
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "\"k%d\": %d, ", i, i);
    snprintf(many + n, sizeof(many) - n, "\"k7\": 0}}");
    expect_refused(many, "x.json: top.k7: the key appears twice");
}

static void test_strict_bytes(void **state)
{
    char deep[2 * MOSAIC__JSON_MAX_DEPTH + 16];
    size_t n = 0;

    (void)state;
    expect_refused_n("{\"a\": 1}\0", 9, "line 1, column 9: a NUL byte");
    expect_refused_n("{\"a\0\": 1}", 9, "a NUL byte");
    expect_refused("{\"a\": \"x\\u0000\"}", "line 1, column 9: \\u0000 in a string");
    expect_refused("{\"a\": \"line\nbreak\"}", "control character 0x0a inside a string");
    expect_refused("{\"a\": \"\tx\"}", "control character 0x09 inside a string");
    expect_refused("{\"a\": \"\xff\"}", "byte 0xff is not valid UTF-8");
    expect_refused("{\"a\": \"\xc0\xaf\"}", "byte 0xc0 is not valid UTF-8");     /* overlong */
    expect_refused("{\"a\": \"\xed\xa0\x80\"}", "byte 0xed is not valid UTF-8"); /* surrogate */
    /* A sequence cut by the end of the buffer. */
    expect_refused_n("\"\xe2\x82", 3, "not valid UTF-8");
    for (int i = 0; i <= MOSAIC__JSON_MAX_DEPTH; i++)
        deep[n++] = i % 2 ? '{' : '[';
    deep[n] = '\0';
    expect_refused(deep, "nested deeper than 64 levels");
    expect_refused("", "there is no document");
    expect_refused(" \n\t", "there is no document");
    expect_refused("{\"a\": [1, 2", "the document ends early: the file is truncated");
    expect_refused("{\"a\": tru}", "line 1, column 7: unexpected text \"tru}\"");
    expect_refused("{\n  \"a\": 1,\n  \"b\" 2\n}", "line 3, column");
    expect_refused("{\"a\": NaN}", "not valid JSON");

    char err[256] = "";
    cJSON *root = (cJSON *)1;
    assert_int_equal(mosaic__json_parse_strict(NULL, NULL, 0, &root, err, sizeof(err)),
                     MOSAIC_EINVAL);
    assert_null(root);
    assert_non_null(strstr(err, "<input>: "));
}

static void test_strict_read_file(void **state)
{
    char err[512] = "", fifo[512];
    cJSON *root = NULL;
    const char *p;

    (void)state;
    p = file_with("doc.json", "{\"a\": {\"b\": 2}}\n", 16);
    assert_int_equal(mosaic__json_read_file(p, 100, &root, err, sizeof(err)), 0);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "a"), "b")->valueint, 2);
    cJSON_Delete(root);
    p = file_with("dup.json", "{\"a\": 1, \"a\": 2}", 16);
    assert_int_equal(mosaic__json_read_file(p, 100, &root, err, sizeof(err)),
                     MOSAIC_EFORMAT);
    assert_null(root);
    assert_non_null(strstr(err, "dup.json: a: the key appears twice"));
    p = file_with("empty.json", "", 0);
    assert_int_equal(mosaic__json_read_file(p, 100, &root, err, sizeof(err)),
                     MOSAIC_EFORMAT);
    assert_non_null(strstr(err, "empty.json: the file is empty"));
    p = file_with("big.json", "[1,2,3]", 7);
    assert_int_equal(mosaic__json_read_file(p, 6, &root, err, sizeof(err)),
                     MOSAIC_ETOOBIG);
    /* A FIFO with no writer is refused at once, not waited on. */
    snprintf(fifo, sizeof(fifo), "%s/json.fifo", g_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(10);
    assert_int_equal(mosaic__json_read_file(fifo, 100, &root, err, sizeof(err)),
                     MOSAIC_EIO);
    assert_non_null(strstr(err, "is a FIFO, not a regular file"));
    assert_int_equal(mosaic__jsonl_read_file(fifo, 100, NULL, NULL, err, sizeof(err)),
                     MOSAIC_EIO);
    alarm(0);
    assert_null(root);
}

struct jl {
    long lines[8];
    int values[8];
    char where[8][600];
    int n;
    int stop_at; /* the record count at which to fail, 0: never */
};

static int on_record(void *ctx, const char *where, long line, cJSON *doc,
                     char *err, size_t errlen)
{
    struct jl *j = ctx;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "v");

    if (j->n == 8)
        return mosaic__errf(err, errlen, MOSAIC_ETOOBIG, where, NULL, "too many");
    j->lines[j->n] = line;
    j->values[j->n] = cJSON_IsNumber(v) ? v->valueint : -1;
    snprintf(j->where[j->n], sizeof(j->where[0]), "%s", where);
    j->n++;
    if (j->stop_at && j->n == j->stop_at)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, where, "v",
                            "the callback's own refusal");
    return 0;
}

static int jsonl(const char *text, struct jl *j, char *err, size_t errlen)
{
    return mosaic__jsonl_parse_strict("d.jsonl", text, strlen(text), on_record,
                                      j, err, errlen);
}

static void test_strict_jsonl(void **state)
{
    struct jl j;
    char err[1024] = "";

    (void)state;
    memset(&j, 0, sizeof(j));
    assert_int_equal(jsonl("{\"v\": 1}\n\n  \n{\"v\": 2}\r\n{\"v\": 3}", &j, err,
                           sizeof(err)), 0);
    assert_int_equal(j.n, 3);
    assert_int_equal(j.lines[0], 1);
    assert_int_equal(j.lines[1], 4);
    assert_int_equal(j.lines[2], 5);
    assert_int_equal(j.values[2], 3);
    assert_string_equal(j.where[1], "d.jsonl:4");

    memset(&j, 0, sizeof(j));
    assert_int_equal(jsonl("", &j, err, sizeof(err)), 0);
    assert_int_equal(j.n, 0);

    /* Each refusal names the line; records before it were delivered. */
    memset(&j, 0, sizeof(j));
    assert_int_equal(jsonl("{\"v\": 1}\n{\"v\": 2, \"v\": 3}\n", &j, err, sizeof(err)),
                     MOSAIC_EFORMAT);
    assert_int_equal(j.n, 1);
    assert_non_null(strstr(err, "d.jsonl:2: v: the key appears twice"));
    memset(&j, 0, sizeof(j));
    assert_int_equal(jsonl("{\"v\": 1}\n{\"v\": 2}\n{\"v\": 3} {\"v\": 4}\n", &j,
                           err, sizeof(err)), MOSAIC_EFORMAT);
    assert_non_null(strstr(err, "d.jsonl:3: not valid JSON at column 10: text after"));
    memset(&j, 0, sizeof(j));
    /* A document may not run over two lines. */
    assert_int_equal(jsonl("{\"v\":\n 1}\n", &j, err, sizeof(err)), MOSAIC_EFORMAT);
    assert_non_null(strstr(err, "d.jsonl:1: not valid JSON at column 6: the document "
                                "ends early"));
    assert_int_equal(jsonl("{\"v\": 1}\n{\"v\": \"\xfe\"}\n", &j, err, sizeof(err)),
                     MOSAIC_EFORMAT);
    assert_non_null(strstr(err, "d.jsonl:2: not valid JSON at column 8: byte 0xfe"));

    /* The callback's code and message come back as they are. */
    memset(&j, 0, sizeof(j));
    j.stop_at = 2;
    assert_int_equal(jsonl("{\"v\": 1}\n{\"v\": 2}\n{\"v\": 3}\n", &j, err, sizeof(err)),
                     MOSAIC_EINVAL);
    assert_int_equal(j.n, 2);
    assert_string_equal(err, "d.jsonl:2: v: the callback's own refusal");

    assert_int_equal(mosaic__jsonl_parse_strict("d.jsonl", "{}", 2, NULL, NULL, err,
                                                sizeof(err)), MOSAIC_EINVAL);
    memset(&j, 0, sizeof(j));
    const char *p = file_with("d.jsonl", "{\"v\": 7}\n{\"v\": 8}\n", 18);
    assert_int_equal(mosaic__jsonl_read_file(p, 100, on_record, &j, err, sizeof(err)), 0);
    assert_int_equal(j.n, 2);
    assert_int_equal(j.values[1], 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_errf),
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_json_escapes),
        cmocka_unit_test(test_json_buffer_cut),
        cmocka_unit_test(test_json_random_bytes),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_json_write_error),
        cmocka_unit_test(test_strict_valid),
        cmocka_unit_test(test_strict_trailing),
        cmocka_unit_test(test_strict_duplicates),
        cmocka_unit_test(test_strict_bytes),
        cmocka_unit_test(test_strict_read_file),
        cmocka_unit_test(test_strict_jsonl),
        cmocka_unit_test(test_kident),
        cmocka_unit_test(test_drv_load),
    };
    return cmocka_run_group_tests_name("core", tests, setup, teardown);
}
