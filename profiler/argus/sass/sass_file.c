/*
 * argus.sassmetrics v1 (include/argus/sass.h): the collection in memory,
 * its file (written atomically, read strictly) and its hand-over to
 * attribution. Shared by libargus_sass.so (the injection library, which
 * writes one file per process) and argus-sass (which reads them back,
 * merges them and writes --out).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "argus/sass.h"
#include "argus/shim.h"
#include "argus_internal.h"
#include "core/json.h"

#define MAX_COUNT (UINT64_C(1) << 53)

static int dup_metric(argus_sass *s, const char *name, size_t len, char *msg, size_t msglen)
{
    if (len == 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "argus-sass: an empty metric name in the list: give names separated "
                           "by single commas (%s)",
                           ARGUS_SASS_DEFAULT_METRICS);
    if (s->n_metrics == ARGUS_SASS_MAX_METRICS)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "argus-sass: more than %d metrics asked for: collect them in two runs",
                           ARGUS_SASS_MAX_METRICS);
    for (size_t i = 0; i < s->n_metrics; i++)
        if (strlen(s->metrics[i]) == len && memcmp(s->metrics[i], name, len) == 0)
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "argus-sass: the metric %.*s is asked for twice: name it once",
                               (int)len, name);
    char *c = strndup(name, len);
    if (c == NULL)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-sass: out of memory");
    s->metrics[s->n_metrics++] = c;
    return 0;
}

int argus_sass_new(argus_sass **out, const char *metrics, char *msg, size_t msglen)
{
    *out = NULL;
    argus_sass *s = calloc(1, sizeof *s);
    if (s == NULL)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-sass: out of memory");
    s->complete = 1;
    const char *m = metrics != NULL ? metrics : ARGUS_SASS_DEFAULT_METRICS;
    for (const char *p = m;;) {
        size_t k = strcspn(p, ",");
        int rc = dup_metric(s, p, k, msg, msglen);
        if (rc != 0) {
            argus_sass_free(s);
            return rc;
        }
        if (p[k] == '\0')
            break;
        p += k + 1;
    }
    *out = s;
    return 0;
}

void argus_sass_free(argus_sass *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_metrics; i++)
        free(s->metrics[i]);
    for (size_t i = 0; i < s->n_kernels; i++) {
        free(s->kernels[i].function);
        free(s->kernels[i].pcs);
    }
    for (size_t i = 0; i < s->n_launches; i++)
        free(s->launches[i].function);
    for (size_t i = 0; i < s->n_problems; i++)
        free(s->problems[i]);
    free(s->kernels);
    free(s->launches);
    free(s->problems);
    free(s);
}

int argus_sass_kernel_of(argus_sass *s, const char *function, uint32_t crc, const char *sha256,
                         size_t *idx)
{
    for (size_t i = 0; i < s->n_kernels; i++) {
        argus_sass_kernel *k = &s->kernels[i];
        if (k->crc == crc && strcmp(k->function, function) == 0) {
            if (!k->sha256[0] && sha256 != NULL && sha256[0])
                snprintf(k->sha256, sizeof k->sha256, "%s", sha256);
            *idx = i;
            return 0;
        }
    }
    if (argus__grow((void **)&s->kernels, &s->cap_kernels, s->n_kernels + 1,
                    sizeof *s->kernels) != 0)
        return ARGUS_ENOMEM;
    argus_sass_kernel *k = &s->kernels[s->n_kernels];
    memset(k, 0, sizeof *k);
    k->function = strdup(function);
    if (k->function == NULL)
        return ARGUS_ENOMEM;
    k->crc = crc;
    if (sha256 != NULL)
        snprintf(k->sha256, sizeof k->sha256, "%s", sha256);
    *idx = s->n_kernels++;
    return 0;
}

int argus_sass_add(argus_sass *s, size_t kernel, uint64_t offset, size_t m, uint64_t value,
                   char *msg, size_t msglen)
{
    argus_sass_kernel *k = &s->kernels[kernel];
    argus_sass_pc *p = NULL;
    /* Launches of one kernel repeat its PCs in the same order: look from
     * the end first. */
    for (size_t i = k->n_pcs; i-- > 0;)
        if (k->pcs[i].offset == offset) {
            p = &k->pcs[i];
            break;
        }
    if (p == NULL) {
        if (argus__grow((void **)&k->pcs, &k->cap_pcs, k->n_pcs + 1, sizeof *k->pcs) != 0)
            return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-sass: out of memory");
        p = &k->pcs[k->n_pcs++];
        memset(p, 0, sizeof *p);
        p->offset = offset;
    }
    if (value > MAX_COUNT || p->values[m] > MAX_COUNT - value)
        return argus__fail(ARGUS_ELIMIT, msg, msglen,
                           "argus-sass: %s at %s+0x%" PRIx64 " passes 2^53 (not exact in JSON): "
                           "collect fewer launches",
                           s->metrics[m], k->function, offset);
    p->values[m] += value;
    return 0;
}

