/*
 * NVTX v3 injection: the protocol side (what the library tells NVTX) and the
 * per-thread range stacks (what the client is spared). See nvtx_inject.h.
 *
 * Written against the nvtx3 headers of CUDA 13.0 (NVTX_VERSION 3, load
 * sequence version 2): the export table NVTX_ETID_CALLBACKS, its
 * GetModuleFunctionTable for NVTX_CB_MODULE_CORE, and the callback ids
 * NVTX_CBID_CORE_Range*. Those ids and the table layout are part of NVTX's
 * stable tool interface (the ids are "only added above the _SIZE line");
 * a table shorter than an id we assign is skipped for that id.
 *
 * Why the range stack is here and not in each client: NVTX's push and pop
 * are per thread and pop carries no name, so every client would have to
 * keep the same stack; here it is a fixed array in thread-local storage,
 * nothing to allocate or free when threads come and go.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* Only the types: this module is the tool, not an NVTX user. */
#define NVTX_NO_IMPL 1
#include <nvtx3/nvToolsExt.h>

#include "core.h"
#include "nvtx_inject.h"

#define EXPORT __attribute__((visibility("default")))

static _Atomic(const struct mosaic__nvtx_client *) client;
static _Atomic int other_injection;
static _Atomic uint32_t next_range = 1;

static struct {
    _Atomic uint64_t inits, declined, failed, ranges, overflow, unmatched_pops;
} st;

static __thread struct {
    int depth;
    uint32_t tag[MOSAIC__NVTX_MAX_DEPTH];
    char wide[256]; /* a wide message converted to ASCII */
} tls;

int mosaic__nvtx_register(const struct mosaic__nvtx_client *c)
{
    atomic_store_explicit(&client, c, memory_order_release);
    return 0;
}

int mosaic__nvtx_other_injection(void)
{
    return atomic_load(&other_injection);
}

void mosaic__nvtx_stats(struct mosaic__nvtx_stats *out)
{
    out->inits = atomic_load(&st.inits);
    out->declined = atomic_load(&st.declined);
    out->failed = atomic_load(&st.failed);
    out->ranges = atomic_load(&st.ranges);
    out->overflow = atomic_load(&st.overflow);
    out->unmatched_pops = atomic_load(&st.unmatched_pops);
}

/* ---- the library's own path -------------------------------------------- */

static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static char self_path[PATH_MAX];

static void find_self(void)
{
    Dl_info info;

    /* dladdr names the object that holds this function: the shared
     * library that linked the module (or the program, in a unit test). */
    if (!dladdr((void *)&find_self, &info) || !info.dli_fname || !info.dli_fname[0])
        return;
    if (!realpath(info.dli_fname, self_path)) {
        size_t n = strlen(info.dli_fname);
        if (n < sizeof(self_path))
            memcpy(self_path, info.dli_fname, n + 1);
    }
}

const char *mosaic__nvtx_self_path(void)
{
    pthread_once(&self_once, find_self);
    return self_path[0] ? self_path : NULL;
}

int mosaic__nvtx_claim_env(char *other, size_t otherlen)
{
    const char *self = mosaic__nvtx_self_path();
    const char *cur = getenv("NVTX_INJECTION64_PATH");
    char resolved[PATH_MAX];

    if (other && otherlen)
        other[0] = '\0';
    if (!self)
        return MOSAIC_ENOSYM;
    if (cur && cur[0]) {
        /* A child of a process that set it inherits our own path: that is
         * us, not another tool. */
        if (!strcmp(cur, self) || (realpath(cur, resolved) && !strcmp(resolved, self)))
            return MOSAIC__NVTX_ENV_OURS;
        atomic_store(&other_injection, 1);
        if (other && otherlen) {
            size_t n = strlen(cur);
            if (n >= otherlen)
                n = otherlen - 1;
            memcpy(other, cur, n);
            other[n] = '\0';
        }
        return MOSAIC__NVTX_ENV_OTHER;
    }
    if (setenv("NVTX_INJECTION64_PATH", self, 1) != 0)
        return MOSAIC_ESYS;
    return MOSAIC__NVTX_ENV_SET;
}

/* ---- messages ---------------------------------------------------------- */

/* A wide message as ASCII in thread-local storage, or NULL where it holds
 * anything beyond ASCII or does not fit. */
static const char *wide_name(const wchar_t *w)
{
    size_t i;

    if (!w)
        return NULL;
    for (i = 0; w[i]; i++) {
        if (i + 1 >= sizeof(tls.wide) || w[i] < 0 || w[i] > 127)
            return NULL;
        tls.wide[i] = (char)w[i];
    }
    tls.wide[i] = '\0';
    return tls.wide;
}

