/*
 * The target program of argus-sass's tests: a "CUDA program" on the fake
 * CUPTI (fake_cupti_sass.c) that loads a real cubin and launches one of
 * its kernels.
 *   sass_prog CUBIN KERNEL LAUNCHES GRID_X BLOCK_X [crash|nocuda|twodev]
 * crash: killed by SIGSEGV after the launches (the context never
 * destroyed); nocuda: never initialises CUDA; twodev: a second context on
 * device 1 launches too. It checks that the collector left no descriptor
 * and no thread behind (exit 4 when it did).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cupti_sass.h"

static int count(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (d == NULL)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fputs("usage: sass_prog CUBIN KERNEL LAUNCHES GRID_X BLOCK_X [crash|nocuda|twodev]\n",
              stderr);
        return 2;
    }
    const char *mode = argc > 6 ? argv[6] : "";
    int fds0 = count("/proc/self/fd"), thr0 = count("/proc/self/task");
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) {
        perror(argv[1]);
        return 2;
    }
    static unsigned char img[1 << 20];
    size_t len = fread(img, 1, sizeof img, f);
    fclose(f);
    if (strcmp(mode, "nocuda") == 0)
        return 0;
    if (fake_sass_driver_init() < 0)
        return 5;
    fake_sass_ctx_create(0);
    if (fake_sass_module_load(0, img, len) != 0)
        return 5;
    unsigned grid[3] = {(unsigned)atoi(argv[4]), 1, 1}, block[3] = {(unsigned)atoi(argv[5]), 1, 1};
    int n = atoi(argv[3]);
    for (int i = 0; i < n; i++)
        if (fake_sass_launch(0, argv[2], grid, block) != 0) {
            fprintf(stderr, "sass_prog: no kernel %s in %s\n", argv[2], argv[1]);
            return 5;
        }
    if (strcmp(mode, "twodev") == 0) {
        fake_sass_ctx_create(1);
        fake_sass_launch(1, argv[2], grid, block);
        fake_sass_ctx_destroy(1);
    }
    if (strcmp(mode, "crash") == 0)
        raise(SIGSEGV);
    fake_sass_ctx_destroy(0);
    int fds1 = count("/proc/self/fd"), thr1 = count("/proc/self/task");
    if (fds1 != fds0 || thr1 != thr0) {
        fprintf(stderr, "sass_prog: the collector left %d descriptors and %d threads behind\n",
                fds1 - fds0, thr1 - thr0);
        return 4;
    }
    return 0;
}
