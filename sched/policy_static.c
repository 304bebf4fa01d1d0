/*
 * The static green-context baseline (`policy static`, issue 11 item 5): the
 * HP service on the fewest SMs that keep its isolated slowdown under
 * STATIC_BOUND (1.1x), BE on the rest of the GPU, and no admission control
 * (every BE kernel admitted at once, as policy none). It is the baseline
 * the paper's MosaicSched is compared with ("green-ctx static"), so it
 * decides once, at the daemon's start, from data, and never looks at the
 * running requests.
 *
 * What HP runs is named by the config (`hp-kernels`: a file of profile
 * keys, one a line, a key once per launch in one request), since the
 * partition has to be known before the HP service's first launch. HP's
 * isolated slowdown on n SMs is the request's time there over its time on
 * the full GPU: sum_i d_i r_i(n) / sum_i d_i, d_i the kernel's profiled
 * duration (the profile store), r_i(n) its time on n SMs over its time on
 * the full GPU:
 *
 *   - measured, for a kernel of a variant in the split sweep
 *     (<profile-dir>/splits/time.jsonl, mosaic-zoo time --sms; the kernel's
 *     variant from <profile-dir>/variant_kernels.json, a key of several
 *     variants taken by the first with split times): the medians at the
 *     measured SM counts, linear in n between them, t(smallest) *
 *     smallest / n below the smallest measured count (the same work on
 *     fewer SMs), a ratio under 1 (noise) read as 1;
 *   - else predicted, by the predictor's partition model (model-dir): the
 *     isolated duration it estimates for the kernel on n SMs (waves, the
 *     per-SM speed-up fewer SMs give, the DRAM share; docs/predictor.md)
 *     over its profiled full-GPU duration;
 *   - else the kernel cannot be judged and the daemon does not start (the
 *     message names the kernel and both ways to fix it).
 *
 * The sizes tried are those the shim's split makes (preload/green.c): an HP
 * group of a multiple of the partition alignment, at least the minimum, and
 * a BE remainder of at least the minimum, for the H200 (mosaic_gpu_desc_h200:
 * 132 SMs, 8 and 8), so HP 8, 16, ..., 120. When none is under the bound,
 * HP takes the largest (120) and the log says the bound is missed: a
 * static split cannot do better, which is the baseline's known weakness.
 * `hp-sms K` overrides the choice (a size the GPU cannot make is refused at
 * start with the nearest ones it can).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "daemon.h"
#include "mosaic/predict.h"
#include "mosaic/profile.h"

#define STATIC_BOUND 1.1
/* Kernels in the HP service's list: ResNet-50's request alone is 258
 * distinct keys (282 launches) on the H200, where 256 refused it
 * (docs/results/2026-12-02-s7-gpu). */
#define MAX_HP_KERNELS 4096
#define MAX_POINTS 16

/* One variant's measured medians by SM count. */
struct curve {
    int n;
    unsigned sms[MAX_POINTS];
    double us[MAX_POINTS];
};

struct hpk {
    char key[1024];
    int line;
    const struct mosaic_kernel *k;
    double dur_ns;
    struct curve c; /* c.n == 0: no split times */
    struct mosaic_pkernel *pk;
};

struct sstate {
    struct hpk *k;
    int nk;
    struct mosaic__pstore *store;
    struct mosaic_predictor *pred;
    struct mosaic_gpu_desc g;
};

/* ---- the split sweep -------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        if (buf)
            buf[n] = '\0';
    }
    fclose(f);
    return buf;
}

static void curve_add(struct curve *c, double sms, double us)
{
    if (!(sms >= 1 && sms <= MOSAIC_GPU_MAX_SMS) || !(us > 0) || c->n == MAX_POINTS)
        return;
    for (int i = 0; i < c->n; i++)
        if (c->sms[i] == (unsigned)sms)
            return; /* the first record of a count wins, as in the simulator */
    int i = c->n++;
    /* Kept sorted by SM count: insertion, a handful of points. */
    while (i > 0 && c->sms[i - 1] > (unsigned)sms) {
        c->sms[i] = c->sms[i - 1];
        c->us[i] = c->us[i - 1];
        i--;
    }
    c->sms[i] = (unsigned)sms;
    c->us[i] = us;
}

