/*
 * Hardware metrics (profiler/argus/metrics.c): the join, % of peak and the
 * bottleneck rule on tests/argus/metrics/known.profile.json, a hand-written
 * profile whose every answer follows from its numbers (worked out below,
 * not read back from the code), and on the H200 zoo profile
 * (profiler/data/h200/zoo.profile.json, measured by `mosaic-profile
 * capture`), whose kernels were written to be what their names say.
 */
#define _GNU_SOURCE 1
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "argus/metrics.h"
#include "argus/shim.h"
#include "core.h"

#define KNOWN ARGUS_SRC_DIR "/metrics/known.profile.json"
#define ZOO ARGUS_SRC_DIR "/../../profiler/data/h200/zoo.profile.json"

static void load(argus_metrics *m, const char *path)
{
    char msg[1024] = "";
    int rc = argus_metrics_load(m, path, msg, sizeof(msg));
    if (rc != 0)
        fail_msg("%s: %s", path, msg);
    assert_int_equal(m->state, ARGUS_METRICS_LOADED);
}

static argus_kcfg cfg(const char *name, int64_t gx, int64_t bx, int64_t dsmem)
{
    argus_kcfg k = {.name = name, .have_grid = gx > 0, .have_block = bx > 0, .have_dsmem = dsmem >= 0};
    k.grid[0] = gx;
    k.grid[1] = k.grid[2] = 1;
    k.block[0] = bx;
    k.block[1] = k.block[2] = 1;
    k.dsmem = dsmem;
    return k;
}

static const struct mosaic_kernel *entry(const argus_metrics *m, const char *key)
{
    for (size_t i = 0; i < m->prof.n_kernels; i++)
        if (strcmp(m->prof.kernels[i].key, key) == 0)
            return &m->prof.kernels[i];
    fail_msg("no entry %s", key);
    return NULL;
}

static void test_peaks(void **state)
{
    (void)state;
    struct mosaic_gpu g = {.name = "NVIDIA H200", .sm_count = 132, .cc = "9.0"};
    char why[256] = "";
    const argus_gpu_spec *s = argus_gpu_find(&g, why, sizeof(why));
    assert_non_null(s);
    /* The datasheet's FP32 figure is the SM's lanes at the highest clock:
     * 132 x 128 x 2 x 1.98e9 = 66.9e12, within 0.2% of 67e12. */
    double lanes = s->value[ARGUS_PEAK_SM_COUNT] * s->value[ARGUS_PEAK_FP32_LANES] * 2 *
                   s->value[ARGUS_PEAK_SM_CLOCK_MAX] * 1e9;
    assert_true(fabs(lanes / s->value[ARGUS_PEAK_FP32] - 1) < 0.002);
    assert_true(s->value[ARGUS_PEAK_HBM_BW] == 4.8e12);
    assert_true(isnan(s->value[ARGUS_PEAK_L2_BW]));
    for (int i = 0; i < ARGUS_N_PEAKS; i++)
        assert_true(s->source[i] != NULL && strlen(s->source[i]) > 10);
    /* Not the H200: never a similar GPU's table. */
    struct mosaic_gpu nvl = {.name = "NVIDIA H200 NVL", .sm_count = 132, .cc = "9.0"};
    assert_null(argus_gpu_find(&nvl, why, sizeof(why)));
    assert_non_null(strstr(why, "NVIDIA H200 NVL (132 SMs, cc 9.0) is not in Argus's peak table"));
    struct mosaic_gpu fewer = {.name = "NVIDIA H200", .sm_count = 114, .cc = "9.0"};
    assert_null(argus_gpu_find(&fewer, why, sizeof(why)));
    struct mosaic_gpu unnamed = {.name = NULL, .sm_count = 132, .cc = "9.0"};
    assert_null(argus_gpu_find(&unnamed, why, sizeof(why)));
    assert_non_null(strstr(why, "does not name its GPU fully"));
}

