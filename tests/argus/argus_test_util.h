/*
 * Helpers the Argus cmocka tests share (include after <cmocka.h>): numeric
 * checks, reading a file, and the set-up of the workspace and runtime tests
 * (test_ws.c, test_rt.c): one temporary directory per test group, removed
 * at its end, and workspaces opened inside it. Functions that can fail end
 * the test with the reason (cmocka's fail_msg).
 */
#ifndef ARGUS_TEST_UTIL_H
#define ARGUS_TEST_UTIL_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "argus/workspace.h"

/* cmocka before 1.1.6 has no assert_double_equal. */
#define assert_near(got, want, eps)                                                                \
    do {                                                                                           \
        double got_ = (got), want_ = (want);                                                       \
        if (!(fabs(got_ - want_) <= (eps)))                                                        \
            fail_msg("%s = %.17g, want %.17g (within %g)", #got, got_, want_, (double)(eps));      \
    } while (0)

/* A whole file (binary or text) in a NUL-terminated malloc'd buffer; the
 * test fails when it cannot be read. */
static inline char *argus_test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* The group's directory, made by atu_setup. */
extern char atu_base[256];

/* Makes atu_base, $TMPDIR (or /tmp)/<prefix>-XXXXXX. Returns 0 or -1. */
int atu_setup(const char *prefix);
/* A cmocka group teardown: removes atu_base and everything below it
 * (made writable first: a test may leave it read-only). */
int atu_teardown(void **state);
/* buf = atu_base/name. */
void atu_path(char *buf, size_t len, const char *name);
/* Opens (creating it) the workspace atu_base/name. */
argus_ws *atu_open_ws(const char *name);

#endif /* ARGUS_TEST_UTIL_H */
