/*
 * The task-graph runtime (include/argus/rt.h, docs/argus-workspace.md).
 *
 * One scheduler (the thread in argus_rt_run) owns every decision: which
 * pending task is ready, whether its key is in the workspace, whether an
 * exclusivity class it needs is free, and when a worker has finished or
 * run past its timeout. CPU tasks go to a FIFO that a pool of threads
 * drains; worker tasks are forked by the scheduler itself, which polls
 * them with waitpid(WNOHANG) every few milliseconds. Polling rather than a
 * SIGCHLD handler keeps the library from taking a process-wide signal away
 * from the program that links it; a measurement lasts far longer than the
 * 2 ms the poll adds to its end.
 *
 * All task state is under one mutex. Tasks are allocated one by one (the
 * table holds pointers), so a running task's body can use its own and its
 * finished dependencies' records without the lock while other threads add
 * tasks and grow the table.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "argus/rt.h"
#include "argus_internal.h"

extern char **environ;

/* How often the scheduler looks at its workers when nothing woke it. */
#define RT_POLL_NS (2 * 1000 * 1000)
#define RT_REASON 640

typedef struct rt_task {
    char *id, *kind, *config, *program, *scope, *keyconfig;
    struct rt_task **deps;
    size_t ndeps;
    char *excl[ARGUS_RT_MAX_EXCL];
    size_t nexcl;
    double timeout_s;
    unsigned flags;
    argus_rt_exec_fn exec;
    void *user;
    int (*check)(void *, const char *, const char *, char *, size_t);
    char **argv;
    char *device;
    char **outputs;
    size_t noutputs;
    char (*out_hash)[ARGUS_HASH_HEX];
    unsigned char *out_set;
    int has_env;
    char *gpu, *driver, *cuda;

    argus_rt_state state;
    int dispatched; /* holds its classes: queued for the pool or running */
    int err;
    char reason[RT_REASON];
    char key[ARGUS_HASH_HEX];
    int64_t start_ns, end_ns, deadline_ns;
    unsigned runs;
    atomic_int expired;
    pid_t pid;
    char *rundir;
    int timed_out;
} rt_task;

struct argus_rt {
    argus_ws *ws;
    argus_rt_opts opts;
    pthread_mutex_t mu;
    pthread_cond_t wake;  /* the scheduler */
    pthread_cond_t work;  /* the pool */
    rt_task **tasks;
    size_t n, cap;
    rt_task **queue;
    size_t qhead, qn, qcap;
    pthread_t *threads;
    unsigned nthreads;
    int stop;
    unsigned seq;
};

