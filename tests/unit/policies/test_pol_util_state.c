/* Tests of policies/pol_util.c: the policy states the built-ins share:
 * pol_pred_new and pol_pred_free (prefix table, groups, forecast buffer of
 * the predictors) and pol_copy_init (a state that is its params struct). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "policies/pol_int.h"
#include "tests/fixtures/test_main.h"

typedef struct demo_state {
	pol_pred_base_t b;
	uint64_t tail[8]; /* the predictor's own fields after the base */
} demo_state_t;

typedef struct demo_ext {
	int *freed; /* counter bumped by demo_ext_free */
} demo_ext_t;

static void demo_ext_free(void *ext)
{
	demo_ext_t *x = ext;
	if (x->freed)
		(*x->freed)++;
}

static void test_pred_new_gives_zeroed_state_with_working_table_and_groups(void **st)
{
	(void)st;
	err_t e = {0};
	demo_state_t *s =
	    pol_pred_new(sizeof *s, 64, sizeof(uint32_t), 4, sizeof(demo_ext_t), demo_ext_free, &e);
	assert_non_null(s);
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(s->tail[i], 0);
	assert_int_equal(s->b.out.n, 0);
	assert_int_equal(s->b.gs.cap, 4);
	assert_int_equal(s->b.gs.ext_bytes, sizeof(demo_ext_t));
	const uint64_t blocks[3] = {11, 12, 13};
	assert_int_equal(pol_ptab_touch(s->b.tab, blocks, 3, 5, NULL, NULL), 0);
	assert_int_equal(pol_ptab_match(s->b.tab, blocks, 3), 3);
	uint32_t *pay = pol_ptab_payload(s->b.tab, 12);
	assert_non_null(pay);
	assert_int_equal(*pay, 0);
	pol_group_t *g = pol_groups_get(&s->b.gs, blocks, 2, 5, NULL);
	assert_non_null(g);
	assert_non_null(pol_fcbuf_push_group(&s->b.out, g, 1.0, 5));
	pol_pred_free(s);
}

static void test_pred_free_releases_groups_through_their_ext_free(void **st)
{
	(void)st;
	err_t e = {0};
	int freed = 0;
	demo_state_t *s = pol_pred_new(sizeof *s, 64, 0, 4, sizeof(demo_ext_t), demo_ext_free, &e);
	assert_non_null(s);
	const uint64_t a[2] = {1, 2}, b[2] = {3, 4};
	pol_group_t *ga = pol_groups_get(&s->b.gs, a, 2, 0, NULL);
	assert_non_null(ga);
	((demo_ext_t *)ga->ext)->freed = &freed;
	pol_group_t *gb = pol_groups_get(&s->b.gs, b, 2, 0, NULL);
	assert_non_null(gb);
	((demo_ext_t *)gb->ext)->freed = &freed;
	pol_pred_free(s);
	assert_int_equal(freed, 2);
}

static void test_pred_new_reports_enomem_when_the_groups_cannot_be_had(void **st)
{
	(void)st;
	err_t e = {0};
	/* cap x sizeof(pol_group_t) overflows size_t: refused before any allocation */
	void *s = pol_pred_new(sizeof(demo_state_t), 64, 0, SIZE_MAX / 4, 0, NULL, &e);
	assert_null(s);
	assert_int_equal(e.code, KS_ENOMEM);
}

typedef struct demo_params {
	double a;
	uint32_t b;
} demo_params_t;

static void test_copy_init_state_is_an_independent_copy_of_the_params(void **st)
{
	(void)st;
	demo_params_t p = {2.5, 7};
	void *s = NULL;
	err_t e = {0};
	assert_int_equal(pol_copy_init(&p, sizeof p, &s, &e), 0);
	assert_non_null(s);
	assert_ptr_not_equal(s, &p);
	assert_memory_equal(s, &p, sizeof p);
	p.b = 9; /* the params may go away once init returns */
	assert_int_equal(((const demo_params_t *)s)->b, 7);
	assert_true(((const demo_params_t *)s)->a == 2.5);
	free(s);
}

TEST_MAIN(cmocka_unit_test(test_pred_new_gives_zeroed_state_with_working_table_and_groups),
          cmocka_unit_test(test_pred_free_releases_groups_through_their_ext_free),
          cmocka_unit_test(test_pred_new_reports_enomem_when_the_groups_cannot_be_had),
          cmocka_unit_test(test_copy_init_state_is_an_independent_copy_of_the_params))
