/* The eviction bound (sim/run/bound.h): Belady's MIN on hand streams with
 * known optimal hit counts, against an exhaustive optimum on small random
 * streams, never below LRU, and in a run: equal to the run's hit rate when
 * the pool holds the working set, above it under pressure, and absent
 * (with every other result unchanged) when output.oracle_bound is off. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/test_main.h"

#include "sim/base/rng.h"
#include "sim/run/bound.h"
#include "tests/fixtures/sim_fixture.h"

/* |a - b| <= eps (this cmocka has no double assertion) */
static void assert_near(double a, double b, double eps)
{
	if (!(fabs(a - b) <= eps))
		fail_msg("%.17g is not within %g of %.17g", a, eps, b);
}

static uint64_t min_hits(const uint64_t *ids, size_t n, uint64_t cap)
{
	uint8_t counted[64];
	assert_true(n <= sizeof counted);
	memset(counted, 1, n);
	uint64_t h = 0;
	assert_int_equal(bound_belady(ids, counted, n, cap, &h), 0);
	return h;
}

/* Silberschatz, Galvin, Gagne, "Operating System Concepts", 9th ed., 9.4.4
 * (OPT: 9 faults with 3 frames on this string), and Belady's anomaly
 * string (ibid. 9.4.2: OPT 7 faults with 3 frames, 6 with 4). */
static void test_belady_textbook_streams(void **st)
{
	(void)st;
	static const uint64_t sgg[] = {7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1};
	assert_int_equal(min_hits(sgg, 20, 3), 20 - 9);
	static const uint64_t ano[] = {1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5};
	assert_int_equal(min_hits(ano, 12, 3), 12 - 7);
	assert_int_equal(min_hits(ano, 12, 4), 12 - 6);
	/* capacity 0 keeps nothing; enough capacity misses only first uses */
	assert_int_equal(min_hits(ano, 12, 0), 0);
	assert_int_equal(min_hits(ano, 12, 5), 12 - 5);
}

/* An insert (not looked up) makes the block resident: its next lookup hits
 * if nothing else needed the room, and nothing is counted for it. */
static void test_belady_inserts_are_free_loads(void **st)
{
	(void)st;
	const uint64_t ids[] = {5, 5, 6, 5};
	const uint8_t cnt[] = {0, 1, 1, 1};
	uint64_t h = 0;
	assert_int_equal(bound_belady(ids, cnt, 4, 1, &h), 0);
	assert_int_equal(h, 1); /* 5 hits; 6 is computed and takes 5's room; 5 misses */
	const uint64_t only[] = {9, 9};
	const uint8_t none[] = {0, 0};
	assert_int_equal(bound_belady(only, none, 2, 4, &h), 0);
	assert_int_equal(h, 0); /* nothing looked up, nothing counted */
}

/* The best hit count over every eviction choice of demand paging (cache
 * states as bit sets over ids 0..K-1; an accessed block is resident after
 * its access), the definition MIN must meet. */
#define K 6
static uint64_t brute_opt(const uint64_t *ids, const uint8_t *cnt, size_t n, unsigned cap)
{
	int best[1 << K], nb[1 << K];
	for (int m = 0; m < 1 << K; m++)
		best[m] = m == 0 ? 0 : -1;
	for (size_t i = 0; i < n; i++) {
		for (int m = 0; m < 1 << K; m++)
			nb[m] = -1;
		unsigned b = 1u << ids[i];
		for (int m = 0; m < 1 << K; m++) {
			if (best[m] < 0)
				continue;
			int v = best[m] + ((m & b) && cnt[i]);
			/* any resident block may be dropped at any access (every
			 * subset s of m), but the accessed one is resident after it */
			for (int s = m;; s = (s - 1) & m) {
				int keep = s | (int)b;
				if ((unsigned)__builtin_popcount(keep) <= cap && nb[keep] < v)
					nb[keep] = v;
				if (!s)
					break;
			}
		}
		memcpy(best, nb, sizeof best);
	}
	int r = 0;
	for (int m = 0; m < 1 << K; m++)
		r = best[m] > r ? best[m] : r;
	return (uint64_t)r;
}

static uint64_t lru_hits(const uint64_t *ids, const uint8_t *cnt, size_t n, unsigned cap)
{
	uint64_t slot[64];
	size_t used = 0, h = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < used && slot[j] != ids[i])
			j++;
		if (j < used) {
			h += cnt[i];
			memmove(slot + 1, slot, j * sizeof *slot); /* to the front */
		} else if (cap) {
			used = used < cap ? used + 1 : used;
			memmove(slot + 1, slot, (used - 1) * sizeof *slot);
		} else {
			continue;
		}
		slot[0] = ids[i];
	}
	return h;
}

static void test_belady_exact_and_never_below_lru_on_random_streams(void **st)
{
	(void)st;
	uint64_t rs = 42, ids[40];
	uint8_t cnt[40];
	for (int t = 0; t < 400; t++) {
		size_t n = 1 + rng_fmix64(rs += RNG_GOLDEN) % 40;
		unsigned cap = 1 + (unsigned)(rng_fmix64(rs += RNG_GOLDEN) % 4);
		for (size_t i = 0; i < n; i++) {
			uint64_t r = rng_fmix64(rs += RNG_GOLDEN);
			ids[i] = r % K;
			cnt[i] = (r >> 8) % 5 != 0; /* one access in five an insert */
		}
		uint64_t h = 0;
		assert_int_equal(bound_belady(ids, cnt, n, cap, &h), 0);
		assert_int_equal(h, brute_opt(ids, cnt, n, cap));
		assert_true(h >= lru_hits(ids, cnt, n, cap));
	}
}

