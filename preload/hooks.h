/*
 * The one list of driver entry points that libmosaic.so interposes.
 *
 * Every hooked entry point is one MOSAIC__HOOKS() row: its exact exported
 * symbol name in libcuda.so.1 and the family that gives its signature (the
 * launch rows come from MOSAIC__LAUNCH_ENTRIES in core/cudrv.h, shared with
 * the capture library). The
 * enum of hook ids, the table of names, the exported wrappers and the
 * pointer-identity lookup used by dlsym()/cuGetProcAddress() are all
 * generated from this list, so they cannot drift apart.
 *
 * Tested on: driver 580.159.04 with CUDA 13.0 headers (H200). The names are
 * the driver's exported ABI names (cuda.h with __CUDA_API_VERSION_INTERNAL
 * declares each of them under its own name); a symbol this driver does not
 * export simply has no real pointer and is never handed out.
 */
#ifndef MOSAIC_PRELOAD_HOOKS_H
#define MOSAIC_PRELOAD_HOOKS_H

#include "cudrv.h" /* MOSAIC__LAUNCH_ENTRIES: the launch rows */

/* Families: parameter list (P) and argument list (A) shared by the rows. */
#define MOSAIC__P_getproc_v1 \
    const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags
#define MOSAIC__A_getproc_v1 symbol, pfn, cudaVersion, flags

#define MOSAIC__P_getproc_v2                                              \
    const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,    \
        CUdriverProcAddressQueryResult *symbolStatus
#define MOSAIC__A_getproc_v2 symbol, pfn, cudaVersion, flags, symbolStatus

#define MOSAIC__P_launch                                                   \
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,       \
        unsigned int bx, unsigned int by, unsigned int bz,                 \
        unsigned int shmem, CUstream stream, void **params, void **extra
#define MOSAIC__A_launch f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra

#define MOSAIC__P_launch_ex \
    const CUlaunchConfig *config, CUfunction f, void **params, void **extra
#define MOSAIC__A_launch_ex config, f, params, extra

#define MOSAIC__P_launch_coop                                              \
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,       \
        unsigned int bx, unsigned int by, unsigned int bz,                 \
        unsigned int shmem, CUstream stream, void **params
#define MOSAIC__A_launch_coop f, gx, gy, gz, bx, by, bz, shmem, stream, params

#define MOSAIC__P_graph_launch CUgraphExec exec, CUstream stream
#define MOSAIC__A_graph_launch exec, stream

#define MOSAIC__P_capture_begin_v1 CUstream stream
#define MOSAIC__A_capture_begin_v1 stream

#define MOSAIC__P_capture_begin_v2 CUstream stream, CUstreamCaptureMode mode
#define MOSAIC__A_capture_begin_v2 stream, mode

#define MOSAIC__P_capture_begin_to_graph                                   \
    CUstream stream, CUgraph graph, const CUgraphNode *deps,               \
        const CUgraphEdgeData *depData, size_t ndeps, CUstreamCaptureMode mode
#define MOSAIC__A_capture_begin_to_graph stream, graph, deps, depData, ndeps, mode

#define MOSAIC__P_capture_end CUstream stream, CUgraph *graph
#define MOSAIC__A_capture_end stream, graph

#define MOSAIC__P_graph_inst_v1                                            \
    CUgraphExec *exec, CUgraph graph, CUgraphNode *errNode, char *logBuf,  \
        size_t logSize
#define MOSAIC__A_graph_inst_v1 exec, graph, errNode, logBuf, logSize

#define MOSAIC__P_graph_inst_flags \
    CUgraphExec *exec, CUgraph graph, unsigned long long iflags
#define MOSAIC__A_graph_inst_flags exec, graph, iflags

#define MOSAIC__P_graph_inst_params \
    CUgraphExec *exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS *iparams
#define MOSAIC__A_graph_inst_params exec, graph, iparams

#define MOSAIC__P_graph_update_v1                                          \
    CUgraphExec exec, CUgraph graph, CUgraphNode *errNode,                 \
        CUgraphExecUpdateResult *result
#define MOSAIC__A_graph_update_v1 exec, graph, errNode, result

#define MOSAIC__P_graph_update_v2 \
    CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *info
