/*
 * argus-shim's PC sampling evidence without a GPU:
 *   - the cubin reader (profiler/argus/elf.c) on a real cubin compiled by
 *     nvcc 13.0 (tests/argus/fixtures/pcs/, remade by make.sh there), its
 *     function ranges and PC -> function and PC -> line mapping compared
 *     with what NVIDIA's nvdisasm -g printed for the same cubin (the
 *     fixture's .txt, parsed here independently of the reader);
 *   - bad input: every truncation of the cubin, a function range past its
 *     section, a PC outside every function, a function not in the cubin;
 *   - the builder and the report on a recording whose PC samples come from
 *     a test model with known counts (model_samples below), so that every
 *     count, fraction and attribution is known before the code runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "argus/shim.h"
#include "argus_test_util.h"

#define FIX ARGUS_SRC_DIR "/fixtures/pcs/"
#define KERNEL "argus_pcs_kernel"
#define CALLEE "$argus_pcs_kernel$_Z16argus_pcs_calleefi"

static char *slurp(const char *path, size_t *len)
{
    return argus_test_slurp(path, len);
}

/* What nvdisasm -g says: per instruction, its section offset, the function
 * label it follows and the source line of the last "//## File" comment. */
typedef struct dis_row {
    unsigned off;
    char func[128];
    unsigned line;
} dis_row;

static size_t parse_nvdisasm(dis_row *rows, size_t cap)
{
    size_t len, n = 0;
    char *text = slurp(FIX "pcs_kernel.nvdisasm-g.txt", &len);
    char func[128] = "", *save = NULL;
    unsigned line = 0;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        unsigned off, ln;
        const char *f = strstr(l, "//## File \"");
        size_t ll = strlen(l);
        if (f && sscanf(strstr(f, "\", line ") ? strstr(f, "\", line ") : "", "\", line %u", &ln) == 1) {
            line = ln;
        } else if (sscanf(l, " /*%x*/", &off) == 1 && strstr(l, "*/") && n < cap) {
            rows[n].off = off;
            snprintf(rows[n].func, sizeof(rows[n].func), "%s", func);
            rows[n].line = line;
            n++;
        } else if (ll > 1 && l[ll - 1] == ':' && l[0] != '.' && l[0] != ' ' && l[0] != '\t') {
            snprintf(func, sizeof(func), "%.*s", (int)(ll - 1), l);
        }
    }
    free(text);
    return n;
}

static void load_cubin(argus_cubin *c)
{
    size_t len;
    char *img = slurp(FIX "pcs_kernel.cubin", &len);
    char msg[512] = "";
    int rc = argus_cubin_parse(img, len, "pcs_kernel.cubin", c, msg, sizeof(msg));
    if (rc != 0)
        fail_msg("%s", msg);
    free(img);
}

static const argus_cubin_func *fn_named(const argus_cubin *c, const char *name)
{
    for (size_t i = 0; i < c->nfn; i++)
        if (strcmp(c->fn[i].name, name) == 0)
            return &c->fn[i];
    return NULL;
}

static void test_cubin_functions(void **state)
{
    (void)state;
    argus_cubin c;
    load_cubin(&c);
    dis_row rows[512];
    size_t n = parse_nvdisasm(rows, 512);
    assert_true(n > 80);
    assert_int_equal(c.nfn, 2);
    const argus_cubin_func *k = fn_named(&c, KERNEL), *f = fn_named(&c, CALLEE);
    assert_non_null(k);
    assert_non_null(f);
    assert_true(k->entry);
    assert_false(f->entry);
    assert_int_equal(k->section, f->section);
    assert_int_equal(c.fn[f->kernel].section, k->section);
    assert_string_equal(c.fn[f->kernel].name, KERNEL);
    assert_string_equal(argus_cubin_func_base_name(f->name), "_Z16argus_pcs_calleefi");
    assert_string_equal(argus_cubin_func_base_name(k->name), KERNEL);
    /* Ranges against nvdisasm: the kernel starts at its label (0) and ends
     * after the section's last instruction; the callee starts at the first
     * instruction after its label. readelf -s: 0/1408 and 0xb0/1232. */
    unsigned callee_start = 0, last = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rows[i].func, CALLEE) == 0 && callee_start == 0)
            callee_start = rows[i].off;
        last = rows[i].off;
    }
    assert_int_equal(k->lo, 0);
    assert_int_equal(k->hi, last + 16);
    assert_int_equal(f->lo, callee_start);
    assert_int_equal(f->hi, last + 16);
    assert_int_equal(callee_start, 0xb0);
    assert_int_equal(k->hi, 0x580);
    argus_cubin_free(&c);
}

