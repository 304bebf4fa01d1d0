/*
 * Ordinary and ridge least squares for the KACE-like baseline: y ~ X w + b.
 *
 * The fit standardises every feature (mean 0, standard deviation 1) before
 * solving, so that the ridge penalty treats features of different units
 * alike and the normal equations are well conditioned; the means and scales
 * are folded back into the coefficients, so prediction is a plain dot
 * product on raw features.
 */
#ifndef MOSAIC_PREDICTOR_LINREG_H
#define MOSAIC_PREDICTOR_LINREG_H

#include <stddef.h>

/* Fits coef (d + 1 values: d weights, then the intercept) to n rows of X
 * (row-major, n x d) and y, minimising
 *     sum_i (y_i - b - sum_j w'_j z_ij)^2 + ridge * sum_j w'_j^2
 * where z_ij is feature j standardised; the intercept is not penalised.
 * Solved by Cholesky factorisation of the (d+1) x (d+1) normal equations.
 * Returns 0; MOSAIC_EINVAL for bad arguments (NULL pointers, n == 0,
 * ridge < 0 or not finite, a non-finite value in X or y) or an ill-posed
 * problem (the normal matrix is singular, e.g. a constant feature or fewer
 * rows than coefficients with ridge == 0); MOSAIC_ENOMEM. On error every
 * coef is NaN, so a failed fit cannot be used by mistake. */
int mosaic__linreg_fit(const double *X, const double *y, size_t n, size_t d,
                       double ridge, double *coef);

/* coef[d] + sum_j coef[j] * x[j]. */
double mosaic__linreg_predict(const double *coef, size_t d, const double *x);

#endif
