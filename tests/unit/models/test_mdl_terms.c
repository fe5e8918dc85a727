/* The separated roofline terms of models/mdl_cost.c, each by hand on a
 * small shape, and where the default experiment's terms come from
 * (compute.calibration). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "models/mdl.h"
#include "models/mdl_prof.h"
#include "sim/base/cfg.h"
#include "tests/fixtures/mdl_fixture.h"
#include "sim/run/sim_schema.h"

/* Only the GEMM compute side: mfu 0.5, flat, no tile, q = max. */
static mdl_compute_params_t plain(void)
{
	mdl_compute_params_t p = mf_terms(0.5, 0, 0.5, 0, 0, 0, 0, 0);
	p.attn_prefill_eff = 0.25;
	p.attn_decode_eff = 0.5;
	p.allreduce_lat_ns = 0;
	p.iter_overhead_ns = 0;
	p.n_ar = 0;
	return p;
}

static mdl_iter_cost_t prefill(const mdl_compute_params_t *p, uint32_t tp, uint32_t n,
                               uint32_t cached)
{
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_toy(&hw, &m, 1);
	static mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, tp, p, &e), 0);
	mdl_batch_t b = {.n_prefill = 1, .prefill_new = &n, .prefill_cached = &cached};
	mdl_iter_cost_t r;
	mdl_iter_cost(&c, &b, &r);
	return r;
}

static void assert_near(double got, double want)
{
	if (fabs(got - want) > 1e-9 * fmax(1, fabs(want)))
		fail_msg("got %.12g, want %.12g", got, want);
}

static void test_gemm_term_is_flops_over_peak_times_mfu(void **st)
{
	(void)st;
	mdl_compute_params_t p = plain();
	/* 10 tokens: layer weights 36864 -> 2*10*36864 = 737280 FLOPs; LM head one
	 * sequence 2*64*100 = 12800; at 0.5e12 FLOP/s: 1500.16 ns */
	mdl_iter_cost_t r = prefill(&p, 1, 10, 0);
	assert_near(r.t_gemm_ns, 1500.16);
	/* half point: a GEMM of F FLOPs runs at mfu*F/(F+half). With half = the
	 * up projection's 2*10*64*256 = 327680, that GEMM takes twice as long
	 * and every other one (F + half)/F as long */
	p.gemm_half_flops = 327680;
	double g[] = {2 * 10 * 64 * 128, 2 * 10 * 64 * 64, 327680, 2 * 10 * 128 * 64, 12800};
	double want = 0;
	for (int i = 0; i < 5; i++)
		want += g[i] * (g[i] + p.gemm_half_flops) / g[i] / 0.5e12 * 1e9;
	r = prefill(&p, 1, 10, 0);
	assert_near(r.t_gemm_ns, want);
}

static void test_tile_rounds_gemm_tokens_up(void **st)
{
	(void)st;
	mdl_compute_params_t p = plain();
	p.gemm_tile_tokens = 64;
	/* 65 tokens pay for 128 in the layer's GEMMs (the LM head's single row
	 * pays for 64) */
	mdl_iter_cost_t a = prefill(&p, 1, 65, 0), b = prefill(&p, 1, 128, 0);
	double head65 = 2.0 * 64 * 64 * 100 / 0.5e12 * 1e9;
	assert_near(a.t_gemm_ns, b.t_gemm_ns);
	assert_near(a.t_gemm_ns, 2.0 * 128 * 36864 / 0.5e12 * 1e9 + head65);
}

static void test_weight_read_and_fixed_kernels_by_hand(void **st)
{
	(void)st;
	mdl_compute_params_t p = plain();
	p.gemm_kernel_ns = 1000;
	p.small_kernel_ns = 300;
	p.elt_bw_eff = 0.25;
	/* one token: weights (36864 + 6400)*2 bytes; activations per GEMM
	 * m*(k+n)*2: qkv 384, o 256, up 640, down 384, head 328 -> 1992 bytes;
	 * at 0.5e11 B/s */
	mdl_iter_cost_t r = prefill(&p, 1, 1, 0);
	assert_near(r.t_weight_ns, ((36864 + 6400) * 2.0 + 1992) / 0.5e11 * 1e9);
	/* fixed: 5 GEMM kernels (4 + LM head) * 1000 + 5 small * 300, plus
	 * elements 1*(4*64 + 2*(4+2)*16 + 3*128 + 3*64) = 1024 -> 2048 bytes at
	 * 0.25e11 B/s = 81.92 ns */
	assert_near(r.t_fixed_ns, 5000 + 1500 + 81.92);
	/* decode-sized work is memory-bound: the total is the memory side */
	assert_true(r.t_memory_ns > r.t_compute_ns);
	assert_int_equal(r.total_ns, (int64_t)ceil(r.t_memory_ns + r.t_fixed_ns));
}

