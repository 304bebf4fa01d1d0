/*
 * argus: decode region buffers into reports and traces.
 *
 *   argus report RAW [--registry REG] [--json OUT] [--kernel NAME] [scope]
 *                    [--metrics PROFILE]
 *   argus trace RAW [--registry REG] -o OUT [--kernel NAME]
 *   argus registry SRC.cu... -o REG [--embed OUT.cuh]
 *   argus plan|query ...   (plan_cli.c: queries and measurement plans)
 *   argus ws [--ws DIR] ls|show ID|gc [--dry-run]|fork [--from VERSION] FILE [--label L]
 *
 * scope: --iter LO:HI  --role NAME  --cta LO:HI  --sm LO:HI  --warp LO:HI
 *        --region NAME (that region and the regions below it)
 * --clock GHZ gives the SM clock instead of estimating it from the anchors.
 * --metrics PROFILE joins the launch (--kernel NAME, the buffer's grid and
 * block) to its entry in a mosaic-profile/1 kernel profile: counters, % of
 * peak, a bottleneck label (include/argus/metrics.h); a refused profile or
 * one of another GPU leaves the report without them, saying why (exit 1).
 * Exit status: 0, 1 for bad input (a message says which file and field),
 * 2 for a usage error; 3 when the report was written but the buffer had
 * diagnostics and --strict was given.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/argus.h"
#include "argus/metrics.h"
#include "argus/workspace.h"
#include "core.h"
#include "exec.h"
#include "plan_cli.h"

#define MSG_LEN 512

static void usage(FILE *f)
{
    fputs("usage: argus report RAW [--registry REG] [--json OUT] [--kernel NAME] [--strict]\n"
          "                        [--clock GHZ] [--iter LO:HI] [--role NAME] [--cta LO:HI]\n"
          "                        [--sm LO:HI] [--warp LO:HI] [--region NAME]\n"
          "                        [--metrics PROFILE.json (needs --kernel NAME)]\n"
          "       argus trace RAW [--registry REG] [--kernel NAME] [--clock GHZ] -o OUT\n"
          "       argus registry SRC... -o REG [--embed OUT.cuh]\n"
          "       argus plan  --program P --signal S [--region R] [--scope ...] [options]\n"
          "       argus query --program P --signal S ... | --json FILE|-   (argus plan --help)\n"
          "       argus ws [--ws DIR] ls | show ID | gc [--dry-run] |\n"
          "                fork [--from VERSION] FILE [--label TEXT]\n"
          "       argus exec transform|run|show|discover ...   (the executor of query --run;\n"
          "                argus exec --help)\n"
          "RAW is a region buffer saved by argus_launch_collect; REG a registry JSON\n"
          "written by `argus registry`, or a cubin built with the header --embed writes\n"
          "(docs/argus.md).\n",
          f);
}

/* A raw buffer holds NUL bytes, so it is read here rather than by the
 * core's text reader; the core opens it (regular files only: a FIFO or a
 * device named by mistake is refused instead of blocking). */