struct argus_rt_ctx {
    argus_rt *rt;
    rt_task *t;
    char reason[RT_REASON];
    int failed;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

const char *argus_rt_state_name(argus_rt_state s)
{
    switch (s) {
    case ARGUS_RT_PENDING:
        return "pending";
    case ARGUS_RT_RUNNING:
        return "running";
    case ARGUS_RT_DONE:
        return "done";
    case ARGUS_RT_REUSED:
        return "reused";
    case ARGUS_RT_FAILED:
        return "failed";
    case ARGUS_RT_SKIPPED:
        return "skipped";
    }
    return "?";
}

static int terminal(argus_rt_state s)
{
    return s == ARGUS_RT_DONE || s == ARGUS_RT_REUSED || s == ARGUS_RT_FAILED ||
           s == ARGUS_RT_SKIPPED;
}

static int succeeded(argus_rt_state s)
{
    return s == ARGUS_RT_DONE || s == ARGUS_RT_REUSED;
}

static void fill_status(const rt_task *t, argus_rt_status *st)
{
    st->id = t->id;
    st->kind = t->kind;
    st->state = t->state;
    st->err = t->err;
    st->reason = t->reason;
    memcpy(st->key, t->key, ARGUS_HASH_HEX);
    st->start_ns = t->start_ns;
    st->end_ns = t->end_ns;
    st->runs = t->runs;
}

/* Called with the lock held. */
static void notify(argus_rt *rt, const rt_task *t)
{
    if (rt->opts.progress == NULL)
        return;
    argus_rt_status st;
    fill_status(t, &st);
    rt->opts.progress(&st, rt->opts.progress_user);
}

static void set_reason(rt_task *t, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_reason(rt_task *t, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->reason, sizeof t->reason, fmt, ap);
    va_end(ap);
    if (n < 0)
        t->reason[0] = '\0';
    t->err = err;
}

static void task_free(rt_task *t)
{
    if (t == NULL)
        return;
    free(t->id);
    free(t->kind);
    free(t->config);
    free(t->program);
    free(t->scope);
    free(t->keyconfig);
    free(t->deps);
    for (size_t i = 0; i < t->nexcl; i++)
        free(t->excl[i]);
    if (t->argv != NULL)
        for (size_t i = 0; t->argv[i] != NULL; i++)
            free(t->argv[i]);
    free(t->argv);
    for (size_t i = 0; i < t->noutputs; i++)
        free(t->outputs[i]);
    free(t->outputs);
    free(t->out_hash);
    free(t->out_set);
    free(t->gpu);
    free(t->driver);
    free(t->cuda);
    free(t->rundir);
    free(t->device);
    free(t);
}

static rt_task *find(const argus_rt *rt, const char *id)
{
    for (size_t i = 0; i < rt->n; i++)
        if (strcmp(rt->tasks[i]->id, id) == 0)
            return rt->tasks[i];
    return NULL;
}

static char *dup0(const char *s)
{
    return strdup(s ? s : "");
}

/* An output name becomes a file name in a worker's folder. */
static int safe_name(const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > 64 || s[0] == '.')
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

/* Checks the {out:NAME} and {in:TASK/NAME} references in a worker's argv
 * against the task's outputs and dependencies. */
static int check_refs(const argus_rt_task_desc *d, char *msg, size_t msglen)
{
    for (size_t i = 0; d->argv[i] != NULL; i++) {
        const char *p = d->argv[i];
        while ((p = strchr(p, '{')) != NULL) {
            const char *end = strchr(p, '}');
            int is_out = strncmp(p, "{out:", 5) == 0, is_in = strncmp(p, "{in:", 4) == 0;
            if ((!is_out && !is_in) || end == NULL) {
                p++;
                continue;
            }
            const char *name = p + (is_out ? 5 : 4);
            size_t len = (size_t)(end - name);
            int ok = 0;
            if (is_out) {
                for (size_t k = 0; k < d->noutputs && !ok; k++)
                    ok = strlen(d->outputs[k]) == len && strncmp(d->outputs[k], name, len) == 0;
            } else {
                const char *slash = memchr(name, '/', len);
                size_t tl = slash ? (size_t)(slash - name) : 0;
                for (size_t k = 0; k < d->ndeps && slash && !ok; k++)
                    ok = strlen(d->deps[k]) == tl && strncmp(d->deps[k], name, tl) == 0;
            }
            if (!ok)
                return argus__fail(ARGUS_EINVAL, msg, msglen,
                                   "task %s: argv[%zu] '%s' names %s '%.*s' that the task does "
                                   "not declare (%s)",
                                   d->id, i, d->argv[i], is_out ? "output" : "input", (int)len,
                                   name,
                                   is_out ? "list it in outputs"
                                          : "use {in:TASK/NAME} with TASK among its deps");
            p = end + 1;
        }
    }
    return 0;
}

/* The configuration that goes into the task key: the caller's, and for a
 * worker its argv template and, for every task, its output names, each
 * length-prefixed so that no two differ only in where a field ends. */
static char *key_config(const argus_rt_task_desc *d)
{
    size_t cap = 64 + strlen(d->config ? d->config : "");
    for (size_t i = 0; d->argv && d->argv[i]; i++)
        cap += strlen(d->argv[i]) + 24;
    for (size_t i = 0; i < d->noutputs; i++)
        cap += strlen(d->outputs[i]) + 24;
    char *s = malloc(cap);
    if (s == NULL)
        return NULL;
    size_t n = 0;
    n += (size_t)snprintf(s + n, cap - n, "%s", d->config ? d->config : "");
    if (d->argv != NULL)
        for (size_t i = 0; d->argv[i]; i++)
            n += (size_t)snprintf(s + n, cap - n, "\nargv:%zu:%s", strlen(d->argv[i]),
                                  d->argv[i]);
    for (size_t i = 0; i < d->noutputs; i++)
        n += (size_t)snprintf(s + n, cap - n, "\nout:%zu:%s", strlen(d->outputs[i]),
                              d->outputs[i]);
    return s;
}

/* With the lock held. */
static int add_locked(argus_rt *rt, const argus_rt_task_desc *d, char *msg, size_t msglen)
{
    if (d == NULL || d->id == NULL || d->id[0] == '\0')
        return argus__fail(ARGUS_EINVAL, msg, msglen, "a task needs an id");
    if (d->kind == NULL || d->kind[0] == '\0')
        return argus__fail(ARGUS_EINVAL, msg, msglen, "task %s: no kind", d->id);
    if ((d->exec == NULL) == (d->argv == NULL || d->argv[0] == NULL))
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "task %s: give exactly one of exec (a CPU task) and argv (a worker "
                           "process)",
                           d->id);
    if (d->ndeps > 0 && d->deps == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "task %s: %zu deps but no list", d->id,
                           d->ndeps);
    if (d->noutputs > ARGUS_RT_MAX_OUTPUTS || (d->noutputs > 0 && d->outputs == NULL))
        return argus__fail(ARGUS_EINVAL, msg, msglen, "task %s: %zu outputs (at most %d)",
                           d->id, d->noutputs, ARGUS_RT_MAX_OUTPUTS);
    if (d->device != NULL && (d->device[0] == '\0' || strlen(d->device) > 64))
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "task %s: device '%s' must be 1-64 characters (an index such as "
                           "\"0\" or a GPU UUID)",
                           d->id, d->device);
    if (d->timeout_s < 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "task %s: a negative timeout", d->id);
    for (size_t i = 0; i < d->noutputs; i++) {
        if (!safe_name(d->outputs[i]))
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "task %s: output name '%s' must be 1-64 of [A-Za-z0-9_.-], not "
                               "starting with '.'",
                               d->id, d->outputs[i] ? d->outputs[i] : "(null)");
        for (size_t k = 0; k < i; k++)
            if (strcmp(d->outputs[i], d->outputs[k]) == 0)
                return argus__fail(ARGUS_EINVAL, msg, msglen,
                                   "task %s: output '%s' declared twice", d->id, d->outputs[i]);
    }
    if (find(rt, d->id) != NULL)
        return argus__fail(ARGUS_RT_EDUP, msg, msglen, "task %s: a task with this id exists",
                           d->id);
    for (size_t i = 0; i < d->ndeps; i++)
        if (d->deps[i] == NULL || find(rt, d->deps[i]) == NULL)
            return argus__fail(ARGUS_RT_ENODEP, msg, msglen,
                               "task %s: deps[%zu] '%s' is not a task; add the tasks it "
                               "depends on first",
                               d->id, i, d->deps[i] ? d->deps[i] : "(null)");
    if (d->argv != NULL) {
        int rc = check_refs(d, msg, msglen);
        if (rc != 0)
            return rc;
    }
    rt_task *t = calloc(1, sizeof *t);
    if (t == NULL)
        return ARGUS_ENOMEM;
    int bad = 0;
    t->id = dup0(d->id);
    t->kind = dup0(d->kind);
    t->config = dup0(d->config);
    t->program = dup0(d->program);
    t->scope = dup0(d->scope);
    t->keyconfig = key_config(d);
    bad |= !t->id || !t->kind || !t->config || !t->program || !t->scope || !t->keyconfig;
    t->deps = calloc(d->ndeps ? d->ndeps : 1, sizeof *t->deps);
    bad |= t->deps == NULL;
    for (size_t i = 0; i < d->ndeps && !bad; i++)
        t->deps[t->ndeps++] = find(rt, d->deps[i]);
    for (size_t i = 0; i < ARGUS_RT_MAX_EXCL && d->excl[i] != NULL && !bad; i++) {
        if ((t->excl[t->nexcl] = strdup(d->excl[i])) == NULL)
            bad = 1;
        else
            t->nexcl++;
    }
    /* A worker bound to a device holds that device's class unless told it
     * may share it: two collections on one GPU perturb each other. */
    char devclass[96];
    snprintf(devclass, sizeof devclass, "gpu:%s", d->device ? d->device : "");
    int has_dev = 0;
    for (size_t i = 0; i < t->nexcl; i++)
        has_dev |= strcmp(t->excl[i], devclass) == 0;
    if (!bad && d->argv != NULL && d->device != NULL && !(d->flags & ARGUS_RT_SHARE_DEVICE) &&
        !has_dev) {
        if (t->nexcl == ARGUS_RT_MAX_EXCL)
            bad = 2;
        else if ((t->excl[t->nexcl] = strdup(devclass)) == NULL)
            bad = 1;
        else
            t->nexcl++;
    }
    t->timeout_s = d->timeout_s;
    t->flags = d->flags;
    t->exec = d->exec;
    t->user = d->user;
    t->check = d->argv != NULL ? d->check : NULL;
    if (d->device != NULL && !bad)
        bad |= (t->device = strdup(d->device)) == NULL;
    if (d->argv != NULL && !bad) {
        size_t n = 0;
        while (d->argv[n] != NULL)
            n++;
        t->argv = calloc(n + 1, sizeof *t->argv);
        bad |= t->argv == NULL;
        for (size_t i = 0; i < n && !bad; i++)
            bad |= (t->argv[i] = strdup(d->argv[i])) == NULL;
    }
    t->outputs = calloc(d->noutputs ? d->noutputs : 1, sizeof *t->outputs);
    t->out_hash = calloc(d->noutputs ? d->noutputs : 1, sizeof *t->out_hash);
    t->out_set = calloc(d->noutputs ? d->noutputs : 1, 1);
    bad |= !t->outputs || !t->out_hash || !t->out_set;
    for (size_t i = 0; i < d->noutputs && !bad; i++) {
        if ((t->outputs[i] = strdup(d->outputs[i])) == NULL)
            bad = 1;
        else
            t->noutputs++;
    }
    if (d->env != NULL && !bad) {
        t->has_env = 1;
        t->gpu = dup0(d->env->gpu);
        t->driver = dup0(d->env->driver);
        t->cuda = dup0(d->env->cuda);
        bad |= !t->gpu || !t->driver || !t->cuda;
    }
    atomic_init(&t->expired, 0);
    t->state = ARGUS_RT_PENDING;
    if (bad == 2) {
        task_free(t);
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "task %s: %d exclusivity classes and no room for its device's "
                           "%s (at most %d in all)",
                           d->id, ARGUS_RT_MAX_EXCL, devclass, ARGUS_RT_MAX_EXCL);
    }
    if (bad || argus__grow((void **)&rt->tasks, &rt->cap, rt->n + 1, sizeof *rt->tasks) != 0) {
        task_free(t);
        return ARGUS_ENOMEM;
    }
    rt->tasks[rt->n++] = t;
    notify(rt, t);
    pthread_cond_signal(&rt->wake);
    return 0;
}

