/*
 * Fuzz target: any bytes as a query request and as a recipes file. Each
 * parser must either refuse them with a negative ARGUS_E* code and a
 * message, or accept them; an accepted request must resolve or be refused
 * against the kernel_known registry, and write a request that reads back
 * as the same query; accepted recipes must plan every signal they cover
 * into a plan that passes argus_plan_check before and after its CONTROL
 * tasks expand, and that both writers accept. Run by the shared driver
 * (tests/fuzz_main.c) over test_plan_corpus/.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/plan.h"
#include "argus/query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, what)                                      \
    do {                                                       \
        if (!(cond)) {                                         \
            fprintf(stderr, "fuzz_argus_plan: %s\n", what);    \
            abort();                                           \
        }                                                      \
    } while (0)

static argus_registry *reg_known(void)
{
    argus_registry *r;
    uint32_t outer, id;
    CHECK(argus_registry_new(&r) == 0, "registry");
    CHECK(argus_registry_add(r, "outer", 0, 0, &outer, NULL, 0) == 0, "outer");
    CHECK(argus_registry_add(r, "load", outer, 0, &id, NULL, 0) == 0, "load");
    CHECK(argus_registry_add(r, "tail", 0, 0, &id, NULL, 0) == 0, "tail");
    CHECK(argus_registry_add(r, "producer", 0, 1, &id, NULL, 0) == 0, "producer");
    return r;
}

static void write_both(const argus_plan *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL, "memstream");
    CHECK(argus_plan_write_text(p, f) == 0, "text writer refused a plan");
    CHECK(argus_plan_write_json(p, f) == 0, "JSON writer refused a plan");
    fclose(f);
    free(buf);
}

static void fuzz_request(const uint8_t *data, size_t size)
{
    argus_query q;
    argus_query_init(&q);
    char msg[2048] = "";
    int rc = argus_query_parse_json(&q, (const char *)data, size, "fuzz", msg, sizeof msg);
    if (rc != 0) {
        CHECK(rc < 0 && msg[0] != '\0', "a refused request without a code and message");
        return;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL && argus_query_write_json(&q, f) == 0, "query writer");
    fclose(f);
    argus_query back;
    argus_query_init(&back);
    CHECK(argus_query_parse_json(&back, buf, len, "written", msg, sizeof msg) == 0,
          "the written request does not read back");
    CHECK(memcmp(&back, &q, sizeof q) == 0, "the written request reads back differently");
    free(buf);
    argus_registry *reg = reg_known();
    rc = argus_query_resolve(&q, reg, msg, sizeof msg);
    CHECK(rc == 0 || (rc < 0 && msg[0] != '\0'), "resolve failed without a message");
    argus_registry_free(reg);
}

static void fuzz_recipes(const uint8_t *data, size_t size)
{
    argus_recipes rs = {0};
    char msg[2048] = "";
    int rc = argus_recipes_parse(&rs, (const char *)data, size, "fuzz", msg, sizeof msg);
    if (rc != 0) {
        CHECK(rc < 0 && msg[0] != '\0', "refused recipes without a code and message");
        argus_recipes_free(&rs);
        return;
    }
    argus_query q;
    argus_query_init(&q);
    strcpy(q.program, "bin/known");
    for (size_t i = 0; i < rs.n; i++)
        q.signals |= 1u << rs.r[i].signal;
    q.scope.iter_lo = 0;
    q.scope.iter_hi = 1;
    argus_plan_env env;
    argus_plan_env_all(&env, 90);
    argus_plan p;
    rc = argus_plan_build(&q, &rs, &env, &p, msg, sizeof msg);
    if (rc == 0) {
        CHECK(argus_plan_check(&p, msg, sizeof msg) == 0, msg);
        argus_plan_op ops[2];
        memset(ops, 0, sizeof ops);
        ops[0].id = 0x11;
        ops[1].id = 0x12;
        ops[1].in_loop = 1;
        for (size_t t = 0; t < p.ntasks; t++)
            if (p.tasks[t].type == ARGUS_TASK_CONTROL && !p.tasks[t].expanded)
                CHECK(argus_plan_expand(&p, (int)t, ops, 2, msg, sizeof msg) == 0, msg);
        CHECK(argus_plan_check(&p, msg, sizeof msg) == 0, msg);
        write_both(&p);
        argus_plan_free(&p);
    } else {
        CHECK(rc < 0 && msg[0] != '\0', "a refused plan without a message");
    }
    argus_recipes_free(&rs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_request(data, size);
    fuzz_recipes(data, size);
    return 0;
}
