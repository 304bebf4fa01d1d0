// Runtime-API launch coverage workload for the Mosaic shim (sm_90).
//
// Launch kinds exercised, each checked for correctness:
//   * kernel<<<>>> on the default stream and on a created stream
//   * cudaLaunchKernel (the explicit runtime call)
//   * cudaLaunchKernelEx with a cluster-dimension attribute (and one with
//     the cooperative attribute)
//   * cudaLaunchCooperativeKernel with a grid-wide sync
//   * a CUDA graph built by stream capture (kernels + a memset node),
//     instantiated and launched several times (on a created stream and on
//     the default stream)
//   * a graph built explicitly (kernel nodes + a child-graph node holding a
//     kernel), launched several times
//
// Build:  nvcc -arch=sm_90 -O2 -o cuda_runtime_prog cuda_runtime_prog.cu
//   and:  nvcc -arch=sm_90 -O2 --default-stream per-thread -o ..._ptds ...
// (the second build sends the launches through the *_ptsz driver entries).
//
// Prints a line "MOSAIC_EXPECT {json}" with what it executed, for
// compare_counts.py. Exit status 0 only if every check passed.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace cg = cooperative_groups;

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t e_ = (call);                                              \
        if (e_ != cudaSuccess) {                                              \
            fprintf(stderr, "%s:%d: %s -> %s (%s)\n", __FILE__, __LINE__,     \
                    #call, cudaGetErrorName(e_), cudaGetErrorString(e_));     \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

#define CHECK_LAUNCH() CK(cudaGetLastError())

static int g_fail = 0;
#define EXPECT_EQ(what, got, want)                                            \
    do {                                                                      \
        long long g_ = (long long)(got), w_ = (long long)(want);              \
        if (g_ != w_) {                                                       \
            fprintf(stderr, "CHECK FAILED: %s: got %lld want %lld\n", what,   \
                    g_, w_);                                                  \
            g_fail = 1;                                                       \
        }                                                                     \
    } while (0)

__global__ void add_k(int *p, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] += k;
}

__global__ void mul2(int *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] *= 2;
}

// Launched with a cluster dimension of (2,1,1): records each block's rank in
// its cluster and the cluster size it sees.
__global__ void cluster_probe(int *rank, int *csize)
{
    cg::cluster_group c = cg::this_cluster();
    if (threadIdx.x == 0) {
        rank[blockIdx.x] = (int)c.block_rank();
        csize[blockIdx.x] = (int)c.num_blocks();
    }
}

// Cooperative: phase 1 writes, grid-wide barrier, phase 2 reads a value
// written by another block.
__global__ void coop_kernel(int *a, int *b, int n)
{
    cg::grid_group g = cg::this_grid();
    int tid = (int)g.thread_rank();
    int nthreads = (int)g.size();
    for (int i = tid; i < n; i += nthreads)
        a[i] = i;
    g.sync();
    for (int i = tid; i < n; i += nthreads)
        b[i] = a[(i + blockDim.x) % n] + 1;
}

