/*
 * argus exec: the executor that `argus query --run --executor "argus exec"`
 * runs for each TRANSFORM and each run of a plan (docs/argus-plan.md, "The
 * executor"). This file: the program description, the variant artifacts,
 * the transformations and the compiler calls; exec_run.c runs a variant.
 *
 * Why an artifact is the variant's PTX text with its other parts in a
 * trailer of comment lines (the JSON header, then the cubin, registry and
 * build log in base64): the runtime stores each task output as one
 * content-addressed object (argus/workspace.h), and whatever reads a
 * variant as PTX (the CONTROL task's discovery, ptxas, the driver's JIT)
 * reads this file as it is, comments ignored; base64 costs a third more
 * on the cubin only (a few KiB a probe). `argus exec show` extracts a part.
 *
 * Why a variant is rebuilt from source for markers_on and line_info but
 * rewritten in PTX for a probe: markers and line tables are compiler
 * options, while a forced wait is one inserted block that must leave the
 * rest of the code as it was (discover.h), which only the PTX of the
 * parent variant guarantees.
 *
 * Tested with nvcc/ptxas 13.0 (sm_90, sm_90a) on this machine; the runs
 * under argus-shim are exec_run.c's.
 */
#define _GNU_SOURCE 1
#include "exec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "argus/argus.h"
#include "argus/discover.h"
#include "argus/workspace.h"
#include "argus_internal.h"
#include "core.h"
#include "json.h"

#define ARTIFACT_SCHEMA "argus.exec.artifact"
#define PROGRAM_SCHEMA "argus.exec.program"
#define EXEC_MAX_INPUT ((size_t)1 << 30)

/* ---- small helpers ---------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int argus__read_bin(const char *path, size_t max, unsigned char **out, size_t *len, char *msg,
                    size_t msglen)
{
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: not a regular file", path);
    }
    if ((size_t)st.st_size > max) {
        close(fd);
        return argus__fail(ARGUS_ELIMIT, msg, msglen, "%s: %lld bytes, more than the %zu read",
                           path, (long long)st.st_size, max);
    }
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        close(fd);
        return ARGUS_ENOMEM;
    }
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n != (size_t)st.st_size) {
        free(buf);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: short read", path);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

static int write_bin(const char *path, const void *data, size_t len, char *msg, size_t msglen)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot create: %s", path, strerror(errno));
    int ok = fwrite(data, 1, len, f) == len;
    ok &= fclose(f) == 0;
    return ok ? 0 : argus__fail(ARGUS_EIO, msg, msglen, "%s: writing failed", path);
}

int argus__tmpdir(char *buf, size_t len, char *msg, size_t msglen)
{
    const char *t = getenv("TMPDIR");
    int w = snprintf(buf, len, "%s/argus-exec.XXXXXX", t && t[0] ? t : "/tmp");
    if (w < 0 || (size_t)w >= len || mkdtemp(buf) == NULL)
        return argus__fail(ARGUS_EIO, msg, msglen, "cannot make a temporary folder under %s: %s",
                           t && t[0] ? t : "/tmp", strerror(errno));
    return 0;
}

void argus__rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[PATH_MAX];
            int w = snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (w < 0 || (size_t)w >= sizeof p)
                continue;
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                argus__rmtree(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

void argus__status_text(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "ended with wait status 0x%x", (unsigned)status);
}

/* A timed-out child and everything it started (argus-shim's program and
 * its children): every process whose parent chain leads here, and, when
 * this process leads its group (the runtime's worker), every other member
 * of the group. Nothing above this process is touched: the executor may be
 * a child of the runtime's `sh -c`, or of a script that runs it. */
static void kill_descendants(pid_t child)
{
    /* Marked first, killed after: a parent killed before its children are
     * found would leave them re-parented, out of the chain. */
    pid_t self = getpid();
    int leader = getpgrp() == self;
    for (int pass = 0; pass < 3; pass++) {
        long *pid = NULL, *ppid = NULL, *pgrp = NULL;
        size_t n = 0, cap = 0, cp = 0, cg = 0;
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d != NULL && (e = readdir(d)) != NULL) {
            char *end;
            long v = strtol(e->d_name, &end, 10);
            if (*end != '\0' || v <= 0)
                continue;
            char path[64], line[1024];
            snprintf(path, sizeof path, "/proc/%ld/stat", v);
            FILE *f = fopen(path, "r");
            if (f == NULL)
                continue;
            size_t k = fread(line, 1, sizeof line - 1, f);
            fclose(f);
            line[k] = '\0';
            /* pid (comm) state ppid pgrp ...: comm may hold spaces and ')'. */
            char *rp = strrchr(line, ')'), state;
            long pp, pg;
            if (rp == NULL || sscanf(rp + 1, " %c %ld %ld", &state, &pp, &pg) != 3)
                continue;
            if (argus__grow((void **)&pid, &cap, n + 1, sizeof *pid) != 0 ||
                argus__grow((void **)&ppid, &cp, n + 1, sizeof *ppid) != 0 ||
                argus__grow((void **)&pgrp, &cg, n + 1, sizeof *pgrp) != 0)
                break;
            pid[n] = v;
            ppid[n] = pp;
            pgrp[n] = pg;
            n++;
        }
        if (d != NULL)
            closedir(d);
        unsigned char *mark = calloc(n + 1, 1);
        size_t killed = 0;
        for (int grow = 1; mark != NULL && grow;) {
            grow = 0;
            for (size_t i = 0; i < n; i++) {
                if (mark[i] || pid[i] == self)
                    continue;
                int m = ppid[i] == self || (leader && pgrp[i] == self);
                for (size_t j = 0; !m && j < n; j++)
                    m = mark[j] && pid[j] == ppid[i];
                if (m) {
                    mark[i] = 1;
                    grow = 1;
                }
            }
        }
        for (size_t i = 0; mark != NULL && i < n; i++)
            if (mark[i] && kill((pid_t)pid[i], SIGKILL) == 0)
                killed++;
        free(mark);
        free(pid);
        free(ppid);
        free(pgrp);
        if (killed == 0)
            break;
    }
    kill(child, SIGKILL);
}