#define MOSAIC__A_graph_update_v2 exec, graph, info

#define MOSAIC__P_graph_exec_destroy CUgraphExec exec
#define MOSAIC__A_graph_exec_destroy exec

/* Synchronisation: the end of a learned HP request, a BE kernel done
 * (preload/sched_link.c). */
#define MOSAIC__P_stream_sync CUstream stream
#define MOSAIC__A_stream_sync stream
/* No parameters: the handler takes one unused int so that the generated
 * call `h_ctx_sync(hook, 0)` is valid C. */
#define MOSAIC__P_ctx_sync void
#define MOSAIC__A_ctx_sync 0
/* cuCtxSynchronize_v2(ctx), its own export in the CUDA 13.0 headers; the
 * CUDA 13 runtime's cudaDeviceSynchronize can reach the driver there
 * (torch.cuda.synchronize() does), so a learned HP request must end at it
 * too. */
#define MOSAIC__P_ctx_sync_v2 CUcontext ctx
#define MOSAIC__A_ctx_sync_v2 ctx
#define MOSAIC__P_event_sync CUevent event
#define MOSAIC__A_event_sync event

#define MOSAIC__P_library_get_kernel \
    CUkernel *kernel, CUlibrary lib, const char *name
#define MOSAIC__A_library_get_kernel kernel, lib, name

#define MOSAIC__P_library_enum_kernels \
    CUkernel *kernels, unsigned int count, CUlibrary lib
#define MOSAIC__A_library_enum_kernels kernels, count, lib

/*
 * X(symbol, family, is_launch): is_launch marks the rows that execute (or
 * record, under capture) kernels and are counted per entry point in stats.
 */
#define MOSAIC__HOOKS(X)                                                   \
    X(cuGetProcAddress, getproc_v1, 0)                                     \
    X(cuGetProcAddress_v2, getproc_v2, 0)                                  \
    MOSAIC__LAUNCH_ENTRIES(X) /* core/cudrv.h, shared with capture */      \
    X(cuStreamBeginCapture, capture_begin_v1, 0)                           \
    X(cuStreamBeginCapture_ptsz, capture_begin_v1, 0)                      \
    X(cuStreamBeginCapture_v2, capture_begin_v2, 0)                        \
    X(cuStreamBeginCapture_v2_ptsz, capture_begin_v2, 0)                   \
    X(cuStreamBeginCaptureToGraph, capture_begin_to_graph, 0)              \
    X(cuStreamBeginCaptureToGraph_ptsz, capture_begin_to_graph, 0)         \
    X(cuStreamEndCapture, capture_end, 0)                                  \
    X(cuStreamEndCapture_ptsz, capture_end, 0)                             \
    X(cuGraphInstantiate, graph_inst_v1, 0)                                \
    X(cuGraphInstantiate_v2, graph_inst_v1, 0)                             \
    X(cuGraphInstantiateWithFlags, graph_inst_flags, 0)                    \
    X(cuGraphInstantiateWithParams, graph_inst_params, 0)                  \
    X(cuGraphInstantiateWithParams_ptsz, graph_inst_params, 0)             \
    X(cuGraphExecUpdate, graph_update_v1, 0)                               \
    X(cuGraphExecUpdate_v2, graph_update_v2, 0)                            \
    X(cuGraphExecDestroy, graph_exec_destroy, 0)                           \
    X(cuLibraryGetKernel, library_get_kernel, 0)                           \
    X(cuLibraryEnumerateKernels, library_enum_kernels, 0)                  \
    X(cuStreamSynchronize, stream_sync, 0)                                 \
    X(cuStreamSynchronize_ptsz, stream_sync, 0)                            \
    X(cuCtxSynchronize, ctx_sync, 0)                                       \
    X(cuCtxSynchronize_v2, ctx_sync_v2, 0)                                 \
    X(cuEventSynchronize, event_sync, 0)

enum mosaic__hook {
#define MOSAIC__X_ENUM(sym, fam, is_launch) MOSAIC__HOOK_##sym,
    MOSAIC__HOOKS(MOSAIC__X_ENUM)
#undef MOSAIC__X_ENUM
    MOSAIC__HOOK_COUNT
};

#endif /* MOSAIC_PRELOAD_HOOKS_H */
