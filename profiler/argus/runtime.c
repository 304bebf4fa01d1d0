/*
 * Arming instrumented launches: one device buffer per launch, found by the
 * kernel through the module's __constant__ descriptor argus_desc_v1, so
 * that no kernel signature changes.
 *
 * Driver assumptions (tested against the CUDA 13.0 headers and driver 580
 * on the H200 by scripts/gpu/argus_check.sh): cuModuleGetGlobal_v2 returns
 * the address and size of a __constant__ variable, and cuMemcpyHtoD_v2 into
 * that address is visible to the next launch on any stream of the context,
 * because the copy is synchronous with respect to the host. The runtime
 * uses the context current on the calling thread.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus_internal.h"

/* ---- the real driver, through dlopen ----------------------------------- */

typedef int (*fn_alloc)(uint64_t *, size_t);
typedef int (*fn_free)(uint64_t);
typedef int (*fn_memset)(uint64_t, unsigned char, size_t);
typedef int (*fn_htod)(uint64_t, const void *, size_t);
typedef int (*fn_dtoh)(void *, uint64_t, size_t);
typedef int (*fn_global)(uint64_t *, size_t *, void *, const char *);

typedef struct cuda_fns {
    fn_alloc alloc;
    fn_free free_;
    fn_memset memset_;
    fn_htod htod;
    fn_dtoh dtoh;
    fn_global global;
} cuda_fns;

static int cu_alloc(void *c, uint64_t *d, size_t b) { return ((cuda_fns *)c)->alloc(d, b); }
static int cu_free(void *c, uint64_t d) { return ((cuda_fns *)c)->free_(d); }
static int cu_memset0(void *c, uint64_t d, size_t b) { return ((cuda_fns *)c)->memset_(d, 0, b); }
static int cu_htod(void *c, uint64_t d, const void *s, size_t b) { return ((cuda_fns *)c)->htod(d, s, b); }
static int cu_dtoh(void *c, void *d, uint64_t s, size_t b) { return ((cuda_fns *)c)->dtoh(d, s, b); }
static int cu_global(void *c, void *m, const char *n, uint64_t *d, size_t *b)
{
    return ((cuda_fns *)c)->global(d, b, m, n);
}

/* Resolved once per process (pthread_once, so that threads arming launches
 * at the same time do not race on the table); the driver stays loaded and
 * the handle is never closed, so that the pointers stay valid. */
static cuda_fns fns;
static const char *fns_missing; /* what failed, NULL when all resolved */
static char fns_dlerror[256];
static pthread_once_t fns_once = PTHREAD_ONCE_INIT;

static void resolve_fns(void)
{
    static const char *const names[] = {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemsetD8_v2",
                                        "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
                                        "cuModuleGetGlobal_v2"};
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(fns_dlerror, sizeof(fns_dlerror), "%s", e ? e : "unknown error");
        fns_missing = "libcuda.so.1";
        return;
    }
    void *p[6];
    for (int i = 0; i < 6; i++) {
        if ((p[i] = dlsym(h, names[i])) == NULL) {
            fns_missing = names[i];
            return;
        }
    }
    /* Function pointers from dlsym: POSIX guarantees the conversion. */
    memcpy(&fns.alloc, &p[0], sizeof(p[0]));
    memcpy(&fns.free_, &p[1], sizeof(p[1]));
    memcpy(&fns.memset_, &p[2], sizeof(p[2]));
    memcpy(&fns.htod, &p[3], sizeof(p[3]));
    memcpy(&fns.dtoh, &p[4], sizeof(p[4]));
    memcpy(&fns.global, &p[5], sizeof(p[5]));
}

int argus_driver_cuda(argus_driver *drv, char *msg, size_t msglen)
{
    if (drv == NULL)
        return ARGUS_EINVAL;
    pthread_once(&fns_once, resolve_fns);
    if (fns_missing != NULL && strcmp(fns_missing, "libcuda.so.1") == 0)
        return argus__fail(ARGUS_EDRIVER, msg, msglen,
                           "argus: cannot load libcuda.so.1 (%s); run on a machine "
                           "with the NVIDIA driver", fns_dlerror);
    if (fns_missing != NULL)
        return argus__fail(ARGUS_EDRIVER, msg, msglen,
                           "argus: libcuda.so.1 has no %s; the driver is older "
                           "than CUDA 3.2", fns_missing);
    drv->ctx = &fns;
    drv->mem_alloc = cu_alloc;
    drv->mem_free = cu_free;
    drv->memset0 = cu_memset0;
    drv->htod = cu_htod;
    drv->dtoh = cu_dtoh;
    drv->get_global = cu_global;
    return 0;
}

/* ---- arming ------------------------------------------------------------- */

/* CUDA_ERROR_NOT_FOUND: the symbol is not in the module. */
#define ARGUS_CU_NOT_FOUND 500

