/*
 * The scheduler protocol's mechanics shared by the daemon and the client
 * library: message parsing, the shared segment and its rings.
 *
 * The segment is a memfd (memfd_create) rather than a file under /dev/shm:
 * it has no name, so nothing stale can be found or poisoned by the next
 * process, it dies with its last mapping, and its size is sealed so that a
 * client cannot shrink it under the daemon (a SIGBUS in the arbiter).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

static int whyf(char *why, size_t whylen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int whyf(char *why, size_t whylen, int code, const char *fmt, ...)
{
    va_list ap;

    if (why && whylen) {
        va_start(ap, fmt);
        if (vsnprintf(why, whylen, fmt, ap) < 0)
            why[0] = '\0';
        va_end(ap);
    }
    return code;
}

void mosaic__msg_init(struct mosaic__msg_hdr *h, int type, size_t length)
{
    memset(h, 0, sizeof(*h));
    h->magic = MOSAIC__SCHED_MAGIC;
    h->version = MOSAIC__SCHED_PROTO;
    h->type = (uint16_t)type;
    h->length = (uint32_t)length;
}

int mosaic__msg_parse(const void *buf, size_t len, struct mosaic__msg *out,
                      char *why, size_t whylen)
{
    size_t want = 0;

    memset(out, 0, sizeof(*out));
    if (len < sizeof(struct mosaic__msg_hdr))
        return whyf(why, whylen, MOSAIC_EPROTO,
                    "message of %zu bytes is shorter than the %zu-byte header", len,
                    sizeof(struct mosaic__msg_hdr));
    memcpy(&out->h, buf, sizeof(out->h));
    if (out->h.magic != MOSAIC__SCHED_MAGIC)
        return whyf(why, whylen, MOSAIC_EPROTO, "bad magic 0x%08x (want 0x%08x)",
                    out->h.magic, MOSAIC__SCHED_MAGIC);
    if (out->h.version != MOSAIC__SCHED_PROTO)
        return whyf(why, whylen, MOSAIC_EVERSION,
                    "protocol version %u, this side speaks %u: use a client and "
                    "daemon of the same Mosaic release",
                    out->h.version, MOSAIC__SCHED_PROTO);
    if (out->h.length != len)
        return whyf(why, whylen, MOSAIC_EPROTO,
                    "header says %u bytes, %zu arrived (truncated or padded)",
                    out->h.length, len);
    if (out->h.reserved != 0)
        return whyf(why, whylen, MOSAIC_EPROTO, "reserved header field is not 0");
    switch (out->h.type) {
    case MOSAIC__MSG_HELLO:
        want = sizeof(struct mosaic__msg_hello);
        break;
    case MOSAIC__MSG_WELCOME:
        want = sizeof(struct mosaic__msg_welcome);
        break;
    case MOSAIC__MSG_REFUSE:
        want = sizeof(struct mosaic__msg_refuse);
        break;
    case MOSAIC__MSG_DOORBELL:
    case MOSAIC__MSG_STATUS:
        want = sizeof(struct mosaic__msg_hdr);
        break;
    case MOSAIC__MSG_PARTITION:
        want = sizeof(struct mosaic__msg_partition);
        break;
    case MOSAIC__MSG_PARTITION_SET:
        want = sizeof(struct mosaic__msg_partition_set);
        break;
    case MOSAIC__MSG_STATUS_REPLY:
        out->text = (const char *)buf + sizeof(struct mosaic__msg_hdr);
        out->text_len = len - sizeof(struct mosaic__msg_hdr);
        if (memchr(out->text, '\0', out->text_len))
            return whyf(why, whylen, MOSAIC_EPROTO, "status text holds a NUL byte");
        return 0;
    default:
        return whyf(why, whylen, MOSAIC_EPROTO, "unknown message type %u", out->h.type);
    }
    if (len != want)
        return whyf(why, whylen, MOSAIC_EPROTO,
                    "message type %u must be %zu bytes, got %zu", out->h.type, want, len);
    memcpy(&out->u, buf, want);
    switch (out->h.type) {
    case MOSAIC__MSG_HELLO:
        if (out->u.hello.role > MOSAIC_SCHED_ROLE_BE)
            return whyf(why, whylen, MOSAIC_EPROTO,
                        "requested role %u is not none (0), hp (1) or be (2)",
                        out->u.hello.role);
        if (out->u.hello.flags != 0 || out->u.hello.reserved != 0)
            return whyf(why, whylen, MOSAIC_EPROTO, "hello flags must be 0");
        break;
    case MOSAIC__MSG_WELCOME:
        if (out->u.welcome.role != MOSAIC_SCHED_ROLE_HP &&
            out->u.welcome.role != MOSAIC_SCHED_ROLE_BE)
            return whyf(why, whylen, MOSAIC_EPROTO, "granted role %u is not hp or be",
                        out->u.welcome.role);
        if (out->u.welcome.be_on_timeout > MOSAIC_SCHED_TIMEOUT_HOLD)
            return whyf(why, whylen, MOSAIC_EPROTO, "be_on_timeout %u unknown",
                        out->u.welcome.be_on_timeout);
        if (out->u.welcome.sms > MOSAIC__SCHED_MAX_SMS)
            return whyf(why, whylen, MOSAIC_EPROTO, "partition of %u SMs (at most %u)",
                        out->u.welcome.sms, MOSAIC__SCHED_MAX_SMS);
        break;
    case MOSAIC__MSG_REFUSE:
        if (!memchr(out->u.refuse.reason, '\0', sizeof(out->u.refuse.reason)))
            return whyf(why, whylen, MOSAIC_EPROTO, "refusal reason is not terminated");
        break;
    case MOSAIC__MSG_PARTITION:
        if (out->u.partition.sms > MOSAIC__SCHED_MAX_SMS || out->u.partition.reserved != 0)
            return whyf(why, whylen, MOSAIC_EPROTO, "partition of %u SMs (at most %u, "
                        "reserved 0)", out->u.partition.sms, MOSAIC__SCHED_MAX_SMS);
        break;
    case MOSAIC__MSG_PARTITION_SET:
        if (out->u.partition_set.hp_sms > MOSAIC__SCHED_MAX_SMS ||
            out->u.partition_set.reserved != 0)
            return whyf(why, whylen, MOSAIC_EPROTO, "an HP group of %u SMs (at most %u, "
                        "reserved 0)", out->u.partition_set.hp_sms, MOSAIC__SCHED_MAX_SMS);
        break;
    default:
        break;
    }
    return 0;
}

/* ---- shared segment --------------------------------------------------- */

