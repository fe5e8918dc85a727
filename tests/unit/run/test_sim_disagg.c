/* Disaggregated prefill/decode (sim/run/sim_disagg.h): a hand scenario
 * whose times are computed here from the cost model and the network's
 * time rule, exact to the ns, for both handoff modes; conservation of the
 * KV bytes the handoffs move; resharding between pools of different TP;
 * the decode routers; and the configurations that are errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/mdl.h"
#include "sim/run/sim_params.h"
#include "tests/fixtures/sim_fixture.h"

#define B 16 /* block tokens of every scenario */

/* The default experiment, SF_NO_FRONTEND (engine times, by hand), sets. */
static int load(const char *const *sets, int n, cfg_t **cfg, err_t *e)
{
	const char *all[n + 1];
	all[0] = SF_NO_FRONTEND;
	for (int i = 0; i < n; i++)
		all[i + 1] = sets[i];
	return cli_load_config_ex(NULL, all, n + 1, CLI_DEFAULT_EXPERIMENT, NULL, cfg, e);
}

/* Runs the scenario; rc of the run, its message in e. */
static int run_rc(const char *const *sets, int n, sf_prefix_t *b, sim_results_t *r, err_t *e)
{
	cfg_t *cfg = NULL;
	int rc = load(sets, n, &cfg, e);
	if (rc)
		return rc;
	sim_source_t src = {sf_prefix_next, b, "burst"};
	rc = sim_run(cfg, &(sim_run_opts_t){.source = &src}, r, e);
	cli_config_free(cfg);
	return rc;
}

static sim_results_t run_ok(const char *const *sets, int n, sf_prefix_t *b)
{
	sim_results_t r;
	err_t e = {0};
	if (run_rc(sets, n, b, &r, &e))
		fail_msg("%s", e.msg);
	return r;
}

/* ns the network takes to move r bytes at rate bytes/s, alone on its
 * links (sim/net/net.h time rule: ceil(r/p - 1e-9 r/p), p in bytes/ns). */
static int64_t move_ns(uint64_t r, double rate)
{
	double d = (double)r / (rate / 1e9);
	d -= d * 1e-9;
	return (int64_t)ceil(d);
}

/* ---- the hand scenario ------------------------------------------------------ */

/* One request of 2048 prompt tokens and 2 output tokens at t = 0 on one
 * H100 prefill instance (TP4) and one H200 decode instance (TP4), nodes
 * apart, transfer engine ideal (no per-copy costs). */
static const char *hand_sets[] = {
	"gpu.name=H100-SXM",          "model.name=Llama-3-70B",     "cluster.nodes=2",
	"cluster.gpus_per_node=4",    "cluster.tp=4",               "cluster.disagg=true",
	"cluster.prefill_nodes=1",    "cluster.decode_nodes=1",     "cluster.decode_gpu=H200",
	"kvcache.block_tokens=16",    "kvcache.transfer_engine=ideal", "scheduler.decode=step",
	"scheduler.ttft=first_token", NULL, /* cluster.handoff */
};
#define HAND_N ((int)(sizeof hand_sets / sizeof hand_sets[0]))

typedef struct hand {
	int64_t prefill, decode; /* the prefill iteration, the first decode step */
	int64_t decode0;         /* a decode step on the prompt alone (ttft = prefill_end) */
	uint64_t kv_bytes;       /* the prompt's KV at the prefill TP */
	uint32_t layers;
	double nic_bw;
	int64_t nic_lat;
} hand_t;

