/* kv_prefetch (sim/cluster/kv_store.h) is a hint that changes nothing: over
 * runs of present, absent and colliding ids, at every position of the run
 * (its ends included, where the ids it would look ahead at are past the
 * run), the store's answers, statistics and consistency are those of a
 * store that was never given the hint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sim/cluster/kv_store.h"

#define CAP 64

static void fill(kv_store_t *s)
{
	for (uint64_t id = 1; id <= CAP; id++) {
		assert_int_equal(kv_alloc(s, id * 3, (uint32_t)id, KV_COMPUTING, id % 2, 0, 0), KS_OK);
		if (id % 4)
			assert_int_equal(kv_ready(s, id * 3, 1), KS_OK);
	}
}

static void test_prefetch_changes_nothing(void **st)
{
	(void)st;
	kv_store_t *a = kv_store_new(CAP), *b = kv_store_new(CAP);
	fill(a);
	fill(b);
	uint64_t ids[3 * CAP];
	for (uint32_t i = 0; i < 3 * CAP; i++)
		ids[i] = i + 1; /* a third present (multiples of 3), the rest absent */
	for (uint32_t n = 0; n <= 3 * CAP; n += 17)
		for (uint32_t k = 0; k < n; k++) {
			kv_prefetch(a, ids, k, n);
			assert_int_equal(kv_lookup(a, ids[k]), kv_lookup(b, ids[k]));
		}
	assert_int_equal(kv_match(a, ids + 2, 3 * CAP - 2), kv_match(b, ids + 2, 3 * CAP - 2));
	assert_int_equal(kv_check(a), 0);
	kv_stats_t sa = kv_stats(a), sb = kv_stats(b);
	assert_memory_equal(&sa, &sb, sizeof sa);
	assert_int_equal(kv_used(a), kv_used(b));
	assert_int_equal(kv_evictable(a), kv_evictable(b));
	kv_store_free(a);
	kv_store_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefetch_changes_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
