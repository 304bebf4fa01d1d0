/*
 * Fuzz target: any bytes as a task manifest. The bytes are written where
 * the manifest of one task key lives, in a workspace that holds that
 * task's objects, and looked up. The lookup must refuse them with
 * ARGUS_WS_EMANIFEST or ARGUS_WS_ECORRUPT and a message, or return a
 * manifest whose fields hash to that key and whose outputs are all
 * present: no damaged manifest may pass for the task's.
 *
 * The corpus (test_ws_corpus/) is the manifest argus_ws_record writes for
 * this target's task; ARGUS_WS_FUZZ_SEED=FILE writes it again.
 */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argus/workspace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, what)                                        \
    do {                                                         \
        if (!(cond)) {                                           \
            fprintf(stderr, "fuzz_argus_ws_manifest: %s\n", what); \
            abort();                                             \
        }                                                        \
    } while (0)

static char dir[512], manifest[1024], key[ARGUS_HASH_HEX];
static argus_ws *ws;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

static void cleanup(void)
{
    argus_ws_close(ws);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void init(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/argus-ws-fuzz-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[600], msg[512];
    snprintf(path, sizeof path, "%s/ws", dir);
    CHECK(argus_ws_open(path, 1, &ws, msg, sizeof msg) == 0, msg);
    atexit(cleanup);
    char prog[ARGUS_HASH_HEX], a[ARGUS_HASH_HEX], b[ARGUS_HASH_HEX];
    CHECK(argus_ws_put(ws, "cubin", 5, prog, msg, sizeof msg) == 0, msg);
    CHECK(argus_ws_put(ws, "samples", 7, a, msg, sizeof msg) == 0, msg);
    CHECK(argus_ws_put(ws, "pcmap", 5, b, msg, sizeof msg) == 0, msg);
    const char *ins[] = {prog};
    argus_ws_env env = {"NVIDIA H200", "580.159.04", "13.0"};
    argus_ws_task t = {.kind = "collect",
                       .config = "backend=pcsamp period=5",
                       .program = "v1",
                       .scope = "iter=4:8",
                       .env = &env,
                       .inputs = ins,
                       .ninputs = 1};
    argus_ws_output outs[] = {{"samples", a}, {"pcmap", b}};
    CHECK(argus_ws_record(ws, &t, outs, 2, key, msg, sizeof msg) == 0, msg);
    snprintf(manifest, sizeof manifest, "%s/tasks/%.2s/%s.json", path, key, key);
    const char *seed = getenv("ARGUS_WS_FUZZ_SEED");
    if (seed != NULL) {
        char cmd[2200];
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", manifest, seed);
        CHECK(system(cmd) == 0, "writing the seed");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (ws == NULL)
        init();
    /* A fresh file each time: ext4 flushes a file truncated and rewritten
     * in place on close, which would make the target wait for the disk. */
    unlink(manifest);
    int fd = open(manifest, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0, "cannot write the manifest");
    CHECK(write(fd, data, size) == (ssize_t)size, "short write");
    close(fd);
    argus_ws_manifest *m = NULL;
    char msg[1024] = "";
    int rc = argus_ws_lookup(ws, key, &m, msg, sizeof msg);
    if (rc != 0) {
        CHECK(rc == ARGUS_WS_EMANIFEST || rc == ARGUS_WS_ECORRUPT || rc == ARGUS_ENOMEM,
              "an unexpected error code");
        CHECK(m == NULL, "a manifest returned with an error");
        CHECK(msg[0] != '\0', "an error without a message");
        return 0;
    }
    CHECK(m != NULL && strcmp(m->key, key) == 0, "a manifest of another key passed");
    argus_ws_env env = {m->gpu, m->driver, m->cuda};
    argus_ws_task t = {.kind = m->kind,
                       .config = m->config,
                       .program = m->program,
                       .scope = m->scope,
                       .env = m->has_env ? &env : NULL,
                       .inputs = (const char *const *)m->inputs,
                       .ninputs = m->ninputs};
    char again[ARGUS_HASH_HEX];
    CHECK(argus_ws_task_key(&t, again, NULL, 0) == 0 && strcmp(again, key) == 0,
          "the fields of an accepted manifest do not hash to its key");
    for (size_t i = 0; i < m->noutputs; i++) {
        CHECK(m->outputs[i].name[0] != '\0', "an output without a name");
        CHECK(argus_ws_verify(ws, m->outputs[i].hash, NULL, NULL, 0) == 0,
              "an accepted manifest lists a missing output");
    }
    argus_ws_manifest_free(m);
    return 0;
}
