/*
 * Writes a raw region buffer with the structure of kernel_known.cu (what
 * the GPU would write for 2 CTAs of 64 threads), through the device model,
 * for the CLI test: gen_raw OUT [CAP]. A CAP below 20 makes the rings wrap.
 */
#include <stdio.h>
#include <stdlib.h>

#include "devmodel.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    uint32_t cap = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 32;
    dm_buf b;
    if (dm_init(&b, 2, 64, cap) != 0)
        return 1;
    uint32_t outer = argus_region_id("outer", 0);
    uint32_t load = argus_region_id("load", outer), comp = argus_region_id("compute", outer);
    uint32_t tail = argus_region_id("tail", 0);
    for (uint32_t c = 0; c < 2; c++) {
        for (uint32_t wi = 0; wi < 2; wi++) {
            dm_warp w;
            dm_begin(&w, &b, c, wi, 10 + c, 1000000 + 500 * c, 77777 * (c + 1), 1.98);
            dm_emit(&w, ARGUS_REC_ROLE, argus_region_id(wi == 0 ? "producer" : "consumer", 0), 4);
            dm_emit(&w, ARGUS_REC_BEGIN, outer, 4);
            for (uint32_t i = 0; i < 4; i++) {
                dm_emit(&w, ARGUS_REC_ITER, i, 2);
                dm_emit(&w, ARGUS_REC_BEGIN, load, 2);
                dm_emit(&w, ARGUS_REC_END, load, 400 + 100 * wi);
                dm_emit(&w, ARGUS_REC_BEGIN, comp, 2);
                dm_emit(&w, ARGUS_REC_END, comp, 1000);
            }
            dm_emit(&w, ARGUS_REC_END, outer, 2);
            dm_emit(&w, ARGUS_REC_BEGIN, tail, 2);
            dm_emit(&w, ARGUS_REC_END, tail, 50);
            dm_end(&w, 8);
        }
    }
    return dm_write(&b, argv[1]) == 0 ? 0 : 1;
}
