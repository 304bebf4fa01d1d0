/*
 * Driver-API launch coverage workload for the Mosaic shim.
 *
 *   driver_api_prog <driver_kernel.cubin> [n_launches]
 *
 * Launch paths exercised (every kernel adds to one device array, checked at
 * the end; cluster and cooperative kernels check themselves):
 *   - cuLaunchKernel, linked directly, NULL stream and a created stream
 *   - cuLaunchKernel with the `extra` parameter-buffer form
 *   - cuLaunchKernel from cuGetProcAddress (default flags)
 *   - cuLaunchKernel_ptsz from cuGetProcAddress(PER_THREAD_DEFAULT_STREAM)
 *   - cuLaunchKernel_ptsz from dlsym(dlopen("libcuda.so.1"))
 *   - cuLaunchKernel on CU_STREAM_PER_THREAD
 *   - cuLaunchKernelEx with a (2,1,1) cluster attribute, and without attrs
 *   - cuLaunchCooperativeKernel (grid-wide sync)
 *   - cuLibraryLoadFromFile + cuLibraryGetKernel, CUkernel to cuLaunchKernel
 *   - a graph captured with cuStreamBeginCapture, cuGraphLaunch x3, and
 *     once via cuGraphLaunch_ptsz from cuGetProcAddress(PER_THREAD...)
 *
 * Build: gcc -std=gnu11 -O2 -Wall -Wextra -I/usr/local/cuda/include \
 *          -o driver_api_prog driver_api_prog.c \
 *          -L/usr/local/cuda/lib64/stubs -lcuda -ldl
 * Prints "MOSAIC_EXPECT {json}"; exit 0 only if every check passed.
 */
#define _GNU_SOURCE
#include <cuda.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die_cu(CUresult r, const char *what, int line)
{
    const char *name = NULL, *str = NULL;
    cuGetErrorName(r, &name);
    cuGetErrorString(r, &str);
    fprintf(stderr, "driver_api_prog.c:%d: %s -> %d %s (%s)\n", line, what,
            (int)r, name ? name : "?", str ? str : "?");
    exit(2);
}

