/*
 * argus.sassmetrics into attribution (ctest argus_sass_attrib): a SASS
 * metrics file of sass_loop's cubin joined with an argus.pcmap map of the
 * same cubin splits each PC's count by the map's executions (3:1 at the
 * loop's PCs: 12000 -> 9000 / 3000); a map of another build (another
 * sha256) is refused and nothing joined; a file whose cubin is unknown is
 * refused; the file is read back equal after writing; damaged files are
 * refused with the field.
 * usage: test_argus_sass_attrib WORKDIR
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "argus/pcmap.h"
#include "argus/sass.h"
#include "argus/workspace.h"

static int failures;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);                           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static char sha[ARGUS_HASH_HEX];

static argus_sass *make_sass(const char *sha256)
{
    argus_sass *s;
    char msg[512];
    if (argus_sass_new(&s, NULL, msg, sizeof msg) != 0)
        abort();
    size_t k;
    argus_sass_kernel_of(s, "sass_loop", 0x1234abcd, sha256, &k);
    s->kernels[k].launches = 3;
    /* 3 launches of 4 warps, 1000 trips: 12 at 0x0, 12000 at the loop's 0xb0. */
    argus_sass_add(s, k, 0x0, 0, 12, msg, sizeof msg);
    argus_sass_add(s, k, 0x0, 1, 384, msg, sizeof msg);
    argus_sass_add(s, k, 0xb0, 0, 12000, msg, sizeof msg);
    argus_sass_add(s, k, 0xb0, 1, 384000, msg, sizeof msg);
    return s;
}

