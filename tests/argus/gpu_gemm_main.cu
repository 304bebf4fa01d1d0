/*
 * Issue 16's optimisation question on the H200 (scripts/gpu/argus16_gemm.sh):
 *
 *   argus16_gemm OUT KERNELS_CU [SIZE]
 *
 * 1. Correctness first: a double-accumulating reference GEMM on the GPU,
 *    itself checked against the CPU on 256 sampled entries, then every
 *    variant (tests/argus/gpu_gemm_kernels.cu: base, dbuf, reg; the
 *    marker-free builds and the marker builds) against the reference over
 *    the whole output (|x - ref| <= 1e-3 (1 + |ref|)). A variant that fails
 *    is not timed.
 * 2. Regions: one armed launch of each variant's marker build at 1024^3
 *    (a ring of 4096 records per warp holds a whole launch at that size:
 *    reg's warps write 1,156 records each there, which a 1024-record ring
 *    lost to wraps on the H200, docs/results/2026-12-02-s7-gpu),
 *    decoded with the registry scanned from KERNELS_CU; each region's share
 *    of the warps' time (observed cycles) goes to gemm_regions.tsv and the
 *    text report of each to gemm_report_<variant>.txt.
 * 3. Timing (AgentKernelArena's method, as argus16_run.sh): 10 warm-up
 *    launches, a CUDA graph of n launches (a replay ~1 ms, n 1..100), a
 *    sample = replay time / n, the median of 20 samples (min and max kept),
 *    cuda_event_fallback where capture fails; marker-free builds at SIZE^3
 *    (default 2048) and at 1024^3.
 * 4. The question: which of load, sync, compute, stage dominates base's
 *    mainloop, which variant answers it (load or sync: dbuf; compute: reg),
 *    and that variant's measured speed-up over base (gemm.tsv, summary
 *    lines "dominant", "chosen", "speedup").
 * Exit: 0; 1 a check failed; 2 a CUDA or file error; 3 no GPU.
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/argus.h"

extern "C" {
const void *gemm_kernel_on(int variant);
const void *gemm_kernel_off(int variant);
void gemm_shape_on(int variant, int M, int N, unsigned grid[3], unsigned block[3]);
cudaError_t gemm_launch_on(int variant, const float *A, const float *B, float *C, int M, int N,
                           int K, cudaStream_t s);
cudaError_t gemm_launch_off(int variant, const float *A, const float *B, float *C, int M, int N,
                            int K, cudaStream_t s);
}

static const char *const k_names[3] = {"base", "dbuf", "reg"};

static bool ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return true;
    fprintf(stderr, "argus16_gemm: %s failed: %s (%s)\n", what, cudaGetErrorName(e),
            cudaGetErrorString(e));
    return false;
}

/* The reference: one thread per output, double accumulation. */
__global__ void ref_gemm(const float *A, const float *B, float *C, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
    if (row >= M || col >= N)
        return;
    double acc = 0;
    for (int k = 0; k < K; k++)
        acc += (double)A[(size_t)row * K + k] * (double)B[(size_t)k * N + col];
    C[(size_t)row * N + col] = (float)acc;
}

