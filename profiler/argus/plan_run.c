/*
 * Executing a plan through the runtime and the workspace (argus/rt.h,
 * argus/workspace.h; docs/argus-plan.md, "Running a plan").
 *
 * The mapping, and why:
 *   - one runtime task per TRANSFORM and per run (not per COLLECT): a run
 *     is one execution of one program variant with all its collections'
 *     backends, which is what keeps incompatible collections apart and
 *     compatible ones together; the run's worker writes one evidence
 *     output per collection;
 *   - TRANSFORMs and runs are worker processes of one executor command,
 *     the machine-specific part (it builds a variant, or runs one with the
 *     named backends), so that the planner never guesses how a program is
 *     built or profiled here; runs hold the class "gpu";
 *   - SYNTHESIZE tasks are CPU callbacks that join their inputs' evidence
 *     (ARGUS_RT_JOIN: never across program versions or environments) and
 *     run their rule (argus/synth.h); they run also when some input failed
 *     (ARGUS_RT_PARTIAL), so that what the other branches gave is kept,
 *     and the result says what is missing;
 *   - CONTROL tasks are callbacks run every time (ARGUS_RT_ALWAYS) that
 *     run discovery (argus/discover.h) on their variant's artifact (or take
 *     the operations given), expand the plan and add the new branches and
 *     the synthesis waiting on them.
 * Runtime task IDs are the plan's ("t12", "run3"), so that a task's key,
 * and so its reuse, depends on what it does and not on how it is named.
 */
#define _GNU_SOURCE /* memmem */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "argus/discover.h"
#include "argus/plan.h"
#include "argus/rt.h"
#include "argus/synth.h"
#include "argus_internal.h"
#include "core.h"

typedef struct exec_ctx {
    argus_plan *plan;
    const argus_plan_exec *x;
    pthread_mutex_t mu;   /* the plan, while a CONTROL task expands it */
    char scope[512];
    char program_id[80];  /* the program in the task keys: its content's hash */
    char registry_id[4200]; /* the registry in the CPU tasks' keys, the same */
    argus_registry *reg;  /* the query's, read-only while the graph runs */
    argus_scope ascope;   /* the query's scope as the decoder's */
    argus_plan_op *found; /* what discovery found (freed at the end) */
    size_t nfound;
    char *cmd;            /* the executor with "$@" after it, for sh -c */
    unsigned char *run_added; /* per run: added to the runtime */
    size_t run_cap;
    void **keep;          /* the CPU tasks' user data, freed after the run */
    size_t nkeep;
    void **keep_checks;   /* the runs' output checks, the same */
    size_t nchecks;
} exec_ctx;

/* Per CPU task: what its callback needs, copied so that it never reads the
 * plan while a CONTROL task may be growing it. */
typedef struct cpu_task {
    exec_ctx *ec;
    int id;               /* the plan task */
    char name[192], rule[64], signal[64];
    int type;
    uint64_t op;          /* a probe branch's operation, else 0 */
    int64_t iter;
    size_t ndeps;
    char (*dep_ids)[24];  /* runtime IDs of its inputs */
    char (*dep_names)[192];
    char (*dep_outs)[32]; /* output names read from each */
    int *dep_kind;        /* enum argus_synth_input_kind */
    char (*dep_backend)[32];   /* evidence: the backend the run was asked for */
    char (*dep_variant)[512];  /* evidence: the variant it ran */
} cpu_task;

typedef int (*add_fn)(void *where, const argus_rt_task_desc *d, char *msg, size_t msglen);

static int add_rt(void *rt, const argus_rt_task_desc *d, char *msg, size_t msglen)
{
    return argus_rt_add(rt, d, msg, msglen);
}

static int add_ctx(void *ctx, const argus_rt_task_desc *d, char *msg, size_t msglen)
{
    int rc = argus_rt_ctx_add(ctx, d);
    if (rc != 0)
        argus__fail(rc, msg, msglen, "task %s could not be added to the running graph", d->id);
    return rc;
}

static void rt_id(const argus_plan *p, int task, char *buf, size_t len)
{
    const argus_plan_task *t = &p->tasks[task];
    if (t->type == ARGUS_TASK_COLLECT)
        snprintf(buf, len, "run%d", t->run);
    else
        snprintf(buf, len, "t%d", task);
}

/* The variant's artifact as a worker argument: its TRANSFORM's output, or
 * the program itself for the base variant, as the word "{program}" that
 * the worker's shell replaces with $ARGUS_PLAN_PROGRAM (the program's
 * path), so that the path, which the argv brings into the task key, stays
 * out of it (see program_identity). */
#define PROGRAM_WORD "{program}"
static void artifact_arg(const argus_plan *p, int variant, char *buf, size_t len)
{
    int tt = p->variants[variant].task;
    if (tt < 0)
        snprintf(buf, len, "%s", PROGRAM_WORD);
    else
        snprintf(buf, len, "{in:t%d/artifact}", tt);
}

static void free_cpu(void *u)
{
    cpu_task *c = u;
    if (c == NULL)
        return;
    free(c->dep_ids);
    free(c->dep_names);
    free(c->dep_outs);
    free(c->dep_kind);
    free(c->dep_backend);
    free(c->dep_variant);
    free(c);
}

/* ---- the program's identity in the task keys ------------------------------- */

/* A task key names what the program *is*, not where it lies: the SHA-256
 * of its bytes, and for a program description (argus.exec.program v1, what
 * `argus exec` builds from) of the description and of every file it lists:
 * its source or PTX, its registry, the run command's words that name files
 * (the host program) and the headers under its include folders. An edited
 * source is then a new key (its evidence is not reused), and the same
 * files at another path are the same key (reused). Each file enters as its
 * name as the description writes it and the hash of its bytes, so moving
 * the folder changes nothing. Headers: files ending .h, .hh, .hpp, .cuh or
 * .inc, up to IDENT_MAX_HEADERS files and IDENT_MAX_BYTES bytes of them
 * per include folder; past that (a toolkit's whole include folder) the
 * rest enter by name, size and modification time, which still changes
 * when a header is edited. */
#define IDENT_MAX_HEADERS 4096
#define IDENT_MAX_BYTES (64L << 20)
#define IDENT_MAX_DEPTH 8

static void ident_put(argus_sha256 *s, const char *tag, const char *v)
{
    char len[32];
    snprintf(len, sizeof len, "\n%s:%zu:", tag, strlen(v));
    argus_sha256_update(s, len, strlen(len));
    argus_sha256_update(s, v, strlen(v));
}

