/*
 * Argus queries: signals by name, the command-line and JSON forms of a
 * query, and its resolution against the region registry (argus/query.h,
 * docs/argus-plan.md).
 *
 * A request from a program is input like any file: it is parsed by the
 * core's strict JSON reader (no duplicate keys, no trailing data), unknown
 * keys are refused rather than ignored, and every name it carries is bounded
 * and checked against the lists it must come from, with the nearest valid
 * names offered, because an optimizer agent that misspells a signal must be
 * told so instead of getting a plan that answers nothing.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "argus/query.h"
#include "argus_internal.h"
#include "core.h"
#include "json.h"
#include "query_internal.h"

#define QUERY_MAX_BYTES (4L << 20)

static const char *const sig_names[] = {
#define ARGUS_X_SIG(e, name, what) name,
    ARGUS_SIGNALS(ARGUS_X_SIG)
#undef ARGUS_X_SIG
};
static const char *const sig_what[] = {
#define ARGUS_X_SIG(e, name, what) what,
    ARGUS_SIGNALS(ARGUS_X_SIG)
#undef ARGUS_X_SIG
};

const char *argus_signal_name(int sig)
{
    return sig >= 0 && sig < ARGUS_SIG_COUNT ? sig_names[sig] : NULL;
}

const char *argus_signal_what(int sig)
{
    return sig >= 0 && sig < ARGUS_SIG_COUNT ? sig_what[sig] : "unknown signal";
}

/* Levenshtein distance, bounded to names of ARGUS_QUERY_MAX_NAME bytes
 * (longer ones are compared by their first bytes: only a suggestion rides
 * on it). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strnlen(a, ARGUS_QUERY_MAX_NAME), lb = strnlen(b, ARGUS_QUERY_MAX_NAME);
    size_t row[ARGUS_QUERY_MAX_NAME + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

size_t argus_nearest_names(const char *name, const char *const *cands, size_t n, size_t max,
                           char *buf, size_t len)
{
    if (buf == NULL || len == 0)
        return 0;
    buf[0] = '\0';
    if (name == NULL || cands == NULL || max == 0)
        return 0;
    size_t nlen = strnlen(name, ARGUS_QUERY_MAX_NAME);
    /* A name is offered when a third of its letters (at least two) would
     * have to change, or when one name contains the other: close enough
     * that it is plausibly what was meant. */
    size_t limit = nlen / 3 > 2 ? nlen / 3 : 2;
    size_t written = 0, used = 0;
    for (size_t d = 0; d <= limit + 1 && written < max; d++) {
        for (size_t i = 0; i < n && written < max; i++) {
            if (cands[i] == NULL)
                continue;
            size_t dist = edit_distance(name, cands[i]);
            int sub = nlen > 0 && (strstr(cands[i], name) != NULL || strstr(name, cands[i]) != NULL);
            /* Substring matches rank after every name within the distance
             * limit (pass limit + 1). */
            int take = d <= limit ? dist == d : (sub && dist > limit);
            if (!take)
                continue;
            int k = snprintf(buf + used, len - used, "%s%s", written ? ", " : "", cands[i]);
            if (k < 0 || (size_t)k >= len - used)
                return written;
            used += (size_t)k;
            written++;
        }
    }
    return written;
}

