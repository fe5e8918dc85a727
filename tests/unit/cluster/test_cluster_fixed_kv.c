/* Admission reserves the per-sequence KV of models whose layers differ
 * (cluster_params_t.fixed_blocks_per_seq, set by the run from the model):
 * the blocks are held while a request runs and freed with its others, and a
 * pool fits exactly as many sequences as the hand count says.
 *
 * Hand counts at block_tokens = 16, tp = 1, from the specs' published
 * configs (models/llm/):
 *   Jamba-1.5-Mini: 32 layers, attention at i % 8 == 4 (4 layers), 28
 *     Mamba layers. Paged: 4 x 2 x 8 kv heads x 128 x 2 B = 16384 B per
 *     token, a block 262144 B. State per Mamba layer: conv 8192 x 3 x 2 =
 *     49152 B + SSM 8192 x 16 x 2 = 262144 B = 311296 B; x 28 = 8716288 B =
 *     33.25 blocks -> 34.
 *   Gemma-3-27B: 62 layers, global at (i + 1) % 6 == 0 (10 layers), 52
 *     sliding of window 1024. A layer's token: 2 x 16 x 128 x 2 = 8192 B;
 *     paged 81920 B per token, a block 1310720 B. Windows: 52 x 1024 x 8192
 *     = 436207616 B = 332.8 blocks -> 333. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/test_main.h"

#include "sim/run/sim.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/toy_cluster.h"

#define JAMBA_FIXED 34u
#define GEMMA3_FIXED 333u

/* ---- the cluster alone ---------------------------------------------------- */

/* A running request holds its context's blocks plus the fixed ones, all of
 * the fixed ones private; at completion they all go back. */
static void test_admission_holds_fixed_blocks_and_frees_them(void **st)
{
	(void)st;
	toy_t t;
	cluster_params_t p = toy_params(SCHED_VLLM);
	p.fixed_blocks_per_seq = 5;
	toy_start(&t, &p);
	uint64_t b[2] = {11, 12};
	/* 8-token prompt: 2 shared prompt blocks, no private context block */
	assert_int_equal(cluster_submit(&t.cl, 0, 1, 8, 3, b, 2), 0);
	const sim_inst_t *in = &t.cl.inst[0];
	assert_int_equal(in->n_run, 1);
	assert_int_equal(in->run[0]->fixed, 5);
	assert_int_equal(kv_used_private(in->kv), 5);
	assert_int_equal(kv_used(in->kv), 2 + 5);
	assert_int_equal(cluster_check(&t.cl), 0);
	assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
	assert_int_equal(t.cl.n_live, 0);
	assert_int_equal(kv_used_private(in->kv), 0);
	toy_free(&t);
}

/* Two requests that outgrow the pool: the one preempted gives its fixed
 * blocks back and takes them again when readmitted; the accounting holds at
 * every step and nothing is left private at the end. Pool 20 blocks of 4
 * tokens: each holds 2 + 5 at admission (14) and wants 6 + 5 = 11 at its
 * last token (8 + 16 tokens), so both cannot finish side by side. */
static void test_preemption_frees_fixed_blocks(void **st)
{
	(void)st;
	toy_t t;
	cluster_params_t p = toy_params(SCHED_VLLM);
	p.fixed_blocks_per_seq = 5;
	p.kv_blocks = 20;
	toy_start(&t, &p);
	uint64_t a[2] = {21, 22}, b[2] = {31, 32};
	assert_int_equal(cluster_submit(&t.cl, 0, 1, 8, 16, a, 2), 0);
	assert_int_equal(cluster_submit(&t.cl, 0, 2, 8, 16, b, 2), 0);
	const sim_inst_t *in = &t.cl.inst[0];
	uint32_t most = 0, both = 0;
	for (int64_t until = 0; t.cl.n_live; until += 50) {
		assert_int_equal(ev_engine_run(t.eng, until), 0);
		assert_int_equal(cluster_check(&t.cl), 0);
		uint32_t f = 0;
		for (uint32_t k = 0; k < in->n_run; k++)
			f += in->run[k]->fixed;
		assert_int_equal(f, 5 * in->n_run);
		most = kv_used(in->kv) > most ? kv_used(in->kv) : most;
		both |= in->n_run == 2;
		assert_true(until < 1000000000);
	}
	assert_true(both);
	assert_true(most <= 20);
	assert_int_equal(kv_used_private(in->kv), 0);
	assert_int_equal(t.res.n_req, 2);
	for (size_t i = 0; i < t.res.n_req; i++) {
		assert_int_equal(t.res.req[i].status, REQ_COMPLETED);
		assert_int_equal(t.res.req[i].output_tokens, 16);
	}
	/* 24 tokens of context are 6 blocks + 5: they fit once the other is gone */
	assert_true(cluster_fits(&t.cl, 8, 16));
	assert_false(cluster_fits(&t.cl, 8, 60)); /* 17 + 5 > 20 */
	toy_free(&t);
}

