/*
 * The JSON Lines writer of mosaic-zoo: each output line is one record,
 * built field by field and written whole by j_end.
 *
 *   j_begin("time");            {"record":"time"
 *   j_int("sms", 66);           ,"sms":66
 *   j_end();                    }\n, written and flushed
 *
 * Numbers are written with %.4f (null when not finite), integers with
 * %lld. Every string goes through zoo_json_string, the one place that
 * escapes: when the project's common JSON string writer is in, it is the
 * one line to change.
 */
#ifndef MOSAIC_ZOO_JSONL_H
#define MOSAIC_ZOO_JSONL_H

#include <stddef.h>
#include <stdio.h>

/* Where j_end writes; set before the first record. */
void j_open(FILE *out);
/* Frees the record buffer (at exit). */
void j_free(void);

/* Appends s as a JSON string literal that is always valid UTF-8 JSON: '"'
 * and '\' escaped, control characters as \u00XX, well-formed UTF-8
 * sequences copied, and every other byte >= 0x80 replaced by \ufffd. */
void zoo_json_string(const char *s);

/* Starts a record {"record":record ...; drops any unfinished one. */
void j_begin(const char *record);
/* Ends the record, writes it as one line and flushes. */
void j_end(void);

/* Fields of the current record. */
void j_key(const char *k);                   /* "k": (then a raw value) */
void j_str(const char *k, const char *v);    /* null when v is NULL */
void j_int(const char *k, long long v);
void j_num(const char *k, double v);
void j_bool(const char *k, int v);
void j_null(const char *k);
void j_nums(const char *k, const double *a, int n);
void j_ints(const char *k, const int *a, int n);

/* Raw output into the current record, for values the helpers do not
 * cover (arrays written in a loop); the caller keeps it valid JSON. */
void j_raw(const char *s, size_t n);
void j_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* MOSAIC_ZOO_JSONL_H */
