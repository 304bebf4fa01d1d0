/*
 * A library whose NVTX initialises in its constructor, before the shim's
 * constructor runs (a preloaded library's constructor runs after those of
 * the program's own libraries, glibc 2.36): for
 * tests/sched/test_sched_nvtx.c. It reports what NVTX_INJECTION64_PATH was
 * at that moment.
 */
#include <stdio.h>
#include <stdlib.h>

#include <nvtx3/nvToolsExt.h>

__attribute__((visibility("default"))) void nvtx_early_request(void (*inside)(void));
__attribute__((visibility("default"))) const char *nvtx_early_env(void);

static char env_at_ctor[512] = "(unset)";

__attribute__((constructor)) static void early(void)
{
    const char *e = getenv("NVTX_INJECTION64_PATH");

    if (e)
        snprintf(env_at_ctor, sizeof(env_at_ctor), "%s", e);
    /* The first NVTX call of this library's copy initialises it now. */
    nvtxRangePushA("early-ctor");
    nvtxRangePop();
}

const char *nvtx_early_env(void)
{
    return env_at_ctor;
}

void nvtx_early_request(void (*inside)(void))
{
    nvtxRangePushA("mosaic:request");
    inside();
    nvtxRangePop();
}
