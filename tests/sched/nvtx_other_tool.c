/*
 * Another NVTX tool (standing in for nsys) for tests/sched/test_sched_nvtx.c:
 * an injection library that appends "push NAME" for each nvtxRangePushA to
 * the file named by NVTX_OTHER_TOOL_OUT.
 */
#include <stdio.h>
#include <stdlib.h>

#define NVTX_NO_IMPL 1
#include <nvtx3/nvToolsExt.h>

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

static int NVTX_API push_a(const char *m)
{
    const char *path = getenv("NVTX_OTHER_TOOL_OUT");
    FILE *fp = path ? fopen(path, "a") : NULL;

    if (fp) {
        fprintf(fp, "push %s\n", m ? m : "(null)");
        fclose(fp);
    }
    return 0;
}

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable t = NULL;
    unsigned int n = 0;

    if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) ||
        n <= NVTX_CBID_CORE_RangePushA)
        return 0;
    *t[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)push_a;
    return 1;
}
