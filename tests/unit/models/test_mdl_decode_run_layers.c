/* The decode-segment closed form (mdl_decode_run_seqs_ns, mdl_decode_run_ns)
 * on models whose layers differ: a sliding layer's reads stop growing when
 * a sequence reaches its window, so a run is cut there; each step stays
 * within 1 ns of mdl_iter_time_ns on the batch spelt out (equal to the
 * nanosecond under max()), across window crossings, for sliding (Gemma-3,
 * Gemma-2, Mistral) and state (Jamba, Qwen3-Next) models, and through the
 * cluster's callback. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "sim/cluster/cluster.h"
#include "tests/fixtures/mdl_fixture.h"
#include "tests/fixtures/test_main.h"
#include "sim/cluster/mdl_sim.h"

#define MAX_STEPS 128
#define MAX_SEQS 64

/* the test's own stream, seeded */
static gsl_rng *rng;
static uint64_t rnd(void)
{
	return gsl_rng_get(rng);
}

static void init(mdl_compute_t *c, const char *gpu, const char *llm, uint32_t tp, double q)
{
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_builtin(gpu, &hw, llm, &m);
	mdl_compute_params_t p = mdl_compute_params_default;
	err_t e = {0};
	p.roofline_q = q;
	assert_int_equal(mdl_compute_init(c, &hw, &m, tp, &p, &e), 0);
}

/* want[j]: the step's cost spelt out, every ctx[i] + j. */
static void spelt_out(const mdl_compute_t *c, uint32_t n, const uint32_t *ctx0, uint32_t steps,
                      int64_t *want)
{
	uint32_t ctx[MAX_SEQS];
	for (uint32_t i = 0; i < n; i++)
		ctx[i] = ctx0[i];
	for (uint32_t j = 0; j < steps; j++) {
		mdl_batch_t b = {.n_decode = n, .decode_ctx = ctx};
		want[j] = mdl_iter_time_ns(c, &b);
		for (uint32_t i = 0; i < n; i++)
			ctx[i]++;
	}
}

/* The closed form against the spelt-out steps: within 1 ns (exactly under
 * max()), the exact path and the cluster's callback equal; returns the
 * closed form's evaluations. */
static uint32_t check(const mdl_compute_t *c, uint32_t n, const uint32_t *ctx, uint32_t steps)
{
	int64_t want[MAX_STEPS], got[MAX_STEPS], ref[MAX_STEPS], sim[MAX_STEPS];
	spelt_out(c, n, ctx, steps, want);
	assert_int_equal(mdl_decode_run_seqs_exact_ns(c, n, ctx, steps, ref), steps);
	uint32_t evals = mdl_decode_run_seqs_ns(c, n, ctx, steps, got);
	sim_batch_t sb = {.n_dec = n, .dec_ctx = (uint32_t *)ctx};
	mdl_sim_cost_run((void *)c, &sb, steps, sim);
	int exact = c->p.roofline_q <= 0;
	for (uint32_t j = 0; j < steps; j++) {
		int64_t d = got[j] - want[j];
		if (ref[j] != want[j] || d > 1 || d < -1 || (exact && d) || sim[j] != got[j])
			fail_msg("%s tp %u q %g: %u seqs (first ctx %u), step %u of %u: run %lld, "
			         "exact %lld, sim %lld, step cost %lld",
			         c->llm.name, c->tp, c->p.roofline_q, n, ctx[0], j, steps,
			         (long long)got[j], (long long)ref[j], (long long)sim[j],
			         (long long)want[j]);
	}
	return evals;
}

/* Gemma-3 (window 1024: a query sees 1023 cached tokens): sequences that
 * reach 1023 cached at steps 23, 13 and 123 of 128, beside one past it. */
