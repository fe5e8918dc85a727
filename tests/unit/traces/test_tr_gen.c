/* Trace generators, length distributions, prefix model and stats: rates and
 * CVs within tolerance for fixed seeds, determinism, fan-out structure,
 * ServeGen windows, and stats against hand-computed values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <unistd.h>

#include "sim/cli/cli.h"
#include "tests/fixtures/tr_fixture.h"
#include "traces/tr_int.h"
#include "tests/fixtures/test_main.h"

typedef struct gen_out {
	double *t; /* arrival s */
	uint32_t *in, *out;
	uint64_t *b0; /* first block id (0 if none) */
	uint32_t *nb;
	size_t n;
} gen_out_t;

static gen_out_t gen_run(const tr_opts_t *o, uint32_t S, uint64_t seed)
{
	tr_reader_t *r;
	err_t e = {0};
	if (tr_open(o, S, seed, &r, &e))
		fail_msg("open: %s", e.msg);
	gen_out_t g = {0};
	size_t cap = 0;
	tr_request_t q;
	int rc;
	while ((rc = tr_next(r, &q, &e)) > 0) {
		if (g.n == cap) {
			cap = cap ? cap * 2 : 1024;
			g.t = realloc(g.t, cap * sizeof *g.t);
			g.in = realloc(g.in, cap * sizeof *g.in);
			g.out = realloc(g.out, cap * sizeof *g.out);
			g.b0 = realloc(g.b0, cap * sizeof *g.b0);
			g.nb = realloc(g.nb, cap * sizeof *g.nb);
		}
		g.t[g.n] = q.arrival_ns / 1e9;
		g.in[g.n] = q.input_len;
		g.out[g.n] = q.output_len;
		g.b0[g.n] = q.n_blocks ? q.blocks[0] : 0;
		g.nb[g.n] = q.n_blocks;
		g.n++;
	}
	if (rc)
		fail_msg("next: %s", e.msg);
	tr_close(r);
	return g;
}

static void gen_free(gen_out_t *g)
{
	free(g->t);
	free(g->in);
	free(g->out);
	free(g->b0);
	free(g->nb);
}

/* CV of inter-arrival gaps. */
static double gap_cv(const gen_out_t *g)
{
	double *d = malloc(g->n * sizeof *d);
	for (size_t i = 1; i < g->n; i++)
		d[i - 1] = g->t[i] - g->t[i - 1];
	double m = gsl_stats_mean(d, 1, g->n - 1), sd = gsl_stats_sd(d, 1, g->n - 1);
	free(d);
	return sd / m;
}

static tr_opts_t gen_opts(tr_gen_kind_t k)
{
	tr_opts_t o;
	tr_opts_default(&o);
	o.kind = TR_KIND_GEN;
	o.gen = k;
	return o;
}

static void test_poisson_rate_and_cv(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_POISSON);
	o.rate = 100;
	o.duration_s = 300;
	gen_out_t g = gen_run(&o, 512, 1);
	double rate = g.n / 300.0;
	assert_true(fabs(rate - 100) < 2); /* sd of the count is sqrt(30000)/300 = 0.58 */
	assert_true(fabs(gap_cv(&g) - 1) < 0.03);
	for (size_t i = 1; i < g.n; i++)
		assert_true(g.t[i] >= g.t[i - 1]);
	assert_true(g.t[g.n - 1] <= 300);
	gen_free(&g);
}

static void test_gamma_cv(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_GAMMA);
	o.rate = 50;
	o.cv = 3;
	o.duration_s = 0;
	o.requests = 60000;
	gen_out_t g = gen_run(&o, 512, 2);
	assert_int_equal(g.n, 60000);
	double rate = (g.n - 1) / (g.t[g.n - 1] - g.t[0]);
	assert_true(fabs(rate / 50 - 1) < 0.05);
	assert_true(fabs(gap_cv(&g) / 3 - 1) < 0.1);
	gen_free(&g);
	o.cv = 0.5;
	g = gen_run(&o, 512, 2);
	assert_true(fabs(gap_cv(&g) / 0.5 - 1) < 0.05);
	gen_free(&g);
}

static void test_weibull_cv(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_WEIBULL);
	o.rate = 20;
	o.cv = 2;
	o.duration_s = 0;
	o.requests = 60000;
	gen_out_t g = gen_run(&o, 512, 3);
	double rate = (g.n - 1) / (g.t[g.n - 1] - g.t[0]);
	assert_true(fabs(rate / 20 - 1) < 0.05);
	assert_true(fabs(gap_cv(&g) / 2 - 1) < 0.1);
	gen_free(&g);
}

static void test_mmpp_mean_rate(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_MMPP);
	o.mmpp_rate[0] = 5;
	o.mmpp_rate[1] = 50;
	o.mmpp_dwell_s[0] = 30;
	o.mmpp_dwell_s[1] = 5;
	o.duration_s = 20000;
	gen_out_t g = gen_run(&o, 512, 4);
	/* stationary mean rate = (r0 d0 + r1 d1) / (d0 + d1) */
	double want = (5 * 30 + 50 * 5) / 35.0, rate = g.n / 20000.0;
	assert_true(fabs(rate / want - 1) < 0.05);
	assert_true(gap_cv(&g) > 1.3); /* modulated: burstier than Poisson */
	gen_free(&g);
}

static void test_flash_crowd_multiplies_rate_in_window(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_FLASH);
	o.rate = 20;
	o.flash_start_s = 100;
	o.flash_duration_s = 50;
	o.flash_mult = 8;
	o.duration_s = 300;
	gen_out_t g = gen_run(&o, 512, 5);
	size_t in = 0, before = 0;
	for (size_t i = 0; i < g.n; i++) {
		in += g.t[i] >= 100 && g.t[i] < 150;
		before += g.t[i] < 100;
	}
	assert_true(fabs(in / 50.0 / 160 - 1) < 0.08);
	assert_true(fabs(before / 100.0 / 20 - 1) < 0.15);
	gen_free(&g);
}

