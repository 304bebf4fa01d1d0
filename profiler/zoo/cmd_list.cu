/*
 * mosaic-zoo list: one "variant" record per variant of the registry (name,
 * family, category, working set, size parameters, whether it has a check).
 * It needs no GPU.
 */
#include <cuda_runtime.h>

#include "zoo.h"
#include "zoo_cmds.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"

int cmd_list(void)
{
    int i;

    for (i = 0; i < zoo_n_variants; i++) {
        const struct zoo_variant *v = &zoo_variants[i];
        long long p[4];
        int k;

        for (k = 0; k < 4; k++)
            p[k] = v->p[k];
        j_begin("variant");
        j_str("name", v->name);
        j_str("family", v->family);
        j_str("category", zoo_category_name(v->category));
        j_int("working_set_bytes", (long long)working_set(v));
        j_key("p");
        j_fmt("[%lld,%lld,%lld,%lld]", p[0], p[1], p[2], p[3]);
        j_bool("has_check", v->check != NULL);
        j_end();
    }
    return 0;
}