/* "did you mean X? known: a, b, c" for a name from a fixed list. */
static void suggest(const char *name, const char *const *cands, size_t n, char *out, size_t len)
{
    char near[512];
    size_t k = argus_nearest_names(name, cands, n, 3, near, sizeof near);
    size_t used = 0;
    int w = snprintf(out, len, "%s%s%s", k ? "did you mean " : "", k ? near : "", k ? "? " : "");
    if (w < 0 || (size_t)w >= len)
        return;
    used = (size_t)w;
    w = snprintf(out + used, len - used, "known:");
    if (w < 0 || (size_t)w >= len - used)
        return;
    used += (size_t)w;
    for (size_t i = 0; i < n; i++) {
        w = snprintf(out + used, len - used, "%s %s", i ? "," : "", cands[i]);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
}

int argus_signal_from_name(const char *name, int *sig, char *msg, size_t msglen)
{
    if (name == NULL || sig == NULL)
        return ARGUS_EINVAL;
    for (int i = 0; i < ARGUS_SIG_COUNT; i++) {
        if (strcmp(name, sig_names[i]) == 0) {
            *sig = i;
            return 0;
        }
    }
    char hint[1024];
    suggest(name, sig_names, ARGUS_SIG_COUNT, hint, sizeof hint);
    return argus__fail(ARGUS_EINVAL, msg, msglen, "no signal \"%.256s\": %s", name, hint);
}

void argus_query_init(argus_query *q)
{
    memset(q, 0, sizeof(*q));
    q->scope.iter_lo = q->scope.iter_hi = -1;
    q->scope.cta_lo = q->scope.cta_hi = -1;
    q->scope.sm_lo = q->scope.sm_hi = -1;
    q->scope.warp_lo = q->scope.warp_hi = -1;
}

/* Copies s into a fixed field, refusing (rather than cutting) a name that
 * does not fit: a cut name would name something else. */
static int set_str(char *dst, size_t cap, const char *s, const char *field, char *msg,
                   size_t msglen)
{
    size_t n = strnlen(s, cap);
    if (n >= cap)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "%s: longer than %zu bytes", field, cap - 1);
    if (n == 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "%s: empty", field);
    memcpy(dst, s, n + 1);
    return 0;
}

static int parse_lohi(const char *field, const char *v, int64_t *lo, int64_t *hi, char *msg,
                      size_t msglen)
{
    char *end;
    errno = 0;
    long long a = strtoll(v, &end, 10), b = a;
    if (end != v && *end == ':') {
        const char *s = end + 1;
        b = strtoll(s, &end, 10);
        if (end == s)
            b = -1;
    }
    if (errno || end == v || *end != '\0' || a < 0 || b < a || b > (long long)UINT32_MAX)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "%s %.64s: expected LO:HI (or N) with 0 <= LO <= HI <= %u", field, v,
                           UINT32_MAX);
    *lo = a;
    *hi = b;
    return 0;
}

static int add_signal(argus_query *q, const char *name, char *msg, size_t msglen)
{
    int sig;
    int rc = argus_signal_from_name(name, &sig, msg, msglen);
    if (rc == 0)
        q->signals |= 1u << sig;
    return rc;
}

static int add_metric(argus_query *q, const char *name, const char *field, char *msg, size_t msglen)
{
    if (q->nmetrics >= ARGUS_QUERY_MAX_METRICS)
        return argus__fail(ARGUS_ELIMIT, msg, msglen, "%s: more than %u metrics", field,
                           ARGUS_QUERY_MAX_METRICS);
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != ':')
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "%s \"%.128s\": a metric name has letters, digits, '_', '.' "
                               "and ':' only (e.g. dram__bytes_read.sum)",
                               field, name);
    /* A name given twice (an option beside the request's field) asks once. */
    for (size_t i = 0; i < q->nmetrics; i++)
        if (strcmp(q->metrics[i], name) == 0)
            return 0;
    return set_str(q->metrics[q->nmetrics++], ARGUS_QUERY_MAX_NAME, name, field, msg, msglen);
}

