/*
 * argus-pcmap, the CUDA Sanitizer PC-to-region backend (docs/argus-backends.md),
 * without a GPU:
 * - the device logic (profiler/argus/sanitizer/pcmap_dev.h, the code the
 *   patch runs) on marker records and instructions written here;
 * - the host tool, libargus_pcmap.so, loaded into a child process beside the
 *   fake Sanitizer (fake_sanitizer.c), with the real cubin of the
 *   known-ratio kernel (fixtures/pcmap/truth_on.cubin: gpu_truth_kernels.cu
 *   built with -DARGUS_ENABLE for sm_90) and a model of its g16_calls
 *   launch whose marker stores and patched instructions go through the same
 *   device logic: work() called 3 times under callA and once under callB,
 *   8 iterations, 32 CTAs x 4 warps, so each of work's PCs executes
 *   3 x 8 x 128 = 3072 times under callA and 1024 under callB (counted by
 *   hand from gpu_truth.h, not by the code under test);
 * - the map file's reader on the tool's output and on bad files;
 * - attribution of a metric through the map: 2000 samples at a work PC
 *   split 1500 / 500, entropy 0.811278 bits;
 * - the errors: the Sanitizer API missing, a library that is not it,
 *   another tool attached, an unsupported GPU, no output asked (silent).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "argus/attrib.h"
#include "argus/pcmap.h"
#include "argus/shim.h"
#include "argus/workspace.h"
#include "argus_test_util.h"
#include "fake_sanitizer.h"
#include "gpu_truth.h"
#include "pcmap_dev.h"
#include "san_abi.h"

#define CUBIN ARGUS_SRC_DIR "/fixtures/pcmap/truth_on.cubin"
#define PCS_CUBIN ARGUS_SRC_DIR "/fixtures/pcs/pcs_kernel.cubin"
#define H_3_1 0.8112781244591328


/* Where the model puts the two functions, and the PCs it executes. */
#define KBASE 0x7f0000010000ull
#define WBASE 0x7f0000020000ull
#define PC_CALL_A (KBASE + 0x100)  /* call of work() in callA */
#define PC_CALL_B (KBASE + 0x200)  /* in callB */
#define PC_OUT (KBASE + 0x300)     /* out[] store, after the loop */
#define PC_EXIT (KBASE + 0x310)
/* work() where the Sanitizer places it; in scenario callee_unplaced (as on
 * the H200: nvcc puts the __noinline__ callee's copy "$KERNEL$work" inside
 * the kernel's section and the Sanitizer places only the kernel) at the
 * kernel's start plus the copy's offset in the section. */
static uint64_t wbase = WBASE;
static uint64_t work_off, kernel_size; /* from the cubin's symbol table */
#define PC_WSYNC (wbase + 0x40)    /* work's END marker's bar.warp.sync, inside work */
#define PC_WRET (wbase + 0x80)     /* work's return, after its END */

static char dir[256];
static char kernel_name[512], work_name[512];

static void *read_all(const char *path, size_t *len)
{
    return argus_test_slurp(path, len);
}

/* The two function names as the cubin's symbol table has them. */
static void find_names(void)
{
    size_t len;
    void *img = read_all(CUBIN, &len);
    argus_cubin c;
    char msg[256];
    assert_int_equal(argus_cubin_parse(img, len, CUBIN, &c, msg, sizeof msg), 0);
    for (size_t i = 0; i < c.nfn; i++) {
        const char *n = c.fn[i].name;
        if (strstr(n, "g16_calls_on") && strstr(n, "4work")) {
            snprintf(work_name, sizeof work_name, "%s", n);
            assert_true(c.fn[i].kernel >= 0);
            work_off = c.fn[i].lo - c.fn[c.fn[i].kernel].lo;
        } else if (strstr(n, "g16_calls_on") && c.fn[i].entry) {
            snprintf(kernel_name, sizeof kernel_name, "%s", n);
            kernel_size = c.fn[i].hi - c.fn[i].lo;
        }
    }
    assert_true(work_off >= 0x400 && work_off + 0x100 <= kernel_size);
    argus_cubin_free(&c);
    free(img);
    assert_true(kernel_name[0] && work_name[0]);
}

/* ---- the model of g16_calls ------------------------------------------------ */

typedef struct model {
    int program_arms; /* the descriptor is armed before the launch (cap 4) */
    int extra_end;    /* one END too many in warp 0 (unbalanced markers) */
    int calls_b;      /* work() calls in callB; 0: G16_CALL_B (a wrong kernel: 2) */
    int iters_roles;  /* ARGUS_ITER i before each iteration, and warp 0 of each CTA
                         "producer", the others "consumer" (not in the real kernel) */
} model;

static uint32_t id_a, id_b, id_w, id_prod, id_cons;

/* A marker: the record store of an armed warp's lane 0 (region.cuh), which
 * the patch sees as a global 8-byte write. Unarmed: no store, no callback. */
static void marker(void *ud, const argus_device_desc *desc, uint32_t w, uint32_t *n,
                   uint32_t kind, uint32_t id)
{
    if (desc->magic != ARGUS_BUF_MAGIC || desc->slots == 0 || w >= desc->nslots)
        return;
    uint64_t slot_bytes = ARGUS_SLOT_HEADER_BYTES + 8ull * (desc->cap_mask + 1u);
    uint64_t addr = desc->slots + w * slot_bytes + ARGUS_SLOT_HEADER_BYTES +
                    8ull * ((*n)++ & desc->cap_mask);
    uint64_t v = ARGUS_REC_MAKE(kind, id, 1234u);
    memcpy((void *)(uintptr_t)addr, &v, 8);
    if (ud != NULL && !argus_pcmap_marker(ud, w, addr, 8, 1, v))
        fail_msg("a marker store was not taken for one");
}

static void exec(void *ud, uint32_t w, uint64_t pc, uint32_t kind)
{
    if (ud != NULL)
        argus_pcmap_count(ud, w, pc, kind);
}

