/* Measured-profile tables (models/mdl_prof.h): the CSV reader, log-linear
 * interpolation, and compute.model = profile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mdl.h"
#include "models/mdl_prof.h"
#include "tests/fixtures/mdl_fixture.h"
#include "tests/fixtures/tmp_fixture.h"

static void assert_near(double got, double want)
{
	if (fabs(got - want) > 1e-9 * fmax(1, fabs(want)))
		fail_msg("got %.12g, want %.12g", got, want);
}

static void test_curve_is_exact_at_points_and_log_linear_between(void **st)
{
	(void)st;
	static mdl_curve_t c;
	c.n = 3;
	c.x[0] = 1, c.x[1] = 4, c.x[2] = 16;
	c.y[0] = 10, c.y[1] = 30, c.y[2] = 70;
	for (size_t i = 0; i < c.n; i++)
		assert_near(mdl_curve_at(&c, c.x[i]), c.y[i]);
	/* the geometric midpoint is the arithmetic mean of the two times */
	assert_near(mdl_curve_at(&c, 2), 20);
	assert_near(mdl_curve_at(&c, 8), 50);
	/* a quarter of the way in log: 4 * 4^0.25 */
	assert_near(mdl_curve_at(&c, 4 * sqrt(2)), 40);
	/* below the table its first time; above it, in proportion */
	assert_near(mdl_curve_at(&c, 0.5), 10);
	assert_near(mdl_curve_at(&c, 32), 140);
}

/* Two rows at tp 1, tokens 1 and 4 of a tiny layer (hidden 64, 4 heads of
 * 16, 2 KV heads, intermediate 128), and one at tp 2. Times in ms. */
static const char PROFILE[] =
    "time_stats.input_layernorm.median,time_stats.attn_pre_proj.median,"
    "time_stats.attn_rope.median,time_stats.attn_post_proj.median,"
    "time_stats.post_attention_layernorm.median,time_stats.mlp_up_proj.median,"
    "time_stats.mlp_act.median,time_stats.mlp_down_proj.median,time_stats.add.median,"
    "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,"
    "num_tensor_parallel_workers\n"
    "0.001,0.002,0.001,0.002,0.001,0.004,0.001,0.002,0.001,4,2,64,128,100,True,1,1\n"
    "0.002,0.004,0.002,0.004,0.002,0.008,0.002,0.004,0.002,4,2,64,128,100,True,4,1\n"
    "0.001,0.001,0.001,0.001,0.001,0.002,0.001,0.001,0.001,4,2,64,128,100,True,4,2\n";

static const char ALLREDUCE[] =
    ",time_stats.all_reduce.median,rank,num_workers,size,devices_per_node\n"
    "0,0.010,0,2,1024,8\n"
    "1,0.020,0,2,4096,8\n"
    "2,0.030,0,2,4096,8\n"
    "3,0.500,0,16,4096,8\n";

static void test_profile_rows_sum_their_operators(void **st)
{
	(void)st;
	mdl_prof_t p = {0};
	err_t e = {0};
	assert_int_equal(mdl_prof_read_string(&p, "mlp.csv", PROFILE, &e), 0);
	assert_int_equal(p.n_row, 3);
	/* qkv + o + up + down; norms + rope + act + add */
	assert_near(p.row[0].gemm_ns, (0.002 + 0.002 + 0.004 + 0.002) * 1e6);
	assert_near(p.row[0].small_ns, 5 * 0.001 * 1e6);
	assert_int_equal(p.row[1].tokens, 4);
	assert_int_equal(p.row[2].tp, 2);
	assert_int_equal(p.row[2].n_expanded_embd, 128);
	assert_int_equal(mdl_prof_read_string(&p, "ar.csv", ALLREDUCE, &e), 0);
	/* the 16-worker row spans nodes: not the NVLink all-reduce, left out */
	assert_int_equal(p.n_ar, 3);
	assert_near(p.ar[1].ns, 20000);
	mdl_prof_free(&p);
}