static void test_join(void **state)
{
    (void)state;
    argus_metrics m;
    load(&m, KNOWN);
    long idx;
    size_t n;
    char by[64], why[1024];
    /* Two k_stream entries (grids 1056 and 66): the grid decides. */
    argus_kcfg k = cfg("k_stream", 66, 256, 0);
    assert_int_equal(argus_metrics_join(&m.prof, &k, &idx, &n, by, sizeof(by), why, sizeof(why)),
                     ARGUS_JOIN_OK);
    assert_string_equal(m.prof.kernels[idx].key, "k_stream|grid=66,1,1|block=256,1,1|dsmem=0");
    assert_string_equal(by, "name,grid,block,dyn_smem");
    /* By name alone: two candidates, refused. */
    k = cfg("k_stream", 0, 0, -1);
    assert_int_equal(argus_metrics_join(&m.prof, &k, &idx, &n, by, sizeof(by), why, sizeof(why)),
                     ARGUS_JOIN_AMBIGUOUS);
    assert_int_equal(idx, -1);
    assert_int_equal(n, 2);
    assert_string_equal(by, "name");
    assert_non_null(strstr(why, "refused, not guessed"));
    /* k_dsmem differs only in dynamic shared memory: without it, refused;
     * with it, exact. */
    k = cfg("k_dsmem", 128, 128, -1);
    assert_int_equal(argus_metrics_join(&m.prof, &k, &idx, &n, by, sizeof(by), why, sizeof(why)),
                     ARGUS_JOIN_AMBIGUOUS);
    assert_non_null(strstr(why, "dynamic shared memory"));
    k = cfg("k_dsmem", 128, 128, 4096);
    assert_int_equal(argus_metrics_join(&m.prof, &k, &idx, &n, by, sizeof(by), why, sizeof(why)),
                     ARGUS_JOIN_OK);
    assert_int_equal(m.prof.kernels[idx].dyn_smem, 4096);
    /* Another configuration, and another name: no entry. */
    k = cfg("k_fma", 999, 256, 0);
    assert_int_equal(argus_metrics_join(&m.prof, &k, &idx, &n, by, sizeof(by), why, sizeof(why)),
                     ARGUS_JOIN_NONE);
    assert_non_null(strstr(why, "none with this launch's configuration"));
    assert_non_null(strstr(why, "k_fma|grid=264,1,1"));
    k = cfg("k_fma", 264, 128, 0); /* same grid, another block */
    assert_int_equal(argus_metrics_join(&m.prof, &k, &idx, &n, by, sizeof(by), why, sizeof(why)),
                     ARGUS_JOIN_NONE);
    k = cfg("k_nowhere", 1, 32, 0);
    assert_int_equal(argus_metrics_join(&m.prof, &k, &idx, &n, by, sizeof(by), why, sizeof(why)),
                     ARGUS_JOIN_NONE);
    assert_non_null(strstr(why, "no kernel of that name in the profile (10 entries)"));
    /* A name is compared whole (no prefix match). */
    k = cfg("k_str", 66, 256, 0);
    assert_int_equal(argus_metrics_join(&m.prof, &k, &idx, &n, by, sizeof(by), why, sizeof(why)),
                     ARGUS_JOIN_NONE);
    argus_metrics_free(&m);
}

static void test_pct(void **state)
{
    (void)state;
    argus_metrics m;
    load(&m, KNOWN);
    assert_non_null(m.spec);
    argus_pct p[ARGUS_N_PCTS];
    /* (2.88e12 + 1.44e12) / 4.8e12 = 90%. */
    argus_metrics_pct(entry(&m, "k_stream|grid=1056,1,1|block=256,1,1|dsmem=0"), m.spec, p);
    assert_true(p[ARGUS_PCT_DRAM_BW].ok);
    assert_true(fabs(p[ARGUS_PCT_DRAM_BW].value - 90.0) < 1e-9);
    /* No sourced L2 peak: omitted, with the reason. */
    assert_false(p[ARGUS_PCT_L2_BW].ok);
    assert_non_null(strstr(p[ARGUS_PCT_L2_BW].why, "no sourced l2_bandwidth peak"));
    /* 2 x 32 x 83.75e6 FMA-pipe instructions in 100 us = 5.36e13 FLOP/s,
     * 80% of 67e12. */
    argus_metrics_pct(entry(&m, "k_fma|grid=264,1,1|block=256,1,1|dsmem=0"), m.spec, p);
    assert_true(p[ARGUS_PCT_FMA_LANES].ok);
    assert_true(fabs(p[ARGUS_PCT_FMA_LANES].value - 80.0) < 1e-9);
    assert_true(fabs(p[ARGUS_PCT_DRAM_BW].value - 0.1) < 1e-9);
    /* An input missing: said, not zero. */
    argus_metrics_pct(entry(&m, "k_chase|grid=132,1,1|block=32,1,1|dsmem=0"), m.spec, p);
    assert_false(p[ARGUS_PCT_FMA_LANES].ok);
    assert_non_null(strstr(p[ARGUS_PCT_FMA_LANES].why, "inst_fma not in the profile entry"));
    /* Unknown GPU: every % omitted. */
    argus_metrics_pct(entry(&m, "k_fma|grid=264,1,1|block=256,1,1|dsmem=0"), NULL, p);
    for (int i = 0; i < ARGUS_N_PCTS; i++) {
        assert_false(p[i].ok);
        assert_true(isnan(p[i].value));
        assert_non_null(strstr(p[i].why, "not in the peak table"));
    }
    argus_metrics_free(&m);
}

