/*
 * The Argus planner: a resolved query and the recipes become a DAG of
 * TRANSFORM, COLLECT, SYNTHESIZE and CONTROL tasks, with the collections
 * put into runs by their effects (argus/plan.h, docs/argus-plan.md).
 *
 * Why a DAG with explicit runs rather than "one profiler run per signal":
 * evidence for one question comes from several program variants and
 * backends whose effects disturb each other (a forced completion wait
 * changes the timing it sits in, PC sampling serialises kernels, two CUPTI
 * sessions cannot coexist), and the cheapest valid plan shares a run
 * wherever the effects allow. The partition is a greedy first fit in task
 * order, so that a plan is the same every time it is made from the same
 * query; every split records the rule that forced it.
 *
 * Tasks are deduplicated by what they make: one TRANSFORM per (variant,
 * transformation), one COLLECT per (collection name, variant), so that two
 * signals needing the same evidence (region_time and async_latency both
 * need the marked variant's region trace) get one collection.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "argus/bpf.h"
#include "argus/pcmap.h"
#include "argus/plan.h"
#include "mosaic/profile_metrics.h"
#include "argus_internal.h"
#include "query_internal.h"

/* An operation ID's parts, in discover.h's layout (ARGUS_OP_ID). */
#define OP_REGION(id) ((unsigned)((id) >> 16))
#define OP_ORDINAL(id) ((unsigned)((id)&0xffffu))

/* A per-probe collection that waits on a CONTROL task's discoveries. */
typedef struct probe_spec {
    int control;              /* the CONTROL task */
    int signal;
    int parent_variant;       /* the variant the probes are made from */
    argus_recipe_collect c;
    char rule[64];
} probe_spec;

struct argus__plan_priv {
    probe_spec *specs;
    size_t n, cap;
};

/* Writes a reason into a fixed buffer, cut at its end when longer: a
 * reason is for people, and its start names the tasks and the rule. (Not
 * snprintf, whose truncation warnings at -O3 cannot tell a cut reason,
 * which is fine, from a cut name, which is checked where names are made.) */
