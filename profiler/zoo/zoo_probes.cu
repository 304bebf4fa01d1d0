/*
 * The placement probe (declared in zoo_probes.h): a kernel whose blocks
 * spin for a set time and record the SM they ran on (%smid) and when
 * (%globaltimer), its host and device record buffers, and the stamp kernel
 * that reads the GPU clock on a stream. The stream self-check
 * (zoo_streams.cu), `placement` and `behind` use them.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "zoo_harness.h"
#include "zoo_probes.h"

struct probe_rec *g_dprobe[2];
struct probe_rec *g_hprobe[2];

/* Every thread spins so that the whole block stays resident for spin_ns;
 * thread 0 records where and when the block ran. */
static __device__ __forceinline__ void probe_body(struct probe_rec *out,
                                                  unsigned long long spin_ns)
{
    unsigned long long t0 = gtimer();
    unsigned int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y *
                                               blockIdx.z);

    while (gtimer() - t0 < spin_ns) {
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        out[b].block = b;
        out[b].smid = smid_reg();
        out[b].t0 = t0;
        out[b].t1 = gtimer();
    }
}

/* Two identical probes: the carveout is a per-function attribute, so two
 * co-running kernels with different carveouts must be different functions. */
__global__ void zoo_probe_k1(struct probe_rec *out, unsigned long long spin_ns)
{
    probe_body(out, spin_ns);
}

__global__ void zoo_probe_k2(struct probe_rec *out, unsigned long long spin_ns)
{
    probe_body(out, spin_ns);
}

__global__ void zoo_stamp_kernel(unsigned long long *dst)
{
    *dst = gtimer();
}

int probe_alloc(void)
{
    int rc = 0, k;

    for (k = 0; k < 2; k++) {
        if (g_dprobe[k])
            continue;
        CK(cudaMalloc((void **)&g_dprobe[k],
                      ZOO_PROBE_CAP * sizeof(struct probe_rec)));
        g_hprobe[k] = (struct probe_rec *)calloc(ZOO_PROBE_CAP,
                                                 sizeof(struct probe_rec));
        if (!g_hprobe[k]) {
            seterr("out of host memory");
            rc = -1;
            goto out;
        }
    }
out:
    return rc;
}

/* Resets a probe function's attributes: placement experiments change them
 * and they persist per function. */
int probe_attrs(probe_fn fn, int smem, int carveout)
{
    int rc = 0;

    CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            smem));
    CK(cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout,
                            carveout));
out:
    return rc;
}

/* Distinct SMs in probe buffer k (n blocks); -1 when a block wrote nothing. */
int probe_count_sms(int k, int n, unsigned char *seen)
{
    int i, cnt = 0;

    memset(seen, 0, ZOO_MAX_SMID);
    for (i = 0; i < n; i++) {
        const struct probe_rec *p = &g_hprobe[k][i];

        if (p->t0 == 0 || p->smid >= ZOO_MAX_SMID)
            return -1;
        if (!seen[p->smid]++)
            cnt++;
    }
    return cnt;
}

int probe_run(probe_fn fn, int k, int grid, int threads, int smem,
              double spin_us, cudaStream_t s)
{
    int rc = 0;

    CK(cudaMemsetAsync(g_dprobe[k], 0, (size_t)grid * sizeof(struct probe_rec),
                       s));
    fn<<<grid, threads, smem, s>>>(g_dprobe[k],
                                   (unsigned long long)(spin_us * 1e3));
    CK(cudaGetLastError());
out:
    return rc;
}

int probe_fetch(int k, int grid, cudaStream_t s)
{
    int rc = 0;

    CKZ(wait_stream(s));
    CK(cudaMemcpy(g_hprobe[k], g_dprobe[k],
                  (size_t)grid * sizeof(struct probe_rec),
                  cudaMemcpyDeviceToHost));
out:
    return rc;
}

/* Blocks of the same kernel resident on one SM at once, at most. */
int max_resident(int k, int n)
{
    const struct probe_rec *r = g_hprobe[k];
    int best = 0, i, j;

    for (i = 0; i < n; i++) {
        int c = 0;

        for (j = 0; j < n; j++)
            if (r[j].smid == r[i].smid && r[j].t0 <= r[i].t0 &&
                r[i].t0 < r[j].t1)
                c++;
        if (c > best)
            best = c;
    }
    return best;
}

void probe_free(void)
{
    int i;

    for (i = 0; i < 2; i++) {
        if (g_dprobe[i])
            cudaFree(g_dprobe[i]);
        free(g_hprobe[i]);
        g_dprobe[i] = NULL;
        g_hprobe[i] = NULL;
    }
}
