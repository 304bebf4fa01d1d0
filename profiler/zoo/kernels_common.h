/*
 * What every family of the kernel zoo shares (kernels_*.cu, zoo_variants.cu):
 * size macros, error macros, the device-side fill hash, the common state of
 * an instance (inputs per rotation slot, outputs, fixed structures) with its
 * setup and teardown, helpers for checks, warp reductions, and the list of
 * families that the registry (zoo_variants.cu) points at.
 *
 * Conventions. setup allocates inst->slots copies of the inputs and one set
 * of outputs (poisoned with 0xFF bytes so that unwritten elements fail the
 * checks), fills inputs on the device with a hash of (variant name, slot,
 * buffer, index), runs one warm-up launch on the legacy stream so that lazy
 * module loading and library initialisation happen before any timing or
 * graph capture, and synchronises. launch enqueues exactly one launch (our
 * kernels: one kernel; cuBLAS/cuDNN: whatever the library enqueues) and
 * records which slot it read, for check. Every variant uses the one generic
 * teardown, zs_teardown, which frees whatever the state holds.
 */
#ifndef MOSAIC_ZOO_KERNELS_COMMON_H
#define MOSAIC_ZOO_KERNELS_COMMON_H

#include "zoo.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#ifdef ZOO_WITH_CUDNN
#include <cudnn.h>
#endif

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB (1L << 10)
#define MiB (1L << 20)
#define GiB (1L << 30)
/* Two small integers in one size parameter (used where a family needs more
 * than four). */
#define PK(hi, lo) (((long)(hi) << 20) | (long)(lo))
#define PK_HI(v) ((int)((v) >> 20))
#define PK_LO(v) ((int)((v) & ((1L << 20) - 1)))
/* A 3-D block shape in one parameter: x, y, z each below 1024. */
#define SHAPE3(x, y, z) ((long)(x) | ((long)(y) << 10) | ((long)(z) << 20))

/* log2(e): softmax and attention exponentiate in the log2 domain (exp2f). */
#define SMX_LOG2E 1.4426950408889634f

/* ---- errors ------------------------------------------------------------- */

/* Prints "zoo: file:line: what: msg" and returns code, or cudaErrorUnknown
 * when code is 0, so that a failure is never mistaken for success. */
int zfail(const char *what, const char *file, int line, int code,
          const char *msg);

/* Return from the enclosing int function on a CUDA error. */
#define ZCU(call)                                                           \
    do {                                                                    \
        cudaError_t e_ = (call);                                            \
        if (e_ != cudaSuccess)                                              \
            return zfail(#call, __FILE__, __LINE__, (int)e_,                \
                         cudaGetErrorString(e_));                           \
    } while (0)

/* cuBLAS has its own status codes; they become cudaErrorUnknown, with the
 * cuBLAS status printed. */
#define ZBL(call)                                                           \
    do {                                                                    \
        cublasStatus_t s_ = (call);                                         \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                    \
            return zfail(#call, __FILE__, __LINE__, (int)cudaErrorUnknown,  \
                         cublasGetStatusString(s_));                        \
    } while (0)

#ifdef ZOO_WITH_CUDNN
#define ZDN(call)                                                           \
    do {                                                                    \
        cudnnStatus_t s_ = (call);                                          \
        if (s_ != CUDNN_STATUS_SUCCESS)                                     \
            return zfail(#call, __FILE__, __LINE__, (int)cudaErrorUnknown,  \
                         cudnnGetErrorString(s_));                          \
    } while (0)
#endif

/* The dynamic shared-memory limit is a property of the kernel, shared by
 * every variant of a family: raise it, never lower it, or a variant set up
 * earlier (and cached by the co-run harness) that needs more would fail to
 * launch with cudaErrorInvalidValue. */
cudaError_t raise_dyn_smem_limit(const void *fn, size_t need);

/* ---- hashing and random fill -------------------------------------------- */

/* A 64-bit finaliser (murmur3's fmix64): good enough to make independent
 * looking values from consecutive indices, and identical on host and device
 * so that structures built on either side agree. */