int argus_rt_add(argus_rt *rt, const argus_rt_task_desc *d, char *msg, size_t msglen)
{
    if (rt == NULL)
        return ARGUS_EINVAL;
    pthread_mutex_lock(&rt->mu);
    int rc = add_locked(rt, d, msg, msglen);
    pthread_mutex_unlock(&rt->mu);
    return rc;
}

/* ---- the CPU pool ----------------------------------------------------- */

static int record(argus_rt *rt, rt_task *t, char *msg, size_t msglen);

static void *pool_main(void *arg)
{
    argus_rt *rt = arg;
    pthread_mutex_lock(&rt->mu);
    for (;;) {
        while (!rt->stop && rt->qn == 0)
            pthread_cond_wait(&rt->work, &rt->mu);
        if (rt->stop)
            break;
        rt_task *t = rt->queue[rt->qhead];
        rt->qhead = (rt->qhead + 1) % rt->qcap;
        rt->qn--;
        t->state = ARGUS_RT_RUNNING;
        t->start_ns = now_ns();
        t->deadline_ns = t->timeout_s > 0 ? t->start_ns + (int64_t)(t->timeout_s * 1e9) : 0;
        t->runs++;
        memset(t->out_set, 0, t->noutputs);
        notify(rt, t);
        pthread_mutex_unlock(&rt->mu);

        struct argus_rt_ctx ctx = {.rt = rt, .t = t};
        int rc = t->exec(&ctx, t->user);
        int64_t end = now_ns();
        char why[RT_REASON] = "";
        int err = 0;
        if (atomic_load(&t->expired) || (t->deadline_ns > 0 && end > t->deadline_ns)) {
            err = ARGUS_RT_ETIMEOUT;
            snprintf(why, sizeof why,
                     "ran %.3f s, past its timeout of %.3f s; its result is discarded",
                     (double)(end - t->start_ns) / 1e9, t->timeout_s);
        } else if (rc != 0) {
            err = ARGUS_RT_ETASK;
            if (ctx.failed)
                snprintf(why, sizeof why, "%s", ctx.reason);
            else
                snprintf(why, sizeof why, "its body returned %d (%s)", rc,
                         argus_ws_strerror(rc));
        } else {
            for (size_t i = 0; i < t->noutputs && err == 0; i++)
                if (!t->out_set[i]) {
                    err = ARGUS_RT_ENOOUTPUT;
                    snprintf(why, sizeof why,
                             "it returned success without writing its output '%s'",
                             t->outputs[i]);
                }
            if (err == 0)
                err = record(rt, t, why, sizeof why);
        }
        pthread_mutex_lock(&rt->mu);
        t->end_ns = end;
        t->dispatched = 0;
        if (err == 0) {
            t->state = ARGUS_RT_DONE;
        } else {
            t->state = ARGUS_RT_FAILED;
            set_reason(t, err, "%s", why);
        }
        notify(rt, t);
        pthread_cond_signal(&rt->wake);
    }
    pthread_mutex_unlock(&rt->mu);
    return NULL;
}

int argus_rt_new(argus_ws *ws, const argus_rt_opts *opts, argus_rt **out)
{
    if (ws == NULL || out == NULL)
        return ARGUS_EINVAL;
    argus_rt *rt = calloc(1, sizeof *rt);
    if (rt == NULL)
        return ARGUS_ENOMEM;
    rt->ws = ws;
    if (opts != NULL)
        rt->opts = *opts;
    if (rt->opts.cpu_threads == 0)
        rt->opts.cpu_threads = 2;
    pthread_mutex_init(&rt->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rt->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&rt->work, NULL);
    rt->threads = calloc(rt->opts.cpu_threads, sizeof *rt->threads);
    if (rt->threads == NULL) {
        argus_rt_free(rt);
        return ARGUS_ENOMEM;
    }
    for (unsigned i = 0; i < rt->opts.cpu_threads; i++) {
        if (pthread_create(&rt->threads[i], NULL, pool_main, rt) != 0) {
            argus_rt_free(rt);
            return ARGUS_ENOMEM;
        }
        rt->nthreads++;
    }
    *out = rt;
    return 0;
}

void argus_rt_free(argus_rt *rt)
{
    if (rt == NULL)
        return;
    pthread_mutex_lock(&rt->mu);
    rt->stop = 1;
    pthread_cond_broadcast(&rt->work);
    pthread_mutex_unlock(&rt->mu);
    for (unsigned i = 0; i < rt->nthreads; i++)
        pthread_join(rt->threads[i], NULL);
    free(rt->threads);
    for (size_t i = 0; i < rt->n; i++) {
        rt_task *t = rt->tasks[i];
        if (t->pid > 0) {
            kill(-t->pid, SIGKILL);
            kill(t->pid, SIGKILL);
            waitpid(t->pid, NULL, 0);
        }
        task_free(t);
    }
    free(rt->tasks);
    free(rt->queue);
    pthread_mutex_destroy(&rt->mu);
    pthread_cond_destroy(&rt->wake);
    pthread_cond_destroy(&rt->work);
    free(rt);
}

