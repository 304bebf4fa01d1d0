/*
 * The registry (source scan, file round trip, bad files), the JSON report
 * against its schema (docs/argus.md: every number {value, unit, mark}) and
 * the trace against the trace-event rules Perfetto reads (X events with
 * numeric pid/tid/ts/dur, strictly nested per track).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "argus/argus.h"
#include "argus_test_util.h"
#include "devmodel.h"

static char *read_all(const char *path)
{
    size_t len;
    return argus_test_slurp(path, &len);
}

static void test_scan_known_kernel(void **state)
{
    (void)state;
    char *src = read_all(ARGUS_SRC_DIR "/kernel_known.cu");
    argus_registry *r;
    char msg[256] = "";
    assert_int_equal(argus_registry_new(&r), 0);
    assert_int_equal(argus_registry_scan(r, src, "kernel_known.cu", msg, sizeof(msg)), 0);
    free(src);
    uint32_t outer = argus_region_id("outer", 0);
    assert_string_equal(argus_registry_name(r, outer), "outer");
    assert_string_equal(argus_registry_name(r, argus_region_id("load", outer)), "load");
    assert_int_equal(argus_registry_parent(r, argus_region_id("compute", outer)), outer);
    assert_int_equal(argus_registry_parent(r, argus_region_id("tail", 0)), 0);
    assert_string_equal(argus_registry_name(r, argus_region_id("producer", 0)), "producer");
    assert_string_equal(argus_registry_name(r, argus_region_id("consumer", 0)), "consumer");
    assert_int_equal(argus_registry_count(r), 6);
    uint32_t ids[4];
    assert_int_equal(argus_registry_find(r, "load", ids, 4), 1);
    assert_int_equal(ids[0], argus_region_id("load", outer));
    assert_int_equal(argus_registry_find(r, "nosuch", ids, 4), 0);
    /* Round trip through the file. */
    char path[] = "/tmp/argus_reg_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(argus_registry_save(r, path, msg, sizeof(msg)), 0);
    argus_registry *back;
    assert_int_equal(argus_registry_load(path, &back, msg, sizeof(msg)), 0);
    assert_int_equal(argus_registry_count(back), 6);
    assert_int_equal(argus_registry_parent(back, argus_region_id("load", outer)), outer);
    argus_registry_free(back);
    /* A file whose ID does not match its name and parent. */
    FILE *f = fopen(path, "w");
    fputs("{\"schema\":\"argus.registry\",\"version\":1,\"regions\":[{\"name\":\"a\","
          "\"id\":\"0x0000001\",\"parent\":\"0x0000000\"}]}",
          f);
    fclose(f);
    assert_int_equal(argus_registry_load(path, &back, msg, sizeof(msg)), ARGUS_EREGISTRY);
    assert_non_null(strstr(msg, "regions[0]"));
    f = fopen(path, "w");
    fputs("{\"schema\":\"argus.report\",\"version\":1,\"regions\":[]}", f);
    fclose(f);
    assert_int_equal(argus_registry_load(path, &back, msg, sizeof(msg)), ARGUS_EREGISTRY);
    f = fopen(path, "w");
    fputs("{\"schema\":", f);
    fclose(f);
    assert_int_equal(argus_registry_load(path, &back, msg, sizeof(msg)), ARGUS_EREGISTRY);
    unlink(path);
    assert_int_equal(argus_registry_load(path, &back, msg, sizeof(msg)), ARGUS_EIO);
    argus_registry_free(r);
}

static void test_scan_errors(void **state)
{
    (void)state;
    argus_registry *r;
    char msg[256] = "";
    assert_int_equal(argus_registry_new(&r), 0);
    assert_int_equal(argus_registry_scan(r,
                                         "// ARGUS_REGION_BEGIN(\"commented\")\n"
                                         "#define X ARGUS_REGION_BEGIN(name)\n"
                                         "const char *s = \"ARGUS_REGION_END(\\\"x\\\")\";\n"
                                         "MY_ARGUS_REGION_BEGIN(\"not a marker\")\n",
                                         "ok.cu", msg, sizeof(msg)),
                     0);
    assert_int_equal(argus_registry_count(r), 0);
    assert_int_equal(argus_registry_scan(r, "ARGUS_REGION_BEGIN(\"a\")\n\nARGUS_REGION_END(\"b\")\n",
                                         "bad.cu", msg, sizeof(msg)),
                     ARGUS_EREGISTRY);
    assert_non_null(strstr(msg, "bad.cu:3"));
    assert_int_equal(argus_registry_scan(r, "ARGUS_REGION_BEGIN(name)", "v.cu", msg, sizeof(msg)),
                     ARGUS_EREGISTRY);
    assert_non_null(strstr(msg, "string literal"));
    assert_int_equal(argus_registry_scan(r, "ARGUS_REGION_BEGIN(\"open\")", "o.cu", msg, sizeof(msg)),
                     ARGUS_EREGISTRY);
    assert_non_null(strstr(msg, "never ended"));
    argus_registry_free(r);
}

