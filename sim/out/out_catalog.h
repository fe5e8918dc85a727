/* out_catalog — the SQLite catalog of a results directory.
 *
 * One database per results directory (DIR/catalog.sqlite, WAL journal) with
 * one row per run in table "runs": id (the point identity: SHA-256 hex of
 * config text + seed), config_digest, seed, status ('running', 'done',
 * 'failed', 'interrupted', 'unverified', 'superseded'), error, attempts, h5_path (relative to DIR), started_at,
 * finished_at (UTC ISO-8601 text), wall_s, config (resolved config text),
 * inputs (the files the run read: "KEY PATH SHA256" lines, see
 * out_point_inputs; their digests are part of the id),
 * the ledger of what a done run left: h5_size (bytes), h5_sha256 (hex of the
 * whole file), git_rev (the build that made it, as out_build_rev gives it),
 * git_dirty (1: built from uncommitted changes), stale (1: kept by a sweep of
 * another revision, --keep-stale, or made before revisions were recorded),
 * trace (the workload's name: the trace file's base name, or "gen:GEN" for a
 * generator, "gen:GEN:FILE" for one that reads a file) and preset (the
 * policy.preset the run used), both derived from its config,
 * then one column per swept parameter (named by its "section.key", NUMERIC
 * affinity) and one per summary metric (named as the metric, REAL; a metric
 * whose name is already taken gets a "metric." prefix). A parameter column
 * holds, for every run, the value its config resolved (NULL only where the
 * key did not apply: a parameter of a policy the run did not select), so
 * two sweeps sharing a directory see each other's values; the run's own
 * swept value is kept as given. Table "run_config" (run_id, key, value:
 * NUMERIC affinity) holds every key of every run's resolved config, so
 * every key is a column by its dotted name in out_catalog_select's columns,
 * where and sort even when nothing swept it. Table "columns"
 * records each added column's kind ('param' or 'metric') and unit. Column
 * names are always quoted identifiers; --where text may use them bare (they
 * are quoted for you). A sweep writes its catalog from one process (the
 * parent or MPI rank 0), but recorded runs (kvsim run -o) and another sweep
 * may write it at the same time: each update is a single BEGIN IMMEDIATE
 * transaction that first rereads the column list when another process
 * changed the schema, so writers never add a column twice, and a killed
 * writer loses at most the update in progress. A catalog written before the ledger
 * columns gains them when opened (ALTER TABLE; a reader does it only when it
 * may write the file): its done rows are marked stale, git_rev NULL. One
 * written before the inputs column gains it the same way: a done row whose
 * config reads files (or no longer loads) cannot have its inputs verified
 * and becomes 'unverified' (a sweep runs the point again, under its new
 * id); the others are done as before, inputs "". One written before
 * run_config gains it, and its trace and preset columns, from each row's
 * config text, and its parameter columns' NULLs are filled from them (a
 * reader does it only when it may write the file; one that may not reads
 * no config keys and says how to add them). Errors: KS_EIO (SQLite),
 * KS_EINPUT (bad query or unknown run), with the database path or SQL
 * message.
 */
#ifndef KVSIM_OUT_CATALOG_H
#define KVSIM_OUT_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "sim/base/err.h"
#include "sim/base/results.h"
#include "sim/out/out_inputs.h"

#define OUT_CATALOG_FILE "catalog.sqlite"

typedef struct out_catalog out_catalog_t;

enum {
	OUT_RUN_ABSENT = 0,
	OUT_RUN_RUNNING = 1,
	OUT_RUN_DONE = 2,
	OUT_RUN_FAILED = 3,
	OUT_RUN_INTERRUPTED = 4, /* its sweep was stopped by a signal while it ran */
};

typedef struct out_param {
	const char *key;   /* "section.key" */
	const char *value; /* as given on the command line */
} out_param_t;

typedef struct out_run_info {
	const char *id;            /* point identity, 64 hex */
	const char *config_digest; /* cfg_digest of the point's config */
	uint64_t seed;
	const out_param_t *params;
	size_t n_params;
	const char *h5_path;       /* relative to the results directory */
	const char *config_text;
	const char *inputs;        /* out_point_inputs' text; NULL: none */
} out_run_info_t;

