/*
 * Fuzz targets for the two profile parsers: the mosaic-profile/1 JSON
 * reader (profile_read.c) and the ncu CSV importer (ncu_import.c). Any
 * input must give a profile that can be written back, or an error message;
 * never a crash, a leak or an out-of-bounds access. FUZZ_NCU selects the
 * importer. Standalone driver: tests/fuzz_main.c (a ctest); libFuzzer:
 * clang -fsanitize=fuzzer,address with this file alone.
 */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncu_import.h"
#include "mosaic/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
