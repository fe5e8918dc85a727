/* out_catalog_query — queries of table runs (see out_catalog.h):
 * out_catalog_select with its column list, --where and sort, and
 * out_catalog_resolve.
 */
#include "sim/base/mem.h"
#include "sim/out/out_catalog_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/vec.h"

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
	const col_info_t *ci = out_cat_col_find(c, name);
	buf[0] = '\0';
	if (ci) {
		out_cat_quote_ident(buf, cap, name);
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
	int bad = out_cat_append(&o, &len, &cap, "");
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
			bad = out_cat_append(&o, &len, &cap, piece);
		} else {
			char *part = strndup(w + i, k - i);
			bad = !part || out_cat_append(&o, &len, &cap, part);
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
	if (out_cat_col_find(c, "git_rev")) /* absent from an old catalog read-only */
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

/* The query's SQL into *out (malloc'd): SELECT the n columns names (their
 * kinds and is_real into kinds and reals) FROM runs WHERE where ORDER BY
 * sort. */
static int select_sql(out_catalog_t *c, char *const *names, size_t n, const char **kinds,
		      int *reals, const char *where, const char *sort, char **out, err_t *e)
{
	char *sql = NULL, *qw = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	out_cat_append(&sql, &len, &cap, "SELECT ");
	for (size_t k = 0; k < n; k++) {
		char q[600];
		if (col_sql(c, names[k], q, sizeof q, &kinds[k], &reals[k])) {
			rc = col_unknown(c, "", names[k], e);
			goto out;
		}
		if ((k && out_cat_append(&sql, &len, &cap, ", ")) ||
		    out_cat_append(&sql, &len, &cap, q)) {
			rc = err_set(e, KS_ENOMEM, "out of memory");
			goto out;
		}
	}
	out_cat_append(&sql, &len, &cap, " FROM runs");
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
		out_cat_append(&sql, &len, &cap, " WHERE (");
		out_cat_append(&sql, &len, &cap, qw);
		out_cat_append(&sql, &len, &cap, "\n)");
	}
	out_cat_append(&sql, &len, &cap, " ORDER BY ");
	if (sort && *sort) {
		int desc = *sort == '-';
		const char *sc = sort + desc, *kind;
		char q[600];
		int real;
		if (col_sql(c, sc, q, sizeof q, &kind, &real)) {
			rc = col_unknown(c, "cannot sort by: ", sc, e);
			goto out;
		}
		out_cat_append(&sql, &len, &cap, q);
		out_cat_append(&sql, &len, &cap, desc ? " DESC, rowid" : ", rowid");
	} else {
		out_cat_append(&sql, &len, &cap, "rowid");
	}
	if (!sql)
		rc = err_set(e, KS_ENOMEM, "out of memory");
out:
	free(qw);
	if (rc)
		free(sql);
	else
		*out = sql;
	return rc;
}

/* Prepares the query sql as exactly one statement (KS_EINPUT otherwise). */
static int select_prepare(out_catalog_t *c, const char *sql, sqlite3_stmt **st, err_t *e)
{
	const char *tail = NULL;
	if (sqlite3_prepare_v2(c->db, sql, -1, st, &tail) != SQLITE_OK)
		return err_set(e, KS_EINPUT, "%s: bad query: %s", c->path, sqlite3_errmsg(c->db));
	if (!*st || (tail && tail[strspn(tail, " \t\r\n")])) {
		/* not expected after where_refused; never run part of a query */
		sqlite3_finalize(*st);
		return err_set(e, KS_EINPUT, "%s: bad query: more than one statement", c->path);
	}
	return 0;
}

/* Steps st to its end, each row into t's cells as text (t->ncols a row). */
static int select_rows(out_catalog_t *c, sqlite3_stmt *st, out_table_t *t, err_t *e)
{
	size_t n = t->ncols, ccap = 0; /* cells, n per row */
	int rc = 0, r;
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
	return rc;
}

int out_catalog_select(out_catalog_t *c, const char *columns, const char *where,
		       const char *sort, out_table_t *t, err_t *e)
{
	memset(t, 0, sizeof *t);
	char **names = NULL, *sql = NULL;
	const char **kinds = NULL;
	int *reals = NULL;
	size_t n = 0;
	int rc = 0;
	if (columns ? split_columns(c, columns, &names, &n) : default_columns(c, &names, &n)) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	if (!n) {
		rc = err_set(e, KS_EINPUT, "no columns selected");
		goto out;
	}
	kinds = calloc(n, sizeof *kinds);
	reals = calloc(n, sizeof *reals);
	if (!kinds || !reals) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	sqlite3_stmt *st;
	if ((rc = select_sql(c, names, n, kinds, reals, where, sort, &sql, e)) ||
	    (rc = select_prepare(c, sql, &st, e)))
		goto out;
	t->ncols = n;
	t->names = names;
	t->kinds = kinds;
	t->is_real = reals;
	names = NULL;
	kinds = NULL;
	reals = NULL;
	rc = select_rows(c, st, t, e);
	sqlite3_finalize(st);
out:
	for (size_t k = 0; names && k < n; k++)
		free(names[k]);
	FREE_ALL(names, sql, kinds, reals);
	if (rc)
		out_table_free(t);
	return rc;
}

int out_catalog_resolve(out_catalog_t *c, const char *prefix, char id[65], err_t *e)
{
	sqlite3_stmt *st;
	if (out_cat_db_prepare(c,
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
