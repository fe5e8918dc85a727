/* cfg — see cfg.h.
 *
 * libinih does the INI tokenising; we feed it through ini_parse_stream with
 * our own line reader so that every handler call knows its line number (the
 * distribution's libinih is built without INI_HANDLER_LINENO) and so that
 * section headers are checked even when the section holds no key. The reader
 * also strips leading blanks (any isspace() byte, as inih's lskip), which
 * turns off inih's indented-continuation lines: an indented "key = v" is an
 * ordinary assignment, never part of the previous value. A load is
 * all-or-nothing: values are staged and committed only when the whole text
 * is valid.
 */
#include "sim/base/mem.h"
#include "sim/base/cfg.h"
#include "sim/base/file.h"
#include "sim/base/near.h"
#include "sim/base/vec.h"
#include "sim/base/cli_voice.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <nettle/sha2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* inih keeps section and key names in 50-byte buffers (MAX_SECTION,
 * MAX_NAME in ini.c); longer schema names could never match. */
#define CFG_NAME_MAX 49

struct cfg_schema {
	const cfg_key_t **keys;
	char **choices;        /* per key: replacement choices (owned) or NULL */
	unsigned char *warned; /* per key: its "ignored" warning was written */
	struct cfg_val *defv;  /* per key: its parsed default (text owned) */
	const cfg_field_t **at; /* per key: its field (typed keys) or NULL */
	size_t n, cap;
	FILE *warn; /* cfg_finalize's warnings; NULL = none */
	const cfg_preset_t *presets;
	size_t npresets;
	size_t sel; /* index + 1 of the preset selector key, 0 = none */
	/* Sections whose keys act only under a condition (set_section_when). */
	struct swhen {
		const char *section;
		const cfg_when_t *w;
	} *swhen;
	size_t nswhen;
	/* Open-addressing index on (section, name): key index + 1, 0 = empty.
	 * Accessors run once per lookup, and some are called per request. */
	uint32_t *slot;
	size_t nslot; /* power of two, at least 2n */
};

struct cfg_val {
	char *text;   /* canonical text (owned) */
	int64_t i;    /* CFG_INT, CFG_BOOL (0/1) */
	double f;     /* CFG_FLOAT (and CFG_INT as double) */
	char *origin; /* "FILE:LINE", "--set" or "preset NAME" (owned); NULL = default */
	const cfg_preset_t *preset; /* the preset that set it, NULL if none did */
	/* A preset replaced a value of the built-in default experiment: that
	 * value's text and origin (owned), restored when the preset goes. */
	char *under_text, *under_origin;
	/* Order in which values were set (cfg_err_keys names the latest): 0 for
	 * a default, else the cfg's counter when the value was committed; a
	 * preset's value takes its selector's. */
	uint64_t seq, under_seq;
};
typedef struct cfg_val cfg_val_t;

struct cfg {
	const cfg_schema_t *s;
	size_t n; /* keys known when the cfg was made */
	cfg_val_t *v;
	uint64_t seq; /* the last value's seq */
};

/* ---- small helpers --------------------------------------------------- */

static char *str_dup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

const char *cfg_type_name(cfg_type_t t)
{
	switch (t) {
	case CFG_INT:
		return "int";
	case CFG_FLOAT:
		return "float";
	case CFG_BOOL:
		return "bool";
	case CFG_STR:
		return "string";
	case CFG_ENUM:
		return "enum";
	}
	return "?";
}

static bool name_ok(const char *s, bool allow_dot)
{
	if (!s || !*s || strlen(s) > CFG_NAME_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-' ||
		      (allow_dot && *p == '.')))
			return false;
	return s[0] != '.' && s[strlen(s) - 1] != '.';
}

/* ---- schema ---------------------------------------------------------- */

cfg_schema_t *cfg_schema_new(void)
{
	cfg_schema_t *s = calloc(1, sizeof(cfg_schema_t));
	if (s)
		s->warn = stderr;
	return s;
}

void cfg_schema_set_warnings(cfg_schema_t *s, FILE *f)
{
	s->warn = f;
}

FILE *cfg_schema_warnings(const cfg_schema_t *s)
{
	return s->warn;
}

void cfg_schema_free(cfg_schema_t *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->choices[i]);
		free(s->defv[i].text);
	}
	FREE_ALL(s->choices, s->defv, s->at, s->warned, s->keys, s->slot, s->swhen, s);
}

/* FNV-1a over section, a separator, and name. */
static size_t key_hash(const char *section, const char *name)
{
	uint64_t h = 14695981039346656037ull;
	for (const char *p = section; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ 0xff) * 1099511628211ull;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return (size_t)h;
}

static void slot_put(uint32_t *slot, size_t nslot, const cfg_key_t *k, size_t i)
{
	size_t h = key_hash(k->section, k->name) & (nslot - 1);
	while (slot[h])
		h = (h + 1) & (nslot - 1);
	slot[h] = (uint32_t)(i + 1);
}

/* Makes room in the index for n keys in all. */
static int slot_reserve(cfg_schema_t *s, size_t n)
{
	if (2 * n <= s->nslot)
		return 0;
	size_t ns = s->nslot ? s->nslot : 128;
	while (ns < 2 * n)
		ns *= 2;
	uint32_t *slot = calloc(ns, sizeof *slot);
	if (!slot)
		return KS_ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		slot_put(slot, ns, s->keys[i], i);
	free(s->slot);
	s->slot = slot;
	s->nslot = ns;
	return 0;
}

static ssize_t schema_index(const cfg_schema_t *s, const char *section, const char *name)
{
	if (!s->nslot)
		return -1;
	for (size_t h = key_hash(section, name) & (s->nslot - 1); s->slot[h];
	     h = (h + 1) & (s->nslot - 1)) {
		const cfg_key_t *k = s->keys[s->slot[h] - 1];
		if (!strcmp(k->name, name) && !strcmp(k->section, section))
			return (ssize_t)s->slot[h] - 1;
	}
	return -1;
}

static bool section_known(const cfg_schema_t *s, const char *section)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->keys[i]->section, section))
			return true;
	return false;
}

static const char *key_choices(const cfg_schema_t *s, size_t i)
{
	if (s->choices[i])
		return s->choices[i];
	return s->keys[i]->choices ? s->keys[i]->choices : "";
}

/* Whether word is one of the comma-separated choices (blanks around commas
 * ignored). */
/* Steps *p over one comma-separated choice: its text starts at *word and is
 * *len bytes long without the blanks around it. false at the end. */
static bool choice_next(const char **p, const char **word, size_t *len)
{
	while (**p == ' ' || **p == ',')
		(*p)++;
	if (!**p)
		return false;
	const char *q = *p;
	while (*q && *q != ',')
		q++;
	const char *e = q;
	while (e > *p && e[-1] == ' ')
		e--;
	*word = *p;
	*len = (size_t)(e - *p);
	*p = q;
	return true;
}

static bool choice_has(const char *choices, const char *word)
{
	size_t wl = strlen(word), l;
	const char *p = choices, *c;
	while (choice_next(&p, &c, &l))
		if (l == wl && wl && !strncmp(c, word, wl))
			return true;
	return false;
}

/* The choice nearest to word, copied into out (empty if none). */
static void choice_nearest(const char *choices, const char *word, char *out, size_t outlen)
{
	size_t best = (size_t)-1;
	out[0] = '\0';
	const char *p = choices, *c;
	size_t l;
	while (choice_next(&p, &c, &l)) {
		char buf[128];
		l = l < sizeof buf - 1 ? l : sizeof buf - 1;
		memcpy(buf, c, l);
		buf[l] = '\0';
		if (l) {
			size_t d = near_distance(word, buf);
			if (d < best) {
				best = d;
				snprintf(out, outlen, "%s", buf);
			}
		}
	}
	if (best == (size_t)-1 || !near_close(word, best))
		out[0] = '\0';
}

/* Shortest %g text that reads back as exactly x. */
static void float_text(double x, char *buf, size_t len)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			return;
	}
}

int cfg_parse_whole(const char *text, int flags, int64_t lo, int64_t hi, int64_t *out)
{
	const char *p = text + (*text == '+' || *text == '-');
	size_t digits = strspn(p, "0123456789");
	if (digits && !p[digits]) {
		char *end;
		errno = 0;
		long long x = strtoll(text, &end, 10);
		if (errno == ERANGE || x < lo || x > hi)
			return CFG_OUT_OF_RANGE;
		*out = x;
		return 0;
	}
	/* e-notation: only digits, point, exponent and signs (no hex, inf, nan, blanks) */
	if (!(flags & CFG_WHOLE_ENOTATION) || !*text || text[strspn(text, "0123456789.eE+-")])
		return CFG_NOT_WHOLE;
	char *end;
	errno = 0;
	double d = strtod(text, &end);
	if (end == text || *end)
		return CFG_NOT_WHOLE;
	if (isinf(d))
		return CFG_OUT_OF_RANGE; /* whole, past any double */
	if (errno == ERANGE || floor(d) != d)
		return CFG_NOT_WHOLE; /* a fraction (underflow: a tiny one) */
	/* 2^63 is the first double past INT64_MAX */
	if (d < (double)lo || d >= 9223372036854775808.0 || (int64_t)d > hi || (int64_t)d < lo)
		return CFG_OUT_OF_RANGE;
	*out = (int64_t)d;
	return 0;
}

/* An inclusive schema bound of an integer key as int64 (saturating). */
static int64_t int_bound(double b)
{
	if (b >= 9223372036854775808.0)
		return INT64_MAX;
	if (b <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)b;
}

/* Parses text as a value of key k into *v (v->text left NULL) or writes the
 * reason into why. check_choices is false for built-in defaults of enums whose
 * choices are filled in later. */
