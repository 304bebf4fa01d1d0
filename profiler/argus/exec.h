/*
 * argus exec: the executor of `argus query --run` (docs/argus-plan.md,
 * "The executor"). Internal to profiler/argus: exec.c holds the program
 * description, the variant artifacts and the transformations; exec_run.c
 * runs a variant under argus-shim and writes each backend's evidence.
 *
 *   argus exec transform TX VARIANT PARENT OP ITER OUT
 *   argus exec run [--metrics BACKEND=a,b]... VARIANT BACKENDS ARTIFACT OUT...
 *   argus exec show ARTIFACT [PART]         the header, or one part's bytes
 *   argus exec discover ARTIFACT            its operations, as --discovered takes them
 *
 * Functions return 0 or a negative ARGUS_E* code with a sentence in msg.
 */
#ifndef ARGUS_EXEC_H
#define ARGUS_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* The program description (argus.exec.program v1): what v0 is. Paths are
 * made absolute against the description's folder. */
typedef struct argus__prog {
    char path[4096];     /* the description itself */
    char dir[4096];      /* its folder */
    char source[4096];   /* the CUDA source ("" when ptx is given) */
    char ptx[4096];      /* a PTX file ("" when source is given) */
    char registry[4096]; /* a registry file for a PTX program, "" */
    char sm[16];         /* "90", "90a" */
    char device[64];     /* CUDA_VISIBLE_DEVICES for runs, "" */
    double timeout_s;    /* a run's limit (0: 300 s) */
    char **include, **flags, **run;
    size_t ninclude, nflags, nrun;
    char **env; /* "NAME=VALUE" for the program's runs (the description's "env") */
    size_t nenv;
} argus__prog;

/* A variant artifact (argus.exec.artifact v1): the variant's PTX text,
 * then a trailer of comment lines: "// argus.exec.artifact {JSON header}"
 * (naming its parts and their sizes) and "// argus.exec.part NAME BASE64"
 * per part (cubin, registry, build_log). One file that is PTX to whatever
 * reads PTX, so that the workspace stores a variant as one object. */
typedef struct argus__part {
    char name[32];
    const unsigned char *data;
    size_t len;
} argus__part;

#define ARGUS__MAX_PARTS 8

typedef struct argus__artifact {
    cJSON *hdr;
    unsigned char *file;
    size_t flen;
    argus__part parts[ARGUS__MAX_PARTS];
    size_t nparts;
    int trailer; /* set also after a failed load: the file has the trailer */
} argus__artifact;

/* RFC 4648 base64 with padding, no line breaks; NUL-terminated, malloc'd. */
char *argus__base64(const unsigned char *d, size_t n, size_t *olen);

int argus__prog_load(const char *path, argus__prog *p, char *msg, size_t msglen);
void argus__prog_free(argus__prog *p);

/* ARGUS_EINVAL when the file is not an artifact (a->trailer 0) or a
 * damaged one (a->trailer 1), ARGUS_EIO when it cannot be read. */
int argus__artifact_load(const char *path, argus__artifact *a, char *msg, size_t msglen);
void argus__artifact_free(argus__artifact *a);
const argus__part *argus__artifact_part(const argus__artifact *a, const char *name);

/* Builds the variant `variant` of the program: from its parent (an
 * artifact, or NULL for the program as described), with one more
 * transformation tx ("markers_on", "line_info", "force_completion_probe"
 * with op and iter; NULL: none, the base build), into the artifact file
 * out. Errors name the transformation, the operation and the compiler's
 * message. */
int argus__exec_build(const argus__prog *p, const argus__artifact *parent, const char *tx,
                      const char *variant, uint64_t op, long long iter, const char *out,
                      char *msg, size_t msglen);

/* A whole file, binary (up to max bytes), into a malloc'd buffer. */
int argus__read_bin(const char *path, size_t max, unsigned char **out, size_t *len, char *msg,
                    size_t msglen);

/* Runs argv (argv[0] searched in PATH) with extra environment entries
 * ("NAME=VALUE", NULL-terminated; may be NULL), stdout and stderr
 * appended to log_path (NULL: inherited), stdin from /dev/null, and a
 * limit of timeout_s seconds (0: none): past it the child and everything
 * it started are killed (this process's descendants, and the rest of its
 * process group when it leads one). *status gets the wait status;
 * returns 0, or ARGUS_EIO when it could not start, or ARGUS_ELIMIT when it
 * timed out. */
int argus__spawn(const char *const *argv, const char *const *env, const char *log_path,
                 double timeout_s, int *status, double *seconds, char *msg, size_t msglen);
/* "exited 3", "was killed by signal 11 (Segmentation fault)". */
void argus__status_text(int status, char *buf, size_t len);

/* The end of a log file (at most len - 1 bytes, from a line start; lines
 * joined by '|'), for a message; "" when it cannot be read. */
void argus__log_tail(const char *path, char *buf, size_t len);

/* A fresh private folder under $TMPDIR (or /tmp), and its removal. */
int argus__tmpdir(char *buf, size_t len, char *msg, size_t msglen);
void argus__rmtree(const char *dir);

int argus__exec_run(int argc, char **argv);
int argus__exec_main(int argc, char **argv);

#endif /* ARGUS_EXEC_H */
