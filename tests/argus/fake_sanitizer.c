/*
 * The fake Sanitizer API (fake_sanitizer.h): the entry points of
 * profiler/argus/sanitizer/san_abi.h with the CUDA 13.0 signatures, over
 * host memory ("device" pointers are host pointers), single-threaded.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_sanitizer.h"
#include "san_abi.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

#define ARGUS_X_FN(name, args) FAKE_EXPORT argus_san_result name args;
ARGUS_SAN_FUNCS(ARGUS_X_FN)
#undef ARGUS_X_FN

static struct {
    unsigned faults;
    int subscribed;
    argus_san_callback cb;
    void *cb_ud;
    int domains[16];
    int patched_modules, patched_kinds;
    struct {
        char name[512];
        uint64_t pc, size;
    } fns[64];
    size_t nfns;
    struct {
        uintptr_t module;
        unsigned char desc[24];
    } mods[16];
    size_t nmods;
    const void *launch_ud;
    size_t live;
} fk;

/* FAKE_SAN_HANG: blocks for ever in the entry point named (until killed). */
/* noinline: the dry run of argus16_pcmap.sh looks for this name in gdb's stack,
 * also in a Release build (inlined there, the CI check at 16:39 failed). */
__attribute__((noinline)) static void maybe_hang(const char *fn)
{
    const char *h = getenv("FAKE_SAN_HANG");
    if (h != NULL && strcmp(h, fn) == 0)
        for (;;)
            pause();
}

void fake_san_sync(void)
{
    if (!fk.subscribed || !fk.domains[ARGUS_SAN_DOMAIN_SYNCHRONIZE])
        return;
    argus_san_sync_data d = {(CUcontext)0x1, NULL, NULL};
    fk.cb(fk.cb_ud, ARGUS_SAN_DOMAIN_SYNCHRONIZE, ARGUS_SAN_CBID_CONTEXT_SYNCHRONIZED, &d);
}

void fake_san_faults(unsigned faults)
{
    fk.faults = faults;
}

void fake_san_function(const char *name, uint64_t pc, uint64_t size)
{
    if (fk.nfns < 64) {
        strncpy(fk.fns[fk.nfns].name, name, sizeof fk.fns[0].name - 1);
        fk.fns[fk.nfns].pc = pc;
        fk.fns[fk.nfns].size = size;
        fk.nfns++;
    }
}

void *fake_san_desc(uintptr_t module)
{
    for (size_t i = 0; i < fk.nmods; i++)
        if (fk.mods[i].module == module)
            return fk.mods[i].desc;
    if (fk.nmods == 16)
        return NULL;
    fk.mods[fk.nmods].module = module;
    memset(fk.mods[fk.nmods].desc, 0, 24);
    return fk.mods[fk.nmods++].desc;
}

int fake_san_module_load(uintptr_t module, const void *cubin, size_t len)
{
    maybe_hang("module_load");
    fake_san_desc(module);
    if (!fk.subscribed || !fk.domains[ARGUS_SAN_DOMAIN_RESOURCE])
        return -1;
    argus_san_module_data d = {(CUcontext)0x1, (CUmodule)module, len, (const char *)cubin, NULL};
    fk.cb(fk.cb_ud, ARGUS_SAN_DOMAIN_RESOURCE, ARGUS_SAN_CBID_MODULE_LOADED, &d);
    return CUDA_SUCCESS;
}

void fake_san_module_unload(uintptr_t module)
{
    if (!fk.subscribed || !fk.domains[ARGUS_SAN_DOMAIN_RESOURCE])
        return;
    argus_san_module_data d = {(CUcontext)0x1, (CUmodule)module, 0, NULL, NULL};
    fk.cb(fk.cb_ud, ARGUS_SAN_DOMAIN_RESOURCE, ARGUS_SAN_CBID_MODULE_UNLOAD_STARTING, &d);
}

int fake_san_patched_modules(void)
{
    return fk.patched_modules;
}

int fake_san_patched_kinds(void)
{
    return fk.patched_kinds;
}

void fake_san_launch(uintptr_t module, const char *name, const uint32_t grid[3],
                     const uint32_t block[3], fake_san_kernel k, void *arg)
{
    argus_san_launch_data d;
    memset(&d, 0, sizeof d);
    d.context = (CUcontext)0x1;
    d.stream = (CUstream)0x2;
    d.hstream = (argus_san_stream)0x3;
    d.module = (CUmodule)module;
    d.function = (CUfunction)0x4;
    d.function_name = name;
    memcpy(d.grid, grid, sizeof d.grid);
    memcpy(d.block, block, sizeof d.block);
    d.hlaunch = (argus_san_launch)0x5;
    fk.launch_ud = NULL;
    int on = fk.subscribed && fk.domains[ARGUS_SAN_DOMAIN_LAUNCH];
    if (on)
        fk.cb(fk.cb_ud, ARGUS_SAN_DOMAIN_LAUNCH, ARGUS_SAN_CBID_LAUNCH_BEGIN, &d);
    k((void *)fk.launch_ud, fake_san_desc(module), arg);
    if (on)
        fk.cb(fk.cb_ud, ARGUS_SAN_DOMAIN_LAUNCH, ARGUS_SAN_CBID_LAUNCH_END, &d);
}

size_t fake_san_live_bytes(void)
{
    return fk.live;
}

/* ---- the API ------------------------------------------------------------- */

