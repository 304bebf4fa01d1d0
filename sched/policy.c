/*
 * Admission policies: a policy only decides, for one waiting BE kernel,
 * admit or hold; the daemon owns the mechanism around it. The predictor's
 * eq. 5 policy (issue 10 item 4) plugs in here once the predictor offers
 * its online API; these two exist so that the mechanism can be exercised
 * end to end and compared against.
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
    case MOSAIC__POLICY_HOLD_BE:
        *out = (struct mosaic__policy){.name = "hold-be", .decide = decide_hold_be};
        return 0;
    default:
        return MOSAIC_EINVAL;
    }
}
