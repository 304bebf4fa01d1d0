/*
 * The shim's statistics: counters kept on the launch path, and the JSON
 * object (schema "mosaic-stats/1", docs/shim-stats.md) written at exit to
 * MOSAIC_STATS and returned by mosaic_shim_stats_json().
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "sched_link.h"
#include "mosaic/shim.h"

struct mosaic__counters mosaic__ctr[MOSAIC__SHARDS];

uint64_t mosaic__ctr_sum(size_t off)
{
    uint64_t n = 0;

    for (int s = 0; s < MOSAIC__SHARDS; s++)
        n += atomic_load_explicit(
            (_Atomic uint64_t *)((char *)&mosaic__ctr[s] + off),
            memory_order_relaxed);
    return n;
}
pthread_mutex_t mosaic__stats_lock = PTHREAD_MUTEX_INITIALIZER;

struct name_count {
    const char *name;
    uint64_t launches, graph, captured;
};

struct gather {
    struct name_count *v;
    size_t n, cap;
    int failed;
};

static void clear_snap(struct mosaic__kernel *k, void *arg)
{
    (void)arg;
    k->snap = 0;
}

static int active(struct mosaic__kernel *k)
{
    return mosaic__kernel_launches(k) || mosaic__kernel_captured(k) ||
           atomic_load(&k->graph_runs) || k->snap;
}

static void gather_one(struct mosaic__kernel *k, void *arg)
{
    struct gather *g = arg;

    if (!active(k))
        return;
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        struct name_count *nv = realloc(g->v, cap * sizeof(*nv));
        if (!nv) {
            g->failed = 1;
            return;
        }
        g->v = nv;
        g->cap = cap;
    }
    g->v[g->n++] = (struct name_count){
        .name = k->name,
        .launches = mosaic__kernel_launches(k),
        .graph = atomic_load(&k->graph_runs) + k->snap,
        .captured = mosaic__kernel_captured(k),
    };
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct name_count *)a)->name,
                  ((const struct name_count *)b)->name);
}

/* Sorts by name and merges entries of one name (several handles, e.g. one
 * per context, can share a kernel's name). */
static void merge_names(struct gather *g)
{
    size_t out = 0;

    if (g->n > 1)
        qsort(g->v, g->n, sizeof(*g->v), by_name);
    for (size_t i = 0; i < g->n; i++) {
        if (out > 0 && strcmp(g->v[out - 1].name, g->v[i].name) == 0) {
            g->v[out - 1].launches += g->v[i].launches;
            g->v[out - 1].graph += g->v[i].graph;
            g->v[out - 1].captured += g->v[i].captured;
        } else {
            g->v[out++] = g->v[i];
        }
    }
    g->n = out;
}

static void write_names(FILE *f, const char *key, const struct gather *g,
                        size_t field)
{
    int first = 1;

    fprintf(f, ",\n  \"%s\": {", key);
    for (size_t i = 0; i < g->n; i++) {
        uint64_t v = *(const uint64_t *)((const char *)&g->v[i] + field);
        if (!v)
            continue;
        fputs(first ? "\n    " : ",\n    ", f);
        mosaic__json_fputs(f, g->v[i].name);
        fprintf(f, ": %llu", (unsigned long long)v);
        first = 0;
    }
    fputs(first ? "}" : "\n  }", f);
}

static void write_entries(FILE *f, const char *key, int want_graph,
                          uint64_t *total)
{
    int first = 1;

    fprintf(f, ",\n  \"%s\": {", key);
    *total = 0;
    for (int i = 0; i < MOSAIC__HOOK_COUNT; i++) {
        int is_graph = strncmp(mosaic__hook_names[i], "cuGraphLaunch", 13) == 0;
        uint64_t v;
        if (!(want_graph ? is_graph : mosaic__hook_is_launch[i]))
            continue;
        v = mosaic__ctr_sum(offsetof(struct mosaic__counters, launches) +
                            (size_t)i * sizeof(mosaic__ctr[0].launches[0]));
        fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", mosaic__hook_names[i],
                (unsigned long long)v);
        *total += v;
        first = 0;
    }
    fputc('}', f);
}

