/*
 * The protocol's mechanics: message parsing (good, bad magic, other
 * version, truncated, oversized), rings (order, full, wraparound, many
 * producers), event checks by role, and the shared segment's checks.
 */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"

static struct mosaic__msg_hello good_hello(void)
{
    struct mosaic__msg_hello h;

    memset(&h, 0, sizeof(h));
    mosaic__msg_init(&h.h, MOSAIC__MSG_HELLO, sizeof(h));
    h.pid = 42;
    h.role = MOSAIC_SCHED_ROLE_BE;
    return h;
}

static void hello_parses(void **state)
{
    struct mosaic__msg_hello h = good_hello();
    struct mosaic__msg m;
    char why[200];

    (void)state;
    assert_int_equal(mosaic__msg_parse(&h, sizeof(h), &m, why, sizeof(why)), 0);
    assert_int_equal(m.h.type, MOSAIC__MSG_HELLO);
    assert_int_equal(m.u.hello.pid, 42);
    assert_int_equal(m.u.hello.role, MOSAIC_SCHED_ROLE_BE);
}

/* A WELCOME's SM partition: a size a GPU can have is taken, a garbage word
 * refused with what it was. */
static void welcome_partition_checked(void **state)
{
    struct mosaic__msg_welcome w;
    struct mosaic__msg m;
    char why[200];

    (void)state;
    memset(&w, 0, sizeof(w));
    mosaic__msg_init(&w.h, MOSAIC__MSG_WELCOME, sizeof(w));
    w.role = MOSAIC_SCHED_ROLE_BE;
    w.sms = 60;
    assert_int_equal(mosaic__msg_parse(&w, sizeof(w), &m, why, sizeof(why)), 0);
    assert_int_equal(m.u.welcome.sms, 60);
    w.sms = 0xdeadbeefu;
    assert_int_equal(mosaic__msg_parse(&w, sizeof(w), &m, why, sizeof(why)), MOSAIC_EPROTO);
    assert_non_null(strstr(why, "partition of 3735928559 SMs"));
}

static void bad_messages_are_refused(void **state)
{
    struct mosaic__msg_hello h;
    struct mosaic__msg m;
    char why[200], big[600];

    (void)state;
    h = good_hello();
    h.h.magic ^= 1;
    assert_int_equal(mosaic__msg_parse(&h, sizeof(h), &m, why, sizeof(why)), MOSAIC_EPROTO);
    assert_non_null(strstr(why, "bad magic"));

    /* A client of the previous release (version 1, no gate slots) is
     * refused with the reason, and so is one from the future. */
    h = good_hello();
    h.h.version = 1;
    assert_int_equal(mosaic__msg_parse(&h, sizeof(h), &m, why, sizeof(why)), MOSAIC_EVERSION);
    assert_non_null(strstr(why, "protocol version 1, this side speaks 4"));
    h.h.version = MOSAIC__SCHED_PROTO + 1;
    assert_int_equal(mosaic__msg_parse(&h, sizeof(h), &m, why, sizeof(why)), MOSAIC_EVERSION);

    h = good_hello();
    assert_int_equal(mosaic__msg_parse(&h, 10, &m, why, sizeof(why)), MOSAIC_EPROTO);
    assert_non_null(strstr(why, "shorter than"));
    assert_int_equal(mosaic__msg_parse(&h, sizeof(h) - 4, &m, why, sizeof(why)), MOSAIC_EPROTO);
    assert_non_null(strstr(why, "truncated"));

    /* Oversized: a header claiming the larger size is still the wrong size
     * for a hello. */
    memset(big, 0, sizeof(big));
    h = good_hello();
    h.h.length = sizeof(big);
    memcpy(big, &h, sizeof(h));
    assert_int_equal(mosaic__msg_parse(big, sizeof(big), &m, why, sizeof(why)), MOSAIC_EPROTO);
    assert_non_null(strstr(why, "must be"));

    h = good_hello();
    h.role = 7;
    assert_int_equal(mosaic__msg_parse(&h, sizeof(h), &m, why, sizeof(why)), MOSAIC_EPROTO);
    h = good_hello();
    h.h.type = 99;
    assert_int_equal(mosaic__msg_parse(&h, sizeof(h), &m, why, sizeof(why)), MOSAIC_EPROTO);
    assert_non_null(strstr(why, "unknown message type 99"));
    h = good_hello();
    h.flags = 1;
    assert_int_equal(mosaic__msg_parse(&h, sizeof(h), &m, why, sizeof(why)), MOSAIC_EPROTO);
}

