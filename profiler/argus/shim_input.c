/*
 * The argus-shim recording ("argus.shim.events" v1, docs/argus.md): one
 * JSON document per line through the project's strict JSON Lines reader
 * (core/json.h: no duplicate keys, no NUL, bounded depth), so that a
 * recording a user edits or a tool writes by hand is checked the same way
 * as every other JSON input of the project.
 *
 * Line 1, the header:
 *   {"schema":"argus.shim.events","version":1,"command":"...",
 *    "cupti":"subscribed"|"another_subscriber"|"unavailable","note":"..."}
 * then events, "e" naming the kind (include/argus/shim.h):
 *   {"e":"push","tid":T,"ts":NS,"name":"..."}
 *   {"e":"pop","tid":T,"ts":NS}
 *   {"e":"start","tid":T,"ts":NS,"id":R,"name":"..."}
 *   {"e":"end","tid":T,"ts":NS,"id":R}
 *   {"e":"launch","tid":T,"ts":NS,"corr":C}            ("name" optional)
 *   {"e":"kernel","corr":C,"name":"...","start":NS,"end":NS,"stream":S}
 *      optional: "grid":[X,Y,Z],"block":[X,Y,Z],"dsmem":BYTES,"device":ID
 *   {"e":"device","id":ID,"name":"NVIDIA H200","sm_count":132,"cc":"9.0"}
 *   {"e":"cupti","state":"...","note":"..."}  CUPTI's state, told at cuInit
 *   {"e":"dropped","count":N}                 CUPTI dropped N records
 *   {"e":"unavailable","what":"...","why":"..."} a signal the run lacked
 * Integers must be whole, non-negative and below 2^53, because JSON
 * numbers are doubles. CUPTI's timestamps are not (on the H200 they are
 * nanoseconds since 1970, about 1.8e18), so times are written relative to
 * the header's "t0", a decimal string that holds the full 64-bit origin:
 * ts, start and end are signed ns after t0 (|value| < 2^53, 104 days), and
 * the reader adds t0 back exactly. Without "t0" the origin is 0.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "argus/shim.h"
#include "argus_internal.h"
#include "core.h"
#include "json.h"
#include "mosaic/profile.h"

#define SHIM_MAX_FILE (1L << 30)
#define SHIM_MAX_NAME 4096

void argus_shim_input_init(argus_shim_input *in)
{
    memset(in, 0, sizeof(*in));
    in->cupti = ARGUS_SHIM_CUPTI_UNAVAILABLE;
}

void argus_shim_input_free(argus_shim_input *in)
{
    if (in == NULL)
        return;
    for (size_t i = 0; i < in->nstrings; i++)
        free(in->strings[i]);
    free(in->strings);
    free(in->ev);
    free(in->pcs.pc);
    free(in->pcs.stalls);
    free(in->pcs.lines);
    free(in->pcs.modules);
    free(in->pcs.reasons);
    argus_shim_input_init(in);
}

int argus_shim_input_add(argus_shim_input *in, const argus_shim_event *e)
{
    if (in == NULL || e == NULL || e->kind <= ARGUS_SHIM_NONE || e->kind > ARGUS_SHIM_ARMED)
        return ARGUS_EINVAL;
    if (argus__grow((void **)&in->ev, &in->cap, in->nev + 1, sizeof(*e)) != 0)
        return ARGUS_ENOMEM;
    argus_shim_event c = *e;
    if (e->name != NULL) {
        if (argus__grow((void **)&in->strings, &in->capstrings, in->nstrings + 1, sizeof(char *)) != 0 ||
            (in->strings[in->nstrings] = strdup(e->name)) == NULL)
            return ARGUS_ENOMEM;
        c.name = in->strings[in->nstrings++];
    }
    if (e->note != NULL) {
        if (argus__grow((void **)&in->strings, &in->capstrings, in->nstrings + 1, sizeof(char *)) != 0 ||
            (in->strings[in->nstrings] = strdup(e->note)) == NULL)
            return ARGUS_ENOMEM;
        c.note = in->strings[in->nstrings++];
    }
    in->ev[in->nev++] = c;
    return 0;
}

/* A copy of s owned by the input (freed with it). */
static const char *keep_str(argus_shim_input *in, const char *s)
{
    if (argus__grow((void **)&in->strings, &in->capstrings, in->nstrings + 1, sizeof(char *)) != 0 ||
        (in->strings[in->nstrings] = strdup(s)) == NULL)
        return NULL;
    return in->strings[in->nstrings++];
}

