/* The KV store's one-lookup calls do exactly what the calls they fuse do:
 * kv_hit is kv_info's tag then kv_ref (then kv_unref with hold 0), and
 * kv_alloc in state READY is kv_alloc COMPUTING then kv_ready. Differential:
 * random operation sequences on two stores, one with each spelling, under
 * LRU and under a priority function; every answer, eviction, block and
 * counter agree. And LRU insertion walking from its last insert places
 * blocks as the heap orders them when many requests release prefixes at one
 * instant, interleaved; kv_unref_slots is kv_unref in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/test_main.h"

#include "sim/base/rng.h"
#include "sim/cluster/kv_store.h"

/* Evictions as a count and an order-sensitive digest of their ids. */
typedef struct evlog {
	uint64_t digest, n;
} evlog_t;

static int log_evict(void *ctx, const kv_block_info_t *b, int64_t now)
{
	(void)now;
	evlog_t *l = ctx;
	l->digest = rng_fmix64(l->digest ^ b->id);
	l->n++;
	return 0;
}

/* lfu-like: ties are many, so the (last use, depth, id) order matters */
static double prio_hits(void *ctx, const kv_block_info_t *b, int64_t now)
{
	(void)ctx;
	(void)now;
	return (double)(b->hits % 3);
}

/* The fused spellings (fused 1) or the separate calls (fused 0). */
static int do_hit(kv_store_t *s, int fused, uint64_t id, int64_t now, int hold, int *was_spec,
		  uint32_t *tag)
{
	if (fused)
		return kv_hit(s, id, now, hold, was_spec, tag);
	if (kv_lookup(s, id) != KV_READY)
		return KS_ESTATE;
	*tag = kv_info(s, id)->tag;
	int rc = kv_ref(s, id, now, was_spec);
	if (!rc && !hold)
		rc = kv_unref(s, id, now);
	return rc;
}

static int do_alloc_ready(kv_store_t *s, int fused, uint64_t id, uint32_t depth, uint32_t ref,
			  int spec, int64_t now)
{
	if (fused)
		return kv_alloc(s, id, depth, KV_READY, ref, spec, now);
	int rc = kv_alloc(s, id, depth, KV_COMPUTING, ref, spec, now);
	return rc ? rc : kv_ready(s, id, now);
}

static int same_block(void *ctx, const kv_block_info_t *b)
{
	const kv_block_info_t *o = kv_info(ctx, b->id);
	return !o || memcmp(o, b, sizeof *b) != 0;
}

