/*
 * Reads a "mosaic-profile/1" JSON file back into the model (cJSON). Every
 * error names the file and the field, e.g.
 *   prof.json: kernels[3].grid: expected an array of 3 integers
 * and returns MOSAIC_EFORMAT for input that is not a profile, MOSAIC_ENOMEM
 * when an allocation failed, and the whole-file reader's code (MOSAIC_EIO,
 * MOSAIC_ETOOBIG, ...) when the file could not be read. One limit: cJSON
 * reports a parse that ran out of memory as a parse error, so an
 * out-of-memory inside cJSON_Parse reads as "not valid JSON" (EFORMAT);
 * cJSON's allocator hooks are process-wide, which is why they are not
 * replaced here to tell the two apart.
 */
#define _GNU_SOURCE 1
#include "mosaic/profile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define MAX_PROFILE_BYTES (1024L * 1024 * 1024)

struct rd {
    const char *what; /* file name for messages */
    char *err;
    size_t errlen;
};

/* Malformed input: "file: field: message", MOSAIC_EFORMAT. */
#define fail(r, field, ...)                                             \
    mosaic__errf((r)->err, (r)->errlen, MOSAIC_EFORMAT, (r)->what, (field), \
                 __VA_ARGS__)
/* An allocation failed while reading field. */
#define fail_nomem(r, field)                                                \
    mosaic__errf((r)->err, (r)->errlen, MOSAIC_ENOMEM, (r)->what, (field), \
                 "out of memory")

/* An integer field: JSON null -> MOSAIC_NULL; absent -> MOSAIC_NULL when
 * optional, an error otherwise. */
static int get_int(struct rd *r, const cJSON *obj, const char *name,
                   const char *path, int optional, int64_t *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    char field[256];

    snprintf(field, sizeof(field), "%s%s%s", path, *path ? "." : "", name);
    if (!it) {
        if (optional) {
            *out = MOSAIC_NULL;
            return 0;
        }
        return fail(r, field, "missing");
    }
    if (cJSON_IsNull(it)) {
        *out = MOSAIC_NULL;
        return 0;
    }
    if (!cJSON_IsNumber(it))
        return fail(r, field, "expected an integer or null");
    double v = it->valuedouble;
    if (!isfinite(v) || v != floor(v) || v < -9.0e15 || v > 9.0e15)
        return fail(r, field, "expected an integer, got %g", v);
    *out = (int64_t)v;
    return 0;
}

static int get_double(struct rd *r, const cJSON *it, const char *field,
                      double *out)
{
    if (!it || cJSON_IsNull(it)) {
        *out = NAN;
        return 0;
    }
    if (!cJSON_IsNumber(it))
        return fail(r, field, "expected a number or null");
    *out = it->valuedouble;
    return 0;
}

static int get_str(struct rd *r, const cJSON *obj, const char *name,
                   const char *path, int optional, char **out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    char field[256];

    snprintf(field, sizeof(field), "%s%s%s", path, *path ? "." : "", name);
    if (!it || cJSON_IsNull(it)) {
        if (optional || (it && cJSON_IsNull(it)))
            return mosaic_set_str(out, NULL); /* frees: cannot fail */
        return fail(r, field, "missing");
    }
    if (!cJSON_IsString(it))
        return fail(r, field, "expected a string");
    if (mosaic_set_str(out, it->valuestring) != 0)
        return fail_nomem(r, field);
    return 0;
}

static int get_triple(struct rd *r, const cJSON *obj, const char *name,
                      const char *path, int64_t v[3])
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    char field[256];

    snprintf(field, sizeof(field), "%s.%s", path, name);
    if (!it)
        return fail(r, field, "missing");
    if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 3)
        return fail(r, field, "expected an array of 3 integers");
    for (int i = 0; i < 3; i++) {
        const cJSON *e = cJSON_GetArrayItem(it, i);
        if (cJSON_IsNull(e)) {
            v[i] = MOSAIC_NULL;
            continue;
        }
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) ||
            e->valuedouble < 0 || e->valuedouble > 4294967295.0)
            return fail(r, field, "expected an array of 3 integers in "
                        "0..4294967295");
        v[i] = (int64_t)e->valuedouble;
    }
    return 0;
}

static int read_kernel(struct rd *r, const cJSON *jk, size_t idx,
                       struct mosaic_kernel *k)
{
    char path[64];
    const cJSON *it;
    int rc;

