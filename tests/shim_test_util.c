#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shim_test_util.h"

void shim_env_open(struct shim_env *e)
{
    memset(e, 0, sizeof(*e));
    e->cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(e->cuda);
    e->getproc = (getproc_v2_fn)dlsym(e->cuda, "cuGetProcAddress_v2");
    e->tally = (fake_tally_fn)dlsym(e->cuda, "fake_tally");
    e->reset = (fake_reset_fn)dlsym(e->cuda, "fake_reset");
    e->function_create =
        (fake_function_create_fn)dlsym(e->cuda, "fake_function_create");
    e->kernel_create = (fake_kernel_create_fn)dlsym(e->cuda, "fake_kernel_create");
    e->stats_json = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT,
                                                   "mosaic_shim_stats_json");
    assert_non_null(e->getproc);
    assert_non_null(e->tally);
    assert_non_null(e->reset);
    assert_non_null(e->function_create);
    assert_non_null(e->kernel_create);
    assert_non_null(e->stats_json); /* libmosaic.so is preloaded */
}

void *shim_proc(struct shim_env *e, const char *name, int version,
                cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;

    assert_int_equal(e->getproc(name, &p, version, flags, &st), CUDA_SUCCESS);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
    assert_non_null(p);
    return p;
}

cJSON *shim_stats(struct shim_env *e)
{
    size_t len = 1 << 20;
    char *buf = malloc(len);
    cJSON *j;
    int n;

    assert_non_null(buf);
    n = e->stats_json(buf, len);
    assert_true(n > 0);
    j = cJSON_Parse(buf);
    free(buf);
    assert_non_null(j);
    return j;
}

long long jnum(const cJSON *obj, const char *path)
{
    char key[512];
    const char *dot;

    while ((dot = strchr(path, '.')) != NULL && obj) {
        size_t n = (size_t)(dot - path);
        memcpy(key, path, n);
        key[n] = 0;
        obj = cJSON_GetObjectItemCaseSensitive(obj, key);
        path = dot + 1;
    }
    obj = obj ? cJSON_GetObjectItemCaseSensitive(obj, path) : NULL;
    return obj && cJSON_IsNumber(obj) ? (long long)obj->valuedouble : -1;
}

int addr_in(const void *p, const char *s)
{
    Dl_info info;

    return p && dladdr(p, &info) && info.dli_fname &&
           strstr(info.dli_fname, s) != NULL;
}
