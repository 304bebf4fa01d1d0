/*
 * The analytic coefficients (analytic.json): defaults, reader and writer.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core.h"
#include "json.h"
#include "predictor_internal.h"

void mosaic__coef_default(struct mosaic__coef *c)
{
    c->pack = 0;
    c->gap_us = 1.6;
    c->intra_w = 1;
    c->cons_margin = 1;
}

int mosaic__coef_save(const char *path, const struct mosaic__coef *c,
                      char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return MOSAIC_EIO;
    }
    fprintf(f,
            "{\"schema\": \"mosaic-analytic/1\",\n"
            " \"pack\": %.17g,\n \"gap_us\": %.17g,\n \"intra_w\": %.17g,\n"
            " \"cons_margin\": %.17g}\n",
            c->pack, c->gap_us, c->intra_w, c->cons_margin);
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return MOSAIC_EIO;
    }
    return 0;
}

static int coef_num(cJSON *root, const char *path, const char *key, double lo,
                    double hi, double *out, char *err, size_t errlen)
{
    cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
        it->valuedouble < lo || it->valuedouble > hi) {
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, path, key,
                            "missing or not a number in [%g, %g]", lo, hi);
    }
    *out = it->valuedouble;
    return 0;
}

int mosaic__coef_load(const char *path, struct mosaic__coef *c, char *err,
                      size_t errlen)
{
    cJSON *root, *sch;
    int rc;

    err[0] = 0;
    /* The strict reader: a second "pack" key or text after the object is
     * refused rather than read as cJSON would (the first value). */
    rc = mosaic__json_read_file(path, 1L << 20, &root, err, errlen);
    if (rc) return rc == MOSAIC_EFORMAT ? MOSAIC_EINVAL : rc;
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "%s: not a JSON object (malformed or truncated)", path);
        cJSON_Delete(root);
        return MOSAIC_EINVAL;
    }
    sch = cJSON_GetObjectItemCaseSensitive(root, "schema");
    if (!cJSON_IsString(sch) || strcmp(sch->valuestring, "mosaic-analytic/1") != 0) {
        snprintf(err, errlen, "%s: field \"schema\" is not \"mosaic-analytic/1\"", path);
        cJSON_Delete(root);
        return MOSAIC_EINVAL;
    }
    rc = coef_num(root, path, "pack", 0, 10, &c->pack, err, errlen);
    if (!rc) rc = coef_num(root, path, "gap_us", 0, 100, &c->gap_us, err, errlen);
    if (!rc) rc = coef_num(root, path, "intra_w", 0, 10, &c->intra_w, err, errlen);
    /* optional (model sets trained before issue 9 lack it): 1, no margin */
    c->cons_margin = 1;
    if (!rc && cJSON_GetObjectItemCaseSensitive(root, "cons_margin"))
        rc = coef_num(root, path, "cons_margin", 1, 4, &c->cons_margin, err, errlen);
    cJSON_Delete(root);
    return rc;
}