static size_t align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

size_t mosaic__shm_size(uint32_t entries)
{
    size_t n = align_up(sizeof(struct mosaic__shm_hdr), MOSAIC__CACHELINE);

    n += 2 * sizeof(struct mosaic__ring_ctl);
    n += 2 * (size_t)entries * sizeof(struct mosaic__entry);
    n = align_up(n, 4096);
    /* The gate slots start on a page of their own: the device mapping
     * covers them and nothing else of the segment. */
    n += align_up(MOSAIC__GATE_SLOTS * sizeof(struct mosaic__gate_slot), 4096);
    return n;
}

static void locate(struct mosaic__shm *shm)
{
    char *b = shm->base;

    shm->hdr = (struct mosaic__shm_hdr *)b;
    shm->ev_ctl = (struct mosaic__ring_ctl *)(b + shm->hdr->ev_ctl_off);
    shm->gr_ctl = (struct mosaic__ring_ctl *)(b + shm->hdr->gr_ctl_off);
    shm->ev = (struct mosaic__entry *)(b + shm->hdr->ev_off);
    shm->gr = (struct mosaic__entry *)(b + shm->hdr->gr_off);
    shm->ev_mask = shm->hdr->ev_entries - 1;
    shm->gr_mask = shm->hdr->gr_entries - 1;
    shm->gate = (struct mosaic__gate_slot *)(b + shm->hdr->gate_off);
    shm->gate_bytes = shm->size - shm->hdr->gate_off;
}

int mosaic__shm_create(uint32_t entries, uint32_t client_id, uint32_t role,
                       struct mosaic__shm *shm, int *fd_out)
{
    size_t size, off;
    int fd;
    void *base;
    struct mosaic__shm_hdr *h;

