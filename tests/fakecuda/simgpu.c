/*
 * The simulated GPU (docs/simgpu.md): segment, model and this process's
 * part in it.
 *
 * The model is processor sharing in real time. Each stream runs its
 * operations in order; the kernel at a stream's head runs on the GPU with a
 * rate (isolated work done per ns of wall time) that depends on every
 * kernel running beside it, of every process. Whenever that set changes, the
 * rates are recomputed; between changes, each kernel's remaining work falls
 * at its rate. sim_advance() replays this exactly from the last time any
 * process advanced the model up to now, event by event, so that start,
 * finish and event times are the model's and not whenever a host thread
 * happened to wake up; any attached process may advance it.
 *
 * Only host memory ties an operation to its process: stream write-value and
 * wait-value operations are carried out by the owning process, which a
 * per-process progress thread (started with the first operation) makes
 * timely. Waiting threads sleep on a futex in the segment that is bumped at
 * every change, with a timeout at the model's next completion.
 *
 * Tested on Linux 6.x, glibc 2.36+ (robust process-shared mutexes and
 * FUTEX_WAIT on a MAP_SHARED word).
 */
#define _GNU_SOURCE
#include "simgpu.h"
#include "simgpu_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* An unprofiled kernel without a duration in its name takes this long. */
#define SIM_DEFAULT_US 100.0
/* How often the owner of a stream blocked on a wait-value reads the value,
 * unless MOSAIC_SIMGPU_POLL_US says otherwise: a grant written by another
 * process is seen within this, at the cost of a wake-up per period while a
 * stream waits. */
#define SIM_POLL_NS 50e3
/* How often dead processes are looked for, and the longest sleep. */
#define SIM_REAP_NS 20e6
#define SIM_MAX_SLEEP_NS 20e6
/* A kernel is never slowed to below this rate (it always progresses). */
#define SIM_MIN_RATE 0.02
/* H200 copy bandwidth, read + write, from 128 SMs on: the first
 * green-context copy runs (driver 580.159.04, CUDA 13.0), the value
 * predictor/gpu.c's curve ends at; written here again on purpose, since
 * the simulated GPU shares no code with the predictor (docs/simgpu.md). */
#define SIM_PEAK_BPS 3918e9

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------------
 * The segment.
 */
static int seg_path(const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64 || strspn(name, "abcdefghijklmnopqrstuvwxyz"
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789._-") != n) {
        fprintf(stderr, "simgpu: segment name \"%s\" is not 1-64 characters "
                "of [A-Za-z0-9._-]; fix MOSAIC_SIMGPU\n", name);
        return SIM_EINVAL;
    }
    int w = snprintf(out, cap, "/mosaic-simgpu.%s", name);
    return w > 0 && (size_t)w < cap ? 0 : SIM_EINVAL;
}

static void unlock_wake(struct sim_shm *m, bool changed)
{
    pthread_mutex_unlock(&m->lock);
    if (changed) {
        atomic_fetch_add(&m->gen, 1);
        syscall(SYS_futex, (uint32_t *)&m->gen, FUTEX_WAKE, INT_MAX, NULL,
                NULL, 0);
    }
}

static void sleep_on(struct sim_shm *m, uint32_t gen, double ns)
{
    if (ns > SIM_MAX_SLEEP_NS)
        ns = SIM_MAX_SLEEP_NS;
    if (ns < 1e3)
        ns = 1e3;
    struct timespec ts = { (time_t)(ns / 1e9), (long)fmod(ns, 1e9) };
    syscall(SYS_futex, (uint32_t *)&m->gen, FUTEX_WAIT, gen, &ts, NULL, 0);
}

static double setting_scale(void)
{
    const char *v = getenv("MOSAIC_SIMGPU_SCALE");
    if (v == NULL || *v == '\0')
        return 20.0;
    char *end;
    double s = strtod(v, &end);
    if (*end != '\0' || !(s > 0) || s > 1e6) {
        fprintf(stderr, "simgpu: MOSAIC_SIMGPU_SCALE=\"%s\" is not a number "
                "in (0, 1e6]; using 20 (each kernel takes 20x its H200 "
                "duration)\n", v);
        return 20.0;
    }
    return s;
}

/* Creates and fills the segment; *out stays mapped on success. */
static int seg_create(const char *name, struct sim_shm **out)
{
    char path[96];
    int r = seg_path(name, path, sizeof path);
    if (r != 0)
        return r;
    int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return errno == EEXIST ? SIM_EINVAL : SIM_EIO;
    size_t size = sizeof(struct sim_shm);
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0) {
        fprintf(stderr, "simgpu: %s: cannot size the segment: %s\n", path,
                strerror(errno));
        close(fd);
        shm_unlink(path);
        return SIM_EIO;
    }
    struct sim_shm *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
                             fd, 0);
    close(fd); /* the mapping keeps the segment; no descriptor is kept */
    if (m == MAP_FAILED) {
        shm_unlink(path);
        return SIM_EIO;
    }
    m->version = SIM_VERSION;
    m->size = size;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&m->lock, &a);
    pthread_mutexattr_destroy(&a);
    m->scale = setting_scale();
    m->peak_bps = SIM_PEAK_BPS;
    m->clock_ns = now_ns();
    m->last_reap_ns = m->clock_ns;
    const char *seed = getenv("MOSAIC_SIMGPU_SEED");
    m->rng = seed != NULL && *seed != '\0'
                 ? strtoull(seed, NULL, 0)
                 : (uint64_t)m->clock_ns ^ ((uint64_t)getpid() << 32);
    if (m->rng == 0)
        m->rng = 0x9e3779b97f4a7c15ull;
    r = sim__load_data(m);
    if (r != 0) {
        munmap(m, size);
        shm_unlink(path);
        return r;
    }
    atomic_store_explicit(&m->magic, SIM_MAGIC, memory_order_release);
    *out = m;
    return 0;
}

/* Attaches to an existing segment, waiting up to 10 s for its creator to
 * finish loading. SIM_EIO with errno ENOENT when there is none. */
