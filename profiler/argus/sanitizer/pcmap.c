/*
 * PC-to-region maps (include/argus/pcmap.h): the in-memory map that
 * argus-pcmap fills, its JSON file (argus.pcmap v1) and its hand-over to
 * attribution. Written with cJSON, read with the project's strict reader
 * (core/json.h: no duplicate keys, no trailing data), every field checked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "argus/pcmap.h"
#include "argus/shim.h"
#include "argus_internal.h"
#include "core/json.h"

#define MAX_COUNT 9007199254740992.0 /* 2^53: beyond it a JSON number loses units */

int argus_pcmap_new(argus_pcmap **out)
{
    argus_pcmap *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return ARGUS_ENOMEM;
    m->complete = 1;
    size_t root;
    int rc = argus_pcmap_region_of(m, NULL, 0, NULL, &root);
    if (rc != 0) {
        argus_pcmap_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void argus_pcmap_free(argus_pcmap *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n_regions; i++) {
        free(m->regions[i].path);
        free(m->regions[i].ids);
    }
    for (size_t i = 0; i < m->n_pcs; i++) {
        free(m->pcs[i].function);
        free(m->pcs[i].exec);
    }
    for (size_t i = 0; i < m->n_problems; i++)
        free(m->problems[i]);
    free(m->modules);
    free(m->launches);
    free(m->regions);
    free(m->pcs);
    free(m->problems);
    free(m);
}

int argus_pcmap_module(argus_pcmap *m, const char *sha256, size_t *idx)
{
    for (size_t i = 0; i < m->n_modules; i++)
        if (strcmp(m->modules[i], sha256) == 0) {
            *idx = i;
            return 0;
        }
    if (strlen(sha256) != 64 || argus__grow((void **)&m->modules, &m->cap_modules,
                                            m->n_modules + 1, sizeof(m->modules[0])) != 0)
        return strlen(sha256) != 64 ? ARGUS_EINVAL : ARGUS_ENOMEM;
    memcpy(m->modules[m->n_modules], sha256, 65);
    *idx = m->n_modules++;
    return 0;
}

int argus_pcmap_region_of(argus_pcmap *m, const uint32_t *ids, size_t depth,
                          const argus_registry *reg, size_t *idx)
{
    for (size_t i = 0; i < m->n_regions; i++) {
        const argus_pcmap_region *r = &m->regions[i];
        if (r->depth == depth && (depth == 0 || memcmp(r->ids, ids, depth * sizeof(*ids)) == 0)) {
            *idx = i;
            return 0;
        }
    }
    if (argus__grow((void **)&m->regions, &m->cap_regions, m->n_regions + 1,
                    sizeof(m->regions[0])) != 0)
        return ARGUS_ENOMEM;
    size_t plen = 1;
    char name[16];
    for (size_t d = 0; d < depth; d++)
        plen += strlen(argus__name(reg, ids[d], name, sizeof name)) + 1;
    argus_pcmap_region r = {calloc(1, plen), depth ? malloc(depth * sizeof(*ids)) : NULL, depth};
    if (r.path == NULL || (depth && r.ids == NULL)) {
        free(r.path);
        free(r.ids);
        return ARGUS_ENOMEM;
    }
    for (size_t d = 0; d < depth; d++) {
        if (d)
            strcat(r.path, "/");
        strcat(r.path, argus__name(reg, ids[d], name, sizeof name));
        r.ids[d] = ids[d];
    }
    m->regions[m->n_regions] = r;
    *idx = m->n_regions++;
    return 0;
}

static int same_fn(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int argus_pcmap_add(argus_pcmap *m, size_t module, const char *function, uint64_t offset,
                    int64_t iter, const char *role, const char *kind, size_t region,
                    uint64_t count, char *msg, size_t msglen)
{
    if (role == NULL)
        role = "";
    if (module >= m->n_modules || region >= m->n_regions || kind == NULL ||
        strlen(kind) >= sizeof(m->pcs[0].kind) || strlen(role) >= sizeof(m->pcs[0].role) ||
        iter < -1 || iter > (int64_t)ARGUS_VALUE_MASK)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "argus_pcmap_add: module %zu or region %zu out of range, or a bad kind",
                           module, region);
    argus_pcmap_pc *p = NULL;
    for (size_t i = m->n_pcs; i-- > 0;)
        if (m->pcs[i].module == module && m->pcs[i].offset == offset &&
            m->pcs[i].iter == iter && strcmp(m->pcs[i].role, role) == 0 &&
            same_fn(m->pcs[i].function, function)) {
            p = &m->pcs[i];
            break;
        }
    if (p == NULL) {
        if (argus__grow((void **)&m->pcs, &m->cap_pcs, m->n_pcs + 1, sizeof(m->pcs[0])) != 0)
            return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-pcmap: out of memory");
        p = &m->pcs[m->n_pcs];
        memset(p, 0, sizeof(*p));
        p->module = module;
        p->offset = offset;
        p->iter = iter;
        snprintf(p->role, sizeof p->role, "%s", role);
        snprintf(p->kind, sizeof p->kind, "%s", kind);
        if (function != NULL && (p->function = strdup(function)) == NULL)
            return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-pcmap: out of memory");
        m->n_pcs++;
    } else if (strcmp(p->kind, kind) != 0) {
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "PC %s+0x%llx is a %s and a %s: the map mixes two programs",
                           function ? function : "(absolute)", (unsigned long long)offset,
                           p->kind, kind);
    }
    for (size_t i = 0; i < p->n_exec; i++)
        if (p->exec[i].region == region) {
            p->exec[i].count += count;
            return 0;
        }
    if (argus__grow((void **)&p->exec, &p->cap_exec, p->n_exec + 1, sizeof(p->exec[0])) != 0)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-pcmap: out of memory");
    p->exec[p->n_exec++] = (argus_pcmap_exec){region, count};
    return 0;
}

