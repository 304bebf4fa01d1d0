/*
 * zoo_kernels.cu: the families of the kernel zoo (interface in zoo.h).
 *
 * Each family owns its buffers and kernels; the harness (zoo_main.cu) owns
 * timing and co-runs. A variant is one family at one size or launch shape.
 * Categories follow the Mosaic paper's Table 8.
 *
 * family          category  what makes it that category
 * --------------  --------  -------------------------------------------------
 * copy            MEMORY    16-byte loads and stores, no arithmetic: pure
 *                           DRAM streaming (2 bytes moved per byte copied).
 * triad           MEMORY    a = b + s*c: 2 reads and 1 write per FMA.
 * silu_and_mul    MEMORY    LLM MLP gate: ~10 flops per 6 bytes (bf16).
 * rmsnorm         MEMORY    one block per row, two passes over the row; a
 *                           handful of flops per 8 bytes.
 * softmax         MEMORY    row-wise, one warp (short rows) or one block
 *                           (long rows) per row; one exp per 8 bytes.
 * batchnorm       MEMORY    inference NCHW, one FMA per 8 bytes.
 * stencil3d       MEMORY    7-point stencil; neighbours come from L1/L2, so
 *                           DRAM sees about one read and one write a point.
 * transpose       MEMORY    (naive variants only) strided stores, every
 *                           warp store touches 32 sectors.
 * fma             COMPUTE   independent FMA chains in registers, 4 bytes
 *                           written per thread: arithmetic only.
 * gemm_cublas     COMPUTE   cuBLAS bf16 (tensor cores) and fp32 SGEMM,
 *                           O(n^3) flops on O(n^2) bytes.
 * attention       COMPUTE   flash-style, K/V tiles in shared memory, fp32
 *                           FMA on CUDA cores: 4*S*D flops per query row.
 * conv            COMPUTE   direct 3x3 conv, smem tiles of input and weights,
 *                           16 output channels of FMAs per input load.
 * conv_cudnn      COMPUTE   the same shapes through cuDNN (only when built
 *                           with -DZOO_WITH_CUDNN, linked with -lcudnn).
 * pointer_chase   LATENCY   one dependent load after another through a random
 *                           cycle; few chains, so bandwidth stays low.
 * gemv_cublas     LATENCY   matrix-vector product: streams A once, short
 *                           dot products, little reuse (as in Table 8).
 * spmv            LATENCY   CSR with random column indices: gathers of x
 *                           that hit DRAM or L2 at random.
 * histogram       SMEM      shared-memory atomics, contention set by data
 *                           skew and bins; replicated sub-histograms.
 * scan            SMEM      tile staged in smem, serial per-thread scans at
 *                           conflict-free padded strides, warp-shuffle scan.
 * transpose       SMEM      (tiled variants) 32x32 tile through smem, padded
 *                           or deliberately bank-conflicted.
 * reduce          SMEM      classic shared-memory tree reduction with a
 *                           __syncthreads per level.
 *
 * Each variant in the table carries an estimate made before measuring
 * (bytes over 4.3 TB/s for memory-bound code; flops over ~790 TFLOP/s for
 * bf16 tensor cores, ~50 TFLOP/s for cuBLAS SGEMM or a stated fraction of
 * the 67 TFLOP/s fp32 FMA peak for our own kernels; steps times a load
 * latency for pointer chasing) and the time one launch took on an H200
 * alone (mean of 10). Measured, all lie between 68 us and 2.7 ms. Where the
 * two differ much, the measurement shows what the kernel really is: the
 * naive transpose, the 64-thread stencil and spmv run at 0.5-1 TB/s.
 * M and G in names are binary (MiB, GiB).
 *
 * Conventions. setup allocates inst->slots copies of the inputs and one set
 * of outputs (poisoned with 0xFF bytes so that unwritten elements fail the
 * checks), fills inputs on the device with a hash of (variant name, slot,
 * buffer, index), runs one warm-up launch on the legacy stream so that lazy
 * module loading and library initialisation happen before any timing or
 * graph capture, and synchronises. launch enqueues exactly one launch (our
 * kernels: one kernel; cuBLAS/cuDNN: whatever the library enqueues) and
 * records which slot it read, for check. Every variant uses the one generic
 * teardown, which frees whatever the state holds.
 *
 * Build (GPU machine):
 *   nvcc -arch=sm_90 -O3 -c profiler/zoo/zoo_kernels.cu -o zoo_kernels.o
 *   and link with -lcublas. For conv_cudnn add -DZOO_WITH_CUDNN when
 *   compiling and -lcudnn when linking; where cuDNN comes only from pip
 *   (site-packages/nvidia/cudnn), add -I and -L for its include/ and lib/
 *   (lib/ has only libcudnn.so.9: link it by path or with -l:libcudnn.so.9)
 *   and put lib/ on LD_LIBRARY_PATH at run time.
 */
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

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

static int zfail(const char *what, const char *file, int line, int code,
                 const char *msg)
{
    fprintf(stderr, "zoo: %s:%d: %s: %s\n", file, line, what, msg);
    return code ? code : (int)cudaErrorUnknown;
}

/* Return from the enclosing int function on a CUDA error. */
#define ZCU(call)                                                           \
    do {                                                                    \
        cudaError_t e_ = (call);                                            \
        if (e_ != cudaSuccess)                                              \
            return zfail(#call, __FILE__, __LINE__, (int)e_,                \
                         cudaGetErrorString(e_));                           \
    } while (0)

/* The dynamic shared-memory limit is a property of the kernel, shared by
 * every variant of a family: raise it, never lower it, or a variant set up
 * earlier (and cached by the co-run harness) that needs more would fail to
 * launch with cudaErrorInvalidValue. */
static cudaError_t raise_dyn_smem_limit(const void *fn, size_t need)
{
    struct cudaFuncAttributes a;
    cudaError_t e = cudaFuncGetAttributes(&a, fn);

    if (e != cudaSuccess)
        return e;
    if ((size_t)a.maxDynamicSharedSizeBytes >= need)
        return cudaSuccess;
    return cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)need);
}

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

/* ------------------------------------------------------------------------ */
/* Hashing and random fill                                                   */
/* ------------------------------------------------------------------------ */

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

__global__ void k_fill(void *p, size_t n, int kind, float lo, float hi,
                       uint64_t seed)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        uint32_t h = zhash(seed ^ (i * ZGOLD));
        switch (kind) {
        case ZF_F32:
            ((float *)p)[i] = lo + (hi - lo) * zunit(h);
            break;
        case ZF_BF16:
            ((__nv_bfloat16 *)p)[i] = __float2bfloat16(lo + (hi - lo) * zunit(h));
            break;
        case ZF_U32:
            ((uint32_t *)p)[i] = h;
            break;
        case ZF_U32_SKEW:
            ((uint32_t *)p)[i] = zskew(h, zhash(seed + 1 + i * ZGOLD));
            break;
        }
    }
}

static uint64_t zname_seed(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int zfill_dev(void *p, size_t bytes, int kind, float lo, float hi,
                     uint64_t seed)
{
    size_t esz = kind == ZF_BF16 ? 2 : 4;
    size_t n = bytes / esz;
    if (kind == ZF_NONE || n == 0)
        return 0;
    size_t want = (n + 255) / 256;
    unsigned blocks = (unsigned)(want < 132 * 16 ? want : 132 * 16);
    k_fill<<<blocks, 256>>>(p, n, kind, lo, hi, seed);
    ZCU(cudaGetLastError());
    return 0;
}

/* Host xorshift64* for sampling in checks and for host-built structures. */
static uint64_t zrand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static float bf2f(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ------------------------------------------------------------------------ */
/* The common state: inputs per slot, outputs, slot-independent structures   */
/* ------------------------------------------------------------------------ */

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

static struct zs *ZS(struct zoo_inst *inst) { return (struct zs *)inst->state; }

/* Marks the slot this launch reads and returns the state. */
static struct zs *zs_use(struct zoo_inst *inst)
{
    struct zs *st = ZS(inst);
    st->last = (int)((unsigned)inst->slot % (unsigned)st->slots);
    return st;
}

/* Input i of the slot the last (or current) launch reads. */
static void *zin(struct zs *st, int i) { return st->in[st->last * st->nin + i]; }

static void zs_teardown(struct zoo_inst *inst)
{
    struct zs *st = ZS(inst);
    int i;
    if (!st)
        return;
    if (st->in) {
        for (i = 0; i < st->slots * st->nin; i++)
            if (st->in[i])
                cudaFree(st->in[i]);
        free(st->in);
    }
    for (i = 0; i < ZS_MAXB; i++) {
        if (st->out[i])
            cudaFree(st->out[i]);
        if (st->fix[i])
            cudaFree(st->fix[i]);
    }
    if (st->blas)
        cublasDestroy(st->blas);
    if (st->blas_ws)
        cudaFree(st->blas_ws);
    if (st->ext && st->ext_free)
        st->ext_free(st->ext);
    free(st);
    inst->state = NULL;
}

/* Creates the state: nin inputs per slot, filled as described, and nout
 * outputs, poisoned. Partial allocations are freed by the setup wrapper. */
static int zs_create(struct zoo_inst *inst, int nin, const struct zbuf *ins,
                     int nout, const size_t *outs)
{
    struct zs *st = (struct zs *)calloc(1, sizeof *st);
    int s, i;
    if (!st)
        return (int)cudaErrorMemoryAllocation;
    inst->state = st;
    st->slots = inst->slots > 0 ? inst->slots : 1;
    st->nin = nin;
    st->nout = nout;
    if (nin) {
        st->in = (void **)calloc((size_t)st->slots * nin, sizeof(void *));
        if (!st->in)
            return (int)cudaErrorMemoryAllocation;
    }
    uint64_t seed = zname_seed(inst->v->name);
    for (s = 0; s < st->slots; s++) {
        for (i = 0; i < nin; i++) {
            void **p = &st->in[s * nin + i];
            st->in_bytes[i] = ins[i].bytes;
            ZCU(cudaMalloc(p, ins[i].bytes));
            int rc = zfill_dev(*p, ins[i].bytes, ins[i].fill, ins[i].lo, ins[i].hi,
                               seed + (uint64_t)(s * ZS_MAXB + i) * ZGOLD);
            if (rc)
                return rc;
        }
    }
    for (i = 0; i < nout; i++) {
        st->out_bytes[i] = outs[i];
        ZCU(cudaMalloc(&st->out[i], outs[i]));
        ZCU(cudaMemset(st->out[i], 0xFF, outs[i]));
    }
    return 0;
}

/* Every family's setup runs through this: on failure it frees what was
 * allocated; on success it runs one warm-up launch and synchronises. */
static int zsetup_run(struct zoo_inst *inst, int (*body)(struct zoo_inst *))
{
    int rc = body(inst);
    if (rc == 0)
        rc = inst->v->launch(inst, 0);
    if (rc == 0) {
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess)
            rc = zfail("warm-up launch", __FILE__, __LINE__, (int)e,
                       cudaGetErrorString(e));
    }
    if (rc) {
        fprintf(stderr, "zoo: setup of %s failed (%d)\n", inst->v->name, rc);
        zs_teardown(inst);
    }
    return rc;
}

#define ZSETUP(fam)                                                         \
    static int fam##_setup_(struct zoo_inst *inst);                         \
    static int fam##_setup(struct zoo_inst *inst)                           \
    {                                                                       \
        return zsetup_run(inst, fam##_setup_);                              \
    }

/* A grid that gives each thread about `per` elements, at least one block. */
static unsigned zgrid(size_t n, int threads, int per)
{
    size_t b = (n + (size_t)threads * per - 1) / ((size_t)threads * per);
    if (b < 1)
        b = 1;
    if (b > 0x7fffffffUL)
        b = 0x7fffffffUL;
    return (unsigned)b;
}

static int zget(void *dst, const void *dev, size_t off, size_t bytes)
{
    ZCU(cudaMemcpy(dst, (const char *)dev + off, bytes, cudaMemcpyDeviceToHost));
    return 0;
}

static void *zmalloc_host(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        fprintf(stderr, "zoo: host malloc of %zu bytes failed\n", bytes);
    return p;
}

/* Prints the verdict of a check; returns 0 when nothing was bad. */
static int zverdict(struct zoo_inst *inst, long bad, long checked,
                    double maxerr, double tol)
{
    if (bad || checked == 0) {
        fprintf(stderr,
                "zoo: check %s: %ld of %ld sampled values wrong "
                "(max error %.3g, tolerance %.3g)\n",
                inst->v->name, bad, checked, maxerr, tol);
        return 1;
    }
    return 0;
}

/* Relative error with a floor on the denominator, so that values near zero
 * are judged on the scale of their row rather than on their own. */
static double zrel(double got, double ref, double floor_)
{
    double d = fabs(ref) > floor_ ? fabs(ref) : floor_;
    double e = fabs(got - ref) / d;
    return e == e ? e : 1e30; /* NaN fails */
}

/* Block and warp reductions. */
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the block, returned to every thread. */
__device__ float block_sum(float v)
{
    __shared__ float sh[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int nw = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads(); /* sh may still be read by a previous call */
    if (lane == 0)
        sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nw ? sh[lane] : 0.f;
        v = warp_sum(v);
        if (lane == 0)
            sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}

/* ======================================================================== */
/* MEMORY families                                                           */
/* ======================================================================== */

/* ---- copy: p = {bytes per buffer, blocks (0: 4 float4 per thread), threads}
 * Four independent 16-byte loads per thread per iteration keep enough bytes
 * in flight for the one-wave variants (132 x 1024 threads x 64 B = 8.6 MB). */
__global__ void k_copy(const float4 *__restrict__ a, float4 *__restrict__ b,
                       size_t n4)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 v0 = a[i], v1 = a[i + stride], v2 = a[i + 2 * stride],
               v3 = a[i + 3 * stride];
        b[i] = v0;
        b[i + stride] = v1;
        b[i + 2 * stride] = v2;
        b[i + 3 * stride] = v3;
    }
    for (; i < n4; i += stride)
        b[i] = a[i];
}

static size_t copy_ws(const struct zoo_variant *v) { return 2 * (size_t)v->p[0]; }

ZSETUP(copy)
static int copy_setup_(struct zoo_inst *inst)
{
    struct zbuf in = {(size_t)inst->v->p[0], ZF_F32, -1.f, 1.f};
    size_t out = (size_t)inst->v->p[0];
    return zs_create(inst, 1, &in, 1, &out);
}

static int copy_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    size_t n4 = (size_t)p[0] / 16;
    unsigned g = p[1] ? (unsigned)p[1] : zgrid(n4, (int)p[2], 4);
    k_copy<<<g, (int)p[2], 0, s>>>((const float4 *)zin(st, 0),
                                   (float4 *)st->out[0], n4);
    return (int)cudaGetLastError();
}

