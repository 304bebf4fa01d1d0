/*
 * The traced program of ctest argus_bpf: two threads call a stand-in driver
 * library's cuLaunchKernel and cuStreamSynchronize (bpf_stub.c, a shared
 * library, so that a uprobe on its file finds them) a known number of
 * times, and print their thread IDs: "thread A TID launches 5 syncs 2",
 * "thread B TID launches 3 syncs 1". Each sync sleeps 2 ms.
 * `argus_bpf_target bench N` times N launches instead (CLOCK_MONOTONIC) and
 * prints "ns_per_launch X": a traced and an untraced run give the uprobe's
 * cost per call (docs/argus-backends.md).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shmem, void *stream, void **params, void **extra);
int cuStreamSynchronize(void *stream);

typedef struct job {
    const char *name;
    int launches, syncs;
} job;

static void *work(void *arg)
{
    const job *j = arg;
    for (int i = 0; i < j->launches; i++)
        cuLaunchKernel(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    for (int i = 0; i < j->syncs; i++)
        cuStreamSynchronize(NULL);
    printf("thread %s %ld launches %d syncs %d\n", j->name, (long)syscall(SYS_gettid), j->launches,
           j->syncs);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "bench") == 0) {
        long n = atol(argv[2]);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (long i = 0; i < n; i++)
            cuLaunchKernel(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
        printf("ns_per_launch %.1f\n", n > 0 ? ns / (double)n : 0.0);
        return 0;
    }
    job a = {"A", 5, 2}, b = {"B", 3, 1};
    pthread_t tb;
    work(&a);
    if (pthread_create(&tb, NULL, work, &b) != 0)
        return 1;
    pthread_join(tb, NULL);
    return 0;
}
