/*
 * Green contexts for the zoo harness: SM partitions made with the driver
 * API, used through streams that the CUDA runtime launches on.
 *
 * Written against CUDA 13.0's cuda.h for an H200 (sm_90, 132 SMs, driver
 * 580.159.04), where minSmPartitionSize and smCoscheduledAlignment are 8 and
 * a request for 66 SMs yields 72. Green contexts need driver and toolkit
 * 12.4 or later; cuGreenCtxStreamCreate needs 12.5 or later. The data: the
 * "meta" record of every run in profiler/data/h200/ (green_min_partition,
 * green_alignment) and its "stream_check" records (SMs provisioned and
 * reached, e.g. splits/time.jsonl); docs/dataset.md describes the files.
 */
#ifndef MOSAIC_ZOO_GREENCTX_H
#define MOSAIC_ZOO_GREENCTX_H

#include <cuda.h>
#include <cuda_runtime.h>
#include <stddef.h>

/* What the device says about splitting its SMs. */
struct gc_info {
    int sm_count;        /* SMs in the device resource */
    int min_partition;   /* sm.minSmPartitionSize */
    int alignment;       /* sm.smCoscheduledAlignment */
};

/* One SM partition and the green context made from it. */
struct gc_part {
    CUgreenCtx ctx;
    int sm_requested;    /* what the caller asked for (0 for a remainder) */
    int sm_split;        /* sm.smCount of the resource the split produced */
    int sm_ctx;          /* sm.smCount that the green context reports */
};

/* Reads the device's SM resource. Returns 0 or a CUresult; err says why. */
int gc_query(int device, struct gc_info *info, char *err, size_t errlen);

/*
 * Splits the device's SMs into one group of at least min_count SMs and the
 * remainder, and makes a green context for the group and, when rest is not
 * NULL, another for the remainder (both from the same split, so their SM
 * sets are disjoint). Returns 0 or a CUresult; on failure nothing is left
 * allocated.
 */
int gc_create(int device, int min_count, struct gc_part *group,
              struct gc_part *rest, char *err, size_t errlen);

/* A non-blocking stream whose kernels run only on the part's SMs. */
int gc_stream_create(const struct gc_part *p, cudaStream_t *s, char *err,
                     size_t errlen);
void gc_stream_destroy(cudaStream_t s);

/* Destroys the green context; destroy its streams first. */
void gc_destroy(struct gc_part *p);

#endif /* MOSAIC_ZOO_GREENCTX_H */
