/* cfg_load — reading values into a config: INI text and files, and
 * "section.key=value" assignments (--set), with the nearest known section
 * or key suggested for an unknown one.
 *
 * The text is read by ini_scan (the one INI reader, ini_scan.h: line
 * numbers, section headers checked even when the section holds no key, an
 * indented "key = v" an ordinary assignment); this file checks each key
 * against the schema. A load is all-or-nothing: values are staged and
 * committed only when the whole text is valid.
 */
#include "sim/base/cfg.h"
#include "sim/base/cfg_int.h"
#include "sim/base/ini_scan.h"
#include "sim/base/vec.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The schema's keys as a set for ini_suggest_*. */
static const cfg_key_t *schema_key(const void *set, size_t i)
{
	return ((const cfg_schema_t *)set)->keys[i];
}

static ini_names_t schema_names(const cfg_schema_t *s)
{
	return (ini_names_t){s, s->n, schema_key};
}

/* Key i, or the key alias i stands for; -1 when an alias names no key. */
static ssize_t key_target(const cfg_schema_t *s, ssize_t i)
{
	if (i < 0 || !cfg_key_alias(s, (size_t)i))
		return i;
	return cfg_key_index_dotted(s, cfg_key_alias(s, (size_t)i));
}

typedef struct staged {
	size_t ki;
	cfg_val_t v;
} staged_t;

typedef struct parse {
	cfg_t *c;
	const char *origin;
	int *seen; /* per key: line it was set on in this text, 0 if not */
	staged_t *st;
	size_t nst, capst;
} parse_t;

/* A section header: known to the schema, or refused at its line. */
static int parse_section(void *user, const char *sec, int line, err_t *e)
{
	parse_t *p = user;
	(void)line;
	if (cfg_section_known(p->c->s, sec))
		return 0;
	char sug[160];
	ini_names_t k = schema_names(p->c->s);
	ini_suggest_section(&k, sec, sug, sizeof sug);
	return err_set(e, KS_EINPUT, "[%s]: unknown section%s", sec, sug);
}

