/*
 * XGBoost 1.7 JSON models loaded into flat arrays and evaluated without
 * libxgboost (trees.h). Every error names the file and the field, e.g.
 *   m.json: learner.gradient_booster.model.trees[3].left_children[7]: 99 is
 *   not an integer in [-1, 14]
 */
#define _GNU_SOURCE 1
#include "trees.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "json.h"
#include "mosaic/mosaic.h"

/* Larger files are refused before they are read: the models Mosaic trains
 * are a few megabytes. */
#define MAX_MODEL_BYTES (512L * 1024 * 1024)

/* Feature ids are stored with the default direction of a missing value in
 * the top bit, so a model may name at most 2^31 - 1 features. */
#define NODE_DEFAULT_LEFT 0x80000000u  /* in struct raw_node */
#define NODE_DEFAULT_RIGHT 0x80000000u /* in struct node */
#define NODE_FEATURE_MASK 0x7fffffffu

#define TREES_PATH "learner.gradient_booster.model.trees"

/* Trees are evaluated FOREST_LANES at a time, interleaved, so that the
 * dependent load-compare-select chains of several trees overlap instead of
 * each waiting on the memory latency of the one before. 40 measured best
 * (bench_forest and bench_predict, 2026-11-30, this 2-core EPYC VM, -O2):
 * per tree 5.4 ns against 7.4 ns with 8 lanes for 100 trees of depth 6,
 * 6.6 against 7.2 for 50 (padded to 80); a shared-mode prediction with the
 * 80-tree H200 models 2.48-2.53 us against 3.0 us (16 lanes: 2.81-2.85,
 * 32: 2.71, 80: 2.61). */
#define FOREST_LANES 40

/* A node as XGBoost stores it, with indices local to its tree; a leaf has
 * left == right == -1 and its value in value. Used while loading only. */
struct raw_node {
    int32_t left;
    int32_t right;
    uint32_t feature; /* feature id | NODE_DEFAULT_LEFT; 0 for a leaf */
    float value;
};

/* A node of a loaded forest, 12 bytes. Trees are laid out breadth first, so
 * the right child always follows the left one and one index is enough. An
 * inner node goes to left + 1 when x >= threshold, or when x is NaN and its
 * default is right. A leaf's left is the leaf itself (that is the leaf
 * flag) and its threshold is NaN, which no comparison passes, so a leaf
 * steps to itself and a tree can be stepped a fixed number of times with no
 * test for having reached a leaf. */
struct node {
    int32_t left;
    uint32_t feature; /* feature id | NODE_DEFAULT_RIGHT; 0 for a leaf */
    float threshold;
};

struct mosaic__forest {
    struct node *nodes;  /* every tree's reachable nodes, tree after tree,
                            then one leaf of value 0 that pads the last group */
    float *leaf_values;  /* per node: the leaf's value, 0 for inner nodes */
    int32_t *roots;      /* root of each tree; ngroups * FOREST_LANES entries */
    int32_t *group_steps;/* per group of FOREST_LANES trees: the most inner
                            nodes on any root-to-leaf path of its trees */
    int32_t nnodes;      /* the trees' nodes, without the padding leaf */
    int ngroups;
    int ntrees;
    int nfeatures;
    double base_score;
    /* The same trees as perfect binary trees of depth pdepth (0: not laid
     * out so), for rows without NaN features: tree t's inner nodes are
     * pfeat/pthr[t * (2^pdepth - 1) + i], node i's children 2i + 1 and
     * 2i + 2, its leaves pleaf[t * 2^pdepth + j]. A leaf above the bottom
     * is repeated under a split of feature 0 whose sides hold the same
     * value, so every path has pdepth steps. */
    int pdepth;
    int32_t *pfeat;
    float *pthr, *pleaf;
};

/* The deepest forest laid out as perfect trees: 2^6 leaves a tree; the
 * H200 models are of depth 4. Deeper forests use the node array alone. */
#define FOREST_PERFECT_MAX_DEPTH 6

struct ld {
    const char *what; /* the file name for messages */
    char *err;
    size_t errlen;
};

/* "file: field: message" through the core's helper, with the file that l
 * names. */
#define fail(l, code, field, ...) \
    mosaic__errf((l)->err, (l)->errlen, (code), (l)->what, (field), __VA_ARGS__)

/* The member name of obj, or an error naming path.name. */
static int get_member(struct ld *l, const cJSON *obj, const char *path,
                      const char *name, const cJSON **out)
{
    *out = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!*out)
        return fail(l, MOSAIC_EINVAL, path, "the member \"%s\" is missing", name);
    return 0;
}

