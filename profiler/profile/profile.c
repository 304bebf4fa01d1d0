/*
 * The profile model, the JSON writer and the occupancy arithmetic. libc
 * (and the core) only: the capture library links this into the injection
 * library, which runs on GPU machines where no extra packages are installed.
 * Every allocation goes through malloc/realloc/calloc directly (no strdup or
 * asprintf), so that the fault-injection tests can make any of them fail.
 */
#define _GNU_SOURCE 1
#include "mosaic/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "json.h"

/* ---- metric table ---------------------------------------------------- */

struct metric_desc {
    const char *key, *name, *unit;
    enum mosaic_dim dim;
};

static const struct metric_desc metric_table[MOSAIC_N_METRICS] = {
#define MOSAIC_X_DESC(key, name, unit, dim) {#key, name, unit, dim},
    MOSAIC_METRICS(MOSAIC_X_DESC)
#undef MOSAIC_X_DESC
};

struct derived_desc {
    const char *key, *formula, *unit;
};

static const struct derived_desc derived_table[MOSAIC_N_DERIVED] = {
#define MOSAIC_X_DDESC(key, formula, unit) {#key, formula, unit},
    MOSAIC_DERIVED(MOSAIC_X_DDESC)
#undef MOSAIC_X_DDESC
};

const char *mosaic_metric_key(int id)
{
    return id >= 0 && id < MOSAIC_N_METRICS ? metric_table[id].key : NULL;
}

const char *mosaic_metric_name(int id)
{
    return id >= 0 && id < MOSAIC_N_METRICS ? metric_table[id].name : NULL;
}

const char *mosaic_metric_unit(int id)
{
    return id >= 0 && id < MOSAIC_N_METRICS ? metric_table[id].unit : NULL;
}

enum mosaic_dim mosaic_metric_dim(int id)
{
    return id >= 0 && id < MOSAIC_N_METRICS ? metric_table[id].dim
                                            : MOSAIC_DIM_RATIO;
}

int mosaic_metric_by_key(const char *key)
{
    for (int i = 0; key && i < MOSAIC_N_METRICS; i++)
        if (strcmp(metric_table[i].key, key) == 0)
            return i;
    return -1;
}

int mosaic_metric_by_name(const char *name)
{
    for (int i = 0; name && i < MOSAIC_N_METRICS; i++)
        if (strcmp(metric_table[i].name, name) == 0)
            return i;
    return -1;
}

const char *mosaic_derived_key(int id)
{
    return id >= 0 && id < MOSAIC_N_DERIVED ? derived_table[id].key : NULL;
}

const char *mosaic_derived_formula(int id)
{
    return id >= 0 && id < MOSAIC_N_DERIVED ? derived_table[id].formula : NULL;
}

const char *mosaic_derived_unit(int id)
{
    return id >= 0 && id < MOSAIC_N_DERIVED ? derived_table[id].unit : NULL;
}

int mosaic_derived_by_key(const char *key)
{
    for (int i = 0; key && i < MOSAIC_N_DERIVED; i++)
        if (strcmp(derived_table[i].key, key) == 0)
            return i;
    return -1;
}

/* ---- model ----------------------------------------------------------- */

void mosaic_profile_init(struct mosaic_profile *p)
{
    memset(p, 0, sizeof(*p));
    p->gpu.sm_count = MOSAIC_NULL;
    p->gpu.l2_bytes = MOSAIC_NULL;
    p->passes = MOSAIC_NULL;
    p->complete = 1;
}

