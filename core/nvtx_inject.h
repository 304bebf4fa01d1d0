/*
 * NVTX injection (core/nvtx_inject.c): makes the shared library that links
 * this module an NVTX v3 injection library, so that a program's NVTX ranges
 * (nvtxRangePush/Pop, nvtxRangeStart/End, A, W and Ex forms) reach one
 * registered client: libmosaic.so (HP requests named "mosaic:request") and
 * argus-shim (regions from NVTX ranges) both use it.
 *
 * How NVTX finds an injection (nvtx3/nvtxDetail/nvtxInit.h, load sequence
 * version 2, CUDA 13.0 headers): every shared object that includes the nvtx3
 * headers has its own copy of the NVTX globals; on its first NVTX call it
 * dlopens NVTX_INJECTION64_PATH and calls that library's
 * InitializeInjectionNvtx2, or, with the variable unset, calls the function
 * that the symbol InitializeInjectionNvtx2_fnptr points to (the nvtx3
 * headers define it weak; this module defines it, so an object that binds it
 * dynamically finds us without any variable). This module exports both. So
 * a process can initialise us several times, once per copy, each with its
 * own function table; all of them call the same client.
 *
 * What the client sees: push(name) returns a 32-bit tag that the module
 * keeps on the calling thread's range stack and hands back to pop(tag), as
 * NVTX ranges nest per thread; start(name) returns a tag that the module
 * folds into the range id the program gets, and end(tag, id) receives it, on
 * whatever thread ends the range. name is NULL where the message is not
 * ASCII text (a registered string handle, or a wide string with characters
 * beyond ASCII). Tag 0 is what a range gets when no client was registered
 * at its push or start; clients use nonzero tags for the ranges they track.
 *
 * Other NVTX calls (marks, domains, naming, payloads) are left unassigned,
 * which NVTX turns into no-ops. One client per linking library: a second
 * registration replaces the first.
 */
#ifndef MOSAIC_CORE_NVTX_INJECT_H
#define MOSAIC_CORE_NVTX_INJECT_H

#include <stddef.h>
#include <stdint.h>

/* Push levels kept per thread; deeper pushes are counted (overflow) and
 * reach no client, nor do their pops. */
#define MOSAIC__NVTX_MAX_DEPTH 64

struct mosaic__nvtx_client {
    void *ctx;
    /* Asked once per NVTX copy that initialises through us: nonzero takes
     * its ranges, 0 declines, and that copy's NVTX calls become no-ops
     * (nothing measurable). NULL: take every copy. */
    int (*accept)(void *ctx);
    uint32_t (*push)(void *ctx, const char *name);
    void (*pop)(void *ctx, uint32_t tag);
    uint32_t (*start)(void *ctx, const char *name);
    void (*end)(void *ctx, uint32_t tag, uint64_t id);
};

/* Registers c (kept by pointer: it must outlive the process's NVTX use;
 * NULL unregisters). NVTX copies that initialised before any client was
 * registered still reach c from then on. Returns 0. */
int mosaic__nvtx_register(const struct mosaic__nvtx_client *c);

/* The outcome of mosaic__nvtx_claim_env. */
enum mosaic__nvtx_env {
    MOSAIC__NVTX_ENV_SET = 0,   /* it was unset; it now names this library */
    MOSAIC__NVTX_ENV_OURS = 1,  /* it already named this library */
    MOSAIC__NVTX_ENV_OTHER = 2, /* it names another tool (nsys, ...): left alone */
};

/* Points NVTX_INJECTION64_PATH at the library that holds this module,
 * only if it is unset or empty; never overrides another tool. Returns an
 * enum mosaic__nvtx_env value, or MOSAIC_ENOSYM (the library's own path is
 * unknown) or MOSAIC_ESYS (setenv failed). other receives the variable's
 * value for ENV_OTHER (may be NULL). */
int mosaic__nvtx_claim_env(char *other, size_t otherlen);

/* 1 once mosaic__nvtx_claim_env found another injection configured. */
int mosaic__nvtx_other_injection(void);

/* The path of the library holding this module (dladdr), or NULL. */
const char *mosaic__nvtx_self_path(void);

struct mosaic__nvtx_stats {
    uint64_t inits;          /* NVTX copies that initialised through us */
    uint64_t declined;       /* of those, declined by the client */
    uint64_t failed;         /* a copy whose function table was unusable */
    uint64_t ranges;         /* pushes and starts seen */
    uint64_t overflow;       /* pushes deeper than MOSAIC__NVTX_MAX_DEPTH */
    uint64_t unmatched_pops; /* pops on a thread with no range open */
};
void mosaic__nvtx_stats(struct mosaic__nvtx_stats *out);

#endif /* MOSAIC_CORE_NVTX_INJECT_H */
