/* tr_gen — seeded synthetic arrival processes (GSL gsl_rng, mt19937).
 *
 * poisson   exponential gaps at `rate`
 * gamma     renewal, Gamma gaps with mean 1/rate and CV `cv` (shape 1/cv^2)
 * weibull   renewal, Weibull gaps with mean 1/rate and CV `cv` (shape solved
 *           from CV^2 = G(1+2/k)/G(1+1/k)^2 - 1)
 * mmpp      2-state Markov-modulated Poisson: rate mmpp_rate0/1, exponential
 *           sojourns with means mmpp_dwell0/1_s; starts in state 0
 * flash     `rate`, times flash_mult during [flash_start_s, +flash_duration_s)
 *           (step) or decaying as exp(-(t-start)/flash_tau_s) (spike);
 *           thinning (Lewis & Shedler 1979)
 * diurnal   rate*(1 + amp*sin(2 pi t/period + phase)), thinning
 * servegen  per-window rates from a ServeGen windows file: tr_gen_servegen.c
 * fanout    bursts of requests sharing a fresh prefix: tr_gen_fanout.c
 * crowd     flash crowds on a long prefix computed before they come: see
 *           tr_gen_crowd.c (a source of its own)
 * sessions  closed-loop users: tr_gen_session.c (made in the run, never read)
 *
 * This file is the common source every generator but crowd and sessions
 * runs on (gen_src_t, tr_gen_int.h): option checks from the generator's
 * flags and its own check, the max_generated guard from its expected count,
 * the load scale, the two random streams, the lengths of each row; the
 * renewal and modulated processes above are its own generators, and
 * tr_gen_ops maps TR_GEN_LIST (tr.h) to each generator's table.
 * Generation stops at duration_s or after `requests` rows, whichever comes
 * first (servegen: at the end of its windows file; duration_s is ignored). Stream 1 of the seed
 * draws arrivals, stream 2 lengths.
 *
 * Load (trace.rate_scale = s) multiplies what each process offers per second
 * over the same span, every time scale (flash window, diurnal period, MMPP
 * sojourns, burst window) kept: rate (poisson, gamma, weibull, flash,
 * diurnal), mmpp_rate0 and mmpp_rate1, each ServeGen window's rate, and for
 * fanout the number of bursts and of decoy groups (rounded to the nearest
 * whole one, each of unchanged size) and fanout_bg_rate. s = 1 leaves every
 * draw as it was.
 */
#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sf_gamma.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "traces/tr_gen_int.h"
#include "traces/tr_sess.h"


static double weibull_cv(double k)
{
	double g1 = gsl_sf_lngamma(1 + 1 / k), g2 = gsl_sf_lngamma(1 + 2 / k);
	return sqrt(exp(g2 - 2 * g1) - 1);
}

static double diurnal_rate(const tr_opts_t *o, double t)
{
	return o->rate *
	       (1 + o->diurnal_amp * sin(2 * M_PI * t / o->diurnal_period_s + o->diurnal_phase));
}

static double flash_rate(const tr_opts_t *o, double t)
{
	if (t < o->flash_start_s)
		return o->rate;
	if (o->flash_spike)
		return o->rate *
		       (1 + (o->flash_mult - 1) * exp(-(t - o->flash_start_s) / o->flash_tau_s));
	return t < o->flash_start_s + o->flash_duration_s ? o->rate * o->flash_mult : o->rate;
}


/* A process that advanced g->t: its arrival, or 0 past duration_s. */
static int at_t(gen_src_t *g, double *t)
{
	*t = g->t;
	return g->o.duration_s > 0 && g->t > g->o.duration_s ? 0 : 1;
}

static int poisson_next(gen_src_t *g, tr_raw_t *raw, double *t, err_t *e)
{
	(void)raw, (void)e;
	g->t += gsl_ran_exponential(g->arr, 1 / g->o.rate);
	return at_t(g, t);
}

static int gamma_next(gen_src_t *g, tr_raw_t *raw, double *t, err_t *e)
{
	(void)raw, (void)e;
	const tr_opts_t *o = &g->o;
	double k = 1 / (o->cv * o->cv);
	g->t += gsl_ran_gamma(g->arr, k, 1 / (o->rate * k));
	return at_t(g, t);
}

