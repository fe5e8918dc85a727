/* The GPU harness's compute measurements as a profile (gpu_validation/
 * gv_prof.h): kvreplay --compute rows, one file per TP shape, become
 * operator rows that `kvsim calibrate compute fit` reads, and the fit on a
 * GEMM-only profile recovers the GEMM terms while keeping the small-kernel
 * terms it cannot see. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fixtures/cli_fixture.h"
#include "gpu_validation/gv_meas.h"
#include "gpu_validation/gv_prof.h"
#include "models/mdl.h"
#include "tests/fixtures/mdl_fixture.h"
#include "models/mdl_prof.h"
#include "tests/fixtures/tmp_fixture.h"

static const uint32_t TOK[] = {1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
#define N_TOK (sizeof TOK / sizeof TOK[0])

/* What kvreplay --compute writes for Llama-3-8B at tp (heads/tp, kv/tp,
 * ffn/tp), with the GEMM times the model predicts under p. */
static void fake_meas(gv_meas_t *m, uint32_t tp, const mdl_compute_params_t *p)
{
	mdl_hw_t hw;
	mdl_llm_t llm;
	err_t e = {0};
	assert_int_equal(mdl_hw_builtin("H200", &hw, &e), 0);
	assert_int_equal(mdl_llm_builtin("Llama-3-8B", &llm, &e), 0);
	memset(m, 0, sizeof *m);
	snprintf(m->backend, sizeof m->backend, "cuda");
	snprintf(m->device, sizeof m->device, "NVIDIA H200");
	m->comp = calloc(4 * N_TOK, sizeof *m->comp);
	assert_non_null(m->comp);
	int64_t q = llm.heads * llm.head_dim / tp, kv = llm.kv_heads * llm.head_dim / tp;
	int64_t h = llm.hidden, ffn = llm.intermediate / tp;
	static mdl_compute_t c;
	llm.layers = 1;
	assert_int_equal(mdl_compute_init(&c, &hw, &llm, tp, p, &e), 0);
	for (size_t i = 0; i < N_TOK; i++) {
		double g, s;
		mdl_layer_terms(&c, TOK[i], &g, &s);
		/* the layer's GEMM time split over the four ops by weight size */
		int64_t n[4] = {q + 2 * kv, h, 2 * ffn, h}, k[4] = {h, q, h, ffn};
		double w = 0;
		for (int j = 0; j < 4; j++)
			w += (double)n[j] * k[j];
		static const char *const op[] = {"gemm_qkv", "gemm_o", "gemm_gate_up", "gemm_down"};
		for (int j = 0; j < 4; j++) {
			gv_compute_t *r = &m->comp[m->n_comp++];
			snprintf(r->op, sizeof r->op, "%s", op[j]);
			r->m = TOK[i];
			r->n = n[j];
			r->k = k[j];
			r->time_ns = (int64_t)llround(g * (double)n[j] * k[j] / w);
		}
	}
}

static mdl_compute_params_t known(void)
{
	const mdl_compute_params_t *d = &mdl_compute_params_default;
	mdl_compute_params_t p =
	    mf_terms(0.66, 2e9, 0.84, 3000, d->small_kernel_ns, d->elt_bw_eff, 128, 3);
	return p;
}

static void test_kvreplay_rows_become_profile_rows_with_their_tp(void **st)
{
	(void)st;
	mdl_compute_params_t p = known();
	gv_meas_t m;
	fake_meas(&m, 4, &p);
	mdl_llm_t llm;
	err_t e = {0};
	assert_int_equal(mdl_llm_builtin("Llama-3-8B", &llm, &e), 0);
	mdl_prof_row_t *rows = NULL;
	size_t n = 0;
	assert_int_equal(gv_prof_rows("m.h5", &m, &llm, &rows, &n, &e), 0);
	assert_int_equal(n, N_TOK);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(rows[i].tp, 4);
		assert_int_equal(rows[i].tokens, TOK[i]);
		assert_int_equal(rows[i].n_embd, 4096);
		assert_true(rows[i].small_ns == 0);
		double sum = 0;
		for (size_t j = 4 * i; j < 4 * i + 4; j++)
			sum += (double)m.comp[j].time_ns;
		assert_true(rows[i].gemm_ns == sum);
	}
	/* another model's shapes are refused, and a missing op is named */
	mdl_llm_t other;
	assert_int_equal(mdl_llm_builtin("Llama-3-70B", &other, &e), 0);
	assert_int_equal(gv_prof_rows("m.h5", &m, &other, &rows, &n, &e), KS_EINPUT);
	m.comp[5].op[0] = 'x';
	assert_int_equal(gv_prof_rows("m.h5", &m, &llm, &rows, &n, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "m.h5: gemm_o at 4 tokens: missing"));
	assert_int_equal(n, N_TOK); /* nothing appended on error */
	free(rows);
	gv_meas_free(&m);
}

/* The loop run_on_gpu.sh closes: measurements files -> `calibrate compute
 * profile` -> `calibrate compute fit` -> a calibration with the GEMM terms
 * that generated them and the base's small-kernel terms. */
static void test_harness_measurements_fit_through_the_cli(void **st)
{
	(void)st;
	const char *k = cli_kvsim_or_skip();
	mdl_compute_params_t p = known();
	char meas[2][160], prof[160], cal[160];
	for (int t = 0; t < 2; t++) {
		gv_meas_t m;
		fake_meas(&m, t ? 8 : 2, &p);
		snprintf(meas[t], sizeof meas[t], "%s/compute_tp%d.h5", tmp_dir, t ? 8 : 2);
		err_t e = {0};
		assert_int_equal(gv_meas_write(meas[t], &m, &e), 0);
		gv_meas_free(&m);
	}
	snprintf(prof, sizeof prof, "%s/profile.csv", tmp_dir);
	snprintf(cal, sizeof cal, "%s/compute-H200.ini", tmp_dir);
	const char *a1[] = {"kvsim", "calibrate", "compute", "profile", meas[0], meas[1],
	                    "--model", "Llama-3-8B", "-o", prof, NULL};
	cli_result_t r = cli_run_argv(k, NULL, tmp_dir, a1);
	if (r.status)
		fail_msg("%s", r.err);
	cli_result_free(&r);
	const char *a2[] = {"kvsim", "calibrate", "compute", "fit", prof, "--gpu", "H200",
	                    "-o", cal, NULL};
	r = cli_run_argv(k, NULL, tmp_dir, a2);
	if (r.status)
		fail_msg("%s", r.err);
	cli_result_free(&r);
	mdl_compute_params_t got = mdl_compute_params_default;
	err_t e = {0};
	assert_int_equal(mdl_calib_load(cal, &got, &e), 0);
	assert_true(fabs(got.gemm_mfu / p.gemm_mfu - 1) < 0.02);
	assert_true(fabs(got.weight_mbu / p.weight_mbu - 1) < 0.02);
	assert_true(fabs(got.gemm_kernel_ns / p.gemm_kernel_ns - 1) < 0.1);
	assert_true(got.gemm_tile_tokens == 128);
	/* not measured: kept from the base (the built-in defaults) */
	assert_true(fabs(got.small_kernel_ns - mdl_compute_params_default.small_kernel_ns) < 0.5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kvreplay_rows_become_profile_rows_with_their_tp),
	    cmocka_unit_test(test_harness_measurements_fit_through_the_cli),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}
