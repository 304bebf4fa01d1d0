/*
 * Contract test of the fake driver (libcuda.so.1) on its own. The fake is
 * reached only through dlopen + dlsym, as the CUDA runtime reaches the real
 * driver; LD_LIBRARY_PATH points at the fake's build directory.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#define __CUDA_API_VERSION_INTERNAL 1 /* every ABI variant by its own name */
#include <cuda.h>

#include "fake_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static void *lib;

static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL)
        fail_msg("libcuda.so.1 does not export %s", name);
    return p;
}

/* The fake's function of that exact ABI name, with cuda.h's type. */
#define F(name) ((__typeof__(&name))sym(#name))

/*
 * Decoys: exported by this executable (ENABLE_EXPORTS), they come first in
 * the global scope, as the LD_PRELOADed shim does. The fake must still hand
 * out its own functions from cuGetProcAddress.
 */
__attribute__((visibility("default"))) CUresult
cuGraphLaunch(CUgraphExec hGraph, CUstream hStream)
{
    (void)hGraph;
    (void)hStream;
    return CUDA_ERROR_UNKNOWN;
}

__attribute__((visibility("default"))) CUresult
cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    (void)hStream;
    (void)mode;
    return CUDA_ERROR_UNKNOWN;
}

static struct fake_tally tally(void)
{
    struct fake_tally t;
    ((fake_tally_fn)sym("fake_tally"))(&t);
    return t;
}

static CUfunction mkfunc(const char *name, int regs, int smem)
{
    return ((fake_function_create_fn)sym("fake_function_create"))(name, regs,
                                                                   smem);
}

static CUkernel mkkern(const char *name, int regs, int smem)
{
    return ((fake_kernel_create_fn)sym("fake_kernel_create"))(name, regs,
                                                               smem);
}

static CUresult launch(CUfunction f, CUstream s)
{
    return F(cuLaunchKernel)(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
}

static CUstream mkstream(void)
{
    CUstream s;
    assert_int_equal(F(cuStreamCreate)(&s, 0), CUDA_SUCCESS);
    return s;
}

static size_t node_count(CUgraph g)
{
    size_t n = 0;
    assert_int_equal(F(cuGraphGetNodes)(g, NULL, &n), CUDA_SUCCESS);
    return n;
}

static CUgraphNode node_at(CUgraph g, size_t i)
{
    CUgraphNode nodes[16];
    size_t n = 16;
    assert_int_equal(F(cuGraphGetNodes)(g, nodes, &n), CUDA_SUCCESS);
    assert_true(i < n);
    return nodes[i];
}

static int group_setup(void **state)
{
    (void)state;
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL || dlsym(lib, "fake_tally") == NULL)
        return -1; /* not found, or the real driver came first */
    return F(cuInit)(0) == CUDA_SUCCESS ? 0 : -1;
}

static int reset(void **state)
{
    (void)state;
    ((fake_reset_fn)sym("fake_reset"))();
    return 0;
}

/* ---------------------------------------------------------------------- */

#define PTDS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define LEGACY CU_GET_PROC_ADDRESS_LEGACY_STREAM

