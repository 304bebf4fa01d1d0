/*
 * The region registry: IDs to names and lexical parents.
 *
 * A region's ID is a hash of its name and parent (record.h), computed by
 * the compiler in device code; the registry holds the names beside the
 * binary. It is filled by scanning the CUDA sources (argus_registry_scan,
 * what `argus registry` runs at build time) or loaded from its JSON file.
 * A linear table: kernels have tens of regions, and the table is read once
 * per decoded buffer.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "argus_internal.h"

typedef struct entry {
    uint32_t id, parent;
    int is_role;
    char *name;
} entry;

struct argus_registry {
    entry *e;
    size_t n, cap;
};

int argus_registry_new(argus_registry **out)
{
    if (out == NULL)
        return ARGUS_EINVAL;
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : ARGUS_ENOMEM;
}

void argus_registry_free(argus_registry *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->e[i].name);
    free(r->e);
    free(r);
}

static const entry *lookup(const argus_registry *r, uint32_t id)
{
    for (size_t i = 0; r != NULL && i < r->n; i++)
        if (r->e[i].id == id)
            return &r->e[i];
    return NULL;
}

int argus_registry_add(argus_registry *r, const char *name, uint32_t parent,
                       int is_role, uint32_t *id, char *msg, size_t msglen)
{
    if (r == NULL || name == NULL || name[0] == '\0')
        return argus__fail(ARGUS_EINVAL, msg, msglen, "registry: a region needs a non-empty name");
    uint32_t v = argus_region_id(name, is_role ? 0 : parent);
    const entry *old = lookup(r, v);
    if (old != NULL) {
        if (strcmp(old->name, name) != 0 || old->parent != (is_role ? 0 : parent) ||
            old->is_role != (is_role != 0))
            return argus__fail(ARGUS_EREGISTRY, msg, msglen,
                               "registry: \"%s\" and \"%s\" hash to the same ID 0x%07x; "
                               "rename one of them",
                               name, old->name, v);
        if (id)
            *id = v;
        return 0;
    }
    if (argus__grow((void **)&r->e, &r->cap, r->n + 1, sizeof(*r->e)) != 0)
        return ARGUS_ENOMEM;
    entry *e = &r->e[r->n];
    if ((e->name = strdup(name)) == NULL)
        return ARGUS_ENOMEM;
    e->id = v;
    e->parent = is_role ? 0 : parent;
    e->is_role = is_role != 0;
    r->n++;
    if (id)
        *id = v;
    return 0;
}

const char *argus_registry_name(const argus_registry *r, uint32_t id)
{
    const entry *e = lookup(r, id);
    return e ? e->name : NULL;
}

int64_t argus_registry_parent(const argus_registry *r, uint32_t id)
{
    const entry *e = lookup(r, id);
    return e ? (int64_t)e->parent : -1;
}

size_t argus_registry_count(const argus_registry *r)
{
    return r ? r->n : 0;
}

int argus_registry_entry(const argus_registry *r, size_t i, uint32_t *id,
                         const char **name, uint32_t *parent, int *is_role)
{
    if (r == NULL || i >= r->n)
        return ARGUS_EINVAL;
    if (id)
        *id = r->e[i].id;
    if (name)
        *name = r->e[i].name;
    if (parent)
        *parent = r->e[i].parent;
    if (is_role)
        *is_role = r->e[i].is_role;
    return 0;
}

size_t argus_registry_find(const argus_registry *r, const char *name, uint32_t *ids, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; r != NULL && name != NULL && i < r->n; i++) {
        if (!r->e[i].is_role && strcmp(r->e[i].name, name) == 0) {
            if (n < max)
                ids[n] = r->e[i].id;
            n++;
        }
    }
    return n;
}

/* ---- the source scanner ------------------------------------------------ */

#define SCAN_MAX_DEPTH 64
#define SCAN_MAX_NAME 256

/* Reads `( "name" )` after a marker word; returns the position after the
 * closing parenthesis, or NULL when the argument is not a string literal. */
