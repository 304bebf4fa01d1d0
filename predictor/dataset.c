/*
 * The H200 co-run dataset (docs/dataset.md) as the predictor's training and
 * test points: zoo.profile.json, variants.jsonl, variant_kernels.json (the
 * variant -> kernel mapping, scripts/variant_kernels.py) and corun.jsonl.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core.h"
#include "json.h"
#include "train_internal.h"

void mosaic__dataset_free(struct mosaic__dataset *ds)
{
    for (size_t i = 0; i < ds->nv; i++) {
        free(ds->v[i].name);
        free(ds->v[i].family);
        mosaic_pkernel_free(ds->v[i].pk);
    }
    free(ds->v);
    for (size_t i = 0; i < ds->nfam; i++)
        free(ds->families[i]);
    free(ds->families);
    free(ds->pt);
    for (size_t i = 0; i < ds->nrec; i++) free(ds->rec[i].samples);
    free(ds->rec);
    mosaic_profile_free(&ds->prof);
    memset(ds, 0, sizeof *ds);
}

/* Prepares a variant's main kernel (key k0) and its dependent kernel (k1,
 * a split-K reduce; may be NULL) from profile prof; v->kernel is the main
 * kernel's index there. */
static int prepare_keys(const struct mosaic_predictor *pr, const struct mosaic_profile *prof,
                        const struct mosaic_kindex *ix, const char *path, const char *pname,
                        struct mosaic__ds_variant *v, const cJSON *k0, const cJSON *k1,
                        char *err, size_t errlen)
{
    long ki = mosaic_kindex_find(ix, prof, k0->valuestring), k1i;
    if (ki < 0) {
        snprintf(err, errlen, "%s: variants.%s.kernels[0]: key not in %s", path, v->name,
                 pname);
        return MOSAIC_EINVAL;
    }
    v->kernel = ki;
    if (mosaic_pkernel_prepare(pr, &prof->kernels[ki], pname, &v->pk, err, errlen))
        return MOSAIC_EINVAL;
    if (!cJSON_IsString(k1)) return 0;
    k1i = mosaic_kindex_find(ix, prof, k1->valuestring);
    if (k1i < 0) {
        snprintf(err, errlen, "%s: variants.%s.kernels[1]: key not in %s", path, v->name,
                 pname);
        return MOSAIC_EINVAL;
    }
    return mosaic_pkernel_set_follow(v->pk, &prof->kernels[k1i], pname, err, errlen);
}

/* A variant whose kernels come from their own profile file (field
 * "profile", relative to the dataset directory, no ".."). */
static int load_separate(const struct mosaic_predictor *pr, const char *dir, const char *path,
                         struct mosaic__ds_variant *v, const cJSON *pf, const cJSON *k0,
                         const cJSON *k1, char *err, size_t errlen)
{
    struct mosaic_profile prof;
    struct mosaic_kindex ix = {0};
    char file[4096];
    int rc = MOSAIC_EINVAL;
    if (!cJSON_IsString(pf) || !pf->valuestring[0] || pf->valuestring[0] == '/' ||
        strstr(pf->valuestring, "..")) {
        snprintf(err, errlen, "%s: variants.%s.profile: want a path inside the dataset "
                 "directory", path, v->name);
        return MOSAIC_EINVAL;
    }
    snprintf(file, sizeof file, "%s/%s", dir, pf->valuestring);
    mosaic_profile_init(&prof);
    if (mosaic_profile_read_file(file, &prof, err, errlen) != 0 ||
        mosaic_predictor_check_profile(pr, &prof, file, err, errlen) != 0)
        goto out;
    for (size_t i = 0; i < prof.n_kernels; i++)
        if (mosaic_kindex_add(&ix, &prof, i)) {
            snprintf(err, errlen, "%s: out of memory", file);
            rc = MOSAIC_ENOMEM;
            goto out;
        }
    rc = prepare_keys(pr, &prof, &ix, path, pf->valuestring, v, k0, k1, err, errlen);
out:
    mosaic_kindex_free(&ix);
    mosaic_profile_free(&prof);
    return rc;
}

