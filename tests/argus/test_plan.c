/*
 * Queries, recipes and the planner (issue 13 items 1-3, docs/argus-plan.md):
 * plans for a set of queries checked task by task (types, dependencies, run
 * partitions and the reason of each split), the expansion of a CONTROL task
 * into one probe branch per operation and iteration, unsatisfiable recipes
 * named while the rest is kept, and bad input (unknown regions and signals
 * with the nearest names, malformed requests, recipe files with an unknown
 * effect). The shipped recipes (profiler/argus/recipes) are what most plans
 * are made from, so a change to their effects shows here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "argus/plan.h"
#include "argus/query.h"

#define RECIPES ARGUS_SRC_DIR "/../../profiler/argus/recipes"

static argus_registry *known_registry(void)
{
    /* The hierarchy of tests/argus/kernel_known.cu: outer{load, compute},
     * tail, roles producer and consumer. */
    argus_registry *r;
    uint32_t id, outer;
    assert_int_equal(argus_registry_new(&r), 0);
    assert_int_equal(argus_registry_add(r, "outer", 0, 0, &outer, NULL, 0), 0);
    assert_int_equal(argus_registry_add(r, "load", outer, 0, &id, NULL, 0), 0);
    assert_int_equal(argus_registry_add(r, "compute", outer, 0, &id, NULL, 0), 0);
    assert_int_equal(argus_registry_add(r, "tail", 0, 0, &id, NULL, 0), 0);
    assert_int_equal(argus_registry_add(r, "producer", 0, 1, &id, NULL, 0), 0);
    assert_int_equal(argus_registry_add(r, "consumer", 0, 1, &id, NULL, 0), 0);
    return r;
}

static void load_recipes(argus_recipes *rs)
{
    char msg[1024] = "";
    int rc = argus_recipes_load(RECIPES, rs, msg, sizeof msg);
    if (rc != 0)
        fprintf(stderr, "recipes: %s\n", msg);
    assert_int_equal(rc, 0);
}

/* A resolved query from command-line words. */
static void make_query(argus_query *q, const char *const *words, int n)
{
    argus_query_init(q);
    char msg[1024] = "";
    int used = 0;
    assert_int_equal(argus_query_from_args(q, n, (char **)words, &used, msg, sizeof msg), 0);
    assert_int_equal(used, n);
    argus_registry *reg = known_registry();
    int rc = argus_query_resolve(q, reg, msg, sizeof msg);
    if (rc != 0)
        fprintf(stderr, "resolve: %s\n", msg);
    assert_int_equal(rc, 0);
    argus_registry_free(reg);
}

static void build(argus_plan *p, const char *const *words, int n, const argus_plan_env *env)
{
    argus_query q;
    argus_recipes rs;
    make_query(&q, words, n);
    load_recipes(&rs);
    char msg[2048] = "";
    int rc = argus_plan_build(&q, &rs, env, p, msg, sizeof msg);
    if (rc != 0)
        fprintf(stderr, "plan: %s\n", msg);
    assert_int_equal(rc, 0);
    argus_recipes_free(&rs);
    rc = argus_plan_check(p, msg, sizeof msg);
    if (rc != 0)
        fprintf(stderr, "check: %s\n", msg);
    assert_int_equal(rc, 0);
}

static const argus_plan_task *task_named(const argus_plan *p, const char *name)
{
    for (size_t i = 0; i < p->ntasks; i++)
        if (strcmp(p->tasks[i].name, name) == 0)
            return &p->tasks[i];
    fprintf(stderr, "no task %s\n", name);
    fail();
    return NULL;
}

static int depends_on(const argus_plan_task *t, int dep)
{
    for (size_t i = 0; i < t->ndeps; i++)
        if (t->deps[i] == dep)
            return 1;
    return 0;
}

static size_t count_type(const argus_plan *p, int type)
{
    size_t n = 0;
    for (size_t i = 0; i < p->ntasks; i++)
        n += p->tasks[i].type == type;
    return n;
}

/* ---- queries ---------------------------------------------------------------- */

static void test_signal_names(void **state)
{
    (void)state;
    int sig = -1;
    char msg[1024] = "";
    assert_int_equal(argus_signal_from_name("stall_reasons_pc", &sig, msg, sizeof msg), 0);
    assert_int_equal(sig, ARGUS_SIG_STALL_PC);
    assert_int_equal(argus_signal_from_name("region_tme", &sig, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "no signal \"region_tme\""));
    assert_non_null(strstr(msg, "did you mean region_time"));
    assert_non_null(strstr(msg, "async_latency")); /* the whole list follows */
    for (int i = 0; i < ARGUS_SIG_COUNT; i++)
        assert_non_null(argus_signal_name(i));
    assert_null(argus_signal_name(ARGUS_SIG_COUNT));
}

static void test_query_args(void **state)
{
    (void)state;
    const char *w[] = {"--program", "bin/gemm",   "--region", "outer/load",
                       "--signal",  "region_time,hw_metrics", "--scope",
                       "role=producer,iter=4:8", "--cta", "0:3",
                       "--metric", "dram__bytes_read.sum", "--format", "json"};
    argus_query q;
    argus_query_init(&q);
    char msg[512] = "";
    int used = 0;
    assert_int_equal(argus_query_from_args(&q, 14, (char **)w, &used, msg, sizeof msg), 0);
    assert_int_equal(used, 12); /* stops at --format, the caller's */
    assert_string_equal(q.program, "bin/gemm");
    assert_int_equal(q.signals, (1u << ARGUS_SIG_REGION_TIME) | (1u << ARGUS_SIG_HW_METRICS));
    assert_string_equal(q.scope.role, "producer");
    assert_int_equal(q.scope.iter_lo, 4);
    assert_int_equal(q.scope.iter_hi, 8);
    assert_int_equal(q.scope.cta_lo, 0);
    assert_int_equal(q.scope.cta_hi, 3);
    assert_int_equal(q.scope.sm_lo, -1);
    assert_int_equal(q.nmetrics, 1);
    argus_registry *reg = known_registry();
    assert_int_equal(argus_query_resolve(&q, reg, msg, sizeof msg), 0);
    assert_int_equal(q.region_id, argus_region_id("load", argus_region_id("outer", 0)));
    assert_string_equal(q.region_path, "outer/load");
    assert_int_equal(q.role_id, argus_region_id("producer", 0));

    /* Bad values, each named. */
    const char *bad_iter[] = {"--iter", "8:4"};
    argus_query_init(&q);
    assert_int_equal(argus_query_from_args(&q, 2, (char **)bad_iter, &used, msg, sizeof msg),
                     ARGUS_EINVAL);
    assert_non_null(strstr(msg, "LO:HI"));
    const char *bad_scope[] = {"--scope", "rol=producer"};
    assert_int_equal(argus_query_from_args(&q, 2, (char **)bad_scope, &used, msg, sizeof msg),
                     ARGUS_EINVAL);
    assert_non_null(strstr(msg, "did you mean role"));
    const char *bad_sig[] = {"--signal", "region_time,pc_stalls"};
    assert_int_equal(argus_query_from_args(&q, 2, (char **)bad_sig, &used, msg, sizeof msg),
                     ARGUS_EINVAL);
    assert_non_null(strstr(msg, "pc_stalls"));
    argus_registry_free(reg);
}

