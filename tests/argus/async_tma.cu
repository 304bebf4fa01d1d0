/*
 * A K-loop with TMA bulk tensor loads completed through an mbarrier, and
 * a wgmma on the loaded tiles, for sm_90a; marked with Argus regions, for
 * the discovery and probe tests (tests/argus/test_discover*.{c,sh},
 * docs/argus-discover.md).
 *
 * One CTA of 128 threads (one warpgroup). The host encodes two 2-D
 * tensor maps with cuTensorMapEncodeTiled (A: M x K f16, box 64 x 16;
 * B: N x K f16, box 8 x 16) and passes them as __grid_constant__
 * parameters. Per K step of 16, thread 0 arms the stage's mbarrier with
 * `mbarrier.arrive.expect_tx` (the bytes both loads bring) and issues the
 * next stage's two `cp.async.bulk.tensor` loads, which complete on that
 * mbarrier (complete_tx); every thread waits for the current stage with
 * `mbarrier.try_wait.parity`, then the warpgroup issues one
 * `wgmma.mma_async` (m64n8k16, f32 += f16 x f16, both operands from
 * shared memory) and commits it; `wgmma.wait_group 1` then lets it stay in
 * flight across the next step's loads (the previous step's is done, so its
 * stage may be overwritten), and the epilogue waits for the last with
 * `wgmma.wait_group 0`.
 *
 * Regions: "prologue" (barrier set-up and the first stage's loads),
 * "mainloop" holding, per iteration, "load" (issue of the next stage and
 * the wait for the current one) and "mma" (the wgmma and the wait for the
 * previous one), and "epilogue". The K loop keeps `#pragma unroll 1` (one PTX instruction per
 * operation and iteration; async_cpasync.cu says why).
 *
 * What is checked: the PTX and SASS of this file (discovery, probes); the
 * wgmma's operand descriptors use the no-swizzle layout with the tiles as
 * TMA writes them, which is not wgmma's core-matrix order, so its numbers
 * are not a checked GEMM: this kernel has not been run for its results.
 *
 * Built: nvcc -std=c++17 -arch=sm_90a -DARGUS_ENABLE -Iinclude -ptx / -cubin
 * (tests/argus/fixtures/discover/README.md has the exact commands).
 */
#include <cuda.h>
#include <stdint.h>

#include <argus/region.cuh>

#define BM 64
#define BN 8
#define BK 16

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count)
                 : "memory");
}
/* Arrives once and adds the bytes the stage's loads will bring to the
 * phase's transaction count; the phase completes when both have. */
__device__ __forceinline__ void mbar_expect(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    asm volatile("{\n\t"
                 ".reg .pred done;\n\t"
                 "wait_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra wait_%=;\n\t"
                 "}" ::"r"(smem_addr(bar)),
                 "r"(parity)
                 : "memory");
}
__device__ __forceinline__ void tma_load_2d(void *smem, const CUtensorMap *map, int x, int y,
                                            uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(smem)),
                 "l"((uint64_t)map), "r"(x), "r"(y), "r"(smem_addr(bar))
                 : "memory");
}
/* A shared-memory matrix descriptor without swizzling: start address,
 * leading and stride byte offsets, all in 16-byte units. */
__device__ __forceinline__ uint64_t smem_desc(const void *p, uint32_t lead, uint32_t stride)
{
    uint64_t d = (smem_addr(p) & 0x3ffffu) >> 4;
    d |= (uint64_t)((lead >> 4) & 0x3fffu) << 16;
    d |= (uint64_t)((stride >> 4) & 0x3fffu) << 32;
    return d;
}
__device__ __forceinline__ void wgmma_m64n8k16(float (&d)[4], uint64_t da, uint64_t db)
{
    asm volatile("wgmma.fence.sync.aligned;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"
                 " {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\n\t"
                 "wgmma.commit_group.sync.aligned;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(da), "l"(db)
                 : "memory");
}
__device__ __forceinline__ void wgmma_wait1()
{
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
}
__device__ __forceinline__ void wgmma_wait0()
{
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(128)
    async_tma_wgmma(const __grid_constant__ CUtensorMap map_a,
                    const __grid_constant__ CUtensorMap map_b, float *__restrict__ c, int N,
                    int K)
{
    __shared__ __align__(128) uint16_t sa[2][BM * BK];
    __shared__ __align__(128) uint16_t sb[2][BN * BK];
    __shared__ __align__(8) uint64_t bar[2];
    ARGUS_CTA_BEGIN();
    const uint32_t stage_bytes = (BM * BK + BN * BK) * sizeof(uint16_t);
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    int steps = K / BK;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};

    ARGUS_REGION_BEGIN("prologue");
    if (threadIdx.x == 0) {
        mbar_init(&bar[0], 1);
        mbar_init(&bar[1], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        mbar_expect(&bar[0], stage_bytes);
        tma_load_2d(sa[0], &map_a, 0, m0, &bar[0]);
        tma_load_2d(sb[0], &map_b, 0, n0, &bar[0]);
    }
    ARGUS_REGION_END("prologue");

    ARGUS_REGION_BEGIN("mainloop");
#pragma unroll 1
    for (int s = 0; s < steps; s++) {
        ARGUS_ITER(s);
        int cur = s & 1;
        ARGUS_REGION_BEGIN("load");
        if (threadIdx.x == 0 && s + 1 < steps) {
            mbar_expect(&bar[cur ^ 1], stage_bytes);
            tma_load_2d(sa[cur ^ 1], &map_a, (s + 1) * BK, m0, &bar[cur ^ 1]);
            tma_load_2d(sb[cur ^ 1], &map_b, (s + 1) * BK, n0, &bar[cur ^ 1]);
        }
        /* Stage `cur` completes its phase once every two steps. */
        mbar_wait(&bar[cur], (uint32_t)(s >> 1) & 1u);
        ARGUS_REGION_END("load");
        ARGUS_REGION_BEGIN("mma");
        wgmma_m64n8k16(acc, smem_desc(sa[cur], 128, 256), smem_desc(sb[cur], 128, 256));
        /* The previous step's wgmma is done after this wait, so that the
         * next step's loads may overwrite its stage; this one stays in
         * flight across the next step's load. */
        wgmma_wait1();
        __syncthreads();
        ARGUS_REGION_END("mma");
    }
    ARGUS_REGION_END("mainloop");

    ARGUS_REGION_BEGIN("epilogue");
    wgmma_wait0();
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    int row = m0 + w * 16 + l / 4, col = n0 + (l % 4) * 2;
    c[(size_t)row * N + col] = acc[0];
    c[(size_t)row * N + col + 1] = acc[1];
    c[(size_t)(row + 8) * N + col] = acc[2];
    c[(size_t)(row + 8) * N + col + 1] = acc[3];
    ARGUS_REGION_END("epilogue");
    ARGUS_CTA_END();
}
