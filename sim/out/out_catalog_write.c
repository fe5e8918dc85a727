/* out_catalog_write — a run's row (see out_catalog.h): its parameter and
 * metric columns added as needed, begin, done, failed and interrupted, and
 * the ledger check of a done row's file.
 */
#include "sim/base/mem.h"
#include "sim/out/out_catalog_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/out/out_hdf5.h"

/* Whether a parameter or metric needs a column: 0 present, 1 to add, or an
 * error; the name to use in used (metrics whose name is taken by another
 * kind get a "metric." prefix). */
static int col_plan(out_catalog_t *c, const char *name, const char *kind, char *used,
		    size_t cap, err_t *e)
{
	snprintf(used, cap, "%s", name);
	const col_info_t *ci = out_cat_col_find(c, used);
	if (ci && ci->kind == out_cat_kind_static(kind))
		return 0;
	if (ci && !strcmp(kind, "metric")) {
		snprintf(used, cap, "metric.%s", name);
		if (out_cat_col_find(c, used))
			return 0;
	} else if (ci) {
		return err_set(e, KS_EINPUT, "%s: parameter '%s' clashes with a %s column", c->path,
			       name, ci->kind);
	}
	return 1;
}

/* Columns to add in one go (col_add). */
typedef struct col_batch {
	char (*name)[128];
	const char **unit;
	size_t n;
	const char *kind;
} col_batch_t;

/* Appends "name" TYPE, a column's declaration, to sql. */
static void col_decl(char *sql, size_t cap, const char *name, const char *kind)
{
	out_cat_quote_ident(sql, cap, name);
	strncat(sql, !strcmp(kind, "metric") ? " REAL" : " NUMERIC", cap - strlen(sql) - 1);
}

/* Rebuilds table runs with the batched columns appended, as that many ALTER
 * TABLE ADD COLUMN would leave it (same declarations, rows in rowid order),
 * in four schema changes: each ALTER makes SQLite reparse the whole schema,
 * which on a fresh catalog's ~100 metrics was most of a short run's output
 * time (callgrind). Inside the caller's transaction. */
static int runs_rebuild(out_catalog_t *c, const col_batch_t *b, err_t *e)
{
	sqlite3_stmt *st;
	if (out_cat_db_prepare(
		c, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'runs'", &st, e,
		"reading the schema"))
		return KS_EIO;
	const char *old = sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0)
							  : NULL;
	const char *lp = old ? strchr(old, '(') : NULL, *rp = old ? strrchr(old, ')') : NULL;
	if (!lp || !rp || rp < lp) {
		sqlite3_finalize(st);
		return err_set(e, KS_EIO, "%s: adding columns: table runs has no usable schema",
			       c->path);
	}
	size_t cap = (size_t)(rp - lp) + 256 + b->n * 300;
	char *sql = malloc(cap);
	if (!sql) {
		sqlite3_finalize(st);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	snprintf(sql, cap, "CREATE TABLE kvsim_runs_rebuild %.*s", (int)(rp - lp), lp);
	sqlite3_finalize(st);
	for (size_t i = 0; i < b->n; i++) {
		strncat(sql, ", ", cap - strlen(sql) - 1);
		col_decl(sql, cap, b->name[i], b->kind);
	}
	strncat(sql, ")", cap - strlen(sql) - 1);
	int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK;
	if (!rc) {
		strcpy(sql, "INSERT INTO kvsim_runs_rebuild SELECT *");
		for (size_t i = 0; i < b->n; i++)
			strcat(sql, ", NULL");
		strcat(sql, " FROM runs ORDER BY rowid;"
			    "DROP TABLE runs; ALTER TABLE kvsim_runs_rebuild RENAME TO runs;");
		rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK;
	}
	free(sql);
	return rc ? out_cat_db_err(c, e, "adding columns") : 0;
}

/* Adds the batched columns to table runs and records them in table
 * columns, in batch order. Inside the caller's transaction. */
