/* Router replicas ([policy.routing] replicas, sim/run/sim_rview.c): each
 * replica's routed tree learns only its own decisions, its load is its own
 * in-flight requests; one replica changes nothing; runs repeat exactly. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

/* Two instances (one node at TP 4) and `extra` sets. */
static sim_results_t run_two(sf_script_t *sc, const char *const *extra, int n_extra)
{
	const char *sets[12] = {"cluster.nodes=1", "kvcache.block_tokens=16", "trace.duration_s=0"};
	int n = 3;
	for (int k = 0; k < n_extra; k++)
		sets[n++] = extra[k];
	sim_source_t src = {sf_script_next, sc, "script"};
	return sf_run_source(NULL, sets, n, &src);
}

#define PAIRS 8

/* A lone request, then pair k: two requests with the same four-block
 * prefix, 1 ms apart, pairs 1 s apart (the lone one makes the two replicas'
 * histories differ: alike, they would decide alike); how many pairs went
 * to two instances. */
static int split_pairs(const char *replicas)
{
	enum { N = 2 * PAIRS + 1 };
	static uint64_t ids[N][5];
	static int64_t t[N];
	for (int b = 0; b < 5; b++)
		ids[0][b] = 77000 + (uint64_t)b;
	for (int k = 0; k < PAIRS; k++)
		for (int j = 0; j < 2; j++) {
			int i = 1 + 2 * k + j;
			for (int b = 0; b < 4; b++)
				ids[i][b] = 1000 * (uint64_t)(k + 1) + (uint64_t)b;
			ids[i][4] = 900000 + (uint64_t)i;
			t[i] = (int64_t)(k + 1) * 1000000000 + j * 1000000;
		}
	sf_script_t sc = {.count = N, .t_ns = t, .ids = ids[0], .stride = 5, .n_all = 5, .out_all = 2};
	const char *sets[] = {"policy.routing.name=cache_aware", "policy.routing.view=routed",
	                      replicas};
	sim_results_t r = run_two(&sc, sets, 3);
	int split = 0;
	for (int k = 0; k < PAIRS; k++)
		split += sf_request(r.req, r.n_req, 1 + 2 * (uint64_t)k)->instance !=
		         sf_request(r.req, r.n_req, 2 + 2 * (uint64_t)k)->instance;
	sim_results_free(&r);
	return split;
}

static void test_a_replica_tree_knows_only_its_own_decisions(void **st)
{
	(void)st;
	/* one router: the second of a pair follows the first (its tree knows) */
	assert_int_equal(split_pairs("policy.routing.replicas=1"), 0);
	/* two in turn: the second replica never saw the first's decision */
	assert_true(split_pairs("policy.routing.replicas=2") > 0);
}

/* Eight long requests with nothing shared, 1 ms apart, none finishing
 * before the last arrives; least_load with two replicas in turn. Each
 * replica counts only its own in-flight requests, so its own four go to
 * the two instances alternately: after each of its decisions its counts
 * differ by at most one, whatever the other replica did. */
static void test_least_load_replicas_see_only_their_own_requests(void **st)
{
	(void)st;
	static uint64_t ids[8][5];
	static int64_t t[8];
	for (int i = 0; i < 8; i++) {
		for (int b = 0; b < 5; b++)
			ids[i][b] = 5000 + 10 * (uint64_t)i + (uint64_t)b;
		t[i] = (int64_t)i * 1000000;
	}
	sf_script_t sc = {.count = 8, .t_ns = t, .ids = ids[0], .stride = 5, .n_all = 5, .out_all = 400};
	const char *sets[] = {"policy.routing.name=least_load", "policy.routing.replicas=2"};
	sim_results_t r = run_two(&sc, sets, 2);
	int count[2][2] = {{0}};
	for (int i = 0; i < 8; i++) {
		const res_request_t *q = sf_request(r.req, r.n_req, (uint64_t)i);
		assert_true(q->arrival_ns + q->e2e_ns > t[7]); /* still in flight */
		int *c = count[i % 2];
		c[q->instance]++;
		assert_true(abs(c[0] - c[1]) <= 1);
	}
	assert_int_equal(count[0][0] + count[0][1], 4);
	sim_results_free(&r);
}

static void assert_same_summary(const sim_results_t *a, const sim_results_t *b)
{
	assert_int_equal(a->n_metric, b->n_metric);
	for (size_t i = 0; i < a->n_metric; i++)
		assert_memory_equal(&a->metric[i], &b->metric[i], sizeof a->metric[i]);
	assert_int_equal(a->n_req, b->n_req);
	assert_memory_equal(a->req, b->req, a->n_req * sizeof *a->req);
}

static void test_same_seed_same_results_one_replica_changes_nothing(void **st)
{
	(void)st;
	const char *sets[] = {"policy.routing.name=cache_aware", "policy.routing.view=events",
	                      "policy.routing.replicas=3", "policy.routing.replica_assign=random",
	                      "policy.routing.event_delay_ms=50",
	                      "policy.routing.event_delay_dist=exponential",
	                      "policy.routing.event_batch_ms=10", "policy.routing.event_loss=0.2"};
	sim_results_t a = sf_run(NULL, sets, 8), b = sf_run(NULL, sets, 8);
	assert_same_summary(&a, &b);
	assert_true(sim_results_get(&a, "view.events_lost") > 0);
	sim_results_free(&a);
	sim_results_free(&b);
	/* replicas = 1 and view_quality off: the run is the plain one */
	const char *one[] = {"policy.routing.name=cache_aware", "policy.routing.replicas=1"};
	const char *plain[] = {"policy.routing.name=cache_aware"};
	a = sf_run(NULL, one, 2);
	b = sf_run(NULL, plain, 1);
	assert_same_summary(&a, &b);
	assert_true(isnan(sim_results_get(&a, "view.regret_mean_ms")));
	sim_results_free(&a);
	sim_results_free(&b);
}

/* output.view_quality on any view measures without changing the run. */
static void test_view_quality_measures_without_changing_the_run(void **st)
{
	(void)st;
	const char *on[] = {"policy.routing.name=cache_aware", "output.view_quality=true"};
	const char *off[] = {"policy.routing.name=cache_aware"};
	sim_results_t a = sf_run(NULL, on, 2), b = sf_run(NULL, off, 1);
	assert_int_equal(a.n_req, b.n_req);
	assert_memory_equal(a.req, b.req, a.n_req * sizeof *a.req);
	/* the routed tree (cache_aware's default view) believes prompts it sent
	 * that are still computing: misroutes to blocks never held yet */
	assert_true(sim_results_get(&a, "view.never_share") > 0);
	assert_true(sim_results_get(&a, "view.regret_mean_ms") >= 0);
	assert_true(isnan(sim_results_get(&b, "view.regret_mean_ms")));
	sim_results_free(&a);
	sim_results_free(&b);
}

TEST_MAIN(cmocka_unit_test(test_a_replica_tree_knows_only_its_own_decisions),
          cmocka_unit_test(test_least_load_replicas_see_only_their_own_requests),
          cmocka_unit_test(test_same_seed_same_results_one_replica_changes_nothing),
          cmocka_unit_test(test_view_quality_measures_without_changing_the_run))
