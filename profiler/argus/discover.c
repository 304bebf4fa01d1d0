/*
 * Argus discovery: asynchronous operations in a kernel's PTX, by region,
 * and forced-completion probe variants (include/argus/discover.h,
 * docs/argus-discover.md).
 *
 * Why PTX and a line scanner: PTX is the last text form of a kernel that
 * still has one instruction per source-level asynchronous operation (ptxas
 * may unroll or duplicate code in SASS, which argus_discover_sass shows),
 * the Argus markers are recognisable in it (each is an inline-PTX block
 * that stores the record `{argus_l, %rN}` whose high word %rN was set from
 * a constant holding the kind and region ID, region.cuh), and nvcc prints
 * one instruction per line. A full PTX parser would buy nothing here: the
 * scanner reads opcodes, labels, branches, braces and the few operands it
 * needs. Regions nest by text order, which for code with structured
 * control flow is the source order (a marker is volatile asm, which the
 * compiler neither reorders with another nor drops).
 *
 * Tested on the PTX of nvcc 13.0 (ISA 9.0) for sm_90 and sm_90a
 * (tests/argus/async_*.cu; tests/argus/test_discover.c). Other compilers'
 * PTX (Triton's, cuobjdump -ptx) has the same instruction forms; a marker
 * whose high word is not a visible constant is not recognised (counted in
 * the diagnostics when its END cannot be matched).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/discover.h"
#include "argus_internal.h"

static const char *const kind_names[] = {
#define ARGUS_X_AKIND(name, str, completion, forced) str,
    ARGUS_ASYNC_KINDS(ARGUS_X_AKIND)
#undef ARGUS_X_AKIND
};
static const char *const kind_completion[] = {
#define ARGUS_X_AKIND(name, str, completion, forced) completion,
    ARGUS_ASYNC_KINDS(ARGUS_X_AKIND)
#undef ARGUS_X_AKIND
};
static const char *const kind_forced[] = {
#define ARGUS_X_AKIND(name, str, completion, forced) forced,
    ARGUS_ASYNC_KINDS(ARGUS_X_AKIND)
#undef ARGUS_X_AKIND
};

const char *argus_async_kind_name(int kind)
{
    return kind >= 0 && kind < ARGUS_ASYNC_NKINDS ? kind_names[kind] : "unknown";
}
const char *argus_async_completion(int kind)
{
    return kind >= 0 && kind < ARGUS_ASYNC_NKINDS ? kind_completion[kind] : "unknown";
}
const char *argus_async_forced(int kind)
{
    return kind >= 0 && kind < ARGUS_ASYNC_NKINDS ? kind_forced[kind] : "unknown";
}

/* What a line of a function body is, as far as discovery cares. */
enum ev_type {
    EV_OP,        /* an asynchronous operation (kind) */
    EV_MARK,      /* an Argus record store: kind in `sub`, ID in `value` */
    EV_LABEL,     /* a label (text: its name) */
    EV_BRANCH,    /* bra (text: its target) */
    EV_COMMIT,    /* cp.async / wgmma commit_group (sub: op kind) */
    EV_WAIT,      /* cp.async / wgmma wait (sub: op kind, value: N) */
    EV_ARRIVE,    /* mbarrier arrive with expect_tx (text: barrier operand) */
    EV_MBAR_WAIT, /* mbarrier try_wait / test_wait */
};

typedef struct ev {
    int type;
    int sub;
    uint32_t value;
    uint32_t line;
    char text[48];
} ev;

/* A register that holds a marker's high word: its name and value. Only
 * values whose top four bits are a record kind are kept (few per kernel). */
typedef struct regval {
    char reg[24];
    uint32_t value;
} regval;

typedef struct scan {
    ev *evs;
    size_t n_evs, cap_evs;
    regval *regs;
    size_t n_regs, cap_regs;
} scan;

static int push_ev(scan *s, int type, int sub, uint32_t value, uint32_t line, const char *text,
                   size_t text_len)
{
    if (argus__grow((void **)&s->evs, &s->cap_evs, s->n_evs + 1, sizeof(ev)) != 0)
        return ARGUS_ENOMEM;
    ev *e = &s->evs[s->n_evs++];
    e->type = type;
    e->sub = sub;
    e->value = value;
    e->line = line;
    if (text_len >= sizeof e->text)
        text_len = sizeof e->text - 1;
    memcpy(e->text, text ? text : "", text ? text_len : 0);
    e->text[text ? text_len : 0] = '\0';
    return 0;
}

static int set_reg(scan *s, const char *reg, size_t len, uint32_t value)
{
    if (len >= sizeof s->regs[0].reg)
        return 0;
    for (size_t i = s->n_regs; i-- > 0;) {
        if (strlen(s->regs[i].reg) == len && memcmp(s->regs[i].reg, reg, len) == 0) {
            s->regs[i].value = value;
            return 0;
        }
    }
    if (argus__grow((void **)&s->regs, &s->cap_regs, s->n_regs + 1, sizeof(regval)) != 0)
        return ARGUS_ENOMEM;
    memcpy(s->regs[s->n_regs].reg, reg, len);
    s->regs[s->n_regs].reg[len] = '\0';
    s->regs[s->n_regs].value = value;
    s->n_regs++;
    return 0;
}