int argus__spawn(const char *const *argv, const char *const *env, const char *log_path,
                 double timeout_s, int *status, double *seconds, char *msg, size_t msglen)
{
    int logfd = -1;
    if (log_path != NULL) {
        logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (logfd < 0)
            return argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot open the log: %s", log_path,
                               strerror(errno));
    }
    /* A pipe closed on exec tells the parent whether exec worked. */
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        if (logfd >= 0)
            close(logfd);
        return argus__fail(ARGUS_EIO, msg, msglen, "pipe: %s", strerror(errno));
    }
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        if (logfd >= 0)
            close(logfd);
        return argus__fail(ARGUS_EIO, msg, msglen, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) {
            dup2(nul, 0);
            close(nul);
        }
        if (logfd >= 0) {
            dup2(logfd, 1);
            dup2(logfd, 2);
        }
        for (size_t i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        execvp(argv[0], (char *const *)argv);
        int e = errno;
        ssize_t wr = write(pfd[1], &e, sizeof e);
        (void)wr;
        _exit(127);
    }
    close(pfd[1]);
    int e = 0;
    ssize_t r;
    do
        r = read(pfd[0], &e, sizeof e);
    while (r < 0 && errno == EINTR);
    close(pfd[0]);
    if (logfd >= 0)
        close(logfd);
    int st = 0, timed_out = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            st = 0;
            break;
        }
        if (timeout_s > 0 && now_s() - t0 > timeout_s && !timed_out) {
            timed_out = 1;
            kill_descendants(pid);
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (seconds != NULL)
        *seconds = now_s() - t0;
    *status = st;
    if (r == (ssize_t)sizeof e)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot run: %s", argv[0], strerror(e));
    if (timed_out) {
        /* Its children may still hold the log; the group kill reached them. */
        return argus__fail(ARGUS_ELIMIT, msg, msglen,
                           "%s ran past its limit of %.0f s and was killed with everything it "
                           "started",
                           argv[0], timeout_s);
    }
    return 0;
}

/* The last non-empty lines of a log (at most max bytes), for a message. */
void argus__log_tail(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    unsigned char *t = NULL;
    size_t n = 0;
    if (argus__read_bin(path, EXEC_MAX_INPUT, &t, &n, NULL, 0) != 0)
        return;
    while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == ' '))
        n--;
    size_t start = n > len - 1 ? n - (len - 1) : 0;
    /* Begin at a line start, but keep at least the last line. */
    for (size_t i = start; start > 0 && i < n; i++)
        if (t[i] == '\n') {
            start = i + 1;
            break;
        }
    size_t k = 0;
    for (size_t i = start; i < n && k + 1 < len; i++)
        buf[k++] = t[i] == '\n' ? '|' : (char)t[i];
    buf[k] = '\0';
    free(t);
}

/* ---- the program description ------------------------------------------------ */

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

void argus__prog_free(argus__prog *p)
{
    if (p == NULL)
        return;
    free_list(p->include, p->ninclude);
    free_list(p->flags, p->nflags);
    free_list(p->run, p->nrun);
    free_list(p->env, p->nenv);
    memset(p, 0, sizeof *p);
}

/* A path of the description made absolute against its folder. */
static int abs_path(const argus__prog *p, const char *v, char *out, size_t len)
{
    int w = v[0] == '/' ? snprintf(out, len, "%s", v) : snprintf(out, len, "%s/%s", p->dir, v);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

static int str_list(const argus__prog *p, const cJSON *a, const char *key, int paths, char ***out,
                    size_t *n, char *msg, size_t msglen)
{
    if (!cJSON_IsArray(a))
        return argus__fail(ARGUS_EINVAL, msg, msglen, "%s: %s: expected an array of strings",
                           p->path, key);
    size_t cnt = (size_t)cJSON_GetArraySize(a);
    char **l = calloc(cnt + 1, sizeof *l);
    if (l == NULL)
        return ARGUS_ENOMEM;
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        if (!cJSON_IsString(e) || e->valuestring[0] == '\0') {
            free_list(l, i);
            return argus__fail(ARGUS_EINVAL, msg, msglen,
                               "%s: %s[%zu]: expected a non-empty string", p->path, key, i);
        }
        char buf[4096];
        const char *v = e->valuestring;
        /* A run command's program named with a slash is a path beside the
         * description; a bare name is searched in PATH. */
        if (paths == 2 && i == 0 && strchr(v, '/') != NULL && abs_path(p, v, buf, sizeof buf) == 0)
            v = buf;
        else if (paths == 1 && abs_path(p, v, buf, sizeof buf) == 0)
            v = buf;
        l[i] = strdup(v);
        if (l[i] == NULL) {
            free_list(l, i);
            return ARGUS_ENOMEM;
        }
        i++;
    }
    *out = l;
    *n = cnt;
    return 0;
}

