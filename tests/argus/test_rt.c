/*
 * The runtime (include/argus/rt.h) on CPU tasks and on worker processes
 * that are shell commands: a task never starts before its inputs exist,
 * independent CPU tasks overlap, tasks of one exclusivity class never do
 * (checked on the recorded start and end times), a worker that crashes and
 * one that hangs fail only their branch, a rerun on the same workspace runs
 * only the failed branch (executions counted), a control task adds
 * branches, and bad task descriptions are refused with the field named.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "argus/rt.h"
#include "argus_test_util.h"

static int setup(void **state)
{
    (void)state;
    return atu_setup("argus-rt-test");
}

static argus_rt *new_rt(argus_ws *ws, unsigned threads)
{
    argus_rt_opts o = {.cpu_threads = threads};
    argus_rt *rt = NULL;
    assert_int_equal(argus_rt_new(ws, &o, &rt), 0);
    return rt;
}

static void add(argus_rt *rt, const argus_rt_task_desc *d)
{
    char msg[512] = "";
    int rc = argus_rt_add(rt, d, msg, sizeof msg);
    if (rc != 0)
        fail_msg("argus_rt_add %s: %s", d->id, msg);
}

static argus_rt_status get(argus_rt *rt, const char *id)
{
    argus_rt_status st;
    assert_int_equal(argus_rt_get(rt, id, &st), 0);
    return st;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A CPU task body: counts its runs, sleeps, and writes "out" as its id
 * followed by the bytes of its inputs, so that a test can see what it
 * read. */
typedef struct body {
    atomic_int runs;
    int sleep_ms;
    int fail;
    const char *in_task[4];
} body;

static int cpu_body(argus_rt_ctx *ctx, void *user)
{
    body *b = user;
    atomic_fetch_add(&b->runs, 1);
    if (b->sleep_ms)
        sleep_ms(b->sleep_ms);
    if (b->fail)
        return argus_rt_ctx_fail(ctx, "the test told task %s to fail", argus_rt_ctx_id(ctx));
    char out[4096];
    size_t n = (size_t)snprintf(out, sizeof out, "%s", argus_rt_ctx_id(ctx));
    for (int i = 0; i < 4 && b->in_task[i]; i++) {
        void *data;
        size_t len;
        int rc = argus_rt_ctx_input(ctx, b->in_task[i], "out", &data, &len);
        if (rc != 0)
            return rc;
        n += (size_t)snprintf(out + n, sizeof out - n, "(%.*s)", (int)len, (char *)data);
        free(data);
    }
    return argus_rt_ctx_output(ctx, "out", out, n);
}

static const char *const OUT[] = {"out"};

static argus_rt_task_desc cpu(const char *id, const char *const *deps, size_t ndeps, body *b)
{
    argus_rt_task_desc d = {.id = id,
                            .kind = "synthesize",
                            .deps = deps,
                            .ndeps = ndeps,
                            .exec = cpu_body,
                            .user = b,
                            .outputs = OUT,
                            .noutputs = 1,
                            .config = id};
    return d;
}

static void test_order_and_inputs(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("order");
    argus_rt *rt = new_rt(ws, 4);
    /* A diamond with a tail: a -> (b, c) -> d -> e. */
    body ba = {.sleep_ms = 30}, bb = {.sleep_ms = 10, .in_task = {"a"}},
         bc = {.sleep_ms = 40, .in_task = {"a"}}, bd = {.in_task = {"b", "c"}},
         be = {.in_task = {"d"}};
    const char *da[] = {"a"}, *dbc[] = {"b", "c"}, *dd[] = {"d"};
    argus_rt_task_desc t;
    t = cpu("a", NULL, 0, &ba);
    add(rt, &t);
    t = cpu("b", da, 1, &bb);
    add(rt, &t);
    t = cpu("c", da, 1, &bc);
    add(rt, &t);
    t = cpu("d", dbc, 2, &bd);
    add(rt, &t);
    t = cpu("e", dd, 1, &be);
    add(rt, &t);
    assert_int_equal(argus_rt_run(rt), 0);
    const char *ids[] = {"a", "b", "c", "d", "e"};
    const char *const *deps[] = {NULL, da, da, dbc, dd};
    size_t nd[] = {0, 1, 1, 2, 1};
    for (int i = 0; i < 5; i++) {
        argus_rt_status st = get(rt, ids[i]);
        assert_int_equal(st.state, ARGUS_RT_DONE);
        assert_int_equal(st.runs, 1);
        for (size_t k = 0; k < nd[i]; k++) {
            argus_rt_status ds = get(rt, deps[i][k]);
            if (ds.end_ns > st.start_ns)
                fail_msg("task %s started %lld ns before its input %s ended", ids[i],
                         (long long)(ds.end_ns - st.start_ns), deps[i][k]);
        }
    }
    /* What e read is what its inputs made, through the workspace. */
    void *data;
    size_t len;
    char msg[256];
    assert_int_equal(argus_ws_get(ws, argus_rt_output(rt, "e", "out"), &data, &len, msg,
                                  sizeof msg),
                     0);
    assert_string_equal(data, "e(d(b(a))(c(a)))");
    free(data);
    argus_rt_free(rt);
    argus_ws_close(ws);
}

static int overlap(argus_rt_status a, argus_rt_status b)
{
    return a.start_ns < b.end_ns && b.start_ns < a.end_ns;
}