static void calls_kernel(void *ud, const void *descp, void *arg)
{
    const model *m = arg;
    argus_device_desc desc;
    memcpy(&desc, descp, sizeof desc);
    uint32_t warps = G16_CTAS * (G16_CALL_THREADS / 32);
    static uint64_t out_word[G16_CTAS * G16_CALL_THREADS / 32];
    for (uint32_t w = 0; w < warps; w++) {
        uint32_t n = 0;
        if (m->iters_roles)
            marker(ud, &desc, w, &n, ARGUS_REC_ROLE, w % 4 == 0 ? id_prod : id_cons);
        for (uint32_t i = 0; i < G16_CALL_ITERS; i++) {
            if (m->iters_roles)
                marker(ud, &desc, w, &n, ARGUS_REC_ITER, i);
            marker(ud, &desc, w, &n, ARGUS_REC_BEGIN, id_a);
            for (uint32_t k = 0; k < G16_CALL_A; k++) {
                exec(ud, w, PC_CALL_A, ARGUS_PCMAP_K_CALL);
                marker(ud, &desc, w, &n, ARGUS_REC_BEGIN, id_w);
                exec(ud, w, PC_WSYNC, ARGUS_PCMAP_K_SYNCWARP);
                marker(ud, &desc, w, &n, ARGUS_REC_END, id_w);
                exec(ud, w, PC_WRET, ARGUS_PCMAP_K_RET);
            }
            marker(ud, &desc, w, &n, ARGUS_REC_END, id_a);
            marker(ud, &desc, w, &n, ARGUS_REC_BEGIN, id_b);
            for (uint32_t k = 0; k < (m->calls_b ? (uint32_t)m->calls_b : G16_CALL_B); k++) {
                exec(ud, w, PC_CALL_B, ARGUS_PCMAP_K_CALL);
                marker(ud, &desc, w, &n, ARGUS_REC_BEGIN, id_w);
                exec(ud, w, PC_WSYNC, ARGUS_PCMAP_K_SYNCWARP);
                marker(ud, &desc, w, &n, ARGUS_REC_END, id_w);
                exec(ud, w, PC_WRET, ARGUS_PCMAP_K_RET);
            }
            marker(ud, &desc, w, &n, ARGUS_REC_END, id_b);
        }
        if (m->extra_end && w == 0)
            marker(ud, &desc, w, &n, ARGUS_REC_END, id_a);
        /* out[] is a global store too, outside the ring: counted. */
        if (ud != NULL &&
            argus_pcmap_marker(ud, w, (uint64_t)(uintptr_t)&out_word[w], 8, 1, 0x1234))
            fail_msg("a store outside the ring was taken for a marker");
        exec(ud, w, PC_OUT, ARGUS_PCMAP_K_GLOBAL);
        exec(ud, w, PC_EXIT, ARGUS_PCMAP_K_EXIT);
    }
}

/* ---- running the tool in a child process ----------------------------------- */

typedef struct scenario {
    const char *san_lib; /* ARGUS_SANITIZER_LIB; NULL: the fake */
    int no_out;          /* ARGUS_PCMAP_OUT unset */
    unsigned faults;
    const char *cubin;   /* the module's image; NULL: the truth cubin */
    model m;
    int launches;
    int reload;          /* after the launches: the module unloaded, an uninstrumented
                            one loaded at the same handle and launched once more */
    int no_sync;         /* the program does not synchronise: the flush collects */
    const char *log;     /* ARGUS_PCMAP_LOG; NULL: unset */
    int callee_unplaced; /* the fake places the kernel only (as the H200's Sanitizer) */
} scenario;

static char out_path[512], err_path[512], reg_path[512];

/* Runs s in a child; returns the child's exit status. */
static int run(const scenario *s)
{
    snprintf(out_path, sizeof out_path, "%s/map.json", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    unlink(out_path);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(30); /* a deadlock in the tool fails the test, not the suite's time */
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(91);
        if (s->no_out)
            unsetenv("ARGUS_PCMAP_OUT");
        else
            setenv("ARGUS_PCMAP_OUT", out_path, 1);
        setenv("ARGUS_SANITIZER_LIB", s->san_lib ? s->san_lib : FAKE_SAN_LIB, 1);
        setenv("ARGUS_PCMAP_CUDA_LIB", FAKE_SAN_LIB, 1);
        setenv("ARGUS_PCMAP_PATCH", CUBIN, 1); /* the fake does not read it */
        setenv("ARGUS_PCMAP_REGISTRY", reg_path, 1);
        setenv("ARGUS_PCMAP_TABLE", "1024", 1);
        if (s->log)
            setenv("ARGUS_PCMAP_LOG", s->log, 1);
        else
            unsetenv("ARGUS_PCMAP_LOG");
        fake_san_faults(s->faults);
        if (s->callee_unplaced) {
            fake_san_function(kernel_name, KBASE, kernel_size);
            wbase = KBASE + work_off;
        } else {
            fake_san_function(kernel_name, KBASE, 0x1000);
            fake_san_function(work_name, WBASE, 0x200);
        }
        void *h = dlopen(PCMAP_TOOL, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            _exit(92);
        }
        size_t len;
        void *img = read_all(s->cubin ? s->cubin : CUBIN, &len);
        fake_san_module_load(0x100, img, len);
        uint32_t grid[3] = {G16_CTAS, 1, 1}, block[3] = {G16_CALL_THREADS, 1, 1};
        for (int i = 0; i < (s->launches ? s->launches : 1); i++) {
            if (s->m.program_arms) {
                /* The program armed it (argus_launch_arm): 4 records per warp. */
                static unsigned char ring[G16_CTAS * 4 * (64 + 32)];
                argus_device_desc d = {(uint64_t)(uintptr_t)ring, G16_CTAS * 4, 3, 4,
                                       ARGUS_BUF_MAGIC};
                memcpy(fake_san_desc(0x100), &d, sizeof d);
            }
            fake_san_launch(0x100, kernel_name, grid, block, calls_kernel, (void *)&s->m);
            if (!s->no_sync)
                fake_san_sync();
        }
        if (s->reload) {
            fake_san_module_unload(0x100);
            free(img);
            img = read_all(PCS_CUBIN, &len);
            fake_san_module_load(0x100, img, len);
            fake_san_launch(0x100, kernel_name, grid, block, calls_kernel, (void *)&s->m);
            fake_san_sync();
        }
        free(img);
        int (*flush)(void) = (int (*)(void))dlsym(h, "argus_pcmap_tool_flush");
        if (flush == NULL || flush() != 0)
            _exit(93);
        /* Nothing of the tool's device memory may be left, and what it armed
         * must be disarmed. */
        argus_device_desc d;
        memcpy(&d, fake_san_desc(0x100), sizeof d);
        if (fake_san_live_bytes() != 0)
            _exit(94);
        if (!s->m.program_arms && d.slots != 0)
            _exit(95);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static char *child_stderr(void)
{
    size_t len;
    return read_all(err_path, &len);
}

static argus_pcmap *load_out(void)
{
    argus_pcmap *m;
    char msg[512] = "";
    int rc = argus_pcmap_load(out_path, &m, msg, sizeof msg);
    if (rc != 0)
        fail_msg("load: %s", msg);
    return m;
}

/* Executions of pc (function name, offset) under region path at iteration
 * iter (-2: any; -1: none in force) in role (NULL: any). */
static uint64_t count_at(const argus_pcmap *m, const char *fn, uint64_t off, const char *path,
                         int64_t iter, const char *role)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < m->n_pcs; i++) {
        const argus_pcmap_pc *p = &m->pcs[i];
        if (p->offset != off || (fn == NULL) != (p->function == NULL) ||
            (fn && strcmp(fn, p->function) != 0) || (iter != -2 && p->iter != iter) ||
            (role && strcmp(role, p->role) != 0))
            continue;
        for (size_t k = 0; k < p->n_exec; k++)
            if (strcmp(m->regions[p->exec[k].region].path, path) == 0)
                sum += p->exec[k].count;
    }
    return sum;
}