/* Compares sampled chunks of two float arrays: got = f(in...) elementwise. */
#define ZCHUNK 4096
static int copy_check(struct zoo_inst *inst)
{
    struct zs *st = ZS(inst);
    size_t n = (size_t)inst->v->p[0] / 4;
    float *a = (float *)zmalloc_host(ZCHUNK * 4), *b = (float *)zmalloc_host(ZCHUNK * 4);
    uint64_t r = 42;
    long bad = 0, checked = 0;
    int c, rc = 0;
    if (!a || !b) {
        free(a);
        free(b);
        return 1;
    }
    for (c = 0; c < 64 && !rc; c++) {
        size_t off = c == 63 ? n - ZCHUNK : (zrand(&r) % (n - ZCHUNK)) & ~(size_t)3;
        rc = zget(a, zin(st, 0), off * 4, ZCHUNK * 4) ||
             zget(b, st->out[0], off * 4, ZCHUNK * 4);
        for (int i = 0; i < ZCHUNK && !rc; i++, checked++)
            bad += memcmp(&a[i], &b[i], 4) != 0;
    }
    free(a);
    free(b);
    return rc ? rc : zverdict(inst, bad, checked, bad ? 1 : 0, 0);
}

/* ---- triad: a = b + s*c; p = {bytes per array, blocks (0: auto), threads} */
#define TRIAD_S 1.75f
__global__ void k_triad(float4 *__restrict__ a, const float4 *__restrict__ b,
                        const float4 *__restrict__ c, float s, size_t n4)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + stride < n4; i += 2 * stride) {
        float4 b0 = b[i], c0 = c[i], b1 = b[i + stride], c1 = c[i + stride];
        a[i] = make_float4(b0.x + s * c0.x, b0.y + s * c0.y, b0.z + s * c0.z,
                           b0.w + s * c0.w);
        a[i + stride] = make_float4(b1.x + s * c1.x, b1.y + s * c1.y,
                                    b1.z + s * c1.z, b1.w + s * c1.w);
    }
    for (; i < n4; i += stride) {
        float4 b0 = b[i], c0 = c[i];
        a[i] = make_float4(b0.x + s * c0.x, b0.y + s * c0.y, b0.z + s * c0.z,
                           b0.w + s * c0.w);
    }
}

static size_t triad_ws(const struct zoo_variant *v) { return 3 * (size_t)v->p[0]; }

ZSETUP(triad)
static int triad_setup_(struct zoo_inst *inst)
{
    size_t b = (size_t)inst->v->p[0];
    struct zbuf in[2] = {{b, ZF_F32, -1.f, 1.f}, {b, ZF_F32, -1.f, 1.f}};
    return zs_create(inst, 2, in, 1, &b);
}

static int triad_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    size_t n4 = (size_t)p[0] / 16;
    unsigned g = p[1] ? (unsigned)p[1] : zgrid(n4, (int)p[2], 2);
    k_triad<<<g, (int)p[2], 0, s>>>((float4 *)st->out[0], (const float4 *)zin(st, 0),
                                    (const float4 *)zin(st, 1), TRIAD_S, n4);
    return (int)cudaGetLastError();
}

static int triad_check(struct zoo_inst *inst)
{
    struct zs *st = ZS(inst);
    size_t n = (size_t)inst->v->p[0] / 4;
    float *a = (float *)zmalloc_host(3 * ZCHUNK * 4);
    uint64_t r = 43;
    long bad = 0, checked = 0;
    double maxe = 0, tol = 1e-6;
    int c, rc = 0;
    if (!a)
        return 1;
    float *b = a + ZCHUNK, *cc = b + ZCHUNK;
    for (c = 0; c < 64 && !rc; c++) {
        size_t off = (zrand(&r) % (n - ZCHUNK)) & ~(size_t)3;
        rc = zget(a, st->out[0], off * 4, ZCHUNK * 4) ||
             zget(b, zin(st, 0), off * 4, ZCHUNK * 4) ||
             zget(cc, zin(st, 1), off * 4, ZCHUNK * 4);
        for (int i = 0; i < ZCHUNK && !rc; i++, checked++) {
            double ref = (double)b[i] + (double)TRIAD_S * cc[i];
            /* Scale by the terms, not the result, which can cancel. */
            double e = fabs(a[i] - ref) / (fabs(b[i]) + fabs(TRIAD_S * cc[i]) + 1e-30);
            if (!(e <= tol))
                bad++;
            if (e > maxe)
                maxe = e;
        }
    }
    free(a);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ---- silu_and_mul: in [T][2D], out[t][d] = silu(in[t][d]) * in[t][D+d];
 * p = {T, D, dtype (1 bf16, 0 fp32), threads}. Grid (ceil(D/vec/threads),
 * T); each thread handles 8 bf16 (one uint4) or 4 floats (one float4). */
__device__ __forceinline__ float zsilu(float x) { return x / (1.f + __expf(-x)); }

__global__ void k_silu_mul_bf16(const uint4 *__restrict__ in, uint4 *__restrict__ out,
                                int d8)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d8)
        return;
    size_t t = blockIdx.y;
    uint4 a = in[t * 2 * d8 + j], b = in[t * 2 * d8 + d8 + j], o;
    const __nv_bfloat162 *a2 = (const __nv_bfloat162 *)&a, *b2 = (const __nv_bfloat162 *)&b;
    __nv_bfloat162 *o2 = (__nv_bfloat162 *)&o;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float2 x = __bfloat1622float2(a2[k]), y = __bfloat1622float2(b2[k]);
        o2[k] = __floats2bfloat162_rn(zsilu(x.x) * y.x, zsilu(x.y) * y.y);
    }
    out[t * d8 + j] = o;
}

__global__ void k_silu_mul_f32(const float4 *__restrict__ in, float4 *__restrict__ out,
                               int d4)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d4)
        return;
    size_t t = blockIdx.y;
    float4 a = in[t * 2 * d4 + j], b = in[t * 2 * d4 + d4 + j];
    out[t * d4 + j] = make_float4(zsilu(a.x) * b.x, zsilu(a.y) * b.y,
                                  zsilu(a.z) * b.z, zsilu(a.w) * b.w);
}

static size_t silu_esz(const struct zoo_variant *v) { return v->p[2] ? 2 : 4; }

static size_t silu_and_mul_ws(const struct zoo_variant *v)
{
    return 3 * (size_t)v->p[0] * v->p[1] * silu_esz(v);
}

ZSETUP(silu_and_mul)
static int silu_and_mul_setup_(struct zoo_inst *inst)
{
    const struct zoo_variant *v = inst->v;
    size_t out = (size_t)v->p[0] * v->p[1] * silu_esz(v);
    struct zbuf in = {2 * out, v->p[2] ? ZF_BF16 : ZF_F32, -4.f, 4.f};
    return zs_create(inst, 1, &in, 1, &out);
}

static int silu_and_mul_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    int th = (int)p[3];
    if (p[2]) {
        int d8 = (int)(p[1] / 8);
        dim3 g((d8 + th - 1) / th, (unsigned)p[0]);
        k_silu_mul_bf16<<<g, th, 0, s>>>((const uint4 *)zin(st, 0), (uint4 *)st->out[0], d8);
    } else {
        int d4 = (int)(p[1] / 4);
        dim3 g((d4 + th - 1) / th, (unsigned)p[0]);
        k_silu_mul_f32<<<g, th, 0, s>>>((const float4 *)zin(st, 0), (float4 *)st->out[0], d4);
    }
    return (int)cudaGetLastError();
}

static int silu_and_mul_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t esz = silu_esz(inst->v), D = (size_t)p[1];
    unsigned char *x = (unsigned char *)zmalloc_host(3 * D * esz);
    uint64_t r = 44;
    long bad = 0, checked = 0;
    double maxe = 0, tol = p[2] ? 1e-2 : 1e-5;
    int rc = 0;
    if (!x)
        return 1;
    for (int k = 0; k < 8 && !rc; k++) {
        size_t t = k == 7 ? (size_t)p[0] - 1 : zrand(&r) % (size_t)p[0];
        rc = zget(x, zin(st, 0), t * 2 * D * esz, 2 * D * esz) ||
             zget(x + 2 * D * esz, st->out[0], t * D * esz, D * esz);
        for (size_t d = 0; d < D && !rc; d++, checked++) {
            double a, b, o;
            if (p[2]) {
                const uint16_t *h = (const uint16_t *)x;
                a = bf2f(h[d]);
                b = bf2f(h[D + d]);
                o = bf2f(h[2 * D + d]);
            } else {
                const float *f = (const float *)x;
                a = f[d];
                b = f[D + d];
                o = f[2 * D + d];
            }
            double ref = a / (1 + exp(-a)) * b;
            double e = zrel(o, ref, 0.1);
            if (!(e <= tol))
                bad++;
            if (e > maxe)
                maxe = e;
        }
    }
    free(x);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ---- rmsnorm (fp32): y = x * rsqrt(mean(x^2) + eps) * w, one block per
 * row; p = {rows, hidden, threads}. The second pass re-reads the row, which
 * the first pass has just brought into L1/L2 (rows up to 64 KB; the 1 MB
 * rows of the one-wave variant come back from L2). */
#define RMS_EPS 1e-6f
__global__ void k_rmsnorm(const float4 *__restrict__ x, const float4 *__restrict__ w,
                          float4 *__restrict__ y, int h4)
{
    const float4 *xr = x + (size_t)blockIdx.x * h4;
    float4 *yr = y + (size_t)blockIdx.x * h4;
    float ss = 0.f;
    for (int i = threadIdx.x; i < h4; i += blockDim.x) {
        float4 v = xr[i];
        ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    ss = block_sum(ss);
    float r = rsqrtf(ss / (4.f * h4) + RMS_EPS);
    for (int i = threadIdx.x; i < h4; i += blockDim.x) {
        float4 v = xr[i], g = w[i];
        yr[i] = make_float4(v.x * r * g.x, v.y * r * g.y, v.z * r * g.z, v.w * r * g.w);
    }
}

static size_t rmsnorm_ws(const struct zoo_variant *v)
{
    return 2 * (size_t)v->p[0] * v->p[1] * 4 + (size_t)v->p[1] * 4;
}

ZSETUP(rmsnorm)
static int rmsnorm_setup_(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    size_t b = (size_t)p[0] * p[1] * 4;
    struct zbuf in[2] = {{b, ZF_F32, -2.f, 2.f}, {(size_t)p[1] * 4, ZF_F32, 0.5f, 1.5f}};
    return zs_create(inst, 2, in, 1, &b);
}

static int rmsnorm_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_rmsnorm<<<(unsigned)p[0], (int)p[2], 0, s>>>((const float4 *)zin(st, 0),
                                                   (const float4 *)zin(st, 1),
                                                   (float4 *)st->out[0], (int)(p[1] / 4));
    return (int)cudaGetLastError();
}

static int rmsnorm_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t H = (size_t)p[1];
    float *x = (float *)zmalloc_host(3 * H * 4);
    uint64_t r = 45;
    long bad = 0, checked = 0;
    double maxe = 0, tol = 1e-5;
    int rc;
    if (!x)
        return 1;
    float *w = x + H, *y = w + H;
    rc = zget(w, zin(st, 1), 0, H * 4);
    for (int k = 0; k < 8 && !rc; k++) {
        size_t row = k == 7 ? (size_t)p[0] - 1 : zrand(&r) % (size_t)p[0];
        rc = zget(x, zin(st, 0), row * H * 4, H * 4) || zget(y, st->out[0], row * H * 4, H * 4);
        double ss = 0;
        for (size_t i = 0; i < H; i++)
            ss += (double)x[i] * x[i];
        double rr = 1.0 / sqrt(ss / H + RMS_EPS);
        for (size_t i = 0; i < H && !rc; i++, checked++) {
            double e = zrel(y[i], x[i] * rr * w[i], 0.1);
            if (!(e <= tol))
                bad++;
            if (e > maxe)
                maxe = e;
        }
    }
    free(x);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ---- softmax (fp32, row-wise); p = {rows, cols, mode, threads}.
 * mode 0: one warp per row, the row held in registers (cols <= 1024, a
 *         multiple of 128), read once.
 * mode 1: one block per row, an online (max, sum) pass and a write pass;
 *         the second read of the row mostly hits L2.
 * Exponentials are base 2 of x*log2(e). */
#define SMX_LOG2E 1.4426950408889634f
#define SMW_MAXV 8 /* float4 per lane: cols <= 8 * 32 * 4 */

__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

__global__ void k_softmax_warp(const float4 *__restrict__ x, float4 *__restrict__ y,
                               int rows, int c4)
{
    int row = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows)
        return;
    const float4 *xr = x + (size_t)row * c4;
    float4 *yr = y + (size_t)row * c4;
    float4 v[SMW_MAXV];
    float m = -FLT_MAX, sum = 0.f;
#pragma unroll
    for (int k = 0; k < SMW_MAXV; k++)
        if (k * 32 + lane < c4) {
            v[k] = xr[k * 32 + lane];
            v[k].x *= SMX_LOG2E;
            v[k].y *= SMX_LOG2E;
            v[k].z *= SMX_LOG2E;
            v[k].w *= SMX_LOG2E;
            m = fmaxf(m, max4(v[k]));
        }
    m = warp_max(m);
#pragma unroll
    for (int k = 0; k < SMW_MAXV; k++)
        if (k * 32 + lane < c4) {
            v[k].x = exp2f(v[k].x - m);
            v[k].y = exp2f(v[k].y - m);
            v[k].z = exp2f(v[k].z - m);
            v[k].w = exp2f(v[k].w - m);
            sum += v[k].x + v[k].y + v[k].z + v[k].w;
        }
    float inv = 1.f / warp_sum(sum);
#pragma unroll
    for (int k = 0; k < SMW_MAXV; k++)
        if (k * 32 + lane < c4)
            yr[k * 32 + lane] = make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
}

/* Merges a partial (max, sum) into another, both in the log2 domain. */
__device__ __forceinline__ void ms_merge(float *m, float *s, float om, float os)
{
    float nm = fmaxf(*m, om);
    *s = *s * exp2f(*m - nm) + os * exp2f(om - nm);
    *m = nm;
}

