/*
 * Helpers the Argus cmocka tests share (include after <cmocka.h>).
 */
#ifndef ARGUS_TEST_UTIL_H
#define ARGUS_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif /* ARGUS_TEST_UTIL_H */