int argus_pcmap_add_launch(argus_pcmap *m, const argus_pcmap_launch_info *l)
{
    if (argus__grow((void **)&m->launches, &m->cap_launches, m->n_launches + 1,
                    sizeof(m->launches[0])) != 0)
        return ARGUS_ENOMEM;
    m->launches[m->n_launches++] = *l;
    return 0;
}

int argus_pcmap_problem(argus_pcmap *m, const char *fmt, ...)
{
    m->complete = 0;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < m->n_problems; i++)
        if (strcmp(m->problems[i], buf) == 0)
            return 0;
    if (argus__grow((void **)&m->problems, &m->cap_problems, m->n_problems + 1,
                    sizeof(m->problems[0])) != 0)
        return ARGUS_ENOMEM;
    if ((m->problems[m->n_problems] = strdup(buf)) == NULL)
        return ARGUS_ENOMEM;
    m->n_problems++;
    return 0;
}

/* ---- writing ------------------------------------------------------------- */

static int cmp_pc(const void *a, const void *b)
{
    const argus_pcmap_pc *x = *(argus_pcmap_pc *const *)a, *y = *(argus_pcmap_pc *const *)b;
    if (x->module != y->module)
        return x->module < y->module ? -1 : 1;
    if (x->function == NULL || y->function == NULL) {
        if (x->function != y->function)
            return x->function == NULL ? 1 : -1;
    } else {
        int c = strcmp(x->function, y->function);
        if (c)
            return c;
    }
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    if (x->iter != y->iter)
        return x->iter < y->iter ? -1 : 1;
    return strcmp(x->role, y->role);
}

static int cmp_exec(const void *a, const void *b)
{
    const argus_pcmap_exec *x = a, *y = b;
    return x->region < y->region ? -1 : x->region > y->region;
}

static cJSON *u3(const uint32_t v[3])
{
    double d[3] = {v[0], v[1], v[2]};
    return cJSON_CreateDoubleArray(d, 3);
}

