/*
 * Hardware metrics in Argus reports (include/argus/metrics.h,
 * docs/argus.md "Hardware metrics"): the profile, the exact join, the peak
 * table, % of peak and the bottleneck rule. The JSON and text pieces the
 * two reports share are at the end.
 *
 * Why a join and not a lookup by name: one kernel function is often
 * launched with several configurations (the H200 zoo profile has
 * _Z6k_copyPK6float4PS_m at four grids, 66 to 131072 blocks, from 72% to
 * 85% of HBM bandwidth), and their counters differ; a name-only match would
 * give one launch another's numbers. So every field both sides know is
 * compared, and two entries left standing are refused.
 */
#include "argus/metrics.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "argus/shim.h"
#include "argus_internal.h"
#include "json_internal.h"

/* ---- the peak table --------------------------------------------------------- */

static const char *const peak_keys[] = {
#define ARGUS_X_PEAK(sfx, key, unit, what) key,
    ARGUS_PEAKS(ARGUS_X_PEAK)
#undef ARGUS_X_PEAK
};
static const char *const peak_units[] = {
#define ARGUS_X_PEAK(sfx, key, unit, what) unit,
    ARGUS_PEAKS(ARGUS_X_PEAK)
#undef ARGUS_X_PEAK
};
static const char *const peak_whats[] = {
#define ARGUS_X_PEAK(sfx, key, unit, what) what,
    ARGUS_PEAKS(ARGUS_X_PEAK)
#undef ARGUS_X_PEAK
};

const char *argus_peak_key(int id)
{
    return id >= 0 && id < ARGUS_N_PEAKS ? peak_keys[id] : "?";
}
const char *argus_peak_unit(int id)
{
    return id >= 0 && id < ARGUS_N_PEAKS ? peak_units[id] : "?";
}
const char *argus_peak_what(int id)
{
    return id >= 0 && id < ARGUS_N_PEAKS ? peak_whats[id] : "?";
}

/* The H200 (SXM; the driver names it "NVIDIA H200", the NVL card "NVIDIA
 * H200 NVL", which has other clocks and is not in this table). Datasheet
 * figures are NVIDIA's H200 product page and datasheet
 * (nvidia.com/en-us/data-center/h200/, "H200 SXM" column), whose tensor
 * figures are "with sparsity": the dense figures here are half of them.
 * The FP32 figure checks against the SM's lanes: 132 SMs x 128 FP32 lanes
 * x 2 FLOP per FMA x 1.98 GHz = 66.9 TFLOP/s (test_metrics.c). */
#define H200_SHEET "NVIDIA H200 datasheet and product page, H200 SXM"
static const argus_gpu_spec gpu_table[] = {
    {.name = "NVIDIA H200",
     .sm_count = 132,
     .cc = "9.0",
     .value =
         {
             [ARGUS_PEAK_SM_COUNT] = 132,
             [ARGUS_PEAK_SM_CLOCK_MAX] = 1.98,
             [ARGUS_PEAK_MEM_CLOCK] = 3.201,
             [ARGUS_PEAK_HBM_BW] = 4.8e12,
             [ARGUS_PEAK_L2_BW] = NAN,
             [ARGUS_PEAK_FP64] = 34e12,
             [ARGUS_PEAK_FP32] = 67e12,
             [ARGUS_PEAK_FP32_LANES] = 128,
             [ARGUS_PEAK_TF32_TENSOR] = 494.5e12,
             [ARGUS_PEAK_FP16_TENSOR] = 989.5e12,
             [ARGUS_PEAK_BF16_TENSOR] = 989.5e12,
             [ARGUS_PEAK_FP8_TENSOR] = 1979e12,
         },
     .source =
         {
             [ARGUS_PEAK_SM_COUNT] = "the driver's multiprocessor count on the workplace's H200 "
                                     "(gpu.sm_count of profiler/data/h200/zoo.profile.json)",
             [ARGUS_PEAK_SM_CLOCK_MAX] = "nvidia-smi clocks.max.sm 1980 MHz on the workplace's "
                                         "H200 (docs/results/2026-12-01-argus16/env.txt)",
             [ARGUS_PEAK_MEM_CLOCK] = "nvidia-smi clocks.current.memory 3201 MHz on the "
                                      "workplace's H200 (docs/results/2026-12-01-argus16/env.txt)",
             [ARGUS_PEAK_HBM_BW] = H200_SHEET ": GPU memory bandwidth 4.8 TB/s",
             [ARGUS_PEAK_L2_BW] = "none: NVIDIA publishes no L2 bandwidth for the H200 and "
                                  "none was measured here, so no % of L2 peak is given",
             [ARGUS_PEAK_FP64] = H200_SHEET ": FP64 34 TFLOPS",
             [ARGUS_PEAK_FP32] = H200_SHEET ": FP32 67 TFLOPS (= 132 SMs x 128 lanes x 2 x "
                                 "1.98 GHz)",
             [ARGUS_PEAK_FP32_LANES] = "NVIDIA H100 Tensor Core GPU Architecture whitepaper: "
                                       "128 FP32 cores per Hopper SM",
             [ARGUS_PEAK_TF32_TENSOR] = H200_SHEET ": TF32 Tensor Core 989 TFLOPS with "
                                        "sparsity, halved",
             [ARGUS_PEAK_FP16_TENSOR] = H200_SHEET ": FP16 Tensor Core 1,979 TFLOPS with "
                                        "sparsity, halved",
             [ARGUS_PEAK_BF16_TENSOR] = H200_SHEET ": BF16 Tensor Core 1,979 TFLOPS with "
                                        "sparsity, halved",
             [ARGUS_PEAK_FP8_TENSOR] = H200_SHEET ": FP8 Tensor Core 3,958 TFLOPS with "
                                       "sparsity, halved",
         }},
};