__global__ void k_softmax_block(const float4 *__restrict__ x, float4 *__restrict__ y,
                                int c4)
{
    __shared__ float shm[32], shs[32];
    const float4 *xr = x + (size_t)blockIdx.x * c4;
    float4 *yr = y + (size_t)blockIdx.x * c4;
    float m = -FLT_MAX, s = 0.f;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    for (int i = threadIdx.x; i < c4; i += blockDim.x) {
        float4 v = xr[i];
        float a = v.x * SMX_LOG2E, b = v.y * SMX_LOG2E, c = v.z * SMX_LOG2E, d = v.w * SMX_LOG2E;
        float nm = fmaxf(m, fmaxf(fmaxf(a, b), fmaxf(c, d)));
        s = s * exp2f(m - nm) + exp2f(a - nm) + exp2f(b - nm) + exp2f(c - nm) + exp2f(d - nm);
        m = nm;
    }
    for (int o = 16; o; o >>= 1) {
        float om = __shfl_xor_sync(0xffffffffu, m, o), os = __shfl_xor_sync(0xffffffffu, s, o);
        ms_merge(&m, &s, om, os);
    }
    if (lane == 0) {
        shm[warp] = m;
        shs[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        m = lane < nw ? shm[lane] : -FLT_MAX;
        s = lane < nw ? shs[lane] : 0.f;
        for (int o = 16; o; o >>= 1) {
            float om = __shfl_xor_sync(0xffffffffu, m, o), os = __shfl_xor_sync(0xffffffffu, s, o);
            ms_merge(&m, &s, om, os);
        }
        if (lane == 0) {
            shm[0] = m;
            shs[0] = s;
        }
    }
    __syncthreads();
    m = shm[0];
    float inv = 1.f / shs[0];
    for (int i = threadIdx.x; i < c4; i += blockDim.x) {
        float4 v = xr[i];
        yr[i] = make_float4(exp2f(v.x * SMX_LOG2E - m) * inv, exp2f(v.y * SMX_LOG2E - m) * inv,
                            exp2f(v.z * SMX_LOG2E - m) * inv, exp2f(v.w * SMX_LOG2E - m) * inv);
    }
}

static size_t softmax_ws(const struct zoo_variant *v) { return 2 * (size_t)v->p[0] * v->p[1] * 4; }

ZSETUP(softmax)
static int softmax_setup_(struct zoo_inst *inst)
{
    size_t b = (size_t)inst->v->p[0] * inst->v->p[1] * 4;
    struct zbuf in = {b, ZF_F32, -8.f, 8.f};
    return zs_create(inst, 1, &in, 1, &b);
}

static int softmax_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    int th = (int)p[3], c4 = (int)(p[1] / 4);
    if (p[2] == 0) {
        unsigned g = (unsigned)((p[0] * 32 + th - 1) / th);
        k_softmax_warp<<<g, th, 0, s>>>((const float4 *)zin(st, 0), (float4 *)st->out[0],
                                        (int)p[0], c4);
    } else {
        k_softmax_block<<<(unsigned)p[0], th, 0, s>>>((const float4 *)zin(st, 0),
                                                      (float4 *)st->out[0], c4);
    }
    return (int)cudaGetLastError();
}

static int softmax_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t C = (size_t)p[1];
    float *x = (float *)zmalloc_host(2 * C * 4);
    uint64_t r = 46;
    long bad = 0, checked = 0;
    double maxe = 0, tol = 1e-5;
    int rc = 0;
    if (!x)
        return 1;
    float *y = x + C;
    for (int k = 0; k < 8 && !rc; k++) {
        size_t row = k == 7 ? (size_t)p[0] - 1 : zrand(&r) % (size_t)p[0];
        rc = zget(x, zin(st, 0), row * C * 4, C * 4) || zget(y, st->out[0], row * C * 4, C * 4);
        double m = -1e300, s = 0, ymax = 0;
        for (size_t i = 0; i < C; i++)
            m = x[i] > m ? x[i] : m;
        for (size_t i = 0; i < C; i++)
            s += exp(x[i] - m);
        ymax = 1.0 / s; /* the largest output */
        for (size_t i = 0; i < C && !rc; i++, checked++) {
            double e = zrel(y[i], exp(x[i] - m) / s, 1e-3 * ymax);
            if (!(e <= tol))
                bad++;
            if (e > maxe)
                maxe = e;
        }
    }
    free(x);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ---- batchnorm (inference, NCHW, fp32): y = (x - mean[c]) * rsqrt(var[c]
 * + eps) * gamma[c] + beta[c]; p = {N, C, H*W, threads}. One block per
 * (n, c) plane, so the per-channel scale and shift are computed once per
 * block; grid = N*C blocks. */
#define BN_EPS 1e-5f
__global__ void k_batchnorm(const float4 *__restrict__ x, float4 *__restrict__ y,
                            const float *__restrict__ prm, int C, int hw4)
{
    int c = blockIdx.x % C;
    float sc = prm[2 * C + c] * rsqrtf(prm[C + c] + BN_EPS);
    float sh = prm[3 * C + c] - prm[c] * sc;
    const float4 *xp = x + (size_t)blockIdx.x * hw4;
    float4 *yp = y + (size_t)blockIdx.x * hw4;
    for (int i = threadIdx.x; i < hw4; i += blockDim.x) {
        float4 v = xp[i];
        yp[i] = make_float4(fmaf(v.x, sc, sh), fmaf(v.y, sc, sh), fmaf(v.z, sc, sh), fmaf(v.w, sc, sh));
    }
}

static size_t batchnorm_ws(const struct zoo_variant *v)
{
    return 2 * (size_t)v->p[0] * v->p[1] * v->p[2] * 4 + 4 * (size_t)v->p[1] * 4;
}

ZSETUP(batchnorm)
static int batchnorm_setup_(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    size_t b = (size_t)p[0] * p[1] * p[2] * 4;
    /* The parameters (mean, var, gamma, beta) all lie in [0.5, 1.5): var
     * must be positive, and the others need no sign. */
    struct zbuf in[2] = {{b, ZF_F32, -2.f, 2.f}, {4 * (size_t)p[1] * 4, ZF_F32, 0.5f, 1.5f}};
    return zs_create(inst, 2, in, 1, &b);
}

static int batchnorm_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_batchnorm<<<(unsigned)(p[0] * p[1]), (int)p[3], 0, s>>>(
        (const float4 *)zin(st, 0), (float4 *)st->out[0], (const float *)zin(st, 1),
        (int)p[1], (int)(p[2] / 4));
    return (int)cudaGetLastError();
}

static int batchnorm_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t C = (size_t)p[1], HW = (size_t)p[2];
    float *prm = (float *)zmalloc_host((4 * C + 2 * HW) * 4);
    uint64_t r = 47;
    long bad = 0, checked = 0;
    double maxe = 0, tol = 1e-5;
    int rc;
    if (!prm)
        return 1;
    float *x = prm + 4 * C, *y = x + HW;
    rc = zget(prm, zin(st, 1), 0, 4 * C * 4);
    for (int k = 0; k < 16 && !rc; k++) {
        size_t nc = zrand(&r) % ((size_t)p[0] * C), c = nc % C;
        rc = zget(x, zin(st, 0), nc * HW * 4, HW * 4) || zget(y, st->out[0], nc * HW * 4, HW * 4);
        double sc = prm[2 * C + c] / sqrt((double)prm[C + c] + BN_EPS);
        for (size_t i = 0; i < HW && !rc; i++, checked++) {
            double ref = (x[i] - prm[c]) * sc + prm[3 * C + c];
            double e = zrel(y[i], ref, 0.1);
            if (!(e <= tol))
                bad++;
            if (e > maxe)
                maxe = e;
        }
    }
    free(prm);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ---- stencil3d (fp32, 7-point): p = {nx, ny, nz, SHAPE3(bx, by, bz)}, a 3-D
 * grid of 3-D blocks, one point per thread. Boundary points are copied.
 * Neighbour loads go through the read-only path; the x and y neighbours of
 * a block come from L1, the z neighbours mostly from L2. */
#define ST_C0 0.4f
#define ST_C1 0.1f
__global__ void k_stencil3d(const float *__restrict__ in, float *__restrict__ out,
                            int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz)
        return;
    size_t sxy = (size_t)nx * ny, i = (size_t)z * sxy + (size_t)y * nx + x;
    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
        out[i] = __ldg(in + i);
        return;
    }
    out[i] = ST_C0 * __ldg(in + i) +
             ST_C1 * (__ldg(in + i - 1) + __ldg(in + i + 1) + __ldg(in + i - nx) +
                      __ldg(in + i + nx) + __ldg(in + i - sxy) + __ldg(in + i + sxy));
}

static size_t stencil3d_ws(const struct zoo_variant *v)
{
    return 2 * (size_t)v->p[0] * v->p[1] * v->p[2] * 4;
}

ZSETUP(stencil3d)
static int stencil3d_setup_(struct zoo_inst *inst)
{
    size_t b = stencil3d_ws(inst->v) / 2;
    struct zbuf in = {b, ZF_F32, -1.f, 1.f};
    return zs_create(inst, 1, &in, 1, &b);
}

static int stencil3d_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    dim3 b((unsigned)(p[3] & 1023), (unsigned)((p[3] >> 10) & 1023), (unsigned)(p[3] >> 20));
    dim3 g((unsigned)((p[0] + b.x - 1) / b.x), (unsigned)((p[1] + b.y - 1) / b.y),
           (unsigned)((p[2] + b.z - 1) / b.z));
    k_stencil3d<<<g, b, 0, s>>>((const float *)zin(st, 0), (float *)st->out[0], (int)p[0],
                                (int)p[1], (int)p[2]);
    return (int)cudaGetLastError();
}

/* Checks whole z-planes: planes z-1, z, z+1 of the input against plane z of
 * the output. */
static int stencil3d_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t nx = (size_t)p[0], ny = (size_t)p[1], nz = (size_t)p[2], pl = nx * ny;
    float *a = (float *)zmalloc_host(4 * pl * 4);
    uint64_t r = 48;
    long bad = 0, checked = 0;
    double maxe = 0, tol = 1e-5;
    int rc = 0;
    if (!a)
        return 1;
    for (int k = 0; k < 4 && !rc; k++) {
        size_t z = k == 0 ? 1 : k == 1 ? nz - 2 : 1 + zrand(&r) % (nz - 2);
        rc = zget(a, zin(st, 0), (z - 1) * pl * 4, 3 * pl * 4) ||
             zget(a + 3 * pl, st->out[0], z * pl * 4, pl * 4);
        const float *c = a + pl, *o = a + 3 * pl;
        for (size_t y = 0; y < ny && !rc; y++)
            for (size_t x = 0; x < nx; x++, checked++) {
                size_t i = y * nx + x;
                double ref;
                if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1)
                    ref = c[i];
                else
                    ref = ST_C0 * (double)c[i] + ST_C1 * ((double)c[i - 1] + c[i + 1] + c[i - nx] +
                                                          c[i + nx] + a[i] + a[2 * pl + i]);
                double e = fabs(o[i] - ref) / 1.0; /* terms are O(1) */
                if (!(e <= tol))
                    bad++;
                if (e > maxe)
                    maxe = e;
            }
    }
    free(a);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ======================================================================== */
/* COMPUTE families                                                          */
/* ======================================================================== */

/* ---- fma: NCH independent FMA chains per thread, unrolled so that every
 * chain stays in a register; p = {blocks, threads, iters, chains (8|32)}.
 * With 8 chains and FMA latency ~4 cycles, two warps per scheduler already
 * issue an FMA every cycle; 32 chains raise registers per thread. The only
 * memory traffic is one float per thread. */
#define FMA_A 0.9999f
#define FMA_B 0.0001f
#define ZOO_FMA_KERNEL(NAME, NCH)                                            \
    __global__ void NAME(float *__restrict__ out, float a, float b, int iters) \
    {                                                                       \
        float c[NCH];                                                       \
        _Pragma("unroll") for (int k = 0; k < NCH; k++)                     \
            c[k] = (float)(threadIdx.x + k) * 1e-3f;                        \
        _Pragma("unroll 4") for (int it = 0; it < iters; it++)              \
        {                                                                   \
            _Pragma("unroll") for (int k = 0; k < NCH; k++)                 \
                c[k] = fmaf(c[k], a, b);                                    \
        }                                                                   \
        float s = 0.f;                                                      \
        _Pragma("unroll") for (int k = 0; k < NCH; k++) s += c[k];          \
        out[blockIdx.x * blockDim.x + threadIdx.x] = s;                     \
    }
ZOO_FMA_KERNEL(k_fma8, 8)
ZOO_FMA_KERNEL(k_fma32, 32)

static size_t fma_ws(const struct zoo_variant *v) { return (size_t)v->p[0] * v->p[1] * 4; }

ZSETUP(fma)
static int fma_setup_(struct zoo_inst *inst)
{
    size_t out = fma_ws(inst->v);
    return zs_create(inst, 0, NULL, 1, &out);
}

static int fma_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    if (p[3] == 32)
        k_fma32<<<(unsigned)p[0], (int)p[1], 0, s>>>((float *)st->out[0], FMA_A, FMA_B, (int)p[2]);
    else
        k_fma8<<<(unsigned)p[0], (int)p[1], 0, s>>>((float *)st->out[0], FMA_A, FMA_B, (int)p[2]);
    return (int)cudaGetLastError();
}

/* Host fmaf is correctly rounded, as is the device FFMA, so the host replays
 * a thread's chains bit for bit. */
static int fma_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    uint64_t r = 49;
    long bad = 0, checked = 0;
    double maxe = 0, tol = 1e-6;
    int rc = 0;
    for (int k = 0; k < 16 && !rc; k++, checked++) {
        size_t g = zrand(&r) % (size_t)(p[0] * p[1]);
        unsigned tx = (unsigned)(g % (size_t)p[1]);
        float got, c[32], s = 0.f;
        rc = zget(&got, st->out[0], g * 4, 4);
        for (int j = 0; j < p[3]; j++)
            c[j] = (float)(tx + j) * 1e-3f;
        for (long it = 0; it < p[2]; it++)
            for (int j = 0; j < p[3]; j++)
                c[j] = fmaf(c[j], FMA_A, FMA_B);
        for (int j = 0; j < p[3]; j++)
            s += c[j];
        double e = zrel(got, s, 1.0);
        if (!(e <= tol))
            bad++;
        if (e > maxe)
            maxe = e;
    }
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ---- cuBLAS helpers, shared by gemm_cublas and gemv_cublas. The handle is
 * per instance; the workspace is ours, so that no launch allocates and
 * launches can be captured into graphs. cublasSetStream resets the
 * workspace to cuBLAS's default pool, so launch sets it again after the
 * stream (a host-side call that enqueues nothing). */
#define ZBLAS_WS (32 * MiB)

static int zblas_init(struct zs *st)
{
    ZBL(cublasCreate(&st->blas));
    st->blas_ws_bytes = ZBLAS_WS;
    ZCU(cudaMalloc(&st->blas_ws, st->blas_ws_bytes));
    ZBL(cublasSetWorkspace(st->blas, st->blas_ws, st->blas_ws_bytes));
    ZBL(cublasSetPointerMode(st->blas, CUBLAS_POINTER_MODE_HOST));
    /* Default math: SGEMM stays true fp32 (no TF32); bf16 uses tensor cores. */
    ZBL(cublasSetMathMode(st->blas, CUBLAS_DEFAULT_MATH));
    return 0;
}

static int zblas_stream(struct zs *st, cudaStream_t s)
{
    if (cublasSetStream(st->blas, s) != CUBLAS_STATUS_SUCCESS ||
        cublasSetWorkspace(st->blas, st->blas_ws, st->blas_ws_bytes) != CUBLAS_STATUS_SUCCESS)
        return (int)cudaErrorUnknown;
    return 0;
}

static int zblas_done(cublasStatus_t bs, const char *name)
{
    if (bs != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "zoo: %s: cuBLAS: %s\n", name, cublasGetStatusString(bs));
        return (int)cudaErrorUnknown;
    }
    return (int)cudaGetLastError();
}

/* ---- gemm_cublas: C = A B, column-major, M x N x K; p = {M, N, K, dtype}:
 * dtype 1: cublasGemmEx, bf16 A, B and C, fp32 compute (tensor cores);
 * dtype 0: cublasSgemm, fp32 throughout. */
static size_t gemm_esz(const struct zoo_variant *v) { return v->p[3] ? 2 : 4; }

static size_t gemm_cublas_ws(const struct zoo_variant *v)
{
    const long *p = v->p;
    return ((size_t)p[0] * p[2] + (size_t)p[2] * p[1] + (size_t)p[0] * p[1]) * gemm_esz(v);
}

