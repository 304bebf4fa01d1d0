/*
 * The hardware-counter features of a kernel profile: ONE list, used by the
 * capture library (metrics to configure in CUPTI), the ncu importer (columns
 * to read from `ncu --csv --page raw`), the profile writer and reader (JSON
 * keys) and the docs.
 *
 *   X(feature_key, "ncu/cupti metric name", "unit", dimension)
 *
 * feature_key  key of the feature in a profile's "metrics" object;
 * metric name  the Nsight Compute / CUPTI Profiler Host API metric name;
 * unit         the unit the value is stored in (ncu's units are converted);
 * dimension    MOSAIC_DIM_*: what the importer accepts as a source unit.
 *
 * Appending a feature is safe; renaming a key or changing a unit changes the
 * schema (bump "mosaic-profile/N" in mosaic/profile.h).
 */
#ifndef MOSAIC_PROFILE_METRICS_H
#define MOSAIC_PROFILE_METRICS_H

/* The dimension of a feature's unit: decides which ncu units convert to it. */
enum mosaic_dim {
    MOSAIC_DIM_TIME_NS,    /* [n|u|m]second        -> ns                  */
    MOSAIC_DIM_BYTES,      /* [K|M|G|T|Ki|Mi..]byte -> bytes              */
    MOSAIC_DIM_BYTES_RATE, /* [p]byte/[p]second    -> bytes/s             */
    MOSAIC_DIM_COUNT,      /* [p]<thing> or ""     -> count               */
    MOSAIC_DIM_COUNT_RATE, /* [p]<thing>/[p]second -> per second          */
    MOSAIC_DIM_PCT,        /* "%" or ""            -> percent (0..100)    */
    MOSAIC_DIM_RATIO       /* "", x/cycle, warp... -> plain number        */
};