static void put(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *buf, size_t len, const char *fmt, ...)
{
    if (buf == NULL || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (n < 0)
        buf[0] = '\0';
}

/* ---- capabilities ------------------------------------------------------- */

void argus_plan_env_all(argus_plan_env *env, unsigned sm)
{
    memset(env, 0, sizeof(*env));
    env->sm = sm;
    env->admin_counters = env->pc_sampling = env->sass_metrics = env->sanitizer = env->bpf = 1;
}

static void set_why(argus_plan_env *env, size_t slot, const char *fmt, const char *arg)
{
    int n = snprintf(env->why[slot], sizeof env->why[slot], fmt, arg);
    if (n < 0)
        env->why[slot][0] = '\0';
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

void argus_plan_env_detect(argus_plan_env *env, unsigned sm)
{
    argus_plan_env_all(env, sm);
    int root = geteuid() == 0;
    /* Profiling counters: the driver's RmProfilingAdminOnly says whether
     * only admin users may read them (NVIDIA's ERR_NVGPUCTRPERM). */
    FILE *f = fopen("/proc/driver/nvidia/params", "r");
    if (f == NULL) {
        env->admin_counters = 0;
        set_why(env, ARGUS_ENV_WHY_EFFECT(ARGUS_FX_ADMIN_COUNTERS),
                "cannot tell whether profiling counters are readable: no NVIDIA driver here "
                "(%s is missing); on the GPU machine pass --allow admin_counters if they are",
                "/proc/driver/nvidia/params");
    } else {
        char line[256];
        int admin_only = 1;
        while (fgets(line, sizeof line, f) != NULL)
            if (strncmp(line, "RmProfilingAdminOnly:", 21) == 0)
                admin_only = atoi(line + 21) != 0;
        fclose(f);
        if (admin_only && !root) {
            env->admin_counters = 0;
            set_why(env, ARGUS_ENV_WHY_EFFECT(ARGUS_FX_ADMIN_COUNTERS),
                    "the driver lets only admin users read profiling counters "
                    "(RmProfilingAdminOnly: 1 in %s) and this user is not root; run as root "
                    "or load nvidia with NVreg_RestrictProfilingToAdminUsers=0",
                    "/proc/driver/nvidia/params");
        }
    }
    /* CUPTI's PC sampling and SASS metrics come with libcupti; the
     * Sanitizer patching API with compute-sanitizer. */
    static const char *const cupti[] = {
        "/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
        "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so"};
    int have_cupti = 0;
    for (size_t i = 0; i < 3; i++)
        have_cupti |= file_exists(cupti[i]);
    if (!have_cupti) {
        env->pc_sampling = env->sass_metrics = 0;
        set_why(env, ARGUS_ENV_WHY_BACKEND(ARGUS_BE_PC_SAMPLING),
                "no libcupti found (looked in %s and the CUDA lib folders)", cupti[0]);
        set_why(env, ARGUS_ENV_WHY_BACKEND(ARGUS_BE_SASS_METRICS),
                "no libcupti found (looked in %s and the CUDA lib folders)", cupti[0]);
    }
    /* The Sanitizer patching API: its library where argus-pcmap would open
     * it (ARGUS_SANITIZER_LIB or the toolkit's places), and a GPU it
     * supports (CUDA 13's Sanitizer: sm_75 and newer). */
    char san[512], smsg[320];
    if (argus_pcmap_find_sanitizer(san, sizeof san, smsg, sizeof smsg) != 0) {
        env->sanitizer = 0;
        set_why(env, ARGUS_ENV_WHY_BACKEND(ARGUS_BE_SANITIZER), "%s", smsg);
    } else if (sm < 75) {
        env->sanitizer = 0;
        set_why(env, ARGUS_ENV_WHY_BACKEND(ARGUS_BE_SANITIZER), "%s",
                "the CUDA 13 Sanitizer patches sm_75 and newer GPUs only");
    }
    /* BPF: asked of the kernel (a program loaded and closed, the uprobe
     * PMU), not guessed from the user ID (include/argus/bpf.h). */
    argus_bpf_caps bc;
    argus_bpf_probe(&bc);
    char bwhy[320];
    if (!argus_bpf_usable(&bc, bwhy, sizeof bwhy)) {
        env->bpf = 0;
        set_why(env, ARGUS_ENV_WHY_BACKEND(ARGUS_BE_BPF), "%s", bwhy);
    }
}

int argus_plan_env_set(argus_plan_env *env, const char *name, int on, char *msg, size_t msglen)
{
    static const char *const names[] = {"admin_counters", "pc_sampling", "sass_metrics",
                                        "sanitizer_patch", "bpf"};
    int *field[] = {&env->admin_counters, &env->pc_sampling, &env->sass_metrics, &env->sanitizer,
                    &env->bpf};
    size_t slot[] = {ARGUS_ENV_WHY_EFFECT(ARGUS_FX_ADMIN_COUNTERS),
                     ARGUS_ENV_WHY_BACKEND(ARGUS_BE_PC_SAMPLING),
                     ARGUS_ENV_WHY_BACKEND(ARGUS_BE_SASS_METRICS),
                     ARGUS_ENV_WHY_BACKEND(ARGUS_BE_SANITIZER), ARGUS_ENV_WHY_BACKEND(ARGUS_BE_BPF)};
    for (size_t i = 0; i < 5; i++) {
        if (strcmp(name, names[i]) != 0)
            continue;
        *field[i] = on;
        if (on)
            env->why[slot[i]][0] = '\0';
        else
            set_why(env, slot[i], "%s was turned off (--deny)", names[i]);
        return 0;
    }
    char near[256];
    size_t k = argus_nearest_names(name, names, 5, 2, near, sizeof near);
    return argus__fail(ARGUS_EINVAL, msg, msglen,
                       "capability \"%.64s\" is not known%s%s%s; known: admin_counters, "
                       "pc_sampling, sass_metrics, sanitizer_patch, bpf",
                       name, k ? "; did you mean " : "", k ? near : "", k ? "?" : "");
}

/* Why this environment cannot run collection c ("" and 0 when it can). */
static int unsatisfied(const argus_plan_env *env, const argus_recipe_collect *c, char *why,
                       size_t len)
{
    struct {
        int backend;
        int ok;
    } be[] = {{ARGUS_BE_PC_SAMPLING, env->pc_sampling},
              {ARGUS_BE_SASS_METRICS, env->sass_metrics},
              {ARGUS_BE_SANITIZER, env->sanitizer},
              {ARGUS_BE_BPF, env->bpf}};
    for (size_t i = 0; i < 4; i++) {
        if (c->backend != be[i].backend || be[i].ok)
            continue;
        const char *w = env->why[ARGUS_ENV_WHY_BACKEND(c->backend)];
        put(why, len, "backend %s is not available: %s", argus_backend_name(c->backend),
                 w[0] ? w : "(no reason given)");
        return 1;
    }
    if ((c->effects & (1u << ARGUS_FX_ADMIN_COUNTERS)) && !env->admin_counters) {
        const char *w = env->why[ARGUS_ENV_WHY_EFFECT(ARGUS_FX_ADMIN_COUNTERS)];
        put(why, len, "needs admin counters: %s", w[0] ? w : "(no reason given)");
        return 1;
    }
    if (c->min_sm > env->sm) {
        put(why, len, "backend %s needs sm_%u or newer; the target GPU is sm_%u",
                 argus_backend_name(c->backend), c->min_sm, env->sm);
        return 1;
    }
    why[0] = '\0';
    return 0;
}

/* ---- building blocks ---------------------------------------------------- */

static int new_task(argus_plan *p, int type, const char *name)
{
    void *arr = p->tasks;
    if (argus__grow(&arr, &p->cap_tasks, p->ntasks + 1, sizeof(*p->tasks)) != 0)
        return ARGUS_ENOMEM;
    p->tasks = arr;
    argus_plan_task *t = &p->tasks[p->ntasks];
    memset(t, 0, sizeof(*t));
    t->id = (int)p->ntasks;
    t->type = type;
    t->variant = t->transform = t->backend = t->run = t->analysis = t->pending = -1;
    t->iter = -1;
    int n = snprintf(t->name, sizeof t->name, "%s", name);
    if (n < 0 || (size_t)n >= sizeof t->name)
        return ARGUS_ERANGE;
    return (int)p->ntasks++;
}

static int add_dep(argus_plan *p, int task, int dep)
{
    argus_plan_task *t = &p->tasks[task];
    for (size_t i = 0; i < t->ndeps; i++)
        if (t->deps[i] == dep)
            return 0;
    void *arr = t->deps;
    if (argus__grow(&arr, &t->cap_deps, t->ndeps + 1, sizeof(int)) != 0)
        return ARGUS_ENOMEM;
    t->deps = arr;
    t->deps[t->ndeps++] = dep;
    return 0;
}

/* The variant made from `parent` by transformation tx (op/iter for a
 * probe), created with its TRANSFORM task when new; extra_dep (>= 0) is
 * a task the TRANSFORM must wait for as well (a probe waits on its
 * CONTROL task). Returns the variant index or a negative code. */
static int get_variant(argus_plan *p, int parent, int tx, uint64_t op, int64_t iter, int extra_dep)
{
    for (size_t i = 0; i < p->nvariants; i++) {
        const argus_plan_variant *v = &p->variants[i];
        if (v->parent == parent && v->transform == tx && v->op == op && v->iter == iter)
            return (int)i;
    }
    void *arr = p->variants;
    if (argus__grow(&arr, &p->cap_variants, p->nvariants + 1, sizeof(*p->variants)) != 0)
        return ARGUS_ENOMEM;
    p->variants = arr;
    int idx = (int)p->nvariants;
    argus_plan_variant *v = &p->variants[idx];
    memset(v, 0, sizeof(*v));
    v->parent = parent;
    v->transform = tx;
    v->op = op;
    v->iter = iter;
    v->task = -1;
    int n;
    if (parent < 0) {
        const char *base = strrchr(p->query.program, '/');
        n = snprintf(v->name, sizeof v->name, "%s", base ? base + 1 : p->query.program);
    } else if (tx == ARGUS_TX_PROBE) {
        n = snprintf(v->name, sizeof v->name, "%s+probe(op=0x%07x.%u,iter=%lld)",
                     p->variants[parent].name, OP_REGION(op), OP_ORDINAL(op), (long long)iter);
    } else {
        n = snprintf(v->name, sizeof v->name, "%s+%s", p->variants[parent].name,
                     argus_transform_name(tx));
    }
    if (n < 0 || (size_t)n >= sizeof v->name)
        return ARGUS_ERANGE;
    p->nvariants++;
    if (parent < 0)
        return idx;
    char name[192];
    if (tx == ARGUS_TX_PROBE)
        snprintf(name, sizeof name, "transform:probe(op=0x%07x.%u,iter=%lld)->v%d", OP_REGION(op),
                 OP_ORDINAL(op), (long long)iter, idx);
    else
        snprintf(name, sizeof name, "transform:%s->v%d", argus_transform_name(tx), idx);
    int t = new_task(p, ARGUS_TASK_TRANSFORM, name);
    if (t < 0)
        return t;
    argus_plan_task *tt = &p->tasks[t];
    tt->variant = idx;
    tt->transform = tx;
    tt->op = op;
    tt->iter = iter;
    tt->timeout_s = 600;
    p->variants[idx].task = t;
    int rc = 0;
    if (p->variants[parent].task >= 0)
        rc = add_dep(p, t, p->variants[parent].task);
    if (rc == 0 && extra_dep >= 0)
        rc = add_dep(p, t, extra_dep);
    return rc != 0 ? rc : idx;
}

/* The variant a collection runs on, leaving its probe transformation out
 * (probes are made when the CONTROL task expands). */
static int collect_base_variant(argus_plan *p, const argus_recipe_collect *c)
{
    int v = 0;
    for (size_t i = 0; i < c->ntransforms; i++) {
        if (c->transforms[i] == ARGUS_TX_PROBE)
            continue;
        v = get_variant(p, v, c->transforms[i], 0, -1, -1);
        if (v < 0)
            return v;
    }
    return v;
}

static int mask_names(char *buf, size_t len, uint32_t bits, const char *(*name)(int), int count)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < count; i++) {
        if (!(bits & (1u << i)))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", name(i));
        if (n < 0 || (size_t)n >= len - used)
            return ARGUS_ERANGE;
        used += (size_t)n;
    }
    if (used == 0)
        snprintf(buf, len, "-");
    return 0;
}

/* ---- the partition rules ------------------------------------------------ */

#define FX(t, f) (((t)->effects >> (f)) & 1u)
#define OBS(t, o) (((t)->observes >> (o)) & 1u)