static void test_getproc(void **state)
{
    (void)state;
    static const struct {
        const char *sym;
        int ver;
        cuuint64_t flags;
        const char *want;
    } ok[] = {
        { "cuLaunchKernel", 12000, 0, "cuLaunchKernel" },
        { "cuLaunchKernel", 12000, LEGACY, "cuLaunchKernel" },
        { "cuLaunchKernel", 4000, PTDS, "cuLaunchKernel_ptsz" },
        { "cuLaunchKernelEx", 11060, PTDS, "cuLaunchKernelEx_ptsz" },
        { "cuLaunchCooperativeKernel", 9000, PTDS,
          "cuLaunchCooperativeKernel_ptsz" },
        { "cuGraphLaunch", 10000, 0, "cuGraphLaunch" },
        { "cuGraphLaunch", 12000, PTDS, "cuGraphLaunch_ptsz" },
        { "cuGraphCreate", 12000, PTDS, "cuGraphCreate" }, /* no ptsz */
        { "cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2" },
        { "cuGetProcAddress", 11030, 0, "cuGetProcAddress" },
        { "cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2" },
        { "cuStreamBeginCapture", 12080, PTDS, "cuStreamBeginCapture_v2_ptsz" },
        { "cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture" },
        { "cuStreamBeginCapture", 10000, PTDS, "cuStreamBeginCapture_ptsz" },
        { "cuStreamBeginCaptureToGraph", 12030, PTDS,
          "cuStreamBeginCaptureToGraph_ptsz" },
        { "cuStreamEndCapture", 12000, PTDS, "cuStreamEndCapture_ptsz" },
        { "cuStreamIsCapturing", 12000, PTDS, "cuStreamIsCapturing_ptsz" },
        { "cuGraphInstantiate", 12000, 0, "cuGraphInstantiate_v2" },
        { "cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2" },
        { "cuGraphInstantiate", 10000, 0, "cuGraphInstantiate" },
        { "cuGraphInstantiateWithParams", 12000, PTDS,
          "cuGraphInstantiateWithParams_ptsz" },
        { "cuGraphExecUpdate", 12000, 0, "cuGraphExecUpdate_v2" },
        { "cuGraphExecUpdate", 11020, 0, "cuGraphExecUpdate" },
        { "cuGraphKernelNodeGetParams", 12000, 0,
          "cuGraphKernelNodeGetParams_v2" },
        { "cuGraphKernelNodeGetParams", 11080, 0, "cuGraphKernelNodeGetParams" },
        { "cuGraphAddKernelNode", 12000, 0, "cuGraphAddKernelNode_v2" },
        { "cuGraphAddKernelNode", 10000, 0, "cuGraphAddKernelNode" },
        { "cuStreamDestroy", 12000, 0, "cuStreamDestroy_v2" },
        { "cuLibraryGetKernel", 12000, 0, "cuLibraryGetKernel" },
        { "cuFuncGetName", 12030, 0, "cuFuncGetName" },
        { "cuStreamSynchronize", 12000, PTDS, "cuStreamSynchronize_ptsz" },
        { "cuEventRecord", 12000, PTDS, "cuEventRecord_ptsz" },
        { "cuEventDestroy", 12000, 0, "cuEventDestroy_v2" },
        { "cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2" },
        { "cuEventElapsedTime", 12000, 0, "cuEventElapsedTime" },
        { "cuStreamWaitValue32", 12000, 0, "cuStreamWaitValue32_v2" },
        { "cuStreamWaitValue32", 12000, PTDS, "cuStreamWaitValue32_v2_ptsz" },
        { "cuStreamWaitValue32", 11000, PTDS, "cuStreamWaitValue32_ptsz" },
        { "cuStreamWriteValue64", 12000, 0, "cuStreamWriteValue64_v2" },
        { "cuStreamBatchMemOp", 12000, 0, "cuStreamBatchMemOp_v2" },
        { "cuMemHostGetDevicePointer", 12000, 0,
          "cuMemHostGetDevicePointer_v2" },
    };
    static const struct {
        const char *sym;
        int ver;
        CUdriverProcAddressQueryResult status;
    } bad[] = {
        { "cuNoSuchFunction", 13000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND },
        /* symbols are base names; ABI names are not looked up */
        { "cuLaunchKernel_ptsz", 13000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND },
        { "cuGetProcAddress_v2", 13000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND },
        { "cuLaunchKernel", 3020, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
        { "cuLaunchKernelEx", 11050, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
        { "cuGraphLaunch", 9020, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
        { "cuLibraryGetKernel", 11080, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
        { "cuFuncGetName", 12020, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
        { "cuStreamBeginCaptureToGraph", 12020,
          CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
    };
    const size_t nok = sizeof ok / sizeof ok[0];
    const size_t nbad = sizeof bad / sizeof bad[0];

    for (size_t i = 0; i < nok; i++) {
        void *p = NULL, *p1 = NULL;
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult r = F(cuGetProcAddress_v2)(ok[i].sym, &p, ok[i].ver,
                                            ok[i].flags, &st);
        CUresult r1 = F(cuGetProcAddress)(ok[i].sym, &p1, ok[i].ver,
                                          ok[i].flags);
        if (r != CUDA_SUCCESS || r1 != CUDA_SUCCESS ||
            st != CU_GET_PROC_ADDRESS_SUCCESS || p != sym(ok[i].want) ||
            p1 != p)
            fail_msg("%s @%d flags %llu: want %s", ok[i].sym, ok[i].ver,
                     (unsigned long long)ok[i].flags, ok[i].want);
    }
    /* distinct ABI names are distinct functions (none folded together) */
    for (size_t i = 0; i < nok; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(ok[i].want, ok[j].want) != 0 &&
                sym(ok[i].want) == sym(ok[j].want))
                fail_msg("%s and %s share an address", ok[i].want, ok[j].want);
    for (size_t i = 0; i < nbad; i++) {
        void *p = &p;
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
        CUresult r = F(cuGetProcAddress_v2)(bad[i].sym, &p, bad[i].ver, 0, &st);
        CUresult want = bad[i].status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
                            ? CUDA_ERROR_NOT_FOUND
                            : CUDA_SUCCESS;
        if (r != want || p != NULL || st != bad[i].status)
            fail_msg("%s @%d: r %d status %d", bad[i].sym, bad[i].ver, r, st);
    }
    /* symbolStatus may be NULL; flags other than one mode are rejected */
    void *p = &p;
    assert_int_equal(F(cuGetProcAddress_v2)("cuNope", &p, 13000, 0, NULL),
                     CUDA_ERROR_NOT_FOUND);
    assert_null(p);
    assert_int_equal(F(cuGetProcAddress)("cuLaunchKernel", &p, 13000,
                                         PTDS | LEGACY),
                     CUDA_ERROR_INVALID_VALUE);

    /* The decoys really are first in the global scope, yet the fake hands
     * out its own definitions. */
    assert_ptr_equal(dlsym(RTLD_DEFAULT, "cuGraphLaunch"), (void *)cuGraphLaunch);
    assert_int_equal(F(cuGetProcAddress_v2)("cuGraphLaunch", &p, 13000, 0, NULL),
                     CUDA_SUCCESS);
    assert_ptr_not_equal(p, (void *)cuGraphLaunch);
    assert_int_equal(F(cuGetProcAddress_v2)("cuStreamBeginCapture", &p, 13000,
                                            PTDS, NULL),
                     CUDA_SUCCESS);
    assert_ptr_not_equal(p, (void *)cuStreamBeginCapture_v2_ptsz);

    /* A pointer handed out is the live entry point. */
    assert_int_equal(F(cuGetProcAddress_v2)("cuLaunchKernel", &p, 13000, PTDS,
                                            NULL),
                     CUDA_SUCCESS);
    assert_int_equal(((__typeof__(&cuLaunchKernel_ptsz))p)(
                         mkfunc("f", 32, 0), 1, 1, 1, 1, 1, 1, 0, NULL, NULL,
                         NULL),
                     CUDA_SUCCESS);
    struct fake_tally t = tally();
    assert_int_equal(t.per_entry[FAKE_cuLaunchKernel_ptsz], 1);
    assert_int_equal(t.getproc_calls, 2 * nok + nbad + 5);
}

static void test_code_and_identity(void **state)
{
    (void)state;
    const char *name;
    int v;
    CUdevice dev = -1;
    assert_int_equal(F(cuDriverGetVersion)(&v), CUDA_SUCCESS);
    assert_int_equal(v, 13000);
    assert_int_equal(F(cuDeviceGet)(&dev, 0), CUDA_SUCCESS);
    assert_int_equal(dev, 0);
    assert_int_equal(F(cuCtxGetDevice)(&dev), CUDA_SUCCESS);
    assert_int_equal(dev, 0);

    /* module -> FUNCTIONs */
    CUmodule mod;
    CUfunction fa, fa2, fb;
    assert_int_equal(F(cuModuleLoadData)(&mod, "alpha;beta"), CUDA_SUCCESS);
    assert_int_equal(F(cuModuleGetFunction)(&fa, mod, "alpha"), CUDA_SUCCESS);
    assert_int_equal(F(cuModuleGetFunction)(&fa2, mod, "alpha"), CUDA_SUCCESS);
    assert_int_equal(F(cuModuleGetFunction)(&fb, mod, "beta"), CUDA_SUCCESS);
    assert_ptr_equal(fa, fa2);
    assert_ptr_not_equal(fa, fb);
    assert_int_equal(F(cuModuleGetFunction)(&fa2, mod, "gamma"),
                     CUDA_ERROR_NOT_FOUND);
    assert_int_equal(F(cuFuncGetName)(&name, fb), CUDA_SUCCESS);
    assert_string_equal(name, "beta");
    assert_int_equal(F(cuFuncGetAttribute)(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, fa),
                     CUDA_SUCCESS);
    assert_int_equal(v, 32);

    /* library -> KERNELs */
    CUlibrary l;
    CUkernel ks[4] = { 0 }, k;
    unsigned n;
    assert_int_equal(F(cuLibraryLoadData)(&l, "k1;k2;k3", NULL, NULL, 0, NULL,
                                          NULL, 0),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuLibraryGetKernelCount)(&n, l), CUDA_SUCCESS);
    assert_int_equal(n, 3);
    assert_int_equal(F(cuLibraryEnumerateKernels)(ks, 3, l), CUDA_SUCCESS);
    assert_int_equal(F(cuLibraryGetKernel)(&k, l, "k2"), CUDA_SUCCESS);
    assert_ptr_equal(k, ks[1]);
    assert_int_equal(F(cuLibraryGetKernel)(&k, l, "nope"), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(F(cuLibraryGetKernel)(&k, (CUlibrary)mod, "k2"),
                     CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(F(cuKernelGetName)(&name, ks[1]), CUDA_SUCCESS);
    assert_string_equal(name, "k2");

    /* each kind only where it belongs */
    assert_int_equal(F(cuFuncGetName)(&name, (CUfunction)ks[1]),
                     CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(F(cuKernelGetName)(&name, (CUkernel)fa),
                     CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(F(cuFuncGetAttribute)(&v, CU_FUNC_ATTRIBUTE_NUM_REGS,
                                           (CUfunction)ks[0]),
                     CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(F(cuKernelGetAttribute)(&v, CU_FUNC_ATTRIBUTE_NUM_REGS,
                                             (CUkernel)fa, 0),
                     CUDA_ERROR_INVALID_HANDLE);

    /* a kernel's function: same name, same handle every time */
    CUfunction kf, kf2;
    assert_int_equal(F(cuKernelGetFunction)(&kf, ks[2]), CUDA_SUCCESS);
    assert_int_equal(F(cuKernelGetFunction)(&kf2, ks[2]), CUDA_SUCCESS);
    assert_ptr_equal(kf, kf2);
    assert_ptr_not_equal(kf, (CUfunction)ks[2]);
    assert_int_equal(F(cuFuncGetName)(&name, kf), CUDA_SUCCESS);
    assert_string_equal(name, "k3");

    /* attributes of control-made handles */
    CUfunction f = mkfunc("f", 40, 2048);
    CUkernel kk = mkkern("kk", 64, 256);
    static const struct { CUfunction_attribute a; int f, k; } attrs[] = {
        { CU_FUNC_ATTRIBUTE_NUM_REGS, 40, 64 },
        { CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 2048, 256 },
        { CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024, 1024 },
        { CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, 0, 0 },
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        assert_int_equal(F(cuFuncGetAttribute)(&v, attrs[i].a, f), CUDA_SUCCESS);
        assert_int_equal(v, attrs[i].f);
        assert_int_equal(F(cuKernelGetAttribute)(&v, attrs[i].a, kk, 0),
                         CUDA_SUCCESS);
        assert_int_equal(v, attrs[i].k);
    }
}

static void test_launch(void **state)
{
    (void)state;
    CUfunction f = mkfunc("f", 32, 0);
    CUkernel k = mkkern("k", 32, 0);
    CUstream s = mkstream();
    CUlaunchConfig cfg = { .gridDimX = 4, .gridDimY = 1, .gridDimZ = 1,
                           .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1,
                           .hStream = s };

    assert_int_equal(launch(f, NULL), CUDA_SUCCESS);
    assert_int_equal(F(cuLaunchKernel_ptsz)((CUfunction)k, 1, 1, 1, 32, 32, 1,
                                            0, CU_STREAM_PER_THREAD, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuLaunchKernelEx)(&cfg, f, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(F(cuLaunchKernelEx_ptsz)(&cfg, (CUfunction)k, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuLaunchCooperativeKernel)(f, 2, 2, 2, 4, 4, 4, 0,
                                                  CU_STREAM_LEGACY, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuLaunchCooperativeKernel_ptsz)(f, 1, 1, 1, 1, 1, 1, 0,
                                                       s, NULL),
                     CUDA_SUCCESS);

    /* rejected launches are not counted */
    assert_int_equal(F(cuLaunchKernel)(f, 0, 1, 1, 32, 1, 1, 0, NULL, NULL,
                                       NULL),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(F(cuLaunchKernel)(f, 1, 1, 1, 1025, 1, 1, 0, NULL, NULL,
                                       NULL),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(F(cuLaunchCooperativeKernel)(f, 1, 1, 1, 32, 32, 2, 0,
                                                  NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(launch(NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(launch((CUfunction)s, NULL), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(launch(f, (CUstream)f), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(F(cuLaunchKernelEx)(NULL, f, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    cfg.blockDimY = 0;
    assert_int_equal(F(cuLaunchKernelEx)(&cfg, f, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);

    struct fake_tally t = tally();
    assert_int_equal(t.direct_executed, 6);
    assert_int_equal(t.kernels_executed, 6);
    assert_int_equal(t.captured, 0);
    for (int e = FAKE_cuLaunchKernel; e <= FAKE_cuLaunchCooperativeKernel_ptsz;
         e++)
        assert_int_equal(t.per_entry[e], 1);
    assert_int_equal(F(cuStreamDestroy_v2)(s), CUDA_SUCCESS);
}

static void test_capture(void **state)
{
    (void)state;
    CUfunction f = mkfunc("f", 32, 0);
    CUkernel k = mkkern("k", 32, 0);
    CUstream s = mkstream();
    CUstreamCaptureStatus cs;
    CUgraph g, g2;
    CUgraphExec x;

    /* default streams cannot capture */
    assert_int_equal(F(cuStreamBeginCapture_v2)(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(F(cuStreamBeginCapture)(CU_STREAM_LEGACY),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(F(cuStreamBeginCapture_ptsz)(CU_STREAM_PER_THREAD),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(F(cuStreamEndCapture)(s, &g), CUDA_ERROR_ILLEGAL_STATE);

    assert_int_equal(F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuStreamBeginCapture)(s), CUDA_ERROR_ILLEGAL_STATE);
    assert_int_equal(F(cuStreamIsCapturing_ptsz)(s, &cs), CUDA_SUCCESS);
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(F(cuStreamIsCapturing)(NULL, &cs), CUDA_SUCCESS);
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_NONE);

    assert_int_equal(F(cuLaunchKernel)(f, 2, 3, 4, 8, 8, 1, 64, s, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuLaunchKernel_ptsz)((CUfunction)k, 1, 1, 1, 32, 1, 1,
                                            0, s, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(launch(f, NULL), CUDA_SUCCESS); /* not captured */
    struct fake_tally t = tally();
    assert_int_equal(t.captured, 2);
    assert_int_equal(t.direct_executed, 1);
    assert_int_equal(t.kernels_executed, 1);
    assert_int_equal(t.per_entry[FAKE_cuLaunchKernel], 2);

    assert_int_equal(F(cuStreamEndCapture_ptsz)(s, &g), CUDA_SUCCESS);
    assert_int_equal(F(cuStreamIsCapturing)(s, &cs), CUDA_SUCCESS);
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(node_count(g), 2);

    /* the recorded nodes: func for a CUfunction, kern for a CUkernel */
    CUDA_KERNEL_NODE_PARAMS p2;
    CUDA_KERNEL_NODE_PARAMS_v1 p1;
    assert_int_equal(F(cuGraphKernelNodeGetParams_v2)(node_at(g, 0), &p2),
                     CUDA_SUCCESS);
    assert_ptr_equal(p2.func, f);
    assert_null(p2.kern);
    assert_int_equal(p2.gridDimZ, 4);
    assert_int_equal(p2.blockDimY, 8);
    assert_int_equal(p2.sharedMemBytes, 64);
    assert_int_equal(F(cuGraphKernelNodeGetParams_v2)(node_at(g, 1), &p2),
                     CUDA_SUCCESS);
    assert_null(p2.func);
    assert_ptr_equal(p2.kern, k);
    assert_int_equal(F(cuGraphKernelNodeGetParams)(node_at(g, 1), &p1),
                     CUDA_SUCCESS);
    assert_ptr_equal(p1.func, (CUfunction)k);

    /* run it */
    assert_int_equal(F(cuGraphInstantiateWithFlags)(&x, g, 0), CUDA_SUCCESS);
    assert_int_equal(F(cuGraphLaunch)(x, NULL), CUDA_SUCCESS);
    t = tally();
    assert_int_equal(t.graph_launches, 1);
    assert_int_equal(t.graph_kernels_executed, 2);
    assert_int_equal(t.kernels_executed, 3);
    assert_int_equal(t.direct_executed, 1);

    /* a graph launch into a capturing stream is recorded as a child graph */
    assert_int_equal(F(cuStreamBeginCapture_v2_ptsz)(s, CU_STREAM_CAPTURE_MODE_RELAXED),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuGraphLaunch_ptsz)(x, s), CUDA_SUCCESS);
    assert_int_equal(F(cuStreamEndCapture)(s, &g2), CUDA_SUCCESS);
    t = tally();
    assert_int_equal(t.graph_launches, 1);
    assert_int_equal(t.captured, 3);
    assert_int_equal(t.per_entry[FAKE_cuGraphLaunch_ptsz], 1);
    CUgraphNodeType type;
    CUgraph child;
    assert_int_equal(node_count(g2), 1);
    assert_int_equal(F(cuGraphNodeGetType)(node_at(g2, 0), &type), CUDA_SUCCESS);
    assert_int_equal(type, CU_GRAPH_NODE_TYPE_GRAPH);
    assert_int_equal(F(cuGraphChildGraphNodeGetGraph)(node_at(g2, 0), &child),
                     CUDA_SUCCESS);
    assert_int_equal(node_count(child), 2);

    /* capture into an existing graph */
    assert_int_equal(F(cuStreamBeginCaptureToGraph)(s, g2, NULL, NULL, 0,
                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    assert_int_equal(launch(f, s), CUDA_SUCCESS);
    CUgraph g3;
    assert_int_equal(F(cuStreamEndCapture)(s, &g3), CUDA_SUCCESS);
    assert_ptr_equal(g3, g2);
    assert_int_equal(node_count(g2), 2);

    assert_int_equal(F(cuGraphExecDestroy)(x), CUDA_SUCCESS);
    assert_int_equal(F(cuGraphDestroy)(g), CUDA_SUCCESS);
    assert_int_equal(F(cuGraphDestroy)(g2), CUDA_SUCCESS);
    assert_int_equal(F(cuStreamDestroy_v2)(s), CUDA_SUCCESS);
}

/* Builds [kernel f, child graph of nchild kernels, empty]. */
static CUgraph build(CUfunction f, CUkernel k, int nchild)
{
    CUgraph g, child;
    CUgraphNode n, dep, sub;
    CUDA_KERNEL_NODE_PARAMS_v1 p1 = { .func = f, .gridDimX = 1, .gridDimY = 1,
                                      .gridDimZ = 1, .blockDimX = 64,
                                      .blockDimY = 1, .blockDimZ = 1 };
    CUDA_KERNEL_NODE_PARAMS p2 = { .kern = k, .gridDimX = 1, .gridDimY = 1,
                                   .gridDimZ = 1, .blockDimX = 64,
                                   .blockDimY = 1, .blockDimZ = 1 };
    assert_int_equal(F(cuGraphCreate)(&child, 0), CUDA_SUCCESS);
    for (int i = 0; i < nchild; i++)
        assert_int_equal(F(cuGraphAddKernelNode_v2)(&n, child, NULL, 0, &p2),
                         CUDA_SUCCESS);
    assert_int_equal(F(cuGraphCreate)(&g, 0), CUDA_SUCCESS);
    assert_int_equal(F(cuGraphAddKernelNode)(&dep, g, NULL, 0, &p1), CUDA_SUCCESS);
    assert_int_equal(F(cuGraphAddChildGraphNode)(&sub, g, &dep, 1, child),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuGraphAddEmptyNode)(&n, g, &sub, 1), CUDA_SUCCESS);
    /* the child was copied into the node */
    assert_int_equal(F(cuGraphDestroy)(child), CUDA_SUCCESS);
    return g;
}

static void test_graphs(void **state)
{
    (void)state;
    CUfunction f = mkfunc("f", 32, 0);
    CUkernel k = mkkern("k", 32, 0);
    CUgraph g = build(f, k, 2), child;
    CUgraphNode nodes[5];
    CUgraphNodeType type;
    size_t n;

    /* cuGraphGetNodes: count, partial fill, NULL-padded fill */
    assert_int_equal(node_count(g), 3);
    n = 2;
    assert_int_equal(F(cuGraphGetNodes)(g, nodes, &n), CUDA_SUCCESS);
    assert_int_equal(n, 3);
    n = 5;
    nodes[3] = nodes[4] = (CUgraphNode)&n;
    assert_int_equal(F(cuGraphGetNodes)(g, nodes, &n), CUDA_SUCCESS);
    assert_int_equal(n, 3);
    assert_null(nodes[3]);
    assert_null(nodes[4]);
    assert_int_equal(F(cuGraphNodeGetType)(nodes[2], &type), CUDA_SUCCESS);
    assert_int_equal(type, CU_GRAPH_NODE_TYPE_EMPTY);
    assert_int_equal(F(cuGraphChildGraphNodeGetGraph)(nodes[1], &child),
                     CUDA_SUCCESS);
    assert_int_equal(node_count(child), 2);
    CUDA_KERNEL_NODE_PARAMS p2;
    assert_int_equal(F(cuGraphKernelNodeGetParams_v2)(nodes[2], &p2),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(F(cuGraphKernelNodeGetParams_v2)((CUgraphNode)g, &p2),
                     CUDA_ERROR_INVALID_HANDLE);

    /* every instantiate variant; each exec runs 1 + 2 kernels */
    CUgraphExec x[5];
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = { .result_out = CUDA_GRAPH_INSTANTIATE_ERROR };
    assert_int_equal(F(cuGraphInstantiate)(&x[0], g, NULL, NULL, 0), CUDA_SUCCESS);
    assert_int_equal(F(cuGraphInstantiate_v2)(&x[1], g, NULL, NULL, 0),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuGraphInstantiateWithFlags)(&x[2], g, 0), CUDA_SUCCESS);
    assert_int_equal(F(cuGraphInstantiateWithParams)(&x[3], g, &ip), CUDA_SUCCESS);
    assert_int_equal(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    assert_int_equal(F(cuGraphInstantiateWithParams_ptsz)(&x[4], g, &ip),
                     CUDA_SUCCESS);
    /* an exec does not depend on its graph */
    assert_int_equal(F(cuGraphDestroy)(g), CUDA_SUCCESS);
    for (int i = 0; i < 5; i++)
        assert_int_equal((i % 2 ? F(cuGraphLaunch_ptsz) : F(cuGraphLaunch))(
                             x[i], i == 4 ? CU_STREAM_PER_THREAD : NULL),
                         CUDA_SUCCESS);
    struct fake_tally t = tally();
    assert_int_equal(t.graph_launches, 5);
    assert_int_equal(t.graph_kernels_executed, 15);
    assert_int_equal(t.kernels_executed, 15);
    assert_int_equal(t.direct_executed, 0);
    assert_int_equal(t.per_entry[FAKE_cuGraphLaunch], 3);
    assert_int_equal(t.per_entry[FAKE_cuGraphLaunch_ptsz], 2);

    /* exec update: other topology fails, same topology takes the new graph */
    CUgraph small, same = build(f, k, 5);
    CUgraphExecUpdateResultInfo info;
    CUgraphExecUpdateResult res;
    CUgraphNode err = (CUgraphNode)&n;
    assert_int_equal(F(cuGraphCreate)(&small, 0), CUDA_SUCCESS);
    assert_int_equal(F(cuGraphAddEmptyNode)(&nodes[0], small, NULL, 0),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuGraphExecUpdate_v2)(x[0], small, &info),
                     CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    assert_int_equal(F(cuGraphExecUpdate)(x[1], small, &err, &res),
                     CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(res, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    assert_null(err);
    assert_int_equal(F(cuGraphExecUpdate_v2)(x[0], same, &info), CUDA_SUCCESS);
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    assert_int_equal(F(cuGraphExecUpdate)(x[1], same, &err, &res), CUDA_SUCCESS);
    assert_int_equal(res, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    assert_int_equal(F(cuGraphDestroy)(same), CUDA_SUCCESS);
    assert_int_equal(F(cuGraphLaunch)(x[0], NULL), CUDA_SUCCESS);
    assert_int_equal(F(cuGraphLaunch)(x[1], NULL), CUDA_SUCCESS);
    t = tally();
    assert_int_equal(t.graph_kernels_executed, 15 + 2 * 6);

    assert_int_equal(F(cuGraphDestroy)(small), CUDA_SUCCESS);
    for (int i = 0; i < 5; i++)
        assert_int_equal(F(cuGraphExecDestroy)(x[i]), CUDA_SUCCESS);
}

/* ---------------------------------------------------------------------- */

#define THREADS 8
#define DIRECT 500   /* per thread, per launch entry point used */
#define CAPTURED 100 /* per thread */
#define REPLAYS 10   /* per thread */

static struct {
    __typeof__(&cuLaunchKernel) launch;
    __typeof__(&cuLaunchKernel_ptsz) launch_ptsz;
    __typeof__(&cuLaunchKernelEx) launch_ex;
    __typeof__(&cuStreamCreate) stream_create;
    __typeof__(&cuStreamDestroy_v2) stream_destroy;
    __typeof__(&cuStreamBeginCapture_v2) begin;
    __typeof__(&cuStreamEndCapture) end;
    __typeof__(&cuGraphInstantiateWithFlags) instantiate;
    __typeof__(&cuGraphLaunch) graph_launch;
    __typeof__(&cuGraphExecDestroy) exec_destroy;
    __typeof__(&cuGraphDestroy) graph_destroy;
    CUfunction f;
    CUkernel k;
} api;
static atomic_int failures;

static void check(CUresult r)
{
    if (r != CUDA_SUCCESS)
        atomic_fetch_add(&failures, 1);
}

/* cmocka asserts only on the main thread: workers count failures. */
static void *worker(void *arg)
{
    (void)arg;
    CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                           .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1 };
    for (int i = 0; i < DIRECT; i++) {
        check(api.launch(api.f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL));
        check(api.launch_ptsz((CUfunction)api.k, 1, 1, 1, 64, 1, 1, 0,
                              CU_STREAM_PER_THREAD, NULL, NULL));
        check(api.launch_ex(&cfg, api.f, NULL, NULL));
    }
    CUstream s;
    CUgraph g;
    CUgraphExec x;
    check(api.stream_create(&s, CU_STREAM_NON_BLOCKING));
    check(api.begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < CAPTURED; i++)
        check(api.launch(api.f, 1, 1, 1, 64, 1, 1, 0, s, NULL, NULL));
    check(api.end(s, &g));
    check(api.instantiate(&x, g, 0));
    for (int i = 0; i < REPLAYS; i++)
        check(api.graph_launch(x, s));
    check(api.exec_destroy(x));
    check(api.graph_destroy(g));
    check(api.stream_destroy(s));
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    api.launch = F(cuLaunchKernel);
    api.launch_ptsz = F(cuLaunchKernel_ptsz);
    api.launch_ex = F(cuLaunchKernelEx);
    api.stream_create = F(cuStreamCreate);
    api.stream_destroy = F(cuStreamDestroy_v2);
    api.begin = F(cuStreamBeginCapture_v2);
    api.end = F(cuStreamEndCapture);
    api.instantiate = F(cuGraphInstantiateWithFlags);
    api.graph_launch = F(cuGraphLaunch);
    api.exec_destroy = F(cuGraphExecDestroy);
    api.graph_destroy = F(cuGraphDestroy);
    api.f = mkfunc("f", 32, 0);
    api.k = mkkern("k", 32, 0);

    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(atomic_load(&failures), 0);

    struct fake_tally t = tally();
    const uint64_t direct = THREADS * 3 * DIRECT;
    const uint64_t replayed = THREADS * REPLAYS * CAPTURED;
    assert_int_equal(t.direct_executed, direct);
    assert_int_equal(t.captured, THREADS * CAPTURED);
    assert_int_equal(t.graph_launches, THREADS * REPLAYS);
    assert_int_equal(t.graph_kernels_executed, replayed);
    assert_int_equal(t.kernels_executed, direct + replayed);
    assert_int_equal(t.per_entry[FAKE_cuLaunchKernel],
                     THREADS * (DIRECT + CAPTURED));
    assert_int_equal(t.per_entry[FAKE_cuLaunchKernel_ptsz], THREADS * DIRECT);
    assert_int_equal(t.per_entry[FAKE_cuLaunchKernelEx], THREADS * DIRECT);
    assert_int_equal(t.per_entry[FAKE_cuGraphLaunch], THREADS * REPLAYS);
}

/* Without MOSAIC_SIMGPU nothing runs: work is complete at once, events are
 * stamped with the host clock, a stream write-value happens at once. */
static void test_plain_sync_and_memops(void **state)
{
    (void)state;
    CUstream s;
    CUevent a, b;
    assert_int_equal(F(cuStreamCreate)(&s, 0), CUDA_SUCCESS);
    assert_int_equal(F(cuEventCreate)(&a, 0), CUDA_SUCCESS);
    assert_int_equal(F(cuEventCreate)(&b, CU_EVENT_DISABLE_TIMING),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuEventCreate)(&b, 0x100), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(F(cuEventDestroy_v2)(b), CUDA_SUCCESS);
    assert_int_equal(F(cuEventCreate)(&b, 0), CUDA_SUCCESS);
    float ms = -1;
    /* never recorded: complete, but no time */
    assert_int_equal(F(cuEventQuery)(a), CUDA_SUCCESS);
    assert_int_equal(F(cuEventElapsedTime)(&ms, a, b),
                     CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(launch(mkfunc("k", 32, 0), s), CUDA_SUCCESS);
    assert_int_equal(F(cuEventRecord)(a, s), CUDA_SUCCESS);
    assert_int_equal(F(cuEventRecord)(b, NULL), CUDA_SUCCESS);
    assert_int_equal(F(cuStreamQuery)(s), CUDA_SUCCESS);
    assert_int_equal(F(cuStreamSynchronize)(s), CUDA_SUCCESS);
    assert_int_equal(F(cuCtxSynchronize)(), CUDA_SUCCESS);
    assert_int_equal(F(cuEventSynchronize)(a), CUDA_SUCCESS);
    assert_int_equal(F(cuEventElapsedTime)(&ms, a, b), CUDA_SUCCESS);
    assert_true(ms >= 0 && ms < 1000);
    assert_int_equal(F(cuStreamWaitEvent)(s, b, 0), CUDA_SUCCESS);
    assert_int_equal(F(cuStreamWaitEvent)(s, (CUevent)s, 0),
                     CUDA_ERROR_INVALID_HANDLE);

    uint64_t *h = NULL;
    CUdeviceptr d = 0;
    assert_int_equal(F(cuMemHostAlloc)((void **)&h, 64, CU_MEMHOSTALLOC_DEVICEMAP),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuMemHostGetDevicePointer_v2)(&d, h, 0), CUDA_SUCCESS);
    assert_int_equal(d, (CUdeviceptr)(uintptr_t)h);
    assert_int_equal(F(cuStreamWriteValue64_v2)(s, d, 42, 0), CUDA_SUCCESS);
    assert_int_equal(*h, 42);
    assert_int_equal(F(cuStreamWaitValue32_v2)(s, d, 42,
                                               CU_STREAM_WAIT_VALUE_EQ),
                     CUDA_SUCCESS);
    assert_int_equal(F(cuStreamWaitValue32_v2)(s, d, 1, 7),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(F(cuStreamWriteValue32_v2)(s, 0, 1, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(F(cuMemHostRegister_v2)(h, 64, 0), CUDA_SUCCESS);
    assert_int_equal(F(cuMemHostUnregister)(h), CUDA_SUCCESS);
    assert_int_equal(F(cuMemFreeHost)(h), CUDA_SUCCESS);
    assert_int_equal(F(cuEventDestroy_v2)(a), CUDA_SUCCESS);
    assert_int_equal(F(cuEventDestroy_v2)(b), CUDA_SUCCESS);
    assert_int_equal(F(cuStreamDestroy_v2)(s), CUDA_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_getproc, reset),
        cmocka_unit_test_setup(test_code_and_identity, reset),
        cmocka_unit_test_setup(test_launch, reset),
        cmocka_unit_test_setup(test_capture, reset),
        cmocka_unit_test_setup(test_graphs, reset),
        cmocka_unit_test_setup(test_threads, reset),
        cmocka_unit_test_setup(test_plain_sync_and_memops, reset),
    };
    return cmocka_run_group_tests_name("fakecuda", tests, group_setup, NULL);
}