/* The pieces of the hand computation, from the specs and the cost model. */
static hand_t hand_pieces(void)
{
	cfg_t *cfg = NULL;
	err_t e = {0};
	const char *sets[HAND_N];
	memcpy(sets, hand_sets, sizeof sets);
	sets[HAND_N - 1] = "cluster.handoff=after_prefill";
	if (load(sets, HAND_N, &cfg, &e))
		fail_msg("%s", e.msg);
	mdl_hw_t hw, hw_d;
	mdl_llm_t llm;
	mdl_compute_params_t cp;
	static sim_params_t sp; /* large */
	if (mdl_load_cfg(cfg, &hw, &llm, &cp, &e) || mdl_hw_builtin("H200", &hw_d, &e) ||
	    sim_params_fill(cfg, &sp, &e))
		fail_msg("%s", e.msg);
	sim_params_compute(&sp, &cp); /* the all-reduce the run's engine uses */
	cli_config_free(cfg);
	static mdl_compute_t cpre, cdec; /* large: not on the stack */
	if (mdl_compute_init(&cpre, &hw, &llm, 4, &cp, &e) ||
	    mdl_compute_init(&cdec, &hw_d, &llm, 4, &cp, &e))
		fail_msg("%s", e.msg);
	hand_t h = {0};
	uint32_t n_new = 2048, cached = 0, ctx = 2048 + 1; /* decode: prompt + first token */
	mdl_batch_t pre = {.n_prefill = 1, .prefill_new = &n_new, .prefill_cached = &cached};
	mdl_batch_t dec = {.n_decode = 1, .decode_ctx = &ctx};
	h.prefill = mdl_iter_time_ns(&cpre, &pre);
	h.decode = mdl_iter_time_ns(&cdec, &dec);
	ctx = 2048;
	h.decode0 = mdl_iter_time_ns(&cdec, &dec);
	/* 128 blocks of 16 tokens over the 4 GPUs of a prefill instance */
	h.kv_bytes = 128ull * mdl_kv_bytes_per_token_gpu(&llm, 4) * 4 * B;
	h.layers = llm.layers;
	h.nic_bw = hw.nic_bw;      /* the network is built from [gpu] */
	h.nic_lat = hw.nic_lat_ns; /* a path across nodes in one leaf: NIC up, NIC down */
	assert_true(h.prefill > 0 && h.decode > 0);
	return h;
}

static const res_request_t *hand_run_ttft(const char *mode, const char *ttft, sim_results_t *r)
{
	const char *sets[HAND_N];
	char m[64], t[64];
	memcpy(sets, hand_sets, sizeof sets);
	snprintf(m, sizeof m, "cluster.handoff=%s", mode);
	snprintf(t, sizeof t, "scheduler.ttft=%s", ttft);
	sets[HAND_N - 1] = m;
	sets[HAND_N - 2] = t;
	sf_prefix_t b = sf_prefix(1, 127, 1000, 9000, 2);
	*r = run_ok(sets, HAND_N, &b);
	assert_int_equal(r->n_req, 1);
	const res_request_t *q = &r->req[0];
	assert_int_equal(q->status, REQ_COMPLETED);
	assert_int_equal(q->instance, 0);
	assert_int_equal(q->decode_instance, 1);
	return q;
}

static const res_request_t *hand_run(const char *mode, sim_results_t *r)
{
	return hand_run_ttft(mode, "first_token", r);
}

/* after_prefill: the first token at the prefill's end (TTFT), the KV in 4
 * flows of a quarter each, one per NIC, then one decode step on the H200. */
static void test_after_prefill_ttft_and_second_token_by_hand(void **st)
{
	(void)st;
	hand_t h = hand_pieces();
	sim_results_t r;
	const res_request_t *q = hand_run("after_prefill", &r);
	int64_t xfer = h.nic_lat + move_ns(h.kv_bytes / 4, h.nic_bw);
	assert_int_equal(q->ttft_ns, h.prefill);
	assert_int_equal(q->handoff_wait_ns, xfer);
	assert_int_equal(q->e2e_ns, h.prefill + xfer + h.decode);
	assert_int_equal(q->tpot_ns, xfer + h.decode);
	uint64_t moved = 0;
	uint32_t flows = 0;
	for (size_t i = 0; i < r.n_xfer; i++)
		if (r.xfer[i].klass == XFER_HANDOFF) {
			assert_int_equal(r.xfer[i].path_kind, PATH_NET);
			assert_int_equal(r.xfer[i].start_ns, h.prefill);
			moved += r.xfer[i].bytes;
			flows++;
		}
	assert_int_equal(flows, 4);
	assert_int_equal(moved, h.kv_bytes);
	sim_results_free(&r);
}

/* layerwise: all but the last layer's share leaves with the prefill (t =
 * 0) and lands long before it ends; the last layer's share leaves at the
 * end, so the wait is that share alone on the NICs. */
