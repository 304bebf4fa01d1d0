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

#ifdef __cplusplus
}
#endif
#endif /* MOSAIC_CORE_JSON_H */
