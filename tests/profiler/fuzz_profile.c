/*
 * Fuzz targets for the parsers of profiles: the mosaic-profile/1 JSON
 * reader (profile_read.c), the ncu CSV importer (ncu_import.c, FUZZ_NCU)
 * and the core's strict JSON reader under both (core/json_strict.c,
 * FUZZ_JSON). Any input must give a profile that can be written back, or
 * an error message; never a crash, a leak or an out-of-bounds access. The
 * strict reader must also agree with cJSON: what it accepts, cJSON accepts
 * with nothing after the document, and it reads back the same after cJSON
 * prints it; JSON Lines of the same bytes never fail without a message. Standalone driver: tests/fuzz_main.c (a ctest); libFuzzer:
 * clang -fsanitize=fuzzer,address with this file alone.
 */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "json.h"
#include "ncu_import.h"
#include "mosaic/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef FUZZ_JSON
static int count_record(void *ctx, const char *where, long line, cJSON *doc,
                        char *err, size_t errlen)
{
    (void)where, (void)err, (void)errlen;
    if (!doc || line < 1)
        abort();
    (*(long *)ctx)++;
    return 0;
}

/* The strict reader over raw bytes (no NUL after them: ASan sees a read
 * past the end). */
static void fuzz_strict(const uint8_t *data, size_t size, const char *text)
{
    char err[1024] = "";
    cJSON *root = NULL, *again = NULL;
    char *exact = malloc(size ? size : 1);
    long records = 0;
    int rc;

    if (!exact)
        return;
    if (size)
        memcpy(exact, data, size);
    rc = mosaic__json_parse_strict("fuzz.json", exact, size, &root, err, sizeof(err));
    if (rc == 0) {
        /* Stricter than cJSON, never looser. */
        cJSON *plain = cJSON_ParseWithOpts(text, NULL, 1);
        if (!plain || !cJSON_Compare(plain, root, 1))
            abort();
        cJSON_Delete(plain);
        char *printed = cJSON_PrintUnformatted(root);
        if (printed) {
            if (mosaic__json_parse_strict("printed.json", printed, strlen(printed),
                                          &again, err, sizeof(err)) != 0 ||
                !cJSON_Compare(root, again, 1))
                abort();
            cJSON_Delete(again);
            free(printed);
        }
        cJSON_Delete(root);
    } else if (rc != MOSAIC_EFORMAT || root || err[0] == '\0') {
        abort();
    }
    err[0] = '\0';
    rc = mosaic__jsonl_parse_strict("fuzz.jsonl", exact, size, count_record,
                                    &records, err, sizeof(err));
    if (rc != 0 && (rc != MOSAIC_EFORMAT || err[0] == '\0'))
        abort();
    free(exact);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mosaic_profile p;
    char err[1024] = "";
    char *text = malloc(size + 1);
    FILE *sink;
    int rc;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    mosaic_profile_init(&p);
#ifdef FUZZ_NCU
    {
        FILE *in = fmemopen(text, size ? size : 1, "r");
        rc = in ? mosaic_ncu_import_stream(in, "fuzz.csv", &p, err, sizeof(err)) : 0;
        if (in)
            fclose(in);
    }
#else
#ifdef FUZZ_JSON
    fuzz_strict(data, size, text);
#endif
    rc = mosaic_profile_read_string(text, "fuzz.json", &p, err, sizeof(err));
#endif
    if (rc == 0) {
        /* Whatever was accepted must be consistent enough to write out. */
        sink = fopen("/dev/null", "w");
        if (sink) {
            mosaic_profile_write(&p, sink);
            fclose(sink);
        }
    } else if (err[0] == '\0') {
        abort(); /* a failure always explains itself */
    }
    mosaic_profile_free(&p);
    free(text);
    return 0;
}