static unsigned g_rng = 12345u;
static float frand(void)
{
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)((g_rng >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

typedef struct problem {
    int M, N, K;
    float *A, *B, *C, *R; /* device */
    float *hA, *hB;       /* host copies */
} problem;

static bool problem_make(problem *p, int n)
{
    memset(p, 0, sizeof(*p));
    p->M = p->N = p->K = n;
    size_t e = (size_t)n * n, bytes = e * sizeof(float);
    p->hA = (float *)malloc(bytes);
    p->hB = (float *)malloc(bytes);
    if (!p->hA || !p->hB)
        return false;
    for (size_t i = 0; i < e; i++) {
        p->hA[i] = frand();
        p->hB[i] = frand();
    }
    return ok(cudaMalloc(&p->A, bytes), "cudaMalloc A") && ok(cudaMalloc(&p->B, bytes), "cudaMalloc B") &&
           ok(cudaMalloc(&p->C, bytes), "cudaMalloc C") && ok(cudaMalloc(&p->R, bytes), "cudaMalloc R") &&
           ok(cudaMemcpy(p->A, p->hA, bytes, cudaMemcpyHostToDevice), "copy A") &&
           ok(cudaMemcpy(p->B, p->hB, bytes, cudaMemcpyHostToDevice), "copy B");
}

static void problem_free(problem *p)
{
    cudaFree(p->A);
    cudaFree(p->B);
    cudaFree(p->C);
    cudaFree(p->R);
    free(p->hA);
    free(p->hB);
}

static int g_checks, g_failed;
static FILE *g_tsv;

static void row(const char *test, const char *what, double got, double want, double tol,
                const char *unit, const char *verdict)
{
    fprintf(g_tsv, "%s\t%s\t%.6g\t%.6g\t%.6g\t%s\t%s\n", test, what, got, want, tol, unit, verdict);
    if (strcmp(verdict, "pass") == 0 || strcmp(verdict, "fail") == 0) {
        g_checks++;
        if (strcmp(verdict, "fail") == 0) {
            g_failed++;
            printf("FAIL %s: %s: %.6g, want %.6g (tol %.3g %s)\n", test, what, got, want, tol, unit);
        }
    }
}

/* The reference against the CPU on sampled entries, then kept in p->R. */
static bool check_reference(problem *p, cudaStream_t s)
{
    dim3 grid((unsigned)(p->N + 127) / 128, (unsigned)p->M);
    ref_gemm<<<grid, 128, 0, s>>>(p->A, p->B, p->R, p->M, p->N, p->K);
    size_t bytes = (size_t)p->M * p->N * sizeof(float);
    float *h = (float *)malloc(bytes);
    if (h == NULL || !ok(cudaStreamSynchronize(s), "reference GEMM") ||
        !ok(cudaMemcpy(h, p->R, bytes, cudaMemcpyDeviceToHost), "reading the reference")) {
        free(h);
        return false;
    }
    double worst = 0;
    for (int t = 0; t < 256; t++) {
        int r = (int)(((unsigned)t * 2654435761u) % (unsigned)p->M);
        int c = (int)(((unsigned)t * 40503u + 17u) % (unsigned)p->N);
        double acc = 0;
        for (int k = 0; k < p->K; k++)
            acc += (double)p->hA[(size_t)r * p->K + k] * (double)p->hB[(size_t)k * p->N + c];
        double err = fabs(h[(size_t)r * p->N + c] - acc) / (1 + fabs(acc));
        worst = err > worst ? err : worst;
    }
    free(h);
    char what[96];
    snprintf(what, sizeof(what), "reference vs CPU, 256 entries, worst relative error (%d^3)", p->M);
    row("reference", what, worst, 0, 1e-6, "rel", worst <= 1e-6 ? "pass" : "fail");
    return worst <= 1e-6;
}

/* A variant's whole output against the reference. */
static bool check_variant(problem *p, int v, bool on, cudaStream_t s)
{
    size_t n = (size_t)p->M * p->N, bytes = n * sizeof(float);
    float *h = (float *)malloc(bytes), *r = (float *)malloc(bytes);
    bool good = h && r && ok(cudaMemsetAsync(p->C, 0xFF, bytes, s), "clearing C") &&
                ok((on ? gemm_launch_on : gemm_launch_off)(v, p->A, p->B, p->C, p->M, p->N, p->K, s),
                   "GEMM launch") &&
                ok(cudaStreamSynchronize(s), "GEMM run") &&
                ok(cudaMemcpy(h, p->C, bytes, cudaMemcpyDeviceToHost), "reading C") &&
                ok(cudaMemcpy(r, p->R, bytes, cudaMemcpyDeviceToHost), "reading the reference");
    if (!good) {
        free(h);
        free(r);
        return false;
    }
    double worst = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)h[i] - r[i]) / (1 + fabs((double)r[i]));
        if (!(err <= 1e-3))
            bad++;
        if (err > worst || err != err)
            worst = err;
    }
    free(h);
    free(r);
    char test[32], what[128];
    snprintf(test, sizeof(test), "%s_%s", k_names[v], on ? "markers" : "free");
    snprintf(what, sizeof(what), "entries off the reference by > 1e-3 (1+|ref|) at %d^3 (worst %.3g)",
             p->M, worst);
    row(test, what, (double)bad, 0, 0, "entries", bad == 0 ? "pass" : "fail");
    return bad == 0;
}

/* ---- timing --------------------------------------------------------------- */