void mosaic_kernel_init(struct mosaic_kernel *k)
{
    memset(k, 0, sizeof(*k));
    for (int i = 0; i < 3; i++) {
        k->grid[i] = MOSAIC_NULL;
        k->block[i] = MOSAIC_NULL;
    }
    k->dyn_smem = k->static_smem = k->regs = k->local_bytes = MOSAIC_NULL;
    k->max_threads = k->carveout = MOSAIC_NULL;
    k->occ.blocks_per_sm = k->occ.limit_threads = k->occ.limit_regs =
        MOSAIC_NULL;
    k->occ.limit_smem = k->occ.limit_blocks = MOSAIC_NULL;
    k->occ.reserved_smem_per_block = MOSAIC_NULL;
    k->launches = 0;
    for (int i = 0; i < MOSAIC_N_METRICS; i++)
        k->metrics[i] = NAN;
    for (int i = 0; i < MOSAIC_N_DERIVED; i++)
        k->derived[i] = NAN;
}

void mosaic_kernel_free(struct mosaic_kernel *k)
{
    free(k->key);
    free(k->name);
    k->key = k->name = NULL;
}

void mosaic_profile_free(struct mosaic_profile *p)
{
    free(p->gpu.name);
    free(p->gpu.driver);
    free(p->gpu.cuda);
    free(p->gpu.cc);
    free(p->date);
    free(p->method);
    free(p->source);
    for (size_t i = 0; i < p->n_problems; i++)
        free(p->problems[i]);
    free(p->problems);
    for (size_t i = 0; i < p->n_kernels; i++)
        mosaic_kernel_free(&p->kernels[i]);
    free(p->kernels);
    mosaic_profile_init(p);
}

int mosaic_set_str(char **field, const char *value)
{
    char *copy = NULL;

    if (value) {
        size_t n = strlen(value) + 1;
        if (!(copy = malloc(n)))
            return MOSAIC_ENOMEM;
        memcpy(copy, value, n);
    }
    free(*field);
    *field = copy;
    return 0;
}

/* vasprintf through malloc (see the top of the file). NULL on ENOMEM. */
static char *format_alloc(const char *fmt, va_list ap)
{
    va_list ap2;
    char *s;
    int n;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !(s = malloc((size_t)n + 1)))
        return NULL;
    if (vsnprintf(s, (size_t)n + 1, fmt, ap) != n) {
        free(s);
        return NULL;
    }
    return s;
}

__attribute__((format(printf, 1, 2))) static char *sprintf_alloc(const char *fmt,
                                                                 ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    s = format_alloc(fmt, ap);
    va_end(ap);
    return s;
}

int mosaic_profile_add_problem(struct mosaic_profile *p, const char *fmt, ...)
{
    va_list ap;
    char *msg;

    p->complete = 0;
    va_start(ap, fmt);
    msg = format_alloc(fmt, ap);
    va_end(ap);
    if (!msg)
        return MOSAIC_ENOMEM;
    for (size_t i = 0; i < p->n_problems; i++) {
        if (strcmp(p->problems[i], msg) == 0) {
            free(msg);
            return 0;
        }
    }
    if (p->n_problems == p->cap_problems) {
        size_t ncap = p->cap_problems ? 2 * p->cap_problems : 8;
        char **np = realloc(p->problems, ncap * sizeof(*np));
        if (!np) {
            free(msg);
            return MOSAIC_ENOMEM;
        }
        p->problems = np;
        p->cap_problems = ncap;
    }
    p->problems[p->n_problems++] = msg;
    return 0;
}

struct mosaic_kernel *mosaic_profile_add_kernel(struct mosaic_profile *p)
{
    if (p->n_kernels == p->cap_kernels) {
        size_t ncap = p->cap_kernels ? 2 * p->cap_kernels : 16;
        struct mosaic_kernel *nk = realloc(p->kernels, ncap * sizeof(*nk));
        if (!nk)
            return NULL;
        p->kernels = nk;
        p->cap_kernels = ncap;
    }
    struct mosaic_kernel *k = &p->kernels[p->n_kernels++];
    mosaic_kernel_init(k);
    return k;
}

/* The profile key's one format (docs/profile-schema.md), for both forms. */
#define KEY_FORMAT                                                          \
    "%s|grid=%" PRId64 ",%" PRId64 ",%" PRId64 "|block=%" PRId64 ",%" PRId64 \
    ",%" PRId64 "|dsmem=%" PRId64