const argus_gpu_spec *argus_gpu_find(const struct mosaic_gpu *g, char *why, size_t whylen)
{
    if (g == NULL || g->name == NULL || g->sm_count == MOSAIC_NULL || g->cc == NULL) {
        argus__fail(0, why, whylen,
                    "the profile does not name its GPU fully (gpu.name, gpu.sm_count and "
                    "gpu.cc are needed): %% of peak omitted");
        return NULL;
    }
    for (size_t i = 0; i < sizeof(gpu_table) / sizeof(gpu_table[0]); i++) {
        const argus_gpu_spec *s = &gpu_table[i];
        if (strcmp(g->name, s->name) == 0 && g->sm_count == s->sm_count &&
            strcmp(g->cc, s->cc) == 0)
            return s;
    }
    argus__fail(0, why, whylen,
                "%s (%lld SMs, cc %s) is not in Argus's peak table (profiler/argus/metrics.c "
                "has the NVIDIA H200 only): %% of peak omitted, not guessed from another GPU",
                g->name, (long long)g->sm_count, g->cc);
    return NULL;
}

/* ---- the profile -------------------------------------------------------------- */

void argus_metrics_init(argus_metrics *m)
{
    memset(m, 0, sizeof(*m));
    mosaic_profile_init(&m->prof);
}

void argus_metrics_free(argus_metrics *m)
{
    if (m == NULL)
        return;
    mosaic_profile_free(&m->prof);
    argus_metrics_init(m);
}

int argus_metrics_load(argus_metrics *m, const char *path, char *msg, size_t msglen)
{
    if (m == NULL || path == NULL)
        return ARGUS_EINVAL;
    argus_metrics_init(m);
    snprintf(m->path, sizeof(m->path), "%s", path);
    char err[1024] = "";
    int rc = mosaic_profile_read_file(path, &m->prof, err, sizeof(err));
    if (rc != 0) {
        m->state = ARGUS_METRICS_REFUSED;
        snprintf(m->why, sizeof(m->why),
                 "%s; the report has no hardware metrics (give a mosaic-profile/1 file written "
                 "by `mosaic-profile capture` or `mosaic-profile import-ncu`)",
                 err[0] ? err : mosaic_strerror(rc));
        argus__fail(0, msg, msglen, "%s", m->why);
        return rc == MOSAIC_ENOMEM    ? ARGUS_ENOMEM
               : rc == MOSAIC_ETOOBIG ? ARGUS_ELIMIT
               : rc == MOSAIC_EIO     ? ARGUS_EIO
                                      : ARGUS_EFORMAT;
    }
    m->state = ARGUS_METRICS_LOADED;
    m->spec = argus_gpu_find(&m->prof.gpu, m->spec_why, sizeof(m->spec_why));
    return 0;
}

int argus_metrics_check_device(const argus_metrics *m, const char *name, int64_t sm_count,
                               char *why, size_t whylen)
{
    const struct mosaic_gpu *g = &m->prof.gpu;
    int name_differs = name && name[0] && g->name && strcmp(name, g->name) != 0;
    int sms_differ = sm_count > 0 && g->sm_count != MOSAIC_NULL && sm_count != g->sm_count;
    if (!name_differs && !sms_differ)
        return 0;
    return argus__fail(ARGUS_EFORMAT, why, whylen,
                       "%s: the profile was taken on %s (%lld SMs) but the kernels ran on %s "
                       "(%lld SMs): its counters are not this GPU's; profile the program on "
                       "the GPU it ran on",
                       m->path, g->name ? g->name : "an unnamed GPU",
                       (long long)(g->sm_count == MOSAIC_NULL ? 0 : g->sm_count),
                       name && name[0] ? name : "an unnamed GPU", (long long)sm_count);
}

int argus_metrics_check_trace(const argus_metrics *m, const argus_trace *t, char *why,
                              size_t whylen)
{
    int64_t sms = m->prof.gpu.sm_count;
    uint32_t max_sm = 0;
    int any = 0;
    for (size_t i = 0; i < t->nwarps; i++)
        if (!(t->warps[i].flags & ARGUS_WARP_EMPTY)) {
            any = 1;
            if (t->warps[i].sm > max_sm)
                max_sm = t->warps[i].sm;
        }
    if (!any || sms == MOSAIC_NULL || (int64_t)max_sm < sms)
        return 0;
    return argus__fail(ARGUS_EFORMAT, why, whylen,
                       "%s: a warp of the buffer ran on SM %u, but the profile's GPU (%s) has "
                       "%lld SMs: the buffer is from another GPU; profile the kernel on the GPU "
                       "it ran on",
                       m->path, max_sm, m->prof.gpu.name ? m->prof.gpu.name : "unnamed",
                       (long long)sms);
}

/* ---- the join ----------------------------------------------------------------- */

static int triple_known(const int64_t v[3])
{
    return v[0] != MOSAIC_NULL && v[1] != MOSAIC_NULL && v[2] != MOSAIC_NULL;
}

static int cfg_matches(const struct mosaic_kernel *e, const argus_kcfg *k)
{
    if (k->have_grid && triple_known(e->grid) &&
        (e->grid[0] != k->grid[0] || e->grid[1] != k->grid[1] || e->grid[2] != k->grid[2]))
        return 0;
    if (k->have_block && triple_known(e->block) &&
        (e->block[0] != k->block[0] || e->block[1] != k->block[1] || e->block[2] != k->block[2]))
        return 0;
    if (k->have_dsmem && e->dyn_smem != MOSAIC_NULL && e->dyn_smem != k->dsmem)
        return 0;
    return 1;
}

static void cfg_words(const argus_kcfg *k, char *buf, size_t len)
{
    int w = snprintf(buf, len, "%s%s%s", k->have_grid ? ",grid" : "",
                     k->have_block ? ",block" : "", k->have_dsmem ? ",dyn_smem" : "");
    if (w < 0 && len)
        buf[0] = '\0';
}