/* The variant's time on n SMs from its curve (at least two points, one at
 * the full GPU: checked by the caller). */
static double curve_at(const struct curve *c, unsigned n)
{
    if (n <= c->sms[0])
        return c->us[0] * c->sms[0] / n;
    for (int i = 1; i < c->n; i++)
        if (n <= c->sms[i])
            return c->us[i - 1] + (c->us[i] - c->us[i - 1]) * (double)(n - c->sms[i - 1]) /
                                      (double)(c->sms[i] - c->sms[i - 1]);
    return c->us[c->n - 1];
}

/*
 * Gives every HP kernel its variant's curve from the sweep. Both files are
 * optional (a profile-dir without a sweep sends every kernel to the
 * predictor); a file that is there but unreadable is an error.
 */
static int load_splits(const char *dir, struct sstate *s, unsigned total, char *err,
                       size_t errlen)
{
    char path[8192];
    char *text;
    cJSON *doc, *vs, *v;
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    /* Per HP kernel, the name of its variant (the first listing it). */
    char (*var)[128] = calloc((size_t)s->nk, sizeof(*var));

    if (!var)
        return MOSAIC_ENOMEM;
    if (snprintf(path, sizeof(path), "%s/variant_kernels.json", dir) >= (int)sizeof(path)) {
        free(var);
        return 0;
    }
    text = slurp(path);
    if (!text) {
        free(var);
        return 0;
    }
    doc = cJSON_Parse(text);
    free(text);
    vs = cJSON_GetObjectItemCaseSensitive(doc, "variants");
    if (!cJSON_IsObject(vs)) {
        snprintf(err, errlen, "policy static: %s: no \"variants\" object (expected "
                 "mosaic-variant-kernels/1); fix or remove the file", path);
        cJSON_Delete(doc);
        free(var);
        return MOSAIC_ECONFIG;
    }
    cJSON_ArrayForEach(v, vs) {
        const cJSON *key;
        if (!v->string || strlen(v->string) >= sizeof(var[0]))
            continue;
        cJSON_ArrayForEach(key, cJSON_GetObjectItemCaseSensitive(v, "kernels")) {
            if (!cJSON_IsString(key))
                continue;
            for (int i = 0; i < s->nk; i++)
                if (!var[i][0] && strcmp(s->k[i].key, key->valuestring) == 0)
                    snprintf(var[i], sizeof(var[i]), "%s", v->string);
        }
    }
    cJSON_Delete(doc);

    if (snprintf(path, sizeof(path), "%s/splits/time.jsonl", dir) >= (int)sizeof(path) ||
        !(f = fopen(path, "r"))) {
        free(var);
        return 0;
    }
    while (getline(&line, &cap, f) > 0) {
        cJSON *r = cJSON_Parse(line);
        const cJSON *rec = cJSON_GetObjectItemCaseSensitive(r, "record");
        const cJSON *vn = cJSON_GetObjectItemCaseSensitive(r, "variant");
        const cJSON *sms = cJSON_GetObjectItemCaseSensitive(r, "sms");
        const cJSON *med = cJSON_GetObjectItemCaseSensitive(r, "median_us");

        if (cJSON_IsString(rec) && strcmp(rec->valuestring, "time") == 0 &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")) && cJSON_IsString(vn) &&
            cJSON_IsNumber(sms) && cJSON_IsNumber(med))
            for (int i = 0; i < s->nk; i++)
                if (var[i][0] && strcmp(var[i], vn->valuestring) == 0)
                    curve_add(&s->k[i].c, sms->valuedouble, med->valuedouble);
        cJSON_Delete(r);
    }
    free(line);
    fclose(f);
    free(var);
    /* A curve without the full GPU, or of one point, has no ratio. */
    for (int i = 0; i < s->nk; i++) {
        struct curve *c = &s->k[i].c;
        if (c->n < 2 || c->sms[c->n - 1] != total)
            c->n = 0;
    }
    return 0;
}

/* ---- the HP kernels --------------------------------------------------- */

