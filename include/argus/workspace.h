/*
 * Argus's versioned, content-addressed workspace (issue 13, docs/argus-workspace.md).
 *
 * Every artifact a measurement plan makes (a program variant's IR or
 * binary, discovered values, a trace, a PC-to-region map, a profiler's
 * output) is an object named by the SHA-256 of its bytes. A manifest binds
 * the objects a task made to everything that made them: the task kind,
 * the recipe/backend configuration, the input objects' hashes, the program
 * version, the scope coordinates, the environment that matters (GPU name,
 * driver, CUDA version) and Argus's own workspace format version. The
 * SHA-256 of all of these is the task key; looking a key up returns the
 * earlier task's outputs, so a later query (or a rerun after a failure)
 * reuses them instead of measuring again.
 *
 *   dir/objects/ab/abcdef...   the bytes of an object (0600)
 *   dir/tasks/12/1234ab....json the manifest of a task key (0600)
 *   dir/versions/cd/cdef....json a program version: parent, artifact, label
 *   dir/tmp/                   files being written (temp + fsync + rename)
 *
 * Safety: the directory must be the user's own (a symlink, a FIFO, a file,
 * a directory owned by someone else or writable by group/others, or one
 * under a world-writable parent without the sticky bit is refused); every
 * file is opened relative to it with O_NOFOLLOW. A read recomputes the
 * hash: a truncated or altered object is ARGUS_WS_ECORRUPT (named in the
 * message) and a caller treats it as missing, so the task that made it is
 * run again.
 *
 * Functions return 0 or a negative code: ARGUS_WS_E* below, or ARGUS_E*
 * (include/argus/argus.h); argus_ws_strerror names both. Those taking
 * `msg` write a sentence naming the file, the field and what to do. All
 * functions may be called from several threads on one argus_ws.
 */
#ifndef ARGUS_WORKSPACE_H
#define ARGUS_WORKSPACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "argus.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The workspace's codes sit at -100 and below, apart from argus.h's. */
#define ARGUS_WS_ERRORS(X)                                                              \
    X(ARGUS_WS_ENOENT, -100, "not in the workspace (no such object, task key or version)") \
    X(ARGUS_WS_ECORRUPT, -101,                                                          \
      "a workspace object does not match its hash (truncated or altered); it is "       \
      "treated as missing and the task that made it runs again")                        \
    X(ARGUS_WS_EMANIFEST, -102, "a workspace manifest or version file is not valid")    \
    X(ARGUS_WS_EINCOMPAT, -103,                                                         \
      "evidence of incompatible program versions, environments or scopes cannot be "   \
      "joined")                                                                         \
    X(ARGUS_WS_EUNSAFE, -104,                                                           \
      "the workspace directory is not safe to use (a symlink, not a directory, not "    \
      "yours, writable by others, or under a world-writable parent without the sticky " \
      "bit)")

enum argus_ws_error {
#define ARGUS_WS_X_ENUM(name, value, msg) name = value,
    ARGUS_WS_ERRORS(ARGUS_WS_X_ENUM)
#undef ARGUS_WS_X_ENUM
};

/* A static sentence for an ARGUS_WS_E*, ARGUS_RT_E* or ARGUS_E* code. */
const char *argus_ws_strerror(int err);

/* A SHA-256 as 64 lowercase hex digits and a NUL. */
#define ARGUS_HASH_HEX 65
/* The workspace format version; it is part of every task key, so that a
 * workspace written by an Argus with another format is never reused. */
#define ARGUS_WS_FORMAT 1
#define ARGUS_WS_DEFAULT_DIR ".argus-ws"

/* SHA-256 (FIPS 180-4), streaming. */
typedef struct argus_sha256 {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t nbuf;
} argus_sha256;
void argus_sha256_init(argus_sha256 *s);
void argus_sha256_update(argus_sha256 *s, const void *data, size_t len);
void argus_sha256_final(argus_sha256 *s, unsigned char out[32]);
/* The hash of len bytes as hex. */
void argus_sha256_hex(const void *data, size_t len, char hex[ARGUS_HASH_HEX]);

