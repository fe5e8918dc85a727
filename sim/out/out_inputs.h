/* out_inputs — the input files of a run and their content digests.
 *
 * Every string key of the schema whose unit is OUT_PATH_UNIT names a file
 * the run reads (a trace, a length distribution, a GPU or model spec, a
 * calibration, a profile): a new key of that kind is an input with no
 * other change. A point's identity (out_point_id) covers the content of
 * each, and the catalog keeps them as text per run. Digests are hex
 * SHA-256 (nettle). Errors: KS_EIO naming the path, KS_ENOMEM.
 */
#ifndef KVSIM_OUT_INPUTS_H
#define KVSIM_OUT_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"

/* Size and hex SHA-256 of a whole file (size may be NULL); KS_EIO naming
 * the path when it cannot be read. */
int out_file_sha256(const char *path, uint64_t *size, char hex[65], err_t *e);

/* The unit that marks a string key as an input file's path: every such key
 * of the schema is an input of the runs that set it (a comma-separated
 * value is a list of paths, each taken as given; "auto" and "none" are
 * [compute] calibration's keywords, not files). */
#define OUT_PATH_UNIT "path"
/* Calls fn(key "section.key", path as the run resolves it, ctx) for each
 * input file cfg names; stops at fn's first nonzero return. */
typedef int (*out_input_fn)(const char *key, const char *path, void *ctx);
int out_cfg_inputs(const cfg_t *cfg, out_input_fn fn, void *ctx, err_t *e);
/* The inputs of a run as text, one "KEY PATH DIGEST\n" line per file, in
 * schema order, then one "plugin PATH DIGEST" line per extra file (the
 * plugins of kvsim run): DIGEST is the hex SHA-256 of the content,
 * "missing", "not a regular file" (never opened) or "unreadable: REASON". "" when the run reads no file;
 * malloc'd into *text. A file is read once while its path, size, mtime and
 * inode stay the same, in this process and the next ones (the traces'
 * digest cache, tr.h tr_file_sha256_cached). */
int out_point_inputs(const cfg_t *cfg, const char *const *extra, size_t n_extra, char **text,
		     err_t *e);

/* Whether a resolved config text (a row's config) names an input file:
 * 1 when it does, or when it does not load with this build's schema (it
 * cannot be verified), else 0 (empty text: the built-in experiment). */
int out_config_reads_files(const char *config_text);

#endif
