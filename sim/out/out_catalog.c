/* out_catalog — see out_catalog.h. */
#include "sim/base/mem.h"
#include "sim/out/out_catalog.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/out/out_hdf5.h"
#include "sim/base/vec.h"

/* One transaction, so a killed first sweep leaves both tables or neither. */
static const char schema_sql[] =
	"BEGIN IMMEDIATE;"
	"CREATE TABLE IF NOT EXISTS runs ("
	" id TEXT PRIMARY KEY, config_digest TEXT, seed INTEGER, status TEXT NOT NULL,"
	" error TEXT, attempts INTEGER NOT NULL DEFAULT 0, h5_path TEXT, started_at TEXT,"
	" finished_at TEXT, wall_s REAL, config TEXT, h5_size INTEGER, h5_sha256 TEXT,"
	" git_rev TEXT, git_dirty INTEGER, stale INTEGER NOT NULL DEFAULT 0, inputs TEXT,"
	" trace TEXT, preset TEXT);"
	"CREATE TABLE IF NOT EXISTS columns ("
	" name TEXT PRIMARY KEY, kind TEXT NOT NULL, unit TEXT, ord INTEGER);"
	"CREATE TABLE IF NOT EXISTS run_config (run_id TEXT NOT NULL, key TEXT NOT NULL,"
	" value NUMERIC, PRIMARY KEY (run_id, key)) WITHOUT ROWID;"
	"COMMIT;";

/* The ledger columns, added to catalogs written before them (migrate). */
static const struct {
	const char *name, *decl;
} ledger_cols[] = {
	{"h5_size", "INTEGER"},   {"h5_sha256", "TEXT"},
	{"git_rev", "TEXT"},      {"git_dirty", "INTEGER"},
	{"trace", "TEXT"},        {"preset", "TEXT"}, /* derived from the config */
	{"stale", "INTEGER NOT NULL DEFAULT 0"}, /* last: migrate marks old rows */
};
#define N_LEDGER (sizeof ledger_cols / sizeof ledger_cols[0])

typedef struct col_info {
	char *name;
	const char *kind; /* static string: "run", "param", "metric" */
	int is_real;
} col_info_t;

struct out_catalog {
	sqlite3 *db;
	char dir[4096];
	char path[4096];
	col_info_t *cols;
	size_t ncols, cap;
	int schema_ver; /* PRAGMA schema_version the column list was read at */
};

static const char *kind_static(const char *k)
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
static int db_corrupt(out_catalog_t *c, int rc, err_t *e)
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

static int db_err(out_catalog_t *c, err_t *e, const char *what)
{
	int rc = err_set(e, KS_EIO, "%s: %s: %s", c->path, what, sqlite3_errmsg(c->db));
	return db_corrupt(c, rc, e);
}

/* Prepares sql on the catalog: 0, or db_err naming what was being done. */
static int db_prepare(out_catalog_t *c, const char *sql, sqlite3_stmt **st, err_t *e,
		      const char *what)
{
	if (sqlite3_prepare_v2(c->db, sql, -1, st, NULL) != SQLITE_OK)
		return db_err(c, e, what);
	return 0;
}

static int col_add_mem(out_catalog_t *c, const char *name, const char *kind, int is_real)
{
	if (VEC_GROW(c->cols, c->cap, c->ncols + 1, 32))
		return KS_ENOMEM;
	char *s = strdup(name);
	if (!s)
		return KS_ENOMEM;
	c->cols[c->ncols++] = (col_info_t){s, kind_static(kind), is_real};
	return 0;
}

static const col_info_t *col_find(const out_catalog_t *c, const char *name)
{
	for (size_t i = 0; i < c->ncols; i++)
		if (!strcmp(c->cols[i].name, name))
			return &c->cols[i];
	return NULL;
}

/* Appends name as a quoted SQL identifier. */
static void quote_ident(char *buf, size_t cap, const char *name)
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

static int append(char **buf, size_t *len, size_t *cap, const char *s)
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
	if (db_prepare(c, "PRAGMA schema_version", &st, e, "reading the schema"))
		return KS_EIO;
	int r = sqlite3_step(st);
	*v = r == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
	sqlite3_finalize(st);
	return r == SQLITE_ROW ? 0 : db_err(c, e, "reading the schema");
}

static int load_columns(out_catalog_t *c, err_t *e)
{
	sqlite3_stmt *st;
	if (schema_version(c, &c->schema_ver, e))
		return KS_EIO;
	if (db_prepare(c, "SELECT 1 FROM sqlite_master WHERE name = 'columns'", &st, e,
	               "reading the schema"))
		return KS_EIO;
	int have = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (!have)
		return err_set(e, KS_EINPUT, "%s: no runs recorded yet (not a kvsim catalog)",
			       c->path);
	const char *sql = "SELECT p.name, p.type, c.kind FROM pragma_table_info('runs') p"
			  " LEFT JOIN columns c ON c.name = p.name ORDER BY p.cid";
	if (db_prepare(c, sql, &st, e, "reading columns"))
		return KS_EIO;
	int rc = 0, r;
	while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(st, 0);
		const char *ty = (const char *)sqlite3_column_text(st, 1);
		const char *k = (const char *)sqlite3_column_text(st, 2);
		rc = col_add_mem(c, n, k, ty && !strcmp(ty, "REAL"));
	}
	if (rc)
		rc = err_set(e, rc, "%s: out of memory", c->path);
	else if (r != SQLITE_DONE) /* a page it could not read: not a short list */
		rc = db_err(c, e, "reading columns");
	sqlite3_finalize(st);
	if (!rc && (!col_find(c, "id") || !col_find(c, "status")))
		rc = err_set(e, KS_EIO, "%s: table runs has no column '%s' (not a kvsim catalog, or "
			     "a damaged one)", c->path, col_find(c, "id") ? "status" : "id");
	return rc;
}

/* Reads the column list again when another process changed the schema
 * since (it added the same parameters or metrics first: adding them again
 * would fail on a duplicate column). Called under BEGIN IMMEDIATE, so the
 * list stays right until the transaction ends. */
