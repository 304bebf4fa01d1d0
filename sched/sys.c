/*
 * The daemon's dealings with its surroundings: systemd's readiness
 * protocol and the MPS control daemon.
 *
 * sd_notify is written by hand (one datagram to $NOTIFY_SOCKET, a path or
 * an abstract name starting with '@') so that the daemon needs no
 * libsystemd and runs the same in a container.
 *
 * MPS: kernels of separate processes run concurrently on one GPU only
 * under MPS; without it the driver time-slices them (measured on the H200:
 * two 48 ms kernels grew to 77 and 100 ms). The control daemon
 * (nvidia-cuda-mps-control -d, driver 580.159.04 / CUDA 13.0 tested)
 * creates an entry named `control` in its pipe directory, a FIFO on the
 * hosts seen so far; a socket is accepted too, since the check is only
 * that a control daemon answers there. Starting it needs the rights to the
 * GPU (root on that host).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"

extern char **environ;

int mosaic__sd_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    socklen_t salen;
    size_t n;
    int fd, rc = 0;

    if (!path || !*path)
        return 0;
    n = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path))
        return MOSAIC_EINVAL;
    memcpy(sa.sun_path, path, n);
    if (path[0] == '@')
        sa.sun_path[0] = '\0';
    salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return MOSAIC_ESYS;
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
        rc = MOSAIC_ESYS;
    close(fd);
    return rc;
}

static int control_pipe(const char *dir, char *path, size_t len)
{
    struct stat st;
    int n = snprintf(path, len, "%s/control", dir);

    if (n < 0 || (size_t)n >= len)
        return 0;
    return stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

static int start_mps(const struct mosaic__sched_config *cfg, char *msg, size_t msglen)
{
    char *argv[] = {(char *)cfg->mps_control, "-d", NULL};
    char env_pipe[300], path[300];
    char *envp[256];
    int ne = 0, status;
    pid_t pid;

    if (snprintf(env_pipe, sizeof(env_pipe), "CUDA_MPS_PIPE_DIRECTORY=%s",
                 cfg->mps_pipe_dir) >= (int)sizeof(env_pipe))
        return 0;
    envp[ne++] = env_pipe;
    for (char **e = environ; *e && ne < 254; e++)
        if (strncmp(*e, "CUDA_MPS_PIPE_DIRECTORY=", 24) != 0)
            envp[ne++] = *e;
    envp[ne] = NULL;
    if (posix_spawnp(&pid, cfg->mps_control, NULL, NULL, argv, envp) != 0) {
        snprintf(msg, msglen, "cannot start %s (%s): kernels of separate processes will be "
                 "time-sliced, not concurrent; install MPS or set `mps check`",
                 cfg->mps_control, strerror(errno));
        return -1;
    }
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(msg, msglen, "%s -d failed: kernels of separate processes will be "
                 "time-sliced, not concurrent; its log is in CUDA_MPS_LOG_DIRECTORY",
                 cfg->mps_control);
        return -1;
    }
    /* The control daemon forks into the background and creates its pipe
     * shortly after; give it a second. */
    for (int i = 0; i < 100; i++) {
        if (control_pipe(cfg->mps_pipe_dir, path, sizeof(path)))
            return 1;
        usleep(10000);
    }
    return 0;
}

int mosaic__mps_check(const struct mosaic__sched_config *cfg, char *msg, size_t msglen)
{
    char path[300];
    int rc;

    if (cfg->mps == MOSAIC__MPS_OFF) {
        snprintf(msg, msglen, "MPS not checked (mps off): kernels of separate processes are "
                 "time-sliced unless an MPS control daemon runs");
        return 0;
    }
    if (control_pipe(cfg->mps_pipe_dir, path, sizeof(path))) {
        snprintf(msg, msglen, "MPS control daemon found (%s): HP and BE kernels can run "
                 "concurrently", path);
        return 1;
    }
    if (cfg->mps == MOSAIC__MPS_START) {
        rc = start_mps(cfg, msg, msglen);
        if (rc == 1) {
            snprintf(msg, msglen, "MPS control daemon started (%s/control): HP and BE kernels "
                     "can run concurrently", cfg->mps_pipe_dir);
            return 1;
        }
        if (rc < 0)
            return 0;
    }
    snprintf(msg, msglen, "no MPS control daemon (no %s/control): kernels of separate "
             "processes will be time-sliced, NOT concurrent; start `nvidia-cuda-mps-control -d` "
             "with CUDA_MPS_PIPE_DIRECTORY=%s, or set `mps start`",
             cfg->mps_pipe_dir, cfg->mps_pipe_dir);
    return 0;
}