static int val_parse(const cfg_key_t *k, const char *choices, const char *text, cfg_val_t *v,
                     bool check_choices, char *why, size_t whylen)
{
	const char *unit = k->unit && *k->unit ? k->unit : "";
	const char *sp = *unit ? " " : "";
	bool ranged = k->min < k->max;
	char lo[32] = "", hi[32] = "";
	if (ranged) {
		float_text(k->min, lo, sizeof lo);
		float_text(k->max, hi, sizeof hi);
	}
	v->i = 0;
	v->f = 0;
	switch (k->type) {
	case CFG_INT: {
		int64_t x, ilo = ranged ? int_bound(ceil(k->min)) : INT64_MIN,
			   ihi = ranged ? int_bound(floor(k->max)) : INT64_MAX;
		int r = cfg_parse_whole(text, 0, ilo, ihi, &x);
		if (r == CFG_NOT_WHOLE) {
			snprintf(why, whylen, "expected an integer, got '%s'", text);
			return -1;
		}
		if (r == CFG_OUT_OF_RANGE) {
			if (!ranged) { /* the range of a 64-bit integer */
				snprintf(lo, sizeof lo, "%lld", (long long)ilo);
				snprintf(hi, sizeof hi, "%lld", (long long)ihi);
			}
			snprintf(why, whylen, "%s%s%s is out of range [%s, %s]", text, sp, unit, lo,
			         hi);
			return -1;
		}
		v->i = x;
		v->f = (double)x;
		return 0;
	}
	case CFG_FLOAT: {
		char *end;
		double x = strtod(text, &end);
		if (!*text || *end || isspace((unsigned char)*text)) {
			snprintf(why, whylen, "expected a number, got '%s'", text);
			return -1;
		}
		if (!isfinite(x)) {
			snprintf(why, whylen, "expected a finite number, got '%s'", text);
			return -1;
		}
		if (ranged && (x < k->min || x > k->max)) {
			snprintf(why, whylen, "%s%s%s is out of range [%s, %s]", text, sp, unit, lo,
			         hi);
			return -1;
		}
		v->f = x;
		return 0;
	}
	case CFG_BOOL: {
		static const char *const yes[] = {"true", "yes", "on", "1"};
		static const char *const no[] = {"false", "no", "off", "0"};
		for (size_t j = 0; j < 4; j++) {
			if (!strcasecmp(text, yes[j])) {
				v->i = 1;
				return 0;
			}
			if (!strcasecmp(text, no[j])) {
				v->i = 0;
				return 0;
			}
		}
		snprintf(why, whylen,
		         "expected a boolean (true/false, yes/no, on/off, 1/0), got '%s'", text);
		return -1;
	}
	case CFG_STR:
		return 0;
	case CFG_ENUM:
		if (check_choices && !choice_has(choices, text)) {
			char near[128];
			choice_nearest(choices, text, near, sizeof near);
			if (*near)
				snprintf(why, whylen, "'%s' is not one of: %s (did you mean '%s'?)",
				         text, choices, near);
			else
				snprintf(why, whylen, "'%s' is not one of: %s", text, choices);
			return -1;
		}
		return 0;
	}
	snprintf(why, whylen, "bad key type");
	return -1;
}

/* Canonical text of a parsed value: what cfg_write prints and cfg_str gives. */
static char *val_canonical(const cfg_key_t *k, const char *text, const cfg_val_t *v)
{
	char buf[64];
	switch (k->type) {
	case CFG_INT:
		snprintf(buf, sizeof buf, "%lld", (long long)v->i);
		return str_dup(buf);
	case CFG_FLOAT:
		float_text(v->f, buf, sizeof buf);
		return str_dup(buf);
	case CFG_BOOL:
		return str_dup(v->i ? "true" : "false");
	case CFG_STR:
	case CFG_ENUM:
		break;
	}
	return str_dup(text);
}

/* Whether a string value survives a write/load round trip through inih:
 * no line breaks, no blanks at either end (inih strips them) and no ';'
 * that the written line "key = VALUE" puts after a blank (an inline
 * comment): not after a blank inside, and not first, since "key =;x" keeps
 * the ';' but the writer's "key = ;x" loses the value. Such values are
 * refused wherever they come from (file, --set, preset, schema default)
 * rather than quoted, so the written config stays plain INI that reads the
 * same in any INI reader, and /config in HDF5 files loads back unchanged. */
static const char *str_unstorable(const char *v)
{
	size_t n = strlen(v);
	if (n && (isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1])))
		return "value cannot begin or end with a blank";
	if (*v == ';')
		return "value cannot begin with ';' (written back as 'key = ;...', it reads "
		       "as a comment)";
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)v[i] < 0x20 && v[i] != '\t')
			return "value cannot contain control characters";
		if (v[i] == ';' && i > 0 && isspace((unsigned char)v[i - 1]))
			return "value cannot contain ' ;' (it starts a comment)";
	}
	return NULL;
}

/* The names of map joined by commas (malloc'd), "" for an empty map. */
static char *map_join(const cfg_enum_t *map)
{
	size_t len = 1;
	for (const cfg_enum_t *m = map; m->name; m++)
		len += strlen(m->name) + 1;
	char *out = malloc(len), *q = out;
	if (!out)
		return NULL;
	*q = '\0';
	for (const cfg_enum_t *m = map; m->name; m++)
		q += sprintf(q, "%s%s", q == out ? "" : ",", m->name);
	return out;
}

const char *cfg_tkey_choices(const cfg_tkey_t *t, char *buf, size_t n)
{
	if (t->key.choices || !t->at.map)
		return t->key.choices ? t->key.choices : "";
	size_t used = 0;
	buf[0] = '\0';
	for (const cfg_enum_t *m = t->at.map; m->name && used < n; m++) {
		int w = snprintf(buf + used, n - used, "%s%s", used ? "," : "", m->name);
		used = w < 0 ? n : used + (size_t)w;
	}
	return buf;
}

/* Why field f cannot hold the values of key k, or NULL (see cfg.h). */
static const char *field_bad(const cfg_key_t *k, const cfg_field_t *f)
{
	bool ranged = k->min < k->max;
	switch (f->kind) {
	case CFG_F_NONE:
		return NULL;
	case CFG_F_I64:
		return k->type == CFG_INT ? NULL : "an int64 field needs an int key";
	case CFG_F_U32:
		return k->type == CFG_INT && ranged && k->min >= 0 && k->max <= 4294967295.0
		           ? NULL
		           : "a uint32 field needs an int key ranged within [0, 2^32-1]";
	case CFG_F_U64:
		return k->type == CFG_INT && ranged && k->min >= 0
		           ? NULL
		           : "a uint64 field needs an int key ranged from 0 up";
	case CFG_F_DOUBLE:
		return k->type == CFG_INT || k->type == CFG_FLOAT ? NULL
		                                                  : "a double field needs a number key";
	case CFG_F_BOOL:
		return k->type == CFG_BOOL ? NULL : "a bool field needs a bool key";
	case CFG_F_STR:
	case CFG_F_STRDUP:
		return k->type == CFG_STR || k->type == CFG_ENUM ? NULL
		                                                 : "a string field needs a text key";
	case CFG_F_ENUM:
		return k->type == CFG_ENUM && f->map ? NULL
		                                           : "an enum field needs an enum key with a map";
	case CFG_F_LOAD:
		return k->type == CFG_STR && !k->owner ? NULL
		                                       : "a loader's directive is a string key of no policy";
	}
	return "unknown field kind";
}

static int schema_bad(const cfg_key_t *k, const char *why)
{
	/* A broken schema is a programming error in a module's key array; say
	 * which key so the author finds it, and let the caller fail. */
	fprintf(stderr, "kvsim: config schema: [%s] %s: %s\n", k->section ? k->section : "(null)",
	        k->name ? k->name : "(null)", why);
	return KS_EINPUT;
}

/* Makes room for n more keys. */
static int schema_reserve(cfg_schema_t *s, size_t n)
{
	if (s->n + n > s->cap) {
		size_t cap = vec_next_cap(s->cap, s->n + n, 64);
		if (!cap || VEC_RESIZE(s->keys, cap) || VEC_RESIZE(s->choices, cap) ||
		    VEC_RESIZE(s->warned, cap) || VEC_RESIZE(s->defv, cap) ||
		    VEC_RESIZE(s->at, cap))
			return KS_ENOMEM;
		s->cap = cap;
	}
	return slot_reserve(s, s->n + n);
}

/* Checks key k (with field f, NULL for an untyped key) and adds it. */
static int schema_add_one(cfg_schema_t *s, const cfg_key_t *k, const cfg_field_t *f)
{
	char why[256];
	cfg_val_t v = {0};
	const cfg_enum_t *map = f ? f->map : NULL;
	if (!name_ok(k->section, true))
		return schema_bad(k, "section must be 1-49 of [A-Za-z0-9_.-]");
	if (!name_ok(k->name, false))
		return schema_bad(k, "name must be 1-49 of [A-Za-z0-9_-]");
	if (!k->def)
		return schema_bad(k, "no default");
	if (schema_index(s, k->section, k->name) >= 0)
		return schema_bad(k, "defined twice");
	if (f && f->alias_of && !(strchr(f->alias_of, '.') && name_ok(f->alias_of, true)))
		return schema_bad(k, "alias_of must be \"section.name\"");
	if (map && k->choices)
		return schema_bad(k, "an enum with a map takes its choices from it (choices NULL)");
	if (k->type == CFG_ENUM && !k->choices && !map)
		return schema_bad(k, "enum without choices (use \"\" to fill later)");
	if (k->type == CFG_STR && str_unstorable(k->def))
		return schema_bad(k, str_unstorable(k->def));
	const char *fbad = f ? field_bad(k, f) : NULL;
	if (fbad)
		return schema_bad(k, fbad);
	char *derived = map ? map_join(map) : NULL;
	if (map && !derived)
		return KS_ENOMEM;
	const char *ch = derived ? derived : k->choices;
	bool check = k->type == CFG_ENUM && *ch;
	if (val_parse(k, ch, k->def, &v, check, why, sizeof why)) {
		free(derived);
		return schema_bad(k, why);
	}
	if (!(v.text = val_canonical(k, k->def, &v)) || schema_reserve(s, 1)) {
		free(v.text);
		free(derived);
		return KS_ENOMEM;
	}
	s->keys[s->n] = k;
	s->choices[s->n] = derived;
	s->defv[s->n] = v;
	s->at[s->n] = f;
	s->warned[s->n] = 0;
	slot_put(s->slot, s->nslot, k, s->n);
	s->n++;
	return 0;
}

