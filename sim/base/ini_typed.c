/* ini_typed — INI files into structs by tables of typed keys (see
 * ini_typed.h). ini_scan reads the lines; this file finds each key's row,
 * refuses what the row does not take, and stores the value through the
 * config's own parser (cfg_field_parse), so a file and a config say the
 * same thing about the same mistake.
 */
#include "sim/base/ini_typed.h"

#include "sim/base/cfg_int.h"
#include "sim/base/ini_scan.h"
#include "sim/base/vec.h"

#include <stdlib.h>
#include <string.h>

/* A row or header met in the text: row < nkey a key, nkey + s the first
 * header of section s; id the family's parameter (0 for a plain one). */
typedef struct ini_seen {
	size_t row;
	int id;
	int line;
} ini_seen_t;

struct ini_run {
	const ini_table_t *t;
	const char *origin;
	void *dst;
	size_t nkey; /* rows in all */
	ini_seen_t *seen;
	size_t nseen, cap;
};

static const ini_key_t *row_at(const ini_table_t *t, size_t i)
{
	for (size_t g = 0; g < t->nrows; g++) {
		const ini_rows_t *rs = &t->rows[g];
		if (i < rs->n)
			return (const ini_key_t *)((const char *)rs->first +
			                           i * (rs->stride ? rs->stride : sizeof(ini_key_t)));
		i -= rs->n;
	}
	return NULL;
}

static const cfg_key_t *row_key(const void *set, size_t i)
{
	const ini_run_t *r = set;
	return &row_at(r->t, i)->t.key;
}

/* The section a row belongs to, nsec when none (a table error). */
static size_t row_section(const ini_table_t *t, const ini_key_t *k)
{
	size_t s = 0;
	while (s < t->nsec && strcmp(t->sec[s].name, k->t.key.section))
		s++;
	return s;
}

/* The line (row, id) was met on, 0 if not. */
static int seen_line(const ini_run_t *r, size_t row, int id)
{
	for (size_t i = 0; i < r->nseen; i++)
		if (r->seen[i].row == row && r->seen[i].id == id)
			return r->seen[i].line;
	return 0;
}

static int seen_add(ini_run_t *r, size_t row, int id, int line)
{
	if (VEC_GROW(r->seen, r->cap, r->nseen + 1, 32))
		return KS_ENOMEM;
	r->seen[r->nseen++] = (ini_seen_t){row, id, line};
	return 0;
}

/* The section header name stands for: its index with *id set, -1 when no
 * section matches, -2 when a family's parameter is refused (why set). */
static long section_find(const ini_table_t *t, const char *name, int *id, char *why, size_t n)
{
	for (size_t s = 0; s < t->nsec; s++)
		if (!t->sec[s].fixed && !strcmp(name, t->sec[s].name)) {
			*id = 0;
			return (long)s;
		}
	for (size_t s = 0; s < t->nsec; s++) {
		const ini_section_t *f = &t->sec[s];
		if (!f->fixed || strncmp(name, f->name, f->fixed))
			continue;
		*id = f->param(name + f->fixed, why, n);
		return *id < 0 ? -2 : (long)s;
	}
	return -1;
}

/* " (known: A, B, ...)" listing the names the table has: its sections
 * (sec NULL), or the keys of section sec. */
static void known_list(const ini_run_t *r, const char *sec, char *out, size_t len)
{
	size_t k = (size_t)snprintf(out, len, " (known:");
	size_t n = sec ? r->nkey : r->t->nsec;
	for (size_t i = 0, first = 1; i < n && k < len; i++) {
		const cfg_key_t *key = sec ? row_key(r, i) : NULL;
		if (sec && strcmp(key->section, sec))
			continue;
		k += (size_t)snprintf(out + k, len - k, sec ? "%s %s" : "%s [%s]", first ? "" : ",",
		                      sec ? key->name : r->t->sec[i].name);
		first = 0;
	}
	if (k < len)
		snprintf(out + k, len - k, ")");
}

static int on_section(void *user, const char *name, int line, err_t *e)
{
	ini_run_t *r = user;
	char why[512];
	int id;
	if (strlen(name) > CFG_NAME_MAX)
		return err_set(e, KS_EINPUT, "[%.60s...]: section name longer than %d bytes", name,
		               CFG_NAME_MAX);
	long s = section_find(r->t, name, &id, why, sizeof why);
	if (s == -2)
		return err_set(e, KS_EINPUT, "[%s]: %s", name, why);
	if (s < 0) {
		ini_names_t names = {r, r->nkey, row_key};
		ini_suggest_section(&names, name, why, sizeof why);
		if (!*why)
			known_list(r, NULL, why, sizeof why);
		return err_set(e, KS_EINPUT, "[%s]: unknown section%s", name, why);
	}
	if (!seen_line(r, r->nkey + (size_t)s, id) && seen_add(r, r->nkey + (size_t)s, id, line))
		return err_set(e, KS_ENOMEM, "out of memory");
	return 0;
}

/* Stores text as row k's value in the struct at base: 0, or a KS_* code
 * with the reason in why. */
