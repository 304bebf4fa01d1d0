/*
 * Synthesis rules (argus/synth.h; docs/argus-plan.md, "Synthesis").
 *
 * Each rule reads the evidence of its inputs (argus.evidence v1, the
 * formats docs/argus-plan.md "Evidence" defines), checks that the evidence
 * is the one the plan ran (its backend and variant), and writes an
 * argus.synthesis v1 result. The numbers come from the existing pieces of
 * Argus rather than new arithmetic: region buffers go through the decoder
 * and the statistics of part 1 (argus_decode, argus_stats), PC-keyed
 * metrics through attribution (attrib.h), cubins through the cubin reader
 * (elf.c); what this file adds is the joins and the marks.
 *
 * Why a result is written even when inputs are missing: a synthesis that
 * failed would take the other branches' numbers with it, and issue 13 asks
 * for partial results kept and marked. The result says "complete": false
 * and lists each problem with the task it concerns; the caller (plan_run.c)
 * reports it as a failure of the query.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "argus/attrib.h"
#include "argus/discover.h"
#include "argus/shim.h"
#include "argus/synth.h"
#include "argus_internal.h"
#include "json.h"

/* ---- base64 ------------------------------------------------------------- */

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int argus_base64_decode(const char *s, size_t len, unsigned char **out, size_t *outlen,
                        char *msg, size_t msglen)
{
    if (s == NULL || out == NULL || outlen == NULL)
        return ARGUS_EINVAL;
    *out = NULL;
    *outlen = 0;
    if (len % 4 != 0)
        return argus__fail(ARGUS_EFORMAT, msg, msglen,
                           "base64: %zu characters, not a multiple of 4 (padded base64, no line "
                           "breaks: base64 -w0)",
                           len);
    unsigned char *b = malloc(len / 4 * 3 + 1);
    if (b == NULL)
        return ARGUS_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == len && k >= 2 && (k == 3 || s[i + 3] == '=')) {
                v[k] = 0;
                pad++;
                continue;
            }
            v[k] = pad ? -1 : b64_value(c);
            if (v[k] < 0) {
                free(b);
                return argus__fail(ARGUS_EFORMAT, msg, msglen,
                                   "base64: character %zu (0x%02x) is not in the alphabet",
                                   i + (size_t)k, c);
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
                     (uint32_t)v[3];
        b[n++] = (unsigned char)(w >> 16);
        if (pad < 2)
            b[n++] = (unsigned char)(w >> 8);
        if (pad < 1)
            b[n++] = (unsigned char)w;
    }
    *out = b;
    *outlen = n;
    return 0;
}

/* ---- the result being built ---------------------------------------------- */

typedef struct synth {
    const argus_synth_req *r;
    cJSON *root, *inputs, *problems, *results;
    cJSON **in_entry; /* per input: its entry in "inputs" */
    size_t nproblems;
    char first[512];
    int oom;
} synth;