#define KEY_ARGS(name, grid, block, dyn_smem)                              \
    (name) ? (name) : "?", (grid)[0], (grid)[1], (grid)[2], (block)[0],    \
        (block)[1], (block)[2], (dyn_smem)

char *mosaic_kernel_key(const char *name, const int64_t grid[3],
                        const int64_t block[3], int64_t dyn_smem)
{
    return sprintf_alloc(KEY_FORMAT, KEY_ARGS(name, grid, block, dyn_smem));
}

int mosaic_kernel_key_buf(char *buf, size_t cap, const char *name,
                          const int64_t grid[3], const int64_t block[3],
                          int64_t dyn_smem)
{
    int n = snprintf(buf, cap, KEY_FORMAT, KEY_ARGS(name, grid, block, dyn_smem));

    return n < 0 ? MOSAIC_EINVAL : n;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

long mosaic_kindex_find(const struct mosaic_kindex *ix,
                        const struct mosaic_profile *p, const char *key)
{
    if (ix->cap == 0)
        return -1;
    size_t j = (size_t)hash_str(key) & (ix->cap - 1);
    while (ix->slot[j]) {
        const char *k = p->kernels[ix->slot[j] - 1].key;
        if (k && strcmp(k, key) == 0)
            return (long)(ix->slot[j] - 1);
        j = (j + 1) & (ix->cap - 1);
    }
    return -1;
}

static void kindex_put(size_t *slot, size_t cap, const char *key, size_t idx)
{
    size_t j = (size_t)hash_str(key) & (cap - 1);

    while (slot[j])
        j = (j + 1) & (cap - 1);
    slot[j] = idx + 1;
}

int mosaic_kindex_add(struct mosaic_kindex *ix, const struct mosaic_profile *p,
                      size_t idx)
{
    if (2 * (idx + 1) > ix->cap) {
        size_t ncap = ix->cap ? 2 * ix->cap : 256;
        while (2 * (idx + 1) > ncap)
            ncap *= 2;
        size_t *ns = calloc(ncap, sizeof(*ns));
        if (!ns)
            return MOSAIC_ENOMEM;
        for (size_t i = 0; i < idx; i++)
            if (p->kernels[i].key)
                kindex_put(ns, ncap, p->kernels[i].key, i);
        free(ix->slot);
        ix->slot = ns;
        ix->cap = ncap;
    }
    kindex_put(ix->slot, ix->cap, p->kernels[idx].key ? p->kernels[idx].key : "",
               idx);
    return 0;
}

void mosaic_kindex_free(struct mosaic_kindex *ix)
{
    free(ix->slot);
    ix->slot = NULL;
    ix->cap = 0;
}

static double ratio_or_nan(double num, double den)
{
    if (isnan(num) || isnan(den) || den == 0.0)
        return NAN;
    return num / den;
}

void mosaic_kernel_derive(struct mosaic_kernel *k)
{
    const double *m = k->metrics;

    k->derived[MOSAIC_D_compute_to_lsu] =
        ratio_or_nan(m[MOSAIC_M_inst_fma] + m[MOSAIC_M_inst_alu] +
                         m[MOSAIC_M_inst_xu],
                     m[MOSAIC_M_inst_lsu]);
    k->derived[MOSAIC_D_sectors_per_request] =
        ratio_or_nan(m[MOSAIC_M_gld_sectors], m[MOSAIC_M_gld_requests]);
    k->derived[MOSAIC_D_issue_stall_ratio] =
        isnan(m[MOSAIC_M_issue_active]) ? NAN : 1.0 - m[MOSAIC_M_issue_active];
}

int mosaic_kernel_n_missing(const struct mosaic_kernel *k)
{
    int n = 0;

    for (int i = 0; i < MOSAIC_N_METRICS; i++)
        n += isnan(k->metrics[i]) ? 1 : 0;
    return n;
}

/* ---- which GPU, launch sizes ------------------------------------------ */

/* " (NAME)" for a GPU's name, or "" when it has none. */
static const char *named(char buf[160], const char *name)
{
    if (!name || snprintf(buf, 160, " (%.140s)", name) < 0)
        buf[0] = '\0';
    return buf;
}

int mosaic_profile_check_gpu(const struct mosaic_profile *p, const char *what,
                             const struct mosaic_gpu *want, char *err,
                             size_t errlen)
{
    const struct mosaic_gpu *g;
    char gn[160], wn[160];

    if (!what)
        what = "<profile>";
    if (!p || !want)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, what, NULL,
                            "no profile or no GPU to compare with");
    g = &p->gpu;
    named(gn, g->name);
    named(wn, want->name);
    if (want->sm_count != MOSAIC_NULL && g->sm_count != want->sm_count) {
        if (g->sm_count == MOSAIC_NULL)
            return mosaic__errf(err, errlen, MOSAIC_EFORMAT, what, "gpu.sm_count",
                                "unknown (null), but this needs a profile of a "
                                "GPU with %" PRId64 " SMs%s; profile the "
                                "kernels on that GPU", want->sm_count, wn);
        return mosaic__errf(err, errlen, MOSAIC_EFORMAT, what, "gpu.sm_count",
                            "the profile was taken on a GPU with %" PRId64
                            " SMs%s, but this needs %" PRId64 "%s; profile "
                            "the kernels on that GPU", g->sm_count, gn,
                            want->sm_count, wn);
    }
    if (want->cc && (!g->cc || strcmp(g->cc, want->cc) != 0))
        return mosaic__errf(err, errlen, MOSAIC_EFORMAT, what, "gpu.cc",
                            "the profile was taken on compute capability %s%s, "
                            "but this needs %s%s; profile the kernels on that "
                            "GPU", g->cc ? g->cc : "unknown (null)", gn,
                            want->cc, wn);
    if (want->name && (!g->name || strcmp(g->name, want->name) != 0))
        return mosaic__errf(err, errlen, MOSAIC_EFORMAT, what, "gpu.name",
                            "the profile was taken on \"%s\", but this needs "
                            "\"%s\"; profile the kernels on that GPU",
                            g->name ? g->name : "unknown (null)", want->name);
    return 0;
}

