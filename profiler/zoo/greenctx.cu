/*
 * Green contexts for the zoo harness (see greenctx.h).
 *
 * Steps, per the driver API: read the device's SM resource, split it by
 * count, make a descriptor per resulting resource, make a green context per
 * descriptor, and create streams in it. Runtime kernels launched on such a
 * stream (cast to cudaStream_t) run only on the context's SMs; that was
 * measured with %smid on the H200 (driver 580.159.04, CUDA 13.0), and the
 * harness checks it again at every run (the "stream_check" records of
 * profiler/data/h200/, zoo_streams.cu).
 */
#include "greenctx.h"

#include <stdio.h>
#include <string.h>

static void gc__err(char *err, size_t errlen, const char *what, CUresult r)
{
    const char *name = NULL;
    const char *str = NULL;

    if (!err || !errlen)
        return;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = "unknown CUresult";
    if (cuGetErrorString(r, &str) != CUDA_SUCCESS)
        str = "";
    snprintf(err, errlen, "%s: %s (%d) %s", what, name, (int)r, str);
}

/* cuInit is cheap after the runtime has initialised the driver; calling it
 * keeps these functions usable before any runtime call too. */
static CUresult gc__device(int device, CUdevice *dev, char *err, size_t errlen)
{
    CUresult r = cuInit(0);

    if (r != CUDA_SUCCESS) {
        gc__err(err, errlen, "cuInit", r);
        return r;
    }
    r = cuDeviceGet(dev, device);
    if (r != CUDA_SUCCESS)
        gc__err(err, errlen, "cuDeviceGet", r);
    return r;
}

int gc_query(int device, struct gc_info *info, char *err, size_t errlen)
{
    CUdevice dev;
    CUdevResource all;
    CUresult r;

    memset(info, 0, sizeof(*info));
    r = gc__device(device, &dev, err, errlen);
    if (r != CUDA_SUCCESS)
        return (int)r;
    memset(&all, 0, sizeof(all));
    r = cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM);
    if (r != CUDA_SUCCESS) {
        gc__err(err, errlen, "cuDeviceGetDevResource(SM)", r);
        return (int)r;
    }
    info->sm_count = (int)all.sm.smCount;
    info->min_partition = (int)all.sm.minSmPartitionSize;
    info->alignment = (int)all.sm.smCoscheduledAlignment;
    return 0;
}

/* Makes a green context from one resource of a split and reads back the SM
 * count the context itself reports. */
static CUresult gc__make(CUdevice dev, CUdevResource *res, struct gc_part *p,
                         const char *which, char *err, size_t errlen)
{
    CUdevResourceDesc desc = NULL;
    CUdevResource got;
    CUresult r;
    char what[96];

    p->sm_split = (int)res->sm.smCount;
    r = cuDevResourceGenerateDesc(&desc, res, 1);
    if (r != CUDA_SUCCESS) {
        snprintf(what, sizeof(what), "cuDevResourceGenerateDesc(%s, %u SMs)",
                 which, res->sm.smCount);
        gc__err(err, errlen, what, r);
        return r;
    }
    /* CU_GREEN_CTX_DEFAULT_STREAM is documented as required. */
    r = cuGreenCtxCreate(&p->ctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
    if (r != CUDA_SUCCESS) {
        p->ctx = NULL;
        snprintf(what, sizeof(what), "cuGreenCtxCreate(%s, %u SMs)", which,
                 res->sm.smCount);
        gc__err(err, errlen, what, r);
        return r;
    }
    memset(&got, 0, sizeof(got));
    r = cuGreenCtxGetDevResource(p->ctx, &got, CU_DEV_RESOURCE_TYPE_SM);
    if (r != CUDA_SUCCESS) {
        snprintf(what, sizeof(what), "cuGreenCtxGetDevResource(%s)", which);
        gc__err(err, errlen, what, r);
        cuGreenCtxDestroy(p->ctx);
        p->ctx = NULL;
        return r;
    }
    p->sm_ctx = (int)got.sm.smCount;
    return CUDA_SUCCESS;
}

int gc_create(int device, int min_count, struct gc_part *group,
              struct gc_part *rest, char *err, size_t errlen)
{
    CUdevice dev;
    CUdevResource all;
    CUdevResource grp;
    CUdevResource rem;
    unsigned int nb = 1;
    CUresult r;

    memset(group, 0, sizeof(*group));
    if (rest)
        memset(rest, 0, sizeof(*rest));
    group->sm_requested = min_count;
    if (min_count <= 0) {
        snprintf(err, errlen, "green context: SM count %d must be positive",
                 min_count);
        return (int)CUDA_ERROR_INVALID_VALUE;
    }
    r = gc__device(device, &dev, err, errlen);
    if (r != CUDA_SUCCESS)
        return (int)r;
    memset(&all, 0, sizeof(all));
    memset(&grp, 0, sizeof(grp));
    memset(&rem, 0, sizeof(rem));
    r = cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM);
    if (r != CUDA_SUCCESS) {
        gc__err(err, errlen, "cuDeviceGetDevResource(SM)", r);
        return (int)r;
    }
    /* One group of >= min_count SMs (the driver rounds up to its
     * granularity); everything else lands in rem. */
    r = cuDevSmResourceSplitByCount(&grp, &nb, &all, &rem, 0,
                                    (unsigned int)min_count);
    if (r != CUDA_SUCCESS) {
        gc__err(err, errlen, "cuDevSmResourceSplitByCount", r);
        return (int)r;
    }
    if (nb != 1) {
        snprintf(err, errlen,
                 "cuDevSmResourceSplitByCount(minCount=%d) made %u groups of "
                 "%u SMs, wanted 1", min_count, nb, grp.sm.smCount);
        return (int)CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    }
    r = gc__make(dev, &grp, group, "group", err, errlen);
    if (r != CUDA_SUCCESS)
        return (int)r;
    if (!rest)
        return 0;
    if (rem.sm.smCount == 0) {
        snprintf(err, errlen,
                 "green context: no SMs left for the remainder after a group "
                 "of %u (asked %d of %d)", grp.sm.smCount, min_count,
                 (int)all.sm.smCount);
        gc_destroy(group);
        return (int)CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    }
    r = gc__make(dev, &rem, rest, "remainder", err, errlen);
    if (r != CUDA_SUCCESS) {
        gc_destroy(group);
        return (int)r;
    }
    return 0;
}

int gc_stream_create(const struct gc_part *p, cudaStream_t *s, char *err,
                     size_t errlen)
{
    CUstream cs = NULL;
    CUresult r;

    *s = NULL;
    /* CU_STREAM_NON_BLOCKING is required by cuGreenCtxStreamCreate; it also
     * keeps the stream from syncing with the legacy default stream, which the
     * families' check() functions may use. */
    r = cuGreenCtxStreamCreate(&cs, p->ctx, CU_STREAM_NON_BLOCKING, 0);
    if (r != CUDA_SUCCESS) {
        gc__err(err, errlen, "cuGreenCtxStreamCreate", r);
        return (int)r;
    }
    *s = (cudaStream_t)cs;
    return 0;
}

void gc_stream_destroy(cudaStream_t s)
{
    if (s)
        cuStreamDestroy((CUstream)s);
}

void gc_destroy(struct gc_part *p)
{
    if (p->ctx)
        cuGreenCtxDestroy(p->ctx);
    p->ctx = NULL;
}
