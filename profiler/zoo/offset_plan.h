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

/* Marks iso key `key` as not measured, so that the next pair with that
 * (variant, side, role) gets its isolated rounds again (after they
 * failed). */
void zoo_plan_forget(struct zoo_plan_state *p, int key);

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

/*
 * What the host enqueues for one round of one process's two streams, in
 * order (corun-offset). A launch of a measured kernel may block the host
 * (a library's synchronisation, a lazy load, a full launch queue), so both
 * protocol kernels come before either measured kernel: the leader's
 * protocol kernel spins until the follower's runs, and the host must never
 * be stuck between enqueueing the two.
 */
enum zoo_step_op {
    ZOO_STEP_WAIT_GATE = 0,   /* the stream waits for the round's gate */
    ZOO_STEP_SYNC = 1,        /* the protocol kernel (lead or follow) */
    ZOO_STEP_EV_START = 2,    /* the event before the measured kernel */
    ZOO_STEP_KERNEL = 3,      /* the measured kernel (when it runs) */
    ZOO_STEP_EV_END = 4       /* the event after it */
};

struct zoo_step {
    int op;       /* enum zoo_step_op */
    int side;     /* the stream: 0 A's, 1 B's */
};

#define ZOO_ROUND_MAX_STEPS 10

/* Fills out with round r's steps; returns their count. */
int zoo_round_steps(const struct zoo_round *r, struct zoo_step *out);

/* The hash of a run's schedule inputs (pair names, delays, orders,
 * repeats): equal in both processes of a two-process run, or they would
 * not take part in the same rounds. */
unsigned long long zoo_plan_hash(const char *const *names_a,
                                 const char *const *names_b, int n_pairs,
                                 const struct zoo_delay *d, int n_delays,
                                 int order_ab, int order_ba, int repeats);

#endif /* MOSAIC_ZOO_OFFSET_PLAN_H */