static void test_cubin_pc_to_function_and_line(void **state)
{
    (void)state;
    argus_cubin c;
    load_cubin(&c);
    assert_true(c.has_lines);
    dis_row rows[512];
    size_t n = parse_nvdisasm(rows, 512);
    char msg[512];
    size_t in_callee = 0;
    for (size_t i = 0; i < n; i++) {
        argus_cubin_pc pc;
        /* CUPTI names the kernel and gives the offset from its start. */
        assert_int_equal(argus_cubin_locate(&c, KERNEL, rows[i].off, &pc, msg, sizeof(msg)), 0);
        assert_string_equal(c.fn[pc.func].name, rows[i].func);
        assert_string_equal(c.fn[pc.kernel].name, KERNEL);
        assert_int_equal(pc.offset, rows[i].off);
        assert_non_null(pc.file);
        assert_non_null(strstr(pc.file, "pcs_kernel.cu"));
        if (pc.line != rows[i].line)
            fail_msg("offset 0x%x: line %u, nvdisasm -g says %u", rows[i].off, pc.line,
                     rows[i].line);
        /* The same PC given relative to the callee when CUPTI names it. */
        if (strcmp(rows[i].func, CALLEE) == 0) {
            argus_cubin_pc p2;
            assert_int_equal(argus_cubin_locate(&c, CALLEE, rows[i].off - 0xb0, &p2, msg, sizeof(msg)), 0);
            assert_int_equal(p2.func, pc.func);
            assert_int_equal(p2.line, pc.line);
            in_callee++;
        }
    }
    assert_true(in_callee > 60);
    /* Lines of the source (fixtures/pcs/pcs_kernel.cu): 13 the load, 14 the
     * call, 7 the loop body's FMA, 6 its loop. */
    argus_cubin_pc pc;
    assert_int_equal(argus_cubin_locate(&c, KERNEL, 0x50, &pc, msg, sizeof(msg)), 0);
    assert_int_equal(pc.line, 13);
    assert_int_equal(argus_cubin_locate(&c, KERNEL, 0x70, &pc, msg, sizeof(msg)), 0);
    assert_int_equal(pc.line, 14);
    assert_int_equal(argus_cubin_locate(&c, KERNEL, 0x1b0, &pc, msg, sizeof(msg)), 0);
    assert_int_equal(pc.line, 7);
    assert_int_equal(argus_cubin_locate(&c, KERNEL, 0x1c0, &pc, msg, sizeof(msg)), 0);
    assert_int_equal(pc.line, 6);
    argus_cubin_free(&c);
}

static void test_cubin_bad_pc(void **state)
{
    (void)state;
    argus_cubin c;
    load_cubin(&c);
    argus_cubin_pc pc;
    char msg[512] = "";
    assert_int_equal(argus_cubin_locate(&c, KERNEL, 0x580, &pc, msg, sizeof(msg)), ARGUS_ENOREGION);
    assert_non_null(strstr(msg, "outside every function"));
    assert_int_equal(pc.func, -1);
    assert_int_equal(argus_cubin_locate(&c, CALLEE, 0x4d0, &pc, msg, sizeof(msg)), ARGUS_ENOREGION);
    assert_int_equal(argus_cubin_locate(&c, "_Z5otherv", 0, &pc, msg, sizeof(msg)), ARGUS_ENOREGION);
    assert_non_null(strstr(msg, "_Z5otherv"));
    assert_int_equal(argus_cubin_locate(&c, KERNEL, UINT64_MAX, &pc, msg, sizeof(msg)),
                     ARGUS_ENOREGION);
    argus_cubin_free(&c);
}

