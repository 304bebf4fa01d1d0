/*
 * mosaic-sched tune: chooses between full-GPU sharing and an SM partition
 * for policy mosaic, as Mosaic's section 5.2 does, by measuring.
 *
 * The candidates are the full GPU at p and every HP partition the GPU can
 * make (or those tune-splits names) whose predicted isolated HP slowdown
 * there stays under p (mosaic__hp_slowdowns: the split sweep's measured
 * times, else the predictor's partition model); the others are discarded
 * before anything runs, since on them HP alone already misses p. First the
 * HP command runs alone under a daemon of policy none, for the isolated
 * request spans that "over p" is measured against; then, for each
 * candidate, a daemon of that configuration (policy mosaic at p, sm-mode,
 * hp-sms), the BE command, and the HP command after it, for tune-trial-ms.
 * Each trial daemon is this binary's `record`, so its trace holds what the
 * daemon saw: every HP request's begin and end (its span, on the client's
 * clock) and every BE kernel's completion. The choice is the candidate
 * with the most BE kernels completed per second among those that kept at
 * most 1% of HP requests over p x the isolated p99 span.
 *
 * Nothing here knows about the simulated GPU: the trials run whatever the
 * commands are, against whatever GPU the shim finds.
 *
 * The config file is only written once every trial has run, and then as a
 * whole: a temporary file in the same directory, fsync, rename, fsync of
 * the directory, so a reader sees the old file or the new one, never half
 * of one. A command that fails, an HP service that never issues a
 * request, or no candidate within p, and the file is not touched.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include <cJSON.h>

#include "mosaic/predict.h"
#include "mosaic/profile.h"
#include "tune.h"

#define MAX_CAND 64
#define WARMUP_REQUESTS 3     /* first spans of a trial not counted (start-up) */
#define MIN_REQUESTS 10       /* a trial with fewer counted requests proves nothing */
#define OVER_P_MAX_PCT 1.0    /* the criterion: at most 1% of HP requests over p */
#define BE_LEAD_MS 300        /* BE starts first, so HP meets it from its first request */
#define STOP_GRACE_MS 3000    /* SIGTERM, then SIGKILL after this */
#define DAEMON_START_MS 10000 /* the trial daemon's socket must appear by then */
#define MAX_TRACE_CLIENTS 256
#define MAX_FWD 160           /* command-line config words given to a trial daemon */

/* SIGINT or SIGTERM to tune: the trial running is stopped (its processes
 * are in groups of their own, so they would not get the terminal's
 * signal), and tune returns with the config untouched. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    interrupted = sig;
}

struct cand {
    int mode;          /* enum mosaic__sm_mode; the isolated run is MOSAIC__SM_FULL too */
    int beside;        /* enum mosaic__beside: BE decided beside HP requests, or held */
    unsigned hp_sms;   /* partition: HP's SMs */
    double pred_sd;    /* predicted isolated HP slowdown on hp_sms (1 for full) */
    int discarded;     /* by prediction: pred_sd not under p */
    int ran;
    char failed[512];  /* why the trial gave no result ("" when it did) */
    unsigned requests; /* counted HP requests */
    double p50_ms, p99_ms, over_pct;
    unsigned be_kernels;
    double be_kps;     /* BE kernels completed per second while HP ran */
    double window_s;
    double *spans;     /* the counted requests' spans, ms, sorted */
};

struct tune {
    const struct mosaic__sched_config *cfg;
    const struct mosaic__tune_args *a;
    char work[4096];
    char exe[4096];
    double iso_p99_ms, iso_p50_ms; /* of the isolated run with the smaller p99 */
    double iso_p99_runs[2];        /* each isolated run's */
    unsigned iso_requests;
    double *spans; /* scratch: one trial's spans, ms */
    size_t nspans, capspans;
};

static int tfail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int tfail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (vsnprintf(err, errlen, fmt, ap) < 0 && errlen)
        err[0] = '\0';
    va_end(ap);
    return rc;
}

/* The real monotonic clock: mosaic__now_ns is the replay's in this binary. */
static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1e3),
                          .tv_nsec = (long)(fmod(ms, 1e3) * 1e6)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static const char *mode_label(const struct cand *c, char *buf, size_t len)
{
    if (c->mode == MOSAIC__SM_FULL)
        snprintf(buf, len, c->beside == MOSAIC__BESIDE_HOLD ? "full, hold" : "full");
    else
        snprintf(buf, len, "partition %u", c->hp_sms);
    return buf;
}

/* ---- processes ---------------------------------------------------------- */

/*
 * Starts argv in a process group of its own (so that stopping it stops
 * whatever a shell command started), stdin from /dev/null, stdout and
 * stderr to log. role and sock, when given, become MOSAIC_ROLE and
 * MOSAIC_SCHED_SOCKET in its environment. -1 when fork fails.
 */
static pid_t spawn(char *const argv[], const char *role, const char *sock, const char *log)
{
    pid_t pid = fork();

    if (pid != 0)
        return pid;
    setpgid(0, 0);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(126);
    if (role && setenv("MOSAIC_ROLE", role, 1) != 0)
        _exit(126);
    if (sock && setenv("MOSAIC_SCHED_SOCKET", sock, 1) != 0)
        _exit(126);
    execv(argv[0], argv);
    _exit(127);
}