/* Opens (creating dir and database unless readonly) DIR/catalog.sqlite.
 * A readonly open still uses a read-write connection with query_only when
 * the file allows it: after a killed sweep, the first reader must rebuild the
 * WAL index. A database without the tables yet is KS_EINPUT ("no runs
 * recorded yet"). */
/* 0 when a catalog can be made in results directory dir, before anything
 * is created: KS_EINPUT with "DIR: results directory path too long..."
 * when DIR/catalog.sqlite, made absolute (symlinks of its existing part
 * resolved, as SQLite does), passes SQLite's path limit, which SQLite would
 * report only as "unable to open database file". out_catalog_open checks
 * it first; callers that create DIR or spend a run first check it before. */
int out_dir_check(const char *dir, err_t *e);
/* mkdir -p: creates dir and its missing parents; 0 or -1 with errno. */
int out_mkdir_p(const char *dir);

int out_catalog_open(const char *dir, int readonly, out_catalog_t **out, err_t *e);
void out_catalog_close(out_catalog_t *c);

/* OUT_RUN_* of run id, and its attempts so far (either pointer may be NULL). */
int out_catalog_status(out_catalog_t *c, const char *id, int *status, int *attempts,
		       err_t *e);
/* Inserts or updates the row: status 'running', attempts + 1, started_at now,
 * parameters, seed, paths and inputs; clears error, finished_at and the
 * ledger. Rows of the same config and seed under another id (they read
 * other input files) become 'superseded', naming this run. */
int out_catalog_begin(out_catalog_t *c, const out_run_info_t *ri, err_t *e);
/* What a finished run left behind, for the ledger columns. */
typedef struct out_run_file {
	uint64_t size;       /* bytes of the HDF5 file */
	char sha256[65];     /* hex SHA-256 of the whole file */
	const char *git_rev; /* revision of the build that wrote it */
} out_run_file_t;

/* Status 'done' with every metric stored in its column, wall_s, finished_at,
 * and the file's size, digest and revision (git_dirty from the revision,
 * stale 0). out_catalog_done records no file (f NULL): such a row counts as
 * made by an unknown revision. */
int out_catalog_done_file(out_catalog_t *c, const char *id, const res_metric_t *m, size_t n,
			  double wall_s, const out_run_file_t *f, err_t *e);
int out_catalog_done(out_catalog_t *c, const char *id, const res_metric_t *m, size_t n,
		     double wall_s, err_t *e);
/* Status 'failed' with the error text. */
int out_catalog_failed(out_catalog_t *c, const char *id, const char *error, err_t *e);
/* Status 'interrupted' with the reason (the signal that stopped the sweep):
 * the attempt in progress does not count (attempts - 1), so the row a
 * resumed sweep leaves is the one an uninterrupted sweep would have left. */
int out_catalog_interrupted(out_catalog_t *c, const char *id, const char *why, err_t *e);


/* What a sweep does with a point, by out_catalog_check. Every verdict but
 * DONE and KEPT runs the point (again). */
enum {
	OUT_CHECK_TODO = 0,  /* no row, one left 'running' by a killed sweep, or
			      * 'interrupted' */
	OUT_CHECK_FAILED,    /* failed last time */
	OUT_CHECK_DONE,      /* done by this revision, its file intact: skipped */
	OUT_CHECK_KEPT,      /* done by another revision, file intact, keep_stale */
	OUT_CHECK_STALE,     /* done by another or an unknown revision */
	OUT_CHECK_MISSING,   /* done, but its file is gone */
	OUT_CHECK_TRUNCATED, /* done, but its file is shorter than recorded */
	OUT_CHECK_CORRUPT,   /* done, but its file's size or digest changed */
	OUT_CHECK_UNVERIFIED, /* done, but no digest of its file was recorded
			       * (made before the ledger, or by
			       * out_catalog_done): nothing to check it by */
};
/* "todo", "failed", "done", "kept", "stale", "missing", "truncated",
 * "corrupt", "unverified". */
const char *out_check_name(int verdict);
/* Sets *verdict for run id as a sweep by revision rev would see it. A done
 * row of another revision is STALE unless keep_stale; a row about to be kept
 * has its file checked against the recorded size and digest (the whole file
 * is read). KS_EIO when the catalog or an existing file cannot be read. */