int argus__prog_load(const char *path, argus__prog *p, char *msg, size_t msglen)
{
    memset(p, 0, sizeof *p);
    char err[512];
    cJSON *doc = NULL;
    char rp[PATH_MAX];
    if (realpath(path, rp) == NULL)
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: %s", path, strerror(errno));
    snprintf(p->path, sizeof p->path, "%s", rp);
    snprintf(p->dir, sizeof p->dir, "%s", rp);
    char *slash = strrchr(p->dir, '/');
    if (slash != NULL)
        *(slash == p->dir ? slash + 1 : slash) = '\0';
    if (mosaic__json_read_file(rp, 1 << 20, &doc, err, sizeof err) != 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "%s (the program of a plan run by argus exec must be a program "
                           "description, argus.exec.program v1: docs/argus-plan.md)",
                           err);
    static const char *const keys[] = {"schema", "version", "source", "ptx", "registry",
                                       "include", "sm", "nvcc_flags", "run", "device",
                                       "timeout_s", "env", NULL};
    int rc = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, doc)
    {
        int known = 0;
        for (size_t k = 0; keys[k] != NULL; k++)
            known |= strcmp(it->string, keys[k]) == 0;
        if (!known) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "%s: %s: unknown key; known: schema, version, source, ptx, registry, "
                             "include, sm, nvcc_flags, run, device, timeout_s, env",
                             rp, it->string);
            goto out;
        }
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, PROGRAM_SCHEMA) != 0 ||
        !cJSON_IsNumber(version) || version->valuedouble != 1) {
        rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                         "%s: not a program description: expected \"schema\": \"" PROGRAM_SCHEMA
                         "\", \"version\": 1",
                         rp);
        goto out;
    }
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(doc, "source");
    const cJSON *ptx = cJSON_GetObjectItemCaseSensitive(doc, "ptx");
    if ((src != NULL) == (ptx != NULL) || (src && !cJSON_IsString(src)) ||
        (ptx && !cJSON_IsString(ptx))) {
        rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                         "%s: give exactly one of \"source\" (a CUDA file) and \"ptx\" (a PTX "
                         "file), as a path",
                         rp);
        goto out;
    }
    if (abs_path(p, src ? src->valuestring : ptx->valuestring, src ? p->source : p->ptx,
                 sizeof p->source) != 0) {
        rc = argus__fail(ARGUS_EINVAL, msg, msglen, "%s: the program's path is too long", rp);
        goto out;
    }
    const char *file = src ? p->source : p->ptx;
    if (access(file, R_OK) != 0) {
        rc = argus__fail(ARGUS_EIO, msg, msglen, "%s: %s: %s %s", rp, src ? "source" : "ptx", file,
                         strerror(errno));
        goto out;
    }
    const cJSON *reg = cJSON_GetObjectItemCaseSensitive(doc, "registry");
    if (reg != NULL && (!cJSON_IsString(reg) ||
                        abs_path(p, reg->valuestring, p->registry, sizeof p->registry) != 0)) {
        rc = argus__fail(ARGUS_EINVAL, msg, msglen, "%s: registry: expected a path", rp);
        goto out;
    }
    const cJSON *sm = cJSON_GetObjectItemCaseSensitive(doc, "sm");
    snprintf(p->sm, sizeof p->sm, "90");
    if (sm != NULL) {
        const char *v = cJSON_IsString(sm) ? sm->valuestring : "";
        size_t d = 0;
        while (v[d] >= '0' && v[d] <= '9')
            d++;
        if (d < 2 || d > 3 || (v[d] != '\0' && strcmp(v + d, "a") != 0)) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "%s: sm: expected the architecture as \"90\" or \"90a\" (sm_90a for "
                             "TMA and wgmma)",
                             rp);
            goto out;
        }
        snprintf(p->sm, sizeof p->sm, "%s", v);
    }
    const cJSON *a;
    if ((a = cJSON_GetObjectItemCaseSensitive(doc, "include")) != NULL &&
        (rc = str_list(p, a, "include", 1, &p->include, &p->ninclude, msg, msglen)) != 0)
        goto out;
    if ((a = cJSON_GetObjectItemCaseSensitive(doc, "nvcc_flags")) != NULL &&
        (rc = str_list(p, a, "nvcc_flags", 0, &p->flags, &p->nflags, msg, msglen)) != 0)
        goto out;
    a = cJSON_GetObjectItemCaseSensitive(doc, "run");
    if (a == NULL || !cJSON_IsArray(a) || cJSON_GetArraySize(a) == 0) {
        rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                         "%s: run: expected the command that runs a variant, as an array "
                         "[\"./host\", \"{cubin}\", ...] ({cubin}: the variant's cubin)",
                         rp);
        goto out;
    }
    if ((rc = str_list(p, a, "run", 2, &p->run, &p->nrun, msg, msglen)) != 0)
        goto out;
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(doc, "device");
    if (dev != NULL) {
        if (!cJSON_IsString(dev) || dev->valuestring[0] == '\0' ||
            strlen(dev->valuestring) >= sizeof p->device || strchr(dev->valuestring, ',')) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "%s: device: expected one device, as CUDA_VISIBLE_DEVICES names it "
                             "(\"0\", \"GPU-<uuid>\")",
                             rp);
            goto out;
        }
        snprintf(p->device, sizeof p->device, "%s", dev->valuestring);
    }
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(doc, "env");
    if (env != NULL) {
        size_t cnt = cJSON_IsObject(env) ? (size_t)cJSON_GetArraySize(env) : 0;
        p->env = calloc(cnt + 1, sizeof *p->env);
        const cJSON *kv;
        cJSON_ArrayForEach(kv, env)
        {
            if (p->env == NULL || !cJSON_IsString(kv) || kv->string[0] == '\0' ||
                strchr(kv->string, '=') != NULL)
                break;
            size_t n = strlen(kv->string) + strlen(kv->valuestring) + 2;
            if ((p->env[p->nenv] = malloc(n)) == NULL)
                break;
            snprintf(p->env[p->nenv++], n, "%s=%s", kv->string, kv->valuestring);
        }
        if (!cJSON_IsObject(env) || p->nenv != cnt) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "%s: env: expected an object of NAME: \"value\" strings for the "
                             "program's runs",
                             rp);
            goto out;
        }
    }
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(doc, "timeout_s");
    if (to != NULL) {
        if (!cJSON_IsNumber(to) || !(to->valuedouble > 0) || to->valuedouble > 86400) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "%s: timeout_s: expected seconds, more than 0 and at most 86400",
                             rp);
            goto out;
        }
        p->timeout_s = to->valuedouble;
    }
out:
    cJSON_Delete(doc);
    if (rc != 0)
        argus__prog_free(p);
    return rc;
}

/* ---- artifacts ---------------------------------------------------------------- */

#define TRAILER "\n// " ARTIFACT_SCHEMA " "
#define PART_LINE "// argus.exec.part "

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *argus__base64(const unsigned char *d, size_t n, size_t *olen)
{
    size_t m = 4 * ((n + 2) / 3);
    char *o = malloc(m + 1);
    if (o == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)d[i + 1] << 8;
        if (i + 2 < n)
            v |= d[i + 2];
        o[k++] = b64[(v >> 18) & 63];
        o[k++] = b64[(v >> 12) & 63];
        o[k++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        o[k++] = i + 2 < n ? b64[v & 63] : '=';
    }
    o[k] = '\0';
    if (olen != NULL)
        *olen = k;
    return o;
}

/* Decodes n base64 characters (padded, no line breaks); -1 when not. */
static int unbase64(const char *s, size_t n, unsigned char **out, size_t *olen)
{
    if (n % 4 != 0)
        return -1;
    unsigned char *o = malloc(n / 4 * 3 + 1);
    if (o == NULL)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (size_t j = 0; j < 4; j++) {
            const char *c = s[i + j] == '=' ? NULL : memchr(b64, s[i + j], 64);
            if (s[i + j] == '=' && i + 4 == n && j >= 2) {
                pad++;
            } else if (c == NULL || s[i + j] == '\0' || pad) {
                free(o);
                return -1;
            }
            v = v << 6 | (c ? (uint32_t)(c - b64) : 0);
        }
        o[k++] = (unsigned char)(v >> 16);
        if (pad < 2)
            o[k++] = (unsigned char)(v >> 8);
        if (pad < 1)
            o[k++] = (unsigned char)v;
    }
    *out = o;
    *olen = k;
    return 0;
}

