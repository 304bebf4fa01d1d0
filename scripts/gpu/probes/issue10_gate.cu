// issue10_gate: the arbiter's device-side gate on a real GPU (issue 10,
// docs/sched.md "Where a BE kernel waits"), standalone: CUDA runtime for
// the kernels, the driver API for the stream memory operations, no other
// library. The gate words live in a MAP_SHARED memfd page registered with
// cuMemHostRegister(DEVICEMAP|PORTABLE), as the shim maps the daemon's
// segment.
//
//   issue10_gate wake N     host write -> stream behind cuStreamWaitValue32
//                           (GEQ) passes: round trip to a host-visible
//                           cuStreamWriteValue32, and to a store made by a
//                           kernel at its start; plus the kernel's
//                           %globaltimer minus the host's CLOCK_REALTIME at
//                           the write (one way, both clocks in ns; the
//                           offset between them is not calibrated, so it is
//                           reported for what it is)
//   issue10_gate write64 N  cost per launch of a cuStreamWriteValue64 after
//                           each launch: host ns per call, and GPU ms for
//                           N back-to-back launches (events), with and without
//   issue10_gate lazyload   whether a kernel's first launch (lazy module
//                           loading) waits for a gated stream's grant
//   issue10_gate funcload CUBIN  which driver call loads a kernel (a
//                           module's CUfunction, a library's CUkernel) and
//                           whether it waits for an unreleased wait on the
//                           same or another stream: the launch,
//                           cuFuncGetAttribute, cuFuncLoad,
//                           cuKernelGetAttribute, cuKernelGetFunction (the
//                           shim's load before its gate, preload/sched_link.c).
//                           CUBIN holds extern "C" k_probe(unsigned *)
//   issue10_gate twoproc    the gate across two processes: the parent writes
//                           the grant 50 ms after the child enqueued its
//                           gated kernel; the child's kernel must start
//                           after it (run it under MPS to check MPS)
//
// Prints one JSON object per line. Tested: built with nvcc 13.0 -arch=sm_90.
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <vector>

#define CK(x)                                                                         \
    do {                                                                              \
        CUresult r_ = (x);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                     \
            const char *s_ = "?";                                                     \
            cuGetErrorString(r_, &s_);                                                \
            fprintf(stderr, "%s:%d: %s: %s (%d)\n", __FILE__, __LINE__, #x, s_, (int)r_); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)
#define CR(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__device__ __forceinline__ uint64_t gtimer(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}

// At its start: the time on the device and a store the host can see.
__global__ void k_stamp(volatile uint32_t *ack, uint32_t v, uint64_t *t)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        *t = gtimer();
        *ack = v;
        __threadfence_system();
    }
}

__global__ void k_empty(void) {}

// The gate page: shared memory as the daemon's segment is (a memfd).
struct page {
    volatile uint32_t *host;
    CUdeviceptr dev;
};

static page map_page(void *base)
{
    page p;
    CK(cuMemHostRegister(base, 4096, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE));
    CK(cuMemHostGetDevicePointer(&p.dev, base, 0));
    p.host = (volatile uint32_t *)base;
    return p;
}

static void *shared_page(void)
{
    int fd = memfd_create("issue10-gate", 0);
    if (fd < 0 || ftruncate(fd, 4096) != 0) {
        perror("memfd");
        exit(1);
    }
    void *b = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (b == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(b, 0, 4096);
    return b;
}

static void init_ctx(void)
{
    CR(cudaSetDevice(0));
    CR(cudaFree(0));
    CK(cuInit(0));
}

static double q(std::vector<double> v, double p)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[(size_t)(p * (double)(v.size() - 1))];
}

static void attrs(void)
{
    CUdevice d;
    int a = -1, b = -1, c = -1;
    CK(cuCtxGetDevice(&d));
    cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, d);
    cuDeviceGetAttribute(&b, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, d);
    cuDeviceGetAttribute(&c, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, d);
    printf("{\"probe\":\"attributes\",\"can_use_host_pointer_for_registered_mem\":%d,"
           "\"can_use_64_bit_stream_mem_ops\":%d,\"can_use_stream_wait_value_nor\":%d}\n", a, b, c);
}

