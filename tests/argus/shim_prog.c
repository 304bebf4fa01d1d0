/*
 * A CUDA-free stand-in for an unmodified program under argus-shim: it
 * loads $CUDA_INJECTION64_PATH and calls its InitializeInjection, as the
 * CUDA driver does at cuInit, then "launches" kernels through the fake
 * CUPTI (fake_cupti.c) and exits with the status it was given.
 *   shim_prog STATUS [NAME:STREAM:DURATION_NS ...]
 * With no CUDA_INJECTION64_PATH it behaves as a program that never
 * initialises CUDA.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fake_cupti_launch(const char *name, uint32_t stream, uint64_t dur_ns);

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: shim_prog STATUS [NAME:STREAM:DURATION_NS ...]\n", stderr);
        return 2;
    }
    const char *inject = getenv("CUDA_INJECTION64_PATH");
    if (inject && inject[0]) {
        void *h = dlopen(inject, RTLD_NOW | RTLD_GLOBAL);
        int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
        if (init == NULL) {
            fprintf(stderr, "shim_prog: %s: %s\n", inject, dlerror());
            return 125;
        }
        init();
    }
    for (int i = 2; i < argc; i++) {
        char name[256];
        unsigned stream;
        unsigned long long dur;
        if (sscanf(argv[i], "%255[^:]:%u:%llu", name, &stream, &dur) != 3) {
            fprintf(stderr, "shim_prog: %s: expected NAME:STREAM:DURATION_NS\n", argv[i]);
            return 2;
        }
        fake_cupti_launch(name, stream, dur);
    }
    return atoi(argv[1]);
}
