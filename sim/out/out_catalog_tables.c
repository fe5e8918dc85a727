/* out_catalog_tables — the tables beside runs (see out_catalog.h):
 * capacity (capacity searches, with the probe metric they read) and
 * windows (per-window summaries), written and read back.
 */
#include "sim/out/out_catalog_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/vec.h"

/* ---- capacity searches -------------------------------------------------- */

int out_catalog_metric(out_catalog_t *c, const char *id, const char *name, int *status,
		       double *value, err_t *e)
{
	*status = OUT_RUN_ABSENT;
	*value = NAN;
	if (!name[0] || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_.") != strlen(name))
		return err_set(e, KS_EINPUT, "--capacity-metric %s: not a metric name", name);
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT status, \"%s\" FROM runs WHERE id = ?", name);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
		return err_set(e, KS_EINPUT, "%s: --capacity-metric %s: no such metric column (%s)",
			       c->path, name, sqlite3_errmsg(c->db));
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 0);
		*status = !s ? OUT_RUN_ABSENT
			  : !strcmp(s, "done") ? OUT_RUN_DONE
			  : !strcmp(s, "failed") ? OUT_RUN_FAILED
						: OUT_RUN_RUNNING;
		if (*status == OUT_RUN_DONE && sqlite3_column_type(st, 1) != SQLITE_NULL)
			*value = sqlite3_column_double(st, 1);
		rc = SQLITE_DONE;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : out_cat_db_err(c, e, "reading a probe's metric");
}

static void bind_real(sqlite3_stmt *st, int i, double v)
{
	if (isnan(v))
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_double(st, i, v);
}

int out_catalog_capacity_put(out_catalog_t *c, const out_capacity_row_t *r, err_t *e)
{
	if (sqlite3_exec(c->db,
			 "CREATE TABLE IF NOT EXISTS capacity (point INTEGER, seed INTEGER, "
			 "params TEXT, key TEXT, metric TEXT, target REAL, value REAL, lo REAL, "
			 "hi REAL, probes INTEGER, verdict TEXT, "
			 "PRIMARY KEY (params, seed, key, metric, target))",
			 NULL, NULL, NULL) != SQLITE_OK)
		return out_cat_db_err(c, e, "creating table capacity");
	sqlite3_stmt *st;
	if (out_cat_db_prepare(c,
		       "INSERT OR REPLACE INTO capacity (point, seed, params, key, metric, target, "
		       "value, lo, hi, probes, verdict) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		       &st, e, "recording a capacity search"))
		return KS_EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)r->point);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)r->seed);
	sqlite3_bind_text(st, 3, r->params, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, r->key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, r->metric, -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 6, r->target);
	bind_real(st, 7, r->value);
	bind_real(st, 8, r->lo);
	bind_real(st, 9, r->hi);
	sqlite3_bind_int(st, 10, (int)r->probes);
	sqlite3_bind_text(st, 11, r->verdict, -1, SQLITE_STATIC);
	return out_cat_exec_stmt(c, st, e, "recording a capacity search");
}

static int windows_table(out_catalog_t *c, err_t *e)
{
	if (sqlite3_exec(c->db,
			 "CREATE TABLE IF NOT EXISTS windows (run_id TEXT, window INTEGER, "
			 "kind TEXT, t0_s REAL, t1_s REAL, metric TEXT, unit TEXT, value REAL, "
			 "PRIMARY KEY (run_id, window, metric))",
			 NULL, NULL, NULL) != SQLITE_OK)
		return out_cat_db_err(c, e, "creating table windows");
	return 0;
}

int out_catalog_windows_put(out_catalog_t *c, const char *id, const res_window_t *w, size_t n,
			    err_t *e)
{
	int rc = windows_table(c, e);
	if (rc)
		return rc;
	if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return out_cat_db_err(c, e, "begin");
	sqlite3_stmt *st;
	if (!(rc = out_cat_db_prepare(c, "DELETE FROM windows WHERE run_id = ?", &st, e,
			      "recording windows"))) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		rc = out_cat_exec_stmt(c, st, e, "recording windows");
	}
	for (size_t i = 0; i < n && !rc; i++) {
		if ((rc = out_cat_db_prepare(c,
				     "INSERT OR REPLACE INTO windows (run_id, window, kind, t0_s, "
				     "t1_s, metric, unit, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
				     &st, e, "recording windows")))
			break;
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 2, w[i].window);
		sqlite3_bind_text(st, 3, w[i].kind == RES_WIN_STAGE ? "stage" : "output", -1,
				  SQLITE_STATIC);
		sqlite3_bind_double(st, 4, (double)w[i].t0_ns / 1e9);
		bind_real(st, 5, w[i].t1_ns == INT64_MAX ? NAN : (double)w[i].t1_ns / 1e9);
		sqlite3_bind_text(st, 6, w[i].name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 7, w[i].unit, -1, SQLITE_STATIC);
		bind_real(st, 8, w[i].value);
		rc = out_cat_exec_stmt(c, st, e, "recording windows");
	}
	return out_cat_tx_end(c, rc, e);
}

/* 0 when the catalog has table windows; KS_EINPUT saying so when not. */
static int windows_have(out_catalog_t *c, err_t *e)
{
	sqlite3_stmt *ex;
	int rc = out_cat_db_prepare(c,
				    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "
				    "'windows'",
				    &ex, e, "reading windows");
	if (rc)
		return rc;
	int have = sqlite3_step(ex) == SQLITE_ROW;
	sqlite3_finalize(ex);
	if (!have)
		return err_set(e, KS_EINPUT, "%s: no run has per-window summaries (a spec workload's "
			       "stages or output.windows make them)", c->path);
	return 0;
}