static void test_diurnal_follows_sine(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_DIURNAL);
	o.rate = 50;
	o.diurnal_period_s = 200;
	o.diurnal_amp = 0.8;
	o.duration_s = 200;
	gen_out_t g = gen_run(&o, 512, 6);
	size_t hi = 0, lo = 0;
	for (size_t i = 0; i < g.n; i++)
		*(g.t[i] < 100 ? &hi : &lo) += 1;
	/* integral over each half: 50*100*(1 +- 0.8*2/pi) */
	assert_true(fabs(hi / (5000 * (1 + 1.6 / M_PI)) - 1) < 0.06);
	assert_true(fabs(lo / (5000 * (1 - 1.6 / M_PI)) - 1) < 0.1);
	gen_free(&g);
}

static void test_servegen_windows_rates(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_SERVEGEN);
	o.path = tf_write("csv", "0,0,0,,0,0\n"
	                         "600,10,2.0,Gamma,0.25,0.01\n"
	                         "1200,0,0,,0,0\n"
	                         "1800,4,3.0,Weibull,0.45,0.02\n");
	gen_out_t g = gen_run(&o, 512, 7);
	size_t w[4] = {0};
	for (size_t i = 0; i < g.n; i++) {
		/* arrivals are relative to the first one, which lands in window 1 */
		double t = g.t[i] + 600;
		int k = (int)(t / 600);
		assert_true(k >= 1 && k <= 3 && k != 2);
		w[k]++;
	}
	assert_true(fabs(w[1] / 6000.0 - 1) < 0.2);
	assert_true(fabs(w[3] / 2400.0 - 1) < 0.3);
	gen_free(&g);
	/* the same file through kind = servegen */
	tr_opts_t k;
	tr_opts_default(&k);
	k.path = o.path;
	tr_kind_t kind;
	err_t e;
	assert_int_equal(tr_detect(k.path, &kind, &e), 0);
	assert_int_equal(kind, TR_KIND_SERVEGEN);
	gen_out_t h = gen_run(&k, 512, 7);
	assert_int_equal(h.n, g.n);
	gen_free(&h);
}

static void test_servegen_bad_row(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_SERVEGEN);
	o.path = tf_write("csv", "0,1,1,Gamma,1,1\n600,1,1,Lumpy,1,1\n");
	err_t e = {0};
	uint64_t n;
	assert_int_equal(tr_validate(&o, 16, 1, &n, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, ":2: pattern: 'Lumpy' is not Gamma, Weibull or empty"));
}

/* Window starts must increase: a repeated one (an empty window) and one
 * that goes back are errors at their line, even where the window before
 * has no requests to draw. */
static void test_servegen_window_starts_must_increase(void **st)
{
	(void)st;
	static const char *const files[][2] = {
	    {"0,1,1,Gamma,1,1\n0,2,1,Gamma,1,1\n600,1,1,Gamma,1,1\n",
	     ":2: window_start_s: repeats the previous window's start (0 s; the previous window "
	     "starts at 0 s)"},
	    {"0,1,1,Gamma,1,1\n600,0,0,,0,0\n300,1,1,Gamma,1,1\n",
	     ":3: window_start_s: goes backwards (300 s; the previous window starts at 600 s)"},
	};
	for (size_t i = 0; i < 2; i++) {
		tr_opts_t o = gen_opts(TR_GEN_SERVEGEN);
		o.path = tf_write("csv", files[i][0]);
		err_t e = {0};
		uint64_t n;
		assert_int_equal(tr_validate(&o, 16, 1, &n, &e), KS_EINPUT);
		if (!strstr(e.msg, files[i][1]) || strncmp(e.msg, o.path, strlen(o.path)))
			fail_msg("'%s' lacks '%s'", e.msg, files[i][1]);
	}
}

/* A ServeGen window at 1e9 req/s hung `kvsim trace stats` (6e11 requests
 * drawn one by one), as does any generator whose rate x duration is that
 * large: both are refused at once against trace.max_generated (default 1e9,
 * named in the message), and raising it lets them through. alarm() catches
 * a hang only. */
static void test_generators_expected_past_max_generated_are_refused(void **st)
{
	(void)st;
	alarm(300);
	tr_opts_t o = gen_opts(TR_GEN_SERVEGEN); /* max_generated: the schema's default */
	o.path = tf_write("csv", "0,5,1,,0,0\n600,1e9,1,,0,0\n1200,5,1,,0,0\n");
	err_t e = {0};
	uint64_t n;
	assert_int_equal(tr_validate(&o, 16, 1, &n, &e), KS_EINPUT);
	if (!strstr(e.msg, ":2: rate: the windows up to this one make about 6e+11 requests, more "
	                   "than [trace] max_generated = 1000000000") ||
	    !strstr(e.msg, "raise trace.max_generated") || strncmp(e.msg, o.path, strlen(o.path)))
		fail_msg("%s", e.msg);
	/* the same through kind = servegen (trace stats FILE) */
	tr_opts_t k;
	tr_opts_default(&k);
	k.path = o.path;
	assert_int_equal(tr_validate(&k, 16, 1, &n, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "max_generated = 1000000000"));
	/* every other generator: rate x duration_s (or requests) */
	static const tr_gen_kind_t gens[] = {TR_GEN_POISSON, TR_GEN_GAMMA,   TR_GEN_WEIBULL,
	                                     TR_GEN_FLASH,   TR_GEN_DIURNAL, TR_GEN_MMPP,
	                                     TR_GEN_FANOUT};
	for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++) {
		tr_opts_t g = gen_opts(gens[i]);
		g.rate = g.mmpp_rate[0] = g.fanout_bg_rate = 1e9;
		g.duration_s = 1e4;
		assert_int_equal(tr_validate(&g, 16, 1, &n, &e), KS_EINPUT);
		if (!strstr(e.msg, "[trace] max_generated: gen = ") ||
		    !strstr(e.msg, "more than max_generated = 1000000000"))
			fail_msg("%s: %s", tr_gen_name(gens[i]), e.msg);
		g.duration_s = gens[i] == TR_GEN_FANOUT ? 1e4 : 0; /* until `requests`: counted */
		g.requests = 2000000000;
		assert_int_equal(tr_validate(&g, 16, 1, &n, &e), KS_EINPUT);
		if (!strstr(e.msg, "about 2e+09 requests (requests)"))
			fail_msg("%s: %s", tr_gen_name(gens[i]), e.msg);
		g.max_generated = 3000000000; /* raised: accepted, and a short run reads */
		g.requests = 1000;
		g.duration_s = 1e4;
		e.msg[0] = '\0';
		if (tr_validate(&g, 16, 1, &n, &e))
			fail_msg("%s: %s", tr_gen_name(gens[i]), e.msg);
	}
	alarm(0);
}

