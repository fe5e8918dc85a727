/* ini_typed — an INI file read into a struct through a table of typed keys:
 * the hardware and model specs, the compute calibration and the transfer
 * calibration of models/ (the experiment config has its schema, cfg.h;
 * both read through ini_scan.h and word their errors alike).
 *
 * A table lists sections and keys. A key row is a cfg_tkey_t (cfg.h: its
 * [section] and name, type, range, unit and doc, and the field of the
 * struct its value goes to) with a few rules of a file's own (ini_key_t).
 * A section is plain ("compute") or a family: one name with a parameter
 * ("allreduce.tpN", "link.KIND"), whose rows fill the struct the table's
 * instance hook returns for that parameter. Values are checked as the
 * config checks them (cfg_val.c: whole numbers, finite numbers, ranges
 * with their units, enum names with the nearest one suggested), and each
 * error is KS_EINPUT "ORIGIN:LINE: [section] key: reason": an unknown
 * section or key (with "did you mean", else the known ones listed), a bad
 * value, a key given twice ("duplicate key (first set on line N)"), a
 * required key missing (at its section's header, else the last line).
 *
 * ini_read fills dst in place and may leave it half-filled on error: the
 * callers read into a copy and keep it only on success. Nothing is
 * allocated that outlives the call; text values are copied into the
 * struct's own char arrays.
 */
#ifndef KVSIM_INI_TYPED_H
#define KVSIM_INI_TYPED_H

#include <stddef.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"

/* ini_key_t.flags */
enum {
	INI_REQUIRED = 1,  /* a file must give the key (a plain section's key) */
	INI_WHOLE_E = 2,   /* an int key also takes a whole number in e-notation
	                    * or with a point ("80e9", "2.5e3", "32.0") */
	INI_ABOVE_MIN = 4, /* a ranged number lies in (min, max]: min is refused */
	INI_NONEMPTY = 8   /* a text key: an empty value is refused */
};

/* One key of a file. Text into a char array: t.key.type CFG_STR, t.at
 * {CFG_F_NONE, offsetof(the array)} and len its size (a longer value is
 * refused). A value of a syntax of its own (a list): parse, which reads
 * text into the member at field (t.at.off) and returns 0, or -1 with the
 * reason in why (n bytes); t.key.type only documents it then. */
typedef struct ini_key {
	cfg_tkey_t t;
	unsigned flags;
	size_t len;
	int (*parse)(const char *text, void *field, char *why, size_t n);
} ini_key_t;

/* ini_section_t.flags */
enum {
	INI_OPEN = 1 /* keys not in the table are read and ignored (free-form
	              * notes beside the known keys) */
};

/* One section. A family's rows name it as written here ("link.KIND");
 * a header matches it when it begins with the first `fixed` bytes of name,
 * the rest being the parameter. */
typedef struct ini_section {
	const char *name;
	size_t fixed; /* 0: a plain section */
	unsigned flags;
	/* A family: the id (>= 0) of parameter text arg, or -1 with why (n
	 * bytes) saying what a parameter is. Called at each header. */
	int (*param)(const char *arg, char *why, size_t n);
	/* A family: the struct its rows fill for parameter id, found in dst or
	 * added to it; NULL with why when there is no room. Called at each key
	 * of the section, so an empty section adds nothing. */
	void *(*instance)(void *dst, int id, char *why, size_t n);
} ini_section_t;

/* Rows of a table: n rows from first, stride bytes apart (0:
 * sizeof(ini_key_t)), so a row may be a member of a larger struct, as in
 * the tables of models/ that declare a config key beside its file key. */
typedef struct ini_rows {
	const ini_key_t *first;
	size_t n, stride;
} ini_rows_t;

/* A reading in progress, for a table's finish hook (below). */
typedef struct ini_run ini_run_t;

typedef struct ini_table {
	const ini_section_t *sec;
	size_t nsec;
	const ini_rows_t *rows; /* rows numbered in order, across the groups */
	size_t nrows;
	/* Called once the whole text was read and every required key found:
	 * the checks across keys, which name a key with its line (ini_line)
	 * in "ORIGIN:LINE: [section] key: reason". 0 or a KS_* code. NULL:
	 * none. */
	int (*finish)(void *dst, const ini_run_t *r, err_t *e);
} ini_table_t;

/* Reads text (named origin in messages) into dst by table t. */
int ini_read(const ini_table_t *t, const char *origin, const char *text, void *dst, err_t *e);
/* The same for the file at path (ini_file_parse: a NUL byte is refused). */
int ini_read_file(const ini_table_t *t, const char *path, void *dst, err_t *e);

/* For finish hooks: the text's origin; the line row `row` of the
 * section instance id (0 for a plain section) was set on, 0 when it was
 * not; the first header line of the section of that row and id, 0 when
 * there is none. */
const char *ini_origin(const ini_run_t *r);
int ini_line(const ini_run_t *r, size_t row, int id);
int ini_section_line(const ini_run_t *r, size_t row, int id);

#endif
