/*
 * argus-shim's arming of instrumented kernels (profiler/argus/shim_arm.c)
 * against a driver whose device memory, streams and events are host
 * memory, with a model of the kernel (devmodel.h) writing through the
 * descriptor it finds armed: what is enqueued in the launch's stream and
 * when, that nothing is read back before the read-back event completes,
 * that the recording's lines join the device regions under the kernel and
 * its NVTX range with exact times, and every way a launch is left out
 * (another stream, a failed launch, the launch limit, not instrumented).
 * The CUPTI side is driven with CUpti_CallbackData as CUPTI fills it.
 * Every number below is worked out from the model's clocks, not read back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cupti.h>

#include "argus/shim.h"
#include "devmodel.h"
#include "shim_arm.h"

#define MOD_A ((void *)0xA000) /* instrumented */
#define MOD_B ((void *)0xB000) /* a library module without markers */
#define FUNC_A ((void *)0xA001)
#define FUNC_A2 ((void *)0xA002)
#define FUNC_B ((void *)0xB001)

typedef struct fake_event {
    int recorded;
    void *stream;
} fake_event;

typedef struct fake {
    argus_device_desc desc; /* module A's __constant__ argus_desc_v1 */
    char registry[512];     /* module A's argus_registry_v1 */
    int gpu_done;           /* recorded events have completed */
    int globals_asked, allocs, host_allocs;
    int memsets, htods, dtohs;
    void *last_stream;      /* the stream of the last stream-ordered copy */
    int fail_memset;
    fake_event events[64];
    int nevents;
} fake;

static fake F;

/* What the fake allocated for arming (device buffers, pinned memory):
 * arming keeps them for the process's life, as the real recorder does, so
 * the test frees them after argus__arm_shutdown. */
static void *g_allocs[256];
static int g_nallocs;
static void *track(void *p)
{
    assert_true(g_nallocs < 256);
    return g_allocs[g_nallocs++] = p;
}
static void free_tracked(void)
{
    while (g_nallocs > 0)
        free(g_allocs[--g_nallocs]);
}

static int f_alloc(void *c, uint64_t *d, size_t b)
{
    (void)c;
    void *p = malloc(b);
    if (p == NULL)
        return 2;
    memset(p, 0xA5, b); /* device memory is not zeroed */
    track(p);
    F.allocs++;
    *d = (uint64_t)(uintptr_t)p;
    return 0;
}
static int f_free(void *c, uint64_t d)
{
    (void)c;
    for (int i = 0; i < g_nallocs; i++)
        if (g_allocs[i] == (void *)(uintptr_t)d) {
            g_allocs[i] = g_allocs[--g_nallocs];
            free((void *)(uintptr_t)d);
            return 0;
        }
    return 1; /* CUDA_ERROR_INVALID_VALUE: not ours */
}
static int f_memset0(void *c, uint64_t d, size_t b)
{
    (void)c;
    memset((void *)(uintptr_t)d, 0, b);
    return 0;
}
static int f_htod(void *c, uint64_t d, const void *s, size_t b)
{
    (void)c;
    memcpy((void *)(uintptr_t)d, s, b);
    return 0;
}
static int f_dtoh(void *c, void *d, uint64_t s, size_t b)
{
    (void)c;
    memcpy(d, (const void *)(uintptr_t)s, b);
    return 0;
}
static int f_global(void *c, void *m, const char *name, uint64_t *d, size_t *b)
{
    (void)c;
    F.globals_asked++;
    if (m != MOD_A)
        return 500; /* CUDA_ERROR_NOT_FOUND */
    if (strcmp(name, ARGUS_DESC_SYMBOL) == 0) {
        *d = (uint64_t)(uintptr_t)&F.desc;
        *b = sizeof(F.desc);
        return 0;
    }
    if (strcmp(name, ARGUS_REGISTRY_SYMBOL) == 0) {
        *d = (uint64_t)(uintptr_t)F.registry;
        *b = strlen(F.registry) + 1; /* the array holds its NUL */
        return 0;
    }
    return 500;
}

