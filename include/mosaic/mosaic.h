/*
 * Mosaic: common definitions shared by every component.
 *
 * Every Mosaic function that can fail returns 0 on success or a negative
 * MOSAIC_E* code; mosaic_strerror() turns a code into a sentence that says
 * what went wrong. No Mosaic library function calls exit().
 */
#ifndef MOSAIC_MOSAIC_H
#define MOSAIC_MOSAIC_H

#ifdef __cplusplus
extern "C" {
#endif

#define MOSAIC_VERSION_STRING "0.1.0"

/*
 * sched: the codes of the arbiter daemon (mosaic-sched) and its client
 * library (sched/). They sit at -100 and below so that codes added to the
 * common list above them never collide.
 */
#define MOSAIC_SCHED_ERRORS(X)                                                \
    X(MOSAIC_EPROTO, -100, "a scheduler message or shared segment is malformed") \
    X(MOSAIC_EVERSION, -101, "the peer speaks another scheduler protocol version") \
    X(MOSAIC_EREFUSED, -102, "the scheduler refused the client (no role granted)") \
    X(MOSAIC_ERINGFULL, -103, "the ring to the scheduler is full; the event was dropped") \
    X(MOSAIC_EDISCONNECTED, -104, "not connected to the scheduler daemon")   \
    X(MOSAIC_ETIMEDOUT, -105, "timed out waiting for the scheduler")        \
    X(MOSAIC_EUNSAFE, -106, "a path is not what it must be (wrong file type, a symlink, or in use)") \
    X(MOSAIC_ESYS, -107, "a system call failed")

/*
 * X(name, value, message): the one list of error codes. A value is never
 * reused for another meaning. EINVAL is a caller's mistake (a NULL pointer,
 * a value out of range); EFORMAT is input (a file, a string) that does not
 * parse or does not hold what its format requires; EIO is a failure to
 * open, read or write, including a path that names no regular file.
 */
#define MOSAIC_ERRORS(X)                                                    \
    X(MOSAIC_OK, 0, "success")                                              \
    X(MOSAIC_EINVAL, -1, "invalid argument")                                \
    X(MOSAIC_ENOMEM, -2, "out of memory")                                   \
    X(MOSAIC_EIO, -3, "input/output error")                                 \
    X(MOSAIC_ENODRIVER, -4, "the CUDA driver (libcuda.so.1) is not loaded") \
    X(MOSAIC_ENOSYM, -5, "a required driver entry point is missing")        \
    X(MOSAIC_ERANGE, -6, "the buffer is too small for the result")          \
    X(MOSAIC_ECONFIG, -7, "a MOSAIC_* setting is not valid")              \
    X(MOSAIC_EFORMAT, -8,                                                   \
      "the input is malformed: it is not in the format that was expected")  \
    X(MOSAIC_ETOOBIG, -9, "the input is larger than the accepted limit")   \
    MOSAIC_SCHED_ERRORS(X)

enum mosaic_error {
#define MOSAIC_X_ENUM(name, value, msg) name = value,
    MOSAIC_ERRORS(MOSAIC_X_ENUM)
#undef MOSAIC_X_ENUM
};

/* Returns a static description of a MOSAIC_E* code (never NULL). */
const char *mosaic_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* MOSAIC_MOSAIC_H */