static void test_layerwise_waits_only_for_the_last_layer_by_hand(void **st)
{
	(void)st;
	hand_t h = hand_pieces();
	sim_results_t r;
	const res_request_t *q = hand_run("layerwise", &r);
	uint64_t body = h.kv_bytes / h.layers * (h.layers - 1), tail = h.kv_bytes - body;
	assert_true(h.nic_lat + move_ns(body / 4, h.nic_bw) < h.prefill); /* the premise */
	int64_t xfer = h.nic_lat + move_ns(tail / 4, h.nic_bw);
	assert_int_equal(q->ttft_ns, h.prefill);
	assert_int_equal(q->handoff_wait_ns, xfer);
	assert_int_equal(q->e2e_ns, h.prefill + xfer + h.decode);
	uint64_t moved = 0, early = 0;
	for (size_t i = 0; i < r.n_xfer; i++)
		if (r.xfer[i].klass == XFER_HANDOFF) {
			moved += r.xfer[i].bytes;
			if (r.xfer[i].start_ns == 0)
				early += r.xfer[i].bytes;
		}
	assert_int_equal(moved, h.kv_bytes);
	assert_int_equal(early, body);
	sim_results_free(&r);
}

/* scheduler.ttft = prefill_end: TTFT at the prefill's end, and both tokens
 * from decode steps on the H200 once the KV has landed. */
static void test_prefill_end_rule_decodes_every_token_by_hand(void **st)
{
	(void)st;
	hand_t h = hand_pieces();
	sim_results_t r;
	const res_request_t *q = hand_run_ttft("after_prefill", "prefill_end", &r);
	int64_t xfer = h.nic_lat + move_ns(h.kv_bytes / 4, h.nic_bw);
	assert_int_equal(q->ttft_ns, h.prefill);
	assert_int_equal(q->handoff_wait_ns, xfer);
	assert_int_equal(q->e2e_ns, h.prefill + xfer + h.decode0 + h.decode);
	assert_int_equal(q->tpot_ns, h.decode);
	sim_results_free(&r);
}

/* ---- conservation and resharding --------------------------------------------- */

/* 24 requests 20 ms apart, 40 shared blocks and one own, 8 output tokens,
 * on 2 prefill instances of TP4 (one node) and 1 decode instance of TP8. */
static sim_results_t run_reshard_decode(const char *mode, const char *decode)
{
	char m[64], d[64];
	snprintf(m, sizeof m, "cluster.handoff=%s", mode);
	snprintf(d, sizeof d, "scheduler.decode=%s", decode);
	const char *sets[] = {"model.name=Llama-3-8B", "cluster.nodes=2", "cluster.gpus_per_node=8",
			      "cluster.tp=4",          "cluster.disagg=true",
			      "cluster.prefill_nodes=1", "cluster.decode_nodes=1",
			      "cluster.decode_tp=8",   "kvcache.block_tokens=16", m, d};
	sf_prefix_t b = sf_prefix(24, 40, 500, 7000, 8);
	b.gap_ns = 20000000;
	return run_ok(sets, (int)(sizeof sets / sizeof sets[0]), &b);
}

static sim_results_t run_reshard(const char *mode)
{
	return run_reshard_decode(mode, "segment");
}

static void check_conservation(const char *mode)
{
	sim_results_t r = run_reshard(mode);
	mdl_llm_t llm;
	err_t e = {0};
	if (mdl_llm_builtin("Llama-3-8B", &llm, &e))
		fail_msg("%s", e.msg);
	uint64_t block_bytes = mdl_kv_bytes_per_token_gpu(&llm, 4) * 4 * B, want = 0, got = 0;
	for (size_t i = 0; i < r.n_req; i++) {
		const res_request_t *q = &r.req[i];
		assert_int_equal(q->status, REQ_COMPLETED);
		assert_int_equal(q->decode_instance, 2);
		assert_true(q->instance == 0 || q->instance == 1);
		assert_true(q->handoff_wait_ns >= 0);
		want += (uint64_t)((q->input_tokens + B - 1) / B) * block_bytes;
	}
	uint32_t per_dst[8] = {0};
	for (size_t i = 0; i < r.n_xfer; i++) {
		const res_transfer_t *x = &r.xfer[i];
		if (x->klass != XFER_HANDOFF)
			continue;
		got += x->bytes;
		assert_int_equal(x->dst_instance, 2);
		/* flow f of 8: prefill GPU f * 4 / 8 of its instance, decode GPU f */
		uint32_t f = (uint32_t)(x->dst_gpu - 8);
		assert_true(f < 8);
		assert_int_equal(x->src_gpu, x->src_instance * 4 + (int32_t)(f / 2));
		per_dst[f]++;
	}
	assert_true(want > 0);
	assert_int_equal(got, want);
	for (int f = 1; f < 8; f++)
		assert_int_equal(per_dst[f], per_dst[0]); /* every decode GPU gets its share */
	sim_results_free(&r);
}