static void test_attention_terms_by_hand(void **st)
{
	(void)st;
	mdl_compute_params_t p = plain();
	/* 10 new after 20 cached: pairs 10*20 + 55 = 255; 4*L*H*d = 256 FLOPs
	 * per pair; at 0.25e12 FLOP/s */
	mdl_iter_cost_t r = prefill(&p, 1, 10, 20);
	assert_near(r.t_attn_ns, 255.0 * 256 / 0.25e12 * 1e9);
	/* KV: 2*2*16*2 = 128 bytes/token, read 20 + write 10, at 0.5e11 B/s */
	assert_near(r.t_kv_ns, 30.0 * 128 / 0.5e11 * 1e9);
	/* tp 2: the attention FLOPs split over the GPUs */
	mdl_iter_cost_t r2 = prefill(&p, 2, 10, 20);
	assert_near(r2.t_attn_ns, r.t_attn_ns / 2);
}

static void test_allreduce_alpha_and_efficiency_per_tp(void **st)
{
	(void)st;
	mdl_compute_params_t p = plain();
	p.n_ar = 2;
	p.ar[0] = (mdl_ar_point_t){2, 20000, 0.5};
	p.ar[1] = (mdl_ar_point_t){4, 30000, 0.25};
	/* tp 2, 10 tokens: message 10*64*2 = 1280 bytes; per call 20000 +
	 * 2*(1/2)*1280/(1e10*0.5)*1e9 = 20256 ns; two per layer */
	mdl_iter_cost_t r = prefill(&p, 2, 10, 0);
	assert_near(r.t_comm_ns, 2 * 20256.0);
	/* tp 4 takes its own row: 30000 + 2*(3/4)*1280/(2.5e9)*1e9 = 30768 */
	r = prefill(&p, 4, 10, 0);
	assert_near(r.t_comm_ns, 2 * 30768.0);
	/* without a table: allreduce_lat_ns and allreduce_bw_eff */
	p.n_ar = 0;
	p.allreduce_lat_ns = 1000;
	p.allreduce_bw_eff = 0.5;
	r = prefill(&p, 2, 10, 0);
	assert_near(r.t_comm_ns, 2 * (1000 + 1280 / 5e9 * 1e9));
}

static void test_q_norm_combines_the_two_sides(void **st)
{
	(void)st;
	mdl_compute_params_t p = plain();
	mdl_iter_cost_t a = prefill(&p, 1, 40, 0);
	p.roofline_q = 2;
	mdl_iter_cost_t b = prefill(&p, 1, 40, 0);
	double c = b.t_compute_ns, m = b.t_memory_ns;
	assert_int_equal(a.total_ns, (int64_t)ceil(fmax(c, m)));
	assert_int_equal(b.total_ns, (int64_t)ceil(sqrt(c * c + m * m)));
}

static void test_zero_gemm_mfu_keeps_the_single_efficiency_roofline(void **st)
{
	(void)st;
	/* the earlier model: max(all FLOPs/(peak*mfu), bytes/(bw*mbu)) */
	mdl_compute_params_t p = {.mfu = 1, .mbu = 1, .allreduce_bw_eff = 1};
	mdl_iter_cost_t r = prefill(&p, 1, 10, 0);
	/* FLOPs 2*36864*10 + 2*6400 (head) + 256*55 (attention) = 764160 */
	assert_near(r.flops, 764160);
	assert_int_equal(r.total_ns, (int64_t)ceil(fmax(764160 / 1e12, r.bytes / 1e11) * 1e9));
	assert_true(r.t_gemm_ns == 0 && r.t_fixed_ns == 0);
}