int cfg_schema_add(cfg_schema_t *s, const cfg_key_t *keys, size_t n)
{
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = schema_add_one(s, &keys[i], NULL);
	return rc;
}

int cfg_schema_add_typed(cfg_schema_t *s, const cfg_tkey_t *keys, size_t n)
{
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = schema_add_one(s, &keys[i].key, &keys[i].at);
	return rc;
}

const char *cfg_schema_choices(const cfg_schema_t *s, const char *section, const char *name)
{
	ssize_t i = schema_index(s, section, name);
	return i < 0 ? "" : key_choices(s, (size_t)i);
}

int cfg_schema_set_choices(cfg_schema_t *s, const char *section, const char *name,
                           const char *choices)
{
	ssize_t i = schema_index(s, section, name);
	if (i < 0 || s->keys[i]->type != CFG_ENUM)
		return KS_EINPUT;
	char *c = str_dup(choices);
	if (!c)
		return KS_ENOMEM;
	free(s->choices[i]);
	s->choices[i] = c;
	return 0;
}

size_t cfg_schema_count(const cfg_schema_t *s)
{
	return s->n;
}

const cfg_key_t *cfg_schema_key(const cfg_schema_t *s, size_t i)
{
	return i < s->n ? s->keys[i] : NULL;
}

const cfg_key_t *cfg_schema_find(const cfg_schema_t *s, const char *section, const char *name)
{
	ssize_t i = schema_index(s, section, name);
	return i < 0 ? NULL : s->keys[i];
}

/* ---- values ---------------------------------------------------------- */

static void val_clear(cfg_val_t *v)
{
	FREE_ALL(v->text, v->origin, v->under_text, v->under_origin);
	v->text = v->origin = v->under_text = v->under_origin = NULL;
}

/* Values that rank below a preset: the schema default and the built-in
 * default experiment (a preset describes a whole deployment, so it wins over
 * the built-in example, and only a user's file or --set wins over it). */
static int below_preset(const cfg_val_t *v)
{
	return !v->origin || !strncmp(v->origin, CFG_ORIGIN_DEFAULT_EXPERIMENT,
	                              strlen(CFG_ORIGIN_DEFAULT_EXPERIMENT));
}

/* Sets *x (empty) to the default of key i (parsed by cfg_schema_add). */
static int val_default(const cfg_schema_t *s, size_t i, cfg_val_t *x)
{
	x->i = s->defv[i].i;
	x->f = s->defv[i].f;
	x->text = str_dup(s->defv[i].text);
	return x->text ? 0 : KS_ENOMEM;
}

static ssize_t preset_key_index(const cfg_schema_t *s, const char *key);

/* The key key i is an alias of ("section.name"), NULL for a key. */
static const char *key_alias(const cfg_schema_t *s, size_t i)
{
	return s->at[i] ? s->at[i]->alias_of : NULL;
}

/* Whether key i is a loader's directive (CFG_F_LOAD): read from files only,
 * never written. */
static bool key_load(const cfg_schema_t *s, size_t i)
{
	return s->at[i] && s->at[i]->kind == CFG_F_LOAD;
}

/* Key i, or the key alias i stands for; -1 when an alias names no key. */
static ssize_t key_target(const cfg_schema_t *s, ssize_t i)
{
	if (i < 0 || !key_alias(s, (size_t)i))
		return i;
	return preset_key_index(s, key_alias(s, (size_t)i));
}

/* The value of key i: c's own, or for a key added to the schema after c was
 * made (plugin parameters) its default, read from the schema, so reading a
 * const cfg_t never changes it. */
static const cfg_val_t *val_of(const cfg_t *c, size_t i)
{
	return i < c->n ? &c->v[i] : &c->s->defv[i];
}

/* Gives keys added to the schema since the cfg was made (plugin parameters)
 * their defaults. */
static int cfg_grow(cfg_t *c)
{
	const cfg_schema_t *s = c->s;
	if (c->n == s->n && c->v)
		return 0;
	cfg_val_t *v = realloc(c->v, (s->n ? s->n : 1) * sizeof *v);
	if (!v)
		return KS_ENOMEM;
	c->v = v;
	for (; c->n < s->n; c->n++) {
		memset(&c->v[c->n], 0, sizeof c->v[c->n]);
		if (val_default(s, c->n, &c->v[c->n]))
			return KS_ENOMEM;
	}
	return 0;
}

cfg_t *cfg_new(const cfg_schema_t *s)
{
	cfg_t *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->s = s;
	if (cfg_grow(c)) {
		cfg_free(c);
		return NULL;
	}
	return c;
}

void cfg_free(cfg_t *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		val_clear(&c->v[i]);
	free(c->v);
	free(c);
}

cfg_t *cfg_clone(const cfg_t *c)
{
	cfg_t *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->s = c->s;
	d->n = c->n;
	d->seq = c->seq;
	d->v = calloc(c->n ? c->n : 1, sizeof *d->v);
	if (!d->v) {
		free(d);
		return NULL;
	}
	for (size_t i = 0; i < c->n; i++) {
		d->v[i] = c->v[i];
		d->v[i].text = str_dup(c->v[i].text);
		d->v[i].origin = c->v[i].origin ? str_dup(c->v[i].origin) : NULL;
		d->v[i].under_text = c->v[i].under_text ? str_dup(c->v[i].under_text) : NULL;
		d->v[i].under_origin = c->v[i].under_origin ? str_dup(c->v[i].under_origin) : NULL;
		if (!d->v[i].text || (c->v[i].origin && !d->v[i].origin) ||
		    (c->v[i].under_text && !d->v[i].under_text) ||
		    (c->v[i].under_origin && !d->v[i].under_origin)) {
			cfg_free(d);
			return NULL;
		}
	}
	if (cfg_grow(d)) { /* keys added to the schema since c was made */
		cfg_free(d);
		return NULL;
	}
	return d;
}

const cfg_schema_t *cfg_schema(const cfg_t *c)
{
	return c->s;
}

/* Suggestion text for an unknown section ("" when nothing is close). */
static void suggest_section(const cfg_schema_t *s, const char *sec, char *out, size_t len)
{
	size_t best = (size_t)-1;
	const char *bs = NULL;
	for (size_t i = 0; i < s->n; i++) {
		size_t d = near_distance(sec, s->keys[i]->section);
		if (d < best) {
			best = d;
			bs = s->keys[i]->section;
		}
	}
	if (bs && near_close(sec, best))
		snprintf(out, len, " (did you mean '%s'?)", bs);
	else
		out[0] = '\0';
}

/* A key of another section that name may stand for, counting the section
 * in the name ("slo_ttft_ms" for [slo] ttft_ms, a key that moved there):
 * its name with *sec_out set, or NULL when none is close. */
static const char *suggest_elsewhere(const cfg_schema_t *s, const char *sec, const char *name,
                                     const char **sec_out)
{
	size_t best = (size_t)-1;
	const char *bn = NULL;
	for (size_t i = 0; i < s->n; i++) {
		const cfg_key_t *k = s->keys[i];
		if (!strcmp(k->section, sec))
			continue;
		const char *last = strrchr(k->section, '.');
		char joined[2 * CFG_NAME_MAX + 2];
		snprintf(joined, sizeof joined, "%s_%s", last ? last + 1 : k->section, k->name);
		size_t d = near_distance(name, k->name), dj = near_distance(name, joined);
		d = dj < d ? dj : d;
		if (d < best) {
			best = d;
			bn = k->name;
			*sec_out = k->section;
		}
	}
	return bn && near_close(name, best) ? bn : NULL;
}

/* Suggestion for an unknown key in a known section: the nearest key there,
 * else the same name in another section, else a key of another section
 * whose section and name together come close. */
static void suggest_key(const cfg_schema_t *s, const char *sec, const char *name, char *out,
                        size_t len)
{
	size_t best = (size_t)-1;
	const char *bn = NULL, *other = NULL;
	for (size_t i = 0; i < s->n; i++) {
		const cfg_key_t *k = s->keys[i];
		if (strcmp(k->section, sec)) {
			if (!other && !strcmp(k->name, name))
				other = k->section;
			continue;
		}
		size_t d = near_distance(name, k->name);
		if (d < best) {
			best = d;
			bn = k->name;
		}
	}
	if (bn && near_close(name, best))
		snprintf(out, len, " (did you mean '%s'?)", bn);
	else if (other)
		snprintf(out, len, " (did you mean '%s' in [%s]?)", name, other);
	else if ((bn = suggest_elsewhere(s, sec, name, &other)))
		snprintf(out, len, " (did you mean '%s' in [%s]?)", bn, other);
	else
		out[0] = '\0';
}

/* ---- loading INI text ------------------------------------------------ */

typedef struct staged {
	size_t ki;
	cfg_val_t v;
} staged_t;

typedef struct parse {
	cfg_t *c;
	const char *origin;
	const char *p; /* next unread byte of the text */
	int line;      /* line number of the line last handed to inih */
	int *seen;     /* per key: line it was set on in this text, 0 if not */
	staged_t *st;
	size_t nst, capst;
	err_t *e;
	int err_line; /* line of the first error found by us, 0 if none */
	int code;
	char section[CFG_NAME_MAX + 1]; /* current section, as inih keeps it */
} parse_t;

