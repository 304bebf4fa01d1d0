/*
 * Tracing a process's driver calls with BPF (include/argus/bpf.h): a uprobe
 * per call of ARGUS_BPF_CALLS on the target's driver library, and a
 * uretprobe where the call waits, each running a small BPF program that
 * writes (CLOCK_MONOTONIC ns, pid/tid, call) into one BPF ring buffer that
 * this process maps and reads; and a program on the sched_switch raw
 * tracepoint (no tracefs needed) that writes the target's threads leaving
 * a CPU (the current task) and regaining one (the incoming task, whose pid
 * and tgid it reads at task_struct's offset from the kernel's BTF).
 *
 * Why raw bpf() and perf_event_open() and not libbpf: the programs are 19
 * instructions, assembled here, so the backend needs neither clang's BPF
 * target nor libbpf's headers on the machines that build it (Debian's
 * libbpf1 is a runtime library only; libbpf-dev and a BPF toolchain are
 * one more install on every developer's machine and CI for two programs of
 * this size). The uprobe PMU (perf_event_open type from
 * /sys/bus/event_source/devices/uprobe) takes the library's path and the
 * symbol's file offset, so no tracefs is needed.
 *
 * Tested on Linux 6.18 (this machine, root) with a stand-in driver library
 * (tests/argus/bpf_target.c, ctest argus_bpf); the kernel interfaces are
 * those of Linux 5.8 and newer (BPF ring buffer, CAP_BPF/CAP_PERFMON).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "argus/argus.h"
#include "argus/bpf.h"
#include "argus_internal.h"

#define RING_BYTES (1u << 22) /* 4 MiB: 174,762 events of 24 bytes */
#define REC_BYTES 24u

const char *argus_bpf_call_name(int call)
{
    static const char *const names[] = {
#define ARGUS_X_CALL(name, sym, ret) sym,
        ARGUS_BPF_CALLS(ARGUS_X_CALL)
#undef ARGUS_X_CALL
    };
    if (call == ARGUS_BPF_SCHED)
        return "sched_switch";
    return call >= 0 && call < ARGUS_BPF_NCALLS ? names[call] : "?";
}

struct argus_bpf_trace {
    int ring_fd, lost_fd;
    int prog_fd[ARGUS_BPF_NCALLS][2];
    int ev_fd[ARGUS_BPF_NCALLS][2];
    int n_attached;
    int sched_prog, sched_fd; /* the sched_switch program and its attachment, -1 none */
    char sched_why[256];      /* why sched_switch is not traced ("" when it is) */
    void *cons, *prod; /* the ring's consumer page and producer page + data */
    size_t page;
    argus_bpf_event *ev;
    size_t n_ev, cap_ev;
};

static long sys_bpf(int cmd, union bpf_attr *a)
{
    return syscall(SYS_bpf, cmd, a, sizeof(*a));
}

/* ---- the ELF symbol ------------------------------------------------------- */

