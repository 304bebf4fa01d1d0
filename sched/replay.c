/*
 * mosaic-sched replay: recorded HP and BE traces through a policy on a
 * simulated timeline (docs/replay.md).
 *
 * The timeline is discrete-event: nothing sleeps, and the policy's clock
 * (mosaic__now_ns, wrapped at link time) reads the simulated time, so a
 * minute of recorded work replays in milliseconds. The policy is the
 * daemon's own (mosaic__policy_open, decide and observe called as the
 * daemon calls them); what replay models in place of the daemon, the
 * shim and the GPU is:
 *
 *  - HP: the recorded requests in order, each the recorded kernel
 *    sequence, run back to back on one stream; the next request begins the
 *    recorded gap after the previous one ended (the recorded program waits
 *    for each request, as hp_service does).
 *  - BE: the recorded kernel sequence, repeated; each kernel asks (WANT),
 *    waits for a grant (decided again on every event and every
 *    decide_us), runs, and is reported done when it completes, as the
 *    shim's host gate does.
 *  - The GPU: each kernel's isolated duration is its profiled duration
 *    (the measured dataset) times the trace's own time scale, the median
 *    of trace time over profiled time of the HP requests no BE kernel
 *    overlapped and of the BE kernels no HP request overlapped. Two kernels
 *    side by side slow each other by the simulated GPU's rule
 *    (tests/fakecuda/simgpu.c, pair_rates): one measured H200 repeat drawn
 *    for the order they dispatched in, or the unmeasured-pair rule. The
 *    dataset is loaded by the simulated GPU's own loader (simgpu_data.c),
 *    so the two read the same numbers the same way.
 *  - SM partitions (sm-mode partition, policy static): HP on hp-sms SMs,
 *    BE on the rest, as the daemon's WELCOME tells the two shims. A kernel
 *    alone on n SMs takes its full-GPU time times its variant's measured
 *    ratio t(n) / t(132) (the curves the loader keeps: the split sweep and
 *    the partitioned co-runs' isolated runs), else the waves rule; beside
 *    a kernel on the disjoint rest, one partitioned repeat of the two
 *    variants at the split nearest this side's SM count, or the memory
 *    rule. The rules are written here again, from docs/simgpu.md, and not
 *    taken from simgpu.c: the simulated GPU is what replay is judged
 *    against (tests/sched/test_replay_part.sh), so the two must be
 *    separate implementations of one documented model.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "json.h"
#include "replay.h"
#include "simgpu_shm.h"

/* The H200's copy bandwidth (read + write), the simulated GPU's
 * SIM_PEAK_BPS (tests/fakecuda/simgpu.c, where the measurement is named):
 * the unmeasured-pair rule divides DRAM demand by it. */
#define REPLAY_PEAK_BPS 3918e9
/* An unprofiled kernel takes this long (isolated, unscaled), as on the
 * simulated GPU (SIM_DEFAULT_US). */
#define REPLAY_DEFAULT_NS 100e3
/* The simulated GPU's lowest rate (SIM_MIN_RATE). */
#define REPLAY_MIN_RATE 0.02
/* Simulated time starts here, not at 0: the policies take a zero time for
 * "never". */
#define REPLAY_T0 1000000000000ull

/* ---- the simulated clock ---------------------------------------------- */

static int sim_clock_on;
static uint64_t sim_clock_ns;

uint64_t __wrap_mosaic__now_ns(void)
{
    return sim_clock_on ? sim_clock_ns : __real_mosaic__now_ns();
}

/* ---- traces ------------------------------------------------------------ */

enum tev_type { T_HP_BEGIN, T_HP_LAUNCH, T_HP_END, T_BE_WANT, T_BE_GRANT, T_BE_DONE,
                T_GONE };

static const char *const tev_names[] = {"hp_begin", "hp_launch", "hp_end", "be_want",
                                        "be_grant", "be_done",  "client_gone"};

struct tev {
    int type;
    uint32_t client;
    uint64_t t, id;
};

struct tname {
    uint64_t id;
    char *key;
};

struct mosaic__trace {
    char path[4096];
    struct tev *ev;
    size_t n, cap;
    struct tname *names;
    size_t nnames, capnames;
};

void mosaic__trace_free(struct mosaic__trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nnames; i++)
        free(t->names[i].key);
    free(t->names);
    free(t->ev);
    free(t);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    void *np;
    size_t nc;

    if (need <= *cap)
        return 0;
    nc = *cap ? *cap * 2 : 1024;
    while (nc < need)
        nc *= 2;
    np = realloc(*p, nc * elem);
    if (!np)
        return MOSAIC_ENOMEM;
    *p = np;
    *cap = nc;
    return 0;
}

static int parse_hex_id(const cJSON *o, uint64_t *id)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "id");
    char *end;

    if (!cJSON_IsString(v) || !v->valuestring[0])
        return -1;
    errno = 0;
    *id = strtoull(v->valuestring, &end, 16);
    return errno || *end ? -1 : 0;
}

static int parse_uint(const cJSON *o, const char *k, uint64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0)
        return -1;
    *out = (uint64_t)v->valuedouble;
    return 0;
}

/* One line after the header; 1 for the end record, 0 for another, a
 * negative code with err set for a bad one. */