struct info_arg {
    FILE *f;
    int first;
};

/* Identity and launch configurations of each kernel handle that ran. */
static void write_info(struct mosaic__kernel *k, void *arg)
{
    struct info_arg *a = arg;
    FILE *f = a->f;
    int first_cfg = 1;

    if (!active(k))
        return;
    fputs(a->first ? "\n    {\"name\": " : ",\n    {\"name\": ", f);
    a->first = 0;
    mosaic__json_fputs(f, k->name);
    fprintf(f,
            ", \"kind\": \"%s\", \"regs\": %d, \"static_smem\": %d, "
            "\"max_threads\": %d, \"local_bytes\": %d, \"configs\": [",
            k->kind == MOSAIC__KIND_KERNEL ? "CUkernel" : "CUfunction",
            k->num_regs, k->static_smem, k->max_threads, k->local_bytes);
    for (int i = 0; i < MOSAIC__KERNEL_CONFIGS; i++) {
        const struct mosaic__config_count *c = &k->configs[i];
        if (atomic_load(&c->state) != 2)
            continue;
        fprintf(f,
                "%s{\"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], "
                "\"dyn_smem\": %u, \"launches\": %llu}",
                first_cfg ? "" : ", ", c->grid[0], c->grid[1], c->grid[2],
                c->block[0], c->block[1], c->block[2], c->dyn_smem,
                (unsigned long long)mosaic__kernel_config_launches(k, i));
        first_cfg = 0;
    }
    fprintf(f, "], \"other_config_launches\": %llu}",
            (unsigned long long)mosaic__kernel_other_launches(k));
}

int mosaic__stats_write(FILE *f)
{
    struct gather g = {0};
    uint64_t live_graph, total, graph_total, doorbells, dropped, conns;

    pthread_mutex_lock(&mosaic__stats_lock);
    mosaic__kernel_foreach(clear_snap, NULL);
    live_graph = mosaic__graph_snapshot();
    mosaic__sched_client_counts(&doorbells, &dropped, &conns);
    mosaic__kernel_foreach(gather_one, &g);
    merge_names(&g);

    fprintf(f, "{\n  \"schema\": \"mosaic-stats/1\",\n  \"pid\": %d,\n"
               "  \"mode\": \"%s\",\n  \"role\": \"%s\"",
            (int)getpid(), mosaic__mode_name(mosaic__cfg.mode),
            mosaic__role_name(mosaic__cfg.role));
    write_entries(f, "launches", 0, &total);
    fprintf(f, ",\n  \"launches_total\": %llu", (unsigned long long)total);
    write_entries(f, "graph_launches_by_entry", 1, &graph_total);
    fprintf(f,
            ",\n  \"captured_launches\": %llu,\n  \"graph_launches\": %llu,"
            "\n  \"graph_kernel_launches\": %llu,"
            "\n  \"graph_launches_unknown\": %llu",
            MOSAIC__CTR(captured_launches), MOSAIC__CTR(graph_launches),
            MOSAIC__CTR(graph_kernel_launches) + (unsigned long long)live_graph,
            MOSAIC__CTR(graph_launches_unknown));
    write_names(f, "kernels", &g, offsetof(struct name_count, launches));
    write_names(f, "graph_kernels", &g, offsetof(struct name_count, graph));
    write_names(f, "captured_kernels", &g,
                offsetof(struct name_count, captured));
    {
        struct info_arg ia = {f, 1};
        fputs(",\n  \"kernel_info\": [", f);
        mosaic__kernel_foreach(write_info, &ia);
        fputs(ia.first ? "]" : "\n  ]", f);
    }
    fprintf(f,
            ",\n  \"distinct_kernels\": %zu,\n  \"launch_errors\": %llu,"
            "\n  \"errors\": %llu,\n  \"unmatched_lookups\": %llu,"
            "\n  \"name_matched_lookups\": %llu,"
            "\n  \"be_gated_device\": %llu,\n  \"be_held_host\": %llu,"
            "\n  \"be_gate_fallbacks\": %llu,\n  \"be_gate_loads\": %llu,"
            "\n  \"hp_completion_writes\": %llu,"
            "\n  \"sched_connections\": %llu,\n  \"sched_doorbells\": %llu,"
            "\n  \"sched_dropped\": %llu\n}\n",
            g.n, MOSAIC__CTR(launch_errors), MOSAIC__CTR(errors) + g.failed,
            MOSAIC__CTR(unmatched_lookups), MOSAIC__CTR(name_matched_lookups),
            MOSAIC__CTR(be_gated_device), MOSAIC__CTR(be_held_host),
            MOSAIC__CTR(be_gate_fallbacks), MOSAIC__CTR(be_gate_loads),
            MOSAIC__CTR(hp_completion_writes), (unsigned long long)conns,
            (unsigned long long)doorbells,
            (unsigned long long)dropped);
    pthread_mutex_unlock(&mosaic__stats_lock);
    free(g.v);
    return ferror(f) ? MOSAIC_EIO : 0;
}

