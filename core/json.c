/*
 * The JSON string writer (core/json.h): one function turns the next
 * character of the input into its output bytes, and both the FILE* and the
 * buffer form are loops over it, so the two cannot disagree.
 */
#include <stdint.h>
#include <string.h>

#include "core.h"
#include "json.h"

/* Length of the well-formed UTF-8 sequence at s (2..4), or 0 when the
 * sequence is ill-formed (Unicode 15, table 3-7: no overlong forms, no
 * surrogates, nothing above U+10FFFF) or longer than the avail bytes left.
 * s[0] >= 0x80. A NUL byte is never a continuation byte, so on a
 * NUL-terminated string reading stops at its end whatever avail says. */
int mosaic__utf8_seq_len(const char *str, size_t avail)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    int n;
    uint32_t cp;

    if (c >= 0xc2 && c <= 0xdf)
        n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if ((size_t)n > avail)
        return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

/* The output for the character at *p (never the terminating NUL): fills
 * out (at most 6 bytes), returns its length and advances *p. */
static size_t next_piece(const unsigned char **p, char out[8])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char c = **p;
    int n;

    switch (c) {
    case '"':
    case '\\':
        out[0] = '\\', out[1] = (char)c;
        (*p)++;
        return 2;
    case '\n':
        memcpy(out, "\\n", 2);
        (*p)++;
        return 2;
    case '\t':
        memcpy(out, "\\t", 2);
        (*p)++;
        return 2;
    case '\r':
        memcpy(out, "\\r", 2);
        (*p)++;
        return 2;
    default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
        memcpy(out, "\\u00", 4);
        out[4] = hex[c >> 4];
        out[5] = hex[c & 0xf];
        (*p)++;
        return 6;
    }
    if (c < 0x80) {
        out[0] = (char)c;
        (*p)++;
        return 1;
    }
    n = mosaic__utf8_seq_len((const char *)*p, 4);
    if (n == 0) {
        memcpy(out, "\\ufffd", 6);
        (*p)++;
        return 6;
    }
    memcpy(out, *p, (size_t)n);
    *p += n;
    return (size_t)n;
}

int mosaic__json_fputs(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    char piece[8];

    putc('"', f);
    while (*p) {
        size_t n = next_piece(&p, piece);
        if (fwrite(piece, 1, n, f) != n)
            break;
    }
    putc('"', f);
    return ferror(f) ? MOSAIC_EIO : 0;
}

size_t mosaic__json_snprint(char *buf, size_t cap, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    char piece[8];
    size_t need = 0, used = 0;
    int cut = 0;

    /* used: bytes written to buf (without the NUL); need: the full length.
     * Once a piece does not fit, nothing more is written, so a cut lies
     * between pieces. */
#define PUT(src, len)                                             \
    do {                                                          \
        size_t l_ = (len);                                        \
        if (!cut && cap > 0 && used + l_ <= cap - 1) {            \
            memcpy(buf + used, (src), l_);                        \
            used += l_;                                           \
        } else {                                                  \
            cut = 1;                                              \
        }                                                         \
        need += l_;                                               \
    } while (0)

    PUT("\"", 1);
    while (*p) {
        size_t n = next_piece(&p, piece);
        PUT(piece, n);
    }
    PUT("\"", 1);
#undef PUT
    if (cap > 0)
        buf[used] = '\0';
    return need;
}
