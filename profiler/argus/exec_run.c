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
 *     limit (the recipe's timeout_s) kills the worker's process group,
 *     which the program stays in.
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
#include "argus/query.h"
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
    cJSON *pcs, *armed, *unavail;
} recording;

/* The recording's lines the evidence needs beyond argus-shim's report:
 * PC sampling's (its report keeps hot PCs only) and arming's. */
static int pcs_line(const char *e)
{
    static const char *const kinds[] = {"pcs", "stall", "module", "pc", "pcline", "pcs_totals"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i], e) == 0)
            return 1;
    return 0;
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
    cJSON *to = pcs_line(e->valuestring)                ? r->pcs
                : strcmp(e->valuestring, "armed") == 0 ? r->armed
                                                       : NULL;
    if (to != NULL)
        cJSON_AddItemToArray(to, cJSON_Duplicate(doc, 1));
    return 0;
}

static void recording_free(recording *r)
{
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

/* Every raw_dir/arm.<corr>.raw (argus-shim writes one per collected
 * launch, before its own decode), in correlation order, as the evidence's
 * launches: the bytes exactly, base64. Each is decoded here first, with
 * the variant's registry, so that a buffer the synthesis could not read is
 * named now (in why) and left out. Returns the launches kept. */
static size_t region_launches(cJSON *launches, char *why, size_t whylen, const recording *rec,
                              const char *raw_dir, const argus__artifact *a)
{
    const argus__part *rp = argus__artifact_part(a, "registry");
    argus_registry *reg = NULL;
    char msg[1024];
    size_t wl = 0;
    why[0] = '\0';
    if (rp != NULL) {
        char *text = strndup((const char *)rp->data, rp->len);
        if (text == NULL ||
            argus_registry_parse(text, "the variant's registry", &reg, msg, sizeof msg) != 0)
            reg = NULL;
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
    size_t kept = 0;
    for (size_t ci = 0; ci < ncorr; ci++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/arm.%llu.raw", raw_dir, (unsigned long long)corrs[ci]);
        unsigned char *buf = NULL;
        size_t len = 0;
        int rc = argus__read_bin(path, (size_t)1 << 31, &buf, &len, msg, sizeof msg);
        argus_trace t;
        argus_decode_opts o = {.cycles_per_ns = 0, .reg = reg};
        if (rc == 0 && (rc = argus_decode(buf, len, &o, &t, msg, sizeof msg)) == 0) {
            /* Region IDs the variant's registry lacks: not this variant's
             * buffer (or not its registry), never joined as if it were. */
            size_t unknown = 0;
            for (size_t k = 0; k < t.ndiags; k++)
                unknown += t.diags[k].kind == ARGUS_DIAG_UNKNOWN_REGION;
            argus_trace_free(&t);
            if (unknown > 0 && reg != NULL)
                rc = argus__fail(ARGUS_EREGISTRY, msg, sizeof msg,
                                 "%zu region IDs in it are not in the variant's registry: not "
                                 "this variant's buffer",
                                 unknown);
        }
        char *text = rc == 0 ? argus__base64(buf, len, NULL) : NULL;
        free(buf);
        if (text == NULL) {
            int w = snprintf(why + wl, whylen - wl, "%slaunch %llu left out: %s", wl ? "; " : "",
                             (unsigned long long)corrs[ci], rc ? msg : "out of memory");
            if (w > 0 && (size_t)w < whylen - wl)
                wl += (size_t)w;
            continue;
        }
        cJSON *L = cJSON_CreateObject();
        cJSON_AddStringToObject(L, "kernel", armed_name(rec, corrs[ci]));
        cJSON_AddStringToObject(L, "raw_base64", text);
        free(text);
        cJSON_AddItemToArray(launches, L);
        kept++;
    }
    free(corrs);
    argus_registry_free(reg);
    return kept;
}

/* ---- PC sampling evidence --------------------------------------------------------- */

/* The recording's stall lines as names in index order, its pc lines
 * summed per (function, PC) over launches, its pcs_totals summed. */
static int pcs_payload(cJSON *e, const recording *rec, char *why, size_t whylen)
{
    cJSON *names = cJSON_AddArrayToObject(e, "stall_reasons");
    cJSON *pcs = cJSON_AddArrayToObject(e, "pcs");
    double samples = 0, dropped = 0;
    /* Position i is CUPTI's index i, so that a sample's [INDEX, N] names
     * its reason either way it is read; an index CUPTI skipped is named so. */
    int nstall = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, rec->pcs)
    {
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(l, "e");
        const cJSON *ix = cJSON_GetObjectItemCaseSensitive(l, "index");
        if (strcmp(ev->valuestring, "stall") == 0 && cJSON_IsNumber(ix) &&
            ix->valuedouble >= nstall && ix->valuedouble < 4096)
            nstall = (int)ix->valuedouble + 1;
    }
    for (int want = 0; want < nstall; want++) {
        char unused[48];
        snprintf(unused, sizeof unused, "(no stall reason at index %d)", want);
        const char *name = unused;
        cJSON_ArrayForEach(l, rec->pcs)
        {
            const cJSON *ev = cJSON_GetObjectItemCaseSensitive(l, "e");
            const cJSON *ix = cJSON_GetObjectItemCaseSensitive(l, "index");
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(l, "name");
            if (strcmp(ev->valuestring, "stall") == 0 && cJSON_IsNumber(ix) &&
                (int)ix->valuedouble == want && cJSON_IsString(nm))
                name = nm->valuestring;
        }
        cJSON_AddItemToArray(names, cJSON_CreateString(name));
    }
    cJSON_ArrayForEach(l, rec->pcs)
    {
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(l, "e");
        if (strcmp(ev->valuestring, "pcs_totals") == 0) {
            const cJSON *sa = cJSON_GetObjectItemCaseSensitive(l, "samples");
            const cJSON *dr = cJSON_GetObjectItemCaseSensitive(l, "dropped");
            samples += cJSON_IsNumber(sa) ? sa->valuedouble : 0;
            dropped += cJSON_IsNumber(dr) ? dr->valuedouble : 0;
            continue;
        }
        if (strcmp(ev->valuestring, "pc") != 0)
            continue;
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(l, "function");
        const cJSON *pc = cJSON_GetObjectItemCaseSensitive(l, "pc");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(l, "stall");
        cJSON *into = NULL, *it;
        cJSON_ArrayForEach(it, pcs)
        {
            if (strcmp(cJSON_GetObjectItemCaseSensitive(it, "function")->valuestring,
                       fn->valuestring) == 0 &&
                cJSON_GetObjectItemCaseSensitive(it, "pc")->valuedouble == pc->valuedouble)
                into = it;
        }
        if (into == NULL) {
            into = cJSON_CreateObject();
            cJSON_AddStringToObject(into, "function", fn->valuestring);
            cJSON_AddNumberToObject(into, "pc", pc->valuedouble);
            cJSON_AddArrayToObject(into, "stall");
            cJSON_AddItemToArray(pcs, into);
        }
        cJSON *dst = cJSON_GetObjectItemCaseSensitive(into, "stall");
        const cJSON *pair;
        cJSON_ArrayForEach(pair, st)
        {
            double ix = cJSON_GetArrayItem(pair, 0)->valuedouble;
            double n = cJSON_GetArrayItem(pair, 1)->valuedouble;
            if (ix >= nstall) {
                snprintf(why, whylen, "a PC sample names stall reason %.0f, of %d known", ix,
                         nstall);
                return -1;
            }
            cJSON *hit = NULL, *q;
            cJSON_ArrayForEach(q, dst) if (cJSON_GetArrayItem(q, 0)->valuedouble == ix) hit = q;
            if (hit != NULL) {
                cJSON *c = cJSON_GetArrayItem(hit, 1);
                cJSON_SetNumberValue(c, c->valuedouble + n);
            } else {
                cJSON *np = cJSON_CreateArray();
                cJSON_AddItemToArray(np, cJSON_CreateNumber(ix));
                cJSON_AddItemToArray(np, cJSON_CreateNumber(n));
                cJSON_AddItemToArray(dst, np);
            }
        }
    }
    cJSON *tot = cJSON_AddObjectToObject(e, "totals");
    cJSON_AddNumberToObject(tot, "samples", samples);
    cJSON_AddNumberToObject(tot, "dropped", dropped);
    return 0;
}

/* ---- the evidence file ------------------------------------------------------------ */

typedef struct run_info {
    const char *variant;
    const char *device;
    int ran, status, timed_out;
    double seconds, timeout_s;
    char how[160];
    char fail[8192]; /* "" when the program succeeded */
    char log_tail[2048];
} run_info;

/* The evidence's common fields (argus.evidence v1, docs/argus-plan.md). */
static cJSON *evidence_new(const char *backend, const run_info *ri, const argus__artifact *a)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "schema", EVIDENCE_SCHEMA);
    cJSON_AddNumberToObject(e, "version", 1);
    cJSON_AddStringToObject(e, "backend", backend);
    cJSON_AddStringToObject(e, "variant", ri->variant);
    char tool[1024], hex[ARGUS_HASH_HEX];
    const cJSON *tg = cJSON_GetObjectItemCaseSensitive(a->hdr, "target");
    argus_sha256_hex(a->file, a->flen, hex);
    snprintf(tool, sizeof tool,
             "argus exec 1 with argus-shim; artifact %.16s (%s); CUDA_VISIBLE_DEVICES=%s; the "
             "program %s after %.3f s (limit %.0f s)",
             hex, cJSON_IsString(tg) ? tg->valuestring : "?", ri->device, ri->how, ri->seconds,
             ri->timeout_s);
    cJSON_AddStringToObject(e, "tool", tool);
    return e;
}