static void problem(synth *s, long input, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A problem with an input (its task named) or with the whole synthesis
 * (input -1): listed, and the result is not complete. */
static void problem(synth *s, long input, const char *fmt, ...)
{
    char why[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    cJSON *p = cJSON_CreateObject();
    if (p == NULL) {
        s->oom = 1;
        return;
    }
    if (input >= 0) {
        const argus_synth_input *in = &s->r->in[input];
        cJSON_AddNumberToObject(p, "input", (double)input);
        cJSON_AddStringToObject(p, "task", in->task ? in->task : "");
        cJSON_AddStringToObject(p, "rt_id", in->rt_id ? in->rt_id : "");
    }
    cJSON_AddStringToObject(p, "why", why);
    cJSON_AddItemToArray(s->problems, p);
    if (s->nproblems++ == 0)
        snprintf(s->first, sizeof s->first, "%.200s%s%.300s", input >= 0 ? s->r->in[input].task : "",
                 input >= 0 ? ": " : "", why);
}

/* The input's state in "inputs": used, missing, refused, unavailable. */
static void in_state(synth *s, size_t i, const char *state)
{
    cJSON *e = s->in_entry[i];
    cJSON_DeleteItemFromObjectCaseSensitive(e, "state");
    cJSON_AddStringToObject(e, "state", state);
}

/* A number with its unit, mark and the inputs it came from (-1 ends). */
static cJSON *num(double v, const char *unit, int mark, long a, long b)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    if (isfinite(v))
        cJSON_AddNumberToObject(o, "value", v);
    else
        cJSON_AddNullToObject(o, "value");
    cJSON_AddStringToObject(o, "unit", unit);
    cJSON_AddStringToObject(o, "mark", argus_mark_name(mark));
    cJSON *from = cJSON_AddArrayToObject(o, "from");
    if (a >= 0)
        cJSON_AddItemToArray(from, cJSON_CreateNumber((double)a));
    if (b >= 0 && b != a)
        cJSON_AddItemToArray(from, cJSON_CreateNumber((double)b));
    return o;
}

static void put_num(cJSON *obj, const char *key, double v, const char *unit, int mark, long a,
                    long b)
{
    cJSON_AddItemToObject(obj, key, num(v, unit, mark, a, b));
}

static const char *str_item(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* A whole number >= 0 below 2^53, or -1. */
static double count_item(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= 9007199254740992.0 ||
        x->valuedouble != floor(x->valuedouble))
        return -1;
    return x->valuedouble;
}

/* ---- reading an input ------------------------------------------------------ */

/* Parses input i as JSON of the given schema; NULL (the problem said)
 * when it is missing or malformed. */
static cJSON *parse_input(synth *s, size_t i, const char *schema)
{
    const argus_synth_input *in = &s->r->in[i];
    if (in->data == NULL) {
        in_state(s, i, "missing");
        problem(s, (long)i, "no output %s: %s did not succeed (%s)",
                in->output ? in->output : "", in->rt_id ? in->rt_id : "its task",
                in->missing && in->missing[0] ? in->missing : "it did not finish");
        return NULL;
    }
    cJSON *o = NULL;
    char why[512] = "";
    if (mosaic__json_parse_strict(in->task, in->data, in->len, &o, why, sizeof why) != 0) {
        in_state(s, i, "refused");
        problem(s, (long)i, "not JSON (%s); the executor must write %s v%d (docs/argus-plan.md)",
                why, schema, 1);
        return NULL;
    }
    const char *sch = str_item(o, "schema");
    double ver = count_item(o, "version");
    if (sch == NULL || strcmp(sch, schema) != 0 || ver != 1) {
        in_state(s, i, "refused");
        problem(s, (long)i, "schema \"%s\" version %g, not %s version 1", sch ? sch : "(none)",
                ver, schema);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int argus_evidence_check(const void *data, size_t len, const char *backend, const char *variant,
                         char *why, size_t whylen)
{
    cJSON *o = NULL;
    char err[512] = "";
    if (data == NULL || mosaic__json_parse_strict("the evidence", data, len, &o, err, sizeof err) != 0)
        return argus__fail(ARGUS_EFORMAT, why, whylen,
                           "not JSON (%s); the executor must write argus.evidence v1 "
                           "(docs/argus-plan.md, \"Evidence\")",
                           data ? err : "no data");
    const char *sch = str_item(o, "schema"), *be = str_item(o, "backend");
    const char *var = str_item(o, "variant"), *st = str_item(o, "status");
    double ver = count_item(o, "version");
    int rc = 0;
    if (sch == NULL || strcmp(sch, ARGUS_EVIDENCE_SCHEMA) != 0 || ver != ARGUS_EVIDENCE_VERSION)
        rc = argus__fail(ARGUS_EFORMAT, why, whylen, "schema \"%s\" version %g, not %s version %d",
                         sch ? sch : "(none)", ver, ARGUS_EVIDENCE_SCHEMA,
                         ARGUS_EVIDENCE_VERSION);
    else if (be == NULL || backend == NULL || strcmp(be, backend) != 0)
        rc = argus__fail(ARGUS_EFORMAT, why, whylen,
                         "evidence of backend \"%s\" where the run was asked for %s; not joined",
                         be ? be : "(none)", backend ? backend : "(none)");
    else if (var == NULL || variant == NULL || strcmp(var, variant) != 0)
        rc = argus__fail(ARGUS_EFORMAT, why, whylen,
                         "evidence from variant \"%.200s\", not the variant the run executed "
                         "(\"%.200s\"): evidence from a non-matching variant is never joined",
                         var ? var : "(none)", variant ? variant : "(none)");
    else if (st == NULL || (strcmp(st, "ok") != 0 && strcmp(st, "unavailable") != 0 &&
                            strcmp(st, "failed") != 0))
        rc = argus__fail(ARGUS_EFORMAT, why, whylen,
                         "status \"%s\": ok, unavailable or failed", st ? st : "(none)");
    cJSON_Delete(o);
    return rc;
}

/* Evidence input i, checked against the backend and variant the plan ran
 * it with; NULL when missing, refused or not collected (each said). */
static cJSON *evidence(synth *s, size_t i)
{
    const argus_synth_input *in = &s->r->in[i];
    if (in->data == NULL)
        return parse_input(s, i, ARGUS_EVIDENCE_SCHEMA); /* says it is missing */
    char why[768];
    if (argus_evidence_check(in->data, in->len, in->backend, in->variant, why, sizeof why) != 0) {
        in_state(s, i, "refused");
        problem(s, (long)i, "%s", why);
        return NULL;
    }
    cJSON *o = parse_input(s, i, ARGUS_EVIDENCE_SCHEMA);
    if (o == NULL)
        return NULL;
    const char *st = str_item(o, "status"), *wy = str_item(o, "why");
    const char *tool = str_item(o, "tool");
    if (tool != NULL)
        cJSON_AddStringToObject(s->in_entry[i], "tool", tool);
    if (strcmp(st, "ok") != 0) {
        in_state(s, i, "unavailable");
        problem(s, (long)i, "%s evidence %s: %s", in->backend, st,
                wy && wy[0] ? wy : "(no reason given)");
        cJSON_Delete(o);
        return NULL;
    }
    in_state(s, i, "used");
    return o;
}

/* The first input of that kind (and, for evidence, backend), or -1. */
static long find_input(const synth *s, int kind, const char *backend, size_t from)
{
    for (size_t i = from; i < s->r->nin; i++) {
        const argus_synth_input *in = &s->r->in[i];
        if (in->kind != kind)
            continue;
        if (backend != NULL && (in->backend == NULL || strcmp(in->backend, backend) != 0))
            continue;
        return (long)i;
    }
    return -1;
}

/* The rule's one evidence input of a backend and the array at key (a
 * "a.b" path) in it: the parsed evidence in *o (the caller deletes it) and
 * the array, or NULL with the problem said. Returns the input's index, or
 * -1 when there is none. */
static long evidence_array(synth *s, const char *backend, const char *key, const char *what,
                           cJSON **o, const cJSON **arr)
{
    *o = NULL;
    *arr = NULL;
    long ei = find_input(s, ARGUS_SYNTH_IN_EVIDENCE, backend, 0);
    if (ei < 0) {
        problem(s, -1, "no %s evidence among the inputs", backend);
        return -1;
    }
    *o = evidence(s, (size_t)ei);
    if (*o == NULL)
        return ei;
    const cJSON *x = *o;
    char part[64];
    for (const char *k = key; x != NULL && *k;) {
        const char *dot = strchr(k, '.');
        size_t n = dot ? (size_t)(dot - k) : strlen(k);
        snprintf(part, sizeof part, "%.*s", (int)n, k);
        x = cJSON_GetObjectItemCaseSensitive(x, part);
        k += n + (dot != NULL);
    }
    if (!cJSON_IsArray(x)) {
        in_state(s, (size_t)ei, "refused");
        problem(s, ei, "%s evidence without %s[] (%s)", backend, key, what);
        return ei;
    }
    *arr = x;
    return ei;
}

/* ---- region buffers ---------------------------------------------------------- */

/* One launch's decoded buffer. */
typedef struct launch {
    char kernel[256];
    argus_trace t;
    int ok;
} launch;

/* Decodes the launches of region_runtime evidence o (input i). */
static int decode_launches(synth *s, size_t i, const cJSON *o, launch **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(o, "launches");
    if (!cJSON_IsArray(ls) || cJSON_GetArraySize(ls) == 0) {
        in_state(s, i, "refused");
        problem(s, (long)i, "region_runtime evidence without launches (an array of {kernel, "
                            "raw_base64}: each armed launch's region buffer)");
        return 0;
    }
    size_t cnt = (size_t)cJSON_GetArraySize(ls);
    launch *v = calloc(cnt, sizeof *v);
    if (v == NULL)
        return ARGUS_ENOMEM;
    size_t k = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, ls)
    {
        launch *x = &v[k++];
        const char *kern = str_item(l, "kernel"), *raw = str_item(l, "raw_base64");
        const cJSON *clk = cJSON_GetObjectItemCaseSensitive(l, "clock_ghz");
        snprintf(x->kernel, sizeof x->kernel, "%s", kern ? kern : "");
        if (raw == NULL) {
            problem(s, (long)i, "launches[%zu]: no raw_base64", k - 1);
            continue;
        }
        unsigned char *buf = NULL;
        size_t blen = 0;
        char why[512];
        int rc = argus_base64_decode(raw, strlen(raw), &buf, &blen, why, sizeof why);
        if (rc == ARGUS_ENOMEM) {
            free(v);
            return rc;
        }
        if (rc != 0) {
            problem(s, (long)i, "launches[%zu].raw_base64: %s", k - 1, why);
            continue;
        }
        argus_decode_opts opts = {.cycles_per_ns = 0, .reg = s->r->reg};
        if (cJSON_IsNumber(clk) && clk->valuedouble > 0 && isfinite(clk->valuedouble))
            opts.cycles_per_ns = clk->valuedouble;
        rc = argus_decode(buf, blen, &opts, &x->t, why, sizeof why);
        free(buf);
        if (rc != 0) {
            problem(s, (long)i, "launches[%zu] (kernel %s): the region buffer does not decode: %s",
                    k - 1, x->kernel, why);
            continue;
        }
        x->ok = 1;
    }
    *out = v;
    *n = cnt;
    return 0;
}

static void free_launches(launch *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].ok)
            argus_trace_free(&v[i].t);
    free(v);
}

/* A region's occurrences summed over the launches, in one scope: only the
 * nodes of that region itself (not those below it). */
typedef struct occ_sum {
    uint64_t count, timed, total_cycles;
    double total_ns;
    int ns; /* every launch had a clock conversion */
} occ_sum;

