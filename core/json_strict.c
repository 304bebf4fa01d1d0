/*
 * The strict JSON reader (core/json.h): a lexical pass over the text, then
 * cJSON, then a walk of the tree for duplicate keys.
 *
 * Why a pass of our own before cJSON: cJSON accepts things a JSON reader
 * must not (a raw control byte counts as white space, a raw control byte
 * or ill-formed UTF-8 inside a string is copied through, \u0000 silently
 * ends a C string), and it recurses up to depth 1000. The pass is one loop
 * over the bytes that only tracks whether it is inside a string, so it
 * settles all of these, with a line and column, before cJSON builds a tree.
 * cJSON stays the parser of the grammar: a second parser here would be one
 * more thing to get wrong.
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "json.h"

/* Where a byte offset lies. line_base > 0 means a JSON Lines record: the
 * line is the record's own and messages give only the column. */
struct where {
    const char *path;
    long line_base; /* 0: a whole document */
};

struct pos {
    long line, col;
};

static struct pos pos_at(const char *text, size_t off)
{
    struct pos p = {1, 1};

    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            p.line++;
            p.col = 1;
        } else {
            p.col++;
        }
    }
    return p;
}

/* "path: not valid JSON at line L, column C: msg" for a document,
 * "path: not valid JSON at column C: msg" for a JSON Lines record (path is
 * then already "file:LINE"). */
__attribute__((format(printf, 5, 6))) static int fail_at(const struct where *w,
                                                        char *err, size_t errlen,
                                                        struct pos p,
                                                        const char *fmt, ...)
{
    char msg[640];
    va_list ap;

    va_start(ap, fmt);
    if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
        msg[0] = '\0';
    va_end(ap);
    if (w->line_base > 0)
        return mosaic__errf(err, errlen, MOSAIC_EFORMAT, w->path, NULL,
                            "not valid JSON at column %ld: %s", p.col, msg);
    return mosaic__errf(err, errlen, MOSAIC_EFORMAT, w->path, NULL,
                        "not valid JSON at line %ld, column %ld: %s", p.line,
                        p.col, msg);
}

/* The lexical pass: NUL bytes, control bytes, \u0000, UTF-8 in strings,
 * nesting depth. Brackets inside strings do not count. */
static int prescan(const struct where *w, const char *text, size_t len,
                   int *open_at_end, char *err, size_t errlen)
{
    int depth = 0, in_str = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];

        if (c == '\0')
            return fail_at(w, err, errlen, pos_at(text, i),
                           "a NUL byte: this is not a text file (or it was "
                           "damaged); write it again");
        if (in_str) {
            if (c == '"') {
                in_str = 0;
            } else if (c == '\\') {
                if (i + 1 >= len)
                    continue; /* cJSON reports the unterminated string */
                if (text[i + 1] == 'u' && i + 5 < len &&
                    memcmp(text + i + 2, "0000", 4) == 0)
                    return fail_at(w, err, errlen, pos_at(text, i),
                                   "\\u0000 in a string: a NUL character "
                                   "would cut the string short; remove it");
                if (text[i + 1] == '\0')
                    return fail_at(w, err, errlen, pos_at(text, i + 1),
                                   "a NUL byte: this is not a text file (or "
                                   "it was damaged); write it again");
                i++; /* the escaped character, whatever it is */
            } else if (c < 0x20) {
                return fail_at(w, err, errlen, pos_at(text, i),
                               "control character 0x%02x inside a string: "
                               "JSON requires it escaped (\\n, \\t, \\u00XX)",
                               c);
            } else if (c >= 0x80) {
                int n = mosaic__utf8_seq_len(text + i, len - i);
                if (n == 0)
                    return fail_at(w, err, errlen, pos_at(text, i),
                                   "byte 0x%02x is not valid UTF-8 inside a "
                                   "string: save the file as UTF-8", c);
                i += (size_t)n - 1;
            }
            continue;
        }
        switch (c) {
        case '"':
            in_str = 1;
            break;
        case '{':
        case '[':
            if (++depth > MOSAIC__JSON_MAX_DEPTH)
                return fail_at(w, err, errlen, pos_at(text, i),
                               "arrays and objects nested deeper than %d "
                               "levels: no document of this project is; the "
                               "file is not one of its inputs",
                               MOSAIC__JSON_MAX_DEPTH);
            break;
        case '}':
        case ']':
            if (depth > 0)
                depth--;
            break;
        case ' ':
        case '\t':
        case '\n':
        case '\r':
            break;
        default:
            if (c < 0x20)
                return fail_at(w, err, errlen, pos_at(text, i),
                               "control character 0x%02x outside a string: "
                               "only space, tab, CR and LF may separate "
                               "values", c);
            break;
        }
    }
    /* Arrays, objects or a string still open: what cJSON then fails on is
     * the end of the text, not a wrong character. */
    *open_at_end = depth > 0 || in_str;
    return 0;
}