/* ---- keys and records ------------------------------------------------- */

/* The task's inputs: the output hashes of its dependencies, in the order of
 * its deps and of their outputs. A dependency that did not succeed (only
 * an ARGUS_RT_PARTIAL task runs after one) stands in as the hash of
 * "missing TASK/NAME": no object has it, and the key differs from the one
 * with the input present, so a later run with the branch fixed runs the
 * task again. The strings live in the same block as the array. */
static int task_inputs(const rt_task *t, const char ***inputs, size_t *n)
{
    size_t total = 0;
    for (size_t i = 0; i < t->ndeps; i++)
        total += t->deps[i]->noutputs;
    size_t head = (total ? total : 1) * sizeof(const char *);
    const char **v = calloc(1, head + total * ARGUS_HASH_HEX);
    if (v == NULL)
        return ARGUS_ENOMEM;
    char (*miss)[ARGUS_HASH_HEX] = (void *)((char *)v + head);
    size_t k = 0;
    for (size_t i = 0; i < t->ndeps; i++) {
        const rt_task *d = t->deps[i];
        for (size_t j = 0; j < d->noutputs; j++, k++) {
            if (succeeded(d->state)) {
                v[k] = d->out_hash[j];
                continue;
            }
            char what[512];
            int w = snprintf(what, sizeof what, "missing %s/%s", d->id, d->outputs[j]);
            argus_sha256_hex(what, w > 0 ? (size_t)w : 0, miss[k]);
            v[k] = miss[k];
        }
    }
    *inputs = v;
    *n = k;
    return 0;
}

static void ws_task_of(const rt_task *t, argus_ws_task *wt, argus_ws_env *env)
{
    env->gpu = t->gpu;
    env->driver = t->driver;
    env->cuda = t->cuda;
    wt->kind = t->kind;
    wt->config = t->keyconfig;
    wt->program = t->program;
    wt->scope = t->scope;
    wt->env = t->has_env ? env : NULL;
}

static int record(argus_rt *rt, rt_task *t, char *msg, size_t msglen)
{
    argus_ws_task wt;
    argus_ws_env env;
    ws_task_of(t, &wt, &env);
    int rc = task_inputs(t, (const char ***)&wt.inputs, &wt.ninputs);
    if (rc != 0)
        return rc;
    argus_ws_output outs[ARGUS_RT_MAX_OUTPUTS];
    for (size_t i = 0; i < t->noutputs; i++) {
        outs[i].name = t->outputs[i];
        outs[i].hash = t->out_hash[i];
    }
    char key[ARGUS_HASH_HEX];
    rc = argus_ws_record(rt->ws, &wt, outs, t->noutputs, key, msg, msglen);
    free((void *)wt.inputs);
    return rc;
}

/* Computes the key of a ready task and looks it up: 1 when the workspace
 * has all its outputs (now in out_hash), 0 when it must run. */
static int try_reuse(argus_rt *rt, rt_task *t)
{
    argus_ws_task wt;
    argus_ws_env env;
    ws_task_of(t, &wt, &env);
    if (task_inputs(t, (const char ***)&wt.inputs, &wt.ninputs) != 0)
        return 0;
    int rc = argus_ws_task_key(&wt, t->key, NULL, 0);
    free((void *)wt.inputs);
    if (rc != 0 || (t->flags & ARGUS_RT_ALWAYS))
        return 0;
    argus_ws_manifest *m = NULL;
    if (argus_ws_lookup(rt->ws, t->key, &m, NULL, 0) != 0)
        return 0;
    int ok = 1;
    for (size_t i = 0; i < t->noutputs && ok; i++) {
        const char *h = argus_ws_manifest_output(m, t->outputs[i]);
        if (h == NULL)
            ok = 0;
        else
            memcpy(t->out_hash[i], h, ARGUS_HASH_HEX);
    }
    argus_ws_manifest_free(m);
    return ok;
}

/* ---- workers ---------------------------------------------------------- */

static int append(char **s, size_t *n, size_t *cap, const char *p, size_t len)
{
    if (argus__grow((void **)s, cap, *n + len + 1, 1) != 0)
        return ARGUS_ENOMEM;
    memcpy(*s + *n, p, len);
    *n += len;
    (*s)[*n] = '\0';
    return 0;
}

/* One argv element with {out:NAME} and {in:TASK/NAME} replaced by paths. */
static int substitute(argus_rt *rt, rt_task *t, const char *arg, char **out, char *why,
                      size_t whylen)
{
    char *s = NULL;
    size_t n = 0, cap = 0;
    const char *p = arg;
    int rc = append(&s, &n, &cap, "", 0);
    while (rc == 0 && *p) {
        const char *end = strchr(p, '}');
        int is_out = strncmp(p, "{out:", 5) == 0, is_in = strncmp(p, "{in:", 4) == 0;
        if ((!is_out && !is_in) || end == NULL) {
            rc = append(&s, &n, &cap, p, 1);
            p++;
            continue;
        }
        const char *name = p + (is_out ? 5 : 4);
        size_t len = (size_t)(end - name);
        char path[PATH_MAX + 128];
        if (is_out) {
            int k = snprintf(path, sizeof path, "%s/out.%.*s", t->rundir, (int)len, name);
            if (k < 0 || (size_t)k >= sizeof path)
                rc = ARGUS_ERANGE;
        } else {
            const char *slash = memchr(name, '/', len);
            size_t tl = (size_t)(slash - name);
            const char *hash = NULL;
            for (size_t i = 0; i < t->ndeps && hash == NULL; i++) {
                const rt_task *d = t->deps[i];
                if (strlen(d->id) != tl || strncmp(d->id, name, tl) != 0)
                    continue;
                for (size_t j = 0; j < d->noutputs; j++)
                    if (strlen(d->outputs[j]) == len - tl - 1 &&
                        strncmp(d->outputs[j], slash + 1, len - tl - 1) == 0)
                        hash = d->out_hash[j];
            }
            if (hash == NULL) {
                snprintf(why, whylen, "argv '%s': task '%.*s' has no output '%.*s'", arg,
                         (int)tl, name, (int)(len - tl - 1), slash + 1);
                rc = ARGUS_RT_ENODEP;
            } else {
                rc = argus_ws_object_path(rt->ws, hash, path, sizeof path);
            }
        }
        if (rc == 0)
            rc = append(&s, &n, &cap, path, strlen(path));
        p = end + 1;
    }
    if (rc != 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* argv[0] through PATH, resolved before fork (execve does not search). */
static char *resolve(const char *prog)
{
    if (strchr(prog, '/') != NULL)
        return strdup(prog);
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        char cand[PATH_MAX];
        int k = snprintf(cand, sizeof cand, "%.*s/%s", (int)len, len ? path : ".", prog);
        if (k > 0 && (size_t)k < sizeof cand && access(cand, X_OK) == 0)
            return strdup(cand);
        path += len + (colon ? 1 : 0);
        if (!colon)
            break;
    }
    return NULL;
}

static void free_strv(char **v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

/* The worker's environment: ours, with CUDA_VISIBLE_DEVICES bound to its
 * device and ARGUS_RT_TASK / ARGUS_RT_OUT_DIR naming its task and folder. */
static char **worker_env(const rt_task *t)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **e = calloc(n + 4, sizeof *e);
    if (e == NULL)
        return NULL;
    size_t k = 0;
    int bad = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        if ((t->device != NULL && strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) == 0) ||
            strncmp(environ[i], "ARGUS_RT_TASK=", 14) == 0 ||
            strncmp(environ[i], "ARGUS_RT_OUT_DIR=", 17) == 0)
            continue;
        bad |= (e[k++] = strdup(environ[i])) == NULL;
    }
    char buf[PATH_MAX + 64];
    if (!bad && t->device != NULL) {
        snprintf(buf, sizeof buf, "CUDA_VISIBLE_DEVICES=%.64s", t->device);
        bad |= (e[k++] = strdup(buf)) == NULL;
    }
    if (!bad) {
        snprintf(buf, sizeof buf, "ARGUS_RT_TASK=%s", t->id);
        bad |= (e[k++] = strdup(buf)) == NULL;
    }
    if (!bad) {
        snprintf(buf, sizeof buf, "ARGUS_RT_OUT_DIR=%s", t->rundir);
        bad |= (e[k++] = strdup(buf)) == NULL;
    }
    if (bad) {
        free_strv(e);
        return NULL;
    }
    return e;
}

