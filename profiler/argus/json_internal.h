/* What json.c (the reports) and metrics.c (hardware metrics) share: the
 * marked-number helper and the metrics pieces of both reports. Needs
 * cJSON (argus_io only; not installed). */
#ifndef ARGUS_JSON_INTERNAL_H
#define ARGUS_JSON_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "argus/metrics.h"

/* {"value": v, "unit": unit, "mark": mark}: every number of a report. */
cJSON *argus__jnum(double v, const char *unit, const char *mark);

/* How the kernels of a report fared in the join (the report's
 * metrics.configs_* and launches_*). */
typedef struct argus__metrics_counts {
    uint64_t joined, none, ambiguous, other_gpu; /* kernel configurations */
    uint64_t launches_joined, launches_unjoined;
    char device_note[512]; /* how the recording's GPU was checked */
} argus__metrics_counts;

/* The report's top-level "metrics" object (c may be NULL). */
cJSON *argus__metrics_run_json(const argus_metrics *m, const argus__metrics_counts *c);

/* One launch configuration's "hw_metrics" entry: the join, the profile's
 * metrics, % of peak and the bottleneck; other_gpu (not NULL) says why the
 * kernel's GPU is not the profile's and no join is made. *state gets
 * ARGUS_JOIN_* or -1 (other GPU). */
cJSON *argus__metrics_cfg_json(const argus_metrics *m, const argus_kcfg *k, uint64_t launches,
                               const char *other_gpu, int *state);

/* argus-shim's kernel regions grouped by launch configuration and device,
 * each group's hw_metrics entry made (metrics.c). */
typedef struct argus__shim_hw argus__shim_hw;
struct argus_shim_result;
int argus__shim_hw_build(const struct argus_shim_result *r, const argus_scope *s,
                         argus__shim_hw **out);
/* The node's hw_metrics array (its groups, handed over), or NULL. */
cJSON *argus__shim_hw_node(argus__shim_hw *h, uint32_t node);
/* The report's top-level "metrics" object with the join's counts. */
cJSON *argus__shim_hw_run(const argus__shim_hw *h, const argus_metrics *m);
void argus__shim_hw_free(argus__shim_hw *h);

#endif /* ARGUS_JSON_INTERNAL_H */