static void test_query_resolve_bad(void **state)
{
    (void)state;
    argus_registry *reg = known_registry();
    argus_query q;
    char msg[2048] = "";
    argus_query_init(&q);
    strcpy(q.program, "p");
    q.signals = 1u << ARGUS_SIG_REGION_TIME;
    strcpy(q.region, "laod");
    assert_int_equal(argus_query_resolve(&q, reg, msg, sizeof msg), ARGUS_ENOREGION);
    assert_non_null(strstr(msg, "region \"laod\""));
    assert_non_null(strstr(msg, "did you mean load"));
    assert_non_null(strstr(msg, "registered: outer, load, compute, tail"));
    strcpy(q.region, "outer/lod");
    assert_int_equal(argus_query_resolve(&q, reg, msg, sizeof msg), ARGUS_ENOREGION);
    assert_non_null(strstr(msg, "did you mean load"));
    strcpy(q.region, "0x1234567");
    assert_int_equal(argus_query_resolve(&q, reg, msg, sizeof msg), ARGUS_ENOREGION);
    /* By ID, and a role misspelt. */
    snprintf(q.region, sizeof q.region, "0x%07x", argus_region_id("tail", 0));
    assert_int_equal(argus_query_resolve(&q, reg, msg, sizeof msg), 0);
    assert_string_equal(q.region_path, "tail");
    strcpy(q.scope.role, "producr");
    assert_int_equal(argus_query_resolve(&q, reg, msg, sizeof msg), ARGUS_ENOREGION);
    assert_non_null(strstr(msg, "did you mean producer"));
    q.scope.role[0] = '\0';
    /* A role's name is not a region. */
    strcpy(q.region, "producer");
    assert_int_equal(argus_query_resolve(&q, reg, msg, sizeof msg), ARGUS_ENOREGION);
    /* One name under two parents: ambiguous, name it by path. */
    uint32_t id;
    assert_int_equal(argus_registry_add(reg, "load", argus_region_id("tail", 0), 0, &id, NULL, 0), 0);
    strcpy(q.region, "load");
    assert_int_equal(argus_query_resolve(&q, reg, msg, sizeof msg), ARGUS_ENOREGION);
    assert_non_null(strstr(msg, "2 regions have that name (outer/load, tail/load)"));
    strcpy(q.region, "tail/load");
    assert_int_equal(argus_query_resolve(&q, reg, msg, sizeof msg), 0);
    assert_int_equal(q.region_id, id);
    /* No signal, no program. */
    q.signals = 0;
    assert_int_equal(argus_query_resolve(&q, reg, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "no signal"));
    argus_registry_free(reg);
}

