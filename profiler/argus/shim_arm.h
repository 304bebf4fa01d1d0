/*
 * argus-shim's arming of instrumented kernels (shim_arm.c): inside
 * libargus_inject.so, the region buffers of kernels built with Argus
 * markers and an embedded registry are armed, read back and decoded in the
 * same run as the NVTX and kernel recording (docs/argus.md, "Instrumented
 * kernels under argus-shim"). Internal to profiler/argus: the recorder
 * (shim_inject.c) calls it from its CUPTI callback, the tests
 * (tests/argus/test_shim_arm.c) with a driver over host memory.
 */
#ifndef ARGUS_SHIM_ARM_H
#define ARGUS_SHIM_ARM_H

#include <stddef.h>
#include <stdint.h>

#include "argus/argus.h"

/* The driver calls arming needs beyond argus_driver's (which allocates the
 * device buffer and reads the module's globals). Each returns 0 or the
 * driver's CUresult; stream and event handles are the driver's, opaque. */
typedef struct argus__arm_ops {
    void *ctx;
    int (*func_module)(void *ctx, void *func, void **module);
    /* cuKernelGetFunction: the runtime (CUDA 12+) may launch a CUkernel
     * handle cast to CUfunction; NULL op: not tried. */
    int (*kernel_function)(void *ctx, void *kernel, void **func);
    int (*memset0_async)(void *ctx, uint64_t dptr, size_t bytes, void *stream);
    int (*htod_async)(void *ctx, uint64_t dst, const void *src, size_t bytes, void *stream);
    int (*dtoh_async)(void *ctx, void *dst, uint64_t src, size_t bytes, void *stream);
    int (*host_alloc)(void *ctx, void **p, size_t bytes); /* pinned */
    int (*event_create)(void *ctx, void **ev);
    int (*event_record)(void *ctx, void *ev, void *stream);
    int (*event_query)(void *ctx, void *ev); /* 0 done, else not yet or failed */
    int (*event_sync)(void *ctx, void *ev);
    int (*stream_create)(void *ctx, void **stream); /* a non-blocking stream */
    int (*stream_wait_event)(void *ctx, void *stream, void *ev);
    /* *capturing = 1 when the stream is being captured into a CUDA graph
     * (NULL op: never); a failure counts as capturing. */
    int (*stream_capturing)(void *ctx, void *stream, int *capturing);
} argus__arm_ops;

/* Where recording lines go (one JSON object, no newline); the recorder
 * writes them under its lock. */
typedef void (*argus__arm_emit_fn)(void *ud, const char *line);

typedef struct argus__arm_config {
    uint32_t cap;          /* records per warp (power of two) */
    uint32_t max_launches; /* launches armed per process, then no more */
    size_t max_bytes;      /* largest region buffer armed */
    /* When not NULL (ARGUS_SHIM_ARM_RAW): a folder into which every
     * collected buffer is also written, as arm.<corr>.raw (the bytes
     * argus_launch_collect returns), before it is decoded. For a caller
     * that needs what the recording's region lines leave out (iterations,
     * roles, cycles): the executor of argus query --run (exec_run.c). */
    const char *raw_dir;
} argus__arm_config;

/* Defaults, overridden by ARGUS_SHIM_ARM_CAP and ARGUS_SHIM_ARM_MAX. */
#define ARGUS__ARM_CAP 1024u
#define ARGUS__ARM_MAX_LAUNCHES 256u
#define ARGUS__ARM_MAX_BYTES ((size_t)256 << 20)

/* Sets arming up (no driver call is made until the first launch). */
int argus__arm_init(const argus_driver *drv, const argus__arm_ops *ops,
                    const argus__arm_config *cfg, argus__arm_emit_fn emit, void *ud);
/* The same ops over libcuda.so.1 (dlopen), for the recorder. */
int argus__arm_ops_cuda(argus__arm_ops *ops, char *msg, size_t msglen);

/* A kernel launch entering the driver: arms it when its module carries an
 * embedded registry and argus_desc_v1. `ptsz` says the launch is a
 * per-thread-default-stream entry point (stream NULL then means that
 * stream, not the legacy one). Returns 1 when armed. */
int argus__arm_launch_enter(void *func, const uint32_t grid[3], const uint32_t block[3],
                            void *stream, int ptsz, uint64_t corr);
/* The same launch returning from the driver (result: its CUresult): the
 * disarm, the completion event and the read-back are enqueued behind it. */
void argus__arm_launch_exit(uint64_t corr, int result);
/* Collects every armed launch whose read-back has completed (cuEventQuery:
 * no wait); with wait, waits for all of them (the process's exit). */
void argus__arm_poll(int wait);
/* Frees what arming holds (after the last poll). */
void argus__arm_shutdown(void);

/* The CUPTI side: the driver-API callback IDs arming listens to beyond the
 * launch entry points, and one call per callback (enter and exit). */
extern const unsigned argus__arm_sync_cbids[];
extern const size_t argus__arm_nsync_cbids;
void argus__arm_on_callback(unsigned cbid, int enter, const void *cupti_callback_data);

#endif /* ARGUS_SHIM_ARM_H */
