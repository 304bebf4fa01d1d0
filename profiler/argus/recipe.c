/*
 * Argus recipes: how each signal is measured, read from data at run time
 * (argus/plan.h; the files are the JSON files of profiler/argus/recipes/, their schema
 * in docs/argus-plan.md).
 *
 * Recipes are data rather than code so that what a collection does to a
 * run (its effects) can be corrected where it is found wrong on a GPU,
 * without touching the planner: the planner's partition rules are fixed,
 * the facts they are applied to are not. That makes the loader the guard:
 * every list entry must be a name from the lists in plan.h (an effect the
 * planner does not know would otherwise be ignored and two collections
 * that must not share a run would share one), and each error names the
 * file, the recipe and the field, with the nearest valid name.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "argus/plan.h"
#include "argus_internal.h"
#include "core.h"
#include "json.h"

#define RECIPE_MAX_BYTES (1L << 20)
#define RECIPE_MAX_COUNT 256u
#define RECIPE_MAX_FILES 256u

static const char *const be_names[] = {
#define ARGUS_X_BE(e, name, what) name,
    ARGUS_BACKENDS(ARGUS_X_BE)
#undef ARGUS_X_BE
};
static const char *const fx_names[] = {
#define ARGUS_X_FX(e, name, what) name,
    ARGUS_EFFECTS(ARGUS_X_FX)
#undef ARGUS_X_FX
};
static const char *const obs_names[] = {
#define ARGUS_X_OBS(e, name, what) name,
    ARGUS_OBSERVES(ARGUS_X_OBS)
#undef ARGUS_X_OBS
};
static const char *const tx_names[] = {
#define ARGUS_X_TX(e, name, what) name,
    ARGUS_TRANSFORMS(ARGUS_X_TX)
#undef ARGUS_X_TX
};
static const char *const co_names[] = {
#define ARGUS_X_CO(e, name) name,
    ARGUS_COORDS(ARGUS_X_CO)
#undef ARGUS_X_CO
};
static const char *const an_names[] = {
#define ARGUS_X_AN(e, name, type, what) name,
    ARGUS_ANALYSES(ARGUS_X_AN)
#undef ARGUS_X_AN
};
static const char *const rule_names[] = {
#define ARGUS_X_RULE(name, what) name,
    ARGUS_SYNTHESIS_RULES(ARGUS_X_RULE)
#undef ARGUS_X_RULE
};
static const char *const task_names[] = {"transform", "collect", "synthesize", "control"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *pick(const char *const *names, size_t n, int i)
{
    return i >= 0 && (size_t)i < n ? names[i] : NULL;
}

const char *argus_backend_name(int be) { return pick(be_names, COUNT(be_names), be); }
const char *argus_effect_name(int fx) { return pick(fx_names, COUNT(fx_names), fx); }
const char *argus_observes_name(int obs) { return pick(obs_names, COUNT(obs_names), obs); }
const char *argus_transform_name(int tx) { return pick(tx_names, COUNT(tx_names), tx); }
const char *argus_coord_name(int co) { return pick(co_names, COUNT(co_names), co); }
const char *argus_analysis_name(int an) { return pick(an_names, COUNT(an_names), an); }
const char *argus_task_type_name(int type) { return pick(task_names, COUNT(task_names), type); }

/* Where a message comes from: "file: recipe NAME: field". */
typedef struct where {
    const char *file;
    const char *recipe;
    char *msg;
    size_t msglen;
} where;

