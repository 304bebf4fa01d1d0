/*
 * The shared state of the offset co-runs and its helpers (offset_run.h).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "offset_run.h"
#include "zoo.h"
#include "zoo_harness.h"

/* Events are created as the largest pair needs them, not for the largest
 * possible pair (ZOO_OFF_MAX_ROUNDS rounds would be 17k events). */
int off_events(struct off_run *X, int n)
{
    int rc = 0;
    cudaEvent_t *ne;

    if (n <= X->n_ev)
        return 0;
    ne = (cudaEvent_t *)realloc(X->ev, (size_t)n * sizeof(*ne));
    if (!ne) {
        seterr("out of host memory for %d events", n);
        return -1;
    }
    X->ev = ne;
    while (X->n_ev < n) {
        CK(cudaEventCreate(&X->ev[X->n_ev]));
        X->n_ev++;
    }
out:
    return rc;
}

int off_run_init(struct off_run *X, int collapse_sides)
{
    int rc = 0;
    char err[512];

    memset(X, 0, sizeof(*X));
    err[0] = 0;
    X->n_delays = zoo_parse_delays(g_opt.delays, X->delays, ZOO_OFF_MAX_DELAYS,
                                   err, sizeof(err));
    if (X->n_delays < 0) {
        /* parse_args already checked them; this is a second line. */
        seterr("%s", err);
        return -1;
    }
    X->timeout_ns = (unsigned long long)(g_opt.peer_timeout_ms * 1e6);
    X->rounds = (struct zoo_round *)calloc(ZOO_OFF_MAX_ROUNDS,
                                           sizeof(*X->rounds));
    X->res = (struct off_res *)calloc(ZOO_OFF_MAX_ROUNDS, sizeof(*X->res));
    X->hrec = (struct zoo_sync_rec *)calloc(2 * ZOO_OFF_MAX_ROUNDS,
                                            sizeof(*X->hrec));
    X->iso = (struct off_iso *)calloc(4 * (size_t)zoo_n_variants + 4,
                                      sizeof(*X->iso));
    if (!X->rounds || !X->res || !X->hrec || !X->iso ||
        zoo_plan_init(&X->plan, zoo_n_variants, collapse_sides)) {
        seterr("out of host memory");
        return -1;
    }
    CK(cudaMalloc((void **)&X->drec,
                  2 * (size_t)ZOO_OFF_MAX_ROUNDS * sizeof(*X->drec)));
out:
    return rc;
}

void off_run_fini(struct off_run *X)
{
    int i;

    for (i = 0; i < X->n_ev; i++)
        cudaEventDestroy(X->ev[i]);
    free(X->ev);
    if (X->drec)
        cudaFree(X->drec);
    if (X->sync)
        cudaFree(X->sync);
    zoo_plan_free(&X->plan);
    free(X->rounds);
    free(X->res);
    free(X->hrec);
    free(X->iso);
    memset(X, 0, sizeof(*X));
}

void off_delay_ns(const struct off_run *X, const struct zoo_round *r,
                  double lead_iso_us, unsigned long long *abs_ns,
                  unsigned long long *rel_ns)
{
    const struct zoo_delay *d;

    *abs_ns = 0;
    *rel_ns = 0;
    if (r->kind != ZOO_ROUND_CORUN || r->delay_i < 0)
        return;
    d = &X->delays[r->delay_i];
    *abs_ns = (unsigned long long)(d->us * 1e3 + 0.5);
    if (d->x > 0 && isfinite(lead_iso_us) && lead_iso_us > 0)
        *rel_ns = (unsigned long long)(d->x * lead_iso_us * 1e3 + 0.5);
}

double off_requested_us(const struct off_run *X, int delay_i,
                        int leader, double lead_iso_us)
{
    const struct zoo_delay *d = &X->delays[delay_i];
    double us = d->us + (d->x > 0 ? d->x * lead_iso_us : 0.0);

    return leader ? -us : us;
}

int off_role(const struct zoo_round *r, int s)
{
    return r->leader == s ? 0 : 1;
}

const struct off_iso *off_iso_of(const struct off_run *X, int vi,
                                 int side, int role)
{
    const struct off_iso *e = &X->iso[zoo_plan_iso_key(&X->plan, vi, side,
                                                       role)];

    return e->n > 0 ? e : NULL;
}