static void set_status(cJSON *e, const char *status, const char *why)
{
    cJSON_AddStringToObject(e, "status", status);
    if (strcmp(status, "ok") != 0)
        cJSON_AddStringToObject(e, "why", why && why[0] ? why : "(no reason recorded)");
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

/* ---- the collectors that run the program under their own tool ------------------

 * sanitizer_patch (libargus_pcmap.so as the CUDA injection library),
 * bpf (argus-bpf run), range_profiler (mosaic-profile capture) and
 * sass_metrics (argus-sass) each run the variant's program once more, alone,
 * after argus-shim's run: the Sanitizer and CUPTI take one subscriber per
 * process, the range profiler and SASS metrics need CUPTI exclusively, and
 * the uprobes perturb timing (24 us a call here), so none of them shares a
 * run with another collection. Each is bound to the same device and limit as
 * the shim's run; a crash or hang of one fails its evidence only (the rest
 * is kept), and the run exits 1 so that the runtime reruns its branch. */

/* Messages below may be cut at their buffers' ends; paths are the only
 * long parts and a cut one still names the file. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-truncation"

/* The tool: ENV if set, else NAME beside this binary (REL is the path from
 * its folder), else, where path_ok, NAME on PATH. 0 when found. */
static int find_tool(const char *env, const char *rel, int path_ok, char *buf, size_t len,
                     char *tried, size_t tlen)
{
    const char *e = getenv(env);
    if (e != NULL && e[0]) {
        snprintf(buf, len, "%s", e);
        snprintf(tried, tlen, "%s (from %s)", e, env);
        return access(buf, R_OK);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        snprintf(buf, len, "%s/%s", dirname(exe), rel);
        snprintf(tried, tlen, "%s", buf);
        if (access(buf, R_OK) == 0)
            return 0;
    }
    const char *path = getenv("PATH");
    const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
    for (const char *s = path; path_ok && s != NULL && *s;) {
        size_t k = strcspn(s, ":");
        int w = snprintf(buf, len, "%.*s/%s", (int)k, s, base);
        if (w > 0 && (size_t)w < len && k > 0 && access(buf, X_OK) == 0)
            return 0;
        s += k;
        if (*s == ':')
            s++;
    }
    if (path_ok)
        snprintf(tried + strlen(tried), tlen - strlen(tried), " nor %s on PATH", base);
    return -1;
}

typedef struct ext_run {
    const argus__prog *p;
    const char *variant, *cubin, *dev, *tmp;
    double timeout_s;
    /* The task's metric names per backend (`run --metrics BACKEND=a,b`),
     * NULL where the plan gave none. */
    const char *metrics_range, *metrics_sass;
} ext_run;

/* A collector, or its evidence marked unavailable: ENV if set, else NAME
 * beside argus (REL from its folder) or, where path_ok, on PATH
 * (find_tool); not found, the evidence's why is "WHAT is not installed:
 * not found as TRIED; FIX". 0 when found (tool gets its path), 1 when the
 * evidence was marked. */
static int tool_or_unavailable(cJSON *e, const char *env, const char *rel, int path_ok,
                               const char *what, const char *fix, char *tool, size_t len)
{
    char tried[2 * PATH_MAX + 64], why[4 * PATH_MAX];
    if (find_tool(env, rel, path_ok, tool, len, tried, sizeof tried) == 0)
        return 0;
    snprintf(why, sizeof why, "%s is not installed: not found as %s; %s", what, tried, fix);
    set_status(e, "unavailable", why);
    return 1;
}

/* Runs PRE... then the program's run command, with the description's env,
 * the device and EXTRA ("NAME=VALUE", may be NULL). *code gets the exit
 * status (128 + signal); fail gets why it failed ("" when it exited 0 or
 * with one of the codes in ok_codes, a 0-terminated list beside 0). */
static void ext_spawn(const ext_run *x, const char *be, const char *const *pre,
                      const char *const *extra, const int *ok_codes, int *code, double *secs,
                      char *fail, size_t flen)
{
    const char *argv[96];
    char *owned[64];
    size_t k = 0, no = 0;
    for (size_t i = 0; pre != NULL && pre[i] != NULL && k < 24; i++)
        argv[k++] = pre[i];
    for (size_t i = 0; i < x->p->nrun && no < 64; i++) {
        owned[no] = subst(x->p->run[i], x->cubin, x->variant);
        argv[k++] = owned[no] ? owned[no] : "";
        no++;
    }
    argv[k] = NULL;
    char e_dev[128], log[PATH_MAX + 64];
    snprintf(e_dev, sizeof e_dev, "CUDA_VISIBLE_DEVICES=%s", x->dev);
    snprintf(log, sizeof log, "%s/%s.log", x->tmp, be);
    const char *env[64 + 8];
    size_t ne = 0;
    for (size_t i = 0; i < x->p->nenv && ne < 64; i++)
        env[ne++] = x->p->env[i];
    env[ne++] = e_dev;
    for (size_t i = 0; extra != NULL && extra[i] != NULL && ne < 70; i++)
        env[ne++] = extra[i];
    env[ne] = NULL;
    fprintf(stderr, "argus exec: run %s (%s) on CUDA_VISIBLE_DEVICES=%s:", x->variant, be, x->dev);
    for (size_t i = 0; i < k; i++)
        fprintf(stderr, " %s", argv[i]);
    fputc('\n', stderr);
    int st = 0;
    char err[1024], tail[1024];
    int rc = argus__spawn(argv, env, log, x->timeout_s, &st, secs, err, sizeof err);
    copy_log(log);
    argus__log_tail(log, tail, sizeof tail);
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
    fail[0] = '\0';
    char how[160];
    argus__status_text(st, how, sizeof how);
    int ok = rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    for (size_t i = 0; rc == 0 && WIFEXITED(st) && ok_codes != NULL && ok_codes[i]; i++)
        ok |= WEXITSTATUS(st) == ok_codes[i];
    if (rc == ARGUS_ELIMIT)
        snprintf(fail, flen,
                 "%s: the program under %s ran past its limit of %.0f s (the description's "
                 "timeout_s) and was killed with everything it started; the other backends' "
                 "evidence is kept",
                 be, argv[0], x->timeout_s);
    else if (rc != 0)
        snprintf(fail, flen, "%s: %s", be, err);
    else if (!ok)
        snprintf(fail, flen, "%s: the program under %s %s: %s; the other backends' evidence is "
                             "kept",
                 be, argv[0], how, tail[0] ? tail : "(no output)");
    for (size_t i = 0; i < no; i++)
        free(owned[i]);
}

/* A JSON file the tool wrote, or NULL with why. */
static cJSON *read_out(const char *path, const char *what, char *why, size_t wlen)
{
    cJSON *doc = NULL;
    char err[512];
    if (access(path, R_OK) != 0) {
        snprintf(why, wlen, "%s wrote no output (%s)", what, path);
        return NULL;
    }
    if (mosaic__json_read_file(path, 1L << 30, &doc, err, sizeof err) != 0) {
        snprintf(why, wlen, "%s's output cannot be read: %s", what, err);
        return NULL;
    }
    return doc;
}

static int jl_collect(void *ctx, const char *where, long line, cJSON *doc, char *err,
                      size_t errlen)
{
    (void)where;
    (void)line;
    (void)err;
    (void)errlen;
    cJSON_AddItemToArray((cJSON *)ctx, cJSON_Duplicate(doc, 1));
    return 0;
}


/* argus.pcmap v1 as the evidence's "map": one entry per (PC, region
 * path, iteration, role), PCs of no function left out (attribution keys by
 * function and offset). */
static cJSON *pcmap_to_map(const cJSON *m)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *regions = cJSON_GetObjectItemCaseSensitive(m, "regions");
    const cJSON *pc;
    cJSON_ArrayForEach(pc, cJSON_GetObjectItemCaseSensitive(m, "pcs"))
    {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(pc, "function");
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(pc, "offset");
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(pc, "iter");
        const cJSON *ro = cJSON_GetObjectItemCaseSensitive(pc, "role");
        if (!cJSON_IsString(fn) || !cJSON_IsString(off))
            continue;
        const cJSON *pair;
        cJSON_ArrayForEach(pair, cJSON_GetObjectItemCaseSensitive(pc, "exec"))
        {
            const cJSON *ri = cJSON_GetArrayItem(pair, 0), *n = cJSON_GetArrayItem(pair, 1);
            const cJSON *r = cJSON_IsNumber(ri) ? cJSON_GetArrayItem(regions, ri->valueint) : NULL;
            const cJSON *path = cJSON_GetObjectItemCaseSensitive(r, "path");
            if (!cJSON_IsString(path) || !cJSON_IsNumber(n))
                continue;
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "function", fn->valuestring);
            cJSON_AddNumberToObject(x, "pc", (double)strtoull(off->valuestring, NULL, 0));
            cJSON_AddStringToObject(x, "region", path->valuestring);
            cJSON_AddNumberToObject(x, "count", n->valuedouble);
            if (cJSON_IsNumber(it))
                cJSON_AddNumberToObject(x, "iter", it->valuedouble);
            if (cJSON_IsString(ro))
                cJSON_AddStringToObject(x, "role", ro->valuestring);
            cJSON_AddItemToArray(out, x);
        }
    }
    return out;
}

