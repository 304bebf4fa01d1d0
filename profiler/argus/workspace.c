/*
 * The versioned, content-addressed workspace (include/argus/workspace.h,
 * docs/argus-workspace.md).
 *
 * Why files named by hash and not a database: the artifacts are opaque
 * blobs from a few bytes (a discovered value) to many megabytes (a trace),
 * written by threads and worker processes at once. A content address makes
 * a concurrent write of the same bytes harmless (both renames install the
 * same file), makes every read checkable, and lets a person or a worker
 * process read an object with no library at all. What binds the blobs to
 * what made them is the manifest, itself checkable: its fields hash to its
 * file name.
 *
 * Every path is opened relative to the workspace's directory descriptor
 * with O_NOFOLLOW, and the directory itself was checked to be the user's
 * own and writable by nobody else, so no other user can plant a symlink or
 * swap a file between our check and our use.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "argus/rt.h"
#include "argus/workspace.h"
#include "argus_internal.h"

/* A manifest or version file larger than this is garbage, not a manifest. */
#define WS_MAX_META (16L << 20)
/* Longest chain of versions walked before the tree is declared cyclic. */
#define WS_MAX_VERSION_DEPTH 100000
/* A temporary file older than this is a dead writer's (argus_ws_gc). */
#define WS_TMP_STALE_S 60

struct argus_ws {
    char *path;
    int dirfd;
    atomic_uint seq;
};

static const char *const ws_sub[] = {"objects", "tasks", "versions", "tmp"};

const char *argus_ws_strerror(int err)
{
    switch (err) {
#define ARGUS_WS_X_STR(name, value, m) \
    case value:                        \
        return m;
        ARGUS_WS_ERRORS(ARGUS_WS_X_STR)
        ARGUS_RT_ERRORS(ARGUS_WS_X_STR)
#undef ARGUS_WS_X_STR
    default:
        return argus_strerror(err);
    }
}

static int is_hash(const char *h)
{
    if (h == NULL)
        return 0;
    for (int i = 0; i < 64; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
            return 0;
    return h[64] == '\0';
}

static const char *what_is(mode_t m)
{
    if (S_ISLNK(m))
        return "a symbolic link";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "a device";
    if (S_ISREG(m))
        return "a regular file";
    if (S_ISDIR(m))
        return "a directory";
    return "not a regular file";
}

/* ---- opening ---------------------------------------------------------- */

/* The parent of the workspace must not let another user rename or replace
 * the workspace: a world-writable parent is allowed only with the sticky
 * bit (as /tmp has), under which only the owner may rename an entry. */
static int check_parent(const char *dir, char *msg, size_t msglen)
{
    size_t n = strlen(dir);
    char *p = malloc(n + 2);
    if (p == NULL)
        return ARGUS_ENOMEM;
    memcpy(p, dir, n + 1);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    char *slash = strrchr(p, '/');
    if (slash == NULL) {
        p[0] = '.';
        p[1] = '\0';
    } else if (slash == p) {
        p[1] = '\0';
    } else {
        *slash = '\0';
    }
    struct stat st;
    int rc = 0;
    if (stat(p, &st) != 0)
        rc = argus__fail(ARGUS_EIO, msg, msglen, "%s: the workspace's parent %s: %s", dir, p,
                         strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        rc = argus__fail(ARGUS_WS_EUNSAFE, msg, msglen,
                         "%s: the workspace's parent %s is %s, not a directory", dir, p,
                         what_is(st.st_mode));
    else if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
        rc = argus__fail(ARGUS_WS_EUNSAFE, msg, msglen,
                         "%s: the workspace's parent %s is writable by everyone and has no "
                         "sticky bit, so another user could replace the workspace; put it "
                         "in a directory of your own (--ws DIR)",
                         dir, p);
    free(p);
    return rc;
}

int argus_ws_open(const char *dir, int create, argus_ws **out, char *msg, size_t msglen)
{
    if (out == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "argus_ws_open: no output pointer");
    *out = NULL;
    if (dir == NULL || dir[0] == '\0')
        dir = ARGUS_WS_DEFAULT_DIR;
    int rc = check_parent(dir, msg, msglen);
    if (rc != 0)
        return rc;
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno != ENOENT || !create)
            return argus__fail(errno == ENOENT ? ARGUS_WS_ENOENT : ARGUS_EIO, msg, msglen,
                               "%s: %s%s", dir, strerror(errno),
                               errno == ENOENT ? " (a query creates the workspace)" : "");
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot create the workspace: %s",
                               dir, strerror(errno));
    } else if (!S_ISDIR(st.st_mode)) {
        return argus__fail(ARGUS_WS_EUNSAFE, msg, msglen,
                           "%s is %s, not a workspace directory; remove it or name another "
                           "directory (--ws DIR)",
                           dir, what_is(st.st_mode));
    }
    /* O_NONBLOCK: should the name have been swapped for a FIFO since the
     * lstat, opening it does not block (O_DIRECTORY then refuses it). */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return argus__fail(errno == ELOOP || errno == ENOTDIR ? ARGUS_WS_EUNSAFE : ARGUS_EIO,
                           msg, msglen, "%s: cannot open the workspace: %s", dir,
                           errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
        close(fd);
        return argus__fail(ARGUS_WS_EUNSAFE, msg, msglen,
                           "%s: the workspace must be owned by you (uid %u; it is uid %u) and "
                           "writable by nobody else (mode %03o); chmod 700 it or choose "
                           "another directory",
                           dir, (unsigned)geteuid(), (unsigned)st.st_uid,
                           (unsigned)(st.st_mode & 0777));
    }
    for (size_t i = 0; i < sizeof ws_sub / sizeof ws_sub[0]; i++) {
        if (mkdirat(fd, ws_sub[i], 0700) != 0 && errno != EEXIST) {
            rc = argus__fail(ARGUS_EIO, msg, msglen, "%s/%s: cannot create: %s", dir,
                             ws_sub[i], strerror(errno));
            close(fd);
            return rc;
        }
        struct stat ss;
        if (fstatat(fd, ws_sub[i], &ss, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(ss.st_mode)) {
            close(fd);
            return argus__fail(ARGUS_WS_EUNSAFE, msg, msglen,
                               "%s/%s is not a directory; this is not an Argus workspace", dir,
                               ws_sub[i]);
        }
    }
    argus_ws *ws = calloc(1, sizeof *ws);
    if (ws == NULL || (ws->path = strdup(dir)) == NULL) {
        free(ws);
        close(fd);
        return ARGUS_ENOMEM;
    }
    ws->dirfd = fd;
    atomic_init(&ws->seq, 0);
    *out = ws;
    return 0;
}

