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

#include "zoo_harness.h"
#include "zoo_jsonl.h"

static FILE *g_out;

static struct {
    char *b;
    size_t len, cap;
    int n;
} J;

void j_raw(const char *s, size_t n)
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

/* Length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF) that starts at s, or 0 when the
 * bytes there are not one. s[0] is >= 0x80; the string ends at a NUL, which
 * is never a continuation byte, so the checks stop there. */
static int utf8_len(const unsigned char *s)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    int n, i;

    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4;
    else
        return 0;
    /* The second byte's range is narrower after these leads. */
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

void zoo_json_string(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    j_raw("\"", 1);
    while (*p) {
        unsigned char c = *p;
        int n;

        if (c == '"' || c == '\\') {
            j_raw("\\", 1);
            j_raw((const char *)p, 1);
            p++;
        } else if (c < 0x20) {
            j_fmt("\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            j_raw((const char *)p, 1);
            p++;
        } else if ((n = utf8_len(p)) > 0) {
            j_raw((const char *)p, (size_t)n);
            p += n;
        } else {
            /* A byte that does not start a well-formed sequence (a path or
             * a device name in another encoding, a truncated message)
             * becomes U+FFFD, so that every line stays valid JSON. */
            j_raw("\\ufffd", 6);
            p++;
        }
    }
    j_raw("\"", 1);
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
