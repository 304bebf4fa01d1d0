/* Argus: error codes, messages and small helpers used by every file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus_internal.h"

const char *argus_strerror(int err)
{
    switch (err) {
#define ARGUS_X_STR(name, value, m) \
    case value:                     \
        return m;
        ARGUS_ERRORS(ARGUS_X_STR)
#undef ARGUS_X_STR
    default:
        return "unknown Argus error code";
    }
}

int argus__fail(int err, char *msg, size_t msglen, const char *fmt, ...)
{
    if (msg != NULL && msglen > 0) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
        if (n < 0)
            msg[0] = '\0';
    }
    return err;
}

int argus__grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem)
            return ARGUS_ENOMEM;
        n *= 2;
    }
    void *p = realloc(*arr, n * elem);
    if (p == NULL)
        return ARGUS_ENOMEM;
    *arr = p;
    *cap = n;
    return 0;
}

const char *argus__name(const argus_registry *reg, uint32_t id, char *buf, size_t len)
{
    const char *name = reg ? argus_registry_name(reg, id) : NULL;
    if (name != NULL)
        return name;
    int n = snprintf(buf, len, "0x%07x", id);
    if (n < 0 || (size_t)n >= len)
        return "?";
    return buf;
}

double argus__percentile(const double *sorted, size_t n, double p)
{
    /* Nearest rank: the smallest value with at least p% of the samples at
     * or below it, so that p50/p99 are values that were measured. */
    size_t rank = (size_t)((p / 100.0) * (double)n + 0.999999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

void argus__occ_time(const argus_trace *t, const argus_occurrence *o, double *begin, double *dur)
{
    double rate = t->cycles_per_ns > 0 ? t->cycles_per_ns : 1.0;
    /* Integer differences first: clocks and anchors are 64-bit counts far
     * beyond a double's 2^53, their differences are not. */
    double span = (double)(int64_t)(o->clk_end - o->clk_begin);
    if (t->clock_method == ARGUS_CLOCK_HOST) {
        *begin = (double)(int64_t)(o->clk_begin - t->gt_min);
        *dur = span;
        return;
    }
    const argus_warp_info *w = o->slot < t->nwarps ? &t->warps[o->slot] : NULL;
    double from_warp = w ? (double)(int64_t)(o->clk_begin - w->clk_start) / rate : 0.0;
    double base = 0.0;
    if (w && t->clock_method != ARGUS_CLOCK_NONE)
        base = (double)(int64_t)(w->gt_start - t->gt_min);
    *begin = base + from_warp;
    *dur = span / rate;
}