void argus_ws_close(argus_ws *ws)
{
    if (ws == NULL)
        return;
    close(ws->dirfd);
    free(ws->path);
    free(ws);
}

const char *argus_ws_path(const argus_ws *ws)
{
    return ws ? ws->path : NULL;
}

/* ---- files ------------------------------------------------------------ */

/* "sub/ab/name[suffix]" for an ID. */
static int rel_path(char *buf, size_t len, const char *sub, const char *id, const char *suffix)
{
    int n = snprintf(buf, len, "%s/%.2s/%s%s", sub, id, id, suffix);
    return n < 0 || (size_t)n >= len ? ARGUS_ERANGE : 0;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Writes data to rel atomically: a temporary file in tmp/ (0600, O_EXCL),
 * written, fsync'd, renamed over rel, and the directory fsync'd, so that a
 * reader sees the old file or the whole new one, after a crash too. */
static int write_atomic(argus_ws *ws, const char *rel, const void *data, size_t len, char *msg,
                        size_t msglen)
{
    char tmp[96], dir[128];
    unsigned seq = atomic_fetch_add(&ws->seq, 1);
    int n = snprintf(tmp, sizeof tmp, "tmp/%ld.%u.%lx", (long)getpid(), seq,
                     (unsigned long)pthread_self());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return ARGUS_ERANGE;
    n = snprintf(dir, sizeof dir, "%s", rel);
    if (n < 0 || (size_t)n >= sizeof dir)
        return ARGUS_ERANGE;
    *strrchr(dir, '/') = '\0';
    if (mkdirat(ws->dirfd, dir, 0700) != 0 && errno != EEXIST)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s/%s: cannot create: %s", ws->path, dir,
                           strerror(errno));
    int fd = openat(ws->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s/%s: cannot create: %s", ws->path, tmp,
                           strerror(errno));
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlinkat(ws->dirfd, tmp, 0);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s/%s: cannot write %zu bytes: %s",
                           ws->path, tmp, len, strerror(e));
    }
    close(fd);
    if (renameat(ws->dirfd, tmp, ws->dirfd, rel) != 0) {
        int e = errno;
        unlinkat(ws->dirfd, tmp, 0);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s/%s: cannot install: %s", ws->path, rel,
                           strerror(e));
    }
    int dfd = openat(ws->dirfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd >= 0) {
        /* Best effort: the rename is durable once its directory is. */
        (void)fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* Opens rel for reading: a regular file only, never through a symlink. */
static int open_rel(argus_ws *ws, const char *rel, struct stat *st, char *msg, size_t msglen)
{
    int fd = openat(ws->dirfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return argus__fail(ARGUS_WS_ENOENT, msg, msglen, "%s/%s: not in the workspace",
                               ws->path, rel);
        return argus__fail(errno == ELOOP ? ARGUS_WS_EUNSAFE : ARGUS_EIO, msg, msglen,
                           "%s/%s: %s", ws->path, rel,
                           errno == ELOOP ? "is a symbolic link" : strerror(errno));
    }
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s/%s: %s", ws->path, rel, strerror(e));
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return argus__fail(ARGUS_WS_EUNSAFE, msg, msglen, "%s/%s is %s, not a regular file",
                           ws->path, rel, what_is(st->st_mode));
    }
    return fd;
}

static int read_fd(int fd, size_t size, void **data, size_t *len)
{
    char *b = malloc(size + 1);
    if (b == NULL)
        return ARGUS_ENOMEM;
    size_t n = 0;
    /* Read to the end, not to the size fstat said: a file that grew is read
     * whole so that its hash is checked on all of it. */
    size_t cap = size + 1;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(b, cap * 2);
            if (nb == NULL) {
                free(b);
                return ARGUS_ENOMEM;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(b);
            return ARGUS_EIO;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n == cap) {
        char *nb = realloc(b, cap + 1);
        if (nb == NULL) {
            free(b);
            return ARGUS_ENOMEM;
        }
        b = nb;
    }
    b[n] = '\0';
    *data = b;
    *len = n;
    return 0;
}

static int read_rel(argus_ws *ws, const char *rel, long max, void **data, size_t *len,
                    char *msg, size_t msglen)
{
    struct stat st;
    int fd = open_rel(ws, rel, &st, msg, msglen);
    if (fd < 0)
        return fd;
    if (max > 0 && st.st_size > max) {
        close(fd);
        return argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                           "%s/%s: %lld bytes, more than a manifest can be (%ld); the file "
                           "is not a manifest, remove it (argus ws gc does)",
                           ws->path, rel, (long long)st.st_size, max);
    }
    int rc = read_fd(fd, (size_t)st.st_size, data, len);
    close(fd);
    if (rc != 0)
        return argus__fail(rc, msg, msglen, "%s/%s: cannot read: %s", ws->path, rel,
                           rc == ARGUS_ENOMEM ? "out of memory" : strerror(errno));
    return 0;
}