int argus_sass_add_launch(argus_sass *s, const argus_sass_launch *l)
{
    if (argus__grow((void **)&s->launches, &s->cap_launches, s->n_launches + 1,
                    sizeof *s->launches) != 0)
        return ARGUS_ENOMEM;
    argus_sass_launch *d = &s->launches[s->n_launches];
    *d = *l;
    d->function = strdup(l->function ? l->function : "");
    if (d->function == NULL)
        return ARGUS_ENOMEM;
    s->n_launches++;
    return 0;
}

int argus_sass_problem(argus_sass *s, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    s->complete = 0;
    for (size_t i = 0; i < s->n_problems; i++)
        if (strcmp(s->problems[i], buf) == 0)
            return 0;
    if (argus__grow((void **)&s->problems, &s->cap_problems, s->n_problems + 1,
                    sizeof *s->problems) != 0)
        return ARGUS_ENOMEM;
    s->problems[s->n_problems] = strdup(buf);
    if (s->problems[s->n_problems] == NULL)
        return ARGUS_ENOMEM;
    s->n_problems++;
    return 0;
}

int argus_sass_merge(argus_sass *dst, const argus_sass *src, char *msg, size_t msglen)
{
    int same = dst->n_metrics == src->n_metrics;
    for (size_t i = 0; same && i < dst->n_metrics; i++)
        same = strcmp(dst->metrics[i], src->metrics[i]) == 0;
    if (!same)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "argus-sass: two collections of different metrics are not merged "
                           "(%s... and %s...)",
                           dst->n_metrics ? dst->metrics[0] : "none",
                           src->n_metrics ? src->metrics[0] : "none");
    for (size_t i = 0; i < src->n_kernels; i++) {
        const argus_sass_kernel *k = &src->kernels[i];
        size_t d;
        if (argus_sass_kernel_of(dst, k->function, k->crc, k->sha256, &d) != 0)
            return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-sass: out of memory");
        dst->kernels[d].launches += k->launches;
        for (size_t p = 0; p < k->n_pcs; p++)
            for (size_t m = 0; m < src->n_metrics; m++) {
                int rc = argus_sass_add(dst, d, k->pcs[p].offset, m, k->pcs[p].values[m], msg,
                                        msglen);
                if (rc != 0)
                    return rc;
            }
    }
    for (size_t i = 0; i < src->n_launches; i++)
        if (argus_sass_add_launch(dst, &src->launches[i]) != 0)
            return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-sass: out of memory");
    for (size_t i = 0; i < src->n_problems; i++)
        argus_sass_problem(dst, "%s", src->problems[i]);
    if (!src->complete)
        dst->complete = 0;
    return 0;
}

/* ---- writing --------------------------------------------------------------- */