int argus_bpf_symbol_offset(const char *path, const char *sym, uint64_t *off, char *msg,
                            size_t msglen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot open: %s", path, strerror(e));
    }
    size_t len = (size_t)st.st_size;
    const unsigned char *b =
        len >= sizeof(Elf64_Ehdr) ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (b == MAP_FAILED)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "%s: not an ELF file", path);
    int rc = ARGUS_ENOREGION;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > len ||
        eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > len) {
        rc = argus__fail(ARGUS_EINVAL, msg, msglen, "%s: not a 64-bit ELF shared object", path);
        goto done;
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
    uint64_t vaddr = 0;
    int found = 0;
    for (size_t i = 0; i < eh->e_shnum && !found; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *strs = &sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size > len || strs->sh_offset + strs->sh_size > len)
            break;
        const Elf64_Sym *sy = (const Elf64_Sym *)(b + sh[i].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); k++) {
            if (sy[k].st_name >= strs->sh_size || sy[k].st_value == 0 ||
                ELF64_ST_TYPE(sy[k].st_info) != STT_FUNC)
                continue;
            const char *nm = (const char *)b + strs->sh_offset + sy[k].st_name;
            if (strnlen(nm, strs->sh_size - sy[k].st_name) < strs->sh_size - sy[k].st_name &&
                strcmp(nm, sym) == 0) {
                vaddr = sy[k].st_value;
                found = 1;
                break;
            }
        }
    }
    if (!found) {
        rc = argus__fail(ARGUS_ENOREGION, msg, msglen, "%s: no function %s in its dynamic symbols",
                         path, sym);
        goto done;
    }
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(b + eh->e_phoff);
    for (size_t i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && vaddr >= ph[i].p_vaddr &&
            vaddr < ph[i].p_vaddr + ph[i].p_filesz) {
            *off = vaddr - ph[i].p_vaddr + ph[i].p_offset;
            rc = 0;
            goto done;
        }
    rc = argus__fail(ARGUS_EINVAL, msg, msglen, "%s: %s lies in no loaded segment", path, sym);
done:
    munmap((void *)b, len);
    return rc;
}

/* ---- the program ---------------------------------------------------------- */

#define INSN(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

/* ringbuf_output({ktime, pid_tgid, id}); on failure lost[0] += 1. */
static int load_prog(int ring_fd, int lost_fd, uint32_t id, char *log, size_t loglen)
{
    struct bpf_insn p[] = {
        INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ktime_get_ns),
        INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_0, -24, 0),
        INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid),
        INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_0, -16, 0),
        INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, (int32_t)id),
        INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_1, -8, 0),
        INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, ring_fd),
        INSN(0, 0, 0, 0, 0),
        INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
        INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -24),
        INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, REC_BYTES),
        INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, BPF_RB_NO_WAKEUP), /* we poll */
        INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ringbuf_output),
        INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 9, 0), /* delivered: to exit */
        INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -28, 0), /* key 0 */
        INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, lost_fd),
        INSN(0, 0, 0, 0, 0),
        INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
        INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -28),
        INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
        INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 2, 0),
        INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1),
        INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1, 0, BPF_ADD),
        INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
        INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
    };
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_KPROBE;
    a.insns = (uint64_t)(uintptr_t)p;
    a.insn_cnt = sizeof p / sizeof p[0];
    a.license = (uint64_t)(uintptr_t) "GPL";
    if (log != NULL && loglen > 0) {
        log[0] = '\0';
        a.log_buf = (uint64_t)(uintptr_t)log;
        a.log_size = (uint32_t)loglen;
        a.log_level = 1;
    }
    return (int)sys_bpf(BPF_PROG_LOAD, &a);
}

/* ---- sched_switch --------------------------------------------------------- */

/* The byte offset of task_struct.pid in this kernel, from its BTF
 * (/sys/kernel/btf/vmlinux); tgid follows pid (both pid_t), so one 8-byte
 * read gives both. 0 or -1. */