static void test_parallel_cpu(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("par");
    argus_rt *rt = new_rt(ws, 4);
    body b[4] = {{.sleep_ms = 150}, {.sleep_ms = 150}, {.sleep_ms = 150}, {.sleep_ms = 150}};
    const char *ids[] = {"p0", "p1", "p2", "p3"};
    for (int i = 0; i < 4; i++) {
        argus_rt_task_desc t = cpu(ids[i], NULL, 0, &b[i]);
        add(rt, &t);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(argus_rt_run(rt), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    /* Serial would be 0.6 s; four threads sleeping take about 0.15 s. */
    if (wall > 0.45)
        fail_msg("4 independent 150 ms tasks on 4 threads took %.3f s", wall);
    int pairs = 0;
    for (int i = 0; i < 4; i++)
        for (int k = i + 1; k < 4; k++)
            pairs += overlap(get(rt, ids[i]), get(rt, ids[k]));
    assert_true(pairs >= 3);
    argus_rt_free(rt);
    argus_ws_close(ws);
}

static void test_exclusive_classes(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("excl");
    argus_rt *rt = new_rt(ws, 4);
    body b[6];
    memset(b, 0, sizeof b);
    const char *ids[] = {"g0a", "g0b", "g0c", "g1a", "w0", "w1"};
    for (int i = 0; i < 4; i++) {
        b[i].sleep_ms = 60;
        argus_rt_task_desc t = cpu(ids[i], NULL, 0, &b[i]);
        t.excl[0] = i < 3 ? "gpu:0" : "gpu:1";
        add(rt, &t);
    }
    /* Two workers that both need CUPTI to themselves, both on device 0
     * (w0 names its class, w1 gets it from its device). */
    const char *argv[] = {"sh", "-c", "sleep 0.1; echo done > \"$1\"", "sh", "{out:out}",
                          NULL};
    for (int i = 4; i < 6; i++) {
        argus_rt_task_desc t = {.id = ids[i],
                                .kind = "collect",
                                .argv = argv,
                                .device = "0",
                                .outputs = OUT,
                                .noutputs = 1,
                                .config = ids[i]};
        t.excl[0] = "cupti-exclusive";
        t.excl[1] = i == 4 ? "gpu:0" : NULL;
        add(rt, &t);
    }
    assert_int_equal(argus_rt_run(rt), 0);
    argus_rt_status st[6];
    for (int i = 0; i < 6; i++)
        st[i] = get(rt, ids[i]);
    /* gpu:0 is held by g0a, g0b, g0c and w0: no two of them overlap. */
    int g0[] = {0, 1, 2, 4};
    for (int i = 0; i < 4; i++)
        for (int k = i + 1; k < 4; k++)
            if (overlap(st[g0[i]], st[g0[k]]))
                fail_msg("%s and %s share gpu:0 and overlapped", ids[g0[i]], ids[g0[k]]);
    assert_false(overlap(st[4], st[5]));
    /* w1 names no GPU class but is bound to device 0: it holds gpu:0. */
    for (int i = 0; i < 3; i++)
        if (overlap(st[5], st[i]))
            fail_msg("w1 (device 0) overlapped %s on gpu:0", ids[i]);
    /* Tasks of other classes did run beside them. */
    int beside = 0;
    for (int i = 0; i < 5; i++)
        if (i != 3)
            beside += overlap(st[3], st[i]);
    assert_true(beside >= 1);
    argus_rt_free(rt);
    argus_ws_close(ws);
}

/* A CPU task that runs a program on its input's path and stores the file
 * it wrote, as a compile would. */
static int compile_body(argus_rt_ctx *ctx, void *user)
{
    const char *outdir = user;
    char in[1024], out[1024], cmd[2600];
    int rc = argus_rt_ctx_input_path(ctx, "src", "out", in, sizeof in);
    if (rc != 0)
        return rc;
    snprintf(out, sizeof out, "%s/compiled.bin", outdir);
    snprintf(cmd, sizeof cmd, "tr a-z A-Z < '%s' > '%s'", in, out);
    if (system(cmd) != 0)
        return argus_rt_ctx_fail(ctx, "'%s' failed", cmd);
    rc = argus_rt_ctx_output_file(ctx, "out", out);
    unlink(out);
    return rc;
}

static int badref_body(argus_rt_ctx *ctx, void *user)
{
    (void)user;
    char in[1024];
    return argus_rt_ctx_input_path(ctx, "nope", "out", in, sizeof in);
}

static void test_cpu_program(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("prog");
    argus_rt *rt = new_rt(ws, 2);
    body ba = {0};
    argus_rt_task_desc t = cpu("src", NULL, 0, &ba);
    add(rt, &t);
    const char *deps[] = {"src"};
    argus_rt_task_desc c = {.id = "compile",
                            .kind = "transform",
                            .deps = deps,
                            .ndeps = 1,
                            .exec = compile_body,
                            .user = atu_base,
                            .outputs = OUT,
                            .noutputs = 1,
                            .config = "tr a-z A-Z, v1"};
    add(rt, &c);
    c.id = "badref";
    c.exec = badref_body;
    c.config = "badref";
    add(rt, &c);
    assert_int_equal(argus_rt_run(rt), ARGUS_RT_EFAILED);
    char want[ARGUS_HASH_HEX];
    argus_sha256_hex("SRC", 3, want);
    assert_int_equal(get(rt, "compile").state, ARGUS_RT_DONE);
    assert_string_equal(argus_rt_output(rt, "compile", "out"), want);
    char path[600];
    snprintf(path, sizeof path, "%s/compiled.bin", atu_base);
    assert_int_equal(access(path, F_OK), -1);
    /* A dependency it does not have is refused and named. */
    argus_rt_status st = get(rt, "badref");
    assert_int_equal(st.state, ARGUS_RT_FAILED);
    assert_non_null(strstr(st.reason, "output 'out' of task 'nope'"));
    argus_rt_free(rt);
    argus_ws_close(ws);
}

static void test_worker_io_and_device(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("io");
    argus_rt *rt = new_rt(ws, 2);
    body ba = {0};
    argus_rt_task_desc t = cpu("src", NULL, 0, &ba);
    add(rt, &t);
    const char *deps[] = {"src"};
    const char *argv[] = {"sh", "-c",
                          "tr a-z A-Z < \"$1\" > \"$2\"; printf %s \"$CUDA_VISIBLE_DEVICES\" > "
                          "\"$3\"",
                          "sh", "{in:src/out}", "{out:upper}", "{out:dev}", NULL};
    const char *outs[] = {"upper", "dev"};
    argus_ws_env env = {"NVIDIA H200", "580.159.04", "13.0"};
    argus_rt_task_desc w = {.id = "collect",
                            .kind = "collect",
                            .deps = deps,
                            .ndeps = 1,
                            .argv = argv,
                            .device = "3",
                            .outputs = outs,
                            .noutputs = 2,
                            .env = &env,
                            .timeout_s = 20};
    add(rt, &w);
    assert_int_equal(argus_rt_run(rt), 0);
    void *data;
    size_t len;
    char msg[256];
    assert_int_equal(argus_ws_get(ws, argus_rt_output(rt, "collect", "upper"), &data, &len,
                                  msg, sizeof msg),
                     0);
    assert_string_equal(data, "SRC");
    free(data);
    assert_int_equal(argus_ws_get(ws, argus_rt_output(rt, "collect", "dev"), &data, &len, msg,
                                  sizeof msg),
                     0);
    assert_string_equal(data, "3");
    free(data);
    /* The manifest binds the worker's outputs to its environment. */
    argus_rt_status st = get(rt, "collect");
    argus_ws_manifest *m = NULL;
    assert_int_equal(argus_ws_lookup(ws, st.key, &m, msg, sizeof msg), 0);
    assert_string_equal(m->driver, "580.159.04");
    assert_int_equal(m->ninputs, 1);
    assert_string_equal(m->inputs[0], argus_rt_output(rt, "src", "out"));
    argus_ws_manifest_free(m);
    argus_rt_free(rt);
    argus_ws_close(ws);
}

/* The graph of the failure tests: a good branch (ok -> ok2), a worker that
 * crashes (crash -> below_crash), one that hangs (hang -> below_hang), and
 * a synthesis over everything. */
typedef struct graph {
    body ok, ok2, below_crash, below_hang, all;
    char mark[512], pidfile[512];
    char crash_cmd[1200], hang_cmd[1200];
} graph;

static void build_failing(argus_rt *rt, graph *g)
{
    argus_rt_task_desc t = cpu("ok", NULL, 0, &g->ok);
    add(rt, &t);
    const char *d_ok[] = {"ok"};
    g->ok2.in_task[0] = "ok";
    t = cpu("ok2", d_ok, 1, &g->ok2);
    add(rt, &t);

    /* Crashes (SIGSEGV) until the mark file exists. */
    snprintf(g->crash_cmd, sizeof g->crash_cmd,
             "echo probing >&2; test -f '%s' || kill -SEGV $$; echo fine > \"$1\"", g->mark);
    const char *crash_argv[] = {"sh", "-c", g->crash_cmd, "sh", "{out:out}", NULL};
    argus_rt_task_desc c = {.id = "crash",
                            .kind = "collect",
                            .deps = d_ok,
                            .ndeps = 1,
                            .argv = crash_argv,
                            .device = "0",
                            .outputs = OUT,
                            .noutputs = 1,
                            .timeout_s = 20};
    add(rt, &c);
    const char *d_crash[] = {"crash"};
    g->below_crash.in_task[0] = "crash";
    t = cpu("below_crash", d_crash, 1, &g->below_crash);
    add(rt, &t);

    /* Hangs until the mark file exists, with a child in its process group
     * whose pid it leaves in pidfile. */
    snprintf(g->hang_cmd, sizeof g->hang_cmd,
             "test -f '%s' && { echo fine > \"$1\"; exit 0; }; sleep 30 & echo $! > '%s'; wait",
             g->mark, g->pidfile);
    const char *hang_argv[] = {"sh", "-c", g->hang_cmd, "sh", "{out:out}", NULL};
    argus_rt_task_desc h = {.id = "hang",
                            .kind = "collect",
                            .argv = hang_argv,
                            .device = "1",
                            .outputs = OUT,
                            .noutputs = 1,
                            .timeout_s = 0.5};
    add(rt, &h);
    const char *d_hang[] = {"hang"};
    t = cpu("below_hang", d_hang, 1, &g->below_hang);
    add(rt, &t);
    const char *d_all[] = {"ok2", "below_crash", "below_hang"};
    t = cpu("all", d_all, 3, &g->all);
    add(rt, &t);
}

static void test_failures_and_rerun(void **state)
{
    (void)state;
    graph g;
    memset(&g, 0, sizeof g);
    snprintf(g.mark, sizeof g.mark, "%s/fixed", atu_base);
    snprintf(g.pidfile, sizeof g.pidfile, "%s/hang.pid", atu_base);

    argus_ws *ws = atu_open_ws("fail");
    argus_rt *rt = new_rt(ws, 2);
    build_failing(rt, &g);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(argus_rt_run(rt), ARGUS_RT_EFAILED);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 10); /* the hang was cut at 0.5 s */

    argus_rt_status st = get(rt, "ok2");
    assert_int_equal(st.state, ARGUS_RT_DONE);
    st = get(rt, "crash");
    assert_int_equal(st.state, ARGUS_RT_FAILED);
    assert_int_equal(st.err, ARGUS_RT_EWORKER);
    assert_non_null(strstr(st.reason, "signal 11"));
    assert_non_null(strstr(st.reason, "probing")); /* its stderr is quoted */
    st = get(rt, "below_crash");
    assert_int_equal(st.state, ARGUS_RT_SKIPPED);
    assert_non_null(strstr(st.reason, "'crash'"));
    assert_int_equal(atomic_load(&g.below_crash.runs), 0);
    st = get(rt, "hang");
    assert_int_equal(st.state, ARGUS_RT_FAILED);
    assert_int_equal(st.err, ARGUS_RT_ETIMEOUT);
    assert_non_null(strstr(st.reason, "timeout of 0.500 s"));
    double ran = (double)(st.end_ns - st.start_ns) / 1e9;
    assert_true(ran >= 0.5 && ran < 5);
    st = get(rt, "below_hang");
    assert_int_equal(st.state, ARGUS_RT_SKIPPED);
    st = get(rt, "all");
    assert_int_equal(st.state, ARGUS_RT_SKIPPED);
    assert_int_equal(atomic_load(&g.all.runs), 0);
    argus_rt_free(rt);

    /* The hung worker's whole process group was killed: its sleep too. */
    FILE *f = fopen(g.pidfile, "r");
    assert_non_null(f);
    int pid = 0;
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    int gone = 0;
    for (int i = 0; i < 200 && !gone; i++) {
        gone = kill(pid, 0) != 0 && errno == ESRCH;
        if (!gone)
            sleep_ms(10);
    }
    assert_true(gone);

    /* Fixed; the same graph again on the same workspace: only the failed
     * branches run. */
    f = fopen(g.mark, "w");
    assert_non_null(f);
    fclose(f);
    argus_rt *rt2 = new_rt(ws, 2);
    build_failing(rt2, &g);
    assert_int_equal(argus_rt_run(rt2), 0);
    assert_int_equal(atomic_load(&g.ok.runs), 1);
    assert_int_equal(atomic_load(&g.ok2.runs), 1);
    assert_int_equal(get(rt2, "ok").state, ARGUS_RT_REUSED);
    assert_int_equal(get(rt2, "ok2").state, ARGUS_RT_REUSED);
    assert_int_equal(get(rt2, "ok2").runs, 0);
    assert_int_equal(get(rt2, "crash").state, ARGUS_RT_DONE);
    assert_int_equal(get(rt2, "crash").runs, 1);
    assert_int_equal(get(rt2, "hang").state, ARGUS_RT_DONE);
    assert_int_equal(atomic_load(&g.below_crash.runs), 1);
    assert_int_equal(atomic_load(&g.below_hang.runs), 1);
    assert_int_equal(atomic_load(&g.all.runs), 1);
    argus_rt_free(rt2);

    /* A third run has nothing left to do. */
    argus_rt *rt3 = new_rt(ws, 2);
    build_failing(rt3, &g);
    assert_int_equal(argus_rt_run(rt3), 0);
    for (size_t i = 0; i < argus_rt_count(rt3); i++) {
        argus_rt_get_at(rt3, i, &st);
        if (st.state != ARGUS_RT_REUSED)
            fail_msg("third run: task %s is %s, not reused", st.id,
                     argus_rt_state_name(st.state));
    }
    assert_int_equal(atomic_load(&g.all.runs), 1);
    argus_rt_free(rt3);
    argus_ws_close(ws);
}

/* A control task that discovers three asynchronous operations and adds a
 * probe per operation and a synthesis over the probes. */
typedef struct discover {
    atomic_int runs;
    body probe[3], synth;
    char ids[3][32];
} discover;

static int control_body(argus_rt_ctx *ctx, void *user)
{
    discover *d = user;
    atomic_fetch_add(&d->runs, 1);
    const char *self[] = {argus_rt_ctx_id(ctx)};
    const char *probes[3];
    for (int i = 0; i < 3; i++) {
        snprintf(d->ids[i], sizeof d->ids[i], "probe.op%d", i);
        probes[i] = d->ids[i];
        d->probe[i].in_task[0] = "discover";
        argus_rt_task_desc t = cpu(d->ids[i], self, 1, &d->probe[i]);
        t.kind = "collect";
        t.excl[0] = "gpu:0";
        int rc = argus_rt_ctx_add(ctx, &t);
        if (rc != 0)
            return rc;
    }
    d->synth.in_task[0] = probes[0];
    d->synth.in_task[1] = probes[1];
    d->synth.in_task[2] = probes[2];
    argus_rt_task_desc s = cpu("synth", probes, 3, &d->synth);
    int rc = argus_rt_ctx_add(ctx, &s);
    if (rc != 0)
        return rc;
    /* Adding one twice is refused and named. */
    if (argus_rt_ctx_add(ctx, &s) != ARGUS_RT_EDUP)
        return argus_rt_ctx_fail(ctx, "a duplicate task was accepted");
    sleep_ms(20); /* the added tasks must still wait for this one */
    return argus_rt_ctx_output(ctx, "out", "3 ops", 5);
}

static void test_dynamic_tasks(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("dyn");
    discover d;
    memset(&d, 0, sizeof d);
    for (int pass = 0; pass < 2; pass++) {
        argus_rt *rt = new_rt(ws, 3);
        argus_rt_task_desc c = {.id = "discover",
                                .kind = "control",
                                .exec = control_body,
                                .user = &d,
                                .flags = ARGUS_RT_ALWAYS,
                                .outputs = OUT,
                                .noutputs = 1};
        add(rt, &c);
        assert_int_equal(argus_rt_run(rt), 0);
        assert_int_equal(argus_rt_count(rt), 5);
        argus_rt_status cs = get(rt, "discover");
        assert_int_equal(cs.state, ARGUS_RT_DONE);
        for (int i = 0; i < 3; i++) {
            argus_rt_status ps = get(rt, d.ids[i]);
            if (pass == 0) {
                assert_int_equal(ps.state, ARGUS_RT_DONE);
                assert_true(ps.start_ns >= cs.end_ns);
            } else {
                /* The control task runs again to materialise its branches;
                 * what they made is found by key. */
                assert_int_equal(ps.state, ARGUS_RT_REUSED);
            }
            assert_int_equal(atomic_load(&d.probe[i].runs), 1);
        }
        assert_int_equal(atomic_load(&d.runs), pass + 1);
        void *data;
        size_t len;
        char msg[256];
        assert_int_equal(
            argus_ws_get(ws, argus_rt_output(rt, "synth", "out"), &data, &len, msg, sizeof msg),
            0);
        assert_string_equal(data, "synth(probe.op0(3 ops))(probe.op1(3 ops))(probe.op2(3 ops))");
        free(data);
        argus_rt_free(rt);
    }
    argus_ws_close(ws);
}

static int slow_body(argus_rt_ctx *ctx, void *user)
{
    (void)user;
    while (!argus_rt_ctx_expired(ctx))
        sleep_ms(5);
    return argus_rt_ctx_output(ctx, "out", "late", 4);
}

static int lazy_body(argus_rt_ctx *ctx, void *user)
{
    (void)ctx;
    (void)user;
    return 0;
}

struct find_ctx {
    const char *prefix;
    char *out;
    size_t *n;
};

static int find_obj(const char *id, uint64_t bytes, void *user)
{
    (void)bytes;
    struct find_ctx *f = user;
    if (strncmp(id, f->prefix, strlen(f->prefix)) == 0) {
        memcpy(f->out, id, ARGUS_HASH_HEX);
        (*f->n)++;
    }
    return 0;
}

static void test_task_failures(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("tf");
    argus_rt *rt = new_rt(ws, 2);
    argus_rt_task_desc slow = {.id = "slow",
                               .kind = "synthesize",
                               .exec = slow_body,
                               .outputs = OUT,
                               .noutputs = 1,
                               .timeout_s = 0.1};
    add(rt, &slow);
    argus_rt_task_desc lazy = {
        .id = "lazy", .kind = "synthesize", .exec = lazy_body, .outputs = OUT, .noutputs = 1};
    add(rt, &lazy);
    body bad = {.fail = 1};
    argus_rt_task_desc t = cpu("bad", NULL, 0, &bad);
    add(rt, &t);
    const char *argv[] = {"sh", "-c", "exit 0", NULL};
    argus_rt_task_desc w = {
        .id = "silent", .kind = "collect", .argv = argv, .outputs = OUT, .noutputs = 1};
    add(rt, &w);
    const char *argv2[] = {"sh", "-c", "echo 'no counters: ERR_NVGPUCTRPERM' >&2; exit 3", NULL};
    argus_rt_task_desc w2 = {.id = "perm", .kind = "collect", .argv = argv2};
    add(rt, &w2);
    const char *argv3[] = {"/nonexistent/argus-worker", NULL};
    argus_rt_task_desc w3 = {.id = "nobin", .kind = "collect", .argv = argv3};
    add(rt, &w3);
    assert_int_equal(argus_rt_run(rt), ARGUS_RT_EFAILED);

    argus_rt_status st = get(rt, "slow");
    assert_int_equal(st.err, ARGUS_RT_ETIMEOUT);
    assert_null(argus_rt_output(rt, "slow", "out"));
    st = get(rt, "lazy");
    assert_int_equal(st.err, ARGUS_RT_ENOOUTPUT);
    assert_non_null(strstr(st.reason, "'out'"));
    st = get(rt, "bad");
    assert_int_equal(st.err, ARGUS_RT_ETASK);
    assert_string_equal(st.reason, "the test told task bad to fail");
    st = get(rt, "silent");
    assert_int_equal(st.err, ARGUS_RT_ENOOUTPUT);
    assert_non_null(strstr(st.reason, "{out:out}"));
    st = get(rt, "perm");
    assert_int_equal(st.err, ARGUS_RT_EWORKER);
    assert_non_null(strstr(st.reason, "status 3"));
    assert_non_null(strstr(st.reason, "ERR_NVGPUCTRPERM"));
    /* Its whole log is kept as an object that the reason names. */
    const char *at = strstr(st.reason, "argus ws show ");
    assert_non_null(at);
    char logobj[ARGUS_HASH_HEX];
    size_t found = 0;
    char prefix[17];
    snprintf(prefix, sizeof prefix, "%.16s", at + 14);
    struct find_ctx fd = {prefix, logobj, &found};
    assert_int_equal(argus_ws_each(ws, ARGUS_WS_ENTRY_OBJECT, find_obj, &fd, NULL, 0), 0);
    assert_int_equal(found, 1);
    void *logdata;
    size_t loglen;
    assert_int_equal(argus_ws_get(ws, logobj, &logdata, &loglen, NULL, 0), 0);
    assert_string_equal(logdata, "no counters: ERR_NVGPUCTRPERM\n");
    free(logdata);
    st = get(rt, "nobin");
    assert_int_equal(st.state, ARGUS_RT_FAILED);
    assert_non_null(strstr(st.reason, "cannot execute '/nonexistent/argus-worker'"));
    /* Nothing failed was recorded: a lookup of its key finds nothing. */
    argus_ws_manifest *m = NULL;
    char msg[256];
    assert_int_equal(argus_ws_lookup(ws, get(rt, "slow").key, &m, msg, sizeof msg),
                     ARGUS_WS_ENOENT);
    argus_rt_print(rt, stderr);
    argus_rt_free(rt);
    argus_ws_close(ws);
}

/* Evidence of two program versions reaches a joining synthesis: it fails
 * with the reason, while one over a single version runs. */
static void test_join_refused(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("join");
    argus_rt_opts o = {.cpu_threads = 2, .progress = argus_rt_progress_print};
    char logp[512];
    snprintf(logp, sizeof logp, "%s/progress.log", atu_base);
    FILE *log = fopen(logp, "w");
    assert_non_null(log);
    o.progress_user = log;
    argus_rt *rt = NULL;
    assert_int_equal(argus_rt_new(ws, &o, &rt), 0);
    argus_ws_env env = {"NVIDIA H200", "580.159.04", "13.0"};
    body b[5];
    memset(b, 0, sizeof b);
    const char *ids[] = {"timing.v1", "pcsamp.v1", "pcsamp.v2"};
    const char *progs[] = {"v1", "v1", "v2"};
    for (int i = 0; i < 3; i++) {
        argus_rt_task_desc t = cpu(ids[i], NULL, 0, &b[i]);
        t.kind = "collect";
        t.program = progs[i];
        t.scope = "iter=4";
        t.env = &env;
        add(rt, &t);
    }
    const char *good[] = {"timing.v1", "pcsamp.v1"}, *mixed[] = {"timing.v1", "pcsamp.v2"};
    argus_rt_task_desc j = cpu("join.good", good, 2, &b[3]);
    j.flags = ARGUS_RT_JOIN;
    add(rt, &j);
    j = cpu("join.mixed", mixed, 2, &b[4]);
    j.flags = ARGUS_RT_JOIN;
    add(rt, &j);
    assert_int_equal(argus_rt_run(rt), ARGUS_RT_EFAILED);
    assert_int_equal(get(rt, "join.good").state, ARGUS_RT_DONE);
    argus_rt_status st = get(rt, "join.mixed");
    assert_int_equal(st.state, ARGUS_RT_FAILED);
    assert_int_equal(st.err, ARGUS_WS_EINCOMPAT);
    assert_non_null(strstr(st.reason, "different program versions"));
    assert_non_null(strstr(st.reason, "pcsamp.v2="));
    assert_int_equal(atomic_load(&b[4].runs), 0);
    argus_rt_free(rt);
    fclose(log);
    /* The progress lines name each task and the failure's reason. */
    log = fopen(logp, "r");
    assert_non_null(log);
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, log);
    fclose(log);
    text[n] = '\0';
    assert_non_null(strstr(text, "argus rt: join.good done ("));
    assert_non_null(strstr(text, "argus rt: join.mixed failed: inputs not joined"));
    argus_ws_close(ws);
}

