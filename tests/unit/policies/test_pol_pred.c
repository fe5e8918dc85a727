/* Predictors on hand-built arrival sequences. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "policies/pol.h"
#include "policies/pol_int.h"
#include "tests/fixtures/pol_fake.h"

#define S 1000000000LL

static pol_handle_t open_pred(const char *name, const char *over)
{
	return fk_open(POL_PREDICTOR, name, over, 11);
}

static const struct pol_predictor_ops *P(const pol_handle_t *h)
{
	return (const void *)h->ops;
}

/* A prompt of `shared` blocks of family `fam` then `own` blocks unique to
 * request `id`. */
static uint32_t prompt(uint64_t *b, uint64_t fam, uint32_t shared, uint64_t id, uint32_t own)
{
	for (uint32_t i = 0; i < shared; i++)
		b[i] = fam * 1000 + i;
	for (uint32_t i = 0; i < own; i++)
		b[shared + i] = (id << 20) + 7777 + i;
	return shared + own;
}

static void observe(pol_handle_t *h, int64_t t, uint64_t fam, uint32_t shared, uint64_t id,
                    int32_t inst)
{
	uint64_t b[64];
	uint32_t n = prompt(b, fam, shared, id, 2);
	pol_arrival_t a = {t, b, n, inst};
	err_t e;
	assert_int_equal(P(h)->observe(h->state, &a, &e), 0);
}

static pol_forecast_t forecast(pol_handle_t *h, int64_t now, int64_t horizon)
{
	pol_forecast_t fc;
	err_t e;
	assert_int_equal(P(h)->forecast(h->state, now, horizon, &fc, &e), 0);
	return fc;
}

/* ---- repeat_count -------------------------------------------------------- */

static void test_repeat_count_fires_on_xth_repeat_not_before(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("repeat_count", "rc_repeats=3,rc_window_s=10,rc_min_blocks=4");
	observe(&h, 0 * S, 1, 8, 1, 0);
	observe(&h, 1 * S, 1, 8, 2, 1);
	assert_int_equal(forecast(&h, 1 * S, 10 * S).n, 0); /* X-1 = 2 repeats: quiet */
	observe(&h, 2 * S, 1, 8, 3, 1);
	pol_forecast_t fc = forecast(&h, 2 * S, 10 * S);
	assert_int_equal(fc.n, 1);
	assert_int_equal(fc.e[0].n_blocks, 8); /* the shared part, not the private suffixes */
	assert_int_equal(fc.e[0].blocks[7], 1007);
	/* 3 arrivals over 2 s = 1/s: 10 expected in 10 s */
	assert_true(fabs(fc.e[0].expected - 10.0) < 1e-9);
	assert_int_equal(fc.e[0].n_likely, 1); /* the firing arrival's instance */
	assert_int_equal(fc.e[0].likely[0], 1);
	pol_close(&h);
}

static void test_repeat_count_needs_the_repeats_inside_the_window(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("repeat_count", "rc_repeats=3,rc_window_s=10");
	observe(&h, 0 * S, 1, 8, 1, 0);
	observe(&h, 6 * S, 1, 8, 2, 0);
	observe(&h, 11 * S, 1, 8, 3, 0); /* 0..11 spans 11 s > 10 s */
	assert_int_equal(forecast(&h, 11 * S, S).n, 0);
	observe(&h, 12 * S, 1, 8, 4, 0); /* 6, 11, 12 inside 10 s */
	assert_int_equal(forecast(&h, 12 * S, S).n, 1);
	/* stays hot rc_hot_s (30 s) after the last firing, then leaves */
	assert_int_equal(forecast(&h, 41 * S, S).n, 1);
	assert_int_equal(forecast(&h, 43 * S, S).n, 0);
	pol_close(&h);
}

static void test_repeat_count_ignores_prefixes_shorter_than_y(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("repeat_count", "rc_repeats=2,rc_min_blocks=4");
	observe(&h, 0, 1, 3, 1, 0);
	observe(&h, 1, 1, 3, 2, 0);
	observe(&h, 2, 1, 3, 3, 0);
	assert_int_equal(forecast(&h, 3, S).n, 0);
	pol_close(&h);
}

/* ---- ewma ---------------------------------------------------------------- */

