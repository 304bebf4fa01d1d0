/*
 * The profile store and the model-driven policies (sched/pstore.c,
 * sched/policy_model.c), driven by events as the daemon would: a store
 * with a corrupt file loads the rest and names it; the mosaic policy holds
 * an unprofiled BE kernel only while HP is in flight, learns a request
 * type's isolated time before letting BE overlap it, and then admits or
 * holds a profiled BE kernel by eq. 5 at a tight and a loose SLO.
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
#include "mosaic/profile.h"
#include "mosaic/sched.h"

static const char *const hp_keys[] = {
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192",
};
static const char *const be_key = "_Z9k_conv3x3PKfS0_Pfiiii|grid=16,4,32|block=16,16,1|dsmem=14976";

static char dir[256];

static int setup(void **state)
{
    char cmd[8192];
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/test_sched_policy.%d", (int)getpid());
    if (snprintf(cmd, sizeof(cmd),
             "mkdir -p %s && cp %s/zoo.profile.json %s/ && printf '{\"schema\": 1' > "
             "%s/broken.profile.json && echo ignored > %s/notes.txt",
             dir, PROFILE_DATA_DIR, dir, dir, dir) >= (int)sizeof(cmd))
        return -1;
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[512];
    (void)state;
    if (snprintf(cmd, sizeof(cmd), "rm -rf %s", dir) >= (int)sizeof(cmd))
        return -1;
    return system(cmd) == 0 ? 0 : -1;
}

static void store_skips_corrupt_files(void **state)
{
    struct mosaic__pstore *s = NULL;
    unsigned loaded, skipped;
    char err[512];
    (void)state;

    assert_int_equal(mosaic__pstore_load(dir, &s, &loaded, &skipped, err, sizeof(err)), 0);
    assert_int_equal(loaded, 1);
    assert_int_equal(skipped, 1);
    const struct mosaic_kernel *k = mosaic__pstore_get(s, mosaic_sched_kernel_id(hp_keys[0]));
    assert_non_null(k);
    assert_string_equal(k->key, hp_keys[0]);
    assert_null(mosaic__pstore_get(s, mosaic_sched_kernel_id("k_nothing|grid=1,1,1|block=1,1,1|dsmem=0")));
    mosaic__pstore_free(s);
    assert_int_equal(mosaic__pstore_load("/nonexistent/dir", &s, &loaded, &skipped, err,
                                         sizeof(err)), MOSAIC_EIO);
    assert_non_null(strstr(err, "profile-dir /nonexistent/dir"));
}

static struct mosaic__policy open_mosaic(double slo)
{
    struct mosaic__sched_config cfg;
    struct mosaic__policy p;
    char err[1024];

    mosaic__config_defaults(&cfg);
    cfg.policy = MOSAIC__POLICY_MOSAIC;
    cfg.slo = slo;
    snprintf(cfg.profile_dir, sizeof(cfg.profile_dir), "%s", dir);
    snprintf(cfg.model_dir, sizeof(cfg.model_dir), "%s", MODEL_DIR);
    if (mosaic__policy_open(&cfg, &p, err, sizeof(err)) != 0)
        fail_msg("policy_open: %s", err);
    return p;
}

static void ev(struct mosaic__policy *p, int type, uint64_t id, uint64_t ts)
{
    struct mosaic__policy_event e = {.type = type, .client_id = 1, .id = id, .ts_ns = ts};
    p->observe(p->state, &e);
}

/* n isolated requests of 11 ms, 20 ms apart, ending 1 s before now. */
static uint64_t learn(struct mosaic__policy *p, int n)
{
    uint64_t t = mosaic__now_ns() - 2000000000ull;
    for (int r = 0; r < n; r++, t += 20000000ull) {
        ev(p, MOSAIC__PEV_HP_BEGIN, (uint64_t)r + 1, t);
        for (int k = 0; k < 3; k++)
            ev(p, MOSAIC__PEV_HP_LAUNCH, mosaic_sched_kernel_id(hp_keys[k]), t);
        ev(p, MOSAIC__PEV_HP_END, (uint64_t)r + 1, t + 11000000ull);
    }
    return t;
}

static int ask_view(struct mosaic__policy *p, uint64_t kernel, unsigned hp_clients,
                    unsigned in_flight)
{
    struct mosaic__sched_view v = {.now_ns = mosaic__now_ns(), .hp_clients = hp_clients,
                                   .hp_requests_in_flight = in_flight};
    struct mosaic__be_want w = {.client_id = 2, .kernel_id = kernel};
    return p->decide(p->state, &v, &w);
}