static int load_keys(const char *file, struct sstate *s, char *err, size_t errlen)
{
    FILE *f = fopen(file, "r");
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    ssize_t len;

    if (!f) {
        snprintf(err, errlen, "hp-kernels %s: cannot be read (%s): name a file of the HP "
                 "service's profile keys, one a line", file, strerror(errno));
        return MOSAIC_ECONFIG;
    }
    while ((len = getline(&line, &cap, f)) > 0) {
        char *p = line, *e;
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
                           line[len - 1] == ' ' || line[len - 1] == '\t'))
            line[--len] = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '#')
            continue;
        e = p + strlen(p);
        if (s->nk == MAX_HP_KERNELS || (size_t)(e - p) >= sizeof(s->k[0].key)) {
            snprintf(err, errlen, "hp-kernels %s:%d: %s (at most %d keys of at most %zu "
                     "characters); shorten the list", file, lineno,
                     s->nk == MAX_HP_KERNELS ? "too many keys" : "key too long",
                     MAX_HP_KERNELS, sizeof(s->k[0].key) - 1);
            free(line);
            fclose(f);
            return MOSAIC_ECONFIG;
        }
        memcpy(s->k[s->nk].key, p, (size_t)(e - p) + 1);
        s->k[s->nk].line = lineno;
        s->nk++;
    }
    free(line);
    fclose(f);
    if (s->nk == 0) {
        snprintf(err, errlen, "hp-kernels %s: no profile key in the file: list the HP "
                 "service's kernels (mosaic-profile keys, one a line), or set hp-sms",
                 file);
        return MOSAIC_ECONFIG;
    }
    return 0;
}

/* r_i(n) of kernel i: measured or predicted (checked to exist by open). */
static int ratio_at(struct sstate *s, struct hpk *k, unsigned n, double *out, char *err,
                    size_t errlen)
{
    unsigned total = (unsigned)s->g.sm_count;
    double r;

    if (n >= total) {
        *out = 1.0;
        return 0;
    }
    if (k->c.n) {
        r = curve_at(&k->c, n) / k->c.us[k->c.n - 1];
    } else {
        struct mosaic_pred_query q = {.a = k->pk, .b = k->pk, .mode = MOSAIC_MODE_PARTITIONED,
                                      .sms_a = (int)n, .sms_b = (int)(total - n)};
        struct mosaic_pred_answer ans;
        char perr[512];
        int rc = mosaic_predict(s->pred, &q, &ans, perr, sizeof(perr));
        if (rc != 0) {
            snprintf(err, errlen, "policy static: predicting %s on %u SMs: %s", k->key, n,
                     perr);
            return rc;
        }
        r = ans.order[0].r.k[0].iso_us / mosaic_pkernel_profiled_us(k->pk);
    }
    *out = isfinite(r) && r > 1.0 ? r : 1.0;
    return 0;
}

static int slowdown_at(struct sstate *s, unsigned n, double *out, char *err, size_t errlen)
{
    double num = 0, den = 0;

    for (int i = 0; i < s->nk; i++) {
        double r;
        int rc = ratio_at(s, &s->k[i], n, &r, err, errlen);
        if (rc != 0)
            return rc;
        num += s->k[i].dur_ns * r;
        den += s->k[i].dur_ns;
    }
    *out = den > 0 ? num / den : 1.0;
    return 0;
}

static void sstate_free(struct sstate *s)
{
    for (int i = 0; s->k && i < s->nk; i++)
        mosaic_pkernel_free(s->k[i].pk);
    free(s->k);
    if (s->pred)
        mosaic_predictor_close(s->pred);
    mosaic__pstore_free(s->store);
}

/* ---- the choice ------------------------------------------------------- */

/* Whether the shim's split can give HP a group of n SMs (preload/green.c:
 * HP the group, BE the remainder). */
static int hp_size_ok(const struct mosaic_gpu_desc *g, unsigned n)
{
    unsigned align = g->sm_partition_align > 0 ? (unsigned)g->sm_partition_align : 1;
    unsigned min = g->sm_partition_min > 0 ? (unsigned)g->sm_partition_min : 1;
    unsigned total = (unsigned)g->sm_count;

    return n >= min && n < total && n % align == 0 && total - n >= min;
}

