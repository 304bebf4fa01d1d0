/*
 * The driver binding list's loader and the kernel-identity resolver
 * (core/cudrv.h). The shim calls the resolver once per launch handle and
 * caches the answer; the capture library once per profiled key.
 */
/* Declare every driver ABI variant under its own exported name, so that
 * each entry of the list can be checked against its declaration. */
#define __CUDA_API_VERSION_INTERNAL 1
#include "cudrv.h"

#include <string.h>

#include "mosaic/mosaic.h"

/* The list's argument types must be exactly cuda.h's. */
#define MOSAIC__X_CHECK(name, args)                                          \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name),           \
                                                CUresult(CUDAAPI *) args),   \
                   #name ": MOSAIC__DRIVER_FNS does not match cuda.h");
MOSAIC__DRIVER_FNS(MOSAIC__X_CHECK)
#undef MOSAIC__X_CHECK

int mosaic__drv_load(struct mosaic__drv *d, void *lib,
                     void *(*sym)(void *, const char *))
{
    int found = 0;

    memset(d, 0, sizeof(*d));
    if (!lib || !sym)
        return 0;
#define MOSAIC__X_LOAD(name, args)          \
    *(void **)&d->name = sym(lib, #name);   \
    found += d->name != NULL;
    MOSAIC__DRIVER_FNS(MOSAIC__X_LOAD)
#undef MOSAIC__X_LOAD
    return found;
}

static int as_function(const struct mosaic__drv *d, CUfunction f,
                       struct mosaic__kident *out)
{
    const char *name = NULL;

    if (!d->cuFuncGetName || d->cuFuncGetName(&name, f) != CUDA_SUCCESS ||
        !name)
        return -1;
    out->name = name;
    out->kind = MOSAIC__KIND_FUNCTION;
    out->func = f;
    if (d->cuFuncGetAttribute) {
        d->cuFuncGetAttribute(&out->num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
        d->cuFuncGetAttribute(&out->static_smem,
                              CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
        d->cuFuncGetAttribute(&out->max_threads,
                              CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
        d->cuFuncGetAttribute(&out->local_bytes,
                              CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
    }
    return 0;
}

static int as_kernel(const struct mosaic__drv *d, CUkernel kern, int flags,
                     struct mosaic__kident *out)
{
    const char *name = NULL;
    CUdevice dev = 0;
    CUfunction f = NULL;

    if (!d->cuKernelGetName || d->cuKernelGetName(&name, kern) != CUDA_SUCCESS ||
        !name)
        return -1;
    out->name = name;
    out->kind = MOSAIC__KIND_KERNEL;
    if ((flags & MOSAIC__KIDENT_FUNCTION) && d->cuKernelGetFunction &&
        d->cuKernelGetFunction(&f, kern) == CUDA_SUCCESS)
        out->func = f;
    /* Attributes of a CUkernel are per device: the current context's, or
     * device 0 when no context is current yet (at library load). */
    if (d->cuCtxGetDevice && d->cuCtxGetDevice(&dev) != CUDA_SUCCESS)
        dev = 0;
    if (d->cuKernelGetAttribute) {
        d->cuKernelGetAttribute(&out->num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS,
                                kern, dev);
        d->cuKernelGetAttribute(&out->static_smem,
                                CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kern, dev);
        d->cuKernelGetAttribute(&out->max_threads,
                                CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kern,
                                dev);
        d->cuKernelGetAttribute(&out->local_bytes,
                                CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, kern, dev);
    }
    return 0;
}

int mosaic__kident_resolve(const struct mosaic__drv *d, const void *handle,
                           int kind_hint, int flags, struct mosaic__kident *out)
{
    int ok;

    memset(out, 0, sizeof(*out));
    out->num_regs = out->static_smem = out->max_threads = out->local_bytes = -1;
    out->kind = kind_hint;
    if (!d || !handle)
        return MOSAIC_EINVAL;
    if (!d->cuFuncGetName && !d->cuKernelGetName) {
        if (kind_hint == MOSAIC__KIND_FUNCTION)
            out->func = (CUfunction)(void *)handle;
        return MOSAIC_ENOSYM;
    }
    if (kind_hint == MOSAIC__KIND_KERNEL)
        ok = as_kernel(d, (CUkernel)(void *)handle, flags, out) == 0 ||
             as_function(d, (CUfunction)(void *)handle, out) == 0;
    else
        ok = as_function(d, (CUfunction)(void *)handle, out) == 0 ||
             as_kernel(d, (CUkernel)(void *)handle, flags, out) == 0;
    if (ok)
        return 0;
    out->name = NULL;
    out->func = kind_hint == MOSAIC__KIND_FUNCTION ? (CUfunction)(void *)handle
                                                   : NULL;
    return MOSAIC_EINVAL;
}