typedef struct want_bn {
    const char *key, *label, *rule, *why_part;
} want_bn;

static void test_bottleneck_known(void **state)
{
    (void)state;
    argus_metrics m;
    load(&m, KNOWN);
    /* Each answer from the profile's numbers and the rule of docs/argus.md:
     * R1 the highest of DRAM % and the pipes if >= 60; R2 fewer blocks
     * than SMs or under 5 us; R3 issue_active < 0.5; R4 otherwise. */
    static const want_bn want[] = {
        {"k_stream|grid=1056,1,1|block=256,1,1|dsmem=0", "memory-bandwidth", "R1",
         "DRAM bandwidth at 90.0% of its peak"},
        {"k_stream|grid=66,1,1|block=256,1,1|dsmem=0", "launch/occupancy-bound", "R2",
         "a grid of 66 blocks on 132 SMs leaves 66 SMs without work; no unit is near its peak "
         "(highest 37.5%)"},
        {"k_fma|grid=264,1,1|block=256,1,1|dsmem=0", "compute-pipe fma", "R1",
         "pipe_fma_pct at 85.0%"},
        {"k_chase|grid=132,1,1|block=32,1,1|dsmem=0", "latency-bound", "R3",
         "issued in 1% of cycles (below 50%) with no unit near its peak (highest 2.0%): warps "
         "wait; the larger stall is long_scoreboard"},
        {"k_short|grid=1024,1,1|block=128,1,1|dsmem=0", "launch/occupancy-bound", "R2",
         "2000 ns, shorter than 5000 ns"},
        {"k_issue|grid=1024,1,1|block=256,1,1|dsmem=0", "issue-bound", "R4",
         "issued in 80% of cycles with no unit near its peak (highest 45.0%)"},
        {"k_missing|grid=256,1,1|block=256,1,1|dsmem=0", "unknown", "R1",
         "missing pipe_xu_pct, pipe_tensor_hmma_pct, pipe_tensor_gmma_pct, pipe_fp64_pct"},
        {"k_dsmem|grid=128,1,1|block=128,1,1|dsmem=0", "memory-bandwidth", "R1",
         "at 70.0% of its peak"},
        {"k_dsmem|grid=128,1,1|block=128,1,1|dsmem=4096", "compute-pipe lsu", "R1",
         "pipe_lsu_pct at 70.0%"},
        {"k_tensor|grid=132,1,1|block=384,1,1|dsmem=200000", "compute-pipe tensor_hmma", "R1",
         "pipe_tensor_hmma_pct at 95.0%"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        argus_bottleneck b;
        argus_bottleneck_of(entry(&m, want[i].key), &m.prof.gpu, m.spec, &b);
        if (strcmp(b.label, want[i].label) != 0 || strcmp(b.rule, want[i].rule) != 0 ||
            strstr(b.why, want[i].why_part) == NULL)
            fail_msg("%s: got %s (%s): %s", want[i].key, b.label, b.rule, b.why);
        /* The inputs that decided it are all there, missing ones as NaN. */
        assert_int_equal(b.nin, 14);
        assert_string_equal(b.in[0].name, "dram_bandwidth_pct_of_peak");
        assert_string_equal(b.in[0].mark, "derived");
        assert_string_equal(b.in[1].mark, "observed");
    }
    /* Unknown GPU: the DRAM % is missing, so the roof cannot be told even
     * with a pipe at 85%. */
    argus_bottleneck b;
    argus_bottleneck_of(entry(&m, "k_fma|grid=264,1,1|block=256,1,1|dsmem=0"), &m.prof.gpu, NULL,
                        &b);
    assert_string_equal(b.label, "unknown");
    assert_non_null(strstr(b.why, "dram_bandwidth % of peak"));
    assert_non_null(strstr(b.why, "not in the peak table"));
    assert_true(isnan(b.in[0].value));
    argus_metrics_free(&m);
}

/* The H200 zoo: kernels whose character is their design (profiler/zoo:
 * k_copy and k_triad stream float4s, k_fma8 is a chain of FMAs, k_chase
 * follows a pointer chain, one warp per block), measured by the capture. */
static void test_bottleneck_zoo(void **state)
{
    (void)state;
    argus_metrics m;
    load(&m, ZOO);
    assert_non_null(m.spec);
    size_t seen[4] = {0};
    for (size_t i = 0; i < m.prof.n_kernels; i++) {
        const struct mosaic_kernel *k = &m.prof.kernels[i];
        int64_t blocks = 0;
        assert_int_equal(mosaic_launch_blocks(k->grid, &blocks), 0);
        const char *want = NULL;
        int fam = -1;
        if ((strcmp(k->name, "_Z6k_copyPK6float4PS_m") == 0 ||
             strcmp(k->name, "_Z7k_triadP6float4PKS_S2_fm") == 0) &&
            blocks >= 132) {
            want = "memory-bandwidth";
            fam = 0;
        } else if (strcmp(k->name, "_Z6k_fma8Pfffi") == 0) {
            want = "compute-pipe fma";
            fam = 1;
        } else if (strcmp(k->name, "_Z7k_chasePKjS0_Pji") == 0 && blocks >= 132) {
            want = "latency-bound";
            fam = 2;
        } else if (strcmp(k->name, "_Z7k_chasePKjS0_Pji") == 0) {
            want = "launch/occupancy-bound"; /* 66 blocks on 132 SMs */
            fam = 3;
        }
        if (want == NULL)
            continue;
        argus_bottleneck b;
        argus_bottleneck_of(k, &m.prof.gpu, m.spec, &b);
        if (strcmp(b.label, want) != 0)
            fail_msg("%s: %s, not %s: %s", k->key, b.label, want, b.why);
        seen[fam]++;
    }
    /* copy at 4 grids, triad at 3 (one of copy's grids is 66 blocks). */
    assert_int_equal(seen[0], 6);
    assert_int_equal(seen[1], 2);
    assert_int_equal(seen[2], 2);
    assert_int_equal(seen[3], 1);
    argus_metrics_free(&m);
}

static void test_device_check(void **state)
{
    (void)state;
    argus_metrics m;
    load(&m, KNOWN);
    char why[1024];
    assert_int_equal(argus_metrics_check_device(&m, "NVIDIA H200", 132, why, sizeof(why)), 0);
    assert_int_equal(argus_metrics_check_device(&m, NULL, 0, why, sizeof(why)), 0);
    assert_int_equal(argus_metrics_check_device(&m, "NVIDIA A100-SXM4-80GB", 108, why, sizeof(why)),
                     ARGUS_EFORMAT);
    assert_non_null(strstr(why, "taken on NVIDIA H200 (132 SMs) but the kernels ran on NVIDIA "
                                "A100-SXM4-80GB (108 SMs)"));
    assert_int_equal(argus_metrics_check_device(&m, NULL, 114, why, sizeof(why)), ARGUS_EFORMAT);
    argus_metrics_free(&m);
}

/* Bad profiles: each refused with the file, the field and a fix, and the
 * metrics left empty (state REFUSED), never half-read. */
static void test_bad_profiles(void **state)
{
    (void)state;
    char dir[] = "/tmp/argus_metrics_XXXXXX";
    assert_non_null(mkdtemp(dir));
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"not json", "not valid JSON"},
        {"{\"schema\": \"mosaic-profile/1\", \"gpu\": {\"name\": \"NVIDIA H200\"", "not valid JSON"},
        {"{\"schema\": \"mosaic-profile/2\"}", "'mosaic-profile/2' is not mosaic-profile/1"},
        {"{\"schema\": \"argus.report\"}", "is not mosaic-profile/1"},
        {"{\"kernels\": []}", "schema: missing: not a mosaic profile"},
        {"{\"schema\": \"mosaic-profile/1\", \"gpu\": {\"sm_count\": 0}, \"method\": \"x\", "
         "\"complete\": true, \"problems\": [], \"kernels\": []}",
         "gpu.sm_count"},
        {"{\"schema\": \"mosaic-profile/1\", \"gpu\": {}, \"method\": \"x\", \"complete\": true, "
         "\"problems\": [], \"kernels\": [{\"key\": \"k\", \"name\": \"k\", \"grid\": [1,1,1], "
         "\"block\": [2048,1,1], \"dyn_smem\": 0, \"launches\": 1, \"metrics\": {}}]}",
         "kernels[0]"},
        {"{\"schema\": \"mosaic-profile/1\", \"schema\": \"mosaic-profile/1\"}", "the key appears twice"},
        {"", "empty file"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/bad%zu.json", dir, i);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(bad[i].text, f);
        fclose(f);
        argus_metrics m;
        char msg[1024] = "";
        int rc = argus_metrics_load(&m, path, msg, sizeof(msg));
        if (rc == 0 || strstr(msg, bad[i].want) == NULL || strstr(msg, path) == NULL)
            fail_msg("bad%zu: rc %d: %s (wanted %s)", i, rc, msg, bad[i].want);
        assert_int_equal(m.state, ARGUS_METRICS_REFUSED);
        assert_int_equal(m.prof.n_kernels, 0);
        assert_non_null(strstr(m.why, "the report has no hardware metrics"));
        argus_metrics_free(&m);
        remove(path);
    }
    /* A directory is not a profile. */
    argus_metrics m;
    char msg[1024] = "";
    assert_int_equal(argus_metrics_load(&m, dir, msg, sizeof(msg)), ARGUS_EIO);
    assert_non_null(strstr(msg, "not a regular file"));
    argus_metrics_free(&m);
    remove(dir);
}

