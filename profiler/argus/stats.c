/*
 * Scopes, per-region statistics and the text summary.
 *
 * Counts and cycles are observed (read from the records); nanoseconds are
 * derived through the clock conversion (decode.c), and shares are derived
 * from those. Occurrences that are partial (no begin or no end) are counted
 * but never timed, so that a lost record cannot show up as a short region.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "argus_internal.h"

void argus_scope_all(argus_scope *s)
{
    s->iter_lo = -1;
    s->iter_hi = -1;
    s->role = 0;
    s->cta_lo = 0;
    s->cta_hi = UINT32_MAX;
    s->sm_lo = 0;
    s->sm_hi = UINT32_MAX;
    s->warp_lo = 0;
    s->warp_hi = UINT32_MAX;
    s->region = 0;
}

int argus_scope_region(argus_scope *s, const argus_registry *reg, const char *name,
                       char *msg, size_t msglen)
{
    if (s == NULL || name == NULL)
        return ARGUS_EINVAL;
    uint32_t ids[2];
    size_t found = argus_registry_find(reg, name, ids, 2);
    if (found == 1) {
        s->region = ids[0];
        return 0;
    }
    if (msg == NULL || msglen == 0)
        return ARGUS_ENOREGION;
    if (reg == NULL)
        return argus__fail(ARGUS_ENOREGION, msg, msglen,
                           "no registry to look the region up in; pass one (argus registry SRC -o REG)");
    /* The registered names, as many as fit, so that a typo is easy to see. */
    int off = snprintf(msg, msglen, "%s; the registry has:",
                       found ? "several regions of that name (under different parents)"
                             : "no region of that name");
    for (size_t i = 0; off >= 0 && (size_t)off < msglen && i < argus_registry_count(reg); i++) {
        const char *n;
        int is_role;
        argus_registry_entry(reg, i, NULL, &n, NULL, &is_role);
        if (!is_role) {
            int w = snprintf(msg + off, msglen - (size_t)off, " %s", n);
            off = w < 0 ? -1 : off + w;
        }
    }
    return ARGUS_ENOREGION;
}

