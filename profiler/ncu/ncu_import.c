/*
 * Nsight Compute CSV import (see ncu_import.h). CSV fields are split by
 * libcsv, one physical line at a time so that every message names its line.
 * Failures return MOSAIC_EFORMAT (not ncu CSV, or a value that does not
 * parse), MOSAIC_EIO (cannot open or read) or MOSAIC_ENOMEM.
 */
#define _GNU_SOURCE 1
#include "ncu_import.h"

#include <csv.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

#define MAX_LINE_BYTES (16L * 1024 * 1024)
#define MAX_FIELDS 100000
#define MAX_KERNELS 1000000

#define FIX_EXPORT                                                            \
    "export it with: ncu --csv --page raw --print-kernel-base mangled "       \
    "--metrics $(mosaic-profile ncu-metrics) <program>"

/* ---- numbers and units ----------------------------------------------- */

int mosaic_ncu_parse_number(const char *s, double *out)
{
    char buf[128];
    size_t n = 0;
    const char *p = s;
    int digits = 0;

    while (*p == ' ')
        p++;
    if (*p == '\0' || strcmp(p, "n/a") == 0 || strcmp(p, "N/A") == 0 ||
        strcmp(p, "-") == 0) {
        *out = NAN;
        return 1;
    }
    /* Copy, dropping thousands separators that sit between digits. */
    for (; *p && *p != ' '; p++) {
        if (*p == ',') {
            if (!(p > s && isdigit((unsigned char)p[-1]) &&
                  isdigit((unsigned char)p[1])))
                return MOSAIC_EFORMAT;
            continue;
        }
        if (!(isdigit((unsigned char)*p) || *p == '.' || *p == '-' ||
              *p == '+' || *p == 'e' || *p == 'E'))
            return MOSAIC_EFORMAT;
        digits += isdigit((unsigned char)*p) ? 1 : 0;
        if (n + 1 >= sizeof(buf))
            return MOSAIC_EFORMAT;
        buf[n++] = *p;
    }
    while (*p == ' ')
        p++;
    if (*p != '\0' || digits == 0)
        return MOSAIC_EFORMAT;
    buf[n] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (end == buf || *end != '\0' || errno == ERANGE || !isfinite(v))
        return MOSAIC_EFORMAT;
    *out = v;
    return 0;
}

struct unit_part {
    double scale;     /* SI / binary prefix */
    const char *base; /* canonical base word */
};

static const char *const base_words[] = {
    "second", "byte", "bit", "inst", "cycle", "sector", "request", "warp",
    "thread", "block", "register", "conflict", "wavefront", "hz", "instruction",
    "transaction", "cta", "sm", "pass", "launch", "op", "flop", "element",
};

static const char *canonical_base(const char *w, size_t n)
{
    /* synonyms first */
    if ((n == 1 && w[0] == 's') || (n == 3 && strncmp(w, "sec", 3) == 0))
        return "second";
    if (n == 1 && w[0] == 'B')
        return "byte";
    for (size_t i = 0; i < sizeof(base_words) / sizeof(base_words[0]); i++) {
        size_t bl = strlen(base_words[i]);
        if (strncasecmp(w, base_words[i], bl) == 0 &&
            (n == bl || (n == bl + 1 && w[bl] == 's')))
            return base_words[i];
    }
    return NULL;
}

/* Parses one side of a unit ("Gbyte", "usecond", "inst", ""). */
static int parse_unit_part(const char *w, size_t n, struct unit_part *out)
{
    static const struct {
        const char *p;
        double s;
    } prefixes[] = {
        {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0},
        {"Ti", 1099511627776.0}, {"n", 1e-9}, {"u", 1e-6}, {"m", 1e-3},
        {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
        {"P", 1e15},
    };

    while (n && w[0] == ' ')
        w++, n--;
    while (n && w[n - 1] == ' ')
        n--;
    out->scale = 1.0;
    out->base = "";
    if (n == 0)
        return 0;
    if ((out->base = canonical_base(w, n)))
        return 0;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t pl = strlen(prefixes[i].p);
        if (n > pl && strncmp(w, prefixes[i].p, pl) == 0) {
            const char *b = canonical_base(w + pl, n - pl);
            if (b) {
                out->scale = prefixes[i].s;
                out->base = b;
                return 0;
            }
        }
    }
    return MOSAIC_EFORMAT; /* unknown word */
}

