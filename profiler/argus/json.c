/*
 * JSON outputs (cJSON): the region report (schema argus.report v1), the
 * Chrome/Perfetto trace-event file, and the registry file (argus.registry
 * v1). docs/argus.md documents all three.
 *
 * In the report every number is an object {"value", "unit", "mark"}, with
 * mark "observed" (read from the records or the globaltimer), "derived"
 * (computed from observed numbers, the method named beside it) or
 * "attributed" (not used yet: Argus part 2 attributes counters to regions),
 * so that a program reading the report can never mistake one for another.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/shim.h"
#include "argus_internal.h"
#include "core.h"
#include "json_internal.h"

#define ARGUS_REPORT_SCHEMA "argus.report"
#define ARGUS_REPORT_VERSION 1
#define ARGUS_REGISTRY_SCHEMA "argus.registry"
#define ARGUS_REGISTRY_VERSION 1

cJSON *argus__jnum(double v, const char *unit, const char *mark)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddNumberToObject(o, "value", v);
    cJSON_AddStringToObject(o, "unit", unit);
    cJSON_AddStringToObject(o, "mark", mark);
    return o;
}

int argus__json_write(cJSON *root, FILE *f, int pretty)
{
    char *text = root == NULL ? NULL : pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (text == NULL)
        return ARGUS_ENOMEM;
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    cJSON_free(text);
    return ok ? 0 : ARGUS_EIO;
}

static void add_diags(cJSON *root, const argus_trace *t);
static int registry_write(const argus_registry *r, FILE *f);

static void id_str(uint32_t id, char *buf, size_t len)
{
    if (snprintf(buf, len, "0x%07x", id) < 0 && len)
        buf[0] = '\0';
}

/* The report's "scope" object: the selection the statistics were made
 * over (all occurrences when s is NULL), in both kinds of report. */
static void add_scope(cJSON *root, const argus_scope *s)
{
    cJSON *scope = cJSON_AddObjectToObject(root, "scope");
    argus_scope all;
    argus_scope_all(&all);
    const argus_scope *sc = s ? s : &all;
    char idb[16];
    cJSON_AddNumberToObject(scope, "iter_lo", (double)sc->iter_lo);
    cJSON_AddNumberToObject(scope, "iter_hi", (double)sc->iter_hi);
    id_str(sc->role, idb, sizeof(idb));
    cJSON_AddStringToObject(scope, "role", sc->role ? idb : "any");
    cJSON_AddNumberToObject(scope, "cta_lo", sc->cta_lo);
    cJSON_AddNumberToObject(scope, "cta_hi", sc->cta_hi);
    cJSON_AddNumberToObject(scope, "sm_lo", sc->sm_lo);
    cJSON_AddNumberToObject(scope, "sm_hi", sc->sm_hi);
    cJSON_AddNumberToObject(scope, "warp_lo", sc->warp_lo);
    cJSON_AddNumberToObject(scope, "warp_hi", sc->warp_hi);
    id_str(sc->region, idb, sizeof(idb));
    cJSON_AddStringToObject(scope, "region", sc->region ? idb : "any");
}

static const char *clock_method(int m)
{
    return m == ARGUS_CLOCK_GIVEN ? "given" : m == ARGUS_CLOCK_ANCHORS ? "globaltimer_anchors" : "none";
}

int argus_report_json(const argus_trace *t, const argus_registry *reg, const argus_scope *s,
                      const char *kernel, FILE *f)
{
    return argus_report_json_metrics(t, reg, s, kernel, NULL, NULL, f);
}

/* The device report's metrics: one launch (the buffer's grid and block;
 * the buffer does not hold the dynamic shared memory). Its warps' SM IDs
 * must fit the profile's GPU. */
static void add_device_metrics(cJSON *root, const argus_trace *t, const argus_metrics *m,
                               const argus_kcfg *k)
{
    argus__metrics_counts c = {0};
    cJSON *hw = NULL;
    if (m && m->state == ARGUS_METRICS_LOADED && k) {
        char other[512];
        const char *og = argus_metrics_check_trace(m, t, other, sizeof(other)) != 0 ? other : NULL;
        snprintf(c.device_note, sizeof(c.device_note),
                 "the buffer names no GPU; its warps' SM IDs were checked against the profile's "
                 "SM count");
        int st = 0;
        hw = cJSON_CreateArray();
        cJSON *cfg = argus__metrics_cfg_json(m, k, 1, og, &st);
        cJSON_AddItemToArray(hw, cfg);
        c.joined += st == ARGUS_JOIN_OK;
        c.none += st == ARGUS_JOIN_NONE;
        c.ambiguous += st == ARGUS_JOIN_AMBIGUOUS;
        c.other_gpu += st < 0;
        c.launches_joined += st == ARGUS_JOIN_OK;
        c.launches_unjoined += st != ARGUS_JOIN_OK;
    }
    cJSON_AddItemToObject(root, "metrics", argus__metrics_run_json(m, m && k ? &c : NULL));
    if (hw)
        cJSON_AddItemToObject(root, "hw_metrics", hw);
}