static int region_sum(const launch *v, size_t n, const argus_scope *sc, uint32_t region,
                      occ_sum *out)
{
    memset(out, 0, sizeof *out);
    out->ns = 1;
    argus_scope s = *sc;
    s.region = region;
    for (size_t l = 0; l < n; l++) {
        if (!v[l].ok)
            continue;
        argus_region_stats *st = NULL;
        size_t ns = 0;
        int rc = argus_stats(&v[l].t, &s, &st, &ns);
        if (rc != 0)
            return rc;
        for (size_t k = 0; k < ns; k++) {
            if (st[k].region != region)
                continue;
            out->count += st[k].count;
            out->timed += st[k].timed;
            out->total_cycles += st[k].total_cycles;
            out->total_ns += st[k].total_ns;
        }
        if (v[l].t.clock_method == ARGUS_CLOCK_NONE)
            out->ns = 0;
        free(st);
    }
    return 0;
}

/* ---- region_stats ---------------------------------------------------------- */

static void id_hex(uint32_t id, char *buf, size_t len)
{
    snprintf(buf, len, "0x%07" PRIx32, id);
}

static int rule_region_stats(synth *s)
{
    long ei = find_input(s, ARGUS_SYNTH_IN_EVIDENCE, "region_runtime", 0);
    if (ei < 0) {
        problem(s, -1, "no region_runtime evidence among the inputs");
        return 0;
    }
    cJSON *o = evidence(s, (size_t)ei);
    cJSON *launches = cJSON_AddArrayToObject(s->results, "launches");
    if (o != NULL) {
        launch *v;
        size_t n;
        int rc = decode_launches(s, (size_t)ei, o, &v, &n);
        cJSON_Delete(o);
        if (rc != 0)
            return rc;
        for (size_t l = 0; l < n && rc == 0; l++) {
            if (!v[l].ok)
                continue;
            const argus_trace *t = &v[l].t;
            const char *tu = t->clock_method == ARGUS_CLOCK_NONE ? "cycles" : "ns";
            cJSON *L = cJSON_CreateObject();
            cJSON_AddItemToArray(launches, L);
            cJSON_AddStringToObject(L, "kernel", v[l].kernel);
            put_num(L, "warps_ran", (double)t->warps_active, "warps", ARGUS_MARK_OBSERVED, ei, -1);
            put_num(L, "records_lost", (double)t->records_lost, "records", ARGUS_MARK_OBSERVED,
                    ei, -1);
            put_num(L, "diagnostics", (double)t->ndiags + (double)t->diags_dropped, "diagnostics",
                    ARGUS_MARK_OBSERVED, ei, -1);
            put_num(L, "sm_clock", t->cycles_per_ns, "GHz",
                    t->clock_method == ARGUS_CLOCK_GIVEN ? ARGUS_MARK_OBSERVED : ARGUS_MARK_DERIVED,
                    ei, -1);
            argus_region_stats *st = NULL;
            size_t ns = 0;
            rc = argus_stats(t, &s->r->scope, &st, &ns);
            if (rc != 0)
                break;
            cJSON *regs = cJSON_AddArrayToObject(L, "regions");
            for (size_t k = 0; k < ns; k++) {
                cJSON *R = cJSON_CreateObject();
                char path[1024], idb[16];
                if (argus_node_path(t, s->r->reg, st[k].node, path, sizeof path) != 0)
                    id_hex(st[k].region, path, sizeof path);
                id_hex(st[k].region, idb, sizeof idb);
                cJSON_AddStringToObject(R, "id", idb);
                cJSON_AddStringToObject(R, "path", path);
                put_num(R, "count", (double)st[k].count, "occurrences", ARGUS_MARK_OBSERVED, ei, -1);
                put_num(R, "partial", (double)st[k].partial, "occurrences", ARGUS_MARK_OBSERVED,
                        ei, -1);
                put_num(R, "total_cycles", (double)st[k].total_cycles, "cycles",
                        ARGUS_MARK_OBSERVED, ei, -1);
                int tm = t->clock_method == ARGUS_CLOCK_NONE ? ARGUS_MARK_OBSERVED
                                                              : ARGUS_MARK_DERIVED;
                put_num(R, "total", st[k].total_ns, tu, tm, ei, -1);
                put_num(R, "mean", st[k].mean_ns, tu, tm, ei, -1);
                put_num(R, "p50", st[k].p50_ns, tu, tm, ei, -1);
                put_num(R, "p99", st[k].p99_ns, tu, tm, ei, -1);
                put_num(R, "min", st[k].min_ns, tu, tm, ei, -1);
                put_num(R, "max", st[k].max_ns, tu, tm, ei, -1);
                put_num(R, "share_of_warp_time", st[k].share, "fraction", ARGUS_MARK_DERIVED, ei,
                        -1);
                cJSON_AddItemToArray(regs, R);
            }
            free(st);
            /* Per iteration of the window, each region of the query's
             * subtree: what a probe of that iteration is joined against. */
            const argus_scope *q = &s->r->scope;
            if (q->iter_lo >= 0) {
                cJSON *its = cJSON_AddArrayToObject(L, "iterations");
                for (int64_t it = q->iter_lo; it <= q->iter_hi && rc == 0; it++) {
                    argus_scope one = *q;
                    one.iter_lo = one.iter_hi = it;
                    argus_region_stats *is = NULL;
                    size_t nis = 0;
                    rc = argus_stats(t, &one, &is, &nis);
                    if (rc != 0)
                        break;
                    cJSON *I = cJSON_CreateObject();
                    cJSON_AddNumberToObject(I, "iter", (double)it);
                    cJSON *IR = cJSON_AddArrayToObject(I, "regions");
                    for (size_t k = 0; k < nis; k++) {
                        char path[1024];
                        if (argus_node_path(t, s->r->reg, is[k].node, path, sizeof path) != 0)
                            id_hex(is[k].region, path, sizeof path);
                        cJSON *R = cJSON_CreateObject();
                        cJSON_AddStringToObject(R, "path", path);
                        put_num(R, "count", (double)is[k].count, "occurrences",
                                ARGUS_MARK_OBSERVED, ei, -1);
                        put_num(R, "total_cycles", (double)is[k].total_cycles, "cycles",
                                ARGUS_MARK_OBSERVED, ei, -1);
                        put_num(R, "mean_cycles",
                                is[k].timed ? (double)is[k].total_cycles / (double)is[k].timed
                                            : NAN,
                                "cycles", ARGUS_MARK_DERIVED, ei, -1);
                        cJSON_AddItemToArray(IR, R);
                    }
                    free(is);
                    cJSON_AddItemToArray(its, I);
                }
            }
        }
        free_launches(v, n);
        if (rc != 0)
            return rc;
    }
    /* NVTX ranges of the same variant, when that optional collection ran. */
    if (find_input(s, ARGUS_SYNTH_IN_EVIDENCE, "nvtx", 0) >= 0) {
        cJSON *no;
        const cJSON *regs;
        long ni = evidence_array(s, "nvtx", "report.regions", "argus-shim's argus.report v1", &no,
                                 &regs);
        cJSON *ranges = cJSON_AddArrayToObject(s->results, "nvtx_ranges");
        const cJSON *g;
        cJSON_ArrayForEach(g, regs)
        {
            const char *kind = str_item(g, "kind");
            if (kind == NULL || strncmp(kind, "nvtx", 4) != 0)
                continue;
            cJSON *R = cJSON_CreateObject();
            cJSON_AddStringToObject(R, "path", str_item(g, "path") ? str_item(g, "path") : "");
            cJSON_AddStringToObject(R, "kind", kind);
            double c = count_item(g, "count") >= 0 ? count_item(g, "count") : NAN;
            const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(g, "count");
            if (cJSON_IsObject(cnt))
                c = count_item(cnt, "value");
            put_num(R, "count", c, "ranges", ARGUS_MARK_OBSERVED, ni, -1);
            const cJSON *tm = cJSON_GetObjectItemCaseSensitive(g, "time");
            const cJSON *tot = tm ? cJSON_GetObjectItemCaseSensitive(tm, "total") : NULL;
            const cJSON *tv = tot ? cJSON_GetObjectItemCaseSensitive(tot, "value") : NULL;
            if (cJSON_IsNumber(tv))
                put_num(R, "total", tv->valuedouble, "ns", ARGUS_MARK_DERIVED, ni, -1);
            cJSON_AddItemToArray(ranges, R);
        }
        cJSON_Delete(no);
    }
    return 0;
}

