/*
 * The driver entry points that Mosaic's own code calls, and the one
 * kernel-identity resolver, shared by the shim (preload/) and the capture
 * library (profiler/capture/). Internal; needs cuda.h (headers only: the
 * functions are found at run time in the libcuda.so.1 the program loaded).
 *
 * MOSAIC__DRIVER_FNS is the one list, by exact ABI name and with the
 * argument types: it generates struct mosaic__drv and its loader, and
 * core/kident.c checks every entry against cuda.h's own declaration at
 * compile time, so a list that drifted from the header does not build.
 * Tested on driver 580.159.04 / CUDA 13.0 (H200); cuFuncGetName and
 * cuKernelGetName need driver 12.3 or newer, cuFuncIsLoaded and cuFuncLoad
 * 12.4 (older ones leave them NULL).
 */
#ifndef MOSAIC_CORE_CUDRV_H
#define MOSAIC_CORE_CUDRV_H

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(exact ABI name, (argument types)); every one returns CUresult. */
#define MOSAIC__DRIVER_FNS(X)                                                  \
    X(cuCtxGetDevice, (CUdevice *))                                            \
    X(cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice))             \
    X(cuDeviceGetName, (char *, int, CUdevice))                                \
    X(cuDriverGetVersion, (int *))                                             \
    X(cuFuncGetName, (const char **, CUfunction))                              \
    X(cuFuncGetAttribute, (int *, CUfunction_attribute, CUfunction))           \
    X(cuKernelGetName, (const char **, CUkernel))                              \
    X(cuKernelGetAttribute, (int *, CUfunction_attribute, CUkernel, CUdevice)) \
    X(cuKernelGetFunction, (CUfunction *, CUkernel))                           \
    X(cuFuncIsLoaded, (CUfunctionLoadingState *, CUfunction))                 \
    X(cuFuncLoad, (CUfunction))                                                \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor,                             \
      (int *, CUfunction, int, size_t))                                        \
    X(cuStreamIsCapturing, (CUstream, CUstreamCaptureStatus *))                \
    X(cuStreamIsCapturing_ptsz, (CUstream, CUstreamCaptureStatus *))           \
    X(cuGraphGetNodes, (CUgraph, CUgraphNode *, size_t *))                     \
    X(cuGraphNodeGetType, (CUgraphNode, CUgraphNodeType *))                    \
    X(cuGraphKernelNodeGetParams_v2,                                           \
      (CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2 *))                             \
    X(cuGraphChildGraphNodeGetGraph, (CUgraphNode, CUgraph *))

/*
 * X(exact ABI name, family, is_launch): the driver entry points through
 * which kernels (or whole graphs) are launched. The shim interposes them
 * (rows of MOSAIC__HOOKS in preload/hooks.h, where the family names the
 * signature); the capture library subscribes to their CUPTI callbacks. One
 * list, so that a launch entry point added for one is seen by the other.
 */
#define MOSAIC__LAUNCH_ENTRIES(X)                                          \
    X(cuLaunchKernel, launch, 1)                                           \
    X(cuLaunchKernel_ptsz, launch, 1)                                      \
    X(cuLaunchKernelEx, launch_ex, 1)                                      \
    X(cuLaunchKernelEx_ptsz, launch_ex, 1)                                 \
    X(cuLaunchCooperativeKernel, launch_coop, 1)                           \
    X(cuLaunchCooperativeKernel_ptsz, launch_coop, 1)                      \
    X(cuGraphLaunch, graph_launch, 0)                                      \
    X(cuGraphLaunch_ptsz, graph_launch, 0)

/* The entry points, NULL where the driver does not export one. */
struct mosaic__drv {
#define MOSAIC__X_DRV_FIELD(name, args) CUresult(CUDAAPI *name) args;
    MOSAIC__DRIVER_FNS(MOSAIC__X_DRV_FIELD)
#undef MOSAIC__X_DRV_FIELD
};

/* Finds every entry point of the list in lib (a handle of libcuda.so.1)
 * through sym, which is dlsym for the capture library and the C library's
 * real dlsym for the shim (which interposes dlsym itself). Returns how many
 * were found. */
int mosaic__drv_load(struct mosaic__drv *d, void *lib,
                     void *(*sym)(void *, const char *));

/* ---- kernel identity -------------------------------------------------- */

/* What a launch handle is: a CUfunction, or a CUkernel (the CUDA runtime
 * launches the CUkernels of cuLibraryGetKernel cast to CUfunction). */
enum mosaic__kind { MOSAIC__KIND_FUNCTION, MOSAIC__KIND_KERNEL };

struct mosaic__kident {
    const char *name; /* the driver's string; copy it (it lives as long as
                         the module) */
    int kind;         /* enum mosaic__kind, as resolved */
    CUfunction func;  /* a CUfunction for further queries (occupancy), or
                         NULL: the handle itself for a CUfunction, the
                         current context's function of a CUkernel when
                         MOSAIC__KIDENT_FUNCTION was asked for */
    int num_regs;     /* registers per thread; -1 when unknown */
    int static_smem;  /* bytes of static shared memory per block; -1 */
    int max_threads;  /* most threads per block the kernel allows; -1 */
    int local_bytes;  /* local memory per thread; -1 */
};

/* Ask for a CUfunction behind a CUkernel (cuKernelGetFunction, which loads
 * the kernel into the current context: only for callers that run in one). */
#define MOSAIC__KIDENT_FUNCTION 1

/*
 * Resolves the name, kind and resources of a launch handle. The kind hint is
 * tried first and the other kind second, so either works whatever the
 * handle was cast to. Attributes of a CUkernel are read for the current
 * context's device (device 0 without a context).
 *
 * Returns 0; MOSAIC_ENOSYM when the driver has neither cuFuncGetName nor
 * cuKernelGetName (older than 12.3); MOSAIC_EINVAL when the handle is NULL
 * or neither kind has a name for it. On failure out->name is NULL, and
 * out->func is the handle itself when the hint was a CUfunction (the caller
 * may still ask the driver about it).
 */
int mosaic__kident_resolve(const struct mosaic__drv *d, const void *handle,
                           int kind_hint, int flags, struct mosaic__kident *out);

#ifdef __cplusplus
}
#endif
#endif /* MOSAIC_CORE_CUDRV_H */
