/*
 * The argus-pcmap run on the H200 (scripts/gpu/argus16_pcmap.sh): launches
 * the known-ratio kernel g16_calls (gpu_truth_kernels.cu, built with
 * -DARGUS_ENABLE) LAUNCHES times, unarmed, so that libargus_pcmap.so (the
 * CUDA injection library of the run) arms it and maps its PCs. work() runs
 * G16_CALL_A times under callA and G16_CALL_B under callB, G16_CALL_ITERS
 * times per warp, in G16_CTAS x G16_CALL_THREADS threads.
 *
 *   pcmap_prog [LAUNCHES]     exit 0 ran; 2 a CUDA call failed; 3 no GPU
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_truth.h"

extern "C" cudaError_t g16_truth_launch_on(int kind, float *out, g16_spin_rec *log,
                                           cudaStream_t s);

int main(int argc, char **argv)
{
    int launches = argc > 1 ? atoi(argv[1]) : 1;
    if (launches < 1 || launches > 100) {
        fprintf(stderr, "usage: pcmap_prog [LAUNCHES 1..100]\n");
        return 2;
    }
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("pcmap_prog: no GPU present: nothing measured\n");
        return 3;
    }
    float *out = NULL;
    cudaError_t e = cudaMalloc(&out, G16_CTAS * G16_CALL_THREADS * sizeof(float));
    for (int i = 0; e == cudaSuccess && i < launches; i++) {
        e = g16_truth_launch_on(1, out, NULL, 0);
        if (e == cudaSuccess)
            e = cudaDeviceSynchronize();
    }
    if (e != cudaSuccess) {
        fprintf(stderr, "pcmap_prog: %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
        return 2;
    }
    cudaFree(out);
    printf("pcmap_prog: %d launches of g16_calls_on (%u CTAs x %u threads) done\n", launches,
           G16_CTAS, G16_CALL_THREADS);
    return 0;
}