static int get_object(struct ld *l, const cJSON *obj, const char *path,
                      const char *name, const cJSON **out)
{
    int rc = get_member(l, obj, path, name, out);
    if (rc)
        return rc;
    if (!cJSON_IsObject(*out))
        return fail(l, MOSAIC_EINVAL, path, "\"%s\" is not an object", name);
    return 0;
}

/* XGBoost writes the learner's parameters as strings ("5E-1"); a plain JSON
 * number is accepted as well. The whole string must be one finite number. */
static int get_param_number(struct ld *l, const cJSON *obj, const char *path,
                            const char *name, double *out)
{
    const cJSON *it;
    int rc = get_member(l, obj, path, name, &it);
    char field[256];

    if (rc)
        return rc;
    snprintf(field, sizeof(field), "%s.%s", path, name);
    if (cJSON_IsNumber(it)) {
        *out = it->valuedouble;
    } else if (cJSON_IsString(it)) {
        char *end;
        errno = 0;
        *out = strtod(it->valuestring, &end);
        if (end == it->valuestring || *end != '\0' || errno == ERANGE)
            return fail(l, MOSAIC_EINVAL, field, "\"%s\" is not a number",
                        it->valuestring);
    } else {
        return fail(l, MOSAIC_EINVAL, field, "expected a number or a numeric string");
    }
    if (!isfinite(*out))
        return fail(l, MOSAIC_EINVAL, field, "the value is not finite");
    return 0;
}

/* A parameter that must be an integer in [lo, hi]. */
static int get_param_int(struct ld *l, const cJSON *obj, const char *path,
                         const char *name, long lo, long hi, long *out)
{
    double v;
    int rc = get_param_number(l, obj, path, name, &v);

    if (rc)
        return rc;
    if (v != floor(v) || v < (double)lo || v > (double)hi)
        return fail(l, MOSAIC_EINVAL, path, "%s = %g: expected an integer in [%ld, %ld]",
                    name, v, lo, hi);
    *out = (long)v;
    return 0;
}

/* Like get_param_int, but an absent member is not an error (*present = 0). */
static int get_opt_param_int(struct ld *l, const cJSON *obj, const char *path,
                             const char *name, long lo, long hi, long *out,
                             int *present)
{
    *present = cJSON_GetObjectItemCaseSensitive(obj, name) != NULL;
    if (!*present)
        return 0;
    return get_param_int(l, obj, path, name, lo, hi, out);
}

/* The arrays of one tree, as cJSON arrays, with their common length. */
struct tree_json {
    const cJSON *left, *right, *split_indices, *split_conditions,
        *default_left, *base_weights;
    int n;
};

static int get_node_array(struct ld *l, const cJSON *tree, const char *path,
                          const char *name, const cJSON **out, int *n)
{
    int rc = get_member(l, tree, path, name, out);
    char field[256];
    int len;

    if (rc)
        return rc;
    snprintf(field, sizeof(field), "%s.%s", path, name);
    if (!cJSON_IsArray(*out))
        return fail(l, MOSAIC_EINVAL, field, "expected an array");
    len = cJSON_GetArraySize(*out);
    if (*n < 0)
        *n = len;
    else if (len != *n)
        return fail(l, MOSAIC_EINVAL, field,
                    "has %d elements, but left_children has %d", len, *n);
    return 0;
}

/* Finds a tree's arrays and checks that they have one length (>= 1), and
 * that the optional tree_param agrees and split_type, where present, holds
 * numerical splits only. */
static int get_tree_arrays(struct ld *l, const cJSON *tree, const char *path,
                           struct tree_json *t)
{
    const cJSON *tp, *st;
    int rc;

    if (!cJSON_IsObject(tree))
        return fail(l, MOSAIC_EINVAL, path, "expected an object");
    t->n = -1;
    if ((rc = get_node_array(l, tree, path, "left_children", &t->left, &t->n)) ||
        (rc = get_node_array(l, tree, path, "right_children", &t->right, &t->n)) ||
        (rc = get_node_array(l, tree, path, "split_indices", &t->split_indices, &t->n)) ||
        (rc = get_node_array(l, tree, path, "split_conditions", &t->split_conditions, &t->n)) ||
        (rc = get_node_array(l, tree, path, "default_left", &t->default_left, &t->n)) ||
        (rc = get_node_array(l, tree, path, "base_weights", &t->base_weights, &t->n)))
        return rc;
    if (t->n == 0)
        return fail(l, MOSAIC_EINVAL, path, "the tree has no nodes");