int mosaic__static_hp_size_check(unsigned n, char *err, size_t errlen)
{
    struct mosaic_gpu_desc g;
    unsigned below = 0, above = 0, total;

    mosaic_gpu_desc_h200(&g);
    total = (unsigned)g.sm_count;
    if (hp_size_ok(&g, n))
        return 0;
    for (unsigned m = n; m >= 1 && !below; m--)
        if (hp_size_ok(&g, m))
            below = m;
    for (unsigned m = n; m < total && !above; m++)
        if (hp_size_ok(&g, m))
            above = m;
    if (below && above)
        snprintf(err, errlen, "hp-sms %u: the GPU (%u SMs) cannot give HP a partition of %u "
                 "SMs (a multiple of %d, at least %d, leaving BE at least %d); the nearest it "
                 "can: %u or %u", n, total, n, g.sm_partition_align, g.sm_partition_min,
                 g.sm_partition_min, below, above);
    else
        snprintf(err, errlen, "hp-sms %u: the GPU (%u SMs) cannot give HP a partition of %u "
                 "SMs (a multiple of %d, at least %d, leaving BE at least %d); the nearest it "
                 "can: %u", n, total, n, g.sm_partition_align, g.sm_partition_min,
                 g.sm_partition_min, below ? below : above);
    return MOSAIC_ECONFIG;
}

/*
 * Loads what HP's slowdown on n SMs needs (the hp-kernels keys, their
 * profiles, split curves and, for kernels without, the predictor), for
 * policy static's choice and for sm-mode partition and tune
 * (mosaic__hp_slowdowns). out gets the kernel counts. s is freed by the
 * caller on every path.
 */
static int sstate_load(const struct mosaic__sched_config *cfg, struct sstate *s,
                       struct mosaic__partition *out, const char *who, char *err,
                       size_t errlen)
{
    unsigned loaded = 0, skipped = 0, total;
    int rc;

    mosaic_gpu_desc_h200(&s->g);
    total = (unsigned)s->g.sm_count;
    if (!cfg->hp_kernels[0]) {
        snprintf(err, errlen, "%s needs the HP service's kernels to predict its slowdown "
                 "on fewer SMs: set hp-kernels (a file of profile keys, one a line)%s", who,
                 cfg->policy == MOSAIC__POLICY_STATIC ? " or hp-sms (the HP partition's SMs)"
                                                      : "");
        return MOSAIC_ECONFIG;
    }
    if (!cfg->profile_dir[0]) {
        snprintf(err, errlen, "%s needs the HP kernels' profiles: set profile-dir "
                 "(e.g. profiler/data/h200)", who);
        return MOSAIC_ECONFIG;
    }
    s->k = calloc(MAX_HP_KERNELS, sizeof(*s->k));
    if (!s->k)
        return MOSAIC_ENOMEM;
    if ((rc = load_keys(cfg->hp_kernels, s, err, errlen)) != 0)
        return rc;
    rc = mosaic__pstore_load(cfg->profile_dir, &s->store, &loaded, &skipped, err, errlen);
    if (rc != 0)
        return rc == MOSAIC_EIO ? MOSAIC_ECONFIG : rc;
    for (int i = 0; i < s->nk; i++) {
        s->k[i].k = mosaic__pstore_get(s->store, mosaic__kernel_id(s->k[i].key));
        if (s->k[i].k)
            s->k[i].dur_ns = s->k[i].k->metrics[MOSAIC_M_duration_ns];
        if (!s->k[i].k || !(s->k[i].dur_ns > 0)) {
            snprintf(err, errlen, "hp-kernels %s:%d: %.200s: %s in profile-dir %s: profile the "
                     "HP service's kernels there, or set hp-sms", cfg->hp_kernels,
                     s->k[i].line, s->k[i].key,
                     s->k[i].k ? "its profile has no duration_ns" : "no profile of this key",
                     cfg->profile_dir);
            return MOSAIC_ECONFIG;
        }
    }
    if ((rc = load_splits(cfg->profile_dir, s, total, err, errlen)) != 0)
        return rc;
    for (int i = 0; i < s->nk; i++) {
        char perr[512];
        if (s->k[i].c.n) {
            out->measured++;
            continue;
        }
        if (!cfg->model_dir[0]) {
            snprintf(err, errlen, "hp-kernels %s:%d: %.200s has no split times in "
                     "%s/splits/time.jsonl and model-dir is empty: set model-dir (the "
                     "predictor's partition model estimates it), or hp-sms",
                     cfg->hp_kernels, s->k[i].line, s->k[i].key, cfg->profile_dir);
            return MOSAIC_ECONFIG;
        }
        if (!s->pred && (rc = mosaic_predictor_open(cfg->model_dir, NULL, &s->pred, perr,
                                                    sizeof(perr))) != 0) {
            snprintf(err, errlen, "model-dir %s: %s (set model-dir to a directory of "
                     "inter.json, shared.json and analytic.json)", cfg->model_dir, perr);
            return MOSAIC_ECONFIG;
        }
        if ((rc = mosaic_pkernel_prepare(s->pred, s->k[i].k, s->k[i].key, &s->k[i].pk, perr,
                                         sizeof(perr))) != 0) {
            snprintf(err, errlen, "hp-kernels %s:%d: the predictor cannot take %.200s: %s",
                     cfg->hp_kernels, s->k[i].line, s->k[i].key, perr);
            return MOSAIC_ECONFIG;
        }
        out->predicted++;
    }
    out->hp_kernels = (unsigned)s->nk;
    return 0;
}

