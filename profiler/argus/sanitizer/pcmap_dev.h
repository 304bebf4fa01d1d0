/*
 * argus-pcmap's device state and the logic of its device callbacks, shared
 * by the patch (pcmap_patch.cu, compiled by nvcc for the GPU), the host tool
 * (pcmap_tool.c, which lays the state out and reads it back) and the CPU
 * tests (tests/argus/test_pcmap.c, which run these same functions over a
 * modelled kernel), so that what the tests check is the code the GPU runs.
 *
 * What is counted: for every patched instruction (the kinds of
 * ARGUS_SAN_PATCHES in san_abi.h: memory accesses, barriers, syncwarp,
 * shfl, call, ret, exit), one execution per warp that executed it (the
 * lowest active lane counts), under the warp's dynamic region path at that
 * moment. The path comes from the markers themselves: an armed marker is
 * one 8-byte global store of an Argus record (include/argus/record.h) into
 * the warp's ring, and the patched store hands the callback the value
 * written, so the callback pushes the region on a BEGIN and pops it on an
 * END. A path is named by a 64-bit hash of its region IDs, computed level
 * by level (path[d + 1] = mix(path[d], id)); each new path is entered once
 * into the path table with its parent and ID, from which the host rebuilds
 * the IDs. The warp's iteration (the last ARGUS_ITER record) and role (the
 * last ARGUS_ROLE record) in force at the execution are part of the key too,
 * so that a query's iteration and role scope can be kept. The markers' own
 * record stores are region boundaries, not code, and are not counted.
 *
 * Tables are open-addressed with linear probing and claimed by a
 * compare-and-swap of the key; a full table counts what it dropped (the
 * host reports it, and the evidence is marked incomplete). Two (PC, path)
 * pairs whose 64-bit keys collide would share a counter: the host checks
 * that each slot's stored PC and path give back its key.
 */
#ifndef ARGUS_PCMAP_DEV_H
#define ARGUS_PCMAP_DEV_H

#include <stdint.h>

#include "argus/record.h"

#ifdef __CUDACC__
#define ARGUS_PCMAP_FN static __device__ __forceinline__
#define ARGUS_PCMAP_CAS64(p, old, val)                                                          \
    ((uint64_t)atomicCAS((unsigned long long *)(p), (unsigned long long)(old),                \
                         (unsigned long long)(val)))
