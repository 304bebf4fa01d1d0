/*
 * The schedule of an offset co-run (issue 14): which rounds of the launch
 * offset protocol (offset.h) run, in which order, with which kernels and
 * delays. Pure host code, so that two processes that co-run under MPS
 * compute the same schedule from the same arguments (and can check that
 * they did, by its hash) and so that `--check-args` can validate a run
 * without a GPU.
 */
#ifndef MOSAIC_ZOO_OFFSET_PLAN_H
#define MOSAIC_ZOO_OFFSET_PLAN_H

#include <stddef.h>

#define ZOO_OFF_MAX_DELAYS  32
#define ZOO_OFF_MAX_REPEATS 50
/* Rounds one pair may need: iso rounds for two variants in two roles, two
 * orders of every delay, each with a warm-up, and a control round. */
#define ZOO_OFF_MAX_ROUNDS                                                  \
    (4 * (ZOO_OFF_MAX_REPEATS + 1) +                                        \
     2 * ZOO_OFF_MAX_DELAYS * (ZOO_OFF_MAX_REPEATS + 1) + 1)

/* A requested delay of the follower's start after the leader's: either
 * absolute (us) or a multiple of the leader's isolated duration (x > 0). */
struct zoo_delay {
    double us;
    double x;
    char spec[24];   /* as given, e.g. "20" or "0.5x" */
};

/* Parses "0,2,5,10,20,50,0.5x,1x,1.5x" (microseconds, or multiples of the
 * leader's isolated duration with an x suffix). Returns the count, or -1
 * with why in err. */
int zoo_parse_delays(const char *s, struct zoo_delay *out, int max, char *err,
                     size_t errlen);

enum zoo_round_kind {
    ZOO_ROUND_CONTROL = 0,  /* two processes: the leader says go or stop */
    ZOO_ROUND_ISO = 1,      /* one kernel, the other side only spins */
    ZOO_ROUND_CORUN = 2     /* both kernels */
};

struct zoo_round {
    unsigned long long seq;
    int kind;         /* enum zoo_round_kind */
    int leader;       /* 0: A leads (B follows), 1: B leads */
    int run[2];       /* whether A's and B's kernels run */
    int iso_side;     /* ISO: the side whose kernel runs */
    int delay_i;      /* CORUN: index into the delays; -1: no delay */
    int warm;         /* a warm-up round, not reported */
};

/* What the planner must remember between pairs: which (variant, side,
 * role) already has its isolated rounds. */
struct zoo_plan_state {
    unsigned char *iso_seen;   /* [n_variants * 2 * 2] */
    int n_variants;
    int collapse_sides;        /* one process, shared mode: A's and B's
                                  configurations are the same GPU */
    unsigned long long seq;    /* the last sequence number handed out */
};

int zoo_plan_init(struct zoo_plan_state *p, int n_variants,
                  int collapse_sides);
void zoo_plan_free(struct zoo_plan_state *p);

/* Index of (variant, side, role) in iso_seen, and in the callers' tables of
 * isolated results. role 0: the variant leads; 1: it follows. */
int zoo_plan_iso_key(const struct zoo_plan_state *p, int vi, int side,
                     int role);

/*
 * Appends pair (va, vb)'s rounds to out (at most max): a control round
 * when control is set, then isolated rounds (warm-up + repeats) for each
 * (variant, side, role) not seen before, then for each order enabled
 * (ab: A leads, ba: B leads) and each delay a warm-up and `repeats` co-run
 * rounds. Returns the count, or -1 when max is too small.
 */
int zoo_plan_pair(struct zoo_plan_state *p, int va, int vb, int order_ab,
                  int order_ba, int n_delays, int repeats, int control,
                  struct zoo_round *out, int max);

/* The hash of a run's schedule inputs (pair names, delays, orders,
 * repeats): equal in both processes of a two-process run, or they would
 * not take part in the same rounds. */
unsigned long long zoo_plan_hash(const char *const *names_a,
                                 const char *const *names_b, int n_pairs,
                                 const struct zoo_delay *d, int n_delays,
                                 int order_ab, int order_ba, int repeats);

#endif /* MOSAIC_ZOO_OFFSET_PLAN_H */
