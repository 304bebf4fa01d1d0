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

/* The order of stream operations the fake saw (fake_trace_*): one entry per
 * call that enqueued something, in call order, so that a test can check the
 * dependencies a shim set up without a GPU. `stream` is the handle as the
 * call named it, with a NULL of a _ptsz entry point already turned into
 * CU_STREAM_PER_THREAD; `tid` tells the per-thread default streams of two
 * threads apart. */
enum fake_op {
    FAKE_OP_LAUNCH = 1, /* a kernel launch that executed */
    FAKE_OP_GRAPH,      /* a graph launch that executed */
    FAKE_OP_CAPTURED,   /* a kernel or graph launch recorded into a capture */
    FAKE_OP_RECORD,     /* cuEventRecord*: obj is the event */
    FAKE_OP_WAIT,       /* cuStreamWaitEvent*: obj is the event */
    FAKE_OP_HOSTFN,     /* cuLaunchHostFunc*: obj is the function's data */
};

struct fake_trace_entry {
    int op;              /* enum fake_op */
    unsigned sms;        /* the stream's green-context SMs, 0: full GPU */
    CUstream stream;
    const void *obj;     /* kernel handle, exec, event or host data */
    const char *name;    /* kernel name (LAUNCH, CAPTURED kernels) */
    unsigned long tid;   /* pthread_self() of the caller */
};

/* fake_trace_start(): clears and starts the trace. fake_trace_get(out, cap)
 * copies up to cap entries and returns how many were traced (more than cap
 * when some did not fit the fake's 4096 entries or out). */
typedef void (*fake_trace_start_fn)(void);
typedef size_t (*fake_trace_get_fn)(struct fake_trace_entry *out, size_t cap);

/* Green contexts: how many the process holds now and how many streams of
 * them exist (a leak check), fake_green_counts(&ctxs, &streams). */
typedef void (*fake_green_counts_fn)(int *ctxs, int *streams);

/*
 * Environment knobs of the fake's green contexts (read at each call):
 * - FAKECUDA_DRIVER_VERSION=N: cuDriverGetVersion answers N, and
 *   cuGetProcAddress treats entry points newer than N as absent
 *   (CUDA_ERROR_NOT_FOUND), as an older driver lacks them; e.g. 12030 has
 *   no green contexts.
 * - FAKECUDA_GREEN_MODULES=0: a CUfunction of a module loaded in the
 *   primary context is refused (CUDA_ERROR_INVALID_HANDLE) on a
 *   green-context stream, the behaviour a driver that does not share the
 *   primary context's modules with its green contexts would have.
 * - FAKECUDA_SMS=N (default 132), FAKECUDA_SM_ALIGN=N (8),
 *   FAKECUDA_SM_MIN=N (8): the device's SM resource.
 * - CUDA_MODULE_LOADING=LAZY (the default, as the real driver's) or EAGER:
 *   whether a library's CUkernel is loaded at its first launch or
 *   cuKernelGetFunction, after the simulated context's queued work
 *   drained (read once; fake_cuda.c, "Lazy loading").
 */

typedef void (*fake_tally_fn)(struct fake_tally *out);
typedef void (*fake_reset_fn)(void);

#endif /* MOSAIC_TESTS_FAKE_CUDA_H */
