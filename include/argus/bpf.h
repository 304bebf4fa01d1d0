/*
 * Argus's BPF system-tracing backend (issue 13; docs/argus-backends.md):
 * whether this machine lets a process load BPF programs and attach them
 * where the backend needs (uprobes on the driver library of the target
 * process, the sched_switch tracepoint), and, where it does not, why and
 * what to change. The planner's capability probe (argus plan) calls it.
 *
 * Every function returns 0 or a negative ARGUS_E* code; the sentences name
 * the errno, the capability missing and the fix.
 */
#ifndef ARGUS_BPF_H
#define ARGUS_BPF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the probe found. */
typedef struct argus_bpf_caps {
    int prog_load;      /* a kprobe-type program (what uprobes run) loaded */
    int load_errno;     /* its errno when it did not */
    int uprobe_pmu;     /* /sys/bus/event_source/devices/uprobe/type exists */
    int sched_switch;   /* the kernel's BTF is readable (the sched_switch program needs it) */
    uint64_t cap_eff;   /* this process's effective capabilities (/proc/self/status) */
    int unpriv_disabled; /* kernel.unprivileged_bpf_disabled (-1 unknown) */
} argus_bpf_caps;

/* Probes this process: tries BPF_PROG_LOAD of a two-instruction program and
 * closes it; reads the uprobe PMU, the kernel BTF and the capabilities. Never
 * fails (what it cannot read counts as missing). */
void argus_bpf_probe(argus_bpf_caps *c);

/* The verdict on c: 1 when system tracing can run (a program loads and
 * uprobes exist; sched_switch missing only narrows it, said in why), 0
 * when not, with the reason and the fix in why. */
int argus_bpf_usable(const argus_bpf_caps *c, char *why, size_t whylen);

/* ---- tracing the driver calls of a process -------------------------------- */

/* The driver entry points traced (entry, and return for the ones that wait:
 * their wait is the return's time minus the entry's), one list for the
 * enum, the names and the attach loop. */
#define ARGUS_BPF_CALLS(X)                                                   \
    X(ARGUS_BPF_LAUNCH, "cuLaunchKernel", 0)                                 \
    X(ARGUS_BPF_LAUNCH_EX, "cuLaunchKernelEx", 0)                            \
    X(ARGUS_BPF_STREAM_SYNC, "cuStreamSynchronize", 1)                       \
    X(ARGUS_BPF_CTX_SYNC, "cuCtxSynchronize", 1)                             \
    X(ARGUS_BPF_EVENT_SYNC, "cuEventSynchronize", 1)

enum argus_bpf_call {
#define ARGUS_X_CALL(name, sym, ret) name,
    ARGUS_BPF_CALLS(ARGUS_X_CALL)
#undef ARGUS_X_CALL
    ARGUS_BPF_NCALLS,
    /* Not a call: a thread of the target left the CPU (ret 0) or got it
     * back (ret 1), from the sched_switch raw tracepoint. */
    ARGUS_BPF_SCHED = ARGUS_BPF_NCALLS
};
const char *argus_bpf_call_name(int call);

typedef struct argus_bpf_event {
    uint64_t t_ns;     /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
    uint32_t pid, tid; /* the process and the calling (or scheduled) thread */
    uint32_t call;     /* enum argus_bpf_call, or ARGUS_BPF_SCHED */
    uint32_t ret;      /* 0 entry (off the CPU), 1 return (back on) */
} argus_bpf_event;

typedef struct argus_bpf_trace argus_bpf_trace;

/* Attaches a uprobe (and a uretprobe where the call waits) to each call of
 * ARGUS_BPF_CALLS found in lib's dynamic symbols, for process pid only, and
 * a program on the sched_switch raw tracepoint that records pid's threads
 * leaving and regaining a CPU (needs the kernel's BTF for task_struct.pid;
 * where it cannot be had the calls are traced alone: argus_bpf_sched).
 * Calls the library lacks are skipped (n_attached says how many held); a
 * library with none of them is ARGUS_EINVAL. Errors name the call, the
 * errno and the fix (argus_bpf_usable's sentences for a kernel that
 * refuses). */
int argus_bpf_attach(int pid, const char *lib, argus_bpf_trace **out, char *msg, size_t msglen);
/* Moves what the probes recorded so far into the trace's event list;
 * returns how many were added. */
size_t argus_bpf_poll(argus_bpf_trace *t);
/* The events in order of arrival, how many were lost (a full buffer), the
 * calls attached. */
const argus_bpf_event *argus_bpf_events(const argus_bpf_trace *t, size_t *n);
uint64_t argus_bpf_lost(const argus_bpf_trace *t);
int argus_bpf_n_attached(const argus_bpf_trace *t);
/* NULL when scheduling is traced, else why not. */
const char *argus_bpf_sched(const argus_bpf_trace *t);
/* Detaches and frees (every descriptor closed). */
void argus_bpf_close(argus_bpf_trace *t);

/* The file offset of symbol sym in the ELF shared object at path (its
 * .dynsym), for a uprobe. ARGUS_ENOREGION when it is not there. */
int argus_bpf_symbol_offset(const char *path, const char *sym, uint64_t *off, char *msg,
                            size_t msglen);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_BPF_H */
