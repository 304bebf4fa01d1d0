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

/* The splits chosen from measured split times, one case a line. */
static const struct split_case {
    const char *what;
    const char *const *keys;
    unsigned hp_sms, be_sms;
    int under; /* the bound p = 1.1 is met */
    unsigned kernels, measured;
    double lo, hi; /* the request's slowdown on hp_sms */
} splits[] = {
    {"held-out: 1.0761x on 80 SMs, the first size under 1.1 (72: 1.1305)", heldout_hp, 80, 52,
     1, 6, 6, 1.0756, 1.0766},
    {"eval: convolutions need 128 SMs for 1.036x, which leaves BE fewer than the minimum 8; "
     "the largest split HP can get, 120, is 1.1074x: over the bound, taken and flagged",
     eval_hp, 120, 12, 0, 3, 3, 1.1069, 1.1079},
};

static void splits_from_measured_times(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
        const struct split_case *t = &splits[i];
        struct mosaic__sched_config cfg;
        struct mosaic__partition p;
        char err[1024] = "";

        write_keys(t->keys, NULL);
        config(&cfg, 0);
        if (mosaic__static_partition(&cfg, &p, err, sizeof(err)) != 0)
            fail_msg("%s: refused: %s", t->what, err);
        if (p.hp_sms != t->hp_sms || p.be_sms != t->be_sms || p.under != t->under ||
            p.hp_kernels != t->kernels || p.measured != t->measured || p.predicted != 0 ||
            !(p.hp_slowdown > t->lo && p.hp_slowdown < t->hi))
            fail_msg("%s: got HP %u / BE %u SMs, under %d, %u kernels (%u measured, %u "
                     "predicted), %.4fx", t->what, p.hp_sms, p.be_sms, p.under, p.hp_kernels,
                     p.measured, p.predicted, p.hp_slowdown);
        unlink(path);
    }
}

/* Bad input refused at start, each with a message that names the problem
 * and the fix (the strings it must hold). */
enum keys_file { NO_FILE, WRITTEN, MISSING };
static const struct refusal {
    const char *what;
    enum keys_file file;
    const char *const *keys;
    const char *extra;
    unsigned hp_sms;
    const char *says[4];
} refusals[] = {
    {"nothing to size from", NO_FILE, NULL, NULL, 0, {"set hp-kernels"}},
    {"a key of no profile", WRITTEN, eval_hp, "_Z7unknownv|grid=1,1,1|block=32,1,1|dsmem=0\n", 0,
     {":6:", "_Z7unknownv", "no profile of this key"}},
    {"a file of comments only", WRITTEN, NULL, "# only a comment\n", 0,
     {"no profile key in the file"}},
    {"a file that is not there", MISSING, NULL, NULL, 0, {"cannot be read"}},
    {"a kernel of no swept variant, without model-dir", WRITTEN, unswept, NULL, 0,
     {":3:", "no split times", "set model-dir", "hp-sms"}},
    {"hp-sms the split cannot make", NO_FILE, NULL, NULL, 50, {"hp-sms 50", "48 or 56"}},
    {"hp-sms leaving BE 4", NO_FILE, NULL, NULL, 128, {"the nearest it can: 120"}},
    {"hp-sms under the minimum", NO_FILE, NULL, NULL, 4, {"the nearest it can: 8"}},
};

static void bad_input_is_refused_with_the_fix(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        const struct refusal *t = &refusals[i];
        struct mosaic__sched_config cfg;
        struct mosaic__partition p;
        char err[1024] = "";
        int rc;

        mosaic__config_defaults(&cfg);
        cfg.policy = MOSAIC__POLICY_STATIC;
        if (t->file != NO_FILE) {
            write_keys(t->keys, t->extra);
            if (t->file == MISSING)
                unlink(path);
            config(&cfg, 0);
        }
        cfg.hp_sms = t->hp_sms;
        rc = mosaic__static_partition(&cfg, &p, err, sizeof(err));
        if (t->file == WRITTEN)
            unlink(path);
        if (rc != MOSAIC_ECONFIG)
            fail_msg("%s: returned %d, not MOSAIC_ECONFIG (%s)", t->what, rc, err);
        for (int k = 0; k < 4 && t->says[k]; k++)
            if (!strstr(err, t->says[k]))
                fail_msg("%s: \"%s\" does not say \"%s\"", t->what, err, t->says[k]);
    }
}

/* A kernel of no swept variant is sized by the predictor with model-dir. */
static void unswept_sized_by_the_predictor(void **state)
{
    struct mosaic__sched_config cfg;
    struct mosaic__partition p;
    char err[1024] = "";
    (void)state;
    write_keys(unswept, NULL);
    config(&cfg, 1);
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), 0);
    assert_int_equal(p.predicted, 1);
    assert_int_equal(p.measured, 0);
    assert_true(p.hp_sms >= 8 && p.hp_sms <= 120 && p.hp_sms % 8 == 0);
    assert_int_equal(p.hp_sms + p.be_sms, 132);
    assert_true(!p.under || p.hp_slowdown < 1.1);
    unlink(path);
}

/* A service of many kernels: the held-out request's six kernels 50 times
 * each (300 lines, as many as a ResNet-50 request has) size the same split
 * as one of each; one line past the limit is refused and says so. */
static void many_kernels(void **state)
{
    struct mosaic__sched_config cfg;
    struct mosaic__partition p;
    char err[1024] = "";
    FILE *f;
    (void)state;
    write_keys(NULL, NULL);
    f = fopen(path, "a");
    assert_non_null(f);
    for (int r = 0; r < 50; r++)
        for (int i = 0; heldout_hp[i]; i++)
            fprintf(f, "%s\n", heldout_hp[i]);
    fclose(f);
    config(&cfg, 0);
    if (mosaic__static_partition(&cfg, &p, err, sizeof(err)) != 0)
        fail_msg("300 kernels refused: %s", err);
    assert_int_equal(p.hp_kernels, 300);
    assert_int_equal(p.hp_sms, 80);
    assert_int_equal(p.be_sms, 52);
    assert_true(p.hp_slowdown > 1.0756 && p.hp_slowdown < 1.0766);
    f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 4097; i++)
        fprintf(f, "%s\n", heldout_hp[i % 6]);
    fclose(f);
    assert_int_equal(mosaic__static_partition(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, ":4097: too many keys (at most 4096"));
    unlink(path);
}

/* hp-sms: a size the split makes is taken as it is. */
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
        cmocka_unit_test(splits_from_measured_times),
        cmocka_unit_test(bad_input_is_refused_with_the_fix),
        cmocka_unit_test(unswept_sized_by_the_predictor),
        cmocka_unit_test(hp_sms_override),
        cmocka_unit_test(many_kernels),
        cmocka_unit_test(registered_admits_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