    if (entries < MOSAIC__RING_MIN || entries > MOSAIC__RING_MAX ||
        (entries & (entries - 1)) != 0)
        return MOSAIC_EINVAL;
    size = mosaic__shm_size(entries);
    fd = memfd_create("mosaic-sched", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return MOSAIC_ESYS;
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        close(fd);
        return MOSAIC_ESYS;
    }
    base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        close(fd);
        return MOSAIC_ENOMEM;
    }
    h = base;
    h->magic = MOSAIC__SHM_MAGIC;
    h->version = MOSAIC__SHM_VERSION;
    h->hdr_size = sizeof(*h);
    h->total_size = (uint32_t)size;
    h->entry_size = sizeof(struct mosaic__entry);
    off = align_up(sizeof(*h), MOSAIC__CACHELINE);
    h->ev_ctl_off = (uint32_t)off;
    off += sizeof(struct mosaic__ring_ctl);
    h->gr_ctl_off = (uint32_t)off;
    off += sizeof(struct mosaic__ring_ctl);
    h->ev_off = (uint32_t)off;
    h->ev_entries = entries;
    off += (size_t)entries * sizeof(struct mosaic__entry);
    h->gr_off = (uint32_t)off;
    h->gr_entries = entries;
    off += (size_t)entries * sizeof(struct mosaic__entry);
    h->gate_off = (uint32_t)align_up(off, 4096);
    h->gate_slots = MOSAIC__GATE_SLOTS;
    h->client_id = client_id;
    h->role = role;
    shm->base = base;
    shm->size = size;
    locate(shm);
    for (uint32_t i = 0; i < entries; i++) {
        atomic_init(&shm->ev[i].seq, i);
        atomic_init(&shm->gr[i].seq, i);
    }
    *fd_out = fd;
    return 0;
}

static int ring_fits(uint32_t ctl_off, uint32_t off, uint32_t entries, size_t size)
{
    return entries >= MOSAIC__RING_MIN && entries <= MOSAIC__RING_MAX &&
           (entries & (entries - 1)) == 0 && ctl_off % MOSAIC__CACHELINE == 0 &&
           (size_t)ctl_off + sizeof(struct mosaic__ring_ctl) <= size &&
           off % 8 == 0 && (size_t)off + (size_t)entries * sizeof(struct mosaic__entry) <= size;
}

int mosaic__shm_check(const void *base, size_t size, char *why, size_t whylen)
{
    const struct mosaic__shm_hdr *h = base;

    if (size < sizeof(*h))
        return whyf(why, whylen, MOSAIC_EPROTO, "segment of %zu bytes is smaller than its header",
                    size);
    if (h->magic != MOSAIC__SHM_MAGIC)
        return whyf(why, whylen, MOSAIC_EPROTO, "segment magic is wrong (not a Mosaic segment)");
    if (h->version != MOSAIC__SHM_VERSION)
        return whyf(why, whylen, MOSAIC_EVERSION, "segment version %u, this side knows %u",
                    h->version, MOSAIC__SHM_VERSION);
    if (h->hdr_size != sizeof(*h) || h->entry_size != sizeof(struct mosaic__entry) ||
        h->total_size != size)
        return whyf(why, whylen, MOSAIC_EPROTO,
                    "segment sizes disagree (header %u, entry %u, total %u of %zu)",
                    h->hdr_size, h->entry_size, h->total_size, size);
    if (!ring_fits(h->ev_ctl_off, h->ev_off, h->ev_entries, size) ||
        !ring_fits(h->gr_ctl_off, h->gr_off, h->gr_entries, size))
        return whyf(why, whylen, MOSAIC_EPROTO, "a ring lies outside the segment");
    if (h->gate_slots != MOSAIC__GATE_SLOTS || h->gate_off % 4096 != 0 ||
        (size_t)h->gate_off + MOSAIC__GATE_SLOTS * sizeof(struct mosaic__gate_slot) > size ||
        (size_t)h->gate_off < (size_t)h->gr_off + (size_t)h->gr_entries * sizeof(struct mosaic__entry))
        return whyf(why, whylen, MOSAIC_EPROTO,
                    "the gate slots (%u at offset %u) do not fit after the rings",
                    h->gate_slots, h->gate_off);
    return 0;
}

int mosaic__shm_attach(int fd, size_t expect_size, struct mosaic__shm *shm, char *why,
                       size_t whylen)
{
    struct stat st;
    void *base;
    int rc, seals;

    memset(shm, 0, sizeof(*shm));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != expect_size)
        return whyf(why, whylen, MOSAIC_EPROTO,
                    "the segment handed over is not a %zu-byte memory file", expect_size);
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
        return whyf(why, whylen, MOSAIC_EPROTO, "the segment's size is not sealed");
    base = mmap(NULL, expect_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        return whyf(why, whylen, MOSAIC_ENOMEM, "cannot map the segment: %s", strerror(errno));
    rc = mosaic__shm_check(base, expect_size, why, whylen);
    if (rc != 0) {
        munmap(base, expect_size);
        return rc;
    }
    shm->base = base;
    shm->size = expect_size;
    locate(shm);
    return 0;
}

void mosaic__shm_unmap(struct mosaic__shm *shm)
{
    if (shm->base)
        munmap(shm->base, shm->size);
    memset(shm, 0, sizeof(*shm));
}