static int weibull_next(gen_src_t *g, tr_raw_t *raw, double *t, err_t *e)
{
	(void)raw, (void)e;
	g->t += gsl_ran_weibull(g->arr, g->weib_scale, g->weib_k);
	return at_t(g, t);
}

static int mmpp_next(gen_src_t *g, tr_raw_t *raw, double *t, err_t *e)
{
	(void)raw, (void)e;
	const tr_opts_t *o = &g->o;
	for (;;) {
		double lam = o->mmpp_rate[g->mm_state];
		double x = lam > 0 ? gsl_ran_exponential(g->arr, 1 / lam) : INFINITY;
		if (x < g->mm_left) {
			g->t += x;
			g->mm_left -= x;
			break;
		}
		g->t += g->mm_left;
		g->mm_state ^= 1;
		g->mm_left = gsl_ran_exponential(g->arr, o->mmpp_dwell_s[g->mm_state]);
		if (o->duration_s > 0 && g->t > o->duration_s)
			return 0;
	}
	return at_t(g, t);
}

/* Thinning (Lewis & Shedler 1979) of a Poisson process at lmax down to
 * rate(t) <= lmax. */
static int thinned_next(gen_src_t *g, double lmax, double (*rate)(const tr_opts_t *, double),
                        double *t)
{
	const tr_opts_t *o = &g->o;
	do {
		g->t += gsl_ran_exponential(g->arr, 1 / lmax);
		if (o->duration_s > 0 && g->t > o->duration_s)
			return 0;
	} while (gsl_rng_uniform(g->arr) * lmax > rate(o, g->t));
	return at_t(g, t);
}

static int flash_next(gen_src_t *g, tr_raw_t *raw, double *t, err_t *e)
{
	(void)raw, (void)e;
	const tr_opts_t *o = &g->o;
	return thinned_next(g, o->rate * (o->flash_mult > 1 ? o->flash_mult : 1), flash_rate, t);
}

static int diurnal_next(gen_src_t *g, tr_raw_t *raw, double *t, err_t *e)
{
	(void)raw, (void)e;
	return thinned_next(g, g->o.rate * (1 + g->o.diurnal_amp), diurnal_rate, t);
}

static uint32_t add_len(uint32_t a, uint32_t b, uint32_t max)
{
	uint64_t s = (uint64_t)a + b;
	return s > max ? max : (uint32_t)s;
}

static int gen_next(tr_src_t *b, tr_raw_t *raw, err_t *e)
{
	gen_src_t *g = (gen_src_t *)b;
	const tr_opts_t *o = &g->o;
	if (o->requests && g->count >= o->requests)
		return 0;
	if (g->count >= o->max_generated) /* more than expected: a safety net */
		return err_set(e, KS_EINPUT,
		               "[trace] max_generated: the generator made %llu requests, the most it "
		               "may (set trace.requests or raise trace.max_generated)",
		               (unsigned long long)g->count);
	memset(raw, 0, sizeof *raw);
	double t;
	int rc = tr_gen_ops(o->gen)->next(g, raw, &t, e);
	if (rc <= 0)
		return rc;
	if (!(t >= 0 && t < 4e9))
		return 0; /* past the representable span (int64 ns): the process ends */
	raw->t_ns = (int64_t)llround(t * 1e9);
	raw->input_len = tr_dist_draw(g->din, g->len);
	if (raw->segs)
		raw->input_len = add_len(raw->segs[0].tokens, raw->input_len, o->max_tokens);
	raw->output_len = tr_dist_draw(g->dout, g->len);
	g->count++;
	return 1;
}

static void gen_close(tr_src_t *b)
{
	gen_src_t *g = (gen_src_t *)b;
	gsl_rng_free(g->arr);
	gsl_rng_free(g->len);
	tr_dist_free(g->din);
	tr_dist_free(g->dout);
	if (g->lines_open)
		tr_lines_close(&g->l);
	free(g->ev);
	free(g);
}

/* The per-generator meaning of trace.rate_scale (see the header); the
 * fanout counts round half up. */
static void load_scale(tr_opts_t *o)
{
	double s = o->rate_scale > 0 ? o->rate_scale : 1;
	o->rate *= s;
	o->mmpp_rate[0] *= s;
	o->mmpp_rate[1] *= s;
	o->fanout_bg_rate *= s;
	o->fanout_bursts = tr_gen_scaled_count(o->fanout_bursts, s);
	o->fanout_decoys = tr_gen_scaled_count(o->fanout_decoys, s);
}

