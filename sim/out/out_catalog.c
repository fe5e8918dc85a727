/* out_catalog — see out_catalog.h: the schema and its migrations, the
 * run_config keys, the results directory and opening and closing the
 * catalog. Writing a run's row is in out_catalog_write.c, queries in
 * out_catalog_query.c, the capacity and windows tables in
 * out_catalog_tables.c.
 */
#include "sim/base/mem.h"
#include "sim/out/out_catalog_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Which ledger columns table runs has; *missing counts the others (0 when
 * there is no table runs yet: load_columns reports that). */
static int ledger_have(out_catalog_t *c, int have[N_LEDGER], int *missing, err_t *e)
{
	sqlite3_stmt *st;
	if (out_cat_db_prepare(c, "SELECT name FROM pragma_table_info('runs')", &st, e,
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
		return out_cat_db_err(c, e, "migrating");
	rc = ledger_have(c, have, &missing, e);
	for (size_t k = 0; !rc && k < N_LEDGER; k++) {
		char sql[256];
		snprintf(sql, sizeof sql, "ALTER TABLE runs ADD COLUMN %s %s", ledger_cols[k].name,
			 ledger_cols[k].decl);
		if (!have[k] && sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK)
			rc = out_cat_db_err(c, e, "migrating (adding the ledger columns)");
	}
	if (!rc && missing && !have[N_LEDGER - 1] &&
	    sqlite3_exec(c->db, "UPDATE runs SET stale = 1 WHERE status = 'done'", NULL, NULL,
			 NULL) != SQLITE_OK)
		rc = out_cat_db_err(c, e, "migrating");
	return out_cat_tx_end(c, rc, e);
}

/* Whether table runs has column name. */
static int has_column(out_catalog_t *c, const char *name, int *have, err_t *e)
{
	sqlite3_stmt *st;
	if (out_cat_db_prepare(c, "SELECT 1 FROM pragma_table_info('runs') WHERE name = ?", &st, e,
	               "reading the schema"))
		return KS_EIO;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int r = sqlite3_step(st);
	*have = r == SQLITE_ROW;
	sqlite3_finalize(st);
	return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : out_cat_db_err(c, e, "reading the schema");
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
		return out_cat_db_err(c, e, "migrating");
	rc = has_column(c, "inputs", &have, e);
	if (rc || have)
		return out_cat_tx_end(c, rc, e);
	if (sqlite3_create_function(c->db, "kvsim_reads_files", 1, SQLITE_UTF8, NULL,
				    sql_reads_files, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(c->db,
			 "ALTER TABLE runs ADD COLUMN inputs TEXT;"
			 "UPDATE runs SET status = 'unverified', error = 'made before input files "
			 "were digested: its inputs cannot be verified; a sweep runs it again'"
			 " WHERE status = 'done' AND kvsim_reads_files(config);"
			 "UPDATE runs SET inputs = '' WHERE status = 'done';",
			 NULL, NULL, NULL) != SQLITE_OK)
		rc = out_cat_db_err(c, e, "migrating (adding the inputs column)");
	return out_cat_tx_end(c, rc, e);
}

/* ---- every config key of every run (table run_config) ------------------ */

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
int out_cat_keys_put(out_catalog_t *c, const char *id, const char *text, err_t *e)
{
	out_kv_t *kv;
	size_t n;
	if (out_config_pairs(text, &kv, &n))
		return err_set(e, KS_ENOMEM, "out of memory");
	sqlite3_stmt *st;
	int rc = out_cat_db_prepare(c, "DELETE FROM run_config WHERE run_id = ?", &st, e,
			    "recording config keys");
	if (!rc) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		rc = out_cat_exec_stmt(c, st, e, "recording config keys");
	}
	if (!rc &&
	    !(rc = out_cat_db_prepare(c,
	                              "INSERT OR REPLACE INTO run_config (run_id, key, value)"
	                              " VALUES (?, ?, ?)",
	                              &st, e, "recording config keys"))) {
		for (size_t i = 0; !rc && i < n; i++) {
			sqlite3_reset(st);
			sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, kv[i].key, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 3, kv[i].val, (int)kv[i].vlen, SQLITE_STATIC);
			if (sqlite3_step(st) != SQLITE_DONE)
				rc = out_cat_db_err(c, e, "recording config keys");
		}
		sqlite3_finalize(st);
	}
	char trace[4200], preset[64];
	trace_name(kv, n, trace, sizeof trace);
	kv_get(kv, n, "policy.preset", preset, sizeof preset);
	if (!rc &&
	    !(rc = out_cat_db_prepare(c, "UPDATE runs SET trace = ?, preset = ? WHERE id = ?", &st,
	                              e, "recording config keys"))) {
		sqlite3_bind_text(st, 1, trace, -1, SQLITE_STATIC);
		if (*preset)
			sqlite3_bind_text(st, 2, preset, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, id, -1, SQLITE_STATIC);
		rc = out_cat_exec_stmt(c, st, e, "recording config keys");
	}
	free(kv);
	return rc;
}

/* Fills parameter column name from each run's recorded config key where it
 * is NULL: another sweep's runs hold the value they ran with, not NULL.
 * Inside the caller's transaction. */
int out_cat_param_backfill(out_catalog_t *c, const char *name, err_t *e)
{
	char sql[600] = "UPDATE runs SET ";
	out_cat_quote_ident(sql, sizeof sql, name);
	strcat(sql, " = (SELECT value FROM run_config k WHERE k.run_id = runs.id AND k.key = ?1)"
		    " WHERE ");
	out_cat_quote_ident(sql, sizeof sql, name);
	strcat(sql, " IS NULL");
	sqlite3_stmt *st;
	if (out_cat_db_prepare(c, sql, &st, e, "filling a parameter column"))
		return KS_EIO;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	return out_cat_exec_stmt(c, st, e, "filling a parameter column");
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
	if (out_cat_db_prepare(c, "SELECT 1 FROM sqlite_master WHERE name = 'run_config'", &st, e,
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
		return out_cat_db_err(c, e, "migrating");
	if (sqlite3_exec(c->db,
			 "CREATE TABLE IF NOT EXISTS run_config (run_id TEXT NOT NULL, key TEXT "
			 "NOT NULL, value NUMERIC, PRIMARY KEY (run_id, key)) WITHOUT ROWID",
			 NULL, NULL, NULL) != SQLITE_OK)
		return out_cat_tx_end(
		    c, out_cat_db_err(c, e, "migrating (adding table run_config)"), e);
	sqlite3_stmt *st;
	if ((rc = out_cat_db_prepare(c, keys_missing_sql, &st, e, "migrating")))
		return out_cat_tx_end(c, rc, e);
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
		rc = out_cat_keys_put(c, rows[i].id, rows[i].text, e);
	for (size_t i = 0; i < n; i++)
		FREE_ALL(rows[i].id, rows[i].text);
	free(rows);
	if (!rc && !(rc = out_cat_db_prepare(c, "SELECT name FROM columns WHERE kind = 'param'",
	                                     &st, e, "migrating"))) {
		while (!rc && sqlite3_step(st) == SQLITE_ROW)
			rc = out_cat_param_backfill(c, (const char *)sqlite3_column_text(st, 0), e);
		sqlite3_finalize(st);
	}
	return out_cat_tx_end(c, rc, e);
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
		int rc = out_cat_db_err(c, e, "initialising");
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
		rc = out_cat_db_err(c, e, "initialising");
	if (!rc)
		rc = out_cat_load_columns(c, e);
	if (rc) {
		rc = out_cat_db_corrupt(c, rc, e);
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