int mosaic__static_partition(const struct mosaic__sched_config *cfg,
                             struct mosaic__partition *out, char *err, size_t errlen)
{
    struct sstate s = {0};
    unsigned total, best = 0, largest = 0;
    double sd_best = 0, sd_largest = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    mosaic_gpu_desc_h200(&s.g);
    total = (unsigned)s.g.sm_count;
    out->bound = STATIC_BOUND;
    if (cfg->hp_sms) {
        rc = mosaic__static_hp_size_check(cfg->hp_sms, err, errlen);
        if (rc != 0)
            return rc;
        out->hp_sms = cfg->hp_sms;
        out->be_sms = total - cfg->hp_sms;
        out->from_config = 1;
        out->hp_slowdown = NAN;
        return 0;
    }
    if ((rc = sstate_load(cfg, &s, out, "policy static", err, errlen)) != 0)
        goto out;
    for (unsigned n = 1; n < total; n++) {
        double sd;
        if (!hp_size_ok(&s.g, n))
            continue;
        if ((rc = slowdown_at(&s, n, &sd, err, errlen)) != 0)
            goto out;
        largest = n;
        sd_largest = sd;
        if (!best && sd < STATIC_BOUND) {
            best = n;
            sd_best = sd;
        }
    }
    if (!largest) {
        snprintf(err, errlen, "policy static: the GPU (%u SMs) cannot be split", total);
        rc = MOSAIC_ECONFIG;
        goto out;
    }
    out->under = best != 0;
    out->hp_sms = best ? best : largest;
    out->hp_slowdown = best ? sd_best : sd_largest;
    out->be_sms = total - out->hp_sms;
out:
    sstate_free(&s);
    return rc;
}

int mosaic__hp_slowdowns(const struct mosaic__sched_config *cfg, double *sd, size_t nsd,
                         struct mosaic__partition *info, char *err, size_t errlen)
{
    struct sstate s = {0};
    int rc;

    memset(info, 0, sizeof(*info));
    for (size_t n = 0; n < nsd; n++)
        sd[n] = NAN;
    rc = sstate_load(cfg, &s, info, cfg->sm_mode == MOSAIC__SM_PARTITION ? "sm-mode partition"
                                                                        : "tune",
                     err, errlen);
    for (unsigned n = 1; rc == 0 && n < (unsigned)s.g.sm_count && n < nsd; n++)
        if (hp_size_ok(&s.g, n))
            rc = slowdown_at(&s, n, &sd[n], err, errlen);
    sstate_free(&s);
    return rc;
}
