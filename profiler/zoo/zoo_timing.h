/*
 * The timing method of the zoo and the gating of co-runs (zoo_timing.cu;
 * the method is described in docs/dataset.md, "How the zoo times a
 * kernel"). Every timing records its method, "cuda_graph" or
 * "cuda_event_fallback"; co-run records say "event_gated".
 */
#ifndef MOSAIC_ZOO_TIMING_H
#define MOSAIC_ZOO_TIMING_H

#include <cuda_runtime.h>

#include "zoo.h"
#include "zoo_harness.h"

/* Isolated timing of one variant in one configuration. */
struct timing {
    const char *method;           /* "cuda_graph" or "cuda_event_fallback" */
    int n_repeat;
    int n_samples;
    double est_us;
    double samples[ZOO_MAX_REPLAYS];
    double mean, median, min, max, stdev;
    int check;                    /* -1 none, 0 pass, 1 fail */
    char graph_err[384];          /* why the graph path was not used */
};

/* One co-run of two kernels behind the gate. */
struct co_sample {
    double a_us, b_us;            /* each kernel's start-to-end */
    double t_sa, t_sb, t_ea, t_eb; /* relative to the gate's event */
    int gate_expired;
};

/* A pool of events (timing_init creates them): the timing functions use
 * them from index 0, so one measurement at a time. */
extern cudaEvent_t g_ev[ZOO_EV_POOL];
/* The gate's stream and the event it records when its spin ends. */
extern cudaStream_t g_gate_stream;
extern cudaEvent_t g_gate_ev;

int timing_init(void);
void timing_fini(void);

double median_of(const double *x, int n);   /* NAN when n <= 0 */
void minmax_of(const double *x, int n, double *mn, double *mx);

/*
 * The method for one variant on one stream: ZOO_WARMUP launches, the
 * variant's check when do_check, a CUDA graph of n_repeat launches sized to
 * about ZOO_TARGET_REPLAY_US, --replays event-timed replays (sample =
 * elapsed / n_repeat); per-launch events when the graph path fails.
 */
int measure_iso(struct zoo_inst *in, cudaStream_t s, int do_check,
                struct timing *t);
/* The timing's fields, each key prefixed with prefix. */
void j_timing(const struct timing *t, const char *prefix);

/* Launches the gate kernel (--gate-us) and records g_gate_ev behind it. */
int gate_launch(void);
/* One launch of in on s between events e0 and e1. */
int enqueue_timed(struct zoo_inst *in, cudaStream_t s, cudaEvent_t e0,
                  cudaEvent_t e1);
/* reps single launches alone behind the gate: a co-run's own baseline. */
int gated_solo(struct zoo_inst *in, cudaStream_t s, int reps,
               double *samples);
/* One gated co-run: both kernels enqueued behind the gate (B first when
 * b_first), each timed by its own events. */
int corun_once(struct zoo_inst *ia, cudaStream_t sa, struct zoo_inst *ib,
               cudaStream_t sb, int b_first, struct co_sample *o);

#endif /* MOSAIC_ZOO_TIMING_H */
