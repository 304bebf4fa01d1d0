/*
 * argus exec run: one execution of one program variant with a set of
 * backends, and each backend's evidence (argus.evidence v1) written to its
 * OUT file (docs/argus-plan.md, "The executor").
 *
 *   argus exec run VARIANT BACKENDS ARTIFACT OUT...
 *
 * How, and why:
 *   - The variant's program runs under argus-shim (beside this binary, or
 *     ARGUS_SHIM), which already is the one CUPTI subscriber that records
 *     kernel activity, NVTX ranges and PC samples, and arms instrumented
 *     kernels; the executor adds nothing to the program, so a run here is
 *     what argus-shim measures anywhere. The shim's options follow the
 *     backends: --kernels for CUPTI activity (and for arming, which rides
 *     on its callbacks), --nvtx, --pc-sampling; arming is off
 *     (ARGUS_SHIM_ARM=0) unless region_runtime is asked, so that a run for
 *     kernel timing of a marked variant does not pay for buffers.
 *   - Region runtime evidence is decoded here from the raw buffers
 *     (ARGUS_SHIM_ARM_RAW: argus-shim writes each collected buffer), with
 *     the variant's registry, per region and iteration: argus-shim's
 *     recording keeps each occurrence's time but not its iteration, and a
 *     forced-completion probe is joined to its baseline iteration by
 *     iteration (never by timestamps across runs).
 *   - One device: CUDA_VISIBLE_DEVICES is set for the program, from
 *     ARGUS_EXEC_DEVICE, else the description's "device", else the one
 *     already set, else "0".
 *   - A limit (the description's timeout_s, default 300 s): past it the
 *     program and everything it started are killed and the run fails, so
 *     that its branch fails alone and reruns next time. The runtime's own
 *     limit (the recipe's timeout_s) kills this process's group too.
 *   - A backend this build or machine cannot give is written as evidence
 *     with "state": "unavailable" and the reason, never as numbers.
 *   - The evidence files are written also when the program failed (state
 *     "failed", what was recorded kept), and the run then exits 1.
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "argus/argus.h"
#include "argus/plan.h"
#include "argus/workspace.h"
#include "argus_internal.h"
#include "exec.h"
#include "core.h"
#include "json.h"

#define EVIDENCE_SCHEMA "argus.evidence"
#define MAX_OUTS 16
#define DEFAULT_TIMEOUT_S 300.0

/* What argus-shim recorded, split by the backend each line belongs to. */
typedef struct recording {
    int present;       /* events.jsonl was written */
    char cupti[32];    /* the header's, then the cupti line's state */
    char note[512];
    char t0[32];
    cJSON *kernels, *nvtx, *pcs, *armed, *unavail;
} recording;

static const char *line_backend(const char *e)
{
    static const struct {
        const char *e, *be;
    } map[] = {{"launch", "cupti_activity"}, {"kernel", "cupti_activity"},
               {"dropped", "cupti_activity"}, {"push", "nvtx"},
               {"pop", "nvtx"},              {"start", "nvtx"},
               {"end", "nvtx"},              {"pcs", "pc_sampling"},
               {"stall", "pc_sampling"},     {"module", "pc_sampling"},
               {"pc", "pc_sampling"},        {"pcline", "pc_sampling"},
               {"pcs_totals", "pc_sampling"}, {"armed", "region_runtime"},
               {"dnode", ""},                {"region", ""}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i].e, e) == 0)
            return map[i].be;
    return NULL;
}

