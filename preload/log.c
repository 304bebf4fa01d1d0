/*
 * Logging of the shim: stderr only, one write(2) per line so that lines of
 * concurrent threads never interleave, and nothing unless MOSAIC_LOG asks.
 */
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const char *const level_tags[] = {"", "error", "warn", "info", "debug"};

/*
 * Writes to stderr without ever raising SIGPIPE in the host program: a
 * closed pipe or socket on stderr (a log reader that went away) must not
 * kill it. SIGPIPE is blocked in this thread around the write; if the
 * write raised one that was not already pending, it is taken back with
 * sigtimedwait() before the old mask returns, so the program never sees it.
 * (send() with MSG_NOSIGNAL would cover sockets only.)
 */
static void write_all(const char *buf, size_t len)
{
    int saved = errno; /* the host program must not see our errno */
    sigset_t pipe_set, old_mask, pending;
    int was_pending, blocked, broke = 0;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pending);
    was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    blocked = pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask) == 0;
    while (len > 0) {
        ssize_t n = write(STDERR_FILENO, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EPIPE)
            broke = 1;
        if (n <= 0)
            break;
        buf += n;
        len -= (size_t)n;
    }
    if (broke && !was_pending) {
        const struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    if (blocked)
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    errno = saved;
}

void mosaic__say(const char *text)
{
    write_all(text, strlen(text));
}

void mosaic__log(int level, const char *fmt, ...)
{
    char line[1024];
    int n;
    va_list ap;

    if (level <= MOSAIC__LOG_OFF || level > MOSAIC__LOG_DEBUG ||
        mosaic__cfg.level < level)
        return;
    n = snprintf(line, sizeof(line), "mosaic[%d] %s: ", (int)getpid(),
                 level_tags[level]);
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    write_all(line, (size_t)n);
}
