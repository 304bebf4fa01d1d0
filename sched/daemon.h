/*
 * Internal interfaces of the mosaic-sched daemon (not of the client
 * library): configuration, role rules, admission policies, the event loop.
 */
#ifndef MOSAIC_SCHED_DAEMON_H
#define MOSAIC_SCHED_DAEMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

/* ---- config.c --------------------------------------------------------- */

/* The order is the config's `policy` names (config.c). */
enum mosaic__policy_id { MOSAIC__POLICY_NONE, MOSAIC__POLICY_HOLD_BE, MOSAIC__POLICY_MPS_PRIORITY,
                         MOSAIC__POLICY_ORION, MOSAIC__POLICY_MOSAIC, MOSAIC__POLICY_STATIC,
                         MOSAIC__POLICY_COUNT };
enum mosaic__mps_mode { MOSAIC__MPS_CHECK, MOSAIC__MPS_START, MOSAIC__MPS_OFF };
/* sm-mode: full-GPU sharing, or HP on hp-sms SMs and BE on the rest. */
enum mosaic__sm_mode { MOSAIC__SM_FULL, MOSAIC__SM_PARTITION };
enum mosaic__beside { MOSAIC__BESIDE_ADMIT, MOSAIC__BESIDE_HOLD };
enum mosaic__level { MOSAIC__L_ERROR, MOSAIC__L_WARN, MOSAIC__L_INFO, MOSAIC__L_DEBUG };

/* rule ROLE MATCH VALUE: the first rule that matches a peer decides. */
enum mosaic__rule_role { MOSAIC__GRANT_HP, MOSAIC__GRANT_BE, MOSAIC__GRANT_REQUESTED,
                         MOSAIC__GRANT_DENY };
enum mosaic__rule_match { MOSAIC__MATCH_UID, MOSAIC__MATCH_GID, MOSAIC__MATCH_CGROUP,
                          MOSAIC__MATCH_EXE, MOSAIC__MATCH_ANY };

struct mosaic__rule {
    int grant; /* enum mosaic__rule_role */
    int match; /* enum mosaic__rule_match */
    unsigned long id;  /* uid or gid */
    char path[256];    /* cgroup prefix or executable path */
    int line;          /* where it was written, for the log */
};

#define MOSAIC__MAX_RULES 64

/* The most BE kernels a gate slot is granted beyond its running one. */
#define MOSAIC__GATE_AHEAD_MAX 7u

struct mosaic__sched_config {
    char socket[108];
    unsigned socket_mode;
    char socket_group[64];
    double slo;
    int policy;
    unsigned metrics_port;
    int mps;
    char mps_pipe_dir[256];
    char mps_control[256];
    unsigned heartbeat_ms;
    unsigned ring_entries;
    unsigned max_clients;
    unsigned spin_us;
    unsigned gate_ahead;    /* BE kernels a gate slot is granted beyond its running one */
    unsigned be_timeout_ms;
    unsigned hp_request_timeout_ms;
    int be_on_timeout;
    int log_level;
    char profile_dir[4096]; /* mosaic-profile/1 files of HP and BE kernels */
    char model_dir[4096];   /* the predictor's models (mosaic_predictor_open) */
    unsigned hp_sms;        /* policy static / sm-mode partition: HP's SMs, 0: chosen */
    char hp_kernels[4096];  /* a file of the HP service's profile keys */
    int sm_mode;            /* enum mosaic__sm_mode (policy mosaic) */
    int beside_hp;          /* enum mosaic__beside (policies orion and mosaic) */
    char tune_hp_command[1024]; /* mosaic-sched tune: the commands it runs (sh -c) */
    char tune_be_command[1024];
    unsigned tune_trial_ms;
    char tune_splits[512];  /* tune: HP sizes to try, "" for every one the GPU makes */
    struct mosaic__rule rules[MOSAIC__MAX_RULES];
    int nrules;
    int rules_are_default; /* the first `rule` line replaces the default */
};

/* Fills cfg with every key's default. */
void mosaic__config_defaults(struct mosaic__sched_config *cfg);
/* Applies one `key value` (from src: "FILE:LINE", "environment NAME" or
 * "--flag"). Returns 0 or MOSAIC_ECONFIG with err naming src and the fix. */
int mosaic__config_set(struct mosaic__sched_config *cfg, const char *key, const char *value,
                       const char *src, int line, char *err, size_t errlen);
/* Reads a config file; a missing file is MOSAIC_EIO unless optional. */
int mosaic__config_load_file(struct mosaic__sched_config *cfg, const char *path,
                             int optional, char *err, size_t errlen);
