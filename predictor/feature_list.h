/*
 * The models' feature rows (features.c). Internal to predictor/; not
 * features.h, which would hide the C library's <features.h>.
 */
#ifndef MOSAIC_PREDICTOR_FEATURE_LIST_H
#define MOSAIC_PREDICTOR_FEATURE_LIST_H

#include "predictor_internal.h"

#define MOSAIC__NF_INTER 33
#define MOSAIC__NF_SHARED 47

/* The inter-SM row (MOSAIC__NF_INTER floats) of self on sms_self SMs beside
 * other on sms_other, with their isolated durations there (us; NaN or 0:
 * unknown). */
void mosaic__feat_inter(const struct mosaic_gpu_desc *g,
                        const struct mosaic_pkernel *self, int sms_self, double iso_self,
                        const struct mosaic_pkernel *other, int sms_other, double iso_other,
                        float *x);

/* The shared-mode residual rows (MOSAIC__NF_SHARED floats) of a (xa) and b
 * (xb; either may be NULL) from the timeline's result res for them sharing
 * all SMs. */
void mosaic__feat_shared(const struct mosaic_gpu_desc *g,
                         const struct mosaic_pkernel *a, const struct mosaic_pkernel *b,
                         int b_first, double iso_a, double iso_b,
                         const struct mosaic_pred_result *res, float *xa, float *xb);

#endif