/* One direction of the rules: does a's effect disturb what b measures? */
static int disturbs(const argus_plan_task *a, const argus_plan_task *b, char *why, size_t len)
{
    if (FX(a, ARGUS_FX_PERTURBS_TIMING) && (OBS(b, ARGUS_OBS_TIMING) || OBS(b, ARGUS_OBS_SAMPLES))) {
        put(why, len, "%s perturbs_timing, which %s measures (%s)", a->name, b->name,
                 OBS(b, ARGUS_OBS_TIMING) ? "timing" : "samples of where warps stall");
        return 1;
    }
    if (FX(a, ARGUS_FX_SERIALISES_KERNELS) && (OBS(b, ARGUS_OBS_TIMING) || OBS(b, ARGUS_OBS_OVERLAP))) {
        put(why, len, "%s serialises_kernels, which changes the %s %s measures", a->name,
                 OBS(b, ARGUS_OBS_TIMING) ? "timing" : "overlap", b->name);
        return 1;
    }
    if (FX(a, ARGUS_FX_CHANGES_OVERLAP) && (OBS(b, ARGUS_OBS_OVERLAP) || OBS(b, ARGUS_OBS_TIMING))) {
        put(why, len, "%s changes_overlap, which changes the %s %s measures", a->name,
                 OBS(b, ARGUS_OBS_OVERLAP) ? "overlap" : "timing", b->name);
        return 1;
    }
    return 0;
}

int argus_plan_compatible(const argus_plan_task *a, const argus_plan_task *b, char *why,
                          size_t whylen)
{
    char tmp[8];
    if (why == NULL || whylen == 0) {
        why = tmp;
        whylen = sizeof tmp;
    }
    why[0] = '\0';
    if (a->type != ARGUS_TASK_COLLECT || b->type != ARGUS_TASK_COLLECT) {
        put(why, whylen, "only collections share runs");
        return 0;
    }
    if (a->variant != b->variant) {
        put(why, whylen, "%s and %s run different program variants (v%d, v%d)", a->name,
                 b->name, a->variant, b->variant);
        return 0;
    }
    if (FX(a, ARGUS_FX_EXCLUSIVE_CUPTI) && FX(b, ARGUS_FX_EXCLUSIVE_CUPTI)) {
        put(why, whylen, "%s and %s both need_exclusive_cupti (one CUPTI session per run)",
                 a->name, b->name);
        return 0;
    }
    if (disturbs(a, b, why, whylen) || disturbs(b, a, why, whylen))
        return 0;
    return 1;
}

static int add_run_why(argus_plan_run *r, const char *why)
{
    if (r->nwhy >= ARGUS_PLAN_MAX_WHY) {
        r->why_dropped++;
        return 0;
    }
    put(r->why[r->nwhy++], sizeof r->why[0], "%s", why);
    return 0;
}

/* First fit: the task joins the first run of its variant it is compatible
 * with, else opens a run that records why it could not join each other. */
static int assign_run(argus_plan *p, int task)
{
    argus_plan_task *t = &p->tasks[task];
    char why[ARGUS_PLAN_MAX_WHY][256];
    int why_run[ARGUS_PLAN_MAX_WHY];
    size_t nwhy = 0, dropped = 0;
    for (size_t r = 0; r < p->nruns; r++) {
        argus_plan_run *run = &p->runs[r];
        if (run->variant != t->variant)
            continue;
        char w[256] = "";
        int ok = 1;
        for (size_t i = 0; i < run->ntasks && ok; i++)
            ok = argus_plan_compatible(&p->tasks[run->tasks[i]], t, w, sizeof w);
        if (ok) {
            void *arr = run->tasks;
            size_t cap = run->ntasks;
            if (argus__grow(&arr, &cap, run->ntasks + 1, sizeof(int)) != 0)
                return ARGUS_ENOMEM;
            run->tasks = arr;
            run->tasks[run->ntasks++] = task;
            run->effects |= t->effects;
            t->run = (int)r;
            return 0;
        }
        if (nwhy < ARGUS_PLAN_MAX_WHY) {
            put(why[nwhy], sizeof why[0], "%s", w);
            why_run[nwhy++] = (int)r;
        } else {
            dropped++;
        }
    }
    void *arr = p->runs;
    if (argus__grow(&arr, &p->cap_runs, p->nruns + 1, sizeof(*p->runs)) != 0)
        return ARGUS_ENOMEM;
    p->runs = arr;
    argus_plan_run *run = &p->runs[p->nruns];
    memset(run, 0, sizeof(*run));
    run->variant = t->variant;
    run->tasks = malloc(sizeof(int));
    if (run->tasks == NULL)
        return ARGUS_ENOMEM;
    run->tasks[0] = task;
    run->ntasks = 1;
    run->effects = t->effects;
    t->run = (int)p->nruns++;
    if (nwhy == 0) {
        char w[256];
        put(w, sizeof w, "first run of variant v%d (%.160s): one run executes one variant",
                 t->variant,
                 p->variants[t->variant].name);
        add_run_why(run, w);
    }
    for (size_t i = 0; i < nwhy; i++) {
        char w[256];
        put(w, sizeof w, "not in run %d: %s", why_run[i], why[i]);
        add_run_why(run, w);
    }
    run->why_dropped += dropped;
    return 0;
}

/* Marks the TRANSFORM tasks that make variant v as serving signal. */
static void mark_chain(argus_plan *p, int v, int signal)
{
    for (; v >= 0; v = p->variants[v].parent)
        if (p->variants[v].task >= 0)
            p->tasks[p->variants[v].task].signals |= 1u << signal;
}

/* The COLLECT task for collection c on variant v (one per name and
 * variant); the same name defined differently by two recipes is an
 * error, since one of them would be measured wrongly. */
/* ---- metric names ------------------------------------------------------------ */

/* The metric names a query may ask, and the backend that collects each:
 * the range profiler's (hw_metrics) are the kernel profile's features,
 * by feature key or by CUPTI/ncu counter name (mosaic/profile_metrics.h,
 * what mosaic-profile collects); the SASS metrics (inst_executed_pc) are
 * CUPTI's per-PC SASS counters that argus-sass passes to
 * cuptiSassMetricsSetConfig. A device may offer more SASS metrics than
 * this list (cuptiSassMetricsGetMetrics says which); one missing here is
 * added here, so that a misspelt name is refused at plan time and never
 * becomes a run that collects nothing. */
static const char *const range_metric_names[] = {
#define X_RANGE(key, name, unit, dim) #key, name,
    MOSAIC_METRICS(X_RANGE)
#undef X_RANGE
};

static const char *const sass_metric_names[] = {
    "smsp__sass_inst_executed",
    "smsp__sass_thread_inst_executed",
    "smsp__sass_thread_inst_executed_pred_on",
    "smsp__sass_inst_executed_op_global_ld",
    "smsp__sass_inst_executed_op_global_st",
    "smsp__sass_inst_executed_op_shared_ld",
    "smsp__sass_inst_executed_op_shared_st",
    "smsp__sass_inst_executed_op_local_ld",
    "smsp__sass_inst_executed_op_local_st",
    "smsp__sass_inst_executed_op_ldgsts",
    "smsp__sass_sectors_mem_global",
    "smsp__sass_sectors_mem_global_ideal",
    "smsp__sass_sectors_mem_shared",
    "smsp__sass_sectors_mem_shared_ideal",
};

#define N_RANGE_METRICS (sizeof range_metric_names / sizeof range_metric_names[0])
#define N_SASS_METRICS (sizeof sass_metric_names / sizeof sass_metric_names[0])

static int in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return 1;
    return 0;
}