/* MOSAIC_SCHED_<KEY> variables of envp (NULL-terminated). */
int mosaic__config_load_env(struct mosaic__sched_config *cfg, char *const *envp, char *err,
                            size_t errlen);
/* The list of keys, for messages and for the shipped-file test. */
const char *mosaic__config_key(int i); /* NULL past the end */
const char *mosaic__policy_name(int policy);
const char *mosaic__beside_name(int beside); /* the beside-hp value */

/* ---- ident.c: who is on the other end of the socket ------------------- */

struct mosaic__peer {
    pid_t pid;
    uid_t uid;
    gid_t gid;
    char exe[4096];    /* "" when /proc/PID/exe could not be read */
    char cgroup[1024]; /* the cgroup v2 path, "" when unknown */
};

/* SO_PEERCRED of a connected socket, plus exe and cgroup from /proc. */
int mosaic__peer_identify(int sock, struct mosaic__peer *peer, const char *proc_root);
/*
 * Decides the role of a peer that requested `requested`. Returns
 * MOSAIC_SCHED_ROLE_HP or _BE, or MOSAIC_EREFUSED with why saying which rule
 * (or no rule) refused and what to change.
 */
int mosaic__role_decide(const struct mosaic__sched_config *cfg, const struct mosaic__peer *peer,
                        int requested, char *why, size_t whylen);

/* ---- policy.c: admission ---------------------------------------------- */

/* What a policy sees: the node's HP state at the moment of a decision. */
struct mosaic__sched_view {
    uint64_t now_ns; /* CLOCK_MONOTONIC, the clients' clock too */
    unsigned hp_clients;
    /* HP clients this daemon has welcomed since it started, those gone
     * since too: a policy's restart grace (hold BE until HP can have
     * reconnected) is over once one came, and does not begin again when
     * it dies (the daemon then knows HP is gone, and says so at once). */
    unsigned hp_clients_seen;
    unsigned hp_requests_in_flight;
    unsigned be_in_flight;
    double slo;
};

struct mosaic__be_want {
    uint32_t client_id;
    uint64_t kernel_id;
    uint64_t predicted_ns;
    uint64_t waited_ns;
    /* 1: the kernel would be granted ahead, behind kernels of its stream
     * that are granted and not seen done (gate-ahead), so it starts when
     * they end, not now. A policy that cannot place it there holds it,
     * and it is decided again once they are done: not a hold of its own. */
    int ahead;
};

enum mosaic__decision { MOSAIC__ADMIT, MOSAIC__HOLD };

/* What the daemon tells a policy as it happens, so that a policy can keep
 * its own model of the HP requests and of the BE kernels running. */
enum mosaic__pev_type {
    MOSAIC__PEV_HP_BEGIN,   /* id: request id, ts: the client's begin time */
    MOSAIC__PEV_HP_END,     /* id: request id, ts: the client's end time */
    MOSAIC__PEV_HP_LAUNCH,  /* id: kernel id (the profile key's hash) */
    MOSAIC__PEV_BE_GRANT,   /* id: kernel id, ts: the grant's time */
    MOSAIC__PEV_BE_DONE,    /* id: kernel id */
    MOSAIC__PEV_CLIENT_GONE, /* everything of client_id is gone */
    /* One kernel of a BE graph's definition (proto.h): id: the graph's id,
     * kernel: the kernel's id, index of count. A later BE want, grant or
     * done naming the graph's id means all of its kernels, in order. */
    MOSAIC__PEV_BE_GRAPH
};

struct mosaic__policy_event {
    int type; /* enum mosaic__pev_type */
    uint32_t client_id;
    uint64_t id, ts_ns;
    uint64_t kernel;        /* MOSAIC__PEV_BE_GRAPH only */
    uint32_t index, count;  /* MOSAIC__PEV_BE_GRAPH only */
};

/* A policy decides for one waiting BE kernel; the mechanism (rings,
 * wake-ups, accounting, failure) is the daemon's. observe, metrics and
 * close may be NULL (a stateless policy). */
struct mosaic__policy {
    const char *name;
    int (*decide)(void *state, const struct mosaic__sched_view *v,
                  const struct mosaic__be_want *w);
    void (*observe)(void *state, const struct mosaic__policy_event *e);
    /* Appends Prometheus text lines to buf; returns the bytes written. */
    size_t (*metrics)(void *state, char *buf, size_t cap);
    void (*close)(void *state);
    void *state;
};

/* The stateless policies (none, hold-be, mps-priority) by id. */
int mosaic__policy_get(int id, struct mosaic__policy *out);
/*
 * Any policy by cfg->policy; the model-driven ones (orion, mosaic) load the
 * profile store (cfg->profile_dir) and, for mosaic, the predictor
 * (cfg->model_dir). MOSAIC_ECONFIG with err naming the key and the fix.
 */
