/*
 * Online learning of unknown BE kernels (interface and principle in
 * policy_learn.h).
 *
 * What a sample measures depends on where the BE kernel waits
 * (docs/sched.md, "Where a BE kernel waits"). With the device gate the
 * grant write is the kernel's start and the done word its end, so grant to
 * done is its duration, late by at most the daemon's poll of the done
 * words (1 ms while anything is gated). With the host hold the done is
 * reported when the client next launches (after synchronising its
 * streams), so the sample also holds the host's time until that launch:
 * an upper bound, which is the safe side for a bound on HP's delay, and
 * the only measurement the host hold gives. Either way a sample only
 * overestimates.
 *
 * Two fixed tables rather than a library's: a few hundred kernels and a
 * few hundred running at once are all a node sees, and the policy must
 * not allocate on the decision path.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "mosaic/mosaic.h"
#include "policy_learn.h"

#define LEARN_KERNELS 1024 /* a power of two: the hash table's size */
#define LEARN_RUNNING 256
/* Finished runs kept for charging a request: a 0.5-2 s start-up request
 * beside a trainer's small kernels sees hundreds (64 were too few: the
 * charge then left out the older ones). */
#define LEARN_HISTORY 512

double mosaic__learn_bound_factor = 1.0;
int mosaic__policy_before_i15;

struct lkernel {
    uint64_t id; /* 0: free */
    double samples[MOSAIC__LEARN_SAMPLES];
    int nsamples, next;
    double duration_ns; /* 0 until learned from clean runs */
    double bsamples[MOSAIC__LEARN_BOUND_SAMPLES]; /* runs beside HP */
    int nbsamples, nextb;
    double bound_ns; /* 0 until learned from runs beside HP */
};

struct lrun {
    uint32_t client;
    uint64_t id;
    uint64_t start;
    int clean; /* no HP request in flight since its grant */
};

struct mosaic__learn {
    struct lkernel k[LEARN_KERNELS];
    size_t nkernels;
    struct lrun run[LEARN_RUNNING];
    int nrun;
    uint64_t last_done; /* the latest done of any unknown kernel */
    uint64_t hist_start[LEARN_HISTORY], hist_end[LEARN_HISTORY];
    unsigned nhist, next_hist;
    uint64_t evicted_end; /* the latest end of a run that left the history */
    unsigned learned, bound_learned;
    uint64_t samples, bound_samples, discarded, untracked;
};

int mosaic__learn_open(struct mosaic__learn **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : MOSAIC_ENOMEM;
}

void mosaic__learn_close(struct mosaic__learn *l)
{
    free(l);
}

/* The slot of id, or the free slot where it would go (the table is kept at
 * most half full, so a probe ends soon and always finds one). */
static size_t slot_of(const struct mosaic__learn *l, uint64_t id)
{
    size_t i;

    for (i = id & (LEARN_KERNELS - 1); l->k[i].id && l->k[i].id != id;
         i = (i + 1) & (LEARN_KERNELS - 1))
        ;
    return i;
}

static struct lkernel *kernel_add(struct mosaic__learn *l, uint64_t id)
{
    size_t i = slot_of(l, id);