void argus__artifact_free(argus__artifact *a)
{
    if (a == NULL)
        return;
    cJSON_Delete(a->hdr);
    for (size_t i = 0; i < a->nparts; i++)
        if (a->parts[i].data != a->file)
            free((void *)a->parts[i].data);
    free(a->file);
    memset(a, 0, sizeof *a);
}

const argus__part *argus__artifact_part(const argus__artifact *a, const char *name)
{
    for (size_t i = 0; i < a->nparts; i++)
        if (strcmp(a->parts[i].name, name) == 0)
            return &a->parts[i];
    return NULL;
}

static int damaged(argus__artifact *a, const char *path, const char *what, char *msg,
                   size_t msglen)
{
    argus__artifact_free(a);
    a->trailer = 1;
    return argus__fail(ARGUS_EINVAL, msg, msglen,
                       "%s: a damaged variant artifact: %s (rebuild it with argus exec transform)",
                       path, what);
}

int argus__artifact_load(const char *path, argus__artifact *a, char *msg, size_t msglen)
{
    memset(a, 0, sizeof *a);
    int rc = argus__read_bin(path, EXEC_MAX_INPUT, &a->file, &a->flen, msg, msglen);
    if (rc != 0)
        return rc;
    /* The trailer begins at the last header comment line. */
    const char *f = (const char *)a->file, *h = NULL;
    for (const char *q = f; (q = memmem(q, a->flen - (size_t)(q - f), TRAILER,
                                        sizeof TRAILER - 1)) != NULL;
         q++)
        h = q;
    if (h == NULL) {
        argus__artifact_free(a);
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "%s: not a variant artifact (no \"// " ARTIFACT_SCHEMA "\" trailer)",
                           path);
    }
    const char *js = h + sizeof TRAILER - 1, *end = f + a->flen;
    const char *nl = memchr(js, '\n', (size_t)(end - js));
    char err[512];
    if (nl == NULL || mosaic__json_parse_strict(path, js, (size_t)(nl - js), &a->hdr, err,
                                                sizeof err) != 0)
        return damaged(a, path, "its header line is not JSON", msg, msglen);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(a->hdr, "version");
    if (!cJSON_IsNumber(v) || v->valuedouble != 1) {
        argus__artifact_free(a);
        a->trailer = 1;
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "%s: artifact version is not 1 (made by another Argus: rebuild it)",
                           path);
    }
    argus__part *pt = &a->parts[a->nparts++];
    snprintf(pt->name, sizeof pt->name, "ptx");
    pt->data = a->file;
    pt->len = (size_t)(h - f) + 1;
    /* The other parts, one line each, in the header's order. */
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(a->hdr, "parts");
    const char *line = nl + 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, parts)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bytes");
        if (!cJSON_IsString(n) || !cJSON_IsNumber(b) || strcmp(n->valuestring, "ptx") == 0)
            continue;
        size_t nlen = strlen(n->valuestring);
        const char *lnl = line < end ? memchr(line, '\n', (size_t)(end - line)) : NULL;
        if (a->nparts == ARGUS__MAX_PARTS || nlen >= sizeof pt->name || lnl == NULL ||
            (size_t)(lnl - line) < sizeof PART_LINE - 1 + nlen + 1 ||
            memcmp(line, PART_LINE, sizeof PART_LINE - 1) != 0 ||
            memcmp(line + sizeof PART_LINE - 1, n->valuestring, nlen) != 0 ||
            line[sizeof PART_LINE - 1 + nlen] != ' ')
            return damaged(a, path, "a part named in the header is missing", msg, msglen);
        const char *d = line + sizeof PART_LINE - 1 + nlen + 1;
        argus__part *q = &a->parts[a->nparts];
        if (unbase64(d, (size_t)(lnl - d), (unsigned char **)&q->data, &q->len) != 0)
            return damaged(a, path, "a part is not base64", msg, msglen);
        a->nparts++;
        snprintf(q->name, sizeof q->name, "%s", n->valuestring);
        if ((double)q->len != b->valuedouble)
            return damaged(a, path, "a part's size differs from the header's", msg, msglen);
        line = lnl + 1;
    }
    if (!cJSON_IsArray(parts) || line != end)
        return damaged(a, path, "the trailer does not end with the parts it names", msg, msglen);
    return 0;
}

static int artifact_write(const char *out, cJSON *hdr, const argus__part *parts, size_t n,
                          char *msg, size_t msglen)
{
    cJSON *pa = cJSON_AddArrayToObject(hdr, "parts");
    for (size_t i = 0; pa != NULL && i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", parts[i].name);
        cJSON_AddNumberToObject(e, "bytes", (double)parts[i].len);
        cJSON_AddItemToArray(pa, e);
    }
    char *text = cJSON_PrintUnformatted(hdr);
    if (pa == NULL || text == NULL) {
        cJSON_free(text);
        return ARGUS_ENOMEM;
    }
    FILE *f = fopen(out, "wb");
    if (f == NULL) {
        cJSON_free(text);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot create: %s", out, strerror(errno));
    }
    /* parts[0] is the PTX, as it is; the trailer starts on a line of its own. */
    int ok = fwrite(parts[0].data, 1, parts[0].len, f) == parts[0].len;
    if (parts[0].len > 0 && parts[0].data[parts[0].len - 1] != '\n')
        ok &= fputc('\n', f) == '\n';
    ok &= fprintf(f, "// " ARTIFACT_SCHEMA " %s\n", text) > 0;
    cJSON_free(text);
    for (size_t i = 1; ok && i < n; i++) {
        char *b = argus__base64(parts[i].data, parts[i].len, NULL);
        ok &= b != NULL && fprintf(f, PART_LINE "%s %s\n", parts[i].name, b) > 0;
        free(b);
    }
    ok &= fclose(f) == 0;
    return ok ? 0 : argus__fail(ARGUS_EIO, msg, msglen, "%s: writing the artifact failed", out);
}

