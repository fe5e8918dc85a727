/* cfg_load — reading values into a config: INI text and files, and
 * "section.key=value" assignments (--set), with the nearest known section
 * or key suggested for an unknown one.
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
#include "sim/base/cfg.h"
#include "sim/base/cfg_int.h"
#include "sim/base/file.h"
#include "sim/base/near.h"
#include "sim/base/vec.h"

#include <ctype.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
			if (!cfg_section_known(p->c->s, sec)) {
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
	if (!cfg_section_known(s, section)) {
		/* Normally reported by the reader at the header already. */
		char sug[160];
		suggest_section(s, section, sug, sizeof sug);
		return parse_fail(p, KS_EINPUT, "[%s] %s: unknown section%s", section, name, sug);
	}
	ssize_t ki = cfg_key_index(s, section, name);
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
	const char *bad = k->type == CFG_STR ? cfg_str_unstorable(value) : NULL;
	if (bad)
		return parse_fail(p, KS_EINPUT, "[%s] %s: %s", section, name, bad);
	if (cfg_val_parse(k, cfg_key_choices(s, (size_t)ki), value, &v, true, why, sizeof why))
		return parse_fail(p, KS_EINPUT, "[%s] %s: %s", section, name, why);
	char org[512];
	snprintf(org, sizeof org, "%s:%d", p->origin, p->line);
	v.text = cfg_val_canonical(k, value, &v);
	v.origin = cfg_str_dup(org);
	if (VEC_GROW(p->st, p->capst, p->nst + 1, 16)) {
		cfg_val_clear(&v);
		return parse_fail(p, KS_ENOMEM, "out of memory");
	}
	if (!v.text || !v.origin) {
		cfg_val_clear(&v);
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
	if (!cfg_section_known(s, sec)) {
		suggest_section(s, sec, sug, sizeof sug);
		rc =
		    err_set(e, KS_EINPUT, "%s: [%s] %s: unknown section%s", origin, sec, name, sug);
		goto out;
	}
	ssize_t ki = cfg_key_index(s, sec, name);
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
	if (cfg_val_parse(k, cfg_key_choices(s, (size_t)ki), val, &v, true, why, sizeof why)) {
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
