/*
 * Logging of the shim: stderr only, one write(2) per line so that lines of
 * concurrent threads never interleave, and nothing unless MOSAIC_LOG asks.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const char *const level_tags[] = {"", "error", "warn", "info", "debug"};

static void write_all(const char *buf, size_t len)
{
    int saved = errno; /* the host program must not see our errno */

    while (len > 0) {
        ssize_t n = write(STDERR_FILENO, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        buf += n;
        len -= (size_t)n;
    }
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