static void remove_rundir(rt_task *t)
{
    if (t->rundir == NULL)
        return;
    char path[PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/log", t->rundir);
    unlink(path);
    for (size_t i = 0; i < t->noutputs; i++) {
        snprintf(path, sizeof path, "%s/out.%s", t->rundir, t->outputs[i]);
        unlink(path);
    }
    rmdir(t->rundir);
    free(t->rundir);
    t->rundir = NULL;
}

/* Starts a worker, with the lock held. Returns 0, or fails the task. */
static int spawn(argus_rt *rt, rt_task *t)
{
    char why[RT_REASON] = "";
    char tmpl[PATH_MAX + 64];
    int k = snprintf(tmpl, sizeof tmpl, "%s/tmp/rt-XXXXXX", argus_ws_path(rt->ws));
    if (k < 0 || (size_t)k >= sizeof tmpl || mkdtemp(tmpl) == NULL) {
        set_reason(t, ARGUS_EIO, "cannot create its folder under %s/tmp: %s",
                   argus_ws_path(rt->ws), strerror(errno));
        return ARGUS_EIO;
    }
    t->rundir = strdup(tmpl);
    if (t->rundir == NULL)
        return ARGUS_ENOMEM;
    size_t argc = 0;
    while (t->argv[argc] != NULL)
        argc++;
    char **argv = calloc(argc + 1, sizeof *argv);
    char **envp = NULL;
    char *prog = NULL;
    int rc = argv ? 0 : ARGUS_ENOMEM;
    for (size_t i = 0; i < argc && rc == 0; i++)
        rc = substitute(rt, t, t->argv[i], &argv[i], why, sizeof why);
    if (rc == 0 && (prog = resolve(argv[0])) == NULL) {
        snprintf(why, sizeof why, "cannot find the program '%.200s' in PATH", argv[0]);
        rc = ARGUS_RT_EWORKER;
    }
    /* Checked here because, after fork, the child can only say 127. */
    if (rc == 0 && access(prog, X_OK) != 0) {
        snprintf(why, sizeof why, "cannot execute '%.300s': %s", prog, strerror(errno));
        rc = ARGUS_RT_EWORKER;
    }
    if (rc == 0 && (envp = worker_env(t)) == NULL)
        rc = ARGUS_ENOMEM;
    char logp[PATH_MAX + 64];
    snprintf(logp, sizeof logp, "%s/log", t->rundir);
    int logfd = rc == 0 ? open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    if (rc == 0 && logfd < 0) {
        snprintf(why, sizeof why, "cannot create %.300s: %s", logp, strerror(errno));
        rc = ARGUS_EIO;
    }
    int nullfd = rc == 0 ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
    pid_t pid = -1;
    if (rc == 0) {
        pid = fork();
        if (pid == 0) {
            /* The child calls only async-signal-safe functions: the parent
             * has other threads, whose locks it may have inherited held. */
            setpgid(0, 0);
            if (nullfd >= 0)
                dup2(nullfd, 0);
            dup2(logfd, 1);
            dup2(logfd, 2);
            execve(prog, argv, envp);
            _exit(127);
        }
        if (pid < 0) {
            snprintf(why, sizeof why, "fork: %s", strerror(errno));
            rc = ARGUS_RT_EWORKER;
        } else {
            /* Both sides set the group, so that a kill on timeout reaches
             * it whichever runs first. */
            setpgid(pid, pid);
        }
    }
    if (logfd >= 0)
        close(logfd);
    if (nullfd >= 0)
        close(nullfd);
    free_strv(argv);
    free_strv(envp);
    free(prog);
    if (rc != 0) {
        set_reason(t, rc, "%s", why[0] ? why : argus_ws_strerror(rc));
        remove_rundir(t);
        return rc;
    }
    t->pid = pid;
    t->state = ARGUS_RT_RUNNING;
    t->dispatched = 1;
    t->start_ns = now_ns();
    t->deadline_ns = t->timeout_s > 0 ? t->start_ns + (int64_t)(t->timeout_s * 1e9) : 0;
    t->runs++;
    notify(rt, t);
    return 0;
}

/* The last non-empty line of a worker's log, for a failure's reason. */
static void last_line(const char *rundir, char *buf, size_t len)
{
    buf[0] = '\0';
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/log", rundir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    char tail[200];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof tail - 1 ? size - (off_t)sizeof tail + 1 : 0;
    ssize_t r = pread(fd, tail, sizeof tail - 1, from);
    close(fd);
    if (r <= 0)
        return;
    tail[r] = '\0';
    while (r > 0 && (tail[r - 1] == '\n' || tail[r - 1] == '\r'))
        tail[--r] = '\0';
    char *nl = strrchr(tail, '\n');
    snprintf(buf, len, "%s", nl ? nl + 1 : tail);
}

/* A failed worker's whole log is stored as an object (gc removes it with
 * the other unreferenced objects) and the reason names it, since the
 * reason quotes only the last line. */
static void keep_log(argus_rt *rt, rt_task *t)
{
    char path[PATH_MAX + 64], hash[ARGUS_HASH_HEX];
    struct stat st;
    snprintf(path, sizeof path, "%s/log", t->rundir);
    if (stat(path, &st) != 0 || st.st_size == 0 ||
        argus_ws_put_file(rt->ws, path, hash, NULL, 0) != 0)
        return;
    size_t n = strlen(t->reason);
    if (n < sizeof t->reason)
        snprintf(t->reason + n, sizeof t->reason - n,
                 " (its whole log: argus ws show %.16s)", hash);
}

/* A worker has exited (status from waitpid), with the lock held. */
static void finish_worker(argus_rt *rt, rt_task *t, int status)
{
    t->end_ns = now_ns();
    t->pid = 0;
    t->dispatched = 0;
    char line[256];
    last_line(t->rundir, line, sizeof line);
    const char *sep = line[0] ? "; its last output: " : "";
    if (t->timed_out) {
        t->state = ARGUS_RT_FAILED;
        set_reason(t, ARGUS_RT_ETIMEOUT,
                   "worker ran past its timeout of %.3f s; its process group was killed%s%s",
                   t->timeout_s, sep, line);
    } else if (WIFSIGNALED(status)) {
        t->state = ARGUS_RT_FAILED;
        set_reason(t, ARGUS_RT_EWORKER, "worker was killed by signal %d (%s)%s%s",
                   WTERMSIG(status), strsignal(WTERMSIG(status)), sep, line);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        t->state = ARGUS_RT_FAILED;
        set_reason(t, ARGUS_RT_EWORKER, "worker exited with status %d%s%s",
                   WEXITSTATUS(status), sep, line);
    } else {
        int err = 0;
        char why[RT_REASON] = "";
        for (size_t i = 0; i < t->noutputs && err == 0; i++) {
            char path[PATH_MAX + 128];
            snprintf(path, sizeof path, "%s/out.%s", t->rundir, t->outputs[i]);
            if (access(path, F_OK) != 0) {
                err = ARGUS_RT_ENOOUTPUT;
                snprintf(why, sizeof why,
                         "worker exited with status 0 without writing its output '%s' "
                         "({out:%s} in its argv)",
                         t->outputs[i], t->outputs[i]);
                break;
            }
            if (t->check != NULL) {
                char cwhy[RT_REASON - 64] = "";
                if (t->check(t->user, t->outputs[i], path, cwhy, sizeof cwhy) != 0) {
                    err = ARGUS_RT_EOUTPUT;
                    snprintf(why, sizeof why, "its output '%s' is refused: %s", t->outputs[i],
                             cwhy[0] ? cwhy : "(no reason given)");
                    break;
                }
            }
            err = argus_ws_put_file(rt->ws, path, t->out_hash[i], why, sizeof why);
        }
        if (err == 0)
            err = record(rt, t, why, sizeof why);
        if (err == 0) {
            t->state = ARGUS_RT_DONE;
        } else {
            t->state = ARGUS_RT_FAILED;
            set_reason(t, err, "%s", why);
        }
    }
    if (t->state == ARGUS_RT_FAILED)
        keep_log(rt, t);
    remove_rundir(t);
    notify(rt, t);
}

/* ---- the scheduler ---------------------------------------------------- */

static int blocked(const argus_rt *rt, const rt_task *t)
{
    for (size_t i = 0; i < rt->n; i++) {
        const rt_task *r = rt->tasks[i];
        if (!r->dispatched || r == t)
            continue;
        for (size_t a = 0; a < t->nexcl; a++)
            for (size_t b = 0; b < r->nexcl; b++)
                if (strcmp(t->excl[a], r->excl[b]) == 0)
                    return 1;
    }
    return 0;
}

static int enqueue(argus_rt *rt, rt_task *t)
{
    if (rt->qn == rt->qcap) {
        size_t ncap = rt->qcap ? rt->qcap * 2 : 16;
        rt_task **nq = malloc(ncap * sizeof *nq);
        if (nq == NULL)
            return ARGUS_ENOMEM;
        for (size_t i = 0; i < rt->qn; i++)
            nq[i] = rt->queue[(rt->qhead + i) % rt->qcap];
        free(rt->queue);
        rt->queue = nq;
        rt->qhead = 0;
        rt->qcap = ncap;
    }
    rt->queue[(rt->qhead + rt->qn) % rt->qcap] = t;
    rt->qn++;
    t->dispatched = 1;
    pthread_cond_signal(&rt->work);
    return 0;
}

/* Whether the evidence of a joining task's dependencies may be joined; if
 * not, the reason is the task's. */
static int joinable(argus_rt *rt, rt_task *t)
{
    /* Only what is there is joined: an ARGUS_RT_PARTIAL task's failed
     * inputs have no manifest, and its body says they are missing. */
    argus_ws_manifest **ms = calloc(t->ndeps ? t->ndeps : 1, sizeof *ms);
    const rt_task **from = calloc(t->ndeps ? t->ndeps : 1, sizeof *from);
    size_t n = 0;
    int ok = ms != NULL && from != NULL;
    if (!ok)
        set_reason(t, ARGUS_ENOMEM, "out of memory checking its inputs for the join");
    for (size_t i = 0; i < t->ndeps && ok; i++) {
        char why[RT_REASON];
        if (!succeeded(t->deps[i]->state))
            continue;
        from[n] = t->deps[i];
        if (argus_ws_lookup(rt->ws, t->deps[i]->key, &ms[n], why, sizeof why) != 0) {
            set_reason(t, ARGUS_WS_EINCOMPAT, "cannot check input '%s' for the join: %s",
                       t->deps[i]->id, why);
            ok = 0;
        } else {
            n++;
        }
    }
    if (ok) {
        char why[RT_REASON];
        unsigned flags = (t->flags & ARGUS_RT_JOIN_ANY_SCOPE) ? ARGUS_WS_JOIN_ANY_SCOPE : 0;
        int rc = argus_ws_join_check((const argus_ws_manifest *const *)ms, n, flags, why,
                                     sizeof why);
        if (rc != 0) {
            /* The check names task keys; people know the tasks by id, so
             * the reason says which id has which key. */
            char ids[RT_REASON] = "";
            size_t used = 0;
            for (size_t i = 0; i < n && used < sizeof ids; i++) {
                int k = snprintf(ids + used, sizeof ids - used, "%s%s=%.12s", i ? ", " : "",
                                 from[i]->id, ms[i]->key);
                if (k < 0)
                    break;
                used += (size_t)k;
            }
            set_reason(t, rc, "inputs not joined: %.400s (tasks: %.200s)", why, ids);
            ok = 0;
        }
    }
    for (size_t i = 0; i < n && ms != NULL; i++)
        argus_ws_manifest_free(ms[i]);
    free(ms);
    free(from);
    return ok;
}

/* One pass over the pending tasks, in the order added (so a dependency is
 * always decided before the tasks below it). Returns whether anything
 * changed. */
static int schedule(argus_rt *rt)
{
    int changed = 0;
    for (size_t i = 0; i < rt->n; i++) {
        rt_task *t = rt->tasks[i];
        if (t->state != ARGUS_RT_PENDING || t->dispatched)
            continue;
        const rt_task *bad = NULL;
        int ready = 1;
        for (size_t k = 0; k < t->ndeps; k++) {
            const rt_task *d = t->deps[k];
            if ((d->state == ARGUS_RT_FAILED || d->state == ARGUS_RT_SKIPPED) &&
                !(t->flags & ARGUS_RT_PARTIAL)) {
                bad = d;
                break;
            }
            if (d->state == ARGUS_RT_FAILED || d->state == ARGUS_RT_SKIPPED)
                continue; /* ARGUS_RT_PARTIAL: runs without it */
            if (!succeeded(d->state))
                ready = 0;
        }
        if (bad != NULL) {
            t->state = ARGUS_RT_SKIPPED;
            if (bad->state == ARGUS_RT_FAILED)
                set_reason(t, ARGUS_RT_EFAILED, "not run: task '%s' it depends on failed",
                           bad->id);
            else
                set_reason(t, ARGUS_RT_EFAILED, "not run: %s", bad->reason + 9);
            notify(rt, t);
            changed = 1;
            continue;
        }
        if (!ready)
            continue;
        if ((t->flags & ARGUS_RT_JOIN) && t->key[0] == '\0' && !joinable(rt, t)) {
            t->state = ARGUS_RT_FAILED;
            notify(rt, t);
            changed = 1;
            continue;
        }
        if (t->key[0] == '\0' && try_reuse(rt, t)) {
            t->state = ARGUS_RT_REUSED;
            notify(rt, t);
            changed = 1;
            continue;
        }
        if (blocked(rt, t))
            continue;
        changed = 1;
        if (t->exec != NULL) {
            if (enqueue(rt, t) != 0) {
                t->state = ARGUS_RT_FAILED;
                set_reason(t, ARGUS_ENOMEM, "out of memory queueing it");
                notify(rt, t);
            }
        } else if (spawn(rt, t) != 0) {
            t->state = ARGUS_RT_FAILED;
            t->end_ns = now_ns();
            notify(rt, t);
        }
    }
    return changed;
}

/* Reaps finished workers and kills those past their deadline. */
static int watch(argus_rt *rt)
{
    int changed = 0;
    int64_t now = now_ns();
    for (size_t i = 0; i < rt->n; i++) {
        rt_task *t = rt->tasks[i];
        if (t->state != ARGUS_RT_RUNNING)
            continue;
        if (t->exec != NULL) {
            /* A CPU task cannot be killed; it is told, and failed when it
             * returns (argus_rt_ctx_expired). */
            if (t->deadline_ns > 0 && now > t->deadline_ns)
                atomic_store(&t->expired, 1);
            continue;
        }
        int status = 0;
        pid_t r = waitpid(t->pid, &status, WNOHANG);
        if (r == t->pid) {
            finish_worker(rt, t, status);
            changed = 1;
        } else if (r < 0 && errno == ECHILD) {
            /* The program ignores SIGCHLD, so its children are reaped by
             * the kernel and their status is lost: the runtime cannot tell
             * success from a crash. */
            t->end_ns = now_ns();
            t->pid = 0;
            t->dispatched = 0;
            t->state = ARGUS_RT_FAILED;
            set_reason(t, ARGUS_RT_EWORKER,
                       "its exit status was lost: the program sets SIGCHLD to SIG_IGN; "
                       "leave SIGCHLD at its default while the runtime runs workers");
            remove_rundir(t);
            notify(rt, t);
            changed = 1;
        } else if (t->deadline_ns > 0 && now > t->deadline_ns) {
            t->timed_out = 1;
            kill(-t->pid, SIGKILL);
            kill(t->pid, SIGKILL);
            while (waitpid(t->pid, &status, 0) < 0 && errno == EINTR)
                ;
            finish_worker(rt, t, status);
            changed = 1;
        }
    }
    return changed;
}

int argus_rt_run(argus_rt *rt)
{
    if (rt == NULL)
        return ARGUS_EINVAL;
    pthread_mutex_lock(&rt->mu);
    for (;;) {
        int changed = schedule(rt);
        changed |= watch(rt);
        int live = 0;
        for (size_t i = 0; i < rt->n && !live; i++)
            live = !terminal(rt->tasks[i]->state);
        if (!live)
            break;
        if (changed)
            continue;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += RT_POLL_NS;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&rt->wake, &rt->mu, &ts);
    }
    int failed = 0;
    for (size_t i = 0; i < rt->n; i++)
        failed |= !succeeded(rt->tasks[i]->state);
    pthread_mutex_unlock(&rt->mu);
    return failed ? ARGUS_RT_EFAILED : 0;
}

