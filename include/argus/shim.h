/*
 * argus-shim: kernel-level regions of an unmodified program, from NVTX
 * ranges and the kernels CUPTI saw (docs/argus.md, "argus-shim").
 *
 * The injection library (profiler/argus/shim_inject.c) only records what
 * happened, one JSON line per event (the "argus.shim.events" v1 file,
 * documented in docs/argus.md): NVTX push/pop and start/end per thread,
 * each kernel launch's correlation ID on its thread, and CUPTI's kernel
 * activity records. Everything else is argus_shim_build, a pure function
 * of those recorded inputs, so that tests and users can replay a recording
 * (argus-shim --replay FILE) and get the same regions.
 *
 * The result is an argus_trace on the host timebase (ARGUS_CLOCK_HOST):
 * one track ("warp" slot) per host thread for the NVTX ranges and one per
 * CUDA stream for the kernels; a kernel's tree node sits under the range
 * node that was innermost on its launching thread at its launch. The
 * argus writers turn it into the same report, trace and text summary as
 * the argus CLI's, with the additions the report schema documents.
 */
#ifndef ARGUS_SHIM_H
#define ARGUS_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "argus.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARGUS_SHIM_EVENTS_SCHEMA "argus.shim.events"
#define ARGUS_SHIM_EVENTS_VERSION 1

/* Recorded event kinds: the "e" field of a line, in this order. */
#define ARGUS_SHIM_EVENTS(X)                                                  \
    X(ARGUS_SHIM_PUSH, "push")     /* nvtxRangePush: tid, ts, name */         \
    X(ARGUS_SHIM_POP, "pop")       /* nvtxRangePop: tid, ts */                \
    X(ARGUS_SHIM_START, "start")   /* nvtxRangeStart: tid, ts, id, name */    \
    X(ARGUS_SHIM_END, "end")       /* nvtxRangeEnd: tid, ts, id */            \
    X(ARGUS_SHIM_LAUNCH, "launch") /* a launch API call: tid, ts, corr */     \
    X(ARGUS_SHIM_KERNEL, "kernel") /* CUPTI activity: corr, name, start, end, \
                                      stream */                               \
    X(ARGUS_SHIM_DNODE, "dnode")   /* an armed launch's device region tree    \
                                      node: corr, node, parent, name */       \
    X(ARGUS_SHIM_REGION, "region") /* a device region occurrence: corr, node, \
                                      cta, warp, start/end (ns after the      \
                                      kernel's first CTA), flags */           \
    X(ARGUS_SHIM_ARMED, "armed")   /* an instrumented launch's outcome: corr, \
                                      name, state, why, records lost */

enum argus_shim_event_kind {
    ARGUS_SHIM_NONE = 0,
#define ARGUS_SHIM_X_ENUM(name, word) name,
    ARGUS_SHIM_EVENTS(ARGUS_SHIM_X_ENUM)
#undef ARGUS_SHIM_X_ENUM
};

typedef struct argus_shim_event {
    int kind;          /* enum argus_shim_event_kind */
    uint64_t tid;      /* host thread (push, pop, start, end, launch) */
    uint64_t ts;       /* host time, ns on CUPTI's clock (not kernel) */
    uint64_t id;       /* range ID (start, end) or correlation ID
                          (launch, kernel) */
    uint64_t start, end; /* kernel: GPU start/end, ns on CUPTI's clock */
    uint32_t stream;   /* kernel */
    const char *name;  /* push, start, kernel, dnode (launch, armed:
                          optional); armed: the "why" sentence in note */
    long line;         /* line of the recording, for diagnostics */
    /* Device regions of armed launches (dnode, region, armed; id is the
     * launch's correlation ID). */
    uint32_t node;     /* dnode, region: the node in the launch's tree */
    int64_t parent;    /* dnode: parent node, -1 the kernel */
    uint32_t cta, warp, flags; /* region: where, and ARGUS_OCC_* flags */
    int state;         /* armed: ARGUS_SHIM_ARMED_* */
    uint64_t lost;     /* armed: records lost to ring wraps */
    const char *note;  /* armed: why (copied like name) */
} argus_shim_event;

/* What became of an instrumented launch (the "state" of an armed line). */
#define ARGUS_SHIM_ARMED_DECODED 0   /* its regions follow in dnode/region lines */
#define ARGUS_SHIM_ARMED_NOT 1       /* "not_armed": ran without a buffer */
#define ARGUS_SHIM_ARMED_DISCARDED 2 /* "discarded": another launch may have
                                        written into its buffer */
#define ARGUS_SHIM_ARMED_FAILED 3    /* "failed": arming, read-back or decode */

