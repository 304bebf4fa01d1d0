/*
 * A second interposer in front of the driver, for the shim's tests: what
 * HAMi-core's libvgpu.so or a profiler does. Preloaded after libmosaic.so,
 * it interposes dlsym() so that a lookup of cuGetProcAddress(_v2) on the
 * driver's handle gets its own cuGetProcAddress; that one asks the driver
 * and answers launch entry points with trampolines of its own, which count
 * their calls and go on to the driver's function. The shim, whose binding
 * reaches the driver through this dlsym, is therefore answered with
 * pointers that are not the driver's exports: it must still see every
 * launch, and the interposer must still see them too.
 *
 * interposer_calls() (found with dlsym(RTLD_DEFAULT, ...)) returns how many
 * launches went through the trampolines.
 */
#define _GNU_SOURCE 1
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
/* dlsym is called by a sanitizer runtime before it has initialised itself
 * (it resolves its interceptors through dlsym, and so through us). */
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

typedef void *(*dlsym_fn)(void *, const char *);
typedef CUresult (*getproc_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*getproc_v2_fn)(const char *, void **, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
                              unsigned, unsigned, unsigned, unsigned, CUstream,
                              void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **,
                                 void **);

static _Atomic(dlsym_fn) libc_dlsym;
static _Atomic(getproc_v1_fn) next_getproc_v1;
static _Atomic(getproc_v2_fn) next_getproc_v2;
/* The driver's answer behind each trampoline: [0] plain, [1] _ptsz. */
static _Atomic(launch_fn) next_launch[2];
static _Atomic(launch_ex_fn) next_launch_ex[2];
static atomic_ullong calls;

EXPORT unsigned long long interposer_calls(void);
unsigned long long interposer_calls(void)
{
    return atomic_load(&calls);
}

NO_SANITIZE static dlsym_fn real_dlsym(void)
{
    dlsym_fn fn = atomic_load(&libc_dlsym);

    if (!fn)
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!fn)
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    atomic_store(&libc_dlsym, fn);
    return fn;
}

#define LAUNCH_TRAMPOLINE(name, slot)                                        \
    static CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, \
                         unsigned bx, unsigned by, unsigned bz, unsigned sh,  \
                         CUstream s, void **p, void **e)                      \
    {                                                                        \
        atomic_fetch_add(&calls, 1);                                         \
        return atomic_load(&next_launch[slot])(f, gx, gy, gz, bx, by, bz, sh, \
                                               s, p, e);                     \
    }
LAUNCH_TRAMPOLINE(tramp_launch, 0)
LAUNCH_TRAMPOLINE(tramp_launch_ptsz, 1)

#define LAUNCH_EX_TRAMPOLINE(name, slot)                                     \
    static CUresult name(const CUlaunchConfig *c, CUfunction f, void **p,    \
                         void **e)                                           \
    {                                                                        \
        atomic_fetch_add(&calls, 1);                                         \
        return atomic_load(&next_launch_ex[slot])(c, f, p, e);               \
    }
LAUNCH_EX_TRAMPOLINE(tramp_launch_ex, 0)
LAUNCH_EX_TRAMPOLINE(tramp_launch_ex_ptsz, 1)

static CUresult my_getproc_v1(const char *, void **, int, cuuint64_t);
static CUresult my_getproc_v2(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

/* Replaces the driver's answer for symbol by a trampoline (or by this
 * library's own cuGetProcAddress, for the runtime's self-lookup). */
static void wrap(const char *symbol, void **pfn, cuuint64_t flags)
{
    int ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;

    if (!pfn || !*pfn || !symbol)
        return;
    if (*pfn == (void *)atomic_load(&next_getproc_v2)) {
        *pfn = (void *)my_getproc_v2;
    } else if (*pfn == (void *)atomic_load(&next_getproc_v1)) {
        *pfn = (void *)my_getproc_v1;
    } else if (strcmp(symbol, "cuLaunchKernel") == 0) {
        atomic_store(&next_launch[ptsz], (launch_fn)*pfn);
        *pfn = ptsz ? (void *)tramp_launch_ptsz : (void *)tramp_launch;
    } else if (strcmp(symbol, "cuLaunchKernelEx") == 0) {
        atomic_store(&next_launch_ex[ptsz], (launch_ex_fn)*pfn);
        *pfn = ptsz ? (void *)tramp_launch_ex_ptsz : (void *)tramp_launch_ex;
    }
}

static CUresult my_getproc_v1(const char *symbol, void **pfn, int version,
                              cuuint64_t flags)
{
    CUresult r = atomic_load(&next_getproc_v1)(symbol, pfn, version, flags);

    if (r == CUDA_SUCCESS)
        wrap(symbol, pfn, flags);
    return r;
}

static CUresult my_getproc_v2(const char *symbol, void **pfn, int version,
                              cuuint64_t flags,
                              CUdriverProcAddressQueryResult *status)
{
    CUresult r =
        atomic_load(&next_getproc_v2)(symbol, pfn, version, flags, status);

    if (r == CUDA_SUCCESS)
        wrap(symbol, pfn, flags);
    return r;
}

EXPORT void *dlsym(void *handle, const char *name);
NO_SANITIZE void *dlsym(void *handle, const char *name)
{
    dlsym_fn fn = real_dlsym();
    void *r = fn ? fn(handle, name) : NULL;

    if (!r || handle == RTLD_NEXT || handle == RTLD_DEFAULT)
        return r;
    if (strcmp(name, "cuGetProcAddress_v2") == 0) {
        atomic_store(&next_getproc_v2, (getproc_v2_fn)r);
        return (void *)my_getproc_v2;
    }
    if (strcmp(name, "cuGetProcAddress") == 0) {
        atomic_store(&next_getproc_v1, (getproc_v1_fn)r);
        return (void *)my_getproc_v1;
    }
    return r;
}
