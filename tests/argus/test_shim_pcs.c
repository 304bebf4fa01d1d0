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

#include <cmocka.h>

#include "argus/shim.h"

#define FIX ARGUS_SRC_DIR "/fixtures/pcs/"
#define KERNEL "argus_pcs_kernel"
#define CALLEE "$argus_pcs_kernel$_Z16argus_pcs_calleefi"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cubin_functions),
        cmocka_unit_test(test_cubin_pc_to_function_and_line),
        cmocka_unit_test(test_cubin_bad_pc),
        cmocka_unit_test(test_cubin_truncated_and_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