int argus_metrics_join(const struct mosaic_profile *p, const argus_kcfg *k, long *idx,
                       size_t *ncand, char *by, size_t bylen, char *why, size_t whylen)
{
    char cw[64];
    cfg_words(k, cw, sizeof(cw));
    if (by && bylen && snprintf(by, bylen, "name%s", cw) < 0)
        by[0] = '\0';
    *idx = -1;
    *ncand = 0;
    size_t named = 0;
    long first_named = -1, hit = -1;
    for (size_t i = 0; i < p->n_kernels; i++) {
        const struct mosaic_kernel *e = &p->kernels[i];
        if (e->name == NULL || k->name == NULL || strcmp(e->name, k->name) != 0)
            continue;
        if (named++ == 0)
            first_named = (long)i;
        if (!cfg_matches(e, k))
            continue;
        if ((*ncand)++ == 0)
            hit = (long)i;
    }
    if (*ncand == 1) {
        *idx = hit;
        return ARGUS_JOIN_OK;
    }
    if (named == 0) {
        argus__fail(0, why, whylen,
                    "no kernel of that name in the profile (%zu entries): profile the program "
                    "that launched it",
                    p->n_kernels);
        return ARGUS_JOIN_NONE;
    }
    char want[160];
    if (snprintf(want, sizeof(want), "grid=%lld,%lld,%lld block=%lld,%lld,%lld dyn_smem=%lld",
                 (long long)k->grid[0], (long long)k->grid[1], (long long)k->grid[2],
                 (long long)k->block[0], (long long)k->block[1], (long long)k->block[2],
                 (long long)k->dsmem) < 0)
        want[0] = '\0';
    if (*ncand == 0) {
        argus__fail(0, why, whylen,
                    "%zu entries of that name, none with this launch's configuration (compared: "
                    "name%s; this launch: %s; the profile's first: %s): the profile measured "
                    "other launches",
                    named, cw, want, p->kernels[first_named].key);
        return ARGUS_JOIN_NONE;
    }
    if (k->have_grid && k->have_block && k->have_dsmem)
        argus__fail(0, why, whylen,
                    "%zu entries of that name match (compared: name%s): the profile's entries "
                    "lack the fields to tell them apart, so none is used (refused, not guessed)",
                    *ncand, cw);
    else
        argus__fail(0, why, whylen,
                    "%zu entries of that name match (compared: name%s): the report does not "
                    "know this launch's%s%s%s to tell them apart, so none is used (refused, not "
                    "guessed)",
                    *ncand, cw, k->have_grid ? "" : " grid", k->have_block ? "" : " block",
                    k->have_dsmem ? "" : " dynamic shared memory");
    return ARGUS_JOIN_AMBIGUOUS;
}

/* ---- % of peak ------------------------------------------------------------------ */

static const char *const pct_keys[] = {
#define ARGUS_X_PCT(sfx, key, formula) key,
    ARGUS_PCTS(ARGUS_X_PCT)
#undef ARGUS_X_PCT
};
static const char *const pct_formulas[] = {
#define ARGUS_X_PCT(sfx, key, formula) formula,
    ARGUS_PCTS(ARGUS_X_PCT)
#undef ARGUS_X_PCT
};

const char *argus_pct_key(int id)
{
    return id >= 0 && id < ARGUS_N_PCTS ? pct_keys[id] : "?";
}
const char *argus_pct_formula(int id)
{
    return id >= 0 && id < ARGUS_N_PCTS ? pct_formulas[id] : "?";
}

/* Sets out from numerator/peak, or says which is missing. */
static void pct_set(argus_pct *out, double num, const char *num_missing, double peak,
                    const char *peak_key, const argus_gpu_spec *spec, const char *spec_why)
{
    out->ok = 0;
    out->value = NAN;
    if (spec == NULL)
        argus__fail(0, out->why, sizeof(out->why), "%s", spec_why);
    else if (num_missing)
        argus__fail(0, out->why, sizeof(out->why), "%s not in the profile entry", num_missing);
    else if (!isfinite(peak) || peak <= 0)
        argus__fail(0, out->why, sizeof(out->why), "no sourced %s peak for the %s", peak_key,
                    spec->name);
    else {
        out->ok = 1;
        out->value = 100.0 * num / peak;
        out->why[0] = '\0';
    }
}

void argus_metrics_pct(const struct mosaic_kernel *k, const argus_gpu_spec *spec,
                       argus_pct out[ARGUS_N_PCTS])
{
    const double *m = k->metrics;
    const char *unknown = "the GPU is not in the peak table";
    const char *miss;

    miss = isnan(m[MOSAIC_M_dram_read_bw])    ? "dram_read_bw"
           : isnan(m[MOSAIC_M_dram_write_bw]) ? "dram_write_bw"
                                              : NULL;
    pct_set(&out[ARGUS_PCT_DRAM_BW], m[MOSAIC_M_dram_read_bw] + m[MOSAIC_M_dram_write_bw], miss,
            spec ? spec->value[ARGUS_PEAK_HBM_BW] : NAN, "hbm_bandwidth", spec, unknown);

    miss = isnan(m[MOSAIC_M_l2_read_sector_rate])    ? "l2_read_sector_rate"
           : isnan(m[MOSAIC_M_l2_write_sector_rate]) ? "l2_write_sector_rate"
                                                     : NULL;
    pct_set(&out[ARGUS_PCT_L2_BW],
            32.0 * (m[MOSAIC_M_l2_read_sector_rate] + m[MOSAIC_M_l2_write_sector_rate]), miss,
            spec ? spec->value[ARGUS_PEAK_L2_BW] : NAN, "l2_bandwidth", spec, unknown);

    double dur = m[MOSAIC_M_duration_ns];
    miss = isnan(m[MOSAIC_M_inst_fma]) ? "inst_fma"
           : !(dur > 0)                ? "a positive duration_ns"
                                       : NULL;
    pct_set(&out[ARGUS_PCT_FMA_LANES], miss ? 0 : 2.0 * 32.0 * m[MOSAIC_M_inst_fma] / (dur * 1e-9),
            miss, spec ? spec->value[ARGUS_PEAK_FP32] : NAN, "fp32", spec, unknown);
    if (spec == NULL)
        for (int i = 0; i < ARGUS_N_PCTS; i++)
            snprintf(out[i].why, sizeof(out[i].why), "%s", unknown);
}

