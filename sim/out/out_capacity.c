/* out_capacity — capacity search over a sweep grid: rounds of probes, each
 * round one out_sweep_run (see out_sweep.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/out/out_sweep.h"

typedef struct search {
	double a, b;      /* highest value that met the target, lowest that did not (NaN: none) */
	double probe[2];  /* this round's probes */
	int n_probe;
	unsigned probes;
	const char *verdict; /* NULL while searching */
} search_t;

/* A growing "key=v1,v2,..." axis spec. */
typedef struct spec {
	char *s;
	size_t n, cap;
} spec_t;

static int spec_add(spec_t *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->n + (size_t)k + 1 > b->cap) {
		size_t cap = (b->n + (size_t)k + 1) * 2;
		char *s = realloc(b->s, cap);
		if (!s)
			return KS_ENOMEM;
		b->s = s;
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	b->n += (size_t)k;
	return 0;
}

/* v as its probe's text (6 significant digits) and the value that text is */
static double probe_value(double v, char txt[32])
{
	snprintf(txt, 32, "%.6g", v);
	return strtod(txt, NULL);
}

/* Decides s after a round: a verdict, or its next probe. */
static void search_next(search_t *s, const out_capacity_opts_t *co)
{
	s->n_probe = 0;
	if (s->verdict)
		return;
	if (isnan(s->a)) {
		s->verdict = "lo_fails";
		return;
	}
	if (isnan(s->b)) {
		s->verdict = "hi_passes";
		return;
	}
	if (s->b / s->a <= 1 + co->tol) {
		s->verdict = "bracketed";
		return;
	}
	if (s->probes >= co->max_probes) {
		s->verdict = "probe_limit";
		return;
	}
	char txt[32];
	double m = probe_value(sqrt(s->a * s->b), txt);
	if (!(m > s->a && m < s->b)) { /* the bracket is below the probes' precision */
		s->verdict = "bracketed";
		return;
	}
	s->probe[s->n_probe++] = m;
}

/* The round's probes as a zipped grid: the point's parameters, key, and
 * the seed when the grid has several. */
static int round_grid(const out_point_t *pts, const search_t *ss, size_t n, int seeds,
		      const out_capacity_opts_t *co, const char *seed_key, out_grid_t **out,
		      size_t *n_probes, err_t *e)
{
	size_t np = n ? pts[0].n_params : 0;
	size_t n_axes = np + 1 + (seeds > 1);
	spec_t *sp = calloc(n_axes, sizeof *sp);
	out_grid_t *g = out_grid_new();
	int rc = sp && g ? 0 : KS_ENOMEM;
	size_t m = 0;
	for (size_t i = 0; !rc && i < n; i++)
		for (int j = 0; !rc && j < ss[i].n_probe; j++, m++) {
			const char *sep = m ? "," : "";
			char txt[32];
			probe_value(ss[i].probe[j], txt);
			for (size_t k = 0; !rc && k < np; k++)
				rc = spec_add(&sp[k], "%s%s%s", m ? "" : pts[i].params[k].key,
					      m ? sep : "=", pts[i].params[k].value);
			if (!rc)
				rc = spec_add(&sp[np], "%s%s%s", m ? "" : co->key, m ? sep : "=", txt);
			if (!rc && seeds > 1)
				rc = spec_add(&sp[np + 1], "%s%s%llu", m ? "" : seed_key, m ? sep : "=",
					      (unsigned long long)pts[i].seed);
		}
	if (rc)
		rc = err_set(e, KS_ENOMEM, "out of memory");
	for (size_t k = 0; !rc && m && k < n_axes; k++)
		rc = out_grid_add(g, sp[k].s, 1, e);
	for (size_t k = 0; sp && k < n_axes; k++)
		free(sp[k].s);
	free(sp);
	if (rc) {
		out_grid_free(g);
		return rc;
	}
	*out = g;
	*n_probes = m;
	return 0;
}

