/*
 * The static green-context baseline's choice of split (sched/policy_static.c)
 * on the H200 data in profiler/data/h200: the HP partition for the two
 * HP services of scripts/arbiter_eval.sh, exact, and the config's bad
 * input (a size the GPU cannot make, unknown keys, no way to judge a
 * kernel) refused with messages that name the key and the fix.
 *
 * The expected slowdowns were computed by hand from the data with the rule
 * of docs/partitions.md ("The static baseline"), in a few lines of Python
 * independent of this code: per kernel, the profiled duration (zoo.profile.json
 * metrics.duration_ns) times its variant's median on n SMs over its median
 * on 132 (splits/time.jsonl; linear between the measured 16, 48, 80, 112,
 * 132), summed over the request, over the request's profiled sum.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "mosaic/mosaic.h"

/* arbiter_eval.sh's eval HP request: three 3x3 convolutions. */
static const char *const eval_hp[] = {
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192",
    NULL,
};
/* arbiter_eval.sh's held-out HP request: GEMVs (one with its split-K
 * reduce), copies. */
static const char *const heldout_hp[] = {
    "_Z17gemv2T_kernel_valIiiffffLi128ELi16ELi4ELi4ELb0ELb0E18cublasGemvParamsExIi30cublasGemv"
    "TensorStridedBatchedIKfES3_S1_IfEfEEvT11_T4_S7_|grid=2048,1,8|block=128,1,1|dsmem=0",
    "_ZN8cublasLt19splitKreduce_kernelILi32ELi16EiffffLb0EfffLb1ELb0ELb0ELb0EEEvNS_18cublasSpl"
    "itKParamsIT4_EEPKT2_PKT8_PT7_PT3_PKS2_SF_PKT9_S6_PSG_PvlPS2_PiSL_SL_SF_SF_SF_SF_SF_|grid="
    "1,512,1|block=32,16,1|dsmem=0",
    "_Z6k_copyPK6float4PS_m|grid=66,1,1|block=512,1,1|dsmem=0",
    "nvjet_sm90_tst_256x8_64x6_2x1_v_bz_TNT|grid=2,64,1|block=384,1,1|dsmem=219364",
    "_Z6k_copyPK6float4PS_m|grid=132,1,1|block=1024,1,1|dsmem=0",
    "nvjet_sm90_tst_128x8_64x12_2x1_v_bz_TNT|grid=2,64,1|block=384,1,1|dsmem=225652",
    NULL,
};
/* A PyTorch kernel of resnet50_b8.profile.json of no variant in the sweep. */
static const char *const unswept[] = {
    "_ZN2at6native54_GLOBAL__N__d8ceb000_21_DistributionNormal_cu_0c5b6e8543distribution_elem"
    "entwise_grid_stride_kernelIfLi4EZNS0_9templates4cuda20normal_and_transformIffPNS_17CUDAGe"
    "neratorImplEZZZNS4_13normal_kernelIS7_EEvRKNS_10TensorBaseEddT_ENKUlvE_clEvENKUlvE0_clEv"
    "EUlfE_EEvRNS_18TensorIteratorBaseET1_T2_EUlP24curandStatePhilox4_32_10E0_ZNS1_27distribu"
    "tion_nullary_kernelIff6float4S7_SM_SF_EEvSH_SJ_RKT3_T4_EUlifE_EEvlNS_15PhiloxCudaStateES"
    "I_SJ_|grid=1056,1,1|block=256,1,1|dsmem=0",
    NULL,
};

static char path[256];

static void write_keys(const char *const *keys, const char *extra)
{
    FILE *f;

    snprintf(path, sizeof(path), "/tmp/test_sched_static.%d.keys", (int)getpid());
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "# the HP service's kernels, one a line\n\n");
    for (int i = 0; keys && keys[i]; i++)
        fprintf(f, "  %s\n", keys[i]);
    if (extra)
        fputs(extra, f);
    fclose(f);
}

static void config(struct mosaic__sched_config *cfg, int models)
{
    mosaic__config_defaults(cfg);
    cfg->policy = MOSAIC__POLICY_STATIC;
    snprintf(cfg->profile_dir, sizeof(cfg->profile_dir), "%s", PROFILE_DATA_DIR);
    if (models)
        snprintf(cfg->model_dir, sizeof(cfg->model_dir), "%s", MODEL_DIR);
    snprintf(cfg->hp_kernels, sizeof(cfg->hp_kernels), "%s", path);
}

/* Held-out: 1.0761x on 80 SMs, the first size under 1.1 (72: 1.1305). */
static void heldout_on_80(void **state)
{
    struct mosaic__sched_config cfg;
    struct mosaic__partition p;
    char err[1024] = "";
    (void)state;
    write_keys(heldout_hp, NULL);
    config(&cfg, 0);
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), 0);
    assert_int_equal(p.hp_sms, 80);
    assert_int_equal(p.be_sms, 52);
    assert_true(p.under);
    assert_int_equal(p.hp_kernels, 6);
    assert_int_equal(p.measured, 6);
    assert_int_equal(p.predicted, 0);
    assert_true(p.hp_slowdown > 1.0756 && p.hp_slowdown < 1.0766);
    unlink(path);
}