/* The backend that collects the metric `name` (ARGUS_BE_RANGE_PROFILER or
 * ARGUS_BE_SASS_METRICS), or -1 with the nearest known names in msg. */
static int metric_backend(const char *name, char *msg, size_t msglen)
{
    if (in_list(name, range_metric_names, N_RANGE_METRICS))
        return ARGUS_BE_RANGE_PROFILER;
    if (in_list(name, sass_metric_names, N_SASS_METRICS))
        return ARGUS_BE_SASS_METRICS;
    const char *all[N_RANGE_METRICS + N_SASS_METRICS];
    for (size_t i = 0; i < N_RANGE_METRICS; i++)
        all[i] = range_metric_names[i];
    for (size_t i = 0; i < N_SASS_METRICS; i++)
        all[N_RANGE_METRICS + i] = sass_metric_names[i];
    char near[1024];
    if (argus_nearest_names(name, all, N_RANGE_METRICS + N_SASS_METRICS, 3, near,
                            sizeof near) == 0)
        snprintf(near, sizeof near, "(none close)");
    argus__fail(ARGUS_EINVAL, msg, msglen,
                "no metric \"%s\": did you mean %s? hw_metrics takes the kernel profile's "
                "counters (a feature key or its CUPTI name, e.g. dram_read_bytes or "
                "dram__bytes_read.sum: include/mosaic/profile_metrics.h), inst_executed_pc "
                "CUPTI's SASS metrics (e.g. smsp__sass_inst_executed)",
                name, near);
    return -1;
}

/* Checks every metric of the query: known, and collected by a signal the
 * query asks (hw_metrics for a counter, inst_executed_pc for a SASS
 * metric), so that no name is silently dropped. */
static int check_metrics(const argus_query *q, char *msg, size_t msglen)
{
    for (size_t i = 0; i < q->nmetrics; i++) {
        int be = metric_backend(q->metrics[i], msg, msglen);
        if (be < 0)
            return ARGUS_EINVAL;
        int sig = be == ARGUS_BE_RANGE_PROFILER ? ARGUS_SIG_HW_METRICS : ARGUS_SIG_INST_PC;
        if (!(q->signals & (1u << sig)))
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "metric \"%s\" is %s, which only the signal %s collects, and the "
                               "query does not ask for it: add --signal %s or drop the metric",
                               q->metrics[i],
                               be == ARGUS_BE_RANGE_PROFILER ? "a hardware counter per kernel"
                                                             : "a SASS metric per PC",
                               argus_signal_name(sig), argus_signal_name(sig));
    }
    return 0;
}

/* The query's metrics that backend be collects, as a comma list in the
 * query's order, into t->metrics (left NULL when there are none). */
static int collect_metrics(const argus_query *q, int be, argus_plan_task *t)
{
    t->metrics = NULL;
    if (be != ARGUS_BE_RANGE_PROFILER && be != ARGUS_BE_SASS_METRICS)
        return 0;
    size_t cap = 1, used = 0;
    for (size_t i = 0; i < q->nmetrics; i++)
        cap += strlen(q->metrics[i]) + 1;
    char *list = malloc(cap);
    if (list == NULL)
        return ARGUS_ENOMEM;
    list[0] = '\0';
    for (size_t i = 0; i < q->nmetrics; i++) {
        const char *m = q->metrics[i];
        int mine = be == ARGUS_BE_RANGE_PROFILER
                       ? in_list(m, range_metric_names, N_RANGE_METRICS)
                       : in_list(m, sass_metric_names, N_SASS_METRICS);
        if (!mine)
            continue;
        used += (size_t)snprintf(list + used, cap - used, "%s%s", used ? "," : "", m);
    }
    if (used == 0)
        free(list);
    else
        t->metrics = list;
    return 0;
}

static int get_collect(argus_plan *p, const argus_recipe_collect *c, int v, int signal,
                       const char *recipe_file, char *msg, size_t msglen)
{
    char name[192];
    snprintf(name, sizeof name, "collect:%s@v%d", c->name, v);
    for (size_t i = 0; i < p->ntasks; i++) {
        argus_plan_task *t = &p->tasks[i];
        if (t->type != ARGUS_TASK_COLLECT || t->variant != v || strcmp(t->name, name) != 0)
            continue;
        if (t->backend != c->backend || t->effects != c->effects || t->observes != c->observes ||
            t->retains != c->retains)
            return argus__fail(ARGUS_EFORMAT, msg, msglen,
                               "%s: recipe %s: collection %s differs from the collection of "
                               "that name another recipe declared (backend, effects, observes "
                               "or retains); give one of them another name or make them equal",
                               recipe_file, argus_signal_name(signal), c->name);
        t->signals |= 1u << signal;
        mark_chain(p, v, signal);
        return (int)i;
    }
    mark_chain(p, v, signal);
    int id = new_task(p, ARGUS_TASK_COLLECT, name);
    if (id < 0)
        return id;
    argus_plan_task *t = &p->tasks[id];
    t->signals = 1u << signal;
    t->variant = v;
    t->backend = c->backend;
    t->effects = c->effects;
    t->observes = c->observes;
    t->retains = c->retains;
    t->exclusive = "gpu";
    t->timeout_s = c->timeout_s;
    int rc = collect_metrics(&p->query, c->backend, t);
    if (rc == 0 && p->variants[v].task >= 0)
        rc = add_dep(p, id, p->variants[v].task);
    if (rc == 0)
        rc = assign_run(p, id);
    return rc != 0 ? rc : id;
}

static int get_analysis(argus_plan *p, int an, int v, int signal)
{
    static const int types[] = {
#define ARGUS_X_AN(e, name, type, what) type,
        ARGUS_ANALYSES(ARGUS_X_AN)
#undef ARGUS_X_AN
    };
    for (size_t i = 0; i < p->ntasks; i++) {
        argus_plan_task *t = &p->tasks[i];
        if (t->analysis == an && t->variant == v) {
            t->signals |= 1u << signal;
            return (int)i;
        }
    }
    mark_chain(p, v, signal);
    char name[192];
    snprintf(name, sizeof name, "%s:%s@v%d", argus_task_type_name(types[an]),
             argus_analysis_name(an), v);
    int id = new_task(p, types[an], name);
    if (id < 0)
        return id;
    argus_plan_task *t = &p->tasks[id];
    t->analysis = an;
    t->variant = v;
    t->signals = 1u << signal;
    t->timeout_s = 300;
    if (types[an] == ARGUS_TASK_SYNTHESIZE)
        snprintf(t->rule, sizeof t->rule, "%s", argus_analysis_name(an));
    int rc = p->variants[v].task >= 0 ? add_dep(p, id, p->variants[v].task) : 0;
    return rc != 0 ? rc : id;
}

static int add_unsat(argus_plan *p, int signal, const char *collect, int dropped, const char *why)
{
    void *arr = p->unsat;
    if (argus__grow(&arr, &p->cap_unsat, p->nunsat + 1, sizeof(*p->unsat)) != 0)
        return ARGUS_ENOMEM;
    p->unsat = arr;
    argus_plan_unsat *u = &p->unsat[p->nunsat++];
    memset(u, 0, sizeof(*u));
    u->signal = signal;
    put(u->collect, sizeof u->collect, "%s", collect);
    u->dropped_signal = dropped;
    put(u->why, sizeof u->why, "%s", why);
    if (dropped)
        p->partial = 1;
    return 0;
}