/* One scope item "key=value" (role=NAME, iter=LO:HI, ...). */
static int scope_item(argus_query *q, const char *key, const char *val, char *msg, size_t msglen)
{
    argus_query_scope *s = &q->scope;
    if (strcmp(key, "role") == 0)
        return set_str(s->role, sizeof s->role, val, "scope role", msg, msglen);
    int64_t *lo = NULL, *hi = NULL;
    if (strcmp(key, "iter") == 0) {
        lo = &s->iter_lo;
        hi = &s->iter_hi;
    } else if (strcmp(key, "cta") == 0) {
        lo = &s->cta_lo;
        hi = &s->cta_hi;
    } else if (strcmp(key, "sm") == 0) {
        lo = &s->sm_lo;
        hi = &s->sm_hi;
    } else if (strcmp(key, "warp") == 0) {
        lo = &s->warp_lo;
        hi = &s->warp_hi;
    } else {
        static const char *const keys[] = {"role", "iter", "cta", "sm", "warp"};
        char hint[256];
        suggest(key, keys, 5, hint, sizeof hint);
        return argus__fail(ARGUS_EINVAL, msg, msglen, "scope %.64s: not a scope coordinate; %s",
                           key, hint);
    }
    char field[80];
    snprintf(field, sizeof field, "scope %s", key);
    return parse_lohi(field, val, lo, hi, msg, msglen);
}

static int scope_spec(argus_query *q, const char *spec, char *msg, size_t msglen)
{
    char buf[1024];
    if (strnlen(spec, sizeof buf) >= sizeof buf)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "--scope: longer than %zu bytes",
                           sizeof buf - 1);
    strcpy(buf, spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (eq == NULL)
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "--scope %.128s: expected KEY=VALUE (role=NAME, iter=LO:HI, "
                               "cta=LO:HI, sm=LO:HI, warp=LO:HI)",
                               item);
        *eq = '\0';
        int rc = scope_item(q, item, eq + 1, msg, msglen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int argus_query_from_args(argus_query *q, int argc, char **argv, int *used, char *msg,
                          size_t msglen)
{
    int i = 0, rc = 0;
    for (; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        static const char *const opts[] = {"--program", "--registry", "--region", "--signal",
                                           "--metric",  "--scope",    "--role",   "--iter",
                                           "--cta",     "--sm",       "--warp",
                                           "--metrics"};
        size_t k = 0;
        while (k < sizeof opts / sizeof opts[0] && strcmp(a, opts[k]) != 0)
            k++;
        if (k == sizeof opts / sizeof opts[0])
            break;
        if (v == NULL)
            return argus__fail(ARGUS_EINVAL, msg, msglen, "%s needs a value", a);
        i++;
        switch (k) {
        case 0:
            rc = set_str(q->program, sizeof q->program, v, "--program", msg, msglen);
            break;
        case 1:
            rc = set_str(q->registry, sizeof q->registry, v, "--registry", msg, msglen);
            break;
        case 2:
            rc = set_str(q->region, sizeof q->region, v, "--region", msg, msglen);
            break;
        case 3: {
            char buf[1024];
            if (strnlen(v, sizeof buf) >= sizeof buf)
                return argus__fail(ARGUS_EINVAL, msg, msglen, "--signal: too long");
            strcpy(buf, v);
            char *save = NULL;
            for (char *s = strtok_r(buf, ",", &save); s && rc == 0; s = strtok_r(NULL, ",", &save))
                rc = add_signal(q, s, msg, msglen);
            break;
        }
        case 4:
            rc = add_metric(q, v, "--metric", msg, msglen);
            break;
        case 5:
            rc = scope_spec(q, v, msg, msglen);
            break;
        case 11: {
            /* --metrics a,b: the same as --metric a --metric b. */
            char buf[4096];
            if (strnlen(v, sizeof buf) >= sizeof buf)
                return argus__fail(ARGUS_EINVAL, msg, msglen, "--metrics: too long");
            strcpy(buf, v);
            char *save = NULL;
            for (char *s = strtok_r(buf, ",", &save); s && rc == 0; s = strtok_r(NULL, ",", &save))
                rc = add_metric(q, s, "--metrics", msg, msglen);
            break;
        }
        default:
            rc = scope_item(q, a + 2, v, msg, msglen);
            break;
        }
    }
    if (used != NULL)
        *used = i;
    return rc;
}

/* ---- the JSON request ------------------------------------------------- */

static int req_fail(char *msg, size_t msglen, const char *path, const char *field, const char *what)
{
    return argus__fail(ARGUS_EFORMAT, msg, msglen, "%s: %s: %s", path, field, what);
}

/* [LO, HI] or N (a single iteration, CTA, ...). */
static int json_range(const cJSON *v, const char *path, const char *field, int64_t *lo,
                      int64_t *hi, char *msg, size_t msglen)
{
    double a, b;
    if (cJSON_IsNumber(v)) {
        a = b = v->valuedouble;
    } else if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2 &&
               cJSON_IsNumber(cJSON_GetArrayItem(v, 0)) && cJSON_IsNumber(cJSON_GetArrayItem(v, 1))) {
        a = cJSON_GetArrayItem(v, 0)->valuedouble;
        b = cJSON_GetArrayItem(v, 1)->valuedouble;
    } else {
        return req_fail(msg, msglen, path, field, "expected [LO, HI] or N (whole numbers)");
    }
    if (!(a >= 0 && b >= a && b <= (double)UINT32_MAX) || a != (double)(int64_t)a ||
        b != (double)(int64_t)b)
        return req_fail(msg, msglen, path, field,
                        "expected whole numbers with 0 <= LO <= HI <= 4294967295");
    *lo = (int64_t)a;
    *hi = (int64_t)b;
    return 0;
}