struct ring {
    struct mosaic__shm shm;
    int fd;
};

static void ring_open(struct ring *r, uint32_t entries)
{
    assert_int_equal(mosaic__shm_create(entries, 1, MOSAIC_SCHED_ROLE_HP, &r->shm, &r->fd), 0);
}

static void ring_close(struct ring *r)
{
    mosaic__shm_unmap(&r->shm);
    close(r->fd);
}

static void ring_full_and_wraparound(void **state)
{
    struct ring r;
    struct mosaic__entry e = {.type = MOSAIC__EV_HP_LAUNCH}, out;
    uint32_t pos = 0;
    uint64_t next_in = 0, next_out = 0;

    (void)state;
    ring_open(&r, 8);
    assert_int_equal(mosaic__ring_pop_private(r.shm.ev_ctl, r.shm.ev, r.shm.ev_mask, &pos, &out),
                     0);
    for (int i = 0; i < 8; i++) {
        e.id = next_in++;
        assert_int_equal(mosaic__ring_push_mp(r.shm.ev_ctl, r.shm.ev, r.shm.ev_mask, &e), 0);
    }
    e.id = 999;
    assert_int_equal(mosaic__ring_push_mp(r.shm.ev_ctl, r.shm.ev, r.shm.ev_mask, &e),
                     MOSAIC_ERINGFULL);
    /* Consume three, produce three, many times over: indices wrap the ring
     * dozens of times and the order holds. */
    for (int round = 0; round < 100; round++) {
        for (int k = 0; k < 3; k++) {
            assert_int_equal(
                mosaic__ring_pop_private(r.shm.ev_ctl, r.shm.ev, r.shm.ev_mask, &pos, &out), 1);
            assert_int_equal(out.id, next_out++);
        }
        for (int k = 0; k < 3; k++) {
            e.id = next_in++;
            assert_int_equal(mosaic__ring_push_mp(r.shm.ev_ctl, r.shm.ev, r.shm.ev_mask, &e), 0);
        }
        assert_int_equal(mosaic__ring_push_mp(r.shm.ev_ctl, r.shm.ev, r.shm.ev_mask, &e),
                         MOSAIC_ERINGFULL);
    }
    while (mosaic__ring_pop_private(r.shm.ev_ctl, r.shm.ev, r.shm.ev_mask, &pos, &out))
        assert_int_equal(out.id, next_out++);
    assert_int_equal(next_out, next_in);
    assert_int_equal(atomic_load(&r.shm.ev_ctl->tail), pos);
    ring_close(&r);
}

/* The 32-bit indices wrap past 2^32 too. */
static void ring_index_wraps_uint32(void **state)
{
    struct ring r;
    struct mosaic__entry e = {.type = MOSAIC__EV_HP_LAUNCH}, out;
    uint32_t start = 0xfffffffcu, pos = start, prod = start;

    (void)state;
    ring_open(&r, 8);
    for (uint32_t i = 0; i < 8; i++)
        atomic_store(&r.shm.gr[(start + i) & 7].seq, start + i);
    for (int i = 0; i < 20; i++) {
        e.id = (uint64_t)i;
        assert_int_equal(mosaic__ring_push_private(r.shm.gr_ctl, r.shm.gr, r.shm.gr_mask, &prod,
                                                   &e), 0);
        assert_int_equal(
            mosaic__ring_pop_private(r.shm.gr_ctl, r.shm.gr, r.shm.gr_mask, &pos, &out), 1);
        assert_int_equal(out.id, (uint64_t)i);
    }
    assert_true(pos < start); /* it wrapped */
    ring_close(&r);
}