static int cmp_pc(const void *x, const void *y)
{
    uint64_t a = ((const argus_sass_pc *)x)->offset, b = ((const argus_sass_pc *)y)->offset;
    return a < b ? -1 : a > b;
}

static int cmp_kernel(const void *x, const void *y)
{
    const argus_sass_kernel *a = x, *b = y;
    int c = strcmp(a->function, b->function);
    return c ? c : a->crc < b->crc ? -1 : a->crc > b->crc;
}

int argus_sass_check_out(const char *path, char *msg, size_t msglen)
{
    if (path == NULL || path[0] == '\0')
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "argus-sass: no output path: give --out FILE");
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return argus__fail(ARGUS_EIO, msg, msglen,
                           "argus-sass: --out %s: the folder %s does not exist: create it first "
                           "or give a path in an existing folder",
                           path, dir);
    /* A symbolic link is replaced by the rename, never written through. */
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
        return argus__fail(ARGUS_EIO, msg, msglen,
                           "argus-sass: --out %s is %s, not a regular file: the output is "
                           "written to a temporary file and renamed over it; give the path of a "
                           "file (or of none yet)",
                           path,
                           S_ISFIFO(st.st_mode)  ? "a FIFO"
                           : S_ISDIR(st.st_mode) ? "a folder"
                                                 : "a special file");
    return 0;
}

static void add_crc(cJSON *o, uint32_t crc)
{
    char b[16];
    snprintf(b, sizeof b, "0x%08" PRIx32, crc);
    cJSON_AddStringToObject(o, "cubin_crc", b);
}

static cJSON *dims(const uint32_t d[3])
{
    double v[3] = {d[0], d[1], d[2]};
    return cJSON_CreateDoubleArray(v, 3);
}

int argus_sass_write(argus_sass *s, const char *path, char *msg, size_t msglen)
{
    int rc = argus_sass_check_out(path, msg, msglen);
    if (rc != 0)
        return rc;
    if (s->n_kernels > 0)
        qsort(s->kernels, s->n_kernels, sizeof *s->kernels, cmp_kernel);
    for (size_t i = 0; i < s->n_kernels; i++)
        if (s->kernels[i].n_pcs > 0)
            qsort(s->kernels[i].pcs, s->kernels[i].n_pcs, sizeof(argus_sass_pc), cmp_pc);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", ARGUS_SASS_SCHEMA);
    cJSON_AddNumberToObject(root, "version", ARGUS_SASS_VERSION);
    cJSON_AddStringToObject(root, "backend", "sass_metrics");
    cJSON_AddBoolToObject(root, "complete", s->complete && s->n_problems == 0);
    cJSON *pr = cJSON_AddArrayToObject(root, "problems");
    for (size_t i = 0; i < s->n_problems; i++)
        cJSON_AddItemToArray(pr, cJSON_CreateString(s->problems[i]));
    cJSON_AddStringToObject(root, "granularity", "gpu");
    cJSON_AddStringToObject(root, "count",
                            "per PC, summed over the GPU and over the kernel's launches");
    cJSON *ms = cJSON_AddArrayToObject(root, "metrics");
    for (size_t m = 0; m < s->n_metrics; m++)
        cJSON_AddItemToArray(ms, cJSON_CreateString(s->metrics[m]));
    cJSON *ls = cJSON_AddArrayToObject(root, "launches");
    for (size_t i = 0; i < s->n_launches; i++) {
        const argus_sass_launch *l = &s->launches[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "function", l->function);
        add_crc(o, l->crc);
        cJSON_AddItemToObject(o, "grid", dims(l->grid));
        cJSON_AddItemToObject(o, "block", dims(l->block));
        cJSON *t = cJSON_AddObjectToObject(o, "totals");
        for (size_t m = 0; m < s->n_metrics; m++)
            cJSON_AddNumberToObject(t, s->metrics[m], (double)l->totals[m]);
        cJSON_AddItemToArray(ls, o);
    }
    cJSON *ks = cJSON_AddArrayToObject(root, "kernels");
    for (size_t i = 0; i < s->n_kernels; i++) {
        const argus_sass_kernel *k = &s->kernels[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "function", k->function);
        add_crc(o, k->crc);
        if (k->sha256[0])
            cJSON_AddStringToObject(o, "sha256", k->sha256);
        else
            cJSON_AddNullToObject(o, "sha256");
        cJSON_AddNumberToObject(o, "launches", (double)k->launches);
        cJSON *ps = cJSON_AddArrayToObject(o, "pcs");
        for (size_t p = 0; p < k->n_pcs; p++) {
            cJSON *x = cJSON_CreateObject();
            char off[24];
            snprintf(off, sizeof off, "0x%" PRIx64, k->pcs[p].offset);
            cJSON_AddStringToObject(x, "offset", off);
            for (size_t m = 0; m < s->n_metrics; m++)
                cJSON_AddNumberToObject(x, s->metrics[m], (double)k->pcs[p].values[m]);
            cJSON_AddItemToArray(ps, x);
        }
        cJSON_AddItemToArray(ks, o);
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (text == NULL)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-sass: out of memory");
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int e = 0;
    /* O_EXCL: a file planted at the temporary name is not written through. */
    FILE *f = NULL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
        e = errno;
        if (fd >= 0)
            close(fd);
    } else {
        if (fputs(text, f) < 0 || fputc('\n', f) == EOF)
            e = errno ? errno : EIO;
        if (fclose(f) != 0 && e == 0)
            e = errno;
        if (e == 0 && rename(tmp, path) != 0)
            e = errno;
        if (e != 0)
            unlink(tmp);
    }
    cJSON_free(text);
    if (e != 0)
        return argus__fail(ARGUS_EIO, msg, msglen,
                           "argus-sass: cannot write %s: %s; check that its folder is writable",
                           path, strerror(e));
    return 0;
}