/* ---- kernel_stats ------------------------------------------------------------ */

/* A report number {"value","unit","mark"} passed through with its own mark
 * and the input it came from. */
static void pass_num(cJSON *dst, const char *key, const cJSON *src, long from)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, "value");
    const char *unit = str_item(src, "unit"), *mark = str_item(src, "mark");
    if (!cJSON_IsNumber(v) || unit == NULL || mark == NULL)
        return;
    int m = strcmp(mark, "attributed") == 0 ? ARGUS_MARK_ATTRIBUTED
            : strcmp(mark, "derived") == 0  ? ARGUS_MARK_DERIVED
                                            : ARGUS_MARK_OBSERVED;
    put_num(dst, key, v->valuedouble, unit, m, from, -1);
}

static int rule_kernel_stats(synth *s)
{
    cJSON *o;
    const cJSON *regs;
    cJSON *kernels = cJSON_AddArrayToObject(s->results, "kernels");
    long ei = evidence_array(s, "cupti_activity", "report.regions", "argus-shim's argus.report v1",
                             &o, &regs);
    const cJSON *g;
    cJSON_ArrayForEach(g, regs)
    {
        const char *kind = str_item(g, "kind");
        if (kind == NULL || strcmp(kind, "kernel") != 0)
            continue;
        cJSON *K = cJSON_CreateObject();
        cJSON_AddStringToObject(K, "name", str_item(g, "name") ? str_item(g, "name") : "");
        cJSON_AddStringToObject(K, "path", str_item(g, "path") ? str_item(g, "path") : "");
        const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(g, "count");
        if (cJSON_IsObject(cnt))
            pass_num(K, "count", cnt, ei);
        const cJSON *tm = cJSON_GetObjectItemCaseSensitive(g, "time");
        static const char *const keys[] = {"total", "mean", "p50", "p99", "min", "max"};
        for (size_t k = 0; tm != NULL && k < sizeof keys / sizeof keys[0]; k++) {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(tm, keys[k]);
            if (cJSON_IsObject(x))
                pass_num(K, keys[k], x, ei);
        }
        cJSON_AddItemToArray(kernels, K);
    }
    cJSON_Delete(o);
    return 0;
}

/* ---- metric_per_kernel ----------------------------------------------------- */

static int rule_metric_per_kernel(synth *s)
{
    cJSON *o;
    const cJSON *ks;
    cJSON *kernels = cJSON_AddArrayToObject(s->results, "kernels");
    long ei = evidence_array(s, "range_profiler", "kernels", "counter values per launch", &o, &ks);
    const cJSON *k;
    size_t idx = 0;
    cJSON_ArrayForEach(k, ks)
    {
        const char *name = str_item(k, "name");
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(k, "metrics");
        if (name == NULL || !cJSON_IsObject(ms) || count_item(k, "launch") < 0) {
            problem(s, ei, "kernels[%zu]: needs name, launch (a count) and metrics {}", idx);
            idx++;
            continue;
        }
        cJSON *K = cJSON_CreateObject();
        cJSON_AddStringToObject(K, "name", name);
        cJSON_AddNumberToObject(K, "launch", count_item(k, "launch"));
        cJSON *M = cJSON_AddObjectToObject(K, "metrics");
        const cJSON *m;
        cJSON_ArrayForEach(m, ms)
        {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "value");
            const char *unit = str_item(m, "unit");
            if (!cJSON_IsNumber(v) || unit == NULL || unit[0] == '\0') {
                problem(s, ei, "kernels[%zu].metrics.%s: needs value and unit", idx, m->string);
                continue;
            }
            put_num(M, m->string, v->valuedouble, unit, ARGUS_MARK_OBSERVED, ei, -1);
        }
        cJSON_AddItemToArray(kernels, K);
        idx++;
    }
    cJSON_Delete(o);
    return 0;
}

/* ---- pc_attribute ------------------------------------------------------------ */

/* One function's attribution (PCs are offsets in one function). */
typedef struct fn_attrib {
    char name[256];
    argus_attrib *a;
    int has_exec, has_metric;
} fn_attrib;

typedef struct fn_set {
    fn_attrib *v;
    size_t n, cap;
    const char *program;
} fn_set;

static fn_attrib *fn_get(fn_set *fs, const char *name, char *msg, size_t msglen)
{
    for (size_t i = 0; i < fs->n; i++)
        if (strcmp(fs->v[i].name, name) == 0)
            return &fs->v[i];
    void *arr = fs->v;
    if (argus__grow(&arr, &fs->cap, fs->n + 1, sizeof *fs->v) != 0)
        return NULL;
    fs->v = arr;
    fn_attrib *f = &fs->v[fs->n];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    if (argus_attrib_new(&f->a) != 0 ||
        argus_attrib_program(f->a, fs->program, "the plan's variant", msg, msglen) != 0) {
        argus_attrib_free(f->a);
        return NULL;
    }
    fs->n++;
    return f;
}

static void fn_free(fn_set *fs)
{
    for (size_t i = 0; i < fs->n; i++)
        argus_attrib_free(fs->v[i].a);
    free(fs->v);
}

/* The array at key of evidence input i's object, or NULL with the input
 * refused and the problem said (what the array should hold). */
static const cJSON *array_of(synth *s, size_t i, const cJSON *o, const char *key,
                             const char *what)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsArray(a))
        return a;
    in_state(s, i, "refused");
    problem(s, (long)i, "%s evidence without %s[] (%s)", s->r->in[i].backend, key, what);
    return NULL;
}

/* The map's entries into fs: executions of each PC under each region. */
static int load_map(synth *s, size_t i, const cJSON *o, fn_set *fs)
{
    const cJSON *map = array_of(s, i, o, "map", "{function, pc, region, count} per PC and "
                                                "dynamic region");
    if (map == NULL)
        return 0;
    const cJSON *e;
    size_t k = 0;
    char why[512];
    cJSON_ArrayForEach(e, map)
    {
        const char *fn = str_item(e, "function"), *region = str_item(e, "region");
        double pc = count_item(e, "pc"), cnt = count_item(e, "count");
        if (fn == NULL || fn[0] == '\0' || region == NULL || pc < 0 || cnt < 0) {
            problem(s, (long)i, "map[%zu]: needs function, pc (a byte offset), region (a path or "
                                "\"\") and count (whole, >= 0)",
                    k);
            k++;
            continue;
        }
        fn_attrib *f = fn_get(fs, fn, why, sizeof why);
        if (f == NULL)
            return ARGUS_ENOMEM;
        int rc = argus_attrib_add_exec(f->a, (uint64_t)pc, region, (uint64_t)cnt, why, sizeof why);
        if (rc == ARGUS_ENOMEM)
            return rc;
        if (rc != 0)
            problem(s, (long)i, "map[%zu]: %s", k, why);
        else
            f->has_exec = 1;
        k++;
    }
    return 0;
}

