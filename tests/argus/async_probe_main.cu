/*
 * async_probe: runs the cp.async GEMM (async_cpasync.cu) and forced-
 * completion probe variants of it in one process, with Argus armed, and
 * prints per variant the "mainloop/load" region's cycles at the probed
 * iteration against the base build's at the same iteration (the forced
 * wait's cost: the operation's remaining completion latency), the kernel
 * time, and whether C is bit-identical to the base's (a forced wait must
 * not change results). Driven by scripts/gpu/argus16_probes.sh.
 *
 *   async_probe OUT.tsv BASE.cubin [VARIANT.cubin OP_ID ITER]...
 *
 * Host code only (the kernels come as cubins, loaded with cuModuleLoad).
 * Exit status: 0; 1 a check failed (C differs, a decode had diagnostics);
 * 2 a CUDA or Argus call failed; 3 no GPU (nothing measured).
 * Tested with nvcc 13.0 (host compiler gcc 12/13); not yet run on a GPU.
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "argus/argus.h"

#define M 256
#define N 256
#define K 1024
#define TILE 32
#define STEPS (K / TILE)
#define CAP 256 /* records per warp: 5 per K step and 8 more, under 256 */
#define TIMED 20

static bool ok(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return true;
    const char *s = NULL;
    cuGetErrorString(r, &s);
    fprintf(stderr, "async_probe: %s: %s\n", what, s ? s : "unknown CUDA error");
    return false;
}

typedef struct run_result {
    std::vector<double> load_cycles; /* per iteration: mean over warps */
    double kernel_us;                /* median of TIMED launches */
    std::vector<float> c;
    size_t raw_bytes;
    size_t diags;
} run_result;

