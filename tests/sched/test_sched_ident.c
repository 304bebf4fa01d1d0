/*
 * Peer identity and role rules, and the control socket's safety: what is
 * at the socket path is never followed or replaced unless it is a stale
 * socket, and the socket is created with the configured mode.
 */
#define _GNU_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"

static struct mosaic__sched_config rules(const char *text)
{
    struct mosaic__sched_config cfg;
    char path[] = "/tmp/mosaic-rules-XXXXXX", err[512];
    int fd = mkstemp(path);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    mosaic__config_defaults(&cfg);
    cfg.nrules = 0;
    if (mosaic__config_load_file(&cfg, path, 0, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    unlink(path);
    return cfg;
}

static struct mosaic__peer peer(uid_t uid, const char *exe, const char *cg)
{
    struct mosaic__peer p = {.pid = 100, .uid = uid, .gid = 100};

    snprintf(p.exe, sizeof(p.exe), "%s", exe);
    snprintf(p.cgroup, sizeof(p.cgroup), "%s", cg);
    return p;
}

static void rules_by_uid_cgroup_exe(void **state)
{
    struct mosaic__sched_config cfg = rules("rule hp cgroup /system.slice/infer.service\n"
                                            "rule be exe /usr/bin/python3\n"
                                            "rule be uid 2000\n");
    struct mosaic__peer hp = peer(1000, "/usr/bin/serve", "/system.slice/infer.service");
    struct mosaic__peer hp_child = peer(1000, "/usr/bin/serve", "/system.slice/infer.service/w1");
    struct mosaic__peer lookalike = peer(1000, "/usr/bin/serve", "/system.slice/infer.serviceX");
    struct mosaic__peer py = peer(1000, "/usr/bin/python3", "/user.slice");
    struct mosaic__peer trainer = peer(2000, "/opt/train", "/user.slice");
    char why[300];

    (void)state;
    assert_int_equal(mosaic__role_decide(&cfg, &hp, 0, why, sizeof(why)), MOSAIC_SCHED_ROLE_HP);
    assert_int_equal(mosaic__role_decide(&cfg, &hp_child, 0, why, sizeof(why)),
                     MOSAIC_SCHED_ROLE_HP);
    assert_int_equal(mosaic__role_decide(&cfg, &py, 0, why, sizeof(why)), MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(mosaic__role_decide(&cfg, &trainer, 0, why, sizeof(why)),
                     MOSAIC_SCHED_ROLE_BE);
    /* A cgroup prefix matches whole path components only. */
    assert_int_equal(mosaic__role_decide(&cfg, &lookalike, 0, why, sizeof(why)),
                     MOSAIC_EREFUSED);
    assert_non_null(strstr(why, "no rule grants a role to uid 1000"));
    assert_non_null(strstr(why, "/system.slice/infer.serviceX"));
}

static void requested_role_only_where_allowed(void **state)
{
    struct mosaic__sched_config cfg = rules("rule be uid 2000\nrule requested uid 3000\n"
                                            "rule deny any\n");
    struct mosaic__peer be = peer(2000, "/opt/train", "");
    struct mosaic__peer free_choice = peer(3000, "/opt/x", "");
    struct mosaic__peer other = peer(4000, "/opt/y", "");
    char why[300];

    (void)state;
    /* A BE process asking for HP is refused, not promoted. */
    assert_int_equal(mosaic__role_decide(&cfg, &be, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)),
                     MOSAIC_EREFUSED);
    assert_non_null(strstr(why, "MOSAIC_ROLE=hp was requested but the rule on config line 1 "
                                "grants be"));
    assert_int_equal(mosaic__role_decide(&cfg, &be, MOSAIC_SCHED_ROLE_BE, why, sizeof(why)),
                     MOSAIC_SCHED_ROLE_BE);
    assert_int_equal(
        mosaic__role_decide(&cfg, &free_choice, MOSAIC_SCHED_ROLE_HP, why, sizeof(why)),
        MOSAIC_SCHED_ROLE_HP);
    assert_int_equal(mosaic__role_decide(&cfg, &free_choice, 0, why, sizeof(why)),
                     MOSAIC_EREFUSED);
    assert_non_null(strstr(why, "set MOSAIC_ROLE=hp or be"));
    assert_int_equal(mosaic__role_decide(&cfg, &other, MOSAIC_SCHED_ROLE_BE, why, sizeof(why)),
                     MOSAIC_EREFUSED);
    assert_non_null(strstr(why, "config line 3 denies uid 4000"));
}

static void peer_credentials_come_from_the_kernel(void **state)
{
    struct mosaic__peer p;
    char exe[4096];
    ssize_t n;
    int sv[2];

    (void)state;
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    assert_int_equal(mosaic__peer_identify(sv[0], &p, NULL), 0);
    assert_int_equal(p.pid, getpid());
    assert_int_equal(p.uid, geteuid());
    assert_int_equal(p.gid, getegid());
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    assert_string_equal(p.exe, exe);
    close(sv[0]);
    close(sv[1]);
}

static char dir[64];

static int mkdir_tmp(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/mosaic-sock-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int rm_tmp(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void socket_path_safety(void **state)
{
    struct mosaic__sched_config cfg;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char err[600], target[128];
    struct stat st;
    int fd, stale;
    FILE *fp;

    (void)state;
    mosaic__config_defaults(&cfg);
    snprintf(cfg.socket, sizeof(cfg.socket), "%s/s.sock", dir);

    /* A regular file is not replaced. */
    fp = fopen(cfg.socket, "w");
    fputs("precious", fp);
    fclose(fp);
    assert_int_equal(mosaic__listen_socket(&cfg, &fd, err, sizeof(err)), MOSAIC_EUNSAFE);
    assert_non_null(strstr(err, "not a socket"));
    assert_int_equal(stat(cfg.socket, &st), 0);
    assert_int_equal(st.st_size, 8);
    unlink(cfg.socket);

    /* Nor is a symlink followed, even one to a socket. */
    snprintf(target, sizeof(target), "%s/elsewhere", dir);
    assert_int_equal(symlink(target, cfg.socket), 0);
    assert_int_equal(mosaic__listen_socket(&cfg, &fd, err, sizeof(err)), MOSAIC_EUNSAFE);
    assert_non_null(strstr(err, "a symlink"));
    assert_int_equal(access(target, F_OK), -1);
    unlink(cfg.socket);

    /* A stale socket (nobody listening) is replaced; the mode is 0600. */
    stale = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", cfg.socket);
    assert_int_equal(bind(stale, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(stale);
    assert_int_equal(mosaic__listen_socket(&cfg, &fd, err, sizeof(err)), 0);
    assert_int_equal(lstat(cfg.socket, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);

    /* A live socket belongs to a running daemon: refused. */
    {
        int fd2;
        assert_int_equal(mosaic__listen_socket(&cfg, &fd2, err, sizeof(err)), MOSAIC_EUNSAFE);
        assert_non_null(strstr(err, "another mosaic-sched is listening"));
    }
    close(fd);
    unlink(cfg.socket);

    cfg.socket_mode = 0660;
    assert_int_equal(mosaic__listen_socket(&cfg, &fd, err, sizeof(err)), 0);
    assert_int_equal(lstat(cfg.socket, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0660);
    close(fd);
    unlink(cfg.socket);

    snprintf(cfg.socket, sizeof(cfg.socket), "%s/no-such-dir/s.sock", dir);
    assert_int_equal(mosaic__listen_socket(&cfg, &fd, err, sizeof(err)), MOSAIC_ESYS);
    assert_non_null(strstr(err, "does the directory exist"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rules_by_uid_cgroup_exe),
        cmocka_unit_test(requested_role_only_where_allowed),
        cmocka_unit_test(peer_credentials_come_from_the_kernel),
        cmocka_unit_test_setup_teardown(socket_path_safety, mkdir_tmp, rm_tmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
