/*
 * cupti_count: a CUPTI injection library that counts kernel executions.
 *
 * Loaded by the CUDA driver through CUDA_INJECTION64_PATH, which calls
 * InitializeInjection() once during cuInit. It enables
 * CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, counts every kernel activity record
 * (one per executed kernel, graph-node kernels included; launches recorded
 * under stream capture execute nothing and produce no record), and at process
 * exit writes JSON to the path in $CUPTI_COUNT_OUT ("%p" becomes the pid):
 *
 *   {"schema":"cupti-count/1","pid":N,
 *    "kernels_total":N,          every kernel record
 *    "graph_kernels":N,          records with graphId != 0
 *    "device_launched":N,        records with isDeviceLaunched (CDP)
 *    "cooperative":N,            launchType cooperative (single or multi)
 *    "cluster":N,                records with clusterX*Y*Z > 1
 *    "no_timestamp":N,           records with start == 0 (device buffer full)
 *    "incomplete":N,             buffers that ended on an invalid record
 *    "other_records":N,          records of any other kind (should be 0)
 *    "dropped":N,                cuptiActivityGetNumDroppedRecords, summed
 *    "errors":N,                 CUPTI calls that failed
 *    "kernels":{"name":N,...},   per kernel name (mangled, as CUPTI gives it)
 *    "graph_kernels_by_name":{"name":N,...}}
 *
 * Build (C only):
 *   gcc -shared -fPIC -O2 -I/usr/local/cuda/include -o libcupti_count.so \
 *       cupti_count.c -L<cupti dir> -lcupti -Wl,-rpath,<cupti dir> -lpthread
 *
 * Record layout: CUDA 13.0's cupti_activity.h documents
 * CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL records as CUpti_ActivityKernel10.
 * Only kind/name/graphId/start/launchType/clusterX,Y,Z/isDeviceLaunched
 * are read.
 */
#define _GNU_SOURCE
#include <cupti.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The project's one JSON string writer (core/json.c, compiled in). */
#include "json.h"

#define CC_EXPORT __attribute__((visibility("default")))

/* CUPTI's kernel record for this toolkit (CUDA 13.0). */
typedef CUpti_ActivityKernel10 cc_kernel_record;

#define CC_BUF_SIZE  (8u * 1024u * 1024u)
#define CC_BUF_ALIGN 8u

struct cc_entry {
    char *name;       /* NULL: empty slot */
    uint64_t hash;
    uint64_t count;
    uint64_t graph_count;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cc_entry *g_tab;
static size_t g_cap;  /* power of two */
static size_t g_used;

static uint64_t g_total, g_graph, g_devlaunch, g_coop, g_cluster, g_nots;
static uint64_t g_incomplete, g_other, g_dropped, g_errors, g_oom;
static uint64_t g_written_total = UINT64_MAX; /* g_total at last write */
static int g_initialized;
static int g_finished; /* atexit handler ran */

#define CC_CHECK(call)                                                        \
    do {                                                                      \
        CUptiResult cc_r_ = (call);                                           \
        if (cc_r_ != CUPTI_SUCCESS) {                                         \
            const char *cc_s_ = NULL;                                         \
            cuptiGetResultString(cc_r_, &cc_s_);                              \
            fprintf(stderr, "[cupti_count] %s failed: %d (%s)\n", #call,      \
                    (int)cc_r_, cc_s_ ? cc_s_ : "?");                         \
            __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);               \
        }                                                                     \
    } while (0)

static uint64_t cc_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static int cc_grow(void)
{
    size_t ncap = g_cap ? g_cap * 2 : 1024;
    struct cc_entry *nt = calloc(ncap, sizeof(*nt));
    if (!nt)
        return -1;
    for (size_t i = 0; i < g_cap; i++) {
        if (!g_tab[i].name)
            continue;
        size_t j = (size_t)g_tab[i].hash & (ncap - 1);
        while (nt[j].name)
            j = (j + 1) & (ncap - 1);
        nt[j] = g_tab[i];
    }
    free(g_tab);
    g_tab = nt;
    g_cap = ncap;
    return 0;
}

