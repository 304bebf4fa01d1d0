/*
 * A small "application" for the whole-process tests: reaches the driver as
 * the CUDA runtime does, launches kernels, optionally forks a child that
 * launches too, and prints what the driver executed and whether the
 * launch entry point it was handed is the shim's wrapper.
 *
 * usage: shim_child N [fork M]
 * With MTEST_REPORT_RESOURCES set it also prints its open descriptors and
 * threads, so a test can compare them with and without the shim.
 */
#define _GNU_SOURCE 1
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fakecuda/fake_cuda.h"

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
                              unsigned, unsigned, unsigned, unsigned, CUstream,
                              void **, void **);

/* Entries of a /proc/self directory (open descriptors, threads). */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - (strcmp(dir, "/proc/self/fd") == 0); /* the DIR's own fd */
}

static void launch(launch_fn lk, CUfunction f, int n)
{
    for (int i = 0; i < n; i++)
        if (lk(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
            exit(3);
}

int main(int argc, char **argv)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    getproc_fn gp;
    launch_fn lk = NULL;
    CUfunction f;
    struct fake_tally t;
    Dl_info info;
    int wrapped, n = argc > 1 ? atoi(argv[1]) : 0;

    if (!cuda)
        return 2;
    gp = (getproc_fn)dlsym(cuda, "cuGetProcAddress_v2");
    if (!gp || gp("cuLaunchKernel", (void **)&lk, 12000, 0, NULL) != CUDA_SUCCESS)
        return 2;
    f = ((fake_function_create_fn)dlsym(cuda, "fake_function_create"))("child_fn",
                                                                        32, 0);
    wrapped = dladdr((void *)lk, &info) && strstr(info.dli_fname, "libmosaic");
    launch(lk, f, n);
    if (argc > 3 && strcmp(argv[2], "fork") == 0) {
        pid_t pid = fork();
        int status;
        if (pid == 0) {
            launch(lk, f, atoi(argv[3]));
            exit(0);
        }
        waitpid(pid, &status, 0);
        launch(lk, f, n);
    }
    ((fake_tally_fn)dlsym(cuda, "fake_tally"))(&t);
    printf("executed %llu wrapped %d\n", (unsigned long long)t.direct_executed,
           wrapped);
    if (getenv("MTEST_REPORT_RESOURCES"))
        printf("fds %d threads %d\n", count_entries("/proc/self/fd"),
               count_entries("/proc/self/task"));
    return 0;
}
