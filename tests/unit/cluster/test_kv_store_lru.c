/* The KV store's LRU mode (no priority function: an O(1) list) evicts in
 * exactly the order of its heap under a priority equal to the last use:
 * (last use, deeper first, id). Differential: random operation sequences,
 * with many equal timestamps (a prefix released at once), applied to both
 * stores; every answer, every eviction and every consistency check agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/test_main.h"

#include "sim/base/rng.h"
#include "sim/cluster/kv_store.h"

/* splitmix64 as a stream: the state advances by the golden increment. */
static uint64_t next(uint64_t *st)
{
	*st += RNG_GOLDEN;
	return rng_fmix64(*st);
}

typedef struct evlog {
	uint64_t id[4096];
	size_t n;
} evlog_t;

static int on_evict(void *ctx, const kv_block_info_t *b, int64_t now)
{
	(void)now;
	evlog_t *l = ctx;
	if (l->n < sizeof l->id / sizeof l->id[0])
		l->id[l->n] = b->id;
	l->n++;
	return 0;
}

static double prio_last_use(void *ctx, const kv_block_info_t *b, int64_t now)
{
	(void)ctx;
	(void)now;
	return (double)b->last_use;
}

/* One random operation on both stores; returns the two answers in rc. */
static void step(kv_store_t *a, kv_store_t *b, uint64_t *rng, int64_t now, int rc[2])
{
	uint64_t r = next(rng);
	uint64_t id = 1 + (r >> 8) % 48; /* a small pool: many repeats */
	uint32_t depth = (uint32_t)((r >> 20) % 6);
	kv_store_t *s[2] = {a, b};
	for (int k = 0; k < 2; k++) {
		switch (r % 10) {
		case 0:
		case 1:
			rc[k] = kv_alloc(s[k], id, depth, (r >> 40) & 1 ? KV_COMPUTING : KV_INFLIGHT,
					 (uint32_t)((r >> 41) & 1), 0, now);
			break;
		case 2:
		case 3:
		case 4:
		case 5:
		case 6: /* ready 2, ref 1, unref 2 in 10 */
			rc[k] = r % 10 < 4    ? kv_ready(s[k], id, now)
			        : r % 10 == 4 ? kv_ref(s[k], id, now, NULL)
			                     : kv_unref(s[k], id, now);
			break;
		case 7:
			rc[k] = (r >> 40) & 1 ? kv_drop(s[k], id) : kv_pin(s[k], id, now);
			break;
		case 9: /* a hit, held or released at once (in place when it can) */
			rc[k] = kv_hit(s[k], id, now, (r >> 40) & 1, NULL, NULL);
			break;
		default: /* 8 */
			rc[k] = (r >> 40) & 1 ? kv_evict_one(s[k], now)
					      : kv_alloc_private(s[k], (uint32_t)((r >> 42) % 4), now);
			if ((r >> 50) % 3 == 0)
				kv_free_private(s[k], (uint32_t)((r >> 52) % 4));
			break;
		}
	}
}

static void run_pair(uint64_t seed, uint32_t cap, int steps)
{
	kv_store_t *a = kv_store_new(cap), *b = kv_store_new(cap);
	assert_non_null(a);
	assert_non_null(b);
	evlog_t la = {0}, lb = {0};
	kv_store_set_policy(a, NULL, on_evict, &la);
	kv_store_set_policy(b, prio_last_use, on_evict, &lb);
	uint64_t rng = seed;
	int64_t now = 0;
	for (int i = 0; i < steps; i++) {
		/* time moves in bursts: runs of equal timestamps */
		if (next(&rng) % 4 == 0)
			now += 1 + (int64_t)(next(&rng) % 3);
		int rc[2];
		step(a, b, &rng, now, rc);
		assert_int_equal(rc[0], rc[1]);
		assert_int_equal(kv_check(a), 0);
		assert_int_equal(kv_check(b), 0);
		assert_int_equal(kv_evictable(a), kv_evictable(b));
		assert_int_equal(la.n, lb.n);
	}
	assert_true(la.n > 10); /* the sequences did evict */
	size_t n = la.n < 4096 ? la.n : 4096;
	assert_memory_equal(la.id, lb.id, n * sizeof la.id[0]);
	kv_store_free(a);
	kv_store_free(b);
}

static void test_lru_list_evicts_in_heap_order(void **st)
{
	(void)st;
	for (uint64_t seed = 1; seed <= 20; seed++)
		run_pair(seed, 8 + (uint32_t)(seed % 5) * 4, 3000);
}

/* A prefix released shallow to deep at one time: deeper blocks leave first,
 * then the next time's blocks. */