/* ---- the bottleneck rule -------------------------------------------------------- */

/* The units the roof step compares: DRAM bandwidth (% of peak, derived)
 * and the pipes (% of peak sustained, observed). Order breaks ties. */
static const struct {
    int metric; /* MOSAIC_M_*, or -1: the DRAM % of peak */
    const char *label;
} roof_units[] = {
    {-1, "memory-bandwidth"},
    {MOSAIC_M_pipe_fma_pct, "compute-pipe fma"},
    {MOSAIC_M_pipe_alu_pct, "compute-pipe alu"},
    {MOSAIC_M_pipe_xu_pct, "compute-pipe xu"},
    {MOSAIC_M_pipe_lsu_pct, "compute-pipe lsu"},
    {MOSAIC_M_pipe_tensor_hmma_pct, "compute-pipe tensor_hmma"},
    {MOSAIC_M_pipe_tensor_gmma_pct, "compute-pipe tensor_gmma"},
    {MOSAIC_M_pipe_fp64_pct, "compute-pipe fp64"},
};
#define N_ROOF (sizeof(roof_units) / sizeof(roof_units[0]))

static void bn_add(argus_bottleneck *b, const char *name, double v, const char *unit,
                   const char *mark)
{
    if (b->nin < ARGUS_BN_MAX_INPUTS)
        b->in[b->nin++] = (argus_bn_input){name, v, unit, mark};
}

static void bn_set(argus_bottleneck *b, const char *label, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void bn_set(argus_bottleneck *b, const char *label, const char *rule, const char *fmt, ...)
{
    snprintf(b->label, sizeof(b->label), "%s", label);
    snprintf(b->rule, sizeof(b->rule), "%s", rule);
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(b->why, sizeof(b->why), fmt, ap) < 0)
        b->why[0] = '\0';
    va_end(ap);
}

void argus_bottleneck_of(const struct mosaic_kernel *k, const struct mosaic_gpu *g,
                         const argus_gpu_spec *spec, argus_bottleneck *b)
{
    memset(b, 0, sizeof(*b));
    const double *m = k->metrics;
    argus_pct pct[ARGUS_N_PCTS];
    argus_metrics_pct(k, spec, pct);
    double unit_v[N_ROOF];
    char missing[256] = "";
    size_t off = 0;
    for (size_t u = 0; u < N_ROOF; u++) {
        int mi = roof_units[u].metric;
        unit_v[u] = mi < 0 ? (pct[ARGUS_PCT_DRAM_BW].ok ? pct[ARGUS_PCT_DRAM_BW].value : NAN)
                           : m[mi];
        const char *name = mi < 0 ? "dram_bandwidth_pct_of_peak" : mosaic_metric_key(mi);
        bn_add(b, name, unit_v[u], "%", mi < 0 ? "derived" : "observed");
        if (isnan(unit_v[u]) && off < sizeof(missing)) {
            int w = snprintf(missing + off, sizeof(missing) - off, "%s%s", off ? ", " : "",
                             mi < 0 ? "dram_bandwidth % of peak" : name);
            off += w > 0 ? (size_t)w : 0;
        }
    }
    int64_t blocks = 0;
    int have_blocks = mosaic_launch_blocks(k->grid, &blocks) == 0;
    double sms = g && g->sm_count != MOSAIC_NULL ? (double)g->sm_count : NAN;
    bn_add(b, "grid_blocks", have_blocks ? (double)blocks : NAN, "blocks", "observed");
    bn_add(b, "sm_count", sms, "SMs", "observed");
    bn_add(b, "duration_ns", m[MOSAIC_M_duration_ns], "ns", "observed");
    bn_add(b, "issue_active", m[MOSAIC_M_issue_active], "fraction of cycles", "observed");
    bn_add(b, "stall_long_scoreboard", m[MOSAIC_M_stall_long_scoreboard], "warps per issue",
           "observed");
    bn_add(b, "stall_mio_throttle", m[MOSAIC_M_stall_mio_throttle], "warps per issue",
           "observed");

    /* R1, the roof: the unit nearest its peak, if it is near. */
    if (missing[0]) {
        bn_set(b, "unknown", "R1", "which unit is nearest its peak cannot be told: missing %s%s%s",
               missing, pct[ARGUS_PCT_DRAM_BW].ok ? "" : "; DRAM % of peak: ",
               pct[ARGUS_PCT_DRAM_BW].ok ? "" : pct[ARGUS_PCT_DRAM_BW].why);
        return;
    }
    size_t top = 0;
    for (size_t u = 1; u < N_ROOF; u++)
        if (unit_v[u] > unit_v[top])
            top = u;
    if (unit_v[top] >= ARGUS_BN_ROOF_PCT) {
        bn_set(b, roof_units[top].label, "R1",
               "%s at %.1f%% of its peak, the highest of DRAM bandwidth and the pipes, is at or "
               "above %.0f%%",
               top == 0 ? "DRAM bandwidth" : mosaic_metric_key(roof_units[top].metric),
               unit_v[top], ARGUS_BN_ROOF_PCT);
        return;
    }
    /* R2: too little work to fill the GPU, or too short to be more than
     * its launch. */
    if (!have_blocks || isnan(sms) || isnan(m[MOSAIC_M_duration_ns])) {
        bn_set(b, "unknown", "R2",
               "no unit is near its peak (highest %.1f%%), and %s is missing to tell a launch- "
               "or occupancy-bound kernel",
               unit_v[top], !have_blocks ? "the grid" : isnan(sms) ? "gpu.sm_count" : "duration_ns");
        return;
    }
    if ((double)blocks < sms) {
        bn_set(b, "launch/occupancy-bound", "R2",
               "a grid of %lld blocks on %.0f SMs leaves %.0f SMs without work; no unit is near "
               "its peak (highest %.1f%%)",
               (long long)blocks, sms, sms - (double)blocks, unit_v[top]);
        return;
    }
    if (m[MOSAIC_M_duration_ns] < ARGUS_BN_SHORT_NS) {
        bn_set(b, "launch/occupancy-bound", "R2",
               "%.0f ns, shorter than %.0f ns: launch and ramp-up are a large part of it; no "
               "unit is near its peak (highest %.1f%%)",
               m[MOSAIC_M_duration_ns], ARGUS_BN_SHORT_NS, unit_v[top]);
        return;
    }
    /* R3/R4: stalled warps (latency) or busy issue. */
    double ia = m[MOSAIC_M_issue_active];
    if (isnan(ia)) {
        bn_set(b, "unknown", "R3",
               "no unit is near its peak (highest %.1f%%) and the grid fills the GPU, but "
               "issue_active is missing to tell latency from issue",
               unit_v[top]);
        return;
    }
    if (ia < ARGUS_BN_ISSUE_LATENCY) {
        double ls = m[MOSAIC_M_stall_long_scoreboard], mio = m[MOSAIC_M_stall_mio_throttle];
        const char *what = isnan(ls) && isnan(mio) ? "stall reasons not in the profile"
                           : isnan(mio) || (!isnan(ls) && ls >= mio)
                               ? "the larger stall is long_scoreboard (waiting on memory)"
                               : "the larger stall is mio_throttle (the memory-instruction queue)";
        bn_set(b, "latency-bound", "R3",
               "an instruction issued in %.0f%% of cycles (below %.0f%%) with no unit near its "
               "peak (highest %.1f%%): warps wait; %s",
               100 * ia, 100 * ARGUS_BN_ISSUE_LATENCY, unit_v[top], what);
        return;
    }
    bn_set(b, "issue-bound", "R4",
           "an instruction issued in %.0f%% of cycles with no unit near its peak (highest "
           "%.1f%%): instruction issue is the limit",
           100 * ia, unit_v[top]);
}

