// Launch-overhead benchmark for the Mosaic shim.
//
//   launch_bench [--launches N] [--chunk C] [--mode wall|chunked|both]
//
// wall:    10 warm-up launches + sync, then N launches of an empty kernel
//          <<<1,32>>> on the default stream; time from just before the first
//          launch to the return of cudaDeviceSynchronize (CPU enqueue cost
//          and GPU drain together) -> ns_per_launch.
// chunked: N launches in chunks of C; only the launch calls are timed, with
//          a cudaDeviceSynchronize (not timed) after each chunk, so the
//          queue never fills and the figure is the CPU-side enqueue cost
//          -> enqueue_ns_per_launch.
// Default: --launches 100000 --chunk 1000 --mode both.
//
// Prints exactly one JSON line on stdout, e.g.
//   {"launches":100000,"ns_per_launch":2100.5,"chunk":1000,
//    "enqueue_ns_per_launch":1900.2,"launches_issued":200010}
// launches_issued counts every kernel launch this process made (warm-up
// included), for checking the shim's own count.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t e_ = (call);                                              \
        if (e_ != cudaSuccess) {                                              \
            fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call,   \
                    cudaGetErrorString(e_));                                  \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

__global__ void empty_kernel() {}

static inline long long now_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long long n = 100000, chunk = 1000;
    const char *mode = "both";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--launches") && i + 1 < argc)
            n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
            chunk = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            mode = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--launches N] [--chunk C] "
                    "[--mode wall|chunked|both]\n", argv[0]);
            return 2;
        }
    }
    bool do_wall = !strcmp(mode, "wall") || !strcmp(mode, "both");
    bool do_chunk = !strcmp(mode, "chunked") || !strcmp(mode, "both");
    if ((!do_wall && !do_chunk) || n < 1 || chunk < 1) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }

    CK(cudaSetDevice(0));
    CK(cudaFree(0)); // create the context outside the timed region
    long long issued = 0;

    for (int i = 0; i < 10; i++) {
        empty_kernel<<<1, 32>>>();
        issued++;
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    double ns_wall = -1, ns_enq = -1;
    if (do_wall) {
        long long t0 = now_ns();
        for (long long i = 0; i < n; i++)
            empty_kernel<<<1, 32>>>();
        CK(cudaDeviceSynchronize());
        long long t1 = now_ns();
        issued += n;
        CK(cudaGetLastError());
        ns_wall = (double)(t1 - t0) / (double)n;
    }
    if (do_chunk) {
        long long enq = 0, done = 0;
        while (done < n) {
            long long c = n - done < chunk ? n - done : chunk;
            long long t0 = now_ns();
            for (long long i = 0; i < c; i++)
                empty_kernel<<<1, 32>>>();
            long long t1 = now_ns();
            enq += t1 - t0;
            CK(cudaDeviceSynchronize());
            done += c;
        }
        issued += n;
        CK(cudaGetLastError());
        ns_enq = (double)enq / (double)n;
    }

    printf("{\"launches\":%lld", n);
    if (do_wall)
        printf(",\"ns_per_launch\":%.1f", ns_wall);
    if (do_chunk)
        printf(",\"chunk\":%lld,\"enqueue_ns_per_launch\":%.1f", chunk, ns_enq);
    printf(",\"launches_issued\":%lld}\n", issued);
    return 0;
}