/* A program that ignores SIGCHLD loses its workers' exit status: the
 * runtime says so instead of guessing success. */
static void test_sigchld_ignored(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("sigign");
    argus_rt *rt = new_rt(ws, 1);
    const char *argv[] = {"sh", "-c", "echo x > \"$1\"", "sh", "{out:out}", NULL};
    argus_rt_task_desc w = {
        .id = "w", .kind = "collect", .argv = argv, .outputs = OUT, .noutputs = 1};
    add(rt, &w);
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&ign.sa_mask);
    assert_int_equal(sigaction(SIGCHLD, &ign, &old), 0);
    int rc = argus_rt_run(rt);
    sigaction(SIGCHLD, &old, NULL);
    assert_int_equal(rc, ARGUS_RT_EFAILED);
    argus_rt_status st = get(rt, "w");
    assert_int_equal(st.err, ARGUS_RT_EWORKER);
    assert_non_null(strstr(st.reason, "SIG_IGN"));
    argus_rt_free(rt);
    argus_ws_close(ws);
}

static void test_bad_descriptions(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("bad");
    argus_rt *rt = new_rt(ws, 1);
    char msg[512];
    body b = {0};
    argus_rt_task_desc t = cpu("a", NULL, 0, &b);
    assert_int_equal(argus_rt_add(rt, &t, msg, sizeof msg), 0);
    assert_int_equal(argus_rt_add(rt, &t, msg, sizeof msg), ARGUS_RT_EDUP);
    assert_non_null(strstr(msg, "task a"));

    const char *ghost[] = {"zz"};
    t = cpu("b", ghost, 1, &b);
    assert_int_equal(argus_rt_add(rt, &t, msg, sizeof msg), ARGUS_RT_ENODEP);
    assert_non_null(strstr(msg, "deps[0] 'zz'"));

    const char *argv[] = {"true", NULL};
    t = cpu("c", NULL, 0, &b);
    t.argv = argv;
    assert_int_equal(argus_rt_add(rt, &t, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "exactly one of exec"));

    const char *argv2[] = {"cat", "{out:trace}", NULL};
    argus_rt_task_desc w = {.id = "w", .kind = "collect", .argv = argv2, .outputs = OUT,
                            .noutputs = 1};
    assert_int_equal(argus_rt_add(rt, &w, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "output 'trace'"));
    const char *argv3[] = {"cat", "{in:a/out}", NULL};
    w.argv = argv3;
    assert_int_equal(argus_rt_add(rt, &w, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "among its deps"));

    const char *badout[] = {"../escape"};
    t = cpu("d", NULL, 0, &b);
    t.outputs = badout;
    assert_int_equal(argus_rt_add(rt, &t, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "'../escape'"));
    t = cpu("", NULL, 0, &b);
    assert_int_equal(argus_rt_add(rt, &t, msg, sizeof msg), ARGUS_EINVAL);
    t = cpu("e", NULL, 0, &b);
    t.kind = NULL;
    assert_int_equal(argus_rt_add(rt, &t, msg, sizeof msg), ARGUS_EINVAL);
    assert_int_equal(argus_rt_count(rt), 1);
    assert_int_equal(argus_rt_run(rt), 0);
    argus_rt_free(rt);
    argus_ws_close(ws);
}

