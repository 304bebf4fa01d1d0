/*
 * The NVTX injection core (core/nvtx_inject.c). This program includes the
 * real nvtx3 headers, so its own NVTX calls go through NVTX's loader: with
 * NVTX_INJECTION64_PATH unset, the loader takes the module's strong
 * InitializeInjectionNvtx2_fnptr (the static-injection route) and the
 * ranges below reach the registered client exactly as they would in a
 * program that loaded libmosaic.so or argus-shim. The dynamic entry point
 * is driven with a hand-made export table, to check what it does with a
 * short table, a declining client and a missing table; and the
 * NVTX_INJECTION64_PATH claim with the variable unset, ours and another's.
 */
#define _GNU_SOURCE 1
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <cmocka.h>
#include <nvtx3/nvToolsExt.h>

#include "core.h"
#include "nvtx_inject.h"

/* ---- a recording client ------------------------------------------------ */

#define MAXEV 256
struct ev {
    char kind;   /* 'p' push, 'o' pop, 's' start, 'e' end */
    char name[64];
    int null_name;
    uint32_t tag;
    uint64_t id;
};
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ev evs[MAXEV];
static int nev;
static uint32_t next_tag = 100;
static int accept_all = 1;

static void rec(char kind, const char *name, uint32_t tag, uint64_t id)
{
    pthread_mutex_lock(&ev_lock);
    if (nev < MAXEV) {
        struct ev *e = &evs[nev++];
        memset(e, 0, sizeof(*e));
        e->kind = kind;
        e->null_name = name == NULL;
        if (name)
            strncpy(e->name, name, sizeof(e->name) - 1);
        e->tag = tag;
        e->id = id;
    }
    pthread_mutex_unlock(&ev_lock);
}

/* Every range gets a fresh tag, so a pop that hands back the wrong one is
 * seen. */
static uint32_t fresh_tag(void)
{
    uint32_t t;
    pthread_mutex_lock(&ev_lock);
    t = next_tag++;
    pthread_mutex_unlock(&ev_lock);
    return t;
}

static int c_accept(void *ctx)
{
    (void)ctx;
    return accept_all;
}

static uint32_t c_push(void *ctx, const char *name)
{
    uint32_t t = fresh_tag();
    (void)ctx;
    rec('p', name, t, 0);
    return t;
}

static void c_pop(void *ctx, uint32_t tag)
{
    (void)ctx;
    rec('o', NULL, tag, 0);
}

static uint32_t c_start(void *ctx, const char *name)
{
    uint32_t t = fresh_tag();
    (void)ctx;
    rec('s', name, t, 0);
    return t;
}

static void c_end(void *ctx, uint32_t tag, uint64_t id)
{
    (void)ctx;
    rec('e', NULL, tag, id);
}

static const struct mosaic__nvtx_client recorder = {
    .ctx = NULL, .accept = c_accept, .push = c_push, .pop = c_pop, .start = c_start,
    .end = c_end};

static int reset(void **state)
{
    (void)state;
    nev = 0;
    accept_all = 1;
    mosaic__nvtx_register(&recorder);
    return 0;
}

/* ---- through NVTX's own loader ----------------------------------------- */

static void test_push_pop_nesting(void **state)
{
    struct mosaic__nvtx_stats s0, s1;
    (void)state;
    mosaic__nvtx_stats(&s0);
    assert_int_equal(nvtxRangePushA("outer"), 0);
    assert_int_equal(nvtxRangePushA("mosaic:request"), 1);
    assert_int_equal(nvtxRangePop(), 1);
    assert_int_equal(nvtxRangePop(), 0);
    mosaic__nvtx_stats(&s1);
    /* One NVTX copy (this program's) initialised through the static route. */
    assert_int_equal(s1.inits, 1);
    assert_int_equal(s1.ranges - s0.ranges, 2);
    assert_int_equal(nev, 4);
    assert_int_equal(evs[0].kind, 'p');
    assert_string_equal(evs[0].name, "outer");
    assert_string_equal(evs[1].name, "mosaic:request");
    /* Pops come back innermost first, each with its own push's tag. */
    assert_int_equal(evs[2].kind, 'o');
    assert_int_equal(evs[2].tag, evs[1].tag);
    assert_int_equal(evs[3].tag, evs[0].tag);
}

