/*
 * Argus queries (issue 13, item 1): what a user or an optimizer agent asks.
 *
 * A query names a program, a region (a subtree of the registry's region
 * hierarchy, by name, by path "outer/load" or by ID "0x23ce102"), a scope
 * (warp role, CTA/SM/warp subsets, an iteration window) and the signals it
 * wants. It comes from the command line (argus_query_from_args: `argus
 * query --program P --region R --scope ... --signal S ...`) or from a JSON
 * request (argus_query_parse_json: schema "argus.query" version 1,
 * docs/argus-plan.md). argus_query_resolve checks the region against the
 * program's registry; the planner (argus/plan.h) turns a resolved query into
 * a measurement plan.
 *
 * Every function that can fail returns 0 or a negative ARGUS_E* code with a
 * sentence in msg that names the field, the problem and the fix; a name that
 * does not exist comes with the nearest names that do. No function exits.
 */
#ifndef ARGUS_QUERY_H
#define ARGUS_QUERY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "argus.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The request schema's name and the version this library reads and writes. */
#define ARGUS_QUERY_SCHEMA "argus.query"
#define ARGUS_QUERY_VERSION 1

/* The signals a query can ask for: enum, name (the CLI's and the JSON's
 * word, and the recipe's key) and what it is. One list, so that the enum,
 * the names and the lookup cannot drift. */
#define ARGUS_SIGNALS(X)                                                      \
    X(ARGUS_SIG_REGION_TIME, "region_time",                                   \
      "region timing from the device markers (per occurrence, per scope)")    \
    X(ARGUS_SIG_KERNEL_TIME, "kernel_time",                                   \
      "kernel timing of the kernels the region runs in (CUPTI activity)")     \
    X(ARGUS_SIG_STALL_PC, "stall_reasons_pc",                                 \
      "warp stall reasons per PC, attributed to regions (PC sampling)")       \
    X(ARGUS_SIG_INST_PC, "inst_executed_pc",                                  \
      "instructions executed per PC, attributed to regions (SASS metrics)")   \
    X(ARGUS_SIG_HW_METRICS, "hw_metrics",                                     \
      "hardware metrics per kernel (range profiler counters)")                \
    X(ARGUS_SIG_ASYNC_LATENCY, "async_latency",                               \
      "completion latency of each asynchronous operation in the region "     \
      "(cp.async, TMA, wgmma; forced-completion probes)")

enum argus_signal {
#define ARGUS_X_SIG(e, name, what) e,
    ARGUS_SIGNALS(ARGUS_X_SIG)
#undef ARGUS_X_SIG
    ARGUS_SIG_COUNT
};

/* The signal's name ("region_time"), or NULL for a value out of range. */
const char *argus_signal_name(int sig);
/* What the signal is, in words (never NULL). */
const char *argus_signal_what(int sig);
/* The signal named `name`, or ARGUS_EINVAL with the nearest known names
 * and the whole list in msg. */
int argus_signal_from_name(const char *name, int *sig, char *msg, size_t msglen);

/* Limits of one query (a request from a program is input like any file). */
#define ARGUS_QUERY_MAX_METRICS 64u
#define ARGUS_QUERY_MAX_NAME 256u

/* Which occurrences the query is about; ranges are inclusive and a range
 * with lo > hi (the default, see argus_query_init) means "all". */
typedef struct argus_query_scope {
    char role[ARGUS_QUERY_MAX_NAME]; /* warp role name, "" for any */
    int64_t iter_lo, iter_hi;        /* iteration window; -1, -1: any */
    int64_t cta_lo, cta_hi;          /* -1, -1: every CTA */
    int64_t sm_lo, sm_hi;            /* -1, -1: every SM */
    int64_t warp_lo, warp_hi;        /* warp index inside the CTA; -1, -1: all */
} argus_query_scope;

typedef struct argus_query {
    char program[4096];  /* the program (executable, cubin or object) */
    char registry[4096]; /* its registry; "": the one embedded in program,
                            else program + ".argus.json" */
    char region[ARGUS_QUERY_MAX_NAME]; /* as given: name, path or 0xID */
    argus_query_scope scope;
    uint32_t signals;    /* bit (1u << enum argus_signal) per signal asked */
    /* hw_metrics: the metric names asked (ncu/CUPTI names such as
     * "dram__bytes_read.sum"); none: the recipe's defaults. */
    char metrics[ARGUS_QUERY_MAX_METRICS][ARGUS_QUERY_MAX_NAME];
    size_t nmetrics;
    /* Filled by argus_query_resolve. */
    uint32_t region_id;  /* 0 until resolved: the whole kernel */
    char region_path[1024];
    uint32_t role_id;    /* 0: any role */
} argus_query;

/* Empty query: no program, no region, whole scope, no signals. */
void argus_query_init(argus_query *q);

/*
 * Fills q from command-line words (argv[0] is the first option, not the
 * command):
 *   --program P  --registry REG  --region R  --signal S (repeatable, or a
 *   comma list)  --metric NAME (repeatable)  --metrics A,B (a comma list)
 *   --scope SPEC (repeatable; SPEC is role=NAME, iter=LO:HI, cta=LO:HI,
 *   sm=LO:HI or warp=LO:HI, several joined by commas) and the shorthands
 *   --role, --iter, --cta, --sm, --warp. A metric given twice asks once.
 * Words it does not know are left for the caller: *used gets how many of
 * argv[0..argc) it took, stopping at the first unknown option. ARGUS_EINVAL
 * with a message for a malformed value.
 */
int argus_query_from_args(argus_query *q, int argc, char **argv, int *used,
                          char *msg, size_t msglen);

/*
 * Parses a JSON request (schema argus.query v1) from text[0..len); path
 * names it in messages ("req.json: scope.iter: ..."). Unknown keys are
 * refused (a misspelt "signal" must not silently ask for nothing).
 * ARGUS_EFORMAT on a malformed request.
 */
int argus_query_parse_json(argus_query *q, const char *text, size_t len, const char *path,
                           char *msg, size_t msglen);
/* The same from a file ("-": standard input). */
int argus_query_load_json(argus_query *q, const char *path, char *msg, size_t msglen);
/* Writes q as a request document (the same schema), so that a plan records
 * the query it answers. */
int argus_query_write_json(const argus_query *q, FILE *f);

/*
 * Checks the query and resolves its region and role against reg: a name
 * (unique under any parent), a path "outer/load", or an ID "0x23ce102". A
 * region or role the registry lacks is ARGUS_ENOREGION with the nearest
 * registered names; no signal, or no program, is ARGUS_EINVAL. An empty
 * region means the whole kernel (region_id 0).
 */
int argus_query_resolve(argus_query *q, const argus_registry *reg, char *msg, size_t msglen);

/* Loads the registry the query names (q->registry, else the program's
 * embedded one, else program + ".argus.json"). */
int argus_query_registry(const argus_query *q, argus_registry **out, char *msg,
                         size_t msglen);

/*
 * Up to max names of cands[0..n) nearest to `name` (edit distance, then
 * substring), written comma-separated into buf: for "did you mean" lists.
 * Returns how many were written.
 */
size_t argus_nearest_names(const char *name, const char *const *cands, size_t n, size_t max,
                           char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_QUERY_H */