static void test_btb_refuses_fixed_blocks(void **st)
{
	(void)st;
	cluster_params_t p = toy_params(SCHED_BTB);
	p.fixed_blocks_per_seq = 1;
	sim_results_t res = {0};
	toy_record_into(&p, &res);
	ev_engine_t *eng = ev_engine_new(64);
	cluster_t cl;
	assert_int_equal(cluster_init(&cl, &p, eng), KS_EINPUT);
	cluster_free(&cl);
	ev_engine_free(eng);
}

/* ---- whole runs: the model sets the count ---------------------------------- */

/* n requests of one 16-token block each, out_len 1 (the prefill's token
 * ends them), all arriving at 0, on one instance of model under mode with
 * a pool of `blocks`. Request 0 starts the instance alone; returns how many
 * of the others were admitted together with request 1 (at the end of the
 * first iteration, when request 0 has left). */
static int admitted_at_once(const char *model, const char *mode, uint32_t blocks, int n)
{
	char m[80], k[80], s[80];
	snprintf(m, sizeof m, "model.name=%s", model);
	snprintf(k, sizeof k, "cluster.kv_blocks=%u", blocks);
	snprintf(s, sizeof s, "scheduler.mode=%s", mode);
	const char *sets[] = {m, k, s, "gpu.name=H200", "cluster.nodes=1",
			      "cluster.gpus_per_node=1", "cluster.tp=1", "kvcache.block_tokens=16"};
	sf_prefix_t g = sf_prefix(n, 0, 0x100, 0x9000, 1);
	sim_source_t src = {sf_prefix_next, &g, "gen:test"};
	sim_results_t r = sf_run_source(NULL, sets, (int)(sizeof sets / sizeof sets[0]), &src);
	assert_int_equal(r.n_req, (size_t)n);
	int at_once = 0;
	int64_t q1 = sf_request(r.req, r.n_req, 1)->queue_ns;
	assert_true(q1 > 0);
	for (size_t i = 0; i < r.n_req; i++) {
		assert_int_equal(r.req[i].status, REQ_COMPLETED);
		at_once += r.req[i].queue_ns == q1;
	}
	sim_results_free(&r);
	return at_once;
}

/* vLLM: a request fits when its blocks (1 + fixed) are free. */
static void test_jamba_pool_of_three_admits_three_not_four(void **st)
{
	(void)st;
	assert_int_equal(admitted_at_once("Jamba-1.5-Mini", "vllm", 3 * (1 + JAMBA_FIXED), 5), 3);
	assert_int_equal(admitted_at_once("Jamba-1.5-Mini", "vllm", 3 * (1 + JAMBA_FIXED) - 1, 5),
			 2);
}

static void test_gemma3_pool_of_two_admits_two_not_three(void **st)
{
	(void)st;
	assert_int_equal(admitted_at_once("Gemma-3-27B", "vllm", 2 * (1 + GEMMA3_FIXED) - 1, 4), 1);
	assert_int_equal(admitted_at_once("Gemma-3-27B", "vllm", 2 * (1 + GEMMA3_FIXED), 4), 2);
}

/* SGLang (PrefillAdder.add_one_req): request k (from 0) is admitted while
 * 35 blocks x 16 + its 1 output token < (pool - 35 k) x 16 - k (the k
 * tokens reserved by those before it): at 106 blocks k = 2 passes (574 >
 * 561), at 105 it does not (558). */
static void test_jamba_sglang_admission_counts_fixed_blocks(void **st)
{
	(void)st;
	assert_int_equal(admitted_at_once("Jamba-1.5-Mini", "sglang", 106, 5), 3);
	assert_int_equal(admitted_at_once("Jamba-1.5-Mini", "sglang", 105, 5), 2);
}

/* Setup: the run's own message, or 0. */
static int setup_error(const char *model, const char *extra, uint32_t blocks, char *msg,
		       size_t cap)
{
	char m[80], k[80];
	snprintf(m, sizeof m, "model.name=%s", model);
	snprintf(k, sizeof k, "cluster.kv_blocks=%u", blocks);
	const char *sets[] = {m, k, extra, "gpu.name=H200", "cluster.nodes=1",
			      "cluster.gpus_per_node=1", "cluster.tp=1", "kvcache.block_tokens=16"};
	cfg_t *cfg = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(NULL, sets, (int)(sizeof sets / sizeof sets[0]), &cfg, &e),
			 0);
	sf_prefix_t g = sf_prefix(1, 0, 0x100, 0x9000, 1);
	sim_source_t src = {sf_prefix_next, &g, "gen:test"};
	sim_results_t r = {0};
	int rc = sim_run(cfg, &(sim_run_opts_t){.source = &src}, &r, &e);
	size_t n = strlen(e.msg) < cap ? strlen(e.msg) : cap - 1;
	memcpy(msg, e.msg, n);
	msg[n] = 0;
	if (!rc)
		sim_results_free(&r);
	cli_config_free(cfg);
	return rc;
}