/* Caller holds g_lock. */
static void cc_count_name(const char *name, int is_graph)
{
    if (!name)
        name = "<null>";
    if ((g_used + 1) * 2 > g_cap && cc_grow() != 0) {
        g_oom++;
        return;
    }
    uint64_t h = cc_hash(name);
    size_t j = (size_t)h & (g_cap - 1);
    while (g_tab[j].name) {
        if (g_tab[j].hash == h && strcmp(g_tab[j].name, name) == 0)
            break;
        j = (j + 1) & (g_cap - 1);
    }
    if (!g_tab[j].name) {
        char *copy = strdup(name);
        if (!copy) {
            g_oom++;
            return;
        }
        g_tab[j].name = copy;
        g_tab[j].hash = h;
        g_used++;
    }
    g_tab[j].count++;
    if (is_graph)
        g_tab[j].graph_count++;
}

static void CUPTIAPI cc_buffer_requested(uint8_t **buffer, size_t *size,
                                         size_t *max_records)
{
    void *p = NULL;
    if (posix_memalign(&p, CC_BUF_ALIGN, CC_BUF_SIZE) != 0)
        p = NULL;
    *buffer = p;
    *size = p ? CC_BUF_SIZE : 0;
    *max_records = 0;
}

static void CUPTIAPI cc_buffer_completed(CUcontext ctx, uint32_t stream_id,
                                         uint8_t *buffer, size_t size,
                                         size_t valid)
{
    (void)size;
    pthread_mutex_lock(&g_lock);
    if (buffer && valid > 0) {
        CUpti_Activity *rec = NULL;
        for (;;) {
            CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
            if (r == CUPTI_ERROR_MAX_LIMIT_REACHED)
                break;
            if (r != CUPTI_SUCCESS) {
                /* CUPTI_ERROR_INVALID_KIND: incomplete/invalid record. */
                g_incomplete++;
                break;
            }
            if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
                rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
                const cc_kernel_record *k = (const cc_kernel_record *)rec;
                int is_graph = k->graphId != 0;
                g_total++;
                if (is_graph)
                    g_graph++;
                if (k->isDeviceLaunched)
                    g_devlaunch++;
                if (k->launchType == CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE ||
                    k->launchType == CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE)
                    g_coop++;
                if ((uint64_t)k->clusterX * k->clusterY * k->clusterZ > 1)
                    g_cluster++;
                if (k->start == 0)
                    g_nots++;
                cc_count_name(k->name, is_graph);
            } else {
                g_other++;
            }
        }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
        g_dropped += dropped;
    pthread_mutex_unlock(&g_lock);
    free(buffer);
}