static void test_query_json(void **state)
{
    (void)state;
    const char *req = "{\"schema\":\"argus.query\",\"version\":1,\"program\":\"bin/gemm\","
                      "\"region\":\"outer\",\"scope\":{\"role\":\"consumer\",\"iter\":[2,5],"
                      "\"sm\":7},\"signals\":[\"async_latency\",\"kernel_time\"],"
                      "\"metrics\":[\"sm__cycles_active.avg\"]}";
    argus_query q;
    argus_query_init(&q);
    char msg[1024] = "";
    assert_int_equal(argus_query_parse_json(&q, req, strlen(req), "req.json", msg, sizeof msg), 0);
    assert_string_equal(q.program, "bin/gemm");
    assert_string_equal(q.region, "outer");
    assert_string_equal(q.scope.role, "consumer");
    assert_int_equal(q.scope.iter_lo, 2);
    assert_int_equal(q.scope.iter_hi, 5);
    assert_int_equal(q.scope.sm_lo, 7);
    assert_int_equal(q.scope.sm_hi, 7);
    assert_int_equal(q.scope.cta_lo, -1);
    assert_int_equal(q.signals, (1u << ARGUS_SIG_ASYNC_LATENCY) | (1u << ARGUS_SIG_KERNEL_TIME));
    assert_string_equal(q.metrics[0], "sm__cycles_active.avg");
    /* What the writer emits reads back as the same query. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(argus_query_write_json(&q, f), 0);
    fclose(f);
    argus_query back;
    argus_query_init(&back);
    assert_int_equal(argus_query_parse_json(&back, buf, len, "written", msg, sizeof msg), 0);
    assert_memory_equal(&back, &q, sizeof q);
    free(buf);
}

static void expect_bad_request(const char *req, const char *want)
{
    argus_query q;
    argus_query_init(&q);
    char msg[2048] = "";
    int rc = argus_query_parse_json(&q, req, strlen(req), "req.json", msg, sizeof msg);
    if (rc != ARGUS_EFORMAT || strstr(msg, want) == NULL)
        fprintf(stderr, "request %s\n  gave %d: %s\n  want: %s\n", req, rc, msg, want);
    assert_int_equal(rc, ARGUS_EFORMAT);
    assert_non_null(strstr(msg, want));
}

#define HEAD "{\"schema\":\"argus.query\",\"version\":1,\"program\":\"p\","

static void test_query_json_bad(void **state)
{
    (void)state;
    expect_bad_request(HEAD "\"signals\":[\"region_time\"]", "req.json: not valid JSON");
    expect_bad_request(HEAD "\"signals\":[\"region_time\"]}{}", "text after the end");
    expect_bad_request(HEAD "\"signal\":[\"region_time\"]}", "signal: unknown key; did you mean signals");
    expect_bad_request(HEAD "\"signals\":[\"region_time\",\"stalls\"]}", "signals[1]: no signal \"stalls\"");
    expect_bad_request(HEAD "\"signals\":[]}", "signals: expected a non-empty array");
    expect_bad_request(HEAD "\"signals\":[\"region_time\"],\"scope\":{\"iter\":[5,2]}}",
                       "scope.iter: expected whole numbers");
    expect_bad_request(HEAD "\"signals\":[\"region_time\"],\"scope\":{\"iter\":[1.5,2]}}",
                       "scope.iter");
    expect_bad_request(HEAD "\"signals\":[\"region_time\"],\"scope\":{\"itr\":[1,2]}}",
                       "scope.itr: unknown key; did you mean iter");
    expect_bad_request(HEAD "\"signals\":[\"region_time\"],\"region\":\"a\",\"region\":\"b\"}",
                       "appears twice");
    expect_bad_request("{\"schema\":\"argus.query\",\"version\":2,\"program\":\"p\","
                       "\"signals\":[\"region_time\"]}",
                       "version: this argus reads request version 1 only");
    expect_bad_request("{\"schema\":\"argus.report\",\"version\":1,\"program\":\"p\","
                       "\"signals\":[\"region_time\"]}",
                       "schema: expected \"argus.query\"");
    expect_bad_request("{\"schema\":\"argus.query\",\"version\":1,\"signals\":[\"region_time\"]}",
                       "program: expected a non-empty string");
    expect_bad_request(HEAD "\"signals\":[\"region_time\"],\"metrics\":[\"dram bytes\"]}",
                       "metrics[0]");
    expect_bad_request("[1,2]", "(document): expected an object");
}

/* ---- recipes ------------------------------------------------------------------ */

static void test_recipes_shipped(void **state)
{
    (void)state;
    argus_recipes rs;
    load_recipes(&rs);
    assert_int_equal(rs.n, ARGUS_SIG_COUNT); /* one recipe per signal */
    for (int s = 0; s < ARGUS_SIG_COUNT; s++)
        assert_non_null(argus_recipes_find(&rs, s));
    const argus_recipe *pc = argus_recipes_find(&rs, ARGUS_SIG_STALL_PC);
    assert_string_equal(pc->synthesis, "pc_attribute");
    assert_int_equal(pc->collect[0].backend, ARGUS_BE_PC_SAMPLING);
    assert_true(pc->collect[0].effects & (1u << ARGUS_FX_SERIALISES_KERNELS));
    assert_true(pc->collect[0].effects & (1u << ARGUS_FX_EXCLUSIVE_CUPTI));
    assert_true(pc->collect[1].retains & (1u << ARGUS_CO_PC));
    const argus_recipe *al = argus_recipes_find(&rs, ARGUS_SIG_ASYNC_LATENCY);
    assert_true(al->prerequisites & (1u << ARGUS_AN_DISCOVER_ASYNC));
    assert_int_equal(al->collect[1].per_probe, 1);
    assert_int_equal(al->collect[1].transforms[1], ARGUS_TX_PROBE);
    assert_true(al->collect[1].effects & (1u << ARGUS_FX_PERTURBS_TIMING));
    const argus_recipe *hw = argus_recipes_find(&rs, ARGUS_SIG_HW_METRICS);
    assert_true(hw->collect[0].effects & (1u << ARGUS_FX_ADMIN_COUNTERS));
    argus_recipes_free(&rs);
}

#define RHEAD "{\"schema\":\"argus.recipes\",\"version\":1,\"recipes\":["
#define RCOLL(fx) \
    "{\"signal\":\"region_time\",\"synthesis\":\"region_stats\",\"collect\":[{\"name\":\"t\"," \
    "\"backend\":\"region_runtime\",\"transforms\":[\"markers_on\"],\"observes\":[\"timing\"]," \
    "\"effects\":[" fx "]}]}"

static void expect_bad_recipe(const char *text, const char *want)
{
    argus_recipes rs = {0};
    char msg[2048] = "";
    int rc = argus_recipes_parse(&rs, text, strlen(text), "r.json", msg, sizeof msg);
    if (rc != ARGUS_EFORMAT || strstr(msg, want) == NULL)
        fprintf(stderr, "recipe %s\n  gave %d: %s\n  want: %s\n", text, rc, msg, want);
    assert_int_equal(rc, ARGUS_EFORMAT);
    assert_non_null(strstr(msg, want));
    argus_recipes_free(&rs);
}

static void test_recipes_bad(void **state)
{
    (void)state;
    /* The good one parses, so that the failures below are their field's. */
    argus_recipes rs = {0};
    char msg[2048] = "";
    const char *good = RHEAD RCOLL("\"perturbs_timing\"") "]}";
    assert_int_equal(argus_recipes_parse(&rs, good, strlen(good), "r.json", msg, sizeof msg), 0);
    assert_int_equal(rs.n, 1);
    assert_int_equal(rs.r[0].collect[0].effects, 1u << ARGUS_FX_PERTURBS_TIMING);
    /* A second recipe for the same signal. */
    assert_int_equal(argus_recipes_parse(&rs, good, strlen(good), "s.json", msg, sizeof msg),
                     ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "s.json: recipe region_time: signal: a second recipe"));
    assert_non_null(strstr(msg, "the first is in r.json"));
    argus_recipes_free(&rs);

    expect_bad_recipe(RHEAD RCOLL("\"perturb_timing\"") "]}",
                      "r.json: recipe region_time: collect[0].effects[0]: unknown effect "
                      "\"perturb_timing\"; did you mean perturbs_timing?");
    expect_bad_recipe(RHEAD RCOLL("\"perturbs_timing\",7") "]}",
                      "collect[0].effects[1]: expected a string naming the effect");
    expect_bad_recipe(RHEAD "{\"signal\":\"region_time\",\"synthesis\":\"region_stats\","
                      "\"collect\":[{\"name\":\"t\",\"backend\":\"nvbit\",\"observes\":[\"timing\"]}]}]}",
                      "collect[0].backend: unknown backend \"nvbit\"");
    expect_bad_recipe(RHEAD "{\"signal\":\"region_time\",\"synthesis\":\"stats\","
                      "\"collect\":[{\"name\":\"t\",\"backend\":\"nvtx\",\"observes\":[\"timing\"]}]}]}",
                      "synthesis: unknown synthesis rule \"stats\"");
    expect_bad_recipe(RHEAD "{\"signal\":\"region_time\",\"synthesis\":\"region_stats\","
                      "\"collect\":[{\"name\":\"t\",\"backend\":\"nvtx\"}]}]}",
                      "collect[0].observes: a collection must say what it observes");
    expect_bad_recipe(RHEAD "{\"signal\":\"region_time\",\"synthesis\":\"region_stats\","
                      "\"collect\":[{\"name\":\"t\",\"backend\":\"nvtx\",\"observes\":[\"timing\"],"
                      "\"effect\":[]}]}]}",
                      "collect[0].effect: unknown key; did you mean effects");
    expect_bad_recipe(RHEAD "{\"signal\":\"region_timing\",\"synthesis\":\"region_stats\","
                      "\"collect\":[]}]}",
                      "recipe region_timing: signal: no signal \"region_timing\"");
    expect_bad_recipe(RHEAD "{\"signal\":\"async_latency\",\"synthesis\":\"probe_latency\","
                      "\"collect\":[{\"name\":\"t\",\"backend\":\"region_runtime\",\"observes\":[\"timing\"],"
                      "\"transforms\":[\"markers_on\",\"force_completion_probe\"]}]}]}",
                      "collect[0].per_probe");
    expect_bad_recipe(RHEAD "{\"signal\":\"async_latency\",\"synthesis\":\"probe_latency\","
                      "\"collect\":[{\"name\":\"t\",\"backend\":\"region_runtime\",\"observes\":[\"timing\"],"
                      "\"per_probe\":true,\"transforms\":[\"markers_on\",\"force_completion_probe\"]}]}]}",
                      "prerequisites: per-probe collections need the discover_async_ops");
    expect_bad_recipe("{\"schema\":\"argus.recipes\",\"version\":3,\"recipes\":[]}",
                      "version: this argus reads recipes version 1 only");
}

