/* mdl_decode_run_ns (models/mdl.h), the closed form of a decode segment's
 * steps: every step's duration equals mdl_iter_time_ns on the batch spelt
 * out (each context one token longer per step) to the nanosecond where the
 * closed form is exact (no q-norm: q = 0, the linear model), and within the
 * 1 ns it promises under a q-norm roofline; under each compute model and
 * attention kind, and through mdl_sim_cost_run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tests/fixtures/test_main.h"

#include "sim/cluster/cluster.h"
#include "tests/fixtures/mdl_fixture.h"
#include "sim/cluster/mdl_sim.h"

#define STEPS 48
#define MAX_SEQS 40

/* n sequences of uneven contexts from ctx0, over STEPS steps: the closed
 * form against the per-step cost, and against the cluster's callback. */
static void check_runs(const mdl_compute_t *c, uint32_t n, uint32_t ctx0)
{
	/* the q-norm's Taylor pieces may round 1 ns the other way */
	int64_t tol = c->p.model != MDL_MODEL_LINEAR && c->p.roofline_q > 0 ? 1 : 0;
	uint32_t ctx[MAX_SEQS];
	uint64_t sum = 0;
	for (uint32_t i = 0; i < n; i++)
		sum += ctx[i] = ctx0 + 37 * i * i;
	int64_t run[STEPS], via_sim[STEPS];
	mdl_decode_run_ns(c, n, sum, STEPS, run);
	sim_batch_t sb = {.n_dec = n, .dec_ctx = ctx};
	mdl_sim_cost_run((void *)c, &sb, STEPS, via_sim);
	for (uint32_t j = 0; j < STEPS; j++) {
		mdl_batch_t b = {.n_decode = n, .decode_ctx = ctx};
		int64_t want = mdl_iter_time_ns(c, &b);
		if (llabs(run[j] - want) > tol || via_sim[j] != run[j])
			fail_msg("%u seqs from ctx %u, step %u: run %lld, sim %lld, step cost %lld",
			         n, ctx0, j, (long long)run[j], (long long)via_sim[j],
			         (long long)want);
		for (uint32_t i = 0; i < n; i++)
			ctx[i]++;
	}
}

static void check_model(const char *gpu, const char *llm, uint32_t tp,
                        const mdl_compute_params_t *p)
{
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_builtin(gpu, &hw, llm, &m);
	static mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, tp, p, &e), 0);
	static const uint32_t sizes[] = {1, 2, 7, MAX_SEQS};
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		check_runs(&c, sizes[k], 1);
		check_runs(&c, sizes[k], 5000);
	}
}

static void test_decode_run_equals_steps_under_the_default_terms(void **st)
{
	(void)st;
	check_model("H100-SXM", "Llama-3-70B", 4, &mdl_compute_params_default);
	check_model("H200", "Llama-3-8B", 1, &mdl_compute_params_default);
}

/* MoE (experts touched grow with the batch) and MLA attention */
static void test_decode_run_equals_steps_for_moe_and_mla(void **st)
{
	(void)st;
	check_model("H100-SXM", "Mixtral-8x7B", 2, &mdl_compute_params_default);
	check_model("H200", "DeepSeek-V3", 8, &mdl_compute_params_default);
}

/* a q-norm roofline and GEMM tiles, where compute and memory sides swap as
 * contexts grow; the single-efficiency roofline; the linear model */
static void test_decode_run_equals_steps_under_other_models(void **st)
{
	(void)st;
	mdl_compute_params_t q = mf_terms(0.7, 1e9, 0.8, 3000, 2000, 0.5, 64, 4);
	check_model("H100-SXM", "Llama-3-70B", 4, &q);
	mdl_compute_params_t single = mdl_compute_params_default;
	single.gemm_mfu = 0;
	check_model("A100-80GB", "Qwen2.5-72B", 4, &single);
	mdl_compute_params_t lin = mdl_compute_params_default;
	lin.model = MDL_MODEL_LINEAR;
	check_model("H100-SXM", "Llama-3-70B", 4, &lin);
}

TEST_MAIN(cmocka_unit_test(test_decode_run_equals_steps_under_the_default_terms),
          cmocka_unit_test(test_decode_run_equals_steps_for_moe_and_mla),
          cmocka_unit_test(test_decode_run_equals_steps_under_other_models))