static int o_funcmod(void *c, void *f, void **m)
{
    (void)c;
    uintptr_t u = (uintptr_t)f;
    *m = f == FUNC_A || f == FUNC_A2 ? MOD_A
         : f == FUNC_B || (u >= 0xC0000 && u < 0xD0000) ? MOD_B
                                                         : NULL;
    return *m ? 0 : 400; /* CUDA_ERROR_INVALID_HANDLE */
}
/* A CUkernel handle (0xA0F0) the driver resolves to FUNC_A's function. */
static int o_kfunc(void *c, void *k, void **f)
{
    (void)c;
    *f = k == (void *)0xA0F0 ? FUNC_A : NULL;
    return *f ? 0 : 400;
}
/* The stream-ordered copies run at once: the fake's device is idle, so
 * "in stream order" is "now", which is what the model kernel sees next. */
static int o_memset(void *c, uint64_t d, size_t b, void *s)
{
    (void)c;
    if (F.fail_memset)
        return 1;
    F.memsets++;
    F.last_stream = s;
    memset((void *)(uintptr_t)d, 0, b);
    return 0;
}
static int o_htod(void *c, uint64_t d, const void *src, size_t b, void *s)
{
    (void)c;
    F.htods++;
    F.last_stream = s;
    memcpy((void *)(uintptr_t)d, src, b);
    return 0;
}
static int o_dtoh(void *c, void *d, uint64_t src, size_t b, void *s)
{
    (void)c;
    (void)s;
    F.dtohs++;
    memcpy(d, (const void *)(uintptr_t)src, b);
    return 0;
}
static int o_hostalloc(void *c, void **p, size_t b)
{
    (void)c;
    F.host_allocs++;
    *p = calloc(1, b);
    if (*p)
        track(*p);
    return *p ? 0 : 2;
}
static int o_evcreate(void *c, void **e)
{
    (void)c;
    assert_true(F.nevents < 64);
    *e = &F.events[F.nevents++];
    return 0;
}
static int o_evrec(void *c, void *e, void *s)
{
    (void)c;
    ((fake_event *)e)->recorded = 1;
    ((fake_event *)e)->stream = s;
    return 0;
}
static int o_evquery(void *c, void *e)
{
    (void)c;
    return ((fake_event *)e)->recorded && F.gpu_done ? 0 : 600; /* CUDA_ERROR_NOT_READY */
}
static int o_evsync(void *c, void *e)
{
    (void)c;
    return ((fake_event *)e)->recorded ? 0 : 400;
}
static int o_screate(void *c, void **s)
{
    (void)c;
    *s = (void *)0x5EC0; /* the private stream */
    return 0;
}
static int o_capturing(void *c, void *s, int *cap)
{
    (void)c;
    *cap = s == (void *)0xCA; /* the stream a graph is being captured on */
    return s == (void *)0xBAD ? 900 : 0; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
}
static int o_swait(void *c, void *s, void *e)
{
    (void)c;
    (void)s;
    assert_true(((fake_event *)e)->recorded);
    return 0;
}

/* The recording's lines, as the recorder would write them. */
static char g_lines[1 << 20];
static size_t g_len;

static void emit(void *ud, const char *line)
{
    (void)ud;
    size_t n = strlen(line);
    assert_true(g_len + n + 2 < sizeof(g_lines));
    memcpy(g_lines + g_len, line, n);
    g_len += n;
    g_lines[g_len++] = '\n';
    g_lines[g_len] = '\0';
}

/* ARGUS_SHIM_ARM_RAW's folder for the next setup_arm (NULL: none). */
static const char *g_raw_dir;