typedef struct argus_ws argus_ws;

/* Opens (creating it, mode 0700, when create is set and it is missing)
 * the workspace at dir (NULL: ARGUS_WS_DEFAULT_DIR). */
int argus_ws_open(const char *dir, int create, argus_ws **out, char *msg, size_t msglen);
void argus_ws_close(argus_ws *ws);
const char *argus_ws_path(const argus_ws *ws);

/* ---- objects ---------------------------------------------------------- */

/* Stores bytes; hash gets their SHA-256. Storing bytes that are there
 * already writes nothing (an object there that fails its hash is
 * replaced). */
int argus_ws_put(argus_ws *ws, const void *data, size_t len, char hash[ARGUS_HASH_HEX],
                 char *msg, size_t msglen);
/* Stores the contents of a regular file (not following a symlink). */
int argus_ws_put_file(argus_ws *ws, const char *path, char hash[ARGUS_HASH_HEX], char *msg,
                      size_t msglen);
/* Reads an object into a malloc'd buffer (*data, NUL-terminated beyond len;
 * the caller frees it), checking its hash: ARGUS_WS_ENOENT, or
 * ARGUS_WS_ECORRUPT naming the object and the hash its bytes have. */
int argus_ws_get(argus_ws *ws, const char *hash, void **data, size_t *len, char *msg,
                 size_t msglen);
/* Checks an object without keeping its bytes (*len: its size). */
int argus_ws_verify(argus_ws *ws, const char *hash, size_t *len, char *msg, size_t msglen);
/* The object's path, for a worker process that reads it (0, or
 * ARGUS_ERANGE when buf is too small; the object need not exist). */
int argus_ws_object_path(const argus_ws *ws, const char *hash, char *buf, size_t buflen);

/* ---- tasks: keys and manifests --------------------------------------- */

/* The environment a measurement depends on. A CPU-only task (a parse, a
 * synthesis) passes NULL: its result does not depend on the GPU. */
typedef struct argus_ws_env {
    const char *gpu;    /* "NVIDIA H200" */
    const char *driver; /* "580.159.04" */
    const char *cuda;   /* "13.0" */
} argus_ws_env;

/* What made a task's outputs; every field is part of the task key. */
typedef struct argus_ws_task {
    const char *kind;    /* "transform", "collect", "synthesize", "control", or finer */
    const char *config;  /* the recipe/backend configuration, canonical text (NULL: "") */
    const char *program; /* the program version ID (argus_ws_fork), NULL when none */
    const char *scope;   /* scope coordinates, canonical text, e.g. "iter=4:8" (NULL: "") */
    const argus_ws_env *env;   /* NULL: the task does not depend on the GPU */
    const char *const *inputs; /* the input objects' hashes, in the task's order */
    size_t ninputs;
} argus_ws_task;

/* An output: a name the task gives it ("trace", "pcmap") and its object. */
typedef struct argus_ws_output {
    const char *name;
    const char *hash;
} argus_ws_output;

/* The task key: SHA-256 over a length-prefixed encoding of the format
 * version and every field of t, so that no two different tasks share one.
 * ARGUS_EINVAL when kind is missing or an input is not a hash. */
int argus_ws_task_key(const argus_ws_task *t, char key[ARGUS_HASH_HEX], char *msg,
                      size_t msglen);

/* Records that task t made outputs (objects already stored): writes the
 * manifest under its key (returned in key). */
int argus_ws_record(argus_ws *ws, const argus_ws_task *t, const argus_ws_output *outs,
                    size_t nouts, char key[ARGUS_HASH_HEX], char *msg, size_t msglen);

/* A manifest read back. Strings belong to the manifest. */
typedef struct argus_ws_manifest {
    char key[ARGUS_HASH_HEX];
    char *kind, *config, *program, *scope;
    int has_env;
    char *gpu, *driver, *cuda;
    char **inputs;
    size_t ninputs;
    argus_ws_output *outputs; /* name and hash point into the manifest */
    size_t noutputs;
    int64_t created_unix_s;
} argus_ws_manifest;

