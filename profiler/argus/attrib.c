/*
 * Argus attribution: PC-keyed metrics split over regions by each PC's
 * dynamic execution counts (include/argus/attrib.h has the rules,
 * docs/argus-discover.md the tests' numbers).
 *
 * The evidence is kept as flat arrays and sorted once in
 * argus_attrib_compute: a kernel has at most some hundred thousand PCs and
 * a few dozen regions, so sorting and binary search are enough, and the
 * result does not depend on the order evidence was added in.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/attrib.h"
#include "argus_internal.h"

static const char *const mark_names[] = {
#define ARGUS_X_MARK(name, str) str,
    ARGUS_MARKS(ARGUS_X_MARK)
#undef ARGUS_X_MARK
};

const char *argus_mark_name(int mark)
{
    return mark >= 0 && mark < (int)(sizeof mark_names / sizeof mark_names[0]) ? mark_names[mark]
                                                                               : "unknown";
}

/* Names longer than this are refused: region paths and metric names are
 * short, and a bound keeps a hostile file from costing much. */
#define NAME_MAX_BYTES 1024u

typedef struct exec_ev {
    uint64_t pc;
    size_t region; /* index into regions */
    uint64_t count;
} exec_ev;

typedef struct metric_ev {
    uint64_t pc;
    size_t metric;
    double value;
} metric_ev;

typedef struct ratio_def {
    char *name, *num, *den;
} ratio_def;

struct argus_attrib {
    char program[128];
    int has_program;
    char **regions;
    size_t n_regions, cap_regions;
    char **metrics;
    size_t n_metrics, cap_metrics;
    exec_ev *execs;
    size_t n_execs, cap_execs;
    metric_ev *mevs;
    size_t n_mevs, cap_mevs;
    ratio_def *ratios;
    size_t n_ratios, cap_ratios;
};

int argus_attrib_new(argus_attrib **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : ARGUS_ENOMEM;
}

static void free_names(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void argus_attrib_free(argus_attrib *a)
{
    if (a == NULL)
        return;
    free_names(a->regions, a->n_regions);
    free_names(a->metrics, a->n_metrics);
    for (size_t i = 0; i < a->n_ratios; i++) {
        free(a->ratios[i].name);
        free(a->ratios[i].num);
        free(a->ratios[i].den);
    }
    free(a->ratios);
    free(a->execs);
    free(a->mevs);
    free(a);
}

static int check_name(const char *s, int allow_empty, const char *what, char *msg, size_t msglen)
{
    if (s == NULL || (!allow_empty && s[0] == '\0'))
        return argus__fail(ARGUS_EINVAL, msg, msglen, "attrib: %s is empty", what);
    size_t n = strlen(s);
    if (n > NAME_MAX_BYTES)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "attrib: %s is %zu bytes, over %u", what, n,
                           NAME_MAX_BYTES);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20)
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "attrib: %s holds a control character (byte %zu)", what, i);
    return 0;
}

/* The index of name in *v, added when absent. */
static int intern(char ***v, size_t *n, size_t *cap, const char *name, size_t *idx)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*v)[i], name) == 0) {
            *idx = i;
            return 0;
        }
    }
    if (argus__grow((void **)v, cap, *n + 1, sizeof(char *)) != 0)
        return ARGUS_ENOMEM;
    char *c = strdup(name);
    if (c == NULL)
        return ARGUS_ENOMEM;
    (*v)[*n] = c;
    *idx = (*n)++;
    return 0;
}