static void setup_arm(uint32_t cap, uint32_t max_launches)
{
    free_tracked();
    memset(&F, 0, sizeof(F));
    g_len = 0;
    g_lines[0] = '\0';
    uint32_t outer = argus_region_id("outer", 0), load = argus_region_id("load", outer);
    snprintf(F.registry, sizeof(F.registry),
             "{\"schema\":\"argus.registry\",\"version\":1,\"regions\":["
             "{\"name\":\"outer\",\"id\":\"0x%07x\",\"parent\":\"0x0000000\",\"role\":false},"
             "{\"name\":\"load\",\"id\":\"0x%07x\",\"parent\":\"0x%07x\",\"role\":false}]}",
             outer, load, outer);
    argus_driver drv = {NULL, f_alloc, f_free, f_memset0, f_htod, f_dtoh, f_global};
    argus__arm_ops ops = {.func_module = o_funcmod,
                          .kernel_function = o_kfunc,
                          .memset0_async = o_memset,
                          .htod_async = o_htod,
                          .dtoh_async = o_dtoh,
                          .host_alloc = o_hostalloc,
                          .event_create = o_evcreate,
                          .event_record = o_evrec,
                          .event_query = o_evquery,
                          .event_sync = o_evsync,
                          .stream_create = o_screate,
                          .stream_wait_event = o_swait,
                          .stream_capturing = o_capturing};
    argus__arm_config cfg = {.cap = cap, .max_launches = max_launches, .max_bytes = 1 << 20,
                             .raw_dir = g_raw_dir};
    assert_int_equal(argus__arm_init(&drv, &ops, &cfg, emit, NULL), 0);
}

/* The kernel, through the descriptor as armed when it runs: every warp
 * starts 100 ns after the one before it (gt 5000 + 100 s), at 2 GHz:
 * outer from +10 to +400 cycles (195 ns), load inside it from +30 to +130
 * (50 ns), the CTA's end at +410. */
static void model_kernel(void)
{
    const argus_device_desc *d = &F.desc;
    assert_int_equal(d->magic, ARGUS_BUF_MAGIC);
    uint32_t outer = argus_region_id("outer", 0), load = argus_region_id("load", outer);
    for (uint32_t s = 0; s < d->nslots; s++) {
        dm_buf b = {.p = (unsigned char *)(uintptr_t)d->slots - ARGUS_HEADER_BYTES,
                    .cap = d->cap_mask + 1,
                    .nslots = d->nslots,
                    .wpc = d->warps_per_cta};
        dm_warp w;
        dm_begin(&w, &b, s / d->warps_per_cta, s % d->warps_per_cta, s, 5000 + 100 * s, 1000, 2.0);
        dm_emit(&w, ARGUS_REC_BEGIN, outer, 10);
        dm_emit(&w, ARGUS_REC_BEGIN, load, 20);
        dm_emit(&w, ARGUS_REC_END, load, 100);
        dm_emit(&w, ARGUS_REC_END, outer, 270);
        dm_end(&w, 10);
    }
}

static const uint32_t grid[3] = {2, 1, 1}, block[3] = {64, 1, 1};

/* A recording: header, range "step" on thread 9 around the launches of
 * the given correlation IDs (each kernel 1000 ns, starting at 1000 * corr
 * after t0), then the lines the arming wrote. */
static void build(const uint64_t *corrs, size_t n, argus_shim_input *in, argus_shim_result *r)
{
    static char text[1 << 21];
    int w = snprintf(text, sizeof(text),
                     "{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"subscribed\","
                     "\"t0\":\"1796156437637826496\",\"pid\":1}\n"
                     "{\"e\":\"push\",\"tid\":9,\"ts\":10,\"name\":\"step\"}\n");
    for (size_t i = 0; i < n; i++)
        w += snprintf(text + w, sizeof(text) - (size_t)w,
                      "{\"e\":\"launch\",\"tid\":9,\"ts\":%llu,\"corr\":%llu}\n"
                      "{\"e\":\"kernel\",\"corr\":%llu,\"name\":\"kern\",\"start\":%llu,"
                      "\"end\":%llu,\"stream\":7}\n",
                      (unsigned long long)(20 + i), (unsigned long long)corrs[i],
                      (unsigned long long)corrs[i], (unsigned long long)(1000 * corrs[i]),
                      (unsigned long long)(1000 * corrs[i] + 1000));
    w += snprintf(text + w, sizeof(text) - (size_t)w,
                  "{\"e\":\"pop\",\"tid\":9,\"ts\":999999}\n%s", g_lines);
    assert_true((size_t)w < sizeof(text));
    char msg[512] = "";
    assert_int_equal(argus_shim_input_parse("arm", text, (size_t)w, in, NULL, msg, sizeof(msg)), 0);
    int rc = argus_shim_build(in, r, msg, sizeof(msg));
    if (rc != 0)
        fail_msg("build: %s", msg);
}

