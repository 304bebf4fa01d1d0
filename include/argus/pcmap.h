/*
 * Argus PC-to-region maps (issue 13; docs/argus-backends.md): for each PC
 * of an instrumented kernel, how many times it executed (per warp) under
 * each dynamic region. The CUDA Sanitizer backend (argus-pcmap,
 * libargus_pcmap.so) produces one; attribution (attrib.h) consumes it.
 *
 * The file is JSON, `argus.pcmap` v1:
 *   {"schema": "argus.pcmap", "version": 1, "backend": "sanitizer_patch",
 *    "complete": true, "problems": [],
 *    "count": "warp-level executions",
 *    "modules": [{"sha256": "64 hex"}],
 *    "launches": [{"kernel": "g16_calls_on", "module": 0, "grid": [32,1,1],
 *                  "block": [128,1,1], "armed_by": "program", "markers": 9216,
 *                  "dropped": 0, "paths_dropped": 0, "depth_overflow": 0,
 *                  "bad_end": 0, "bad_warp": 0}],
 *    "regions": [{"path": "", "ids": []},
 *                {"path": "callA/work", "ids": ["0x1234567", "0x89abcde"]}],
 *    "pcs": [{"module": 0, "function": "NAME", "offset": "0x40",
 *             "kind": "ret", "iter": null, "role": null,
 *             "exec": [[REGION, COUNT], ...]}]}
 * - a region is named by its registry path ("" = outside every region; an
 *   ID the registry lacks is written as 0x%07x); `ids` are the region IDs
 *   outermost first, so that a map can be renamed against a registry;
 * - a PC is the offset from its function's start (the function as the
 *   cubin's symbol table names it; nvcc's "$KERNEL$NAME" copy of a callee
 *   is matched by NAME too), the PC-sampling convention, or with
 *   "function": null the absolute device PC of code no function held;
 * - `iter` and `role` are the warp's iteration (the last ARGUS_ITER) and
 *   role (the last ARGUS_ROLE, by its registry name or 0x%07x) in force when
 *   the PC executed, null before any; one PC has one entry per (iter, role);
 * - `complete` is false when anything was lost (a full table, a region
 *   nested deeper than the device keeps, a launch not collected); each
 *   reason is a sentence in `problems`, and the counts kept are exact for
 *   what was counted.
 * Every function that can fail returns 0 or a negative ARGUS_E* code with a
 * sentence in msg naming the file, field and fix.
 */
#ifndef ARGUS_PCMAP_H
#define ARGUS_PCMAP_H

#include <stddef.h>
#include <stdint.h>

#include "argus.h"
#include "attrib.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARGUS_PCMAP_SCHEMA "argus.pcmap"
#define ARGUS_PCMAP_VERSION 1

typedef struct argus_pcmap_launch_info {
    char kernel[256];
    size_t module;
    uint32_t grid[3], block[3];
    int armed_by_tool; /* 1: argus-pcmap armed it; 0: the program (or argus-shim) did */
    uint64_t markers, dropped, paths_dropped, depth_overflow, bad_end, bad_warp;
} argus_pcmap_launch_info;

typedef struct argus_pcmap_region {
    char *path;     /* names joined by '/'; "" outside every region */
    uint32_t *ids;  /* outermost first */
    size_t depth;
} argus_pcmap_region;

typedef struct argus_pcmap_exec {
    size_t region;
    uint64_t count;
} argus_pcmap_exec;

typedef struct argus_pcmap_pc {
    size_t module;
    char *function; /* NULL: offset is an absolute PC */
    uint64_t offset;
    int64_t iter;   /* -1: no iteration in force */
    char role[64];  /* "": no role in force */
    char kind[24];
    argus_pcmap_exec *exec;
    size_t n_exec, cap_exec;
} argus_pcmap_pc;

typedef struct argus_pcmap {
    char (*modules)[65]; /* sha256 hex of each module's cubin */
    size_t n_modules;
    argus_pcmap_launch_info *launches;
    size_t n_launches;
    argus_pcmap_region *regions; /* [0] is the root "" */
    size_t n_regions;
    argus_pcmap_pc *pcs;
    size_t n_pcs;
    int complete;
    char **problems;
    size_t n_problems;
    size_t cap_modules, cap_launches, cap_regions, cap_pcs, cap_problems;
} argus_pcmap;

int argus_pcmap_new(argus_pcmap **out);
void argus_pcmap_free(argus_pcmap *m);

/* The module's index (added once per sha256). */
int argus_pcmap_module(argus_pcmap *m, const char *sha256, size_t *idx);
/* The region of the path of IDs (outermost first; depth 0: the root),
 * named through reg where it has the IDs (NULL: every ID as 0x%07x). */
int argus_pcmap_region_of(argus_pcmap *m, const uint32_t *ids, size_t depth,
                          const argus_registry *reg, size_t *idx);
/* count executions of (module, function, offset) at iteration iter (-1:
 * none) in role (NULL or "": none) under region; kind names the
 * instruction ("ret", "global_memory", ...). Adding again adds. */
int argus_pcmap_add(argus_pcmap *m, size_t module, const char *function, uint64_t offset,
                    int64_t iter, const char *role, const char *kind, size_t region,
                    uint64_t count, char *msg, size_t msglen);
int argus_pcmap_add_launch(argus_pcmap *m, const argus_pcmap_launch_info *l);
/* Marks the map incomplete with a reason (kept in `problems`). */
int argus_pcmap_problem(argus_pcmap *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes the map as JSON (PCs sorted by module, function, offset; regions
 * in the order they were added), atomically (a temporary file renamed). */
int argus_pcmap_write(const argus_pcmap *m, const char *path, char *msg, size_t msglen);
/* Reads a map, checking every field; unknown keys are refused. */
int argus_pcmap_load(const char *path, argus_pcmap **out, char *msg, size_t msglen);

/* Which executions to attribute: an iteration window (executions with no
 * iteration in force fall outside it) and a role. */
typedef struct argus_pcmap_select {
    int has_iter;
    uint32_t iter_lo, iter_hi; /* inclusive */
    const char *role;          /* NULL: every role */
} argus_pcmap_select;

/* Adds the map's executions of one function to a (argus_attrib_add_exec,
 * PC = the offset in the function; executions of every iteration and role
 * that sel keeps are summed per PC and region; sel NULL keeps all), after
 * naming the program as "cubin:sha256:HEX" of that function's module.
 * function NULL: the map must hold exactly one function. A function the map
 * does not hold is ARGUS_ENOREGION with the functions it has. */
int argus_pcmap_to_attrib(const argus_pcmap *m, const char *function,
                          const argus_pcmap_select *sel, argus_attrib *a, char *msg,
                          size_t msglen);

/* Where the CUDA Sanitizer library is: $ARGUS_SANITIZER_LIB, else the first
 * of the toolkit's places that exists (compute-sanitizer/, extras/Sanitizer/,
 * /usr/local/cuda*). Returns 0 with the path in buf, or ARGUS_EIO with
 * every place looked in and the fix in msg. */
int argus_pcmap_find_sanitizer(char *buf, size_t buflen, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_PCMAP_H */