/* ---- objects ---------------------------------------------------------- */

int argus_ws_object_path(const argus_ws *ws, const char *hash, char *buf, size_t buflen)
{
    if (ws == NULL || !is_hash(hash) || buf == NULL)
        return ARGUS_EINVAL;
    int n = snprintf(buf, buflen, "%s/objects/%.2s/%s", ws->path, hash, hash);
    return n < 0 || (size_t)n >= buflen ? ARGUS_ERANGE : 0;
}

static void hex_of(const unsigned char d[32], char hex[ARGUS_HASH_HEX])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = '\0';
}

int argus_ws_verify(argus_ws *ws, const char *hash, size_t *len, char *msg, size_t msglen)
{
    if (ws == NULL || !is_hash(hash))
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "'%s' is not an object hash (64 lowercase hex digits)",
                           hash ? hash : "(null)");
    char rel[128];
    rel_path(rel, sizeof rel, "objects", hash, "");
    struct stat st;
    int fd = open_rel(ws, rel, &st, msg, msglen);
    if (fd < 0)
        return fd;
    argus_sha256 s;
    argus_sha256_init(&s);
    unsigned char buf[1 << 16];
    size_t total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return argus__fail(ARGUS_EIO, msg, msglen, "%s/%s: cannot read: %s", ws->path, rel,
                               strerror(e));
        }
        if (r == 0)
            break;
        argus_sha256_update(&s, buf, (size_t)r);
        total += (size_t)r;
    }
    close(fd);
    unsigned char d[32];
    char got[ARGUS_HASH_HEX];
    argus_sha256_final(&s, d);
    hex_of(d, got);
    if (strcmp(got, hash) != 0)
        return argus__fail(ARGUS_WS_ECORRUPT, msg, msglen,
                           "%s/%s: its %zu bytes hash to %.12s..., not to its name: the object "
                           "is truncated or altered and is treated as missing (the task that "
                           "made it runs again)",
                           ws->path, rel, total, got);
    if (len != NULL)
        *len = total;
    return 0;
}

int argus_ws_get(argus_ws *ws, const char *hash, void **data, size_t *len, char *msg,
                 size_t msglen)
{
    if (ws == NULL || !is_hash(hash) || data == NULL || len == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "'%s' is not an object hash (64 lowercase hex digits)",
                           hash ? hash : "(null)");
    *data = NULL;
    *len = 0;
    char rel[128];
    rel_path(rel, sizeof rel, "objects", hash, "");
    void *b;
    size_t n;
    int rc = read_rel(ws, rel, 0, &b, &n, msg, msglen);
    if (rc != 0)
        return rc;
    char got[ARGUS_HASH_HEX];
    argus_sha256_hex(b, n, got);
    if (strcmp(got, hash) != 0) {
        free(b);
        return argus__fail(ARGUS_WS_ECORRUPT, msg, msglen,
                           "%s/%s: its %zu bytes hash to %.12s..., not to its name: the object "
                           "is truncated or altered and is treated as missing (the task that "
                           "made it runs again)",
                           ws->path, rel, n, got);
    }
    *data = b;
    *len = n;
    return 0;
}

int argus_ws_put(argus_ws *ws, const void *data, size_t len, char hash[ARGUS_HASH_HEX],
                 char *msg, size_t msglen)
{
    if (ws == NULL || (data == NULL && len > 0) || hash == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "argus_ws_put: no workspace or data");
    argus_sha256_hex(data ? data : "", len, hash);
    /* An object already there with the right bytes is kept; reading it
     * back costs less than a second fsync'd write. */
    if (argus_ws_verify(ws, hash, NULL, NULL, 0) == 0)
        return 0;
    char rel[128];
    rel_path(rel, sizeof rel, "objects", hash, "");
    return write_atomic(ws, rel, data ? data : "", len, msg, msglen);
}

int argus_ws_put_file(argus_ws *ws, const char *path, char hash[ARGUS_HASH_HEX], char *msg,
                      size_t msglen)
{
    if (ws == NULL || path == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "argus_ws_put_file: no file named");
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: %s", path,
                           errno == ELOOP ? "is a symbolic link; name the file itself"
                                          : strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s is %s, not a regular file", path,
                           what_is(st.st_mode));
    }
    void *b;
    size_t n;
    int rc = read_fd(fd, (size_t)st.st_size, &b, &n);
    close(fd);
    if (rc != 0)
        return argus__fail(rc, msg, msglen, "%s: cannot read", path);
    rc = argus_ws_put(ws, b, n, hash, msg, msglen);
    free(b);
    return rc;
}

/* ---- task keys -------------------------------------------------------- */

/* One field of a key: "tag:length:bytes\n", so that no choice of field
 * values can make two different tasks encode alike. */
static void key_field(argus_sha256 *s, const char *tag, const char *v)
{
    char head[64];
    if (v == NULL)
        v = "";
    int n = snprintf(head, sizeof head, "%s:%zu:", tag, strlen(v));
    if (n > 0 && (size_t)n < sizeof head)
        argus_sha256_update(s, head, (size_t)n);
    argus_sha256_update(s, v, strlen(v));
    argus_sha256_update(s, "\n", 1);
}

