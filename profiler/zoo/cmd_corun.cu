/*
 * mosaic-zoo corun: gated co-runs of pairs of variants (from --pairs FILE
 * or every pair of --variants) sharing the GPU or on the two parts of one
 * SM split, against each variant's isolated timing on the same side and its
 * gated solo launch. Instances are cached across pairs and evicted, least
 * recently used first, when device memory runs low. The cache, the
 * isolated timings and the pairs reader are shared with corun-offset
 * (zoo_corun.h).
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo.h"
#include "zoo_cmds.h"
#include "zoo_corun.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"
#include "zoo_streams.h"
#include "zoo_timing.h"

void cache_evict(struct corun_state *C, struct cache_ent *e)
{
    inst_teardown(&e->inst);
    e->live = 0;
    C->n_live--;
}

/* Keeps free memory above ZOO_EVICT_BELOW plus what the next setup needs,
 * dropping the least recently used instances first (never keep). */
static void cache_make_room(struct corun_state *C, size_t need,
                            const struct cache_ent *keep)
{
    size_t fr = 0, tot = 0;
    int i;

    for (;;) {
        struct cache_ent *lru = NULL;

        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
            cudaGetLastError();
            return;
        }
        if (fr >= ZOO_EVICT_BELOW + need)
            return;
        for (i = 0; i < 2 * zoo_n_variants; i++) {
            struct cache_ent *e = &C->cache[i];

            if (e->live && e != keep && (!lru || e->last_use < lru->last_use))
                lru = e;
        }
        if (!lru)
            return;
        fprintf(stderr, "mosaic-zoo: %zu MB free; evicting %s\n", fr >> 20,
                lru->inst.v->name);
        cache_evict(C, lru);
    }
}

struct zoo_inst *cache_get(struct corun_state *C, int vi, int copy,
                           const struct cache_ent *keep)
{
    struct cache_ent *e = &C->cache[vi * 2 + copy];
    const struct zoo_variant *v = &zoo_variants[vi];
    size_t ws;

    e->last_use = ++C->clock;
    if (e->live)
        return &e->inst;
    if (e->failed) {
        seterr("%s", e->err);
        return NULL;
    }
    /* Rotation makes a small variant allocate about 2 * L2 in all. */
    ws = working_set(v);
    cache_make_room(C, ws + (ws > 2 * (size_t)g_dev.l2_bytes
                             ? 0 : 2 * (size_t)g_dev.l2_bytes), keep);
    fprintf(stderr, "mosaic-zoo: setup %s (copy %d)\n", v->name, copy);
    if (inst_setup(&e->inst, v, &e->setup_s)) {
        e->failed = 1;
        copy_str(e->err, sizeof(e->err), g_err);
        recover();
        return NULL;
    }
    e->live = 1;
    C->n_live++;
    return &e->inst;
}

/* Isolated timing of variant vi on side 0 (A's configuration) or 1 (B's),
 * measured once and reused by every pair. */
struct iso_ent *iso_get(struct corun_state *C, int vi, int side,
                        struct zoo_inst *in)
{
    struct iso_ent *e = &C->iso[vi * 2 + side];
    struct xcfg *c = side ? &C->b : &C->a;
    double g[ZOO_MAX_REPEATS];
    int rc = 0;

    if (e->done) {
        if (e->rc)
            seterr("%s", e->err);
        return e;
    }
    e->done = 1;
    CKZ(measure_iso(in, c->s[0], 1, &e->t));
    CKZ(gated_solo(in, c->s[0], C->repeats, g));
    e->gated_med = median_of(g, C->repeats);
    minmax_of(g, C->repeats, &e->gated_min, &e->gated_max);
out:
    e->rc = rc;
    if (rc) {
        snprintf(e->err, sizeof(e->err), "isolated timing of %s: ",
                 in->v->name);
        copy_str(e->err + strlen(e->err), sizeof(e->err) - strlen(e->err),
                 g_err);
        /* Report the same message now as for every later pair. */
        clear_err();
        seterr("%s", e->err);
        recover();
    }
    return e;
}

void j_corun_durations(const double *a, const double *b, int n, double *ma,
                       double *mb)
{
    double mn, mx;

    *ma = median_of(a, n);
    *mb = median_of(b, n);
    j_num("corun_a_us", *ma);
    minmax_of(a, n, &mn, &mx);
    j_num("corun_a_min_us", mn);
    j_num("corun_a_max_us", mx);
    j_num("corun_b_us", *mb);
    minmax_of(b, n, &mn, &mx);
    j_num("corun_b_min_us", mn);
    j_num("corun_b_max_us", mx);
}

