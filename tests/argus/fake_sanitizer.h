/*
 * A stand-in for the CUDA Sanitizer API (libsanitizer-public.so) and the one
 * driver call argus-pcmap makes (cuModuleGetGlobal_v2), over host memory,
 * for tests/argus/test_pcmap.c: the test is the "driver", firing module
 * loads and launches at the tool's subscriber, and runs the kernel as a
 * model whose marker stores and patched instructions go through the same
 * device logic (profiler/argus/sanitizer/pcmap_dev.h) as the GPU patch.
 */
#ifndef ARGUS_FAKE_SANITIZER_H
#define ARGUS_FAKE_SANITIZER_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(default)

/* Faults the fake can be told to show. */
#define FAKE_SAN_BUSY 1u       /* sanitizerSubscribe: another subscriber (MAX_LIMIT_REACHED) */
#define FAKE_SAN_WRONG_ARCH 2u /* sanitizerAddPatchesFromFile: NOT_COMPATIBLE */
#define FAKE_SAN_REENTER 4u    /* sanitizerAddPatchesFromFile and sanitizerMemcpyDeviceToHost fire
                                  a callback on the caller's thread (a module load; a context
                                  synchronisation), as a driver may */
/* FAKE_SAN_HANG=NAME in the environment: the entry point NAME (e.g.
 * sanitizerMemcpyDeviceToHost, sanitizerSubscribe) blocks for ever, as a
 * hung driver call would; the dry run of scripts/gpu/argus16_pcmap.sh shows
 * its timeout and stack dump on it. */
void fake_san_faults(unsigned faults);

/* Functions the fake "loaded" (sanitizerGetFunctionPcAndSize answers for
 * these names only). */
void fake_san_function(const char *name, uint64_t pc, uint64_t size);

/* Fires MODULE_LOADED for module id with a cubin image; 0 when the tool's
 * subscriber was called. */
int fake_san_module_load(uintptr_t module, const void *cubin, size_t len);
/* Fires CONTEXT_SYNCHRONIZED (the program's cudaDeviceSynchronize). */
void fake_san_sync(void);
/* Fires MODULE_UNLOAD_STARTING for module id. */
void fake_san_module_unload(uintptr_t module);
/* How many modules the tool patched (sanitizerPatchModule calls) and with
 * how many instruction kinds (sanitizerPatchInstructions calls). */
int fake_san_patched_modules(void);
int fake_san_patched_kinds(void);

/* The kernel as a model: called between LAUNCH_BEGIN and LAUNCH_END with
 * the userdata the tool set (NULL when it set none) and the module's
 * descriptor as the markers would read it. */
typedef void (*fake_san_kernel)(void *userdata, const void *desc, void *arg);
void fake_san_launch(uintptr_t module, const char *name, const uint32_t grid[3],
                     const uint32_t block[3], fake_san_kernel k, void *arg);
/* The descriptor of module id (24 bytes; the fake's argus_desc_v1). */
void *fake_san_desc(uintptr_t module);
/* Device bytes still allocated (sanitizerAlloc minus sanitizerFree). */
size_t fake_san_live_bytes(void);

#pragma GCC visibility pop

#endif /* ARGUS_FAKE_SANITIZER_H */
