/*
 * An HP "service" for tests/sched/test_sched_nvtx.c: marks its requests
 * with NVTX ranges (and has other ranges beside them), launches kernels on
 * the fake driver, and launches a CUDA graph inside a request. Linked
 * against the driver and the nvtx3 headers as an application would be;
 * the shim is preloaded by the test.
 *
 * usage: nvtx_app
 * Prints "ready" once the driver is initialised and synchronised once (the
 * shim then connects to the daemon in the background) and waits for a line on stdin; then runs
 * the phases below, prints what NVTX_INJECTION64_PATH is and "done", and
 * waits for another line before exiting, so that the test can read the
 * daemon's view while this client is still connected.
 *
 * Phases (each but A ends with a cuCtxSynchronize, so that a
 * learned-pattern client sees each as one request; W's is
 * cuCtxSynchronize_v2 found through cuGetProcAddress at CUDA 13.0, as the
 * CUDA 13 runtime's cudaDeviceSynchronize reaches the driver):
 *   A   kL, with no range and no synchronisation after it: a learned
 *       request (no explicit signal yet) that B's first range ends
 *   B   3 x mosaic:request { kA, mosaic:request (nested) { kB, kB } }
 *   O   "other" { kD, kD }, then a Start/End range "mosaic:request:x" { kD }
 *   C   Start("mosaic:request") { kC }, ended on another thread, ended twice
 *   D   PushEx(ASCII "mosaic:request") { kE x4 }
 *   G   mosaic:request { graph [kG1 (grid 2) -> kG2], kG3 }
 *   W   PushW(L"mosaic:request") { kW }
 *   X   mosaic:request pushed by libnvtx_early.so { kX }, a library whose
 *       NVTX initialised in its constructor, before the shim's
 */
#define _GNU_SOURCE 1
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

CUfunction fake_function_create(const char *name, int regs, int static_smem);
/* libnvtx_early.so */
void nvtx_early_request(void (*inside)(void));
const char *nvtx_early_env(void);

#define CHECK(x)                                                               \
    do {                                                                       \
        if ((x) != CUDA_SUCCESS) {                                             \
            fprintf(stderr, "nvtx_app: %s failed at line %d\n", #x, __LINE__); \
            exit(3);                                                           \
        }                                                                      \
    } while (0)

static void launch(const char *name, unsigned grid)
{
    CUfunction f = fake_function_create(name, 32, 0);
    CHECK(cuLaunchKernel(f, grid, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
}

static void sync_all(void)
{
    CHECK(cuCtxSynchronize());
}

static void sync_all_v2(void)
{
    CUresult (*f)(CUcontext) = NULL;
    CUdriverProcAddressQueryResult st;

    CHECK(cuGetProcAddress("cuCtxSynchronize_v2", (void **)&f, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                           &st));
    if (!f || st != CU_GET_PROC_ADDRESS_SUCCESS) {
        fprintf(stderr, "nvtx_app: no cuCtxSynchronize_v2 from cuGetProcAddress\n");
        exit(3);
    }
    CHECK(f(NULL));
}

static void *ender(void *arg)
{
    nvtxRangeEnd(*(nvtxRangeId_t *)arg);
    return NULL;
}

static void launch_x(void)
{
    launch("kX", 1);
}

static void wait_line(void)
{
    char line[64];
    if (!fgets(line, sizeof(line), stdin))
        exit(0);
}

int main(void)
{
    nvtxEventAttributes_t a;
    nvtxRangeId_t id;
    pthread_t th;
    CUgraph g;
    CUgraphNode n1, n2;
    CUgraphExec x;
    CUDA_KERNEL_NODE_PARAMS p;
    const char *env;

    CHECK(cuInit(0));
    /* A synchronisation with nothing launched: the shim's first call into
     * its arbiter link, which starts connecting in the background. */
    sync_all();
    printf("ready\n");
    fflush(stdout);
    wait_line();

    launch("kL", 1); /* A */

    for (int i = 0; i < 3; i++) { /* B */
        nvtxRangePushA("mosaic:request");
        launch("kA", 1);
        nvtxRangePushA("mosaic:request");
        launch("kB", 1);
        launch("kB", 1);
        nvtxRangePop();
        sync_all();
        nvtxRangePop();
    }

    nvtxRangePushA("other"); /* O */
    launch("kD", 1);
    launch("kD", 1);
    sync_all();
    nvtxRangePop();
    id = nvtxRangeStartA("mosaic:request:x");
    launch("kD", 1);
    nvtxRangeEnd(id);
    sync_all();

    id = nvtxRangeStartA("mosaic:request"); /* C */
    launch("kC", 1);
    if (pthread_create(&th, NULL, ender, &id) != 0)
        return 4;
    pthread_join(th, NULL);
    nvtxRangeEnd(id);
    sync_all();

    memset(&a, 0, sizeof(a)); /* D */
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "mosaic:request";
    nvtxRangePushEx(&a);
    for (int i = 0; i < 4; i++)
        launch("kE", 1);
    nvtxRangePop();
    sync_all();

    CHECK(cuGraphCreate(&g, 0)); /* G */
    memset(&p, 0, sizeof(p));
    p.gridDimX = 2;
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 32;
    p.blockDimY = p.blockDimZ = 1;
    p.func = fake_function_create("kG1", 32, 0);
    CHECK(cuGraphAddKernelNode(&n1, g, NULL, 0, &p));
    p.gridDimX = 1;
    p.func = fake_function_create("kG2", 32, 0);
    CHECK(cuGraphAddKernelNode(&n2, g, &n1, 1, &p));
    CHECK(cuGraphInstantiateWithFlags(&x, g, 0));
    nvtxRangePushA("mosaic:request");
    CHECK(cuGraphLaunch(x, NULL));
    launch("kG3", 1);
    nvtxRangePop();
    sync_all();

    nvtxRangePushW(L"mosaic:request"); /* W */
    launch("kW", 1);
    nvtxRangePop();
    sync_all_v2();

    nvtx_early_request(launch_x); /* X */
    sync_all();

    env = getenv("NVTX_INJECTION64_PATH");
    printf("env %s\nearly-env %s\ndone\n", env ? env : "(unset)", nvtx_early_env());
    fflush(stdout);
    wait_line();
    CHECK(cuGraphExecDestroy(x));
    CHECK(cuGraphDestroy(g));
    return 0;
}