/* A recipes folder holding one file with an unknown effect: the loader
 * names the file (its full path), the recipe and the field. */
static void test_recipes_dir_unknown_effect(void **state)
{
    (void)state;
    char dir[] = "/tmp/argus_recipes_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/b_region.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(RHEAD RCOLL("\"needs_exclusive_cuda\"") "]}", f);
    fclose(f);
    argus_recipes rs;
    char msg[2048] = "";
    assert_int_equal(argus_recipes_load(dir, &rs, msg, sizeof msg), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, path));
    assert_non_null(strstr(msg, "recipe region_time: collect[0].effects[0]: unknown effect "
                                "\"needs_exclusive_cuda\"; did you mean needs_exclusive_cupti?"));
    assert_null(rs.r);
    unlink(path);
    assert_int_equal(argus_recipes_load(dir, &rs, msg, sizeof msg), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "no *.json recipe files"));
    rmdir(dir);
    assert_int_equal(argus_recipes_load("/nonexistent/recipes", &rs, msg, sizeof msg), ARGUS_EIO);
    assert_non_null(strstr(msg, "--recipes"));
}

/* ---- plans ---------------------------------------------------------------------- */

/* Region timing and kernel timing: the marked variant's region trace and
 * NVTX ranges share one run (nothing of one disturbs the other); kernel
 * timing runs the unmodified program. */
static void test_plan_timing(void **state)
{
    (void)state;
    argus_plan_env env;
    argus_plan_env_all(&env, 90);
    const char *w[] = {"--program", "bin/known", "--region", "outer",
                       "--signal", "region_time,kernel_time"};
    argus_plan p;
    build(&p, w, 6, &env);
    assert_int_equal(p.partial, 0);
    assert_int_equal(p.nvariants, 2);
    assert_string_equal(p.variants[1].name, "known+markers_on");
    assert_int_equal(count_type(&p, ARGUS_TASK_TRANSFORM), 1);
    assert_int_equal(count_type(&p, ARGUS_TASK_COLLECT), 4);
    assert_int_equal(count_type(&p, ARGUS_TASK_SYNTHESIZE), 2);
    assert_int_equal(count_type(&p, ARGUS_TASK_CONTROL), 0);
    const argus_plan_task *tx = task_named(&p, "transform:markers_on->v1");
    const argus_plan_task *rt = task_named(&p, "collect:region_trace@v1");
    const argus_plan_task *nv = task_named(&p, "collect:host_ranges@v1");
    const argus_plan_task *ka = task_named(&p, "collect:kernel_activity@v0");
    const argus_plan_task *hs = task_named(&p, "collect:host_sched@v0");
    const argus_plan_task *s1 = task_named(&p, "synthesize:region_stats[region_time]");
    const argus_plan_task *s2 = task_named(&p, "synthesize:kernel_stats[kernel_time]");
    assert_true(depends_on(rt, tx->id) && depends_on(nv, tx->id));
    assert_int_equal(ka->ndeps, 0);
    assert_true(depends_on(s1, rt->id) && depends_on(s1, nv->id) && s1->ndeps == 2);
    assert_true(depends_on(s2, ka->id) && depends_on(s2, hs->id));
    assert_int_equal(rt->run, nv->run);
    /* The BPF uprobes perturb the host's timing (24 us a hit on the
     * development VM, docs/argus-backends.md): a run of their own. */
    assert_int_not_equal(ka->run, hs->run);
    assert_int_not_equal(rt->run, ka->run);
    assert_int_not_equal(rt->run, hs->run);
    assert_int_equal(p.nruns, 3);
    assert_string_equal(rt->exclusive, "gpu");
    assert_null(s1->exclusive);
    argus_plan_free(&p);
}

/* Stall reasons and instructions per PC beside region timing: PC sampling
 * serialises kernels, so it never shares the region timing's run; the
 * PC-to-region map perturbs timing and sampling; two exclusive CUPTI
 * collections never share; SASS counts and the map do share. The map is
 * one collection for both PC signals. */