static int slurp(const char *path, void **buf, size_t *len)
{
    char why[512];
    int fd = mosaic__open_regular(path, why, sizeof why);
    if (fd < 0) {
        fprintf(stderr, "argus: %s\n", why);
        return -1;
    }
    FILE *f = fdopen(fd, "rb");
    if (f == NULL) {
        fprintf(stderr, "argus: %s: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap + 1);
    for (;;) {
        if (b == NULL) {
            fclose(f);
            fprintf(stderr, "argus: %s: out of memory\n", path);
            return -1;
        }
        n += fread(b + n, 1, cap - n, f);
        if (n < cap)
            break;
        if (cap >= ((size_t)1 << 34)) {
            fclose(f);
            free(b);
            fprintf(stderr, "argus: %s: larger than 16 GiB\n", path);
            return -1;
        }
        cap *= 2;
        unsigned char *nb = realloc(b, cap + 1);
        if (nb == NULL)
            free(b);
        b = nb;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(b);
        fprintf(stderr, "argus: %s: read error\n", path);
        return -1;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

static int parse_range(const char *opt, const char *arg, int64_t *lo, int64_t *hi)
{
    char *end;
    errno = 0;
    long long a = strtoll(arg, &end, 10), b = a;
    if (*end == ':')
        b = strtoll(end + 1, &end, 10);
    if (errno || *end != '\0' || a < 0 || b < a || b > (long long)UINT32_MAX) {
        fprintf(stderr, "argus: %s %s: expected LO:HI (or N), 0 <= LO <= HI\n", opt, arg);
        return -1;
    }
    *lo = a;
    *hi = b;
    return 0;
}

static int cmd_registry(int argc, char **argv)
{
    const char *out = NULL, *embed = NULL;
    argus_registry *r;
    char msg[MSG_LEN] = "";
    if (argus_registry_new(&r) != 0)
        return 1;
    int nsrc = 0, rc = 0;
    for (int i = 0; i < argc && rc == 0; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "--embed") == 0 && i + 1 < argc) {
            embed = argv[++i];
            continue;
        }
        void *text;
        size_t len;
        if (slurp(argv[i], &text, &len) != 0) {
            rc = 1;
            break;
        }
        nsrc++;
        if (argus_registry_scan(r, text, argv[i], msg, sizeof(msg)) != 0) {
            fprintf(stderr, "argus: %s\n", msg);
            rc = 1;
        }
        free(text);
    }
    if (rc == 0 && (out == NULL || nsrc == 0)) {
        usage(stderr);
        rc = 2;
    }
    if (rc == 0 && argus_registry_save(r, out, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "argus: %s\n", msg);
        rc = 1;
    }
    if (rc == 0 && embed && argus_registry_embed(r, embed, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "argus: %s\n", msg);
        rc = 1;
    }
    if (rc == 0)
        printf("argus: %zu regions and roles from %d sources in %s\n",
               argus_registry_count(r), nsrc, out);
    argus_registry_free(r);
    return rc;
}

static int cmd_decode(int is_trace, int argc, char **argv)
{
    const char *raw = NULL, *regp = NULL, *json = NULL, *kernel = NULL, *role = NULL,
               *region = NULL, *profile = NULL;
    double clock = 0;
    int strict = 0;
    argus_scope s;
    argus_scope_all(&s);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t lo, hi;
        if (strcmp(a, "--strict") == 0 && !is_trace) {
            strict = 1;
            continue;
        }
        if (a[0] != '-') {
            if (raw != NULL) {
                usage(stderr);
                return 2;
            }
            raw = a;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "argus: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--registry") == 0) {
            regp = v;
        } else if ((strcmp(a, "--json") == 0 && !is_trace) || (strcmp(a, "-o") == 0 && is_trace)) {
            json = v;
        } else if (strcmp(a, "--kernel") == 0) {
            kernel = v;
        } else if (strcmp(a, "--clock") == 0) {
            char *end;
            clock = strtod(v, &end);
            if (*end != '\0' || !(clock > 0.01 && clock < 100)) {
                fprintf(stderr, "argus: --clock %s: the SM clock in GHz, e.g. 1.98\n", v);
                return 2;
            }
        } else if (!is_trace && strcmp(a, "--metrics") == 0) {
            profile = v;
        } else if (!is_trace && strcmp(a, "--role") == 0) {
            role = v;
        } else if (!is_trace && strcmp(a, "--region") == 0) {
            region = v;
        } else if (!is_trace && strcmp(a, "--iter") == 0) {
            if (parse_range(a, v, &lo, &hi) != 0)
                return 2;
            s.iter_lo = lo;
            s.iter_hi = hi;
        } else if (!is_trace && (strcmp(a, "--cta") == 0 || strcmp(a, "--sm") == 0 ||
                                 strcmp(a, "--warp") == 0)) {
            if (parse_range(a, v, &lo, &hi) != 0)
                return 2;
            uint32_t *pl = a[2] == 'c' ? &s.cta_lo : a[2] == 's' ? &s.sm_lo : &s.warp_lo;
            uint32_t *ph = a[2] == 'c' ? &s.cta_hi : a[2] == 's' ? &s.sm_hi : &s.warp_hi;
            *pl = (uint32_t)lo;
            *ph = (uint32_t)hi;
        } else {
            fprintf(stderr, "argus: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (raw == NULL || (is_trace && json == NULL)) {
        usage(stderr);
        return 2;
    }
    if (profile != NULL && kernel == NULL) {
        fprintf(stderr, "argus: --metrics needs --kernel NAME: the kernel's name as the profile "
                        "has it (mangled, as CUPTI names it), to find its entry\n");
        return 2;
    }
    char msg[MSG_LEN] = "";
    argus_registry *reg = NULL;
    if (regp != NULL && argus_registry_load(regp, &reg, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "argus: %s\n", msg);
        return 1;
    }
    if (role != NULL) {
        uint32_t rid = argus_region_id(role, 0);
        if (reg == NULL || argus_registry_name(reg, rid) == NULL) {
            fprintf(stderr, "argus: --role %s: no such role in %s; the registry lists "
                            "the roles its sources declare with ARGUS_ROLE\n",
                    role, regp ? regp : "(no --registry given)");
            argus_registry_free(reg);
            return 1;
        }
        s.role = rid;
    }
    if (region != NULL && argus_scope_region(&s, reg, region, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "argus: --region %s: %s\n", region, msg);
        argus_registry_free(reg);
        return 1;
    }
    void *buf;
    size_t len;
    if (slurp(raw, &buf, &len) != 0) {
        argus_registry_free(reg);
        return 1;
    }
    argus_trace t;
    argus_decode_opts o = {.cycles_per_ns = clock, .reg = reg};
    int rc = argus_decode(buf, len, &o, &t, msg, sizeof(msg));
    free(buf);
    if (rc != 0) {
        fprintf(stderr, "argus: %s: %s\n", raw, msg);
        argus_registry_free(reg);
        return 1;
    }
    int status = 0;
    if (is_trace) {
        FILE *f = fopen(json, "w");
        if (f == NULL || argus_trace_json(&t, reg, kernel, f) != 0) {
            fprintf(stderr, "argus: %s: cannot write the trace\n", json);
            status = 1;
        }
        if (f != NULL && fclose(f) != 0)
            status = 1;
        if (status == 0)
            printf("argus: %zu region occurrences of %llu warps in %s (open in ui.perfetto.dev)\n",
                   t.nocc, (unsigned long long)t.warps_active, json);
    } else {
        /* Metrics: a profile that cannot be used leaves the report as it
         * would be without --metrics, plus the reason (exit 1). */
        argus_metrics m;
        argus_metrics_init(&m);
        argus_kcfg k = {.name = kernel, .have_grid = 1, .have_block = 1};
        for (int d = 0; d < 3; d++) {
            k.grid[d] = t.hdr.grid[d];
            k.block[d] = t.hdr.block[d];
        }
        char why[1280];
        int other_gpu = 0;
        if (profile != NULL && argus_metrics_load(&m, profile, why, sizeof(why)) != 0) {
            fprintf(stderr, "argus: --metrics: %s\n", why);
            status = 1;
        } else if (profile != NULL && argus_metrics_check_trace(&m, &t, why, sizeof(why)) != 0) {
            fprintf(stderr, "argus: --metrics: %s\n", why);
            status = 1;
            other_gpu = 1;
        }
        if (argus_report_text(&t, reg, &s, kernel, stdout) != 0)
            status = 1;
        if (profile != NULL && m.state == ARGUS_METRICS_REFUSED)
            printf("hardware metrics: refused: %s\n", m.why);
        else if (other_gpu)
            printf("hardware metrics: none: %s\n", why);
        else if (profile != NULL && status == 0) {
            printf("hardware metrics: profile %s (%s)\n", m.path,
                   m.spec ? "% of peak from Argus's table" : m.spec_why);
            if (argus_metrics_text(&m, kernel, &k, stdout) != 0)
                status = 1;
        }
        if (json != NULL) {
            FILE *f = fopen(json, "w");
            if (f == NULL || argus_report_json_metrics(&t, reg, &s, kernel, profile ? &m : NULL,
                                                       &k, f) != 0) {
                fprintf(stderr, "argus: %s: cannot write the report\n", json);
                status = 1;
            }
            if (f != NULL && fclose(f) != 0)
                status = 1;
        }
        if (status == 0 && strict && (t.ndiags > 0 || t.diags_dropped > 0))
            status = 3;
        argus_metrics_free(&m);
    }
    argus_trace_free(&t);
    argus_registry_free(reg);
    return status;
}

/* ---- argus ws: the workspace (docs/argus-workspace.md) --------------- */

static const char *const ws_type_name[] = {"an object", "a task", "a version"};

struct ws_match {
    const char *prefix;
    size_t plen;
    int n;
    argus_ws_entry_type type, cur;
    char id[ARGUS_HASH_HEX];
};

static int ws_match_cb(const char *id, uint64_t bytes, void *user)
{
    (void)bytes;
    struct ws_match *m = user;
    if (strncmp(id, m->prefix, m->plen) == 0) {
        if (m->n == 0) {
            memcpy(m->id, id, ARGUS_HASH_HEX);
            m->type = m->cur;
        }
        m->n++;
    }
    return 0;
}

/* An ID given on the command line: a task key, version or object hash, or
 * a prefix of one (at least 4 hex digits) that names exactly one entry. */
static int ws_resolve(argus_ws *ws, const char *arg, argus_ws_entry_type *type,
                      char id[ARGUS_HASH_HEX])
{
    size_t n = strlen(arg);
    if (n < 4 || n > 64 || strspn(arg, "0123456789abcdef") != n) {
        fprintf(stderr, "argus ws: '%s' is not an ID: give a task key, version or object "
                        "hash, or at least its first 4 hex digits (argus ws ls lists them)\n",
                arg);
        return 2;
    }
    struct ws_match m = {.prefix = arg, .plen = n};
    char msg[MSG_LEN] = "";
    for (int t = ARGUS_WS_ENTRY_OBJECT; t <= ARGUS_WS_ENTRY_VERSION; t++) {
        m.cur = (argus_ws_entry_type)t;
        if (argus_ws_each(ws, m.cur, ws_match_cb, &m, msg, sizeof msg) != 0) {
            fprintf(stderr, "argus ws: %s\n", msg);
            return 1;
        }
    }
    if (m.n != 1) {
        fprintf(stderr, "argus ws: %s: %s in %s; %s\n", arg,
                m.n == 0 ? "no task, version or object" : "more than one entry starts so",
                argus_ws_path(ws), m.n == 0 ? "argus ws ls lists what is there"
                                            : "give more digits");
        return 1;
    }
    *type = m.type;
    memcpy(id, m.id, ARGUS_HASH_HEX);
    return 0;
}

struct ws_ls {
    argus_ws *ws;
    size_t n, damaged;
    uint64_t bytes;
};

static int ws_ls_task(const char *id, uint64_t bytes, void *user)
{
    (void)bytes;
    struct ws_ls *l = user;
    argus_ws_manifest *m = NULL;
    char msg[MSG_LEN] = "";
    l->n++;
    if (argus_ws_lookup(l->ws, id, &m, msg, sizeof msg) != 0) {
        l->damaged++;
        printf("  %.16s  DAMAGED (its task runs again): %s\n", id, msg);
        return 0;
    }
    printf("  %.16s  %-11s %-24.24s scope %-10s", id, m->kind, m->config,
           m->scope[0] ? m->scope : "(all)");
    for (size_t i = 0; i < m->noutputs; i++)
        printf(" %s=%.8s", m->outputs[i].name, m->outputs[i].hash);
    printf("\n");
    argus_ws_manifest_free(m);
    return 0;
}

static int ws_ls_version(const char *id, uint64_t bytes, void *user)
{
    (void)bytes;
    struct ws_ls *l = user;
    argus_ws_version v;
    char msg[MSG_LEN] = "";
    l->n++;
    if (argus_ws_version_get(l->ws, id, &v, msg, sizeof msg) != 0) {
        l->damaged++;
        printf("  %.16s  DAMAGED: %s\n", id, msg);
        return 0;
    }
    printf("  %.16s  parent %-16.16s artifact %.16s  \"%s\"\n", id,
           v.parent[0] ? v.parent : "(root)", v.artifact, v.label);
    argus_ws_version_clear(&v);
    return 0;
}

static int ws_ls_object(const char *id, uint64_t bytes, void *user)
{
    (void)id;
    struct ws_ls *l = user;
    l->n++;
    l->bytes += bytes;
    return 0;
}

static int ws_ls(argus_ws *ws)
{
    char msg[MSG_LEN] = "";
    struct ws_ls t = {.ws = ws}, v = {.ws = ws}, o = {.ws = ws};
    printf("workspace %s\ntasks:\n", argus_ws_path(ws));
    int rc = argus_ws_each(ws, ARGUS_WS_ENTRY_TASK, ws_ls_task, &t, msg, sizeof msg);
    if (rc == 0) {
        printf("versions:\n");
        rc = argus_ws_each(ws, ARGUS_WS_ENTRY_VERSION, ws_ls_version, &v, msg, sizeof msg);
    }
    if (rc == 0)
        rc = argus_ws_each(ws, ARGUS_WS_ENTRY_OBJECT, ws_ls_object, &o, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "argus ws: %s\n", msg);
        return 1;
    }
    printf("%zu tasks (%zu damaged), %zu versions, %zu objects of %llu bytes in all "
           "(file sizes)\n",
           t.n, t.damaged, v.n, o.n, (unsigned long long)o.bytes);
    return t.damaged + v.damaged > 0 ? 3 : 0;
}

static int ws_show(argus_ws *ws, const char *arg)
{
    argus_ws_entry_type type;
    char id[ARGUS_HASH_HEX], msg[MSG_LEN * 2] = "";
    int rc = ws_resolve(ws, arg, &type, id);
    if (rc != 0)
        return rc;
    if (type == ARGUS_WS_ENTRY_TASK) {
        argus_ws_manifest *m = NULL;
        if (argus_ws_lookup(ws, id, &m, msg, sizeof msg) != 0) {
            fprintf(stderr, "argus ws: %s\n", msg);
            return 1;
        }
        argus_ws_manifest_print(m, stdout);
        argus_ws_manifest_free(m);
        return 0;
    }
    if (type == ARGUS_WS_ENTRY_OBJECT) {
        size_t len = 0;
        if (argus_ws_verify(ws, id, &len, msg, sizeof msg) != 0) {
            fprintf(stderr, "argus ws: %s\n", msg);
            return 1;
        }
        char path[4096];
        if (argus_ws_object_path(ws, id, path, sizeof path) != 0)
            return 1;
        printf("object  %s\nbytes   %zu (hash checked)\npath    %s\n", id, len, path);
        return 0;
    }
    /* A version and its ancestry, to the root. */
    char cur[ARGUS_HASH_HEX];
    memcpy(cur, id, sizeof cur);
    for (int depth = 0; cur[0] != '\0'; depth++) {
        argus_ws_version v;
        if (argus_ws_version_get(ws, cur, &v, msg, sizeof msg) != 0) {
            fprintf(stderr, "argus ws: %s\n", msg);
            return 1;
        }
        printf("%*sversion %s \"%s\"\n%*s  artifact %s\n", 2 * depth, "", v.id, v.label,
               2 * depth, "", v.artifact);
        memcpy(cur, v.parent, sizeof cur);
        argus_ws_version_clear(&v);
        if (depth > 10000) {
            fprintf(stderr, "argus ws: %s: the version tree is damaged (a cycle)\n", id);
            return 1;
        }
    }
    return 0;
}

static int ws_gc(argus_ws *ws, int dry_run)
{
    argus_ws_gc_stats st;
    char msg[MSG_LEN] = "";
    if (argus_ws_gc(ws, dry_run, &st, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus ws: gc: %s\n", msg);
        return 1;
    }
    printf("argus ws: %s %zu objects (%llu bytes), %zu damaged manifests, %zu stale "
           "temporary files; kept %zu objects (%llu bytes)\n",
           dry_run ? "would remove" : "removed", st.objects_removed,
           (unsigned long long)st.bytes_removed, st.tasks_removed, st.tmp_removed,
           st.objects_kept, (unsigned long long)st.bytes_kept);
    return 0;
}

static int ws_fork(argus_ws *ws, const char *from, const char *file, const char *label)
{
    char art[ARGUS_HASH_HEX], id[ARGUS_HASH_HEX], parent[ARGUS_HASH_HEX] = "";
    char msg[MSG_LEN * 2] = "";
    if (from != NULL) {
        argus_ws_entry_type type;
        int rc = ws_resolve(ws, from, &type, parent);
        if (rc != 0)
            return rc;
        if (type != ARGUS_WS_ENTRY_VERSION) {
            fprintf(stderr, "argus ws: --from %s is %s, not a program version\n", from,
                    ws_type_name[type]);
            return 1;
        }
    }
    if (argus_ws_put_file(ws, file, art, msg, sizeof msg) != 0 ||
        argus_ws_fork(ws, parent, art, label, id, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus ws: fork: %s\n", msg);
        return 1;
    }
    printf("%s\n", id);
    return 0;
}

static int cmd_ws(int argc, char **argv)
{
    const char *dir = NULL, *from = NULL, *label = NULL, *sub = NULL, *arg = NULL;
    int dry_run = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--ws") == 0 || strcmp(a, "--from") == 0 || strcmp(a, "--label") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "argus ws: %s needs a value\n", a);
                return 2;
            }
            const char **dst = a[2] == 'w' ? &dir : a[2] == 'f' ? &from : &label;
            *dst = argv[++i];
        } else if (strcmp(a, "--dry-run") == 0) {
            dry_run = 1;
        } else if (a[0] == '-') {
            fprintf(stderr, "argus ws: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else if (sub == NULL) {
            sub = a;
        } else if (arg == NULL) {
            arg = a;
        } else {
            usage(stderr);
            return 2;
        }
    }
    int needs_arg = sub && (strcmp(sub, "show") == 0 || strcmp(sub, "fork") == 0);
    if (sub == NULL || (needs_arg && arg == NULL) || (!needs_arg && arg != NULL)) {
        usage(stderr);
        return 2;
    }
    if (strcmp(sub, "ls") != 0 && strcmp(sub, "show") != 0 && strcmp(sub, "gc") != 0 &&
        strcmp(sub, "fork") != 0) {
        fprintf(stderr, "argus ws: unknown subcommand %s (ls, show, gc, fork)\n", sub);
        return 2;
    }
    argus_ws *ws = NULL;
    char msg[MSG_LEN * 2] = "";
    /* Only fork writes a program into the workspace, so only fork creates
     * one; the others report a missing workspace. */
    if (argus_ws_open(dir, strcmp(sub, "fork") == 0, &ws, msg, sizeof msg) != 0) {
        fprintf(stderr, "argus ws: %s\n", msg);
        return 1;
    }
    int rc;
    if (strcmp(sub, "ls") == 0)
        rc = ws_ls(ws);
    else if (strcmp(sub, "show") == 0)
        rc = ws_show(ws, arg);
    else if (strcmp(sub, "gc") == 0)
        rc = ws_gc(ws, dry_run);
    else
        rc = ws_fork(ws, from, arg, label);
    argus_ws_close(ws);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "report") == 0)
        return cmd_decode(0, argc - 2, argv + 2);
    if (strcmp(argv[1], "trace") == 0)
        return cmd_decode(1, argc - 2, argv + 2);
    if (strcmp(argv[1], "registry") == 0)
        return cmd_registry(argc - 2, argv + 2);
    if (strcmp(argv[1], "plan") == 0 || strcmp(argv[1], "query") == 0)
        return argus__cli_plan(argv[1][0] == 'q', argc - 2, argv + 2);
    if (strcmp(argv[1], "ws") == 0)
        return cmd_ws(argc - 2, argv + 2);
    if (strcmp(argv[1], "exec") == 0)
        return argus__exec_main(argc - 1, argv + 1);
    fprintf(stderr, "argus: unknown command %s\n", argv[1]);
    usage(stderr);
    return 2;
}