static int on_line(void *ctx, const char *where, long line, cJSON *doc, char *err, size_t errlen)
{
    (void)where;
    (void)err;
    (void)errlen;
    recording *r = ctx;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "e");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, line == 1 ? "cupti" : "state");
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(doc, line == 1 ? "note" : "note");
    if (line == 1) {
        const cJSON *t0 = cJSON_GetObjectItemCaseSensitive(doc, "t0");
        if (cJSON_IsString(t0))
            snprintf(r->t0, sizeof r->t0, "%s", t0->valuestring);
    }
    if ((line == 1 || (cJSON_IsString(e) && strcmp(e->valuestring, "cupti") == 0)) &&
        cJSON_IsString(st)) {
        snprintf(r->cupti, sizeof r->cupti, "%s", st->valuestring);
        snprintf(r->note, sizeof r->note, "%s", cJSON_IsString(note) ? note->valuestring : "");
        return 0;
    }
    if (!cJSON_IsString(e))
        return 0;
    if (strcmp(e->valuestring, "unavailable") == 0) {
        cJSON_AddItemToArray(r->unavail, cJSON_Duplicate(doc, 1));
        return 0;
    }
    const char *be = line_backend(e->valuestring);
    cJSON *to = be == NULL                             ? NULL
                : strcmp(be, "cupti_activity") == 0    ? r->kernels
                : strcmp(be, "nvtx") == 0              ? r->nvtx
                : strcmp(be, "pc_sampling") == 0       ? r->pcs
                : strcmp(be, "region_runtime") == 0    ? r->armed
                                                       : NULL;
    if (to != NULL)
        cJSON_AddItemToArray(to, cJSON_Duplicate(doc, 1));
    return 0;
}

static void recording_free(recording *r)
{
    cJSON_Delete(r->kernels);
    cJSON_Delete(r->nvtx);
    cJSON_Delete(r->pcs);
    cJSON_Delete(r->armed);
    cJSON_Delete(r->unavail);
}

/* The reason an "unavailable" line gives for `what`, or NULL. */
static const char *unavailable_why(const recording *r, const char *what)
{
    const cJSON *u;
    cJSON_ArrayForEach(u, r->unavail)
    {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(u, "what");
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(u, "why");
        if (cJSON_IsString(w) && strcmp(w->valuestring, what) == 0 && cJSON_IsString(y))
            return y->valuestring;
    }
    return NULL;
}

/* ---- region runtime evidence ---------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One row per (region node, iteration): the node's statistics over the
 * occurrences that began in that iteration; iteration null: all of them. */
static void add_rows(cJSON *rows, const argus_trace *t, const argus_registry *reg, int64_t iter)
{
    argus_scope s;
    argus_scope_all(&s);
    if (iter >= 0)
        s.iter_lo = s.iter_hi = iter;
    argus_region_stats *st = NULL;
    size_t n = 0;
    if (argus_stats(t, &s, &st, &n) != 0)
        return;
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        if (argus_node_path(t, reg, st[i].node, path, sizeof path) != 0)
            continue;
        cJSON *r = cJSON_CreateArray();
        cJSON_AddItemToArray(r, cJSON_CreateString(path));
        cJSON_AddItemToArray(r, iter >= 0 ? cJSON_CreateNumber((double)iter) : cJSON_CreateNull());
        cJSON_AddItemToArray(r, cJSON_CreateNumber((double)st[i].count));
        cJSON_AddItemToArray(r, cJSON_CreateNumber((double)st[i].timed));
        cJSON_AddItemToArray(r, cJSON_CreateNumber((double)st[i].total_cycles));
        cJSON_AddItemToArray(r, st[i].timed ? cJSON_CreateNumber((double)st[i].total_cycles /
                                                                 (double)st[i].timed)
                                            : cJSON_CreateNull());
        cJSON_AddItemToArray(r, cJSON_CreateNumber(st[i].mean_ns));
        cJSON_AddItemToArray(r, cJSON_CreateNumber(st[i].p50_ns));
        cJSON_AddItemToArray(r, cJSON_CreateNumber(st[i].max_ns));
        cJSON_AddItemToArray(r, cJSON_CreateNumber(st[i].total_ns));
        cJSON_AddItemToArray(rows, r);
    }
    free(st);
}

static cJSON *column(const char *name, const char *unit, const char *mark)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "name", name);
    cJSON_AddStringToObject(c, "unit", unit);
    cJSON_AddStringToObject(c, "mark", mark);
    return c;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The kernel an armed line names for a correlation ID, or "". */
