/*
 * Argus device markers for CUDA C kernels.
 *
 *   #define ARGUS_ENABLE            // or -DARGUS_ENABLE; without it every
 *   #include <argus/region.cuh>     // marker compiles to nothing
 *
 *   __global__ void k(...) {
 *       ARGUS_CTA_BEGIN();                 // once, at the top of the kernel
 *       ARGUS_ROLE("producer");            // optional: this warp's role
 *       ARGUS_REGION_BEGIN("mainloop");
 *       for (int i = 0; i < n; i++) {
 *           ARGUS_ITER(i);                 // optional: loop iteration
 *           ARGUS_REGION_BEGIN("load");
 *           ...
 *           ARGUS_REGION_END("load");
 *       }
 *       ARGUS_REGION_END("mainloop");
 *       ARGUS_CTA_END();                   // once, before every return
 *   }
 *
 * Rules (checked where the compiler can):
 * - A region's ID is a constexpr FNV-1a hash of its name and its lexical
 *   parent's ID (include/argus/record.h), so it survives rebuilds and
 *   program variants. BEGIN opens a C++ block and END closes it, so BEGIN
 *   and END of one region sit in the same block, and an END whose name is
 *   not the innermost open region fails to compile (static_assert). A
 *   variable declared inside a region is not visible after its END.
 * - Markers must be reached by the whole warp (warp-uniform control flow):
 *   lane 0 writes the record and every lane advances its record counter.
 * - Regions in a __device__ function called from a region need the warp's
 *   state: give the function an `argus::Warp &argus_w_` parameter
 *   (ARGUS_WARP_PARAM) and pass ARGUS_WARP_ARG. Its regions' lexical parent
 *   is the root; the decoder nests them under the caller's region at run
 *   time.
 *
 * Cost per marker (enabled): one %clock read, one 8-byte store by lane 0
 * into the warp's own slot, the index mask and address arithmetic (six
 * SASS instructions in straight-line code on sm_90; docs/argus.md has the
 * measured totals); no atomics, no loads from global memory (the
 * descriptor is __constant__). %globaltimer, %smid and %clock64 are read
 * only at ARGUS_CTA_BEGIN and ARGUS_CTA_END.
 *
 * The host finds the descriptor through the module's global symbol
 * ARGUS_DESC_SYMBOL ("argus_desc_v1", cuModuleGetGlobal / cuLibraryGetGlobal)
 * and fills it before the launch (include/argus/argus.h). When the
 * descriptor's buffer is NULL (the host did not arm this launch) markers
 * write nothing. With relocatable device code (-rdc) define
 * ARGUS_DESC_EXTERN in every translation unit but one.
 *
 * Tested with nvcc 13.0 for sm_90 (PTX and SASS checked by
 * tests/argus/check_ptx.sh); not yet run on a GPU (scripts/gpu/argus_check.sh).
 */
#ifndef ARGUS_REGION_CUH
#define ARGUS_REGION_CUH

#include <stdint.h>
#include "record.h"

namespace argus {

/* The compile-time twin of argus_region_id() in record.h. */
__host__ __device__ constexpr uint32_t fnv_step(uint32_t h, uint32_t byte)
{
    return (h ^ byte) * ARGUS_FNV_PRIME;
}
__host__ __device__ constexpr uint32_t fnv_str(uint32_t h, const char *s)
{
    return *s ? fnv_str(fnv_step(h, (uint32_t)(unsigned char)*s), s + 1) : h;
}
__host__ __device__ constexpr uint32_t fold28(uint32_t h)
{
    return ((h ^ (h >> ARGUS_VALUE_BITS)) & ARGUS_VALUE_MASK) == 0
               ? 1u
               : ((h ^ (h >> ARGUS_VALUE_BITS)) & ARGUS_VALUE_MASK);
}
__host__ __device__ constexpr uint32_t region_id(const char *name, uint32_t parent)
{
    return fold28(fnv_str(
        fnv_step(fnv_step(fnv_step(fnv_step(ARGUS_FNV_OFFSET, parent & 0xffu),
                                   (parent >> 8) & 0xffu),
                          (parent >> 16) & 0xffu),
                 (parent >> 24) & 0xffu),
        name));
}

/* Known answers, shared with tests/argus/test_decode.c, so that the device
 * and host hashes cannot drift apart. */
static_assert(region_id("mainloop", 0) == 0xcb827cfu, "argus: region_id drifted from record.h");
static_assert(region_id("load", region_id("mainloop", 0)) == 0xe693e43u,
              "argus: region_id drifted from record.h");

} /* namespace argus */

/* The lexical root: an ARGUS_REGION_BEGIN at function level sees this. */
constexpr uint32_t argus_cur_id_ = 0;

#if defined(ARGUS_ENABLE)
/* Only an enabled build defines the descriptor, so that a disabled build is
 * the same binary as one without markers, and the host can tell the two
 * apart (argus_launch_arm reports ARGUS_ENOTINSTR). */
#if defined(ARGUS_DESC_EXTERN)
extern "C" __constant__ argus_device_desc argus_desc_v1;
#else
extern "C" {
__constant__ argus_device_desc argus_desc_v1 = {0, 0, 0, 0, 0};
}
#endif
#endif

