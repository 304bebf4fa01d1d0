/*
 * Benchmarks of the client protocol against a running mosaic-sched
 * (tests/sched/bench_sched.sh starts one): the BE grant round trip with
 * the host hold (post a want, the daemon decides and grants on the ring,
 * the waiting thread sees it) and with the device-side gate (post a gated
 * want, the daemon writes the stream's grant word; this thread spins on the
 * word as the GPU's front end would, then writes the done word as the
 * device would after the kernel), side by side; and the cost of one HP
 * event post. Reports numbers; asserts nothing.
 *
 *   bench_sched_grant SOCKET [ROUND_TRIPS] [HP_POSTS]
 */
#define _GNU_SOURCE 1
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mosaic/sched.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    struct mosaic_sched_client_opts be_o = {.role = MOSAIC_SCHED_ROLE_BE};
    struct mosaic_sched_client_opts hp_o = {.role = MOSAIC_SCHED_ROLE_HP};
    struct mosaic_sched_client *be, *hp;
    long n = argc > 2 ? atol(argv[2]) : 20000, nhp = argc > 3 ? atol(argv[3]) : 200000;
    uint64_t *rt, t0, t1;
    long dropped = 0;

    if (argc < 2 || n <= 0 || nhp <= 0) {
        fprintf(stderr, "usage: %s SOCKET [ROUND_TRIPS] [HP_POSTS]\n", argv[0]);
        return 2;
    }
    be_o.socket_path = hp_o.socket_path = argv[1];
    if (mosaic_sched_client_open(&be_o, &be) != 0 || mosaic_sched_client_open(&hp_o, &hp) != 0 ||
        mosaic_sched_client_state(be) != MOSAIC_SCHED_CONNECTED ||
        mosaic_sched_client_state(hp) != MOSAIC_SCHED_CONNECTED) {
        fprintf(stderr, "%s: cannot connect to mosaic-sched at %s\n", argv[0], argv[1]);
        return 1;
    }
    rt = calloc((size_t)n, sizeof(*rt));
    if (!rt)
        return 1;
    for (long i = 0; i < n; i++) {
        int outcome;
        t0 = now_ns();
        if (mosaic_sched_be_admit(be, (uint64_t)i, 1000, &outcome) != 0 ||
            outcome != MOSAIC_SCHED_GRANTED) {
            fprintf(stderr, "admission %ld failed\n", i);
            return 1;
        }
        rt[i] = now_ns() - t0;
        mosaic_sched_be_done(be, (uint64_t)i);
    }
    qsort(rt, (size_t)n, sizeof(*rt), cmp);
    printf("BE grant round trip, host hold (CLOCK_MONOTONIC around mosaic_sched_be_admit, "
           "%ld admissions, policy none): p50 %.2f us, p99 %.2f us, max %.2f us\n",
           n, rt[n / 2] / 1e3, rt[n * 99 / 100] / 1e3, rt[n - 1] / 1e3);

    /* The device gate: slot 0 of this connection's gate, kernels 1..n. */
    struct mosaic_sched_gate g;
    if (mosaic_sched_gate_get(be, &g) != 0) {
        fprintf(stderr, "no gate on the BE connection\n");
        return 1;
    }
    _Atomic uint32_t *grant = (_Atomic uint32_t *)((char *)g.base + g.grant_off);
    _Atomic uint32_t *done_word = (_Atomic uint32_t *)((char *)g.base + g.done_off);
    for (long i = 0; i < n; i++) {
        uint32_t seq = (uint32_t)i + 1;
        t0 = now_ns();
        if (mosaic_sched_be_want_gated(be, g.generation, 0, seq, (uint64_t)i, 1000) != 0) {
            fprintf(stderr, "gated want %ld failed\n", i);
            return 1;
        }
        /* As CU_STREAM_WAIT_VALUE_GEQ: a cyclic compare. */
        for (long spin = 0; (int32_t)(atomic_load_explicit(grant, memory_order_acquire) - seq) < 0;
             spin++) {
            if (spin > 2000000000L) {
                fprintf(stderr, "gated want %ld was never granted\n", i);
                return 1;
            }
        }
        rt[i] = now_ns() - t0;
        atomic_store_explicit(done_word, seq, memory_order_release);
    }
    qsort(rt, (size_t)n, sizeof(*rt), cmp);
    printf("BE grant round trip, device gate (CLOCK_MONOTONIC from the gated want to the grant "
           "word seen by a spinning reader standing in for the GPU, %ld admissions, policy "
           "none): p50 %.2f us, p99 %.2f us, max %.2f us\n",
           n, rt[n / 2] / 1e3, rt[n * 99 / 100] / 1e3, rt[n - 1] / 1e3);

    /* HP posts in bursts the ring can hold, so that the number is the post
     * and not the daemon's drain rate. */
    uint64_t total = 0;
    for (long done = 0; done < nhp;) {
        long burst = nhp - done < 256 ? nhp - done : 256;
        t0 = now_ns();
        for (long i = 0; i < burst; i++)
            dropped += mosaic_sched_hp_launch(hp, (uint64_t)i) != 0;
        t1 = now_ns();
        total += t1 - t0;
        done += burst;
        usleep(2000);
    }
    printf("HP launch post (mosaic_sched_hp_launch, bursts of 256, %ld posts): %.1f ns each, "
           "%ld dropped\n", nhp, (double)total / (double)nhp, dropped);
    free(rt);
    mosaic_sched_client_close(be);
    mosaic_sched_client_close(hp);
    return 0;
}
