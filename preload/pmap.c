/*
 * A map from pointers (driver handles) to records, read on the launch path.
 *
 * Why not a packaged hash table: the launch path must cost tens of
 * nanoseconds from any number of threads, so lookups take no lock and do no
 * atomic read-modify-write, and the shim may not start threads or ask host
 * threads to register (as RCU libraries require). Insertions are rare (one
 * per kernel handle or graph) and take a mutex. Keys are never removed;
 * removing a value stores NULL. A full table is copied into one twice the
 * size and published; older tables are kept until destroy, so a reader
 * that still holds one reads valid memory.
 */
#include <stdlib.h>

#include "internal.h"

struct mosaic__pmap_slot {
    _Atomic(const void *) key;
    _Atomic(void *) val;
};

struct mosaic__pmap_tab {
    size_t cap; /* a power of two */
    struct mosaic__pmap_tab *next_retired;
    struct mosaic__pmap_slot slot[];
};

static size_t hash_ptr(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;

    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static struct mosaic__pmap_tab *tab_new(size_t cap)
{
    struct mosaic__pmap_tab *t =
        calloc(1, sizeof(*t) + cap * sizeof(struct mosaic__pmap_slot));

    if (t)
        t->cap = cap;
    return t;
}

void mosaic__pmap_init(struct mosaic__pmap *m)
{
    atomic_init(&m->tab, NULL);
    pthread_mutex_init(&m->lock, NULL);
    m->used = 0;
    m->retired = NULL;
}

void mosaic__pmap_destroy(struct mosaic__pmap *m)
{
    struct mosaic__pmap_tab *t = atomic_load(&m->tab);

    free(t);
    while (m->retired) {
        t = m->retired;
        m->retired = t->next_retired;
        free(t);
    }
    atomic_store(&m->tab, NULL);
    m->used = 0;
}

static struct mosaic__pmap_slot *find(struct mosaic__pmap_tab *t,
                                      const void *key)
{
    for (size_t i = hash_ptr(key, t->cap), n = 0; n < t->cap;
         i = (i + 1) & (t->cap - 1), n++) {
        const void *k =
            atomic_load_explicit(&t->slot[i].key, memory_order_acquire);
        if (k == key || k == NULL)
            return &t->slot[i];
    }
    return NULL;
}

void *mosaic__pmap_get(struct mosaic__pmap *m, const void *key)
{
    struct mosaic__pmap_tab *t =
        atomic_load_explicit(&m->tab, memory_order_acquire);
    struct mosaic__pmap_slot *s;

    if (!t || !key)
        return NULL;
    s = find(t, key);
    if (!s || atomic_load_explicit(&s->key, memory_order_relaxed) != key)
        return NULL;
    return atomic_load_explicit(&s->val, memory_order_acquire);
}

/* Makes room for one more key; caller holds the lock. */
static int reserve(struct mosaic__pmap *m)
{
    struct mosaic__pmap_tab *t = atomic_load_explicit(&m->tab,
                                                      memory_order_relaxed);
    struct mosaic__pmap_tab *n;

    if (t && (m->used + 1) * 2 <= t->cap)
        return 0;
    n = tab_new(t ? t->cap * 2 : 256);
    if (!n)
        return MOSAIC_ENOMEM;
    for (size_t i = 0; t && i < t->cap; i++) {
        const void *k = atomic_load_explicit(&t->slot[i].key,
                                             memory_order_relaxed);
        if (k) {
            struct mosaic__pmap_slot *s = find(n, k);
            atomic_store_explicit(&s->val, atomic_load(&t->slot[i].val),
                                  memory_order_relaxed);
            atomic_store_explicit(&s->key, k, memory_order_relaxed);
        }
    }
    atomic_store_explicit(&m->tab, n, memory_order_release);
    if (t) {
        t->next_retired = m->retired;
        m->retired = t;
    }
    return 0;
}

/* Caller holds the lock. */
static void *put_locked(struct mosaic__pmap *m, const void *key, void *val,
                        int replace, int *err)
{
    struct mosaic__pmap_tab *t;
    struct mosaic__pmap_slot *s;

    *err = 0;
    t = atomic_load_explicit(&m->tab, memory_order_relaxed);
    s = t ? find(t, key) : NULL;
    if (s && atomic_load_explicit(&s->key, memory_order_relaxed) == key) {
        void *old = atomic_load_explicit(&s->val, memory_order_relaxed);
        if (!replace && old)
            return old;
        atomic_store_explicit(&s->val, val, memory_order_release);
        return val;
    }
    if ((*err = reserve(m)) != 0)
        return NULL;
    t = atomic_load_explicit(&m->tab, memory_order_relaxed);
    s = find(t, key);
    /* The value is visible before the key, so a reader that sees the key
     * sees its value. */
    atomic_store_explicit(&s->val, val, memory_order_release);
    atomic_store_explicit(&s->key, key, memory_order_release);
    m->used++;
    return val;
}

int mosaic__pmap_put(struct mosaic__pmap *m, const void *key, void *val)
{
    int err;

    if (!key)
        return MOSAIC_EINVAL;
    pthread_mutex_lock(&m->lock);
    put_locked(m, key, val, 1, &err);
    pthread_mutex_unlock(&m->lock);
    return err;
}

void *mosaic__pmap_put_new(struct mosaic__pmap *m, const void *key, void *val)
{
    int err;
    void *now;

    if (!key)
        return NULL;
    pthread_mutex_lock(&m->lock);
    now = put_locked(m, key, val, 0, &err);
    pthread_mutex_unlock(&m->lock);
    return now;
}

void mosaic__pmap_foreach(struct mosaic__pmap *m,
                          void (*fn)(const void *key, void *val, void *arg),
                          void *arg)
{
    struct mosaic__pmap_tab *t;

    pthread_mutex_lock(&m->lock);
    t = atomic_load_explicit(&m->tab, memory_order_relaxed);
    for (size_t i = 0; t && i < t->cap; i++) {
        const void *k = atomic_load_explicit(&t->slot[i].key,
                                             memory_order_relaxed);
        void *v = atomic_load_explicit(&t->slot[i].val, memory_order_relaxed);
        if (k && v)
            fn(k, v, arg);
    }
    pthread_mutex_unlock(&m->lock);
}