int mosaic_ncu_unit_scale(const char *unit, enum mosaic_dim dim, double *scale)
{
    struct unit_part num, den = {1.0, ""};
    const char *slash;
    int has_den;

    if (!unit)
        unit = "";
    if (strlen(unit) > 64)
        return MOSAIC_EFORMAT;
    slash = strchr(unit, '/');
    has_den = slash != NULL;
    if (has_den && strchr(slash + 1, '/'))
        return MOSAIC_EFORMAT;
    if (strcmp(unit, "%") == 0) {
        if (dim != MOSAIC_DIM_PCT)
            return MOSAIC_EFORMAT;
        *scale = 1.0;
        return 0;
    }
    if (parse_unit_part(unit, has_den ? (size_t)(slash - unit) : strlen(unit),
                        &num) != 0)
        num.base = NULL;
    if (has_den && parse_unit_part(slash + 1, strlen(slash + 1), &den) != 0)
        den.base = NULL;

    int num_time = num.base && strcmp(num.base, "second") == 0;
    int num_byte = num.base && (strcmp(num.base, "byte") == 0);
    int den_time = den.base && strcmp(den.base, "second") == 0;

    switch (dim) {
    case MOSAIC_DIM_TIME_NS:
        if (!num_time || has_den)
            return MOSAIC_EFORMAT;
        *scale = num.scale * 1e9;
        return 0;
    case MOSAIC_DIM_BYTES:
        /* "byte", "Kbyte", "byte/block" (launch statistics) */
        if (!num_byte || (has_den && (!den.base || den_time ||
                                      strcmp(den.base, "byte") == 0)))
            return MOSAIC_EFORMAT;
        *scale = num.scale / den.scale;
        return 0;
    case MOSAIC_DIM_BYTES_RATE:
        if (!num_byte || !has_den || !den_time)
            return MOSAIC_EFORMAT;
        *scale = num.scale / den.scale;
        return 0;
    case MOSAIC_DIM_COUNT_RATE:
        if (!num.base || num_time || num_byte || !has_den || !den_time)
            return MOSAIC_EFORMAT;
        *scale = num.scale / den.scale;
        return 0;
    case MOSAIC_DIM_COUNT:
        if (!num.base || num_time || num_byte)
            return MOSAIC_EFORMAT;
        if (has_den && (!den.base || den_time))
            return MOSAIC_EFORMAT;
        *scale = num.scale / den.scale;
        return 0;
    case MOSAIC_DIM_PCT:
        if (unit[0] != '\0')
            return MOSAIC_EFORMAT;
        *scale = 1.0;
        return 0;
    case MOSAIC_DIM_RATIO:
        /* "", "warp", "inst/cycle", "warp/cycle": plain numbers. */
        if (!num.base || num_time || num_byte || den_time ||
            (has_den && !den.base))
            return MOSAIC_EFORMAT;
        *scale = num.scale / den.scale;
        return 0;
    }
    return MOSAIC_EFORMAT;
}

int mosaic_ncu_parse_dim3(const char *s, int64_t out[3])
{
    const char *p = s;

    while (*p == ' ')
        p++;
    if (*p++ != '(')
        return MOSAIC_EFORMAT;
    for (int i = 0; i < 3; i++) {
        char *end;
        while (*p == ' ')
            p++;
        if (!isdigit((unsigned char)*p))
            return MOSAIC_EFORMAT;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno == ERANGE || v == 0 || v > 0x7fffffffULL)
            return MOSAIC_EFORMAT;
        out[i] = (int64_t)v;
        p = end;
        while (*p == ' ')
            p++;
        if (*p++ != (i < 2 ? ',' : ')'))
            return MOSAIC_EFORMAT;
    }
    while (*p == ' ')
        p++;
    return *p == '\0' ? 0 : MOSAIC_EFORMAT;
}

const char *mosaic_ncu_metric_list(void)
{
    static char list[4096];

    if (!list[0]) {
        size_t n = 0;
        for (int i = 0; i < MOSAIC_N_METRICS; i++)
            n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
                                  i ? "," : "", mosaic_metric_name(i));
        snprintf(list + n, sizeof(list) - n,
                 ",launch__registers_per_thread,"
                 "launch__shared_mem_per_block_static,"
                 "launch__shared_mem_per_block_dynamic,"
                 "launch__occupancy_limit_blocks,"
                 "launch__occupancy_limit_registers,"
                 "launch__occupancy_limit_shared_mem,"
                 "launch__occupancy_limit_warps,"
                 "device__attribute_multiprocessor_count,"
                 "device__attribute_l2_cache_size,"
                 "device__attribute_display_name");
    }
    return list;
}