static const char *attr_name(const nvtxEventAttributes_t *a)
{
    /* A caller built against older headers may pass a shorter struct: the
     * message is read only if its size covers it. */
    if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message))
        return NULL;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return a->message.ascii;
    case NVTX_MESSAGE_TYPE_UNICODE:
        return wide_name(a->message.unicode);
    default:
        return NULL; /* registered strings are not tracked */
    }
}

/* ---- the callbacks NVTX calls ------------------------------------------ */

static int push(const char *name)
{
    const struct mosaic__nvtx_client *c = atomic_load_explicit(&client, memory_order_acquire);
    int d = tls.depth++;

    atomic_fetch_add_explicit(&st.ranges, 1, memory_order_relaxed);
    if (d >= MOSAIC__NVTX_MAX_DEPTH) {
        atomic_fetch_add_explicit(&st.overflow, 1, memory_order_relaxed);
        return d;
    }
    tls.tag[d] = c && c->push ? c->push(c->ctx, name) : 0;
    return d;
}

static int NVTX_API range_push_a(const char *m)
{
    return push(m);
}

static int NVTX_API range_push_w(const wchar_t *m)
{
    return push(wide_name(m));
}

static int NVTX_API range_push_ex(const nvtxEventAttributes_t *a)
{
    return push(attr_name(a));
}

static int NVTX_API range_pop(void)
{
    const struct mosaic__nvtx_client *c = atomic_load_explicit(&client, memory_order_acquire);
    int d;

    if (tls.depth <= 0) {
        atomic_fetch_add_explicit(&st.unmatched_pops, 1, memory_order_relaxed);
        return -1; /* what NVTX documents for a pop with nothing pushed */
    }
    d = --tls.depth;
    if (d < MOSAIC__NVTX_MAX_DEPTH && c && c->pop)
        c->pop(c->ctx, tls.tag[d]);
    return d;
}

static nvtxRangeId_t start(const char *name)
{
    const struct mosaic__nvtx_client *c = atomic_load_explicit(&client, memory_order_acquire);
    uint32_t tag = c && c->start ? c->start(c->ctx, name) : 0;
    uint32_t n = atomic_fetch_add_explicit(&next_range, 1, memory_order_relaxed);

    atomic_fetch_add_explicit(&st.ranges, 1, memory_order_relaxed);
    /* The high half makes the id unique and nonzero (0 is what NVTX's own
     * no-op returns); the low half carries the client's tag to end(). */
    if (n == 0)
        n = atomic_fetch_add_explicit(&next_range, 1, memory_order_relaxed);
    return ((uint64_t)n << 32) | tag;
}

static nvtxRangeId_t NVTX_API range_start_a(const char *m)
{
    return start(m);
}

static nvtxRangeId_t NVTX_API range_start_w(const wchar_t *m)
{
    return start(wide_name(m));
}

static nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t *a)
{
    return start(attr_name(a));
}

static void NVTX_API range_end(nvtxRangeId_t id)
{
    const struct mosaic__nvtx_client *c = atomic_load_explicit(&client, memory_order_acquire);

    if (c && c->end)
        c->end(c->ctx, (uint32_t)(id & 0xffffffffu), id);
}

/* ---- the entry point --------------------------------------------------- */

static int inject_init(NvtxGetExportTableFunc_t get)
{
    const struct mosaic__nvtx_client *c = atomic_load_explicit(&client, memory_order_acquire);
    const NvtxExportTableCallbacks *cb;
    NvtxFunctionTable t = NULL;
    unsigned int n = 0;
    static const struct {
        unsigned id;
        NvtxFunctionPointer fn;
    } hooks[] = {
        {NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)range_push_a},
        {NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)range_push_w},
        {NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)range_push_ex},
        {NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)range_pop},
        {NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)range_start_a},
        {NVTX_CBID_CORE_RangeStartW, (NvtxFunctionPointer)range_start_w},
        {NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)range_start_ex},
        {NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)range_end},
    };

    atomic_fetch_add(&st.inits, 1);
    if (c && c->accept && !c->accept(c->ctx)) {
        atomic_fetch_add(&st.declined, 1);
        return 0; /* NVTX then makes every call of that copy a no-op */
    }
    cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
    if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable ||
        !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t) {
        atomic_fetch_add(&st.failed, 1);
        return 0;
    }
    for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++)
        if (hooks[i].id < n && t[hooks[i].id])
            *t[hooks[i].id] = hooks[i].fn;
    return 1;
}

/* The dynamic injection's entry point (NVTX_INJECTION64_PATH). */
EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    return inject_init(get);
}

/* The static injection's pointer: a strong definition that the nvtx3
 * headers' weak one yields to, in the program at link time and, for
 * objects that bind it dynamically, at load time. */
EXPORT NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr;
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = inject_init;