int argus_report_json_metrics(const argus_trace *t, const argus_registry *reg,
                              const argus_scope *s, const char *kernel, const argus_metrics *m,
                              const argus_kcfg *k, FILE *f)
{
    if (t == NULL || f == NULL)
        return ARGUS_EINVAL;
    argus_region_stats *st;
    size_t n;
    int rc = argus_stats(t, s, &st, &n);
    if (rc != 0)
        return rc;
    cJSON *root = cJSON_CreateObject();
    if (root == NULL) {
        free(st);
        return ARGUS_ENOMEM;
    }
    cJSON_AddStringToObject(root, "schema", ARGUS_REPORT_SCHEMA);
    cJSON_AddNumberToObject(root, "version", ARGUS_REPORT_VERSION);
    cJSON_AddStringToObject(root, "kernel", kernel ? kernel : "");
    cJSON *launch = cJSON_AddObjectToObject(root, "launch");
    cJSON *grid = cJSON_AddArrayToObject(launch, "grid");
    cJSON *block = cJSON_AddArrayToObject(launch, "block");
    for (int i = 0; i < 3; i++) {
        cJSON_AddItemToArray(grid, cJSON_CreateNumber(t->hdr.grid[i]));
        cJSON_AddItemToArray(block, cJSON_CreateNumber(t->hdr.block[i]));
    }
    cJSON_AddItemToObject(launch, "warps", argus__jnum((double)t->hdr.nslots, "warps", "observed"));
    cJSON_AddItemToObject(launch, "warps_ran", argus__jnum((double)t->warps_active, "warps", "observed"));
    cJSON_AddItemToObject(launch, "records_per_warp", argus__jnum(t->hdr.cap, "records", "observed"));
    cJSON_AddItemToObject(launch, "records_lost", argus__jnum((double)t->records_lost, "records", "observed"));
    cJSON_AddItemToObject(launch, "span", argus__jnum((double)(t->gt_max - t->gt_min), "ns", "observed"));
    cJSON_AddItemToObject(launch, "warp_time", argus__jnum(t->warp_time_ns, "ns", "derived"));
    cJSON *clock = cJSON_AddObjectToObject(root, "clock");
    cJSON_AddItemToObject(clock, "sm_clock",
                          argus__jnum(t->cycles_per_ns, "GHz",
                              t->clock_method == ARGUS_CLOCK_GIVEN ? "observed" : "derived"));
    cJSON_AddStringToObject(clock, "method", clock_method(t->clock_method));
    add_scope(root, s);
    /* Without a usable clock conversion the times are the observed cycles. */
    const char *tunit = t->clock_method == ARGUS_CLOCK_NONE ? "cycles" : "ns";
    const char *tmark = t->clock_method == ARGUS_CLOCK_NONE ? "observed" : "derived";
    cJSON *regions = cJSON_AddArrayToObject(root, "regions");
    for (size_t i = 0; i < n; i++) {
        cJSON *r = cJSON_CreateObject();
        char path[512], nameb[16], idb[16];
        if (argus_node_path(t, reg, st[i].node, path, sizeof(path)) != 0)
            id_str(st[i].region, path, sizeof(path));
        id_str(st[i].region, idb, sizeof(idb));
        cJSON_AddStringToObject(r, "id", idb);
        cJSON_AddStringToObject(r, "name", argus__name(reg, st[i].region, nameb, sizeof(nameb)));
        cJSON_AddBoolToObject(r, "registered", reg && argus_registry_name(reg, st[i].region));
        cJSON_AddStringToObject(r, "path", path);
        cJSON_AddNumberToObject(r, "node", st[i].node);
        cJSON_AddNumberToObject(r, "parent_node", t->nodes[st[i].node].parent);
        cJSON_AddItemToObject(r, "count", argus__jnum((double)st[i].count, "occurrences", "observed"));
        cJSON_AddItemToObject(r, "partial", argus__jnum((double)st[i].partial, "occurrences", "observed"));
        cJSON_AddItemToObject(r, "total_cycles", argus__jnum((double)st[i].total_cycles, "cycles", "observed"));
        cJSON *timing = cJSON_AddObjectToObject(r, "time");
        cJSON_AddStringToObject(timing, "method", tunit[0] == 'c' ? "sm_clock" : "sm_clock_to_globaltimer");
        cJSON_AddNumberToObject(timing, "samples", (double)st[i].timed);
        cJSON_AddItemToObject(timing, "total", argus__jnum(st[i].total_ns, tunit, tmark));
        cJSON_AddItemToObject(timing, "mean", argus__jnum(st[i].mean_ns, tunit, tmark));
        cJSON_AddItemToObject(timing, "p50", argus__jnum(st[i].p50_ns, tunit, tmark));
        cJSON_AddItemToObject(timing, "p99", argus__jnum(st[i].p99_ns, tunit, tmark));
        cJSON_AddItemToObject(timing, "min", argus__jnum(st[i].min_ns, tunit, tmark));
        cJSON_AddItemToObject(timing, "max", argus__jnum(st[i].max_ns, tunit, tmark));
        cJSON_AddItemToObject(r, "share_of_warp_time", argus__jnum(st[i].share, "fraction", "derived"));
        cJSON_AddItemToArray(regions, r);
    }
    free(st);
    if (m)
        add_device_metrics(root, t, m, k);
    add_diags(root, t);
    return argus__json_write(root, f, 0);
}

/* The diagnostics array (the same for device buffers and argus-shim). */
static void add_diags(cJSON *root, const argus_trace *t)
{
    char idb[16];
    uint32_t wpc = t->hdr.warps_per_cta ? t->hdr.warps_per_cta : 1;
    cJSON *diags = cJSON_AddArrayToObject(root, "diagnostics");
    for (size_t i = 0; i < t->ndiags; i++) {
        const argus_diag *g = &t->diags[i];
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "what", argus_diag_name(g->kind));
        cJSON_AddNumberToObject(d, "slot", g->slot);
        cJSON_AddNumberToObject(d, "cta", g->slot / wpc);
        cJSON_AddNumberToObject(d, "warp", g->slot % wpc);
        cJSON_AddNumberToObject(d, "record", g->index);
        id_str(g->value, idb, sizeof(idb));
        cJSON_AddStringToObject(d, "id", idb);
        cJSON_AddNumberToObject(d, "count", (double)g->count);
        cJSON_AddItemToArray(diags, d);
    }
    cJSON_AddNumberToObject(root, "diagnostics_dropped", (double)t->diags_dropped);
}

/* Trace events: one process per SM (CTAs grouped by SM), one thread per
 * warp and sub-track, "X" events in microseconds (the trace-event format's
 * unit) relative to the kernel's first globaltimer anchor. */