/* ---- reading --------------------------------------------------------------- */

static int only_keys(const cJSON *o, const char *const *keys, const char *where,
                     const char *path, char *msg, size_t msglen)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, o)
    {
        int ok = 0;
        for (size_t i = 0; keys[i] != NULL && !ok; i++)
            ok = strcmp(c->string, keys[i]) == 0;
        if (!ok)
            return argus__fail(ARGUS_EFORMAT, msg, msglen,
                               "%s: %s: unknown key \"%s\" (argus.sassmetrics v1 has no such "
                               "field)",
                               path, where, c->string);
    }
    return 0;
}

static int get_count(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > (double)MAX_COUNT ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return -1;
    *out = (uint64_t)v->valuedouble;
    return 0;
}

static int get_crc(const cJSON *v, uint32_t *out)
{
    if (!cJSON_IsString(v) || strncmp(v->valuestring, "0x", 2) != 0)
        return -1;
    char *end;
    errno = 0;
    unsigned long long c = strtoull(v->valuestring, &end, 16);
    if (errno || *end || end == v->valuestring + 2 || c > UINT32_MAX)
        return -1;
    *out = (uint32_t)c;
    return 0;
}

static int get_dims(const cJSON *v, uint32_t d[3])
{
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3)
        return -1;
    for (int i = 0; i < 3; i++) {
        uint64_t x;
        if (get_count(cJSON_GetArrayItem(v, i), &x) != 0 || x > UINT32_MAX)
            return -1;
        d[i] = (uint32_t)x;
    }
    return 0;
}

