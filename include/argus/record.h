/*
 * Argus: the layout of the region buffer that the device writes and the host
 * decodes. This header is shared by CUDA C device code (region.cuh) and the
 * C host runtime, so that the two cannot disagree about a field.
 *
 * The buffer of one instrumented launch:
 *
 *   argus_buf_header   64 bytes, written by the host before the launch
 *   slot 0             one per warp of the grid, in (CTA, warp) order:
 *     argus_slot_header  64 bytes, written by lane 0 of the warp at
 *                        ARGUS_CTA_BEGIN/ARGUS_CTA_END
 *     records[cap]       8-byte records, a ring of cap (a power of two)
 *   slot 1 ...
 *
 * A record is one 64-bit word: the high 32 bits hold the kind (4 bits) and a
 * 28-bit value (a region ID, an iteration number or a role ID), the low 32
 * bits the SM clock (%clock) when the marker ran. The record is that small so
 * that a marker costs one 8-byte store; the 32-bit clock wraps after 2^32
 * cycles (2.2 s at 1.98 GHz), and the decoder unwraps it from the previous
 * record of the same warp, so two consecutive markers of a warp must be less
 * than 2^32 cycles apart.
 */
#ifndef ARGUS_RECORD_H
#define ARGUS_RECORD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARGUS_BUF_MAGIC 0x42475241u  /* "ARGB" little-endian */
#define ARGUS_SLOT_MAGIC 0x57475241u /* "ARGW" little-endian */
#define ARGUS_FORMAT_VERSION 1u
#define ARGUS_HEADER_BYTES 64u
#define ARGUS_SLOT_HEADER_BYTES 64u

/* The device-global descriptor that the host sets through cuModuleGetGlobal
 * before an instrumented launch; kernels find their buffer through it, so
 * no kernel signature changes. Its name is unmangled (extern "C"). */
#define ARGUS_DESC_SYMBOL "argus_desc_v1"

/* Record kinds (4 bits). Kind 0 is never written, so a zeroed word inside
 * the written part of a ring is recognisably not a record. */
#define ARGUS_KINDS(X)                                                 \
    X(ARGUS_REC_BEGIN, 1, "region begin")                              \
    X(ARGUS_REC_END, 2, "region end")                                  \
    X(ARGUS_REC_ITER, 3, "loop iteration (value: iteration number)")   \
    X(ARGUS_REC_ROLE, 4, "warp role (value: role ID)")

enum argus_rec_kind {
#define ARGUS_X_KIND(name, value, what) name = value,
    ARGUS_KINDS(ARGUS_X_KIND)
#undef ARGUS_X_KIND
};

#define ARGUS_VALUE_BITS 28u
#define ARGUS_VALUE_MASK ((1u << ARGUS_VALUE_BITS) - 1u)

#define ARGUS_REC_MAKE(kind, value, clock32)                                  \
    ((((uint64_t)(((uint32_t)(kind) << ARGUS_VALUE_BITS) |                    \
                  ((uint32_t)(value) & ARGUS_VALUE_MASK))) << 32) |           \
     (uint64_t)(uint32_t)(clock32))
#define ARGUS_REC_KIND(rec) ((uint32_t)((rec) >> 60))
#define ARGUS_REC_VALUE(rec) ((uint32_t)((rec) >> 32) & ARGUS_VALUE_MASK)
#define ARGUS_REC_CLOCK(rec) ((uint32_t)(rec))

/* Written by the host; the device only reads nslots/cap (from the
 * descriptor). grid/block are what the host launched, kept so that a raw
 * buffer saved to a file describes itself. */
typedef struct argus_buf_header {
    uint32_t magic;         /* ARGUS_BUF_MAGIC */
    uint16_t version;       /* ARGUS_FORMAT_VERSION */
    uint16_t header_bytes;  /* ARGUS_HEADER_BYTES */
    uint32_t nslots;        /* warps in the grid: CTAs * warps_per_cta */
    uint32_t cap;           /* records per slot, a power of two */
    uint32_t warps_per_cta; /* ceil(threads per CTA / 32) */
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t reserved[5];
} argus_buf_header;

/* Written by lane 0 of each warp: the *_start fields at ARGUS_CTA_BEGIN,
 * the *_end fields and n_written at ARGUS_CTA_END. n_written counts every
 * record the warp wrote, including those the ring overwrote. */
typedef struct argus_slot_header {
    uint32_t magic;     /* ARGUS_SLOT_MAGIC once the warp started */
    uint32_t n_written; /* records written (> cap: the ring wrapped) */
    uint32_t cta;       /* linear CTA index */
    uint32_t warp;      /* warp index inside the CTA */
    uint32_t smid_start;
    uint32_t smid_end;
    uint64_t gt_start; /* %globaltimer, ns */
    uint64_t gt_end;
    uint64_t clk_start; /* %clock64, SM cycles */
    uint64_t clk_end;
    uint32_t ended; /* 1 once ARGUS_CTA_END ran */
    uint32_t reserved;
} argus_slot_header;

/* The device-global descriptor (ARGUS_DESC_SYMBOL, __constant__ memory):
 * slots == 0 means the launch is not armed and markers write nothing. */
typedef struct argus_device_desc {
    uint64_t slots;         /* device address of slot 0 */
    uint32_t nslots;        /* slots in the buffer; warps past it write nothing */
    uint32_t cap_mask;      /* records per slot - 1 */
    uint32_t warps_per_cta; /* slot = CTA * warps_per_cta + warp */
    uint32_t magic;         /* ARGUS_BUF_MAGIC when armed */
} argus_device_desc;

/* The device and the host read these structures through the same
 * definitions; their sizes are part of the format. */
#ifdef __cplusplus
#define ARGUS__STATIC_ASSERT static_assert
#else
#define ARGUS__STATIC_ASSERT _Static_assert
#endif
ARGUS__STATIC_ASSERT(sizeof(argus_buf_header) == ARGUS_HEADER_BYTES, "argus_buf_header is 64 bytes");
ARGUS__STATIC_ASSERT(sizeof(argus_slot_header) == ARGUS_SLOT_HEADER_BYTES,
                     "argus_slot_header is 64 bytes");
ARGUS__STATIC_ASSERT(sizeof(argus_device_desc) == 24, "argus_device_desc is 24 bytes");

/* Region IDs: 32-bit FNV-1a over the parent's ID (4 bytes, little-endian)
 * and the name, folded to 28 bits; 0 is the root and never a region. The
 * device computes the same value as a constexpr (region.cuh), so an ID
 * depends only on the name and its parent, never on build order. */
#define ARGUS_FNV_OFFSET 2166136261u
#define ARGUS_FNV_PRIME 16777619u

static inline uint32_t argus_fold28(uint32_t h)
{
    uint32_t v = (h ^ (h >> ARGUS_VALUE_BITS)) & ARGUS_VALUE_MASK;
    return v == 0 ? 1u : v;
}

static inline uint32_t argus_region_id(const char *name, uint32_t parent)
{
    uint32_t h = ARGUS_FNV_OFFSET;
    for (unsigned i = 0; i < 4; i++) {
        h ^= (parent >> (8 * i)) & 0xffu;
        h *= ARGUS_FNV_PRIME;
    }
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= ARGUS_FNV_PRIME;
    }
    return argus_fold28(h);
}

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_RECORD_H */