static void run_differential(kv_prio_fn prio, uint64_t seed)
{
	enum { CAP = 48, IDS = 96, OPS = 20000 };
	evlog_t l[2] = {{0, 0}, {0, 0}};
	kv_store_t *s[2];
	for (int k = 0; k < 2; k++) {
		s[k] = kv_store_new(CAP);
		assert_non_null(s[k]);
		kv_store_set_policy(s[k], prio, log_evict, &l[k]);
	}
	int64_t now = 0;
	uint32_t held[IDS] = {0};
	for (int op = 0; op < OPS; op++) {
		uint64_t r = rng_splitmix64(seed * 1000003 + (uint64_t)op);
		now += (int64_t)(r >> 60) % 3; /* many equal instants */
		uint64_t id = 1 + (r >> 8) % IDS;
		uint32_t depth = (uint32_t)((r >> 20) % 8);
		int rc[2];
		switch (r % 5) {
		case 0: { /* a hit, held or touched */
			int hold = (int)((r >> 30) & 1), spec[2] = {-1, -1};
			uint32_t tag[2] = {7, 7};
			for (int k = 0; k < 2; k++)
				rc[k] = do_hit(s[k], k, id, now, hold, &spec[k], &tag[k]);
			assert_int_equal(rc[0], rc[1]);
			if (!rc[0]) {
				assert_int_equal(spec[0], spec[1]);
				assert_int_equal(tag[0], tag[1]);
				held[id - 1] += (uint32_t)hold;
			}
			break;
		}
		case 1: { /* an insert READY at once, held or not, maybe speculative */
			uint32_t ref = (uint32_t)((r >> 30) & 1);
			int spec = (int)((r >> 31) & 1);
			for (int k = 0; k < 2; k++)
				rc[k] = do_alloc_ready(s[k], k, id, depth, ref, spec, now);
			assert_int_equal(rc[0], rc[1]);
			if (!rc[0]) {
				held[id - 1] += ref;
				for (int k = 0; k < 2; k++)
					assert_int_equal(kv_set_tag(s[k], id, (uint32_t)(r >> 40) % 5), 0);
			}
			break;
		}
		case 2: /* a release */
			if (held[id - 1]) {
				for (int k = 0; k < 2; k++)
					assert_int_equal(kv_unref(s[k], id, now), 0);
				held[id - 1]--;
			}
			break;
		case 3: /* a prefill's block, READY later */
			for (int k = 0; k < 2; k++)
				rc[k] = kv_alloc(s[k], id, depth, KV_COMPUTING, 0, 0, now);
			assert_int_equal(rc[0], rc[1]);
			break;
		default:
			for (int k = 0; k < 2; k++)
				rc[k] = kv_lookup(s[k], id) == KV_COMPUTING ? kv_ready(s[k], id, now) : 1;
			assert_int_equal(rc[0], rc[1]);
			break;
		}
		if (op % 512 == 0)
			for (int k = 0; k < 2; k++)
				assert_int_equal(kv_check(s[k]), 0);
	}
	assert_int_equal(kv_foreach(s[0], same_block, s[1]), 0);
	assert_int_equal(kv_foreach(s[1], same_block, s[0]), 0);
	kv_stats_t a = kv_stats(s[0]), b = kv_stats(s[1]);
	assert_memory_equal(&a, &b, sizeof a);
	assert_true(a.evictions > 100 && a.hits > 100); /* the sequence exercised both */
	assert_int_equal(kv_spec_blocks(s[0]), kv_spec_blocks(s[1]));
	while (kv_evictable(s[0])) {
		assert_int_equal(kv_evict_one(s[0], now), 0);
		assert_int_equal(kv_evict_one(s[1], now), 0);
	}
	assert_int_equal(kv_evictable(s[1]), 0);
	assert_int_equal(l[0].n, l[1].n);
	assert_int_equal(l[0].digest, l[1].digest);
	kv_store_free(s[0]);
	kv_store_free(s[1]);
}

static void test_fused_calls_match_separate_calls_under_lru(void **state)
{
	(void)state;
	run_differential(NULL, 11);
	run_differential(NULL, 12);
}

static void test_fused_calls_match_separate_calls_under_priority(void **state)
{
	(void)state;
	run_differential(prio_hits, 21);
}