static void test_generators_are_deterministic(void **st)
{
	(void)st;
	for (int k = TR_GEN_POISSON; k <= TR_GEN_FANOUT; k++) {
		if (k == TR_GEN_SERVEGEN)
			continue;
		tr_opts_t o = gen_opts((tr_gen_kind_t)k);
		o.duration_s = 120;
		o.prefix_shared_prob = 0.5;
		gen_out_t a = gen_run(&o, 64, 11), b = gen_run(&o, 64, 11), c = gen_run(&o, 64, 12);
		assert_int_equal(a.n, b.n);
		assert_memory_equal(a.t, b.t, a.n * sizeof *a.t);
		assert_memory_equal(a.in, b.in, a.n * sizeof *a.in);
		assert_memory_equal(a.b0, b.b0, a.n * sizeof *a.b0);
		assert_true(c.n != a.n || memcmp(a.t, c.t, a.n * sizeof *a.t));
		gen_free(&a);
		gen_free(&b);
		gen_free(&c);
	}
}

/* 4 bursts of 20 requests and 3 decoy groups of 2 in 100 s, no background */
static tr_opts_t fanout_small(void)
{
	tr_opts_t o = gen_opts(TR_GEN_FANOUT);
	o.duration_s = 100;
	o.fanout_bursts = 4;
	o.fanout_size = 20;
	o.fanout_prefix_tokens = 2048;
	o.fanout_window_s = 1;
	o.fanout_bg_rate = 0;
	o.fanout_decoys = 3;
	o.fanout_decoy_size = 2;
	return o;
}

static void test_fanout_bursts_share_prefix(void **st)
{
	(void)st;
	tr_opts_t o = fanout_small();
	gen_out_t g = gen_run(&o, 512, 9);
	assert_int_equal(g.n, 4 * 20 + 3 * 2);
	/* count requests per distinct first block: 4 groups of 20, 3 of 2 */
	int groups20 = 0, groups2 = 0;
	for (size_t i = 0; i < g.n; i++) {
		int first = 1, cnt = 0;
		for (size_t j = 0; j < g.n; j++) {
			if (g.b0[j] == g.b0[i]) {
				cnt++;
				if (j < i)
					first = 0;
			}
		}
		if (first) {
			groups20 += cnt == 20;
			groups2 += cnt == 2;
		}
		assert_true(g.in[i] >= 2048 && g.nb[i] >= 4);
	}
	assert_int_equal(groups20, 4);
	assert_int_equal(groups2, 3);
	gen_free(&g);
	/* with background traffic */
	o.fanout_bg_rate = 10;
	g = gen_run(&o, 512, 9);
	assert_true(g.n > 86 + 800 && g.n < 86 + 1200);
	gen_free(&g);
}

/* trace.rate_scale = s on a generator: the count over the same duration_s
 * is s times the unscaled process's mean, within 5 standard deviations of
 * the scaled process's count (Poisson: var = mean; a renewal process with
 * gap CV c: var -> c^2 mean, Cox 1962; MMPP-2: var/T -> mean rate +
 * 2 (l0 - l1)^2 r0 r1 / (r0 + r1)^3, Fischer & Meier-Hellstern 1993),
 * and every arrival stays inside the span. */
static void expect_scaled_count(tr_opts_t o, double s, double mean1, double var_per_mean,
                                double extra_var, const char *what)
{
	o.rate_scale = s;
	gen_out_t g = gen_run(&o, 512, 5);
	double mean = s * mean1, sd = sqrt(var_per_mean * mean + extra_var);
	if (!(fabs((double)g.n - mean) < 5 * sd))
		fail_msg("%s at rate_scale %g: %zu requests, want %.0f +- %.0f", what, s, g.n, mean,
		         5 * sd);
	if (o.duration_s > 0 && o.kind == TR_KIND_GEN && o.gen != TR_GEN_SERVEGEN)
		assert_true(g.n == 0 || g.t[g.n - 1] < o.duration_s);
	gen_free(&g);
}

