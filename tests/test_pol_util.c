/* The prefix table and group table the built-in predictors share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "policies/pol_int.h"

static void path(uint64_t *b, uint32_t n, uint64_t fam)
{
	for (uint32_t i = 0; i < n; i++)
		b[i] = fam * 100000 + i;
}

static void test_ptab_match_is_longest_known_prefix(void **st)
{
	(void)st;
	pol_ptab_t *t = pol_ptab_new(1024, 0);
	uint64_t a[10], b[10];
	path(a, 10, 1);
	path(b, 10, 1);
	b[6] = 777; /* diverges at block 6 */
	b[7] = 778;
	assert_int_equal(pol_ptab_match(t, a, 10), 0);
	assert_int_equal(pol_ptab_touch(t, a, 10, 5, NULL, NULL), 0);
	assert_int_equal(pol_ptab_match(t, a, 10), 10);
	assert_int_equal(pol_ptab_match(t, b, 10), 6);
	assert_int_equal(pol_ptab_match(t, a, 3), 3);
	assert_int_equal(pol_ptab_last(t, a[9]), 5);
	assert_true(pol_ptab_last(t, 424242) == INT64_MIN);
	pol_ptab_free(t);
}

static void test_ptab_drops_oldest_paths_and_keeps_ancestors(void **st)
{
	(void)st;
	pol_ptab_t *t = pol_ptab_new(64, 0);
	uint64_t b[8];
	for (uint64_t fam = 1; fam <= 40; fam++) { /* 320 nodes through a 64 table */
		path(b, 8, fam);
		assert_int_equal(pol_ptab_touch(t, b, 8, (int64_t)fam, NULL, NULL), 0);
		assert_int_equal(pol_ptab_match(t, b, 8), 8);
		assert_true(pol_ptab_size(t) <= 64);
	}
	path(b, 8, 1);
	assert_int_equal(pol_ptab_match(t, b, 8), 0); /* the oldest is gone */
	/* a path longer than the whole table makes it grow instead */
	uint64_t big[200];
	path(big, 200, 99);
	assert_int_equal(pol_ptab_touch(t, big, 200, 100, NULL, NULL), 0);
	assert_int_equal(pol_ptab_match(t, big, 200), 200);
	pol_ptab_free(t);
}

static void test_groups_space_saving_replaces_lowest_score(void **st)
{
	(void)st;
	pol_groups_t gs;
	assert_int_equal(pol_groups_init(&gs, 2, 0, NULL), 0);
	uint64_t a[4], b[4], c[4];
	path(a, 4, 1);
	path(b, 4, 2);
	path(c, 4, 3);
	pol_group_t *g = pol_groups_get(&gs, a, 4, 0, NULL);
	g->score = 5;
	g = pol_groups_get(&gs, b, 4, 0, NULL);
	g->score = 2;
	int ev;
	g = pol_groups_get(&gs, c, 4, 0, &ev);
	assert_true(ev);
	assert_true(g->score == 2 && g->err == 2); /* inherits the evicted count */
	assert_null(pol_groups_find(&gs, b, 4));
	assert_non_null(pol_groups_find(&gs, a, 4));
	for (int i = 0; i < 6; i++)
		pol_group_note_inst(g, i, (double)i);
	pol_fc_t f;
	pol_group_likely(g, &f);
	assert_int_equal(f.n_likely, POL_LIKELY_MAX);
	assert_int_equal(f.likely[0], 5); /* heaviest first */
	pol_groups_free(&gs);
}

/* Inserts, overwrites and deletes against a plain array: every id stays
 * findable through growth and backward-shift deletion, deleted ids are gone. */
static void test_idmap_agrees_with_a_plain_array(void **st)
{
	(void)st;
	enum { N = 3000 };
	static uint32_t val[N];
	static unsigned char in[N];
	pol_idmap_t m;
	assert_int_equal(pol_idmap_init(&m, 4), 0);
	uint64_t x = 12345;
	for (uint32_t k = 0; k < 20000; k++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL; /* Knuth's MMIX LCG */
		uint32_t i = (uint32_t)(x >> 33) % N;
		uint64_t id = (uint64_t)i << 40; /* ids alike in their low bits */
		if (k < 4000 || (x >> 20) % 3) {
			assert_int_equal(pol_idmap_put(&m, id, k), 0);
			val[i] = k;
			in[i] = 1;
		} else {
			assert_int_equal(pol_idmap_del(&m, id), in[i]);
			in[i] = 0;
		}
	}
	size_t n = 0;
	for (uint32_t i = 0; i < N; i++) {
		uint32_t v = 7;
		assert_int_equal(pol_idmap_get(&m, (uint64_t)i << 40, &v), in[i]);
		if (in[i])
			assert_int_equal(v, val[i]);
		n += in[i];
	}
	assert_true(n > 100 && n < N);
	assert_int_equal(m.n, n);
	pol_idmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ptab_match_is_longest_known_prefix),
	    cmocka_unit_test(test_ptab_drops_oldest_paths_and_keeps_ancestors),
	    cmocka_unit_test(test_groups_space_saving_replaces_lowest_score),
	    cmocka_unit_test(test_idmap_agrees_with_a_plain_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