static const argus_region_stats *find(const argus_shim_result *r, argus_region_stats *st, size_t n,
                                      const char *path)
{
    for (size_t i = 0; i < n; i++) {
        char p[512];
        assert_int_equal(argus_node_path(&r->trace, r->reg, st[i].node, p, sizeof(p)), 0);
        if (strcmp(p, path) == 0)
            return &st[i];
    }
    return NULL;
}

static size_t count_diag(const argus_trace *t, int kind)
{
    size_t n = 0;
    for (size_t i = 0; i < t->ndiags; i++)
        n += t->diags[i].kind == kind;
    return n;
}

static void test_arm_read_back_join(void **state)
{
    (void)state;
    setup_arm(8, 16);
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, (void *)0x77, 0, 3), 1);
    /* Armed in the launch's stream: zeroed, header, descriptor. */
    assert_int_equal(F.memsets, 1);
    assert_int_equal(F.htods, 2);
    assert_ptr_equal(F.last_stream, (void *)0x77);
    assert_int_equal(F.desc.nslots, 4);
    assert_int_equal(F.desc.warps_per_cta, 2);
    assert_int_equal(F.desc.cap_mask, 7);
    model_kernel();
    argus__arm_launch_exit(3, 0);
    /* Disarmed behind the kernel, in its stream. */
    assert_int_equal(F.htods, 3);
    assert_ptr_equal(F.last_stream, (void *)0x77);
    assert_int_equal(F.desc.nslots, 0);
    assert_int_equal(F.desc.slots, 0);
    /* The read-back has not completed: nothing is collected, nothing waits. */
    argus__arm_poll(0);
    assert_int_equal(g_len, 0);
    F.gpu_done = 1;
    argus__arm_poll(0);
    assert_non_null(strstr(g_lines, "\"state\":\"decoded\""));
    assert_non_null(strstr(g_lines, "8 occurrences in 4 warps; SM clock 2.0000 GHz"));
    /* Collected once. */
    size_t len = g_len;
    argus__arm_poll(1);
    assert_int_equal(g_len, len);
    argus__arm_shutdown();

    uint64_t corr = 3;
    argus_shim_input in;
    argus_shim_result r;
    build(&corr, 1, &in, &r);
    assert_int_equal(r.device_regions, 8);
    assert_int_equal(r.armed_decoded, 1);
    assert_int_equal(r.armed_missing, 0);
    assert_int_equal(r.trace.ndiags, 0);
    argus_region_stats *st;
    size_t n;
    assert_int_equal(argus_stats(&r.trace, NULL, &st, &n), 0);
    const argus_region_stats *o = find(&r, st, n, "step/kern/outer");
    const argus_region_stats *l = find(&r, st, n, "step/kern/outer/load");
    assert_non_null(o);
    assert_non_null(l);
    assert_int_equal(r.node_kind[o->node], ARGUS_SHIM_NODE_DEVICE);
    assert_int_equal(o->count, 4);
    assert_int_equal(l->count, 4);
    assert_true(o->total_ns == 4 * 195.0);
    assert_true(l->total_ns == 4 * 50.0);
    assert_true(l->p50_ns == 50.0);
    /* Placed at the kernel's CUPTI start (t0 + 3000) plus the offset from
     * the first CTA start: warp slot s's outer at 100 s + 5 ns, load at
     * 100 s + 15 ns. Each warp on its own track. */
    const uint64_t t0 = 1796156437637826496ull;
    int seen = 0;
    for (size_t i = 0; i < r.trace.nocc; i++) {
        const argus_occurrence *oc = &r.trace.occ[i];
        if (oc->node != o->node && oc->node != l->node)
            continue;
        const char *track = r.track_names[oc->slot];
        unsigned cta, warp;
        assert_int_equal(sscanf(track, "stream 7 CTA %u warp %u", &cta, &warp), 2);
        uint64_t s = cta * 2 + warp;
        uint64_t begin = t0 + 3000 + 100 * s + (oc->node == o->node ? 5 : 15);
        assert_int_equal(oc->clk_begin, begin);
        assert_int_equal(oc->clk_end - oc->clk_begin, oc->node == o->node ? 195 : 50);
        seen++;
    }
    assert_int_equal(seen, 8);
    /* The kernel itself is still CUPTI's, under its range. */
    const argus_region_stats *k = find(&r, st, n, "step/kern");
    assert_non_null(k);
    assert_true(k->total_ns == 1000.0);
    /* The report and trace write (the schema check is test_shim_cli's). */
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(argus_shim_report_json(&r, NULL, f), 0);
    assert_int_equal(argus_shim_trace_json(&r, f), 0);
    fclose(f);
    free(st);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
}