/* ---- CSV rows -------------------------------------------------------- */

struct row {
    char **f;
    size_t n, cap;
    int rows_ended; /* end-of-row callbacks seen on this line */
    int oom;
    int too_many;
};

static void row_clear(struct row *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->f[i]);
    r->n = 0;
    r->rows_ended = 0;
    r->oom = r->too_many = 0;
}

static void row_free(struct row *r)
{
    row_clear(r);
    free(r->f);
    r->f = NULL;
    r->cap = 0;
}

static void on_field(void *s, size_t len, void *data)
{
    struct row *r = data;
    char *copy;

    if (r->oom || r->too_many)
        return;
    if (r->n >= MAX_FIELDS) {
        r->too_many = 1;
        return;
    }
    if (r->n == r->cap) {
        size_t ncap = r->cap ? 2 * r->cap : 64;
        char **nf = realloc(r->f, ncap * sizeof(*nf));
        if (!nf) {
            r->oom = 1;
            return;
        }
        r->f = nf;
        r->cap = ncap;
    }
    copy = malloc(len + 1);
    if (!copy) {
        r->oom = 1;
        return;
    }
    if (len)
        memcpy(copy, s, len);
    copy[len] = '\0';
    r->f[r->n++] = copy;
}

static void on_row(int c, void *data)
{
    (void)c;
    ((struct row *)data)->rows_ended++;
}

struct importer {
    FILE *in;
    const char *name;
    char *err;
    size_t errlen;
    long lineno;
    char *line;
    size_t linecap;
    struct csv_parser csv;
    struct row row;
    int code; /* the MOSAIC_E* code of the failure reported in err */
};

/* Reports "name:line: message" (or "name: message" for line 0) through the
 * core's error helper, remembers the code for the callers that pass the
 * failure on, and returns it. */
__attribute__((format(printf, 4, 5))) static int ifail_code(struct importer *im,
                                                             int code, long line,
                                                             const char *fmt, ...)
{
    char msg[768], where[512];
    va_list ap;

    va_start(ap, fmt);
    if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
        msg[0] = '\0';
    va_end(ap);
    if (line <= 0 || snprintf(where, sizeof(where), "%s:%ld", im->name, line) < 0)
        snprintf(where, sizeof(where), "%s", im->name);
    im->code = code;
    return mosaic__errf(im->err, im->errlen, code, where, NULL, "%s", msg);
}

#define ifail(im, line, ...) ifail_code((im), MOSAIC_EFORMAT, (line), __VA_ARGS__)
#define inomem(im, line) ifail_code((im), MOSAIC_ENOMEM, (line), "out of memory")

/* Reads the next physical line. 1: got one; 0: EOF; a negative code: an
 * error. The line is read a byte at a time into a buffer that never grows
 * past MAX_LINE_BYTES, so a file with one endless line (a binary file, a
 * stream that never sends a newline) is refused after MAX_LINE_BYTES bytes
 * instead of being held in memory whole, as getline would. */
static int next_line(struct importer *im, size_t *lenp)
{
    size_t n = 0;
    int c, nul = 0;

    for (;;) {
        c = getc_unlocked(im->in);
        if (c == EOF)
            break;
        if (n >= (size_t)MAX_LINE_BYTES)
            return ifail(im, im->lineno + 1, "line longer than %ld bytes "
                         "(reading stopped there): not ncu CSV output; %s",
                         MAX_LINE_BYTES, FIX_EXPORT);
        if (n + 2 > im->linecap) {
            /* Doubling from 4 KiB, capped at the limit and its NUL. */
            size_t ncap = im->linecap ? 2 * im->linecap : 4096;
            if (ncap > (size_t)MAX_LINE_BYTES + 1)
                ncap = (size_t)MAX_LINE_BYTES + 1;
            char *nl = realloc(im->line, ncap);
            if (!nl)
                return inomem(im, im->lineno + 1);
            im->line = nl;
            im->linecap = ncap;
        }
        im->line[n++] = (char)c;
        nul |= c == '\0';
        if (c == '\n')
            break;
    }
    if (c == EOF && ferror(im->in))
        return ifail_code(im, MOSAIC_EIO, im->lineno + 1, "read error: %s",
                          strerror(errno));
    if (n == 0)
        return 0;
    im->line[n] = '\0';
    im->lineno++;
    if (nul)
        return ifail(im, im->lineno, "contains a NUL byte: this is a binary "
                     "file, not ncu CSV (was an .ncu-rep report given? "
                     "convert it with ncu --import X.ncu-rep --csv --page raw)");
    while (n > 0 && (im->line[n - 1] == '\n' || im->line[n - 1] == '\r'))
        im->line[--n] = '\0';
    *lenp = n;
    return 1;
}