struct producer {
    struct ring *r;
    int id;
    int n;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    struct mosaic__entry e = {.type = MOSAIC__EV_HP_LAUNCH, .ticket = (uint32_t)p->id};

    for (int i = 0; i < p->n;) {
        e.id = (uint64_t)i;
        if (mosaic__ring_push_mp(p->r->shm.ev_ctl, p->r->shm.ev, p->r->shm.ev_mask, &e) == 0)
            i++;
        else
            sched_yield();
    }
    return NULL;
}

static void ring_many_producers(void **state)
{
    enum { THREADS = 4, EACH = 20000 };
    struct ring r;
    pthread_t t[THREADS];
    struct producer p[THREADS];
    uint64_t next[THREADS] = {0};
    uint32_t pos = 0;
    int got = 0;

    (void)state;
    ring_open(&r, 64);
    for (int i = 0; i < THREADS; i++) {
        p[i] = (struct producer){&r, i, EACH};
        pthread_create(&t[i], NULL, produce, &p[i]);
    }
    while (got < THREADS * EACH) {
        struct mosaic__entry out;
        if (!mosaic__ring_pop_private(r.shm.ev_ctl, r.shm.ev, r.shm.ev_mask, &pos, &out)) {
            sched_yield();
            continue;
        }
        assert_true(out.ticket < THREADS);
        /* Each producer's events arrive complete and in its order. */
        assert_int_equal(out.id, next[out.ticket]);
        next[out.ticket]++;
        got++;
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    ring_close(&r);
}

static void entries_checked_by_role(void **state)
{
    struct mosaic__entry e = {0};
    char why[200];

    (void)state;
    e.type = MOSAIC__EV_HP_REQ_BEGIN;
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)), 0);
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_BE, why, sizeof(why)),
                     MOSAIC_EPROTO);
    assert_non_null(strstr(why, "from a be client"));
    e.type = MOSAIC__EV_BE_WANT;
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_BE, why, sizeof(why)), 0);
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)),
                     MOSAIC_EPROTO);
    e.type = MOSAIC__EV_GRANT; /* the daemon's own type, never a client's */
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_BE, why, sizeof(why)),
                     MOSAIC_EPROTO);
    e.type = MOSAIC__EV_BE_DONE;
    e.flags = 1;
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_BE, why, sizeof(why)),
                     MOSAIC_EPROTO);
    /* Gated entries: only a want or an HP launch, only a slot that exists. */
    e = (struct mosaic__entry){.type = MOSAIC__EV_BE_WANT, .flags = MOSAIC__EF_GATED | 63,
                               .aux = 7};
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_BE, why, sizeof(why)), 0);
    e.type = MOSAIC__EV_HP_REQ_END; /* the device's write at a request's end */
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)), 0);
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_BE, why, sizeof(why)),
                     MOSAIC_EPROTO);
    e.type = MOSAIC__EV_HP_REQ_BEGIN;
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)),
                     MOSAIC_EPROTO);
    e.type = MOSAIC__EV_HP_LAUNCH;
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)), 0);
    e.flags = MOSAIC__EF_GATED | 64;
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)),
                     MOSAIC_EPROTO);
    assert_non_null(strstr(why, "slot 64 of 64"));
    e.flags = MOSAIC__EF_GATED | 0x100;
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)),
                     MOSAIC_EPROTO);
    e = (struct mosaic__entry){.type = MOSAIC__EV_BE_DONE, .flags = MOSAIC__EF_GATED};
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_BE, why, sizeof(why)),
                     MOSAIC_EPROTO);
    assert_non_null(strstr(why, "cannot be gated"));
    /* A stream sequence without the gated flag is garbage. */
    e = (struct mosaic__entry){.type = MOSAIC__EV_BE_WANT, .aux = 3};
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_BE, why, sizeof(why)),
                     MOSAIC_EPROTO);
    /* A learned request's two ends: covered (gated, with its write) and
     * the host's (COVERS alone, no sequence); on an HP_REQ_END only. */
    e = (struct mosaic__entry){.type = MOSAIC__EV_HP_REQ_END,
                               .flags = MOSAIC__EF_GATED | MOSAIC__EF_COVERS | 5, .aux = 9};
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)), 0);
    e.type = MOSAIC__EV_HP_LAUNCH;
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)),
                     MOSAIC_EPROTO);
    e = (struct mosaic__entry){.type = MOSAIC__EV_HP_REQ_END, .flags = MOSAIC__EF_COVERS};
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)), 0);
    e.aux = 9;
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)),
                     MOSAIC_EPROTO);
    e = (struct mosaic__entry){.type = MOSAIC__EV_HP_REQ_BEGIN, .flags = MOSAIC__EF_COVERS};
    assert_int_equal(mosaic__entry_check(&e, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)),
                     MOSAIC_EPROTO);
}