static void test_unmatched_pop(void **state)
{
    struct mosaic__nvtx_stats s0, s1;
    (void)state;
    mosaic__nvtx_stats(&s0);
    assert_int_equal(nvtxRangePop(), -1);
    mosaic__nvtx_stats(&s1);
    assert_int_equal(s1.unmatched_pops - s0.unmatched_pops, 1);
    assert_int_equal(nev, 0);
}

static void test_ex_and_wide_messages(void **state)
{
    nvtxEventAttributes_t a;
    (void)state;
    memset(&a, 0, sizeof(a));
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "mosaic:request";
    nvtxRangePushEx(&a);
    a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    a.message.unicode = L"wide:ascii";
    nvtxRangePushEx(&a);
    nvtxRangePushW(L"caf\u00e9");
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = NULL;
    nvtxRangePushEx(&a);
    /* An attributes struct whose size stops before the message. */
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "mosaic:request";
    a.size = (uint16_t)offsetof(nvtxEventAttributes_t, message);
    nvtxRangePushEx(&a);
    for (int i = 0; i < 5; i++)
        nvtxRangePop();
    assert_int_equal(nev, 10);
    assert_string_equal(evs[0].name, "mosaic:request");
    assert_string_equal(evs[1].name, "wide:ascii");
    assert_true(evs[2].null_name); /* not ASCII */
    assert_true(evs[3].null_name); /* registered handle */
    assert_true(evs[4].null_name); /* too short to hold a message */
    for (int i = 0; i < 5; i++)
        assert_int_equal(evs[5 + i].tag, evs[4 - i].tag);
}

static void *ender(void *arg)
{
    nvtxRangeEnd(*(nvtxRangeId_t *)arg);
    return NULL;
}

static void test_start_end_across_threads(void **state)
{
    nvtxEventAttributes_t a;
    nvtxRangeId_t id1, id2, id3;
    pthread_t th;
    (void)state;
    id1 = nvtxRangeStartA("mosaic:request");
    memset(&a, 0, sizeof(a));
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "ex";
    id2 = nvtxRangeStartEx(&a);
    id3 = nvtxRangeStartW(L"w");
    assert_true(id1 != 0 && id2 != 0 && id3 != 0);
    assert_true(id1 != id2 && id2 != id3 && id1 != id3);
    /* Ended on another thread, out of order. */
    assert_int_equal(pthread_create(&th, NULL, ender, &id2), 0);
    pthread_join(th, NULL);
    nvtxRangeEnd(id1);
    nvtxRangeEnd(id3);
    assert_int_equal(nev, 6);
    assert_string_equal(evs[0].name, "mosaic:request");
    assert_string_equal(evs[1].name, "ex");
    assert_string_equal(evs[2].name, "w");
    assert_int_equal(evs[3].kind, 'e');
    assert_int_equal(evs[3].tag, evs[1].tag);
    assert_int_equal(evs[3].id, id2);
    assert_int_equal(evs[4].tag, evs[0].tag);
    assert_int_equal(evs[5].tag, evs[2].tag);
}

/* Two threads hold ranges open at once: each pop returns its own thread's
 * tag, not the other's. */
static pthread_barrier_t bar;
static uint32_t popped[2], pushed[2];

static void *stacker(void *arg)
{
    int me = (int)(intptr_t)arg;
    char name[16];

    snprintf(name, sizeof(name), "t%d", me);
    nvtxRangePushA(name);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    nvtxRangePop();
    return NULL;
}

static void test_per_thread_stacks(void **state)
{
    pthread_t th[2];
    (void)state;
    pthread_barrier_init(&bar, NULL, 3);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, stacker, (void *)(intptr_t)i);
    pthread_barrier_wait(&bar); /* both pushed */
    assert_int_equal(nvtxRangePop(), -1); /* this thread pushed nothing */
    pthread_barrier_wait(&bar);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    assert_int_equal(nev, 4);
    for (int i = 0; i < 4; i++) {
        if (evs[i].kind == 'p')
            pushed[evs[i].name[1] - '0'] = evs[i].tag;
    }
    /* The two pops' tags are exactly the two pushes' tags. */
    popped[0] = evs[2].tag;
    popped[1] = evs[3].tag;
    assert_true((popped[0] == pushed[0] && popped[1] == pushed[1]) ||
                (popped[0] == pushed[1] && popped[1] == pushed[0]));
    assert_int_not_equal(pushed[0], pushed[1]);
}

