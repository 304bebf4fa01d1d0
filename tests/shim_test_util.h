/* Helpers shared by the shim's integration tests: reach the fake driver as
 * the CUDA runtime does and read the shim's statistics. */
#ifndef MOSAIC_TESTS_SHIM_TEST_UTIL_H
#define MOSAIC_TESTS_SHIM_TEST_UTIL_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cjson/cJSON.h>

#include "fakecuda/fake_cuda.h"

typedef CUresult (*getproc_v2_fn)(const char *, void **, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult *);
typedef CUresult (*getproc_v1_fn)(const char *, void **, int, cuuint64_t);

struct shim_env {
    void *cuda;              /* dlopen("libcuda.so.1") */
    getproc_v2_fn getproc;   /* what dlsym(cuda, "cuGetProcAddress_v2") gave */
    fake_tally_fn tally;
    fake_reset_fn reset;
    fake_function_create_fn function_create;
    fake_kernel_create_fn kernel_create;
    int (*stats_json)(char *, size_t);
};

/* Opens the driver like the runtime does; fails the test if anything is
 * missing (the shim not preloaded, the fake not found). */
void shim_env_open(struct shim_env *e);
/* The driver entry point `name` at cudaVersion/flags, through getproc. */
void *shim_proc(struct shim_env *e, const char *name, int version,
                cuuint64_t flags);
/* Parsed current statistics of the shim (caller frees with cJSON_Delete). */
cJSON *shim_stats(struct shim_env *e);
/* A number under obj by a dotted path ("launches.cuLaunchKernel"); -1 when
 * absent. */
long long jnum(const cJSON *obj, const char *path);
/* Whether address p lies in a loaded object whose file name contains s. */
int addr_in(const void *p, const char *s);

#endif