/* argus.sassmetrics v1 as the evidence's "metrics" and "pcs": per kernel
 * ("name" or "function"), per PC ("offset" or "pc", a number or "0x.."),
 * every other numeric member a metric value. */
static void sass_to_pcs(const cJSON *s, cJSON *e)
{
    cJSON *names = cJSON_CreateArray(), *pcs = cJSON_CreateArray();
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(s, "kernels"))
    {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(k, "function");
        if (!cJSON_IsString(fn))
            fn = cJSON_GetObjectItemCaseSensitive(k, "name");
        if (!cJSON_IsString(fn))
            continue;
        const cJSON *pc;
        cJSON_ArrayForEach(pc, cJSON_GetObjectItemCaseSensitive(k, "pcs"))
        {
            const cJSON *off = cJSON_GetObjectItemCaseSensitive(pc, "offset");
            if (off == NULL)
                off = cJSON_GetObjectItemCaseSensitive(pc, "pc");
            double o = cJSON_IsNumber(off)   ? off->valuedouble
                       : cJSON_IsString(off) ? (double)strtoull(off->valuestring, NULL, 0)
                                             : -1;
            if (o < 0)
                continue;
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "function", fn->valuestring);
            cJSON_AddNumberToObject(x, "pc", o);
            cJSON *v = cJSON_AddObjectToObject(x, "values");
            const cJSON *m;
            cJSON_ArrayForEach(m, pc)
            {
                if (!cJSON_IsNumber(m) || strcmp(m->string, "offset") == 0 ||
                    strcmp(m->string, "pc") == 0 || m->valuedouble < 0)
                    continue;
                cJSON_AddNumberToObject(v, m->string, m->valuedouble);
                int seen = 0;
                const cJSON *nm;
                cJSON_ArrayForEach(nm, names) seen |= strcmp(nm->valuestring, m->string) == 0;
                if (!seen)
                    cJSON_AddItemToArray(names, cJSON_CreateString(m->string));
            }
            cJSON_AddItemToArray(pcs, x);
        }
    }
    cJSON_AddItemToObject(e, "metrics", names);
    cJSON_AddItemToObject(e, "pcs", pcs);
}

