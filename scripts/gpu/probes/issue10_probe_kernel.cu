// The kernel issue10_gate's funcload probe loads afresh for each case, as a
// module and as a library (nvcc -cubin -arch=sm_90): one store to show it ran.
extern "C" __global__ void k_probe(unsigned *ack)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *ack = 1;
}
