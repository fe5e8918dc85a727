/* cfg_when — when a key acts: the conditions declared beside keys or
 * sections, checked against the schema and evaluated against a config, and
 * whether a key has no effect there (cfg_key_inert; grammar in cfg.h).
 */
#include "sim/base/cfg.h"
#include "sim/base/cfg_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int cfg_schema_set_section_when(cfg_schema_t *s, const char *section, const cfg_when_t *w)
{
	struct swhen *n = realloc(s->swhen, (s->nswhen + 1) * sizeof *n);
	if (!n)
		return KS_ENOMEM;
	s->swhen = n;
	s->swhen[s->nswhen++] = (struct swhen){section, w};
	return 0;
}

const cfg_when_t *cfg_key_when_i(const cfg_schema_t *s, size_t i)
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
	ssize_t i = cfg_key_index(s, section, name);
	return i < 0 ? NULL : cfg_key_when_i(s, (size_t)i);
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
		i = cfg_key_index_dotted(x->s, k);
	}
	if (i < 0)
		when_bad(x, w, "not a key of the config schema");
	return i;
}

/* The number held by key i (bools 0/1). */
static double when_number(const when_ctx_t *x, size_t i)
{
	const cfg_val_t *v = cfg_val_of(x->c, i);
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
	const char *text = x->c ? cfg_val_of(x->c, (size_t)i)->text : "";
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
			if (cfg_val_parse(k, cfg_key_choices(x->s, (size_t)i), a, &v,
			                  k->type == CFG_ENUM && *cfg_key_choices(x->s, (size_t)i)
			                      ? CFG_VAL_CHOICES
			                      : 0,
			                  why, sizeof why))
				return when_bad(x, alt, why);
			if (x->c)
				any |= numeric ? v.f == cfg_val_of(x->c, (size_t)i)->f &&
				                     v.i == cfg_val_of(x->c, (size_t)i)->i
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
			cfg_float_text(r, num, sizeof num);
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
		const cfg_when_t *w = cfg_key_when_i(s, i);
		char why[512];
		bool acts;
		when_ctx_t x = {s, NULL, why, sizeof why, ""};
		if (w && (!w->cond || when_read(&x, w->cond, &acts)))
			return cfg_schema_bad(s->keys[i],
			                      w->cond ? why : "a condition without cond");
	}
	return 0;
}

/* Whether key i has no effect in c (cfg_key_inert). */
bool cfg_key_inert_i(const cfg_t *c, size_t i, char *why, size_t n)
{
	const cfg_key_t *k = c->s->keys[i];
	const char *sel;
	if (k->owner && !cfg_owner_active(c, k, &sel)) {
		snprintf(why, n, "ignored: parameter of '%s', but name = %s", k->owner, sel);
		return true;
	}
	const cfg_when_t *w = cfg_key_when_i(c->s, i);
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
	return cfg_key_inert_i(c, cfg_must_index(c, section, name, "cfg_key_inert"), why, n);
}
