/*
 * Executing a plan through the runtime and the workspace (argus/rt.h,
 * argus/workspace.h; docs/argus-plan.md, "Running a plan").
 *
 * The mapping, and why:
 *   - one runtime task per TRANSFORM and per run (not per COLLECT): a run
 *     is one execution of one program variant with all its collections'
 *     backends, which is what keeps incompatible collections apart and
 *     compatible ones together; the run's worker writes one evidence
 *     output per collection;
 *   - TRANSFORMs and runs are worker processes of one executor command,
 *     the machine-specific part (it builds a variant, or runs one with the
 *     named backends), so that the planner never guesses how a program is
 *     built or profiled here; runs hold the class "gpu";
 *   - SYNTHESIZE tasks are CPU callbacks that join their inputs' evidence
 *     (ARGUS_RT_JOIN: never across program versions or environments) into
 *     an index of what each input is; the synthesis rules themselves are
 *     attribution's (argus/attrib.h) and are not run here, which the index
 *     says;
 *   - CONTROL tasks are callbacks run every time (ARGUS_RT_ALWAYS) that
 *     expand the plan with the operations discovery found and add the new
 *     branches and the synthesis waiting on them.
 * Runtime task IDs are the plan's ("t12", "run3"), so that a task's key,
 * and so its reuse, depends on what it does and not on how it is named.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "argus/plan.h"
#include "argus/rt.h"
#include "argus_internal.h"

typedef struct exec_ctx {
    argus_plan *plan;
    const argus_plan_exec *x;
    pthread_mutex_t mu;   /* the plan, while a CONTROL task expands it */
    char scope[512];
    char *cmd;            /* the executor with "$@" after it, for sh -c */
    unsigned char *run_added; /* per run: added to the runtime */
    size_t run_cap;
    void **keep;          /* the CPU tasks' user data, freed after the run */
    size_t nkeep;
} exec_ctx;

/* Per CPU task: what its callback needs, copied so that it never reads the
 * plan while a CONTROL task may be growing it. */
typedef struct cpu_task {
    exec_ctx *ec;
    int id;               /* the plan task */
    char name[192], rule[64];
    int type;
    size_t ndeps;
    char (*dep_ids)[24];  /* runtime IDs of its inputs */
    char (*dep_names)[192];
    char (*dep_outs)[32]; /* output names read from each */
} cpu_task;

typedef int (*add_fn)(void *where, const argus_rt_task_desc *d, char *msg, size_t msglen);

static int add_rt(void *rt, const argus_rt_task_desc *d, char *msg, size_t msglen)
{
    return argus_rt_add(rt, d, msg, msglen);
}

static int add_ctx(void *ctx, const argus_rt_task_desc *d, char *msg, size_t msglen)
{
    int rc = argus_rt_ctx_add(ctx, d);
    if (rc != 0)
        argus__fail(rc, msg, msglen, "task %s could not be added to the running graph", d->id);
    return rc;
}

static void rt_id(const argus_plan *p, int task, char *buf, size_t len)
{
    const argus_plan_task *t = &p->tasks[task];
    if (t->type == ARGUS_TASK_COLLECT)
        snprintf(buf, len, "run%d", t->run);
    else
        snprintf(buf, len, "t%d", task);
}

/* The variant's artifact as a worker argument: its TRANSFORM's output, or
 * the program itself for the base variant. */
static void artifact_arg(const argus_plan *p, int variant, char *buf, size_t len)
{
    int tt = p->variants[variant].task;
    if (tt < 0)
        snprintf(buf, len, "%s", p->query.program);
    else
        snprintf(buf, len, "{in:t%d/artifact}", tt);
}

static void free_cpu(void *u)
{
    cpu_task *c = u;
    if (c == NULL)
        return;
    free(c->dep_ids);
    free(c->dep_names);
    free(c->dep_outs);
    free(c);
}

/* ---- callbacks -------------------------------------------------------------- */