int mosaic__policy_open(const struct mosaic__sched_config *cfg, struct mosaic__policy *out,
                        char *err, size_t errlen);
void mosaic__policy_close(struct mosaic__policy *p);
/* Policy mosaic's overlap factor for an unproven request type under
 * sm-mode partition (policy_model.c, PART_F0); replay's --part-f0 sets it
 * for a what-if run, nothing else writes it. */
extern double mosaic__part_f0;
/* Policy mosaic's least overlap factor for a trusted type (policy_model.c,
 * F_MIN); replay's --f-min sets it for a what-if run. */
extern double mosaic__f_min;

/* ---- policy_static.c: the static green-context baseline --------------- */

/* The SM split of policy static (HP a group, BE the rest of the GPU). */
struct mosaic__partition {
    unsigned hp_sms, be_sms;
    double bound;          /* the isolated slowdown HP must stay under (1.1) */
    double hp_slowdown;    /* HP's isolated slowdown on hp_sms; NaN: from_config */
    int under;             /* hp_slowdown < bound (else no split keeps it: the largest) */
    int from_config;       /* hp-sms gave it */
    unsigned hp_kernels;   /* keys in hp-kernels */
    unsigned measured;     /* of those, sized from the split sweep's times */
    unsigned predicted;    /* ... from the predictor's partition model */
};

/*
 * Chooses the split from cfg (hp-sms, or hp-kernels with profile-dir and,
 * for kernels without split times, model-dir). 0, or MOSAIC_ECONFIG with
 * err naming the key, file and line and the fix.
 */
int mosaic__static_partition(const struct mosaic__sched_config *cfg,
                             struct mosaic__partition *out, char *err, size_t errlen);
/*
 * HP's isolated slowdown on every size n the shim's split can give it,
 * sd[n] (NaN where it cannot; sd has nsd entries, MOSAIC_GPU_MAX_SMS + 1
 * covers every n), computed as policy static sizes its split (hp-kernels,
 * profile-dir's split sweep, model-dir for kernels without). info gets the
 * kernel counts (hp_kernels, measured, predicted). For sm-mode partition
 * (policy_model.c) and tune. 0 or MOSAIC_ECONFIG with err.
 */
int mosaic__hp_slowdowns(const struct mosaic__sched_config *cfg, double *sd, size_t nsd,
                         struct mosaic__partition *info, char *err, size_t errlen);
/* 0 when the shim's split can give HP n SMs on the H200, else
 * MOSAIC_ECONFIG with the nearest sizes it can give in err. */
int mosaic__static_hp_size_check(unsigned n, char *err, size_t errlen);

/* ---- pstore.c: the kernel profile store -------------------------------- */

struct mosaic_kernel;
struct mosaic__pstore;

/* The 64-bit FNV-1a hash of a profile key: the kernel id clients post. */
uint64_t mosaic__kernel_id(const char *key);
/*
 * Loads every *.profile.json under dir (not recursive). A file that cannot
 * be read or parsed is skipped and named in the log; the rest are loaded.
 * *loaded and *skipped count files. MOSAIC_EIO when dir cannot be opened.
 */
int mosaic__pstore_load(const char *dir, struct mosaic__pstore **out, unsigned *loaded,
                        unsigned *skipped, char *err, size_t errlen);
void mosaic__pstore_free(struct mosaic__pstore *s);
/* The kernel profiled under this id, or NULL. */
const struct mosaic_kernel *mosaic__pstore_get(const struct mosaic__pstore *s, uint64_t id);
size_t mosaic__pstore_count(const struct mosaic__pstore *s);

/* ---- sys.c: systemd and MPS ------------------------------------------- */

/* sd_notify by hand: one datagram to $NOTIFY_SOCKET (no-op when unset). */
int mosaic__sd_notify(const char *state);
/*
 * Checks (or starts, per cfg->mps) the MPS control daemon. Returns 1 when
 * kernels of separate processes can run concurrently, 0 when not; msg says
 * which and why in a sentence for the log and status.
 */
int mosaic__mps_check(const struct mosaic__sched_config *cfg, char *msg, size_t msglen);

/* ---- daemon.c --------------------------------------------------------- */

void mosaic__dlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
extern int mosaic__dlog_level;

/* Runs the daemon until SIGTERM/SIGINT; returns 0 or a MOSAIC_E* code. */
int mosaic__daemon_run(const struct mosaic__sched_config *cfg);
/* Creates the listening socket safely (exposed for the tests). */
int mosaic__listen_socket(const struct mosaic__sched_config *cfg, int *fd, char *err,
                          size_t errlen);


#endif /* MOSAIC_SCHED_DAEMON_H */