int out_catalog_check(out_catalog_t *c, const char *id, const char *rev, int keep_stale,
		      int *verdict, err_t *e);
/* Sets the row's stale mark (a done row kept under --keep-stale is 1). */
int out_catalog_mark_stale(out_catalog_t *c, const char *id, int stale, err_t *e);

/* A query result as text: cells[r * ncols + k] (NULL for SQL NULL);
 * kinds[k] is "param", "metric" or "run" (the fixed columns); is_real[k]
 * says the column holds floats. All malloc'd; out_table_free releases. */
typedef struct out_table {
	size_t ncols, nrows;
	char **names;
	const char **kinds;
	int *is_real;
	char **cells;
} out_table_t;

/* SELECT columns (comma-separated names, NULL: id, status, seed, git_rev,
 * params, metrics; "all": every column but config; any config key by its
 * dotted name, as kind "param") FROM runs WHERE where (SQL, may be
 * NULL) ORDER BY sort ("col" or "-col" for descending; NULL: rowid). A
 * dotted name in where that is neither a column nor a recorded config key
 * is KS_EINPUT naming it. where
 * is one condition: a ';' or an unmatched ')' outside strings and comments
 * is KS_EINPUT ("--where: ..."), so no further SQL is ever dropped or run. */
int out_catalog_select(out_catalog_t *c, const char *columns, const char *where,
		       const char *sort, out_table_t *t, err_t *e);
void out_table_free(out_table_t *t);
/* One "key = value" line of a resolved config text (cfg_write's INI) under
 * its section: the dotted key "section.key" and the value, pointing into
 * the text (vlen bytes, blanks around it left out). */
typedef struct out_kv {
	char key[160];
	const char *val;
	size_t vlen;
} out_kv_t;
/* The key lines of text (NULL: none) in order, comments and blank lines
 * left out: *kv malloc'd (NULL when none), *n of them. 0 or KS_ENOMEM. */
int out_config_pairs(const char *text, out_kv_t **kv, size_t *n);

/* Full id of the one run whose id starts with prefix (KS_EINPUT when none or
 * several match). */
int out_catalog_resolve(out_catalog_t *c, const char *prefix, char id[65], err_t *e);

/* Run id's status (OUT_RUN_*) and the value of its metric column name
 * (NaN when NULL or the run is not done); KS_EINPUT naming the metric when
 * the catalog has no such column. */
int out_catalog_metric(out_catalog_t *c, const char *id, const char *name, int *status,
		       double *value, err_t *e);

/* One capacity search's result (kvsim sweep --capacity), a row of table
 * "capacity" keyed by (params, seed, key, metric, target): the grid point's
 * parameters as "k=v k=v" text, the searched key, the highest probed value
 * meeting the target (NaN: none), the bracket [lo, hi] it lies in (lo passed,
 * hi failed; NaN where no probe passed or failed), probes run and the
 * verdict ("bracketed", "lo_fails", "hi_passes", "probe_limit", "failed"). */
typedef struct out_capacity_row {
	size_t point;
	uint64_t seed;
	const char *params, *key, *metric, *verdict;
	double target, value, lo, hi;
	unsigned probes;
} out_capacity_row_t;
int out_catalog_capacity_put(out_catalog_t *c, const out_capacity_row_t *r, err_t *e);

/* A run's per-window summaries (res_window_t rows), as table "windows"
 * (run_id, window, kind 'stage' | 'output', t0_s, t1_s, metric, unit,
 * value), keyed by (run_id, window, metric); the run's earlier rows are
 * replaced. n = 0 only removes them. */
int out_catalog_windows_put(out_catalog_t *c, const char *id, const res_window_t *w, size_t n,
			    err_t *e);
/* The windows of the runs whose id starts with prefix (NULL: all), one row
 * per (run, window): id, window, kind, t0_s, t1_s, then one column per
 * metric of metrics (comma-separated names; NULL: requests, offered_rps,
 * throughput_rps, ttft_completed_mean_ms, ttft_p90_ms, ttft_p99_ms,
 * e2e_mean_ms, e2e_p90_ms, e2e_p99_ms). A catalog without windows gives no
 * rows; a metric no window has is KS_EINPUT. */
int out_catalog_windows(out_catalog_t *c, const char *prefix, const char *metrics,
			out_table_t *t, err_t *e);

#endif