/* ---- the compilers ------------------------------------------------------------ */

static int find_in_path(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    while (path != NULL && *path) {
        const char *c = strchr(path, ':');
        size_t n = c ? (size_t)(c - path) : strlen(path);
        int w = snprintf(out, len, "%.*s/%s", (int)n, path, name);
        if (n > 0 && w > 0 && (size_t)w < len && access(out, X_OK) == 0)
            return 0;
        path = c ? c + 1 : NULL;
    }
    return -1;
}

/* nvcc: ARGUS_NVCC, else PATH, else /usr/local/cuda/bin; ptxas beside it. */
static int find_compilers(char *nvcc, char *ptxas, size_t len, char *msg, size_t msglen)
{
    const char *env = getenv("ARGUS_NVCC");
    if (env != NULL && env[0]) {
        if (access(env, X_OK) != 0)
            return argus__fail(ARGUS_EIO, msg, msglen,
                               "no CUDA compiler: ARGUS_NVCC=%s is not an executable (%s); point "
                               "it at the toolkit's nvcc",
                               env, strerror(errno));
        snprintf(nvcc, len, "%s", env);
    } else if (find_in_path("nvcc", nvcc, len) != 0) {
        snprintf(nvcc, len, "/usr/local/cuda/bin/nvcc");
        if (access(nvcc, X_OK) != 0)
            return argus__fail(ARGUS_EIO, msg, msglen,
                               "no CUDA compiler: nvcc is not in PATH nor /usr/local/cuda/bin; "
                               "install the CUDA toolkit or set ARGUS_NVCC");
    }
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s", nvcc);
    int w = snprintf(ptxas, len, "%s/ptxas", dirname(d));
    if (w < 0 || (size_t)w >= len || access(ptxas, X_OK) != 0)
        return argus__fail(ARGUS_EIO, msg, msglen,
                           "no ptxas beside %s: a CUDA toolkit is incomplete; set ARGUS_NVCC to "
                           "a whole toolkit's nvcc",
                           nvcc);
    return 0;
}

/* The architecture a PTX names in its .target line ("sm_90a"), else fb. */
static void ptx_target(const char *ptx, size_t len, const char *fb, char *out, size_t olen)
{
    snprintf(out, olen, "sm_%s", fb);
    const char *p = ptx, *end = ptx + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n > 11 && strncmp(p, ".target sm_", 11) == 0) {
            size_t k = 8;
            while (k < n && (p[k] == '_' || p[k] == 'a' || p[k] == 's' || p[k] == 'm' ||
                             (p[k] >= '0' && p[k] <= '9')))
                k++;
            snprintf(out, olen, "%.*s", (int)(k - 8), p + 8);
            return;
        }
        p += n + 1;
    }
}

typedef struct build {
    char tmp[PATH_MAX], log[PATH_MAX + 16];
    char nvcc[PATH_MAX], ptxas[PATH_MAX];
    double compile_s;
} build;

/* Runs a compiler; a failure quotes the end of its output. */
static int compile(build *b, const char *const *argv, const char *what, char *msg, size_t msglen)
{
    FILE *lf = fopen(b->log, "a");
    if (lf != NULL) {
        fputs("$", lf);
        for (size_t i = 0; argv[i] != NULL; i++)
            fprintf(lf, " %s", argv[i]);
        fputc('\n', lf);
        fclose(lf);
    }
    int st = 0;
    double s = 0;
    char err[512];
    int rc = argus__spawn(argv, NULL, b->log, 600, &st, &s, err, sizeof err);
    b->compile_s += s;
    if (rc != 0)
        return argus__fail(rc, msg, msglen, "%s: %s", what, err);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char how[128], tail[700];
        argus__status_text(st, how, sizeof how);
        argus__log_tail(b->log, tail, sizeof tail);
        return argus__fail(ARGUS_EINVAL, msg, msglen, "%s: %s %s: %s", what, argv[0], how, tail);
    }
    return 0;
}

/* The PTX of the program from its source, with the variant's options. */
static int build_ptx(build *b, const argus__prog *p, int markers, int lineinfo, char *msg,
                     size_t msglen)
{
    char regh[PATH_MAX + 16], ptx[PATH_MAX + 16], arch[32], inc[64][PATH_MAX + 4];
    snprintf(regh, sizeof regh, "%s/registry.cuh", b->tmp);
    snprintf(ptx, sizeof ptx, "%s/variant.ptx", b->tmp);
    snprintf(arch, sizeof arch, "-arch=sm_%s", p->sm);
    const char *argv[96];
    size_t k = 0;
    argv[k++] = b->nvcc;
    argv[k++] = "-std=c++17";
    argv[k++] = arch;
    if (markers) {
        argv[k++] = "-DARGUS_ENABLE";
        argv[k++] = "-include";
        argv[k++] = regh;
    }
    if (lineinfo)
        argv[k++] = "-lineinfo";
    for (size_t i = 0; i < p->ninclude && i < 64; i++) {
        snprintf(inc[i], sizeof inc[i], "-I%s", p->include[i]);
        argv[k++] = inc[i];
    }
    for (size_t i = 0; i < p->nflags && k < 90; i++)
        argv[k++] = p->flags[i];
    argv[k++] = "-ptx";
    argv[k++] = p->source;
    argv[k++] = "-o";
    argv[k++] = ptx;
    argv[k] = NULL;
    if (markers) {
        /* The registry goes into the module (argus registry --embed), so
         * that argus-shim's arming finds the kernel instrumented and the
         * run decodes its buffers by name. */
        char *text = NULL;
        argus_registry *reg = NULL;
        char err[512];
        int rc = mosaic__read_file(p->source, 64 << 20, &text, err, sizeof err);
        if (rc != 0)
            return argus__fail(ARGUS_EIO, msg, msglen, "markers_on: %s", err);
        rc = argus_registry_new(&reg);
        if (rc == 0)
            rc = argus_registry_scan(reg, text, p->source, err, sizeof err);
        if (rc == 0)
            rc = argus_registry_embed(reg, regh, err, sizeof err);
        argus_registry_free(reg);
        free(text);
        if (rc != 0)
            return argus__fail(rc, msg, msglen, "markers_on: the region registry of %s: %s",
                               p->source, err);
    }
    return compile(b, argv, markers ? "markers_on: compiling the source with markers"
                                    : "compiling the source",
                   msg, msglen);
}