static int col_add(out_catalog_t *c, const col_batch_t *b, err_t *e)
{
	if (!b->n)
		return 0;
	if (b->n > 1) {
		int rc = runs_rebuild(c, b, e);
		if (rc)
			return rc;
	} else {
		char sql[512] = "ALTER TABLE runs ADD COLUMN ";
		col_decl(sql, sizeof sql, b->name[0], b->kind);
		if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK)
			return out_cat_db_err(c, e, "adding a column");
	}
	sqlite3_stmt *st;
	if (out_cat_db_prepare(c,
	               "INSERT OR REPLACE INTO columns(name, kind, unit, ord)"
	               " VALUES (?, ?, ?, (SELECT count(*) FROM columns))",
	               &st, e, "recording a column"))
		return KS_EIO;
	int rc = 0;
	for (size_t i = 0; i < b->n && !rc; i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, b->name[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, b->kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, b->unit && b->unit[i] ? b->unit[i] : "", -1, SQLITE_STATIC);
		int r = sqlite3_step(st);
		if (r != SQLITE_DONE && r != SQLITE_ROW)
			rc = out_cat_db_err(c, e, "recording a column");
		else if (out_cat_col_add_mem(c, b->name[i], b->kind, !strcmp(b->kind, "metric")))
			rc = err_set(e, KS_ENOMEM, "out of memory");
	}
	sqlite3_finalize(st);
	for (size_t i = 0; !rc && !strcmp(b->kind, "param") && i < b->n; i++)
		rc = out_cat_param_backfill(c, b->name[i], e);
	return rc;
}

/* The column names to use for n parameters or metrics (names[i], units[i]
 * or NULL) into used (n entries), adding the missing ones in one batch. */
static int ensure_columns(out_catalog_t *c, const char *kind, size_t n,
			  const char *(*name_of)(const void *, size_t),
			  const char *(*unit_of)(const void *, size_t), const void *items,
			  char (*used)[128], err_t *e)
{
	col_batch_t b = {NULL, NULL, 0, kind};
	int rc = 0;
	if (n && (!(b.name = malloc(n * sizeof *b.name)) || !(b.unit = calloc(n, sizeof *b.unit))))
		rc = err_set(e, KS_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		int r = col_plan(c, name_of(items, i), kind, used[i], sizeof used[i], e);
		if (r < 0) {
			rc = r;
			break;
		}
		size_t k = 0; /* a name twice in one batch is added once */
		while (r && k < b.n && strcmp(b.name[k], used[i]))
			k++;
		if (r && k == b.n) {
			memcpy(b.name[b.n], used[i], sizeof used[i]);
			b.unit[b.n++] = unit_of ? unit_of(items, i) : NULL;
		}
	}
	if (!rc)
		rc = col_add(c, &b, e);
	free(b.name);
	free(b.unit);
	return rc;
}

static const char *param_name(const void *items, size_t i)
{
	return ((const out_run_info_t *)items)->params[i].key;
}

static const char *metric_name(const void *items, size_t i)
{
	return ((const res_metric_t *)items)[i].name;
}

static const char *metric_unit(const void *items, size_t i)
{
	return ((const res_metric_t *)items)[i].unit;
}

int out_catalog_status(out_catalog_t *c, const char *id, int *status, int *attempts,
		       err_t *e)
{
	sqlite3_stmt *st;
	if (out_cat_db_prepare(c, "SELECT status, attempts FROM runs WHERE id = ?", &st, e,
	               "reading a run"))
		return KS_EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int s = OUT_RUN_ABSENT, a = 0, r = sqlite3_step(st);
	if (r == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		s = !strcmp(t, "done")		? OUT_RUN_DONE
		    : !strcmp(t, "failed")	? OUT_RUN_FAILED
		    : !strcmp(t, "interrupted") ? OUT_RUN_INTERRUPTED
						: OUT_RUN_RUNNING;
		a = sqlite3_column_int(st, 1);
	}
	sqlite3_finalize(st);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return out_cat_db_err(c, e, "reading a run");
	if (status)
		*status = s;
	if (attempts)
		*attempts = a;
	return 0;
}

/* Binds ?1 id, ?2 config digest, ?3 seed, ?4 file, ?5 config and ?6 inputs
 * (a statement may use only some of them). */
static void bind_run(sqlite3_stmt *st, const out_run_info_t *ri)
{
	sqlite3_bind_text(st, 1, ri->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, ri->config_digest, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)ri->seed);
	sqlite3_bind_text(st, 4, ri->h5_path, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, ri->config_text ? ri->config_text : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, ri->inputs ? ri->inputs : "", -1, SQLITE_STATIC);
}

/* Sets every parameter column of run id from its recorded config keys
 * (NULL where the run has no such key). Inside the caller's transaction. */
