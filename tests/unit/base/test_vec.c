/* Tests for sim/base/vec.h: the doubling rule, both capacity types, and
 * refusals that leave the caller's array as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sim/base/vec.h"
#include "tests/fixtures/test_main.h"

static void test_vec_grow_doubles_from_first_and_keeps_items(void **state)
{
	(void)state;
	/* items needed, capacity after: 16 fits (unchanged), 17 doubles, 100
	 * doubles twice (32 -> 64 -> 128) */
	static const size_t steps[][2] = {{16, 16}, {17, 32}, {100, 128}};
	int *a = NULL;
	size_t cap = 0;
	assert_int_equal(VEC_GROW(a, cap, 1, 16), 0);
	assert_int_equal(cap, 16);
	for (int i = 0; i < 16; i++)
		a[i] = i * 3;
	for (size_t k = 0; k < 3; k++) {
		assert_int_equal(VEC_GROW(a, cap, steps[k][0], 16), 0);
		assert_int_equal(cap, steps[k][1]);
		for (int i = 0; i < 16; i++)
			assert_int_equal(a[i], i * 3);
	}
	free(a);
}

static void test_vec_grow_takes_a_uint32_capacity(void **state)
{
	(void)state;
	double *a = NULL;
	uint32_t cap = 0;
	assert_int_equal(VEC_GROW(a, cap, 5, 8), 0);
	assert_int_equal(cap, 8);
	a[7] = 1.5;
	assert_int_equal(VEC_GROW(a, cap, 9, 8), 0);
	assert_int_equal(cap, 16);
	assert_true(a[7] == 1.5);
	/* more items than a uint32_t capacity can count */
	double *before = a;
	assert_int_equal(VEC_GROW(a, cap, (size_t)UINT32_MAX + 1, 8), KS_ENOMEM);
	assert_ptr_equal(a, before);
	assert_int_equal(cap, 16);
	free(a);
}

static void test_vec_grow_refuses_an_overflowing_size_and_keeps_the_array(void **state)
{
	(void)state;
	uint64_t *a = NULL, *before;
	size_t cap = 0;
	assert_int_equal(VEC_GROW(a, cap, 3, 4), 0);
	a[2] = 42;
	before = a;
	assert_int_equal(VEC_GROW(a, cap, SIZE_MAX / 4, 4), KS_ENOMEM); /* bytes overflow */
	assert_int_equal(VEC_GROW(a, cap, SIZE_MAX, 4), KS_ENOMEM);     /* count overflows */
	assert_ptr_equal(a, before);
	assert_int_equal(cap, 4);
	assert_int_equal(a[2], 42);
	free(a);
}

static void test_vec_next_cap_and_resize_keep_parallel_arrays_in_step(void **state)
{
	(void)state;
	assert_int_equal(vec_next_cap(64, 10, 16), 64);
	assert_int_equal(vec_next_cap(0, 10, 16), 16);
	assert_int_equal(vec_next_cap(0, 10, 0), 16); /* no first: from 1 */
	assert_int_equal(vec_next_cap(24, 25, 16), 48);
	assert_int_equal(vec_next_cap(1, SIZE_MAX, 16), 0);
	int *x = NULL;
	char *y = NULL;
	size_t c = vec_next_cap(0, 3, 4);
	assert_int_equal(VEC_RESIZE(x, c), 0);
	assert_int_equal(VEC_RESIZE(y, c), 0);
	x[3] = 7;
	y[3] = 'q';
	c = vec_next_cap(c, 5, 4);
	assert_int_equal(c, 8);
	assert_int_equal(VEC_RESIZE(x, c), 0);
	assert_int_equal(VEC_RESIZE(y, c), 0);
	assert_int_equal(x[3], 7);
	assert_int_equal(y[3], 'q');
	free(x);
	free(y);
}

TEST_MAIN(cmocka_unit_test(test_vec_grow_doubles_from_first_and_keeps_items),
          cmocka_unit_test(test_vec_grow_takes_a_uint32_capacity),
          cmocka_unit_test(test_vec_grow_refuses_an_overflowing_size_and_keeps_the_array),
          cmocka_unit_test(test_vec_next_cap_and_resize_keep_parallel_arrays_in_step))