static int ask(struct mosaic__policy *p, uint64_t kernel, unsigned in_flight)
{
    return ask_view(p, kernel, 1, in_flight);
}

static void unknown_be_only_while_hp_idle(void **state)
{
    struct mosaic__policy p = open_mosaic(1.25);
    (void)state;
    learn(&p, 1); /* the HP client is known, and idle */
    assert_int_equal(ask(&p, 12345, 0), MOSAIC__ADMIT);
    assert_int_equal(ask(&p, 12345, 1), MOSAIC__HOLD);
    mosaic__policy_close(&p);
}

/*
 * The restart race: a fresh policy (a daemon just started) holds BE while
 * no HP client is connected within the grace period, and while a
 * connected HP client has sent no event (it may be in a request it began
 * before the restart); once the client is seen idle, BE runs.
 */
static void holds_be_until_hp_is_known(void **state)
{
    struct mosaic__policy p = open_mosaic(1.25);
    (void)state;
    assert_int_equal(ask_view(&p, 12345, 0, 0), MOSAIC__HOLD);
    assert_int_equal(ask_view(&p, 12345, 1, 0), MOSAIC__HOLD);
    learn(&p, 1);
    assert_int_equal(ask_view(&p, 12345, 1, 0), MOSAIC__ADMIT);
    /* A second HP client connects and says nothing yet. */
    assert_int_equal(ask_view(&p, 12345, 2, 0), MOSAIC__HOLD);
    char text[8192];
    size_t n = p.metrics(p.state, text, sizeof(text));
    text[n < sizeof(text) ? n : sizeof(text) - 1] = '\0';
    assert_non_null(strstr(text, "reason=\"reconnecting\"} 3"));
    mosaic__policy_close(&p);
}

static void eq5_at_tight_and_loose_slo(void **state)
{
    (void)state;
    for (int loose = 0; loose < 2; loose++) {
        struct mosaic__policy p = open_mosaic(loose ? 4.0 : 1.02);
        uint64_t be = mosaic_sched_kernel_id(be_key), now;

        learn(&p, 3);
        now = mosaic__now_ns();
        ev(&p, MOSAIC__PEV_HP_BEGIN, 100, now);
        ev(&p, MOSAIC__PEV_HP_LAUNCH, mosaic_sched_kernel_id(hp_keys[0]), now);
        /* Three isolated requests are not enough to know T_iso. */
        assert_int_equal(ask(&p, be, 1), MOSAIC__HOLD);
        ev(&p, MOSAIC__PEV_HP_END, 100, now + 11000000ull);
        mosaic__policy_close(&p);

        p = open_mosaic(loose ? 4.0 : 1.02);
        learn(&p, 8);
        now = mosaic__now_ns();
        ev(&p, MOSAIC__PEV_HP_BEGIN, 100, now);
        ev(&p, MOSAIC__PEV_HP_LAUNCH, mosaic_sched_kernel_id(hp_keys[0]), now);
        /* A 5 ms BE convolution beside an 11 ms request at its start: 2%
         * of slack cannot hold it; 4x can. */
        assert_int_equal(ask(&p, be, 1), loose ? MOSAIC__ADMIT : MOSAIC__HOLD);
        char text[8192];
        size_t n = p.metrics(p.state, text, sizeof(text));
        text[n < sizeof(text) ? n : sizeof(text) - 1] = '\0';
        assert_non_null(strstr(text, loose ? "reason=\"fits\"} 1" : "reason=\"over_slo\"} 1"));
        /* No overlapped request measured yet: the type is unproven and
         * the decision was the pessimistic bound's. */
        assert_non_null(strstr(text, "mosaic_policy_unproven_types 1"));
        assert_non_null(strstr(text, "mosaic_policy_bound_decisions_total 1"));
        mosaic__policy_close(&p);
    }
}

static void ev_be(struct mosaic__policy *p, int type, uint64_t id, uint64_t ts)
{
    struct mosaic__policy_event e = {.type = type, .client_id = 2, .id = id, .ts_ns = ts};
    p->observe(p->state, &e);
}

static void metrics_text(struct mosaic__policy *p, char *text, size_t cap)
{
    size_t n = p->metrics(p->state, text, cap);
    text[n < cap ? n : cap - 1] = '\0';
}

/*
 * Trust is earned: at p = 1.7 a 9 ms BE convolution beside an 11 ms
 * request fails the pessimistic bound (11 + 9 ms is 1.82x), so it is held
 * while the type is unproven, whatever the predictor says. After 45
 * overlapped requests that took no longer than isolated (ratio 0) the type
 * is trusted at f = 1 and eq. 5 with the predictor decides; one request
 * far slower than any factor explains sends the type back to the bound.
 */
