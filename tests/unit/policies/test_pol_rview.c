/* The routers' approximate view (policies/pol_rview.c): per instance, the
 * blocks routed there, matched as a leading run, least recently routed
 * leaves out first past the size limit, checked against a naive LRU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>
#include <string.h>
#include <cmocka.h>

#include "policies/pol.h"
#include "tests/fixtures/test_main.h"

static void path(uint64_t *b, uint32_t n, uint64_t fam)
{
	for (uint32_t i = 0; i < n; i++)
		b[i] = fam * 1000 + i;
}

static void test_rview_match_is_leading_run_of_routed_blocks(void **st)
{
	(void)st;
	pol_rview_t *rv = pol_rview_new(3, 100);
	assert_non_null(rv);
	uint64_t a[8], b[8];
	path(a, 8, 1);
	path(b, 8, 1);
	for (int i = 5; i < 8; i++)
		b[i] = 70 + (uint64_t)i; /* diverges at block 5 */
	assert_int_equal(pol_rview_match(rv, 1, a, 8), 0);
	assert_int_equal(pol_rview_insert(rv, 1, a, 8), 0);
	assert_int_equal(pol_rview_match(rv, 1, a, 8), 8);
	assert_int_equal(pol_rview_match(rv, 1, b, 8), 5);
	assert_int_equal(pol_rview_match(rv, 0, a, 8), 0);
	assert_int_equal(pol_rview_match(rv, 2, a, 8), 0);
	assert_int_equal(pol_rview_size(rv, 1), 8);
	assert_int_equal(pol_rview_insert(rv, 1, b, 8), 0); /* shares 5 blocks, adds 3 */
	assert_int_equal(pol_rview_size(rv, 1), 11);
	assert_int_equal(pol_rview_insert(rv, 7, a, 8), 0); /* no such instance: ignored */
	pol_rview_free(rv);
	/* a zero limit holds nothing */
	rv = pol_rview_new(1, 0);
	assert_int_equal(pol_rview_insert(rv, 0, a, 8), 0);
	assert_int_equal(pol_rview_match(rv, 0, a, 8), 0);
	pol_rview_free(rv);
}

/* Limit 10. A (6 blocks) then B (6, disjoint): the two deepest blocks of A
 * go, so A still matches 4. Routing A again refreshes what it holds, then
 * B loses its two deepest. C shares A's first 3 blocks: its 3 new ones take
 * B's next leaves. D (2 new blocks) then takes the least recent ids in the
 * whole set: B's root, older than A's leaves, then A's deepest. */
static void test_rview_evicts_least_recently_routed_leaves_first(void **st)
{
	(void)st;
	pol_rview_t *rv = pol_rview_new(1, 10);
	uint64_t a[6], b[6], c[6], d[2];
	path(a, 6, 1);
	path(b, 6, 2);
	path(c, 6, 1);
	path(d, 2, 3);
	for (int i = 3; i < 6; i++)
		c[i] = 5000 + (uint64_t)i;
	pol_rview_insert(rv, 0, a, 6);
	pol_rview_insert(rv, 0, b, 6);
	assert_int_equal(pol_rview_size(rv, 0), 10);
	assert_int_equal(pol_rview_match(rv, 0, a, 6), 4);
	assert_int_equal(pol_rview_match(rv, 0, b, 6), 6);
	pol_rview_insert(rv, 0, a, 6);
	assert_int_equal(pol_rview_match(rv, 0, a, 6), 6);
	assert_int_equal(pol_rview_match(rv, 0, b, 6), 4);
	pol_rview_insert(rv, 0, c, 6);
	assert_int_equal(pol_rview_match(rv, 0, c, 6), 6);
	assert_int_equal(pol_rview_match(rv, 0, a, 6), 6);
	assert_int_equal(pol_rview_match(rv, 0, b, 6), 1);
	pol_rview_insert(rv, 0, d, 2);
	assert_int_equal(pol_rview_match(rv, 0, b, 6), 0);
	assert_int_equal(pol_rview_match(rv, 0, a, 6), 5);
	assert_int_equal(pol_rview_match(rv, 0, c, 6), 6);
	assert_int_equal(pol_rview_match(rv, 0, d, 2), 2);
	assert_int_equal(pol_rview_size(rv, 0), 10);
	pol_rview_free(rv);
}

