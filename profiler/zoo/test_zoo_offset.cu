/*
 * A GPU-free test of the offset co-runs' host side: delay parsing, the
 * schedule of rounds (offset_plan.h) and the IPC handle file (offset.h).
 * Nothing here calls CUDA; it runs with the GPU-free suite (ctest).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "offset.h"
#include "offset_plan.h"

static int g_failed, g_checks;

#define EXPECT(cond)                                                        \
    do {                                                                    \
        g_checks++;                                                         \
        if (!(cond)) {                                                      \
            g_failed++;                                                     \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__,     \
                    #cond);                                                 \
        }                                                                   \
    } while (0)

static void test_delays(void)
{
    struct zoo_delay d[ZOO_OFF_MAX_DELAYS];
    char err[512];
    int n;

    n = zoo_parse_delays("0,2,20,0.5x,1x,1.5x", d, ZOO_OFF_MAX_DELAYS, err,
                         sizeof(err));
    EXPECT(n == 6);
    EXPECT(d[0].us == 0 && d[0].x == 0);
    EXPECT(d[2].us == 20 && d[2].x == 0);
    EXPECT(d[3].x == 0.5 && d[3].us == 0);
    EXPECT(strcmp(d[4].spec, "1x") == 0);
    EXPECT(strcmp(d[5].spec, "1.5x") == 0);
    /* Refused: what the message must name. */
    err[0] = 0;
    EXPECT(zoo_parse_delays("5,1y", d, ZOO_OFF_MAX_DELAYS, err,
                            sizeof(err)) == -1);
    EXPECT(strstr(err, "'1y'") != NULL);
    EXPECT(zoo_parse_delays("-3", d, ZOO_OFF_MAX_DELAYS, err,
                            sizeof(err)) == -1);
    EXPECT(zoo_parse_delays("0x", d, ZOO_OFF_MAX_DELAYS, err,
                            sizeof(err)) == -1);
    EXPECT(zoo_parse_delays("x", d, ZOO_OFF_MAX_DELAYS, err,
                            sizeof(err)) == -1);
    EXPECT(zoo_parse_delays("", d, ZOO_OFF_MAX_DELAYS, err,
                            sizeof(err)) == -1);
    EXPECT(zoo_parse_delays(",", d, ZOO_OFF_MAX_DELAYS, err,
                            sizeof(err)) == -1);
    EXPECT(zoo_parse_delays("1,2,3", d, 2, err, sizeof(err)) == -1);
    EXPECT(strstr(err, "more than 2") != NULL);
}