    tp = cJSON_GetObjectItemCaseSensitive(tree, "tree_param");
    if (tp) {
        char tpath[256];
        long v = 0;
        int present;
        snprintf(tpath, sizeof(tpath), "%s.tree_param", path);
        if (!cJSON_IsObject(tp))
            return fail(l, MOSAIC_EINVAL, tpath, "expected an object");
        if ((rc = get_opt_param_int(l, tp, tpath, "num_nodes", 0, INT_MAX, &v, &present)))
            return rc;
        if (present && v != t->n)
            return fail(l, MOSAIC_EINVAL, tpath,
                        "num_nodes = %ld, but the arrays have %d elements", v, t->n);
        if ((rc = get_opt_param_int(l, tp, tpath, "size_leaf_vector", 0, INT_MAX, &v,
                                    &present)))
            return rc;
        if (present && v != 0)
            return fail(l, MOSAIC_EINVAL, tpath,
                        "size_leaf_vector = %ld: vector leaves are not supported", v);
    }

    st = cJSON_GetObjectItemCaseSensitive(tree, "split_type");
    if (st) {
        char spath[256];
        int i = 0;
        const cJSON *e;
        snprintf(spath, sizeof(spath), "%s.split_type", path);
        if (!cJSON_IsArray(st))
            return fail(l, MOSAIC_EINVAL, spath, "expected an array");
        cJSON_ArrayForEach(e, st) {
            if (!cJSON_IsNumber(e) || e->valuedouble != 0)
                return fail(l, MOSAIC_EINVAL, spath,
                            "element %d: only numerical splits (0) are supported", i);
            i++;
        }
    }
    return 0;
}

/* An integer element of an array already known to hold n elements. */
static int element_int(struct ld *l, const cJSON *e, const char *path,
                       const char *name, int i, long lo, long hi, long *out)
{
    char field[256];

    snprintf(field, sizeof(field), "%s.%s[%d]", path, name, i);
    if (!cJSON_IsNumber(e))
        return fail(l, MOSAIC_EINVAL, field, "expected an integer in [%ld, %ld]", lo, hi);
    if (e->valuedouble != floor(e->valuedouble) || e->valuedouble < (double)lo ||
        e->valuedouble > (double)hi)
        return fail(l, MOSAIC_EINVAL, field, "%.17g is not an integer in [%ld, %ld]",
                    e->valuedouble, lo, hi);
    *out = (long)e->valuedouble;
    return 0;
}

/* A float element that must be finite once rounded to float, as XGBoost
 * stores it. */
static int element_float(struct ld *l, const cJSON *e, const char *path,
                         const char *name, int i, float *out)
{
    char field[256];

    snprintf(field, sizeof(field), "%s.%s[%d]", path, name, i);
    if (!cJSON_IsNumber(e))
        return fail(l, MOSAIC_EINVAL, field, "expected a number");
    *out = (float)e->valuedouble;
    if (!isfinite(*out))
        return fail(l, MOSAIC_EINVAL, field, "%g is not a finite float", e->valuedouble);
    return 0;
}

/* default_left is 0/1 in XGBoost 1.7; JSON booleans are accepted too. */
static int element_bool(struct ld *l, const cJSON *e, const char *path,
                        const char *name, int i, int *out)
{
    char field[256];

    if (cJSON_IsBool(e)) {
        *out = cJSON_IsTrue(e);
        return 0;
    }
    if (cJSON_IsNumber(e) && (e->valuedouble == 0 || e->valuedouble == 1)) {
        *out = e->valuedouble == 1;
        return 0;
    }
    snprintf(field, sizeof(field), "%s.%s[%d]", path, name, i);
    return fail(l, MOSAIC_EINVAL, field, "expected 0, 1, true or false");
}

/* Copies one tree's nodes into raw[0 .. t->n). Each array is walked once with its own cursor, since indexing a
 * cJSON array is linear. Leaves keep their value (split_conditions holds the
 * leaf value, already scaled by eta; base_weights does not, and is only
 * checked). */
