/*
 * Prints what the cubin reader (profiler/argus/elf.c) finds in a cubin:
 * its device functions with their ranges, and the source line of every
 * 16-byte instruction slot of each function (file names without their
 * directory, which is where the cubin was built). test_pcs_fixture.sh
 * compares this for the committed fixture and a cubin rebuilt from its
 * source, so that a newer nvcc that lays the code out differently shows.
 *   cubin_dump FILE.cubin
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/shim.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: cubin_dump FILE.cubin\n", stderr);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) {
        fprintf(stderr, "cubin_dump: %s: cannot open\n", argv[1]);
        return 1;
    }
    static unsigned char img[16 << 20];
    size_t n = fread(img, 1, sizeof(img), f);
    fclose(f);
    argus_cubin c;
    char msg[512];
    if (argus_cubin_parse(img, n, argv[1], &c, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "cubin_dump: %s\n", msg);
        return 1;
    }
    for (size_t i = 0; i < c.nfn; i++)
        printf("function %s entry %d kernel %s range 0x%llx 0x%llx\n", c.fn[i].name, c.fn[i].entry,
               c.fn[i].kernel >= 0 ? c.fn[c.fn[i].kernel].name : "-",
               (unsigned long long)c.fn[i].lo, (unsigned long long)c.fn[i].hi);
    for (size_t i = 0; i < c.nfn; i++) {
        if (!c.fn[i].entry)
            continue;
        for (unsigned long long pc = 0; pc < c.fn[i].hi - c.fn[i].lo; pc += 16) {
            argus_cubin_pc at;
            if (argus_cubin_locate(&c, c.fn[i].name, pc, &at, msg, sizeof(msg)) != 0) {
                fprintf(stderr, "cubin_dump: %s\n", msg);
                argus_cubin_free(&c);
                return 1;
            }
            const char *base = at.file ? strrchr(at.file, '/') : NULL;
            printf("pc %s+0x%llx %s %s:%u\n", c.fn[i].name, pc, c.fn[at.func].name,
                   at.file ? (base ? base + 1 : at.file) : "-", at.line);
        }
    }
    argus_cubin_free(&c);
    return 0;
}