/* Splits the current line into im->row. 0 or -1. */
static int split_line(struct importer *im, size_t len)
{
    size_t done;

    row_clear(&im->row);
    done = csv_parse(&im->csv, im->line, len, on_field, on_row, &im->row);
    if (done != len) {
        int e = csv_error(&im->csv);
        csv_fini(&im->csv, NULL, NULL, NULL);
        return ifail(im, im->lineno, "malformed CSV near byte %zu (%s): a "
                     "quote inside a field or text after a closing quote; the "
                     "file is damaged or not ncu CSV output",
                     done + 1, csv_strerror(e));
    }
    if (csv_fini(&im->csv, on_field, on_row, &im->row) != 0)
        return ifail(im, im->lineno, "unterminated quoted field: the line is "
                     "cut short (truncated file?)");
    if (im->row.oom)
        return inomem(im, im->lineno);
    if (im->row.too_many)
        return ifail(im, im->lineno, "more than %d fields: not ncu CSV output",
                     MAX_FIELDS);
    if (im->row.rows_ended > 1)
        return ifail(im, im->lineno, "more than one CSV row on one line");
    return 0;
}

static int is_noise(const char *line)
{
    return strncmp(line, "==", 2) == 0;
}

/* ---- columns --------------------------------------------------------- */

enum col_id {
    C_ID, C_KERNEL, C_GRID, C_BLOCK, C_DEVICE, C_CC,
    C_REGS, C_SMEM_STATIC, C_SMEM_DYN,
    C_OCC_BLOCKS, C_OCC_REGS, C_OCC_SMEM, C_OCC_WARPS,
    C_DEV_NAME, C_DEV_SMS, C_DEV_L2,
    C_N
};

/* Each column may go by a human name (details-page label) or a metric name. */
static const char *const col_names[C_N][3] = {
    [C_ID] = {"ID", NULL, NULL},
    [C_KERNEL] = {"Kernel Name", "Function Name", NULL},
    [C_GRID] = {"Grid Size", NULL, NULL},
    [C_BLOCK] = {"Block Size", NULL, NULL},
    [C_DEVICE] = {"Device", NULL, NULL},
    [C_CC] = {"CC", NULL, NULL},
    [C_REGS] = {"launch__registers_per_thread", "Registers Per Thread", NULL},
    [C_SMEM_STATIC] = {"launch__shared_mem_per_block_static",
                       "Static Shared Memory Per Block", NULL},
    [C_SMEM_DYN] = {"launch__shared_mem_per_block_dynamic",
                    "Dynamic Shared Memory Per Block", NULL},
    [C_OCC_BLOCKS] = {"launch__occupancy_limit_blocks", "Block Limit SM", NULL},
    [C_OCC_REGS] = {"launch__occupancy_limit_registers",
                    "Block Limit Registers", NULL},
    [C_OCC_SMEM] = {"launch__occupancy_limit_shared_mem",
                    "Block Limit Shared Mem", NULL},
    [C_OCC_WARPS] = {"launch__occupancy_limit_warps", "Block Limit Warps", NULL},
    [C_DEV_NAME] = {"device__attribute_display_name", NULL, NULL},
    [C_DEV_SMS] = {"device__attribute_multiprocessor_count", NULL, NULL},
    [C_DEV_L2] = {"device__attribute_l2_cache_size", NULL, NULL},
};

struct layout {
    size_t ncols;
    long col[C_N];                /* -1: absent */
    long mcol[MOSAIC_N_METRICS];  /* -1: absent */
    double mscale[MOSAIC_N_METRICS];
    double scale_smem_static, scale_smem_dyn, scale_l2;
};

static int find_columns(struct importer *im, struct layout *L,
                        struct mosaic_profile *p)
{
    struct row *r = &im->row;