static int copy_tree(struct ld *l, const struct tree_json *t, const char *path,
                     int nfeatures, struct raw_node *raw)
{
    const cJSON *el = t->left->child, *er = t->right->child,
                *ei = t->split_indices->child, *ec = t->split_conditions->child,
                *ed = t->default_left->child, *ew = t->base_weights->child;
    int rc;

    for (int i = 0; i < t->n; i++) {
        long left = 0, right = 0, feat = 0;
        int dleft = 0;
        float value = 0, weight = 0;
        struct raw_node *nd = &raw[i];

        if ((rc = element_int(l, el, path, "left_children", i, -1, t->n - 1, &left)) ||
            (rc = element_int(l, er, path, "right_children", i, -1, t->n - 1, &right)) ||
            (rc = element_float(l, ec, path, "split_conditions", i, &value)) ||
            (rc = element_float(l, ew, path, "base_weights", i, &weight)) ||
            (rc = element_bool(l, ed, path, "default_left", i, &dleft)))
            return rc;
        /* Deleted nodes (pruned, unreachable) carry a marker feature id, so
         * the id is range-checked later, for reachable inner nodes only. */
        if ((rc = element_int(l, ei, path, "split_indices", i, 0, UINT32_MAX, &feat)))
            return rc;
        if ((left < 0) != (right < 0)) {
            char field[256];
            snprintf(field, sizeof(field), "%s.right_children[%d]", path, i);
            return fail(l, MOSAIC_EINVAL, field,
                        "node %d has left child %ld but right child %ld "
                        "(a leaf has both -1)", i, left, right);
        }
        nd->left = (int32_t)left;
        nd->right = (int32_t)right;
        nd->feature = left < 0 ? 0 : (uint32_t)(feat < (long)nfeatures ? feat : UINT32_MAX);
        if (left >= 0 && dleft)
            nd->feature |= NODE_DEFAULT_LEFT;
        nd->value = value;
        el = el->next, er = er->next, ei = ei->next, ec = ec->next;
        ed = ed->next, ew = ew->next;
    }
    return 0;
}

/* Walks the tree from its root (local index 0): every reachable node must be
 * reached once only (so there is no cycle and no shared subtree) and every
 * reachable inner node must split on a feature below nfeatures. A tree that
 * passes is finite; *steps is its depth in inner nodes, the number of steps
 * from the root to the deepest leaf. */
static int check_tree(struct ld *l, const char *path, const struct raw_node *raw,
                      int n, int nfeatures, int32_t *steps)
{
    unsigned char *seen = calloc((size_t)n, 1);
    int32_t *stack = malloc((size_t)n * sizeof(*stack));
    int32_t *depth = malloc((size_t)n * sizeof(*depth));
    int sp = 0, rc = 0;
    char field[256];

    *steps = 0;
    if (!seen || !stack || !depth) {
        rc = fail(l, MOSAIC_ENOMEM, path, "out of memory");
        goto out;
    }
    stack[sp++] = 0;
    seen[0] = 1;
    depth[0] = 0;
    while (sp > 0) {
        int32_t i = stack[--sp];
        const struct raw_node *nd = &raw[i];
        if (nd->left < 0) {
            if (depth[i] > *steps)
                *steps = depth[i];
            continue;
        }
        if ((nd->feature & NODE_FEATURE_MASK) >= (uint32_t)nfeatures) {
            snprintf(field, sizeof(field), "%s.split_indices[%d]", path, i);
            rc = fail(l, MOSAIC_EINVAL, field,
                      "the feature id is not below num_feature (%d)", nfeatures);
            goto out;
        }
        int32_t kids[2] = {nd->left, nd->right};
        for (int k = 0; k < 2; k++) {
            if (seen[kids[k]]) {
                snprintf(field, sizeof(field), "%s.%s[%d]", path,
                         k == 0 ? "left_children" : "right_children", i);
                rc = fail(l, MOSAIC_EINVAL, field,
                          "node %d is reached twice (a cycle or a shared subtree)", kids[k]);
                goto out;
            }
            seen[kids[k]] = 1;
            depth[kids[k]] = depth[i] + 1;
            /* Each node is pushed once, so the stack never holds more
             * than n entries. */
            stack[sp++] = kids[k];
        }
    }
out:
    free(seen);
    free(stack);
    free(depth);
    return rc;
}

/* Checks the learner's objective, booster and output parameters, and reads
 * base_score and num_feature. */
