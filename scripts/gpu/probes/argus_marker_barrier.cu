// Which SM clock read sees the end of a __syncthreads? (Argus markers,
// docs/argus.md; the first H200 runs of scripts/gpu/argus16_run.sh with
// CS2R clock reads measured a barrier region of warp 0 at 17 ns where its
// warp waited 7 us.) On sm_90 bar.sync is BAR.SYNC.DEFER_BLOCKING: a warp
// may go on issuing after it, and a clock read that does not wait for it
// then dates the barrier's end too early. Each variant reads the clock
// right before and right after a __syncthreads in a CTA of 8 warps, warp w
// having spun w us first; warp 0 should see about 7 us. Also: cycles
// between two back-to-back reads of each variant (its own cost).
//
//   argus_marker_barrier       prints one JSON line per variant
// Built by scripts/gpu/argus16_run.sh's caller or by hand:
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a argus_marker_barrier.cu
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <algorithm>
#include <vector>

#define CR(x)                                                                            \
    do {                                                                                 \
        cudaError_t e_ = (x);                                                            \
        if (e_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

__device__ __forceinline__ uint64_t gtimer()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <int V> __device__ __forceinline__ uint32_t clk(uint32_t sh)
{
    uint32_t c;
    if (V == 0) { // CS2R: mov of %clock64, low half (the markers of 2026-12-01)
        uint64_t c64;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(c64));
        c = (uint32_t)c64;
    } else if (V == 1) { // S2UR/S2R: mov of %clock (the first markers)
        asm volatile("mov.u32 %0, %%clock;" : "=r"(c));
    } else if (V == 2) { // CS2R after a warp sync
        uint64_t c64;
        asm volatile("bar.warp.sync -1;\n\tmov.u64 %0, %%clock64;" : "=l"(c64));
        c = (uint32_t)c64;
    } else if (V == 3) { // CS2R after a CTA-scope fence
        uint64_t c64;
        asm volatile("fence.acq_rel.cta;\n\tmov.u64 %0, %%clock64;" : "=l"(c64));
        c = (uint32_t)c64;
    } else if (V == 4) { // CS2R made to wait for a shared-memory read
        uint64_t c64;
        asm volatile("{\n\t.reg .u32 t;\n\t.reg .pred q;\n\t"
                     "ld.volatile.shared.u32 t, [%1];\n\t"
                     "setp.ne.u32 q, t, 12345;\n\t"
                     "@q mov.u64 %0, %%clock64;\n\t}"
                     : "=l"(c64)
                     : "r"(sh));
        c = (uint32_t)c64;
    } else if (V == 6) { // CS2R after a nanosleep of 0
        uint64_t c64;
        asm volatile("nanosleep.u32 0;\n\tmov.u64 %0, %%clock64;" : "=l"(c64));
        c = (uint32_t)c64;
    } else { // V == 5: %clock64 read as S2R of the high/low pair via mov.u64 of %clock_hi
        asm volatile("mov.u32 %0, %%clock_hi;" : "=r"(c));
        asm volatile("mov.u32 %0, %%clock;" : "=r"(c));
    }
    return c;
}

constexpr int WARPS = 8, ITERS = 6;

template <int V> __global__ void k_bar(uint32_t *wait, uint64_t *wait_ns, uint32_t *pair)
{
    __shared__ uint32_t pad[32];
    unsigned warp = threadIdx.x >> 5;
    if (threadIdx.x < 32)
        pad[threadIdx.x] = 0;
    __syncthreads();
    uint32_t sh = (uint32_t)__cvta_generic_to_shared(pad);
    for (int i = 0; i < ITERS; i++) {
        uint64_t g0 = gtimer();
        while (gtimer() - g0 < (uint64_t)warp * 1000u) {
        }
        uint64_t a = gtimer();
        uint32_t c0 = clk<V>(sh);
        __syncthreads();
        uint32_t c1 = clk<V>(sh);
        uint64_t b = gtimer();
        if ((threadIdx.x & 31) == 0) {
            wait[i * WARPS + warp] = c1 - c0;
            wait_ns[i * WARPS + warp] = b - a;
        }
    }
    uint32_t p0 = clk<V>(sh);
    uint32_t p1 = clk<V>(sh);
    if (threadIdx.x == 0)
        pair[0] = p1 - p0 + pad[0];
}

template <int V> static int run(const char *name)
{
    uint32_t *d_wait, *d_pair;
    uint64_t *d_ns;
    CR(cudaMalloc(&d_wait, sizeof(uint32_t) * WARPS * ITERS));
    CR(cudaMalloc(&d_ns, sizeof(uint64_t) * WARPS * ITERS));
    CR(cudaMalloc(&d_pair, sizeof(uint32_t)));
    std::vector<double> w0c, w0n, w7c, pairs;
    for (int rep = 0; rep < 20; rep++) {
        k_bar<V><<<1, WARPS * 32>>>(d_wait, d_ns, d_pair);
        CR(cudaDeviceSynchronize());
        uint32_t h_wait[WARPS * ITERS], h_pair;
        uint64_t h_ns[WARPS * ITERS];
        CR(cudaMemcpy(h_wait, d_wait, sizeof(h_wait), cudaMemcpyDeviceToHost));
        CR(cudaMemcpy(h_ns, d_ns, sizeof(h_ns), cudaMemcpyDeviceToHost));
        CR(cudaMemcpy(&h_pair, d_pair, sizeof(h_pair), cudaMemcpyDeviceToHost));
        for (int i = 1; i < ITERS; i++) {
            w0c.push_back(h_wait[i * WARPS + 0]);
            w0n.push_back((double)h_ns[i * WARPS + 0]);
            w7c.push_back(h_wait[i * WARPS + 7]);
        }
        pairs.push_back(h_pair);
    }
    auto med = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    printf("{\"variant\":%d,\"name\":\"%s\",\"warp0_wait_cycles\":%.0f,\"warp0_wait_globaltimer_ns\":%.0f,"
           "\"warp7_wait_cycles\":%.0f,\"back_to_back_cycles\":%.0f}\n",
           V, name, med(w0c), med(w0n), med(w7c), med(pairs));
    return 0;
}

int main()
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = 0;
    rc |= run<0>("cs2r_clock64");
    rc |= run<1>("s2r_clock32");
    rc |= run<2>("warpsync_cs2r");
    rc |= run<3>("fence_cta_cs2r");
    rc |= run<4>("lds_dep_cs2r");
    rc |= run<5>("clock_hi_lo");
    rc |= run<6>("nanosleep0_cs2r");
    return rc;
}
