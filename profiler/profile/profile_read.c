/*
 * Reads a "mosaic-profile/1" JSON file back into the model (cJSON, through
 * the core's strict reader: trailing data, duplicate keys, NUL bytes and
 * deep nesting are refused there). Every error names the file and the
 * field, e.g.
 *   prof.json: kernels[3].grid: expected an array of 3 integers
 * and returns MOSAIC_EFORMAT for input that is not a profile, MOSAIC_ENOMEM
 * when an allocation failed, and the whole-file reader's code (MOSAIC_EIO,
 * MOSAIC_ETOOBIG, ...) when the file could not be read. Values no GPU can
 * have (an SM count of 0, a block of 2048 threads, a grid dimension of 0)
 * are refused here, so that no consumer computes with them. One limit:
 * cJSON reports a parse that ran out of memory as a parse error, so an
 * out-of-memory inside cJSON reads as "not valid JSON" (EFORMAT); cJSON's
 * allocator hooks are process-wide, which is why they are not replaced here
 * to tell the two apart.
 */
#define _GNU_SOURCE 1
#include "mosaic/profile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "json.h"

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

/* CUDA's launch limits (every GPU since compute capability 3.0): a grid of
 * at most 2^31-1 x 65535 x 65535 blocks, a block of at most 1024 x 1024 x
 * 64 threads and 1024 in all. A profile outside them was not measured. */
static int check_launch(struct rd *r, const char *path, const int64_t grid[3],
                        const int64_t block[3])
{
    static const int64_t gmax[3] = {2147483647, 65535, 65535};
    static const int64_t bmax[3] = {1024, 1024, 64};
    static const char *const axis[3] = {"x", "y", "z"};
    char field[96];
    int64_t threads = 1;

    for (int i = 0; i < 3; i++) {
        snprintf(field, sizeof(field), "%s.grid", path);
        if (grid[i] != MOSAIC_NULL && (grid[i] < 1 || grid[i] > gmax[i]))
            return fail(r, field, "%s = %" PRId64 " blocks is outside CUDA's "
                        "limit 1..%" PRId64 ": the profile is damaged; capture "
                        "it again", axis[i], grid[i], gmax[i]);
        snprintf(field, sizeof(field), "%s.block", path);
        if (block[i] != MOSAIC_NULL && (block[i] < 1 || block[i] > bmax[i]))
            return fail(r, field, "%s = %" PRId64 " threads is outside CUDA's "
                        "limit 1..%" PRId64 ": the profile is damaged; capture "
                        "it again", axis[i], block[i], bmax[i]);
        if (block[i] != MOSAIC_NULL)
            threads *= block[i]; /* at most 1024 * 1024 * 64: no overflow */
    }
    if (threads > 1024)
        return fail(r, field, "%" PRId64 " threads per block; no GPU allows "
                    "more than 1024: the profile is damaged; capture it again",
                    threads);
    return 0;
}

/* The GPU description: unknown (null) values are allowed, impossible ones
 * are not, so that a consumer comparing it with its own GPU compares
 * meaningful numbers (mosaic_profile_check_gpu). */
static int check_gpu_fields(struct rd *r, const struct mosaic_gpu *g)
{
    if (g->name && g->name[0] == '\0')
        return fail(r, "gpu.name", "empty: name the GPU (e.g. \"NVIDIA "
                    "H200\") or write null");
    if (g->sm_count != MOSAIC_NULL &&
        (g->sm_count < 1 || g->sm_count > MOSAIC_GPU_MAX_SMS))
        return fail(r, "gpu.sm_count", "%" PRId64 " SMs: a GPU has 1..%d; the "
                    "profile is damaged or was edited by hand; capture it "
                    "again", g->sm_count, MOSAIC_GPU_MAX_SMS);
    if (g->l2_bytes != MOSAIC_NULL &&
        (g->l2_bytes < 1 || g->l2_bytes > MOSAIC_GPU_MAX_L2_BYTES))
        return fail(r, "gpu.l2_bytes", "%" PRId64 " bytes of L2 is not a "
                    "GPU's (1..%lld): the profile is damaged; capture it "
                    "again", g->l2_bytes, (long long)MOSAIC_GPU_MAX_L2_BYTES);
    if (g->cc) {
        const char *c = g->cc;
        int maj = 0, min = 0;
        while (*c >= '0' && *c <= '9' && maj < 3)
            c++, maj++;
        if (*c == '.')
            for (c++; *c >= '0' && *c <= '9' && min < 3; c++)
                min++;
        if (maj == 0 || min == 0 || *c != '\0')
            return fail(r, "gpu.cc", "\"%.40s\" is not a compute capability "
                        "\"MAJOR.MINOR\" (e.g. \"9.0\")", g->cc);
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
    if ((rc = check_launch(r, path, k->grid, k->block)) != 0)
        return rc;
    if (k->dyn_smem != MOSAIC_NULL && k->dyn_smem < 0) {
        char f[96];
        snprintf(f, sizeof(f), "%s.dyn_smem", path);
        return fail(r, f, "%" PRId64 " bytes: expected 0 or more", k->dyn_smem);
    }
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
    if (!json)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, r.what, NULL,
                            "no text to read");
    if ((rc = mosaic__json_parse_strict(r.what, json, strlen(json), &root, err,
                                        errlen)) != 0)
        return rc;
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
        (rc = get_str(&r, it, "cc", "gpu", 1, &p->gpu.cc)) ||
        (rc = check_gpu_fields(&r, &p->gpu)))
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
