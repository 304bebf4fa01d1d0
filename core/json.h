/*
 * The one JSON string writer. Whatever bytes it is given, what it writes is
 * a valid JSON string literal in valid UTF-8:
 *   - '"' and '\\' are escaped; \n, \t and \r get their short escapes;
 *     every other byte below 0x20, and 0x7f, becomes \u00XX (as the
 *     profile writer always wrote them, so its files do not change);
 *   - a well-formed UTF-8 sequence is copied as it is;
 *   - each byte of an ill-formed sequence (a stray continuation byte, a
 *     truncated sequence, an overlong encoding, a UTF-16 surrogate
 *     U+D800..U+DFFF, a code point above U+10FFFF) becomes \ufffd (U+FFFD,
 *     the replacement character), so a name read from a driver or a file
 *     can never make the document unreadable.
 * Where a whole document is built in memory, cJSON is the better tool; this
 * is for writers that stream (the shim's stats, the profile writer, JSONL).
 * Usable from C++ (the kernel zoo is CUDA C++).
 */
#ifndef MOSAIC_CORE_JSON_H
#define MOSAIC_CORE_JSON_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes s (NULL reads as "") to f as a JSON string literal, quotes
 * included. Returns 0, or MOSAIC_EIO when f reports an error. */
int mosaic__json_fputs(FILE *f, const char *s);

/*
 * Writes s as a JSON string literal, quotes included, into buf (cap bytes,
 * always NUL-terminated when cap > 0), like snprintf: returns the length the
 * whole literal needs, without the NUL, so a result >= cap means it was cut.
 * A cut falls between escapes and characters, never inside one.
 */
size_t mosaic__json_snprint(char *buf, size_t cap, const char *s);

/*
 * Length of the well-formed UTF-8 sequence at s (2..4 bytes; s[0] >= 0x80),
 * or 0 when it is ill-formed or needs more than avail bytes. The writer
 * above and the strict reader below share it, so what one calls valid the
 * other does too.
 */
int mosaic__utf8_seq_len(const char *s, size_t avail);

/* ---- the strict reader (library mosaic_core_json, needs cJSON) ----------
 *
 * Every JSON reader of the project parses through these, so that all of
 * them refuse the same inputs, with the same words:
 *   - trailing data after the document ("{...}{...}", "{...} x"): cJSON's
 *     plain cJSON_Parse stops after the first value and ignores the rest;
 *   - a key that appears twice in one object, at any depth, named by its
 *     path ("kernels[3].metrics.ipc"): cJSON keeps the first value where
 *     Python's json keeps the last, so the C tools and the Python scripts
 *     would silently read different numbers from one file;
 *   - a NUL byte anywhere and the escape \u0000 in a string (cJSON's C
 *     strings would end there), raw control characters inside strings and
 *     outside them (cJSON takes any byte below 0x20 as white space), and
 *     ill-formed UTF-8 in strings;
 *   - nesting deeper than MOSAIC__JSON_MAX_DEPTH arrays/objects: no document
 *     of the project comes near it, and the bound keeps every recursive walk
 *     of the tree (cJSON's own, this reader's) far from the stack's end.
 * Errors are "file: field: message" (mosaic__errf) with MOSAIC_EFORMAT and
 * say what to do: "m.json: learner.trees[2].id: the key appears twice in
 * one object: ...; keep one", "m.json: not valid JSON at line 4, column
 * 17: text after the end of the document ...". MOSAIC_ENOMEM when the
 * duplicate check of a large object cannot allocate. One limit: cJSON
 * reports an allocation failure during a parse as a parse error, so an
 * out-of-memory inside cJSON reads as "not valid JSON".
 *
 * To switch a reader, replace
 *     text = read(path); root = cJSON_Parse(text); if (!root) ...
 * by one call, which also reads the file through mosaic__read_file (FIFOs,
 * devices and directories refused without blocking, size bounded):
 *     cJSON *root;
 *     int rc = mosaic__json_read_file(path, 64L << 20, &root, err, errlen);
 *     if (rc != 0) return rc;      (err holds the message)
 *     ... cJSON_Delete(root);
 * and a JSON Lines reader (one document per line, blank lines skipped) by
 *     rc = mosaic__jsonl_read_file(path, 1L << 30, on_record, ctx, err, errlen);
 * with on_record called once per line (see mosaic__jsonl_fn). Text already
 * in memory goes through mosaic__json_parse_strict. CMake: link
 * mosaic_core_json (mosaic_profile links it, so its users have it).
 */
#define MOSAIC__JSON_MAX_DEPTH 64

/* cJSON's type, so that this header does not need cJSON's. */
struct cJSON;

/*
 * Parses text[0..len) (it need not be NUL-terminated; a NUL inside is an
 * error) as exactly one JSON document with the checks above. path names the
 * input in messages (NULL reads as "<input>"). On success *out is the tree
 * (the caller frees it with cJSON_Delete) and 0 is returned; otherwise
 * *out is NULL and the result is MOSAIC_EFORMAT, MOSAIC_ENOMEM, or
 * MOSAIC_EINVAL for a NULL text or out, with the message in err.
 */
int mosaic__json_parse_strict(const char *path, const char *text, size_t len,
                              struct cJSON **out, char *err, size_t errlen);

/*
 * mosaic__read_file(path, max) and mosaic__json_parse_strict in one call;
 * an empty file is an error of its own ("the file is empty"). Returns 0, or
 * the reader's code (MOSAIC_EIO, MOSAIC_ETOOBIG, MOSAIC_ENOMEM,
 * MOSAIC_EFORMAT) or the parser's.
 */
int mosaic__json_read_file(const char *path, long max, struct cJSON **out,
                           char *err, size_t errlen);

/*
 * Called by the JSON Lines readers once per non-blank line, in order. where
 * is "path:LINE" (for the callback's own messages: mosaic__errf(err,
 * errlen, MOSAIC_EFORMAT, where, "field", ...)), line the 1-based line
 * number and doc the line's document, owned by the reader and deleted after
 * the call (detach what should be kept). Returns 0 to go on, or a negative
 * MOSAIC_E* code (with its message in err) that stops the reading and is
 * returned as it is.
 */
typedef int (*mosaic__jsonl_fn)(void *ctx, const char *where, long line,
                                struct cJSON *doc, char *err, size_t errlen);

/*
 * Reads JSON Lines from text[0..len): every line that is not blank must be
 * one strict document (the checks above; a document may not span lines),
 * and its errors read "path:LINE: ...". Lines end in "\n" or "\r\n".
 * Returns 0 (also when there is no record: the caller decides whether an
 * empty dataset is an error), MOSAIC_EFORMAT, MOSAIC_EINVAL for a NULL text
 * or fn, or what fn returned.
 */
int mosaic__jsonl_parse_strict(const char *path, const char *text, size_t len,
                               mosaic__jsonl_fn fn, void *ctx, char *err,
                               size_t errlen);

/* mosaic__read_file(path, max) and mosaic__jsonl_parse_strict in one call. */
int mosaic__jsonl_read_file(const char *path, long max, mosaic__jsonl_fn fn,
                            void *ctx, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* MOSAIC_CORE_JSON_H */