/* The SHA-256 of the file at path, as hex. 0, or -errno. */
static int file_sha256(const char *path, char hex[ARGUS_HASH_HEX])
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -errno;
    argus_sha256 s;
    argus_sha256_init(&s);
    unsigned char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        argus_sha256_update(&s, buf, k);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return -EIO;
    unsigned char d[32];
    argus_sha256_final(&s, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return 0;
}

static int is_header(const char *name)
{
    static const char *const ext[] = {".h", ".hh", ".hpp", ".cuh", ".inc"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t e = strlen(ext[i]);
        if (n > e && strcmp(name + n - e, ext[i]) == 0)
            return 1;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct ident_walk {
    argus_sha256 *s;
    size_t files;
    long bytes;
} ident_walk;

/* The headers under dir (rel: their names below the include folder), in
 * name order, so that the hash does not depend on the directory's order. */
static void ident_dir(ident_walk *w, const char *dir, const char *rel, int depth)
{
    DIR *d = depth < IDENT_MAX_DEPTH ? opendir(dir) : NULL;
    if (d == NULL)
        return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (argus__grow((void **)&names, &cap, n + 1, sizeof *names) != 0)
            break;
        if ((names[n] = strdup(e->d_name)) == NULL)
            break;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char path[4096], sub[4096];
        struct stat st;
        int n1 = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int n2 = snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
        if (n1 < 0 || (size_t)n1 >= sizeof path || n2 < 0 || (size_t)n2 >= sizeof sub ||
            stat(path, &st) != 0) {
            free(names[i]);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            ident_dir(w, path, sub, depth + 1);
        } else if (S_ISREG(st.st_mode) && is_header(names[i])) {
            char hex[ARGUS_HASH_HEX], v[128];
            if (w->files < IDENT_MAX_HEADERS && w->bytes + st.st_size <= IDENT_MAX_BYTES &&
                file_sha256(path, hex) == 0) {
                w->files++;
                w->bytes += st.st_size;
                ident_put(w->s, "header", sub);
                ident_put(w->s, "sha256", hex);
            } else {
                snprintf(v, sizeof v, "%lld:%lld.%09ld", (long long)st.st_size,
                         (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
                ident_put(w->s, "header-stat", sub);
                ident_put(w->s, "stat", v);
            }
        }
        free(names[i]);
    }
    free(names);
}

/* A path of the description (relative to its folder, or absolute). */
static void ident_resolve(const char *dir, const char *v, char *out, size_t len)
{
    int n = v[0] == '/' ? snprintf(out, len, "%s", v) : snprintf(out, len, "%s/%s", dir, v);
    if (n < 0 || (size_t)n >= len)
        out[0] = '\0'; /* too long: read as missing */
}

/* One file the description lists, by the name it gives and its bytes'
 * hash; a file that cannot be read is an error naming it. */
static int ident_file(argus_sha256 *s, const char *desc, const char *dir, const char *field,
                      const char *v, char *msg, size_t msglen)
{
    char path[4096], hex[ARGUS_HASH_HEX];
    ident_resolve(dir, v, path, sizeof path);
    int e = file_sha256(path, hex);
    if (e != 0)
        return argus__fail(ARGUS_EIO, msg, msglen,
                           "%s: %s: cannot read %s (%s): the task keys hash the program's files, "
                           "so each file the description lists must be there",
                           desc, field, path, strerror(-e));
    ident_put(s, field, v);
    ident_put(s, "sha256", hex);
    return 0;
}

/* The program's identity for the task keys ("sha256:HEX", see above) into
 * out. The program must be readable: a plan is run on a program that is
 * there. */
static int program_identity(const char *program, char *out, size_t outlen, char *msg,
                            size_t msglen)
{
    char hex[ARGUS_HASH_HEX];
    int e = file_sha256(program, hex);
    if (e != 0)
        return argus__fail(ARGUS_EIO, msg, msglen,
                           "the program %s cannot be read (%s): a plan runs a program that is "
                           "there, and its task keys hash its content",
                           program, strerror(-e));
    argus_sha256 s;
    argus_sha256_init(&s);
    ident_put(&s, "argus-program-identity", "1");
    ident_put(&s, "program-sha256", hex);
    /* A program description: the files it lists, too. Anything else (a
     * PTX file, a binary, a stand-in's input) is its bytes. */
    char *text = NULL, err[512];
    cJSON *doc = NULL;
    if (mosaic__read_file(program, 1L << 20, &text, err, sizeof err) == 0)
        doc = cJSON_Parse(text);
    free(text);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    int rc = 0;
    if (cJSON_IsString(schema) && strcmp(schema->valuestring, "argus.exec.program") == 0) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", program);
        char *slash = strrchr(dir, '/');
        if (slash == NULL)
            snprintf(dir, sizeof dir, ".");
        else
            *(slash == dir ? slash + 1 : slash) = '\0';
        static const char *const single[] = {"source", "ptx", "registry"};
        for (size_t i = 0; rc == 0 && i < sizeof single / sizeof single[0]; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, single[i]);
            if (cJSON_IsString(v))
                rc = ident_file(&s, program, dir, single[i], v->valuestring, msg, msglen);
        }
        /* The run command's words that name files: the host program and
         * what it reads ({cubin} and other placeholders are not files). */
        const cJSON *w;
        cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(doc, "run"))
        {
            char path[4096];
            struct stat st;
            if (rc != 0 || !cJSON_IsString(w) || strchr(w->valuestring, '{') != NULL)
                continue;
            ident_resolve(dir, w->valuestring, path, sizeof path);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
                rc = ident_file(&s, program, dir, "run", w->valuestring, msg, msglen);
        }
        cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(doc, "include"))
        {
            if (rc != 0 || !cJSON_IsString(w))
                continue;
            char path[4096];
            ident_resolve(dir, w->valuestring, path, sizeof path);
            ident_put(&s, "include", w->valuestring);
            ident_walk walk = {.s = &s};
            ident_dir(&walk, path, "", 0);
        }
    }
    cJSON_Delete(doc);
    if (rc != 0)
        return rc;
    unsigned char d[32];
    argus_sha256_final(&s, d);
    int n = snprintf(out, outlen, "sha256:");
    for (int i = 0; i < 32 && n > 0 && (size_t)n + 2 < outlen; i++)
        n += snprintf(out + n, outlen - (size_t)n, "%02x", d[i]);
    return 0;
}