static int registry_text(const char *source, char **out, size_t *len, char *msg, size_t msglen)
{
    char *text = NULL, err[512], path[PATH_MAX + 32];
    argus_registry *reg = NULL;
    int rc = mosaic__read_file(source, 64 << 20, &text, err, sizeof err);
    if (rc == 0)
        rc = argus_registry_new(&reg);
    if (rc == 0)
        rc = argus_registry_scan(reg, text, source, err, sizeof err);
    free(text);
    char tmp[PATH_MAX];
    if (rc == 0 && (rc = argus__tmpdir(tmp, sizeof tmp, err, sizeof err)) == 0) {
        snprintf(path, sizeof path, "%s/registry.json", tmp);
        rc = argus_registry_save(reg, path, err, sizeof err);
        unsigned char *b = NULL;
        if (rc == 0 && (rc = argus__read_bin(path, 64 << 20, &b, len, err, sizeof err)) == 0)
            *out = (char *)b;
        argus__rmtree(tmp);
    }
    argus_registry_free(reg);
    return rc == 0 ? 0 : argus__fail(rc, msg, msglen, "the region registry: %s", err);
}

/* ---- a variant ------------------------------------------------------------------ */

static int hdr_bool(const cJSON *h, const char *k)
{
    return h != NULL && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, k));
}

