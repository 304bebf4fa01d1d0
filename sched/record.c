/*
 * mosaic-sched record: the daemon writes what its clients post to a
 * mosaic-trace/1 file (docs/replay.md, "Trace format").
 *
 * The recorder is a policy around the daemon's policy: it passes every
 * decision and event through unchanged and writes each event, and the
 * first decision about each waiting BE kernel (its WANT, timed by the
 * daemon's own waited_ns), as one JSON line. The daemon already sees every
 * HP launch, request boundary and BE want/grant/done of every client, so
 * recording needs no new message and no change to the daemon's loop or to
 * the shim. What the daemon does not see is not in the trace: stream ids
 * (the shim posts none) and per-kernel HP completion times (the shim posts
 * request ends only).
 *
 * The writes are buffered stdio on the daemon's thread, a few hundred
 * nanoseconds per event; the trace is flushed when the policy is closed.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mosaic/profile.h"
#include "replay.h"

#define MAX_CLIENTS 256
#define MAX_NAMED 4096

struct recorder {
    struct mosaic__policy inner;
    FILE *fp;
    char path[4096];
    uint64_t t0;
    uint64_t events;
    struct mosaic__pstore *ps;
    /* Clients with a BE kernel waiting whose WANT is written already. */
    uint32_t waiting[MAX_CLIENTS];
    unsigned nwaiting;
    /* Kernel ids whose "kernel" line is written already. */
    uint64_t named[MAX_NAMED];
    unsigned nnamed;
};

static char armed_path[4096];

int mosaic__record_arm(const char *path, char *err, size_t errlen)
{
    int n = snprintf(armed_path, sizeof(armed_path), "%s", path);
    if (n < 0 || (size_t)n >= sizeof(armed_path)) {
        armed_path[0] = '\0';
        snprintf(err, errlen, "record -o: the path is longer than %zu bytes",
                 sizeof(armed_path) - 1);
        return MOSAIC_EINVAL;
    }
    return 0;
}

/* Keys are profile keys (a mangled name, digits, '|', '=' and ','), but
 * are escaped all the same so that any key makes a valid JSON string. */
static void put_json_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < 0x20)
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

/* The profile key of id once per trace, so that replay (and a reader)
 * knows which kernel an id is without the profile store at hand. */
static void name_kernel(struct recorder *r, uint64_t id)
{
    const struct mosaic_kernel *k;

    for (unsigned i = 0; i < r->nnamed; i++)
        if (r->named[i] == id)
            return;
    if (r->nnamed < MAX_NAMED)
        r->named[r->nnamed++] = id;
    k = r->ps ? mosaic__pstore_get(r->ps, id) : NULL;
    fprintf(r->fp, "{\"ev\":\"kernel\",\"id\":\"%016llx\",\"key\":", (unsigned long long)id);
    put_json_string(r->fp, k && k->key ? k->key : "");
    fputs("}\n", r->fp);
}

static uint64_t rel(const struct recorder *r, uint64_t ts)
{
    return ts > r->t0 ? ts - r->t0 : 0;
}

static void put_kernel_event(struct recorder *r, const char *ev, uint64_t ts, uint32_t client,
                             uint64_t id)
{
    name_kernel(r, id);
    fprintf(r->fp, "{\"ev\":\"%s\",\"t\":%llu,\"client\":%u,\"id\":\"%016llx\"}\n", ev,
            (unsigned long long)rel(r, ts), client, (unsigned long long)id);
    r->events++;
}

static int is_waiting(struct recorder *r, uint32_t client, int clear)
{
    for (unsigned i = 0; i < r->nwaiting; i++) {
        if (r->waiting[i] == client) {
            if (clear)
                r->waiting[i] = r->waiting[--r->nwaiting];
            return 1;
        }
    }
    return 0;
}

static int rec_decide(void *state, const struct mosaic__sched_view *v,
                      const struct mosaic__be_want *w)
{
    struct recorder *r = state;

    /* A held kernel is decided again every loop turn; its WANT is the
     * first of those, at the time the daemon received it. */
    if (!is_waiting(r, w->client_id, 0)) {
        if (r->nwaiting < MAX_CLIENTS)
            r->waiting[r->nwaiting++] = w->client_id;
        put_kernel_event(r, "be_want", v->now_ns - w->waited_ns, w->client_id, w->kernel_id);
    }
    return r->inner.decide(r->inner.state, v, w);
}