/* The registry's part of a CPU task's key: the hash of the file the query
 * names (or the one beside the program), not its path; "embedded" when
 * there is none (then it is in the program, whose bytes are in the key). */
static void registry_identity(const argus_query *q, char *out, size_t outlen)
{
    char path[4200], hex[ARGUS_HASH_HEX];
    if (q->registry[0])
        snprintf(path, sizeof path, "%s", q->registry);
    else
        snprintf(path, sizeof path, "%s.argus.json", q->program);
    if (file_sha256(path, hex) == 0)
        snprintf(out, outlen, "sha256:%s", hex);
    else
        snprintf(out, outlen, "%s", q->registry[0] ? q->registry : "(embedded or none)");
}

/* ---- callbacks -------------------------------------------------------------- */

static int synth_body(argus_rt_ctx *ctx, void *user)
{
    cpu_task *c = user;
    argus_synth_input *in = calloc(c->ndeps + 1, sizeof *in);
    argus_rt_status *st = calloc(c->ndeps + 1, sizeof *st);
    if (in == NULL || st == NULL) {
        free(in);
        free(st);
        return argus_rt_ctx_fail(ctx, "out of memory");
    }
    int rc = 0;
    for (size_t i = 0; i < c->ndeps && rc == 0; i++) {
        argus_synth_input *x = &in[i];
        x->kind = c->dep_kind[i];
        x->task = c->dep_names[i];
        x->rt_id = c->dep_ids[i];
        x->output = c->dep_outs[i];
        if (x->kind == ARGUS_SYNTH_IN_EVIDENCE) {
            x->backend = c->dep_backend[i];
            x->variant = c->dep_variant[i];
        }
        x->object = argus_rt_ctx_input_hash(ctx, c->dep_ids[i], c->dep_outs[i]);
        if (x->object == NULL) {
            /* ARGUS_RT_PARTIAL: the task below it failed; say why. */
            if (argus_rt_ctx_dep(ctx, c->dep_ids[i], &st[i]) == 0)
                x->missing = st[i].reason;
            continue;
        }
        void *data = NULL;
        size_t len = 0;
        rc = argus_rt_ctx_input(ctx, c->dep_ids[i], c->dep_outs[i], &data, &len);
        x->data = data;
        x->len = len;
    }
    argus_synth_out out;
    memset(&out, 0, sizeof out);
    char msg[1024] = "";
    if (rc == 0) {
        argus_synth_req r = {.task = c->name,
                             .rule = c->rule,
                             .signal = c->signal,
                             .op = c->op,
                             .iter = c->iter,
                             .reg = c->ec->reg,
                             .scope = c->ec->ascope,
                             .in = in,
                             .nin = c->ndeps};
        rc = argus_synth_run(&r, &out, msg, sizeof msg);
        if (rc != 0)
            argus_rt_ctx_fail(ctx, "%s: %s", c->name, msg);
    }
    for (size_t i = 0; i < c->ndeps; i++)
        free((void *)in[i].data);
    free(in);
    free(st);
    if (rc != 0)
        return ARGUS_RT_ETASK;
    rc = argus_rt_ctx_output(ctx, "synthesis", out.json, out.len);
    argus_synth_out_free(&out);
    return rc == 0 ? 0 : argus_rt_ctx_fail(ctx, "cannot store the synthesis (%d)", rc);
}

static int add_task(exec_ctx *ec, add_fn add, void *where, int task, char *msg, size_t msglen);

/* What a run's outputs must be: per output (e<task>), the backend and the
 * variant, checked before the runtime stores them (argus_evidence_check). */
typedef struct run_check {
    char variant[512];
    size_t n;
    char (*out)[32];
    char (*backend)[32];
} run_check;

static void free_run_check(run_check *rc)
{
    if (rc == NULL)
        return;
    free(rc->out);
    free(rc->backend);
    free(rc);
}

static int check_evidence(void *user, const char *output, const char *path, char *why,
                          size_t whylen)
{
    const run_check *c = user;
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->out[i], output) != 0)
            continue;
        char *text = NULL, err[512];
        if (mosaic__read_file(path, 1L << 30, &text, err, sizeof err) != 0)
            return argus__fail(ARGUS_EIO, why, whylen, "%s", err);
        int rc = argus_evidence_check(text, strlen(text), c->backend[i], c->variant, why, whylen);
        free(text);
        return rc;
    }
    return 0;
}