static int cols_refresh(out_catalog_t *c, err_t *e)
{
	int v;
	if (schema_version(c, &v, e))
		return KS_EIO;
	if (v == c->schema_ver)
		return 0;
	for (size_t i = 0; i < c->ncols; i++)
		free(c->cols[i].name);
	c->ncols = 0;
	return load_columns(c, e);
}

/* Ends the transaction in progress: COMMIT when rc is 0, else ROLLBACK and
 * rc. */
static int tx_end(out_catalog_t *c, int rc, err_t *e)
{
	if (rc) {
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	return sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK ? db_err(c, e, "commit")
									    : 0;
}

/* Which ledger columns table runs has; *missing counts the others (0 when
 * there is no table runs yet: load_columns reports that). */
static int ledger_have(out_catalog_t *c, int have[N_LEDGER], int *missing, err_t *e)
{
	sqlite3_stmt *st;
	if (db_prepare(c, "SELECT name FROM pragma_table_info('runs')", &st, e,
	               "reading the schema"))
		return KS_EIO;
	int any = 0;
	memset(have, 0, N_LEDGER * sizeof *have);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(st, 0);
		any = 1;
		for (size_t k = 0; k < N_LEDGER; k++)
			have[k] |= !strcmp(n, ledger_cols[k].name);
	}
	sqlite3_finalize(st);
	*missing = 0;
	for (size_t k = 0; any && k < N_LEDGER; k++)
		*missing += !have[k];
	return 0;
}

/* Adds the ledger columns a catalog lacks (ALTER TABLE, one transaction;
 * looked at again under the lock, as another process may migrate first).
 * The rows already done were made by a revision nobody recorded: they are
 * marked stale, and a sweep treats them as made by another revision. */
static int migrate(out_catalog_t *c, err_t *e)
{
	int have[N_LEDGER], missing, rc = ledger_have(c, have, &missing, e);
	if (rc || !missing)
		return rc;
	if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_err(c, e, "migrating");
	rc = ledger_have(c, have, &missing, e);
	for (size_t k = 0; !rc && k < N_LEDGER; k++) {
		char sql[256];
		snprintf(sql, sizeof sql, "ALTER TABLE runs ADD COLUMN %s %s", ledger_cols[k].name,
			 ledger_cols[k].decl);
		if (!have[k] && sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK)
			rc = db_err(c, e, "migrating (adding the ledger columns)");
	}
	if (!rc && missing && !have[N_LEDGER - 1] &&
	    sqlite3_exec(c->db, "UPDATE runs SET stale = 1 WHERE status = 'done'", NULL, NULL,
			 NULL) != SQLITE_OK)
		rc = db_err(c, e, "migrating");
	return tx_end(c, rc, e);
}

/* Whether table runs has column name. */
static int has_column(out_catalog_t *c, const char *name, int *have, err_t *e)
{
	sqlite3_stmt *st;
	if (db_prepare(c, "SELECT 1 FROM pragma_table_info('runs') WHERE name = ?", &st, e,
	               "reading the schema"))
		return KS_EIO;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int r = sqlite3_step(st);
	*have = r == SQLITE_ROW;
	sqlite3_finalize(st);
	return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : db_err(c, e, "reading the schema");
}

/* SQL function kvsim_reads_files(config): out_config_reads_files. */
static void sql_reads_files(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	(void)argc;
	sqlite3_result_int(cx, out_config_reads_files((const char *)sqlite3_value_text(argv[0])));
}

/* Adds column inputs to a catalog written before input files counted (one
 * transaction, looked at again under the lock). A done row whose config
 * reads no file keeps its id, which is what such a point's id still is;
 * one whose config reads files cannot have them verified (no digest was
 * taken) and becomes 'unverified', which a sweep runs again. */
