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
 * servegen  per-window rate with Gamma/Weibull gaps from a ServeGen
 *           chunk-*-trace.csv (window_start_s, rate, cv, pattern, shape,
 *           scale): gaps drawn with the window's shape/scale, rescaled to its
 *           mean 1/rate, as servegen/construct.py does; windows are read
 *           one at a time
 * fanout    fanout_bursts bursts (one per equal slot of duration_s, start
 *           uniform in the slot) of fanout_size requests spread uniformly
 *           over fanout_window_s sharing a fanout_prefix_tokens-token
 *           prefix (input = prefix + a draw from the input distribution),
 *           plus Poisson background at fanout_bg_rate (prefix model) and
 *           fanout_decoys groups of fanout_decoy_size requests with their own
 *           shared prefix (near-misses for burst detectors)
 * crowd     flash crowds on a long prefix computed before they come: see
 *           tr_gen_crowd.c
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

#include "traces/tr_int.h"

typedef struct win {
	double start, end, rate;
	unsigned long long line; /* of the windows file */
	int pattern; /* 0 exponential, 1 gamma, 2 weibull */
	double shape, scale, factor;
} win_t;

typedef struct fan_ev {
	double t;
	uint64_t key;
	uint32_t prefix;
} fan_ev_t;

typedef struct gen_src {
	tr_src_t base;
	tr_opts_t o;
	uint64_t seed;
	gsl_rng *arr, *len;
	tr_dist_t *din, *dout;
	double t;
	uint64_t count;
	double weib_k, weib_scale;
	int mm_state;
	double mm_left;
	/* servegen */
	tr_lines_t l;
	win_t w, next_w;
	double expect; /* requests the windows entered so far make, on average */
	int have_next, lines_open;
	/* fanout */
	fan_ev_t *ev;
	size_t n_ev, i_ev;
	double bg_next;
	tr_seg_t segs[2];
} gen_src_t;

static double weibull_cv(double k)
{
	double g1 = gsl_sf_lngamma(1 + 1 / k), g2 = gsl_sf_lngamma(1 + 2 / k);
	return sqrt(exp(g2 - 2 * g1) - 1);
}

static double thin_rate(const gen_src_t *g, double t)
{
	const tr_opts_t *o = &g->o;
	if (o->gen == TR_GEN_DIURNAL)
		return o->rate * (1 + o->diurnal_amp * sin(2 * M_PI * t / o->diurnal_period_s +
		                                           o->diurnal_phase));
	if (t < o->flash_start_s)
		return o->rate;
	if (o->flash_spike)
		return o->rate *
		       (1 + (o->flash_mult - 1) * exp(-(t - o->flash_start_s) / o->flash_tau_s));
	return t < o->flash_start_s + o->flash_duration_s ? o->rate * o->flash_mult : o->rate;
}

#define SG_LINE(g) (unsigned long long)(g)->l.line

/* Reads the next ServeGen window into *w; 0 at end of file. */
static int sg_read(gen_src_t *g, win_t *w, err_t *e)
{
	int rc;
	do {
		if ((rc = tr_lines_next(&g->l, e)) <= 0)
			return rc;
	} while (g->l.len == 0);
	tr_field_t f[8];
	int n = tr_csv_split(&g->l, f, 8, e);
	if (n < 0)
		return n;
	static const char *const names[] = {"window_start_s", "rate",  "cv",
	                                    "pattern",        "shape", "scale"};
	if (n < 6)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: missing column (row has %d of 6)",
		               g->l.path, SG_LINE(g), names[n], n);
	double v[6];
	for (int i = 0; i < 6; i++) {
		if (i == 3)
			continue;
		if (i >= 4 && f[i].len == 0) {
			v[i] = 0;
			continue;
		}
		if ((rc = tr_parse_f64(&g->l, names[i], f[i].s, &v[i], e)))
			return rc;
	}
	if (v[0] < 0 || v[1] < 0)
		return err_set(e, KS_EINPUT, "%s:%llu: %s: negative", g->l.path, SG_LINE(g),
		               v[0] < 0 ? names[0] : names[1]);
	if (v[0] >= 4e9)
		return err_set(e, KS_EINPUT, "%s:%llu: window_start_s: out of range [0, 4e9)",
		               g->l.path, SG_LINE(g));
	memset(w, 0, sizeof *w);
	w->line = SG_LINE(g);
	w->start = v[0];
	w->rate = v[1] * g->o.rate_scale;
	w->shape = v[4];
	w->scale = v[5];
	if (!strcmp(f[3].s, "Gamma"))
		w->pattern = 1;
	else if (!strcmp(f[3].s, "Weibull"))
		w->pattern = 2;
	else if (f[3].len)
		return err_set(e, KS_EINPUT,
		               "%s:%llu: pattern: '%s' is not Gamma, Weibull or empty", g->l.path,
		               SG_LINE(g), f[3].s);
	if (w->pattern && w->rate > 0 && !(w->shape > 0 && w->scale > 0))
		return err_set(e, KS_EINPUT, "%s:%llu: shape: shape and scale must be > 0",
		               g->l.path, SG_LINE(g));
	double mean = w->pattern == 1   ? w->shape * w->scale
	              : w->pattern == 2 ? w->scale * exp(gsl_sf_lngamma(1 + 1 / w->shape))
	                                : 1;
	w->factor = w->rate > 0 ? (1 / w->rate) / mean : 0;
	return 1;
}

