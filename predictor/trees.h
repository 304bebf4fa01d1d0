/*
 * Tree-ensemble inference without libxgboost: an XGBoost 1.7 JSON model
 * (XGBoosterSaveModel(booster, "x.json")) is loaded into one flat node array
 * and evaluated by a short loop. Only regression models
 * (objective reg:squarederror, one output, gbtree booster, numerical
 * splits) are accepted; anything else is refused at load time with a message
 * that names the file and the field.
 *
 * Loading validates the whole model, so that a hostile or truncated file
 * gives an error and a loaded forest can never read out of bounds: every
 * tree is a proper tree (reachable children in range, no node reached
 * twice), feature ids are below num_feature and every threshold and leaf
 * value is finite. docs/predictor-trees.md describes the format accepted.
 */
#ifndef MOSAIC_PREDICTOR_TREES_H
#define MOSAIC_PREDICTOR_TREES_H

#include <stddef.h>

struct mosaic__forest;

/* Reads an XGBoost JSON model file. Returns 0 and sets *out, or a negative
 * MOSAIC_E* code (MOSAIC_EIO: the file cannot be read or is not a regular
 * file; MOSAIC_ETOOBIG: larger than 512 MiB; MOSAIC_EINVAL: the model is
 * malformed or unsupported; MOSAIC_ENOMEM) with a message naming
 * the file and the field in err. */
int mosaic__forest_load(const char *path, struct mosaic__forest **out,
                        char *err, size_t errlen);

/* The same from a NUL-terminated JSON text, and from a document already
 * parsed (mosaic__json_read_file: the predictor reads each model file once
 * and checks its feature list on the same tree); what names it in
 * messages. The file and the text go through the core's strict reader
 * (core/json.h): trailing data and duplicate keys are refused. */
int mosaic__forest_load_string(const char *json, const char *what,
                               struct mosaic__forest **out, char *err,
                               size_t errlen);
struct cJSON;
int mosaic__forest_load_json(const struct cJSON *root, const char *what,
                             struct mosaic__forest **out, char *err, size_t errlen);

/* The model's prediction for one row x of mosaic__forest_nfeatures(f)
 * features: the sum of the trees' leaf values plus base_score. A NaN feature
 * is missing and follows the split's default direction; otherwise
 * x < threshold goes left, as in XGBoost. No allocation, no locking: a
 * loaded forest may be shared by threads. A forest of depth at most 6 is
 * also kept as perfect binary trees, which a row without NaN features takes
 * (same result to the bit; 0.26-0.34 us against 0.34-0.54 us for the
 * 80-tree, depth-4 H200 inter-SM model, 2026-12-01); mosaic-train
 * --check-forests compares both paths with XGBoost on every dataset row. */
double mosaic__forest_predict(const struct mosaic__forest *f, const float *x);

/* 0 when the base score and every leaf value are within [-bound, bound];
 * else MOSAIC_EINVAL with a message naming the file (what) and the tree.
 * The generic loader accepts any finite value; a caller that knows what its
 * model predicts (the predictor: log factors) sets the bound. */
int mosaic__forest_check_range(const struct mosaic__forest *f, double bound,
                               const char *what, char *err, size_t errlen);

int mosaic__forest_nfeatures(const struct mosaic__forest *f);
int mosaic__forest_ntrees(const struct mosaic__forest *f);

void mosaic__forest_free(struct mosaic__forest *f);

#endif
