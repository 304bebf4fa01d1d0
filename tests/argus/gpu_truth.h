/*
 * Issue 16, correctness with known ground truth: the structure of the test
 * kernels in tests/argus/gpu_truth_kernels.cu and the checks that decode
 * their region buffers (gpu_truth_check.c). The kernels and the checker
 * read the same constants from here, so that what a kernel does and what
 * the check expects cannot drift apart.
 *
 * The checker is plain C over the Argus core (argus_core: the decoder and
 * statistics, no cJSON), so that it runs in the GPU program (built with
 * nvcc on the H200 machine, which has no cJSON) and in the CPU ctest
 * argus_gpu_model, which feeds it buffers from the device model
 * (devmodel.h) with the true answers and with answers made wrong.
 */
#ifndef ARGUS_GPU_TRUTH_H
#define ARGUS_GPU_TRUTH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every truth kernel runs G16_CTAS CTAs: few enough that each buffer stays
 * small as a test fixture, spread over distinct SMs so that the clock
 * estimate sees many anchors. */
#define G16_CTAS 32u
/* Per-warp record capacity of the truth kernels' rings (none wraps). */
#define G16_CAP 128u

/* Spin kernel, 4 warps per CTA: G16_SPIN_REPS times, regions spin2us,
 * spin5us, spin10us (spinning on %globaltimer for that many ns), then
 * clk20k (spinning on %clock64 for G16_CLK_CYCLES cycles). */
#define G16_SPIN_THREADS 128u
#define G16_SPIN_REPS 8u
#define G16_SPIN_GT_REGIONS 3u
#define G16_SPIN_NS_LIST {2000u, 5000u, 10000u}
#define G16_SPIN_NAMES {"spin2us", "spin5us", "spin10us"}
#define G16_CLK_CYCLES 20000u

/* Call-structure kernel, 4 warps per CTA: G16_CALL_ITERS times, region
 * callA calls the __noinline__ device function work() G16_CALL_A times,
 * region callB calls it G16_CALL_B times; work() holds region "work" and
 * spins G16_WORK_CYCLES on %clock64. */
#define G16_CALL_THREADS 128u
#define G16_CALL_ITERS 8u
#define G16_CALL_A 3u
#define G16_CALL_B 1u
#define G16_WORK_CYCLES 20000u

/* Barrier kernel, G16_BAR_WARPS warps per CTA: G16_BAR_ITERS times, region
 * "skew" (warp w spins w * G16_BAR_SKEW_NS on %globaltimer), then region
 * "bar" holding one __syncthreads(). Every warp leaves the barrier when the
 * last arrives, so skew + bar is (warps - 1) * G16_BAR_SKEW_NS per warp. */
#define G16_BAR_WARPS 8u
#define G16_BAR_ITERS 8u
#define G16_BAR_SKEW_NS 1000u

/* Warp-specialised kernel, G16_ROLE_WARPS warps per CTA: warp 0 has role
 * "producer", the others "consumer". G16_ROLE_ITERS times: the producer's
 * region "produce" (G16_PRODUCE_NS spin, then a shared-memory tile write),
 * region "handoff" (a __syncthreads) in every warp, the consumers' region
 * "consume" (G16_CONSUME_NS spin and a read of the tile), region "drain"
 * (a __syncthreads) in every warp. */
#define G16_ROLE_WARPS 4u
#define G16_ROLE_ITERS 8u
#define G16_PRODUCE_NS 2000u
#define G16_CONSUME_NS 4000u

/* Overhead kernels (gpu_overhead_kernels.cu): G16_OVH_REGIONS sequential
 * occurrences of region "body" per warp. */
#define G16_OVH_CTAS 128u
#define G16_OVH_THREADS 256u
#define G16_OVH_REGIONS 64u
#define G16_OVH_FMAS 16u /* dependent FMAs per inner iteration (compute body) */

/* The tolerance the issue sets for region times against ground truth. */
#define G16_REL_TOL 0.02

/* The spins' own log, written in both builds without markers: for every
 * %globaltimer spin (spin2us/5us/10us, skew, produce, consume), lane 0 of
 * the warp keeps the spin's first and last %globaltimer readings and the
 * %clock64 readings taken just outside them (clk0 before gt0, clk1 after
 * gt1), and stores them after the region's END marker, so that the
 * store is in no region. The checks compare a region's decoded time with
 * what ran inside it, as the spin measured itself, rather than with the
 * spin's target: a spin on a stepping timer ends on the first reading at
 * or past its target, so it overshoots by up to one loop iteration plus
 * one timer step (the first H200 run's spin2us decoded at 2057.5 ns), and
 * that is the ground truth's definition, not the markers' error. The
 * cycles beside the readings tell the two apart: decoded region cycles
 * minus the spin's own cycles are what the markers add inside the region.
 * Entry (cta * warps_per_cta + warp) * G16_LOG_PER_WARP + k is the warp's
 * k-th spin: spin kernel k = rep * G16_SPIN_GT_REGIONS + region, barrier
 * k = iteration (its skew), roles k = iteration (produce or consume). An
 * entry never written is all zeros. */
#define G16_LOG_PER_WARP 32u
#define G16_LOG_MAX_WARPS 8u
#define G16_LOG_ENTRIES (G16_CTAS * G16_LOG_MAX_WARPS * G16_LOG_PER_WARP)
typedef struct g16_spin_rec {
    uint64_t gt0, gt1;   /* the spin's first and last %globaltimer readings, ns */
    uint64_t clk0, clk1; /* %clock64 before gt0 and after gt1, SM cycles */
} g16_spin_rec;

/* Where the check results go: one TSV row per number (test, what, got,
 * want, tolerance, unit, verdict), and a line per row on stdout. */
typedef struct g16_sink {
    FILE *tsv;     /* may be NULL */
    int quiet;     /* no stdout lines (the model test's failing cases) */
    int checks;    /* rows that were checks */
    int failures;  /* of them, failed */
} g16_sink;

/* A check row: passes when |got - want| <= tol. */
void g16_check(g16_sink *s, const char *test, const char *what, double got, double want,
               double tol, const char *unit);
/* A row that is reported, not judged. */
void g16_info(g16_sink *s, const char *test, const char *what, double got, const char *unit);

/* Each decodes one region buffer of its kernel and records its checks in
 * s; returns 0 when the buffer decoded (whatever the checks said), else a
 * negative ARGUS_E* code with the reason in msg. */

/* free_ns: the marker-free build's kernel time (ns per launch), or <= 0
 * when it was not measured; the decoded region times must add up to it.
 * log: the armed launch's spin log (G16_LOG_ENTRIES entries, gpu_truth.h
 * above); ARGUS_EINVAL when it is NULL. */
int g16_check_spin(const void *raw, size_t len, double free_ns, const g16_spin_rec *log,
                   g16_sink *s, char *msg, size_t msglen);
int g16_check_calls(const void *raw, size_t len, g16_sink *s, char *msg, size_t msglen);
int g16_check_barrier(const void *raw, size_t len, const g16_spin_rec *log, g16_sink *s,
                      char *msg, size_t msglen);
int g16_check_roles(const void *raw, size_t len, const g16_spin_rec *log, g16_sink *s,
                    char *msg, size_t msglen);
/* The overhead kernels' buffer: G16_OVH_REGIONS "body" occurrences per
 * warp of a G16_OVH_CTAS x G16_OVH_THREADS launch; *mean_ns gets the mean
 * body time. */
int g16_check_overhead(const void *raw, size_t len, const char *test, double *mean_ns,
                       g16_sink *s, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_GPU_TRUTH_H */
