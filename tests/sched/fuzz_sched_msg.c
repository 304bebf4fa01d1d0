/*
 * Fuzz target of mosaic-sched's parsers: the socket message parser, the
 * shared segment's header check and the ring entry check, all on the same
 * bytes. Each must refuse or accept without reading out of bounds, and an
 * accepted message must be self-consistent. Built with libFuzzer under
 * clang (MOSAIC_BUILD_FUZZERS) and with tests/fuzz_main.c in ctest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mosaic__msg m;
    char why[256];
    int rc;

    /* An exact-size heap copy, so that ASan sees any overread. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    rc = mosaic__msg_parse(copy, size, &m, why, sizeof(why));
    if (rc == 0) {
        if (m.h.length != size || m.h.magic != MOSAIC__SCHED_MAGIC)
            abort();
        if (m.h.type == MOSAIC__MSG_HELLO && m.u.hello.role > MOSAIC_SCHED_ROLE_BE)
            abort();
        if (m.h.type == MOSAIC__MSG_REFUSE &&
            strnlen(m.u.refuse.reason, sizeof(m.u.refuse.reason)) >= sizeof(m.u.refuse.reason))
            abort();
        if (m.h.type == MOSAIC__MSG_STATUS_REPLY &&
            (m.text_len != size - sizeof(struct mosaic__msg_hdr) ||
             memchr(m.text, '\0', m.text_len)))
            abort();
    } else if (rc != MOSAIC_EPROTO && rc != MOSAIC_EVERSION) {
        abort();
    } else if (why[0] == '\0') {
        abort(); /* every refusal says why */
    }
    free(copy);

    /* The same bytes as a segment header (in an aligned buffer of the
     * claimed size, as a mapping would be). */
    if (size >= sizeof(struct mosaic__shm_hdr)) {
        void *seg = aligned_alloc(64, (size + 63) / 64 * 64);
        if (seg) {
            memset(seg, 0, (size + 63) / 64 * 64);
            memcpy(seg, data, size);
            rc = mosaic__shm_check(seg, size, why, sizeof(why));
            if (rc != 0 && rc != MOSAIC_EPROTO && rc != MOSAIC_EVERSION)
                abort();
            free(seg);
        }
    }
    /* And as ring entries, checked for each role. */
    for (size_t off = 0; off + sizeof(struct mosaic__entry) <= size;
         off += sizeof(struct mosaic__entry)) {
        struct mosaic__entry e;
        memcpy(&e, data + off, sizeof(e));
        for (int role = 0; role <= MOSAIC_SCHED_ROLE_BE; role++) {
            rc = mosaic__entry_check(&e, role, why, sizeof(why));
            if (rc != 0 && rc != MOSAIC_EPROTO)
                abort();
            if (rc == 0 && (e.type == MOSAIC__EV_GRANT || role == MOSAIC_SCHED_ROLE_NONE))
                abort(); /* no client may post a grant; a roleless client nothing */
        }
    }
    return 0;
}
