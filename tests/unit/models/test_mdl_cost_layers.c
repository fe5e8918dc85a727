/* The cost model reads KV per layer kind (models/mdl_cost.c header): a
 * sliding layer attends to and reads at most its window, a state layer reads
 * and writes its state once per sequence and iteration, a full layer as
 * before. Each case is worked by hand from the published configs and the
 * cost terms (t_attn = attention FLOPs / (tp x flops x attn_prefill_eff),
 * t_kv = KV bytes / (hbm_bw x attn_decode_eff)):
 *   Gemma-3-27B: 32 heads of 128, 10 full and 52 sliding layers of window
 *     1024, 8192 B of KV per token and layer (16 KV heads x 128 x 2 x 2 B).
 *   Jamba-1.5-Mini: 4 attention layers (4096 B per token and layer: 8 KV
 *     heads x 128 x 2 x 2 B) and 28 Mamba layers of 311296 B of state each,
 *     8716288 B a sequence. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/fixtures/mdl_fixture.h"
#include "tests/fixtures/test_main.h"

#define GEMMA_FULL 10.0
#define GEMMA_SW 52.0
#define GEMMA_TOK 8192.0 /* bytes per token and layer */
#define JAMBA_ATTN 4.0
#define JAMBA_TOK 4096.0
#define JAMBA_STATE 8716288.0 /* bytes per sequence, all Mamba layers */

static void init(mdl_compute_t *c, const char *llm, uint32_t tp)
{
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_builtin("H100-SXM", &hw, llm, &m);
	err_t e = {0};
	assert_int_equal(mdl_compute_init(c, &hw, &m, tp, &mdl_compute_params_default, &e), 0);
}

static double want_attn(const mdl_compute_t *c, double flops)
{
	return flops / c->tp / (c->hw.flops_bf16 * c->p.attn_prefill_eff) * 1e9;
}

static double want_kv(const mdl_compute_t *c, double bytes)
{
	return bytes / (c->hw.hbm_bw * c->p.attn_decode_eff) * 1e9;
}

static void near(double got, double want)
{
	if (!(fabs(got - want) <= 1e-12 * fabs(want) + 1e-9))
		fail_msg("got %.17g, want %.17g", got, want);
}

/* The total from the breakdown: the q-norm of the two sides plus the rest,
 * rounded up (mdl.h mdl_iter_cost_t). */
static int64_t total_of(const mdl_compute_t *c, const mdl_iter_cost_t *r)
{
	double hi = fmax(r->t_compute_ns, r->t_memory_ns), lo = fmin(r->t_compute_ns, r->t_memory_ns);
	double q = c->p.roofline_q, roof = hi * pow(1 + pow(lo / hi, q), 1 / q);
	return (int64_t)ceil(roof + r->t_fixed_ns + r->t_comm_ns + r->t_overhead_ns);
}

static int64_t decode(const mdl_compute_t *c, uint32_t n, uint32_t ctx, mdl_iter_cost_t *r)
{
	uint32_t cx[8];
	for (uint32_t i = 0; i < n; i++)
		cx[i] = ctx;
	mdl_batch_t b = {.n_decode = n, .decode_ctx = cx};
	return mdl_iter_cost(c, &b, r);
}

/* Below the window every layer attends to the whole context: 4 sequences
 * of 500 tokens have 4 x 501 pairs and read 4 x 500 + write 4 tokens in all
 * 62 layers. */
static void test_gemma3_decode_below_window_reads_whole_context(void **st)
{
	(void)st;
	static mdl_compute_t c;
	init(&c, "Gemma-3-27B", 1);
	mdl_iter_cost_t r;
	int64_t t = decode(&c, 4, 500, &r);
	near(r.t_attn_ns, want_attn(&c, 4.0 * 32 * 128 * (GEMMA_FULL + GEMMA_SW) * 4 * 501));
	near(r.t_kv_ns, want_kv(&c, GEMMA_TOK * (GEMMA_FULL + GEMMA_SW) * (4 * 500 + 4)));
	assert_int_equal(t, total_of(&c, &r));
	assert_int_equal(mdl_decode_step_ns(&c, 4, 500), t);
}

/* Above it a sliding layer sees 1024 keys (its query and 1023 cached) and
 * reads 1023 tokens, whatever the context; the full layers all 5001. */
static void test_gemma3_decode_above_window_reads_window(void **st)
{
	(void)st;
	static mdl_compute_t c;
	init(&c, "Gemma-3-27B", 1);
	mdl_iter_cost_t r, r2;
	int64_t t = decode(&c, 4, 5000, &r);
	near(r.t_attn_ns,
	     want_attn(&c, 4.0 * 32 * 128 * (GEMMA_FULL * 4 * 5001 + GEMMA_SW * 4 * 1024)));
	near(r.t_kv_ns, want_kv(&c, GEMMA_TOK * (GEMMA_FULL * (4 * 5000 + 4) +
	                                         GEMMA_SW * (4 * 1023 + 4))));
	assert_int_equal(t, total_of(&c, &r));
	assert_int_equal(mdl_decode_step_ns(&c, 4, 5000), t);
	/* 1000 tokens more of context cost the full layers only */
	decode(&c, 4, 6000, &r2);
	near(r2.t_kv_ns - r.t_kv_ns, want_kv(&c, GEMMA_TOK * GEMMA_FULL * 4 * 1000));
	/* the same model with every layer full reads 62 layers x 5001 */
	static mdl_compute_t f;
	mdl_llm_t m = c.llm;
	m.layer_kind = MDL_LAYER_FULL;
	m.full_period = m.full_offset = m.window = 0;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&f, &c.hw, &m, 1, &c.p, &e), 0);
	mdl_iter_cost_t rf;
	assert_true(decode(&f, 4, 5000, &rf) > t);
	near(rf.t_kv_ns, want_kv(&c, GEMMA_TOK * 62 * (4 * 5000 + 4)));
}