static void segment_is_sealed_private_and_checked(void **state)
{
    struct ring r;
    struct mosaic__shm a;
    struct stat st;
    char why[200];
    int fd2;

    (void)state;
    ring_open(&r, 16);
    assert_int_equal(fstat(r.fd, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_not_equal(ftruncate(r.fd, 0), 0); /* sealed: cannot shrink */
    assert_int_equal(mosaic__shm_attach(r.fd, r.shm.size, &a, why, sizeof(why)), 0);
    assert_int_equal(a.ev_mask, 15);
    /* The gate slots: pages of their own after the rings, one cache line
     * each, zero (nothing granted, nothing done) in a new segment. */
    assert_int_equal((uintptr_t)a.gate % 4096, 0);
    assert_true((char *)a.gate >= (char *)(a.gr + 16));
    assert_int_equal(a.gate_bytes % 4096, 0);
    assert_true(a.gate_bytes >= MOSAIC__GATE_SLOTS * sizeof(struct mosaic__gate_slot));
    assert_int_equal(sizeof(struct mosaic__gate_slot), 64);
    assert_int_equal(atomic_load(&a.gate[MOSAIC__GATE_SLOTS - 1].grant), 0);
    assert_int_equal(atomic_load(&a.gate[0].done), 0);
    mosaic__shm_unmap(&a);
    assert_int_equal(mosaic__shm_attach(r.fd, r.shm.size + 4096, &a, why, sizeof(why)),
                     MOSAIC_EPROTO);

    r.shm.hdr->version = 9;
    assert_int_equal(mosaic__shm_attach(r.fd, r.shm.size, &a, why, sizeof(why)),
                     MOSAIC_EVERSION);
    r.shm.hdr->version = MOSAIC__SHM_VERSION;
    r.shm.hdr->ev_off = (uint32_t)r.shm.size - 64; /* the ring would run off the end */
    assert_int_equal(mosaic__shm_attach(r.fd, r.shm.size, &a, why, sizeof(why)), MOSAIC_EPROTO);
    assert_non_null(strstr(why, "outside"));
    r.shm.hdr->magic = 0;
    assert_int_equal(mosaic__shm_attach(r.fd, r.shm.size, &a, why, sizeof(why)), MOSAIC_EPROTO);
    assert_non_null(strstr(why, "magic"));

    /* An unsealed file of the right size is not accepted either. */
    fd2 = memfd_create("x", MFD_CLOEXEC);
    assert_int_equal(ftruncate(fd2, (off_t)r.shm.size), 0);
    assert_int_equal(mosaic__shm_attach(fd2, r.shm.size, &a, why, sizeof(why)), MOSAIC_EPROTO);
    assert_non_null(strstr(why, "sealed"));
    close(fd2);
    ring_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hello_parses),
        cmocka_unit_test(welcome_partition_checked),
        cmocka_unit_test(bad_messages_are_refused),
        cmocka_unit_test(ring_full_and_wraparound),
        cmocka_unit_test(ring_index_wraps_uint32),
        cmocka_unit_test(ring_many_producers),
        cmocka_unit_test(entries_checked_by_role),
        cmocka_unit_test(segment_is_sealed_private_and_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
