/*
 * The workspace (include/argus/workspace.h): SHA-256 against the FIPS 180-4
 * examples, objects stored and read back, reuse by task key, a truncated
 * or altered object found on read, manifests that are garbage or edited,
 * joins of incompatible evidence refused with the field named, the
 * version tree, collection, and directories that must not be used.
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "argus/workspace.h"
#include "argus_test_util.h"

static int setup(void **state)
{
    (void)state;
    return atu_setup("argus-ws-test");
}

static void test_sha256_fips(void **state)
{
    (void)state;
    char h[ARGUS_HASH_HEX];
    argus_sha256_hex("", 0, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    argus_sha256_hex("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    argus_sha256_hex(two, strlen(two), h);
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* A million 'a', fed in uneven pieces so that every buffer boundary
     * of the streaming code is crossed. */
    argus_sha256 s;
    argus_sha256_init(&s);
    char a[1000];
    memset(a, 'a', sizeof a);
    size_t left = 1000000, step = 1;
    while (left > 0) {
        size_t n = step < left ? step : left;
        if (n > sizeof a)
            n = sizeof a;
        argus_sha256_update(&s, a, n);
        left -= n;
        step = step * 7 % 997 + 1;
    }
    unsigned char d[32];
    argus_sha256_final(&s, d);
    static const unsigned char want[32] = {
        0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7,
        0xe2, 0x84, 0xd7, 0x3e, 0x67, 0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97,
        0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0};
    assert_memory_equal(d, want, 32);
}

static int count_cb(const char *id, uint64_t bytes, void *user)
{
    (void)id;
    (void)bytes;
    (*(int *)user)++;
    return 0;
}

static int count(argus_ws *ws, argus_ws_entry_type t)
{
    int n = 0;
    assert_int_equal(argus_ws_each(ws, t, count_cb, &n, NULL, 0), 0);
    return n;
}

static void test_put_get(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("pg");
    char h[ARGUS_HASH_HEX], h2[ARGUS_HASH_HEX], want[ARGUS_HASH_HEX], msg[512];
    const char *text = "sass of gemm v1";
    assert_int_equal(argus_ws_put(ws, text, strlen(text), h, msg, sizeof msg), 0);
    argus_sha256_hex(text, strlen(text), want);
    assert_string_equal(h, want);
    void *data;
    size_t len;
    assert_int_equal(argus_ws_get(ws, h, &data, &len, msg, sizeof msg), 0);
    assert_int_equal(len, strlen(text));
    assert_memory_equal(data, text, len);
    free(data);
    /* The same bytes again: the same object, not a second one. */
    assert_int_equal(argus_ws_put(ws, text, strlen(text), h2, msg, sizeof msg), 0);
    assert_string_equal(h, h2);
    assert_int_equal(count(ws, ARGUS_WS_ENTRY_OBJECT), 1);
    /* Objects are the user's alone. */
    char p[512];
    struct stat st;
    assert_int_equal(argus_ws_object_path(ws, h, p, sizeof p), 0);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* Empty objects exist too (a probe that found nothing). */
    assert_int_equal(argus_ws_put(ws, "", 0, h2, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_get(ws, h2, &data, &len, msg, sizeof msg), 0);
    assert_int_equal(len, 0);
    free(data);
    /* A hash that is not there, and one that is not a hash. */
    memset(want, 'f', 64);
    assert_int_equal(argus_ws_get(ws, want, &data, &len, msg, sizeof msg), ARGUS_WS_ENOENT);
    assert_int_equal(argus_ws_get(ws, "../../etc/passwd", &data, &len, msg, sizeof msg),
                     ARGUS_EINVAL);
    argus_ws_close(ws);
}

static void test_corrupt_object(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("corrupt");
    char h[ARGUS_HASH_HEX], key[ARGUS_HASH_HEX], msg[1024] = "";
    const char *trace = "0123456789 a trace of iterations 4..8";
    assert_int_equal(argus_ws_put(ws, trace, strlen(trace), h, msg, sizeof msg), 0);
    argus_ws_task t = {.kind = "collect", .config = "pcsamp"};
    argus_ws_output o = {"trace", h};
    assert_int_equal(argus_ws_record(ws, &t, &o, 1, key, msg, sizeof msg), 0);
    char p[512];
    assert_int_equal(argus_ws_object_path(ws, h, p, sizeof p), 0);
    assert_int_equal(truncate(p, 10), 0);

    void *data = NULL;
    size_t len;
    assert_int_equal(argus_ws_get(ws, h, &data, &len, msg, sizeof msg), ARGUS_WS_ECORRUPT);
    assert_null(data);
    assert_non_null(strstr(msg, h));      /* names the object */
    assert_non_null(strstr(msg, "10 bytes"));
    assert_non_null(strstr(msg, "truncated or altered"));
    assert_int_equal(argus_ws_verify(ws, h, NULL, msg, sizeof msg), ARGUS_WS_ECORRUPT);
    /* The task that made it is not found: it runs again. */
    argus_ws_manifest *m = NULL;
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), ARGUS_WS_ECORRUPT);
    assert_null(m);
    assert_non_null(strstr(msg, "output 'trace'"));
    /* Storing the bytes again repairs it. */
    assert_int_equal(argus_ws_put(ws, trace, strlen(trace), h, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), 0);
    argus_ws_manifest_free(m);
    /* Same length, one byte altered. */
    int fd = open(p, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "X", 1, 3), 1);
    close(fd);
    assert_int_equal(argus_ws_get(ws, h, &data, &len, msg, sizeof msg), ARGUS_WS_ECORRUPT);
    /* A missing output is as good as a damaged one. */
    assert_int_equal(unlink(p), 0);
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), ARGUS_WS_ECORRUPT);
    argus_ws_close(ws);
}

