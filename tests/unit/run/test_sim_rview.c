/* The events view (policy.routing.view = events, sim/run/sim_rview.c), its
 * channel (sim/run/sim_rdeliver.c) and the decision-quality metrics
 * (sim/run/sim_rquality.c): instant exact events never misroute; a stored
 * block becomes visible exactly event_delay_ms (plus the batch window) after
 * it is computed; removed events make the router forget, a ttl index does
 * not until its entries expire; losses and approximate indexes show in the
 * view.* shares; config errors name their key. Tests assert only what
 * sim/base/kv_filter.h promises for every kind. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim/run/sim_rdeliver.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

static double metric(const sim_results_t *r, const char *name)
{
	return sim_results_get(r, name);
}

/* Two instances (one node, TP 4), cache_aware on the events view, plus
 * `extra` sets. */
static sim_results_t run_script(sf_script_t *sc, const char *const *extra, int n_extra)
{
	const char *sets[16] = {"policy.routing.name=cache_aware", "policy.routing.view=events",
	                        "cluster.nodes=1", "kvcache.block_tokens=16",
	                        "trace.duration_s=0"};
	int n = 5;
	for (int k = 0; k < n_extra; k++)
		sets[n++] = extra[k];
	sc->i = 0;
	sim_source_t src = {sf_script_next, sc, "script"};
	return sf_run_source(NULL, sets, n, &src);
}

static const uint64_t pair_ids[][10] = {{11, 12, 13, 14, 15}, {11, 12, 13, 14, 25}};
static const uint32_t pair_n[] = {5, 5}, pair_out[] = {2, 2};

/* When request 0's prompt blocks became READY: its first token (the end of
 * its prefill) in a run of it alone. */
static int64_t ready_time(void)
{
	static const int64_t t[] = {0};
	sf_script_t sc = {.count = 1, .t_ns = t, .ids = pair_ids[0], .stride = 10,
	                  .n = pair_n, .out = pair_out};
	sim_results_t r = run_script(&sc, NULL, 0);
	int64_t ready = r.req[0].arrival_ns + r.req[0].ttft_ns;
	sim_results_free(&r);
	return ready;
}

/* Request 1 (sharing request 0's four-block prefix) arrives at t1: whether
 * the router saw the prefix on the instance that computed it. */
static int prefix_seen_at(int64_t t1, const char *const *extra, int n_extra)
{
	const int64_t t[] = {0, t1};
	sf_script_t sc = {.count = 2, .t_ns = t, .ids = pair_ids[0], .stride = 10,
	                  .n = pair_n, .out = pair_out};
	sim_results_t r = run_script(&sc, extra, n_extra);
	const res_request_t *a = sf_request(r.req, r.n_req, 0), *b = sf_request(r.req, r.n_req, 1);
	assert_true(metric(&r, "view.misrouted_share") == 0);
	/* seen: routed to the holder and hit there; unseen: it went elsewhere,
	 * or went there while the view believed less than the instance held */
	int seen = b->instance == a->instance && b->tok_local == 4 * 16 &&
	           metric(&r, "view.unseen_share") == 0;
	sim_results_free(&r);
	return seen;
}

static void test_events_default_never_misroutes(void **st)
{
	(void)st;
	const char *sets[] = {"policy.routing.name=cache_aware", "policy.routing.view=events"};
	sim_results_t r = sf_run(NULL, sets, 2);
	assert_true(metric(&r, "view.events_sent") > 0);
	assert_true(metric(&r, "view.index_bytes") > 0);
	assert_true(metric(&r, "view.misrouted_share") == 0);
	assert_true(metric(&r, "view.events_lost") == 0);
	assert_true(metric(&r, "view.delay_mean_ms") == 0);
	assert_true(metric(&r, "view.regret_mean_ms") >= 0);
	sim_results_free(&r);
	/* without the events view, replicas or output.view_quality: no view.* */
	const char *off[] = {"policy.routing.name=cache_aware"};
	r = sf_run(NULL, off, 1);
	assert_true(isnan(metric(&r, "view.misrouted_share")));
	sim_results_free(&r);
}

