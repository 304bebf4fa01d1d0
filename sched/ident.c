/*
 * Who a peer is, and which role it gets.
 *
 * The kernel's SO_PEERCRED (pid, uid, gid at connect time) is the only
 * identity trusted; the pid the client writes in its hello is not. The
 * executable (/proc/PID/exe) and cgroup (/proc/PID/cgroup, the v2 line) are
 * read right after accept, while the peer is still connected and so its
 * pid cannot have been reused. A client's requested role (MOSAIC_ROLE) is
 * honoured only through a `rule requested ...` line.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"

int mosaic__peer_identify(int sock, struct mosaic__peer *peer, const char *proc_root)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    char path[256], line[1200];
    ssize_t n;
    FILE *fp;

    memset(peer, 0, sizeof(*peer));
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred))
        return MOSAIC_ESYS;
    peer->pid = cred.pid;
    peer->uid = cred.uid;
    peer->gid = cred.gid;
    if (!proc_root)
        proc_root = "/proc";
    if (snprintf(path, sizeof(path), "%s/%d/exe", proc_root, (int)cred.pid) <
        (int)sizeof(path)) {
        n = readlink(path, peer->exe, sizeof(peer->exe) - 1);
        peer->exe[n > 0 ? n : 0] = '\0';
    }
    if (snprintf(path, sizeof(path), "%s/%d/cgroup", proc_root, (int)cred.pid) <
            (int)sizeof(path) &&
        (fp = fopen(path, "r"))) {
        while (fgets(line, sizeof(line), fp)) {
            /* cgroup v2: the single line "0::/path". */
            if (strncmp(line, "0::", 3) == 0) {
                size_t l = strcspn(line + 3, "\n");
                if (l < sizeof(peer->cgroup)) {
                    memcpy(peer->cgroup, line + 3, l);
                    peer->cgroup[l] = '\0';
                }
                break;
            }
        }
        fclose(fp);
    }
    return 0;
}

/* A cgroup prefix matches at a path component boundary only, so that
 * /system.slice/infer does not match /system.slice/inference-evil. */
static int cgroup_under(const char *cg, const char *prefix)
{
    size_t n = strlen(prefix);

    while (n > 1 && prefix[n - 1] == '/')
        n--;
    if (!cg[0] || strncmp(cg, prefix, n) != 0)
        return 0;
    return cg[n] == '\0' || cg[n] == '/' || n == 1;
}

static int rule_matches(const struct mosaic__rule *r, const struct mosaic__peer *p)
{
    switch (r->match) {
    case MOSAIC__MATCH_UID:
        return p->uid == (uid_t)r->id;
    case MOSAIC__MATCH_GID:
        return p->gid == (gid_t)r->id;
    case MOSAIC__MATCH_CGROUP:
        return cgroup_under(p->cgroup, r->path);
    case MOSAIC__MATCH_EXE:
        return p->exe[0] && strcmp(p->exe, r->path) == 0;
    default:
        return 1;
    }
}

static int refuse(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int refuse(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (vsnprintf(why, whylen, fmt, ap) < 0 && whylen)
        why[0] = '\0';
    va_end(ap);
    return MOSAIC_EREFUSED;
}

int mosaic__role_decide(const struct mosaic__sched_config *cfg, const struct mosaic__peer *peer,
                        int requested, char *why, size_t whylen)
{
    for (int i = 0; i < cfg->nrules; i++) {
        const struct mosaic__rule *r = &cfg->rules[i];
        int role;

        if (!rule_matches(r, peer))
            continue;
        switch (r->grant) {
        case MOSAIC__GRANT_DENY:
            return refuse(why, whylen, "the rule on config line %d denies uid %u (%s)", r->line,
                          (unsigned)peer->uid, peer->exe[0] ? peer->exe : "unknown exe");
        case MOSAIC__GRANT_REQUESTED:
            if (requested != MOSAIC_SCHED_ROLE_HP && requested != MOSAIC_SCHED_ROLE_BE)
                return refuse(why, whylen, "the rule on config line %d grants the requested "
                              "role, and none was requested: set MOSAIC_ROLE=hp or be",
                              r->line);
            return requested;
        default:
            role = r->grant == MOSAIC__GRANT_HP ? MOSAIC_SCHED_ROLE_HP : MOSAIC_SCHED_ROLE_BE;
            if (requested != MOSAIC_SCHED_ROLE_NONE && requested != role)
                return refuse(why, whylen, "MOSAIC_ROLE=%s was requested but the rule on "
                              "config line %d grants %s to this process: drop MOSAIC_ROLE "
                              "or change the rule",
                              mosaic__role_str(requested), r->line, mosaic__role_str(role));
            return role;
        }
    }
    return refuse(why, whylen, "no rule grants a role to uid %u, exe %s, cgroup %s: add a "
                  "`rule` line to the daemon's config",
                  (unsigned)peer->uid, peer->exe[0] ? peer->exe : "(unknown)",
                  peer->cgroup[0] ? peer->cgroup : "(unknown)");
}