typedef struct parse_ctx {
    argus_shim_input *in;
    int have_header;
    uint64_t t0; /* the header's time origin */
    const char *dir; /* the recording's folder, for module images */
} parse_ctx;

static int fmt_err(char *err, size_t errlen, const char *where, const char *field,
                   const char *what)
{
    mosaic__errf(err, errlen, MOSAIC_EFORMAT, where, field, "%s", what);
    return ARGUS_EFORMAT;
}

/* A whole non-negative integer field below 2^53. */
static int get_u64(const cJSON *doc, const char *key, int required, uint64_t *out,
                   const char *where, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
    if (v == NULL) {
        if (!required)
            return 0;
        return fmt_err(err, errlen, where, key, "missing; every event of this kind needs it "
                                                "(docs/argus.md, argus.shim.events)");
    }
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !(d >= 0) || d >= 9007199254740992.0 || floor(d) != d)
        return fmt_err(err, errlen, where, key,
                       "expected a whole number from 0 to 2^53 (ns, IDs and counts are "
                       "non-negative integers)");
    *out = (uint64_t)d;
    return 0;
}

/* A time: signed whole ns after t0, returned as t0 + value (exact). */
static int get_time(const cJSON *doc, const char *key, uint64_t t0, uint64_t *out,
                    const char *where, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
    if (v == NULL)
        return fmt_err(err, errlen, where, key, "missing; every event of this kind needs it "
                                                "(docs/argus.md, argus.shim.events)");
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !(fabs(d) < 9007199254740992.0) || floor(d) != d)
        return fmt_err(err, errlen, where, key,
                       "expected whole ns after the header's t0, below 2^53 in size (write "
                       "large clocks as t0, a decimal string, and times relative to it)");
    int64_t rel = (int64_t)d;
    if ((rel < 0 && (uint64_t)(-rel) > t0) || (rel > 0 && (uint64_t)rel > UINT64_MAX - t0))
        return fmt_err(err, errlen, where, key, "the time falls outside 0..2^64-1 ns once t0 is added");
    *out = rel < 0 ? t0 - (uint64_t)(-rel) : t0 + (uint64_t)rel;
    return 0;
}

static int get_str(const cJSON *doc, const char *key, int required, const char **out,
                   const char *where, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
    *out = NULL;
    if (v == NULL && !required)
        return 0;
    if (!cJSON_IsString(v) || v->valuestring[0] == '\0' || strlen(v->valuestring) >= SHIM_MAX_NAME)
        return fmt_err(err, errlen, where, key,
                       v == NULL ? "missing; a name is required for this event"
                                 : "expected a non-empty string shorter than 4096 bytes");
    *out = v->valuestring;
    return 0;
}

/* An optional launch-dimension triple ("grid", "block"): three whole
 * numbers from 1 to 2^31 - 1 (CUDA's limits are lower; a 0 is no launch). */
static int get_dims(const cJSON *doc, const char *key, int *have, int64_t v[3],
                    const char *where, char *err, size_t errlen)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, key);
    *have = 0;
    if (a == NULL)
        return 0;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3)
        return fmt_err(err, errlen, where, key, "expected [x, y, z], three whole numbers");
    for (int i = 0; i < 3; i++) {
        const cJSON *e = cJSON_GetArrayItem(a, i);
        double d = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (!(d >= 1) || d > 2147483647.0 || floor(d) != d)
            return fmt_err(err, errlen, where, key,
                           "expected [x, y, z], whole numbers from 1 to 2^31 - 1");
        v[i] = (int64_t)d;
    }
    *have = 1;
    return 0;
}

/* The launch configuration and device of a kernel line (all optional:
 * recordings made before them read unchanged). */