static void test_not_instrumented(void **state)
{
    (void)state;
    setup_arm(8, 16);
    /* Many functions of a plain module (the hash grows past its first
     * size): each looked up once, none armed. */
    for (int pass = 0; pass < 2; pass++)
        for (uintptr_t f = 0; f < 600; f++)
            assert_int_equal(argus__arm_launch_enter((void *)(0xC0000 + f * 64), grid, block, NULL,
                                                     0, 100 + f), 0);
    assert_int_equal(F.globals_asked, 1);
    assert_int_equal(argus__arm_launch_enter(FUNC_B, grid, block, NULL, 0, 1), 0);
    assert_int_equal(argus__arm_launch_enter(FUNC_B, grid, block, NULL, 0, 2), 0);
    /* One cuModuleGetGlobal for the module, none on its later launches;
     * no memory, no copy, no line. */
    assert_int_equal(F.globals_asked, 1);
    assert_int_equal(F.allocs + F.host_allocs + F.memsets + F.htods, 0);
    argus__arm_launch_exit(1, 0);
    argus__arm_poll(1);
    assert_int_equal(g_len, 0);
    /* A CUkernel handle cast to CUfunction, as the runtime launches: its
     * function's module, which is instrumented. */
    assert_int_equal(argus__arm_launch_enter((void *)0xA0F0, grid, block, NULL, 0, 9), 1);
    argus__arm_launch_exit(9, 0);
    /* A function whose module the driver does not give. */
    assert_int_equal(argus__arm_launch_enter((void *)0xDEAD, grid, block, NULL, 0, 3), 0);
    argus__arm_shutdown();
}

static void test_other_stream_discards(void **state)
{
    (void)state;
    setup_arm(8, 16);
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, (void *)1, 0, 1), 1);
    model_kernel();
    argus__arm_launch_exit(1, 0);
    /* Still running (its event has not completed) when another kernel of
     * the module is launched on stream 2: that one is not armed, and the
     * first may hold its records. */
    assert_int_equal(argus__arm_launch_enter(FUNC_A2, grid, block, (void *)2, 0, 2), 0);
    argus__arm_launch_exit(2, 0);
    F.gpu_done = 1;
    argus__arm_poll(0);
    assert_non_null(strstr(g_lines, "{\"e\":\"armed\",\"corr\":2,\"state\":\"not_armed\""));
    assert_non_null(strstr(g_lines, "\"corr\":1,\"state\":\"discarded\""));
    assert_null(strstr(g_lines, "\"e\":\"region\""));
    /* Once the first has completed, the module is armed again, on any
     * stream. */
    assert_int_equal(argus__arm_launch_enter(FUNC_A2, grid, block, (void *)2, 0, 4), 1);
    argus__arm_shutdown();

    uint64_t corrs[2] = {1, 2};
    argus_shim_input in;
    argus_shim_result r;
    build(corrs, 2, &in, &r);
    assert_int_equal(r.device_regions, 0);
    assert_int_equal(r.armed_missing, 2);
    assert_int_equal(count_diag(&r.trace, ARGUS_DIAG_DEVICE_REGIONS_MISSING), 2);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
}

static void test_same_stream_rearms(void **state)
{
    (void)state;
    setup_arm(8, 16);
    /* Back to back on one stream: stream order keeps them apart, so the
     * second is armed while the first may still run, into a buffer of its
     * own. */
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, (void *)5, 0, 1), 1);
    model_kernel();
    argus__arm_launch_exit(1, 0);
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, (void *)5, 0, 2), 1);
    model_kernel();
    argus__arm_launch_exit(2, 0);
    assert_int_equal(F.allocs, 2);
    argus__arm_poll(1); /* the exit: waits */
    argus__arm_shutdown();
    uint64_t corrs[2] = {1, 2};
    argus_shim_input in;
    argus_shim_result r;
    build(corrs, 2, &in, &r);
    assert_int_equal(r.armed_decoded, 2);
    assert_int_equal(r.device_regions, 16);
    argus_region_stats *st;
    size_t n;
    assert_int_equal(argus_stats(&r.trace, NULL, &st, &n), 0);
    const argus_region_stats *o = find(&r, st, n, "step/kern/outer");
    assert_non_null(o);
    assert_int_equal(o->count, 8);
    free(st);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
}

