// argus-sass's known-count kernel (tests/argus/test_sass.sh and
// scripts/gpu/argus16_sass.sh): every thread runs the loop `trip` times,
// unrolled not at all, so each instruction of the loop body executes
// trip times per warp and every instruction before the loop once per warp.
// Built for sm_90: nvcc -cubin -arch=sm_90 -o sass_loop.cubin sass_loop.cu
extern "C" __global__ void sass_loop(float *out, int trip)
{
    float a = (float)threadIdx.x;
#pragma unroll 1
    for (int i = 0; i < trip; i++)
        a = a * 1.000001f + 0.5f;
    out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}