static int load_learner_params(struct ld *l, const cJSON *learner,
                               double *base_score, int *nfeatures)
{
    const cJSON *obj, *name, *mp, *gb;
    long v = 0;
    int present, rc;

    if ((rc = get_object(l, learner, "learner", "objective", &obj)) ||
        (rc = get_member(l, obj, "learner.objective", "name", &name)))
        return rc;
    if (!cJSON_IsString(name))
        return fail(l, MOSAIC_EINVAL, "learner.objective.name", "expected a string");
    if (strcmp(name->valuestring, "reg:squarederror") != 0)
        return fail(l, MOSAIC_EINVAL, "learner.objective.name",
                    "objective \"%s\" is not supported (only reg:squarederror)",
                    name->valuestring);

    if ((rc = get_object(l, learner, "learner", "gradient_booster", &gb)) ||
        (rc = get_member(l, gb, "learner.gradient_booster", "name", &name)))
        return rc;
    if (!cJSON_IsString(name) || strcmp(name->valuestring, "gbtree") != 0)
        return fail(l, MOSAIC_EINVAL, "learner.gradient_booster.name",
                    "only the gbtree booster is supported");

    if ((rc = get_object(l, learner, "learner", "learner_model_param", &mp)) ||
        (rc = get_param_number(l, mp, "learner.learner_model_param", "base_score",
                               base_score)) ||
        (rc = get_param_int(l, mp, "learner.learner_model_param", "num_feature", 1,
                            (long)NODE_FEATURE_MASK, &v)))
        return rc;
    *nfeatures = (int)v;
    if ((rc = get_opt_param_int(l, mp, "learner.learner_model_param", "num_class", 0,
                                INT_MAX, &v, &present)))
        return rc;
    if (present && v > 1)
        return fail(l, MOSAIC_EINVAL, "learner.learner_model_param.num_class",
                    "%ld classes: only single-output regression is supported", v);
    if ((rc = get_opt_param_int(l, mp, "learner.learner_model_param", "num_target", 0,
                                INT_MAX, &v, &present)))
        return rc;
    if (present && v > 1)
        return fail(l, MOSAIC_EINVAL, "learner.learner_model_param.num_target",
                    "%ld targets: only single-output regression is supported", v);
    return 0;
}

/* Finds the trees array, checks it against gbtree_model_param.num_trees,
 * and counts the nodes of all trees. */
static int find_trees(struct ld *l, const cJSON *learner, const cJSON **trees,
                      int *ntrees, int64_t *total_nodes)
{
    const cJSON *gb, *model, *tree, *mp;
    int rc;

    if ((rc = get_object(l, learner, "learner", "gradient_booster", &gb)) ||
        (rc = get_object(l, gb, "learner.gradient_booster", "model", &model)) ||
        (rc = get_member(l, model, "learner.gradient_booster.model", "trees", trees)))
        return rc;
    if (!cJSON_IsArray(*trees))
        return fail(l, MOSAIC_EINVAL, TREES_PATH, "expected an array");
    *ntrees = cJSON_GetArraySize(*trees);
    if (*ntrees == 0)
        return fail(l, MOSAIC_EINVAL, TREES_PATH, "the model has no trees");
    /* The bound keeps the padded tree count (a multiple of FOREST_LANES)
     * within an int. */
    if (*ntrees > INT_MAX / 2)
        return fail(l, MOSAIC_EINVAL, TREES_PATH, "too many trees (%d)", *ntrees);

    mp = cJSON_GetObjectItemCaseSensitive(model, "gbtree_model_param");
    if (mp) {
        long v = 0;
        int present;
        const char *mpath = "learner.gradient_booster.model.gbtree_model_param";
        if (!cJSON_IsObject(mp))
            return fail(l, MOSAIC_EINVAL, mpath, "expected an object");
        if ((rc = get_opt_param_int(l, mp, mpath, "num_trees", 0, INT_MAX, &v, &present)))
            return rc;
        if (present && v != *ntrees)
            return fail(l, MOSAIC_EINVAL, mpath,
                        "num_trees = %ld, but trees has %d elements", v, *ntrees);
    }

    *total_nodes = 0;
    cJSON_ArrayForEach(tree, *trees) {
        const cJSON *lc = cJSON_IsObject(tree)
                              ? cJSON_GetObjectItemCaseSensitive(tree, "left_children")
                              : NULL;
        if (cJSON_IsArray(lc))
            *total_nodes += cJSON_GetArraySize(lc);
    }
    if (*total_nodes > INT32_MAX)
        return fail(l, MOSAIC_EINVAL, TREES_PATH, "more than 2^31 - 1 nodes in all");
    return 0;
}

/* Lays out the reachable nodes of a checked tree breadth first from
 * f->nodes[base], with the right child after the left one; unreachable
 * (deleted) nodes are dropped. Returns the number of nodes laid out. */
static int32_t layout_tree(const struct raw_node *raw, int32_t base, int32_t *queue,
                           struct mosaic__forest *f)
{
    int32_t tail = 1;

    /* queue[k] is the raw index of the node placed at base + k. */
    queue[0] = 0;
    for (int32_t head = 0; head < tail; head++) {
        const struct raw_node *r = &raw[queue[head]];
        struct node *nd = &f->nodes[base + head];
        if (r->left < 0) {
            *nd = (struct node){base + head, 0, NAN};
            f->leaf_values[base + head] = r->value;
            continue;
        }
        /* check_tree reached every node once, so the queue holds at most
         * n entries. */
        *nd = (struct node){base + tail, r->feature & NODE_FEATURE_MASK, r->value};
        if (!(r->feature & NODE_DEFAULT_LEFT))
            nd->feature |= NODE_DEFAULT_RIGHT;
        f->leaf_values[base + head] = 0.0f;
        queue[tail++] = r->left;
        queue[tail++] = r->right;
    }
    return tail;
}

