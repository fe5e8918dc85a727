/* out_catalog_db — the catalog's connection helpers (see
 * out_catalog_int.h): SQLite failures as messages, damaged files told
 * apart, statements and transactions, and the column list of table runs
 * kept in memory.
 */
#include "sim/base/mem.h"
#include "sim/out/out_catalog_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/vec.h"

const char *out_cat_kind_static(const char *k)
{
	if (k && !strcmp(k, "param"))
		return "param";
	if (k && !strcmp(k, "metric"))
		return "metric";
	return "run";
}

static int damaged(int code)
{
	return code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
}

/* After a failure (rc, with e set): whether the file itself is damaged.
 * SQLite finds a damaged page only when a statement reads it, and the
 * statement then fails as whatever it lacked ("no column", "duplicate
 * column name"), so the failure is followed by PRAGMA quick_check; when
 * the file is damaged, e says so instead (KS_EIO). A busy or locked
 * catalog, or one that checks whole, keeps rc and e. */
int out_cat_db_corrupt(out_catalog_t *c, int rc, err_t *e)
{
	char why[300] = "";
	if (!c->db)
		return rc;
	if (damaged(sqlite3_extended_errcode(c->db) & 0xff))
		snprintf(why, sizeof why, "%s", sqlite3_errmsg(c->db));
	sqlite3_stmt *st = NULL;
	if (!why[0] && sqlite3_prepare_v2(c->db, "PRAGMA quick_check(1)", -1, &st, NULL)) {
		if (damaged(sqlite3_errcode(c->db)))
			snprintf(why, sizeof why, "%s", sqlite3_errmsg(c->db));
	} else if (!why[0]) {
		int r = sqlite3_step(st);
		const char *t = r == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
		if (t && strcmp(t, "ok"))
			snprintf(why, sizeof why, "quick_check: %s", t);
		else if (damaged(r))
			snprintf(why, sizeof why, "%s", sqlite3_errmsg(c->db));
	}
	sqlite3_finalize(st);
	if (!why[0])
		return rc;
	return err_set(e, KS_EIO,
		       "%s: catalog is corrupt (%s); move it aside and kvsim starts a new one "
		       "there (the runs/ files stay)",
		       c->path, why);
}

int out_cat_db_err(out_catalog_t *c, err_t *e, const char *what)
{
	int rc = err_set(e, KS_EIO, "%s: %s: %s", c->path, what, sqlite3_errmsg(c->db));
	return out_cat_db_corrupt(c, rc, e);
}

/* Prepares sql on the catalog: 0, or db_err naming what was being done. */
int out_cat_db_prepare(out_catalog_t *c, const char *sql, sqlite3_stmt **st, err_t *e,
                       const char *what)
{
	if (sqlite3_prepare_v2(c->db, sql, -1, st, NULL) != SQLITE_OK)
		return out_cat_db_err(c, e, what);
	return 0;
}

int out_cat_col_add_mem(out_catalog_t *c, const char *name, const char *kind, int is_real)
{
	if (VEC_GROW(c->cols, c->cap, c->ncols + 1, 32))
		return KS_ENOMEM;
	char *s = strdup(name);
	if (!s)
		return KS_ENOMEM;
	c->cols[c->ncols++] = (col_info_t){s, out_cat_kind_static(kind), is_real};
	return 0;
}

const col_info_t *out_cat_col_find(const out_catalog_t *c, const char *name)
{
	for (size_t i = 0; i < c->ncols; i++)
		if (!strcmp(c->cols[i].name, name))
			return &c->cols[i];
	return NULL;
}

/* Appends name as a quoted SQL identifier. */
void out_cat_quote_ident(char *buf, size_t cap, const char *name)
{
	size_t j = strlen(buf);
	if (j + 1 < cap)
		buf[j++] = '"';
	for (const char *p = name; *p && j + 3 < cap; p++) {
		if (*p == '"')
			buf[j++] = '"';
		buf[j++] = *p;
	}
	if (j + 1 < cap)
		buf[j++] = '"';
	buf[j] = '\0';
}

