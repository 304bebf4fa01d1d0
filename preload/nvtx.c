/*
 * HP requests from NVTX: libmosaic.so is the program's NVTX injection
 * library (core/nvtx_inject.c), and a range named exactly "mosaic:request"
 * is one HP request: nvtxRangePushA/Pop, nvtxRangeStartA/End and their W
 * and Ex forms with a text message, so torch.cuda.nvtx.range (push/pop)
 * works unchanged. Every other range is ignored, and nothing else of NVTX
 * is assigned, so NVTX keeps its own no-ops for marks, domains and names.
 *
 * Getting loaded without the user setting anything: in an HP process the
 * constructor points NVTX_INJECTION64_PATH at this library, only if it is
 * unset (never over nsys or another tool: then NVTX ranges go to that tool
 * and requests come from the API or the learned pattern, said once at
 * MOSAIC_LOG=info). A library whose NVTX initialised before the
 * constructor ran (an NVTX call in another library's constructor: those run
 * before a preloaded library's) found no injection, and NVTX never looks
 * again, so its ranges are not seen. A user who sets
 * NVTX_INJECTION64_PATH to this library reaches it too: such a copy then
 * initialises through us before the constructor (no client yet: its hooks
 * wait) and its ranges count from the constructor on; the shim takes the
 * variable as its own, not as another tool's.
 *
 * Doing nothing measurable elsewhere: with any role but hp, or in
 * pass-through, the variable is not set and every NVTX copy that asks is
 * declined, which leaves its calls as NVTX's no-ops. Where this library is
 * only dlopened by NVTX (a child that inherited the variable, not
 * LD_PRELOAD) the load fails on glibc 2.36 (initial-exec TLS, kcache.c);
 * if it loads, it declines too, as it is not in front of the program.
 *
 * Nesting and threads: push/pop requests are per thread and the outermost
 * "mosaic:request" range of a thread is the request (a nested one is part
 * of it). Start/End ranges are requests of their own and may end on any
 * thread; up to 64 may be open at once (the daemon's limit per client),
 * and an End of an id that is not open (twice, or made up) is dropped here
 * rather than sent as a protocol error.
 *
 * Tested with the nvtx3 headers of CUDA 13.0 under the fake driver
 * (tests/sched/test_sched_nvtx.c).
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "nvtx_inject.h"
#include "sched_link.h"

#define REQUEST_NAME "mosaic:request"
#define MAX_STARTED 64

static int enabled;
static __thread int in_request; /* this thread's outermost push request is open */
static _Atomic uint32_t started[MAX_STARTED];

int mosaic_request_begin(void); /* sched_link.c, exported */

static int is_request(const char *name)
{
    return name && !strcmp(name, REQUEST_NAME);
}

static int nv_accept(void *ctx)
{
    (void)ctx;
    return enabled;
}

static uint32_t nv_push(void *ctx, const char *name)
{
    uint32_t id;

    (void)ctx;
    if (!enabled || in_request || !is_request(name))
        return 0;
    id = mosaic__sched_hp_request_open();
    in_request = id != 0;
    return id;
}

static void nv_pop(void *ctx, uint32_t tag)
{
    (void)ctx;
    if (!tag)
        return;
    in_request = 0;
    mosaic__sched_hp_request_close(tag);
}

static uint32_t nv_start(void *ctx, const char *name)
{
    uint32_t id;

    (void)ctx;
    if (!enabled || !is_request(name))
        return 0;
    id = mosaic__sched_hp_request_open();
    if (!id)
        return 0;
    for (int i = 0; i < MAX_STARTED; i++) {
        uint32_t none = 0;
        if (atomic_compare_exchange_strong(&started[i], &none, id))
            return id;
    }
    /* More open at once than the daemon would track: this one ends now. */
    MOSAIC__LOG(MOSAIC__LOG_DEBUG, "NVTX: more than %d %s ranges started and not ended; "
                "this one is not a request", MAX_STARTED, REQUEST_NAME);
    mosaic__sched_hp_request_close(id);
    return 0;
}

static void nv_end(void *ctx, uint32_t tag, uint64_t range_id)
{
    (void)ctx;
    (void)range_id;
    if (!tag)
        return;
    for (int i = 0; i < MAX_STARTED; i++) {
        uint32_t want = tag;
        if (atomic_compare_exchange_strong(&started[i], &want, 0)) {
            mosaic__sched_hp_request_close(tag);
            return;
        }
    }
}

static const struct mosaic__nvtx_client client = {
    .ctx = NULL, .accept = nv_accept, .push = nv_push, .pop = nv_pop, .start = nv_start,
    .end = nv_end};

static void nvtx_child_after_fork(void)
{
    /* The child is a client of its own with no request open. */
    for (int i = 0; i < MAX_STARTED; i++)
        atomic_store(&started[i], 0);
    in_request = 0;
}

/* Whether the program's symbol lookups reach this library first (it was
 * preloaded) rather than NVTX having dlopened it privately. */
static int in_global_scope(void)
{
    return mosaic__real_dlsym(RTLD_DEFAULT, "mosaic_request_begin") ==
           (void *)mosaic_request_begin;
}

void mosaic__nvtx_setup(void)
{
    char other[512];
    int rc;

    enabled = mosaic__cfg.role == MOSAIC__ROLE_HP && mosaic__observing() && in_global_scope();
    /* Registered in every role: a copy that initialises later is then
     * declined (a no-op) rather than given hooks with nothing behind them. */
    mosaic__nvtx_register(&client);
    if (!enabled)
        return;
    pthread_atfork(NULL, NULL, nvtx_child_after_fork);
    rc = mosaic__nvtx_claim_env(other, sizeof(other));
    if (rc == MOSAIC__NVTX_ENV_SET) {
        MOSAIC__LOG(MOSAIC__LOG_DEBUG, "NVTX: NVTX_INJECTION64_PATH=%s, so that ranges named "
                    "%s mark HP requests", mosaic__nvtx_self_path(), REQUEST_NAME);
    } else if (rc == MOSAIC__NVTX_ENV_OTHER) {
        MOSAIC__LOG(MOSAIC__LOG_INFO, "NVTX: NVTX_INJECTION64_PATH names another tool (%s), "
                    "left as it is: NVTX ranges go to it, not to the shim, so HP requests come "
                    "from mosaic_request_begin/end or the learned launch pattern", other);
    } else if (rc < 0) {
        MOSAIC__LOG(MOSAIC__LOG_WARN, "NVTX: cannot point NVTX_INJECTION64_PATH at the shim "
                    "(%s): ranges named %s are not seen; set NVTX_INJECTION64_PATH to the "
                    "path of libmosaic.so, or mark requests with mosaic_request_begin/end",
                    mosaic_strerror(rc), REQUEST_NAME);
    }
}
