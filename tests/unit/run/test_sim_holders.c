/* The block -> holders index (sim/run/sim_holders.c): lists stay sorted and
 * free of duplicates, ids come and go through many table growths and
 * backward-shift deletions without losing a neighbour, and against random
 * histories its answer is exactly the brute-force set. In whole runs with
 * peer fetch, the fetch still finds peers through the index (a request
 * routed away from the holder of its prefix pulls it). That the index agrees
 * with a scan of every instance is checked on every fetch in KVSIM_CHECK
 * builds (sim_copy.c sim_fetch_decide). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim/base/rng.h"
#include "sim/run/sim_holders.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

static void test_holders_sorted_without_duplicates(void **st)
{
	(void)st;
	sim_holders_t *h = sim_holders_new();
	assert_non_null(h);
	const uint32_t add[] = {7, 3, 9, 3, 0, 7};
	for (size_t i = 0; i < sizeof add / sizeof add[0]; i++)
		assert_int_equal(sim_holders_add(h, 42, add[i]), 0);
	uint32_t n;
	const uint32_t *l = sim_holders_of(h, 42, &n);
	const uint32_t want[] = {0, 3, 7, 9};
	assert_int_equal(n, 4);
	assert_memory_equal(l, want, sizeof want);
	sim_holders_remove(h, 42, 3);
	sim_holders_remove(h, 42, 5); /* not there: nothing */
	l = sim_holders_of(h, 42, &n);
	assert_int_equal(n, 3);
	assert_int_equal(l[1], 7);
	assert_null(sim_holders_of(h, 43, &n));
	assert_int_equal(n, 0);
	assert_int_equal(sim_holders_ids(h), 1);
	sim_holders_free(h);
}

/* Random adds and removes over few ids and instances (so ids collide in the
 * table and lists empty and refill) checked after every step against a
 * bit matrix. */
#define N_ID 3000
#define N_INST 24
static void test_holders_match_brute_force(void **st)
{
	(void)st;
	static uint8_t has[N_ID][N_INST];
	memset(has, 0, sizeof has);
	sim_holders_t *h = sim_holders_new();
	assert_non_null(h);
	uint64_t x = 1;
	for (int step = 0; step < 200000; step++) {
		x = rng_fmix64(x + RNG_GOLDEN);
		uint32_t id = (uint32_t)(x % N_ID), inst = (uint32_t)((x >> 20) % N_INST);
		/* adds win early so the table grows, removes later so it drains */
		int add = (int)((x >> 40) % 100) < (step < 100000 ? 70 : 30);
		uint64_t key = (uint64_t)id * 0x9e3779b97f4a7c15ull; /* spread, like chained ids */
		if (add) {
			assert_int_equal(sim_holders_add(h, key, inst), 0);
			has[id][inst] = 1;
		} else {
			sim_holders_remove(h, key, inst);
			has[id][inst] = 0;
		}
		if (step % 997 && step != 199999)
			continue;
		uint32_t ids = 0;
		for (uint32_t i = 0; i < N_ID; i++) {
			uint32_t n, k = 0;
			const uint32_t *l = sim_holders_of(h, (uint64_t)i * 0x9e3779b97f4a7c15ull, &n);
			for (uint32_t j = 0; j < N_INST; j++)
				if (has[i][j]) {
					assert_true(k < n);
					assert_int_equal(l[k++], j);
				}
			assert_int_equal(k, n);
			ids += n > 0;
		}
		assert_int_equal(sim_holders_ids(h), ids);
	}
	sim_holders_free(h);
}

/* Requests sharing a 32-block prefix, arriving 50 ms apart on 16-token
 * blocks, on `nodes` nodes of two TP4 instances each, under least_load and
 * kvcache.fetch. */
static sim_results_t run_shared(const char *fetch, const char *nodes)
{
	sf_prefix_t p = sf_prefix(64, 32, 1000, 900000, 8);
	p.gap_ns = 50000000;
	const char *sets[] = {fetch, nodes, "kvcache.block_tokens=16", "trace.duration_s=0"};
	sim_source_t src = {sf_prefix_next, &p, "shared"};
	return sf_run_source(NULL, sets, 4, &src);
}

static void test_fetch_finds_peers_through_the_index(void **st)
{
	(void)st;
	sim_results_t never = run_shared("kvcache.fetch=never", "cluster.nodes=4");
	sim_results_t pull = run_shared("kvcache.fetch=always", "cluster.nodes=4");
	assert_true(sf_metric(&never, "tok_fetched_peer") == 0);
	/* least_load spreads the requests, so all but the first instance pull
	 * the prefix from a peer that computed it */
	assert_true(sf_metric(&pull, "tok_fetched_peer") > 0);
	size_t n = 0;
	for (size_t i = 0; i < pull.n_req; i++)
		n += pull.req[i].tok_peer > 0;
	assert_true(n >= 4);
	sim_results_free(&never);
	sim_results_free(&pull);
}

/* Two instances taken in turn (round_robin), one sequence each, 10 blocks
 * of KV each. Request 0 leaves prefix P (4 blocks) cached on instance 0;
 * request 2, a long one of 10 blocks, runs there and evicts all of P while
 * request 4, which starts with P, waits behind it on the same instance;
 * request 4 then computes P there again. The holders index learnt instance
 * 0 for P's first block at request 4's routing, while P was still present:
 * the eviction must not make it forget, or request 6, on instance 1, finds
 * no peer to pull P from. */
static void test_holder_kept_while_a_routed_request_will_recompute(void **st)
{
	(void)st;
	static const uint64_t ids[][5] = {
	    {11, 12, 13, 14, 15}, {21}, {31, 32, 33}, {41}, {11, 12, 13, 14, 55},
	    {61},                 {71}, {11, 12, 13, 14, 85}};
	static const double t_s[] = {0, 0.01, 1.0, 1.01, 1.1, 1.11, 30, 30.01};
	static const uint32_t n[] = {5, 1, 3, 1, 5, 1, 1, 5};
	static const uint32_t out[] = {2, 2, 112, 2, 2, 2, 2, 2};
	sf_script_t sc = {.count = 8, .t_s = t_s, .ids = ids[0], .stride = 5, .n = n, .out = out};
	sim_source_t src = {sf_script_next, &sc, "script"};
	const char *sets[] = {"kvcache.fetch=always",       "policy.routing.name=round_robin",
	                      "cluster.nodes=1",            "cluster.kv_blocks=10",
	                      "scheduler.max_num_seqs=1",   "kvcache.block_tokens=16",
	                      "trace.duration_s=0"};
	sim_results_t r = sf_run_source(NULL, sets, 7, &src);
	const res_request_t *last = sf_request(r.req, r.n_req, 7);
	assert_int_equal(last->instance, 1);
	assert_int_equal(last->tok_peer, 4 * 16);
	sim_results_free(&r);
}

TEST_MAIN(cmocka_unit_test(test_holders_sorted_without_duplicates),
          cmocka_unit_test(test_holders_match_brute_force),
          cmocka_unit_test(test_fetch_finds_peers_through_the_index),
          cmocka_unit_test(test_holder_kept_while_a_routed_request_will_recompute))