/* Eval: convolutions need 128 SMs for 1.036x, which leaves BE fewer than
 * the minimum 8; the largest split HP can get, 120, is 1.1074x: over the
 * bound, taken and flagged. */
static void eval_misses_bound(void **state)
{
    struct mosaic__sched_config cfg;
    struct mosaic__partition p;
    char err[1024] = "";
    (void)state;
    write_keys(eval_hp, NULL);
    config(&cfg, 0);
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), 0);
    assert_int_equal(p.hp_sms, 120);
    assert_int_equal(p.be_sms, 12);
    assert_false(p.under);
    assert_int_equal(p.measured, 3);
    assert_true(p.hp_slowdown > 1.1069 && p.hp_slowdown < 1.1079);
    unlink(path);
}

/* A kernel of no swept variant: refused without model-dir (naming the file
 * and line and both fixes), sized by the predictor with it. */
static void unswept_needs_predictor(void **state)
{
    struct mosaic__sched_config cfg;
    struct mosaic__partition p;
    char err[1024] = "";
    (void)state;
    write_keys(unswept, NULL);
    config(&cfg, 0);
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, ":3:"));
    assert_non_null(strstr(err, "no split times"));
    assert_non_null(strstr(err, "set model-dir"));
    assert_non_null(strstr(err, "hp-sms"));
    config(&cfg, 1);
    err[0] = '\0';
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), 0);
    assert_int_equal(p.predicted, 1);
    assert_int_equal(p.measured, 0);
    assert_true(p.hp_sms >= 8 && p.hp_sms <= 120 && p.hp_sms % 8 == 0);
    assert_int_equal(p.hp_sms + p.be_sms, 132);
    assert_true(!p.under || p.hp_slowdown < 1.1);
    unlink(path);
}

/* hp-sms: a size the split makes is taken as it is; one it cannot make is
 * named with the nearest it can, at start. */
static void hp_sms_override(void **state)
{
    struct mosaic__sched_config cfg;
    struct mosaic__partition p;
    char err[1024] = "";
    (void)state;
    mosaic__config_defaults(&cfg);
    cfg.policy = MOSAIC__POLICY_STATIC;
    assert_int_equal(mosaic__config_set(&cfg, "hp-sms", "72", "test", 1, err, sizeof(err)), 0);
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), 0);
    assert_int_equal(p.hp_sms, 72);
    assert_int_equal(p.be_sms, 60);
    assert_true(p.from_config);
    cfg.hp_sms = 50;
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "hp-sms 50"));
    assert_non_null(strstr(err, "48 or 56"));
    cfg.hp_sms = 128; /* BE would be left 4 */
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "the nearest it can: 120"));
    cfg.hp_sms = 4;
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "the nearest it can: 8"));
}

/* Nothing to size from, a missing file, a key of no profile: refused. */
static void bad_input(void **state)
{
    struct mosaic__sched_config cfg;
    struct mosaic__partition p;
    char err[1024] = "";
    (void)state;
    mosaic__config_defaults(&cfg);
    cfg.policy = MOSAIC__POLICY_STATIC;
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "set hp-kernels"));
    write_keys(eval_hp, "_Z7unknownv|grid=1,1,1|block=32,1,1|dsmem=0\n");
    config(&cfg, 0);
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, ":6:"));
    assert_non_null(strstr(err, "_Z7unknownv"));
    assert_non_null(strstr(err, "no profile of this key"));
    write_keys(NULL, "# only a comment\n");
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "no profile key in the file"));
    unlink(path);
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "cannot be read"));
}

/* The policy is registered: `policy static` parses and admits at once. */
static void registered_admits_at_once(void **state)
{
    struct mosaic__sched_config cfg;
    struct mosaic__policy pol;
    struct mosaic__sched_view v = {.hp_clients = 1, .hp_requests_in_flight = 1, .slo = 1.1};
    struct mosaic__be_want w = {.client_id = 2, .kernel_id = 7};
    char err[512] = "";
    (void)state;
    mosaic__config_defaults(&cfg);
    assert_int_equal(mosaic__config_set(&cfg, "policy", "static", "test", 1, err, sizeof(err)),
                     0);
    assert_int_equal(cfg.policy, MOSAIC__POLICY_STATIC);
    assert_int_equal(mosaic__policy_open(&cfg, &pol, err, sizeof(err)), 0);
    assert_string_equal(pol.name, "static");
    assert_int_equal(pol.decide(pol.state, &v, &w), MOSAIC__ADMIT);
    mosaic__policy_close(&pol);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(heldout_on_80),
        cmocka_unit_test(eval_misses_bound),
        cmocka_unit_test(unswept_needs_predictor),
        cmocka_unit_test(hp_sms_override),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(registered_admits_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