static int add_run(exec_ctx *ec, add_fn add, void *where, int run, char *msg, size_t msglen)
{
    argus_plan *p = ec->plan;
    if ((size_t)run >= ec->run_cap) {
        size_t cap = ec->run_cap ? ec->run_cap : 16;
        while (cap <= (size_t)run)
            cap *= 2;
        unsigned char *n = realloc(ec->run_added, cap);
        if (n == NULL)
            return ARGUS_ENOMEM;
        memset(n + ec->run_cap, 0, cap - ec->run_cap);
        ec->run_added = n;
        ec->run_cap = cap;
    }
    if (ec->run_added[run])
        return 0;
    const argus_plan_run *r = &p->runs[run];
    const argus_plan_variant *v = &p->variants[r->variant];
    size_t nargs = 9 + 3 * r->ntasks;
    const char **argv = calloc(nargs + 1, sizeof(*argv));
    const char **outs = calloc(r->ntasks + 1, sizeof(*outs));
    char (*outn)[32] = calloc(r->ntasks + 1, sizeof(*outn));
    char (*outa)[48] = calloc(r->ntasks + 1, sizeof(*outa));
    char **mets = calloc(r->ntasks + 1, sizeof(*mets));
    /* The configuration (in the key) holds every collection's name, effects
     * and metric names whole: sized for them, never cut. */
    size_t ccap = 64 + strlen(v->name);
    for (size_t i = 0; i < r->ntasks; i++) {
        const argus_plan_task *t = &p->tasks[r->tasks[i]];
        ccap += strlen(t->name) + 96 + (t->metrics ? strlen(t->metrics) : 1);
        if (mets != NULL && t->metrics != NULL &&
            (mets[i] = malloc(strlen(t->metrics) + 40)) != NULL)
            snprintf(mets[i], strlen(t->metrics) + 40, "%s=%s", argus_backend_name(t->backend),
                     t->metrics);
    }
    char *config = malloc(ccap);
    int mets_ok = mets != NULL;
    for (size_t i = 0; mets_ok && i < r->ntasks; i++)
        mets_ok = p->tasks[r->tasks[i]].metrics == NULL || mets[i] != NULL;
    char backends[512] = "", art[4200], id[24], dep[24];
    run_check *chk = calloc(1, sizeof *chk);
    if (chk != NULL) {
        chk->out = calloc(r->ntasks + 1, sizeof *chk->out);
        chk->backend = calloc(r->ntasks + 1, sizeof *chk->backend);
    }
    void **kept = realloc(ec->keep_checks, (ec->nchecks + 1) * sizeof(void *));
    if (kept != NULL)
        ec->keep_checks = kept;
    if (argv == NULL || outs == NULL || outn == NULL || outa == NULL || !mets_ok ||
        config == NULL || chk == NULL || chk->out == NULL || chk->backend == NULL ||
        kept == NULL) {
        free(argv);
        free(outs);
        free(outn);
        free(outa);
        for (size_t i = 0; mets != NULL && i < r->ntasks; i++)
            free(mets[i]);
        free(mets);
        free(config);
        free_run_check(chk);
        return ARGUS_ENOMEM;
    }
    ec->keep_checks[ec->nchecks++] = chk;
    snprintf(chk->variant, sizeof chk->variant, "%s", v->name);
    chk->n = r->ntasks;
    size_t bu = 0, cu = 0;
    int w = snprintf(config, ccap, "run of %s:", v->name);
    cu = w > 0 ? (size_t)w : 0;
    for (size_t i = 0; i < r->ntasks; i++) {
        const argus_plan_task *t = &p->tasks[r->tasks[i]];
        snprintf(outn[i], sizeof outn[i], "e%d", t->id);
        snprintf(outa[i], sizeof outa[i], "{out:e%d}", t->id);
        snprintf(chk->out[i], sizeof chk->out[i], "e%d", t->id);
        snprintf(chk->backend[i], sizeof chk->backend[i], "%s", argus_backend_name(t->backend));
        outs[i] = outn[i];
        w = snprintf(backends + bu, sizeof backends - bu, "%s%s", i ? "," : "",
                     argus_backend_name(t->backend));
        if (w > 0 && (size_t)w < sizeof backends - bu)
            bu += (size_t)w;
        w = snprintf(config + cu, ccap - cu, " %s(effects=%u,observes=%u,retains=%u,metrics=%s)",
                     t->name, t->effects, t->observes, t->retains,
                     t->metrics ? t->metrics : "-");
        if (w > 0 && (size_t)w < ccap - cu)
            cu += (size_t)w;
    }
    artifact_arg(p, r->variant, art, sizeof art);
    snprintf(id, sizeof id, "run%d", run);
    size_t k = 0;
    argv[k++] = "/bin/sh";
    argv[k++] = "-c";
    argv[k++] = ec->cmd;
    argv[k++] = "argus-exec";
    argv[k++] = "run";
    /* The metric names of its collections, one option per backend that
     * has some (the protocol's `run [--metrics BACKEND=a,b]...`); none:
     * the arguments are as they always were. */
    for (size_t i = 0; i < r->ntasks; i++) {
        const argus_plan_task *t = &p->tasks[r->tasks[i]];
        if (t->metrics == NULL)
            continue;
        argv[k++] = "--metrics";
        argv[k++] = mets[i];
    }
    argv[k++] = v->name;
    argv[k++] = backends;
    argv[k++] = art;
    for (size_t i = 0; i < r->ntasks; i++)
        argv[k++] = outa[i];
    argv[k] = NULL;
    const char *deps[1];
    size_t ndeps = 0;
    if (v->task >= 0) {
        snprintf(dep, sizeof dep, "t%d", v->task);
        deps[ndeps++] = dep;
    }
    argus_rt_task_desc d;
    memset(&d, 0, sizeof d);
    d.id = id;
    d.kind = "collect";
    d.deps = deps;
    d.ndeps = ndeps;
    d.excl[0] = "gpu";
    d.timeout_s = p->tasks[r->tasks[0]].timeout_s;
    d.argv = argv;
    d.outputs = outs;
    d.noutputs = r->ntasks;
    d.config = config;
    d.program = ec->program_id;
    d.scope = ec->scope;
    d.check = check_evidence;
    d.user = chk;
    int rc = add(where, &d, msg, msglen);
    free(argv);
    free(outs);
    free(outn);
    free(outa);
    for (size_t i = 0; i < r->ntasks; i++)
        free(mets[i]);
    free(mets);
    free(config);
    if (rc == 0)
        ec->run_added[run] = 1;
    return rc;
}

/* Whether region r lies in the subtree of root (0: the whole kernel). */
static int in_subtree(const argus_registry *reg, uint32_t r, uint32_t root)
{
    for (int depth = 0; root != 0 && depth < 256; depth++) {
        if (r == root)
            return 1;
        int64_t p = reg ? argus_registry_parent(reg, r) : -1;
        if (p <= 0)
            return 0;
        r = (uint32_t)p;
    }
    return root == 0;
}

/* Looks like PTX text: no NUL, ".version" and ".target" near the top. */
static int is_ptx(const char *p, size_t n)
{
    if (memchr(p, '\0', n) != NULL)
        return 0;
    size_t head = n < 65536 ? n : 65536;
    return memmem(p, head, ".version", 8) != NULL && memmem(p, head, ".target", 7) != NULL;
}

/* The PTX of the artifact at path (data, n): the text itself, or what
 * `cuobjdump -ptx` extracts from a binary that embeds it. *ptx malloc'd. */
