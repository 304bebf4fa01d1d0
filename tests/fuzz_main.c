/*
 * The standalone driver of the project's fuzz targets, for compilers
 * without libFuzzer and for CI: links with one target's
 * LLVMFuzzerTestOneInput and runs
 *
 *   TARGET CORPUS_DIR [ITERATIONS] [SEED]
 *
 * every file of CORPUS_DIR, then ITERATIONS (default 20000) deterministic
 * mutations of them: byte flips, truncations, insertions, deletions,
 * copied spans, digit changes, inserted copies of a span (which repeat a
 * key in an object, or put a second document after the first) and
 * inserted control bytes (NUL, DEL, escapes). A target aborts on a wrong outcome; the
 * ASan/UBSan build catches memory errors.
 */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include <dirent.h>

struct buf {
    uint8_t *p;
    size_t n;
};

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int read_whole(const char *path, struct buf *b)
{
    FILE *fp = fopen(path, "rb");
    long n;

    if (!fp)
        return -1;
    if (fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        fclose(fp);
        return -1;
    }
    b->p = malloc((size_t)n + 1);
    b->n = (size_t)n;
    if (!b->p || fread(b->p, 1, b->n, fp) != b->n) {
        free(b->p);
        fclose(fp);
        return -1;
    }
    fclose(fp);
    return 0;
}

/* Reads every regular file of dir (sorted, so runs repeat exactly). */
static size_t load_corpus(const char *dir, struct buf **out)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    size_t count = 0;

    *out = NULL;
    if (n < 0)
        return 0;
    *out = calloc((size_t)n, sizeof(**out));
    for (int i = 0; i < n; i++) {
        char path[4096];
        if (*out && names[i]->d_name[0] != '.') {
            snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
            if (read_whole(path, &(*out)[count]) == 0)
                count++;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

/* One random edit of m (capacity cap) in place. */
static void mutate_once(struct buf *m, size_t cap, uint64_t *s)
{
    static const char tokens[] = "0123456789-.eE,:[]{}\" tfn";
    size_t pos = m->n ? rng_next(s) % m->n : 0;

    switch (rng_next(s) % 8) {
    case 0: /* Flip one bit. */
        if (m->n)
            m->p[pos] ^= (uint8_t)(1u << (rng_next(s) % 8));
        break;
    case 1: /* Truncate. */
        m->n = pos;
        break;
    case 2: /* Insert a JSON-ish byte. */
        if (m->n < cap) {
            memmove(m->p + pos + 1, m->p + pos, m->n - pos);
            m->p[pos] = (uint8_t)tokens[rng_next(s) % (sizeof(tokens) - 1)];
            m->n++;
        }
        break;
    case 3: { /* Delete a short span. */
        size_t len = 1 + rng_next(s) % 16;
        if (pos + len > m->n)
            len = m->n - pos;
        memmove(m->p + pos, m->p + pos + len, m->n - pos - len);
        m->n -= len;
        break;
    }
    case 4: /* Change a digit, which mostly keeps the JSON valid. */
        for (size_t k = 0; k < m->n; k++) {
            size_t at = (pos + k) % m->n;
            if (m->p[at] >= '0' && m->p[at] <= '9') {
                m->p[at] = (uint8_t)('0' + rng_next(s) % 10);
                break;
            }
        }
        break;
    case 6: { /* Insert a copy of a span: a repeated member, a second
               * document after the first. */
        size_t from = m->n ? rng_next(s) % m->n : 0;
        size_t len = 1 + rng_next(s) % 64;
        if (from + len > m->n)
            len = m->n - from;
        if (len > cap - m->n)
            len = cap - m->n;
        if (len == 0)
            break;
        memmove(m->p + pos + len, m->p + pos, m->n - pos);
        /* The source may have moved if it lay at or after pos. */
        memmove(m->p + pos, m->p + (from >= pos ? from + len : from), len);
        m->n += len;
        break;
    }
    case 7: { /* Insert a byte a text parser must handle: NUL, control. */
        static const uint8_t odd[] = {0x00, 0x01, 0x09, 0x0a, 0x0d, 0x1f,
                                      0x7f, 0x80, 0xc0, 0xff, '\\'};
        if (m->n < cap) {
            memmove(m->p + pos + 1, m->p + pos, m->n - pos);
            m->p[pos] = odd[rng_next(s) % sizeof(odd)];
            m->n++;
        }
        break;
    }
    default: { /* Copy a span over another place. */
        size_t from = m->n ? rng_next(s) % m->n : 0;
        size_t len = 1 + rng_next(s) % 64;
        if (from + len > m->n)
            len = m->n - from;
        if (pos + len > m->n)
            len = m->n - pos;
        memmove(m->p + pos, m->p + from, len);
        break;
    }
    }
}

int main(int argc, char **argv)
{
    struct buf *corpus, m;
    size_t n, cap = 0;
    long iters = argc > 2 ? atol(argv[2]) : 20000;
    uint64_t s = argc > 3 ? strtoull(argv[3], NULL, 0) : 0x2545f4914f6cdd1dULL;

    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR [ITERATIONS] [SEED]\n", argv[0]);
        return 2;
    }
    n = load_corpus(argv[1], &corpus);
    if (n == 0) {
        fprintf(stderr, "%s: no corpus files\n", argv[1]);
        return 2;
    }
    for (size_t i = 0; i < n; i++) {
        LLVMFuzzerTestOneInput(corpus[i].p, corpus[i].n);
        if (corpus[i].n > cap)
            cap = corpus[i].n;
    }
    cap += 256;
    m.p = malloc(cap);
    if (!m.p || s == 0)
        return 2;
    for (long it = 0; it < iters; it++) {
        const struct buf *src = &corpus[rng_next(&s) % n];
        int edits = 1 + (int)(rng_next(&s) % 4);
        memcpy(m.p, src->p, src->n);
        m.n = src->n;
        for (int e = 0; e < edits; e++)
            mutate_once(&m, cap, &s);
        LLVMFuzzerTestOneInput(m.p, m.n);
    }
    printf("%s: %zu corpus files, %ld mutated inputs, no failure\n", argv[0], n, iters);
    free(m.p);
    for (size_t i = 0; i < n; i++)
        free(corpus[i].p);
    free(corpus);
    return 0;
}