/* The requests a generator is expected to make (ops->expected; servegen:
 * per window, in sg_advance) against max_generated: a rate of 1e9 req/s over a long
 * duration otherwise runs for hours. */
static int check_count(const tr_opts_t *o, err_t *e)
{
	const tr_gen_ops_t *ops = tr_gen_ops(o->gen);
	if (!ops->expected)
		return 0;
	double d = o->duration_s, n = ops->expected(o);
	n *= o->rate_scale > 0 ? o->rate_scale : 1; /* load_scale multiplies the rates */
	if (o->requests && (!(d > 0) || (double)o->requests < n))
		n = (double)o->requests;
	if (!(n > (double)o->max_generated))
		return 0;
	return err_set(e, KS_EINPUT,
	               "[trace] max_generated: gen = %s would make about %.3g requests (%s), more "
	               "than max_generated = %llu; lower them, or raise trace.max_generated",
	               tr_gen_name(o->gen), n,
	               o->requests && (double)o->requests <= n ? "requests" : "rate x duration_s",
	               (unsigned long long)o->max_generated);
}

static int check(const tr_opts_t *o, err_t *e)
{
	const tr_gen_ops_t *ops = tr_gen_ops(o->gen);
	int rc = tr_opts_check(o, e); /* the schema's ranges (cv in [0.05, 20], ...) */
	if (rc)
		return rc;
	if ((ops->flags & TR_GEN_F_RATE) && !(o->rate > 0))
		return err_set(e, KS_EINPUT, "[trace] rate: must be > 0 for gen = %s", ops->name);
	if (ops->check && (rc = ops->check(o, e)))
		return rc;
	if ((ops->flags & TR_GEN_F_SPAN) && !(o->duration_s > 0) && o->requests == 0)
		return err_set(
		    e, KS_EINPUT,
		    "[trace] duration_s: a generator needs duration_s > 0 or requests > 0");
	return check_count(o, e);
}

/* lower bounds the schema cannot say (> 0), named by the key at fault */
static int mmpp_check(const tr_opts_t *o, err_t *e)
{
	for (int i = 0; i < 2; i++)
		if (!(o->mmpp_dwell_s[i] > 0))
			return err_set(e, KS_EINPUT, "[trace] mmpp_dwell%d_s: must be > 0 for gen = %s",
			               i, tr_gen_name(o->gen));
	if (!(o->mmpp_rate[0] + o->mmpp_rate[1] > 0))
		return err_set(e, KS_EINPUT,
		               "[trace] mmpp_rate0: mmpp_rate0 and mmpp_rate1 are both 0");
	return 0;
}

static int flash_check(const tr_opts_t *o, err_t *e)
{
	if (o->flash_spike && !(o->flash_tau_s > 0))
		return err_set(e, KS_EINPUT,
		               "[trace] flash_tau_s: must be > 0 for flash_shape = spike");
	return 0;
}

static int diurnal_check(const tr_opts_t *o, err_t *e)
{
	if (!(o->diurnal_period_s > 0))
		return err_set(e, KS_EINPUT, "[trace] diurnal_period_s: must be > 0 for gen = %s",
		               tr_gen_name(o->gen));
	return 0;
}

/* poisson, gamma, weibull; diurnal's mean rate */
static double rate_expected(const tr_opts_t *o)
{
	return o->rate * o->duration_s;
}

static double mmpp_expected(const tr_opts_t *o)
{
	return fmax(o->mmpp_rate[0], o->mmpp_rate[1]) * o->duration_s; /* an upper bound */
}

/* the base rate, plus the crowd's extra */
static double flash_expected(const tr_opts_t *o)
{
	double d = o->duration_s;
	return o->rate * d + o->rate * fmax(o->flash_mult - 1, 0) *
	                         (o->flash_spike ? o->flash_tau_s : fmin(o->flash_duration_s, d));
}