static void test_plan_pc_partitions(void **state)
{
    (void)state;
    argus_plan_env env;
    argus_plan_env_all(&env, 90);
    const char *w[] = {"--program", "bin/known", "--signal",
                       "region_time,stall_reasons_pc,inst_executed_pc"};
    argus_plan p;
    build(&p, w, 4, &env);
    const argus_plan_task *rt = task_named(&p, "collect:region_trace@v1");
    const argus_plan_task *ps = task_named(&p, "collect:pc_samples@v1");
    const argus_plan_task *map = task_named(&p, "collect:pc_region_map@v1");
    const argus_plan_task *sc = task_named(&p, "collect:sass_counts@v1");
    const argus_plan_task *ls = task_named(&p, "synthesize:sass_listing@v1");
    assert_int_equal(map->signals,
                     (1u << ARGUS_SIG_STALL_PC) | (1u << ARGUS_SIG_INST_PC));
    assert_int_not_equal(ps->run, rt->run);
    assert_int_not_equal(map->run, rt->run);
    assert_int_not_equal(map->run, ps->run);
    assert_int_not_equal(sc->run, ps->run);
    assert_int_equal(sc->run, map->run);
    assert_int_equal(p.nruns, 3);
    /* Each split says which rule made it. */
    const argus_plan_run *r_ps = &p.runs[ps->run];
    assert_int_equal(r_ps->nwhy, 1);
    assert_non_null(strstr(r_ps->why[0], "pc_samples@v1 serialises_kernels, which changes the "
                                         "timing collect:region_trace@v1 measures"));
    const argus_plan_run *r_map = &p.runs[map->run];
    assert_int_equal(r_map->nwhy, 2);
    assert_non_null(strstr(r_map->why[0], "not in run 0: collect:pc_region_map@v1 perturbs_timing"));
    assert_non_null(strstr(r_map->why[1], "measures (samples"));
    char why[256];
    assert_int_equal(argus_plan_compatible(sc, ps, why, sizeof why), 0);
    assert_non_null(strstr(why, "both need_exclusive_cupti"));
    /* The synthesis of a PC signal waits for the listing and both collections. */
    const argus_plan_task *st = task_named(&p, "synthesize:pc_attribute[stall_reasons_pc]");
    assert_true(depends_on(st, ps->id) && depends_on(st, map->id) && depends_on(st, ls->id));
    const argus_plan_task *si = task_named(&p, "synthesize:pc_attribute[inst_executed_pc]");
    assert_true(depends_on(si, sc->id) && depends_on(si, map->id) && depends_on(si, ls->id));
    assert_int_equal(ls->type, ARGUS_TASK_SYNTHESIZE);
    argus_plan_free(&p);
}

static void test_compatible_rules(void **state)
{
    (void)state;
    argus_plan_task a = {.type = ARGUS_TASK_COLLECT, .variant = 1, .name = "a"};
    argus_plan_task b = {.type = ARGUS_TASK_COLLECT, .variant = 1, .name = "b"};
    char why[256];
    a.observes = b.observes = 1u << ARGUS_OBS_TIMING;
    assert_int_equal(argus_plan_compatible(&a, &b, why, sizeof why), 1);
    a.effects = 1u << ARGUS_FX_PERTURBS_TIMING; /* a forced wait */
    assert_int_equal(argus_plan_compatible(&a, &b, why, sizeof why), 0);
    assert_string_equal(why, "a perturbs_timing, which b measures (timing)");
    assert_int_equal(argus_plan_compatible(&b, &a, why, sizeof why), 0); /* symmetric */
    b.observes = 1u << ARGUS_OBS_COUNTS; /* counts are not disturbed by a wait */
    assert_int_equal(argus_plan_compatible(&a, &b, why, sizeof why), 1);
    a.effects = 1u << ARGUS_FX_CHANGES_OVERLAP;
    b.observes = 1u << ARGUS_OBS_OVERLAP;
    assert_int_equal(argus_plan_compatible(&a, &b, why, sizeof why), 0);
    assert_non_null(strstr(why, "changes_overlap"));
    a.effects = b.effects = 1u << ARGUS_FX_EXCLUSIVE_CUPTI;
    b.observes = 1u << ARGUS_OBS_COUNTS;
    assert_int_equal(argus_plan_compatible(&a, &b, why, sizeof why), 0);
    b.effects = 0;
    assert_int_equal(argus_plan_compatible(&a, &b, why, sizeof why), 1);
    b.variant = 2;
    assert_int_equal(argus_plan_compatible(&a, &b, why, sizeof why), 0);
    assert_non_null(strstr(why, "different program variants"));
}

/* Operation `ordinal` of region outer (0x23ce102), discover.h's ID layout. */
static argus_plan_op op(unsigned ordinal, int kind, int in_loop)
{
    argus_plan_op o;
    memset(&o, 0, sizeof o);
    o.region = argus_region_id("outer", 0);
    o.ordinal = ordinal;
    o.id = ARGUS_OP_ID(o.region, ordinal);
    o.in_loop = in_loop;
    o.kind = kind;
    return o;
}

/* async_latency over iterations 4..7: the CONTROL task expands into one
 * probe branch (TRANSFORM, COLLECT, SYNTHESIZE) per op and iteration for
 * the two ops in the loop and one for the op outside it, each probe in a
 * run of its own, the final synthesis joining all of them. */
