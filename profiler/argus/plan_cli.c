/*
 * argus query / argus plan: the command-line face of the planner
 * (docs/argus-plan.md).
 *
 *   argus plan  QUERY [PLAN OPTIONS] [--format text|json | --json] [-o FILE] [--strict]
 *   argus query QUERY [PLAN OPTIONS] [--run --executor CMD [--ws DIR]]
 *
 * QUERY is --program P [--registry REG] [--region R] --signal S... [--metric
 * M...] [--scope SPEC...] (argus_query_from_args), or --json FILE|- (a
 * request, schema argus.query v1); options given beside --json override its
 * fields. For argus plan, a --json with no request after it (the last word,
 * or followed by another option) means --format json. PLAN OPTIONS: --recipes PATH, --sm N (target architecture, 90),
 * --allow CAP / --deny CAP (a capability: admin_counters, pc_sampling,
 * sass_metrics, sanitizer_patch, bpf), --assume-all (every capability), and
 * --discovered FILE (operations found by discovery, which expand every
 * CONTROL task: a JSON array of {"id": "0xd3fb29b.0", "kind", "completion",
 * "in_loop"}, as discovery prints them).
 *
 * --run executes the plan through the runtime on the workspace DIR (default
 * .argus-ws), each TRANSFORM and run by CMD (argus_plan_execute); the
 * CONTROL tasks discover the region's operations in their variant's PTX,
 * unless --discovered gives them; --results DIR gets each signal's
 * synthesis as DIR/SIGNAL.json.
 *
 * Exit status: 0; 1 bad input or a failed run (the message names the file, field or name,
 * with the nearest valid names); 2 usage; 3 with --strict when the plan is
 * partial.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "argus/plan.h"
#include "argus/query.h"
#include "argus/workspace.h"
#include "argus_internal.h"
#include "core.h"
#include "json.h"
#include "plan_cli.h"

#define MSG_LEN 2048

static void usage(FILE *f)
{
    fputs("usage: argus plan  (--program P --signal S [...] | --json FILE|-) [options]\n"
          "       argus query (--program P --signal S [...] | --json FILE|-) [options]\n"
          "                   [--run --executor CMD [--ws DIR] [--results DIR] [--discovered OPS.json]]\n"
          "query: --program P  --registry REG  --region NAME|PATH|0xID  --signal S[,S]\n"
          "       --metrics M[,M] (or --metric M)  --scope role=R,iter=LO:HI,cta=LO:HI,sm=LO:HI,warp=LO:HI\n"
          "       (--role --iter --cta --sm --warp as shorthands)\n"
          "signals: region_time kernel_time stall_reasons_pc inst_executed_pc hw_metrics\n"
          "         async_latency\n"
          "plan:  --recipes PATH  --target-sm N  --allow CAP  --deny CAP  --assume-all\n"
          "       --discovered OPS.json  --format text|json (or a bare --json)  -o FILE  --strict\n"
          "(docs/argus-plan.md)\n",
          f);
}

/* An operation ID as discovery prints it, "0x%07x.%u" (region ID and
 * ordinal), or the whole 64-bit value ("0xd3fb29b0001"). 0 when malformed. */
static uint64_t parse_op_id(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 16);
    if (errno || end == s || (s[0] != '0' || (s[1] != 'x' && s[1] != 'X')))
        return 0;
    if (*end == '\0')
        return v;
    if (*end != '.' || v == 0 || v > 0x0fffffffULL)
        return 0;
    const char *o = end + 1;
    unsigned long ord = strtoul(o, &end, 10);
    if (errno || end == o || *end != '\0' || ord > 0xffffUL)
        return 0;
    return (v << 16) | ord;
}

/* The kind of an operation by its name ("cp.async", "tma", "wgmma"), or -1. */
static int async_kind(const char *name)
{
    for (int k = 0; k < ARGUS_ASYNC_NKINDS; k++)
        if (strcmp(argus_async_kind_name(k), name) == 0)
            return k;
    return -1;
}