static void test_plan(void)
{
    static struct zoo_round r[ZOO_OFF_MAX_ROUNDS];
    struct zoo_plan_state p;
    int n, k, n_iso = 0, n_co = 0, n_warm = 0, lead_b = 0;
    unsigned long long last;

    EXPECT(zoo_plan_init(&p, 10, 0) == 0);
    /* Pair (3, 4): a control round, 2 variants x 2 roles x (1 + 5) iso
     * rounds, 2 orders x 3 delays x (1 + 5) co-run rounds. */
    n = zoo_plan_pair(&p, 3, 4, 1, 1, 3, 5, 1, r, ZOO_OFF_MAX_ROUNDS);
    EXPECT(n == 1 + 24 + 36);
    EXPECT(r[0].kind == ZOO_ROUND_CONTROL && r[0].leader == 0);
    last = 0;
    for (k = 0; k < n; k++) {
        EXPECT(r[k].seq == last + 1);
        last = r[k].seq;
        n_iso += r[k].kind == ZOO_ROUND_ISO;
        n_co += r[k].kind == ZOO_ROUND_CORUN;
        n_warm += r[k].kind != ZOO_ROUND_CONTROL && r[k].warm;
        lead_b += r[k].kind == ZOO_ROUND_CORUN && r[k].leader == 1;
        if (r[k].kind == ZOO_ROUND_ISO) {
            /* Only the measured side's kernel runs. */
            EXPECT(r[k].run[r[k].iso_side] == 1);
            EXPECT(r[k].run[1 - r[k].iso_side] == 0);
        }
        if (r[k].kind == ZOO_ROUND_CORUN)
            EXPECT(r[k].run[0] && r[k].run[1] && r[k].delay_i >= 0);
    }
    EXPECT(n_iso == 24 && n_co == 36 && lead_b == 18);
    EXPECT(n_warm == 4 + 6);
    /* Isolated rounds come before the co-runs that use them. */
    EXPECT(r[24].kind == ZOO_ROUND_ISO && r[25].kind == ZOO_ROUND_CORUN);
    /* Variant 4 as A is new; 3 as B is new; 3 as A and 4 as B are not. */
    n = zoo_plan_pair(&p, 4, 3, 1, 0, 1, 2, 0, r, ZOO_OFF_MAX_ROUNDS);
    EXPECT(n == 2 * 2 * 3 + 1 * 1 * 3);
    EXPECT(r[0].seq == last + 1);
    n = zoo_plan_pair(&p, 3, 4, 1, 0, 1, 2, 0, r, ZOO_OFF_MAX_ROUNDS);
    EXPECT(n == 3);
    /* Too small an output is an error, not a short plan. */
    EXPECT(zoo_plan_pair(&p, 5, 6, 1, 1, 3, 5, 0, r, 10) == -1);
    zoo_plan_free(&p);

    /* Shared mode, one process: A's and B's configurations are one. */
    EXPECT(zoo_plan_init(&p, 10, 1) == 0);
    n = zoo_plan_pair(&p, 2, 2, 1, 0, 1, 1, 0, r, ZOO_OFF_MAX_ROUNDS);
    EXPECT(n == 2 * 2 + 2);
    EXPECT(zoo_plan_iso_key(&p, 2, 0, 1) == zoo_plan_iso_key(&p, 2, 1, 1));
    zoo_plan_free(&p);
}

/*
 * Replays one round's host steps against a model of the lazy-loading
 * deadlock of the H200 run (offset.h, zoo_sync_preload): the leader's
 * protocol kernel spins until the follower's has been enqueued, and a
 * measured kernel's launch may block the host until every spinner already
 * on the GPU has finished. Returns 1 when the host could be stuck: a launch
 * while the leader spins for a follower not yet enqueued.
 */
static int steps_can_deadlock(const struct zoo_round *r,
                              const struct zoo_step *st, int n)
{
    int lead_q = 0, follow_q = 0, k;

    for (k = 0; k < n; k++) {
        if (st[k].op == ZOO_STEP_SYNC) {
            if (st[k].side == r->leader)
                lead_q = 1;
            else
                follow_q = 1;
        }
        if (st[k].op == ZOO_STEP_KERNEL && lead_q && !follow_q)
            return 1;
    }
    return 0;
}

