/*
 * Argus recipes and the measurement planner (issue 13, items 2 and 3).
 *
 * A recipe says, as data (the JSON files of profiler/argus/recipes/, loaded at run
 * time), how one signal is obtained: the collections that give its evidence
 * (each with a backend, the program transformations it runs on, the scope
 * coordinates it keeps and its collection effects), the analyses that must
 * come first, and the synthesis rule that combines the evidence.
 *
 * The planner turns a resolved query (argus/query.h) into a DAG of typed
 * tasks:
 *   TRANSFORM   program artifact -> program artifact (markers on, a
 *               forced-completion probe variant)
 *   COLLECT     run one program variant with one backend configuration
 *   SYNTHESIZE  parse and combine evidence into the signal's numbers
 *   CONTROL     discovery that adds branches when it has run (the
 *               asynchronous operations of a region): argus_plan_expand
 * and puts the COLLECT tasks into runs: one run is one execution of one
 * program variant, and collections whose effects conflict never share one
 * (the rules and their reasons are in argus_plan_run.why and
 * docs/argus-plan.md). A recipe this machine cannot satisfy (admin counters
 * without the rights, no PC sampling, a GPU that lacks the signal) is named
 * with its reason in argus_plan.unsat, and the plan keeps the rest, marked
 * partial.
 *
 * The plan's arrays are read-only for callers; they change only through
 * argus_plan_expand. Every function that can fail returns 0 or a negative
 * ARGUS_E* code with a sentence in msg; no function exits.
 */
#ifndef ARGUS_PLAN_H
#define ARGUS_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "argus.h"
#include "discover.h"
#include "query.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- recipes ------------------------------------------------------------ */

#define ARGUS_RECIPES_SCHEMA "argus.recipes"
#define ARGUS_RECIPES_VERSION 1

/* Evidence backends: enum, name in recipe files, what it is. */
#define ARGUS_BACKENDS(X)                                                     \
    X(ARGUS_BE_CUPTI_ACTIVITY, "cupti_activity", "CUPTI Activity (kernel records)") \
    X(ARGUS_BE_NVTX, "nvtx", "NVTX ranges through the injection library")    \
    X(ARGUS_BE_PC_SAMPLING, "pc_sampling", "CUPTI PC Sampling (stall reasons per PC)") \
    X(ARGUS_BE_SASS_METRICS, "sass_metrics", "CUPTI SASS Metrics (per-PC counts)") \
    X(ARGUS_BE_RANGE_PROFILER, "range_profiler", "CUPTI Range Profiler (hardware counters)") \
    X(ARGUS_BE_REGION_RUNTIME, "region_runtime", "Argus region markers and buffers (part 1)") \
    X(ARGUS_BE_SANITIZER, "sanitizer_patch",                                  \
      "CUDA Sanitizer patching API (dynamic PC-to-region map)")              \
    X(ARGUS_BE_BPF, "bpf", "BPF system tracing (host threads, driver calls)")

enum argus_backend {
#define ARGUS_X_BE(e, name, what) e,
    ARGUS_BACKENDS(ARGUS_X_BE)
#undef ARGUS_X_BE
    ARGUS_BE_COUNT
};

/* Collection effects: what a collection does to the run it is in. */
#define ARGUS_EFFECTS(X)                                                      \
    X(ARGUS_FX_PERTURBS_TIMING, "perturbs_timing",                            \
      "changes the timing of the code it observes (forced waits, patching)") \
    X(ARGUS_FX_EXCLUSIVE_CUPTI, "needs_exclusive_cupti",                      \
      "needs a CUPTI session no other collection may share")                 \
    X(ARGUS_FX_ADMIN_COUNTERS, "needs_admin_counters",                        \
      "reads performance counters that need admin rights on most systems")   \
    X(ARGUS_FX_CHANGES_OVERLAP, "changes_overlap",                            \
      "changes which kernels or copies overlap")                              \
    X(ARGUS_FX_SERIALISES_KERNELS, "serialises_kernels",                      \
      "runs kernels one at a time")

enum argus_effect {
#define ARGUS_X_FX(e, name, what) e,
    ARGUS_EFFECTS(ARGUS_X_FX)
#undef ARGUS_X_FX
    ARGUS_FX_COUNT
};

/* What a collection measures, so that the partition rules know what an
 * effect would disturb. */
#define ARGUS_OBSERVES(X)                                                     \
    X(ARGUS_OBS_TIMING, "timing", "durations (regions, kernels, probes)")     \
    X(ARGUS_OBS_OVERLAP, "overlap", "which work runs concurrently")           \
    X(ARGUS_OBS_COUNTS, "counts", "event counts (instructions, counters)")    \
    X(ARGUS_OBS_SAMPLES, "samples", "statistical samples (PC sampling)")      \
    X(ARGUS_OBS_MAP, "map", "a static or dynamic mapping (PC to region)")

