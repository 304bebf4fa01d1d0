/*
 * SM partitions on the simulated GPU (docs/simgpu.md, "SM partitions"):
 * green contexts made through the fake driver's entry points, kernels on
 * their streams. Expected values come from the committed data files, read
 * here (splits/time.jsonl, corun.jsonl, zoo.profile.json), never from the
 * simulator; times from events, behind a host flag opened once everything
 * is queued.
 */
#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define SCALE 20.0

#define COPY_128M "_Z6k_copyPK6float4PS_m|grid=8192,1,1|block=256,1,1|dsmem=0"
#define CHASE_1M "_Z7k_chasePKjS0_Pji|grid=132,1,1|block=64,1,1|dsmem=0"
#define SPMV_64M "_Z11k_spmv_warpPKjS0_PKfS2_Pfi|grid=524288,1,1|block=128,1,1|dsmem=0"

CUresult cuEventDestroy_v2(CUevent e);
CUresult cuStreamDestroy_v2(CUstream s);
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags);
CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                unsigned int flags);

static char segment[64];

/* ---- data, as the test reads it ---------------------------------------- */

static double profile_ns(const char *key)
{
    FILE *f = fopen(SIMGPU_DATA_DIR "/zoo.profile.json", "rb");
    char *text;
    long n;
    cJSON *doc;
    const cJSON *k;
    double d = -1;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    doc = cJSON_Parse(text);
    free(text);
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(doc, "kernels"))
        if (strcmp(cJSON_GetObjectItem(k, "key")->valuestring, key) == 0)
            d = cJSON_GetObjectItem(k, "duration_ns")->valuedouble;
    cJSON_Delete(doc);
    assert_true(d > 0);
    return d;
}

/* The split sweep's median isolated time of a variant on sms SMs, in us. */
static double sweep_us(const char *variant, int sms)
{
    FILE *f = fopen(SIMGPU_DATA_DIR "/splits/time.jsonl", "r");
    char *line = NULL;
    size_t cap = 0;
    double us = -1;

    assert_non_null(f);
    while (getline(&line, &cap, f) > 0) {
        cJSON *r = cJSON_Parse(line);
        const cJSON *v = cJSON_GetObjectItem(r, "variant");
        const cJSON *rec = cJSON_GetObjectItem(r, "record");
        if (cJSON_IsString(rec) && strcmp(rec->valuestring, "time") == 0 &&
            cJSON_IsString(v) && strcmp(v->valuestring, variant) == 0 &&
            cJSON_GetObjectItem(r, "sms")->valueint == sms)
            us = cJSON_GetObjectItem(r, "median_us")->valuedouble;
        cJSON_Delete(r);
    }
    free(line);
    fclose(f);
    assert_true(us > 0);
    return us;
}

/* The range of a's measured partitioned slowdowns on sms_a SMs beside b,
 * over every repeat of both orders. */
static void partitioned_range(const char *a, const char *b, int sms_a, double *lo, double *hi)
{
    FILE *f = fopen(SIMGPU_DATA_DIR "/corun.jsonl", "r");
    char *line = NULL, pat[256];
    size_t cap = 0;

    assert_non_null(f);
    *lo = 1e9;
    *hi = 0;
    snprintf(pat, sizeof(pat), "\"a\":\"%s\",\"b\":\"%s\"", a, b);
    while (getline(&line, &cap, f) > 0) {
        cJSON *r;
        const cJSON *arr;
        if (!strstr(line, "\"partitioned\"") || !strstr(line, pat))
            continue;
        r = cJSON_Parse(line);
        if (cJSON_GetObjectItem(r, "sms_a")->valueint == sms_a) {
            double iso = cJSON_GetObjectItem(r, "iso_a_us")->valuedouble;
            arr = cJSON_GetObjectItem(r, "corun_a_samples_us");
            for (int i = 0; i < cJSON_GetArraySize(arr); i++) {
                double s = cJSON_GetArrayItem(arr, i)->valuedouble / iso;
                *lo = fmin(*lo, s);
                *hi = fmax(*hi, s);
            }
        }
        cJSON_Delete(r);
    }
    free(line);
    fclose(f);
    assert_true(*hi > 0);
}

/* ---- driver helpers ---------------------------------------------------- */

struct kern {
    CUfunction fn;
    unsigned g[3], b[3], smem;
};