static void test_round_steps(void)
{
    static struct zoo_round r[ZOO_OFF_MAX_ROUNDS];
    struct zoo_step st[ZOO_ROUND_MAX_STEPS];
    struct zoo_round old_order;
    struct zoo_plan_state p;
    int n, k, j, s;

    EXPECT(zoo_plan_init(&p, 10, 0) == 0);
    /* Every kind of round: isolated rounds of both sides in both roles,
     * co-runs in both orders. */
    n = zoo_plan_pair(&p, 1, 2, 1, 1, 2, 1, 0, r, ZOO_OFF_MAX_ROUNDS);
    EXPECT(n == 8 + 8);
    for (k = 0; k < n; k++) {
        int m = zoo_round_steps(&r[k], st), pos[2][5], seen_kernel = 0;

        EXPECT(m <= ZOO_ROUND_MAX_STEPS);
        EXPECT(m == 8 + r[k].run[0] + r[k].run[1]);
        EXPECT(!steps_can_deadlock(&r[k], st, m));
        memset(pos, -1, sizeof(pos));
        for (j = 0; j < m; j++) {
            EXPECT(st[j].side == 0 || st[j].side == 1);
            EXPECT(pos[st[j].side][st[j].op] == -1);
            pos[st[j].side][st[j].op] = j;
            /* No protocol kernel after a measured kernel's launch. */
            if (st[j].op == ZOO_STEP_KERNEL)
                seen_kernel = 1;
            EXPECT(!(seen_kernel && st[j].op == ZOO_STEP_SYNC));
        }
        for (s = 0; s < 2; s++) {
            /* Each stream: gate, protocol kernel, start event, the kernel
             * when it runs, end event. */
            EXPECT(pos[s][ZOO_STEP_WAIT_GATE] >= 0);
            EXPECT(pos[s][ZOO_STEP_WAIT_GATE] < pos[s][ZOO_STEP_SYNC]);
            EXPECT(pos[s][ZOO_STEP_SYNC] < pos[s][ZOO_STEP_EV_START]);
            EXPECT((pos[s][ZOO_STEP_KERNEL] >= 0) == (r[k].run[s] != 0));
            if (r[k].run[s])
                EXPECT(pos[s][ZOO_STEP_EV_START] < pos[s][ZOO_STEP_KERNEL] &&
                       pos[s][ZOO_STEP_KERNEL] < pos[s][ZOO_STEP_EV_END]);
            EXPECT(pos[s][ZOO_STEP_EV_START] < pos[s][ZOO_STEP_EV_END]);
        }
        /* The leader's kernel is enqueued first, as corun does. */
        if (r[k].run[0] && r[k].run[1])
            EXPECT(pos[r[k].leader][ZOO_STEP_KERNEL] <
                   pos[1 - r[k].leader][ZOO_STEP_KERNEL]);
    }
    /* The model does catch the order of the 2026-12-01 run (each stream
     * enqueued in one go, the leader's first). */
    memset(&old_order, 0, sizeof(old_order));
    old_order.run[0] = old_order.run[1] = 1;
    {
        struct zoo_step o[8] = {
            {ZOO_STEP_WAIT_GATE, 0}, {ZOO_STEP_SYNC, 0},
            {ZOO_STEP_EV_START, 0},  {ZOO_STEP_KERNEL, 0},
            {ZOO_STEP_EV_END, 0},    {ZOO_STEP_WAIT_GATE, 1},
            {ZOO_STEP_SYNC, 1},      {ZOO_STEP_EV_START, 1}};

        EXPECT(steps_can_deadlock(&old_order, o, 8));
    }
    zoo_plan_free(&p);
}

/* A (variant, side, role) whose isolated rounds failed is measured again
 * with the variant's next pair, and only that one. */
static void test_plan_forget(void)
{
    static struct zoo_round r[ZOO_OFF_MAX_ROUNDS];
    struct zoo_plan_state p;
    int n, k, n_iso = 0;

    EXPECT(zoo_plan_init(&p, 10, 1) == 0);
    n = zoo_plan_pair(&p, 3, 4, 1, 1, 1, 2, 0, r, ZOO_OFF_MAX_ROUNDS);
    EXPECT(n == 4 * 3 + 2 * 3);
    zoo_plan_forget(&p, zoo_plan_iso_key(&p, 3, 0, 1));
    /* Out of range: ignored, not a write past the table. */
    zoo_plan_forget(&p, -1);
    zoo_plan_forget(&p, 1 << 20);
    n = zoo_plan_pair(&p, 5, 3, 1, 0, 1, 2, 0, r, ZOO_OFF_MAX_ROUNDS);
    for (k = 0; k < n; k++) {
        if (r[k].kind != ZOO_ROUND_ISO)
            continue;
        n_iso++;
        /* Variant 3 is side b here; shared mode collapses the sides. */
        if (r[k].iso_side == 1)
            EXPECT(r[k].leader == 0); /* role 1: it follows */
    }
    /* Variant 5 in both roles, variant 3 again in the forgotten role. */
    EXPECT(n_iso == 3 * 3);
    zoo_plan_free(&p);
}

