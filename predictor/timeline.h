/*
 * The shared-mode timeline (timeline.c): each kernel's predicted end when
 * both share all SMs, with the components switched on one by one, written
 * into a prediction result. Internal to predictor/.
 */
#ifndef MOSAIC_PREDICTOR_TIMELINE_H
#define MOSAIC_PREDICTOR_TIMELINE_H

#include "predictor_internal.h"

/* Fills res (durations, the placement/packing/inter/intra factors, start,
 * overlap, co-residency) for a and b sharing all SMs; b_first: b's blocks
 * are dispatched first; delay_us: the second kernel was enqueued that long
 * after the first (0 within the dispatch jitter), its durations counted
 * from its own enqueue. iso_a/b: isolated durations (us); inter_a/b: the
 * inter-SM factors at full overlap; comp: the MOSAIC_PC_* bits in use. */
void mosaic__timeline_shared(const struct mosaic_gpu_desc *g,
                             const struct mosaic__coef *c,
                             const struct mosaic_pkernel *a,
                             const struct mosaic_pkernel *b, int b_first,
                             double delay_us, double iso_a, double iso_b, double inter_a,
                             double inter_b, unsigned comp,
                             struct mosaic_pred_result *res);

#endif
