/*
 * The helpers that every family of the kernel zoo shares (declared, with
 * what they do, in kernels_common.h): errors, the device fill kernel, the
 * common instance state with its setup and teardown, and check helpers.
 */
#include "kernels_common.h"

int zfail(const char *what, const char *file, int line, int code,
          const char *msg)
{
    fprintf(stderr, "zoo: %s:%d: %s: %s\n", file, line, what, msg);
    return code ? code : (int)cudaErrorUnknown;
}

cudaError_t raise_dyn_smem_limit(const void *fn, size_t need)
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

uint64_t zname_seed(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

int zfill_dev(void *p, size_t bytes, int kind, float lo, float hi,
              uint64_t seed)
{
    size_t esz = kind == ZF_BF16 ? 2 : 4;
    size_t n = bytes / esz;
    if (kind == ZF_NONE || n == 0)
        return 0;
    size_t want = (n + 255) / 256;
    /* At most 16 blocks of 256 per SM of the H200 (132 SMs) the zoo was
     * written for; a grid-stride loop covers the rest, so on another GPU
     * this only changes how fast setup fills, not what it writes. */
    unsigned blocks = (unsigned)(want < 132 * 16 ? want : 132 * 16);
    k_fill<<<blocks, 256>>>(p, n, kind, lo, hi, seed);
    ZCU(cudaGetLastError());
    return 0;
}

uint64_t zrand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

float bf2f(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void zs_teardown(struct zoo_inst *inst)
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

int zs_create(struct zoo_inst *inst, int nin, const struct zbuf *ins,
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

int zsetup_run(struct zoo_inst *inst, int (*body)(struct zoo_inst *))
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

unsigned zgrid(size_t n, int threads, int per)
{
    size_t b = (n + (size_t)threads * per - 1) / ((size_t)threads * per);
    if (b < 1)
        b = 1;
    if (b > 0x7fffffffUL)
        b = 0x7fffffffUL;
    return (unsigned)b;
}

int zget(void *dst, const void *dev, size_t off, size_t bytes)
{
    ZCU(cudaMemcpy(dst, (const char *)dev + off, bytes, cudaMemcpyDeviceToHost));
    return 0;
}

void *zmalloc_host(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        fprintf(stderr, "zoo: host malloc of %zu bytes failed\n", bytes);
    return p;
}

int zverdict(struct zoo_inst *inst, long bad, long checked,
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

double zrel(double got, double ref, double floor_)
{
    double d = fabs(ref) > floor_ ? fabs(ref) : floor_;
    double e = fabs(got - ref) / d;
    return e == e ? e : 1e30; /* NaN fails */
}