static void test_handoff_bytes_are_the_prompts_kv_after_prefill(void **st)
{
	(void)st;
	check_conservation("after_prefill");
}

static void test_handoff_bytes_are_the_prompts_kv_layerwise(void **st)
{
	(void)st;
	check_conservation("layerwise");
}

/* A request whose one output token comes from its prefill completes there:
 * no handoff, and layer-wise streaming sends nothing for it. */
static void test_single_token_requests_never_leave_the_prefill_pool(void **st)
{
	(void)st;
	const char *sets[] = {"model.name=Llama-3-8B", "cluster.nodes=2", "cluster.gpus_per_node=8",
			      "cluster.tp=4",          "cluster.disagg=true",
			      "cluster.prefill_nodes=1", "cluster.decode_nodes=1",
			      "kvcache.block_tokens=16", "cluster.handoff=layerwise"};
	sf_prefix_t b = sf_prefix(8, 40, 500, 7000, 1);
	b.gap_ns = 20000000;
	sim_results_t r = run_ok(sets, (int)(sizeof sets / sizeof sets[0]), &b);
	for (size_t i = 0; i < r.n_req; i++) {
		assert_int_equal(r.req[i].status, REQ_COMPLETED);
		assert_int_equal(r.req[i].decode_instance, -1);
		assert_int_equal(r.req[i].handoff_wait_ns, -1);
	}
	for (size_t i = 0; i < r.n_xfer; i++)
		assert_int_not_equal(r.xfer[i].klass, XFER_HANDOFF);
	sim_results_free(&r);
}

/* Decode segments on the decode pool give step mode's rows (cluster.h
 * DECODE_SEGMENT), handoffs landing mid-segment included. */
static void test_decode_segments_match_steps_under_disagg(void **st)
{
	(void)st;
	sim_results_t a = run_reshard_decode("layerwise", "step");
	sim_results_t b = run_reshard_decode("layerwise", "segment");
	assert_int_equal(a.n_req, b.n_req);
	for (size_t i = 0; i < a.n_req; i++) {
		const res_request_t *x = &a.req[i], *y = sf_request(b.req, b.n_req, a.req[i].id);
		assert_int_equal(x->ttft_ns, y->ttft_ns);
		assert_int_equal(x->e2e_ns, y->e2e_ns);
		assert_int_equal(x->tpot_ns, y->tpot_ns);
		assert_int_equal(x->tbt_p90_ns, y->tbt_p90_ns);
		assert_int_equal(x->handoff_wait_ns, y->handoff_wait_ns);
	}
	sim_results_free(&a);
	sim_results_free(&b);
}

/* ---- decode routing ----------------------------------------------------------- */

/* 16 requests 1 s apart (each done before the next) on one prefill and
 * two idle decode instances: every choice is a tie. */
static void decode_choices(const char *routing, const char *seed, int32_t out[16])
{
	char rs[64], ss[64];
	snprintf(rs, sizeof rs, "cluster.decode_routing=%s", routing);
	snprintf(ss, sizeof ss, "experiment.seed=%s", seed);
	const char *sets[] = {"model.name=Llama-3-8B", "cluster.nodes=3", "cluster.gpus_per_node=1",
			      "cluster.tp=1",          "cluster.disagg=true",
			      "cluster.prefill_nodes=1", "cluster.decode_nodes=2",
			      "kvcache.block_tokens=16", rs, ss};
	sf_prefix_t b = sf_prefix(16, 4, 100, 8000, 4);
	b.gap_ns = 1000000000;
	sim_results_t r = run_ok(sets, (int)(sizeof sets / sizeof sets[0]), &b);
	assert_int_equal(r.n_req, 16);
	for (int i = 0; i < 16; i++)
		out[i] = sf_request(r.req, r.n_req, (uint64_t)i)->decode_instance;
	sim_results_free(&r);
}

static void check_ties_at_random(const char *routing)
{
	int32_t a[16], b[16], c[16];
	decode_choices(routing, "1", a);
	decode_choices(routing, "1", b);
	decode_choices(routing, "2", c);
	int n1 = 0, n2 = 0, differ = 0;
	for (int i = 0; i < 16; i++) {
		assert_true(a[i] == 1 || a[i] == 2);
		assert_int_equal(a[i], b[i]); /* the seed decides */
		n1 += a[i] == 1;
		n2 += a[i] == 2;
		differ |= a[i] != c[i];
	}
	assert_true(n1 > 0 && n2 > 0); /* not by index */
	assert_true(differ);
}