static void test_window_crossings_inside_a_run(void **st)
{
	(void)st;
	static mdl_compute_t c;
	const uint32_t ctx[] = {1000, 1010, 900, 3000};
	for (int k = 0; k < 2; k++) {
		init(&c, "H100-SXM", "Gemma-3-27B", 1, k ? 0 : mdl_compute_params_default.roofline_q);
		check(&c, 4, ctx, 128);
		check(&c, 1, ctx, 128);
		check(&c, 3, ctx, 5);
	}
	/* the steps' costs are not affine across a crossing: the sum of the
	 * contexts alone does not give them (an even split of the same sum
	 * crosses elsewhere) */
	init(&c, "H100-SXM", "Gemma-3-27B", 1, 0);
	const uint32_t even[] = {1478, 1478, 1477, 1477}; /* sum 5910, as ctx */
	int64_t a[MAX_STEPS], b[MAX_STEPS];
	mdl_decode_run_seqs_ns(&c, 4, ctx, 128, a);
	mdl_decode_run_seqs_ns(&c, 4, even, 128, b);
	assert_true(a[0] < b[0]);
	/* mdl_decode_run_ns takes the even split */
	int64_t s[MAX_STEPS];
	mdl_decode_run_ns(&c, 4, 5910, 128, s);
	for (uint32_t j = 0; j < 128; j++)
		assert_int_equal(s[j], b[j]);
}

/* A long piece on each side of a crossing still takes the closed form's
 * few evaluations, not one per step. */
static void test_pieces_keep_the_closed_form_fast(void **st)
{
	(void)st;
	static mdl_compute_t c;
	init(&c, "H100-SXM", "Gemma-3-27B", 4, mdl_compute_params_default.roofline_q);
	const uint32_t ctx[] = {959, 4000};
	assert_true(check(&c, 2, ctx, 128) < 64);
	const uint32_t past[] = {2000, 4000};
	assert_true(check(&c, 2, past, 128) < 16);
}

/* Random runs: 1..64 sequences, half of them within 2 x steps of the window
 * and the rest up to 2 windows (8192 tokens for a model without sliding
 * layers), 1..128 steps, TP 1..8, q-norm and max(). */
static void test_random_runs_of_hybrid_models(void **st)
{
	(void)st;
	static const char *const llms[] = {"Gemma-3-27B", "Gemma-2-27B", "Mistral-7B-v0.1",
	                                   "Jamba-1.5-Mini", "Qwen3-Next-80B-A3B"};
	static const uint32_t tps[] = {1, 2, 4, 8};
	static mdl_compute_t c;
	int crossed = 0;
	rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(rng, 17);
	for (int k = 0; k < 300; k++) {
		const char *llm = llms[rnd() % 5];
		uint32_t tp = tps[rnd() % 4];
		mdl_hw_t hw;
		mdl_llm_t m;
		mf_builtin("H200", &hw, llm, &m);
		if (m.heads % tp || (m.kv_heads % tp && tp % m.kv_heads))
			continue;
		init(&c, "H200", llm, tp, rnd() % 4 ? mdl_compute_params_default.roofline_q : 0);
		uint32_t n = 1 + (uint32_t)(rnd() % MAX_SEQS), steps = 1 + (uint32_t)(rnd() % MAX_STEPS);
		uint32_t span = m.window ? 2 * m.window : 8192, ctx[MAX_SEQS];
		for (uint32_t i = 0; i < n; i++) {
			uint32_t near = m.window > 2 * steps && rnd() % 2;
			ctx[i] = near ? m.window - 1 - (uint32_t)(rnd() % (2 * steps))
			              : 1 + (uint32_t)(rnd() % span);
			crossed += m.window && ctx[i] < m.window - 1 && ctx[i] + steps > m.window;
		}
		check(&c, n, ctx, steps);
	}
	gsl_rng_free(rng);
	assert_true(crossed > 100);
}

TEST_MAIN(cmocka_unit_test(test_window_crossings_inside_a_run),
          cmocka_unit_test(test_pieces_keep_the_closed_form_fast),
          cmocka_unit_test(test_random_runs_of_hybrid_models))