static int add_spec(argus_plan *p, int control, int signal, int parent_variant,
                    const argus_recipe_collect *c, const char *rule)
{
    struct argus__plan_priv *pv = p->priv;
    void *arr = pv->specs;
    if (argus__grow(&arr, &pv->cap, pv->n + 1, sizeof(*pv->specs)) != 0)
        return ARGUS_ENOMEM;
    pv->specs = arr;
    probe_spec *s = &pv->specs[pv->n++];
    s->control = control;
    s->signal = signal;
    s->parent_variant = parent_variant;
    s->c = *c;
    snprintf(s->rule, sizeof s->rule, "%s", rule);
    return 0;
}

/* The tasks of one signal's recipe. */
static int plan_signal(argus_plan *p, const argus_recipe *r, char *msg, size_t msglen)
{
    int sig = r->signal;
    char why[512];
    /* A required collection this machine cannot run drops the signal; an
     * optional one is named and left out. Checked first, so that a dropped
     * signal leaves no half-made tasks behind. */
    for (size_t i = 0; i < r->ncollect; i++) {
        if (!r->collect[i].optional && unsatisfied(&p->env, &r->collect[i], why, sizeof why))
            return add_unsat(p, sig, r->collect[i].name, 1, why);
    }
    int base_v = -1; /* the variant the recipe's analyses look at */
    int synth_deps[ARGUS_RECIPE_MAX_COLLECT + ARGUS_AN_COUNT];
    size_t nsd = 0;
    for (size_t i = 0; i < r->ncollect; i++) {
        const argus_recipe_collect *c = &r->collect[i];
        if (c->optional && unsatisfied(&p->env, c, why, sizeof why)) {
            int rc = add_unsat(p, sig, c->name, 0, why);
            if (rc != 0)
                return rc;
            continue;
        }
        int v = collect_base_variant(p, c);
        if (v < 0)
            return v;
        if (base_v < 0 || c->per_probe)
            base_v = v;
        if (c->per_probe)
            continue;
        int t = get_collect(p, c, v, sig, r->file, msg, msglen);
        if (t < 0)
            return t;
        synth_deps[nsd++] = t;
    }
    if (nsd == 0)
        return add_unsat(p, sig, "", 1,
                         "every collection of its recipe is optional and none can run here");
    if (base_v < 0)
        base_v = 0;
    int control = -1;
    for (int an = 0; an < ARGUS_AN_COUNT; an++) {
        if (!(r->prerequisites & (1u << an)))
            continue;
        int t = get_analysis(p, an, base_v, sig);
        if (t < 0)
            return t;
        if (p->tasks[t].type == ARGUS_TASK_CONTROL)
            control = t;
        synth_deps[nsd++] = t;
    }
    for (size_t i = 0; i < r->ncollect && control >= 0; i++) {
        const argus_recipe_collect *c = &r->collect[i];
        if (!c->per_probe || (c->optional && unsatisfied(&p->env, c, why, sizeof why)))
            continue;
        int rc = add_spec(p, control, sig, collect_base_variant(p, c), c, r->synthesis);
        if (rc != 0)
            return rc;
    }
    /* The scope the query asks for must be kept by the evidence, or the
     * answer covers more than was asked: said, and the plan is partial. */
    uint32_t kept = 0;
    for (size_t i = 0; i < r->ncollect; i++)
        if (!(r->collect[i].optional && unsatisfied(&p->env, &r->collect[i], why, sizeof why)))
            kept |= r->collect[i].retains;
    const argus_query *q = &p->query;
    struct {
        int coord, asked;
        const char *all;
    } need[] = {{ARGUS_CO_REGION, q->region_id != 0, "the whole kernel"},
                {ARGUS_CO_ITERATION, q->scope.iter_lo >= 0, "every iteration"},
                {ARGUS_CO_ROLE, q->scope.role[0] != '\0', "every warp role"},
                {ARGUS_CO_CTA, q->scope.cta_lo >= 0, "every CTA"},
                {ARGUS_CO_SM, q->scope.sm_lo >= 0, "every SM"},
                {ARGUS_CO_WARP, q->scope.warp_lo >= 0, "every warp"}};
    char keeps[256];
    if (mask_names(keeps, sizeof keeps, kept, argus_coord_name, ARGUS_CO_COUNT) != 0)
        keeps[0] = '\0';
    /* A kernel-level signal answers a region query for the kernels the
     * region runs in, so for the region, keeping the kernel is enough. */
    if (kept & (1u << ARGUS_CO_KERNEL))
        kept |= 1u << ARGUS_CO_REGION;
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        if (!need[i].asked || (kept & (1u << need[i].coord)))
            continue;
        put(why, sizeof why,
            "the query's %s scope cannot be kept: no collection of the recipe retains %s (they "
            "keep %s), so the signal covers %s",
            argus_coord_name(need[i].coord), argus_coord_name(need[i].coord), keeps, need[i].all);
        int rc = add_unsat(p, sig, "", 0, why);
        if (rc != 0)
            return rc;
        p->partial = 1;
    }
    char name[192];
    snprintf(name, sizeof name, "synthesize:%s[%s]", r->synthesis, r->signal_name);
    int s = new_task(p, ARGUS_TASK_SYNTHESIZE, name);
    if (s < 0)
        return s;
    argus_plan_task *st = &p->tasks[s];
    st->signals = 1u << sig;
    snprintf(st->rule, sizeof st->rule, "%s", r->synthesis);
    st->pending = control;
    st->timeout_s = 300;
    for (size_t i = 0; i < nsd; i++) {
        int rc = add_dep(p, s, synth_deps[i]);
        if (rc != 0)
            return rc;
    }
    p->answered |= 1u << sig;
    return 0;
}

int argus_plan_build(const argus_query *q, const argus_recipes *rs, const argus_plan_env *env,
                     argus_plan *plan, char *msg, size_t msglen)
{
    if (q == NULL || rs == NULL || env == NULL || plan == NULL)
        return ARGUS_EINVAL;
    memset(plan, 0, sizeof(*plan));
    if (q->signals == 0 || q->program[0] == '\0')
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "the query has no %s; resolve it first (argus_query_resolve)",
                           q->signals == 0 ? "signal" : "program");
    for (int sig = 0; sig < ARGUS_SIG_COUNT; sig++)
        if ((q->signals & (1u << sig)) && argus_recipes_find(rs, sig) == NULL)
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "no recipe for signal %s in the recipes loaded; add one "
                               "(docs/argus-plan.md)",
                               argus_signal_name(sig));
    if (check_metrics(q, msg, msglen) != 0)
        return ARGUS_EINVAL;
    plan->query = *q;
    plan->env = *env;
    plan->priv = calloc(1, sizeof(*plan->priv));
    if (plan->priv == NULL)
        return ARGUS_ENOMEM;
    int rc = get_variant(plan, -1, -1, 0, -1, -1);
    for (int sig = 0; rc >= 0 && sig < ARGUS_SIG_COUNT; sig++)
        if (q->signals & (1u << sig))
            rc = plan_signal(plan, argus_recipes_find(rs, sig), msg, msglen);
    if (rc < 0) {
        if (rc == ARGUS_ENOMEM)
            argus__fail(rc, msg, msglen, "out of memory while planning");
        else if (rc == ARGUS_ERANGE)
            argus__fail(rc, msg, msglen, "a task or variant name is too long for the plan");
        argus_plan_free(plan);
        return rc;
    }
    if (plan->answered == 0) {
        size_t used = 0;
        int n = snprintf(msg, msglen, "no signal of the query can be measured here:");
        used = n > 0 ? (size_t)n : 0;
        for (size_t i = 0; i < plan->nunsat && used < msglen; i++) {
            n = snprintf(msg + used, msglen - used, " %s (collection %s): %s;",
                         argus_signal_name(plan->unsat[i].signal), plan->unsat[i].collect,
                         plan->unsat[i].why);
            if (n < 0)
                break;
            used += (size_t)n;
        }
        argus_plan_free(plan);
        return ARGUS_EINVAL;
    }
    return 0;
}

