/* mdl_decode_run_ns (models/mdl.h) within its certified 1 ns of the exact
 * per-step cost (mdl_iter_cost on each step's batch spelt out), on random
 * decode runs: both shipped calibrations, TP 1..8, 1..512 sequences,
 * context sums 1..2 M tokens, 1..128 steps, q = 0 and q > 0, the roofline,
 * linear and profile models; equal to the nanosecond where the roofline is
 * max() or the model linear; few roofline evaluations where the q-norm
 * allows; and a run that crosses from memory- to compute-bound. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "models/mdl_prof.h"
#include "tests/fixtures/mdl_fixture.h"
#include "tests/fixtures/test_main.h"

#define MAX_STEPS 128
#define MAX_SEQS 512

/* The test's own deterministic stream (splitmix64). */
static uint64_t rnd_state = 14;
static uint64_t rnd(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}
static double rnd01(void)
{
	return (rnd() >> 11) * (1.0 / 9007199254740992.0);
}
/* log-uniform integer in [lo, hi]: small batches and contexts as often as large */
static uint64_t rnd_log(uint64_t lo, uint64_t hi)
{
	uint64_t v = (uint64_t)(lo * pow((double)hi / lo, rnd01()));
	return v < lo ? lo : v > hi ? hi : v;
}

/* The exact per-step costs of n sequences whose contexts sum to sum (spread
 * evenly), each one token longer per step. */
static void spelt_out(const mdl_compute_t *c, uint32_t n, uint64_t sum, uint32_t steps,
                      int64_t *want)
{
	static uint32_t ctx[MAX_SEQS];
	for (uint32_t i = 0; i < n; i++)
		ctx[i] = (uint32_t)(sum / n + (i < sum % n));
	for (uint32_t j = 0; j < steps; j++) {
		mdl_batch_t b = {.n_decode = n, .decode_ctx = ctx};
		want[j] = mdl_iter_time_ns(c, &b);
		for (uint32_t i = 0; i < n; i++)
			ctx[i]++;
	}
}

typedef struct {
	int cases, fast, off_by_one;
} tally_t;

/* One run: the exact path equals the spelt-out steps, the closed form is
 * within 1 ns of them (exactly equal when `exact`); returns its evaluations. */
static uint32_t check_run(const mdl_compute_t *c, uint32_t n, uint64_t sum, uint32_t steps,
                          int exact, tally_t *t)
{
	int64_t want[MAX_STEPS], got[MAX_STEPS], ref[MAX_STEPS];
	spelt_out(c, n, sum, steps, want);
	assert_int_equal(mdl_decode_run_exact_ns(c, n, sum, steps, ref), steps);
	uint32_t evals = mdl_decode_run_ns(c, n, sum, steps, got);
	for (uint32_t j = 0; j < steps; j++) {
		int64_t d = got[j] - want[j];
		if (ref[j] != want[j] || d > 1 || d < -1 || (exact && d))
			fail_msg("%s tp %u q %g model %d: %u seqs, ctx sum %llu, step %u of %u: "
			         "run %lld, exact %lld, step cost %lld",
			         c->llm.name, c->tp, c->p.roofline_q, c->p.model, n,
			         (unsigned long long)sum, j, steps, (long long)got[j],
			         (long long)ref[j], (long long)want[j]);
		t->off_by_one += d != 0;
	}
	t->cases++;
	t->fast += evals < steps;
	return evals;
}

static const char *const gpus[] = {"H100-SXM", "A100-80GB"}; /* the shipped calibrations */
static const char *const llms[] = {"Llama-3-70B", "Llama-3-8B", "Qwen2.5-72B", "Mixtral-8x7B",
                                   "DeepSeek-V3"};

/* The calibrated terms of gpu (its models/calibration file) on llm at tp;
 * 0 when tp does not fit the model's heads. */
static int calibrated(mdl_compute_t *c, const char *gpu, const char *llm, uint32_t tp,
                      mdl_compute_params_t *p)
{
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_builtin(gpu, &hw, llm, &m);
	err_t e = {0};
	*p = mdl_compute_params_default;
	assert_int_equal(mdl_calib_builtin(gpu, p, &e), 0);
	assert_true(p->roofline_q > 0);
	return mdl_compute_init(c, &hw, &m, tp, p, &e) == 0;
}

/* A hand-made per-layer table for the profile model (no file needed):
 * 20 us at 1 token, 40 us at 64, 200 us at 1024 (log-linear between). */
static void as_profile(mdl_compute_t *c)
{
	c->p.model = MDL_MODEL_PROFILE;
	c->layer.n = 3;
	c->layer.x[0] = 1, c->layer.x[1] = 64, c->layer.x[2] = 1024;
	c->layer.y[0] = 20000, c->layer.y[1] = 40000, c->layer.y[2] = 200000;
	c->arc.n = 0;
}

