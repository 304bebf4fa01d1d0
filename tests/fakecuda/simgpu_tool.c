/*
 * simgpu: creates, inspects and removes a simulated GPU's shared segment
 * (docs/simgpu.md). The first process that names a segment in MOSAIC_SIMGPU
 * creates it too; the tool is for starting a run from a clean state and for
 * cleaning up after it, since a segment outlives its processes (as the MPS
 * server outlives its clients).
 */
#include "simgpu.h"

#include <stdio.h>
#include <string.h>

static int usage(FILE *to)
{
    fprintf(to,
            "usage: simgpu create NAME   make segment NAME, loading the data "
            "files\n"
            "       simgpu show NAME     print its state as JSON\n"
            "       simgpu rm NAME       remove it\n"
            "Data files and time scale come from MOSAIC_SIMGPU_PROFILES, "
            "MOSAIC_SIMGPU_VARIANTS,\nMOSAIC_SIMGPU_CORUN and "
            "MOSAIC_SIMGPU_SCALE (see docs/simgpu.md).\n");
    return to == stdout ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 ||
                      strcmp(argv[1], "--help") == 0))
        return usage(stdout);
    if (argc != 3)
        return usage(stderr);
    const char *cmd = argv[1], *name = argv[2];
    if (strcmp(cmd, "create") == 0)
        return sim_segment_create(name) == 0 ? 0 : 1;
    if (strcmp(cmd, "rm") == 0)
        return sim_segment_remove(name) == 0 ? 0 : 1;
    if (strcmp(cmd, "show") == 0) {
        struct sim_info i;
        if (sim_segment_info(name, &i) != 0)
            return 1;
        printf("{\"segment\": \"%s\", \"version\": %u, \"scale\": %g, "
               "\"jitter_ns\": %.0f, \"profiled_kernels\": %u, "
               "\"variants\": %u, \"measured_ordered_pairs\": %u, "
               "\"streams_used\": %u, \"events_used\": %u, \"running\": %u, "
               "\"kernels_launched\": %llu, \"kernels_completed\": %llu}\n",
               name, i.version, i.scale, i.jitter_ns, i.kernels, i.variants,
               i.pairs, i.streams_used, i.events_used, i.running,
               (unsigned long long)i.launched,
               (unsigned long long)i.completed);
        return 0;
    }
    fprintf(stderr, "simgpu: unknown command \"%s\"\n", cmd);
    return usage(stderr);
}