static int trace_line(struct mosaic__trace *t, const char *path, unsigned lineno,
                      const cJSON *o, char *err, size_t errlen)
{
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "ev");
    const char *name = cJSON_IsString(ev) ? ev->valuestring : NULL;
    uint64_t client, count;
    struct tev e = {0};

    if (!name) {
        snprintf(err, errlen, "%s:%u: no \"ev\" string: not a %s event line (record the "
                 "trace again)", path, lineno, MOSAIC__TRACE_SCHEMA);
        return MOSAIC_EFORMAT;
    }
    if (strcmp(name, "end") == 0) {
        if (parse_uint(o, "events", &count) != 0) {
            snprintf(err, errlen, "%s:%u: the end record has no \"events\" count (record the "
                     "trace again)", path, lineno);
            return MOSAIC_EFORMAT;
        }
        if (count != t->n) {
            snprintf(err, errlen, "%s:%u: the end record counts %llu events but the file holds "
                     "%zu: the file was cut or edited (record the trace again)", path, lineno,
                     (unsigned long long)count, t->n);
            return MOSAIC_EFORMAT;
        }
        return 1;
    }
    if (strcmp(name, "kernel") == 0) {
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(o, "key");
        uint64_t id;
        if (parse_hex_id(o, &id) != 0 || !cJSON_IsString(key)) {
            snprintf(err, errlen, "%s:%u: a kernel line needs \"id\" (16 hex digits) and "
                     "\"key\" (a string)", path, lineno);
            return MOSAIC_EFORMAT;
        }
        if (grow((void **)&t->names, &t->capnames, t->nnames + 1, sizeof(*t->names)) != 0)
            return MOSAIC_ENOMEM;
        t->names[t->nnames].id = id;
        t->names[t->nnames].key = strdup(key->valuestring);
        if (!t->names[t->nnames].key)
            return MOSAIC_ENOMEM;
        t->nnames++;
        return 0;
    }
    e.type = -1;
    for (int i = 0; i < (int)(sizeof(tev_names) / sizeof(tev_names[0])); i++)
        if (strcmp(name, tev_names[i]) == 0)
            e.type = i;
    if (e.type < 0) {
        snprintf(err, errlen, "%s:%u: unknown event \"%s\" (this mosaic-sched reads %s: "
                 "hp_begin, hp_launch, hp_end, be_want, be_grant, be_done, client_gone, "
                 "kernel, end)", path, lineno, name, MOSAIC__TRACE_SCHEMA);
        return MOSAIC_EFORMAT;
    }
    if (parse_uint(o, "t", &e.t) != 0 || parse_uint(o, "client", &client) != 0 ||
        client > UINT32_MAX) {
        snprintf(err, errlen, "%s:%u: a %s event needs \"t\" (ns) and \"client\" (numbers)",
                 path, lineno, name);
        return MOSAIC_EFORMAT;
    }
    e.client = (uint32_t)client;
    if (e.type == T_HP_BEGIN || e.type == T_HP_END) {
        if (parse_uint(o, "req", &e.id) != 0) {
            snprintf(err, errlen, "%s:%u: a %s event needs \"req\" (a number)", path, lineno,
                     name);
            return MOSAIC_EFORMAT;
        }
    } else if (e.type != T_GONE && parse_hex_id(o, &e.id) != 0) {
        snprintf(err, errlen, "%s:%u: a %s event needs \"id\" (16 hex digits)", path, lineno,
                 name);
        return MOSAIC_EFORMAT;
    }
    if (grow((void **)&t->ev, &t->cap, t->n + 1, sizeof(*t->ev)) != 0)
        return MOSAIC_ENOMEM;
    t->ev[t->n++] = e;
    return 0;
}

static int check_header(const char *path, const cJSON *o, char *err, size_t errlen)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "schema");

    if (!cJSON_IsString(s)) {
        snprintf(err, errlen, "%s:1: not a mosaic trace (its first line has no \"schema\"; "
                 "traces come from `mosaic-sched record -o FILE`)", path);
        return MOSAIC_EFORMAT;
    }
    if (strcmp(s->valuestring, MOSAIC__TRACE_SCHEMA) != 0) {
        snprintf(err, errlen, "%s:1: the trace is %.64s, this mosaic-sched reads only %s: "
                 "replay it with the mosaic-sched that recorded it, or record it again",
                 path, s->valuestring, MOSAIC__TRACE_SCHEMA);
        return MOSAIC_EFORMAT;
    }
    return 0;
}