static int params_of_run(out_catalog_t *c, const char *id, err_t *e)
{
	char *sql = NULL;
	size_t len = 0, cap = 0, n = 0;
	int rc = out_cat_append(&sql, &len, &cap, "UPDATE runs SET ");
	for (size_t i = 0; !rc && i < c->ncols; i++) {
		if (strcmp(c->cols[i].kind, "param"))
			continue;
		char q[600] = "";
		out_cat_quote_ident(q, sizeof q, c->cols[i].name);
		char *a = sqlite3_mprintf("%s%s = (SELECT value FROM run_config WHERE run_id = ?1"
					  " AND key = %Q)", n++ ? ", " : "", q, c->cols[i].name);
		rc = !a || out_cat_append(&sql, &len, &cap, a);
		sqlite3_free(a);
	}
	if (!rc)
		rc = out_cat_append(&sql, &len, &cap, " WHERE id = ?1");
	if (rc) {
		free(sql);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	sqlite3_stmt *st = NULL;
	if (n && !(rc = out_cat_db_prepare(c, sql, &st, e, "recording parameters"))) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		rc = out_cat_exec_stmt(c, st, e, "recording parameters");
	}
	free(sql);
	return rc;
}

int out_catalog_begin(out_catalog_t *c, const out_run_info_t *ri, err_t *e)
{
	char (*used)[128] = NULL;
	char *sql = NULL;
	size_t cap = 1024 + ri->n_params * 300;
	int rc = 0;
	if (ri->n_params && !(used = malloc(ri->n_params * sizeof *used)))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		free(used);
		return out_cat_db_err(c, e, "begin");
	}
	rc = out_cat_cols_refresh(c, e);
	if (rc)
		goto fail;
	sqlite3_stmt *st;
	if ((rc = out_cat_db_prepare(
		 c,
		 "INSERT INTO runs(id, config_digest, seed, status, attempts, h5_path,"
		 " started_at, config, inputs) VALUES (?1, ?2, ?3, 'running', 1, ?4,"
		 " strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), ?5, ?6)"
		 " ON CONFLICT(id) DO UPDATE SET status = 'running', error = NULL,"
		 " attempts = attempts + 1, finished_at = NULL, wall_s = NULL,"
		 " h5_size = NULL, h5_sha256 = NULL, git_rev = NULL, git_dirty = NULL, stale = 0,"
		 " config_digest = ?2, seed = ?3, h5_path = ?4, config = ?5, inputs = ?6,"
		 " started_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')",
		 &st, e, "recording a run")))
		goto fail;
	bind_run(st, ri);
	if ((rc = out_cat_exec_stmt(c, st, e, "recording a run")))
		goto fail;
	/* The same config and seed under another id read other input files:
	 * those results are of inputs that are no longer there. */
	if ((rc = out_cat_db_prepare(c,
			     "UPDATE runs SET status = 'superseded', error = 'its input files "
			     "changed; run ' || substr(?1, 1, 16) || ' reads them as they are now'"
			     " WHERE config_digest = ?2 AND seed = ?3 AND id != ?1"
			     " AND inputs IS NOT ?6 AND status IN ('done', 'unverified')",
			     &st, e, "recording a run")))
		goto fail;
	bind_run(st, ri);
	if ((rc = out_cat_exec_stmt(c, st, e, "recording a run")))
		goto fail;
	/* every key, then the parameter columns: new ones filled for every
	 * run, every one for this run, its own swept values as given */
	if ((rc = out_cat_keys_put(c, ri->id, ri->config_text, e)) ||
	    (rc = ensure_columns(c, "param", ri->n_params, param_name, NULL, ri, used, e)) ||
	    (rc = params_of_run(c, ri->id, e)))
		goto fail;
	if (ri->n_params) {
		sql = malloc(cap);
		if (!sql) {
			rc = err_set(e, KS_ENOMEM, "out of memory");
			goto fail;
		}
		strcpy(sql, "UPDATE runs SET ");
		for (size_t i = 0; i < ri->n_params; i++) {
			if (i)
				strcat(sql, ", ");
			out_cat_quote_ident(sql, cap, ri->params[i].key);
			strcat(sql, " = ?");
		}
		strcat(sql, " WHERE id = ?");
		if ((rc = out_cat_db_prepare(c, sql, &st, e, "recording parameters")))
			goto fail;
		for (size_t i = 0; i < ri->n_params; i++)
			sqlite3_bind_text(st, (int)i + 1, ri->params[i].value, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, (int)ri->n_params + 1, ri->id, -1, SQLITE_STATIC);
		if ((rc = out_cat_exec_stmt(c, st, e, "recording parameters")))
			goto fail;
	}
	FREE_ALL(sql, used);
	if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return out_cat_db_err(c, e, "commit");
	return 0;
