/*
 * Ridge least squares on standardised features, solved by Cholesky
 * factorisation of the normal equations (linreg.h).
 */
#include "linreg.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "mosaic/mosaic.h"

/* A pivot this small relative to the largest diagonal element of the normal
 * matrix means the columns are (numerically) linearly dependent: the
 * solution would be dominated by rounding noise, so the fit is refused. */
#define PIVOT_REL_TOL 1e-10

static int all_finite(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* Column means and standard deviations of X. A constant column gets scale 1,
 * so its standardised values are all 0 and the normal matrix shows it as
 * singular (or, with ridge > 0, its weight is 0). */
static void column_stats(const double *X, size_t n, size_t d, double *mean,
                         double *scale)
{
    for (size_t j = 0; j < d; j++) {
        double m = 0, ss = 0;
        for (size_t i = 0; i < n; i++)
            m += X[i * d + j];
        m /= (double)n;
        for (size_t i = 0; i < n; i++) {
            double c = X[i * d + j] - m;
            ss += c * c;
        }
        mean[j] = m;
        scale[j] = ss > 0 ? sqrt(ss / (double)n) : 1.0;
    }
}

/* The normal equations of the standardised problem: A = [Z 1]' [Z 1] plus
 * ridge on the weights' diagonal, b = [Z 1]' y. A is (d+1) x (d+1), row-major;
 * z is scratch space for one row. */
static void normal_equations(const double *X, const double *y, size_t n, size_t d,
                             double ridge, const double *mean, const double *scale,
                             double *A, double *b, double *z)
{
    const size_t m = d + 1;

    for (size_t k = 0; k < m * m; k++)
        A[k] = 0;
    for (size_t k = 0; k < m; k++)
        b[k] = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < d; j++)
            z[j] = (X[i * d + j] - mean[j]) / scale[j];
        z[d] = 1.0;
        /* Only the lower triangle is accumulated; Cholesky reads no more. */
        for (size_t r = 0; r < m; r++) {
            for (size_t c = 0; c <= r; c++)
                A[r * m + c] += z[r] * z[c];
            b[r] += z[r] * y[i];
        }
    }
    for (size_t j = 0; j < d; j++)
        A[j * m + j] += ridge;
}

/* Factorises the symmetric matrix A (lower triangle) in place as L L'.
 * Returns 0, or -1 when A is not (numerically) positive definite. */
static int cholesky(double *A, size_t m)
{
    double maxdiag = 0;

    for (size_t k = 0; k < m; k++)
        if (A[k * m + k] > maxdiag)
            maxdiag = A[k * m + k];
    if (!(maxdiag > 0))
        return -1;
    for (size_t j = 0; j < m; j++) {
        double s = A[j * m + j];
        for (size_t k = 0; k < j; k++)
            s -= A[j * m + k] * A[j * m + k];
        if (!(s > PIVOT_REL_TOL * maxdiag))
            return -1;
        A[j * m + j] = sqrt(s);
        for (size_t i = j + 1; i < m; i++) {
            double t = A[i * m + j];
            for (size_t k = 0; k < j; k++)
                t -= A[i * m + k] * A[j * m + k];
            A[i * m + j] = t / A[j * m + j];
        }
    }
    return 0;
}

/* Solves L L' x = b in place (b becomes x). */
static void cholesky_solve(const double *L, size_t m, double *b)
{
    for (size_t i = 0; i < m; i++) {
        double s = b[i];
        for (size_t k = 0; k < i; k++)
            s -= L[i * m + k] * b[k];
        b[i] = s / L[i * m + i];
    }
    for (size_t i = m; i-- > 0;) {
        double s = b[i];
        for (size_t k = i + 1; k < m; k++)
            s -= L[k * m + i] * b[k];
        b[i] = s / L[i * m + i];
    }
}

/* Turns the standardised solution w' (and intercept) into coefficients on
 * raw features: w_j = w'_j / s_j, b = b' - sum_j w_j mu_j. */
static void unfold(const double *sol, size_t d, const double *mean,
                   const double *scale, double *coef)
{
    double intercept = sol[d];

    for (size_t j = 0; j < d; j++) {
        coef[j] = sol[j] / scale[j];
        intercept -= coef[j] * mean[j];
    }
    coef[d] = intercept;
}

static int fit_checked(const double *X, const double *y, size_t n, size_t d,
                       double ridge, double *coef)
{
    const size_t m = d + 1;
    double *mean, *scale, *A, *b, *z;
    int rc = MOSAIC_ENOMEM;

    if (m > SIZE_MAX / sizeof(double) / m)
        return MOSAIC_EINVAL;
    mean = malloc(m * sizeof(double));
    scale = malloc(m * sizeof(double));
    A = malloc(m * m * sizeof(double));
    b = malloc(m * sizeof(double));
    z = malloc(m * sizeof(double));
    if (mean && scale && A && b && z) {
        column_stats(X, n, d, mean, scale);
        normal_equations(X, y, n, d, ridge, mean, scale, A, b, z);
        if (cholesky(A, m) != 0) {
            rc = MOSAIC_EINVAL;
        } else {
            cholesky_solve(A, m, b);
            unfold(b, d, mean, scale, coef);
            rc = all_finite(coef, m) ? 0 : MOSAIC_EINVAL;
        }
    }
    free(mean);
    free(scale);
    free(A);
    free(b);
    free(z);
    return rc;
}

int mosaic__linreg_fit(const double *X, const double *y, size_t n, size_t d,
                       double ridge, double *coef)
{
    int rc;

    if (!coef)
        return MOSAIC_EINVAL;
    if (!X || !y || n == 0 || !isfinite(ridge) || ridge < 0 ||
        (d > 0 && n > SIZE_MAX / d) || !all_finite(X, n * d) || !all_finite(y, n)) {
        rc = MOSAIC_EINVAL;
    } else {
        rc = fit_checked(X, y, n, d, ridge, coef);
    }
    if (rc != 0)
        for (size_t j = 0; j <= d; j++)
            coef[j] = NAN;
    return rc;
}

double mosaic__linreg_predict(const double *coef, size_t d, const double *x)
{
    double s = coef[d];

    for (size_t j = 0; j < d; j++)
        s += coef[j] * x[j];
    return s;
}
