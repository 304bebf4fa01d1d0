/*
 * The daemon's and the tests' copy of the error messages. libmosaic.so
 * defines mosaic_strerror() itself (preload/log.c) and links the client
 * library without this file; both are generated from the one MOSAIC_ERRORS
 * list, so the texts cannot differ.
 */
#include "daemon.h"

const char *mosaic__errstr(int code)
{
    switch (code) {
#define MOSAIC_X_MSG(name, value, msg) \
    case value:                        \
        return msg;
        MOSAIC_ERRORS(MOSAIC_X_MSG)
#undef MOSAIC_X_MSG
    }
    return "unknown Mosaic error code";
}
