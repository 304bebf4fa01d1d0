/*
 * Probe: does cuGetProcAddress hand back exactly the exported symbol of the
 * ABI variant it resolves to? libmosaic.so relies on that (preload/driver.c).
 * Prints one line per (symbol, version, flags) with the exported name whose
 * address matched, or "NO MATCH".
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);

int main(void)
{
    static const char *exports[] = {
        "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
        "cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel",
        "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz",
        "cuGetProcAddress", "cuGetProcAddress_v2", "cuStreamBeginCapture",
        "cuStreamBeginCapture_ptsz", "cuStreamBeginCapture_v2",
        "cuStreamBeginCapture_v2_ptsz", "cuStreamEndCapture",
        "cuStreamEndCapture_ptsz", "cuGraphInstantiate", "cuGraphInstantiate_v2",
        "cuGraphInstantiateWithFlags", "cuGraphInstantiateWithParams",
        "cuGraphInstantiateWithParams_ptsz", "cuGraphExecUpdate",
        "cuGraphExecUpdate_v2", "cuLibraryGetKernel", "cuStreamBeginCaptureToGraph",
        "cuStreamBeginCaptureToGraph_ptsz", "cuGraphExecDestroy", "cuLibraryEnumerateKernels"};
    static const char *queries[] = {"cuLaunchKernel", "cuLaunchKernelEx",
        "cuLaunchCooperativeKernel", "cuGraphLaunch", "cuGetProcAddress",
        "cuStreamBeginCapture", "cuStreamEndCapture", "cuGraphInstantiate",
        "cuGraphInstantiateWithFlags", "cuGraphInstantiateWithParams",
        "cuGraphExecUpdate", "cuLibraryGetKernel", "cuStreamBeginCaptureToGraph",
        "cuGraphExecDestroy"};
    static const int versions[] = {4000, 7000, 10010, 11000, 11060, 12000, 12040, 13000};
    static const cuuint64_t flags[] = {CU_GET_PROC_ADDRESS_DEFAULT,
        CU_GET_PROC_ADDRESS_LEGACY_STREAM, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};
    const size_t ne = sizeof(exports) / sizeof(exports[0]);
    void *addr[64];
    int bad = 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    getproc_fn gp;

    if (!h) { printf("no libcuda: %s\n", dlerror()); return 1; }
    gp = (getproc_fn)dlsym(h, "cuGetProcAddress_v2");
    for (size_t i = 0; i < ne; i++) {
        addr[i] = dlsym(h, exports[i]);
        printf("export %-36s %p\n", exports[i], addr[i]);
    }
    for (size_t q = 0; q < sizeof(queries) / sizeof(queries[0]); q++)
        for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++)
            for (size_t f = 0; f < 3; f++) {
                void *p = NULL;
                CUdriverProcAddressQueryResult st = 0;
                CUresult r = gp(queries[q], &p, versions[v], flags[f], &st);
                const char *match = p ? "NO MATCH" : "-";
                for (size_t i = 0; p && i < ne; i++)
                    if (addr[i] == p) { match = exports[i]; break; }
                if (p && strcmp(match, "NO MATCH") == 0) bad++;
                printf("query %-30s v%-5d f%llu r=%d st=%d -> %s\n", queries[q],
                       versions[v], (unsigned long long)flags[f], (int)r, (int)st, match);
            }
    printf("IDENTITY_MISMATCHES %d\n", bad);
    return 0;
}