static uint64_t count_of(const argus_pcmap *m, const char *fn, uint64_t off, const char *path)
{
    return count_at(m, fn, off, path, -2, NULL);
}

static const char *kind_of(const argus_pcmap *m, const char *fn, uint64_t off)
{
    for (size_t i = 0; i < m->n_pcs; i++)
        if (m->pcs[i].offset == off && m->pcs[i].function && strcmp(m->pcs[i].function, fn) == 0)
            return m->pcs[i].kind;
    return "";
}

/* ---- tests ----------------------------------------------------------------- */

static void test_device_logic(void **state)
{
    (void)state;
    enum { NW = 2, CAP = 8 };
    static unsigned char ring[NW * (64 + 8 * 4)];
    argus_pcmap_warp warps[NW];
    argus_pcmap_entry tab[CAP];
    argus_pcmap_pathent paths[4];
    memset(warps, 0, sizeof warps);
    memset(tab, 0, sizeof tab);
    memset(paths, 0, sizeof paths);
    argus_pcmap_dev d = {ARGUS_PCMAP_MAGIC, ARGUS_PCMAP_DEV_VERSION, (uint64_t)(uintptr_t)ring,
                         (uint64_t)(uintptr_t)ring + sizeof ring, 64 + 8 * 4, NW, 2, CAP, 4, 0,
                         (uint64_t)(uintptr_t)warps, (uint64_t)(uintptr_t)tab,
                         (uint64_t)(uintptr_t)paths, 0, 0, 0, 0, 0, 0};
    uint64_t rec0 = (uint64_t)(uintptr_t)ring + 64;
    /* The slot header's 8-byte anchors are not records. */
    assert_int_equal(argus_pcmap_marker(&d, 0, (uint64_t)(uintptr_t)ring + 16, 8, 1,
                                        ARGUS_REC_MAKE(ARGUS_REC_BEGIN, 5, 0)),
                     0);
    /* A read, or a 4-byte write, into the ring is not a marker either. */
    assert_int_equal(argus_pcmap_marker(&d, 0, rec0, 8, 0, ARGUS_REC_MAKE(1, 5, 0)), 0);
    assert_int_equal(argus_pcmap_marker(&d, 0, rec0, 4, 1, ARGUS_REC_MAKE(1, 5, 0)), 0);
    argus_pcmap_count(&d, 0, 0x10, ARGUS_PCMAP_K_CALL); /* outside every region */
    assert_int_equal(argus_pcmap_marker(&d, 0, rec0, 8, 1, ARGUS_REC_MAKE(ARGUS_REC_BEGIN, 5, 0)), 1);
    assert_int_equal(argus_pcmap_marker(&d, 0, rec0 + 8, 8, 1, ARGUS_REC_MAKE(ARGUS_REC_ITER, 2, 0)), 1);
    assert_int_equal(warps[0].depth, 1u);
    argus_pcmap_count(&d, 0, 0x10, ARGUS_PCMAP_K_CALL);
    argus_pcmap_count(&d, 0, 0x10, ARGUS_PCMAP_K_CALL);
    assert_int_equal(argus_pcmap_marker(&d, 0, rec0, 8, 1, ARGUS_REC_MAKE(ARGUS_REC_END, 5, 0)), 1);
    argus_pcmap_count(&d, 0, 0x10, ARGUS_PCMAP_K_CALL);
    uint64_t p5 = argus_pcmap_child(0, 5);
    /* Iteration 2 is in force (iter1 = 3) from its record on, inside the
     * region and after it. */
    uint64_t under5 = 0, before = 0, after = 0;
    for (int i = 0; i < CAP; i++) {
        if (tab[i].key == argus_pcmap_key(0x10, p5, 3, 0))
            under5 = tab[i].count;
        if (tab[i].key == argus_pcmap_key(0x10, 0, 0, 0))
            before = tab[i].count;
        if (tab[i].key == argus_pcmap_key(0x10, 0, 3, 0))
            after = tab[i].count;
    }
    assert_int_equal(under5, 2);
    assert_int_equal(before, 1);
    assert_int_equal(after, 1);
    int found = 0;
    for (int i = 0; i < 4; i++)
        found |= paths[i].key == p5 && paths[i].parent == 0 && paths[i].id == 5 && paths[i].depth == 1;
    assert_true(found);
    /* An END with nothing open, an END of the wrong ID, a warp past the grid. */
    assert_int_equal(argus_pcmap_marker(&d, 1, rec0 + 96, 8, 1, ARGUS_REC_MAKE(ARGUS_REC_END, 5, 0)), 1);
    assert_int_equal(argus_pcmap_marker(&d, 1, rec0 + 96, 8, 1, ARGUS_REC_MAKE(ARGUS_REC_BEGIN, 6, 0)), 1);
    assert_int_equal(argus_pcmap_marker(&d, 1, rec0 + 96, 8, 1, ARGUS_REC_MAKE(ARGUS_REC_END, 7, 0)), 1);
    assert_int_equal(d.bad_end, 2u);
    argus_pcmap_count(&d, 9, 0x10, ARGUS_PCMAP_K_CALL);
    assert_int_equal(d.bad_warp, 1u);
    /* A full table counts what it drops; the path table likewise. */
    for (uint64_t pc = 0x100; pc < 0x100 + 0x10 * 2 * CAP; pc += 0x10)
        argus_pcmap_count(&d, 0, pc, ARGUS_PCMAP_K_RET);
    assert_int_equal(d.dropped, 11u); /* 8 slots, 3 taken before: 5 of 16 new PCs fit */
    for (uint32_t id = 20; id < 26; id++) {
        assert_int_equal(argus_pcmap_marker(&d, 0, rec0, 8, 1, ARGUS_REC_MAKE(ARGUS_REC_BEGIN, id, 0)), 1);
        assert_int_equal(argus_pcmap_marker(&d, 0, rec0, 8, 1, ARGUS_REC_MAKE(ARGUS_REC_END, id, 0)), 1);
    }
    assert_int_equal(d.paths_dropped, 4u); /* 4 entries: 5, 6 and then 20, 21 fit */
    /* Deeper than ARGUS_PCMAP_DEPTH: counted, the path stays. */
    for (uint32_t k = 0; k < ARGUS_PCMAP_DEPTH + 2; k++)
        argus_pcmap_marker(&d, 0, rec0, 8, 1, ARGUS_REC_MAKE(ARGUS_REC_BEGIN, 30, 0));
    assert_int_equal(d.depth_overflow, 2u);
    assert_int_equal(warps[0].depth, ARGUS_PCMAP_DEPTH + 2);
    assert_int_equal(d.markers, 3u + 3u + 12u + ARGUS_PCMAP_DEPTH + 2u);
}