static int json_str(const cJSON *v, const char *path, const char *field, char *dst, size_t cap,
                    char *msg, size_t msglen)
{
    if (!cJSON_IsString(v) || v->valuestring[0] == '\0')
        return req_fail(msg, msglen, path, field, "expected a non-empty string");
    if (strlen(v->valuestring) >= cap)
        return argus__fail(ARGUS_EFORMAT, msg, msglen, "%s: %s: longer than %zu bytes", path,
                           field, cap - 1);
    strcpy(dst, v->valuestring);
    return 0;
}

/* Refuses keys outside `known`: a misspelt key must not pass silently. */
static int only_keys(const cJSON *obj, const char *const *known, size_t n, const char *path,
                     const char *where, char *msg, size_t msglen)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        size_t k = 0;
        while (k < n && strcmp(c->string, known[k]) != 0)
            k++;
        if (k < n)
            continue;
        char hint[512];
        suggest(c->string, known, n, hint, sizeof hint);
        return argus__fail(ARGUS_EFORMAT, msg, msglen, "%s: %s%s%.128s: unknown key; %s", path,
                           where, where[0] ? "." : "", c->string, hint);
    }
    return 0;
}

static int parse_doc(argus_query *q, const cJSON *root, const char *path, char *msg, size_t msglen)
{
    static const char *const top[] = {"schema",  "version", "program", "registry",
                                      "region",  "scope",   "signals", "metrics"};
    static const char *const scope_keys[] = {"role", "iter", "cta", "sm", "warp"};
    if (!cJSON_IsObject(root))
        return req_fail(msg, msglen, path, "(document)", "expected an object");
    int rc = only_keys(root, top, sizeof top / sizeof top[0], path, "", msg, msglen);
    if (rc != 0)
        return rc;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, ARGUS_QUERY_SCHEMA) != 0)
        return req_fail(msg, msglen, path, "schema", "expected \"" ARGUS_QUERY_SCHEMA "\"");
    if (!cJSON_IsNumber(version) || version->valuedouble != ARGUS_QUERY_VERSION)
        return argus__fail(ARGUS_EFORMAT, msg, msglen,
                           "%s: version: this argus reads request version %d only", path,
                           ARGUS_QUERY_VERSION);
    const cJSON *v;
    if ((rc = json_str(cJSON_GetObjectItemCaseSensitive(root, "program"), path, "program",
                       q->program, sizeof q->program, msg, msglen)) != 0)
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "registry")) != NULL &&
        (rc = json_str(v, path, "registry", q->registry, sizeof q->registry, msg, msglen)) != 0)
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "region")) != NULL &&
        (rc = json_str(v, path, "region", q->region, sizeof q->region, msg, msglen)) != 0)
        return rc;
    const cJSON *scope = cJSON_GetObjectItemCaseSensitive(root, "scope");
    if (scope != NULL) {
        if (!cJSON_IsObject(scope))
            return req_fail(msg, msglen, path, "scope", "expected an object");
        if ((rc = only_keys(scope, scope_keys, 5, path, "scope", msg, msglen)) != 0)
            return rc;
        argus_query_scope *s = &q->scope;
        if ((v = cJSON_GetObjectItemCaseSensitive(scope, "role")) != NULL &&
            (rc = json_str(v, path, "scope.role", s->role, sizeof s->role, msg, msglen)) != 0)
            return rc;
        struct {
            const char *key;
            int64_t *lo, *hi;
        } r[] = {{"iter", &s->iter_lo, &s->iter_hi},
                 {"cta", &s->cta_lo, &s->cta_hi},
                 {"sm", &s->sm_lo, &s->sm_hi},
                 {"warp", &s->warp_lo, &s->warp_hi}};
        for (size_t i = 0; i < 4; i++) {
            char field[32];
            snprintf(field, sizeof field, "scope.%s", r[i].key);
            if ((v = cJSON_GetObjectItemCaseSensitive(scope, r[i].key)) != NULL &&
                (rc = json_range(v, path, field, r[i].lo, r[i].hi, msg, msglen)) != 0)
                return rc;
        }
    }
    const cJSON *sigs = cJSON_GetObjectItemCaseSensitive(root, "signals");
    if (!cJSON_IsArray(sigs) || cJSON_GetArraySize(sigs) == 0)
        return req_fail(msg, msglen, path, "signals",
                        "expected a non-empty array of signal names (e.g. [\"region_time\"])");
    int i = 0;
    for (const cJSON *s = sigs->child; s; s = s->next, i++) {
        char why[1024];
        if (!cJSON_IsString(s))
            return argus__fail(ARGUS_EFORMAT, msg, msglen, "%s: signals[%d]: expected a string",
                               path, i);
        if (add_signal(q, s->valuestring, why, sizeof why) != 0)
            return argus__fail(ARGUS_EFORMAT, msg, msglen, "%s: signals[%d]: %s", path, i, why);
    }
    const cJSON *mets = cJSON_GetObjectItemCaseSensitive(root, "metrics");
    if (mets != NULL) {
        if (!cJSON_IsArray(mets))
            return req_fail(msg, msglen, path, "metrics", "expected an array of metric names");
        i = 0;
        for (const cJSON *m = mets->child; m; m = m->next, i++) {
            char field[32], why[512];
            snprintf(field, sizeof field, "metrics[%d]", i);
            if (!cJSON_IsString(m))
                return req_fail(msg, msglen, path, field, "expected a string");
            if ((rc = add_metric(q, m->valuestring, field, why, sizeof why)) != 0)
                return argus__fail(ARGUS_EFORMAT, msg, msglen, "%s: %s", path, why);
        }
    }
    return 0;
}