int argus_attrib_program(argus_attrib *a, const char *program, const char *where, char *msg,
                         size_t msglen)
{
    int rc = check_name(program, 0, "the program name", msg, msglen);
    if (rc != 0)
        return rc;
    if (strlen(program) >= sizeof a->program)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "attrib: %s: program name longer than %zu bytes", where ? where : "",
                           sizeof a->program - 1);
    if (!a->has_program) {
        memcpy(a->program, program, strlen(program) + 1);
        a->has_program = 1;
        return 0;
    }
    /* Two cubins (argus-pcmap's map and argus-sass's metrics, say) are
     * named for what they are: two builds of the kernel. */
    if (strcmp(a->program, program) != 0 && strncmp(program, "cubin:sha256:", 13) == 0 &&
        strncmp(a->program, "cubin:sha256:", 13) == 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "attrib: %s were measured on different cubins than the evidence so "
                           "far (sha256 %s, not %s): the runs loaded two builds of the kernel "
                           "and are not joined; measure both on one build",
                           where ? where : "evidence", program + 13, a->program + 13);
    if (strcmp(a->program, program) != 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "attrib: %s was measured on program '%s', but the evidence so far is "
                           "from '%s': evidence of two program versions is not joined; measure "
                           "both on the same build",
                           where ? where : "evidence", program, a->program);
    return 0;
}

int argus_attrib_add_exec(argus_attrib *a, uint64_t pc, const char *region, uint64_t count,
                          char *msg, size_t msglen)
{
    int rc = check_name(region, 1, "the region path", msg, msglen);
    if (rc != 0)
        return rc;
    size_t rl = strlen(region);
    if (rl > 0 && (region[0] == '/' || region[rl - 1] == '/' || strstr(region, "//") != NULL))
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "attrib: region path '%s' has an empty component: write it as "
                           "names joined by '/' (\"outer/load\"), or \"\" for code outside "
                           "every region",
                           region);
    if (count > (UINT64_C(1) << 53))
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "attrib: execution count %" PRIu64 " of PC 0x%" PRIx64
                           " is beyond 2^53 (not exact in a double)",
                           count, pc);
    size_t r;
    if (intern(&a->regions, &a->n_regions, &a->cap_regions, region, &r) != 0 ||
        argus__grow((void **)&a->execs, &a->cap_execs, a->n_execs + 1, sizeof(exec_ev)) != 0)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "attrib: out of memory");
    a->execs[a->n_execs++] = (exec_ev){pc, r, count};
    return 0;
}

int argus_attrib_add_metric(argus_attrib *a, uint64_t pc, const char *metric, double value,
                            char *msg, size_t msglen)
{
    int rc = check_name(metric, 0, "the metric name", msg, msglen);
    if (rc != 0)
        return rc;
    if (!isfinite(value) || value < 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "attrib: metric %s at PC 0x%" PRIx64 " is %g: an additive metric is a "
                           "finite count >= 0 (give a ratio as its numerator and denominator)",
                           metric, pc, value);
    size_t m;
    if (intern(&a->metrics, &a->n_metrics, &a->cap_metrics, metric, &m) != 0 ||
        argus__grow((void **)&a->mevs, &a->cap_mevs, a->n_mevs + 1, sizeof(metric_ev)) != 0)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "attrib: out of memory");
    a->mevs[a->n_mevs++] = (metric_ev){pc, m, value};
    return 0;
}

int argus_attrib_add_ratio(argus_attrib *a, const char *name, const char *num, const char *den,
                           char *msg, size_t msglen)
{
    int rc;
    if ((rc = check_name(name, 0, "the ratio name", msg, msglen)) != 0 ||
        (rc = check_name(num, 0, "the ratio's numerator", msg, msglen)) != 0 ||
        (rc = check_name(den, 0, "the ratio's denominator", msg, msglen)) != 0)
        return rc;
    for (size_t i = 0; i < a->n_ratios; i++)
        if (strcmp(a->ratios[i].name, name) == 0)
            return argus__fail(ARGUS_EINVAL, msg, msglen, "attrib: ratio %s is declared twice",
                               name);
    if (argus__grow((void **)&a->ratios, &a->cap_ratios, a->n_ratios + 1, sizeof(ratio_def)) != 0)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "attrib: out of memory");
    ratio_def *d = &a->ratios[a->n_ratios];
    d->name = strdup(name);
    d->num = strdup(num);
    d->den = strdup(den);
    if (!d->name || !d->num || !d->den) {
        free(d->name);
        free(d->num);
        free(d->den);
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "attrib: out of memory");
    }
    a->n_ratios++;
    return 0;
}

/* ---- the evidence file ------------------------------------------------ */

/* Splits a line at tabs in place; returns the number of fields (at most
 * max; more is reported as max + 1). */