static void test_ewma_ranks_by_decayed_popularity_and_forgets(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("ewma", "ewma_tau_s=30,ewma_min_score=2");
	for (int i = 0; i < 10; i++) {
		observe(&h, i * S, 1, 8, 100 + i, 0);
		if (i < 3)
			observe(&h, i * S + S / 2, 2, 8, 200 + i, 3);
	}
	pol_forecast_t fc = forecast(&h, 10 * S, 30 * S);
	assert_int_equal(fc.n, 2);
	assert_int_equal(fc.e[0].blocks[0], 1000); /* family 1 first */
	assert_int_equal(fc.e[1].blocks[0], 2000);
	assert_true(fc.e[0].expected > 2 * fc.e[1].expected);
	/* 10 arrivals, decayed over <= 10 s with tau 30: score in (10 e^{-1/3}, 10) */
	assert_true(fc.e[0].expected > 10 * exp(-1.0 / 3) && fc.e[0].expected < 10);
	assert_int_equal(fc.e[1].likely[0], 3);
	/* after 5 tau both fall below the reporting threshold */
	assert_int_equal(forecast(&h, 160 * S, 30 * S).n, 0);
	pol_close(&h);
}

static void test_ewma_table_is_bounded(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("ewma", "ewma_capacity=2,ewma_min_score=0");
	for (uint64_t fam = 1; fam <= 5; fam++)
		for (int i = 0; i < 3; i++)
			observe(&h, (int64_t)(fam * 10 + i) * S, fam, 8, fam * 100 + i, 0);
	pol_forecast_t fc = forecast(&h, 60 * S, S);
	assert_true(fc.n <= 2);
	assert_int_equal(fc.e[0].blocks[0], 5000); /* the newest heavy hitter survives */
	pol_close(&h);
}

/* ---- holt ------------------------------------------------------------------ */

static void test_holt_exact_on_linear_series(void **st)
{
	(void)st;
	pol_holt_t h = {0};
	for (int k = 0; k < 10; k++)
		pol_holt_update(&h, 10 + 2 * k, 0.5, 0.3);
	assert_true(fabs(pol_holt_sum(&h, 1) - 30) < 1e-9);
	assert_true(fabs(pol_holt_sum(&h, 2) - (30 + 32)) < 1e-9);
	assert_true(fabs(pol_holt_sum(&h, 1.5) - (30 + 16)) < 1e-9);
}

static void test_holt_forecasts_linear_ramp(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("holt", "holt_step_s=1");
	uint64_t id = 1;
	for (int k = 0; k < 20; k++) {
		int c = 10 + 2 * k;
		for (int j = 0; j < c; j++)
			observe(&h, k * S + (int64_t)j * S / c, 1, 8, id++, 2);
	}
	pol_forecast_t fc = forecast(&h, 20 * S, 1 * S);
	assert_int_equal(fc.n, 1);
	/* bucket 20 of the ramp holds 50; the group misses only the very first
	 * arrival (it opened the group), which the smoothing has long forgotten */
	assert_true(fabs(fc.e[0].expected - 50) < 0.5);
	fc = forecast(&h, 20 * S, 2 * S);
	assert_true(fabs(fc.e[0].expected - 102) < 1.0);
	assert_non_null(fc.inst_expected);
	assert_int_equal(fc.n_inst, 3);
	assert_true(fabs(fc.inst_expected[2] - 102) < 1e-6);
	assert_true(fc.inst_expected[0] == 0);
	pol_close(&h);
}

/* ---- hawkes -------------------------------------------------------------- */

/* Ogata's thinning (Ogata 1981) for the exponential-kernel process. */
static size_t simulate_hawkes(double mu, double al, double be, double T, double *t, size_t cap,
                              unsigned long seed)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, seed);
	size_t n = 0;
	double s = 0, excess = 0; /* excess intensity at time s */
	while (n < cap) {
		double lbar = mu + excess;
		double w = -log(1 - gsl_rng_uniform(r)) / lbar;
		excess *= exp(-be * w);
		s += w;
		if (s > T)
			break;
		if (gsl_rng_uniform(r) * lbar <= mu + excess) {
			t[n++] = s;
			excess += al;
		}
	}
	gsl_rng_free(r);
	return n;
}

