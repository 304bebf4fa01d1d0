/* The pointer map behind the kernel cache: exact semantics, growth, and
 * lookups that stay correct while another thread inserts. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "internal.h"

#define KEY(i) ((const void *)(uintptr_t)(((uintptr_t)(i) + 1) * 64))
#define VAL(i) ((void *)(uintptr_t)(((uintptr_t)(i) + 1) * 8 + 1))

static void put_get_replace_remove(void **state)
{
    struct mosaic__pmap m;

    (void)state;
    mosaic__pmap_init(&m);
    assert_null(mosaic__pmap_get(&m, KEY(1)));
    assert_int_equal(mosaic__pmap_put(&m, KEY(1), VAL(1)), 0);
    assert_ptr_equal(mosaic__pmap_get(&m, KEY(1)), VAL(1));
    assert_null(mosaic__pmap_get(&m, KEY(2)));
    /* put_new keeps the present value and reports it */
    assert_ptr_equal(mosaic__pmap_put_new(&m, KEY(1), VAL(9)), VAL(1));
    assert_ptr_equal(mosaic__pmap_get(&m, KEY(1)), VAL(1));
    /* put replaces */
    assert_int_equal(mosaic__pmap_put(&m, KEY(1), VAL(7)), 0);
    assert_ptr_equal(mosaic__pmap_get(&m, KEY(1)), VAL(7));
    /* NULL removes; put_new then fills the slot again */
    assert_int_equal(mosaic__pmap_put(&m, KEY(1), NULL), 0);
    assert_null(mosaic__pmap_get(&m, KEY(1)));
    assert_ptr_equal(mosaic__pmap_put_new(&m, KEY(1), VAL(3)), VAL(3));
    assert_int_equal(mosaic__pmap_put(&m, NULL, VAL(1)), MOSAIC_EINVAL);
    assert_null(mosaic__pmap_get(&m, NULL));
    mosaic__pmap_destroy(&m);
}

static void count_one(const void *key, void *val, void *arg)
{
    size_t i = (uintptr_t)key / 64 - 1;

    assert_ptr_equal(val, VAL(i));
    (*(size_t *)arg)++;
}

static void grows_and_keeps_everything(void **state)
{
    struct mosaic__pmap m;
    size_t n = 0;

    (void)state;
    mosaic__pmap_init(&m);
    for (size_t i = 0; i < 20000; i++)
        assert_int_equal(mosaic__pmap_put(&m, KEY(i), VAL(i)), 0);
    for (size_t i = 0; i < 20000; i++)
        assert_ptr_equal(mosaic__pmap_get(&m, KEY(i)), VAL(i));
    assert_null(mosaic__pmap_get(&m, KEY(20000)));
    mosaic__pmap_foreach(&m, count_one, &n);
    assert_int_equal(n, 20000);
    mosaic__pmap_destroy(&m);
}

struct race {
    struct mosaic__pmap m;
    _Atomic size_t inserted; /* keys [0, inserted) are present */
    _Atomic int done;
    _Atomic size_t wrong;
};

static void *reader(void *arg)
{
    struct race *r = arg;

    while (!atomic_load(&r->done)) {
        size_t n = atomic_load(&r->inserted);
        for (size_t i = n > 500 ? n - 500 : 0; i < n; i++)
            if (mosaic__pmap_get(&r->m, KEY(i)) != VAL(i))
                atomic_fetch_add(&r->wrong, 1);
    }
    return NULL;
}

static void lookups_race_with_growth(void **state)
{
    static struct race r;
    pthread_t t[4];

    (void)state;
    mosaic__pmap_init(&r.m);
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, reader, &r);
    for (size_t i = 0; i < 50000; i++) {
        assert_int_equal(mosaic__pmap_put(&r.m, KEY(i), VAL(i)), 0);
        atomic_store(&r.inserted, i + 1);
    }
    atomic_store(&r.done, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&r.wrong), 0);
    mosaic__pmap_destroy(&r.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(put_get_replace_remove),
        cmocka_unit_test(grows_and_keeps_everything),
        cmocka_unit_test(lookups_race_with_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
