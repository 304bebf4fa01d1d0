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
 *
 * With --pc-sampling the recording also holds CUPTI's PC samples and the
 * module images; the builder joins them to kernel regions, to the device
 * functions of the cubin (argus_cubin_*, profiler/argus/elf.c) and to
 * source lines (argus_shim_result.sites, .fregions).
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
                                      stream; optional grid, block, dsmem,    \
                                      device (argus-shim --metrics) */        \
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
    /* kernel: the launch configuration and device, where the recording has
     * them (optional fields "grid", "block", "dsmem", "device"). */
    int have_grid, have_block, have_dsmem, have_device;
    int64_t grid[3], block[3], dsmem;
    uint32_t device;
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
#define ARGUS_SHIM_MAX_DEVICES 16

/* ---- PC sampling (argus-shim --pc-sampling; docs/argus.md) ---------------
 * Added to "argus.shim.events" v1 as new event kinds, so that older
 * recordings read unchanged:
 *   {"e":"pcs","state":"enabled","mode":"kernel_serialized"|"continuous","period":P}
 *   {"e":"stall","index":I,"name":"smsp__pcsamp_warps_issue_stalled_..."}
 *   {"e":"module","crc":"DECIMAL","cubin":"FILE"}  the module image, saved beside
 *   {"e":"pc","crc":"DECIMAL","function":"k","pc":OFF,"corr":C,"stall":[[I,N],...]}
 *   {"e":"pcline","crc":"DECIMAL","function":"k","pc":OFF,"file":"f.cu","line":L}
 *   {"e":"pcs_totals","samples":N,"dropped":N,"non_user":N,"buffer_full":N}
 * CRCs (64-bit) are decimal strings; "corr" is 0 in continuous mode. */
#define ARGUS_SHIM_PCS_NOT_ASKED 0
#define ARGUS_SHIM_PCS_ENABLED 1
#define ARGUS_SHIM_PCS_UNAVAILABLE 2

typedef struct argus_shim_stall {
    uint32_t reason;   /* CUPTI's stall reason index */
    uint64_t samples;
} argus_shim_stall;

typedef struct argus_shim_pc {
    uint64_t crc;      /* the module's cubin CRC (cuptiGetCubinCrc) */
    const char *function; /* the function CUPTI named */
    uint64_t pc;       /* offset from that function's start */
    uint64_t corr;     /* the kernel launch (kernel-serialized mode), or 0 */
    size_t stall, nstall; /* its counts: in->stalls[stall .. stall+nstall) */
    uint64_t samples;  /* their sum */
    long line;
} argus_shim_pc;

typedef struct argus_shim_pcline {
    uint64_t crc;
    const char *function;
    uint64_t pc;
    const char *file;
    uint32_t line;
} argus_shim_pcline;

typedef struct argus_shim_module {
    uint64_t crc;
    const char *cubin; /* path, resolved against the recording's folder */
} argus_shim_module;

typedef struct argus_shim_pcs {
    int state;         /* ARGUS_SHIM_PCS_* */
    char mode[32];
    uint32_t period;   /* log2 of the sampling period in SM cycles */
    uint64_t total, dropped, non_user, buffer_full;
    argus_shim_pc *pc;
    size_t npc, cappc;
    argus_shim_stall *stalls;
    size_t nstalls, capstalls;
    argus_shim_pcline *lines;
    size_t nlines, caplines;
    argus_shim_module *modules;
    size_t nmodules, capmodules;
    struct {
        uint32_t index;
        const char *name;
    } *reasons;
    size_t nreasons, capreasons;
} argus_shim_pcs;

typedef struct argus_shim_input {
    argus_shim_pcs pcs;        /* PC samples, when asked for */
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
    /* The devices the recorder saw (CUPTI device activity: "device" lines
     * {"e":"device","id":N,"name":"NVIDIA H200","sm_count":132,"cc":"9.0"}). */
    struct {
        uint32_t id;
        char name[256];
        int64_t sm_count;
        char cc[16];
    } devices[ARGUS_SHIM_MAX_DEVICES];
    size_t ndevices;
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
    /* PC sampling, per PC of a kernel region (argus_shim_build joins the
     * samples to kernels, device functions and source lines). */
    struct argus_shim_site *sites;
    size_t nsites;
    struct argus_shim_fregion *fregions; /* device functions of sampled kernels */
    size_t nfregions;
    uint64_t *node_samples;    /* per trace node: samples in it and below */
    uint64_t pcs_samples;      /* all samples recorded */
    uint64_t pcs_unattributed; /* samples given to no kernel region */
    char pcs_notes[4][320];    /* why samples or modules could not be used */
    size_t npcs_notes;
    uint64_t pcs_notes_more;
    /* Per trace occurrence: the kernel event it was built from (NULL for
     * ranges and device regions), for its launch configuration and device. */
    const argus_shim_event **occ_event;
    /* Hardware metrics to join into the reports (include/argus/metrics.h);
     * NULL: none asked. Set by the caller after argus_shim_build. */
    const struct argus_metrics *metrics;
} argus_shim_result;