static int wake(int n)
{
    init_ctx();
    attrs();
    page p = map_page(shared_page());
    // word 0: the grant; word 16: the ack of a stream write; word 32: the
    // ack of a kernel's store (each on its own 64-byte line).
    CUdeviceptr grant = p.dev, ack_w = p.dev + 64, ack_k = p.dev + 128;
    volatile uint32_t *h_grant = p.host, *h_ack_w = p.host + 16, *h_ack_k = p.host + 32;
    uint64_t *d_t;
    CR(cudaMalloc(&d_t, sizeof(uint64_t)));
    cudaStream_t s;
    CR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    // Load k_stamp before any launch sits behind a wait. With lazy module
    // loading (CUDA 12.2+ default) the first launch of a kernel loads its
    // module, and that load waits for work the context has queued: a first
    // launch behind an unreleased wait then never returns, and the host
    // never writes the grant that would release it. (The first H200 run of
    // this probe hung here, with no output.)
    k_stamp<<<1, 32, 0, s>>>((volatile uint32_t *)(uintptr_t)ack_k, 0, d_t);
    CR(cudaStreamSynchronize(s));
    std::vector<double> rt_w, rt_k, one_way;
    for (int i = 1; i <= n; i++) {
        CK(cuStreamWaitValue32((CUstream)s, grant, (uint32_t)i, CU_STREAM_WAIT_VALUE_GEQ));
        CK(cuStreamWriteValue32((CUstream)s, ack_w, (uint32_t)i, 0));
        k_stamp<<<1, 32, 0, s>>>((volatile uint32_t *)(uintptr_t)ack_k, (uint32_t)i, d_t);
        CR(cudaGetLastError());
        // Let the front end reach the wait and sit on it.
        usleep(200);
        uint64_t t0 = mono_ns(), r0 = real_ns();
        *h_grant = (uint32_t)i;
        __sync_synchronize();
        uint64_t tw = 0, tk = 0;
        for (;;) {
            uint64_t t = mono_ns();
            if (!tw && *h_ack_w >= (uint32_t)i)
                tw = t;
            if (!tk && *h_ack_k >= (uint32_t)i)
                tk = t;
            if ((tw && tk) || t - t0 > 1000000000ull)
                break;
        }
        if (!tw || !tk) {
            fprintf(stderr, "wake %d: no ack within 1 s\n", i);
            fflush(NULL);
            _exit(1); // a stuck stream must not hang the exit
        }
        CR(cudaStreamSynchronize(s));
        uint64_t gt;
        CR(cudaMemcpy(&gt, d_t, sizeof(gt), cudaMemcpyDeviceToHost));
        if (i > 5) { // warm-up
            rt_w.push_back((double)(tw - t0) / 1e3);
            rt_k.push_back((double)(tk - t0) / 1e3);
            one_way.push_back(((double)gt - (double)r0) / 1e3);
        }
    }
    printf("{\"probe\":\"wake\",\"n\":%zu,\"method\":\"host CLOCK_MONOTONIC from the host's "
           "write of the grant word to seeing the stream's ack (cuStreamWriteValue32 behind the "
           "wait) and the kernel's ack (a store at its start), host spinning; one_way: kernel "
           "%%globaltimer minus host CLOCK_REALTIME at the write, offset uncalibrated\","
           "\"rt_write_us_p50\":%.2f,\"rt_write_us_p99\":%.2f,\"rt_kernel_us_p50\":%.2f,"
           "\"rt_kernel_us_p99\":%.2f,\"one_way_us_p50\":%.2f,\"one_way_us_min\":%.2f}\n",
           rt_w.size(), q(rt_w, 0.5), q(rt_w, 0.99), q(rt_k, 0.5), q(rt_k, 0.99),
           q(one_way, 0.5), q(one_way, 0.0));
    return 0;
}