static int artifact_ptx(const char *path, const char *data, size_t n, char **ptx, size_t *len,
                        char *why, size_t whylen)
{
    if (is_ptx(data, n)) {
        *ptx = malloc(n + 1);
        if (*ptx == NULL)
            return ARGUS_ENOMEM;
        memcpy(*ptx, data, n);
        (*ptx)[n] = '\0';
        *len = n;
        return 0;
    }
    /* Workspace object paths are the workspace folder and hex names; the
     * folder is quoted for the shell, a quote in it refused. */
    if (strchr(path, '\'') != NULL)
        return argus__fail(ARGUS_EINVAL, why, whylen, "the artifact's path %s holds a quote",
                           path);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "cuobjdump -ptx '%s' 2>/dev/null", path);
    FILE *f = popen(cmd, "r");
    char *buf = NULL;
    size_t used = 0, cap = 0;
    if (f != NULL) {
        char chunk[65536];
        size_t k;
        while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
            if (argus__grow((void **)&buf, &cap, used + k + 1, 1) != 0) {
                pclose(f);
                free(buf);
                return ARGUS_ENOMEM;
            }
            memcpy(buf + used, chunk, k);
            used += k;
        }
        int st = pclose(f);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) || buf == NULL || !is_ptx(buf, used)) {
            free(buf);
            buf = NULL;
        }
    }
    if (buf == NULL)
        return argus__fail(ARGUS_EINVAL, why, whylen,
                           "the artifact is not PTX text and `cuobjdump -ptx` found no PTX in it "
                           "(%s): discovery reads PTX, so the executor's markers_on transform "
                           "must write the variant's PTX or a binary that embeds it "
                           "(docs/argus-plan.md, \"Evidence\"), or give the operations with "
                           "--discovered OPS.json",
                           f == NULL ? "cuobjdump could not be run" : "a cubin holds no PTX");
    buf[used] = '\0';
    *ptx = buf;
    *len = used;
    return 0;
}

/* Discovery on the CONTROL task's input: the operations of the query's
 * region (and the regions below it) into ec->found. */
static int discover_ops(argus_rt_ctx *ctx, cpu_task *c, char *why, size_t whylen)
{
    exec_ctx *ec = c->ec;
    argus_plan *p = ec->plan;
    void *data = NULL;
    size_t n = 0;
    char path[4200];
    int rc;
    const char *where;
    if (c->ndeps > 0) {
        rc = argus_rt_ctx_input(ctx, c->dep_ids[0], c->dep_outs[0], &data, &n);
        if (rc == 0)
            rc = argus_rt_ctx_input_path(ctx, c->dep_ids[0], c->dep_outs[0], path, sizeof path);
        if (rc != 0)
            return argus__fail(rc, why, whylen, "cannot read the artifact of %s", c->dep_names[0]);
        where = c->dep_names[0];
    } else {
        /* The base variant: the program itself. */
        snprintf(path, sizeof path, "%s", p->query.program);
        FILE *f = fopen(path, "rb");
        if (f == NULL)
            return argus__fail(ARGUS_EIO, why, whylen, "cannot open the program %s: %s", path,
                               strerror(errno));
        size_t cap = 0;
        char chunk[65536];
        size_t k;
        while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
            if (argus__grow(&data, &cap, n + k, 1) != 0) {
                fclose(f);
                free(data);
                return ARGUS_ENOMEM;
            }
            memcpy((char *)data + n, chunk, k);
            n += k;
        }
        fclose(f);
        where = path;
    }
    char *ptx = NULL;
    size_t plen = 0;
    char tmp[1024];
    rc = artifact_ptx(path, data ? data : "", n, &ptx, &plen, tmp, sizeof tmp);
    free(data);
    if (rc != 0)
        return argus__fail(rc, why, whylen, "%s: %s", where, tmp);
    argus_discovery *d = NULL;
    rc = argus_discover_ptx(ptx, plen, &d, tmp, sizeof tmp);
    free(ptx);
    if (rc != 0)
        return argus__fail(rc, why, whylen, "discovery on the PTX of %s: %s", where, tmp);
    argus_plan_op *ops = calloc(d->n_ops + 1, sizeof *ops);
    if (ops == NULL) {
        argus_discovery_free(d);
        return ARGUS_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < d->n_ops; i++) {
        const argus_async_op *a = &d->ops[i];
        if (!in_subtree(ec->reg, a->region, p->query.region_id) || a->id == 0)
            continue;
        ops[k++] = *a; /* argus_plan_op is argus_async_op: plain data */
    }
    argus_discovery_free(d);
    free(ec->found);
    ec->found = ops;
    ec->nfound = k;
    return 0;
}

static int control_body(argus_rt_ctx *ctx, void *user)
{
    cpu_task *c = user;
    exec_ctx *ec = c->ec;
    char msg[1024] = "";
    pthread_mutex_lock(&ec->mu);
    int rc = 0;
    const argus_plan_op *ops = ec->x->ops;
    size_t nops = ec->x->nops;
    if (!ec->x->ops_given) {
        rc = discover_ops(ctx, c, msg, sizeof msg);
        ops = ec->found;
        nops = ec->nfound;
    }
    argus_plan *p = ec->plan;
    size_t old_tasks = p->ntasks;
    int *pending = rc == 0 ? calloc(old_tasks + 1, sizeof(int)) : NULL;
    if (rc == 0 && pending == NULL)
        rc = ARGUS_ENOMEM;
    size_t npend = 0;
    for (size_t i = 0; rc == 0 && i < old_tasks; i++)
        if (p->tasks[i].pending == c->id)
            pending[npend++] = (int)i;
    if (rc == 0)
        rc = argus_plan_expand(p, c->id, ops, nops, msg, sizeof msg);
    int *order = rc == 0 ? calloc(p->ntasks + 1, sizeof(int)) : NULL;
    if (rc == 0 && order == NULL)
        rc = ARGUS_ENOMEM;
    if (rc == 0)
        rc = argus_plan_order(p, order, msg, sizeof msg);
    for (size_t i = 0; rc == 0 && i < p->ntasks; i++) {
        int t = order[i];
        int is_pending = 0;
        for (size_t k = 0; k < npend; k++)
            is_pending |= pending[k] == t;
        if ((size_t)t >= old_tasks || is_pending)
            rc = add_task(ec, add_ctx, ctx, t, msg, sizeof msg);
    }
    free(order);
    free(pending);
    if (rc != 0) {
        pthread_mutex_unlock(&ec->mu);
        return argus_rt_ctx_fail(ctx, "%s: %s", c->name, msg[0] ? msg : argus_strerror(rc));
    }
    /* What was discovered (or given), as this task's output. */
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a != NULL && i < nops; i++) {
        const argus_plan_op *op = &ops[i];
        cJSON *e = cJSON_CreateObject();
        char idb[32];
        snprintf(idb, sizeof idb, "0x%07x.%u", (unsigned)(op->id >> 16),
                 (unsigned)(op->id & 0xffffu));
        cJSON_AddStringToObject(e, "id", idb);
        cJSON_AddStringToObject(e, "kind", argus_async_kind_name(op->kind));
        cJSON_AddStringToObject(e, "completion", argus_async_completion(op->kind));
        cJSON_AddBoolToObject(e, "in_loop", op->in_loop);
        cJSON_AddStringToObject(e, "from", ec->x->ops_given ? "given" : "discovered");
        cJSON_AddItemToArray(a, e);
    }
    pthread_mutex_unlock(&ec->mu);
    char *text = a ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    if (text == NULL)
        return argus_rt_ctx_fail(ctx, "out of memory");
    rc = argus_rt_ctx_output(ctx, "ops", text, strlen(text));
    cJSON_free(text);
    return rc == 0 ? 0 : argus_rt_ctx_fail(ctx, "cannot store the operations (%d)", rc);
}

