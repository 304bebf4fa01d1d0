/* The statistics JSON: valid under hostile kernel names, names of several
 * handles merged, counters where the schema says, the file written at exit
 * with %p expanded. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "internal.h"
#include "mosaic/shim.h"

static struct mosaic__kernel *fake_kernel(uintptr_t handle, const char *name)
{
    struct mosaic__kernel *k = mosaic__kernel_alloc();

    k->handle = (const void *)handle;
    k->name = strdup(name);
    assert_ptr_equal(mosaic__pmap_put_new(&mosaic__kmap, k->handle, k), k);
    return k;
}

static cJSON *snapshot(void)
{
    static char buf[1 << 16];
    int n = mosaic_shim_stats_json(buf, sizeof(buf));
    cJSON *j;

    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(buf));
    j = cJSON_Parse(buf);
    assert_non_null(j);
    return j;
}

static long long num(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    assert_non_null(v);
    assert_true(cJSON_IsNumber(v));
    return (long long)v->valuedouble;
}

static void empty_stats_follow_schema(void **state)
{
    cJSON *j;

    (void)state;
    mosaic__stats_reset();
    j = snapshot();
    assert_string_equal(cJSON_GetObjectItem(j, "schema")->valuestring,
                        "mosaic-stats/1");
    assert_int_equal(num(j, "pid"), getpid());
    assert_int_equal(num(j, "launches_total"), 0);
    assert_int_equal(num(cJSON_GetObjectItem(j, "launches"), "cuLaunchKernel"), 0);
    assert_int_equal(
        num(cJSON_GetObjectItem(j, "launches"), "cuLaunchCooperativeKernel_ptsz"), 0);
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "launches"),
                                    "cuGraphLaunch"));
    assert_int_equal(num(j, "graph_launches"), 0);
    assert_int_equal(num(j, "errors"), 0);
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(j, "kernels")));
    cJSON_Delete(j);
}

static void counts_and_hostile_names(void **state)
{
    const char *evil = "k\"\\\n\t\x01<end>";
    struct mosaic__kernel *a = fake_kernel(0x1000, evil);
    struct mosaic__kernel *b = fake_kernel(0x2000, "gemm");
    struct mosaic__kernel *b2 = fake_kernel(0x3000, "gemm"); /* same name */
    cJSON *j, *kernels;

    (void)state;
    for (int i = 0; i < 3; i++)
        mosaic__kernel_count_config(a, 0, (unsigned[3]){1, 1, 1}, (unsigned[3]){32, 1, 1}, 0);
    for (int i = 0; i < 4; i++)
        mosaic__kernel_count_config(b, 1, (unsigned[3]){2, 1, 1}, (unsigned[3]){32, 1, 1}, 0);
    for (int i = 0; i < 5; i++)
        mosaic__kernel_count_config(b2, (unsigned)i % MOSAIC__SHARDS, (unsigned[3]){i + 1u, 1, 1}, (unsigned[3]){64, 1, 1}, 16);
    /* counts spread over shards, as several threads leave them */
    atomic_store(&b2->shard[1].captured, 1);
    atomic_store(&b2->shard[MOSAIC__SHARDS - 1].captured, 1);
    atomic_store(&mosaic__ctr[0].launches[MOSAIC__HOOK_cuLaunchKernel], 3);
    atomic_store(&mosaic__ctr[3].launches[MOSAIC__HOOK_cuLaunchKernel], 4);
    atomic_store(&mosaic__ctr[2].launches[MOSAIC__HOOK_cuLaunchKernelEx_ptsz], 5);
    atomic_store(&mosaic__ctr[5].captured_launches, 2);
    j = snapshot();
    assert_int_equal(num(j, "launches_total"), 12);
    assert_int_equal(num(cJSON_GetObjectItem(j, "launches"), "cuLaunchKernelEx_ptsz"), 5);
    kernels = cJSON_GetObjectItem(j, "kernels");
    assert_int_equal(num(kernels, evil), 3);
    assert_int_equal(num(kernels, "gemm"), 9);
    assert_int_equal(num(cJSON_GetObjectItem(j, "captured_kernels"), "gemm"), 2);
    assert_int_equal(num(j, "captured_launches"), 2);
    assert_int_equal(num(j, "distinct_kernels"), 2);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "kernel_info")), 3);
    cJSON_Delete(j);

    mosaic__stats_reset();
    j = snapshot();
    assert_int_equal(num(j, "launches_total"), 0);
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "kernels"), "gemm"));
    cJSON_Delete(j);
}