static int get_reg(const scan *s, const char *reg, size_t len, uint32_t *value)
{
    for (size_t i = s->n_regs; i-- > 0;) {
        if (strlen(s->regs[i].reg) == len && memcmp(s->regs[i].reg, reg, len) == 0) {
            *value = s->regs[i].value;
            return 1;
        }
    }
    return 0;
}

static int is_ident(int c)
{
    return isalnum(c) || c == '_' || c == '$' || c == '%' || c == '.';
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The length of a register or label name at p. */
static size_t ident_len(const char *p)
{
    size_t n = 0;
    while (p[n] && is_ident((unsigned char)p[n]) && p[n] != '.')
        n++;
    return n;
}

/* The marker kinds a 32-bit constant can carry as a record's high word. */
static int marker_kind(uint32_t hi)
{
    uint32_t k = hi >> ARGUS_VALUE_BITS;
    return k >= ARGUS_REC_BEGIN && k <= ARGUS_REC_ROLE ? (int)k : 0;
}

/* The last bracketed operand of an instruction (TMA's mbarrier). */
static size_t last_bracket(const char *ins, const char **start)
{
    const char *open = strrchr(ins, '[');
    if (open == NULL)
        return 0;
    const char *close = strchr(open, ']');
    if (close == NULL)
        return 0;
    *start = open + 1;
    return (size_t)(close - open - 1);
}

/* Scans one instruction (comment stripped, leading space skipped). */
static int scan_ins(scan *s, const char *ins, uint32_t line)
{
    const char *p = ins;
    /* A guard predicate is skipped; the opcode follows. */
    if (*p == '@') {
        while (*p && !isspace((unsigned char)*p))
            p++;
        while (isspace((unsigned char)*p))
            p++;
    }
    const char *op = p;
    size_t op_len = 0;
    while (op[op_len] && !isspace((unsigned char)op[op_len]) && op[op_len] != ';')
        op_len++;
    const char *args = op + op_len;
    while (isspace((unsigned char)*args))
        args++;

    if (starts(op, "mov.u32") || starts(op, "mov.b32")) {
        /* mov.u32 %rN, IMM; a marker's high word, when it is a constant. */
        size_t rl = ident_len(args);
        const char *q = args + rl;
        while (*q == ',' || isspace((unsigned char)*q))
            q++;
        if (rl > 0 && isdigit((unsigned char)*q)) {
            errno = 0;
            char *end;
            unsigned long long v = strtoull(q, &end, 0);
            if (errno == 0 && v <= UINT32_MAX && marker_kind((uint32_t)v))
                return set_reg(s, args, rl, (uint32_t)v);
        }
        return 0;
    }
    if (starts(op, "or.b32")) {
        /* or.b32 %rN, %rI, (ARGUS_REC_ITER << 28): ARGUS_ITER(i). */
        size_t rl = ident_len(args);
        const char *last = strrchr(args, ',');
        if (rl > 0 && last != NULL) {
            unsigned long long v = strtoull(last + 1, NULL, 0);
            if (v <= UINT32_MAX && marker_kind((uint32_t)v) == ARGUS_REC_ITER &&
                ((uint32_t)v & ARGUS_VALUE_MASK) == 0)
                return set_reg(s, args, rl, (uint32_t)v);
        }
        return 0;
    }
    if (starts(op, "st.global.v2.u32")) {
        /* The record store of a marker: {argus_l, %rN}. */
        const char *rec = strstr(args, "{argus_l,");
        if (rec == NULL)
            return 0;
        rec += strlen("{argus_l,");
        while (isspace((unsigned char)*rec))
            rec++;
        uint32_t hi;
        size_t rl = ident_len(rec);
        if (rl > 0 && get_reg(s, rec, rl, &hi))
            return push_ev(s, EV_MARK, marker_kind(hi), hi & ARGUS_VALUE_MASK, line, NULL, 0);
        return 0;
    }
    if (op_len == 3 && memcmp(op, "bra", 3) == 0) {
        return push_ev(s, EV_BRANCH, 0, 0, line, args, ident_len(args));
    }
    if (starts(op, "bra.")) {
        return push_ev(s, EV_BRANCH, 0, 0, line, args, ident_len(args));
    }
    if (starts(op, "cp.async.bulk.tensor") && strstr(op, "mbarrier::complete_tx")) {
        const char *b;
        size_t bl = last_bracket(args, &b);
        return push_ev(s, EV_OP, ARGUS_ASYNC_TMA, 0, line, bl ? b : NULL, bl);
    }
    if (starts(op, "cp.async.commit_group"))
        return push_ev(s, EV_COMMIT, ARGUS_ASYNC_CP_ASYNC, 0, line, NULL, 0);
    if (starts(op, "cp.async.wait_group"))
        return push_ev(s, EV_WAIT, ARGUS_ASYNC_CP_ASYNC, (uint32_t)strtoul(args, NULL, 0), line,
                       NULL, 0);
    if (starts(op, "cp.async.wait_all"))
        return push_ev(s, EV_WAIT, ARGUS_ASYNC_CP_ASYNC, 0, line, NULL, 0);
    if (starts(op, "cp.async.ca.") || starts(op, "cp.async.cg."))
        return push_ev(s, EV_OP, ARGUS_ASYNC_CP_ASYNC, 0, line, NULL, 0);
    if (starts(op, "wgmma.mma_async"))
        return push_ev(s, EV_OP, ARGUS_ASYNC_WGMMA, 0, line, NULL, 0);
    if (starts(op, "wgmma.commit_group"))
        return push_ev(s, EV_COMMIT, ARGUS_ASYNC_WGMMA, 0, line, NULL, 0);
    if (starts(op, "wgmma.wait_group"))
        return push_ev(s, EV_WAIT, ARGUS_ASYNC_WGMMA, (uint32_t)strtoul(args, NULL, 0), line, NULL,
                       0);
    if (starts(op, "mbarrier.") &&
        (starts(op, "mbarrier.arrive") || starts(op, "mbarrier.expect_tx")) &&
        strstr(op, "expect_tx") != NULL && strstr(op, "expect_tx") < op + op_len) {
        const char *b = strchr(args, '[');
        const char *e = b ? strchr(b, ']') : NULL;
        if (b && e)
            return push_ev(s, EV_ARRIVE, 0, 0, line, b + 1, (size_t)(e - b - 1));
        return 0;
    }
    if (starts(op, "mbarrier.try_wait") || starts(op, "mbarrier.test_wait"))
        return push_ev(s, EV_MBAR_WAIT, 0, 0, line, NULL, 0);
    return 0;
}

/* The lines of a text, NUL-terminated in a private copy. */
typedef struct lines {
    char *buf;
    char **line;
    size_t n;
} lines;

static int split_lines(const char *text, size_t len, lines *out)
{
    out->buf = malloc(len + 1);
    if (out->buf == NULL)
        return ARGUS_ENOMEM;
    memcpy(out->buf, text, len);
    out->buf[len] = '\0';
    size_t n = 1;
    for (size_t i = 0; i < len; i++)
        n += out->buf[i] == '\n';
    out->line = malloc(n * sizeof(char *));
    if (out->line == NULL) {
        free(out->buf);
        return ARGUS_ENOMEM;
    }
    out->n = 0;
    char *p = out->buf;
    for (;;) {
        out->line[out->n++] = p;
        char *nl = strchr(p, '\n');
        if (nl == NULL)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    /* A final newline does not start another line. */
    if (out->n > 1 && out->line[out->n - 1][0] == '\0' && len > 0 && text[len - 1] == '\n')
        out->n--;
    return 0;
}

static void free_lines(lines *l)
{
    free(l->buf);
    free(l->line);
}

/* Blanks the parts of a line inside a block comment in place; *in_comment
 * carries an open comment to the next line. */
static void blank_block_comments(char *s, int *in_comment)
{
    for (char *p = s; *p; p++) {
        if (*in_comment) {
            if (p[0] == '*' && p[1] == '/') {
                p[0] = p[1] = ' ';
                p++;
                *in_comment = 0;
            } else {
                *p = ' ';
            }
        } else if (p[0] == '/' && p[1] == '/') {
            return; /* the rest is a line comment (strip removes it) */
        } else if (p[0] == '/' && p[1] == '*') {
            p[0] = p[1] = ' ';
            p++;
            *in_comment = 1;
        }
    }
}

/* Strips a // comment in place and returns the line without leading
 * space. */
static char *strip(char *s)
{
    char *c = strstr(s, "//");
    if (c)
        *c = '\0';
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Region ordinals: the next ordinal of each region seen so far. */
typedef struct ordinal {
    uint32_t region;
    uint32_t next;
} ordinal;

static void add_diag(argus_discovery *d, const char *fn, uint32_t line, const char *what)
{
    if (d->n_diags++ == 0) {
        int n = snprintf(d->diag, sizeof d->diag, "%s, PTX line %" PRIu32 ": %s", fn, line, what);
        if (n < 0)
            d->diag[0] = '\0';
    }
}

static int cmp_label(const void *x, const void *y)
{
    const ev *a = *(const ev *const *)x, *b = *(const ev *const *)y;
    return strcmp(a->text, b->text);
}

/* A loop: a backward branch's target label line and the branch's line. */
typedef struct loop_range {
    uint32_t head, end;
} loop_range;

/* The function's loops, from its labels sorted by name (a kernel can have
 * thousands of labels and branches). */
static int find_loops(const scan *s, loop_range **out, size_t *n_out)
{
    size_t n_labels = 0, n_loops = 0, cap = 0;
    loop_range *loops = NULL;
    const ev **labels = malloc((s->n_evs ? s->n_evs : 1) * sizeof *labels);
    if (labels == NULL)
        return ARGUS_ENOMEM;
    for (size_t i = 0; i < s->n_evs; i++)
        if (s->evs[i].type == EV_LABEL)
            labels[n_labels++] = &s->evs[i];
    qsort(labels, n_labels, sizeof *labels, cmp_label);
    for (size_t i = 0; i < s->n_evs; i++) {
        const ev *b = &s->evs[i];
        if (b->type != EV_BRANCH)
            continue;
        const ev key_ev = *b, *key = &key_ev;
        const ev **hit = bsearch(&key, labels, n_labels, sizeof *labels, cmp_label);
        if (hit == NULL || (*hit)->line >= b->line)
            continue;
        if (argus__grow((void **)&loops, &cap, n_loops + 1, sizeof *loops) != 0) {
            free(labels);
            free(loops);
            return ARGUS_ENOMEM;
        }
        loops[n_loops++] = (loop_range){(*hit)->line, b->line};
    }
    free(labels);
    *out = loops;
    *n_out = n_loops;
    return 0;
}

/* Turns one function's events into operations; `stack` and *depth_out
 * hold the regions still open at its end. */
static int finish_ops(argus_discovery *d, scan *s, const char *fn, uint32_t open_line,
                      ordinal **ords, size_t *n_ords, size_t *cap_ords, size_t *cap_ops,
                      uint32_t *stack, size_t *depth_out, const loop_range *loops, size_t n_loops)
{
    size_t depth = 0;
    for (size_t i = 0; i < s->n_evs; i++) {
        ev *e = &s->evs[i];
        if (e->type == EV_MARK) {
            if (e->sub == ARGUS_REC_BEGIN || e->sub == ARGUS_REC_END)
                d->n_markers++;
            if (e->sub == ARGUS_REC_BEGIN) {
                if (depth == ARGUS_MAX_DEPTH) {
                    add_diag(d, fn, e->line, "regions nested deeper than ARGUS_MAX_DEPTH");
                    continue;
                }
                stack[depth++] = e->value;
            } else if (e->sub == ARGUS_REC_END) {
                if (depth > 0 && stack[depth - 1] == e->value) {
                    depth--;
                } else {
                    add_diag(d, fn, e->line,
                             "a region END whose BEGIN is not the innermost open one in text "
                             "order (operations after it may be placed in the wrong region)");
                }
            }
            continue;
        }
        if (e->type != EV_OP)
            continue;
        uint32_t region = depth ? stack[depth - 1] : 0;
        size_t k;
        for (k = 0; k < *n_ords; k++)
            if ((*ords)[k].region == region)
                break;
        if (k == *n_ords) {
            if (argus__grow((void **)ords, cap_ords, *n_ords + 1, sizeof(ordinal)) != 0)
                return ARGUS_ENOMEM;
            (*ords)[k].region = region;
            (*ords)[k].next = 0;
            (*n_ords)++;
        }
        if (argus__grow((void **)&d->ops, cap_ops, d->n_ops + 1, sizeof(argus_async_op)) != 0)
            return ARGUS_ENOMEM;
        argus_async_op *o = &d->ops[d->n_ops++];
        memset(o, 0, sizeof *o);
        o->region = region;
        o->ordinal = (*ords)[k].next++;
        o->id = ARGUS_OP_ID(region, o->ordinal);
        o->kind = e->sub;
        o->line = e->line;
        o->fn_open_line = open_line;
        int n = snprintf(o->function, sizeof o->function, "%s", fn);
        if (n < 0)
            o->function[0] = '\0';
        d->ptx_ops[o->kind]++;

        /* The innermost backward branch around it is its loop. */
        for (size_t j = 0; j < n_loops; j++) {
            if (loops[j].head < o->line && o->line < loops[j].end &&
                (!o->in_loop || loops[j].head > o->loop_head)) {
                o->in_loop = 1;
                o->loop_head = loops[j].head;
                o->loop_end = loops[j].end;
            }
        }
        if (o->in_loop) {
            for (size_t j = 0; j < s->n_evs; j++) {
                const ev *m = &s->evs[j];
                if (m->type == EV_MARK && m->sub == ARGUS_REC_ITER && m->line > o->loop_head &&
                    m->line < o->loop_end)
                    o->loop_has_iter = 1;
            }
        }

        if (o->kind == ARGUS_ASYNC_TMA) {
            n = snprintf(o->barrier, sizeof o->barrier, "%s", e->text);
            if (n < 0)
                o->barrier[0] = '\0';
            /* The arrive that armed the phase: the last one on the same
             * barrier before it in its basic block. */
            for (size_t j = i; j-- > 0;) {
                const ev *a = &s->evs[j];
                if (a->type == EV_LABEL || a->type == EV_BRANCH)
                    break;
                if (a->type == EV_ARRIVE && strcmp(a->text, o->barrier) == 0) {
                    o->arrive_line = a->line;
                    break;
                }
            }
            o->phase_last_line = o->line;
            for (size_t j = i + 1; j < s->n_evs; j++) {
                const ev *a = &s->evs[j];
                if (a->type == EV_LABEL || a->type == EV_BRANCH || a->type == EV_ARRIVE ||
                    a->type == EV_MBAR_WAIT)
                    break;
                if (a->type == EV_OP && a->sub == ARGUS_ASYNC_TMA &&
                    strcmp(a->text, o->barrier) == 0)
                    o->phase_last_line = a->line;
            }
            for (size_t j = i + 1; j < s->n_evs; j++) {
                if (s->evs[j].type == EV_MBAR_WAIT) {
                    o->wait_line = s->evs[j].line;
                    break;
                }
            }
        } else {
            for (size_t j = i + 1; j < s->n_evs; j++) {
                const ev *c = &s->evs[j];
                if (!o->commit_line && c->type == EV_COMMIT && c->sub == o->kind)
                    o->commit_line = c->line;
                else if (o->commit_line && c->type == EV_WAIT && c->sub == o->kind) {
                    o->wait_line = c->line;
                    o->wait_n = (int)c->value;
                    break;
                }
            }
        }
    }
    *depth_out = depth;
    return 0;
}

static int finish_function(argus_discovery *d, scan *s, const char *fn, uint32_t open_line,
                           ordinal **ords, size_t *n_ords, size_t *cap_ords, size_t *cap_ops)
{
    uint32_t stack[ARGUS_MAX_DEPTH];
    size_t depth = 0;
    loop_range *loops;
    size_t n_loops;
    if (find_loops(s, &loops, &n_loops) != 0)
        return ARGUS_ENOMEM;
    int rc = finish_ops(d, s, fn, open_line, ords, n_ords, cap_ords, cap_ops, stack, &depth, loops,
                        n_loops);
    free(loops);
    if (rc == 0 && depth > 0)
        add_diag(d, fn, open_line, "a region BEGIN with no END in its function (text order)");
    return rc;
}

/* The name of the function a .entry/.func line declares. */
static void function_name(const char *s, char *out, size_t len)
{
    const char *p = strstr(s, ".entry");
    p = p ? p + 6 : strstr(s, ".func") + 5;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '(') { /* the return parameter of a .func */
        const char *c = strchr(p, ')');
        p = c ? c + 1 : p;
        while (isspace((unsigned char)*p))
            p++;
    }
    size_t n = ident_len(p);
    if (n >= len)
        n = len - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

static int is_decl_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    return strncmp(s, word, n) == 0 &&
           (s[n] == '\0' || isspace((unsigned char)s[n]) || s[n] == '(');
}

int argus_discover_ptx(const char *ptx, size_t len, argus_discovery **out, char *msg, size_t msglen)
{
    *out = NULL;
    if (ptx == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "discover: no PTX text given");
    argus_discovery *d = calloc(1, sizeof *d);
    if (d == NULL)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "discover: out of memory");
    lines L;
    if (split_lines(ptx, len, &L) != 0) {
        free(d);
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "discover: out of memory");
    }
    scan s = {0};
    ordinal *ords = NULL;
    size_t n_ords = 0, cap_ords = 0, cap_ops = 0;
    int depth = 0, rc = 0, pending = 0, in_fn = 0, in_comment = 0;
    uint32_t open_line = 0;
    char fn[128] = "", pending_fn[128] = "";
    for (size_t i = 0; i < L.n && rc == 0; i++) {
        uint32_t line = (uint32_t)(i + 1);
        blank_block_comments(L.line[i], &in_comment);
        char *t = strip(L.line[i]);
        if (*t == '\0')
            continue;
        if (depth == 0 &&
            (strstr(t, ".entry") || is_decl_word(t, ".func") || strstr(t, " .func"))) {
            function_name(t, pending_fn, sizeof pending_fn);
            pending = 1;
        }
        /* A prototype (.extern .func ...;) ends in ';' and has no body;
         * a definition's header lines (parameters, .maxntid) do not. */
        if (depth == 0 && pending && t[strlen(t) - 1] == ';')
            pending = 0;
        /* Labels and instructions of the body; braces counted after. */
        if (in_fn && depth >= 1 && *t != '{' && *t != '}' && *t != '.') {
            size_t n = ident_len(t);
            if (n > 0 && t[n] == ':') {
                rc = push_ev(&s, EV_LABEL, 0, 0, line, t, n);
            } else {
                rc = scan_ins(&s, t, line);
            }
        }
        for (char *c = t; *c && rc == 0; c++) {
            if (*c == '{') {
                if (depth == 0 && pending) {
                    in_fn = 1;
                    pending = 0;
                    open_line = line;
                    memcpy(fn, pending_fn, sizeof fn);
                    s.n_evs = 0;
                    s.n_regs = 0;
                    d->n_functions++;
                }
                depth++;
            } else if (*c == '}') {
                if (depth == 0) {
                    rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                                     "discover: PTX line %" PRIu32 ": '}' with no open block: "
                                     "is this PTX text (nvcc -ptx)?",
                                     line);
                    break;
                }
                depth--;
                if (depth == 0 && in_fn) {
                    in_fn = 0;
                    rc = finish_function(d, &s, fn, open_line, &ords, &n_ords, &cap_ords, &cap_ops);
                    if (rc != 0)
                        rc = argus__fail(rc, msg, msglen, "discover: out of memory");
                }
            }
        }
    }
    if (rc == 0 && depth != 0)
        rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                         "discover: the PTX ends inside a block (%d still open): a truncated "
                         "file? Regenerate it with nvcc -ptx",
                         depth);
    free(s.evs);
    free(s.regs);
    free(ords);
    free_lines(&L);
    if (rc != 0) {
        argus_discovery_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void argus_discovery_free(argus_discovery *d)
{
    if (d == NULL)
        return;
    free(d->ops);
    free(d);
}

/* The SASS mnemonics of each kind's issue: LDGSTS (cp.async), UTMALDG
 * (TMA tensor load), HGMMA and the other GMMA forms (wgmma). */
static int sass_kind(const char *ins)
{
    if (starts(ins, "LDGSTS"))
        return ARGUS_ASYNC_CP_ASYNC;
    if (starts(ins, "UTMALDG"))
        return ARGUS_ASYNC_TMA;
    if (starts(ins, "HGMMA") || starts(ins, "IGMMA") || starts(ins, "QGMMA") ||
        starts(ins, "BGMMA"))
        return ARGUS_ASYNC_WGMMA;
    return -1;
}

int argus_discover_sass(argus_discovery *d, const char *sass, size_t len, char *msg, size_t msglen)
{
    if (d == NULL || sass == NULL)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "discover: no discovery or no SASS text");
    lines L;
    if (split_lines(sass, len, &L) != 0)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "discover: out of memory");
    size_t counts[ARGUS_ASYNC_NKINDS] = {0}, instructions = 0;
    for (size_t i = 0; i < L.n; i++) {
        /* An instruction line starts with its offset in a comment,
         * "<slash>*0690*<slash>", in cuobjdump's and nvdisasm's listings. */
        char *p = strstr(L.line[i], "*/");
        if (p == NULL || strstr(L.line[i], "/*") == NULL || strstr(L.line[i], "/*") > p)
            continue;
        p += 2;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '@') {
            while (*p && !isspace((unsigned char)*p))
                p++;
            while (isspace((unsigned char)*p))
                p++;
        }
        if (!isupper((unsigned char)*p))
            continue;
        instructions++;
        int k = sass_kind(p);
        if (k >= 0)
            counts[k]++;
    }
    free_lines(&L);
    if (instructions == 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "discover: no SASS instruction found: give the output of "
                           "`cuobjdump -sass FILE.cubin` (or nvdisasm)");
    d->sass_seen = 1;
    memcpy(d->sass_ops, counts, sizeof counts);
    return 0;
}