static int parse_fail(parse_t *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int parse_fail(parse_t *p, int code, const char *fmt, ...)
{
	if (p->err_line)
		return 0;
	va_list ap;
	va_start(ap, fmt);
	err_vset(p->e, code, fmt, ap);
	va_end(ap);
	err_prefix(p->e, "%s:%d", p->origin, p->line);
	p->err_line = p->line;
	p->code = code;
	return 0;
}

static int parse_handler(void *user, const char *section, const char *name, const char *value);

/* A "key = value" line too long for inih's buffer (long paths), split the
 * way inih splits: at the first '=' or ':', blanks stripped, an inline
 * comment starting at a ';' after a blank. */
static void long_line(parse_t *p, const char *s, size_t len)
{
	char *l = malloc(len + 1);
	if (!l) {
		parse_fail(p, KS_ENOMEM, "out of memory");
		return;
	}
	memcpy(l, s, len);
	l[len] = '\0';
	for (char *c = l + 1; *c; c++)
		if (*c == ';' && isspace((unsigned char)c[-1])) {
			*c = '\0';
			break;
		}
	char *eq = l + strcspn(l, "=:");
	if (*l == '[' || !*eq) {
		parse_fail(p, KS_EINPUT,
		           "malformed line (expected '[section]', 'key = value' or a "
		           "comment)");
		free(l);
		return;
	}
	*eq = '\0';
	char *v = eq + 1, *end;
	while (isspace((unsigned char)*v))
		v++;
	for (end = v + strlen(v); end > v && isspace((unsigned char)end[-1]);)
		*--end = '\0';
	for (end = eq; end > l && isspace((unsigned char)end[-1]);)
		*--end = '\0';
	parse_handler(p, p->section, l, v);
	free(l);
}

/* fgets-style reader for ini_parse_stream: one line per call, so p->line is
 * the line number of whatever inih reports next. */
static char *parse_reader(char *str, int num, void *stream)
{
	parse_t *p = stream;
	if (!*p->p)
		return NULL;
	const char *nl = strchr(p->p, '\n');
	size_t len = nl ? (size_t)(nl - p->p) + 1 : strlen(p->p);
	const char *s = p->p;
	p->p += len;
	p->line++;
	if (p->line == 1 && len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) {
		s += 3; /* UTF-8 byte-order mark */
		len -= 3;
	}
	/* inih's lskip: any isspace() byte, not only blanks (so a long line and
	 * a short one start at the same place) */
	while (len && *s != '\n' && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	if ((int)len > num - 2) {
		/* Longer than inih's line buffer: tokenise it here, by inih's
		 * rules, and hand inih an empty line instead. */
		if (*s != ';' && *s != '#')
			long_line(p, s, len);
		snprintf(str, (size_t)num, "\n");
		return str;
	}
	memcpy(str, s, len);
	str[len] = '\0';
	if (*str == '[') {
		/* Same section extent as inih: up to the first ']'. */
		char *end = strchr(str + 1, ']');
		if (end) {
			char sec[256];
			size_t l = (size_t)(end - str - 1);
			if (l >= sizeof sec)
				l = sizeof sec - 1;
			memcpy(sec, str + 1, l);
			sec[l] = '\0';
			size_t sl = l < sizeof p->section - 1 ? l : sizeof p->section - 1;
			memcpy(p->section, sec, sl);
			p->section[sl] = '\0';
			if (!section_known(p->c->s, sec)) {
				char sug[160];
				suggest_section(p->c->s, sec, sug, sizeof sug);
				parse_fail(p, KS_EINPUT, "[%s]: unknown section%s", sec, sug);
			}
		}
	}
	return str;
}

static int parse_handler(void *user, const char *section, const char *name, const char *value)
{
	parse_t *p = user;
	const cfg_schema_t *s = p->c->s;
	if (p->err_line)
		return 1; /* report only the first error */
	if (!*section)
		return parse_fail(p, KS_EINPUT, "%s: key outside any [section]", name);
	if (!section_known(s, section)) {
		/* Normally reported by the reader at the header already. */
		char sug[160];
		suggest_section(s, section, sug, sizeof sug);
		return parse_fail(p, KS_EINPUT, "[%s] %s: unknown section%s", section, name, sug);
	}
	ssize_t ki = schema_index(s, section, name);
	if (ki < 0 || (size_t)ki >= p->c->n) {
		char sug[200];
		suggest_key(s, section, name, sug, sizeof sug);
		return parse_fail(p, KS_EINPUT, "[%s] %s: unknown key%s", section, name, sug);
	}
	if ((ki = key_target(s, ki)) < 0)
		return parse_fail(p, KS_EINPUT, "[%s] %s: alias of a key not in the schema",
		                  section, name);
	if (p->seen[ki])
		return parse_fail(p, KS_EINPUT, "[%s] %s: duplicate key (first set on line %d)",
		                  section, name, p->seen[ki]);
	const cfg_key_t *k = s->keys[ki];
	char why[512];
	cfg_val_t v = {0};
	const char *bad = k->type == CFG_STR ? str_unstorable(value) : NULL;
	if (bad)
		return parse_fail(p, KS_EINPUT, "[%s] %s: %s", section, name, bad);
	if (val_parse(k, key_choices(s, (size_t)ki), value, &v, true, why, sizeof why))
		return parse_fail(p, KS_EINPUT, "[%s] %s: %s", section, name, why);
	char org[512];
	snprintf(org, sizeof org, "%s:%d", p->origin, p->line);
	v.text = val_canonical(k, value, &v);
	v.origin = str_dup(org);
	if (VEC_GROW(p->st, p->capst, p->nst + 1, 16)) {
		val_clear(&v);
		return parse_fail(p, KS_ENOMEM, "out of memory");
	}
	if (!v.text || !v.origin) {
		val_clear(&v);
		return parse_fail(p, KS_ENOMEM, "out of memory");
	}
	p->seen[ki] = p->line;
	p->st[p->nst].ki = (size_t)ki;
	p->st[p->nst].v = v;
	p->nst++;
	return 1;
}

/* The text of line n (1-based) for describing a syntax error. */
static void line_text(const char *text, int n, char *out, size_t len)
{
	for (int i = 1; i < n && text; i++) {
		text = strchr(text, '\n');
		if (text)
			text++;
	}
	out[0] = '\0';
	if (!text)
		return;
	while (*text == ' ' || *text == '\t')
		text++;
	size_t l = strcspn(text, "\r\n");
	if (l >= len)
		l = len - 1;
	memcpy(out, text, l);
	out[l] = '\0';
}

int cfg_load_string(cfg_t *c, const char *origin, const char *text, err_t *e)
{
	if (cfg_grow(c))
		return err_set(e, KS_ENOMEM, "%s: out of memory", origin);
	parse_t p = {.c = c, .origin = origin, .p = text, .e = e};
	p.seen = calloc(c->n ? c->n : 1, sizeof *p.seen);
	if (!p.seen)
		return err_set(e, KS_ENOMEM, "%s: out of memory", origin);
	int r = ini_parse_stream(parse_reader, &p, parse_handler, &p);
	int code = 0;
	if (r == -2 || r == -1) {
		code = err_set(e, KS_ENOMEM, "%s: out of memory", origin);
	} else if (r > 0 && (!p.err_line || r < p.err_line)) {
		/* inih found a line it cannot tokenise before any error of ours. */
		char l[128];
		line_text(text, r, l, sizeof l);
		if (l[0] == '[')
			code = err_set(e, KS_EINPUT, "%s:%d: section header without ']': '%s'",
			               origin, r, l);
		else
			code = err_set(e, KS_EINPUT,
			               "%s:%d: malformed line (expected '[section]', 'key = value' "
			               "or a comment): '%s'",
			               origin, r, l);
	} else if (p.err_line) {
		code = p.code;
	}
	for (size_t i = 0; i < p.nst; i++) {
		if (code) {
			val_clear(&p.st[i].v);
		} else {
			val_clear(&c->v[p.st[i].ki]);
			c->v[p.st[i].ki] = p.st[i].v;
			c->v[p.st[i].ki].seq = ++c->seq; /* staged in line order */
		}
	}
	free(p.st);
	free(p.seen);
	return code;
}

int cfg_load_file(cfg_t *c, const char *path, err_t *e)
{
	char *buf;
	size_t len;
	if (file_read_all(path, &buf, &len, e))
		return e->code;
	int rc;
	if (memchr(buf, '\0', len)) {
		int line = 1;
		for (const char *q = buf; *q; q++)
			line += *q == '\n';
		rc = err_set(e, KS_EINPUT, "%s:%d: NUL byte in a text file", path, line);
	} else {
		rc = cfg_load_string(c, path, buf, e);
	}
	free(buf);
	return rc;
}

static void trim(char *s)
{
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	size_t i = 0;
	while (isspace((unsigned char)s[i]))
		i++;
	memmove(s, s + i, n - i + 1);
}

int cfg_set_as(cfg_t *c, const char *assignment, const char *origin, err_t *e)
{
	const cfg_schema_t *s = c->s;
	char *a = cfg_grow(c) ? NULL : str_dup(assignment);
	if (!a)
		return err_set(e, KS_ENOMEM, "%s: out of memory", origin);
	int rc = 0;
	char *eq = strchr(a, '=');
	char *dot = NULL;
	if (eq) {
		*eq = '\0';
		dot = strrchr(a, '.');
	}
	if (!eq || !dot) {
		rc = err_set(e, KS_EINPUT, "%s: '%s': expected SECTION.KEY=VALUE", origin,
		             assignment);
		goto out;
	}
	*dot = '\0';
	char *sec = a, *name = dot + 1, *val = eq + 1;
	trim(sec);
	trim(name);
	trim(val);
	if (!*sec || !*name) {
		rc = err_set(e, KS_EINPUT, "%s: '%s': expected SECTION.KEY=VALUE", origin,
		             assignment);
		goto out;
	}
	char sug[200], why[512];
	if (!section_known(s, sec)) {
		suggest_section(s, sec, sug, sizeof sug);
		rc =
		    err_set(e, KS_EINPUT, "%s: [%s] %s: unknown section%s", origin, sec, name, sug);
		goto out;
	}
	ssize_t ki = schema_index(s, sec, name);
	if (ki < 0 || (size_t)ki >= c->n) {
		suggest_key(s, sec, name, sug, sizeof sug);
		rc = err_set(e, KS_EINPUT, "%s: [%s] %s: unknown key%s", origin, sec, name, sug);
		goto out;
	}
	if ((ki = key_target(s, ki)) < 0) {
		rc = err_set(e, KS_EINPUT, "%s: [%s] %s: alias of a key not in the schema", origin,
		             sec, name);
		goto out;
	}
	const cfg_key_t *k = s->keys[ki];
	if (key_load(s, (size_t)ki)) {
		rc = err_set(e, KS_EINPUT,
		             "%s: [%s] %s: only a config file sets it (it says what the file "
		             "starts from; %s applies on top of the file)",
		             origin, sec, name, origin);
		goto out;
	}
	const char *bad = k->type == CFG_STR ? str_unstorable(val) : NULL;
	if (bad) {
		rc = err_set(e, KS_EINPUT, "%s: [%s] %s: %s", origin, sec, name, bad);
		goto out;
	}
	cfg_val_t v = {0};
	if (val_parse(k, key_choices(s, (size_t)ki), val, &v, true, why, sizeof why)) {
		rc = err_set(e, KS_EINPUT, "%s: [%s] %s: %s", origin, sec, name, why);
		goto out;
	}
	v.text = val_canonical(k, val, &v);
	v.origin = str_dup(origin);
	if (!v.text || !v.origin) {
		val_clear(&v);
		rc = err_set(e, KS_ENOMEM, "%s: out of memory", origin);
		goto out;
	}
	v.seq = ++c->seq;
	val_clear(&c->v[ki]);
	c->v[ki] = v;
out:
	free(a);
	return rc;
}

int cfg_set(cfg_t *c, const char *assignment, err_t *e)
{
	return cfg_set_as(c, assignment, "--set", e);
}

/* Index of a key the caller promises exists; a miss is a programming error. */
static size_t must_index(const cfg_t *c, const char *section, const char *name, const char *fn)
{
	ssize_t i = schema_index(c->s, section, name);
	if (i < 0) {
		fprintf(stderr, "kvsim: %s: [%s] %s is not in the config schema\n", fn, section,
		        name);
		abort();
	}
	return (size_t)i;
}

/* Whether an owned key belongs to the policy its section currently names.
 * *sel gets the selected name ("" when the section has no 'name' key). */
static bool owner_active(const cfg_t *c, const cfg_key_t *k, const char **sel)
{
	ssize_t ni = schema_index(c->s, k->section, "name");
	*sel = ni >= 0 ? val_of(c, (size_t)ni)->text : "";
	return !k->owner || !strcmp(*sel, k->owner);
}

/* ---- presets --------------------------------------------------------- */

/* The index of preset key "section.name" (split at the last dot), -1 if the
 * schema has no such key. */
static ssize_t preset_key_index(const cfg_schema_t *s, const char *key)
{
	const char *dot = strrchr(key, '.');
	char sec[CFG_NAME_MAX + 1];
	if (!dot || dot == key || (size_t)(dot - key) > CFG_NAME_MAX)
		return -1;
	memcpy(sec, key, (size_t)(dot - key));
	sec[dot - key] = '\0';
	return schema_index(s, sec, dot + 1);
}

static int preset_bad(const cfg_preset_t *p, const char *key, const char *why)
{
	/* Like schema_bad: a broken preset table is a programming error. */
	fprintf(stderr, "kvsim: config schema: preset %s: %s: %s\n", p->name ? p->name : "(null)",
	        key ? key : "(null)", why);
	return KS_EINPUT;
}

/* Parses value for key ki into *v as preset p's (origin "preset NAME"):
 * 0, 1 with why filled when the value does not fit the key, or KS_ENOMEM. */
static int preset_value(const cfg_schema_t *s, size_t ki, const cfg_preset_t *p, const char *value,
                        cfg_val_t *v, char *why, size_t whylen)
{
	const cfg_key_t *k = s->keys[ki];
	const char *bad = k->type == CFG_STR ? str_unstorable(value) : NULL;
	memset(v, 0, sizeof *v);
	if (bad) {
		snprintf(why, whylen, "%s", bad);
		return 1;
	}
	if (val_parse(k, key_choices(s, ki), value, v, true, why, whylen))
		return 1;
	char org[128];
	snprintf(org, sizeof org, "preset %s", p->name);
	v->text = val_canonical(k, value, v);
	v->origin = str_dup(org);
	v->preset = p;
	if (!v->text || !v->origin) {
		val_clear(v);
		return KS_ENOMEM;
	}
	return 0;
}

int cfg_schema_set_presets(cfg_schema_t *s, const char *section, const char *name,
                           const cfg_preset_t *p, size_t n)
{
	ssize_t si = schema_index(s, section, name);
	if (si < 0 || s->keys[si]->type != CFG_ENUM || strcmp(s->keys[si]->def, "none")) {
		fprintf(stderr,
		        "kvsim: config schema: [%s] %s: a preset selector must be an enum "
		        "key with default 'none'\n",
		        section, name);
		return KS_EINPUT;
	}
	size_t len = sizeof "none";
	for (size_t i = 0; i < n; i++) {
		if (!name_ok(p[i].name, false) || !strcmp(p[i].name, "none"))
			return preset_bad(&p[i], "name",
			                  "must be 1-49 of [A-Za-z0-9_-], not 'none'");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p[i].name, p[j].name))
				return preset_bad(&p[i], "name", "defined twice");
		len += strlen(p[i].name) + 1;
		for (size_t j = 0; j < p[i].n; j++) {
			const char *key = p[i].kv[j].key;
			ssize_t ki = key ? preset_key_index(s, key) : -1;
			char why[512];
			cfg_val_t v;
			if (ki < 0)
				return preset_bad(&p[i], key, "not in the config schema");
			if (ki == si)
				return preset_bad(&p[i], key, "a preset cannot select a preset");
			const char *src = p[i].kv[j].source;
			if (!p[i].kv[j].value || !src || !*src || strchr(src, '\n'))
				return preset_bad(&p[i], key,
				                  "needs a value and a one-line source");
			for (size_t m = 0; m < j; m++)
				if (preset_key_index(s, p[i].kv[m].key) == ki)
					return preset_bad(&p[i], key, "set twice");
			int rc = preset_value(s, (size_t)ki, &p[i], p[i].kv[j].value, &v, why,
			                      sizeof why);
			if (rc == 1)
				return preset_bad(&p[i], key, why);
			if (rc)
				return rc;
			val_clear(&v);
		}
	}
	char *choices = malloc(len);
	if (!choices)
		return KS_ENOMEM;
	char *q = choices + sprintf(choices, "none");
	for (size_t i = 0; i < n; i++)
		q += sprintf(q, ",%s", p[i].name);
	free(s->choices[si]);
	s->choices[si] = choices;
	s->presets = p;
	s->npresets = n;
	s->sel = (size_t)si + 1;
	return 0;
}