int mosaic__trace_load(const char *path, struct mosaic__trace **out, char *err, size_t errlen)
{
    struct mosaic__trace *t;
    /* Opened without blocking and checked to be a regular file first: a
     * FIFO would keep replay waiting for a writer, and a device or a
     * directory is no trace. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    FILE *fp;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    unsigned lineno = 0;
    int rc = 0, ended = 0;

    *out = NULL;
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return MOSAIC_EIO;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (a FIFO, device or directory): give "
                 "replay the trace file that record wrote", path);
        close(fd);
        return MOSAIC_EIO;
    }
    fp = fdopen(fd, "r");
    if (!fp) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return MOSAIC_EIO;
    }
    t = calloc(1, sizeof(*t));
    if (!t) {
        fclose(fp);
        return MOSAIC_ENOMEM;
    }
    snprintf(t->path, sizeof(t->path), "%s", path);
    while (rc == 0 && (got = getline(&line, &lcap, fp)) >= 0) {
        cJSON *o = NULL;
        size_t len = (size_t)got;
        int cut = len == 0 || line[len - 1] != '\n';
        char where[300], perr[512];
        lineno++;
        if (ended) {
            snprintf(err, errlen, "%s:%u: a line after the end record (two traces joined? "
                     "pass each file as its own argument)", path, lineno);
            rc = MOSAIC_EFORMAT;
            break;
        }
        /* The project's strict reader (core/json.h): a key twice in a line,
         * a NUL, text after the object are refused as in every other file
         * the tools read, rather than half-read by cJSON. */
        if (!cut)
            len--;
        if (len && line[len - 1] == '\r')
            len--;
        snprintf(where, sizeof(where), "%s:%u", path, lineno);
        if (mosaic__json_parse_strict(where, line, len, &o, perr, sizeof(perr)) != 0 ||
            !cJSON_IsObject(o)) {
            if (cut)
                snprintf(err, errlen, "%s:%u: not a JSON object: the file ends in the middle "
                         "of a line, it was truncated (record the trace again)", path, lineno);
            else if (o)
                snprintf(err, errlen, "%s:%u: not a JSON object (record the trace again)", path,
                         lineno);
            else
                snprintf(err, errlen, "%s (record the trace again)", perr);
            rc = MOSAIC_EFORMAT;
        } else if (lineno == 1) {
            rc = check_header(path, o, err, errlen);
        } else {
            rc = trace_line(t, path, lineno, o, err, errlen);
            if (rc == 1) {
                ended = 1;
                rc = 0;
            }
        }
        cJSON_Delete(o);
    }
    free(line);
    if (rc == 0 && ferror(fp)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        rc = MOSAIC_EIO;
    }
    fclose(fp);
    if (rc == 0 && lineno == 0) {
        snprintf(err, errlen, "%s: empty file: not a %s trace", path, MOSAIC__TRACE_SCHEMA);
        rc = MOSAIC_EFORMAT;
    }
    if (rc == 0 && !ended) {
        snprintf(err, errlen, "%s: truncated after line %u: no end record (the recording "
                 "daemon did not stop cleanly; stop it with SIGTERM and record again)", path,
                 lineno);
        rc = MOSAIC_EFORMAT;
    }
    if (rc == MOSAIC_ENOMEM)
        snprintf(err, errlen, "%s: out of memory", path);
    if (rc != 0) {
        mosaic__trace_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* ---- the workloads, as replay runs them -------------------------------- */

/* A distinct kernel id of the traces, and what the dataset says of it. */
struct kinfo {
    uint64_t id;
    int sim;     /* index into the dataset's kernels, -1 unprofiled */
    double dur;  /* isolated ns on the H200 (the profile's) */
    /* Its time alone on HP's SMs [0] and on BE's [1] over its full-GPU
     * time (1 and 1 on the whole GPU). */
    double on_side[2];
};

struct hpreq {
    double begin, end; /* trace ns */
    double gap_after;  /* to the next request's begin */
    double host;       /* its host time (launch, sync), ns: not slowed by co-runs */
    unsigned k0, nk;   /* its kernels: kseq[k0 .. k0 + nk) */
    int isolated;
};

struct bek {
    int ki;              /* index into kinfo */
    double grant, done;  /* trace ns; done < 0: never reported */
};

struct work {
    struct sim_shm *m;
    struct kinfo *ki;
    unsigned nki;
    struct hpreq *req;
    unsigned nreq;
    int *kseq; /* HP kernel sequence, kinfo indices */
    unsigned nkseq;
    struct bek *be;
    unsigned nbe;
    /* The BE step (find_step): be[be0 .. be0 + period) is one step, the
     * start-up kernels before be0 are not replayed; full and tail say how
     * many whole steps and kernels of a last partial one the recording
     * held after them. found 0: no repeating step, the whole recording is
     * one. */
    unsigned be0, period, be_full, be_tail;
    int be_found;
    double hp_scale, be_scale, gpu_scale, hp_iso_p99_ns, be_gap_ns, hp_start_ns;
    unsigned unprofiled;
    /* The split: HP's SMs [0] and BE's [1]; 0 and 0 for the whole GPU. */
    unsigned sms[2];
};

static int kinfo_of(struct work *w, const struct mosaic__trace *t, uint64_t id)
{
    const char *key = NULL;

    for (unsigned i = 0; i < w->nki; i++)
        if (w->ki[i].id == id)
            return (int)i;
    w->ki[w->nki].id = id;
    w->ki[w->nki].sim = -1;
    for (size_t i = 0; i < t->nnames; i++)
        if (t->names[i].id == id && t->names[i].key[0])
            key = t->names[i].key;
    /* The trace names its kernels when the recording daemon had the
     * profiles; otherwise the dataset's keys are hashed to find them. */
    for (uint32_t i = 0; i < w->m->nkernels; i++) {
        if (key ? strcmp(w->m->kernels[i].key, key) == 0
                : mosaic__kernel_id(w->m->kernels[i].key) == id) {
            w->ki[w->nki].sim = (int)i;
            break;
        }
    }
    w->ki[w->nki].on_side[0] = w->ki[w->nki].on_side[1] = 1.0;
    if (w->ki[w->nki].sim >= 0) {
        w->ki[w->nki].dur = w->m->kernels[w->ki[w->nki].sim].dur_ns;
    } else {
        w->ki[w->nki].dur = REPLAY_DEFAULT_NS;
        w->unprofiled++;
    }
    return (int)w->nki++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The p99 by nearest rank, as scripts/arbiter_eval.sh computes it (its
 * Python round() rounds half to even, as rint does). */
static double p99(double *v, unsigned n)
{
    long i;
    qsort(v, n, sizeof(*v), cmp_double);
    i = (long)rint(0.99 * n + 0.5) - 1;
    if (i < 0)
        i = 0;
    if (i > (long)n - 1)
        i = (long)n - 1;
    return v[i];
}

/* The BE step in the granted sequence. A BE program repeats one step, but
 * its recording starts with kernels it runs once (the framework's start-up:
 * allocations, cuDNN's algorithm search, the first step's own set-up) and
 * stops wherever the recording stopped, in the middle of a step. So the
 * step is the shortest period p such that, after some start-up prefix s,
 * every kernel equals the one p before it (a trailing partial step agrees
 * with this by itself), and the periodic part holds at least 2 full
 * periods and at least half of the granted kernels: without the last rule
 * two equal kernels at the very end would be a "step" of 1. The prefix is
 * the shortest for that p. Returns 1 with the step found, 0 with none (the
 * caller then takes the whole recording as one step, as before).
 *
 * Cost: for each candidate p the scan runs back from the end to the first
 * mismatch, so a p that is not the period costs about as many kernels as
 * the true step is long; a recording of 120,703 kernels with a step of 284
 * (ResNet-50 inference on the H200, 2026-12-02) takes a few milliseconds. */
static int find_step(const struct bek *be, unsigned n, unsigned *prefix, unsigned *period)
{
    for (unsigned p = 1; p <= n / 2; p++) {
        unsigned i = n, s;
        while (i > p && be[i - 1].ki == be[i - 1 - p].ki)
            i--;
        /* be[i - 1] differs from be[i - 1 - p] (or i == p): the periodic
         * part starts at i - p. */
        s = i - p;
        if (n - s >= 2 * p && 2 * (n - s) >= n) {
            *prefix = s;
            *period = p;
            return 1;
        }
    }
    return 0;
}

/* Finds the HP and the BE client, builds their request and kernel lists,
 * and the trace's time scales from its isolated parts, leaving the first
 * warmup HP requests (the service's start-up) out of those. */
static int build(struct work *w, struct mosaic__trace *const *tr, unsigned ntr,
                 unsigned warmup, char *err, size_t errlen)
{
    const struct mosaic__trace *hpt = NULL, *bet = NULL;
    uint32_t hpc = 0, bec = 0;
    size_t total = 0;
    double *ratio, hp_first = -1, be_first = -1;
    unsigned nr = 0, ngap = 0;
    double *gaps;
    unsigned *gap_of; /* the kernel each gap follows */

    for (unsigned f = 0; f < ntr; f++) {
        for (size_t i = 0; i < tr[f]->n; i++) {
            const struct tev *e = &tr[f]->ev[i];
            int hp = e->type <= T_HP_END, be = e->type >= T_BE_WANT && e->type <= T_BE_DONE;
            if (hp && !(hpt == tr[f] && hpc == e->client)) {
                if (hpt) {
                    snprintf(err, errlen, "%s: a second HP client (%u; the first: %u in %s): "
                             "replay runs one HP and one BE client", tr[f]->path, e->client,
                             hpc, hpt->path);
                    return MOSAIC_EINVAL;
                }
                hpt = tr[f];
                hpc = e->client;
            }
            if (be && !(bet == tr[f] && bec == e->client)) {
                if (bet) {
                    snprintf(err, errlen, "%s: a second BE client (%u; the first: %u in %s): "
                             "replay runs one HP and one BE client", tr[f]->path, e->client,
                             bec, bet->path);
                    return MOSAIC_EINVAL;
                }
                bet = tr[f];
                bec = e->client;
            }
        }
        total += tr[f]->n;
    }
    if (!hpt || !bet) {
        snprintf(err, errlen, "the traces hold no %s client: pass a trace of each (recorded "
                 "together, or each alone)", !hpt ? "HP" : "BE");
        return MOSAIC_EINVAL;
    }
    w->ki = calloc(total + 1, sizeof(*w->ki));
    w->req = calloc(total + 1, sizeof(*w->req));
    w->kseq = calloc(total + 1, sizeof(*w->kseq));
    w->be = calloc(total + 1, sizeof(*w->be));
    gaps = calloc(total + 1, sizeof(*gaps));
    gap_of = calloc(total + 1, sizeof(*gap_of));
    ratio = calloc(total + 1, sizeof(*ratio));
    if (!w->ki || !w->req || !w->kseq || !w->be || !gaps || !gap_of || !ratio) {
        free(gaps);
        free(gap_of);
        free(ratio);
        snprintf(err, errlen, "replay: out of memory");
        return MOSAIC_ENOMEM;
    }
    /* HP: launches belong to the request open at the time; a launch with
     * none open belongs to the next one (the shim posts a learned begin
     * just before the launch that opens it). */
    {
        int open = 0;
        unsigned pending0 = 0;
        uint64_t open_id = 0;
        for (size_t i = 0; i < hpt->n; i++) {
            const struct tev *e = &hpt->ev[i];
            if (e->client != hpc)
                continue;
            if (e->type == T_HP_LAUNCH) {
                w->kseq[w->nkseq++] = kinfo_of(w, hpt, e->id);
            } else if (e->type == T_HP_BEGIN && !open) {
                open = 1;
                open_id = e->id;
                w->req[w->nreq] = (struct hpreq){.begin = (double)e->t, .k0 = pending0};
                if (hp_first < 0)
                    hp_first = (double)e->t;
            } else if (e->type == T_HP_END && open && e->id == open_id) {
                struct hpreq *q = &w->req[w->nreq];
                open = 0;
                q->end = (double)e->t;
                q->nk = w->nkseq - q->k0;
                pending0 = w->nkseq;
                if (q->nk > 0 && q->end >= q->begin)
                    w->nreq++;
            }
        }
        for (unsigned i = 0; i + 1 < w->nreq; i++)
            w->req[i].gap_after = fmax(0.0, w->req[i + 1].begin - w->req[i].end);
    }
    /* BE: each granted kernel with its grant and done times. */
    for (size_t i = 0; i < bet->n; i++) {
        const struct tev *e = &bet->ev[i];
        if (e->client != bec)
            continue;
        if (e->type == T_BE_WANT && be_first < 0)
            be_first = (double)e->t;
        if (e->type == T_BE_GRANT) {
            w->be[w->nbe++] = (struct bek){.ki = kinfo_of(w, bet, e->id),
                                           .grant = (double)e->t, .done = -1};
        } else if (e->type == T_BE_DONE) {
            for (unsigned k = 0; k < w->nbe; k++) {
                if (w->be[k].done < 0 && w->ki[w->be[k].ki].id == e->id) {
                    w->be[k].done = (double)e->t;
                    break;
                }
            }
        } else if (e->type == T_BE_WANT && w->nbe > 0) {
            /* The host's time between kernels: from one's done to the next
             * one's want, 0 for a want already queued behind a running
             * kernel (a deep stream behind the device gate). */
            double done = w->be[w->nbe - 1].done;
            gap_of[ngap] = w->nbe - 1;
            gaps[ngap++] = done >= 0 ? fmax(0.0, (double)e->t - done) : 0.0;
        }
    }
    /* The step, and the start-up kernels before it, which are not
     * replayed: the real co-runs start HP once the BE job is past its
     * start-up (svc_be's --warmup steps, its ready file). */
    w->be_found = find_step(w->be, w->nbe, &w->be0, &w->period);
    if (!w->be_found) {
        w->be0 = 0;
        w->period = w->nbe;
    }
    w->be_full = w->period ? (w->nbe - w->be0) / w->period : 0;
    w->be_tail = w->period ? (w->nbe - w->be0) % w->period : 0;
    /* The mean, not the median: with the device gate a step's host time
     * falls between its last kernel and the next step's first, and
     * throughput follows the sum. Only the gaps after the start-up: its
     * host work (loading, the algorithm search) is not the step's. */
    {
        unsigned ng = 0;
        w->be_gap_ns = 0.0;
        for (unsigned i = 0; i < ngap; i++)
            if (gap_of[i] >= w->be0) {
                w->be_gap_ns += gaps[i];
                ng++;
            }
        w->be_gap_ns = ng ? w->be_gap_ns / ng : 0.0;
    }
    free(gaps);
    free(gap_of);
    if (w->nreq == 0 || w->nbe == 0) {
        free(ratio);
        snprintf(err, errlen, "%s: %s (record while the %s program runs)",
                 w->nreq == 0 ? hpt->path : bet->path,
                 w->nreq == 0 ? "no complete HP request with a kernel" : "no BE kernel granted",
                 w->nreq == 0 ? "HP" : "BE");
        return MOSAIC_EINVAL;
    }
    if (warmup >= w->nreq) {
        free(ratio);
        snprintf(err, errlen, "--warmup %u: the HP trace holds only %u requests", warmup,
                 w->nreq);
        return MOSAIC_EINVAL;
    }
    /* Isolated HP requests: no BE kernel of the same trace ran during them
     * (a BE kernel never reported done ran to the trace's end). The time
     * scale, the isolated p99 and the median host excess come from those
     * after the warm-up: a service's first requests (a PyTorch model's
     * CUDA graph capture, the allocator's first calls) take several times
     * a later one (the Llama service on the H200, 2026-12-02: 24 start-up
     * requests put the isolated p99 at 7.01 ms against 1.88 measured). */
    nr = 0;
    for (unsigned i = 0; i < w->nreq; i++) {
        struct hpreq *q = &w->req[i];
        double sum = 0;
        q->isolated = 1;
        if (hpt == bet) {
            for (unsigned k = 0; k < w->nbe && q->isolated; k++) {
                double done = w->be[k].done < 0 ? INFINITY : w->be[k].done;
                if (w->be[k].grant < q->end && done > q->begin)
                    q->isolated = 0;
            }
        }
        if (!q->isolated || i < warmup)
            continue;
        for (unsigned k = 0; k < q->nk; k++)
            sum += w->ki[w->kseq[q->k0 + k]].dur;
        ratio[nr++] = (q->end - q->begin) / sum;
    }
    if (nr == 0) {
        free(ratio);
        snprintf(err, errlen, "%s: every HP request after the %u of the warm-up ran beside BE "
                 "work, so none gives its isolated duration: record the HP program alone (or "
                 "with --policy hold-be)", hpt->path, warmup);
        return MOSAIC_EINVAL;
    }
    w->hp_scale = median(ratio, nr);
    nr = 0;
    for (unsigned i = warmup; i < w->nreq; i++)
        if (w->req[i].isolated)
            ratio[nr++] = w->req[i].end - w->req[i].begin;
    w->hp_iso_p99_ns = p99(ratio, nr);
    nr = 0;
    for (unsigned k = w->be0; k < w->nbe; k++) {
        int alone = w->be[k].done >= 0;
        if (hpt == bet)
            for (unsigned i = 0; i < w->nreq && alone; i++)
                if (w->be[k].grant < w->req[i].end && w->be[k].done > w->req[i].begin)
                    alone = 0;
        if (alone)
            ratio[nr++] = (w->be[k].done - w->be[k].grant) / w->ki[w->be[k].ki].dur;
    }
    if (nr == 0) {
        free(ratio);
        snprintf(err, errlen, "%s: every BE kernel ran beside an HP request, so none gives "
                 "its isolated duration: record the BE program alone", bet->path);
        return MOSAIC_EINVAL;
    }
    w->be_scale = median(ratio, nr);
    free(ratio);
    /* One GPU runs both, so its time scale is one number: the smaller of
     * the two. What either role takes beyond it is host time (launches,
     * the sync's wake-up, the BE grant round trip), which a co-running
     * kernel does not stretch: an HP request's own excess (or, for a
     * request BE overlapped, the median excess) comes after its last
     * kernel, and a BE kernel's after it, before it is reported done. */
    w->gpu_scale = fmin(w->hp_scale, w->be_scale);
    {
        double *ex = calloc(w->nreq, sizeof(*ex));
        unsigned ne = 0;
        if (!ex) {
            snprintf(err, errlen, "replay: out of memory");
            return MOSAIC_ENOMEM;
        }
        for (unsigned i = 0; i < w->nreq; i++) {
            struct hpreq *q = &w->req[i];
            double sum = 0;
            for (unsigned k = 0; k < q->nk; k++)
                sum += w->ki[w->kseq[q->k0 + k]].dur;
            q->host = fmax(0.0, (q->end - q->begin) - sum * w->gpu_scale);
            if (q->isolated && i >= warmup)
                ex[ne++] = q->host;
        }
        {
            double med = median(ex, ne);
            for (unsigned i = 0; i < w->nreq; i++)
                if (!w->req[i].isolated)
                    w->req[i].host = med;
        }
        free(ex);
    }
    /* Where HP starts relative to BE: as recorded when both are in one
     * trace, else at once (the caller may set a lead). */
    w->hp_start_ns = hpt == bet && hp_first > be_first ? hp_first - be_first : 0.0;
    return 0;
}

/* ---- the simulated GPU -------------------------------------------------- */

struct run {
    int on;
    int ki;
    double rem;      /* isolated work left, ns */
    double rate;
    double dispatch; /* start plus a draw within the dispatch jitter */
    uint64_t draw;
    int prio;        /* lower dispatches first (MPS client priority) */
};

static uint64_t rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

static const struct sim_kernel *kern(const struct work *w, const struct run *r)
{
    int s = w->ki[r->ki].sim;
    return s >= 0 ? &w->m->kernels[s] : NULL;
}

static int variant(const struct work *w, const struct run *r)
{
    const struct sim_kernel *k = kern(w, r);
    return k ? k->variant : -1;
}

static const struct sim_pair *pair_of(const struct sim_shm *m, int vf, int vs)
{
    if (vf < 0 || vs < 0)
        return NULL;
    return m->pairs[vf][vs].n > 0 ? &m->pairs[vf][vs] : NULL;
}

/* The simulated GPU's rule for a pair never measured (simgpu.c,
 * rule_slowdown): the larger of summed DRAM demand over the peak and
 * summed share of the block slots, for both. */
static double rule_slowdown(const struct work *w, const struct run *a, const struct run *b)
{
    const struct sim_kernel *ka = kern(w, a), *kb = kern(w, b);
    double bw = (ka ? ka->dram_bps : 0) + (kb ? kb->dram_bps : 0);
    double occ = (ka ? ka->occupancy : 1) + (kb ? kb->occupancy : 1);
    return fmax(1.0, fmax(bw / REPLAY_PEAK_BPS, occ));
}

/* The simulated GPU's two-kernel rates (simgpu.c, pair_rates): one
 * measured repeat for the order they dispatched in, the early finisher at
 * 1/s_e and the other at the rate that ends it at s_l times its work. */
static void pair_rates(const struct work *w, struct run *a, struct run *b)
{
    const struct sim_pair *p, *q;
    double sa, sb;

    if (a->prio != b->prio ? a->prio > b->prio : a->dispatch > b->dispatch) {
        struct run *t = a;
        a = b;
        b = t;
    }
    p = pair_of(w->m, variant(w, a), variant(w, b));
    q = pair_of(w->m, variant(w, b), variant(w, a));
    if (!p && !q) {
        a->rate = b->rate = 1.0 / rule_slowdown(w, a, b);
        return;
    }
    {
        uint64_t draw = a->draw ^ (b->draw * 0x9e3779b97f4a7c15ull);
        if (p) {
            unsigned i = (unsigned)(draw % p->n);
            sa = p->first[i];
            sb = p->second[i];
        } else {
            unsigned i = (unsigned)(draw % q->n);
            sa = q->second[i];
            sb = q->first[i];
        }
    }
    sa = fmax(1.0, sa);
    sb = fmax(1.0, sb);
    {
        struct run *e = a, *l = b;
        double se = sa, sl = sb, de = a->rem, dl = b->rem;
        if (sb * b->rem < sa * a->rem) {
            e = b, l = a, se = sb, sl = sa, de = b->rem, dl = a->rem;
        }
        e->rate = 1.0 / se;
        l->rate = fmin(1.0, fmax(REPLAY_MIN_RATE, 1.0 - (sl - 1.0) * dl / (se * de)));
    }
}

/* ---- the split (docs/simgpu.md, "SM partitions") ----------------------- */

/* How much longer a kernel (index into the dataset, -1 unprofiled) takes
 * alone on n SMs than on all of them. A kernel of a measured variant: the
 * variant's isolated times by SM count (the loader's curve: the split
 * sweep's medians and the partitioned co-runs' isolated runs, sorted,
 * ending at the whole GPU), read linearly between the two counts around n,
 * and below the smallest as the same work on fewer SMs (t x count / n).
 * Otherwise by its waves: the rounds of resident blocks its grid needs on
 * n SMs over those on the whole GPU; an unprofiled kernel as filling the
 * GPU. Never under 1: fewer SMs do not make a kernel faster, and a
 * measured ratio under 1 is the sweep's noise. */
static double alone_on(const struct sim_shm *m, int k, unsigned n)
{
    const struct sim_kernel *sk;
    const struct sim_curve *c;
    double slots, t;
    unsigned j = 0;

    if (n == 0 || n >= SIM_GPU_SMS)
        return 1.0;
    if (k < 0)
        return (double)SIM_GPU_SMS / n;
    sk = &m->kernels[k];
    c = sk->variant >= 0 ? &m->curves[sk->variant] : NULL;
    if (c && c->n >= 2 && c->sms[c->n - 1] == SIM_GPU_SMS) {
        while (c->sms[j] < n) /* stops at the whole GPU at the latest */
            j++;
        if (j == 0)
            t = c->us[0] * c->sms[0] / n;
        else
            t = c->us[j - 1] + (c->us[j] - c->us[j - 1]) * (double)(n - c->sms[j - 1]) /
                                   (double)(c->sms[j] - c->sms[j - 1]);
        return fmax(1.0, t / c->us[c->n - 1]);
    }
    slots = fmax(1.0, sk->blocks_per_sm);
    return fmax(1.0, ceil(fmax(1.0, sk->blocks) / (slots * n)) /
                         ceil(fmax(1.0, sk->blocks) / (slots * SIM_GPU_SMS)));
}

/* HP's and BE's kernels on the two sides of the split: they share only
 * the memory system, so each keeps, while both run, the slowdown of one
 * partitioned repeat of the two variants over its time alone on its own
 * side, picked by the two kernels' draws among the repeats measured at the
 * split nearest HP's SM count (the loader files each repeat under both
 * orders, with the first one's count). A pair never measured partitioned
 * slows alike by the two kernels' DRAM demand on their own SMs over the
 * peak. */
static void split_rates(const struct work *w, struct run *hp, struct run *be)
{
    const struct sim_kernel *kh = kern(w, hp), *kb = kern(w, be);
    const struct sim_ppair *pp = NULL;
    unsigned near[SIM_PSAMPLES], nn = 0, best = UINT32_MAX;
    double sh, sb;

    if (kh && kb && kh->variant >= 0 && kb->variant >= 0)
        pp = &w->m->ppairs[kh->variant][kb->variant];
    for (unsigned i = 0; pp && i < pp->n; i++) {
        unsigned d = (unsigned)abs((int)pp->sms[i] - (int)w->sms[0]);
        if (d < best) {
            best = d;
            nn = 0;
        }
        if (d == best)
            near[nn++] = i;
    }
    if (nn > 0) {
        unsigned i = near[(hp->draw ^ (be->draw * 0x9e3779b97f4a7c15ull)) % nn];
        sh = fmax(1.0, pp->self[i]);
        sb = fmax(1.0, pp->other[i]);
    } else {
        double bps = (kh ? kh->dram_bps / w->ki[hp->ki].on_side[0] : 0) +
                     (kb ? kb->dram_bps / w->ki[be->ki].on_side[1] : 0);
        sh = sb = fmax(1.0, bps / REPLAY_PEAK_BPS);
    }
    hp->rate = 1.0 / sh;
    be->rate = 1.0 / sb;
}

static void rates(const struct work *w, struct run *hp, struct run *be)
{
    if (hp->on && be->on && w->sms[0]) {
        split_rates(w, hp, be);
    } else if (hp->on && be->on) {
        pair_rates(w, hp, be);
    } else {
        hp->rate = 1.0;
        be->rate = 1.0;
    }
}

/* ---- the replay loop --------------------------------------------------- */

struct sim {
    struct work *w;
    struct mosaic__policy *pol;
    double slo, now, jitter;
    uint64_t rng;
    struct run hp, be;
    /* HP */
    int open;
    unsigned req, kpos;
    double req_begin, next_begin;
    /* BE */
    int be_state; /* 0 waiting for its next WANT, 1 asking, 2 running */
    unsigned be_pos;
    double be_next_want, be_since, be_next_decide, be_host, be_done_at, hp_tail;
    uint64_t be_done_id;
    unsigned be_done;
    double *lat;
    unsigned nlat;
    /* The request's GPU span (its first kernel's start to its last one's
     * end, no host time): what arbiter_eval and hp_service's
     * --gpu-latencies measure from events on the simulated GPU. */
    double *glat;
};

enum { HP_CLIENT = 1, BE_CLIENT = 2 };

static void event(struct sim *s, int type, uint32_t client, uint64_t id)
{
    struct mosaic__policy_event e = {.type = type, .client_id = client, .id = id,
                                     .ts_ns = REPLAY_T0 + (uint64_t)s->now};
    if (s->pol->observe)
        s->pol->observe(s->pol->state, &e);
}

static void start(struct sim *s, struct run *r, int ki, double scale, int prio)
{
    r->on = 1;
    r->ki = ki;
    r->rem = s->w->ki[ki].dur * scale * s->w->ki[ki].on_side[r == &s->be];
    r->dispatch = s->now + s->jitter * ((double)(rnd(&s->rng) >> 11) * 0x1.0p-53);
    r->draw = rnd(&s->rng);
    r->prio = prio;
}

static void hp_begin(struct sim *s)
{
    const struct hpreq *q = &s->w->req[s->req];

    s->open = 1;
    s->req_begin = s->now;
    s->kpos = 0;
    event(s, MOSAIC__PEV_HP_BEGIN, HP_CLIENT, s->req + 1);
    for (unsigned k = 0; k < q->nk; k++)
        event(s, MOSAIC__PEV_HP_LAUNCH, HP_CLIENT, s->w->ki[s->w->kseq[q->k0 + k]].id);
    start(s, &s->hp, s->w->kseq[q->k0], s->w->gpu_scale, 0);
}

static void be_decide(struct sim *s)
{
    struct mosaic__sched_view v = {.now_ns = REPLAY_T0 + (uint64_t)s->now,
                                   .hp_clients = s->now >= s->w->hp_start_ns,
                                   .hp_requests_in_flight = (unsigned)s->open,
                                   .be_in_flight = (unsigned)s->be.on, .slo = s->slo};
    int ki = s->w->be[s->w->be0 + s->be_pos % s->w->period].ki;
    struct mosaic__be_want bw = {.client_id = BE_CLIENT, .kernel_id = s->w->ki[ki].id,
                                 .waited_ns = (uint64_t)(s->now - s->be_since)};

    sim_clock_ns = v.now_ns;
    if (s->pol->decide(s->pol->state, &v, &bw) == MOSAIC__ADMIT) {
        event(s, MOSAIC__PEV_BE_GRANT, BE_CLIENT, bw.kernel_id);
        start(s, &s->be, ki, s->w->gpu_scale,
              strcmp(s->pol->name, "mps-priority") == 0 ? 1 : 0);
        s->be_state = 2;
    }
}

/* The policy's metrics text (what the daemon serves) into path. */
static int write_metrics(struct mosaic__policy *p, const char *path, char *err, size_t errlen)
{
    static char text[16384];
    size_t n = p->metrics ? p->metrics(p->state, text, sizeof(text)) : 0;
    FILE *f = fopen(path, "w");
    int bad;

    if (!f) {
        snprintf(err, errlen, "replay --metrics %s: %s: name a writable file", path,
                 strerror(errno));
        return -1;
    }
    bad = fwrite(text, 1, n, f) != n;
    bad |= fclose(f) != 0;
    if (bad)
        snprintf(err, errlen, "replay --metrics %s: the write failed (%s): name a file on a "
                 "filesystem with room", path, strerror(errno));
    return bad ? -1 : 0;
}

int mosaic__replay_run(const struct mosaic__sched_config *cfg,
                       struct mosaic__trace *const *traces, unsigned ntraces,
                       const struct mosaic__replay_opts *o, struct mosaic__replay_result *r,
                       char *err, size_t errlen)
{
    struct work w = {0};
    struct mosaic__policy pol = {0};
    struct sim s = {0};
    double decide_ns = (o->decide_us > 0 ? o->decide_us : 200.0) * 1e3, t_end = 0;
    double hp_ns = 0, be_step_ns = 0, ksum = 0;
    int rc;

    memset(r, 0, sizeof(*r));
    w.m = calloc(1, sizeof(*w.m));
    if (!w.m) {
        snprintf(err, errlen, "replay: out of memory for the dataset");
        return MOSAIC_ENOMEM;
    }
    /* Unscaled: replay scales by the trace's own time scale. */
    w.m->scale = 1.0;
    w.m->peak_bps = REPLAY_PEAK_BPS;
    if (sim__load_data(w.m) != 0) {
        free(w.m);
        snprintf(err, errlen, "replay: the measured dataset (profiles, variants, co-runs) "
                 "could not be loaded (the reason is printed above; MOSAIC_SIMGPU_PROFILES, "
                 "_VARIANTS and _CORUNS name the files, as for the simulated GPU)");
        return MOSAIC_EFORMAT;
    }
    rc = build(&w, traces, ntraces, o->warmup, err, errlen);
    if (rc == 0 && o->be_lead_ms >= 0)
        w.hp_start_ns = o->be_lead_ms * 1e6;
    s.lat = rc == 0 ? calloc(w.nreq, sizeof(*s.lat)) : NULL;
    s.glat = s.lat ? calloc(w.nreq, sizeof(*s.glat)) : NULL;
    if (rc == 0 && !s.lat) {
        snprintf(err, errlen, "replay: out of memory");
        rc = MOSAIC_ENOMEM;
    }
    if (rc == 0 && o->part_f0 > 0)
        mosaic__part_f0 = o->part_f0;
    if (rc == 0 && o->f_min > 0)
        mosaic__f_min = o->f_min;
    if (rc == 0) {
        /* The policy's clock is the simulated one from its opening on. */
        sim_clock_on = 1;
        sim_clock_ns = REPLAY_T0;
        rc = mosaic__policy_open(cfg, &pol, err, errlen);
    }
    /* The split, as the daemon makes it after opening the policy (which
     * checked sm-mode partition's hp-sms): each kernel's time alone on its
     * side follows. */
    if (rc == 0 && (cfg->policy == MOSAIC__POLICY_STATIC || cfg->sm_mode == MOSAIC__SM_PARTITION)) {
        struct mosaic__partition part;
        rc = mosaic__static_partition(cfg, &part, err, errlen);
        if (rc != 0) {
            mosaic__policy_close(&pol);
        } else {
            w.sms[0] = part.hp_sms;
            w.sms[1] = part.be_sms;
            for (unsigned i = 0; i < w.nki; i++)
                for (int side = 0; side < 2; side++)
                    w.ki[i].on_side[side] = alone_on(w.m, w.ki[i].sim, w.sms[side]);
        }
    }
    if (rc == 0) {
        s.w = &w;
        s.pol = &pol;
        s.slo = cfg->slo;
        s.rng = o->seed ? o->seed : 0x9e3779b97f4a7c15ull;
        s.jitter = w.m->jitter_ns * w.gpu_scale;
        s.next_begin = w.hp_start_ns;
        s.be_since = 0;
        s.be_done_at = -1;
        s.hp_tail = -1;
        s.be_state = 1;
        s.be_next_decide = 0;
        be_decide(&s);
        /* A BE kernel granted at once runs from time 0 (without its rate
         * it would wait for the first event: the HP service's start). */
        rates(&w, &s.hp, &s.be);
        while (s.req < w.nreq) {
            double tn = INFINITY, dt;
            int changed = 0;

            if (!s.open)
                tn = fmin(tn, s.next_begin);
            if (s.hp_tail >= 0)
                tn = fmin(tn, s.hp_tail);
            if (s.hp.on)
                tn = fmin(tn, s.now + s.hp.rem / s.hp.rate);
            if (s.be.on)
                tn = fmin(tn, s.now + s.be.rem / s.be.rate);
            if (s.be_state == 0)
                tn = fmin(tn, s.be_next_want);
            if (s.be_done_at >= 0)
                tn = fmin(tn, s.be_done_at);
            if (s.be_state == 1)
                tn = fmin(tn, s.be_next_decide);
            dt = tn - s.now;
            if (dt < 0)
                dt = 0;
            if (s.hp.on)
                s.hp.rem -= dt * s.hp.rate;
            if (s.be.on)
                s.be.rem -= dt * s.be.rate;
            s.now = tn;
            sim_clock_ns = REPLAY_T0 + (uint64_t)s.now;
            /* Completions first, then arrivals, then the BE decision: the
             * daemon's loop drains every ring before it decides. */
            if (s.hp.on && s.hp.rem <= 1e-3) {
                const struct hpreq *q = &w.req[s.req];
                s.hp.on = 0;
                changed = 1;
                if (++s.kpos < q->nk) {
                    start(&s, &s.hp, w.kseq[q->k0 + s.kpos], w.gpu_scale, 0);
                } else {
                    s.glat[s.nlat] = s.now - s.req_begin;
                    s.hp_tail = s.now + q->host;
                }
            }
            if (s.hp_tail >= 0 && s.now >= s.hp_tail) {
                const struct hpreq *q = &w.req[s.req];
                s.hp_tail = -1;
                s.open = 0;
                s.lat[s.nlat++] = s.now - s.req_begin;
                event(&s, MOSAIC__PEV_HP_END, HP_CLIENT, s.req + 1);
                s.next_begin = s.now + q->gap_after;
                s.req++;
                t_end = s.now;
            }
            if (s.be.on && s.be.rem <= 1e-3) {
                s.be.on = 0;
                changed = 1;
                /* Reported when the host has seen it (the next WANT's
                 * gate), as the shim does. */
                s.be_done_at = s.now + (w.be_scale - w.gpu_scale) * w.ki[s.be.ki].dur;
                s.be_done_id = w.ki[s.be.ki].id;
                s.be_done++;
                s.be_pos++;
                s.be_state = 0;
                s.be_host = (w.be_scale - w.gpu_scale) * w.ki[s.be.ki].dur;
                s.be_next_want = s.now + s.be_host + w.be_gap_ns;
            }
            if (!s.open && s.req < w.nreq && s.now >= s.next_begin && !s.hp.on) {
                hp_begin(&s);
                changed = 1;
            }
            if (s.be_done_at >= 0 && s.now >= s.be_done_at) {
                event(&s, MOSAIC__PEV_BE_DONE, BE_CLIENT, s.be_done_id);
                s.be_done_at = -1;
            }
            if (s.be_state == 0 && s.now >= s.be_next_want) {
                s.be_state = 1;
                s.be_since = s.now;
            }
            if (s.be_state == 1) {
                be_decide(&s);
                if (s.be_state == 1)
                    s.be_next_decide = s.now + decide_ns;
                changed = 1;
            }
            if (changed)
                rates(&w, &s.hp, &s.be);
        }
        if (o->metrics && write_metrics(&pol, o->metrics, err, errlen) != 0)
            rc = MOSAIC_EIO;
        mosaic__policy_close(&pol);
    }
    sim_clock_on = 0;
    if (rc == 0) {
        unsigned n = s.nlat - o->warmup, over = 0, gover = 0;
        double *v = s.lat + o->warmup, lim = cfg->slo * w.hp_iso_p99_ns;
        double *g = s.glat + o->warmup, giso;
        for (unsigned i = 0; i < n; i++)
            over += v[i] > lim;
        /* The GPU span's isolated p99: each request's kernels at the GPU's
         * scale back to back (an isolated request has no host time inside
         * its span: its kernels are launched before they run), the warm-up
         * requests left out as from the host p99. */
        {
            unsigned ni = w.nreq - o->warmup;
            double *iso = calloc(ni, sizeof(*iso));
            for (unsigned i = 0; iso && i < ni; i++) {
                const struct hpreq *q = &w.req[o->warmup + i];
                for (unsigned k = 0; k < q->nk; k++)
                    iso[i] += w.ki[w.kseq[q->k0 + k]].dur * w.gpu_scale;
            }
            giso = iso ? p99(iso, ni) : 0;
            free(iso);
        }
        for (unsigned i = 0; i < n; i++)
            gover += g[i] > cfg->slo * giso;
        r->hp_gpu_iso_p99_ms = giso / 1e6;
        r->hp_gpu_p99_ms = p99(g, n) / 1e6;
        r->over_p_gpu_pct = n ? 100.0 * gover / n : 0.0;
        for (unsigned i = 0; i < w.nreq; i++)
            ksum += w.req[i].nk;
        for (unsigned i = w.be0; i < w.be0 + w.period; i++)
            be_step_ns += w.ki[w.be[i].ki].dur * w.be_scale + w.be_gap_ns;
        r->gpu_scale = w.gpu_scale;
        hp_ns = t_end;
        r->hp_requests = n;
        r->hp_kernels = (unsigned)ksum;
        r->be_kernels = s.be_done;
        r->be_step_kernels = w.period;
        r->be_step_found = w.be_found;
        r->be_step_prefix = w.be0;
        r->be_step_periods = w.be_full;
        r->be_step_tail = w.be_tail;
        r->be_granted = w.nbe;
        r->unprofiled = w.unprofiled;
        r->hp_iso_p99_ms = w.hp_iso_p99_ns / 1e6;
        r->over_p_pct = n ? 100.0 * over / n : 0.0;
        r->hp_p99_ms = p99(v, n) / 1e6;
        r->hp_p50_ms = v[n / 2] / 1e6; /* v is sorted by p99() */
        r->be_steps_per_s = hp_ns > 0 ? (double)s.be_done / w.period / (hp_ns / 1e9) : 0.0;
        r->be_iso_steps_per_s = be_step_ns > 0 ? 1e9 / be_step_ns : 0.0;
        r->hp_scale = w.hp_scale;
        r->be_scale = w.be_scale;
        r->sim_ms = s.now / 1e6;
        r->hp_sms = w.sms[0];
        r->be_sms = w.sms[1];
    }
    free(s.lat);
    free(s.glat);
    free(w.ki);
    free(w.req);
    free(w.kseq);
    free(w.be);
    free(w.m);
    return rc;
}