long argus_discovery_find(const argus_discovery *d, uint64_t id)
{
    for (size_t i = 0; d && i < d->n_ops; i++)
        if (d->ops[i].id == id)
            return (long)i;
    return -1;
}

int argus_op_id_format(uint64_t id, char *buf, size_t len)
{
    int n =
        snprintf(buf, len, "0x%07" PRIx32 ".%" PRIu32, ARGUS_OP_REGION(id), ARGUS_OP_ORDINAL(id));
    return n < 0 || (size_t)n >= len ? ARGUS_ERANGE : 0;
}

int argus_op_id_parse(const char *s, uint64_t *id)
{
    char *end;
    errno = 0;
    unsigned long r = strtoul(s, &end, 16);
    if (errno || end == s || *end != '.' || r > ARGUS_VALUE_MASK)
        return ARGUS_EINVAL;
    const char *o = end + 1;
    if (!isdigit((unsigned char)*o))
        return ARGUS_EINVAL;
    unsigned long ord = strtoul(o, &end, 10);
    if (errno || *end != '\0' || ord > 0xffffu)
        return ARGUS_EINVAL;
    *id = ARGUS_OP_ID(r, ord);
    return 0;
}

int argus_discovery_write(const argus_discovery *d, const argus_registry *reg, FILE *f)
{
    if (fprintf(f,
                "# argus discovery: %zu asynchronous operations, %zu region markers, "
                "%zu functions\n",
                d->n_ops, d->n_markers, d->n_functions) < 0)
        return ARGUS_EIO;
    if (fprintf(f, "id\tregion\tkind\tfunction\tptx_line\tloop\titer_marker\tcompletion\t"
                   "commit_line\twait_line\twait_n\tbarrier\tarrive_line\tphase_last_line\n") < 0)
        return ARGUS_EIO;
    for (size_t i = 0; i < d->n_ops; i++) {
        const argus_async_op *o = &d->ops[i];
        char id[32], nb[16], loop[48];
        if (argus_op_id_format(o->id, id, sizeof id) != 0)
            return ARGUS_ERANGE;
        const char *rn = o->region ? argus__name(reg, o->region, nb, sizeof nb) : "(none)";
        if (o->in_loop) {
            int n = snprintf(loop, sizeof loop, "%" PRIu32 "-%" PRIu32, o->loop_head, o->loop_end);
            if (n < 0 || (size_t)n >= sizeof loop)
                return ARGUS_ERANGE;
        } else {
            memcpy(loop, "no", 3);
        }
        if (fprintf(f,
                    "%s\t%s\t%s\t%s\t%" PRIu32 "\t%s\t%s\t%s\t%" PRIu32 "\t%" PRIu32
                    "\t%d\t%s\t%" PRIu32 "\t%" PRIu32 "\n",
                    id, rn, argus_async_kind_name(o->kind), o->function, o->line, loop,
                    o->loop_has_iter ? "yes" : "no", argus_async_completion(o->kind),
                    o->commit_line, o->wait_line, o->wait_n, o->barrier[0] ? o->barrier : "-",
                    o->arrive_line, o->phase_last_line) < 0)
            return ARGUS_EIO;
    }
    if (d->n_diags && fprintf(f, "# %zu marker diagnostics; first: %s\n", d->n_diags, d->diag) < 0)
        return ARGUS_EIO;
    if (d->sass_seen) {
        for (int k = 0; k < ARGUS_ASYNC_NKINDS; k++) {
            if (fprintf(f, "# sass %s: %zu in SASS, %zu in PTX%s\n", argus_async_kind_name(k),
                        d->sass_ops[k], d->ptx_ops[k],
                        d->sass_ops[k] == d->ptx_ops[k]
                            ? ""
                            : " (ptxas unrolled or duplicated code)") < 0)
                return ARGUS_EIO;
        }
    }
    return 0;
}