static int key_store(const ini_key_t *k, void *base, const char *text, char *why, size_t n)
{
	char *field = (char *)base + k->t.at.off;
	if ((k->flags & INI_NONEMPTY) && !*text) {
		snprintf(why, n, "empty value");
		return KS_EINPUT;
	}
	if (k->parse)
		return k->parse(text, field, why, n) ? KS_EINPUT : 0;
	if (k->len) {
		const char *bad = cfg_str_unstorable(text);
		size_t l = strlen(text);
		if (bad || l >= k->len) {
			if (bad)
				snprintf(why, n, "%s", bad);
			else
				snprintf(why, n, "'%.40s...' is too long (at most %zu characters)", text,
				         k->len - 1);
			return KS_EINPUT;
		}
		memcpy(field, text, l + 1);
		return 0;
	}
	int flags = (k->flags & INI_WHOLE_E ? CFG_VAL_WHOLE_E : 0) |
	            (k->flags & INI_ABOVE_MIN ? CFG_VAL_ABOVE_MIN : 0);
	return cfg_field_parse(&k->t, base, text, flags, why, n);
}

static int on_key(void *user, const char *section, const char *name, const char *value, int line,
                  err_t *e)
{
	ini_run_t *r = user;
	char why[1400];
	int id;
	long s = section_find(r->t, section, &id, why, sizeof why);
	if (s < 0) /* refused at its header already */
		return err_set(e, KS_EINPUT, "[%s] %s: unknown section", section, name);
	const ini_section_t *sec = &r->t->sec[s];
	size_t row = 0;
	while (row < r->nkey && (strcmp(row_key(r, row)->section, sec->name) ||
	                         strcmp(row_key(r, row)->name, name)))
		row++;
	if (row == r->nkey) {
		if (sec->flags & INI_OPEN)
			return 0;
		ini_names_t names = {r, r->nkey, row_key};
		ini_suggest_key(&names, sec->name, name, why, sizeof why);
		if (!*why)
			known_list(r, sec->name, why, sizeof why);
		return err_set(e, KS_EINPUT, "[%s] %s: unknown key%s", section, name, why);
	}
	int first = seen_line(r, row, id);
	if (first)
		return err_set(e, KS_EINPUT, "[%s] %s: duplicate key (first set on line %d)", section,
		               name, first);
	void *base = sec->fixed ? sec->instance(r->dst, id, why, sizeof why) : r->dst;
	int rc = base ? key_store(row_at(r->t, row), base, value, why, sizeof why) : KS_EINPUT;
	if (rc)
		return err_set(e, rc, "[%s] %s: %s", section, name, why);
	return seen_add(r, row, id, line) ? err_set(e, KS_ENOMEM, "out of memory") : 0;
}

/* The number of the text's last line (1 for an empty text). */
static int last_line(const char *text)
{
	int n = 0;
	for (const char *p = text; *p; p++)
		n += *p == '\n';
	n += *text && text[strlen(text) - 1] != '\n';
	return n ? n : 1;
}

/* Every required key of a plain section given: else the first missing,
 * named at its section's header (the text's last line without one). */
static int check_required(const ini_run_t *r, const char *text, err_t *e)
{
	for (size_t i = 0; i < r->nkey; i++) {
		const ini_key_t *k = row_at(r->t, i);
		size_t s = row_section(r->t, k);
		if (!(k->flags & INI_REQUIRED) || r->t->sec[s].fixed || seen_line(r, i, 0))
			continue;
		int line = seen_line(r, r->nkey + s, 0);
		return err_set(e, KS_EINPUT, "%s:%d: [%s] %s: missing required key", r->origin,
		               line ? line : last_line(text), k->t.key.section, k->t.key.name);
	}
	return 0;
}

/* A row naming no section of its table: a programming error. */
static int check_table(const ini_run_t *r, err_t *e)
{
	for (size_t i = 0; i < r->nkey; i++) {
		const ini_key_t *k = row_at(r->t, i);
		if (row_section(r->t, k) == r->t->nsec)
			return err_set(e, KS_EINPUT, "%s: table: [%s] %s: no such section in the table",
			               r->origin, k->t.key.section, k->t.key.name);
	}
	return 0;
}

int ini_read(const ini_table_t *t, const char *origin, const char *text, void *dst, err_t *e)
{
	ini_run_t r = {.t = t, .origin = origin, .dst = dst};
	for (size_t g = 0; g < t->nrows; g++)
		r.nkey += t->rows[g].n;
	static const ini_scan_ops_t ops = {on_section, on_key};
	int rc = check_table(&r, e);
	if (!rc)
		rc = ini_scan(origin, text, &ops, &r, e);
	if (!rc)
		rc = check_required(&r, text, e);
	if (!rc && t->finish)
		rc = t->finish(dst, &r, e);
	free(r.seen);
	return rc;
}

typedef struct file_read {
	const ini_table_t *t;
	void *dst;
} file_read_t;

static int read_text(void *obj, const char *origin, const char *text, err_t *e)
{
	file_read_t *f = obj;
	return ini_read(f->t, origin, text, f->dst, e);
}

int ini_read_file(const ini_table_t *t, const char *path, void *dst, err_t *e)
{
	file_read_t f = {t, dst};
	return ini_file_parse(path, read_text, &f, e);
}

const char *ini_origin(const ini_run_t *r)
{
	return r->origin;
}

int ini_line(const ini_run_t *r, size_t row, int id)
{
	return row < r->nkey ? seen_line(r, row, id) : 0;
}

int ini_section_line(const ini_run_t *r, size_t row, int id)
{
	return row < r->nkey ? seen_line(r, r->nkey + row_section(r->t, row_at(r->t, row)), id) : 0;
}