static void test_plan_expand(void **state)
{
    (void)state;
    argus_plan_env env;
    argus_plan_env_all(&env, 90);
    const char *w[] = {"--program", "bin/known", "--region", "outer",
                       "--signal", "async_latency,region_time", "--iter", "4:7"};
    argus_plan p;
    build(&p, w, 8, &env);
    const argus_plan_task *ctl = task_named(&p, "control:discover_async_ops@v1");
    int control = ctl->id;
    const argus_plan_task *fin = task_named(&p, "synthesize:probe_latency[async_latency]");
    int fin_id = fin->id;
    assert_int_equal(fin->pending, control);
    assert_int_equal(ctl->expanded, 0);
    assert_true(depends_on(ctl, task_named(&p, "transform:markers_on->v1")->id));
    /* One region trace serves both signals (the probes' baseline). */
    const argus_plan_task *rt = task_named(&p, "collect:region_trace@v1");
    assert_int_equal(rt->signals, (1u << ARGUS_SIG_ASYNC_LATENCY) | (1u << ARGUS_SIG_REGION_TIME));
    assert_true(depends_on(fin, rt->id) && depends_on(fin, control));
    size_t before = p.ntasks, runs_before = p.nruns;

    char msg[1024] = "";
    assert_int_equal(argus_plan_expand(&p, rt->id, NULL, 0, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "not a CONTROL task"));
    argus_plan_op ops[3] = {op(0, ARGUS_ASYNC_CP_ASYNC, 1), op(1, ARGUS_ASYNC_TMA, 1),
                            op(2, ARGUS_ASYNC_WGMMA, 0)};
    assert_int_equal(argus_plan_expand(&p, control, ops, 3, msg, sizeof msg), 0);
    assert_int_equal(p.ntasks, before + (2 * 4 + 1) * 3); /* 9 branches of 3 tasks */
    assert_int_equal(p.nruns, runs_before + 9);
    assert_int_equal(p.tasks[control].expanded, 1);
    assert_int_equal(p.tasks[fin_id].pending, -1);
    size_t branches = 0;
    for (size_t i = before; i < p.ntasks; i++) {
        const argus_plan_task *t = &p.tasks[i];
        if (t->type == ARGUS_TASK_TRANSFORM) {
            assert_int_equal(t->transform, ARGUS_TX_PROBE);
            assert_true(depends_on(t, control));
            assert_true(t->op == ops[0].id || t->op == ops[1].id || t->op == ops[2].id);
            if (t->op == ops[2].id)
                assert_int_equal(t->iter, 0); /* outside the loop: its one execution */
            else
                assert_true(t->iter >= 4 && t->iter <= 7);
        } else if (t->type == ARGUS_TASK_COLLECT) {
            assert_true(depends_on(t, p.variants[t->variant].task));
            assert_int_equal(p.runs[t->run].ntasks, 1); /* alone in its run */
            assert_int_equal(p.variants[t->variant].parent, 1);
            assert_true(t->effects & (1u << ARGUS_FX_PERTURBS_TIMING));
        } else {
            assert_int_equal(t->type, ARGUS_TASK_SYNTHESIZE);
            assert_int_equal(t->ndeps, 1);
            assert_int_equal(p.tasks[t->deps[0]].type, ARGUS_TASK_COLLECT);
            assert_int_equal(p.tasks[t->deps[0]].op, t->op);
            assert_int_equal(p.tasks[t->deps[0]].iter, t->iter);
            assert_true(depends_on(&p.tasks[fin_id], t->id));
            branches++;
        }
    }
    assert_int_equal(branches, 9);
    assert_int_equal(p.tasks[fin_id].ndeps, 2 + 9);
    assert_string_equal(p.variants[p.nvariants - 2].name,
                        "known+markers_on+probe(op=0x23ce102.1,iter=7)");
    assert_string_equal(p.variants[p.nvariants - 1].name,
                        "known+markers_on+probe(op=0x23ce102.2,iter=0)");
    assert_int_equal(argus_plan_check(&p, msg, sizeof msg), 0);
    /* A dependency order puts the final synthesis after every branch. */
    int *order = calloc(p.ntasks, sizeof(int));
    int *pos = calloc(p.ntasks, sizeof(int));
    assert_non_null(order);
    assert_non_null(pos);
    assert_int_equal(argus_plan_order(&p, order, msg, sizeof msg), 0);
    for (size_t i = 0; i < p.ntasks; i++)
        pos[order[i]] = (int)i + 1;
    for (size_t i = 0; i < p.ntasks; i++) {
        assert_true(pos[i] > 0);
        for (size_t d = 0; d < p.tasks[i].ndeps; d++)
            assert_true(pos[p.tasks[i].deps[d]] < pos[i]);
    }
    assert_int_equal(order[p.ntasks - 1], fin_id);
    assert_int_equal(order[0], 0);
    /* A cycle made by hand is refused. */
    size_t saved = p.tasks[0].ndeps;
    int *saved_deps = p.tasks[0].deps;
    int cyc = fin_id;
    p.tasks[0].deps = &cyc;
    p.tasks[0].ndeps = 1;
    assert_int_equal(argus_plan_order(&p, order, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "cycle"));
    assert_int_equal(argus_plan_check(&p, msg, sizeof msg), ARGUS_EINVAL);
    p.tasks[0].deps = saved_deps;
    p.tasks[0].ndeps = saved;
    free(order);
    free(pos);
    assert_int_equal(argus_plan_expand(&p, control, ops, 3, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "already expanded"));
    argus_plan_free(&p);
}

/* N probes for N = 1, 2, 4, 8 without an iteration window: N branches,
 * each at the operation's first execution. */
static void test_plan_expand_counts(void **state)
{
    (void)state;
    argus_plan_env env;
    argus_plan_env_all(&env, 90);
    const char *w[] = {"--program", "bin/known", "--signal", "async_latency"};
    argus_plan_op ops[8];
    for (unsigned i = 0; i < 8; i++)
        ops[i] = op(i, ARGUS_ASYNC_CP_ASYNC, 1);
    for (size_t n = 1; n <= 8; n *= 2) {
        argus_plan p;
        build(&p, w, 4, &env);
        int control = task_named(&p, "control:discover_async_ops@v1")->id;
        size_t runs = p.nruns;
        char msg[512];
        assert_int_equal(argus_plan_expand(&p, control, ops, n, msg, sizeof msg), 0);
        assert_int_equal(p.nruns, runs + n);
        assert_int_equal(count_type(&p, ARGUS_TASK_TRANSFORM), 1 + n);
        assert_int_equal(p.tasks[p.ntasks - 1].iter, 0);
        argus_plan_free(&p);
    }
    /* Zero ops: nothing to probe, the control is done. */
    argus_plan p;
    build(&p, w, 4, &env);
    int control = task_named(&p, "control:discover_async_ops@v1")->id;
    char msg[512];
    size_t n = p.ntasks;
    assert_int_equal(argus_plan_expand(&p, control, NULL, 0, msg, sizeof msg), 0);
    assert_int_equal(p.ntasks, n);
    argus_plan_free(&p);
    /* Too many branches, and an op listed twice. */
    build(&p, w, 4, &env);
    argus_plan_op *many = calloc(ARGUS_PLAN_MAX_PROBES + 1, sizeof(*many));
    assert_non_null(many);
    for (uint32_t i = 0; i <= ARGUS_PLAN_MAX_PROBES; i++)
        many[i].id = i + 1;
    /* 2048 ops in a loop over 2 iterations fit; one more does not. */
    argus_plan q2;
    const char *w2[] = {"--program", "bin/known", "--signal", "async_latency", "--iter", "0:1"};
    build(&q2, w2, 6, &env);
    for (uint32_t i = 0; i <= ARGUS_PLAN_MAX_PROBES / 2; i++)
        many[i].in_loop = 1;
    assert_int_equal(argus_plan_expand(&q2, control, many, ARGUS_PLAN_MAX_PROBES / 2 + 1, msg,
                                       sizeof msg),
                     ARGUS_ELIMIT);
    assert_int_equal(argus_plan_expand(&q2, control, many, ARGUS_PLAN_MAX_PROBES / 2, msg,
                                       sizeof msg),
                     0);
    assert_int_equal(argus_plan_check(&q2, msg, sizeof msg), 0);
    argus_plan_free(&q2);
    for (uint32_t i = 0; i <= ARGUS_PLAN_MAX_PROBES; i++)
        many[i].in_loop = 0;
    assert_int_equal(argus_plan_expand(&p, control, many, ARGUS_PLAN_MAX_PROBES + 1, msg, sizeof msg),
                     ARGUS_ELIMIT);
    assert_non_null(strstr(msg, "narrow the region"));
    many[1].id = many[0].id;
    assert_int_equal(argus_plan_expand(&p, control, many, 2, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "operation 0x0000000.1 is listed twice"));
    many[0].id = 0;
    assert_int_equal(argus_plan_expand(&p, control, many, 1, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "has ID 0"));
    free(many);
    argus_plan_free(&p);
}