void argus_plan_free(argus_plan *plan)
{
    if (plan == NULL)
        return;
    for (size_t i = 0; i < plan->ntasks; i++) {
        free(plan->tasks[i].deps);
        free(plan->tasks[i].metrics);
    }
    for (size_t i = 0; i < plan->nruns; i++)
        free(plan->runs[i].tasks);
    free(plan->tasks);
    free(plan->variants);
    free(plan->runs);
    free(plan->unsat);
    if (plan->priv != NULL)
        free(plan->priv->specs);
    free(plan->priv);
    memset(plan, 0, sizeof(*plan));
}

/* ---- expansion ------------------------------------------------------------ */

int argus_plan_expand(argus_plan *p, int control, const argus_plan_op *ops, size_t nops,
                      char *msg, size_t msglen)
{
    if (p == NULL || p->priv == NULL || (nops > 0 && ops == NULL))
        return ARGUS_EINVAL;
    if (control < 0 || (size_t)control >= p->ntasks || p->tasks[control].type != ARGUS_TASK_CONTROL)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "task %d is not a CONTROL task of the plan",
                           control);
    if (p->tasks[control].expanded)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "%s was already expanded",
                           p->tasks[control].name);
    /* An operation in a loop is probed at each iteration of the window
     * (its first execution without one); any other at its one execution. */
    const argus_query_scope *sc = &p->query.scope;
    int64_t lo = sc->iter_lo >= 0 ? sc->iter_lo : 0, hi = sc->iter_lo >= 0 ? sc->iter_hi : 0;
    uint64_t branches = 0;
    for (size_t i = 0; i < nops; i++) {
        if (ops[i].id == 0)
            return argus__fail(ARGUS_EINVAL, msg, msglen, "%s: operation [%zu] has ID 0",
                               p->tasks[control].name, i);
        for (size_t j = 0; j < i; j++)
            if (ops[i].id == ops[j].id)
                return argus__fail(ARGUS_EINVAL, msg, msglen,
                                   "%s: operation 0x%07x.%u is listed twice",
                                   p->tasks[control].name, OP_REGION(ops[i].id),
                                   OP_ORDINAL(ops[i].id));
        branches += ops[i].in_loop ? (uint64_t)(hi - lo + 1) : 1u;
        if (branches > ARGUS_PLAN_MAX_PROBES)
            return argus__fail(ARGUS_ELIMIT, msg, msglen,
                               "%s: more than %u probe branches (%zu operations, iterations "
                               "%lld..%lld); narrow the region or the iteration window",
                               p->tasks[control].name, ARGUS_PLAN_MAX_PROBES, nops,
                               (long long)lo, (long long)hi);
    }
    struct argus__plan_priv *pv = p->priv;
    int rc = 0;
    for (size_t o = 0; o < nops && rc == 0; o++) {
        int64_t first = ops[o].in_loop ? lo : 0, last = ops[o].in_loop ? hi : 0;
        for (int64_t it = first; it <= last && rc == 0; it++) {
            for (int sig = 0; sig < ARGUS_SIG_COUNT && rc == 0; sig++) {
                int branch_synth = -1;
                for (size_t k = 0; k < pv->n && rc == 0; k++) {
                    const probe_spec *s = &pv->specs[k];
                    if (s->control != control || s->signal != sig)
                        continue;
                    int v = get_variant(p, s->parent_variant, ARGUS_TX_PROBE, ops[o].id, it,
                                        control);
                    if (v < 0) {
                        rc = v;
                        break;
                    }
                    int c = get_collect(p, &s->c, v, sig, "(probe)", msg, msglen);
                    if (c < 0) {
                        rc = c;
                        break;
                    }
                    p->tasks[c].op = ops[o].id;
                    p->tasks[c].iter = it;
                    if (branch_synth < 0) {
                        char name[192];
                        snprintf(name, sizeof name, "synthesize:%s(op=0x%07x.%u,iter=%lld)",
                                 s->rule, OP_REGION(ops[o].id), OP_ORDINAL(ops[o].id),
                                 (long long)it);
                        branch_synth = new_task(p, ARGUS_TASK_SYNTHESIZE, name);
                        if (branch_synth < 0) {
                            rc = branch_synth;
                            break;
                        }
                        argus_plan_task *bt = &p->tasks[branch_synth];
                        bt->signals = 1u << sig;
                        bt->op = ops[o].id;
                        bt->iter = it;
                        bt->timeout_s = 300;
                        snprintf(bt->rule, sizeof bt->rule, "%s", s->rule);
                    }
                    rc = add_dep(p, branch_synth, c);
                }
                /* The signal's final synthesis joins the branch. */
                for (size_t t = 0; t < p->ntasks && rc == 0 && branch_synth >= 0; t++)
                    if (p->tasks[t].type == ARGUS_TASK_SYNTHESIZE &&
                        p->tasks[t].pending == control && (p->tasks[t].signals & (1u << sig)))
                        rc = add_dep(p, (int)t, branch_synth);
            }
        }
    }
    if (rc != 0)
        return rc == ARGUS_ENOMEM ? argus__fail(rc, msg, msglen, "out of memory while expanding")
                                  : rc;
    for (size_t t = 0; t < p->ntasks; t++)
        if (p->tasks[t].pending == control)
            p->tasks[t].pending = -1;
    p->tasks[control].expanded = 1;
    return 0;
}

/* ---- checks ---------------------------------------------------------------- */

static int visit(const argus_plan *p, int t, unsigned char *state, char *msg, size_t msglen)
{
    /* Iterative colouring would need its own stack; the depth of a plan is
     * small (transform chain, collect, synthesis), so recursion is bounded
     * by the chain of dependencies, at most a handful deep. */
    if (state[t] == 2)
        return 0;
    if (state[t] == 1)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "dependency cycle through %s",
                           p->tasks[t].name);
    state[t] = 1;
    for (size_t i = 0; i < p->tasks[t].ndeps; i++) {
        int rc = visit(p, p->tasks[t].deps[i], state, msg, msglen);
        if (rc != 0)
            return rc;
    }
    state[t] = 2;
    return 0;
}