/* Expands "%p" to the pid; returns a malloc'd string or NULL. */
static char *cc_out_path(void)
{
    const char *tmpl = getenv("CUPTI_COUNT_OUT");
    if (!tmpl || !*tmpl)
        return NULL;
    char pid[32];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    size_t n = strlen(tmpl) + 1, np = 0;
    for (const char *p = tmpl; (p = strstr(p, "%p")) != NULL; p += 2)
        np++;
    n += np * strlen(pid);
    char *out = malloc(n);
    if (!out)
        return NULL;
    char *o = out;
    for (const char *p = tmpl; *p;) {
        if (p[0] == '%' && p[1] == 'p') {
            o = stpcpy(o, pid);
            p += 2;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

/* Caller holds g_lock. */
static void cc_write(void)
{
    char *path = cc_out_path();
    FILE *f = NULL;
    char *tmp = NULL;
    if (path) {
        if (asprintf(&tmp, "%s.tmp", path) < 0)
            tmp = NULL;
        if (tmp)
            f = fopen(tmp, "w");
        if (!f)
            fprintf(stderr, "[cupti_count] cannot write %s\n", path);
    }
    if (!f) {
        fprintf(stderr,
                "[cupti_count] pid %ld kernels_total=%" PRIu64
                " graph_kernels=%" PRIu64 " dropped=%" PRIu64 "\n",
                (long)getpid(), g_total, g_graph, g_dropped);
        free(path);
        free(tmp);
        g_written_total = g_total;
        return;
    }
    fprintf(f,
            "{\"schema\":\"cupti-count/1\",\"pid\":%ld,\"kernels_total\":%" PRIu64
            ",\"graph_kernels\":%" PRIu64 ",\"device_launched\":%" PRIu64
            ",\"cooperative\":%" PRIu64 ",\"cluster\":%" PRIu64
            ",\"no_timestamp\":%" PRIu64 ",\"incomplete\":%" PRIu64
            ",\"other_records\":%" PRIu64 ",\"dropped\":%" PRIu64
            ",\"errors\":%" PRIu64 ",\"name_oom\":%" PRIu64
            ",\"final_flush\":%s,\n\"kernels\":{",
            (long)getpid(), g_total, g_graph, g_devlaunch, g_coop, g_cluster,
            g_nots, g_incomplete, g_other, g_dropped,
            __atomic_load_n(&g_errors, __ATOMIC_RELAXED), g_oom,
            g_finished ? "true" : "false");
    int first = 1;
    for (size_t i = 0; i < g_cap; i++) {
        if (!g_tab[i].name)
            continue;
        fputs(first ? "\n" : ",\n", f);
        first = 0;
        mosaic__json_fputs(f, g_tab[i].name);
        fprintf(f, ":%" PRIu64, g_tab[i].count);
    }
    fputs("},\n\"graph_kernels_by_name\":{", f);
    first = 1;
    for (size_t i = 0; i < g_cap; i++) {
        if (!g_tab[i].name || !g_tab[i].graph_count)
            continue;
        fputs(first ? "\n" : ",\n", f);
        first = 0;
        mosaic__json_fputs(f, g_tab[i].name);
        fprintf(f, ":%" PRIu64, g_tab[i].graph_count);
    }
    fputs("}}\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0)
        fprintf(stderr, "[cupti_count] failed writing %s\n", path);
    g_written_total = g_total;
    free(path);
    free(tmp);
}

static void cc_atexit(void)
{
    /* Kernels still running at exit may yield incomplete records; the
     * workloads synchronize before exiting. */
    CC_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS) {
        pthread_mutex_lock(&g_lock);
        g_dropped += dropped;
        pthread_mutex_unlock(&g_lock);
    }
    pthread_mutex_lock(&g_lock);
    g_finished = 1;
    cc_write();
    pthread_mutex_unlock(&g_lock);
}

/* Runs after all atexit handlers (from _dl_fini). If CUPTI delivered more
 * records after our atexit write (e.g. on context teardown by the CUDA
 * runtime's own exit handler), rewrite the file. No CUPTI calls here. */
__attribute__((destructor)) static void cc_fini(void)
{
    if (!g_initialized)
        return;
    pthread_mutex_lock(&g_lock);
    if (g_written_total != g_total)
        cc_write();
    pthread_mutex_unlock(&g_lock);
}

CC_EXPORT int InitializeInjection(void);

CC_EXPORT int InitializeInjection(void)
{
    pthread_mutex_lock(&g_lock);
    int already = g_initialized;
    g_initialized = 1;
    pthread_mutex_unlock(&g_lock);
    if (already)
        return 1;

    CC_CHECK(cuptiActivityRegisterCallbacks(cc_buffer_requested,
                                            cc_buffer_completed));
    CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        const char *s = NULL;
        cuptiGetResultString(r, &s);
        fprintf(stderr,
                "[cupti_count] cuptiActivityEnable(CONCURRENT_KERNEL) failed: "
                "%d (%s)\n", (int)r, s ? s : "?");
        __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
    }
    atexit(cc_atexit);
    if (getenv("CUPTI_COUNT_VERBOSE"))
        fprintf(stderr, "[cupti_count] injected into pid %ld\n",
                (long)getpid());
    return 1;
}