#define ARGUS_PCMAP_ADD64(p, v) atomicAdd((unsigned long long *)(p), (unsigned long long)(v))
#define ARGUS_PCMAP_ADD32(p, v) atomicAdd((unsigned int *)(p), (unsigned int)(v))
#define ARGUS_PCMAP_LOAD64(p) (*(volatile uint64_t *)(p))
#else
#define ARGUS_PCMAP_FN static inline
static inline uint64_t argus__pcmap_cas64(uint64_t *p, uint64_t old, uint64_t val)
{
    __atomic_compare_exchange_n(p, &old, val, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return old;
}
#define ARGUS_PCMAP_CAS64(p, old, val) argus__pcmap_cas64((p), (old), (val))
#define ARGUS_PCMAP_ADD64(p, v) __atomic_fetch_add((p), (uint64_t)(v), __ATOMIC_RELAXED)
#define ARGUS_PCMAP_ADD32(p, v) __atomic_fetch_add((p), (uint32_t)(v), __ATOMIC_RELAXED)
#define ARGUS_PCMAP_LOAD64(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ARGUS_PCMAP_MAGIC 0x504d5041u /* "APMP" */
#define ARGUS_PCMAP_DEV_VERSION 1u
/* Regions open at once that get their own path; deeper ones are counted
 * (depth_overflow) and their code stays under the path at this depth. */
#define ARGUS_PCMAP_DEPTH 16u

typedef struct argus_pcmap_warp {
    uint32_t depth;                           /* open regions */
    uint32_t ids[ARGUS_PCMAP_DEPTH];          /* their IDs, outermost first */
    uint32_t iter1;                           /* iteration + 1; 0: none yet */
    uint32_t role;                            /* role ID; 0: none */
    uint32_t pad;
    uint64_t path[ARGUS_PCMAP_DEPTH + 1];     /* path[d]: hash of ids[0..d-1]; path[0] = 0 */
} argus_pcmap_warp;

typedef struct argus_pcmap_entry {
    uint64_t key;   /* 0: empty */
    uint64_t pc;
    uint64_t path;
    uint32_t kind;  /* the ARGUS_PCMAP_K_* value (Sanitizer_InstructionId) */
    uint32_t iter1; /* the warp's iteration + 1 (0: none) */
    uint32_t role;  /* the warp's role ID (0: none) */
    uint32_t pad;
    uint64_t count; /* warp-level executions */
} argus_pcmap_entry;

typedef struct argus_pcmap_pathent {
    uint64_t key;    /* the path's hash; 0: empty */
    uint64_t parent; /* the parent path's hash (0: the root) */
    uint32_t id;     /* the innermost region's ID */
    uint32_t depth;  /* its depth (1 for a top-level region) */
} argus_pcmap_pathent;

/* The callbacks' userdata: one per launch, laid out by the host. */
typedef struct argus_pcmap_dev {
    uint32_t magic, version;
    uint64_t rec_lo, rec_hi;  /* the armed region buffer's slots */
    uint32_t slot_bytes;      /* 64 + 8 * cap */
    uint32_t nwarps;          /* warps in the grid (the warp table's size) */
    uint32_t warps_per_cta;
    uint32_t table_cap;       /* a power of two */
    uint32_t paths_cap;       /* a power of two */
    uint32_t pad;
    uint64_t warps;           /* device address of argus_pcmap_warp[nwarps] */
    uint64_t table;           /* of argus_pcmap_entry[table_cap] */
    uint64_t paths;           /* of argus_pcmap_pathent[paths_cap] */
    /* What went wrong, counted on the device (0 when the map is whole). */
    uint32_t dropped;         /* executions lost to a full table */
    uint32_t paths_dropped;   /* paths lost to a full path table */
    uint32_t depth_overflow;  /* BEGINs past ARGUS_PCMAP_DEPTH */
    uint32_t bad_end;         /* ENDs with no open region, or not the innermost */
    uint32_t bad_warp;        /* callbacks from a warp past nwarps */
    uint32_t markers;         /* marker records seen */
} argus_pcmap_dev;

/* The host (gcc) and the device (nvcc) lay these out alike: the sizes are
 * part of the tool's contract with its patch. */
ARGUS__STATIC_ASSERT(sizeof(argus_pcmap_warp) == 216, "argus_pcmap_warp is 216 bytes");
ARGUS__STATIC_ASSERT(sizeof(argus_pcmap_entry) == 48, "argus_pcmap_entry is 48 bytes");
ARGUS__STATIC_ASSERT(sizeof(argus_pcmap_pathent) == 24, "argus_pcmap_pathent is 24 bytes");
ARGUS__STATIC_ASSERT(sizeof(argus_pcmap_dev) == 96, "argus_pcmap_dev is 96 bytes");

/* splitmix64's finaliser: a mixing step whose output is 0 only for 0. */
ARGUS_PCMAP_FN uint64_t argus_pcmap_mix(uint64_t a, uint64_t b)
{
    uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z == 0 ? 1 : z;
}

/* The key of (pc, path, iteration + 1, role) in the count table; never 0. */
ARGUS_PCMAP_FN uint64_t argus_pcmap_key(uint64_t pc, uint64_t path, uint32_t iter1, uint32_t role)
{
    return argus_pcmap_mix(argus_pcmap_mix(pc ^ 0x5043u, path),
                           ((uint64_t)iter1 << 32) | (uint64_t)role);
}

/* The child path of `parent` with region `id`. */
ARGUS_PCMAP_FN uint64_t argus_pcmap_child(uint64_t parent, uint32_t id)
{
    return argus_pcmap_mix(parent, (uint64_t)id | 0x100000000ull);
}

ARGUS_PCMAP_FN void argus_pcmap_add_path(argus_pcmap_dev *d, uint64_t key, uint64_t parent,
                                         uint32_t id, uint32_t depth)
{
    argus_pcmap_pathent *t = (argus_pcmap_pathent *)(uintptr_t)d->paths;
    uint32_t mask = d->paths_cap - 1u;
    uint32_t i = (uint32_t)key & mask;
    for (uint32_t n = 0; n < d->paths_cap; n++, i = (i + 1u) & mask) {
        uint64_t k = ARGUS_PCMAP_LOAD64(&t[i].key);
        if (k == key)
            return;
        if (k == 0) {
            uint64_t prev = ARGUS_PCMAP_CAS64(&t[i].key, 0, key);
            if (prev == 0) {
                t[i].parent = parent;
                t[i].id = id;
                t[i].depth = depth;
                return;
            }
            if (prev == key)
                return;
        }
    }
    ARGUS_PCMAP_ADD32(&d->paths_dropped, 1);
}

/* One warp-level execution of the instruction at pc (of kind) in warp w. */
ARGUS_PCMAP_FN void argus_pcmap_count(argus_pcmap_dev *d, uint32_t w, uint64_t pc, uint32_t kind)
{
    if (w >= d->nwarps) {
        ARGUS_PCMAP_ADD32(&d->bad_warp, 1);
        return;
    }
    argus_pcmap_warp *ws = (argus_pcmap_warp *)(uintptr_t)d->warps + w;
    uint32_t depth = ws->depth < ARGUS_PCMAP_DEPTH ? ws->depth : ARGUS_PCMAP_DEPTH;
    uint64_t path = ws->path[depth];
    uint32_t iter1 = ws->iter1, role = ws->role;
    uint64_t key = argus_pcmap_key(pc, path, iter1, role);
    argus_pcmap_entry *t = (argus_pcmap_entry *)(uintptr_t)d->table;
    uint32_t mask = d->table_cap - 1u;
    uint32_t i = (uint32_t)key & mask;
    for (uint32_t n = 0; n < d->table_cap; n++, i = (i + 1u) & mask) {
        uint64_t k = ARGUS_PCMAP_LOAD64(&t[i].key);
        if (k == 0) {
            uint64_t prev = ARGUS_PCMAP_CAS64(&t[i].key, 0, key);
            if (prev == 0) {
                t[i].pc = pc;
                t[i].path = path;
                t[i].kind = kind;
                t[i].iter1 = iter1;
                t[i].role = role;
                ARGUS_PCMAP_ADD64(&t[i].count, 1);
                return;
            }
            k = prev;
        }
        if (k == key) {
            ARGUS_PCMAP_ADD64(&t[i].count, 1);
            return;
        }
    }
    ARGUS_PCMAP_ADD32(&d->dropped, 1);
}

/* A global store by warp w: when it is a marker's record (8 bytes into the
 * record part of a slot of the armed buffer), the warp's region path
 * follows it and 1 is returned (the store is not counted); else 0. */
ARGUS_PCMAP_FN int argus_pcmap_marker(argus_pcmap_dev *d, uint32_t w, uint64_t addr,
                                      uint32_t size, uint32_t is_write, uint64_t value)
{
    if (!is_write || size != 8u || addr < d->rec_lo || addr >= d->rec_hi || d->slot_bytes == 0)
        return 0;
    if ((addr - d->rec_lo) % d->slot_bytes < ARGUS_SLOT_HEADER_BYTES)
        return 0; /* the slot header's anchors, written at CTA begin and end */
    ARGUS_PCMAP_ADD32(&d->markers, 1);
    if (w >= d->nwarps) {
        ARGUS_PCMAP_ADD32(&d->bad_warp, 1);
        return 1;
    }
    argus_pcmap_warp *ws = (argus_pcmap_warp *)(uintptr_t)d->warps + w;
    uint32_t kind = ARGUS_REC_KIND(value), id = ARGUS_REC_VALUE(value);
    if (kind == ARGUS_REC_BEGIN) {
        uint32_t depth = ws->depth;
        if (depth < ARGUS_PCMAP_DEPTH) {
            uint64_t child = argus_pcmap_child(ws->path[depth], id);
            ws->ids[depth] = id;
            ws->path[depth + 1] = child;
            argus_pcmap_add_path(d, child, ws->path[depth], id, depth + 1);
        } else {
            ARGUS_PCMAP_ADD32(&d->depth_overflow, 1);
        }
        ws->depth = depth + 1;
    } else if (kind == ARGUS_REC_END) {
        uint32_t depth = ws->depth;
        if (depth == 0) {
            ARGUS_PCMAP_ADD32(&d->bad_end, 1);
        } else {
            if (depth <= ARGUS_PCMAP_DEPTH && ws->ids[depth - 1] != id)
                ARGUS_PCMAP_ADD32(&d->bad_end, 1);
            ws->depth = depth - 1;
        }
    } else if (kind == ARGUS_REC_ITER) {
        ws->iter1 = id + 1u; /* iterations are < 2^28: no wrap */
    } else if (kind == ARGUS_REC_ROLE) {
        ws->role = id;
    }
    return 1;
}

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_PCMAP_DEV_H */
