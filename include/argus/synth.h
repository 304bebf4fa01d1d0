/*
 * Argus synthesis: a plan's evidence turned into the numbers a query asks
 * for (issue 13, item 6; docs/argus-plan.md, "Synthesis").
 *
 * A SYNTHESIZE task of a plan names a rule (its recipe's `synthesis`, or
 * the `sass_listing` analysis) and reads the outputs of the tasks it
 * depends on: the evidence files the executor's runs wrote
 * (argus.evidence v1), the variant's artifact, the CONTROL task's
 * operations, or other syntheses' results. argus_synth_run applies the
 * rule and writes a versioned result (argus.synthesis v1, schema
 * profiler/argus/schema/argus.synthesis.v1.json) in which every number is
 * {"value", "unit", "mark", "from"}: mark observed, attributed or derived
 * (attrib.h), and from the indices of the inputs (each naming its plan
 * task, runtime task and run) it came from.
 *
 * Rules:
 *   region_stats       region timing statistics of the region runtime's
 *                      buffers, decoded here (argus_decode, argus_stats)
 *                      under the query's scope, per launch and per
 *                      iteration of the window; NVTX ranges passed through
 *   kernel_stats       kernel timing of CUPTI activity (argus-shim's
 *                      report), passed through
 *   pc_attribute       PC-keyed additive metrics (PC samples and their
 *                      stall reasons, SASS counts) attributed to regions
 *                      by the PC-to-region map (attrib.h), ratios lifted
 *                      as numerator and denominator, entropy per PC
 *   metric_per_kernel  range profiler counters per kernel, passed through
 *   probe_latency      a probe branch: the probed region's time at the
 *                      probed iteration in the probe variant's run; the
 *                      signal's final synthesis: forced-completion
 *                      latency = probe time - base time, joined
 *                      iteration i to iteration i (never by timestamps)
 *   sass_listing       the functions of the variant's cubin (elf.c)
 *
 * Joins: an evidence file is used only when its backend and variant are
 * the ones the plan ran for its collection; a probe branch only when its
 * variant was made from the base variant; anything else is refused with
 * the task named. A missing, refused or unavailable input leaves the
 * result "complete": false with the problem listed; what the other inputs
 * give is kept.
 */
#ifndef ARGUS_SYNTH_H
#define ARGUS_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "argus.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARGUS_SYNTH_SCHEMA "argus.synthesis"
#define ARGUS_SYNTH_VERSION 1
#define ARGUS_EVIDENCE_SCHEMA "argus.evidence"
#define ARGUS_EVIDENCE_VERSION 1

/* What an input is (the plan task type that made it). */
enum argus_synth_input_kind {
    ARGUS_SYNTH_IN_EVIDENCE, /* a collection's evidence (argus.evidence) */
    ARGUS_SYNTH_IN_ARTIFACT, /* a TRANSFORM's artifact */
    ARGUS_SYNTH_IN_OPS,      /* a CONTROL task's operations */
    ARGUS_SYNTH_IN_RESULT    /* another synthesis (argus.synthesis) */
};

typedef struct argus_synth_input {
    int kind;               /* enum argus_synth_input_kind */
    const char *task;       /* the plan task, "collect:region_trace@v1" */
    const char *rt_id;      /* its runtime task, "run0", "t7" */
    const char *output;     /* "e1", "artifact", "ops", "synthesis" */
    const char *object;     /* the workspace object's hash, NULL when missing */
    /* Evidence: the backend name and variant name the plan ran it with. */
    const char *backend;
    const char *variant;
    const void *data;       /* the bytes; NULL when missing */
    size_t len;
    const char *missing;    /* why data is NULL (the task failed: its reason) */
} argus_synth_input;

typedef struct argus_synth_req {
    const char *task;       /* this synthesis's plan task name */
    const char *rule;       /* a rule above */
    const char *signal;     /* the signal it serves, "" for an analysis */
    uint64_t op;            /* a probe branch: the operation, else 0 */
    int64_t iter;           /* a probe branch: the iteration, else -1 */
    const argus_registry *reg; /* names, paths and parents of regions */
    argus_scope scope;      /* the query's scope (region: the query's) */
    const argus_synth_input *in;
    size_t nin;
} argus_synth_req;

typedef struct argus_synth_out {
    char *json;             /* the result, malloc'd, NUL-terminated */
    size_t len;
    int complete;           /* 0: some input was missing or refused */
    size_t nproblems;
    char first_problem[512];
} argus_synth_out;

/* Applies the request's rule. 0 with *out filled (also when the result is
 * incomplete: the problems are in it); ARGUS_EINVAL for an unknown rule or
 * a malformed request, ARGUS_ENOMEM, with msg. */
int argus_synth_run(const argus_synth_req *r, argus_synth_out *out, char *msg, size_t msglen);
void argus_synth_out_free(argus_synth_out *out);

/* Checks evidence bytes against what the plan ran: strict JSON, schema
 * argus.evidence v1, this backend and this variant (any status). 0, or
 * ARGUS_EFORMAT with why naming the field and what was expected. The
 * runtime calls it on every OUT of a run before storing it, so that wrong
 * evidence fails its run (and is redone) instead of being kept. */
int argus_evidence_check(const void *data, size_t len, const char *backend, const char *variant,
                         char *why, size_t whylen);

/* Base64 (RFC 4648, padded) as the region runtime's evidence holds its
 * buffers: *out malloc'd. ARGUS_EFORMAT with the offset of the first bad
 * character. */
int argus_base64_decode(const char *s, size_t len, unsigned char **out, size_t *outlen,
                        char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_SYNTH_H */