/* Validates one tree and appends it to the forest at *base. */
static int load_tree(struct ld *l, const cJSON *tree, int t, struct mosaic__forest *f,
                     int32_t *base)
{
    struct tree_json tj;
    struct raw_node *raw = NULL;
    int32_t *queue = NULL, steps;
    char path[128];
    int rc;

    snprintf(path, sizeof(path), TREES_PATH "[%d]", t);
    if ((rc = get_tree_arrays(l, tree, path, &tj)))
        return rc;
    raw = malloc((size_t)tj.n * sizeof(*raw));
    queue = malloc((size_t)tj.n * sizeof(*queue));
    if (!raw || !queue)
        rc = fail(l, MOSAIC_ENOMEM, path, "out of memory");
    if (!rc && !(rc = copy_tree(l, &tj, path, f->nfeatures, raw)) &&
        !(rc = check_tree(l, path, raw, tj.n, f->nfeatures, &steps))) {
        /* find_trees counted the same arrays, so the nodes fit. */
        f->roots[t] = *base;
        *base += layout_tree(raw, *base, queue, f);
        if (steps > f->group_steps[t / FOREST_LANES])
            f->group_steps[t / FOREST_LANES] = steps;
    }
    free(raw);
    free(queue);
    return rc;
}

/* Reads every tree into f->nodes, f->leaf_values, f->roots and
 * f->group_steps (allocated here), then pads the last group of trees with
 * a leaf of value 0 (depth 0). */
static int load_trees(struct ld *l, const cJSON *trees, int64_t total_nodes,
                      struct mosaic__forest *f)
{
    const cJSON *tree;
    int32_t base = 0;
    int t = 0, rc;

    f->ngroups = (f->ntrees + FOREST_LANES - 1) / FOREST_LANES;
    f->nodes = malloc((size_t)(total_nodes + 1) * sizeof(*f->nodes));
    f->leaf_values = malloc((size_t)(total_nodes + 1) * sizeof(*f->leaf_values));
    f->roots = malloc((size_t)f->ngroups * FOREST_LANES * sizeof(*f->roots));
    f->group_steps = calloc((size_t)f->ngroups, sizeof(*f->group_steps));
    if (!f->nodes || !f->leaf_values || !f->roots || !f->group_steps)
        return fail(l, MOSAIC_ENOMEM, TREES_PATH, "out of memory");
    cJSON_ArrayForEach(tree, trees) {
        if ((rc = load_tree(l, tree, t, f, &base)))
            return rc;
        t++;
    }
    f->nnodes = base;
    f->nodes[base] = (struct node){base, 0, NAN};
    f->leaf_values[base] = 0.0f;
    for (t = f->ntrees; t < f->ngroups * FOREST_LANES; t++)
        f->roots[t] = base;
    return 0;
}

/* Copies the subtree of f->nodes[i] (at depth d) to position pos of tree
 * t's perfect layout. */
static void perfect_fill(struct mosaic__forest *f, int t, int32_t i, uint32_t pos, int d)
{
    const struct node *nd = &f->nodes[i];
    uint32_t ni = (1u << f->pdepth) - 1;
    int leaf = nd->left == i;
    if (d == f->pdepth) {
        /* check_tree bounded every path by the forest's depth */
        f->pleaf[(size_t)t * (ni + 1) + (pos - ni)] = f->leaf_values[i];
        return;
    }
    f->pfeat[(size_t)t * ni + pos] = leaf ? 0 : (int32_t)(nd->feature & NODE_FEATURE_MASK);
    f->pthr[(size_t)t * ni + pos] = leaf ? 0.0f : nd->threshold;
    perfect_fill(f, t, leaf ? i : nd->left, 2 * pos + 1, d + 1);
    perfect_fill(f, t, leaf ? i : nd->left + 1, 2 * pos + 2, d + 1);
}

/* Lays the loaded trees out as perfect trees when the forest is shallow
 * enough (pdepth stays 0 otherwise). */
static int perfect_layout(struct ld *l, struct mosaic__forest *f)
{
    int depth = 0;
    size_t ni;
    for (int g = 0; g < f->ngroups; g++)
        if (f->group_steps[g] > depth) depth = f->group_steps[g];
    if (depth < 1 || depth > FOREST_PERFECT_MAX_DEPTH) return 0;
    ni = ((size_t)1 << depth) - 1;
    f->pfeat = malloc((size_t)f->ntrees * ni * sizeof(*f->pfeat));
    f->pthr = malloc((size_t)f->ntrees * ni * sizeof(*f->pthr));
    f->pleaf = malloc((size_t)f->ntrees * (ni + 1) * sizeof(*f->pleaf));
    if (!f->pfeat || !f->pthr || !f->pleaf)
        return fail(l, MOSAIC_ENOMEM, TREES_PATH, "out of memory");
    f->pdepth = depth;
    for (int t = 0; t < f->ntrees; t++) perfect_fill(f, t, f->roots[t], 0, 0);
    return 0;
}