static void rec_observe(void *state, const struct mosaic__policy_event *e)
{
    struct recorder *r = state;

    switch (e->type) {
    case MOSAIC__PEV_HP_BEGIN:
    case MOSAIC__PEV_HP_END:
        fprintf(r->fp, "{\"ev\":\"%s\",\"t\":%llu,\"client\":%u,\"req\":%llu}\n",
                e->type == MOSAIC__PEV_HP_BEGIN ? "hp_begin" : "hp_end",
                (unsigned long long)rel(r, e->ts_ns), e->client_id,
                (unsigned long long)e->id);
        r->events++;
        break;
    case MOSAIC__PEV_HP_LAUNCH:
        put_kernel_event(r, "hp_launch", e->ts_ns, e->client_id, e->id);
        break;
    case MOSAIC__PEV_BE_GRANT:
        is_waiting(r, e->client_id, 1);
        put_kernel_event(r, "be_grant", e->ts_ns, e->client_id, e->id);
        break;
    case MOSAIC__PEV_BE_DONE:
        put_kernel_event(r, "be_done", e->ts_ns, e->client_id, e->id);
        break;
    case MOSAIC__PEV_CLIENT_GONE:
        is_waiting(r, e->client_id, 1);
        fprintf(r->fp, "{\"ev\":\"client_gone\",\"t\":%llu,\"client\":%u}\n",
                (unsigned long long)rel(r, e->ts_ns), e->client_id);
        r->events++;
        break;
    default:
        break;
    }
    if (r->inner.observe)
        r->inner.observe(r->inner.state, e);
}

static size_t rec_metrics(void *state, char *buf, size_t cap)
{
    struct recorder *r = state;
    return r->inner.metrics ? r->inner.metrics(r->inner.state, buf, cap) : 0;
}

static void rec_close(void *state)
{
    struct recorder *r = state;

    /* The end record is what tells replay the trace is whole. */
    fprintf(r->fp, "{\"ev\":\"end\",\"t\":%llu,\"events\":%llu}\n",
            (unsigned long long)rel(r, __real_mosaic__now_ns()),
            (unsigned long long)r->events);
    if (fclose(r->fp) != 0)
        mosaic__dlog(MOSAIC__L_ERROR, "record: writing %s failed: %s; the trace is "
                     "incomplete and replay will refuse it", r->path, strerror(errno));
    else
        mosaic__dlog(MOSAIC__L_INFO, "record: %llu events written to %s",
                     (unsigned long long)r->events, r->path);
    if (r->ps)
        mosaic__pstore_free(r->ps);
    mosaic__policy_close(&r->inner);
    free(r);
}

int __wrap_mosaic__policy_open(const struct mosaic__sched_config *cfg,
                               struct mosaic__policy *out, char *err, size_t errlen)
{
    struct recorder *r;
    char stamp[32];
    unsigned loaded = 0, skipped = 0;
    time_t now = time(NULL);
    struct tm tm;
    int fd, rc;

    rc = __real_mosaic__policy_open(cfg, out, err, errlen);
    if (rc != 0 || armed_path[0] == '\0')
        return rc;
    r = calloc(1, sizeof(*r));
    if (!r) {
        mosaic__policy_close(out);
        snprintf(err, errlen, "record: out of memory");
        return MOSAIC_ENOMEM;
    }
    snprintf(r->path, sizeof(r->path), "%s", armed_path);
    armed_path[0] = '\0';
    /* O_EXCL: a recording never overwrites an earlier trace. */
    fd = open(r->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    r->fp = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!r->fp) {
        snprintf(err, errlen, "record -o %s: %s (choose a path that does not exist yet, in "
                 "a writable directory)", r->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(r);
        mosaic__policy_close(out);
        return MOSAIC_EIO;
    }
    /* The store only names the kernels in the trace; without it the keys
     * are empty and replay needs the dataset to know them. */
    if (cfg->profile_dir[0] &&
        mosaic__pstore_load(cfg->profile_dir, &r->ps, &loaded, &skipped, err, errlen) != 0)
        r->ps = NULL;
    r->inner = *out;
    r->t0 = __real_mosaic__now_ns();
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(r->fp, "{\"schema\":\"%s\",\"tool\":\"mosaic-sched record\",\"version\":\"%s\","
            "\"created\":\"%s\",\"policy\":\"%s\",\"slo\":%g,\"clock\":\"CLOCK_MONOTONIC\","
            "\"t_unit\":\"ns since t0\",\"t0_ns\":\"%llu\"}\n",
            MOSAIC__TRACE_SCHEMA, MOSAIC_VERSION_STRING, stamp, out->name, cfg->slo,
            (unsigned long long)r->t0);
    *out = (struct mosaic__policy){.name = r->inner.name, .decide = rec_decide,
                                   .observe = rec_observe, .metrics = rec_metrics,
                                   .close = rec_close, .state = r};
    mosaic__dlog(MOSAIC__L_INFO, "record: writing the trace to %s (policy %s)", r->path,
                 r->inner.name);
    return 0;
}