FAKE_EXPORT argus_san_result sanitizerSubscribe(argus_san_subscriber *s, argus_san_callback cb,
                                                void *ud)
{
    maybe_hang("sanitizerSubscribe");
    if (fk.faults & FAKE_SAN_BUSY)
        return ARGUS_SAN_ERROR_MAX_LIMIT_REACHED;
    if (fk.subscribed)
        return ARGUS_SAN_ERROR_MAX_LIMIT_REACHED;
    fk.subscribed = 1;
    fk.cb = cb;
    fk.cb_ud = ud;
    *s = (argus_san_subscriber)&fk;
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerUnsubscribe(argus_san_subscriber s)
{
    maybe_hang("sanitizerUnsubscribe");
    (void)s;
    fk.subscribed = 0;
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerEnableDomain(uint32_t on, argus_san_subscriber s, int domain)
{
    maybe_hang("sanitizerEnableDomain");
    (void)s;
    if (domain < 0 || domain >= 16)
        return ARGUS_SAN_ERROR_INVALID_PARAMETER;
    fk.domains[domain] = on != 0;
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerAddPatchesFromFile(const char *path, CUcontext ctx)
{
    maybe_hang("sanitizerAddPatchesFromFile");
    (void)ctx;
    if (fk.faults & FAKE_SAN_WRONG_ARCH)
        return ARGUS_SAN_ERROR_NOT_COMPATIBLE;
    if ((fk.faults & FAKE_SAN_REENTER) && fk.subscribed && fk.domains[ARGUS_SAN_DOMAIN_RESOURCE]) {
        /* The patches' own module, loaded on the caller's thread. */
        argus_san_module_data d = {ctx, (CUmodule)0x9999, 0, NULL, NULL};
        fk.cb(fk.cb_ud, ARGUS_SAN_DOMAIN_RESOURCE, ARGUS_SAN_CBID_MODULE_LOADED, &d);
    }
    return path != NULL ? ARGUS_SAN_SUCCESS : ARGUS_SAN_ERROR_INVALID_PARAMETER;
}

FAKE_EXPORT argus_san_result sanitizerPatchInstructions(int id, CUmodule m, const char *cb)
{
    maybe_hang("sanitizerPatchInstructions");
    (void)m;
    if (cb == NULL || strncmp(cb, "argus_pcmap_", 12) != 0 || id <= 0)
        return ARGUS_SAN_ERROR_INVALID_PARAMETER;
    fk.patched_kinds++;
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerPatchModule(CUmodule m)
{
    maybe_hang("sanitizerPatchModule");
    (void)m;
    fk.patched_modules++;
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerSetLaunchCallbackData(argus_san_launch l, CUfunction f,
                                                            argus_san_stream s, const void *ud)
{
    maybe_hang("sanitizerSetLaunchCallbackData");
    (void)l, (void)f, (void)s;
    fk.launch_ud = ud;
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerGetFunctionPcAndSize(CUmodule m, const char *name,
                                                           uint64_t *pc, uint64_t *size)
{
    maybe_hang("sanitizerGetFunctionPcAndSize");
    (void)m;
    for (size_t i = 0; i < fk.nfns; i++)
        if (strcmp(fk.fns[i].name, name) == 0) {
            *pc = fk.fns[i].pc;
            *size = fk.fns[i].size;
            return ARGUS_SAN_SUCCESS;
        }
    return ARGUS_SAN_ERROR_INVALID_PARAMETER;
}

/* Each allocation carries its size in front, so that free can count. */
FAKE_EXPORT argus_san_result sanitizerAlloc(CUcontext ctx, void **p, size_t n)
{
    maybe_hang("sanitizerAlloc");
    (void)ctx;
    size_t *b = calloc(1, n + 16);
    if (b == NULL)
        return 7; /* SANITIZER_ERROR_OUT_OF_MEMORY */
    b[0] = n;
    fk.live += n;
    *p = (char *)b + 16;
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerFree(CUcontext ctx, void *p)
{
    maybe_hang("sanitizerFree");
    (void)ctx;
    if (p == NULL)
        return ARGUS_SAN_ERROR_INVALID_PARAMETER;
    size_t *b = (size_t *)((char *)p - 16);
    fk.live -= b[0];
    free(b);
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerMemset(void *p, int v, size_t n, argus_san_stream s)
{
    maybe_hang("sanitizerMemset");
    (void)s;
    memset(p, v, n);
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerMemcpyHostToDeviceAsync(void *dst, void *src, size_t n,
                                                              argus_san_stream s)
{
    maybe_hang("sanitizerMemcpyHostToDeviceAsync");
    (void)s;
    memcpy(dst, src, n);
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerMemcpyDeviceToHost(void *dst, void *src, size_t n,
                                                         argus_san_stream s)
{
    maybe_hang("sanitizerMemcpyDeviceToHost");
    (void)s;
    if (fk.faults & FAKE_SAN_REENTER)
        fake_san_sync(); /* a synchronous copy that reports itself as a synchronisation */
    memcpy(dst, src, n);
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerStreamSynchronize(argus_san_stream s)
{
    maybe_hang("sanitizerStreamSynchronize");
    (void)s;
    return ARGUS_SAN_SUCCESS;
}

FAKE_EXPORT argus_san_result sanitizerGetResultString(argus_san_result r, const char **s)
{
    maybe_hang("sanitizerGetResultString");
    *s = r == 0 ? "SANITIZER_SUCCESS" : "fake Sanitizer error";
    return ARGUS_SAN_SUCCESS;
}

/* The driver call (ARGUS_PCMAP_CUDA_LIB points at this library). */
FAKE_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m,
                                          const char *name)
{
    maybe_hang("cuModuleGetGlobal");
    if (strcmp(name, "argus_desc_v1") != 0)
        return CUDA_ERROR_NOT_FOUND;
    void *d = fake_san_desc((uintptr_t)m);
    if (d == NULL)
        return CUDA_ERROR_NOT_FOUND;
    *dptr = (uint64_t)(uintptr_t)d;
    *bytes = 24;
    return CUDA_SUCCESS;
}
