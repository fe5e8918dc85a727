/* The cost model's cache of the terms fixed by a batch's token and sequence
 * counts (mdl_size_cache_t, models/mdl.h): a warm model gives the same
 * nanoseconds as a cold one on decode and prefill batches of every size
 * (sizes that share an entry included) and on decode runs; and a change to
 * any input the terms read, made by writing the struct after
 * mdl_compute_init, is seen at the next query: the parameters, the hardware,
 * the model, and a derived constant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "models/mdl_prof.h"
#include "tests/fixtures/mdl_fixture.h"
#include "tests/fixtures/test_main.h"

static mdl_compute_t warm, cold;

static void init_70b(mdl_compute_t *c)
{
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_builtin("H100-SXM", &hw, "Llama-3-70B", &m);
	err_t e = {0};
	mdl_compute_params_t p = mdl_compute_params_default;
	assert_int_equal(mdl_calib_builtin("H100-SXM", &p, &e), 0);
	assert_true(p.gemm_mfu > 0); /* the separated terms, which the cache serves */
	assert_int_equal(mdl_compute_init(c, &hw, &m, 4, &p, &e), 0);
}

/* cold := warm with an empty cache */
static const mdl_compute_t *cooled(void)
{
	cold = warm;
	memset(&cold.size_cache, 0, sizeof cold.size_cache);
	return &cold;
}

static int64_t decode_ns(const mdl_compute_t *c, uint32_t n, uint32_t ctx0)
{
	static uint32_t ctx[1024];
	for (uint32_t i = 0; i < n; i++)
		ctx[i] = ctx0 + 37 * i;
	mdl_batch_t b = {.n_decode = n, .decode_ctx = ctx};
	return mdl_iter_time_ns(c, &b);
}

static int64_t prefill_ns(const mdl_compute_t *c, uint32_t tokens, uint32_t cached)
{
	return mdl_prefill_time_ns(c, tokens, cached);
}

static void test_warm_equals_cold_on_every_size(void **st)
{
	(void)st;
	init_70b(&warm);
	for (int pass = 0; pass < 2; pass++) /* the second pass hits what the first filled */
		for (uint32_t n = 1; n <= 1024; n++) {
			assert_int_equal(decode_ns(&warm, n, 1000 + n), decode_ns(cooled(), n, 1000 + n));
			assert_int_equal(prefill_ns(&warm, 8 * n, n), prefill_ns(cooled(), 8 * n, n));
		}
	int64_t a[64], b[64];
	for (uint32_t n = 1; n <= 300; n += 7) {
		mdl_decode_run_ns(&warm, n, 4000ull * n, 64, a);
		mdl_decode_run_ns(&warm, n, 4000ull * n, 64, a);
		mdl_decode_run_ns(cooled(), n, 4000ull * n, 64, b);
		assert_memory_equal(a, b, sizeof a);
	}
}

/* One change to the model after init; the cost must move for it to tell. */
static void gemm_mfu(mdl_compute_t *c) { c->p.gemm_mfu *= 0.5; }
static void overhead(mdl_compute_t *c) { c->p.iter_overhead_ns += 100000; }
static void tile(mdl_compute_t *c) { c->p.gemm_tile_tokens = 256; }
static void hbm(mdl_compute_t *c) { c->hw.hbm_bw *= 0.5; }
static void layers(mdl_compute_t *c) { c->llm.layers /= 2; }
static void ar_bw(mdl_compute_t *c) { c->ar_bw *= 0.1; }

static void test_a_change_after_init_empties_the_cache(void **st)
{
	(void)st;
	void (*change[])(mdl_compute_t *) = {gemm_mfu, overhead, tile, hbm, layers, ar_bw};
	for (size_t k = 0; k < sizeof change / sizeof change[0]; k++) {
		init_70b(&warm);
		int64_t dec = decode_ns(&warm, 48, 2000), pre = prefill_ns(&warm, 600, 0);
		int64_t run[32], want[32];
		mdl_decode_run_ns(&warm, 48, 96000, 32, run);
		change[k](&warm);
		int64_t dec2 = decode_ns(&warm, 48, 2000), pre2 = prefill_ns(&warm, 600, 0);
		assert_int_equal(dec2, decode_ns(cooled(), 48, 2000));
		assert_int_equal(pre2, prefill_ns(cooled(), 600, 0));
		assert_true(dec2 != dec || pre2 != pre);
		init_70b(&warm);
		mdl_decode_run_ns(&warm, 48, 96000, 32, run);
		change[k](&warm);
		mdl_decode_run_ns(&warm, 48, 96000, 32, run);
		mdl_decode_run_ns(cooled(), 48, 96000, 32, want);
		assert_memory_equal(run, want, sizeof run);
	}
}

TEST_MAIN(cmocka_unit_test(test_warm_equals_cold_on_every_size),
          cmocka_unit_test(test_a_change_after_init_empties_the_cache))