static int write64(int n)
{
    init_ctx();
    page p = map_page(shared_page());
    cudaStream_t s;
    cudaEvent_t e0, e1;
    CR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CR(cudaEventCreate(&e0));
    CR(cudaEventCreate(&e1));
    for (int i = 0; i < 100; i++)
        k_empty<<<1, 32, 0, s>>>();
    CR(cudaStreamSynchronize(s));
    for (int with = 0; with < 2; with++) {
        std::vector<double> host_ns;
        float gpu_ms = 0;
        for (int rep = 0; rep < 5; rep++) {
            CR(cudaEventRecord(e0, s));
            uint64_t t0 = mono_ns();
            for (int i = 0; i < n; i++) {
                k_empty<<<1, 32, 0, s>>>();
                if (with)
                    CK(cuStreamWriteValue64((CUstream)s, p.dev + 256, (cuuint64_t)i + 1, 0));
            }
            uint64_t t1 = mono_ns();
            CR(cudaEventRecord(e1, s));
            CR(cudaEventSynchronize(e1));
            float ms;
            CR(cudaEventElapsedTime(&ms, e0, e1));
            host_ns.push_back((double)(t1 - t0) / n);
            gpu_ms = rep == 0 || ms < gpu_ms ? ms : gpu_ms;
        }
        printf("{\"probe\":\"write64\",\"completion_write\":%s,\"launches\":%d,\"method\":\"host "
               "CLOCK_MONOTONIC around N launches (median of 5 runs) and cuda events around "
               "them (min of 5)\",\"host_ns_per_launch\":%.1f,\"gpu_us_per_launch\":%.3f}\n",
               with ? "true" : "false", n, q(host_ns, 0.5), gpu_ms * 1e3 / n);
    }
    return 0;
}

static int twoproc(void)
{
    // The page exists before either process touches CUDA; the child (the
    // BE process) maps it for its device, the parent (the daemon's role)
    // writes the grant with a plain store, as mosaic-sched does.
    void *base = shared_page();
    volatile uint32_t *w = (volatile uint32_t *)base;
    int pfd[2];
    if (pipe(pfd) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        init_ctx();
        page p = map_page(base);
        uint64_t *d_t, gt;
        CR(cudaMalloc(&d_t, sizeof(uint64_t)));
        cudaStream_t s;
        CR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        // Loaded before it is queued behind the wait (see wake()).
        k_stamp<<<1, 32, 0, s>>>((volatile uint32_t *)(uintptr_t)(p.dev + 192), 0, d_t);
        CR(cudaStreamSynchronize(s));
        CK(cuStreamWaitValue32((CUstream)s, p.dev, 1, CU_STREAM_WAIT_VALUE_GEQ));
        k_stamp<<<1, 32, 0, s>>>((volatile uint32_t *)(uintptr_t)(p.dev + 128), 1, d_t);
        CR(cudaGetLastError());
        uint64_t enq = real_ns();
        if (write(pfd[1], &enq, sizeof(enq)) != (ssize_t)sizeof(enq))
            _exit(1);
        CR(cudaStreamSynchronize(s));
        uint64_t synced = real_ns();
        CR(cudaMemcpy(&gt, d_t, sizeof(gt), cudaMemcpyDeviceToHost));
        // The grant's time, written by the parent next to it.
        uint64_t granted = *(volatile uint64_t *)(w + 32 + 16);
        int ok = granted != 0 && synced >= granted;
        printf("{\"probe\":\"twoproc\",\"method\":\"child enqueues wait+kernel, parent writes "
               "the grant 50 ms later; the child's sync returns after the grant (one host "
               "CLOCK_REALTIME); kernel %%globaltimer minus the grant time (offset "
               "uncalibrated)\",\"enqueue_to_grant_ms\":%.2f,\"sync_after_grant_us\":%.2f,"
               "\"kernel_gtimer_minus_grant_us\":%.2f,\"gated\":%s}\n",
               ((double)granted - (double)enq) / 1e6, ((double)synced - (double)granted) / 1e3,
               ((double)gt - (double)granted) / 1e3, ok ? "true" : "false");
        fflush(stdout);
        _exit(ok ? 0 : 3);
    }
    // The parent is a CUDA client too, so that under MPS both are clients.
    init_ctx();
    k_empty<<<1, 32>>>();
    CR(cudaDeviceSynchronize());
    uint64_t enq;
    if (read(pfd[0], &enq, sizeof(enq)) != (ssize_t)sizeof(enq))
        return 1;
    usleep(50000);
    uint64_t g = real_ns();
    *(volatile uint64_t *)(w + 32 + 16) = g;
    __sync_synchronize();
    *w = 1;
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

// Does a kernel's first launch (lazy module loading) wait for a stream
// that sits behind an unreleased cuStreamWaitValue32? A second thread
// writes the grant 200 ms after the wait is queued; the launch call's own
// duration says whether it waited for it. This is the gated BE shim's
// case: its grant comes from the daemon, so such a launch stalls until
// the grant rather than deadlocking, but it would hold the BE thread.
__global__ void k_lazy(volatile uint32_t *ack)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *ack = 1;
}

