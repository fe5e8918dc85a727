/* cfg_fill — typed structs: a module's struct filled from a config or from
 * its keys' defaults, one field set from text, and fields read back or
 * checked against their keys' ranges (cfg_tkey_t in cfg.h).
 */
#include "sim/base/cfg.h"
#include "sim/base/cfg_int.h"

#include <stdlib.h>
#include <string.h>

/* Stores value v of typed key t in its field of dst; text is v's text, kept
 * by pointer in CFG_F_STR fields. 0, or a KS_* code with the reason in why
 * (n bytes). */
static int field_store(const cfg_tkey_t *t, const cfg_val_t *v, const char *text, void *dst,
                       char *why, size_t n)
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
		char *d = cfg_str_dup(text);
		if (!d) {
			snprintf(why, n, "out of memory");
			return KS_ENOMEM;
		}
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
		snprintf(why, n, "'%s' has no value in the key's map", text);
		return KS_EINPUT;
	}
	snprintf(why, n, "unknown field kind");
	return KS_EINPUT;
}

int cfg_fill(const cfg_t *c, const cfg_tkey_t *keys, size_t n, void *dst, err_t *e)
{
	for (size_t i = 0; i < n; i++) {
		const cfg_key_t *k = &keys[i].key;
		if (!keys[i].at.kind)
			continue;
		ssize_t ki = cfg_key_index(c->s, k->section, k->name);
		if (ki < 0 || c->s->keys[ki]->type != k->type)
			return err_set(e, KS_EINPUT, "[%s] %s: not in the config schema as %s %s",
			               k->section, k->name, k->type == CFG_INT ? "an" : "a",
			               cfg_type_name(k->type));
		const cfg_val_t *v = cfg_val_of(c, (size_t)ki);
		char why[256];
		int rc = field_store(&keys[i], v, v->text, dst, why, sizeof why);
		if (rc)
			return err_set(e, rc, "[%s] %s: %s", k->section, k->name, why);
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

int cfg_field_parse(const cfg_tkey_t *t, void *dst, const char *text, int flags, char *why,
                    size_t n)
{
	const cfg_key_t *k = &t->key;
	char buf[1024];
	cfg_val_t v = {0};
	const char *bad = k->type == CFG_STR ? cfg_str_unstorable(text) : NULL;
	if (bad) {
		snprintf(why, n, "%s", bad);
		return KS_EINPUT;
	}
	if (k->type == CFG_ENUM)
		flags |= CFG_VAL_CHOICES;
	if (cfg_val_parse(k, cfg_tkey_choices(t, buf, sizeof buf), text, &v, flags, why, n))
		return KS_EINPUT;
	return field_store(t, &v, text, dst, why, n);
}

int cfg_field_set(const cfg_tkey_t *t, void *dst, const char *text, err_t *e)
{
	char why[1400];
	int rc = cfg_field_parse(t, dst, text, 0, why, sizeof why);
	if (rc)
		return err_set(e, rc, "[%s] %s: %s", t->key.section, t->key.name, why);
	return 0;
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
		cfg_float_text(x, v, sizeof v);
		cfg_float_text(k->min, lo, sizeof lo);
		cfg_float_text(k->max, hi, sizeof hi);
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
	return t->at.kind == CFG_F_ENUM ? cfg_enum_name(t->at.map, *(const int *)p) : "";
}

const char *cfg_enum_name(const cfg_enum_t *map, int value)
{
	for (const cfg_enum_t *m = map; m && m->name; m++)
		if (m->value == value)
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