int argus_trace_json(const argus_trace *t, const argus_registry *reg, const char *kernel, FILE *f)
{
    if (t == NULL || f == NULL)
        return ARGUS_EINVAL;
    cJSON *root = cJSON_CreateObject();
    cJSON *ev = cJSON_AddArrayToObject(root, "traceEvents");
    if (root == NULL || ev == NULL) {
        cJSON_Delete(root);
        return ARGUS_ENOMEM;
    }
    cJSON_AddStringToObject(root, "displayTimeUnit", "ns");
    /* Times from the kernel's first globaltimer anchor (argus__occ_time);
     * without a clock conversion, cycles from each warp's start. */
    /* Names for every warp track that has an occurrence: one bit per
     * sub-track of each warp. */
    uint16_t *named = calloc(t->nwarps ? t->nwarps : 1, sizeof(uint16_t));
    if (named == NULL) {
        cJSON_Delete(root);
        return ARGUS_ENOMEM;
    }
    for (size_t i = 0; i < t->nocc; i++) {
        const argus_occurrence *o = &t->occ[i];
        uint32_t track = o->track < ARGUS_MAX_TRACKS ? o->track : ARGUS_MAX_TRACKS - 1;
        double tid = (double)o->slot * ARGUS_MAX_TRACKS + track;
        if (!(named[o->slot] & (1u << track))) {
            named[o->slot] |= (uint16_t)(1u << track);
            char tn[160];
            int w = t->slot_names && o->slot < t->nwarps && t->slot_names[o->slot]
                        ? snprintf(tn, sizeof(tn), "%s%s", t->slot_names[o->slot],
                                   track ? " (overlap)" : "")
                        : snprintf(tn, sizeof(tn), "CTA %u warp %u%s", o->cta, o->warp,
                                   track ? " (overlap)" : "");
            if (w < 0)
                tn[0] = '\0';
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "ph", "M");
            cJSON_AddStringToObject(m, "name", "thread_name");
            cJSON_AddNumberToObject(m, "pid", o->sm);
            cJSON_AddNumberToObject(m, "tid", tid);
            cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "args"), "name", tn);
            cJSON_AddItemToArray(ev, m);
            cJSON *sortm = cJSON_CreateObject();
            cJSON_AddStringToObject(sortm, "ph", "M");
            cJSON_AddStringToObject(sortm, "name", "thread_sort_index");
            cJSON_AddNumberToObject(sortm, "pid", o->sm);
            cJSON_AddNumberToObject(sortm, "tid", tid);
            cJSON_AddNumberToObject(cJSON_AddObjectToObject(sortm, "args"), "sort_index", tid);
            cJSON_AddItemToArray(ev, sortm);
        }
        char nameb[16], idb[16], path[512];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "ph", "X");
        cJSON_AddStringToObject(e, "name", argus__name(reg, o->region, nameb, sizeof(nameb)));
        cJSON_AddStringToObject(e, "cat", "region");
        cJSON_AddNumberToObject(e, "pid", o->sm);
        cJSON_AddNumberToObject(e, "tid", tid);
        double tb, td;
        argus__occ_time(t, o, &tb, &td);
        cJSON_AddNumberToObject(e, "ts", tb / 1e3);
        cJSON_AddNumberToObject(e, "dur", td / 1e3);
        cJSON *a = cJSON_AddObjectToObject(e, "args");
        id_str(o->region, idb, sizeof(idb));
        cJSON_AddStringToObject(a, "id", idb);
        if (argus_node_path(t, reg, o->node, path, sizeof(path)) == 0)
            cJSON_AddStringToObject(a, "path", path);
        /* On the host timebase there are no SM cycles to show. */
        if (t->clock_method != ARGUS_CLOCK_HOST)
            cJSON_AddNumberToObject(a, "cycles", (double)(o->clk_end - o->clk_begin));
        if (o->iter >= 0)
            cJSON_AddNumberToObject(a, "iter", (double)o->iter);
        if (o->role)
            cJSON_AddStringToObject(a, "role", argus__name(reg, o->role, nameb, sizeof(nameb)));
        if (o->flags & ARGUS_OCC_NO_BEGIN)
            cJSON_AddStringToObject(a, "partial", "begin lost to a ring wrap");
        if (o->flags & ARGUS_OCC_NO_END)
            cJSON_AddStringToObject(a, "partial", "never ended");
        cJSON_AddItemToArray(ev, e);
    }
    /* Given process names (argus-shim: host threads, GPU streams). */
    for (size_t i = 0; t->sm_names && i < t->nsm_names; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "ph", "M");
        cJSON_AddStringToObject(m, "name", "process_name");
        cJSON_AddNumberToObject(m, "pid", (double)i);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "args"), "name",
                                t->sm_names[i] ? t->sm_names[i] : "");
        cJSON_AddItemToArray(ev, m);
    }
    /* Otherwise one process name per SM that ran a warp. */
    unsigned char sm_named[1024] = {0};
    for (size_t i = 0; i < t->nwarps; i++) {
        const argus_warp_info *w = &t->warps[i];
        if (t->sm_names || (w->flags & ARGUS_WARP_EMPTY) || w->sm >= sizeof(sm_named) ||
            sm_named[w->sm])
            continue;
        sm_named[w->sm] = 1;
        char pn[96];
        if (snprintf(pn, sizeof(pn), "SM %u%s%s", w->sm, kernel ? " " : "", kernel ? kernel : "") < 0)
            pn[0] = '\0';
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "ph", "M");
        cJSON_AddStringToObject(m, "name", "process_name");
        cJSON_AddNumberToObject(m, "pid", w->sm);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "args"), "name", pn);
        cJSON_AddItemToArray(ev, m);
    }
    free(named);
    return argus__json_write(root, f, 0);
}

/* ---- registry files ---------------------------------------------------- */

/* A whole binary file (a cubin, fatbin or executable), regular files only,
 * at most 1 GiB. */