static int kernel_cfg(const cJSON *doc, argus_shim_event *e, const char *where, char *err,
                      size_t errlen)
{
    uint64_t v = 0;
    int rc;
    if ((rc = get_dims(doc, "grid", &e->have_grid, e->grid, where, err, errlen)) != 0 ||
        (rc = get_dims(doc, "block", &e->have_block, e->block, where, err, errlen)) != 0)
        return rc;
    if (cJSON_GetObjectItemCaseSensitive(doc, "dsmem")) {
        if ((rc = get_u64(doc, "dsmem", 1, &v, where, err, errlen)) != 0)
            return rc;
        if (v > (1u << 30))
            return fmt_err(err, errlen, where, "dsmem", "dynamic shared memory over 1 GiB");
        e->have_dsmem = 1;
        e->dsmem = (int64_t)v;
    }
    if (cJSON_GetObjectItemCaseSensitive(doc, "device")) {
        if ((rc = get_u64(doc, "device", 1, &v, where, err, errlen)) != 0)
            return rc;
        if (v > UINT32_MAX)
            return fmt_err(err, errlen, where, "device", "expected a 32-bit device ID");
        e->have_device = 1;
        e->device = (uint32_t)v;
    }
    return 0;
}

static void copy_str(char *dst, size_t len, const char *src);

/* {"e":"device","id":N,"name":"...","sm_count":S,"cc":"M.m"}: a device CUPTI
 * reported. The same ID twice must say the same. */
static int device_line(argus_shim_input *in, const cJSON *doc, const char *where, char *err,
                       size_t errlen)
{
    uint64_t id = 0, sms = 0;
    const char *name, *cc;
    int rc;
    if ((rc = get_u64(doc, "id", 1, &id, where, err, errlen)) != 0 ||
        (rc = get_str(doc, "name", 1, &name, where, err, errlen)) != 0 ||
        (rc = get_u64(doc, "sm_count", 1, &sms, where, err, errlen)) != 0 ||
        (rc = get_str(doc, "cc", 1, &cc, where, err, errlen)) != 0)
        return rc;
    if (id > UINT32_MAX)
        return fmt_err(err, errlen, where, "id", "expected a 32-bit device ID");
    if (sms < 1 || sms > MOSAIC_GPU_MAX_SMS)
        return fmt_err(err, errlen, where, "sm_count", "expected 1 to 1024 SMs");
    for (size_t i = 0; i < in->ndevices; i++)
        if (in->devices[i].id == id) {
            if (strcmp(in->devices[i].name, name) != 0 || in->devices[i].sm_count != (int64_t)sms)
                return fmt_err(err, errlen, where, "id",
                               "this device ID was recorded before as another GPU");
            return 0;
        }
    if (in->ndevices >= ARGUS_SHIM_MAX_DEVICES)
        return fmt_err(err, errlen, where, "id", "more than 16 devices in one recording");
    in->devices[in->ndevices].id = (uint32_t)id;
    copy_str(in->devices[in->ndevices].name, sizeof(in->devices[0].name), name);
    in->devices[in->ndevices].sm_count = (int64_t)sms;
    copy_str(in->devices[in->ndevices].cc, sizeof(in->devices[0].cc), cc);
    in->ndevices++;
    return 0;
}

static void copy_str(char *dst, size_t len, const char *src)
{
    if (snprintf(dst, len, "%s", src ? src : "") < 0 && len)
        dst[0] = '\0';
}

static int set_cupti(argus_shim_input *in, const char *state, const char *where, const char *field,
                     char *err, size_t errlen)
{
    if (strcmp(state, "subscribed") == 0)
        in->cupti = ARGUS_SHIM_CUPTI_OK;
    else if (strcmp(state, "another_subscriber") == 0)
        in->cupti = ARGUS_SHIM_CUPTI_OTHER;
    else if (strcmp(state, "unavailable") == 0)
        in->cupti = ARGUS_SHIM_CUPTI_UNAVAILABLE;
    else
        return fmt_err(err, errlen, where, field,
                       "expected \"subscribed\", \"another_subscriber\" or \"unavailable\"");
    return 0;
}