static int seg_attach(const char *name, int prot, struct sim_shm **out)
{
    char path[96];
    int r = seg_path(name, path, sizeof path);
    if (r != 0)
        return r;
    int fd = shm_open(path, (prot & PROT_WRITE) ? O_RDWR : O_RDONLY, 0);
    if (fd < 0)
        return SIM_EIO;
    struct stat st;
    double deadline = now_ns() + 10e9;
    size_t size = sizeof(struct sim_shm);
    struct sim_shm *m = MAP_FAILED;
    for (;;) {
        if (fstat(fd, &st) != 0)
            break;
        if (st.st_uid != getuid() || (st.st_mode & 077) != 0) {
            fprintf(stderr, "simgpu: /dev/shm%s belongs to uid %u or is "
                    "open to others (mode %03o): refused; remove it and let "
                    "the first process (or `simgpu create`) make a private "
                    "one\n", path, (unsigned)st.st_uid,
                    (unsigned)(st.st_mode & 0777));
            close(fd);
            return SIM_ESTALE;
        }
        if ((size_t)st.st_size >= offsetof(struct sim_shm, lock)) {
            m = mmap(NULL, (size_t)st.st_size, prot, MAP_SHARED, fd, 0);
            if (m == MAP_FAILED)
                break;
            if (atomic_load_explicit(&m->magic, memory_order_acquire) ==
                SIM_MAGIC)
                break;
            munmap(m, (size_t)st.st_size);
            m = MAP_FAILED;
        }
        if (now_ns() > deadline) {
            fprintf(stderr, "simgpu: /dev/shm%s was never finished (its "
                    "creator died while loading?): remove it with `simgpu "
                    "rm %s` and start again\n", path, name);
            close(fd);
            return SIM_ESTALE;
        }
        usleep(10000);
    }
    close(fd);
    if (m == MAP_FAILED)
        return SIM_EIO;
    if (m->version != SIM_VERSION || m->size != size ||
        (size_t)st.st_size != size) {
        fprintf(stderr, "simgpu: /dev/shm%s is a segment of version %u "
                "(%llu bytes); this driver is version %u (%zu bytes): "
                "refused; remove it with `simgpu rm %s`\n", path, m->version,
                (unsigned long long)m->size, SIM_VERSION, size, name);
        munmap(m, (size_t)st.st_size);
        return SIM_ESTALE;
    }
    *out = m;
    return 0;
}

int sim_segment_create(const char *name)
{
    struct sim_shm *m;
    int r = seg_create(name, &m);
    if (r == SIM_EINVAL && errno == EEXIST)
        fprintf(stderr, "simgpu: segment \"%s\" already exists; `simgpu rm "
                "%s` first to start afresh\n", name, name);
    if (r == 0)
        munmap(m, m->size);
    return r;
}

int sim_segment_remove(const char *name)
{
    char path[96];
    int r = seg_path(name, path, sizeof path);
    if (r != 0)
        return r;
    if (shm_unlink(path) != 0) {
        fprintf(stderr, "simgpu: cannot remove /dev/shm%s: %s\n", path,
                strerror(errno));
        return SIM_EIO;
    }
    return 0;
}

static void fill_info(struct sim_shm *m, struct sim_info *info)
{
    memset(info, 0, sizeof *info);
    info->version = m->version;
    info->scale = m->scale;
    info->jitter_ns = m->jitter_ns;
    info->kernels = m->nkernels;
    info->variants = m->nvariants;
    info->pairs = m->npairs;
    for (int i = 0; i < SIM_STREAMS; i++) {
        info->streams_used += m->streams[i].state != SIM_FREE;
        info->running += m->streams[i].running != 0;
    }
    for (int i = 0; i < SIM_EVENTS; i++)
        info->events_used += m->events[i].used != 0;
    info->launched = m->launched;
    info->completed = m->completed;
}

int sim_segment_info(const char *name, struct sim_info *info)
{
    struct sim_shm *m;
    int r = seg_attach(name, PROT_READ, &m);
    if (r == SIM_EIO)
        fprintf(stderr, "simgpu: no segment \"%s\" (/dev/shm/mosaic-simgpu."
                "%s)\n", name, name);
    if (r != 0)
        return r;
    fill_info(m, info); /* a read-only snapshot, taken without the lock */
    munmap(m, m->size);
    return 0;
}

/* ------------------------------------------------------------------------
 * This process.
 */
static struct {
    pthread_once_t once;
    int status;           /* sim_active()'s answer */
    struct sim_shm *m;
    pid_t pid;
    int default_slot;
    pthread_mutex_t start_lock;
    bool thread_running;
    pthread_t thread;
    _Atomic bool stop;
    double poll_ns;       /* MOSAIC_SIMGPU_POLL_US */
    int priority;         /* CUDA_MPS_CLIENT_PRIORITY */
} P = { .once = PTHREAD_ONCE_INIT, .default_slot = -1,
        .start_lock = PTHREAD_MUTEX_INITIALIZER };

/* Takes the segment's lock. A holder that died mid-update is handled by
 * the robust mutex (EOWNERDEAD: the state is taken as it is and the dead
 * process's streams are reaped at once). A waiter killed just after the
 * unlocker woke it takes that wake-up with it, and the other waiters would
 * sleep on a free lock for ever (seen: a progress thread stuck in
 * pthread_mutex_lock with no holder, after test_killed_holding_lock); so
 * the wait is bounded and retried, which costs nothing while the lock is
 * passed on normally. */
static bool lock_tries(struct sim_shm *m, long tries)
{
    for (long i = 0; tries < 0 || i < tries; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 20000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        int r = pthread_mutex_clocklock(&m->lock, CLOCK_MONOTONIC, &ts);
        if (r == 0)
            return true;
        if (r == EOWNERDEAD) {
            pthread_mutex_consistent(&m->lock);
            m->last_reap_ns = -1e300;
            return true;
        }
        /* ETIMEDOUT: look again. */
    }
    return false;
}