enum argus_observes {
#define ARGUS_X_OBS(e, name, what) e,
    ARGUS_OBSERVES(ARGUS_X_OBS)
#undef ARGUS_X_OBS
    ARGUS_OBS_COUNT
};

/* Program transformations a collection's variant needs, in order. */
#define ARGUS_TRANSFORMS(X)                                                   \
    X(ARGUS_TX_MARKERS_ON, "markers_on", "rebuild with -DARGUS_ENABLE (region markers)") \
    X(ARGUS_TX_LINE_INFO, "line_info", "rebuild with -lineinfo (PC to source line)") \
    X(ARGUS_TX_PROBE, "force_completion_probe",                               \
      "one forced-completion probe for one async operation and iteration")

enum argus_transform {
#define ARGUS_X_TX(e, name, what) e,
    ARGUS_TRANSFORMS(ARGUS_X_TX)
#undef ARGUS_X_TX
    ARGUS_TX_COUNT
};

/* Scope coordinates a collection's evidence keeps (what synthesis can
 * select or join on: iteration i to iteration i, never by timestamps). */
#define ARGUS_COORDS(X)                                                       \
    X(ARGUS_CO_KERNEL, "kernel") X(ARGUS_CO_REGION, "region")                 \
    X(ARGUS_CO_ITERATION, "iteration") X(ARGUS_CO_ROLE, "role")               \
    X(ARGUS_CO_CTA, "cta") X(ARGUS_CO_SM, "sm") X(ARGUS_CO_WARP, "warp")      \
    X(ARGUS_CO_PC, "pc")

enum argus_coord {
#define ARGUS_X_CO(e, name) e,
    ARGUS_COORDS(ARGUS_X_CO)
#undef ARGUS_X_CO
    ARGUS_CO_COUNT
};

/* Prerequisite analyses, each done by one task of the given type. */
#define ARGUS_ANALYSES(X)                                                     \
    X(ARGUS_AN_DISCOVER_ASYNC, "discover_async_ops", ARGUS_TASK_CONTROL,      \
      "find the region's asynchronous operations in the SASS (argus/discover.h)") \
    X(ARGUS_AN_SASS_LISTING, "sass_listing", ARGUS_TASK_SYNTHESIZE,           \
      "disassemble the variant's cubin: PCs, functions, source lines")

enum argus_task_type {
    ARGUS_TASK_TRANSFORM,
    ARGUS_TASK_COLLECT,
    ARGUS_TASK_SYNTHESIZE,
    ARGUS_TASK_CONTROL
};
/* "transform", "collect", "synthesize", "control". */
const char *argus_task_type_name(int type);

enum argus_analysis {
#define ARGUS_X_AN(e, name, type, what) e,
    ARGUS_ANALYSES(ARGUS_X_AN)
#undef ARGUS_X_AN
    ARGUS_AN_COUNT
};

/* Names of the lists' entries (NULL out of range). */
const char *argus_backend_name(int be);
const char *argus_effect_name(int fx);
const char *argus_observes_name(int obs);
const char *argus_transform_name(int tx);
const char *argus_coord_name(int co);
const char *argus_analysis_name(int an);

#define ARGUS_RECIPE_MAX_COLLECT 8u
#define ARGUS_RECIPE_MAX_TX 4u

/* One collection of a recipe. */
typedef struct argus_recipe_collect {
    char name[64];          /* "pc_samples" (unique in its recipe) */
    int backend;            /* enum argus_backend */
    int transforms[ARGUS_RECIPE_MAX_TX]; /* enum argus_transform, applied in order */
    size_t ntransforms;
    uint32_t effects;       /* bit per enum argus_effect */
    uint32_t observes;      /* bit per enum argus_observes */
    uint32_t retains;       /* bit per enum argus_coord */
    int per_probe;          /* 1: one per discovered op and iteration (after
                               the CONTROL task expands); 0: once */
    int optional;           /* 1: the signal is still answered without it */
    unsigned min_sm;        /* GPU architecture it needs (e.g. 70), 0: any */
    double timeout_s;       /* the run's limit */
} argus_recipe_collect;

typedef struct argus_recipe {
    char signal_name[64];
    int signal;             /* enum argus_signal */
    char description[256];
    argus_recipe_collect collect[ARGUS_RECIPE_MAX_COLLECT];
    size_t ncollect;
    uint32_t prerequisites; /* bit per enum argus_analysis */
    char synthesis[64];     /* synthesis rule name ("region_stats", ...) */
    char file[1024];        /* where it was read from, for messages */
} argus_recipe;