/* A whole file through the project's reader (core/readfile.c). */
static char *slurp(const char *path, size_t *len)
{
    char *buf = NULL, err[256];
    if (mosaic__read_file(path, 1 << 20, &buf, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    *len = strlen(buf);
    return buf;
}

/* Mutated profiles and recordings (bytes overwritten, cut short) through
 * the reader, the join and both writers: refused or reported, never a
 * crash (the sanitizer build runs this too). */
static void test_mutations(void **state)
{
    (void)state;
    size_t plen, rlen;
    char *prof = slurp(KNOWN, &plen), *rec = slurp(ARGUS_SRC_DIR "/metrics/run.jsonl", &rlen);
    char path[] = "/tmp/argus_metrics_mut_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    FILE *sink = fopen("/dev/null", "w");
    assert_non_null(sink);
    uint32_t x = 12345;
    size_t loaded = 0, reports = 0;
    for (int it = 0; it < 600; it++) {
        char *p = malloc(plen + 1), *r = malloc(rlen + 1);
        assert_non_null(p);
        assert_non_null(r);
        memcpy(p, prof, plen + 1);
        memcpy(r, rec, rlen + 1);
        size_t pl = plen, rl = rlen;
        for (int k = 0; k < 1 + it % 3; k++) {
            x = x * 1103515245u + 12345u;
            if (it % 2 == 0)
                p[(x >> 8) % pl] = (char)(x >> 24 | 1);
            else
                r[(x >> 8) % rl] = (char)(x >> 24 | 1);
        }
        if (it % 7 == 0)
            pl = (x >> 4) % pl;
        p[pl] = '\0';
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fwrite(p, 1, pl, f);
        fclose(f);
        argus_metrics m;
        char msg[1280];
        if (argus_metrics_load(&m, path, msg, sizeof(msg)) == 0)
            loaded++;
        else
            assert_int_equal(m.state, ARGUS_METRICS_REFUSED);
        argus_shim_input in;
        argus_shim_result res;
        int trunc = 0;
        if (argus_shim_input_parse("run.jsonl", r, rl, &in, &trunc, msg, sizeof(msg)) == 0) {
            if (argus_shim_build(&in, &res, msg, sizeof(msg)) == 0) {
                res.metrics = &m;
                assert_int_equal(argus_shim_report_json(&res, NULL, sink), 0);
                assert_int_equal(argus_shim_metrics_text(&res, NULL, sink), 0);
                reports++;
                argus_shim_result_free(&res);
            }
            argus_shim_input_free(&in);
        }
        argus_metrics_free(&m);
        free(p);
        free(r);
    }
    /* Both kinds of outcome happened. */
    assert_true(loaded > 100 && loaded < 600);
    assert_true(reports > 100);
    fclose(sink);
    remove(path);
    free(prof);
    free(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peaks),
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_pct),
        cmocka_unit_test(test_bottleneck_known),
        cmocka_unit_test(test_bottleneck_zoo),
        cmocka_unit_test(test_device_check),
        cmocka_unit_test(test_bad_profiles),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