/* ---- adding a plan task ------------------------------------------------------- */

static int add_task(exec_ctx *ec, add_fn add, void *where, int task, char *msg, size_t msglen)
{
    argus_plan *p = ec->plan;
    const argus_plan_task *t = &p->tasks[task];
    if (t->type == ARGUS_TASK_COLLECT)
        return add_run(ec, add, where, t->run, msg, msglen);
    char id[24];
    snprintf(id, sizeof id, "t%d", task);
    argus_rt_task_desc d;
    memset(&d, 0, sizeof d);
    d.id = id;
    d.kind = argus_task_type_name(t->type);
    d.timeout_s = t->timeout_s;
    d.program = ec->program_id;
    d.scope = ec->scope;
    char config[9000];
    /* A CPU task's key cannot see its code: the config names the rule's
     * implementation (argus.synthesis v1, this file's discovery) and the
     * registry that names the regions (its content's hash). */
    snprintf(config, sizeof config, "%s rule=%s variant=%s impl=%s registry=%s", t->name, t->rule,
             t->variant >= 0 ? p->variants[t->variant].name : "-",
             t->type == ARGUS_TASK_CONTROL
                 ? (ec->x->ops_given ? "ops-given" : "discover-ptx-1")
                 : "argus.synthesis.v1",
             ec->registry_id);
    d.config = config;
    if (t->type == ARGUS_TASK_TRANSFORM) {
        const argus_plan_variant *v = &p->variants[t->variant];
        char art[4200], opb[32], itb[24], deps_s[2][24];
        const char *deps[2];
        size_t nd = 0;
        for (size_t i = 0; i < t->ndeps && nd < 2; i++) {
            snprintf(deps_s[nd], sizeof deps_s[nd], "t%d", t->deps[i]);
            deps[nd] = deps_s[nd];
            nd++;
        }
        artifact_arg(p, v->parent, art, sizeof art);
        snprintf(opb, sizeof opb, "0x%07x.%u", (unsigned)(t->op >> 16), (unsigned)(t->op & 0xffffu));
        snprintf(itb, sizeof itb, "%lld", (long long)t->iter);
        const char *argv[] = {"/bin/sh", "-c", ec->cmd, "argus-exec", "transform",
                              argus_transform_name(t->transform), v->name, art, opb, itb,
                              "{out:artifact}", NULL};
        const char *outs[] = {"artifact"};
        d.deps = deps;
        d.ndeps = nd;
        d.argv = argv;
        d.outputs = outs;
        d.noutputs = 1;
        return add(where, &d, msg, msglen);
    }
    cpu_task *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return ARGUS_ENOMEM;
    c->ec = ec;
    c->id = task;
    c->type = t->type;
    snprintf(c->name, sizeof c->name, "%s", t->name);
    snprintf(c->rule, sizeof c->rule, "%s", t->rule);
    c->op = t->op;
    c->iter = t->iter;
    for (int sg = 0; sg < ARGUS_SIG_COUNT; sg++)
        if (t->signals & (1u << sg)) {
            snprintf(c->signal, sizeof c->signal, "%s", argus_signal_name(sg));
            break;
        }
    c->dep_ids = calloc(t->ndeps + 1, sizeof(*c->dep_ids));
    c->dep_names = calloc(t->ndeps + 1, sizeof(*c->dep_names));
    c->dep_outs = calloc(t->ndeps + 1, sizeof(*c->dep_outs));
    c->dep_kind = calloc(t->ndeps + 1, sizeof(*c->dep_kind));
    c->dep_backend = calloc(t->ndeps + 1, sizeof(*c->dep_backend));
    c->dep_variant = calloc(t->ndeps + 1, sizeof(*c->dep_variant));
    const char **deps = calloc(t->ndeps + 1, sizeof(*deps));
    if (c->dep_ids == NULL || c->dep_names == NULL || c->dep_outs == NULL || deps == NULL ||
        c->dep_kind == NULL || c->dep_backend == NULL || c->dep_variant == NULL) {
        free(deps);
        free_cpu(c);
        return ARGUS_ENOMEM;
    }
    /* Inputs: a collection is read from its run's worker, one output per
     * collection; a run named twice is one dependency. */
    size_t nd = 0;
    for (size_t i = 0; i < t->ndeps; i++) {
        const argus_plan_task *dt = &p->tasks[t->deps[i]];
        rt_id(p, dt->id, c->dep_ids[c->ndeps], sizeof c->dep_ids[0]);
        snprintf(c->dep_names[c->ndeps], sizeof c->dep_names[0], "%s", dt->name);
        snprintf(c->dep_outs[c->ndeps], sizeof c->dep_outs[0], "%s",
                 dt->type == ARGUS_TASK_COLLECT     ? ""
                 : dt->type == ARGUS_TASK_TRANSFORM ? "artifact"
                 : dt->type == ARGUS_TASK_CONTROL   ? "ops"
                                                    : "synthesis");
        c->dep_kind[c->ndeps] = dt->type == ARGUS_TASK_COLLECT     ? ARGUS_SYNTH_IN_EVIDENCE
                                : dt->type == ARGUS_TASK_TRANSFORM ? ARGUS_SYNTH_IN_ARTIFACT
                                : dt->type == ARGUS_TASK_CONTROL   ? ARGUS_SYNTH_IN_OPS
                                                                   : ARGUS_SYNTH_IN_RESULT;
        if (dt->type == ARGUS_TASK_COLLECT) {
            snprintf(c->dep_outs[c->ndeps], sizeof c->dep_outs[0], "e%d", dt->id);
            snprintf(c->dep_backend[c->ndeps], sizeof c->dep_backend[0], "%s",
                     argus_backend_name(dt->backend));
            snprintf(c->dep_variant[c->ndeps], sizeof c->dep_variant[0], "%s",
                     p->variants[dt->variant].name);
        }
        int seen = 0;
        for (size_t k = 0; k < nd; k++)
            seen |= strcmp(deps[k], c->dep_ids[c->ndeps]) == 0;
        if (!seen)
            deps[nd++] = c->dep_ids[c->ndeps];
        c->ndeps++;
    }
    const char *outs[1];
    d.deps = deps;
    d.ndeps = nd;
    d.user = c;
    d.outputs = outs;
    d.noutputs = 1;
    if (t->type == ARGUS_TASK_CONTROL) {
        d.exec = control_body;
        d.flags = ARGUS_RT_ALWAYS;
        outs[0] = "ops";
    } else {
        d.exec = synth_body;
        d.flags = ARGUS_RT_JOIN | ARGUS_RT_JOIN_ANY_SCOPE | ARGUS_RT_PARTIAL;
        outs[0] = "synthesis";
    }
    int rc = add(where, &d, msg, msglen);
    free(deps);
    if (rc != 0) {
        free_cpu(c);
        return rc;
    }
    /* The runtime holds the pointer until it is freed; argus_plan_execute
     * frees them all after that. Added under ec->mu or before the run. */
    void **list = realloc(ec->keep, (ec->nkeep + 1) * sizeof(void *));
    if (list == NULL)
        return ARGUS_ENOMEM; /* c stays with the runtime, which may run it */
    ec->keep = list;
    ec->keep[ec->nkeep++] = c;
    return 0;
}