/* ARGUS_SHIM_ARM_RAW: each collected buffer saved as arm.<corr>.raw, the
 * bytes the recorder decoded (so they decode to the same 8 warps' outer and
 * load); a folder that cannot be written costs the files only, said in an
 * "unavailable" line, and the regions are still decoded. */
static void test_raw_dir(void **state)
{
    (void)state;
    char dir[] = "/tmp/argus_arm_raw.XXXXXX";
    assert_non_null(mkdtemp(dir));
    g_raw_dir = dir;
    setup_arm(8, 16);
    for (uint64_t c = 1; c <= 2; c++) {
        assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, (void *)5, 0, c), 1);
        model_kernel();
        argus__arm_launch_exit(c, 0);
    }
    argus__arm_poll(1);
    argus__arm_shutdown();
    uint32_t outer = argus_region_id("outer", 0), load = argus_region_id("load", outer);
    for (int c = 1; c <= 2; c++) {
        char path[64];
        snprintf(path, sizeof(path), "%s/arm.%d.raw", dir, c);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        static unsigned char buf[1 << 16];
        size_t len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        unlink(path);
        argus_trace t;
        char msg[256];
        assert_int_equal(argus_decode(buf, len, NULL, &t, msg, sizeof(msg)), 0);
        assert_int_equal(t.warps_active, 4);
        size_t n_outer = 0, n_load = 0;
        for (size_t i = 0; i < t.nocc; i++) {
            n_outer += t.occ[i].region == outer;
            n_load += t.occ[i].region == load;
        }
        assert_int_equal(n_outer, 4);
        assert_int_equal(n_load, 4);
        assert_int_equal(t.ndiags, 0);
        argus_trace_free(&t);
    }
    assert_null(strstr(g_lines, "raw_buffer"));
    /* A folder that does not exist. */
    char gone[64];
    snprintf(gone, sizeof(gone), "%s/gone", dir);
    g_raw_dir = gone;
    setup_arm(8, 16);
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, (void *)5, 0, 7), 1);
    model_kernel();
    argus__arm_launch_exit(7, 0);
    argus__arm_poll(1);
    argus__arm_shutdown();
    g_raw_dir = NULL;
    assert_non_null(strstr(g_lines, "{\"e\":\"unavailable\",\"what\":\"raw_buffer\",\"why\":"
                                    "\"ARGUS_SHIM_ARM_RAW: "));
    assert_non_null(strstr(g_lines, "/gone/arm.7.raw: No such file or directory"));
    assert_non_null(strstr(g_lines, "\"state\":\"decoded\""));
    rmdir(dir);
}

static void test_buffers_reused(void **state)
{
    (void)state;
    setup_arm(8, 16);
    for (uint64_t c = 1; c <= 3; c++) {
        assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, (void *)5, 0, c), 1);
        model_kernel();
        argus__arm_launch_exit(c, 0);
        F.gpu_done = 1;
        argus__arm_poll(0);
        F.gpu_done = 0;
    }
    /* One device buffer, one pinned read-back and one staging block for
     * the three launches (collected before the next). */
    assert_int_equal(F.allocs, 1);
    assert_int_equal(F.host_allocs, 2);
    argus__arm_shutdown();
}