static int btf_task_pid_offset(uint32_t *off)
{
    FILE *f = fopen("/sys/kernel/btf/vmlinux", "rb");
    if (f == NULL)
        return -1;
    unsigned char *b = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 1u << 22;
            unsigned char *nb = realloc(b, cap);
            if (nb == NULL) {
                free(b);
                fclose(f);
                return -1;
            }
            b = nb;
        }
        size_t n = fread(b + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    int rc = -1;
    uint32_t h[6];
    if (len < 24 || (memcpy(h, b, 24), (h[0] & 0xffff) != 0xeb9f))
        goto done;
    uint32_t hdr_len = h[1], type_off = h[2], type_len = h[3], str_off = h[4], str_len = h[5];
    if ((uint64_t)hdr_len + type_off + type_len > len || (uint64_t)hdr_len + str_off + str_len > len)
        goto done;
    const unsigned char *t = b + hdr_len + type_off, *end = t + type_len;
    const char *strs = (const char *)b + hdr_len + str_off;
    while (t + 12 <= end) {
        uint32_t name, info, sz;
        memcpy(&name, t, 4);
        memcpy(&info, t + 4, 4);
        memcpy(&sz, t + 8, 4);
        uint32_t kind = (info >> 24) & 0x1f, vlen = info & 0xffff;
        t += 12;
        size_t extra;
        switch (kind) {
        case 1: case 14: case 17: extra = 4; break;            /* INT, VAR, DECL_TAG */
        case 3: extra = 12; break;                             /* ARRAY */
        case 4: case 5: case 15: case 19: extra = 12u * vlen; break; /* STRUCT, UNION, DATASEC, ENUM64 */
        case 6: case 13: extra = 8u * vlen; break;            /* ENUM, FUNC_PROTO */
        default: extra = 0; break;
        }
        if (t + extra > end)
            break;
        if (kind == 4 && name < str_len && strcmp(strs + name, "task_struct") == 0) {
            for (uint32_t m = 0; m < vlen; m++) {
                uint32_t mn, mo;
                memcpy(&mn, t + 12u * m, 4);
                memcpy(&mo, t + 12u * m + 8, 4);
                if (mn < str_len && strcmp(strs + mn, "pid") == 0) {
                    if (info >> 31)
                        mo &= 0xffffff; /* kflag: the low 24 bits are the offset */
                    if (mo % 8 == 0) {
                        *off = mo / 8;
                        rc = 0;
                    }
                    goto done;
                }
            }
        }
        t += extra;
    }
done:
    free(b);
    return rc;
}

/* Appends the 14 instructions that write {ktime, *pid_tgid in r7*, id} to
 * the ring buffer (r7 must hold the pid_tgid; r6-r9 survive the calls). */
static size_t emit_record(struct bpf_insn *p, size_t n, int ring_fd, uint32_t id)
{
    p[n++] = INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_7, -16, 0);
    p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ktime_get_ns);
    p[n++] = INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_0, -24, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, (int32_t)id);
    p[n++] = INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_1, -8, 0);
    p[n++] = INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, ring_fd);
    p[n++] = INSN(0, 0, 0, 0, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -24);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, REC_BYTES);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, BPF_RB_NO_WAKEUP);
    p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ringbuf_output);
    return n;
}

/* A raw sched_switch program: the outgoing task is the current one (its
 * pid_tgid), the incoming one's pid and tgid are read from next (the
 * tracepoint's third argument) at the BTF offset. Events of process tgid
 * only: ARGUS_BPF_SCHED with ret 0 (off the CPU) or 1 (back on). */
static int load_sched(int ring_fd, uint32_t tgid, uint32_t pid_off)
{
    struct bpf_insn p[64];
    size_t n = 0;
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0);
    p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_7, BPF_REG_0, 0, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_7, 0, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_RSH | BPF_K, BPF_REG_1, 0, 0, 32);
    size_t jout = n++; /* if r1 != tgid: skip the "off" record */
    n = emit_record(p, n, ring_fd, ARGUS_BPF_SCHED);
    p[jout] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_1, 0, (int16_t)(n - jout - 1), (int32_t)tgid);
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_3, BPF_REG_6, 16, 0); /* args[2]: next */
    p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, (int32_t)pid_off);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_10, 0, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_1, 0, 0, -40);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, 8);
    p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_probe_read_kernel);
    size_t jerr = n++;
    /* pid then tgid in memory: read as one little-endian word, tgid << 32
     * | pid, the layout of bpf_get_current_pid_tgid's result. */
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_7, BPF_REG_10, -40, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_7, 0, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_RSH | BPF_K, BPF_REG_1, 0, 0, 32);
    size_t jin = n++;
    n = emit_record(p, n, ring_fd, ARGUS_BPF_SCHED | 1u << 8);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
    p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    size_t exit_at = n - 2;
    p[jerr] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, (int16_t)(exit_at - jerr - 1), 0);
    p[jin] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_1, 0, (int16_t)(exit_at - jin - 1), (int32_t)tgid);
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
    a.insns = (uint64_t)(uintptr_t)p;
    a.insn_cnt = (uint32_t)n;
    a.license = (uint64_t)(uintptr_t) "GPL";
    return (int)sys_bpf(BPF_PROG_LOAD, &a);
}

