/*
 * Loading XGBoost JSON models (predictor/trees.c) without libxgboost: the
 * committed seed models load and predict known values, and every kind of
 * broken model gives a negative MOSAIC_E* code and a message that names the
 * file and the field. Broken models are made by editing a valid one with
 * cJSON, so that each test changes exactly one thing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "mosaic/mosaic.h"
#include "trees.h"

#define VALID CORPUS "/valid_exact_d2.json"

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    char *s;
    long n;

    assert_non_null(fp);
    assert_int_equal(fseek(fp, 0, SEEK_END), 0);
    n = ftell(fp);
    assert_true(n > 0);
    rewind(fp);
    s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, fp), (size_t)n);
    s[n] = '\0';
    fclose(fp);
    return s;
}

static cJSON *valid_model(void)
{
    char *text = slurp(VALID);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    return root;
}

static cJSON *tree(cJSON *root, int i)
{
    cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(root, "learner"), "gradient_booster"), "model"), "trees");
    assert_non_null(t);
    return cJSON_GetArrayItem(t, i);
}

static cJSON *learner_item(cJSON *root, const char *name)
{
    cJSON *it = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "learner"), name);
    assert_non_null(it);
    return it;
}

static void set_array_int(cJSON *tr, const char *name, int i, double v)
{
    cJSON *arr = cJSON_GetObjectItem(tr, name);
    assert_non_null(arr);
    assert_true(cJSON_ReplaceItemInArray(arr, i, cJSON_CreateNumber(v)));
}

/* Loads the edited model (and frees it); the load must fail with code and a
 * message that contains every one of the NULL-terminated fragments. */
static void expect_error(cJSON *root, int code, ...)
{
    char *text = cJSON_PrintUnformatted(root);
    char err[512];
    struct mosaic__forest *f = (struct mosaic__forest *)&err; /* must be reset */
    va_list ap;
    const char *frag;

    cJSON_Delete(root);
    assert_non_null(text);
    assert_int_equal(mosaic__forest_load_string(text, "m.json", &f, err, sizeof(err)), code);
    assert_null(f);
    free(text);
    print_message("  %s\n", err);
    assert_non_null(strstr(err, "m.json: "));
    va_start(ap, code);
    while ((frag = va_arg(ap, const char *)) != NULL) {
        if (!strstr(err, frag))
            fail_msg("\"%s\" does not contain \"%s\"", err, frag);
    }
    va_end(ap);
}

static void test_valid_models_load(void **state)
{
    static const char *files[] = {"valid_exact_d2.json", "valid_hist_d3.json",
                                  "valid_pruned.json"};
    (void)state;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[1024], err[512];
        struct mosaic__forest *f;
        snprintf(path, sizeof(path), "%s/%s", CORPUS, files[i]);
        assert_int_equal(mosaic__forest_load(path, &f, err, sizeof(err)), 0);
        assert_true(mosaic__forest_ntrees(f) >= 2);
        assert_true(mosaic__forest_nfeatures(f) >= 3);
        mosaic__forest_free(f);
    }
}

/* The exact-method model, evaluated by hand from its JSON: tree 0 splits on
 * feature 0 at 4.81, so x0 = 4.81 goes right and NaN follows default_left. */
static void test_split_rule_and_missing(void **state)
{
    cJSON *root = valid_model();
    char *text;
    char err[512];
    struct mosaic__forest *f;
    cJSON *t0 = tree(root, 0), *t1 = tree(root, 1);
    (void)state;

    /* Rebuild the model as two stumps whose outcome is easy to state. */
    for (int k = 0; k < 2; k++) {
        cJSON *t = k ? t1 : t0;
        int n = cJSON_GetArraySize(cJSON_GetObjectItem(t, "left_children"));
        for (int i = 0; i < n; i++) {
            set_array_int(t, "left_children", i, i == 0 ? 1 : -1);
            set_array_int(t, "right_children", i, i == 0 ? 2 : -1);
            set_array_int(t, "split_indices", i, i == 0 ? k : 0);
            set_array_int(t, "split_conditions", i, i == 0 ? 0.5 : (i == 1 ? 1.0 : 2.0) * (k + 1));
            set_array_int(t, "default_left", i, k == 0);
        }
    }
    text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    assert_int_equal(mosaic__forest_load_string(text, "stumps", &f, err, sizeof(err)), 0);
    free(text);
    {
        /* Tree 0: x0 < 0.5 -> 1 else 2, NaN -> left (1). Tree 1: x1 < 0.5 ->
         * 2 else 4, NaN -> right (4). base_score 0.5. */
        const float a[3] = {0.25f, 0.25f, 0}, b[3] = {0.5f, 0.5f, 0},
                    c[3] = {NAN, NAN, NAN}, d[3] = {-INFINITY, INFINITY, 0};
        assert_float_equal(mosaic__forest_predict(f, a), 1 + 2 + 0.5, 1e-12);
        assert_float_equal(mosaic__forest_predict(f, b), 2 + 4 + 0.5, 1e-12);
        assert_float_equal(mosaic__forest_predict(f, c), 1 + 4 + 0.5, 1e-12);
        assert_float_equal(mosaic__forest_predict(f, d), 1 + 4 + 0.5, 1e-12);
    }
    mosaic__forest_free(f);
}