/* ---- JSON and text shared by both reports ----------------------------------------- */

static const char *state_word(int s)
{
    return s == ARGUS_METRICS_LOADED ? "loaded" : s == ARGUS_METRICS_REFUSED ? "refused" : "not_asked";
}

cJSON *argus__metrics_run_json(const argus_metrics *m, const argus__metrics_counts *c)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "state", state_word(m ? m->state : ARGUS_METRICS_NOT_ASKED));
    if (m == NULL || m->state == ARGUS_METRICS_NOT_ASKED)
        return o;
    cJSON_AddStringToObject(o, "profile", m->path);
    if (m->state == ARGUS_METRICS_REFUSED) {
        cJSON_AddStringToObject(o, "why", m->why);
        return o;
    }
    const struct mosaic_profile *p = &m->prof;
    cJSON_AddStringToObject(o, "profile_schema", MOSAIC_PROFILE_SCHEMA);
    cJSON_AddStringToObject(o, "method", p->method ? p->method : "");
    cJSON_AddBoolToObject(o, "profile_complete", p->complete);
    cJSON *probs = cJSON_AddArrayToObject(o, "profile_problems");
    for (size_t i = 0; i < p->n_problems && i < 16; i++)
        cJSON_AddItemToArray(probs, cJSON_CreateString(p->problems[i]));
    cJSON *gpu = cJSON_AddObjectToObject(o, "gpu");
    cJSON_AddStringToObject(gpu, "name", p->gpu.name ? p->gpu.name : "");
    if (p->gpu.sm_count != MOSAIC_NULL)
        cJSON_AddItemToObject(gpu, "sm_count", argus__jnum((double)p->gpu.sm_count, "SMs", "observed"));
    cJSON_AddStringToObject(gpu, "cc", p->gpu.cc ? p->gpu.cc : "");
    cJSON_AddStringToObject(gpu, "from", "the profile's gpu object");
    if (m->spec) {
        cJSON *pk = cJSON_AddObjectToObject(o, "peaks");
        cJSON_AddStringToObject(pk, "gpu", m->spec->name);
        for (int i = 0; i < ARGUS_N_PEAKS; i++) {
            cJSON *e = cJSON_CreateObject();
            if (isfinite(m->spec->value[i]))
                cJSON_AddNumberToObject(e, "peak", m->spec->value[i]);
            else
                cJSON_AddNullToObject(e, "peak");
            cJSON_AddStringToObject(e, "unit", argus_peak_unit(i));
            cJSON_AddStringToObject(e, "what", argus_peak_what(i));
            cJSON_AddStringToObject(e, "source", m->spec->source[i]);
            cJSON_AddItemToObject(pk, argus_peak_key(i), e);
        }
    } else {
        cJSON_AddStringToObject(o, "peaks_omitted", m->spec_why);
    }
    if (c) {
        cJSON_AddItemToObject(o, "configs_joined", argus__jnum((double)c->joined, "configurations", "observed"));
        cJSON_AddItemToObject(o, "configs_without_entry",
                              argus__jnum((double)c->none, "configurations", "observed"));
        cJSON_AddItemToObject(o, "configs_ambiguous",
                              argus__jnum((double)c->ambiguous, "configurations", "observed"));
        cJSON_AddItemToObject(o, "configs_other_gpu",
                              argus__jnum((double)c->other_gpu, "configurations", "observed"));
        cJSON_AddItemToObject(o, "launches_joined", argus__jnum((double)c->launches_joined, "launches", "observed"));
        cJSON_AddItemToObject(o, "launches_without_metrics",
                              argus__jnum((double)c->launches_unjoined, "launches", "observed"));
        if (c->device_note[0])
            cJSON_AddStringToObject(o, "device_check", c->device_note);
    }
    cJSON *rule = cJSON_AddObjectToObject(o, "bottleneck_rule");
    cJSON_AddNumberToObject(rule, "roof_pct", ARGUS_BN_ROOF_PCT);
    cJSON_AddNumberToObject(rule, "short_ns", ARGUS_BN_SHORT_NS);
    cJSON_AddNumberToObject(rule, "issue_latency", ARGUS_BN_ISSUE_LATENCY);
    cJSON_AddStringToObject(rule, "doc", "docs/argus.md, \"The bottleneck rule\"");
    return o;
}