/* A worker's output refused by the task's check: the task fails with
 * ARGUS_RT_EOUTPUT and the reason, nothing is stored, the task below is
 * skipped, and the next run (the check now content) runs it again. */
static int check_calls;
static int check_no_bad(void *user, const char *output, const char *path, char *why,
                        size_t whylen)
{
    (void)user;
    check_calls++;
    FILE *f = fopen(path, "r");
    char text[64] = "";
    if (f != NULL) {
        if (fgets(text, sizeof text, f) == NULL)
            text[0] = '\0';
        fclose(f);
    }
    if (strncmp(text, "bad", 3) == 0) {
        snprintf(why, whylen, "output %s says bad", output);
        return -1;
    }
    return 0;
}

static void run_checked(argus_ws *ws, const char *word, argus_rt_state want, int *below_runs)
{
    argus_rt *rt = new_rt(ws, 1);
    /* The word is not in the argv template's key (it comes from the
     * environment), so both runs have one key. */
    setenv("ARGUS_TEST_WORD", word, 1);
    const char *argv[] = {"sh", "-c", "echo $ARGUS_TEST_WORD > \"$1\"", "sh", "{out:out}", NULL};
    argus_rt_task_desc w = {.id = "w", .kind = "collect", .argv = argv, .outputs = OUT,
                            .noutputs = 1, .check = check_no_bad, .timeout_s = 20};
    add(rt, &w);
    body b = {.in_task = {"w"}};
    const char *deps[] = {"w"};
    argus_rt_task_desc t = cpu("below", deps, 1, &b);
    add(rt, &t);
    argus_rt_run(rt);
    argus_rt_status st = get(rt, "w");
    assert_int_equal(st.state, want);
    if (want == ARGUS_RT_FAILED) {
        assert_int_equal(st.err, ARGUS_RT_EOUTPUT);
        assert_non_null(strstr(st.reason, "its output 'out' is refused: output out says bad"));
        assert_null(argus_rt_output(rt, "w", "out"));
        assert_int_equal(get(rt, "below").state, ARGUS_RT_SKIPPED);
    }
    *below_runs += atomic_load(&b.runs);
    argus_rt_free(rt);
}

