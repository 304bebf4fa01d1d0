/*
 * Set-up shared by the workspace and runtime tests (test_ws.c, test_rt.c):
 * one temporary directory per test group, removed at its end, and
 * workspaces opened inside it. Functions that can fail end the test with
 * the reason (cmocka's fail_msg).
 */
#ifndef ARGUS_TEST_UTIL_H
#define ARGUS_TEST_UTIL_H

#include <stddef.h>

#include "argus/workspace.h"

/* The group's directory, made by atu_setup. */
extern char atu_base[256];

/* Makes atu_base, $TMPDIR (or /tmp)/<prefix>-XXXXXX. Returns 0 or -1. */
int atu_setup(const char *prefix);
/* A cmocka group teardown: removes atu_base and everything below it
 * (made writable first: a test may leave it read-only). */
int atu_teardown(void **state);
/* buf = atu_base/name. */
void atu_path(char *buf, size_t len, const char *name);
/* Opens (creating it) the workspace atu_base/name. */
argus_ws *atu_open_ws(const char *name);

#endif /* ARGUS_TEST_UTIL_H */
