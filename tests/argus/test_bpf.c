/*
 * The BPF system-tracing backend (include/argus/bpf.h, docs/argus-backends.md):
 * - the capability probe on this machine (a program loads iff a raw bpf()
 *   load by the test itself does), and in a child with its effective
 *   capabilities dropped: EPERM, and the sentence names CAP_BPF and
 *   CAP_PERFMON and the fix; the other refusals' sentences;
 * - a symbol's file offset in a shared object against the dynamic linker's
 *   own address of it;
 * - uprobes on a stand-in driver library (bpf_stub.c) of a program with two
 *   threads (bpf_target.c): exactly 5 launches and 2 synchronisations on
 *   the first thread, 3 and 1 on the second (the program prints its thread
 *   IDs), every wait at least the stub's 2 ms, nothing lost, through the
 *   library and through `argus-bpf run`; each synchronisation holding the
 *   thread's time off the CPU (the sched_switch raw tracepoint), at most
 *   its wait; bad input (no such process, a library without the calls, no
 *   such file).
 * Where this machine refuses BPF, the tracing tests are skipped and say
 * why (the probe's sentence).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "argus/argus.h"
#include "argus/bpf.h"

static int raw_load(void)
{
    struct bpf_insn insns[2];
    memset(insns, 0, sizeof insns);
    insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
    insns[1].code = BPF_JMP | BPF_EXIT;
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_KPROBE;
    a.insns = (uint64_t)(uintptr_t)insns;
    a.insn_cnt = 2;
    a.license = (uint64_t)(uintptr_t) "GPL";
    long fd = syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
    if (fd >= 0)
        close((int)fd);
    return fd >= 0;
}

static void test_probe_here(void **state)
{
    (void)state;
    argus_bpf_caps c;
    argus_bpf_probe(&c);
    assert_int_equal(c.prog_load, raw_load());
    char why[512];
    int ok = argus_bpf_usable(&c, why, sizeof why);
    printf("# this machine: %s%s%s\n", ok ? "BPF usable" : "BPF not usable", why[0] ? ": " : "",
           why);
    if (!c.prog_load)
        assert_false(ok);
}

static void test_probe_without_caps(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct d[2];
        memset(d, 0, sizeof d);
        if (syscall(SYS_capget, &h, d) != 0)
            _exit(90);
        d[0].effective = d[1].effective = 0; /* permitted kept: only effective dropped */
        if (syscall(SYS_capset, &h, d) != 0)
            _exit(91);
        argus_bpf_caps c;
        argus_bpf_probe(&c);
        char why[512];
        int ok = argus_bpf_usable(&c, why, sizeof why);
        dprintf(fds[1], "%d %d %d %s", c.prog_load, c.load_errno, ok, why);
        _exit(0);
    }
    close(fds[1]);
    char buf[1024] = "";
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(n > 0);
    int load, err, ok;
    assert_int_equal(sscanf(buf, "%d %d %d", &load, &err, &ok), 3);
    assert_int_equal(load, 0);
    assert_int_equal(ok, 0);
    assert_int_equal(err, EPERM);
    if (strstr(buf, "lacks CAP_BPF and CAP_PERFMON (effective capabilities 0x0)") == NULL ||
        strstr(buf, "run as root, or grant them") == NULL)
        fail_msg("the sentence does not name the capabilities and the fix: %s", buf);
}

static void test_messages(void **state)
{
    (void)state;
    char why[512];
    argus_bpf_caps c = {0, ENOSYS, 1, 1, 0, 2};
    assert_int_equal(argus_bpf_usable(&c, why, sizeof why), 0);
    assert_non_null(strstr(why, "no bpf() system call (ENOSYS"));
    /* CAP_BPF and CAP_PERFMON held, refused all the same: seccomp or LSM. */
    c = (argus_bpf_caps){0, EPERM, 1, 1, (1ull << 38) | (1ull << 39), 2};
    assert_int_equal(argus_bpf_usable(&c, why, sizeof why), 0);
    assert_non_null(strstr(why, "a seccomp filter or a security module"));
    /* Only CAP_PERFMON missing. */
    c = (argus_bpf_caps){0, EPERM, 1, 1, 1ull << 39, 1};
    assert_int_equal(argus_bpf_usable(&c, why, sizeof why), 0);
    assert_non_null(strstr(why, "lacks CAP_PERFMON (effective"));
    c = (argus_bpf_caps){1, 0, 0, 1, 0, 2};
    assert_int_equal(argus_bpf_usable(&c, why, sizeof why), 0);
    assert_non_null(strstr(why, "no uprobe events"));
    c = (argus_bpf_caps){1, 0, 1, 0, 0, 2};
    assert_int_equal(argus_bpf_usable(&c, why, sizeof why), 1);
    assert_non_null(strstr(why, "no kernel BTF (/sys/kernel/btf/vmlinux"));
    c = (argus_bpf_caps){1, 0, 1, 1, 0, 2};
    assert_int_equal(argus_bpf_usable(&c, why, sizeof why), 1);
    assert_string_equal(why, "");
}

