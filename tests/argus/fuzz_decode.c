/*
 * Fuzz target: any bytes as a region buffer. The decoder must either
 * refuse them with an ARGUS_E* code or produce a trace whose occurrences
 * point at real warps and nodes and never end before they begin; the
 * statistics and all three writers must accept what it produced.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>

#include "argus/argus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Says which property failed before aborting (the compiler merges bare
 * abort() calls, so a debugger cannot tell them apart). */
#define CHECK(cond, what)                                          \
    do {                                                           \
        if (!(cond)) {                                             \
            fprintf(stderr, "fuzz_argus_decode: %s\n", what);      \
            abort();                                               \
        }                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    argus_trace t;
    char msg[256];
    int rc = argus_decode(data, size, NULL, &t, msg, sizeof(msg));
    if (rc != 0) {
        CHECK(rc < 0 && t.warps == NULL && msg[0] != '\0', "a refusal without a code and message");
        return 0;
    }
    for (size_t i = 0; i < t.nocc; i++) {
        const argus_occurrence *o = &t.occ[i];
        CHECK(o->slot < t.nwarps && o->node < t.nnodes, "occurrence outside the warps or nodes");
        CHECK(o->clk_end >= o->clk_begin, "occurrence ends before it begins");
        CHECK(o->track < ARGUS_MAX_TRACKS, "track out of range");
        CHECK(o->parent < 0 || (size_t)o->parent < i, "parent after its child");
    }
    argus_region_stats *st;
    size_t n;
    CHECK(argus_stats(&t, NULL, &st, &n) == 0, "statistics failed");
    free(st);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL, "open_memstream failed");
    CHECK(argus_report_text(&t, NULL, NULL, "fuzz", f) == 0, "text report failed");
    CHECK(argus_report_json(&t, NULL, NULL, "fuzz", f) == 0, "JSON report failed");
    CHECK(argus_trace_json(&t, NULL, "fuzz", f) == 0, "trace failed");
    fclose(f);
    free(text);
    argus_trace_free(&t);
    return 0;
}