/* Traces the target's threads leaving and regaining a CPU; where the kernel
 * does not allow it, says why in t->sched_why and leaves it out. */
static void attach_sched(argus_bpf_trace *t, int pid)
{
    uint32_t off;
    if (btf_task_pid_offset(&off) != 0) {
        snprintf(t->sched_why, sizeof t->sched_why,
                 "no task_struct.pid in /sys/kernel/btf/vmlinux (a kernel without BTF): "
                 "scheduling is not traced");
        return;
    }
    t->sched_prog = load_sched(t->ring_fd, (uint32_t)pid, off);
    if (t->sched_prog < 0) {
        snprintf(t->sched_why, sizeof t->sched_why,
                 "the sched_switch program was refused: %s: scheduling is not traced",
                 strerror(errno));
        return;
    }
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.raw_tracepoint.name = (uint64_t)(uintptr_t) "sched_switch";
    a.raw_tracepoint.prog_fd = (uint32_t)t->sched_prog;
    t->sched_fd = (int)sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
    if (t->sched_fd < 0)
        snprintf(t->sched_why, sizeof t->sched_why,
                 "attaching to the sched_switch raw tracepoint failed: %s: scheduling is not "
                 "traced",
                 strerror(errno));
}

static int uprobe_type(int *retbit)
{
    FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
    int t = -1;
    if (f != NULL) {
        if (fscanf(f, "%d", &t) != 1)
            t = -1;
        fclose(f);
    }
    *retbit = 0;
    f = fopen("/sys/bus/event_source/devices/uprobe/format/retprobe", "r");
    if (f != NULL) {
        if (fscanf(f, "config:%d", retbit) != 1)
            *retbit = 0;
        fclose(f);
    }
    return t;
}

static int refusal(int e, const char *what, char *msg, size_t msglen)
{
    argus_bpf_caps c;
    argus_bpf_probe(&c);
    char why[512] = "";
    if (!argus_bpf_usable(&c, why, sizeof why))
        return argus__fail(ARGUS_EIO, msg, msglen, "%s failed with %s: %s", what, strerror(e), why);
    return argus__fail(ARGUS_EIO, msg, msglen, "%s failed: %s (errno %d)", what, strerror(e), e);
}

