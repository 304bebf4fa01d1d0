/*
 * Argus's runtime: executes a task graph against a workspace (issue 13,
 * docs/argus-workspace.md).
 *
 * A task names the tasks whose outputs it needs (they must have been added
 * before it, so a graph cannot have a cycle), the exclusivity classes it
 * holds while it runs ("gpu:0", "cupti-exclusive": two tasks sharing a
 * class never overlap), a timeout, and either
 *   - an exec callback, run on a pool of CPU threads (compiles, parsing,
 *     synthesis, control tasks), or
 *   - an argv, run as an isolated worker process (GPU collections): fork
 *     and exec, its own process group, CUDA_VISIBLE_DEVICES set to its
 *     device, killed (the whole group) when its timeout passes.
 * A task is dispatched as soon as every task it depends on has finished
 * and no running task holds one of its classes. Before running it, the
 * runtime computes its task key from its kind, configuration, program
 * version, scope, environment and the hashes of its inputs (the outputs of
 * the tasks it depends on); a key the workspace already holds is reused,
 * not run. A task that fails, crashes or times out fails only the tasks
 * below it; the rest of the graph finishes and is kept, so running the
 * same graph again on the same workspace runs only the failed branch.
 *
 * A running callback may add tasks (argus_rt_ctx_add): a control task
 * materialises the branches it discovers. Control tasks (ARGUS_RT_ALWAYS)
 * run even when their key is in the workspace, because the tasks they add
 * exist only in memory; what those tasks make is still found by key.
 *
 * Worker argv elements may name files, substituted before exec:
 *   {out:NAME}       where the worker writes output NAME (stored when it
 *                    exits with status 0; a declared output it did not
 *                    write fails the task)
 *   {in:TASK/NAME}   the workspace object of output NAME of task TASK (a
 *                    dependency); the worker reads it and must not write it
 * A callback reads the same with argus_rt_ctx_input (or, to hand it to a
 * program such as nvcc, argus_rt_ctx_input_path). A worker's stdout and
 * stderr go to a log file; a failure's reason quotes its last line and
 * names the whole log, kept as an object.
 *
 * The key of a CPU task cannot see its callback's code: its config must
 * name what the callback computes (and its version), or two callbacks
 * with one kind, config and inputs would share results.
 *
 * Functions return 0 or a negative ARGUS_RT_E*, ARGUS_WS_E* or ARGUS_E*
 * code (argus_ws_strerror names them all).
 */
#ifndef ARGUS_RT_H
#define ARGUS_RT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "workspace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARGUS_RT_ERRORS(X)                                                                \
    X(ARGUS_RT_EFAILED, -120, "some tasks failed; the tasks below them were not run, "   \
                              "the rest finished and is kept in the workspace")           \
    X(ARGUS_RT_EDUP, -121, "a task with that id exists already")                          \
    X(ARGUS_RT_ENODEP, -122, "a task depends on a task that does not exist (add it first)") \
    X(ARGUS_RT_ETIMEOUT, -123, "the task ran past its timeout")                           \
    X(ARGUS_RT_EWORKER, -124, "the worker process crashed or exited with a non-zero status") \
    X(ARGUS_RT_ENOOUTPUT, -125, "the task did not write an output it declares")           \
    X(ARGUS_RT_ESTATE, -126, "not allowed in the runtime's current state")               \
    X(ARGUS_RT_ETASK, -127, "the task's body reported a failure")                        \
    X(ARGUS_RT_EOUTPUT, -128, "a worker's output failed the task's check")

enum argus_rt_error {
#define ARGUS_RT_X_ENUM(name, value, msg) name = value,
    ARGUS_RT_ERRORS(ARGUS_RT_X_ENUM)
#undef ARGUS_RT_X_ENUM
};

/* Limits of one task's description. */
#define ARGUS_RT_MAX_EXCL 4
#define ARGUS_RT_MAX_OUTPUTS 16
/* Dependencies are not limited (a synthesis over 8 probes x many
 * iterations has hundreds). */

typedef struct argus_rt argus_rt;
typedef struct argus_rt_ctx argus_rt_ctx;