fail:
	FREE_ALL(sql, used);
	sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int out_catalog_done(out_catalog_t *c, const char *id, const res_metric_t *m, size_t n,
		     double wall_s, err_t *e)
{
	return out_catalog_done_file(c, id, m, n, wall_s, NULL, e);
}

int out_catalog_done_file(out_catalog_t *c, const char *id, const res_metric_t *m, size_t n,
			  double wall_s, const out_run_file_t *f, err_t *e)
{
	size_t cap = 384 + n * 120;
	char *sql = malloc(cap), (*used)[128] = n ? malloc(n * sizeof *used) : NULL;
	int rc = 0;
	if (!sql || (n && !used)) {
		FREE_ALL(sql, used);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		FREE_ALL(sql, used);
		return out_cat_db_err(c, e, "begin");
	}
	strcpy(sql, "UPDATE runs SET status = 'done', error = NULL, wall_s = ?,"
		    " finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')");
	if (f)
		strcat(sql, ", h5_size = ?, h5_sha256 = ?, git_rev = ?, git_dirty = ?, stale = 0");
	rc = out_cat_cols_refresh(c, e);
	if (!rc)
		rc = ensure_columns(c, "metric", n, metric_name, metric_unit, m, used, e);
	for (size_t i = 0; i < n && !rc; i++) {
		strcat(sql, ", ");
		out_cat_quote_ident(sql, cap, used[i]);
		strcat(sql, " = ?");
	}
	free(used);
	strcat(sql, " WHERE id = ?");
	sqlite3_stmt *st = NULL;
	if (!rc)
		rc = out_cat_db_prepare(c, sql, &st, e, "recording metrics");
	if (!rc) {
		int k = 1;
		sqlite3_bind_double(st, k++, wall_s);
		if (f) {
			sqlite3_bind_int64(st, k++, (sqlite3_int64)f->size);
			sqlite3_bind_text(st, k++, f->sha256, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, k++, f->git_rev, -1, SQLITE_STATIC);
			sqlite3_bind_int(st, k++, out_rev_dirty(f->git_rev));
		}
		for (size_t i = 0; i < n; i++)
			sqlite3_bind_double(st, k++, m[i].value);
		sqlite3_bind_text(st, k, id, -1, SQLITE_STATIC);
		rc = out_cat_exec_stmt(c, st, e, "recording metrics");
	}
	free(sql);
	if (!rc && sqlite3_changes(c->db) != 1)
		rc = err_set(e, KS_EINPUT, "%s: no run %s to mark done", c->path, id);
	return out_cat_tx_end(c, rc, e);
}

/* Ends run id's attempt with status as its error text (sql: the UPDATE,
 * binding ?1 error and ?2 id); what: "failed", "interrupted". */