/* Finds the manifest of a task key and checks it (its fields hash to its
 * key) and every output object (present, hash matches). ARGUS_WS_ENOENT
 * when there is none; ARGUS_WS_EMANIFEST for a manifest that is garbage;
 * ARGUS_WS_ECORRUPT when an output is missing or damaged. Any failure
 * means "run the task": nothing stored is trusted unchecked. */
int argus_ws_lookup(argus_ws *ws, const char *key, argus_ws_manifest **out, char *msg,
                    size_t msglen);
void argus_ws_manifest_free(argus_ws_manifest *m);
/* The object hash of an output by name, or NULL. */
const char *argus_ws_manifest_output(const argus_ws_manifest *m, const char *name);

/* ---- joining evidence ------------------------------------------------- */

/* What a join may differ in (default 0: nothing). */
#define ARGUS_WS_JOIN_ANY_SCOPE 1u /* scopes may differ (a synthesis that keys by scope itself) */

/* Checks that n manifests' evidence may be joined: the same program
 * version, the same environment where any has one (GPU, driver, CUDA),
 * and the same scope unless flags allow. Returns 0 or ARGUS_WS_EINCOMPAT
 * with a message naming the two task keys, the field and both values. */
int argus_ws_join_check(const argus_ws_manifest *const *ms, size_t n, unsigned flags,
                        char *msg, size_t msglen);

/* ---- program versions ------------------------------------------------- */

/* A node of the version tree: a program artifact (an object), the version
 * it was forked from (NULL for a root) and a label for people. */
typedef struct argus_ws_version {
    char id[ARGUS_HASH_HEX];
    char parent[ARGUS_HASH_HEX]; /* "" for a root */
    char artifact[ARGUS_HASH_HEX];
    char *label;
    int64_t created_unix_s;
} argus_ws_version;

/* Adds a version whose program is the object `artifact`, forked from
 * `parent` (NULL or "": a root). Its ID is the SHA-256 of parent, artifact
 * and label, so forking the same program twice gives the same version.
 * ARGUS_WS_ENOENT when the parent version or the artifact is missing. */
int argus_ws_fork(argus_ws *ws, const char *parent, const char *artifact, const char *label,
                  char id[ARGUS_HASH_HEX], char *msg, size_t msglen);
int argus_ws_version_get(argus_ws *ws, const char *id, argus_ws_version *out, char *msg,
                         size_t msglen);
void argus_ws_version_clear(argus_ws_version *v);
/* Whether version `anc` is `id` or one of its ancestors (1/0, or < 0). */
int argus_ws_version_is_ancestor(argus_ws *ws, const char *anc, const char *id, char *msg,
                                 size_t msglen);

/* ---- listing and collection ------------------------------------------ */

typedef enum argus_ws_entry_type {
    ARGUS_WS_ENTRY_OBJECT,
    ARGUS_WS_ENTRY_TASK,
    ARGUS_WS_ENTRY_VERSION,
} argus_ws_entry_type;

/* Calls fn for each entry of a type (its hash or key, and its file size in
 * bytes); fn returning non-zero stops the walk and is returned. */
typedef int (*argus_ws_each_fn)(const char *id, uint64_t bytes, void *user);
int argus_ws_each(argus_ws *ws, argus_ws_entry_type type, argus_ws_each_fn fn, void *user,
                  char *msg, size_t msglen);

typedef struct argus_ws_gc_stats {
    size_t objects_kept, objects_removed;
    uint64_t bytes_kept, bytes_removed;
    size_t tasks_removed; /* manifests that were garbage or lost an output */
    size_t tmp_removed;   /* files left in tmp/ by a writer that died */
} argus_ws_gc_stats;

/* Removes objects no manifest or version refers to, manifests that are
 * garbage or whose outputs are gone, and leftover temporary files (only
 * those older than a minute, so that a writer at work keeps its file).
 * With dry_run, counts without removing. */
int argus_ws_gc(argus_ws *ws, int dry_run, argus_ws_gc_stats *st, char *msg, size_t msglen);

/* Writes a manifest as text (for `argus ws show`). */
int argus_ws_manifest_print(const argus_ws_manifest *m, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_WORKSPACE_H */