int argus__launch_plan(const uint32_t grid[3], const uint32_t block[3], uint32_t cap,
                       argus_buf_header *out, size_t *out_bytes, char *msg, size_t msglen)
{
    if (cap == 0 || cap > ARGUS_MAX_CAP || (cap & (cap - 1)) != 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "argus: %u records per warp: use a power of "
                           "two from 1 to %u", cap, ARGUS_MAX_CAP);
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    uint64_t ctas = (uint64_t)grid[0] * grid[1] * grid[2];
    uint64_t wpc = (threads + 31) / 32;
    if (threads == 0 || threads > 1024 || ctas == 0 || ctas * wpc > ARGUS_MAX_SLOTS)
        return argus__fail(ARGUS_ELIMIT, msg, msglen,
                           "argus: grid %ux%ux%u x block %ux%ux%u: %llu warps; "
                           "Argus traces 1 to %u warps with 1 to 1024 threads per CTA",
                           grid[0], grid[1], grid[2], block[0], block[1], block[2],
                           (unsigned long long)(ctas * wpc), ARGUS_MAX_SLOTS);
    argus_buf_header h = {.magic = ARGUS_BUF_MAGIC,
                          .version = ARGUS_FORMAT_VERSION,
                          .header_bytes = ARGUS_HEADER_BYTES,
                          .nslots = (uint32_t)(ctas * wpc),
                          .cap = cap,
                          .warps_per_cta = (uint32_t)wpc};
    memcpy(h.grid, grid, sizeof(h.grid));
    memcpy(h.block, block, sizeof(h.block));
    size_t stride = ARGUS_SLOT_HEADER_BYTES + (size_t)cap * 8u;
    size_t bytes = ARGUS_HEADER_BYTES + (size_t)h.nslots * stride;
    *out = h;
    *out_bytes = bytes;
    return 0;
}

int argus_launch_arm(const argus_driver *drv, void *module, const uint32_t grid[3],
                     const uint32_t block[3], uint32_t cap, argus_launch *l, char *msg,
                     size_t msglen)
{
    if (l == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "argus_launch_arm: l is NULL");
    memset(l, 0, sizeof(*l));
    if (drv == NULL || grid == NULL || block == NULL || drv->mem_alloc == NULL ||
        drv->get_global == NULL || drv->htod == NULL || drv->memset0 == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "argus_launch_arm: the driver table or the launch shape is missing");
    argus_buf_header h;
    size_t bytes;
    int rc = argus__launch_plan(grid, block, cap, &h, &bytes, msg, msglen);
    if (rc != 0)
        return rc;
    uint64_t desc;
    size_t desc_bytes = 0;
    int cr = drv->get_global(drv->ctx, module, ARGUS_DESC_SYMBOL, &desc, &desc_bytes);
    if (cr == ARGUS_CU_NOT_FOUND)
        return argus__fail(ARGUS_ENOTINSTR, msg, msglen,
                           "argus: the module has no %s: build its kernels with "
                           "-DARGUS_ENABLE and #include <argus/region.cuh>",
                           ARGUS_DESC_SYMBOL);
    if (cr != 0)
        return argus__fail(ARGUS_EDRIVER, msg, msglen,
                           "argus: cuModuleGetGlobal(%s) failed with CUresult %d",
                           ARGUS_DESC_SYMBOL, cr);
    if (desc_bytes != sizeof(argus_device_desc))
        return argus__fail(ARGUS_EFORMAT, msg, msglen,
                           "argus: %s is %zu bytes, this runtime expects %zu; rebuild "
                           "the kernel with this Argus's region.cuh",
                           ARGUS_DESC_SYMBOL, desc_bytes, sizeof(argus_device_desc));
    uint64_t buf;
    if ((cr = drv->mem_alloc(drv->ctx, &buf, bytes)) != 0)
        return argus__fail(ARGUS_EDRIVER, msg, msglen,
                           "argus: cuMemAlloc of %zu bytes (%u warps x %u records) "
                           "failed with CUresult %d; lower the per-warp capacity",
                           bytes, h.nslots, cap, cr);
    argus_device_desc dd = {.slots = buf + ARGUS_HEADER_BYTES,
                            .nslots = h.nslots,
                            .cap_mask = cap - 1,
                            .warps_per_cta = h.warps_per_cta,
                            .magic = ARGUS_BUF_MAGIC};
    l->drv = *drv;
    l->buf = buf;
    l->bytes = bytes;
    l->desc = desc;
    l->hdr = h;
    if ((cr = drv->memset0(drv->ctx, buf, bytes)) != 0 ||
        (cr = drv->htod(drv->ctx, buf, &h, sizeof(h))) != 0 ||
        (cr = drv->htod(drv->ctx, desc, &dd, sizeof(dd))) != 0) {
        argus_launch_release(l);
        return argus__fail(ARGUS_EDRIVER, msg, msglen,
                           "argus: setting up the region buffer failed with CUresult %d", cr);
    }
    return 0;
}

int argus_launch_collect(argus_launch *l, void **raw, size_t *len, char *msg, size_t msglen)
{
    if (l == NULL || raw == NULL || len == NULL || l->buf == 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "argus_launch_collect: the launch was not armed");
    *raw = NULL;
    *len = 0;
    void *host = malloc(l->bytes);
    if (host == NULL)
        return argus__fail(ARGUS_ENOMEM, msg, msglen,
                           "argus: no host memory for a %zu-byte region buffer", l->bytes);
    int cr = l->drv.dtoh(l->drv.ctx, host, l->buf, l->bytes);
    /* Disarm first, whatever the copy did: a later launch of the module must
     * not write into a buffer that is about to be freed. */
    argus_device_desc off = {0};
    int cr2 = l->drv.htod(l->drv.ctx, l->desc, &off, sizeof(off));
    if (cr != 0 || cr2 != 0) {
        free(host);
        return argus__fail(ARGUS_EDRIVER, msg, msglen,
                           "argus: reading back the region buffer failed (CUresult %d, "
                           "disarm %d); did the kernel fault?", cr, cr2);
    }
    *raw = host;
    *len = l->bytes;
    return 0;
}

void argus_launch_release(argus_launch *l)
{
    if (l == NULL || l->buf == 0)
        return;
    /* A launch released without a collect is disarmed here, so that the
     * descriptor never points at freed memory. */
    argus_device_desc off = {0};
    if (l->drv.htod)
        l->drv.htod(l->drv.ctx, l->desc, &off, sizeof(off));
    if (l->drv.mem_free)
        l->drv.mem_free(l->drv.ctx, l->buf);
    l->buf = 0;
}