/* A PC's metric into fs, with the problem named. */
static int add_metric(synth *s, size_t i, fn_set *fs, const char *fn, double pc, const char *m,
                      double v, const char *where)
{
    char why[512];
    fn_attrib *f = fn_get(fs, fn, why, sizeof why);
    if (f == NULL)
        return ARGUS_ENOMEM;
    int rc = argus_attrib_add_metric(f->a, (uint64_t)pc, m, v, why, sizeof why);
    if (rc == ARGUS_ENOMEM)
        return rc;
    if (rc != 0)
        problem(s, (long)i, "%s: %s", where, why);
    else
        f->has_metric = 1;
    return 0;
}

/* Entry k of a pcs[] array: its function and PC, and the item at key
 * (an array for "stall", an object for "values"); 0 with the problem said
 * when it lacks one. */
static int pc_entry(synth *s, size_t i, const cJSON *p, size_t k, const char *key,
                    const char **fn, double *pc, const cJSON **item, char *where, size_t wlen)
{
    *fn = str_item(p, "function");
    *pc = count_item(p, "pc");
    *item = cJSON_GetObjectItemCaseSensitive(p, key);
    snprintf(where, wlen, "pcs[%zu]", k);
    int ok = *fn != NULL && (*fn)[0] != '\0' && *pc >= 0 &&
             (strcmp(key, "stall") == 0 ? cJSON_IsArray(*item) : cJSON_IsObject(*item));
    if (!ok)
        problem(s, (long)i, "%s: needs function, pc (a byte offset) and %s", where, key);
    return ok;
}

/* PC samples: per PC "samples" (all its samples) and "stall:REASON" per
 * reason; each reason's share is the ratio stall:REASON / samples. */
static int load_samples(synth *s, size_t i, const cJSON *o, fn_set *fs, cJSON *ratios)
{
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(o, "stall_reasons");
    const cJSON *pcs = cJSON_GetObjectItemCaseSensitive(o, "pcs");
    if (!cJSON_IsArray(names) || !cJSON_IsArray(pcs)) {
        in_state(s, i, "refused");
        problem(s, (long)i, "pc_sampling evidence needs stall_reasons[] (CUPTI's names in index "
                            "order) and pcs[] ({function, pc, stall: [[index, samples], ...]})");
        return 0;
    }
    size_t nn = (size_t)cJSON_GetArraySize(names);
    unsigned char *used = calloc(nn + 1, 1);
    if (used == NULL)
        return ARGUS_ENOMEM;
    const cJSON *p;
    size_t k = 0;
    int rc = 0;
    cJSON_ArrayForEach(p, pcs)
    {
        const char *fn;
        double pc;
        const cJSON *st;
        char where[64];
        if (!pc_entry(s, i, p, k++, "stall", &fn, &pc, &st, where, sizeof where))
            continue;
        double total = 0;
        const cJSON *pair;
        cJSON_ArrayForEach(pair, st)
        {
            const cJSON *a = cJSON_GetArrayItem(pair, 0), *b = cJSON_GetArrayItem(pair, 1);
            if (cJSON_GetArraySize(pair) != 2 || !cJSON_IsNumber(a) || !cJSON_IsNumber(b) ||
                a->valuedouble < 0 || a->valuedouble >= (double)nn || b->valuedouble < 0 ||
                a->valuedouble != floor(a->valuedouble) || b->valuedouble != floor(b->valuedouble)) {
                problem(s, (long)i, "%s.stall: each entry is [index < %zu, samples >= 0]", where,
                        nn);
                continue;
            }
            const cJSON *nm = cJSON_GetArrayItem(names, (int)a->valuedouble);
            if (!cJSON_IsString(nm)) {
                problem(s, (long)i, "stall_reasons[%d] is not a name", (int)a->valuedouble);
                continue;
            }
            char metric[320];
            snprintf(metric, sizeof metric, "stall:%s", nm->valuestring);
            rc = add_metric(s, i, fs, fn, pc, metric, b->valuedouble, where);
            if (rc != 0)
                break;
            used[(int)a->valuedouble] = 1;
            total += b->valuedouble;
        }
        if (rc == 0)
            rc = add_metric(s, i, fs, fn, pc, "samples", total, where);
        if (rc != 0)
            break;
    }
    for (size_t r = 0; rc == 0 && r < nn; r++) {
        const cJSON *nm = cJSON_GetArrayItem(names, (int)r);
        if (!used[r] || !cJSON_IsString(nm))
            continue;
        char metric[320], name[352];
        snprintf(metric, sizeof metric, "stall:%s", nm->valuestring);
        snprintf(name, sizeof name, "%s/samples", metric);
        cJSON *R = cJSON_CreateObject();
        cJSON_AddStringToObject(R, "name", name);
        cJSON_AddStringToObject(R, "numerator", metric);
        cJSON_AddStringToObject(R, "denominator", "samples");
        cJSON_AddItemToArray(ratios, R);
    }
    free(used);
    return rc;
}

/* SASS metrics: additive per-PC values; ratios as declared. */
static int load_sass(synth *s, size_t i, const cJSON *o, fn_set *fs, cJSON *ratios)
{
    const cJSON *pcs = array_of(s, i, o, "pcs", "{function, pc, values {metric: count}}");
    if (pcs == NULL)
        return 0;
    const cJSON *p;
    size_t k = 0;
    cJSON_ArrayForEach(p, pcs)
    {
        const char *fn;
        double pc;
        const cJSON *vals;
        char where[64];
        if (!pc_entry(s, i, p, k++, "values", &fn, &pc, &vals, where, sizeof where))
            continue;
        const cJSON *v;
        cJSON_ArrayForEach(v, vals)
        {
            if (!cJSON_IsNumber(v)) {
                problem(s, (long)i, "%s.values.%s is not a number", where, v->string);
                continue;
            }
            int rc = add_metric(s, i, fs, fn, pc, v->string, v->valuedouble, where);
            if (rc != 0)
                return rc;
        }
    }
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(o, "ratios");
    const cJSON *r;
    cJSON_ArrayForEach(r, rs)
    {
        const char *n = str_item(r, "name"), *a = str_item(r, "numerator"),
                   *b = str_item(r, "denominator");
        if (n == NULL || a == NULL || b == NULL) {
            problem(s, (long)i, "ratios[]: each needs name, numerator and denominator");
            continue;
        }
        cJSON_AddItemToArray(ratios, cJSON_Duplicate(r, 1));
    }
    return 0;
}

static cJSON *attrib_values(const argus_attrib_result *ar, const argus_attrib_value *v,
                            const char *const *units, long a, long b)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t m = 0; o != NULL && m < ar->n_metrics; m++)
        put_num(o, ar->metrics[m], v[m].value, units[m], v[m].mark, a, b);
    return o;
}