/* t's columns for the metrics of list (comma-separated): room for all,
 * and the fixed ones (id, window, kind, t0_s, t1_s) in place. */
static int windows_head(out_table_t *t, const char *list, err_t *e)
{
	static const char *const head[] = {"id", "window", "kind", "t0_s", "t1_s"};
	const size_t nh = sizeof head / sizeof head[0];
	size_t n = nh;
	for (const char *p = list; *p; p++)
		n += *p == ',';
	n++;
	t->names = calloc(n, sizeof *t->names);
	t->kinds = calloc(n, sizeof *t->kinds);
	t->is_real = calloc(n, sizeof *t->is_real);
	if (!t->names || !t->kinds || !t->is_real)
		return err_set(e, KS_ENOMEM, "out of memory");
	for (size_t k = 0; k < nh; k++) {
		t->names[k] = strdup(head[k]);
		t->kinds[k] = k < 3 ? "run" : "metric";
		t->is_real[k] = k >= 3;
	}
	t->ncols = nh;
	return 0;
}

/* The query into *out (malloc'd, the caller frees it even on error): one
 * row per (run, window) of the runs whose id starts with ?1, a column per
 * metric of list (cut up by strtok_r), each added to t; a metric no window
 * has is KS_EINPUT. */
static int windows_sql(out_catalog_t *c, char *list, out_table_t *t, char **out, err_t *e)
{
	char *sql = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	out_cat_append(&sql, &len, &cap, "SELECT run_id, window, kind, t0_s, t1_s");
	for (char *save = NULL, *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
		sqlite3_stmt *st;
		if ((rc = out_cat_db_prepare(c, "SELECT 1 FROM windows WHERE metric = ? LIMIT 1",
					     &st, e, "reading windows")))
			goto out;
		sqlite3_bind_text(st, 1, m, -1, SQLITE_STATIC);
		int found = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
		if (!found) {
			rc = err_set(e, KS_EINPUT, "%s: no window has metric '%s'", c->path, m);
			goto out;
		}
		t->names[t->ncols] = strdup(m);
		t->kinds[t->ncols] = "metric";
		t->is_real[t->ncols++] = 1;
		char *q = sqlite3_mprintf(", MAX(CASE WHEN metric = %Q THEN value END)", m);
		if (!q || out_cat_append(&sql, &len, &cap, q)) {
			sqlite3_free(q);
			rc = err_set(e, KS_ENOMEM, "out of memory");
			goto out;
		}
		sqlite3_free(q);
	}
	out_cat_append(&sql, &len, &cap, " FROM windows WHERE substr(run_id, 1, length(?1)) = ?1"
				 " GROUP BY run_id, window ORDER BY run_id, window");
	if (!sql)
		rc = err_set(e, KS_ENOMEM, "out of memory");
out:
	*out = sql;
	return rc;
}

/* Steps st to its end, each row into t's cells as text (t->ncols a row). */
static int windows_rows(out_catalog_t *c, sqlite3_stmt *st, out_table_t *t, err_t *e)
{
	size_t ccap = 0;
	int rc = 0, r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		if (VEC_GROW(t->cells, ccap, (t->nrows + 1) * t->ncols, 64 * t->ncols)) {
			rc = err_set(e, KS_ENOMEM, "out of memory");
			break;
		}
		char **row = t->cells + t->nrows * t->ncols;
		for (size_t k = 0; k < t->ncols; k++) {
			char buf[64];
			if (sqlite3_column_type(st, (int)k) == SQLITE_NULL) {
				row[k] = NULL;
				continue;
			}
			if (sqlite3_column_type(st, (int)k) == SQLITE_FLOAT)
				snprintf(buf, sizeof buf, "%.17g", sqlite3_column_double(st, (int)k));
			else
				snprintf(buf, sizeof buf, "%s", (const char *)sqlite3_column_text(st, (int)k));
			row[k] = strdup(buf);
		}
		t->nrows++;
	}
	if (!rc && r != SQLITE_DONE)
		rc = err_set(e, KS_EINPUT, "%s: query failed: %s", c->path, sqlite3_errmsg(c->db));
	return rc;
}

int out_catalog_windows(out_catalog_t *c, const char *prefix, const char *metrics,
			out_table_t *t, err_t *e)
{
	memset(t, 0, sizeof *t);
	static const char def[] = "requests,offered_rps,throughput_rps,ttft_completed_mean_ms,"
				  "ttft_p90_ms,ttft_p99_ms,e2e_mean_ms,e2e_p90_ms,e2e_p99_ms";
	char *list = strdup(metrics && *metrics ? metrics : def), *sql = NULL;
	int rc = 0;
	if (!list) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	sqlite3_stmt *st;
	if ((rc = windows_have(c, e)) || (rc = windows_head(t, list, e)) ||
	    (rc = windows_sql(c, list, t, &sql, e)) ||
	    (rc = out_cat_db_prepare(c, sql, &st, e, "reading windows")))
		goto out;
	sqlite3_bind_text(st, 1, prefix ? prefix : "", -1, SQLITE_STATIC);
	rc = windows_rows(c, st, t, e);
	sqlite3_finalize(st);
out:
	free(list);
	free(sql);
	if (rc)
		out_table_free(t);
	return rc;
}