static void test_symbol_offset(void **state)
{
    (void)state;
    void *h = dlopen(BPF_STUB, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    void *sym = dlsym(h, "cuStreamSynchronize");
    Dl_info di;
    assert_true(sym != NULL && dladdr(sym, &di) != 0);
    uint64_t off;
    char msg[512];
    assert_int_equal(argus_bpf_symbol_offset(BPF_STUB, "cuStreamSynchronize", &off, msg, sizeof msg), 0);
    /* gcc's shared objects map their text at file offset = address. */
    assert_int_equal(off, (uint64_t)((char *)sym - (char *)di.dli_fbase));
    dlclose(h);
    assert_int_equal(argus_bpf_symbol_offset(BPF_STUB, "cuMemAlloc", &off, msg, sizeof msg),
                     ARGUS_ENOREGION);
    assert_non_null(strstr(msg, "no function cuMemAlloc"));
    assert_int_equal(argus_bpf_symbol_offset(ARGUS_SRC_DIR "/test_bpf.c", "x", &off, msg, sizeof msg),
                     ARGUS_EINVAL);
    assert_int_equal(argus_bpf_symbol_offset("/nonexistent.so", "x", &off, msg, sizeof msg), ARGUS_EIO);
}

static int usable(void)
{
    argus_bpf_caps c;
    argus_bpf_probe(&c);
    char why[512];
    if (argus_bpf_usable(&c, why, sizeof why))
        return 1;
    printf("# skipped: %s\n", why);
    return 0;
}

typedef struct tids {
    long a, b;
} tids;

/* Runs bpf_target traced by the library; its stdout gives the threads. */
static void test_trace(void **state)
{
    (void)state;
    if (!usable())
        skip();
    int go[2], out[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(out), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char b;
        close(go[1]);
        close(out[0]);
        dup2(out[1], 1);
        if (read(go[0], &b, 1) != 1)
            _exit(90);
        execl(BPF_TARGET, BPF_TARGET, (char *)NULL);
        _exit(91);
    }
    close(go[0]);
    close(out[1]);
    argus_bpf_trace *t;
    char msg[1024];
    int rc = argus_bpf_attach(pid, BPF_STUB, &t, msg, sizeof msg);
    if (rc != 0) {
        kill(pid, 9);
        fail_msg("attach: %s", msg);
    }
    assert_int_equal(argus_bpf_n_attached(t), 2); /* the stub has 2 of the 5 calls */
    assert_int_equal(write(go[1], "g", 1), 1);
    close(go[1]);
    int st;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        argus_bpf_poll(t);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    argus_bpf_poll(t);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char buf[512] = "";
    ssize_t n = read(out[0], buf, sizeof buf - 1);
    close(out[0]);
    assert_true(n > 0);
    tids ti = {0, 0};
    char *pa = strstr(buf, "thread A "), *pb = strstr(buf, "thread B ");
    assert_true(pa && pb);
    ti.a = strtol(pa + 9, NULL, 10);
    ti.b = strtol(pb + 9, NULL, 10);
    size_t ne;
    const argus_bpf_event *ev = argus_bpf_events(t, &ne);
    int la = 0, lb = 0, sa = 0, sb = 0, ra = 0, rb = 0, calls = 0;
    uint64_t open_t[2] = {0, 0}, left_at[2] = {0, 0}, off_in_sync[2] = {0, 0};
    int in_sync[2] = {0, 0}, switches_in_sync = 0, sched = argus_bpf_sched(t) == NULL;
    for (size_t i = 0; i < ne; i++) {
        assert_int_equal(ev[i].pid, (uint32_t)pid);
        int isa = (long)ev[i].tid == ti.a, isb = (long)ev[i].tid == ti.b, k = isa ? 0 : 1;
        if (ev[i].call == ARGUS_BPF_SCHED) {
            /* The main thread also sleeps in pthread_join and exec: only
             * the switches inside a sync are judged. */
            assert_true(sched);
            if (!ev[i].ret) {
                left_at[k] = ev[i].t_ns;
            } else if (left_at[k] && in_sync[k] && (isa || isb)) {
                off_in_sync[k] += ev[i].t_ns - left_at[k];
                switches_in_sync++;
            }
            continue;
        }
        calls++;
        assert_true(isa || isb);
        if (ev[i].call == ARGUS_BPF_LAUNCH) {
            assert_int_equal(ev[i].ret, 0);
            isa ? la++ : lb++;
        } else {
            assert_int_equal(ev[i].call, ARGUS_BPF_STREAM_SYNC);
            if (!ev[i].ret) {
                isa ? sa++ : sb++;
                open_t[k] = ev[i].t_ns;
                in_sync[k] = 1;
                off_in_sync[k] = 0;
            } else {
                isa ? ra++ : rb++;
                uint64_t wait = ev[i].t_ns - open_t[k];
                if (wait < 2000000)
                    fail_msg("a sync's traced wait is %llu ns, under the stub's 2 ms",
                             (unsigned long long)wait);
                /* The 2 ms sleep takes the thread off its CPU, within the call. */
                if (sched && (off_in_sync[k] == 0 || off_in_sync[k] > wait))
                    fail_msg("a sync of %llu ns holds %llu ns off the CPU",
                             (unsigned long long)wait, (unsigned long long)off_in_sync[k]);
                in_sync[k] = 0;
            }
        }
    }
    assert_int_equal(la, 5);
    assert_int_equal(lb, 3);
    assert_int_equal(sa, 2);
    assert_int_equal(ra, 2);
    assert_int_equal(sb, 1);
    assert_int_equal(rb, 1);
    assert_int_equal(calls, 14);
    if (sched)
        assert_true(switches_in_sync >= 3);
    else
        printf("# scheduling not traced: %s\n", argus_bpf_sched(t));
    assert_int_equal(argus_bpf_lost(t), 0);
    argus_bpf_close(t);
}

static void test_cli(void **state)
{
    (void)state;
    if (!usable())
        skip();
    char dir[] = "/tmp/argus_bpf_test.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[1024], path[256];
    snprintf(path, sizeof path, "%s/ev.jsonl", dir);
    snprintf(cmd, sizeof cmd, "%s run -o %s --lib %s -- %s > %s/stdout", ARGUS_BPF, path, BPF_STUB,
             BPF_TARGET, dir);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    int threads = 0, events = 0, header = 0;
    unsigned long long launches_total = 0, syncs_total = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned tid;
        unsigned long long l, s, w;
        if (strstr(line, "\"schema\":\"argus.bpf.events\"")) {
            header = 1;
            assert_non_null(strstr(line, "\"attached\":2,"));
            assert_non_null(strstr(line, "\"lost\":0,\"complete\":true"));
        } else if (sscanf(line, "{\"thread\":%u,\"launches\":%llu,\"syncs\":%llu,\"sync_wait_ns\":%llu,",
                          &tid, &l, &s, &w) == 4) {
            threads++;
            launches_total += l;
            syncs_total += s;
            assert_true(w >= s * 2000000ull);
            assert_true((l == 5 && s == 2) || (l == 3 && s == 1));
        } else if (strstr(line, "\"t_ns\"") && strstr(line, "\"call\":\"cu")) {
            events++;
        }
    }
    fclose(f);
    assert_int_equal(header, 1);
    assert_int_equal(threads, 2);
    assert_int_equal(events, 14);
    assert_int_equal(launches_total, 8);
    assert_int_equal(syncs_total, 3);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_bad_input(void **state)
{
    (void)state;
    if (!usable())
        skip();
    argus_bpf_trace *t = NULL;
    char msg[1024];
    /* A library with none of the calls (this test program). */
    assert_int_equal(argus_bpf_attach(getpid(), BPF_TARGET, &t, msg, sizeof msg), ARGUS_EINVAL);
    assert_null(t);
    assert_non_null(strstr(msg, "has none of cuLaunchKernel"));
    assert_int_equal(argus_bpf_attach(getpid(), "/nonexistent/libcuda.so.1", &t, msg, sizeof msg),
                     ARGUS_EIO);
    assert_non_null(strstr(msg, "cannot open"));
    /* A process that is gone. */
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    assert_int_equal(argus_bpf_attach(pid, BPF_STUB, &t, msg, sizeof msg), ARGUS_EINVAL);
    assert_non_null(strstr(msg, "no process"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_here),        cmocka_unit_test(test_probe_without_caps),
        cmocka_unit_test(test_messages),          cmocka_unit_test(test_symbol_offset),
        cmocka_unit_test(test_trace),             cmocka_unit_test(test_cli),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