static void test_bad_profiles_name_file_line_and_column(void **st)
{
	(void)st;
	mdl_prof_t p = {0};
	err_t e = {0};
	assert_int_equal(mdl_prof_read_string(&p, "x.csv", "a,b\n1,2\n", &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "x.csv:1: attn_pre_proj: missing column"));
	char *bad = strdup(PROFILE);
	char *two = strstr(bad, "0.008"); /* line 3's mlp_up_proj */
	assert_non_null(two);
	memcpy(two, "abcde", 5);
	assert_int_equal(mdl_prof_read_string(&p, "y.csv", bad, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "y.csv:3:"));
	assert_non_null(strstr(e.msg, "mlp_up_proj"));
	assert_int_equal(p.n_row, 0); /* all or nothing */
	free(bad);
	assert_int_equal(mdl_prof_read(&p, "/nonexistent/profile.csv", &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "/nonexistent/profile.csv"));
	mdl_prof_free(&p);
}

static void test_written_rows_read_back(void **st)
{
	(void)st;
	mdl_prof_row_t rows[2] = {{1, 8, 64, 8, 8192, 28672, 123456.0, 7890.0},
	                          {4, 512, 64, 8, 8192, 28672, 2.5e6, 1.25e5}};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(mdl_prof_write_rows(f, rows, 2), 0);
	fclose(f);
	mdl_prof_t p = {0};
	err_t e = {0};
	assert_int_equal(mdl_prof_read_string(&p, "w.csv", buf, &e), 0);
	assert_int_equal(p.n_row, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(p.row[i].tp, rows[i].tp);
		assert_int_equal(p.row[i].tokens, rows[i].tokens);
		assert_int_equal(p.row[i].n_kv_head, 8);
		assert_true(fabs(p.row[i].gemm_ns / rows[i].gemm_ns - 1) < 1e-6);
		assert_true(fabs(p.row[i].small_ns / rows[i].small_ns - 1) < 1e-6);
	}
	mdl_prof_free(&p);
	free(buf);
}

static void test_profile_model_interpolates_the_layer_table(void **st)
{
	(void)st;
	char mlp[128], ar[128];
	snprintf(mlp, sizeof mlp, "%s/mlp.csv", tmp_dir);
	snprintf(ar, sizeof ar, "%s/ar.csv", tmp_dir);
	tmp_write(mlp, PROFILE);
	tmp_write(ar, ALLREDUCE);
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_toy(&hw, &m, 3);
	mdl_compute_params_t p = mdl_compute_params_default;
	p.model = MDL_MODEL_PROFILE;
	p.gemm_kernel_ns = 0;
	p.iter_overhead_ns = 0;
	snprintf(p.profile, sizeof p.profile, "%s", mlp);
	static mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &p, &e), 0);
	/* tp 1 rows: 1 token 15 us, 4 tokens 30 us per layer */
	assert_int_equal(c.layer.n, 2);
	uint32_t n = 4, cached = 0;
	mdl_batch_t b = {.n_prefill = 1, .prefill_new = &n, .prefill_cached = &cached};
	mdl_iter_cost_t r;
	mdl_iter_cost(&c, &b, &r);
	assert_near(r.t_fixed_ns, 3 * 30000.0);
	n = 2; /* halfway in log */
	mdl_iter_cost(&c, &b, &r);
	assert_near(r.t_fixed_ns, 3 * 22500.0);
	/* attention and the LM head still come from the roofline terms */
	assert_true(r.t_attn_ns > 0 && r.t_gemm_ns > 0);

	/* tp 2: its own rows, and the all-reduce from its table: 4 tokens are
	 * 4*64*2 = 512 bytes, below the smallest size: its 10 us, twice a layer */
	snprintf(p.ar_profile, sizeof p.ar_profile, "%s", ar);
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 2, &p, &e), 0);
	assert_int_equal(c.layer.n, 1);
	assert_int_equal(c.arc.n, 2);
	assert_near(c.arc.y[1], 25000); /* two rows at 4096 bytes, averaged */
	n = 4;
	mdl_iter_cost(&c, &b, &r);
	assert_near(r.t_comm_ns, 3 * 2 * 10000.0);

	/* a tp or shape the table lacks is an error, not a silent fallback */
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 4, &p, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "no rows for tp 4"));
	m.intermediate = 256;
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &p, &e), KS_EINPUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_curve_is_exact_at_points_and_log_linear_between),
	    cmocka_unit_test(test_profile_rows_sum_their_operators),
	    cmocka_unit_test(test_bad_profiles_name_file_line_and_column),
	    cmocka_unit_test(test_written_rows_read_back),
	    cmocka_unit_test(test_profile_model_interpolates_the_layer_table),
	};
	return cmocka_run_group_tests(tests, tmp_group_setup, tmp_group_teardown);
}
