/*
 * libmosaic.so preloaded over the fake driver, reached exactly as the CUDA
 * runtime reaches the driver: dlopen("libcuda.so.1"), dlsym of
 * cuGetProcAddress_v2, the self-lookup of cuGetProcAddress, then every
 * entry point through it at several cudaVersions and both stream flags.
 * The shim's counts must equal what the fake driver executed, the way
 * they must equal CUPTI's kernel records on a GPU.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shim_test_util.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
                              unsigned, unsigned, unsigned, unsigned, CUstream,
                              void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **,
                                 void **);
typedef CUresult (*launch_coop_fn)(CUfunction, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, unsigned, unsigned,
                                   CUstream, void **);

static struct shim_env env;
static const int versions[] = {4000, 7000, 11060, 12000, 13000};
static const cuuint64_t flags[] = {CU_GET_PROC_ADDRESS_DEFAULT,
                                   CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};

static int setup(void **state)
{
    (void)state;
    shim_env_open(&env);
    return 0;
}

static void runtime_finds_the_shim(void **state)
{
    getproc_v1_fn v1;
    void *p;

    (void)state;
    /* dlsym on the driver's own handle is answered with the wrapper. */
    assert_true(addr_in((void *)env.getproc, "libmosaic"));
    /* The runtime's self-lookup gets the wrapper in both ABI forms. */
    p = shim_proc(&env, "cuGetProcAddress", 12000, 0);
    assert_true(addr_in(p, "libmosaic"));
    assert_ptr_equal(p, (void *)env.getproc);
    v1 = (getproc_v1_fn)shim_proc(&env, "cuGetProcAddress", 11060, 0);
    assert_true(addr_in((void *)v1, "libmosaic"));
    assert_ptr_not_equal((void *)v1, (void *)env.getproc);
    p = NULL;
    assert_int_equal(v1("cuLaunchKernel", &p, 11060, 0), CUDA_SUCCESS);
    assert_true(addr_in(p, "libmosaic"));
    /* dlsym of the plain exported names, as some libraries do. */
    assert_true(addr_in(dlsym(env.cuda, "cuLaunchKernel"), "libmosaic"));
    assert_true(addr_in(dlsym(env.cuda, "cuLaunchKernel_ptsz"), "libmosaic"));
}

static void untouched_symbols_pass_through(void **state)
{
    void *p = (void *)1;
    CUdriverProcAddressQueryResult st;

    (void)state;
    /* not hooked: the driver's own function */
    p = shim_proc(&env, "cuCtxGetDevice", 12000, 0);
    assert_true(addr_in(p, "libcuda"));
    assert_true(addr_in(dlsym(env.cuda, "cuStreamCreate"), "libcuda"));
    assert_true(addr_in(dlsym(env.cuda, "fake_tally"), "libcuda"));
    /* too new for the asked version: the driver's answer, unchanged */
    p = (void *)1;
    env.getproc("cuLaunchKernelEx", &p, 11000, 0, &st);
    assert_null(p);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    /* unknown: not found, and no crash */
    p = (void *)1;
    assert_int_equal(env.getproc("cuNoSuchEntryPoint", &p, 13000, 0, &st),
                     CUDA_ERROR_NOT_FOUND);
    assert_null(p);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    assert_int_equal(env.getproc("cuLaunchKernel", NULL, 13000, 0, NULL),
                     env.getproc("cuLaunchKernel", NULL, 13000, 0, NULL));
}

/* Launches one kernel through every entry point at every version and flag
 * the runtime uses, and checks each entry point's count against the fake. */