static cJSON *triple(const int64_t v[3])
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < 3; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

cJSON *argus__metrics_cfg_json(const argus_metrics *m, const argus_kcfg *k, uint64_t launches,
                               const char *other_gpu, int *state)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    if (k->have_grid)
        cJSON_AddItemToObject(o, "grid", triple(k->grid));
    if (k->have_block)
        cJSON_AddItemToObject(o, "block", triple(k->block));
    if (k->have_dsmem)
        cJSON_AddItemToObject(o, "dyn_smem", argus__jnum((double)k->dsmem, "bytes", "observed"));
    cJSON_AddItemToObject(o, "launches", argus__jnum((double)launches, "launches", "observed"));
    cJSON *join = cJSON_AddObjectToObject(o, "join");
    char by[64] = "", why[1024] = "";
    if (other_gpu) {
        cJSON_AddStringToObject(join, "state", "other_gpu");
        cJSON_AddStringToObject(join, "why", other_gpu);
        *state = -1;
        return o;
    }
    long idx;
    size_t ncand;
    int js = argus_metrics_join(&m->prof, k, &idx, &ncand, by, sizeof(by), why, sizeof(why));
    *state = js;
    cJSON_AddStringToObject(join, "state", js == ARGUS_JOIN_OK     ? "joined"
                                           : js == ARGUS_JOIN_NONE ? "no_entry"
                                                                   : "ambiguous");
    cJSON_AddStringToObject(join, "by", by);
    cJSON_AddItemToObject(join, "candidates", argus__jnum((double)ncand, "entries", "derived"));
    if (js != ARGUS_JOIN_OK) {
        cJSON_AddStringToObject(join, "why", why);
        return o;
    }
    const struct mosaic_kernel *e = &m->prof.kernels[idx];
    cJSON_AddStringToObject(join, "key", e->key);
    cJSON_AddStringToObject(join, "mark", "observed");
    cJSON_AddStringToObject(join, "note", "the profile's counters, measured in its own run "
                                          "(method in metrics.method), joined by the fields in by");
    cJSON *mv = cJSON_AddObjectToObject(o, "metrics");
    cJSON *missing = cJSON_AddArrayToObject(o, "missing");
    for (int i = 0; i < MOSAIC_N_METRICS; i++) {
        if (isnan(e->metrics[i]))
            cJSON_AddItemToArray(missing, cJSON_CreateString(mosaic_metric_key(i)));
        else
            cJSON_AddItemToObject(mv, mosaic_metric_key(i),
                                  argus__jnum(e->metrics[i], mosaic_metric_unit(i), "observed"));
    }
    cJSON *dv = cJSON_AddObjectToObject(o, "derived");
    for (int i = 0; i < MOSAIC_N_DERIVED; i++)
        if (!isnan(e->derived[i])) {
            cJSON *d = cJSON_CreateObject();
            cJSON_AddItemToObject(d, "number",
                                  argus__jnum(e->derived[i], mosaic_derived_unit(i), "derived"));
            cJSON_AddStringToObject(d, "formula", mosaic_derived_formula(i));
            cJSON_AddItemToObject(dv, mosaic_derived_key(i), d);
        }
    argus_pct pct[ARGUS_N_PCTS];
    argus_metrics_pct(e, m->spec, pct);
    cJSON *po = cJSON_AddObjectToObject(o, "pct_of_peak");
    for (int i = 0; i < ARGUS_N_PCTS; i++) {
        cJSON *x = cJSON_CreateObject();
        if (pct[i].ok)
            cJSON_AddItemToObject(x, "number", argus__jnum(pct[i].value, "% of peak", "derived"));
        else
            cJSON_AddStringToObject(x, "omitted", pct[i].why);
        cJSON_AddStringToObject(x, "formula", argus_pct_formula(i));
        cJSON_AddItemToObject(po, argus_pct_key(i), x);
    }
    cJSON_AddStringToObject(o, "pct_note", "pipe_*_pct in metrics are already % of peak "
                                           "sustained while the SM is active (observed)");
    argus_bottleneck bn;
    argus_bottleneck_of(e, &m->prof.gpu, m->spec, &bn);
    cJSON *b = cJSON_AddObjectToObject(o, "bottleneck");
    cJSON_AddStringToObject(b, "label", bn.label);
    cJSON_AddStringToObject(b, "mark", "derived");
    cJSON_AddStringToObject(b, "rule", bn.rule);
    cJSON_AddStringToObject(b, "why", bn.why);
    cJSON *in = cJSON_AddArrayToObject(b, "inputs");
    for (size_t i = 0; i < bn.nin; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", bn.in[i].name);
        if (isnan(bn.in[i].value))
            cJSON_AddNullToObject(x, "value");
        else
            cJSON_AddNumberToObject(x, "value", bn.in[i].value);
        cJSON_AddStringToObject(x, "unit", bn.in[i].unit);
        cJSON_AddStringToObject(x, "mark", bn.in[i].mark);
        cJSON_AddItemToArray(in, x);
    }
    return o;
}

