/* Streamed result tables (sim/base/results.h: sim_results_stream): rows
 * past a block go to a spill file and come back, with those in memory, in
 * append order; memory holds a block at most; a reader's stop code and a
 * failing spill come back as the header says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/base/err.h"
#include "sim/base/results.h"
#include "tests/fixtures/test_main.h"

/* What a reader saw: the rows in order, and its largest block. */
typedef struct seen {
	res_sample_t row[200];
	size_t n, biggest, stop_after;
} seen_t;

static int see(void *ctx, const void *rows, size_t n)
{
	seen_t *s = ctx;
	assert_true(s->n + n <= sizeof s->row / sizeof s->row[0]);
	memcpy(&s->row[s->n], rows, n * sizeof s->row[0]);
	s->n += n;
	s->biggest = n > s->biggest ? n : s->biggest;
	return s->stop_after && s->n >= s->stop_after ? KS_ERUNTIME : 0;
}

static res_sample_t sample(int i)
{
	res_sample_t x;
	memset(&x, 0, sizeof x); /* padding too: rows compare as bytes */
	x.t_ns = 1000 * i;
	x.index = i % 7;
	x.queue_len = i * 0.5;
	return x;
}

static void test_streamed_rows_come_back_in_append_order_from_a_block_of_memory(void **st)
{
	(void)st;
	sim_results_t a = {0}, b = {0};
	sim_results_stream(&b, 7);
	for (int i = 0; i < 150; i++) {
		res_sample_t x = sample(i);
		assert_int_equal(sim_results_append(&a, RES_T_TL, &x), 0);
		assert_int_equal(sim_results_append(&b, RES_T_TL, &x), 0);
		assert_true(b.n_tl <= 7 && b.cap_tl <= 7); /* never more than a block */
	}
	/* 150 = 21 blocks of 7 spilled + 3 in memory */
	assert_int_equal(b.spilled[RES_T_TL], 147);
	assert_int_equal(b.n_tl, 3);
	assert_int_equal(sim_results_count(&b, RES_T_TL), 150);
	assert_int_equal(sim_results_count(&a, RES_T_TL), 150);
	seen_t sa = {0}, sb = {0};
	assert_int_equal(sim_results_rows(&a, RES_T_TL, see, &sa), 0);
	assert_int_equal(sim_results_rows(&b, RES_T_TL, see, &sb), 0);
	assert_int_equal(sb.n, 150);
	assert_int_equal(sb.biggest, 7);
	assert_memory_equal(sb.row, sa.row, 150 * sizeof sa.row[0]);
	for (int i = 0; i < 150; i++)
		assert_true(sb.row[i].t_ns == 1000 * i);
	/* a second reading gives the same, and appends go on after it */
	seen_t sc = {0};
	res_sample_t x = sample(150);
	assert_int_equal(sim_results_append(&b, RES_T_TL, &x), 0);
	assert_int_equal(sim_results_rows(&b, RES_T_TL, see, &sc), 0);
	assert_int_equal(sc.n, 151);
	assert_memory_equal(sc.row, sa.row, 150 * sizeof sa.row[0]);
	assert_true(sc.row[150].t_ns == 150000);
	/* the other tables are apart */
	assert_int_equal(sim_results_count(&b, RES_T_REQ), 0);
	assert_int_equal(sim_results_count(&b, RES_T_XFER), 0);
	sim_results_free(&a);
	sim_results_free(&b);
	assert_int_equal(b.spill_fd_[RES_T_TL], 0);
}

static void test_a_readers_stop_code_ends_the_reading(void **st)
{
	(void)st;
	sim_results_t b = {0};
	sim_results_stream(&b, 4);
	for (int i = 0; i < 20; i++) {
		res_sample_t x = sample(i);
		assert_int_equal(sim_results_append(&b, RES_T_TL, &x), 0);
	}
	seen_t s = {.stop_after = 5};
	assert_int_equal(sim_results_rows(&b, RES_T_TL, see, &s), KS_ERUNTIME);
	assert_int_equal(s.n, 8); /* the second block of 4 said stop */
	assert_int_equal(sim_results_rows(&b, 99, see, &s), KS_EINPUT);
	assert_int_equal(sim_results_append(&b, 99, &s), KS_EINPUT);
	sim_results_free(&b);
}

static void test_a_spill_that_cannot_be_made_fails_with_eio(void **st)
{
	(void)st;
	sim_results_t b = {0};
	sim_results_stream(&b, 2);
	setenv("TMPDIR", "/nonexistent/kvsim-test", 1);
	res_sample_t x = sample(0);
	assert_int_equal(sim_results_append(&b, RES_T_TL, &x), 0);
	assert_int_equal(sim_results_append(&b, RES_T_TL, &x), 0);
	assert_int_equal(sim_results_append(&b, RES_T_TL, &x), KS_EIO);
	unsetenv("TMPDIR");
	assert_int_equal(sim_results_count(&b, RES_T_TL), 2); /* kept what it had */
	sim_results_free(&b);
}

TEST_MAIN(cmocka_unit_test(test_streamed_rows_come_back_in_append_order_from_a_block_of_memory),
          cmocka_unit_test(test_a_readers_stop_code_ends_the_reading),
          cmocka_unit_test(test_a_spill_that_cannot_be_made_fails_with_eio))
