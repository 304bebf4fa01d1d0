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

/* Shards are handed out round-robin; a thread keeps its shard for life. */
__thread unsigned mosaic__tls_shard __attribute__((tls_model("initial-exec")));
static atomic_uint next_shard;

unsigned mosaic__shard_assign(void)
{
    unsigned s = atomic_fetch_add_explicit(&next_shard, 1,
                                           memory_order_relaxed) &
                 (MOSAIC__SHARDS - 1);

    mosaic__tls_shard = s + 1;
    return s;
}

struct mosaic__kernel *mosaic__kernel_alloc(void)
{
    size_t size = (sizeof(struct mosaic__kernel) + MOSAIC__CACHE_LINE - 1) /
                  MOSAIC__CACHE_LINE * MOSAIC__CACHE_LINE;
    struct mosaic__kernel *k = aligned_alloc(MOSAIC__CACHE_LINE, size);

    if (k)
        memset(k, 0, size);
    return k;
}

uint64_t mosaic__kernel_config_launches(struct mosaic__kernel *k, int i)
{
    uint64_t n = 0;

    for (int s = 0; s < MOSAIC__SHARDS; s++)
        n += atomic_load_explicit(&k->shard[s].config_launches[i],
                                  memory_order_relaxed);
    return n;
}

uint64_t mosaic__kernel_other_launches(struct mosaic__kernel *k)
{
    uint64_t n = 0;

    for (int s = 0; s < MOSAIC__SHARDS; s++)
        n += atomic_load_explicit(&k->shard[s].other_config_launches,
                                  memory_order_relaxed);
    return n;
}

uint64_t mosaic__kernel_captured(struct mosaic__kernel *k)
{
    uint64_t n = 0;

    for (int s = 0; s < MOSAIC__SHARDS; s++)
        n += atomic_load_explicit(&k->shard[s].captured, memory_order_relaxed);
    return n;
}

/* The identity comes from the resolver shared with the capture library
 * (core/cudrv.h); the shim keeps its own copy of the name and records an
 * attribute the driver would not give as 0. */
static void resolve(struct mosaic__kernel *k, const void *handle, int hint)
{
    const struct mosaic__binding *b = mosaic__binding();
    struct mosaic__kident id;

    if (b && mosaic__kident_resolve(&b->drv, handle, hint, 0, &id) == 0 &&
        (k->name = strdup(id.name)) != NULL) {
        k->kind = id.kind;
        k->num_regs = id.num_regs >= 0 ? id.num_regs : 0;
        k->static_smem = id.static_smem >= 0 ? id.static_smem : 0;
        k->max_threads = id.max_threads >= 0 ? id.max_threads : 0;
        k->local_bytes = id.local_bytes >= 0 ? id.local_bytes : 0;
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
    struct mosaic__kernel *k = mosaic__kernel_alloc();
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
    struct mosaic__kshard *sh = &k->shard[mosaic__shard()];

    for (int i = 0; i < MOSAIC__KERNEL_CONFIGS; i++) {
        struct mosaic__config_count *c = &k->configs[i];
        int st = atomic_load_explicit(&c->state, memory_order_acquire);
        int expected = 0;

        if (st == 2 && c->dyn_smem == dyn_smem &&
            memcmp(c->grid, grid, sizeof(c->grid)) == 0 &&
            memcmp(c->block, block, sizeof(c->block)) == 0) {
            atomic_fetch_add_explicit(&sh->config_launches[i], 1,
                                      memory_order_relaxed);
            return;
        }
        if (st == 0 && atomic_compare_exchange_strong(&c->state, &expected, 1)) {
            memcpy(c->grid, grid, sizeof(c->grid));
            memcpy(c->block, block, sizeof(c->block));
            c->dyn_smem = dyn_smem;
            atomic_fetch_add_explicit(&sh->config_launches[i], 1,
                                      memory_order_relaxed);
            atomic_store_explicit(&c->state, 2, memory_order_release);
            return;
        }
    }
    atomic_fetch_add_explicit(&sh->other_config_launches, 1,
                              memory_order_relaxed);
}

uint64_t mosaic__kernel_launches(struct mosaic__kernel *k)
{
    uint64_t n = mosaic__kernel_other_launches(k);

    for (int i = 0; i < MOSAIC__KERNEL_CONFIGS; i++)
        if (atomic_load_explicit(&k->configs[i].state, memory_order_acquire) == 2)
            n += mosaic__kernel_config_launches(k, i);
    return n;
}