static void *grant_later(void *arg)
{
    usleep(200000);
    *(volatile uint32_t *)arg = 1;
    __sync_synchronize();
    return NULL;
}

static int lazyload(void)
{
    init_ctx();
    page p = map_page(shared_page());
    cudaStream_t s;
    CR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cuStreamWaitValue32((CUstream)s, p.dev, 1, CU_STREAM_WAIT_VALUE_GEQ));
    pthread_t th;
    uint64_t t0 = mono_ns();
    pthread_create(&th, NULL, grant_later, (void *)p.host);
    k_lazy<<<1, 32, 0, s>>>((volatile uint32_t *)(uintptr_t)(p.dev + 64));
    uint64_t t1 = mono_ns();
    CR(cudaGetLastError());
    pthread_join(th, NULL);
    CR(cudaStreamSynchronize(s));
    const char *ml = getenv("CUDA_MODULE_LOADING");
    printf("{\"probe\":\"lazyload\",\"module_loading\":\"%s\",\"method\":\"host "
           "CLOCK_MONOTONIC around the first launch of a kernel queued behind a wait that another "
           "thread releases 200 ms later\",\"first_launch_ms\":%.3f,\"waited_for_grant\":%s}\n",
           ml ? ml : "default", (double)(t1 - t0) / 1e6,
           (t1 - t0) > 150000000ull ? "true" : "false");
    return 0;
}

// funcload: which driver call loads a kernel, and whether it waits for a
// gated stream. Each case loads the cubin named on the command line afresh
// (a module with cuModuleLoad, or a library with cuLibraryLoadFromFile, as
// the CUDA runtime keeps its kernels), so that every case starts unloaded;
// then queues an unreleased wait on the launch stream or on another one,
// makes the call under test while a second thread writes the grant 200 ms
// later, and launches the kernel on the first stream. Each call's host time
// says whether it waited for the grant.
struct lz_case {
    const char *name;
    int wait_other; // the unreleased wait is on the other stream
    int lib;        // the kernel is a library's CUkernel
    int how;        // 0 none, 1 cuFuncGetAttribute, 2 cuFuncLoad, 3 cuKernelGetAttribute,
                    // 4 cuKernelGetFunction + cuFuncLoad
};

static int fl_state(CUfunction f)
{
    CUfunctionLoadingState st = CU_FUNCTION_LOADING_STATE_MAX;
    if (!f || cuFuncIsLoaded(&st, f) != CUDA_SUCCESS)
        return -1;
    return (int)st;
}

