/*
 * mosaic-zoo time: isolated timing (zoo_timing.h) of each selected variant
 * on the full GPU or on green contexts of the SM counts --sms names, each
 * configuration checked first ("stream_check").
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo.h"
#include "zoo_cmds.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"
#include "zoo_streams.h"
#include "zoo_timing.h"

static void emit_time(const struct zoo_variant *v, const struct xcfg *c,
                      const struct zoo_inst *in, const struct timing *t,
                      int ok, double setup_s)
{
    size_t ws = working_set(v);

    j_begin("time");
    j_result(ok);
    j_variant(v);
    j_cfg(c);
    j_int("working_set_bytes", (long long)ws);
    j_int("l2_bytes", g_dev.l2_bytes);
    j_int("slots", in ? in->slots : 0);
    j_int("rotation_bytes", in ? (long long)ws * in->slots : 0);
    j_num("setup_s", setup_s);
    if (ok) {
        j_timing(t, "");
        j_int("n_replays", t->n_samples);
        j_num("gbps_at_median",
              ws > 0 && t->median > 0 ? ws / (t->median * 1e3) : NAN);
        j_nums("samples_us", t->samples, t->n_samples);
    }
    j_end();
}

static int open_cfgs_for_sms(struct xcfg *cfgs, int *n)
{
    char label[32];
    int i;

    if (g_opt.n_sms == 0) {
        clear_err();
        cfg_open_full(&cfgs[0], "full");
        *n = 1;
        return 0;
    }
    for (i = 0; i < g_opt.n_sms; i++) {
        clear_err();
        if (g_opt.sms[i] >= g_dev.sm_count) {
            cfg_open_full(&cfgs[i], "full");
        } else {
            snprintf(label, sizeof(label), "green%d", g_opt.sms[i]);
            if (g_opt.sms[i] % 8)
                fprintf(stderr, "mosaic-zoo: --sms %d is not a multiple of "
                        "8; the driver rounds it up\n", g_opt.sms[i]);
            cfg_open_green(&cfgs[i], g_opt.sms[i], label);
        }
        if (!cfgs[i].ok)
            fprintf(stderr, "mosaic-zoo: configuration for %d SMs: %s\n",
                    g_opt.sms[i], cfgs[i].err);
    }
    *n = g_opt.n_sms;
    return 0;
}

static void time_variant(const struct zoo_variant *v, struct xcfg *cfgs,
                         int n_cfg, struct timing *t)
{
    struct zoo_inst in;
    double setup_s = 0;
    int i, rc;

    clear_err();
    memset(&in, 0, sizeof(in));
    fprintf(stderr, "mosaic-zoo: time %s\n", v->name);
    rc = inst_setup(&in, v, &setup_s);
    if (rc) {
        for (i = 0; i < n_cfg; i++)
            emit_time(v, &cfgs[i], NULL, t, 0, setup_s);
        recover();
        return;
    }
    for (i = 0; i < n_cfg && !should_stop(); i++) {
        clear_err();
        if (!cfgs[i].ok) {
            seterr("configuration unavailable: %s", cfgs[i].err);
            emit_time(v, &cfgs[i], &in, t, 0, setup_s);
            continue;
        }
        rc = measure_iso(&in, cfgs[i].s[0], 1, t);
        emit_time(v, &cfgs[i], &in, t, rc == 0, setup_s);
        if (rc)
            recover();
        if (g_fatal)
            break;
    }
    inst_teardown(&in);
}

int cmd_time(void)
{
    struct xcfg cfgs[ZOO_MAX_LIST];
    unsigned char *sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1);
    struct timing *t = (struct timing *)calloc(1, sizeof(struct timing));
    int n_cfg = 0, i;

    if (!sel || !t) {
        error_record("out of host memory");
        free(sel);
        free(t);
        return -1;
    }
    select_variants(g_opt.variants, sel);
    open_cfgs_for_sms(cfgs, &n_cfg);
    for (i = 0; i < n_cfg; i++)
        cfg_check(&cfgs[i], NULL);
    for (i = 0; i < zoo_n_variants && !should_stop(); i++)
        if (sel[i])
            time_variant(&zoo_variants[i], cfgs, n_cfg, t);
    for (i = 0; i < n_cfg; i++)
        cfg_close(&cfgs[i]);
    free(sel);
    free(t);
    return 0;
}