static int parse_key(void *user, const char *section, const char *name, const char *value,
                     int line, err_t *e)
{
	parse_t *p = user;
	const cfg_schema_t *s = p->c->s;
	ini_names_t names = schema_names(s);
	if (!cfg_section_known(s, section)) {
		/* Normally reported at the header already. */
		char sug[160];
		ini_suggest_section(&names, section, sug, sizeof sug);
		return err_set(e, KS_EINPUT, "[%s] %s: unknown section%s", section, name, sug);
	}
	ssize_t ki = cfg_key_index(s, section, name);
	if (ki < 0 || (size_t)ki >= p->c->n) {
		char sug[200];
		ini_suggest_key(&names, section, name, sug, sizeof sug);
		return err_set(e, KS_EINPUT, "[%s] %s: unknown key%s", section, name, sug);
	}
	if ((ki = key_target(s, ki)) < 0)
		return err_set(e, KS_EINPUT, "[%s] %s: alias of a key not in the schema", section,
		               name);
	if (p->seen[ki])
		return err_set(e, KS_EINPUT, "[%s] %s: duplicate key (first set on line %d)",
		               section, name, p->seen[ki]);
	const cfg_key_t *k = s->keys[ki];
	char why[512];
	cfg_val_t v = {0};
	const char *bad = k->type == CFG_STR ? cfg_str_unstorable(value) : NULL;
	if (bad)
		return err_set(e, KS_EINPUT, "[%s] %s: %s", section, name, bad);
	if (cfg_val_parse(k, cfg_key_choices(s, (size_t)ki), value, &v, CFG_VAL_CHOICES, why,
	                  sizeof why))
		return err_set(e, KS_EINPUT, "[%s] %s: %s", section, name, why);
	char org[512];
	snprintf(org, sizeof org, "%s:%d", p->origin, line);
	v.text = cfg_val_canonical(k, value, &v);
	v.origin = cfg_str_dup(org);
	if (!v.text || !v.origin || VEC_GROW(p->st, p->capst, p->nst + 1, 16)) {
		cfg_val_clear(&v);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	p->seen[ki] = line;
	p->st[p->nst].ki = (size_t)ki;
	p->st[p->nst].v = v;
	p->nst++;
	return 0;
}

int cfg_load_string(cfg_t *c, const char *origin, const char *text, err_t *e)
{
	if (cfg_grow(c))
		return err_set(e, KS_ENOMEM, "%s: out of memory", origin);
	parse_t p = {.c = c, .origin = origin};
	p.seen = calloc(c->n ? c->n : 1, sizeof *p.seen);
	if (!p.seen)
		return err_set(e, KS_ENOMEM, "%s: out of memory", origin);
	static const ini_scan_ops_t ops = {parse_section, parse_key};
	int code = ini_scan(origin, text, &ops, &p, e);
	for (size_t i = 0; i < p.nst; i++) {
		if (code) {
			cfg_val_clear(&p.st[i].v);
		} else {
			cfg_val_clear(&c->v[p.st[i].ki]);
			c->v[p.st[i].ki] = p.st[i].v;
			c->v[p.st[i].ki].seq = ++c->seq; /* staged in line order */
		}
	}
	free(p.st);
	free(p.seen);
	return code;
}

static int load_string(void *c, const char *origin, const char *text, err_t *e)
{
	return cfg_load_string(c, origin, text, e);
}

int cfg_load_file(cfg_t *c, const char *path, err_t *e)
{
	return ini_file_parse(path, load_string, c, e);
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
	char *a = cfg_grow(c) ? NULL : cfg_str_dup(assignment);
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
	ini_names_t names = schema_names(s);
	if (!cfg_section_known(s, sec)) {
		ini_suggest_section(&names, sec, sug, sizeof sug);
		rc =
		    err_set(e, KS_EINPUT, "%s: [%s] %s: unknown section%s", origin, sec, name, sug);
		goto out;
	}
	ssize_t ki = cfg_key_index(s, sec, name);
	if (ki < 0 || (size_t)ki >= c->n) {
		ini_suggest_key(&names, sec, name, sug, sizeof sug);
		rc = err_set(e, KS_EINPUT, "%s: [%s] %s: unknown key%s", origin, sec, name, sug);
		goto out;
	}
	if ((ki = key_target(s, ki)) < 0) {
		rc = err_set(e, KS_EINPUT, "%s: [%s] %s: alias of a key not in the schema", origin,
		             sec, name);
		goto out;
	}
	const cfg_key_t *k = s->keys[ki];
	if (cfg_key_load(s, (size_t)ki)) {
		rc = err_set(e, KS_EINPUT,
		             "%s: [%s] %s: only a config file sets it (it says what the file "
		             "starts from; %s applies on top of the file)",
		             origin, sec, name, origin);
		goto out;
	}
	const char *bad = k->type == CFG_STR ? cfg_str_unstorable(val) : NULL;
	if (bad) {
		rc = err_set(e, KS_EINPUT, "%s: [%s] %s: %s", origin, sec, name, bad);
		goto out;
	}
	cfg_val_t v = {0};
	if (cfg_val_parse(k, cfg_key_choices(s, (size_t)ki), val, &v, CFG_VAL_CHOICES, why, sizeof why)) {
		rc = err_set(e, KS_EINPUT, "%s: [%s] %s: %s", origin, sec, name, why);
		goto out;
	}
	v.text = cfg_val_canonical(k, val, &v);
	v.origin = cfg_str_dup(origin);
	if (!v.text || !v.origin) {
		cfg_val_clear(&v);
		rc = err_set(e, KS_ENOMEM, "%s: out of memory", origin);
		goto out;
	}
	v.seq = ++c->seq;
	cfg_val_clear(&c->v[ki]);
	c->v[ki] = v;
out:
	free(a);
	return rc;
}

int cfg_set(cfg_t *c, const char *assignment, err_t *e)
{
	return cfg_set_as(c, assignment, "--set", e);
}