static void test_hawkes_fit_recovers_simulated_parameters(void **st)
{
	(void)st;
	static double t[20000];
	const double mu = 0.5, al = 0.8, be = 1.6, T = 4000;
	size_t n = simulate_hawkes(mu, al, be, T, t, 20000, 5);
	/* stationary mean count mu T / (1 - al/be) = 4000 */
	assert_true(n > 3000 && n < 5000);
	double m = 0, a = 0, b = 0;
	assert_int_equal(pol_hawkes_fit(t, n, 0, T, &m, &a, &b), 0);
	print_message("hawkes fit: mu %.3f alpha %.3f beta %.3f (true 0.5 0.8 1.6), n %zu\n", m, a,
	              b, n);
	assert_true(fabs(m - mu) / mu < 0.25);
	assert_true(fabs(a / b - al / be) < 0.1); /* branching ratio */
	assert_true(fabs(b - be) / be < 0.4);
	/* the fit's likelihood beats the truth's (it is the maximum) */
	assert_true(pol_hawkes_loglik(t, n, 0, T, m, a, b) >=
	            pol_hawkes_loglik(t, n, 0, T, mu, al, be));
}

static void test_hawkes_expected_count_formula(void **st)
{
	(void)st;
	/* no excitation: a Poisson process, mu h */
	assert_true(fabs(pol_hawkes_expected(2, 0, 1, 0, 3) - 6) < 1e-12);
	/* stationary start (ex = z*): the mean rate mu / (1 - n) throughout */
	double mu = 1, al = 0.5, be = 1, zs = al * mu / (be - al);
	assert_true(fabs(pol_hawkes_expected(mu, al, be, zs, 10) - 20) < 1e-9);
	/* a fresh burst adds ex / (beta - alpha) over a long horizon */
	double base = pol_hawkes_expected(mu, al, be, zs, 1000);
	assert_true(fabs(pol_hawkes_expected(mu, al, be, zs + 3, 1000) - base - 6) < 1e-6);
}

static void test_hawkes_predictor_expects_more_right_after_a_burst(void **st)
{
	(void)st;
	pol_handle_t h =
	    open_pred("hawkes", "hawkes_refit=8,hawkes_min_events=8,hawkes_min_expected=0");
	static double t[4000];
	size_t n = simulate_hawkes(0.2, 1.5, 2.0, 600, t, 4000, 9);
	assert_true(n > 100);
	for (size_t i = 0; i < n; i++)
		observe(&h, (int64_t)(t[i] * 1e9), 1, 8, i + 1, 0);
	int64_t last = (int64_t)(t[n - 1] * 1e9);
	pol_forecast_t fc = forecast(&h, last, 5 * S);
	assert_int_equal(fc.n, 1);
	double hot = fc.e[0].expected;
	fc = forecast(&h, last + 60 * S, 5 * S);
	double cold = fc.n ? fc.e[0].expected : 0;
	print_message("hawkes: expected in 5 s right after an arrival %.2f, 60 s later %.2f\n", hot,
	              cold);
	/* a degenerate fit (no excitation) would make both equal */
	assert_true(hot > 1.5 * cold);
	/* long after a burst: near the stationary mu / (1 - alpha/beta) x 5 s = 4 */
	assert_true(cold > 2 && cold < 6);
	pol_close(&h);
}

/* ---- oracle -------------------------------------------------------------- */

static void peek(pol_handle_t *h, int64_t t, uint64_t fam, uint64_t id)
{
	uint64_t b[64];
	uint32_t n = prompt(b, fam, 8, id, 2);
	pol_arrival_t a = {t, b, n, -1};
	err_t e;
	assert_int_equal(P(h)->peek(h->state, &a, &e), 0);
}

/* A: opened at 0 s, then requests at 1..5 s. B: opened at 0.5 s, then at 2.5
 * and 7 s. At 0.9 s with a 3 s horizon the future holds A x3 (1, 2, 3 s) and
 * B x1 (2.5 s). */
static void feed(pol_handle_t *h)
{
	peek(h, 0, 1, 1);
	peek(h, S / 2, 2, 2);
	for (int i = 1; i <= 5; i++)
		peek(h, i * S, 1, 10 + i);
	peek(h, 5 * S / 2, 2, 20);
	peek(h, 7 * S, 2, 21);
}

static void test_oracle_with_full_recall_forecasts_exactly_the_future(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("oracle", "oracle_lead_s=10");
	assert_int_equal(P(&h)->peek_ahead_ns(h.state), 10 * S);
	feed(&h);
	pol_forecast_t fc = forecast(&h, 9 * S / 10, 3 * S);
	assert_int_equal(fc.n, 2);
	assert_int_equal(fc.e[0].blocks[0], 1000);
	assert_int_equal(fc.e[0].n_blocks, 8);
	assert_true(fc.e[0].expected == 3);
	assert_int_equal(fc.e[0].first_ns, 1 * S);
	assert_int_equal(fc.e[1].blocks[0], 2000);
	assert_true(fc.e[1].expected == 1);
	assert_int_equal(fc.e[1].first_ns, 5 * S / 2);
	/* later: A has 4 and 5 s left, B 7 s */
	fc = forecast(&h, 3 * S, 5 * S);
	assert_int_equal(fc.n, 2);
	assert_true(fc.e[0].expected == 2 && fc.e[1].expected == 1);
	pol_close(&h);
}

