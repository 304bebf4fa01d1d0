/*
 * The planner's own cost (issue 13): for 1, 2, 4 and 8 probes, the time to
 * resolve a query, load the recipes, build the plan and expand its CONTROL
 * task, and the size of the plan's JSON. Run as `test_argus_plan_bench
 * [REPEATS]`; it checks each plan's shape (one run per probe) and exits 1
 * if a plan is wrong, so that the numbers are of correct plans. Times are
 * CLOCK_MONOTONIC wall time per plan: median and min over REPEATS
 * (default 200) on whatever else the machine is doing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "argus/plan.h"
#include "argus/query.h"

#define RECIPES ARGUS_SRC_DIR "/../../profiler/argus/recipes"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One plan with n probes; *load_us and *plan_us get the two parts' times,
 * *json_bytes the JSON plan's size. Returns 0, or 1 when the plan is wrong. */
static int one(size_t n, const argus_registry *reg, double *load_us, double *plan_us,
               size_t *json_bytes)
{
    char msg[2048] = "";
    double t0 = now_us();
    argus_recipes rs;
    if (argus_recipes_load(RECIPES, &rs, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s\n", msg);
        return 1;
    }
    double t1 = now_us();
    argus_query q;
    argus_query_init(&q);
    const char *w[] = {"--program", "bin/known", "--region", "outer",
                       "--signal", "async_latency,region_time"};
    int used;
    argus_plan_env env;
    argus_plan_env_all(&env, 90);
    argus_plan p;
    int rc = argus_query_from_args(&q, 6, (char **)w, &used, msg, sizeof msg);
    if (rc == 0)
        rc = argus_query_resolve(&q, reg, msg, sizeof msg);
    if (rc == 0)
        rc = argus_plan_build(&q, &rs, &env, &p, msg, sizeof msg);
    argus_recipes_free(&rs);
    if (rc != 0) {
        fprintf(stderr, "%s\n", msg);
        return 1;
    }
    argus_plan_op ops[8];
    memset(ops, 0, sizeof ops);
    for (size_t i = 0; i < 8; i++)
        ops[i].id = ((uint64_t)argus_region_id("outer", 0) << 16) | i;
    size_t runs = p.nruns;
    int control = -1;
    for (size_t i = 0; i < p.ntasks; i++)
        if (p.tasks[i].type == ARGUS_TASK_CONTROL)
            control = (int)i;
    rc = argus_plan_expand(&p, control, ops, n, msg, sizeof msg);
    double t2 = now_us();
    if (rc == 0)
        rc = argus_plan_check(&p, msg, sizeof msg);
    if (rc == 0 && p.nruns != runs + n) {
        snprintf(msg, sizeof msg, "%zu probes gave %zu runs, not %zu", n, p.nruns, runs + n);
        rc = 1;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL || argus_plan_write_json(&p, f) != 0)
        rc = 1;
    if (f != NULL)
        fclose(f);
    free(buf);
    argus_plan_free(&p);
    if (rc != 0) {
        fprintf(stderr, "%s\n", msg);
        return 1;
    }
    *load_us = t1 - t0;
    *plan_us = t2 - t1;
    *json_bytes = len;
    return 0;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    if (reps < 1 || reps > 100000) {
        fprintf(stderr, "usage: test_argus_plan_bench [REPEATS 1..100000]\n");
        return 2;
    }
    argus_registry *reg;
    uint32_t outer, id;
    if (argus_registry_new(&reg) != 0 || argus_registry_add(reg, "outer", 0, 0, &outer, NULL, 0) ||
        argus_registry_add(reg, "load", outer, 0, &id, NULL, 0))
        return 1;
    double *load = malloc(sizeof(double) * (size_t)reps), *plan = malloc(sizeof(double) * (size_t)reps);
    if (load == NULL || plan == NULL)
        return 1;
    printf("probes  recipes_load_us(median,min)  query+plan+expand_us(median,min)  plan_json_bytes\n");
    for (size_t n = 1; n <= 8; n *= 2) {
        size_t bytes = 0;
        for (int r = 0; r < reps; r++)
            if (one(n, reg, &load[r], &plan[r], &bytes) != 0)
                return 1;
        qsort(load, (size_t)reps, sizeof(double), cmp_d);
        qsort(plan, (size_t)reps, sizeof(double), cmp_d);
        printf("%6zu  %12.1f %8.1f            %12.1f %8.1f              %8zu\n", n,
               load[reps / 2], load[0], plan[reps / 2], plan[0], bytes);
    }
    free(load);
    free(plan);
    argus_registry_free(reg);
    return 0;
}
