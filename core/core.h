/*
 * The common core's internal interface: what every Mosaic component uses and
 * no program outside the project should (the public part is
 * include/mosaic/mosaic.h). Internal names carry the mosaic__ prefix.
 *
 *   MOSAIC__EXPORT     marks the few functions a shared library exports (the
 *                      project builds with -fvisibility=hidden)
 *   mosaic__errf       "file: field: message" into a caller's buffer
 *   mosaic__read_file  a whole regular file into memory, size-limited
 *   mosaic__open_regular  the same checks, for readers that stream
 *
 * The JSON string writer and the strict JSON reader (mosaic__json_read_file,
 * mosaic__jsonl_read_file: one call per reader, which reads the file through
 * mosaic__read_file and refuses trailing data, duplicate keys, NUL bytes and
 * deep nesting; library mosaic_core_json) are in core/json.h; the driver
 * binding list and the kernel-identity resolver (which need cuda.h) are in
 * core/cudrv.h.
 */
#ifndef MOSAIC_CORE_CORE_H
#define MOSAIC_CORE_CORE_H

#include <stddef.h>

#include "mosaic/mosaic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one visibility macro: everything else stays inside its library. */
#define MOSAIC__EXPORT __attribute__((visibility("default")))
/* A branch taken only on failure, off the hot path. */
#define MOSAIC__UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * Writes "file: field: message" into err (or "file: message" when field is
 * NULL or empty), the message formatted from fmt, and returns code, so that
 * a parser can say `return mosaic__errf(err, errlen, MOSAIC_EFORMAT, path,
 * "kernels[3].grid", "expected ...")`. A NULL err or errlen 0 writes
 * nothing; a message longer than the buffer is cut (the buffer always ends
 * in NUL). A NULL file is written as "<input>".
 */
int mosaic__errf(char *err, size_t errlen, int code, const char *file,
                 const char *field, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/*
 * Opens path for reading, but only a regular file: it is opened with
 * O_NONBLOCK|O_CLOEXEC so that a FIFO or a device cannot block the caller,
 * checked with fstat, and put back into blocking mode. Returns the file
 * descriptor, or MOSAIC_EIO (cannot open; not a regular file, with what it
 * is instead) with "path: what went wrong" in err. For readers that stream
 * (the ncu importer); whole documents go through mosaic__read_file.
 */
int mosaic__open_regular(const char *path, char *err, size_t errlen);

/*
 * Reads the whole of path into a NUL-terminated malloc'd buffer (*out; the
 * caller frees it). Only a regular file is read: the file is opened with
 * O_NONBLOCK so that a FIFO or a device cannot block the caller, checked
 * with fstat, and only then read. A file larger than max bytes, or one that
 * holds a NUL byte (which would cut the text short), is refused.
 *
 * Returns 0, or MOSAIC_EIO (cannot open or read, not a regular file),
 * MOSAIC_ETOOBIG, MOSAIC_EFORMAT (a NUL byte), MOSAIC_ENOMEM or
 * MOSAIC_EINVAL (no path or out), with "path: what went wrong" in err;
 * *out is NULL on failure. The same signature as the predictor's
 * mosaic_read_text, so that it can replace it.
 */
int mosaic__read_file(const char *path, long max, char **out, char *err,
                      size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* MOSAIC_CORE_CORE_H */