static int migrate_inputs(out_catalog_t *c, err_t *e)
{
	int have, rc = has_column(c, "inputs", &have, e);
	if (rc || have)
		return rc;
	if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_err(c, e, "migrating");
	rc = has_column(c, "inputs", &have, e);
	if (rc || have)
		return tx_end(c, rc, e);
	if (sqlite3_create_function(c->db, "kvsim_reads_files", 1, SQLITE_UTF8, NULL,
				    sql_reads_files, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(c->db,
			 "ALTER TABLE runs ADD COLUMN inputs TEXT;"
			 "UPDATE runs SET status = 'unverified', error = 'made before input files "
			 "were digested: its inputs cannot be verified; a sweep runs it again'"
			 " WHERE status = 'done' AND kvsim_reads_files(config);"
			 "UPDATE runs SET inputs = '' WHERE status = 'done';",
			 NULL, NULL, NULL) != SQLITE_OK)
		rc = db_err(c, e, "migrating (adding the inputs column)");
	return tx_end(c, rc, e);
}

/* ---- every config key of every run (table run_config) ------------------ */

static int exec_stmt(out_catalog_t *c, sqlite3_stmt *st, err_t *e, const char *what)
{
	int r = sqlite3_step(st);
	sqlite3_finalize(st);
	return (r == SQLITE_DONE || r == SQLITE_ROW) ? 0 : db_err(c, e, what);
}


int out_config_pairs(const char *text, out_kv_t **kv, size_t *n)
{
	char sec[96] = "";
	size_t cap = 0;
	*kv = NULL;
	*n = 0;
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		const char *eq = *l == '#' || *l == '[' ? NULL : memchr(l, '=', len);
		if (*l == '[' && len > 2 && len < sizeof sec) {
			snprintf(sec, sizeof sec, "%.*s", (int)(len - 2), l + 1);
		} else if (eq && eq > l) {
			if (VEC_GROW(*kv, cap, *n + 1, 256)) {
				free(*kv);
				*kv = NULL;
				*n = 0;
				return KS_ENOMEM;
			}
			out_kv_t *p = &(*kv)[(*n)++];
			const char *ke = eq;
			while (ke > l && ke[-1] == ' ')
				ke--;
			snprintf(p->key, sizeof p->key, "%s%s%.*s", sec, *sec ? "." : "", (int)(ke - l),
				 l);
			const char *v = eq + 1, *ve = l + len;
			while (v < ve && *v == ' ')
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\r'))
				ve--;
			p->val = v;
			p->vlen = (size_t)(ve - v);
		}
		l = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* The value of key in kv (n pairs) as text into buf; "" when absent. */
static const char *kv_get(const out_kv_t *kv, size_t n, const char *key, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!strcmp(kv[i].key, key)) {
			snprintf(buf, cap, "%.*s", (int)kv[i].vlen, kv[i].val);
			break;
		}
	return buf;
}

/* The workload's name (column trace): a trace file's base name; "gen:GEN"
 * for a generator, "gen:GEN:FILE" for one that reads a file (servegen). */
static void trace_name(const out_kv_t *kv, size_t n, char *out, size_t cap)
{
	char kind[64], gen[64], path[4096];
	kv_get(kv, n, "trace.kind", kind, sizeof kind);
	kv_get(kv, n, "trace.gen", gen, sizeof gen);
	kv_get(kv, n, "trace.path", path, sizeof path);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (!strcmp(kind, "gen"))
		snprintf(out, cap, "gen:%s%s%s", gen, *base ? ":" : "", base);
	else
		snprintf(out, cap, "%s", *base ? base : kind);
}

/* Records run id's config keys (text: its resolved config) in run_config,
 * replacing any it had, and the columns derived from them (trace,
 * preset). Inside the caller's transaction. */
static int keys_put(out_catalog_t *c, const char *id, const char *text, err_t *e)
{
	out_kv_t *kv;
	size_t n;
	if (out_config_pairs(text, &kv, &n))
		return err_set(e, KS_ENOMEM, "out of memory");
	sqlite3_stmt *st;
	int rc = db_prepare(c, "DELETE FROM run_config WHERE run_id = ?", &st, e,
			    "recording config keys");
	if (!rc) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		rc = exec_stmt(c, st, e, "recording config keys");
	}
	if (!rc && !(rc = db_prepare(c, "INSERT OR REPLACE INTO run_config (run_id, key, value)"
					" VALUES (?, ?, ?)", &st, e, "recording config keys"))) {
		for (size_t i = 0; !rc && i < n; i++) {
			sqlite3_reset(st);
			sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, kv[i].key, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 3, kv[i].val, (int)kv[i].vlen, SQLITE_STATIC);
			if (sqlite3_step(st) != SQLITE_DONE)
				rc = db_err(c, e, "recording config keys");
		}
		sqlite3_finalize(st);
	}
	char trace[4200], preset[64];
	trace_name(kv, n, trace, sizeof trace);
	kv_get(kv, n, "policy.preset", preset, sizeof preset);
	if (!rc && !(rc = db_prepare(c, "UPDATE runs SET trace = ?, preset = ? WHERE id = ?", &st,
				     e, "recording config keys"))) {
		sqlite3_bind_text(st, 1, trace, -1, SQLITE_STATIC);
		if (*preset)
			sqlite3_bind_text(st, 2, preset, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, id, -1, SQLITE_STATIC);
		rc = exec_stmt(c, st, e, "recording config keys");
	}
	free(kv);
	return rc;
}

/* Fills parameter column name from each run's recorded config key where it
 * is NULL: another sweep's runs hold the value they ran with, not NULL.
 * Inside the caller's transaction. */
static int param_backfill(out_catalog_t *c, const char *name, err_t *e)
{
	char sql[600] = "UPDATE runs SET ";
	quote_ident(sql, sizeof sql, name);
	strcat(sql, " = (SELECT value FROM run_config k WHERE k.run_id = runs.id AND k.key = ?1)"
		    " WHERE ");
	quote_ident(sql, sizeof sql, name);
	strcat(sql, " IS NULL");
	sqlite3_stmt *st;
	if (db_prepare(c, sql, &st, e, "filling a parameter column"))
		return KS_EIO;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	return exec_stmt(c, st, e, "filling a parameter column");
}

/* Rows whose config keys are not recorded yet (made before run_config, or
 * by an older kvsim since): SELECT id, config. No condition reads config:
 * its text (tens of kB) is read only for the rows selected. */
static const char keys_missing_sql[] =
	"SELECT id, config FROM runs"
	" WHERE NOT EXISTS (SELECT 1 FROM run_config k WHERE k.run_id = runs.id)";

/* Whether one of the rows keys_missing_sql selects has a key to record
 * (*todo; a config text with none is not worth a write lock each open), or
 * (no table run_config yet) 1. */
static int keys_todo(out_catalog_t *c, int *todo, err_t *e)
{
	sqlite3_stmt *st;
	*todo = 0;
	if (db_prepare(c, "SELECT 1 FROM sqlite_master WHERE name = 'run_config'", &st, e,
		       "reading the schema"))
		return KS_EIO;
	int have = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (!have) {
		*todo = 1;
		return 0;
	}
	/* a table runs without its columns: load_columns names what it lacks */
	if (sqlite3_prepare_v2(c->db, keys_missing_sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	while (!*todo && sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 1);
		*todo = t && strchr(t, '=');
	}
	sqlite3_finalize(st);
	return 0;
}

/* Records the config keys of the rows that lack them (keys_put), then fills
 * every parameter column's NULLs from them (param_backfill): one
 * transaction, looked at again under the lock. A catalog written before
 * run_config gains it this way, whole. */
static int migrate_keys(out_catalog_t *c, err_t *e)
{
	int todo, rc = keys_todo(c, &todo, e);
	if (rc || !todo)
		return rc;
	if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_err(c, e, "migrating");
	if (sqlite3_exec(c->db,
			 "CREATE TABLE IF NOT EXISTS run_config (run_id TEXT NOT NULL, key TEXT "
			 "NOT NULL, value NUMERIC, PRIMARY KEY (run_id, key)) WITHOUT ROWID",
			 NULL, NULL, NULL) != SQLITE_OK)
		return tx_end(c, db_err(c, e, "migrating (adding table run_config)"), e);
	sqlite3_stmt *st;
	if ((rc = db_prepare(c, keys_missing_sql, &st, e, "migrating")))
		return tx_end(c, rc, e);
	/* ids and texts first: keys_put writes the table this reads */
	struct {
		char *id, *text;
	} *rows = NULL;
	size_t n = 0, cap = 0;
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 1);
		if (!t || !strchr(t, '='))
			continue; /* no key to record */
		if (VEC_GROW(rows, cap, n + 1, 64)) {
			rc = err_set(e, KS_ENOMEM, "out of memory");
			break;
		}
		rows[n].id = strdup((const char *)sqlite3_column_text(st, 0));
		rows[n].text = strdup((const char *)sqlite3_column_text(st, 1));
		if (!rows[n].id || !rows[n].text)
			rc = err_set(e, KS_ENOMEM, "out of memory");
		n++;
	}
	sqlite3_finalize(st);
	for (size_t i = 0; !rc && i < n; i++)
		rc = keys_put(c, rows[i].id, rows[i].text, e);
	for (size_t i = 0; i < n; i++)
		FREE_ALL(rows[i].id, rows[i].text);
	free(rows);
	if (!rc && !(rc = db_prepare(c, "SELECT name FROM columns WHERE kind = 'param'", &st, e,
				     "migrating"))) {
		while (!rc && sqlite3_step(st) == SQLITE_ROW)
			rc = param_backfill(c, (const char *)sqlite3_column_text(st, 0), e);
		sqlite3_finalize(st);
	}
	return tx_end(c, rc, e);
}

