/*
 * The BPF capability probe (include/argus/bpf.h). It asks the kernel rather
 * than guessing from the user ID: a container may run as root without
 * CAP_BPF (or with a seccomp filter that refuses bpf()), and a
 * non-root process may hold CAP_BPF and CAP_PERFMON. Tested on Linux 6.18
 * (this machine: root, every program type loads, kernel BTF present) and,
 * with the effective capabilities dropped, the EPERM path (ctest
 * argus_bpf_probe).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "argus/bpf.h"

/* Capability numbers (linux/capability.h; CAP_PERFMON and CAP_BPF are
 * Linux 5.8's, which older headers lack). */
#define CAPN_SYS_ADMIN 21
#define CAPN_PERFMON 38
#define CAPN_BPF 39

void argus_bpf_probe(argus_bpf_caps *c)
{
    memset(c, 0, sizeof(*c));
    c->unpriv_disabled = -1;
    /* r0 = 0; exit: the smallest program the verifier accepts. */
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
    if (fd >= 0) {
        c->prog_load = 1;
        close((int)fd);
    } else {
        c->load_errno = errno;
    }
    struct stat st;
    c->uprobe_pmu = stat("/sys/bus/event_source/devices/uprobe/type", &st) == 0;
    /* The sched_switch program reads the incoming task's pid at its BTF
     * offset (bpf_trace.c); the raw tracepoint itself needs no tracefs. */
    c->sched_switch = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
    FILE *f = fopen("/proc/self/status", "r");
    if (f != NULL) {
        char line[256];
        while (fgets(line, sizeof line, f) != NULL)
            if (strncmp(line, "CapEff:", 7) == 0)
                c->cap_eff = strtoull(line + 7, NULL, 16);
        fclose(f);
    }
    f = fopen("/proc/sys/kernel/unprivileged_bpf_disabled", "r");
    if (f != NULL) {
        if (fscanf(f, "%d", &c->unpriv_disabled) != 1)
            c->unpriv_disabled = -1;
        fclose(f);
    }
}

static int has_cap(const argus_bpf_caps *c, int n)
{
    return (c->cap_eff >> n) & 1u;
}

int argus_bpf_usable(const argus_bpf_caps *c, char *why, size_t whylen)
{
    int n = 0;
    if (!c->prog_load) {
        int e = c->load_errno;
        if (e == EPERM || e == EACCES) {
            char missing[64] = "";
            if (!has_cap(c, CAPN_BPF) && !has_cap(c, CAPN_SYS_ADMIN))
                strcat(missing, "CAP_BPF");
            if (!has_cap(c, CAPN_PERFMON) && !has_cap(c, CAPN_SYS_ADMIN))
                strcat(missing, missing[0] ? " and CAP_PERFMON" : "CAP_PERFMON");
            if (missing[0])
                n = snprintf(why, whylen,
                             "BPF programs cannot be loaded here: bpf(BPF_PROG_LOAD) failed with "
                             "%s (%s): this process lacks %s (effective capabilities 0x%llx) and "
                             "kernel.unprivileged_bpf_disabled is %d; run as root, or grant "
                             "them (setcap cap_bpf,cap_perfmon+ep), or in a container add "
                             "--cap-add BPF --cap-add PERFMON",
                             e == EPERM ? "EPERM" : "EACCES", strerror(e), missing,
                             (unsigned long long)c->cap_eff, c->unpriv_disabled);
            else
                n = snprintf(why, whylen,
                             "BPF programs cannot be loaded here: bpf(BPF_PROG_LOAD) failed with "
                             "%s (%s) although this process holds CAP_BPF and CAP_PERFMON: a "
                             "seccomp filter or a security module (lockdown, SELinux) refuses "
                             "bpf(); allow the bpf system call for this process",
                             e == EPERM ? "EPERM" : "EACCES", strerror(e));
        } else if (e == ENOSYS) {
            n = snprintf(why, whylen,
                         "BPF programs cannot be loaded here: the kernel has no bpf() system call "
                         "(ENOSYS: built without CONFIG_BPF_SYSCALL); use a kernel with BPF");
        } else {
            n = snprintf(why, whylen,
                         "BPF programs cannot be loaded here: bpf(BPF_PROG_LOAD) of a kprobe "
                         "program failed with errno %d (%s); the kernel may lack "
                         "CONFIG_BPF_EVENTS",
                         e, strerror(e));
        }
        (void)n;
        return 0;
    }
    if (!c->uprobe_pmu) {
        snprintf(why, whylen,
                 "BPF programs load, but the kernel has no uprobe events "
                 "(/sys/bus/event_source/devices/uprobe/type is missing: CONFIG_UPROBE_EVENTS), "
                 "so the driver calls of the target cannot be traced");
        return 0;
    }
    if (!c->sched_switch)
        snprintf(why, whylen,
                 "uprobes on the driver's calls work; the kernel has no kernel BTF "
                 "(/sys/kernel/btf/vmlinux: CONFIG_DEBUG_INFO_BTF) for the sched_switch "
                 "program to find task_struct.pid, so host-thread scheduling is left out");
    else if (whylen)
        why[0] = '\0';
    return 1;
}