/* Expands %p to the pid and %% to %; other characters stay. */
static int expand_path(const char *tmpl, char *out, size_t len)
{
    size_t o = 0;

    for (const char *p = tmpl; *p; p++) {
        char pid[24];
        const char *add = NULL;
        char one[2] = {*p, 0};
        if (p[0] == '%' && p[1] == 'p') {
            snprintf(pid, sizeof(pid), "%d", (int)getpid());
            add = pid;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            add = "%";
            p++;
        } else {
            add = one;
        }
        if (o + strlen(add) >= len)
            return MOSAIC_ERANGE;
        memcpy(out + o, add, strlen(add));
        o += strlen(add);
    }
    out[o] = '\0';
    return 0;
}

/* Says why the stats file was not written, naming the file and the fix.
 * Like the other stats-file failures it is printed whatever MOSAIC_LOG
 * says: the user asked for a file and would otherwise find none. */
static void refuse(const char *path, const char *why, const char *fix)
{
    char msg[4096 + 512];

    if (snprintf(msg, sizeof(msg), "mosaic: MOSAIC_STATS file '%s' %s; %s\n",
                 path, why, fix) < 0)
        return;
    mosaic__say(msg);
}

/*
 * Whether the target may be replaced: absent, or a regular file this
 * process's user owns. A device node, a FIFO, a directory, a symbolic link
 * (whose target would be what an attacker chose) or someone else's file is
 * refused. Returns 1 when it may, 0 after saying why not.
 */
static int target_replaceable(int dirfd, const char *base, const char *path)
{
    struct stat st;

    if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return 1;
        refuse(path, strerror(errno), "nothing was written");
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        refuse(path, "is a symbolic link and is not replaced",
               "name the file itself, not a link to it");
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        refuse(path, "is not a regular file (a device, FIFO, socket or "
                     "directory) and is not replaced",
               "name a regular file or a path that does not exist yet");
        return 0;
    }
    if (st.st_uid != geteuid()) {
        refuse(path, "belongs to another user and is not replaced",
               "name a file of your own, or a new path");
        return 0;
    }
    return 1;
}

/*
 * Creates the temporary file beside the target with a name nobody can
 * plant in advance: a random suffix from getrandom(), O_EXCL so an existing
 * name (a planted file or link) is never opened, O_NOFOLLOW for good
 * measure, mode 0600 so no other user reads counts before the rename.
 * Returns the descriptor, or -1 with errno set.
 */