    L->ncols = r->n;
    for (int c = 0; c < C_N; c++)
        L->col[c] = -1;
    for (int m = 0; m < MOSAIC_N_METRICS; m++)
        L->mcol[m] = -1;
    for (size_t i = 0; i < r->n; i++) {
        const char *h = r->f[i];
        if (strcmp(h, "Metric Name") == 0 || strcmp(h, "Metric Value") == 0)
            return ifail(im, im->lineno, "this is ncu's details page (one row "
                         "per metric, column \"%s\"); %s", h, FIX_EXPORT);
        for (int c = 0; c < C_N; c++) {
            for (int a = 0; a < 3 && col_names[c][a]; a++) {
                if (strcmp(h, col_names[c][a]) != 0)
                    continue;
                if (L->col[c] >= 0)
                    return ifail(im, im->lineno, "column \"%s\" appears twice "
                                 "(columns %ld and %zu): the header is damaged",
                                 h, L->col[c] + 1, i + 1);
                L->col[c] = (long)i;
            }
        }
        int m = mosaic_metric_by_name(h);
        if (m >= 0) {
            if (L->mcol[m] >= 0)
                return ifail(im, im->lineno, "column \"%s\" appears twice "
                             "(columns %ld and %zu): the header is damaged", h,
                             L->mcol[m] + 1, i + 1);
            L->mcol[m] = (long)i;
        }
    }
    if (L->col[C_KERNEL] < 0)
        return ifail(im, im->lineno, "no \"Kernel Name\" column: not ncu "
                     "--csv --page raw output; %s", FIX_EXPORT);
    if (L->col[C_GRID] < 0 || L->col[C_BLOCK] < 0)
        return ifail(im, im->lineno, "no \"Grid Size\"/\"Block Size\" "
                     "columns: not ncu --csv --page raw output; %s",
                     FIX_EXPORT);
    for (int m = 0; m < MOSAIC_N_METRICS; m++)
        if (L->mcol[m] < 0 &&
            mosaic_profile_add_problem(p, "ncu CSV has no column %s (feature "
                                       "%s): re-run ncu with --metrics "
                                       "$(mosaic-profile ncu-metrics)",
                                       mosaic_metric_name(m),
                                       mosaic_metric_key(m)) != 0)
            return inomem(im, 0);
    if (L->col[C_SMEM_DYN] < 0 &&
        mosaic_profile_add_problem(p, "ncu CSV has no dynamic shared memory "
                                   "column (launch__shared_mem_per_block_"
                                   "dynamic): kernel keys assume 0 bytes; "
                                   "re-run ncu with --metrics $(mosaic-profile "
                                   "ncu-metrics)") != 0)
        return inomem(im, 0);
    return 0;
}

static int unit_scale_or_fail(struct importer *im, const struct row *units,
                              long col, enum mosaic_dim dim, const char *what,
                              double *scale)
{
    const char *u = units->f[col];

    /* Device attributes carry no unit (device__attribute_l2_cache_size is
     * "" in ncu 2025.3): a plain number in the base unit. */
    if (u[0] == '\0' && dim == MOSAIC_DIM_BYTES) {
        *scale = 1.0;
        return 0;
    }
    if (mosaic_ncu_unit_scale(u, dim, scale) != 0)
        return ifail(im, im->lineno, "column %ld (%s): unit \"%s\" cannot be "
                     "converted to %s; re-export with ncu --print-units base, "
                     "or report the unit", col + 1, what, u,
                     dim == MOSAIC_DIM_TIME_NS      ? "nanoseconds"
                     : dim == MOSAIC_DIM_BYTES      ? "bytes"
                     : dim == MOSAIC_DIM_BYTES_RATE ? "bytes/second"
                     : dim == MOSAIC_DIM_COUNT_RATE ? "a count per second"
                     : dim == MOSAIC_DIM_PCT        ? "a percentage"
                                                    : "a count or ratio");
    return 0;
}