#define MOSAIC_METRICS(X)                                                     \
    X(duration_ns, "gpu__time_duration.sum", "ns", MOSAIC_DIM_TIME_NS)        \
    /* DRAM traffic */                                                        \
    X(dram_read_bytes, "dram__bytes_read.sum", "bytes", MOSAIC_DIM_BYTES)     \
    X(dram_write_bytes, "dram__bytes_write.sum", "bytes", MOSAIC_DIM_BYTES)   \
    X(dram_read_bw, "dram__bytes_read.sum.per_second", "bytes/s",             \
      MOSAIC_DIM_BYTES_RATE)                                                  \
    X(dram_write_bw, "dram__bytes_write.sum.per_second", "bytes/s",           \
      MOSAIC_DIM_BYTES_RATE)                                                  \
    /* L1TEX <-> L2 traffic (32-byte sectors) */                              \
    X(l2_read_sectors, "lts__t_sectors_srcunit_tex_op_read.sum", "sectors",   \
      MOSAIC_DIM_COUNT)                                                       \
    X(l2_write_sectors, "lts__t_sectors_srcunit_tex_op_write.sum", "sectors", \
      MOSAIC_DIM_COUNT)                                                       \
    X(l2_read_sector_rate, "lts__t_sectors_srcunit_tex_op_read.sum.per_second", \
      "sectors/s", MOSAIC_DIM_COUNT_RATE)                                     \
    X(l2_write_sector_rate,                                                   \
      "lts__t_sectors_srcunit_tex_op_write.sum.per_second", "sectors/s",      \
      MOSAIC_DIM_COUNT_RATE)                                                  \
    /* cache hit rates */                                                     \
    X(l1_hit_rate_pct, "l1tex__t_sector_hit_rate.pct", "%", MOSAIC_DIM_PCT)   \
    X(l2_hit_rate_pct, "lts__t_sector_hit_rate.pct", "%", MOSAIC_DIM_PCT)     \
    /* scheduler */                                                           \
    X(warps_eligible_per_cycle, "smsp__warps_eligible.avg.per_cycle_active",  \
      "warps/cycle", MOSAIC_DIM_RATIO)                                        \
    X(stall_long_scoreboard,                                                  \
      "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", \
      "ratio", MOSAIC_DIM_RATIO)                                              \
    X(stall_mio_throttle,                                                     \
      "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio", \
      "ratio", MOSAIC_DIM_RATIO)                                              \
    X(issue_active, "smsp__issue_active.avg.per_cycle_active", "ratio",       \
      MOSAIC_DIM_RATIO)                                                       \
    X(ipc, "sm__inst_executed.avg.per_cycle_active", "inst/cycle",            \
      MOSAIC_DIM_RATIO)                                                       \
    /* pipe utilisation, % of peak sustained while the SM is active. On GH100 \
     * there is no sm__pipe_xu_cycles_active nor                             \
     * sm__pipe_tensor_op_gmma_cycles_active (CUPTI 13.0 rejects both): XU   \
     * and wgmma use the issue-based sm__inst_executed_pipe_* forms, and     \
     * wgmma cycles are also counted in the hmma pipe. */                    \
    X(pipe_fma_pct, "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", \
      "%", MOSAIC_DIM_PCT)                                                    \
    X(pipe_alu_pct, "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active", \
      "%", MOSAIC_DIM_PCT)                                                    \
    X(pipe_xu_pct, "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", \
      "%", MOSAIC_DIM_PCT)                                                    \
    X(pipe_lsu_pct, "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active", \
      "%", MOSAIC_DIM_PCT)                                                    \
    X(pipe_tensor_hmma_pct,                                                   \
      "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", \
      "%", MOSAIC_DIM_PCT)                                                    \
    X(pipe_tensor_gmma_pct,                                                   \
      "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active", \
      "%", MOSAIC_DIM_PCT)                                                    \
    X(pipe_fp64_pct,                                                          \
      "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active", "%",    \
      MOSAIC_DIM_PCT)                                                         \
    /* instruction mix (warp-level instructions) */                          \
    X(inst_fma, "smsp__inst_executed_pipe_fma.sum", "inst", MOSAIC_DIM_COUNT) \
    X(inst_alu, "smsp__inst_executed_pipe_alu.sum", "inst", MOSAIC_DIM_COUNT) \
    X(inst_xu, "smsp__inst_executed_pipe_xu.sum", "inst", MOSAIC_DIM_COUNT)   \
    X(inst_lsu, "smsp__inst_executed_pipe_lsu.sum", "inst", MOSAIC_DIM_COUNT) \
    /* global-load coalescing */                                              \
    X(gld_sectors, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",          \
      "sectors", MOSAIC_DIM_COUNT)                                            \
    X(gld_requests, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",        \
      "requests", MOSAIC_DIM_COUNT)                                           \
    X(smem_bank_conflicts, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", \
      "conflicts", MOSAIC_DIM_COUNT)                                          \
    /* SM activity and achieved occupancy */                                  \
    X(sm_cycles_active_avg, "sm__cycles_active.avg", "cycles",                \
      MOSAIC_DIM_COUNT)                                                       \
    X(sm_cycles_active_min, "sm__cycles_active.min", "cycles",                \
      MOSAIC_DIM_COUNT)                                                       \
    X(sm_cycles_active_max, "sm__cycles_active.max", "cycles",                \
      MOSAIC_DIM_COUNT)                                                       \
    X(achieved_occupancy_pct,                                                 \
      "sm__warps_active.avg.pct_of_peak_sustained_active", "%",               \
      MOSAIC_DIM_PCT)

/*
 * Derived features, computed from the collected ones (never measured):
 *   X(feature_key, "formula", "unit")
 * A derived feature is null when an input is missing or a divisor is 0.
 */
#define MOSAIC_DERIVED(X)                                                     \
    X(compute_to_lsu, "(inst_fma + inst_alu + inst_xu) / inst_lsu", "ratio")  \
    X(sectors_per_request, "gld_sectors / gld_requests", "sectors/request")   \
    X(issue_stall_ratio, "1 - issue_active", "ratio")

enum mosaic_metric_id {
#define MOSAIC_X_ENUM(key, name, unit, dim) MOSAIC_M_##key,
    MOSAIC_METRICS(MOSAIC_X_ENUM)
#undef MOSAIC_X_ENUM
    MOSAIC_N_METRICS
};

enum mosaic_derived_id {
#define MOSAIC_X_DENUM(key, formula, unit) MOSAIC_D_##key,
    MOSAIC_DERIVED(MOSAIC_X_DENUM)
#undef MOSAIC_X_DENUM
    MOSAIC_N_DERIVED
};

#endif