/* Sequential requests sharing 20 blocks, a pool that holds them all: the
 * run hits every reuse, and so does MIN; the denominators agree. */
static void test_bound_equals_run_when_pool_holds_working_set(void **st)
{
	(void)st;
	sf_prefix_t p = sf_prefix(12, 20, 7000, 90000, 8);
	p.gap_ns = 2000000000;
	sim_source_t src = {sf_prefix_next, &p, "seq"};
	const char *sets[] = {
	    "cluster.nodes=1",        "cluster.gpus_per_node=2", "cluster.tp=1",
	    "cluster.kv_blocks=4000", "kvcache.block_tokens=16", "output.oracle_bound=true"};
	sim_results_t r = sf_run_source(NULL, sets, 6, &src);
	double run = sim_results_get(&r, "hit_rate_blocks");
	double opt = sim_results_get(&r, "bound.belady_hit_rate_blocks");
	assert_true(run > 0.5);
	assert_near(opt, run, 1e-12);
	assert_near(sim_results_get(&r, "bound.belady_gap_blocks"), 0, 1e-12);
	assert_near(sim_results_get(&r, "bound.lookups_blocks"), 12 * 21, 0);
	sim_results_free(&r);
}

/* One instance, requests cycling over 5 prefixes of 20 blocks each (and a
 * block of their own), one at a time, in a pool of 60 blocks: LRU evicts
 * every prefix before its turn comes back (cyclic reuse, LRU's worst
 * case), MIN keeps some of them. */
typedef struct cyc {
	int n, max;
	uint64_t ids[21];
} cyc_t;

static int cyc_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	(void)e;
	cyc_t *c = ctx;
	if (c->n == c->max)
		return 0;
	for (uint32_t i = 0; i < 21; i++)
		c->ids[i] = i < 20 ? 1000 * (uint64_t)(1 + c->n % 5) + i : 900000 + (uint64_t)c->n;
	*a = (sim_arrival_t){.id = (uint64_t)c->n,
	                     .arrival_ns = (int64_t)c->n * 2000000000,
	                     .in_len = 21 * 16,
	                     .out_len = 4,
	                     .n_blocks = 21,
	                     .blocks = c->ids};
	c->n++;
	return 1;
}

static int metric_in(const sim_results_t *r, const char *name)
{
	for (size_t i = 0; i < r->n_metric; i++)
		if (!strcmp(r->metric[i].name, name))
			return 1;
	return 0;
}

static sim_results_t run_cyclic(const char *bound)
{
	cyc_t c = {.max = 40};
	sim_source_t src = {cyc_next, &c, "cyclic"};
	const char *sets[] = {"cluster.nodes=1",      "cluster.gpus_per_node=1", "cluster.tp=1",
	                      "cluster.kv_blocks=60", "kvcache.block_tokens=16", bound};
	return sf_run_source(NULL, sets, 6, &src);
}

/* MIN beats the run's LRU there; turning the bound on changes no row and
 * no other metric, and off it is absent. */
static void test_bound_above_run_under_pressure_and_inert(void **st)
{
	(void)st;
	sim_results_t off = run_cyclic("output.oracle_bound=false");
	sim_results_t on = run_cyclic("output.oracle_bound=true");
	double run = sim_results_get(&on, "hit_rate_blocks");
	double opt = sim_results_get(&on, "bound.belady_hit_rate_blocks");
	assert_true(opt > run + 0.2);
	assert_near(sim_results_get(&on, "bound.belady_gap_blocks"), opt - run, 1e-12);
	assert_near(sim_results_get(&on, "bound.lookups_blocks"), 40 * 21, 0);
	assert_false(metric_in(&off, "bound.belady_hit_rate_blocks"));
	assert_true(isnan(sim_results_get(&off, "bound.belady_hit_rate_blocks")));
	assert_int_equal(on.n_req, off.n_req);
	assert_memory_equal(on.req, off.req, off.n_req * sizeof *off.req);
	assert_int_equal(on.n_metric, off.n_metric + 7);
	for (size_t i = 0; i < off.n_metric; i++) {
		assert_string_equal(on.metric[i].name, off.metric[i].name);
		double a = on.metric[i].value, c = off.metric[i].value;
		assert_true((isnan(a) && isnan(c)) || a == c);
	}
	sim_results_free(&on);
	sim_results_free(&off);
}

TEST_MAIN(cmocka_unit_test(test_belady_textbook_streams),
          cmocka_unit_test(test_belady_inserts_are_free_loads),
          cmocka_unit_test(test_belady_exact_and_never_below_lru_on_random_streams),
          cmocka_unit_test(test_bound_equals_run_when_pool_holds_working_set),
          cmocka_unit_test(test_bound_above_run_under_pressure_and_inert))