static int read_units(struct importer *im, struct layout *L)
{
    struct row *u = &im->row;

    if (u->n != L->ncols)
        return ifail(im, im->lineno, "the units line has %zu fields but the "
                     "header has %zu; the file is damaged or not ncu --csv "
                     "--page raw output", u->n, L->ncols);
    if (L->col[C_ID] >= 0 && u->f[L->col[C_ID]][0] != '\0')
        return ifail(im, im->lineno, "expected the units line (the second "
                     "line of ncu --csv --page raw output) but found a data "
                     "row (ID \"%s\"); %s", u->f[L->col[C_ID]], FIX_EXPORT);
    for (int m = 0; m < MOSAIC_N_METRICS; m++)
        if (L->mcol[m] >= 0 &&
            unit_scale_or_fail(im, u, L->mcol[m], mosaic_metric_dim(m),
                               mosaic_metric_name(m), &L->mscale[m]) != 0)
            return im->code;
    L->scale_smem_static = L->scale_smem_dyn = L->scale_l2 = 1.0;
    if (L->col[C_SMEM_STATIC] >= 0 &&
        unit_scale_or_fail(im, u, L->col[C_SMEM_STATIC], MOSAIC_DIM_BYTES,
                           "static shared memory", &L->scale_smem_static) != 0)
        return im->code;
    if (L->col[C_SMEM_DYN] >= 0 &&
        unit_scale_or_fail(im, u, L->col[C_SMEM_DYN], MOSAIC_DIM_BYTES,
                           "dynamic shared memory", &L->scale_smem_dyn) != 0)
        return im->code;
    if (L->col[C_DEV_L2] >= 0 &&
        unit_scale_or_fail(im, u, L->col[C_DEV_L2], MOSAIC_DIM_BYTES,
                           "L2 size", &L->scale_l2) != 0)
        return im->code;
    return 0;
}

/* An integer launch attribute; absent column -> MOSAIC_NULL. */
static int row_int(struct importer *im, const struct layout *L, int c,
                   double scale, int64_t *out)
{
    double v;

    *out = MOSAIC_NULL;
    if (L->col[c] < 0)
        return 0;
    const char *s = im->row.f[L->col[c]];
    int rc = mosaic_ncu_parse_number(s, &v);
    if (rc < 0)
        return ifail(im, im->lineno, "column %ld (%s): \"%.40s\" is not a "
                     "number", L->col[c] + 1, col_names[c][0], s);
    if (rc == 1)
        return 0;
    v *= scale;
    if (v < 0 || v > 9.0e15)
        return ifail(im, im->lineno, "column %ld (%s): %g is out of range",
                     L->col[c] + 1, col_names[c][0], v);
    *out = (int64_t)llround(v);
    return 0;
}

static int64_t min4(const int64_t v[4])
{
    int64_t m = INT64_MAX;

    for (int i = 0; i < 4; i++) {
        if (v[i] == MOSAIC_NULL)
            return MOSAIC_NULL;
        if (v[i] < m)
            m = v[i];
    }
    return m;
}

static int read_row(struct importer *im, const struct layout *L,
                    struct mosaic_profile *p, struct mosaic_kindex *ix)
{
    struct row *r = &im->row;
    int64_t grid[3], block[3], dyn = 0;
    const char *name;

    if (r->n != L->ncols)
        return ifail(im, im->lineno, "row has %zu fields but the header has "
                     "%zu: the file is truncated or damaged; %s", r->n,
                     L->ncols, FIX_EXPORT);
    name = r->f[L->col[C_KERNEL]];
    if (name[0] == '\0')
        return ifail(im, im->lineno, "empty kernel name (column %ld)",
                     L->col[C_KERNEL] + 1);
    if (mosaic_ncu_parse_dim3(r->f[L->col[C_GRID]], grid) != 0)
        return ifail(im, im->lineno, "column %ld (Grid Size): \"%.40s\" is "
                     "not \"(x, y, z)\" with positive integers",
                     L->col[C_GRID] + 1, r->f[L->col[C_GRID]]);
    if (mosaic_ncu_parse_dim3(r->f[L->col[C_BLOCK]], block) != 0)
        return ifail(im, im->lineno, "column %ld (Block Size): \"%.40s\" is "
                     "not \"(x, y, z)\" with positive integers",
                     L->col[C_BLOCK] + 1, r->f[L->col[C_BLOCK]]);
    /* Checked products: each dimension may be up to 2^31-1 here, and their
     * product overflowed int64_t (UBSan) before it was compared. */
    int64_t threads, blocks;
    if (mosaic_launch_blocks(block, &threads) != 0 || threads > 1024)
        return ifail(im, im->lineno, "column %ld (Block Size): \"%.40s\" is "
                     "more than 1024 threads per block, more than any GPU "
                     "allows", L->col[C_BLOCK] + 1, r->f[L->col[C_BLOCK]]);
    if (block[2] > 64)
        return ifail(im, im->lineno, "column %ld (Block Size): z = %lld is "
                     "more than CUDA's 64", L->col[C_BLOCK] + 1,
                     (long long)block[2]);
    if (grid[1] > 65535 || grid[2] > 65535 ||
        mosaic_launch_blocks(grid, &blocks) != 0)
        return ifail(im, im->lineno, "column %ld (Grid Size): \"%.40s\" is "
                     "outside CUDA's grid limits (x up to 2147483647, y and z "
                     "up to 65535)", L->col[C_GRID] + 1, r->f[L->col[C_GRID]]);
    if (row_int(im, L, C_SMEM_DYN, L->scale_smem_dyn, &dyn) != 0)
        return im->code;
    if (dyn == MOSAIC_NULL)
        dyn = 0;