int argus_ws_task_key(const argus_ws_task *t, char key[ARGUS_HASH_HEX], char *msg,
                      size_t msglen)
{
    if (t == NULL || key == NULL || t->kind == NULL || t->kind[0] == '\0')
        return argus__fail(ARGUS_EINVAL, msg, msglen, "a task key needs the task's kind");
    if (t->ninputs > 0 && t->inputs == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "task kind %s: %zu inputs but no list",
                           t->kind, t->ninputs);
    for (size_t i = 0; i < t->ninputs; i++)
        if (!is_hash(t->inputs[i]))
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "task kind %s: inputs[%zu] '%s' is not an object hash", t->kind,
                               i, t->inputs[i] ? t->inputs[i] : "(null)");
    argus_sha256 s;
    argus_sha256_init(&s);
    char fmt[32];
    snprintf(fmt, sizeof fmt, "%d", ARGUS_WS_FORMAT);
    key_field(&s, "argus.ws.task", fmt);
    key_field(&s, "kind", t->kind);
    key_field(&s, "config", t->config);
    key_field(&s, "program", t->program);
    key_field(&s, "scope", t->scope);
    if (t->env != NULL) {
        key_field(&s, "env", "1");
        key_field(&s, "gpu", t->env->gpu);
        key_field(&s, "driver", t->env->driver);
        key_field(&s, "cuda", t->env->cuda);
    } else {
        key_field(&s, "env", "0");
    }
    char nin[32];
    snprintf(nin, sizeof nin, "%zu", t->ninputs);
    key_field(&s, "inputs", nin);
    for (size_t i = 0; i < t->ninputs; i++)
        key_field(&s, "in", t->inputs[i]);
    unsigned char d[32];
    argus_sha256_final(&s, d);
    hex_of(d, key);
    return 0;
}

/* ---- manifests -------------------------------------------------------- */

int argus_ws_record(argus_ws *ws, const argus_ws_task *t, const argus_ws_output *outs,
                    size_t nouts, char key[ARGUS_HASH_HEX], char *msg, size_t msglen)
{
    char k[ARGUS_HASH_HEX];
    int rc = argus_ws_task_key(t, k, msg, msglen);
    if (rc != 0)
        return rc;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return ARGUS_ENOMEM;
    cJSON_AddStringToObject(o, "schema", "argus.ws.task");
    cJSON_AddNumberToObject(o, "format", ARGUS_WS_FORMAT);
    cJSON_AddStringToObject(o, "key", k);
    cJSON_AddStringToObject(o, "kind", t->kind);
    cJSON_AddStringToObject(o, "config", t->config ? t->config : "");
    cJSON_AddStringToObject(o, "program", t->program ? t->program : "");
    cJSON_AddStringToObject(o, "scope", t->scope ? t->scope : "");
    if (t->env != NULL) {
        cJSON *e = cJSON_AddObjectToObject(o, "env");
        cJSON_AddStringToObject(e, "gpu", t->env->gpu ? t->env->gpu : "");
        cJSON_AddStringToObject(e, "driver", t->env->driver ? t->env->driver : "");
        cJSON_AddStringToObject(e, "cuda", t->env->cuda ? t->env->cuda : "");
    } else {
        cJSON_AddNullToObject(o, "env");
    }
    cJSON *in = cJSON_AddArrayToObject(o, "inputs");
    for (size_t i = 0; i < t->ninputs; i++)
        cJSON_AddItemToArray(in, cJSON_CreateString(t->inputs[i]));
    cJSON *out = cJSON_AddArrayToObject(o, "outputs");
    for (size_t i = 0; i < nouts && rc == 0; i++) {
        size_t len = 0;
        if (outs[i].name == NULL || outs[i].name[0] == '\0') {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen, "task %s: outputs[%zu] has no name",
                             k, i);
            break;
        }
        rc = argus_ws_verify(ws, outs[i].hash, &len, msg, msglen);
        if (rc != 0)
            break;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", outs[i].name);
        cJSON_AddStringToObject(x, "hash", outs[i].hash);
        cJSON_AddNumberToObject(x, "bytes", (double)len);
        cJSON_AddItemToArray(out, x);
    }
    cJSON_AddNumberToObject(o, "created_unix_s", (double)time(NULL));
    char *text = rc == 0 ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (rc != 0)
        return rc;
    if (text == NULL)
        return ARGUS_ENOMEM;
    char rel[128];
    rel_path(rel, sizeof rel, "tasks", k, ".json");
    rc = write_atomic(ws, rel, text, strlen(text), msg, msglen);
    free(text);
    if (rc == 0 && key != NULL)
        memcpy(key, k, ARGUS_HASH_HEX);
    return rc;
}

void argus_ws_manifest_free(argus_ws_manifest *m)
{
    if (m == NULL)
        return;
    free(m->kind);
    free(m->config);
    free(m->program);
    free(m->scope);
    free(m->gpu);
    free(m->driver);
    free(m->cuda);
    for (size_t i = 0; i < m->ninputs; i++)
        free(m->inputs[i]);
    free(m->inputs);
    for (size_t i = 0; i < m->noutputs; i++) {
        free((char *)m->outputs[i].name);
        free((char *)m->outputs[i].hash);
    }
    free(m->outputs);
    free(m);
}

const char *argus_ws_manifest_output(const argus_ws_manifest *m, const char *name)
{
    if (m == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < m->noutputs; i++)
        if (strcmp(m->outputs[i].name, name) == 0)
            return m->outputs[i].hash;
    return NULL;
}

/* A string member, copied; a missing or non-string one is an error naming
 * the field. */
static int take_str(const cJSON *o, const char *field, char **out, const char *where,
                    char *msg, size_t msglen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!cJSON_IsString(v) || v->valuestring == NULL)
        return argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                           "%s: field '%s' is missing or not a string; the manifest is not "
                           "valid and its task runs again (argus ws gc removes it)",
                           where, field);
    *out = strdup(v->valuestring);
    return *out ? 0 : ARGUS_ENOMEM;
}