static void build(dm_buf *b, uint32_t *outer, uint32_t *load, uint32_t *comp)
{
    *outer = argus_region_id("outer", 0);
    *load = argus_region_id("load", *outer);
    *comp = argus_region_id("compute", *outer);
    assert_int_equal(dm_init(b, 2, 64, 16), 0);
    for (uint32_t c = 0; c < 2; c++) {
        for (uint32_t wi = 0; wi < 2; wi++) {
            dm_warp w;
            dm_begin(&w, b, c, wi, 4 + c, 5000 + 100 * c, 1u << 20, 2.0);
            dm_emit(&w, ARGUS_REC_BEGIN, *outer, 10);
            for (uint32_t i = 0; i < 2; i++) {
                dm_emit(&w, ARGUS_REC_ITER, i, 2);
                dm_emit(&w, ARGUS_REC_BEGIN, *load, 2);
                dm_emit(&w, ARGUS_REC_BEGIN, *comp, 8); /* overlaps load */
                dm_emit(&w, ARGUS_REC_END, *load, 8);
                dm_emit(&w, ARGUS_REC_END, *comp, 30);
            }
            dm_emit(&w, ARGUS_REC_END, *outer, 4);
            dm_end(&w, 6);
        }
    }
}

static cJSON *dump(int (*fn)(const argus_trace *, const argus_registry *, const argus_scope *,
                             const char *, FILE *),
                   const argus_trace *t, const argus_registry *reg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(fn(t, reg, NULL, "k", f), 0);
    fclose(f);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

/* Every object with a "value" is a number of the report: it must have a
 * unit and a mark from the three the schema allows. Returns how many. */
static int check_numbers(const cJSON *j)
{
    int n = 0;
    const cJSON *v = cJSON_GetObjectItem(j, "value");
    if (cJSON_IsObject(j) && v != NULL) {
        assert_true(cJSON_IsNumber(v));
        const cJSON *unit = cJSON_GetObjectItem(j, "unit"), *mark = cJSON_GetObjectItem(j, "mark");
        assert_true(cJSON_IsString(unit) && unit->valuestring[0]);
        assert_true(cJSON_IsString(mark));
        assert_true(strcmp(mark->valuestring, "observed") == 0 ||
                    strcmp(mark->valuestring, "derived") == 0 ||
                    strcmp(mark->valuestring, "attributed") == 0);
        return 1;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, j) n += check_numbers(c);
    return n;
}

static double value(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, key), "value");
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void test_report_json(void **state)
{
    (void)state;
    dm_buf b;
    uint32_t outer, load, comp;
    build(&b, &outer, &load, &comp);
    argus_registry *reg;
    assert_int_equal(argus_registry_new(&reg), 0);
    assert_int_equal(argus_registry_add(reg, "outer", 0, 0, NULL, NULL, 0), 0);
    assert_int_equal(argus_registry_add(reg, "load", outer, 0, NULL, NULL, 0), 0);
    argus_trace t;
    char msg[256];
    assert_int_equal(argus_decode(b.p, b.len, &(argus_decode_opts){.reg = reg}, &t, msg, sizeof(msg)), 0);
    cJSON *j = dump(argus_report_json, &t, reg);
    assert_string_equal(cJSON_GetObjectItem(j, "schema")->valuestring, "argus.report");
    assert_int_equal(cJSON_GetObjectItem(j, "version")->valueint, 1);
    assert_true(check_numbers(j) > 30);
    const cJSON *regions = cJSON_GetObjectItem(j, "regions");
    assert_int_equal(cJSON_GetArraySize(regions), 3);
    const cJSON *r1 = cJSON_GetArrayItem(regions, 1);
    assert_string_equal(cJSON_GetObjectItem(r1, "path")->valuestring, "outer/load");
    assert_true(value(r1, "count") == 8);
    assert_true(value(r1, "total_cycles") == 8 * 16);
    const cJSON *time = cJSON_GetObjectItem(r1, "time");
    assert_true(value(time, "p50") == 8.0);
    assert_int_equal(cJSON_GetObjectItem(time, "samples")->valueint, 8);
    const cJSON *r2 = cJSON_GetArrayItem(regions, 2);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(r2, "registered"))); /* compute */
    char idb[16];
    snprintf(idb, sizeof(idb), "0x%07x", comp);
    assert_string_equal(cJSON_GetObjectItem(r2, "name")->valuestring, idb);
    const cJSON *diags = cJSON_GetObjectItem(j, "diagnostics");
    assert_int_equal(cJSON_GetArraySize(diags), 1);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(diags, 0), "id")->valuestring, idb);
    const cJSON *clock = cJSON_GetObjectItem(j, "clock");
    assert_string_equal(cJSON_GetObjectItem(clock, "method")->valuestring, "globaltimer_anchors");
    assert_true(value(clock, "sm_clock") > 2.0 - 1e-9 && value(clock, "sm_clock") < 2.0 + 1e-9);
    cJSON_Delete(j);
    argus_trace_free(&t);
    argus_registry_free(reg);
    free(b.p);
}

