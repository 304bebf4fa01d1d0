/*
 * Fuzz target: any bytes as PTX for discovery and probes. Discovery must
 * refuse the text with an ARGUS_E* code or list operations whose lines
 * exist, whose IDs are unique and whose loops enclose them; a probe of
 * each must be refused with a code or give a variant with exactly one
 * forced-wait block, in which discovery finds the same operations.
 * Run by the shared driver (tests/fuzz_main.c) on
 * tests/argus/fixtures/discover/fuzz/ (ctest argus_fuzz_discover).
 */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/discover.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_argus_discover: %s\n", what);                                    \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static size_t count(const char *text, size_t len, const char *s)
{
    size_t n = 0, sl = strlen(s);
    for (size_t i = 0; i + sl <= len; i++)
        n += memcmp(text + i, s, sl) == 0;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *ptx = (const char *)data;
    argus_discovery *d;
    char msg[512];
    int rc = argus_discover_ptx(ptx, size, &d, msg, sizeof msg);
    if (rc != 0) {
        CHECK(rc < 0 && d == NULL, "a refusal without a negative code, or with a result");
        CHECK(msg[0] != '\0', "a refusal without a message");
        return 0;
    }
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    for (size_t i = 0; i < d->n_ops; i++) {
        const argus_async_op *o = &d->ops[i];
        CHECK(o->line >= 1 && o->line <= lines, "an operation's line is outside the text");
        CHECK(o->kind >= 0 && o->kind < ARGUS_ASYNC_NKINDS, "an unknown kind");
        CHECK(o->id == ARGUS_OP_ID(o->region, o->ordinal), "an ID that is not region.ordinal");
        CHECK(!o->in_loop || (o->loop_head < o->line && o->line < o->loop_end),
              "a loop that does not enclose its operation");
        for (size_t j = 0; j < i; j++)
            CHECK(d->ops[j].id != o->id, "two operations with one ID");
    }
    /* Probes of the first few operations (each costs a copy of the text). */
    for (size_t i = 0; i < d->n_ops && i < 6; i++) {
        char *v = NULL;
        size_t vl = 0;
        rc = argus_probe_ptx(ptx, size, d, d->ops[i].id, 2, &v, &vl, msg, sizeof msg);
        if (rc != 0) {
            CHECK(rc < 0 && v == NULL, "a refused probe with a variant");
            continue;
        }
        CHECK(v != NULL && strlen(v) == vl, "a variant whose length is wrong");
        CHECK(count(v, vl, "argus-probe: force") == count(ptx, size, "argus-probe: force") + 1,
              "a variant without exactly one forced-wait block");
        argus_discovery *dv;
        if (argus_discover_ptx(v, vl, &dv, msg, sizeof msg) == 0) {
            CHECK(dv->n_ops == d->n_ops, "the variant's operations differ from the base's");
            argus_discovery_free(dv);
        }
        free(v);
    }
    argus_discovery_free(d);
    return 0;
}
