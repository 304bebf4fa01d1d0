/*
 * cuBLAS-backed families of the kernel zoo: gemm_cublas (COMPUTE) and
 * gemv_cublas (LATENCY), with the handle and workspace helpers they share
 * and the fp64 host references of their checks.
 */
#include "kernels_common.h"

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

size_t gemm_cublas_ws(const struct zoo_variant *v)
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

int gemm_cublas_launch(struct zoo_inst *inst, cudaStream_t s)
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
int gemm_cublas_check(struct zoo_inst *inst)
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

/* ---- gemv_cublas: y = A x with A stored row-major M x K (column-major
 * K x M, transposed in the call), so each output is a dot product over a
 * contiguous row; p = {M, K, dtype}. dtype 0: cublasSgemv; dtype 1:
 * cublasGemmEx with N = 1, bf16 in and out, fp32 compute. */
size_t gemv_cublas_ws(const struct zoo_variant *v)
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

int gemv_cublas_launch(struct zoo_inst *inst, cudaStream_t s)
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

int gemv_cublas_check(struct zoo_inst *inst)
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