static int bad(const where *w, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(const where *w, const char *field, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (n < 0)
        what[0] = '\0';
    if (w->recipe != NULL)
        return argus__fail(ARGUS_EFORMAT, w->msg, w->msglen, "%s: recipe %s: %s: %s", w->file,
                           w->recipe, field, what);
    return argus__fail(ARGUS_EFORMAT, w->msg, w->msglen, "%s: %s: %s", w->file, field, what);
}

/* The index of `name` in names[0..n), or an error that names the field,
 * the unknown word and the nearest known ones. */
static int lookup(const where *w, const char *field, const char *kind, const cJSON *v,
                  const char *const *names, size_t n, int *out)
{
    if (!cJSON_IsString(v))
        return bad(w, field, "expected a string naming the %s", kind);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v->valuestring, names[i]) == 0) {
            *out = (int)i;
            return 0;
        }
    }
    char near[512], all[1024];
    size_t k = argus_nearest_names(v->valuestring, names, n, 3, near, sizeof near);
    size_t used = 0;
    all[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int m = snprintf(all + used, sizeof all - used, "%s%s", i ? ", " : "", names[i]);
        if (m < 0 || (size_t)m >= sizeof all - used)
            break;
        used += (size_t)m;
    }
    return bad(w, field, "unknown %s \"%.128s\"%s%s%s; known: %s", kind, v->valuestring,
               k ? "; did you mean " : "", k ? near : "", k ? "?" : "", all);
}

/* A list of names as a bit set. */
static int name_bits(const where *w, const cJSON *obj, const char *key, const char *kind,
                     const char *const *names, size_t n, uint32_t *bits, const char *prefix)
{
    *bits = 0;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
    char field[160];
    snprintf(field, sizeof field, "%s%s", prefix, key);
    if (arr == NULL)
        return 0;
    if (!cJSON_IsArray(arr))
        return bad(w, field, "expected an array of %s names", kind);
    int i = 0;
    for (const cJSON *v = arr->child; v; v = v->next, i++) {
        char f[192];
        snprintf(f, sizeof f, "%s[%d]", field, i);
        int idx = 0;
        int rc = lookup(w, f, kind, v, names, n, &idx);
        if (rc != 0)
            return rc;
        *bits |= 1u << idx;
    }
    return 0;
}

static int only_keys(const where *w, const cJSON *obj, const char *const *known, size_t n,
                     const char *prefix)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        size_t k = 0;
        while (k < n && strcmp(c->string, known[k]) != 0)
            k++;
        if (k == n) {
            char near[256];
            size_t m = argus_nearest_names(c->string, known, n, 2, near, sizeof near);
            char field[192];
            snprintf(field, sizeof field, "%s%.128s", prefix, c->string);
            return bad(w, field, "unknown key%s%s%s", m ? "; did you mean " : "", m ? near : "",
                       m ? "?" : "");
        }
    }
    return 0;
}