int argus_metrics_text(const argus_metrics *m, const char *label, const argus_kcfg *k, FILE *f)
{
    if (m == NULL || m->state != ARGUS_METRICS_LOADED)
        return 0;
    long idx;
    size_t ncand;
    char why[1024];
    int js = argus_metrics_join(&m->prof, k, &idx, &ncand, NULL, 0, why, sizeof(why));
    if (js != ARGUS_JOIN_OK) {
        fprintf(f, "  %s: no hardware metrics: %s\n", label, why);
        return ferror(f) ? ARGUS_EIO : 0;
    }
    const struct mosaic_kernel *e = &m->prof.kernels[idx];
    argus_pct pct[ARGUS_N_PCTS];
    argus_metrics_pct(e, m->spec, pct);
    argus_bottleneck bn;
    argus_bottleneck_of(e, &m->prof.gpu, m->spec, &bn);
    fprintf(f, "  %s: %s (derived, %s): %s\n", label, bn.label, bn.rule, bn.why);
    fprintf(f, "    profile %s: duration %.3f us (observed)", e->key,
            e->metrics[MOSAIC_M_duration_ns] / 1e3);
    if (pct[ARGUS_PCT_DRAM_BW].ok)
        fprintf(f, ", DRAM %.1f%% of peak (derived)", pct[ARGUS_PCT_DRAM_BW].value);
    else
        fprintf(f, ", DRAM %% of peak omitted: %s", pct[ARGUS_PCT_DRAM_BW].why);
    if (!isnan(e->metrics[MOSAIC_M_issue_active]))
        fprintf(f, ", issue active %.1f%% of cycles (observed)",
                100 * e->metrics[MOSAIC_M_issue_active]);
    fputc('\n', f);
    return ferror(f) ? ARGUS_EIO : 0;
}

/* ---- argus-shim: kernel regions by launch configuration ---------------------------- */

/* The launches of one kernel region with one configuration on one device. */
typedef struct kgroup {
    uint32_t node;
    argus_kcfg cfg;
    int have_dev;
    uint32_t dev;
    uint64_t launches;
    int32_t next; /* the node's next group, -1 */
    cJSON *json;  /* its hw_metrics entry until handed to the node */
    char other_gpu[512];
} kgroup;

struct argus__shim_hw {
    const argus_shim_result *r;
    kgroup *g;
    size_t n, cap;
    int32_t *head; /* per trace node: its first group, -1 */
    argus__metrics_counts c;
};

static int same_cfg(const kgroup *g, const argus_shim_event *e)
{
    const argus_kcfg *k = &g->cfg;
    if (k->have_grid != e->have_grid || k->have_block != e->have_block ||
        k->have_dsmem != e->have_dsmem || g->have_dev != e->have_device)
        return 0;
    if (k->have_grid && memcmp(k->grid, e->grid, sizeof(k->grid)) != 0)
        return 0;
    if (k->have_block && memcmp(k->block, e->block, sizeof(k->block)) != 0)
        return 0;
    if (k->have_dsmem && k->dsmem != e->dsmem)
        return 0;
    return !g->have_dev || g->dev == e->device;
}

/* Which device ran a group's kernels, checked against the profile's GPU:
 * other_gpu is set when it is another GPU. */
static void check_group_device(argus__shim_hw *h, kgroup *g)
{
    const argus_shim_input *in = h->r->in;
    const argus_metrics *m = h->r->metrics;
    size_t d = SIZE_MAX;
    if (g->have_dev) {
        for (size_t i = 0; i < in->ndevices; i++)
            if (in->devices[i].id == g->dev)
                d = i;
    } else if (in->ndevices == 1) {
        d = 0;
    }
    if (d == SIZE_MAX)
        return;
    argus_metrics_check_device(m, in->devices[d].name, in->devices[d].sm_count, g->other_gpu,
                               sizeof(g->other_gpu));
}

void argus__shim_hw_free(argus__shim_hw *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->n; i++)
        cJSON_Delete(h->g[i].json);
    free(h->g);
    free(h->head);
    free(h);
}

int argus__shim_hw_build(const argus_shim_result *r, const argus_scope *s, argus__shim_hw **out)
{
    *out = NULL;
    const argus_trace *t = &r->trace;
    argus__shim_hw *h = calloc(1, sizeof(*h));
    if (h == NULL || (h->head = malloc((t->nnodes ? t->nnodes : 1) * sizeof(int32_t))) == NULL) {
        free(h);
        return ARGUS_ENOMEM;
    }
    h->r = r;
    for (size_t i = 0; i < t->nnodes; i++)
        h->head[i] = -1;
    for (size_t i = 0; i < t->nocc; i++) {
        const argus_occurrence *o = &t->occ[i];
        const argus_shim_event *e = r->occ_event ? r->occ_event[i] : NULL;
        if (e == NULL || r->node_kind[o->node] != ARGUS_SHIM_NODE_KERNEL || !argus_scope_match(s, o))
            continue;
        int32_t gi = h->head[o->node];
        while (gi >= 0 && !same_cfg(&h->g[gi], e))
            gi = h->g[gi].next;
        if (gi < 0) {
            if (argus__grow((void **)&h->g, &h->cap, h->n + 1, sizeof(kgroup)) != 0) {
                argus__shim_hw_free(h);
                return ARGUS_ENOMEM;
            }
            kgroup *g = &h->g[h->n];
            memset(g, 0, sizeof(*g));
            g->node = o->node;
            g->cfg.name = e->name;
            g->cfg.have_grid = e->have_grid;
            g->cfg.have_block = e->have_block;
            g->cfg.have_dsmem = e->have_dsmem;
            memcpy(g->cfg.grid, e->grid, sizeof(g->cfg.grid));
            memcpy(g->cfg.block, e->block, sizeof(g->cfg.block));
            g->cfg.dsmem = e->dsmem;
            g->have_dev = e->have_device;
            g->dev = e->device;
            g->next = -1;
            /* Appended at the node's tail, so groups keep first-launch order. */
            int32_t *link = &h->head[o->node];
            while (*link >= 0)
                link = &h->g[*link].next;
            *link = (int32_t)h->n;
            gi = (int32_t)h->n++;
        }
        h->g[gi].launches++;
    }
    const argus_shim_input *in = r->in;
    if (in->ndevices == 0)
        snprintf(h->c.device_note, sizeof(h->c.device_note),
                 "the recording names no device (a recording made before device lines, or by "
                 "hand): the kernels' GPU was not checked against the profile's");
    else
        snprintf(h->c.device_note, sizeof(h->c.device_note),
                 "each kernel's device (CUPTI device activity, %zu device%s recorded) checked "
                 "against the profile's GPU by name and SM count",
                 in->ndevices, in->ndevices == 1 ? "" : "s");
    for (size_t i = 0; i < h->n; i++) {
        kgroup *g = &h->g[i];
        check_group_device(h, g);
        int st = 0;
        g->json = argus__metrics_cfg_json(r->metrics, &g->cfg, g->launches,
                                          g->other_gpu[0] ? g->other_gpu : NULL, &st);
        if (g->json == NULL) {
            argus__shim_hw_free(h);
            return ARGUS_ENOMEM;
        }
        h->c.joined += st == ARGUS_JOIN_OK;
        h->c.none += st == ARGUS_JOIN_NONE;
        h->c.ambiguous += st == ARGUS_JOIN_AMBIGUOUS;
        h->c.other_gpu += st < 0;
        if (st == ARGUS_JOIN_OK)
            h->c.launches_joined += g->launches;
        else
            h->c.launches_unjoined += g->launches;
    }
    *out = h;
    return 0;
}