/* With no copy in flight (no replication), an instant exact event index
 * holds exactly the READY blocks the computed view matches, and the KV use
 * it reports is the instance's: the routing, and so every request, is the
 * computed view's. */
static void test_events_default_equals_computed_without_copies(void **st)
{
	(void)st;
	const char *ev[] = {"policy.routing.name=cache_aware", "policy.routing.view=events",
	                    "policy.replication.name=none"};
	const char *cv[] = {"policy.routing.name=cache_aware", "policy.routing.view=computed",
	                    "policy.replication.name=none"};
	sim_results_t a = sf_run(NULL, ev, 3), b = sf_run(NULL, cv, 3);
	assert_int_equal(a.n_req, b.n_req);
	assert_true(a.n_req > 0);
	for (size_t i = 0; i < a.n_req; i++) {
		assert_int_equal(a.req[i].instance, b.req[i].instance);
		assert_int_equal(a.req[i].ttft_ns, b.req[i].ttft_ns);
	}
	sim_results_free(&a);
	sim_results_free(&b);
}

static void test_stored_block_visible_exactly_after_the_delay(void **st)
{
	(void)st;
	int64_t ready = ready_time(), d = 2000000000; /* 2 s */
	const char *delay[] = {"policy.routing.event_delay_ms=2000"};
	assert_false(prefix_seen_at(ready + d - 1, delay, 1));
	assert_true(prefix_seen_at(ready + d, delay, 1));
	/* instant events: seen at once */
	assert_true(prefix_seen_at(ready, NULL, 0));
}

static void test_batch_window_delivers_at_its_end_plus_delay(void **st)
{
	(void)st;
	int64_t ready = ready_time(), b = 300000000, d = 2000000000;
	const char *sets[] = {"policy.routing.event_delay_ms=2000",
	                      "policy.routing.event_batch_ms=300"};
	assert_false(prefix_seen_at(ready + b + d - 1, sets, 2));
	assert_true(prefix_seen_at(ready + b + d, sets, 2));
}

/* One instance of 10 blocks: request 0 caches prefix P (4 blocks), request
 * 1 (9 blocks of its own) evicts it, request 2 asks for P again at 5 s. */
static sim_results_t run_evicted(const char *index, const char *ttl)
{
	static const uint64_t ids[][10] = {{11, 12, 13, 14, 15},
	                                   {31, 32, 33, 34, 35, 36, 37, 38, 39},
	                                   {11, 12, 13, 14, 45}};
	static const int64_t t[] = {0, 1000000000, 5000000000};
	static const uint32_t n[] = {5, 9, 5}, out[] = {2, 2, 2};
	sf_script_t sc = {.count = 3, .t_ns = t, .ids = ids[0], .stride = 10, .n = n, .out = out};
	const char *extra[] = {"cluster.tp=8", "cluster.kv_blocks=10", "scheduler.max_num_seqs=1",
	                       index, ttl};
	return run_script(&sc, extra, 5);
}

static void test_removed_events_forget_ttl_remembers_until_expiry(void **st)
{
	(void)st;
	sim_results_t r = run_evicted("policy.routing.index=exact", "policy.routing.index_ttl_s=100");
	assert_int_equal(sf_request(r.req, r.n_req, 2)->tok_local, 0); /* P was evicted */
	assert_true(metric(&r, "view.misrouted_share") == 0);
	sim_results_free(&r);
	r = run_evicted("policy.routing.index=ttl", "policy.routing.index_ttl_s=100");
	assert_true(metric(&r, "view.misrouted_share") > 0);
	assert_true(metric(&r, "view.stale_share") == metric(&r, "view.misrouted_share"));
	assert_true(metric(&r, "view.never_share") == 0);
	sim_results_free(&r);
	r = run_evicted("policy.routing.index=ttl", "policy.routing.index_ttl_s=2");
	assert_true(metric(&r, "view.misrouted_share") == 0); /* expired before request 2 */
	sim_results_free(&r);
}