/* A key path being built: "kernels[3].metrics". The buffer is generous;
 * a path that still does not fit is cut and ends in "...". */
struct kpath {
    char buf[1024];
    size_t len;
};

/* Takes the snprintf result n of an append at k->len and returns the
 * length before it, for kpath_pop. */
static size_t kpath_took(struct kpath *k, int n)
{
    size_t old = k->len, room = sizeof(k->buf) - k->len;

    if (n < 0) {
        k->buf[old] = '\0';
    } else if ((size_t)n >= room) {
        /* Cut: mark it, so that a reader of the message knows. */
        memcpy(k->buf + sizeof(k->buf) - 4, "...", 4);
        k->len = sizeof(k->buf) - 1;
    } else {
        k->len += (size_t)n;
    }
    return old;
}

/* Appends ".key" ("key" at the top); a very long key is cut at 120 bytes. */
static size_t kpath_key(struct kpath *k, const char *key)
{
    return kpath_took(k, snprintf(k->buf + k->len, sizeof(k->buf) - k->len,
                                  "%s%.120s", k->len ? "." : "", key));
}

static size_t kpath_index(struct kpath *k, size_t idx)
{
    return kpath_took(k, snprintf(k->buf + k->len, sizeof(k->buf) - k->len,
                                  "[%zu]", idx));
}

static void kpath_pop(struct kpath *k, size_t old)
{
    k->len = old;
    k->buf[old] = '\0';
}

static int cmp_names(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

    return strcmp(x->string, y->string);
}

static int dup_found(const struct where *w, struct kpath *k, const char *key,
                     char *err, size_t errlen)
{
    size_t old = kpath_key(k, key);
    int rc = mosaic__errf(err, errlen, MOSAIC_EFORMAT, w->path, k->buf,
                          "the key appears twice in one object: JSON readers "
                          "disagree on which value counts (this one would "
                          "take the first, Python's json the last); keep one");

    kpath_pop(k, old);
    return rc;
}

/* Finds the first duplicate key among the members of obj (n of them).
 * Few members: compare each pair; many: sort pointers to them, so that an
 * object of a million keys costs n log n, not n^2. */
static int object_dups(const struct where *w, struct kpath *k, const cJSON *obj,
                       size_t n, char *err, size_t errlen)
{
    if (n < 2)
        return 0;
    if (n <= 16) {
        for (const cJSON *a = obj->child; a; a = a->next)
            for (const cJSON *b = a->next; b; b = b->next)
                if (strcmp(a->string, b->string) == 0)
                    return dup_found(w, k, a->string, err, errlen);
        return 0;
    }
    const cJSON **v = malloc(n * sizeof(*v));
    size_t i = 0;
    int rc = 0;

    if (!v)
        return mosaic__errf(err, errlen, MOSAIC_ENOMEM, w->path, k->buf,
                            "out of memory (checking %zu keys)", n);
    for (const cJSON *a = obj->child; a; a = a->next)
        v[i++] = a;
    qsort(v, n, sizeof(*v), cmp_names);
    for (i = 1; i < n; i++)
        if (strcmp(v[i - 1]->string, v[i]->string) == 0) {
            rc = dup_found(w, k, v[i]->string, err, errlen);
            break;
        }
    free(v);
    return rc;
}