const cfg_preset_t *cfg_preset(const cfg_t *c)
{
	const cfg_schema_t *s = c->s;
	if (!s->sel)
		return NULL;
	const char *name = val_of(c, s->sel - 1)->text;
	for (size_t i = 0; i < s->npresets; i++)
		if (!strcmp(s->presets[i].name, name))
			return &s->presets[i];
	return NULL;
}

/* Sets every key of the selected preset that holds its default. Keys that
 * belong to no policy go first, since they include the policy names that
 * decide whether the owned ones apply: a preset's parameter of a policy the
 * user replaced is left out. */
static int preset_apply(cfg_t *c, err_t *e)
{
	const cfg_preset_t *p = cfg_preset(c);
	for (int owned = 0; p && owned < 2; owned++) {
		for (size_t j = 0; j < p->n; j++) {
			size_t ki = (size_t)preset_key_index(c->s, p->kv[j].key);
			const cfg_key_t *k = c->s->keys[ki];
			const char *sel;
			if (!k->owner != !owned || !below_preset(&c->v[ki]) ||
			    !owner_active(c, k, &sel))
				continue;
			cfg_val_t v;
			char why[512];
			int rc = preset_value(c->s, ki, p, p->kv[j].value, &v, why, sizeof why);
			if (rc == 1) /* cfg_schema_set_presets checked it against these choices */
				return err_set(e, KS_EINPUT, "preset %s: [%s] %s: %s", p->name,
				               k->section, k->name, why);
			if (rc)
				return err_set(e, rc, "preset %s: out of memory", p->name);
			if (c->v[ki].origin) { /* keep the default experiment's value */
				v.under_text = c->v[ki].text;
				v.under_origin = c->v[ki].origin;
				v.under_seq = c->v[ki].seq;
				c->v[ki].text = c->v[ki].origin = NULL;
			}
			v.seq = c->v[c->s->sel - 1].seq;
			val_clear(&c->v[ki]);
			c->v[ki] = v;
		}
	}
	return 0;
}

/* ---- when a key acts ------------------------------------------------ */

int cfg_schema_set_section_when(cfg_schema_t *s, const char *section, const cfg_when_t *w)
{
	struct swhen *n = realloc(s->swhen, (s->nswhen + 1) * sizeof *n);
	if (!n)
		return KS_ENOMEM;
	s->swhen = n;
	s->swhen[s->nswhen++] = (struct swhen){section, w};
	return 0;
}

static const cfg_when_t *key_when_i(const cfg_schema_t *s, size_t i)
{
	if (s->at[i] && s->at[i]->when)
		return s->at[i]->when;
	for (size_t j = 0; j < s->nswhen; j++)
		if (!strcmp(s->swhen[j].section, s->keys[i]->section))
			return s->swhen[j].w;
	return NULL;
}