static int parse_manifest(const char *text, size_t len, const char *key, const char *where,
                          argus_ws_manifest **out, char *msg, size_t msglen)
{
    cJSON *o = cJSON_ParseWithLength(text, len);
    if (o == NULL || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                           "%s: not a JSON object; the manifest is garbage, its task runs "
                           "again (argus ws gc removes it)",
                           where);
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(o, "schema");
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(o, "format");
    int rc = 0;
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, "argus.ws.task") != 0)
        rc = argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                         "%s: field 'schema' is not \"argus.ws.task\"", where);
    else if (!cJSON_IsNumber(format) || format->valuedouble != ARGUS_WS_FORMAT)
        rc = argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                         "%s: field 'format' is not %d: written by another Argus version; "
                         "its task runs again",
                         where, ARGUS_WS_FORMAT);
    argus_ws_manifest *m = NULL;
    if (rc == 0)
        m = calloc(1, sizeof *m);
    if (rc == 0 && m == NULL)
        rc = ARGUS_ENOMEM;
    if (rc == 0)
        rc = take_str(o, "kind", &m->kind, where, msg, msglen);
    if (rc == 0)
        rc = take_str(o, "config", &m->config, where, msg, msglen);
    if (rc == 0)
        rc = take_str(o, "program", &m->program, where, msg, msglen);
    if (rc == 0)
        rc = take_str(o, "scope", &m->scope, where, msg, msglen);
    if (rc == 0) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "env");
        if (cJSON_IsObject(e)) {
            m->has_env = 1;
            rc = take_str(e, "gpu", &m->gpu, where, msg, msglen);
            if (rc == 0)
                rc = take_str(e, "driver", &m->driver, where, msg, msglen);
            if (rc == 0)
                rc = take_str(e, "cuda", &m->cuda, where, msg, msglen);
        } else if (!cJSON_IsNull(e)) {
            rc = argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                             "%s: field 'env' is neither an object nor null", where);
        }
    }
    const cJSON *in = rc == 0 ? cJSON_GetObjectItemCaseSensitive(o, "inputs") : NULL;
    if (rc == 0 && !cJSON_IsArray(in))
        rc = argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                         "%s: field 'inputs' is missing or not an array", where);
    if (rc == 0) {
        size_t n = (size_t)cJSON_GetArraySize(in);
        m->inputs = calloc(n ? n : 1, sizeof *m->inputs);
        if (m->inputs == NULL)
            rc = ARGUS_ENOMEM;
        const cJSON *x;
        cJSON_ArrayForEach(x, in)
        {
            if (rc != 0)
                break;
            if (!cJSON_IsString(x) || !is_hash(x->valuestring)) {
                rc = argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                                 "%s: inputs[%zu] is not an object hash", where, m->ninputs);
                break;
            }
            if ((m->inputs[m->ninputs] = strdup(x->valuestring)) == NULL)
                rc = ARGUS_ENOMEM;
            else
                m->ninputs++;
        }
    }
    const cJSON *outs = rc == 0 ? cJSON_GetObjectItemCaseSensitive(o, "outputs") : NULL;
    if (rc == 0 && !cJSON_IsArray(outs))
        rc = argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                         "%s: field 'outputs' is missing or not an array", where);
    if (rc == 0) {
        size_t n = (size_t)cJSON_GetArraySize(outs);
        m->outputs = calloc(n ? n : 1, sizeof *m->outputs);
        if (m->outputs == NULL)
            rc = ARGUS_ENOMEM;
        const cJSON *x;
        cJSON_ArrayForEach(x, outs)
        {
            if (rc != 0)
                break;
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(x, "name");
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(x, "hash");
            if (!cJSON_IsString(nm) || nm->valuestring[0] == '\0' || !cJSON_IsString(h) ||
                !is_hash(h->valuestring)) {
                rc = argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                                 "%s: outputs[%zu] needs a 'name' and a 'hash' (64 hex "
                                 "digits)",
                                 where, m->noutputs);
                break;
            }
            char *a = strdup(nm->valuestring), *b = strdup(h->valuestring);
            if (a == NULL || b == NULL) {
                free(a);
                free(b);
                rc = ARGUS_ENOMEM;
                break;
            }
            m->outputs[m->noutputs].name = a;
            m->outputs[m->noutputs].hash = b;
            m->noutputs++;
        }
    }
    const cJSON *created = rc == 0 ? cJSON_GetObjectItemCaseSensitive(o, "created_unix_s") : NULL;
    if (m != NULL && cJSON_IsNumber(created))
        m->created_unix_s = (int64_t)created->valuedouble;
    cJSON_Delete(o);
    if (rc == 0) {
        /* The fields must hash to the key the file is named by: an edited
         * manifest cannot pass for another task's. */
        argus_ws_env env = {m->gpu, m->driver, m->cuda};
        argus_ws_task t = {.kind = m->kind,
                           .config = m->config,
                           .program = m->program,
                           .scope = m->scope,
                           .env = m->has_env ? &env : NULL,
                           .inputs = (const char *const *)m->inputs,
                           .ninputs = m->ninputs};
        rc = argus_ws_task_key(&t, m->key, msg, msglen);
        if (rc == 0 && key != NULL && strcmp(m->key, key) != 0)
            rc = argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                             "%s: its fields hash to task key %.12s..., not to its name; the "
                             "manifest was altered and is not trusted (its task runs again)",
                             where, m->key);
    }
    if (rc != 0) {
        argus_ws_manifest_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

int argus_ws_lookup(argus_ws *ws, const char *key, argus_ws_manifest **out, char *msg,
                    size_t msglen)
{
    if (out != NULL)
        *out = NULL;
    if (ws == NULL || out == NULL || !is_hash(key))
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "'%s' is not a task key (64 lowercase hex digits)",
                           key ? key : "(null)");
    char rel[128], where[PATH_MAX + 160];
    rel_path(rel, sizeof rel, "tasks", key, ".json");
    int n = snprintf(where, sizeof where, "%s/%s", ws->path, rel);
    if (n < 0 || (size_t)n >= sizeof where)
        return ARGUS_ERANGE;
    void *text;
    size_t len;
    int rc = read_rel(ws, rel, WS_MAX_META, &text, &len, msg, msglen);
    if (rc != 0)
        return rc;
    argus_ws_manifest *m = NULL;
    rc = parse_manifest(text, len, key, where, &m, msg, msglen);
    free(text);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < m->noutputs; i++) {
        char why[PATH_MAX + 320];
        rc = argus_ws_verify(ws, m->outputs[i].hash, NULL, why, sizeof why);
        if (rc != 0) {
            rc = argus__fail(rc == ARGUS_WS_ENOENT ? ARGUS_WS_ECORRUPT : rc, msg, msglen,
                             "task %.12s... output '%s': %s", key, m->outputs[i].name, why);
            argus_ws_manifest_free(m);
            return rc;
        }
    }
    *out = m;
    return 0;
}