static void test_cubin_truncated_and_damaged(void **state)
{
    (void)state;
    size_t len;
    char *img = slurp(FIX "pcs_kernel.cubin", &len);
    char msg[512];
    argus_cubin c;
    /* Every prefix: the section headers sit at the end, so each cut one is
     * refused (ASan checks that none is read past the cut). */
    for (size_t n = 0; n < len; n++) {
        char *cut = malloc(n ? n : 1);
        memcpy(cut, img, n);
        msg[0] = '\0';
        int rc = argus_cubin_parse(cut, n, "cut.cubin", &c, msg, sizeof(msg));
        if (rc != ARGUS_EFORMAT)
            fail_msg("prefix of %zu bytes: rc %d", n, rc);
        assert_non_null(strstr(msg, "cut.cubin: "));
        free(cut);
    }
    assert_int_equal(argus_cubin_parse(img, 10, "x", &c, msg, sizeof(msg)), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "shorter than an ELF64 header"));
    /* Not an ELF; an ELF of another machine. */
    char *bad = malloc(len);
    memcpy(bad, img, len);
    bad[1] = 'X';
    assert_int_equal(argus_cubin_parse(bad, len, "x", &c, msg, sizeof(msg)), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "no ELF magic"));
    memcpy(bad, img, len);
    bad[18] = 62; /* EM_X86_64 */
    assert_int_equal(argus_cubin_parse(bad, len, "x", &c, msg, sizeof(msg)), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "EM_CUDA"));
    /* The callee's st_size (symbol 6 of .symtab at 0x4b0 in the fixture;
     * 24-byte entries, st_size at +16) made to run past its section. */
    memcpy(bad, img, len);
    uint64_t huge = 0x100000;
    memcpy(bad + 0x4b0 + 6 * 24 + 16, &huge, 8);
    assert_int_equal(argus_cubin_parse(bad, len, "x", &c, msg, sizeof(msg)), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "runs past the end of its .text section"));
    /* A section whose bytes lie past the end of the file. */
    memcpy(bad, img, len);
    size_t shoff = 0x19a0, sh5 = shoff + 5 * 64; /* .debug_line's header */
    uint64_t far = len;
    memcpy(bad + sh5 + 24, &far, 8);
    assert_int_equal(argus_cubin_parse(bad, len, "x", &c, msg, sizeof(msg)), ARGUS_EFORMAT);
    assert_non_null(strstr(msg, "beyond the end of the file"));
    free(bad);
    free(img);
}

/* ---- PC samples of a test model through the builder and the report ---- */

/* The model: stall reason names CUPTI would report, and per sample its
 * function, PC offset, correlation ID and counts per reason. The counts
 * are chosen here, so every expected number below follows by hand. */