static void test_bad_terms_are_refused(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_toy(&hw, &m, 1);
	static mdl_compute_t c;
	err_t e = {0};
	mdl_compute_params_t p = plain();
	p.weight_mbu = 1.5;
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &p, &e), KS_EINPUT);
	p = plain();
	p.roofline_q = 0.5;
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &p, &e), KS_EINPUT);
	p = plain();
	p.n_ar = 1;
	p.ar[0] = (mdl_ar_point_t){2, 100, 0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 2, &p, &e), KS_EINPUT);
}

/* ---- where the terms come from ------------------------------------------------ */

static cfg_t *cfg_with(const char *const *sets)
{
	cfg_schema_t *s = cfg_schema_default();
	assert_non_null(s);
	cfg_t *c = cfg_new(s);
	assert_non_null(c);
	err_t e = {0};
	for (; sets && *sets; sets++)
		if (cfg_set(c, *sets, &e))
			fail_msg("%s: %s", *sets, e.msg);
	return c;
}

static void free_cfg(cfg_t *c)
{
	cfg_schema_t *s = (cfg_schema_t *)cfg_schema(c);
	cfg_free(c);
	cfg_schema_free(s);
}

static void test_default_experiment_loads_the_shipped_h100_calibration(void **st)
{
	(void)st;
	mdl_compute_params_t want = mdl_compute_params_default, p;
	err_t e = {0};
	assert_int_equal(mdl_calib_builtin("H100-SXM", &want, &e), 0);
	cfg_t *c = cfg_with(NULL);
	assert_int_equal(mdl_load_cfg(c, NULL, NULL, &p, &e), 0);
	assert_non_null(strstr(p.calibration, "compute-H100-SXM.ini"));
	assert_true(p.gemm_mfu == want.gemm_mfu && p.weight_mbu == want.weight_mbu);
	assert_true(p.n_ar >= 3); /* per-TP all-reduce from the NCCL table */
	free_cfg(c);
	/* a GPU without a shipped calibration takes the built-in defaults */
	const char *h200[] = {"gpu.name=H200", NULL};
	c = cfg_with(h200);
	assert_int_equal(mdl_load_cfg(c, NULL, NULL, &p, &e), 0);
	assert_string_equal(p.calibration, "");
	assert_true(p.gemm_mfu == mdl_compute_params_default.gemm_mfu);
	free_cfg(c);
}

static void test_explicit_keys_win_over_the_calibration(void **st)
{
	(void)st;
	mdl_compute_params_t p;
	err_t e = {0};
	const char *sets[] = {"compute.gemm_mfu=0.42", "compute.allreduce_lat_ns=12345", NULL};
	cfg_t *c = cfg_with(sets);
	assert_int_equal(mdl_load_cfg(c, NULL, NULL, &p, &e), 0);
	assert_true(p.gemm_mfu == 0.42);
	assert_int_equal(p.n_ar, 0); /* the explicit all-reduce keys apply to every TP */
	assert_int_equal(p.allreduce_lat_ns, 12345);
	free_cfg(c);
	const char *none[] = {"compute.calibration=none", NULL};
	c = cfg_with(none);
	assert_int_equal(mdl_load_cfg(c, NULL, NULL, &p, &e), 0);
	assert_memory_equal(&p, &mdl_compute_params_default, sizeof p);
	free_cfg(c);
	const char *missing[] = {"compute.calibration=no-such-file.ini", NULL};
	c = cfg_with(missing);
	assert_int_not_equal(mdl_load_cfg(c, NULL, NULL, &p, &e), 0);
	assert_non_null(strstr(e.msg, "[compute] calibration"));
	free_cfg(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gemm_term_is_flops_over_peak_times_mfu),
	    cmocka_unit_test(test_tile_rounds_gemm_tokens_up),
	    cmocka_unit_test(test_weight_read_and_fixed_kernels_by_hand),
	    cmocka_unit_test(test_attention_terms_by_hand),
	    cmocka_unit_test(test_allreduce_alpha_and_efficiency_per_tp),
	    cmocka_unit_test(test_q_norm_combines_the_two_sides),
	    cmocka_unit_test(test_zero_gemm_mfu_keeps_the_single_efficiency_roofline),
	    cmocka_unit_test(test_bad_terms_are_refused),
	    cmocka_unit_test(test_default_experiment_loads_the_shipped_h100_calibration),
	    cmocka_unit_test(test_explicit_keys_win_over_the_calibration),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
