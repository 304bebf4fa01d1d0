/*
 * The patch cubin (argus_pcmap_patch.cubin, the twin of the fatbin
 * libargus_pcmap.so loads) has what sanitizerPatchInstructions needs: one
 * function per callback of ARGUS_SAN_PATCHES, under its unmangled name (its
 * own .text section: a global function), kept although nothing calls it. Usage:
 * pcmap_patch_check CUBIN. Exit 0 when it does, 1 with the missing names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/shim.h"
#include "san_abi.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: pcmap_patch_check CUBIN\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *img = malloc((size_t)n);
    if (img == NULL || fread(img, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        fprintf(stderr, "%s: cannot read\n", argv[1]);
        return 1;
    }
    fclose(f);
    argus_cubin c;
    char msg[512];
    if (argus_cubin_parse(img, (size_t)n, argv[1], &c, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s\n", msg);
        return 1;
    }
    static const char *const want[] = {
#define ARGUS_X_PATCH(name, id, cb, kind) cb,
        ARGUS_SAN_PATCHES(ARGUS_X_PATCH)
#undef ARGUS_X_PATCH
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int found = 0;
        for (size_t k = 0; k < c.nfn; k++)
            if (strcmp(c.fn[k].name, want[i]) == 0)
                found = 1;
        if (!found) {
            printf("%s: missing from %s\n", want[i], argv[1]);
            bad = 1;
        }
    }
    printf("%s: %zu functions, %zu callbacks wanted: %s\n", argv[1], c.nfn,
           sizeof want / sizeof want[0], bad ? "FAIL" : "ok");
    argus_cubin_free(&c);
    free(img);
    return bad;
}
