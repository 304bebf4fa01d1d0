/*
 * mosaic-profile as a user runs it: import-ncu, show, ncu-metrics, and
 * capture's exit codes and messages with a stand-in program
 * (fake_capture_prog) in place of a CUDA program. GPU-free.
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

static const char *bin(void)
{
    const char *b = getenv("MOSAIC_PROFILE_BIN");
    assert_non_null(b);
    return b;
}

static const char *fake(void)
{
    const char *b = getenv("MOSAIC_FAKE_PROG");
    assert_non_null(b);
    return b;
}

static char g_dir[256];
static char g_out[512];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/mosaic_cli_test_XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_out, sizeof(g_out), "%s/prof.json", g_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(g_dir);
    struct dirent *e;
    char p[1024];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", g_dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(g_dir);
    return 0;
}

/* Runs argv; returns the exit status; output gets stdout+stderr. */
static int run(char *output, size_t cap, const char *const *argv,
               const char *lib_env)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        if (lib_env)
            setenv("MOSAIC_CAPTURE_LIB", lib_env, 1);
        else
            unsetenv("MOSAIC_CAPTURE_LIB");
        execv(argv[0], (char *const *)argv);
        _exit(126);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd[0], output + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    output[n] = '\0';
    close(fd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

#define RUN(out, lib, ...)                                                    \
    run(out, sizeof(out), (const char *const[]){bin(), __VA_ARGS__, NULL}, lib)

static void expect_in(const char *out, const char *want)
{
    if (!strstr(out, want))
        fail_msg("output lacks \"%s\":\n%s", want, out);
}

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static void test_help_and_metrics(void **state)
{
    (void)state;
    char out[16384];
    assert_int_equal(RUN(out, NULL, "--help"), 0);
    expect_in(out, "exit status:");
    expect_in(out, "import-ncu");
    assert_int_equal(RUN(out, NULL, "bogus"), 1);
    expect_in(out, "unknown command");
    assert_int_equal(RUN(out, NULL, "ncu-metrics"), 0);
    expect_in(out, "gpu__time_duration.sum,");
    expect_in(out, "launch__registers_per_thread");
}

static void test_import_and_show(void **state)
{
    (void)state;
    char out[65536], csv[1024];
    snprintf(csv, sizeof(csv), "%s/ncu_raw.csv", FIXTURES);
    assert_int_equal(RUN(out, NULL, "import-ncu", csv, "-o", g_out), 0);
    expect_in(out, "imported 2 kernel(s)");
    assert_int_equal(RUN(out, NULL, "show", g_out), 0);
    expect_in(out, "NVIDIA H200");
    expect_in(out, "ncu_csv, complete, 2 kernel(s)");
    expect_in(out, "_Z6vecaddPKfS0_Pfi");
    expect_in(out, "58.2"); /* 58.176 us */

    /* A hostile CSV: the message names the file and line. */
    char bad[1024];
    snprintf(bad, sizeof(bad), "%s/bad.csv", g_dir);
    FILE *f = fopen(bad, "w");
    fputs("\"ID\",\"Kernel Name\",\"Grid Size\",\"Block Size\"\n\"\",\"\",\"\",\"\"\n"
          "\"0\",\"k\",\"(1, 1\",\"(1, 1, 1)\"\n", f);
    fclose(f);
    assert_int_equal(RUN(out, NULL, "import-ncu", bad, "-o", g_out), 1);
    expect_in(out, "bad.csv:3: column 3 (Grid Size)");

    assert_int_equal(RUN(out, NULL, "import-ncu", "/nonexistent.csv", "-o", g_out), 1);
    expect_in(out, "/nonexistent.csv: cannot open");
    assert_int_equal(RUN(out, NULL, "show", bad), 1);
    expect_in(out, "bad.csv: not valid JSON");
    assert_int_equal(RUN(out, NULL, "import-ncu", csv), 1);
    expect_in(out, "expected FILE.csv -o PROF.json");
}

static void test_capture_outcomes(void **state)
{
    (void)state;
    char out[65536];
    const char *lib = fake(); /* any readable file stands in for the library */

    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--", fake(), "complete", "0"), 0);
    expect_in(out, "profiled 3 kernel(s) (6 launch(es))");
    assert_true(exists(g_out));

    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--max-kernels", "7", "--",
                         fake(), "complete", "0", "7"), 0);

    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--", fake(), "incomplete", "0"), 3);
    expect_in(out, "is incomplete");
    expect_in(out, "fake problem");

    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--", fake(), "complete", "3"), 4);
    expect_in(out, "exited with status 3; the partial profile is kept");
    assert_true(exists(g_out));

    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--", fake(), "none", "0"), 2);
    expect_in(out, "no kernel was launched by");
    assert_false(exists(g_out)); /* the stale file was removed */

    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--", "/bin/true"), 2);
    expect_in(out, "no kernel was launched by /bin/true; nothing to profile");

    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--", fake(), "empty", "0"), 2);
    expect_in(out, "no kernel was launched");

    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--", fake(), "none", "-9"), 4);
    expect_in(out, "was killed by signal 9");
    expect_in(out, "wrote no profile");

    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--", fake(), "garbage", "0"), 1);
    expect_in(out, "the profile is unreadable");

    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--", fake(), "child", "0"), 2);
    expect_in(out, "1 CUDA child process(es) did");
    expect_in(out, "prof.");
}

