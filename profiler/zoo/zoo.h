/*
 * The kernel zoo: kernel families at several sizes, for isolated profiles
 * and co-run measurements on a real GPU (issue 3). CUDA C, built with nvcc
 * for sm_90 on the GPU machine.
 *
 * A variant is one family at one size or launch shape. The harness
 * (zoo_main.cu and the zoo_*.cu, cmd_*.cu files it lists) owns timing,
 * streams, green contexts and output; a family (kernels_*.cu, by category;
 * the registry of variants is zoo_variants.cu) owns its buffers and
 * kernels. One launch of a variant enqueues the variant's work on a given
 * stream (one kernel for our own families; a library call may issue more
 * than one).
 */
#ifndef MOSAIC_ZOO_H
#define MOSAIC_ZOO_H

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum zoo_category {
    ZOO_MEMORY,   /* memory-bandwidth bound */
    ZOO_COMPUTE,  /* compute bound */
    ZOO_LATENCY,  /* global-memory-latency bound */
    ZOO_SMEM      /* shared-memory heavy */
};

struct zoo_inst {
    const struct zoo_variant *v;
    void *state;   /* the family's buffers, handles */
    int slots;     /* input copies to rotate through (>= 1), set by harness
                      before setup so that slots * working set > 2 * L2 when
                      the data would otherwise stay cached */
    int slot;      /* the copy the next launch uses; the harness advances it */
};

struct zoo_variant {
    const char *family;   /* e.g. "copy" */
    const char *name;     /* unique, e.g. "copy_256MiB" */
    enum zoo_category category;
    long p[4];            /* the family's size parameters */
    /* Bytes one launch reads and writes in device memory (inputs once,
     * outputs once): decides rotation and gives achieved bandwidth. */
    size_t (*working_set)(const struct zoo_variant *v);
    /* Allocates inst->slots copies of the inputs (random data, never
     * zeros) and the outputs; returns 0 or a cudaError_t. */
    int (*setup)(struct zoo_inst *inst);
    /* Enqueues one launch on s using copy inst->slot; returns 0 or a
     * cudaError_t (cudaGetLastError after the launch). Must be capturable
     * into a CUDA graph (no allocation, no synchronisation). */
    int (*launch)(struct zoo_inst *inst, cudaStream_t s);
    /* Optional: checks the last launch's output against a host reference;
     * returns 0 when correct. */
    int (*check)(struct zoo_inst *inst);
    void (*teardown)(struct zoo_inst *inst);
};

extern const struct zoo_variant zoo_variants[];
extern const int zoo_n_variants;

const char *zoo_category_name(enum zoo_category c);

#ifdef __cplusplus
}
#endif
#endif /* MOSAIC_ZOO_H */