/* Reads discovered operations: [{"id":"0xd3fb29b.0","kind":"cp.async",
 * "in_loop":true}, ...] (a "completion" is what the kind says, and not
 * read). */
static int load_ops(const char *path, argus_plan_op **ops, size_t *n, char *msg, size_t msglen)
{
    cJSON *root = NULL;
    int rc = mosaic__json_read_file(path, 16L << 20, &root, msg, msglen);
    if (rc != 0)
        return ARGUS_EFORMAT;
    *ops = NULL;
    *n = 0;
    if (!cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return argus__fail(ARGUS_EFORMAT, msg, msglen,
                           "%s: expected an array of operations [{\"id\": \"0xd3fb29b.0\", ...}]",
                           path);
    }
    size_t cnt = (size_t)cJSON_GetArraySize(root);
    *ops = calloc(cnt ? cnt : 1, sizeof(**ops));
    if (*ops == NULL) {
        cJSON_Delete(root);
        return ARGUS_ENOMEM;
    }
    size_t i = 0;
    for (const cJSON *o = root->child; o; o = o->next, i++) {
        argus_plan_op *op = &(*ops)[i];
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
        const cJSON *loop = cJSON_GetObjectItemCaseSensitive(o, "in_loop");
        op->id = cJSON_IsObject(o) && cJSON_IsString(id) ? parse_op_id(id->valuestring) : 0;
        op->kind = cJSON_IsString(kind) ? async_kind(kind->valuestring) : -1;
        if (op->id == 0 || (loop != NULL && !cJSON_IsBool(loop)) || op->kind < 0) {
            cJSON_Delete(root);
            free(*ops);
            *ops = NULL;
            return argus__fail(ARGUS_EFORMAT, msg, msglen,
                               "%s: [%zu]: expected \"id\" as discovery prints it "
                               "(\"0xd3fb29b.0\": region ID and ordinal), \"kind\" "
                               "cp.async, tma or wgmma, and \"in_loop\" true or false",
                               path, i);
        }
        op->region = ARGUS_OP_REGION(op->id);
        op->ordinal = ARGUS_OP_ORDINAL(op->id);
        op->in_loop = cJSON_IsTrue(loop);
    }
    *n = cnt;
    cJSON_Delete(root);
    return 0;
}