static void check_calls_map(const argus_pcmap *m, int launches, uint64_t extra_markers)
{
    uint64_t warps = G16_CTAS * (G16_CALL_THREADS / 32);
    uint64_t a = (uint64_t)launches * G16_CALL_A * G16_CALL_ITERS * warps; /* 3072 */
    uint64_t b = (uint64_t)launches * G16_CALL_B * G16_CALL_ITERS * warps; /* 1024 */
    assert_int_equal(a, 3072u * (uint64_t)launches);
    assert_int_equal(count_of(m, work_name, 0x40, "callA/work"), a);
    assert_int_equal(count_of(m, work_name, 0x40, "callB/work"), b);
    assert_int_equal(count_of(m, work_name, 0x40, "callA"), 0);
    assert_int_equal(count_of(m, work_name, 0x80, "callA"), a);
    assert_int_equal(count_of(m, work_name, 0x80, "callB"), b);
    assert_int_equal(count_of(m, kernel_name, 0x100, "callA"), a);
    assert_int_equal(count_of(m, kernel_name, 0x200, "callB"), b);
    assert_int_equal(count_of(m, kernel_name, 0x300, ""), warps * (uint64_t)launches);
    assert_int_equal(count_of(m, kernel_name, 0x310, ""), warps * (uint64_t)launches);
    assert_string_equal(kind_of(m, work_name, 0x40), "syncwarp");
    assert_string_equal(kind_of(m, work_name, 0x80), "ret");
    assert_string_equal(kind_of(m, kernel_name, 0x300), "global_memory");
    assert_string_equal(kind_of(m, kernel_name, 0x310), "exit");
    assert_int_equal(m->n_launches, (size_t)launches);
    /* Each warp: 8 x (2 + 6 + 2 + 2) markers. */
    assert_int_equal(m->launches[0].markers, warps * G16_CALL_ITERS * 12 + extra_markers);
}

static void test_tool_calls(void **state)
{
    (void)state;
    scenario s = {0};
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    if (!m->complete)
        fail_msg("incomplete: %s", m->n_problems ? m->problems[0] : "?");
    check_calls_map(m, 1, 0);
    assert_int_equal(m->n_pcs, 6u);
    assert_int_equal(count_at(m, work_name, 0x40, "callA/work", -1, ""), 3072u); /* no iter, role */
    assert_true(m->launches[0].armed_by_tool);
    assert_int_equal(m->n_modules, 1u);
    /* The module is named by its cubin's content. */
    size_t len;
    void *img = read_all(CUBIN, &len);
    char hex[65];
    argus_sha256_hex(img, len, hex);
    free(img);
    assert_string_equal(m->modules[0], hex);
    /* Regions carry their IDs. */
    for (size_t i = 0; i < m->n_regions; i++)
        if (strcmp(m->regions[i].path, "callB/work") == 0) {
            assert_int_equal(m->regions[i].depth, 2u);
            assert_int_equal(m->regions[i].ids[0], id_b);
            assert_int_equal(m->regions[i].ids[1], id_w);
        }
    char *err = child_stderr();
    assert_string_equal(err, ""); /* silent when all went well */
    free(err);
    argus_pcmap_free(m);
}

/* The H200 case: the Sanitizer places the kernel and not the callee's copy
 * in its section; work()'s PCs still go to work(), at offsets from its own
 * start (before the fix every one of them was named as the kernel). */