static void lock(struct sim_shm *m)
{
    lock_tries(m, -1);
}

static uint64_t rnd(struct sim_shm *m)
{
    uint64_t x = m->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    m->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

static struct sim_op *head_op(struct sim_stream *s)
{
    return &s->ops[s->head % SIM_RING];
}

/* ------------------------------------------------------------------------
 * Co-run rates.
 */
struct runner {
    struct sim_stream *s;
    const struct sim_kernel *k; /* NULL: unprofiled */
    int variant;
};

/* Whether a goes first, as the GPU dispatched them: the process of higher
 * MPS client priority first (the assumption that priority decides the
 * dispatch order; not measured here), else the earlier dispatched. Each
 * kernel's dispatch time is its start plus a uniform draw within the
 * measured jitter, so two kernels started together go either way with even
 * odds, as on the H200, and one started a jitter later is always second. */
static bool first_of(const struct runner *a, const struct runner *b)
{
    if (a->s->priority != b->s->priority)
        return a->s->priority < b->s->priority;
    if (a->s->dispatch_ns != b->s->dispatch_ns)
        return a->s->dispatch_ns < b->s->dispatch_ns;
    return a->s < b->s;
}

static const struct sim_pair *pair_of(const struct sim_shm *m, int vf, int vs)
{
    if (vf < 0 || vs < 0)
        return NULL;
    return m->pairs[vf][vs].n > 0 ? &m->pairs[vf][vs] : NULL;
}

/* The documented rule for pairs the dataset never measured: both kernels
 * slowed alike, by the larger of their DRAM demand over the peak and their
 * summed share of the GPU's block slots (an unprofiled kernel counts as
 * filling the GPU and moving no DRAM bytes). */
static double rule_slowdown(const struct sim_shm *m, const struct runner *a,
                            const struct runner *b)
{
    double bw = (a->k ? a->k->dram_bps : 0) + (b->k ? b->k->dram_bps : 0);
    double occ = (a->k ? a->k->occupancy : 1) + (b->k ? b->k->occupancy : 1);
    return fmax(1.0, fmax(bw / m->peak_bps, occ));
}

/* Mean measured slowdowns of a (first) and b (second), or the rule's. */
static void mean_slowdowns(const struct sim_shm *m, const struct runner *a,
                           const struct runner *b, double *sa, double *sb)
{
    const struct sim_pair *p = pair_of(m, a->variant, b->variant);
    const struct sim_pair *q = pair_of(m, b->variant, a->variant);
    if (p == NULL && q == NULL) {
        *sa = *sb = rule_slowdown(m, a, b);
        return;
    }
    double fa = 0, fb = 0;
    unsigned n = p != NULL ? p->n : q->n;
    for (unsigned i = 0; i < n; i++) {
        /* An order never observed takes the other order's samples. */
        fa += p != NULL ? p->first[i] : q->second[i];
        fb += p != NULL ? p->second[i] : q->first[i];
    }
    *sa = fmax(1.0, fa / n);
    *sb = fmax(1.0, fb / n);
}

/* Two kernels: one measured repeat, drawn at random among those in which
 * they started in this order, and rates that reproduce that repeat. The
 * measured slowdowns are over a joint start: the early finisher e takes
 * s_e * d_e, the other ends at s_l * d_l. Processor sharing reproduces both
 * when e runs at 1/s_e and l at 1 - (s_l - 1) d_l / (s_e d_e) while both
 * run (and l at 1 alone afterwards). d is each one's remaining work, so a
 * kernel that joins a running one meets the rest of it as a fresh start. */
static void pair_rates(struct sim_shm *m, struct runner *a, struct runner *b)
{
    if (!first_of(a, b)) {
        struct runner *t = a;
        a = b;
        b = t;
    }
    const struct sim_pair *p = pair_of(m, a->variant, b->variant);
    const struct sim_pair *q = pair_of(m, b->variant, a->variant);
    if (p == NULL && q == NULL) {
        double s = rule_slowdown(m, a, b);
        a->s->rate = b->s->rate = 1.0 / s;
        return;
    }
    /* The repeat follows from the two kernels' own draws: the same pair
     * keeps it whenever the rates are recomputed. */
    uint64_t draw = a->s->draw ^ (b->s->draw * 0x9e3779b97f4a7c15ull);
    double sa, sb;
    if (p != NULL) {
        unsigned i = (unsigned)(draw % p->n);
        sa = p->first[i];
        sb = p->second[i];
    } else {
        unsigned i = (unsigned)(draw % q->n);
        sa = q->second[i];
        sb = q->first[i];
    }
    sa = fmax(1.0, sa);
    sb = fmax(1.0, sb);
    double da = a->s->rem_ns, db = b->s->rem_ns;
    struct runner *e = a, *l = b;
    double se = sa, sl = sb, de = da, dl = db;
    if (sb * db < sa * da) {
        e = b, l = a, se = sb, sl = sa, de = db, dl = da;
    }
    e->s->rate = 1.0 / se;
    l->s->rate = fmin(1.0, fmax(SIM_MIN_RATE,
                                1.0 - (sl - 1.0) * dl / (se * de)));
}

/* ------------------------------------------------------------------------
 * SM partitions (green-context streams).
 */

/* Whether two running kernels are on disjoint SM sets: both confined to a
 * green context, and no SM in common. A kernel on the whole GPU overlaps
 * every other. */
static bool disjoint(const struct runner *a, const struct runner *b)
{
    if (a->s->sms == 0 || b->s->sms == 0)
        return false;
    for (int i = 0; i < SIM_MASK_WORDS; i++)
        if (a->s->sm_mask[i] & b->s->sm_mask[i])
            return false;
    return true;
}

/* The measured isolated time of variant v on n SMs, from its curve, or -1
 * when the curve cannot say (no whole-GPU point, or no other point): linear
 * between measured SM counts, and below the smallest one inversely
 * proportional to the SMs (the same work on fewer SMs; the documented rule,
 * not a measurement). */
static double curve_us(const struct sim_curve *c, uint32_t n)
{
    if (c->n < 2 || c->sms[c->n - 1] != SIM_GPU_SMS)
        return -1;
    if (n <= c->sms[0])
        return c->us[0] * c->sms[0] / n;
    for (uint32_t i = 0; i + 1 < c->n; i++) {
        if (n <= c->sms[i + 1]) {
            double f = (double)(n - c->sms[i]) / (c->sms[i + 1] - c->sms[i]);
            return c->us[i] + f * (c->us[i + 1] - c->us[i]);
        }
    }
    return c->us[c->n - 1];
}

/* How much longer kernel k (index into kernels[], -1 unprofiled) takes
 * alone on n SMs than on the whole GPU: the measured ratio of its
 * variant's isolated times where the split sweep or the partitioned
 * co-runs measured it; else the waves rule, ceil(blocks / (blocks_per_sm *
 * n)) over the same on 132 SMs; an unprofiled kernel fills the GPU, so
 * 132 / n. */
static double partition_ratio(const struct sim_shm *m, int k, uint32_t n)
{
    if (n == 0 || n >= SIM_GPU_SMS)
        return 1.0;
    if (k < 0 || (uint32_t)k >= m->nkernels)
        return (double)SIM_GPU_SMS / n;
    const struct sim_kernel *sk = &m->kernels[k];
    if (sk->variant >= 0) {
        const struct sim_curve *c = &m->curves[sk->variant];
        double t = curve_us(c, n);
        if (t > 0)
            return fmax(1.0, t / c->us[c->n - 1]);
    }
    double per = fmax(1, sk->blocks_per_sm), blocks = fmax(1, sk->blocks);
    return ceil(blocks / (per * n)) / ceil(blocks / (per * SIM_GPU_SMS));
}

/* The partitioned samples of a (first index) beside b measured at the SM
 * count nearest a's: *first is the first such sample, *count how many. */
static const struct sim_ppair *ppair_near(const struct sim_shm *m,
                                          const struct runner *a,
                                          const struct runner *b,
                                          uint32_t *idx, uint32_t *count)
{
    if (a->variant < 0 || b->variant < 0)
        return NULL;
    const struct sim_ppair *p = &m->ppairs[a->variant][b->variant];
    if (p->n == 0)
        return NULL;
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < p->n; i++) {
        uint32_t d = p->sms[i] > a->s->sms ? p->sms[i] - a->s->sms
                                           : a->s->sms - p->sms[i];
        best = d < best ? d : best;
    }
    uint32_t c = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        uint32_t d = p->sms[i] > a->s->sms ? p->sms[i] - a->s->sms
                                           : a->s->sms - p->sms[i];
        if (d == best)
            idx[c++] = i;
    }
    *count = c;
    return p;
}

