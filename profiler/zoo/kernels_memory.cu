/*
 * Streaming memory families of the kernel zoo: copy, triad, stencil3d and
 * transpose (naive variants are memory bound, tiled ones shared-memory
 * heavy; one family, one file). The registry is zoo_variants.cu; the
 * helpers every family uses are in kernels_common.h.
 */
#include "kernels_common.h"

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

size_t copy_ws(const struct zoo_variant *v) { return 2 * (size_t)v->p[0]; }

ZSETUP(copy)
static int copy_setup_(struct zoo_inst *inst)
{
    struct zbuf in = {(size_t)inst->v->p[0], ZF_F32, -1.f, 1.f};
    size_t out = (size_t)inst->v->p[0];
    return zs_create(inst, 1, &in, 1, &out);
}

int copy_launch(struct zoo_inst *inst, cudaStream_t s)
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
int copy_check(struct zoo_inst *inst)
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

size_t triad_ws(const struct zoo_variant *v) { return 3 * (size_t)v->p[0]; }

ZSETUP(triad)
static int triad_setup_(struct zoo_inst *inst)
{
    size_t b = (size_t)inst->v->p[0];
    struct zbuf in[2] = {{b, ZF_F32, -1.f, 1.f}, {b, ZF_F32, -1.f, 1.f}};
    return zs_create(inst, 2, in, 1, &b);
}

int triad_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    size_t n4 = (size_t)p[0] / 16;
    unsigned g = p[1] ? (unsigned)p[1] : zgrid(n4, (int)p[2], 2);
    k_triad<<<g, (int)p[2], 0, s>>>((float4 *)st->out[0], (const float4 *)zin(st, 0),
                                    (const float4 *)zin(st, 1), TRIAD_S, n4);
    return (int)cudaGetLastError();
}

int triad_check(struct zoo_inst *inst)
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

size_t stencil3d_ws(const struct zoo_variant *v)
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

int stencil3d_launch(struct zoo_inst *inst, cudaStream_t s)
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
int stencil3d_check(struct zoo_inst *inst)
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

size_t transpose_ws(const struct zoo_variant *v) { return 2 * (size_t)v->p[0] * v->p[1] * 4; }

ZSETUP(transpose)
static int transpose_setup_(struct zoo_inst *inst)
{
    size_t b = (size_t)inst->v->p[0] * inst->v->p[1] * 4;
    struct zbuf in = {b, ZF_F32, -1.f, 1.f};
    return zs_create(inst, 1, &in, 1, &b);
}

int transpose_launch(struct zoo_inst *inst, cudaStream_t s)
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
int transpose_check(struct zoo_inst *inst)
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