static void test_tool_callee_unplaced(void **state)
{
    (void)state;
    scenario s = {.callee_unplaced = 1};
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    if (!m->complete)
        fail_msg("incomplete: %s", m->n_problems ? m->problems[0] : "?");
    check_calls_map(m, 1, 0);
    assert_int_equal(m->n_pcs, 6u);
    argus_pcmap_free(m);
}

static void test_tool_program_armed(void **state)
{
    (void)state;
    scenario s = {0};
    s.m.program_arms = 1;
    s.launches = 2;
    s.reload = 1; /* the third launch is of a module that replaced it: not mapped */
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    assert_true(m->complete);
    check_calls_map(m, 2, 0); /* the ring of 4 records wraps; the counts do not care */
    assert_false(m->launches[0].armed_by_tool);
    argus_pcmap_free(m);
}

/* Iterations and roles in force are kept per PC: work's PC at iteration i
 * 3 x 128 times under callA/work, the producer warps (one per CTA, 32) 3 x 8
 * x 32 = 768 times; attribution of iterations 2..3 only. */
static void test_tool_iters_roles(void **state)
{
    (void)state;
    scenario s = {0};
    s.m.iters_roles = 1;
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    assert_true(m->complete);
    check_calls_map(m, 1, 128 * 9); /* a ROLE and 8 ITERs per warp */
    for (int64_t i = 0; i < G16_CALL_ITERS; i++) {
        assert_int_equal(count_at(m, work_name, 0x40, "callA/work", i, NULL), 3u * 128u);
        assert_int_equal(count_at(m, work_name, 0x40, "callB/work", i, NULL), 128u);
    }
    assert_int_equal(count_at(m, work_name, 0x40, "callA/work", -2, "producer"), 768u);
    assert_int_equal(count_at(m, work_name, 0x40, "callA/work", -2, "consumer"), 2304u);
    assert_int_equal(count_at(m, work_name, 0x40, "callA/work", -1, NULL), 0u);
    /* Before the first ITER the out[] store does not run: it runs after the
     * loop, still at iteration 7. */
    assert_int_equal(count_at(m, kernel_name, 0x300, "", 7, NULL), 128u);
    argus_attrib *a;
    char msg[512];
    assert_int_equal(argus_attrib_new(&a), 0);
    argus_pcmap_select sel = {1, 2, 3, "consumer"};
    assert_int_equal(argus_pcmap_to_attrib(m, argus_cubin_func_base_name(work_name), &sel, a, msg,
                                           sizeof msg),
                     0);
    assert_int_equal(argus_attrib_add_metric(a, 0x40, "samples", 1000, msg, sizeof msg), 0);
    argus_attrib_result *r;
    assert_int_equal(argus_attrib_compute(a, &r, msg, sizeof msg), 0);
    long p = argus_attrib_find_pc(r, 0x40);
    assert_true(p >= 0);
    assert_int_equal(r->pcs[p].executions, 2u * 4u * 96u); /* 2 iterations, 96 consumer warps */
    long ga = argus_attrib_find_region(r, "callA/work"), mi = argus_attrib_find_metric(r, "samples");
    assert_near(r->regions[ga].self[mi].value, 750.0, 1e-9);
    argus_attrib_result_free(r);
    argus_attrib_free(a);
    argus_pcmap_free(m);
}

static void test_tool_unbalanced(void **state)
{
    (void)state;
    scenario s = {0};
    s.m.extra_end = 1;
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    assert_false(m->complete);
    assert_int_equal(m->launches[0].bad_end, 1u);
    assert_non_null(strstr(m->problems[0], "1 region ends that closed no open region"));
    check_calls_map(m, 1, 1); /* what was counted is still exact */
    argus_pcmap_free(m);
}

static void test_tool_uninstrumented(void **state)
{
    (void)state;
    scenario s = {0};
    s.cubin = PCS_CUBIN; /* no argus_desc_v1: left alone */
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    assert_false(m->complete);
    assert_int_equal(m->n_pcs, 0u);
    assert_int_equal(m->n_launches, 0u);
    assert_non_null(strstr(m->problems[0], "no launch of an instrumented kernel"));
    argus_pcmap_free(m);
}

/* A failure: the map is written, marked incomplete with the reason, and the
 * same sentence is on stderr. */
static void expect_problem(const scenario *s, const char *what)
{
    assert_int_equal(run(s), 0);
    argus_pcmap *m = load_out();
    assert_false(m->complete);
    assert_true(m->n_problems >= 1);
    if (strstr(m->problems[0], what) == NULL)
        fail_msg("problem \"%s\" does not say \"%s\"", m->problems[0], what);
    assert_int_equal(m->n_pcs, 0u);
    char *err = child_stderr();
    if (strstr(err, what) == NULL)
        fail_msg("stderr \"%s\" does not say \"%s\"", err, what);
    free(err);
    argus_pcmap_free(m);
}

static void test_tool_errors(void **state)
{
    (void)state;
    scenario s = {0};
    s.san_lib = "/nonexistent/libsanitizer-public.so";
    expect_problem(&s, "ARGUS_SANITIZER_LIB=/nonexistent/libsanitizer-public.so: no such file");
    s.san_lib = PCMAP_TOOL; /* a library, but not the Sanitizer's */
    expect_problem(&s, "has no sanitizerSubscribe: it is not the CUDA 13 Sanitizer API");
    s.san_lib = NULL;
    s.faults = FAKE_SAN_BUSY;
    expect_problem(&s, "another tool is attached");
    s.faults = FAKE_SAN_WRONG_ARCH;
    expect_problem(&s, "unsupported GPU: the patch");
    /* Not asked: no file, nothing said. */
    s.faults = 0;
    s.no_out = 1;
    assert_int_equal(run(&s), 0);
    assert_int_equal(access(out_path, F_OK), -1);
    char *err = child_stderr();
    assert_string_equal(err, "");
    free(err);
}

/* The trace (ARGUS_PCMAP_LOG): one line per step, in the order the tool
 * takes them, in the documented format; nothing on stderr; no file when it
 * is not asked for. */