static void test_region_scope(void **state)
{
    (void)state;
    dm_buf b;
    uint32_t outer, load, comp;
    build(&b, &outer, &load, &comp);
    argus_registry *reg;
    assert_int_equal(argus_registry_new(&reg), 0);
    assert_int_equal(argus_registry_add(reg, "outer", 0, 0, NULL, NULL, 0), 0);
    assert_int_equal(argus_registry_add(reg, "load", outer, 0, NULL, NULL, 0), 0);
    argus_trace t;
    assert_int_equal(argus_decode(b.p, b.len, NULL, &t, NULL, 0), 0);
    argus_scope s;
    argus_scope_all(&s);
    char msg[256];
    argus_region_stats *st;
    size_t n;
    assert_int_equal(argus_scope_region(&s, reg, "load", msg, sizeof(msg)), 0);
    assert_int_equal(s.region, load);
    assert_int_equal(argus_stats(&t, &s, &st, &n), 0);
    assert_int_equal(n, 2); /* outer/load and outer/load/compute (dynamic) */
    assert_int_equal(st[0].region, load);
    assert_int_equal(st[1].region, comp);
    free(st);
    assert_int_equal(argus_scope_region(&s, reg, "lod", msg, sizeof(msg)), ARGUS_ENOREGION);
    assert_non_null(strstr(msg, "no region of that name; the registry has: outer load"));
    assert_int_equal(argus_scope_region(&s, NULL, "load", msg, sizeof(msg)), ARGUS_ENOREGION);
    assert_int_equal(argus_scope_region(&s, reg, "load", NULL, 0), 0);
    argus_trace_free(&t);
    argus_registry_free(reg);
    free(b.p);
}

/* No usable anchors (a globaltimer that did not move): times stay cycles,
 * and the report says so in its units and marks. */
static void test_report_without_clock(void **state)
{
    (void)state;
    uint32_t outer = argus_region_id("outer", 0);
    dm_buf b;
    assert_int_equal(dm_init(&b, 1, 32, 8), 0);
    dm_warp w;
    dm_begin(&w, &b, 0, 0, 0, 777, 1000, 1e12);
    dm_emit(&w, ARGUS_REC_BEGIN, outer, 10);
    dm_emit(&w, ARGUS_REC_END, outer, 300);
    dm_end(&w, 10);
    argus_trace t;
    assert_int_equal(argus_decode(b.p, b.len, NULL, &t, NULL, 0), 0);
    assert_int_equal(t.clock_method, ARGUS_CLOCK_NONE);
    cJSON *j = dump(argus_report_json, &t, NULL);
    const cJSON *time = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "regions"), 0), "time");
    const cJSON *p50 = cJSON_GetObjectItem(time, "p50");
    assert_string_equal(cJSON_GetObjectItem(p50, "unit")->valuestring, "cycles");
    assert_string_equal(cJSON_GetObjectItem(p50, "mark")->valuestring, "observed");
    assert_true(cJSON_GetObjectItem(p50, "value")->valuedouble == 300);
    assert_string_equal(cJSON_GetObjectItem(time, "method")->valuestring, "sm_clock");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "clock"), "method")->valuestring, "none");
    cJSON_Delete(j);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(argus_report_text(&t, NULL, NULL, "k", f), 0);
    fclose(f);
    assert_non_null(strstr(text, "p50_kcyc"));
    assert_null(strstr(text, "_us"));
    free(text);
    argus_trace_free(&t);
    free(b.p);
}