/* A prefill chunk of 500 tokens after 800 cached crosses the window: its
 * first 224 queries (positions 801..1024) see every position before them,
 * the other 276 see 1024 keys; it reads the 800 cached tokens in every
 * layer. After 2000 cached a chunk of 100 sees 1024 keys per query and a
 * sliding layer reads 1023 cached tokens. */
static void test_gemma3_prefill_chunk_crossing_window(void **st)
{
	(void)st;
	static mdl_compute_t c;
	init(&c, "Gemma-3-27B", 1);
	uint32_t n = 500, p = 800;
	mdl_batch_t b = {.n_prefill = 1, .prefill_new = &n, .prefill_cached = &p};
	mdl_iter_cost_t r;
	int64_t t = mdl_iter_cost(&c, &b, &r);
	double full = 500.0 * 800 + 500.0 * 501 / 2;
	double sw = 224.0 * 800 + 224.0 * 225 / 2 + 276.0 * 1024;
	near(r.t_attn_ns, want_attn(&c, 4.0 * 32 * 128 * (GEMMA_FULL * full + GEMMA_SW * sw)));
	near(r.t_kv_ns, want_kv(&c, GEMMA_TOK * (GEMMA_FULL + GEMMA_SW) * (800 + 500)));
	assert_int_equal(t, total_of(&c, &r));
	assert_int_equal(mdl_prefill_time_ns(&c, 500, 800), t);

	n = 100;
	p = 2000;
	mdl_iter_cost(&c, &b, &r);
	full = 100.0 * 2000 + 100.0 * 101 / 2;
	near(r.t_attn_ns,
	     want_attn(&c, 4.0 * 32 * 128 * (GEMMA_FULL * full + GEMMA_SW * 100 * 1024)));
	near(r.t_kv_ns,
	     want_kv(&c, GEMMA_TOK * (GEMMA_FULL * (2000 + 100) + GEMMA_SW * (1023 + 100))));
}

/* Jamba: attention over the context in its 4 attention layers only; each
 * sequence reads and writes its 8716288-byte state once. At tp 2 each GPU
 * holds half the KV heads and half the state (4358144 B). */
static void test_jamba_decode_reads_and_writes_state_once(void **st)
{
	(void)st;
	static mdl_compute_t c;
	init(&c, "Jamba-1.5-Mini", 1);
	mdl_iter_cost_t r;
	int64_t t = decode(&c, 3, 700, &r);
	near(r.t_attn_ns, want_attn(&c, 4.0 * 32 * 128 * JAMBA_ATTN * 3 * 701));
	near(r.t_kv_ns, want_kv(&c, JAMBA_TOK * JAMBA_ATTN * (3 * 700 + 3) + 2 * JAMBA_STATE * 3));
	assert_int_equal(t, total_of(&c, &r));
	/* the state term does not grow with the context */
	mdl_iter_cost_t r2;
	decode(&c, 3, 1700, &r2);
	near(r2.t_kv_ns - r.t_kv_ns, want_kv(&c, JAMBA_TOK * JAMBA_ATTN * 3 * 1000));

	static mdl_compute_t c2;
	init(&c2, "Jamba-1.5-Mini", 2);
	decode(&c2, 3, 700, &r);
	near(r.t_kv_ns, want_kv(&c2, JAMBA_TOK / 2 * JAMBA_ATTN * (3 * 700 + 3) +
	                                 2 * 4358144.0 * 3));
}

/* The study's linear model reads, per decode step, the window of a sliding
 * layer and the state of a state layer (once: the model has no write term). */
static void test_linear_model_reads_window_and_state(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_builtin("H100-SXM", &hw, "Gemma-3-27B", &m);
	mdl_compute_params_t p = mdl_compute_params_default;
	p.model = MDL_MODEL_LINEAR;
	static mdl_compute_t c;
	err_t e = {0};
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &p, &e), 0);
	mdl_iter_cost_t r;
	decode(&c, 2, 3000, &r);
	double act = (double)m.params_active * m.weight_bytes;
	near(r.bytes, act + GEMMA_TOK * (GEMMA_FULL * 2 * 3000 + GEMMA_SW * 2 * 1023));

	mf_builtin("H100-SXM", &hw, "Jamba-1.5-Mini", &m);
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 1, &p, &e), 0);
	decode(&c, 2, 3000, &r);
	act = (double)m.params_active * m.weight_bytes;
	near(r.bytes, act + JAMBA_TOK * JAMBA_ATTN * 2 * 3000 + JAMBA_STATE * 2);
}

TEST_MAIN(cmocka_unit_test(test_gemma3_decode_below_window_reads_whole_context),
          cmocka_unit_test(test_gemma3_decode_above_window_reads_window),
          cmocka_unit_test(test_gemma3_prefill_chunk_crossing_window),
          cmocka_unit_test(test_jamba_decode_reads_and_writes_state_once),
          cmocka_unit_test(test_linear_model_reads_window_and_state))