static void test_loss_one_loses_everything_loss_share_binomial(void **st)
{
	(void)st;
	const char *all[] = {"policy.routing.name=cache_aware", "policy.routing.view=events",
	                     "policy.routing.event_loss=1"};
	sim_results_t r = sf_run(NULL, all, 3);
	double sent = metric(&r, "view.events_sent");
	assert_true(sent > 0);
	assert_true(metric(&r, "view.events_lost") == sent);
	/* an empty index believes nothing: never misroutes, misses every hit */
	assert_true(metric(&r, "view.misrouted_share") == 0);
	assert_true(metric(&r, "view.unseen_share") > 0);
	sim_results_free(&r);
	const char *some[] = {"policy.routing.name=cache_aware", "policy.routing.view=events",
	                      "policy.routing.event_loss=0.3"};
	r = sf_run(NULL, some, 3);
	sent = metric(&r, "view.events_sent");
	double share = metric(&r, "view.events_lost") / sent, half = 3.29 * sqrt(0.3 * 0.7 / sent);
	assert_true(sent > 1000);
	assert_true(fabs(share - 0.3) < half); /* 99.9% binomial interval */
	sim_results_free(&r);
}

static void test_large_delay_goes_stale_bloom_never_held(void **st)
{
	(void)st;
	/* a small pool, so evictions come while their removed events travel */
	/* (NCCL's all-reduce, the slower engine this scenario was sized on) */
	const char *late[] = {"policy.routing.name=cache_aware", "policy.routing.view=events",
	                      "policy.routing.event_delay_ms=2000", "cluster.kv_blocks=100",
	                      "compute.allreduce=nccl"};
	sim_results_t r = sf_run(NULL, late, 5);
	assert_true(metric(&r, "view.misrouted_share") > 0);
	assert_true(metric(&r, "view.stale_share") > 0);
	assert_true(metric(&r, "view.delay_mean_ms") == 2000);
	sim_results_free(&r);
	const char *bloom[] = {"policy.routing.name=cache_aware", "policy.routing.view=events",
	                       "policy.routing.index=bloom", "policy.routing.index_fpr=0.2"};
	r = sf_run(NULL, bloom, 4);
	assert_true(metric(&r, "view.never_share") > 0);
	sim_results_free(&r);
}

/* ---- the channel on its own ------------------------------------------------------- */

static void test_channel_batch_window_and_delay(void **st)
{
	(void)st;
	sim_rd_params_t p = {.delay_ns = 50, .batch_ns = 100, .dist = SIM_RD_FIXED};
	sim_rd_t *d = sim_rd_new(2, &p);
	assert_non_null(d);
	int64_t wake;
	sim_rd_msg_t m;
	assert_int_equal(sim_rd_publish(d, 1, 7, 1, 10, &wake), 0);
	assert_int_equal(wake, 110); /* the window opened at its first event */
	assert_int_equal(sim_rd_publish(d, 1, 8, 0, 15, &wake), 0);
	assert_int_equal(wake, -1);
	assert_int_equal(sim_rd_next(d, 1, 109, &m, &wake), 0);
	assert_int_equal(sim_rd_next(d, 1, 110, &m, &wake), 0); /* sent, due at 160 */
	assert_int_equal(wake, 160);
	assert_int_equal(sim_rd_next(d, 1, 159, &m, &wake), 0);
	assert_int_equal(sim_rd_next(d, 1, 160, &m, &wake), 1);
	assert_int_equal(m.sent, 110);
	assert_int_equal(m.due, 160);
	assert_int_equal(m.n, 2);
	assert_int_equal(m.ev[0].id, 7);
	assert_int_equal(m.ev[0].stored, 1);
	assert_int_equal(m.ev[1].id, 8);
	assert_int_equal(m.ev[1].stored, 0);
	assert_int_equal(sim_rd_next(d, 0, 1000, &m, &wake), 0); /* the other instance: none */
	sim_rd_free(d);
}

