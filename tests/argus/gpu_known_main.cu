/*
 * The H200 check of Argus (scripts/gpu/argus_check.sh): runs kernel_known.cu
 * with markers through the host runtime (cuModuleGetGlobal on the kernel's
 * own module), decodes the buffer, and checks what the kernel's structure
 * fixes: counts per region, nesting, roles, iterations, lost-record counts
 * when the ring is made too small, clocks that line up. Also times the
 * kernel armed, unarmed and (in the build without ARGUS_ENABLE) without
 * markers, with CUDA events (method cuda_event, 200 launches each).
 *
 *   argus_known OUTDIR [CTAS]
 * Exit 0 when every check holds; prints one line per check.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/argus.h"
#include "kernel_known.cu"

static int failures = 0;
#define CHECK(cond, ...)                        \
    do {                                        \
        int ok_ = (cond);                       \
        printf("%s: ", ok_ ? "ok  " : "FAIL");  \
        printf(__VA_ARGS__);                    \
        printf("\n");                           \
        failures += !ok_;                       \
    } while (0)

#define THREADS 128
#define WARPS_PER_CTA (THREADS / 32)
#define RECORDS_PER_WARP (1 + 2 + ITERS * 5 + 2)

static float time_launches(float *d, int n, unsigned ctas, int reps)
{
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < 10; i++)
        argus_known<<<ctas, THREADS>>>(d, n);
    cudaEventRecord(a);
    for (int i = 0; i < reps; i++)
        argus_known<<<ctas, THREADS>>>(d, n);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms * 1000.0f / (float)reps;
}

#ifdef ARGUS_ENABLE
static int save(const char *dir, const char *name, const void *p, size_t len)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
        return -1;
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, len, f) != len || fclose(f) != 0)
        return -1;
    return 0;
}

/* One armed launch with cap records per warp; returns the raw buffer. */
static int run_armed(CUmodule mod, float *d, int n, unsigned ctas, uint32_t cap, void **raw,
                     size_t *len)
{
    argus_driver drv;
    char msg[512];
    if (argus_driver_cuda(&drv, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "%s\n", msg);
        return -1;
    }
    argus_launch l;
    uint32_t grid[3] = {ctas, 1, 1}, block[3] = {THREADS, 1, 1};
    int rc = argus_launch_arm(&drv, mod, grid, block, cap, &l, msg, sizeof(msg));
    if (rc != 0) {
        fprintf(stderr, "arm: %s\n", msg);
        return rc;
    }
    argus_known<<<ctas, THREADS>>>(d, n);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "kernel: %s\n", cudaGetErrorString(e));
        argus_launch_release(&l);
        return -1;
    }
    rc = argus_launch_collect(&l, raw, len, msg, sizeof(msg));
    argus_launch_release(&l);
    if (rc != 0)
        fprintf(stderr, "collect: %s\n", msg);
    return rc;
}
#endif

int main(int argc, char **argv)
{
    unsigned ctas = argc > 2 ? (unsigned)atoi(argv[2]) : 264;
    int n = 1 << 20;
    float *d;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess || cudaMemset(d, 0, n * sizeof(float)) != cudaSuccess) {
        fprintf(stderr, "no GPU\n");
        return 2;
    }
    cudaFunction_t fn;
    CUmodule mod;
    if (cudaGetFuncBySymbol(&fn, (const void *)argus_known) != cudaSuccess ||
        cuFuncGetModule(&mod, (CUfunction)fn) != CUDA_SUCCESS) {
        fprintf(stderr, "cannot find the kernel's module\n");
        return 2;
    }
#ifndef ARGUS_ENABLE
    argus_driver drv;
    argus_launch l;
    char msg[512];
    uint32_t g[3] = {ctas, 1, 1}, b[3] = {THREADS, 1, 1};
    int rc0 = argus_driver_cuda(&drv, msg, sizeof(msg));
    if (rc0 == 0)
        rc0 = argus_launch_arm(&drv, mod, g, b, 32, &l, msg, sizeof(msg));
    CHECK(rc0 == ARGUS_ENOTINSTR, "a build without ARGUS_ENABLE is refused: %s", msg);
    printf("time: markers compiled out: %.3f us per launch (cuda_event, 200 launches, %u CTAs)\n",
           time_launches(d, n, ctas, 200), ctas);
    return failures ? 1 : 0;
