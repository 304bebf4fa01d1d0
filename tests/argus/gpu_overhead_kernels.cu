/*
 * Issue 16: the marker-overhead kernels of the Argus paper's Fig. 14a.
 * G16_OVH_CTAS x G16_OVH_THREADS threads; every warp runs G16_OVH_REGIONS
 * sequential occurrences of region "body", whose body is either
 *  - compute: `iters` x G16_OVH_FMAS dependent FMAs (latency bound), or
 *  - memory: `iters` coalesced global loads per thread, striding through
 *    an input larger than L2 (bandwidth bound).
 * Built three times into one program (scripts/gpu/argus16_run.sh): with
 * -DARGUS_ENABLE (names end in _on), without (_off), and with the previous
 * marker design (-DARGUS_ENABLE -DARGUS_MARKER_DESIGN=1 -DG16_PREV: _prev,
 * include/argus/region.cuh), and with each candidate design
 * (-DARGUS_ENABLE -DARGUS_MARKER_DESIGN=N -DG16_TAG=dN: _dN), the same
 * source, so that the marker-free build and every marker design are timed
 * in the same process, interleaved. tests/argus/check_ptx.sh gates the SASS of these kernels.
 */
#include <cuda_runtime.h>

#include <argus/region.cuh>

#include "gpu_truth.h"

#if defined(G16_PREV) && !(defined(ARGUS_ENABLE) && ARGUS_MARKER_DESIGN == 1)
#error "G16_PREV: build with -DARGUS_ENABLE -DARGUS_MARKER_DESIGN=1"
#endif
/* G16_TAG=d3 (with -DARGUS_ENABLE -DARGUS_MARKER_DESIGN=3): the names end
 * in _d3, so that every candidate marker design (region.cuh) is a build of
 * its own in the same program. */
#define G16_CAT2(x, t) x##_##t
#define G16_CAT(x, t) G16_CAT2(x, t)
#if defined(G16_TAG) && (defined(G16_PREV) || !defined(ARGUS_ENABLE))
#error "G16_TAG: build with -DARGUS_ENABLE -DARGUS_MARKER_DESIGN=N, without G16_PREV"
#endif
#if defined(G16_TAG)
#define G16_NAME(x) G16_CAT(x, G16_TAG)
#elif defined(G16_PREV)
#define G16_NAME(x) x##_prev
#elif defined(ARGUS_ENABLE)
#define G16_NAME(x) x##_on
#else
#define G16_NAME(x) x##_off
#endif

__global__ void G16_NAME(g16_ovh_compute)(float *out, int iters)
{
    ARGUS_CTA_BEGIN();
    unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    float a = (float)tid * 1e-6f, b = 0.999f, c = 1e-3f;
    for (unsigned r = 0; r < G16_OVH_REGIONS; r++) {
        ARGUS_REGION_BEGIN("body");
        for (int i = 0; i < iters; i++) {
#pragma unroll
            for (unsigned k = 0; k < G16_OVH_FMAS; k++)
                a = fmaf(a, b, c);
        }
        ARGUS_REGION_END("body");
    }
    out[tid] = a;
    ARGUS_CTA_END();
}

/* mask: input elements - 1 (a power of two), so the index wraps. */
__global__ void G16_NAME(g16_ovh_memory)(const float *__restrict__ in, float *out, int iters,
                                         unsigned mask)
{
    ARGUS_CTA_BEGIN();
    unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned stride = gridDim.x * blockDim.x;
    unsigned idx = tid;
    float acc = 0.0f;
    for (unsigned r = 0; r < G16_OVH_REGIONS; r++) {
        ARGUS_REGION_BEGIN("body");
        for (int i = 0; i < iters; i++) {
            acc += in[idx & mask];
            idx += stride;
        }
        ARGUS_REGION_END("body");
    }
    out[tid] = acc;
    ARGUS_CTA_END();
}

/* body: 0 compute, 1 memory. */
extern "C" const void *G16_NAME(g16_ovh_kernel)(int body)
{
    return body == 0 ? (const void *)G16_NAME(g16_ovh_compute)
                     : (const void *)G16_NAME(g16_ovh_memory);
}

extern "C" cudaError_t G16_NAME(g16_ovh_launch)(int body, const float *in, float *out, int iters,
                                                unsigned mask, cudaStream_t s)
{
    if (body == 0) {
        void *args[] = {&out, &iters};
        return cudaLaunchKernel(G16_NAME(g16_ovh_kernel)(0), dim3(G16_OVH_CTAS),
                                dim3(G16_OVH_THREADS), args, 0, s);
    }
    void *args[] = {(void *)&in, &out, &iters, &mask};
    return cudaLaunchKernel(G16_NAME(g16_ovh_kernel)(1), dim3(G16_OVH_CTAS), dim3(G16_OVH_THREADS),
                            args, 0, s);
}