/* Waits up to ms for pid; 1 and *status when it ended, else 0. */
static int reap(pid_t pid, double ms, int *status)
{
    double until = now_ms() + ms;

    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return 1;
        if (now_ms() >= until)
            return 0;
        sleep_ms(10);
    }
}

/* Stops a process group that may still run: SIGTERM, then SIGKILL. */
static void stop(pid_t pid, int *status)
{
    kill(-pid, SIGTERM);
    if (!reap(pid, STOP_GRACE_MS, status)) {
        kill(-pid, SIGKILL);
        reap(pid, STOP_GRACE_MS, status);
    }
}

/* The last line of a log, for an error message. */
static void log_tail(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    char line[1024];

    buf[0] = '\0';
    if (!f)
        return;
    while (fgets(line, sizeof(line), f))
        if (line[0] != '\n')
            snprintf(buf, len, "%.*s", (int)(len - 1), line);
    fclose(f);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
}

/*
 * Whether the shim in a trial's process said it could not make its
 * partition (preload/green.c: "... kernels run on the full GPU": a
 * driver without green contexts, a size the driver refuses, MPS limits).
 * Then the trial measured the full GPU, not the candidate; the line goes
 * to buf.
 */
static int shim_refused(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int found = 0;

    if (!f)
        return 0;
    while (!found && fgets(line, sizeof(line), f))
        if (strncmp(line, "mosaic: ", 8) == 0 && strstr(line, "run on the full GPU")) {
            size_t n = strlen(line);
            while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
                line[--n] = '\0';
            snprintf(buf, len, "%.*s", (int)(len - 1), line);
            found = 1;
        }
    fclose(f);
    return found;
}

static void status_text(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, len, "status %d", status);
}

/* ---- the trace ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The nearest-rank quantile q of a sorted array. */
static double quantile(const double *v, size_t n, double q)
{
    size_t r = (size_t)ceil(q * (double)n);
    return n ? v[r > 0 ? (r <= n ? r - 1 : n - 1) : 0] : NAN;
}

static int span_add(struct tune *t, double ms)
{
    if (t->nspans == t->capspans) {
        size_t cap = t->capspans ? 2 * t->capspans : 1024;
        double *p = realloc(t->spans, cap * sizeof(*p));
        if (!p)
            return MOSAIC_ENOMEM;
        t->spans = p;
        t->capspans = cap;
    }
    t->spans[t->nspans++] = ms;
    return 0;
}

/*
 * Reads a trial's trace: the HP request spans (hp_begin to hp_end of one
 * client and request id; the first WARMUP_REQUESTS of each client not
 * counted) into t->spans, and the BE kernels completed while HP ran (from
 * the first counted begin to the last end) per second.
 */
static int read_trace(struct tune *t, const char *path, struct cand *c, char *err,
                      size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, ended = 0, rc = 0;
    double begin[MAX_TRACE_CLIENTS];
    double req[MAX_TRACE_CLIENTS];
    unsigned seen[MAX_TRACE_CLIENTS] = {0};
    double first = INFINITY, last = -INFINITY;
    double *done = NULL;
    size_t ndone = 0, capdone = 0;

    if (!f) {
        char label[64];
        return tfail(err, errlen, MOSAIC_EIO, "trial %s: the daemon wrote no trace at %s (%s)",
                     mode_label(c, label, sizeof(label)), path, strerror(errno));
    }
    for (int i = 0; i < MAX_TRACE_CLIENTS; i++)
        begin[i] = req[i] = NAN;
    t->nspans = 0;
    while (rc == 0 && getline(&line, &cap, f) > 0) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "ev");
        const cJSON *tt = cJSON_GetObjectItemCaseSensitive(j, "t");
        const cJSON *cl = cJSON_GetObjectItemCaseSensitive(j, "client");
        const cJSON *rq = cJSON_GetObjectItemCaseSensitive(j, "req");
        lineno++;
        if (!j) {
            rc = tfail(err, errlen, MOSAIC_EFORMAT, "%s:%d: not JSON: the trial daemon's "
                       "trace is damaged", path, lineno);
        } else if (cJSON_IsString(ev) && cJSON_IsNumber(tt)) {
            double ms = tt->valuedouble / 1e6;
            int id = cJSON_IsNumber(cl) ? (int)cl->valuedouble : -1;
            const char *e = ev->valuestring;
            if (strcmp(e, "end") == 0) {
                ended = 1;
            } else if (id >= 0 && id < MAX_TRACE_CLIENTS && strcmp(e, "hp_begin") == 0) {
                begin[id] = ms;
                req[id] = cJSON_IsNumber(rq) ? rq->valuedouble : NAN;
            } else if (id >= 0 && id < MAX_TRACE_CLIENTS && strcmp(e, "hp_end") == 0 &&
                       isfinite(begin[id]) && cJSON_IsNumber(rq) && rq->valuedouble == req[id]) {
                if (++seen[id] > WARMUP_REQUESTS) {
                    rc = span_add(t, ms - begin[id]);
                    first = fmin(first, begin[id]);
                    last = fmax(last, ms);
                }
                begin[id] = NAN;
            } else if (strcmp(e, "be_done") == 0) {
                if (ndone == capdone) {
                    size_t nc = capdone ? 2 * capdone : 4096;
                    double *p = realloc(done, nc * sizeof(*p));
                    if (!p) {
                        rc = MOSAIC_ENOMEM;
                    } else {
                        done = p;
                        capdone = nc;
                    }
                }
                if (rc == 0)
                    done[ndone++] = ms;
            }
        }
        cJSON_Delete(j);
    }
    free(line);
    fclose(f);
    if (rc == 0 && !ended)
        rc = tfail(err, errlen, MOSAIC_EFORMAT, "%s: the trace has no end record: the trial "
                   "daemon did not stop cleanly (its log is beside the trace)", path);
    if (rc == 0) {
        c->requests = (unsigned)t->nspans;
        c->be_kernels = 0;
        for (size_t i = 0; i < ndone; i++)
            if (done[i] >= first && done[i] <= last)
                c->be_kernels++;
        c->window_s = last > first ? (last - first) / 1e3 : 0;
        c->be_kps = c->window_s > 0 ? c->be_kernels / c->window_s : 0;
        if (t->nspans) /* spans is NULL before the first one */
            qsort(t->spans, t->nspans, sizeof(double), cmp_double);
        c->p50_ms = quantile(t->spans, t->nspans, 0.50);
        c->p99_ms = quantile(t->spans, t->nspans, 0.99);
    }
    free(done);
    return rc;
}