int out_mkdir_p(const char *dir)
{
	char p[4096];
	size_t n = strlen(dir);
	if (n == 0 || n >= sizeof p) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(p, dir, n + 1);
	for (char *q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(p, 0777) < 0 && errno != EEXIST)
			return -1;
		*q = '/';
	}
	return mkdir(p, 0777) < 0 && errno != EEXIST ? -1 : 0;
}

/* SQLite's unix VFS takes absolute paths of at most 512 bytes (its
 * MAX_PATHNAME), and names the journal DB-journal: measured on 3.40, a
 * database at 504 bytes opens, one at 505 fails as "unable to open database
 * file". */
#define CATALOG_PATH_MAX (512 - (int)(sizeof "-journal" - 1))

/* dir as SQLite will see it, into abs (n bytes): absolute, and the symlinks
 * of the part that exists resolved. 0, or -1 when it does not fit. */
static int dir_absolute(const char *dir, char *abs, size_t n)
{
	char p[8192], real[PATH_MAX];
	size_t cut;
	if (dir[0] == '/')
		cut = (size_t)snprintf(p, sizeof p, "%s", dir);
	else if (getcwd(real, sizeof real))
		cut = (size_t)snprintf(p, sizeof p, "%s/%s", real, dir);
	else
		return -1;
	if (cut >= sizeof p)
		return -1;
	for (;;) { /* the longest prefix that exists, then the rest as given */
		char keep = p[cut];
		p[cut] = '\0';
		int ok = realpath(p, real) != NULL;
		p[cut] = keep;
		if (ok)
			return snprintf(abs, n, "%s%s", strcmp(real, "/") ? real : "", p + cut) >=
				       (int)n ? -1 : 0;
		while (cut > 0 && p[--cut] != '/')
			;
		if (cut == 0)
			return snprintf(abs, n, "%s", p) >= (int)n ? -1 : 0;
	}
}

int out_dir_check(const char *dir, err_t *e)
{
	char abs[8192];
	int n = dir_absolute(dir, abs, sizeof abs) ? -1
		: (int)strlen(abs) + 1 + (int)strlen(OUT_CATALOG_FILE);
	if (n >= 0 && n <= CATALOG_PATH_MAX)
		return 0;
	if (n < 0)
		return err_set(e, KS_EINPUT,
			       "%s: results directory path too long (nothing was created)", dir);
	return err_set(e, KS_EINPUT,
		       "%s/%s: results directory path too long: %d bytes from the root, over the "
		       "%d that SQLite opens; use a shorter directory (nothing was created)",
		       abs, OUT_CATALOG_FILE, n, CATALOG_PATH_MAX);
}

/* Runs sql, retrying while another process holds the database: switching a
 * fresh file to WAL, and the first transaction after it, can be refused
 * with SQLITE_BUSY without the busy handler being asked (the other
 * connection is changing the journal mode or recovering the WAL). Retried
 * for about the busy timeout; a transaction left open by a refused
 * statement is rolled back first. */
static int exec_retry_busy(out_catalog_t *c, const char *sql)
{
	for (int i = 0;; i++) {
		int r = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
		if (!sqlite3_get_autocommit(c->db) && r != SQLITE_OK)
			sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		if ((r & 0xff) != SQLITE_BUSY && (r & 0xff) != SQLITE_LOCKED)
			return r;
		if (i >= 1000)
			return r;
		usleep(10000);
	}
}