static void test_rate_scale_multiplies_every_rate_driven_generator(void **st)
{
	(void)st;
	const double T = 2000, sc[] = {0.5, 3};
	for (size_t i = 0; i < 2; i++) {
		double s = sc[i];
		tr_opts_t o = gen_opts(TR_GEN_POISSON);
		o.rate = 20;
		o.duration_s = T;
		expect_scaled_count(o, s, 20 * T, 1, 0, "poisson");
		o.gen = TR_GEN_GAMMA;
		o.cv = 2;
		expect_scaled_count(o, s, 20 * T, 4, 0, "gamma");
		o.gen = TR_GEN_WEIBULL;
		expect_scaled_count(o, s, 20 * T, 4, 0, "weibull");
		/* flash step: 20 req/s, 10x during [30, 40) s */
		o.gen = TR_GEN_FLASH;
		expect_scaled_count(o, s, 20 * T + 20 * 9 * 10, 1, 0, "flash");
		/* diurnal: the integral of 20 (1 + 0.5 sin(2 pi t / P)) over [0, T) */
		o.gen = TR_GEN_DIURNAL;
		o.diurnal_period_s = 600;
		double integral = 20 * (T + 0.5 * 600 / (2 * M_PI) * (1 - cos(2 * M_PI * T / 600)));
		expect_scaled_count(o, s, integral, 1, 0, "diurnal");
		/* mmpp: defaults 5 and 50 req/s, sojourns 30 and 5 s */
		o = gen_opts(TR_GEN_MMPP);
		o.duration_s = 20 * T;
		double r0 = 1 / 30.0, r1 = 1 / 5.0, p0 = r1 / (r0 + r1);
		double lbar = p0 * 5 + (1 - p0) * 50;
		double disp = 2 * 45.0 * 45.0 * r0 * r1 / pow(r0 + r1, 3);
		expect_scaled_count(o, s, lbar * 20 * T, 1, s * s * disp * 20 * T, "mmpp");
		/* servegen: each window's rate (one exponential window of 600 s) */
		o = gen_opts(TR_GEN_SERVEGEN);
		o.path = tf_write("csv", "0,10,1,,0,0\n");
		expect_scaled_count(o, s, 6000, 1, 0, "servegen");
		/* the same windows file read as trace.kind = servegen (detected) */
		const char *path = o.path;
		tr_opts_default(&o);
		o.path = path;
		expect_scaled_count(o, s, 6000, 1, 0, "servegen file");
		o.rate_scale = s; /* over the window's whole 600 s, not compressed */
		gen_out_t g = gen_run(&o, 512, 5);
		assert_true(g.t[g.n - 1] > 590 && g.t[g.n - 1] < 600);
		gen_free(&g);
	}
}

/* fanout: bursts and decoy groups times rate_scale (rounded half up), each
 * of unchanged size, inside the same duration; background at rate x s. */
static void test_rate_scale_multiplies_fanout_bursts_exactly(void **st)
{
	(void)st;
	tr_opts_t o = fanout_small();
	o.rate_scale = 2.5; /* 10 bursts, 7.5 -> 8 decoys */
	assert_int_equal(tr_gen_scaled_count(4, 2.5), 10);
	assert_int_equal(tr_gen_scaled_count(3, 2.5), 8);
	assert_int_equal(tr_gen_scaled_count(10, 1), 10);
	gen_out_t g = gen_run(&o, 512, 9);
	assert_int_equal(g.n, 10 * 20 + 8 * 2);
	size_t groups20 = 0;
	for (size_t i = 0; i < g.n; i++) {
		size_t cnt = 0, first = 1;
		for (size_t j = 0; j < g.n; j++)
			if (g.b0[j] == g.b0[i]) {
				cnt++;
				first &= j >= i;
			}
		groups20 += first && cnt == 20;
	}
	assert_int_equal(groups20, 10);
	assert_true(g.t[g.n - 1] < 100);
	gen_free(&g);
	o.fanout_bursts = o.fanout_decoys = 0;
	o.fanout_bg_rate = 10;
	expect_scaled_count(o, 2.5, 10 * 100, 1, 0, "fanout background");
	/* the default experiment's mix: requests per second scale by the factor */
	o = gen_opts(TR_GEN_FANOUT);
	o.rate_scale = 4;
	g = gen_run(&o, 512, 9);
	double want = 4 * (10 * 32 + 10 * 2 + 5 * 60.0);
	assert_true(fabs(g.n - want) < 5 * sqrt(4 * 5 * 60.0));
	gen_free(&g);
}

static void test_length_distributions(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_POISSON);
	o.duration_s = 0;
	o.requests = 20000;
	o.in.kind = TR_DIST_LOGNORMAL;
	o.in.mean = 1000;
	o.in.sigma = 0.5;
	o.in.max = 1000000;
	o.out.kind = TR_DIST_UNIFORM;
	o.out.min = 10;
	o.out.max = 20;
	gen_out_t g = gen_run(&o, 512, 13);
	double s = 0;
	for (size_t i = 0; i < g.n; i++) {
		s += g.in[i];
		assert_true(g.out[i] >= 10 && g.out[i] <= 20);
	}
	assert_true(fabs(s / g.n / 1000 - 1) < 0.03);
	gen_free(&g);
	o.in.kind = TR_DIST_FIXED;
	o.in.mean = 777;
	o.out.kind = TR_DIST_ZIPF;
	o.out.min = 1;
	o.out.max = 100;
	o.out.zipf_s = 1.5;
	g = gen_run(&o, 512, 13);
	size_t ones = 0;
	for (size_t i = 0; i < g.n; i++) {
		assert_int_equal(g.in[i], 777);
		ones += g.out[i] == 1;
	}
	/* P(1) = 1 / H(100, 1.5) = 0.4144 */
	assert_true(fabs((double)ones / g.n - 0.4144) < 0.02);
	gen_free(&g);
	/* empirical: only values from the source trace */
	o.in.kind = TR_DIST_EMPIRICAL;
	o.in.path = tf_write("csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	                            "2023-11-16 18:15:46,111,1\n2023-11-16 18:15:47,222,2\n");
	g = gen_run(&o, 512, 13);
	size_t a = 0;
	for (size_t i = 0; i < g.n; i++) {
		assert_true(g.in[i] == 111 || g.in[i] == 222);
		a += g.in[i] == 111;
	}
	assert_true(a > 9000 && a < 11000);
	gen_free(&g);
}

