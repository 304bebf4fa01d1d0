/* What the policy tests share (policy_test_util.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "policy_test_util.h"

const char *const ptu_hp_keys[3] = {
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192",
};

struct mosaic__policy ptu_open_mosaic(double slo, const char *profile_dir)
{
    return ptu_open_policy(MOSAIC__POLICY_MOSAIC, slo, profile_dir);
}

struct mosaic__policy ptu_open_policy(int policy, double slo, const char *profile_dir)
{
    return ptu_open_beside(policy, slo, profile_dir, 0);
}

struct mosaic__policy ptu_open_beside(int policy, double slo, const char *profile_dir,
                                      int beside_hp)
{
    struct mosaic__sched_config cfg;
    struct mosaic__policy p;
    char err[1024];

    mosaic__config_defaults(&cfg);
    cfg.beside_hp = beside_hp;
    cfg.policy = policy;
    cfg.slo = slo;
    snprintf(cfg.profile_dir, sizeof(cfg.profile_dir), "%s", profile_dir);
    snprintf(cfg.model_dir, sizeof(cfg.model_dir), "%s", MODEL_DIR);
    if (mosaic__policy_open(&cfg, &p, err, sizeof(err)) != 0)
        fail_msg("policy_open: %s", err);
    return p;
}

void ptu_ev(struct mosaic__policy *p, uint32_t client, int type, uint64_t id, uint64_t ts)
{
    struct mosaic__policy_event e = {.type = type, .client_id = client, .id = id, .ts_ns = ts};

    p->observe(p->state, &e);
}