int argus_plan_check(const argus_plan *p, char *msg, size_t msglen)
{
    if (p == NULL)
        return ARGUS_EINVAL;
    for (size_t i = 0; i < p->ntasks; i++) {
        const argus_plan_task *t = &p->tasks[i];
        for (size_t d = 0; d < t->ndeps; d++)
            if (t->deps[d] < 0 || (size_t)t->deps[d] >= p->ntasks || t->deps[d] == (int)i)
                return argus__fail(ARGUS_EINVAL, msg, msglen, "%s: dependency %d is not a task",
                                   t->name, t->deps[d]);
        if (t->type == ARGUS_TASK_COLLECT) {
            if (t->run < 0 || (size_t)t->run >= p->nruns)
                return argus__fail(ARGUS_EINVAL, msg, msglen, "%s is in no run", t->name);
            const argus_plan_run *r = &p->runs[t->run];
            size_t seen = 0;
            for (size_t k = 0; k < r->ntasks; k++)
                seen += r->tasks[k] == (int)i;
            if (seen != 1 || r->variant != t->variant)
                return argus__fail(ARGUS_EINVAL, msg, msglen,
                                   "%s is not listed once in run %d of its variant", t->name,
                                   t->run);
        }
    }
    unsigned char *state = calloc(p->ntasks + 1, 1);
    if (state == NULL)
        return ARGUS_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < p->ntasks && rc == 0; i++)
        rc = visit(p, (int)i, state, msg, msglen);
    free(state);
    if (rc != 0)
        return rc;
    for (size_t r = 0; r < p->nruns; r++) {
        const argus_plan_run *run = &p->runs[r];
        for (size_t a = 0; a < run->ntasks; a++)
            for (size_t b = a + 1; b < run->ntasks; b++) {
                char why[256];
                if (!argus_plan_compatible(&p->tasks[run->tasks[a]], &p->tasks[run->tasks[b]], why,
                                           sizeof why))
                    return argus__fail(ARGUS_EINVAL, msg, msglen, "run %zu: %s", r, why);
            }
    }
    return 0;
}

int argus_plan_order(const argus_plan *p, int *order, char *msg, size_t msglen)
{
    if (p == NULL || (order == NULL && p->ntasks > 0))
        return ARGUS_EINVAL;
    /* Kahn's algorithm with the lowest ready ID first: a plan has at most
     * a few thousand tasks, so the quadratic scan for it is cheap, and it
     * keeps the order stable for the tests and the workspace's keys. */
    size_t n = p->ntasks;
    size_t *left = calloc(n + 1, sizeof(*left));
    unsigned char *done = calloc(n + 1, 1);
    if (left == NULL || done == NULL) {
        free(left);
        free(done);
        return ARGUS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        left[i] = p->tasks[i].ndeps;
    size_t k = 0;
    int rc = 0;
    while (k < n) {
        size_t pick = n;
        for (size_t i = 0; i < n && pick == n; i++)
            if (!done[i] && left[i] == 0)
                pick = i;
        if (pick == n) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "the plan's dependencies hold a cycle (%zu tasks cannot be ordered)",
                             n - k);
            break;
        }
        done[pick] = 1;
        order[k++] = (int)pick;
        for (size_t i = 0; i < n; i++)
            for (size_t d = 0; d < p->tasks[i].ndeps; d++)
                if (p->tasks[i].deps[d] == (int)pick)
                    left[i]--;
    }
    free(left);
    free(done);
    return rc;
}

/* ---- output ------------------------------------------------------------- */

static const char *signal_list(uint32_t sigs, char *buf, size_t len)
{
    if (mask_names(buf, len, sigs, argus_signal_name, ARGUS_SIG_COUNT) != 0)
        snprintf(buf, len, "?");
    return buf;
}

int argus_plan_write_text(const argus_plan *p, FILE *f)
{
    if (p == NULL || f == NULL)
        return ARGUS_EINVAL;
    const argus_query *q = &p->query;
    char b1[512], b2[512], b3[512];
    fprintf(f, "argus plan: program %s, region %s", q->program,
            q->region_id ? q->region_path : "(whole kernel)");
    if (q->region_id)
        fprintf(f, " (0x%07x)", q->region_id);
    fprintf(f, "\n  signals asked: %s; answered: %s%s\n", signal_list(q->signals, b1, sizeof b1),
            signal_list(p->answered, b2, sizeof b2), p->partial ? " (PARTIAL plan)" : "");
    const argus_query_scope *s = &q->scope;
    fprintf(f, "  scope:");
    int any = 0;
    if (s->role[0]) {
        fprintf(f, " role %s", s->role);
        any = 1;
    }
    const char *rn[] = {"iter", "cta", "sm", "warp"};
    const int64_t *lo[] = {&s->iter_lo, &s->cta_lo, &s->sm_lo, &s->warp_lo};
    const int64_t *hi[] = {&s->iter_hi, &s->cta_hi, &s->sm_hi, &s->warp_hi};
    for (int i = 0; i < 4; i++)
        if (*lo[i] >= 0) {
            fprintf(f, " %s %lld..%lld", rn[i], (long long)*lo[i], (long long)*hi[i]);
            any = 1;
        }
    fprintf(f, "%s\n  target: sm_%u\n", any ? "" : " everything", p->env.sm);
    fprintf(f, "variants (%zu):\n", p->nvariants);
    for (size_t i = 0; i < p->nvariants; i++)
        fprintf(f, "  v%zu %s%s\n", i, p->variants[i].name, i == 0 ? " (the program as given)" : "");
    fprintf(f, "tasks (%zu):\n", p->ntasks);
    for (size_t i = 0; i < p->ntasks; i++) {
        const argus_plan_task *t = &p->tasks[i];
        fprintf(f, "  t%-3zu %-10s %s", i, argus_task_type_name(t->type), t->name);
        if (t->type == ARGUS_TASK_COLLECT) {
            mask_names(b1, sizeof b1, t->effects, argus_effect_name, ARGUS_FX_COUNT);
            mask_names(b2, sizeof b2, t->observes, argus_observes_name, ARGUS_OBS_COUNT);
            fprintf(f, " backend=%s run=r%d observes=%s effects=%s", argus_backend_name(t->backend),
                    t->run, b2, b1);
            if (t->metrics != NULL)
                fprintf(f, " metrics=%s", t->metrics);
        }
        if (t->type == ARGUS_TASK_CONTROL)
            fprintf(f, " %s", t->expanded ? "(expanded)"
                                          : "(adds one probe branch per operation and iteration "
                                            "when it has run)");
        if (t->pending >= 0)
            fprintf(f, " (waits for t%d's branches)", t->pending);
        fprintf(f, "\n        deps:");
        for (size_t d = 0; d < t->ndeps; d++)
            fprintf(f, " t%d", t->deps[d]);
        fprintf(f, "%s  for: %s\n", t->ndeps ? "" : " -", signal_list(t->signals, b3, sizeof b3));
    }
    fprintf(f, "runs (%zu; one run is one execution of one variant):\n", p->nruns);
    for (size_t r = 0; r < p->nruns; r++) {
        const argus_plan_run *run = &p->runs[r];
        mask_names(b1, sizeof b1, run->effects, argus_effect_name, ARGUS_FX_COUNT);
        fprintf(f, "  r%zu v%d:", r, run->variant);
        for (size_t i = 0; i < run->ntasks; i++)
            fprintf(f, " t%d", run->tasks[i]);
        fprintf(f, "  effects=%s\n", b1);
        for (size_t i = 0; i < run->nwhy; i++)
            fprintf(f, "      why: %s\n", run->why[i]);
        if (run->why_dropped)
            fprintf(f, "      why: (%zu more reasons)\n", run->why_dropped);
    }
    if (p->nunsat > 0) {
        fprintf(f, "not satisfiable here (%zu):\n", p->nunsat);
        for (size_t i = 0; i < p->nunsat; i++) {
            const argus_plan_unsat *u = &p->unsat[i];
            fprintf(f, "  %s, collection %s: %s (%s)\n", argus_signal_name(u->signal), u->collect,
                    u->why, u->dropped_signal ? "signal left out" : "optional, left out");
        }
    }
    return ferror(f) ? ARGUS_EIO : 0;
}

static cJSON *names_json(uint32_t bits, const char *(*name)(int), int count)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a != NULL && i < count; i++)
        if (bits & (1u << i))
            cJSON_AddItemToArray(a, cJSON_CreateString(name(i)));
    return a;
}