int argus_pcmap_write(const argus_pcmap *m, const char *path, char *msg, size_t msglen)
{
    cJSON *root = cJSON_CreateObject();
    const argus_pcmap_pc **order = m->n_pcs ? malloc(m->n_pcs * sizeof(*order)) : NULL;
    if (root == NULL || (m->n_pcs && order == NULL)) {
        cJSON_Delete(root);
        free(order);
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-pcmap: out of memory");
    }
    cJSON_AddStringToObject(root, "schema", ARGUS_PCMAP_SCHEMA);
    cJSON_AddNumberToObject(root, "version", ARGUS_PCMAP_VERSION);
    cJSON_AddStringToObject(root, "backend", "sanitizer_patch");
    cJSON_AddBoolToObject(root, "complete", m->complete);
    cJSON *pr = cJSON_AddArrayToObject(root, "problems");
    for (size_t i = 0; i < m->n_problems; i++)
        cJSON_AddItemToArray(pr, cJSON_CreateString(m->problems[i]));
    cJSON_AddStringToObject(root, "count", "warp-level executions");
    cJSON *mods = cJSON_AddArrayToObject(root, "modules");
    for (size_t i = 0; i < m->n_modules; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "sha256", m->modules[i]);
        cJSON_AddItemToArray(mods, o);
    }
    cJSON *ls = cJSON_AddArrayToObject(root, "launches");
    for (size_t i = 0; i < m->n_launches; i++) {
        const argus_pcmap_launch_info *l = &m->launches[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kernel", l->kernel);
        cJSON_AddNumberToObject(o, "module", (double)l->module);
        cJSON_AddItemToObject(o, "grid", u3(l->grid));
        cJSON_AddItemToObject(o, "block", u3(l->block));
        cJSON_AddStringToObject(o, "armed_by", l->armed_by_tool ? "argus-pcmap" : "program");
        cJSON_AddNumberToObject(o, "markers", (double)l->markers);
        cJSON_AddNumberToObject(o, "dropped", (double)l->dropped);
        cJSON_AddNumberToObject(o, "paths_dropped", (double)l->paths_dropped);
        cJSON_AddNumberToObject(o, "depth_overflow", (double)l->depth_overflow);
        cJSON_AddNumberToObject(o, "bad_end", (double)l->bad_end);
        cJSON_AddNumberToObject(o, "bad_warp", (double)l->bad_warp);
        cJSON_AddItemToArray(ls, o);
    }
    cJSON *rs = cJSON_AddArrayToObject(root, "regions");
    for (size_t i = 0; i < m->n_regions; i++) {
        cJSON *o = cJSON_CreateObject(), *ids = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "path", m->regions[i].path);
        for (size_t d = 0; d < m->regions[i].depth; d++) {
            char h[16];
            snprintf(h, sizeof h, "0x%07x", m->regions[i].ids[d]);
            cJSON_AddItemToArray(ids, cJSON_CreateString(h));
        }
        cJSON_AddItemToObject(o, "ids", ids);
        cJSON_AddItemToArray(rs, o);
    }
    for (size_t i = 0; i < m->n_pcs; i++)
        order[i] = &m->pcs[i];
    if (m->n_pcs)
        qsort(order, m->n_pcs, sizeof(*order), cmp_pc);
    cJSON *ps = cJSON_AddArrayToObject(root, "pcs");
    for (size_t i = 0; i < m->n_pcs; i++) {
        const argus_pcmap_pc *p = order[i];
        cJSON *o = cJSON_CreateObject(), *ex = cJSON_CreateArray();
        char h[24];
        snprintf(h, sizeof h, "0x%llx", (unsigned long long)p->offset);
        cJSON_AddNumberToObject(o, "module", (double)p->module);
        if (p->function)
            cJSON_AddStringToObject(o, "function", p->function);
        else
            cJSON_AddNullToObject(o, "function");
        cJSON_AddStringToObject(o, "offset", h);
        cJSON_AddStringToObject(o, "kind", p->kind);
        if (p->iter >= 0)
            cJSON_AddNumberToObject(o, "iter", (double)p->iter);
        else
            cJSON_AddNullToObject(o, "iter");
        if (p->role[0])
            cJSON_AddStringToObject(o, "role", p->role);
        else
            cJSON_AddNullToObject(o, "role");
        argus_pcmap_exec *sorted = malloc(p->n_exec * sizeof(*sorted) + 1);
        if (sorted != NULL) {
            memcpy(sorted, p->exec, p->n_exec * sizeof(*sorted));
            qsort(sorted, p->n_exec, sizeof(*sorted), cmp_exec);
            for (size_t k = 0; k < p->n_exec; k++) {
                double pair[2] = {(double)sorted[k].region, (double)sorted[k].count};
                cJSON_AddItemToArray(ex, cJSON_CreateDoubleArray(pair, 2));
            }
            free(sorted);
        }
        cJSON_AddItemToObject(o, "exec", ex);
        cJSON_AddItemToArray(ps, o);
    }
    free(order);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (text == NULL)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-pcmap: out of memory");
    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    int rc = 0;
    FILE *f = NULL;
    if (tmp == NULL) {
        rc = argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-pcmap: out of memory");
    } else {
        snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
        f = fopen(tmp, "w");
        int e = 0;
        if (f == NULL) {
            e = errno;
        } else {
            int bad_write = fputs(text, f) < 0 || fputc('\n', f) == EOF;
            if (bad_write)
                e = errno ? errno : EIO;
            if (fclose(f) != 0 && e == 0)
                e = errno;
            if (e == 0 && rename(tmp, path) != 0)
                e = errno;
            if (e != 0)
                unlink(tmp);
        }
        if (e != 0)
            rc = argus__fail(ARGUS_EIO, msg, msglen,
                             "%s: cannot write the PC-to-region map: %s; check that its folder "
                             "exists and is writable",
                             path, strerror(e));
    }
    free(tmp);
    cJSON_free(text);
    return rc;
}