/* A forced wait on the probe variant never shares a run with a timing on
 * that variant: a recipe (data) that also times kernels on each probe. */
static void test_plan_forced_wait_rule(void **state)
{
    (void)state;
    const char *text =
        RHEAD "{\"signal\":\"async_latency\",\"synthesis\":\"probe_latency\","
              "\"prerequisites\":[\"discover_async_ops\"],\"collect\":["
              "{\"name\":\"base\",\"backend\":\"region_runtime\",\"transforms\":[\"markers_on\"],"
              "\"observes\":[\"timing\"]},"
              "{\"name\":\"probe\",\"backend\":\"region_runtime\",\"per_probe\":true,"
              "\"transforms\":[\"markers_on\",\"force_completion_probe\"],\"observes\":[\"timing\"],"
              "\"effects\":[\"perturbs_timing\"]},"
              "{\"name\":\"probe_kernels\",\"backend\":\"cupti_activity\",\"per_probe\":true,"
              "\"transforms\":[\"markers_on\",\"force_completion_probe\"],\"observes\":[\"timing\"]},"
              "{\"name\":\"probe_counts\",\"backend\":\"sass_metrics\",\"per_probe\":true,"
              "\"transforms\":[\"markers_on\",\"force_completion_probe\"],\"observes\":[\"counts\"]}"
              "]}]}";
    argus_recipes rs = {0};
    char msg[2048] = "";
    assert_int_equal(argus_recipes_parse(&rs, text, strlen(text), "t.json", msg, sizeof msg), 0);
    argus_query q;
    const char *w[] = {"--program", "bin/known", "--signal", "async_latency"};
    make_query(&q, w, 4);
    argus_plan_env env;
    argus_plan_env_all(&env, 90);
    argus_plan p;
    assert_int_equal(argus_plan_build(&q, &rs, &env, &p, msg, sizeof msg), 0);
    int control = task_named(&p, "control:discover_async_ops@v1")->id;
    argus_plan_op o = op(5, ARGUS_ASYNC_WGMMA, 0);
    assert_int_equal(argus_plan_expand(&p, control, &o, 1, msg, sizeof msg), 0);
    const argus_plan_task *pr = task_named(&p, "collect:probe@v2");
    const argus_plan_task *pk = task_named(&p, "collect:probe_kernels@v2");
    const argus_plan_task *pc = task_named(&p, "collect:probe_counts@v2");
    assert_int_not_equal(pr->run, pk->run);
    assert_int_equal(pr->run, pc->run); /* counts are not disturbed by a wait */
    assert_non_null(strstr(p.runs[pk->run].why[0],
                           "collect:probe@v2 perturbs_timing, which collect:probe_kernels@v2 "
                           "measures (timing)"));
    const argus_plan_task *bs = task_named(&p, "synthesize:probe_latency(op=0x23ce102.5,iter=0)");
    assert_int_equal(bs->ndeps, 3);
    assert_int_equal(argus_plan_check(&p, msg, sizeof msg), 0);
    /* The checker sees a conflicting pair put into one run by hand. */
    argus_plan_run *r = &p.runs[pr->run];
    int *nt = realloc(r->tasks, (r->ntasks + 1) * sizeof(int));
    assert_non_null(nt);
    r->tasks = nt;
    r->tasks[r->ntasks++] = pk->id;
    p.tasks[pk->id].run = pr->run;
    assert_int_equal(argus_plan_check(&p, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "perturbs_timing"));
    argus_plan_free(&p);
    argus_recipes_free(&rs);
}

/* Recipes this machine cannot satisfy: named with the reason, the rest of
 * the plan kept and marked partial; an optional collection left out does
 * not make the plan partial; nothing satisfiable is an error. */
