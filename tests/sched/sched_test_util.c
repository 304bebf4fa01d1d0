/* The arbiter's end-to-end tests' shared helpers (sched_test_util.h). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sched_test_util.h"

#define MAX_TRACKED 64

static pid_t tracked[MAX_TRACKED];

void stu_msleep(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

unsigned stu_free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    unsigned port;

    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

void stu_track(pid_t pid)
{
    for (int i = 0; i < MAX_TRACKED; i++) {
        if (tracked[i] <= 0) {
            tracked[i] = pid;
            return;
        }
    }
}

void stu_untrack(pid_t pid)
{
    for (int i = 0; i < MAX_TRACKED; i++)
        if (tracked[i] == pid)
            tracked[i] = 0;
}

void stu_kill_tracked(void)
{
    for (int i = 0; i < MAX_TRACKED; i++) {
        if (tracked[i] > 0 && kill(tracked[i], SIGKILL) == 0)
            waitpid(tracked[i], NULL, 0);
        tracked[i] = 0;
    }
}

int stu_connect(const char *sock)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd;

    if (strlen(sock) >= sizeof(sa.sun_path))
        return -1;
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memcpy(sa.sun_path, sock, strlen(sock));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

pid_t stu_daemon_spawn(const char *bin, const char *conf, const char *text, const char *log,
                       const char *sock)
{
    FILE *fp = fopen(conf, "w");
    pid_t pid;

    assert_non_null(fp);
    assert_true(fputs(text, fp) >= 0);
    assert_int_equal(fclose(fp), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        int null = open("/dev/null", O_RDWR);
        dup2(fd, STDERR_FILENO);
        dup2(null, STDOUT_FILENO);
        execl(bin, "mosaic-sched", "--config", conf, "daemon", (char *)NULL);
        _exit(127);
    }
    stu_track(pid);
    for (int i = 0; i < 1000; i++) {
        int fd = stu_connect(sock);
        if (fd >= 0) {
            close(fd);
            return pid;
        }
        stu_msleep(10);
    }
    fail_msg("the daemon did not listen on %s within 10 s (its log: %s)", sock, log);
    return -1;
}

/* The page into buf; 0, or -1 when the daemon did not answer. */
static int scrape(unsigned port, char *buf, size_t cap)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    size_t got = 0;
    ssize_t n;

    buf[0] = '\0';
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        send(fd, req, sizeof(req) - 1, 0) != (ssize_t)sizeof(req) - 1) {
        close(fd);
        return -1;
    }
    while (got < cap - 1 && (n = recv(fd, buf + got, cap - 1 - got, 0)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(fd);
    return 0;
}

const char *stu_scrape(unsigned port)
{
    static char buf[65536];

    if (scrape(port, buf, sizeof(buf)) != 0)
        fail_msg("the daemon's metrics on port %u did not answer", port);
    return buf;
}

const char *stu_scrape_try(unsigned port)
{
    static char buf[65536];

    scrape(port, buf, sizeof(buf));
    return buf;
}

void stu_rmdir(const char *dir)
{
    char cmd[512];
    int n = snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);

    if (n < 0 || (size_t)n >= sizeof(cmd) || system(cmd) != 0)
        print_error("could not remove %s\n", dir);
}
