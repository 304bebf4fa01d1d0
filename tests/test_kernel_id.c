/*
 * A kernel's id on the scheduler's rings (preload/sched_link.c) is the
 * hash of its profile key, name + launch configuration, whatever the
 * name's length: the H200 ResNet-18 trainer's CUTLASS convolutions have
 * names of 1,657 and 1,708 characters, and a key formed in a 1,200-byte
 * buffer made them kernel 0 (unknown to the daemon, held beside every HP
 * request, never learned).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mosaic/sched.h"
#include "sched_link.h"

static void id_is_the_whole_keys_hash(void **state)
{
    static const size_t lens[] = {1, 40, 1100, 1199, 1657, 1708, 6000};
    const unsigned g[3] = {132, 1, 1}, b[3] = {384, 1, 1};
    (void)state;
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        char *name = malloc(lens[i] + 1), *key = malloc(lens[i] + 128);
        assert_non_null(name);
        assert_non_null(key);
        for (size_t j = 0; j < lens[i]; j++)
            name[j] = (char)('a' + (j * 7 + i) % 26);
        name[lens[i]] = '\0';
        snprintf(key, lens[i] + 128, "%s|grid=132,1,1|block=384,1,1|dsmem=232448", name);
        uint64_t id = mosaic__sched_key_id(name, g, b, 232448);
        assert_int_not_equal(id, 0);
        assert_true(id == mosaic_sched_kernel_id(key));
        /* Another configuration of the same kernel is another id. */
        assert_true(mosaic__sched_key_id(name, g, b, 0) != id);
        free(name);
        free(key);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(id_is_the_whole_keys_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