/* ---- results ---------------------------------------------------------- */

int argus_rt_get(const argus_rt *rt, const char *id, argus_rt_status *st)
{
    if (rt == NULL || id == NULL || st == NULL)
        return ARGUS_EINVAL;
    const rt_task *t = find(rt, id);
    if (t == NULL)
        return ARGUS_WS_ENOENT;
    fill_status(t, st);
    return 0;
}

size_t argus_rt_count(const argus_rt *rt)
{
    return rt ? rt->n : 0;
}

int argus_rt_get_at(const argus_rt *rt, size_t i, argus_rt_status *st)
{
    if (rt == NULL || st == NULL || i >= rt->n)
        return ARGUS_EINVAL;
    fill_status(rt->tasks[i], st);
    return 0;
}

const char *argus_rt_output(const argus_rt *rt, const char *id, const char *name)
{
    const rt_task *t = rt && id ? find(rt, id) : NULL;
    if (t == NULL || name == NULL || !succeeded(t->state))
        return NULL;
    for (size_t i = 0; i < t->noutputs; i++)
        if (strcmp(t->outputs[i], name) == 0)
            return t->out_hash[i];
    return NULL;
}

void argus_rt_print(const argus_rt *rt, FILE *f)
{
    if (rt == NULL || f == NULL)
        return;
    for (size_t i = 0; i < rt->n; i++) {
        const rt_task *t = rt->tasks[i];
        double ms = t->start_ns > 0 && t->end_ns > t->start_ns
                        ? (double)(t->end_ns - t->start_ns) / 1e6
                        : 0.0;
        fprintf(f, "%-8s %-28s %-11s %9.1f ms wall%s%s\n", argus_rt_state_name(t->state), t->id,
                t->kind, ms, t->reason[0] ? "  " : "", t->reason);
    }
}