static void test_missing_file(void **state)
{
    char err[512];
    struct mosaic__forest *f;
    (void)state;
    assert_int_equal(mosaic__forest_load("/nonexistent/model.json", &f, err, sizeof(err)),
                     MOSAIC_EIO);
    assert_null(f);
    assert_non_null(strstr(err, "/nonexistent/model.json: cannot open"));
}

static void test_truncated_file(void **state)
{
    char path[1024], err[512];
    struct mosaic__forest *f;
    (void)state;
    snprintf(path, sizeof(path), "%s/bad_truncated.json", CORPUS);
    assert_int_equal(mosaic__forest_load(path, &f, err, sizeof(err)), MOSAIC_EINVAL);
    assert_non_null(strstr(err, "bad_truncated.json: not valid JSON"));
}

static void test_every_truncation(void **state)
{
    char *text = slurp(VALID);
    size_t n = strlen(text);
    char err[512];
    struct mosaic__forest *f;
    (void)state;
    /* Every prefix of a model is broken JSON, so none may load. */
    for (size_t len = 0; len < n; len++) {
        char saved = text[len];
        text[len] = '\0';
        assert_int_equal(mosaic__forest_load_string(text, "t", &f, err, sizeof(err)),
                         MOSAIC_EINVAL);
        text[len] = saved;
    }
    free(text);
}

static void test_wrong_types(void **state)
{
    cJSON *root;
    (void)state;

    root = valid_model();
    cJSON_ReplaceItemInObject(tree(root, 0), "left_children", cJSON_CreateString("1,2"));
    expect_error(root, MOSAIC_EINVAL, "trees[0].left_children", "expected an array", NULL);

    root = valid_model();
    set_array_int(tree(root, 1), "right_children", 0, 1.5);
    expect_error(root, MOSAIC_EINVAL, "trees[1].right_children[0]", "1.5", NULL);

    root = valid_model();
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(tree(root, 0), "split_conditions"), 2,
                             cJSON_CreateString("0.5"));
    expect_error(root, MOSAIC_EINVAL, "trees[0].split_conditions[2]", "expected a number", NULL);

    root = valid_model();
    cJSON_ReplaceItemInObject(learner_item(root, "learner_model_param"), "base_score",
                              cJSON_CreateString("half"));
    expect_error(root, MOSAIC_EINVAL, "learner.learner_model_param.base_score", NULL);

    root = valid_model();
    cJSON_ReplaceItemInObject(learner_item(root, "learner_model_param"), "num_feature",
                              cJSON_CreateTrue());
    expect_error(root, MOSAIC_EINVAL, "learner.learner_model_param.num_feature", NULL);

    root = valid_model();
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(tree(root, 0), "default_left"), 0,
                             cJSON_CreateNumber(2));
    expect_error(root, MOSAIC_EINVAL, "trees[0].default_left[0]", NULL);

    root = cJSON_CreateArray();
    expect_error(root, MOSAIC_EINVAL, "not a JSON object", NULL);
}

static void test_missing_fields(void **state)
{
    static const char *arrays[] = {"left_children", "right_children", "split_indices",
                                   "split_conditions", "default_left", "base_weights"};
    cJSON *root;
    (void)state;

    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
        root = valid_model();
        cJSON_DeleteItemFromObject(tree(root, 1), arrays[i]);
        expect_error(root, MOSAIC_EINVAL, "trees[1]", arrays[i], "missing", NULL);
    }
    root = valid_model();
    cJSON_DeleteItemFromObject(root, "learner");
    expect_error(root, MOSAIC_EINVAL, "\"learner\" is missing", NULL);
}

static void test_length_mismatch(void **state)
{
    cJSON *root = valid_model();
    (void)state;
    cJSON_DeleteItemFromArray(cJSON_GetObjectItem(tree(root, 0), "base_weights"), 0);
    expect_error(root, MOSAIC_EINVAL, "trees[0].base_weights", "has 6 elements", NULL);

    root = valid_model();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(tree(root, 0), "tree_param"), "num_nodes",
                              cJSON_CreateString("9"));
    expect_error(root, MOSAIC_EINVAL, "trees[0].tree_param", "num_nodes", NULL);

    root = valid_model();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(
        learner_item(root, "gradient_booster"), "model"), "gbtree_model_param"),
        "num_trees", cJSON_CreateString("3"));
    expect_error(root, MOSAIC_EINVAL, "gbtree_model_param", "num_trees", NULL);
}

static void test_child_out_of_range(void **state)
{
    cJSON *root = valid_model();
    (void)state;
    set_array_int(tree(root, 0), "left_children", 1, 99);
    expect_error(root, MOSAIC_EINVAL, "trees[0].left_children[1]", "99", NULL);

    root = valid_model();
    set_array_int(tree(root, 1), "right_children", 0, -2);
    expect_error(root, MOSAIC_EINVAL, "trees[1].right_children[0]", "-2", NULL);

    /* A leaf must have no children at all. */
    root = valid_model();
    set_array_int(tree(root, 0), "right_children", 1, -1);
    expect_error(root, MOSAIC_EINVAL, "trees[0].right_children[1]", "node 1", NULL);
}

