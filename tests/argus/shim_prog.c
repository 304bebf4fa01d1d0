/*
 * A CUDA-free stand-in for an unmodified program under argus-shim: it
 * loads $CUDA_INJECTION64_PATH and calls its InitializeInjection, as the
 * CUDA driver does at cuInit, then runs its arguments in order and exits
 * with the status it was given:
 *   shim_prog STATUS [ACTION ...]
 *   NAME:STREAM:DURATION_NS  a kernel launch through the fake CUPTI
 *   push:NAME | pop          nvtxRangePushA / nvtxRangePop
 *   start:NAME | end:K       nvtxRangeStartA / nvtxRangeEnd of the K-th start
 *   graph:NAME:N             cuGraphLaunch of N kernels NAME (stream 5, 20 ns each)
 *   thread:NAME:KERNEL       a second thread: push NAME, launch KERNEL
 *                            (stream 3, 40 ns), pop; joined before going on
 *   nocuda                   (first) run without calling InitializeInjection,
 *                            as a program that uses NVTX but never CUDA
 *   ctx | module:PATH | sync context creation, a module load of the cubin at
 *                            PATH, cuCtxSynchronize (the fake's PC sampling)
 * NVTX goes through the real nvtx3 headers, so the ranges reach the
 * recorder through NVTX's own loader and NVTX_INJECTION64_PATH.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

int fake_cupti_launch(const char *name, uint32_t stream, uint64_t dur_ns);
int fake_cupti_graph_launch(const char *name, int n, uint32_t stream, uint64_t dur_ns);
void fake_cupti_context_create(void);
int fake_cupti_module_load(const char *path);
void fake_cupti_sync(void);

static void *worker(void *arg)
{
    char *spec = arg; /* NAME:KERNEL */
    char *k = strchr(spec, ':');
    if (k == NULL)
        return NULL;
    *k++ = '\0';
    nvtxRangePushA(spec);
    fake_cupti_launch(k, 3, 40);
    nvtxRangePop();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: shim_prog STATUS [ACTION ...]\n", stderr);
        return 2;
    }
    int first = 2;
    const char *inject = getenv("CUDA_INJECTION64_PATH");
    if (argc > 2 && strcmp(argv[2], "nocuda") == 0) {
        first = 3;
    } else if (inject && inject[0]) {
        void *h = dlopen(inject, RTLD_NOW | RTLD_GLOBAL);
        int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
        if (init == NULL) {
            fprintf(stderr, "shim_prog: %s: %s\n", inject, dlerror());
            return 125;
        }
        init();
    }
    nvtxRangeId_t ids[16];
    int nids = 0;
    for (int i = first; i < argc; i++) {
        char name[256];
        unsigned stream;
        unsigned long long dur;
        int k;
        if (strncmp(argv[i], "push:", 5) == 0) {
            nvtxRangePushA(argv[i] + 5);
        } else if (strcmp(argv[i], "ctx") == 0) {
            fake_cupti_context_create();
        } else if (strncmp(argv[i], "module:", 7) == 0) {
            if (fake_cupti_module_load(argv[i] + 7) != 0)
                return 124;
        } else if (strcmp(argv[i], "sync") == 0) {
            fake_cupti_sync();
        } else if (strcmp(argv[i], "pop") == 0) {
            nvtxRangePop();
        } else if (strncmp(argv[i], "start:", 6) == 0 && nids < 16) {
            ids[nids++] = nvtxRangeStartA(argv[i] + 6);
        } else if (sscanf(argv[i], "end:%d", &k) == 1 && k >= 0 && k < nids) {
            nvtxRangeEnd(ids[k]);
        } else if (sscanf(argv[i], "graph:%255[^:]:%d", name, &k) == 2 && k > 0) {
            fake_cupti_graph_launch(name, k, 5, 20);
        } else if (strncmp(argv[i], "thread:", 7) == 0) {
            pthread_t t;
            if (pthread_create(&t, NULL, worker, argv[i] + 7) != 0 || pthread_join(t, NULL) != 0)
                return 124;
        } else if (sscanf(argv[i], "%255[^:]:%u:%llu", name, &stream, &dur) == 3) {
            fake_cupti_launch(name, stream, dur);
        } else {
            fprintf(stderr, "shim_prog: %s: not an action (see the file's comment)\n", argv[i]);
            return 2;
        }
    }
    return atoi(argv[1]);
}