static void test_output_check(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("check");
    int below = 0;
    check_calls = 0;
    run_checked(ws, "bad", ARGUS_RT_FAILED, &below);
    assert_int_equal(check_calls, 1);
    assert_int_equal(below, 0);
    run_checked(ws, "good", ARGUS_RT_DONE, &below);
    assert_int_equal(check_calls, 2);
    assert_int_equal(below, 1);
    run_checked(ws, "good", ARGUS_RT_REUSED, &below);
    assert_int_equal(check_calls, 2);
    unsetenv("ARGUS_TEST_WORD");
    argus_ws_close(ws);
}

/* More dependencies than the runtime once allowed (64): 300 producers,
 * each writing its number; a join over all of them, and one with
 * ARGUS_RT_PARTIAL, which runs although producer 7 failed, reads the 299
 * that are there and is told why the missing one is missing, while the
 * task without the flag is skipped; with producer 7 fixed, the next run
 * reruns it and the partial join (its key differs) and reuses the rest. */
#define MANY 300
typedef struct many {
    atomic_int runs;
    int fail_at;                /* the producer that fails, -1: none */
    atomic_int sum_runs;
    long sum;
    int missing, missing_said;
} many;
static many mg;

static int producer_body(argus_rt_ctx *ctx, void *user)
{
    int i = (int)(intptr_t)user;
    atomic_fetch_add(&mg.runs, 1);
    if (i == mg.fail_at)
        return argus_rt_ctx_fail(ctx, "producer %d told to fail", i);
    char out[16];
    int n = snprintf(out, sizeof out, "%d", i);
    return argus_rt_ctx_output(ctx, "out", out, (size_t)n);
}