static const struct {
    unsigned index;
    const char *name;
} model_reasons[] = {
    {1, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
    {2, "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"},
    {3, "smsp__pcsamp_warps_issue_stalled_selected"},
    {7, "smsp__pcsamp_warps_issue_stalled_wait"},
};

typedef struct model_sample {
    const char *function;
    unsigned pc, corr;
    unsigned reason[2], count[2];
} model_sample;

static const model_sample model_samples[] = {
    /* launch 1 (range step) */
    {KERNEL, 0x50, 1, {1, 3}, {30, 2}},   /* LDG, line 13: 32 */
    {KERNEL, 0x1b0, 1, {2, 3}, {50, 10}}, /* callee FFMA, line 7: 60 */
    {KERNEL, 0x1c0, 1, {7, 0}, {8, 0}},   /* callee loop, line 6: 8 */
    {CALLEE, 0x10, 1, {3, 0}, {4, 0}},    /* named by the callee: section 0xc0 */
    {KERNEL, 0x600, 1, {1, 0}, {3, 0}},   /* outside every function */
    /* launch 2 (range eval) */
    {KERNEL, 0x1b0, 2, {2, 0}, {20, 0}},  /* 20 */
    {KERNEL, 0x90, 2, {7, 0}, {5, 0}},    /* STG, line 15: 5 */
    /* a kernel this run has no record of */
    {"_Z5otherv", 0x10, 9, {1, 0}, {6, 0}},
};

#define MODEL_CRC "12345678901234567890"

/* The recording the recorder would have written for the model. */
static char *model_recording(int continuous, int one_kernel)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    fprintf(f, "{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"subscribed\","
               "\"command\":\"model\",\"t0\":\"1000\"}\n");
    fprintf(f, "{\"e\":\"pcs\",\"state\":\"enabled\",\"mode\":\"%s\",\"period\":5}\n",
            continuous ? "continuous" : "kernel_serialized");
    for (size_t i = 0; i < sizeof(model_reasons) / sizeof(model_reasons[0]); i++)
        fprintf(f, "{\"e\":\"stall\",\"index\":%u,\"name\":\"%s\"}\n", model_reasons[i].index,
                model_reasons[i].name);
    fprintf(f, "{\"e\":\"module\",\"crc\":\"" MODEL_CRC "\",\"cubin\":\"%s\"}\n",
            FIX "pcs_kernel.cubin");
    fprintf(f, "{\"e\":\"push\",\"tid\":1,\"ts\":10,\"name\":\"step\"}\n"
               "{\"e\":\"launch\",\"tid\":1,\"ts\":11,\"corr\":1}\n"
               "{\"e\":\"pop\",\"tid\":1,\"ts\":20}\n");
    if (!one_kernel)
        fprintf(f, "{\"e\":\"push\",\"tid\":1,\"ts\":30,\"name\":\"eval\"}\n"
                   "{\"e\":\"launch\",\"tid\":1,\"ts\":31,\"corr\":2}\n"
                   "{\"e\":\"pop\",\"tid\":1,\"ts\":40}\n");
    fprintf(f, "{\"e\":\"kernel\",\"corr\":1,\"name\":\"" KERNEL "\",\"start\":12,\"end\":18,"
               "\"stream\":7}\n");
    if (!one_kernel)
        fprintf(f, "{\"e\":\"kernel\",\"corr\":2,\"name\":\"" KERNEL "\",\"start\":32,\"end\":38,"
                   "\"stream\":7}\n");
    uint64_t total = 0;
    for (size_t i = 0; i < sizeof(model_samples) / sizeof(model_samples[0]); i++) {
        const model_sample *m = &model_samples[i];
        if (one_kernel && m->corr == 2)
            continue;
        fprintf(f, "{\"e\":\"pc\",\"crc\":\"" MODEL_CRC "\",\"function\":\"%s\",\"pc\":%u,"
                   "\"corr\":%u,\"stall\":[[%u,%u]",
                m->function, m->pc, continuous ? 0 : m->corr, m->reason[0], m->count[0]);
        if (m->count[1])
            fprintf(f, ",[%u,%u]", m->reason[1], m->count[1]);
        fprintf(f, "]}\n");
        total += m->count[0] + m->count[1];
    }
    /* CUPTI's line for one PC (the others come from the cubin). */
    fprintf(f, "{\"e\":\"pcline\",\"crc\":\"" MODEL_CRC "\",\"function\":\"" KERNEL "\",\"pc\":80,"
               "\"file\":\"from_cupti/pcs_kernel.cu\",\"line\":13}\n");
    fprintf(f, "{\"e\":\"pcs_totals\",\"samples\":%llu,\"dropped\":0,\"non_user\":0,"
               "\"buffer_full\":0}\n", (unsigned long long)total);
    fclose(f);
    return text;
}

