// Which host memory can a cuStreamWaitValue32 see a host write in?
// Modes: hostalloc (cuMemHostAlloc), malloc (posix_memalign + cuMemHostRegister),
// memfd (memfd_create + mmap MAP_SHARED + cuMemHostRegister).
// For each: (1) GPU->host: cuStreamWriteValue32 seen by the host; (2) host->GPU:
// a wait that the host releases, seen by a write after it. Prints one line.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
#define CK(x) do { CUresult r_ = (x); if (r_) { const char *s_; cuGetErrorString(r_, &s_); printf("%s: %s failed: %s\n", mode, #x, s_); return 1; } } while (0)
int main(int argc, char **argv)
{
    const char *mode = argv[1];
    void *base = NULL;
    cudaFree(0);
    cuInit(0);
    if (!strcmp(mode, "hostalloc")) {
        CK(cuMemHostAlloc(&base, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    } else {
        if (!strcmp(mode, "malloc")) {
            if (posix_memalign(&base, 4096, 4096)) return 1;
        } else {
            int fd = memfd_create("probe", 0);
            if (fd < 0 || ftruncate(fd, 4096)) return 1;
            base = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        }
        memset(base, 0, 4096);
        CK(cuMemHostRegister(base, 4096, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE));
    }
    memset(base, 0, 4096);
    CUdeviceptr d;
    CK(cuMemHostGetDevicePointer(&d, base, 0));
    volatile unsigned *h = (volatile unsigned *)base;
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    // (1) GPU -> host
    CK(cuStreamWriteValue32(s, d + 64, 7, 0));
    double t0 = now();
    while (h[16] != 7 && now() - t0 < 2) {}
    int g2h = h[16] == 7;
    double g2h_us = (now() - t0) * 1e6;
    // (2) host -> GPU
    CK(cuStreamWaitValue32(s, d, 1, CU_STREAM_WAIT_VALUE_GEQ));
    CK(cuStreamWriteValue32(s, d + 128, 9, 0));
    usleep(1000);
    int early = h[32] == 9;
    t0 = now();
    h[0] = 1;
    __sync_synchronize();
    while (h[32] != 9 && now() - t0 < 2) {}
    int h2g = h[32] == 9;
    printf("%s: gpu->host %s (%.1f us), host->gpu %s (%.1f us)%s\n", mode, g2h ? "ok" : "NOT SEEN", g2h_us,
           h2g ? "ok" : "NOT SEEN in 2 s", (now() - t0) * 1e6, early ? " [passed before the write!]" : "");
    fflush(stdout);
    _exit(0); // a stuck stream must not hang the exit
}