static void test_equal_time_prefix_leaves_deepest_first(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(16);
	evlog_t l = {0};
	kv_store_set_policy(s, NULL, on_evict, &l);
	for (uint32_t d = 0; d < 4; d++) {
		assert_int_equal(kv_alloc(s, 100 + d, d, KV_COMPUTING, 1, 0, 0), 0);
		assert_int_equal(kv_ready(s, 100 + d, 5), 0);
	}
	for (uint32_t d = 0; d < 4; d++)
		assert_int_equal(kv_unref(s, 100 + d, 10), 0);
	assert_int_equal(kv_alloc(s, 200, 0, KV_COMPUTING, 1, 0, 11), 0);
	assert_int_equal(kv_ready(s, 200, 11), 0);
	assert_int_equal(kv_unref(s, 200, 12), 0);
	for (int k = 0; k < 5; k++)
		assert_int_equal(kv_evict_one(s, 20), 0);
	const uint64_t want[5] = {103, 102, 101, 100, 200};
	assert_int_equal(l.n, 5);
	assert_memory_equal(l.id, want, sizeof want);
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

static double prio_hits(void *ctx, const kv_block_info_t *b, int64_t now)
{
	(void)ctx;
	(void)now;
	return (double)b->hits;
}

/* Under a priority with ties (lfu: equal hits), the least recently used of
 * the tied blocks goes first, whatever its depth or id (lfu's and
 * spec_first's documented tie rule). */
static void test_priority_ties_go_least_recently_used_first(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(8);
	evlog_t l = {0};
	kv_store_set_policy(s, prio_hits, on_evict, &l);
	/* 7 (depth 0, used at 30), 9 (depth 5, used at 20), 3 (depth 2, at 10) */
	const uint64_t ids[3] = {7, 9, 3};
	const uint32_t depth[3] = {0, 5, 2};
	const int64_t used[3] = {30, 20, 10};
	for (int k = 0; k < 3; k++) {
		assert_int_equal(kv_alloc(s, ids[k], depth[k], KV_COMPUTING, 1, 0, 0), 0);
		assert_int_equal(kv_ready(s, ids[k], 1), 0);
		assert_int_equal(kv_unref(s, ids[k], used[k]), 0);
	}
	for (int k = 0; k < 3; k++)
		assert_int_equal(kv_evict_one(s, 40), 0);
	const uint64_t want[3] = {3, 9, 7};
	assert_memory_equal(l.id, want, sizeof want);
	kv_store_free(s);
}

/* Requests hitting a long chain at the instant it was released (pinned and
 * unpinned at once, as under kvcache.resident_at = admission) put each
 * block back where it was: the order stays the heap's, with another chain
 * released at the same instant and at later ones in between. */
static void test_rehit_at_release_instant_keeps_heap_order(void **st)
{
	(void)st;
	enum { DEPTH = 300, CAP = 2 * DEPTH + 8 };
	kv_store_t *s[2] = {kv_store_new(CAP), kv_store_new(CAP)};
	evlog_t l[2];
	memset(l, 0, sizeof l);
	kv_store_set_policy(s[0], NULL, on_evict, &l[0]);
	kv_store_set_policy(s[1], prio_last_use, on_evict, &l[1]);
	for (int k = 0; k < 2; k++) {
		for (uint32_t d = 0; d < DEPTH; d++) {
			for (uint64_t c = 0; c < 2; c++) {
				uint64_t id = 1 + c * 1000 + d;
				assert_int_equal(kv_alloc(s[k], id, d, KV_COMPUTING, 0, 0, 5), 0);
				assert_int_equal(kv_ready(s[k], id, 5), 0);
			}
		}
		for (int64_t t = 5; t <= 7; t++) /* two hits at 5, then one each at 6, 7 */
			for (int rep = 0; rep < (t == 5 ? 2 : 1); rep++)
				for (uint32_t d = 0; d < DEPTH - (uint32_t)t; d++) {
					uint64_t id = 1 + (uint64_t)(t % 2) * 1000 + d;
					assert_int_equal(kv_ref(s[k], id, t, NULL), 0);
					assert_int_equal(kv_unref(s[k], id, t), 0);
				}
		assert_int_equal(kv_check(s[k]), 0);
		while (kv_evictable(s[k]))
			assert_int_equal(kv_evict_one(s[k], 9), 0);
	}
	assert_int_equal(l[0].n, 2 * DEPTH);
	assert_int_equal(l[0].n, l[1].n);
	assert_memory_equal(l[0].id, l[1].id, l[0].n * sizeof l[0].id[0]);
	kv_store_free(s[0]);
	kv_store_free(s[1]);
}

TEST_MAIN(cmocka_unit_test(test_lru_list_evicts_in_heap_order),
          cmocka_unit_test(test_equal_time_prefix_leaves_deepest_first),
          cmocka_unit_test(test_priority_ties_go_least_recently_used_first),
          cmocka_unit_test(test_rehit_at_release_instant_keeps_heap_order))