/* ---- one trial ---------------------------------------------------------- */

/*
 * Runs one configuration: a `record` daemon of it, the BE command (unless
 * iso), then the HP command, until the HP command exits or the trial time
 * is up. 0 with c's numbers; a failing command is MOSAIC_EINVAL (tune
 * stops: every trial would fail the same way); a daemon that does not come
 * up leaves c->failed set and returns 0, so the other candidates still run.
 */
static int run_trial(struct tune *t, struct cand *c, int iso, int idx, char *err, size_t errlen)
{
    const struct mosaic__sched_config *cfg = t->cfg;
    char sock[128], trace[4200], dlog[4200], hlog[4200], blog[4200], tail[600], st[64];
    char slo[32], sms[32], label[64];
    char *argv[MAX_FWD + 32];
    char *sh_hp[] = {(char *)"/bin/sh", (char *)"-c", (char *)cfg->tune_hp_command, NULL};
    char *sh_be[] = {(char *)"/bin/sh", (char *)"-c", (char *)cfg->tune_be_command, NULL};
    pid_t d, hp, be = -1;
    int n = 0, status = 0, hp_status = 0, be_status = 0, hp_ended = 0, be_ended = 0, rc;
    double t0;

    mode_label(c, label, sizeof(label));
    if (snprintf(sock, sizeof(sock), "%s/t%d.sock", t->work, idx) >= (int)sizeof(sock))
        return tfail(err, errlen, MOSAIC_EINVAL, "tune: the work directory %s is too long "
                     "for a socket path: set TMPDIR to a shorter directory", t->work);
    snprintf(trace, sizeof(trace), "%s/t%d.trace", t->work, idx);
    snprintf(dlog, sizeof(dlog), "%s/t%d.daemon.log", t->work, idx);
    snprintf(hlog, sizeof(hlog), "%s/t%d.hp.log", t->work, idx);
    snprintf(blog, sizeof(blog), "%s/t%d.be.log", t->work, idx);
    snprintf(slo, sizeof(slo), "%.17g", cfg->slo);
    snprintf(sms, sizeof(sms), "%u", c->mode == MOSAIC__SM_PARTITION ? c->hp_sms : 0u);

    argv[n++] = t->exe;
    argv[n++] = (char *)"--config";
    argv[n++] = (char *)(t->a->config_exists ? t->a->config_path : "/dev/null");
    if (t->a->nfwd > MAX_FWD)
        return tfail(err, errlen, MOSAIC_EINVAL, "tune: %d command-line words of config "
                     "flags, at most %d are passed on: move some keys into the config file",
                     t->a->nfwd, MAX_FWD);
    for (int i = 0; i < t->a->nfwd; i++)
        argv[n++] = t->a->fwd[i];
    argv[n++] = (char *)"--socket";
    argv[n++] = sock;
    argv[n++] = (char *)"--metrics-port";
    argv[n++] = (char *)"0";
    argv[n++] = (char *)"--policy";
    argv[n++] = (char *)(iso ? "none" : "mosaic");
    argv[n++] = (char *)"--slo";
    argv[n++] = slo;
    argv[n++] = (char *)"--sm-mode";
    argv[n++] = (char *)(c->mode == MOSAIC__SM_PARTITION ? "partition" : "full");
    argv[n++] = (char *)"--hp-sms";
    argv[n++] = sms;
    argv[n++] = (char *)"--beside-hp";
    argv[n++] = (char *)mosaic__beside_name(c->beside);
    argv[n++] = (char *)"record";
    argv[n++] = (char *)"-o";
    argv[n++] = trace;
    argv[n] = NULL;

    d = spawn(argv, NULL, NULL, dlog);
    if (d < 0)
        return tfail(err, errlen, MOSAIC_ESYS, "tune: fork: %s", strerror(errno));
    for (t0 = now_ms();;) {
        struct stat sb;
        if (stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode))
            break;
        if (reap(d, 0, &status)) {
            log_tail(dlog, tail, sizeof(tail));
            snprintf(c->failed, sizeof(c->failed), "the daemon did not start: %.450s",
                     tail);
            return 0;
        }
        if (now_ms() - t0 > DAEMON_START_MS || interrupted) {
            stop(d, &status);
            snprintf(c->failed, sizeof(c->failed), "the daemon's socket did not appear in "
                     "%d ms", DAEMON_START_MS);
            return 0;
        }
        sleep_ms(10);
    }
    if (!iso) {
        be = spawn(sh_be, "be", sock, blog);
        sleep_ms(BE_LEAD_MS);
    }
    hp = spawn(sh_hp, "hp", sock, hlog);
    t0 = now_ms();
    while (now_ms() - t0 < cfg->tune_trial_ms && !hp_ended && !interrupted) {
        sleep_ms(20);
        if (!hp_ended && hp > 0 && reap(hp, 0, &hp_status))
            hp_ended = 1;
        if (be > 0 && !be_ended && reap(be, 0, &be_status)) {
            be_ended = 1;
            if (!(WIFEXITED(be_status) && WEXITSTATUS(be_status) == 0))
                break;
        }
    }
    if (hp > 0 && !hp_ended)
        stop(hp, &hp_status);
    if (be > 0 && !be_ended)
        stop(be, &be_status);
    kill(d, SIGTERM);
    if (!reap(d, DAEMON_START_MS, &status)) {
        kill(d, SIGKILL);
        reap(d, STOP_GRACE_MS, &status);
    }
    if (hp < 0 || (be < 0 && !iso))
        return tfail(err, errlen, MOSAIC_ESYS, "tune: fork: %s", strerror(errno));
    if (interrupted)
        return tfail(err, errlen, MOSAIC_EINVAL, "tune: interrupted by signal %d; the trial's "
                     "processes were stopped and the config is untouched", (int)interrupted);
    if (hp_ended && !(WIFEXITED(hp_status) && WEXITSTATUS(hp_status) == 0)) {
        status_text(hp_status, st, sizeof(st));
        log_tail(hlog, tail, sizeof(tail));
        return tfail(err, errlen, MOSAIC_EINVAL, "tune: the HP command failed (%s) in trial "
                     "%s: `%s`; its last output: %s; the config is untouched", st,
                     iso ? "isolated" : label, cfg->tune_hp_command, tail[0] ? tail : "(none)");
    }
    if (be_ended && !(WIFEXITED(be_status) && WEXITSTATUS(be_status) == 0)) {
        status_text(be_status, st, sizeof(st));
        log_tail(blog, tail, sizeof(tail));
        return tfail(err, errlen, MOSAIC_EINVAL, "tune: the BE command failed (%s) in trial "
                     "%s: `%s`; its last output: %s; the config is untouched", st, label,
                     cfg->tune_be_command, tail[0] ? tail : "(none)");
    }
    if (c->mode == MOSAIC__SM_PARTITION &&
        (shim_refused(blog, tail, sizeof(tail)) || shim_refused(hlog, tail, sizeof(tail)))) {
        snprintf(c->failed, sizeof(c->failed), "the shim could not make the partition, so "
                 "the trial ran on the full GPU: %.400s", tail);
        return 0;
    }
    rc = read_trace(t, trace, c, err, errlen);
    if (rc != 0)
        return rc;
    c->ran = 1;
    if (c->requests < MIN_REQUESTS) {
        log_tail(hlog, tail, sizeof(tail));
        return tfail(err, errlen, MOSAIC_EINVAL, "tune: the HP command issued %u requests in "
                     "trial %s after its first %d (at least %d are needed): does it run under "
                     "the shim (LD_PRELOAD=libmosaic.so) and mark its requests "
                     "(mosaic_request_begin/end, or the synchronisation the shim learns them "
                     "from)? Or lengthen tune-trial-ms (%u ms). Its last output: %s; the "
                     "config is untouched",
                     c->requests, iso ? "isolated" : label, WARMUP_REQUESTS, MIN_REQUESTS,
                     cfg->tune_trial_ms, tail[0] ? tail : "(none)");
    }
    c->spans = malloc(t->nspans * sizeof(double));
    if (!c->spans)
        return MOSAIC_ENOMEM;
    memcpy(c->spans, t->spans, t->nspans * sizeof(double));
    return 0;
}