static void lz_run(int i, const lz_case &c, const char *cubin, page p, CUstream s1, CUstream s2)
{
    CUmodule m;
    CUlibrary l;
    CUfunction f = NULL;
    CUkernel k = NULL;
    CUresult r = CUDA_SUCCESS;
    int a = 0;
    if (c.lib) {
        CK(cuLibraryLoadFromFile(&l, cubin, NULL, NULL, 0, NULL, NULL, 0));
        CK(cuLibraryGetKernel(&k, l, "k_probe"));
    } else {
        CK(cuModuleLoad(&m, cubin));
        CK(cuModuleGetFunction(&f, m, "k_probe"));
    }
    int before = fl_state(f);
    CK(cuStreamWaitValue32(c.wait_other ? s2 : s1, p.dev + 64 * (i + 4), 1, CU_STREAM_WAIT_VALUE_GEQ));
    pthread_t th;
    uint64_t t0 = mono_ns();
    pthread_create(&th, NULL, grant_later, (void *)(p.host + 16 * (i + 4)));
    if (c.how == 1)
        r = cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
    if (c.how == 2)
        r = cuFuncLoad(f);
    if (c.how == 3)
        r = cuKernelGetAttribute(&a, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0);
    if (c.how == 4 && (r = cuKernelGetFunction(&f, k)) == CUDA_SUCCESS)
        r = cuFuncLoad(f);
    uint64_t t1 = mono_ns();
    int after = fl_state(f);
    CUdeviceptr ack = p.dev + 2048 + 64 * i;
    void *args[] = {(void *)&ack};
    CUresult lr = cuLaunchKernel(c.lib ? (CUfunction)k : f, 1, 1, 1, 32, 1, 1, 0, s1, args, NULL);
    uint64_t t2 = mono_ns();
    pthread_join(th, NULL);
    CK(cuCtxSynchronize());
    const char *ml = getenv("CUDA_MODULE_LOADING");
    printf("{\"probe\":\"funcload\",\"case\":\"%s\",\"module_loading\":\"%s\",\"wait_on\":\"%s\","
           "\"state_before\":%d,\"call_rc\":%d,\"call_ms\":%.3f,\"state_after\":%d,\"launch_rc\":%d,"
           "\"launch_ms\":%.3f,\"grant_after_ms\":200,\"method\":\"host CLOCK_MONOTONIC around "
           "the call and the launch; state: cuFuncIsLoaded (1 loaded, 0 not, -1 no CUfunction)\"}\n",
           c.name, ml ? ml : "default", c.wait_other ? "other stream" : "same stream", before, (int)r,
           (double)(t1 - t0) / 1e6, after, (int)lr, (double)(t2 - t1) / 1e6);
}

static int funcload(const char *cubin)
{
    init_ctx();
    page p = map_page(shared_page());
    CUstream s1, s2;
    CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    static const lz_case cs[] = {
        {"module_launch", 0, 0, 0},         {"module_launch_other", 1, 0, 0},
        {"module_getattr", 0, 0, 1},        {"module_funcload", 0, 0, 2},
        {"library_launch", 0, 1, 0},        {"library_kernelgetattr", 0, 1, 3},
        {"library_getfunction_load", 0, 1, 4}, {"library_getfunction_load_other", 1, 1, 4},
    };
    for (int i = 0; i < (int)(sizeof(cs) / sizeof(cs[0])); i++)
        lz_run(i, cs[i], cubin, p, s1, s2);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); // each JSON line survives a timeout
    if (argc >= 2 && !strcmp(argv[1], "wake"))
        return wake(argc > 2 ? atoi(argv[2]) : 200);
    if (argc >= 2 && !strcmp(argv[1], "write64"))
        return write64(argc > 2 ? atoi(argv[2]) : 2000);
    if (argc >= 2 && !strcmp(argv[1], "twoproc"))
        return twoproc();
    if (argc >= 2 && !strcmp(argv[1], "lazyload"))
        return lazyload();
    if (argc >= 3 && !strcmp(argv[1], "funcload"))
        return funcload(argv[2]);
    fprintf(stderr, "usage: issue10_gate wake [N] | write64 [N] | twoproc | lazyload | "
                    "funcload CUBIN\n");
    return 2;
}