typedef struct timing {
    double median_us, min_us, max_us;
    int nrep;
    const char *method;
} timing;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bool time_variant(problem *p, int v, cudaStream_t s, timing *out)
{
    cudaEvent_t a, b;
    if (!ok(cudaEventCreate(&a), "cudaEventCreate") || !ok(cudaEventCreate(&b), "cudaEventCreate"))
        return false;
    for (int i = 0; i < 10; i++)
        if (!ok(gemm_launch_off(v, p->A, p->B, p->C, p->M, p->N, p->K, s), "warm-up"))
            return false;
    /* One launch's time, to choose n. */
    float ms = 0;
    if (!ok(cudaEventRecord(a, s), "record") ||
        !ok(gemm_launch_off(v, p->A, p->B, p->C, p->M, p->N, p->K, s), "launch") ||
        !ok(cudaEventRecord(b, s), "record") || !ok(cudaEventSynchronize(b), "sync") ||
        !ok(cudaEventElapsedTime(&ms, a, b), "elapsed"))
        return false;
    int n = (int)(1000.0 / (ms * 1e3 > 1 ? ms * 1e3 : 1) + 0.5);
    n = n < 1 ? 1 : n > 100 ? 100 : n;
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    bool cap = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
    for (int i = 0; cap && i < n; i++)
        cap = gemm_launch_off(v, p->A, p->B, p->C, p->M, p->N, p->K, s) == cudaSuccess;
    cudaError_t e = cudaStreamEndCapture(s, &g);
    cap = cap && e == cudaSuccess && g && cudaGraphInstantiate(&exec, g, 0) == cudaSuccess;
    if (g)
        cudaGraphDestroy(g);
    if (!cap) {
        exec = NULL;
        (void)cudaGetLastError();
    }
    double v20[20];
    for (int i = 0; i < 20; i++) {
        if (!ok(cudaEventRecord(a, s), "record"))
            return false;
        if (exec) {
            if (!ok(cudaGraphLaunch(exec, s), "cudaGraphLaunch"))
                return false;
        } else {
            for (int j = 0; j < n; j++)
                if (!ok(gemm_launch_off(v, p->A, p->B, p->C, p->M, p->N, p->K, s), "launch"))
                    return false;
        }
        if (!ok(cudaEventRecord(b, s), "record") || !ok(cudaEventSynchronize(b), "sync") ||
            !ok(cudaEventElapsedTime(&ms, a, b), "elapsed"))
            return false;
        v20[i] = ms * 1e3 / n;
    }
    qsort(v20, 20, sizeof(double), cmp_d);
    out->median_us = 0.5 * (v20[9] + v20[10]);
    out->min_us = v20[0];
    out->max_us = v20[19];
    out->nrep = n;
    out->method = exec ? "cuda_graph" : "cuda_event_fallback";
    if (exec)
        cudaGraphExecDestroy(exec);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return true;
}

/* ---- regions -------------------------------------------------------------- */

typedef CUresult (*fn_funcmod)(CUmodule *, CUfunction);

/* Shares of a variant's regions under mainloop (and store), from one
 * armed launch; share[i] for load, sync, compute, stage, store. */
static const char *const k_regions[5] = {"load", "sync", "compute", "stage", "store"};