static const argus_ws_env h200 = {"NVIDIA H200", "580.159.04", "13.0"};

static void test_task_keys(void **state)
{
    (void)state;
    char in1[ARGUS_HASH_HEX], in2[ARGUS_HASH_HEX];
    argus_sha256_hex("one", 3, in1);
    argus_sha256_hex("two", 3, in2);
    const char *ins[] = {in1, in2}, *rev[] = {in2, in1};
    argus_ws_task base_t = {.kind = "collect",
                            .config = "backend=pcsamp period=5",
                            .program = "p1",
                            .scope = "iter=4:8",
                            .env = &h200,
                            .inputs = ins,
                            .ninputs = 2};
    char k0[ARGUS_HASH_HEX], k[ARGUS_HASH_HEX];
    assert_int_equal(argus_ws_task_key(&base_t, k0, NULL, 0), 0);
    assert_int_equal(argus_ws_task_key(&base_t, k, NULL, 0), 0);
    assert_string_equal(k0, k);

    /* Each field changes the key. */
    argus_ws_task v = base_t;
    v.kind = "transform";
    assert_int_equal(argus_ws_task_key(&v, k, NULL, 0), 0);
    assert_string_not_equal(k0, k);
    v = base_t;
    v.config = "backend=pcsamp period=6";
    argus_ws_task_key(&v, k, NULL, 0);
    assert_string_not_equal(k0, k);
    v = base_t;
    v.program = "p2";
    argus_ws_task_key(&v, k, NULL, 0);
    assert_string_not_equal(k0, k);
    v = base_t;
    v.scope = "iter=4:9";
    argus_ws_task_key(&v, k, NULL, 0);
    assert_string_not_equal(k0, k);
    v = base_t;
    v.inputs = rev;
    argus_ws_task_key(&v, k, NULL, 0);
    assert_string_not_equal(k0, k);
    v = base_t;
    v.ninputs = 1;
    argus_ws_task_key(&v, k, NULL, 0);
    assert_string_not_equal(k0, k);
    argus_ws_env drv = h200;
    drv.driver = "575.57.08";
    v = base_t;
    v.env = &drv;
    argus_ws_task_key(&v, k, NULL, 0);
    assert_string_not_equal(k0, k);
    v = base_t;
    v.env = NULL;
    argus_ws_task_key(&v, k, NULL, 0);
    assert_string_not_equal(k0, k);
    /* Field boundaries cannot be moved: "ab"+"c" is not "a"+"bc". */
    argus_ws_task x = {.kind = "k", .config = "ab", .scope = "c"};
    argus_ws_task y = {.kind = "k", .config = "a", .scope = "bc"};
    char kx[ARGUS_HASH_HEX], ky[ARGUS_HASH_HEX];
    argus_ws_task_key(&x, kx, NULL, 0);
    argus_ws_task_key(&y, ky, NULL, 0);
    assert_string_not_equal(kx, ky);

    char msg[256];
    const char *badin[] = {"not-a-hash"};
    v = base_t;
    v.inputs = badin;
    v.ninputs = 1;
    assert_int_equal(argus_ws_task_key(&v, k, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "inputs[0]"));
    v = base_t;
    v.kind = NULL;
    assert_int_equal(argus_ws_task_key(&v, k, msg, sizeof msg), ARGUS_EINVAL);
}