/* ---- candidates --------------------------------------------------------- */

static int size_ok(const struct mosaic_gpu_desc *g, unsigned n)
{
    unsigned align = g->sm_partition_align > 0 ? (unsigned)g->sm_partition_align : 1;
    unsigned min = g->sm_partition_min > 0 ? (unsigned)g->sm_partition_min : 1;

    return n >= min && n < (unsigned)g->sm_count && n % align == 0 &&
           (unsigned)g->sm_count - n >= min;
}

static int candidates(struct tune *t, struct cand *c, int *nc, char *err, size_t errlen)
{
    const struct mosaic__sched_config *cfg = t->cfg;
    static double sd[MOSAIC_GPU_MAX_SMS + 1];
    struct mosaic__partition info;
    struct mosaic_gpu_desc g;
    unsigned want[MAX_CAND];
    int nwant = 0, rc;

    mosaic_gpu_desc_h200(&g);
    /* The full GPU with BE decided beside HP requests and with BE held
     * while one is in flight (beside-hp): which gets BE further within p
     * depends on the pair and the GPU (docs/tune.md, step 1). */
    c[0] = (struct cand){.mode = MOSAIC__SM_FULL, .pred_sd = 1.0};
    c[1] = (struct cand){.mode = MOSAIC__SM_FULL, .beside = MOSAIC__BESIDE_HOLD, .pred_sd = 1.0};
    *nc = 2;
    if (cfg->tune_splits[0]) {
        const char *p = cfg->tune_splits;
        while (*p) {
            char *end;
            unsigned long v;
            while (*p == ' ' || *p == ',' || *p == '\t')
                p++;
            if (!*p)
                break;
            errno = 0;
            v = strtoul(p, &end, 10);
            if (end == p || errno || v > MOSAIC_GPU_MAX_SMS)
                return tfail(err, errlen, MOSAIC_ECONFIG, "tune-splits '%s': '%.20s' is not "
                             "an SM count: list HP partition sizes, e.g. \"48 72 96\"",
                             cfg->tune_splits, p);
            if ((rc = mosaic__static_hp_size_check((unsigned)v, err, errlen)) != 0) {
                char why[700];
                snprintf(why, sizeof(why), "%s", err);
                return tfail(err, errlen, MOSAIC_ECONFIG, "tune-splits: %s", why);
            }
            if (nwant == MAX_CAND - 2)
                return tfail(err, errlen, MOSAIC_ECONFIG, "tune-splits: more than %d sizes",
                             MAX_CAND - 2);
            want[nwant++] = (unsigned)v;
            p = end;
        }
    } else {
        for (unsigned n = 1; n < (unsigned)g.sm_count && nwant < MAX_CAND - 2; n++)
            if (size_ok(&g, n))
                want[nwant++] = n;
    }
    if (!cfg->hp_kernels[0]) {
        fprintf(stderr, "mosaic-sched tune: hp-kernels is empty, so HP's slowdown on a "
                "partition cannot be predicted and only the full GPU is tried (set hp-kernels "
                "to a file of the HP service's profile keys to try partitions)\n");
        return 0;
    }
    rc = mosaic__hp_slowdowns(cfg, sd, MOSAIC_GPU_MAX_SMS + 1, &info, err, errlen);
    if (rc != 0)
        return rc;
    for (int i = 0; i < nwant; i++) {
        struct cand *k = &c[(*nc)++];
        *k = (struct cand){.mode = MOSAIC__SM_PARTITION, .hp_sms = want[i],
                           .pred_sd = sd[want[i]]};
        k->discarded = !(k->pred_sd < cfg->slo);
    }
    return 0;
}

