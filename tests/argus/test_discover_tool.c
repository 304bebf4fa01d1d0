/*
 * argus_discover_tool: the discovery and probe functions on files, for the
 * shell tests (test_discover.sh) and the GPU probe script
 * (scripts/gpu/argus16_probes.sh).
 *
 *   argus_discover_tool discover PTX [SASS]        the table (discover.h)
 *   argus_discover_tool ids PTX                    one operation ID a line
 *   argus_discover_tool probe PTX OP_ID ITER OUT   a probe variant's PTX
 *
 * Exit status: 0, 1 bad input (the message says why), 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/discover.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "argus_discover_tool: %s: cannot open\n", path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *p = realloc(buf, cap * 2);
        if (p == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = p;
        cap *= 2;
    }
    if (buf != NULL && ferror(f)) {
        fprintf(stderr, "argus_discover_tool: %s: read error\n", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: argus_discover_tool discover PTX [SASS] | ids PTX | "
                        "probe PTX OP_ID ITER OUT\n");
        return 2;
    }
    size_t len;
    char *ptx = slurp(argv[2], &len);
    if (ptx == NULL)
        return 1;
    char msg[512];
    argus_discovery *d;
    int rc = argus_discover_ptx(ptx, len, &d, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "argus_discover_tool: %s: %s\n", argv[2], msg);
        free(ptx);
        return 1;
    }
    int status = 0;
    if (strcmp(argv[1], "discover") == 0 && argc <= 4) {
        if (argc == 4) {
            size_t sl;
            char *sass = slurp(argv[3], &sl);
            if (sass == NULL || argus_discover_sass(d, sass, sl, msg, sizeof msg) != 0) {
                if (sass != NULL)
                    fprintf(stderr, "argus_discover_tool: %s: %s\n", argv[3], msg);
                status = 1;
            }
            free(sass);
        }
        if (status == 0 && argus_discovery_write(d, NULL, stdout) != 0)
            status = 1;
    } else if (strcmp(argv[1], "ids") == 0 && argc == 3) {
        for (size_t i = 0; i < d->n_ops; i++) {
            char id[32];
            if (argus_op_id_format(d->ops[i].id, id, sizeof id) == 0)
                printf("%s\t%s\t%s\n", id, argus_async_kind_name(d->ops[i].kind),
                       d->ops[i].in_loop ? "loop" : "once");
        }
    } else if (strcmp(argv[1], "probe") == 0 && argc == 6) {
        uint64_t id;
        char *end;
        unsigned long iter = strtoul(argv[4], &end, 10);
        if (argus_op_id_parse(argv[3], &id) != 0 || *end != '\0' || end == argv[4] ||
            iter >= UINT32_MAX) {
            fprintf(stderr,
                    "argus_discover_tool: bad operation ID '%s' (0xRRRRRRR.N) or "
                    "iteration '%s'\n",
                    argv[3], argv[4]);
            status = 2;
        } else {
            char *v;
            size_t vl;
            rc = argus_probe_ptx(ptx, len, d, id, (uint32_t)iter, &v, &vl, msg, sizeof msg);
            if (rc != 0) {
                fprintf(stderr, "argus_discover_tool: %s\n", msg);
                status = 1;
            } else {
                FILE *f = fopen(argv[5], "wb");
                if (f == NULL || fwrite(v, 1, vl, f) != vl || fclose(f) != 0) {
                    fprintf(stderr, "argus_discover_tool: %s: cannot write\n", argv[5]);
                    status = 1;
                }
                free(v);
            }
        }
    } else {
        fprintf(stderr, "argus_discover_tool: unknown command or wrong arguments: %s\n", argv[1]);
        status = 2;
    }
    argus_discovery_free(d);
    free(ptx);
    return status;
}