/* ---- rings ------------------------------------------------------------ */

static void fill(struct mosaic__entry *dst, const struct mosaic__entry *src)
{
    dst->type = src->type;
    dst->flags = src->flags;
    dst->ticket = src->ticket;
    dst->aux = src->aux;
    dst->id = src->id;
    dst->value = src->value;
}

int mosaic__ring_push_mp(struct mosaic__ring_ctl *ctl, struct mosaic__entry *ring,
                         uint32_t mask, const struct mosaic__entry *e)
{
    uint32_t pos = atomic_load_explicit(&ctl->head, memory_order_relaxed);

    /* Bounded: a contended compare-and-swap retries, but a ring whose
     * entries are not free is reported full at once, never waited on. */
    for (int tries = 0; tries < 1024; tries++) {
        struct mosaic__entry *slot = &ring[pos & mask];
        uint32_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
        int32_t diff = (int32_t)(seq - pos);

        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&ctl->head, &pos, pos + 1,
                                                      memory_order_relaxed,
                                                      memory_order_relaxed)) {
                fill(slot, e);
                atomic_store_explicit(&slot->seq, pos + 1, memory_order_release);
                return 0;
            }
        } else if (diff < 0) {
            return MOSAIC_ERINGFULL;
        } else {
            pos = atomic_load_explicit(&ctl->head, memory_order_relaxed);
        }
    }
    return MOSAIC_ERINGFULL;
}

int mosaic__ring_push_private(struct mosaic__ring_ctl *ctl, struct mosaic__entry *ring,
                              uint32_t mask, uint32_t *pos, const struct mosaic__entry *e)
{
    struct mosaic__entry *slot = &ring[*pos & mask];

    if (atomic_load_explicit(&slot->seq, memory_order_acquire) != *pos)
        return MOSAIC_ERINGFULL;
    fill(slot, e);
    atomic_store_explicit(&slot->seq, *pos + 1, memory_order_release);
    *pos += 1;
    atomic_store_explicit(&ctl->head, *pos, memory_order_release);
    return 0;
}

int mosaic__ring_pop_private(struct mosaic__ring_ctl *ctl, struct mosaic__entry *ring,
                             uint32_t mask, uint32_t *pos, struct mosaic__entry *e)
{
    struct mosaic__entry *slot = &ring[*pos & mask];

    if (atomic_load_explicit(&slot->seq, memory_order_acquire) != *pos + 1)
        return 0;
    fill(e, slot);
    atomic_store_explicit(&slot->seq, *pos + mask + 1, memory_order_release);
    *pos += 1;
    atomic_store_explicit(&ctl->tail, *pos, memory_order_release);
    return 1;
}

int mosaic__ring_pop_shared(struct mosaic__ring_ctl *ctl, struct mosaic__entry *ring,
                            uint32_t mask, struct mosaic__entry *e)
{
    uint32_t pos = atomic_load_explicit(&ctl->tail, memory_order_relaxed);

    return mosaic__ring_pop_private(ctl, ring, mask, &pos, e);
}