static int on_header(parse_ctx *c, const char *where, const cJSON *doc, char *err, size_t errlen)
{
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, ARGUS_SHIM_EVENTS_SCHEMA) != 0 ||
        !cJSON_IsNumber(version) || version->valuedouble != ARGUS_SHIM_EVENTS_VERSION)
        return fmt_err(err, errlen, where, "schema",
                       "the first line must be the header {\"schema\":\"argus.shim.events\","
                       "\"version\":1,...}; is this an argus-shim recording (events.jsonl)?");
    const char *cmd = NULL, *note = NULL, *cupti = NULL;
    int rc;
    if ((rc = get_str(doc, "command", 0, &cmd, where, err, errlen)) != 0 ||
        (rc = get_str(doc, "note", 0, &note, where, err, errlen)) != 0 ||
        (rc = get_str(doc, "cupti", 1, &cupti, where, err, errlen)) != 0)
        return rc;
    if ((rc = set_cupti(c->in, cupti, where, "cupti", err, errlen)) != 0)
        return rc;
    const cJSON *t0 = cJSON_GetObjectItemCaseSensitive(doc, "t0");
    if (t0 != NULL) {
        const char *p = cJSON_IsString(t0) ? t0->valuestring : "";
        uint64_t v = 0;
        int ok = p[0] != '\0' && strlen(p) <= 20;
        for (; ok && *p; p++) {
            unsigned dig = (unsigned)(*p - '0');
            if (*p < '0' || *p > '9' || v > (UINT64_MAX - dig) / 10)
                ok = 0;
            else
                v = v * 10 + dig;
        }
        if (!ok)
            return fmt_err(err, errlen, where, "t0",
                           "expected the time origin as a decimal string of an unsigned "
                           "64-bit ns count, e.g. \"1796156437637826496\"");
        c->t0 = v;
    }
    copy_str(c->in->command, sizeof(c->in->command), cmd);
    copy_str(c->in->cupti_note, sizeof(c->in->cupti_note), note);
    c->have_header = 1;
    return 0;
}

/* The device-region lines of an armed launch (shim_arm.c writes them):
 * times are ns after the kernel's first CTA start, not on CUPTI's clock,
 * so they take no t0. */
static int device_event(parse_ctx *c, argus_shim_event *e, const cJSON *doc, const char *where,
                        char *err, size_t errlen)
{
    int rc;
    uint64_t v = 0;
    if ((rc = get_u64(doc, "corr", 1, &e->id, where, err, errlen)) != 0)
        return rc;
    if (e->kind == ARGUS_SHIM_ARMED) {
        const char *st = NULL;
        if ((rc = get_str(doc, "state", 1, &st, where, err, errlen)) != 0 ||
            (rc = get_str(doc, "name", 0, &e->name, where, err, errlen)) != 0 ||
            (rc = get_str(doc, "why", 0, &e->note, where, err, errlen)) != 0 ||
            (rc = get_u64(doc, "records_lost", 0, &e->lost, where, err, errlen)) != 0)
            return rc;
        static const char *const states[] = {"decoded", "not_armed", "discarded", "failed"};
        e->state = -1;
        for (int k = 0; k < 4; k++)
            if (strcmp(st, states[k]) == 0)
                e->state = k;
        if (e->state < 0)
            return fmt_err(err, errlen, where, "state",
                           "expected decoded, not_armed, discarded or failed");
        return argus_shim_input_add(c->in, e) == 0 ? 0 : ARGUS_ENOMEM;
    }
    if ((rc = get_u64(doc, "node", 1, &v, where, err, errlen)) != 0)
        return rc;
    if (v >= ARGUS_MAX_SLOTS)
        return fmt_err(err, errlen, where, "node", "a node index beyond 2^24");
    e->node = (uint32_t)v;
    if (e->kind == ARGUS_SHIM_DNODE) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(doc, "parent");
        e->parent = -1;
        if (p != NULL) {
            if ((rc = get_u64(doc, "parent", 1, &v, where, err, errlen)) != 0)
                return rc;
            if (v >= e->node)
                return fmt_err(err, errlen, where, "parent",
                               "a node's parent must be an earlier node (parents come first)");
            e->parent = (int64_t)v;
        }
        if ((rc = get_str(doc, "name", 1, &e->name, where, err, errlen)) != 0)
            return rc;
        return argus_shim_input_add(c->in, e) == 0 ? 0 : ARGUS_ENOMEM;
    }
    uint64_t cta = 0, warp = 0, off = 0, dur = 0, flags = 0;
    if ((rc = get_u64(doc, "cta", 1, &cta, where, err, errlen)) != 0 ||
        (rc = get_u64(doc, "warp", 1, &warp, where, err, errlen)) != 0 ||
        (rc = get_u64(doc, "off", 1, &off, where, err, errlen)) != 0 ||
        (rc = get_u64(doc, "dur", 1, &dur, where, err, errlen)) != 0 ||
        (rc = get_u64(doc, "flags", 0, &flags, where, err, errlen)) != 0)
        return rc;
    if (cta >= ARGUS_MAX_SLOTS || warp >= 32)
        return fmt_err(err, errlen, where, cta >= ARGUS_MAX_SLOTS ? "cta" : "warp",
                       "beyond a launch's limits (2^24 CTAs, 32 warps per CTA)");
    if (flags & ~(uint64_t)(ARGUS_OCC_OVERLAP | ARGUS_OCC_NO_END | ARGUS_OCC_NO_BEGIN))
        return fmt_err(err, errlen, where, "flags", "unknown occurrence flags (expected 1, 2, 4)");
    e->cta = (uint32_t)cta;
    e->warp = (uint32_t)warp;
    e->flags = (uint32_t)flags;
    e->start = off;
    e->end = off + dur;
    if (e->end < off)
        return fmt_err(err, errlen, where, "dur", "off + dur overflows");
    return argus_shim_input_add(c->in, e) == 0 ? 0 : ARGUS_ENOMEM;
}

