/*
 * dlsym() of the host program, interposed.
 *
 * The CUDA runtime finds the driver with dlopen("libcuda.so.1") and
 * dlsym(handle, "cuGetProcAddress_v2"); a lookup on a library's own handle
 * never reaches an LD_PRELOAD library, so the shim must interpose dlsym
 * itself and hand back its wrapper whenever the real answer is a hooked
 * driver entry point.
 *
 * dlsym(RTLD_NEXT, ...) resolves relative to its caller's return address,
 * so that case must reach the C library's dlsym by a tail jump that leaves
 * the caller's return address in place; that part is a few instructions of
 * assembly per architecture (x86-64 and AArch64). Elsewhere the C path is
 * used and RTLD_NEXT lookups resolve relative to this library, a known
 * limitation. Tested with glibc 2.36 (Debian 12) and the H200 image's glibc.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>

#include "internal.h"

void *mosaic__dlsym_lookup(void *handle, const char *name);
void *mosaic__real_dlsym_ptr(void);

/* The C library's dlsym, read by the assembly below. */
__attribute__((visibility("hidden"))) void *mosaic__dlsym_next;

MOSAIC__NO_SANITIZE void *mosaic__dlsym_lookup(void *handle, const char *name)
{
    void *r = mosaic__real_dlsym(handle, name);
    const struct mosaic__binding *b;
    void *w;

    if (!mosaic__dlsym_next)
        mosaic__dlsym_next = mosaic__real_dlsym_ptr();
    /* Only driver names can be hooked; skip everything else cheaply. */
    if (!r || !name || name[0] != 'c' || name[1] != 'u' || !mosaic__observing())
        return r;
    b = mosaic__binding();
    w = mosaic__wrapper_for(b, r);
    if (w) {
        MOSAIC__LOG(MOSAIC__LOG_DEBUG, "dlsym(%s) -> wrapper", name);
        return w;
    }
    /* Another interposer's function under a hooked ABI name: wrapped by
     * that exact name where its ABI is fixed (hooks.c), so its launches
     * are still seen and still go through it. */
    if (!b || !mosaic__symbol_is_hooked(name) || mosaic__is_our_wrapper(r))
        return r;
    w = mosaic__wrapper_by_name(name, 0, r);
    if (!w)
        return r;
    MOSAIC__INC(name_matched_lookups);
    MOSAIC__LOG(MOSAIC__LOG_INFO,
                "dlsym(%s) returned %p, not the driver's export: wrapped by "
                "name, calls go on to it",
                name, r);
    return w;
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "    cmpq $-1, %rdi\n" /* RTLD_NEXT is ((void *)-1) */
        "    jne mosaic__dlsym_lookup\n"
        "    movq mosaic__dlsym_next(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    je mosaic__dlsym_lookup\n"
        "    jmp *%rax\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        "dlsym:\n"
        "    cmn x0, #1\n"
        "    b.ne mosaic__dlsym_lookup\n"
        "    adrp x16, mosaic__dlsym_next\n"
        "    ldr x16, [x16, :lo12:mosaic__dlsym_next]\n"
        "    cbz x16, mosaic__dlsym_lookup\n"
        "    br x16\n"
        ".size dlsym, .-dlsym\n");
#else
MOSAIC__EXPORT void *dlsym(void *handle, const char *name)
{
    return mosaic__dlsym_lookup(handle, name);
}
#endif

__attribute__((constructor)) static void mosaic__dlsym_init(void)
{
    mosaic__dlsym_next = mosaic__real_dlsym_ptr();
}