int argus_bpf_attach(int pid, const char *lib, argus_bpf_trace **out, char *msg, size_t msglen)
{
    *out = NULL;
    argus_bpf_trace *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "argus-bpf: out of memory");
    t->ring_fd = t->lost_fd = t->sched_prog = t->sched_fd = -1;
    for (int i = 0; i < ARGUS_BPF_NCALLS; i++)
        t->prog_fd[i][0] = t->prog_fd[i][1] = t->ev_fd[i][0] = t->ev_fd[i][1] = -1;
    t->page = (size_t)sysconf(_SC_PAGESIZE);
    int rc = 0;
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_type = BPF_MAP_TYPE_RINGBUF;
    a.max_entries = RING_BYTES;
    t->ring_fd = (int)sys_bpf(BPF_MAP_CREATE, &a);
    if (t->ring_fd < 0) {
        rc = refusal(errno, "bpf(BPF_MAP_CREATE) of the ring buffer", msg, msglen);
        goto fail;
    }
    memset(&a, 0, sizeof a);
    a.map_type = BPF_MAP_TYPE_ARRAY;
    a.key_size = 4;
    a.value_size = 8;
    a.max_entries = 1;
    t->lost_fd = (int)sys_bpf(BPF_MAP_CREATE, &a);
    if (t->lost_fd < 0) {
        rc = refusal(errno, "bpf(BPF_MAP_CREATE) of the lost counter", msg, msglen);
        goto fail;
    }
    t->cons = mmap(NULL, t->page, PROT_READ | PROT_WRITE, MAP_SHARED, t->ring_fd, 0);
    t->prod = mmap(NULL, t->page + 2 * (size_t)RING_BYTES, PROT_READ, MAP_SHARED, t->ring_fd,
                   (off_t)t->page);
    if (t->cons == MAP_FAILED || t->prod == MAP_FAILED) {
        int e = errno;
        if (t->cons == MAP_FAILED)
            t->cons = NULL;
        if (t->prod == MAP_FAILED)
            t->prod = NULL;
        rc = argus__fail(ARGUS_EIO, msg, msglen, "argus-bpf: mapping the ring buffer failed: %s",
                         strerror(e));
        goto fail;
    }
    int retbit, type = uprobe_type(&retbit);
    if (type < 0) {
        rc = argus__fail(ARGUS_EIO, msg, msglen,
                         "the kernel has no uprobe events (/sys/bus/event_source/devices/uprobe "
                         "is missing: CONFIG_UPROBE_EVENTS): the driver calls cannot be traced");
        goto fail;
    }
    static const int waits[] = {
#define ARGUS_X_CALL(name, sym, ret) ret,
        ARGUS_BPF_CALLS(ARGUS_X_CALL)
#undef ARGUS_X_CALL
    };
    char emsg[512];
    for (int c = 0; c < ARGUS_BPF_NCALLS; c++) {
        uint64_t off;
        int src = argus_bpf_symbol_offset(lib, argus_bpf_call_name(c), &off, emsg, sizeof emsg);
        if (src == ARGUS_ENOREGION)
            continue;
        if (src != 0) {
            rc = argus__fail(src, msg, msglen, "%s", emsg);
            goto fail;
        }
        for (int r = 0; r <= waits[c]; r++) {
            static char vlog[4096];
            t->prog_fd[c][r] = load_prog(t->ring_fd, t->lost_fd, (uint32_t)(c | r << 8), vlog,
                                         sizeof vlog);
            if (t->prog_fd[c][r] < 0) {
                int e = errno;
                if (e == EPERM || e == EACCES)
                    rc = refusal(e, "bpf(BPF_PROG_LOAD)", msg, msglen);
                else
                    rc = argus__fail(ARGUS_EIO, msg, msglen,
                                     "the kernel refused the probe program for %s: %s; "
                                     "verifier: %.300s",
                                     argus_bpf_call_name(c), strerror(e), vlog);
                goto fail;
            }
            struct perf_event_attr pa;
            memset(&pa, 0, sizeof pa);
            pa.size = sizeof pa;
            pa.type = (uint32_t)type;
            pa.config = r ? 1ull << retbit : 0;
            pa.config1 = (uint64_t)(uintptr_t)lib;
            pa.config2 = off;
            pa.sample_period = 1;
            pa.wakeup_events = 1;
            int fd = (int)syscall(SYS_perf_event_open, &pa, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
            if (fd < 0) {
                int e = errno;
                rc = e == ESRCH ? argus__fail(ARGUS_EINVAL, msg, msglen,
                                              "no process %d to trace (ESRCH)", pid)
                     : e == EPERM || e == EACCES
                         ? refusal(e, "perf_event_open of a uprobe", msg, msglen)
                         : argus__fail(ARGUS_EIO, msg, msglen,
                                       "perf_event_open of the %s on %s+0x%llx failed: %s",
                                       r ? "uretprobe" : "uprobe", argus_bpf_call_name(c),
                                       (unsigned long long)off, strerror(e));
                goto fail;
            }
            t->ev_fd[c][r] = fd;
            if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, t->prog_fd[c][r]) != 0 ||
                ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
                rc = argus__fail(ARGUS_EIO, msg, msglen, "attaching the probe of %s failed: %s",
                                 argus_bpf_call_name(c), strerror(errno));
                goto fail;
            }
        }
        t->n_attached++;
    }
    if (t->n_attached == 0) {
        rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                         "%s has none of cuLaunchKernel, cuLaunchKernelEx, cuStreamSynchronize, "
                         "cuCtxSynchronize, cuEventSynchronize: is it the driver library "
                         "(libcuda.so.1) the target loads?",
                         lib);
        goto fail;
    }
    attach_sched(t, pid);
    *out = t;
    return 0;