static cJSON *model_report(int continuous, int one_kernel, argus_shim_input *in,
                           argus_shim_result *r, char **txt)
{
    char *text = model_recording(continuous, one_kernel);
    char msg[1024] = "";
    int rc = argus_shim_input_parse("model.jsonl", text, strlen(text), in, NULL, msg, sizeof(msg));
    if (rc != 0)
        fail_msg("%s", msg);
    free(text);
    if ((rc = argus_shim_build(in, r, msg, sizeof(msg))) != 0)
        fail_msg("%s", msg);
    char *out = NULL;
    size_t olen = 0;
    FILE *f = open_memstream(&out, &olen);
    assert_int_equal(argus_shim_report_json(r, NULL, f), 0);
    fclose(f);
    cJSON *doc = cJSON_Parse(out);
    assert_non_null(doc);
    free(out);
    f = open_memstream(txt, &olen);
    assert_int_equal(argus_shim_report_text(r, NULL, f), 0);
    fclose(f);
    return doc;
}

static const cJSON *region_at(const cJSON *doc, const char *path)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "regions"))
    if (strcmp(cJSON_GetObjectItem(r, "path")->valuestring, path) == 0)
        return r;
    fail_msg("no region %s", path);
    return NULL;
}

static double val(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    assert_non_null(v);
    return cJSON_GetObjectItem(v, "value")->valuedouble;
}

static const char *mark(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItem(cJSON_GetObjectItem(o, key), "mark")->valuestring;
}