static int synth_body(argus_rt_ctx *ctx, void *user)
{
    cpu_task *c = user;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return argus_rt_ctx_fail(ctx, "out of memory");
    cJSON_AddStringToObject(o, "schema", "argus.synthesis.index");
    cJSON_AddNumberToObject(o, "version", 1);
    cJSON_AddStringToObject(o, "task", c->name);
    cJSON_AddStringToObject(o, "rule", c->rule);
    cJSON_AddBoolToObject(o, "rule_run", 0);
    cJSON_AddStringToObject(o, "note",
                            "the inputs are joined and indexed; the rule itself belongs to "
                            "attribution (argus/attrib.h) and was not run");
    cJSON *in = cJSON_AddArrayToObject(o, "inputs");
    for (size_t i = 0; in != NULL && i < c->ndeps; i++) {
        const char *h = argus_rt_ctx_input_hash(ctx, c->dep_ids[i], c->dep_outs[i]);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "task", c->dep_names[i]);
        cJSON_AddStringToObject(e, "output", c->dep_outs[i]);
        if (h != NULL)
            cJSON_AddStringToObject(e, "object", h);
        else
            cJSON_AddNullToObject(e, "object");
        cJSON_AddItemToArray(in, e);
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (text == NULL)
        return argus_rt_ctx_fail(ctx, "out of memory");
    int rc = argus_rt_ctx_output(ctx, "synthesis", text, strlen(text));
    cJSON_free(text);
    return rc == 0 ? 0 : argus_rt_ctx_fail(ctx, "cannot store the synthesis index (%d)", rc);
}

static int add_task(exec_ctx *ec, add_fn add, void *where, int task, char *msg, size_t msglen);

static int add_run(exec_ctx *ec, add_fn add, void *where, int run, char *msg, size_t msglen)
{
    argus_plan *p = ec->plan;
    if ((size_t)run >= ec->run_cap) {
        size_t cap = ec->run_cap ? ec->run_cap : 16;
        while (cap <= (size_t)run)
            cap *= 2;
        unsigned char *n = realloc(ec->run_added, cap);
        if (n == NULL)
            return ARGUS_ENOMEM;
        memset(n + ec->run_cap, 0, cap - ec->run_cap);
        ec->run_added = n;
        ec->run_cap = cap;
    }
    if (ec->run_added[run])
        return 0;
    const argus_plan_run *r = &p->runs[run];
    const argus_plan_variant *v = &p->variants[r->variant];
    size_t nargs = 9 + r->ntasks;
    const char **argv = calloc(nargs + 1, sizeof(*argv));
    const char **outs = calloc(r->ntasks + 1, sizeof(*outs));
    char (*outn)[32] = calloc(r->ntasks + 1, sizeof(*outn));
    char (*outa)[48] = calloc(r->ntasks + 1, sizeof(*outa));
    char backends[512] = "", config[4096] = "", art[4200], id[24], dep[24];
    if (argv == NULL || outs == NULL || outn == NULL || outa == NULL) {
        free(argv);
        free(outs);
        free(outn);
        free(outa);
        return ARGUS_ENOMEM;
    }
    size_t bu = 0, cu = 0;
    int w = snprintf(config, sizeof config, "run of %s:", v->name);
    cu = w > 0 ? (size_t)w : 0;
    for (size_t i = 0; i < r->ntasks; i++) {
        const argus_plan_task *t = &p->tasks[r->tasks[i]];
        snprintf(outn[i], sizeof outn[i], "e%d", t->id);
        snprintf(outa[i], sizeof outa[i], "{out:e%d}", t->id);
        outs[i] = outn[i];
        w = snprintf(backends + bu, sizeof backends - bu, "%s%s", i ? "," : "",
                     argus_backend_name(t->backend));
        if (w > 0 && (size_t)w < sizeof backends - bu)
            bu += (size_t)w;
        w = snprintf(config + cu, sizeof config - cu, " %s(effects=%u,observes=%u,retains=%u)",
                     t->name, t->effects, t->observes, t->retains);
        if (w > 0 && (size_t)w < sizeof config - cu)
            cu += (size_t)w;
    }
    artifact_arg(p, r->variant, art, sizeof art);
    snprintf(id, sizeof id, "run%d", run);
    size_t k = 0;
    argv[k++] = "/bin/sh";
    argv[k++] = "-c";
    argv[k++] = ec->cmd;
    argv[k++] = "argus-exec";
    argv[k++] = "run";
    argv[k++] = v->name;
    argv[k++] = backends;
    argv[k++] = art;
    for (size_t i = 0; i < r->ntasks; i++)
        argv[k++] = outa[i];
    argv[k] = NULL;
    const char *deps[1];
    size_t ndeps = 0;
    if (v->task >= 0) {
        snprintf(dep, sizeof dep, "t%d", v->task);
        deps[ndeps++] = dep;
    }
    argus_rt_task_desc d;
    memset(&d, 0, sizeof d);
    d.id = id;
    d.kind = "collect";
    d.deps = deps;
    d.ndeps = ndeps;
    d.excl[0] = "gpu";
    d.timeout_s = p->tasks[r->tasks[0]].timeout_s;
    d.argv = argv;
    d.outputs = outs;
    d.noutputs = r->ntasks;
    d.config = config;
    d.program = p->query.program;
    d.scope = ec->scope;
    int rc = add(where, &d, msg, msglen);
    free(argv);
    free(outs);
    free(outn);
    free(outa);
    if (rc == 0)
        ec->run_added[run] = 1;
    return rc;
}

