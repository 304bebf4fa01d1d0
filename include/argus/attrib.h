/*
 * Argus attribution: PC-keyed metrics attributed to regions (issue 13,
 * part 2, item 6; docs/argus-discover.md).
 *
 * Two kinds of evidence meet here, from different runs of one program:
 * - the PC-to-region map of an instrumented run: for each PC, how many
 *   times it executed under each region (the dynamic region: a
 *   __noinline__ function's PCs executed under "callA/work" and under
 *   "callB/work" are two entries);
 * - PC-keyed metrics of a profiling run (PC-sampling samples, stall
 *   reasons, SASS instructions executed): additive numbers per PC.
 *
 * Rules:
 * - An additive metric of a PC executed n_r times under region r (sum n in
 *   all) goes to r in proportion n_r / sum n. The per-PC number is
 *   observed, a region's share of it attributed.
 * - A ratio metric (stalls per instruction, hit rate) is never averaged:
 *   it is declared as numerator / denominator of two additive metrics, both
 *   are attributed, and the region's ratio is derived from the two sums.
 * - A PC's ambiguity is the entropy of its region distribution,
 *   H = -sum p_r log2 p_r (bits; 0 when one region holds all its
 *   executions, 1 for an even split in two, 0.811 for 3:1), derived.
 * - A metric's PC that the map does not have (or that executed zero times)
 *   is not split by a guess: its value stays "unmapped", reported beside
 *   the regions, so that regions + unmapped = the kernel's total.
 * - Evidence joins only within one program version: every file names the
 *   program it was measured on (`program` line, e.g. the cubin's content
 *   hash); a second file naming another program is refused.
 *
 * Every function that can fail returns 0 or a negative ARGUS_E* code and
 * writes a sentence into msg naming the file, line, field and fix.
 */
#ifndef ARGUS_ATTRIB_H
#define ARGUS_ATTRIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "argus.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a number was obtained (the report's "mark"). */
#define ARGUS_MARKS(X)                                                                             \
    X(ARGUS_MARK_OBSERVED, "observed")                                                             \
    X(ARGUS_MARK_ATTRIBUTED, "attributed")                                                         \
    X(ARGUS_MARK_DERIVED, "derived")

enum argus_mark {
#define ARGUS_X_MARK(name, str) name,
    ARGUS_MARKS(ARGUS_X_MARK)
#undef ARGUS_X_MARK
};
const char *argus_mark_name(int mark);

typedef struct argus_attrib argus_attrib;

int argus_attrib_new(argus_attrib **out);
void argus_attrib_free(argus_attrib *a);

/* Names the program version the next evidence was measured on. The first
 * call sets it; a later call with another name is ARGUS_EINVAL (evidence of
 * two program versions is never joined). `where` names the source for the
 * message (a file name). */
int argus_attrib_program(argus_attrib *a, const char *program, const char *where, char *msg,
                         size_t msglen);
/* A PC executed `count` times under `region` (a path, "outer/load"; ""
 * for code outside every region). Adding the same PC and region again adds
 * to the count. */
int argus_attrib_add_exec(argus_attrib *a, uint64_t pc, const char *region, uint64_t count,
                          char *msg, size_t msglen);
/* An additive metric's value at a PC (>= 0, finite). One value per PC and
 * metric: argus_attrib_compute refuses a second (ARGUS_EINVAL). */
int argus_attrib_add_metric(argus_attrib *a, uint64_t pc, const char *metric, double value,
                            char *msg, size_t msglen);
/* A ratio metric, name = numerator / denominator (two additive metrics). */
int argus_attrib_add_ratio(argus_attrib *a, const char *name, const char *num, const char *den,
                           char *msg, size_t msglen);

/* Reads an evidence file (argus.attrib v1, tab-separated, '#' comments):
 *   argus.attrib	1                          first line
 *   program	NAME                              required, before any data
 *   exec	PC	REGION	COUNT                     PC hex (0x...), REGION a path or "-"
 *   metric	PC	NAME	VALUE
 *   ratio	NAME	NUMERATOR	DENOMINATOR
 * Errors name the file, line and field. */
int argus_attrib_load(argus_attrib *a, const char *path, char *msg, size_t msglen);

typedef struct argus_attrib_value {
    double value;
    int mark; /* enum argus_mark */
} argus_attrib_value;

typedef struct argus_attrib_region {
    char *path;                    /* "" for code outside every region */
    int mapped;                    /* 1: PCs executed directly under it; 0: an ancestor only */
    argus_attrib_value *self;      /* [n_metrics] directly under it (attributed) */
    argus_attrib_value *inclusive; /* [n_metrics] it and the regions below (attributed) */
    /* [n_ratios]: numerator and denominator (attributed, inclusive) and
     * their quotient (derived; NaN with `defined` 0 when the denominator
     * is 0). */
    argus_attrib_value *ratio_num, *ratio_den, *ratio;
    int *ratio_defined;
} argus_attrib_region;

typedef struct argus_attrib_pc {
    uint64_t pc;
    uint64_t executions; /* sum over regions (observed) */
    size_t n_regions;
    double entropy_bits; /* derived */
} argus_attrib_pc;

typedef struct argus_attrib_result {
    char program[128];
    size_t n_metrics, n_ratios, n_regions, n_pcs;
    char **metrics; /* names */
    char **ratios, **ratio_num, **ratio_den;
    argus_attrib_region *regions; /* sorted by path; parents before children */
    argus_attrib_pc *pcs;         /* sorted by PC: every PC of the map */
    argus_attrib_value *total;    /* [n_metrics] over all PCs (observed) */
    argus_attrib_value *unmapped; /* [n_metrics] at PCs the map lacks (observed) */
    size_t *unmapped_pcs;         /* [n_metrics] how many such PCs */
} argus_attrib_result;

/* Attributes what was added. ARGUS_EINVAL when no program was named, or a
 * ratio names a metric that has no value anywhere. */
int argus_attrib_compute(const argus_attrib *a, argus_attrib_result **out, char *msg,
                         size_t msglen);
void argus_attrib_result_free(argus_attrib_result *r);

/* Lookups: the region of that path, the metric's or ratio's index; -1. */
long argus_attrib_find_region(const argus_attrib_result *r, const char *path);
long argus_attrib_find_metric(const argus_attrib_result *r, const char *name);
long argus_attrib_find_ratio(const argus_attrib_result *r, const char *name);
long argus_attrib_find_pc(const argus_attrib_result *r, uint64_t pc);

/* A readable table: per region and metric the value and its mark, the
 * ratios, the unmapped remainder and the PCs with ambiguity above 0. */
int argus_attrib_write(const argus_attrib_result *r, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_ATTRIB_H */