int argus__exec_build(const argus__prog *p, const argus__artifact *parent, const char *tx,
                      const char *variant, uint64_t op, long long iter, const char *out,
                      char *msg, size_t msglen)
{
    const cJSON *ph = parent ? parent->hdr : NULL;
    int markers = hdr_bool(ph, "markers"), lineinfo = hdr_bool(ph, "line_info");
    const cJSON *pprobe = ph ? cJSON_GetObjectItemCaseSensitive(ph, "probe") : NULL;
    int probed = pprobe != NULL && cJSON_IsObject(pprobe);
    int is_probe = tx != NULL && strcmp(tx, "force_completion_probe") == 0;
    char opb[32] = "";
    argus_op_id_format(op, opb, sizeof opb);
    if (tx == NULL) {
        /* the base build */
    } else if (strcmp(tx, "markers_on") == 0) {
        if (markers)
            return argus__fail(ARGUS_EINVAL, msg, msglen, "markers_on: the parent variant has "
                                                          "markers already");
        markers = 1;
    } else if (strcmp(tx, "line_info") == 0) {
        lineinfo = 1;
    } else if (!is_probe) {
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "transform %s: not a transformation argus exec knows (markers_on, "
                           "line_info, force_completion_probe)",
                           tx);
    }
    if (probed && tx != NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "%s: the parent is a probe variant already (one forced wait per "
                           "variant: make every probe from the marked variant)",
                           tx);
    if (is_probe && (parent == NULL || argus__artifact_part(parent, "ptx") == NULL))
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "force_completion_probe of op %s: the parent must be a built variant "
                           "with PTX (the plan makes probes from the marked variant)",
                           opb);
    if (is_probe && (iter < 0 || iter > 0xffffffffLL))
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "force_completion_probe of op %s: iteration %lld is not an execution "
                           "index (0 to 2^32-1)",
                           opb, iter);
    if (!is_probe && p->source[0] == '\0' && (markers || lineinfo) && tx != NULL &&
        strcmp(tx, "markers_on") != 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "%s: needs the program's CUDA source (the description gives only "
                           "PTX)",
                           tx);
    build b;
    memset(&b, 0, sizeof b);
    int rc = find_compilers(b.nvcc, b.ptxas, sizeof b.nvcc, msg, msglen);
    if (rc != 0) {
        if (tx != NULL) {
            char m2[1024];
            snprintf(m2, sizeof m2, "%s", msg);
            argus__fail(rc, msg, msglen, "%s%s%s: %s", tx, is_probe ? " of op " : "",
                        is_probe ? opb : "", m2);
        }
        return rc;
    }
    if ((rc = argus__tmpdir(b.tmp, sizeof b.tmp, msg, msglen)) != 0)
        return rc;
    snprintf(b.log, sizeof b.log, "%s/build.log", b.tmp);
    double t0 = now_s();
    unsigned char *ptx = NULL, *cubin = NULL, *logb = NULL;
    char *regtext = NULL;
    size_t ptx_len = 0, cubin_len = 0, log_len = 0, reg_len = 0;
    char ptxpath[PATH_MAX + 16], cubinpath[PATH_MAX + 16], target[32];
    snprintf(ptxpath, sizeof ptxpath, "%s/variant.ptx", b.tmp);
    snprintf(cubinpath, sizeof cubinpath, "%s/variant.cubin", b.tmp);
    cJSON *probe = NULL;
    if (is_probe) {
        const argus__part *pp = argus__artifact_part(parent, "ptx");
        argus_discovery *d = NULL;
        char err[1024];
        size_t vlen = 0;
        char *vptx = NULL;
        rc = argus_discover_ptx((const char *)pp->data, pp->len, &d, err, sizeof err);
        if (rc == 0)
            rc = argus_probe_ptx((const char *)pp->data, pp->len, d, op, (uint32_t)iter, &vptx,
                                 &vlen, err, sizeof err);
        if (rc == 0) {
            long k = argus_discovery_find(d, op);
            probe = cJSON_CreateObject();
            cJSON_AddStringToObject(probe, "op", opb);
            cJSON_AddNumberToObject(probe, "iter", (double)iter);
            cJSON_AddStringToObject(probe, "kind", argus_async_kind_name(d->ops[k].kind));
            cJSON_AddStringToObject(probe, "function", d->ops[k].function);
            cJSON_AddNumberToObject(probe, "ptx_line", d->ops[k].line);
            cJSON_AddBoolToObject(probe, "in_loop", d->ops[k].in_loop);
            cJSON_AddStringToObject(probe, "forced_wait", argus_async_forced(d->ops[k].kind));
            ptx = (unsigned char *)vptx;
            ptx_len = vlen;
        } else {
            free(vptx);
        }
        argus_discovery_free(d);
        if (rc != 0)
            argus__fail(rc, msg, msglen,
                        "force_completion_probe of op %s at iteration %lld (variant %s): %s", opb,
                        iter, variant, err);
        else
            rc = write_bin(ptxpath, ptx, ptx_len, msg, msglen);
        if (rc == 0) {
            const argus__part *rp = argus__artifact_part(parent, "registry");
            if (rp != NULL && (regtext = malloc(rp->len + 1)) != NULL) {
                memcpy(regtext, rp->data, rp->len);
                reg_len = rp->len;
            }
        }
    } else if (p->source[0] != '\0') {
        rc = build_ptx(&b, p, markers, lineinfo, msg, msglen);
        if (rc == 0)
            rc = argus__read_bin(ptxpath, EXEC_MAX_INPUT, &ptx, &ptx_len, msg, msglen);
        if (rc == 0 && markers)
            rc = registry_text(p->source, &regtext, &reg_len, msg, msglen);
    } else {
        /* A PTX program: as it is; markers_on only checks it has them. */
        rc = argus__read_bin(p->ptx, EXEC_MAX_INPUT, &ptx, &ptx_len, msg, msglen);
        argus_discovery *d = NULL;
        char err[512];
        if (rc == 0 && markers &&
            (argus_discover_ptx((const char *)ptx, ptx_len, &d, err, sizeof err) != 0 ||
             d->n_markers == 0))
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "markers_on: %s has no Argus markers and the description gives no "
                             "source to build them from (build the PTX with -DARGUS_ENABLE, or "
                             "give \"source\")",
                             p->ptx);
        argus_discovery_free(d);
        if (rc == 0 && markers && p->registry[0] != '\0')
            rc = argus__read_bin(p->registry, 64 << 20, (unsigned char **)&regtext, &reg_len, msg,
                                 msglen);
        if (rc == 0)
            rc = write_bin(ptxpath, ptx, ptx_len, msg, msglen);
    }
    if (rc == 0) {
        ptx_target((const char *)ptx, ptx_len, p->sm, target, sizeof target);
        char arch[48];
        snprintf(arch, sizeof arch, "-arch=%s", target);
        const char *argv[] = {b.ptxas, arch, lineinfo ? "-lineinfo" : "-O3", ptxpath, "-o",
                              cubinpath, NULL};
        char what[160];
        if (is_probe)
            snprintf(what, sizeof what, "force_completion_probe of op %s at iteration %lld: "
                                        "ptxas on the probe variant",
                     opb, iter);
        else
            snprintf(what, sizeof what, "%s: ptxas", tx ? tx : "the base build");
        rc = compile(&b, argv, what, msg, msglen);
    }
    if (rc == 0)
        rc = argus__read_bin(cubinpath, EXEC_MAX_INPUT, &cubin, &cubin_len, msg, msglen);
    if (rc == 0)
        rc = argus__read_bin(b.log, EXEC_MAX_INPUT, &logb, &log_len, msg, msglen);
    if (rc == 0) {
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "schema", ARTIFACT_SCHEMA);
        cJSON_AddNumberToObject(h, "version", 1);
        cJSON_AddStringToObject(h, "variant", variant);
        cJSON_AddStringToObject(h, "program", p->path);
        cJSON_AddStringToObject(h, "built_from", is_probe ? "parent_ptx"
                                                 : p->source[0] ? "source"
                                                                : "ptx");
        char hex[ARGUS_HASH_HEX];
        if (parent != NULL) {
            argus_sha256_hex(parent->file, parent->flen, hex);
            cJSON_AddStringToObject(h, "parent_sha256", hex);
        } else {
            cJSON_AddNullToObject(h, "parent_sha256");
        }
        cJSON *txs = cJSON_AddArrayToObject(h, "transforms");
        const cJSON *ptxs = ph ? cJSON_GetObjectItemCaseSensitive(ph, "transforms") : NULL;
        const cJSON *e;
        cJSON_ArrayForEach(e, ptxs) cJSON_AddItemToArray(txs, cJSON_Duplicate(e, 1));
        if (tx != NULL)
            cJSON_AddItemToArray(txs, cJSON_CreateString(tx));
        cJSON_AddBoolToObject(h, "markers", markers);
        cJSON_AddBoolToObject(h, "line_info", lineinfo);
        if (probe != NULL) {
            cJSON_AddItemToObject(h, "probe", probe);
            probe = NULL;
        } else {
            cJSON_AddNullToObject(h, "probe");
        }
        cJSON_AddStringToObject(h, "target", target);
        cJSON_AddStringToObject(h, "nvcc", b.nvcc);
        cJSON_AddStringToObject(h, "ptxas", b.ptxas);
        cJSON_AddNumberToObject(h, "build_s", now_s() - t0);
        cJSON_AddNumberToObject(h, "compile_s", b.compile_s);
        argus__part parts[4];
        size_t np = 0;
        parts[np++] = (argus__part){.name = "ptx", .data = ptx, .len = ptx_len};
        parts[np++] = (argus__part){.name = "cubin", .data = cubin, .len = cubin_len};
        if (regtext != NULL)
            parts[np++] =
                (argus__part){.name = "registry", .data = (unsigned char *)regtext, .len = reg_len};
        parts[np++] = (argus__part){.name = "build_log", .data = logb, .len = log_len};
        rc = artifact_write(out, h, parts, np, msg, msglen);
        cJSON_Delete(h);
    }
    cJSON_Delete(probe);
    free(ptx);
    free(cubin);
    free(logb);
    free(regtext);
    argus__rmtree(b.tmp);
    return rc;
}

/* ---- the CLI ---------------------------------------------------------------------- */

static void exec_usage(FILE *f)
{
    fputs("usage: argus exec transform TX VARIANT PARENT OP ITER OUT\n"
          "       argus exec run [--metrics BACKEND=a,b]... VARIANT BACKENDS ARTIFACT OUT...\n"
          "       argus exec show ARTIFACT [PART]\n"
          "       argus exec discover ARTIFACT\n"
          "The executor of argus query --run --executor \"argus exec\" (docs/argus-plan.md,\n"
          "\"The executor\"). PARENT and ARTIFACT are a program description\n"
          "(argus.exec.program v1) for the program as given, else a variant artifact\n"
          "(argus.exec.artifact v1) that transform wrote; TX is markers_on, line_info or\n"
          "force_completion_probe (OP \"0x23ce102.0\", ITER the execution); BACKENDS a comma\n"
          "list, one OUT (its evidence, argus.evidence v1) per backend.\n",
          f);
}