    snprintf(path, sizeof(path), "kernels[%zu]", idx);
    if (!cJSON_IsObject(jk))
        return fail(r, path, "expected an object");
    if ((rc = get_str(r, jk, "key", path, 0, &k->key)) != 0)
        return rc;
    if (!k->key)
        return fail(r, path, "key must be a string");
    if ((rc = get_str(r, jk, "name", path, 0, &k->name)) != 0)
        return rc;
    if (!k->name)
        return fail(r, path, "name must be a string");
    if ((rc = get_triple(r, jk, "grid", path, k->grid)) ||
        (rc = get_triple(r, jk, "block", path, k->block)) ||
        (rc = get_int(r, jk, "dyn_smem", path, 0, &k->dyn_smem)) ||
        (rc = get_int(r, jk, "static_smem", path, 1, &k->static_smem)) ||
        (rc = get_int(r, jk, "regs", path, 1, &k->regs)) ||
        (rc = get_int(r, jk, "local_bytes", path, 1, &k->local_bytes)) ||
        (rc = get_int(r, jk, "max_threads", path, 1, &k->max_threads)) ||
        (rc = get_int(r, jk, "carveout", path, 1, &k->carveout)) ||
        (rc = get_int(r, jk, "launches", path, 0, &k->launches)))
        return rc;
    if (k->launches == MOSAIC_NULL || k->launches < 0)
        return fail(r, path, "launches must be a non-negative integer");

    it = cJSON_GetObjectItemCaseSensitive(jk, "occupancy");
    if (it && !cJSON_IsNull(it)) {
        char opath[96];
        snprintf(opath, sizeof(opath), "%s.occupancy", path);
        if (!cJSON_IsObject(it))
            return fail(r, opath, "expected an object");
        if ((rc = get_int(r, it, "blocks_per_sm", opath, 1, &k->occ.blocks_per_sm)) ||
            (rc = get_int(r, it, "limit_threads", opath, 1, &k->occ.limit_threads)) ||
            (rc = get_int(r, it, "limit_regs", opath, 1, &k->occ.limit_regs)) ||
            (rc = get_int(r, it, "limit_smem", opath, 1, &k->occ.limit_smem)) ||
            (rc = get_int(r, it, "limit_blocks", opath, 1, &k->occ.limit_blocks)) ||
            (rc = get_int(r, it, "reserved_smem_per_block", opath, 1,
                          &k->occ.reserved_smem_per_block)))
            return rc;
    }

    it = cJSON_GetObjectItemCaseSensitive(jk, "metrics");
    {
        char mpath[96];
        snprintf(mpath, sizeof(mpath), "%s.metrics", path);
        if (!it)
            return fail(r, mpath, "missing");
        if (!cJSON_IsObject(it))
            return fail(r, mpath, "expected an object");
        for (int m = 0; m < MOSAIC_N_METRICS; m++) {
            char fpath[192];
            snprintf(fpath, sizeof(fpath), "%s.%s", mpath, mosaic_metric_key(m));
            if ((rc = get_double(r, cJSON_GetObjectItemCaseSensitive(it, mosaic_metric_key(m)),
                           fpath, &k->metrics[m])))
                return rc;
        }
    }
    /* duration_ns duplicates metrics.duration_ns; it wins when the metrics
     * object lacks it. */
    it = cJSON_GetObjectItemCaseSensitive(jk, "duration_ns");
    if (it && isnan(k->metrics[MOSAIC_M_duration_ns])) {
        char dpath[96];
        snprintf(dpath, sizeof(dpath), "%s.duration_ns", path);
        if ((rc = get_double(r, it, dpath, &k->metrics[MOSAIC_M_duration_ns])))
            return rc;
    }
    it = cJSON_GetObjectItemCaseSensitive(jk, "derived");
    if (it && !cJSON_IsNull(it)) {
        char dpath[96];
        snprintf(dpath, sizeof(dpath), "%s.derived", path);
        if (!cJSON_IsObject(it))
            return fail(r, dpath, "expected an object");
        for (int d = 0; d < MOSAIC_N_DERIVED; d++) {
            char fpath[192];
            snprintf(fpath, sizeof(fpath), "%s.%s", dpath, mosaic_derived_key(d));
            if ((rc = get_double(r, cJSON_GetObjectItemCaseSensitive(it, mosaic_derived_key(d)),
                           fpath, &k->derived[d])))
                return rc;
        }
    } else {
        mosaic_kernel_derive(k);
    }
    return 0;
}