    if (l->k[i].id == id)
        return &l->k[i];
    if (2 * (l->nkernels + 1) > LEARN_KERNELS)
        return NULL; /* full: a kernel this late stays unknown */
    l->k[i].id = id;
    l->nkernels++;
    return &l->k[i];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void add_sample(struct mosaic__learn *l, struct lkernel *k, double ns)
{
    double tmp[MOSAIC__LEARN_SAMPLES];

    /* A window of the last runs, so that a kernel whose duration changes
     * (a new input size under the same profile key) is followed. */
    k->samples[k->next] = ns;
    k->next = (k->next + 1) % MOSAIC__LEARN_SAMPLES;
    if (k->nsamples < MOSAIC__LEARN_SAMPLES)
        k->nsamples++;
    l->samples++;
    if (k->nsamples < MOSAIC__LEARN_SAMPLES)
        return;
    memcpy(tmp, k->samples, sizeof(tmp));
    qsort(tmp, MOSAIC__LEARN_SAMPLES, sizeof(double), cmp_double);
    if (!(k->duration_ns > 0)) {
        l->learned++;
        mosaic__dlog(MOSAIC__L_INFO, "BE kernel %016llx without a profile learned: %.3f ms "
                     "(median of %d runs with no HP request in flight); admitted beside HP "
                     "under the worst-case bound from now on",
                     (unsigned long long)k->id, tmp[MOSAIC__LEARN_SAMPLES / 2] / 1e6,
                     MOSAIC__LEARN_SAMPLES);
    }
    k->duration_ns = tmp[MOSAIC__LEARN_SAMPLES / 2];
}

/* A run beside HP: an upper bound on the isolated duration, and the
 * kernel's wall time beside HP (policy_learn.h). */
static void add_bound_sample(struct mosaic__learn *l, struct lkernel *k, double ns)
{
    double tmp[MOSAIC__LEARN_BOUND_SAMPLES];

    k->bsamples[k->nextb] = ns * mosaic__learn_bound_factor;
    k->nextb = (k->nextb + 1) % MOSAIC__LEARN_BOUND_SAMPLES;
    if (k->nbsamples < MOSAIC__LEARN_BOUND_SAMPLES)
        k->nbsamples++;
    l->bound_samples++;
    if (k->nbsamples < MOSAIC__LEARN_BOUND_SAMPLES)
        return;
    memcpy(tmp, k->bsamples, sizeof(tmp));
    qsort(tmp, MOSAIC__LEARN_BOUND_SAMPLES, sizeof(double), cmp_double);
    if (!(k->bound_ns > 0) && !(k->duration_ns > 0)) {
        l->bound_learned++;
        mosaic__dlog(MOSAIC__L_INFO, "BE kernel %016llx without a profile learned beside HP: "
                     "at most %.3f ms (median of %d runs with an HP request in flight, each an "
                     "upper bound on its isolated time); admitted beside HP under the "
                     "worst-case bound from now on",
                     (unsigned long long)k->id, tmp[MOSAIC__LEARN_BOUND_SAMPLES / 2] / 1e6,
                     MOSAIC__LEARN_BOUND_SAMPLES);
    }
    k->bound_ns = tmp[MOSAIC__LEARN_BOUND_SAMPLES / 2];
}

void mosaic__learn_grant(struct mosaic__learn *l, uint32_t client, uint64_t id, uint64_t ts,
                         int hp_in_flight)
{
    if (l->nrun == LEARN_RUNNING) {
        /* Not followed: it adds nothing to the remaining work, which only
         * a node with this many unknown BE kernels at once can meet. */
        l->untracked++;
        return;
    }
    l->run[l->nrun++] = (struct lrun){.client = client, .id = id, .start = ts,
                                      .clean = !hp_in_flight};
}

void mosaic__learn_done(struct mosaic__learn *l, uint32_t client, uint64_t id, uint64_t ts)
{
    /* The oldest run of this kernel by this client: its streams finish
     * their kernels in grant order for one slot, and for several slots the
     * oldest is the one most likely done. */
    for (int i = 0; i < l->nrun; i++) {
        struct lrun r = l->run[i];
        if (r.client != client || r.id != id)
            continue;
        memmove(&l->run[i], &l->run[i + 1], sizeof(l->run[0]) * (size_t)(l->nrun - i - 1));
        l->nrun--;
        if (ts > l->last_done)
            l->last_done = ts;
        if (l->nhist == LEARN_HISTORY && l->hist_end[l->next_hist] > l->evicted_end)
            l->evicted_end = l->hist_end[l->next_hist];
        l->hist_start[l->next_hist] = r.start;
        l->hist_end[l->next_hist] = ts;
        l->next_hist = (l->next_hist + 1) % LEARN_HISTORY;
        if (l->nhist < LEARN_HISTORY)
            l->nhist++;
        if (ts <= r.start || (!r.clean && mosaic__policy_before_i15)) {
            l->discarded++;
            return;
        }
        struct lkernel *k = id ? kernel_add(l, id) : NULL;
        if (k && r.clean)
            add_sample(l, k, (double)(ts - r.start));
        else if (k)
            add_bound_sample(l, k, (double)(ts - r.start));
        return;
    }
}

void mosaic__learn_hp_begin(struct mosaic__learn *l)
{
    for (int i = 0; i < l->nrun; i++)
        l->run[i].clean = 0;
}

void mosaic__learn_client_gone(struct mosaic__learn *l, uint32_t client)
{
    for (int i = 0; i < l->nrun; i++)
        if (l->run[i].client == client) {
            l->run[i--] = l->run[--l->nrun];
        }
}

double mosaic__learn_duration(const struct mosaic__learn *l, uint64_t id)
{
    size_t i = slot_of(l, id);

    if (!id || l->k[i].id != id)
        return 0;
    /* Both are upper bounds on the isolated time; beside HP the wall time
     * is what is charged, so the larger. */
    return fmax(l->k[i].duration_ns, l->k[i].bound_ns);
}

double mosaic__learn_remaining_ns(const struct mosaic__learn *l, uint64_t now)
{
    double sum = 0;

    for (int i = 0; i < l->nrun; i++) {
        double d = mosaic__learn_duration(l, l->run[i].id);
        double end = (double)l->run[i].start + d;
        if (d > 0)
            sum += end > (double)now ? end - (double)now : 0.5 * d;
    }
    return sum;
}

static double overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
    uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? (double)(hi - lo) : 0;
}

