/*
 * The traced program of ctest argus_bpf: two threads call a stand-in driver
 * library's cuLaunchKernel and cuStreamSynchronize (bpf_stub.c, a shared
 * library, so that a uprobe on its file finds them) a known number of
 * times, and print their thread IDs: "thread A TID launches 5 syncs 2",
 * "thread B TID launches 3 syncs 1". Each sync sleeps 2 ms.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
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

int main(void)
{
    job a = {"A", 5, 2}, b = {"B", 3, 1};
    pthread_t tb;
    work(&a);
    if (pthread_create(&tb, NULL, work, &b) != 0)
        return 1;
    pthread_join(tb, NULL);
    return 0;
}
