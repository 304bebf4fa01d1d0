/*
 * Fuzz target: any bytes as the evidence of a synthesis (argus/synth.h).
 * The input is split at the first "\n--\n" into A and B; every rule runs
 * with A as its evidence (with each rule's backend, variant "v"), and
 * pc_attribute with A as the PC-to-region map and B as PC samples and as
 * SASS counts, and the final probe_latency with A as the base and B as a
 * branch result. Each run must return 0 with a result that parses, says
 * whether it is complete, marks every number observed, attributed or
 * derived with its inputs in range, and is complete only when the
 * evidence passed argus_evidence_check. Run by the shared driver
 * (tests/fuzz_main.c) over test_synth_corpus/.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "argus/discover.h"
#include "argus/synth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, what)                                      \
    do {                                                       \
        if (!(cond)) {                                         \
            fprintf(stderr, "fuzz_argus_synth: %s\n", what);   \
            abort();                                           \
        }                                                      \
    } while (0)

/* Every {value, unit, mark, from} under o: a known mark, from in range. */
static void check_numbers(const cJSON *o, size_t nin)
{
    const cJSON *mark = cJSON_GetObjectItemCaseSensitive(o, "mark");
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(o, "from");
    if (cJSON_IsString(mark) && cJSON_GetObjectItemCaseSensitive(o, "unit") != NULL) {
        CHECK(strcmp(mark->valuestring, "observed") == 0 ||
                  strcmp(mark->valuestring, "attributed") == 0 ||
                  strcmp(mark->valuestring, "derived") == 0,
              "a number with an unknown mark");
        CHECK(cJSON_IsArray(from), "a number without from");
        const cJSON *f;
        cJSON_ArrayForEach(f, from)
        CHECK(cJSON_IsNumber(f) && f->valuedouble >= 0 && f->valuedouble < (double)nin,
              "a number from an input that does not exist");
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, o)
    {
        /* A branch's own inputs are its numbering, not this result's. */
        if (c->string != NULL && strcmp(c->string, "inputs") == 0)
            continue;
        if (cJSON_IsObject(c) || cJSON_IsArray(c))
            check_numbers(c, nin);
    }
}

static void run(const char *rule, uint64_t op, const argus_synth_input *in, size_t nin,
                const argus_registry *reg)
{
    argus_synth_req r = {.task = "fuzz", .rule = rule, .signal = "s", .op = op, .iter = op ? 1 : -1,
                         .reg = reg, .in = in, .nin = nin};
    argus_scope_all(&r.scope);
    r.scope.iter_lo = 0;
    r.scope.iter_hi = 2;
    argus_synth_out out;
    char msg[256];
    CHECK(argus_synth_run(&r, &out, msg, sizeof msg) == 0, "a synthesis failed instead of "
                                                            "reporting its problems");
    cJSON *o = cJSON_ParseWithLength(out.json, out.len);
    CHECK(o != NULL, "the result is not JSON");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "complete");
    CHECK(cJSON_IsBool(c) && cJSON_IsTrue(c) == out.complete, "complete");
    CHECK(out.complete == (out.nproblems == 0), "complete without problems");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "inputs")) == (int)nin, "inputs");
    check_numbers(o, nin);
    for (size_t i = 0; out.complete && i < nin; i++)
        if (in[i].kind == ARGUS_SYNTH_IN_EVIDENCE)
            CHECK(argus_evidence_check(in[i].data, in[i].len, in[i].backend, in[i].variant, msg,
                                       sizeof msg) == 0,
                  "complete with evidence the check refuses");
    cJSON_Delete(o);
    argus_synth_out_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static argus_registry *reg;
    uint32_t main_, load;
    if (reg == NULL) {
        CHECK(argus_registry_new(&reg) == 0, "registry");
        CHECK(argus_registry_add(reg, "mainloop", 0, 0, &main_, NULL, 0) == 0, "mainloop");
        CHECK(argus_registry_add(reg, "load", main_, 0, &load, NULL, 0) == 0, "load");
    }
    load = argus_region_id("load", argus_region_id("mainloop", 0));
    const char *p = (const char *)data;
    const char *sep = size >= 4 ? memmem(p, size, "\n--\n", 4) : NULL;
    size_t alen = sep ? (size_t)(sep - p) : size;
    const char *b = sep ? sep + 4 : p;
    size_t blen = sep ? size - alen - 4 : size;
    static const char *const one[][2] = {{"region_stats", "region_runtime"},
                                         {"kernel_stats", "cupti_activity"},
                                         {"metric_per_kernel", "range_profiler"},
                                         {"probe_latency", "region_runtime"}};
    for (size_t k = 0; k < sizeof one / sizeof one[0]; k++) {
        argus_synth_input in = {.kind = ARGUS_SYNTH_IN_EVIDENCE, .task = "collect:x", .rt_id = "run0",
                                .output = "e1", .object = "ab", .backend = one[k][1], .variant = "v",
                                .data = p, .len = alen};
        run(one[k][0], k == 3 ? ARGUS_OP_ID(load, 0) : 0, &in, 1, reg);
    }
    static const char *const metrics[] = {"pc_sampling", "sass_metrics"};
    for (int k = 0; k < 2; k++) {
        argus_synth_input in[2] = {
            {.kind = ARGUS_SYNTH_IN_EVIDENCE, .task = "collect:map", .rt_id = "run1", .output = "e2",
             .backend = "sanitizer_patch", .variant = "v", .data = p, .len = alen},
            {.kind = ARGUS_SYNTH_IN_EVIDENCE, .task = "collect:pcs", .rt_id = "run2", .output = "e3",
             .backend = metrics[k], .variant = "v", .data = b, .len = blen}};
        run("pc_attribute", 0, in, 2, reg);
    }
    argus_synth_input fin[2] = {
        {.kind = ARGUS_SYNTH_IN_EVIDENCE, .task = "collect:base", .rt_id = "run0", .output = "e1",
         .backend = "region_runtime", .variant = "v", .data = p, .len = alen},
        {.kind = ARGUS_SYNTH_IN_RESULT, .task = "synthesize:branch", .rt_id = "t9",
         .output = "synthesis", .data = b, .len = blen}};
    run("probe_latency", 0, fin, 2, reg);
    argus_synth_input art = {.kind = ARGUS_SYNTH_IN_ARTIFACT, .task = "transform:x", .rt_id = "t0",
                             .output = "artifact", .data = p, .len = size};
    run("sass_listing", 0, &art, 1, reg);
    unsigned char *dec = NULL;
    size_t dlen = 0;
    if (argus_base64_decode(p, alen, &dec, &dlen, NULL, 0) == 0)
        CHECK(dlen <= alen / 4 * 3, "base64 longer than its text allows");
    free(dec);
    return 0;
}
