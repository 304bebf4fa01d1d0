/*
 * mosaic-sched: the arbiter daemon's command line.
 *
 *   mosaic-sched [--config FILE] [--KEY VALUE ...] daemon
 *   mosaic-sched [--socket PATH] status [--json]
 *   mosaic-sched version
 *
 * Settings come from the config file (--config, else $MOSAIC_SCHED_CONFIG,
 * else /etc/mosaic/sched.conf when it exists), then MOSAIC_SCHED_<KEY>
 * variables, then --KEY flags: each later source wins.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cJSON.h>

#include "daemon.h"

extern char **environ;

#define DEFAULT_CONFIG "/etc/mosaic/sched.conf"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: mosaic-sched [--config FILE] [--KEY VALUE ...] daemon\n"
            "       mosaic-sched [--socket PATH] status [--json]\n"
            "       mosaic-sched version\n"
            "KEY is any key of the config file (sched/mosaic-sched.conf lists them with\n"
            "their defaults), e.g. --slo 1.25 --socket /run/mosaic/sched.sock.\n");
}

static int fetch_status(const char *path, char **json, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct mosaic__msg_hdr h;
    struct timeval tv = {.tv_sec = 5};
    struct mosaic__msg m;
    char *buf = malloc(MOSAIC__SCHED_STATUS_MAX);
    long n;
    int fd, rc;

    *json = NULL;
    if (!buf)
        return MOSAIC_ENOMEM;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        snprintf(err, errlen, "no mosaic-sched daemon answers at %s (start `mosaic-sched "
                 "daemon`, or pass --socket PATH)", path);
        if (fd >= 0)
            close(fd);
        free(buf);
        return MOSAIC_EDISCONNECTED;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    mosaic__msg_init(&h, MOSAIC__MSG_STATUS, sizeof(h));
    rc = mosaic__send_msg(fd, &h, sizeof(h), -1);
    n = rc == 0 ? mosaic__recv_msg(fd, buf, MOSAIC__SCHED_STATUS_MAX - 1, NULL, 0) : rc;
    close(fd);
    if (n <= 0) {
        snprintf(err, errlen, "the daemon at %s did not answer the status request", path);
        free(buf);
        return n < 0 ? (int)n : MOSAIC_EDISCONNECTED;
    }
    rc = mosaic__msg_parse(buf, (size_t)n, &m, err, errlen);
    if (rc == 0 && m.h.type != MOSAIC__MSG_STATUS_REPLY) {
        snprintf(err, errlen, "the daemon answered message type %u, not a status", m.h.type);
        rc = MOSAIC_EPROTO;
    }
    if (rc == 0) {
        memmove(buf, m.text, m.text_len);
        buf[m.text_len] = '\0';
        *json = buf;
        return 0;
    }
    free(buf);
    return rc;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "?";
}

static int print_status(const char *json)
{
    cJSON *j = cJSON_Parse(json), *c, *adm;

    if (!j) {
        fprintf(stderr, "mosaic-sched status: the daemon's status is not JSON\n");
        return 1;
    }
    adm = cJSON_GetObjectItemCaseSensitive(j, "admissions");
    printf("mosaic-sched %s (pid %.0f, up %.1f s): policy %s, slo %g, mode %s\n",
           str(j, "version"), num(j, "pid"), num(j, "uptime_s"), str(j, "policy"),
           num(j, "slo"), str(j, "mode"));
    printf("concurrency: %s\n",
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "concurrent")) ? "yes (MPS)"
                                                                            : "NO (time-sliced)");
    printf("  %s\n", str(j, "mps"));
    printf("HP requests in flight: %.0f; BE kernels in flight: %.0f\n",
           num(j, "hp_requests_in_flight"), num(j, "be_in_flight"));
    printf("BE admissions: %.0f immediate, %.0f after a hold (%.0f held); %.0f rejected "
           "messages, %.0f refused clients\n",
           num(adm, "immediate"), num(adm, "after_hold"), num(adm, "held"),
           num(j, "protocol_errors"), num(j, "refused"));
    printf("%-4s %-8s %-6s %-4s %-9s %-8s %-10s %-9s %s\n", "id", "pid", "uid", "role",
           "requests", "waiting", "events", "beat_ms", "exe");
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(j, "clients"))
    {
        printf("%-4.0f %-8.0f %-6.0f %-4s %-9.0f %-8.0f %-10.0f %-9.0f %s\n", num(c, "id"),
               num(c, "pid"), num(c, "uid"), str(c, "role"), num(c, "requests_in_flight"),
               num(c, "be_waiting"), num(c, "events"), num(c, "heartbeat_age_ms"),
               str(c, "exe"));
    }
    if (cJSON_GetObjectItemCaseSensitive(j, "clients_omitted"))
        printf("(%.0f clients not listed: the list did not fit one status message)\n",
               num(j, "clients_omitted"));
    cJSON_Delete(j);
    return 0;
}

int main(int argc, char **argv)
{
    static struct mosaic__sched_config cfg;
    const char *cmd = NULL, *config = getenv("MOSAIC_SCHED_CONFIG");
    char err[1200];
    int json = 0, explicit_config = config != NULL, rc;

    /* First pass: the command, --config and --json. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            config = argv[++i];
            explicit_config = 1;
        } else if (strncmp(argv[i], "--config=", 9) == 0) {
            config = argv[i] + 9;
            explicit_config = 1;
        } else if (strncmp(argv[i], "--", 2) == 0) {
            if (!strchr(argv[i], '='))
                i++;
        } else if (!cmd) {
            cmd = argv[i];
        } else {
            fprintf(stderr, "mosaic-sched: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!cmd) {
        usage(stderr);
        return 2;
    }
    if (strcmp(cmd, "version") == 0) {
        printf("mosaic-sched %s (protocol %u, segment version %u)\n", MOSAIC_VERSION_STRING,
               MOSAIC__SCHED_PROTO, MOSAIC__SHM_VERSION);
        return 0;
    }
    if (strcmp(cmd, "daemon") != 0 && strcmp(cmd, "status") != 0) {
        fprintf(stderr, "mosaic-sched: unknown command '%s': use daemon, status or version\n",
                cmd);
        return 2;
    }
    mosaic__config_defaults(&cfg);
    rc = mosaic__config_load_file(&cfg, config ? config : DEFAULT_CONFIG, !explicit_config,
                                  err, sizeof(err));
    if (rc == 0)
        rc = mosaic__config_load_env(&cfg, environ, err, sizeof(err));
    for (int i = 1; rc == 0 && i < argc; i++) {
        const char *a = argv[i], *eq;
        char key[64], src[80];
        const char *value;

        if (strncmp(a, "--", 2) != 0 || strcmp(a, "--json") == 0)
            continue;
        if (strcmp(a, "--config") == 0) {
            i++;
            continue;
        }
        if (strncmp(a, "--config=", 9) == 0)
            continue;
        eq = strchr(a, '=');
        if (eq) {
            snprintf(key, sizeof(key), "%.*s", (int)(eq - a - 2), a + 2);
            value = eq + 1;
        } else if (i + 1 < argc) {
            snprintf(key, sizeof(key), "%s", a + 2);
            value = argv[++i];
        } else {
            fprintf(stderr, "mosaic-sched: %s needs a value\n", a);
            return 2;
        }
        if (strcmp(key, "rule") == 0) {
            snprintf(err, sizeof(err), "--rule: rules are read from the config file only");
            rc = MOSAIC_ECONFIG;
            break;
        }
        snprintf(src, sizeof(src), "--%s", key);
        rc = mosaic__config_set(&cfg, key, value, src, 0, err, sizeof(err));
    }
    if (rc != 0) {
        fprintf(stderr, "mosaic-sched: %s\n", err);
        return 2;
    }
    if (strcmp(cmd, "status") == 0) {
        char *text;
        rc = fetch_status(cfg.socket, &text, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "mosaic-sched status: %s\n", err);
            return 1;
        }
        if (json)
            printf("%s\n", text);
        else
            rc = print_status(text);
        free(text);
        return rc ? 1 : 0;
    }
    rc = mosaic__daemon_run(&cfg);
    if (rc != 0) {
        fprintf(stderr, "mosaic-sched: the daemon stopped: %s\n", mosaic_strerror(rc));
        return 1;
    }
    return 0;
}
