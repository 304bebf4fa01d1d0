// Three kernels whose bottleneck is their design, for scripts/gpu/argus_metrics.sh
// (argus-shim --hw-metrics on the H200):
//   am_copy   streams 1 GiB of float4 in and out, 4 x 132 x 8 blocks of 256
//             threads, grid-stride: DRAM bandwidth (memory-bandwidth);
//   am_fma    a chain of 4 independent FMA streams per thread, 264 x 256
//             threads, no memory in the loop: the FMA pipe (compute-pipe fma);
//   am_chase  one warp per SM follows a random pointer chain through 256 MiB:
//             each load waits for the last (latency-bound).
// Each runs 3 times (one configuration each); the program checks nothing
// itself and prints a line per kernel.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x)                                                                      \
    do {                                                                           \
        cudaError_t e_ = (x);                                                      \
        if (e_ != cudaSuccess) {                                                   \
            fprintf(stderr, "argus_metrics_prog: %s: %s\n", #x, cudaGetErrorString(e_)); \
            return 3;                                                              \
        }                                                                          \
    } while (0)

__global__ void am_copy(const float4 *__restrict__ in, float4 *__restrict__ out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[i];
}

__global__ void am_fma(float *out, float a, float b, int iters)
{
    float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;
    for (int i = 0; i < iters; i++) {
        x0 = fmaf(x0, a, b);
        x1 = fmaf(x1, a, b);
        x2 = fmaf(x2, a, b);
        x3 = fmaf(x3, a, b);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3;
}

__global__ void am_chase(const unsigned *__restrict__ next, unsigned *out, int steps)
{
    unsigned p = (blockIdx.x * 7919u + threadIdx.x * 104729u) & (1u << 26) - 1;
    for (int i = 0; i < steps; i++)
        p = next[p];
    out[blockIdx.x * blockDim.x + threadIdx.x] = p;
}

int main()
{
    int dev = 0;
    if (cudaGetDeviceCount(&dev) != cudaSuccess || dev == 0) {
        fprintf(stderr, "argus_metrics_prog: no GPU present: nothing measured\n");
        return 3;
    }
    const size_t n4 = (512u << 20) / sizeof(float4); // 512 MiB in, 512 MiB out
    const size_t nchase = 1u << 26;                  // 256 MiB of indices
    float4 *in, *out;
    float *fout;
    unsigned *next, *cout;
    CK(cudaMalloc(&in, n4 * sizeof(float4)));
    CK(cudaMalloc(&out, n4 * sizeof(float4)));
    CK(cudaMalloc(&fout, 264 * 256 * sizeof(float)));
    CK(cudaMalloc(&next, nchase * sizeof(unsigned)));
    CK(cudaMalloc(&cout, 132 * 32 * sizeof(unsigned)));
    CK(cudaMemset(in, 0, n4 * sizeof(float4)));
    // A random permutation-like chain (a full-period LCG over 2^26), made on the host.
    unsigned *h = (unsigned *)malloc(nchase * sizeof(unsigned));
    if (h == NULL)
        return 3;
    for (size_t i = 0; i < nchase; i++)
        h[i] = (unsigned)((i * 1664525u + 1013904223u) & (nchase - 1));
    CK(cudaMemcpy(next, h, nchase * sizeof(unsigned), cudaMemcpyHostToDevice));
    free(h);
    for (int r = 0; r < 3; r++) {
        am_copy<<<4 * 132 * 8, 256>>>(in, out, n4);
        am_fma<<<264, 256>>>(fout, 0.999f, 0.001f, 1 << 16);
        am_chase<<<132, 32>>>(next, cout, 1 << 14);
        CK(cudaGetLastError());
    }
    CK(cudaDeviceSynchronize());
    printf("argus_metrics_prog: am_copy, am_fma, am_chase launched 3 times each\n");
    return 0;
}