static size_t fields(char *line, char **f, size_t max)
{
    size_t n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return max + 1;
        f[n++] = p;
        char *t = strchr(p, '\t');
        if (t == NULL)
            return n;
        *t = '\0';
        p = t + 1;
    }
}

static int parse_u64(const char *s, int base, uint64_t *v)
{
    if (s[0] == '\0' || s[0] == '-' || s[0] == '+' || isspace((unsigned char)s[0]))
        return -1;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(s, &end, base);
    if (errno != 0 || *end != '\0')
        return -1;
    *v = x;
    return 0;
}

int argus_attrib_load(argus_attrib *a, const char *path, char *msg, size_t msglen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return argus__fail(ARGUS_EIO, msg, msglen, "attrib: %s: cannot open: %s", path,
                           strerror(errno));
    char line[4 * NAME_MAX_BYTES];
    unsigned long ln = 0;
    int rc = 0, seen_program = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        ln++;
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n') {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen, "%s:%lu: line longer than %zu bytes", path,
                             ln, sizeof line - 2);
            break;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (ln == 1) {
            if (strcmp(line, "argus.attrib\t1") != 0)
                rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                                 "%s:1: not an argus.attrib v1 file (the first line must be "
                                 "'argus.attrib<TAB>1')",
                                 path);
            continue;
        }
        if (n == 0 || line[0] == '#')
            continue;
        char *fl[6] = {NULL};
        size_t nf = fields(line, fl, 5);
        char sub[512];
        if (strcmp(fl[0], "program") == 0 && nf == 2) {
            char where[600];
            int w = snprintf(where, sizeof where, "%s:%lu", path, ln);
            rc = argus_attrib_program(a, fl[1], w > 0 && (size_t)w < sizeof where ? where : path,
                                      sub, sizeof sub);
            seen_program = rc == 0;
        } else if (!seen_program) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "%s:%lu: %s before the program line: every evidence file names the "
                             "program it was measured on first",
                             path, ln, fl[0]);
            break;
        } else if (strcmp(fl[0], "exec") == 0 && nf == 4) {
            uint64_t pc, count;
            if (parse_u64(fl[1], 16, &pc) != 0) {
                rc = argus__fail(ARGUS_EINVAL, msg, msglen, "%s:%lu: exec: PC '%s' is not hex",
                                 path, ln, fl[1]);
                break;
            }
            if (parse_u64(fl[3], 10, &count) != 0) {
                rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                                 "%s:%lu: exec: count '%s' is not a whole number >= 0", path, ln,
                                 fl[3]);
                break;
            }
            rc = argus_attrib_add_exec(a, pc, strcmp(fl[2], "-") == 0 ? "" : fl[2], count, sub,
                                       sizeof sub);
        } else if (strcmp(fl[0], "metric") == 0 && nf == 4) {
            uint64_t pc;
            char *end;
            if (parse_u64(fl[1], 16, &pc) != 0) {
                rc = argus__fail(ARGUS_EINVAL, msg, msglen, "%s:%lu: metric: PC '%s' is not hex",
                                 path, ln, fl[1]);
                break;
            }
            errno = 0;
            double v = strtod(fl[3], &end);
            if (errno != 0 || end == fl[3] || *end != '\0') {
                rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                                 "%s:%lu: metric: value '%s' is not a number", path, ln, fl[3]);
                break;
            }
            rc = argus_attrib_add_metric(a, pc, fl[2], v, sub, sizeof sub);
        } else if (strcmp(fl[0], "ratio") == 0 && nf == 4) {
            rc = argus_attrib_add_ratio(a, fl[1], fl[2], fl[3], sub, sizeof sub);
        } else {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "%s:%lu: '%s' with %zu fields: expected program NAME, exec PC REGION "
                             "COUNT, metric PC NAME VALUE or ratio NAME NUM DEN (tab-separated)",
                             path, ln, fl[0], nf > 5 ? (size_t)5 : nf);
            break;
        }
        if (rc != 0)
            rc = argus__fail(rc, msg, msglen, "%s:%lu: %s", path, ln, sub);
    }
    if (rc == 0 && ferror(f))
        rc = argus__fail(ARGUS_EIO, msg, msglen, "attrib: %s: read error", path);
    if (rc == 0 && ln == 0)
        rc = argus__fail(ARGUS_EINVAL, msg, msglen, "attrib: %s is empty", path);
    if (rc == 0 && !seen_program)
        rc = argus__fail(ARGUS_EINVAL, msg, msglen, "attrib: %s has no program line", path);
    fclose(f);
    return rc;
}

