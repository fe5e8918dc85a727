/* cfg_val — one value of a key: its text parsed against the key's type,
 * range and choices, its canonical text (what cfg_write prints and cfg_str
 * gives), and the strings that cannot round-trip through an INI file. The
 * whole-number reader every kvsim input uses (cfg_parse_whole) lives here
 * too. Knows keys, never a schema or a config (see cfg_int.h).
 */
#include "sim/base/cfg.h"
#include "sim/base/cfg_int.h"
#include "sim/base/mem.h"
#include "sim/base/near.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

char *cfg_str_dup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
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
void cfg_float_text(double x, char *buf, size_t len)
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

/* See cfg_int.h (flags CFG_VAL_*). */
int cfg_val_parse(const cfg_key_t *k, const char *choices, const char *text, cfg_val_t *v,
                  int flags, char *why, size_t whylen)
{
	const char *unit = k->unit && *k->unit ? k->unit : "";
	const char *sp = *unit ? " " : "";
	bool ranged = k->min < k->max, above = ranged && (flags & CFG_VAL_ABOVE_MIN);
	char lo[32] = "", hi[32] = "";
	if (ranged) {
		cfg_float_text(k->min, lo, sizeof lo);
		cfg_float_text(k->max, hi, sizeof hi);
	}
	const char *open = above ? "(" : "["; /* the range as "(0, 1]" when min is out */
	v->i = 0;
	v->f = 0;
	switch (k->type) {
	case CFG_INT: {
		int64_t x, ilo = ranged ? int_bound(above ? floor(k->min) + 1 : ceil(k->min))
		                        : INT64_MIN,
			   ihi = ranged ? int_bound(floor(k->max)) : INT64_MAX;
		int r = cfg_parse_whole(text, flags & CFG_VAL_WHOLE_E ? CFG_WHOLE_ENOTATION : 0, ilo,
		                        ihi, &x);
		if (r == CFG_NOT_WHOLE) {
			snprintf(why, whylen, "expected an integer, got '%s'", text);
			return -1;
		}
		if (r == CFG_OUT_OF_RANGE) {
			if (!ranged) { /* the range of a 64-bit integer */
				snprintf(lo, sizeof lo, "%lld", (long long)ilo);
				snprintf(hi, sizeof hi, "%lld", (long long)ihi);
			}
			snprintf(why, whylen, "%s%s%s is out of range %s%s, %s]", text, sp, unit, open,
			         lo, hi);
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
		if (ranged && (x < k->min || x > k->max || (above && x == k->min))) {
			snprintf(why, whylen, "%s%s%s is out of range %s%s, %s]", text, sp, unit, open,
			         lo, hi);
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
		if ((flags & CFG_VAL_CHOICES) && !choice_has(choices, text)) {
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
char *cfg_val_canonical(const cfg_key_t *k, const char *text, const cfg_val_t *v)
{
	char buf[64];
	switch (k->type) {
	case CFG_INT:
		snprintf(buf, sizeof buf, "%lld", (long long)v->i);
		return cfg_str_dup(buf);
	case CFG_FLOAT:
		cfg_float_text(v->f, buf, sizeof buf);
		return cfg_str_dup(buf);
	case CFG_BOOL:
		return cfg_str_dup(v->i ? "true" : "false");
	case CFG_STR:
	case CFG_ENUM:
		break;
	}
	return cfg_str_dup(text);
}

/* Whether a string value survives a write/load round trip through inih:
 * no line breaks, no blanks at either end (inih strips them) and no ';'
 * that the written line "key = VALUE" puts after a blank (an inline
 * comment): not after a blank inside, and not first, since "key =;x" keeps
 * the ';' but the writer's "key = ;x" loses the value. Such values are
 * refused wherever they come from (file, --set, preset, schema default)
 * rather than quoted, so the written config stays plain INI that reads the
 * same in any INI reader, and /config in HDF5 files loads back unchanged. */
const char *cfg_str_unstorable(const char *v)
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

void cfg_val_clear(cfg_val_t *v)
{
	FREE_ALL(v->text, v->origin, v->under_text, v->under_origin);
	v->text = v->origin = v->under_text = v->under_origin = NULL;
}