static void test_depth_overflow(void **state)
{
    struct mosaic__nvtx_stats s0, s1;
    int n = MOSAIC__NVTX_MAX_DEPTH + 6, pops = 0;
    (void)state;
    mosaic__nvtx_stats(&s0);
    for (int i = 0; i < n; i++)
        assert_int_equal(nvtxRangePushA("deep"), i);
    for (int i = n - 1; i >= 0; i--)
        assert_int_equal(nvtxRangePop(), i);
    mosaic__nvtx_stats(&s1);
    assert_int_equal(s1.overflow - s0.overflow, 6);
    for (int i = 0; i < nev; i++)
        pops += evs[i].kind == 'o';
    assert_int_equal(pops, MOSAIC__NVTX_MAX_DEPTH);
    assert_int_equal(nev, 2 * MOSAIC__NVTX_MAX_DEPTH);
}

/* A range pushed while no client is registered (an NVTX copy that
 * initialised before the client's constructor ran) pops with tag 0. */
static void test_client_registered_late(void **state)
{
    (void)state;
    mosaic__nvtx_register(NULL);
    nvtxRangePushA("early");
    mosaic__nvtx_register(&recorder);
    nvtxRangePushA("late");
    nvtxRangePop();
    nvtxRangePop();
    assert_int_equal(nev, 3);
    assert_string_equal(evs[0].name, "late");
    assert_int_equal(evs[1].tag, evs[0].tag);
    assert_int_equal(evs[2].kind, 'o');
    assert_int_equal(evs[2].tag, 0);
}

/* ---- the dynamic entry point with a hand-made export table ------------- */

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

static NvtxFunctionPointer slots[NVTX_CBID_CORE_SIZE];
static NvtxFunctionPointer *table[NVTX_CBID_CORE_SIZE + 1];
static unsigned table_size;
static int table_ok;

static int NVTX_API fake_module_table(NvtxCallbackModule m, NvtxFunctionTable *out,
                                      unsigned int *size)
{
    if (m != NVTX_CB_MODULE_CORE || !table_ok)
        return 0;
    *out = table;
    *size = table_size;
    return 1;
}

static const NvtxExportTableCallbacks fake_cb = {sizeof(NvtxExportTableCallbacks),
                                                 fake_module_table};

static const void *NVTX_API fake_get(uint32_t id)
{
    return id == NVTX_ETID_CALLBACKS ? &fake_cb : NULL;
}

static void fake_reset(unsigned size)
{
    memset(slots, 0, sizeof(slots));
    for (unsigned i = 0; i < NVTX_CBID_CORE_SIZE; i++)
        table[i] = &slots[i];
    table[NVTX_CBID_CORE_SIZE] = NULL;
    table_size = size;
    table_ok = 1;
}