/* ---- the report and the config file ------------------------------------- */

static void utc_now(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;

    if (!gmtime_r(&now, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "unknown");
}

/* A candidate's row of the table, also the config's comment lines. */
static void row(const struct tune *t, const struct cand *c, int chosen, char *buf, size_t len)
{
    char label[64];

    mode_label(c, label, sizeof(label));
    if (c->discarded)
        snprintf(buf, len, "%-14s %9.3f  discarded: HP alone predicted %.3fx, not under p = %g",
                 label, c->pred_sd, c->pred_sd, t->cfg->slo);
    else if (!c->ran)
        snprintf(buf, len, "%-14s %9.3f  no result: %.400s", label, c->pred_sd, c->failed);
    else if (isnan(c->over_pct))
        snprintf(buf, len, "%-14s %9.3f %9u %10.2f %9s %12.1f", label, c->pred_sd,
                 c->requests, c->p99_ms, "", c->be_kps);
    else
        snprintf(buf, len, "%-14s %9.3f %9u %10.2f %9.1f %12.1f%s", label, c->pred_sd,
                 c->requests, c->p99_ms, c->over_pct, c->be_kps,
                 chosen ? "  <- chosen" : c->over_pct > OVER_P_MAX_PCT ? "  (over p)" : "");
    (void)t;
}

static const char *const HEAD =
    "candidate      pred. HP  requests  HP p99 ms  % over p  BE kernels/s";

/* Whether a config line sets one of the keys tune writes. */
static int tuned_key(const char *line)
{
    static const char *const keys[] = {"policy", "slo", "sm-mode", "hp-sms", "beside-hp", NULL};
    while (*line == ' ' || *line == '\t')
        line++;
    for (int i = 0; keys[i]; i++) {
        size_t n = strlen(keys[i]);
        if (strncmp(line, keys[i], n) == 0 && (line[n] == ' ' || line[n] == '\t'))
            return 1;
    }
    return 0;
}

#define BLOCK_BEGIN "# >>> mosaic-sched tune"
#define BLOCK_END "# <<< mosaic-sched tune"

static int write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Appends printf output to a growing buffer; -1 when out of memory. */
static int bprintf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int bprintf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if (*len + (size_t)n + 1 > *cap) {
        size_t nc = (*cap ? *cap : 4096);
        while (nc < *len + (size_t)n + 1)
            nc *= 2;
        char *p = realloc(*buf, nc);
        if (!p)
            return -1;
        *buf = p;
        *cap = nc;
    }
    va_start(ap, fmt);
    vsnprintf(*buf + *len, *cap - *len, fmt, ap);
    va_end(ap);
    *len += (size_t)n;
    return 0;
}

