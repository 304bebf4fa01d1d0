/*
 * libmosaic.so, the launch interposer: what it offers to the process it is
 * loaded into.
 *
 * Loaded with LD_PRELOAD, the shim sees every kernel launch the program
 * makes through the CUDA driver API, however the program reaches the driver
 * (the CUDA runtime's cuGetProcAddress lookups, dlsym on libcuda, or direct
 * linking). It is silent and pass-through unless configured:
 *
 *   MOSAIC_LOG=off|error|warn|info|debug   log to stderr (default off)
 *   MOSAIC_STATS=/path/stats-%p.json        write counters at exit (%p: pid)
 *   MOSAIC_MODE=observe|passthrough         count launches, or forward only
 *   MOSAIC_ROLE=none|hp|be                  role under the arbiter
 *
 * The statistics schema is documented in docs/shim-stats.md.
 */
#ifndef MOSAIC_SHIM_H
#define MOSAIC_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Writes the current statistics as one JSON object (the MOSAIC_STATS
 * schema) into buf, NUL-terminated. Returns the length of the JSON text, or
 * MOSAIC_ERANGE when len is too small (call again with a larger buffer; the
 * needed size is not promised because counters move), or another negative
 * MOSAIC_E* code. Safe to call from any thread at any time.
 */
int mosaic_shim_stats_json(char *buf, size_t len);

/*
 * The driver's own entry point for a hooked driver symbol, by its exact ABI
 * name ("cuLaunchKernel_ptsz"), bypassing the shim; NULL when the name is
 * not hooked or the driver is not loaded. For benchmarks and tools that
 * must compare a call with and without the shim in one process.
 */
void *mosaic_shim_driver_entry(const char *abi_name);

#ifdef __cplusplus
}
#endif
#endif /* MOSAIC_SHIM_H */