static void test_tool_trace(void **state)
{
    (void)state;
    char log[600];
    snprintf(log, sizeof log, "%s/trace.log", dir);
    unlink(log);
    scenario s = {0};
    assert_int_equal(run(&s), 0); /* not asked: no file */
    assert_int_equal(access(log, F_OK), -1);
    s.log = log;
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    assert_true(m->complete);
    check_calls_map(m, 1, 0);
    argus_pcmap_free(m);
    char *err = child_stderr();
    assert_string_equal(err, "");
    free(err);
    size_t len;
    char *t = read_all(log, &len);
    /* The steps of one launch, in order (each the start of a line's step). */
    static const char *const order[] = {
        " init: pid ",
        " subscribe: sanitizerSubscribe\n",
        " subscribe: subscribed\n",
        " module: module 0x100 loaded",
        " patch: sanitizerAddPatchesFromFile(",
        " patch: sanitizerPatchModule(0x100)",
        " launch: LAUNCH_BEGIN ",
        " launch: cuModuleGetGlobal(argus_desc_v1)",
        " launch: sanitizerMemcpyDeviceToHost(descriptor",
        " launch: arming: ",
        " launch: tables handed to the launch (0)",
        " launch: LAUNCH_END ",
        " sync: context synchronised",
        " collect: kernel ",
        " collect: done\n",
        " flush: writing the map",
        " write: done\n",
    };
    const char *at = t;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const char *p = strstr(at, order[i]);
        if (p == NULL)
            fail_msg("trace step %zu \"%s\" missing or out of order in:\n%s", i, order[i], t);
        at = p + 1;
    }
    /* Every line: "argus-pcmap +S.mmm tid N step: what". */
    int lines = 0;
    for (char *line = strtok(t, "\n"); line != NULL; line = strtok(NULL, "\n"), lines++) {
        double sec;
        long tid;
        char step[32];
        int used = 0;
        if (sscanf(line, "argus-pcmap +%lf tid %ld %31[a-z]:%n", &sec, &tid, step, &used) != 3 ||
            used == 0 || sec < 0 || tid <= 0)
            fail_msg("trace line not in the format: %s", line);
    }
    assert_true(lines >= (int)(sizeof order / sizeof order[0]));
    free(t);
}

/* A program that never synchronises: the flush reads the launch back. */
static void test_tool_no_sync(void **state)
{
    (void)state;
    scenario s = {0};
    s.no_sync = 1;
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    assert_true(m->complete);
    check_calls_map(m, 1, 0);
    argus_pcmap_free(m);
}

/* A callback fired on the tool's own thread from inside one of its calls
 * (the patches' module load inside sanitizerAddPatchesFromFile, a
 * synchronisation inside a device-to-host copy) is skipped, not waited for
 * (a non-recursive lock held by the same thread would hang the program:
 * the child's alarm would kill it), and the map says so. */
static void test_tool_reenter(void **state)
{
    (void)state;
    char log[600];
    snprintf(log, sizeof log, "%s/trace_re.log", dir);
    unlink(log);
    scenario s = {0};
    s.faults = FAKE_SAN_REENTER;
    s.log = log;
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    assert_false(m->complete);
    check_calls_map(m, 1, 0); /* what was counted is exact */
    int said = 0;
    for (size_t i = 0; i < m->n_problems; i++)
        said |= strstr(m->problems[i], "came in inside another on the same thread") != NULL;
    assert_true(said);
    argus_pcmap_free(m);
    size_t len;
    char *t = read_all(log, &len);
    assert_non_null(strstr(t, " reenter: callback 3/9 came in inside step patch"));
    assert_non_null(strstr(t, " reenter: callback 4/2 came in inside step launch"));
    free(t);
}

/* A callback stuck on one thread (its device-to-host copy never returns)
 * holds the tool's lock: a launch on another thread waits
 * ARGUS_PCMAP_LOCK_WAIT (1 s) and goes on unmapped, and the flush gives up
 * the same way, said on stderr, instead of hanging the program. */
static void *stuck_launch(void *arg)
{
    (void)arg;
    uint32_t grid[3] = {G16_CTAS, 1, 1}, block[3] = {G16_CALL_THREADS, 1, 1};
    model m = {0};
    fake_san_launch(0x100, kernel_name, grid, block, calls_kernel, &m);
    return NULL;
}

static void test_tool_lock_bounded(void **state)
{
    (void)state;
    char log[600];
    snprintf(log, sizeof log, "%s/trace_lock.log", dir);
    unlink(log);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(30);
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(91);
        snprintf(out_path, sizeof out_path, "%s/map_lock.json", dir);
        setenv("ARGUS_PCMAP_OUT", out_path, 1);
        setenv("ARGUS_PCMAP_LOG", log, 1);
        setenv("ARGUS_PCMAP_LOCK_WAIT", "1", 1);
        setenv("ARGUS_SANITIZER_LIB", FAKE_SAN_LIB, 1);
        setenv("ARGUS_PCMAP_CUDA_LIB", FAKE_SAN_LIB, 1);
        setenv("ARGUS_PCMAP_PATCH", CUBIN, 1);
        fake_san_function(kernel_name, KBASE, 0x1000);
        fake_san_function(work_name, WBASE, 0x200);
        void *h = dlopen(PCMAP_TOOL, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL)
            _exit(92);
        size_t len;
        void *img = read_all(CUBIN, &len);
        fake_san_module_load(0x100, img, len);
        setenv("FAKE_SAN_HANG", "sanitizerMemcpyDeviceToHost", 1);
        pthread_t t;
        if (pthread_create(&t, NULL, stuck_launch, NULL) != 0)
            _exit(93);
        usleep(200 * 1000);
        unsetenv("FAKE_SAN_HANG");
        stuck_launch(NULL); /* waits 1 s for the lock, then goes on */
        int (*flush)(void) = (int (*)(void))dlsym(h, "argus_pcmap_tool_flush");
        if (flush == NULL || flush() != -1)
            _exit(94);
        _exit(0); /* the stuck thread goes with the process */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    char *err = child_stderr();
    assert_non_null(strstr(err, "the tool's lock was held for 1 s by a callback stuck in step launch"));
    free(err);
    size_t len;
    char *t = read_all(log, &len);
    assert_non_null(strstr(t, " lock: callback 5/1 waited 1 s for the lock held by tid "));
    assert_non_null(strstr(t, " in step launch"));
    assert_non_null(strstr(t, " lock: the flush waited 1 s"));
    free(t);
}