/* ---- attribution ------------------------------------------------------- */

static int cmp_exec(const void *x, const void *y)
{
    const exec_ev *a = x, *b = y;
    if (a->pc != b->pc)
        return a->pc < b->pc ? -1 : 1;
    return a->region < b->region ? -1 : a->region > b->region;
}

static int cmp_mev(const void *x, const void *y)
{
    const metric_ev *a = x, *b = y;
    if (a->pc != b->pc)
        return a->pc < b->pc ? -1 : 1;
    return a->metric < b->metric ? -1 : a->metric > b->metric;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

void argus_attrib_result_free(argus_attrib_result *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n_regions; i++) {
        argus_attrib_region *g = &r->regions[i];
        free(g->path);
        free(g->self);
        free(g->inclusive);
        free(g->ratio_num);
        free(g->ratio_den);
        free(g->ratio);
        free(g->ratio_defined);
    }
    free(r->regions);
    free_names(r->metrics, r->n_metrics);
    free_names(r->ratios, r->n_ratios);
    free_names(r->ratio_num, r->n_ratios);
    free_names(r->ratio_den, r->n_ratios);
    free(r->pcs);
    free(r->total);
    free(r->unmapped);
    free(r->unmapped_pcs);
    free(r);
}

long argus_attrib_find_region(const argus_attrib_result *r, const char *path)
{
    size_t lo = 0, hi = r->n_regions;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->regions[mid].path, path);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

long argus_attrib_find_metric(const argus_attrib_result *r, const char *name)
{
    for (size_t i = 0; i < r->n_metrics; i++)
        if (strcmp(r->metrics[i], name) == 0)
            return (long)i;
    return -1;
}

long argus_attrib_find_ratio(const argus_attrib_result *r, const char *name)
{
    for (size_t i = 0; i < r->n_ratios; i++)
        if (strcmp(r->ratios[i], name) == 0)
            return (long)i;
    return -1;
}

long argus_attrib_find_pc(const argus_attrib_result *r, uint64_t pc)
{
    size_t lo = 0, hi = r->n_pcs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->pcs[mid].pc == pc)
            return (long)mid;
        if (r->pcs[mid].pc < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The paths of every mapped region and of all their ancestors ("a/b/c"
 * gives "a" and "a/b"), sorted, without duplicates. */
static int region_paths(const argus_attrib *a, char ***out, size_t *n_out)
{
    char **v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < a->n_regions; i++) {
        const char *p = a->regions[i];
        for (const char *s = p;; s++) {
            if (*s == '/' || *s == '\0') {
                if (argus__grow((void **)&v, &cap, n + 1, sizeof(char *)) != 0)
                    goto oom;
                v[n] = strndup(p, (size_t)(s - p));
                if (v[n] == NULL)
                    goto oom;
                n++;
            }
            if (*s == '\0')
                break;
        }
    }
    if (n > 0)
        qsort(v, n, sizeof(char *), cmp_str);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w > 0 && strcmp(v[w - 1], v[i]) == 0) {
            free(v[i]);
            continue;
        }
        v[w++] = v[i];
    }
    *out = v;
    *n_out = w;
    return 0;
oom:
    free_names(v, n);
    return ARGUS_ENOMEM;
}

static argus_attrib_value *values(size_t n, int mark)
{
    argus_attrib_value *v = calloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        v[i].mark = mark;
    return v;
}

/* Whether `child` is `anc` or lies below it. The root "" (code outside
 * every region) is a region of its own, not everything's ancestor. */
static int within(const char *child, const char *anc)
{
    size_t n = strlen(anc);
    if (strcmp(child, anc) == 0)
        return 1;
    return n > 0 && strncmp(child, anc, n) == 0 && child[n] == '/';
}