/* One line per synthesis: complete, or its problems; each signal's final
 * synthesis copied to results_dir/SIGNAL.json when asked. Read back from
 * the workspace, so that a reused synthesis is reported as a new one. */
static int report_syntheses(const argus_plan *plan, const argus_rt *rt, argus_ws *ws,
                            const argus_plan_exec *x, FILE *report, size_t *incomplete,
                            char *msg, size_t msglen)
{
    if (x->results_dir != NULL && mkdir(x->results_dir, 0777) != 0 && errno != EEXIST)
        return argus__fail(ARGUS_EIO, msg, msglen, "cannot create %s: %s", x->results_dir,
                           strerror(errno));
    if (report != NULL)
        fprintf(report, "syntheses:\n");
    for (size_t i = 0; i < plan->ntasks; i++) {
        const argus_plan_task *t = &plan->tasks[i];
        if (t->type != ARGUS_TASK_SYNTHESIZE)
            continue;
        char id[24];
        snprintf(id, sizeof id, "t%zu", i);
        const char *h = argus_rt_output(rt, id, "synthesis");
        void *data = NULL;
        size_t len = 0;
        char why[512] = "";
        if (h == NULL || argus_ws_get(ws, h, &data, &len, why, sizeof why) != 0) {
            (*incomplete)++;
            if (report != NULL)
                fprintf(report, "  %s %s: no result (%s)\n", id, t->name,
                        why[0] ? why : "the task did not run");
            continue;
        }
        cJSON *o = cJSON_ParseWithLength(data, len);
        const cJSON *c = o ? cJSON_GetObjectItemCaseSensitive(o, "complete") : NULL;
        const cJSON *ps = o ? cJSON_GetObjectItemCaseSensitive(o, "problems") : NULL;
        int ok = cJSON_IsTrue(c);
        if (!ok)
            (*incomplete)++;
        if (report != NULL) {
            fprintf(report, "  %s %s: %s", id, t->name, ok ? "complete" : "INCOMPLETE");
            const cJSON *p0 = cJSON_GetArrayItem(ps, 0);
            const cJSON *tk = p0 ? cJSON_GetObjectItemCaseSensitive(p0, "task") : NULL;
            const cJSON *wy = p0 ? cJSON_GetObjectItemCaseSensitive(p0, "why") : NULL;
            if (!ok && cJSON_IsString(wy))
                fprintf(report, " (%d problems; first: %s%s%s)", cJSON_GetArraySize(ps),
                        cJSON_IsString(tk) ? tk->valuestring : "",
                        cJSON_IsString(tk) && tk->valuestring[0] ? ": " : "", wy->valuestring);
            fprintf(report, " [object %.12s]\n", h);
        }
        cJSON_Delete(o);
        /* A signal's final synthesis: the one the branches feed (no op). */
        if (x->results_dir != NULL && t->op == 0 && t->analysis < 0) {
            for (int sg = 0; sg < ARGUS_SIG_COUNT; sg++) {
                if (!(t->signals & (1u << sg)))
                    continue;
                char path[4200];
                snprintf(path, sizeof path, "%s/%s.json", x->results_dir, argus_signal_name(sg));
                FILE *f = fopen(path, "wb");
                int bad = f == NULL || fwrite(data, 1, len, f) != len;
                if (f != NULL && fclose(f) != 0)
                    bad = 1;
                if (bad) {
                    free(data);
                    return argus__fail(ARGUS_EIO, msg, msglen, "cannot write %s: %s", path,
                                       strerror(errno));
                }
            }
        }
        free(data);
    }
    return 0;
}