static void test_prefix_model_shared_prompts_zipf(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_POISSON);
	o.duration_s = 0;
	o.requests = 5000;
	o.in.kind = TR_DIST_FIXED;
	o.in.mean = 4096;
	o.prefix_shared_prob = 1;
	o.prefix_count = 10;
	o.prefix_zipf_s = 1;
	o.prefix_tokens = 1024;
	o.session_mode = TR_SESS_OFF;
	gen_out_t g = gen_run(&o, 256, 15);
	/* every request starts with one of 10 prompts; the most popular takes
	 * 1/H(10) = 34% */
	uint64_t ids[16];
	size_t cnt[16] = {0}, k = 0;
	for (size_t i = 0; i < g.n; i++) {
		size_t j = 0;
		while (j < k && ids[j] != g.b0[i])
			j++;
		if (j == k) {
			assert_true(k < 16);
			ids[k++] = g.b0[i];
		}
		cnt[j]++;
	}
	assert_int_equal(k, 10);
	size_t top = 0;
	for (size_t j = 0; j < k; j++)
		top = cnt[j] > top ? cnt[j] : top;
	assert_true(fabs((double)top / g.n - 0.3414) < 0.03);
	gen_free(&g);
}

static void test_prefix_model_fanout_groups_and_synthetic_sessions(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_POISSON);
	o.rate = 100;
	o.duration_s = 0;
	o.requests = 4000;
	o.in.kind = TR_DIST_FIXED;
	o.in.mean = 2048;
	o.group_prob = 0.05;
	o.group_size = 8;
	o.group_window_s = 10;
	o.group_tokens = 1024;
	o.session_mode = TR_SESS_OFF;
	tr_stats_t s;
	tr_reader_t *r;
	err_t e;
	assert_int_equal(tr_open(&o, 512, 3, &r, &e), 0);
	assert_int_equal(tr_stats_compute(r, 1, &s, &e), 0);
	tr_close(r);
	/* a group of 8 reuses 7 * 2 blocks of its 1024-token prefix; groups
	 * start at 5% of non-member requests: 4000 / (1 + 0.05 * 7) / 20 ~ 148 */
	double want = 148.0 * 7 * 2 / (4000.0 * 4);
	assert_true(s.reuse_block > want * 0.8 && s.reuse_block < want * 1.2);
	o.group_prob = 0;
	o.session_mode = TR_SESS_SYNTH;
	o.session_prob = 0.5;
	o.session_active = 50;
	assert_int_equal(tr_open(&o, 512, 3, &r, &e), 0);
	assert_int_equal(tr_stats_compute(r, 1, &s, &e), 0);
	tr_close(r);
	/* later turns (half the requests) share min(len) = all 4 blocks */
	assert_true(s.reuse_block > 0.4 && s.reuse_block < 0.6);
}

static void test_stats_hand_computed(void **st)
{
	(void)st;
	/* arrivals 0, 1, 2, 10 s; gaps 1, 1, 8: mean 10/3, sd 4.0415 */
	static const tf_mc_row_t rows[] = {{0, 1024, 10, "1, 2"},
	                                   {1000, 1024, 20, "1, 2"},
	                                   {2000, 1000, 30, "1, 3"},
	                                   {10000, 512, 40, "4"}};
	tr_opts_t o;
	tr_opts_default(&o);
	o.path = tf_mooncake(rows, 4);
	tr_reader_t *r;
	err_t e;
	tr_stats_t s;
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), 0);
	assert_int_equal(tr_stats_compute(r, 1, &s, &e), 0);
	tr_close(r);
	assert_int_equal(s.rows, 4);
	assert_true(fabs(s.duration_s - 10) < 1e-9);
	assert_true(fabs(s.mean_rate - 0.4) < 1e-9);
	assert_true(fabs(s.iat_cv - 4.041452 / (10 / 3.0)) < 1e-5);
	/* 1 s windows: counts 1,1,1,0,...,0,1 over 11 windows: peak 1, mean 4/11 */
	assert_true(fabs(s.peak_to_mean[0] - 11 / 4.0) < 1e-9);
	/* 10 s windows: [0,10) has 3, [10,20) has 1: mean 2 */
	assert_true(fabs(s.peak_to_mean[1] - 1.5) < 1e-9);
	assert_true(fabs(s.peak_to_mean[2] - 1) < 1e-9);
	assert_int_equal(s.blocks, 6);
	assert_int_equal(s.reused_blocks, 3); /* [1], [1,2] in row 2; [1] in row 3 */
	assert_int_equal(s.tokens, 3560);
	assert_true(fabs(s.reuse_token - 3 * 512 / 3560.0) < 1e-9);
	assert_int_equal(s.distinct_blocks, 3);
	assert_int_equal(s.prefixes_half_reuse, 1); /* block [1] has 2 of the 3 hits */
	assert_int_equal(s.in.p50, 1000);
	assert_int_equal(s.in.p99, 1024);
	assert_int_equal(s.out.p50, 20);
	assert_true(fabs(s.out.mean - 25) < 1e-9);
}

static void test_stats_quantiles_above_exact_range(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_POISSON);
	o.duration_s = 0;
	o.requests = 1000;
	o.in.kind = TR_DIST_UNIFORM;
	o.in.min = 100000;
	o.in.max = 200000;
	tr_reader_t *r;
	err_t e;
	tr_stats_t s;
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), 0);
	assert_int_equal(tr_stats_compute(r, 0, &s, &e), 0);
	tr_close(r);
	/* log buckets: 1/1024 relative resolution */
	assert_true(fabs(s.in.p50 / 150000.0 - 1) < 0.03);
	assert_true(s.in.p99 >= 195000 * (1 - 1 / 1024.0) && s.in.p99 <= 200000);
}

