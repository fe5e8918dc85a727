/* sim/run/forecast.c on hand scenarios with known answers: each (entry, tick)
 * counted once and resolved by the first matching arrival per window (H/4, H,
 * 4H), expired after 4H; recall of the whole shared prefix (per window) and
 * of a part of it, with an arrival at a tick's own instant left to the tick before;
 * placement against replicas that are in flight, cancelled or evicted; lead
 * mean and median; each distinct prefix counted once (prefix_precision),
 * however many ticks name it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sim/run/forecast.h"
#include "tests/fixtures/test_main.h"

#define S 1000000000LL /* ns */
#define H (8 * S)

/* A forecast of one entry per prefix given as (blocks, n). */
static int tick(fcast_t *f, int64_t t, int n_e, const uint64_t *const *b, const uint32_t *n)
{
	pol_fc_t e[8];
	assert_true(n_e <= 8);
	for (int i = 0; i < n_e; i++)
		e[i] = (pol_fc_t){.blocks = b[i], .n_blocks = n[i], .expected = 1, .first_ns = t};
	pol_forecast_t fc = {e, (size_t)n_e, NULL, 0};
	return fcast_tick(f, t, &fc);
}

static double metric(fcast_t *f, const char *name)
{
	sim_results_t r;
	memset(&r, 0, sizeof r);
	assert_int_equal(fcast_report(f, &r), 0);
	double v = sim_results_get(&r, name);
	sim_results_free(&r);
	return v;
}

static const uint64_t A[] = {11, 12, 13}, B[] = {21, 22, 23};

static void test_precision_counts_each_entry_tick_once_per_window(void **st)
{
	(void)st;
	fcast_t *f = fcast_new(H, 2);
	assert_non_null(f);
	const uint64_t *e0[] = {A, B, A};
	const uint32_t n0[] = {2, 3, 2}; /* A twice in one forecast: one entry */
	assert_int_equal(tick(f, 0, 3, e0, n0), 0);
	const uint64_t *e1[] = {A};
	const uint32_t n1[] = {2};
	assert_int_equal(tick(f, 1 * S, 1, e1, n1), 0);
	/* A's two records: 3 s and 2 s before; H/4 = 2 s takes only the second */
	assert_int_equal(fcast_arrival(f, 3 * S, A, 3, 0), 0);
	/* a second request of A resolves nothing more */
	assert_int_equal(fcast_arrival(f, 4 * S, A, 3, 0), 0);
	/* B comes 30 s after its tick: within 4H = 32 s only */
	assert_int_equal(fcast_arrival(f, 30 * S, B, 3, 0), 0);
	assert_true(metric(f, "forecast.entries") == 3);
	assert_true(metric(f, "forecast.precision") == 2.0 / 3);
	assert_true(metric(f, "forecast.precision_h4") == 1.0 / 3);
	assert_true(metric(f, "forecast.precision_x4") == 1.0);
	fcast_free(f);
}

static void test_precision_records_expire_after_four_horizons(void **st)
{
	(void)st;
	fcast_t *f = fcast_new(H, 2);
	const uint64_t *e[] = {B};
	const uint32_t n[] = {3};
	assert_int_equal(tick(f, 0, 1, e, n), 0);
	/* a tick 4H + 1 ns later drops the record: a later B is no hit */
	assert_int_equal(fcast_tick(f, 4 * H + 1, &(pol_forecast_t){0}), 0);
	assert_int_equal(fcast_arrival(f, 4 * H + 2, B, 3, 0), 0);
	assert_true(metric(f, "forecast.entries") == 1);
	assert_true(metric(f, "forecast.precision_x4") == 0);
	/* the ring grows past its first size and keeps every chain */
	fcast_t *g = fcast_new(H, 1);
	for (int64_t t = 0; t < 1000; t++) {
		const uint64_t *ea[] = {A, B};
		const uint32_t na[] = {2, 3};
		assert_int_equal(tick(g, t * 1000, 2, ea, na), 0);
	}
	assert_int_equal(fcast_arrival(g, 1000 * 1000, A, 2, -1), 0);
	assert_true(metric(g, "forecast.entries") == 2000);
	assert_true(metric(g, "forecast.precision") == 0.5);
	fcast_free(g);
	fcast_free(f);
}