#if defined(ARGUS_ENABLE) && defined(__CUDA_ARCH__)

namespace argus {

/* One warp's writer state, kept in registers. */
struct Warp {
    unsigned long long *rec; /* the slot's record ring, or NULL */
    uint32_t n;              /* records written so far */
    uint32_t mask;
    bool lane0;
};

__device__ __forceinline__ uint32_t clock32()
{
    uint32_t c;
    asm volatile("mov.u32 %0, %%clock;" : "=r"(c));
    return c;
}
__device__ __forceinline__ unsigned long long clock64r()
{
    unsigned long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    return c;
}
__device__ __forceinline__ unsigned long long globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ uint32_t smid()
{
    uint32_t s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

__device__ __forceinline__ argus_slot_header *slot_header(unsigned long long *rec)
{
    return (argus_slot_header *)((char *)rec - ARGUS_SLOT_HEADER_BYTES);
}

__device__ __forceinline__ Warp cta_begin()
{
    Warp w;
    uint32_t tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    uint32_t warp = tid >> 5;
    uint32_t cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    uint32_t slot = cta * argus_desc_v1.warps_per_cta + warp;
    w.n = 0;
    w.mask = argus_desc_v1.cap_mask;
    w.lane0 = (tid & 31u) == 0;
    w.rec = 0;
    /* A launch shaped unlike the one the host armed writes nothing past
     * its slots (the decoder reports the slots it finds misplaced). */
    if (argus_desc_v1.slots != 0 && warp < argus_desc_v1.warps_per_cta &&
        slot < argus_desc_v1.nslots) {
        size_t stride = ARGUS_SLOT_HEADER_BYTES + ((size_t)w.mask + 1) * 8u;
        char *base = (char *)argus_desc_v1.slots + (size_t)slot * stride;
        w.rec = (unsigned long long *)(base + ARGUS_SLOT_HEADER_BYTES);
        if (w.lane0) {
            argus_slot_header *h = (argus_slot_header *)base;
            h->cta = cta;
            h->warp = warp;
            h->smid_start = smid();
            h->gt_start = globaltimer();
            h->clk_start = clock64r();
            h->magic = ARGUS_SLOT_MAGIC;
        }
    }
    return w;
}

__device__ __forceinline__ void emit(Warp &w, uint32_t kind, uint32_t value)
{
    uint32_t c = clock32();
    if (w.rec != 0 && w.lane0)
        w.rec[w.n & w.mask] = ARGUS_REC_MAKE(kind, value, c);
    w.n++;
}

__device__ __forceinline__ void cta_end(Warp &w)
{
    if (w.rec != 0 && w.lane0) {
        argus_slot_header *h = slot_header(w.rec);
        h->clk_end = clock64r();
        h->gt_end = globaltimer();
        h->smid_end = smid();
        h->n_written = w.n;
        h->ended = 1;
    }
}

} /* namespace argus */

#define ARGUS_CTA_BEGIN() argus::Warp argus_w_ = argus::cta_begin()
#define ARGUS_CTA_END() argus::cta_end(argus_w_)
#define ARGUS_WARP_PARAM argus::Warp &argus_w_
#define ARGUS_WARP_ARG argus_w_
#define ARGUS__EMIT(kind, value) argus::emit(argus_w_, (kind), (value))

#else /* markers disabled, or the host pass of nvcc */

namespace argus {
struct Warp {
};
} /* namespace argus */
#define ARGUS_CTA_BEGIN() [[maybe_unused]] argus::Warp argus_w_ = argus::Warp()
#define ARGUS_CTA_END() ((void)argus_w_)
#define ARGUS_WARP_PARAM argus::Warp &argus_w_
#define ARGUS_WARP_ARG argus_w_
#define ARGUS__EMIT(kind, value) ((void)argus_w_, (void)(kind), (void)(value))

#endif

/* The blocks are kept in both builds, so that code that compiles with
 * markers disabled also compiles with them enabled. */
#define ARGUS_REGION_BEGIN(name)                                            \
    {                                                                       \
        constexpr uint32_t argus_pid_ = argus_cur_id_;                      \
        {                                                                   \
            constexpr uint32_t argus_cur_id_ = argus::region_id(name, argus_pid_); \
            ARGUS__EMIT(ARGUS_REC_BEGIN, argus_cur_id_);

#define ARGUS_REGION_END(name)                                              \
    static_assert(argus::region_id(name, argus_pid_) == argus_cur_id_,      \
                  "ARGUS_REGION_END(" #name ") does not close the innermost " \
                  "open ARGUS_REGION_BEGIN");                               \
    ARGUS__EMIT(ARGUS_REC_END, argus_cur_id_);                              \
    }                                                                       \
    }

/* The warp's role (a string literal, hashed with parent 0 at compile time)
 * and the current loop iteration (its low 28 bits); both apply to the
 * regions that follow. */
#define ARGUS_ROLE(name)                                                    \
    do {                                                                    \
        constexpr uint32_t argus_role_ = argus::region_id(name, 0);         \
        ARGUS__EMIT(ARGUS_REC_ROLE, argus_role_);                           \
    } while (0)
#define ARGUS_ITER(i) ARGUS__EMIT(ARGUS_REC_ITER, (uint32_t)(i))

#endif /* ARGUS_REGION_CUH */
