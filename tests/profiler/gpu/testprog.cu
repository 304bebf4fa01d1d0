// A small CUDA program for testing mosaic-profile capture against ncu.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); exit(1);} } while (0)

__global__ void vecadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
__global__ void fma_loop(float *x, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i], w = v * 0.5f;
    for (int k = 0; k < iters; k++) { v = fmaf(v, 0.999f, w); w = fmaf(w, 1.001f, v); }
    x[i] = v + w;
}
__global__ void smem_kernel(float *x, int n) {
    extern __shared__ float s[];
    int t = threadIdx.x;
    s[(t * 32) % blockDim.x] = x[blockIdx.x * blockDim.x + t];   // bank conflicts
    __syncthreads();
    float acc = 0;
    for (int k = 0; k < 32; k++) acc += s[(t + k * 32) % blockDim.x];
    x[blockIdx.x * blockDim.x + t] = acc;
}
__global__ void incr(int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1;
}
__global__ void strided(const float *a, float *c, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long j = ((long)i * stride) % n;
    if (i < n) c[i] = a[j] * 2.0f;
}

int main() {
    const int n = 1 << 24;
    float *a, *b, *c;
    int *cnt;
    CK(cudaMalloc(&a, n * sizeof(float)));
    CK(cudaMalloc(&b, n * sizeof(float)));
    CK(cudaMalloc(&c, n * sizeof(float)));
    CK(cudaMalloc(&cnt, n * sizeof(int)));
    CK(cudaMemset(a, 0, n * sizeof(float)));
    CK(cudaMemset(b, 0, n * sizeof(float)));
    CK(cudaMemset(cnt, 0, n * sizeof(int)));
    for (int r = 0; r < 3; r++) vecadd<<<n / 256, 256>>>(a, b, c, n);
    vecadd<<<n / 512, 512>>>(a, b, c, n);
    fma_loop<<<264, 256>>>(c, 4096);
    smem_kernel<<<4096, 256, 256 * sizeof(float)>>>(c, n);
    strided<<<n / 256, 256>>>(a, c, n, 33);
    incr<<<n / 256, 256>>>(cnt, n);
    // A cudaLaunchKernelEx launch with a cluster of 2.
    {
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = 2; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
        cfg.gridDim = dim3(1024); cfg.blockDim = dim3(128); cfg.attrs = at; cfg.numAttrs = 1;
        CK(cudaLaunchKernelEx(&cfg, vecadd, (const float *)a, (const float *)b, c, 1024 * 128));
    }
    // Stream capture + graph launch: incr runs 2 more times through a graph.
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    incr<<<n / 1024, 1024, 0, s>>>(cnt, n);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaDeviceSynchronize());
    // Kernel replay must not change results: every cnt[i] == 3.
    int *h = (int *)malloc(n * sizeof(int));
    CK(cudaMemcpy(h, cnt, n * sizeof(int), cudaMemcpyDeviceToHost));
    long bad = 0;
    for (int i = 0; i < n; i++) bad += h[i] != 3;
    printf("testprog: %s (%ld wrong counters)\n", bad ? "WRONG RESULTS" : "results ok", bad);
    return bad ? 1 : 0;
}