int argus__cli_plan(int is_query, int argc, char **argv)
{
    argus_query q, over;
    argus_query_init(&q);
    argus_query_init(&over);
    char msg[MSG_LEN] = "";
    const char *request = NULL, *recipes = NULL, *out = NULL, *discovered = NULL;
    const char *ws_dir = ARGUS_WS_DEFAULT_DIR, *executor = NULL, *results = NULL;
    int json = 0, strict = 0, run = 0, assume_all = 0;
    unsigned sm = 90;
    /* Capabilities named on the command line, applied after detection. */
    const char *caps[32];
    int caps_on[32];
    size_t ncaps = 0;
    for (int i = 0; i < argc;) {
        int used = 0;
        if (argus_query_from_args(&over, argc - i, argv + i, &used, msg, sizeof msg) != 0) {
            fprintf(stderr, "argus: %s\n", msg);
            return 1;
        }
        i += used;
        if (i >= argc)
            break;
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--strict") == 0 && !is_query) {
            strict = 1;
            i++;
            continue;
        }
        if (strcmp(a, "--assume-all") == 0) {
            assume_all = 1;
            i++;
            continue;
        }
        if (strcmp(a, "--run") == 0 && is_query) {
            run = 1;
            i++;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        /* `argus plan ... --json` with no request after it (last, or
         * before another option) asks for the plan as JSON; `--json FILE`
         * and `--json -` name the request. */
        if (strcmp(a, "--json") == 0 && !is_query &&
            (v == NULL || (v[0] == '-' && v[1] != '\0'))) {
            json = 1;
            i++;
            continue;
        }
        if (v == NULL || a[0] != '-') {
            fprintf(stderr, a[0] == '-' ? "argus: %s needs a value\n" : "argus: unexpected %s\n", a);
            usage(stderr);
            return 2;
        }
        i += 2;
        if (strcmp(a, "--json") == 0) {
            request = v;
        } else if (strcmp(a, "--recipes") == 0) {
            recipes = v;
        } else if (strcmp(a, "-o") == 0 && !is_query) {
            out = v;
        } else if (strcmp(a, "--discovered") == 0) {
            discovered = v;
        } else if (strcmp(a, "--ws") == 0 && is_query) {
            ws_dir = v;
        } else if (strcmp(a, "--executor") == 0 && is_query) {
            executor = v;
        } else if (strcmp(a, "--results") == 0 && is_query) {
            results = v;
        } else if (strcmp(a, "--format") == 0 && !is_query) {
            if (strcmp(v, "json") != 0 && strcmp(v, "text") != 0) {
                fprintf(stderr, "argus: --format %s: text or json\n", v);
                return 2;
            }
            json = strcmp(v, "json") == 0;
        } else if (strcmp(a, "--target-sm") == 0) {
            char *end;
            errno = 0;
            unsigned long s = strtoul(v, &end, 10);
            if (errno || *end != '\0' || s < 30 || s > 200) {
                fprintf(stderr, "argus: --target-sm %s: an architecture number such as 90 "
                                "(sm_90)\n", v);
                return 2;
            }
            sm = (unsigned)s;
        } else if (strcmp(a, "--allow") == 0 || strcmp(a, "--deny") == 0) {
            if (ncaps >= 32) {
                fprintf(stderr, "argus: more than 32 --allow/--deny\n");
                return 2;
            }
            caps[ncaps] = v;
            caps_on[ncaps++] = a[2] == 'a';
        } else {
            fprintf(stderr, "argus: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (request != NULL) {
        if (argus_query_load_json(&q, request, msg, sizeof msg) != 0) {
            fprintf(stderr, "argus: %s\n", msg);
            return 1;
        }
    }
    /* Command-line fields override the request's (or make the query). */
    if (over.program[0])
        memcpy(q.program, over.program, sizeof q.program);
    if (over.registry[0])
        memcpy(q.registry, over.registry, sizeof q.registry);
    if (over.region[0])
        memcpy(q.region, over.region, sizeof q.region);
    q.signals |= over.signals;
    for (size_t k = 0; k < over.nmetrics && q.nmetrics < ARGUS_QUERY_MAX_METRICS; k++)
        memcpy(q.metrics[q.nmetrics++], over.metrics[k], sizeof q.metrics[0]);
    argus_query_scope *s = &q.scope, *o = &over.scope;
    if (o->role[0])
        memcpy(s->role, o->role, sizeof s->role);
    if (o->iter_lo >= 0) {
        s->iter_lo = o->iter_lo;
        s->iter_hi = o->iter_hi;
    }
    if (o->cta_lo >= 0) {
        s->cta_lo = o->cta_lo;
        s->cta_hi = o->cta_hi;
    }
    if (o->sm_lo >= 0) {
        s->sm_lo = o->sm_lo;
        s->sm_hi = o->sm_hi;
    }
    if (o->warp_lo >= 0) {
        s->warp_lo = o->warp_lo;
        s->warp_hi = o->warp_hi;
    }
    if (q.program[0] == '\0' || q.signals == 0) {
        fprintf(stderr, "argus: the query needs %s\n",
                q.program[0] == '\0' ? "--program P (or \"program\" in the --json request)"
                                     : "at least one --signal (or \"signals\" in the request)");
        usage(stderr);
        return 2;
    }
    argus_registry *reg = NULL;
    if ((q.region[0] || q.scope.role[0]) && argus_query_registry(&q, &reg, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus: %s\n", msg);
        return 1;
    }
    int rc = argus_query_resolve(&q, reg, msg, sizeof msg);
    argus_registry_free(reg);
    if (rc != 0) {
        fprintf(stderr, "argus: %s\n", msg);
        return 1;
    }
    argus_plan_env env;
    if (assume_all)
        argus_plan_env_all(&env, sm);
    else
        argus_plan_env_detect(&env, sm);
    for (size_t k = 0; k < ncaps; k++)
        if (argus_plan_env_set(&env, caps[k], caps_on[k], msg, sizeof msg) != 0) {
            fprintf(stderr, "argus: --%s %s: %s\n", caps_on[k] ? "allow" : "deny", caps[k], msg);
            return 2;
        }
    argus_recipes rs;
    const char *rpath = recipes ? recipes : argus_recipes_default_path();
    if (argus_recipes_load(rpath, &rs, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus: %s\n", msg);
        return 1;
    }
    argus_plan plan;
    rc = argus_plan_build(&q, &rs, &env, &plan, msg, sizeof msg);
    argus_recipes_free(&rs);
    if (rc != 0) {
        fprintf(stderr, "argus: %s (recipes from %s)\n", msg, rpath);
        return 1;
    }
    argus_plan_op *ops = NULL;
    size_t nops = 0;
    if (discovered != NULL && load_ops(discovered, &ops, &nops, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus: --discovered %s: %s\n", discovered, msg);
        argus_plan_free(&plan);
        return 1;
    }
    /* Planning alone expands the CONTROL tasks with the given operations;
     * a run leaves that to the CONTROL tasks themselves. */
    for (size_t t = 0; discovered != NULL && !run && t < plan.ntasks; t++)
        if (plan.tasks[t].type == ARGUS_TASK_CONTROL && !plan.tasks[t].expanded &&
            argus_plan_expand(&plan, (int)t, ops, nops, msg, sizeof msg) != 0) {
            fprintf(stderr, "argus: --discovered %s: %s\n", discovered, msg);
            free(ops);
            argus_plan_free(&plan);
            return 1;
        }
    if (argus_plan_check(&plan, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus: internal error, the plan is not valid: %s\n", msg);
        argus_plan_free(&plan);
        return 1;
    }
    int status = 0;
    if (is_query) {
        /* The query as the planner understood it, as a request an agent
         * can keep and send again, then what the plan would answer. */
        if (!run && argus_query_write_json(&plan.query, stdout) != 0)
            status = 1;
        fprintf(stderr, "argus: query resolved (region %s); its plan has %zu tasks in %zu runs%s\n",
                plan.query.region_id ? plan.query.region_path : "(whole kernel)", plan.ntasks,
                plan.nruns, plan.partial ? ", PARTIAL (see argus plan)" : "");
        if (run) {
            argus_plan_exec x;
            memset(&x, 0, sizeof x);
            x.ws_dir = ws_dir;
            x.executor = executor;
            x.ops_given = discovered != NULL;
            x.ops = ops;
            x.nops = nops;
            x.progress = stderr;
            x.results_dir = results;
            if (argus_plan_execute(&plan, &x, stdout, msg, sizeof msg) != 0) {
                fprintf(stderr, "argus: --run: %s\n", msg);
                status = 1;
            }
        }
    } else {
        FILE *f = out ? fopen(out, "w") : stdout;
        if (f == NULL) {
            fprintf(stderr, "argus: -o %s: %s\n", out, strerror(errno));
            argus_plan_free(&plan);
            return 1;
        }
        rc = json ? argus_plan_write_json(&plan, f) : argus_plan_write_text(&plan, f);
        if (rc != 0 || (out && fclose(f) != 0)) {
            fprintf(stderr, "argus: %s: cannot write the plan\n", out ? out : "<stdout>");
            status = 1;
        }
        if (status == 0 && strict && plan.partial)
            status = 3;
    }
    free(ops);
    argus_plan_free(&plan);
    return status;
}