int argus_ws_manifest_print(const argus_ws_manifest *m, FILE *f)
{
    if (m == NULL || f == NULL)
        return ARGUS_EINVAL;
    fprintf(f, "task    %s\nkind    %s\nconfig  %s\nprogram %s\nscope   %s\n", m->key, m->kind,
            m->config, m->program[0] ? m->program : "(none)", m->scope[0] ? m->scope : "(all)");
    if (m->has_env)
        fprintf(f, "env     gpu \"%s\", driver %s, CUDA %s\n", m->gpu, m->driver, m->cuda);
    else
        fprintf(f, "env     (none: the task does not depend on the GPU)\n");
    for (size_t i = 0; i < m->ninputs; i++)
        fprintf(f, "input   %s\n", m->inputs[i]);
    for (size_t i = 0; i < m->noutputs; i++)
        fprintf(f, "output  %-12s %s\n", m->outputs[i].name, m->outputs[i].hash);
    return ferror(f) ? ARGUS_EIO : 0;
}

/* ---- joining ---------------------------------------------------------- */

static int env_same(const argus_ws_manifest *a, const argus_ws_manifest *b, const char **field,
                    const char **va, const char **vb)
{
    if (strcmp(a->gpu, b->gpu) != 0) {
        *field = "GPU";
        *va = a->gpu;
        *vb = b->gpu;
        return 0;
    }
    if (strcmp(a->driver, b->driver) != 0) {
        *field = "driver";
        *va = a->driver;
        *vb = b->driver;
        return 0;
    }
    if (strcmp(a->cuda, b->cuda) != 0) {
        *field = "CUDA version";
        *va = a->cuda;
        *vb = b->cuda;
        return 0;
    }
    return 1;
}

int argus_ws_join_check(const argus_ws_manifest *const *ms, size_t n, unsigned flags,
                        char *msg, size_t msglen)
{
    if (ms == NULL && n > 0)
        return ARGUS_EINVAL;
    const argus_ws_manifest *envref = NULL;
    for (size_t i = 0; i < n; i++) {
        if (ms[i] == NULL)
            return argus__fail(ARGUS_EINVAL, msg, msglen, "join: evidence %zu is missing", i);
        const argus_ws_manifest *a = ms[0], *b = ms[i];
        if (strcmp(a->program, b->program) != 0)
            return argus__fail(ARGUS_WS_EINCOMPAT, msg, msglen,
                               "join: task %.12s... measured program version '%.12s' and task "
                               "%.12s... version '%.12s': evidence of different program "
                               "versions is not joined; measure both on one version",
                               a->key, a->program, b->key, b->program);
        if (!(flags & ARGUS_WS_JOIN_ANY_SCOPE) && strcmp(a->scope, b->scope) != 0)
            return argus__fail(ARGUS_WS_EINCOMPAT, msg, msglen,
                               "join: task %.12s... has scope '%s' and task %.12s... scope "
                               "'%s': evidence of different scopes is joined only coordinate "
                               "by coordinate",
                               a->key, a->scope, b->key, b->scope);
        if (b->has_env) {
            const char *field, *va, *vb;
            if (envref == NULL)
                envref = b;
            else if (!env_same(envref, b, &field, &va, &vb))
                return argus__fail(ARGUS_WS_EINCOMPAT, msg, msglen,
                                   "join: task %.12s... ran with %s '%s' and task %.12s... "
                                   "with '%s': evidence of different environments is not "
                                   "joined",
                                   envref->key, field, va, b->key, vb);
        }
    }
    return 0;
}

/* ---- versions --------------------------------------------------------- */

static void version_id(const char *parent, const char *artifact, const char *label,
                       char id[ARGUS_HASH_HEX])
{
    argus_sha256 s;
    unsigned char d[32];
    argus_sha256_init(&s);
    key_field(&s, "argus.ws.version", "1");
    key_field(&s, "parent", parent);
    key_field(&s, "artifact", artifact);
    key_field(&s, "label", label);
    argus_sha256_final(&s, d);
    hex_of(d, id);
}

void argus_ws_version_clear(argus_ws_version *v)
{
    if (v == NULL)
        return;
    free(v->label);
    memset(v, 0, sizeof *v);
}

