/*
 * The one whole-file reader. Every loader of a JSON document (profiles,
 * models, coefficients, datasets) reads through it, so that each refuses a
 * FIFO, a directory, an oversized file and an embedded NUL the same way.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

int mosaic__open_regular(const char *path, char *err, size_t errlen)
{
    struct stat st;
    int fd, flags, rc;

    if (!path)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, path, NULL, "no path");
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
     * writer, and the caller would hang before it could be told. */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return mosaic__errf(err, errlen, MOSAIC_EIO, path, NULL,
                            "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = mosaic__errf(err, errlen, MOSAIC_EIO, path, NULL,
                          "cannot stat: %s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = mosaic__errf(err, errlen, MOSAIC_EIO, path, NULL,
                          "is %s, not a regular file: name a file",
                          file_kind(st.st_mode));
    } else if ((flags = fcntl(fd, F_GETFL)) < 0 ||
               fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        /* Back to blocking reads: a regular file never blocks for long, and
         * a short non-blocking read would only complicate every reader. */
        rc = mosaic__errf(err, errlen, MOSAIC_EIO, path, NULL,
                          "cannot set blocking mode: %s", strerror(errno));
    } else {
        return fd;
    }
    close(fd);
    return rc;
}

int mosaic__read_file(const char *path, long max, char **out, char *err,
                      size_t errlen)
{
    struct stat st;
    char *buf = NULL;
    size_t size, got = 0;
    int fd, rc = 0;

    if (out)
        *out = NULL;
    if (!path || !out)
        return mosaic__errf(err, errlen, MOSAIC_EINVAL, path, NULL,
                            "no path or no output pointer");
    fd = mosaic__open_regular(path, err, errlen);
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) != 0) {
        rc = mosaic__errf(err, errlen, MOSAIC_EIO, path, NULL,
                          "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (max < 0 || st.st_size > (off_t)max) {
        rc = mosaic__errf(err, errlen, MOSAIC_ETOOBIG, path, NULL,
                          "the file is larger than %ld bytes", max < 0 ? 0 : max);
        goto out;
    }
    size = (size_t)st.st_size;
    buf = malloc(size + 1);
    if (!buf) {
        rc = mosaic__errf(err, errlen, MOSAIC_ENOMEM, path, NULL,
                          "out of memory (%zu bytes for the file)", size + 1);
        goto out;
    }
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = mosaic__errf(err, errlen, MOSAIC_EIO, path, NULL,
                              "cannot read: %s", strerror(errno));
            goto out;
        }
        if (n == 0) {
            rc = mosaic__errf(err, errlen, MOSAIC_EIO, path, NULL,
                              "cannot read: the file shrank while it was read");
            goto out;
        }
        got += (size_t)n;
    }
    buf[size] = '\0';
    /* A NUL inside the file would silently cut the text short. */
    if (memchr(buf, '\0', size)) {
        rc = mosaic__errf(err, errlen, MOSAIC_EFORMAT, path, NULL,
                          "the file contains a NUL byte: not a text file");
        goto out;
    }
out:
    close(fd);
    if (rc != 0) {
        free(buf);
        buf = NULL;
    }
    *out = buf;
    return rc;
}
