/*
 * The daemon's kernel profile store: every kernel of the mosaic-profile/1
 * files in `profile-dir`, found by the 64-bit hash of its profile key
 * (name + launch configuration), which is what clients post as a kernel's
 * id. The key itself never crosses the ring: 8 bytes per event, and a
 * hostile client can only name a kernel, never make the daemon parse text.
 *
 * A profile file that cannot be read is skipped and named in the log, the
 * others loaded: a deployment with one bad capture keeps the rest. When two
 * files profile the same key, the first one read (in name order) wins,
 * unless it has no duration_ns and a later one has: on the H200 (call 3,
 * issue 15) bert.profile.json's duration-less entries of two of PyTorch's
 * grid-1 elementwise kernels shadowed resnet18_train.profile.json's timed
 * ones, and the policy held those BE kernels as unknown beside HP.
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "mosaic/sched.h"
#include "mosaic/profile.h"

struct slot {
    uint64_t id;
    const struct mosaic_kernel *k;
};

struct mosaic__pstore {
    struct mosaic_profile *profiles;
    size_t nprofiles;
    struct slot *tab; /* open addressing, a power of two, id 0 = empty */
    size_t mask, count;
};

uint64_t mosaic__kernel_id(const char *key)
{
    return mosaic_sched_kernel_id(key);
}

static void put(struct mosaic__pstore *s, const struct mosaic_kernel *k)
{
    uint64_t id = mosaic__kernel_id(k->key);

    for (size_t i = id & s->mask;; i = (i + 1) & s->mask) {
        if (s->tab[i].id == id) {
            /* The first file's profile of a key wins, unless only a later
             * one has a duration (the policy needs it to predict). */
            if (!(s->tab[i].k->metrics[MOSAIC_M_duration_ns] > 0) &&
                k->metrics[MOSAIC_M_duration_ns] > 0)
                s->tab[i].k = k;
            return;
        }
        if (s->tab[i].id == 0) {
            s->tab[i] = (struct slot){id, k};
            s->count++;
            return;
        }
    }
}

const struct mosaic_kernel *mosaic__pstore_get(const struct mosaic__pstore *s, uint64_t id)
{
    if (!s || !id)
        return NULL;
    for (size_t i = id & s->mask;; i = (i + 1) & s->mask) {
        if (s->tab[i].id == id)
            return s->tab[i].k;
        if (s->tab[i].id == 0)
            return NULL;
    }
}

size_t mosaic__pstore_count(const struct mosaic__pstore *s)
{
    return s ? s->count : 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int mosaic__pstore_load(const char *dir, struct mosaic__pstore **out, unsigned *loaded,
                        unsigned *skipped, char *err, size_t errlen)
{
    struct dirent **names = NULL;
    struct mosaic__pstore *s;
    size_t nkernels = 0, cap = 16;
    int n;

    *out = NULL;
    *loaded = *skipped = 0;
    n = scandir(dir, &names, NULL, by_name);
    if (n < 0) {
        snprintf(err, errlen, "profile-dir %s: cannot be read (%s): set profile-dir to a "
                 "directory of *.profile.json files, or \"\" for none", dir, strerror(errno));
        return MOSAIC_EIO;
    }
    s = calloc(1, sizeof(*s));
    if (s)
        s->profiles = calloc((size_t)n + 1, sizeof(*s->profiles));
    if (!s || !s->profiles) {
        free(s);
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return MOSAIC_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        char path[8192], why[1024];
        struct mosaic_profile *p = &s->profiles[s->nprofiles];

        if (ends_with(names[i]->d_name, ".profile.json") &&
            snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) < (int)sizeof(path)) {
            mosaic_profile_init(p);
            if (mosaic_profile_read_file(path, p, why, sizeof(why)) == 0) {
                s->nprofiles++;
                (*loaded)++;
                nkernels += p->n_kernels;
            } else {
                mosaic_profile_free(p);
                (*skipped)++;
                mosaic__dlog(MOSAIC__L_WARN, "profile-dir: %s skipped (%s); the other files "
                             "are loaded (fix or remove it)", path, why);
            }
        }
        free(names[i]);
    }
    free(names);
    while (cap < 2 * nkernels)
        cap *= 2;
    s->tab = calloc(cap, sizeof(*s->tab));
    if (!s->tab) {
        mosaic__pstore_free(s);
        return MOSAIC_ENOMEM;
    }
    s->mask = cap - 1;
    for (size_t f = 0; f < s->nprofiles; f++)
        for (size_t k = 0; k < s->profiles[f].n_kernels; k++)
            if (s->profiles[f].kernels[k].key)
                put(s, &s->profiles[f].kernels[k]);
    *out = s;
    return 0;
}

void mosaic__pstore_free(struct mosaic__pstore *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nprofiles; i++)
        mosaic_profile_free(&s->profiles[i]);
    free(s->profiles);
    free(s->tab);
    free(s);
}
