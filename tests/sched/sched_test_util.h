/*
 * What the end-to-end tests of the arbiter share (tests/sched/test_sched_daemon.c,
 * tests/arbiter/test_gate.c): starting the built mosaic-sched with a config
 * of the test's, killing every process a failed test left behind, reading
 * the metrics page, and waiting for a condition with a bound. Each test
 * keeps its own config text and its own view of a daemon.
 */
#ifndef MOSAIC_TESTS_SCHED_TEST_UTIL_H
#define MOSAIC_TESTS_SCHED_TEST_UTIL_H

#include <sys/types.h>

void stu_msleep(unsigned ms);
/* A localhost TCP port free a moment ago (for metrics-port). */
unsigned stu_free_port(void);

/* Processes the test started, killed by stu_kill_tracked (cmocka leaves a
 * failed test by a jump, so the test's own clean-up may never run). */
void stu_track(pid_t pid);
void stu_untrack(pid_t pid);
void stu_kill_tracked(void);

/* A SOCK_SEQPACKET connection to the daemon's socket, or -1. */
int stu_connect(const char *sock);
/*
 * Writes conf (its text as given), starts `bin --config conf daemon` with
 * its stderr appended to log and stdout on /dev/null, tracks it, and waits
 * up to 10 s until sock accepts. Returns its pid (fails the test if it
 * never listens).
 */
pid_t stu_daemon_spawn(const char *bin, const char *conf, const char *text, const char *log,
                       const char *sock);
/* GET /metrics from 127.0.0.1:port; a static buffer. stu_scrape fails
 * the test when the daemon does not answer; stu_scrape_try gives "" (for
 * polling a daemon that may not serve its metrics yet). */
const char *stu_scrape(unsigned port);
const char *stu_scrape_try(unsigned port);
/* rm -rf dir (a test's temporary directory). */
void stu_rmdir(const char *dir);

/* Waits up to ms for cond, looking every 5 ms; fails the test if it never holds. */
#define STU_WAIT_UNTIL(cond, ms)                                \
    do {                                                        \
        int waited_ = 0;                                        \
        while (!(cond) && waited_ < (ms)) {                     \
            stu_msleep(5);                                      \
            waited_ += 5;                                       \
        }                                                       \
        if (!(cond))                                            \
            fail_msg("not true within %d ms: %s", (ms), #cond); \
    } while (0)

#endif /* MOSAIC_TESTS_SCHED_TEST_UTIL_H */