    /* Every value of every row is checked, also rows that repeat a key. */
    struct mosaic_kernel t;
    mosaic_kernel_init(&t);
    memcpy(t.grid, grid, sizeof(grid));
    memcpy(t.block, block, sizeof(block));
    t.dyn_smem = dyn;
    t.launches = 1;
    if (row_int(im, L, C_REGS, 1.0, &t.regs) ||
        row_int(im, L, C_SMEM_STATIC, L->scale_smem_static, &t.static_smem))
        return im->code;
    int64_t lim[4], sms, l2;
    if (row_int(im, L, C_OCC_BLOCKS, 1.0, &lim[0]) ||
        row_int(im, L, C_OCC_REGS, 1.0, &lim[1]) ||
        row_int(im, L, C_OCC_SMEM, 1.0, &lim[2]) ||
        row_int(im, L, C_OCC_WARPS, 1.0, &lim[3]) ||
        row_int(im, L, C_DEV_SMS, 1.0, &sms) ||
        row_int(im, L, C_DEV_L2, L->scale_l2, &l2))
        return im->code;
    if (sms != MOSAIC_NULL && (sms < 1 || sms > MOSAIC_GPU_MAX_SMS))
        return ifail(im, im->lineno, "column %ld (%s): %lld SMs is not a "
                     "GPU's (1..%d): the file is damaged", L->col[C_DEV_SMS] + 1,
                     col_names[C_DEV_SMS][0], (long long)sms, MOSAIC_GPU_MAX_SMS);
    t.occ.limit_blocks = lim[0];
    t.occ.limit_regs = lim[1];
    t.occ.limit_smem = lim[2];
    t.occ.limit_threads = lim[3];
    t.occ.blocks_per_sm = min4(lim);
    for (int m = 0; m < MOSAIC_N_METRICS; m++) {
        if (L->mcol[m] < 0)
            continue;
        double v;
        const char *s = r->f[L->mcol[m]];
        int rc = mosaic_ncu_parse_number(s, &v);
        if (rc < 0)
            return ifail(im, im->lineno, "column %ld (%s): \"%.40s\" is not "
                         "a number", L->mcol[m] + 1, mosaic_metric_name(m), s);
        t.metrics[m] = rc == 1 ? NAN : v * L->mscale[m];
    }
    mosaic_kernel_derive(&t);

    /* GPU facts, from the first row that has them. */
    if (!p->gpu.name && L->col[C_DEV_NAME] >= 0 && r->f[L->col[C_DEV_NAME]][0] &&
        mosaic_set_str(&p->gpu.name, r->f[L->col[C_DEV_NAME]]) != 0)
        return inomem(im, 0);
    if (!p->gpu.cc && L->col[C_CC] >= 0 && r->f[L->col[C_CC]][0] &&
        mosaic_set_str(&p->gpu.cc, r->f[L->col[C_CC]]) != 0)
        return inomem(im, 0);
    if (p->gpu.sm_count == MOSAIC_NULL)
        p->gpu.sm_count = sms;
    if (p->gpu.l2_bytes == MOSAIC_NULL)
        p->gpu.l2_bytes = l2;

    char *key = mosaic_kernel_key(name, grid, block, dyn);
    if (!key)
        return inomem(im, 0);
    long found = mosaic_kindex_find(ix, p, key);
    if (found >= 0) {
        /* A later launch of a known key: counted; the first launch's
         * values are kept. */
        p->kernels[found].launches++;
        free(key);
        return 0;
    }
    if (p->n_kernels >= MAX_KERNELS) {
        free(key);
        return ifail(im, im->lineno, "more than %d distinct kernels",
                     MAX_KERNELS);
    }
    t.key = key;
    if (!(t.name = strdup(name))) {
        free(key);
        return inomem(im, 0);
    }
    struct mosaic_kernel *k = mosaic_profile_add_kernel(p);
    if (!k) {
        mosaic_kernel_free(&t);
        return inomem(im, 0);
    }
    *k = t;