static int read_binary(const char *path, void **out, size_t *len, char *msg, size_t msglen)
{
    int fd = mosaic__open_regular(path, msg, msglen);
    if (fd < 0)
        return ARGUS_EIO;
    FILE *f = fdopen(fd, "rb");
    if (f == NULL) {
        close(fd);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot read", path);
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    while (b != NULL) {
        n += fread(b + n, 1, cap - n, f);
        if (n < cap)
            break;
        if (cap >= ((size_t)1 << 30)) {
            free(b);
            fclose(f);
            return argus__fail(ARGUS_ELIMIT, msg, msglen, "%s: larger than 1 GiB", path);
        }
        unsigned char *nb = realloc(b, cap * 2);
        if (nb == NULL)
            free(b);
        b = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (b == NULL)
        return ARGUS_ENOMEM;
    if (err) {
        free(b);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: read error", path);
    }
    *out = b;
    *len = n;
    return 0;
}

/* Through the project's one whole-file reader (core/readfile.c: regular
 * files only, so a FIFO cannot hang the caller; size limit; NUL check),
 * its MOSAIC_E* code told as the Argus code of the same meaning. */
static int read_file(const char *path, char **out, char *msg, size_t msglen)
{
    int rc = mosaic__read_file(path, 64L << 20, out, msg, msglen);

    switch (rc) {
    case 0:
        return 0;
    case MOSAIC_ENOMEM:
        return ARGUS_ENOMEM;
    case MOSAIC_ETOOBIG:
        return ARGUS_ELIMIT;
    case MOSAIC_EFORMAT:
        return ARGUS_EREGISTRY;
    case MOSAIC_EINVAL:
        return ARGUS_EINVAL;
    default:
        return ARGUS_EIO;
    }
}

int argus_registry_load(const char *path, argus_registry **out, char *msg, size_t msglen)
{
    if (path == NULL || out == NULL)
        return ARGUS_EINVAL;
    *out = NULL;
    char *text = NULL;
    int rc = read_file(path, &text, msg, msglen);
    if (rc == ARGUS_EREGISTRY) {
        /* NUL bytes: a cubin, fatbin or executable, which may carry an
         * embedded registry (argus registry --embed). */
        void *bytes = NULL;
        size_t len = 0;
        if ((rc = read_binary(path, &bytes, &len, msg, msglen)) != 0)
            return rc;
        rc = argus_registry_find_embedded(bytes, len, path, out, msg, msglen);
        free(bytes);
        return rc;
    }
    if (rc != 0)
        return rc;
    rc = argus_registry_parse(text, path, out, msg, msglen);
    free(text);
    return rc;
}

int argus_registry_parse(const char *text, const char *path, argus_registry **out, char *msg,
                         size_t msglen)
{
    if (text == NULL || out == NULL)
        return ARGUS_EINVAL;
    *out = NULL;
    if (path == NULL)
        path = "<registry>";
    int rc;
    cJSON *root = cJSON_Parse(text);
    if (root == NULL)
        return argus__fail(ARGUS_EREGISTRY, msg, msglen, "%s: not JSON", path);
    const cJSON *schema = cJSON_GetObjectItem(root, "schema");
    const cJSON *version = cJSON_GetObjectItem(root, "version");
    const cJSON *regions = cJSON_GetObjectItem(root, "regions");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, ARGUS_REGISTRY_SCHEMA) != 0 ||
        !cJSON_IsNumber(version) || version->valueint != ARGUS_REGISTRY_VERSION ||
        !cJSON_IsArray(regions)) {
        cJSON_Delete(root);
        return argus__fail(ARGUS_EREGISTRY, msg, msglen,
                           "%s: not an %s v%d file (needs \"schema\", \"version\" and a "
                           "\"regions\" array); regenerate it with `argus registry`",
                           path, ARGUS_REGISTRY_SCHEMA, ARGUS_REGISTRY_VERSION);
    }
    argus_registry *r;
    if ((rc = argus_registry_new(&r)) != 0) {
        cJSON_Delete(root);
        return rc;
    }
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, regions)
    {
        const cJSON *name = cJSON_GetObjectItem(e, "name");
        const cJSON *id = cJSON_GetObjectItem(e, "id");
        const cJSON *parent = cJSON_GetObjectItem(e, "parent");
        const cJSON *role = cJSON_GetObjectItem(e, "role");
        unsigned long pid = 0, rid = 0;
        char *end1 = NULL, *end2 = NULL;
        if (cJSON_IsString(parent))
            pid = strtoul(parent->valuestring, &end1, 16);
        if (cJSON_IsString(id))
            rid = strtoul(id->valuestring, &end2, 16);
        uint32_t got;
        if (!cJSON_IsString(name) || !cJSON_IsString(parent) || !cJSON_IsString(id) ||
            *end1 != '\0' || *end2 != '\0' || pid > ARGUS_VALUE_MASK ||
            (rc = argus_registry_add(r, name->valuestring, (uint32_t)pid, cJSON_IsTrue(role), &got,
                                     msg, msglen)) != 0 ||
            got != rid) {
            if (rc == 0 || rc == ARGUS_EINVAL)
                rc = argus__fail(ARGUS_EREGISTRY, msg, msglen,
                                 "%s: regions[%d]: needs \"name\", \"id\" and \"parent\" (hex "
                                 "strings) with id = hash(name, parent); regenerate the file "
                                 "with `argus registry`",
                                 path, i);
            argus_registry_free(r);
            cJSON_Delete(root);
            return rc;
        }
        i++;
    }
    cJSON_Delete(root);
    *out = r;
    return 0;
}

int argus_registry_save(const argus_registry *r, const char *path, char *msg, size_t msglen)
{
    if (r == NULL || path == NULL)
        return ARGUS_EINVAL;
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot create the file", path);
    int rc = registry_write(r, f);
    if (fclose(f) != 0 && rc == 0)
        rc = ARGUS_EIO;
    if (rc != 0)
        return argus__fail(rc, msg, msglen, "%s: writing failed", path);
    return 0;
}

static int registry_write(const argus_registry *r, FILE *f)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", ARGUS_REGISTRY_SCHEMA);
    cJSON_AddNumberToObject(root, "version", ARGUS_REGISTRY_VERSION);
    cJSON *regions = cJSON_AddArrayToObject(root, "regions");
    if (regions == NULL) {
        cJSON_Delete(root);
        return ARGUS_ENOMEM;
    }
    for (size_t i = 0; i < argus_registry_count(r); i++) {
        uint32_t id, parent;
        const char *name;
        int is_role;
        argus_registry_entry(r, i, &id, &name, &parent, &is_role);
        char b[16];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", name);
        id_str(id, b, sizeof(b));
        cJSON_AddStringToObject(e, "id", b);
        id_str(parent, b, sizeof(b));
        cJSON_AddStringToObject(e, "parent", b);
        cJSON_AddBoolToObject(e, "role", is_role);
        cJSON_AddItemToArray(regions, e);
    }
    return argus__json_write(root, f, 0);
}

/* ---- argus-shim: kernel-level regions on the host timebase -------------- */

static const char *shim_kind(int k)
{
    switch (k) {
    case ARGUS_SHIM_NODE_RANGE:
        return "nvtx_range";
    case ARGUS_SHIM_NODE_STARTEND:
        return "nvtx_start_end";
    case ARGUS_SHIM_NODE_KERNEL:
        return "kernel";
    case ARGUS_SHIM_NODE_DEVICE:
        return "device_region";
    default:
        return "unplaced";
    }
}

static const char *shim_cupti(int c)
{
    return c == ARGUS_SHIM_CUPTI_OK      ? "subscribed"
           : c == ARGUS_SHIM_CUPTI_OTHER ? "another_subscriber"
                                         : "unavailable";
}

/* ---- argus-shim: PC sampling (docs/argus.md, "PC sampling") -------------- */

typedef struct hot_key {
    uint64_t samples;
    size_t idx;
} hot_key;

/* Most samples first; ties in site order (the recording's), so the list
 * is the same on every run of the same recording. */
