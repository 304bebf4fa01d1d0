/*
 * Binding to the real driver, and the pointer identities that let the shim
 * recognise driver entry points however a program found them.
 *
 * The shim never loads libcuda.so.1 itself: it binds, with RTLD_NOLOAD,
 * once the program has loaded it, so a process that never touches CUDA
 * never loads the driver because of us. Binding takes no lock of ours: two
 * threads may both build a binding and the first to publish it wins, so a
 * thread inside the dynamic loader (holding its lock) that calls dlsym,
 * and so us, can never wait on a thread that waits on the loader.
 *
 * Hooked entry points are recognised by pointer identity: a pointer that
 * the real cuGetProcAddress or dlsym returned is hooked exactly when it
 * equals what dlsym(libcuda, "<exact ABI name>") gives for a hooked name.
 * That identifies the ABI variant (plain or _ptsz, v1 or _v2) whatever
 * symbol name, cudaVersion and flags produced it, without mirroring the
 * driver's version rules. Tested on driver 580.159.04 / CUDA 13.0 (H200):
 * see docs/results/ for the launch-count check that shows it holds.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mosaic/shim.h"

_Atomic(const struct mosaic__binding *) mosaic__bound;

typedef void *(*dlsym_fn)(void *, const char *);
static _Atomic(dlsym_fn) real_dlsym;

/*
 * The C library's dlsym, found with dlvsym (which the shim does not
 * interpose, so this cannot recurse). glibc 2.34 moved dlsym into libc
 * under a new version; older ones have it under the architecture's base
 * version.
 */
MOSAIC__NO_SANITIZE static dlsym_fn find_real_dlsym(void)
{
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5",
                                           "GLIBC_2.17", "GLIBC_2.0"};
    dlsym_fn fn = atomic_load_explicit(&real_dlsym, memory_order_acquire);

    for (size_t i = 0; !fn && i < sizeof(versions) / sizeof(versions[0]); i++)
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    if (fn)
        atomic_store_explicit(&real_dlsym, fn, memory_order_release);
    return fn;
}

void *mosaic__real_dlsym_ptr(void);
MOSAIC__NO_SANITIZE void *mosaic__real_dlsym_ptr(void)
{
    return (void *)find_real_dlsym();
}

MOSAIC__NO_SANITIZE void *mosaic__real_dlsym(void *handle, const char *name)
{
    dlsym_fn fn = find_real_dlsym();

    return fn ? fn(handle, name) : NULL;
}

const struct mosaic__binding *mosaic__driver_bind(void)
{
    static __thread int binding_now;
    const struct mosaic__binding *b =
        atomic_load_explicit(&mosaic__bound, memory_order_acquire);
    const struct mosaic__binding *expected = NULL;
    struct mosaic__binding *nb;
    void *h;
    int found = 0;

    if (b || binding_now)
        return b;
    binding_now = 1;
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    nb = h ? calloc(1, sizeof(*nb)) : NULL;
    if (!nb) {
        if (h)
            dlclose(h);
        binding_now = 0;
        return NULL;
    }
    nb->libcuda = h;
    for (int i = 0; i < MOSAIC__HOOK_COUNT; i++) {
        nb->real[i] = mosaic__real_dlsym(h, mosaic__hook_names[i]);
        found += nb->real[i] != NULL;
    }
    mosaic__drv_load(&nb->drv, h, mosaic__real_dlsym);
    if (atomic_compare_exchange_strong(&mosaic__bound, &expected, nb)) {
        b = nb;
        MOSAIC__LOG(MOSAIC__LOG_INFO,
                    "bound to libcuda.so.1: %d of %d hooked entry points "
                    "exported by this driver",
                    found, MOSAIC__HOOK_COUNT);
    } else {
        b = expected;
        free(nb);
        dlclose(h);
    }
    binding_now = 0;
    return b;
}

void *mosaic__wrapper_for(const struct mosaic__binding *b, const void *real)
{
    if (!b || !real)
        return NULL;
    for (int i = 0; i < MOSAIC__HOOK_COUNT; i++)
        if (b->real[i] == real)
            return mosaic__hook_wrappers[i];
    return NULL;
}

int mosaic__symbol_is_hooked(const char *symbol)
{
    size_t len = strlen(symbol);

    for (int i = 0; i < MOSAIC__HOOK_COUNT; i++) {
        const char *h = mosaic__hook_names[i];
        if (strncmp(h, symbol, len) == 0 && (h[len] == '\0' || h[len] == '_'))
            return 1;
    }
    return 0;
}

MOSAIC__EXPORT void *mosaic_shim_driver_entry(const char *abi_name)
{
    const struct mosaic__binding *b = mosaic__binding();

    for (int i = 0; b && abi_name && i < MOSAIC__HOOK_COUNT; i++)
        if (strcmp(mosaic__hook_names[i], abi_name) == 0)
            return b->real[i];
    return NULL;
}