static int control_body(argus_rt_ctx *ctx, void *user)
{
    cpu_task *c = user;
    exec_ctx *ec = c->ec;
    char msg[1024] = "";
    pthread_mutex_lock(&ec->mu);
    argus_plan *p = ec->plan;
    size_t old_tasks = p->ntasks;
    int *pending = calloc(old_tasks + 1, sizeof(int));
    int rc = pending ? 0 : ARGUS_ENOMEM;
    size_t npend = 0;
    for (size_t i = 0; rc == 0 && i < old_tasks; i++)
        if (p->tasks[i].pending == c->id)
            pending[npend++] = (int)i;
    if (rc == 0)
        rc = argus_plan_expand(p, c->id, ec->x->ops, ec->x->nops, msg, sizeof msg);
    int *order = rc == 0 ? calloc(p->ntasks + 1, sizeof(int)) : NULL;
    if (rc == 0 && order == NULL)
        rc = ARGUS_ENOMEM;
    if (rc == 0)
        rc = argus_plan_order(p, order, msg, sizeof msg);
    for (size_t i = 0; rc == 0 && i < p->ntasks; i++) {
        int t = order[i];
        int is_pending = 0;
        for (size_t k = 0; k < npend; k++)
            is_pending |= pending[k] == t;
        if ((size_t)t >= old_tasks || is_pending)
            rc = add_task(ec, add_ctx, ctx, t, msg, sizeof msg);
    }
    pthread_mutex_unlock(&ec->mu);
    free(order);
    free(pending);
    if (rc != 0)
        return argus_rt_ctx_fail(ctx, "%s: %s", c->name, msg[0] ? msg : argus_strerror(rc));
    /* What was discovered, as this task's output. */
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a != NULL && i < ec->x->nops; i++) {
        const argus_plan_op *op = &ec->x->ops[i];
        cJSON *e = cJSON_CreateObject();
        char idb[32];
        snprintf(idb, sizeof idb, "0x%07x.%u", (unsigned)(op->id >> 16),
                 (unsigned)(op->id & 0xffffu));
        cJSON_AddStringToObject(e, "id", idb);
        cJSON_AddStringToObject(e, "kind", argus_async_kind_name(op->kind));
        cJSON_AddStringToObject(e, "completion", argus_async_completion(op->kind));
        cJSON_AddBoolToObject(e, "in_loop", op->in_loop);
        cJSON_AddItemToArray(a, e);
    }
    char *text = a ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    if (text == NULL)
        return argus_rt_ctx_fail(ctx, "out of memory");
    rc = argus_rt_ctx_output(ctx, "ops", text, strlen(text));
    cJSON_free(text);
    return rc == 0 ? 0 : argus_rt_ctx_fail(ctx, "cannot store the operations (%d)", rc);
}

/* ---- adding a plan task ------------------------------------------------------- */

