/*
 * The simulated GPU's data: kernel profiles (mosaic-profile/1), the variant
 * table that names which profile keys each co-run variant launched, and the
 * measured H200 co-runs (corun.jsonl). Read once, by the process that
 * creates the segment, into the segment's fixed tables, so that every
 * process sees the same numbers and only one pays for parsing 10 MB.
 *
 * Nothing here comes from the predictor: durations are the profiles'
 * measured ones and slowdowns the co-runs' measured samples.
 */
#define _GNU_SOURCE
#include "simgpu.h"
#include "simgpu_shm.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SIMGPU_DATA_DIR
#error "SIMGPU_DATA_DIR must name profiler/data/h200"
#endif

/* The setting, or the built-in default; "" means none. */
static const char *setting(const char *var, const char *dflt)
{
    const char *v = getenv(var);
    return v != NULL ? v : dflt;
}

/* Whole file as a NUL-terminated string, or NULL with a message. */
static char *slurp(const char *path, const char *var)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "simgpu: %s (%s): %s; set %s to an existing file "
                "or to \"\" for none\n", path, var, strerror(errno), var);
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 65536) {
            cap = cap ? 2 * cap : 262144;
            char *nb = realloc(buf, cap + 1);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                fprintf(stderr, "simgpu: %s: out of memory\n", path);
                return NULL;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    bool err = ferror(f) != 0;
    fclose(f);
    if (err) {
        fprintf(stderr, "simgpu: %s: read error\n", path);
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

static double num(const cJSON *o, const char *name, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static double val(const cJSON *v, double dflt)
{
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static int find_variant(const struct sim_shm *m, const char *name)
{
    for (uint32_t i = 0; i < m->nvariants; i++)
        if (strcmp(m->variants[i], name) == 0)
            return (int)i;
    return -1;
}

static int find_kernel(const struct sim_shm *m, const char *key)
{
    for (uint32_t i = 0; i < m->nkernels; i++)
        if (strcmp(m->kernels[i].key, key) == 0)
            return (int)i;
    return -1;
}

/* One mosaic-profile/1 file: every kernel with a duration. A key already
 * loaded from an earlier file keeps its first profile. */
static int load_profile(struct sim_shm *m, const char *path)
{
    const char *var = "MOSAIC_SIMGPU_PROFILES";
    char *text = slurp(path, var);
    if (text == NULL)
        return SIM_EIO;
    cJSON *doc = cJSON_Parse(text);
    free(text);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(doc, "kernels");
    if (!cJSON_IsString(schema) ||
        strcmp(schema->valuestring, "mosaic-profile/1") != 0 ||
        !cJSON_IsArray(ks)) {
        fprintf(stderr, "simgpu: %s: not a mosaic-profile/1 file (need "
                "\"schema\": \"mosaic-profile/1\" and a \"kernels\" array; "
                "see docs/profile-schema.md); fix %s\n", path, var);
        cJSON_Delete(doc);
        return SIM_EFORMAT;
    }
    const cJSON *k;
    cJSON_ArrayForEach(k, ks) {
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(k, "key");
        double dur = num(k, "duration_ns", -1);
        if (!cJSON_IsString(key) || dur <= 0 ||
            strlen(key->valuestring) >= SIM_KEYLEN ||
            find_kernel(m, key->valuestring) >= 0)
            continue; /* unmeasured, too long to key, or already loaded */
        if (m->nkernels == SIM_KERNELS) {
            fprintf(stderr, "simgpu: %s: more than %d profiled kernels; "
                    "the rest are simulated as unprofiled\n", path,
                    SIM_KERNELS);
            break;
        }
        struct sim_kernel *sk = &m->kernels[m->nkernels++];
        snprintf(sk->key, sizeof sk->key, "%s", key->valuestring);
        sk->dur_ns = dur;
        sk->variant = -1;
        const cJSON *met = cJSON_GetObjectItemCaseSensitive(k, "metrics");
        double bytes = fmax(0, num(met, "dram_read_bytes", 0)) +
                       fmax(0, num(met, "dram_write_bytes", 0));
        sk->dram_bps = bytes / (dur * 1e-9);
        /* Share of the GPU's resident-block slots (132 SMs) the grid
         * fills: a grid that fills every SM competes for all of them. */
        const cJSON *grid = cJSON_GetObjectItemCaseSensitive(k, "grid");
        double blocks = 1;
        const cJSON *g;
        cJSON_ArrayForEach(g, grid) blocks *= fmax(1, val(g, 1));
        const cJSON *occ = cJSON_GetObjectItemCaseSensitive(k, "occupancy");
        double per_sm = num(occ, "blocks_per_sm", 1);
        sk->occupancy = fmin(1, blocks / (fmax(1, per_sm) * 132));
        sk->blocks = blocks;
        sk->blocks_per_sm = fmax(1, per_sm);
    }
    cJSON_Delete(doc);
    return 0;
}

static int load_profiles(struct sim_shm *m)
{
    const char *list = setting("MOSAIC_SIMGPU_PROFILES",
                               SIMGPU_DATA_DIR "/zoo.profile.json");
    char *copy = strdup(list), *save = NULL;
    if (copy == NULL)
        return SIM_ENOMEM;
    int r = 0;
    for (char *p = strtok_r(copy, ":", &save); p != NULL && r == 0;
         p = strtok_r(NULL, ":", &save))
        r = load_profile(m, p);
    free(copy);
    return r;
}

/* variant_kernels.json: which keys each variant launched. A key of several
 * variants belongs to the first. */
static int load_variants(struct sim_shm *m)
{
    const char *var = "MOSAIC_SIMGPU_VARIANTS";
    const char *path = setting(var, SIMGPU_DATA_DIR "/variant_kernels.json");
    if (*path == '\0')
        return 0;
    char *text = slurp(path, var);
    if (text == NULL)
        return SIM_EIO;
    cJSON *doc = cJSON_Parse(text);
    free(text);
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(doc, "variants");
    if (!cJSON_IsObject(vs)) {
        fprintf(stderr, "simgpu: %s: no \"variants\" object (expected "
                "mosaic-variant-kernels/1); fix %s\n", path, var);
        cJSON_Delete(doc);
        return SIM_EFORMAT;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, vs) {
        if (v->string == NULL || strlen(v->string) >= SIM_VARLEN)
            continue;
        if (m->nvariants == SIM_VARIANTS) {
            fprintf(stderr, "simgpu: %s: more than %d variants; the rest "
                    "follow the unmeasured-pair rule\n", path, SIM_VARIANTS);
            break;
        }
        int vi = (int)m->nvariants;
        snprintf(m->variants[vi], SIM_VARLEN, "%s", v->string);
        m->nvariants++;
        const cJSON *key;
        cJSON_ArrayForEach(key, cJSON_GetObjectItemCaseSensitive(v, "kernels")) {
            if (!cJSON_IsString(key))
                continue;
            int ki = find_kernel(m, key->valuestring);
            if (ki >= 0 && m->kernels[ki].variant < 0)
                m->kernels[ki].variant = vi;
        }
    }
    cJSON_Delete(doc);
    return 0;
}

static void add_sample(struct sim_shm *m, int first, int second, double sf,
                       double ss)
{
    struct sim_pair *p = &m->pairs[first][second];
    if (!(sf > 0) || !(ss > 0) || p->n == SIM_SAMPLES)
        return;
    if (p->n == 0)
        m->npairs++;
    p->first[p->n] = (float)sf;
    p->second[p->n] = (float)ss;
    p->n++;
}

/* One shared-mode record: each repeat's slowdowns, filed under the order
 * the two kernels actually started in that repeat (start_offset > 0: a
 * started first), so that the simulator can draw the bimodal outcome for
 * the order it sees. Records without per-repeat samples give their
 * medians under the enqueue order. */
/* Every repeat's |start offset|, for the dispatch-jitter window. */
struct offsets {
    double *v;
    size_t n, cap;
};

static void add_offset(struct offsets *o, double us)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 4096;
        double *nv = realloc(o->v, cap * sizeof *nv);
        if (nv == NULL)
            return; /* the window is then taken from fewer repeats */
        o->v = nv;
        o->cap = cap;
    }
    o->v[o->n++] = fabs(us);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One measured isolated time of variant v on a green context of sms SMs
 * (the whole GPU: SIM_GPU_SMS). The first measurement of an SM count is
 * kept: the split sweep is loaded before the co-runs' own isolated runs. */
static void add_point(struct sim_shm *m, int v, double sms, double us)
{
    if (v < 0 || !(us > 0) || !(sms >= 1) || sms > SIM_GPU_SMS)
        return;
    struct sim_curve *c = &m->curves[v];
    if (c->n == SIM_CURVE)
        return;
    uint32_t n = (uint32_t)sms, i = 0;
    while (i < c->n && c->sms[i] < n)
        i++;
    if (i < c->n && c->sms[i] == n)
        return;
    if (c->n == 0)
        m->ncurves++;
    memmove(&c->sms[i + 1], &c->sms[i], (c->n - i) * sizeof c->sms[0]);
    memmove(&c->us[i + 1], &c->us[i], (c->n - i) * sizeof c->us[0]);
    c->sms[i] = n;
    c->us[i] = us;
    c->n++;
}

static void add_psample(struct sim_shm *m, int v, int w, double sms,
                        double self, double other)
{
    struct sim_ppair *p = &m->ppairs[v][w];
    if (!(self > 0) || !(other > 0) || !(sms >= 1) || sms > SIM_GPU_SMS ||
        p->n == SIM_PSAMPLES)
        return;
    if (p->n == 0)
        m->nppairs++;
    p->sms[p->n] = (uint16_t)sms;
    p->self[p->n] = (float)self;
    p->other[p->n] = (float)other;
    p->n++;
}

/* A partitioned record: a on sms_a SMs, b on the disjoint sms_b. Each
 * repeat's slowdowns over the isolated times on the same partitions, filed
 * under both (a, b) and (b, a) with the first one's SM count; and the two
 * isolated times as points of the variants' curves. */
static void add_partitioned(struct sim_shm *m, const cJSON *r, int va, int vb,
                            double ia, double ib)
{
    double na = num(r, "sms_a", -1), nb = num(r, "sms_b", -1);
    if (na < 1 || nb < 1)
        return;
    add_point(m, va, na, ia);
    add_point(m, vb, nb, ib);
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(r, "corun_a_samples_us");
    const cJSON *sb = cJSON_GetObjectItemCaseSensitive(r, "corun_b_samples_us");
    int n = cJSON_GetArraySize(sa);
    if (n > 0 && cJSON_GetArraySize(sb) == n) {
        for (int i = 0; i < n; i++) {
            double ta = val(cJSON_GetArrayItem(sa, i), -1) / ia;
            double tb = val(cJSON_GetArrayItem(sb, i), -1) / ib;
            add_psample(m, va, vb, na, ta, tb);
            add_psample(m, vb, va, nb, tb, ta);
        }
        return;
    }
    double sla = num(r, "slowdown_a", -1), slb = num(r, "slowdown_b", -1);
    add_psample(m, va, vb, na, sla, slb);
    add_psample(m, vb, va, nb, slb, sla);
}

static void add_record(struct sim_shm *m, const cJSON *r, struct offsets *jit)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(r, "a");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(r, "b");
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(r, "mode");
    if (!cJSON_IsString(a) || !cJSON_IsString(b) || !cJSON_IsString(mode) ||
        !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")))
        return;
    int va = find_variant(m, a->valuestring);
    int vb = find_variant(m, b->valuestring);
    double ia = num(r, "iso_a_us", -1), ib = num(r, "iso_b_us", -1);
    if (va < 0 || vb < 0 || ia <= 0 || ib <= 0)
        return;
    if (strcmp(mode->valuestring, "partitioned") == 0) {
        add_partitioned(m, r, va, vb, ia, ib);
        return;
    }
    if (strcmp(mode->valuestring, "shared") != 0)
        return;
    add_point(m, va, SIM_GPU_SMS, ia);
    add_point(m, vb, SIM_GPU_SMS, ib);
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(r, "corun_a_samples_us");
    const cJSON *sb = cJSON_GetObjectItemCaseSensitive(r, "corun_b_samples_us");
    const cJSON *so =
        cJSON_GetObjectItemCaseSensitive(r, "start_offset_samples_us");
    int n = cJSON_GetArraySize(sa);
    if (n > 0 && cJSON_GetArraySize(sb) == n && cJSON_GetArraySize(so) == n) {
        for (int i = 0; i < n; i++) {
            double ta = val(cJSON_GetArrayItem(sa, i), -1);
            double tb = val(cJSON_GetArrayItem(sb, i), -1);
            double off = val(cJSON_GetArrayItem(so, i), 0);
            add_offset(jit, off);
            if (off >= 0)
                add_sample(m, va, vb, ta / ia, tb / ib);
            else
                add_sample(m, vb, va, tb / ib, ta / ia);
        }
        return;
    }
    const cJSON *order = cJSON_GetObjectItemCaseSensitive(r, "order");
    double sla = num(r, "slowdown_a", -1), slb = num(r, "slowdown_b", -1);
    if (cJSON_IsString(order) && strcmp(order->valuestring, "ba") == 0)
        add_sample(m, vb, va, slb, sla);
    else
        add_sample(m, va, vb, sla, slb);
}

static int load_coruns(struct sim_shm *m)
{
    const char *var = "MOSAIC_SIMGPU_CORUN";
    const char *path = setting(var, SIMGPU_DATA_DIR "/corun.jsonl");
    struct offsets jit = { 0 };
    if (*path != '\0') {
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            fprintf(stderr, "simgpu: %s (%s): %s; set %s to an existing "
                    "file or to \"\" for none\n", path, var, strerror(errno),
                    var);
            return SIM_EIO;
        }
        char *line = NULL;
        size_t cap = 0;
        long lineno = 0, bad = 0;
        while (getline(&line, &cap, f) > 0) {
            lineno++;
            cJSON *r = cJSON_Parse(line);
            if (r == NULL)
                bad++;
            else
                add_record(m, r, &jit);
            cJSON_Delete(r);
        }
        free(line);
        fclose(f);
        if (bad > 0)
            fprintf(stderr, "simgpu: %s: %ld of %ld lines are not JSON and "
                    "were skipped\n", path, bad, lineno);
    }
    /* Two kernels launched together started up to this far apart on the
     * H200: the 99th percentile of |start offset| over all repeats (3.2 us
     * in corun.jsonl; the median is 1.6 us). 2 us when no record has
     * samples. */
    double jitter_us = 2.0;
    if (jit.n > 0) {
        qsort(jit.v, jit.n, sizeof *jit.v, cmp_double);
        jitter_us = jit.v[(size_t)((double)(jit.n - 1) * 0.99)];
    }
    free(jit.v);
    m->jitter_ns = jitter_us * 1e3 * m->scale;
    return 0;
}

/* The split sweep (splits/time.jsonl, mosaic-zoo time --sms ...): each
 * variant's isolated time on green contexts of several SM counts. */
static int load_splits(struct sim_shm *m)
{
    const char *var = "MOSAIC_SIMGPU_SPLITS";
    const char *path = setting(var, SIMGPU_DATA_DIR "/splits/time.jsonl");
    if (*path == '\0')
        return 0;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "simgpu: %s (%s): %s; set %s to an existing file or "
                "to \"\" for none\n", path, var, strerror(errno), var);
        return SIM_EIO;
    }
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0, bad = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        cJSON *r = cJSON_Parse(line);
        const cJSON *rec = cJSON_GetObjectItemCaseSensitive(r, "record");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "variant");
        if (r == NULL)
            bad++;
        else if (cJSON_IsString(rec) && strcmp(rec->valuestring, "time") == 0 &&
                 cJSON_IsString(v) &&
                 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")))
            add_point(m, find_variant(m, v->valuestring), num(r, "sms", -1),
                      num(r, "median_us", -1));
        cJSON_Delete(r);
    }
    free(line);
    fclose(f);
    if (bad > 0)
        fprintf(stderr, "simgpu: %s: %ld of %ld lines are not JSON and were "
                "skipped\n", path, bad, lineno);
    return 0;
}

int sim__load_data(struct sim_shm *m)
{
    int r = load_profiles(m);
    if (r == 0)
        r = load_variants(m);
    if (r == 0)
        r = load_splits(m);
    if (r == 0)
        r = load_coruns(m);
    return r;
}