static int cmp_hot(const void *a, const void *b)
{
    const hot_key *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static const char *line_from_word(int from)
{
    return from == ARGUS_SHIM_LINE_CUPTI ? "cupti_sass_to_source" : "cubin_debug_line";
}

/* {samples, hot_pcs[], hot_lines[]} of the sites of one kernel region
 * (fregion < 0) or of one of its device functions. Sample counts are
 * CUPTI's (observed); fractions are of the region's samples (derived). */
static cJSON *pcs_hot(const argus_shim_result *res, int32_t node, int32_t fregion, const char *mark)
{
    const argus_shim_pcs *ps = &res->in->pcs;
    cJSON *o = cJSON_CreateObject();
    hot_key *keys = calloc(res->nsites ? res->nsites : 1, sizeof(hot_key));
    hot_key *lines = calloc(res->nsites ? res->nsites : 1, sizeof(hot_key));
    if (o == NULL || keys == NULL || lines == NULL) {
        free(keys);
        free(lines);
        cJSON_Delete(o);
        return NULL;
    }
    size_t n = 0, nl = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < res->nsites; i++) {
        const argus_shim_site *st = &res->sites[i];
        if (st->node != node || (fregion >= 0 && st->fregion != fregion))
            continue;
        keys[n++] = (hot_key){st->samples, i};
        total += st->samples;
        if (st->file == NULL)
            continue;
        /* Lines: sites on the same file and line add up. */
        size_t k = 0;
        while (k < nl && !(res->sites[lines[k].idx].line == st->line &&
                           strcmp(res->sites[lines[k].idx].file, st->file) == 0))
            k++;
        if (k == nl)
            lines[nl++] = (hot_key){0, i};
        lines[k].samples += st->samples;
    }
    qsort(keys, n, sizeof(hot_key), cmp_hot);
    qsort(lines, nl, sizeof(hot_key), cmp_hot);
    cJSON_AddItemToObject(o, "samples", argus__jnum((double)total, "samples", mark));
    cJSON *hot = cJSON_AddArrayToObject(o, "hot_pcs");
    for (size_t j = 0; j < n && j < ARGUS_SHIM_HOT_TOP; j++) {
        const argus_shim_site *st = &res->sites[keys[j].idx];
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "function", st->function);
        cJSON_AddNumberToObject(h, "pc_offset", (double)st->pc);
        if (st->offset != UINT64_MAX)
            cJSON_AddNumberToObject(h, "section_offset", (double)st->offset);
        if (st->fregion >= 0)
            cJSON_AddStringToObject(h, "device_function", res->fregions[st->fregion].name);
        cJSON_AddItemToObject(h, "samples", argus__jnum((double)st->samples, "samples", "observed"));
        cJSON_AddItemToObject(h, "fraction", argus__jnum(total ? (double)st->samples / (double)total : 0,
                                                 "fraction of the region's samples", "derived"));
        if (st->file) {
            cJSON *src = cJSON_AddObjectToObject(h, "source");
            cJSON_AddStringToObject(src, "file", st->file);
            cJSON_AddNumberToObject(src, "line", st->line);
            cJSON_AddStringToObject(src, "from", line_from_word(st->line_from));
        }
        cJSON *sr = cJSON_AddArrayToObject(h, "stall_reasons");
        size_t nr = ps->nreasons;
        /* Every reason with samples, however many CUPTI names (out of
         * memory: the list is left empty rather than cut short). */
        hot_key *rk = calloc(nr + 1, sizeof(hot_key));
        size_t m = 0;
        for (size_t q = 0; rk && q <= nr; q++)
            if (st->stall[q])
                rk[m++] = (hot_key){st->stall[q], q};
        if (rk)
            qsort(rk, m, sizeof(hot_key), cmp_hot);
        for (size_t q = 0; q < m; q++) {
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "name", rk[q].idx < nr ? ps->reasons[rk[q].idx].name
                                                              : "(reason index not named by CUPTI)");
            cJSON_AddItemToObject(r, "samples", argus__jnum((double)rk[q].samples, "samples", "observed"));
            cJSON_AddItemToObject(r, "fraction",
                                  argus__jnum(st->samples ? (double)rk[q].samples / (double)st->samples : 0,
                                      "fraction of the PC's samples", "derived"));
            cJSON_AddItemToArray(sr, r);
        }
        free(rk);
        cJSON_AddItemToArray(hot, h);
    }
    cJSON *hl = cJSON_AddArrayToObject(o, "hot_lines");
    for (size_t j = 0; j < nl && j < ARGUS_SHIM_HOT_TOP; j++) {
        const argus_shim_site *st = &res->sites[lines[j].idx];
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "file", st->file);
        cJSON_AddNumberToObject(h, "line", st->line);
        cJSON_AddItemToObject(h, "samples", argus__jnum((double)lines[j].samples, "samples", "observed"));
        cJSON_AddItemToObject(h, "fraction",
                              argus__jnum(total ? (double)lines[j].samples / (double)total : 0,
                                  "fraction of the region's samples", "derived"));
        cJSON_AddItemToArray(hl, h);
    }
    free(keys);
    free(lines);
    return o;
}

static const char *pcs_state_word(int s)
{
    return s == ARGUS_SHIM_PCS_ENABLED       ? "collected"
           : s == ARGUS_SHIM_PCS_UNAVAILABLE ? "unavailable"
                                             : "not_asked";
}

static void add_run_pcs(cJSON *run, const argus_shim_result *res)
{
    const argus_shim_pcs *ps = &res->in->pcs;
    cJSON *o = cJSON_AddObjectToObject(run, "pc_sampling");
    cJSON_AddStringToObject(o, "state", pcs_state_word(ps->state));
    for (size_t i = 0; i < res->in->nunavailable; i++)
        if (strcmp(res->in->unavailable[i].what, "pc_sampling") == 0)
            cJSON_AddStringToObject(o, "why", res->in->unavailable[i].why);
    if (ps->state != ARGUS_SHIM_PCS_ENABLED)
        return;
    cJSON_AddStringToObject(o, "mode", ps->mode);
    cJSON_AddItemToObject(o, "period", argus__jnum((double)(1ull << ps->period), "cycles", "observed"));
    cJSON_AddItemToObject(o, "samples", argus__jnum((double)res->pcs_samples, "samples", "observed"));
    cJSON_AddItemToObject(o, "samples_cupti_total", argus__jnum((double)ps->total, "samples", "observed"));
    cJSON_AddItemToObject(o, "samples_dropped", argus__jnum((double)ps->dropped, "samples", "observed"));
    cJSON_AddItemToObject(o, "samples_non_user", argus__jnum((double)ps->non_user, "samples", "observed"));
    cJSON_AddItemToObject(o, "hardware_buffer_full",
                          argus__jnum((double)ps->buffer_full, "times", "observed"));
    cJSON_AddItemToObject(o, "samples_unattributed",
                          argus__jnum((double)res->pcs_unattributed, "samples", "derived"));
    cJSON_AddItemToObject(o, "modules", argus__jnum((double)ps->nmodules, "modules", "observed"));
    cJSON *notes = cJSON_AddArrayToObject(o, "notes");
    for (size_t i = 0; i < res->npcs_notes; i++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(res->pcs_notes[i]));
    cJSON_AddNumberToObject(o, "notes_dropped", (double)res->pcs_notes_more);
}