/* Advances to the next ServeGen window; 0 when there is none. */
static int sg_advance(gen_src_t *g, err_t *e)
{
	if (!g->have_next)
		return 0;
	g->w = g->next_w;
	int rc = sg_read(g, &g->next_w, e);
	if (rc < 0)
		return rc;
	g->have_next = rc;
	/* A repeated start would make an empty window that swallows its rate. */
	if (rc && g->next_w.start <= g->w.start)
		return err_set(e, KS_EINPUT,
		               "%s:%llu: window_start_s: %s (%.17g s; the previous window starts "
		               "at %.17g s)",
		               g->l.path, SG_LINE(g),
		               g->next_w.start < g->w.start ? "goes backwards"
		                                            : "repeats the previous window's start",
		               g->next_w.start, g->w.start);
	/* The last window lasts as long as the one before it (600 s in ServeGen). */
	g->w.end = rc ? g->next_w.start : g->w.start + 600;
	g->t = g->w.start;
	g->expect += g->w.rate * (g->w.end - g->w.start);
	const tr_opts_t *o = &g->o;
	if (g->expect > (double)o->max_generated && (!o->requests || o->requests > o->max_generated))
		return err_set(e, KS_EINPUT,
		               "%s:%llu: rate: the windows up to this one make about %.3g requests, "
		               "more than [trace] max_generated = %llu; set trace.requests or raise "
		               "trace.max_generated",
		               g->l.path, g->w.line, g->expect,
		               (unsigned long long)o->max_generated);
	return 1;
}

static int sg_next_time(gen_src_t *g, double *t, err_t *e)
{
	for (;;) {
		if (g->w.rate > 0) {
			double gap =
			    g->w.pattern == 1   ? gsl_ran_gamma(g->arr, g->w.shape, g->w.scale)
			    : g->w.pattern == 2 ? gsl_ran_weibull(g->arr, g->w.scale, g->w.shape)
						: gsl_ran_exponential(g->arr, 1);
			double nt = g->t + gap * g->w.factor;
			if (nt < g->w.end) {
				g->t = *t = nt;
				return 1;
			}
		}
		int rc = sg_advance(g, e);
		if (rc <= 0)
			return rc;
	}
}

static void b_bytes(gen_src_t *g)
{
	g->base.bytes = g->l.bytes;
}