/* A 64-bit CRC written as a decimal string (beyond a JSON double). */
static int get_crc(const cJSON *doc, uint64_t *out, const char *where, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "crc");
    const char *p = cJSON_IsString(v) ? v->valuestring : "";
    uint64_t x = 0;
    int ok = p[0] != '\0' && strlen(p) <= 20;
    for (; ok && *p; p++) {
        unsigned dig = (unsigned)(*p - '0');
        if (*p < '0' || *p > '9' || x > (UINT64_MAX - dig) / 10)
            ok = 0;
        else
            x = x * 10 + dig;
    }
    if (!ok)
        return fmt_err(err, errlen, where, "crc",
                       v == NULL ? "missing; PC sampling events name their module by its cubin CRC"
                                 : "expected the cubin CRC as a decimal string of an unsigned "
                                   "64-bit number, e.g. \"12345678901234567890\"");
    *out = x;
    return 0;
}

#define PCS_MAX_REASONS 4096

/* The PC sampling kinds (include/argus/shim.h); 1 when e is none of them. */
static int pcs_event(parse_ctx *c, const char *e, const cJSON *doc, const char *where, long line,
                     char *err, size_t errlen)
{
    argus_shim_input *in = c->in;
    argus_shim_pcs *ps = &in->pcs;
    int rc;
    if (strcmp(e, "pcs") == 0) {
        const char *st, *mode = NULL;
        uint64_t period = 0;
        if ((rc = get_str(doc, "state", 1, &st, where, err, errlen)) != 0 ||
            (rc = get_str(doc, "mode", 0, &mode, where, err, errlen)) != 0 ||
            (rc = get_u64(doc, "period", 0, &period, where, err, errlen)) != 0)
            return rc;
        if (strcmp(st, "enabled") != 0)
            return fmt_err(err, errlen, where, "state",
                           "expected \"enabled\" (a refusal is an \"unavailable\" event)");
        if (mode && strcmp(mode, "kernel_serialized") != 0 && strcmp(mode, "continuous") != 0)
            return fmt_err(err, errlen, where, "mode",
                           "expected \"kernel_serialized\" or \"continuous\"");
        if (period > 31)
            return fmt_err(err, errlen, where, "period",
                           "expected log2 of the sampling period in cycles, 5 to 31");
        ps->state = ARGUS_SHIM_PCS_ENABLED;
        copy_str(ps->mode, sizeof(ps->mode), mode ? mode : "kernel_serialized");
        ps->period = (uint32_t)period;
        return 0;
    }
    if (strcmp(e, "stall") == 0) {
        uint64_t idx;
        const char *name;
        if ((rc = get_u64(doc, "index", 1, &idx, where, err, errlen)) != 0 ||
            (rc = get_str(doc, "name", 1, &name, where, err, errlen)) != 0)
            return rc;
        if (idx > UINT32_MAX || ps->nreasons >= PCS_MAX_REASONS)
            return fmt_err(err, errlen, where, "index",
                           "expected a 32-bit stall reason index, at most 4096 reasons");
        for (size_t i = 0; i < ps->nreasons; i++)
            if (ps->reasons[i].index == idx)
                return fmt_err(err, errlen, where, "index", "this stall reason index was named before");
        if (argus__grow((void **)&ps->reasons, &ps->capreasons, ps->nreasons + 1,
                        sizeof(ps->reasons[0])) != 0 ||
            (ps->reasons[ps->nreasons].name = keep_str(in, name)) == NULL)
            return ARGUS_ENOMEM;
        ps->reasons[ps->nreasons++].index = (uint32_t)idx;
        return 0;
    }
    if (strcmp(e, "module") == 0) {
        uint64_t crc;
        const char *file;
        if ((rc = get_crc(doc, &crc, where, err, errlen)) != 0 ||
            (rc = get_str(doc, "cubin", 1, &file, where, err, errlen)) != 0)
            return rc;
        char path[8192];
        int w = file[0] == '/' || c->dir == NULL ? snprintf(path, sizeof(path), "%s", file)
                                                 : snprintf(path, sizeof(path), "%s/%s", c->dir, file);
        if (w < 0 || (size_t)w >= sizeof(path))
            return fmt_err(err, errlen, where, "cubin", "the path is too long");
        if (argus__grow((void **)&ps->modules, &ps->capmodules, ps->nmodules + 1,
                        sizeof(argus_shim_module)) != 0 ||
            (ps->modules[ps->nmodules].cubin = keep_str(in, path)) == NULL)
            return ARGUS_ENOMEM;
        ps->modules[ps->nmodules++].crc = crc;
        return 0;
    }
    if (strcmp(e, "pc") == 0) {
        argus_shim_pc pc = {.line = line, .stall = ps->nstalls};
        const char *fn;
        if ((rc = get_crc(doc, &pc.crc, where, err, errlen)) != 0 ||
            (rc = get_str(doc, "function", 1, &fn, where, err, errlen)) != 0 ||
            (rc = get_u64(doc, "pc", 1, &pc.pc, where, err, errlen)) != 0 ||
            (rc = get_u64(doc, "corr", 0, &pc.corr, where, err, errlen)) != 0)
            return rc;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "stall");
        if (!cJSON_IsArray(st))
            return fmt_err(err, errlen, where, "stall",
                           "expected an array of [stall reason index, samples] pairs");
        const cJSON *pair;
        cJSON_ArrayForEach(pair, st)
        {
            const cJSON *a = cJSON_GetArrayItem(pair, 0), *b = cJSON_GetArrayItem(pair, 1);
            if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2 || !cJSON_IsNumber(a) ||
                !cJSON_IsNumber(b) || !(a->valuedouble >= 0) || a->valuedouble > UINT32_MAX ||
                floor(a->valuedouble) != a->valuedouble || !(b->valuedouble >= 0) ||
                b->valuedouble >= 9007199254740992.0 || floor(b->valuedouble) != b->valuedouble)
                return fmt_err(err, errlen, where, "stall",
                               "each entry must be [index, samples], whole numbers >= 0");
            uint64_t n = (uint64_t)b->valuedouble;
            if (pc.samples > UINT64_MAX - n)
                return fmt_err(err, errlen, where, "stall", "the sample counts overflow");
            if (argus__grow((void **)&ps->stalls, &ps->capstalls, ps->nstalls + 1,
                            sizeof(argus_shim_stall)) != 0)
                return ARGUS_ENOMEM;
            ps->stalls[ps->nstalls++] = (argus_shim_stall){(uint32_t)a->valuedouble, n};
            pc.samples += n;
        }
        pc.nstall = ps->nstalls - pc.stall;
        if (argus__grow((void **)&ps->pc, &ps->cappc, ps->npc + 1, sizeof(argus_shim_pc)) != 0 ||
            (pc.function = keep_str(in, fn)) == NULL)
            return ARGUS_ENOMEM;
        ps->pc[ps->npc++] = pc;
        return 0;
    }
    if (strcmp(e, "pcline") == 0) {
        argus_shim_pcline l = {0};
        const char *fn, *file;
        uint64_t ln;
        if ((rc = get_crc(doc, &l.crc, where, err, errlen)) != 0 ||
            (rc = get_str(doc, "function", 1, &fn, where, err, errlen)) != 0 ||
            (rc = get_u64(doc, "pc", 1, &l.pc, where, err, errlen)) != 0 ||
            (rc = get_str(doc, "file", 1, &file, where, err, errlen)) != 0 ||
            (rc = get_u64(doc, "line", 1, &ln, where, err, errlen)) != 0)
            return rc;
        if (ln == 0 || ln > UINT32_MAX)
            return fmt_err(err, errlen, where, "line", "expected a source line from 1 to 2^32-1");
        l.line = (uint32_t)ln;
        if (argus__grow((void **)&ps->lines, &ps->caplines, ps->nlines + 1,
                        sizeof(argus_shim_pcline)) != 0 ||
            (l.function = keep_str(in, fn)) == NULL || (l.file = keep_str(in, file)) == NULL)
            return ARGUS_ENOMEM;
        ps->lines[ps->nlines++] = l;
        return 0;
    }
    if (strcmp(e, "pcs_totals") == 0) {
        uint64_t v[4] = {0};
        static const char *const keys[4] = {"samples", "dropped", "non_user", "buffer_full"};
        for (int k = 0; k < 4; k++)
            if ((rc = get_u64(doc, keys[k], 0, &v[k], where, err, errlen)) != 0)
                return rc;
        uint64_t *dst[4] = {&ps->total, &ps->dropped, &ps->non_user, &ps->buffer_full};
        for (int k = 0; k < 4; k++) {
            if (*dst[k] > UINT64_MAX - v[k])
                return fmt_err(err, errlen, where, keys[k], "the totals overflow");
            *dst[k] += v[k];
        }
        return 0;
    }
    return 1;
}

