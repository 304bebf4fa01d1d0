/*
 * The stateless admission policies: a policy only decides, for one waiting
 * BE kernel, admit or hold; the daemon owns the mechanism around it. The
 * model-driven ones (mosaic: eq. 5 with the predictor; orion) are in
 * policy_model.c, the static green-context baseline's choice of split in
 * policy_static.c.
 */
#include "daemon.h"

/* No control: every BE kernel is admitted at once (the baseline). */
static int decide_none(void *state, const struct mosaic__sched_view *v,
                       const struct mosaic__be_want *w)
{
    (void)state;
    (void)v;
    (void)w;
    return MOSAIC__ADMIT;
}

/*
 * Hold BE while any HP request is in flight: the most conservative policy
 * that still gives BE the gaps between requests. It needs no prediction,
 * and is what the predictor-driven policy falls back to for a BE kernel
 * with no profile.
 */
static int decide_hold_be(void *state, const struct mosaic__sched_view *v,
                          const struct mosaic__be_want *w)
{
    (void)state;
    (void)w;
    return v->hp_requests_in_flight == 0 ? MOSAIC__ADMIT : MOSAIC__HOLD;
}

int mosaic__policy_get(int id, struct mosaic__policy *out)
{
    switch (id) {
    case MOSAIC__POLICY_NONE:
        *out = (struct mosaic__policy){.name = "none", .decide = decide_none};
        return 0;
    case MOSAIC__POLICY_MPS_PRIORITY:
        /* No control from the daemon: the BE clients run at low MPS client
         * priority (CUDA_MPS_CLIENT_PRIORITY=1, set by whoever starts them),
         * the knob a user tries first. Kept as a policy of its own so that
         * status and metrics name the baseline that was run. */
        *out = (struct mosaic__policy){.name = "mps-priority", .decide = decide_none};
        return 0;
    case MOSAIC__POLICY_STATIC:
        /* The static green-context baseline: the SM split is its control
         * (chosen at start, policy_static.c, and sent to the clients by the
         * daemon); admission is none. */
        *out = (struct mosaic__policy){.name = "static", .decide = decide_none};
        return 0;
    case MOSAIC__POLICY_HOLD_BE:
        *out = (struct mosaic__policy){.name = "hold-be", .decide = decide_hold_be};
        return 0;
    default:
        return MOSAIC_EINVAL;
    }
}