static void every_launch_path_is_counted(void **state)
{
    struct fake_tally t0, t1;
    CUfunction f = env.function_create("fn_paths", 40, 1024);
    cJSON *s0 = shim_stats(&env), *s1;
    static const char *entries[] = {
        "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
        "cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel",
        "cuLaunchCooperativeKernel_ptsz"};
    char path[128];

    (void)state;
    env.tally(&t0);
    for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
        for (size_t fl = 0; fl < 3; fl++) {
            launch_fn lk = (launch_fn)shim_proc(&env, "cuLaunchKernel",
                                                versions[v], flags[fl]);
            launch_coop_fn lc;
            assert_true(addr_in((void *)lk, "libmosaic"));
            assert_int_equal(lk(f, 2, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL),
                             CUDA_SUCCESS);
            if (versions[v] >= 9000) {
                lc = (launch_coop_fn)shim_proc(&env, "cuLaunchCooperativeKernel",
                                               versions[v], flags[fl]);
                assert_int_equal(lc(f, 2, 1, 1, 64, 1, 1, 0, NULL, NULL),
                                 CUDA_SUCCESS);
            }
            if (versions[v] >= 11060) {
                CUlaunchConfig cfg = {.gridDimX = 4, .gridDimY = 1, .gridDimZ = 1,
                                      .blockDimX = 256, .blockDimY = 1,
                                      .blockDimZ = 1};
                launch_ex_fn le = (launch_ex_fn)shim_proc(
                    &env, "cuLaunchKernelEx", versions[v], flags[fl]);
                assert_int_equal(le(&cfg, f, NULL, NULL), CUDA_SUCCESS);
            }
        }
    }
    env.tally(&t1);
    s1 = shim_stats(&env);
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof(path), "launches.%s", entries[i]);
        assert_int_equal(jnum(s1, path) - jnum(s0, path),
                         (long long)(t1.per_entry[i] - t0.per_entry[i]));
    }
    /* both plain and per-thread variants were really exercised */
    assert_true(t1.per_entry[FAKE_cuLaunchKernel_ptsz] >
                t0.per_entry[FAKE_cuLaunchKernel_ptsz]);
    assert_true(t1.per_entry[FAKE_cuLaunchKernelEx] >
                t0.per_entry[FAKE_cuLaunchKernelEx]);
    assert_int_equal(jnum(s1, "launches_total") - jnum(s0, "launches_total"),
                     (long long)(t1.direct_executed - t0.direct_executed));
    assert_int_equal(jnum(s1, "kernels.fn_paths"),
                     (long long)(t1.direct_executed - t0.direct_executed));
    cJSON_Delete(s0);
    cJSON_Delete(s1);
}