static int add_task(exec_ctx *ec, add_fn add, void *where, int task, char *msg, size_t msglen)
{
    argus_plan *p = ec->plan;
    const argus_plan_task *t = &p->tasks[task];
    if (t->type == ARGUS_TASK_COLLECT)
        return add_run(ec, add, where, t->run, msg, msglen);
    char id[24];
    snprintf(id, sizeof id, "t%d", task);
    argus_rt_task_desc d;
    memset(&d, 0, sizeof d);
    d.id = id;
    d.kind = argus_task_type_name(t->type);
    d.timeout_s = t->timeout_s;
    d.program = p->query.program;
    d.scope = ec->scope;
    char config[1024];
    snprintf(config, sizeof config, "%s rule=%s variant=%s", t->name, t->rule,
             t->variant >= 0 ? p->variants[t->variant].name : "-");
    d.config = config;
    if (t->type == ARGUS_TASK_TRANSFORM) {
        const argus_plan_variant *v = &p->variants[t->variant];
        char art[4200], opb[32], itb[24], deps_s[2][24];
        const char *deps[2];
        size_t nd = 0;
        for (size_t i = 0; i < t->ndeps && nd < 2; i++) {
            snprintf(deps_s[nd], sizeof deps_s[nd], "t%d", t->deps[i]);
            deps[nd] = deps_s[nd];
            nd++;
        }
        artifact_arg(p, v->parent, art, sizeof art);
        snprintf(opb, sizeof opb, "0x%07x.%u", (unsigned)(t->op >> 16), (unsigned)(t->op & 0xffffu));
        snprintf(itb, sizeof itb, "%lld", (long long)t->iter);
        const char *argv[] = {"/bin/sh", "-c", ec->cmd, "argus-exec", "transform",
                              argus_transform_name(t->transform), v->name, art, opb, itb,
                              "{out:artifact}", NULL};
        const char *outs[] = {"artifact"};
        d.deps = deps;
        d.ndeps = nd;
        d.argv = argv;
        d.outputs = outs;
        d.noutputs = 1;
        return add(where, &d, msg, msglen);
    }
    cpu_task *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return ARGUS_ENOMEM;
    c->ec = ec;
    c->id = task;
    c->type = t->type;
    snprintf(c->name, sizeof c->name, "%s", t->name);
    snprintf(c->rule, sizeof c->rule, "%s", t->rule);
    c->dep_ids = calloc(t->ndeps + 1, sizeof(*c->dep_ids));
    c->dep_names = calloc(t->ndeps + 1, sizeof(*c->dep_names));
    c->dep_outs = calloc(t->ndeps + 1, sizeof(*c->dep_outs));
    const char **deps = calloc(t->ndeps + 1, sizeof(*deps));
    if (c->dep_ids == NULL || c->dep_names == NULL || c->dep_outs == NULL || deps == NULL) {
        free(deps);
        free_cpu(c);
        return ARGUS_ENOMEM;
    }
    /* Inputs: a collection is read from its run's worker, one output per
     * collection; a run named twice is one dependency. */
    size_t nd = 0;
    for (size_t i = 0; i < t->ndeps; i++) {
        const argus_plan_task *dt = &p->tasks[t->deps[i]];
        rt_id(p, dt->id, c->dep_ids[c->ndeps], sizeof c->dep_ids[0]);
        snprintf(c->dep_names[c->ndeps], sizeof c->dep_names[0], "%s", dt->name);
        snprintf(c->dep_outs[c->ndeps], sizeof c->dep_outs[0], "%s",
                 dt->type == ARGUS_TASK_COLLECT     ? ""
                 : dt->type == ARGUS_TASK_TRANSFORM ? "artifact"
                 : dt->type == ARGUS_TASK_CONTROL   ? "ops"
                                                    : "synthesis");
        if (dt->type == ARGUS_TASK_COLLECT)
            snprintf(c->dep_outs[c->ndeps], sizeof c->dep_outs[0], "e%d", dt->id);
        int seen = 0;
        for (size_t k = 0; k < nd; k++)
            seen |= strcmp(deps[k], c->dep_ids[c->ndeps]) == 0;
        if (!seen)
            deps[nd++] = c->dep_ids[c->ndeps];
        c->ndeps++;
    }
    const char *outs[1];
    d.deps = deps;
    d.ndeps = nd;
    d.user = c;
    d.outputs = outs;
    d.noutputs = 1;
    if (t->type == ARGUS_TASK_CONTROL) {
        d.exec = control_body;
        d.flags = ARGUS_RT_ALWAYS;
        outs[0] = "ops";
    } else {
        d.exec = synth_body;
        d.flags = ARGUS_RT_JOIN | ARGUS_RT_JOIN_ANY_SCOPE;
        outs[0] = "synthesis";
    }
    int rc = add(where, &d, msg, msglen);
    free(deps);
    if (rc != 0) {
        free_cpu(c);
        return rc;
    }
    /* The runtime holds the pointer until it is freed; argus_plan_execute
     * frees them all after that. Added under ec->mu or before the run. */
    void **list = realloc(ec->keep, (ec->nkeep + 1) * sizeof(void *));
    if (list == NULL)
        return ARGUS_ENOMEM; /* c stays with the runtime, which may run it */
    ec->keep = list;
    ec->keep[ec->nkeep++] = c;
    return 0;
}

