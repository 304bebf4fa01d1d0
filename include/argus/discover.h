/*
 * Argus discovery: the asynchronous operations inside a kernel's regions,
 * and forced-completion probe variants of the kernel (issue 13, part 2;
 * docs/argus-discover.md).
 *
 *   argus_discover_ptx    finds, in a kernel's PTX, every cp.async,
 *                         cp.async.bulk.tensor (TMA) and wgmma.mma_async,
 *                         the innermost Argus region open at it (from the
 *                         markers' record stores), its completion
 *                         mechanism and whether it sits in a loop
 *   argus_discover_sass   cross-checks the counts against the SASS listing
 *                         (cuobjdump -sass) of the same kernel
 *   argus_probe_ptx       writes the PTX of a variant in which one
 *                         operation is forced to complete right after its
 *                         issue, at one execution (iteration) only
 *
 * Operation IDs are stable: the region's ID (a hash of its name and its
 * parent, include/argus/record.h) and the operation's ordinal among that
 * region's asynchronous operations in program order, so the same source
 * gives the same IDs in every build and every probe variant of it.
 *
 * Why PTX rewriting rather than a macro hook in the kernel source: it
 * works on kernels whose source has no hook (a library's, a generated
 * one), needs only the PTX that nvcc -ptx (or cuobjdump -ptx) gives, and
 * a variant differs from its base by exactly the inserted lines, which a
 * test can check. Tested on nvcc 13.0's PTX (ISA 9.0) for sm_90/sm_90a.
 *
 * Every function that can fail returns 0 or a negative ARGUS_E* code
 * (argus_strerror) and writes a sentence into msg that names the line,
 * the problem and the fix.
 */
#ifndef ARGUS_DISCOVER_H
#define ARGUS_DISCOVER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "argus.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of asynchronous operation: name, how the program learns it has
 * completed, and what a probe inserts to force that completion. */
#define ARGUS_ASYNC_KINDS(X)                                                                       \
    X(ARGUS_ASYNC_CP_ASYNC, "cp.async", "cp.async.commit_group/wait_group", "cp.async.wait_all")   \
    X(ARGUS_ASYNC_TMA, "tma", "mbarrier complete_tx (arrive.expect_tx, try_wait)",                 \
      "mbarrier.try_wait on the state of the phase's arrive")                                      \
    X(ARGUS_ASYNC_WGMMA, "wgmma", "wgmma.commit_group/wait_group",                                 \
      "wgmma.wait_group 0 after the commit_group that issues it")

enum argus_async_kind {
#define ARGUS_X_AKIND(name, str, completion, forced) name,
    ARGUS_ASYNC_KINDS(ARGUS_X_AKIND)
#undef ARGUS_X_AKIND
        ARGUS_ASYNC_NKINDS
};

const char *argus_async_kind_name(int kind);
const char *argus_async_completion(int kind);
const char *argus_async_forced(int kind);

/* An operation's ID: its region's 28-bit ID and its ordinal (16 bits). */
#define ARGUS_OP_ID(region, ordinal) (((uint64_t)(region) << 16) | ((uint64_t)(ordinal)&0xffffu))
#define ARGUS_OP_REGION(id)          ((uint32_t)((id) >> 16))
#define ARGUS_OP_ORDINAL(id)         ((uint32_t)((id)&0xffffu))