static void test_limits_and_failures(void **state)
{
    (void)state;
    setup_arm(8, 1);
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, NULL, 0, 1), 1);
    argus__arm_launch_exit(1, 701); /* CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES */
    argus__arm_poll(1);
    assert_non_null(strstr(g_lines, "\"state\":\"failed\",\"why\":\"the launch itself failed "
                                    "(CUresult 701)\""));
    /* The limit: said once, then launches run unarmed. */
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, NULL, 0, 2), 0);
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, NULL, 0, 3), 0);
    const char *u = strstr(g_lines, "arming stopped after 1 launches (ARGUS_SHIM_ARM_MAX)");
    assert_non_null(u);
    assert_null(strstr(u + 1, "arming stopped"));
    argus__arm_shutdown();

    /* A buffer over the byte limit (1 MiB here) is not armed, with the
     * size and what to change. */
    setup_arm(1024, 16);
    const uint32_t big[3] = {200, 1, 1}, blk[3] = {256, 1, 1};
    assert_int_equal(argus__arm_launch_enter(FUNC_A, big, blk, NULL, 0, 1), 0);
    assert_non_null(strstr(g_lines, "\"not_armed\",\"why\":\"its region buffer would be "
                                    "13209664 bytes, over the 1048576-byte limit; lower "
                                    "ARGUS_SHIM_ARM_CAP\""));
    /* A block beyond 1024 threads. */
    const uint32_t huge[3] = {1, 1, 1}, hblk[3] = {2048, 1, 1};
    assert_int_equal(argus__arm_launch_enter(FUNC_A, huge, hblk, NULL, 0, 2), 0);
    assert_non_null(strstr(g_lines, "1 to 1024 threads per CTA"));
    /* A stream being captured into a graph, and one the driver cannot say
     * about: not armed, nothing enqueued into them. */
    int htods = F.htods;
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, (void *)0xCA, 0, 4), 0);
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, (void *)0xBAD, 0, 5), 0);
    assert_int_equal(F.htods, htods);
    assert_non_null(strstr(g_lines, "{\"e\":\"armed\",\"corr\":4,\"state\":\"not_armed\","
                                    "\"why\":\"launched into a stream being captured"));
    assert_non_null(strstr(g_lines, "{\"e\":\"armed\",\"corr\":5,\"state\":\"not_armed\""));
    /* A stream-ordered copy that fails. */
    F.fail_memset = 1;
    assert_int_equal(argus__arm_launch_enter(FUNC_A, grid, block, NULL, 0, 3), 0);
    assert_non_null(strstr(g_lines, "arming the region buffer in the launch's stream failed "
                                    "(CUresult 1)"));
    argus__arm_shutdown();
}

/* CUPTI's callback data for cuLaunchKernel(_ptsz) and a sync. */
static void test_cupti_callbacks(void **state)
{
    (void)state;
    setup_arm(8, 16);
    cuLaunchKernel_ptsz_params p = {.f = (CUfunction)FUNC_A,
                                    .gridDimX = 2, .gridDimY = 1, .gridDimZ = 1,
                                    .blockDimX = 64, .blockDimY = 1, .blockDimZ = 1,
                                    .hStream = NULL};
    CUresult ret = CUDA_SUCCESS;
    CUpti_CallbackData cb = {.callbackSite = CUPTI_API_ENTER,
                             .functionName = "cuLaunchKernel_ptsz",
                             .symbolName = "_Z4kernv",
                             .functionParams = &p,
                             .functionReturnValue = &ret,
                             .correlationId = 11};
    argus__arm_on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, 1, &cb);
    /* The per-thread default stream, not the legacy one. */
    assert_ptr_equal(F.last_stream, (void *)0x2);
    assert_int_equal(F.desc.nslots, 4);
    model_kernel();
    cb.callbackSite = CUPTI_API_EXIT;
    argus__arm_on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, 0, &cb);
    assert_int_equal(F.desc.nslots, 0);
    F.gpu_done = 1;
    /* The application's cuCtxSynchronize: collected at its exit. */
    CUpti_CallbackData sync = {.callbackSite = CUPTI_API_ENTER, .functionName = "cuCtxSynchronize"};
    argus__arm_on_callback(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, 1, &sync);
    assert_int_equal(g_len, 0);
    sync.callbackSite = CUPTI_API_EXIT;
    argus__arm_on_callback(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, 0, &sync);
    assert_non_null(strstr(g_lines, "{\"e\":\"armed\",\"corr\":11,\"name\":\"_Z4kernv\","
                                    "\"state\":\"decoded\""));

    /* cuLaunchKernelEx: the shape from its config. */
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                          .blockDimX = 96, .blockDimY = 1, .blockDimZ = 1,
                          .hStream = (CUstream)0x33};
    cuLaunchKernelEx_params pe = {.config = &cfg, .f = (CUfunction)FUNC_A};
    CUpti_CallbackData cbe = {.callbackSite = CUPTI_API_ENTER,
                              .symbolName = "_Z4kernv",
                              .functionParams = &pe,
                              .functionReturnValue = &ret,
                              .correlationId = 12};
    argus__arm_on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 1, &cbe);
    assert_ptr_equal(F.last_stream, (void *)0x33);
    assert_int_equal(F.desc.nslots, 3);
    argus__arm_shutdown();
}

