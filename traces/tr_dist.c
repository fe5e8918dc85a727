/* tr_dist — token-length distributions for generators: fixed, uniform,
 * lognormal (by mean and sigma of the log), Zipf over [min, max], and
 * empirical (resampled from a trace file's input or output lengths). Every
 * draw is clamped to [min, max]. */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "traces/tr_int.h"

#define MAX_ZIPF (1u << 22)
#define MAX_EMPIRICAL (50u * 1000 * 1000)

struct tr_dist {
	tr_dist_opts_t o;
	uint32_t min, max;
	double mu;      /* lognormal location */
	double *cdf;    /* Zipf */
	uint32_t *vals; /* empirical */
	size_t n_vals, cap;
};

static int load_empirical(tr_dist_t *d, const char *name, int output, err_t *e)
{
	if (!d->o.path || !*d->o.path)
		return err_set(e, KS_EINPUT, "[trace] %s_path: empty (empirical needs a trace)",
		               name);
	if (!d->o.load)
		return err_set(e, KS_EINPUT, "[trace] %s_dist: empirical lengths need a trace reader",
		               name);
	int rc = d->o.load(d->o.path, output, MAX_EMPIRICAL, &d->vals, &d->n_vals, e);
	d->cap = d->n_vals;
	return rc;
}

int tr_dist_new(const tr_dist_opts_t *o, const char *name, int output, uint32_t max_tokens,
                tr_dist_t **out, err_t *e)
{
	*out = NULL;
	tr_dist_t *d = calloc(1, sizeof *d);
	if (!d)
		return err_set(e, KS_ENOMEM, "out of memory");
	d->o = *o;
	d->min = o->min;
	d->max = o->max ? o->max : max_tokens;
	int rc = 0;
	if (d->max > max_tokens)
		d->max = max_tokens;
	if (d->min > d->max) {
		rc = err_set(e, KS_EINPUT, "[trace] %s_min: %u is above %s_max %u", name, d->min,
		             name, d->max);
		goto fail;
	}
	switch (o->kind) {
	case TR_DIST_FIXED:
	case TR_DIST_UNIFORM:
		break;
	case TR_DIST_LOGNORMAL:
		if (!(o->mean > 0) || !(o->sigma >= 0)) {
			rc = err_set(e, KS_EINPUT,
			             "[trace] %s_mean: lognormal needs mean > 0 and sigma >= 0",
			             name);
			goto fail;
		}
		/* E[X] = exp(mu + sigma^2/2) */
		d->mu = log(o->mean) - o->sigma * o->sigma / 2;
		break;
	case TR_DIST_ZIPF: {
		uint32_t lo = d->min ? d->min : 1;
		if ((uint64_t)d->max - lo + 1 > MAX_ZIPF) {
			rc = err_set(e, KS_EINPUT,
			             "[trace] %s_max: Zipf range [%u, %u] wider than %u values",
			             name, lo, d->max, MAX_ZIPF);
			goto fail;
		}
		d->min = lo;
		size_t n = d->max - lo + 1;
		if (!(d->cdf = malloc(n * sizeof *d->cdf))) {
			rc = err_set(e, KS_ENOMEM, "out of memory");
			goto fail;
		}
		double s = 0;
		for (size_t i = 0; i < n; i++)
			d->cdf[i] = s += pow((double)(lo + i), -o->zipf_s);
		for (size_t i = 0; i < n; i++)
			d->cdf[i] /= s;
		break;
	}
	case TR_DIST_EMPIRICAL:
		if ((rc = load_empirical(d, name, output, e)))
			goto fail;
		if (d->n_vals == 0) {
			rc = err_set(e, KS_EINPUT, "%s: no rows for an empirical distribution",
			             o->path);
			goto fail;
		}
		break;
	}
	*out = d;
	return 0;
fail:
	tr_dist_free(d);
	return rc;
}

static uint32_t clamp(const tr_dist_t *d, double v)
{
	if (!(v >= d->min))
		return d->min;
	if (v >= d->max)
		return d->max;
	return (uint32_t)llround(v);
}

uint32_t tr_dist_draw(tr_dist_t *d, gsl_rng *rng)
{
	switch (d->o.kind) {
	case TR_DIST_FIXED:
		return clamp(d, d->o.mean);
	case TR_DIST_UNIFORM:
		return d->min +
		       (uint32_t)gsl_rng_uniform_int(rng, (unsigned long)d->max - d->min + 1);
	case TR_DIST_LOGNORMAL:
		return clamp(d, gsl_ran_lognormal(rng, d->mu, d->o.sigma));
	case TR_DIST_ZIPF: {
		double u = gsl_rng_uniform(rng);
		return d->min + (uint32_t)tr_cdf_index(d->cdf, (size_t)(d->max - d->min) + 1, u);
	}
	case TR_DIST_EMPIRICAL:
		return clamp(d, d->vals[gsl_rng_uniform_int(rng, d->n_vals)]);
	}
	return d->min;
}

void tr_dist_free(tr_dist_t *d)
{
	if (!d)
		return;
	free(d->cdf);
	free(d->vals);
	free(d);
}

int tr_gen_rand_open(tr_gen_rand_t *r, const tr_opts_t *o, uint64_t seed, err_t *e)
{
	*r = (tr_gen_rand_t){tr_rng_new(seed, 1), tr_rng_new(seed, 2), NULL, NULL};
	if (!r->arr || !r->len)
		return err_set(e, KS_ENOMEM, "out of memory");
	int rc = tr_dist_new(&o->in, "in", 0, o->max_tokens, &r->din, e);
	return rc ? rc : tr_dist_new(&o->out, "out", 1, o->max_tokens, &r->dout, e);
}

void tr_gen_rand_close(tr_gen_rand_t *r)
{
	gsl_rng_free(r->arr);
	gsl_rng_free(r->len);
	tr_dist_free(r->din);
	tr_dist_free(r->dout);
}

void tr_gen_rand_lengths(tr_gen_rand_t *r, const tr_opts_t *o, uint32_t prefix, tr_raw_t *raw)
{
	uint64_t in = (uint64_t)prefix + tr_dist_draw(r->din, r->len);
	raw->input_len = in > o->max_tokens ? o->max_tokens : (uint32_t)in;
	raw->output_len = tr_dist_draw(r->dout, r->len);
}

void tr_raw_shared_prefix(tr_raw_t *raw, tr_seg_t segs[2], uint64_t key, uint32_t tokens)
{
	segs[0] = (tr_seg_t){key, tokens, 0};
	segs[1] = (tr_seg_t){0, UINT32_MAX, 1};
	raw->segs = segs;
	raw->n_segs = 2;
}