/* Depth is bounded by the lexical pass, so this recursion is too. */
static int walk(const struct where *w, struct kpath *k, const cJSON *node,
                char *err, size_t errlen)
{
    size_t n = 0, idx = 0;
    int rc;

    if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
        return 0;
    for (const cJSON *c = node->child; c; c = c->next)
        n++;
    if (cJSON_IsObject(node) &&
        (rc = object_dups(w, k, node, n, err, errlen)) != 0)
        return rc;
    for (const cJSON *c = node->child; c; c = c->next, idx++) {
        size_t old;
        old = cJSON_IsObject(node) ? kpath_key(k, c->string)
                                   : kpath_index(k, idx);
        rc = walk(w, k, c, err, errlen);
        kpath_pop(k, old);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Whether text[at..len) is at most one token that the end of the text cut
 * short (a number, a literal, a string never closed): no structural
 * character outside a string. cJSON puts the error of a text cut inside a
 * token at the token's start. */
static int only_last_token(const char *text, size_t at, size_t len)
{
    int in_str = 0;

    for (size_t i = at; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (strchr(",:{}[]", c)) {
            return 0;
        }
    }
    return 1;
}

/* How much of the text at a position a message quotes: at most 16 bytes,
 * and never past the end (the text need not end in NUL). */
static int snip(size_t left)
{
    return left < 16 ? (int)left : 16;
}

static int parse_doc(const struct where *w, const char *text, size_t len,
                     cJSON **out, char *err, size_t errlen)
{
    const char *end = NULL;
    size_t at, rest;
    cJSON *root;
    int rc, open_at_end = 0;

    *out = NULL;
    if ((rc = prescan(w, text, len, &open_at_end, err, errlen)) != 0)
        return rc;
    for (at = 0; at < len && is_ws(text[at]); at++)
        ;
    if (at == len)
        return mosaic__errf(err, errlen, MOSAIC_EFORMAT, w->path, NULL,
                            "not valid JSON: there is no document, only "
                            "white space (was the file ever written?)");
    root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        /* cJSON puts an error at the end of the text on its last byte, and
         * one inside a token at the token's start. */
        at = end && end >= text && end <= text + len ? (size_t)(end - text) : len;
        for (rest = at; rest < len && is_ws(text[rest]); rest++)
            ;
        if (rest >= len || (open_at_end && (at + 1 >= len ||
                                             only_last_token(text, rest, len))))
            return fail_at(w, err, errlen, pos_at(text, len),
                           "the document ends early: the file is truncated "
                           "(its writer stopped); write it again");
        return fail_at(w, err, errlen, pos_at(text, rest),
                       "unexpected text \"%.*s\"", snip(len - rest),
                       text + rest);
    }
    at = (size_t)(end - text);
    while (at < len && is_ws(text[at]))
        at++;
    if (at < len) {
        cJSON_Delete(root);
        return fail_at(w, err, errlen, pos_at(text, at),
                       "text after the end of the document (\"%.*s\"): a "
                       "file holds one document; was it written twice or "
                       "appended to?", snip(len - at), text + at);
    }
    struct kpath k = {.len = 0};
    k.buf[0] = '\0';
    if ((rc = walk(w, &k, root, err, errlen)) != 0) {
        cJSON_Delete(root);
        return rc;
    }
    *out = root;
    return 0;
}

int mosaic__json_parse_strict(const char *path, const char *text, size_t len,
                              cJSON **out, char *err, size_t errlen)
{
    struct where w = {path ? path : "<input>", 0};

    if (out)
        *out = NULL;
    if (!text || !out)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, w.path, NULL,
                            "no text or no output pointer");
    return parse_doc(&w, text, len, out, err, errlen);
}

int mosaic__json_read_file(const char *path, long max, cJSON **out, char *err,
                           size_t errlen)
{
    char *buf;
    int rc;

    if (out)
        *out = NULL;
    if (!out)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, path, NULL,
                            "no output pointer");
    if ((rc = mosaic__read_file(path, max, &buf, err, errlen)) != 0)
        return rc;
    if (buf[0] == '\0')
        rc = mosaic__errf(err, errlen, MOSAIC_EFORMAT, path, NULL,
                          "the file is empty: it was never written (did its "
                          "writer exit early?)");
    else
        rc = mosaic__json_parse_strict(path, buf, strlen(buf), out, err, errlen);
    free(buf);
    return rc;
}

int mosaic__jsonl_parse_strict(const char *path, const char *text, size_t len,
                               mosaic__jsonl_fn fn, void *ctx, char *err,
                               size_t errlen)
{
    const char *name = path ? path : "<input>";
    size_t start = 0;
    long line = 0;

    if (!text || !fn)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, name, NULL,
                            "no text or no record callback");
    while (start < len) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t stop = nl ? (size_t)(nl - text) : len, at;
        char where[1200];
        struct where w = {where, 0};
        cJSON *doc;
        int rc;

        line++;
        w.line_base = line;
        for (at = start; at < stop && is_ws(text[at]); at++)
            ;
        if (at < stop) {
            /* The path is cut only if it is absurdly long: the message then
             * still names the line. */
            if (snprintf(where, sizeof(where), "%s:%ld", name, line) < 0)
                where[0] = '\0';
            if ((rc = parse_doc(&w, text + start, stop - start, &doc, err,
                                errlen)) != 0)
                return rc;
            rc = fn(ctx, where, line, doc, err, errlen);
            cJSON_Delete(doc);
            if (rc != 0)
                return rc;
        }
        start = stop + 1;
    }
    return 0;
}

int mosaic__jsonl_read_file(const char *path, long max, mosaic__jsonl_fn fn,
                            void *ctx, char *err, size_t errlen)
{
    char *buf;
    int rc;

    if ((rc = mosaic__read_file(path, max, &buf, err, errlen)) != 0)
        return rc;
    rc = mosaic__jsonl_parse_strict(path, buf, strlen(buf), fn, ctx, err, errlen);
    free(buf);
    return rc;
}