/* The reader refuses malformed device lines with the field and the fix. */
static void test_bad_lines(void **state)
{
    (void)state;
    static const struct {
        const char *line, *want;
    } bad[] = {
        {"{\"e\":\"dnode\",\"corr\":1,\"node\":0,\"parent\":0,\"name\":\"a\"}",
         "parent: a node's parent must be an earlier node"},
        {"{\"e\":\"dnode\",\"corr\":1,\"node\":0}", "name"},
        {"{\"e\":\"region\",\"corr\":1,\"node\":0,\"cta\":0,\"warp\":0,\"off\":0,\"dur\":1,"
         "\"flags\":8}",
         "flags: unknown occurrence flags"},
        {"{\"e\":\"region\",\"corr\":1,\"node\":0,\"cta\":0,\"warp\":40,\"off\":0,\"dur\":1}",
         "warp: beyond a launch's limits"},
        {"{\"e\":\"armed\",\"corr\":1,\"state\":\"maybe\"}",
         "state: expected decoded, not_armed, discarded or failed"},
        {"{\"e\":\"armed\",\"state\":\"decoded\"}", "corr"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[1024];
        int w = snprintf(text, sizeof(text),
                         "{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"subscribed\","
                         "\"t0\":\"0\",\"pid\":1}\n%s\n",
                         bad[i].line);
        argus_shim_input in;
        char msg[512] = "";
        assert_int_equal(argus_shim_input_parse("bad.jsonl", text, (size_t)w, &in, NULL, msg,
                                                sizeof(msg)),
                         ARGUS_EFORMAT);
        if (strstr(msg, "bad.jsonl:2") == NULL || strstr(msg, bad[i].want) == NULL)
            fail_msg("line %zu: message '%s' lacks '%s'", i, msg, bad[i].want);
    }
    /* Regions of a launch CUPTI reported no kernel for: a diagnostic, no
     * region placed. */
    const char *orphan =
        "{\"schema\":\"argus.shim.events\",\"version\":1,\"cupti\":\"subscribed\",\"t0\":\"0\","
        "\"pid\":1}\n"
        "{\"e\":\"dnode\",\"corr\":5,\"node\":0,\"name\":\"outer\"}\n"
        "{\"e\":\"region\",\"corr\":5,\"node\":0,\"cta\":0,\"warp\":0,\"off\":0,\"dur\":10}\n"
        "{\"e\":\"armed\",\"corr\":5,\"name\":\"k\",\"state\":\"decoded\",\"why\":\"x\"}\n";
    argus_shim_input in;
    argus_shim_result r;
    char msg[512] = "";
    assert_int_equal(argus_shim_input_parse("o", orphan, strlen(orphan), &in, NULL, msg, sizeof(msg)),
                     0);
    assert_int_equal(argus_shim_build(&in, &r, msg, sizeof(msg)), 0);
    assert_int_equal(r.device_regions, 0);
    assert_int_equal(r.trace.nocc, 0);
    assert_int_equal(count_diag(&r.trace, ARGUS_DIAG_DEVICE_REGIONS_MISSING), 1);
    argus_shim_result_free(&r);
    argus_shim_input_free(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arm_read_back_join),
        cmocka_unit_test(test_not_instrumented),
        cmocka_unit_test(test_other_stream_discards),
        cmocka_unit_test(test_same_stream_rearms),
        cmocka_unit_test(test_buffers_reused),
        cmocka_unit_test(test_raw_dir),
        cmocka_unit_test(test_limits_and_failures),
        cmocka_unit_test(test_cupti_callbacks),
        cmocka_unit_test(test_bad_lines),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free_tracked();
    return rc;
}
