/*
 * san_abi.h (argus-pcmap's own declarations of the CUDA Sanitizer API)
 * against the real headers (compute-sanitizer/include/sanitizer.h): every
 * value and layout it relies on, checked at compile time. Built where the
 * headers are found (ctest argus_pcmap_abi; scripts/gpu/argus16_pcmap.sh
 * builds it on the GPU machine before anything runs). A mismatch does not
 * compile and names the field.
 */
#include <stddef.h>
#include <stdio.h>

#include <sanitizer.h>

#include "san_abi.h"

#define SAME(a, b) _Static_assert((long)(a) == (long)(b), #a " differs from " #b)
#define SAME_FIELD(ta, fa, tb, fb)                                                                \
    _Static_assert(offsetof(ta, fa) == offsetof(tb, fb), #ta "." #fa " is not where " #tb "." #fb \
                                                             " is");                               \
    _Static_assert(sizeof(((ta *)0)->fa) == sizeof(((tb *)0)->fb), #ta "." #fa " has another size")

SAME(ARGUS_SAN_SUCCESS, SANITIZER_SUCCESS);
SAME(ARGUS_SAN_ERROR_INVALID_PARAMETER, SANITIZER_ERROR_INVALID_PARAMETER);
SAME(ARGUS_SAN_ERROR_INVALID_DEVICE, SANITIZER_ERROR_INVALID_DEVICE);
SAME(ARGUS_SAN_ERROR_NOT_INITIALIZED, SANITIZER_ERROR_NOT_INITIALIZED);
SAME(ARGUS_SAN_ERROR_MAX_LIMIT_REACHED, SANITIZER_ERROR_MAX_LIMIT_REACHED);
SAME(ARGUS_SAN_ERROR_NOT_COMPATIBLE, SANITIZER_ERROR_NOT_COMPATIBLE);
SAME(ARGUS_SAN_ERROR_NOT_SUPPORTED, SANITIZER_ERROR_NOT_SUPPORTED);
SAME(ARGUS_SAN_DOMAIN_RESOURCE, SANITIZER_CB_DOMAIN_RESOURCE);
SAME(ARGUS_SAN_DOMAIN_LAUNCH, SANITIZER_CB_DOMAIN_LAUNCH);
SAME(ARGUS_SAN_CBID_MODULE_LOADED, SANITIZER_CBID_RESOURCE_MODULE_LOADED);
SAME(ARGUS_SAN_CBID_MODULE_UNLOAD_STARTING, SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
SAME(ARGUS_SAN_CBID_LAUNCH_BEGIN, SANITIZER_CBID_LAUNCH_BEGIN);
SAME(ARGUS_SAN_CBID_LAUNCH_END, SANITIZER_CBID_LAUNCH_END);
SAME(ARGUS_SAN_DOMAIN_SYNCHRONIZE, SANITIZER_CB_DOMAIN_SYNCHRONIZE);
SAME(ARGUS_SAN_CBID_STREAM_SYNCHRONIZED, SANITIZER_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED);
SAME(ARGUS_SAN_CBID_CONTEXT_SYNCHRONIZED, SANITIZER_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED);
SAME(ARGUS_PCMAP_K_GLOBAL, SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS);
SAME(ARGUS_PCMAP_K_SHARED, SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS);
SAME(ARGUS_PCMAP_K_LOCAL, SANITIZER_INSTRUCTION_LOCAL_MEMORY_ACCESS);
SAME(ARGUS_PCMAP_K_BARRIER, SANITIZER_INSTRUCTION_BARRIER);
SAME(ARGUS_PCMAP_K_SYNCWARP, SANITIZER_INSTRUCTION_SYNCWARP);
SAME(ARGUS_PCMAP_K_SHFL, SANITIZER_INSTRUCTION_SHFL);
SAME(ARGUS_PCMAP_K_CALL, SANITIZER_INSTRUCTION_CALL);
SAME(ARGUS_PCMAP_K_RET, SANITIZER_INSTRUCTION_RET);
SAME(ARGUS_PCMAP_K_EXIT, SANITIZER_INSTRUCTION_BLOCK_EXIT);
SAME(SANITIZER_MEMORY_DEVICE_FLAG_WRITE, 0x2); /* pcmap_patch.cu tests this bit */
SAME(SANITIZER_PATCH_SUCCESS, 0);             /* what every callback returns */

_Static_assert(sizeof(argus_san_module_data) == sizeof(Sanitizer_ResourceModuleData),
               "Sanitizer_ResourceModuleData has another size");
SAME_FIELD(argus_san_module_data, context, Sanitizer_ResourceModuleData, context);
SAME_FIELD(argus_san_module_data, module, Sanitizer_ResourceModuleData, module);
SAME_FIELD(argus_san_module_data, cubin_size, Sanitizer_ResourceModuleData, cubinSize);
SAME_FIELD(argus_san_module_data, cubin, Sanitizer_ResourceModuleData, pCubin);

_Static_assert(sizeof(argus_san_launch_data) == sizeof(Sanitizer_LaunchData),
               "Sanitizer_LaunchData has another size");
SAME_FIELD(argus_san_launch_data, context, Sanitizer_LaunchData, context);
SAME_FIELD(argus_san_launch_data, stream, Sanitizer_LaunchData, stream);
SAME_FIELD(argus_san_launch_data, hstream, Sanitizer_LaunchData, hStream);
SAME_FIELD(argus_san_launch_data, module, Sanitizer_LaunchData, module);
SAME_FIELD(argus_san_launch_data, function, Sanitizer_LaunchData, function);
SAME_FIELD(argus_san_launch_data, function_name, Sanitizer_LaunchData, functionName);
SAME_FIELD(argus_san_launch_data, grid[0], Sanitizer_LaunchData, gridDim_x);
SAME_FIELD(argus_san_launch_data, grid[2], Sanitizer_LaunchData, gridDim_z);
SAME_FIELD(argus_san_launch_data, block[0], Sanitizer_LaunchData, blockDim_x);
SAME_FIELD(argus_san_launch_data, block[2], Sanitizer_LaunchData, blockDim_z);
SAME_FIELD(argus_san_launch_data, grid_id, Sanitizer_LaunchData, gridId);
SAME_FIELD(argus_san_launch_data, hlaunch, Sanitizer_LaunchData, hLaunch);
SAME_FIELD(argus_san_launch_data, device, Sanitizer_LaunchData, device);

_Static_assert(sizeof(argus_san_sync_data) == sizeof(Sanitizer_SynchronizeData),
               "Sanitizer_SynchronizeData has another size");
SAME_FIELD(argus_san_sync_data, context, Sanitizer_SynchronizeData, context);
SAME_FIELD(argus_san_sync_data, stream, Sanitizer_SynchronizeData, stream);
SAME_FIELD(argus_san_sync_data, hstream, Sanitizer_SynchronizeData, hStream);

/* The entry points exist with these names in the headers (a misspelt one
 * does not compile; sizeof refers to them without linking them). */
#define ARGUS_X_FN(name, args) sizeof(&name),
static const size_t fns[] = {ARGUS_SAN_FUNCS(ARGUS_X_FN)};
#undef ARGUS_X_FN

int main(void)
{
    printf("san_abi.h matches the Sanitizer headers: %zu entry points, %zu-byte launch data\n",
           sizeof fns / sizeof fns[0], sizeof(Sanitizer_LaunchData));
    return 0;
}
