/*
 * Memory-bound neural-network layers of the kernel zoo: silu_and_mul,
 * rmsnorm, softmax and batchnorm, with the block reduction that rmsnorm
 * uses. The registry is zoo_variants.cu; shared helpers are in
 * kernels_common.h.
 */
#include "kernels_common.h"

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

size_t silu_and_mul_ws(const struct zoo_variant *v)
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

int silu_and_mul_launch(struct zoo_inst *inst, cudaStream_t s)
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

int silu_and_mul_check(struct zoo_inst *inst)
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

size_t rmsnorm_ws(const struct zoo_variant *v)
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

int rmsnorm_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_rmsnorm<<<(unsigned)p[0], (int)p[2], 0, s>>>((const float4 *)zin(st, 0),
                                                   (const float4 *)zin(st, 1),
                                                   (float4 *)st->out[0], (int)(p[1] / 4));
    return (int)cudaGetLastError();
}

int rmsnorm_check(struct zoo_inst *inst)
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

size_t softmax_ws(const struct zoo_variant *v) { return 2 * (size_t)v->p[0] * v->p[1] * 4; }

ZSETUP(softmax)
static int softmax_setup_(struct zoo_inst *inst)
{
    size_t b = (size_t)inst->v->p[0] * inst->v->p[1] * 4;
    struct zbuf in = {b, ZF_F32, -8.f, 8.f};
    return zs_create(inst, 1, &in, 1, &b);
}

int softmax_launch(struct zoo_inst *inst, cudaStream_t s)
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

int softmax_check(struct zoo_inst *inst)
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

size_t batchnorm_ws(const struct zoo_variant *v)
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

int batchnorm_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_batchnorm<<<(unsigned)(p[0] * p[1]), (int)p[3], 0, s>>>(
        (const float4 *)zin(st, 0), (float4 *)st->out[0], (const float *)zin(st, 1),
        (int)p[1], (int)(p[2] / 4));
    return (int)cudaGetLastError();
}

int batchnorm_check(struct zoo_inst *inst)
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
