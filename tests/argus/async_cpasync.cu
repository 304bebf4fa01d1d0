/*
 * A K-loop GEMM tile with cp.async double buffering (sm_80 and later,
 * compiled for sm_90), marked with Argus regions, for the discovery and
 * probe tests (tests/argus/test_discover*.{c,sh}, docs/argus-discover.md).
 *
 * One CTA of 128 threads computes a 32 x 32 tile of C = A * B (row-major,
 * M x K times K x N, K a multiple of 32). Each K step stages a 32 x 32
 * tile of A and of B in shared memory with cp.async (16 bytes per thread
 * per copy, two copies per matrix), so that the copy of step k + 1 runs
 * while step k computes: the copies of a step are one commit group, and
 * `cp.async.wait_group 1` lets the newest group stay in flight.
 *
 * Regions: "prologue" (the first step's copies), "mainloop" holding, per
 * iteration, "load" (the next step's copies and the wait) and "mma" (the
 * multiply-accumulate of the current step), and "epilogue" (the store).
 * The K loop keeps `#pragma unroll 1` so that each copy is one PTX
 * instruction that runs once per iteration: the discovery names operations
 * by their place in the code, and an unrolled loop would turn one source
 * copy into several operations.
 *
 * Built: nvcc -std=c++17 -arch=sm_90 -DARGUS_ENABLE -Iinclude -ptx / -cubin
 * (tests/argus/fixtures/discover/README.md has the exact commands).
 */
#include <argus/region.cuh>

#define TILE 32

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait1()
{
    asm volatile("cp.async.wait_group 1;" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait0()
{
    asm volatile("cp.async.wait_group 0;" ::: "memory");
}

/* Thread t copies 16 bytes (4 floats) of rows t/8 and t/8 + 16 of each
 * 32 x 32 tile. */
__device__ __forceinline__ void load_tiles(float (*sa)[TILE], float (*sb)[TILE], const float *a,
                                           const float *b, int k0, int K, int N, int row0,
                                           int col0)
{
    int t = threadIdx.x, r = t / 8, c = (t % 8) * 4;
    cp_async16(&sa[r][c], a + (size_t)(row0 + r) * K + k0 + c);
    cp_async16(&sa[r + 16][c], a + (size_t)(row0 + r + 16) * K + k0 + c);
    cp_async16(&sb[r][c], b + (size_t)(k0 + r) * N + col0 + c);
    cp_async16(&sb[r + 16][c], b + (size_t)(k0 + r + 16) * N + col0 + c);
}

extern "C" __global__ void __launch_bounds__(128)
    async_gemm_cpasync(const float *__restrict__ a, const float *__restrict__ b,
                       float *__restrict__ c, int M, int N, int K)
{
    __shared__ __align__(16) float sa[2][TILE][TILE];
    __shared__ __align__(16) float sb[2][TILE][TILE];
    ARGUS_CTA_BEGIN();
    int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    int t = threadIdx.x, tr = t / 8, tc = (t % 8) * 4;
    float acc[2][4] = {};
    int steps = K / TILE;

    ARGUS_REGION_BEGIN("prologue");
    load_tiles(sa[0], sb[0], a, b, 0, K, N, row0, col0);
    cp_async_commit();
    ARGUS_REGION_END("prologue");

    ARGUS_REGION_BEGIN("mainloop");
#pragma unroll 1
    for (int s = 0; s < steps; s++) {
        ARGUS_ITER(s);
        int cur = s & 1;
        ARGUS_REGION_BEGIN("load");
        if (s + 1 < steps)
            load_tiles(sa[cur ^ 1], sb[cur ^ 1], a, b, (s + 1) * TILE, K, N, row0, col0);
        /* An empty group on the last step keeps wait_group 1's count
         * meaning "the current step's copies are done". */
        cp_async_commit();
        cp_async_wait1();
        __syncthreads();
        ARGUS_REGION_END("load");
        ARGUS_REGION_BEGIN("mma");
#pragma unroll
        for (int kk = 0; kk < TILE; kk++) {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                acc[0][j] += sa[cur][tr][kk] * sb[cur][kk][tc + j];
                acc[1][j] += sa[cur][tr + 16][kk] * sb[cur][kk][tc + j];
            }
        }
        __syncthreads();
        ARGUS_REGION_END("mma");
    }
    ARGUS_REGION_END("mainloop");

    ARGUS_REGION_BEGIN("epilogue");
    cp_async_wait0();
#pragma unroll
    for (int j = 0; j < 4; j++) {
        c[(size_t)(row0 + tr) * N + col0 + tc + j] = acc[0][j];
        c[(size_t)(row0 + tr + 16) * N + col0 + tc + j] = acc[1][j];
    }
    ARGUS_REGION_END("epilogue");
    ARGUS_CTA_END();
}