static void test_pcs_serialized(void **state)
{
    (void)state;
    argus_shim_input in;
    argus_shim_result r;
    char *txt = NULL;
    cJSON *doc = model_report(0, 0, &in, &r, &txt);
    const cJSON *run = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "run"), "pc_sampling");
    assert_string_equal(cJSON_GetObjectItem(run, "state")->valuestring, "collected");
    assert_string_equal(cJSON_GetObjectItem(run, "mode")->valuestring, "kernel_serialized");
    assert_int_equal(val(run, "period"), 32);
    /* 32+60+8+4+3 + 20+5 + 6 */
    assert_int_equal(val(run, "samples"), 138);
    assert_int_equal(val(run, "samples_unattributed"), 6);
    /* Launch 1's kernel: 107 samples, tied by correlation ID (observed). */
    const cJSON *k1 = region_at(doc, "step/" KERNEL);
    const cJSON *p1 = cJSON_GetObjectItem(k1, "pc_sampling");
    assert_int_equal(val(p1, "samples"), 107);
    assert_string_equal(mark(p1, "samples"), "observed");
    const cJSON *hot = cJSON_GetObjectItem(p1, "hot_pcs");
    assert_int_equal(cJSON_GetArraySize(hot), 5);
    const cJSON *h0 = cJSON_GetArrayItem(hot, 0), *h1 = cJSON_GetArrayItem(hot, 1);
    assert_int_equal(cJSON_GetObjectItem(h0, "pc_offset")->valuedouble, 0x1b0);
    assert_int_equal(val(h0, "samples"), 60);
    assert_string_equal(mark(h0, "samples"), "observed");
    assert_float_equal(val(h0, "fraction"), 60.0 / 107.0, 1e-12);
    assert_string_equal(cJSON_GetObjectItem(h0, "device_function")->valuestring, CALLEE);
    const cJSON *src = cJSON_GetObjectItem(h0, "source");
    assert_int_equal(cJSON_GetObjectItem(src, "line")->valuedouble, 7);
    assert_string_equal(cJSON_GetObjectItem(src, "from")->valuestring, "cubin_debug_line");
    const cJSON *sr = cJSON_GetObjectItem(h0, "stall_reasons");
    assert_int_equal(cJSON_GetArraySize(sr), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sr, 0), "name")->valuestring,
                        "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle");
    assert_int_equal(val(cJSON_GetArrayItem(sr, 0), "samples"), 50);
    assert_float_equal(val(cJSON_GetArrayItem(sr, 0), "fraction"), 50.0 / 60.0, 1e-12);
    assert_float_equal(val(cJSON_GetArrayItem(sr, 1), "fraction"), 10.0 / 60.0, 1e-12);
    /* The LDG: CUPTI's line wins over the cubin's (both say 13). */
    assert_int_equal(cJSON_GetObjectItem(h1, "pc_offset")->valuedouble, 0x50);
    assert_int_equal(val(h1, "samples"), 32);
    src = cJSON_GetObjectItem(h1, "source");
    assert_string_equal(cJSON_GetObjectItem(src, "file")->valuestring, "from_cupti/pcs_kernel.cu");
    assert_int_equal(cJSON_GetObjectItem(src, "line")->valuedouble, 13);
    assert_string_equal(cJSON_GetObjectItem(src, "from")->valuestring, "cupti_sass_to_source");
    /* Lines: 7 has 60, 13 has 32, 6 has 8 + 4 (the callee-named PC at
     * section offset 0xc0 is on line 6 too, nvdisasm -g). */
    const cJSON *hl = cJSON_GetObjectItem(p1, "hot_lines");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(hl, 0), "line")->valuedouble, 7);
    assert_int_equal(val(cJSON_GetArrayItem(hl, 0), "samples"), 60);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(hl, 1), "line")->valuedouble, 13);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(hl, 2), "line")->valuedouble, 6);
    assert_int_equal(val(cJSON_GetArrayItem(hl, 2), "samples"), 12);
    /* Launch 2's: 25; the ranges get their kernels' (attributed). */
    assert_int_equal(val(cJSON_GetObjectItem(region_at(doc, "eval/" KERNEL), "pc_sampling"), "samples"), 25);
    const cJSON *step = cJSON_GetObjectItem(region_at(doc, "step"), "pc_sampling");
    assert_int_equal(val(step, "samples"), 107);
    assert_string_equal(mark(step, "samples"), "attributed");
    assert_int_equal(val(cJSON_GetObjectItem(region_at(doc, "eval"), "pc_sampling"), "samples"), 25);
    /* Device functions under each kernel: body 32 / callee 72 (60+8+4; the
     * 3 outside every function are in neither), and 5 / 20. */
    const cJSON *fb = region_at(doc, "step/" KERNEL "/" KERNEL);
    const cJSON *fc = region_at(doc, "step/" KERNEL "/" CALLEE);
    assert_string_equal(cJSON_GetObjectItem(fc, "kind")->valuestring, "device_function");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fb, "kernel_body")));
    assert_int_equal(val(fb, "count"), 32);
    assert_int_equal(val(fc, "count"), 72);
    assert_string_equal(mark(fc, "count"), "attributed");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(fc, "range"), "lo")->valuedouble, 0xb0);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(fc, "range"), "hi")->valuedouble, 0x580);
    assert_int_equal(cJSON_GetObjectItem(fc, "parent_node")->valuedouble,
                     cJSON_GetObjectItem(k1, "node")->valuedouble);
    assert_int_equal(val(region_at(doc, "eval/" KERNEL "/" KERNEL), "count"), 5);
    assert_int_equal(val(region_at(doc, "eval/" KERNEL "/" CALLEE), "count"), 20);
    /* The notes name the PC outside every function and the unknown kernel. */
    char *notes = cJSON_PrintUnformatted(cJSON_GetObjectItem(run, "notes"));
    assert_non_null(strstr(notes, "0x600"));
    assert_non_null(strstr(notes, "outside every function"));
    assert_non_null(strstr(notes, "6 samples of _Z5otherv not given to a region"));
    free(notes);
    /* The text says the same. */
    assert_non_null(strstr(txt, "step/" KERNEL ": 107 samples (observed"));
    assert_non_null(strstr(txt, KERNEL "+0x1b0  60 (56.1%)"));
    assert_non_null(strstr(txt, "math_pipe_throttle 83.3% (50)"));
    assert_non_null(strstr(txt, CALLEE " [0xb0, 0x580)  72 (67.3%)"));
    assert_non_null(strstr(txt, "step: 107 samples of its kernels (attributed)"));
    free(txt);
    cJSON_Delete(doc);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
}