int mosaic__entry_check(const struct mosaic__entry *e, int role, char *why, size_t whylen)
{
    int hp = role == MOSAIC_SCHED_ROLE_HP;

    if (e->flags & MOSAIC__EF_GATED) {
        if (e->type != MOSAIC__EV_BE_WANT && e->type != MOSAIC__EV_HP_LAUNCH &&
            e->type != MOSAIC__EV_HP_REQ_END)
            return whyf(why, whylen, MOSAIC_EPROTO, "event type %u cannot be gated (only "
                        "BE_WANT, HP_LAUNCH and HP_REQ_END)", e->type);
        uint32_t known = MOSAIC__EF_GATED | MOSAIC__EF_SLOT_MASK |
                         (e->type == MOSAIC__EV_HP_REQ_END ? MOSAIC__EF_COVERS : 0);
        if ((e->flags & ~known) != 0 ||
            (e->flags & MOSAIC__EF_SLOT_MASK) >= MOSAIC__GATE_SLOTS)
            return whyf(why, whylen, MOSAIC_EPROTO, "gated event type %u names slot %u of %u "
                        "(or unknown flags 0x%04x)", e->type, e->flags & MOSAIC__EF_SLOT_MASK,
                        MOSAIC__GATE_SLOTS, e->flags);
    } else if (e->type == MOSAIC__EV_BE_GRAPH) {
        if (e->flags != 0 || e->aux == 0 || e->aux > MOSAIC__GRAPH_MAX_KERNELS ||
            e->ticket >= e->aux || e->id == 0 || e->value == 0)
            return whyf(why, whylen, MOSAIC_EPROTO, "graph definition entry %u of %u kernels "
                        "(graph %016llx, kernel %016llx): a graph holds 1 to %u kernels, each "
                        "named, flags 0", e->ticket, e->aux, (unsigned long long)e->id,
                        (unsigned long long)e->value, MOSAIC__GRAPH_MAX_KERNELS);
    } else if ((e->flags != 0 || e->aux != 0) &&
               !(e->type == MOSAIC__EV_HP_REQ_END && e->flags == MOSAIC__EF_COVERS && !e->aux)) {
        return whyf(why, whylen, MOSAIC_EPROTO, "event type %u has non-zero flags",
                    e->type);
    }
    switch (e->type) {
    case MOSAIC__EV_HP_REQ_BEGIN:
    case MOSAIC__EV_HP_REQ_END:
    case MOSAIC__EV_HP_LAUNCH:
    case MOSAIC__EV_HP_COMPLETE:
        if (!hp)
            return whyf(why, whylen, MOSAIC_EPROTO, "HP event %u from a %s client", e->type,
                        mosaic__role_str(role));
        return 0;
    case MOSAIC__EV_BE_WANT:
    case MOSAIC__EV_BE_DONE:
    case MOSAIC__EV_BE_GRAPH:
        if (role != MOSAIC_SCHED_ROLE_BE)
            return whyf(why, whylen, MOSAIC_EPROTO, "BE event %u from a %s client", e->type,
                        mosaic__role_str(role));
        return 0;
    default:
        return whyf(why, whylen, MOSAIC_EPROTO, "unknown event type %u", e->type);
    }
}

/* ---- helpers ---------------------------------------------------------- */

uint64_t mosaic__graph_unit_id(const uint64_t *kernel_ids, size_t n)
{
    /* FNV-1a over the ids' bytes, with a tag first so that a graph of one
     * kernel does not get an id near its kernel's own. Equal graphs get
     * equal ids, so a reconnecting client defines the same id again. */
    uint64_t h = 0xcbf29ce484222325ull;
    static const char tag[] = "mosaic-graph";

    for (size_t i = 0; i < sizeof(tag) - 1; i++)
        h = (h ^ (unsigned char)tag[i]) * 0x100000001b3ull;
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++)
            h = (h ^ ((kernel_ids[i] >> (8 * b)) & 0xffu)) * 0x100000001b3ull;
    return h ? h : 1;
}

uint64_t mosaic__now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *mosaic__role_str(int role)
{
    switch (role) {
    case MOSAIC_SCHED_ROLE_HP:
        return "hp";
    case MOSAIC_SCHED_ROLE_BE:
        return "be";
    default:
        return "none";
    }
}

int mosaic__send_msg(int sock, const void *msg, size_t len, int fd)
{
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    ssize_t n;

    if (fd >= 0) {
        struct cmsghdr *cm;
        memset(&ctl, 0, sizeof(ctl));
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof(ctl.buf);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    }
    do
        n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EAGAIN ? MOSAIC_ERINGFULL : MOSAIC_EDISCONNECTED;
    return (size_t)n == len ? 0 : MOSAIC_EIO;
}

long mosaic__recv_msg(int sock, void *buf, size_t cap, int *fd, int flags)
{
    struct iovec iov = {.iov_base = buf, .iov_len = cap};
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf)};
    ssize_t n;

    if (fd)
        *fd = -1;
    do
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EAGAIN ? MOSAIC_ETIMEDOUT : MOSAIC_EDISCONNECTED;
    /* Any descriptor that arrived is ours to close unless it is the one
     * expected; a hostile peer cannot make us leak descriptors. */
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfd; i++) {
            int got;
            memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (fd && *fd < 0)
                *fd = got;
            else
                close(got);
        }
    }
    if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        if (fd && *fd >= 0) {
            close(*fd);
            *fd = -1;
        }
        return MOSAIC_EPROTO;
    }
    return (long)n;
}

int mosaic__futex_wait(_Atomic uint32_t *word, uint32_t expect, uint32_t timeout_us)
{
    struct timespec ts = {.tv_sec = timeout_us / 1000000u,
                          .tv_nsec = (long)(timeout_us % 1000000u) * 1000};
    long rc = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, expect, &ts, NULL, 0);

    if (rc == 0)
        return 0;
    return errno == ETIMEDOUT ? MOSAIC_ETIMEDOUT : 0;
}

void mosaic__futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}
