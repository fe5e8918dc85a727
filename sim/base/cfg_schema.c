/* cfg_schema — the schema: keys added and checked (names, defaults, typed
 * fields, aliases), their choices, and the lookup of a key by section and
 * name through an open-addressing index (see cfg.h for the contract, and
 * cfg_int.h for the state).
 */
#include "sim/base/cfg.h"
#include "sim/base/cfg_int.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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

bool cfg_name_ok(const char *s, bool allow_dot)
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

ssize_t cfg_key_index(const cfg_schema_t *s, const char *section, const char *name)
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

bool cfg_section_known(const cfg_schema_t *s, const char *section)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->keys[i]->section, section))
			return true;
	return false;
}

const char *cfg_key_choices(const cfg_schema_t *s, size_t i)
{
	if (s->choices[i])
		return s->choices[i];
	return s->keys[i]->choices ? s->keys[i]->choices : "";
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

int cfg_schema_bad(const cfg_key_t *k, const char *why)
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
	if (!cfg_name_ok(k->section, true))
		return cfg_schema_bad(k, "section must be 1-49 of [A-Za-z0-9_.-]");
	if (!cfg_name_ok(k->name, false))
		return cfg_schema_bad(k, "name must be 1-49 of [A-Za-z0-9_-]");
	if (!k->def)
		return cfg_schema_bad(k, "no default");
	if (cfg_key_index(s, k->section, k->name) >= 0)
		return cfg_schema_bad(k, "defined twice");
	if (f && f->alias_of && !(strchr(f->alias_of, '.') && cfg_name_ok(f->alias_of, true)))
		return cfg_schema_bad(k, "alias_of must be \"section.name\"");
	if (map && k->choices)
		return cfg_schema_bad(
		    k, "an enum with a map takes its choices from it (choices NULL)");
	if (k->type == CFG_ENUM && !k->choices && !map)
		return cfg_schema_bad(k, "enum without choices (use \"\" to fill later)");
	if (k->type == CFG_STR && cfg_str_unstorable(k->def))
		return cfg_schema_bad(k, cfg_str_unstorable(k->def));
	const char *fbad = f ? field_bad(k, f) : NULL;
	if (fbad)
		return cfg_schema_bad(k, fbad);
	char *derived = map ? map_join(map) : NULL;
	if (map && !derived)
		return KS_ENOMEM;
	const char *ch = derived ? derived : k->choices;
	bool check = k->type == CFG_ENUM && *ch;
	if (cfg_val_parse(k, ch, k->def, &v, check ? CFG_VAL_CHOICES : 0, why, sizeof why)) {
		free(derived);
		return cfg_schema_bad(k, why);
	}
	if (!(v.text = cfg_val_canonical(k, k->def, &v)) || schema_reserve(s, 1)) {
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
	ssize_t i = cfg_key_index(s, section, name);
	return i < 0 ? "" : cfg_key_choices(s, (size_t)i);
}

int cfg_schema_set_choices(cfg_schema_t *s, const char *section, const char *name,
                           const char *choices)
{
	ssize_t i = cfg_key_index(s, section, name);
	if (i < 0 || s->keys[i]->type != CFG_ENUM)
		return KS_EINPUT;
	char *c = cfg_str_dup(choices);
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
	ssize_t i = cfg_key_index(s, section, name);
	return i < 0 ? NULL : s->keys[i];
}

/* The key key i is an alias of ("section.name"), NULL for a key. */
const char *cfg_key_alias(const cfg_schema_t *s, size_t i)
{
	return s->at[i] ? s->at[i]->alias_of : NULL;
}

/* Whether key i is a loader's directive (CFG_F_LOAD): read from files only,
 * never written. */
bool cfg_key_load(const cfg_schema_t *s, size_t i)
{
	return s->at[i] && s->at[i]->kind == CFG_F_LOAD;
}

/* The index of preset key "section.name" (split at the last dot), -1 if the
 * schema has no such key. */
ssize_t cfg_key_index_dotted(const cfg_schema_t *s, const char *key)
{
	const char *dot = strrchr(key, '.');
	char sec[CFG_NAME_MAX + 1];
	if (!dot || dot == key || (size_t)(dot - key) > CFG_NAME_MAX)
		return -1;
	memcpy(sec, key, (size_t)(dot - key));
	sec[dot - key] = '\0';
	return cfg_key_index(s, sec, dot + 1);
}
