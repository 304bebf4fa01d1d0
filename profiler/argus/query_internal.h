/* What query.c shares with plan.c (not installed). */
#ifndef ARGUS_QUERY_INTERNAL_H
#define ARGUS_QUERY_INTERNAL_H

#include "argus/query.h"

struct cJSON;

/* The query as a request document (schema argus.query v1), so that a plan
 * records the query it answers in the same form a program sends; NULL when
 * out of memory. The caller deletes it. */
struct cJSON *argus__query_json(const argus_query *q);

#endif /* ARGUS_QUERY_INTERNAL_H */