static void test_pcs_continuous(void **state)
{
    (void)state;
    argus_shim_input in;
    argus_shim_result r;
    char *txt = NULL;
    /* Two launches of one kernel in two ranges, no correlation IDs: the
     * samples cannot be split, and none is given to either range. */
    cJSON *doc = model_report(1, 0, &in, &r, &txt);
    const cJSON *run = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "run"), "pc_sampling");
    assert_int_equal(val(run, "samples_unattributed"), 138);
    assert_non_null(strstr(txt, "the kernel ran in 2 regions"));
    assert_int_equal(val(cJSON_GetObjectItem(region_at(doc, "step/" KERNEL), "pc_sampling"), "samples"), 0);
    free(txt);
    cJSON_Delete(doc);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
    /* One launch: the samples go to it by name, marked attributed. */
    doc = model_report(1, 1, &in, &r, &txt);
    run = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "run"), "pc_sampling");
    assert_int_equal(val(run, "samples_unattributed"), 6);
    const cJSON *p1 = cJSON_GetObjectItem(region_at(doc, "step/" KERNEL), "pc_sampling");
    assert_int_equal(val(p1, "samples"), 107);
    assert_string_equal(mark(p1, "samples"), "attributed");
    free(txt);
    cJSON_Delete(doc);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
}

static void test_pcs_refused_and_bad_lines(void **state)
{
    (void)state;
    const char *head = "{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"subscribed\"}\n";
    char text[4096];
    char msg[1024];
    argus_shim_input in;
    /* Refused: the reason is kept, the kernels too. */
    snprintf(text, sizeof(text), "%s{\"e\":\"unavailable\",\"what\":\"pc_sampling\",\"why\":"
             "\"CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: needs admin\"}\n"
             "{\"e\":\"launch\",\"tid\":1,\"ts\":1,\"corr\":1}\n"
             "{\"e\":\"kernel\",\"corr\":1,\"name\":\"k\",\"start\":2,\"end\":3}\n", head);
    assert_int_equal(argus_shim_input_parse("r.jsonl", text, strlen(text), &in, NULL, msg, sizeof(msg)), 0);
    assert_int_equal(in.pcs.state, ARGUS_SHIM_PCS_UNAVAILABLE);
    argus_shim_result r;
    assert_int_equal(argus_shim_build(&in, &r, msg, sizeof(msg)), 0);
    assert_int_equal(r.kernels, 1);
    char *out = NULL;
    size_t olen;
    FILE *f = open_memstream(&out, &olen);
    assert_int_equal(argus_shim_report_json(&r, NULL, f), 0);
    fclose(f);
    assert_non_null(strstr(out, "\"pc_sampling\":{\"state\":\"unavailable\",\"why\":"
                                "\"CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: needs admin\"}"));
    free(out);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
    /* Hostile lines, each with the message it must give. */
    static const struct {
        const char *line, *says;
    } bad[] = {
        {"{\"e\":\"pc\",\"crc\":\"12\",\"function\":\"k\",\"pc\":1,\"stall\":[[1]]}", "stall"},
        {"{\"e\":\"pc\",\"crc\":12,\"function\":\"k\",\"pc\":1,\"stall\":[]}", "crc"},
        {"{\"e\":\"pc\",\"crc\":\"99999999999999999999\",\"function\":\"k\",\"pc\":1,\"stall\":[]}", "crc"},
        {"{\"e\":\"pc\",\"crc\":\"1\",\"pc\":1,\"stall\":[]}", "function"},
        {"{\"e\":\"pc\",\"crc\":\"1\",\"function\":\"k\",\"pc\":-1,\"stall\":[]}", "pc"},
        {"{\"e\":\"pc\",\"crc\":\"1\",\"function\":\"k\",\"pc\":1,\"stall\":[[1,-2]]}", "stall"},
        {"{\"e\":\"pcline\",\"crc\":\"1\",\"function\":\"k\",\"pc\":1,\"file\":\"a\",\"line\":0}", "line"},
        {"{\"e\":\"pcs\",\"state\":\"on\"}", "state"},
        {"{\"e\":\"pcs\",\"state\":\"enabled\",\"mode\":\"sometimes\"}", "mode"},
        {"{\"e\":\"pcs\",\"state\":\"enabled\",\"period\":40}", "period"},
        {"{\"e\":\"stall\",\"index\":1}", "name"},
        {"{\"e\":\"module\",\"crc\":\"1\"}", "cubin"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), "%s%s\n", head, bad[i].line);
        msg[0] = '\0';
        assert_int_equal(argus_shim_input_parse("bad.jsonl", text, strlen(text), &in, NULL, msg,
                                                sizeof(msg)),
                         ARGUS_EFORMAT);
        char want[64];
        snprintf(want, sizeof(want), "bad.jsonl:2: %s:", bad[i].says);
        if (strstr(msg, want) == NULL)
            fail_msg("line %zu: message '%s' lacks '%s'", i, msg, want);
    }
    /* A module image that is not there: the samples still count, with no
     * device functions, and the report says why. */
    snprintf(text, sizeof(text), "%s{\"e\":\"pcs\",\"state\":\"enabled\",\"period\":5}\n"
             "{\"e\":\"module\",\"crc\":\"5\",\"cubin\":\"missing.cubin\"}\n"
             "{\"e\":\"launch\",\"tid\":1,\"ts\":1,\"corr\":1}\n"
             "{\"e\":\"kernel\",\"corr\":1,\"name\":\"k\",\"start\":2,\"end\":3}\n"
             "{\"e\":\"pc\",\"crc\":\"5\",\"function\":\"k\",\"pc\":16,\"corr\":1,\"stall\":[[1,4]]}\n",
             head);
    assert_int_equal(argus_shim_input_parse("/nowhere/r.jsonl", text, strlen(text), &in, NULL, msg,
                                            sizeof(msg)), 0);
    assert_string_equal(in.pcs.modules[0].cubin, "/nowhere/missing.cubin");
    assert_int_equal(argus_shim_build(&in, &r, msg, sizeof(msg)), 0);
    assert_int_equal(r.node_samples[r.sites[0].node], 4);
    assert_int_equal(r.nfregions, 0);
    assert_non_null(strstr(r.pcs_notes[0], "/nowhere/missing.cubin: the module image cannot be read"));
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
}

