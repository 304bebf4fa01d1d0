/*
 * Stands in for a CUDA program running under the capture library, for the
 * GPU-free tests of `mosaic-profile capture`: it checks the environment the
 * CLI sets up and writes what the injection library would.
 *
 *   fake_capture_prog MODE EXIT_STATUS [EXPECT_MAX_KERNELS]
 *   MODE: complete | incomplete | empty | none | garbage | child
 */
#define _GNU_SOURCE 1
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mosaic/profile.h"

static int write_profile(const char *path, int n_kernels, int incomplete)
{
    struct mosaic_profile p;
    char err[512];

    mosaic_profile_init(&p);
    mosaic_set_str(&p.method, MOSAIC_METHOD_CUPTI);
    mosaic_set_str(&p.gpu.name, "Fake GPU");
    for (int i = 0; i < n_kernels; i++) {
        struct mosaic_kernel *k = mosaic_profile_add_kernel(&p);
        int64_t g[3] = {64 + i, 1, 1}, b[3] = {128, 1, 1};
        k->name = strdup("_Z4fakev");
        memcpy(k->grid, g, sizeof(g));
        memcpy(k->block, b, sizeof(b));
        k->dyn_smem = 0;
        k->key = mosaic_kernel_key(k->name, g, b, 0);
        k->launches = 2;
        for (int m = 0; m < MOSAIC_N_METRICS; m++)
            k->metrics[m] = m;
        mosaic_kernel_derive(k);
    }
    if (incomplete)
        mosaic_profile_add_problem(&p, "metric %s dropped: fake problem",
                                   "sm__cycles_active.max");
    int rc = mosaic_profile_write_file(&p, path, err, sizeof(err));
    if (rc)
        fprintf(stderr, "fake: %s\n", err);
    mosaic_profile_free(&p);
    return rc;
}

int main(int argc, char **argv)
{
    const char *out = getenv("MOSAIC_PROFILE_OUT");
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    const char *root = getenv("MOSAIC_PROFILE_ROOT_PID");

    if (argc < 3)
        return 90;
    if (!out || out[0] != '/' || !inj || inj[0] != '/' || !root ||
        atol(root) != (long)getpid() || !getenv("MOSAIC_PROFILE_SOURCE"))
        return 98;
    if (argc > 3) {
        const char *mk = getenv("MOSAIC_PROFILE_MAX_KERNELS");
        if (!mk || strcmp(mk, argv[3]) != 0)
            return 97;
    }
    const char *mode = argv[1];
    int status = atoi(argv[2]);
    if (strcmp(mode, "complete") == 0)
        write_profile(out, 3, 0);
    else if (strcmp(mode, "incomplete") == 0)
        write_profile(out, 2, 1);
    else if (strcmp(mode, "empty") == 0)
        write_profile(out, 0, 0);
    else if (strcmp(mode, "garbage") == 0) {
        FILE *f = fopen(out, "w");
        fputs("{\"schema\": \"mosaic-profile/1\", \"gpu\": ", f);
        fclose(f);
    } else if (strcmp(mode, "child") == 0) {
        /* A CUDA child process: writes <stem>.<pid>.json. */
        pid_t pid = fork();
        if (pid == 0) {
            char path[4096];
            size_t n = strlen(out);
            snprintf(path, sizeof(path), "%.*s.%ld.json", (int)(n - 5), out,
                     (long)getpid());
            _exit(write_profile(path, 1, 0) ? 1 : 0);
        }
        waitpid(pid, NULL, 0);
    }
    if (status < 0)
        raise(-status);
    return status;
}
