/*
 * Shared by the simulated-GPU demo programs (hp_service, be_trainer): zoo
 * kernels named by their profile keys, loaded from a fake code image and
 * launched with the key's configuration. Plain driver API: under
 * LD_PRELOAD=libmosaic.so the shim sees these launches as any program's.
 */
#ifndef MOSAIC_TESTS_SIMGPU_DEMO_UTIL_H
#define MOSAIC_TESTS_SIMGPU_DEMO_UTIL_H

#include <cuda.h>

#define DEMO_MAX_KERNELS 32

/* One kernel of a sequence: what a profile key says. */
struct demo_kernel {
    char name[400];
    unsigned grid[3], block[3], dsmem;
    CUfunction fn;
};

struct demo_seq {
    int n;
    struct demo_kernel k[DEMO_MAX_KERNELS];
};

/* Parses "name|grid=X,Y,Z|block=X,Y,Z|dsmem=N" into seq's next slot;
 * 0, or -1 with a message naming the key and the expected form. */
int demo_add_key(struct demo_seq *seq, const char *key);
/* cuInit, one module whose code image names every kernel, the functions.
 * 0, or -1 with a message naming the failing call. */
int demo_load(struct demo_seq *seq);
/* Launches the whole sequence on the stream. */
CUresult demo_launch(const struct demo_seq *seq, CUstream s);
/* Captures the sequence on s into a CUDA graph, instantiated in *out. */
CUresult demo_graph(const struct demo_seq *seq, CUstream s, CUgraphExec *out);
double demo_now_ms(void);
/* p in [0, 1] of n sorted values, nearest rank. */
double demo_quantile(const double *sorted, int n, double p);
void demo_sort(double *v, int n);

#endif /* MOSAIC_TESTS_SIMGPU_DEMO_UTIL_H */