ZSETUP(gemm_cublas)
static int gemm_cublas_setup_(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    size_t e = gemm_esz(inst->v);
    int f = p[3] ? ZF_BF16 : ZF_F32;
    struct zbuf in[2] = {{(size_t)p[0] * p[2] * e, f, -1.f, 1.f},
                         {(size_t)p[2] * p[1] * e, f, -1.f, 1.f}};
    size_t out = (size_t)p[0] * p[1] * e;
    int rc = zs_create(inst, 2, in, 1, &out);
    return rc ? rc : zblas_init(ZS(inst));
}

static int gemm_cublas_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    int m = (int)p[0], n = (int)p[1], k = (int)p[2], rc = zblas_stream(st, s);
    float alpha = 1.f, beta = 0.f;
    cublasStatus_t bs;
    if (rc)
        return rc;
    if (p[3])
        bs = cublasGemmEx(st->blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, zin(st, 0),
                          CUDA_R_16BF, m, zin(st, 1), CUDA_R_16BF, k, &beta, st->out[0],
                          CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else
        bs = cublasSgemm(st->blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
                         (const float *)zin(st, 0), m, (const float *)zin(st, 1), k, &beta,
                         (float *)st->out[0], m);
    return zblas_done(bs, inst->v->name);
}

/* Reads element e of a buffer of fp32 or bf16 values as a double. */
static double zval(const void *h, size_t e, int bf16)
{
    return bf16 ? bf2f(((const uint16_t *)h)[e]) : ((const float *)h)[e];
}

/* Relative error of got against the fp64 dot product of K elements of a
 * and b (bf16 when lowp), scaled by the products' norm so that
 * cancellation does not inflate it: the reference of GEMM and GEMV checks. */
static double zdot_err(const void *a, const void *b, size_t K, int lowp, double got)
{
    double ref = 0, sc = 0;

    for (size_t k = 0; k < K; k++) {
        double pr = zval(a, k, lowp) * zval(b, k, lowp);
        ref += pr;
        sc += pr * pr;
    }
    return zrel(got, ref, sqrt(sc));
}

/* Sampled C(i, j) against fp64 dot products of row i of A and column j of
 * B. The error is taken relative to sqrt(sum_k (a_k b_k)^2), the typical
 * size of such a random sum, because the sum itself can cancel. fp32 (K up
 * to 4096, blocked accumulation) lands near 1e-6; bf16 output rounding near
 * 4e-3. */
static int gemm_cublas_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t M = (size_t)p[0], N = (size_t)p[1], K = (size_t)p[2], e = gemm_esz(inst->v);
    unsigned char *a = (unsigned char *)zmalloc_host(2 * K * e + e);
    uint64_t r = 50;
    long bad = 0, checked = 0;
    double maxe = 0, tol = p[3] ? 1e-2 : 1e-5;
    int rc = 0;
    if (!a)
        return 1;
    unsigned char *b = a + K * e, *c = b + K * e;
    for (int t = 0; t < 32 && !rc; t++, checked++) {
        size_t i = zrand(&r) % M, j = zrand(&r) % N;
        /* Row i of column-major A: K elements at stride M. */
        cudaError_t ce = cudaMemcpy2D(a, e, (const char *)zin(st, 0) + i * e, M * e, e, K,
                                      cudaMemcpyDeviceToHost);
        if (ce != cudaSuccess)
            rc = zfail("cudaMemcpy2D", __FILE__, __LINE__, (int)ce, cudaGetErrorString(ce));
        rc = rc || zget(b, zin(st, 1), j * K * e, K * e) || zget(c, st->out[0], (j * M + i) * e, e);
        double err = zdot_err(a, b, K, p[3] != 0, zval(c, 0, p[3] != 0));
        if (!(err <= tol))
            bad++;
        if (err > maxe)
            maxe = err;
    }
    free(a);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ---- attention: flash-style forward, non-causal, head dim 64, bf16 Q, K,
 * V and O in [BH][S][64], fp32 arithmetic; p = {BH, S, BQ, BK}.
 * One block per (q-tile, batch*head): grid (S/BQ, BH), BQ threads, one query
 * row per thread held in registers (q and the output accumulator: 128
 * floats). K and V tiles of BK rows are staged in shared memory as fp32
 * (BK * 512 bytes: 16, 32 or 64 KB for BK = 32, 64, 128; the last over
 * the 48 KB default, raised in setup).
 * Scores are computed ATT_KC keys at a time with an online softmax (running
 * max and sum, base 2); every thread reads the same K/V element, so smem
 * reads are broadcasts. 4*S*64 flops per query row in fp32 FMAs. */
#define ATT_D 64
#define ATT_KC 16

__device__ __forceinline__ void bf8_to_f(uint4 u, float *f)
{
    const __nv_bfloat162 *h = (const __nv_bfloat162 *)&u;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float2 t = __bfloat1622float2(h[k]);
        f[2 * k] = t.x;
        f[2 * k + 1] = t.y;
    }
}

/* Two floats as a bf16 pair in one 32-bit word (x in the low half). */
__device__ __forceinline__ uint32_t bf2_pack(float a, float b)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    uint32_t u;
    memcpy(&u, &h, 4);
    return u;
}

__global__ void __launch_bounds__(256)
k_attention(const __nv_bfloat16 *__restrict__ Q, const __nv_bfloat16 *__restrict__ K,
            const __nv_bfloat16 *__restrict__ V, __nv_bfloat16 *__restrict__ O, int S, int BK,
            float qscale)
{
    extern __shared__ float4 att_sm[];
    float4 *ks = att_sm, *vs = att_sm + BK * (ATT_D / 4);
    const size_t base = (size_t)blockIdx.y * S * ATT_D;
    const size_t qrow = base + ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * ATT_D;
    float q[ATT_D], o[ATT_D], m = -1e30f, l = 0.f;
    const uint4 *qp = (const uint4 *)(Q + qrow);
#pragma unroll
    for (int i = 0; i < ATT_D / 8; i++) {
        bf8_to_f(qp[i], q + 8 * i);
#pragma unroll
        for (int k = 0; k < 8; k++)
            q[8 * i + k] *= qscale;
    }
#pragma unroll
    for (int d = 0; d < ATT_D; d++)
        o[d] = 0.f;

    for (int kt = 0; kt < S; kt += BK) {
        __syncthreads(); /* the previous tile is no longer read */
        const uint4 *kp = (const uint4 *)(K + base + (size_t)kt * ATT_D);
        const uint4 *vp = (const uint4 *)(V + base + (size_t)kt * ATT_D);
        for (int i = threadIdx.x; i < BK * ATT_D / 8; i += blockDim.x) {
            float f[8];
            bf8_to_f(kp[i], f);
            ks[2 * i] = make_float4(f[0], f[1], f[2], f[3]);
            ks[2 * i + 1] = make_float4(f[4], f[5], f[6], f[7]);
            bf8_to_f(vp[i], f);
            vs[2 * i] = make_float4(f[0], f[1], f[2], f[3]);
            vs[2 * i + 1] = make_float4(f[4], f[5], f[6], f[7]);
        }
        __syncthreads();
        for (int c = 0; c < BK; c += ATT_KC) {
            float s[ATT_KC], cm = -1e30f;
#pragma unroll
            for (int j = 0; j < ATT_KC; j++) {
                const float4 *kr = ks + (c + j) * (ATT_D / 4);
                float a = 0.f;
#pragma unroll
                for (int d = 0; d < ATT_D / 4; d++) {
                    float4 kk = kr[d];
                    a = fmaf(q[4 * d], kk.x, a);
                    a = fmaf(q[4 * d + 1], kk.y, a);
                    a = fmaf(q[4 * d + 2], kk.z, a);
                    a = fmaf(q[4 * d + 3], kk.w, a);
                }
                s[j] = a;
                cm = fmaxf(cm, a);
            }
            float mn = fmaxf(m, cm), corr = exp2f(m - mn);
            l *= corr;
#pragma unroll
            for (int d = 0; d < ATT_D; d++)
                o[d] *= corr;
#pragma unroll
            for (int j = 0; j < ATT_KC; j++) {
                float pj = exp2f(s[j] - mn);
                const float4 *vr = vs + (c + j) * (ATT_D / 4);
                l += pj;
#pragma unroll
                for (int d = 0; d < ATT_D / 4; d++) {
                    float4 vv = vr[d];
                    o[4 * d] = fmaf(pj, vv.x, o[4 * d]);
                    o[4 * d + 1] = fmaf(pj, vv.y, o[4 * d + 1]);
                    o[4 * d + 2] = fmaf(pj, vv.z, o[4 * d + 2]);
                    o[4 * d + 3] = fmaf(pj, vv.w, o[4 * d + 3]);
                }
            }
            m = mn;
        }
    }
    float inv = 1.f / l;
    uint4 *op = (uint4 *)(O + qrow);
#pragma unroll
    for (int i = 0; i < ATT_D / 8; i++)
        op[i] = make_uint4(bf2_pack(o[8 * i] * inv, o[8 * i + 1] * inv),
                           bf2_pack(o[8 * i + 2] * inv, o[8 * i + 3] * inv),
                           bf2_pack(o[8 * i + 4] * inv, o[8 * i + 5] * inv),
                           bf2_pack(o[8 * i + 6] * inv, o[8 * i + 7] * inv));
}

static size_t attention_ws(const struct zoo_variant *v) { return 4 * (size_t)v->p[0] * v->p[1] * ATT_D * 2; }

static size_t attention_smem(const struct zoo_variant *v) { return (size_t)v->p[3] * ATT_D * 4 * 2; }

ZSETUP(attention)
static int attention_setup_(struct zoo_inst *inst)
{
    size_t b = (size_t)inst->v->p[0] * inst->v->p[1] * ATT_D * 2;
    /* q and k in [-2, 2) make scores of standard deviation ~1.3, so the
     * softmax is neither flat nor one-hot. */
    struct zbuf in[3] = {{b, ZF_BF16, -2.f, 2.f}, {b, ZF_BF16, -2.f, 2.f}, {b, ZF_BF16, -1.f, 1.f}};
    int rc = zs_create(inst, 3, in, 1, &b);
    if (rc)
        return rc;
    ZCU(raise_dyn_smem_limit((const void *)k_attention, attention_smem(inst->v)));
    return 0;
}

static int attention_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    dim3 g((unsigned)(p[1] / p[2]), (unsigned)p[0]);
    float qscale = SMX_LOG2E / sqrtf((float)ATT_D);
    k_attention<<<g, (int)p[2], attention_smem(inst->v), s>>>(
        (const __nv_bfloat16 *)zin(st, 0), (const __nv_bfloat16 *)zin(st, 1),
        (const __nv_bfloat16 *)zin(st, 2), (__nv_bfloat16 *)st->out[0], (int)p[1], (int)p[3],
        qscale);
    return (int)cudaGetLastError();
}

static int attention_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t S = (size_t)p[1], hb = S * ATT_D * 2;
    uint16_t *k = (uint16_t *)zmalloc_host(2 * hb + 2 * ATT_D * 2);
    double *sc = (double *)zmalloc_host(S * sizeof(double));
    uint64_t r = 51;
    long bad = 0, checked = 0;
    double maxe = 0, tol = 1e-2;
    int rc = 0;
    if (!k || !sc) {
        free(k);
        free(sc);
        return 1;
    }
    uint16_t *v = k + S * ATT_D, *q = v + S * ATT_D, *o = q + ATT_D;
    for (int t = 0; t < 4 && !rc; t++) {
        size_t bh = zrand(&r) % (size_t)p[0];
        rc = zget(k, zin(st, 1), bh * hb, hb) || zget(v, zin(st, 2), bh * hb, hb);
        for (int u = 0; u < 4 && !rc; u++) {
            size_t qi = zrand(&r) % S, row = (bh * S + qi) * ATT_D * 2;
            rc = zget(q, zin(st, 0), row, ATT_D * 2) || zget(o, st->out[0], row, ATT_D * 2);
            double mx = -1e300, sum = 0, ref[ATT_D], rmax = 0;
            for (size_t j = 0; j < S; j++) {
                double a = 0;
                for (int d = 0; d < ATT_D; d++)
                    a += (double)bf2f(q[d]) * bf2f(k[j * ATT_D + d]);
                sc[j] = a / sqrt((double)ATT_D);
                mx = sc[j] > mx ? sc[j] : mx;
            }
            for (int d = 0; d < ATT_D; d++)
                ref[d] = 0;
            for (size_t j = 0; j < S; j++) {
                double w = exp(sc[j] - mx);
                sum += w;
                for (int d = 0; d < ATT_D; d++)
                    ref[d] += w * bf2f(v[j * ATT_D + d]);
            }
            for (int d = 0; d < ATT_D; d++) {
                ref[d] /= sum;
                rmax = fabs(ref[d]) > rmax ? fabs(ref[d]) : rmax;
            }
            for (int d = 0; d < ATT_D && !rc; d++, checked++) {
                double e = zrel(bf2f(o[d]), ref[d], 0.1 * rmax);
                if (!(e <= tol))
                    bad++;
                if (e > maxe)
                    maxe = e;
            }
        }
    }
    free(k);
    free(sc);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ---- conv: direct 3x3 convolution, stride 1, padding 1, NCHW fp32, C input
 * and C output channels; p = {N, C, H (= W), tile}. A block of tile x
 * min(tile, 16) threads (at most 512, so that the 64 registers the
 * accumulators need fit without spilling) computes a patch of that size of CONV_KO output channels of one
 * image, one pixel per thread with CONV_KO accumulators. Input channels go
 * through shared memory CONV_CC at a time: the (tile+2)^2 halo patch and the
 * CONV_KO x CONV_CC x 9 weights, stored [cc][tap][ko] so that a thread reads
 * its 16 weights as four broadcast float4. Per input value: 16 FMAs for 5
 * shared loads; expect roughly a third of the fp32 peak (~20 TFLOP/s). */
#define CONV_KO 16
#define CONV_CC 8

static int conv_th(int tile) { return tile < 16 ? tile : 16; }

static size_t conv_smem(int tile)
{
    return ((size_t)CONV_CC * (conv_th(tile) + 2) * (tile + 2) + CONV_KO * CONV_CC * 9) * 4;
}

/* No __launch_bounds__: with one, ptxas squeezed the kernel into 64
 * registers and spilled; without, it takes 65 and spills nothing. */