static void test_oracle_with_zero_recall_forecasts_nothing(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("oracle", "oracle_recall=0");
	feed(&h);
	assert_int_equal(forecast(&h, 9 * S / 10, 3 * S).n, 0);
	pol_close(&h);
}

static void test_oracle_lead_hides_what_is_too_far_ahead(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("oracle", "oracle_lead_s=1.5");
	feed(&h);
	/* at 0.9 s only arrivals before 2.4 s are visible: A at 1 and 2 s */
	pol_forecast_t fc = forecast(&h, 9 * S / 10, 3 * S);
	assert_int_equal(fc.n, 1);
	assert_true(fc.e[0].expected == 2);
	pol_close(&h);
}

static void test_oracle_false_positives_name_prefixes_that_will_not_come(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("oracle", "oracle_fp_rate=1");
	feed(&h);
	peek(&h, 8 * S, 3, 30); /* family 3: seen, requested only after 8 s */
	peek(&h, 9 * S, 3, 31);
	/* at 5.5 s, horizon 1 s: nothing true comes (B's next is 7 s) */
	assert_int_equal(forecast(&h, 55 * S / 10, S).n, 0);
	/* horizon 2 s: B x1 true; fp_rate 1 adds one entry that will not come */
	pol_forecast_t fc = forecast(&h, 55 * S / 10, 2 * S);
	assert_int_equal(fc.n, 2);
	int truth = 0;
	for (size_t i = 0; i < fc.n; i++)
		truth += fc.e[i].blocks[0] == 2000;
	assert_int_equal(truth, 1);
	pol_close(&h);
}

/* 200 requests of one prefix every 0.1 s. Without jitter, at 5 s with a
 * 2 s lead exactly those in (5, 7] s are visible: 20. With 1 s of jitter
 * each becomes visible 2 s +- N(0, 1 s) ahead, so the count differs but
 * stays in the same range. */
static double visible_at_5s(const char *over)
{
	pol_handle_t h = open_pred("oracle", over);
	for (uint64_t i = 0; i <= 200; i++)
		peek(&h, (int64_t)i * S / 10, 1, i + 1);
	pol_forecast_t fc = forecast(&h, 5 * S, 10 * S);
	double n = fc.n ? fc.e[0].expected : 0;
	pol_close(&h);
	return n;
}

static void test_oracle_jitter_widens_peek_and_perturbs_visibility(void **st)
{
	(void)st;
	pol_handle_t h = open_pred("oracle", "oracle_lead_s=2,oracle_jitter_s=1");
	assert_int_equal(P(&h)->peek_ahead_ns(h.state), 6 * S);
	pol_close(&h);
	assert_true(visible_at_5s("oracle_lead_s=2") == 20);
	double j = visible_at_5s("oracle_lead_s=2,oracle_jitter_s=1");
	print_message("oracle: 20 visible without jitter, %.0f with 1 s jitter\n", j);
	assert_true(j != 20 && j >= 10 && j <= 30);
}

/* Lead time as an axis: a request at 10 s (its prefix opened at 0 s)
 * is first forecast exactly oracle_lead_s before it arrives. */
static void test_oracle_lead_shifts_when_a_request_is_first_forecast(void **st)
{
	(void)st;
	const char *over[] = {"oracle_lead_s=2", "oracle_lead_s=5"};
	const int64_t lead[] = {2 * S, 5 * S};
	for (int k = 0; k < 2; k++) {
		pol_handle_t h = open_pred("oracle", over[k]);
		peek(&h, 0, 1, 1);
		peek(&h, 10 * S, 1, 2);
		assert_int_equal(forecast(&h, 10 * S - lead[k] - 1, 100 * S).n, 0);
		pol_forecast_t fc = forecast(&h, 10 * S - lead[k], 100 * S);
		assert_int_equal(fc.n, 1);
		assert_int_equal(fc.e[0].first_ns, 10 * S);
		pol_close(&h);
	}
}

/* Jitter as an axis: 400 requests of one prefix every 0.1 s, lead 2 s,
 * jitter 1 s; the counts visible on a grid of times are a pure function of
 * the seed, differ between seeds, and never include a request more than
 * lead + 4 jitter = 6 s ahead (the clip, and the peek window). */
