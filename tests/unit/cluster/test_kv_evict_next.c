/* kv_evict_next (sim/cluster/kv_store.h) names the blocks eviction takes
 * next, in its order: over random allocations, uses, releases and
 * evictions, in LRU mode and under a priority function, the k ids it gives
 * are exactly the ids the next k kv_evict_one calls remove, with the
 * priorities the store ranks them by (non-decreasing), and asking changes
 * nothing the store reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sim/cluster/kv_store.h"

#define CAP 48

typedef struct seen {
	uint64_t id[CAP];
	uint32_t n;
} seen_t;

static int on_evict(void *ctx, const kv_block_info_t *b, int64_t now)
{
	(void)now;
	seen_t *s = ctx;
	if (s->n < CAP)
		s->id[s->n++] = b->id;
	return 0;
}

/* lfu-like: hits first, then the store's own tie order */
static double by_hits(void *ctx, const kv_block_info_t *b, int64_t now)
{
	(void)ctx;
	(void)now;
	return (double)(b->hits % 3);
}

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

static void check_mode(kv_prio_fn prio)
{
	uint64_t x = 11;
	for (int round = 0; round < 200; round++) {
		kv_store_t *s = kv_store_new(CAP);
		assert_non_null(s);
		seen_t seen = {0};
		kv_store_set_policy(s, prio, on_evict, &seen);
		int64_t t = 1;
		for (int op = 0; op < 150; op++, t++) {
			uint64_t id = 1 + lcg(&x) % 80;
			int st = kv_lookup(s, id);
			if (!st) {
				if (kv_free_or_evictable(s) &&
				    kv_alloc(s, id, (uint32_t)(id % 5), KV_READY, 1, 0, t) == KS_OK &&
				    lcg(&x) % 4)
					kv_unref(s, id, t);
			} else if (st == KV_READY && kv_info(s, id)->ref == 0) {
				kv_ref(s, id, t, NULL);
				if (lcg(&x) % 3)
					kv_unref(s, id, t + (int64_t)(lcg(&x) % 2));
			}
		}
		uint32_t k = 1 + (uint32_t)(lcg(&x) % KV_EVICT_NEXT_MAX);
		uint64_t ids[KV_EVICT_NEXT_MAX], ids2[KV_EVICT_NEXT_MAX];
		double pr[KV_EVICT_NEXT_MAX], pr2[KV_EVICT_NEXT_MAX];
		kv_stats_t before = kv_stats(s);
		uint32_t n = kv_evict_next(s, k, ids, pr);
		assert_int_equal(n, k < kv_evictable(s) ? k : kv_evictable(s));
		/* asking twice gives the same and changes nothing */
		assert_int_equal(kv_evict_next(s, k, ids2, pr2), n);
		assert_memory_equal(ids, ids2, n * sizeof *ids);
		kv_stats_t after = kv_stats(s);
		assert_memory_equal(&before, &after, sizeof before);
		assert_int_equal(kv_check(s), 0);
		for (uint32_t j = 1; j < n; j++)
			assert_true(pr[j - 1] <= pr[j]);
		seen.n = 0; /* allocations above evicted too */
		for (uint32_t j = 0; j < n; j++)
			assert_int_equal(kv_evict_one(s, t), KS_OK);
		assert_int_equal(seen.n, n);
		assert_memory_equal(seen.id, ids, n * sizeof *ids);
		kv_store_free(s);
	}
}

static void test_lru_next_are_the_next_evicted(void **st)
{
	(void)st;
	check_mode(NULL);
}

static void test_priority_next_are_the_next_evicted(void **st)
{
	(void)st;
	check_mode(by_hits);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lru_next_are_the_next_evicted),
		cmocka_unit_test(test_priority_next_are_the_next_evicted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