int argus_ws_version_get(argus_ws *ws, const char *id, argus_ws_version *out, char *msg,
                         size_t msglen)
{
    if (ws == NULL || out == NULL || !is_hash(id))
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "'%s' is not a version ID (64 lowercase hex digits)",
                           id ? id : "(null)");
    memset(out, 0, sizeof *out);
    char rel[128];
    rel_path(rel, sizeof rel, "versions", id, ".json");
    void *text;
    size_t len;
    int rc = read_rel(ws, rel, WS_MAX_META, &text, &len, msg, msglen);
    if (rc != 0)
        return rc;
    cJSON *o = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "parent");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "artifact");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "label");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "created_unix_s");
    if (!cJSON_IsString(p) || !cJSON_IsString(a) || !cJSON_IsString(l) ||
        (p->valuestring[0] != '\0' && !is_hash(p->valuestring)) || !is_hash(a->valuestring)) {
        cJSON_Delete(o);
        return argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                           "%s/%s: not a version file (needs 'parent', 'artifact' and "
                           "'label' strings)",
                           ws->path, rel);
    }
    version_id(p->valuestring, a->valuestring, l->valuestring, out->id);
    if (strcmp(out->id, id) != 0) {
        cJSON_Delete(o);
        return argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                           "%s/%s: its fields hash to version %.12s..., not to its name; the "
                           "file was altered",
                           ws->path, rel, out->id);
    }
    snprintf(out->parent, sizeof out->parent, "%s", p->valuestring);
    snprintf(out->artifact, sizeof out->artifact, "%s", a->valuestring);
    out->label = strdup(l->valuestring);
    out->created_unix_s = cJSON_IsNumber(c) ? (int64_t)c->valuedouble : 0;
    cJSON_Delete(o);
    return out->label ? 0 : ARGUS_ENOMEM;
}

int argus_ws_fork(argus_ws *ws, const char *parent, const char *artifact, const char *label,
                  char id[ARGUS_HASH_HEX], char *msg, size_t msglen)
{
    if (ws == NULL || id == NULL)
        return ARGUS_EINVAL;
    if (parent == NULL)
        parent = "";
    if (label == NULL)
        label = "";
    if (parent[0] != '\0') {
        argus_ws_version pv;
        char why[PATH_MAX + 320];
        int rc = argus_ws_version_get(ws, parent, &pv, why, sizeof why);
        if (rc != 0)
            return argus__fail(rc, msg, msglen, "fork: the parent version: %s", why);
        argus_ws_version_clear(&pv);
    }
    char why[PATH_MAX + 320];
    int rc = argus_ws_verify(ws, artifact, NULL, why, sizeof why);
    if (rc != 0)
        return argus__fail(rc, msg, msglen, "fork: the program artifact: %s", why);
    version_id(parent, artifact, label, id);
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return ARGUS_ENOMEM;
    cJSON_AddStringToObject(o, "schema", "argus.ws.version");
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "parent", parent);
    cJSON_AddStringToObject(o, "artifact", artifact);
    cJSON_AddStringToObject(o, "label", label);
    cJSON_AddNumberToObject(o, "created_unix_s", (double)time(NULL));
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    if (text == NULL)
        return ARGUS_ENOMEM;
    char rel[128];
    rel_path(rel, sizeof rel, "versions", id, ".json");
    rc = write_atomic(ws, rel, text, strlen(text), msg, msglen);
    free(text);
    return rc;
}

int argus_ws_version_is_ancestor(argus_ws *ws, const char *anc, const char *id, char *msg,
                                 size_t msglen)
{
    if (!is_hash(anc) || !is_hash(id))
        return argus__fail(ARGUS_EINVAL, msg, msglen, "not version IDs");
    char cur[ARGUS_HASH_HEX];
    snprintf(cur, sizeof cur, "%s", id);
    for (int depth = 0; depth < WS_MAX_VERSION_DEPTH; depth++) {
        if (strcmp(cur, anc) == 0)
            return 1;
        argus_ws_version v;
        int rc = argus_ws_version_get(ws, cur, &v, msg, msglen);
        if (rc != 0)
            return rc;
        int root = v.parent[0] == '\0';
        snprintf(cur, sizeof cur, "%s", v.parent);
        argus_ws_version_clear(&v);
        if (root)
            return 0;
    }
    return argus__fail(ARGUS_WS_EMANIFEST, msg, msglen,
                       "version %.12s...: more than %d ancestors; the tree is damaged", id,
                       WS_MAX_VERSION_DEPTH);
}

/* ---- walking and collection ------------------------------------------ */