static int core_to_argus(int rc)
{
    if (rc == MOSAIC_ENOMEM)
        return ARGUS_ENOMEM;
    if (rc == MOSAIC_EIO)
        return ARGUS_EIO;
    return ARGUS_EFORMAT;
}

int argus_query_parse_json(argus_query *q, const char *text, size_t len, const char *path,
                           char *msg, size_t msglen)
{
    if (q == NULL || text == NULL)
        return ARGUS_EINVAL;
    if (path == NULL)
        path = "<request>";
    cJSON *root = NULL;
    int rc = mosaic__json_parse_strict(path, text, len, &root, msg, msglen);
    if (rc != 0)
        return core_to_argus(rc);
    rc = parse_doc(q, root, path, msg, msglen);
    cJSON_Delete(root);
    return rc;
}

int argus_query_load_json(argus_query *q, const char *path, char *msg, size_t msglen)
{
    if (q == NULL || path == NULL)
        return ARGUS_EINVAL;
    if (strcmp(path, "-") != 0) {
        char *text = NULL;
        int rc = mosaic__read_file(path, QUERY_MAX_BYTES, &text, msg, msglen);
        if (rc != 0)
            return core_to_argus(rc);
        if (text[0] == '\0') {
            free(text);
            return argus__fail(ARGUS_EFORMAT, msg, msglen, "%s: the request is empty", path);
        }
        rc = argus_query_parse_json(q, text, strlen(text), path, msg, msglen);
        free(text);
        return rc;
    }
    /* Standard input: an agent pipes its request. Read to the limit, then
     * parse; a pipe has no size to check first. */
    size_t cap = 1 << 12, n = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "<stdin>: out of memory");
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (n < cap)
            break;
        if (cap >= (size_t)QUERY_MAX_BYTES) {
            free(buf);
            return argus__fail(ARGUS_EFORMAT, msg, msglen, "<stdin>: the request is larger than %ld bytes",
                               QUERY_MAX_BYTES);
        }
        char *nb = realloc(buf, cap * 2);
        if (nb == NULL) {
            free(buf);
            return argus__fail(ARGUS_ENOMEM, msg, msglen, "<stdin>: out of memory");
        }
        buf = nb;
        cap *= 2;
    }
    int rc;
    if (ferror(stdin))
        rc = argus__fail(ARGUS_EIO, msg, msglen, "<stdin>: read error");
    else if (n == 0)
        rc = argus__fail(ARGUS_EFORMAT, msg, msglen, "<stdin>: the request is empty");
    else
        rc = argus_query_parse_json(q, buf, n, "<stdin>", msg, msglen);
    free(buf);
    return rc;
}