static void test_plan_unsatisfiable(void **state)
{
    (void)state;
    argus_plan_env env;
    argus_plan_env_all(&env, 90);
    char msg[2048] = "";
    assert_int_equal(argus_plan_env_set(&env, "admin_counters", 0, msg, sizeof msg), 0);
    assert_int_equal(argus_plan_env_set(&env, "pc_sampling", 0, msg, sizeof msg), 0);
    assert_int_equal(argus_plan_env_set(&env, "bpf", 0, msg, sizeof msg), 0);
    assert_int_equal(argus_plan_env_set(&env, "pc_samplin", 0, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "did you mean pc_sampling"));
    const char *w[] = {"--program", "bin/known", "--signal",
                       "kernel_time,hw_metrics,stall_reasons_pc,inst_executed_pc"};
    argus_plan p;
    build(&p, w, 4, &env);
    assert_int_equal(p.partial, 1);
    assert_int_equal(p.answered, (1u << ARGUS_SIG_KERNEL_TIME) | (1u << ARGUS_SIG_INST_PC));
    assert_int_equal(p.nunsat, 3);
    assert_int_equal(p.unsat[0].signal, ARGUS_SIG_KERNEL_TIME);
    assert_string_equal(p.unsat[0].collect, "host_sched");
    assert_int_equal(p.unsat[0].dropped_signal, 0);
    assert_int_equal(p.unsat[1].signal, ARGUS_SIG_STALL_PC);
    assert_string_equal(p.unsat[1].collect, "pc_samples");
    assert_non_null(strstr(p.unsat[1].why, "backend pc_sampling is not available"));
    assert_int_equal(p.unsat[2].signal, ARGUS_SIG_HW_METRICS);
    assert_non_null(strstr(p.unsat[2].why, "needs admin counters"));
    /* No task of a dropped signal was left behind. */
    for (size_t i = 0; i < p.ntasks; i++)
        assert_int_equal(p.tasks[i].signals & ((1u << ARGUS_SIG_HW_METRICS) |
                                               (1u << ARGUS_SIG_STALL_PC)), 0);
    /* The text listing names them. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(argus_plan_write_text(&p, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "(PARTIAL plan)"));
    assert_non_null(strstr(buf, "hw_metrics, collection kernel_counters: needs admin counters"));
    assert_non_null(strstr(buf, "(optional, left out)"));
    free(buf);
    argus_plan_free(&p);

    /* A GPU that lacks the signal: PC sampling and SASS metrics need sm_70. */
    argus_plan_env_all(&env, 60);
    const char *w2[] = {"--program", "bin/known", "--signal", "stall_reasons_pc,region_time"};
    build(&p, w2, 4, &env);
    assert_int_equal(p.partial, 1);
    assert_non_null(strstr(p.unsat[0].why, "needs sm_70 or newer; the target GPU is sm_60"));
    argus_plan_free(&p);

    /* Only unsatisfiable signals: an error naming each reason. */
    argus_query q;
    const char *w3[] = {"--program", "bin/known", "--signal", "hw_metrics"};
    make_query(&q, w3, 4);
    argus_recipes rs;
    load_recipes(&rs);
    argus_plan_env_all(&env, 90);
    env.admin_counters = 0;
    assert_int_equal(argus_plan_build(&q, &rs, &env, &p, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "no signal of the query can be measured here: hw_metrics"));
    assert_null(p.tasks);
    argus_recipes_free(&rs);
}

/* A scope the evidence cannot keep: kernel timing keeps only kernels, so a
 * role or CTA scope is named and the plan is partial; region timing keeps
 * both. */
static void test_plan_scope_kept(void **state)
{
    (void)state;
    argus_plan_env env;
    argus_plan_env_all(&env, 90);
    const char *w[] = {"--program", "bin/known", "--signal", "region_time,kernel_time",
                       "--role", "producer", "--cta", "0:1"};
    argus_plan p;
    build(&p, w, 8, &env);
    assert_int_equal(p.partial, 1);
    assert_int_equal(p.answered, (1u << ARGUS_SIG_REGION_TIME) | (1u << ARGUS_SIG_KERNEL_TIME));
    assert_int_equal(p.nunsat, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(p.unsat[i].signal, ARGUS_SIG_KERNEL_TIME);
        assert_int_equal(p.unsat[i].dropped_signal, 0);
    }
    assert_non_null(strstr(p.unsat[0].why, "the query's role scope cannot be kept: no collection "
                                           "of the recipe retains role (they keep kernel), so the "
                                           "signal covers every warp role"));
    assert_non_null(strstr(p.unsat[1].why, "cta scope"));
    argus_plan_free(&p);
    const char *w2[] = {"--program", "bin/known", "--signal", "region_time", "--role",
                        "producer", "--cta", "0:1", "--iter", "1:2", "--region", "outer"};
    build(&p, w2, 12, &env);
    assert_int_equal(p.partial, 0);
    assert_int_equal(p.nunsat, 0);
    argus_plan_free(&p);
}

/* The JSON plan: its schema, runs with their reasons, every task typed. */
static void test_plan_json(void **state)
{
    (void)state;
    argus_plan_env env;
    argus_plan_env_all(&env, 90);
    const char *w[] = {"--program", "bin/known", "--region", "outer", "--signal",
                       "region_time,stall_reasons_pc"};
    argus_plan p;
    build(&p, w, 6, &env);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(argus_plan_write_json(&p, f), 0);
    fclose(f);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    assert_string_equal(cJSON_GetObjectItem(o, "schema")->valuestring, "argus.plan");
    assert_int_equal(cJSON_GetObjectItem(o, "version")->valueint, 1);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "resolved"), "region_path")
                            ->valuestring, "outer");
    cJSON *tasks = cJSON_GetObjectItem(o, "tasks");
    assert_int_equal(cJSON_GetArraySize(tasks), (int)p.ntasks);
    cJSON *runs = cJSON_GetObjectItem(o, "runs");
    assert_int_equal(cJSON_GetArraySize(runs), (int)p.nruns);
    for (int i = 0; i < cJSON_GetArraySize(runs); i++)
        assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, i), "why")) > 0);
    cJSON *t = cJSON_GetArrayItem(tasks, task_named(&p, "collect:pc_samples@v1")->id);
    assert_string_equal(cJSON_GetObjectItem(t, "backend")->valuestring, "pc_sampling");
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "effects"), 1)->valuestring,
                        "serialises_kernels");
    cJSON_Delete(o);
    free(buf);
    argus_plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signal_names),
        cmocka_unit_test(test_query_args),
        cmocka_unit_test(test_query_resolve_bad),
        cmocka_unit_test(test_query_json),
        cmocka_unit_test(test_query_json_bad),
        cmocka_unit_test(test_recipes_shipped),
        cmocka_unit_test(test_recipes_bad),
        cmocka_unit_test(test_recipes_dir_unknown_effect),
        cmocka_unit_test(test_plan_timing),
        cmocka_unit_test(test_plan_pc_partitions),
        cmocka_unit_test(test_compatible_rules),
        cmocka_unit_test(test_plan_expand),
        cmocka_unit_test(test_plan_expand_counts),
        cmocka_unit_test(test_plan_forced_wait_rule),
        cmocka_unit_test(test_plan_unsatisfiable),
        cmocka_unit_test(test_plan_scope_kept),
        cmocka_unit_test(test_plan_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
