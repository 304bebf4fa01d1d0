/*
 * The simulated GPU behind the fake driver (docs/simgpu.md).
 *
 * With MOSAIC_SIMGPU=<name> set, the fake driver's streams, events and
 * launches are backed by one simulated GPU shared by every process that
 * names the same segment, as processes share one GPU under MPS. Kernels take
 * real (wall-clock) time: their isolated duration from the kernel profiles,
 * stretched by MOSAIC_SIMGPU_SCALE, and slowed by the kernels of every
 * process running beside them as the measured H200 co-runs say.
 *
 * Internal to tests/fakecuda: fake_cuda.c calls these functions, and the
 * `simgpu` control tool uses the segment functions. They return 0 or a
 * negative SIM_E* code and print what went wrong, and how to fix it, to
 * stderr (the fake driver's callers only see a CUresult).
 */
#ifndef MOSAIC_TESTS_SIMGPU_H
#define MOSAIC_TESTS_SIMGPU_H

#include <stdbool.h>
#include <stdint.h>

enum sim_err {
    SIM_EINVAL = -1,   /* a bad argument or setting */
    SIM_ENOMEM = -2,   /* out of memory or out of simulator slots */
    SIM_EIO = -3,      /* a file or shared-memory call failed */
    SIM_EFORMAT = -4,  /* a data file is not what it should be */
    SIM_ESTALE = -5,   /* the segment is of another version or unfinished */
    SIM_ENOTREADY = -6 /* the work has not completed yet */
};

/* Wait-value comparisons, as CU_STREAM_WAIT_VALUE_{GEQ,EQ,AND,NOR}. */
enum sim_wait { SIM_WAIT_GEQ = 0, SIM_WAIT_EQ = 1, SIM_WAIT_AND = 2,
                SIM_WAIT_NOR = 3 };

/* What the control tool and `fake_sim_info` report about a segment. */
struct sim_info {
    uint32_t version;
    double scale;          /* wall-clock stretch of every duration */
    double jitter_ns;      /* dispatch jitter window (already scaled) */
    uint32_t kernels;      /* profiled kernel keys loaded */
    uint32_t variants;     /* variants (co-run names) loaded */
    uint32_t pairs;        /* ordered variant pairs with co-run samples */
    uint32_t streams_used, events_used, running;
    uint64_t launched, completed;
};

/* --- the segment (used by the fake driver and by the control tool) --- */

/* Creates the segment named `name` with O_EXCL semantics and loads the
 * profile, variant and co-run files named by the environment (or the
 * built-in defaults). SIM_EINVAL if it already exists. */
int sim_segment_create(const char *name);
/* Removes the segment (processes attached keep their mapping). */
int sim_segment_remove(const char *name);
/* Attaches to an existing segment read-only and fills *info. */
int sim_segment_info(const char *name, struct sim_info *info);

/* --- this process on the simulated GPU --- */

/* 1 if MOSAIC_SIMGPU is set and the segment is usable, 0 if it is not set
 * (the fake then behaves as a plain fake), or a negative SIM_E* code if it
 * is set but the segment cannot be used (the message is printed once). */
int sim_active(void);

int sim_stream_new(int *slot);
/* Confines the stream's kernels to the SMs of mask (words 64-bit words,
 * bit i: SM i), as a green-context stream is (docs/simgpu.md, "SM
 * partitions"). A stream never confined runs on the whole GPU. */
int sim_stream_set_sms(int slot, const uint64_t *mask, int words);
/* The process's default stream (NULL, legacy and per-thread handles). */
int sim_default_stream(int *slot);
/* Releases the slot once its queued work has completed. */
void sim_stream_release(int slot);

int sim_enqueue_kernel(int slot, const char *name, const unsigned grid[3],
                       const unsigned block[3], unsigned dyn_smem);
int sim_enqueue_record(int slot, int event);
int sim_enqueue_wait_event(int slot, int event);
int sim_enqueue_wait_value(int slot, uint64_t addr, uint64_t value,
                           enum sim_wait how, bool is64);
int sim_enqueue_write_value(int slot, uint64_t addr, uint64_t value,
                            bool is64);

/* Blocks until the stream (or every stream of this process) is empty. */
int sim_stream_sync(int slot);
int sim_ctx_sync(void);
/* 0 when done, SIM_ENOTREADY when not. */
int sim_stream_query(int slot);

int sim_event_new(int *event);
void sim_event_release(int event);
int sim_event_query(int event);
int sim_event_sync(int event);
/* The recorded time (ns on CLOCK_MONOTONIC) of a completed event. */
int sim_event_time(int event, double *ns);

int sim_info_self(struct sim_info *info);

#endif /* MOSAIC_TESTS_SIMGPU_H */