int argus_scope_match(const argus_scope *s, const argus_occurrence *o)
{
    if (s == NULL)
        return 1;
    if (s->iter_lo >= 0 && (o->iter < s->iter_lo || o->iter > s->iter_hi))
        return 0;
    if (s->role != 0 && o->role != s->role)
        return 0;
    return o->cta >= s->cta_lo && o->cta <= s->cta_hi && o->sm >= s->sm_lo &&
           o->sm <= s->sm_hi && o->warp >= s->warp_lo && o->warp <= s->warp_hi;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The scoped warps' lifetimes in SM cycles: the denominator of a region's
 * share, in the same unit as the region's cycles, so that a share needs no
 * clock conversion. A scope on role or iteration keeps all warps of its
 * CTA/SM/warp range, because a warp's lifetime is not split by iteration. */
static double scoped_warp_cycles(const argus_trace *t, const argus_scope *s)
{
    double sum = 0;
    for (size_t i = 0; i < t->nwarps; i++) {
        const argus_warp_info *w = &t->warps[i];
        if (w->flags & (ARGUS_WARP_EMPTY | ARGUS_WARP_NOT_ENDED))
            continue;
        if (s && (w->cta < s->cta_lo || w->cta > s->cta_hi || w->sm < s->sm_lo ||
                  w->sm > s->sm_hi || w->warp < s->warp_lo || w->warp > s->warp_hi))
            continue;
        sum += (double)(w->clk_end - w->clk_start);
    }
    return sum;
}

/* Whether node k is the scope's region or lies below it. Nodes come after
 * their parents, so the walk up ends. */
static int in_region(const argus_trace *t, const argus_scope *s, uint32_t k)
{
    if (s == NULL || s->region == 0)
        return 1;
    for (int32_t n = (int32_t)k; n >= 0; n = t->nodes[n].parent)
        if (t->nodes[n].region == s->region)
            return 1;
    return 0;
}

int argus_stats(const argus_trace *t, const argus_scope *s, argus_region_stats **out, size_t *n)
{
    if (t == NULL || out == NULL || n == NULL)
        return ARGUS_EINVAL;
    *out = NULL;
    *n = 0;
    if (t->nnodes == 0)
        return 0;
    argus_region_stats *st = calloc(t->nnodes, sizeof(*st));
    size_t *fill = calloc(t->nnodes, sizeof(*fill));
    double **dur = calloc(t->nnodes, sizeof(*dur));
    int rc = ARGUS_ENOMEM;
    if (st == NULL || fill == NULL || dur == NULL)
        goto out;
    for (size_t i = 0; i < t->nocc; i++) {
        const argus_occurrence *o = &t->occ[i];
        if (!argus_scope_match(s, o))
            continue;
        argus_region_stats *r = &st[o->node];
        r->count++;
        if (o->flags & (ARGUS_OCC_NO_END | ARGUS_OCC_NO_BEGIN))
            r->partial++;
    }
    for (size_t k = 0; k < t->nnodes; k++) {
        st[k].node = (uint32_t)k;
        st[k].region = t->nodes[k].region;
        st[k].timed = st[k].count - st[k].partial;
        if (st[k].timed && (dur[k] = malloc(st[k].timed * sizeof(double))) == NULL)
            goto out;
    }
    for (size_t i = 0; i < t->nocc; i++) {
        const argus_occurrence *o = &t->occ[i];
        if (!argus_scope_match(s, o) || (o->flags & (ARGUS_OCC_NO_END | ARGUS_OCC_NO_BEGIN)))
            continue;
        argus_region_stats *r = &st[o->node];
        r->total_cycles += o->clk_end - o->clk_begin;
        double b, d;
        argus__occ_time(t, o, &b, &d);
        dur[o->node][fill[o->node]++] = d;
    }
    double wc = scoped_warp_cycles(t, s);
    size_t m = 0;
    for (size_t k = 0; k < t->nnodes; k++) {
        argus_region_stats r = st[k];
        if (r.count == 0 || !in_region(t, s, (uint32_t)k))
            continue;
        if (r.timed) {
            qsort(dur[k], r.timed, sizeof(double), cmp_double);
            for (size_t j = 0; j < r.timed; j++)
                r.total_ns += dur[k][j];
            r.mean_ns = r.total_ns / (double)r.timed;
            r.p50_ns = argus__percentile(dur[k], r.timed, 50);
            r.p99_ns = argus__percentile(dur[k], r.timed, 99);
            r.min_ns = dur[k][0];
            r.max_ns = dur[k][r.timed - 1];
            r.share = wc > 0 ? (double)r.total_cycles / wc : 0;
        }
        st[m++] = r;
    }
    *out = st;
    *n = m;
    st = NULL;
    rc = 0;
out:
    for (size_t k = 0; dur && k < t->nnodes; k++)
        free(dur[k]);
    free(dur);
    free(fill);
    free(st);
    return rc;
}

int argus_node_path(const argus_trace *t, const argus_registry *reg, uint32_t node,
                    char *buf, size_t len)
{
    if (t == NULL || buf == NULL || len == 0 || node >= t->nnodes)
        return ARGUS_EINVAL;
    uint32_t chain[64];
    size_t n = 0;
    for (int32_t k = (int32_t)node; k >= 0 && n < 64; k = t->nodes[k].parent)
        chain[n++] = (uint32_t)k;
    size_t off = 0;
    buf[0] = '\0';
    while (n-- > 0) {
        char idbuf[16];
        const char *name = argus__name(reg, t->nodes[chain[n]].region, idbuf, sizeof(idbuf));
        int w = snprintf(buf + off, len - off, "%s%s", off ? "/" : "", name);
        if (w < 0 || (size_t)w >= len - off)
            return ARGUS_ERANGE;
        off += (size_t)w;
    }
    return 0;
}

static const char *clock_method_name(int m)
{
    return m == ARGUS_CLOCK_GIVEN ? "given" : m == ARGUS_CLOCK_ANCHORS ? "globaltimer anchors" : "none (times are cycles)";
}

int argus_report_text(const argus_trace *t, const argus_registry *reg, const argus_scope *s,
                      const char *kernel, FILE *f)
{
    if (t == NULL || f == NULL)
        return ARGUS_EINVAL;
    argus_region_stats *st;
    size_t n;
    int rc = argus_stats(t, s, &st, &n);
    if (rc != 0)
        return rc;
    fprintf(f, "argus region report: kernel %s, %u CTAs x %u warps, %llu warps ran\n",
            kernel ? kernel : "(unnamed)", t->hdr.nslots / t->hdr.warps_per_cta,
            t->hdr.warps_per_cta, (unsigned long long)t->warps_active);
    fprintf(f, "kernel span %.3f us (globaltimer, observed); SM clock %.4f GHz (%s)\n",
            (double)(t->gt_max - t->gt_min) / 1e3, t->cycles_per_ns,
            clock_method_name(t->clock_method));
    /* Without a clock conversion the times are thousands of cycles. */
    int cyc = t->clock_method == ARGUS_CLOCK_NONE;
    fprintf(f, "%-32s %8s %8s %12s %10s %10s %10s %7s\n", "region", "count", "partial",
            cyc ? "total_kcyc" : "total_us", cyc ? "mean_kcyc" : "mean_us",
            cyc ? "p50_kcyc" : "p50_us", cyc ? "p99_kcyc" : "p99_us", "share");
    fprintf(f, "%-32s %8s %8s %12s %10s %10s %10s %7s\n", "", "obs", "obs", "derived",
            "derived", "derived", "derived", "derived");
    for (size_t i = 0; i < n; i++) {
        char path[512];
        if (argus_node_path(t, reg, st[i].node, path, sizeof(path)) != 0)
            snprintf(path, sizeof(path), "0x%07x", st[i].region);
        fprintf(f, "%-32s %8llu %8llu %12.3f %10.3f %10.3f %10.3f %6.1f%%\n", path,
                (unsigned long long)st[i].count, (unsigned long long)st[i].partial,
                st[i].total_ns / 1e3, st[i].mean_ns / 1e3, st[i].p50_ns / 1e3,
                st[i].p99_ns / 1e3, 100.0 * st[i].share);
    }
    fprintf(f, "share: region cycles summed over warps / the scoped warps' lifetimes in cycles\n");
    if (t->records_lost)
        fprintf(f, "WARNING: %llu records lost to ring wraps; regions cut by a wrap are "
                   "counted as partial and not timed (raise the per-warp capacity)\n",
                (unsigned long long)t->records_lost);
    uint64_t per_kind[ARGUS_DIAG_COUNT] = {0};
    for (size_t i = 0; i < t->ndiags; i++)
        per_kind[t->diags[i].kind] += t->diags[i].kind == ARGUS_DIAG_WRAPPED ? 1 : t->diags[i].count;
    for (int k = 0; k < ARGUS_DIAG_COUNT; k++)
        if (per_kind[k])
            fprintf(f, "diagnostic: %s: %llu\n", argus_diag_name(k), (unsigned long long)per_kind[k]);
    if (t->diags_dropped)
        fprintf(f, "diagnostic: %llu more not kept\n", (unsigned long long)t->diags_dropped);
    free(st);
    return 0;
}