static void test_fixed_part_filling_the_pool_is_a_setup_error(void **st)
{
	(void)st;
	char msg[1024];
	assert_int_equal(setup_error("Jamba-1.5-Mini", "scheduler.mode=vllm", JAMBA_FIXED, msg,
				     sizeof msg),
			 KS_EINPUT);
	assert_non_null(strstr(msg, "takes 34 blocks of the 34-block pool"));
	assert_int_equal(setup_error("Jamba-1.5-Mini", "scheduler.mode=vllm", JAMBA_FIXED + 1, msg,
				     sizeof msg),
			 0);
	assert_int_equal(setup_error("Gemma-3-27B", "scheduler.mode=sglang", GEMMA3_FIXED, msg,
				     sizeof msg),
			 KS_EINPUT);
	assert_non_null(strstr(msg, "takes 333 blocks"));
}

static void test_btb_mode_refuses_hybrid_model_at_setup(void **st)
{
	(void)st;
	char msg[1024];
	assert_int_equal(setup_error("Jamba-1.5-Mini", "scheduler.mode=btb", 1000, msg, sizeof msg),
			 KS_EINPUT);
	assert_non_null(strstr(msg, "mode = btb"));
	/* a full-attention model still runs under btb */
	assert_int_equal(setup_error("Llama-3-8B", "scheduler.mode=btb", 1000, msg, sizeof msg), 0);
}

/* Decode segments of hybrid models (their closed form cut at window
 * crossings, their fixed blocks held) give step mode's rows to the
 * nanosecond under max() (compute.roofline_q = 0): the default traffic for
 * 20 s on two H200 instances at TP 1, both schedulers. */
static void test_hybrid_segment_runs_equal_step_runs(void **st)
{
	(void)st;
	static const char *const models[] = {"model.name=Gemma-3-27B", "model.name=Jamba-1.5-Mini"};
	static const char *const modes[] = {"scheduler.mode=vllm", "scheduler.mode=sglang"};
	for (int k = 0; k < 4; k++) {
		sim_results_t r[2];
		for (int d = 0; d < 2; d++) {
			const char *sets[] = {models[k / 2], modes[k % 2], "gpu.name=H200",
					      "cluster.nodes=1", "cluster.gpus_per_node=2", "cluster.tp=1",
					      "trace.duration_s=20", "compute.roofline_q=0",
					      d ? "scheduler.decode=segment" : "scheduler.decode=step"};
			r[d] = sf_run(NULL, sets, (int)(sizeof sets / sizeof sets[0]));
		}
		assert_true(r[0].n_req > 50);
		assert_int_equal(r[0].n_req, r[1].n_req);
		for (size_t i = 0; i < r[0].n_req; i++) {
			const res_request_t *a = &r[0].req[i], *b = &r[1].req[i];
			assert_int_equal(a->id, b->id);
			assert_int_equal(a->status, b->status);
			assert_int_equal(a->ttft_ns, b->ttft_ns);
			assert_int_equal(a->tpot_ns, b->tpot_ns);
			assert_int_equal(a->tbt_p90_ns, b->tbt_p90_ns);
			assert_int_equal(a->e2e_ns, b->e2e_ns);
			assert_int_equal(a->queue_ns, b->queue_ns);
			assert_int_equal(a->output_tokens, b->output_tokens);
			assert_int_equal(a->tok_recomputed, b->tok_recomputed);
		}
		sim_results_free(&r[0]);
		sim_results_free(&r[1]);
	}
}

TEST_MAIN(cmocka_unit_test(test_admission_holds_fixed_blocks_and_frees_them),
	  cmocka_unit_test(test_preemption_frees_fixed_blocks),
	  cmocka_unit_test(test_btb_refuses_fixed_blocks),
	  cmocka_unit_test(test_jamba_pool_of_three_admits_three_not_four),
	  cmocka_unit_test(test_gemma3_pool_of_two_admits_two_not_three),
	  cmocka_unit_test(test_jamba_sglang_admission_counts_fixed_blocks),
	  cmocka_unit_test(test_fixed_part_filling_the_pool_is_a_setup_error),
	  cmocka_unit_test(test_btb_mode_refuses_hybrid_model_at_setup),
	  cmocka_unit_test(test_hybrid_segment_runs_equal_step_runs))
