/* out_hdf5 — one HDF5 file per run: write it atomically, read it back.
 *
 * Layout (format version 1; every table is chunked and deflate-compressed,
 * zero rows is a valid table):
 *   /requests   compound, members named and ordered as res_request_t fields
 *   /transfers  compound, members named as res_transfer_t fields (the
 *               schedule gpu_validation replays; read it by member name)
 *   /timeline   compound, members named as res_sample_t fields
 *   /decisions  compound, members named as res_decision_t fields; only
 *               when the run had output.decisions on (r->decisions)
 *   /summary    group: one float64 attribute per metric, named as the
 *               metric, and a string attribute "unit.<metric>" beside it;
 *               also /summary/metrics, a table (name S48, unit S16, value
 *               f8) in the order the run produced them
 *   /config     scalar string dataset: the resolved config text
 * Each table carries "unit.<member>" string attributes (ns, bytes, tokens,
 * "" for ids and codes) and "values.<member>" for enum codes. The root holds
 * provenance: kvsim_version, kvsim_gitrev (r->git_rev, or this build's),
 * kvsim_git_dirty (int 1 when that revision has uncommitted changes),
 * format_version, seed, trace_path, trace_sha256, config_sha256, start_unix,
 * start_time (UTC ISO-8601), wall_s, events.
 * /requests, /transfers and /timeline are read from the results a chunk
 * of rows at a time (sim_results_rows: streamed runs' spilled rows too)
 * and written chunk by chunk, so writing needs a chunk's memory, not a
 * table's; the chunk is chunk_rows rows, or the table's rows when fewer.
 * Writing goes to "PATH.tmp", which is fsync'd and renamed to PATH only when
 * complete, so a killed run never leaves a complete-looking PATH; a FIFO or
 * a device gets the whole file copied in once complete (file_out, file.h). Errors are
 * KS_EIO (HDF5 or file system) or KS_EINPUT (bad options), with the path in
 * the message; nothing is left at PATH on failure.
 */
#ifndef KVSIM_OUT_HDF5_H
#define KVSIM_OUT_HDF5_H

#include <stdio.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"
#include "sim/base/results.h"

typedef struct out_hdf5_opts {
	int compression;   /* deflate level 0..9 (0: chunked, uncompressed) */
	size_t chunk_rows; /* rows per chunk; 0 means 4096 */
} out_hdf5_opts_t;

/* The revision this binary was built from: the commit's 12-hex
 * abbreviation, "<commit>-dirty.<8 hex>" when built from uncommitted changes
 * (the hex digests them: sim/gitrev.sh), "unknown" outside git. */
const char *out_build_rev(void);
/* 1 when rev (as out_build_rev gives it) has uncommitted changes, else 0. */
int out_rev_dirty(const char *rev);

/* Options from [output] compression and chunk_rows of a config. */
void out_hdf5_opts_from_cfg(const cfg_t *c, out_hdf5_opts_t *o);

/* Writes r to path (via path.tmp). opts may be NULL (level 4, 4096 rows).
 * Reading r's spilled rows back can fail too: KS_EIO. */
int out_hdf5_write(const char *path, const sim_results_t *r, const out_hdf5_opts_t *opts,
		   err_t *e);

/* 0 when path opens as an HDF5 file (HDF5 refuses one cut short of the end
 * its superblock records), -1 otherwise. */
int out_hdf5_probe(const char *path);

/* Reads a file written by out_hdf5_write into *r (zeroed first; release with
 * sim_results_free): all three tables, the metrics, the config text and the
 * provenance fields of sim_results_t (git_rev "" when the file has none). */
int out_hdf5_read(const char *path, sim_results_t *r, err_t *e);
/* r's tables as CSV files in directory dir (which must exist), one per
 * table: requests.csv, transfers.csv, timeline.csv, decisions.csv (when
 * r->decisions), windows.csv (when r has windows; window, kind, t0_ns,
 * t1_ns, metric, unit, value), summary.csv (metric, unit, value) and
 * config.ini (the resolved config). A table's columns are its HDF5
 * members, named and ordered alike (their units are in the names or in
 * the HDF5 file's attributes); integers exact, doubles to 17 significant
 * digits (inf, nan as C prints them). Files there by those names are
 * replaced. KS_EIO or KS_EINPUT naming the file. */
int out_csv_write(const sim_results_t *r, const char *dir, err_t *e);
/* Writes s (NULL: nothing, an empty field) as one CSV field (RFC 4180):
 * quoted, quotes doubled, when it holds a comma, quote or line break. */
void out_csv_field(FILE *f, const char *s);
/* Only /windows of such a file: *w (malloc'd, NULL when the file has none)
 * and *n. 0 or KS_EIO. */
int out_hdf5_read_windows(const char *path, res_window_t **w, size_t *n, err_t *e);

#endif
