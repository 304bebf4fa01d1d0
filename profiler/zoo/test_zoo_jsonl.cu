/*
 * Tests of the zoo's JSON Lines writer (zoo_jsonl.h) that need no GPU:
 * string escaping (control characters, quotes, well-formed UTF-8 kept,
 * every malformed byte replaced by \ufffd so that a line is always valid
 * JSON), null strings, non-finite numbers, and one record per line.
 * Exits 0 when every case passes; otherwise prints each failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo_jsonl.h"

static int g_failures;

/* Writes {"record":"t","s":<value>} through the writer into a temporary
 * file and returns what was written (static buffer). */
static const char *record_of(const char *key, const char *value)
{
    static char buf[4096];
    FILE *f = tmpfile();
    size_t n;

    if (!f) {
        perror("tmpfile");
        exit(2);
    }
    j_open(f);
    j_begin("t");
    j_str(key, value);
    j_end();
    rewind(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void expect_record(const char *name, const char *key,
                          const char *value, const char *want)
{
    const char *got = record_of(key, value);

    if (strcmp(got, want) != 0) {
        fprintf(stderr, "FAIL %s:\n  want %s  got  %s", name, want, got);
        g_failures++;
    }
}

static void expect_value(const char *name, const char *value,
                         const char *want_json)
{
    char want[1024];

    snprintf(want, sizeof(want), "{\"record\":\"t\",\"s\":%s}\n", want_json);
    expect_record(name, "s", value, want);
}

int main(void)
{
    FILE *f;
    char buf[512];
    size_t n;
    double nums[3] = {1.5, NAN, -INFINITY};
    int ints[2] = {-3, 7};

    expect_value("plain ASCII", "copy_128M", "\"copy_128M\"");
    expect_value("quote and backslash", "a\"b\\c", "\"a\\\"b\\\\c\"");
    /* The core writer's forms (core/json.h): short escapes for \n \t \r,
     * \u00XX for the other control characters and for DEL. */
    expect_value("control characters", "l1\nl2\tx\x01\x1f",
                 "\"l1\\nl2\\tx\\u0001\\u001f\"");
    expect_value("DEL escaped", "a\x7f", "\"a\\u007f\"");
    expect_value("NULL string", NULL, "null");
    expect_value("empty string", "", "\"\"");

    /* Well-formed UTF-8 is copied byte for byte. */
    expect_value("two-byte sequence", "caf\xc3\xa9", "\"caf\xc3\xa9\"");
    expect_value("three-byte sequence", "\xe2\x82\xac", "\"\xe2\x82\xac\"");
    expect_value("four-byte sequence", "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");
    expect_value("highest code point", "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");

    /* Malformed bytes: one U+FFFD per byte that does not start a
     * well-formed sequence. */
    expect_value("lone 0xff", "a\xff" "b", "\"a\\ufffdb\"");
    expect_value("lone continuation byte", "\x80", "\"\\ufffd\"");
    expect_value("truncated three-byte sequence", "\xe2\x82x",
                 "\"\\ufffd\\ufffdx\"");
    expect_value("sequence cut by the end", "\xe2\x82", "\"\\ufffd\\ufffd\"");
    expect_value("overlong two-byte form", "\xc0\xaf", "\"\\ufffd\\ufffd\"");
    expect_value("overlong three-byte form", "\xe0\x80\xaf",
                 "\"\\ufffd\\ufffd\\ufffd\"");
    expect_value("UTF-16 surrogate", "\xed\xa0\x80",
                 "\"\\ufffd\\ufffd\\ufffd\"");
    expect_value("above U+10FFFF", "\xf4\x90\x80\x80",
                 "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    expect_value("Latin-1 path", "/data/r\xe9sum\xe9.txt",
                 "\"/data/r\\ufffdsum\\ufffd.txt\"");
    expect_record("keys are escaped the same way", "k\xff\"", "v",
                  "{\"record\":\"t\",\"k\\ufffd\\\"\":\"v\"}\n");

    /* Numbers, arrays and one record per line. */
    f = tmpfile();
    if (!f) {
        perror("tmpfile");
        return 2;
    }
    j_open(f);
    j_begin("a");
    j_int("i", -42);
    j_num("x", 0.25);
    j_num("nan", NAN);
    j_nums("xs", nums, 3);
    j_ints("is", ints, 2);
    j_bool("b", 0);
    j_null("z");
    j_end();
    j_begin("unfinished");
    j_int("dropped", 1);
    j_begin("b");
    j_end();
    rewind(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    if (strcmp(buf, "{\"record\":\"a\",\"i\":-42,\"x\":0.2500,\"nan\":null,"
                    "\"xs\":[1.5000,null,null],\"is\":[-3,7],\"b\":false,"
                    "\"z\":null}\n{\"record\":\"b\"}\n") != 0) {
        fprintf(stderr, "FAIL numbers and records:\n  got  %s", buf);
        g_failures++;
    }
    j_free();
    if (g_failures)
        fprintf(stderr, "%d case(s) failed\n", g_failures);
    return g_failures ? 1 : 0;
}