/* The rule for disjoint pairs never measured partitioned: only memory is
 * shared, so both slow alike by their DRAM demand over the peak, each
 * kernel's bytes over its time on its own partition. */
static double partition_rule(const struct sim_shm *m, const struct runner *a,
                             const struct runner *b)
{
    double bw = 0;
    const struct runner *r[2] = { a, b };
    for (int i = 0; i < 2; i++)
        if (r[i]->k != NULL)
            bw += r[i]->k->dram_bps /
                  partition_ratio(m, (int)(r[i]->k - m->kernels), r[i]->s->sms);
    return fmax(1.0, bw / m->peak_bps);
}

/* Slowdowns of a and b on disjoint partitions: one measured repeat picked
 * by the two kernels' draws (pick), or the mean over the nearest split's
 * repeats (pick false), or the rule's. */
static void partition_slowdowns(const struct sim_shm *m, const struct runner *a,
                                const struct runner *b, bool pick, double *sa,
                                double *sb)
{
    uint32_t idx[SIM_PSAMPLES], n = 0;
    const struct sim_ppair *p = ppair_near(m, a, b, idx, &n);
    if (p == NULL || n == 0) {
        *sa = *sb = partition_rule(m, a, b);
        return;
    }
    if (pick) {
        uint64_t draw = a->s->draw ^ (b->s->draw * 0x9e3779b97f4a7c15ull);
        uint32_t i = idx[draw % n];
        *sa = fmax(1.0, p->self[i]);
        *sb = fmax(1.0, p->other[i]);
        return;
    }
    double fa = 0, fb = 0;
    for (uint32_t i = 0; i < n; i++) {
        fa += p->self[idx[i]];
        fb += p->other[idx[i]];
    }
    *sa = fmax(1.0, fa / n);
    *sb = fmax(1.0, fb / n);
}

/* Recomputes every running kernel's rate; called when the set changes. */
static void rates(struct sim_shm *m)
{
    struct runner r[SIM_STREAMS];
    int n = 0;
    for (int i = 0; i < SIM_STREAMS; i++) {
        struct sim_stream *s = &m->streams[i];
        if (!s->running)
            continue;
        int k = head_op(s)->kernel;
        r[n].s = s;
        r[n].k = k >= 0 && (uint32_t)k < m->nkernels ? &m->kernels[k] : NULL;
        r[n].variant = r[n].k != NULL ? r[n].k->variant : -1;
        n++;
    }
    if (n == 1) {
        r[0].s->rate = 1.0;
    } else if (n == 2 && disjoint(&r[0], &r[1])) {
        /* Disjoint SMs: each kernel keeps its slowdown of the measured
         * repeat for as long as both run (they share only memory). */
        double sa, sb;
        partition_slowdowns(m, &r[0], &r[1], true, &sa, &sb);
        r[0].s->rate = 1.0 / sa;
        r[1].s->rate = 1.0 / sb;
    } else if (n == 2) {
        pair_rates(m, &r[0], &r[1]);
    } else {
        /* Three or more: each kernel's excess slowdowns over its partners,
         * pairwise (mean of the measured repeats for the order they
         * started in, or the rule), add up. */
        double slow[SIM_STREAMS];
        for (int i = 0; i < n; i++)
            slow[i] = 1.0;
        for (int i = 0; i < n; i++) {
            for (int j = i + 1; j < n; j++) {
                double si, sj;
                if (disjoint(&r[i], &r[j])) {
                    partition_slowdowns(m, &r[i], &r[j], false, &si, &sj);
                } else if (first_of(&r[i], &r[j])) {
                    mean_slowdowns(m, &r[i], &r[j], &si, &sj);
                } else {
                    mean_slowdowns(m, &r[j], &r[i], &sj, &si);
                }
                slow[i] += si - 1.0;
                slow[j] += sj - 1.0;
            }
        }
        for (int i = 0; i < n; i++)
            r[i].s->rate = fmax(SIM_MIN_RATE, 1.0 / slow[i]);
    }
}