static void test_dynamic_entry(void **state)
{
    struct mosaic__nvtx_stats s0, s1;
    int (*push_a)(const char *);
    (void)state;

    mosaic__nvtx_stats(&s0);
    fake_reset(NVTX_CBID_CORE_SIZE);
    assert_int_equal(InitializeInjectionNvtx2(fake_get), 1);
    assert_non_null(slots[NVTX_CBID_CORE_RangePushA]);
    assert_non_null(slots[NVTX_CBID_CORE_RangeEnd]);
    assert_non_null(slots[NVTX_CBID_CORE_RangePop]);
    /* Marks and naming are left to NVTX's no-ops. */
    assert_null(slots[NVTX_CBID_CORE_MarkA]);
    assert_null(slots[NVTX_CBID_CORE_NameOsThreadA]);
    /* What was assigned is the same callback the static route uses. */
    push_a = (int (*)(const char *))slots[NVTX_CBID_CORE_RangePushA];
    assert_int_equal(push_a("via-table"), 0);
    assert_int_equal(nvtxRangePop(), 0);
    assert_string_equal(evs[0].name, "via-table");
    assert_int_equal(evs[1].tag, evs[0].tag);

    /* A table too short for the range ids: only what fits is assigned. */
    fake_reset(NVTX_CBID_CORE_RangeStartA + 1);
    assert_int_equal(InitializeInjectionNvtx2(fake_get), 1);
    assert_non_null(slots[NVTX_CBID_CORE_RangeStartA]);
    assert_null(slots[NVTX_CBID_CORE_RangePushA]);

    /* A client that declines: nothing assigned, and 0 tells NVTX to make
     * that copy's calls no-ops. */
    fake_reset(NVTX_CBID_CORE_SIZE);
    accept_all = 0;
    assert_int_equal(InitializeInjectionNvtx2(fake_get), 0);
    for (unsigned i = 0; i < NVTX_CBID_CORE_SIZE; i++)
        assert_null(slots[i]);

    /* No callback table, or no export table at all. */
    accept_all = 1;
    table_ok = 0;
    assert_int_equal(InitializeInjectionNvtx2(fake_get), 0);
    assert_int_equal(InitializeInjectionNvtx2(NULL), 0);

    mosaic__nvtx_stats(&s1);
    assert_int_equal(s1.inits - s0.inits, 5);
    assert_int_equal(s1.declined - s0.declined, 1);
    assert_int_equal(s1.failed - s0.failed, 2);
}

/* ---- NVTX_INJECTION64_PATH --------------------------------------------- */

static void test_claim_env(void **state)
{
    char other[64], exe[PATH_MAX];
    const char *self = mosaic__nvtx_self_path();
    (void)state;

    /* The module is linked into this program: its path is ours. */
    assert_non_null(self);
    assert_non_null(realpath("/proc/self/exe", exe));
    assert_string_equal(self, exe);

    unsetenv("NVTX_INJECTION64_PATH");
    assert_int_equal(mosaic__nvtx_claim_env(other, sizeof(other)), MOSAIC__NVTX_ENV_SET);
    assert_string_equal(getenv("NVTX_INJECTION64_PATH"), self);
    assert_int_equal(mosaic__nvtx_other_injection(), 0);
    /* Claimed again (a child inheriting it): ours, not another tool. */
    assert_int_equal(mosaic__nvtx_claim_env(other, sizeof(other)), MOSAIC__NVTX_ENV_OURS);
    assert_int_equal(mosaic__nvtx_other_injection(), 0);

    /* Empty counts as unset. */
    setenv("NVTX_INJECTION64_PATH", "", 1);
    assert_int_equal(mosaic__nvtx_claim_env(NULL, 0), MOSAIC__NVTX_ENV_SET);

    /* Another tool's: left exactly as it was, and reported. */
    setenv("NVTX_INJECTION64_PATH",
           "/opt/nvidia/nsight-systems/target-linux-x64/libToolsInjection64.so", 1);
    assert_int_equal(mosaic__nvtx_claim_env(other, sizeof(other)), MOSAIC__NVTX_ENV_OTHER);
    assert_string_equal(getenv("NVTX_INJECTION64_PATH"),
                        "/opt/nvidia/nsight-systems/target-linux-x64/libToolsInjection64.so");
    /* Truncated to the buffer, still terminated. */
    assert_int_equal(strlen(other), sizeof(other) - 1);
    assert_memory_equal(other, "/opt/nvidia/nsight", 18);
    assert_int_equal(mosaic__nvtx_other_injection(), 1);
    unsetenv("NVTX_INJECTION64_PATH");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_push_pop_nesting, reset),
        cmocka_unit_test_setup(test_unmatched_pop, reset),
        cmocka_unit_test_setup(test_ex_and_wide_messages, reset),
        cmocka_unit_test_setup(test_start_end_across_threads, reset),
        cmocka_unit_test_setup(test_per_thread_stacks, reset),
        cmocka_unit_test_setup(test_depth_overflow, reset),
        cmocka_unit_test_setup(test_client_registered_late, reset),
        cmocka_unit_test_setup(test_dynamic_entry, reset),
        cmocka_unit_test_setup(test_claim_env, reset),
    };

    /* This program's NVTX must take the static route, not a tool the
     * environment names. */
    unsetenv("NVTX_INJECTION64_PATH");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