/* ---- reading ------------------------------------------------------------- */

typedef struct rd {
    const char *path;
    char *msg;
    size_t msglen;
} rd;

static int bad(const rd *r, const char *field, const char *what)
{
    return argus__fail(ARGUS_EINVAL, r->msg, r->msglen, "%s: %s: %s", r->path, field, what);
}

/* Refuses keys outside known[] (NULL-terminated). */
static int keys_known(const rd *r, const cJSON *o, const char *where, const char *const *known)
{
    for (const cJSON *it = o->child; it != NULL; it = it->next) {
        size_t i = 0;
        while (known[i] && strcmp(known[i], it->string) != 0)
            i++;
        if (known[i] == NULL) {
            char f[160];
            snprintf(f, sizeof f, "%s.%s", where, it->string);
            return bad(r, f, "unknown key; the argus.pcmap v1 keys are in include/argus/pcmap.h");
        }
    }
    return 0;
}

static int get_count(const rd *r, const cJSON *o, const char *key, const char *where,
                     uint64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    char f[160];
    snprintf(f, sizeof f, "%s.%s", where, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > MAX_COUNT ||
        v->valuedouble != floor(v->valuedouble))
        return bad(r, f, "must be a whole number from 0 to 2^53");
    *out = (uint64_t)v->valuedouble;
    return 0;
}

static int get_hex(const rd *r, const char *s, const char *field, uint64_t max, uint64_t *out)
{
    if (s == NULL || strncmp(s, "0x", 2) != 0 || s[2] == '\0' || strlen(s) > 18)
        return bad(r, field, "must be a hex string \"0x...\"");
    uint64_t v = 0;
    for (const char *p = s + 2; *p; p++) {
        int d = (*p >= '0' && *p <= '9')   ? *p - '0'
                : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10
                : (*p >= 'A' && *p <= 'F') ? *p - 'A' + 10
                                           : -1;
        if (d < 0)
            return bad(r, field, "must be a hex string \"0x...\"");
        v = v * 16 + (uint64_t)d;
    }
    if (v > max)
        return bad(r, field, "is out of range");
    *out = v;
    return 0;
}

