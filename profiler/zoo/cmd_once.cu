/*
 * mosaic-zoo once: one launch of each selected variant, for a profiler
 * (mosaic-profile capture, ncu) to see every zoo kernel exactly once.
 */
#include <cuda_runtime.h>
#include <stdlib.h>

#include "zoo.h"
#include "zoo_cmds.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"

/*
 * One launch of each selected variant, nothing else on the GPU: the program
 * a profiler (mosaic-profile capture, ncu) runs to see every zoo kernel
 * exactly once. Setup and teardown work is not launched between the marks
 * the record gives, but initialisation kernels of setup do run.
 */
int cmd_once(void)
{
    unsigned char *sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1);
    cudaStream_t s;
    int i;

    if (!sel || cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        error_record("cannot create a stream or out of host memory");
        free(sel);
        return -1;
    }
    select_variants(g_opt.variants, sel);
    for (i = 0; i < zoo_n_variants && !should_stop(); i++) {
        struct zoo_inst in;
        double setup_s = 0;
        int ok;

        if (!sel[i])
            continue;
        clear_err();
        ok = inst_setup(&in, &zoo_variants[i], &setup_s) == 0 &&
             launch_one(&in, s) == 0 &&
             cudaStreamSynchronize(s) == cudaSuccess;
        if (!ok)
            cudaGetLastError();
        j_begin("once");
        j_str("variant", zoo_variants[i].name);
        j_result(ok);
        j_end();
        inst_teardown(&in);
    }
    cudaStreamDestroy(s);
    free(sel);
    return 0;
}