static int each_in(argus_ws *ws, const char *sub, const char *suffix,
                   int (*fn)(const char *id, const char *rel, uint64_t bytes, int64_t mtime,
                             void *user),
                   void *user, char *msg, size_t msglen)
{
    int fd = openat(ws->dirfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s/%s: %s", ws->path, sub, strerror(errno));
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return ARGUS_ENOMEM;
    }
    int rc = 0;
    size_t sl = strlen(suffix);
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char rel[320];
        struct stat st;
        if (strcmp(sub, "tmp") == 0) {
            snprintf(rel, sizeof rel, "tmp/%.200s", e->d_name);
            if (fstatat(ws->dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0)
                rc = fn(e->d_name, rel, (uint64_t)st.st_size, (int64_t)st.st_mtime, user);
            continue;
        }
        if (strlen(e->d_name) != 2)
            continue;
        char sdir[64];
        snprintf(sdir, sizeof sdir, "%s/%.2s", sub, e->d_name);
        int sfd = openat(ws->dirfd, sdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0)
            continue;
        DIR *sd = fdopendir(sfd);
        if (sd == NULL) {
            close(sfd);
            continue;
        }
        struct dirent *f;
        while (rc == 0 && (f = readdir(sd)) != NULL) {
            size_t n = strlen(f->d_name);
            if (n != 64 + sl || strcmp(f->d_name + 64, suffix) != 0)
                continue;
            char id[ARGUS_HASH_HEX];
            memcpy(id, f->d_name, 64);
            id[64] = '\0';
            if (!is_hash(id))
                continue;
            snprintf(rel, sizeof rel, "%s/%s", sdir, f->d_name);
            if (fstatat(ws->dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            rc = fn(id, rel, (uint64_t)st.st_size, (int64_t)st.st_mtime, user);
        }
        closedir(sd);
    }
    closedir(d);
    return rc;
}

struct each_adapter {
    argus_ws_each_fn fn;
    void *user;
};

static int each_adapt(const char *id, const char *rel, uint64_t bytes, int64_t mtime, void *user)
{
    (void)rel;
    (void)mtime;
    struct each_adapter *a = user;
    return a->fn(id, bytes, a->user);
}

int argus_ws_each(argus_ws *ws, argus_ws_entry_type type, argus_ws_each_fn fn, void *user,
                  char *msg, size_t msglen)
{
    if (ws == NULL || fn == NULL)
        return ARGUS_EINVAL;
    struct each_adapter a = {fn, user};
    switch (type) {
    case ARGUS_WS_ENTRY_OBJECT:
        return each_in(ws, "objects", "", each_adapt, &a, msg, msglen);
    case ARGUS_WS_ENTRY_TASK:
        return each_in(ws, "tasks", ".json", each_adapt, &a, msg, msglen);
    case ARGUS_WS_ENTRY_VERSION:
        return each_in(ws, "versions", ".json", each_adapt, &a, msg, msglen);
    }
    return ARGUS_EINVAL;
}

/* The set of referenced objects: a sorted array of hashes. */
struct hashset {
    char (*h)[ARGUS_HASH_HEX];
    size_t n, cap;
};

static int set_add(struct hashset *s, const char *h)
{
    if (argus__grow((void **)&s->h, &s->cap, s->n + 1, sizeof *s->h) != 0)
        return ARGUS_ENOMEM;
    memcpy(s->h[s->n++], h, ARGUS_HASH_HEX);
    return 0;
}

static int cmp_hash(const void *a, const void *b)
{
    return strcmp(a, b);
}

struct gc_state {
    argus_ws *ws;
    int dry_run;
    struct hashset refs;
    argus_ws_gc_stats *st;
    int64_t now;
};

static int gc_task(const char *id, const char *rel, uint64_t bytes, int64_t mtime, void *user)
{
    (void)bytes;
    (void)mtime;
    struct gc_state *g = user;
    argus_ws_manifest *m = NULL;
    if (argus_ws_lookup(g->ws, id, &m, NULL, 0) != 0) {
        g->st->tasks_removed++;
        if (!g->dry_run)
            unlinkat(g->ws->dirfd, rel, 0);
        return 0;
    }
    int rc = 0;
    for (size_t i = 0; i < m->ninputs && rc == 0; i++)
        rc = set_add(&g->refs, m->inputs[i]);
    for (size_t i = 0; i < m->noutputs && rc == 0; i++)
        rc = set_add(&g->refs, m->outputs[i].hash);
    argus_ws_manifest_free(m);
    return rc;
}

static int gc_version(const char *id, const char *rel, uint64_t bytes, int64_t mtime, void *user)
{
    (void)rel;
    (void)bytes;
    (void)mtime;
    struct gc_state *g = user;
    argus_ws_version v;
    /* A version file that does not parse is kept: it is a person's record
     * of a program, and `argus ws show` names what is wrong with it. */
    if (argus_ws_version_get(g->ws, id, &v, NULL, 0) != 0)
        return 0;
    int rc = set_add(&g->refs, v.artifact);
    argus_ws_version_clear(&v);
    return rc;
}

static int gc_object(const char *id, const char *rel, uint64_t bytes, int64_t mtime, void *user)
{
    (void)mtime;
    struct gc_state *g = user;
    if (g->refs.n > 0 && bsearch(id, g->refs.h, g->refs.n, sizeof *g->refs.h, cmp_hash)) {
        g->st->objects_kept++;
        g->st->bytes_kept += bytes;
        return 0;
    }
    g->st->objects_removed++;
    g->st->bytes_removed += bytes;
    if (!g->dry_run)
        unlinkat(g->ws->dirfd, rel, 0);
    return 0;
}

static int gc_tmp(const char *id, const char *rel, uint64_t bytes, int64_t mtime, void *user)
{
    (void)id;
    (void)bytes;
    struct gc_state *g = user;
    if (g->now - mtime < WS_TMP_STALE_S)
        return 0;
    g->st->tmp_removed++;
    if (g->dry_run || unlinkat(g->ws->dirfd, rel, 0) == 0 || errno != EISDIR)
        return 0;
    /* A worker's folder (tmp/rt-XXXXXX) left by a runtime that died: its
     * files are flat (log, out.NAME). */
    int fd = openat(g->ws->dirfd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    unlinkat(g->ws->dirfd, rel, AT_REMOVEDIR);
    return 0;
}

int argus_ws_gc(argus_ws *ws, int dry_run, argus_ws_gc_stats *st, char *msg, size_t msglen)
{
    if (ws == NULL || st == NULL)
        return ARGUS_EINVAL;
    memset(st, 0, sizeof *st);
    struct gc_state g = {.ws = ws, .dry_run = dry_run, .st = st, .now = (int64_t)time(NULL)};
    int rc = each_in(ws, "tasks", ".json", gc_task, &g, msg, msglen);
    if (rc == 0)
        rc = each_in(ws, "versions", ".json", gc_version, &g, msg, msglen);
    if (rc == 0 && g.refs.n > 0)
        qsort(g.refs.h, g.refs.n, sizeof *g.refs.h, cmp_hash);
    if (rc == 0)
        rc = each_in(ws, "objects", "", gc_object, &g, msg, msglen);
    if (rc == 0)
        rc = each_in(ws, "tmp", "", gc_tmp, &g, msg, msglen);
    free(g.refs.h);
    return rc;
}