static cJSON *range_json(int64_t lo, int64_t hi)
{
    cJSON *a = cJSON_CreateArray();
    if (a != NULL) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)lo));
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)hi));
    }
    return a;
}

cJSON *argus__query_json(const argus_query *q)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "schema", ARGUS_QUERY_SCHEMA);
    cJSON_AddNumberToObject(o, "version", ARGUS_QUERY_VERSION);
    cJSON_AddStringToObject(o, "program", q->program);
    if (q->registry[0])
        cJSON_AddStringToObject(o, "registry", q->registry);
    if (q->region[0])
        cJSON_AddStringToObject(o, "region", q->region);
    cJSON *s = cJSON_AddObjectToObject(o, "scope");
    const argus_query_scope *sc = &q->scope;
    if (s != NULL) {
        if (sc->role[0])
            cJSON_AddStringToObject(s, "role", sc->role);
        if (sc->iter_lo >= 0)
            cJSON_AddItemToObject(s, "iter", range_json(sc->iter_lo, sc->iter_hi));
        if (sc->cta_lo >= 0)
            cJSON_AddItemToObject(s, "cta", range_json(sc->cta_lo, sc->cta_hi));
        if (sc->sm_lo >= 0)
            cJSON_AddItemToObject(s, "sm", range_json(sc->sm_lo, sc->sm_hi));
        if (sc->warp_lo >= 0)
            cJSON_AddItemToObject(s, "warp", range_json(sc->warp_lo, sc->warp_hi));
    }
    cJSON *sigs = cJSON_AddArrayToObject(o, "signals");
    for (int i = 0; sigs != NULL && i < ARGUS_SIG_COUNT; i++)
        if (q->signals & (1u << i))
            cJSON_AddItemToArray(sigs, cJSON_CreateString(sig_names[i]));
    if (q->nmetrics > 0) {
        cJSON *m = cJSON_AddArrayToObject(o, "metrics");
        for (size_t i = 0; m != NULL && i < q->nmetrics; i++)
            cJSON_AddItemToArray(m, cJSON_CreateString(q->metrics[i]));
    }
    return o;
}