static void test_cycle(void **state)
{
    cJSON *root = valid_model();
    (void)state;
    set_array_int(tree(root, 0), "left_children", 1, 0);
    expect_error(root, MOSAIC_EINVAL, "trees[0].left_children[1]", "reached twice", NULL);

    /* Two parents sharing one child is not a tree either. */
    root = valid_model();
    set_array_int(tree(root, 1), "right_children", 2, 4);
    expect_error(root, MOSAIC_EINVAL, "trees[1]", "reached twice", NULL);
}

static void test_feature_id_too_big(void **state)
{
    cJSON *root = valid_model();
    (void)state;
    set_array_int(tree(root, 1), "split_indices", 0, 3);
    expect_error(root, MOSAIC_EINVAL, "trees[1].split_indices[0]", "num_feature (3)", NULL);

    root = valid_model();
    set_array_int(tree(root, 1), "split_indices", 0, -1);
    expect_error(root, MOSAIC_EINVAL, "trees[1].split_indices[0]", NULL);
}

static void test_not_finite(void **state)
{
    cJSON *root = valid_model();
    (void)state;
    /* 1e39 is finite as a double but not as the float XGBoost stores. */
    set_array_int(tree(root, 0), "split_conditions", 0, 1e39);
    expect_error(root, MOSAIC_EINVAL, "trees[0].split_conditions[0]", "finite", NULL);
}

static void test_empty_trees(void **state)
{
    cJSON *root = valid_model();
    cJSON *model = cJSON_GetObjectItem(learner_item(root, "gradient_booster"), "model");
    (void)state;
    cJSON_ReplaceItemInObject(model, "trees", cJSON_CreateArray());
    cJSON_DeleteItemFromObject(model, "gbtree_model_param");
    expect_error(root, MOSAIC_EINVAL, "learner.gradient_booster.model.trees", "no trees",
                 NULL);

    root = valid_model();
    {
        static const char *arrays[] = {"left_children", "right_children", "split_indices",
                                       "split_conditions", "default_left", "base_weights"};
        cJSON *t = tree(root, 1);
        for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
            cJSON_ReplaceItemInObject(t, arrays[i], cJSON_CreateArray());
        cJSON_DeleteItemFromObject(t, "tree_param");
    }
    expect_error(root, MOSAIC_EINVAL, "trees[1]", "no nodes", NULL);
}

static void test_unsupported_models(void **state)
{
    cJSON *root = valid_model();
    (void)state;
    cJSON_ReplaceItemInObject(learner_item(root, "objective"), "name",
                              cJSON_CreateString("binary:logistic"));
    expect_error(root, MOSAIC_EINVAL, "learner.objective.name", "binary:logistic",
                 "reg:squarederror", NULL);

    root = valid_model();
    cJSON_ReplaceItemInObject(learner_item(root, "gradient_booster"), "name",
                              cJSON_CreateString("dart"));
    expect_error(root, MOSAIC_EINVAL, "learner.gradient_booster.name", "gbtree", NULL);

    root = valid_model();
    cJSON_ReplaceItemInObject(learner_item(root, "learner_model_param"), "num_class",
                              cJSON_CreateString("3"));
    expect_error(root, MOSAIC_EINVAL, "num_class", NULL);

    root = valid_model();
    set_array_int(tree(root, 0), "split_type", 0, 1);
    expect_error(root, MOSAIC_EINVAL, "trees[0].split_type", "numerical", NULL);
}

static void test_null_arguments(void **state)
{
    char err[64];
    struct mosaic__forest *f = NULL;
    (void)state;
    assert_int_equal(mosaic__forest_load_string(NULL, "x", &f, err, sizeof(err)),
                     MOSAIC_EINVAL);
    assert_int_equal(mosaic__forest_load_string("{}", "x", NULL, err, sizeof(err)),
                     MOSAIC_EINVAL);
    assert_int_equal(mosaic__forest_load(NULL, &f, err, sizeof(err)), MOSAIC_EINVAL);
    /* A short or absent message buffer is not an error of its own. */
    assert_int_equal(mosaic__forest_load_string("{", "x", &f, err, 4), MOSAIC_EINVAL);
    assert_int_equal(strlen(err), 3);
    assert_int_equal(mosaic__forest_load_string("{", "x", &f, NULL, 0), MOSAIC_EINVAL);
    mosaic__forest_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_models_load),
        cmocka_unit_test(test_split_rule_and_missing),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_truncated_file),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_missing_fields),
        cmocka_unit_test(test_length_mismatch),
        cmocka_unit_test(test_child_out_of_range),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_feature_id_too_big),
        cmocka_unit_test(test_not_finite),
        cmocka_unit_test(test_empty_trees),
        cmocka_unit_test(test_unsupported_models),
        cmocka_unit_test(test_null_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
