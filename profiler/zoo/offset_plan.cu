/*
 * The schedule of offset co-runs: delay parsing, the rounds of one pair,
 * the schedule hash (offset_plan.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offset.h"
#include "offset_plan.h"

int zoo_parse_delays(const char *s, struct zoo_delay *out, int max, char *err,
                     size_t errlen)
{
    char buf[1024];
    char *tok, *save = NULL, *end;
    int n = 0;
    size_t len = strlen(s);

    if (len == 0 || len >= sizeof(buf)) {
        snprintf(err, errlen, "--delays '%s': expected a comma-separated list "
                 "such as 0,5,20,0.5x,1x (us, or multiples of the leader's "
                 "isolated duration)", s);
        return -1;
    }
    memcpy(buf, s, len + 1);
    for (tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        size_t tl = strlen(tok);
        int rel = tl > 1 && tok[tl - 1] == 'x';
        double v;

        if (n >= max) {
            snprintf(err, errlen, "--delays: more than %d delays", max);
            return -1;
        }
        if (rel)
            tok[tl - 1] = 0;
        v = strtod(tok, &end);
        if (end == tok || *end || !isfinite(v) || v < 0 ||
            (rel ? (v <= 0 || v > 100) : v > 1e6)) {
            snprintf(err, errlen, "--delays: bad delay '%s%s' (a number of "
                     "us in 0..1000000, or a multiple in (0, 100] of the "
                     "leader's isolated duration followed by x, e.g. 0.5x)",
                     tok, rel ? "x" : "");
            return -1;
        }
        memset(&out[n], 0, sizeof(out[n]));
        if (rel)
            out[n].x = v;
        else
            out[n].us = v;
        snprintf(out[n].spec, sizeof(out[n].spec), "%.6g%s", v,
                 rel ? "x" : "");
        n++;
    }
    if (n == 0) {
        snprintf(err, errlen, "--delays '%s': no delays given", s);
        return -1;
    }
    return n;
}

int zoo_plan_init(struct zoo_plan_state *p, int n_variants,
                  int collapse_sides)
{
    memset(p, 0, sizeof(*p));
    p->iso_seen = (unsigned char *)calloc((size_t)n_variants * 4 + 4, 1);
    if (!p->iso_seen)
        return -1;
    p->n_variants = n_variants;
    p->collapse_sides = collapse_sides;
    return 0;
}

void zoo_plan_free(struct zoo_plan_state *p)
{
    free(p->iso_seen);
    p->iso_seen = NULL;
}

int zoo_plan_iso_key(const struct zoo_plan_state *p, int vi, int side,
                     int role)
{
    if (p->collapse_sides)
        side = 0;
    return (vi * 2 + side) * 2 + role;
}

void zoo_plan_forget(struct zoo_plan_state *p, int key)
{
    if (key >= 0 && key < p->n_variants * 4 + 4)
        p->iso_seen[key] = 0;
}

static int plan_push(struct zoo_plan_state *p, struct zoo_round *out,
                     int *n, int max, int kind, int leader, int run_a,
                     int run_b, int iso_side, int delay_i, int warm)
{
    struct zoo_round *r;

    if (*n >= max)
        return -1;
    r = &out[(*n)++];
    memset(r, 0, sizeof(*r));
    r->seq = ++p->seq;
    r->kind = kind;
    r->leader = leader;
    r->run[0] = run_a;
    r->run[1] = run_b;
    r->iso_side = iso_side;
    r->delay_i = delay_i;
    r->warm = warm;
    return 0;
}

int zoo_plan_pair(struct zoo_plan_state *p, int va, int vb, int order_ab,
                  int order_ba, int n_delays, int repeats, int control,
                  struct zoo_round *out, int max)
{
    int n = 0, side, role, k, o, d;

    if (control &&
        plan_push(p, out, &n, max, ZOO_ROUND_CONTROL, 0, 0, 0, -1, -1, 1))
        return -1;
    for (side = 0; side < 2; side++) {
        int vi = side ? vb : va;

        for (role = 0; role < 2; role++) {
            int key = zoo_plan_iso_key(p, vi, side, role);
            /* role 0: this side leads; 1: the other side leads. */
            int leader = role == 0 ? side : 1 - side;

            if (p->iso_seen[key])
                continue;
            p->iso_seen[key] = 1;
            for (k = 0; k <= repeats; k++)
                if (plan_push(p, out, &n, max, ZOO_ROUND_ISO, leader,
                              side == 0, side == 1, side, -1, k == 0))
                    return -1;
        }
    }
    for (o = 0; o < 2; o++) {
        if (!(o ? order_ba : order_ab))
            continue;
        for (d = 0; d < n_delays; d++)
            for (k = 0; k <= repeats; k++)
                if (plan_push(p, out, &n, max, ZOO_ROUND_CORUN, o, 1, 1, -1,
                              d, k == 0))
                    return -1;
    }
    return n;
}

static void step_push(struct zoo_step *out, int *n, int op, int side)
{
    out[*n].op = op;
    out[*n].side = side;
    (*n)++;
}

int zoo_round_steps(const struct zoo_round *r, struct zoo_step *out)
{
    int n = 0, j, s;

    for (j = 0; j < 2; j++) {
        s = j == 0 ? r->leader : 1 - r->leader;
        step_push(out, &n, ZOO_STEP_WAIT_GATE, s);
        step_push(out, &n, ZOO_STEP_SYNC, s);
        step_push(out, &n, ZOO_STEP_EV_START, s);
    }
    /* The leader's kernel first, as `corun` enqueues A first in order ab
     * (on the GPU the protocol decides who starts when). */
    for (j = 0; j < 2; j++) {
        s = j == 0 ? r->leader : 1 - r->leader;
        if (r->run[s])
            step_push(out, &n, ZOO_STEP_KERNEL, s);
        step_push(out, &n, ZOO_STEP_EV_END, s);
    }
    return n;
}

unsigned long long zoo_plan_hash(const char *const *names_a,
                                 const char *const *names_b, int n_pairs,
                                 const struct zoo_delay *d, int n_delays,
                                 int order_ab, int order_ba, int repeats)
{
    unsigned long long h = 0;
    int i, v[4] = {n_pairs, order_ab, order_ba, repeats};

    h = zoo_sync_hash(h, v, sizeof(v));
    for (i = 0; i < n_pairs; i++) {
        h = zoo_sync_hash(h, names_a[i], strlen(names_a[i]) + 1);
        h = zoo_sync_hash(h, names_b[i], strlen(names_b[i]) + 1);
    }
    for (i = 0; i < n_delays; i++)
        h = zoo_sync_hash(h, d[i].spec, strlen(d[i].spec) + 1);
    return h;
}
