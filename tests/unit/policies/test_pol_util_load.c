/* Tests of policies/pol_util.c: pol_inst_busier and pol_snapshot_by_load,
 * the load order the early_rdma and speculative replicators share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/fixtures/pol_fake.h"
#include "policies/pol_int.h"

static void test_busier_compares_requests_then_optionally_prefill_tokens(void **st)
{
	(void)st;
	pol_inst_t a = {.waiting = 2, .running = 1, .prefill_tokens = 10};
	pol_inst_t b = {.waiting = 1, .running = 1, .prefill_tokens = 500};
	assert_true(pol_inst_busier(&a, &b, 0));
	assert_false(pol_inst_busier(&b, &a, 1));
	b.waiting = 2; /* same requests: tokens decide only when asked */
	assert_false(pol_inst_busier(&b, &a, 0));
	assert_true(pol_inst_busier(&b, &a, 1));
	assert_false(pol_inst_busier(&a, &b, 1));
	b.prefill_tokens = a.prefill_tokens;
	assert_false(pol_inst_busier(&a, &b, 1));
	assert_false(pol_inst_busier(&b, &a, 1));
}

static void test_snapshot_orders_least_busy_first_and_keeps_ties_in_index_order(void **st)
{
	(void)st;
	static fake_t f;
	fk_init(&f, 5, 16, 1024);
	const uint32_t reqs[5] = {3, 1, 3, 0, 1};
	const uint64_t toks[5] = {10, 900, 5, 0, 900};
	for (uint32_t i = 0; i < 5; i++) {
		f.inst[i].waiting = reqs[i];
		f.inst[i].prefill_tokens = toks[i];
	}
	pol_inst_t snap[5];
	uint32_t order[5];
	pol_snapshot_by_load(&f.v, snap, order, 0);
	const uint32_t by_requests[5] = {3, 1, 4, 0, 2};
	assert_memory_equal(order, by_requests, sizeof order);
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(snap[i].waiting, reqs[i]);
	pol_snapshot_by_load(&f.v, snap, order, 1);
	const uint32_t by_tokens_too[5] = {3, 1, 4, 2, 0};
	assert_memory_equal(order, by_tokens_too, sizeof order);
}

/* 16 instances with loads in {0, 1, 2} and prefill tokens in {0, 1}, 200
 * draws: the order is the stable insertion sort's, the reference it
 * replaced (ties in index order). */
static void test_snapshot_order_equals_a_stable_insertion_sort(void **st)
{
	(void)st;
	static fake_t f;
	fk_init(&f, 16, 16, 1024);
	uint64_t x = 88172645463325252ull;
	for (int draw = 0; draw < 200; draw++) {
		for (uint32_t i = 0; i < 16; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
			f.inst[i].waiting = (uint32_t)(x % 3);
			f.inst[i].prefill_tokens = (x >> 8) % 2;
		}
		for (int tokens = 0; tokens < 2; tokens++) {
			pol_inst_t snap[16];
			uint32_t order[16], want[16];
			pol_snapshot_by_load(&f.v, snap, order, tokens);
			for (uint32_t i = 0; i < 16; i++)
				want[i] = i;
			for (uint32_t i = 1; i < 16; i++)
				for (uint32_t j = i;
				     j > 0 && pol_inst_busier(&snap[want[j - 1]], &snap[want[j]], tokens);
				     j--) {
					uint32_t t = want[j];
					want[j] = want[j - 1];
					want[j - 1] = t;
				}
			assert_memory_equal(order, want, sizeof order);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busier_compares_requests_then_optionally_prefill_tokens),
		cmocka_unit_test(test_snapshot_orders_least_busy_first_and_keeps_ties_in_index_order),
		cmocka_unit_test(test_snapshot_order_equals_a_stable_insertion_sort),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