/* A region per device function of a sampled kernel, under its kernel. */
static void add_fregions(cJSON *regions, const argus_shim_result *res)
{
    const argus_trace *t = &res->trace;
    for (size_t i = 0; i < res->nfregions; i++) {
        const argus_shim_fregion *f = &res->fregions[i];
        cJSON *r = cJSON_CreateObject();
        char path[8192], idb[16], kp[8000];
        if (argus_node_path(t, res->reg, (uint32_t)f->node, kp, sizeof(kp)) != 0)
            id_str(t->nodes[f->node].region, kp, sizeof(kp));
        if (snprintf(path, sizeof(path), "%s/%s", kp, f->name) < 0)
            path[0] = '\0';
        uint32_t id = argus_region_id(f->name, t->nodes[f->node].region);
        id_str(id, idb, sizeof(idb));
        cJSON_AddStringToObject(r, "id", idb);
        cJSON_AddStringToObject(r, "name", f->name);
        cJSON_AddBoolToObject(r, "registered", 0);
        cJSON_AddStringToObject(r, "path", path);
        cJSON_AddNumberToObject(r, "node", (double)(t->nnodes + i));
        cJSON_AddNumberToObject(r, "parent_node", f->node);
        cJSON_AddStringToObject(r, "kind", "device_function");
        cJSON_AddBoolToObject(r, "kernel_body", f->kernel_body);
        cJSON *rg = cJSON_AddObjectToObject(r, "range");
        cJSON_AddNumberToObject(rg, "lo", (double)f->lo);
        cJSON_AddNumberToObject(rg, "hi", (double)f->hi);
        cJSON_AddStringToObject(rg, "unit", "bytes from the kernel's section start");
        cJSON_AddItemToObject(r, "count", argus__jnum((double)f->samples, "pc_samples", "attributed"));
        cJSON_AddItemToObject(r, "partial", argus__jnum(0, "occurrences", "observed"));
        cJSON *timing = cJSON_AddObjectToObject(r, "time");
        cJSON_AddStringToObject(timing, "method", "pc_samples");
        cJSON_AddNumberToObject(timing, "samples", 0);
        cJSON *h = pcs_hot(res, f->node, (int32_t)i, "attributed");
        if (h)
            cJSON_AddItemToObject(r, "pc_sampling", h);
        cJSON_AddItemToArray(regions, r);
    }
}

/* The argus.report v1 document for argus-shim (docs/argus.md): "source"
 * and "run" instead of "launch"; regions carry "kind" and, for kernels,
 * how they were placed. A kernel's times are CUPTI's (observed); a range's
 * are the recorder's host timestamps on CUPTI's clock (observed); totals
 * and means are derived from them. */