static void trust_is_earned(void **state)
{
    struct mosaic__policy p = open_mosaic(1.7);
    uint64_t be = mosaic_sched_kernel_id(be_key), t, now;
    char text[8192];
    (void)state;

    t = learn(&p, 8) - 1000000000ull;
    now = mosaic__now_ns();
    ev(&p, MOSAIC__PEV_HP_BEGIN, 100, now);
    ev(&p, MOSAIC__PEV_HP_LAUNCH, mosaic_sched_kernel_id(hp_keys[0]), now);
    assert_int_equal(ask(&p, be, 1), MOSAIC__HOLD);
    ev(&p, MOSAIC__PEV_HP_END, 100, now + 11000000ull);
    /* 45 requests beside a BE kernel spanning each, as fast as isolated.
     * They are placed after the learning requests and before now. */
    for (int r = 0; r < 45; r++, t += 20000000ull) {
        ev_be(&p, MOSAIC__PEV_BE_GRANT, be, t);
        ev(&p, MOSAIC__PEV_HP_BEGIN, 200 + (uint64_t)r, t + 1000);
        for (int k = 0; k < 3; k++)
            ev(&p, MOSAIC__PEV_HP_LAUNCH, mosaic_sched_kernel_id(hp_keys[k]), t + 1000);
        ev_be(&p, MOSAIC__PEV_BE_DONE, be, t + 5000000ull);
        ev(&p, MOSAIC__PEV_HP_END, 200 + (uint64_t)r, t + 11000000ull);
        metrics_text(&p, text, sizeof(text));
        assert_non_null(strstr(text, r < 44 ? "mosaic_policy_unproven_types 1"
                                            : "mosaic_policy_unproven_types 0"));
    }
    assert_non_null(strstr(text, "mosaic_policy_ratio_samples_total 45"));
    assert_non_null(strstr(text, "mosaic_policy_overlap_factor 1.000"));
    now = mosaic__now_ns();
    ev(&p, MOSAIC__PEV_HP_BEGIN, 300, now);
    ev(&p, MOSAIC__PEV_HP_LAUNCH, mosaic_sched_kernel_id(hp_keys[0]), now);
    assert_int_equal(ask(&p, be, 1), MOSAIC__ADMIT);
    /* That BE kernel ran 5 ms and the request took 40 ms: more than
     * the pessimistic bound itself, beyond any factor. */
    ev_be(&p, MOSAIC__PEV_BE_GRANT, be, now + 1000);
    ev_be(&p, MOSAIC__PEV_BE_DONE, be, now + 5000000ull);
    ev(&p, MOSAIC__PEV_HP_END, 300, now + 40000000ull);
    metrics_text(&p, text, sizeof(text));
    assert_non_null(strstr(text, "mosaic_policy_unproven_types 1"));
    assert_non_null(strstr(text, "mosaic_policy_drift_total 1"));
    now = mosaic__now_ns();
    ev(&p, MOSAIC__PEV_HP_BEGIN, 301, now);
    ev(&p, MOSAIC__PEV_HP_LAUNCH, mosaic_sched_kernel_id(hp_keys[0]), now);
    assert_int_equal(ask(&p, be, 1), MOSAIC__HOLD);
    mosaic__policy_close(&p);
}

static void mosaic_needs_model_dir(void **state)
{
    struct mosaic__sched_config cfg;
    struct mosaic__policy p;
    char err[1024];
    (void)state;

    mosaic__config_defaults(&cfg);
    cfg.policy = MOSAIC__POLICY_MOSAIC;
    assert_int_equal(mosaic__policy_open(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "model-dir"));
    snprintf(cfg.model_dir, sizeof(cfg.model_dir), "%s/none", dir);
    assert_int_equal(mosaic__policy_open(&cfg, &p, err, sizeof(err)), MOSAIC_ECONFIG);
    assert_non_null(strstr(err, "model-dir"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(store_skips_corrupt_files),
        cmocka_unit_test(unknown_be_only_while_hp_idle),
        cmocka_unit_test(eq5_at_tight_and_loose_slo),
        cmocka_unit_test(trust_is_earned),
        cmocka_unit_test(holds_be_until_hp_is_known),
        cmocka_unit_test(mosaic_needs_model_dir),
    };
    mosaic__dlog_level = MOSAIC__L_ERROR;
    return cmocka_run_group_tests(tests, setup, teardown);
}