typedef struct argus_recipes {
    argus_recipe *r;
    size_t n;
} argus_recipes;

/* The synthesis rules the planner knows (a recipe naming another is refused). */
#define ARGUS_SYNTHESIS_RULES(X)                                              \
    X("region_stats", "region statistics from the decoded buffers")           \
    X("kernel_stats", "kernel durations from CUPTI activity records")         \
    X("pc_attribute", "per-PC evidence attributed to regions (argus/attrib.h)") \
    X("metric_per_kernel", "counter values per kernel, with units")           \
    X("probe_latency", "completion latency: probe time minus baseline, per op and iteration")

/*
 * Loads recipes from path: a file (schema argus.recipes v1) or a folder,
 * whose *.json files are read in name order. Errors name the file, the
 * recipe and the field ("recipes/stall.json: recipe stall_reasons_pc:
 * collect[1].effects[0]: unknown effect \"perturb_timing\"; did you mean
 * perturbs_timing?") and return ARGUS_EFORMAT (ARGUS_EIO when the path
 * cannot be read). Two recipes for one signal are refused.
 */
int argus_recipes_load(const char *path, argus_recipes *out, char *msg, size_t msglen);
/* The same from text in memory (path names it in messages); appends to out. */
int argus_recipes_parse(argus_recipes *out, const char *text, size_t len, const char *path,
                        char *msg, size_t msglen);
void argus_recipes_free(argus_recipes *rs);
/* The recipe for a signal, or NULL. */
const argus_recipe *argus_recipes_find(const argus_recipes *rs, int signal);
/* The recipes folder to use: $ARGUS_RECIPES when set, else the source tree's
 * profiler/argus/recipes this binary was built from. */
const char *argus_recipes_default_path(void);

/* ---- what this machine offers ------------------------------------------- */

/* Capabilities the planner checks recipes against. A field is 1 (yes), 0
 * (no) with `why`, filled by argus_plan_env_detect or set by the caller. */
typedef struct argus_plan_env {
    unsigned sm;              /* GPU architecture, 90 for sm_90 */
    int admin_counters;       /* profiling counters readable by this user */
    int pc_sampling;          /* CUPTI PC sampling available */
    int sass_metrics;         /* CUPTI SASS metrics available */
    int sanitizer;            /* the Sanitizer patching API available */
    int bpf;                  /* BPF programs may be loaded */
    char why[ARGUS_FX_COUNT + ARGUS_BE_COUNT][320]; /* indexed by
                                 argus_plan_env_why_index; "" when yes */
} argus_plan_env;

/* Slot of env->why explaining a missing backend (be) or effect (fx). */
#define ARGUS_ENV_WHY_BACKEND(be) (be)
#define ARGUS_ENV_WHY_EFFECT(fx) (ARGUS_BE_COUNT + (fx))

/* Everything available on a GPU of architecture sm (for tests and
 * `--assume-all`). */
void argus_plan_env_all(argus_plan_env *env, unsigned sm);
/*
 * What this machine allows: admin counters from the driver's
 * RmProfilingAdminOnly (/proc/driver/nvidia/params) and the user ID; the
 * Sanitizer from its library where argus-pcmap would open it
 * (argus_pcmap_find_sanitizer) and an sm_75+ target; BPF by asking the
 * kernel (argus_bpf_probe: a program loaded, the uprobe PMU); without a
 * driver (this CPU machine) counters are "cannot tell" and counted as
 * missing.
 * sm is the target architecture (the GPU is not opened).
 */
void argus_plan_env_detect(argus_plan_env *env, unsigned sm);

/* ---- the plan ------------------------------------------------------------ */

#define ARGUS_PLAN_SCHEMA "argus.plan"
#define ARGUS_PLAN_VERSION 1

/* A program variant: the base program (index 0, no transform) or a parent
 * variant with one more transformation. */
typedef struct argus_plan_variant {
    int parent;               /* variant index, -1 for the base program */
    int transform;            /* enum argus_transform, -1 for the base */
    uint64_t op;              /* ARGUS_TX_PROBE: the async op's ID */
    int64_t iter;             /* ARGUS_TX_PROBE: the execution it forces */
    char name[512];           /* "P+markers_on+probe(op=0xd3fb29b.1,iter=4)" */
    int task;                 /* the TRANSFORM task that makes it, -1 */
} argus_plan_variant;