static void test_find_sanitizer(void **state)
{
    (void)state;
    char path[512], msg[1024];
    unsetenv("ARGUS_SANITIZER_LIB");
    int rc = argus_pcmap_find_sanitizer(path, sizeof path, msg, sizeof msg);
    if (rc == 0)
        skip(); /* this machine has compute-sanitizer */
    assert_int_equal(rc, ARGUS_EIO);
    assert_non_null(strstr(msg, "the CUDA Sanitizer API is missing"));
    assert_non_null(strstr(msg, "set ARGUS_SANITIZER_LIB"));
    setenv("ARGUS_SANITIZER_LIB", FAKE_SAN_LIB, 1);
    assert_int_equal(argus_pcmap_find_sanitizer(path, sizeof path, msg, sizeof msg), 0);
    assert_string_equal(path, FAKE_SAN_LIB);
    unsetenv("ARGUS_SANITIZER_LIB");
}

static void test_attrib_through_map(void **state)
{
    (void)state;
    scenario s = {0};
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    argus_attrib *a;
    char msg[512] = "";
    assert_int_equal(argus_attrib_new(&a), 0);
    /* The map has two functions: one must be named. */
    assert_int_equal(argus_pcmap_to_attrib(m, NULL, NULL, a, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "more than one function"));
    assert_int_equal(argus_pcmap_to_attrib(m, "nosuch", NULL, a, msg, sizeof msg), ARGUS_ENOREGION);
    assert_non_null(strstr(msg, "no PC of function \"nosuch\""));
    argus_attrib_free(a);
    assert_int_equal(argus_attrib_new(&a), 0);
    /* By the full symbol or by the callee's own name. */
    const char *base = argus_cubin_func_base_name(work_name);
    assert_int_equal(argus_pcmap_to_attrib(m, base, NULL, a, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_metric(a, 0x40, "samples", 2000, msg, sizeof msg), 0);
    assert_int_equal(argus_attrib_add_metric(a, 0x80, "samples", 400, msg, sizeof msg), 0);
    argus_attrib_result *r;
    assert_int_equal(argus_attrib_compute(a, &r, msg, sizeof msg), 0);
    long ga = argus_attrib_find_region(r, "callA/work"), gb = argus_attrib_find_region(r, "callB/work");
    long ca = argus_attrib_find_region(r, "callA"), mi = argus_attrib_find_metric(r, "samples");
    assert_true(ga >= 0 && gb >= 0 && ca >= 0 && mi >= 0);
    assert_near(r->regions[ga].self[mi].value, 1500.0, 1e-9);
    assert_near(r->regions[gb].self[mi].value, 500.0, 1e-9);
    assert_near(r->regions[ca].self[mi].value, 300.0, 1e-9); /* the return's 400 at 3:1 */
    assert_near(r->regions[ca].inclusive[mi].value, 1800.0, 1e-9);
    long p = argus_attrib_find_pc(r, 0x40);
    assert_true(p >= 0);
    assert_near(r->pcs[p].entropy_bits, H_3_1, 1e-12);
    assert_int_equal(r->pcs[p].executions, 4096u);
    assert_non_null(strstr(r->program, "cubin:sha256:"));
    argus_attrib_result_free(r);
    argus_attrib_free(a);
    argus_pcmap_free(m);
}

/* The writer's output reads back the same; bad files are refused with the
 * field. */
static void test_file_roundtrip_and_bad(void **state)
{
    (void)state;
    scenario s = {0};
    assert_int_equal(run(&s), 0);
    argus_pcmap *m = load_out();
    char again[600], msg[512];
    snprintf(again, sizeof again, "%s/again.json", dir);
    assert_int_equal(argus_pcmap_write(m, again, msg, sizeof msg), 0);
    size_t l1, l2;
    char *t1 = read_all(out_path, &l1), *t2 = read_all(again, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(t1, t2, l1);
    argus_pcmap_free(m);

    struct {
        const char *from, *to, *want;
    } bad[] = {
        {"\"argus.pcmap\"", "\"argus.pcmaps\"", "schema: must be \"argus.pcmap\""},
        {"\"version\":1", "\"version\":2", "version: must be 1"},
        {"\"launches\"", "\"lunches\"", ".lunches: unknown key"},
        {"\"complete\":true,\"problems\":[]", "\"complete\":true,\"problems\":[\"x\"]",
         "complete: is true but problems are listed"},
        {"\"exec\":[[", "\"exec\":[[99,1],[", "exec entries must be [index into regions"},
        {"\"offset\":\"0x40\"", "\"offset\":\"40\"", "offset: must be a hex string"},
        {"\"ids\":[]", "\"ids\":[\"0x1\"]", "the first region must be the root"},
        {"\"armed_by\":\"argus-pcmap\"", "\"armed_by\":\"me\"", "armed_by must be"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *p = strstr(t1, bad[i].from);
        if (p == NULL)
            fail_msg("case %zu: \"%s\" not in the file", i, bad[i].from);
        char path[600];
        snprintf(path, sizeof path, "%s/bad%zu.json", dir, i);
        FILE *f = fopen(path, "w");
        fprintf(f, "%.*s%s%s", (int)(p - t1), t1, bad[i].to, p + strlen(bad[i].from));
        fclose(f);
        argus_pcmap *b = NULL;
        msg[0] = '\0';
        assert_int_equal(argus_pcmap_load(path, &b, msg, sizeof msg), ARGUS_EINVAL);
        assert_null(b);
        if (strstr(msg, bad[i].want) == NULL || strstr(msg, path) == NULL)
            fail_msg("case %zu: message \"%s\" does not say \"%s\" with the file", i, msg,
                     bad[i].want);
    }
    /* A PC listed twice. */
    char *p = strstr(t1, "\"pcs\":[");
    assert_non_null(p);
    char *first = p + 7, *end = strstr(first, "]]}");
    assert_non_null(end);
    end += 3;
    char path[600];
    snprintf(path, sizeof path, "%s/dup.json", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "%.*s,%.*s%s", (int)(end - t1), t1, (int)(end - first), first, end);
    fclose(f);
    argus_pcmap *b = NULL;
    assert_int_equal(argus_pcmap_load(path, &b, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "lists a PC twice"));
    free(t1);
    free(t2);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/argus_pcmap_test.XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    find_names();
    id_a = argus_region_id("callA", 0);
    id_b = argus_region_id("callB", 0);
    id_w = argus_region_id("work", 0); /* a device function's regions: parent is the root */
    id_prod = argus_region_id("producer", 0);
    id_cons = argus_region_id("consumer", 0);
    snprintf(reg_path, sizeof reg_path, "%s/reg.json", dir);
    FILE *f = fopen(reg_path, "w");
    fprintf(f,
            "{\"schema\":\"argus.registry\",\"version\":1,\"regions\":["
            "{\"name\":\"callA\",\"id\":\"0x%07x\",\"parent\":\"0x0000000\",\"role\":false},"
            "{\"name\":\"callB\",\"id\":\"0x%07x\",\"parent\":\"0x0000000\",\"role\":false},"
            "{\"name\":\"work\",\"id\":\"0x%07x\",\"parent\":\"0x0000000\",\"role\":false},"
            "{\"name\":\"producer\",\"id\":\"0x%07x\",\"parent\":\"0x0000000\",\"role\":true},"
            "{\"name\":\"consumer\",\"id\":\"0x%07x\",\"parent\":\"0x0000000\",\"role\":true}]}\n",
            id_a, id_b, id_w, id_prod, id_cons);
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* `test_argus_pcmap --map OUT [wrong]` writes the tool's map of the model
 * launch (wrong: callB calls work() twice) to OUT, for
 * scripts/gpu/argus16_pcmap.sh --dry-run, whose checker must pass the
 * first and fail the second. */
static int write_map(const char *to, int wrong)
{
    if (setup(NULL) != 0)
        return 2;
    scenario s = {0};
    s.m.calls_b = wrong ? 2 : 0;
    int rc = run(&s);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", out_path, to);
    if (rc == 0 && system(cmd) != 0)
        rc = 1;
    teardown(NULL);
    return rc;
}

/* `test_argus_pcmap --prog trivial|regions LAUNCHES`: this binary as the
 * CUDA program of scripts/gpu/argus16_pcmap.sh --dry-run, with the tool
 * loaded as it is on the GPU (LD_PRELOAD, or CUDA_INJECTION64_PATH, whose
 * InitializeInjection this "cuInit" calls) and the fake as the Sanitizer
 * (ARGUS_SANITIZER_LIB and ARGUS_PCMAP_CUDA_LIB name it). trivial: one
 * module without regions, one empty kernel; regions: the known-ratio model.
 * Each launch is followed by a synchronisation, as cudaDeviceSynchronize.
 * FAKE_SAN_HANG makes one of the fake's calls block (a simulated hang). */
static void empty_kernel(void *ud, const void *desc, void *arg)
{
    (void)ud, (void)desc, (void)arg;
}

static int fake_prog(const char *variant, int launches)
{
    int regions = strcmp(variant, "regions") == 0;
    if (!regions && strcmp(variant, "trivial") != 0) {
        fprintf(stderr, "test_argus_pcmap --prog: variant %s: use trivial or regions\n", variant);
        return 2;
    }
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    if (inj != NULL && inj[0] != '\0') {
        void *h = dlopen(inj, RTLD_NOW | RTLD_LOCAL);
        int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
        if (init == NULL) {
            fprintf(stderr, "test_argus_pcmap --prog: %s: no InitializeInjection\n", inj);
            return 2;
        }
        init();
    }
    find_names();
    id_a = argus_region_id("callA", 0);
    id_b = argus_region_id("callB", 0);
    id_w = argus_region_id("work", 0);
    fake_san_function(kernel_name, KBASE, 0x1000);
    fake_san_function(work_name, WBASE, 0x200);
    size_t len;
    void *img = read_all(regions ? CUBIN : PCS_CUBIN, &len);
    fake_san_module_load(0x100, img, len);
    uint32_t grid[3] = {G16_CTAS, 1, 1}, block[3] = {G16_CALL_THREADS, 1, 1};
    model m = {0};
    for (int i = 0; i < launches; i++) {
        fake_san_launch(0x100, kernel_name, grid, block, regions ? calls_kernel : empty_kernel, &m);
        fake_san_sync();
    }
    free(img);
    printf("pcmap_prog (fake): %d launches of the %s kernel done\n", launches, variant);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--prog") == 0)
        return fake_prog(argv[2], atoi(argv[3]));
    if (argc >= 3 && strcmp(argv[1], "--map") == 0)
        return write_map(argv[2], argc > 3 && strcmp(argv[3], "wrong") == 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_logic),
        cmocka_unit_test(test_tool_calls),
        cmocka_unit_test(test_tool_callee_unplaced),
        cmocka_unit_test(test_tool_program_armed),
        cmocka_unit_test(test_tool_iters_roles),
        cmocka_unit_test(test_tool_unbalanced),
        cmocka_unit_test(test_tool_uninstrumented),
        cmocka_unit_test(test_tool_errors),
        cmocka_unit_test(test_tool_trace),
        cmocka_unit_test(test_tool_no_sync),
        cmocka_unit_test(test_tool_reenter),
        cmocka_unit_test(test_tool_lock_bounded),
        cmocka_unit_test(test_find_sanitizer),
        cmocka_unit_test(test_attrib_through_map),
        cmocka_unit_test(test_file_roundtrip_and_bad),
    };
    return cmocka_run_group_tests(tests, setup, getenv("PCMAP_KEEP") ? NULL : teardown);
}