int out_cat_append(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);
	if (VEC_GROW(*buf, *cap, *len + n + 1, 256))
		return -1;
	memcpy(*buf + *len, s, n + 1);
	*len += n;
	return 0;
}

/* The schema's version number: each ALTER or CREATE, by any process,
 * changes it. */
static int schema_version(out_catalog_t *c, int *v, err_t *e)
{
	sqlite3_stmt *st;
	if (out_cat_db_prepare(c, "PRAGMA schema_version", &st, e, "reading the schema"))
		return KS_EIO;
	int r = sqlite3_step(st);
	*v = r == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
	sqlite3_finalize(st);
	return r == SQLITE_ROW ? 0 : out_cat_db_err(c, e, "reading the schema");
}

int out_cat_load_columns(out_catalog_t *c, err_t *e)
{
	sqlite3_stmt *st;
	if (schema_version(c, &c->schema_ver, e))
		return KS_EIO;
	if (out_cat_db_prepare(c, "SELECT 1 FROM sqlite_master WHERE name = 'columns'", &st, e,
	               "reading the schema"))
		return KS_EIO;
	int have = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (!have)
		return err_set(e, KS_EINPUT, "%s: no runs recorded yet (not a kvsim catalog)",
			       c->path);
	const char *sql = "SELECT p.name, p.type, c.kind FROM pragma_table_info('runs') p"
			  " LEFT JOIN columns c ON c.name = p.name ORDER BY p.cid";
	if (out_cat_db_prepare(c, sql, &st, e, "reading columns"))
		return KS_EIO;
	int rc = 0, r;
	while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(st, 0);
		const char *ty = (const char *)sqlite3_column_text(st, 1);
		const char *k = (const char *)sqlite3_column_text(st, 2);
		rc = out_cat_col_add_mem(c, n, k, ty && !strcmp(ty, "REAL"));
	}
	if (rc)
		rc = err_set(e, rc, "%s: out of memory", c->path);
	else if (r != SQLITE_DONE) /* a page it could not read: not a short list */
		rc = out_cat_db_err(c, e, "reading columns");
	sqlite3_finalize(st);
	if (!rc && (!out_cat_col_find(c, "id") || !out_cat_col_find(c, "status")))
		rc = err_set(e, KS_EIO,
		             "%s: table runs has no column '%s' (not a kvsim catalog, or "
		             "a damaged one)",
		             c->path, out_cat_col_find(c, "id") ? "status" : "id");
	return rc;
}

/* Reads the column list again when another process changed the schema
 * since (it added the same parameters or metrics first: adding them again
 * would fail on a duplicate column). Called under BEGIN IMMEDIATE, so the
 * list stays right until the transaction ends. */
int out_cat_cols_refresh(out_catalog_t *c, err_t *e)
{
	int v;
	if (schema_version(c, &v, e))
		return KS_EIO;
	if (v == c->schema_ver)
		return 0;
	for (size_t i = 0; i < c->ncols; i++)
		free(c->cols[i].name);
	c->ncols = 0;
	return out_cat_load_columns(c, e);
}

/* Ends the transaction in progress: COMMIT when rc is 0, else ROLLBACK and
 * rc. */
int out_cat_tx_end(out_catalog_t *c, int rc, err_t *e)
{
	if (rc) {
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	return sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK
	           ? out_cat_db_err(c, e, "commit")
	           : 0;
}

int out_cat_exec_stmt(out_catalog_t *c, sqlite3_stmt *st, err_t *e, const char *what)
{
	int r = sqlite3_step(st);
	sqlite3_finalize(st);
	return (r == SQLITE_DONE || r == SQLITE_ROW) ? 0 : out_cat_db_err(c, e, what);
}