static const char *armed_name(const recording *rec, uint64_t corr)
{
    const cJSON *l;
    cJSON_ArrayForEach(l, rec->armed)
    {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(l, "corr");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(l, "name");
        if (cJSON_IsNumber(c) && (uint64_t)c->valuedouble == corr && cJSON_IsString(n))
            return n->valuestring;
    }
    return "";
}

/* Decodes every raw_dir/arm.<corr>.raw (argus-shim writes one per
 * collected launch, before its own decode) in correlation order. Returns
 * the number of launches decoded here; problems go to notes. */
static size_t region_launches(cJSON *launches, cJSON *notes, const recording *rec,
                              const char *raw_dir, const argus__artifact *a)
{
    const argus__part *rp = argus__artifact_part(a, "registry");
    argus_registry *reg = NULL;
    char msg[1024];
    if (rp != NULL) {
        char *text = strndup((const char *)rp->data, rp->len);
        if (text == NULL || argus_registry_parse(text, "the variant's registry", &reg, msg,
                                                 sizeof msg) != 0) {
            cJSON_AddItemToArray(notes, cJSON_CreateString(text ? msg : "out of memory"));
            reg = NULL;
        }
        free(text);
    }
    uint64_t *corrs = NULL;
    size_t ncorr = 0, cap = 0;
    DIR *d = opendir(raw_dir);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        unsigned long long c;
        char tail[8];
        if (sscanf(de->d_name, "arm.%llu.ra%1s", &c, tail) != 2 || strcmp(tail, "w") != 0)
            continue;
        if (argus__grow((void **)&corrs, &cap, ncorr + 1, sizeof *corrs) != 0)
            break;
        corrs[ncorr++] = c;
    }
    if (d != NULL)
        closedir(d);
    if (ncorr > 0)
        qsort(corrs, ncorr, sizeof *corrs, cmp_u64);
    size_t decoded = 0;
    for (size_t ci = 0; ci < ncorr; ci++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/arm.%llu.raw", raw_dir, (unsigned long long)corrs[ci]);
        unsigned char *buf = NULL;
        size_t len = 0;
        if (argus__read_bin(path, (size_t)1 << 31, &buf, &len, msg, sizeof msg) != 0) {
            cJSON_AddItemToArray(notes, cJSON_CreateString(msg));
            continue;
        }
        argus_trace t;
        argus_decode_opts o = {.cycles_per_ns = 0, .reg = reg};
        int rc = argus_decode(buf, len, &o, &t, msg, sizeof msg);
        free(buf);
        if (rc != 0) {
            char n[1200];
            snprintf(n, sizeof n, "launch %llu: %s", (unsigned long long)corrs[ci], msg);
            cJSON_AddItemToArray(notes, cJSON_CreateString(n));
            continue;
        }
        cJSON *L = cJSON_CreateObject();
        cJSON_AddNumberToObject(L, "corr", (double)corrs[ci]);
        cJSON_AddStringToObject(L, "kernel", armed_name(rec, corrs[ci]));
        cJSON_AddNumberToObject(L, "warps", (double)t.warps_active);
        cJSON_AddNumberToObject(L, "occurrences", (double)t.nocc);
        cJSON_AddNumberToObject(L, "records_lost", (double)t.records_lost);
        cJSON_AddNumberToObject(L, "diagnostics", (double)(t.ndiags + t.diags_dropped));
        cJSON_AddNumberToObject(L, "sm_clock_ghz", t.cycles_per_ns);
        cJSON_AddStringToObject(L, "clock", t.clock_method == ARGUS_CLOCK_ANCHORS ? "globaltimer_anchors"
                                           : t.clock_method == ARGUS_CLOCK_GIVEN ? "given"
                                                                                 : "none");
        cJSON_AddNumberToObject(L, "span_ns", (double)(t.gt_max - t.gt_min));
        /* The iterations the occurrences began in, each once. */
        int64_t *its = calloc(t.nocc + 1, sizeof *its);
        size_t nit = 0;
        for (size_t i = 0; its != NULL && i < t.nocc; i++)
            if (t.occ[i].iter >= 0)
                its[nit++] = t.occ[i].iter;
        if (its != NULL)
            qsort(its, nit, sizeof *its, cmp_i64);
        cJSON *rows = cJSON_AddArrayToObject(L, "rows");
        add_rows(rows, &t, reg, -1);
        for (size_t i = 0; i < nit; i++)
            if (i == 0 || its[i] != its[i - 1])
                add_rows(rows, &t, reg, its[i]);
        free(its);
        argus_trace_free(&t);
        cJSON_AddItemToArray(launches, L);
        decoded++;
    }
    free(corrs);
    argus_registry_free(reg);
    return decoded;
}