static int load_tree(const rd *r, const cJSON *root, argus_pcmap *m)
{
    static const char *const top[] = {"schema",  "version",  "backend", "complete", "problems",
                                      "count",   "modules",  "launches", "regions", "pcs", NULL};
    if (!cJSON_IsObject(root))
        return bad(r, "(document)", "must be a JSON object");
    int rc = keys_known(r, root, "", top);
    if (rc)
        return rc;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "schema");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, ARGUS_PCMAP_SCHEMA) != 0)
        return bad(r, "schema", "must be \"argus.pcmap\" (is this a PC-to-region map?)");
    v = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsNumber(v) || v->valuedouble != ARGUS_PCMAP_VERSION)
        return bad(r, "version", "must be 1 (a newer argus wrote this file: use that one)");
    v = cJSON_GetObjectItemCaseSensitive(root, "backend");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "sanitizer_patch") != 0)
        return bad(r, "backend", "must be \"sanitizer_patch\"");
    v = cJSON_GetObjectItemCaseSensitive(root, "count");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "warp-level executions") != 0)
        return bad(r, "count", "must be \"warp-level executions\"");
    v = cJSON_GetObjectItemCaseSensitive(root, "complete");
    if (!cJSON_IsBool(v))
        return bad(r, "complete", "must be true or false");
    m->complete = cJSON_IsTrue(v);
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(root, "problems");
    if (!cJSON_IsArray(pr))
        return bad(r, "problems", "must be an array of sentences");
    int np = 0;
    for (const cJSON *it = pr->child; it; it = it->next, np++) {
        if (!cJSON_IsString(it))
            return bad(r, "problems[]", "must be a string");
        if (argus_pcmap_problem(m, "%s", it->valuestring) != 0)
            return argus__fail(ARGUS_ENOMEM, r->msg, r->msglen, "out of memory");
    }
    if (cJSON_IsTrue(v) && np > 0)
        return bad(r, "complete", "is true but problems are listed: the file was edited");
    m->complete = cJSON_IsTrue(v);

    const cJSON *mods = cJSON_GetObjectItemCaseSensitive(root, "modules");
    if (!cJSON_IsArray(mods))
        return bad(r, "modules", "must be an array");
    static const char *const mod_keys[] = {"sha256", NULL};
    size_t i = 0;
    for (const cJSON *it = mods->child; it; it = it->next, i++) {
        char f[64];
        snprintf(f, sizeof f, "modules[%zu]", i);
        if (!cJSON_IsObject(it) || (rc = keys_known(r, it, f, mod_keys)) != 0)
            return rc ? rc : bad(r, f, "must be an object");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(it, "sha256");
        size_t idx;
        if (!cJSON_IsString(h) || strlen(h->valuestring) != 64 ||
            strspn(h->valuestring, "0123456789abcdef") != 64)
            return bad(r, f, "sha256 must be 64 lower-case hex digits");
        if (argus_pcmap_module(m, h->valuestring, &idx) != 0 || idx != i)
            return bad(r, f, "lists a module twice");
    }

    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(root, "launches");
    if (!cJSON_IsArray(ls))
        return bad(r, "launches", "must be an array");
    static const char *const l_keys[] = {"kernel",  "module",        "grid",           "block",
                                         "armed_by", "markers",      "dropped",        "paths_dropped",
                                         "depth_overflow", "bad_end", "bad_warp",      NULL};
    i = 0;
    for (const cJSON *it = ls->child; it; it = it->next, i++) {
        char f[64];
        snprintf(f, sizeof f, "launches[%zu]", i);
        if (!cJSON_IsObject(it) || (rc = keys_known(r, it, f, l_keys)) != 0)
            return rc ? rc : bad(r, f, "must be an object");
        argus_pcmap_launch_info l;
        memset(&l, 0, sizeof l);
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(it, "kernel");
        const cJSON *ab = cJSON_GetObjectItemCaseSensitive(it, "armed_by");
        if (!cJSON_IsString(k) || strlen(k->valuestring) >= sizeof l.kernel)
            return bad(r, f, "kernel must be a name");
        snprintf(l.kernel, sizeof l.kernel, "%s", k->valuestring);
        if (!cJSON_IsString(ab) || (strcmp(ab->valuestring, "program") != 0 &&
                                    strcmp(ab->valuestring, "argus-pcmap") != 0))
            return bad(r, f, "armed_by must be \"program\" or \"argus-pcmap\"");
        l.armed_by_tool = strcmp(ab->valuestring, "argus-pcmap") == 0;
        uint64_t mod;
        if ((rc = get_count(r, it, "module", f, &mod)) || (rc = get_count(r, it, "markers", f, &l.markers)) ||
            (rc = get_count(r, it, "dropped", f, &l.dropped)) ||
            (rc = get_count(r, it, "paths_dropped", f, &l.paths_dropped)) ||
            (rc = get_count(r, it, "depth_overflow", f, &l.depth_overflow)) ||
            (rc = get_count(r, it, "bad_end", f, &l.bad_end)) ||
            (rc = get_count(r, it, "bad_warp", f, &l.bad_warp)))
            return rc;
        if (mod >= m->n_modules)
            return bad(r, f, "module is not an index into modules");
        l.module = (size_t)mod;
        const char *dims[2] = {"grid", "block"};
        uint32_t *dst[2] = {l.grid, l.block};
        for (int d = 0; d < 2; d++) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(it, dims[d]);
            if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3)
                return bad(r, f, "grid and block must be [x, y, z]");
            for (int e = 0; e < 3; e++) {
                const cJSON *x = cJSON_GetArrayItem(a, e);
                if (!cJSON_IsNumber(x) || x->valuedouble < 1 || x->valuedouble > 4294967295.0 ||
                    x->valuedouble != floor(x->valuedouble))
                    return bad(r, f, "grid and block sizes must be whole numbers from 1");
                dst[d][e] = (uint32_t)x->valuedouble;
            }
        }
        if (argus_pcmap_add_launch(m, &l) != 0)
            return argus__fail(ARGUS_ENOMEM, r->msg, r->msglen, "out of memory");
    }

    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "regions");
    if (!cJSON_IsArray(rs) || cJSON_GetArraySize(rs) < 1)
        return bad(r, "regions", "must be an array starting with the root {\"path\": \"\"}");
    static const char *const r_keys[] = {"path", "ids", NULL};
    i = 0;
    for (const cJSON *it = rs->child; it; it = it->next, i++) {
        char f[64];
        snprintf(f, sizeof f, "regions[%zu]", i);
        if (!cJSON_IsObject(it) || (rc = keys_known(r, it, f, r_keys)) != 0)
            return rc ? rc : bad(r, f, "must be an object");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, "path");
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(it, "ids");
        if (!cJSON_IsString(p) || !cJSON_IsArray(ids))
            return bad(r, f, "needs a path (string) and ids (array)");
        size_t depth = (size_t)cJSON_GetArraySize(ids);
        if ((i == 0) != (depth == 0))
            return bad(r, f, i == 0 ? "the first region must be the root (no ids)"
                                    : "only the first region may be the root");
        uint32_t idv[64];
        if (depth > 64)
            return bad(r, f, "is nested deeper than 64 regions");
        size_t d = 0;
        for (const cJSON *x = ids->child; x; x = x->next, d++) {
            uint64_t id;
            char g[80];
            snprintf(g, sizeof g, "%s.ids[%zu]", f, d);
            if ((rc = get_hex(r, cJSON_IsString(x) ? x->valuestring : NULL, g, ARGUS_VALUE_MASK,
                              &id)) != 0)
                return rc;
            if (id == 0)
                return bad(r, g, "region ID 0 is the root, never a region");
            idv[d] = (uint32_t)id;
        }
        size_t idx = 0;
        if (i > 0) {
            if ((rc = argus_pcmap_region_of(m, idv, depth, NULL, &idx)) != 0)
                return argus__fail(rc, r->msg, r->msglen, "out of memory");
            if (idx != i)
                return bad(r, f, "lists a region path twice");
            char *np2 = strdup(p->valuestring);
            if (np2 == NULL)
                return argus__fail(ARGUS_ENOMEM, r->msg, r->msglen, "out of memory");
            free(m->regions[idx].path);
            m->regions[idx].path = np2;
        } else if (p->valuestring[0] != '\0') {
            return bad(r, f, "the root's path must be \"\"");
        }
    }

    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(root, "pcs");
    if (!cJSON_IsArray(ps))
        return bad(r, "pcs", "must be an array");
    static const char *const p_keys[] = {"module", "function", "offset", "kind",
                                         "iter",   "role",     "exec",   NULL};
    i = 0;
    for (const cJSON *it = ps->child; it; it = it->next, i++) {
        char f[64];
        snprintf(f, sizeof f, "pcs[%zu]", i);
        if (!cJSON_IsObject(it) || (rc = keys_known(r, it, f, p_keys)) != 0)
            return rc ? rc : bad(r, f, "must be an object");
        uint64_t mod, off;
        if ((rc = get_count(r, it, "module", f, &mod)) != 0)
            return rc;
        if (mod >= m->n_modules)
            return bad(r, f, "module is not an index into modules");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(it, "function");
        const cJSON *kd = cJSON_GetObjectItemCaseSensitive(it, "kind");
        const cJSON *of = cJSON_GetObjectItemCaseSensitive(it, "offset");
        const cJSON *ex = cJSON_GetObjectItemCaseSensitive(it, "exec");
        const cJSON *itv = cJSON_GetObjectItemCaseSensitive(it, "iter");
        const cJSON *rl = cJSON_GetObjectItemCaseSensitive(it, "role");
        if (!(cJSON_IsNull(fn) || (cJSON_IsString(fn) && fn->valuestring[0])))
            return bad(r, f, "function must be a name or null");
        int64_t iter = -1;
        if (cJSON_IsNumber(itv) && itv->valuedouble >= 0 &&
            itv->valuedouble <= (double)ARGUS_VALUE_MASK && itv->valuedouble == floor(itv->valuedouble))
            iter = (int64_t)itv->valuedouble;
        else if (!cJSON_IsNull(itv))
            return bad(r, f, "iter must be an iteration number (0 to 2^28 - 1) or null");
        if (!(cJSON_IsNull(rl) || (cJSON_IsString(rl) && rl->valuestring[0] && strlen(rl->valuestring) < 64)))
            return bad(r, f, "role must be a role name or null");
        const char *role = cJSON_IsString(rl) ? rl->valuestring : "";
        if (!cJSON_IsString(kd) || kd->valuestring[0] == '\0' || strlen(kd->valuestring) >= 24)
            return bad(r, f, "kind must name the instruction kind");
        char g[80];
        snprintf(g, sizeof g, "%s.offset", f);
        if ((rc = get_hex(r, cJSON_IsString(of) ? of->valuestring : NULL, g, UINT64_MAX, &off)) != 0)
            return rc;
        if (!cJSON_IsArray(ex) || cJSON_GetArraySize(ex) < 1)
            return bad(r, f, "exec must be a non-empty array of [region, count]");
        const char *fname = cJSON_IsString(fn) ? fn->valuestring : NULL;
        for (const argus_pcmap_pc *q = m->pcs; q < m->pcs + m->n_pcs; q++)
            if (q->module == mod && q->offset == off && q->iter == iter &&
                strcmp(q->role, role) == 0 && same_fn(q->function, fname))
                return bad(r, f, "lists a PC twice (with the same iter and role)");
        for (const cJSON *e = ex->child; e; e = e->next) {
            const cJSON *reg = cJSON_GetArrayItem(e, 0), *cnt = cJSON_GetArrayItem(e, 1);
            if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsNumber(reg) ||
                !cJSON_IsNumber(cnt) || reg->valuedouble < 0 ||
                reg->valuedouble >= (double)m->n_regions ||
                reg->valuedouble != floor(reg->valuedouble) || cnt->valuedouble < 1 ||
                cnt->valuedouble > MAX_COUNT || cnt->valuedouble != floor(cnt->valuedouble))
                return bad(r, f, "exec entries must be [index into regions, count from 1 to 2^53]");
            size_t before = m->n_pcs ? m->pcs[m->n_pcs - 1].n_exec : 0;
            const argus_pcmap_pc *last = m->n_pcs ? &m->pcs[m->n_pcs - 1] : NULL;
            int is_new_pc = last == NULL || last->module != mod || last->offset != off ||
                            last->iter != iter || strcmp(last->role, role) != 0 ||
                            !same_fn(last->function, fname);
            if ((rc = argus_pcmap_add(m, (size_t)mod, fname, off, iter, role, kd->valuestring,
                                      (size_t)reg->valuedouble, (uint64_t)cnt->valuedouble, r->msg,
                                      r->msglen)) != 0)
                return rc;
            if (!is_new_pc && m->pcs[m->n_pcs - 1].n_exec == before)
                return bad(r, f, "lists a region twice in exec");
        }
    }
    return 0;
}

