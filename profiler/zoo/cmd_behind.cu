/*
 * mosaic-zoo behind: where a second kernel's blocks land when it arrives
 * while a real zoo variant holds the SMs (the probe of zoo_probes.h in
 * given shapes, launched right behind each variant on another stream).
 * Results on the H200 (driver 580.159.04, CUDA 13.0):
 * profiler/data/h200/behind.jsonl, docs/placement.md.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo.h"
#include "zoo_cmds.h"
#include "zoo_harness.h"
#include "zoo_jsonl.h"
#include "zoo_probes.h"

/*
 * The first kernel is a zoo variant, launched on its own; the second is the
 * placement probe in a given shape (grid x threads [+ dynamic shared
 * memory]), launched on another stream right after it, so that it arrives
 * while the variant's blocks hold the SMs (the host's launch gap, a few us).
 * Stamp kernels before and after the variant on its stream bound its run on
 * the probe's clock (%globaltimer). Per run: the probe's blocks per SM, how
 * many started before the variant ended, and each block's start relative to
 * the variant's end.
 */
struct bprobe {
    int grid, threads, smem;
};

#define ZOO_MAX_BPROBES 16

static int parse_bprobes(const char *s, struct bprobe *out, int max)
{
    char buf[512];
    char *tok, *save = NULL;
    int n = 0;

    snprintf(buf, sizeof(buf), "%s", s ? s : "");
    for (tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        struct bprobe b = {0, 0, 0};
        char tail = 0;
        int k = sscanf(tok, "%dx%d+%d%c", &b.grid, &b.threads, &b.smem, &tail);

        if (n >= max || k < 2 || k > 3 || b.grid <= 0 ||
            b.grid > ZOO_PROBE_CAP || b.threads <= 0 || b.threads > 1024 ||
            b.smem < 0 || b.smem > 227 * 1024)
            return -1;
        out[n++] = b;
    }
    return n;
}

static int behind_run(struct zoo_inst *in, const struct bprobe *p, int rep,
                      cudaStream_t sf, cudaStream_t ss,
                      unsigned long long *d_stamp, double spin_us)
{
    unsigned long long st[2] = {0, 0};
    const struct probe_rec *r = g_hprobe[1];
    int per_sm[ZOO_MAX_SMID];
    long long rel[ZOO_PROBE_CAP];
    int rc = 0, i, n_smid = 0, before = 0, used = 0, maxb = 0;

    clear_err();
    CK(cudaMemsetAsync(g_dprobe[1], 0, (size_t)p->grid * sizeof(*r), ss));
    CKZ(wait_stream(ss));
    zoo_stamp_kernel<<<1, 1, 0, sf>>>(d_stamp);
    CK(cudaGetLastError());
    CKZ(launch_one(in, sf));
    zoo_probe_k2<<<p->grid, p->threads, p->smem, ss>>>(
        g_dprobe[1], (unsigned long long)(spin_us * 1e3));
    CK(cudaGetLastError());
    zoo_stamp_kernel<<<1, 1, 0, sf>>>(d_stamp + 1);
    CK(cudaGetLastError());
    CKZ(probe_fetch(1, p->grid, ss));
    CKZ(wait_stream(sf));
    CK(cudaMemcpy(st, d_stamp, sizeof(st), cudaMemcpyDeviceToHost));
    memset(per_sm, 0, sizeof(per_sm));
    for (i = 0; i < p->grid; i++) {
        if (r[i].t0 == 0 || r[i].smid >= ZOO_MAX_SMID ||
            r[i].block != (unsigned int)i) {
            seterr("probe block %d wrote no record", i);
            rc = -1;
            goto out;
        }
        if (!per_sm[r[i].smid]++)
            used++;
        if ((int)r[i].smid + 1 > n_smid)
            n_smid = (int)r[i].smid + 1;
        rel[i] = (long long)(r[i].t0 - st[1]);
        before += r[i].t0 < st[1];
    }
    for (i = 0; i < n_smid; i++)
        maxb = per_sm[i] > maxb ? per_sm[i] : maxb;
out:
    j_begin("behind");
    j_result(rc == 0);
    j_str("first", in->v->name);
    j_int("rep", rep);
    j_int("probe_grid", p->grid);
    j_int("probe_threads", p->threads);
    j_int("probe_smem_bytes", p->smem);
    j_num("probe_spin_us", spin_us);
    if (rc == 0) {
        int hist[33];

        memset(hist, 0, sizeof(hist));
        for (i = 0; i < n_smid; i++)
            hist[per_sm[i] > 32 ? 32 : per_sm[i]]++;
        j_int("first_run_ns", (long long)(st[1] - st[0]));
        j_int("sms_used", used);
        j_int("max_blocks_per_sm", maxb);
        j_int("max_resident_per_sm", max_resident(1, p->grid));
        j_int("started_before_first_end", before);
        j_ints("sms_with_n_blocks", hist, maxb + 1);
        j_ints("blocks_per_smid", per_sm, n_smid);
        {
            /* start of each block relative to the first kernel's end, in
             * ns, in block order */
            char key[] = "start_minus_first_end_ns";
            j_key(key);
            j_raw("[", 1);
            for (i = 0; i < p->grid; i++)
                j_fmt("%s%lld", i ? "," : "", rel[i]);
            j_raw("]", 1);
        }
    } else {
        j_str("error", g_err);
    }
    j_end();
    if (rc)
        recover();
    return rc;
}

int cmd_behind(void)
{
    struct bprobe pr[ZOO_MAX_BPROBES];
    unsigned char *sel = (unsigned char *)calloc((size_t)zoo_n_variants + 1, 1);
    unsigned long long *d_stamp = NULL;
    cudaStream_t sf = NULL, ss = NULL;
    int np = parse_bprobes(g_opt.probes, pr, ZOO_MAX_BPROBES);
    int reps = g_opt.repeats ? g_opt.repeats : 3, i, p, r;

    if (np <= 0 || !sel || probe_alloc() ||
        cudaStreamCreateWithFlags(&sf, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&ss, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc((void **)&d_stamp, 2 * sizeof(*d_stamp)) != cudaSuccess) {
        error_record(np <= 0 ? "behind: bad --probes (GxT[+SMEM],...)"
                             : "behind: cannot allocate streams or buffers");
        goto done;
    }
    select_variants(g_opt.variants, sel);
    for (i = 0; i < zoo_n_variants && !should_stop(); i++) {
        struct zoo_inst in;

        if (!sel[i] || inst_ready(&in, i, sf))
            continue;
        for (p = 0; p < np && !should_stop(); p++) {
            if (probe_attrs(zoo_probe_k2, pr[p].smem, -1)) {
                error_record(g_err);
                recover();
                continue;
            }
            for (r = 0; r < reps && !should_stop(); r++)
                behind_run(&in, &pr[p], r, sf, ss, d_stamp, g_opt.spin_us);
        }
        inst_teardown(&in);
    }
    probe_attrs(zoo_probe_k2, 0, -1);
done:
    if (d_stamp)
        cudaFree(d_stamp);
    if (sf)
        cudaStreamDestroy(sf);
    if (ss)
        cudaStreamDestroy(ss);
    free(sel);
    return 0;
}