static int create_temp(int dirfd, const char *base, char *name, size_t len)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";

    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned char rnd[12];
        char suffix[sizeof(rnd) + 1];
        int fd, n;

        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
            return -1;
        for (size_t i = 0; i < sizeof(rnd); i++)
            suffix[i] = digits[rnd[i] % (sizeof(digits) - 1)];
        suffix[sizeof(rnd)] = '\0';
        n = snprintf(name, len, ".%s.%s.tmp", base, suffix);
        if (n < 0 || (size_t)n >= len) {
            errno = ENAMETOOLONG;
            return -1;
        }
        fd = openat(dirfd, name,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* Whether this process ever had the driver loaded: a wrapper (a shell,
 * timeout, a Python launcher) that never did has nothing to report and must
 * not replace the file of the child it started. */
static int driver_was_loaded(void)
{
    void *h;

    if (atomic_load_explicit(&mosaic__bound, memory_order_acquire))
        return 1;
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

void mosaic__stats_dump(void)
{
    char path[4096], dir[4096], tmp[NAME_MAX + 64];
    const char *base, *slash;
    int saved = errno, dirfd, fd, rc;
    FILE *f;

    if (!driver_was_loaded() ||
        expand_path(mosaic__cfg.stats_path, path, sizeof(path)) != 0)
        goto out;
    slash = strrchr(path, '/');
    if (slash) {
        size_t dl = slash == path ? 1 : (size_t)(slash - path);
        memcpy(dir, path, dl);
        dir[dl] = '\0';
        base = slash + 1;
    } else {
        strcpy(dir, ".");
        base = path;
    }
    if (!base[0] || strlen(base) > NAME_MAX) {
        refuse(path, "does not end in a file name of 1 to 255 bytes",
               "name a file, not a directory");
        goto out;
    }
    /* Everything below is relative to one descriptor of the directory, so
     * the checks and the rename see the same directory even if its path is
     * changed meanwhile. */
    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        char why[256];
        if (snprintf(why, sizeof(why), "cannot be written: %s",
                     strerror(errno)) < 0)
            why[0] = '\0';
        refuse(path, why, "check that its directory exists and is writable");
        goto out;
    }
    if (!target_replaceable(dirfd, base, path))
        goto close_dir;
    fd = create_temp(dirfd, base, tmp, sizeof(tmp));
    f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        char why[256];
        if (snprintf(why, sizeof(why), "cannot be written: %s",
                     strerror(errno)) < 0)
            why[0] = '\0';
        refuse(path, why, "check that its directory exists and is writable");
        if (fd >= 0) {
            close(fd);
            unlinkat(dirfd, tmp, 0);
        }
        goto close_dir;
    }
    rc = mosaic__stats_write(f);
    if (fclose(f) != 0 || rc != 0) {
        refuse(path, "could not be written in full", "check free space");
        unlinkat(dirfd, tmp, 0);
        goto close_dir;
    }
    /* Checked again just before the rename: the target may have been
     * replaced by a link or a device while the counts were written. */
    if (!target_replaceable(dirfd, base, path)) {
        unlinkat(dirfd, tmp, 0);
    } else if (renameat(dirfd, tmp, dirfd, base) != 0) {
        char why[256];
        if (snprintf(why, sizeof(why), "could not be put in place: %s",
                     strerror(errno)) < 0)
            why[0] = '\0';
        refuse(path, why, "check that its directory is writable");
        unlinkat(dirfd, tmp, 0);
    }
close_dir:
    close(dirfd);
out:
    errno = saved;
}

static void reset_kernel(struct mosaic__kernel *k, void *arg)
{
    (void)arg;
    for (int i = 0; i < MOSAIC__KERNEL_CONFIGS; i++)
        atomic_store(&k->configs[i].state, 0);
    memset(k->shard, 0, sizeof(k->shard));
    atomic_store(&k->graph_runs, 0);
}

void mosaic__stats_reset(void)
{
    memset(mosaic__ctr, 0, sizeof(mosaic__ctr));
    mosaic__kernel_foreach(reset_kernel, NULL);
    mosaic__graph_reset_counts();
}

MOSAIC__EXPORT int mosaic_shim_stats_json(char *buf, size_t len)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f;
    int rc;

    if (!buf || len == 0)
        return MOSAIC_EINVAL;
    f = open_memstream(&text, &n);
    if (!f)
        return MOSAIC_ENOMEM;
    rc = mosaic__stats_write(f);
    if (fclose(f) != 0 && rc == 0)
        rc = MOSAIC_ENOMEM;
    if (rc == 0 && n + 1 > len)
        rc = MOSAIC_ERANGE;
    if (rc == 0) {
        memcpy(buf, text, n + 1);
        rc = (int)n;
    }
    free(text);
    return rc;
}