static int end_attempt(out_catalog_t *c, const char *sql, const char *id, const char *error,
		       const char *what, err_t *e)
{
	sqlite3_stmt *st;
	if (out_cat_db_prepare(c, sql, &st, e, "recording the end of a run"))
		return KS_EIO;
	sqlite3_bind_text(st, 1, error ? error : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	int rc = out_cat_exec_stmt(c, st, e, "recording the end of a run");
	if (!rc && sqlite3_changes(c->db) != 1)
		rc = err_set(e, KS_EINPUT, "%s: no run %s to mark %s", c->path, id, what);
	return rc;
}

int out_catalog_failed(out_catalog_t *c, const char *id, const char *error, err_t *e)
{
	return end_attempt(c,
			   "UPDATE runs SET status = 'failed', error = ?1,"
			   " finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?2",
			   id, error, "failed", e);
}

int out_catalog_interrupted(out_catalog_t *c, const char *id, const char *why, err_t *e)
{
	return end_attempt(c,
			   "UPDATE runs SET status = 'interrupted', error = ?1, finished_at = NULL,"
			   " attempts = max(attempts - 1, 0) WHERE id = ?2 AND status = 'running'",
			   id, why, "interrupted", e);
}

/* ---- the ledger: files and revisions ------------------------------------ */

const char *out_check_name(int verdict)
{
	static const char *const names[] = {"todo",  "failed",  "done",      "kept",
					    "stale", "missing", "truncated", "corrupt",
					    "unverified"};
	return verdict >= 0 && verdict < (int)(sizeof names / sizeof names[0]) ? names[verdict]
									       : "?";
}

/* Whether the file of a done row is still the one recorded: OUT_CHECK_DONE,
 * or MISSING, TRUNCATED or CORRUPT. A row without a size and digest
 * (written before the ledger, or by out_catalog_done) is UNVERIFIED: that
 * its file still opens says nothing of what made it. */
static int check_file(out_catalog_t *c, const char *rel, int have_size, uint64_t size,
		      const char *sha, int *verdict, err_t *e)
{
	char path[8300];
	struct stat sb;
	snprintf(path, sizeof path, "%s/%s", c->dir, rel ? rel : "");
	if (!rel || !*rel || stat(path, &sb) < 0) {
		if (rel && *rel && errno != ENOENT && errno != ENOTDIR)
			return err_set(e, KS_EIO, "%s: cannot check: %s", path, strerror(errno));
		*verdict = OUT_CHECK_MISSING;
		return 0;
	}
	if (!S_ISREG(sb.st_mode)) {
		*verdict = OUT_CHECK_CORRUPT;
		return 0;
	}
	if (!have_size || !sha) {
		*verdict = OUT_CHECK_UNVERIFIED;
		return 0;
	}
	if ((uint64_t)sb.st_size != size) {
		*verdict = (uint64_t)sb.st_size < size ? OUT_CHECK_TRUNCATED : OUT_CHECK_CORRUPT;
		return 0;
	}
	char hex[65];
	uint64_t got;
	int rc = out_file_sha256(path, &got, hex, e);
	if (rc)
		return rc;
	if (got == size && sha && !strcmp(hex, sha))
		*verdict = OUT_CHECK_DONE;
	else /* got < size: cut while being read */
		*verdict = got < size ? OUT_CHECK_TRUNCATED : OUT_CHECK_CORRUPT;
	return 0;
}

int out_catalog_check(out_catalog_t *c, const char *id, const char *rev, int keep_stale,
		      int *verdict, err_t *e)
{
	sqlite3_stmt *st;
	*verdict = OUT_CHECK_TODO;
	if (out_cat_db_prepare(c,
	               "SELECT status, h5_path, h5_size, h5_sha256, git_rev FROM runs"
	               " WHERE id = ?",
	               &st, e, "reading a run"))
		return KS_EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int r = sqlite3_step(st), rc = 0;
	if (r == SQLITE_ROW) {
		const char *status = (const char *)sqlite3_column_text(st, 0);
		const char *rel = (const char *)sqlite3_column_text(st, 1);
		int have_size = sqlite3_column_type(st, 2) == SQLITE_INTEGER;
		uint64_t size = (uint64_t)sqlite3_column_int64(st, 2);
		const char *sha = (const char *)sqlite3_column_text(st, 3);
		const char *made = (const char *)sqlite3_column_text(st, 4);
		if (!strcmp(status, "failed")) {
			*verdict = OUT_CHECK_FAILED;
		} else if (!strcmp(status, "done")) {
			/* A stale point runs again anyway: only a kept one is read. */
			int same = made && rev && !strcmp(made, rev);
			if (!same && !keep_stale)
				*verdict = OUT_CHECK_STALE;
			else if (!(rc = check_file(c, rel, have_size, size, sha, verdict, e)) &&
				 *verdict == OUT_CHECK_DONE && !same)
				*verdict = OUT_CHECK_KEPT;
		}
	} else if (r != SQLITE_DONE) {
		rc = out_cat_db_err(c, e, "reading a run");
	}
	sqlite3_finalize(st);
	return rc;
}

int out_catalog_mark_stale(out_catalog_t *c, const char *id, int stale, err_t *e)
{
	sqlite3_stmt *st;
	if (out_cat_db_prepare(c, "UPDATE runs SET stale = ?1 WHERE id = ?2 AND stale IS NOT ?1",
	                       &st, e, "marking a run"))
		return KS_EIO;
	sqlite3_bind_int(st, 1, stale ? 1 : 0);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	return out_cat_exec_stmt(c, st, e, "marking a run");
}