const cfg_when_t *cfg_key_when(const cfg_schema_t *s, const char *section, const char *name)
{
	ssize_t i = schema_index(s, section, name);
	return i < 0 ? NULL : key_when_i(s, (size_t)i);
}

/* One blank-separated word of a condition: [p, p + n). */
typedef struct word {
	const char *p;
	size_t n;
} word_t;

static bool word_next(const char **s, word_t *w)
{
	while (**s == ' ')
		(*s)++;
	w->p = *s;
	while (**s && **s != ' ')
		(*s)++;
	w->n = (size_t)(*s - w->p);
	return w->n > 0;
}

static bool word_is(word_t w, const char *x)
{
	return w.n == strlen(x) && !memcmp(w.p, x, w.n);
}

/* Reading a condition: against a config (c, to evaluate it), or against
 * the schema alone (c NULL, to check it). */
typedef struct when_ctx {
	const cfg_schema_t *s;
	const cfg_t *c;
	char *why; /* what is wrong with the condition */
	size_t whyn;
	char here[512]; /* "KEY = VALUE, ..." of the clauses that failed */
} when_ctx_t;

static int when_bad(when_ctx_t *x, word_t w, const char *what)
{
	snprintf(x->why, x->whyn, "condition: '%.*s': %s", (int)w.n, w.p, what);
	return -1;
}

/* The index of key word w, or -1 with the reason in x->why. */
static ssize_t when_key(when_ctx_t *x, word_t w)
{
	char k[2 * CFG_NAME_MAX + 2];
	ssize_t i = -1;
	if (w.n < sizeof k) {
		snprintf(k, sizeof k, "%.*s", (int)w.n, w.p);
		i = preset_key_index(x->s, k);
	}
	if (i < 0)
		when_bad(x, w, "not a key of the config schema");
	return i;
}

/* The number held by key i (bools 0/1). */
static double when_number(const when_ctx_t *x, size_t i)
{
	const cfg_val_t *v = val_of(x->c, i);
	return x->s->keys[i]->type == CFG_FLOAT ? v->f : (double)v->i;
}

/* Adds "TEXT = VALUE" to what the failing clauses read, once. */
static void when_here(when_ctx_t *x, const char *text, size_t n, const char *value)
{
	char item[256];
	int w = snprintf(item, sizeof item, "%.*s = %s", (int)n, text, value);
	size_t il = w < 0 ? 0 : (size_t)w < sizeof item ? (size_t)w : sizeof item - 1;
	for (const char *h = strstr(x->here, item); h; h = strstr(h + 1, item))
		if ((h == x->here || h[-1] == ' ') && (h[il] == ',' || !h[il]))
			return; /* named already (a whole item, not the start of one) */
	size_t used = strlen(x->here);
	snprintf(x->here + used, sizeof x->here - used, "%s%s", used ? ", " : "", item);
}

/* EXPR of a comparison: factors joined by '*', numbers or numeric keys. */
static int when_expr(when_ctx_t *x, word_t w, double *out, bool *keyed)
{
	*out = 1;
	*keyed = false;
	for (const char *p = w.p, *end = w.p + w.n; p < end;) {
		const char *star = memchr(p, '*', (size_t)(end - p));
		word_t f = {p, (size_t)((star ? star : end) - p)};
		char num[64];
		char *stop;
		snprintf(num, sizeof num, "%.*s", (int)f.n, f.p);
		double d = f.n && f.n < sizeof num ? strtod(num, &stop) : 0;
		if (f.n && f.n < sizeof num && !*stop && isfinite(d)) {
			*out *= d;
		} else {
			ssize_t i = when_key(x, f);
			if (i < 0)
				return -1;
			if (x->s->keys[i]->type == CFG_STR || x->s->keys[i]->type == CFG_ENUM)
				return when_bad(x, f, "not a numeric key");
			*keyed = true;
			if (x->c)
				*out *= when_number(x, (size_t)i);
		}
		p = star ? star + 1 : end;
	}
	return 0;
}

/* One clause KEY OP RHS: *holds set (when evaluating), 0, or -1 with why. */
static int when_clause(when_ctx_t *x, word_t key, word_t op, word_t rhs, bool *holds)
{
	ssize_t i = when_key(x, key);
	if (i < 0)
		return -1;
	const cfg_key_t *k = x->s->keys[i];
	bool numeric = k->type == CFG_INT || k->type == CFG_FLOAT || k->type == CFG_BOOL;
	const char *text = x->c ? val_of(x->c, (size_t)i)->text : "";
	if (word_is(op, "=") || word_is(op, "!=")) {
		bool any = false;
		for (const char *p = rhs.p, *end = rhs.p + rhs.n; p <= end;) {
			const char *bar = memchr(p, '|', (size_t)(end - p));
			word_t alt = {p, (size_t)((bar ? bar : end) - p)};
			char a[128];
			if (!alt.n || alt.n >= sizeof a)
				return when_bad(x, rhs, "empty or overlong value");
			snprintf(a, sizeof a, "%.*s", (int)alt.n, alt.p);
			char why[256];
			cfg_val_t v = {0};
			if (val_parse(k, key_choices(x->s, (size_t)i), a, &v, k->type == CFG_ENUM &&
			              *key_choices(x->s, (size_t)i), why, sizeof why))
				return when_bad(x, alt, why);
			if (x->c)
				any |= numeric ? v.f == val_of(x->c, (size_t)i)->f &&
				                     v.i == val_of(x->c, (size_t)i)->i
				               : !strcmp(a, text);
			p = bar ? bar + 1 : end + 1;
		}
		*holds = word_is(op, "=") ? any : !any;
	} else if (word_is(op, "<") || word_is(op, "<=") || word_is(op, ">") ||
	           word_is(op, ">=")) {
		double r;
		bool keyed;
		if (!numeric || k->type == CFG_BOOL)
			return when_bad(x, key, "compared by size, but not a number key");
		if (when_expr(x, rhs, &r, &keyed))
			return -1;
		if (!x->c)
			return 0;
		double l = when_number(x, (size_t)i);
		*holds = op.p[0] == '<' ? (op.n == 1 ? l < r : l <= r) : (op.n == 1 ? l > r : l >= r);
		if (!*holds && keyed) {
			char num[32];
			float_text(r, num, sizeof num);
			when_here(x, key.p, key.n, text);
			when_here(x, rhs.p, rhs.n, num);
		}
	} else {
		return when_bad(x, op, "expected =, !=, <, <=, > or >=");
	}
	if (x->c && !*holds)
		when_here(x, key.p, key.n, text);
	return 0;
}

/* Reads condition cond: *acts set when evaluating; 0, or -1 with why. */
static int when_read(when_ctx_t *x, const char *cond, bool *acts)
{
	const char *p = cond;
	bool any = false, all = true;
	for (;;) {
		word_t key, op, rhs, conn;
		bool holds = true;
		if (!word_next(&p, &key) || !word_next(&p, &op) || !word_next(&p, &rhs))
			return when_bad(x, (word_t){cond, strlen(cond)}, "expected KEY OP VALUE");
		size_t mark = strlen(x->here);
		if (when_clause(x, key, op, rhs, &holds))
			return -1;
		if (all && !holds) /* the first clause that fails its conjunction: named */
			all = false;
		else if (!holds)
			x->here[mark] = '\0';
		if (!word_next(&p, &conn))
			break;
		if (word_is(conn, "or")) {
			any |= all;
			all = true;
		} else if (!word_is(conn, "and")) {
			return when_bad(x, conn, "expected 'and' or 'or'");
		}
	}
	*acts = any || all;
	return 0;
}

int cfg_schema_check_when(const cfg_schema_t *s)
{
	for (size_t i = 0; i < s->n; i++) {
		const cfg_when_t *w = key_when_i(s, i);
		char why[512];
		bool acts;
		when_ctx_t x = {s, NULL, why, sizeof why, ""};
		if (w && (!w->cond || when_read(&x, w->cond, &acts)))
			return schema_bad(s->keys[i], w->cond ? why : "a condition without cond");
	}
	return 0;
}

/* Whether key i has no effect in c (cfg_key_inert). */
static bool inert(const cfg_t *c, size_t i, char *why, size_t n)
{
	const cfg_key_t *k = c->s->keys[i];
	const char *sel;
	if (k->owner && !owner_active(c, k, &sel)) {
		snprintf(why, n, "ignored: parameter of '%s', but name = %s", k->owner, sel);
		return true;
	}
	const cfg_when_t *w = key_when_i(c->s, i);
	char bad[512];
	bool acts = true;
	when_ctx_t x = {c->s, c, bad, sizeof bad, ""};
	if (!w || when_read(&x, w->cond, &acts) || acts)
		return false; /* a bad condition was refused with its schema */
	snprintf(why, n, "no effect: it acts only when %s (here %s)%s%s", w->cond, x.here,
	         w->instead ? "; otherwise " : "", w->instead ? w->instead : "");
	return true;
}

int cfg_key_inert(const cfg_t *c, const char *section, const char *name, char *why, size_t n)
{
	return inert(c, must_index(c, section, name, "cfg_key_inert"), why, n);
}

