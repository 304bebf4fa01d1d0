/* The driver's side of the fake CUPTI for argus-sass (fake_cupti_sass.c). */
#ifndef ARGUS_FAKE_CUPTI_SASS_H
#define ARGUS_FAKE_CUPTI_SASS_H
#include <stddef.h>
#pragma GCC visibility push(default)
/* Loads CUDA_INJECTION64_PATH and calls its InitializeInjection, as cuInit
 * does. 0 when unset, -1 when it cannot be loaded. */
int fake_sass_driver_init(void);
void fake_sass_ctx_create(int device);
void fake_sass_ctx_destroy(int device);
/* MODULE_LOADED with the cubin's image; -1 when it is not a cubin. */
int fake_sass_module_load(int device, const void *cubin, size_t len);
/* A cuLaunchKernel of kernel (enter, the model's records, exit); -1 when
 * no loaded module has that function. */
int fake_sass_launch(int device, const char *kernel, const unsigned grid[3],
                     const unsigned block[3]);
#pragma GCC visibility pop
#endif