static void test_capture_setup_errors(void **state)
{
    (void)state;
    char out[65536];
    const char *lib = fake();

    assert_int_equal(RUN(out, "/nonexistent/libmosaic_capture.so", "capture", "-o",
                         g_out, "--", "/bin/true"), 5);
    expect_in(out, "capture library not found at /nonexistent/libmosaic_capture.so");
    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--", "/nonexistent/prog"), 5);
    expect_in(out, "cannot run \"/nonexistent/prog\": No such file or directory");
    assert_int_equal(RUN(out, lib, "capture", "-o", "/nonexistent/dir/p.json", "--",
                         "/bin/true"), 5);
    expect_in(out, "/nonexistent/dir/p.json: the folder does not exist");
    assert_int_equal(RUN(out, lib, "capture", "--", "/bin/true"), 1);
    expect_in(out, "-o PROF.json is required");
    assert_int_equal(RUN(out, lib, "capture", "-o", g_out), 1);
    expect_in(out, "no command given");
    assert_int_equal(RUN(out, lib, "capture", "-o", g_out, "--max-kernels", "x",
                         "--", "/bin/true"), 1);
    expect_in(out, "--max-kernels \"x\"");
}

/* Rewrites the profile at src into dst with from replaced by to. */
static void edited_copy(const char *src, const char *dst, const char *from,
                        const char *to)
{
    static char buf[1 << 20];
    FILE *f = fopen(src, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *at = strstr(buf, from);
    assert_non_null(at);
    f = fopen(dst, "wb");
    assert_non_null(f);
    fwrite(buf, 1, (size_t)(at - buf), f);
    fputs(to, f);
    fputs(at + strlen(from), f);
    assert_int_equal(fclose(f), 0);
}

/* The GPU a profile was taken on, for a consumer that must refuse another
 * GPU's profile; and profiles whose GPU description is impossible. */
static void test_gpu_description(void **state)
{
    (void)state;
    char out[65536], csv[1024], bad[1024], fifo[1024];
    snprintf(csv, sizeof(csv), "%s/ncu_raw.csv", FIXTURES);
    assert_int_equal(RUN(out, NULL, "import-ncu", csv, "-o", g_out), 0);

    assert_int_equal(RUN(out, NULL, "gpu", g_out), 0);
    expect_in(out, "\"name\": \"NVIDIA H200\", \"sm_count\": 132, \"cc\": \"9.0\", "
                   "\"l2_bytes\": 62914560, \"driver\": null, \"cuda\": null}");
    assert_int_equal(RUN(out, NULL, "gpu", g_out, "--sms", "132", "--cc", "9.0",
                         "--name", "NVIDIA H200"), 0);
    /* An A100's numbers: the consumer is told, with status 6. */
    assert_int_equal(RUN(out, NULL, "gpu", g_out, "--sms", "108"), 6);
    expect_in(out, "prof.json: gpu.sm_count: the profile was taken on a GPU with "
                   "132 SMs (NVIDIA H200), but this needs 108; profile the kernels "
                   "on that GPU");
    assert_int_equal(RUN(out, NULL, "gpu", g_out, "--cc", "8.0"), 6);
    expect_in(out, "gpu.cc: the profile was taken on compute capability 9.0");
    assert_int_equal(RUN(out, NULL, "gpu", g_out, "--sms", "0"), 1);
    expect_in(out, "--sms \"0\": expected the SM count");
    assert_int_equal(RUN(out, NULL, "gpu", g_out, "--sms", "4.7"), 1);
    assert_int_equal(RUN(out, NULL, "gpu"), 1);
    expect_in(out, "expected one file");

    /* sm_count 0, a duplicated key, trailing data: refused by field. */
    snprintf(bad, sizeof(bad), "%s/bad_gpu.json", g_dir);
    edited_copy(g_out, bad, "\"sm_count\": 132", "\"sm_count\": 0");
    assert_int_equal(RUN(out, NULL, "gpu", bad), 1);
    expect_in(out, "bad_gpu.json: gpu.sm_count: 0 SMs: a GPU has 1..1024");
    assert_int_equal(RUN(out, NULL, "show", bad), 1);
    expect_in(out, "gpu.sm_count: 0 SMs");
    edited_copy(g_out, bad, "\"sm_count\": 132", "\"sm_count\": 132, \"sm_count\": 108");
    assert_int_equal(RUN(out, NULL, "show", bad), 1);
    expect_in(out, "bad_gpu.json: gpu.sm_count: the key appears twice");
    /* An unchanged copy with a second document appended. */
    edited_copy(g_out, bad, "\"schema\"", "\"schema\"");
    FILE *f = fopen(bad, "ab");
    assert_non_null(f);
    fputs("{}\n", f);
    fclose(f);
    assert_int_equal(RUN(out, NULL, "show", bad), 1);
    expect_in(out, "text after the end of the document");

    /* A FIFO named as the profile: refused at once, not waited on. */
    snprintf(fifo, sizeof(fifo), "%s/prof.fifo", g_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(20);
    assert_int_equal(RUN(out, NULL, "gpu", fifo), 1);
    expect_in(out, "is a FIFO, not a regular file");
    assert_int_equal(RUN(out, NULL, "import-ncu", fifo, "-o", bad), 1);
    expect_in(out, "is a FIFO, not a regular file");
    alarm(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_metrics),
        cmocka_unit_test(test_import_and_show),
        cmocka_unit_test(test_gpu_description),
        cmocka_unit_test(test_capture_outcomes),
        cmocka_unit_test(test_capture_setup_errors),
    };
    return cmocka_run_group_tests_name("profiler_cli", tests, setup, teardown);
}