static int is_hex64(const char *s)
{
    if (strlen(s) != 64)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

#define BAD(...) (rc = argus__fail(ARGUS_EFORMAT, msg, msglen, __VA_ARGS__))

static int load_doc(const cJSON *d, const char *path, argus_sass **out, char *msg, size_t msglen)
{
    static const char *const top[] = {"schema", "version", "backend", "complete", "problems",
                                      "granularity", "count", "metrics", "launches", "kernels",
                                      NULL};
    static const char *const lkeys[] = {"function", "cubin_crc", "grid", "block", "totals", NULL};
    static const char *const kkeys[] = {"function", "cubin_crc", "sha256", "launches", "pcs",
                                        NULL};
    int rc = only_keys(d, top, "the top level", path, msg, msglen);
    if (rc != 0)
        return rc;
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(d, "schema");
    const cJSON *ve = cJSON_GetObjectItemCaseSensitive(d, "version");
    if (!cJSON_IsString(sc) || strcmp(sc->valuestring, ARGUS_SASS_SCHEMA) != 0)
        return BAD("%s: schema: not \"%s\" (%s)", path, ARGUS_SASS_SCHEMA,
                   cJSON_IsString(sc) ? sc->valuestring : "missing");
    if (!cJSON_IsNumber(ve) || ve->valuedouble != ARGUS_SASS_VERSION)
        return BAD("%s: version: not %d: this reader knows version %d only", path,
                   ARGUS_SASS_VERSION, ARGUS_SASS_VERSION);
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(d, "backend");
    const cJSON *gr = cJSON_GetObjectItemCaseSensitive(d, "granularity");
    const cJSON *co = cJSON_GetObjectItemCaseSensitive(d, "count");
    if (!cJSON_IsString(be) || strcmp(be->valuestring, "sass_metrics") != 0)
        return BAD("%s: backend: not \"sass_metrics\"", path);
    if (!cJSON_IsString(gr) || strcmp(gr->valuestring, "gpu") != 0)
        return BAD("%s: granularity: not \"gpu\" (the only one argus-sass collects)", path);
    if (!cJSON_IsString(co))
        return BAD("%s: count: not a string", path);
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(d, "metrics");
    if (!cJSON_IsArray(ms) || cJSON_GetArraySize(ms) < 1 ||
        cJSON_GetArraySize(ms) > ARGUS_SASS_MAX_METRICS)
        return BAD("%s: metrics: not a list of 1 to %d names", path, ARGUS_SASS_MAX_METRICS);
    char list[ARGUS_SASS_MAX_METRICS * 128] = "";
    const cJSON *m;
    size_t nl = 0;
    cJSON_ArrayForEach(m, ms)
    {
        if (!cJSON_IsString(m) || m->valuestring[0] == '\0' || strchr(m->valuestring, ',') ||
            strlen(m->valuestring) > 120 || strcmp(m->valuestring, "offset") == 0)
            return BAD("%s: metrics: a name that is not a metric name", path);
        nl += (size_t)snprintf(list + nl, sizeof list - nl, "%s%s", nl ? "," : "",
                               m->valuestring);
    }
    argus_sass *s;
    rc = argus_sass_new(&s, list, msg, msglen);
    if (rc != 0)
        return BAD("%s: metrics: %s", path, msg);
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(d, "complete");
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(d, "problems");
    if (!cJSON_IsBool(cp) || !cJSON_IsArray(pr)) {
        BAD("%s: complete or problems: missing or of the wrong type", path);
        goto fail;
    }
    const cJSON *x;
    cJSON_ArrayForEach(x, pr)
    {
        if (!cJSON_IsString(x)) {
            BAD("%s: problems: not a list of sentences", path);
            goto fail;
        }
        argus_sass_problem(s, "%s", x->valuestring);
    }
    if (cJSON_IsTrue(cp) && s->n_problems > 0) {
        BAD("%s: complete is true but problems are listed", path);
        goto fail;
    }
    s->complete = cJSON_IsTrue(cp);
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(d, "launches");
    if (!cJSON_IsArray(ls)) {
        BAD("%s: launches: not a list", path);
        goto fail;
    }
    int li = 0;
    cJSON_ArrayForEach(x, ls)
    {
        char where[64];
        snprintf(where, sizeof where, "launches[%d]", li);
        if ((rc = only_keys(x, lkeys, where, path, msg, msglen)) != 0)
            goto fail;
        argus_sass_launch l;
        memset(&l, 0, sizeof l);
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(x, "function");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(x, "totals");
        if (!cJSON_IsString(fn) || get_crc(cJSON_GetObjectItemCaseSensitive(x, "cubin_crc"),
                                           &l.crc) != 0 ||
            get_dims(cJSON_GetObjectItemCaseSensitive(x, "grid"), l.grid) != 0 ||
            get_dims(cJSON_GetObjectItemCaseSensitive(x, "block"), l.block) != 0 ||
            !cJSON_IsObject(t) || cJSON_GetArraySize(t) != (int)s->n_metrics) {
            BAD("%s: %s: function, cubin_crc (\"0x\" and 8 hex), grid, block or totals (one "
                "count per metric) missing or wrong",
                path, where);
            goto fail;
        }
        for (size_t k = 0; k < s->n_metrics; k++)
            if (get_count(cJSON_GetObjectItemCaseSensitive(t, s->metrics[k]), &l.totals[k]) !=
                0) {
                BAD("%s: %s.totals.%s: not a count in 0..2^53", path, where, s->metrics[k]);
                goto fail;
            }
        l.function = fn->valuestring;
        if (argus_sass_add_launch(s, &l) != 0) {
            rc = argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-sass: out of memory");
            goto fail;
        }
        li++;
    }
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(d, "kernels");
    if (!cJSON_IsArray(ks)) {
        BAD("%s: kernels: not a list", path);
        goto fail;
    }
    int ki = 0;
    cJSON_ArrayForEach(x, ks)
    {
        char where[64];
        snprintf(where, sizeof where, "kernels[%d]", ki);
        if ((rc = only_keys(x, kkeys, where, path, msg, msglen)) != 0)
            goto fail;
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(x, "function");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(x, "sha256");
        const cJSON *ps = cJSON_GetObjectItemCaseSensitive(x, "pcs");
        uint32_t crc;
        uint64_t nl2;
        if (!cJSON_IsString(fn) || fn->valuestring[0] == '\0' ||
            get_crc(cJSON_GetObjectItemCaseSensitive(x, "cubin_crc"), &crc) != 0 ||
            !(cJSON_IsNull(sh) || (cJSON_IsString(sh) && is_hex64(sh->valuestring))) ||
            get_count(cJSON_GetObjectItemCaseSensitive(x, "launches"), &nl2) != 0 || nl2 == 0 ||
            !cJSON_IsArray(ps)) {
            BAD("%s: %s: function, cubin_crc (\"0x\" and 8 hex), sha256 (64 lower-case hex or "
                "null), launches (>= 1) or pcs missing or wrong",
                path, where);
            goto fail;
        }
        size_t before = s->n_kernels, kix;
        if (argus_sass_kernel_of(s, fn->valuestring, crc,
                                 cJSON_IsString(sh) ? sh->valuestring : NULL, &kix) != 0) {
            rc = argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-sass: out of memory");
            goto fail;
        }
        if (s->n_kernels == before) {
            BAD("%s: %s: the kernel %s of cubin 0x%08" PRIx32 " is listed twice", path, where,
                fn->valuestring, crc);
            goto fail;
        }
        s->kernels[kix].launches = nl2;
        int pi = 0;
        const cJSON *p;
        cJSON_ArrayForEach(p, ps)
        {
            const cJSON *off = cJSON_GetObjectItemCaseSensitive(p, "offset");
            char *end = NULL;
            uint64_t o = 0;
            if (cJSON_IsString(off) && strncmp(off->valuestring, "0x", 2) == 0) {
                errno = 0;
                o = strtoull(off->valuestring, &end, 16);
            }
            if (end == NULL || *end || errno || end == off->valuestring + 2 ||
                cJSON_GetArraySize(p) != (int)s->n_metrics + 1) {
                BAD("%s: %s.pcs[%d]: offset (\"0x...\") and one count per metric, nothing "
                    "else, expected",
                    path, where, pi);
                goto fail;
            }
            argus_sass_kernel *k = &s->kernels[kix];
            for (size_t q = 0; q < k->n_pcs; q++)
                if (k->pcs[q].offset == o) {
                    BAD("%s: %s.pcs[%d]: offset 0x%" PRIx64 " listed twice", path, where, pi, o);
                    goto fail;
                }
            for (size_t mm = 0; mm < s->n_metrics; mm++) {
                uint64_t v;
                if (get_count(cJSON_GetObjectItemCaseSensitive(p, s->metrics[mm]), &v) != 0) {
                    BAD("%s: %s.pcs[%d].%s: not a count in 0..2^53", path, where, pi,
                        s->metrics[mm]);
                    goto fail;
                }
                if ((rc = argus_sass_add(s, kix, o, mm, v, msg, msglen)) != 0)
                    goto fail;
            }
            pi++;
        }
        ki++;
    }
    *out = s;
    return 0;
fail:
    argus_sass_free(s);
    return rc ? rc : ARGUS_EFORMAT;
}

int argus_sass_load(const char *path, argus_sass **out, char *msg, size_t msglen)
{
    *out = NULL;
    cJSON *d = NULL;
    char err[512];
    if (mosaic__json_read_file(path, 1L << 30, &d, err, sizeof err) != 0)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s", err);
    int rc = cJSON_IsObject(d) ? load_doc(d, path, out, msg, msglen)
                               : argus__fail(ARGUS_EFORMAT, msg, msglen,
                                             "%s: not a JSON object", path);
    cJSON_Delete(d);
    return rc;
}

/* ---- into attribution -------------------------------------------------------- */

int argus_sass_to_attrib(const argus_sass *s, const char *function, argus_attrib *a, char *msg,
                         size_t msglen)
{
    const argus_sass_kernel *k = NULL;
    for (size_t i = 0; i < s->n_kernels; i++) {
        const argus_sass_kernel *c = &s->kernels[i];
        int match = function == NULL || strcmp(c->function, function) == 0 ||
                    strcmp(argus_cubin_func_base_name(c->function), function) == 0;
        if (!match)
            continue;
        if (k != NULL)
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               function ? "the SASS metrics hold %s twice (cubins 0x%08" PRIx32
                                          " and 0x%08" PRIx32 "): keep one build's file"
                                        : "the SASS metrics hold more than one kernel (%s of "
                                          "0x%08" PRIx32 ", ... 0x%08" PRIx32 "): name the one "
                                          "to attribute",
                               k->function, k->crc, c->crc);
        k = c;
    }
    if (k == NULL)
        return argus__fail(ARGUS_ENOREGION, msg, msglen,
                           "no kernel \"%s\" in the SASS metrics (%zu kernels there%s%s)",
                           function ? function : "(any)", s->n_kernels,
                           s->n_kernels ? ", the first " : "",
                           s->n_kernels ? s->kernels[0].function : "");
    if (!k->sha256[0])
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "the SASS metrics of %s do not say which cubin they were measured on "
                           "(sha256 null: argus-sass did not see the module load): they cannot be "
                           "told from another build's and are not joined; collect again from "
                           "the program's start",
                           k->function);
    char prog[96];
    snprintf(prog, sizeof prog, "cubin:sha256:%s", k->sha256);
    int rc = argus_attrib_program(a, prog, "the SASS metrics", msg, msglen);
    for (size_t p = 0; rc == 0 && p < k->n_pcs; p++)
        for (size_t m = 0; rc == 0 && m < s->n_metrics; m++)
            rc = argus_attrib_add_metric(a, k->pcs[p].offset, s->metrics[m],
                                         (double)k->pcs[p].values[m], msg, msglen);
    return rc;
}