int mosaic_profile_read_string(const char *json, const char *what,
                               struct mosaic_profile *p, char *err,
                               size_t errlen)
{
    struct rd r = {what ? what : "<profile>", err, errlen};
    cJSON *root;
    const cJSON *it;
    int rc = MOSAIC_EFORMAT;

    mosaic_profile_init(p);
    root = cJSON_ParseWithOpts(json, NULL, 1); /* nothing may follow */
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= json ? (long)(at - json) : -1;
        int line = 1;
        for (long i = 0; i < off; i++)
            line += json[i] == '\n';
        return fail(&r, NULL, "not valid JSON (error near line %d); the file "
                    "may be truncated: capture or import it again", line);
    }
    if (!cJSON_IsObject(root)) {
        rc = fail(&r, NULL, "expected a JSON object at the top level");
        goto out;
    }
    it = cJSON_GetObjectItemCaseSensitive(root, "schema");
    if (!cJSON_IsString(it)) {
        rc = fail(&r, "schema", "missing: not a mosaic profile");
        goto out;
    }
    if (strcmp(it->valuestring, MOSAIC_PROFILE_SCHEMA) != 0) {
        rc = fail(&r, "schema", "'%s' is not " MOSAIC_PROFILE_SCHEMA
             " (written by another version of mosaic-profile?)", it->valuestring);
        goto out;
    }
    it = cJSON_GetObjectItemCaseSensitive(root, "gpu");
    if (!cJSON_IsObject(it)) {
        rc = fail(&r, "gpu", "missing or not an object");
        goto out;
    }
    if ((rc = get_str(&r, it, "name", "gpu", 1, &p->gpu.name)) ||
        (rc = get_int(&r, it, "sm_count", "gpu", 1, &p->gpu.sm_count)) ||
        (rc = get_int(&r, it, "l2_bytes", "gpu", 1, &p->gpu.l2_bytes)) ||
        (rc = get_str(&r, it, "driver", "gpu", 1, &p->gpu.driver)) ||
        (rc = get_str(&r, it, "cuda", "gpu", 1, &p->gpu.cuda)) ||
        (rc = get_str(&r, it, "cc", "gpu", 1, &p->gpu.cc)))
        goto out;
    if ((rc = get_str(&r, root, "date", "", 1, &p->date)) ||
        (rc = get_str(&r, root, "method", "", 0, &p->method)) ||
        (rc = get_str(&r, root, "source", "", 1, &p->source)) ||
        (rc = get_int(&r, root, "passes", "", 1, &p->passes)))
        goto out;
    it = cJSON_GetObjectItemCaseSensitive(root, "complete");
    if (!cJSON_IsBool(it)) {
        rc = fail(&r, "complete", "missing or not true/false");
        goto out;
    }
    p->complete = cJSON_IsTrue(it);
    it = cJSON_GetObjectItemCaseSensitive(root, "problems");
    if (!cJSON_IsArray(it)) {
        rc = fail(&r, "problems", "missing or not an array");
        goto out;
    }
    {
        int complete = p->complete;
        const cJSON *e;
        size_t i = 0;
        cJSON_ArrayForEach(e, it) {
            if (!cJSON_IsString(e)) {
                char f[64];
                snprintf(f, sizeof(f), "problems[%zu]", i);
                rc = fail(&r, f, "expected a string");
                goto out;
            }
            if (mosaic_profile_add_problem(p, "%s", e->valuestring) != 0) {
                rc = fail_nomem(&r, "problems");
                goto out;
            }
            i++;
        }
        p->complete = complete;
    }
    it = cJSON_GetObjectItemCaseSensitive(root, "kernels");
    if (!cJSON_IsArray(it)) {
        rc = fail(&r, "kernels", "missing or not an array");
        goto out;
    }
    {
        const cJSON *e;
        size_t i = 0;
        cJSON_ArrayForEach(e, it) {
            struct mosaic_kernel *k = mosaic_profile_add_kernel(p);
            if (!k) {
                rc = fail_nomem(&r, "kernels");
                goto out;
            }
            if ((rc = read_kernel(&r, e, i, k)) != 0)
                goto out;
            i++;
        }
    }
    rc = 0;
out:
    cJSON_Delete(root);
    if (rc != 0)
        mosaic_profile_free(p);
    return rc;
}

int mosaic_profile_read_file(const char *path, struct mosaic_profile *p,
                             char *err, size_t errlen)
{
    struct rd r = {path, err, errlen};
    char *buf;
    int rc;

    mosaic_profile_init(p);
    rc = mosaic__read_file(path, MAX_PROFILE_BYTES, &buf, err, errlen);
    if (rc != 0)
        return rc;
    if (buf[0] == '\0') {
        free(buf);
        return fail(&r, NULL, "empty file: the profile was never written "
                    "(did the program exit normally?)");
    }
    rc = mosaic_profile_read_string(buf, path, p, err, errlen);
    free(buf);
    return rc;
}
