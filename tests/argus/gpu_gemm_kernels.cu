/*
 * Issue 16's optimisation question: fp32 GEMM (C = A B, row-major, M and N
 * multiples of 64, K a multiple of 16) with Argus regions, in three
 * variants, built twice by scripts/gpu/argus16_gemm.sh: with
 * -DARGUS_ENABLE (names end in _on) and without (_off, the marker-free
 * twin that is timed).
 *
 *   0 base    16x16 tiles staged through shared memory, one output per
 *             thread: per K-tile "load" (global to shared, which waits for
 *             the global loads), "sync", "compute" (16 FMAs), "sync".
 *   1 dbuf    the same tiles, double-buffered: the next tile's global
 *             loads are issued into registers ("load") before computing
 *             the current one, and written to the other buffer after it
 *             ("stage"), so that their latency overlaps the compute and
 *             one barrier per tile remains. The answer to a report where
 *             load or sync time dominates.
 *   2 reg     64x64 tiles, K-tiles of 8, 4x4 outputs per thread in
 *             registers (register blocking): 16 FMAs per 8 shared loads
 *             instead of 1 per 2. The answer to a report where compute
 *             (shared-memory bound FMAs) dominates.
 *
 * Regions are the same names in every variant (mainloop/load, sync,
 * compute, stage; store), so that reports compare. Every marker is reached
 * by whole warps (the branches are CTA-uniform).
 */
#include <cuda_runtime.h>

#include "argus/region.cuh"

#ifdef ARGUS_ENABLE
#define GEMM_NAME(x) x##_on
#else
#define GEMM_NAME(x) x##_off
#endif

#define T 16 /* base/dbuf tile */

__global__ void __launch_bounds__(256) GEMM_NAME(gemm_base)(const float *__restrict__ A,
                                                            const float *__restrict__ B,
                                                            float *__restrict__ C, int N, int K)
{
    ARGUS_CTA_BEGIN();
    __shared__ float As[T][T], Bs[T][T];
    int tx = threadIdx.x % T, ty = threadIdx.x / T;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.f;
    ARGUS_REGION_BEGIN("mainloop");
    for (int kt = 0; kt < K; kt += T) {
        ARGUS_ITER(kt / T);
        ARGUS_REGION_BEGIN("load");
        As[ty][tx] = A[(size_t)row * K + kt + tx];
        Bs[ty][tx] = B[(size_t)(kt + ty) * N + col];
        ARGUS_REGION_END("load");
        ARGUS_REGION_BEGIN("sync");
        __syncthreads();
        ARGUS_REGION_END("sync");
        ARGUS_REGION_BEGIN("compute");
#pragma unroll
        for (int k = 0; k < T; k++)
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        ARGUS_REGION_END("compute");
        ARGUS_REGION_BEGIN("sync");
        __syncthreads();
        ARGUS_REGION_END("sync");
    }
    ARGUS_REGION_END("mainloop");
    ARGUS_REGION_BEGIN("store");
    C[(size_t)row * N + col] = acc;
    ARGUS_REGION_END("store");
    ARGUS_CTA_END();
}

__global__ void __launch_bounds__(256) GEMM_NAME(gemm_dbuf)(const float *__restrict__ A,
                                                            const float *__restrict__ B,
                                                            float *__restrict__ C, int N, int K)
{
    ARGUS_CTA_BEGIN();
    __shared__ float As[2][T][T], Bs[2][T][T];
    int tx = threadIdx.x % T, ty = threadIdx.x / T;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.f;
    As[0][ty][tx] = A[(size_t)row * K + tx];
    Bs[0][ty][tx] = B[(size_t)ty * N + col];
    __syncthreads();
    ARGUS_REGION_BEGIN("mainloop");
    int nt = K / T;
    for (int t = 0; t < nt; t++) {
        ARGUS_ITER(t);
        int cur = t & 1;
        bool next = t + 1 < nt;
        float ra = 0.f, rb = 0.f;
        ARGUS_REGION_BEGIN("load");
        if (next) {
            ra = A[(size_t)row * K + (t + 1) * T + tx];
            rb = B[(size_t)((t + 1) * T + ty) * N + col];
        }
        ARGUS_REGION_END("load");
        ARGUS_REGION_BEGIN("compute");
#pragma unroll
        for (int k = 0; k < T; k++)
            acc = fmaf(As[cur][ty][k], Bs[cur][k][tx], acc);
        ARGUS_REGION_END("compute");
        ARGUS_REGION_BEGIN("stage");
        if (next) {
            As[cur ^ 1][ty][tx] = ra;
            Bs[cur ^ 1][ty][tx] = rb;
        }
        ARGUS_REGION_END("stage");
        /* One barrier: the other buffer was last read before the previous
         * iteration's barrier, and this one publishes what was staged. */
        ARGUS_REGION_BEGIN("sync");
        __syncthreads();
        ARGUS_REGION_END("sync");
    }
    ARGUS_REGION_END("mainloop");
    ARGUS_REGION_BEGIN("store");
    C[(size_t)row * N + col] = acc;
    ARGUS_REGION_END("store");
    ARGUS_CTA_END();
}

