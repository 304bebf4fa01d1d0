/* Helpers of the simulated-GPU demo programs (demo_util.h). */
#define _GNU_SOURCE
#include "demo_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int demo_add_key(struct demo_seq *seq, const char *key)
{
    if (seq->n == DEMO_MAX_KERNELS) {
        fprintf(stderr, "demo: more than %d kernels in a sequence\n",
                DEMO_MAX_KERNELS);
        return -1;
    }
    struct demo_kernel *k = &seq->k[seq->n];
    const char *bar = strchr(key, '|');
    size_t len = bar != NULL ? (size_t)(bar - key) : 0;
    char tail = 0;
    if (bar == NULL || len == 0 || len >= sizeof k->name ||
        memchr(key, ';', len) != NULL ||
        sscanf(bar, "|grid=%u,%u,%u|block=%u,%u,%u|dsmem=%u%c", &k->grid[0],
               &k->grid[1], &k->grid[2], &k->block[0], &k->block[1],
               &k->block[2], &k->dsmem, &tail) != 7) {
        fprintf(stderr, "demo: kernel key \"%s\" is not "
                "NAME|grid=X,Y,Z|block=X,Y,Z|dsmem=N (a profile key, see "
                "docs/profile-schema.md; NAME without ';')\n", key);
        return -1;
    }
    memcpy(k->name, key, len);
    k->name[len] = '\0';
    seq->n++;
    return 0;
}

int demo_load(struct demo_seq *seq)
{
    CUresult r = cuInit(0);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "demo: cuInit failed (%d)\n", (int)r);
        return -1;
    }
    /* The fake driver's code image: the kernel names, ';'-separated. */
    size_t cap = 1;
    for (int i = 0; i < seq->n; i++)
        cap += strlen(seq->k[i].name) + 1;
    char *image = calloc(1, cap);
    if (image == NULL)
        return -1;
    for (int i = 0; i < seq->n; i++) {
        if (i > 0)
            strcat(image, ";");
        strcat(image, seq->k[i].name);
    }
    CUmodule mod;
    r = cuModuleLoadData(&mod, image);
    free(image);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "demo: cuModuleLoadData failed (%d)\n", (int)r);
        return -1;
    }
    for (int i = 0; i < seq->n; i++) {
        r = cuModuleGetFunction(&seq->k[i].fn, mod, seq->k[i].name);
        if (r != CUDA_SUCCESS) {
            fprintf(stderr, "demo: cuModuleGetFunction(%s) failed (%d)\n",
                    seq->k[i].name, (int)r);
            return -1;
        }
    }
    return 0;
}

CUresult demo_launch(const struct demo_seq *seq, CUstream s)
{
    for (int i = 0; i < seq->n; i++) {
        const struct demo_kernel *k = &seq->k[i];
        CUresult r = cuLaunchKernel(k->fn, k->grid[0], k->grid[1], k->grid[2],
                                    k->block[0], k->block[1], k->block[2],
                                    k->dsmem, s, NULL, NULL);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

CUresult demo_graph(const struct demo_seq *seq, CUstream s, CUgraphExec *out)
{
    CUgraph g;
    CUresult r = cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (r != CUDA_SUCCESS)
        return r;
    CUresult lr = demo_launch(seq, s);
    r = cuStreamEndCapture(s, &g);
    if (lr != CUDA_SUCCESS || r != CUDA_SUCCESS)
        return lr != CUDA_SUCCESS ? lr : r;
    r = cuGraphInstantiate(out, g, 0);
    cuGraphDestroy(g);
    return r;
}

double demo_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void demo_sort(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
}

double demo_quantile(const double *sorted, int n, double p)
{
    if (n == 0)
        return 0;
    int i = (int)(p * n + 0.999999) - 1;
    if (i < 0)
        i = 0;
    if (i >= n)
        i = n - 1;
    return sorted[i];
}