/*
 * The new config: the old file's lines, less an earlier tune block and
 * less the lines that set the keys tune writes (named in the new block's
 * comment), then the block: the evidence as comments, then the keys.
 */
static int write_config(struct tune *t, const struct cand *c, int nc, int best, char *err,
                        size_t errlen)
{
    const char *path = t->a->config_path;
    char dir[4096], tmp[4200], date[32], line_buf[700], label[64];
    char *buf = NULL, *line = NULL;
    size_t len = 0, cap = 0, lcap = 0;
    int in_block = 0, fd = -1, rc = 0, ok = 1;
    mode_t mode = 0644;
    FILE *f;
    char replaced[2048] = "";
    struct stat sb;

    if (stat(path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode))
            return tfail(err, errlen, MOSAIC_EUNSAFE, "tune: %s is not a regular file: pass "
                         "--config FILE (a new file is created)", path);
        mode = sb.st_mode & 07777;
    }
    f = fopen(path, "r");
    if (f) {
        while (ok && getline(&line, &lcap, f) > 0) {
            if (strncmp(line, BLOCK_BEGIN, strlen(BLOCK_BEGIN)) == 0) {
                in_block = 1;
                continue;
            }
            if (in_block) {
                if (strncmp(line, BLOCK_END, strlen(BLOCK_END)) == 0)
                    in_block = 0;
                continue;
            }
            if (tuned_key(line)) {
                size_t r = strlen(replaced);
                char *nl = strchr(line, '\n');
                if (nl)
                    *nl = '\0';
                if (r + strlen(line) + 4 < sizeof(replaced))
                    snprintf(replaced + r, sizeof(replaced) - r, "%s`%s`", r ? ", " : "", line);
                continue;
            }
            ok = bprintf(&buf, &len, &cap, "%s", line) == 0;
            if (ok && len && buf[len - 1] != '\n')
                ok = bprintf(&buf, &len, &cap, "\n") == 0;
        }
        fclose(f);
    } else if (errno != ENOENT) {
        return tfail(err, errlen, MOSAIC_EIO, "tune: %s: cannot be read (%s)", path,
                     strerror(errno));
    }
    free(line);
    utc_now(date, sizeof(date));
    mode_label(&c[best], label, sizeof(label));
    ok = ok && bprintf(&buf, &len, &cap,
                       "%s, %s (written by `mosaic-sched tune`; the next tune replaces "
                       "this block)\n"
                       "# p = %g. Each trial ran for up to %u ms: the HP command `%.300s`%s"
                       "%.300s%s under a daemon of that configuration.\n"
                       "# HP alone (policy none, no BE), before and after the candidates: "
                       "request span p99 %.2f and %.2f ms (the daemon's record of each "
                       "request's begin to end); the smaller run's: %u requests, p50 %.2f "
                       "ms, p99 %.2f ms; a request is over p when its span passes %.2f "
                       "ms.\n"
                       "# %s\n",
                       BLOCK_BEGIN, date, t->cfg->slo, t->cfg->tune_trial_ms,
                       t->cfg->tune_hp_command, " and the BE command `", t->cfg->tune_be_command,
                       "`", t->iso_p99_runs[0], t->iso_p99_runs[1], t->iso_requests,
                       t->iso_p50_ms, t->iso_p99_ms,
                       t->cfg->slo * t->iso_p99_ms, HEAD) == 0;
    for (int i = 0; ok && i < nc; i++) {
        row(t, &c[i], i == best, line_buf, sizeof(line_buf));
        ok = bprintf(&buf, &len, &cap, "# %s\n", line_buf) == 0;
    }
    ok = ok && bprintf(&buf, &len, &cap,
                       "# Chosen: %s, the most BE kernels per second with at most %.0f%% of "
                       "HP requests over p.%s%s%s\n"
                       "policy mosaic\nslo %g\nsm-mode %s\nhp-sms %u\nbeside-hp %s\n%s\n",
                       label, OVER_P_MAX_PCT, replaced[0] ? " Replaced: " : "", replaced,
                       replaced[0] ? "." : "", t->cfg->slo,
                       c[best].mode == MOSAIC__SM_PARTITION ? "partition" : "full",
                       c[best].mode == MOSAIC__SM_PARTITION ? c[best].hp_sms : 0u,
                       mosaic__beside_name(c[best].beside),
                       BLOCK_END) == 0;
    if (!ok) {
        free(buf);
        return MOSAIC_ENOMEM;
    }
    /* The temporary file beside the config, so that rename is atomic. */
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (snprintf(tmp, sizeof(tmp), "%s/.%.200s.tune.XXXXXX", dir, base) >= (int)sizeof(tmp)) {
        free(buf);
        return tfail(err, errlen, MOSAIC_EINVAL, "tune: the config path %s is too long", path);
    }
    fd = mkstemp(tmp);
    if (fd < 0) {
        free(buf);
        return tfail(err, errlen, MOSAIC_EIO, "tune: cannot create a temporary file in %s "
                     "(%s): the config %s is untouched; make the directory writable", dir,
                     strerror(errno), path);
    }
    if (write_all(fd, buf, len) != 0 || fchmod(fd, mode) != 0 || fsync(fd) != 0) {
        rc = tfail(err, errlen, MOSAIC_EIO, "tune: writing %s: %s; the config %s is untouched",
                   tmp, strerror(errno), path);
        close(fd);
        unlink(tmp);
        free(buf);
        return rc;
    }
    free(buf);
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        rc = tfail(err, errlen, MOSAIC_EIO, "tune: replacing %s: %s; the config is untouched",
                   path, strerror(errno));
        unlink(tmp);
        return rc;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