/* Next arrival in seconds; 0 when the process has ended. */
static int next_time(gen_src_t *g, double *t, err_t *e)
{
	const tr_opts_t *o = &g->o;
	switch (o->gen) {
	case TR_GEN_POISSON:
		g->t += gsl_ran_exponential(g->arr, 1 / o->rate);
		break;
	case TR_GEN_GAMMA: {
		double k = 1 / (o->cv * o->cv);
		g->t += gsl_ran_gamma(g->arr, k, 1 / (o->rate * k));
		break;
	}
	case TR_GEN_WEIBULL:
		g->t += gsl_ran_weibull(g->arr, g->weib_scale, g->weib_k);
		break;
	case TR_GEN_MMPP:
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
		break;
	case TR_GEN_FLASH:
	case TR_GEN_DIURNAL: {
		double lmax = o->gen == TR_GEN_DIURNAL
		                  ? o->rate * (1 + o->diurnal_amp)
		                  : o->rate * (o->flash_mult > 1 ? o->flash_mult : 1);
		do {
			g->t += gsl_ran_exponential(g->arr, 1 / lmax);
			if (o->duration_s > 0 && g->t > o->duration_s)
				return 0;
		} while (gsl_rng_uniform(g->arr) * lmax > thin_rate(g, g->t));
		break;
	}
	case TR_GEN_SERVEGEN: {
		/* duration_s does not apply: the windows file sets the span (end_s cuts it) */
		int rc = sg_next_time(g, t, e);
		b_bytes(g);
		return rc;
	}
	case TR_GEN_SESSIONS: /* refused by tr_open: a closed loop is made in the run */
	case TR_GEN_FANOUT:
	case TR_GEN_CROWD:
		break; /* handled by gen_next; crowd by its own source */
	}
	*t = g->t;
	return o->duration_s > 0 && g->t > o->duration_s ? 0 : 1;
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
	if (o->gen == TR_GEN_FANOUT) {
		/* merge the precomputed burst/decoy list with the background stream */
		int from_bg =
		    g->bg_next >= 0 && (g->i_ev >= g->n_ev || g->bg_next < g->ev[g->i_ev].t);
		if (from_bg) {
			t = g->bg_next;
			g->bg_next += gsl_ran_exponential(g->arr, 1 / o->fanout_bg_rate);
			if (g->bg_next > o->duration_s)
				g->bg_next = -1;
		} else if (g->i_ev < g->n_ev) {
			const fan_ev_t *v = &g->ev[g->i_ev++];
			t = v->t;
			g->segs[0] = (tr_seg_t){v->key, v->prefix, 0};
			g->segs[1] = (tr_seg_t){0, UINT32_MAX, 1};
			raw->segs = g->segs;
			raw->n_segs = 2;
		} else {
			return 0;
		}
	} else {
		int rc = next_time(g, &t, e);
		if (rc <= 0)
			return rc;
	}
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

static int fanout_plan(gen_src_t *g, err_t *e)
{
	const tr_opts_t *o = &g->o;
	uint64_t n = (uint64_t)o->fanout_bursts * o->fanout_size +
	             (uint64_t)o->fanout_decoys * o->fanout_decoy_size;
	if (n > 100u * 1000 * 1000)
		return err_set(e, KS_EINPUT,
		               "[trace] fanout_bursts: %llu burst requests is too many",
		               (unsigned long long)n);
	if (o->fanout_window_s > o->duration_s)
		return err_set(e, KS_EINPUT, "[trace] fanout_window_s: longer than duration_s");
	if (n && !(g->ev = malloc(n * sizeof *g->ev)))
		return err_set(e, KS_ENOMEM, "out of memory");
	uint64_t base = tr_mix(tr_mix(TR_ROOT_ID, g->seed), 0x66616e6f7574ULL);
	double slot = o->duration_s / (o->fanout_bursts ? o->fanout_bursts : 1);
	for (uint32_t b = 0; b < o->fanout_bursts; b++) {
		double room = slot > o->fanout_window_s ? slot - o->fanout_window_s : 0;
		double t0 = b * slot + gsl_rng_uniform(g->arr) * room;
		uint64_t key = tr_mix(base, b);
		for (uint32_t k = 0; k < o->fanout_size; k++)
			g->ev[g->n_ev++] =
			    (fan_ev_t){t0 + gsl_rng_uniform(g->arr) * o->fanout_window_s, key,
			               o->fanout_prefix_tokens};
	}
	for (uint32_t d = 0; d < o->fanout_decoys; d++) {
		double t0 = gsl_rng_uniform(g->arr) * (o->duration_s - o->fanout_window_s);
		uint64_t key = tr_mix(base, (1ULL << 40) + d);
		for (uint32_t k = 0; k < o->fanout_decoy_size; k++)
			g->ev[g->n_ev++] =
			    (fan_ev_t){t0 + gsl_rng_uniform(g->arr) * o->fanout_window_s, key,
			               o->fanout_prefix_tokens};
	}
	if (g->n_ev) /* no bursts at a small rate_scale: qsort wants a non-null base */
		qsort(g->ev, g->n_ev, sizeof *g->ev, tr_cmp_time);
	g->bg_next =
	    o->fanout_bg_rate > 0 ? gsl_ran_exponential(g->arr, 1 / o->fanout_bg_rate) : -1;
	if (g->bg_next > o->duration_s)
		g->bg_next = -1;
	return 0;
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

/* The requests a generator is expected to make (servegen: per window, in
 * sg_advance) against max_generated: a rate of 1e9 req/s over a long
 * duration otherwise runs for hours. */
static int check_count(const tr_opts_t *o, err_t *e)
{
	double d = o->duration_s, n = 0;
	switch (o->gen) {
	case TR_GEN_MMPP:
		n = fmax(o->mmpp_rate[0], o->mmpp_rate[1]) * d; /* an upper bound */
		break;
	case TR_GEN_FLASH: /* the base rate, plus the crowd's extra */
		n = o->rate * d + o->rate * fmax(o->flash_mult - 1, 0) *
		                      (o->flash_spike ? o->flash_tau_s : fmin(o->flash_duration_s, d));
		break;
	case TR_GEN_FANOUT: /* the bursts are capped in fanout_plan */
		n = o->fanout_bg_rate * d;
		break;
	case TR_GEN_SERVEGEN:
		return 0;
	default: /* poisson, gamma, weibull; diurnal's mean rate */
		n = o->rate * d;
	}
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
	const char *gn = tr_gen_name(o->gen);
	int rc = tr_opts_check(o, e); /* the schema's ranges (cv in [0.05, 20], ...) */
	if (rc)
		return rc;
	int needs_rate =
	    o->gen != TR_GEN_MMPP && o->gen != TR_GEN_SERVEGEN && o->gen != TR_GEN_FANOUT;
	if (needs_rate && !(o->rate > 0))
		return err_set(e, KS_EINPUT, "[trace] rate: must be > 0 for gen = %s", gn);
	/* lower bounds the schema cannot say (> 0), named by the key at fault */
	for (int i = 0; o->gen == TR_GEN_MMPP && i < 2; i++)
		if (!(o->mmpp_dwell_s[i] > 0))
			return err_set(e, KS_EINPUT, "[trace] mmpp_dwell%d_s: must be > 0 for gen = %s",
			               i, gn);
	if (o->gen == TR_GEN_MMPP && !(o->mmpp_rate[0] + o->mmpp_rate[1] > 0))
		return err_set(e, KS_EINPUT,
		               "[trace] mmpp_rate0: mmpp_rate0 and mmpp_rate1 are both 0");
	if (o->gen == TR_GEN_FLASH && o->flash_spike && !(o->flash_tau_s > 0))
		return err_set(e, KS_EINPUT,
		               "[trace] flash_tau_s: must be > 0 for flash_shape = spike");
	if (o->gen == TR_GEN_DIURNAL && !(o->diurnal_period_s > 0))
		return err_set(e, KS_EINPUT, "[trace] diurnal_period_s: must be > 0 for gen = %s",
		               gn);
	if (o->gen == TR_GEN_SERVEGEN && (!o->path || !*o->path))
		return err_set(e, KS_EINPUT, "[trace] path: gen = servegen needs a windows CSV");
	if (o->gen == TR_GEN_FANOUT && !(o->duration_s > 0))
		return err_set(e, KS_EINPUT, "[trace] duration_s: gen = fanout needs it > 0");
	if (o->gen != TR_GEN_SERVEGEN && o->gen != TR_GEN_FANOUT && !(o->duration_s > 0) &&
	    o->requests == 0)
		return err_set(
		    e, KS_EINPUT,
		    "[trace] duration_s: a generator needs duration_s > 0 or requests > 0");
	return check_count(o, e);
}

int tr_src_gen(const tr_opts_t *o, uint64_t seed, tr_src_t **out, err_t *e)
{
	*out = NULL;
	tr_opts_t own = *o;
	if (!own.max_generated) /* options not from the schema: its default */
		own.max_generated = 1000000000;
	o = &own;
	if (o->gen == TR_GEN_CROWD)
		return tr_src_gen_crowd(o, seed, out, e);
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
	if (o->gen == TR_GEN_WEIBULL) {
		/* CV decreases with the shape k: bisect on [0.02, 200]. */
		double lo = 0.02, hi = 200;
		for (int i = 0; i < 200; i++) {
			double mid = sqrt(lo * hi);
			if (weibull_cv(mid) > o->cv)
				lo = mid;
			else
				hi = mid;
		}
		g->weib_k = sqrt(lo * hi);
		/* mean = scale * G(1 + 1/k) */
		g->weib_scale = 1 / (g->o.rate * exp(gsl_sf_lngamma(1 + 1 / g->weib_k)));
	}
	if (o->gen == TR_GEN_MMPP)
		g->mm_left = gsl_ran_exponential(g->arr, o->mmpp_dwell_s[0]);
	if (o->gen == TR_GEN_SERVEGEN) {
		if ((rc = tr_lines_open(&g->l, o->path, e)))
			goto fail;
		g->l.max_line = tr_max_line(o);
		g->lines_open = 1;
		if ((rc = sg_read(g, &g->next_w, e)) < 0)
			goto fail;
		if (rc == 0) {
			rc = err_set(e, KS_EINPUT, "%s:1: window_start_s: empty file", o->path);
			goto fail;
		}
		g->have_next = 1;
		if ((rc = sg_advance(g, e)) < 0)
			goto fail;
		g->base.bytes = 0;
	}
	if (o->gen == TR_GEN_FANOUT && (rc = fanout_plan(g, e)))
		goto fail;
	*out = &g->base;
	return 0;
fail:
	gen_close(&g->base);
	return rc;
}
