/*
 * Issue 16: kernels whose regions have a known ground truth (gpu_truth.h
 * gives each kernel's structure and the checks, gpu_truth_check.c the
 * checker). Built twice into one program (scripts/gpu/argus16_run.sh): with
 * -DARGUS_ENABLE, where every name ends in _on, and without, _off, so that
 * the marker-free twin of the same source runs in the same process. Each
 * build is its own module, with its own argus_desc_v1 in the _on one.
 *
 * Spins: on %globaltimer for a number of ns (a clock the decoder uses only
 * for the per-CTA anchors, so a region's decoded time is checked against
 * an independent clock), or on %clock64 for a number of cycles.
 */
#include <cuda_runtime.h>

#include <argus/region.cuh>

#include "gpu_truth.h"

#ifdef ARGUS_ENABLE
#define G16_NAME(x) x##_on
#else
#define G16_NAME(x) x##_off
#endif

namespace {

__device__ __forceinline__ unsigned long long g16_gtimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned long long g16_clock()
{
    unsigned long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    return c;
}

/* Spins until %globaltimer has advanced by ns and returns its own readings
 * (gpu_truth.h, "the spins' own log"): the clock before the first timer
 * reading and after the last, so that the cycles cover the whole spin. */
__device__ __forceinline__ g16_spin_rec spin_ns(unsigned ns)
{
    g16_spin_rec r;
    r.clk0 = g16_clock();
    r.gt0 = g16_gtimer();
    unsigned long long t;
    do {
        t = g16_gtimer();
    } while (t - r.gt0 < ns);
    r.gt1 = t;
    r.clk1 = g16_clock();
    return r;
}

/* Lane 0 stores a spin's readings as the warp's k-th log entry; called
 * after the region's END, so that the store lies outside every region. */
__device__ __forceinline__ void log_spin(g16_spin_rec *log, unsigned k, const g16_spin_rec &r)
{
    unsigned warps = blockDim.x >> 5, warp = threadIdx.x >> 5;
    if (log != 0 && (threadIdx.x & 31u) == 0 && k < G16_LOG_PER_WARP)
        log[(blockIdx.x * warps + warp) * G16_LOG_PER_WARP + k] = r;
}

__device__ __forceinline__ void spin_cycles(unsigned cycles)
{
    unsigned long long c0 = g16_clock();
    while (g16_clock() - c0 < cycles) {
    }
}

/* Not inlined, so that it is one function called from two regions, as in a
 * real kernel's shared helper; its region nests under the caller's at run
 * time (the decoder's dynamic tree). */
__device__ __noinline__ float work(ARGUS_WARP_PARAM, float x)
{
    ARGUS_REGION_BEGIN("work");
    spin_cycles(G16_WORK_CYCLES);
    x = x * 1.0001f + 1.0f;
    ARGUS_REGION_END("work");
    return x;
}

} /* namespace */