/* ---- probe variants ------------------------------------------------- */

/* A growing output string. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    int err;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf *b, const char *fmt, ...)
{
    if (b->err)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->err = ARGUS_EINVAL;
            return;
        }
        if (b->p && (size_t)n < room) {
            b->n += (size_t)n;
            return;
        }
        if (argus__grow((void **)&b->p, &b->cap, b->n + (size_t)n + 1, 1) != 0) {
            b->err = ARGUS_ENOMEM;
            return;
        }
    }
}

/* The destination of an mbarrier arrive ("_" when the state is dropped):
 * its offset and length in the line. */
static int arrive_dest(const char *line, size_t *off, size_t *len)
{
    const char *p = strstr(line, "mbarrier.");
    if (p == NULL)
        return 0;
    while (*p && !isspace((unsigned char)*p))
        p++;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '[') /* mbarrier.expect_tx has no destination */
        return 0;
    size_t n = ident_len(p);
    if (n == 0 || p[n] != ',')
        return 0;
    *off = (size_t)(p - line);
    *len = n;
    return 1;
}

/* The state space of an mbarrier instruction (".shared::cta", ".shared"
 * or "" for generic), for the forced try_wait. */
static const char *mbar_space(const char *line)
{
    if (strstr(line, ".shared::cta"))
        return ".shared::cta";
    if (strstr(line, ".shared::cluster"))
        return ".shared::cluster";
    if (strstr(line, ".shared"))
        return ".shared";
    return "";
}