static void test_recall_whole_and_partial_shared_prefix(void **st)
{
	(void)st;
	fcast_t *f = fcast_new(H, 2);
	const uint64_t r1[] = {1, 2, 3, 100}, r2[] = {1, 2, 3, 200}, r3[] = {1, 2, 3, 300},
		       r4[] = {1, 2, 3, 400}, r5[] = {9}, r6[] = {1, 2, 3, 600};
	const uint64_t *p2[] = {r1}, *p3[] = {r1};
	const uint32_t n2[] = {2}, n3[] = {3};
	/* r1 shares nothing yet: not eligible */
	assert_int_equal(fcast_arrival(f, 0, r1, 4, 0), 0);
	assert_int_equal(tick(f, 1 * S, 1, p2, n2), 0);
	/* r2 shares 3 blocks; the 2-block entry covers a part of them */
	assert_int_equal(fcast_arrival(f, 2 * S, r2, 4, 0), 0);
	assert_int_equal(tick(f, 3 * S, 1, p3, n3), 0);
	assert_int_equal(fcast_arrival(f, 4 * S, r3, 4, 0), 0); /* whole */
	/* 17 s after the last forecast of its prefix: a miss */
	assert_int_equal(fcast_arrival(f, 20 * S, r4, 4, 0), 0);
	assert_int_equal(fcast_arrival(f, 21 * S, r5, 1, 0), 0); /* nothing shared */
	/* at a tick's own instant only the tick before counts, whichever came first */
	assert_int_equal(tick(f, 25 * S, 1, p3, n3), 0);
	assert_int_equal(tick(f, 30 * S, 1, p3, n3), 0);
	assert_int_equal(fcast_arrival(f, 30 * S, r6, 4, 0), 0);
	assert_true(metric(f, "forecast.requests_eligible") == 4);
	assert_true(metric(f, "forecast.recall") == 2.0 / 4);
	/* whole-prefix forecasts 1 s (r3), 17 s (r4) and 5 s (r6) before */
	assert_true(metric(f, "forecast.recall_h4") == 1.0 / 4);
	assert_true(metric(f, "forecast.recall_x4") == 3.0 / 4);
	assert_true(metric(f, "forecast.recall_partial") == 3.0 / 4);
	/* ticks 1, 3 and 25 s were followed by their prefix; 30 s is still open */
	assert_true(metric(f, "forecast.entries") == 4);
	assert_true(metric(f, "forecast.precision") == 3.0 / 4);
	fcast_free(f);
}

static void test_placement_follows_live_replicas_and_lead_statistics(void **st)
{
	(void)st;
	fcast_t *f = fcast_new(H, 1);
	const uint64_t r[] = {1, 2, 3, 100}, other[] = {1, 50};
	assert_int_equal(fcast_replica_start(f, 1, 3, 1), 0); /* 1..3 to instance 1 */
	assert_int_equal(fcast_replica_start(f, 2, 3, 2), 0); /* ... and to 2 */
	assert_int_equal(fcast_arrival(f, 1 * S, r, 4, 1), 0);  /* on a replica: hit */
	assert_int_equal(fcast_arrival(f, 2 * S, r, 4, 0), 0);  /* beside them: miss */
	fcast_replica_cancel(f, 2);
	fcast_evicted(f, 3, 1);
	fcast_evicted(f, 2, 2); /* another block: changes nothing */
	assert_int_equal(fcast_arrival(f, 3 * S, r, 4, 2), 0); /* none left: not counted */
	assert_int_equal(fcast_replica_start(f, 700, 2, 3), 0); /* a shorter prefix of r */
	assert_int_equal(fcast_arrival(f, 4 * S, r, 4, 3), 0);     /* hit */
	assert_int_equal(fcast_arrival(f, 5 * S, other, 2, 3), 0); /* not its prefix */
	assert_int_equal(fcast_arrival(f, 6 * S, r, 4, -1), 0);    /* rejected: not routed */
	fcast_evicted(f, 2, 0); /* evicted elsewhere */
	assert_int_equal(fcast_arrival(f, 7 * S, r, 4, 3), 0); /* hit */
	fcast_replica_cancel(f, 5); /* a copy that made no replica */
	assert_true(metric(f, "forecast.placement_requests") == 4);
	assert_true(metric(f, "forecast.placement_acc") == 3.0 / 4);
	assert_true(isnan(metric(f, "forecast.lead_mean_s")));
	assert_int_equal(fcast_replica_used(f, 1 * S, 3 * S), 0);
	assert_int_equal(fcast_replica_used(f, 1 * S, 3 * S / 2), 0);
	assert_int_equal(fcast_replica_used(f, 0, 4 * S), 0);
	assert_true(metric(f, "forecast.leads") == 3);
	assert_true(fabs(metric(f, "forecast.lead_mean_s") - 6.5 / 3) < 1e-12);
	assert_true(metric(f, "forecast.lead_p50_s") == 2.0);
	fcast_free(f);
}