/* An asynchronous operation found by discovery, as discovery gives it
 * (argus_async_op of argus/discover.h, one type). The planner reads its id
 * (ARGUS_OP_ID(region, ordinal), not 0; printed "0x%07x.%u" as discovery
 * prints it), region and in_loop (1: it runs once per iteration, so a
 * probe picks one execution: one branch per iteration of the query's
 * window, the first execution, 0, without a window; 0: one branch, at
 * execution 0); kind names it in outputs. */
typedef argus_async_op argus_plan_op;

typedef struct argus_plan_task {
    int id;                   /* its index in plan->tasks */
    int type;                 /* enum argus_task_type */
    char name[192];           /* "collect:region_trace@P+markers_on" */
    int *deps;                /* task IDs that must finish first; after an
                                 expansion a SYNTHESIZE task can depend on
                                 later IDs (the graph stays acyclic) */
    size_t ndeps, cap_deps;
    uint32_t signals;         /* signals it serves (1u << enum argus_signal) */
    int variant;              /* TRANSFORM: the variant it makes; COLLECT:
                                 the variant it runs; else -1 */
    int transform;            /* TRANSFORM: enum argus_transform */
    int backend;              /* COLLECT: enum argus_backend */
    uint32_t effects, observes, retains; /* COLLECT: from its recipe */
    int run;                  /* COLLECT: index into plan->runs */
    int analysis;             /* CONTROL / prerequisite: enum argus_analysis, -1 */
    char rule[64];            /* SYNTHESIZE: the synthesis rule */
    uint64_t op;              /* probe branch: the async op, 0 otherwise */
    int64_t iter;             /* probe branch: the execution, -1 otherwise */
    int expanded;             /* CONTROL: 1 once argus_plan_expand ran */
    int pending;              /* SYNTHESIZE waiting on a CONTROL task's
                                 branches: its CONTROL task ID, else -1 */
    const char *exclusive;    /* exclusivity class for the runtime: "gpu"
                                 for collections, NULL for CPU tasks */
    double timeout_s;
    /* COLLECT on range_profiler or sass_metrics: the query's metric names
     * this backend collects, a comma list in the query's order (malloc'd,
     * freed with the plan; NULL: none asked, the tool's defaults). Part of
     * the run's configuration, so of its key: other metrics are other
     * evidence. */
    char *metrics;
} argus_plan_task;

#define ARGUS_PLAN_MAX_WHY 8u

/* One run: the COLLECT tasks executed together in one program execution. */
typedef struct argus_plan_run {
    int variant;
    int *tasks;               /* COLLECT task IDs */
    size_t ntasks;
    uint32_t effects;         /* union of its tasks' effects */
    /* Why tasks that would have fitted were kept out of this run (each
     * names the rule, the two tasks and the effect). */
    char why[ARGUS_PLAN_MAX_WHY][256];
    size_t nwhy;
    size_t why_dropped;       /* reasons beyond ARGUS_PLAN_MAX_WHY, counted */
} argus_plan_run;

/* A signal (or one optional collection) that this machine cannot give, or
 * a scope coordinate the signal's evidence does not keep (collect "",
 * dropped_signal 0: the signal is answered for more than was asked). */
typedef struct argus_plan_unsat {
    int signal;
    char collect[64];         /* the collection, "" for the recipe as a whole */
    int dropped_signal;       /* 1: the signal is not answered at all */
    char why[512];
} argus_plan_unsat;

typedef struct argus_plan {
    argus_query query;        /* the resolved query it answers */
    argus_plan_env env;
    argus_plan_task *tasks;
    size_t ntasks, cap_tasks;
    argus_plan_variant *variants;
    size_t nvariants, cap_variants;
    argus_plan_run *runs;
    size_t nruns, cap_runs;
    argus_plan_unsat *unsat;
    size_t nunsat, cap_unsat;
    int partial;              /* 1 when a recipe could not be satisfied or a
                                 signal cannot keep the query's scope */
    uint32_t answered;        /* signals the plan answers */
    struct argus__plan_priv *priv; /* the planner's bookkeeping (the
                                 per-probe collections waiting on each
                                 CONTROL task) */
} argus_plan;

/*
 * Builds the plan for a resolved query (argus_query_resolve) from the
 * recipes and the environment. A signal without a recipe is ARGUS_EINVAL;
 * a recipe the environment cannot satisfy is recorded in plan->unsat (the
 * plan is partial), and only when no signal at all can be answered is the
 * result an error (ARGUS_EINVAL, naming each reason).
 */
int argus_plan_build(const argus_query *q, const argus_recipes *rs, const argus_plan_env *env,
                     argus_plan *plan, char *msg, size_t msglen);
void argus_plan_free(argus_plan *plan);