int argus_probe_ptx(const char *ptx, size_t len, const argus_discovery *d, uint64_t op_id,
                    uint32_t iter, char **out, size_t *out_len, char *msg, size_t msglen)
{
    *out = NULL;
    if (out_len)
        *out_len = 0;
    char idb[32];
    if (argus_op_id_format(op_id, idb, sizeof idb) != 0)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "probe: bad operation ID");
    long k = argus_discovery_find(d, op_id);
    if (k < 0)
        return argus__fail(ARGUS_ENOREGION, msg, msglen,
                           "probe: no asynchronous operation %s in the discovery (%zu found): "
                           "use an ID that argus_discover_ptx listed for this PTX",
                           idb, d ? d->n_ops : (size_t)0);
    if (iter == UINT32_MAX)
        return argus__fail(ARGUS_EINVAL, msg, msglen, "probe: iteration %" PRIu32 " is too large",
                           iter);
    const argus_async_op *o = &d->ops[k];
    lines L;
    if (split_lines(ptx, len, &L) != 0)
        return argus__fail(ARGUS_ENOMEM, msg, msglen, "probe: out of memory");
    int rc = 0;
    /* One forced wait per variant: a variant's counter register would be
     * declared twice, so a variant is not probed again. */
    for (size_t i = 0; i < L.n; i++) {
        if (strstr(L.line[i], "%argus_probe_n") != NULL) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "probe: PTX line %zu is a probe's (%%argus_probe_n): this is already "
                             "a probe variant; make each probe from the base PTX",
                             i + 1);
            goto done;
        }
    }
    /* The PTX must be the one discovered: the operation's line holds an
     * instruction of its kind. */
    static const char *const issue_op[] = {"cp.async.c", "cp.async.bulk.tensor", "wgmma.mma_async"};
    if (o->kind < 0 || o->kind >= ARGUS_ASYNC_NKINDS || o->line == 0 || o->line > L.n ||
        strstr(L.line[o->line - 1], issue_op[o->kind]) == NULL || o->fn_open_line == 0 ||
        o->fn_open_line > L.n || strchr(L.line[o->fn_open_line - 1], '{') == NULL) {
        rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                         "probe: PTX line %" PRIu32 " is not the %s operation %s was discovered "
                         "at: discover this same PTX again",
                         o->line, argus_async_kind_name(o->kind), idb);
        goto done;
    }
    uint32_t at = o->line;
    char state[32] = "%argus_probe_st";
    size_t st_off = 0, st_len = 0;
    int rewrite_arrive = 0;
    if (o->kind == ARGUS_ASYNC_WGMMA) {
        /* A wgmma is issued to the hardware at the commit that closes its
         * group; an extra commit of our own would split the program's
         * group (ptxas then adds an empty HGMMA for each), so the wait
         * goes right after the program's commit. */
        if (o->commit_line == 0 || o->commit_line > L.n ||
            strstr(L.line[o->commit_line - 1], "wgmma.commit_group") == NULL) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "probe: wgmma operation %s (PTX line %" PRIu32 ") has no "
                             "wgmma.commit_group after it in its function: nothing issues it, "
                             "so there is no completion to force",
                             idb, o->line);
            goto done;
        }
        at = o->commit_line;
    }
    if (o->kind == ARGUS_ASYNC_TMA) {
        if (o->arrive_line == 0 || o->arrive_line > L.n) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "probe: TMA operation %s (PTX line %" PRIu32 ") has no "
                             "mbarrier.arrive.expect_tx on [%s] before it in its basic block, so "
                             "no phase state to wait on: it cannot be forced by PTX rewriting",
                             idb, o->line, o->barrier);
            goto done;
        }
        at = o->phase_last_line;
        const char *al = L.line[o->arrive_line - 1];
        if (!arrive_dest(al, &st_off, &st_len)) {
            rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                             "probe: PTX line %" PRIu32 " (the arrive of %s) has no state "
                             "destination (mbarrier.expect_tx without arrive): cannot force it",
                             o->arrive_line, idb);
            goto done;
        }
        if (st_len == 1 && al[st_off] == '_') {
            rewrite_arrive = 1;
        } else if (st_len < sizeof state) {
            memcpy(state, al + st_off, st_len);
            state[st_len] = '\0';
        }
    }
    sbuf b = {0};
    for (size_t i = 0; i < L.n; i++) {
        uint32_t line = (uint32_t)(i + 1);
        const char *t = L.line[i];
        if (rewrite_arrive && line == o->arrive_line) {
            sb_add(&b, "%.*s%s%s // argus-probe: the arrive keeps its phase state\n", (int)st_off,
                   t, state, t + st_off + st_len);
        } else {
            sb_add(&b, "%s\n", t);
        }
        if (line == o->fn_open_line) {
            sb_add(&b, "\t.reg .b32 %%argus_probe_n; // argus-probe\n");
            if (o->kind == ARGUS_ASYNC_TMA && rewrite_arrive)
                sb_add(&b, "\t.reg .b64 %%argus_probe_st; // argus-probe\n");
            sb_add(&b, "\tmov.u32 %%argus_probe_n, 0; // argus-probe\n");
        }
        if (line != at)
            continue;
        sb_add(&b, "\t{ // argus-probe: force %s (%s) to complete at execution %" PRIu32 "\n", idb,
               argus_async_kind_name(o->kind), iter);
        sb_add(&b, "\t.reg .pred %%argus_probe_q; // argus-probe\n");
        sb_add(&b, "\tadd.u32 %%argus_probe_n, %%argus_probe_n, 1; // argus-probe\n");
        switch (o->kind) {
        case ARGUS_ASYNC_CP_ASYNC:
            sb_add(&b,
                   "\tsetp.eq.u32 %%argus_probe_q, %%argus_probe_n, %" PRIu32 "; // argus-probe\n",
                   iter + 1);
            sb_add(&b, "\t@%%argus_probe_q cp.async.wait_all; // argus-probe\n");
            break;
        case ARGUS_ASYNC_WGMMA:
            sb_add(&b,
                   "\tsetp.eq.u32 %%argus_probe_q, %%argus_probe_n, %" PRIu32 "; // argus-probe\n",
                   iter + 1);
            sb_add(&b, "\t@%%argus_probe_q wgmma.wait_group.sync.aligned 0; // argus-probe\n");
            break;
        case ARGUS_ASYNC_TMA:
            sb_add(&b,
                   "\tsetp.ne.u32 %%argus_probe_q, %%argus_probe_n, %" PRIu32 "; // argus-probe\n",
                   iter + 1);
            sb_add(&b, "\t@%%argus_probe_q bra $argus_probe_done; // argus-probe\n");
            sb_add(&b, "$argus_probe_wait: // argus-probe\n");
            sb_add(&b, "\tmbarrier.try_wait%s.b64 %%argus_probe_q, [%s], %s; // argus-probe\n",
                   mbar_space(L.line[o->arrive_line - 1]), o->barrier, state);
            sb_add(&b, "\t@!%%argus_probe_q bra $argus_probe_wait; // argus-probe\n");
            sb_add(&b, "$argus_probe_done: // argus-probe\n");
            break;
        default:
            break;
        }
        sb_add(&b, "\t} // argus-probe\n");
    }
    if (b.err) {
        free(b.p);
        rc = argus__fail(b.err, msg, msglen, "probe: out of memory writing the variant");
        goto done;
    }
    /* A completion point past the text (a discovery of longer PTX whose
     * operation line happens to match) would leave a variant without its
     * wait: never hand that back. */
    if (at == 0 || at > L.n) {
        free(b.p);
        rc = argus__fail(ARGUS_EINVAL, msg, msglen,
                         "probe: the completion point of %s (PTX line %" PRIu32 ") is past the "
                         "end of this PTX (%zu lines): discover this same PTX again",
                         idb, at, L.n);
        goto done;
    }
    *out = b.p;
    if (out_len)
        *out_len = b.n;
done:
    free_lines(&L);
    return rc;
}