/* A CPU task's body: reads inputs and writes outputs through ctx; returns
 * 0, or non-zero after argus_rt_ctx_fail said why. */
typedef int (*argus_rt_exec_fn)(argus_rt_ctx *ctx, void *user);

/* Task flags. */
#define ARGUS_RT_ALWAYS 1u /* run even when the key is in the workspace (control tasks) */
/* A worker with a device holds the class "gpu:<device>" (so that two
 * collections never share a GPU) unless this flag says it may. */
#define ARGUS_RT_SHARE_DEVICE 2u
/* The task joins its inputs' evidence: before it runs, the manifests of the
 * tasks it depends on go through argus_ws_join_check (same program
 * version, environment and scope; with ARGUS_RT_JOIN_ANY_SCOPE scopes may
 * differ), and an incompatible set fails the task with ARGUS_WS_EINCOMPAT
 * and the reason, instead of being joined silently. */
#define ARGUS_RT_JOIN 4u
#define ARGUS_RT_JOIN_ANY_SCOPE 8u
/* The task runs once every dependency has finished, also when some failed
 * or were skipped (a synthesis that keeps what the other branches gave
 * and marks the rest missing): a missing input has no hash
 * (argus_rt_ctx_input_hash is NULL, argus_rt_ctx_dep tells why), the join
 * check covers the inputs that are there, and its key differs from the
 * key with every input present, so the run after the failed branch is
 * fixed runs it again. */
#define ARGUS_RT_PARTIAL 16u

typedef struct argus_rt_task_desc {
    const char *id;   /* unique, e.g. "collect.pcsamp.it4" */
    const char *kind; /* "transform", "collect", "synthesize", "control" (part of the key) */
    const char *const *deps; /* ids of the tasks whose outputs this one reads */
    size_t ndeps;
    const char *excl[ARGUS_RT_MAX_EXCL]; /* exclusivity classes, NULL-terminated */
    double timeout_s;                    /* 0: none */
    unsigned flags;
    /* Exactly one of exec and argv. */
    argus_rt_exec_fn exec;
    void *user;
    const char *const *argv; /* NULL-terminated; argv[0] is searched in PATH */
    /* A worker's outputs checked before they are stored (the run's
     * evidence is what the plan asked for): called with `user`, the output
     * name and the file the worker wrote; non-zero (with why) fails the
     * task with ARGUS_RT_EOUTPUT, so nothing is stored and the next run
     * runs it again. Called from the scheduler: keep it quick. NULL: none. */
    int (*check)(void *user, const char *output, const char *path, char *why, size_t whylen);
    /* A worker's GPU ("0", or a UUID "GPU-..."): CUDA_VISIBLE_DEVICES is set
     * to it and it holds the class "gpu:<device>". NULL: neither. */
    const char *device;
    const char *const *outputs; /* output names */
    size_t noutputs;
    /* The rest of the task key (argus_ws_task). A worker's argv template
     * is part of the key as well. */
    const char *config;
    const char *program;
    const char *scope;
    const argus_ws_env *env; /* NULL for a task that does not touch the GPU */
} argus_rt_task_desc;

typedef enum argus_rt_state {
    ARGUS_RT_PENDING, /* waiting for inputs or for an exclusivity class */
    ARGUS_RT_RUNNING,
    ARGUS_RT_DONE,    /* ran and its outputs are stored */
    ARGUS_RT_REUSED,  /* its key was in the workspace; not run */
    ARGUS_RT_FAILED,  /* failed, crashed or timed out */
    ARGUS_RT_SKIPPED, /* a task it depends on failed */
} argus_rt_state;

const char *argus_rt_state_name(argus_rt_state s);

/* What the runtime tells a progress callback (and keeps per task). */
typedef struct argus_rt_status {
    const char *id;
    const char *kind;
    argus_rt_state state;
    int err;            /* 0, or the code of the failure */
    const char *reason; /* a sentence when FAILED or SKIPPED, else "" */
    char key[ARGUS_HASH_HEX]; /* "" until its inputs were known */
    int64_t start_ns, end_ns; /* CLOCK_MONOTONIC; 0 when it did not run */
    unsigned runs;            /* times its body ran in this runtime */
} argus_rt_status;