int argus_shim_report_json(const argus_shim_result *res, const argus_scope *s, FILE *f)
{
    if (res == NULL || f == NULL)
        return ARGUS_EINVAL;
    const argus_trace *t = &res->trace;
    const argus_shim_input *in = res->in;
    argus_region_stats *st;
    size_t n;
    int rc = argus_stats(t, s, &st, &n);
    if (rc != 0)
        return rc;
    /* Kernels inside each node (at it or below it), attributed through
     * correlation IDs. */
    uint64_t *inside = calloc(t->nnodes ? t->nnodes : 1, sizeof(uint64_t));
    cJSON *root = cJSON_CreateObject();
    if (root == NULL || inside == NULL) {
        free(st);
        free(inside);
        cJSON_Delete(root);
        return ARGUS_ENOMEM;
    }
    for (size_t i = 0; i < t->nocc; i++) {
        const argus_occurrence *o = &t->occ[i];
        if (res->node_kind[o->node] != ARGUS_SHIM_NODE_KERNEL || !argus_scope_match(s, o))
            continue;
        for (int32_t k = t->nodes[o->node].parent; k >= 0; k = t->nodes[k].parent)
            inside[k]++;
    }
    cJSON_AddStringToObject(root, "schema", ARGUS_REPORT_SCHEMA);
    cJSON_AddNumberToObject(root, "version", ARGUS_REPORT_VERSION);
    cJSON_AddStringToObject(root, "kernel", "");
    cJSON_AddStringToObject(root, "source", "argus-shim");
    cJSON *run = cJSON_AddObjectToObject(root, "run");
    cJSON_AddStringToObject(run, "command", in ? in->command : "");
    cJSON_AddItemToObject(run, "threads", argus__jnum(res->nthreads, "threads", "observed"));
    cJSON_AddItemToObject(run, "streams", argus__jnum(res->nstreams, "streams", "observed"));
    cJSON_AddItemToObject(run, "nvtx_ranges", argus__jnum((double)res->ranges, "ranges", "observed"));
    cJSON_AddItemToObject(run, "kernels", argus__jnum((double)res->kernels, "kernels", "observed"));
    cJSON_AddItemToObject(run, "kernels_in_ranges",
                          argus__jnum((double)res->kernels_in_ranges, "kernels", "attributed"));
    cJSON_AddItemToObject(run, "kernels_outside_ranges",
                          argus__jnum((double)res->kernels_outside, "kernels", "attributed"));
    cJSON_AddItemToObject(run, "kernels_without_launch",
                          argus__jnum((double)res->kernels_unknown, "kernels", "observed"));
    cJSON_AddItemToObject(run, "launches_without_kernel",
                          argus__jnum((double)res->launches_without_kernel, "launches", "observed"));
    cJSON_AddItemToObject(run, "activity_records_dropped",
                          argus__jnum(in ? (double)in->dropped : 0, "records", "observed"));
    cJSON_AddItemToObject(run, "span", argus__jnum((double)(t->gt_max - t->gt_min), "ns", "observed"));
    cJSON_AddItemToObject(run, "device_regions",
                          argus__jnum((double)res->device_regions, "occurrences", "observed"));
    cJSON_AddItemToObject(run, "armed_launches_decoded",
                          argus__jnum((double)res->armed_decoded, "launches", "observed"));
    cJSON_AddItemToObject(run, "armed_launches_missing",
                          argus__jnum((double)res->armed_missing, "launches", "observed"));
    cJSON *cupti = cJSON_AddObjectToObject(run, "cupti");
    cJSON_AddStringToObject(cupti, "state", shim_cupti(in ? in->cupti : ARGUS_SHIM_CUPTI_UNAVAILABLE));
    cJSON_AddStringToObject(cupti, "note", in ? in->cupti_note : "");
    cJSON *unav = cJSON_AddArrayToObject(run, "unavailable");
    for (size_t i = 0; in && i < in->nunavailable; i++) {
        cJSON *u = cJSON_CreateObject();
        cJSON_AddStringToObject(u, "what", in->unavailable[i].what);
        cJSON_AddStringToObject(u, "why", in->unavailable[i].why);
        cJSON_AddItemToArray(unav, u);
    }
    if (in)
        add_run_pcs(run, res);
    /* Hardware metrics from a kernel profile, when asked (metrics.c). */
    argus__shim_hw *hw = NULL;
    if (res->metrics && res->metrics->state == ARGUS_METRICS_LOADED &&
        (rc = argus__shim_hw_build(res, s, &hw)) != 0) {
        free(st);
        free(inside);
        cJSON_Delete(root);
        return rc;
    }
    if (res->metrics)
        cJSON_AddItemToObject(root, "metrics", argus__shim_hw_run(hw, res->metrics));
    cJSON *clock = cJSON_AddObjectToObject(root, "clock");
    cJSON_AddStringToObject(clock, "method", "cupti_timestamp");
    add_scope(root, s);
    cJSON *regions = cJSON_AddArrayToObject(root, "regions");
    for (size_t i = 0; i < n; i++) {
        int kind = res->node_kind[st[i].node];
        cJSON *r = cJSON_CreateObject();
        /* Mangled C++ kernel names under a few ranges are long. */
        char path[8192], nameb[16], idb[16];
        if (argus_node_path(t, res->reg, st[i].node, path, sizeof(path)) != 0)
            id_str(st[i].region, path, sizeof(path));
        id_str(st[i].region, idb, sizeof(idb));
        cJSON_AddStringToObject(r, "id", idb);
        cJSON_AddStringToObject(r, "name", argus__name(res->reg, st[i].region, nameb, sizeof(nameb)));
        cJSON_AddBoolToObject(r, "registered", argus_registry_name(res->reg, st[i].region) != NULL);
        cJSON_AddStringToObject(r, "path", path);
        cJSON_AddNumberToObject(r, "node", st[i].node);
        cJSON_AddNumberToObject(r, "parent_node", t->nodes[st[i].node].parent);
        cJSON_AddStringToObject(r, "kind", shim_kind(kind));
        if (kind == ARGUS_SHIM_NODE_KERNEL) {
            cJSON *pl = cJSON_AddObjectToObject(r, "placement");
            int32_t p = t->nodes[st[i].node].parent;
            int unplaced = p >= 0 && res->node_kind[p] == ARGUS_SHIM_NODE_UNKNOWN;
            cJSON_AddStringToObject(pl, "method", unplaced ? "none: launch not recorded"
                                                  : p < 0 ? "launched outside every range"
                                                          : "innermost range at launch, by correlation ID");
            cJSON_AddStringToObject(pl, "mark", unplaced ? "observed" : "attributed");
            cJSON *hm = argus__shim_hw_node(hw, st[i].node);
            if (hm)
                cJSON_AddItemToObject(r, "hw_metrics", hm);
        } else if (kind == ARGUS_SHIM_NODE_DEVICE) {
            /* Which launch a device region belongs to is not inferred: its
             * buffer was armed for that launch (correlation ID). */
            cJSON *pl = cJSON_AddObjectToObject(r, "placement");
            cJSON_AddStringToObject(pl, "method",
                                    "in its kernel's armed launch, by correlation ID; at the "
                                    "kernel's CUPTI start plus its offset from the first CTA");
            cJSON_AddStringToObject(pl, "mark", "observed");
        } else {
            cJSON_AddItemToObject(r, "kernels_inside",
                                  argus__jnum((double)inside[st[i].node], "kernels", "attributed"));
        }
        /* PC samples: a kernel's own (observed when CUPTI's correlation ID
         * tied them to its launches, else attributed by the kernel's name),
         * a range's those of its kernels (attributed). */
        if (in && in->pcs.state == ARGUS_SHIM_PCS_ENABLED && res->node_samples) {
            if (kind == ARGUS_SHIM_NODE_KERNEL) {
                int by_corr = 1, any = 0;
                for (size_t q = 0; q < res->nsites; q++)
                    if (res->sites[q].node == (int32_t)st[i].node) {
                        by_corr &= res->sites[q].by_corr;
                        any = 1;
                    }
                cJSON *h = pcs_hot(res, (int32_t)st[i].node, -1,
                                   any && by_corr ? "observed" : "attributed");
                if (h)
                    cJSON_AddItemToObject(r, "pc_sampling", h);
            } else {
                cJSON *h = cJSON_AddObjectToObject(r, "pc_sampling");
                cJSON_AddItemToObject(h, "samples", argus__jnum((double)res->node_samples[st[i].node],
                                                        "samples", "attributed"));
            }
        }
        cJSON_AddItemToObject(r, "count", argus__jnum((double)st[i].count, "occurrences", "observed"));
        cJSON_AddItemToObject(r, "partial", argus__jnum((double)st[i].partial, "occurrences", "observed"));
        cJSON *timing = cJSON_AddObjectToObject(r, "time");
        cJSON_AddStringToObject(timing, "method", kind == ARGUS_SHIM_NODE_KERNEL ? "cupti_activity"
                                                  : kind == ARGUS_SHIM_NODE_DEVICE
                                                      ? "argus_markers"
                                                      : "host_timestamps");
        cJSON_AddNumberToObject(timing, "samples", (double)st[i].timed);
        /* A region with only partial occurrences has no time: none is
         * written rather than a zero. */
        if (st[i].timed == 0) {
            cJSON_AddItemToArray(regions, r);
            continue;
        }
        cJSON_AddItemToObject(timing, "total", argus__jnum(st[i].total_ns, "ns", "derived"));
        cJSON_AddItemToObject(timing, "mean", argus__jnum(st[i].mean_ns, "ns", "derived"));
        cJSON_AddItemToObject(timing, "p50", argus__jnum(st[i].p50_ns, "ns", "observed"));
        cJSON_AddItemToObject(timing, "p99", argus__jnum(st[i].p99_ns, "ns", "observed"));
        cJSON_AddItemToObject(timing, "min", argus__jnum(st[i].min_ns, "ns", "observed"));
        cJSON_AddItemToObject(timing, "max", argus__jnum(st[i].max_ns, "ns", "observed"));
        cJSON_AddItemToArray(regions, r);
    }
    free(st);
    free(inside);
    argus__shim_hw_free(hw);
    if (in && in->pcs.state == ARGUS_SHIM_PCS_ENABLED)
        add_fregions(regions, res);
    add_diags(root, t);
    return argus__json_write(root, f, 0);
}

int argus_shim_trace_json(const argus_shim_result *res, FILE *f)
{
    if (res == NULL)
        return ARGUS_EINVAL;
    return argus_trace_json(&res->trace, res->reg, NULL, f);
}