/* The metric names a backend collects: the task's (the plan's Collect
 * configuration, `run --metrics BACKEND=a,b`, part of the run's key), or
 * ARGUS_EXEC_METRICS (a comma list) where it is set, an override for
 * trying a collector by hand: it is not in the task key, so evidence made
 * under it is stored as if the task's names had been asked, and the
 * evidence's `tool` says it was used. NULL: the tool's defaults, all kept.
 * *from gets "task", "ARGUS_EXEC_METRICS" or "defaults". */
static const char *exec_metrics(const ext_run *x, int be, const char **from)
{
    const char *m = getenv("ARGUS_EXEC_METRICS");
    if (m != NULL && m[0]) {
        *from = "ARGUS_EXEC_METRICS";
        return m;
    }
    const char *t = be == ARGUS_BE_RANGE_PROFILER ? x->metrics_range : x->metrics_sass;
    *from = t != NULL && t[0] ? "task" : "defaults";
    return t != NULL && t[0] ? t : NULL;
}

/* The feature key a requested metric name means (the key itself or its
 * counter, e.g. dram__bytes_read.sum), or NULL with the nearest known names
 * in why. */
static const char *feature_key(const cJSON *feats, const char *want, char *why, size_t wlen)
{
    const char *names[128];
    size_t n = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, feats)
    {
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(f, "key");
        const cJSON *met = cJSON_GetObjectItemCaseSensitive(f, "metric");
        if (!cJSON_IsString(key))
            continue;
        if (strcmp(key->valuestring, want) == 0 ||
            (cJSON_IsString(met) && strcmp(met->valuestring, want) == 0))
            return key->valuestring;
        if (n < sizeof names / sizeof names[0])
            names[n++] = cJSON_IsString(met) ? met->valuestring : key->valuestring;
    }
    char near[512];
    if (argus_nearest_names(want, names, n, 3, near, sizeof near) == 0)
        snprintf(near, sizeof near, "(none close)");
    snprintf(why, wlen,
             "the range profiler does not know the metric \"%s\" (mosaic-profile's feature "
             "table names what it collects); nearest: %s",
             want, near);
    return NULL;
}

