/* Set-up shared by the workspace and runtime tests (argus_test_util.h). */
#define _GNU_SOURCE /* nftw */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "argus_test_util.h"

char atu_base[256];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

int atu_setup(const char *prefix)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(atu_base, sizeof atu_base, "%s/%s-XXXXXX", tmp && tmp[0] ? tmp : "/tmp",
                     prefix);

    if (n < 0 || (size_t)n >= sizeof atu_base)
        return -1;
    return mkdtemp(atu_base) ? 0 : -1;
}

int atu_teardown(void **state)
{
    (void)state;
    chmod(atu_base, 0700);
    return nftw(atu_base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void atu_path(char *buf, size_t len, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", atu_base, name);

    assert_true(n > 0 && (size_t)n < len);
}

argus_ws *atu_open_ws(const char *name)
{
    char p[512], msg[512] = "";
    argus_ws *ws = NULL;

    atu_path(p, sizeof p, name);
    if (argus_ws_open(p, 1, &ws, msg, sizeof msg) != 0)
        fail_msg("argus_ws_open %s: %s", p, msg);
    return ws;
}
