/*
 * Control interface of the fake driver (tests/fakecuda/libcuda.so.1).
 *
 * The fake driver stands in for libcuda.so.1 in GPU-free tests. It exports
 * the driver entry points the shim and the tests use under their real ABI
 * names, answers cuGetProcAddress/cuGetProcAddress_v2 the way the real
 * driver does (cudaVersion and flags honoured, per-thread-default-stream
 * variants, version-dependent ABI variants, CUDA_ERROR_NOT_FOUND with a
 * symbolStatus for unknown or too-new symbols), and keeps its own tally of
 * what it executed, like CUPTI's kernel activity records on a real GPU.
 *
 * With MOSAIC_SIMGPU=<name> set, the same library is a simulated GPU
 * shared by every process naming that segment (docs/simgpu.md): kernels
 * run in real time with their profiled durations and measured co-run
 * slowdowns, and streams, events and stream memory operations follow it.
 * The tally counts the same either way.
 *
 * Tests reach these fake_* functions with dlsym() on the fake library's
 * handle, so that a test program never links against the fake directly
 * and reaches the driver exactly as the CUDA runtime does.
 */
#ifndef MOSAIC_TESTS_FAKE_CUDA_H
#define MOSAIC_TESTS_FAKE_CUDA_H

#include <cuda.h>
#include <stdint.h>

/* Creates a module-style function handle (what cuModuleGetFunction gives). */
typedef CUfunction (*fake_function_create_fn)(const char *name, int regs,
                                              int static_smem);
/* Creates a library-style kernel handle (what cuLibraryGetKernel gives).
 * cuLibraryGetKernel(&k, lib, name) also returns kernels by name, creating
 * them with regs 32 and no static shared memory on first use. */
typedef CUkernel (*fake_kernel_create_fn)(const char *name, int regs,
                                          int static_smem);

/* What the fake driver executed since the last fake_reset(). */
struct fake_tally {
    uint64_t kernels_executed;   /* every kernel run: direct or inside a graph */
    uint64_t direct_executed;    /* kernels run by a cuLaunch* call */
    uint64_t graph_kernels_executed; /* kernels run by cuGraphLaunch* */
    uint64_t graph_launches;     /* cuGraphLaunch* calls that ran */
    uint64_t captured;           /* launches recorded into a capturing stream */
    uint64_t per_entry[16];      /* indexed by enum fake_entry */
    uint64_t getproc_calls;      /* cuGetProcAddress* calls */
};

enum fake_entry {
    FAKE_cuLaunchKernel,
    FAKE_cuLaunchKernel_ptsz,
    FAKE_cuLaunchKernelEx,
    FAKE_cuLaunchKernelEx_ptsz,
    FAKE_cuLaunchCooperativeKernel,
    FAKE_cuLaunchCooperativeKernel_ptsz,
    FAKE_cuGraphLaunch,
    FAKE_cuGraphLaunch_ptsz,
    FAKE_ENTRY_COUNT
};

/* fake_sim_event_ns(event, &ns): when a completed event completed, in ns of
 * CLOCK_MONOTONIC (the clock every process on a simulated GPU shares). */
typedef CUresult (*fake_sim_event_ns_fn)(CUevent event, double *ns);

typedef void (*fake_tally_fn)(struct fake_tally *out);
typedef void (*fake_reset_fn)(void);

#endif /* MOSAIC_TESTS_FAKE_CUDA_H */