/* mosaic-profile/1 as the evidence's "kernels": each kernel's known
 * metric values with the unit its feature table gives; only the metrics of
 * ARGUS_EXEC_METRICS where it is set (NULL with why when it names one the
 * profile does not have). */
static cJSON *profile_to_kernels(const cJSON *prof, const char *want, char *why, size_t wlen)
{
    const cJSON *feats0 = cJSON_GetObjectItemCaseSensitive(prof, "features");
    const char *keys[64];
    size_t nk = 0;
    if (want != NULL) {
        char copy[2048];
        snprintf(copy, sizeof copy, "%s", want);
        for (char *sv = NULL, *t = strtok_r(copy, ",", &sv); t != NULL && nk < 64;
             t = strtok_r(NULL, ",", &sv)) {
            const char *k = feature_key(feats0, t, why, wlen);
            if (k == NULL)
                return NULL;
            keys[nk++] = k;
        }
    }
    cJSON *out = cJSON_CreateArray();
    const cJSON *feats = cJSON_GetObjectItemCaseSensitive(prof, "features");
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(prof, "kernels"))
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(k, "name");
        const cJSON *ln = cJSON_GetObjectItemCaseSensitive(k, "launches");
        if (!cJSON_IsString(nm) || nm->valuestring[0] == '\0')
            continue;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", nm->valuestring);
        cJSON_AddNumberToObject(x, "launch", cJSON_IsNumber(ln) ? ln->valuedouble : 0);
        cJSON *mv = cJSON_AddObjectToObject(x, "metrics");
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(k, "metrics"))
        {
            if (!cJSON_IsNumber(m))
                continue; /* null: not collected, never a zero */
            int keep = want == NULL;
            for (size_t q = 0; q < nk; q++)
                keep |= strcmp(keys[q], m->string) == 0;
            if (!keep)
                continue;
            const char *unit = "1";
            const cJSON *f;
            cJSON_ArrayForEach(f, feats)
            {
                const cJSON *key = cJSON_GetObjectItemCaseSensitive(f, "key");
                const cJSON *u = cJSON_GetObjectItemCaseSensitive(f, "unit");
                if (cJSON_IsString(key) && strcmp(key->valuestring, m->string) == 0 &&
                    cJSON_IsString(u) && u->valuestring[0])
                    unit = u->valuestring;
            }
            cJSON *o = cJSON_AddObjectToObject(mv, m->string);
            cJSON_AddNumberToObject(o, "value", m->valuedouble);
            cJSON_AddStringToObject(o, "unit", unit);
        }
        cJSON_AddItemToArray(out, x);
    }
    return out;
}

/* One external backend's evidence into e (status and payload). Returns 1
 * when it failed (the run then exits 1), else 0. */