int main()
{
    int dev = 0;
    CK(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    printf("device: %s, sm_%d%d, %d SMs, coopLaunch=%d\n", prop.name,
           prop.major, prop.minor, prop.multiProcessorCount,
           prop.cooperativeLaunch);

    const int n = 1 << 16;
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    int *d = nullptr;
    CK(cudaMalloc(&d, n * sizeof(int)));
    CK(cudaMemset(d, 0, n * sizeof(int)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<int> h(n);

    long long plain = 0, launch_api = 0, ex = 0, coop = 0;
    long long captured = 0, graph_launches = 0, graph_kernels = 0;

    // 1. <<<>>> on the default stream and on stream s.
    const int n_default = 40, n_stream = 40;
    for (int i = 0; i < n_default; i++) {
        add_k<<<blocks, threads>>>(d, n, 1);
        CHECK_LAUNCH();
        plain++;
    }
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < n_stream; i++) {
        add_k<<<blocks, threads, 0, s>>>(d, n, 1);
        CHECK_LAUNCH();
        plain++;
    }
    CK(cudaStreamSynchronize(s));

    // 2. cudaLaunchKernel.
    const int n_api = 10;
    for (int i = 0; i < n_api; i++) {
        int k = 1;
        int nn = n;
        void *args[] = {&d, &nn, &k};
        CK(cudaLaunchKernel((const void *)add_k, dim3(blocks), dim3(threads),
                            args, 0, s));
        launch_api++;
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT_EQ("after plain+api launches d[0]", h[0], n_default + n_stream + n_api);
    EXPECT_EQ("after plain+api launches d[n-1]", h[n - 1],
              n_default + n_stream + n_api);

    // 3. cudaLaunchKernelEx with a cluster dimension attribute.
    {
        const int cblocks = 2 * prop.multiProcessorCount; // divisible by 2
        int *rank = nullptr, *csize = nullptr;
        CK(cudaMalloc(&rank, cblocks * sizeof(int)));
        CK(cudaMalloc(&csize, cblocks * sizeof(int)));
        CK(cudaMemset(rank, 0xff, cblocks * sizeof(int)));
        CK(cudaMemset(csize, 0, cblocks * sizeof(int)));
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(cblocks);
        cfg.blockDim = dim3(64);
        cfg.dynamicSmemBytes = 0;
        cfg.stream = s;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = 2;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        const int n_ex = 3;
        for (int i = 0; i < n_ex; i++) {
            CK(cudaLaunchKernelEx(&cfg, cluster_probe, rank, csize));
            ex++;
        }
        CK(cudaStreamSynchronize(s));
        std::vector<int> hr(cblocks), hc(cblocks);
        CK(cudaMemcpy(hr.data(), rank, cblocks * sizeof(int),
                      cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hc.data(), csize, cblocks * sizeof(int),
                      cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int b = 0; b < cblocks; b++)
            if (hr[b] != b % 2 || hc[b] != 2)
                bad++;
        EXPECT_EQ("cluster blocks with wrong rank/size", bad, 0);

        // cudaLaunchKernelEx, no attributes, plain kernel.
        cudaLaunchConfig_t cfg2 = {};
        cfg2.gridDim = dim3(blocks);
        cfg2.blockDim = dim3(threads);
        cfg2.stream = s;
        CK(cudaLaunchKernelEx(&cfg2, add_k, d, n, 5));
        ex++;
        CK(cudaStreamSynchronize(s));
        CK(cudaFree(rank));
        CK(cudaFree(csize));
    }

    // 4. cudaLaunchCooperativeKernel (grid fits co-resident by construction).
    int *a = nullptr, *b = nullptr;
    const int cn = 1 << 15;
    CK(cudaMalloc(&a, cn * sizeof(int)));
    CK(cudaMalloc(&b, cn * sizeof(int)));
    if (!prop.cooperativeLaunch) {
        fprintf(stderr, "device does not support cooperative launch\n");
        g_fail = 1;
    } else {
        int per_sm = 0;
        const int cthreads = 128;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, coop_kernel,
                                                         cthreads, 0));
        int cgrid = prop.multiProcessorCount; // one block per SM
        if (per_sm < 1) {
            fprintf(stderr, "coop_kernel cannot be resident\n");
            g_fail = 1;
        }
        int nn = cn;
        void *args[] = {&a, &b, &nn};
        const int n_coop = 3;
        for (int i = 0; i < n_coop && per_sm >= 1; i++) {
            CK(cudaMemsetAsync(b, 0, cn * sizeof(int), s));
            CK(cudaLaunchCooperativeKernel((const void *)coop_kernel,
                                           dim3(cgrid), dim3(cthreads), args,
                                           0, s));
            coop++;
        }
        CK(cudaStreamSynchronize(s));
        std::vector<int> hb(cn);
        CK(cudaMemcpy(hb.data(), b, cn * sizeof(int), cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int i = 0; i < cn; i++)
            if (hb[i] != (i + cthreads) % cn + 1)
                bad++;
        EXPECT_EQ("coop result mismatches", bad, 0);

        // cudaLaunchKernelEx with the cooperative attribute.
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(cgrid);
        cfg.blockDim = dim3(cthreads);
        cfg.stream = s;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeCooperative;
        attr[0].val.cooperative = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        CK(cudaMemsetAsync(b, 0, cn * sizeof(int), s));
        CK(cudaLaunchKernelEx(&cfg, coop_kernel, a, b, cn));
        ex++;
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(hb.data(), b, cn * sizeof(int), cudaMemcpyDeviceToHost));
        bad = 0;
        for (int i = 0; i < cn; i++)
            if (hb[i] != (i + cthreads) % cn + 1)
                bad++;
        EXPECT_EQ("coop (LaunchKernelEx) result mismatches", bad, 0);
    }

    // 5. Graph by stream capture: memset node + 3 kernels; launched 6 times.
    {
        int *g = nullptr;
        CK(cudaMalloc(&g, n * sizeof(int)));
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        CK(cudaMemsetAsync(g, 0, n * sizeof(int), s));
        add_k<<<blocks, threads, 0, s>>>(g, n, 3);
        CHECK_LAUNCH();
        mul2<<<blocks, threads, 0, s>>>(g, n);
        CHECK_LAUNCH();
        add_k<<<blocks, threads, 0, s>>>(g, n, 1);
        CHECK_LAUNCH();
        captured += 3;
        CK(cudaStreamEndCapture(s, &graph));
        size_t nodes = 0;
        CK(cudaGraphGetNodes(graph, nullptr, &nodes));
        EXPECT_EQ("captured graph nodes", nodes, 4);
        CK(cudaGraphInstantiate(&exec, graph, 0));
        const int n_replay = 6;
        for (int i = 0; i < n_replay; i++) {
            CK(cudaGraphLaunch(exec, s));
            graph_launches++;
            graph_kernels += 3;
        }
        CK(cudaStreamSynchronize(s));
        // Twice more on the default stream (per-thread in the
        // --default-stream per-thread build: the *_ptsz graph launch path).
        for (int i = 0; i < 2; i++) {
            CK(cudaGraphLaunch(exec, 0));
            graph_launches++;
            graph_kernels += 3;
        }
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h.data(), g, n * sizeof(int), cudaMemcpyDeviceToHost));
        EXPECT_EQ("captured graph result", h[123], (0 + 3) * 2 + 1);
        CK(cudaGraphExecDestroy(exec));
        CK(cudaGraphDestroy(graph));
        CK(cudaFree(g));
    }

    // 6. Explicit graph: kernel -> kernel -> child graph(kernel); 4 launches.
    {
        int *g = nullptr;
        CK(cudaMalloc(&g, n * sizeof(int)));
        CK(cudaMemset(g, 0, n * sizeof(int)));
        cudaGraph_t graph, child;
        CK(cudaGraphCreate(&graph, 0));
        CK(cudaGraphCreate(&child, 0));
        int nn = n, k1 = 1, k7 = 7;
        void *args1[] = {&g, &nn, &k1};
        void *args7[] = {&g, &nn, &k7};
        cudaKernelNodeParams kp = {};
        kp.func = (void *)add_k;
        kp.gridDim = dim3(blocks);
        kp.blockDim = dim3(threads);
        kp.kernelParams = args1;
        cudaGraphNode_t n1, n2, n3, nchild;
        CK(cudaGraphAddKernelNode(&n1, graph, nullptr, 0, &kp));
        CK(cudaGraphAddKernelNode(&n2, graph, &n1, 1, &kp));
        kp.kernelParams = args7;
        CK(cudaGraphAddKernelNode(&n3, child, nullptr, 0, &kp));
        CK(cudaGraphAddChildGraphNode(&nchild, graph, &n2, 1, child));
        cudaGraphExec_t exec;
        CK(cudaGraphInstantiate(&exec, graph, 0));
        const int n_launch = 4;
        for (int i = 0; i < n_launch; i++) {
            CK(cudaGraphLaunch(exec, s));
            graph_launches++;
            graph_kernels += 3;
        }
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(h.data(), g, n * sizeof(int), cudaMemcpyDeviceToHost));
        EXPECT_EQ("explicit graph result", h[77], n_launch * (1 + 1 + 7));
        CK(cudaGraphExecDestroy(exec));
        CK(cudaGraphDestroy(graph));
        CK(cudaGraphDestroy(child));
        CK(cudaFree(g));
    }

    CK(cudaDeviceSynchronize());
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(d));
    CK(cudaStreamDestroy(s));

    long long direct = plain + launch_api + ex + coop;
    printf("launched: plain=%lld cudaLaunchKernel=%lld cudaLaunchKernelEx=%lld "
           "cooperative=%lld captured=%lld graph_launches=%lld "
           "graph_kernels=%lld\n",
           plain, launch_api, ex, coop, captured, graph_launches,
           graph_kernels);
    printf("MOSAIC_EXPECT {\"launches_total\":%lld,\"graph_kernel_launches\":%lld,"
           "\"captured_launches\":%lld,\"graph_launches\":%lld,"
           "\"kernels_total\":%lld}\n",
           direct, graph_kernels, captured, graph_launches,
           direct + graph_kernels);
    printf("%s\n", g_fail ? "RESULT: FAIL" : "RESULT: OK");
    fflush(stdout);
    return g_fail ? 1 : 0;
}