    if (mosaic_kindex_add(ix, p, p->n_kernels - 1) != 0)
        return inomem(im, 0);
    return 0;
}

int mosaic_ncu_import_stream(FILE *f, const char *name,
                             struct mosaic_profile *p, char *err,
                             size_t errlen)
{
    struct importer im = {.in = f, .name = name ? name : "<csv>", .err = err,
                          .errlen = errlen};
    struct layout L;
    struct mosaic_kindex ix = {NULL, 0};
    size_t len = 0;
    int rc, state = 0; /* 0: before header, 1: units next, 2: rows */
    int locked = 0;
    long header_line = 0;

    mosaic_profile_init(p);
    im.code = MOSAIC_EFORMAT;
    if (csv_init(&im.csv, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0)
        return inomem(&im, 0);
    memset(&L, 0, sizeof(L));

    /* One thread reads the stream: lock it once for getc_unlocked. */
    flockfile(f);
    locked = 1;
    while ((rc = next_line(&im, &len)) == 1) {
        if (state == 0) {
            /* The header is the first line whose first field is "ID" or
             * that names a "Kernel Name" column; anything before it is the
             * program's own output. */
            if (strncmp(im.line, "\"ID\"", 4) != 0 &&
                strstr(im.line, "\"Kernel Name\"") == NULL)
                continue;
            if (split_line(&im, len) != 0 || find_columns(&im, &L, p) != 0)
                goto fail;
            header_line = im.lineno;
            state = 1;
            continue;
        }
        if (len == 0 || is_noise(im.line))
            continue;
        if (split_line(&im, len) != 0)
            goto fail;
        if (state == 1) {
            if (read_units(&im, &L) != 0)
                goto fail;
            state = 2;
            continue;
        }
        if (read_row(&im, &L, p, &ix) != 0)
            goto fail;
    }
    funlockfile(f);
    locked = 0;
    if (rc < 0)
        goto fail;
    if (state == 0) {
        if (im.lineno == 0)
            ifail(&im, 0, "empty file; %s", FIX_EXPORT);
        else
            ifail(&im, 0, "no ncu CSV header (a line starting with \"ID\" "
                  "and naming a \"Kernel Name\" column) in %ld lines; %s",
                  im.lineno, FIX_EXPORT);
        goto fail;
    }
    if (state == 1) {
        ifail(&im, header_line, "the file ends after the header: no units "
              "line and no kernel rows (truncated?)");
        goto fail;
    }
    if (mosaic_set_str(&p->method, MOSAIC_METHOD_NCU) != 0 ||
        mosaic_set_str(&p->source, im.name) != 0) {
        inomem(&im, 0);
        goto fail;
    }
    {
        char date[32];
        mosaic_now_iso8601(date);
        if (mosaic_set_str(&p->date, date) != 0) {
            inomem(&im, 0);
            goto fail;
        }
    }
    p->complete = p->n_problems == 0;
    csv_free(&im.csv);
    row_free(&im.row);
    free(im.line);
    mosaic_kindex_free(&ix);
    return 0;
fail:
    if (locked)
        funlockfile(f);
    csv_free(&im.csv);
    row_free(&im.row);
    free(im.line);
    mosaic_kindex_free(&ix);
    mosaic_profile_free(p);
    return im.code;
}

int mosaic_ncu_import(const char *path, struct mosaic_profile *p, char *err,
                      size_t errlen)
{
    int fd = mosaic__open_regular(path, err, errlen);
    FILE *f;
    int rc;

    if (fd < 0) {
        mosaic_profile_init(p);
        return fd;
    }
    f = fdopen(fd, "r");
    if (!f) {
        rc = mosaic__errf(err, errlen, errno == ENOMEM ? MOSAIC_ENOMEM : MOSAIC_EIO,
                          path, NULL, "cannot open: %s", strerror(errno));
        close(fd);
        mosaic_profile_init(p);
        return rc;
    }
    rc = mosaic_ncu_import_stream(f, path, p, err, errlen);
    fclose(f);
    return rc;
}