int argus_pcmap_load(const char *path, argus_pcmap **out, char *msg, size_t msglen)
{
    *out = NULL;
    cJSON *root = NULL;
    char err[512];
    if (mosaic__json_read_file(path, 256L << 20, &root, err, sizeof err) != 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "%s", err);
    argus_pcmap *m;
    int rc = argus_pcmap_new(&m);
    if (rc == 0) {
        /* new made the root region, index 0, which the file's first
         * region must be. */
        rd r = {path, msg, msglen};
        m->complete = 1;
        rc = load_tree(&r, root, m);
    }
    cJSON_Delete(root);
    if (rc != 0) {
        argus_pcmap_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* ---- attribution ---------------------------------------------------------- */

static int fn_match(const char *have, const char *want)
{
    return strcmp(have, want) == 0 || strcmp(argus_cubin_func_base_name(have), want) == 0;
}

static int selected(const argus_pcmap_pc *p, const argus_pcmap_select *sel)
{
    if (sel == NULL)
        return 1;
    if (sel->has_iter && (p->iter < 0 || (uint64_t)p->iter < sel->iter_lo ||
                          (uint64_t)p->iter > sel->iter_hi))
        return 0;
    return sel->role == NULL || strcmp(sel->role, p->role) == 0;
}

int argus_pcmap_to_attrib(const argus_pcmap *m, const char *function,
                          const argus_pcmap_select *sel, argus_attrib *a, char *msg,
                          size_t msglen)
{
    const char *chosen = NULL;
    size_t module = 0;
    for (size_t i = 0; i < m->n_pcs; i++) {
        const argus_pcmap_pc *p = &m->pcs[i];
        if (p->function == NULL)
            continue;
        if (function != NULL ? fn_match(p->function, function)
                             : chosen == NULL || strcmp(chosen, p->function) == 0) {
            if (chosen != NULL && strcmp(chosen, p->function) != 0)
                return argus__fail(ARGUS_EINVAL, msg, msglen,
                                   "function \"%s\" names two functions of the map (%s, %s): give "
                                   "the full symbol",
                                   function, chosen, p->function);
            chosen = p->function;
            module = p->module;
        } else if (function == NULL) {
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "the map holds more than one function (%s, %s, ...): name the one "
                               "to attribute",
                               chosen, p->function);
        }
    }
    if (chosen == NULL) {
        char list[512] = "";
        size_t n = 0;
        for (size_t i = 0; i < m->n_pcs && n + 80 < sizeof list; i++) {
            const char *fn = m->pcs[i].function;
            if (fn == NULL || strstr(list, fn) != NULL)
                continue;
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%.70s", n ? ", " : "", fn);
        }
        return argus__fail(ARGUS_ENOREGION, msg, msglen,
                           "no PC of function \"%s\" in the map; it has: %s",
                           function ? function : "(any)", n ? list : "(none)");
    }
    char prog[96];
    snprintf(prog, sizeof prog, "cubin:sha256:%s", m->modules[module]);
    int rc = argus_attrib_program(a, prog, "the PC-to-region map", msg, msglen);
    for (size_t i = 0; rc == 0 && i < m->n_pcs; i++) {
        const argus_pcmap_pc *p = &m->pcs[i];
        if (p->function == NULL || p->module != module || strcmp(p->function, chosen) != 0 ||
            !selected(p, sel))
            continue;
        for (size_t k = 0; rc == 0 && k < p->n_exec; k++)
            rc = argus_attrib_add_exec(a, p->offset, m->regions[p->exec[k].region].path,
                                       p->exec[k].count, msg, msglen);
    }
    return rc;
}

/* ---- finding the library --------------------------------------------------- */

int argus_pcmap_find_sanitizer(char *buf, size_t buflen, char *msg, size_t msglen)
{
    const char *env = getenv("ARGUS_SANITIZER_LIB");
    struct stat st;
    if (env != NULL && env[0] != '\0') {
        if (stat(env, &st) == 0 && S_ISREG(st.st_mode)) {
            snprintf(buf, buflen, "%s", env);
            return 0;
        }
        return argus__fail(ARGUS_EIO, msg, msglen,
                           "ARGUS_SANITIZER_LIB=%s: no such file; point it at compute-sanitizer's "
                           "libsanitizer-public.so or unset it",
                           env);
    }
    static const char *const places[] = {
        "/usr/local/cuda/compute-sanitizer/libsanitizer-public.so",
        "/usr/local/cuda/extras/Sanitizer/libsanitizer-public.so",
        "/usr/local/cuda-13.0/compute-sanitizer/libsanitizer-public.so",
        "/opt/cuda/compute-sanitizer/libsanitizer-public.so"};
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++)
        if (stat(places[i], &st) == 0 && S_ISREG(st.st_mode)) {
            snprintf(buf, buflen, "%s", places[i]);
            return 0;
        }
    return argus__fail(ARGUS_EIO, msg, msglen,
                       "the CUDA Sanitizer API is missing: no libsanitizer-public.so under "
                       "/usr/local/cuda/compute-sanitizer, /usr/local/cuda/extras/Sanitizer, "
                       "/usr/local/cuda-13.0 or /opt/cuda; install compute-sanitizer (or pip's "
                       "nvidia-cuda-sanitizer-api) and set ARGUS_SANITIZER_LIB");
}