static struct kern kern(const char *key)
{
    struct kern k = {.g = {1, 1, 1}, .b = {32, 1, 1}};
    char name[256];
    const char *bar = strchr(key, '|');
    size_t n = bar ? (size_t)(bar - key) : strlen(key);
    CUmodule m;

    assert_true(n < sizeof(name));
    memcpy(name, key, n);
    name[n] = '\0';
    if (bar)
        assert_int_equal(sscanf(bar, "|grid=%u,%u,%u|block=%u,%u,%u|dsmem=%u", &k.g[0],
                                &k.g[1], &k.g[2], &k.b[0], &k.b[1], &k.b[2], &k.smem),
                         7);
    assert_int_equal(cuModuleLoadData(&m, name), CUDA_SUCCESS);
    assert_int_equal(cuModuleGetFunction(&k.fn, m, name), CUDA_SUCCESS);
    return k;
}

static void go(const struct kern *k, CUstream s)
{
    assert_int_equal(cuLaunchKernel(k->fn, k->g[0], k->g[1], k->g[2], k->b[0], k->b[1],
                                    k->b[2], k->smem, s, NULL, NULL),
                     CUDA_SUCCESS);
}

/* Streams of green contexts from one split: a group of `group` SMs and,
 * when rest is not NULL, the remainder (disjoint from the group). */