int argus_query_write_json(const argus_query *q, FILE *f)
{
    if (q == NULL || f == NULL)
        return ARGUS_EINVAL;
    return argus__json_write(argus__query_json(q), f, 1);
}

/* ---- resolution ---------------------------------------------------------- */

/* The registered region (not role) names, for suggestions; *n gets the
 * count. The caller frees the array (not the names, which are the
 * registry's). */
static const char **region_names(const argus_registry *reg, int roles, size_t *n)
{
    size_t total = argus_registry_count(reg), k = 0;
    const char **v = calloc(total + 1, sizeof(*v));
    for (size_t i = 0; v != NULL && i < total; i++) {
        uint32_t id, parent;
        const char *name;
        int is_role;
        if (argus_registry_entry(reg, i, &id, &name, &parent, &is_role) == 0 &&
            (is_role != 0) == (roles != 0))
            v[k++] = name;
    }
    *n = k;
    return v;
}

static int region_path(const argus_registry *reg, uint32_t id, char *buf, size_t len)
{
    /* Walk to the root, then write the names outermost first; the depth
     * bound keeps a registry with a parent cycle from looping. */
    uint32_t chain[ARGUS_MAX_DEPTH];
    size_t n = 0;
    for (uint32_t cur = id; cur != 0 && n < ARGUS_MAX_DEPTH;) {
        chain[n++] = cur;
        int64_t p = argus_registry_parent(reg, cur);
        if (p < 0)
            break;
        cur = (uint32_t)p;
    }
    size_t used = 0;
    buf[0] = '\0';
    while (n-- > 0) {
        const char *name = argus_registry_name(reg, chain[n]);
        int w = snprintf(buf + used, len - used, "%s%s", used ? "/" : "", name ? name : "?");
        if (w < 0 || (size_t)w >= len - used)
            return ARGUS_ERANGE;
        used += (size_t)w;
    }
    return 0;
}

static int no_region(const argus_registry *reg, const char *what, const char *name, int roles,
                     char *msg, size_t msglen)
{
    size_t n = 0;
    const char **names = region_names(reg, roles, &n);
    if (names == NULL)
        return ARGUS_ENOMEM;
    char near[512];
    size_t k = argus_nearest_names(name, names, n, 3, near, sizeof near);
    char all[1024];
    size_t used = 0;
    all[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(all + used, sizeof all - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= sizeof all - used)
            break;
        used += (size_t)w;
    }
    free(names);
    return argus__fail(ARGUS_ENOREGION, msg, msglen,
                       "%s \"%.256s\": no such %s in the registry%s%s%s; registered: %s", what,
                       name, roles ? "role" : "region", k ? "; did you mean " : "",
                       k ? near : "", k ? "?" : "", n ? all : "(none)");
}

