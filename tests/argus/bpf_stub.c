/*
 * A stand-in driver library for ctest argus_bpf: the two entry points
 * bpf_target.c calls, not inlined, in a shared object whose file the
 * uprobes name. cuStreamSynchronize waits 2 ms, so that the traced wait is
 * known from below.
 */
#include <time.h>

__attribute__((visibility("default"), noinline)) int
cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
               unsigned bz, unsigned shmem, void *stream, void **params, void **extra);
__attribute__((visibility("default"), noinline)) int cuStreamSynchronize(void *stream);

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shmem, void *stream, void **params, void **extra)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem;
    (void)stream, (void)params, (void)extra;
    __asm__ volatile("" ::: "memory");
    return 0;
}

int cuStreamSynchronize(void *stream)
{
    (void)stream;
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return 0;
}