/* Where a site's source line came from. */
#define ARGUS_SHIM_LINE_NONE 0
#define ARGUS_SHIM_LINE_CUPTI 1 /* cuptiGetSassToSourceCorrelation in the run */
#define ARGUS_SHIM_LINE_CUBIN 2 /* the saved cubin's .debug_line (elf.c) */

/* The PC sampling report lists this many hot PCs and lines per region. */
#define ARGUS_SHIM_HOT_TOP 10

typedef struct argus_shim_site {
    int32_t node;      /* the kernel region (trace node); -1: none */
    int32_t fregion;   /* its device function (fregions), -1: unknown */
    int by_corr;       /* joined by correlation ID (kernel-serialized mode),
                          else by the kernel's name (continuous) */
    uint64_t crc;
    const char *function; /* as CUPTI named it */
    uint64_t pc;       /* offset from that function's start */
    uint64_t offset;   /* the PC as an offset in the kernel's section (-1 unknown) */
    char *file;        /* source file (owned), NULL when no line is known */
    uint32_t line;
    int line_from;     /* ARGUS_SHIM_LINE_* */
    uint64_t samples;
    uint64_t *stall;   /* per in->pcs.reasons entry, then one for unnamed ones */
} argus_shim_site;

typedef struct argus_shim_fregion {
    int32_t node;      /* its kernel region */
    char *name;        /* the cubin's symbol */
    uint64_t lo, hi;   /* section offsets */
    int kernel_body;   /* the kernel's own function (callees excluded) */
    uint64_t samples;
} argus_shim_fregion;

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

/* ---- the cubin: device functions and source lines (profiler/argus/elf.c) --
 * Read from the module images CUPTI hands the recorder (saved beside the
 * recording) so that PC samples can be put in the device function that ran
 * them and on a source line. */
typedef struct argus_cubin_func {
    char *name;        /* the symbol ("$KERNEL$NAME" for a callee's copy) */
    uint32_t section;  /* ELF section index of its .text.KERNEL section */
    uint64_t lo, hi;   /* [lo, hi): byte offsets in that section */
    int entry;         /* a kernel (STO_CUDA_ENTRY) */
    int32_t kernel;    /* index of its section's kernel, -1 none */
} argus_cubin_func;

typedef struct argus_cubin_line {
    uint32_t section;
    uint64_t addr;     /* section offset where the row starts */
    uint32_t file;     /* index into files */
    uint32_t line;
    uint32_t pad, order;
} argus_cubin_line;

typedef struct argus_cubin {
    argus_cubin_func *fn;
    size_t nfn;
    argus_cubin_line *lines; /* sorted by section, then address */
    size_t nlines;
    char **files;      /* "dir/name" as .debug_line has them */
    size_t nfiles;
    int has_lines;     /* a .debug_line section was there (-lineinfo) */
} argus_cubin;

/* Reads a cubin (ELF64, EM_CUDA): its STT_FUNC symbols in .text.*
 * sections and the DWARF 2-4 line table. A truncated or damaged image is
 * ARGUS_EFORMAT with "WHERE: field: problem" in msg. */
int argus_cubin_parse(const void *img, size_t len, const char *where, argus_cubin *out,
                      char *msg, size_t msglen);
void argus_cubin_free(argus_cubin *c);

typedef struct argus_cubin_pc {
    int32_t func;      /* innermost function holding the PC */
    int32_t kernel;    /* its section's kernel */
    uint32_t section;
    uint64_t offset;   /* the PC as a section offset */
    const char *file;  /* NULL when the cubin has no line for it */
    uint32_t line;
} argus_cubin_pc;

/* A PC sample's place: `function` is the name CUPTI reported and
 * pc_offset its offset from that function's start. ARGUS_ENOREGION when
 * the function is not in the cubin or the PC is outside every function. */
int argus_cubin_locate(const argus_cubin *c, const char *function, uint64_t pc_offset,
                       argus_cubin_pc *out, char *msg, size_t msglen);
/* The source-level name of nvcc's "$KERNEL$NAME" copies (NAME). */
const char *argus_cubin_func_base_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_SHIM_H */