typedef struct argus_async_op {
    uint64_t id;           /* ARGUS_OP_ID(region, ordinal) */
    uint32_t region;       /* innermost open region (0: outside every region) */
    uint32_t ordinal;      /* among the region's async operations, from 0 */
    int kind;              /* enum argus_async_kind */
    char function[128];    /* the .entry or .func holding it */
    uint32_t line;         /* 1-based PTX line of the instruction */
    uint32_t fn_open_line; /* the line of its function body's opening brace */
    /* In a loop: inside the line range of a backward branch (its label's
     * line to the branch's line, the innermost such range). Such an
     * operation runs once per iteration: it is iteration-indexed, and a
     * probe picks one of its executions. */
    int in_loop;
    uint32_t loop_head, loop_end;
    int loop_has_iter; /* an ARGUS_ITER marker lies in that loop */
    /* Completion: the commit that groups it (cp.async, wgmma) and the first
     * wait after that commit (its N in wait_n; wait_all is 0); for TMA the
     * mbarrier operand, the arrive.expect_tx that armed the phase, the
     * first try_wait/test_wait after it, and the last TMA operation on the
     * same barrier in the same basic block (the phase's last issue, after
     * which a forced wait can complete: an earlier point would wait for
     * bytes not yet requested). 0 where not found. */
    uint32_t commit_line;
    uint32_t wait_line;
    int wait_n;
    char barrier[48];
    uint32_t arrive_line;
    uint32_t phase_last_line;
} argus_async_op;

typedef struct argus_discovery {
    argus_async_op *ops;
    size_t n_ops;
    size_t n_markers; /* region begin/end marker stores found */
    size_t n_functions;
    /* Marker structure the text order could not nest (an END with no open
     * BEGIN, a BEGIN never ended in its function): counted, first kept. */
    size_t n_diags;
    char diag[256];
    /* From argus_discover_sass: per kind, the operations in the SASS (LDGSTS,
     * UTMALDG, HGMMA) and whether that equals the PTX count; ptxas may
     * unroll a loop or duplicate a block, which this shows. */
    int sass_seen;
    size_t sass_ops[ARGUS_ASYNC_NKINDS];
    size_t ptx_ops[ARGUS_ASYNC_NKINDS];
} argus_discovery;

/* Parses PTX text (len bytes, need not be NUL-terminated); *out is freed
 * with argus_discovery_free. A PTX with no operations is not an error. */
int argus_discover_ptx(const char *ptx, size_t len, argus_discovery **out, char *msg,
                       size_t msglen);
void argus_discovery_free(argus_discovery *d);

/* Counts the operations of each kind in a SASS listing (cuobjdump -sass
 * or nvdisasm text) and records them beside the PTX counts. */
int argus_discover_sass(argus_discovery *d, const char *sass, size_t len, char *msg, size_t msglen);

/* The index of the operation with that ID, or -1. */
long argus_discovery_find(const argus_discovery *d, uint64_t id);
/* "0x%07x.%u" (region ID, ordinal); the inverse parses it. */
int argus_op_id_format(uint64_t id, char *buf, size_t len);
int argus_op_id_parse(const char *s, uint64_t *id);

/* One line per operation: ID, region (its registry name where reg has
 * it), kind, function, line, loop, completion; then the SASS counts. */
int argus_discovery_write(const argus_discovery *d, const argus_registry *reg, FILE *f);

/* The PTX of a probe variant: the operation `op_id` of d (discovered on
 * this same PTX) is forced to complete right after its issue at its
 * `iter`-th execution in each thread (from 0; in a loop that runs the
 * operation once per iteration, the iteration), and at no other. What is
 * inserted: a per-thread execution counter (one register, zeroed at the
 * function's start, incremented where the operation issues) and, under
 * `counter == iter`, argus_async_forced(kind): for cp.async right after
 * the operation; for wgmma after the commit_group that issues its group;
 * for TMA after the phase's last issue, with the phase's arrive.expect_tx
 * made to keep its state.
 * Every inserted line carries the comment "// argus-probe". *out is
 * malloc'ed and NUL-terminated. ARGUS_ENOREGION: no such operation;
 * ARGUS_EINVAL: the operation cannot be forced (a TMA operation without
 * an arrive.expect_tx on its barrier before it, a wgmma never committed)
 * or the PTX is not the one discovered, with the reason. */
int argus_probe_ptx(const char *ptx, size_t len, const argus_discovery *d, uint64_t op_id,
                    uint32_t iter, char **out, size_t *out_len, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif /* ARGUS_DISCOVER_H */