/* ------------------------------------------------------------------------
 * Advancing the model.
 */
static bool wait_holds(const struct sim_op *op)
{
    uint64_t v;
    if (op->is64)
        v = __atomic_load_n((uint64_t *)(uintptr_t)op->addr,
                            __ATOMIC_ACQUIRE);
    else
        v = __atomic_load_n((uint32_t *)(uintptr_t)op->addr,
                            __ATOMIC_ACQUIRE);
    uint64_t want = op->is64 ? op->value : (uint32_t)op->value;
    switch (op->how) {
    case SIM_WAIT_GEQ: /* cyclic: (int)(v - want) >= 0, as the driver does */
        return op->is64 ? (int64_t)(v - want) >= 0
                        : (int32_t)((uint32_t)v - (uint32_t)want) >= 0;
    case SIM_WAIT_EQ: return v == want;
    case SIM_WAIT_AND: return (v & want) != 0;
    case SIM_WAIT_NOR:
        return op->is64 ? ~(v | want) != 0 : (uint32_t)~(v | want) != 0;
    }
    return false;
}

static void event_free(struct sim_event *e)
{
    *e = (struct sim_event){ .gen = e->gen };
}

static void stream_free(struct sim_stream *s)
{
    s->state = SIM_FREE;
    s->owner = 0;
    s->running = 0;
    s->head = s->tail = 0;
    s->sms = 0;
    memset(s->sm_mask, 0, sizeof s->sm_mask);
}

/* Starts what can start on every stream at time cur: pops completed
 * bookkeeping operations and puts head kernels on the GPU. Host-memory
 * operations are the owner's; a wait-value is checked only at the present
 * (at_now), since when the value changed in the past is unknown. */
static bool start_phase(struct sim_shm *m, double cur, bool at_now,
                        bool *set_changed)
{
    bool did = false;
    for (int i = 0; i < SIM_STREAMS; i++) {
        struct sim_stream *s = &m->streams[i];
        if (s->state == SIM_FREE)
            continue;
        while (s->head != s->tail && !s->running) {
            struct sim_op *op = head_op(s);
            bool mine = s->owner == P.pid;
            if (op->type == SIM_OP_KERNEL) {
                s->running = 1;
                s->start_ns = cur;
                s->dispatch_ns = cur + (double)(rnd(m) >> 11) * 0x1p-53 *
                                           m->jitter_ns;
                s->draw = rnd(m);
                s->rem_ns = op->work_ns;
                s->rate = 1.0;
                *set_changed = true;
                did = true;
                break;
            }
            if (op->type == SIM_OP_RECORD) {
                struct sim_event *e = &m->events[op->event];
                if (e->used && e->gen == op->how &&
                    op->value > e->completed) {
                    e->completed = op->value;
                    e->time_ns = cur;
                }
            } else if (op->type == SIM_OP_WAIT_EVENT) {
                const struct sim_event *e = &m->events[op->event];
                if (e->used && e->gen == op->how && e->completed < op->value)
                    break;
            } else if (op->type == SIM_OP_WRITE_VALUE) {
                if (!mine)
                    break;
                if (op->is64)
                    __atomic_store_n((uint64_t *)(uintptr_t)op->addr,
                                     op->value, __ATOMIC_RELEASE);
                else
                    __atomic_store_n((uint32_t *)(uintptr_t)op->addr,
                                     (uint32_t)op->value, __ATOMIC_RELEASE);
            } else if (op->type == SIM_OP_WAIT_VALUE) {
                if (!mine || !at_now || !wait_holds(op))
                    break;
            }
            s->head++;
            did = true;
        }
        if (s->state == SIM_RELEASED && s->head == s->tail) {
            stream_free(s);
            did = true;
        }
    }
    return did;
}

/* Frees the streams and events of processes that no longer exist; true
 * if a running kernel went with them. */
static bool reap(struct sim_shm *m)
{
    bool any = false;
    for (int i = 0; i < SIM_STREAMS; i++) {
        struct sim_stream *s = &m->streams[i];
        if (s->state != SIM_FREE && s->owner != P.pid &&
            kill(s->owner, 0) != 0 && errno == ESRCH) {
            any |= s->running != 0;
            stream_free(s);
        }
    }
    for (int i = 0; i < SIM_EVENTS; i++) {
        struct sim_event *e = &m->events[i];
        if (e->used && e->owner != P.pid && kill(e->owner, 0) != 0 &&
            errno == ESRCH)
            event_free(e);
    }
    return any;
}

