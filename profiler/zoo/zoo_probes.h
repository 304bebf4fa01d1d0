/*
 * The placement probe of the zoo harness (zoo_probes.cu): kernels whose
 * blocks record where (%smid) and when (%globaltimer) they ran, two record
 * buffers (k = 0, 1: one per co-running probe), and the device clock
 * helpers that the harness's other kernels use too.
 */
#ifndef MOSAIC_ZOO_PROBES_H
#define MOSAIC_ZOO_PROBES_H

#include <cuda_runtime.h>

/* A block's record from the placement probe (written by thread 0). */
struct probe_rec {
    unsigned int block;
    unsigned int smid;
    unsigned long long t0;
    unsigned long long t1;
};

/* The GPU's global nanosecond timer: one clock for every SM, and for every
 * process on the GPU. */
static __device__ __forceinline__ unsigned long long gtimer(void)
{
    unsigned long long t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ __forceinline__ unsigned int smid_reg(void)
{
    unsigned int s;

    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

/* Every thread of a block spins for spin_ns; thread 0 writes out[block].
 * Two identical probes: the carveout is a per-function attribute, so two
 * co-running kernels with different carveouts must be different functions. */
__global__ void zoo_probe_k1(struct probe_rec *out, unsigned long long spin_ns);
__global__ void zoo_probe_k2(struct probe_rec *out, unsigned long long spin_ns);
/* Writes %globaltimer to *dst: a timestamp in stream order. */
__global__ void zoo_stamp_kernel(unsigned long long *dst);

typedef void (*probe_fn)(struct probe_rec *, unsigned long long);

/* Device records (ZOO_PROBE_CAP each) and their host copies. */
extern struct probe_rec *g_dprobe[2];
extern struct probe_rec *g_hprobe[2];

int probe_alloc(void);
void probe_free(void);
/* Sets a probe's dynamic shared memory limit and carveout (-1: the
 * default); they persist per function, so experiments reset them. */
int probe_attrs(probe_fn fn, int smem, int carveout);
/* Distinct SMs in buffer k (n blocks), marked in seen[ZOO_MAX_SMID]; -1
 * when a block wrote nothing. */
int probe_count_sms(int k, int n, unsigned char *seen);
/* Clears buffer k and launches fn<<<grid, threads, smem, s>>>. */
int probe_run(probe_fn fn, int k, int grid, int threads, int smem,
              double spin_us, cudaStream_t s);
/* Waits for s and copies grid records of buffer k to the host. */
int probe_fetch(int k, int grid, cudaStream_t s);
/* Blocks of buffer k (n of them) resident on one SM at once, at most. */
int max_resident(int k, int n);

#endif /* MOSAIC_ZOO_PROBES_H */