__global__ void k_conv3x3(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
          int C, int K, int H, int W)
{
    extern __shared__ float4 conv_sm[];
    const int tw = blockDim.x, th = blockDim.y, pw = tw + 2, ph = th + 2;
    float *sx = (float *)conv_sm;
    float *sw = sx + CONV_CC * ph * pw; /* 16-byte aligned: CONV_CC is 8 */
    const int tilesx = (W + tw - 1) / tw;
    const int ox0 = (blockIdx.x % tilesx) * tw, oy0 = (blockIdx.x / tilesx) * th;
    const int ox = ox0 + threadIdx.x, oy = oy0 + threadIdx.y;
    const int k0 = blockIdx.y * CONV_KO, n = blockIdx.z;
    const int tid = threadIdx.y * tw + threadIdx.x, nt = tw * th;
    float acc[CONV_KO];
#pragma unroll
    for (int k = 0; k < CONV_KO; k++)
        acc[k] = 0.f;
    for (int c0 = 0; c0 < C; c0 += CONV_CC) {
        __syncthreads(); /* the previous stage is no longer read */
        for (int i = tid; i < CONV_CC * ph * pw; i += nt) {
            int cc = i / (ph * pw), rr = i - cc * ph * pw, py = rr / pw, px = rr - py * pw;
            int gy = oy0 + py - 1, gx = ox0 + px - 1;
            float v = 0.f;
            if (gy >= 0 && gy < H && gx >= 0 && gx < W)
                v = x[(((size_t)n * C + c0 + cc) * H + gy) * W + gx];
            sx[i] = v;
        }
        for (int i = tid; i < CONV_KO * CONV_CC * 9; i += nt) {
            int ko = i % CONV_KO, rr = i / CONV_KO; /* rr = cc * 9 + tap */
            sw[i] = w[((size_t)(k0 + ko) * C + c0) * 9 + rr];
        }
        __syncthreads();
        const float *sxt = sx + threadIdx.y * pw + threadIdx.x;
#pragma unroll 2
        for (int cc = 0; cc < CONV_CC; cc++) {
#pragma unroll
            for (int t = 0; t < 9; t++) {
                float xv = sxt[(cc * ph + t / 3) * pw + t % 3];
                const float4 *wv = (const float4 *)(sw + (cc * 9 + t) * CONV_KO);
#pragma unroll
                for (int q = 0; q < CONV_KO / 4; q++) {
                    float4 ww = wv[q];
                    acc[4 * q] = fmaf(xv, ww.x, acc[4 * q]);
                    acc[4 * q + 1] = fmaf(xv, ww.y, acc[4 * q + 1]);
                    acc[4 * q + 2] = fmaf(xv, ww.z, acc[4 * q + 2]);
                    acc[4 * q + 3] = fmaf(xv, ww.w, acc[4 * q + 3]);
                }
            }
        }
    }
    if (ox < W && oy < H) {
#pragma unroll
        for (int k = 0; k < CONV_KO; k++)
            y[(((size_t)n * K + k0 + k) * H + oy) * W + ox] = acc[k];
    }
}

static size_t conv_ws(const struct zoo_variant *v)
{
    const long *p = v->p;
    return (2 * (size_t)p[0] * p[1] * p[2] * p[2] + (size_t)p[1] * p[1] * 9) * 4;
}

/* Shared by conv and conv_cudnn: x [N][C][H][W], w [C][C][3][3] -> y. */
static int conv_buffers(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    size_t xb = (size_t)p[0] * p[1] * p[2] * p[2] * 4;
    /* Weights of about 1/sqrt(9 C) keep the outputs O(1). */
    float ws = 1.f / sqrtf(9.f * (float)p[1]);
    struct zbuf in[2] = {{xb, ZF_F32, -1.f, 1.f}, {(size_t)p[1] * p[1] * 9 * 4, ZF_F32, -ws, ws}};
    return zs_create(inst, 2, in, 1, &xb);
}

ZSETUP(conv)
static int conv_setup_(struct zoo_inst *inst)
{
    int rc = conv_buffers(inst);
    if (rc)
        return rc;
    ZCU(raise_dyn_smem_limit((const void *)k_conv3x3, conv_smem((int)inst->v->p[3])));
    return 0;
}

static int conv_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    int t = (int)p[3], th = conv_th(t), H = (int)p[2];
    int tiles = ((H + t - 1) / t) * ((H + th - 1) / th);
    dim3 g((unsigned)tiles, (unsigned)(p[1] / CONV_KO), (unsigned)p[0]);
    k_conv3x3<<<g, dim3(t, th), conv_smem(t), s>>>((const float *)zin(st, 0),
                                                  (const float *)zin(st, 1), (float *)st->out[0],
                                                  (int)p[1], (int)p[1], H, H);
    return (int)cudaGetLastError();
}

/* Sampled output pixels of two images against an fp64 host convolution;
 * errors are relative to sum |terms|, since the output itself can cancel.
 * Shared with conv_cudnn, which passes a TF32 tolerance. */
static int conv_check_tol(struct zoo_inst *inst, double tol)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t C = (size_t)p[1], H = (size_t)p[2], img = C * H * H;
    float *x = (float *)zmalloc_host((img + C * C * 9) * 4);
    uint64_t r = 52;
    long bad = 0, checked = 0;
    double maxe = 0;
    int rc;
    if (!x)
        return 1;
    float *w = x + img;
    rc = zget(w, zin(st, 1), 0, C * C * 9 * 4);
    for (int t = 0; t < 2 && !rc; t++) {
        size_t n = zrand(&r) % (size_t)p[0];
        rc = zget(x, zin(st, 0), n * img * 4, img * 4);
        for (int u = 0; u < 64 && !rc; u++, checked++) {
            size_t k = zrand(&r) % C, oy = zrand(&r) % H, ox = zrand(&r) % H;
            if (u == 0)
                oy = ox = 0; /* a corner exercises the padding */
            double ref = 0, sc = 0;
            for (size_t c = 0; c < C; c++)
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++) {
                        long iy = (long)oy + ky - 1, ix = (long)ox + kx - 1;
                        if (iy < 0 || ix < 0 || iy >= (long)H || ix >= (long)H)
                            continue;
                        double pr = (double)x[(c * H + iy) * H + ix] * w[(k * C + c) * 9 + ky * 3 + kx];
                        ref += pr;
                        sc += fabs(pr);
                    }
            float got;
            rc = zget(&got, st->out[0], (((n * C + k) * H + oy) * H + ox) * 4, 4);
            double e = fabs(got - ref) / (sc + 1e-30);
            if (!(e <= tol))
                bad++;
            if (e > maxe)
                maxe = e;
        }
    }
    free(x);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

static int conv_check(struct zoo_inst *inst) { return conv_check_tol(inst, 1e-5); }

#ifdef ZOO_WITH_CUDNN
/* ---- conv_cudnn: the conv shapes through cudnnConvolutionForward, fp32
 * NCHW; p = {N, C, H, unused}. The algorithm is picked at setup from
 * cuDNN's heuristics (no benchmarking), its workspace allocated then, so
 * that a launch only enqueues. Default math lets cuDNN use TF32 tensor
 * cores for fp32; the check's tolerance is for TF32 accordingly. */
struct zdnn {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t algo;
    void *ws;
    size_t ws_bytes;
};

static void zdnn_free(void *e)
{
    struct zdnn *d = (struct zdnn *)e;
    if (d->ws)
        cudaFree(d->ws);
    if (d->cd)
        cudnnDestroyConvolutionDescriptor(d->cd);
    if (d->wd)
        cudnnDestroyFilterDescriptor(d->wd);
    if (d->yd)
        cudnnDestroyTensorDescriptor(d->yd);
    if (d->xd)
        cudnnDestroyTensorDescriptor(d->xd);
    if (d->h)
        cudnnDestroy(d->h);
    free(d);
}

static size_t conv_cudnn_ws(const struct zoo_variant *v) { return conv_ws(v); }

ZSETUP(conv_cudnn)
static int conv_cudnn_setup_(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    int n = (int)p[0], c = (int)p[1], h = (int)p[2], rc = conv_buffers(inst), got = 0, i;
    struct zs *st = ZS(inst);
    struct zdnn *d;
    cudnnConvolutionFwdAlgoPerf_t perf[16];
    if (rc)
        return rc;
    d = (struct zdnn *)calloc(1, sizeof *d);
    if (!d)
        return (int)cudaErrorMemoryAllocation;
    st->ext = d;
    st->ext_free = zdnn_free;
    ZDN(cudnnCreate(&d->h));
    ZDN(cudnnCreateTensorDescriptor(&d->xd));
    ZDN(cudnnCreateTensorDescriptor(&d->yd));
    ZDN(cudnnCreateFilterDescriptor(&d->wd));
    ZDN(cudnnCreateConvolutionDescriptor(&d->cd));
    ZDN(cudnnSetTensor4dDescriptor(d->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, h));
    ZDN(cudnnSetTensor4dDescriptor(d->yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, h));
    ZDN(cudnnSetFilter4dDescriptor(d->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, c, c, 3, 3));
    ZDN(cudnnSetConvolution2dDescriptor(d->cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT));
    ZDN(cudnnSetConvolutionMathType(d->cd, CUDNN_DEFAULT_MATH));
    ZDN(cudnnGetConvolutionForwardAlgorithm_v7(d->h, d->xd, d->wd, d->cd, d->yd, 16, &got, perf));
    for (i = 0; i < got; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= 512 * (size_t)MiB)
            break;
    if (i == got)
        return zfail("cuDNN", __FILE__, __LINE__, (int)cudaErrorNotSupported,
                     "no forward algorithm fits");
    d->algo = perf[i].algo;
    ZDN(cudnnGetConvolutionForwardWorkspaceSize(d->h, d->xd, d->wd, d->cd, d->yd, d->algo,
                                                &d->ws_bytes));
    if (d->ws_bytes)
        ZCU(cudaMalloc(&d->ws, d->ws_bytes));
    return 0;
}

static int conv_cudnn_launch(struct zoo_inst *inst, cudaStream_t s)
{
    struct zs *st = zs_use(inst);
    struct zdnn *d = (struct zdnn *)st->ext;
    float alpha = 1.f, beta = 0.f;
    cudnnStatus_t ds = cudnnSetStream(d->h, s);
    if (ds == CUDNN_STATUS_SUCCESS)
        ds = cudnnConvolutionForward(d->h, &alpha, d->xd, zin(st, 0), d->wd, zin(st, 1), d->cd,
                                     d->algo, d->ws, d->ws_bytes, &beta, d->yd, st->out[0]);
    if (ds != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "zoo: %s: cuDNN: %s\n", inst->v->name, cudnnGetErrorString(ds));
        return (int)cudaErrorUnknown;
    }
    return (int)cudaGetLastError();
}

/* TF32 keeps 10 mantissa bits: errors relative to sum |terms| stay under
 * about 1e-3. */
static int conv_cudnn_check(struct zoo_inst *inst) { return conv_check_tol(inst, 2e-3); }
#endif /* ZOO_WITH_CUDNN */

/* ======================================================================== */
/* LATENCY families                                                          */
/* ======================================================================== */

/* ---- pointer_chase: p = {footprint bytes, blocks, threads, steps}.
 * The footprint is split into 64-byte nodes (two per 128-byte line, so each
 * step touches a fresh 32-byte sector); word 0 of a node holds the index of
 * the next node, the other words are filler. The nodes form one random
 * cycle (Fisher-Yates shuffle, fixed seed) and each thread follows it from
 * its own start, evenly spaced along the cycle, so chains never meet. Loads
 * are __ldcg (L2, not L1): the 1 MiB and 32 MiB footprints measure L2
 * latency, the larger ones DRAM latency plus TLB misses. Chains are few
 * (8448-16896) so that the bytes in flight stay far below bandwidth:
 * ~16896 x 32 B per ~700 ns is ~0.8 TB/s of sectors. Measured on the
 * H200, one step took 0.22 us (1 MiB), 0.30 us (32 MiB), 0.60 us (256 MiB)
 * and 0.70 us (1 GiB). */
#define PC_NODE_WORDS 16

__global__ void k_chase_expand(uint32_t *nodes, const uint32_t *nxt, size_t n, uint64_t seed)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n * PC_NODE_WORDS; i += stride)
        nodes[i] = (i % PC_NODE_WORDS) ? zhash(seed ^ (i * ZGOLD)) : nxt[i / PC_NODE_WORDS];
}

__global__ void k_chase(const uint32_t *__restrict__ nodes, const uint32_t *__restrict__ start,
                        uint32_t *__restrict__ out, int steps)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t p = start[t];
#pragma unroll 4
    for (int s = 0; s < steps; s++)
        p = __ldcg(nodes + (size_t)p * PC_NODE_WORDS);
    out[t] = p;
}

/* Bytes one launch moves: the 32-byte sectors of the distinct nodes it
 * visits (chains are disjoint stretches of one cycle, so that is
 * min(nodes, chains * steps)), plus starts and results. The footprint can
 * be far larger (1 GiB variant: 16.8M nodes, 8.7M visited). */
static size_t pointer_chase_ws(const struct zoo_variant *v)
{
    size_t n = (size_t)v->p[0] / (PC_NODE_WORDS * 4), T = (size_t)v->p[1] * v->p[2];
    size_t visits = T * (size_t)v->p[3];
    return (visits < n ? visits : n) * 32 + 2 * T * 4;
}