int out_catalog_open(const char *dir, int readonly, out_catalog_t **out, err_t *e)
{
	*out = NULL;
	int vrc = out_dir_check(dir, e);
	if (vrc)
		return vrc;
	out_catalog_t *c = calloc(1, sizeof *c);
	if (!c)
		return err_set(e, KS_ENOMEM, "out of memory");
	snprintf(c->dir, sizeof c->dir, "%s", dir);
	snprintf(c->path, sizeof c->path, "%s/%s", dir, OUT_CATALOG_FILE);
	if (!readonly && out_mkdir_p(dir) < 0) {
		int rc = err_set(e, KS_EIO, "%s: cannot create directory: %s", dir,
				 strerror(errno));
		free(c);
		return rc;
	}
	/* Readers open read-write when they may (query_only keeps them reading):
	 * after a killed sweep the first reader must recover the WAL index,
	 * which a read-only connection cannot do. */
	int fl = readonly ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	int orc = sqlite3_open_v2(c->path, &c->db, fl, NULL);
	if (orc != SQLITE_OK && readonly && c->db) {
		sqlite3_close(c->db);
		c->db = NULL;
		orc = sqlite3_open_v2(c->path, &c->db, SQLITE_OPEN_READONLY, NULL);
	}
	if (orc != SQLITE_OK) {
		int rc = err_set(e, readonly ? KS_EINPUT : KS_EIO, "%s: cannot open catalog: %s",
				 c->path, c->db ? sqlite3_errmsg(c->db) : "out of memory");
		out_catalog_close(c);
		return rc;
	}
	sqlite3_busy_timeout(c->db, 10000);
	/* WAL: readers (kvsim runs) never block the sweep; synchronous=NORMAL
	 * keeps every committed row across a killed process. */
	const char *init = readonly ? "" : "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;";
	if (exec_retry_busy(c, init) != SQLITE_OK ||
	    (!readonly && exec_retry_busy(c, schema_sql) != SQLITE_OK)) {
		int rc = db_err(c, e, "initialising");
		out_catalog_close(c);
		return rc;
	}
	/* A reader migrates too when it may, so `kvsim runs` can show the new
	 * columns of an old catalog; one that cannot just goes without them. */
	int rc = 0;
	if (!readonly || !sqlite3_db_readonly(c->db, "main")) {
		err_t ignored;
		rc = migrate(c, readonly ? &ignored : e);
		if (!rc)
			rc = migrate_inputs(c, readonly ? &ignored : e);
		if (!rc)
			rc = migrate_keys(c, readonly ? &ignored : e);
		if (readonly)
			rc = 0;
	}
	if (!rc && readonly && sqlite3_exec(c->db, "PRAGMA query_only = 1;", NULL, NULL, NULL))
		rc = db_err(c, e, "initialising");
	if (!rc)
		rc = load_columns(c, e);
	if (rc) {
		rc = db_corrupt(c, rc, e);
		out_catalog_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void out_catalog_close(out_catalog_t *c)
{
	if (!c)
		return;
	sqlite3_close(c->db);
	for (size_t i = 0; i < c->ncols; i++)
		free(c->cols[i].name);
	free(c->cols);
	free(c);
}

/* Whether a parameter or metric needs a column: 0 present, 1 to add, or an
 * error; the name to use in used (metrics whose name is taken by another
 * kind get a "metric." prefix). */
static int col_plan(out_catalog_t *c, const char *name, const char *kind, char *used,
		    size_t cap, err_t *e)
{
	snprintf(used, cap, "%s", name);
	const col_info_t *ci = col_find(c, used);
	if (ci && ci->kind == kind_static(kind))
		return 0;
	if (ci && !strcmp(kind, "metric")) {
		snprintf(used, cap, "metric.%s", name);
		if (col_find(c, used))
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
	quote_ident(sql, cap, name);
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
	if (db_prepare(c, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'runs'",
	               &st, e, "reading the schema"))
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
	return rc ? db_err(c, e, "adding columns") : 0;
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
			return db_err(c, e, "adding a column");
	}
	sqlite3_stmt *st;
	if (db_prepare(c,
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
			rc = db_err(c, e, "recording a column");
		else if (col_add_mem(c, b->name[i], b->kind, !strcmp(b->kind, "metric")))
			rc = err_set(e, KS_ENOMEM, "out of memory");
	}
	sqlite3_finalize(st);
	for (size_t i = 0; !rc && !strcmp(b->kind, "param") && i < b->n; i++)
		rc = param_backfill(c, b->name[i], e);
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
	if (db_prepare(c, "SELECT status, attempts FROM runs WHERE id = ?", &st, e,
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
		return db_err(c, e, "reading a run");
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
	int rc = append(&sql, &len, &cap, "UPDATE runs SET ");
	for (size_t i = 0; !rc && i < c->ncols; i++) {
		if (strcmp(c->cols[i].kind, "param"))
			continue;
		char q[600] = "";
		quote_ident(q, sizeof q, c->cols[i].name);
		char *a = sqlite3_mprintf("%s%s = (SELECT value FROM run_config WHERE run_id = ?1"
					  " AND key = %Q)", n++ ? ", " : "", q, c->cols[i].name);
		rc = !a || append(&sql, &len, &cap, a);
		sqlite3_free(a);
	}
	if (!rc)
		rc = append(&sql, &len, &cap, " WHERE id = ?1");
	if (rc) {
		free(sql);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	sqlite3_stmt *st = NULL;
	if (n && !(rc = db_prepare(c, sql, &st, e, "recording parameters"))) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		rc = exec_stmt(c, st, e, "recording parameters");
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
		return db_err(c, e, "begin");
	}
	rc = cols_refresh(c, e);
	if (rc)
		goto fail;
	sqlite3_stmt *st;
	if ((rc = db_prepare(
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
	if ((rc = exec_stmt(c, st, e, "recording a run")))
		goto fail;
	/* The same config and seed under another id read other input files:
	 * those results are of inputs that are no longer there. */
	if ((rc = db_prepare(c,
			     "UPDATE runs SET status = 'superseded', error = 'its input files "
			     "changed; run ' || substr(?1, 1, 16) || ' reads them as they are now'"
			     " WHERE config_digest = ?2 AND seed = ?3 AND id != ?1"
			     " AND inputs IS NOT ?6 AND status IN ('done', 'unverified')",
			     &st, e, "recording a run")))
		goto fail;
	bind_run(st, ri);
	if ((rc = exec_stmt(c, st, e, "recording a run")))
		goto fail;
	/* every key, then the parameter columns: new ones filled for every
	 * run, every one for this run, its own swept values as given */
	if ((rc = keys_put(c, ri->id, ri->config_text, e)) ||
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
			quote_ident(sql, cap, ri->params[i].key);
			strcat(sql, " = ?");
		}
		strcat(sql, " WHERE id = ?");
		if ((rc = db_prepare(c, sql, &st, e, "recording parameters")))
			goto fail;
		for (size_t i = 0; i < ri->n_params; i++)
			sqlite3_bind_text(st, (int)i + 1, ri->params[i].value, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, (int)ri->n_params + 1, ri->id, -1, SQLITE_STATIC);
		if ((rc = exec_stmt(c, st, e, "recording parameters")))
			goto fail;
	}
	FREE_ALL(sql, used);
	if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return db_err(c, e, "commit");
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
		return db_err(c, e, "begin");
	}
	strcpy(sql, "UPDATE runs SET status = 'done', error = NULL, wall_s = ?,"
		    " finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')");
	if (f)
		strcat(sql, ", h5_size = ?, h5_sha256 = ?, git_rev = ?, git_dirty = ?, stale = 0");
	rc = cols_refresh(c, e);
	if (!rc)
		rc = ensure_columns(c, "metric", n, metric_name, metric_unit, m, used, e);
	for (size_t i = 0; i < n && !rc; i++) {
		strcat(sql, ", ");
		quote_ident(sql, cap, used[i]);
		strcat(sql, " = ?");
	}
	free(used);
	strcat(sql, " WHERE id = ?");
	sqlite3_stmt *st = NULL;
	if (!rc)
		rc = db_prepare(c, sql, &st, e, "recording metrics");
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
		rc = exec_stmt(c, st, e, "recording metrics");
	}
	free(sql);
	if (!rc && sqlite3_changes(c->db) != 1)
		rc = err_set(e, KS_EINPUT, "%s: no run %s to mark done", c->path, id);
	return tx_end(c, rc, e);
}

/* Ends run id's attempt with status as its error text (sql: the UPDATE,
 * binding ?1 error and ?2 id); what: "failed", "interrupted". */
static int end_attempt(out_catalog_t *c, const char *sql, const char *id, const char *error,
		       const char *what, err_t *e)
{
	sqlite3_stmt *st;
	if (db_prepare(c, sql, &st, e, "recording the end of a run"))
		return KS_EIO;
	sqlite3_bind_text(st, 1, error ? error : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	int rc = exec_stmt(c, st, e, "recording the end of a run");
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
	if (db_prepare(c,
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
		rc = db_err(c, e, "reading a run");
	}
	sqlite3_finalize(st);
	return rc;
}

int out_catalog_mark_stale(out_catalog_t *c, const char *id, int stale, err_t *e)
{
	sqlite3_stmt *st;
	if (db_prepare(c, "UPDATE runs SET stale = ?1 WHERE id = ?2 AND stale IS NOT ?1", &st, e,
	               "marking a run"))
		return KS_EIO;
	sqlite3_bind_int(st, 1, stale ? 1 : 0);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	return exec_stmt(c, st, e, "marking a run");
}

/* ---- queries ------------------------------------------------------------ */

void out_table_free(out_table_t *t)
{
	if (!t)
		return;
	for (size_t k = 0; k < t->ncols; k++)
		free(t->names ? t->names[k] : NULL);
	for (size_t i = 0; t->cells && i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	FREE_ALL(t->names, t->kinds, t->is_real, t->cells);
	memset(t, 0, sizeof *t);
}

/* Whether some run recorded config key name (table run_config). */
static int key_known(out_catalog_t *c, const char *name)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(c->db, "SELECT 1 FROM run_config WHERE key = ? LIMIT 1", -1, &st,
			       NULL) != SQLITE_OK)
		return 0; /* an old catalog opened read-only: no table */
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int r = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return r;
}

/* KS_EINPUT: name is neither a column nor a recorded config key. */
static int col_unknown(out_catalog_t *c, const char *what, const char *name, err_t *e)
{
	sqlite3_stmt *st;
	int have = sqlite3_prepare_v2(c->db, "SELECT 1 FROM run_config LIMIT 1", -1, &st, NULL) ==
		   SQLITE_OK;
	sqlite3_finalize(st);
	if (!have && strchr(name, '.'))
		return err_set(e, KS_EINPUT,
			       "%s: %sno column '%s', and this catalog predates the record of every "
			       "config key: open it once where it may be written (kvsim runs DIR "
			       "does it) to add them",
			       c->path, what, name);
	return err_set(e, KS_EINPUT, "%s: %sno column or config key '%s'", c->path, what, name);
}

/* The SQL of column name into buf: its quoted name, or the subquery that
 * reads the run's config key name (kind "param"). 0, or -1 when name is
 * neither. */
static int col_sql(out_catalog_t *c, const char *name, char *buf, size_t cap,
		   const char **kind, int *is_real)
{
	const col_info_t *ci = col_find(c, name);
	buf[0] = '\0';
	if (ci) {
		quote_ident(buf, cap, name);
		*kind = ci->kind;
		*is_real = ci->is_real;
		return 0;
	}
	if (!key_known(c, name))
		return -1;
	sqlite3_snprintf((int)cap, buf,
			 "(SELECT value FROM run_config WHERE run_id = runs.id AND key = %Q)", name);
	*kind = "param";
	*is_real = 0;
	return 0;
}

/* Rewrites a user's --where text into *out (malloc'd): bare mentions of
 * dotted column names ("fake.rate" > 2) quoted, so they do not parse as
 * table.column, and of config keys made the run's recorded value. A dotted
 * name that is neither is KS_EINPUT naming it. */
static int quote_where(out_catalog_t *c, const char *w, char **out, err_t *e)
{
	size_t n = strlen(w), len = 0, cap = 0;
	char *o = NULL;
	int bad = append(&o, &len, &cap, "");
	for (size_t i = 0; i < n && !bad;) {
		char ch = w[i], piece[1200];
		size_t k = i + 1;
		if (ch == '\'' || ch == '"' || ch == '`' || ch == '[') {
			/* a quoted string or identifier, as is */
			char close = ch == '[' ? ']' : ch;
			while (k < n && w[k] != close)
				k++;
			k = k < n ? k + 1 : n;
		} else if (isalnum((unsigned char)ch) || ch == '_') {
			k = i;
			while (k < n && (isalnum((unsigned char)w[k]) || w[k] == '_' || w[k] == '.'))
				k++;
		}
		char tok[256];
		size_t tl = k - i < sizeof tok - 1 ? k - i : sizeof tok - 1;
		memcpy(tok, w + i, tl);
		tok[tl] = '\0';
		const char *kind;
		int real;
		if (strchr(tok, '.') && (isalpha((unsigned char)*tok) || *tok == '_') &&
		    k - i < sizeof tok) {
			if (col_sql(c, tok, piece, sizeof piece, &kind, &real)) {
				free(o);
				return col_unknown(c, "--where: ", tok, e);
			}
			bad = append(&o, &len, &cap, piece);
		} else {
			char *part = strndup(w + i, k - i);
			bad = !part || append(&o, &len, &cap, part);
			free(part);
		}
		i = k;
	}
	if (bad) {
		free(o);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	*out = o;
	return 0;
}

/* Why a --where text is not one condition, or NULL. SQLite compiles only
 * the first statement of a text and hands back the rest, so "a = 1; DROP
 * ..." would silently run as "a = 1"; a ')' closing a parenthesis the text
 * did not open would let it append clauses of its own. Quoted strings and
 * identifiers ('', "", ``, []) and comments are skipped, as SQLite's
 * tokenizer skips them (a doubled quote is two adjacent strings here, which
 * splits the text the same way). */
static const char *where_refused(const char *w)
{
	int depth = 0;
	for (const char *p = w; *p;) {
		const char *close = *p == '[' ? "]" : *p == '\'' ? "'" : *p == '"' ? "\""
		                    : *p == '`' ? "`" : NULL;
		if (close) {
			const char *q = strstr(p + 1, close);
			p = q ? q + 1 : p + strlen(p);
		} else if (p[0] == '-' && p[1] == '-') {
			p += strcspn(p, "\n");
		} else if (p[0] == '/' && p[1] == '*') {
			const char *q = strstr(p + 2, "*/");
			p = q ? q + 2 : p + strlen(p);
		} else if (*p == ';') {
			return "';' ends the statement: give one condition, no further SQL";
		} else {
			depth += (*p == '(') - (*p == ')');
			if (depth < 0)
				return "unbalanced ')': give one condition, no further SQL";
			p++;
		}
	}
	return NULL;
}

/* Default column list: id, status, seed, git_rev, then params and metrics. */
static int default_columns(const out_catalog_t *c, char ***names, size_t *n)
{
	*names = calloc(c->ncols + 4, sizeof **names);
	if (!*names)
		return -1;
	size_t k = 0;
	(*names)[k++] = strdup("id");
	(*names)[k++] = strdup("status");
	(*names)[k++] = strdup("seed");
	if (col_find(c, "git_rev")) /* absent from an old catalog read-only */
		(*names)[k++] = strdup("git_rev");
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < c->ncols; i++)
			if (!strcmp(c->cols[i].kind, pass ? "metric" : "param"))
				(*names)[k++] = strdup(c->cols[i].name);
	*n = k;
	for (size_t i = 0; i < k; i++)
		if (!(*names)[i])
			return -1;
	return 0;
}

/* Comma-separated names; "all" stands for every column but config. */
static int split_columns(const out_catalog_t *c, const char *csv, char ***names, size_t *n)
{
	size_t cnt = 1;
	for (const char *p = csv; *p; p++)
		cnt += *p == ',';
	cnt *= c->ncols + 1;
	*names = calloc(cnt, sizeof **names);
	if (!*names)
		return -1;
	*n = 0;
	const char *s = csv;
	for (;;) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		while (len && isspace((unsigned char)*s))
			s++, len--;
		while (len && isspace((unsigned char)s[len - 1]))
			len--;
		if (len == 3 && !strncmp(s, "all", 3)) {
			for (size_t i = 0; i < c->ncols; i++)
				if (strcmp(c->cols[i].name, "config") &&
				    !((*names)[(*n)++] = strdup(c->cols[i].name)))
					return -1;
		} else if (len) {
			char *nm = strndup(s, len);
			if (!nm)
				return -1;
			(*names)[(*n)++] = nm;
		}
		if (!end)
			break;
		s = end + 1;
	}
	return 0;
}

int out_catalog_select(out_catalog_t *c, const char *columns, const char *where,
		       const char *sort, out_table_t *t, err_t *e)
{
	memset(t, 0, sizeof *t);
	char **names = NULL, *sql = NULL, *qw = NULL;
	const char **kinds = NULL;
	int *reals = NULL;
	size_t n = 0, len = 0, cap = 0;
	int rc = 0;
	if (columns ? split_columns(c, columns, &names, &n) : default_columns(c, &names, &n)) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	if (!n) {
		rc = err_set(e, KS_EINPUT, "no columns selected");
		goto out;
	}
	append(&sql, &len, &cap, "SELECT ");
	kinds = calloc(n, sizeof *kinds);
	reals = calloc(n, sizeof *reals);
	if (!kinds || !reals) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		char q[600];
		if (col_sql(c, names[k], q, sizeof q, &kinds[k], &reals[k])) {
			rc = col_unknown(c, "", names[k], e);
			goto out;
		}
		if ((k && append(&sql, &len, &cap, ", ")) || append(&sql, &len, &cap, q)) {
			rc = err_set(e, KS_ENOMEM, "out of memory");
			goto out;
		}
	}
	append(&sql, &len, &cap, " FROM runs");
	if (where && *where) {
		const char *why = where_refused(where);
		if (why) {
			rc = err_set(e, KS_EINPUT, "--where: %s", why);
			goto out;
		}
		if ((rc = quote_where(c, where, &qw, e)))
			goto out;
		/* in parentheses, and the ')' on a line of its own so that a
		 * trailing "-- comment" cannot swallow the ORDER BY */
		append(&sql, &len, &cap, " WHERE (");
		append(&sql, &len, &cap, qw);
		append(&sql, &len, &cap, "\n)");
	}
	append(&sql, &len, &cap, " ORDER BY ");
	if (sort && *sort) {
		int desc = *sort == '-';
		const char *sc = sort + desc, *kind;
		char q[600];
		int real;
		if (col_sql(c, sc, q, sizeof q, &kind, &real)) {
			rc = col_unknown(c, "cannot sort by: ", sc, e);
			goto out;
		}
		append(&sql, &len, &cap, q);
		append(&sql, &len, &cap, desc ? " DESC, rowid" : ", rowid");
	} else {
		append(&sql, &len, &cap, "rowid");
	}
	if (!sql) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	sqlite3_stmt *st;
	const char *tail = NULL;
	if (sqlite3_prepare_v2(c->db, sql, -1, &st, &tail) != SQLITE_OK) {
		rc = err_set(e, KS_EINPUT, "%s: bad query: %s", c->path, sqlite3_errmsg(c->db));
		goto out;
	}
	if (!st || (tail && tail[strspn(tail, " \t\r\n")])) {
		/* not expected after where_refused; never run part of a query */
		sqlite3_finalize(st);
		rc = err_set(e, KS_EINPUT, "%s: bad query: more than one statement", c->path);
		goto out;
	}
	t->ncols = n;
	t->names = names;
	t->kinds = kinds;
	t->is_real = reals;
	names = NULL;
	kinds = NULL;
	reals = NULL;
	size_t ccap = 0; /* cells, n per row */
	int r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		if (VEC_GROW(t->cells, ccap, (t->nrows + 1) * n, 64 * n)) {
			rc = err_set(e, KS_ENOMEM, "out of memory");
			break;
		}
		char **row = t->cells + t->nrows * n;
		for (size_t k = 0; k < n; k++) {
			char buf[64];
			switch (sqlite3_column_type(st, (int)k)) {
			case SQLITE_NULL:
				row[k] = NULL;
				continue;
			case SQLITE_FLOAT:
				snprintf(buf, sizeof buf, "%.17g", sqlite3_column_double(st, (int)k));
				row[k] = strdup(buf);
				break;
			default:
				row[k] = strdup((const char *)sqlite3_column_text(st, (int)k));
			}
		}
		t->nrows++;
	}
	if (!rc && r != SQLITE_DONE)
		rc = err_set(e, KS_EINPUT, "%s: query failed: %s", c->path, sqlite3_errmsg(c->db));
	sqlite3_finalize(st);
out:
	for (size_t k = 0; names && k < n; k++)
		free(names[k]);
	FREE_ALL(names, sql, qw, kinds, reals);
	if (rc)
		out_table_free(t);
	return rc;
}

int out_catalog_resolve(out_catalog_t *c, const char *prefix, char id[65], err_t *e)
{
	sqlite3_stmt *st;
	if (db_prepare(c,
	               "SELECT id FROM runs WHERE substr(id, 1, length(?1)) = ?1"
	               " LIMIT 2",
	               &st, e, "finding a run"))
		return KS_EIO;
	sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
	int found = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (!found)
			snprintf(id, 65, "%s", (const char *)sqlite3_column_text(st, 0));
		found++;
	}
	sqlite3_finalize(st);
	if (found == 1 && *prefix)
		return 0;
	return err_set(e, KS_EINPUT, "%s: %s run id starts with '%s'", c->path,
		       found ? "more than one" : "no", prefix);
}

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
	return rc == SQLITE_DONE ? 0 : db_err(c, e, "reading a probe's metric");
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
		return db_err(c, e, "creating table capacity");
	sqlite3_stmt *st;
	if (db_prepare(c,
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
	return exec_stmt(c, st, e, "recording a capacity search");
}

static int windows_table(out_catalog_t *c, err_t *e)
{
	if (sqlite3_exec(c->db,
			 "CREATE TABLE IF NOT EXISTS windows (run_id TEXT, window INTEGER, "
			 "kind TEXT, t0_s REAL, t1_s REAL, metric TEXT, unit TEXT, value REAL, "
			 "PRIMARY KEY (run_id, window, metric))",
			 NULL, NULL, NULL) != SQLITE_OK)
		return db_err(c, e, "creating table windows");
	return 0;
}

int out_catalog_windows_put(out_catalog_t *c, const char *id, const res_window_t *w, size_t n,
			    err_t *e)
{
	int rc = windows_table(c, e);
	if (rc)
		return rc;
	if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_err(c, e, "begin");
	sqlite3_stmt *st;
	if (!(rc = db_prepare(c, "DELETE FROM windows WHERE run_id = ?", &st, e,
			      "recording windows"))) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		rc = exec_stmt(c, st, e, "recording windows");
	}
	for (size_t i = 0; i < n && !rc; i++) {
		if ((rc = db_prepare(c,
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
		rc = exec_stmt(c, st, e, "recording windows");
	}
	return tx_end(c, rc, e);
}

int out_catalog_windows(out_catalog_t *c, const char *prefix, const char *metrics,
			out_table_t *t, err_t *e)
{
	memset(t, 0, sizeof *t);
	static const char def[] = "requests,offered_rps,throughput_rps,ttft_completed_mean_ms,"
				  "ttft_p90_ms,ttft_p99_ms,e2e_mean_ms,e2e_p90_ms,e2e_p99_ms";
	static const char *const head[] = {"id", "window", "kind", "t0_s", "t1_s"};
	const size_t nh = sizeof head / sizeof head[0];
	char *list = strdup(metrics && *metrics ? metrics : def), *sql = NULL;
	size_t len = 0, cap = 0, n = nh;
	int rc = 0;
	if (!list) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	sqlite3_stmt *ex;
	if ((rc = db_prepare(c, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "
				"'windows'", &ex, e, "reading windows")))
		goto out;
	int have = sqlite3_step(ex) == SQLITE_ROW;
	sqlite3_finalize(ex);
	if (!have) {
		rc = err_set(e, KS_EINPUT, "%s: no run has per-window summaries (a spec workload's "
			     "stages or output.windows make them)", c->path);
		goto out;
	}
	for (const char *p = list; *p; p++)
		n += *p == ',';
	n++;
	t->names = calloc(n, sizeof *t->names);
	t->kinds = calloc(n, sizeof *t->kinds);
	t->is_real = calloc(n, sizeof *t->is_real);
	if (!t->names || !t->kinds || !t->is_real) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < nh; k++) {
		t->names[k] = strdup(head[k]);
		t->kinds[k] = k < 3 ? "run" : "metric";
		t->is_real[k] = k >= 3;
	}
	t->ncols = nh;
	append(&sql, &len, &cap, "SELECT run_id, window, kind, t0_s, t1_s");
	for (char *save = NULL, *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
		sqlite3_stmt *st;
		if ((rc = db_prepare(c, "SELECT 1 FROM windows WHERE metric = ? LIMIT 1", &st, e,
				     "reading windows")))
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
		if (!q || append(&sql, &len, &cap, q)) {
			sqlite3_free(q);
			rc = err_set(e, KS_ENOMEM, "out of memory");
			goto out;
		}
		sqlite3_free(q);
	}
	append(&sql, &len, &cap, " FROM windows WHERE substr(run_id, 1, length(?1)) = ?1"
				 " GROUP BY run_id, window ORDER BY run_id, window");
	sqlite3_stmt *st;
	if (!sql) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = db_prepare(c, sql, &st, e, "reading windows")))
		goto out;
	sqlite3_bind_text(st, 1, prefix ? prefix : "", -1, SQLITE_STATIC);
	size_t ccap = 0;
	int r;
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
	sqlite3_finalize(st);
out:
	free(list);
	free(sql);
	if (rc)
		out_table_free(t);
	return rc;
}
