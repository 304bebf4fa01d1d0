/*
 * The launch-offset protocol's kernels, their launchers and the IPC handle
 * file (offset.h says what the protocol is and why it is built this way).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "offset.h"

/* Far from its target a spinner sleeps between polls, so that a waiting
 * warp issues almost nothing on an SM the other kernel is using; within
 * ZOO_SYNC_NEAR_NS of it, it polls back to back so the release is late by
 * one load, not by a sleep. */
#define ZOO_SYNC_NEAR_NS  3000ull
#define ZOO_SYNC_NAP_NS   500u

static __device__ __forceinline__ unsigned long long sync_now(void)
{
    unsigned long long t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ __forceinline__ unsigned long long
sync_load(const unsigned long long *p)
{
    return *(const volatile unsigned long long *)p;
}

static __device__ __forceinline__ void sync_store(unsigned long long *p,
                                                  unsigned long long v)
{
    *(volatile unsigned long long *)p = v;
    /* System scope: the reader may be another process's context (MPS). */
    __threadfence_system();
}

/* Spins until *word == seq. Returns ZOO_SYNC_OK, or TIMEOUT (and sets the
 * sticky dead word), or PEER_DEAD when the other side already gave up. */
static __device__ unsigned int sync_wait_eq(struct zoo_sync *s,
                                            const unsigned long long *word,
                                            unsigned long long seq,
                                            unsigned long long t0,
                                            unsigned long long timeout_ns,
                                            unsigned int *polls)
{
    for (;;) {
        (*polls)++;
        if (sync_load(word) == seq)
            return ZOO_SYNC_OK;
        if (sync_load(&s->dead))
            return ZOO_SYNC_PEER_DEAD;
        if (sync_now() - t0 > timeout_ns) {
            sync_store(&s->dead, seq);
            return ZOO_SYNC_TIMEOUT;
        }
        __nanosleep(ZOO_SYNC_NAP_NS / 4);
    }
}

static __device__ void sync_rec(struct zoo_sync_rec *rec,
                                unsigned long long t0,
                                unsigned long long t_rel,
                                unsigned long long t_mark,
                                unsigned long long delay_ns,
                                unsigned long long cmd,
                                unsigned int status, unsigned int polls)
{
    if (!rec)
        return;
    rec->t_start = t0;
    rec->t_release = t_rel;
    rec->t_mark = t_mark;
    rec->delay_ns = delay_ns;
    rec->cmd = cmd;
    rec->status = status;
    rec->polls = polls;
}

__global__ void zoo_sync_lead_kernel(struct zoo_sync *s,
                                     unsigned long long seq, int wait_ready,
                                     unsigned long long delay_ns,
                                     unsigned long long cmd,
                                     unsigned long long timeout_ns,
                                     struct zoo_sync_rec *rec)
{
    unsigned long long t0 = sync_now(), t;
    unsigned int polls = 0, st = ZOO_SYNC_OK;

    if (sync_load(&s->dead))
        st = ZOO_SYNC_PEER_DEAD;
    else if (wait_ready)
        st = sync_wait_eq(s, &s->ready_seq, seq, t0, timeout_ns, &polls);
    if (st == ZOO_SYNC_OK) {
        volatile struct zoo_sync *v = s;

        v->mark_delay_ns = delay_ns;
        v->mark_cmd = cmd;
        /* The time as late as possible, so that the mark is as close to
         * this kernel's exit (and A's dispatch) as the release is to B's;
         * then one fence orders the data before the sequence number, so a
         * follower that sees this round's number reads this round's time,
         * never the previous one's. */
        t = sync_now();
        v->mark_ns = t;
        __threadfence_system();
        v->mark_seq = seq;
    } else {
        t = sync_now();
    }
    sync_rec(rec, t0, t, t, delay_ns, cmd, st, polls);
}

__global__ void zoo_sync_follow_kernel(struct zoo_sync *s,
                                       unsigned long long seq,
                                       unsigned long long delay_ns,
                                       unsigned long long timeout_ns,
                                       struct zoo_sync_rec *rec)
{
    unsigned long long t0 = sync_now(), mark = 0, target, t, cmd;
    unsigned int polls = 0, st;

    if (sync_load(&s->dead)) {
        sync_rec(rec, t0, t0, 0, 0, 0, ZOO_SYNC_PEER_DEAD, 0);
        return;
    }
    sync_store(&s->ready_seq, seq);
    st = sync_wait_eq(s, &s->mark_seq, seq, t0, timeout_ns, &polls);
    if (st != ZOO_SYNC_OK) {
        sync_rec(rec, t0, sync_now(), 0, 0, 0, st, polls);
        return;
    }
    __threadfence_system();
    mark = sync_load(&s->mark_ns);
    delay_ns += sync_load(&s->mark_delay_ns);
    cmd = sync_load(&s->mark_cmd);
    target = mark + delay_ns;
    t = sync_now();
    if (delay_ns > 0 && t > target)
        st = ZOO_SYNC_LATE;
    while (t < target) {
        if (target - t > ZOO_SYNC_NEAR_NS)
            __nanosleep(ZOO_SYNC_NAP_NS);
        t = sync_now();
    }
    sync_rec(rec, t0, t, mark, delay_ns, cmd, st, polls);
}

int zoo_sync_lead(struct zoo_sync *sync, unsigned long long seq,
                  int wait_ready, unsigned long long delay_ns,
                  unsigned long long cmd, unsigned long long timeout_ns,
                  struct zoo_sync_rec *rec, cudaStream_t s)
{
    zoo_sync_lead_kernel<<<1, 1, 0, s>>>(sync, seq, wait_ready, delay_ns, cmd,
                                         timeout_ns, rec);
    return (int)cudaGetLastError();
}

int zoo_sync_follow(struct zoo_sync *sync, unsigned long long seq,
                    unsigned long long delay_ns,
                    unsigned long long timeout_ns, struct zoo_sync_rec *rec,
                    cudaStream_t s)
{
    zoo_sync_follow_kernel<<<1, 1, 0, s>>>(sync, seq, delay_ns, timeout_ns,
                                           rec);
    return (int)cudaGetLastError();
}

int zoo_sync_preload(const cudaStream_t *st, int n)
{
    struct cudaFuncAttributes fa;
    struct zoo_sync *blk = NULL;
    cudaError_t e;
    int i;

    /* The documented way to load a kernel now (CUDA Programming Guide,
     * "Lazy Loading"): query its attributes. It loads into the current
     * context only, and the streams may belong to green contexts, so each
     * stream also runs both kernels once below. */
    e = cudaFuncGetAttributes(&fa, zoo_sync_lead_kernel);
    if (e == cudaSuccess)
        e = cudaFuncGetAttributes(&fa, zoo_sync_follow_kernel);
    if (e == cudaSuccess)
        e = (cudaError_t)zoo_sync_alloc(&blk);
    /* Any nonzero dead word makes both kernels return before they wait. */
    if (e == cudaSuccess)
        e = cudaMemset(&blk->dead, 0xff, sizeof(blk->dead));
    for (i = 0; e == cudaSuccess && i < n; i++) {
        zoo_sync_lead_kernel<<<1, 1, 0, st[i]>>>(blk, 1, 1, 0, 0, 0, NULL);
        zoo_sync_follow_kernel<<<1, 1, 0, st[i]>>>(blk, 1, 0, 0, NULL);
        e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(st[i]);
    }
    if (blk)
        cudaFree(blk);
    return (int)e;
}

int zoo_sync_reset(struct zoo_sync *sync)
{
    return (int)cudaMemset(&sync->dead, 0, sizeof(sync->dead));
}

int zoo_sync_alloc(struct zoo_sync **sync)
{
    struct zoo_sync init;
    cudaError_t e;

    *sync = NULL;
    memset(&init, 0, sizeof(init));
    init.magic = ZOO_SYNC_MAGIC;
    e = cudaMalloc((void **)sync, sizeof(**sync));
    if (e == cudaSuccess)
        e = cudaMemcpy(*sync, &init, sizeof(init), cudaMemcpyHostToDevice);
    if (e != cudaSuccess && *sync) {
        cudaFree(*sync);
        *sync = NULL;
    }
    return (int)e;
}

int zoo_sync_export(struct zoo_sync *sync, cudaIpcMemHandle_t *h)
{
    return (int)cudaIpcGetMemHandle(h, sync);
}

int zoo_sync_open(const cudaIpcMemHandle_t *h, struct zoo_sync **sync)
{
    void *p = NULL;
    cudaError_t e = cudaIpcOpenMemHandle(&p, *h,
                                         cudaIpcMemLazyEnablePeerAccess);

    *sync = (struct zoo_sync *)p;
    return (int)e;
}

int zoo_sync_check(const struct zoo_sync *sync)
{
    unsigned long long m = 0;
    cudaError_t e = cudaMemcpy(&m, &sync->magic, sizeof(m),
                               cudaMemcpyDeviceToHost);

    if (e != cudaSuccess)
        return (int)e;
    return m == ZOO_SYNC_MAGIC ? 0 : -1;
}

unsigned long long zoo_sync_hash(unsigned long long h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;

    if (!h)
        h = 1469598103934665603ull;
    for (i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* ---- the handle file ---------------------------------------------------- */

/* On disk: a fixed header so that a file from another version, or one that
 * is not a handle file at all, is refused instead of mapped. */
struct zoo_sync_file {
    unsigned long long magic;
    unsigned int version;
    unsigned int size;              /* sizeof(struct zoo_sync_file) */
    long long pid;
    unsigned long long schedule_hash;
    cudaIpcMemHandle_t handle;
};

int zoo_sync_write_handle(const char *path, const struct zoo_sync_peer *p,
                          char *err, size_t errlen)
{
    struct zoo_sync_file f;
    char tmp[4096];
    int fd, n;
    ssize_t w;

    memset(&f, 0, sizeof(f));
    f.magic = ZOO_SYNC_MAGIC;
    f.version = ZOO_SYNC_VERSION;
    f.size = (unsigned int)sizeof(f);
    f.pid = p->pid;
    f.schedule_hash = p->schedule_hash;
    f.handle = p->handle;
    n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        snprintf(err, errlen, "--ipc-file %s: path too long (at most %zu "
                 "bytes)", path, sizeof(tmp) - 32);
        return -1;
    }
    /* 0600 whatever the umask: the handle lets any process of the same
     * user map this memory. O_EXCL: never write through a planted link. */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "--ipc-file: cannot create %s: %s (is the "
                 "directory writable? remove a stale file)", tmp,
                 strerror(errno));
        return -1;
    }
    w = write(fd, &f, sizeof(f));
    if (w != (ssize_t)sizeof(f) || fsync(fd) != 0) {
        snprintf(err, errlen, "--ipc-file: writing %s failed: %s", tmp,
                 w < 0 ? strerror(errno) : "short write");
        close(fd);
        unlink(tmp);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "--ipc-file: cannot rename %s to %s: %s", tmp,
                 path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int zoo_sync_read_handle(const char *path, double wait_s,
                         struct zoo_sync_peer *p, char *err, size_t errlen)
{
    struct timespec nap = {0, 10000000};
    struct zoo_sync_file f;
    struct stat st;
    double waited = 0;
    ssize_t r = 0;
    int fd;

    memset(&f, 0, sizeof(f));
    for (;;) {
        fd = open(path, O_RDONLY);
        if (fd >= 0) {
            r = read(fd, &f, sizeof(f));
            /* A file left by a process that has exited is stale: its
             * memory is gone. Wait for the live writer's rename. */
            if (r != (ssize_t)sizeof(f) || f.magic != ZOO_SYNC_MAGIC ||
                f.pid <= 0 || kill((pid_t)f.pid, 0) == 0 || errno != ESRCH)
                break;
            close(fd);
            fd = -1;
            errno = ESRCH;
        } else if (errno != ENOENT) {
            break;
        }
        if (waited >= wait_s)
            break;
        nanosleep(&nap, NULL);
        waited += 0.01;
    }
    if (fd < 0) {
        snprintf(err, errlen, "--ipc-file %s: %s after %.1f s (start the "
                 "leader process, --role a, with the same file; a file of "
                 "an exited process is ignored)", path,
                 errno == ESRCH ? "written by a process that has exited"
                                : strerror(errno), waited);
        return -1;
    }
    if (fstat(fd, &st) != 0 || (st.st_mode & 077) != 0 ||
        st.st_uid != geteuid()) {
        snprintf(err, errlen, "--ipc-file %s: refused: it must be a file of "
                 "this user with mode 0600 (found mode %03o)", path,
                 (unsigned int)(st.st_mode & 0777));
        close(fd);
        return -1;
    }
    close(fd);
    if (r != (ssize_t)sizeof(f) || f.magic != ZOO_SYNC_MAGIC ||
        f.version != ZOO_SYNC_VERSION || f.size != sizeof(f)) {
        snprintf(err, errlen, "--ipc-file %s: not a version-%u zoo handle "
                 "file (%zd bytes, magic %#llx): written by another build? "
                 "remove it and rerun both processes", path, ZOO_SYNC_VERSION,
                 r, r >= 8 ? f.magic : 0ull);
        return -1;
    }
    p->pid = f.pid;
    p->schedule_hash = f.schedule_hash;
    p->handle = f.handle;
    return 0;
}
