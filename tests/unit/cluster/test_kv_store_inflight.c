/* kv_inflight_blocks (sim/cluster/kv_store.h): the store counts the blocks
 * a copy is bringing (INFLIGHT), from their allocation until they land
 * (kv_ready) or are dropped, and its checker agrees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/cluster/kv_store.h"
#include "tests/fixtures/test_main.h"

static void test_inflight_blocks_count_from_alloc_to_landing_or_drop(void **st)
{
	(void)st;
	kv_store_t *s = kv_store_new(8);
	assert_non_null(s);
	assert_int_equal(kv_inflight_blocks(s), 0);
	assert_int_equal(kv_alloc(s, 1, 0, KV_INFLIGHT, 0, 0, 0), KS_OK);
	assert_int_equal(kv_alloc(s, 2, 1, KV_INFLIGHT, 0, 1, 0), KS_OK);
	assert_int_equal(kv_alloc(s, 3, 0, KV_COMPUTING, 1, 0, 0), KS_OK);
	assert_int_equal(kv_alloc(s, 3, 0, KV_INFLIGHT, 0, 0, 0), KS_EEXIST); /* changes nothing */
	assert_int_equal(kv_inflight_blocks(s), 2);
	assert_int_equal(kv_check(s), 0);
	assert_int_equal(kv_ready(s, 1, 10), KS_OK); /* landed */
	assert_int_equal(kv_ready(s, 3, 10), KS_OK); /* computed: not a copy's */
	assert_int_equal(kv_inflight_blocks(s), 1);
	assert_int_equal(kv_check(s), 0);
	assert_int_equal(kv_drop(s, 2), KS_OK); /* the copy was cancelled */
	assert_int_equal(kv_inflight_blocks(s), 0);
	assert_int_equal(kv_used(s), 2);
	assert_int_equal(kv_check(s), 0);
	kv_store_free(s);
}

TEST_MAIN(cmocka_unit_test(test_inflight_blocks_count_from_alloc_to_landing_or_drop))