/* PARENT as an artifact, or (the program as given) as a description. */
static int load_parent(const char *path, argus__prog *p, argus__artifact *a, int *have_a,
                       char *msg, size_t msglen)
{
    *have_a = 0;
    char m1[1024];
    int rc = argus__artifact_load(path, a, m1, sizeof m1);
    if (rc == ARGUS_EIO || (rc != 0 && a->trailer))
        return argus__fail(rc, msg, msglen, "%s", m1);
    if (rc == 0) {
        *have_a = 1;
        const cJSON *prog = cJSON_GetObjectItemCaseSensitive(a->hdr, "program");
        if (!cJSON_IsString(prog)) {
            argus__artifact_free(a);
            *have_a = 0;
            return argus__fail(ARGUS_EINVAL, msg, msglen, "%s: the artifact names no program",
                               path);
        }
        rc = argus__prog_load(prog->valuestring, p, msg, msglen);
        if (rc != 0) {
            argus__artifact_free(a);
            *have_a = 0;
        }
        return rc;
    }
    char m2[1024];
    rc = argus__prog_load(path, p, m2, sizeof m2);
    if (rc != 0) {
        /* Say both: a variant artifact cut short reads as neither. */
        const char *pfx = strstr(m2, path) == m2 ? m2 + strlen(path) : m2;
        argus__fail(rc, msg, msglen,
                    "%s: not a variant artifact (no \"// " ARTIFACT_SCHEMA "\" trailer: one cut "
                    "short?) and not a program description%s",
                    path, pfx);
    }
    return rc;
}

static int cmd_transform(int argc, char **argv)
{
    if (argc != 8) {
        exec_usage(stderr);
        return 2;
    }
    const char *tx = argv[2], *variant = argv[3], *parent = argv[4], *ops = argv[5],
               *its = argv[6], *out = argv[7];
    char msg[2048] = "";
    argus__prog p;
    argus__artifact a;
    int have_a = 0;
    uint64_t op = 0;
    long long iter = -1;
    if (strcmp(tx, "force_completion_probe") == 0) {
        char *end;
        errno = 0;
        iter = strtoll(its, &end, 10);
        if (argus_op_id_parse(ops, &op) != 0 || errno || *end != '\0' || end == its) {
            fprintf(stderr,
                    "argus exec: transform %s: op \"%s\" and iteration \"%s\": expected an "
                    "operation ID as discovery prints it (0x23ce102.0) and a whole number\n",
                    variant, ops, its);
            return 2;
        }
    }
    int rc = load_parent(parent, &p, &a, &have_a, msg, sizeof msg);
    if (rc == 0) {
        rc = argus__exec_build(&p, have_a ? &a : NULL, tx, variant, op, iter, out, msg,
                               sizeof msg);
        argus__prog_free(&p);
        if (have_a)
            argus__artifact_free(&a);
    }
    if (rc != 0) {
        fprintf(stderr, "argus exec: transform %s (%s): %s\n", variant, tx, msg);
        return 1;
    }
    return 0;
}

/* The artifact a show or discover command names, or an exit status. */
static int open_artifact(int argc, char **argv, int lo, int hi, argus__artifact *a)
{
    if (argc < lo || argc > hi) {
        exec_usage(stderr);
        return 2;
    }
    char msg[1024];
    if (argus__artifact_load(argv[2], a, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus exec: %s\n", msg);
        return 1;
    }
    return 0;
}

static int cmd_show(int argc, char **argv)
{
    argus__artifact a;
    int st = open_artifact(argc, argv, 3, 4, &a);
    if (st != 0)
        return st;
    int rc = 0;
    if (argc == 3) {
        char *t = cJSON_Print(a.hdr);
        if (t != NULL)
            puts(t);
        cJSON_free(t);
    } else {
        const argus__part *pt = argus__artifact_part(&a, argv[3]);
        if (pt == NULL) {
            fprintf(stderr, "argus exec: %s has no part \"%s\"; it has:", argv[2], argv[3]);
            for (size_t i = 0; i < a.nparts; i++)
                fprintf(stderr, " %s", a.parts[i].name);
            fputc('\n', stderr);
            rc = 1;
        } else if (fwrite(pt->data, 1, pt->len, stdout) != pt->len) {
            rc = 1;
        }
    }
    argus__artifact_free(&a);
    return rc;
}

static int cmd_discover(int argc, char **argv)
{
    argus__artifact a;
    int st = open_artifact(argc, argv, 3, 3, &a);
    if (st != 0)
        return st;
    char msg[1024];
    const argus__part *pt = argus__artifact_part(&a, "ptx");
    argus_discovery *d = NULL;
    int rc = pt ? argus_discover_ptx((const char *)pt->data, pt->len, &d, msg, sizeof msg)
                : argus__fail(ARGUS_EINVAL, msg, sizeof msg, "the artifact has no PTX");
    if (rc != 0) {
        fprintf(stderr, "argus exec: discover %s: %s\n", argv[2], msg);
        argus__artifact_free(&a);
        return 1;
    }
    /* The shape argus plan --discovered reads, with where each one is. */
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < d->n_ops; i++) {
        const argus_async_op *o = &d->ops[i];
        char id[32];
        argus_op_id_format(o->id, id, sizeof id);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "id", id);
        cJSON_AddStringToObject(e, "kind", argus_async_kind_name(o->kind));
        cJSON_AddStringToObject(e, "completion", argus_async_completion(o->kind));
        cJSON_AddBoolToObject(e, "in_loop", o->in_loop);
        cJSON_AddStringToObject(e, "function", o->function);
        cJSON_AddNumberToObject(e, "ptx_line", o->line);
        cJSON_AddItemToArray(arr, e);
    }
    char *t = cJSON_Print(arr);
    if (t != NULL)
        puts(t);
    cJSON_free(t);
    cJSON_Delete(arr);
    argus_discovery_free(d);
    argus__artifact_free(&a);
    return 0;
}

int argus__exec_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        exec_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "transform") == 0)
        return cmd_transform(argc, argv);
    if (strcmp(argv[1], "run") == 0)
        return argus__exec_run(argc, argv);
    if (strcmp(argv[1], "show") == 0)
        return cmd_show(argc, argv);
    if (strcmp(argv[1], "discover") == 0)
        return cmd_discover(argc, argv);
    fprintf(stderr, "argus exec: unknown command \"%s\"\n", argv[1]);
    exec_usage(stderr);
    return 2;
}