int argus_plan_execute(argus_plan *plan, const argus_plan_exec *x, FILE *report, char *msg,
                       size_t msglen)
{
    if (plan == NULL || x == NULL || x->ws_dir == NULL)
        return ARGUS_EINVAL;
    if (x->executor == NULL || x->executor[0] == '\0')
        return argus__fail(ARGUS_EINVAL, msg, msglen,
                           "running a plan needs an executor: the command that builds a "
                           "variant and runs one with the named backends on this machine "
                           "(--executor CMD; docs/argus-plan.md, \"Running a plan\")");
    exec_ctx ec;
    memset(&ec, 0, sizeof ec);
    ec.plan = plan;
    ec.x = x;
    pthread_mutex_init(&ec.mu, NULL);
    /* The scope in the task keys: the query's request form, so that the
     * same evidence under another scope is another key. */
    const argus_query_scope *s = &plan->query.scope;
    snprintf(ec.scope, sizeof ec.scope, "region=0x%07x role=%s iter=%lld:%lld cta=%lld:%lld "
                                        "sm=%lld:%lld warp=%lld:%lld",
             plan->query.region_id, s->role, (long long)s->iter_lo, (long long)s->iter_hi,
             (long long)s->cta_lo, (long long)s->cta_hi, (long long)s->sm_lo,
             (long long)s->sm_hi, (long long)s->warp_lo, (long long)s->warp_hi);
    /* The decoder's form of the scope, for the synthesis rules. */
    argus_scope_all(&ec.ascope);
    ec.ascope.iter_lo = s->iter_lo;
    ec.ascope.iter_hi = s->iter_hi;
    ec.ascope.role = plan->query.role_id;
    if (s->cta_lo >= 0) {
        ec.ascope.cta_lo = (uint32_t)s->cta_lo;
        ec.ascope.cta_hi = (uint32_t)s->cta_hi;
    }
    if (s->sm_lo >= 0) {
        ec.ascope.sm_lo = (uint32_t)s->sm_lo;
        ec.ascope.sm_hi = (uint32_t)s->sm_hi;
    }
    if (s->warp_lo >= 0) {
        ec.ascope.warp_lo = (uint32_t)s->warp_lo;
        ec.ascope.warp_hi = (uint32_t)s->warp_hi;
    }
    ec.ascope.region = plan->query.region_id;
    argus_ws *ws = NULL;
    argus_rt *rt = NULL;
    int *order = NULL;
    /* The registry names regions in the results and gives discovery the
     * region tree; a query with a region or role was resolved against it.
     * Without one (a whole-kernel query of a program that has none) the
     * results name regions by ID. */
    if (argus_query_registry(&plan->query, &ec.reg, msg, msglen) != 0) {
        if (plan->query.region_id != 0 || plan->query.role_id != 0) {
            pthread_mutex_destroy(&ec.mu);
            return ARGUS_EINVAL;
        }
        ec.reg = NULL;
        if (msg != NULL && msglen > 0)
            msg[0] = '\0';
    }
    /* sh -c 'CMD "$@"' argus-exec ARGS...: the executor may be a command
     * with its own arguments, and gets the task's as its last ones. */
    size_t cl = strlen(x->executor) + 8;
    /* The worker's shell first replaces the word PROGRAM_WORD with the
     * program's path (the for loop's list is fixed when it starts, so the
     * arguments are rotated through once, in order). */
    cl += sizeof "for argus_w; do shift; [ \"$argus_w\" = '" PROGRAM_WORD
                 "' ] && argus_w=$ARGUS_PLAN_PROGRAM; set -- \"$@\" \"$argus_w\"; done; ";
    ec.cmd = malloc(cl);
    if (ec.cmd == NULL) {
        pthread_mutex_destroy(&ec.mu);
        return ARGUS_ENOMEM;
    }
    snprintf(ec.cmd, cl,
             "for argus_w; do shift; [ \"$argus_w\" = '" PROGRAM_WORD
             "' ] && argus_w=$ARGUS_PLAN_PROGRAM; set -- \"$@\" \"$argus_w\"; done; %s \"$@\"",
             x->executor);
    int rc = program_identity(plan->query.program, ec.program_id, sizeof ec.program_id, msg,
                              msglen);
    registry_identity(&plan->query, ec.registry_id, sizeof ec.registry_id);
    /* The workers inherit the environment: the program's path goes to them
     * there, outside their argv (and so outside the task keys). Set before
     * the runtime starts its threads, restored after it stopped. */
    char *old_prog = getenv("ARGUS_PLAN_PROGRAM");
    old_prog = old_prog ? strdup(old_prog) : NULL;
    if (rc == 0 && setenv("ARGUS_PLAN_PROGRAM", plan->query.program, 1) != 0)
        rc = argus__fail(ARGUS_ENOMEM, msg, msglen, "cannot set ARGUS_PLAN_PROGRAM");
    if (rc == 0)
        rc = argus_ws_open(x->ws_dir, 1, &ws, msg, msglen);
    if (rc == 0) {
        argus_rt_opts o;
        memset(&o, 0, sizeof o);
        o.cpu_threads = x->cpu_threads;
        o.progress = x->progress ? argus_rt_progress_print : NULL;
        o.progress_user = x->progress;
        rc = argus_rt_new(ws, &o, &rt);
        if (rc != 0)
            argus__fail(rc, msg, msglen, "cannot start the runtime: %s", argus_ws_strerror(rc));
    }
    if (rc == 0 && (order = calloc(plan->ntasks + 1, sizeof(int))) == NULL)
        rc = ARGUS_ENOMEM;
    if (rc == 0)
        rc = argus_plan_order(plan, order, msg, msglen);
    for (size_t i = 0; rc == 0 && i < plan->ntasks; i++)
        if (plan->tasks[order[i]].pending < 0)
            rc = add_task(&ec, add_rt, rt, order[i], msg, msglen);
    if (rc == 0) {
        rc = argus_rt_run(rt);
        if (report != NULL) {
            argus_rt_print(rt, report);
            /* The runtime's IDs are the plan's; say what each one is. */
            fprintf(report, "where:\n");
            for (size_t i = 0; i < plan->ntasks; i++)
                if (plan->tasks[i].type != ARGUS_TASK_COLLECT)
                    fprintf(report, "  t%zu = %s\n", i, plan->tasks[i].name);
            for (size_t r = 0; r < plan->nruns; r++) {
                fprintf(report, "  run%zu = v%d:", r, plan->runs[r].variant);
                for (size_t k = 0; k < plan->runs[r].ntasks; k++)
                    fprintf(report, " %s", plan->tasks[plan->runs[r].tasks[k]].name);
                fputc('\n', report);
            }
        }
        size_t incomplete = 0;
        int wrc = report_syntheses(plan, rt, ws, x, report, &incomplete, msg, msglen);
        if (rc != 0)
            argus__fail(rc, msg, msglen,
                        "some tasks failed (listed with their reasons); what finished is kept "
                        "in %s, and running the query again runs only what failed",
                        x->ws_dir);
        else if (wrc != 0)
            rc = wrc;
        else if (incomplete > 0)
            rc = argus__fail(ARGUS_RT_EFAILED, msg, msglen,
                             "%zu syntheses are incomplete (listed with what is missing); their "
                             "partial results are kept in %s",
                             incomplete, x->ws_dir);
    }
    free(order);
    argus_rt_free(rt);
    argus_ws_close(ws);
    if (old_prog != NULL)
        setenv("ARGUS_PLAN_PROGRAM", old_prog, 1);
    else
        unsetenv("ARGUS_PLAN_PROGRAM");
    free(old_prog);
    argus_registry_free(ec.reg);
    free(ec.found);
    for (size_t i = 0; i < ec.nkeep; i++)
        free_cpu(ec.keep[i]);
    free(ec.keep);
    for (size_t i = 0; i < ec.nchecks; i++)
        free_run_check(ec.keep_checks[i]);
    free(ec.keep_checks);
    free(ec.run_added);
    free(ec.cmd);
    pthread_mutex_destroy(&ec.mu);
    return rc;
}