static void test_hit_refuses_absent_and_unready_blocks_changing_nothing(void **state)
{
	(void)state;
	kv_store_t *s = kv_store_new(4);
	assert_non_null(s);
	int spec = -1;
	uint32_t tag = 99;
	assert_int_equal(kv_hit(s, 5, 1, 1, &spec, &tag), KS_ESTATE);
	assert_int_equal(kv_alloc(s, 5, 0, KV_COMPUTING, 0, 0, 1), 0);
	assert_int_equal(kv_hit(s, 5, 2, 1, &spec, &tag), KS_ESTATE);
	assert_int_equal(spec, -1);
	assert_int_equal(tag, 99);
	const kv_block_info_t *b = kv_info(s, 5);
	assert_int_equal(b->ref, 0);
	assert_int_equal(b->hits, 0);
	assert_int_equal(kv_stats(s).hits, 0);
	/* READY, speculative and tagged: a touch reports both and keeps it evictable */
	kv_store_free(s);
	s = kv_store_new(4);
	assert_int_equal(kv_alloc(s, 6, 0, KV_READY, 0, 1, 3), 0);
	assert_int_equal(kv_lookup(s, 6), KV_READY);
	assert_int_equal(kv_spec_blocks(s), 1);
	assert_int_equal(kv_evictable(s), 1);
	assert_int_equal(kv_set_tag(s, 6, 4), 0);
	assert_int_equal(kv_hit(s, 6, 8, 0, &spec, NULL), 0);
	assert_int_equal(spec, 1);
	assert_int_equal(kv_spec_blocks(s), 0);
	assert_int_equal(kv_evictable(s), 1);
	assert_int_equal(kv_info(s, 6)->last_use, 8);
	assert_int_equal(kv_hit(s, 6, 9, 1, &spec, &tag), 0);
	assert_int_equal(tag, 4);
	assert_int_equal(spec, 0);
	assert_int_equal(kv_evictable(s), 0);
	assert_int_equal(kv_info(s, 6)->ref, 1);
	assert_int_equal(kv_info(s, 6)->hits, 2);
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

static double prio_last_use(void *ctx, const kv_block_info_t *b, int64_t now)
{
	(void)ctx;
	(void)now;
	return (double)b->last_use;
}

static void test_same_instant_prefixes_of_many_requests_evict_in_heap_order(void **state)
{
	(void)state;
	enum { REQS = 6, DEPTH = 40 };
	evlog_t l[2] = {{0, 0}, {0, 0}};
	kv_store_t *s[2];
	for (int k = 0; k < 2; k++) {
		s[k] = kv_store_new(REQS * DEPTH);
		assert_non_null(s[k]);
		kv_store_set_policy(s[k], k ? prio_last_use : NULL, log_evict, &l[k]);
	}
	for (int64_t t = 1; t <= 30; t++) {
		for (int k = 0; k < 2; k++) {
			/* each request touches (or inserts) its prefix shallow to deep,
			 * the requests one after another at the same instant; they share
			 * their first blocks and are shuffled by t */
			for (uint32_t q = 0; q < REQS; q++) {
				uint32_t rq = (uint32_t)((q * 5 + (uint64_t)t) % REQS);
				uint32_t n = DEPTH - (uint32_t)((rq * 7 + (uint64_t)t) % 13);
				for (uint32_t d = 0; d < n; d++) {
					uint64_t id = d < 3 ? 1 + d : 100 + rq * DEPTH + d;
					if (kv_hit(s[k], id, t, 0, NULL, NULL) == KS_ESTATE &&
					    kv_alloc(s[k], id, d, KV_READY, 0, 0, t) == KS_EFULL)
						break;
				}
			}
			/* and a few evictions between instants */
			for (int e = 0; e < (int)(t % 4) * 9; e++)
				kv_evict_one(s[k], t);
			assert_int_equal(kv_check(s[k]), 0);
		}
		assert_int_equal(l[0].n, l[1].n);
		assert_int_equal(l[0].digest, l[1].digest);
	}
	assert_true(l[0].n > 100);
	kv_store_free(s[0]);
	kv_store_free(s[1]);
}

static void test_unref_slots_is_unref_in_order_and_reports_failures(void **state)
{
	(void)state;
	enum { N = 40 };
	evlog_t l[2] = {{0, 0}, {0, 0}};
	kv_store_t *s[2];
	uint64_t ids[N];
	for (uint32_t j = 0; j < N; j++)
		ids[j] = rng_splitmix64(j);
	for (int k = 0; k < 2; k++) {
		s[k] = kv_store_new(N);
		assert_non_null(s[k]);
		kv_store_set_policy(s[k], NULL, log_evict, &l[k]);
		for (uint32_t j = 0; j < N; j++)
			assert_int_equal(kv_alloc(s[k], ids[j], j, KV_READY, 1 + (j % 2), 0, 1), 0);
	}
	uint32_t sl[N];
	for (uint32_t j = 0; j < N; j++)
		sl[j] = kv_slot(s[0], ids[j]);
	/* the whole run at one instant: the list order depends on the order */
	assert_int_equal(kv_unref_slots(s[0], sl, N, 5), 0);
	for (uint32_t j = 0; j < N; j++)
		assert_int_equal(kv_unref(s[1], ids[j], 5), 0);
	/* a second pass: the odd ones still hold a reference, the even ones fail */
	assert_int_equal(kv_unref_slots(s[0], sl, N, 6), KS_ESTATE);
	for (uint32_t j = 0; j < N; j++)
		assert_int_equal(kv_unref(s[1], ids[j], 6), j % 2 ? 0 : KS_ESTATE);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(kv_check(s[k]), 0);
		assert_int_equal(kv_evictable(s[k]), N);
		while (kv_evictable(s[k]))
			assert_int_equal(kv_evict_one(s[k], 9), 0);
	}
	assert_int_equal(l[0].n, N);
	assert_int_equal(l[0].digest, l[1].digest);
	assert_int_equal(kv_unref_slots(s[0], sl, 0, 9), 0);
	kv_store_free(s[0]);
	kv_store_free(s[1]);
}

TEST_MAIN(cmocka_unit_test(test_fused_calls_match_separate_calls_under_lru),
          cmocka_unit_test(test_fused_calls_match_separate_calls_under_priority),
          cmocka_unit_test(test_hit_refuses_absent_and_unready_blocks_changing_nothing),
          cmocka_unit_test(test_same_instant_prefixes_of_many_requests_evict_in_heap_order),
          cmocka_unit_test(test_unref_slots_is_unref_in_order_and_reports_failures))