static void test_generator_parameter_errors(void **st)
{
	(void)st;
	tr_opts_t o = gen_opts(TR_GEN_GAMMA);
	o.cv = 0;
	err_t e = {0};
	tr_reader_t *r;
	assert_int_equal(tr_open(&o, 16, 1, &r, &e), KS_EINPUT);
	assert_string_equal(e.msg, "[trace] cv: 0 is out of range [0.05, 20]");
	o = gen_opts(TR_GEN_POISSON);
	o.duration_s = 0;
	assert_int_equal(tr_open(&o, 16, 1, &r, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "duration_s"));
	o = gen_opts(TR_GEN_POISSON);
	o.in.min = 10;
	o.in.max = 5;
	assert_int_equal(tr_open(&o, 16, 1, &r, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "[trace] in_min: 10 is above in_max 5"));
}

/* The documented ranges hold for every generator parameter, for options
 * built by hand as for a config: gamma cv = 100 used to write every row at
 * t = 0 (weibull alone checked [0.05, 20]). */
static void test_generator_options_outside_their_key_range_are_rejected(void **st)
{
	(void)st;
	static const struct {
		tr_gen_kind_t gen;
		const char *msg;
	} cases[] = {
	    {TR_GEN_GAMMA, "[trace] cv: 100 is out of range [0.05, 20]"},
	    {TR_GEN_WEIBULL, "[trace] cv: 100 is out of range [0.05, 20]"},
	    {TR_GEN_GAMMA, "[trace] cv: 0.01 is out of range [0.05, 20]"},
	    {TR_GEN_DIURNAL, "[trace] diurnal_amp: 1.5 is out of range [0, 1]"},
	    {TR_GEN_FLASH, "[trace] flash_mult: -1 is out of range [0, 1000000]"},
	    {TR_GEN_MMPP, "[trace] mmpp_rate1: -5 req/s is out of range [0, 1000000000]"},
	    {TR_GEN_FANOUT, "[trace] fanout_bg_rate: -1 req/s is out of range [0, 1000000000]"},
	    {TR_GEN_POISSON, "[trace] in_sigma: 11 is out of range [0, 10]"},
	    {TR_GEN_POISSON, "[trace] rate: nan req/s is out of range [0, 1000000000]"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tr_opts_t o = gen_opts(cases[i].gen);
		switch (i) {
		case 0:
		case 1: o.cv = 100; break;
		case 2: o.cv = 0.01; break;
		case 3: o.diurnal_amp = 1.5; break;
		case 4: o.flash_mult = -1; break;
		case 5: o.mmpp_rate[1] = -5; break;
		case 6: o.fanout_bg_rate = -1; break;
		case 7: o.in.sigma = 11; break;
		default: o.rate = NAN;
		}
		err_t e = {0};
		tr_reader_t *r;
		assert_int_equal(tr_open(&o, 16, 1, &r, &e), KS_EINPUT);
		assert_string_equal(e.msg, cases[i].msg);
	}
	/* the bounds themselves are accepted */
	tr_opts_t o = gen_opts(TR_GEN_GAMMA);
	o.cv = 20;
	o.requests = 10;
	gen_out_t g = gen_run(&o, 16, 1);
	assert_int_equal(g.n, 10);
	gen_free(&g);
	/* the dwell named is the one at fault */
	o = gen_opts(TR_GEN_MMPP);
	o.mmpp_dwell_s[1] = 0;
	err_t e = {0};
	tr_reader_t *r;
	assert_int_equal(tr_open(&o, 16, 1, &r, &e), KS_EINPUT);
	assert_string_equal(e.msg, "[trace] mmpp_dwell1_s: must be > 0 for gen = mmpp");
}

/* Runs `kvsim trace gen` in process with stderr in a file; returns its exit
 * status and the first stderr line in msg. */
static int trace_gen(const char *const *args, int n, char *msg, size_t len)
{
	char *argv[16] = {"trace", "gen"};
	for (int i = 0; i < n; i++)
		argv[2 + i] = (char *)args[i];
	const char *errf = tf_write("err", "");
	fflush(stderr);
	int saved = dup(2);
	FILE *f = freopen(errf, "w", stderr);
	assert_non_null(f);
	int rc = tr_cli_main(2 + n, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	FILE *in = fopen(errf, "r");
	msg[0] = '\0';
	if (in && !fgets(msg, (int)len, in))
		msg[0] = '\0';
	if (in)
		fclose(in);
	return rc;
}

/* trace gen KEY=V arguments meet the same ranges, with the schema's
 * message and exit 2, and write no output file. */
static void test_trace_gen_arguments_enforce_documented_ranges(void **st)
{
	(void)st;
	char msg[512], out[128];
	snprintf(out, sizeof out, "%s/never.tsv", (tf_write("x", ""), tf_dir));
	const char *cv[] = {"gamma", "cv=100", "-o", out};
	assert_int_equal(trace_gen(cv, 4, msg, sizeof msg), 2);
	assert_non_null(strstr(msg, "[trace] cv: 100 is out of range [0.05, 20]"));
	assert_int_equal(access(out, F_OK), -1);
	const char *big[] = {"poisson", "requests=99999999999999999999", "-o", out};
	assert_int_equal(trace_gen(big, 4, msg, sizeof msg), 2);
	assert_non_null(strstr(msg, "[trace] requests: 99999999999999999999 requests is out of range"));
	const char *notint[] = {"poisson", "requests=1.5", "-o", out};
	assert_int_equal(trace_gen(notint, 4, msg, sizeof msg), 2);
	assert_non_null(strstr(msg, "[trace] requests: expected an integer, got '1.5'"));
	const char *seed[] = {"poisson", "--seed", "99999999999999999999", "-o", out};
	assert_int_equal(trace_gen(seed, 5, msg, sizeof msg), 2);
	assert_non_null(strstr(msg, "--seed: '99999999999999999999' is out of range"));
	const char *seed2[] = {"poisson", "--seed", "12x", "-o", out};
	assert_int_equal(trace_gen(seed2, 5, msg, sizeof msg), 2);
	assert_non_null(strstr(msg, "--seed: '12x' is not a whole number"));
	assert_int_equal(access(out, F_OK), -1);
	const char *ok[] = {"gamma", "cv=20", "requests=5", "-o", out};
	assert_int_equal(trace_gen(ok, 5, msg, sizeof msg), 0);
	assert_int_equal(access(out, F_OK), 0);
}

static tr_opts_t crowd_opts(void)
{
	tr_opts_t o = gen_opts(TR_GEN_CROWD);
	o.duration_s = 60;
	o.crowd_count = 3;
	o.crowd_size = 10;
	o.crowd_warm_requests = 2;
	o.crowd_prefix_tokens = 8192;
	o.crowd_lead_s = 10;
	o.crowd_window_s = 2;
	o.crowd_bg_rate = 0;
	return o;
}

/* Each event: 2 warm-up requests at t0 with its own 8192-token prefix (16
 * blocks of 512), then its 10 crowd requests in [t0 + 10, t0 + 12) s with
 * the same prefix; 3 events make 3 distinct prefixes of 12 requests. */
static void test_crowd_warm_up_precedes_the_crowd_by_the_lead(void **st)
{
	(void)st;
	tr_opts_t o = crowd_opts();
	gen_out_t g = gen_run(&o, 512, 7);
	assert_int_equal(g.n, 3 * (2 + 10));
	int groups = 0;
	for (size_t i = 0; i < g.n; i++) {
		assert_true(g.in[i] >= 8192 && g.nb[i] >= 16);
		size_t first = i;
		for (size_t j = 0; j < i; j++)
			if (g.b0[j] == g.b0[i])
				first = j;
		if (first != i)
			continue;
		groups++;
		double t0 = g.t[i];
		int warm = 0, crowd = 0;
		for (size_t j = 0; j < g.n; j++) {
			if (g.b0[j] != g.b0[i])
				continue;
			if (g.t[j] == t0)
				warm++;
			else if (g.t[j] >= t0 + 10 - 1e-9 && g.t[j] < t0 + 12 + 1e-9)
				crowd++;
			else
				fail_msg("request at %.3f s outside event at %.3f s", g.t[j], t0);
		}
		assert_int_equal(warm, 2);
		assert_int_equal(crowd, 10);
	}
	assert_int_equal(groups, 3);
	gen_free(&g);
}

/* trace.rate_scale on the crowd generator multiplies each crowd's size and
 * the background rate; the events and their warm-up requests stay (a
 * silent no-op before: the study's crowd rows at load x1 and x2 were the
 * same runs). */
static void test_crowd_rate_scale_scales_crowds_and_background(void **st)
{
	(void)st;
	tr_opts_t o = crowd_opts();
	o.rate_scale = 2.5;
	gen_out_t g = gen_run(&o, 512, 7);
	assert_int_equal(g.n, 3 * (2 + 25)); /* 10 x 2.5 per crowd, no background */
	gen_free(&g);
	o = crowd_opts();
	o.crowd_count = 1;
	o.crowd_size = 1;
	o.crowd_bg_rate = 5;
	o.duration_s = 2000;
	o.crowd_lead_s = 1;
	o.crowd_window_s = 1;
	for (int k = 0; k < 2; k++) {
		o.rate_scale = k ? 3 : 1;
		g = gen_run(&o, 512, 9);
		double mean = 5 * 2000 * o.rate_scale, n = (double)g.n - 2 - o.rate_scale;
		if (!(fabs(n - mean) < 5 * sqrt(mean)))
			fail_msg("rate_scale %g: %.0f background requests, want %.0f +- %.0f",
			         o.rate_scale, n, mean, 5 * sqrt(mean));
		gen_free(&g);
	}
}

/* crowd_repeat = 2 of 4 events reuse earlier prefixes: 2 distinct ones. */
static void test_crowd_repeat_reuses_an_earlier_prefix(void **st)
{
	(void)st;
	tr_opts_t o = crowd_opts();
	o.crowd_count = 4;
	o.crowd_repeat = 2;
	gen_out_t g = gen_run(&o, 512, 3);
	assert_int_equal(g.n, 4 * 12);
	int distinct = 0;
	for (size_t i = 0; i < g.n; i++) {
		int seen = 0;
		for (size_t j = 0; j < i; j++)
			seen |= g.b0[j] == g.b0[i];
		distinct += !seen;
	}
	assert_int_equal(distinct, 2);
	gen_free(&g);
}

/* Same seed, same rows; another seed moves the events. The background
 * ramps linearly from 5 to 15 req/s over 100 s: expected 375 requests in
 * the first half, 625 in the second (ratio 1.67, sd about 0.11; flat
 * would be 1). */
static void test_crowd_is_deterministic_and_its_background_ramps(void **st)
{
	(void)st;
	tr_opts_t o = crowd_opts();
	o.crowd_bg_rate = 5;
	gen_out_t a = gen_run(&o, 512, 11), b = gen_run(&o, 512, 11), c = gen_run(&o, 512, 12);
	assert_int_equal(a.n, b.n);
	for (size_t i = 0; i < a.n; i++)
		assert_true(a.t[i] == b.t[i] && a.b0[i] == b.b0[i] && a.in[i] == b.in[i] &&
		            a.out[i] == b.out[i]);
	int differ = a.n != c.n;
	for (size_t i = 0; !differ && i < a.n; i++)
		differ = a.t[i] != c.t[i];
	assert_true(differ);
	gen_free(&a);
	gen_free(&b);
	gen_free(&c);
	o = crowd_opts();
	o.crowd_count = 0;
	o.duration_s = 100;
	o.crowd_bg_rate = 5;
	o.crowd_bg_rate_end = 15;
	gen_out_t r = gen_run(&o, 512, 5);
	/* times are from the first row, a fraction of a second in at 5 req/s */
	size_t lo = 0, hi = 0;
	for (size_t i = 0; i < r.n; i++) {
		if (r.t[i] < 50)
			lo++;
		else
			hi++;
	}
	assert_true(lo > 0 && (double)hi / lo > 1.25 && (double)hi / lo < 2.1);
	gen_free(&r);
}

/* Constraints between keys name the key at fault. */
static void test_crowd_key_errors(void **st)
{
	(void)st;
	tr_reader_t *r;
	err_t e = {0};
	tr_opts_t o = crowd_opts();
	o.crowd_repeat = 3;
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), KS_EINPUT);
	assert_string_equal(e.msg, "[trace] crowd_repeat: 3 repeats need at least one earlier "
	                           "event (crowd_count = 3)");
	o = crowd_opts();
	o.crowd_lead_s = 19;
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), KS_EINPUT);
	assert_string_equal(e.msg, "[trace] crowd_lead_s: crowd_lead_s + crowd_window_s = 21 s "
	                           "does not fit an event's slot (duration_s / crowd_count = 20 s)");
	o = crowd_opts();
	o.crowd_prefix_tokens = 4096;
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "[trace] crowd_prefix_tokens: 4096 tokens is out of range "
	                              "[8192, 65536]"));
	o = crowd_opts();
	o.duration_s = 0;
	o.requests = 10;
	assert_int_equal(tr_open(&o, 512, 1, &r, &e), KS_EINPUT);
	assert_string_equal(e.msg, "[trace] duration_s: gen = crowd needs it > 0");
	char msg[512], out[128];
	snprintf(out, sizeof out, "%s/crowd.tsv", (tf_write("x", ""), tf_dir));
	const char *bad[] = {"crowd", "crowd_count=2", "crowd_repeat=2", "-o", out};
	assert_int_equal(trace_gen(bad, 5, msg, sizeof msg), 2);
	assert_non_null(strstr(msg, "[trace] crowd_repeat: 2 repeats need"));
	assert_int_equal(access(out, F_OK), -1);
	const char *ok[] = {"crowd", "-o", out};
	assert_int_equal(trace_gen(ok, 3, msg, sizeof msg), 0);
	assert_int_equal(access(out, F_OK), 0);
}