typedef void (*argus_rt_progress_fn)(const argus_rt_status *st, void *user);

typedef struct argus_rt_opts {
    unsigned cpu_threads;          /* 0: 2 */
    /* Called on every state change, from any of the runtime's threads and
     * with its lock held: it may print or copy, but not call argus_rt_*. */
    argus_rt_progress_fn progress;
    void *progress_user;
} argus_rt_opts;

/* A runtime on an open workspace (kept open by the caller). */
int argus_rt_new(argus_ws *ws, const argus_rt_opts *opts, argus_rt **out);
void argus_rt_free(argus_rt *rt);

/* Adds a task (its strings are copied). ARGUS_RT_EDUP, ARGUS_RT_ENODEP,
 * ARGUS_EINVAL (no id or kind, both or neither of exec and argv, too many
 * classes or outputs) with msg naming the task and field. */
int argus_rt_add(argus_rt *rt, const argus_rt_task_desc *d, char *msg, size_t msglen);

/* Runs until every task has finished, failed or been skipped. Returns 0,
 * or ARGUS_RT_EFAILED when some task did not succeed (see argus_rt_get). */
int argus_rt_run(argus_rt *rt);

/* The status of a task by id (strings valid until argus_rt_free), or
 * ARGUS_WS_ENOENT. */
int argus_rt_get(const argus_rt *rt, const char *id, argus_rt_status *st);
size_t argus_rt_count(const argus_rt *rt);
/* The i-th task, in the order added. */
int argus_rt_get_at(const argus_rt *rt, size_t i, argus_rt_status *st);
/* The object hash of a finished task's output, or NULL. */
const char *argus_rt_output(const argus_rt *rt, const char *id, const char *name);
/* One line per task: id, state, time, reason. */
void argus_rt_print(const argus_rt *rt, FILE *f);
/* A progress callback that writes one line per state change to the FILE *
 * given as its user pointer (stderr when NULL): "argus rt: TASK STATE ...". */
void argus_rt_progress_print(const argus_rt_status *st, void *file);

/* ---- inside a callback ------------------------------------------------ */

const char *argus_rt_ctx_id(const argus_rt_ctx *ctx);
/* Reads output `name` of dependency `task` (checked against its hash; a
 * malloc'd buffer the caller frees). */
int argus_rt_ctx_input(argus_rt_ctx *ctx, const char *task, const char *name, void **data,
                       size_t *len);
/* The object hash of a dependency's output, or NULL. */
const char *argus_rt_ctx_input_hash(const argus_rt_ctx *ctx, const char *task,
                                    const char *name);
/* The status of dependency `task` (its state, and the reason when it
 * failed or was skipped; strings valid while the callback runs), or
 * ARGUS_RT_ENODEP when it is not a dependency. */
int argus_rt_ctx_dep(const argus_rt_ctx *ctx, const char *task, argus_rt_status *st);
/* The path of a dependency's output object (0, ARGUS_RT_ENODEP, or
 * ARGUS_ERANGE when buf is too small), for a program the callback runs. */
int argus_rt_ctx_input_path(argus_rt_ctx *ctx, const char *task, const char *name, char *buf,
                            size_t buflen);
/* Stores output `name` (one of the task's declared outputs). */
int argus_rt_ctx_output(argus_rt_ctx *ctx, const char *name, const void *data, size_t len);
/* The same from a file the callback had a program write (a cubin from
 * nvcc); the file is copied into the workspace and may be removed. */
int argus_rt_ctx_output_file(argus_rt_ctx *ctx, const char *name, const char *path);
/* Adds a task while running (a control task's branch); its deps may name
 * this task, which it then waits for. */
int argus_rt_ctx_add(argus_rt_ctx *ctx, const argus_rt_task_desc *d);
/* Whether the task's timeout has passed: a CPU task cannot be killed, so
 * a long one polls this and returns; its result is discarded anyway. */
int argus_rt_ctx_expired(const argus_rt_ctx *ctx);
/* Records why the task fails; returns ARGUS_RT_ETASK, for `return`. */
int argus_rt_ctx_fail(argus_rt_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_RT_H */