static argus_pcmap *make_map(const char *sha256)
{
    argus_pcmap *m;
    char msg[512];
    size_t mod, root, ra, rb;
    uint32_t a[1] = {0x1}, b[1] = {0x2};
    if (argus_pcmap_new(&m) != 0 || argus_pcmap_module(m, sha256, &mod) != 0 ||
        argus_pcmap_region_of(m, NULL, 0, NULL, &root) != 0 ||
        argus_pcmap_region_of(m, a, 1, NULL, &ra) != 0 ||
        argus_pcmap_region_of(m, b, 1, NULL, &rb) != 0)
        abort();
    /* The loop's PC 3:1 between two regions, the first PC outside both. */
    argus_pcmap_add(m, mod, "sass_loop", 0xb0, -1, NULL, "alu", ra, 3000, msg, sizeof msg);
    argus_pcmap_add(m, mod, "sass_loop", 0xb0, -1, NULL, "alu", rb, 1000, msg, sizeof msg);
    argus_pcmap_add(m, mod, "sass_loop", 0x0, -1, NULL, "alu", root, 4, msg, sizeof msg);
    return m;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *dir = argv[1];
    mkdir(dir, 0755);
    char path[4096], msg[1024];
    FILE *f = fopen(FIXTURES "/sass/sass_loop.cubin", "rb");
    static unsigned char img[1 << 16];
    size_t len = f ? fread(img, 1, sizeof img, f) : 0;
    if (f)
        fclose(f);
    CHECK(len > 0, "the fixture cubin");
    argus_sha256_hex(img, len, sha);

    /* Written and read back. */
    argus_sass *s = make_sass(sha);
    snprintf(path, sizeof path, "%s/s.json", dir);
    CHECK(argus_sass_write(s, path, msg, sizeof msg) == 0, "%s", msg);
    argus_sass *r = NULL;
    CHECK(argus_sass_load(path, &r, msg, sizeof msg) == 0, "%s", msg);
    CHECK(r && r->n_kernels == 1 && r->kernels[0].n_pcs == 2 && r->kernels[0].launches == 3 &&
              r->kernels[0].pcs[1].values[0] == 12000 && strcmp(r->kernels[0].sha256, sha) == 0,
          "read back");

    /* Joined with a map of the same cubin: 12000 at 0xb0 split 9000 / 3000. */
    argus_pcmap *m = make_map(sha);
    argus_attrib *a;
    argus_attrib_new(&a);
    CHECK(argus_pcmap_to_attrib(m, "sass_loop", NULL, a, msg, sizeof msg) == 0, "%s", msg);
    CHECK(argus_sass_to_attrib(r, "sass_loop", a, msg, sizeof msg) == 0, "%s", msg);
    argus_attrib_result *res = NULL;
    CHECK(argus_attrib_compute(a, &res, msg, sizeof msg) == 0, "%s", msg);
    if (res != NULL) {
        long im = argus_attrib_find_metric(res, "smsp__sass_inst_executed");
        long tm = argus_attrib_find_metric(res, "smsp__sass_thread_inst_executed");
        long ra = argus_attrib_find_region(res, "0x0000001");
        long rb = argus_attrib_find_region(res, "0x0000002");
        long r0 = argus_attrib_find_region(res, "");
        CHECK(im >= 0 && tm >= 0 && ra >= 0 && rb >= 0 && r0 >= 0, "lookups %ld %ld %ld %ld %ld",
              im, tm, ra, rb, r0);
        if (im >= 0 && ra >= 0 && rb >= 0 && r0 >= 0) {
            CHECK(res->regions[ra].self[im].value == 9000, "A %g",
                  res->regions[ra].self[im].value);
            CHECK(res->regions[rb].self[im].value == 3000, "B %g",
                  res->regions[rb].self[im].value);
            CHECK(res->regions[r0].self[im].value == 12, "root %g",
                  res->regions[r0].self[im].value);
            CHECK(res->regions[ra].self[tm].value == 288000, "A threads %g",
                  res->regions[ra].self[tm].value);
            CHECK(res->regions[ra].self[im].mark == ARGUS_MARK_ATTRIBUTED, "mark");
            CHECK(res->total[im].value == 12012, "total %g", res->total[im].value);
            long pc = argus_attrib_find_pc(res, 0xb0);
            CHECK(pc >= 0 && fabs(res->pcs[pc].entropy_bits - 0.811278) < 1e-6, "entropy");
        }
        argus_attrib_result_free(res);
    }
    argus_attrib_free(a);
    argus_pcmap_free(m);

    /* A map of another build: refused, nothing joined. */
    char other[ARGUS_HASH_HEX];
    memcpy(other, sha, sizeof other);
    other[0] = other[0] == 'a' ? 'b' : 'a';
    m = make_map(other);
    argus_attrib_new(&a);
    CHECK(argus_pcmap_to_attrib(m, "sass_loop", NULL, a, msg, sizeof msg) == 0, "%s", msg);
    int rc = argus_sass_to_attrib(r, "sass_loop", a, msg, sizeof msg);
    CHECK(rc == ARGUS_EINVAL, "another build joined (%d)", rc);
    CHECK(strstr(msg, "different cubins") != NULL && strstr(msg, sha) != NULL &&
              strstr(msg, other) != NULL,
          "%s", msg);
    argus_attrib_result *none = NULL;
    CHECK(argus_attrib_compute(a, &none, msg, sizeof msg) == 0, "%s", msg);
    CHECK(none != NULL && none->n_metrics == 0, "metrics of another build were added");
    argus_attrib_result_free(none);
    argus_attrib_free(a);
    argus_pcmap_free(m);

    /* A file that does not say its cubin: refused. */
    argus_sass *u = make_sass(NULL);
    argus_attrib_new(&a);
    rc = argus_sass_to_attrib(u, NULL, a, msg, sizeof msg);
    CHECK(rc == ARGUS_EINVAL && strstr(msg, "sha256 null") != NULL, "%d %s", rc, msg);
    argus_attrib_free(a);
    argus_sass_free(u);

    /* Damaged files, each refused with its field. */
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"{\"schema\": \"argus.sassmetrics\", \"version\": 2}", "version"},
        {"{\"schema\": \"argus.sassmetrics\", \"version\": 1, \"backend\": \"sass_metrics\", "
         "\"complete\": true, \"problems\": [], \"granularity\": \"gpu\", \"count\": \"\", "
         "\"metrics\": [\"m\"], \"launches\": [], \"kernels\": [], \"extra\": 1}",
         "unknown key \"extra\""},
        {"{\"schema\": \"argus.sassmetrics\", \"version\": 1, \"backend\": \"sass_metrics\", "
         "\"complete\": true, \"problems\": [\"x\"], \"granularity\": \"gpu\", \"count\": \"\", "
         "\"metrics\": [\"m\"], \"launches\": [], \"kernels\": []}",
         "complete is true but problems"},
        {"{\"schema\": \"argus.sassmetrics\", \"version\": 1, \"backend\": \"sass_metrics\", "
         "\"complete\": true, \"problems\": [], \"granularity\": \"gpu\", \"count\": \"\", "
         "\"metrics\": [\"m\"], \"launches\": [], \"kernels\": [{\"function\": \"k\", "
         "\"cubin_crc\": \"0x1\", \"sha256\": null, \"launches\": 1, \"pcs\": [{\"offset\": "
         "\"0x10\", \"m\": 1}, {\"offset\": \"0x10\", \"m\": 2}]}]}",
         "offset 0x10 listed twice"},
        {"{\"schema\": \"argus.sassmetrics\", \"version\": 1, \"backend\": \"sass_metrics\", "
         "\"complete\": true, \"problems\": [], \"granularity\": \"gpu\", \"count\": \"\", "
         "\"metrics\": [\"m\"], \"launches\": [], \"kernels\": [{\"function\": \"k\", "
         "\"cubin_crc\": \"0x1\", \"sha256\": null, \"launches\": 1, \"pcs\": [{\"offset\": "
         "\"0x10\", \"m\": -1}]}]}",
         "pcs[0].m: not a count"},
        {"{\"schema\": \"argus.sassmetrics\", \"version\": 1, \"backend\": \"sass_metrics\", "
         "\"complete\": true, \"problems\": [], \"granularity\": \"gpu\", \"count\": \"\", "
         "\"metrics\": [\"m\"], \"launches\": [], \"kernels\": [{\"function\": \"k\", "
         "\"cubin_crc\": \"0x1\", \"sha256\": \"abc\", \"launches\": 1, \"pcs\": []}]}",
         "sha256 (64 lower-case hex"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(path, sizeof path, "%s/bad%zu.json", dir, i);
        write_text(path, bad[i].text);
        argus_sass *x = NULL;
        rc = argus_sass_load(path, &x, msg, sizeof msg);
        CHECK(rc != 0 && x == NULL && strstr(msg, bad[i].want) != NULL, "bad %zu: %s", i, msg);
        argus_sass_free(x);
    }
    argus_sass_free(r);
    argus_sass_free(s);
    if (failures == 0)
        puts("argus_sass_attrib: ok");
    return failures != 0;
}