static void emit_corun(struct corun_state *C, int va, int vb, int b_first,
                       const struct iso_ent *ia, const struct iso_ent *ib,
                       const struct co_sample *s, int n, int ok)
{
    double a[ZOO_MAX_REPEATS], b[ZOO_MAX_REPEATS], off[ZOO_MAX_REPEATS];
    double ea[ZOO_MAX_REPEATS], eb[ZOO_MAX_REPEATS];
    double ma, mb;
    int i, expired = 0;

    for (i = 0; i < n; i++) {
        double first = s[i].t_sa < s[i].t_sb ? s[i].t_sa : s[i].t_sb;

        a[i] = s[i].a_us;
        b[i] = s[i].b_us;
        off[i] = s[i].t_sb - s[i].t_sa;
        ea[i] = s[i].t_ea - first;
        eb[i] = s[i].t_eb - first;
        expired += s[i].gate_expired;
    }
    j_begin("corun");
    j_result(ok);
    j_str("mode", g_opt.partitioned ? "partitioned" : "shared");
    j_int("sms_a", C->a.sms);
    j_int("sms_b", C->b.sms);
    if (g_opt.partitioned)
        j_int("split_requested", g_opt.split);
    else
        j_null("split_requested");
    j_str("order", b_first ? "ba" : "ab");
    j_str("a", zoo_variants[va].name);
    j_str("b", zoo_variants[vb].name);
    j_str("family_a", zoo_variants[va].family);
    j_str("family_b", zoo_variants[vb].family);
    j_str("method", "event_gated");
    j_int("repeats", n);
    j_int("warmup", 1);
    j_num("gate_us", g_opt.gate_us);
    if (ia && !ia->rc) {
        j_num("iso_a_us", ia->t.median);
        j_str("iso_a_method", ia->t.method);
        j_num("iso_gated_a_us", ia->gated_med);
        j_str("check_a", ia->t.check < 0 ? "none" : ia->t.check ? "fail"
                                                                 : "pass");
    }
    if (ib && !ib->rc) {
        j_num("iso_b_us", ib->t.median);
        j_str("iso_b_method", ib->t.method);
        j_num("iso_gated_b_us", ib->gated_med);
        j_str("check_b", ib->t.check < 0 ? "none" : ib->t.check ? "fail"
                                                                 : "pass");
    }
    if (!ok || n == 0) {
        j_end();
        return;
    }
    j_corun_durations(a, b, n, &ma, &mb);
    j_num("slowdown_a", ma / ia->t.median);
    j_num("slowdown_b", mb / ib->t.median);
    j_num("slowdown_gated_a", ma / ia->gated_med);
    j_num("slowdown_gated_b", mb / ib->gated_med);
    j_num("start_offset_us", median_of(off, n));
    j_num("end_a_us", median_of(ea, n));
    j_num("end_b_us", median_of(eb, n));
    j_int("gate_expired", expired);
    j_nums("corun_a_samples_us", a, n);
    j_nums("corun_b_samples_us", b, n);
    j_nums("start_offset_samples_us", off, n);
    j_nums("end_a_samples_us", ea, n);
    j_nums("end_b_samples_us", eb, n);
    j_end();
}

static void corun_measure(struct corun_state *C, int va, int vb, int b_first)
{
    struct co_sample s[ZOO_MAX_REPEATS];
    struct co_sample warm;
    struct zoo_inst *ia, *ib;
    struct iso_ent *isa = NULL, *isb = NULL;
    int rc = 0, r, n = 0;

    clear_err();
    fprintf(stderr, "mosaic-zoo: corun %s + %s (%s)\n", zoo_variants[va].name,
            zoo_variants[vb].name, b_first ? "ba" : "ab");
    ia = cache_get(C, va, 0, NULL);
    if (!ia) {
        rc = -1;
        goto out;
    }
    /* A variant paired with itself needs a second copy of its buffers. */
    ib = cache_get(C, vb, va == vb ? 1 : 0, &C->cache[va * 2]);
    if (!ib) {
        rc = -1;
        goto out;
    }
    isa = iso_get(C, va, 0, ia);
    if (isa->rc) {
        rc = isa->rc;
        goto out;
    }
    isb = iso_get(C, vb, g_opt.partitioned ? 1 : 0, ib);
    if (isb->rc) {
        rc = isb->rc;
        goto out;
    }
    CKZ(corun_once(ia, C->a.s[0], ib, C->b.s[0], b_first, &warm));
    for (r = 0; r < C->repeats; r++) {
        CKZ(corun_once(ia, C->a.s[0], ib, C->b.s[0], b_first, &s[r]));
        n++;
    }
out:
    emit_corun(C, va, vb, b_first, isa, isb, s, n, rc == 0);
    if (rc)
        recover();
}