static int on_line(void *ctx, const char *where, long line, cJSON *doc, char *err, size_t errlen)
{
    parse_ctx *c = ctx;
    if (!cJSON_IsObject(doc))
        return fmt_err(err, errlen, where, NULL, "expected one JSON object per line");
    if (!c->have_header)
        return on_header(c, where, doc, err, errlen);
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "e");
    if (!cJSON_IsString(kind))
        return fmt_err(err, errlen, where, "e", "missing; every event line names its kind in \"e\"");
    argus_shim_event e = {.line = line};
    static const char *const words[] = {
        "",
#define ARGUS_SHIM_X_WORD(name, word) word,
        ARGUS_SHIM_EVENTS(ARGUS_SHIM_X_WORD)
#undef ARGUS_SHIM_X_WORD
    };
    for (int k = 1; k <= ARGUS_SHIM_ARMED; k++)
        if (strcmp(kind->valuestring, words[k]) == 0)
            e.kind = k;
    int rc = 0;
    argus_shim_input *in = c->in;
    if (e.kind == ARGUS_SHIM_NONE) {
        if (strcmp(kind->valuestring, "dropped") == 0) {
            uint64_t n = 0;
            if ((rc = get_u64(doc, "count", 1, &n, where, err, errlen)) != 0)
                return rc;
            in->dropped += n;
            return 0;
        }
        if (strcmp(kind->valuestring, "device") == 0)
            return device_line(in, doc, where, err, errlen);
        if (strcmp(kind->valuestring, "cupti") == 0) {
            /* What CUPTI allowed, told at cuInit (NVTX may have opened
             * the recording before CUDA started). */
            const char *st, *note;
            if ((rc = get_str(doc, "state", 1, &st, where, err, errlen)) != 0 ||
                (rc = get_str(doc, "note", 0, &note, where, err, errlen)) != 0 ||
                (rc = set_cupti(in, st, where, "state", err, errlen)) != 0)
                return rc;
            copy_str(in->cupti_note, sizeof(in->cupti_note), note);
            return 0;
        }
        if ((rc = pcs_event(c, kind->valuestring, doc, where, line, err, errlen)) != 1)
            return rc;
        if (strcmp(kind->valuestring, "unavailable") == 0) {
            const char *what, *why;
            if ((rc = get_str(doc, "what", 1, &what, where, err, errlen)) != 0 ||
                (rc = get_str(doc, "why", 1, &why, where, err, errlen)) != 0)
                return rc;
            if (strcmp(what, "pc_sampling") == 0)
                in->pcs.state = ARGUS_SHIM_PCS_UNAVAILABLE;
            if (in->nunavailable < ARGUS_SHIM_MAX_UNAVAILABLE) {
                copy_str(in->unavailable[in->nunavailable].what, sizeof(in->unavailable[0].what), what);
                copy_str(in->unavailable[in->nunavailable].why, sizeof(in->unavailable[0].why), why);
                in->nunavailable++;
            }
            return 0;
        }
        return fmt_err(err, errlen, where, "e",
                       "unknown event kind; expected push, pop, start, end, launch, kernel, "
                       "dnode, region, armed, cupti, device, dropped, unavailable, pcs, stall, "
                       "module, pc, pcline or pcs_totals");
    }
    uint64_t stream = 0;
    switch (e.kind) {
    case ARGUS_SHIM_PUSH:
    case ARGUS_SHIM_START:
        rc = get_str(doc, "name", 1, &e.name, where, err, errlen);
        break;
    case ARGUS_SHIM_LAUNCH:
        rc = get_str(doc, "name", 0, &e.name, where, err, errlen);
        break;
    case ARGUS_SHIM_KERNEL:
        if ((rc = get_str(doc, "name", 1, &e.name, where, err, errlen)) != 0 ||
            (rc = get_u64(doc, "corr", 1, &e.id, where, err, errlen)) != 0 ||
            (rc = get_time(doc, "start", c->t0, &e.start, where, err, errlen)) != 0 ||
            (rc = get_time(doc, "end", c->t0, &e.end, where, err, errlen)) != 0 ||
            (rc = get_u64(doc, "stream", 0, &stream, where, err, errlen)) != 0 ||
            (rc = kernel_cfg(doc, &e, where, err, errlen)) != 0)
            return rc;
        if (e.end < e.start)
            return fmt_err(err, errlen, where, "end", "a kernel cannot end before it starts");
        if (stream > UINT32_MAX)
            return fmt_err(err, errlen, where, "stream", "expected a 32-bit stream ID");
        e.stream = (uint32_t)stream;
        return argus_shim_input_add(in, &e) == 0 ? 0 : ARGUS_ENOMEM;
    case ARGUS_SHIM_DNODE:
    case ARGUS_SHIM_REGION:
    case ARGUS_SHIM_ARMED:
        return device_event(c, &e, doc, where, err, errlen);
    default:
        break;
    }
    if (rc != 0)
        return rc;
    if ((rc = get_u64(doc, "tid", 1, &e.tid, where, err, errlen)) != 0 ||
        (rc = get_time(doc, "ts", c->t0, &e.ts, where, err, errlen)) != 0)
        return rc;
    if ((e.kind == ARGUS_SHIM_START || e.kind == ARGUS_SHIM_END) &&
        (rc = get_u64(doc, "id", 1, &e.id, where, err, errlen)) != 0)
        return rc;
    if (e.kind == ARGUS_SHIM_LAUNCH && (rc = get_u64(doc, "corr", 1, &e.id, where, err, errlen)) != 0)
        return rc;
    return argus_shim_input_add(in, &e) == 0 ? 0 : ARGUS_ENOMEM;
}