/* Replays the model from m->clock_ns up to now. True if anything changed. */
static bool advance(struct sim_shm *m, double now)
{
    bool any = false, set_changed = false;
    double cur = m->clock_ns;
    if (now < cur)
        now = cur;
    if (now - m->last_reap_ns >= SIM_REAP_NS) {
        m->last_reap_ns = now;
        if (reap(m))
            any = set_changed = true; /* only a lost runner changes rates */
    }
    for (;;) {
        if (start_phase(m, cur, cur >= now, &set_changed))
            any = true;
        if (set_changed) {
            rates(m);
            set_changed = false;
            continue; /* a start may have unblocked more */
        }
        double tmin = INFINITY;
        struct sim_stream *first = NULL;
        for (int i = 0; i < SIM_STREAMS; i++) {
            struct sim_stream *s = &m->streams[i];
            if (s->running && cur + s->rem_ns / s->rate < tmin) {
                tmin = cur + s->rem_ns / s->rate;
                first = s;
            }
        }
        double to = tmin < now ? tmin : now;
        for (int i = 0; i < SIM_STREAMS; i++) {
            struct sim_stream *s = &m->streams[i];
            if (s->running)
                s->rem_ns -= (to - cur) * s->rate;
        }
        cur = to;
        if (first == NULL || tmin > now) {
            if (start_phase(m, cur, true, &set_changed))
                any = true;
            if (set_changed) {
                rates(m);
                set_changed = false;
                continue;
            }
            break;
        }
        first->rem_ns = 0; /* the earliest finisher, exactly at tmin */
        for (int i = 0; i < SIM_STREAMS; i++) {
            struct sim_stream *s = &m->streams[i];
            if (s->running && s->rem_ns <= 1e-3) {
                s->running = 0;
                s->head++;
                m->completed++;
                set_changed = true;
            }
        }
        any = true;
    }
    m->clock_ns = cur;
    return any;
}

/* How long until something may need this thread: the model's next
 * completion, or, for the progress thread (the only poller, which wakes the
 * others through the futex when a wait is satisfied), the next poll of a
 * wait-value this process owns. */
static double next_wake(struct sim_shm *m, bool poller)
{
    double t = SIM_MAX_SLEEP_NS;
    for (int i = 0; i < SIM_STREAMS; i++) {
        struct sim_stream *s = &m->streams[i];
        if (s->running)
            t = fmin(t, s->rem_ns / s->rate);
        else if (poller && s->state != SIM_FREE && s->owner == P.pid &&
                 s->head != s->tail &&
                 head_op(s)->type == SIM_OP_WAIT_VALUE)
            t = fmin(t, P.poll_ns);
    }
    return t;
}

/* ------------------------------------------------------------------------
 * The progress thread: makes this process's host-memory operations happen
 * when their streams reach them, with nobody synchronising.
 */
static void *progress(void *arg)
{
    (void)arg;
    struct sim_shm *m = P.m;
    while (!atomic_load(&P.stop)) {
        lock(m);
        bool ch = advance(m, now_ns());
        double t = next_wake(m, true);
        uint32_t g = atomic_load(&m->gen);
        unlock_wake(m, ch);
        if (!ch)
            sleep_on(m, g, t);
    }
    return NULL;
}

