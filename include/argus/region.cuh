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
 * Cost per marker (enabled), in ptxas 13.0's SASS for sm_90: one %clock64
 * read (CS2R, fixed latency), the ring index and address (LOP3 with the
 * mask in a uniform register, IMAD.WIDE), the record's high word (MOV),
 * one 8-byte store predicated on the warp's write flag (set in lane 0 of
 * an armed warp only; ptxas keeps it in a predicate register) and the
 * count's add: 6.5 instructions and 15 encoded stall cycles per marker in
 * the Fig. 14a compute kernel, armed or not; three registers and a
 * predicate held across the kernel's loops, and the Fig. 14a load loop
 * keeps as many loads in flight as without markers (docs/argus.md, "What a
 * marker costs"; tests/argus/check_ptx.sh gates both). Nothing a warp
 * waits for at a marker (no S2UR clock read; the mask is a fixed-latency
 * ULDC, or, where ptxas keeps it in a vector register, one LDC per warp
 * for all markers), no atomics.
 * %globaltimer and %smid are read only at ARGUS_CTA_BEGIN and ARGUS_CTA_END.
 *
 * The host finds the descriptor through the module's global symbol
 * ARGUS_DESC_SYMBOL ("argus_desc_v1", cuModuleGetGlobal / cuLibraryGetGlobal)
 * and fills it before the launch (include/argus/argus.h). When the
 * descriptor's buffer is NULL (the host did not arm this launch) markers
 * write nothing. With relocatable device code (-rdc) define
 * ARGUS_DESC_EXTERN in every translation unit but one.
 *
 * Tested with nvcc 13.0 for sm_90 (PTX and SASS checked by
 * tests/argus/check_ptx.sh); design 1 run on an H200 (driver 580.159.04)
 * by scripts/gpu/argus16_run.sh (docs/results/2026-12-02-gpu/), design 2
 * not yet (that script times both in one call).
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

/* ARGUS_MARKER_DESIGN picks the device writer: 2, the default (below), or
 * 1, the previous design (c400b64: the ring mask in a register and the
 * clock read predicated), kept only so that scripts/gpu/argus16_run.sh
 * can time both in one device call; all write the same records. The
 * candidates, timed beside them in the same call (issue 16, the markers'
 * code-generation cost; docs/argus.md has the SASS of each):
 *  3  design 2 behind a warp-uniform arming test at every marker
 *     (`argus_desc_v1.slots != 0`, a __constant__ read ptxas keeps in a
 *     predicate across the kernel's loops): an unarmed build runs one
 *     branch per marker instead of the marker; an armed one runs the
 *     branch and the marker (in the Fig. 14a kernels' SASS: 16
 *     instructions and 64 stall cycles per region against design 2's 13
 *     and 30, and the load loop's first wait after 6 loads, not 7);
 *  4  design 2 with the record stored st.global.cs (evict-first,
 *     STG.E.EF): the same SASS but for the store's cache policy, so that
 *     the records do not take L2 lines from a memory-bound body.
 *  5  the floor, not a design: every marker an empty `asm volatile("")`
 *     (no clock read, no store; ARGUS_CTA_BEGIN and _END as design 2), so
 *     the kernel's loops keep the shape any marker forces on them (the
 *     Fig. 14a compute kernel: the inner loop's zero-trip test stays inside
 *     the outer loop, +2 instructions and +18 stall cycles per region of
 *     design 2's +13 and +30). It writes no records: time it, never arm
 *     it for a trace.
 * Remove the losers once the H200 has measured them side by side. */
#if !defined(ARGUS_MARKER_DESIGN)
#define ARGUS_MARKER_DESIGN 2
#endif
#if ARGUS_MARKER_DESIGN < 1 || ARGUS_MARKER_DESIGN > 5
#error "ARGUS_MARKER_DESIGN: 2 (the default), 1 (the previous design), 3 or 4 (candidates), 5 (the floor, writes nothing), for timing them"
#endif

/* One warp's writer state, kept in registers across the kernel's loops,
 * where every register it holds is one that ptxas's budget for full
 * occupancy takes from the kernel: the Fig. 14a load loop (16 loads
 * unrolled, 32 registers in every build) keeps 7 loads in flight before
 * its first wait and waits twice per 16 loads without markers; design 1
 * (four registers of state, and the stale clock words that its predicated
 * clock read keeps live at each marker site) kept 4 and waited 4 times,
 * and the five-register design the H200 measured (98e9fc0, 2026-12-02:
 * +118% at 42 us) kept 1 and waited 6 times. Design 2 holds three registers and a predicate: the ring
 * pointer, the record count, and the write flag, which ptxas keeps in a
 * predicate register, so that a marker makes no test of its own. The
 * ring mask is read from the descriptor at each marker: ptxas loads it
 * once per loop into a uniform register (ULDC, fixed latency; the
 * uniform file is not part of the 32-register budget), which
 * tests/argus/check_ptx.sh checks (no LDC of c[0x3] per marker). Only
 * lane 0 of an armed warp writes, so only lane 0 holds a ring pointer and
 * the flag. (tests/argus/check_ptx.sh and docs/argus.md have the SASS
 * counts of both designs.) */
#if ARGUS_MARKER_DESIGN >= 2
struct Warp {
    unsigned long long *ring; /* lane 0 of a writing warp: its slot's records; else NULL */
    uint32_t n;               /* records written so far */
    uint32_t on;              /* 1 in lane 0 of a writing warp, else 0 */
};
#else
struct Warp {
    unsigned long long *rec; /* lane 0: the slot's record ring; else NULL */
    uint32_t n;              /* records written so far */
    uint32_t mask;           /* lane 0: records per slot - 1; else 0 */
};

/* Design 1 only: hides the mask's origin from ptxas (two bit reversals
 * are the identity and ptxas 13.0 does not fold them), so that it stays in
 * the register it was computed into instead of an LDC per marker. */
__device__ __forceinline__ uint32_t opaque(uint32_t v)
{
    asm("brev.b32 %0, %0;" : "+r"(v));
    asm("brev.b32 %0, %0;" : "+r"(v));
    return v;
}
#endif

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

/* The slot header's *_start fields, written by the warp's writer at
 * ARGUS_CTA_BEGIN; the magic last. */
__device__ __forceinline__ void start_slot(argus_slot_header *h, uint32_t cta, uint32_t warp)
{
    h->cta = cta;
    h->warp = warp;
    h->smid_start = smid();
    h->gt_start = globaltimer();
    h->clk_start = clock64r();
    h->magic = ARGUS_SLOT_MAGIC;
}

#if ARGUS_MARKER_DESIGN >= 2
/* The slot header of this thread's warp if this thread is the warp's
 * writer (lane 0 of a warp inside an armed launch of the armed shape),
 * else NULL; *cta and *warp get the linear CTA and warp indices. A launch
 * shaped unlike the one the host armed writes nothing past its slots (the
 * decoder reports the slots it finds misplaced). */
__device__ __forceinline__ argus_slot_header *writer_slot(uint32_t *cta, uint32_t *warp)
{
    uint32_t tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    *warp = tid >> 5;
    *cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    uint32_t slot = *cta * argus_desc_v1.warps_per_cta + *warp;
    if ((tid & 31u) != 0 || argus_desc_v1.slots == 0 || *warp >= argus_desc_v1.warps_per_cta ||
        slot >= argus_desc_v1.nslots)
        return 0;
    size_t stride = ARGUS_SLOT_HEADER_BYTES + ((size_t)argus_desc_v1.cap_mask + 1) * 8u;
    return (argus_slot_header *)((char *)argus_desc_v1.slots + (size_t)slot * stride);
}
#endif

#if ARGUS_MARKER_DESIGN >= 2
__device__ __forceinline__ Warp cta_begin()
{
    Warp w;
    uint32_t cta, warp;
    argus_slot_header *h = writer_slot(&cta, &warp);
    w.n = 0;
    w.ring = 0;
    w.on = h != 0;
    if (h) {
        w.ring = (unsigned long long *)((char *)h + ARGUS_SLOT_HEADER_BYTES);
        start_slot(h, cta, warp);
    }
    return w;
}
#else
__device__ __forceinline__ argus_slot_header *slot_header(unsigned long long *rec)
{
    return (argus_slot_header *)((char *)rec - ARGUS_SLOT_HEADER_BYTES);
}

/* Design 1's own, as it was (c400b64), so that its SASS is the one timed. */
__device__ __forceinline__ Warp cta_begin()
{
    Warp w;
    uint32_t tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    uint32_t warp = tid >> 5;
    uint32_t cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    uint32_t slot = cta * argus_desc_v1.warps_per_cta + warp;
    uint32_t cap_mask = opaque(argus_desc_v1.cap_mask);
    w.n = 0;
    w.mask = 0;
    w.rec = 0;
    if ((tid & 31u) == 0 && argus_desc_v1.slots != 0 && warp < argus_desc_v1.warps_per_cta &&
        slot < argus_desc_v1.nslots) {
        size_t stride = ARGUS_SLOT_HEADER_BYTES + ((size_t)cap_mask + 1) * 8u;
        char *base = (char *)argus_desc_v1.slots + (size_t)slot * stride;
        w.rec = (unsigned long long *)(base + ARGUS_SLOT_HEADER_BYTES);
        w.mask = cap_mask;
        argus_slot_header *h = (argus_slot_header *)base;
        start_slot(h, cta, warp);
    }
    return w;
}
#endif

/* A marker is a clock read and one predicated 8-byte store, written in
 * PTX so that ptxas keeps the store predicated on the warp's write flag
 * rather than branching around it: inside a branch ptxas reads the 32-bit
 * clock with S2UR, a variable-latency read that the store then waits for
 * on a scoreboard (the first H200 run measured about 70 cycles per
 * marker, armed or not); in straight-line code it reads %clock64 with
 * CS2R, a fixed-latency read of a few cycles. The clock is read right
 * before the store, after the index arithmetic, so that the record's time
 * is as close to the marker's place as the code allows. The record is
 * ARGUS_REC_MAKE(kind, value, clock): the clock in the low word, kind and
 * value in the high one (little-endian v2.u32 = u64). No "memory" clobber:
 * nothing in the kernel reads the ring, and a clobber would stop the
 * compiler from keeping the kernel's own values in registers across the
 * marker.
 *
 * Design 2 reads the clock unpredicated: ptxas executes a predicated
 * CS2R unpredicated anyway and then selects (SEL) between the clock and
 * the registers' old contents, which it must then keep live across the
 * kernel's loops (design 1: two registers per marker site). The record
 * count is advanced by an inline-PTX add: LLVM, seeing `n++`, folds the
 * count into the induction variable of a loop around the markers (n = 2r
 * in the Fig. 14a kernels) and ptxas then tests the loop's exit after the
 * END marker on the count, exposing the predicate-to-branch latency (with
 * `n++` the compute kernel's region costs 112 encoded stall cycles, with
 * the add 96; marker-free 66).
 *
 * A warp sync stands between a preceding __syncthreads and the clock read
 * (ARGUS__CLOCK_FENCE): on sm_90 bar.sync is BAR.SYNC.DEFER_BLOCKING, and
 * a clock read issued right after it does not wait for the barrier.
 * Measured on the H200 (scripts/gpu/probes/argus_marker_barrier.cu,
 * 2026-12-02): a warp that waited 7.0 us at a barrier read 9 cycles
 * between CS2R (or S2UR) clock reads around it, and 13,872 cycles (7,008
 * ns by %globaltimer) with `bar.warp.sync -1` before each read, which
 * costs 6 cycles back to back (37 against 31); `nanosleep.u32 0` also
 * waits but costs 57 (and failed 3 of argus16's 82 truth checks where
 * the warp sync failed none). On the warp-uniform path a marker must be
 * on, the sync is a NOP; ptxas adds a convergence test and an out-of-line
 * copy of the marker for a warp that is not converged, and drops the sync
 * where it can prove the warp converged (the Fig. 14a kernels: no
 * WARPSYNC in their SASS). ARGUS_CLOCK_FENCE_KIND picks: 2 `bar.warp.sync
 * -1` (the default), 1 `nanosleep.u32 0`, 0 none (a marker after a
 * barrier then dates it early).
 */
#if !defined(ARGUS_CLOCK_FENCE_KIND)
#define ARGUS_CLOCK_FENCE_KIND 2
#endif
#if ARGUS_CLOCK_FENCE_KIND == 0 /* none: a marker after a barrier dates it early */
#define ARGUS__CLOCK_FENCE ""
#elif ARGUS_CLOCK_FENCE_KIND == 1
#define ARGUS__CLOCK_FENCE "nanosleep.u32 0;\n\t"
#elif ARGUS_CLOCK_FENCE_KIND == 2
#define ARGUS__CLOCK_FENCE "bar.warp.sync -1;\n\t"
#else
#error "ARGUS_CLOCK_FENCE_KIND: 0 (none), 1 (nanosleep 0) or 2 (bar.warp.sync)"
#endif
/* The record store: design 4 marks it evict-first (.cs). */
#if ARGUS_MARKER_DESIGN == 4
#define ARGUS__REC_STORE "@argus_p st.global.cs.v2.u32 [%0], {argus_l, %1};\n\t"
#else
#define ARGUS__REC_STORE "@argus_p st.global.v2.u32 [%0], {argus_l, %1};\n\t"
#endif
__device__ __forceinline__ void emit(Warp &w, uint32_t kind, uint32_t value)
{
#if ARGUS_MARKER_DESIGN == 3
    /* Warp-uniform (a __constant__ word): a branch, no divergence. */
    if (argus_desc_v1.slots == 0)
        return;
#endif

#if ARGUS_MARKER_DESIGN == 5 /* the floor: no record (above) */
    (void)w;
    (void)kind;
    (void)value;
    asm volatile("");
#elif ARGUS_MARKER_DESIGN >= 2
    uint32_t hi = (kind << ARGUS_VALUE_BITS) | (value & ARGUS_VALUE_MASK);
    /* Outside the writer lane ring is NULL: the address is garbage there,
     * and never stored to. */
    unsigned long long *p = w.ring + (w.n & argus_desc_v1.cap_mask);
    asm volatile("{\n\t"
                 ".reg .pred argus_p;\n\t"
                 ".reg .b64 argus_c;\n\t"
                 ".reg .b32 argus_l;\n\t"
                 ARGUS__CLOCK_FENCE
                 "setp.ne.u32 argus_p, %2, 0;\n\t"
                 "mov.u64 argus_c, %%clock64;\n\t"
                 "cvt.u32.u64 argus_l, argus_c;\n\t"
                 ARGUS__REC_STORE
                 "}"
                 :
                 : "l"(p), "r"(hi), "r"(w.on));
    asm("add.u32 %0, %0, 1;" : "+r"(w.n));
#else
    /* In lanes that do not write, rec is NULL and the mask 0, so that the
     * address is NULL there (the predicate: never stored to). */
    unsigned long long *p = w.rec + (w.n & w.mask);
    uint32_t hi = (kind << ARGUS_VALUE_BITS) | (value & ARGUS_VALUE_MASK);
    asm volatile("{\n\t"
                 ".reg .pred argus_p;\n\t"
                 ".reg .b64 argus_c;\n\t"
                 ".reg .b32 argus_l;\n\t"
                 "setp.ne.u64 argus_p, %0, 0;\n\t"
                 ARGUS__CLOCK_FENCE
                 "@argus_p mov.u64 argus_c, %%clock64;\n\t"
                 "@argus_p cvt.u32.u64 argus_l, argus_c;\n\t"
                 "@argus_p st.global.v2.u32 [%0], {argus_l, %1};\n\t"
                 "}"
                 :
                 : "l"(p), "r"(hi));
    w.n++;
#endif
}

__device__ __forceinline__ void cta_end(Warp &w)
{
#if ARGUS_MARKER_DESIGN >= 2
    if (w.on) {
        argus_slot_header *h = (argus_slot_header *)((char *)w.ring - ARGUS_SLOT_HEADER_BYTES);
#else
    if (w.rec) {
        argus_slot_header *h = slot_header(w.rec);
#endif
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
