/*
 * Occupancy exactness on the H200: for every kernel of the committed
 * profiles (profiler/data/h200/zoo and resnet50_b8, measured with
 * cuOccupancyMaxActiveBlocksPerMultiprocessor), blocks per SM computed from
 * (registers, threads per block, static + dynamic shared memory, carveout)
 * and the H200's limits alone must equal what the driver reported. Two
 * computations are checked: one written here from the hardware numbers, and
 * profiler/profile/profile.c's mosaic_occupancy_limits, which the predictor
 * uses, fed the same constants (not the device attributes captured with
 * the profile).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "mosaic/profile.h"

/* The H200 (sm_90) as the CUDA occupancy calculator describes it. */
#define H200_REGS_PER_SM 65536
#define H200_REGS_PER_BLOCK 65536
#define H200_MAX_REGS_PER_THREAD 255
#define H200_MAX_THREADS_PER_SM 2048
#define H200_MAX_WARPS_PER_SM 64
#define H200_MAX_BLOCKS_PER_SM 32
#define H200_SMEM_PER_SM (228 * 1024)
#define H200_SMEM_PER_BLOCK_OPTIN (227 * 1024)
#define H200_SMEM_RESERVED_PER_BLOCK 1024
#define H200_SMEM_ALLOC_UNIT 128
#define H200_REG_ALLOC_UNIT 256 /* registers, per warp */
#define H200_SUB_PARTITIONS 4
#define WARP 32

/* Shared-memory sizes per SM that sm_90 can be configured to, in KiB. */
static const int sm90_smem_configs_kib[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};