static int get_bool(const where *w, const cJSON *obj, const char *key, const char *prefix, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = 0;
    if (v == NULL)
        return 0;
    if (!cJSON_IsBool(v)) {
        char field[160];
        snprintf(field, sizeof field, "%s%s", prefix, key);
        return bad(w, field, "expected true or false");
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

static int copy_name(const where *w, const cJSON *v, const char *field, char *dst, size_t cap)
{
    if (!cJSON_IsString(v) || v->valuestring[0] == '\0')
        return bad(w, field, "expected a non-empty string");
    if (strlen(v->valuestring) >= cap)
        return bad(w, field, "longer than %zu bytes", cap - 1);
    strcpy(dst, v->valuestring);
    return 0;
}

static int parse_collect(const where *w, const cJSON *c, int idx, argus_recipe_collect *out)
{
    static const char *const keys[] = {"name",     "backend",  "transforms", "observes",
                                       "effects",  "retains",  "per_probe",  "optional",
                                       "min_sm",   "timeout_s"};
    char prefix[48];
    snprintf(prefix, sizeof prefix, "collect[%d].", idx);
    char field[96];
    memset(out, 0, sizeof(*out));
    if (!cJSON_IsObject(c)) {
        snprintf(field, sizeof field, "collect[%d]", idx);
        return bad(w, field, "expected an object");
    }
    int rc = only_keys(w, c, keys, COUNT(keys), prefix);
    if (rc != 0)
        return rc;
    snprintf(field, sizeof field, "%sname", prefix);
    if ((rc = copy_name(w, cJSON_GetObjectItemCaseSensitive(c, "name"), field, out->name,
                        sizeof out->name)) != 0)
        return rc;
    snprintf(field, sizeof field, "%sbackend", prefix);
    if ((rc = lookup(w, field, "backend", cJSON_GetObjectItemCaseSensitive(c, "backend"), be_names,
                     COUNT(be_names), &out->backend)) != 0)
        return rc;
    const cJSON *tx = cJSON_GetObjectItemCaseSensitive(c, "transforms");
    if (tx != NULL) {
        snprintf(field, sizeof field, "%stransforms", prefix);
        if (!cJSON_IsArray(tx))
            return bad(w, field, "expected an array of transformation names");
        int i = 0;
        for (const cJSON *t = tx->child; t; t = t->next, i++) {
            if (out->ntransforms >= ARGUS_RECIPE_MAX_TX)
                return bad(w, field, "more than %u transformations", ARGUS_RECIPE_MAX_TX);
            char f[128];
            snprintf(f, sizeof f, "%s[%d]", field, i);
            int v = 0;
            if ((rc = lookup(w, f, "transformation", t, tx_names, COUNT(tx_names), &v)) != 0)
                return rc;
            for (size_t j = 0; j < out->ntransforms; j++)
                if (out->transforms[j] == v)
                    return bad(w, f, "\"%s\" is listed twice", tx_names[v]);
            out->transforms[out->ntransforms++] = v;
        }
    }
    if ((rc = name_bits(w, c, "observes", "observation", obs_names, COUNT(obs_names),
                        &out->observes, prefix)) != 0 ||
        (rc = name_bits(w, c, "effects", "effect", fx_names, COUNT(fx_names), &out->effects,
                        prefix)) != 0 ||
        (rc = name_bits(w, c, "retains", "scope coordinate", co_names, COUNT(co_names),
                        &out->retains, prefix)) != 0)
        return rc;
    if (out->observes == 0) {
        snprintf(field, sizeof field, "%sobserves", prefix);
        return bad(w, field,
                   "a collection must say what it observes (timing, overlap, counts, samples, "
                   "map): the partition rules decide by it");
    }
    if ((rc = get_bool(w, c, "per_probe", prefix, &out->per_probe)) != 0 ||
        (rc = get_bool(w, c, "optional", prefix, &out->optional)) != 0)
        return rc;
    int has_probe = 0;
    for (size_t j = 0; j < out->ntransforms; j++)
        has_probe |= out->transforms[j] == ARGUS_TX_PROBE;
    if (has_probe != out->per_probe) {
        snprintf(field, sizeof field, "%sper_probe", prefix);
        return bad(w, field,
                   "a per-probe collection runs on a force_completion_probe variant and only "
                   "such one is per-probe: set both or neither");
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, "min_sm");
    if (v != NULL) {
        snprintf(field, sizeof field, "%smin_sm", prefix);
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1000 ||
            v->valuedouble != (double)(unsigned)v->valuedouble)
            return bad(w, field, "expected an architecture number such as 70 (sm_70)");
        out->min_sm = (unsigned)v->valuedouble;
    }
    out->timeout_s = 300;
    v = cJSON_GetObjectItemCaseSensitive(c, "timeout_s");
    if (v != NULL) {
        snprintf(field, sizeof field, "%stimeout_s", prefix);
        if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble <= 86400))
            return bad(w, field, "expected seconds, more than 0 and at most 86400");
        out->timeout_s = v->valuedouble;
    }
    return 0;
}