ZSETUP(pointer_chase)
static int pointer_chase_setup_(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    size_t n = (size_t)p[0] / (PC_NODE_WORDS * 4), T = (size_t)p[1] * p[2], i;
    struct zbuf in = {(size_t)p[0], ZF_NONE, 0, 0};
    size_t out = T * 4;
    uint64_t r = zname_seed(inst->v->name) | 1;
    uint32_t *order, *nxt, *start, *dnxt = NULL;
    int rc = zs_create(inst, 1, &in, 1, &out);
    struct zs *st = ZS(inst);
    if (rc)
        return rc;
    if (T > n)
        return zfail("pointer_chase", __FILE__, __LINE__, (int)cudaErrorInvalidValue,
                     "more chains than nodes");
    order = (uint32_t *)zmalloc_host(n * 4);
    nxt = (uint32_t *)zmalloc_host(n * 4);
    start = (uint32_t *)zmalloc_host(T * 4);
    if (!order || !nxt || !start) {
        free(order);
        free(nxt);
        free(start);
        return (int)cudaErrorMemoryAllocation;
    }
    for (i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    for (i = n - 1; i > 0; i--) { /* Fisher-Yates */
        size_t j = zrand(&r) % (i + 1);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (i = 0; i < n; i++)
        nxt[order[i]] = order[(i + 1) % n];
    for (i = 0; i < T; i++)
        start[i] = order[i * n / T];
    cudaError_t e = cudaMalloc(&st->fix[0], T * 4);
    if (e == cudaSuccess)
        e = cudaMemcpy(st->fix[0], start, T * 4, cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaMalloc(&dnxt, n * 4);
    if (e == cudaSuccess)
        e = cudaMemcpy(dnxt, nxt, n * 4, cudaMemcpyHostToDevice);
    for (int s = 0; s < st->slots && e == cudaSuccess; s++) {
        k_chase_expand<<<132 * 16, 256>>>((uint32_t *)st->in[s], dnxt, n, r + (uint64_t)s);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (dnxt)
        cudaFree(dnxt);
    free(order);
    free(nxt);
    free(start);
    ZCU(e);
    return 0;
}

static int pointer_chase_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_chase<<<(unsigned)p[1], (int)p[2], 0, s>>>((const uint32_t *)zin(st, 0),
                                                 (const uint32_t *)st->fix[0],
                                                 (uint32_t *)st->out[0], (int)p[3]);
    return (int)cudaGetLastError();
}

/* Walks sampled chains on the host over a copy of the node array. */
static int pointer_chase_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t T = (size_t)p[1] * p[2];
    uint32_t *nodes = (uint32_t *)zmalloc_host((size_t)p[0]);
    uint64_t r = 54;
    long bad = 0, checked = 0;
    int rc;
    if (!nodes)
        return 1;
    rc = zget(nodes, zin(st, 0), 0, (size_t)p[0]);
    for (int k = 0; k < 64 && !rc; k++, checked++) {
        size_t t = zrand(&r) % T;
        uint32_t cur, got;
        rc = zget(&cur, st->fix[0], t * 4, 4) || zget(&got, st->out[0], t * 4, 4);
        for (long s = 0; s < p[3]; s++)
            cur = nodes[(size_t)cur * PC_NODE_WORDS];
        bad += cur != got;
    }
    free(nodes);
    return rc ? rc : zverdict(inst, bad, checked, bad ? 1 : 0, 0);
}

/* ---- gemv_cublas: y = A x with A stored row-major M x K (column-major
 * K x M, transposed in the call), so each output is a dot product over a
 * contiguous row; p = {M, K, dtype}. dtype 0: cublasSgemv; dtype 1:
 * cublasGemmEx with N = 1, bf16 in and out, fp32 compute. */
static size_t gemv_cublas_ws(const struct zoo_variant *v)
{
    const long *p = v->p;
    return ((size_t)p[0] * p[1] + p[0] + p[1]) * (p[2] ? 2 : 4);
}

ZSETUP(gemv_cublas)
static int gemv_cublas_setup_(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    size_t e = p[2] ? 2 : 4;
    int f = p[2] ? ZF_BF16 : ZF_F32;
    struct zbuf in[2] = {{(size_t)p[0] * p[1] * e, f, -1.f, 1.f}, {(size_t)p[1] * e, f, -1.f, 1.f}};
    size_t out = (size_t)p[0] * e;
    int rc = zs_create(inst, 2, in, 1, &out);
    return rc ? rc : zblas_init(ZS(inst));
}

static int gemv_cublas_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    int m = (int)p[0], k = (int)p[1], rc = zblas_stream(st, s);
    float alpha = 1.f, beta = 0.f;
    cublasStatus_t bs;
    if (rc)
        return rc;
    if (p[2])
        bs = cublasGemmEx(st->blas, CUBLAS_OP_T, CUBLAS_OP_N, m, 1, k, &alpha, zin(st, 0),
                          CUDA_R_16BF, k, zin(st, 1), CUDA_R_16BF, k, &beta, st->out[0],
                          CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else
        bs = cublasSgemv(st->blas, CUBLAS_OP_T, k, m, &alpha, (const float *)zin(st, 0), k,
                         (const float *)zin(st, 1), 1, &beta, (float *)st->out[0], 1);
    return zblas_done(bs, inst->v->name);
}

static int gemv_cublas_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t M = (size_t)p[0], K = (size_t)p[1], e = p[2] ? 2 : 4;
    unsigned char *a = (unsigned char *)zmalloc_host(2 * K * e + e);
    uint64_t r = 55;
    long bad = 0, checked = 0;
    double maxe = 0, tol = p[2] ? 1e-2 : 1e-5;
    int rc;
    if (!a)
        return 1;
    unsigned char *x = a + K * e, *y = x + K * e;
    rc = zget(x, zin(st, 1), 0, K * e);
    for (int t = 0; t < 32 && !rc; t++, checked++) {
        size_t i = t == 0 ? M - 1 : zrand(&r) % M;
        rc = zget(a, zin(st, 0), i * K * e, K * e) || zget(y, st->out[0], i * e, e);
        double err = zdot_err(a, x, K, p[2] != 0, zval(y, 0, p[2] != 0));
        if (!(err <= tol))
            bad++;
        if (err > maxe)
            maxe = err;
    }
    free(a);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ---- spmv: y = A x, CSR fp32, 16..64 nonzeros per row (mean 40) at
 * uniformly random columns; p = {rows, cols, mode, threads}. mode 0: one
 * warp per row (coalesced row reads); mode 1: one thread per row (each
 * lane walks its own row: scattered reads of the CSR arrays too). The
 * gathers of x are the latency part: x of 4 MiB sits in L2, x of 256 MiB
 * does not. The structure (row pointers, column indices) is built once,
 * deterministically, and shared by all slots; values and x are per slot. */
#define SPMV_MINNZ 16
#define SPMV_SPAN 49

static uint32_t spmv_row_nnz(uint64_t seed, size_t row)
{
    return SPMV_MINNZ + zhash(seed ^ (row * ZGOLD)) % SPMV_SPAN;
}

__global__ void k_spmv_cols(const uint32_t *__restrict__ rp, uint32_t *__restrict__ ci, int rows,
                            uint32_t ncols, uint64_t seed)
{
    int row = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (row >= rows)
        return;
    for (uint32_t j = rp[row] + lane; j < rp[row + 1]; j += 32)
        ci[j] = zhash(seed ^ ((uint64_t)j * ZGOLD)) % ncols;
}

__global__ void k_spmv_warp(const uint32_t *__restrict__ rp, const uint32_t *__restrict__ ci,
                            const float *__restrict__ val, const float *__restrict__ x,
                            float *__restrict__ y, int rows)
{
    int row = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (row >= rows)
        return;
    float s = 0.f;
    for (uint32_t j = rp[row] + lane; j < rp[row + 1]; j += 32)
        s = fmaf(val[j], __ldg(x + ci[j]), s);
    s = warp_sum(s);
    if (lane == 0)
        y[row] = s;
}

__global__ void k_spmv_thread(const uint32_t *__restrict__ rp, const uint32_t *__restrict__ ci,
                              const float *__restrict__ val, const float *__restrict__ x,
                              float *__restrict__ y, int rows)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;
    float s = 0.f;
    for (uint32_t j = rp[row]; j < rp[row + 1]; j++)
        s = fmaf(val[j], __ldg(x + ci[j]), s);
    y[row] = s;
}

static size_t spmv_nnz(const struct zoo_variant *v)
{
    uint64_t seed = zname_seed(v->name);
    size_t nnz = 0;
    for (long r = 0; r < v->p[0]; r++)
        nnz += spmv_row_nnz(seed, (size_t)r);
    return nnz;
}

static size_t spmv_ws(const struct zoo_variant *v)
{
    /* Row pointers, columns and values, x once, y. */
    return ((size_t)v->p[0] + 1) * 4 + spmv_nnz(v) * 8 + (size_t)v->p[1] * 4 + (size_t)v->p[0] * 4;
}

ZSETUP(spmv)
static int spmv_setup_(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    size_t rows = (size_t)p[0], i;
    uint64_t seed = zname_seed(inst->v->name);
    uint32_t *rp = (uint32_t *)zmalloc_host((rows + 1) * 4);
    struct zs *st;
    int rc;
    if (!rp)
        return (int)cudaErrorMemoryAllocation;
    rp[0] = 0;
    for (i = 0; i < rows; i++)
        rp[i + 1] = rp[i] + spmv_row_nnz(seed, i);
    size_t nnz = rp[rows], out = rows * 4;
    struct zbuf in[2] = {{nnz * 4, ZF_F32, -1.f, 1.f}, {(size_t)p[1] * 4, ZF_F32, -1.f, 1.f}};
    rc = zs_create(inst, 2, in, 1, &out);
    st = ZS(inst);
    cudaError_t e = rc ? cudaSuccess : cudaMalloc(&st->fix[0], (rows + 1) * 4);
    if (!rc && e == cudaSuccess)
        e = cudaMemcpy(st->fix[0], rp, (rows + 1) * 4, cudaMemcpyHostToDevice);
    if (!rc && e == cudaSuccess)
        e = cudaMalloc(&st->fix[1], nnz * 4);
    free(rp);
    if (rc)
        return rc;
    ZCU(e);
    k_spmv_cols<<<zgrid(rows * 32, 256, 1), 256>>>((const uint32_t *)st->fix[0],
                                                   (uint32_t *)st->fix[1], (int)rows,
                                                   (uint32_t)p[1], seed);
    ZCU(cudaGetLastError());
    return 0;
}

static int spmv_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    int th = (int)p[3], rows = (int)p[0];
    const uint32_t *rp = (const uint32_t *)st->fix[0], *ci = (const uint32_t *)st->fix[1];
    if (p[2] == 0)
        k_spmv_warp<<<zgrid((size_t)rows * 32, th, 1), th, 0, s>>>(
            rp, ci, (const float *)zin(st, 0), (const float *)zin(st, 1), (float *)st->out[0], rows);
    else
        k_spmv_thread<<<zgrid((size_t)rows, th, 1), th, 0, s>>>(
            rp, ci, (const float *)zin(st, 0), (const float *)zin(st, 1), (float *)st->out[0], rows);
    return (int)cudaGetLastError();
}

static int spmv_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t X = (size_t)p[1];
    float *x = (float *)zmalloc_host(X * 4 + 2 * 64 * 4);
    uint64_t r = 56;
    long bad = 0, checked = 0;
    double maxe = 0, tol = 1e-5;
    int rc;
    if (!x)
        return 1;
    float *v = x + X;
    uint32_t *c = (uint32_t *)(v + 64);
    rc = zget(x, zin(st, 1), 0, X * 4);
    for (int t = 0; t < 64 && !rc; t++, checked++) {
        size_t row = t == 0 ? (size_t)p[0] - 1 : zrand(&r) % (size_t)p[0];
        uint32_t b[2];
        float got;
        rc = zget(b, st->fix[0], row * 4, 8);
        rc = rc || b[1] - b[0] > 64 || zget(v, zin(st, 0), (size_t)b[0] * 4, (b[1] - b[0]) * 4) ||
             zget(c, st->fix[1], (size_t)b[0] * 4, (b[1] - b[0]) * 4) ||
             zget(&got, st->out[0], row * 4, 4);
        double ref = 0, sc = 0;
        for (uint32_t j = 0; j < b[1] - b[0] && !rc; j++) {
            ref += (double)v[j] * x[c[j]];
            sc += fabs((double)v[j] * x[c[j]]);
        }
        double e = fabs(got - ref) / (sc + 1e-30);
        if (!(e <= tol))
            bad++;
        if (e > maxe)
            maxe = e;
    }
    free(x);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ======================================================================== */
/* SMEM families                                                             */
/* ======================================================================== */

/* ---- histogram over n 32-bit words; p = {n, bins, PK(replicas, skewed),
 * PK(blocks, threads)}. With 256 bins it is a byte histogram (each word
 * gives 4 values, 4 shared atomics per 4 bytes read); with more bins each
 * word gives one value, its low log2(bins) bits. Each block keeps `replicas`
 * sub-histograms in dynamic shared memory (warp w adds into replica
 * w % replicas, which spreads contention), folds them at the end and writes
 * its own partial histogram out[block][bins]: no global atomics, so one
 * launch is one kernel and the output needs no zeroing. Skewed data (see
 * zskew) send most values to a few hot bins, so lanes of a warp hit the
 * same shared address and their atomics serialise. */
__global__ void k_histogram(const uint4 *__restrict__ in, size_t n4, uint32_t *__restrict__ part,
                            int bins, int reps)
{
    extern __shared__ uint32_t hist_sm[];
    const int tot = bins * reps;
    for (int i = threadIdx.x; i < tot; i += blockDim.x)
        hist_sm[i] = 0;
    __syncthreads();
    uint32_t *my = hist_sm + ((threadIdx.x >> 5) % reps) * bins, mask = (uint32_t)bins - 1;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        uint4 v = in[i];
        if (bins == 256) { /* uniform across the grid: no divergence */
            uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int k = 0; k < 4; k++) {
                atomicAdd(&my[w[k] & 255u], 1u);
                atomicAdd(&my[(w[k] >> 8) & 255u], 1u);
                atomicAdd(&my[(w[k] >> 16) & 255u], 1u);
                atomicAdd(&my[w[k] >> 24], 1u);
            }
        } else {
            atomicAdd(&my[v.x & mask], 1u);
            atomicAdd(&my[v.y & mask], 1u);
            atomicAdd(&my[v.z & mask], 1u);
            atomicAdd(&my[v.w & mask], 1u);
        }
    }
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += blockDim.x) {
        uint32_t s = 0;
        for (int r = 0; r < reps; r++)
            s += hist_sm[r * bins + b];
        part[(size_t)blockIdx.x * bins + b] = s;
    }
}

static size_t hist_smem(const struct zoo_variant *v) { return (size_t)v->p[1] * PK_HI(v->p[2]) * 4; }

static size_t histogram_ws(const struct zoo_variant *v)
{
    return (size_t)v->p[0] * 4 + (size_t)PK_HI(v->p[3]) * v->p[1] * 4;
}

ZSETUP(histogram)
static int histogram_setup_(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zbuf in = {(size_t)p[0] * 4, PK_LO(p[2]) ? ZF_U32_SKEW : ZF_U32, 0, 0};
    size_t out = (size_t)PK_HI(p[3]) * p[1] * 4;
    int rc = zs_create(inst, 1, &in, 1, &out);
    if (rc)
        return rc;
    ZCU(raise_dyn_smem_limit((const void *)k_histogram, hist_smem(inst->v)));
    return 0;
}

static int histogram_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_histogram<<<PK_HI(p[3]), PK_LO(p[3]), hist_smem(inst->v), s>>>(
        (const uint4 *)zin(st, 0), (size_t)p[0] / 4, (uint32_t *)st->out[0], (int)p[1],
        PK_HI(p[2]));
    return (int)cudaGetLastError();
}

/* Exact: the whole input is histogrammed on the host and compared with the
 * sum of the per-block partials, bin by bin. */
static int histogram_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t n = (size_t)p[0], bins = (size_t)p[1], nb = (size_t)PK_HI(p[3]);
    uint32_t *x = (uint32_t *)zmalloc_host((n + nb * bins + 2 * bins) * 4);
    long bad = 0;
    int rc;
    if (!x)
        return 1;
    uint32_t *part = x + n, *ref = part + nb * bins, *got = ref + bins;
    rc = zget(x, zin(st, 0), 0, n * 4) || zget(part, st->out[0], 0, nb * bins * 4);
    memset(ref, 0, bins * 8);
    for (size_t i = 0; i < n && !rc; i++) {
        if (bins == 256) {
            ref[x[i] & 255]++;
            ref[(x[i] >> 8) & 255]++;
            ref[(x[i] >> 16) & 255]++;
            ref[x[i] >> 24]++;
        } else {
            ref[x[i] & (bins - 1)]++;
        }
    }
    for (size_t b = 0; b < nb && !rc; b++)
        for (size_t k = 0; k < bins; k++)
            got[k] += part[b * bins + k];
    for (size_t k = 0; k < bins && !rc; k++)
        bad += got[k] != ref[k];
    free(x);
    return rc ? rc : zverdict(inst, bad, (long)bins, bad ? 1 : 0, 0);
}

/* ---- scan: block-level inclusive scan of uint32 (wrapping sums, so the
 * check is exact); p = {n, threads, items}. Each block scans one tile of
 * threads * items values staged in dynamic shared memory: a coalesced load,
 * a serial scan of each thread's `items` consecutive values, a warp-shuffle
 * scan of the thread totals, a scan of the warp totals by warp 0, and a
 * coalesced store; the tile's total goes to sums[block]. Index i lives at
 * i + i/32 in shared memory, which makes the per-thread strided accesses
 * free of bank conflicts for items = 4, 8, 16. With 1024 threads x 16
 * items the tile takes 66 KB (over the 48 KB default). */
#define SCAN_PAD(i) ((i) + ((i) >> 5))

