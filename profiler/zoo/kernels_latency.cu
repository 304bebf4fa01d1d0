/*
 * Global-memory-latency families of the kernel zoo: pointer_chase and
 * spmv (gemv_cublas, also LATENCY, is in kernels_blas.cu).
 */
#include "kernels_common.h"

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
size_t pointer_chase_ws(const struct zoo_variant *v)
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

int pointer_chase_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_chase<<<(unsigned)p[1], (int)p[2], 0, s>>>((const uint32_t *)zin(st, 0),
                                                 (const uint32_t *)st->fix[0],
                                                 (uint32_t *)st->out[0], (int)p[3]);
    return (int)cudaGetLastError();
}

/* Walks sampled chains on the host over a copy of the node array. */
int pointer_chase_check(struct zoo_inst *inst)
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

size_t spmv_ws(const struct zoo_variant *v)
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

int spmv_launch(struct zoo_inst *inst, cudaStream_t s)
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

int spmv_check(struct zoo_inst *inst)
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