static char **copy_names(char *const *v, size_t n)
{
    char **c = calloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; c && i < n; i++) {
        c[i] = strdup(v[i]);
        if (c[i] == NULL) {
            free_names(c, i);
            return NULL;
        }
    }
    return c;
}

int argus_attrib_compute(const argus_attrib *a, argus_attrib_result **out, char *msg, size_t msglen)
{
    *out = NULL;
    if (!a->has_program)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "attrib: no program named: say which program version the evidence "
                           "is from (argus_attrib_program, or a program line)");
    size_t nm = a->n_metrics;
    for (size_t i = 0; i < a->n_ratios; i++) {
        const ratio_def *d = &a->ratios[i];
        int hn = 0, hd = 0;
        for (size_t m = 0; m < nm; m++) {
            hn |= strcmp(a->metrics[m], d->num) == 0;
            hd |= strcmp(a->metrics[m], d->den) == 0;
        }
        if (!hn || !hd)
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "attrib: ratio %s = %s / %s: no metric %s in the evidence; a ratio "
                               "is lifted from two additive metrics that are both measured",
                               d->name, d->num, d->den, hn ? d->den : d->num);
    }
    argus_attrib_result *r = calloc(1, sizeof *r);
    exec_ev *ex = NULL;
    metric_ev *mv = NULL;
    size_t *reg_of = NULL; /* exec region index -> result region index */
    char **paths = NULL;
    size_t n_paths = 0;
    int rc = ARGUS_ENOMEM;
    if (r == NULL)
        goto fail;
    memcpy(r->program, a->program, sizeof r->program);
    ex = malloc((a->n_execs ? a->n_execs : 1) * sizeof *ex);
    mv = malloc((a->n_mevs ? a->n_mevs : 1) * sizeof *mv);
    reg_of = malloc((a->n_regions ? a->n_regions : 1) * sizeof *reg_of);
    if (!ex || !mv || !reg_of)
        goto fail;
    /* memcpy from a NULL array is undefined even for 0 bytes. */
    if (a->n_execs)
        memcpy(ex, a->execs, a->n_execs * sizeof *ex);
    if (a->n_mevs)
        memcpy(mv, a->mevs, a->n_mevs * sizeof *mv);
    if (a->n_execs)
        qsort(ex, a->n_execs, sizeof *ex, cmp_exec);
    if (a->n_mevs)
        qsort(mv, a->n_mevs, sizeof *mv, cmp_mev);
    for (size_t i = 1; i < a->n_mevs; i++) {
        if (mv[i].pc == mv[i - 1].pc && mv[i].metric == mv[i - 1].metric) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "attrib: two values of metric %s at PC 0x%" PRIx64
                             ": give one value per PC and metric (sum them first if they are "
                             "from two passes of the same run)",
                             a->metrics[mv[i].metric], mv[i].pc);
            goto fail_msg;
        }
    }

    /* Regions. */
    if (region_paths(a, &paths, &n_paths) != 0)
        goto fail;
    r->regions = calloc(n_paths ? n_paths : 1, sizeof *r->regions);
    if (r->regions == NULL)
        goto fail;
    r->n_metrics = nm;
    r->n_ratios = a->n_ratios;
    for (size_t i = 0; i < n_paths; i++) {
        argus_attrib_region *g = &r->regions[i];
        g->path = paths[i];
        paths[i] = NULL;
        r->n_regions++;
        g->self = values(nm, ARGUS_MARK_ATTRIBUTED);
        g->inclusive = values(nm, ARGUS_MARK_ATTRIBUTED);
        g->ratio_num = values(a->n_ratios, ARGUS_MARK_ATTRIBUTED);
        g->ratio_den = values(a->n_ratios, ARGUS_MARK_ATTRIBUTED);
        g->ratio = values(a->n_ratios, ARGUS_MARK_DERIVED);
        g->ratio_defined = calloc(a->n_ratios ? a->n_ratios : 1, sizeof(int));
        if (!g->self || !g->inclusive || !g->ratio_num || !g->ratio_den || !g->ratio ||
            !g->ratio_defined)
            goto fail;
    }
    for (size_t i = 0; i < a->n_regions; i++) {
        reg_of[i] = (size_t)argus_attrib_find_region(r, a->regions[i]);
        r->regions[reg_of[i]].mapped = 1;
    }
    r->metrics = copy_names(a->metrics, nm);
    r->ratios = calloc(a->n_ratios ? a->n_ratios : 1, sizeof(char *));
    r->ratio_num = calloc(a->n_ratios ? a->n_ratios : 1, sizeof(char *));
    r->ratio_den = calloc(a->n_ratios ? a->n_ratios : 1, sizeof(char *));
    if (!r->metrics || !r->ratios || !r->ratio_num || !r->ratio_den)
        goto fail;
    for (size_t i = 0; i < a->n_ratios; i++) {
        r->ratios[i] = strdup(a->ratios[i].name);
        r->ratio_num[i] = strdup(a->ratios[i].num);
        r->ratio_den[i] = strdup(a->ratios[i].den);
        if (!r->ratios[i] || !r->ratio_num[i] || !r->ratio_den[i])
            goto fail;
    }

    /* PCs: the executions of each, merged per region, and the entropy of
     * its distribution. pc_first[k] is the first exec entry of PC k. */
    size_t w = 0;
    for (size_t i = 0; i < a->n_execs; i++) {
        if (w > 0 && ex[w - 1].pc == ex[i].pc && ex[w - 1].region == ex[i].region) {
            ex[w - 1].count += ex[i].count;
            continue;
        }
        ex[w++] = ex[i];
    }
    size_t n_ex = w;
    r->pcs = calloc(n_ex ? n_ex : 1, sizeof *r->pcs);
    size_t *pc_first = malloc((n_ex + 1) * sizeof *pc_first);
    if (r->pcs == NULL || pc_first == NULL) {
        free(pc_first);
        goto fail;
    }
    for (size_t i = 0; i < n_ex; i++) {
        if (r->n_pcs == 0 || r->pcs[r->n_pcs - 1].pc != ex[i].pc) {
            pc_first[r->n_pcs] = i;
            r->pcs[r->n_pcs++].pc = ex[i].pc;
        }
        argus_attrib_pc *p = &r->pcs[r->n_pcs - 1];
        p->executions += ex[i].count;
        p->n_regions += ex[i].count > 0;
    }
    pc_first[r->n_pcs] = n_ex;
    for (size_t k = 0; k < r->n_pcs; k++) {
        argus_attrib_pc *p = &r->pcs[k];
        double h = 0;
        for (size_t i = pc_first[k]; i < pc_first[k + 1] && p->executions > 0; i++) {
            if (ex[i].count == 0)
                continue;
            double q = (double)ex[i].count / (double)p->executions;
            h -= q * log2(q);
        }
        /* -0.0 from a single region prints as "-0"; it is 0 bits. */
        p->entropy_bits = h > 0 ? h : 0.0;
    }

    /* Metrics: each PC's value split by its executions. */
    r->total = values(nm, ARGUS_MARK_OBSERVED);
    r->unmapped = values(nm, ARGUS_MARK_OBSERVED);
    r->unmapped_pcs = calloc(nm ? nm : 1, sizeof(size_t));
    if (!r->total || !r->unmapped || !r->unmapped_pcs) {
        free(pc_first);
        goto fail;
    }
    for (size_t i = 0; i < a->n_mevs; i++) {
        const metric_ev *e = &mv[i];
        r->total[e->metric].value += e->value;
        long k = argus_attrib_find_pc(r, e->pc);
        if (k < 0 || r->pcs[k].executions == 0) {
            r->unmapped[e->metric].value += e->value;
            r->unmapped_pcs[e->metric]++;
            continue;
        }
        const argus_attrib_pc *p = &r->pcs[k];
        for (size_t j = pc_first[k]; j < pc_first[k + 1]; j++) {
            argus_attrib_region *g = &r->regions[reg_of[ex[j].region]];
            g->self[e->metric].value += e->value * ((double)ex[j].count / (double)p->executions);
        }
    }
    free(pc_first);

    /* Inclusive sums and the lifted ratios. */
    for (size_t i = 0; i < r->n_regions; i++) {
        argus_attrib_region *g = &r->regions[i];
        for (size_t j = i; j < r->n_regions; j++) {
            if (!within(r->regions[j].path, g->path))
                continue;
            for (size_t m = 0; m < nm; m++)
                g->inclusive[m].value += r->regions[j].self[m].value;
        }
        for (size_t q = 0; q < a->n_ratios; q++) {
            long num = argus_attrib_find_metric(r, a->ratios[q].num);
            long den = argus_attrib_find_metric(r, a->ratios[q].den);
            g->ratio_num[q].value = g->inclusive[num].value;
            g->ratio_den[q].value = g->inclusive[den].value;
            g->ratio_defined[q] = g->ratio_den[q].value > 0;
            g->ratio[q].value =
                g->ratio_defined[q] ? g->ratio_num[q].value / g->ratio_den[q].value : NAN;
        }
    }
    free(ex);
    free(mv);
    free(reg_of);
    free(paths);
    *out = r;
    return 0;