/* Mutated model recordings through reader, builder and both reports: no
 * crash, no leak (the ASan build), and every refusal is ARGUS_EFORMAT. */
static void test_pcs_mutations(void **state)
{
    (void)state;
    char *base = model_recording(0, 0);
    size_t len = strlen(base);
    static const char pool[] = "{}[]\":,0123456789-e.\n xpcslineu";
    srand(12);
    for (int round = 0; round < 2000; round++) {
        char *t = malloc(len + 1);
        memcpy(t, base, len + 1);
        int edits = 1 + rand() % 4;
        for (int k = 0; k < edits; k++)
            t[(size_t)rand() % len] = pool[(size_t)rand() % (sizeof(pool) - 1)];
        argus_shim_input in;
        char msg[1024];
        int rc = argus_shim_input_parse("m.jsonl", t, len, &in, NULL, msg, sizeof(msg));
        if (rc == 0) {
            argus_shim_result r;
            if (argus_shim_build(&in, &r, msg, sizeof(msg)) == 0) {
                FILE *f = fopen("/dev/null", "w");
                assert_int_equal(argus_shim_report_json(&r, NULL, f), 0);
                assert_int_equal(argus_shim_report_text(&r, NULL, f), 0);
                fclose(f);
                argus_shim_result_free(&r);
            }
            argus_shim_input_free(&in);
        } else {
            assert_int_equal(rc, ARGUS_EFORMAT);
        }
        free(t);
    }
    free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cubin_functions),
        cmocka_unit_test(test_cubin_pc_to_function_and_line),
        cmocka_unit_test(test_cubin_bad_pc),
        cmocka_unit_test(test_cubin_truncated_and_damaged),
        cmocka_unit_test(test_pcs_serialized),
        cmocka_unit_test(test_pcs_continuous),
        cmocka_unit_test(test_pcs_refused_and_bad_lines),
        cmocka_unit_test(test_pcs_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