#define RT 64 /* reg tile */
#define RK 8  /* reg K-tile */

__global__ void __launch_bounds__(256) GEMM_NAME(gemm_reg)(const float *__restrict__ A,
                                                           const float *__restrict__ B,
                                                           float *__restrict__ C, int N, int K)
{
    ARGUS_CTA_BEGIN();
    __shared__ float As[RK][RT], Bs[RK][RT]; /* A transposed: As[k][m] */
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    size_t row0 = (size_t)blockIdx.y * RT, col0 = (size_t)blockIdx.x * RT;
    float acc[4][4] = {};
    ARGUS_REGION_BEGIN("mainloop");
    for (int kt = 0; kt < K; kt += RK) {
        ARGUS_ITER(kt / RK);
        ARGUS_REGION_BEGIN("load");
#pragma unroll
        for (int q = 0; q < 2; q++) {
            int e = tid * 2 + q;
            As[e % RK][e / RK] = A[(row0 + e / RK) * K + kt + e % RK];
            Bs[e / RT][e % RT] = B[(size_t)(kt + e / RT) * N + col0 + e % RT];
        }
        ARGUS_REGION_END("load");
        ARGUS_REGION_BEGIN("sync");
        __syncthreads();
        ARGUS_REGION_END("sync");
        ARGUS_REGION_BEGIN("compute");
#pragma unroll
        for (int k = 0; k < RK; k++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                a[i] = As[k][ty * 4 + i];
                b[i] = Bs[k][tx * 4 + i];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        ARGUS_REGION_END("compute");
        ARGUS_REGION_BEGIN("sync");
        __syncthreads();
        ARGUS_REGION_END("sync");
    }
    ARGUS_REGION_END("mainloop");
    ARGUS_REGION_BEGIN("store");
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            C[(row0 + ty * 4 + i) * N + col0 + tx * 4 + j] = acc[i][j];
    ARGUS_REGION_END("store");
    ARGUS_CTA_END();
}

extern "C" const void *GEMM_NAME(gemm_kernel)(int variant)
{
    return variant == 0   ? (const void *)GEMM_NAME(gemm_base)
           : variant == 1 ? (const void *)GEMM_NAME(gemm_dbuf)
                          : (const void *)GEMM_NAME(gemm_reg);
}

/* The launch shape of a variant for an M x N output. */
extern "C" void GEMM_NAME(gemm_shape)(int variant, int M, int N, unsigned grid[3],
                                      unsigned block[3])
{
    int tile = variant == 2 ? RT : T;
    grid[0] = (unsigned)(N / tile);
    grid[1] = (unsigned)(M / tile);
    grid[2] = 1;
    block[0] = 256;
    block[1] = block[2] = 1;
}

extern "C" cudaError_t GEMM_NAME(gemm_launch)(int variant, const float *A, const float *B,
                                              float *C, int M, int N, int K, cudaStream_t s)
{
    unsigned g[3], b[3];
    GEMM_NAME(gemm_shape)(variant, M, N, g, b);
    dim3 grid(g[0], g[1]), block(b[0]);
    if (variant == 0)
        GEMM_NAME(gemm_base)<<<grid, block, 0, s>>>(A, B, C, N, K);
    else if (variant == 1)
        GEMM_NAME(gemm_dbuf)<<<grid, block, 0, s>>>(A, B, C, N, K);
    else
        GEMM_NAME(gemm_reg)<<<grid, block, 0, s>>>(A, B, C, N, K);
    return cudaGetLastError();
}