double mosaic__learn_charge_ns(const struct mosaic__learn *l, uint64_t t0, uint64_t now)
{
    double sum = mosaic__learn_remaining_ns(l, now);

    double ran = 0;

    if (l->evicted_end > t0)
        return INFINITY;
    for (unsigned i = 0; i < l->nhist; i++)
        ran += overlap(l->hist_start[i], l->hist_end[i], t0, now);
    for (int i = 0; i < l->nrun; i++)
        ran += overlap(l->run[i].start, now, t0, now);
    /* The what-if factor believes the time they ran beside HP the same. */
    return sum + ran * fmin(1.0, mosaic__learn_bound_factor);
}

int mosaic__learn_overlapped(const struct mosaic__learn *l, uint64_t t0, uint64_t t1)
{
    /* One that finished after t0 ran in the span (it was granted before
     * t1, since the span's end is being handled now); one still running
     * was granted before t1 as well. */
    for (int i = 0; i < l->nrun; i++)
        if (l->run[i].start <= t1)
            return 1;
    return l->last_done > t0;
}

size_t mosaic__learn_metrics(const struct mosaic__learn *l, char *buf, size_t cap)
{
    int r = snprintf(buf, cap,
                     "# HELP mosaic_policy_learned_kernels BE kernels without a profile whose "
                     "isolated duration was learned online (median of %d runs with no HP "
                     "request in flight).\n# TYPE mosaic_policy_learned_kernels gauge\n"
                     "mosaic_policy_learned_kernels %u\n"
                     "# HELP mosaic_policy_learn_samples_total Isolated runs of unknown BE "
                     "kernels measured (grant to done).\n"
                     "# TYPE mosaic_policy_learn_samples_total counter\n"
                     "mosaic_policy_learn_samples_total %llu\n"
                     "# HELP mosaic_policy_learn_discarded_total Runs of unknown BE kernels "
                     "not used (no time between grant and done).\n"
                     "# TYPE mosaic_policy_learn_discarded_total counter\n"
                     "mosaic_policy_learn_discarded_total %llu\n"
                     "# HELP mosaic_policy_learned_beside_hp_kernels BE kernels without a "
                     "profile learned from %d runs beside an HP request (upper bounds).\n"
                     "# TYPE mosaic_policy_learned_beside_hp_kernels gauge\n"
                     "mosaic_policy_learned_beside_hp_kernels %u\n"
                     "# HELP mosaic_policy_learn_bound_samples_total Runs of unknown BE "
                     "kernels beside an HP request measured (grant to done).\n"
                     "# TYPE mosaic_policy_learn_bound_samples_total counter\n"
                     "mosaic_policy_learn_bound_samples_total %llu\n",
                     MOSAIC__LEARN_SAMPLES, l->learned, (unsigned long long)l->samples,
                     (unsigned long long)l->discarded, MOSAIC__LEARN_BOUND_SAMPLES,
                     l->bound_learned, (unsigned long long)l->bound_samples);
    if (r < 0 || (size_t)r >= cap)
        return 0;
    return (size_t)r;
}