int argus_plan_execute(argus_plan *plan, const argus_plan_exec *x, FILE *report, char *msg,
                       size_t msglen)
{
    if (plan == NULL || x == NULL || x->ws_dir == NULL)
        return ARGUS_EINVAL;
    if (x->executor == NULL || x->executor[0] == '\0')
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "running a plan needs an executor: the command that builds a "
                           "variant and runs one with the named backends on this machine "
                           "(--executor CMD; docs/argus-plan.md, \"Running a plan\")");
    exec_ctx ec;
    memset(&ec, 0, sizeof ec);
    ec.plan = plan;
    ec.x = x;
    pthread_mutex_init(&ec.mu, NULL);
    /* The scope in the task keys: the query's request form, so that the
     * same evidence under another scope is another key. */
    const argus_query_scope *s = &plan->query.scope;
    snprintf(ec.scope, sizeof ec.scope, "region=0x%07x role=%s iter=%lld:%lld cta=%lld:%lld "
                                        "sm=%lld:%lld warp=%lld:%lld",
             plan->query.region_id, s->role, (long long)s->iter_lo, (long long)s->iter_hi,
             (long long)s->cta_lo, (long long)s->cta_hi, (long long)s->sm_lo,
             (long long)s->sm_hi, (long long)s->warp_lo, (long long)s->warp_hi);
    argus_ws *ws = NULL;
    argus_rt *rt = NULL;
    int *order = NULL;
    /* sh -c 'CMD "$@"' argus-exec ARGS...: the executor may be a command
     * with its own arguments, and gets the task's as its last ones. */
    size_t cl = strlen(x->executor) + 8;
    ec.cmd = malloc(cl);
    if (ec.cmd == NULL) {
        pthread_mutex_destroy(&ec.mu);
        return ARGUS_ENOMEM;
    }
    snprintf(ec.cmd, cl, "%s \"$@\"", x->executor);
    int rc = argus_ws_open(x->ws_dir, 1, &ws, msg, msglen);
    if (rc == 0) {
        argus_rt_opts o;
        memset(&o, 0, sizeof o);
        o.cpu_threads = x->cpu_threads;
        o.progress = x->progress ? argus_rt_progress_print : NULL;
        o.progress_user = x->progress;
        rc = argus_rt_new(ws, &o, &rt);
        if (rc != 0)
            argus__fail(rc, msg, msglen, "cannot start the runtime: %s", argus_ws_strerror(rc));
    }
    if (rc == 0 && (order = calloc(plan->ntasks + 1, sizeof(int))) == NULL)
        rc = ARGUS_ENOMEM;
    if (rc == 0)
        rc = argus_plan_order(plan, order, msg, msglen);
    for (size_t i = 0; rc == 0 && i < plan->ntasks; i++)
        if (plan->tasks[order[i]].pending < 0)
            rc = add_task(&ec, add_rt, rt, order[i], msg, msglen);
    if (rc == 0) {
        rc = argus_rt_run(rt);
        if (report != NULL) {
            argus_rt_print(rt, report);
            /* The runtime's IDs are the plan's; say what each one is. */
            fprintf(report, "where:\n");
            for (size_t i = 0; i < plan->ntasks; i++)
                if (plan->tasks[i].type != ARGUS_TASK_COLLECT)
                    fprintf(report, "  t%zu = %s\n", i, plan->tasks[i].name);
            for (size_t r = 0; r < plan->nruns; r++) {
                fprintf(report, "  run%zu = v%d:", r, plan->runs[r].variant);
                for (size_t k = 0; k < plan->runs[r].ntasks; k++)
                    fprintf(report, " %s", plan->tasks[plan->runs[r].tasks[k]].name);
                fputc('\n', report);
            }
        }
        if (rc != 0)
            argus__fail(rc, msg, msglen,
                        "some tasks failed (listed with their reasons); what finished is kept "
                        "in %s, and running the query again runs only what failed",
                        x->ws_dir);
    }
    free(order);
    argus_rt_free(rt);
    argus_ws_close(ws);
    for (size_t i = 0; i < ec.nkeep; i++)
        free_cpu(ec.keep[i]);
    free(ec.keep);
    free(ec.run_added);
    free(ec.cmd);
    pthread_mutex_destroy(&ec.mu);
    return rc;
}