#define CK(call)                                                              \
    do {                                                                      \
        CUresult r_ = (call);                                                 \
        if (r_ != CUDA_SUCCESS)                                               \
            die_cu(r_, #call, __LINE__);                                      \
    } while (0)

static int g_fail;
static void expect_eq(const char *what, long long got, long long want)
{
    if (got != want) {
        fprintf(stderr, "CHECK FAILED: %s: got %lld want %lld\n", what, got,
                want);
        g_fail = 1;
    }
}

typedef CUresult (*launch_fn)(CUfunction, unsigned int, unsigned int,
                              unsigned int, unsigned int, unsigned int,
                              unsigned int, unsigned int, CUstream, void **,
                              void **);

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s <driver_kernel.cubin> [n_launches]\n",
                argv[0]);
        return 2;
    }
    const char *cubin = argv[1];
    int n_plain = argc > 2 ? atoi(argv[2]) : 20;
    if (n_plain < 1)
        n_plain = 1;

    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    int sms = 0, coop_ok = 0, drv = 0;
    CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    CK(cuDeviceGetAttribute(&coop_ok, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev));
    CK(cuDriverGetVersion(&drv));
    printf("driver version %d, %d SMs\n", drv, sms);

    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));

    CUmodule mod;
    CK(cuModuleLoad(&mod, cubin));
    CUfunction f_add, f_coop, f_cluster;
    CK(cuModuleGetFunction(&f_add, mod, "add_k"));
    CK(cuModuleGetFunction(&f_coop, mod, "coop_count"));
    CK(cuModuleGetFunction(&f_cluster, mod, "cluster_size"));

    const int n = 1 << 16;
    const unsigned threads = 256, blocks = (n + threads - 1) / threads;
    CUdeviceptr d;
    CK(cuMemAlloc(&d, n * sizeof(int)));
    CK(cuMemsetD32(d, 0, n));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    int nn = n, one = 1;
    void *args[] = {&d, &nn, &one};
    long long adds = 0;     /* expected value of every element of d */
    long long direct = 0;   /* executed non-graph launches */
    long long captured = 0, graph_launches = 0, graph_kernels = 0;

    /* 1. cuLaunchKernel (linked), NULL stream then a created stream. */
    for (int i = 0; i < n_plain; i++) {
        CK(cuLaunchKernel(f_add, blocks, 1, 1, threads, 1, 1, 0, NULL, args,
                          NULL));
        adds++, direct++;
    }
    CK(cuCtxSynchronize()); /* s is non-blocking: order the two loops */
    for (int i = 0; i < 5; i++) {
        CK(cuLaunchKernel(f_add, blocks, 1, 1, threads, 1, 1, 0, s, args,
                          NULL));
        adds++, direct++;
    }
    CK(cuStreamSynchronize(s));
    CK(cuCtxSynchronize());

    /* 2. The `extra` form: one packed parameter buffer. */
    {
        struct {
            CUdeviceptr p;
            int n;
            int k;
        } pbuf = {d, n, 1};
        size_t psize = sizeof pbuf;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &pbuf,
                         CU_LAUNCH_PARAM_BUFFER_SIZE, &psize,
                         CU_LAUNCH_PARAM_END};
        CK(cuLaunchKernel(f_add, blocks, 1, 1, threads, 1, 1, 0, s, NULL,
                          extra));
        adds++, direct++;
        CK(cuStreamSynchronize(s));
    }

    /* 3. cuLaunchKernel through cuGetProcAddress, default and per-thread. */
    {
        void *pfn = NULL;
        CUdriverProcAddressQueryResult st;
        CK(cuGetProcAddress("cuLaunchKernel", &pfn, CUDA_VERSION,
                            CU_GET_PROC_ADDRESS_DEFAULT, &st));
        if (!pfn || st != CU_GET_PROC_ADDRESS_SUCCESS) {
            fprintf(stderr, "cuGetProcAddress(cuLaunchKernel) status %d\n",
                    (int)st);
            g_fail = 1;
        } else {
            launch_fn lk = (launch_fn)pfn;
            for (int i = 0; i < 3; i++) {
                CK(lk(f_add, blocks, 1, 1, threads, 1, 1, 0, s, args, NULL));
                adds++, direct++;
            }
        }
        CK(cuStreamSynchronize(s));
        pfn = NULL;
        CK(cuGetProcAddress("cuLaunchKernel", &pfn, CUDA_VERSION,
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                            &st));
        if (!pfn || st != CU_GET_PROC_ADDRESS_SUCCESS) {
            fprintf(stderr, "cuGetProcAddress(cuLaunchKernel, PTDS) status "
                    "%d\n", (int)st);
            g_fail = 1;
        } else {
            launch_fn lk = (launch_fn)pfn;
            for (int i = 0; i < 3; i++) {
                CK(lk(f_add, blocks, 1, 1, threads, 1, 1, 0, NULL, args,
                      NULL));
                adds++, direct++;
            }
        }
        CK(cuStreamSynchronize(s));
        CK(cuCtxSynchronize());
    }

    /* 4. cuLaunchKernel_ptsz via dlsym, and CU_STREAM_PER_THREAD. */
    {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (!h)
            h = dlopen("libcuda.so.1", RTLD_NOW);
        void *sym = h ? dlsym(h, "cuLaunchKernel_ptsz") : NULL;
        if (!sym) {
            fprintf(stderr, "dlsym(cuLaunchKernel_ptsz) failed: %s\n",
                    dlerror());
            g_fail = 1;
        } else {
            launch_fn lk = (launch_fn)sym;
            for (int i = 0; i < 2; i++) {
                CK(lk(f_add, blocks, 1, 1, threads, 1, 1, 0, NULL, args,
                      NULL));
                adds++, direct++;
            }
        }
        for (int i = 0; i < 2; i++) {
            CK(cuLaunchKernel(f_add, blocks, 1, 1, threads, 1, 1, 0,
                              CU_STREAM_PER_THREAD, args, NULL));
            adds++, direct++;
        }
        CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
        CK(cuCtxSynchronize());
    }

    /* 5. cuLaunchKernelEx: with a cluster dimension, and plain. */
    {
        const unsigned cblocks = 2u * (unsigned)sms;
        CUdeviceptr out;
        CK(cuMemAlloc(&out, cblocks * sizeof(int)));
        CK(cuMemsetD32(out, 0, cblocks));
        CUlaunchAttribute attr;
        memset(&attr, 0, sizeof attr);
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim.x = 2;
        attr.value.clusterDim.y = 1;
        attr.value.clusterDim.z = 1;
        CUlaunchConfig cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDimX = cblocks;
        cfg.gridDimY = 1;
        cfg.gridDimZ = 1;
        cfg.blockDimX = 64;
        cfg.blockDimY = 1;
        cfg.blockDimZ = 1;
        cfg.hStream = s;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        void *cargs[] = {&out};
        CK(cuLaunchKernelEx(&cfg, f_cluster, cargs, NULL));
        direct++;
        CK(cuStreamSynchronize(s));
        int *hb = malloc(cblocks * sizeof(int));
        if (!hb)
            return 2;
        CK(cuMemcpyDtoH(hb, out, cblocks * sizeof(int)));
        int bad = 0;
        for (unsigned i = 0; i < cblocks; i++)
            bad += hb[i] != 2;
        expect_eq("cuLaunchKernelEx cluster blocks with size != 2", bad, 0);
        free(hb);
        CK(cuMemFree(out));

        CUlaunchConfig cfg2;
        memset(&cfg2, 0, sizeof cfg2);
        cfg2.gridDimX = blocks;
        cfg2.gridDimY = 1;
        cfg2.gridDimZ = 1;
        cfg2.blockDimX = threads;
        cfg2.blockDimY = 1;
        cfg2.blockDimZ = 1;
        cfg2.hStream = s;
        CK(cuLaunchKernelEx(&cfg2, f_add, args, NULL));
        adds++, direct++;
        CK(cuStreamSynchronize(s));
    }

    /* 6. cuLaunchCooperativeKernel. */
    if (!coop_ok) {
        fprintf(stderr, "device lacks cooperative launch\n");
        g_fail = 1;
    } else {
        CUdeviceptr cnt;
        CK(cuMemAlloc(&cnt, 2 * sizeof(int)));
        CK(cuMemsetD32(cnt, 0, 2));
        CUdeviceptr arrived = cnt, ok = cnt + sizeof(int);
        void *cargs[] = {&arrived, &ok};
        CK(cuLaunchCooperativeKernel(f_coop, (unsigned)sms, 1, 1, 128, 1, 1, 0,
                                     s, cargs));
        direct++;
        CK(cuStreamSynchronize(s));
        int hc[2] = {0, 0};
        CK(cuMemcpyDtoH(hc, cnt, sizeof hc));
        expect_eq("coop blocks arrived", hc[0], sms);
        expect_eq("coop blocks that saw all arrivals", hc[1], sms);
        CK(cuMemFree(cnt));
    }

    /* 7. cuLibrary + CUkernel handed to cuLaunchKernel. */
    {
        CUlibrary lib;
        CK(cuLibraryLoadFromFile(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
        CUkernel k;
        CK(cuLibraryGetKernel(&k, lib, "add_k"));
        for (int i = 0; i < 2; i++) {
            CK(cuLaunchKernel((CUfunction)k, blocks, 1, 1, threads, 1, 1, 0, s,
                              args, NULL));
            adds++, direct++;
        }
        CK(cuStreamSynchronize(s));
        CK(cuLibraryUnload(lib));
    }

    /* 8. Stream capture into a graph; cuGraphLaunch x3. */
    {
        CUgraph g;
        CUgraphExec ge;
        CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        for (int i = 0; i < 2; i++) {
            CK(cuLaunchKernel(f_add, blocks, 1, 1, threads, 1, 1, 0, s, args,
                              NULL));
            captured++;
        }
        CK(cuStreamEndCapture(s, &g));
        CK(cuGraphInstantiate(&ge, g, 0));
        for (int i = 0; i < 3; i++) {
            CK(cuGraphLaunch(ge, s));
            graph_launches++;
            graph_kernels += 2;
            adds += 2;
        }
        CK(cuStreamSynchronize(s));
        /* Once more through cuGraphLaunch_ptsz (per-thread default stream),
         * which the CUDA runtime itself does not call. */
        typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
        void *pfn = NULL;
        CUdriverProcAddressQueryResult st;
        CK(cuGetProcAddress("cuGraphLaunch", &pfn, CUDA_VERSION,
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                            &st));
        if (!pfn || st != CU_GET_PROC_ADDRESS_SUCCESS) {
            fprintf(stderr, "cuGetProcAddress(cuGraphLaunch, PTDS) status "
                    "%d\n", (int)st);
            g_fail = 1;
        } else {
            CK(((graph_launch_fn)pfn)(ge, NULL));
            graph_launches++;
            graph_kernels += 2;
            adds += 2;
            CK(cuCtxSynchronize());
        }
        CK(cuGraphExecDestroy(ge));
        CK(cuGraphDestroy(g));
    }

    CK(cuCtxSynchronize());
    int *h = malloc(n * sizeof(int));
    if (!h)
        return 2;
    CK(cuMemcpyDtoH(h, d, n * sizeof(int)));
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += h[i] != (int)adds;
    expect_eq("elements of d not equal to the number of add launches", bad, 0);
    free(h);

    CK(cuMemFree(d));
    CK(cuStreamDestroy(s));
    CK(cuModuleUnload(mod));
    CK(cuDevicePrimaryCtxRelease(dev));

    printf("launched: direct=%lld captured=%lld graph_launches=%lld "
           "graph_kernels=%lld\n", direct, captured, graph_launches,
           graph_kernels);
    printf("MOSAIC_EXPECT {\"launches_total\":%lld,\"graph_kernel_launches\":%lld,"
           "\"captured_launches\":%lld,\"graph_launches\":%lld,"
           "\"kernels_total\":%lld}\n",
           direct, graph_kernels, captured, graph_launches,
           direct + graph_kernels);
    printf("%s\n", g_fail ? "RESULT: FAIL" : "RESULT: OK");
    fflush(stdout);
    return g_fail ? 1 : 0;
}