static int find_variant(const struct mosaic__dataset *ds, const char *name)
{
    for (size_t i = 0; i < ds->nv; i++)
        if (strcmp(ds->v[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int add_family(struct mosaic__dataset *ds, const char *fam)
{
    char **nf;
    for (size_t i = 0; i < ds->nfam; i++)
        if (strcmp(ds->families[i], fam) == 0)
            return (int)i;
    nf = realloc(ds->families, (ds->nfam + 1) * sizeof *nf);
    if (!nf) return -1;
    ds->families = nf;
    if (!(nf[ds->nfam] = strdup(fam))) return -1;
    return (int)ds->nfam++;
}

static int push_point(struct mosaic__dataset *ds, const struct mosaic__ds_point *p)
{
    if (ds->npt == ds->cappt) {
        size_t nc = ds->cappt ? ds->cappt * 2 : 1024;
        struct mosaic__ds_point *np = realloc(ds->pt, nc * sizeof *np);
        if (!np) return -1;
        ds->pt = np;
        ds->cappt = nc;
    }
    ds->pt[ds->npt++] = *p;
    return 0;
}

/* Keeps a measurement whole (its every repeat), for the conservative
 * value's score: the scheduler knows only the enqueue order ("order": "ba"
 * when B was enqueued first). */
static int push_record(struct mosaic__dataset *ds, const struct mosaic__ds_point *p,
                       const char *order, cJSON *sa, cJSON *sb, int n)
{
    struct mosaic__ds_record *r;
    if (ds->nrec == ds->caprec) {
        size_t nc = ds->caprec ? 2 * ds->caprec : 1024;
        struct mosaic__ds_record *nr = realloc(ds->rec, nc * sizeof *nr);
        if (!nr) return -1;
        ds->rec = nr;
        ds->caprec = nc;
    }
    r = &ds->rec[ds->nrec];
    memset(r, 0, sizeof *r);
    r->samples = malloc(2 * (size_t)n * sizeof *r->samples);
    if (!r->samples) return -1;
    r->mode = p->mode;
    r->sms_a = p->sms_a;
    r->sms_b = p->sms_b;
    r->va = p->va;
    r->vb = p->vb;
    r->iso_a = p->iso_a;
    r->iso_b = p->iso_b;
    r->enq_b_first = order && strcmp(order, "ba") == 0;
    r->n = n;
    for (int i = 0; i < n; i++) {
        r->samples[2 * i] = cJSON_GetArrayItem(sa, i)->valuedouble;
        r->samples[2 * i + 1] = cJSON_GetArrayItem(sb, i)->valuedouble;
    }
    ds->nrec++;
    return 0;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double num(cJSON *o, const char *k)
{
    cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(it) ? it->valuedouble : NAN;
}

static const char *str(cJSON *o, const char *k)
{
    cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* The point of one dispatch order: the medians of its n repeats (none:
 * no point). */
static int push_order(struct mosaic__dataset *ds, struct mosaic__ds_point *p, int b_first,
                      double *xa, double *xb, int n)
{
    if (!n) return 0;
    p->b_first = b_first;
    p->meas_a = median(xa, n);
    p->meas_b = median(xb, n);
    p->nsamples = n;
    return push_point(ds, p);
}

/* One corun record -> points. Shared mode: one point per observed dispatch
 * order (sign of the start offset: > 0, A started first). */
static int corun_points(struct mosaic__dataset *ds, cJSON *r, const char *path,
                        long line, char *err, size_t errlen)
{
    const char *mode = str(r, "mode"), *a = str(r, "a"), *b = str(r, "b");
    struct mosaic__ds_point p;
    cJSON *sa, *sb, *so;
    int n;

    memset(&p, 0, sizeof p);
    if (!mode || !a || !b) {
        snprintf(err, errlen, "%s:%ld: field mode, a or b missing", path, line);
        return -1;
    }
    p.mode = strcmp(mode, "shared") == 0 ? MOSAIC_MODE_SHARED
             : strcmp(mode, "partitioned") == 0 ? MOSAIC_MODE_PARTITIONED : -1;
    p.va = find_variant(ds, a);
    p.vb = find_variant(ds, b);
    if (p.mode < 0 || p.va < 0 || p.vb < 0) {
        snprintf(err, errlen, "%s:%ld: unknown mode or variant (%s, %s, %s)", path, line,
                 mode, a, b);
        return -1;
    }
    p.sms_a = (int)num(r, "sms_a");
    p.sms_b = (int)num(r, "sms_b");
    p.iso_a = num(r, "iso_gated_a_us");
    p.iso_b = num(r, "iso_gated_b_us");
    if (!(p.iso_a > 0) || !(p.iso_b > 0) || p.sms_a <= 0 || p.sms_b <= 0) {
        snprintf(err, errlen, "%s:%ld: field iso_gated_*_us or sms_* missing", path, line);
        return -1;
    }
    sa = cJSON_GetObjectItemCaseSensitive(r, "corun_a_samples_us");
    sb = cJSON_GetObjectItemCaseSensitive(r, "corun_b_samples_us");
    so = cJSON_GetObjectItemCaseSensitive(r, "start_offset_samples_us");
    n = cJSON_GetArraySize(sa);
    if (!cJSON_IsArray(sa) || !cJSON_IsArray(sb) || !cJSON_IsArray(so) || n < 1 ||
        n > 1000 || cJSON_GetArraySize(sb) != n || cJSON_GetArraySize(so) != n) {
        snprintf(err, errlen, "%s:%ld: per-repeat sample arrays missing or of unequal length",
                 path, line);
        return -1;
    }
    {
        double va[1000], vb[1000], wa[1000], wb[1000];
        int na = 0, nb = 0;
        for (int i = 0; i < n; i++) {
            double x = cJSON_GetArrayItem(sa, i)->valuedouble;
            double y = cJSON_GetArrayItem(sb, i)->valuedouble;
            double o = cJSON_GetArrayItem(so, i)->valuedouble;
            if (!(x > 0) || !(y > 0) || !isfinite(o)) {
                snprintf(err, errlen, "%s:%ld: sample %d not a positive number", path, line, i);
                return -1;
            }
            if (p.mode == MOSAIC_MODE_PARTITIONED || o >= 0) {
                va[na] = x; vb[na++] = y;
            } else {
                wa[nb] = x; wb[nb++] = y;
            }
        }
        if (push_record(ds, &p, str(r, "order"), sa, sb, n)) goto nomem;
        if (push_order(ds, &p, 0, va, vb, na) || push_order(ds, &p, 1, wa, wb, nb))
            goto nomem;
    }
    return 0;
nomem:
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
}

/* The largest dataset file read (corun.jsonl of the H200 dataset is about
 * 60 MB; a gigabyte leaves room for many times the measurements). */
#define DATASET_FILE_MAX (1L << 30)

/* One line of variants.jsonl: a "variant" record names a variant and its
 * family; other records (the run's header) are skipped. */
static int on_variant(void *ctx, const char *where, long line, cJSON *r, char *err,
                      size_t errlen)
{
    struct mosaic__dataset *ds = ctx;
    struct mosaic__ds_variant *nv;
    const char *rec = str(r, "record"), *name, *fam;
    (void)line;
    if (!rec || strcmp(rec, "variant") != 0) return 0;
    name = str(r, "name");
    fam = str(r, "family");
    if (!name || !fam)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, where, NULL,
                            "field name or family missing (a variant record needs both)");
    nv = realloc(ds->v, (ds->nv + 1) * sizeof *nv);
    if (!nv) return mosaic__errf(err, errlen, MOSAIC_ENOMEM, where, NULL, "out of memory");
    ds->v = nv;
    memset(&nv[ds->nv], 0, sizeof *nv);
    nv[ds->nv].name = strdup(name);
    nv[ds->nv].family = strdup(fam);
    nv[ds->nv].fam = add_family(ds, fam);
    nv[ds->nv].kernel = -1;
    ds->nv++;
    if (!nv[ds->nv - 1].name || !nv[ds->nv - 1].family || nv[ds->nv - 1].fam < 0)
        return mosaic__errf(err, errlen, MOSAIC_ENOMEM, where, NULL, "out of memory");
    return 0;
}

struct corun_ctx {
    struct mosaic__dataset *ds;
    const char *path;
};

/* One line of corun.jsonl: a successful "corun" record becomes points;
 * failed runs and other records are counted by nobody and skipped. */
static int on_corun(void *ctx, const char *where, long line, cJSON *r, char *err,
                    size_t errlen)
{
    struct corun_ctx *c = ctx;
    const char *rec = str(r, "record");
    (void)where;
    if (!rec || strcmp(rec, "corun") != 0 ||
        !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")))
        return 0;
    c->ds->n_records++;
    return corun_points(c->ds, r, c->path, line, err, errlen);
}

int mosaic__dataset_load(const char *dir, const struct mosaic_predictor *pr,
                         struct mosaic__dataset *ds, char *err, size_t errlen)
{
    char path[4096];
    cJSON *map = NULL, *mv;
    struct mosaic_kindex ix = {0};
    struct corun_ctx cctx;

    memset(ds, 0, sizeof *ds);
    mosaic_profile_init(&ds->prof);
    snprintf(path, sizeof path, "%s/zoo.profile.json", dir);
    /* The dataset's kernels must come from the GPU the predictor models:
     * training on another GPU's profiles would fit the wrong machine. */
    if (mosaic_profile_read_file(path, &ds->prof, err, errlen) != 0 ||
        mosaic_predictor_check_profile(pr, &ds->prof, path, err, errlen) != 0) {
        mosaic_profile_free(&ds->prof);
        return MOSAIC_EINVAL;
    }
    for (size_t i = 0; i < ds->prof.n_kernels; i++)
        if (mosaic_kindex_add(&ix, &ds->prof, i)) goto nomem;

    /* variants */
    snprintf(path, sizeof path, "%s/variants.jsonl", dir);
    if (mosaic__jsonl_read_file(path, DATASET_FILE_MAX, on_variant, ds, err, errlen))
        goto fail;

    /* mapping */
    snprintf(path, sizeof path, "%s/variant_kernels.json", dir);
    if (mosaic__json_read_file(path, DATASET_FILE_MAX, &map, err, errlen)) goto fail;
    mv = cJSON_GetObjectItemCaseSensitive(map, "variants");
    if (!cJSON_IsObject(mv)) {
        snprintf(err, errlen, "%s: field variants missing (malformed or truncated)", path);
        goto fail;
    }
    for (size_t i = 0; i < ds->nv; i++) {
        cJSON *e = cJSON_GetObjectItemCaseSensitive(mv, ds->v[i].name);
        cJSON *ks = e ? cJSON_GetObjectItemCaseSensitive(e, "kernels") : NULL;
        cJSON *k0 = cJSON_IsArray(ks) ? cJSON_GetArrayItem(ks, 0) : NULL;
        cJSON *k1 = cJSON_IsArray(ks) ? cJSON_GetArrayItem(ks, 1) : NULL;
        cJSON *pf = e ? cJSON_GetObjectItemCaseSensitive(e, "profile") : NULL;
        if (!cJSON_IsString(k0)) {
            snprintf(err, errlen, "%s: field variants.%s.kernels[0] missing", path,
                     ds->v[i].name);
            goto fail;
        }
        if (pf) {
            /* a variant captured on its own (its launch configuration equals
             * another variant's, so the shared capture has only one of them);
             * its kernel index is in that file, not in ds->prof */
            if (load_separate(pr, dir, path, &ds->v[i], pf, k0, k1, err, errlen)) goto fail;
            ds->v[i].kernel = -1;
            continue;
        }
        if (prepare_keys(pr, &ds->prof, &ix, path, "zoo.profile.json", &ds->v[i], k0, k1,
                         err, errlen))
            goto fail;
    }
    cJSON_Delete(map);
    map = NULL;

    /* co-run measurements */
    snprintf(path, sizeof path, "%s/corun.jsonl", dir);
    cctx.ds = ds;
    cctx.path = path;
    if (mosaic__jsonl_read_file(path, DATASET_FILE_MAX, on_corun, &cctx, err, errlen))
        goto fail;
    mosaic_kindex_free(&ix);
    return 0;
nomem:
    snprintf(err, errlen, "%s: out of memory", dir);
fail:
    cJSON_Delete(map);
    mosaic_kindex_free(&ix);
    mosaic__dataset_free(ds);
    return MOSAIC_EINVAL;
}