static int sum_body(argus_rt_ctx *ctx, void *user)
{
    (void)user;
    atomic_fetch_add(&mg.sum_runs, 1);
    long sum = 0;
    int missing = 0, said = 0;
    for (int i = 0; i < MANY; i++) {
        char id[16];
        snprintf(id, sizeof id, "p%d", i);
        if (argus_rt_ctx_input_hash(ctx, id, "out") == NULL) {
            argus_rt_status st;
            missing++;
            said += argus_rt_ctx_dep(ctx, id, &st) == 0 && st.state == ARGUS_RT_FAILED &&
                    strstr(st.reason, "told to fail") != NULL;
            continue;
        }
        void *data;
        size_t len;
        if (argus_rt_ctx_input(ctx, id, "out", &data, &len) != 0)
            return ARGUS_RT_ETASK;
        sum += strtol(data, NULL, 10);
        free(data);
    }
    mg.sum = sum;
    mg.missing = missing;
    mg.missing_said = said;
    char out[32];
    int n = snprintf(out, sizeof out, "%ld/%d", sum, missing);
    return argus_rt_ctx_output(ctx, "out", out, (size_t)n);
}

static void run_many(argus_ws *ws, int fail_at)
{
    argus_rt *rt = new_rt(ws, 2);
    mg.fail_at = fail_at;
    static char ids[MANY][16];
    static const char *deps[MANY];
    for (int i = 0; i < MANY; i++) {
        snprintf(ids[i], sizeof ids[i], "p%d", i);
        deps[i] = ids[i];
        argus_rt_task_desc t = {.id = ids[i], .kind = "collect", .exec = producer_body,
                                .user = (void *)(intptr_t)i, .outputs = OUT, .noutputs = 1,
                                .config = ids[i], .program = "v1", .scope = "iter=4"};
        add(rt, &t);
    }
    argus_rt_task_desc j = {.id = "sum", .kind = "synthesize", .deps = deps, .ndeps = MANY,
                            .exec = sum_body, .outputs = OUT, .noutputs = 1,
                            .config = "sum", .flags = ARGUS_RT_JOIN | ARGUS_RT_PARTIAL};
    add(rt, &j);
    j.id = "strict";
    j.config = "strict";
    j.flags = ARGUS_RT_JOIN;
    add(rt, &j);
    int rc = argus_rt_run(rt);
    argus_rt_status st = get(rt, "strict");
    if (fail_at >= 0) {
        assert_int_equal(rc, ARGUS_RT_EFAILED);
        assert_int_equal(st.state, ARGUS_RT_SKIPPED);
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(st.state, ARGUS_RT_DONE);
    }
    assert_int_equal(get(rt, "sum").state, ARGUS_RT_DONE);
    argus_rt_free(rt);
}