static int weibull_init(gen_src_t *g, err_t *e)
{
	(void)e;
	/* CV decreases with the shape k: bisect on [0.02, 200]. */
	double lo = 0.02, hi = 200;
	for (int i = 0; i < 200; i++) {
		double mid = sqrt(lo * hi);
		if (weibull_cv(mid) > g->o.cv)
			lo = mid;
		else
			hi = mid;
	}
	g->weib_k = sqrt(lo * hi);
	/* mean = scale * G(1 + 1/k) */
	g->weib_scale = 1 / (g->o.rate * exp(gsl_sf_lngamma(1 + 1 / g->weib_k)));
	return 0;
}

static int mmpp_init(gen_src_t *g, err_t *e)
{
	(void)e;
	g->mm_left = gsl_ran_exponential(g->arr, g->o.mmpp_dwell_s[0]);
	return 0;
}

#define RENEWAL (TR_GEN_F_RATE | TR_GEN_F_SPAN)
const tr_gen_ops_t tr_gen_poisson = {
    .name = "poisson", .flags = RENEWAL, .expected = rate_expected, .next = poisson_next};
const tr_gen_ops_t tr_gen_gamma = {
    .name = "gamma", .flags = RENEWAL, .expected = rate_expected, .next = gamma_next};
const tr_gen_ops_t tr_gen_weibull = {.name = "weibull",
                                     .flags = RENEWAL,
                                     .expected = rate_expected,
                                     .init = weibull_init,
                                     .next = weibull_next};
const tr_gen_ops_t tr_gen_mmpp = {.name = "mmpp",
                                  .flags = TR_GEN_F_SPAN,
                                  .check = mmpp_check,
                                  .expected = mmpp_expected,
                                  .init = mmpp_init,
                                  .next = mmpp_next};
const tr_gen_ops_t tr_gen_flash = {.name = "flash",
                                   .flags = RENEWAL,
                                   .check = flash_check,
                                   .expected = flash_expected,
                                   .next = flash_next};
const tr_gen_ops_t tr_gen_diurnal = {.name = "diurnal",
                                     .flags = RENEWAL,
                                     .check = diurnal_check,
                                     .expected = rate_expected,
                                     .next = diurnal_next};

#define TR_GEN_ENTRY(G, name, ops) &ops,
static const tr_gen_ops_t *const gens[TR_GEN_N] = {TR_GEN_LIST(TR_GEN_ENTRY)};
#undef TR_GEN_ENTRY

const tr_gen_ops_t *tr_gen_ops(tr_gen_kind_t g)
{
	return gens[g];
}

const char *tr_gen_name(tr_gen_kind_t g)
{
	return (unsigned)g < TR_GEN_N ? tr_gen_ops(g)->name : "?";
}

int tr_gen_parse(const char *s, tr_gen_kind_t *g)
{
	for (int i = 0; i < TR_GEN_N; i++)
		if (!strcmp(s, tr_gen_name((tr_gen_kind_t)i))) {
			*g = (tr_gen_kind_t)i;
			return 0;
		}
	return KS_EINPUT;
}

int tr_closed_loop(const tr_opts_t *o)
{
	return o->kind == TR_KIND_GEN && (tr_gen_ops(o->gen)->flags & TR_GEN_F_CLOSED);
}

int tr_src_gen(const tr_opts_t *o, uint64_t seed, tr_src_t **out, err_t *e)
{
	*out = NULL;
	tr_opts_t own = *o;
	if (!own.max_generated) /* options not from the schema: its default */
		own.max_generated = 1000000000;
	o = &own;
	const tr_gen_ops_t *ops = tr_gen_ops(o->gen);
	if (ops->open)
		return ops->open(o, seed, out, e);
	int rc = check(o, e);
	if (rc)
		return rc;
	gen_src_t *g = calloc(1, sizeof *g);
	if (!g)
		return err_set(e, KS_ENOMEM, "out of memory");
	g->o = *o;
	load_scale(&g->o);
	g->seed = seed;
	g->base.next = gen_next;
	g->base.close = gen_close;
	g->arr = tr_rng_new(seed, 1);
	g->len = tr_rng_new(seed, 2);
	if (!g->arr || !g->len) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = tr_dist_new(&o->in, "in", 0, o->max_tokens, &g->din, e)) ||
	    (rc = tr_dist_new(&o->out, "out", 1, o->max_tokens, &g->dout, e)))
		goto fail;
	if (ops->init && (rc = ops->init(g, e)))
		goto fail;
	*out = &g->base;
	return 0;
fail:
	gen_close(&g->base);
	return rc;
}