static int ext_collect(const ext_run *x, int be, cJSON *e)
{
    char tool[PATH_MAX], out[PATH_MAX + 64], fail[8192] = "", why[8192] = "";
    const char *name = argus_backend_name(be);
    int code = 0;
    double secs = 0;
    cJSON *doc = NULL;
    const char *m_asked = NULL, *m_from = NULL; /* the metrics: which, from where */
    if (be == ARGUS_BE_SANITIZER) {
        if (tool_or_unavailable(e, "ARGUS_PCMAP_LIB", "../lib/libargus_pcmap.so", 0,
                                "the PC-to-region map's tool (libargus_pcmap.so)",
                                "build the argus_pcmap target or set ARGUS_PCMAP_LIB", tool,
                                sizeof tool))
            return 0;
        snprintf(out, sizeof out, "%s/pcmap.json", x->tmp);
        char e1[2 * PATH_MAX + 32], e2[2 * PATH_MAX + 32];
        snprintf(e1, sizeof e1, "CUDA_INJECTION64_PATH=%s", tool);
        snprintf(e2, sizeof e2, "ARGUS_PCMAP_OUT=%s", out);
        const char *extra[] = {e1, e2, NULL};
        ext_spawn(x, name, NULL, extra, NULL, &code, &secs, fail, sizeof fail);
        doc = read_out(out, "argus-pcmap", why, sizeof why);
        if (doc != NULL) {
            cJSON_AddItemToObject(e, "map", pcmap_to_map(doc));
            const cJSON *cp = cJSON_GetObjectItemCaseSensitive(doc, "complete");
            if (!cJSON_IsTrue(cp))
                cJSON_AddStringToObject(e, "incomplete", "the map says it is incomplete "
                                                         "(its problems in the log)");
            cJSON_Delete(doc);
            doc = cJSON_CreateTrue();
        }
    } else if (be == ARGUS_BE_BPF) {
        if (tool_or_unavailable(e, "ARGUS_BPF_BIN", "argus-bpf", 0,
                                "argus-bpf (the BPF system-tracing collector)",
                                "build it or set ARGUS_BPF_BIN", tool, sizeof tool))
            return 0;
        /* Can this process trace? argus-bpf probe says why not (CAP_BPF and
         * CAP_PERFMON, the uprobe PMU, the kernel's bpf()). */
        const char *pargv[] = {tool, "probe", NULL};
        char plog[PATH_MAX + 64], err[512], ptail[2048];
        snprintf(plog, sizeof plog, "%s/bpf_probe.log", x->tmp);
        int st = 0;
        int rc = argus__spawn(pargv, NULL, plog, 30, &st, NULL, err, sizeof err);
        argus__log_tail(plog, ptail, sizeof ptail);
        if (rc != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            snprintf(why, sizeof why,
                     "BPF tracing is not possible for this process (argus-bpf probe: %s): it "
                     "needs CAP_BPF and CAP_PERFMON (or root) and the uprobe PMU",
                     ptail[0] ? ptail : rc ? err : "no reason given");
            set_status(e, "unavailable", why);
            return 0;
        }
        snprintf(out, sizeof out, "%s/bpf.jsonl", x->tmp);
        const char *pre[] = {tool, "run", "-o", out, "--", NULL};
        const char *lib = getenv("ARGUS_BPF_LIB");
        const char *pre_lib[] = {tool, "run", "-o", out, "--lib", lib, "--", NULL};
        ext_spawn(x, name, lib && lib[0] ? pre_lib : pre, NULL, NULL, &code, &secs, fail,
                  sizeof fail);
        cJSON *ev = cJSON_CreateArray();
        char rerr[512];
        if (access(out, R_OK) != 0) {
            snprintf(why, sizeof why, "argus-bpf wrote no output (%s)", out);
            cJSON_Delete(ev);
        } else if (mosaic__jsonl_read_file(out, 1L << 30, jl_collect, ev, rerr, sizeof rerr) !=
                   0) {
            snprintf(why, sizeof why, "argus-bpf's output cannot be read: %s", rerr);
            cJSON_Delete(ev);
        } else {
            doc = ev;
            cJSON_AddItemToObject(e, "events", ev);
        }
    } else if (be == ARGUS_BE_RANGE_PROFILER) {
        if (tool_or_unavailable(e, "MOSAIC_PROFILE_BIN", "mosaic-profile", 0,
                                "mosaic-profile (the range profiler's collector)",
                                "build it or set MOSAIC_PROFILE_BIN", tool, sizeof tool))
            return 0;
        snprintf(out, sizeof out, "%s/profile.json", x->tmp);
        const char *pre[] = {tool, "capture", "-o", out, "--", NULL};
        /* docs/profile-schema.md: 2 no kernel, 3 incomplete: a profile
         * that says so; 4 the program failed, 5 cannot start. */
        static const int okc[] = {2, 3, 0};
        ext_spawn(x, name, pre, NULL, okc, &code, &secs, fail, sizeof fail);
        doc = read_out(out, "mosaic-profile capture", why, sizeof why);
        m_asked = exec_metrics(x, be, &m_from);
        if (doc != NULL) {
            cJSON *ks = profile_to_kernels(doc, m_asked, why, sizeof why);
            cJSON_Delete(doc);
            doc = NULL;
            if (ks != NULL) {
                cJSON_AddItemToObject(e, "kernels", ks);
                doc = cJSON_CreateTrue();
            }
        }
    } else {
        /* sass_metrics: argus-sass (branch h-sass), beside argus or on PATH. */
        if (tool_or_unavailable(e, "ARGUS_SASS", "argus-sass", 1,
                                "argus-sass (the CUPTI SASS Metrics collector)",
                                "build it (docs/argus-backends.md) or set ARGUS_SASS, and "
                                "instructions executed per PC can be collected",
                                tool, sizeof tool))
            return 0;
        snprintf(out, sizeof out, "%s/sass.json", x->tmp);
        const char *m = m_asked = exec_metrics(x, be, &m_from);
        const char *pre[] = {tool, "--out", out, "--", NULL};
        const char *pre_m[] = {tool, "--out", out, "--metrics", m, "--", NULL};
        ext_spawn(x, name, m ? pre_m : pre, NULL, NULL, &code, &secs, fail, sizeof fail);
        doc = read_out(out, "argus-sass", why, sizeof why);
        if (doc != NULL) {
            const cJSON *sc = cJSON_GetObjectItemCaseSensitive(doc, "schema");
            if (!cJSON_IsString(sc) || strcmp(sc->valuestring, "argus.sassmetrics") != 0) {
                snprintf(why, sizeof why,
                         "argus-sass's output is not \"argus.sassmetrics\" v1 (schema %s): not "
                         "joined",
                         cJSON_IsString(sc) ? sc->valuestring : "missing");
                cJSON_Delete(doc);
                doc = NULL;
            } else {
                sass_to_pcs(doc, e);
                cJSON_Delete(doc);
                doc = cJSON_CreateTrue();
            }
        }
    }
    cJSON_AddNumberToObject(e, "collector_s", secs);
    cJSON_AddNumberToObject(e, "collector_exit", code);
    /* What ran is this collector, not argus-shim. */
    char desc[PATH_MAX + 4096];
    int dl = snprintf(desc, sizeof desc,
                      "argus exec 1 with %s; CUDA_VISIBLE_DEVICES=%s; exit %d after %.3f s "
                      "(limit %.0f s)",
                      tool, x->dev, code, secs, x->timeout_s);
    if (m_from != NULL && dl > 0 && (size_t)dl < sizeof desc)
        snprintf(desc + dl, sizeof desc - (size_t)dl, "; metrics %s (from %s)",
                 m_asked ? m_asked : "the tool's defaults", m_from);
    cJSON_ReplaceItemInObjectCaseSensitive(e, "tool", cJSON_CreateString(desc));
    if (fail[0]) {
        if (why[0])
            snprintf(fail + strlen(fail), sizeof fail - strlen(fail), "; %s", why);
        set_status(e, "failed", fail);
        fprintf(stderr, "argus exec: run %s: %s\n", x->variant, fail);
        return 1;
    }
    int got = doc != NULL;
    if (be != ARGUS_BE_BPF)
        cJSON_Delete(doc);
    if (!got) {
        set_status(e, "failed", why);
        fprintf(stderr, "argus exec: run %s: %s: %s\n", x->variant, name, why);
        return 1;
    }
    set_status(e, "ok", NULL);
    return 0;
}