static void test_record_lookup_reuse(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("reuse");
    char prog[ARGUS_HASH_HEX], tr[ARGUS_HASH_HEX], map[ARGUS_HASH_HEX], key[ARGUS_HASH_HEX];
    char msg[512] = "";
    assert_int_equal(argus_ws_put(ws, "cubin", 5, prog, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_put(ws, "trace-bytes", 11, tr, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_put(ws, "pc->region", 10, map, msg, sizeof msg), 0);
    const char *ins[] = {prog};
    argus_ws_task t = {.kind = "collect",
                       .config = "region-trace",
                       .program = "v1",
                       .scope = "iter=0:3",
                       .env = &h200,
                       .inputs = ins,
                       .ninputs = 1};
    argus_ws_output outs[] = {{"trace", tr}, {"pcmap", map}};
    assert_int_equal(argus_ws_record(ws, &t, outs, 2, key, msg, sizeof msg), 0);

    /* A second query computes the same key from the same facts. */
    argus_ws *ws2 = atu_open_ws("reuse");
    char key2[ARGUS_HASH_HEX];
    assert_int_equal(argus_ws_task_key(&t, key2, NULL, 0), 0);
    assert_string_equal(key, key2);
    argus_ws_manifest *m = NULL;
    assert_int_equal(argus_ws_lookup(ws2, key2, &m, msg, sizeof msg), 0);
    assert_string_equal(argus_ws_manifest_output(m, "trace"), tr);
    assert_string_equal(argus_ws_manifest_output(m, "pcmap"), map);
    assert_null(argus_ws_manifest_output(m, "nope"));
    assert_string_equal(m->kind, "collect");
    assert_string_equal(m->program, "v1");
    assert_string_equal(m->gpu, "NVIDIA H200");
    assert_int_equal(m->ninputs, 1);
    assert_string_equal(m->inputs[0], prog);
    argus_ws_manifest_free(m);

    /* Another driver is another task: not found. */
    argus_ws_env drv = h200;
    drv.driver = "575.57.08";
    t.env = &drv;
    assert_int_equal(argus_ws_task_key(&t, key2, NULL, 0), 0);
    assert_int_equal(argus_ws_lookup(ws2, key2, &m, msg, sizeof msg), ARGUS_WS_ENOENT);

    /* An output that is not stored cannot be recorded. */
    char ghost[ARGUS_HASH_HEX];
    memset(ghost, 'a', 64);
    ghost[64] = '\0';
    argus_ws_output bad[] = {{"trace", ghost}};
    assert_int_equal(argus_ws_record(ws, &t, bad, 1, key2, msg, sizeof msg), ARGUS_WS_ENOENT);
    argus_ws_close(ws2);
    argus_ws_close(ws);
}

static void write_file(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_garbage_manifest(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("garbage");
    char h[ARGUS_HASH_HEX], key[ARGUS_HASH_HEX], msg[1024] = "";
    assert_int_equal(argus_ws_put(ws, "x", 1, h, msg, sizeof msg), 0);
    argus_ws_task t = {.kind = "synthesize", .config = "attribution"};
    argus_ws_output o = {"report", h};
    assert_int_equal(argus_ws_record(ws, &t, &o, 1, key, msg, sizeof msg), 0);
    char p[512], rel[200];
    snprintf(rel, sizeof rel, "garbage/tasks/%.2s/%s.json", key, key);
    atu_path(p, sizeof p, rel);
    argus_ws_manifest *m = NULL;

    write_file(p, "\x01\x02 not json at all {{{");
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), ARGUS_WS_EMANIFEST);
    assert_non_null(strstr(msg, key)); /* the file is named */
    assert_non_null(strstr(msg, "not a JSON object"));

    write_file(p, "{\"schema\": \"argus.ws.task\", \"format\": 1, \"kind\": 7}");
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), ARGUS_WS_EMANIFEST);
    assert_non_null(strstr(msg, "'kind'"));

    write_file(p, "[]");
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), ARGUS_WS_EMANIFEST);

    write_file(p, "{\"schema\": \"argus.ws.task\", \"format\": 99}");
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), ARGUS_WS_EMANIFEST);
    assert_non_null(strstr(msg, "'format'"));

    /* Valid JSON, edited: it claims another configuration under this key. */
    assert_int_equal(argus_ws_record(ws, &t, &o, 1, key, msg, sizeof msg), 0);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *c = strstr(text, "attribution");
    assert_non_null(c);
    memcpy(c, "attributioX", 11);
    write_file(p, text);
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), ARGUS_WS_EMANIFEST);
    assert_non_null(strstr(msg, "not to its name"));
    assert_null(m);

    /* A manifest that is a FIFO is refused without blocking. */
    unlink(p);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), ARGUS_WS_EUNSAFE);
    assert_non_null(strstr(msg, "FIFO"));
    unlink(p);
    /* A symlink in its place is not followed. */
    char target[512];
    atu_path(target, sizeof target, "elsewhere.json");
    write_file(target, "{}");
    assert_int_equal(symlink(target, p), 0);
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), ARGUS_WS_EUNSAFE);
    unlink(p);

    /* gc drops a garbage manifest (and the object only it held). */
    write_file(p, "garbage");
    argus_ws_gc_stats st;
    assert_int_equal(argus_ws_gc(ws, 0, &st, msg, sizeof msg), 0);
    assert_int_equal(st.tasks_removed, 1);
    assert_int_equal(st.objects_removed, 1);
    assert_int_equal(access(p, F_OK), -1);
    argus_ws_close(ws);
}