static void failed_launch_is_an_error_not_a_launch(void **state)
{
    CUfunction f = env.function_create("fn_bad", 32, 0);
    launch_fn lk = (launch_fn)shim_proc(&env, "cuLaunchKernel", 12000, 0);
    cJSON *s0 = shim_stats(&env), *s1;

    (void)state;
    assert_int_equal(lk(f, 0, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(lk(f, 1, 1, 1, 2048, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    s1 = shim_stats(&env);
    assert_int_equal(jnum(s1, "launch_errors") - jnum(s0, "launch_errors"), 2);
    assert_int_equal(jnum(s1, "launches_total"), jnum(s0, "launches_total"));
    cJSON_Delete(s0);
    cJSON_Delete(s1);
}

/* Whether buf is well-formed UTF-8 (no stray continuation byte, no
 * truncated, overlong or surrogate sequence, nothing above U+10FFFF). */
static int valid_utf8(const unsigned char *p)
{
    while (*p) {
        unsigned c = *p, n, cp;
        if (c < 0x80) {
            p++;
            continue;
        }
        n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
        if (n == 0 || c > 0xf4)
            return 0;
        cp = c & (0x3f >> n);
        for (unsigned i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i] & 0x3f);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
            (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        p += n + 1;
    }
    return 1;
}

/* A kernel name that is not UTF-8 (a driver returns bytes) still gives a
 * stats document that is valid UTF-8 JSON: each bad byte becomes U+FFFD. */
static void non_utf8_kernel_names_keep_stats_valid(void **state)
{
    CUfunction f = env.function_create("bad\xff\xfe_\xc0\xaf_\xed\xa0\x80k", 32, 0);
    launch_fn lk = (launch_fn)shim_proc(&env, "cuLaunchKernel", 12000, 0);
    size_t len = 1 << 20;
    char *buf = malloc(len);
    cJSON *j;

    (void)state;
    assert_non_null(buf);
    assert_int_equal(lk(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    assert_true(env.stats_json(buf, len) > 0);
    assert_true(valid_utf8((const unsigned char *)buf));
    j = cJSON_Parse(buf);
    assert_non_null(j);
    /* 2 + 2 + 3 bytes of ill-formed sequences, one U+FFFD each */
    assert_int_equal(jnum(j, "kernels.bad\xef\xbf\xbd\xef\xbf\xbd_"
                             "\xef\xbf\xbd\xef\xbf\xbd_"
                             "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdk"),
                     1);
    cJSON_Delete(j);
    free(buf);
}

static void kernel_identity_for_functions_and_kernels(void **state)
{
    typedef CUresult (*lib_load_fn)(CUlibrary *, const void *, CUjit_option *,
                                    void **, unsigned, CUlibraryOption *,
                                    void **, unsigned);
    typedef CUresult (*lib_get_fn)(CUkernel *, CUlibrary, const char *);
    lib_load_fn load = (lib_load_fn)shim_proc(&env, "cuLibraryLoadData", 12000, 0);
    lib_get_fn get = (lib_get_fn)shim_proc(&env, "cuLibraryGetKernel", 12000, 0);
    launch_fn lk = (launch_fn)shim_proc(&env, "cuLaunchKernel", 12000, 0);
    CUlibrary lib;
    CUkernel ka, unseen;
    CUfunction fa = env.function_create("fn_identity", 64, 4096);
    cJSON *s;

    (void)state;
    assert_true(addr_in((void *)get, "libmosaic"));
    assert_int_equal(load(&lib, "lib_kernel_a;lib_kernel_b", NULL, NULL, 0, NULL,
                          NULL, 0),
                     CUDA_SUCCESS);
    assert_int_equal(get(&ka, lib, "lib_kernel_a"), CUDA_SUCCESS);
    /* a CUkernel the shim never saw created: found by falling back */
    unseen = env.kernel_create("kernel_unseen", 16, 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(lk((CUfunction)ka, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL),
                         CUDA_SUCCESS);
        assert_int_equal(lk(fa, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL),
                         CUDA_SUCCESS);
    }
    assert_int_equal(lk((CUfunction)unseen, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_SUCCESS);
    s = shim_stats(&env);
    assert_int_equal(jnum(s, "kernels.lib_kernel_a"), 3);
    assert_int_equal(jnum(s, "kernels.fn_identity"), 3);
    assert_int_equal(jnum(s, "kernels.kernel_unseen"), 1);
    assert_int_equal(jnum(s, "kernels.lib_kernel_b"), -1); /* never launched */
    assert_int_equal(jnum(s, "errors"), 0);
    cJSON_Delete(s);
}

static const cJSON *info_of(const cJSON *stats, const char *name)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, cJSON_GetObjectItem(stats, "kernel_info"))
        if (strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name) == 0)
            return it;
    return NULL;
}

/* Each kernel's resources and the launch configurations it ran with (the
 * profile key: name, grid, block, dynamic shared memory). */
static void launch_configs_are_keyed(void **state)
{
    launch_fn lk = (launch_fn)shim_proc(&env, "cuLaunchKernel", 12000, 0);
    CUfunction f = env.function_create("fn_configs", 72, 2048);
    const cJSON *info, *cfg;
    cJSON *s;

    (void)state;
    for (unsigned g = 1; g <= 6; g++)
        for (unsigned i = 0; i < g; i++)
            assert_int_equal(lk(f, g, 2, 1, 128, 1, 1, 512 * g, NULL, NULL, NULL),
                             CUDA_SUCCESS);
    s = shim_stats(&env);
    info = info_of(s, "fn_configs");
    assert_non_null(info);
    assert_int_equal(jnum(info, "regs"), 72);
    assert_int_equal(jnum(info, "static_smem"), 2048);
    assert_string_equal(cJSON_GetObjectItem(info, "kind")->valuestring, "CUfunction");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(info, "configs")), 4);
    cfg = cJSON_GetArrayItem(cJSON_GetObjectItem(info, "configs"), 2);
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "grid"), 0)->valueint, 3);
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "grid"), 1)->valueint, 2);
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "block"), 0)->valueint, 128);
    assert_int_equal(jnum(cfg, "dyn_smem"), 1536);
    assert_int_equal(jnum(cfg, "launches"), 3);
    /* configurations past the fourth are summed */
    assert_int_equal(jnum(info, "other_config_launches"), 5 + 6);
    assert_int_equal(jnum(s, "kernels.fn_configs"), 21);
    cJSON_Delete(s);
}

