/*
 * The zoo's JSON Lines writer: one record at a time is built in a buffer
 * (j_begin, the j_* fields, j_end) and written with one fwrite, so that a
 * record is never interleaved with another or left half written. Every
 * string, keys included, goes through zoo_json_string.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"

static FILE *g_out;

static struct {
    char *b;
    size_t len, cap;
    int n;
} J;

/* Makes room for n more bytes and a NUL. */
static void j_reserve(size_t n)
{
    if (J.len + n + 1 > J.cap) {
        size_t cap = J.cap ? J.cap : 65536;
        char *nb;

        while (J.len + n + 1 > cap)
            cap *= 2;
        nb = (char *)realloc(J.b, cap);
        if (!nb) {
            fprintf(stderr, "mosaic-zoo: out of host memory for output\n");
            _exit(ZOO_EXIT_FATAL);
        }
        J.b = nb;
        J.cap = cap;
    }
}

void j_raw(const char *s, size_t n)
{
    j_reserve(n);
    memcpy(J.b + J.len, s, n);
    J.len += n;
}

void j_fmt(const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        j_raw(tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Strings go through the project's one JSON string writer (core/json.h:
 * valid UTF-8 out whatever the bytes, each ill-formed byte as U+FFFD), so
 * the zoo's records escape exactly as the shim's and the profiles do. */
void zoo_json_string(const char *s)
{
    size_t need = mosaic__json_snprint(NULL, 0, s);

    j_reserve(need);
    mosaic__json_snprint(J.b + J.len, need + 1, s);
    J.len += need;
}

void j_key(const char *k)
{
    if (J.n++)
        j_raw(",", 1);
    zoo_json_string(k);
    j_raw(":", 1);
}

void j_str(const char *k, const char *v)
{
    j_key(k);
    if (v)
        zoo_json_string(v);
    else
        j_raw("null", 4);
}

void j_int(const char *k, long long v)
{
    j_key(k);
    j_fmt("%lld", v);
}

void j_num(const char *k, double v)
{
    j_key(k);
    if (isfinite(v))
        j_fmt("%.4f", v);
    else
        j_raw("null", 4);
}

void j_bool(const char *k, int v)
{
    j_key(k);
    if (v)
        j_raw("true", 4);
    else
        j_raw("false", 5);
}

void j_null(const char *k)
{
    j_key(k);
    j_raw("null", 4);
}

void j_nums(const char *k, const double *a, int n)
{
    int i;

    j_key(k);
    j_raw("[", 1);
    for (i = 0; i < n; i++) {
        if (i)
            j_raw(",", 1);
        if (isfinite(a[i]))
            j_fmt("%.4f", a[i]);
        else
            j_raw("null", 4);
    }
    j_raw("]", 1);
}

void j_ints(const char *k, const int *a, int n)
{
    int i;

    j_key(k);
    j_raw("[", 1);
    for (i = 0; i < n; i++) {
        if (i)
            j_raw(",", 1);
        j_fmt("%d", a[i]);
    }
    j_raw("]", 1);
}

void j_begin(const char *record)
{
    J.len = 0;
    J.n = 0;
    j_raw("{", 1);
    j_str("record", record);
}

void j_end(void)
{
    j_raw("}\n", 2);
    if (fwrite(J.b, 1, J.len, g_out) != J.len)
        fprintf(stderr, "mosaic-zoo: writing output failed: %s\n",
                strerror(errno));
    fflush(g_out);
}

void j_open(FILE *out)
{
    g_out = out;
}

void j_free(void)
{
    free(J.b);
    J.b = NULL;
    J.len = J.cap = 0;
}