static void test_least_loaded_breaks_ties_from_the_seeded_stream(void **st)
{
	(void)st;
	check_ties_at_random("least_loaded");
}

static void test_kv_capacity_breaks_ties_from_the_seeded_stream(void **st)
{
	(void)st;
	check_ties_at_random("kv_capacity");
}

/* 2 requests at once, long outputs: the second handoff sees the first
 * request decoding on one instance (or promised to it) and goes to the
 * other under both routers. */
static void check_spreads(const char *routing)
{
	char rs[64];
	snprintf(rs, sizeof rs, "cluster.decode_routing=%s", routing);
	const char *sets[] = {"model.name=Llama-3-8B", "cluster.nodes=3", "cluster.gpus_per_node=1",
			      "cluster.tp=1",          "cluster.disagg=true",
			      "cluster.prefill_nodes=1", "cluster.decode_nodes=2",
			      "kvcache.block_tokens=16", rs};
	sf_prefix_t b = sf_prefix(2, 4, 100, 8000, 200);
	sim_results_t r = run_ok(sets, (int)(sizeof sets / sizeof sets[0]), &b);
	assert_int_equal(r.n_req, 2);
	assert_int_not_equal(r.req[0].decode_instance, r.req[1].decode_instance);
	sim_results_free(&r);
}

static void test_decode_routers_spread_concurrent_requests(void **st)
{
	(void)st;
	check_spreads("least_loaded");
	check_spreads("kv_capacity");
}

/* ---- configurations that are errors ---------------------------------------- */

static void expect_error(const char *const *sets, int n, const char *needle)
{
	sf_prefix_t b = sf_prefix(1, 1, 1, 2, 2);
	sim_results_t r;
	err_t e = {0};
	int rc = run_rc(sets, n, &b, &r, &e);
	if (!rc)
		sim_results_free(&r);
	assert_int_not_equal(rc, 0);
	if (!strstr(e.msg, needle))
		fail_msg("error '%s' does not name '%s'", e.msg, needle);
}

static void test_disagg_without_a_decode_pool_is_an_error(void **st)
{
	(void)st;
	const char *a[] = {"cluster.nodes=2", "cluster.disagg=true", "cluster.prefill_nodes=2",
			   "cluster.decode_nodes=0"};
	expect_error(a, 4, "decode_nodes");
	const char *b[] = {"cluster.nodes=4", "cluster.disagg=true", "cluster.prefill_nodes=1",
			   "cluster.decode_nodes=1"};
	expect_error(b, 4, "must equal nodes");
	const char *c[] = {"cluster.decode_nodes=2"};
	expect_error(c, 1, "disagg = false");
	const char *d[] = {"cluster.nodes=2", "cluster.disagg=true", "cluster.prefill_nodes=1",
			   "cluster.decode_nodes=1", "scheduler.mode=sglang"};
	expect_error(d, 5, "mode = vllm");
	const char *f[] = {"cluster.nodes=2", "cluster.disagg=true", "cluster.prefill_nodes=1",
			   "cluster.decode_nodes=1", "cluster.decode_tp=3"};
	expect_error(f, 5, "decode_tp");
	const char *g[] = {"cluster.nodes=2", "cluster.disagg=true", "cluster.prefill_nodes=1",
			   "cluster.decode_nodes=1", "cluster.decode_gpu=NoSuchGPU"};
	expect_error(g, 5, "decode_gpu");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_after_prefill_ttft_and_second_token_by_hand),
		cmocka_unit_test(test_layerwise_waits_only_for_the_last_layer_by_hand),
		cmocka_unit_test(test_prefill_end_rule_decodes_every_token_by_hand),
		cmocka_unit_test(test_handoff_bytes_are_the_prompts_kv_after_prefill),
		cmocka_unit_test(test_handoff_bytes_are_the_prompts_kv_layerwise),
		cmocka_unit_test(test_single_token_requests_never_leave_the_prefill_pool),
		cmocka_unit_test(test_decode_segments_match_steps_under_disagg),
		cmocka_unit_test(test_least_loaded_breaks_ties_from_the_seeded_stream),
		cmocka_unit_test(test_kv_capacity_breaks_ties_from_the_seeded_stream),
		cmocka_unit_test(test_decode_routers_spread_concurrent_requests),
		cmocka_unit_test(test_disagg_without_a_decode_pool_is_an_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
