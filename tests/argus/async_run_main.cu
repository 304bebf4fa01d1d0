/*
 * async_run: the host program of the cp.async GEMM (async_cpasync.cu) as
 * `argus exec run` runs a variant of it (scripts/gpu/argus16_multirun.sh):
 * an ordinary CUDA program with no Argus code, so that argus-shim arms the
 * kernel's launches by itself (the registry is embedded by the executor's
 * markers_on build) and its CUPTI recorder times them.
 *
 *   async_run CUBIN [LAUNCHES]
 *
 * Loads CUBIN with cuModuleLoad, runs about 100 ms of memsets first (so
 * that the SM clock has left idle before the first kernel, which is the
 * one argus-shim arms when ARGUS_SHIM_ARM_MAX=1), then LAUNCHES (default
 * 5) launches of async_gemm_cpasync on a 256 x 256 x 1024 problem, and
 * checks every element of C against a CPU reference (a forced wait must
 * not change the result). Prints the kernel's median event time.
 * Exit status: 0; 1 C is wrong; 2 a CUDA call failed; 3 no GPU.
 * Tested: built with nvcc 13.0 here; not yet run on a GPU.
 */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#define DIM_M 256
#define DIM_N 256
#define DIM_K 1024
#define TILE 32

static bool check(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return true;
    const char *s = NULL;
    cuGetErrorString(r, &s);
    fprintf(stderr, "async_run: %s: %s\n", what, s ? s : "unknown CUDA error");
    return false;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: async_run CUBIN [LAUNCHES]\n");
        return 2;
    }
    int launches = argc > 2 ? atoi(argv[2]) : 5;
    if (launches < 1 || launches > 1000) {
        fprintf(stderr, "async_run: LAUNCHES %s: expected 1 to 1000\n", argv[2]);
        return 2;
    }
    int ndev = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&ndev) != CUDA_SUCCESS || ndev == 0) {
        printf("async_run: no GPU present: nothing run\n");
        return 3;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    if (!check(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
        !check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
        !check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent") ||
        !check(cuModuleLoad(&mod, argv[1]), argv[1]) ||
        !check(cuModuleGetFunction(&fn, mod, "async_gemm_cpasync"), "cuModuleGetFunction"))
        return 2;
    std::vector<float> ha((size_t)DIM_M * DIM_K), hb((size_t)DIM_K * DIM_N),
        hc((size_t)DIM_M * DIM_N);
    for (size_t i = 0; i < ha.size(); i++)
        ha[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (size_t i = 0; i < hb.size(); i++)
        hb[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    CUdeviceptr a, b, c, warm;
    const size_t warm_bytes = (size_t)256 << 20;
    if (!check(cuMemAlloc(&a, ha.size() * 4), "cuMemAlloc") ||
        !check(cuMemAlloc(&b, hb.size() * 4), "cuMemAlloc") ||
        !check(cuMemAlloc(&c, hc.size() * 4), "cuMemAlloc") ||
        !check(cuMemAlloc(&warm, warm_bytes), "cuMemAlloc") ||
        !check(cuMemcpyHtoD(a, ha.data(), ha.size() * 4), "cuMemcpyHtoD") ||
        !check(cuMemcpyHtoD(b, hb.data(), hb.size() * 4), "cuMemcpyHtoD"))
        return 2;
    CUevent e0, e1;
    if (!check(cuEventCreate(&e0, 0), "cuEventCreate") ||
        !check(cuEventCreate(&e1, 0), "cuEventCreate"))
        return 2;
    /* About 100 ms of memory traffic, timed until it is. */
    float warm_ms = 0;
    for (int i = 0; i < 400 && warm_ms < 100; i++) {
        float ms = 0;
        if (!check(cuEventRecord(e0, 0), "cuEventRecord") ||
            !check(cuMemsetD32(warm, (unsigned)i, warm_bytes / 4), "cuMemsetD32") ||
            !check(cuEventRecord(e1, 0), "cuEventRecord") ||
            !check(cuEventSynchronize(e1), "warm-up") ||
            !check(cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime"))
            return 2;
        warm_ms += ms;
    }
    int m = DIM_M, n = DIM_N, k = DIM_K;
    void *args[] = {&a, &b, &c, &m, &n, &k};
    std::vector<float> times;
    for (int i = 0; i < launches; i++) {
        float ms = 0;
        if (!check(cuEventRecord(e0, 0), "cuEventRecord") ||
            !check(cuLaunchKernel(fn, DIM_N / TILE, DIM_M / TILE, 1, 128, 1, 1, 0, 0, args, NULL),
                   "cuLaunchKernel") ||
            !check(cuEventRecord(e1, 0), "cuEventRecord") ||
            !check(cuEventSynchronize(e1), "the kernel") ||
            !check(cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime"))
            return 2;
        times.push_back(ms * 1000.0f);
    }
    if (!check(cuMemcpyDtoH(hc.data(), c, hc.size() * 4), "reading C") ||
        !check(cuCtxSynchronize(), "cuCtxSynchronize"))
        return 2;
    size_t bad = 0;
    double worst = 0;
    for (int i = 0; i < DIM_M; i++)
        for (int j = 0; j < DIM_N; j++) {
            double ref = 0;
            for (int kk = 0; kk < DIM_K; kk++)
                ref += (double)ha[(size_t)i * DIM_K + kk] * hb[(size_t)kk * DIM_N + j];
            double err = fabs(ref - hc[(size_t)i * DIM_N + j]);
            worst = err > worst ? err : worst;
            bad += err > 1e-3 * (1.0 + fabs(ref));
        }
    std::sort(times.begin(), times.end());
    printf("async_run: %s: %d launches, median %.2f us (events), warm-up %.0f ms; C: %zu of %d "
           "elements wrong (worst |error| %.3g)\n",
           argv[1], launches, times[times.size() / 2], warm_ms, bad, DIM_M * DIM_N, worst);
    cuModuleUnload(mod);
    return bad ? 1 : 0;
}