static bool regions_of(problem *p, int v, const argus_registry *reg, const char *out,
                       cudaStream_t s, fn_funcmod funcmod, double share[5], double *mainloop)
{
    cudaFunction_t fn;
    CUmodule mod;
    if (!ok(cudaGetFuncBySymbol(&fn, gemm_kernel_on(v)), "cudaGetFuncBySymbol") ||
        funcmod(&mod, (CUfunction)fn) != CUDA_SUCCESS) {
        fprintf(stderr, "argus16_gemm: cuFuncGetModule failed\n");
        return false;
    }
    argus_driver drv;
    char msg[1024];
    if (argus_driver_cuda(&drv, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "%s\n", msg);
        return false;
    }
    unsigned g[3], b[3];
    gemm_shape_on(v, p->M, p->N, g, b);
    uint32_t grid[3] = {g[0], g[1], g[2]}, block[3] = {b[0], b[1], b[2]};
    argus_launch l;
    if (argus_launch_arm(&drv, mod, grid, block, 4096, &l, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "argus16_gemm: arm: %s\n", msg);
        return false;
    }
    void *raw = NULL;
    size_t len = 0;
    /* The descriptor copy is synchronous; the device sync orders it before
     * the launch on this stream (argus_launch_arm's contract). */
    bool ran = ok(cudaDeviceSynchronize(), "sync after arming") &&
               ok(gemm_launch_on(v, p->A, p->B, p->C, p->M, p->N, p->K, s), "armed launch") &&
               ok(cudaStreamSynchronize(s), "armed run");
    int rc = ran ? argus_launch_collect(&l, &raw, &len, msg, sizeof(msg)) : ARGUS_EDRIVER;
    argus_launch_release(&l);
    if (rc != 0) {
        fprintf(stderr, "argus16_gemm: collect: %s\n", msg);
        return false;
    }
    argus_trace t;
    argus_decode_opts o = {0, reg};
    if (argus_decode(raw, len, &o, &t, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "argus16_gemm: decode: %s\n", msg);
        free(raw);
        return false;
    }
    free(raw);
    char path[4096];
    snprintf(path, sizeof(path), "%s/gemm_report_%s.txt", out, k_names[v]);
    FILE *f = fopen(path, "w");
    argus_scope all;
    argus_scope_all(&all);
    if (f) {
        argus_report_text(&t, reg, &all, k_names[v], f);
        fclose(f);
    }
    argus_region_stats *st;
    size_t n;
    if (argus_stats(&t, &all, &st, &n) != 0) {
        argus_trace_free(&t);
        return false;
    }
    for (int i = 0; i < 5; i++)
        share[i] = 0;
    *mainloop = 0;
    for (size_t i = 0; i < n; i++) {
        char p2[256];
        argus_node_path(&t, reg, st[i].node, p2, sizeof(p2));
        if (strcmp(p2, "mainloop") == 0)
            *mainloop = st[i].share;
        for (int k = 0; k < 5; k++) {
            char want[64];
            snprintf(want, sizeof(want), k == 4 ? "%s" : "mainloop/%s", k_regions[k]);
            if (strcmp(p2, want) == 0)
                share[k] += st[i].share;
        }
    }
    char test[32];
    snprintf(test, sizeof(test), "%s_regions", k_names[v]);
    row(test, "decoder diagnostics", (double)(t.ndiags + t.diags_dropped), 0, 0, "diagnostics",
        t.ndiags + t.diags_dropped == 0 ? "pass" : "fail");
    row(test, "records lost to ring wraps", (double)t.records_lost, 0, 0, "records",
        t.records_lost == 0 ? "pass" : "fail");
    free(st);
    argus_trace_free(&t);
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fputs("usage: argus16_gemm OUT KERNELS_CU [SIZE]\n", stderr);
        return 2;
    }
    const char *out = argv[1];
    int size = argc > 3 ? atoi(argv[3]) : 2048;
    if (size < 64 || size % 64 != 0) {
        fprintf(stderr, "argus16_gemm: SIZE %d: use a multiple of 64\n", size);
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("argus16_gemm: no GPU present: nothing measured\n");
        return 3;
    }
    /* The registry from the kernels' source (argus_registry_scan: the GPU
     * image has no cJSON for a registry file). */
    FILE *src = fopen(argv[2], "rb");
    static char text[1 << 17];
    size_t tl = src ? fread(text, 1, sizeof(text) - 1, src) : 0;
    if (src)
        fclose(src);
    text[tl] = '\0';
    argus_registry *reg;
    char msg[1024];
    if (tl == 0 || argus_registry_new(&reg) != 0 ||
        argus_registry_scan(reg, text, argv[2], msg, sizeof(msg)) != 0) {
        fprintf(stderr, "argus16_gemm: %s: no registry (%s)\n", argv[2], tl ? msg : "unreadable");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/gemm.tsv", out);
    g_tsv = fopen(path, "w");
    if (g_tsv == NULL) {
        fprintf(stderr, "argus16_gemm: cannot write %s\n", path);
        return 2;
    }
    void *fm = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuFuncGetModule", &fm, 12000, cudaEnableDefault, &q) !=
            cudaSuccess || fm == NULL) {
        fprintf(stderr, "argus16_gemm: no cuFuncGetModule\n");
        return 2;
    }
    fn_funcmod funcmod;
    memcpy(&funcmod, &fm, sizeof(fm));
    cudaStream_t s;
    problem small, big;
    if (!ok(cudaStreamCreate(&s), "cudaStreamCreate") || !problem_make(&small, 1024) ||
        !problem_make(&big, size))
        return 2;
    int rc = 0;
    bool good[3] = {true, true, true};
    /* 1. correctness */
    if (!check_reference(&small, s) || !check_reference(&big, s)) {
        fclose(g_tsv);
        printf("argus16_gemm: the reference GEMM is wrong: nothing else is checked\n");
        return 1;
    }
    for (int v = 0; v < 3; v++)
        for (int on = 0; on < 2; on++) {
            if (!check_variant(&small, v, on, s))
                good[v] = false;
            if (!on && !check_variant(&big, v, 0, s))
                good[v] = false;
        }
    /* 2. regions */
    double share[3][5], mainloop[3];
    bool have[3] = {false, false, false};
    for (int v = 0; v < 3; v++) {
        have[v] = good[v] && regions_of(&small, v, reg, out, s, funcmod, share[v], &mainloop[v]);
        if (!have[v])
            continue;
        for (int k = 0; k < 5; k++) {
            char what[96];
            snprintf(what, sizeof(what), "share of warp time in %s%s (observed cycles)",
                     k == 4 ? "" : "mainloop/", k_regions[k]);
            row(k_names[v], what, share[v][k] * 100, 0, 0, "%", "info");
        }
        row(k_names[v], "share of warp time in mainloop", mainloop[v] * 100, 0, 0, "%", "info");
    }
    /* 3. timing */
    timing tm[2][3];
    problem *pr[2] = {&big, &small};
    for (int pi = 0; pi < 2; pi++)
        for (int v = 0; v < 3; v++) {
            if (!good[v] || !time_variant(pr[pi], v, s, &tm[pi][v])) {
                good[v] = false;
                continue;
            }
            char what[160];
            snprintf(what, sizeof(what), "marker-free kernel time at %d^3, median of 20 (min %.2f, "
                                         "max %.2f; %s, %d launches per replay)",
                     pr[pi]->M, tm[pi][v].min_us, tm[pi][v].max_us, tm[pi][v].method, tm[pi][v].nrep);
            row(k_names[v], what, tm[pi][v].median_us, 0, 0, "us", "info");
            double tflops = 2.0 * pr[pi]->M * pr[pi]->N * pr[pi]->K / (tm[pi][v].median_us * 1e-6) / 1e12;
            snprintf(what, sizeof(what), "throughput at %d^3", pr[pi]->M);
            row(k_names[v], what, tflops, 0, 0, "TFLOP/s", "info");
        }
    /* 4. the question */
    if (have[0] && good[0]) {
        int dom = 0;
        for (int k = 1; k < 4; k++)
            if (share[0][k] > share[0][dom])
                dom = k;
        int chosen = dom == 2 ? 2 : 1;
        printf("dominant: base's mainloop/%s, %.1f%% of warp time (load %.1f%%, sync %.1f%%, compute "
               "%.1f%%)\n",
               k_regions[dom], share[0][dom] * 100, share[0][0] * 100, share[0][1] * 100,
               share[0][2] * 100);
        printf("chosen: %s (%s)\n", k_names[chosen],
               chosen == 1 ? "double-buffered loads: the next tile's latency under the compute, one "
                             "barrier per tile"
                           : "register blocking: 4x4 outputs per thread, fewer shared loads per FMA");
        for (int pi = 0; pi < 2; pi++)
            for (int v = 1; v < 3; v++)
                if (good[v]) {
                    double sp = tm[pi][0].median_us / tm[pi][v].median_us;
                    printf("speedup %s over base at %d^3: %.3fx (%.2f -> %.2f us, %s)%s\n", k_names[v],
                           pr[pi]->M, sp, tm[pi][0].median_us, tm[pi][v].median_us,
                           tm[pi][v].method, v == chosen ? " [chosen by the report]" : "");
                    char what[96];
                    snprintf(what, sizeof(what), "speed-up over base at %d^3%s", pr[pi]->M,
                             v == chosen ? " (the variant the report chose)" : "");
                    row(k_names[v], what, sp, 1, 0, "x", v == chosen ? (sp > 1 ? "pass" : "fail") : "info");
                }
        fprintf(g_tsv, "question\tdominant region of base\t%s\t\t\t\tinfo\n", k_regions[dom]);
        fprintf(g_tsv, "question\tvariant chosen\t%s\t\t\t\tinfo\n", k_names[chosen]);
    } else {
        printf("argus16_gemm: base has no region report: the question is not answered\n");
        rc = 1;
    }
    fclose(g_tsv);
    problem_free(&small);
    problem_free(&big);
    argus_registry_free(reg);
    printf("checks: %d, failed %d\n", g_checks, g_failed);
    return rc ? rc : g_failed ? 1 : 0;
}