static int run_one(const char *cubin, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                   const argus_driver *drv, run_result *res)
{
    CUmodule mod;
    CUfunction fn;
    if (!ok(cuModuleLoad(&mod, cubin), cubin) ||
        !ok(cuModuleGetFunction(&fn, mod, "async_gemm_cpasync"), "cuModuleGetFunction"))
        return 2;
    int m = M, n = N, k = K;
    void *args[] = {&a, &b, &c, &m, &n, &k};
    unsigned gx = N / TILE, gy = M / TILE;
    CUevent e0, e1;
    int rc = 0;
    if (!ok(cuEventCreate(&e0, 0), "cuEventCreate") || !ok(cuEventCreate(&e1, 0), "cuEventCreate"))
        return 2;
    std::vector<double> times;
    for (int i = 0; i < 10 + TIMED && rc == 0; i++) {
        if (!ok(cuEventRecord(e0, 0), "cuEventRecord") ||
            !ok(cuLaunchKernel(fn, gx, gy, 1, 128, 1, 1, 0, 0, args, NULL), "launch") ||
            !ok(cuEventRecord(e1, 0), "cuEventRecord") ||
            !ok(cuEventSynchronize(e1), "kernel")) {
            rc = 2;
            break;
        }
        float ms;
        if (i >= 10 && ok(cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime"))
            times.push_back(ms * 1e3);
    }
    if (rc == 0) {
        std::sort(times.begin(), times.end());
        res->kernel_us = times[times.size() / 2];
    }
    argus_launch l;
    uint32_t grid[3] = {gx, gy, 1}, block[3] = {128, 1, 1};
    char msg[1024];
    void *raw = NULL;
    size_t len = 0;
    if (rc == 0 && argus_launch_arm(drv, mod, grid, block, CAP, &l, msg, sizeof msg) != 0) {
        fprintf(stderr, "async_probe: arm %s: %s\n", cubin, msg);
        rc = 2;
    } else if (rc == 0) {
        bool ran = ok(cuCtxSynchronize(), "synchronize after arming") &&
                   ok(cuLaunchKernel(fn, gx, gy, 1, 128, 1, 1, 0, 0, args, NULL), "armed launch") &&
                   ok(cuCtxSynchronize(), "armed kernel");
        int crc = ran ? argus_launch_collect(&l, &raw, &len, msg, sizeof msg) : ARGUS_EDRIVER;
        argus_launch_release(&l);
        if (crc != 0) {
            if (ran)
                fprintf(stderr, "async_probe: collect: %s\n", msg);
            rc = 2;
        }
    }
    if (rc == 0) {
        res->c.resize((size_t)M * N);
        if (!ok(cuMemcpyDtoH(res->c.data(), c, res->c.size() * sizeof(float)), "reading C"))
            rc = 2;
    }
    if (rc == 0) {
        argus_trace t;
        if (argus_decode(raw, len, NULL, &t, msg, sizeof msg) != 0) {
            fprintf(stderr, "async_probe: decode %s: %s\n", cubin, msg);
            rc = 2;
        } else {
            uint32_t load = argus_region_id("load", argus_region_id("mainloop", 0));
            std::vector<double> sum(STEPS, 0.0), cnt(STEPS, 0.0);
            for (size_t i = 0; i < t.nocc; i++) {
                const argus_occurrence *o = &t.occ[i];
                if (o->region != load || o->flags & ~ARGUS_OCC_OVERLAP || o->iter < 0 ||
                    o->iter >= STEPS)
                    continue;
                sum[(size_t)o->iter] += (double)(o->clk_end - o->clk_begin);
                cnt[(size_t)o->iter] += 1;
            }
            res->load_cycles.assign(STEPS, 0.0);
            for (int i = 0; i < STEPS; i++)
                res->load_cycles[(size_t)i] = cnt[(size_t)i] ? sum[(size_t)i] / cnt[(size_t)i] : 0;
            res->raw_bytes = len;
            res->diags = t.ndiags;
            argus_trace_free(&t);
        }
    }
    free(raw);
    cuEventDestroy(e0);
    cuEventDestroy(e1);
    cuModuleUnload(mod);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (argc - 3) % 3 != 0) {
        fprintf(stderr, "usage: async_probe OUT.tsv BASE.cubin [VARIANT.cubin OP_ID ITER]...\n");
        return 2;
    }
    int ndev = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&ndev) != CUDA_SUCCESS || ndev == 0) {
        printf("async_probe: no GPU present: nothing measured\n");
        return 3;
    }
    CUdevice dev;
    CUcontext ctx;
    if (!ok(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
        !ok(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
        !ok(cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
        return 2;
    argus_driver drv;
    char msg[1024];
    if (argus_driver_cuda(&drv, msg, sizeof msg) != 0) {
        fprintf(stderr, "async_probe: %s\n", msg);
        return 2;
    }
    std::vector<float> ha((size_t)M * K), hb((size_t)K * N);
    for (size_t i = 0; i < ha.size(); i++)
        ha[i] = (float)((i * 7) % 13) / 13.0f;
    for (size_t i = 0; i < hb.size(); i++)
        hb[i] = (float)((i * 5) % 11) / 11.0f;
    CUdeviceptr a, b, c;
    if (!ok(cuMemAlloc(&a, ha.size() * 4), "cuMemAlloc") ||
        !ok(cuMemAlloc(&b, hb.size() * 4), "cuMemAlloc") ||
        !ok(cuMemAlloc(&c, (size_t)M * N * 4), "cuMemAlloc") ||
        !ok(cuMemcpyHtoD(a, ha.data(), ha.size() * 4), "cuMemcpyHtoD") ||
        !ok(cuMemcpyHtoD(b, hb.data(), hb.size() * 4), "cuMemcpyHtoD"))
        return 2;
    FILE *out = fopen(argv[1], "w");
    if (out == NULL) {
        fprintf(stderr, "async_probe: cannot write %s\n", argv[1]);
        return 2;
    }
    fprintf(out, "variant\top\titer\tload_cycles_base\tload_cycles_probe\tadded_cycles\t"
                 "kernel_us_base\tkernel_us_probe\tc_identical\traw_bytes\tdiags\n");
    run_result base;
    int rc = run_one(argv[2], a, b, c, &drv, &base);
    int status = rc;
    if (rc == 0 && base.diags)
        status = 1;
    /* The CPU reference of one element, so that the base itself is
     * checked, not only the variants against it. */
    if (rc == 0) {
        double ref = 0;
        for (int kk = 0; kk < K; kk++)
            ref += (double)ha[(size_t)kk] * hb[(size_t)kk * N];
        if (ref - base.c[0] > 1e-3 * ref || base.c[0] - ref > 1e-3 * ref) {
            fprintf(stderr, "async_probe: C[0,0] = %g, reference %g\n", base.c[0], ref);
            status = 1;
        }
    }
    for (int v = 3; v + 2 < argc && rc == 0; v += 3) {
        run_result r;
        int it = atoi(argv[v + 2]);
        rc = run_one(argv[v], a, b, c, &drv, &r);
        if (rc != 0) {
            status = rc;
            break;
        }
        bool same = r.c == base.c;
        double lb = it >= 0 && it < STEPS ? base.load_cycles[(size_t)it] : 0;
        double lp = it >= 0 && it < STEPS ? r.load_cycles[(size_t)it] : 0;
        fprintf(out, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.3f\t%.3f\t%s\t%zu\t%zu\n", argv[v],
                argv[v + 1], it, lb, lp, lp - lb, base.kernel_us, r.kernel_us, same ? "yes" : "no",
                r.raw_bytes, r.diags);
        if (!same || r.diags)
            status = status ? status : 1;
    }
    fclose(out);
    return status;
}
