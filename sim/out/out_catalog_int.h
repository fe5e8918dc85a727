/* out_catalog_int — what the catalog's files share (see out_catalog.h):
 * the open catalog with its cached column list, SQLite errors turned into
 * err_t messages, transactions, and the run_config keys. Internal to
 * sim/out; not an API. Functions that can fail return 0 or a KS_E* code
 * with e set (KS_EIO naming the catalog's path and what was being done).
 */
#ifndef KVSIM_OUT_CATALOG_INT_H
#define KVSIM_OUT_CATALOG_INT_H

#include <sqlite3.h>
#include <stddef.h>

#include "sim/out/out_catalog.h"

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

/* ---- the connection (out_catalog_db.c) ---------------------------------- */

/* "param", "metric" or (anything else) "run", as a static string. */
const char *out_cat_kind_static(const char *k);
/* KS_EIO with the file's damage in e when the failure rc came from a
 * damaged file, else rc. */
int out_cat_db_corrupt(out_catalog_t *c, int rc, err_t *e);
/* KS_EIO: "PATH: what: SQLite's message" (or the damage, db_corrupt). */
int out_cat_db_err(out_catalog_t *c, err_t *e, const char *what);
int out_cat_db_prepare(out_catalog_t *c, const char *sql, sqlite3_stmt **st, err_t *e,
		       const char *what);
/* Steps st once and finalizes it: 0, or db_err naming what. */
int out_cat_exec_stmt(out_catalog_t *c, sqlite3_stmt *st, err_t *e, const char *what);
int out_cat_tx_end(out_catalog_t *c, int rc, err_t *e);
/* The column list in memory: one more column; a column by name (NULL: none). */
int out_cat_col_add_mem(out_catalog_t *c, const char *name, const char *kind, int is_real);
const col_info_t *out_cat_col_find(const out_catalog_t *c, const char *name);
void out_cat_quote_ident(char *buf, size_t cap, const char *name);
/* Appends s to the growing text *buf (*len bytes, *cap allocated); -1 when
 * out of memory. */
int out_cat_append(char **buf, size_t *len, size_t *cap, const char *s);
/* Reads the column list of table runs (KS_EINPUT when there is none). */
int out_cat_load_columns(out_catalog_t *c, err_t *e);
int out_cat_cols_refresh(out_catalog_t *c, err_t *e);

/* ---- config keys (out_catalog.c) ---------------------------------------- */

int out_cat_keys_put(out_catalog_t *c, const char *id, const char *text, err_t *e);
int out_cat_param_backfill(out_catalog_t *c, const char *name, err_t *e);

#endif