extern const cfg_tkey_t tr_cfg_keys[];
extern const size_t tr_cfg_keys_n;

/* TR_GEN_LIST is the one list: each generator has its table, under its own
 * name, parses back to itself, either opens its own source or is driven by
 * the common one, and trace.gen offers exactly the list, in its order. */
static void test_generator_list_drives_names_choices_and_dispatch(void **st)
{
	(void)st;
	char want[512] = "", got[512];
	for (int g = 0; g < TR_GEN_N; g++) {
		const tr_gen_ops_t *ops = tr_gen_ops((tr_gen_kind_t)g);
		assert_non_null(ops);
		assert_string_equal(ops->name, tr_gen_name((tr_gen_kind_t)g));
		tr_gen_kind_t back = TR_GEN_N;
		assert_int_equal(tr_gen_parse(ops->name, &back), 0);
		assert_int_equal(back, g);
		assert_true(!ops->open != !ops->next); /* one way to make rows */
		snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", g ? "," : "",
		         ops->name);
	}
	tr_gen_kind_t none;
	assert_int_not_equal(tr_gen_parse("nosuchgen", &none), 0);
	assert_string_equal(tr_gen_name(TR_GEN_N), "?");
	const cfg_tkey_t *gen = NULL;
	for (size_t i = 0; i < tr_cfg_keys_n; i++)
		if (!strcmp(tr_cfg_keys[i].key.name, "gen"))
			gen = &tr_cfg_keys[i];
	assert_non_null(gen);
	assert_string_equal(cfg_tkey_choices(gen, got, sizeof got), want);
}

