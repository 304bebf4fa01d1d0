/*
 * mosaic-sched record and replay (docs/replay.md).
 *
 * record: the daemon writes what its clients post (HP request begin/end and
 * launches, BE wants, grants and completions) to a mosaic-trace/1 file, by
 * wrapping whichever policy it runs; nothing in the daemon's loop changes.
 *
 * replay: recorded HP and BE traces run through the same policy code
 * (struct mosaic__policy, opened by mosaic__policy_open) on a simulated,
 * discrete-event timeline: kernel durations from the traces, co-run
 * slowdowns from the measured H200 dataset by the simulated GPU's rule
 * (tests/fakecuda/simgpu_data.c loads it). No real time passes.
 *
 * Both hook in through the linker: mosaic-sched is linked with
 * -Wl,--wrap=mosaic__policy_open,--wrap=mosaic__now_ns, so the daemon's
 * own call opens the recorder around its policy and the policies' clock
 * reads come back as simulated time during a replay; outside a recording
 * or a replay both forward to the real functions.
 */
#ifndef MOSAIC_SCHED_REPLAY_H
#define MOSAIC_SCHED_REPLAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon.h"

#define MOSAIC__TRACE_SCHEMA "mosaic-trace/1"

/* ---- record.c ---------------------------------------------------------- */

/*
 * Arms the recorder: the next mosaic__policy_open (the daemon's) wraps its
 * policy so that every event and first decision is written to path, which
 * is created (refused if it exists). The trace is complete once the
 * policy is closed (the daemon's clean stop): its last line is the "end"
 * record that replay requires. MOSAIC_EIO with err naming path.
 */
int mosaic__record_arm(const char *path, char *err, size_t errlen);

/* The linker's wrappers (see the top of this file). */
int __wrap_mosaic__policy_open(const struct mosaic__sched_config *cfg,
                               struct mosaic__policy *out, char *err, size_t errlen);
int __real_mosaic__policy_open(const struct mosaic__sched_config *cfg,
                               struct mosaic__policy *out, char *err, size_t errlen);
uint64_t __wrap_mosaic__now_ns(void);
uint64_t __real_mosaic__now_ns(void);

/* ---- replay.c ---------------------------------------------------------- */

struct mosaic__trace;

/*
 * Reads a mosaic-trace/1 file whole. A file of another schema, one with a
 * line that is not JSON or lacks a field, or one without its "end" record
 * (truncated) is refused with MOSAIC_EFORMAT, err naming the file, the line
 * and the fix; *out is only set on success.
 */
int mosaic__trace_load(const char *path, struct mosaic__trace **out, char *err,
                       size_t errlen);
void mosaic__trace_free(struct mosaic__trace *t);
struct mosaic__replay_opts {
    unsigned warmup;       /* first HP requests replayed, not counted */
    double be_lead_ms;     /* BE starts this long before the first HP request */
    double decide_us;      /* a held BE kernel is decided again this often */
    uint64_t seed;         /* dispatch order and co-run repeat draws */
    double part_f0;        /* > 0: policy mosaic's PART_F0 for this replay */
    double f_min;          /* > 0: policy mosaic's F_MIN for this replay */
    const char *metrics;   /* non-NULL: the policy's metrics text is written here */
};

struct mosaic__replay_result {
    unsigned hp_requests;      /* counted (after warm-up) */
    unsigned hp_kernels;       /* HP kernels replayed, warm-up included */
    unsigned be_kernels;       /* BE kernels completed */
    unsigned be_step_kernels;  /* kernels per BE step (the sequence's period) */
    /* How the step was found: be_step_found 1, the shortest period of the
     * granted sequence after be_step_prefix start-up kernels (not
     * replayed), which the recording held be_step_periods times in full
     * and then be_step_tail kernels of a partial step; 0, no step repeats
     * (twice at least, over at least half of the be_granted kernels), so
     * the whole recording is one step. */
    int be_step_found;
    unsigned be_step_prefix, be_step_periods, be_step_tail, be_granted;
    unsigned unprofiled;       /* kernel ids the dataset has no profile of */
    double hp_iso_p99_ms;      /* of the trace's isolated HP requests */
    double hp_p50_ms, hp_p99_ms, over_p_pct; /* request begin to end, host time in */
    /* The same on each request's GPU span (first kernel's start to last
     * kernel's end), as arbiter_eval scores the simulated GPU's runs. */
    double hp_gpu_iso_p99_ms, hp_gpu_p99_ms, over_p_gpu_pct;
    double be_steps_per_s, be_iso_steps_per_s;
    double hp_scale, be_scale; /* trace time over profiled time */
    double gpu_scale;          /* the smaller: the GPU's; the rest is host time */
    double sim_ms;             /* simulated time covered */
    /* The split replayed (sm-mode partition, policy static): HP on hp_sms
     * SMs, BE on the other be_sms; both 0 for the whole GPU. */
    unsigned hp_sms, be_sms;
};

/*
 * Replays the traces (one HP client and one BE client in all, in one trace
 * or two) through the policy of cfg at cfg->slo, on the whole GPU or, for
 * sm-mode partition and policy static, on the split the daemon would make
 * (mosaic__static_partition: hp-sms, or policy static's choice); a split
 * the GPU cannot make or that the policy refuses is MOSAIC_ECONFIG with
 * the policy's message. MOSAIC_EINVAL with err
 * when the traces cannot be replayed (no HP or no BE, more than one of a
 * role, no isolated HP request to take durations from); MOSAIC_ECONFIG
 * when the policy cannot be opened; MOSAIC_EFORMAT when the dataset
 * cannot be loaded.
 */
int mosaic__replay_run(const struct mosaic__sched_config *cfg,
                       struct mosaic__trace *const *traces, unsigned ntraces,
                       const struct mosaic__replay_opts *o, struct mosaic__replay_result *r,
                       char *err, size_t errlen);

#endif /* MOSAIC_SCHED_REPLAY_H */