static int rule_pc_attribute(synth *s)
{
    long mi = find_input(s, ARGUS_SYNTH_IN_EVIDENCE, "sanitizer_patch", 0);
    long pi = find_input(s, ARGUS_SYNTH_IN_EVIDENCE, "pc_sampling", 0);
    long si = find_input(s, ARGUS_SYNTH_IN_EVIDENCE, "sass_metrics", 0);
    long mx = pi >= 0 ? pi : si;
    if (mi < 0 || mx < 0) {
        problem(s, -1, "pc_attribute needs the PC-to-region map (sanitizer_patch) and PC-keyed "
                       "metrics (pc_sampling or sass_metrics) among its inputs");
        return 0;
    }
    const char *program = s->r->in[mi].variant ? s->r->in[mi].variant : "";
    fn_set fs = {.program = program};
    cJSON *ratios = cJSON_CreateArray();
    int rc = ratios ? 0 : ARGUS_ENOMEM;
    cJSON *mo = rc == 0 ? evidence(s, (size_t)mi) : NULL;
    cJSON *xo = rc == 0 ? evidence(s, (size_t)mx) : NULL;
    if (mo != NULL)
        rc = load_map(s, (size_t)mi, mo, &fs);
    if (rc == 0 && xo != NULL)
        rc = mx == pi ? load_samples(s, (size_t)mx, xo, &fs, ratios)
                      : load_sass(s, (size_t)mx, xo, &fs, ratios);
    cJSON_Delete(mo);
    cJSON_Delete(xo);
    cJSON *fns = cJSON_AddArrayToObject(s->results, "functions");
    for (size_t f = 0; rc == 0 && f < fs.n; f++) {
        fn_attrib *fa = &fs.v[f];
        char why[512];
        if (!fa->has_exec || !fa->has_metric) {
            problem(s, fa->has_exec ? mx : mi,
                    "function %s has %s but no %s: not attributed", fa->name,
                    fa->has_exec ? "a PC-to-region map" : "PC metrics",
                    fa->has_exec ? "PC metrics" : "map");
            continue;
        }
        const cJSON *r;
        cJSON_ArrayForEach(r, ratios)
        {
            rc = argus_attrib_add_ratio(fa->a, str_item(r, "name"), str_item(r, "numerator"),
                                        str_item(r, "denominator"), why, sizeof why);
            if (rc == ARGUS_ENOMEM)
                break;
            if (rc != 0) {
                problem(s, mx, "function %s: %s", fa->name, why);
                rc = 0;
            }
        }
        argus_attrib_result *ar = NULL;
        if (rc == 0 && (rc = argus_attrib_compute(fa->a, &ar, why, sizeof why)) != 0) {
            if (rc == ARGUS_ENOMEM)
                break;
            problem(s, mx, "function %s: %s", fa->name, why);
            rc = 0;
            continue;
        }
        if (ar == NULL)
            continue;
        const char **units = calloc(ar->n_metrics + 1, sizeof *units);
        if (units == NULL) {
            argus_attrib_result_free(ar);
            rc = ARGUS_ENOMEM;
            break;
        }
        for (size_t m = 0; m < ar->n_metrics; m++)
            units[m] = mx == pi ? "pc_samples" : "instructions";
        cJSON *F = cJSON_CreateObject();
        cJSON_AddItemToArray(fns, F);
        cJSON_AddStringToObject(F, "function", fa->name);
        cJSON *R = cJSON_AddArrayToObject(F, "regions");
        for (size_t g = 0; g < ar->n_regions; g++) {
            const argus_attrib_region *ag = &ar->regions[g];
            cJSON *G = cJSON_CreateObject();
            cJSON_AddStringToObject(G, "path", ag->path);
            cJSON_AddBoolToObject(G, "mapped", ag->mapped);
            cJSON_AddItemToObject(G, "self", attrib_values(ar, ag->self, units, mi, mx));
            cJSON_AddItemToObject(G, "inclusive", attrib_values(ar, ag->inclusive, units, mi, mx));
            cJSON *GR = cJSON_AddObjectToObject(G, "ratios");
            for (size_t q = 0; q < ar->n_ratios; q++) {
                cJSON *Q = cJSON_AddObjectToObject(GR, ar->ratios[q]);
                put_num(Q, "numerator", ag->ratio_num[q].value, units[0], ag->ratio_num[q].mark,
                        mi, mx);
                put_num(Q, "denominator", ag->ratio_den[q].value, units[0],
                        ag->ratio_den[q].mark, mi, mx);
                put_num(Q, "value", ag->ratio_defined[q] ? ag->ratio[q].value : NAN, "ratio",
                        ARGUS_MARK_DERIVED, mi, mx);
            }
            cJSON_AddItemToArray(R, G);
        }
        cJSON_AddItemToObject(F, "total", attrib_values(ar, ar->total, units, mx, -1));
        cJSON_AddItemToObject(F, "unmapped", attrib_values(ar, ar->unmapped, units, mx, mi));
        cJSON *P = cJSON_AddArrayToObject(F, "pcs");
        for (size_t q = 0; q < ar->n_pcs; q++) {
            cJSON *Q = cJSON_CreateObject();
            cJSON_AddNumberToObject(Q, "pc", (double)ar->pcs[q].pc);
            put_num(Q, "executions", (double)ar->pcs[q].executions, "warp_executions",
                    ARGUS_MARK_OBSERVED, mi, -1);
            cJSON_AddNumberToObject(Q, "regions", (double)ar->pcs[q].n_regions);
            put_num(Q, "entropy", ar->pcs[q].entropy_bits, "bits", ARGUS_MARK_DERIVED, mi, -1);
            cJSON_AddItemToArray(P, Q);
        }
        free(units);
        argus_attrib_result_free(ar);
    }
    cJSON_AddItemToObject(s->results, "ratios", ratios);
    fn_free(&fs);
    return rc;
}

/* ---- probe_latency ----------------------------------------------------------- */

static void op_str(uint64_t op, char *buf, size_t len)
{
    if (argus_op_id_format(op, buf, len) != 0)
        snprintf(buf, len, "0x%" PRIx64, op);
}

/* A probe branch: the probed region at the probed iteration in the probe
 * variant's run (observed cycles; the mean derived). */
static int rule_probe_branch(synth *s)
{
    long ei = find_input(s, ARGUS_SYNTH_IN_EVIDENCE, "region_runtime", 0);
    char opb[32];
    op_str(s->r->op, opb, sizeof opb);
    uint32_t region = ARGUS_OP_REGION(s->r->op);
    cJSON_AddStringToObject(s->results, "op", opb);
    cJSON_AddNumberToObject(s->results, "iter", (double)s->r->iter);
    char idb[16], path[512] = "";
    id_hex(region, idb, sizeof idb);
    cJSON_AddStringToObject(s->results, "region", idb);
    const char *nm = s->r->reg ? argus_registry_name(s->r->reg, region) : NULL;
    cJSON_AddStringToObject(s->results, "region_name", nm ? nm : idb);
    (void)path;
    if (ei < 0) {
        problem(s, -1, "no region_runtime evidence of the probe variant among the inputs");
        return 0;
    }
    cJSON_AddStringToObject(s->results, "variant", s->r->in[ei].variant ? s->r->in[ei].variant : "");
    cJSON *o = evidence(s, (size_t)ei);
    if (o == NULL)
        return 0;
    launch *v;
    size_t n;
    int rc = decode_launches(s, (size_t)ei, o, &v, &n);
    cJSON_Delete(o);
    if (rc != 0)
        return rc;
    argus_scope one = s->r->scope;
    one.iter_lo = one.iter_hi = s->r->iter;
    occ_sum sum;
    rc = region_sum(v, n, &one, region, &sum);
    free_launches(v, n);
    if (rc != 0)
        return rc;
    if (sum.timed == 0)
        problem(s, ei, "the probe run has no timed occurrence of region %s at iteration %lld",
                nm ? nm : idb, (long long)s->r->iter);
    cJSON *P = cJSON_AddObjectToObject(s->results, "probe");
    put_num(P, "count", (double)sum.count, "occurrences", ARGUS_MARK_OBSERVED, ei, -1);
    put_num(P, "timed", (double)sum.timed, "occurrences", ARGUS_MARK_OBSERVED, ei, -1);
    put_num(P, "total_cycles", (double)sum.total_cycles, "cycles", ARGUS_MARK_OBSERVED, ei, -1);
    put_num(P, "mean_cycles", sum.timed ? (double)sum.total_cycles / (double)sum.timed : NAN,
            "cycles", ARGUS_MARK_DERIVED, ei, -1);
    if (sum.ns)
        put_num(P, "mean_ns", sum.timed ? sum.total_ns / (double)sum.timed : NAN, "ns",
                ARGUS_MARK_DERIVED, ei, -1);
    return 0;
}

