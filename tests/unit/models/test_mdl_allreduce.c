/* The TP all-reduce as the engines run it ([compute] allreduce): the custom
 * kernel's measured curve (models/mdl_cost.c) where vLLM and SGLang use it,
 * NCCL's alpha + bus-bandwidth rule elsewhere, and auto resolved from the
 * engine (sim_params_compute). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "models/mdl.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim_params.h"
#include "tests/fixtures/mdl_fixture.h"

/* The toy model (8 heads) on the toy GPU at tp with the given implementation; NCCL's
 * alpha 20 us and bus efficiency 0.5 given explicitly. */
static void toy(mdl_compute_t *c, uint32_t tp, int impl, double nvlink)
{
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_toy(&hw, &m, 2);
	m.heads = m.kv_heads = 8; /* divisible up to tp 8 */
	m.head_dim = 8;
	hw.nvlink_bw = nvlink;
	mdl_compute_params_t p = mdl_compute_params_default;
	p.allreduce_lat_ns = 20000;
	p.allreduce_bw_eff = 0.5;
	p.allreduce_impl = impl;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(c, &hw, &m, tp, &p, &e), 0);
}

static double nccl(uint32_t tp, double link, double msg)
{
	return 20000 + 2.0 * (tp - 1) / tp * msg / (link * 0.5) * 1e9;
}

static void test_custom_follows_the_measured_curve_at_its_points_and_between(void **st)
{
	(void)st;
	static mdl_compute_t c;
	toy(&c, 4, MDL_AR_CUSTOM, 1e10);
	/* the TP 4 row at its points, below the first, between two, and past
	 * the last along the last segment (4 MiB 40.2 us, slope from 2 MiB) */
	assert_true(mdl_allreduce_one_ns(&c, 131072) == 9200);
	assert_true(mdl_allreduce_one_ns(&c, 1048576) == 20600);
	assert_true(mdl_allreduce_one_ns(&c, 100) == 9100);
	assert_true(fabs(mdl_allreduce_one_ns(&c, (131072 + 1048576) / 2.0) - 14900) < 1e-6);
	double slope = (40200.0 - 26900) / 2097152;
	assert_true(fabs(mdl_allreduce_one_ns(&c, 6291456) - (40200 + slope * 2097152)) < 1e-6);
	/* past vLLM's 8 MiB custom buffer: NCCL's rule */
	double big = 16.0 * 1024 * 1024;
	assert_true(fabs(mdl_allreduce_one_ns(&c, big) - nccl(4, 1e10, big)) < 1e-3);
	/* TP 2 and 8 have their own rows; TP 6 takes the nearest in log2 (8) */
	toy(&c, 2, MDL_AR_CUSTOM, 1e10);
	assert_true(mdl_allreduce_one_ns(&c, 1048576) == 12900);
	toy(&c, 8, MDL_AR_CUSTOM, 1e10);
	assert_true(mdl_allreduce_one_ns(&c, 1048576) == 24100);
}

static void test_nccl_where_the_engines_have_no_custom_kernel(void **st)
{
	(void)st;
	static mdl_compute_t c;
	double msg = 131072;
	/* asked for NCCL, or left unresolved (auto), the rule as before */
	toy(&c, 4, MDL_AR_NCCL, 1e10);
	assert_true(fabs(mdl_allreduce_one_ns(&c, msg) - nccl(4, 1e10, msg)) < 1e-3);
	toy(&c, 4, MDL_AR_AUTO, 1e10);
	assert_true(fabs(mdl_allreduce_one_ns(&c, msg) - nccl(4, 1e10, msg)) < 1e-3);
	/* no NVLink: the all-reduce crosses PCIe through NCCL */
	toy(&c, 4, MDL_AR_CUSTOM, 0);
	assert_true(fabs(mdl_allreduce_one_ns(&c, msg) - nccl(4, 1e9, msg)) < 1e-3);
	/* a TP the kernel does not take (vLLM: 2, 4, 6, 8) */
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_toy(&hw, &m, 2);
	m.heads = 12;
	m.kv_heads = 3;
	m.head_dim = 16;
	m.hidden = 192;
	mdl_compute_params_t p = mdl_compute_params_default;
	p.allreduce_lat_ns = 20000;
	p.allreduce_bw_eff = 0.5;
	p.allreduce_impl = MDL_AR_CUSTOM;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 3, &p, &e), 0);
	assert_true(fabs(mdl_allreduce_one_ns(&c, msg) - nccl(3, 1e10, msg)) < 1e-3);
	/* tp 1 has none */
	toy(&c, 1, MDL_AR_CUSTOM, 1e10);
	assert_true(mdl_allreduce_one_ns(&c, msg) == 0);
}

/* auto: custom under vLLM and SGLang, NCCL under the original study's
 * scheduler; an explicit value stays. */
static void test_auto_follows_the_engine(void **st)
{
	(void)st;
	static const struct {
		const char *mode, *key;
		int want;
	} cases[] = {{"vllm", NULL, MDL_AR_CUSTOM},
		     {"sglang", NULL, MDL_AR_CUSTOM},
		     {"btb", NULL, MDL_AR_NCCL},
		     {"vllm", "compute.allreduce=nccl", MDL_AR_NCCL},
		     {"btb", "compute.allreduce=custom", MDL_AR_CUSTOM}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char mode[64];
		snprintf(mode, sizeof mode, "scheduler.mode=%s", cases[k].mode);
		const char *sets[] = {mode, cases[k].key};
		cfg_t *cfg = NULL;
		err_t e = {0};
		assert_int_equal(cli_load_config_ex(NULL, sets, cases[k].key ? 2 : 1,
		                                    CLI_DEFAULT_EXPERIMENT, NULL, &cfg, &e),
		                 0);
		static sim_params_t sp;
		mdl_compute_params_t cp;
		assert_int_equal(sim_params_fill(cfg, &sp, &e), 0);
		assert_int_equal(mdl_load_cfg(cfg, NULL, NULL, &cp, &e), 0);
		assert_int_equal(cp.allreduce_impl, cases[k].key ? cases[k].want : MDL_AR_AUTO);
		sim_params_compute(&sp, &cp);
		assert_int_equal(cp.allreduce_impl, cases[k].want);
		cli_config_free(cfg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_custom_follows_the_measured_curve_at_its_points_and_between),
	    cmocka_unit_test(test_nccl_where_the_engines_have_no_custom_kernel),
	    cmocka_unit_test(test_auto_follows_the_engine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