__global__ void k_scan(const uint4 *__restrict__ in, uint4 *__restrict__ out,
                       uint32_t *__restrict__ sums, int items)
{
    extern __shared__ uint32_t scan_sm[];
    __shared__ uint32_t wsum[32];
    const int tile = blockDim.x * items, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const size_t base4 = (size_t)blockIdx.x * (tile / 4);
    for (int i = threadIdx.x; i < tile / 4; i += blockDim.x) {
        uint4 v = in[base4 + i];
        int j = SCAN_PAD(4 * i); /* the 4 values share one 32-word group */
        scan_sm[j] = v.x;
        scan_sm[j + 1] = v.y;
        scan_sm[j + 2] = v.z;
        scan_sm[j + 3] = v.w;
    }
    __syncthreads();
    const int b0 = threadIdx.x * items;
    uint32_t run = 0;
    for (int k = 0; k < items; k++) {
        run += scan_sm[SCAN_PAD(b0 + k)];
        scan_sm[SCAN_PAD(b0 + k)] = run;
    }
    uint32_t x = run;
    for (int o = 1; o < 32; o <<= 1) {
        uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o)
            x += y;
    }
    if (lane == 31)
        wsum[warp] = x;
    __syncthreads();
    if (warp == 0) {
        int nw = blockDim.x >> 5;
        uint32_t w = lane < nw ? wsum[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            uint32_t y = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o)
                w += y;
        }
        wsum[lane] = w;
    }
    __syncthreads();
    const uint32_t off = x - run + (warp ? wsum[warp - 1] : 0);
    for (int k = 0; k < items; k++)
        scan_sm[SCAN_PAD(b0 + k)] += off;
    if (threadIdx.x == blockDim.x - 1)
        sums[blockIdx.x] = off + run;
    __syncthreads();
    for (int i = threadIdx.x; i < tile / 4; i += blockDim.x) {
        int j = SCAN_PAD(4 * i);
        out[base4 + i] = make_uint4(scan_sm[j], scan_sm[j + 1], scan_sm[j + 2], scan_sm[j + 3]);
    }
}

static size_t scan_tile(const struct zoo_variant *v) { return (size_t)v->p[1] * v->p[2]; }
static size_t scan_smem(const struct zoo_variant *v) { return SCAN_PAD(scan_tile(v)) * 4; }

static size_t scan_ws(const struct zoo_variant *v)
{
    return 2 * (size_t)v->p[0] * 4 + (size_t)v->p[0] / scan_tile(v) * 4;
}

ZSETUP(scan)
static int scan_setup_(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zbuf in = {(size_t)p[0] * 4, ZF_U32, 0, 0};
    size_t out[2] = {(size_t)p[0] * 4, (size_t)p[0] / scan_tile(inst->v) * 4};
    int rc = zs_create(inst, 1, &in, 2, out);
    if (rc)
        return rc;
    ZCU(raise_dyn_smem_limit((const void *)k_scan, scan_smem(inst->v)));
    return 0;
}

static int scan_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_scan<<<(unsigned)(p[0] / scan_tile(inst->v)), (int)p[1], scan_smem(inst->v), s>>>(
        (const uint4 *)zin(st, 0), (uint4 *)st->out[0], (uint32_t *)st->out[1], (int)p[2]);
    return (int)cudaGetLastError();
}

static int scan_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t tile = scan_tile(inst->v), nb = (size_t)p[0] / tile;
    uint32_t *a = (uint32_t *)zmalloc_host(2 * tile * 4);
    uint64_t r = 57;
    long bad = 0, checked = 0;
    int rc = 0;
    if (!a)
        return 1;
    uint32_t *o = a + tile;
    for (int t = 0; t < 16 && !rc; t++) {
        size_t b = t == 0 ? nb - 1 : zrand(&r) % nb;
        uint32_t sum, run = 0;
        rc = zget(a, zin(st, 0), b * tile * 4, tile * 4) || zget(o, st->out[0], b * tile * 4, tile * 4) ||
             zget(&sum, st->out[1], b * 4, 4);
        for (size_t i = 0; i < tile && !rc; i++, checked++) {
            run += a[i];
            bad += o[i] != run;
        }
        bad += sum != run;
        checked++;
    }
    free(a);
    return rc ? rc : zverdict(inst, bad, checked, bad ? 1 : 0, 0);
}

/* ---- transpose (fp32): out[c][r] = in[r][c] for rows x cols; p = {rows,
 * cols, mode, block rows}. Blocks are 32 x p[3] threads, each covering a
 * 32 x 32 tile (32/p[3] elements per thread).
 * mode 0, naive (MEMORY): coalesced reads, stores at a stride of `rows`
 *         floats, so each warp store touches 32 sectors.
 * mode 1, tiled (SMEM): through a 32 x 33 shared tile, coalesced both ways,
 *         conflict-free.
 * mode 2, tiled without padding (SMEM): the column reads of the 32 x 32 tile
 *         hit one bank 32 times (32-way conflicts). */
__global__ void k_transpose_naive(const float *__restrict__ in, float *__restrict__ out, int rows,
                                  int cols)
{
    int x = blockIdx.x * 32 + threadIdx.x, y0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        out[(size_t)x * rows + y0 + j] = in[(size_t)(y0 + j) * cols + x];
}

