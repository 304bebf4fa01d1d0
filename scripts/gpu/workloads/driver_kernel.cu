// Kernels for driver_api_prog.c. Built to a cubin:
//   nvcc -arch=sm_90 -cubin -o driver_kernel.cubin driver_kernel.cu
// extern "C" keeps the names unmangled for cuModuleGetFunction.
#include <cooperative_groups.h>

extern "C" __global__ void add_k(int *p, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] += k;
}

// Cooperative launch: grid-wide barrier between two phases. Counts the
// blocks that reached phase 2 after every block finished phase 1.
extern "C" __global__ void coop_count(int *arrived, int *ok)
{
    cooperative_groups::grid_group g = cooperative_groups::this_grid();
    if (threadIdx.x == 0)
        atomicAdd(arrived, 1);
    g.sync();
    if (threadIdx.x == 0 && atomicAdd(arrived, 0) == (int)gridDim.x)
        atomicAdd(ok, 1);
}

// Launched with a (2,1,1) cluster: each block writes its cluster size.
extern "C" __global__ void cluster_size(int *out)
{
    if (threadIdx.x == 0)
        out[blockIdx.x] = (int)cooperative_groups::this_cluster().num_blocks();
}
