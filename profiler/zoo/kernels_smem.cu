/*
 * Shared-memory-heavy families of the kernel zoo: histogram, scan and
 * reduce (the tiled transpose variants are in kernels_memory.cu, beside
 * the naive ones of the same family).
 */
#include "kernels_common.h"

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

size_t histogram_ws(const struct zoo_variant *v)
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

int histogram_launch(struct zoo_inst *inst, cudaStream_t s)
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
int histogram_check(struct zoo_inst *inst)
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

size_t scan_ws(const struct zoo_variant *v)
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

int scan_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_scan<<<(unsigned)(p[0] / scan_tile(inst->v)), (int)p[1], scan_smem(inst->v), s>>>(
        (const uint4 *)zin(st, 0), (uint4 *)st->out[0], (uint32_t *)st->out[1], (int)p[2]);
    return (int)cudaGetLastError();
}

int scan_check(struct zoo_inst *inst)
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

size_t reduce_ws(const struct zoo_variant *v)
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

int reduce_launch(struct zoo_inst *inst, cudaStream_t s)
{
    const long *p = inst->v->p;
    struct zs *st = zs_use(inst);
    k_reduce<<<(unsigned)(p[0] / reduce_chunk(inst->v)), (int)p[1], (size_t)p[1] * 4, s>>>(
        (const float4 *)zin(st, 0), (float *)st->out[0], (int)p[2]);
    return (int)cudaGetLastError();
}

int reduce_check(struct zoo_inst *inst)
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