fail:
    argus_bpf_close(t);
    return rc;
}

size_t argus_bpf_poll(argus_bpf_trace *t)
{
    volatile uint64_t *cpos = t->cons, *ppos = t->prod;
    const unsigned char *data = (const unsigned char *)t->prod + t->page;
    uint64_t c = __atomic_load_n(cpos, __ATOMIC_ACQUIRE), added = 0;
    uint64_t p = __atomic_load_n(ppos, __ATOMIC_ACQUIRE);
    while (c < p) {
        const uint32_t *hdr = (const uint32_t *)(data + (c & (RING_BYTES - 1)));
        uint32_t len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
        if (len & BPF_RINGBUF_BUSY_BIT)
            break;
        uint32_t size = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
        if (!(len & BPF_RINGBUF_DISCARD_BIT) && size == REC_BYTES &&
            argus__grow((void **)&t->ev, &t->cap_ev, t->n_ev + 1, sizeof(*t->ev)) == 0) {
            uint64_t rec[3];
            memcpy(rec, (const unsigned char *)hdr + BPF_RINGBUF_HDR_SZ, sizeof rec);
            t->ev[t->n_ev++] = (argus_bpf_event){rec[0], (uint32_t)(rec[1] >> 32), (uint32_t)rec[1],
                                                 (uint32_t)(rec[2] & 0xff),
                                                 (uint32_t)((rec[2] >> 8) & 1)};
            added++;
        }
        c += (BPF_RINGBUF_HDR_SZ + size + 7) & ~7ull;
        __atomic_store_n(cpos, c, __ATOMIC_RELEASE);
    }
    return (size_t)added;
}

const argus_bpf_event *argus_bpf_events(const argus_bpf_trace *t, size_t *n)
{
    *n = t->n_ev;
    return t->ev;
}

uint64_t argus_bpf_lost(const argus_bpf_trace *t)
{
    uint32_t key = 0;
    uint64_t v = 0;
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_fd = (uint32_t)t->lost_fd;
    a.key = (uint64_t)(uintptr_t)&key;
    a.value = (uint64_t)(uintptr_t)&v;
    return sys_bpf(BPF_MAP_LOOKUP_ELEM, &a) == 0 ? v : 0;
}

int argus_bpf_n_attached(const argus_bpf_trace *t)
{
    return t->n_attached;
}

const char *argus_bpf_sched(const argus_bpf_trace *t)
{
    return t->sched_fd >= 0 ? NULL : t->sched_why;
}

void argus_bpf_close(argus_bpf_trace *t)
{
    if (t == NULL)
        return;
    for (int i = 0; i < ARGUS_BPF_NCALLS; i++)
        for (int r = 0; r < 2; r++) {
            if (t->ev_fd[i][r] >= 0)
                close(t->ev_fd[i][r]);
            if (t->prog_fd[i][r] >= 0)
                close(t->prog_fd[i][r]);
        }
    if (t->cons)
        munmap(t->cons, t->page);
    if (t->prod)
        munmap(t->prod, t->page + 2 * (size_t)RING_BYTES);
    if (t->sched_fd >= 0)
        close(t->sched_fd);
    if (t->sched_prog >= 0)
        close(t->sched_prog);
    if (t->ring_fd >= 0)
        close(t->ring_fd);
    if (t->lost_fd >= 0)
        close(t->lost_fd);
    free(t->ev);
    free(t);
}