__global__ void k_transpose_tiled(const float *__restrict__ in, float *__restrict__ out, int rows,
                                  int cols, int ld)
{
    __shared__ float t[32 * 33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        t[j * ld + threadIdx.x] = in[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        out[(size_t)(y + j) * rows + x] = t[threadIdx.x * ld + j];
}

static size_t transpose_ws(const struct zoo_variant *v) { return 2 * (size_t)v->p[0] * v->p[1] * 4; }

ZSETUP(transpose)
static int transpose_setup_(struct zoo_inst *inst)
{
    size_t b = (size_t)inst->v->p[0] * inst->v->p[1] * 4;
    struct zbuf in = {b, ZF_F32, -1.f, 1.f};
    return zs_create(inst, 1, &in, 1, &b);
}

static int transpose_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    dim3 g((unsigned)(p[1] / 32), (unsigned)(p[0] / 32)), b(32, (unsigned)p[3]);
    if (p[2] == 0)
        k_transpose_naive<<<g, b, 0, s>>>((const float *)zin(st, 0), (float *)st->out[0], (int)p[0],
                                          (int)p[1]);
    else
        k_transpose_tiled<<<g, b, 0, s>>>((const float *)zin(st, 0), (float *)st->out[0], (int)p[0],
                                          (int)p[1], p[2] == 1 ? 33 : 32);
    return (int)cudaGetLastError();
}

/* Sampled whole input rows against the matching output columns. */
static int transpose_check(struct zoo_inst *inst)
{
    const long *p = inst->v->p;
    struct zs *st = ZS(inst);
    size_t R = (size_t)p[0], C = (size_t)p[1];
    float *a = (float *)zmalloc_host(C * 4);
    uint64_t r = 58;
    long bad = 0, checked = 0;
    int rc = 0;
    if (!a)
        return 1;
    for (int t = 0; t < 4 && !rc; t++) {
        size_t row = t == 0 ? R - 1 : zrand(&r) % R;
        rc = zget(a, zin(st, 0), row * C * 4, C * 4);
        for (int u = 0; u < 256 && !rc; u++, checked++) {
            size_t c = u == 0 ? C - 1 : zrand(&r) % C;
            float got;
            rc = zget(&got, st->out[0], (c * R + row) * 4, 4);
            bad += memcmp(&got, &a[c], 4) != 0;
        }
    }
    free(a);
    return rc ? rc : zverdict(inst, bad, checked, bad ? 1 : 0, 0);
}

/* ---- reduce (fp32 sum): p = {n, threads, items}. Each block sums one
 * chunk of threads * items values: every thread adds items/4 coalesced
 * float4, then the block folds its partial sums with the classic
 * shared-memory tree (one __syncthreads per level, half the threads idle
 * at each level) and writes one value per block. Many small blocks make
 * the tree, not DRAM, a large share of the time. */
__global__ void k_reduce(const float4 *__restrict__ in, float *__restrict__ part, int items)
{
    extern __shared__ float red_sm[];
    const size_t base = (size_t)blockIdx.x * blockDim.x * (items / 4);
    float s = 0.f;
    for (int k = 0; k < items / 4; k++) {
        float4 v = in[base + (size_t)k * blockDim.x + threadIdx.x];
        s += (v.x + v.y) + (v.z + v.w);
    }
    red_sm[threadIdx.x] = s;
    __syncthreads();
    for (int o = blockDim.x >> 1; o > 0; o >>= 1) {
        if (threadIdx.x < o)
            red_sm[threadIdx.x] += red_sm[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        part[blockIdx.x] = red_sm[0];
}

static size_t reduce_chunk(const struct zoo_variant *v) { return (size_t)v->p[1] * v->p[2]; }

static size_t reduce_ws(const struct zoo_variant *v)
{
    return (size_t)v->p[0] * 4 + (size_t)v->p[0] / reduce_chunk(v) * 4;
}

ZSETUP(reduce)
static int reduce_setup_(struct zoo_inst *inst)
{
    /* Positive values, so that a partial sum cannot cancel and a relative
     * error of 1e-5 is meaningful. */
    struct zbuf in = {(size_t)inst->v->p[0] * 4, ZF_F32, 0.5f, 1.5f};
    size_t out = (size_t)inst->v->p[0] / reduce_chunk(inst->v) * 4;
    return zs_create(inst, 1, &in, 1, &out);
}

static int reduce_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_reduce<<<(unsigned)(p[0] / reduce_chunk(inst->v)), (int)p[1], (size_t)p[1] * 4, s>>>(
        (const float4 *)zin(st, 0), (float *)st->out[0], (int)p[2]);
    return (int)cudaGetLastError();
}

static int reduce_check(struct zoo_inst *inst)
{
    struct zs *st = ZS(inst);
    size_t ch = reduce_chunk(inst->v), nb = (size_t)inst->v->p[0] / ch;
    float *a = (float *)zmalloc_host(ch * 4);
    uint64_t r = 59;
    long bad = 0, checked = 0;
    double maxe = 0, tol = 1e-5;
    int rc = 0;
    if (!a)
        return 1;
    for (int t = 0; t < 32 && !rc; t++, checked++) {
        size_t b = t == 0 ? nb - 1 : zrand(&r) % nb;
        float got;
        rc = zget(a, zin(st, 0), b * ch * 4, ch * 4) || zget(&got, st->out[0], b * 4, 4);
        double ref = 0;
        for (size_t i = 0; i < ch; i++)
            ref += a[i];
        double e = zrel(got, ref, 1e-30);
        if (!(e <= tol))
            bad++;
        if (e > maxe)
            maxe = e;
    }
    free(a);
    return rc ? rc : zverdict(inst, bad, checked, maxe, tol);
}

/* ======================================================================== */
/* The variant table                                                          */
/* ======================================================================== */

#define ZV(fam, name, cat, p0, p1, p2, p3)                                  \
    {                                                                       \
        #fam, name, cat, {(long)(p0), (long)(p1), (long)(p2), (long)(p3)},  \
            fam##_ws, fam##_setup, fam##_launch, fam##_check, zs_teardown   \
    }

/* Per variant: "~t" is the estimate made before measuring, "H200:" the
 * mean of 10 launches measured on an H200 (rotating input copies, one
 * stream, nothing else running); "ws" is the working set (bytes read +
 * written). */
extern "C" const struct zoo_variant zoo_variants[] = {
    /* ---- MEMORY ---- */
    /* copy {bytes, blocks (0 = auto), threads} */
    ZV(copy, "copy_128M", ZOO_MEMORY, 128 * MiB, 0, 256, 0),      /* ws 256 MiB, ~62 us, 8192 blocks; H200: 68 us */
    ZV(copy, "copy_256M_half", ZOO_MEMORY, 256 * MiB, 66, 512, 0), /* ws 512 MiB; 66 blocks (half the SMs): ~150-250 us; H200: 156 us */
    ZV(copy, "copy_512M_w1", ZOO_MEMORY, 512 * MiB, 132, 1024, 0), /* ws 1 GiB, one wave of 1024-thread blocks, ~250 us; H200: 273 us */
    ZV(copy, "copy_1G", ZOO_MEMORY, 1 * GiB, 0, 128, 0),          /* ws 2 GiB, ~500 us, 131072 blocks of 128; H200: 513 us */

    /* triad {bytes per array, blocks (0 = auto), threads} */
    ZV(triad, "triad_128M", ZOO_MEMORY, 128 * MiB, 0, 256, 0),       /* ws 384 MiB, ~94 us; H200: 106 us */
    ZV(triad, "triad_256M_b64", ZOO_MEMORY, 256 * MiB, 0, 64, 0),    /* ws 768 MiB, ~187 us, 64-thread blocks; H200: 188 us */
    ZV(triad, "triad_512M_w2", ZOO_MEMORY, 512 * MiB, 264, 512, 0),  /* ws 1.5 GiB, ~375 us, 2 blocks/SM; H200: 396 us */

    /* silu_and_mul {T, D, dtype (1 bf16), threads} */
    ZV(silu_and_mul, "silu_and_mul_bf16_4096x11008", ZOO_MEMORY, 4096, 11008, 1, 128),   /* ws 270 MB, ~63 us; H200: 72 us */
    ZV(silu_and_mul, "silu_and_mul_bf16_16384x14336", ZOO_MEMORY, 16384, 14336, 1, 256), /* ws 1.41 GB, ~330 us; H200: 323 us */
    ZV(silu_and_mul, "silu_and_mul_f32_8192x4096", ZOO_MEMORY, 8192, 4096, 0, 512),      /* ws 403 MB, ~94 us; H200: 106 us */

    /* rmsnorm {rows, hidden, threads} */
    ZV(rmsnorm, "rmsnorm_4096x8192", ZOO_MEMORY, 4096, 8192, 256, 0),      /* ws 256 MiB, ~62 us; H200: 93 us */
    ZV(rmsnorm, "rmsnorm_16384x4096", ZOO_MEMORY, 16384, 4096, 128, 0),    /* ws 512 MiB, ~125 us; H200: 183 us */
    ZV(rmsnorm, "rmsnorm_8192x16384", ZOO_MEMORY, 8192, 16384, 1024, 0),   /* ws 1 GiB, ~250 us; H200: 282 us */
    ZV(rmsnorm, "rmsnorm_128x262144", ZOO_MEMORY, 128, 262144, 1024, 0),   /* ws 256 MiB, 128 blocks (< 1 wave), 2nd pass from L2: ~100-200 us; H200: 125 us */

    /* softmax {rows, cols, mode (0 warp/row, 1 block/row), threads} */
    ZV(softmax, "softmax_warp_65536x1024", ZOO_MEMORY, 65536, 1024, 0, 256), /* ws 512 MiB, ~125 us; H200: 132 us */
    ZV(softmax, "softmax_warp_262144x256", ZOO_MEMORY, 262144, 256, 0, 128), /* ws 512 MiB, ~125 us; H200: 140 us */
    ZV(softmax, "softmax_block_8192x8192", ZOO_MEMORY, 8192, 8192, 1, 512),  /* ws 512 MiB, ~125 us (+L2 re-read); H200: 144 us */
    ZV(softmax, "softmax_block_2048x65536", ZOO_MEMORY, 2048, 65536, 1, 1024), /* ws 1 GiB, ~250-350 us (2nd read partly DRAM); H200: 399 us */

    /* batchnorm {N, C, H*W, threads} */
    ZV(batchnorm, "batchnorm_64x256x56x56", ZOO_MEMORY, 64, 256, 56 * 56, 256),     /* ws 411 MB, ~96 us, 16384 blocks; H200: 112 us */
    ZV(batchnorm, "batchnorm_64x128x112x112", ZOO_MEMORY, 64, 128, 112 * 112, 512), /* ws 822 MB, ~191 us; H200: 201 us */
    ZV(batchnorm, "batchnorm_256x512x14x14", ZOO_MEMORY, 256, 512, 14 * 14, 64),    /* ws 205 MB, ~50-70 us, 131072 tiny blocks; H200: 83 us */

    /* stencil3d {nx, ny, nz, block shape} */
    ZV(stencil3d, "stencil3d_320", ZOO_MEMORY, 320, 320, 320, SHAPE3(32, 4, 2)),  /* ws 262 MB, ~61 us, 256 thr; H200: 130 us */
    ZV(stencil3d, "stencil3d_448", ZOO_MEMORY, 448, 448, 448, SHAPE3(64, 4, 4)),  /* ws 719 MB, ~167 us, 1024 thr; H200: 459 us */
    ZV(stencil3d, "stencil3d_512", ZOO_MEMORY, 512, 512, 512, SHAPE3(32, 2, 1)),  /* ws 1.07 GB, ~250 us, 64 thr; H200: 1.26 ms */

    /* transpose, naive (MEMORY) {rows, cols, mode 0, block rows} */
    ZV(transpose, "transpose_naive_8192", ZOO_MEMORY, 8192, 8192, 0, 8),        /* ws 512 MiB; scattered stores: ~200-400 us; H200: 1.07 ms */
    ZV(transpose, "transpose_naive_16384x4096", ZOO_MEMORY, 16384, 4096, 0, 32), /* ws 512 MiB, 1024-thread blocks; H200: 994 us */

    /* ---- COMPUTE ---- */
    /* fma {blocks, threads, iters, chains}; time = FMAs / 33.4 T FMA/s */
    ZV(fma, "fma_w1_b256_c8", ZOO_COMPUTE, 132, 256, 24576, 8),    /* 6.6e9 FMA, one wave, ~200 us; H200: 220 us */
    ZV(fma, "fma_8448_b128_c8", ZOO_COMPUTE, 8448, 128, 1024, 8),  /* 8.9e9 FMA, 4 waves at 16 blocks/SM, ~265 us; H200: 304 us */
    ZV(fma, "fma_264_b1024_c32", ZOO_COMPUTE, 264, 1024, 512, 32), /* 4.4e9 FMA, 32 chains (more registers), ~133 us; H200: 146 us */
    ZV(fma, "fma_66_b64_c32", ZOO_COMPUTE, 66, 64, 8192, 32),      /* 1.1e9 FMA on half the SMs, 2 warps each: ~130 us; H200: 171 us */

    /* gemm_cublas {M, N, K, dtype (1 bf16 tensor core, 0 fp32 SGEMM)} */
    ZV(gemm_cublas, "gemm_cublas_bf16_4096", ZOO_COMPUTE, 4096, 4096, 4096, 1),           /* 137 GFLOP, ~180-220 us; H200: 174 us */
    ZV(gemm_cublas, "gemm_cublas_bf16_8192", ZOO_COMPUTE, 8192, 8192, 8192, 1),           /* 1.1 TFLOP, ~1.4 ms; H200: 1.39 ms */
    ZV(gemm_cublas, "gemm_cublas_bf16_2048x2048x8192", ZOO_COMPUTE, 2048, 2048, 8192, 1), /* 69 GFLOP, ~128 tiles = one wave, ~90-120 us; H200: 89 us */
    ZV(gemm_cublas, "gemm_cublas_f32_2048", ZOO_COMPUTE, 2048, 2048, 2048, 0),            /* 17 GFLOP at ~50 TFLOP/s, ~350 us; H200: 343 us */
    ZV(gemm_cublas, "gemm_cublas_f32_4096", ZOO_COMPUTE, 4096, 4096, 4096, 0),            /* 137 GFLOP, ~2.7 ms; H200: 2.69 ms */

    /* attention {B*H, S, BQ (threads), BK (K/V rows per smem tile)}; flops
     * 4*BH*S^2*64, at ~20-30 TFLOP/s fp32 */
    ZV(attention, "attention_bh64_s1024_q128_k32", ZOO_COMPUTE, 64, 1024, 128, 32),  /* 17 GFLOP, 512 blocks of 128, 16 KB smem, ~0.6-0.9 ms; H200: 847 us */
    ZV(attention, "attention_bh16_s2048_q64_k128", ZOO_COMPUTE, 16, 2048, 64, 128),  /* 17 GFLOP, 512 blocks of 64, 64 KB smem, ~0.6-0.9 ms; H200: 1.57 ms */
    ZV(attention, "attention_bh32_s512_q128_k128", ZOO_COMPUTE, 32, 512, 128, 128), /* 2.1 GFLOP, 128 blocks (one wave), 64 KB smem, ~150-250 us; H200: 189 us */
    ZV(attention, "attention_bh8_s4096_q256_k64", ZOO_COMPUTE, 8, 4096, 256, 64),    /* 34 GFLOP, 128 blocks of 256, 32 KB smem, ~1.5-2.5 ms; H200: 1.62 ms */

    /* conv {N, C (= K), H (= W), tile}; flops 2*N*C^2*H^2*9 at ~20 TFLOP/s */
    ZV(conv, "conv_n32_c64_h56_t16", ZOO_COMPUTE, 32, 64, 56, 16),   /* 7.4 GFLOP, 2048 blocks of 256, ~370 us; H200: 509 us */
    ZV(conv, "conv_n16_c128_h28_t8", ZOO_COMPUTE, 16, 128, 28, 8),   /* 3.7 GFLOP, 2048 blocks of 64, ~250 us (77% tile use); H200: 358 us */
    ZV(conv, "conv_n8_c256_h14_t16", ZOO_COMPUTE, 8, 256, 14, 16),   /* 1.85 GFLOP, 128 blocks (one wave), ~150-300 us; H200: 252 us */
    ZV(conv, "conv_n8_c64_h112_t32", ZOO_COMPUTE, 8, 64, 112, 32),   /* 7.4 GFLOP, 1024 blocks of 32x16, 24 KB smem, ~370 us; H200: 571 us */
#ifdef ZOO_WITH_CUDNN
    /* conv_cudnn {N, C, H}; cuDNN with TF32 allowed: a few times faster */
    ZV(conv_cudnn, "conv_cudnn_n32_c64_h56", ZOO_COMPUTE, 32, 64, 56, 0),  /* 7.4 GFLOP, ~50-150 us; H200: 89 us */
    ZV(conv_cudnn, "conv_cudnn_n16_c128_h28", ZOO_COMPUTE, 16, 128, 28, 0), /* 3.7 GFLOP, ~30-100 us; H200: 103 us */
    ZV(conv_cudnn, "conv_cudnn_n8_c64_h112", ZOO_COMPUTE, 8, 64, 112, 0),  /* 7.4 GFLOP, ~50-150 us; H200: 123 us */
#endif

    /* ---- LATENCY ---- */
    /* pointer_chase {footprint, blocks, threads, steps}; ~steps x latency */
    ZV(pointer_chase, "pointer_chase_1M", ZOO_LATENCY, 1 * MiB, 132, 64, 2048),    /* L2: ~2048 x 0.3 us = ~0.6 ms; H200: 455 us */
    ZV(pointer_chase, "pointer_chase_32M", ZOO_LATENCY, 32 * MiB, 132, 128, 1024), /* L2 (both halves): ~0.3-0.5 ms; H200: 310 us */
    ZV(pointer_chase, "pointer_chase_256M", ZOO_LATENCY, 256 * MiB, 132, 64, 1024), /* DRAM: ~1024 x 0.7 us = ~0.7 ms; H200: 616 us */
    ZV(pointer_chase, "pointer_chase_1G", ZOO_LATENCY, 1 * GiB, 66, 256, 512),     /* DRAM + TLB misses: ~0.4-0.6 ms; H200: 357 us */

    /* gemv_cublas {M, K, dtype (1 bf16 GemmEx N=1, 0 Sgemv)} */
    ZV(gemv_cublas, "gemv_cublas_f32_8192x8192", ZOO_LATENCY, 8192, 8192, 0, 0),     /* ws 256 MiB, ~62 us; H200: 89 us */
    ZV(gemv_cublas, "gemv_cublas_f32_16384x16384", ZOO_LATENCY, 16384, 16384, 0, 0), /* ws 1 GiB, ~250 us; H200: 260 us */
    ZV(gemv_cublas, "gemv_cublas_bf16_16384x16384", ZOO_LATENCY, 16384, 16384, 1, 0), /* ws 512 MiB, ~125 us; H200: 126 us */
    ZV(gemv_cublas, "gemv_cublas_bf16_32768x8192", ZOO_LATENCY, 32768, 8192, 1, 0),  /* ws 512 MiB, ~125 us; H200: 128 us */

    /* spmv {rows, cols, mode (0 warp/row, 1 thread/row), threads}; 40 nnz/row */
    ZV(spmv, "spmv_1M_x1M", ZOO_LATENCY, 1 << 20, 1 << 20, 0, 256),      /* ws ~340 MB, x in L2: ~100 us; H200: 339 us */
    ZV(spmv, "spmv_2M_x64M", ZOO_LATENCY, 2 << 20, 64 << 20, 0, 128),    /* ws ~0.95 GB, 84M random DRAM gathers: ~0.7-1 ms; H200: 2.05 ms */
    ZV(spmv, "spmv_2M_x2M_thread", ZOO_LATENCY, 2 << 20, 2 << 20, 1, 128), /* ws ~680 MB, scalar rows: ~0.3-0.5 ms; H200: 1.11 ms */

    /* ---- SMEM ---- */
    /* histogram {n, bins, PK(replicas, skewed), PK(blocks, threads)} */
    ZV(histogram, "histogram_256_uniform", ZOO_SMEM, 32 * MiB, 256, PK(8, 0), PK(264, 256)),   /* 128 MiB in, 128M atomics, 8 KB smem, ~250 us; H200: 72 us */
    ZV(histogram, "histogram_256_skewed", ZOO_SMEM, 32 * MiB, 256, PK(8, 1), PK(264, 256)),    /* same, ~88% on 8 bins of one bank; H200: 137 us */
    ZV(histogram, "histogram_4096_uniform", ZOO_SMEM, 64 * MiB, 4096, PK(4, 0), PK(132, 1024)), /* 64 KB smem, one wave, ~70-100 us; H200: 78 us */
    ZV(histogram, "histogram_4096_skewed", ZOO_SMEM, 64 * MiB, 4096, PK(1, 1), PK(528, 512)),  /* 16 KB smem, 4 blocks/SM, ~200-500 us; H200: 107 us */

    /* scan {n, threads, items}; uint32 */
    ZV(scan, "scan_64M_b256_i8", ZOO_SMEM, 64 * MiB, 256, 8, 0),     /* ws 512 MiB, 32768 blocks, 8.3 KB smem, ~125 us; H200: 142 us */
    ZV(scan, "scan_64M_b1024_i16", ZOO_SMEM, 64 * MiB, 1024, 16, 0), /* 4096 blocks, 66 KB smem, ~125-200 us; H200: 164 us */
    ZV(scan, "scan_128M_b128_i4", ZOO_SMEM, 128 * MiB, 128, 4, 0),   /* ws 1 GiB, 262144 blocks, 2 KB smem, ~250 us; H200: 295 us */

    /* transpose, tiled (SMEM) {rows, cols, mode (1 padded, 2 unpadded), block rows} */
    ZV(transpose, "transpose_tiled_8192", ZOO_SMEM, 8192, 8192, 1, 8),          /* ws 512 MiB, ~125 us; H200: 208 us */
    ZV(transpose, "transpose_tiled_16384x4096", ZOO_SMEM, 16384, 4096, 1, 32),  /* ws 512 MiB, 1024-thread blocks, ~125 us; H200: 334 us */
    ZV(transpose, "transpose_tiled_nopad_8192", ZOO_SMEM, 8192, 8192, 2, 8),    /* 32-way conflicts on the reads: ~150-250 us; H200: 384 us */

    /* reduce {n, threads, items} */
    ZV(reduce, "reduce_64M_b256_i4", ZOO_SMEM, 64 * MiB, 256, 4, 0),    /* 256 MiB, 65536 blocks: tree-bound, ~80-120 us; H200: 115 us */
    ZV(reduce, "reduce_128M_b64_i8", ZOO_SMEM, 128 * MiB, 64, 8, 0),    /* 512 MiB, 262144 blocks of 64, ~130-200 us; H200: 163 us */
    ZV(reduce, "reduce_256M_b1024_i16", ZOO_SMEM, 256 * MiB, 1024, 16, 0), /* 1 GiB, 16384 blocks, ~250 us; H200: 312 us */

    /* ---- HOLDOUT ----
     * Added in the second session, after the predictor was trained: other
     * sizes and launch shapes of existing families, measured on their own
     * (profiler/data/h200/holdout/) to check the shipped models on kernels
     * they never saw. Not part of the issue 3 dataset. */
    ZV(copy, "copy_64M", ZOO_MEMORY, 64 * MiB, 0, 256, 0),
    ZV(triad, "triad_64M_b128", ZOO_MEMORY, 64 * MiB, 0, 128, 0),
    ZV(rmsnorm, "rmsnorm_2048x16384", ZOO_MEMORY, 2048, 16384, 512, 0),
    ZV(softmax, "softmax_warp_131072x512", ZOO_MEMORY, 131072, 512, 0, 256),
    ZV(fma, "fma_2112_b256_c8", ZOO_COMPUTE, 2112, 256, 2048, 8),
    ZV(gemm_cublas, "gemm_cublas_bf16_3072", ZOO_COMPUTE, 3072, 3072, 3072, 1),
    ZV(attention, "attention_bh16_s1024_q128_k64", ZOO_COMPUTE, 16, 1024, 128, 64),
    ZV(conv, "conv_n16_c64_h56_t16", ZOO_COMPUTE, 16, 64, 56, 16),
    ZV(pointer_chase, "pointer_chase_8M", ZOO_LATENCY, 8 * MiB, 132, 64, 2048),
    ZV(histogram, "histogram_1024_uniform", ZOO_SMEM, 32 * MiB, 1024, PK(4, 0), PK(264, 256)),
    ZV(reduce, "reduce_64M_b512_i8", ZOO_SMEM, 64 * MiB, 512, 8, 0),
};

extern "C" const int zoo_n_variants = (int)(sizeof zoo_variants / sizeof zoo_variants[0]);

extern "C" const char *zoo_category_name(enum zoo_category c)
{
    switch (c) {
    case ZOO_MEMORY:
        return "MEMORY";
    case ZOO_COMPUTE:
        return "COMPUTE";
    case ZOO_LATENCY:
        return "LATENCY";
    case ZOO_SMEM:
        return "SMEM";
    }
    return "?";
}