/* A prefix named at 10 ticks that comes once weighs 10 entries; one named
 * once that never comes weighs 1: per entry 10/11 come true, per distinct
 * prefix 1/2. And the other way round. */
static void test_prefix_precision_counts_each_prefix_once(void **st)
{
	(void)st;
	fcast_t *f = fcast_new(H, 1);
	assert_non_null(f);
	const uint64_t *ea[] = {A}, *eb[] = {B};
	const uint32_t n[] = {3};
	for (int i = 0; i < 10; i++)
		assert_int_equal(tick(f, i * S / 10, 1, ea, n), 0);
	assert_int_equal(tick(f, 1 * S, 1, eb, n), 0);
	assert_int_equal(fcast_arrival(f, 2 * S, A, 3, 0), 0);
	/* B comes after H: not a hit, for either count */
	assert_int_equal(fcast_arrival(f, 1 * S + H + 1, B, 3, 0), 0);
	assert_true(metric(f, "forecast.entries") == 11);
	assert_true(metric(f, "forecast.precision") == 10.0 / 11);
	assert_true(metric(f, "forecast.prefixes") == 2);
	assert_true(metric(f, "forecast.prefix_precision") == 0.5);
	fcast_free(f);
	/* B named at 10 ticks, never comes; A named once, comes */
	fcast_t *g = fcast_new(H, 1);
	assert_non_null(g);
	assert_int_equal(tick(g, 0, 1, ea, n), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(tick(g, S + i * S / 10, 1, eb, n), 0);
	assert_int_equal(fcast_arrival(g, 3 * S, A, 3, 0), 0);
	assert_true(metric(g, "forecast.precision") == 1.0 / 11);
	assert_true(metric(g, "forecast.prefix_precision") == 0.5);
	fcast_free(g);
}

static void test_no_forecast_reports_every_metric_nan(void **st)
{
	(void)st;
	sim_results_t r;
	memset(&r, 0, sizeof r);
	assert_int_equal(fcast_report(NULL, &r), 0);
	assert_true(r.n_metric > 10);
	for (size_t i = 0; i < r.n_metric; i++) {
		assert_int_equal(strncmp(r.metric[i].name, "forecast.", 9), 0);
		assert_true(isnan(r.metric[i].value));
	}
	/* the per-prefix pair is left out, so such a run keeps its /summary */
	assert_true(isnan(sim_results_get(&r, "forecast.prefixes")));
	sim_results_free(&r);
	/* a forecaster that saw nothing: counts 0, ratios NaN */
	fcast_t *f = fcast_new(H, 1);
	assert_true(metric(f, "forecast.entries") == 0);
	assert_true(isnan(metric(f, "forecast.precision")));
	assert_true(isnan(metric(f, "forecast.recall")));
	assert_true(metric(f, "forecast.prefixes") == 0);
	assert_true(isnan(metric(f, "forecast.prefix_precision")));
	fcast_free(f);
}

TEST_MAIN(cmocka_unit_test(test_precision_counts_each_entry_tick_once_per_window),
          cmocka_unit_test(test_precision_records_expire_after_four_horizons),
          cmocka_unit_test(test_recall_whole_and_partial_shared_prefix),
          cmocka_unit_test(test_placement_follows_live_replicas_and_lead_statistics),
          cmocka_unit_test(test_prefix_precision_counts_each_prefix_once),
          cmocka_unit_test(test_no_forecast_reports_every_metric_nan))