static void green_split(unsigned group, CUstream *gs, CUstream *rest, CUgreenCtx *ctx)
{
    CUdevResource all, grp, rem;
    CUdevResourceDesc d;
    unsigned nb = 1;

    assert_int_equal(cuDeviceGetDevResource(0, &all, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    assert_int_equal(cuDevSmResourceSplitByCount(&grp, &nb, &all, &rem, 0, group),
                     CUDA_SUCCESS);
    assert_int_equal(nb, 1);
    assert_int_equal(grp.sm.smCount, group);
    assert_int_equal(cuDevResourceGenerateDesc(&d, &grp, 1), CUDA_SUCCESS);
    assert_int_equal(cuGreenCtxCreate(&ctx[0], d, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
    assert_int_equal(cuGreenCtxStreamCreate(gs, ctx[0], CU_STREAM_NON_BLOCKING, 0),
                     CUDA_SUCCESS);
    if (!rest)
        return;
    assert_int_equal(cuDevResourceGenerateDesc(&d, &rem, 1), CUDA_SUCCESS);
    assert_int_equal(cuGreenCtxCreate(&ctx[1], d, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
    assert_int_equal(cuGreenCtxStreamCreate(rest, ctx[1], CU_STREAM_NON_BLOCKING, 0),
                     CUDA_SUCCESS);
}

static uint32_t *flag(CUdeviceptr *d)
{
    void *p = NULL;

    assert_int_equal(cuMemHostAlloc(&p, 64, 0), CUDA_SUCCESS);
    *(uint32_t *)p = 0;
    assert_int_equal(cuMemHostGetDevicePointer_v2(d, p, 0), CUDA_SUCCESS);
    return p;
}

static void hold(CUstream s, CUdeviceptr d)
{
    assert_int_equal(cuStreamWaitValue32_v2(s, d, 1, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
}

static CUevent event(void)
{
    CUevent e;

    assert_int_equal(cuEventCreate(&e, 0), CUDA_SUCCESS);
    return e;
}

static double ms(CUevent a, CUevent b)
{
    float t = -1;

    assert_int_equal(cuEventElapsedTime(&t, a, b), CUDA_SUCCESS);
    return t;
}

/* ---- cases ------------------------------------------------------------- */

/* Alone on 16 SMs a kernel takes its profile's duration times the split
 * sweep's measured ratio (copy_128M: 173.7 us on 16 SMs, 66.8 on 132). */
static void alone_on_partition_takes_measured_ratio(void **state)
{
    struct kern k = kern(COPY_128M);
    CUstream s;
    CUgreenCtx c[2];
    CUdeviceptr d;
    uint32_t *f = flag(&d);
    CUevent e0 = event(), e1 = event();
    double want = profile_ns(COPY_128M) * SCALE / 1e6 * sweep_us("copy_128M", 16) /
                  sweep_us("copy_128M", 132);

    (void)state;
    green_split(16, &s, NULL, c);
    hold(s, d);
    assert_int_equal(cuEventRecord(e0, s), CUDA_SUCCESS);
    go(&k, s);
    assert_int_equal(cuEventRecord(e1, s), CUDA_SUCCESS);
    __atomic_store_n(f, 1, __ATOMIC_RELEASE);
    assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
    assert_float_equal(ms(e0, e1), want, want * 0.01);
    assert_true(ms(e0, e1) > 2.5 * profile_ns(COPY_128M) * SCALE / 1e6);
    cuEventDestroy_v2(e0);
    cuEventDestroy_v2(e1);
    cuStreamDestroy_v2(s);
    cuGreenCtxDestroy(c[0]);
    cuMemFreeHost(f);
}

/* Two kernels on disjoint partitions of one split slow each other only as
 * the partitioned co-runs measured: pointer_chase_1M on 32 SMs beside
 * spmv_2M_x64M on the other 100 (5.2x measured, through memory alone). */
static void disjoint_pair_takes_partitioned_corun(void **state)
{
    struct kern a = kern(CHASE_1M), b = kern(SPMV_64M);
    CUstream sa, sb;
    CUgreenCtx c[2];
    CUdeviceptr d1, d2;
    uint32_t *f1 = flag(&d1), *f2 = flag(&d2);
    CUevent a0 = event(), a1 = event(), c0 = event(), c1 = event();
    double lo, hi, alone, co;

    (void)state;
    partitioned_range("pointer_chase_1M", "spmv_2M_x64M", 32, &lo, &hi);
    green_split(32, &sa, &sb, c);
    /* Alone first. */
    hold(sa, d1);
    assert_int_equal(cuEventRecord(a0, sa), CUDA_SUCCESS);
    go(&a, sa);
    assert_int_equal(cuEventRecord(a1, sa), CUDA_SUCCESS);
    __atomic_store_n(f1, 1, __ATOMIC_RELEASE);
    assert_int_equal(cuStreamSynchronize(sa), CUDA_SUCCESS);
    alone = ms(a0, a1);
    /* Then beside two spmv kernels (longer than the chase together), all
     * released by one flag. */
    hold(sa, d2);
    hold(sb, d2);
    assert_int_equal(cuEventRecord(c0, sa), CUDA_SUCCESS);
    go(&a, sa);
    assert_int_equal(cuEventRecord(c1, sa), CUDA_SUCCESS);
    go(&b, sb);
    go(&b, sb);
    __atomic_store_n(f2, 1, __ATOMIC_RELEASE);
    assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
    co = ms(c0, c1);
    printf("pointer_chase_1M on 32 SMs: %.2f ms alone, %.2f ms beside spmv on 100 SMs "
           "(%.3fx; measured %.3f-%.3fx)\n", alone, co, co / alone, lo, hi);
    assert_true(co / alone >= lo * 0.995 && co / alone <= hi * 1.005);
    cuEventDestroy_v2(a0);
    cuEventDestroy_v2(a1);
    cuEventDestroy_v2(c0);
    cuEventDestroy_v2(c1);
    cuStreamDestroy_v2(sa);
    cuStreamDestroy_v2(sb);
    cuGreenCtxDestroy(c[0]);
    cuGreenCtxDestroy(c[1]);
    cuMemFreeHost(f1);
    cuMemFreeHost(f2);
}

/* Kernels the dataset never measured (no profile: they fill their SMs and
 * move no DRAM bytes) share nothing on disjoint partitions: each takes its
 * isolated time on its partition, 132/n times its full-GPU one. On two
 * green contexts of separate splits (the same low SMs) they overlap and
 * share as on the full GPU: twice that. */
static void unmeasured_rule_disjoint_and_overlapping(void **state)
{
    struct kern k = kern("k_part__simus100");
    double d = 100e-3 * SCALE;
    CUstream s[4];
    CUgreenCtx c[4];
    CUdeviceptr df;
    uint32_t *f = flag(&df);
    CUevent b[4], e[4];

    (void)state;
    green_split(64, &s[0], &s[1], &c[0]); /* 64 + 68, disjoint */
    green_split(64, &s[2], NULL, &c[2]);  /* the same 64 as s[0] */
    green_split(64, &s[3], NULL, &c[3]);  /* and again */
    for (int i = 0; i < 4; i++) {
        b[i] = event();
        e[i] = event();
    }
    /* Disjoint: s[0] beside s[1]. */
    for (int i = 0; i < 2; i++) {
        hold(s[i], df);
        assert_int_equal(cuEventRecord(b[i], s[i]), CUDA_SUCCESS);
        go(&k, s[i]);
        assert_int_equal(cuEventRecord(e[i], s[i]), CUDA_SUCCESS);
    }
    __atomic_store_n(f, 1, __ATOMIC_RELEASE);
    assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
    assert_float_equal(ms(b[0], e[0]), d * 132 / 64, 0.01 * d);
    assert_float_equal(ms(b[1], e[1]), d * 132 / 68, 0.01 * d);
    /* Overlapping: s[2] beside s[3], both on SMs 0-63. */
    __atomic_store_n(f, 0, __ATOMIC_RELEASE);
    for (int i = 2; i < 4; i++) {
        hold(s[i], df);
        assert_int_equal(cuEventRecord(b[i], s[i]), CUDA_SUCCESS);
        go(&k, s[i]);
        assert_int_equal(cuEventRecord(e[i], s[i]), CUDA_SUCCESS);
    }
    __atomic_store_n(f, 1, __ATOMIC_RELEASE);
    assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
    assert_float_equal(ms(b[2], e[2]), 2 * d * 132 / 64, 0.02 * d);
    assert_float_equal(ms(b[3], e[3]), 2 * d * 132 / 64, 0.02 * d);
    for (int i = 0; i < 4; i++) {
        cuEventDestroy_v2(b[i]);
        cuEventDestroy_v2(e[i]);
        cuStreamDestroy_v2(s[i]);
        cuGreenCtxDestroy(c[i]);
    }
    cuMemFreeHost(f);
}

/* The driver's validation rules: 66 SMs asked give a group of 72, more
 * than the GPU has is refused, a split's output cannot be split again, and
 * the green stream needs CU_STREAM_NON_BLOCKING. */
static void split_rules(void **state)
{
    CUdevResource all, grp, rem, again;
    CUgreenCtx g;
    CUdevResourceDesc d;
    CUstream s;
    unsigned nb = 1;

    (void)state;
    assert_int_equal(cuDeviceGetDevResource(0, &all, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    assert_int_equal(all.sm.smCount, 132);
    assert_int_equal(all.sm.minSmPartitionSize, 8);
    assert_int_equal(all.sm.smCoscheduledAlignment, 8);
    assert_int_equal(cuDevSmResourceSplitByCount(&grp, &nb, &all, &rem, 0, 66), CUDA_SUCCESS);
    assert_int_equal(grp.sm.smCount, 72);
    assert_int_equal(rem.sm.smCount, 60);
    assert_int_equal(cuDevSmResourceSplitByCount(&grp, &nb, &all, &rem, 0, 133),
                     CUDA_ERROR_INVALID_VALUE);
    nb = 1;
    assert_int_equal(cuDevSmResourceSplitByCount(&again, &nb, &rem, NULL, 0, 8),
                     CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
    assert_int_equal(cuDevResourceGenerateDesc(&d, &rem, 1), CUDA_SUCCESS);
    assert_int_equal(cuGreenCtxCreate(&g, d, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuGreenCtxCreate(&g, d, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
    assert_int_equal(cuGreenCtxStreamCreate(&s, g, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuGreenCtxGetDevResource(g, &again, CU_DEV_RESOURCE_TYPE_SM),
                     CUDA_SUCCESS);
    assert_int_equal(again.sm.smCount, 60);
    cuGreenCtxDestroy(g);
}

int main(void)
{
    char scale[32];
    int failed;

    snprintf(segment, sizeof(segment), "test-green-%d", (int)getpid());
    setenv("MOSAIC_SIMGPU", segment, 1);
    setenv("MOSAIC_SIMGPU_SEED", "12345", 1);
    snprintf(scale, sizeof(scale), "%g", SCALE);
    setenv("MOSAIC_SIMGPU_SCALE", scale, 1);
    if (cuInit(0) != CUDA_SUCCESS) {
        fprintf(stderr, "test_green_simgpu: cuInit on the simulated GPU failed\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_rules),
        cmocka_unit_test(alone_on_partition_takes_measured_ratio),
        cmocka_unit_test(disjoint_pair_takes_partitioned_corun),
        cmocka_unit_test(unmeasured_rule_disjoint_and_overlapping),
    };
    failed = cmocka_run_group_tests(tests, NULL, NULL);
    {
        char path[128];
        snprintf(path, sizeof(path), "/mosaic-simgpu.%s", segment);
        shm_unlink(path);
    }
    return failed;
}
