/*
 * Error codes and messages: mosaic_strerror (public, from the one list in
 * include/mosaic/mosaic.h) and the "file: field: message" helper every
 * parser uses, so that all of them word their errors alike.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core.h"

MOSAIC__EXPORT const char *mosaic_strerror(int err)
{
    switch (err) {
#define MOSAIC_X_MSG(name, value, msg) \
    case value:                        \
        return msg;
        MOSAIC_ERRORS(MOSAIC_X_MSG)
#undef MOSAIC_X_MSG
    }
    return "unknown Mosaic error code";
}

int mosaic__errf(char *err, size_t errlen, int code, const char *file,
                 const char *field, const char *fmt, ...)
{
    char msg[768];
    va_list ap;

    if (!err || errlen == 0)
        return code;
    va_start(ap, fmt);
    /* A message cut at the buffer's end is still a useful message. */
    if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
        msg[0] = '\0';
    va_end(ap);
    if (!file)
        file = "<input>";
    if (field && *field)
        snprintf(err, errlen, "%s: %s: %s", file, field, msg);
    else
        snprintf(err, errlen, "%s: %s", file, msg);
    return code;
}