/* ---- the registry in the binary ----------------------------------------- */

/* The embedded text starts with exactly these bytes (argus_registry_save's
 * order), which is how it is found in a cubin's initialised-data section. */
#define EMBED_MARK "{\"schema\":\"argus.registry\",\"version\":1,"

/* Whether the NUL-terminated texts at a and b (both before end) match. */
static int same_text(const char *a, const char *b, const char *end)
{
    while (a < end && b < end && *a == *b && *a != '\0') {
        a++;
        b++;
    }
    return a < end && b < end && *a == '\0' && *b == '\0';
}

int argus_registry_find_embedded(const void *bytes, size_t len, const char *where,
                                 argus_registry **out, char *msg, size_t msglen)
{
    if (bytes == NULL || out == NULL)
        return ARGUS_EINVAL;
    *out = NULL;
    if (where == NULL)
        where = "<binary>";
    const char *b = bytes, *end = b + len;
    size_t ml = strlen(EMBED_MARK);
    const char *hit = NULL;
    for (const char *p = b; p + ml <= end; p++) {
        p = memchr(p, '{', (size_t)(end - p));
        if (p == NULL || p + ml > end)
            break;
        if (memcmp(p, EMBED_MARK, ml) == 0) {
            /* A host object or executable holds the text twice: in the
             * cubin of its fatbin and in the host shadow of the __device__
             * variable (nvcc gives it the same initialiser). Identical
             * copies are one registry. */
            if (hit != NULL && same_text(hit, p, end)) {
                p += ml - 1;
                continue;
            }
            if (hit != NULL)
                return argus__fail(ARGUS_EREGISTRY, msg, msglen,
                                   "%s: holds more than one embedded registry (several modules "
                                   "linked together?); pass the registry of the kernel's own "
                                   "module (a cubin, or `argus registry` JSON)",
                                   where);
            hit = p;
        }
    }
    if (hit == NULL)
        return argus__fail(ARGUS_EREGISTRY, msg, msglen,
                           "%s: neither a registry JSON file nor a binary with an embedded "
                           "registry (compile the kernels' .cu file with the header `argus "
                           "registry --embed` writes: its cubin, object and executable then "
                           "carry it; or pass the registry JSON)",
                           where);
    const char *nul = memchr(hit, '\0', (size_t)(end - hit));
    if (nul == NULL)
        return argus__fail(ARGUS_EREGISTRY, msg, msglen,
                           "%s: the embedded registry is cut off (no terminating NUL)", where);
    char *text = malloc((size_t)(nul - hit) + 1);
    if (text == NULL)
        return ARGUS_ENOMEM;
    memcpy(text, hit, (size_t)(nul - hit) + 1);
    int rc = argus_registry_parse(text, where, out, msg, msglen);
    free(text);
    return rc;
}

int argus_registry_from_module(const argus_driver *drv, void *module, argus_registry **out,
                               char *msg, size_t msglen)
{
    if (drv == NULL || out == NULL || drv->get_global == NULL || drv->dtoh == NULL)
        return ARGUS_EINVAL;
    *out = NULL;
    uint64_t dptr = 0;
    size_t bytes = 0;
    int cr = drv->get_global(drv->ctx, module, ARGUS_REGISTRY_SYMBOL, &dptr, &bytes);
    if (cr != 0)
        return argus__fail(ARGUS_ENOREGION, msg, msglen,
                           "the module has no %s (CUresult %d): build it with the header that "
                           "`argus registry --embed` writes, or pass the registry file",
                           ARGUS_REGISTRY_SYMBOL, cr);
    if (bytes == 0 || bytes > (16u << 20))
        return argus__fail(ARGUS_ELIMIT, msg, msglen,
                           "%s is %zu bytes: expected 1 byte to 16 MiB of registry text",
                           ARGUS_REGISTRY_SYMBOL, bytes);
    char *text = malloc(bytes + 1);
    if (text == NULL)
        return ARGUS_ENOMEM;
    if ((cr = drv->dtoh(drv->ctx, text, dptr, bytes)) != 0) {
        free(text);
        return argus__fail(ARGUS_EDRIVER, msg, msglen, "reading %s failed (CUresult %d)",
                           ARGUS_REGISTRY_SYMBOL, cr);
    }
    text[bytes] = '\0';
    int rc = argus_registry_parse(text, ARGUS_REGISTRY_SYMBOL, out, msg, msglen);
    free(text);
    return rc;
}

int argus_registry_embed(const argus_registry *r, const char *path, char *msg, size_t msglen)
{
    if (r == NULL || path == NULL)
        return ARGUS_EINVAL;
    char *text = NULL;
    size_t tlen = 0;
    FILE *mem = open_memstream(&text, &tlen);
    if (mem == NULL)
        return ARGUS_ENOMEM;
    int rc = registry_write(r, mem);
    if (fclose(mem) != 0 && rc == 0)
        rc = ARGUS_ENOMEM;
    if (rc != 0) {
        free(text);
        return argus__fail(rc, msg, msglen, "%s: the registry could not be written", path);
    }
    /* The saved form ends in a newline; the embedded one ends at its NUL. */
    while (tlen > 0 && text[tlen - 1] == '\n')
        text[--tlen] = '\0';
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        free(text);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot create the file", path);
    }
    fputs("/* Generated by `argus registry --embed` (docs/argus.md): the region\n"
          " * registry, carried in the module as " ARGUS_REGISTRY_SYMBOL ", which the host\n"
          " * reads with cuModuleGetGlobal (argus_registry_from_module) and the argus\n"
          " * CLI finds in a cubin (--registry kernel.cubin). Include it in the .cu file\n"
          " * that holds the kernels, or compile that file with -include. */\n"
          "#ifndef ARGUS_EMBEDDED_REGISTRY\n#define ARGUS_EMBEDDED_REGISTRY\n"
          "extern \"C\" __device__ const char " ARGUS_REGISTRY_SYMBOL "[] =\n    \"",
          f);
    /* A C string literal: quotes and backslashes escaped (the JSON has no
     * control characters: cJSON escapes them). */
    for (size_t i = 0; i < tlen; i++) {
        if (text[i] == '"' || text[i] == '\\')
            fputc('\\', f);
        fputc(text[i], f);
        if (i % 96 == 95 && i + 1 < tlen)
            fputs("\"\n    \"", f);
    }
    fputs("\";\n#endif\n", f);
    free(text);
    if (ferror(f)) {
        fclose(f);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: writing failed", path);
    }
    if (fclose(f) != 0)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: writing failed", path);
    return 0;
}