static void report_json(const struct tune *t, const struct cand *c, int nc, int best,
                        const char *refused)
{
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "candidates");
    char label[64], *s;

    cJSON_AddStringToObject(j, "schema", "mosaic-tune/1");
    if (refused)
        cJSON_AddStringToObject(j, "refused", refused);
    cJSON_AddNumberToObject(j, "slo", t->cfg->slo);
    cJSON_AddNumberToObject(j, "trial_ms", t->cfg->tune_trial_ms);
    cJSON_AddNumberToObject(j, "hp_isolated_requests", t->iso_requests);
    cJSON_AddNumberToObject(j, "hp_isolated_p99_ms", t->iso_p99_ms);
    {
        cJSON *runs = cJSON_AddArrayToObject(j, "hp_isolated_p99_ms_runs");
        for (int i = 0; i < 2; i++)
            cJSON_AddItemToArray(runs, cJSON_CreateNumber(t->iso_p99_runs[i]));
    }
    for (int i = 0; i < nc; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "candidate", mode_label(&c[i], label, sizeof(label)));
        cJSON_AddStringToObject(o, "sm_mode", c[i].mode == MOSAIC__SM_PARTITION ? "partition"
                                                                                : "full");
        cJSON_AddNumberToObject(o, "hp_sms", c[i].hp_sms);
        cJSON_AddStringToObject(o, "beside_hp", mosaic__beside_name(c[i].beside));
        cJSON_AddNumberToObject(o, "predicted_hp_slowdown", c[i].pred_sd);
        cJSON_AddBoolToObject(o, "discarded", c[i].discarded);
        cJSON_AddBoolToObject(o, "ran", c[i].ran);
        if (c[i].failed[0])
            cJSON_AddStringToObject(o, "failed", c[i].failed);
        if (c[i].ran) {
            cJSON_AddNumberToObject(o, "hp_requests", c[i].requests);
            cJSON_AddNumberToObject(o, "hp_p50_ms", c[i].p50_ms);
            cJSON_AddNumberToObject(o, "hp_p99_ms", c[i].p99_ms);
            cJSON_AddNumberToObject(o, "over_p_pct", c[i].over_pct);
            cJSON_AddNumberToObject(o, "be_kernels", c[i].be_kernels);
            cJSON_AddNumberToObject(o, "be_kernels_per_s", c[i].be_kps);
        }
        cJSON_AddBoolToObject(o, "chosen", i == best);
        cJSON_AddItemToArray(arr, o);
    }
    s = cJSON_PrintUnformatted(j);
    if (s)
        printf("%s\n", s);
    free(s);
    cJSON_Delete(j);
}

/* ---- the whole ---------------------------------------------------------- */

/* Removes the work directory, which holds only the trials' flat files. */
static void remove_work(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4400];

    if (!d)
        return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' &&
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
            unlink(path);
    closedir(d);
    rmdir(dir);
}