#else
    const char *out = argc > 1 ? argv[1] : ".";
    void *raw;
    size_t len;
    if (run_armed(mod, d, n, ctas, 32, &raw, &len) != 0)
        return 1;
    save(out, "known.raw", raw, len);
    argus_trace t;
    char msg[512];
    int rc = argus_decode(raw, len, NULL, &t, msg, sizeof(msg));
    CHECK(rc == 0, "decode: %s", rc ? msg : "ok");
    if (rc != 0)
        return 1;
    uint64_t warps = (uint64_t)ctas * WARPS_PER_CTA;
    CHECK(t.warps_active == warps, "%llu of %llu warps wrote their slot",
          (unsigned long long)t.warps_active, (unsigned long long)warps);
    CHECK(t.ndiags == 0 && t.records_lost == 0, "%zu diagnostics, %llu records lost", t.ndiags,
          (unsigned long long)t.records_lost);
    uint32_t outer = argus_region_id("outer", 0), load = argus_region_id("load", outer),
             comp = argus_region_id("compute", outer), tail = argus_region_id("tail", 0);
    uint32_t prod = argus_region_id("producer", 0);
    uint64_t c_outer = 0, c_load = 0, c_comp = 0, c_tail = 0, bad_parent = 0, bad_iter = 0,
             prod_n = 0, bad_time = 0;
    uint32_t max_sm = 0;
    for (size_t i = 0; i < t.nocc; i++) {
        const argus_occurrence *o = &t.occ[i];
        c_outer += o->region == outer;
        c_tail += o->region == tail;
        if (o->region == load || o->region == comp) {
            c_load += o->region == load;
            c_comp += o->region == comp;
            bad_parent += o->parent < 0 || t.occ[o->parent].region != outer;
            bad_iter += o->iter < 0 || o->iter >= ITERS;
        } else {
            bad_parent += o->parent != -1;
        }
        prod_n += o->role == prod;
        bad_time += !(o->t_end_ns >= o->t_begin_ns) || o->t_begin_ns < (double)t.gt_min ||
                    o->t_end_ns > (double)t.gt_max + 1000.0;
        if (o->sm > max_sm)
            max_sm = o->sm;
    }
    CHECK(c_outer == warps && c_tail == warps, "outer %llu, tail %llu (want %llu each)",
          (unsigned long long)c_outer, (unsigned long long)c_tail, (unsigned long long)warps);
    CHECK(c_load == ITERS * warps && c_comp == ITERS * warps, "load %llu, compute %llu (want %llu each)",
          (unsigned long long)c_load, (unsigned long long)c_comp, (unsigned long long)(ITERS * warps));
    CHECK(bad_parent == 0 && bad_iter == 0, "nesting: %llu wrong parents, %llu wrong iterations",
          (unsigned long long)bad_parent, (unsigned long long)bad_iter);
    CHECK(prod_n == (uint64_t)ctas * (2 + ITERS * 2), "producer-role occurrences %llu",
          (unsigned long long)prod_n);
    CHECK(bad_time == 0, "%llu occurrences outside the kernel's globaltimer span", (unsigned long long)bad_time);
    CHECK(t.clock_method == ARGUS_CLOCK_ANCHORS && t.cycles_per_ns > 0.5 && t.cycles_per_ns < 3.0,
          "SM clock from the anchors: %.4f GHz", t.cycles_per_ns);
    printf("info: kernel span %.3f us, %u SMs seen (max smid %u)\n", (double)(t.gt_max - t.gt_min) / 1e3,
           max_sm + 1, max_sm);
    /* The globaltimer's update step bounds how well warps line up (each is
     * placed by its own start anchor): the gcd of all anchors' distances. */
    uint64_t step = 0;
    for (size_t i = 0; i < t.nwarps; i++) {
        const argus_warp_info *w = &t.warps[i];
        if (w->flags & ARGUS_WARP_EMPTY)
            continue;
        uint64_t v[2] = {w->gt_start - t.gt_min, w->gt_end - t.gt_min};
        for (int k = 0; k < 2; k++) {
            uint64_t a = step, b = v[k];
            while (b) {
                uint64_t r = a % b;
                a = b;
                b = r;
            }
            step = a;
        }
    }
    printf("info: globaltimer anchors are multiples of %llu ns apart (its update step or a divisor)\n",
           (unsigned long long)step);
    FILE *rep = NULL;
    {
        char path[4096];
        snprintf(path, sizeof(path), "%s/report.txt", out);
        rep = fopen(path, "w");
    }
    argus_report_text(&t, NULL, NULL, "argus_known", stdout);
    if (rep) {
        argus_report_text(&t, NULL, NULL, "argus_known", rep);
        fclose(rep);
    }
    argus_trace_free(&t);
    free(raw);

    /* Too small a ring: every warp loses exactly RECORDS_PER_WARP - 8. */
    if (run_armed(mod, d, n, ctas, 8, &raw, &len) != 0)
        return 1;
    save(out, "wrap.raw", raw, len);
    rc = argus_decode(raw, len, NULL, &t, msg, sizeof(msg));
    CHECK(rc == 0 && t.records_lost == warps * (RECORDS_PER_WARP - 8),
          "wrap: %llu records lost (want %llu)", (unsigned long long)t.records_lost,
          (unsigned long long)(warps * (RECORDS_PER_WARP - 8)));
    if (rc == 0)
        argus_trace_free(&t);
    free(raw);

    /* Overhead: armed against unarmed (markers present, writing nothing). */
    argus_driver drv;
    argus_launch l;
    uint32_t g[3] = {ctas, 1, 1}, b[3] = {THREADS, 1, 1};
    float unarmed = time_launches(d, n, ctas, 200);
    argus_driver_cuda(&drv, msg, sizeof(msg));
    argus_launch_arm(&drv, mod, g, b, 32, &l, msg, sizeof(msg));
    float armed = time_launches(d, n, ctas, 200);
    argus_launch_release(&l);
    printf("time: markers armed %.3f us, unarmed %.3f us per launch (cuda_event, 200 launches, %u CTAs)\n",
           armed, unarmed, ctas);
    printf("%s: %d check(s) failed\n", failures ? "FAIL" : "ok  ", failures);
    return failures ? 1 : 0;
#endif
}