static double num_value(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    const cJSON *v = x ? cJSON_GetObjectItemCaseSensitive(x, "value") : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The signal's synthesis: each branch joined with the base run at the same
 * iteration; latency = probe mean - base mean (derived). */
static int rule_probe_final(synth *s)
{
    long bi = find_input(s, ARGUS_SYNTH_IN_EVIDENCE, "region_runtime", 0);
    long oi = find_input(s, ARGUS_SYNTH_IN_OPS, NULL, 0);
    if (oi >= 0 && s->r->in[oi].data != NULL)
        in_state(s, (size_t)oi, "used"); /* the branches are the operations' */
    launch *v = NULL;
    size_t n = 0;
    int rc = 0;
    const char *base_variant = bi >= 0 ? s->r->in[bi].variant : NULL;
    if (bi < 0) {
        problem(s, -1, "no region_runtime evidence of the base variant among the inputs");
    } else {
        cJSON *o = evidence(s, (size_t)bi);
        if (o != NULL)
            rc = decode_launches(s, (size_t)bi, o, &v, &n);
        cJSON_Delete(o);
        if (rc != 0)
            return rc;
    }
    if (base_variant != NULL)
        cJSON_AddStringToObject(s->results, "base_variant", base_variant);
    cJSON *lat = cJSON_AddArrayToObject(s->results, "latencies");
    size_t nbranch = 0;
    for (size_t i = 0; rc == 0 && i < s->r->nin; i++) {
        if (s->r->in[i].kind != ARGUS_SYNTH_IN_RESULT)
            continue;
        nbranch++;
        cJSON *b = parse_input(s, i, ARGUS_SYNTH_SCHEMA);
        if (b == NULL)
            continue;
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(b, "results");
        const char *opb = str_item(res, "op"), *pv = str_item(res, "variant");
        const cJSON *itj = cJSON_GetObjectItemCaseSensitive(res, "iter");
        const cJSON *probe = cJSON_GetObjectItemCaseSensitive(res, "probe");
        const cJSON *bcomplete = cJSON_GetObjectItemCaseSensitive(b, "complete");
        uint64_t op = 0;
        if (opb == NULL || argus_op_id_parse(opb, &op) != 0 || !cJSON_IsNumber(itj)) {
            in_state(s, i, "refused");
            problem(s, (long)i, "a probe_latency branch result without op and iter");
            cJSON_Delete(b);
            continue;
        }
        /* The branch's variant must be a probe made from the base one: a
         * probe of another program version is never subtracted. */
        size_t bl = base_variant ? strlen(base_variant) : 0;
        if (base_variant == NULL || pv == NULL || strncmp(pv, base_variant, bl) != 0 ||
            strncmp(pv + bl, "+probe(", 7) != 0) {
            in_state(s, i, "refused");
            problem(s, (long)i, "probe variant \"%s\" is not made from the base variant \"%s\": "
                                "not joined",
                    pv ? pv : "(none)", base_variant ? base_variant : "(none)");
            cJSON_Delete(b);
            continue;
        }
        in_state(s, i, cJSON_IsTrue(bcomplete) ? "used" : "used_partial");
        if (!cJSON_IsTrue(bcomplete))
            problem(s, (long)i, "the branch is incomplete (its own problems say why)");
        /* The branch's own inputs, so that every number names its runs. */
        const cJSON *bin = cJSON_GetObjectItemCaseSensitive(b, "inputs");
        if (bin != NULL)
            cJSON_AddItemToObject(s->in_entry[i], "inputs", cJSON_Duplicate(bin, 1));
        int64_t it = (int64_t)itj->valuedouble;
        uint32_t region = ARGUS_OP_REGION(op);
        cJSON *L = cJSON_CreateObject();
        cJSON_AddItemToArray(lat, L);
        cJSON_AddStringToObject(L, "op", opb);
        cJSON_AddNumberToObject(L, "iter", (double)it);
        char idb[16];
        id_hex(region, idb, sizeof idb);
        const char *nm = s->r->reg ? argus_registry_name(s->r->reg, region) : NULL;
        cJSON_AddStringToObject(L, "region", nm ? nm : idb);
        cJSON_AddStringToObject(L, "probe_variant", pv);
        double pm = probe ? num_value(probe, "mean_cycles") : NAN;
        double pns = probe ? num_value(probe, "mean_ns") : NAN;
        put_num(L, "probe_cycles", pm, "cycles", ARGUS_MARK_DERIVED, (long)i, -1);
        occ_sum base = {0};
        if (v != NULL) {
            argus_scope one = s->r->scope;
            one.iter_lo = one.iter_hi = it;
            rc = region_sum(v, n, &one, region, &base);
            if (rc != 0) {
                cJSON_Delete(b);
                break;
            }
        }
        double bm = base.timed ? (double)base.total_cycles / (double)base.timed : NAN;
        if (v != NULL && base.timed == 0)
            problem(s, bi, "the base run has no timed occurrence of region %s at iteration %lld "
                           "to join the probe of %s with",
                    nm ? nm : idb, (long long)it, opb);
        put_num(L, "base_cycles", bm, "cycles", ARGUS_MARK_DERIVED, bi, -1);
        put_num(L, "latency_cycles", pm - bm, "cycles", ARGUS_MARK_DERIVED, bi, (long)i);
        if (base.ns && base.timed && isfinite(pns)) {
            double bns = base.total_ns / (double)base.timed;
            put_num(L, "base_ns", bns, "ns", ARGUS_MARK_DERIVED, bi, -1);
            put_num(L, "latency_ns", pns - bns, "ns", ARGUS_MARK_DERIVED, bi, (long)i);
        }
        cJSON_Delete(b);
    }
    free_launches(v, n);
    cJSON_AddNumberToObject(s->results, "branches", (double)nbranch);
    return rc;
}

/* ---- sass_listing -------------------------------------------------------------- */

static int rule_sass_listing(synth *s)
{
    long ai = find_input(s, ARGUS_SYNTH_IN_ARTIFACT, NULL, 0);
    cJSON *fns = cJSON_AddArrayToObject(s->results, "functions");
    if (ai < 0) {
        problem(s, -1, "no artifact among the inputs");
        return 0;
    }
    const argus_synth_input *in = &s->r->in[ai];
    if (in->data == NULL) {
        in_state(s, (size_t)ai, "missing");
        problem(s, ai, "no artifact: %s", in->missing ? in->missing : "its task did not finish");
        return 0;
    }
    if (in->len < 4 || memcmp(in->data, "\177ELF", 4) != 0) {
        in_state(s, (size_t)ai, "not_used");
        cJSON_AddStringToObject(s->results, "note",
                                "the artifact is not a cubin (ELF); the listing needs the "
                                "compiled variant");
        return 0;
    }
    argus_cubin c;
    char why[512];
    int rc = argus_cubin_parse(in->data, in->len, in->task, &c, why, sizeof why);
    if (rc == ARGUS_ENOMEM)
        return rc;
    if (rc != 0) {
        in_state(s, (size_t)ai, "refused");
        problem(s, ai, "%s", why);
        return 0;
    }
    in_state(s, (size_t)ai, "used");
    for (size_t f = 0; f < c.nfn; f++) {
        cJSON *F = cJSON_CreateObject();
        cJSON_AddStringToObject(F, "name", c.fn[f].name);
        cJSON_AddBoolToObject(F, "entry", c.fn[f].entry);
        cJSON_AddNumberToObject(F, "section", c.fn[f].section);
        put_num(F, "bytes", (double)(c.fn[f].hi - c.fn[f].lo), "bytes", ARGUS_MARK_OBSERVED, ai,
                -1);
        cJSON_AddItemToArray(fns, F);
    }
    cJSON_AddBoolToObject(s->results, "line_info", c.has_lines);
    argus_cubin_free(&c);
    return 0;
}

/* ---- the entry point ---------------------------------------------------------- */

static const char *kind_name(int k)
{
    return k == ARGUS_SYNTH_IN_EVIDENCE   ? "evidence"
           : k == ARGUS_SYNTH_IN_ARTIFACT ? "artifact"
           : k == ARGUS_SYNTH_IN_OPS      ? "ops"
                                          : "synthesis";
}

int argus_synth_run(const argus_synth_req *r, argus_synth_out *out, char *msg, size_t msglen)
{
    if (r == NULL || out == NULL || r->rule == NULL || (r->nin > 0 && r->in == NULL))
        return argus__fail(ARGUS_EINVAL, msg, msglen, "synthesis: no request");
    memset(out, 0, sizeof *out);
    int (*rule)(synth *) = NULL;
    if (strcmp(r->rule, "region_stats") == 0)
        rule = rule_region_stats;
    else if (strcmp(r->rule, "kernel_stats") == 0)
        rule = rule_kernel_stats;
    else if (strcmp(r->rule, "pc_attribute") == 0)
        rule = rule_pc_attribute;
    else if (strcmp(r->rule, "metric_per_kernel") == 0)
        rule = rule_metric_per_kernel;
    else if (strcmp(r->rule, "probe_latency") == 0)
        rule = r->op != 0 ? rule_probe_branch : rule_probe_final;
    else if (strcmp(r->rule, "sass_listing") == 0)
        rule = rule_sass_listing;
    else
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "synthesis %s: unknown rule \"%s\" (known: region_stats, kernel_stats, "
                           "pc_attribute, metric_per_kernel, probe_latency, sass_listing)",
                           r->task ? r->task : "", r->rule);
    synth s;
    memset(&s, 0, sizeof s);
    s.r = r;
    s.root = cJSON_CreateObject();
    s.in_entry = calloc(r->nin + 1, sizeof *s.in_entry);
    if (s.root == NULL || s.in_entry == NULL) {
        cJSON_Delete(s.root);
        free(s.in_entry);
        return ARGUS_ENOMEM;
    }
    cJSON_AddStringToObject(s.root, "schema", ARGUS_SYNTH_SCHEMA);
    cJSON_AddNumberToObject(s.root, "version", ARGUS_SYNTH_VERSION);
    cJSON_AddStringToObject(s.root, "task", r->task ? r->task : "");
    cJSON_AddStringToObject(s.root, "rule", r->rule);
    cJSON_AddStringToObject(s.root, "signal", r->signal ? r->signal : "");
    s.inputs = cJSON_AddArrayToObject(s.root, "inputs");
    for (size_t i = 0; i < r->nin; i++) {
        const argus_synth_input *in = &r->in[i];
        cJSON *e = cJSON_CreateObject();
        s.in_entry[i] = e;
        cJSON_AddStringToObject(e, "kind", kind_name(in->kind));
        cJSON_AddStringToObject(e, "task", in->task ? in->task : "");
        cJSON_AddStringToObject(e, "rt_id", in->rt_id ? in->rt_id : "");
        cJSON_AddStringToObject(e, "output", in->output ? in->output : "");
        if (in->object)
            cJSON_AddStringToObject(e, "object", in->object);
        else
            cJSON_AddNullToObject(e, "object");
        if (in->backend)
            cJSON_AddStringToObject(e, "backend", in->backend);
        if (in->variant)
            cJSON_AddStringToObject(e, "variant", in->variant);
        cJSON_AddStringToObject(e, "state", in->data ? "not_used" : "missing");
        cJSON_AddItemToArray(s.inputs, e);
    }
    s.problems = cJSON_CreateArray();
    s.results = cJSON_CreateObject();
    int rc = s.problems && s.results ? rule(&s) : ARGUS_ENOMEM;
    /* An input nobody read that is missing is still a hole in the answer. */
    for (size_t i = 0; rc == 0 && i < r->nin; i++) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(s.in_entry[i], "state");
        if (r->in[i].data == NULL && cJSON_IsString(st) && strcmp(st->valuestring, "missing") == 0) {
            int said = 0;
            const cJSON *p;
            cJSON_ArrayForEach(p, s.problems)
            {
                const cJSON *ix = cJSON_GetObjectItemCaseSensitive(p, "input");
                said |= cJSON_IsNumber(ix) && (size_t)ix->valuedouble == i;
            }
            if (!said)
                problem(&s, (long)i, "no output %s: %s did not succeed (%s)",
                        r->in[i].output ? r->in[i].output : "",
                        r->in[i].rt_id ? r->in[i].rt_id : "its task",
                        r->in[i].missing && r->in[i].missing[0] ? r->in[i].missing
                                                                : "it did not finish");
        }
    }
    if (rc == 0 && !s.oom) {
        cJSON_AddBoolToObject(s.root, "complete", s.nproblems == 0);
        cJSON_AddItemToObject(s.root, "problems", s.problems);
        cJSON_AddItemToObject(s.root, "results", s.results);
        s.problems = s.results = NULL;
        out->json = cJSON_PrintUnformatted(s.root);
        if (out->json == NULL)
            rc = ARGUS_ENOMEM;
        else {
            out->len = strlen(out->json);
            out->complete = s.nproblems == 0;
            out->nproblems = s.nproblems;
            snprintf(out->first_problem, sizeof out->first_problem, "%s", s.first);
        }
    } else if (rc == 0) {
        rc = ARGUS_ENOMEM;
    }
    cJSON_Delete(s.problems);
    cJSON_Delete(s.results);
    cJSON_Delete(s.root);
    free(s.in_entry);
    if (rc == ARGUS_ENOMEM)
        argus__fail(rc, msg, msglen, "synthesis %s: out of memory", r->task ? r->task : "");
    return rc;
}

void argus_synth_out_free(argus_synth_out *out)
{
    if (out == NULL)
        return;
    cJSON_free(out->json);
    out->json = NULL;
}