/* ---- the evidence file ------------------------------------------------------------ */

typedef struct run_info {
    const char *variant;
    const argus__artifact *a;
    const char *device;
    int ran, status, timed_out;
    double seconds, timeout_s;
    char how[160];
    char fail[8192]; /* "" when the program succeeded */
    char log_tail[2048];
    cJSON *command;
} run_info;

static cJSON *evidence_new(const char *backend, const run_info *ri)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "schema", EVIDENCE_SCHEMA);
    cJSON_AddNumberToObject(e, "version", 1);
    cJSON_AddStringToObject(e, "backend", backend);
    cJSON_AddStringToObject(e, "variant", ri->variant);
    cJSON *art = cJSON_AddObjectToObject(e, "artifact");
    char hex[ARGUS_HASH_HEX];
    argus_sha256_hex(ri->a->file, ri->a->flen, hex);
    cJSON_AddStringToObject(art, "sha256", hex);
    static const char *const keys[] = {"target", "transforms", "markers", "probe", NULL};
    for (size_t i = 0; keys[i] != NULL; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(ri->a->hdr, keys[i]);
        if (v != NULL)
            cJSON_AddItemToObject(art, keys[i], cJSON_Duplicate(v, 1));
    }
    cJSON *run = cJSON_AddObjectToObject(e, "run");
    cJSON_AddStringToObject(run, "tool", "argus-shim");
    cJSON_AddItemToObject(run, "command", cJSON_Duplicate(ri->command, 1));
    cJSON_AddStringToObject(run, "device", ri->device);
    cJSON_AddBoolToObject(run, "ran", ri->ran);
    cJSON_AddStringToObject(run, "exit", ri->how);
    cJSON_AddNumberToObject(run, "seconds", ri->seconds);
    cJSON_AddNumberToObject(run, "timeout_s", ri->timeout_s);
    cJSON_AddBoolToObject(run, "timed_out", ri->timed_out);
    if (ri->log_tail[0])
        cJSON_AddStringToObject(run, "log_tail", ri->log_tail);
    return e;
}

static void set_state(cJSON *e, const char *state, const char *why)
{
    cJSON_AddStringToObject(e, "state", state);
    cJSON_AddStringToObject(e, "why", why ? why : "");
}

static int write_json(const char *path, cJSON *doc, char *msg, size_t msglen)
{
    char *t = cJSON_PrintUnformatted(doc);
    if (t == NULL)
        return ARGUS_ENOMEM;
    FILE *f = fopen(path, "w");
    int ok = f != NULL && fputs(t, f) >= 0 && fputc('\n', f) == '\n';
    if (f != NULL)
        ok &= fclose(f) == 0;
    cJSON_free(t);
    return ok ? 0 : argus__fail(ARGUS_EIO, msg, msglen, "%s: cannot write the evidence", path);
}

/* Why a backend that this build has no collector for is unavailable. */
static const char *not_built(const char *be)
{
    if (strcmp(be, "sass_metrics") == 0)
        return "argus-shim collects no CUPTI SASS metrics (per-PC instruction counts): this "
               "build has no collector for them, so no counts are given";
    if (strcmp(be, "range_profiler") == 0)
        return "argus-shim collects no hardware counters (CUPTI range profiler): this build has "
               "no collector for them, so no counters are given";
    if (strcmp(be, "sanitizer_patch") == 0)
        return "the CUDA Sanitizer PC-to-region map has no collector in argus exec in this "
               "build, so no map is given";
    if (strcmp(be, "bpf") == 0)
        return "BPF system tracing has no collector in argus exec in this build, so no host "
               "scheduling is given";
    return NULL;
}