static int load_json(struct ld *l, const cJSON *root, struct mosaic__forest *f)
{
    const cJSON *learner, *trees;
    int64_t total_nodes = 0;
    int rc;

    if (!cJSON_IsObject(root))
        return fail(l, MOSAIC_EINVAL, "", "the top level is not a JSON object");
    if ((rc = get_object(l, root, "", "learner", &learner)) ||
        (rc = load_learner_params(l, learner, &f->base_score, &f->nfeatures)) ||
        (rc = find_trees(l, learner, &trees, &f->ntrees, &total_nodes)))
        return rc;
    if ((rc = load_trees(l, trees, total_nodes, f)))
        return rc;
    return perfect_layout(l, f);
}

int mosaic__forest_load_string(const char *json, const char *what,
                               struct mosaic__forest **out, char *err, size_t errlen)
{
    struct ld l = {what ? what : "(model)", err, errlen};
    cJSON *root;
    int rc;

    if (err && errlen > 0)
        err[0] = '\0';
    if (!out)
        return fail(&l, MOSAIC_EINVAL, "", "no output pointer");
    *out = NULL;
    if (!json)
        return fail(&l, MOSAIC_EINVAL, "", "no model text");
    /* The strict parser refuses trailing data and duplicate keys (cJSON
     * alone would read the first of two "trees" arrays where XGBoost's
     * Python reader takes the last); a malformed model stays MOSAIC_EINVAL,
     * as this loader has always answered. */
    rc = mosaic__json_parse_strict(l.what, json, strlen(json), &root, err, errlen);
    if (rc)
        return rc == MOSAIC_EFORMAT ? MOSAIC_EINVAL : rc;
    rc = mosaic__forest_load_json(root, l.what, out, err, errlen);
    cJSON_Delete(root);
    return rc;
}

int mosaic__forest_load_json(const cJSON *root, const char *what,
                             struct mosaic__forest **out, char *err, size_t errlen)
{
    struct ld l = {what ? what : "(model)", err, errlen};
    struct mosaic__forest *f;
    int rc;

    if (!out)
        return fail(&l, MOSAIC_EINVAL, "", "no output pointer");
    *out = NULL;
    f = calloc(1, sizeof(*f));
    if (!f)
        return fail(&l, MOSAIC_ENOMEM, "", "out of memory");
    rc = load_json(&l, root, f);
    if (rc) {
        mosaic__forest_free(f);
        return rc;
    }
    *out = f;
    return 0;
}

int mosaic__forest_load(const char *path, struct mosaic__forest **out, char *err,
                        size_t errlen)
{
    struct ld l = {path ? path : "(null)", err, errlen};
    cJSON *root;
    int rc = 0;

    if (out)
        *out = NULL;
    if (!path || !out)
        return fail(&l, MOSAIC_EINVAL, "", "no path or no output pointer");
    rc = mosaic__json_read_file(path, MAX_MODEL_BYTES, &root, err, errlen);
    if (rc)
        return rc == MOSAIC_EFORMAT ? MOSAIC_EINVAL : rc;
    rc = mosaic__forest_load_json(root, path, out, err, errlen);
    cJSON_Delete(root);
    return rc;
}

/* One step down each of FOREST_LANES trees, without branches: a NaN
 * compares false with everything, so it goes right exactly when the node's
 * default is right; a leaf steps to itself. The loop is unrolled so that the
 * lanes' indices live in registers (left rolled, GCC vectorises it with
 * emulated gathers through memory, which is slower). */
static inline void step_lanes(const struct node *nodes, const float *x,
                              int32_t idx[FOREST_LANES])
{
#pragma GCC unroll 16
    for (int k = 0; k < FOREST_LANES; k++) {
        const struct node *nd = &nodes[idx[k]];
        float v = x[nd->feature & NODE_FEATURE_MASK];
        int go_right = (v >= nd->threshold) | (isnan(v) & (int)(nd->feature >> 31));
        idx[k] = nd->left + go_right;
    }
}

/* Trees stepped together on the perfect layout: their indices stay in
 * registers (8 measured best, 2026-12-01: one tree at a time left its
 * four dependent load-compare steps waiting on each other, 0.68 us for the
 * 80-tree inter-SM model against 0.45 us for the node array). */