static void too_small_buffer_is_an_error(void **state)
{
    char small[16];

    (void)state;
    assert_int_equal(mosaic_shim_stats_json(small, sizeof(small)), MOSAIC_ERANGE);
    assert_int_equal(mosaic_shim_stats_json(NULL, 100), MOSAIC_EINVAL);
}

/* A process that never loaded the driver (a shell or launcher wrapping
 * the real program) writes no file: it would replace its child's. Runs
 * before any test loads the driver. */
static void no_file_without_the_driver(void **state)
{
    char path[256];

    (void)state;
    snprintf(path, sizeof(path), "/tmp/mosaic-test-nodriver-%d.json",
             (int)getpid());
    unlink(path);
    strcpy(mosaic__cfg.stats_path, path);
    mosaic__stats_dump();
    mosaic__cfg.stats_path[0] = 0;
    assert_int_equal(access(path, F_OK), -1);
}

static void dump_expands_pid(void **state)
{
    char path[256], expect[256];
    FILE *f;
    char buf[8192];
    size_t n;
    cJSON *j;

    (void)state;
    /* the fake driver, as a CUDA program would have loaded it */
    assert_non_null(dlopen("libcuda.so.1", RTLD_NOW));
    snprintf(path, sizeof(path), "/tmp/mosaic-test-stats-%%p-%%%%.json");
    snprintf(expect, sizeof(expect), "/tmp/mosaic-test-stats-%d-%%.json",
             (int)getpid());
    unlink(expect);
    strcpy(mosaic__cfg.stats_path, path);
    mosaic__stats_dump();
    f = fopen(expect, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    j = cJSON_Parse(buf);
    assert_non_null(j);
    assert_int_equal(num(j, "pid"), getpid());
    cJSON_Delete(j);
    unlink(expect);

    /* An unwritable place is reported, not fatal. */
    strcpy(mosaic__cfg.stats_path, "/nonexistent-dir/x.json");
    mosaic__stats_dump();
    mosaic__cfg.stats_path[0] = 0;
}

/* A thread that holds one of the shim's locks while another forks: the
 * fork must wait for it (the prepare handler takes every lock), so that
 * the child can take the lock itself. Without the handler the child would
 * inherit a lock held by a thread it does not have and hang (killed by the
 * alarm, which fails the test). */
struct holder {
    void (*lock)(void);
    void (*unlock)(void);
    atomic_int held;
};

static void *hold_a_while(void *p)
{
    struct holder *h = p;
    struct timespec nap = {0, 200 * 1000 * 1000};

    h->lock();
    atomic_store(&h->held, 1);
    nanosleep(&nap, NULL);
    h->unlock();
    return NULL;
}

static void lock_stats(void) { pthread_mutex_lock(&mosaic__stats_lock); }
static void unlock_stats(void) { pthread_mutex_unlock(&mosaic__stats_lock); }
static void lock_kmap(void) { pthread_mutex_lock(&mosaic__kmap.lock); }
static void unlock_kmap(void) { pthread_mutex_unlock(&mosaic__kmap.lock); }
static void lock_gmap(void) { pthread_mutex_lock(&mosaic__gmap.lock); }
static void unlock_gmap(void) { pthread_mutex_unlock(&mosaic__gmap.lock); }
static void lock_retired(void) { mosaic__graph_fork_lock(); }
static void unlock_retired(void) { mosaic__graph_fork_unlock(0); }

static void fork_waits_for_every_lock(void **state)
{
    struct holder hs[] = {
        {lock_stats, unlock_stats, 0},     {lock_kmap, unlock_kmap, 0},
        {lock_gmap, unlock_gmap, 0},       {lock_retired, unlock_retired, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++) {
        pthread_t t;
        pid_t pid;
        int status;

        assert_int_equal(pthread_create(&t, NULL, hold_a_while, &hs[i]), 0);
        while (!atomic_load(&hs[i].held))
            sched_yield();
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            alarm(5);
            hs[i].lock();
            hs[i].unlock();
            _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        pthread_join(t, NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_stats_follow_schema),
        cmocka_unit_test(counts_and_hostile_names),
        cmocka_unit_test(too_small_buffer_is_an_error),
        cmocka_unit_test(fork_waits_for_every_lock),
        cmocka_unit_test(no_file_without_the_driver),
        cmocka_unit_test(dump_expands_pid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