static void test_random_runs_stay_within_1_ns_of_every_step(void **st)
{
	(void)st;
	static mdl_compute_t c;
	tally_t qnorm = {0}, maxed = {0};
	for (int k = 0; k < 1500; k++) {
		const char *gpu = gpus[rnd() % 2], *llm = llms[rnd() % 5];
		uint32_t tp = 1 + (uint32_t)(rnd() % 8);
		mdl_compute_params_t p;
		if (!calibrated(&c, gpu, llm, tp, &p))
			continue;
		int kind = (int)(rnd() % 4); /* calibrated q, another q, max, linear */
		if (kind == 1)
			c.p.roofline_q = 1 + 7 * rnd01();
		else if (kind == 2)
			c.p.roofline_q = 0;
		else if (kind == 3)
			c.p.model = MDL_MODEL_LINEAR;
		if (kind < 3 && rnd() % 4 == 0)
			as_profile(&c);
		uint32_t n = (uint32_t)rnd_log(1, MAX_SEQS);
		uint64_t sum = rnd_log(1, 2000000);
		uint32_t steps = (uint32_t)(1 + rnd() % MAX_STEPS);
		check_run(&c, n, sum, steps, kind >= 2, kind < 2 ? &qnorm : &maxed);
	}
	printf("q-norm: %d runs, %d from few evaluations, %d steps 1 ns off; max/linear: %d runs\n",
	       qnorm.cases, qnorm.fast, qnorm.off_by_one, maxed.cases);
	assert_true(qnorm.cases > 300 && maxed.cases > 200);
	assert_true(qnorm.fast > qnorm.cases / 4); /* the q-norm closed form is exercised */
	assert_int_equal(maxed.fast, 0);
}

/* The Mooncake run's typical segment (Llama-3-70B, TP4, H100, a batch of 2,
 * 127 steps): a handful of q-norm evaluations instead of 127. */
static void test_small_batch_run_takes_a_few_evaluations(void **st)
{
	(void)st;
	static mdl_compute_t c;
	mdl_compute_params_t p;
	assert_true(calibrated(&c, "H100-SXM", "Llama-3-70B", 4, &p));
	tally_t t = {0};
	static const uint64_t sums[] = {2, 3000, 40000, 300000};
	for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++) {
		uint32_t evals = check_run(&c, 2, sums[i], 127, 0, &t);
		if (evals > 8)
			fail_msg("ctx sum %llu: %u evaluations", (unsigned long long)sums[i],
			         evals);
	}
}

/* DeepSeek-V3's absorbed MLA decode attention does more FLOPs per KV byte
 * than the H100's ridge, so at TP 1 the compute side grows faster with the
 * contexts (at ~80 K tokens a sequence for 64): a run that starts
 * memory-bound ends compute-bound. */
static void test_run_across_the_memory_to_compute_switch(void **st)
{
	(void)st;
	static mdl_compute_t c;
	mdl_compute_params_t p;
	assert_true(calibrated(&c, "H100-SXM", "DeepSeek-V3", 1, &p));
	const uint32_t n = 64, steps = 128;
	/* bisect the context sum at which the sides meet */
	uint64_t lo = 0, hi = (uint64_t)n * 200000;
	mdl_iter_cost_t r;
	static uint32_t ctx[MAX_SEQS];
	for (int it = 0; it < 40 && hi - lo > 1; it++) {
		uint64_t mid = (lo + hi) / 2;
		for (uint32_t i = 0; i < n; i++)
			ctx[i] = (uint32_t)(mid / n + (i < mid % n));
		mdl_batch_t b = {.n_decode = n, .decode_ctx = ctx};
		mdl_iter_cost(&c, &b, &r);
		if (r.t_compute_ns < r.t_memory_ns)
			lo = mid;
		else
			hi = mid;
	}
	uint64_t start = lo - (uint64_t)n * steps / 2;
	assert_true(lo > (uint64_t)n * steps && hi < (uint64_t)n * 200000);
	/* memory-bound at the first step, compute-bound at the last */
	for (uint32_t i = 0; i < n; i++)
		ctx[i] = (uint32_t)(start / n + (i < start % n));
	mdl_batch_t b = {.n_decode = n, .decode_ctx = ctx};
	mdl_iter_cost(&c, &b, &r);
	assert_true(r.t_memory_ns > r.t_compute_ns);
	for (uint32_t i = 0; i < n; i++)
		ctx[i] += steps - 1;
	mdl_iter_cost(&c, &b, &r);
	assert_true(r.t_compute_ns > r.t_memory_ns);
	tally_t t = {0};
	check_run(&c, n, start, steps, 0, &t); /* the calibrated q-norm */
	c.p.roofline_q = 0;                    /* max(): the switch is a kink */
	check_run(&c, n, start, steps, 1, &t);
}

TEST_MAIN(cmocka_unit_test(test_random_runs_stay_within_1_ns_of_every_step),
          cmocka_unit_test(test_small_batch_run_takes_a_few_evaluations),
          cmocka_unit_test(test_run_across_the_memory_to_compute_switch))