/* What CUPTI let the recorder do. */
#define ARGUS_SHIM_CUPTI_OK 0          /* subscribed: launches and kernels */
#define ARGUS_SHIM_CUPTI_OTHER 1       /* another subscriber held CUPTI */
#define ARGUS_SHIM_CUPTI_UNAVAILABLE 2 /* CUPTI could not be used at all */

#define ARGUS_SHIM_MAX_UNAVAILABLE 8

typedef struct argus_shim_input {
    argus_shim_event *ev;
    size_t nev, cap;
    int cupti;                 /* ARGUS_SHIM_CUPTI_* */
    char cupti_note[256];      /* the recorder's sentence about it */
    char command[512];         /* the program the recording is of */
    uint64_t dropped;          /* activity records CUPTI dropped */
    /* Signals asked for that the run could not give, with the reason
     * (PC sampling, counters needing admin rights). */
    struct {
        char what[64];
        char why[256];
    } unavailable[ARGUS_SHIM_MAX_UNAVAILABLE];
    size_t nunavailable;
    char **strings;            /* names, owned */
    size_t nstrings, capstrings;
} argus_shim_input;

/* Reads a recording (one JSON document per line; the first is the header
 * {"schema":"argus.shim.events","version":1,...}). Unknown event kinds,
 * missing or mistyped fields, a missing header and a file over 1 GiB are
 * ARGUS_EFORMAT (or ARGUS_ELIMIT) with "file:LINE: field: problem" in msg.
 * A recording cut off mid-line (a program that died) loses only that line:
 * the last line may lack its newline and is then dropped with a note in
 * *truncated (1), so that a crash keeps the evidence before it. */
int argus_shim_input_load(const char *path, argus_shim_input *in, int *truncated,
                          char *msg, size_t msglen);
/* The same, from text in memory (path names it in messages). */
int argus_shim_input_parse(const char *path, const char *text, size_t len,
                           argus_shim_input *in, int *truncated, char *msg,
                           size_t msglen);
void argus_shim_input_init(argus_shim_input *in);
void argus_shim_input_free(argus_shim_input *in);
/* Appends an event (name copied); for tests and the parser. */
int argus_shim_input_add(argus_shim_input *in, const argus_shim_event *e);

/* Region kinds of the tree nodes. */
#define ARGUS_SHIM_NODE_RANGE 0   /* an NVTX push/pop range */
#define ARGUS_SHIM_NODE_STARTEND 1 /* an NVTX start/end range */
#define ARGUS_SHIM_NODE_KERNEL 2  /* a kernel, named by its function symbol */
#define ARGUS_SHIM_NODE_UNKNOWN 3 /* "(launch not recorded)": kernels whose
                                     correlation ID has no launch record */
#define ARGUS_SHIM_NODE_DEVICE 4  /* a device region of an armed launch, under
                                     its kernel's node */

/* The name under which kernels without a launch record are grouped. */
#define ARGUS_SHIM_UNKNOWN_LAUNCH "(launch not recorded)"

typedef struct argus_shim_result {
    argus_trace trace;         /* clock_method ARGUS_CLOCK_HOST */
    argus_registry *reg;       /* the names of the trace's region IDs */
    int *node_kind;            /* per trace node: ARGUS_SHIM_NODE_* */
    char **track_names;        /* per slot: "thread N" / "stream N" */
    uint32_t nthreads, nstreams;
    uint64_t ranges, kernels;  /* occurrences built */
    uint64_t kernels_in_ranges, kernels_outside, kernels_unknown;
    uint64_t launches_without_kernel; /* launches CUPTI reported no kernel for */
    uint64_t device_regions;   /* device region occurrences joined */
    uint64_t armed_decoded, armed_missing; /* instrumented launches with and
                                  without decoded regions */
    const argus_shim_input *in; /* for the report's run section */
} argus_shim_result;

/* Builds the regions. Deterministic in the events' content: events are
 * taken in timestamp order (ties in file order), so a recording whose
 * threads' lines interleave differently gives the same result. */
int argus_shim_build(const argus_shim_input *in, argus_shim_result *out, char *msg,
                     size_t msglen);
void argus_shim_result_free(argus_shim_result *r);

/* The three outputs (argus.report v1 with the shim's fields, the Perfetto
 * trace, the text summary). `scope` may be NULL (everything). */
int argus_shim_report_json(const argus_shim_result *r, const argus_scope *scope, FILE *f);
int argus_shim_trace_json(const argus_shim_result *r, FILE *f);
int argus_shim_report_text(const argus_shim_result *r, const argus_scope *scope, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_SHIM_H */
