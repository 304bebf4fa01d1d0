/*
 * mosaic-sched tune (docs/tune.md): chooses policy mosaic's mode, full-GPU
 * sharing or an SM partition and its size, by short trial runs of the
 * user's HP and BE commands under a daemon of each candidate
 * configuration, and writes the choice with its evidence to the config
 * file.
 */
#ifndef MOSAIC_SCHED_TUNE_H
#define MOSAIC_SCHED_TUNE_H

#include <stddef.h>

#include "daemon.h"

struct mosaic__tune_args {
    const char *config_path; /* the file read and written (a new one is created) */
    int config_exists;       /* it was there and was read */
    /* The command line's config flags ("--key", "value" pairs), given to
     * every trial daemon after the file, so it runs as configured. */
    char *const *fwd;
    int nfwd;
    const char *keep_dir; /* NULL: the trials' files are removed */
    int json;             /* the report as JSON on stdout, else a table */
};

/*
 * Runs the trials of cfg (tune-hp-command, tune-be-command, tune-trial-ms,
 * tune-splits, slo, hp-kernels, profile-dir, model-dir) and writes the
 * chosen sm-mode and hp-sms to a->config_path (atomically: a temporary file
 * in the same directory, fsync, rename). 0, or a negative MOSAIC_E* code
 * with err saying what failed and how to fix it; on error the config file
 * is untouched.
 */
int mosaic__tune_run(const struct mosaic__sched_config *cfg, const struct mosaic__tune_args *a,
                     char *err, size_t errlen);

#endif /* MOSAIC_SCHED_TUNE_H */