int mosaic__tune_run(const struct mosaic__sched_config *cfg, const struct mosaic__tune_args *a,
                     char *err, size_t errlen)
{
    static struct cand c[MAX_CAND];
    struct tune t = {.cfg = cfg, .a = a};
    struct cand iso[2] = {{.mode = MOSAIC__SM_FULL, .pred_sd = 1.0},
                          {.mode = MOSAIC__SM_FULL, .pred_sd = 1.0}};
    int no_candidate = 0;
    const char *tmpdir = getenv("TMPDIR");
    int nc = 0, best = -1, rc;
    char line_buf[700];
    ssize_t n;

    if (!cfg->tune_hp_command[0])
        return tfail(err, errlen, MOSAIC_ECONFIG, "tune: no HP command: pass --hp-command "
                     "'CMD' or set tune-hp-command (a shell command that starts the HP "
                     "service under the shim, e.g. LD_PRELOAD=libmosaic.so ./serve)");
    if (!cfg->tune_be_command[0])
        return tfail(err, errlen, MOSAIC_ECONFIG, "tune: no BE command: pass --be-command "
                     "'CMD' or set tune-be-command");
    if (!cfg->model_dir[0])
        return tfail(err, errlen, MOSAIC_ECONFIG, "tune: the trials run policy mosaic, which "
                     "needs the predictor's models: set model-dir (e.g. "
                     "predictor/models/h200)");
    if (strcmp(a->config_path, "/dev/null") == 0)
        return tfail(err, errlen, MOSAIC_ECONFIG, "tune writes its choice to the config file: "
                     "pass --config FILE (a new file is created)");
    n = readlink("/proc/self/exe", t.exe, sizeof(t.exe) - 1);
    if (n <= 0 || (size_t)n >= sizeof(t.exe) - 1)
        return tfail(err, errlen, MOSAIC_ESYS, "tune: /proc/self/exe cannot be read (%s): "
                     "tune runs its trial daemons from it", strerror(errno));
    t.exe[n] = '\0';
    if ((rc = candidates(&t, c, &nc, err, errlen)) != 0)
        return rc;
    if (a->keep_dir) {
        /* A new directory: the trial daemons refuse to write over a trace. */
        if (snprintf(t.work, sizeof(t.work), "%s", a->keep_dir) >= (int)sizeof(t.work) ||
            mkdir(t.work, 0700) != 0)
            return tfail(err, errlen, MOSAIC_EIO, "tune --keep %s: cannot create it (%s): "
                         "name a directory that does not exist yet", a->keep_dir,
                         strerror(errno));
    } else {
        snprintf(t.work, sizeof(t.work), "%s/mosaic-tune.XXXXXX",
                 tmpdir && tmpdir[0] && strlen(tmpdir) < 60 ? tmpdir : "/tmp");
        if (!mkdtemp(t.work))
            return tfail(err, errlen, MOSAIC_EIO, "tune: cannot create a work directory "
                         "(%s)", strerror(errno));
    }
    {
        int disc = 0;
        for (int i = 0; i < nc; i++)
            disc += c[i].discarded;
        fprintf(stderr, "mosaic-sched tune: p %g, %d candidates (%d discarded by prediction), "
                "trials of %u ms, files in %s\n", cfg->slo, nc, disc, cfg->tune_trial_ms,
                t.work);
    }
    for (int i = 0; i < nc; i++)
        c[i].over_pct = NAN;
    {
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    /* HP alone before the candidates and again after them: a host stall
     * in one isolated run inflates its p99, and with it the bound every
     * candidate is judged by, so the smaller of the two is the baseline. */
    rc = run_trial(&t, &iso[0], 1, 0, err, errlen);
    if (rc == 0 && !iso[0].ran)
        rc = tfail(err, errlen, MOSAIC_EINVAL, "tune: the isolated HP trial gave no result: "
                   "%s; the config is untouched", iso[0].failed);
    if (rc == 0)
        fprintf(stderr, "mosaic-sched tune: HP alone: %u requests, span p99 %.2f ms\n",
                iso[0].requests, iso[0].p99_ms);
    for (int i = 0; rc == 0 && i < nc; i++) {
        if (c[i].discarded)
            continue;
        rc = run_trial(&t, &c[i], 0, i + 1, err, errlen);
        if (rc == 0) {
            row(&t, &c[i], 0, line_buf, sizeof(line_buf));
            fprintf(stderr, "mosaic-sched tune: %s\n", line_buf);
        }
    }
    if (rc == 0)
        rc = run_trial(&t, &iso[1], 1, nc + 1, err, errlen);
    if (rc == 0 && !iso[1].ran)
        rc = tfail(err, errlen, MOSAIC_EINVAL, "tune: the second isolated HP trial gave no "
                   "result: %s; the config is untouched", iso[1].failed);
    if (rc == 0) {
        const struct cand *b = iso[1].p99_ms < iso[0].p99_ms ? &iso[1] : &iso[0];
        t.iso_p99_runs[0] = iso[0].p99_ms;
        t.iso_p99_runs[1] = iso[1].p99_ms;
        t.iso_p99_ms = b->p99_ms;
        t.iso_p50_ms = b->p50_ms;
        t.iso_requests = b->requests;
        for (int i = 0; i < nc; i++) {
            unsigned over = 0;
            if (!c[i].ran)
                continue;
            for (unsigned k = 0; k < c[i].requests; k++)
                over += c[i].spans[k] > cfg->slo * t.iso_p99_ms ? 1u : 0u;
            c[i].over_pct = 100.0 * over / (double)c[i].requests;
            if (c[i].over_pct <= OVER_P_MAX_PCT && (best < 0 || c[i].be_kps > c[best].be_kps))
                best = i;
        }
        if (best < 0) {
            no_candidate = 1;
            rc = tfail(err, errlen, MOSAIC_EINVAL, "tune: no candidate kept at most %.0f%% of "
                       "HP requests over p = %g (the table above); the config is untouched: "
                       "try a larger slo, or longer trials (tune-trial-ms)", OVER_P_MAX_PCT,
                       cfg->slo);
        }
    }
    if (rc == 0 || no_candidate) {
        /* No candidate within p is an answer too: the evidence is printed
         * as it would be for a choice (best -1: none chosen; the reason in
         * "refused"), and the exit status still says nothing was written. */
        if (a->json) {
            report_json(&t, c, nc, best, rc == 0 ? NULL : err);
        } else {
            printf("mosaic-sched tune: p = %g; HP alone: %u requests, span p99 %.2f ms\n",
                   cfg->slo, t.iso_requests, t.iso_p99_ms);
            printf("%s\n", HEAD);
            for (int i = 0; i < nc; i++) {
                row(&t, &c[i], i == best && rc == 0, line_buf, sizeof(line_buf));
                printf("%s\n", line_buf);
            }
        }
    }
    if (rc == 0)
        rc = write_config(&t, c, nc, best, err, errlen);
    if (rc == 0 && !a->json) {
        char label[64];
        printf("chosen: %s; written to %s\n", mode_label(&c[best], label, sizeof(label)),
               a->config_path);
    }
    if (!a->keep_dir)
        remove_work(t.work);
    free(t.spans);
    free(iso[0].spans);
    free(iso[1].spans);
    for (int i = 0; i < nc; i++) {
        free(c[i].spans);
        c[i].spans = NULL;
    }
    return rc;
}