static void ensure_thread(void)
{
    pthread_mutex_lock(&P.start_lock);
    if (!P.thread_running && !atomic_load(&P.stop)) {
        /* Signals stay with the program's threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (pthread_create(&P.thread, NULL, progress, NULL) == 0)
            P.thread_running = true;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_mutex_unlock(&P.start_lock);
}

static void after_fork_child(void)
{
    /* The child has its own pid, no progress thread and none of the
     * parent's streams; the mapping is inherited. */
    P.pid = getpid();
    P.default_slot = -1;
    P.thread_running = false;
    pthread_mutex_init(&P.start_lock, NULL);
}

/* Stops the thread and gives this process's streams and events back, so
 * that the kernels it left stop slowing the others. */
__attribute__((destructor)) static void sim_exit(void)
{
    struct sim_shm *m = P.m;
    if (m == NULL || P.pid != getpid())
        return;
    atomic_store(&P.stop, true);
    if (P.thread_running) {
        atomic_fetch_add(&m->gen, 1);
        syscall(SYS_futex, (uint32_t *)&m->gen, FUTEX_WAKE, INT_MAX, NULL,
                NULL, 0);
        pthread_join(P.thread, NULL);
        P.thread_running = false;
    }
    /* For about 1 s at most: exit must not hang on a segment that another
     * (stopped or wedged) process holds. */
    if (lock_tries(m, 50)) {
        advance(m, now_ns());
        bool any = false;
        for (int i = 0; i < SIM_STREAMS; i++) {
            if (m->streams[i].state != SIM_FREE &&
                m->streams[i].owner == P.pid) {
                any |= m->streams[i].running != 0;
                stream_free(&m->streams[i]);
            }
        }
        for (int i = 0; i < SIM_EVENTS; i++)
            if (m->events[i].used && m->events[i].owner == P.pid)
                event_free(&m->events[i]);
        if (any)
            rates(m);
        unlock_wake(m, true);
    }
    munmap(m, m->size);
    P.m = NULL;
}

static void init_once(void)
{
    const char *name = getenv("MOSAIC_SIMGPU");
    if (name == NULL || *name == '\0') {
        P.status = 0;
        return;
    }
    P.pid = getpid();
    struct sim_shm *m = NULL;
    int r = SIM_EIO;
    for (int tries = 0; tries < 3; tries++) {
        r = seg_attach(name, PROT_READ | PROT_WRITE, &m);
        if (r != SIM_EIO || errno != ENOENT)
            break;
        r = seg_create(name, &m);
        if (r != SIM_EINVAL || errno != EEXIST)
            break; /* created, or failed for good */
    }
    if (r != 0) {
        fprintf(stderr, "simgpu: MOSAIC_SIMGPU=%s: cannot use the simulated "
                "GPU (%s); the driver reports CUDA_ERROR_NOT_INITIALIZED\n",
                name, r == SIM_ESTALE ? "stale segment, see above"
                                      : "see above");
        P.status = r;
        return;
    }
    double want = setting_scale();
    if (getenv("MOSAIC_SIMGPU_SCALE") != NULL && fabs(want - m->scale) > 1e-9)
        fprintf(stderr, "simgpu: MOSAIC_SIMGPU_SCALE=%g but segment \"%s\" "
                "runs at %g (set by its creator); using %g\n", want, name,
                m->scale, m->scale);
    P.poll_ns = SIM_POLL_NS;
    const char *poll = getenv("MOSAIC_SIMGPU_POLL_US");
    if (poll != NULL && *poll != '\0') {
        char *end;
        double us = strtod(poll, &end);
        if (*end != '\0' || !(us >= 1) || us > 1e6)
            fprintf(stderr, "simgpu: MOSAIC_SIMGPU_POLL_US=\"%s\" is not a "
                    "number of microseconds in [1, 1e6]; using %g\n", poll,
                    SIM_POLL_NS / 1e3);
        else
            P.poll_ns = us * 1e3;
    }
    /* As the MPS server reads it: 0 (normal) or 1 (below normal). */
    const char *prio = getenv("CUDA_MPS_CLIENT_PRIORITY");
    if (prio != NULL && *prio != '\0') {
        if (strcmp(prio, "0") == 0 || strcmp(prio, "1") == 0)
            P.priority = prio[0] - '0';
        else
            fprintf(stderr, "simgpu: CUDA_MPS_CLIENT_PRIORITY=\"%s\" is not "
                    "0 (normal) or 1 (below normal); using 0\n", prio);
    }
    P.m = m;
    pthread_atfork(NULL, NULL, after_fork_child);
    P.status = 1;
}

int sim_active(void)
{
    pthread_once(&P.once, init_once);
    return P.status;
}

/* ------------------------------------------------------------------------
 * Streams and operations.
 */
int sim_stream_new(int *slot)
{
    struct sim_shm *m = P.m;
    lock(m);
    int found = -1;
    for (int i = 0; i < SIM_STREAMS && found < 0; i++) {
        if (m->streams[i].state == SIM_FREE) {
            found = i;
            stream_free(&m->streams[i]);
            m->streams[i].state = SIM_USED;
            m->streams[i].owner = P.pid;
            m->streams[i].priority = P.priority;
        }
    }
    unlock_wake(m, false);
    if (found < 0) {
        fprintf(stderr, "simgpu: all %d simulated streams are in use; "
                "destroy streams or raise SIM_STREAMS\n", SIM_STREAMS);
        return SIM_ENOMEM;
    }
    *slot = found;
    return 0;
}

static bool own_stream(struct sim_shm *m, int slot);

int sim_stream_set_sms(int slot, const uint64_t *mask, int words)
{
    struct sim_shm *m = P.m;
    uint64_t set[SIM_MASK_WORDS] = { 0 };
    uint32_t n = 0;
    for (int i = 0; i < words; i++) {
        if (i >= SIM_MASK_WORDS && mask[i] != 0)
            return SIM_EINVAL; /* an SM beyond the simulated ones */
        if (i < SIM_MASK_WORDS)
            set[i] = mask[i];
    }
    for (int i = 0; i < SIM_MASK_WORDS; i++)
        n += (uint32_t)__builtin_popcountll(set[i]);
    lock(m);
    int r = own_stream(m, slot) ? 0 : SIM_EINVAL;
    if (r == 0) {
        memcpy(m->streams[slot].sm_mask, set, sizeof set);
        m->streams[slot].sms = n >= SIM_GPU_SMS ? 0 : n;
    }
    unlock_wake(m, false);
    return r;
}

int sim_default_stream(int *slot)
{
    pthread_mutex_lock(&P.start_lock);
    int r = 0;
    if (P.default_slot < 0)
        r = sim_stream_new(&P.default_slot);
    *slot = P.default_slot;
    pthread_mutex_unlock(&P.start_lock);
    return r;
}

void sim_stream_release(int slot)
{
    struct sim_shm *m = P.m;
    lock(m);
    struct sim_stream *s = &m->streams[slot];
    if (s->state == SIM_USED && s->owner == P.pid) {
        s->state = SIM_RELEASED;
        if (s->head == s->tail)
            stream_free(s);
    }
    unlock_wake(m, true);
}

static bool own_stream(struct sim_shm *m, int slot)
{
    return slot >= 0 && slot < SIM_STREAMS &&
           m->streams[slot].state == SIM_USED &&
           m->streams[slot].owner == P.pid;
}

static bool own_event(struct sim_shm *m, int ev)
{
    return ev >= 0 && ev < SIM_EVENTS && m->events[ev].used &&
           m->events[ev].owner == P.pid;
}

/* Appends op to the stream, waiting while its queue is full (as a real
 * launch blocks when the driver's push buffer is). */
static int enqueue(int slot, struct sim_op op)
{
    struct sim_shm *m = P.m;
    ensure_thread();
    for (;;) {
        lock(m);
        double now = now_ns();
        bool ch = advance(m, now);
        if (!own_stream(m, slot) ||
            ((op.type == SIM_OP_RECORD || op.type == SIM_OP_WAIT_EVENT) &&
             !own_event(m, op.event))) {
            unlock_wake(m, ch);
            return SIM_EINVAL;
        }
        struct sim_stream *s = &m->streams[slot];
        if (s->tail - s->head < SIM_RING) {
            if (op.type == SIM_OP_RECORD || op.type == SIM_OP_WAIT_EVENT)
                op.how = m->events[op.event].gen;
            if (op.type == SIM_OP_RECORD)
                op.value = ++m->events[op.event].recorded;
            else if (op.type == SIM_OP_WAIT_EVENT)
                op.value = m->events[op.event].recorded;
            else if (op.type == SIM_OP_KERNEL)
                m->launched++;
            s->ops[s->tail % SIM_RING] = op;
            s->tail++;
            advance(m, now); /* an idle stream starts it now */
            unlock_wake(m, true);
            return 0;
        }
        double t = next_wake(m, false);
        uint32_t g = atomic_load(&m->gen);
        unlock_wake(m, ch);
        sleep_on(m, g, t);
    }
}

/* A kernel's isolated duration: its profile's, else a duration in its name
 * ("...__simus<N>": N microseconds), else SIM_DEFAULT_US. */
static int kernel_of(struct sim_shm *m, const char *name, const unsigned g[3],
                     const unsigned b[3], unsigned dsmem, double *dur_ns)
{
    char key[SIM_KEYLEN];
    int w = snprintf(key, sizeof key, "%s|grid=%u,%u,%u|block=%u,%u,%u|"
                     "dsmem=%u", name, g[0], g[1], g[2], b[0], b[1], b[2],
                     dsmem);
    if (w > 0 && (size_t)w < sizeof key) {
        for (uint32_t i = 0; i < m->nkernels; i++) {
            if (strcmp(m->kernels[i].key, key) == 0) {
                *dur_ns = m->kernels[i].dur_ns;
                return (int)i;
            }
        }
    }
    const char *tag = strstr(name, "__simus");
    double us = SIM_DEFAULT_US;
    if (tag != NULL) {
        char *end;
        double v = strtod(tag + 7, &end);
        if (end != tag + 7 && v > 0)
            us = v;
    }
    *dur_ns = us * 1e3;
    return -1;
}

int sim_enqueue_kernel(int slot, const char *name, const unsigned grid[3],
                       const unsigned block[3], unsigned dyn_smem)
{
    double dur;
    struct sim_op op = { .type = SIM_OP_KERNEL };
    op.kernel = kernel_of(P.m, name, grid, block, dyn_smem, &dur);
    /* A green-context stream's SMs are set once, by this process, before
     * its first launch: read here without the lock. */
    uint32_t sms = slot >= 0 && slot < SIM_STREAMS ? P.m->streams[slot].sms : 0;
    op.work_ns = dur * P.m->scale * partition_ratio(P.m, op.kernel, sms);
    return enqueue(slot, op);
}

int sim_enqueue_record(int slot, int event)
{
    return enqueue(slot, (struct sim_op){ .type = SIM_OP_RECORD,
                                          .event = event });
}

int sim_enqueue_wait_event(int slot, int event)
{
    return enqueue(slot, (struct sim_op){ .type = SIM_OP_WAIT_EVENT,
                                          .event = event });
}

int sim_enqueue_wait_value(int slot, uint64_t addr, uint64_t value,
                           enum sim_wait how, bool is64)
{
    if (addr == 0 || (unsigned)how > SIM_WAIT_NOR)
        return SIM_EINVAL;
    return enqueue(slot, (struct sim_op){ .type = SIM_OP_WAIT_VALUE,
                                          .how = how, .is64 = is64,
                                          .addr = addr, .value = value });
}

int sim_enqueue_write_value(int slot, uint64_t addr, uint64_t value,
                            bool is64)
{
    if (addr == 0)
        return SIM_EINVAL;
    return enqueue(slot, (struct sim_op){ .type = SIM_OP_WRITE_VALUE,
                                          .is64 = is64, .addr = addr,
                                          .value = value });
}

/* ------------------------------------------------------------------------
 * Waiting.
 */
enum what { W_STREAM, W_CTX, W_EVENT };

/* Whether the thing is done; SIM_EINVAL if it is not this process's. */
static int done(struct sim_shm *m, enum what w, int id)
{
    if (w == W_STREAM) {
        if (!own_stream(m, id))
            return SIM_EINVAL;
        return m->streams[id].head == m->streams[id].tail ? 1 : 0;
    }
    if (w == W_EVENT) {
        if (!own_event(m, id))
            return SIM_EINVAL;
        return m->events[id].completed >= m->events[id].recorded ? 1 : 0;
    }
    for (int i = 0; i < SIM_STREAMS; i++) {
        const struct sim_stream *s = &m->streams[i];
        if (s->state != SIM_FREE && s->owner == P.pid && s->head != s->tail)
            return 0;
    }
    return 1;
}

static int wait_for(enum what w, int id, bool block)
{
    struct sim_shm *m = P.m;
    for (;;) {
        lock(m);
        bool ch = advance(m, now_ns());
        int d = done(m, w, id);
        double t = next_wake(m, false);
        uint32_t g = atomic_load(&m->gen);
        unlock_wake(m, ch);
        if (d < 0)
            return d;
        if (d == 1)
            return 0;
        if (!block)
            return SIM_ENOTREADY;
        if (!ch)
            sleep_on(m, g, t);
    }
}

int sim_stream_sync(int slot) { return wait_for(W_STREAM, slot, true); }
int sim_ctx_sync(void) { return wait_for(W_CTX, 0, true); }
int sim_stream_query(int slot) { return wait_for(W_STREAM, slot, false); }
int sim_event_query(int event) { return wait_for(W_EVENT, event, false); }
int sim_event_sync(int event) { return wait_for(W_EVENT, event, true); }

int sim_event_new(int *event)
{
    struct sim_shm *m = P.m;
    lock(m);
    int found = -1;
    for (int i = 0; i < SIM_EVENTS && found < 0; i++) {
        if (!m->events[i].used) {
            found = i;
            m->events[i] = (struct sim_event){
                .owner = P.pid, .used = 1, .gen = m->events[i].gen + 1 };
        }
    }
    unlock_wake(m, false);
    if (found < 0) {
        fprintf(stderr, "simgpu: all %d simulated events are in use; "
                "destroy events or raise SIM_EVENTS\n", SIM_EVENTS);
        return SIM_ENOMEM;
    }
    *event = found;
    return 0;
}

void sim_event_release(int event)
{
    struct sim_shm *m = P.m;
    lock(m);
    if (own_event(m, event))
        event_free(&m->events[event]);
    unlock_wake(m, true);
}

int sim_event_time(int event, double *ns)
{
    struct sim_shm *m = P.m;
    lock(m);
    bool ch = advance(m, now_ns());
    int r = 0;
    if (!own_event(m, event) || m->events[event].recorded == 0)
        r = SIM_EINVAL;
    else if (m->events[event].completed < m->events[event].recorded)
        r = SIM_ENOTREADY;
    else
        *ns = m->events[event].time_ns;
    unlock_wake(m, ch);
    return r;
}

int sim_info_self(struct sim_info *info)
{
    if (sim_active() != 1)
        return SIM_EINVAL;
    lock(P.m);
    fill_info(P.m, info);
    unlock_wake(P.m, false);
    return 0;
}