static argus_ws_manifest *mk(const char *key, const char *program, const char *scope,
                             const argus_ws_env *env)
{
    argus_ws_manifest *m = calloc(1, sizeof *m);
    snprintf(m->key, sizeof m->key, "%s", key);
    m->kind = strdup("collect");
    m->config = strdup("");
    m->program = strdup(program);
    m->scope = strdup(scope);
    if (env) {
        m->has_env = 1;
        m->gpu = strdup(env->gpu);
        m->driver = strdup(env->driver);
        m->cuda = strdup(env->cuda);
    }
    return m;
}

static void test_join_check(void **state)
{
    (void)state;
    argus_ws_env other = h200;
    other.driver = "575.57.08";
    argus_ws_env cuda = h200;
    cuda.cuda = "12.8";
    argus_ws_manifest *a = mk("aaaa", "v1", "iter=4", &h200);
    argus_ws_manifest *b = mk("bbbb", "v1", "iter=4", &h200);
    argus_ws_manifest *cpu = mk("cccc", "v1", "iter=4", NULL);
    argus_ws_manifest *v2 = mk("dddd", "v2", "iter=4", &h200);
    argus_ws_manifest *drv = mk("eeee", "v1", "iter=4", &other);
    argus_ws_manifest *cu = mk("ffff", "v1", "iter=4", &cuda);
    argus_ws_manifest *it5 = mk("gggg", "v1", "iter=5", &h200);
    char msg[512];

    const argus_ws_manifest *ok[] = {a, b, cpu};
    assert_int_equal(argus_ws_join_check(ok, 3, 0, msg, sizeof msg), 0);
    /* The synthesis (no GPU) first: the environments are still compared. */
    const argus_ws_manifest *ok2[] = {cpu, a, drv};
    assert_int_equal(argus_ws_join_check(ok2, 3, 0, msg, sizeof msg), ARGUS_WS_EINCOMPAT);
    assert_non_null(strstr(msg, "driver"));
    assert_non_null(strstr(msg, "575.57.08"));

    const argus_ws_manifest *pv[] = {a, v2};
    assert_int_equal(argus_ws_join_check(pv, 2, 0, msg, sizeof msg), ARGUS_WS_EINCOMPAT);
    assert_non_null(strstr(msg, "program versions"));
    assert_non_null(strstr(msg, "dddd"));
    const argus_ws_manifest *cv[] = {a, cu};
    assert_int_equal(argus_ws_join_check(cv, 2, 0, msg, sizeof msg), ARGUS_WS_EINCOMPAT);
    assert_non_null(strstr(msg, "CUDA version"));
    const argus_ws_manifest *sv[] = {a, it5};
    assert_int_equal(argus_ws_join_check(sv, 2, 0, msg, sizeof msg), ARGUS_WS_EINCOMPAT);
    assert_non_null(strstr(msg, "iter=5"));
    assert_int_equal(argus_ws_join_check(sv, 2, ARGUS_WS_JOIN_ANY_SCOPE, msg, sizeof msg), 0);

    argus_ws_manifest *all[] = {a, b, cpu, v2, drv, cu, it5};
    for (size_t i = 0; i < 7; i++)
        argus_ws_manifest_free(all[i]);
}

