/*
 * An instrumented program for argus-shim's arming on the GPU
 * (scripts/gpu/argus_shim_torch.sh, part B): the GEMM kernels of
 * gpu_gemm_kernels.cu built with -DARGUS_ENABLE and the registry embedded
 * (-include of the header `argus registry --embed` writes), launched as an
 * unmodified program would launch them, inside an NVTX range "gemm":
 * base twice on the default stream, reg once on a stream of its own after
 * a synchronisation (one armed launch per module at a time), then
 * cudaDeviceSynchronize. It never arms anything itself: the regions in
 * argus-shim's report come from the shim alone.
 *   gpu_gemm_shim SIZE   (a multiple of 64; 256 by default)
 * Exit 0, 2 on a CUDA error, 3 without a GPU.
 */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>

extern "C" cudaError_t gemm_launch_on(int variant, const float *A, const float *B, float *C,
                                      int M, int N, int K, cudaStream_t s);

static bool ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        fprintf(stderr, "gpu_gemm_shim: %s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 256;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("gpu_gemm_shim: no GPU present\n");
        return 3;
    }
    if (n < 64 || n % 64) {
        fprintf(stderr, "gpu_gemm_shim: SIZE %d: use a multiple of 64\n", n);
        return 2;
    }
    size_t bytes = (size_t)n * n * sizeof(float);
    float *A, *B, *C;
    cudaStream_t s;
    if (!ok(cudaMalloc(&A, bytes), "cudaMalloc") || !ok(cudaMalloc(&B, bytes), "cudaMalloc") ||
        !ok(cudaMalloc(&C, bytes), "cudaMalloc") || !ok(cudaMemset(A, 0, bytes), "cudaMemset") ||
        !ok(cudaMemset(B, 0, bytes), "cudaMemset") ||
        !ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"))
        return 2;
    nvtxRangePushA("gemm");
    bool good = ok(gemm_launch_on(0, A, B, C, n, n, n, 0), "base launch") &&
                ok(gemm_launch_on(0, A, B, C, n, n, n, 0), "base launch") &&
                ok(cudaDeviceSynchronize(), "sync") &&
                ok(gemm_launch_on(2, A, B, C, n, n, n, s), "reg launch") &&
                ok(cudaDeviceSynchronize(), "sync");
    nvtxRangePop();
    printf("gpu_gemm_shim: 3 launches at %d^3: %s\n", n, good ? "ok" : "failed");
    return good ? 0 : 2;
}
