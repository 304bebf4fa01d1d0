/*
 * SM partitions in the shim (green.c, docs/partitions.md): a BE process's
 * (MOSAIC_BE_SMS) or an HP process's (MOSAIC_HP_SMS) kernel and graph
 * launches redirected onto a green context's streams, in the application's
 * stream order. Internal to libmosaic.so.
 *
 * A launch hook calls, for a BE launch:
 *
 *   struct mosaic__green_launch g;
 *   if (mosaic__green_wanted() && mosaic__green_enter(b, hook, handle, fn, s, &g))
 *       launch g.fn (or the graph) on g.green;
 *   else
 *       launch as asked;
 *   if (g.on && mosaic__green_leave(&g, r))
 *       launch again as asked (the driver refused the green context);
 *
 * With neither set the cost is one relaxed load.
 */
#ifndef MOSAIC_PRELOAD_GREEN_H
#define MOSAIC_PRELOAD_GREEN_H

#include "internal.h"

enum mosaic__green_state {
    MOSAIC__GREEN_OFF = 0,     /* full GPU: unset, not BE, or unavailable */
    MOSAIC__GREEN_PENDING = 1, /* asked for; set up at the first BE launch */
    MOSAIC__GREEN_ACTIVE = 2,  /* launches are redirected */
};

extern _Atomic int mosaic__green_on; /* enum mosaic__green_state */

struct mosaic__green_launch {
    int on;           /* redirected: call mosaic__green_leave after */
    CUstream app;     /* the application's stream (per-thread made explicit) */
    CUstream green;   /* the stream to launch on */
    const void *fn;   /* the function to launch there (NULL: a graph) */
    const void *handle; /* what the application launched (function or exec) */
    void *ev;         /* the thread's event pair */
};

/* Reads MOSAIC_BE_SMS (BE) or MOSAIC_HP_SMS (HP) once at load. */
void mosaic__green_configure(void);
/* The arbiter's word: this role's partition of sms SMs (0: the full GPU),
 * from the daemon's WELCOME or a later PARTITION message. Taken unless the
 * variable was set (it overrides); applied at the next launch (a new green
 * context, or none for the full GPU), checked against the driver's rules
 * as the variable is. */
void mosaic__green_offer(unsigned sms);

static inline int mosaic__green_wanted(void)
{
    return MOSAIC__UNLIKELY(atomic_load_explicit(&mosaic__green_on, memory_order_relaxed) !=
                            MOSAIC__GREEN_OFF);
}

/* Before a launch of handle (fn: the kernel handle, NULL for a graph) into
 * app through hook: sets up the partition at the first call, and returns 1
 * with g filled in (the green stream now waits for app) when the launch is
 * to go to g->green, or 0 to launch as asked (g->on 0). */
int mosaic__green_enter(const struct mosaic__binding *b, int hook, const void *handle,
                        const void *fn, CUstream app, struct mosaic__green_launch *g);
/* After the redirected launch returned r: orders app after it. Returns 1
 * when the caller must launch again as asked (the driver refused the handle
 * in the green context; never redirected again). */
int mosaic__green_leave(struct mosaic__green_launch *g, CUresult r);

/* The BE gate, before it enqueues the wait in front of a launch of kernel
 * fn: fn's function in the current partition's green context is made now
 * (which loads it there), so that the launch does not load it behind the
 * wait (sched_link.c, "lazy module loading"). */
void mosaic__green_prepare(const void *fn);

/*
 * The launch hooks' few lines (hooks.c): r = the launch, redirected when
 * green_call can be made (it names the green stream gs_ and the function
 * gf_), else plain_call; plain_call again when the driver refused.
 */
#define MOSAIC__GREEN_LAUNCH(r, b_, hook_, handle_, fn_, stream_, green_call, plain_call) \
    do {                                                                           \
        struct mosaic__green_launch g_ = {0};                                      \
        if (mosaic__green_wanted() &&                                              \
            mosaic__green_enter((b_), (hook_), (handle_), (fn_), (stream_), &g_)) { \
            CUstream gs_ = g_.green;                                               \
            CUfunction gf_ = (CUfunction)(uintptr_t)g_.fn;                         \
            (void)gs_;                                                             \
            (void)gf_;                                                             \
            (r) = (green_call);                                                    \
        } else {                                                                   \
            (r) = (plain_call);                                                    \
        }                                                                          \
        if (g_.on && mosaic__green_leave(&g_, (r)))                                \
            (r) = (plain_call);                                                    \
    } while (0)

/* A copy of a launch configuration on stream s (for cuLaunchKernelEx). */
static inline const CUlaunchConfig *mosaic__green_config(CUlaunchConfig *tmp,
                                                         const CUlaunchConfig *c, CUstream s)
{
    *tmp = *c;
    tmp->hStream = s;
    return tmp;
}

#endif /* MOSAIC_PRELOAD_GREEN_H */
