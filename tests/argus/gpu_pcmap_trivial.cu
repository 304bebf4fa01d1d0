/*
 * The first program of scripts/gpu/argus16_pcmap.sh: one kernel, no Argus
 * regions (so argus-pcmap leaves its module unpatched), launched LAUNCHES
 * times with a synchronisation after each. It tells a hang of the tool's
 * set-up and callbacks (subscription, module load, launch and
 * synchronisation callbacks) from one of the patched region program.
 *
 *   pcmap_trivial [LAUNCHES]   exit 0 ran and the output is right; 2 a CUDA
 *                              call failed or the output is wrong; 3 no GPU
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

__global__ void trivial_fill(int *out, int add)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = i + add;
}

int main(int argc, char **argv)
{
    int launches = argc > 1 ? atoi(argv[1]) : 1;
    if (launches < 1 || launches > 100) {
        fprintf(stderr, "usage: pcmap_trivial [LAUNCHES 1..100]\n");
        return 2;
    }
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("pcmap_trivial: no GPU present: nothing measured\n");
        return 3;
    }
    enum { N = 4 * 128 };
    int *out = NULL, host[N];
    cudaError_t e = cudaMalloc(&out, sizeof host);
    for (int i = 0; e == cudaSuccess && i < launches; i++) {
        trivial_fill<<<4, 128>>>(out, i);
        e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cudaDeviceSynchronize();
    }
    if (e == cudaSuccess)
        e = cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        fprintf(stderr, "pcmap_trivial: %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
        return 2;
    }
    for (int i = 0; i < N; i++)
        if (host[i] != i + launches - 1) {
            fprintf(stderr, "pcmap_trivial: out[%d] = %d, want %d\n", i, host[i], i + launches - 1);
            return 2;
        }
    cudaFree(out);
    printf("pcmap_trivial: %d launches of trivial_fill (4 CTAs x 128 threads) done, output right\n",
           launches);
    return 0;
}
