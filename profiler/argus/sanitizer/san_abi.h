/*
 * The part of the CUDA Sanitizer API (compute-sanitizer's
 * libsanitizer-public.so) that argus-pcmap uses, declared here so that the
 * tool and its fake (tests/argus/fake_sanitizer.c) build where the
 * toolkit's compute-sanitizer/include is not installed (this CPU machine,
 * CI). The library is opened with dlopen at run time, so a machine without
 * it gets a sentence, not a link error.
 *
 * Written from the CUDA 13.0 headers (sanitizer_callbacks.h,
 * sanitizer_patching.h, sanitizer_memory.h, sanitizer_stream.h,
 * sanitizer_result.h of nvidia-cuda-sanitizer-api 13.0.85); every value and
 * layout here is checked against the real headers by
 * tests/argus/pcmap_abi_check.c wherever they are found (ctest
 * argus_pcmap_abi; scripts/gpu/argus16_pcmap.sh runs it on the GPU machine
 * first). Another CUDA version may change them: run that check there.
 */
#ifndef ARGUS_SAN_ABI_H
#define ARGUS_SAN_ABI_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int argus_san_result; /* SanitizerResult */
#define ARGUS_SAN_SUCCESS 0
#define ARGUS_SAN_ERROR_INVALID_PARAMETER 1
#define ARGUS_SAN_ERROR_INVALID_DEVICE 2
#define ARGUS_SAN_ERROR_NOT_INITIALIZED 13
#define ARGUS_SAN_ERROR_MAX_LIMIT_REACHED 10
#define ARGUS_SAN_ERROR_NOT_COMPATIBLE 12
#define ARGUS_SAN_ERROR_NOT_SUPPORTED 14

/* Sanitizer_CallbackDomain */
#define ARGUS_SAN_DOMAIN_RESOURCE 3
#define ARGUS_SAN_DOMAIN_SYNCHRONIZE 4
#define ARGUS_SAN_DOMAIN_LAUNCH 5
/* Sanitizer_CallbackIdResource */
#define ARGUS_SAN_CBID_MODULE_LOADED 9
#define ARGUS_SAN_CBID_MODULE_UNLOAD_STARTING 10
/* Sanitizer_CallbackIdLaunch */
#define ARGUS_SAN_CBID_LAUNCH_BEGIN 1
#define ARGUS_SAN_CBID_LAUNCH_END 3
/* Sanitizer_CallackIdSync (sic) */
#define ARGUS_SAN_CBID_STREAM_SYNCHRONIZED 1
#define ARGUS_SAN_CBID_CONTEXT_SYNCHRONIZED 2

/* Sanitizer_InstructionId values of the instructions argus-pcmap patches,
 * with the device callback (profiler/argus/sanitizer/pcmap_patch.cu) and
 * the kind's name in the map (docs/argus-backends.md). One list, so the
 * enum, the names and the patching loop cannot drift. */
#define ARGUS_SAN_PATCHES(X)                                                      \
    X(ARGUS_PCMAP_K_GLOBAL, 3, "argus_pcmap_global", "global_memory")             \
    X(ARGUS_PCMAP_K_SHARED, 4, "argus_pcmap_shared", "shared_memory")             \
    X(ARGUS_PCMAP_K_LOCAL, 5, "argus_pcmap_local", "local_memory")                \
    X(ARGUS_PCMAP_K_BARRIER, 6, "argus_pcmap_barrier", "barrier")                 \
    X(ARGUS_PCMAP_K_SYNCWARP, 7, "argus_pcmap_syncwarp", "syncwarp")              \
    X(ARGUS_PCMAP_K_SHFL, 8, "argus_pcmap_shfl", "shfl")                          \
    X(ARGUS_PCMAP_K_CALL, 9, "argus_pcmap_call", "call")                          \
    X(ARGUS_PCMAP_K_RET, 10, "argus_pcmap_ret", "ret")                            \
    X(ARGUS_PCMAP_K_EXIT, 2, "argus_pcmap_exit", "exit")

enum argus_pcmap_kind {
#define ARGUS_X_PATCH(name, id, callback, kind) name = id,
    ARGUS_SAN_PATCHES(ARGUS_X_PATCH)
#undef ARGUS_X_PATCH
};

typedef struct argus_san_subscriber_st *argus_san_subscriber;
typedef struct argus_san_stream_st *argus_san_stream;
typedef struct argus_san_launch_st *argus_san_launch;

typedef void (*argus_san_callback)(void *userdata, int domain, uint32_t cbid,
                                   const void *cbdata);

/* Sanitizer_ResourceModuleData */
typedef struct argus_san_module_data {
    CUcontext context;
    CUmodule module;
    size_t cubin_size;
    const char *cubin;
    CUlibrary library;
} argus_san_module_data;

/* Sanitizer_LaunchData */
typedef struct argus_san_launch_data {
    CUcontext context;
    CUstream stream;
    argus_san_stream hstream;
    CUmodule module;
    CUfunction function;
    const char *function_name;
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t cluster[3];
    uint64_t grid_id;
    argus_san_launch hlaunch;
    CUdevice device;
    CUcontext api_context;
    CUstream api_stream;
    argus_san_stream api_hstream;
} argus_san_launch_data;

/* Sanitizer_SynchronizeData */
typedef struct argus_san_sync_data {
    CUcontext context;
    CUstream stream;          /* STREAM_SYNCHRONIZED only */
    argus_san_stream hstream;
} argus_san_sync_data;

/* The entry points, in the order of the table argus-pcmap resolves. */
#define ARGUS_SAN_FUNCS(X)                                                                  \
    X(sanitizerSubscribe, (argus_san_subscriber *, argus_san_callback, void *))            \
    X(sanitizerUnsubscribe, (argus_san_subscriber))                                       \
    X(sanitizerEnableDomain, (uint32_t, argus_san_subscriber, int))                        \
    X(sanitizerAddPatchesFromFile, (const char *, CUcontext))                              \
    X(sanitizerPatchInstructions, (int, CUmodule, const char *))                           \
    X(sanitizerPatchModule, (CUmodule))                                                   \
    X(sanitizerSetLaunchCallbackData,                                                      \
      (argus_san_launch, CUfunction, argus_san_stream, const void *))                      \
    X(sanitizerGetFunctionPcAndSize, (CUmodule, const char *, uint64_t *, uint64_t *))     \
    X(sanitizerAlloc, (CUcontext, void **, size_t))                                       \
    X(sanitizerFree, (CUcontext, void *))                                                 \
    X(sanitizerMemset, (void *, int, size_t, argus_san_stream))                            \
    X(sanitizerMemcpyHostToDeviceAsync, (void *, void *, size_t, argus_san_stream))        \
    X(sanitizerMemcpyDeviceToHost, (void *, void *, size_t, argus_san_stream))             \
    X(sanitizerStreamSynchronize, (argus_san_stream))                                     \
    X(sanitizerGetResultString, (argus_san_result, const char **))

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_SAN_ABI_H */