int cfg_finalize(cfg_t *c, err_t *e)
{
	if (cfg_grow(c))
		return err_set(e, KS_ENOMEM, "out of memory");
	/* What a preset set before (a sweep point cloned from its base) goes
	 * back to its default, so the preset selected now decides. */
	for (size_t i = 0; i < c->n; i++) {
		if (!c->v[i].preset)
			continue;
		char *ut = c->v[i].under_text, *uo = c->v[i].under_origin;
		uint64_t us = c->v[i].under_seq;
		c->v[i].under_text = c->v[i].under_origin = NULL;
		val_clear(&c->v[i]);
		memset(&c->v[i], 0, sizeof c->v[i]);
		if (val_default(c->s, i, &c->v[i])) {
			free(ut);
			free(uo);
			return err_set(e, KS_ENOMEM, "out of memory");
		}
		if (ut) { /* back to the default experiment's value */
			char why[256];
			const cfg_key_t *k = c->s->keys[i];
			val_clear(&c->v[i]);
			(void)val_parse(k, key_choices(c->s, i), ut, &c->v[i], true, why, sizeof why);
			c->v[i].text = ut;
			c->v[i].origin = uo;
			c->v[i].seq = us;
		}
	}
	int rc = preset_apply(c, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < c->n; i++) {
		const cfg_key_t *k = c->s->keys[i];
		const char *sel, *org = c->v[i].origin;
		if (k->owner && org && !owner_active(c, k, &sel) &&
		    schema_index(c->s, k->section, "name") < 0)
			return err_set(e, KS_EINPUT,
			               "%s: [%s] %s: parameter of policy '%s', but [%s] has no "
			               "'name' key",
			               org, k->section, k->name, k->owner, k->section);
		/* Said, not refused, so that one file serves every point of a sweep
		 * over policy names or generators; once per key per schema. Only a
		 * value someone set: not a default, the default experiment's or a
		 * preset's, and not a sweep axis's (the sweep names those). */
		if (!org || !c->s->warn || c->s->warned[i] || key_alias(c->s, i) ||
		    !strcmp(org, CFG_ORIGIN_GRID) || below_preset(&c->v[i]) || c->v[i].preset)
			continue;
		char why[1024];
		if (!inert(c, i, why, sizeof why))
			continue;
		c->s->warned[i] = 1;
		fprintf(c->s->warn, "kvsim: warning: %s: [%s] %s: %s\n", org, k->section, k->name,
		        why);
	}
	return 0;
}

/* ---- accessors ------------------------------------------------------- */

static const cfg_val_t *typed(const cfg_t *c, const char *section, const char *name, const char *fn,
                              cfg_type_t t1, cfg_type_t t2)
{
	size_t i = must_index(c, section, name, fn);
	cfg_type_t t = c->s->keys[i]->type;
	if (t != t1 && t != t2) {
		fprintf(stderr, "kvsim: %s: [%s] %s is of type %s\n", fn, section, name,
		        cfg_type_name(t));
		abort();
	}
	return val_of(c, i);
}

int64_t cfg_int(const cfg_t *c, const char *section, const char *name)
{
	return typed(c, section, name, "cfg_int", CFG_INT, CFG_INT)->i;
}

double cfg_float(const cfg_t *c, const char *section, const char *name)
{
	return typed(c, section, name, "cfg_float", CFG_FLOAT, CFG_INT)->f;
}

int cfg_bool(const cfg_t *c, const char *section, const char *name)
{
	return (int)typed(c, section, name, "cfg_bool", CFG_BOOL, CFG_BOOL)->i;
}

const char *cfg_str(const cfg_t *c, const char *section, const char *name)
{
	return val_of(c, must_index(c, section, name, "cfg_str"))->text;
}

const char *cfg_origin(const cfg_t *c, const char *section, const char *name)
{
	const cfg_val_t *v = val_of(c, must_index(c, section, name, "cfg_origin"));
	return v->origin ? v->origin : "default";
}

/* ---- typed structs ---------------------------------------------------- */

/* Stores value v of typed key t in its field of dst; text is v's text, kept
 * by pointer in CFG_F_STR fields. */
static int field_store(const cfg_tkey_t *t, const cfg_val_t *v, const char *text, void *dst,
                       err_t *e)
{
	const cfg_key_t *k = &t->key;
	char *p = (char *)dst + t->at.off;
	switch (t->at.kind) {
	case CFG_F_NONE:
	case CFG_F_LOAD:
		return 0;
	case CFG_F_I64:
		*(int64_t *)p = v->i;
		return 0;
	case CFG_F_U32: /* the key's range lies within uint32 (field_bad) */
		*(uint32_t *)p = (uint32_t)v->i;
		return 0;
	case CFG_F_U64:
		*(uint64_t *)p = (uint64_t)v->i;
		return 0;
	case CFG_F_DOUBLE:
		*(double *)p = k->type == CFG_INT ? (double)v->i : v->f;
		return 0;
	case CFG_F_BOOL:
		*(int *)p = v->i != 0;
		return 0;
	case CFG_F_STR:
		*(const char **)p = text;
		return 0;
	case CFG_F_STRDUP: {
		char *d = str_dup(text);
		if (!d)
			return err_set(e, KS_ENOMEM, "out of memory");
		free(*(char **)p);
		*(char **)p = d;
		return 0;
	}
	case CFG_F_ENUM:
		for (const cfg_enum_t *m = t->at.map; m->name; m++)
			if (!strcmp(m->name, text)) {
				*(int *)p = m->value;
				return 0;
			}
		/* choices widened past the map (cfg_schema_set_choices) */
		return err_set(e, KS_EINPUT, "[%s] %s: '%s' has no value in the key's map",
		               k->section, k->name, text);
	}
	return err_set(e, KS_EINPUT, "[%s] %s: unknown field kind", k->section, k->name);
}

int cfg_fill(const cfg_t *c, const cfg_tkey_t *keys, size_t n, void *dst, err_t *e)
{
	for (size_t i = 0; i < n; i++) {
		const cfg_key_t *k = &keys[i].key;
		if (!keys[i].at.kind)
			continue;
		ssize_t ki = schema_index(c->s, k->section, k->name);
		if (ki < 0 || c->s->keys[ki]->type != k->type)
			return err_set(e, KS_EINPUT, "[%s] %s: not in the config schema as %s %s",
			               k->section, k->name, k->type == CFG_INT ? "an" : "a",
			               cfg_type_name(k->type));
		const cfg_val_t *v = val_of(c, (size_t)ki);
		int rc = field_store(&keys[i], v, v->text, dst, e);
		if (rc)
			return rc;
	}
	return 0;
}

int cfg_fill_defaults(const cfg_tkey_t *keys, size_t n, void *dst, err_t *e)
{
	for (size_t i = 0; i < n; i++) {
		int rc = keys[i].at.kind ? cfg_field_set(&keys[i], dst, keys[i].key.def, e) : 0;
		if (rc) {
			err_prefix(e, "default");
			return rc;
		}
	}
	return 0;
}

int cfg_field_set(const cfg_tkey_t *t, void *dst, const char *text, err_t *e)
{
	const cfg_key_t *k = &t->key;
	char buf[1024], why[1400];
	cfg_val_t v = {0};
	const char *bad = k->type == CFG_STR ? str_unstorable(text) : NULL;
	if (bad)
		return err_set(e, KS_EINPUT, "[%s] %s: %s", k->section, k->name, bad);
	if (val_parse(k, cfg_tkey_choices(t, buf, sizeof buf), text, &v, k->type == CFG_ENUM, why,
	              sizeof why))
		return err_set(e, KS_EINPUT, "[%s] %s: %s", k->section, k->name, why);
	return field_store(t, &v, text, dst, e);
}

int cfg_field_number(const cfg_tkey_t *t, const void *src, double *out)
{
	const char *p = (const char *)src + t->at.off;
	switch (t->at.kind) {
	case CFG_F_I64:
		*out = (double)*(const int64_t *)p;
		return 1;
	case CFG_F_U32:
		*out = *(const uint32_t *)p;
		return 1;
	case CFG_F_U64:
		*out = (double)*(const uint64_t *)p;
		return 1;
	case CFG_F_DOUBLE:
		*out = *(const double *)p;
		return 1;
	case CFG_F_BOOL:
	case CFG_F_ENUM:
		*out = *(const int *)p;
		return 1;
	default:
		return 0;
	}
}

int cfg_fields_check(const cfg_tkey_t *keys, size_t n, const void *src, err_t *e)
{
	for (size_t i = 0; i < n; i++) {
		const cfg_key_t *k = &keys[i].key;
		double x;
		/* bool and enum keys have no range (min >= max) */
		if (!cfg_field_number(&keys[i], src, &x) || !(k->min < k->max) ||
		    (x >= k->min && x <= k->max))
			continue;
		char v[32], lo[32], hi[32];
		const char *u = k->unit && *k->unit ? k->unit : "";
		float_text(x, v, sizeof v);
		float_text(k->min, lo, sizeof lo);
		float_text(k->max, hi, sizeof hi);
		return err_set(e, KS_EINPUT, "[%s] %s: %s%s%s is out of range [%s, %s]", k->section,
		               k->name, v, *u ? " " : "", u, lo, hi);
	}
	return 0;
}

const char *cfg_field_text(const cfg_tkey_t *t, const void *src)
{
	const char *p = (const char *)src + t->at.off;
	if (t->at.kind == CFG_F_STR || t->at.kind == CFG_F_STRDUP)
		return *(const char *const *)p ? *(const char *const *)p : "";
	for (const cfg_enum_t *m = t->at.kind == CFG_F_ENUM ? t->at.map : NULL; m && m->name; m++)
		if (m->value == *(const int *)p)
			return m->name;
	return "";
}

void cfg_fill_free(const cfg_tkey_t *keys, size_t n, void *dst)
{
	for (size_t i = 0; i < n; i++)
		if (keys[i].at.kind == CFG_F_STRDUP) {
			char **p = (char **)((char *)dst + keys[i].at.off);
			free(*p);
			*p = NULL;
		}
}

void cfg_warn_once(const cfg_t *c, const char *section, const char *name, const char *fmt, ...)
{
	size_t i = must_index(c, section, name, "cfg_warn_once");
	if (!c->s->warn || c->s->warned[i])
		return;
	c->s->warned[i] = 1;
	fprintf(c->s->warn, "kvsim: warning: %s%s: [%s] %s: ", cli_warn_prefix(),
		cfg_origin(c, section, name), section, name);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(c->s->warn, fmt, ap);
	va_end(ap);
	fputc('\n', c->s->warn);
}