static const char *scan_arg(const char *p, char *name)
{
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '(')
        return NULL;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '"')
        return NULL;
    size_t n = 0;
    while (*p && *p != '"' && *p != '\n') {
        if (*p == '\\' || n + 1 >= SCAN_MAX_NAME)
            return NULL;
        name[n++] = *p++;
    }
    name[n] = '\0';
    if (*p++ != '"')
        return NULL;
    while (*p == ' ' || *p == '\t')
        p++;
    return *p == ')' ? p + 1 : NULL;
}

int argus_registry_scan(argus_registry *r, const char *text, const char *file,
                        char *msg, size_t msglen)
{
    static const struct {
        const char *word;
        int what; /* 0 begin, 1 end, 2 role */
    } words[] = {{"ARGUS_REGION_BEGIN", 0}, {"ARGUS_REGION_END", 1}, {"ARGUS_ROLE", 2}};
    if (r == NULL || text == NULL)
        return ARGUS_EINVAL;
    if (file == NULL)
        file = "<source>";
    uint32_t stack[SCAN_MAX_DEPTH];
    char names[SCAN_MAX_DEPTH][SCAN_MAX_NAME];
    size_t depth = 0;
    unsigned line = 1;
    int bol = 1; /* at the start of a line (only blanks so far) */
    for (const char *p = text; *p;) {
        if (*p == '\n') {
            line++;
            bol = 1;
            p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
                line += *p == '\n';
            p += *p ? 2 : 0;
            continue;
        }
        if (bol && *p == '#') { /* a directive (#define of the markers themselves) */
            while (*p && *p != '\n')
                p += (p[0] == '\\' && p[1] == '\n') ? (line++, 2) : 1;
            continue;
        }
        if (*p == '"') { /* a string literal that is not a marker's */
            for (p++; *p && *p != '"' && *p != '\n'; p++)
                p += (*p == '\\' && p[1]) ? 1 : 0;
            p += *p == '"';
            continue;
        }
        if (*p != ' ' && *p != '\t')
            bol = 0;
        int matched = 0;
        if (p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) {
            for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
                size_t wl = strlen(words[w].word);
                if (strncmp(p, words[w].word, wl) != 0 || isalnum((unsigned char)p[wl]) || p[wl] == '_')
                    continue;
                char name[SCAN_MAX_NAME];
                const char *q = scan_arg(p + wl, name);
                if (q == NULL)
                    return argus__fail(ARGUS_EREGISTRY, msg, msglen,
                                       "%s:%u: %s needs a string literal name, as in "
                                       "%s(\"load\"), for its ID to be known at build time",
                                       file, line, words[w].word, words[w].word);
                int rc;
                uint32_t id;
                if (words[w].what == 0) {
                    if (depth == SCAN_MAX_DEPTH)
                        return argus__fail(ARGUS_EREGISTRY, msg, msglen,
                                           "%s:%u: regions nested deeper than %d",
                                           file, line, SCAN_MAX_DEPTH);
                    rc = argus_registry_add(r, name, depth ? stack[depth - 1] : 0, 0, &id, msg, msglen);
                    if (rc != 0)
                        return rc;
                    stack[depth] = id;
                    memcpy(names[depth], name, sizeof(names[depth]));
                    depth++;
                } else if (words[w].what == 1) {
                    if (depth == 0 || strcmp(names[depth - 1], name) != 0)
                        return argus__fail(ARGUS_EREGISTRY, msg, msglen,
                                           "%s:%u: ARGUS_REGION_END(\"%s\") does not close "
                                           "the innermost open region (%s%s%s)",
                                           file, line, name, depth ? "\"" : "",
                                           depth ? names[depth - 1] : "none", depth ? "\"" : "");
                    depth--;
                } else if ((rc = argus_registry_add(r, name, 0, 1, &id, msg, msglen)) != 0) {
                    return rc;
                }
                p = q;
                matched = 1;
                break;
            }
        }
        if (!matched)
            p++;
    }
    if (depth != 0)
        return argus__fail(ARGUS_EREGISTRY, msg, msglen,
                           "%s: ARGUS_REGION_BEGIN(\"%s\") is never ended", file,
                           names[depth - 1]);
    return 0;
}
