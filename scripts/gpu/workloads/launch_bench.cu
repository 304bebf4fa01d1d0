// Launch-overhead benchmark for the Mosaic shim.
//
//   launch_bench [--launches N] [--chunk C] [--reps R]
//                [--mode wall|chunked|both]
//
// wall:    after 10 warm-up launches + sync, N launches of an empty kernel
//          <<<1,32>>> on the default stream, timed from just before the
//          first launch to the return of cudaDeviceSynchronize (CPU enqueue
//          cost and GPU drain together) -> ns_per_launch.
// chunked: N launches in chunks of C; only the launch calls are timed, with
//          a cudaDeviceSynchronize (not timed) after each chunk, so the
//          queue never fills and the figure is the CPU-side enqueue cost
//          -> enqueue_ns_per_launch.
// Each measurement is repeated R times in the process (wall, chunked, wall,
// chunked, ...); the headline figures are the best (minimum) of the R reps,
// which is robust to bursts of host noise; medians and every rep are
// printed too.
// Default: --launches 100000 --chunk 1000 --reps 5 --mode both.
//
// Prints exactly one JSON line on stdout, e.g.
//   {"launches":100000,"reps":5,"ns_per_launch":2100.5,
//    "ns_per_launch_median":2150.0,"ns_per_launch_reps":[...],"chunk":1000,
//    "enqueue_ns_per_launch":1900.2,...,"launches_issued":1000010}
// launches_issued counts every kernel launch this process made (warm-up
// included), for checking the shim's own count.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <algorithm>
#include <vector>

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

static void print_series(const char *key, std::vector<double> v)
{
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    size_t m = sorted.size();
    double med = m % 2 ? sorted[m / 2] : (sorted[m / 2 - 1] + sorted[m / 2]) / 2;
    printf(",\"%s\":%.1f,\"%s_median\":%.1f,\"%s_reps\":[", key, sorted[0],
           key, med, key);
    for (size_t i = 0; i < v.size(); i++)
        printf("%s%.1f", i ? "," : "", v[i]);
    printf("]");
}

int main(int argc, char **argv)
{
    long long n = 100000, chunk = 1000;
    int reps = 5;
    const char *mode = "both";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--launches") && i + 1 < argc)
            n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
            chunk = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            mode = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--launches N] [--chunk C] [--reps R] "
                    "[--mode wall|chunked|both]\n", argv[0]);
            return 2;
        }
    }
    bool do_wall = !strcmp(mode, "wall") || !strcmp(mode, "both");
    bool do_chunk = !strcmp(mode, "chunked") || !strcmp(mode, "both");
    if ((!do_wall && !do_chunk) || n < 1 || chunk < 1 || reps < 1) {
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

    std::vector<double> wall, enq;
    for (int rep = 0; rep < reps; rep++) {
        if (do_wall) {
            long long t0 = now_ns();
            for (long long i = 0; i < n; i++)
                empty_kernel<<<1, 32>>>();
            CK(cudaDeviceSynchronize());
            long long t1 = now_ns();
            issued += n;
            CK(cudaGetLastError());
            wall.push_back((double)(t1 - t0) / (double)n);
        }
        if (do_chunk) {
            long long total = 0, done = 0;
            while (done < n) {
                long long c = n - done < chunk ? n - done : chunk;
                long long t0 = now_ns();
                for (long long i = 0; i < c; i++)
                    empty_kernel<<<1, 32>>>();
                long long t1 = now_ns();
                total += t1 - t0;
                CK(cudaDeviceSynchronize());
                done += c;
            }
            issued += n;
            CK(cudaGetLastError());
            enq.push_back((double)total / (double)n);
        }
    }

    printf("{\"launches\":%lld,\"reps\":%d", n, reps);
    if (do_wall)
        print_series("ns_per_launch", wall);
    if (do_chunk) {
        printf(",\"chunk\":%lld", chunk);
        print_series("enqueue_ns_per_launch", enq);
    }
    printf(",\"launches_issued\":%lld}\n", issued);
    return 0;
}