static int parse_recipe(const where *w0, const cJSON *o, int idx, argus_recipe *r)
{
    static const char *const keys[] = {"signal", "description", "prerequisites", "collect",
                                       "synthesis"};
    where w = *w0;
    char field[64];
    memset(r, 0, sizeof(*r));
    snprintf(field, sizeof field, "recipes[%d]", idx);
    if (!cJSON_IsObject(o))
        return bad(&w, field, "expected an object");
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(o, "signal");
    if (!cJSON_IsString(sig) || sig->valuestring[0] == '\0' ||
        strlen(sig->valuestring) >= sizeof r->signal_name) {
        snprintf(field, sizeof field, "recipes[%d].signal", idx);
        return bad(&w, field, "expected the signal's name (e.g. \"region_time\")");
    }
    strcpy(r->signal_name, sig->valuestring);
    w.recipe = r->signal_name;
    int rc = only_keys(&w, o, keys, COUNT(keys), "");
    if (rc != 0)
        return rc;
    char why[1024];
    if (argus_signal_from_name(r->signal_name, &r->signal, why, sizeof why) != 0)
        return bad(&w, "signal", "%s", why);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "description");
    if (d != NULL && (rc = copy_name(&w, d, "description", r->description,
                                     sizeof r->description)) != 0)
        return rc;
    if ((rc = name_bits(&w, o, "prerequisites", "analysis", an_names, COUNT(an_names),
                        &r->prerequisites, "")) != 0)
        return rc;
    int rule = 0;
    if ((rc = lookup(&w, "synthesis", "synthesis rule",
                     cJSON_GetObjectItemCaseSensitive(o, "synthesis"), rule_names,
                     COUNT(rule_names), &rule)) != 0)
        return rc;
    strcpy(r->synthesis, rule_names[rule]);
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(o, "collect");
    if (!cJSON_IsArray(cs) || cJSON_GetArraySize(cs) == 0)
        return bad(&w, "collect", "expected a non-empty array of collections");
    int i = 0, probes = 0;
    for (const cJSON *c = cs->child; c; c = c->next, i++) {
        if (r->ncollect >= ARGUS_RECIPE_MAX_COLLECT)
            return bad(&w, "collect", "more than %u collections", ARGUS_RECIPE_MAX_COLLECT);
        argus_recipe_collect *rc_ = &r->collect[r->ncollect];
        if ((rc = parse_collect(&w, c, i, rc_)) != 0)
            return rc;
        for (size_t j = 0; j < r->ncollect; j++)
            if (strcmp(r->collect[j].name, rc_->name) == 0) {
                snprintf(field, sizeof field, "collect[%d].name", i);
                return bad(&w, field, "\"%s\" is also collect[%zu]'s name", rc_->name, j);
            }
        probes += rc_->per_probe;
        r->ncollect++;
    }
    int discovers = (r->prerequisites >> ARGUS_AN_DISCOVER_ASYNC) & 1;
    if ((probes > 0) != discovers)
        return bad(&w, "prerequisites",
                   "per-probe collections need the discover_async_ops prerequisite (its "
                   "CONTROL task makes the probes), and that prerequisite needs one");
    for (size_t j = 0; j < r->ncollect; j++)
        if (!r->collect[j].per_probe)
            return 0;
    return bad(&w, "collect", "a recipe needs at least one collection that is not per-probe");
}

void argus_recipes_free(argus_recipes *rs)
{
    if (rs == NULL)
        return;
    free(rs->r);
    rs->r = NULL;
    rs->n = 0;
}

int argus_recipes_parse(argus_recipes *out, const char *text, size_t len, const char *path,
                        char *msg, size_t msglen)
{
    if (out == NULL || text == NULL)
        return ARGUS_EINVAL;
    if (path == NULL)
        path = "<recipes>";
    where w = {path, NULL, msg, msglen};
    cJSON *root = NULL;
    int rc = mosaic__json_parse_strict(path, text, len, &root, msg, msglen);
    if (rc != 0)
        return rc == MOSAIC_ENOMEM ? ARGUS_ENOMEM : ARGUS_EFORMAT;
    static const char *const keys[] = {"schema", "version", "recipes"};
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "recipes");
    if (!cJSON_IsObject(root))
        rc = bad(&w, "(document)", "expected an object");
    else if ((rc = only_keys(&w, root, keys, COUNT(keys), "")) != 0)
        ;
    else if (!cJSON_IsString(schema) || strcmp(schema->valuestring, ARGUS_RECIPES_SCHEMA) != 0)
        rc = bad(&w, "schema", "expected \"" ARGUS_RECIPES_SCHEMA "\"");
    else if (!cJSON_IsNumber(version) || version->valuedouble != ARGUS_RECIPES_VERSION)
        rc = bad(&w, "version", "this argus reads recipes version %d only", ARGUS_RECIPES_VERSION);
    else if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
        rc = bad(&w, "recipes", "expected a non-empty array of recipes");
    int i = 0;
    for (const cJSON *o = rc == 0 ? list->child : NULL; o && rc == 0; o = o->next, i++) {
        if (out->n >= RECIPE_MAX_COUNT) {
            rc = bad(&w, "recipes", "more than %u recipes", RECIPE_MAX_COUNT);
            break;
        }
        argus_recipe r;
        if ((rc = parse_recipe(&w, o, i, &r)) != 0)
            break;
        int w1 = snprintf(r.file, sizeof r.file, "%s", path);
        if (w1 < 0 || (size_t)w1 >= sizeof r.file)
            r.file[sizeof r.file - 1] = '\0';
        const argus_recipe *old = argus_recipes_find(out, r.signal);
        if (old != NULL) {
            where wr = {path, r.signal_name, msg, msglen};
            rc = bad(&wr, "signal", "a second recipe for this signal (the first is in %s); keep one",
                     old->file);
            break;
        }
        argus_recipe *nr = realloc(out->r, (out->n + 1) * sizeof(*nr));
        if (nr == NULL) {
            rc = ARGUS_ENOMEM;
            break;
        }
        out->r = nr;
        out->r[out->n++] = r;
    }
    cJSON_Delete(root);
    return rc;
}