__host__ __device__ static inline uint32_t zhash(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

#define ZGOLD 0x9E3779B97F4A7C15ULL

__host__ __device__ static inline float zunit(uint32_t h) /* [0, 1) */
{
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

enum zfill {
    ZF_NONE,     /* the family fills it itself */
    ZF_F32,      /* uniform floats in [lo, hi) */
    ZF_BF16,     /* the same, rounded to bf16 */
    ZF_U32,      /* raw 32-bit hashes */
    ZF_U32_SKEW  /* words of skewed bytes (histogram) */
};

/* Histogram skew: each byte of the word is, with probability 7/8, one of
 * 8 hot values 32 apart (0, 32, ..., 224), else uniform. The hot bins are
 * distinct words in one shared-memory bank, so a warp's atomics on them
 * serialise about 8 ways. (Hot bins at equal addresses would not do it: on
 * the H200, data with 4 hot values ran slightly faster than uniform data.)
 * A byte histogram (256 bins) sends ~88% of its atomics to the 8 hot bins;
 * the 4096-bin histogram, binning the low 12 bits (byte 0 and the low
 * nibble of byte 1, which is 0 for every hot byte), ~77%. */
__device__ static inline uint32_t zskew(uint32_t h, uint32_t h2)
{
    uint32_t v = 0;
    for (int k = 0; k < 32; k += 8) {
        uint32_t b = (h2 >> k) & 255u;
        v |= (((h >> k) & 7u) ? (b & 7u) * 32u : b) << k;
    }
    return v;
}

/* FNV-1a of a variant name: the seed of its data. */
uint64_t zname_seed(const char *s);
/* Fills bytes at p on the device (legacy stream) as kind (enum zfill) says. */
int zfill_dev(void *p, size_t bytes, int kind, float lo, float hi,
              uint64_t seed);
/* Host xorshift64* for sampling in checks and for host-built structures. */
uint64_t zrand(uint64_t *s);
float bf2f(uint16_t b);

/* ---- the common state: inputs per slot, outputs, fixed structures ------- */

#define ZS_MAXB 6

struct zbuf {
    size_t bytes;
    int fill; /* enum zfill */
    float lo, hi;
};

struct zs {
    int slots;
    int last;                  /* the slot the last launch read */
    int nin;                   /* input buffers per slot */
    size_t in_bytes[ZS_MAXB];
    void **in;                 /* in[slot * nin + i] */
    int nout;
    size_t out_bytes[ZS_MAXB];
    void *out[ZS_MAXB];
    void *fix[ZS_MAXB];        /* slot-independent device structures */
    cublasHandle_t blas;
    void *blas_ws;
    size_t blas_ws_bytes;
    void *ext;                 /* family extras (cuDNN descriptors) */
    void (*ext_free)(void *);
};

static inline struct zs *ZS(struct zoo_inst *inst) { return (struct zs *)inst->state; }

/* Marks the slot this launch reads and returns the state. */
static inline struct zs *zs_use(struct zoo_inst *inst)
{
    struct zs *st = ZS(inst);
    st->last = (int)((unsigned)inst->slot % (unsigned)st->slots);
    return st;
}

/* Input i of the slot the last (or current) launch reads. */
static inline void *zin(struct zs *st, int i) { return st->in[st->last * st->nin + i]; }

void zs_teardown(struct zoo_inst *inst);
/* Creates the state: nin inputs per slot, filled as described, and nout
 * outputs, poisoned. Partial allocations are freed by the setup wrapper. */
int zs_create(struct zoo_inst *inst, int nin, const struct zbuf *ins,
              int nout, const size_t *outs);
/* Every family's setup runs through this: on failure it frees what was
 * allocated; on success it runs one warm-up launch and synchronises. */
int zsetup_run(struct zoo_inst *inst, int (*body)(struct zoo_inst *));

/* A family's setup (declared by ZOO_FAMILIES below) wraps its own body,
 * fam_setup_, in zsetup_run. */
#define ZSETUP(fam)                                                         \
    static int fam##_setup_(struct zoo_inst *inst);                         \
    int fam##_setup(struct zoo_inst *inst)                                  \
    {                                                                       \
        return zsetup_run(inst, fam##_setup_);                              \
    }

/* ---- helpers for launches and checks ------------------------------------ */

/* A grid that gives each thread about `per` elements, at least one block. */
unsigned zgrid(size_t n, int threads, int per);
/* Copies bytes at dev + off to the host. */
int zget(void *dst, const void *dev, size_t off, size_t bytes);
/* malloc that says what failed. */
void *zmalloc_host(size_t bytes);
/* Prints the verdict of a check; returns 0 when nothing was bad. */
int zverdict(struct zoo_inst *inst, long bad, long checked, double maxerr,
             double tol);
/* Relative error with a floor on the denominator, so that values near zero
 * are judged on the scale of their row rather than on their own. */
double zrel(double got, double ref, double floor_);

/* Warp reductions (block_sum, used by rmsnorm only, is in kernels_layers.cu). */
static __device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* ---- the families ------------------------------------------------------- */

/*
 * Every family, with the file that holds it. Each defines fam_ws, fam_setup
 * (through ZSETUP), fam_launch and fam_check with the signatures of struct
 * zoo_variant's members; the registry (zoo_variants.cu) refers to them by
 * these names.
 */
#ifdef ZOO_WITH_CUDNN
#define ZOO_FAMILY_CUDNN(X) X(conv_cudnn)      /* kernels_compute.cu */
#else
#define ZOO_FAMILY_CUDNN(X)
#endif
#define ZOO_FAMILIES(X)                                                     \
    X(copy) X(triad) X(stencil3d) X(transpose)  /* kernels_memory.cu */     \
    X(silu_and_mul) X(rmsnorm) X(softmax) X(batchnorm) /* kernels_layers */ \
    X(fma) X(attention) X(conv)                 /* kernels_compute.cu */    \
    ZOO_FAMILY_CUDNN(X)                                                     \
    X(gemm_cublas) X(gemv_cublas)               /* kernels_blas.cu */       \
    X(pointer_chase) X(spmv)                    /* kernels_latency.cu */    \
    X(histogram) X(scan) X(reduce)              /* kernels_smem.cu */

#define ZOO_FAMILY_DECL(fam)                                                \
    size_t fam##_ws(const struct zoo_variant *v);                           \
    int fam##_setup(struct zoo_inst *inst);                                 \
    int fam##_launch(struct zoo_inst *inst, cudaStream_t s);                \
    int fam##_check(struct zoo_inst *inst);
ZOO_FAMILIES(ZOO_FAMILY_DECL)
#undef ZOO_FAMILY_DECL

#endif /* MOSAIC_ZOO_KERNELS_COMMON_H */