cJSON *argus__shim_hw_node(argus__shim_hw *h, uint32_t node)
{
    if (h == NULL || h->head[node] < 0)
        return NULL;
    cJSON *a = cJSON_CreateArray();
    for (int32_t gi = h->head[node]; a && gi >= 0; gi = h->g[gi].next) {
        cJSON_AddItemToArray(a, h->g[gi].json);
        h->g[gi].json = NULL;
    }
    return a;
}

cJSON *argus__shim_hw_run(const argus__shim_hw *h, const argus_metrics *m)
{
    return argus__metrics_run_json(m, h ? &h->c : NULL);
}

static void cfg_text(const argus_kcfg *k, char *buf, size_t len)
{
    int w = 0;
    buf[0] = '\0';
    if (k->have_grid)
        w = snprintf(buf, len, " grid=%lld,%lld,%lld", (long long)k->grid[0],
                     (long long)k->grid[1], (long long)k->grid[2]);
    if (k->have_block && w >= 0 && (size_t)w < len)
        w += snprintf(buf + w, len - (size_t)w, " block=%lld,%lld,%lld", (long long)k->block[0],
                      (long long)k->block[1], (long long)k->block[2]);
    if (k->have_dsmem && w >= 0 && (size_t)w < len)
        snprintf(buf + w, len - (size_t)w, " dyn_smem=%lld", (long long)k->dsmem);
}

int argus_shim_metrics_text(const argus_shim_result *r, const argus_scope *s, FILE *f)
{
    const argus_metrics *m = r ? r->metrics : NULL;
    if (m == NULL || m->state == ARGUS_METRICS_NOT_ASKED)
        return 0;
    if (m->state == ARGUS_METRICS_REFUSED) {
        fprintf(f, "hardware metrics: refused: %s\n", m->why);
        return ferror(f) ? ARGUS_EIO : 0;
    }
    argus__shim_hw *h;
    int rc = argus__shim_hw_build(r, s, &h);
    if (rc != 0)
        return rc;
    fprintf(f, "hardware metrics: profile %s (%s, %s GPU %s); %s\n", m->path,
            m->prof.method ? m->prof.method : "?", m->prof.complete ? "complete," : "incomplete,",
            m->prof.gpu.name ? m->prof.gpu.name : "unnamed",
            m->spec ? "% of peak from Argus's table of it" : m->spec_why);
    fprintf(f, "  %llu kernel configurations joined, %llu without a profile entry, %llu "
               "ambiguous (refused), %llu on another GPU; %s\n",
            (unsigned long long)h->c.joined, (unsigned long long)h->c.none,
            (unsigned long long)h->c.ambiguous, (unsigned long long)h->c.other_gpu,
            h->c.device_note);
    for (size_t i = 0; i < h->n && rc == 0; i++) {
        const kgroup *g = &h->g[i];
        char path[1024], cfg[160], label[1200];
        if (argus_node_path(&r->trace, r->reg, g->node, path, sizeof(path)) != 0)
            snprintf(path, sizeof(path), "node %u", g->node);
        cfg_text(&g->cfg, cfg, sizeof(cfg));
        if (snprintf(label, sizeof(label), "%s%s (%llu launches)", path, cfg,
                     (unsigned long long)g->launches) < 0)
            label[0] = '\0';
        if (g->other_gpu[0])
            fprintf(f, "  %s: no hardware metrics: %s\n", label, g->other_gpu);
        else
            rc = argus_metrics_text(m, label, &g->cfg, f);
    }
    argus__shim_hw_free(h);
    if (rc == 0 && ferror(f))
        rc = ARGUS_EIO;
    return rc;
}

int argus_shim_metrics_counts(const argus_shim_result *r, const argus_scope *s, uint64_t out[4])
{
    memset(out, 0, 4 * sizeof(uint64_t));
    if (r == NULL || r->metrics == NULL || r->metrics->state != ARGUS_METRICS_LOADED)
        return 0;
    argus__shim_hw *h;
    int rc = argus__shim_hw_build(r, s, &h);
    if (rc != 0)
        return rc;
    out[0] = h->c.joined;
    out[1] = h->c.none;
    out[2] = h->c.ambiguous;
    out[3] = h->c.other_gpu;
    argus__shim_hw_free(h);
    return 0;
}