static void test_channel_keeps_each_instance_order_under_exponential_delays(void **st)
{
	(void)st;
	sim_rd_params_t p = {.delay_ns = 1000000, .dist = SIM_RD_EXPONENTIAL, .seed = 3};
	sim_rd_t *d = sim_rd_new(1, &p);
	int64_t wake;
	int clamped = 0;
	for (uint64_t k = 0; k < 2000; k++)
		assert_int_equal(sim_rd_publish(d, 0, k, 1, (int64_t)k * 1000, &wake), 0);
	sim_rd_msg_t m;
	int64_t last = 0;
	for (uint64_t k = 0; k < 2000; k++) {
		assert_int_equal(sim_rd_next(d, 0, INT64_MAX, &m, &wake), 1);
		assert_int_equal(m.ev[0].id, k);
		assert_true(m.due >= m.sent);
		assert_true(m.due >= last);
		clamped += m.due == last;
		last = m.due;
	}
	assert_true(clamped > 0); /* draws did come out of order: the rule held them */
	sim_rd_free(d);
}

static void test_channel_delay_means(void **st)
{
	(void)st;
	const int dists[] = {SIM_RD_EXPONENTIAL, SIM_RD_LOGNORMAL};
	for (int k = 0; k < 2; k++) {
		sim_rd_params_t p = {.delay_ns = 1000000, .dist = dists[k], .cv = 1, .seed = 9};
		sim_rd_t *d = sim_rd_new(1, &p);
		int64_t wake;
		double sum = 0;
		const int n = 4000;
		for (int i = 0; i < n; i++) { /* 1 s apart: never held back by order */
			sim_rd_msg_t m;
			int64_t t = (int64_t)i * 1000000000;
			assert_int_equal(sim_rd_publish(d, 0, (uint64_t)i, 1, t, &wake), 0);
			assert_int_equal(sim_rd_next(d, 0, t + 1000000000 - 1, &m, &wake), 1);
			sum += (double)(m.due - m.sent);
		}
		assert_true(fabs(sum / n / 1e6 - 1) < 0.08); /* 5 standard errors at cv 1 */
		sim_rd_free(d);
	}
}

/* ---- config ------------------------------------------------------------------------ */

static void assert_config_error(const char *set, const char *set2, const char *key)
{
	const char *sets[] = {"policy.routing.view=events", set, set2};
	cfg_t *cfg = NULL;
	err_t e = {0};
	int rc = cli_load_config(NULL, sets, set2 ? 3 : 2, &cfg, &e);
	if (!rc) {
		sim_results_t r;
		rc = sim_run(cfg, NULL, &r, &e);
		if (!rc)
			sim_results_free(&r);
		cli_config_free(cfg);
	}
	assert_int_not_equal(rc, 0);
	if (!strstr(e.msg, key))
		fail_msg("'%s' does not name %s", e.msg, key);
}

static void test_config_errors_name_the_key(void **st)
{
	(void)st;
	assert_config_error("policy.routing.event_delay_ms=-1", NULL, "event_delay_ms");
	assert_config_error("policy.routing.event_loss=1.5", NULL, "event_loss");
	assert_config_error("policy.routing.replicas=0", NULL, "replicas");
	assert_config_error("policy.routing.index=bloom", "policy.routing.index_fpr=0", "index_fpr");
	assert_config_error("policy.routing.index=ttl", "policy.routing.index_ttl_s=0", "index_ttl_s");
	assert_config_error("cluster.disagg=true", NULL, "disagg");
}

TEST_MAIN(cmocka_unit_test(test_events_default_never_misroutes),
          cmocka_unit_test(test_events_default_equals_computed_without_copies),
          cmocka_unit_test(test_stored_block_visible_exactly_after_the_delay),
          cmocka_unit_test(test_batch_window_delivers_at_its_end_plus_delay),
          cmocka_unit_test(test_removed_events_forget_ttl_remembers_until_expiry),
          cmocka_unit_test(test_loss_one_loses_everything_loss_share_binomial),
          cmocka_unit_test(test_large_delay_goes_stale_bloom_never_held),
          cmocka_unit_test(test_channel_batch_window_and_delay),
          cmocka_unit_test(test_channel_keeps_each_instance_order_under_exponential_delays),
          cmocka_unit_test(test_channel_delay_means),
          cmocka_unit_test(test_config_errors_name_the_key))