fail:
    rc = argus__fail(ARGUS_ENOMEM, msg, msglen, "attrib: out of memory");
fail_msg:
    free(ex);
    free(mv);
    free(reg_of);
    free_names(paths, n_paths);
    argus_attrib_result_free(r);
    return rc;
}

static const char *shown(const char *path)
{
    return path[0] ? path : "(outside regions)";
}

int argus_attrib_write(const argus_attrib_result *r, FILE *f)
{
    if (fprintf(f, "# argus attribution: program %s, %zu PCs mapped, %zu regions, %zu metrics\n",
                r->program, r->n_pcs, r->n_regions, r->n_metrics) < 0 ||
        fprintf(f, "region\tmetric\tself\tinclusive\tmark\n") < 0)
        return ARGUS_EIO;
    for (size_t i = 0; i < r->n_regions; i++) {
        const argus_attrib_region *g = &r->regions[i];
        for (size_t m = 0; m < r->n_metrics; m++)
            if (fprintf(f, "%s\t%s\t%.6g\t%.6g\t%s\n", shown(g->path), r->metrics[m],
                        g->self[m].value, g->inclusive[m].value,
                        argus_mark_name(g->inclusive[m].mark)) < 0)
                return ARGUS_EIO;
        for (size_t q = 0; q < r->n_ratios; q++) {
            int n;
            if (g->ratio_defined[q])
                n = fprintf(f, "%s\t%s = %s / %s\t%.6g / %.6g\t%.6g\t%s\n", shown(g->path),
                            r->ratios[q], r->ratio_num[q], r->ratio_den[q], g->ratio_num[q].value,
                            g->ratio_den[q].value, g->ratio[q].value,
                            argus_mark_name(g->ratio[q].mark));
            else
                n = fprintf(f, "%s\t%s\t(no %s)\t-\tundefined\n", shown(g->path), r->ratios[q],
                            r->ratio_den[q]);
            if (n < 0)
                return ARGUS_EIO;
        }
    }
    for (size_t m = 0; m < r->n_metrics; m++)
        if (fprintf(f,
                    "(unmapped PCs: %zu)\t%s\t%.6g\t%.6g\tobserved\n(kernel "
                    "total)\t%s\t%.6g\t%.6g\tobserved\n",
                    r->unmapped_pcs[m], r->metrics[m], r->unmapped[m].value, r->unmapped[m].value,
                    r->metrics[m], r->total[m].value, r->total[m].value) < 0)
            return ARGUS_EIO;
    if (fprintf(f, "# ambiguous PCs (entropy of the region split, bits, derived)\n") < 0)
        return ARGUS_EIO;
    for (size_t k = 0; k < r->n_pcs; k++)
        if (r->pcs[k].n_regions > 1 &&
            fprintf(f, "pc 0x%" PRIx64 "\t%zu regions\t%" PRIu64 " executions\tH %.4f bits\n",
                    r->pcs[k].pc, r->pcs[k].n_regions, r->pcs[k].executions,
                    r->pcs[k].entropy_bits) < 0)
            return ARGUS_EIO;
    return 0;
}