void argus_rt_progress_print(const argus_rt_status *st, void *file)
{
    FILE *f = file ? file : stderr;
    /* Every task starts pending; saying so for each would bury the news. */
    if (st->state == ARGUS_RT_PENDING)
        return;
    if (st->state == ARGUS_RT_DONE)
        fprintf(f, "argus rt: %s %s (%.1f ms wall)\n", st->id, argus_rt_state_name(st->state),
                (double)(st->end_ns - st->start_ns) / 1e6);
    else
        fprintf(f, "argus rt: %s %s%s%s\n", st->id, argus_rt_state_name(st->state),
                st->reason[0] ? ": " : "", st->reason);
}

/* ---- inside a callback ------------------------------------------------ */

const char *argus_rt_ctx_id(const argus_rt_ctx *ctx)
{
    return ctx ? ctx->t->id : NULL;
}

const char *argus_rt_ctx_input_hash(const argus_rt_ctx *ctx, const char *task, const char *name)
{
    if (ctx == NULL || task == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < ctx->t->ndeps; i++) {
        const rt_task *d = ctx->t->deps[i];
        if (strcmp(d->id, task) != 0 || !succeeded(d->state))
            continue;
        for (size_t j = 0; j < d->noutputs; j++)
            if (strcmp(d->outputs[j], name) == 0)
                return d->out_hash[j];
    }
    return NULL;
}