TEST_MAIN(cmocka_unit_test(test_generator_list_drives_names_choices_and_dispatch),
          cmocka_unit_test(test_poisson_rate_and_cv), cmocka_unit_test(test_gamma_cv),
          cmocka_unit_test(test_weibull_cv), cmocka_unit_test(test_mmpp_mean_rate),
          cmocka_unit_test(test_flash_crowd_multiplies_rate_in_window),
          cmocka_unit_test(test_diurnal_follows_sine),
          cmocka_unit_test(test_servegen_windows_rates), cmocka_unit_test(test_servegen_bad_row),
          cmocka_unit_test(test_servegen_window_starts_must_increase),
          cmocka_unit_test(test_generators_expected_past_max_generated_are_refused),
          cmocka_unit_test(test_generators_are_deterministic),
          cmocka_unit_test(test_fanout_bursts_share_prefix),
          cmocka_unit_test(test_rate_scale_multiplies_every_rate_driven_generator),
          cmocka_unit_test(test_rate_scale_multiplies_fanout_bursts_exactly),
          cmocka_unit_test(test_length_distributions),
          cmocka_unit_test(test_prefix_model_shared_prompts_zipf),
          cmocka_unit_test(test_prefix_model_fanout_groups_and_synthetic_sessions),
          cmocka_unit_test(test_stats_hand_computed),
          cmocka_unit_test(test_stats_quantiles_above_exact_range),
          cmocka_unit_test(test_generator_parameter_errors),
          cmocka_unit_test(test_generator_options_outside_their_key_range_are_rejected),
          cmocka_unit_test(test_trace_gen_arguments_enforce_documented_ranges),
          cmocka_unit_test(test_crowd_warm_up_precedes_the_crowd_by_the_lead),
          cmocka_unit_test(test_crowd_rate_scale_scales_crowds_and_background),
          cmocka_unit_test(test_crowd_repeat_reuses_an_earlier_prefix),
          cmocka_unit_test(test_crowd_is_deterministic_and_its_background_ramps),
          cmocka_unit_test(test_crowd_key_errors))
