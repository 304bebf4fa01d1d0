/*
 * Import of Nsight Compute CSV (`ncu --csv --page raw --metrics <list>`)
 * into a "mosaic-profile/1" profile (method "ncu_csv").
 *
 * The raw page has one header line of quoted column names, one line of
 * units, then one row per profiled kernel launch. Lines before the header
 * (the program's own output, ==PROF== messages) and ==PROF== lines after it
 * are skipped. Values may carry thousands separators ("1,048,576"); "n/a"
 * becomes a missing value. ncu's auto-scaled units (usecond, Mbyte,
 * Gbyte/second, Ksector, ...) are converted to the units of
 * mosaic/profile_metrics.h.
 *
 * Library mosaic_ncu (profiler/ncu/, needs libcsv); only `mosaic-profile`
 * and the tests link it. Internal to the project: the profile itself is the
 * public interface (mosaic/profile.h).
 */
#ifndef MOSAIC_PROFILER_NCU_IMPORT_H
#define MOSAIC_PROFILER_NCU_IMPORT_H

#include <stddef.h>

#include "mosaic/profile.h"

/* Reads path (a regular file: a FIFO is refused, not waited on) into p
 * (initialised here). Returns 0, or MOSAIC_EFORMAT (not ncu CSV, a bad
 * value), MOSAIC_EIO (cannot open or read) or MOSAIC_ENOMEM, with a message
 * "path:line: what is wrong; how to fix it" in err; p is then empty.
 * Columns of profile_metrics.h absent from the file are recorded as problems (the
 * profile is then incomplete), not errors. Returns 0 with p->n_kernels == 0
 * when the file has a header but no kernel rows. A line longer than 16 MiB
 * is refused as soon as reading passes the limit (memory stays bounded
 * whatever the input); launch sizes outside CUDA's limits (more than 1024
 * threads per block, grid y or z above 65535) and SM counts outside
 * 1..MOSAIC_GPU_MAX_SMS are refused by line and column. */
int mosaic_ncu_import(const char *path, struct mosaic_profile *p, char *err,
                      size_t errlen);

/* Same, from a stream; name is used in messages. */
int mosaic_ncu_import_stream(FILE *f, const char *name,
                             struct mosaic_profile *p, char *err,
                             size_t errlen);

/* The factor that converts a value in ncu's unit to the unit of dimension
 * dim (e.g. "usecond" -> ns: 1000; "Gbyte/second" -> bytes/s: 1e9).
 * Returns 0, or MOSAIC_EFORMAT when the unit does not fit the dimension. */
int mosaic_ncu_unit_scale(const char *unit, enum mosaic_dim dim, double *scale);

/* Parses ncu's "(x, y, z)" launch dimensions. Returns 0 or MOSAIC_EFORMAT. */
int mosaic_ncu_parse_dim3(const char *s, int64_t out[3]);

/* Parses an ncu number: optional sign, digits with optional thousands
 * separators, optional fraction and exponent. "n/a", "N/A", "" and "-"
 * give NaN and return 1. Returns 0 on a number, MOSAIC_EFORMAT on anything
 * else. */
int mosaic_ncu_parse_number(const char *s, double *out);

/* The metric list for `ncu --metrics`: profile_metrics.h's metrics and the launch
 * statistics the importer reads, comma-separated (static storage). */
const char *mosaic_ncu_metric_list(void);

#endif