static int load_file(argus_recipes *out, const char *path, char *msg, size_t msglen)
{
    char *text = NULL;
    int rc = mosaic__read_file(path, RECIPE_MAX_BYTES, &text, msg, msglen);
    if (rc != 0)
        return rc == MOSAIC_ENOMEM ? ARGUS_ENOMEM : rc == MOSAIC_EIO ? ARGUS_EIO : ARGUS_EFORMAT;
    rc = argus_recipes_parse(out, text, strlen(text), path, msg, msglen);
    free(text);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int argus_recipes_load(const char *path, argus_recipes *out, char *msg, size_t msglen)
{
    if (path == NULL || out == NULL)
        return ARGUS_EINVAL;
    out->r = NULL;
    out->n = 0;
    struct stat st;
    if (stat(path, &st) != 0)
        return argus__fail(ARGUS_EIO, msg, msglen,
                           "%s: %s; give the recipes folder or file with --recipes (or "
                           "ARGUS_RECIPES)",
                           path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        int rc = load_file(out, path, msg, msglen);
        if (rc != 0)
            argus_recipes_free(out);
        return rc;
    }
    DIR *d = opendir(path);
    if (d == NULL)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: %s", path, strerror(errno));
    char *names[RECIPE_MAX_FILES];
    size_t n = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json") != 0)
            continue;
        if (n >= RECIPE_MAX_FILES) {
            rc = argus__fail(ARGUS_ELIMIT, msg, msglen, "%s: more than %u recipe files", path,
                             RECIPE_MAX_FILES);
            break;
        }
        if ((names[n] = strdup(e->d_name)) == NULL) {
            rc = ARGUS_ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    /* Name order, so that "the first recipe" in a duplicate message is the
     * same on every file system. */
    qsort(names, n, sizeof(names[0]), cmp_str);
    if (rc == 0 && n == 0)
        rc = argus__fail(ARGUS_EFORMAT, msg, msglen, "%s: no *.json recipe files in the folder",
                         path);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char full[4096];
        int w = snprintf(full, sizeof full, "%s/%s", path, names[i]);
        if (w < 0 || (size_t)w >= sizeof full)
            rc = argus__fail(ARGUS_EINVAL, msg, msglen, "%s/%s: the path is too long", path,
                             names[i]);
        else
            rc = load_file(out, full, msg, msglen);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    if (rc != 0)
        argus_recipes_free(out);
    return rc;
}

const argus_recipe *argus_recipes_find(const argus_recipes *rs, int signal)
{
    for (size_t i = 0; rs != NULL && i < rs->n; i++)
        if (rs->r[i].signal == signal)
            return &rs->r[i];
    return NULL;
}

const char *argus_recipes_default_path(void)
{
    const char *env = getenv("ARGUS_RECIPES");
    if (env != NULL && env[0] != '\0')
        return env;
#ifdef ARGUS_RECIPES_DIR
    return ARGUS_RECIPES_DIR;
#else
    return "profiler/argus/recipes";
#endif
}