static int trace_fn(const argus_trace *t, const argus_registry *reg, const argus_scope *s,
                    const char *k, FILE *f)
{
    (void)s;
    return argus_trace_json(t, reg, k, f);
}

static void test_trace_events(void **state)
{
    (void)state;
    dm_buf b;
    uint32_t outer, load, comp;
    build(&b, &outer, &load, &comp);
    argus_trace t;
    assert_int_equal(argus_decode(b.p, b.len, NULL, &t, NULL, 0), 0);
    cJSON *j = dump(trace_fn, &t, NULL);
    const cJSON *ev = cJSON_GetObjectItem(j, "traceEvents");
    assert_true(cJSON_IsArray(ev));
    /* X events per (pid, tid) track, in file order, must nest strictly. */
    enum { MAXE = 256 };
    double ts[MAXE], end[MAXE], pid[MAXE], tid[MAXE];
    int n = 0, meta = 0, sub = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        assert_true(cJSON_IsNumber(cJSON_GetObjectItem(e, "pid")));
        if (strcmp(ph, "M") == 0) {
            meta++;
            continue;
        }
        assert_string_equal(ph, "X");
        assert_true(n < MAXE);
        ts[n] = cJSON_GetObjectItem(e, "ts")->valuedouble;
        end[n] = ts[n] + cJSON_GetObjectItem(e, "dur")->valuedouble;
        pid[n] = cJSON_GetObjectItem(e, "pid")->valuedouble;
        tid[n] = cJSON_GetObjectItem(e, "tid")->valuedouble;
        assert_true(ts[n] >= 0 && end[n] >= ts[n]);
        sub += (int)tid[n] % (int)ARGUS_MAX_TRACKS != 0;
        for (int k = 0; k < n; k++) {
            if (pid[k] != pid[n] || tid[k] != tid[n])
                continue;
            int disjoint = end[k] <= ts[n] || end[n] <= ts[k];
            int nested = (ts[k] <= ts[n] && end[n] <= end[k]) || (ts[n] <= ts[k] && end[k] <= end[n]);
            assert_true(disjoint || nested);
        }
        n++;
    }
    assert_int_equal(n, 4 * 5);  /* outer + 2 x (load, compute) per warp */
    assert_int_equal(sub, 4 * 2); /* compute crosses load's end: sub-track */
    assert_true(meta >= 4 + 2);   /* thread names and the two SMs' names */
    cJSON_Delete(j);
    argus_trace_free(&t);
    free(b.p);
}

/* The registry in the binary: the header `argus registry --embed` writes
 * holds the registry as a C string; its bytes, as a cubin or a host object
 * stores them, are found again; identical copies are one registry, two
 * different ones or a cut-off one are refused with a message; a loaded
 * module gives it through the driver table. */
typedef struct fake_module {
    const char *text;
    size_t bytes;
    int fail_dtoh;
} fake_module;

static int fm_global(void *c, void *m, const char *name, uint64_t *d, size_t *b)
{
    fake_module *f = c;
    (void)m;
    if (f->text == NULL || strcmp(name, ARGUS_REGISTRY_SYMBOL) != 0)
        return 500; /* CUDA_ERROR_NOT_FOUND */
    *d = (uint64_t)(uintptr_t)f->text;
    *b = f->bytes;
    return 0;
}

static int fm_dtoh(void *c, void *d, uint64_t s, size_t b)
{
    fake_module *f = c;
    if (f->fail_dtoh)
        return 700;
    memcpy(d, (const void *)(uintptr_t)s, b);
    return 0;
}

/* The string literal of a generated header, unescaped (what the compiler
 * stores). */
static char *literal_of(const char *header)
{
    char *out = malloc(strlen(header) + 1);
    assert_non_null(out);
    size_t n = 0;
    const char *p = strstr(header, "[] =");
    assert_non_null(p);
    int in = 0;
    for (; *p; p++) {
        if (!in && *p == ';')
            break;
        if (*p == '"') {
            in = !in;
            continue;
        }
        if (!in)
            continue;
        if (*p == '\\')
            p++;
        out[n++] = *p;
    }
    out[n] = '\0';
    return out;
}

