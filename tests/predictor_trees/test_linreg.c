/*
 * predictor/linreg.c: exact recovery of a known linear function, noisy data
 * against the closed-form expectation, ridge shrinkage, and refusal of
 * ill-posed problems.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "linreg.h"
#include "mosaic/mosaic.h"

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

/* A standard normal deviate (Box-Muller). */
static double rng_normal(uint64_t *s)
{
    double u = rng_unit(s), v = rng_unit(s);
    return sqrt(-2.0 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

/* Features of very different scales and offsets, as profile metrics are
 * (bytes per second next to ratios): standardisation must cope. */
static double *make_X(size_t n, size_t d, uint64_t *s)
{
    double *X = malloc(sizeof(double) * n * d);
    assert_non_null(X);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++)
            X[i * d + j] = (rng_unit(s) - 0.3) * pow(10.0, (double)j * 2 - 2) +
                           (double)j * 1000;
    return X;
}

static void test_exact_solution(void **state)
{
    const size_t n = 50, d = 4;
    const double truth[5] = {3.0, -0.02, 1e-4, -7e-7, 42.0};
    uint64_t s = 1;
    double *X = make_X(n, d, &s), y[50], coef[5];
    (void)state;

    for (size_t i = 0; i < n; i++)
        y[i] = mosaic__linreg_predict(truth, d, &X[i * d]);
    assert_int_equal(mosaic__linreg_fit(X, y, n, d, 0.0, coef), 0);
    for (size_t j = 0; j <= d; j++)
        assert_true(fabs(coef[j] - truth[j]) <= 1e-7 * fabs(truth[j]));
    for (size_t i = 0; i < n; i++)
        assert_float_equal(mosaic__linreg_predict(coef, d, &X[i * d]), y[i], 1e-7);
    free(X);
}

/* A hand-checked case: y = 2x + 1 through (0,1), (1,3), (2,5). */
static void test_tiny_known(void **state)
{
    const double X[3] = {0, 1, 2}, y[3] = {1, 3, 5};
    double coef[2];
    (void)state;
    assert_int_equal(mosaic__linreg_fit(X, y, 3, 1, 0.0, coef), 0);
    assert_float_equal(coef[0], 2.0, 1e-12);
    assert_float_equal(coef[1], 1.0, 1e-12);
    assert_float_equal(mosaic__linreg_predict(coef, 1, (const double[]){10}), 21.0, 1e-10);
}

/* With noise of standard deviation 0.1 and 2000 rows, the estimate is within
 * a few standard errors of the truth and the residual variance is the
 * noise's. */
static void test_noisy(void **state)
{
    const size_t n = 2000, d = 3;
    const double truth[4] = {1.5, -2.0, 0.5, 10.0};
    uint64_t s = 7;
    double *X = malloc(sizeof(double) * n * d), *y = malloc(sizeof(double) * n), coef[4];
    double rss = 0;
    (void)state;

    assert_non_null(X);
    assert_non_null(y);
    for (size_t i = 0; i < n * d; i++)
        X[i] = rng_normal(&s);
    for (size_t i = 0; i < n; i++)
        y[i] = mosaic__linreg_predict(truth, d, &X[i * d]) + 0.1 * rng_normal(&s);
    assert_int_equal(mosaic__linreg_fit(X, y, n, d, 0.0, coef), 0);
    /* Standard error per coefficient is about 0.1 / sqrt(2000) = 0.0022. */
    for (size_t j = 0; j <= d; j++)
        assert_true(fabs(coef[j] - truth[j]) < 0.012);
    for (size_t i = 0; i < n; i++) {
        double r = y[i] - mosaic__linreg_predict(coef, d, &X[i * d]);
        rss += r * r;
    }
    assert_true(fabs(sqrt(rss / (double)n) - 0.1) < 0.01);
    free(X);
    free(y);
}

/* On standardised features the ridge solution of a one-feature problem is
 * w' = sxy / (sxx + ridge) with sxx = n: check the shrinkage exactly, and
 * that the intercept keeps the prediction at the mean of y. */
static void test_ridge_shrinks(void **state)
{
    const double X[4] = {1, 2, 3, 4}, y[4] = {2, 4, 6, 8};
    double c0[2], c1[2];
    const double ridge = 4.0;
    (void)state;
    assert_int_equal(mosaic__linreg_fit(X, y, 4, 1, 0.0, c0), 0);
    assert_int_equal(mosaic__linreg_fit(X, y, 4, 1, ridge, c1), 0);
    assert_float_equal(c0[0], 2.0, 1e-12);
    assert_float_equal(c1[0], 2.0 * 4.0 / (4.0 + ridge), 1e-12);
    assert_float_equal(mosaic__linreg_predict(c1, 1, (const double[]){2.5}), 5.0, 1e-12);
}

static void assert_all_nan(const double *coef, size_t m)
{
    for (size_t j = 0; j < m; j++)
        assert_true(isnan(coef[j]));
}

static void test_ill_posed(void **state)
{
    double coef[3];
    (void)state;

    /* A constant feature is collinear with the intercept. */
    {
        const double X[8] = {1, 5, 2, 5, 3, 5, 4, 5}, y[4] = {1, 2, 3, 4};
        assert_int_equal(mosaic__linreg_fit(X, y, 4, 2, 0.0, coef), MOSAIC_EINVAL);
        assert_all_nan(coef, 3);
        /* A ridge makes it well posed: the constant feature gets weight 0. */
        assert_int_equal(mosaic__linreg_fit(X, y, 4, 2, 1e-3, coef), 0);
        assert_float_equal(coef[1], 0.0, 1e-12);
    }
    /* Two identical columns. */
    {
        const double X[8] = {1, 1, 2, 2, 3, 3, 5, 5}, y[4] = {1, 2, 3, 4};
        assert_int_equal(mosaic__linreg_fit(X, y, 4, 2, 0.0, coef), MOSAIC_EINVAL);
    }
    /* Fewer rows than coefficients. */
    {
        const double X[4] = {1, 7, 2, 3}, y[2] = {1, 2};
        assert_int_equal(mosaic__linreg_fit(X, y, 2, 2, 0.0, coef), MOSAIC_EINVAL);
    }
}

static void test_bad_arguments(void **state)
{
    const double X[2] = {1, 2}, y[2] = {1, 2};
    const double Xnan[2] = {1, NAN}, yinf[2] = {1, INFINITY};
    double coef[2];
    (void)state;
    assert_int_equal(mosaic__linreg_fit(NULL, y, 2, 1, 0, coef), MOSAIC_EINVAL);
    assert_int_equal(mosaic__linreg_fit(X, NULL, 2, 1, 0, coef), MOSAIC_EINVAL);
    assert_int_equal(mosaic__linreg_fit(X, y, 2, 1, 0, NULL), MOSAIC_EINVAL);
    assert_int_equal(mosaic__linreg_fit(X, y, 0, 1, 0, coef), MOSAIC_EINVAL);
    assert_int_equal(mosaic__linreg_fit(X, y, 2, 1, -1, coef), MOSAIC_EINVAL);
    assert_int_equal(mosaic__linreg_fit(X, y, 2, 1, NAN, coef), MOSAIC_EINVAL);
    assert_int_equal(mosaic__linreg_fit(Xnan, y, 2, 1, 0, coef), MOSAIC_EINVAL);
    assert_all_nan(coef, 2);
    assert_int_equal(mosaic__linreg_fit(X, yinf, 2, 1, 0, coef), MOSAIC_EINVAL);
}

/* d = 0 fits the mean. */
static void test_intercept_only(void **state)
{
    const double y[3] = {1, 2, 6};
    double coef[1], dummy = 0;
    (void)state;
    assert_int_equal(mosaic__linreg_fit(&dummy, y, 3, 0, 0.0, coef), 0);
    assert_float_equal(coef[0], 3.0, 1e-12);
    assert_float_equal(mosaic__linreg_predict(coef, 0, NULL), 3.0, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_solution), cmocka_unit_test(test_tiny_known),
        cmocka_unit_test(test_noisy),          cmocka_unit_test(test_ridge_shrinks),
        cmocka_unit_test(test_ill_posed),      cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_intercept_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
