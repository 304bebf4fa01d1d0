/*
 * The workspace's and the runtime's own cost (docs/argus-workspace.md):
 * put of new bytes, put of bytes already there, get (read + hash check)
 * and the disk space per object for sizes from 1 KiB to 16 MiB; the bytes
 * and time of a manifest (record, lookup); and the runtime's time per
 * empty CPU task, run and reused. Wall-clock means over `reps` repeats
 * (CLOCK_MONOTONIC), on whatever disk DIR is on.
 *
 *   argus_ws_bench DIR [REPS [MAX_BYTES]]   (ctest runs it with 1 repeat up
 *                                   to 1 MiB, so that it cannot rot; the
 *                                   docs' numbers used 20 and 16 MiB)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "argus/rt.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int empty_task(argus_rt_ctx *ctx, void *user)
{
    (void)user;
    return argus_rt_ctx_output(ctx, "out", argus_rt_ctx_id(ctx), strlen(argus_rt_ctx_id(ctx)));
}

static int bench_rt(argus_ws *ws, int ntasks, double *run_us, double *reuse_us)
{
    static const char *const outs[] = {"out"};
    for (int pass = 0; pass < 2; pass++) {
        argus_rt *rt;
        argus_rt_opts o = {.cpu_threads = 2};
        if (argus_rt_new(ws, &o, &rt) != 0)
            return 1;
        char ids[64][16];
        for (int i = 0; i < ntasks && i < 64; i++) {
            snprintf(ids[i], sizeof ids[i], "t%d", i);
            const char *dep[] = {i > 0 ? ids[i - 1] : NULL};
            argus_rt_task_desc d = {.id = ids[i],
                                    .kind = "synthesize",
                                    .deps = dep,
                                    .ndeps = i > 0,
                                    .exec = empty_task,
                                    .outputs = outs,
                                    .noutputs = 1,
                                    .config = "bench"};
            char msg[256];
            if (argus_rt_add(rt, &d, msg, sizeof msg) != 0) {
                fprintf(stderr, "bench: %s\n", msg);
                return 1;
            }
        }
        double t0 = now_s();
        int rc = argus_rt_run(rt);
        double dt = now_s() - t0;
        argus_rt_free(rt);
        if (rc != 0)
            return 1;
        *(pass == 0 ? run_us : reuse_us) = dt / ntasks * 1e6;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: argus_ws_bench DIR [REPS [MAX_BYTES]]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    size_t max_bytes = argc > 3 ? (size_t)strtoull(argv[3], NULL, 10) : (size_t)16 << 20;
    if (reps < 1)
        reps = 1;
    argus_ws *ws;
    char msg[1024];
    if (argus_ws_open(argv[1], 1, &ws, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus_ws_bench: %s\n", msg);
        return 1;
    }
    static const size_t sizes[] = {1 << 10, 64 << 10, 1 << 20, 16 << 20};
    printf("%-9s %14s %14s %14s %16s\n", "bytes", "put new (ms)", "put again (ms)",
           "get (ms)", "disk (bytes)");
    unsigned char *buf = malloc(16 << 20);
    if (buf == NULL)
        return 1;
    unsigned seed = 12345;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && sizes[s] <= max_bytes; s++) {
        double put_new = 0, put_old = 0, get = 0;
        long long disk = 0;
        for (int r = 0; r < reps; r++) {
            for (size_t i = 0; i < sizes[s]; i++) {
                seed = seed * 1103515245u + 12345u;
                buf[i] = (unsigned char)(seed >> 16);
            }
            char h[ARGUS_HASH_HEX];
            double t0 = now_s();
            if (argus_ws_put(ws, buf, sizes[s], h, msg, sizeof msg) != 0)
                goto fail;
            double t1 = now_s();
            if (argus_ws_put(ws, buf, sizes[s], h, msg, sizeof msg) != 0)
                goto fail;
            double t2 = now_s();
            void *data;
            size_t len;
            if (argus_ws_get(ws, h, &data, &len, msg, sizeof msg) != 0)
                goto fail;
            double t3 = now_s();
            free(data);
            put_new += t1 - t0;
            put_old += t2 - t1;
            get += t3 - t2;
            char path[4096];
            struct stat st;
            if (argus_ws_object_path(ws, h, path, sizeof path) == 0 && stat(path, &st) == 0)
                disk += (long long)st.st_blocks * 512;
        }
        printf("%-9zu %14.3f %14.3f %14.3f %16lld\n", sizes[s], put_new / reps * 1e3,
               put_old / reps * 1e3, get / reps * 1e3, disk / reps);
    }
    /* One manifest of a collect task with two inputs and two outputs. */
    double rec = 0, look = 0;
    long long mbytes = 0;
    for (int r = 0; r < reps; r++) {
        char in1[ARGUS_HASH_HEX], in2[ARGUS_HASH_HEX], o1[ARGUS_HASH_HEX], o2[ARGUS_HASH_HEX];
        char key[ARGUS_HASH_HEX], cfg[64];
        snprintf(cfg, sizeof cfg, "backend=pcsamp rep=%d", r);
        if (argus_ws_put(ws, "program", 7, in1, msg, sizeof msg) != 0 ||
            argus_ws_put(ws, "discovered", 10, in2, msg, sizeof msg) != 0 ||
            argus_ws_put(ws, cfg, strlen(cfg), o1, msg, sizeof msg) != 0 ||
            argus_ws_put(ws, "pcmap", 5, o2, msg, sizeof msg) != 0)
            goto fail;
        const char *ins[] = {in1, in2};
        argus_ws_env env = {"NVIDIA H200", "580.159.04", "13.0"};
        argus_ws_task t = {.kind = "collect",
                           .config = cfg,
                           .program = in1,
                           .scope = "iter=4:8",
                           .env = &env,
                           .inputs = ins,
                           .ninputs = 2};
        argus_ws_output outs[] = {{"samples", o1}, {"pcmap", o2}};
        double t0 = now_s();
        if (argus_ws_record(ws, &t, outs, 2, key, msg, sizeof msg) != 0)
            goto fail;
        double t1 = now_s();
        argus_ws_manifest *m;
        if (argus_ws_lookup(ws, key, &m, msg, sizeof msg) != 0)
            goto fail;
        double t2 = now_s();
        argus_ws_manifest_free(m);
        rec += t1 - t0;
        look += t2 - t1;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/tasks/%.2s/%s.json", argus_ws_path(ws), key, key);
        if (stat(path, &st) == 0)
            mbytes += (long long)st.st_size;
    }
    printf("manifest: %lld bytes, record %.3f ms, lookup (with output checks) %.3f ms\n",
           mbytes / reps, rec / reps * 1e3, look / reps * 1e3);
    double run_us, reuse_us;
    if (bench_rt(ws, 64, &run_us, &reuse_us) != 0) {
        snprintf(msg, sizeof msg, "the runtime benchmark failed");
        goto fail;
    }
    printf("runtime: a chain of 64 empty CPU tasks, %.0f us per task run, %.0f us per task "
           "reused\n",
           run_us, reuse_us);
    free(buf);
    argus_ws_close(ws);
    return 0;
fail:
    fprintf(stderr, "argus_ws_bench: %s\n", msg);
    free(buf);
    argus_ws_close(ws);
    return 1;
}