int argus_query_resolve(argus_query *q, const argus_registry *reg, char *msg, size_t msglen)
{
    if (q == NULL)
        return ARGUS_EINVAL;
    if (q->program[0] == '\0')
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "the query names no program: give --program P (or \"program\" in "
                           "the request)");
    if (q->signals == 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "the query asks for no signal: give --signal S (one of "
                           "region_time, kernel_time, stall_reasons_pc, inst_executed_pc, "
                           "hw_metrics, async_latency)");
    q->region_id = 0;
    q->region_path[0] = '\0';
    q->role_id = 0;
    if (q->region[0] != '\0') {
        if (reg == NULL)
            return argus__fail(ARGUS_ENOREGION, msg, msglen,
                               "region \"%.256s\": the program has no registry to find it in",
                               q->region);
        const char *r = q->region;
        uint32_t id = 0;
        if (r[0] == '0' && (r[1] == 'x' || r[1] == 'X')) {
            char *end;
            errno = 0;
            unsigned long v = strtoul(r + 2, &end, 16);
            const char *name = (errno || *end || v == 0 || v > 0x0fffffffUL)
                                   ? NULL
                                   : argus_registry_name(reg, (uint32_t)v);
            if (name == NULL)
                return no_region(reg, "region", r, 0, msg, msglen);
            id = (uint32_t)v;
        } else if (strchr(r, '/') != NULL) {
            /* A path: each name's ID follows from its parent's (record.h),
             * so the path is walked by hashing, then checked. */
            char buf[ARGUS_QUERY_MAX_NAME];
            strcpy(buf, r);
            char *save = NULL;
            for (char *part = strtok_r(buf, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
                uint32_t next = argus_region_id(part, id);
                if (argus_registry_name(reg, next) == NULL)
                    return no_region(reg, "region", part, 0, msg, msglen);
                id = next;
            }
        } else {
            uint32_t ids[8];
            size_t n = argus_registry_find(reg, r, ids, 8);
            size_t k = 0;
            /* A role shares the name space; only regions count here. */
            for (size_t i = 0; i < n && i < 8; i++) {
                uint32_t rid, par;
                const char *nm;
                int is_role = 0;
                for (size_t e = 0; e < argus_registry_count(reg); e++)
                    if (argus_registry_entry(reg, e, &rid, &nm, &par, &is_role) == 0 &&
                        rid == ids[i])
                        break;
                if (!is_role)
                    ids[k++] = ids[i];
            }
            if (k == 0)
                return no_region(reg, "region", r, 0, msg, msglen);
            if (k > 1) {
                char p1[512], p2[512];
                if (region_path(reg, ids[0], p1, sizeof p1) != 0 ||
                    region_path(reg, ids[1], p2, sizeof p2) != 0)
                    p1[0] = p2[0] = '\0';
                return argus__fail(ARGUS_ENOREGION, msg, msglen,
                                   "region \"%.256s\": %zu regions have that name (%s, %s%s); "
                                   "name one by its path or its ID",
                                   r, k, p1, p2, k > 2 ? ", ..." : "");
            }
            id = ids[0];
        }
        q->region_id = id;
        if (region_path(reg, id, q->region_path, sizeof q->region_path) != 0)
            return argus__fail(ARGUS_ERANGE, msg, msglen, "region \"%.256s\": its path is too long",
                               r);
    }
    if (q->scope.role[0] != '\0') {
        uint32_t rid = argus_region_id(q->scope.role, 0);
        const char *name = reg ? argus_registry_name(reg, rid) : NULL;
        if (name == NULL || strcmp(name, q->scope.role) != 0)
            return reg ? no_region(reg, "scope role", q->scope.role, 1, msg, msglen)
                       : argus__fail(ARGUS_ENOREGION, msg, msglen,
                                     "scope role \"%.256s\": the program has no registry",
                                     q->scope.role);
        q->role_id = rid;
    }
    return 0;
}

int argus_query_registry(const argus_query *q, argus_registry **out, char *msg, size_t msglen)
{
    if (q == NULL || out == NULL)
        return ARGUS_EINVAL;
    *out = NULL;
    if (q->registry[0] != '\0')
        return argus_registry_load(q->registry, out, msg, msglen);
    char first[1024] = "";
    int rc = argus_registry_load(q->program, out, first, sizeof first);
    if (rc == 0)
        return 0;
    char beside[4200];
    int w = snprintf(beside, sizeof beside, "%s.argus.json", q->program);
    if (w < 0 || (size_t)w >= sizeof beside)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "--program: the path is too long");
    char second[1024] = "";
    rc = argus_registry_load(beside, out, second, sizeof second);
    if (rc == 0)
        return 0;
    return argus__fail(rc, msg, msglen,
                       "no registry for program %.1024s: not in the program (%s) nor beside it "
                       "(%s); give --registry REG (written by `argus registry`)",
                       q->program, first, second);
}