__global__ void G16_NAME(g16_spin)(float *out, g16_spin_rec *log)
{
    ARGUS_CTA_BEGIN();
    for (unsigned r = 0; r < G16_SPIN_REPS; r++) {
        g16_spin_rec t;
        ARGUS_REGION_BEGIN("spin2us");
        t = spin_ns(2000);
        ARGUS_REGION_END("spin2us");
        log_spin(log, r * G16_SPIN_GT_REGIONS + 0, t);
        ARGUS_REGION_BEGIN("spin5us");
        t = spin_ns(5000);
        ARGUS_REGION_END("spin5us");
        log_spin(log, r * G16_SPIN_GT_REGIONS + 1, t);
        ARGUS_REGION_BEGIN("spin10us");
        t = spin_ns(10000);
        ARGUS_REGION_END("spin10us");
        log_spin(log, r * G16_SPIN_GT_REGIONS + 2, t);
        ARGUS_REGION_BEGIN("clk20k");
        spin_cycles(G16_CLK_CYCLES);
        ARGUS_REGION_END("clk20k");
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
    ARGUS_CTA_END();
}

__global__ void G16_NAME(g16_calls)(float *out, g16_spin_rec *log)
{
    (void)log; /* no globaltimer spins here: the work() spin is on %clock64 */
    ARGUS_CTA_BEGIN();
    float x = (float)threadIdx.x;
    for (unsigned i = 0; i < G16_CALL_ITERS; i++) {
        ARGUS_REGION_BEGIN("callA");
        for (unsigned k = 0; k < G16_CALL_A; k++)
            x = work(ARGUS_WARP_ARG, x);
        ARGUS_REGION_END("callA");
        ARGUS_REGION_BEGIN("callB");
        for (unsigned k = 0; k < G16_CALL_B; k++)
            x = work(ARGUS_WARP_ARG, x);
        ARGUS_REGION_END("callB");
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x;
    ARGUS_CTA_END();
}

__global__ void G16_NAME(g16_barrier)(float *out, g16_spin_rec *log)
{
    ARGUS_CTA_BEGIN();
    unsigned warp = threadIdx.x >> 5;
    for (unsigned i = 0; i < G16_BAR_ITERS; i++) {
        g16_spin_rec t;
        ARGUS_REGION_BEGIN("skew");
        t = spin_ns(warp * G16_BAR_SKEW_NS);
        ARGUS_REGION_END("skew");
        log_spin(log, i, t);
        ARGUS_REGION_BEGIN("bar");
        __syncthreads();
        ARGUS_REGION_END("bar");
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = (float)warp;
    ARGUS_CTA_END();
}

__global__ void G16_NAME(g16_roles)(float *out, g16_spin_rec *log)
{
    __shared__ float tile[32];
    ARGUS_CTA_BEGIN();
    bool producer = (threadIdx.x >> 5) == 0;
    if (producer) {
        ARGUS_ROLE("producer");
    } else {
        ARGUS_ROLE("consumer");
    }
    float acc = 0.0f;
    for (unsigned i = 0; i < G16_ROLE_ITERS; i++) {
        if (producer) {
            g16_spin_rec t;
            ARGUS_REGION_BEGIN("produce");
            t = spin_ns(G16_PRODUCE_NS);
            tile[threadIdx.x] = (float)(i + threadIdx.x);
            ARGUS_REGION_END("produce");
            log_spin(log, i, t);
        }
        /* The barriers sit outside the role branches, so that every thread
         * of the CTA reaches the same __syncthreads. */
        ARGUS_REGION_BEGIN("handoff");
        __syncthreads();
        ARGUS_REGION_END("handoff");
        if (!producer) {
            g16_spin_rec t;
            ARGUS_REGION_BEGIN("consume");
            t = spin_ns(G16_CONSUME_NS);
            acc += tile[threadIdx.x & 31u];
            ARGUS_REGION_END("consume");
            log_spin(log, i, t);
        }
        ARGUS_REGION_BEGIN("drain");
        __syncthreads();
        ARGUS_REGION_END("drain");
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
    ARGUS_CTA_END();
}

/* Host-side launchers, so that the main program (another translation
 * unit) reaches both builds' kernels by name. kind: 0 spin, 1 calls,
 * 2 barrier, 3 roles. */
static const unsigned g16_threads[4] = {G16_SPIN_THREADS, G16_CALL_THREADS, G16_BAR_WARPS * 32u,
                                        G16_ROLE_WARPS * 32u};

extern "C" unsigned G16_NAME(g16_truth_threads)(int kind)
{
    return kind >= 0 && kind < 4 ? g16_threads[kind] : 0u;
}

extern "C" const void *G16_NAME(g16_truth_kernel)(int kind)
{
    switch (kind) {
    case 0:
        return (const void *)G16_NAME(g16_spin);
    case 1:
        return (const void *)G16_NAME(g16_calls);
    case 2:
        return (const void *)G16_NAME(g16_barrier);
    case 3:
        return (const void *)G16_NAME(g16_roles);
    default:
        return 0;
    }
}

/* log: G16_LOG_ENTRIES entries (gpu_truth.h), or NULL. */
extern "C" cudaError_t G16_NAME(g16_truth_launch)(int kind, float *out, g16_spin_rec *log,
                                                  cudaStream_t s)
{
    const void *k = G16_NAME(g16_truth_kernel)(kind);
    if (k == 0)
        return cudaErrorInvalidValue;
    void *args[] = {&out, &log};
    return cudaLaunchKernel(k, dim3(G16_CTAS), dim3(g16_threads[kind]), args, 0, s);
}
