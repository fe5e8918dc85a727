/* out_grid — sweep axes, point enumeration, point configs and identities
 * (see out_sweep.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/cli_voice.h"
#include "sim/base/mem.h"
#include "sim/base/rng.h"
#include "sim/out/out_sweep.h"

#define OUT_GRID_MAX_VALUES 100000

typedef struct axis {
	char *key;
	char **values;
	size_t n;
} axis_t;

struct out_grid {
	axis_t *axes; /* grid axes, in the order given */
	size_t n_axes;
	axis_t *zip;  /* paired axes */
	size_t n_zip;
	size_t zip_pos; /* position of the paired axis among the grid axes */
	unsigned seeds;
};

out_grid_t *out_grid_new(void)
{
	out_grid_t *g = calloc(1, sizeof *g);
	if (g)
		g->seeds = 1;
	return g;
}

static void axis_free(axis_t *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->values[i]);
	free(a->values);
	free(a->key);
}

void out_grid_free(out_grid_t *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n_axes; i++)
		axis_free(&g->axes[i]);
	for (size_t i = 0; i < g->n_zip; i++)
		axis_free(&g->zip[i]);
	free(g->axes);
	free(g->zip);
	free(g);
}

static int parse_num(const char *s, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	return *s && !*end && !errno && isfinite(*v);
}

static int push_value(axis_t *a, const char *s, size_t len)
{
	char **v = realloc(a->values, (a->n + 1) * sizeof *v);
	if (!v)
		return KS_ENOMEM;
	a->values = v;
	if (!(v[a->n] = strndup(s, len)))
		return KS_ENOMEM;
	a->n++;
	return 0;
}

/* start:stop:step with stop inclusive (to within a millionth of a step);
 * values print as integers when start and step are integers. */