int mosaic_launch_blocks(const int64_t grid[3], int64_t *out)
{
    int64_t v = 1;

    *out = 0;
    for (int i = 0; i < 3; i++) {
        if (grid[i] == MOSAIC_NULL || grid[i] < 1)
            return MOSAIC_EFORMAT;
        if (__builtin_mul_overflow(v, grid[i], &v))
            return MOSAIC_ETOOBIG;
    }
    *out = v;
    return 0;
}

int mosaic_launch_threads(const int64_t grid[3], const int64_t block[3],
                          int64_t *out)
{
    int64_t blocks, threads;
    int rc;

    *out = 0;
    if ((rc = mosaic_launch_blocks(grid, &blocks)) != 0 ||
        (rc = mosaic_launch_blocks(block, &threads)) != 0)
        return rc;
    if (__builtin_mul_overflow(blocks, threads, &threads))
        return MOSAIC_ETOOBIG;
    *out = threads;
    return 0;
}

void mosaic_now_iso8601(char buf[32])
{
    time_t t = time(NULL);
    struct tm tm;

    if (!gmtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, 32, "1970-01-01T00:00:00Z");
}

/* ---- JSON writer ----------------------------------------------------- */

static void write_int(FILE *f, int64_t v)
{
    if (v == MOSAIC_NULL)
        fputs("null", f);
    else
        fprintf(f, "%" PRId64, v);
}