/* The index of "section.name" (split at the last dot) in c, -1 if none. */
static ssize_t dotted_index(const cfg_t *c, const char *key, size_t len)
{
	char k[2 * CFG_NAME_MAX + 2];
	if (len >= sizeof k)
		return -1;
	memcpy(k, key, len);
	k[len] = '\0';
	return preset_key_index(c->s, k);
}

/* The config file of origin "FILE:LINE" into out; 0 when origin is none. */
static int origin_file(const char *origin, char *out, size_t n)
{
	const char *colon = origin ? strrchr(origin, ':') : NULL;
	if (!colon || colon == origin || !colon[1] || colon[1 + strspn(colon + 1, "0123456789")] ||
	    !strncmp(origin, CFG_ORIGIN_DEFAULT_EXPERIMENT, strlen(CFG_ORIGIN_DEFAULT_EXPERIMENT)))
		return 0;
	int len = snprintf(out, n, "%.*s", (int)(colon - origin), origin);
	struct stat sb; /* a label such as "x=a:1" is no file */
	return len > 0 && (size_t)len < n && !stat(out, &sb) && S_ISREG(sb.st_mode);
}

int cfg_file(const cfg_t *c, char *out, size_t n)
{
	ssize_t best = -1;
	char f[4096];
	for (size_t i = 0; i < c->n; i++)
		if ((best < 0 || c->v[i].seq > c->v[best].seq) && origin_file(c->v[i].origin, f, sizeof f))
			best = (ssize_t)i;
	return best >= 0 && origin_file(c->v[best].origin, out, n);
}

int cfg_err_keys(const cfg_t *c, err_t *e, const char *keys, const char *fmt, ...)
{
	char why[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	ssize_t best = -1;
	for (const char *k = keys; *k;) {
		size_t len = strcspn(k, ",");
		ssize_t i = dotted_index(c, k, len);
		if (i < 0) {
			fprintf(stderr, "kvsim: cfg_err_keys: '%.*s' is not in the config schema\n",
			        (int)len, k);
			abort(); /* a programming error, as in the accessors */
		}
		if (best < 0 || val_of(c, (size_t)i)->seq > val_of(c, (size_t)best)->seq)
			best = i;
		k += len + (k[len] == ',');
	}
	if (best < 0) {
		fprintf(stderr, "kvsim: cfg_err_keys: no key given\n");
		abort();
	}
	const cfg_key_t *k = c->s->keys[best];
	const char *org = val_of(c, (size_t)best)->origin;
	if (org)
		return err_set(e, KS_EINPUT, "%s: [%s] %s: %s", org, k->section, k->name, why);
	return err_set(e, KS_EINPUT, "[%s] %s: %s", k->section, k->name, why);
}

int cfg_path(const cfg_t *c, const char *section, const char *name, char *out, size_t n, err_t *e)
{
	const char *path = cfg_str(c, section, name);
	size_t len = strlen(path);
	if (len >= n) {
		char key[2 * CFG_NAME_MAX + 2];
		snprintf(key, sizeof key, "%s.%s", section, name);
		return cfg_err_keys(c, e, key, "path longer than %zu bytes", n - 1);
	}
	memcpy(out, path, len + 1);
	char file[4096];
	if (!*path || path[0] == '/' ||
	    !origin_file(cfg_origin(c, section, name), file, sizeof file))
		return 0;
	const char *slash = strrchr(file, '/');
	if (!slash)
		return 0; /* the config file is in the working directory */
	char cand[8192];
	int m = snprintf(cand, sizeof cand, "%.*s/%s", (int)(slash - file), file, path);
	if (m > 0 && (size_t)m < n && (size_t)m < sizeof cand && access(cand, R_OK) == 0)
		memcpy(out, cand, (size_t)m + 1);
	return 0;
}

void cfg_err_locate(const cfg_t *c, err_t *e)
{
	/* "[section] key: reason": the section may hold dots, the key none */
	const char *m = e->msg, *close = m[0] == '[' ? strchr(m, ']') : NULL;
	if (!close || close[1] != ' ')
		return;
	const char *name = close + 2, *colon = name + strcspn(name, ": ");
	if (*colon != ':' || colon == name)
		return;
	char key[2 * CFG_NAME_MAX + 2];
	int n = snprintf(key, sizeof key, "%.*s.%.*s", (int)(close - m - 1), m + 1,
	                 (int)(colon - name), name);
	if (n < 0 || (size_t)n >= sizeof key)
		return;
	ssize_t i = dotted_index(c, key, (size_t)n);
	if (i >= 0 && val_of(c, (size_t)i)->origin)
		err_prefix(e, "%s", val_of(c, (size_t)i)->origin);
}

/* ---- writing --------------------------------------------------------- */

/* Whether key i is the first of its section in schema order (aliases, never
 * written, do not count). */
static bool section_first(const cfg_schema_t *s, size_t i)
{
	if (key_alias(s, i) || key_load(s, i))
		return false;
	for (size_t j = 0; j < i; j++)
		if (!key_alias(s, j) && !key_load(s, j) &&
		    !strcmp(s->keys[j]->section, s->keys[i]->section))
			return false;
	return true;
}

static void write_range(const cfg_key_t *k, const char *choices, FILE *f)
{
	if (k->type == CFG_ENUM)
		fprintf(f, "one of: %s", *choices ? choices : "(none registered)");
	else if ((k->type == CFG_INT || k->type == CFG_FLOAT) && k->min < k->max) {
		char lo[32], hi[32];
		float_text(k->min, lo, sizeof lo);
		float_text(k->max, hi, sizeof hi);
		fprintf(f, "range [%s, %s]", lo, hi);
	} else if (k->type == CFG_BOOL)
		fprintf(f, "true or false");
	else
		fprintf(f, "any %s", k->type == CFG_STR ? "text" : "value");
}

int cfg_write(const cfg_t *c, FILE *f)
{
	return cfg_write_ex(c, f, 0);
}

/* The source of the preset entry that set key i, "" if none. */
static const char *preset_source(const cfg_t *c, size_t i)
{
	const cfg_preset_t *p = val_of(c, i)->preset;
	for (size_t j = 0; p && j < p->n; j++)
		if (preset_key_index(c->s, p->kv[j].key) == (ssize_t)i)
			return p->kv[j].source;
	return "";
}

int cfg_write_ex(const cfg_t *c, FILE *f, int flags)
{
	const cfg_schema_t *s = c->s;
	bool first = true;
	for (size_t i = 0; i < s->n; i++) {
		if (!section_first(s, i))
			continue;
		const char *sec = s->keys[i]->section;
		fprintf(f, "%s[%s]\n", first ? "" : "\n", sec);
		first = false;
		for (size_t j = i; j < s->n; j++) {
			const cfg_key_t *k = s->keys[j];
			const cfg_val_t *v = val_of(c, j);
			const char *sel;
			if (strcmp(k->section, sec) || key_alias(s, j) || key_load(s, j) ||
			    !owner_active(c, k, &sel))
				continue;
			if (k->doc && *k->doc) {
				fprintf(f, "# %s", k->doc);
				if (k->unit && *k->unit)
					fprintf(f, " [%s]", k->unit);
				fputc('\n', f);
			}
			if ((flags & CFG_WRITE_ORIGINS) && v->preset)
				fprintf(f, "# from preset %s: %s\n", v->preset->name,
				        preset_source(c, j));
			fprintf(f, "%s =%s%s\n", k->name, *v->text ? " " : "", v->text);
		}
	}
	return ferror(f) ? KS_EIO : 0;
}

char *cfg_text(const cfg_t *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	int rc = cfg_write(c, f);
	if (fclose(f) || rc) {
		free(buf);
		return NULL;
	}
	return buf;
}

int cfg_write_doc(const cfg_schema_t *s, FILE *f)
{
	return cfg_write_doc_ref(s, NULL, NULL, f);
}

int cfg_write_doc_ref(const cfg_schema_t *s, const cfg_t *ref, const char *ref_name, FILE *f)
{
	for (size_t i = 0; i < s->n; i++) {
		const cfg_key_t *k = s->keys[i];
		if (key_alias(s, i)) {
			fprintf(f, "[%s] %s\n    alias of %s\n    %s\n", k->section, k->name,
			        key_alias(s, i), k->doc && *k->doc ? k->doc : "(undocumented)");
			continue;
		}
		fprintf(f, "[%s] %s\n    type %s, default '%s', ", k->section, k->name,
		        cfg_type_name(k->type), k->def);
		if (ref && ref->s == s && strcmp(val_of(ref, i)->text, s->defv[i].text))
			fprintf(f, "%s '%s', ", ref_name ? ref_name : "reference",
			        val_of(ref, i)->text);
		write_range(k, key_choices(s, i), f);
		if (k->unit && *k->unit)
			fprintf(f, ", unit %s", k->unit);
		if (k->owner)
			fprintf(f, ", only with name = %s", k->owner);
		const cfg_when_t *w = key_when_i(s, i);
		if (w)
			fprintf(f, "\n    acts only when %s%s%s", w->cond,
			        w->instead ? "; otherwise " : "", w->instead ? w->instead : "");
		if (key_load(s, i))
			fprintf(f, "\n    read from a config file as it loads; not part of the resolved "
			           "config");
		fprintf(f, "\n    %s\n", k->doc && *k->doc ? k->doc : "(undocumented)");
	}
	return ferror(f) ? KS_EIO : 0;
}

void cfg_digest(const cfg_t *c, char out[65])
{
	uint8_t d[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;
	char *t = cfg_text(c);
	sha256_init(&ctx);
	if (t)
		sha256_update(&ctx, strlen(t), (const uint8_t *)t);
	sha256_digest(&ctx, sizeof d, d);
	free(t);
	for (size_t i = 0; i < sizeof d; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}
