/*
 * argus-pcmap's device callbacks, loaded by the host tool (pcmap_tool.c)
 * with sanitizerAddPatchesFromFile and called by the CUDA Sanitizer before
 * each patched instruction of an instrumented module (docs/argus-backends.md).
 * Built as a patch fatbin (CMake: nvcc --fatbin --keep-device-functions
 * -Xptxas --compile-as-tools-patch, sm_90): the callbacks are referenced by
 * name only, so they must be kept, unmangled (extern "C"), and not inlined.
 * The logic is pcmap_dev.h's, which the CPU tests run too.
 *
 * Signatures: those of the CUDA 13.0 sanitizer_patching.h callback types
 * (SanitizerCallbackMemoryAccess, ...Barrier, ...Syncwarp, ...Shfl,
 * ...Call, ...Ret, ...BlockExit); the return value is
 * SANITIZER_PATCH_SUCCESS (0), so the warp always continues. Tested on:
 * compiled and its symbols checked here (ctest argus_pcmap_patch); run on
 * the H200 by scripts/gpu/argus16_pcmap.sh.
 */
#include <stdint.h>

#include "pcmap_dev.h"
#include "san_abi.h"

namespace {

/* The warp's slot index, as the markers number warps (record.h: slot = CTA
 * * warps_per_cta + warp, both linear). */
__device__ __forceinline__ uint32_t pcmap_warp(const argus_pcmap_dev *d)
{
    uint32_t cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    uint32_t tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    return cta * d->warps_per_cta + (tid >> 5);
}

/* 1 in the lowest active lane of the warp: the one that counts. */
__device__ __forceinline__ int pcmap_leader()
{
    uint32_t lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    uint32_t mask = __activemask();
    return (uint32_t)(__ffs(mask) - 1) == lane;
}

__device__ __forceinline__ uint32_t pcmap_count(void *ud, uint64_t pc, uint32_t kind)
{
    argus_pcmap_dev *d = (argus_pcmap_dev *)ud;
    if (d == 0 || d->magic != ARGUS_PCMAP_MAGIC)
        return 0;
    if (pcmap_leader())
        argus_pcmap_count(d, pcmap_warp(d), pc, kind);
    return 0;
}

} /* namespace */

extern "C" __device__ __noinline__ uint32_t argus_pcmap_global(void *ud, uint64_t pc, void *ptr,
                                                               uint32_t size, uint32_t flags,
                                                               const void *data)
{
    argus_pcmap_dev *d = (argus_pcmap_dev *)ud;
    if (d == 0 || d->magic != ARGUS_PCMAP_MAGIC)
        return 0;
    uint32_t is_write = (flags & 0x2u) != 0; /* SANITIZER_MEMORY_DEVICE_FLAG_WRITE */
    /* A marker's store is made by lane 0 alone (region.cuh), so the value
     * is this thread's; only an 8-byte write into the ring is read. */
    if (is_write && size == 8u && data != 0 && (uint64_t)(uintptr_t)ptr >= d->rec_lo &&
        (uint64_t)(uintptr_t)ptr < d->rec_hi) {
        uint64_t v = *(const uint64_t *)data;
        if (argus_pcmap_marker(d, pcmap_warp(d), (uint64_t)(uintptr_t)ptr, size, is_write, v))
            return 0;
    }
    return pcmap_count(ud, pc, ARGUS_PCMAP_K_GLOBAL);
}

extern "C" __device__ __noinline__ uint32_t argus_pcmap_shared(void *ud, uint64_t pc, void *ptr,
                                                               uint32_t size, uint32_t flags,
                                                               const void *data)
{
    (void)ptr, (void)size, (void)flags, (void)data;
    return pcmap_count(ud, pc, ARGUS_PCMAP_K_SHARED);
}

extern "C" __device__ __noinline__ uint32_t argus_pcmap_local(void *ud, uint64_t pc, void *ptr,
                                                              uint32_t size, uint32_t flags,
                                                              const void *data)
{
    (void)ptr, (void)size, (void)flags, (void)data;
    return pcmap_count(ud, pc, ARGUS_PCMAP_K_LOCAL);
}

extern "C" __device__ __noinline__ uint32_t argus_pcmap_barrier(void *ud, uint64_t pc,
                                                                uint32_t bar, uint32_t threads,
                                                                uint32_t flags)
{
    (void)bar, (void)threads, (void)flags;
    return pcmap_count(ud, pc, ARGUS_PCMAP_K_BARRIER);
}

extern "C" __device__ __noinline__ uint32_t argus_pcmap_syncwarp(void *ud, uint64_t pc,
                                                                 uint32_t mask)
{
    (void)mask;
    return pcmap_count(ud, pc, ARGUS_PCMAP_K_SYNCWARP);
}

extern "C" __device__ __noinline__ uint32_t argus_pcmap_shfl(void *ud, uint64_t pc)
{
    return pcmap_count(ud, pc, ARGUS_PCMAP_K_SHFL);
}

extern "C" __device__ __noinline__ uint32_t argus_pcmap_call(void *ud, uint64_t pc,
                                                             uint64_t target, uint32_t flags)
{
    (void)target, (void)flags;
    return pcmap_count(ud, pc, ARGUS_PCMAP_K_CALL);
}

extern "C" __device__ __noinline__ uint32_t argus_pcmap_ret(void *ud, uint64_t pc)
{
    return pcmap_count(ud, pc, ARGUS_PCMAP_K_RET);
}

extern "C" __device__ __noinline__ uint32_t argus_pcmap_exit(void *ud, uint64_t pc)
{
    return pcmap_count(ud, pc, ARGUS_PCMAP_K_EXIT);
}
