/*
 * A program linked against the driver that calls its exported symbols
 * directly (no cuGetProcAddress): the preloaded shim's exports come first
 * in symbol lookup, so these launches are seen too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "shim_test_util.h"

CUfunction fake_function_create(const char *name, int regs, int static_smem);
void fake_tally(struct fake_tally *out);

static void direct_calls_are_counted(void **state)
{
    struct shim_env env;
    struct fake_tally t0, t1;
    CUfunction f = fake_function_create("direct_fn", 32, 0);
    CUlaunchConfig cfg = {.gridDimX = 2, .gridDimY = 1, .gridDimZ = 1,
                          .blockDimX = 64, .blockDimY = 1, .blockDimZ = 1};
    cJSON *s;

    (void)state;
    shim_env_open(&env);
    fake_tally(&t0);
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(cuLaunchKernel_ptsz(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(cuLaunchKernelEx(&cfg, f, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(cuLaunchCooperativeKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL),
                     CUDA_SUCCESS);
    fake_tally(&t1);
    s = shim_stats(&env);
    assert_int_equal(t1.direct_executed - t0.direct_executed, 4);
    assert_int_equal(jnum(s, "launches_total"), 4);
    assert_int_equal(jnum(s, "launches.cuLaunchKernel"), 1);
    assert_int_equal(jnum(s, "launches.cuLaunchKernel_ptsz"), 1);
    assert_int_equal(jnum(s, "launches.cuLaunchKernelEx"), 1);
    assert_int_equal(jnum(s, "launches.cuLaunchCooperativeKernel"), 1);
    assert_int_equal(jnum(s, "kernels.direct_fn"), 4);
    cJSON_Delete(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(direct_calls_are_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
