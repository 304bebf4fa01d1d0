/*
 * A kernel with a known region structure, for the PTX checks
 * (tests/argus/check_ptx.sh) and the H200 run (scripts/gpu/argus_check.sh).
 * Per warp: role "producer" (warp 0 of a CTA) or "consumer", one "outer"
 * region holding ITERS iterations of "load" then "compute", and a "tail"
 * region after it. Markers sit on lines of their own, so that the script can
 * delete them and compare the code that is left.
 */
#include <argus/region.cuh>

#define ITERS 4

extern "C" __global__ void argus_known(float *out, int n)
{
    ARGUS_CTA_BEGIN();
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    if ((threadIdx.x >> 5) == 0) {
        ARGUS_ROLE("producer");
    } else {
        ARGUS_ROLE("consumer");
    }
    ARGUS_REGION_BEGIN("outer");
    for (int i = 0; i < ITERS; i++) {
        ARGUS_ITER(i);
        ARGUS_REGION_BEGIN("load");
        acc += out[(tid + i * 97) % n];
        ARGUS_REGION_END("load");
        ARGUS_REGION_BEGIN("compute");
        for (int k = 0; k < 64; k++)
            acc = acc * 1.0001f + 0.5f;
        ARGUS_REGION_END("compute");
    }
    ARGUS_REGION_END("outer");
    ARGUS_REGION_BEGIN("tail");
    out[tid % n] = acc;
    ARGUS_REGION_END("tail");
    ARGUS_CTA_END();
}
