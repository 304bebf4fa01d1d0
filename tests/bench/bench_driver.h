/*
 * What the driver benchmarks share (bench_launch.c, bench_request.c): the
 * driver's entry points through cuGetProcAddress (so that an interposer
 * sees exactly what an application's calls would), an empty sm_90 kernel
 * as PTX, and the clock and sort they time with. Define BENCH_NAME (the
 * program's name, for its messages) before including this.
 */
#ifndef MOSAIC_BENCH_DRIVER_H
#define MOSAIC_BENCH_DRIVER_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);

static const char empty_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry mosaic_bench_empty()\n{\n\tret;\n}\n";

static getproc_fn getproc;

static void *proc(const char *name)
{
    void *p = NULL;

    if (getproc(name, &p, 12000, 0, NULL) != CUDA_SUCCESS || !p) {
        fprintf(stderr, BENCH_NAME ": driver has no %s\n", name);
        exit(2);
    }
    return p;
}

#define CHECK(call)                                                          \
    do {                                                                     \
        CUresult r_ = (call);                                                \
        if (r_ != CUDA_SUCCESS) {                                            \
            fprintf(stderr, BENCH_NAME ": %s failed: %d\n", #call, r_);      \
            exit(2);                                                         \
        }                                                                    \
    } while (0)

static double now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

#endif