int argus_rt_ctx_dep(const argus_rt_ctx *ctx, const char *task, argus_rt_status *st)
{
    if (ctx == NULL || task == NULL || st == NULL)
        return ARGUS_EINVAL;
    for (size_t i = 0; i < ctx->t->ndeps; i++)
        if (strcmp(ctx->t->deps[i]->id, task) == 0) {
            fill_status(ctx->t->deps[i], st);
            return 0;
        }
    return ARGUS_RT_ENODEP;
}

int argus_rt_ctx_input(argus_rt_ctx *ctx, const char *task, const char *name, void **data,
                       size_t *len)
{
    if (ctx == NULL || data == NULL || len == NULL)
        return ARGUS_EINVAL;
    const char *h = argus_rt_ctx_input_hash(ctx, task, name);
    if (h == NULL) {
        argus_rt_ctx_fail(ctx, "it reads output '%s' of task '%s', which is not one of its "
                               "dependencies' outputs",
                          name ? name : "(null)", task ? task : "(null)");
        return ARGUS_RT_ENODEP;
    }
    char why[RT_REASON];
    int rc = argus_ws_get(ctx->rt->ws, h, data, len, why, sizeof why);
    if (rc != 0)
        argus_rt_ctx_fail(ctx, "input '%s' of task '%s': %s", name, task, why);
    return rc;
}

int argus_rt_ctx_input_path(argus_rt_ctx *ctx, const char *task, const char *name, char *buf,
                            size_t buflen)
{
    if (ctx == NULL || buf == NULL)
        return ARGUS_EINVAL;
    const char *h = argus_rt_ctx_input_hash(ctx, task, name);
    if (h == NULL) {
        argus_rt_ctx_fail(ctx, "it reads output '%s' of task '%s', which is not one of its "
                               "dependencies' outputs",
                          name ? name : "(null)", task ? task : "(null)");
        return ARGUS_RT_ENODEP;
    }
    return argus_ws_object_path(ctx->rt->ws, h, buf, buflen);
}

/* Stores an output from bytes (path NULL) or from a file. */
static int ctx_store(argus_rt_ctx *ctx, const char *name, const void *data, size_t len,
                     const char *path)
{
    if (ctx == NULL || name == NULL)
        return ARGUS_EINVAL;
    rt_task *t = ctx->t;
    for (size_t i = 0; i < t->noutputs; i++) {
        if (strcmp(t->outputs[i], name) != 0)
            continue;
        char why[RT_REASON];
        int rc = path ? argus_ws_put_file(ctx->rt->ws, path, t->out_hash[i], why, sizeof why)
                      : argus_ws_put(ctx->rt->ws, data, len, t->out_hash[i], why, sizeof why);
        if (rc != 0) {
            argus_rt_ctx_fail(ctx, "output '%s': %s", name, why);
            return rc;
        }
        t->out_set[i] = 1;
        return 0;
    }
    argus_rt_ctx_fail(ctx, "it wrote output '%s', which it does not declare", name);
    return ARGUS_EINVAL;
}

int argus_rt_ctx_output(argus_rt_ctx *ctx, const char *name, const void *data, size_t len)
{
    return ctx_store(ctx, name, data, len, NULL);
}

int argus_rt_ctx_output_file(argus_rt_ctx *ctx, const char *name, const char *path)
{
    if (path == NULL)
        return ARGUS_EINVAL;
    return ctx_store(ctx, name, NULL, 0, path);
}

int argus_rt_ctx_add(argus_rt_ctx *ctx, const argus_rt_task_desc *d)
{
    if (ctx == NULL)
        return ARGUS_EINVAL;
    char why[RT_REASON];
    pthread_mutex_lock(&ctx->rt->mu);
    int rc = add_locked(ctx->rt, d, why, sizeof why);
    pthread_mutex_unlock(&ctx->rt->mu);
    if (rc != 0)
        argus_rt_ctx_fail(ctx, "adding a task: %s", why);
    return rc;
}

int argus_rt_ctx_expired(const argus_rt_ctx *ctx)
{
    if (ctx == NULL)
        return 0;
    const rt_task *t = ctx->t;
    return atomic_load(&ctx->t->expired) || (t->deadline_ns > 0 && now_ns() > t->deadline_ns);
}

int argus_rt_ctx_fail(argus_rt_ctx *ctx, const char *fmt, ...)
{
    if (ctx == NULL)
        return ARGUS_EINVAL;
    /* The first reason is the cause; later ones are its consequences. */
    if (!ctx->failed) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(ctx->reason, sizeof ctx->reason, fmt, ap);
        va_end(ap);
        if (n < 0)
            ctx->reason[0] = '\0';
        ctx->failed = 1;
    }
    return ARGUS_RT_ETASK;
}