#define JG 160
static void jitter_counts(uint64_t seed, double *cnt)
{
	pol_handle_t h =
	    fk_open(POL_PREDICTOR, "oracle", "oracle_lead_s=2,oracle_jitter_s=1", seed);
	for (uint64_t i = 0; i <= 400; i++)
		peek(&h, (int64_t)i * S / 10, 1, i + 1);
	for (int g = 0; g < JG; g++) {
		pol_forecast_t fc = forecast(&h, (int64_t)g * S / 4, 100 * S);
		cnt[g] = fc.n ? fc.e[0].expected : 0;
	}
	pol_close(&h);
}

static void test_oracle_jitter_is_seeded_and_bounded(void **st)
{
	(void)st;
	double a[JG], b[JG], c[JG];
	jitter_counts(11, a);
	jitter_counts(11, b);
	jitter_counts(12, c);
	int differ = 0;
	for (int g = 0; g < JG; g++) {
		assert_true(a[g] == b[g]);
		differ += a[g] != c[g];
		/* requests in (now, now + 6 s]: the most that may be visible */
		int64_t now = (int64_t)g * S / 4;
		double bound = 0;
		for (uint64_t i = 1; i <= 400; i++)
			bound += (int64_t)i * S / 10 > now && (int64_t)i * S / 10 <= now + 6 * S;
		assert_true(a[g] <= bound && c[g] <= bound);
	}
	print_message("oracle jitter: %d of %d grid counts differ between seeds 11 and 12\n",
	              differ, JG);
	assert_true(differ > 0);
}

/* Every built-in predictor answers min_blocks (ABI 5) with its own
 * *_min_blocks parameter, set here to 7: the run reads the shortest
 * reported prefix through the hook, not by the parameter's name. */
static void test_every_predictor_reports_its_min_blocks(void **st)
{
	(void)st;
	int n = 0;
	for (const pol_reg_entry_t *b = pol_builtins; b->ops; b++) {
		if (b->family != POL_PREDICTOR)
			continue;
		const char *pname = NULL;
		for (size_t i = 0; i < b->ops->n_params; i++) {
			const char *k = b->ops->params[i].key.name;
			size_t len = strlen(k);
			if (len > 11 && !strcmp(k + len - 11, "_min_blocks"))
				pname = k;
		}
		assert_non_null(pname);
		char over[96];
		snprintf(over, sizeof over, "%s=7", pname);
		pol_handle_t h;
		err_t e = {0};
		if (pol_open(NULL, POL_PREDICTOR, b->ops->name, over, 1, &h, &e))
			fail_msg("%s: %s", b->ops->name, e.msg);
		const struct pol_predictor_ops *po = (const struct pol_predictor_ops *)h.ops;
		assert_true(po->base.version >= 5);
		assert_non_null(po->min_blocks);
		assert_int_equal(po->min_blocks(h.state), 7);
		pol_close(&h);
		n++;
	}
	assert_int_equal(n, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_predictor_reports_its_min_blocks),
	    cmocka_unit_test(test_repeat_count_fires_on_xth_repeat_not_before),
	    cmocka_unit_test(test_repeat_count_needs_the_repeats_inside_the_window),
	    cmocka_unit_test(test_repeat_count_ignores_prefixes_shorter_than_y),
	    cmocka_unit_test(test_ewma_ranks_by_decayed_popularity_and_forgets),
	    cmocka_unit_test(test_ewma_table_is_bounded),
	    cmocka_unit_test(test_holt_exact_on_linear_series),
	    cmocka_unit_test(test_holt_forecasts_linear_ramp),
	    cmocka_unit_test(test_hawkes_fit_recovers_simulated_parameters),
	    cmocka_unit_test(test_hawkes_expected_count_formula),
	    cmocka_unit_test(test_hawkes_predictor_expects_more_right_after_a_burst),
	    cmocka_unit_test(test_oracle_with_full_recall_forecasts_exactly_the_future),
	    cmocka_unit_test(test_oracle_with_zero_recall_forecasts_nothing),
	    cmocka_unit_test(test_oracle_lead_hides_what_is_too_far_ahead),
	    cmocka_unit_test(test_oracle_false_positives_name_prefixes_that_will_not_come),
	    cmocka_unit_test(test_oracle_jitter_widens_peek_and_perturbs_visibility),
	    cmocka_unit_test(test_oracle_lead_shifts_when_a_request_is_first_forecast),
	    cmocka_unit_test(test_oracle_jitter_is_seeded_and_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