/* Runs the round's probes and folds each one's verdict into its search. */
static int run_round(const out_point_t *pts, search_t *ss, size_t n, int seeds,
		     const cfg_t *base, const out_sweep_opts_t *so,
		     const out_capacity_opts_t *co, err_t *e)
{
	out_grid_t *g;
	size_t m;
	int rc = round_grid(pts, ss, n, seeds, co, so->seed_key, &g, &m, e);
	if (rc || !m) {
		if (!rc)
			out_grid_free(g);
		return rc;
	}
	out_sweep_stats_t st;
	out_catalog_t *cat = NULL;
	rc = out_sweep_run(g, base, so, &st, e);
	if (!rc)
		rc = out_catalog_open(so->dir, 1, &cat, e);
	size_t j = 0;
	for (size_t i = 0; !rc && i < n; i++)
		for (int k = 0; !rc && k < ss[i].n_probe; k++, j++) {
			out_point_t pt;
			if ((rc = out_point_make(g, base, so->seed_key, j, &pt, e)))
				break;
			int status;
			double v;
			rc = out_catalog_metric(cat, pt.id, co->metric, &status, &v, e);
			out_point_free(&pt);
			if (rc)
				break;
			search_t *s = &ss[i];
			double x = ss[i].probe[k];
			s->probes++;
			if (status != OUT_RUN_DONE)
				s->verdict = "failed";
			else if (v >= co->target)
				s->a = isnan(s->a) || x > s->a ? x : s->a;
			else
				s->b = isnan(s->b) || x < s->b ? x : s->b;
		}
	out_catalog_close(cat);
	out_grid_free(g);
	return rc;
}

static int store(const out_sweep_opts_t *so, const out_capacity_opts_t *co,
		 const out_capacity_result_t *r, size_t n, err_t *e)
{
	out_catalog_t *cat = NULL;
	int rc = out_catalog_open(so->dir, 0, &cat, e);
	for (size_t i = 0; !rc && i < n; i++) {
		out_capacity_row_t row = {r[i].point, r[i].seed, r[i].params, co->key,
					  co->metric, r[i].verdict, co->target, r[i].value,
					  r[i].lo, r[i].hi, r[i].probes};
		rc = out_catalog_capacity_put(cat, &row, e);
	}
	out_catalog_close(cat);
	return rc;
}

int out_capacity_run(const out_grid_t *g, const cfg_t *base, const out_sweep_opts_t *so,
		     const out_capacity_opts_t *co, out_capacity_result_t **res, size_t *n_res,
		     err_t *e)
{
	*res = NULL;
	*n_res = 0;
	if (!(co->lo > 0 && co->hi > co->lo && isfinite(co->hi)))
		return err_set(e, KS_EINPUT, "--capacity %s=%g:%g: need 0 < LO < HI", co->key, co->lo,
			       co->hi);
	if (!(co->tol > 0) || co->max_probes < 2)
		return err_set(e, KS_EINPUT,
			       "--capacity-tol must be > 0 and --capacity-probes at least 2");
	size_t n = out_grid_points(g);
	out_point_t *pts = calloc(n ? n : 1, sizeof *pts);
	search_t *ss = calloc(n ? n : 1, sizeof *ss);
	out_capacity_result_t *r = calloc(n ? n : 1, sizeof *r);
	size_t made = 0;
	int rc = pts && ss && r ? 0 : err_set(e, KS_ENOMEM, "out of memory");
	for (; !rc && made < n; made++)
		rc = out_point_make(g, base, so->seed_key, made, &pts[made], e);
	int seeds = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		for (size_t k = 0; k < pts[i].n_params; k++)
			if (!strcmp(pts[i].params[k].key, co->key))
				rc = err_set(e, KS_EINPUT, "--capacity %s: also a --grid or --zip axis",
					     co->key);
		seeds |= pts[i].seed != pts[0].seed;
		ss[i] = (search_t){NAN, NAN, {co->lo, co->hi}, 2, 0, NULL};
	}
	/* Round after round until every search has its verdict. */
	for (int live = 1; !rc && live;) {
		if ((rc = run_round(pts, ss, n, seeds ? 2 : 1, base, so, co, e)))
			break;
		live = 0;
		for (size_t i = 0; i < n; i++) {
			search_next(&ss[i], co);
			live |= ss[i].n_probe > 0;
		}
	}
	for (size_t i = 0; !rc && i < n; i++) {
		out_capacity_result_t *x = &r[i];
		x->point = i;
		x->seed = pts[i].seed;
		size_t len = 0;
		for (size_t k = 0; k < pts[i].n_params && len < sizeof x->params; k++)
			len += (size_t)snprintf(x->params + len, sizeof x->params - len, "%s%s=%s",
						k ? " " : "", pts[i].params[k].key,
						pts[i].params[k].value);
		x->value = ss[i].a;
		x->lo = ss[i].a;
		x->hi = ss[i].b;
		x->probes = ss[i].probes;
		x->verdict = ss[i].verdict;
	}
	if (!rc)
		rc = store(so, co, r, n, e);
	for (size_t i = 0; i < made; i++)
		out_point_free(&pts[i]);
	free(pts);
	free(ss);
	if (rc) {
		free(r);
		return rc;
	}
	*res = r;
	*n_res = n;
	return 0;
}
