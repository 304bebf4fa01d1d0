/*
 * Where the zoo harness runs work (zoo_streams.cu): a configuration is the
 * full GPU or a green context (greenctx.h), with two non-blocking streams.
 * Every configuration a run uses is checked first (cfg_check), since what
 * it relies on is driver behaviour.
 */
#ifndef MOSAIC_ZOO_STREAMS_H
#define MOSAIC_ZOO_STREAMS_H

#include <cuda_runtime.h>

#include "greenctx.h"
#include "zoo_harness.h"

/* One way of running work: the full GPU or a green context, two streams. */
struct xcfg {
    char label[32];
    int green;
    int sms_requested;
    int sms;                      /* SMs the work may use */
    int sms_ctx;                  /* what the green context reports */
    struct gc_part part;
    cudaStream_t s[2];
    int ok;
    char err[512];
    unsigned char seen[ZOO_MAX_SMID];
    int n_seen;
};

/* Each returns 0 or an error, with c->ok and c->err set either way. */
int cfg_open_full(struct xcfg *c, const char *label);
/* A green context of at least n SMs (the driver rounds up). */
int cfg_open_green(struct xcfg *c, int n, const char *label);
/* Both parts of one split of x SMs and the rest: disjoint SM sets. */
int cfg_open_split(struct xcfg *a, struct xcfg *b, int x);
void cfg_close(struct xcfg *c);

/*
 * The self-check of one configuration, written as a "stream_check" record:
 * a probe grid of several waves must reach exactly its SMs, also when
 * replayed from a graph captured on its stream; an event on its stream
 * must time against the gate event; the two parts of a split (other) must
 * not share an SM.
 */
void cfg_check(struct xcfg *c, const struct xcfg *other);
/*
 * The two configurations of a co-run, opened and checked: each kernel on
 * all SMs ("shared_a", "shared_b"), or A on a green context of x SMs and B
 * on the rest (partitioned). Returns 0, or -1 after saying on stderr why
 * there are no streams.
 */
int cfg_open_corun_pair(struct xcfg *a, struct xcfg *b, int partitioned, int x);
/* "sms", "sms_requested", "green" of c. */
void j_cfg(const struct xcfg *c);

#endif /* MOSAIC_ZOO_STREAMS_H */