struct thread_arg {
    CUfunction f;
    launch_fn lk;
    launch_ex_fn le;
    int n;
};

static void *launcher(void *p)
{
    struct thread_arg *a = p;
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                          .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1};

    for (int i = 0; i < a->n; i++) {
        if (i % 3 == 0)
            a->le(&cfg, a->f, NULL, NULL);
        else
            a->lk(a->f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    }
    return NULL;
}

static void concurrent_launches_are_all_counted(void **state)
{
    enum { THREADS = 8, N = 20000 };
    pthread_t t[THREADS];
    struct thread_arg a[THREADS];
    struct fake_tally t0, t1;
    cJSON *s0, *s1;

    (void)state;
    s0 = shim_stats(&env);
    env.tally(&t0);
    for (int i = 0; i < THREADS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "fn_thread_%d", i % 4);
        /* each thread resolves its kernels itself, racing on the cache */
        a[i].f = env.function_create(name, 32, 0);
        a[i].lk = (launch_fn)shim_proc(&env, "cuLaunchKernel", 12000,
                                       i % 2 ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                             : 0);
        a[i].le = (launch_ex_fn)shim_proc(&env, "cuLaunchKernelEx", 12000, 0);
        a[i].n = N;
        pthread_create(&t[i], NULL, launcher, &a[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    env.tally(&t1);
    s1 = shim_stats(&env);
    assert_int_equal(t1.direct_executed - t0.direct_executed, THREADS * N);
    assert_int_equal(jnum(s1, "launches_total") - jnum(s0, "launches_total"),
                     THREADS * N);
    for (int k = 0; k < 4; k++) {
        char path[64];
        snprintf(path, sizeof(path), "kernels.fn_thread_%d", k);
        assert_int_equal(jnum(s1, path), 2 * N);
    }
    cJSON_Delete(s0);
    cJSON_Delete(s1);
}

typedef CUresult (*stream_create_fn)(CUstream *, unsigned int);
typedef CUresult (*begin_v2_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*end_fn)(CUstream, CUgraph *);
typedef CUresult (*inst_v2_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *,
                               size_t);
typedef CUresult (*inst_flags_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*graph_create_fn)(CUgraph *, unsigned int);
typedef CUresult (*add_kernel_fn)(CUgraphNode *, CUgraph, const CUgraphNode *,
                                  size_t, const CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*add_child_fn)(CUgraphNode *, CUgraph, const CUgraphNode *,
                                 size_t, CUgraph);
typedef CUresult (*update_v2_fn)(CUgraphExec, CUgraph,
                                 CUgraphExecUpdateResultInfo *);
typedef CUresult (*exec_destroy_fn)(CUgraphExec);
typedef CUresult (*graph_destroy_fn)(CUgraph);
typedef CUresult (*stream_destroy_fn)(CUstream);

static void destroy_graphs(CUgraph *g, int n)
{
    graph_destroy_fn gd = (graph_destroy_fn)shim_proc(&env, "cuGraphDestroy", 12000, 0);

    for (int i = 0; i < n; i++)
        assert_int_equal(gd(g[i]), CUDA_SUCCESS);
}

/* Stream capture records launches instead of executing them; the graph's
 * launches then execute its kernels, each counted once per replay. */
static void capture_then_replay(void **state)
{
    stream_create_fn mk = (stream_create_fn)shim_proc(&env, "cuStreamCreate", 12000, 0);
    begin_v2_fn begin = (begin_v2_fn)shim_proc(&env, "cuStreamBeginCapture", 12000, 0);
    end_fn end = (end_fn)shim_proc(&env, "cuStreamEndCapture", 12000, 0);
    inst_v2_fn inst = (inst_v2_fn)shim_proc(&env, "cuGraphInstantiate", 12000, 0);
    graph_launch_fn gl = (graph_launch_fn)shim_proc(&env, "cuGraphLaunch", 12000, 0);
    launch_fn lk = (launch_fn)shim_proc(&env, "cuLaunchKernel", 12000, 0);
    CUfunction f1 = env.function_create("cap_a", 32, 0);
    CUfunction f2 = env.function_create("cap_b", 32, 0);
    CUfunction f3 = env.function_create("cap_other_stream", 32, 0);
    CUstream cs, other;
    CUgraph g;
    CUgraphExec x;
    struct fake_tally t0, t1;
    cJSON *s0, *s1;

    (void)state;
    assert_true(addr_in((void *)begin, "libmosaic"));
    assert_true(addr_in((void *)inst, "libmosaic"));
    assert_int_equal(mk(&cs, 0), CUDA_SUCCESS);
    assert_int_equal(mk(&other, 0), CUDA_SUCCESS);
    s0 = shim_stats(&env);
    env.tally(&t0);
    assert_int_equal(begin(cs, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    assert_int_equal(lk(f1, 1, 1, 1, 32, 1, 1, 0, cs, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(lk(f2, 1, 1, 1, 32, 1, 1, 0, cs, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(lk(f2, 1, 1, 1, 32, 1, 1, 0, cs, NULL, NULL), CUDA_SUCCESS);
    /* another stream keeps executing while one captures */
    assert_int_equal(lk(f3, 1, 1, 1, 32, 1, 1, 0, other, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(end(cs, &g), CUDA_SUCCESS);
    assert_int_equal(inst(&x, g, NULL, NULL, 0), CUDA_SUCCESS);
    for (int i = 0; i < 4; i++)
        assert_int_equal(gl(x, other), CUDA_SUCCESS);
    env.tally(&t1);
    s1 = shim_stats(&env);
    assert_int_equal(t1.captured - t0.captured, 3);
    assert_int_equal(jnum(s1, "captured_launches") - jnum(s0, "captured_launches"), 3);
    assert_int_equal(jnum(s1, "launches_total") - jnum(s0, "launches_total"),
                     (long long)(t1.direct_executed - t0.direct_executed));
    assert_int_equal(jnum(s1, "kernels.cap_other_stream"), 1);
    assert_int_equal(jnum(s1, "kernels.cap_a"), -1);
    assert_int_equal(jnum(s1, "captured_kernels.cap_b"), 2);
    assert_int_equal(jnum(s1, "graph_launches") - jnum(s0, "graph_launches"), 4);
    assert_int_equal(jnum(s1, "graph_kernel_launches") - jnum(s0, "graph_kernel_launches"),
                     (long long)(t1.graph_kernels_executed - t0.graph_kernels_executed));
    assert_int_equal(jnum(s1, "graph_kernels.cap_a"), 4);
    assert_int_equal(jnum(s1, "graph_kernels.cap_b"), 8);
    assert_int_equal(((exec_destroy_fn)shim_proc(&env, "cuGraphExecDestroy", 12000, 0))(x),
                     CUDA_SUCCESS);
    destroy_graphs(&g, 1);
    assert_int_equal(((stream_destroy_fn)shim_proc(&env, "cuStreamDestroy", 12000, 0))(cs),
                     CUDA_SUCCESS);
    assert_int_equal(((stream_destroy_fn)shim_proc(&env, "cuStreamDestroy", 12000, 0))(other),
                     CUDA_SUCCESS);
    cJSON_Delete(s0);
    cJSON_Delete(s1);
}

/* An explicitly built graph with a child graph; an update swaps its
 * kernels; destroying the exec keeps what it ran. */
static void graph_update_and_destroy(void **state)
{
    graph_create_fn gc = (graph_create_fn)shim_proc(&env, "cuGraphCreate", 12000, 0);
    add_kernel_fn ak = (add_kernel_fn)shim_proc(&env, "cuGraphAddKernelNode", 12000, 0);
    add_child_fn ac = (add_child_fn)shim_proc(&env, "cuGraphAddChildGraphNode", 12000, 0);
    inst_flags_fn inst = (inst_flags_fn)shim_proc(&env, "cuGraphInstantiateWithFlags", 12000, 0);
    graph_launch_fn gl = (graph_launch_fn)shim_proc(
        &env, "cuGraphLaunch", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    update_v2_fn up = (update_v2_fn)shim_proc(&env, "cuGraphExecUpdate", 12000, 0);
    exec_destroy_fn destroy = (exec_destroy_fn)shim_proc(&env, "cuGraphExecDestroy", 12000, 0);
    CUgraph g1, g2, child1, child2;
    CUgraphNode n;
    CUgraphExec x;
    CUgraphExecUpdateResultInfo info;
    CUDA_KERNEL_NODE_PARAMS p = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                 .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1};
    struct fake_tally t0, t1;
    cJSON *s0, *s1;

    (void)state;
    assert_true(addr_in((void *)gl, "libmosaic"));
    s0 = shim_stats(&env);
    env.tally(&t0);
    /* g1: k_top, child1 { k_child } ; g2 same shape with other kernels,
     * the top one a CUkernel */
    assert_int_equal(gc(&g1, 0), CUDA_SUCCESS);
    assert_int_equal(gc(&child1, 0), CUDA_SUCCESS);
    p.func = env.function_create("g_top", 32, 0);
    assert_int_equal(ak(&n, g1, NULL, 0, &p), CUDA_SUCCESS);
    p.func = env.function_create("g_child", 32, 0);
    assert_int_equal(ak(&n, child1, NULL, 0, &p), CUDA_SUCCESS);
    assert_int_equal(ac(&n, g1, NULL, 0, child1), CUDA_SUCCESS);
    assert_int_equal(gc(&g2, 0), CUDA_SUCCESS);
    assert_int_equal(gc(&child2, 0), CUDA_SUCCESS);
    p.func = NULL;
    p.kern = env.kernel_create("g2_top", 32, 0);
    assert_int_equal(ak(&n, g2, NULL, 0, &p), CUDA_SUCCESS);
    p.kern = NULL;
    p.func = env.function_create("g2_child", 32, 0);
    assert_int_equal(ak(&n, child2, NULL, 0, &p), CUDA_SUCCESS);
    assert_int_equal(ac(&n, g2, NULL, 0, child2), CUDA_SUCCESS);

    assert_int_equal(inst(&x, g1, 0), CUDA_SUCCESS);
    for (int i = 0; i < 2; i++)
        assert_int_equal(gl(x, NULL), CUDA_SUCCESS);
    assert_int_equal(up(x, g2, &info), CUDA_SUCCESS);
    for (int i = 0; i < 3; i++)
        assert_int_equal(gl(x, NULL), CUDA_SUCCESS);
    assert_int_equal(destroy(x), CUDA_SUCCESS);
    env.tally(&t1);
    s1 = shim_stats(&env);
    assert_int_equal(t1.graph_kernels_executed - t0.graph_kernels_executed, 10);
    assert_int_equal(jnum(s1, "graph_kernel_launches") - jnum(s0, "graph_kernel_launches"), 10);
    assert_int_equal(jnum(s1, "graph_launches_by_entry.cuGraphLaunch_ptsz") -
                         jnum(s0, "graph_launches_by_entry.cuGraphLaunch_ptsz"),
                     5);
    assert_int_equal(jnum(s1, "graph_kernels.g_top"), 2);
    assert_int_equal(jnum(s1, "graph_kernels.g_child"), 2);
    assert_int_equal(jnum(s1, "graph_kernels.g2_top"), 3);
    assert_int_equal(jnum(s1, "graph_kernels.g2_child"), 3);
    assert_int_equal(jnum(s1, "graph_launches_unknown"), jnum(s0, "graph_launches_unknown"));
    destroy_graphs((CUgraph[]){g1, g2, child1, child2}, 4);
    cJSON_Delete(s0);
    cJSON_Delete(s1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runtime_finds_the_shim),
        cmocka_unit_test(untouched_symbols_pass_through),
        cmocka_unit_test(every_launch_path_is_counted),
        cmocka_unit_test(failed_launch_is_an_error_not_a_launch),
        cmocka_unit_test(non_utf8_kernel_names_keep_stats_valid),
        cmocka_unit_test(kernel_identity_for_functions_and_kernels),
        cmocka_unit_test(launch_configs_are_keyed),
        cmocka_unit_test(concurrent_launches_are_all_counted),
        cmocka_unit_test(capture_then_replay),
        cmocka_unit_test(graph_update_and_destroy),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