static int shim_backend(const char *be)
{
    return strcmp(be, "cupti_activity") == 0 || strcmp(be, "nvtx") == 0 ||
           strcmp(be, "pc_sampling") == 0 || strcmp(be, "region_runtime") == 0;
}

static int find_shim(char *buf, size_t len)
{
    const char *env = getenv("ARGUS_SHIM");
    if (env && env[0]) {
        snprintf(buf, len, "%s", env);
        return access(buf, X_OK);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    int w = snprintf(buf, len, "%s/argus-shim", dirname(exe));
    return w < 0 || (size_t)w >= len ? -1 : access(buf, X_OK);
}

/* Substitutes {cubin} and {variant} in one argument of the run command. */
static char *subst(const char *arg, const char *cubin, const char *variant)
{
    size_t cap = strlen(arg) + 1, n = 0;
    for (const char *p = arg; (p = strchr(p, '{')) != NULL; p++)
        cap += strlen(cubin) + strlen(variant);
    char *out = malloc(cap);
    if (out == NULL)
        return NULL;
    for (const char *p = arg; *p;) {
        if (strncmp(p, "{cubin}", 7) == 0) {
            n += (size_t)sprintf(out + n, "%s", cubin);
            p += 7;
        } else if (strncmp(p, "{variant}", 9) == 0) {
            n += (size_t)sprintf(out + n, "%s", variant);
            p += 9;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    return out;
}

static void copy_log(const char *path)
{
    unsigned char *t = NULL;
    size_t n = 0;
    if (argus__read_bin(path, (size_t)1 << 30, &t, &n, NULL, 0) != 0)
        return;
    /* The end of it: the runtime keeps this process's log. */
    size_t keep = 64 * 1024, off = n > keep ? n - keep : 0;
    fwrite(t + off, 1, n - off, stderr);
    free(t);
}

int argus__exec_run(int argc, char **argv)
{
    if (argc < 6) {
        fputs("usage: argus exec run VARIANT BACKENDS ARTIFACT OUT...\n", stderr);
        return 2;
    }
    const char *variant = argv[2], *backends = argv[3], *artifact = argv[4];
    char *bel[MAX_OUTS];
    size_t nbe = 0, nout = (size_t)argc - 5;
    char bcopy[1024];
    snprintf(bcopy, sizeof bcopy, "%s", backends);
    for (char *s = NULL, *tok = strtok_r(bcopy, ",", &s); tok != NULL;
         tok = strtok_r(NULL, ",", &s)) {
        if (nbe == MAX_OUTS) {
            fprintf(stderr, "argus exec: run %s: more than %d backends\n", variant, MAX_OUTS);
            return 2;
        }
        int known = 0;
        for (int b = 0; b < ARGUS_BE_COUNT; b++)
            known |= strcmp(argus_backend_name(b), tok) == 0;
        if (!known) {
            fprintf(stderr, "argus exec: run %s: unknown backend \"%s\"; known:", variant, tok);
            for (int b = 0; b < ARGUS_BE_COUNT; b++)
                fprintf(stderr, " %s", argus_backend_name(b));
            fputc('\n', stderr);
            return 2;
        }
        bel[nbe++] = tok;
    }
    if (nbe != nout) {
        fprintf(stderr,
                "argus exec: run %s: %zu backends (%s) but %zu OUT files: one OUT per backend, "
                "in the order of BACKENDS\n",
                variant, nbe, backends, nout);
        return 2;
    }
    char msg[2048] = "", tmp[PATH_MAX];
    if (argus__tmpdir(tmp, sizeof tmp, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus exec: run %s: %s\n", variant, msg);
        return 1;
    }
    argus__prog p;
    argus__artifact a;
    memset(&p, 0, sizeof p);
    memset(&a, 0, sizeof a);
    int rc = argus__artifact_load(artifact, &a, msg, sizeof msg);
    if (rc == 0) {
        const cJSON *prog = cJSON_GetObjectItemCaseSensitive(a.hdr, "program");
        rc = cJSON_IsString(prog) ? argus__prog_load(prog->valuestring, &p, msg, sizeof msg)
                                  : argus__fail(ARGUS_EINVAL, msg, sizeof msg,
                                                "%s: the artifact names no program", artifact);
    } else if (rc == ARGUS_EINVAL) {
        /* The program as given (v0): its base build, made here. */
        char base[PATH_MAX + 16];
        snprintf(base, sizeof base, "%s/base.artifact", tmp);
        rc = argus__prog_load(artifact, &p, msg, sizeof msg);
        if (rc == 0)
            rc = argus__exec_build(&p, NULL, NULL, variant, 0, -1, base, msg, sizeof msg);
        if (rc == 0)
            rc = argus__artifact_load(base, &a, msg, sizeof msg);
    }
    if (rc != 0) {
        fprintf(stderr, "argus exec: run %s: %s\n", variant, msg);
        argus__prog_free(&p);
        argus__artifact_free(&a);
        argus__rmtree(tmp);
        return 1;
    }
    run_info ri;
    memset(&ri, 0, sizeof ri);
    ri.variant = variant;
    ri.a = &a;
    ri.timeout_s = p.timeout_s > 0 ? p.timeout_s : DEFAULT_TIMEOUT_S;
    const char *dev = getenv("ARGUS_EXEC_DEVICE");
    if (dev == NULL || !dev[0])
        dev = p.device[0] ? p.device : NULL;
    if (dev == NULL || !dev[0])
        dev = getenv("CUDA_VISIBLE_DEVICES");
    if (dev == NULL || !dev[0] || strchr(dev, ','))
        dev = dev && strchr(dev, ',') ? NULL : "0";
    char devbuf[64];
    if (dev == NULL) {
        /* Several devices visible: bind to the first. */
        const char *all = getenv("CUDA_VISIBLE_DEVICES");
        snprintf(devbuf, sizeof devbuf, "%.*s", (int)strcspn(all, ","), all);
        dev = devbuf;
    }
    ri.device = dev;
    snprintf(ri.how, sizeof ri.how, "not run");
    ri.command = cJSON_CreateArray();

    int need_shim = 0, want[ARGUS_BE_COUNT] = {0};
    for (size_t i = 0; i < nbe; i++) {
        need_shim |= shim_backend(bel[i]);
        for (int b = 0; b < ARGUS_BE_COUNT; b++)
            want[b] |= strcmp(argus_backend_name(b), bel[i]) == 0;
    }
    int markers = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a.hdr, "markers"));
    char cubin[PATH_MAX + 16], shimdir[PATH_MAX + 16], rawdir[PATH_MAX + 16],
        runlog[PATH_MAX + 16], events[PATH_MAX + 32], shim[PATH_MAX];
    snprintf(cubin, sizeof cubin, "%s/variant.cubin", tmp);
    snprintf(shimdir, sizeof shimdir, "%s/shim", tmp);
    snprintf(rawdir, sizeof rawdir, "%s/raw", tmp);
    snprintf(runlog, sizeof runlog, "%s/run.log", tmp);
    snprintf(events, sizeof events, "%s/events.jsonl", shimdir);
    recording rec;
    memset(&rec, 0, sizeof rec);
    rec.kernels = cJSON_CreateArray();
    rec.nvtx = cJSON_CreateArray();
    rec.pcs = cJSON_CreateArray();
    rec.armed = cJSON_CreateArray();
    rec.unavail = cJSON_CreateArray();
    const argus__part *cb = argus__artifact_part(&a, "cubin");
    if (need_shim) {
        if (cb == NULL) {
            snprintf(ri.fail, sizeof ri.fail, "the artifact has no cubin");
        } else if (find_shim(shim, sizeof shim) != 0) {
            snprintf(ri.fail, sizeof ri.fail,
                     "argus-shim not found beside this argus (%s; set ARGUS_SHIM): the backends "
                     "%s need it",
                     shim, backends);
        } else {
            FILE *f = fopen(cubin, "wb");
            int ok = f != NULL && fwrite(cb->data, 1, cb->len, f) == cb->len;
            ok &= f != NULL && fclose(f) == 0;
            mkdir(rawdir, 0700);
            if (!ok)
                snprintf(ri.fail, sizeof ri.fail, "%s: cannot write the cubin", cubin);
        }
    }
    if (need_shim && ri.fail[0] == '\0') {
        const char *sargv[64 + 8];
        char *owned[64];
        size_t k = 0, no = 0;
        int kernels = want[ARGUS_BE_CUPTI_ACTIVITY] || want[ARGUS_BE_REGION_RUNTIME] ||
                      want[ARGUS_BE_PC_SAMPLING];
        sargv[k++] = shim;
        if (kernels && !want[ARGUS_BE_NVTX])
            sargv[k++] = "--kernels";
        if (!kernels && want[ARGUS_BE_NVTX])
            sargv[k++] = "--nvtx";
        if (want[ARGUS_BE_PC_SAMPLING])
            sargv[k++] = "--pc-sampling";
        sargv[k++] = "-o";
        sargv[k++] = shimdir;
        sargv[k++] = "--";
        for (size_t i = 0; i < p.nrun && no < 64; i++) {
            owned[no] = subst(p.run[i], cubin, variant);
            sargv[k++] = owned[no] ? owned[no] : "";
            no++;
        }
        sargv[k] = NULL;
        for (size_t i = 0; i < k; i++)
            cJSON_AddItemToArray(ri.command, cJSON_CreateString(sargv[i]));
        char e_dev[128], e_raw[PATH_MAX + 64];
        snprintf(e_dev, sizeof e_dev, "CUDA_VISIBLE_DEVICES=%s", dev);
        snprintf(e_raw, sizeof e_raw, "ARGUS_SHIM_ARM_RAW=%s", rawdir);
        const char *env[] = {e_dev, want[ARGUS_BE_REGION_RUNTIME] ? e_raw : "ARGUS_SHIM_ARM=0",
                             NULL};
        char err[1024];
        int src = argus__spawn(sargv, env, runlog, ri.timeout_s, &ri.status, &ri.seconds, err,
                               sizeof err);
        for (size_t i = 0; i < no; i++)
            free(owned[i]);
        ri.ran = src == 0 || src == ARGUS_ELIMIT;
        ri.timed_out = src == ARGUS_ELIMIT;
        argus__status_text(ri.status, ri.how, sizeof ri.how);
        copy_log(runlog);
        char tail[1024];
        argus__log_tail(runlog, ri.log_tail, sizeof ri.log_tail);
        argus__log_tail(runlog, tail, sizeof tail);
        if (src == ARGUS_ELIMIT)
            snprintf(ri.fail, sizeof ri.fail,
                     "the program ran past its limit of %.0f s (the description's timeout_s) and "
                     "was killed with everything it started",
                     ri.timeout_s);
        else if (src != 0)
            snprintf(ri.fail, sizeof ri.fail, "%s", err);
        else if (!WIFEXITED(ri.status) || WEXITSTATUS(ri.status) != 0)
            snprintf(ri.fail, sizeof ri.fail, "the program (under argus-shim) %s: %s", ri.how,
                     tail[0] ? tail : "(no output)");
        if (access(events, R_OK) == 0) {
            rec.present = 1;
            char rerr[1024];
            if (mosaic__jsonl_read_file(events, 1L << 30, on_line, &rec, rerr, sizeof rerr) != 0)
                snprintf(ri.fail + strlen(ri.fail), sizeof ri.fail - strlen(ri.fail),
                         "%sthe recording cannot be read: %s", ri.fail[0] ? "; " : "", rerr);
        }
        if (ri.fail[0] && !ri.timed_out && (!rec.present || strcmp(rec.cupti, "unavailable") == 0))
            snprintf(ri.fail + strlen(ri.fail), sizeof ri.fail - strlen(ri.fail),
                     "; the program never initialised CUDA: no usable CUDA device "
                     "(CUDA_VISIBLE_DEVICES=%s)?",
                     dev);
    }
    /* One evidence file per backend. */
    int status = ri.fail[0] ? 1 : 0;
    for (size_t i = 0; i < nbe && status != 2; i++) {
        const char *be = bel[i];
        cJSON *e = evidence_new(be, &ri);
        const char *nb = not_built(be);
        if (nb != NULL) {
            set_state(e, "unavailable", nb);
        } else if (ri.fail[0] && !rec.present) {
            set_state(e, "failed", ri.fail);
        } else if (strcmp(be, "cupti_activity") == 0) {
            int sub = strcmp(rec.cupti, "subscribed") == 0;
            set_state(e, ri.fail[0] ? "failed" : sub ? "collected" : "unavailable",
                      ri.fail[0] ? ri.fail : sub ? "" : rec.note);
            cJSON_AddStringToObject(e, "t0", rec.t0);
            cJSON_AddStringToObject(e, "cupti", rec.cupti);
            cJSON_AddItemToObject(e, "events", cJSON_Duplicate(rec.kernels, 1));
        } else if (strcmp(be, "nvtx") == 0) {
            set_state(e, ri.fail[0] ? "failed" : "collected", ri.fail);
            cJSON_AddStringToObject(e, "t0", rec.t0);
            cJSON_AddItemToObject(e, "events", cJSON_Duplicate(rec.nvtx, 1));
        } else if (strcmp(be, "pc_sampling") == 0) {
            const char *why = unavailable_why(&rec, "pc_sampling");
            set_state(e, ri.fail[0] ? "failed" : why ? "unavailable" : "collected",
                      ri.fail[0] ? ri.fail : why);
            cJSON_AddItemToObject(e, "events", cJSON_Duplicate(rec.pcs, 1));
        } else {
            /* region_runtime */
            cJSON *launches = cJSON_CreateArray(), *notes = cJSON_CreateArray();
            size_t n = markers ? region_launches(launches, notes, &rec, rawdir, &a) : 0;
            char why[1024] = "";
            const char *dr = unavailable_why(&rec, "device_regions");
            if (!markers)
                snprintf(why, sizeof why, "the variant has no Argus markers (markers_on is not "
                                          "among its transforms)");
            else if (n == 0)
                snprintf(why, sizeof why,
                         "no armed launch of the variant was decoded%s%s (the armed lines are "
                         "kept in \"armed\")",
                         dr ? ": " : "", dr ? dr : "");
            set_state(e, ri.fail[0] ? "failed" : n ? "collected" : "unavailable",
                      ri.fail[0] ? ri.fail : why);
            cJSON *cols = cJSON_AddArrayToObject(e, "columns");
            cJSON_AddItemToArray(cols, column("path", "region path", "observed"));
            cJSON_AddItemToArray(cols, column("iter", "iteration (null: all)", "observed"));
            cJSON_AddItemToArray(cols, column("count", "occurrences", "observed"));
            cJSON_AddItemToArray(cols, column("timed", "occurrences", "observed"));
            cJSON_AddItemToArray(cols, column("total_cycles", "SM cycles", "observed"));
            cJSON_AddItemToArray(cols, column("mean_cycles", "SM cycles", "derived"));
            cJSON_AddItemToArray(cols, column("mean_ns", "ns", "derived"));
            cJSON_AddItemToArray(cols, column("p50_ns", "ns", "derived"));
            cJSON_AddItemToArray(cols, column("max_ns", "ns", "derived"));
            cJSON_AddItemToArray(cols, column("total_ns", "ns", "derived"));
            cJSON_AddItemToObject(e, "launches", launches);
            cJSON_AddItemToObject(e, "notes", notes);
            cJSON_AddItemToObject(e, "armed", cJSON_Duplicate(rec.armed, 1));
        }
        if (write_json(argv[5 + i], e, msg, sizeof msg) != 0) {
            fprintf(stderr, "argus exec: run %s: %s\n", variant, msg);
            status = 1;
        }
        cJSON_Delete(e);
    }
    if (ri.fail[0])
        fprintf(stderr, "argus exec: run %s (%s): %s\n", variant, backends, ri.fail);
    recording_free(&rec);
    cJSON_Delete(ri.command);
    argus__prog_free(&p);
    argus__artifact_free(&a);
    argus__rmtree(tmp);
    return status;
}