static int64_t round_up(int64_t v, int64_t g)
{
    return (v + g - 1) / g * g;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The smallest supported configuration of at least bytes (the largest if
 * none is that big). */
static int64_t smem_config_at_least(int64_t bytes)
{
    for (size_t i = 0; i < sizeof(sm90_smem_configs_kib) / sizeof(int); i++)
        if (bytes <= (int64_t)sm90_smem_configs_kib[i] * 1024)
            return (int64_t)sm90_smem_configs_kib[i] * 1024;
    return H200_SMEM_PER_SM;
}

static int64_t blocks_by_warps(int64_t warps_per_block)
{
    return min64(H200_MAX_WARPS_PER_SM / warps_per_block,
                 H200_MAX_THREADS_PER_SM / (warps_per_block * WARP));
}

/* Registers are allocated per warp in units of 256, from the register file
 * of the warp's sub-partition (a quarter of the SM's). A block is refused
 * outright when its registers, counted as if its warps were rounded up to a
 * multiple of the four sub-partitions, exceed the per-block limit. */
static int64_t blocks_by_registers(int64_t regs_per_thread, int64_t warps_per_block)
{
    int64_t per_warp, warps_per_sub;

    if (regs_per_thread <= 0)
        return H200_MAX_BLOCKS_PER_SM;
    if (regs_per_thread > H200_MAX_REGS_PER_THREAD)
        return 0;
    per_warp = round_up(regs_per_thread * WARP, H200_REG_ALLOC_UNIT);
    if (per_warp * round_up(warps_per_block, H200_SUB_PARTITIONS) > H200_REGS_PER_BLOCK)
        return 0;
    warps_per_sub = (H200_REGS_PER_SM / H200_SUB_PARTITIONS) / per_warp;
    return warps_per_sub * H200_SUB_PARTITIONS / warps_per_block;
}

/* Shared memory per block is rounded up to 128 bytes and the driver adds a
 * 1 KiB reserve. Without a carveout preference, maximum occupancy is
 * computed for the largest configuration; a preference picks the smallest
 * configuration that covers it, raised to one that holds a block. */
static int64_t blocks_by_smem(int64_t smem, int64_t carveout)
{
    int64_t per_block = round_up(smem, H200_SMEM_ALLOC_UNIT) + H200_SMEM_RESERVED_PER_BLOCK;
    int64_t config = H200_SMEM_PER_SM;

    if (smem > H200_SMEM_PER_BLOCK_OPTIN)
        return 0;
    if (carveout >= 0 && carveout <= 100) {
        config = smem_config_at_least(carveout * H200_SMEM_PER_SM / 100);
        if (config < per_block)
            config = smem_config_at_least(per_block);
    }
    return config / per_block;
}

static int64_t threads_per_block(const struct mosaic_kernel *k)
{
    return k->block[0] * k->block[1] * k->block[2];
}

static int64_t h200_blocks_per_sm(const struct mosaic_kernel *k)
{
    int64_t warps = (threads_per_block(k) + WARP - 1) / WARP;
    int64_t b = H200_MAX_BLOCKS_PER_SM;

    b = min64(b, blocks_by_warps(warps));
    b = min64(b, blocks_by_registers(k->regs, warps));
    b = min64(b, blocks_by_smem(k->static_smem + k->dyn_smem, k->carveout));
    return b;
}

/* mosaic_occupancy_limits with the H200's constants. */
static int64_t profile_c_blocks_per_sm(const struct mosaic_kernel *k)
{
    const struct mosaic_occ_device d = {
        .cc_major = 9,
        .cc_minor = 0,
        .warp_size = WARP,
        .max_threads_per_sm = H200_MAX_THREADS_PER_SM,
        .max_blocks_per_sm = H200_MAX_BLOCKS_PER_SM,
        .regs_per_sm = H200_REGS_PER_SM,
        .regs_per_block = H200_REGS_PER_BLOCK,
        .smem_per_sm = H200_SMEM_PER_SM,
        .smem_per_block_optin = H200_SMEM_PER_BLOCK_OPTIN,
        .reserved_smem_per_block = H200_SMEM_RESERVED_PER_BLOCK,
    };
    const struct mosaic_occ_kernel kk = {
        .threads_per_block = (int)threads_per_block(k),
        .regs_per_thread = (int)k->regs,
        .static_smem = (int)k->static_smem,
        .dyn_smem = (int)k->dyn_smem,
        .carveout = (int)k->carveout,
    };
    struct mosaic_occupancy o;

    mosaic_occupancy_limits(&d, &kk, &o);
    return min64(min64(o.limit_threads, o.limit_regs), min64(o.limit_smem, o.limit_blocks));
}

struct tally {
    int kernels, ours, profile_c;
};

static void check_profile(const char *file, struct tally *t)
{
    char path[1024], err[512];
    struct mosaic_profile p;

    snprintf(path, sizeof(path), "%s/%s", H200_DATA, file);
    if (mosaic_profile_read_file(path, &p, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_string_equal(p.gpu.cc, "9.0");
    for (size_t i = 0; i < p.n_kernels; i++) {
        const struct mosaic_kernel *k = &p.kernels[i];
        int64_t want = k->occ.blocks_per_sm, a, b;

        if (want == MOSAIC_NULL || k->regs == MOSAIC_NULL || k->static_smem == MOSAIC_NULL ||
            k->dyn_smem == MOSAIC_NULL)
            fail_msg("%s: kernels[%zu]: occupancy inputs missing", file, i);
        a = h200_blocks_per_sm(k);
        b = profile_c_blocks_per_sm(k);
        t->kernels++;
        t->ours += a == want;
        t->profile_c += b == want;
        if (a != want || b != want)
            print_message("MISMATCH %s %s: regs %lld, %lld threads, smem %lld+%lld, "
                          "carveout %lld: driver %lld, here %lld, profile.c %lld\n",
                          file, k->key, (long long)k->regs, (long long)threads_per_block(k),
                          (long long)k->static_smem, (long long)k->dyn_smem,
                          (long long)k->carveout, (long long)want, (long long)a,
                          (long long)b);
    }
    mosaic_profile_free(&p);
}

static void test_h200_profiles(void **state)
{
    struct tally t = {0, 0, 0};
    (void)state;
    check_profile("zoo.profile.json", &t);
    check_profile("resnet50_b8.profile.json", &t);
    print_message("occupancy: %d kernels; computed here %d/%d, mosaic_occupancy_limits "
                  "%d/%d equal the driver's blocks_per_sm\n",
                  t.kernels, t.ours, t.kernels, t.profile_c, t.kernels);
    assert_true(t.kernels >= 242);
    assert_int_equal(t.ours, t.kernels);
    assert_int_equal(t.profile_c, t.kernels);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h200_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
