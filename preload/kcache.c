/*
 * Kernel identity: name, registers, static shared memory, thread limit, for
 * CUfunction and CUkernel handles alike, read from the driver once per
 * handle and cached so that a launch costs one lock-free lookup.
 *
 * A launch handle may be a CUfunction or a CUkernel cast to CUfunction (the
 * CUDA runtime launches CUkernels from cuLibraryGetKernel that way). The
 * shim learns CUkernels from the library entry points it hooks and asks
 * for the other kind when the expected one fails, so either works.
 * cuFuncGetName/cuKernelGetName need driver 12.3 or newer; on older ones
 * the kernel is named "?0x<handle>" and counted as an error.
 */
#define _GNU_SOURCE 1
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct mosaic__pmap mosaic__kmap = MOSAIC__PMAP_INITIALIZER;

static struct mosaic__kernel fallback_kernel = {.name = "?"};

static int resolve_function(const struct mosaic__binding *b,
                            struct mosaic__kernel *k, CUfunction f)
{
    const char *name = NULL;

    if (!b->cuFuncGetName || b->cuFuncGetName(&name, f) != CUDA_SUCCESS ||
        !name)
        return -1;
    k->name = strdup(name);
    k->kind = MOSAIC__KIND_FUNCTION;
    if (b->cuFuncGetAttribute) {
        b->cuFuncGetAttribute(&k->num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
        b->cuFuncGetAttribute(&k->static_smem,
                              CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
        b->cuFuncGetAttribute(&k->max_threads,
                              CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
        b->cuFuncGetAttribute(&k->local_bytes,
                              CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
    }
    return k->name ? 0 : -1;
}

static int resolve_kernel(const struct mosaic__binding *b,
                          struct mosaic__kernel *k, CUkernel kern)
{
    const char *name = NULL;
    CUdevice dev = 0;

    if (!b->cuKernelGetName || b->cuKernelGetName(&name, kern) != CUDA_SUCCESS ||
        !name)
        return -1;
    k->name = strdup(name);
    k->kind = MOSAIC__KIND_KERNEL;
    /* Attributes of a CUkernel are per device: the current context's, or
     * device 0 when no context is current yet (at library load). */
    if (b->cuCtxGetDevice && b->cuCtxGetDevice(&dev) != CUDA_SUCCESS)
        dev = 0;
    if (b->cuKernelGetAttribute) {
        b->cuKernelGetAttribute(&k->num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kern,
                                dev);
        b->cuKernelGetAttribute(&k->static_smem,
                                CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kern, dev);
        b->cuKernelGetAttribute(&k->max_threads,
                                CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kern,
                                dev);
        b->cuKernelGetAttribute(&k->local_bytes,
                                CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, kern, dev);
    }
    return k->name ? 0 : -1;
}

static void resolve(struct mosaic__kernel *k, const void *handle, int hint)
{
    const struct mosaic__binding *b = mosaic__binding();
    int ok = -1;

    if (b && hint == MOSAIC__KIND_KERNEL)
        ok = resolve_kernel(b, k, (CUkernel)handle) == 0 ||
                     resolve_function(b, k, (CUfunction)handle) == 0
                 ? 0
                 : -1;
    else if (b)
        ok = resolve_function(b, k, (CUfunction)handle) == 0 ||
                     resolve_kernel(b, k, (CUkernel)handle) == 0
                 ? 0
                 : -1;
    if (ok == 0) {
        MOSAIC__LOG(MOSAIC__LOG_DEBUG, "kernel %p: %s (%s, %d regs, %d B smem)",
                    handle, k->name,
                    k->kind == MOSAIC__KIND_KERNEL ? "CUkernel" : "CUfunction",
                    k->num_regs, k->static_smem);
        return;
    }
    MOSAIC__INC(errors);
    MOSAIC__LOG(MOSAIC__LOG_WARN,
                "cannot read the name of kernel handle %p (driver older than "
                "12.3, or not a kernel)",
                handle);
    if (asprintf(&k->name, "?%p", handle) < 0)
        k->name = NULL;
}

static struct mosaic__kernel *kernel_insert(const void *handle, int hint)
{
    struct mosaic__kernel *k = calloc(1, sizeof(*k));
    struct mosaic__kernel *now;

    if (!k)
        goto fail;
    k->handle = handle;
    resolve(k, handle, hint);
    if (!k->name) {
        free(k);
        goto fail;
    }
    now = mosaic__pmap_put_new(&mosaic__kmap, handle, k);
    if (now != k) {
        /* Another thread inserted it first, or the map is out of memory. */
        free(k->name);
        free(k);
        if (!now)
            goto fail;
    }
    return now;
fail:
    MOSAIC__INC(errors);
    return &fallback_kernel;
}

struct mosaic__kernel *mosaic__kernel_get(const void *handle, int kind_hint)
{
    struct mosaic__kernel *k = mosaic__pmap_get(&mosaic__kmap, handle);

    if (__builtin_expect(k != NULL, 1))
        return k;
    if (!handle)
        return &fallback_kernel;
    return kernel_insert(handle, kind_hint);
}

struct foreach_arg {
    void (*fn)(struct mosaic__kernel *k, void *arg);
    void *arg;
};

static void foreach_one(const void *key, void *val, void *arg)
{
    struct foreach_arg *fa = arg;

    (void)key;
    fa->fn(val, fa->arg);
}

void mosaic__kernel_foreach(void (*fn)(struct mosaic__kernel *k, void *arg),
                            void *arg)
{
    struct foreach_arg fa = {fn, arg};

    mosaic__pmap_foreach(&mosaic__kmap, foreach_one, &fa);
}

/* A configuration not in the ready slots yet: claim a free slot, or sum it
 * with the others. A slot another thread is filling is skipped, so in a
 * race one new configuration may take two slots, which only splits its
 * count over two entries of the same key. */
void mosaic__kernel_add_config(struct mosaic__kernel *k, const unsigned *grid,
                               const unsigned *block, unsigned dyn_smem)
{
    for (int i = 0; i < MOSAIC__KERNEL_CONFIGS; i++) {
        struct mosaic__config_count *c = &k->configs[i];
        int st = atomic_load_explicit(&c->state, memory_order_acquire);
        int expected = 0;

        if (st == 2 && c->dyn_smem == dyn_smem &&
            memcmp(c->grid, grid, sizeof(c->grid)) == 0 &&
            memcmp(c->block, block, sizeof(c->block)) == 0) {
            atomic_fetch_add_explicit(&c->launches, 1, memory_order_relaxed);
            return;
        }
        if (st == 0 && atomic_compare_exchange_strong(&c->state, &expected, 1)) {
            memcpy(c->grid, grid, sizeof(c->grid));
            memcpy(c->block, block, sizeof(c->block));
            c->dyn_smem = dyn_smem;
            atomic_store_explicit(&c->launches, 1, memory_order_relaxed);
            atomic_store_explicit(&c->state, 2, memory_order_release);
            return;
        }
    }
    atomic_fetch_add_explicit(&k->other_config_launches, 1, memory_order_relaxed);
}

uint64_t mosaic__kernel_launches(struct mosaic__kernel *k)
{
    uint64_t n = atomic_load_explicit(&k->other_config_launches,
                                      memory_order_relaxed);

    for (int i = 0; i < MOSAIC__KERNEL_CONFIGS; i++)
        if (atomic_load_explicit(&k->configs[i].state, memory_order_acquire) == 2)
            n += atomic_load_explicit(&k->configs[i].launches,
                                      memory_order_relaxed);
    return n;
}
