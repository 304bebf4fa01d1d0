/*
 * Writes a raw region buffer shaped like tests/argus/async_cpasync.cu's
 * kernel (prologue; mainloop with ARGUS_ITER(s), load and mma per step;
 * epilogue), through the device model, with clocks chosen so that the
 * synthesis tests know every answer:
 *   gen_async_raw OUT [ITER EXTRA]
 * 2 CTAs x 4 warps, 8 steps; warp w's load at step s takes 300 + 10 s +
 * 20 w cycles (the mean over the 8 warps at step s is 330 + 10 s), mma
 * 1000; with ITER and EXTRA every warp's load at step ITER takes EXTRA
 * cycles more (a forced-completion probe of that step), so probe minus
 * base at ITER is EXTRA exactly and 0 at every other step. Globaltimer
 * anchors at 1.98 GHz.
 */
#include <stdio.h>
#include <stdlib.h>

#include "devmodel.h"

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: gen_async_raw OUT [ITER EXTRA]\n");
        return 2;
    }
    long probe_iter = argc == 4 ? strtol(argv[2], NULL, 10) : -1;
    unsigned long extra = argc == 4 ? strtoul(argv[3], NULL, 10) : 0;
    dm_buf b;
    if (dm_init(&b, 2, 128, 64) != 0)
        return 1;
    uint32_t pro = argus_region_id("prologue", 0), main_ = argus_region_id("mainloop", 0);
    uint32_t load = argus_region_id("load", main_), mma = argus_region_id("mma", main_);
    uint32_t epi = argus_region_id("epilogue", 0);
    for (uint32_t c = 0; c < 2; c++) {
        for (uint32_t wi = 0; wi < 4; wi++) {
            dm_warp w;
            dm_begin(&w, &b, c, wi, 3 + c, 5000000 + 700 * c, 123456 * (c + 1), 1.98);
            dm_emit(&w, ARGUS_REC_BEGIN, pro, 4);
            dm_emit(&w, ARGUS_REC_END, pro, 200);
            dm_emit(&w, ARGUS_REC_BEGIN, main_, 2);
            for (uint32_t s = 0; s < 8; s++) {
                uint64_t lc = 300 + 10 * s + 20 * wi + ((long)s == probe_iter ? extra : 0);
                dm_emit(&w, ARGUS_REC_ITER, s, 2);
                dm_emit(&w, ARGUS_REC_BEGIN, load, 2);
                dm_emit(&w, ARGUS_REC_END, load, lc);
                dm_emit(&w, ARGUS_REC_BEGIN, mma, 2);
                dm_emit(&w, ARGUS_REC_END, mma, 1000);
            }
            dm_emit(&w, ARGUS_REC_END, main_, 2);
            dm_emit(&w, ARGUS_REC_BEGIN, epi, 2);
            dm_emit(&w, ARGUS_REC_END, epi, 60);
            dm_end(&w, 8);
        }
    }
    return dm_write(&b, argv[1]) == 0 ? 0 : 1;
}
