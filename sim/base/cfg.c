/* cfg — see cfg.h. A config's values: made, cloned and freed, grown to
 * keys added to the schema later, read by the accessors, and the places
 * (origins, config files) errors and paths are told against. Reading,
 * presets, conditions, typed structs and output live in the other cfg_*.c
 * files (cfg_int.h lists them).
 */
#include "sim/base/cfg.h"
#include "sim/base/cfg_int.h"
#include "sim/base/cli_voice.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Sets *x (empty) to the default of key i (parsed by cfg_schema_add). */
int cfg_val_default(const cfg_schema_t *s, size_t i, cfg_val_t *x)
{
	x->i = s->defv[i].i;
	x->f = s->defv[i].f;
	x->text = cfg_str_dup(s->defv[i].text);
	return x->text ? 0 : KS_ENOMEM;
}

/* The value of key i: c's own, or for a key added to the schema after c was
 * made (plugin parameters) its default, read from the schema, so reading a
 * const cfg_t never changes it. */
const cfg_val_t *cfg_val_of(const cfg_t *c, size_t i)
{
	return i < c->n ? &c->v[i] : &c->s->defv[i];
}

/* Gives keys added to the schema since the cfg was made (plugin parameters)
 * their defaults. */
int cfg_grow(cfg_t *c)
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
		if (cfg_val_default(s, c->n, &c->v[c->n]))
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
		cfg_val_clear(&c->v[i]);
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
		d->v[i].text = cfg_str_dup(c->v[i].text);
		d->v[i].origin = c->v[i].origin ? cfg_str_dup(c->v[i].origin) : NULL;
		d->v[i].under_text = c->v[i].under_text ? cfg_str_dup(c->v[i].under_text) : NULL;
		d->v[i].under_origin =
		    c->v[i].under_origin ? cfg_str_dup(c->v[i].under_origin) : NULL;
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

/* Index of a key the caller promises exists; a miss is a programming error. */
size_t cfg_must_index(const cfg_t *c, const char *section, const char *name, const char *fn)
{
	ssize_t i = cfg_key_index(c->s, section, name);
	if (i < 0) {
		fprintf(stderr, "kvsim: %s: [%s] %s is not in the config schema\n", fn, section,
		        name);
		abort();
	}
	return (size_t)i;
}

/* Whether an owned key belongs to the policy its section currently names.
 * *sel gets the selected name ("" when the section has no 'name' key). */
bool cfg_owner_active(const cfg_t *c, const cfg_key_t *k, const char **sel)
{
	ssize_t ni = cfg_key_index(c->s, k->section, "name");
	*sel = ni >= 0 ? cfg_val_of(c, (size_t)ni)->text : "";
	return !k->owner || !strcmp(*sel, k->owner);
}

/* ---- accessors ------------------------------------------------------- */

static const cfg_val_t *typed(const cfg_t *c, const char *section, const char *name, const char *fn,
                              cfg_type_t t1, cfg_type_t t2)
{
	size_t i = cfg_must_index(c, section, name, fn);
	cfg_type_t t = c->s->keys[i]->type;
	if (t != t1 && t != t2) {
		fprintf(stderr, "kvsim: %s: [%s] %s is of type %s\n", fn, section, name,
		        cfg_type_name(t));
		abort();
	}
	return cfg_val_of(c, i);
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
	return cfg_val_of(c, cfg_must_index(c, section, name, "cfg_str"))->text;
}

const char *cfg_origin(const cfg_t *c, const char *section, const char *name)
{
	const cfg_val_t *v = cfg_val_of(c, cfg_must_index(c, section, name, "cfg_origin"));
	return v->origin ? v->origin : "default";
}

void cfg_warn_once(const cfg_t *c, const char *section, const char *name, const char *fmt, ...)
{
	size_t i = cfg_must_index(c, section, name, "cfg_warn_once");
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
	return cfg_key_index_dotted(c->s, k);
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
		if (best < 0 || cfg_val_of(c, (size_t)i)->seq > cfg_val_of(c, (size_t)best)->seq)
			best = i;
		k += len + (k[len] == ',');
	}
	if (best < 0) {
		fprintf(stderr, "kvsim: cfg_err_keys: no key given\n");
		abort();
	}
	const cfg_key_t *k = c->s->keys[best];
	const char *org = cfg_val_of(c, (size_t)best)->origin;
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
	if (i >= 0 && cfg_val_of(c, (size_t)i)->origin)
		err_prefix(e, "%s", cfg_val_of(c, (size_t)i)->origin);
}
