// A program whose second kernel faults (a store through a bad pointer):
// for checking that the shim and the capture library leave the program's
// own error handling intact and do not hang (scripts/gpu/robustness.sh).
//
// Build: nvcc -arch=sm_90 -O2 -o fault_prog fault_prog.cu
// Prints "good kernel ok" after the first kernel, then the CUDA error of the
// faulting one, and exits 3 (the fault) or 1 (anything else failed).
#include <cuda_runtime.h>

#include <cstdio>

__global__ void good(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2.0f * i;
}

__global__ void bad(float *x)
{
    // far outside any allocation: an illegal address
    x[threadIdx.x + (1ull << 40) / sizeof(float)] = 1.0f;
}

int main()
{
    const int n = 1 << 20;
    float *d = nullptr, h = 0;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return 1;
    good<<<n / 256, 256>>>(d, n);
    if (cudaDeviceSynchronize() != cudaSuccess) return 1;
    if (cudaMemcpy(&h, d + 10, sizeof(h), cudaMemcpyDeviceToHost) != cudaSuccess || h != 20.0f)
        return 1;
    std::printf("good kernel ok\n");
    std::fflush(stdout);
    bad<<<1, 32>>>(d);
    cudaError_t e = cudaDeviceSynchronize();
    std::printf("faulting kernel: %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
    return e == cudaErrorIllegalAddress ? 3 : 1;
}