/* Pairs from a file of "A B" lines; '#' starts a comment. */
int read_pairs(const char *path, int **pairs, int *n_pairs)
{
    char line[1024], msg[512];
    FILE *f = fopen(path, "r");
    int cap = 64, n = 0, lineno = 0;
    int *p;

    *pairs = NULL;
    *n_pairs = 0;
    if (!f) {
        snprintf(msg, sizeof(msg), "cannot open pairs file %s: %s", path,
                 strerror(errno));
        error_record(msg);
        return -1;
    }
    p = (int *)malloc(2 * (size_t)cap * sizeof(int));
    while (p && fgets(line, sizeof(line), f)) {
        char *save = NULL, *a, *b, *extra, *hash = strchr(line, '#');
        int ia, ib;

        lineno++;
        if (hash)
            *hash = 0;
        a = strtok_r(line, " \t\r\n", &save);
        if (!a)
            continue;
        b = strtok_r(NULL, " \t\r\n", &save);
        extra = strtok_r(NULL, " \t\r\n", &save);
        if (!b || extra) {
            snprintf(msg, sizeof(msg), "%s:%d: expected two variant names",
                     path, lineno);
            error_record(msg);
            continue;
        }
        ia = find_variant(a);
        ib = find_variant(b);
        if (ia < 0 || ib < 0) {
            snprintf(msg, sizeof(msg), "%s:%d: unknown variant '%s'", path,
                     lineno, ia < 0 ? a : b);
            error_record(msg);
            continue;
        }
        if (n == cap) {
            int *np = (int *)realloc(p, 4 * (size_t)cap * sizeof(int));

            if (!np)
                break;
            p = np;
            cap *= 2;
        }
        p[2 * n] = ia;
        p[2 * n + 1] = ib;
        n++;
    }
    fclose(f);
    if (!p) {
        error_record("out of host memory");
        return -1;
    }
    *pairs = p;
    *n_pairs = n;
    return 0;
}

/* Unordered pairs of the selected variants, each with itself too. */
static int all_pairs(int **pairs, int *n_pairs)
{
    unsigned char *sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1);
    int i, j, n = 0, m;
    int *p;

    *pairs = NULL;
    *n_pairs = 0;
    if (!sel)
        return -1;
    m = select_variants(g_opt.variants, sel);
    p = (int *)malloc(((size_t)m * (m + 1) + 2) * sizeof(int));
    if (!p) {
        free(sel);
        return -1;
    }
    for (i = 0; i < zoo_n_variants; i++) {
        if (!sel[i])
            continue;
        for (j = i; j < zoo_n_variants; j++) {
            if (!sel[j])
                continue;
            p[2 * n] = i;
            p[2 * n + 1] = j;
            n++;
        }
    }
    free(sel);
    *pairs = p;
    *n_pairs = n;
    return 0;
}

int cmd_corun(void)
{
    struct corun_state C;
    int *pairs = NULL;
    int n_pairs = 0, i, rc;

    memset(&C, 0, sizeof(C));
    C.repeats = g_opt.repeats ? g_opt.repeats : 7;
    rc = g_opt.pairs_path ? read_pairs(g_opt.pairs_path, &pairs, &n_pairs)
                      : all_pairs(&pairs, &n_pairs);
    if (rc) {
        if (!g_opt.pairs_path)
            error_record("out of host memory");
        return -1;
    }
    C.cache = (struct cache_ent *)calloc(2 * (size_t)zoo_n_variants + 2,
                                         sizeof(struct cache_ent));
    C.iso = (struct iso_ent *)calloc(2 * (size_t)zoo_n_variants + 2,
                                     sizeof(struct iso_ent));
    if (!C.cache || !C.iso) {
        error_record("out of host memory");
        goto out;
    }
    clear_err();
    if (cfg_open_corun_pair(&C.a, &C.b, g_opt.partitioned, g_opt.split))
        goto out;
    for (i = 0; i < n_pairs && !should_stop(); i++) {
        if (g_opt.order_ab && !should_stop())
            corun_measure(&C, pairs[2 * i], pairs[2 * i + 1], 0);
        if (g_opt.order_ba && !should_stop())
            corun_measure(&C, pairs[2 * i], pairs[2 * i + 1], 1);
    }
out:
    for (i = 0; C.cache && i < 2 * zoo_n_variants; i++)
        if (C.cache[i].live)
            cache_evict(&C, &C.cache[i]);
    cfg_close(&C.a);
    cfg_close(&C.b);
    free(C.cache);
    free(C.iso);
    free(pairs);
    return 0;
}