/*
 * Materialises what a CONTROL task found: for each op in ops[0..nops) and
 * each execution it is probed at (argus_plan_op.in_loop: every iteration of
 * the query's window, else execution 0), one TRANSFORM (the probe variant), the per-probe
 * COLLECT tasks of the recipes that wait on this control, and one
 * SYNTHESIZE; the pending SYNTHESIZE tasks gain the new branches as
 * dependencies; the new collections are partitioned into runs by the same
 * rules. The caller passes the ops discovery found in the query's region
 * (the CONTROL task's variant); none is valid and adds no branch. Expanding
 * twice, or a task that is not CONTROL, is ARGUS_EINVAL. More than ARGUS_PLAN_MAX_PROBES
 * branches is ARGUS_ELIMIT.
 */
#define ARGUS_PLAN_MAX_PROBES 4096u
int argus_plan_expand(argus_plan *plan, int control_task, const argus_plan_op *ops, size_t nops,
                      char *msg, size_t msglen);

/*
 * A dependency order of the tasks: order[0..plan->ntasks) gets every task
 * ID once, each after all of its dependencies, ties by ID (so the order is
 * the same every time). A runtime that needs a task's dependencies added
 * before it (argus/rt.h) adds the tasks in this order, leaving out those
 * with pending >= 0; the CONTROL task's body then calls argus_plan_expand
 * and adds, in a new order, the tasks it made and the pending ones.
 * ARGUS_EINVAL when the dependencies hold a cycle.
 */
int argus_plan_order(const argus_plan *plan, int *order, char *msg, size_t msglen);

/*
 * Runs a plan through the runtime (argus/rt.h) on a workspace
 * (argus/workspace.h), docs/argus-plan.md "Running a plan": each TRANSFORM
 * and each run is a worker process of `executor` (run by /bin/sh -c with
 * the arguments
 *   transform TX VARIANT PARENT_ARTIFACT OP ITER OUT
 *   run VARIANT BACKENDS ARTIFACT OUT...   (one OUT per collection, in the
 *                                           order of BACKENDS)
 * as $1...), holding the class "gpu"; SYNTHESIZE tasks run their rule
 * (argus/synth.h) on their inputs' evidence and store an argus.synthesis
 * result, kept and marked incomplete when some input is missing or was
 * refused; CONTROL tasks run discovery (argus/discover.h) on their
 * variant's artifact, or take ops when ops_given, expand the plan and add
 * the new branches. Tasks whose key the workspace holds are reused; a
 * failed task fails only what depends on it. report gets one line per
 * task and one per synthesis (complete, or what is missing). Returns 0,
 * ARGUS_RT_EFAILED (some task failed or some synthesis is incomplete: msg
 * says so, report names them) or another code with msg.
 */
typedef struct argus_plan_exec {
    const char *ws_dir;       /* the workspace folder (created when missing) */
    const char *executor;     /* the shell command described above */
    int ops_given;            /* 1: the CONTROL tasks take ops instead of discovering */
    const argus_plan_op *ops; /* what the CONTROL tasks discover, when ops_given */
    size_t nops;
    unsigned cpu_threads;     /* 0: the runtime's default */
    FILE *progress;           /* one line per state change, NULL: quiet */
    /* When set: each signal's final synthesis is copied to
     * results_dir/SIGNAL.json (the folder is created). */
    const char *results_dir;
} argus_plan_exec;
int argus_plan_execute(argus_plan *plan, const argus_plan_exec *x, FILE *report, char *msg,
                       size_t msglen);

/* A readable listing: tasks with dependencies, runs with why each split
 * was made, what is unsatisfied. */
int argus_plan_write_text(const argus_plan *plan, FILE *f);
/* The plan as JSON (schema argus.plan v1, docs/argus-plan.md). */
int argus_plan_write_json(const argus_plan *plan, FILE *f);

/* Checks the plan's invariants (dependencies point backwards, every COLLECT
 * is in exactly one run of its variant, no run holds a conflicting pair):
 * 0, or ARGUS_EINVAL with the first violation. For tests and for plans a
 * caller edited. */
int argus_plan_check(const argus_plan *plan, char *msg, size_t msglen);

/* Whether two collections may share a run; when not, why gets the rule. */
int argus_plan_compatible(const argus_plan_task *a, const argus_plan_task *b, char *why,
                          size_t whylen);

/* Sets one capability of env by name: a backend ("pc_sampling", "bpf",
 * ...) or "admin_counters"; on is 1 or 0 (then why says it was turned off
 * by the user). ARGUS_EINVAL with the known names for another name. */
int argus_plan_env_set(argus_plan_env *env, const char *name, int on, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_PLAN_H */