static void write_double(FILE *f, double v)
{
    if (!isfinite(v)) {
        fputs("null", f);
        return;
    }
    /* Shortest of %.15g / %.17g that reads back exactly. */
    char buf[40];
    snprintf(buf, sizeof(buf), "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof(buf), "%.17g", v);
    fputs(buf, f);
}

static void write_str_or_null(FILE *f, const char *s)
{
    if (s)
        mosaic__json_fputs(f, s);
    else
        fputs("null", f);
}

static void write_triple(FILE *f, const int64_t v[3])
{
    fputc('[', f);
    for (int i = 0; i < 3; i++) {
        if (i)
            fputs(", ", f);
        write_int(f, v[i]);
    }
    fputc(']', f);
}

static void write_kernel(FILE *f, const struct mosaic_kernel *k)
{
    fputs("    {\"key\": ", f);
    write_str_or_null(f, k->key);
    fputs(",\n     \"name\": ", f);
    write_str_or_null(f, k->name);
    fputs(",\n     \"grid\": ", f);
    write_triple(f, k->grid);
    fputs(", \"block\": ", f);
    write_triple(f, k->block);
    fputs(", \"dyn_smem\": ", f);
    write_int(f, k->dyn_smem);
    fputs(", \"static_smem\": ", f);
    write_int(f, k->static_smem);
    fputs(",\n     \"regs\": ", f);
    write_int(f, k->regs);
    fputs(", \"local_bytes\": ", f);
    write_int(f, k->local_bytes);
    fputs(", \"max_threads\": ", f);
    write_int(f, k->max_threads);
    fputs(", \"carveout\": ", f);
    write_int(f, k->carveout);
    fputs(",\n     \"occupancy\": {\"blocks_per_sm\": ", f);
    write_int(f, k->occ.blocks_per_sm);
    fputs(", \"limit_threads\": ", f);
    write_int(f, k->occ.limit_threads);
    fputs(", \"limit_regs\": ", f);
    write_int(f, k->occ.limit_regs);
    fputs(", \"limit_smem\": ", f);
    write_int(f, k->occ.limit_smem);
    fputs(", \"limit_blocks\": ", f);
    write_int(f, k->occ.limit_blocks);
    fputs(", \"reserved_smem_per_block\": ", f);
    write_int(f, k->occ.reserved_smem_per_block);
    fputs("},\n     \"launches\": ", f);
    write_int(f, k->launches);
    fputs(", \"duration_ns\": ", f);
    write_double(f, k->metrics[MOSAIC_M_duration_ns]);
    fputs(",\n     \"metrics\": {", f);
    for (int i = 0; i < MOSAIC_N_METRICS; i++) {
        fputs(i ? ",\n       " : "\n       ", f);
        mosaic__json_fputs(f, metric_table[i].key);
        fputs(": ", f);
        write_double(f, k->metrics[i]);
    }
    fputs("},\n     \"derived\": {", f);
    for (int i = 0; i < MOSAIC_N_DERIVED; i++) {
        if (i)
            fputs(", ", f);
        mosaic__json_fputs(f, derived_table[i].key);
        fputs(": ", f);
        write_double(f, k->derived[i]);
    }
    fputs("},\n     \"missing\": [", f);
    int first = 1;
    for (int i = 0; i < MOSAIC_N_METRICS; i++) {
        if (!isnan(k->metrics[i]))
            continue;
        if (!first)
            fputs(", ", f);
        first = 0;
        mosaic__json_fputs(f, metric_table[i].key);
    }
    fputs("]}", f);
}

int mosaic_profile_write(const struct mosaic_profile *p, FILE *f)
{
    fputs("{\"schema\": \"" MOSAIC_PROFILE_SCHEMA "\",\n", f);
    fputs(" \"tool\": \"" MOSAIC_PROFILE_TOOL "\",\n", f);
    fputs(" \"gpu\": {\"name\": ", f);
    write_str_or_null(f, p->gpu.name);
    fputs(", \"sm_count\": ", f);
    write_int(f, p->gpu.sm_count);
    fputs(", \"l2_bytes\": ", f);
    write_int(f, p->gpu.l2_bytes);
    fputs(", \"driver\": ", f);
    write_str_or_null(f, p->gpu.driver);
    fputs(", \"cuda\": ", f);
    write_str_or_null(f, p->gpu.cuda);
    fputs(", \"cc\": ", f);
    write_str_or_null(f, p->gpu.cc);
    fputs("},\n \"date\": ", f);
    write_str_or_null(f, p->date);
    fputs(",\n \"method\": ", f);
    write_str_or_null(f, p->method);
    fputs(",\n \"source\": ", f);
    write_str_or_null(f, p->source);
    fputs(",\n \"complete\": ", f);
    fputs(p->complete && p->n_problems == 0 ? "true" : "false", f);
    fputs(",\n \"passes\": ", f);
    write_int(f, p->passes);
    fputs(",\n \"problems\": [", f);
    for (size_t i = 0; i < p->n_problems; i++) {
        fputs(i ? ",\n   " : "\n   ", f);
        mosaic__json_fputs(f, p->problems[i]);
    }
    fputs("],\n \"features\": [", f);
    for (int i = 0; i < MOSAIC_N_METRICS; i++) {
        fputs(i ? ",\n   " : "\n   ", f);
        fputs("{\"key\": ", f);
        mosaic__json_fputs(f, metric_table[i].key);
        fputs(", \"metric\": ", f);
        mosaic__json_fputs(f, metric_table[i].name);
        fputs(", \"unit\": ", f);
        mosaic__json_fputs(f, metric_table[i].unit);
        fputs("}", f);
    }
    for (int i = 0; i < MOSAIC_N_DERIVED; i++) {
        fputs(",\n   {\"key\": ", f);
        mosaic__json_fputs(f, derived_table[i].key);
        fputs(", \"derived\": ", f);
        mosaic__json_fputs(f, derived_table[i].formula);
        fputs(", \"unit\": ", f);
        mosaic__json_fputs(f, derived_table[i].unit);
        fputs("}", f);
    }
    fputs("],\n \"kernels\": [", f);
    for (size_t i = 0; i < p->n_kernels; i++) {
        fputs(i ? ",\n" : "\n", f);
        write_kernel(f, &p->kernels[i]);
    }
    fputs("]}\n", f);
    return ferror(f) ? MOSAIC_EIO : 0;
}

int mosaic_profile_write_file(const struct mosaic_profile *p, const char *path,
                              char *err, size_t errlen)
{
    char *tmp;
    FILE *f;
    int saved, rc;

    if (!(tmp = sprintf_alloc("%s.tmp.%ld", path, (long)getpid())))
        return mosaic__errf(err, errlen, MOSAIC_ENOMEM, path, NULL,
                            "out of memory");
    f = fopen(tmp, "w");
    if (!f) {
        saved = errno;
        rc = mosaic__errf(err, errlen, MOSAIC_EIO, tmp, NULL,
                          "cannot create: %s (check that the folder exists "
                          "and is writable)", strerror(saved));
        free(tmp);
        return rc;
    }
    if (mosaic_profile_write(p, f) != 0 || fflush(f) != 0 || fsync(fileno(f)) != 0) {
        saved = errno;
        fclose(f);
        unlink(tmp);
        rc = mosaic__errf(err, errlen, MOSAIC_EIO, tmp, NULL,
                          "write failed: %s (disk full?)", strerror(saved));
        free(tmp);
        return rc;
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        saved = errno;
        unlink(tmp);
        rc = mosaic__errf(err, errlen, MOSAIC_EIO, path, NULL,
                          "cannot write: %s", strerror(saved));
        free(tmp);
        return rc;
    }
    free(tmp);
    return 0;
}

/* ---- occupancy ------------------------------------------------------- */

static int64_t round_up(int64_t v, int64_t g)
{
    return g > 0 ? (v + g - 1) / g * g : v;
}

/* Shared-memory configurations (bytes per SM) of compute capability 8.x and
 * 9.x, from cuda_occupancy.h: the carveout preference is rounded up to one. */
static int64_t align_up_smem_config(int64_t size, int major, int minor,
                                    int64_t smem_per_sm)
{
    static const int sm80[] = {0, 8, 16, 32, 64, 100, 132, 164};
    static const int sm86[] = {0, 8, 16, 32, 64, 100};
    static const int sm90[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
    const int *t = NULL;
    size_t n = 0;

    if (major == 8 && (minor == 0 || minor == 7))
        t = sm80, n = sizeof(sm80) / sizeof(sm80[0]);
    else if (major == 8)
        t = sm86, n = sizeof(sm86) / sizeof(sm86[0]);
    else if (major == 9)
        t = sm90, n = sizeof(sm90) / sizeof(sm90[0]);
    for (size_t i = 0; i < n; i++)
        if (size <= (int64_t)t[i] * 1024)
            return (int64_t)t[i] * 1024;
    return smem_per_sm;
}

void mosaic_occupancy_limits(const struct mosaic_occ_device *d,
                             const struct mosaic_occ_kernel *k,
                             struct mosaic_occupancy *out)
{
    const int64_t warp = d->warp_size > 0 ? d->warp_size : 32;
    const int64_t nsub = 4;         /* SM sub-partitions, Volta and later */
    const int64_t reg_gran = 256;   /* register allocation unit per warp */
    const int64_t smem_gran = d->cc_major >= 8 ? 128 : 256;
    const int64_t reserved = d->cc_major >= 8 ? d->reserved_smem_per_block : 0;
    int64_t warps_per_block, lim;

    out->limit_blocks = d->max_blocks_per_sm;
    out->reserved_smem_per_block = d->reserved_smem_per_block;
    if (k->threads_per_block <= 0) {
        out->limit_threads = out->limit_regs = out->limit_smem = 0;
        return;
    }
    warps_per_block = (k->threads_per_block + warp - 1) / warp;

    /* Warps (threads). */
    out->limit_threads = (d->max_threads_per_sm / warp) / warps_per_block;

    /* Registers: allocated per warp in each sub-partition. */
    if (k->regs_per_thread <= 0) {
        out->limit_regs = d->max_blocks_per_sm;
    } else {
        int64_t per_warp = round_up((int64_t)k->regs_per_thread * warp, reg_gran);
        int64_t per_block = per_warp * warps_per_block;
        int64_t assumed = per_warp * round_up(warps_per_block, nsub);
        if (per_block > d->regs_per_block || assumed > d->regs_per_block ||
            k->regs_per_thread > 255) {
            lim = 0;
        } else {
            int64_t warps_per_sub = (d->regs_per_sm / nsub) / per_warp;
            lim = warps_per_sub * nsub / warps_per_block;
        }
        out->limit_regs = lim;
    }

    /* Shared memory, with the driver's per-block reserve. */
    {
        int64_t per_block = round_up((int64_t)k->static_smem + k->dyn_smem +
                                         reserved, smem_gran);
        int64_t block_limit = (int64_t)d->smem_per_block_optin + reserved;
        int64_t pref;
        if (k->carveout < 0 || k->carveout > 100)
            pref = d->smem_per_sm;
        else
            pref = align_up_smem_config((int64_t)k->carveout * d->smem_per_sm / 100,
                                        d->cc_major, d->cc_minor, d->smem_per_sm);
        int64_t sm_smem;
        if (pref >= per_block)
            sm_smem = pref;
        else
            sm_smem = align_up_smem_config(per_block, d->cc_major, d->cc_minor,
                                           d->smem_per_sm);
        if (per_block > block_limit)
            lim = 0;
        else if (per_block == 0)
            lim = d->max_blocks_per_sm;
        else
            lim = sm_smem / per_block;
        out->limit_smem = lim;
    }
}