int argus_shim_input_parse(const char *path, const char *text, size_t len, argus_shim_input *in,
                           int *truncated, char *msg, size_t msglen)
{
    if (text == NULL || in == NULL)
        return ARGUS_EINVAL;
    argus_shim_input_init(in);
    if (truncated)
        *truncated = 0;
    /* The recorder ends every line with a newline; a last line without one
     * is what a program killed mid-write leaves, and is dropped. */
    size_t keep = len;
    if (len > 0 && text[len - 1] != '\n') {
        while (keep > 0 && text[keep - 1] != '\n')
            keep--;
        if (truncated)
            *truncated = 1;
    }
    /* Module images named in the recording lie beside it. */
    char dir[4096] = "";
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (slash && (size_t)(slash - path) < sizeof(dir))
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    parse_ctx c = {.in = in, .dir = dir[0] ? dir : (slash ? "/" : NULL)};
    int rc = mosaic__jsonl_parse_strict(path, text, keep, on_line, &c, msg, msglen);
    if (rc == MOSAIC_ENOMEM)
        rc = ARGUS_ENOMEM;
    else if (rc == MOSAIC_EFORMAT || rc == MOSAIC_EINVAL)
        rc = ARGUS_EFORMAT;
    if (rc == 0 && !c.have_header)
        rc = argus__fail(ARGUS_EFORMAT, msg, msglen,
                         "%s: no header line: not an argus-shim recording, or the program "
                         "died before CUDA started (nothing was recorded)",
                         path ? path : "<input>");
    if (rc != 0)
        argus_shim_input_free(in);
    return rc;
}

int argus_shim_input_load(const char *path, argus_shim_input *in, int *truncated, char *msg,
                          size_t msglen)
{
    if (path == NULL || in == NULL)
        return ARGUS_EINVAL;
    argus_shim_input_init(in);
    char *text = NULL;
    int rc = mosaic__read_file(path, SHIM_MAX_FILE, &text, msg, msglen);
    if (rc != 0)
        return rc == MOSAIC_ENOMEM ? ARGUS_ENOMEM : rc == MOSAIC_ETOOBIG ? ARGUS_ELIMIT : ARGUS_EIO;
    rc = argus_shim_input_parse(path, text, strlen(text), in, truncated, msg, msglen);
    free(text);
    return rc;
}