/* A path longer than the limit keeps its first cap blocks. */
static void test_rview_long_path_keeps_its_prefix(void **st)
{
	(void)st;
	pol_rview_t *rv = pol_rview_new(1, 3);
	uint64_t a[5];
	path(a, 5, 4);
	pol_rview_insert(rv, 0, a, 2);
	pol_rview_insert(rv, 0, a, 5);
	assert_int_equal(pol_rview_match(rv, 0, a, 5), 3);
	assert_int_equal(pol_rview_size(rv, 0), 3);
	pol_rview_free(rv);
}

/* A naive LRU over the same operations: ids with the sequence number of
 * their last touch; a route touches the ids held, then every id deepest
 * first, evicting the oldest when full. */
#define REF_CAP 512
typedef struct ref_set {
	uint64_t id[REF_CAP];
	uint64_t seq[REF_CAP];
	uint32_t n;
} ref_set_t;

static long ref_find(const ref_set_t *r, uint64_t id)
{
	for (uint32_t k = 0; k < r->n; k++)
		if (r->id[k] == id)
			return k;
	return -1;
}

static void ref_insert(ref_set_t *r, uint32_t cap, const uint64_t *b, uint32_t n, uint64_t *seq)
{
	for (uint32_t j = n; j-- > 0;) {
		long k = ref_find(r, b[j]);
		if (k >= 0)
			r->seq[k] = ++*seq;
	}
	for (uint32_t j = n; j-- > 0;) {
		long k = ref_find(r, b[j]);
		if (k < 0 && r->n == cap) {
			k = 0;
			for (uint32_t x = 1; x < r->n; x++)
				if (r->seq[x] < r->seq[k])
					k = x;
			r->id[k] = b[j];
		} else if (k < 0) {
			k = r->n++;
			r->id[k] = b[j];
		}
		r->seq[k] = ++*seq;
	}
}

/* Random prefixes from 30 families (shared stems, random lengths) routed to
 * 3 instances with limits past and below the first allocation (37, 300):
 * after every insert each instance holds exactly the reference's ids, and
 * the match of every family equals the reference's leading run. */
static void test_rview_random_inserts_match_a_reference_lru(void **st)
{
	(void)st;
	const uint32_t caps[] = {37, 300};
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(g, 42);
	static ref_set_t ref[3];
	for (int c = 0; c < 2; c++) {
		pol_rview_t *rv = pol_rview_new(3, caps[c]);
		memset(ref, 0, sizeof ref);
		uint64_t seq = 0, b[40];
		for (int op = 0; op < 3000; op++) {
			uint64_t fam = gsl_rng_uniform_int(g, 30);
			uint32_t n = 1 + (uint32_t)gsl_rng_uniform_int(g, 40);
			uint32_t stem = (uint32_t)gsl_rng_uniform_int(g, n + 1);
			for (uint32_t i = 0; i < n; i++)
				b[i] = i < stem ? fam * 1000 + i : (fam * 1000 + i) * 7919 + 1;
			uint32_t inst = (uint32_t)gsl_rng_uniform_int(g, 3);
			assert_int_equal(pol_rview_insert(rv, inst, b, n), 0);
			ref_insert(&ref[inst], caps[c], b, n, &seq);
			assert_int_equal(pol_rview_size(rv, inst), ref[inst].n);
			for (uint32_t k = 0; k < ref[inst].n; k++)
				assert_true(pol_rview_has(rv, inst, ref[inst].id[k]));
			uint32_t want = 0;
			while (want < n && ref_find(&ref[inst], b[want]) >= 0)
				want++;
			assert_int_equal(pol_rview_match(rv, inst, b, n), want);
		}
		pol_rview_free(rv);
	}
	gsl_rng_free(g);
}

TEST_MAIN(cmocka_unit_test(test_rview_match_is_leading_run_of_routed_blocks),
          cmocka_unit_test(test_rview_evicts_least_recently_routed_leaves_first),
          cmocka_unit_test(test_rview_long_path_keeps_its_prefix),
          cmocka_unit_test(test_rview_random_inserts_match_a_reference_lru))