static void test_hash(void)
{
    const char *a[2] = {"copy_128M", "fma_66_b64_c32"};
    const char *b[2] = {"triad_128M", "gemm_cublas_bf16_4096"};
    const char *b2[2] = {"triad_128M", "gemm_cublas_bf16_8192"};
    struct zoo_delay d[4];
    char err[256];
    int nd = zoo_parse_delays("0,5,1x", d, 4, err, sizeof(err));
    unsigned long long h = zoo_plan_hash(a, b, 2, d, nd, 1, 1, 5);

    EXPECT(h == zoo_plan_hash(a, b, 2, d, nd, 1, 1, 5));
    EXPECT(h != zoo_plan_hash(a, b2, 2, d, nd, 1, 1, 5));
    EXPECT(h != zoo_plan_hash(a, b, 2, d, nd, 1, 0, 5));
    EXPECT(h != zoo_plan_hash(a, b, 2, d, nd, 1, 1, 4));
    EXPECT(h != zoo_plan_hash(a, b, 2, d, nd - 1, 1, 1, 5));
    EXPECT(h != zoo_plan_hash(b, a, 2, d, nd, 1, 1, 5));
}

static void test_handle_file(void)
{
    char dir[] = "/tmp/test_zoo_offset.XXXXXX";
    char path[256], err[1024];
    struct zoo_sync_peer p, q;
    struct stat st;
    FILE *f;
    int fd;

    EXPECT(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/h", dir);
    memset(&p, 0, sizeof(p));
    memset(p.handle.reserved, 0x5a, sizeof(p.handle.reserved));
    p.pid = (long long)getpid();
    p.schedule_hash = 0x1234abcdull;
    /* umask 0: the file must still be 0600. */
    umask(0);
    EXPECT(zoo_sync_write_handle(path, &p, err, sizeof(err)) == 0);
    EXPECT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    memset(&q, 0, sizeof(q));
    EXPECT(zoo_sync_read_handle(path, 0.1, &q, err, sizeof(err)) == 0);
    EXPECT(q.pid == p.pid && q.schedule_hash == p.schedule_hash);
    EXPECT(memcmp(&q.handle, &p.handle, sizeof(p.handle)) == 0);

    /* Readable by others: refused. */
    EXPECT(chmod(path, 0644) == 0);
    err[0] = 0;
    EXPECT(zoo_sync_read_handle(path, 0.1, &q, err, sizeof(err)) == -1);
    EXPECT(strstr(err, "0600") != NULL);
    unlink(path);

    /* Not a handle file: refused, and the message says what to do. */
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    EXPECT(fd >= 0);
    if (fd >= 0) {
        EXPECT(write(fd, "not a handle file at all, just text........", 44)
               == 44);
        close(fd);
    }
    err[0] = 0;
    EXPECT(zoo_sync_read_handle(path, 0.1, &q, err, sizeof(err)) == -1);
    EXPECT(strstr(err, "remove it") != NULL);
    unlink(path);

    /* A file of a process that has exited is stale: waited past, then
     * refused after the wait. The pid of a child that was reaped is free. */
    {
        pid_t c = fork();

        if (c == 0)
            _exit(0);
        while (waitpid(c, NULL, 0) < 0 && errno == EINTR) {
        }
        p.pid = (long long)c;
        EXPECT(zoo_sync_write_handle(path, &p, err, sizeof(err)) == 0);
        err[0] = 0;
        EXPECT(zoo_sync_read_handle(path, 0.05, &q, err, sizeof(err)) == -1);
        EXPECT(strstr(err, "exited") != NULL);
        unlink(path);
    }

    /* Missing: refused after the wait, naming the leader to start. */
    err[0] = 0;
    EXPECT(zoo_sync_read_handle(path, 0.05, &q, err, sizeof(err)) == -1);
    EXPECT(strstr(err, "--role a") != NULL);

    /* An existing temporary file (a planted link, say) is not written
     * through: O_EXCL makes the write fail. */
    {
        char tmp[300];

        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
        f = fopen(tmp, "w");
        EXPECT(f != NULL);
        if (f)
            fclose(f);
        p.pid = (long long)getpid();
        EXPECT(zoo_sync_write_handle(path, &p, err, sizeof(err)) == -1);
        unlink(tmp);
    }
    rmdir(dir);
}

int main(void)
{
    test_delays();
    test_plan();
    test_round_steps();
    test_plan_forget();
    test_hash();
    test_handle_file();
    printf("test_zoo_offset: %d checks, %d failed\n", g_checks, g_failed);
    return g_failed ? 1 : 0;
}