static int parse_range(axis_t *a, const char *spec, const char *vals, int *is_range,
		       err_t *e)
{
	*is_range = 0;
	const char *c1 = strchr(vals, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c2 || strchr(c2 + 1, ':') || strchr(vals, ','))
		return 0;
	char b0[64], b1[64], b2[64];
	if ((size_t)(c1 - vals) >= sizeof b0 || (size_t)(c2 - c1 - 1) >= sizeof b1 ||
	    strlen(c2 + 1) >= sizeof b2)
		return 0;
	snprintf(b0, sizeof b0, "%.*s", (int)(c1 - vals), vals);
	snprintf(b1, sizeof b1, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	snprintf(b2, sizeof b2, "%s", c2 + 1);
	double lo, hi, step;
	if (!parse_num(b0, &lo) || !parse_num(b1, &hi) || !parse_num(b2, &step))
		return 0;
	*is_range = 1;
	if (step == 0 || (hi - lo) / step < -1e-9)
		return err_set(e, KS_EINPUT,
			       "--grid %s: step must be non-zero and go from start to stop", spec);
	double count = floor((hi - lo) / step + 1e-6) + 1;
	if (count > OUT_GRID_MAX_VALUES)
		return err_set(e, KS_EINPUT, "--grid %s: more than %d values", spec,
			       OUT_GRID_MAX_VALUES);
	int ints = lo == floor(lo) && step == floor(step) && fabs(lo) < 1e15 && fabs(hi) < 1e15;
	for (size_t i = 0; i < (size_t)count; i++) {
		char buf[64];
		double v = lo + (double)i * step;
		if (ints)
			snprintf(buf, sizeof buf, "%lld", (long long)llround(v));
		else /* 12 significant digits hide the drift of lo + i * step */
			snprintf(buf, sizeof buf, "%.12g", v);
		if (push_value(a, buf, strlen(buf)))
			return err_set(e, KS_ENOMEM, "out of memory");
	}
	return 0;
}

int out_grid_add(out_grid_t *g, const char *spec, int zip, err_t *e)
{
	const char *eq = strchr(spec, '=');
	const char *opt = zip ? "--zip" : "--grid";
	if (!eq || eq == spec || !eq[1])
		return err_set(e, KS_EINPUT, "%s %s: expected section.key=v1,v2,... or "
					     "section.key=start:stop:step", opt, spec);
	const char *dot = memchr(spec, '.', (size_t)(eq - spec));
	if (!dot)
		return err_set(e, KS_EINPUT, "%s %s: key must be section.key", opt, spec);
	axis_t a = {0};
	if (!(a.key = strndup(spec, (size_t)(eq - spec))))
		return err_set(e, KS_ENOMEM, "out of memory");
	for (size_t i = 0; i < g->n_axes; i++)
		if (!strcmp(g->axes[i].key, a.key))
			goto dup;
	for (size_t i = 0; i < g->n_zip; i++)
		if (!strcmp(g->zip[i].key, a.key))
			goto dup;
	int is_range, rc = parse_range(&a, spec, eq + 1, &is_range, e);
	if (rc) {
		axis_free(&a);
		return rc;
	}
	if (!is_range) {
		const char *s = eq + 1;
		for (;;) {
			const char *c = strchr(s, ',');
			size_t len = c ? (size_t)(c - s) : strlen(s);
			if (!len) {
				axis_free(&a);
				return err_set(e, KS_EINPUT, "%s %s: empty value", opt, spec);
			}
			if (push_value(&a, s, len)) {
				axis_free(&a);
				return err_set(e, KS_ENOMEM, "out of memory");
			}
			if (!c)
				break;
			s = c + 1;
		}
	}
	if (zip && g->n_zip && a.n != g->zip[0].n) {
		rc = err_set(e, KS_EINPUT, "--zip %s: %zu values, but --zip %s has %zu", a.key, a.n,
			     g->zip[0].key, g->zip[0].n);
		axis_free(&a);
		return rc;
	}
	axis_t **arr = zip ? &g->zip : &g->axes;
	size_t *n = zip ? &g->n_zip : &g->n_axes;
	axis_t *na = realloc(*arr, (*n + 1) * sizeof *na);
	if (!na) {
		axis_free(&a);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	*arr = na;
	if (zip && !g->n_zip)
		g->zip_pos = g->n_axes;
	na[(*n)++] = a;
	return 0;
dup:
	rc = err_set(e, KS_EINPUT, "%s %s: key %s is already swept", opt, spec, a.key);
	axis_free(&a);
	return rc;
}

int out_grid_set_seeds(out_grid_t *g, unsigned n, err_t *e)
{
	if (n < 1 || n > OUT_GRID_MAX_VALUES)
		return err_set(e, KS_EINPUT, "--seeds %u: must be 1..%d", n, OUT_GRID_MAX_VALUES);
	g->seeds = n;
	return 0;
}

size_t out_grid_points(const out_grid_t *g)
{
	size_t n = g->seeds;
	for (size_t i = 0; i < g->n_axes; i++)
		n *= g->axes[i].n;
	if (g->n_zip)
		n *= g->zip[0].n;
	return n;
}


static uint64_t seed_raw(uint64_t base, unsigned i)
{
	return i ? rng_splitmix64(base ^ rng_splitmix64(i)) & 0x7fffffffULL : base;
}

uint64_t out_seed_derive(uint64_t base, unsigned i)
{
	/* 31 bits keep seeds valid for any int-typed seed key; a collision with an
	 * earlier seed of the same base moves on to the next candidate. */
	uint64_t s = seed_raw(base, i);
	for (unsigned k = 0; i && k < i; k++) {
		if (seed_raw(base, k) == s) {
			s = (s + 1) & 0x7fffffffULL;
			k = (unsigned)-1; /* recheck from the start */
		}
	}
	return s;
}

static int split_key(const char *key, char *sec, size_t cs, char *name, size_t cn)
{
	const char *dot = strrchr(key, '.');
	if (!dot || (size_t)(dot - key) >= cs || strlen(dot + 1) >= cn)
		return -1;
	snprintf(sec, cs, "%.*s", (int)(dot - key), key);
	snprintf(name, cn, "%s", dot + 1);
	return 0;
}

void out_point_id(const char *config_text, uint64_t seed, const char *inputs, char id[65])
{
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	char sb[40];
	snprintf(sb, sizeof sb, "\nseed=%llu\n", (unsigned long long)seed);
	sha256_init(&h);
	/* Values only: comment lines carry key docs, which may change between
	 * versions without changing what a point computes. */
	for (const char *l = config_text; *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l + 1) : strlen(l);
		if (*l != '#')
			sha256_update(&h, len, (const uint8_t *)l);
		l += len;
	}
	sha256_update(&h, strlen(sb), (const uint8_t *)sb);
	/* Only a point that reads files has its inputs in its identity, so the
	 * id of one that reads none is what it was before inputs counted. */
	if (inputs && *inputs) {
		sha256_update(&h, 8, (const uint8_t *)"inputs:\n");
		sha256_update(&h, strlen(inputs), (const uint8_t *)inputs);
	}
	sha256_digest(&h, sizeof d, d);
	for (int b = 0; b < SHA256_DIGEST_SIZE; b++)
		snprintf(id + 2 * b, 3, "%02x", d[b]);
}

void out_point_free(out_point_t *p)
{
	if (!p)
		return;
	cfg_free(p->cfg);
	free(p->params);
	free(p->inputs);
	memset(p, 0, sizeof *p);
}

/* origin labels the value ("--grid", "--seeds"): errors and cfg_origin name it */
static int set_value(cfg_t *c, const char *key, const char *val, const char *origin, err_t *e)
{
	size_t n = strlen(key) + strlen(val) + 2;
	char *a = malloc(n);
	if (!a)
		return err_set(e, KS_ENOMEM, "out of memory");
	snprintf(a, n, "%s=%s", key, val);
	int rc = cfg_set_as(c, a, origin, e);
	free(a);
	return rc;
}

/* The axis values of point i (g->n_axes + g->n_zip of them, in the order
 * the axes were given) into params; returns the point's seed index. */
static unsigned point_params(const out_grid_t *g, size_t i, out_param_t *params)
{
	/* Mixed radix: seed fastest, then the last axis; the paired axis sits
	 * where the first --zip was given. */
	size_t rest = i;
	unsigned seed_i = (unsigned)(rest % g->seeds);
	rest /= g->seeds;
	size_t slots = g->n_axes + (g->n_zip ? 1 : 0);
	size_t k = g->n_axes + g->n_zip;
	for (size_t s = slots; s-- > 0;) {
		int is_zip = g->n_zip && s == g->zip_pos;
		size_t ai = g->n_zip && s > g->zip_pos ? s - 1 : s;
		size_t n = is_zip ? g->zip[0].n : g->axes[ai].n;
		size_t v = rest % n;
		rest /= n;
		if (is_zip) {
			for (size_t z = g->n_zip; z-- > 0;)
				params[--k] = (out_param_t){g->zip[z].key, g->zip[z].values[v]};
		} else {
			params[--k] = (out_param_t){g->axes[ai].key, g->axes[ai].values[v]};
		}
	}
	return seed_i;
}

/* The axis values of a point set on c (a clone of the base), each as a
 * sweep axis's (CFG_ORIGIN_GRID). */
static int set_params(cfg_t *c, const out_param_t *params, size_t n, err_t *e)
{
	int rc = 0;
	for (size_t j = 0; j < n && !rc; j++)
		if ((rc = set_value(c, params[j].key, params[j].value, CFG_ORIGIN_GRID, e)))
			err_prefix(e, "sweep axis %s", params[j].key);
	return rc;
}

int out_point_make(const out_grid_t *g, const cfg_t *base, const char *seed_key, size_t i,
		   out_point_t *p, err_t *e)
{
	memset(p, 0, sizeof *p);
	size_t total = out_grid_points(g);
	if (i >= total)
		return err_set(e, KS_EINPUT, "point %zu out of range (%zu points)", i, total);
	p->index = i;
	p->n_params = g->n_axes + g->n_zip;
	p->params = p->n_params ? calloc(p->n_params, sizeof *p->params) : NULL;
	p->cfg = cfg_clone(base);
	if ((p->n_params && !p->params) || !p->cfg) {
		out_point_free(p);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	unsigned seed_i = point_params(g, i, p->params);
	int rc = set_params(p->cfg, p->params, p->n_params, e);
	char sec[128], name[128];
	const cfg_key_t *sk = NULL;
	if (!rc && seed_key && !split_key(seed_key, sec, sizeof sec, name, sizeof name))
		sk = cfg_schema_find(cfg_schema(p->cfg), sec, name);
	if (!rc && !sk && g->seeds > 1)
		rc = err_set(e, KS_EINPUT, "--seeds %u: the config has no seed key %s", g->seeds,
			     seed_key ? seed_key : "(none)");
	if (!rc && sk) {
		uint64_t base_seed = (uint64_t)cfg_int(p->cfg, sec, name);
		p->seed = out_seed_derive(base_seed, seed_i);
		if (seed_i) {
			char v[32];
			snprintf(v, sizeof v, "%llu", (unsigned long long)p->seed);
			rc = set_value(p->cfg, seed_key, v, "--seeds", e);
		}
	}
	if (!rc)
		rc = cfg_finalize(p->cfg, e);
	char *text = rc ? NULL : cfg_text(p->cfg);
	if (!rc && !text)
		rc = err_set(e, KS_ENOMEM, "out of memory");
	if (rc) {
		free(text);
		out_point_free(p);
		return rc;
	}
	if ((rc = out_point_inputs(p->cfg, NULL, 0, &p->inputs, e))) {
		free(text);
		out_point_free(p);
		return rc;
	}
	cfg_digest(p->cfg, p->digest);
	out_point_id(text, p->seed, p->inputs, p->id);
	snprintf(p->h5_rel, sizeof p->h5_rel, "runs/%.16s.h5", p->id);
	free(text);
	return 0;
}

int out_grid_note_inert(const out_grid_t *g, const cfg_t *base, FILE *f)
{
	size_t np = g->n_axes + g->n_zip, points = out_grid_points(g) / g->seeds;
	out_param_t *params = calloc(np ? np : 1, sizeof *params);
	size_t *count = calloc(np ? np : 1, sizeof *count), *first = calloc(np ? np : 1, sizeof *first);
	char(*why)[1024] = calloc(np ? np : 1, sizeof *why);
	int rc = !params || !count || !first || !why ? KS_ENOMEM : 0;
	/* seeds change no key a condition reads: one pass per point */
	for (size_t pt = 0; !rc && f && np && pt < points; pt++) {
		cfg_t *c = cfg_clone(base);
		err_t e = {0};
		if (!c) {
			rc = KS_ENOMEM;
			break;
		}
		point_params(g, pt * g->seeds, params);
		/* a point that does not build is the sweep's to report */
		if (!set_params(c, params, np, &e) && !cfg_finalize(c, &e)) {
			for (size_t k = 0; k < np; k++) {
				char sec[128], name[128], w[1024];
				if (split_key(params[k].key, sec, sizeof sec, name, sizeof name) ||
				    !cfg_schema_find(cfg_schema(c), sec, name) ||
				    !cfg_key_inert(c, sec, name, w, sizeof w))
					continue;
				if (!count[k]++) {
					first[k] = pt;
					memcpy(why[k], w, sizeof w);
				}
			}
		}
		cfg_free(c);
	}
	for (size_t k = 0; !rc && f && k < np; k++) {
		if (!count[k])
			continue;
		point_params(g, first[k] * g->seeds, params);
		fprintf(f,
		        "kvsim%s%s: warning: --grid %s: on %zu of %zu points (the first: %s = %s): "
		        "%s; they still run, each with its own row\n",
		        *cli_command() ? " " : "", cli_command(), params[k].key, count[k], points,
		        params[k].key, params[k].value, why[k]);
	}
	FREE_ALL(params, count, first, why);
	return rc;
}