static void test_many_deps_partial(void **state)
{
    (void)state;
    argus_ws *ws = atu_open_ws("many");
    memset(&mg, 0, sizeof mg);
    run_many(ws, 7);
    assert_int_equal(atomic_load(&mg.runs), MANY);
    assert_int_equal(atomic_load(&mg.sum_runs), 1);
    assert_int_equal(mg.sum, MANY * (MANY - 1) / 2 - 7);
    assert_int_equal(mg.missing, 1);
    assert_int_equal(mg.missing_said, 1);
    /* Fixed: producer 7 and the partial join run again, nothing else of
     * the producers; the strict join runs for the first time. */
    run_many(ws, -1);
    assert_int_equal(atomic_load(&mg.runs), MANY + 1);
    assert_int_equal(atomic_load(&mg.sum_runs), 3);
    assert_int_equal(mg.sum, MANY * (MANY - 1) / 2);
    assert_int_equal(mg.missing, 0);
    argus_ws_close(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_inputs),
        cmocka_unit_test(test_parallel_cpu),
        cmocka_unit_test(test_exclusive_classes),
        cmocka_unit_test(test_worker_io_and_device),
        cmocka_unit_test(test_cpu_program),
        cmocka_unit_test(test_failures_and_rerun),
        cmocka_unit_test(test_dynamic_tasks),
        cmocka_unit_test(test_task_failures),
        cmocka_unit_test(test_join_refused),
        cmocka_unit_test(test_sigchld_ignored),
        cmocka_unit_test(test_bad_descriptions),
        cmocka_unit_test(test_many_deps_partial),
        cmocka_unit_test(test_output_check),
    };
    return cmocka_run_group_tests(tests, setup, atu_teardown);
}