#pragma GCC diagnostic pop

int argus__exec_run(int argc, char **argv)
{
    /* run [--metrics BACKEND=a,b]... VARIANT BACKENDS ARTIFACT OUT...: the
     * plan's metric names per backend (range_profiler, sass_metrics),
     * taken off the front so that the rest reads as it always did. */
    const char *m_range = NULL, *m_sass = NULL;
    while (argc > 3 && strcmp(argv[2], "--metrics") == 0) {
        const char *v = argv[3];
        const char *eq = strchr(v, '=');
        size_t bl = eq ? (size_t)(eq - v) : 0;
        if (eq != NULL && bl == strlen("range_profiler") && strncmp(v, "range_profiler", bl) == 0)
            m_range = eq + 1;
        else if (eq != NULL && bl == strlen("sass_metrics") &&
                 strncmp(v, "sass_metrics", bl) == 0)
            m_sass = eq + 1;
        else {
            fprintf(stderr,
                    "argus exec: run: --metrics %s: expected BACKEND=NAME,NAME... with BACKEND "
                    "range_profiler or sass_metrics (the backends that take metric names)\n",
                    v);
            return 2;
        }
        memmove(argv + 2, argv + 4, (size_t)(argc - 4 + 1) * sizeof *argv);
        argc -= 2;
    }
    if (argc < 6) {
        fputs("usage: argus exec run [--metrics BACKEND=a,b]... VARIANT BACKENDS ARTIFACT "
              "OUT...\n",
              stderr);
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
    } else if (rc == ARGUS_EINVAL && !a.trailer) {
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
    ri.timeout_s = p.timeout_s > 0 ? p.timeout_s : DEFAULT_TIMEOUT_S;
    /* One device: the override, the description's, else the first one
     * this process may see, else 0. */
    char dev[64];
    const char *d = getenv("ARGUS_EXEC_DEVICE");
    if (d == NULL || !d[0])
        d = p.device[0] ? p.device : getenv("CUDA_VISIBLE_DEVICES");
    if (d == NULL || !d[0])
        d = "0";
    snprintf(dev, sizeof dev, "%.*s", (int)strcspn(d, ","), d);
    ri.device = dev;
    snprintf(ri.how, sizeof ri.how, "not run");

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
        /* What ran, into this worker's log (the runtime keeps it). */
        fprintf(stderr, "argus exec: run %s (%s) on CUDA_VISIBLE_DEVICES=%s:", variant, backends,
                dev);
        for (size_t i = 0; i < k; i++)
            fprintf(stderr, " %s", sargv[i]);
        fputc('\n', stderr);
        char e_dev[128], e_raw[PATH_MAX + 64];
        snprintf(e_dev, sizeof e_dev, "CUDA_VISIBLE_DEVICES=%s", dev);
        snprintf(e_raw, sizeof e_raw, "ARGUS_SHIM_ARM_RAW=%s", rawdir);
        /* The description's env first, so that the device and arming
         * settings the backends need are the ones that hold. */
        const char *env[64 + 3];
        size_t ne = 0;
        for (size_t i = 0; i < p.nenv && ne < 64; i++)
            env[ne++] = p.env[i];
        env[ne++] = e_dev;
        env[ne++] = want[ARGUS_BE_REGION_RUNTIME] ? e_raw : "ARGUS_SHIM_ARM=0";
        env[ne] = NULL;
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
    cJSON *report = NULL;
    if (rec.present) {
        char rp[PATH_MAX + 32], rerr[512];
        snprintf(rp, sizeof rp, "%s/report.json", shimdir);
        if (access(rp, R_OK) == 0 &&
            mosaic__json_read_file(rp, 1L << 30, &report, rerr, sizeof rerr) != 0)
            report = NULL;
    }
    int status = ri.fail[0] ? 1 : 0;
    for (size_t i = 0; i < nbe; i++) {
        const char *be = bel[i];
        cJSON *e = evidence_new(be, &ri, &a);
        char why[4096] = "";
        int beid = -1;
        for (int b = 0; b < ARGUS_BE_COUNT; b++)
            if (strcmp(argus_backend_name(b), be) == 0)
                beid = b;
        if (!shim_backend(be)) {
            if (cb == NULL) {
                set_status(e, "failed", "the artifact has no cubin");
                status = 1;
            } else {
                if (!need_shim) {
                    FILE *f = fopen(cubin, "wb");
                    if (f != NULL) {
                        fwrite(cb->data, 1, cb->len, f);
                        fclose(f);
                    }
                }
                ext_run x = {.p = &p, .variant = variant, .cubin = cubin, .dev = dev,
                             .metrics_range = m_range, .metrics_sass = m_sass,
                             .tmp = tmp, .timeout_s = ri.timeout_s};
                status |= ext_collect(&x, beid, e);
            }
        } else if (ri.fail[0]) {
            set_status(e, "failed", ri.fail);
        } else if (strcmp(be, "cupti_activity") == 0 || strcmp(be, "nvtx") == 0) {
            int cupti = strcmp(be, "nvtx") == 0 || strcmp(rec.cupti, "subscribed") == 0;
            if (report == NULL)
                set_status(e, "failed", "argus-shim wrote no report.json (its log has why)");
            else if (!cupti)
                set_status(e, "unavailable", rec.note[0] ? rec.note : rec.cupti);
            else
                set_status(e, "ok", NULL);
            if (report != NULL)
                cJSON_AddItemToObject(e, "report", cJSON_Duplicate(report, 1));
        } else if (strcmp(be, "pc_sampling") == 0) {
            const char *uw = unavailable_why(&rec, "pc_sampling");
            if (uw != NULL)
                set_status(e, "unavailable", uw);
            else if (pcs_payload(e, &rec, why, sizeof why) != 0)
                set_status(e, "failed", why);
            else
                set_status(e, "ok", NULL);
        } else {
            /* region_runtime */
            cJSON *launches = cJSON_CreateArray();
            size_t n = markers ? region_launches(launches, why, sizeof why, &rec, rawdir, &a) : 0;
            const char *dr = unavailable_why(&rec, "device_regions");
            char w2[4600];
            if (!markers)
                snprintf(w2, sizeof w2, "the variant has no Argus markers (markers_on is not "
                                        "among its transforms)");
            else if (n == 0)
                snprintf(w2, sizeof w2, "no armed launch of the variant was collected%s%s%s%s",
                         dr ? ": " : "", dr ? dr : "", why[0] ? "; " : "", why);
            set_status(e, n ? "ok" : "unavailable", w2);
            cJSON_AddItemToObject(e, "launches", launches);
        }
        if (write_json(argv[5 + i], e, msg, sizeof msg) != 0) {
            fprintf(stderr, "argus exec: run %s: %s\n", variant, msg);
            status = 1;
        }
        cJSON_Delete(e);
    }
    if (ri.fail[0])
        fprintf(stderr, "argus exec: run %s (%s): %s\n", variant, backends, ri.fail);
    cJSON_Delete(report);
    recording_free(&rec);
    argus__prog_free(&p);
    argus__artifact_free(&a);
    argus__rmtree(tmp);
    return status;
}