static void test_fork_tree(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("fork");
    char p0[ARGUS_HASH_HEX], p1[ARGUS_HASH_HEX], p2[ARGUS_HASH_HEX], msg[1024] = "";
    assert_int_equal(argus_ws_put(ws, "gemm v0", 7, p0, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_put(ws, "gemm v1 (BK=64)", 15, p1, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_put(ws, "gemm v2 (BK=32)", 15, p2, msg, sizeof msg), 0);
    char root[ARGUS_HASH_HEX], a[ARGUS_HASH_HEX], b[ARGUS_HASH_HEX], c[ARGUS_HASH_HEX];
    assert_int_equal(argus_ws_fork(ws, NULL, p0, "baseline", root, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_fork(ws, root, p1, "BK=64", a, msg, sizeof msg), 0);
    /* An optimizer goes back to the root and tries another branch. */
    assert_int_equal(argus_ws_fork(ws, root, p2, "BK=32", b, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_fork(ws, a, p2, "BK=64 then 32", c, msg, sizeof msg), 0);
    assert_string_not_equal(a, b);
    /* Forking the same program again names the same version. */
    char again[ARGUS_HASH_HEX];
    assert_int_equal(argus_ws_fork(ws, root, p1, "BK=64", again, msg, sizeof msg), 0);
    assert_string_equal(a, again);

    argus_ws_version v;
    assert_int_equal(argus_ws_version_get(ws, c, &v, msg, sizeof msg), 0);
    assert_string_equal(v.parent, a);
    assert_string_equal(v.artifact, p2);
    assert_string_equal(v.label, "BK=64 then 32");
    argus_ws_version_clear(&v);
    assert_int_equal(argus_ws_version_get(ws, root, &v, msg, sizeof msg), 0);
    assert_string_equal(v.parent, "");
    argus_ws_version_clear(&v);

    assert_int_equal(argus_ws_version_is_ancestor(ws, root, c, msg, sizeof msg), 1);
    assert_int_equal(argus_ws_version_is_ancestor(ws, a, c, msg, sizeof msg), 1);
    assert_int_equal(argus_ws_version_is_ancestor(ws, b, c, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_version_is_ancestor(ws, c, root, msg, sizeof msg), 0);
    assert_int_equal(count(ws, ARGUS_WS_ENTRY_VERSION), 4);

    /* A parent or an artifact that does not exist. */
    char none[ARGUS_HASH_HEX];
    memset(none, '0', 64);
    none[64] = '\0';
    assert_int_equal(argus_ws_fork(ws, none, p1, "x", again, msg, sizeof msg), ARGUS_WS_ENOENT);
    assert_non_null(strstr(msg, "parent version"));
    assert_int_equal(argus_ws_fork(ws, root, none, "x", again, msg, sizeof msg),
                     ARGUS_WS_ENOENT);
    assert_non_null(strstr(msg, "program artifact"));

    /* gc keeps the versions' programs. */
    argus_ws_gc_stats st;
    assert_int_equal(argus_ws_gc(ws, 0, &st, msg, sizeof msg), 0);
    assert_int_equal(st.objects_removed, 0);
    assert_int_equal(st.objects_kept, 3);
    argus_ws_close(ws);
}

static void test_gc(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("gc");
    char keep[ARGUS_HASH_HEX], in[ARGUS_HASH_HEX], loose[ARGUS_HASH_HEX], key[ARGUS_HASH_HEX];
    char msg[512] = "";
    assert_int_equal(argus_ws_put(ws, "input", 5, in, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_put(ws, "output", 6, keep, msg, sizeof msg), 0);
    assert_int_equal(argus_ws_put(ws, "nobody's", 8, loose, msg, sizeof msg), 0);
    const char *ins[] = {in};
    argus_ws_task t = {.kind = "synthesize", .inputs = ins, .ninputs = 1};
    argus_ws_output o = {"r", keep};
    assert_int_equal(argus_ws_record(ws, &t, &o, 1, key, msg, sizeof msg), 0);
    /* A dead writer's temporary file, two minutes old, and a live one. */
    char p[512];
    atu_path(p, sizeof p, "gc/tmp/dead.1");
    write_file(p, "partial");
    struct timespec old[2] = {{time(NULL) - 120, 0}, {time(NULL) - 120, 0}};
    assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
    /* And a dead runtime's worker folder. */
    char wd[512];
    atu_path(wd, sizeof wd, "gc/tmp/rt-dead");
    assert_int_equal(mkdir(wd, 0700), 0);
    atu_path(p, sizeof p, "gc/tmp/rt-dead/log");
    write_file(p, "worker log");
    assert_int_equal(utimensat(AT_FDCWD, wd, old, 0), 0);
    atu_path(p, sizeof p, "gc/tmp/live.1");
    write_file(p, "partial");

    argus_ws_gc_stats st;
    assert_int_equal(argus_ws_gc(ws, 1, &st, msg, sizeof msg), 0);
    assert_int_equal(st.objects_removed, 1);
    assert_int_equal(st.bytes_removed, 8);
    assert_int_equal(st.tmp_removed, 2);
    assert_int_equal(count(ws, ARGUS_WS_ENTRY_OBJECT), 3); /* a dry run removes nothing */
    assert_int_equal(argus_ws_gc(ws, 0, &st, msg, sizeof msg), 0);
    assert_int_equal(st.objects_removed, 1);
    assert_int_equal(st.objects_kept, 2);
    assert_int_equal(count(ws, ARGUS_WS_ENTRY_OBJECT), 2);
    assert_int_equal(argus_ws_verify(ws, loose, NULL, msg, sizeof msg), ARGUS_WS_ENOENT);
    assert_int_equal(access(p, F_OK), 0);
    assert_int_equal(access(wd, F_OK), -1);
    argus_ws_manifest *m = NULL;
    assert_int_equal(argus_ws_lookup(ws, key, &m, msg, sizeof msg), 0);
    argus_ws_manifest_free(m);
    argus_ws_close(ws);
}

static void test_unsafe_dirs(void **state)
{
    (void)state;
    char p[512], q[512], msg[512];
    argus_ws *ws = NULL;

    atu_path(p, sizeof p, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(argus_ws_open(p, 1, &ws, msg, sizeof msg), ARGUS_WS_EUNSAFE);
    assert_null(ws);
    assert_non_null(strstr(msg, "a FIFO"));

    atu_path(q, sizeof q, "realdir");
    assert_int_equal(mkdir(q, 0700), 0);
    atu_path(p, sizeof p, "link");
    assert_int_equal(symlink(q, p), 0);
    assert_int_equal(argus_ws_open(p, 1, &ws, msg, sizeof msg), ARGUS_WS_EUNSAFE);
    assert_non_null(strstr(msg, "symbolic link"));

    atu_path(p, sizeof p, "plainfile");
    write_file(p, "x");
    assert_int_equal(argus_ws_open(p, 1, &ws, msg, sizeof msg), ARGUS_WS_EUNSAFE);
    assert_non_null(strstr(msg, "regular file"));

    atu_path(p, sizeof p, "missing");
    assert_int_equal(argus_ws_open(p, 0, &ws, msg, sizeof msg), ARGUS_WS_ENOENT);

    /* A directory others may write into. */
    atu_path(p, sizeof p, "open");
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(chmod(p, 0777), 0);
    assert_int_equal(argus_ws_open(p, 1, &ws, msg, sizeof msg), ARGUS_WS_EUNSAFE);
    assert_non_null(strstr(msg, "chmod 700"));

    /* A world-writable parent: refused without the sticky bit, allowed
     * with it (as under /tmp). */
    atu_path(p, sizeof p, "shared");
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(chmod(p, 0777), 0);
    atu_path(q, sizeof q, "shared/ws");
    assert_int_equal(argus_ws_open(q, 1, &ws, msg, sizeof msg), ARGUS_WS_EUNSAFE);
    assert_non_null(strstr(msg, "sticky"));
    assert_int_equal(access(q, F_OK), -1); /* nothing was created there */
    assert_int_equal(chmod(p, 01777), 0);
    assert_int_equal(argus_ws_open(q, 1, &ws, msg, sizeof msg), 0);
    argus_ws_close(ws);
    chmod(p, 0700);

    /* A workspace whose objects folder was replaced by a file. */
    ws = atu_open_ws("broken");
    argus_ws_close(ws);
    atu_path(p, sizeof p, "broken/versions");
    assert_int_equal(rmdir(p), 0);
    write_file(p, "");
    atu_path(p, sizeof p, "broken");
    assert_int_equal(argus_ws_open(p, 1, &ws, msg, sizeof msg), ARGUS_WS_EUNSAFE);
    assert_non_null(strstr(msg, "versions"));
}

static void test_put_file(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("pf");
    char p[512], l[512], h[ARGUS_HASH_HEX], want[ARGUS_HASH_HEX], msg[512];
    atu_path(p, sizeof p, "pf-input.bin");
    write_file(p, "a PC-to-region map");
    assert_int_equal(argus_ws_put_file(ws, p, h, msg, sizeof msg), 0);
    argus_sha256_hex("a PC-to-region map", 18, want);
    assert_string_equal(h, want);
    atu_path(l, sizeof l, "pf-link.bin");
    assert_int_equal(symlink(p, l), 0);
    assert_int_equal(argus_ws_put_file(ws, l, h, msg, sizeof msg), ARGUS_EIO);
    assert_non_null(strstr(msg, "symbolic link"));
    atu_path(l, sizeof l, "pf-fifo");
    assert_int_equal(mkfifo(l, 0600), 0);
    assert_int_equal(argus_ws_put_file(ws, l, h, msg, sizeof msg), ARGUS_EIO);
    assert_non_null(strstr(msg, "FIFO"));
    argus_ws_close(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_fips),
        cmocka_unit_test(test_put_get),
        cmocka_unit_test(test_put_file),
        cmocka_unit_test(test_corrupt_object),
        cmocka_unit_test(test_task_keys),
        cmocka_unit_test(test_record_lookup_reuse),
        cmocka_unit_test(test_garbage_manifest),
        cmocka_unit_test(test_join_check),
        cmocka_unit_test(test_fork_tree),
        cmocka_unit_test(test_gc),
        cmocka_unit_test(test_unsafe_dirs),
    };
    return cmocka_run_group_tests(tests, setup, atu_teardown);
}
