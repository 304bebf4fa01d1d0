// argus-sass's GPU program (scripts/gpu/argus16_sass.sh): LAUNCHES launches
// of sass_loop (sass_loop.cu) on 4 blocks of 128 threads (16 warps) with
// trip count TRIP, so that each instruction of its loop executes
// TRIP x 16 times per launch. Exits 3 when there is no GPU. SYNC_EACH 1: a
// cudaDeviceSynchronize after every launch (else one after the last).
//   gpu_sass_main [LAUNCHES [TRIP [SYNC_EACH]]]
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "sass_loop.cu"

int main(int argc, char **argv)
{
    int launches = argc > 1 ? atoi(argv[1]) : 2, trip = argc > 2 ? atoi(argv[2]) : 1000;
    int sync_each = argc > 3 && atoi(argv[3]) == 1;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        fprintf(stderr, "gpu_sass_main: no GPU present\n");
        return 3;
    }
    float *out = nullptr;
    if (cudaMalloc(&out, 512 * sizeof(float)) != cudaSuccess)
        return 1;
    for (int i = 0; i < launches; i++) {
        sass_loop<<<4, 128>>>(out, trip);
        if (sync_each && cudaDeviceSynchronize() != cudaSuccess)
            return 1;
    }
    cudaError_t e = cudaDeviceSynchronize();
    float h[512];
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(out);
    if (e != cudaSuccess || !(h[511] > 0)) {
        fprintf(stderr, "gpu_sass_main: %s\n", cudaGetErrorString(e));
        return 1;
    }
    printf("gpu_sass_main: %d launches of sass_loop<<<4, 128>>>, trip %d\n", launches, trip);
    return 0;
}