static void test_registry_embedded(void **state)
{
    (void)state;
    char *src = read_all(ARGUS_SRC_DIR "/kernel_known.cu");
    argus_registry *r, *back;
    char msg[512] = "";
    assert_int_equal(argus_registry_new(&r), 0);
    assert_int_equal(argus_registry_scan(r, src, "kernel_known.cu", msg, sizeof(msg)), 0);
    free(src);
    char path[] = "/tmp/argus_embed_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(argus_registry_embed(r, path, msg, sizeof(msg)), 0);
    char *header = read_all(path);
    assert_non_null(strstr(header, "extern \"C\" __device__ const char argus_registry_v1[]"));
    char *text = literal_of(header);
    free(header);
    const char *mark = "{\"schema\":\"argus.registry\",\"version\":1,";
    assert_int_equal(strncmp(text, mark, strlen(mark)), 0);

    /* As an object file holds it: twice (cubin and host shadow), among
     * other bytes with NULs. */
    size_t tl = strlen(text) + 1;
    size_t len = 3 * 64 + 2 * tl;
    unsigned char *bin = calloc(1, len);
    assert_non_null(bin);
    memcpy(bin + 64, text, tl);
    memcpy(bin + 128 + tl, text, tl);
    assert_int_equal(argus_registry_find_embedded(bin, len, "k.o", &back, msg, sizeof(msg)), 0);
    uint32_t outer = argus_region_id("outer", 0);
    assert_int_equal(argus_registry_count(back), 6);
    assert_int_equal(argus_registry_parent(back, argus_region_id("load", outer)), outer);
    argus_registry_free(back);
    /* Through the file loader, which falls back to the scan for binaries. */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bin, 1, len, f), len);
    fclose(f);
    assert_int_equal(argus_registry_load(path, &back, msg, sizeof(msg)), 0);
    assert_int_equal(argus_registry_count(back), 6);
    argus_registry_free(back);
    /* Two different registries: which one is the kernel's is unknown. */
    const char *two = "{\"schema\":\"argus.registry\",\"version\":1,\"regions\":[]}";
    memcpy(bin + 128 + tl, two, strlen(two) + 1);
    assert_int_equal(argus_registry_find_embedded(bin, len, "k.o", &back, msg, sizeof(msg)),
                     ARGUS_EREGISTRY);
    assert_non_null(strstr(msg, "more than one embedded registry"));
    /* Cut off: no NUL before the end. */
    assert_int_equal(argus_registry_find_embedded(bin + 64, tl - 1, "cut", &back, msg, sizeof(msg)),
                     ARGUS_EREGISTRY);
    assert_non_null(strstr(msg, "cut off"));
    /* None at all. */
    assert_int_equal(argus_registry_find_embedded(bin, 64, "none.o", &back, msg, sizeof(msg)),
                     ARGUS_EREGISTRY);
    assert_non_null(strstr(msg, "none.o: neither a registry JSON file"));
    free(bin);
    unlink(path);

    /* A loaded module, through the driver table. */
    fake_module fm = {text, tl, 0};
    argus_driver drv = {.ctx = &fm, .get_global = fm_global, .dtoh = fm_dtoh};
    assert_int_equal(argus_registry_from_module(&drv, (void *)0x1, &back, msg, sizeof(msg)), 0);
    assert_int_equal(argus_registry_count(back), 6);
    argus_registry_free(back);
    fm.fail_dtoh = 1;
    assert_int_equal(argus_registry_from_module(&drv, (void *)0x1, &back, msg, sizeof(msg)),
                     ARGUS_EDRIVER);
    fm.fail_dtoh = 0;
    fm.bytes = 0;
    assert_int_equal(argus_registry_from_module(&drv, (void *)0x1, &back, msg, sizeof(msg)),
                     ARGUS_ELIMIT);
    fm.text = NULL;
    assert_int_equal(argus_registry_from_module(&drv, (void *)0x1, &back, msg, sizeof(msg)),
                     ARGUS_ENOREGION);
    assert_non_null(strstr(msg, "argus registry --embed"));
    free(text);
    argus_registry_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_known_kernel),
        cmocka_unit_test(test_scan_errors),
        cmocka_unit_test(test_report_json),
        cmocka_unit_test(test_trace_events),
        cmocka_unit_test(test_region_scope),
        cmocka_unit_test(test_report_without_clock),
        cmocka_unit_test(test_registry_embedded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