static cJSON *plan_json(const argus_plan *p)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "schema", ARGUS_PLAN_SCHEMA);
    cJSON_AddNumberToObject(o, "version", ARGUS_PLAN_VERSION);
    cJSON_AddItemToObject(o, "query", argus__query_json(&p->query));
    cJSON *res = cJSON_AddObjectToObject(o, "resolved");
    if (res != NULL) {
        char id[16];
        snprintf(id, sizeof id, "0x%07x", p->query.region_id);
        cJSON_AddStringToObject(res, "region_id", id);
        cJSON_AddStringToObject(res, "region_path", p->query.region_path);
    }
    cJSON *tg = cJSON_AddObjectToObject(o, "target");
    if (tg != NULL) {
        cJSON_AddNumberToObject(tg, "sm", p->env.sm);
        cJSON_AddBoolToObject(tg, "admin_counters", p->env.admin_counters);
        cJSON_AddBoolToObject(tg, "pc_sampling", p->env.pc_sampling);
        cJSON_AddBoolToObject(tg, "sass_metrics", p->env.sass_metrics);
        cJSON_AddBoolToObject(tg, "sanitizer_patch", p->env.sanitizer);
        cJSON_AddBoolToObject(tg, "bpf", p->env.bpf);
    }
    cJSON_AddBoolToObject(o, "partial", p->partial);
    cJSON_AddItemToObject(o, "answered", names_json(p->answered, argus_signal_name, ARGUS_SIG_COUNT));
    cJSON *un = cJSON_AddArrayToObject(o, "unsatisfied");
    for (size_t i = 0; un != NULL && i < p->nunsat; i++) {
        cJSON *u = cJSON_CreateObject();
        cJSON_AddStringToObject(u, "signal", argus_signal_name(p->unsat[i].signal));
        cJSON_AddStringToObject(u, "collect", p->unsat[i].collect);
        cJSON_AddBoolToObject(u, "signal_dropped", p->unsat[i].dropped_signal);
        cJSON_AddStringToObject(u, "why", p->unsat[i].why);
        cJSON_AddItemToArray(un, u);
    }
    cJSON *vs = cJSON_AddArrayToObject(o, "variants");
    for (size_t i = 0; vs != NULL && i < p->nvariants; i++) {
        const argus_plan_variant *v = &p->variants[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "id", (double)i);
        cJSON_AddStringToObject(j, "name", v->name);
        cJSON_AddNumberToObject(j, "parent", v->parent);
        if (v->transform >= 0)
            cJSON_AddStringToObject(j, "transform", argus_transform_name(v->transform));
        else
            cJSON_AddNullToObject(j, "transform");
        if (v->transform == ARGUS_TX_PROBE) {
            char id[32];
            snprintf(id, sizeof id, "0x%07x.%u", OP_REGION(v->op), OP_ORDINAL(v->op));
            cJSON_AddStringToObject(j, "op", id);
            cJSON_AddNumberToObject(j, "iter", (double)v->iter);
        }
        cJSON_AddNumberToObject(j, "task", v->task);
        cJSON_AddItemToArray(vs, j);
    }
    cJSON *ts = cJSON_AddArrayToObject(o, "tasks");
    for (size_t i = 0; ts != NULL && i < p->ntasks; i++) {
        const argus_plan_task *t = &p->tasks[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "id", t->id);
        cJSON_AddStringToObject(j, "type", argus_task_type_name(t->type));
        cJSON_AddStringToObject(j, "name", t->name);
        cJSON *d = cJSON_AddArrayToObject(j, "deps");
        for (size_t k = 0; d != NULL && k < t->ndeps; k++)
            cJSON_AddItemToArray(d, cJSON_CreateNumber(t->deps[k]));
        cJSON_AddItemToObject(j, "signals", names_json(t->signals, argus_signal_name, ARGUS_SIG_COUNT));
        cJSON_AddNumberToObject(j, "variant", t->variant);
        if (t->type == ARGUS_TASK_TRANSFORM)
            cJSON_AddStringToObject(j, "transform", argus_transform_name(t->transform));
        if (t->type == ARGUS_TASK_COLLECT) {
            cJSON_AddStringToObject(j, "backend", argus_backend_name(t->backend));
            cJSON_AddItemToObject(j, "effects", names_json(t->effects, argus_effect_name, ARGUS_FX_COUNT));
            cJSON_AddItemToObject(j, "observes",
                                  names_json(t->observes, argus_observes_name, ARGUS_OBS_COUNT));
            cJSON_AddItemToObject(j, "retains", names_json(t->retains, argus_coord_name, ARGUS_CO_COUNT));
            cJSON_AddNumberToObject(j, "run", t->run);
            if (t->metrics != NULL) {
                cJSON *ms = cJSON_AddArrayToObject(j, "metrics");
                char *copy = strdup(t->metrics);
                for (char *sv = NULL, *m = copy ? strtok_r(copy, ",", &sv) : NULL; ms && m;
                     m = strtok_r(NULL, ",", &sv))
                    cJSON_AddItemToArray(ms, cJSON_CreateString(m));
                free(copy);
            }
        }
        if (t->analysis >= 0)
            cJSON_AddStringToObject(j, "analysis", argus_analysis_name(t->analysis));
        if (t->rule[0])
            cJSON_AddStringToObject(j, "rule", t->rule);
        if (t->type == ARGUS_TASK_CONTROL)
            cJSON_AddBoolToObject(j, "expanded", t->expanded);
        if (t->pending >= 0)
            cJSON_AddNumberToObject(j, "pending_on", t->pending);
        if (t->op != 0 || t->iter >= 0) {
            char id[32];
            snprintf(id, sizeof id, "0x%07x.%u", OP_REGION(t->op), OP_ORDINAL(t->op));
            cJSON_AddStringToObject(j, "op", id);
            cJSON_AddNumberToObject(j, "iter", (double)t->iter);
        }
        if (t->exclusive)
            cJSON_AddStringToObject(j, "exclusive", t->exclusive);
        else
            cJSON_AddNullToObject(j, "exclusive");
        cJSON_AddNumberToObject(j, "timeout_s", t->timeout_s);
        cJSON_AddItemToArray(ts, j);
    }
    cJSON *rs = cJSON_AddArrayToObject(o, "runs");
    for (size_t r = 0; rs != NULL && r < p->nruns; r++) {
        const argus_plan_run *run = &p->runs[r];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "id", (double)r);
        cJSON_AddNumberToObject(j, "variant", run->variant);
        cJSON *tl = cJSON_AddArrayToObject(j, "tasks");
        for (size_t k = 0; tl != NULL && k < run->ntasks; k++)
            cJSON_AddItemToArray(tl, cJSON_CreateNumber(run->tasks[k]));
        cJSON_AddItemToObject(j, "effects", names_json(run->effects, argus_effect_name, ARGUS_FX_COUNT));
        cJSON *w = cJSON_AddArrayToObject(j, "why");
        for (size_t k = 0; w != NULL && k < run->nwhy; k++)
            cJSON_AddItemToArray(w, cJSON_CreateString(run->why[k]));
        cJSON_AddNumberToObject(j, "why_dropped", (double)run->why_dropped);
        cJSON_AddItemToArray(rs, j);
    }
    return o;
}

int argus_plan_write_json(const argus_plan *p, FILE *f)
{
    if (p == NULL || f == NULL)
        return ARGUS_EINVAL;
    return argus__json_write(plan_json(p), f, 1);
}