#define PERFECT_LANES 8

/* A row without NaN features on the perfect layout: each tree is depth
 * steps of load-compare-index, the child computed rather than loaded, for
 * PERFECT_LANES trees at once; the leaves are summed in tree order, as in
 * the node-array loop below, so the result is the same to the bit. Inlined
 * with a constant depth for the H200 models' 4. */
static inline __attribute__((always_inline)) double
perfect_sum(const struct mosaic__forest *f, const float *x, int depth)
{
    const uint32_t ni = (1u << depth) - 1;
    double sum = 0;
    int t = 0;
    for (; t + PERFECT_LANES <= f->ntrees; t += PERFECT_LANES) {
        const int32_t *ft = f->pfeat + (size_t)t * ni;
        const float *th = f->pthr + (size_t)t * ni;
        const float *lv = f->pleaf + (size_t)t * (ni + 1);
        uint32_t i[PERFECT_LANES] = {0};
        for (int d = 0; d < depth; d++) {
#pragma GCC unroll 8
            for (int k = 0; k < PERFECT_LANES; k++) {
                uint32_t n = (uint32_t)k * ni + i[k];
                i[k] = 2 * i[k] + 1 + (x[ft[n]] >= th[n]);
            }
        }
#pragma GCC unroll 8
        for (int k = 0; k < PERFECT_LANES; k++) sum += lv[(uint32_t)k * (ni + 1) + i[k] - ni];
    }
    for (; t < f->ntrees; t++) {
        const int32_t *ft = f->pfeat + (size_t)t * ni;
        const float *th = f->pthr + (size_t)t * ni;
        uint32_t i = 0;
        for (int d = 0; d < depth; d++) i = 2 * i + 1 + (x[ft[i]] >= th[i]);
        sum += f->pleaf[(size_t)t * (ni + 1) + i - ni];
    }
    return sum;
}

double mosaic__forest_predict(const struct mosaic__forest *f, const float *x)
{
    const struct node *nodes = f->nodes;
    double sum = 0;
    int dense = 1;

    for (int i = 0; i < f->nfeatures; i++) dense &= !isnan(x[i]);
    if (dense && f->pdepth)
        return (f->pdepth == 4 ? perfect_sum(f, x, 4) : perfect_sum(f, x, f->pdepth)) +
               f->base_score;
    for (int g = 0; g < f->ngroups; g++) {
        int32_t idx[FOREST_LANES];
        memcpy(idx, &f->roots[g * FOREST_LANES], sizeof(idx));
        for (int32_t s = 0; s < f->group_steps[g]; s++)
            step_lanes(nodes, x, idx);
        for (int k = 0; k < FOREST_LANES; k++)
            sum += f->leaf_values[idx[k]];
    }
    return sum + f->base_score;
}

int mosaic__forest_check_range(const struct mosaic__forest *f, double bound,
                                const char *what, char *err, size_t errlen)
{
    struct ld l = {what ? what : "(model)", err, errlen};

    if (!(fabs(f->base_score) <= bound))
        return fail(&l, MOSAIC_EINVAL, "learner.learner_model_param.base_score",
                    "%g is outside [-%g, %g], the range this model's outputs can take "
                    "(a damaged or foreign model: retrain it with mosaic-train)",
                    f->base_score, bound, bound);
    for (int t = 0; t < f->ntrees; t++) {
        /* Tree t's nodes lie from its root to the next tree's root. */
        int32_t end = t + 1 < f->ntrees ? f->roots[t + 1] : f->nnodes;
        for (int32_t i = f->roots[t]; i < end; i++) {
            char field[128];
            if (f->nodes[i].left != i || fabs(f->leaf_values[i]) <= bound)
                continue;
            snprintf(field, sizeof field, TREES_PATH "[%d]", t);
            return fail(&l, MOSAIC_EINVAL, field,
                        "leaf value %g is outside [-%g, %g], the range this model's "
                        "leaves can take (a damaged or foreign model: retrain it with "
                        "mosaic-train)", (double)f->leaf_values[i], bound, bound);
        }
    }
    return 0;
}

int mosaic__forest_nfeatures(const struct mosaic__forest *f)
{
    return f->nfeatures;
}

int mosaic__forest_ntrees(const struct mosaic__forest *f)
{
    return f->ntrees;
}

void mosaic__forest_free(struct mosaic__forest *f)
{
    if (!f)
        return;
    free(f->nodes);
    free(f->leaf_values);
    free(f->roots);
    free(f->group_steps);
    free(f->pfeat);
    free(f->pthr);
    free(f->pleaf);
    free(f);
}
