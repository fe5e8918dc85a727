/* The deployment model and the original study's compatibility switches,
 * each alone: the linear compute model, the study's scheduler (FIFO with
 * head-of-line blocking, reservation without dedup, serial prefill before
 * decode), KV resident at admission, TTFT at the end of the prefill, copies
 * from uncomputed KV, copies without contention or charged to the target's
 * compute, transfer-engine costs, and the default that a miss is
 * recomputed. Times are checked to the nanosecond against hand computation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/mdl.h"
#include "sim/run/cli_common.h"
#include "sim/cluster/cluster.h"
#include "sim/run/sim.h"
#include "tests/fixtures/mdl_fixture.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/toy_cluster.h"
#include "sim/run/sim_schema.h"

/* ---- the linear compute model --------------------------------------------- */

static void test_linear_model_is_the_study_formula(void **st)
{
	(void)st;
	mdl_hw_t hw;
	mdl_llm_t m;
	mf_builtin("H100-SXM", &hw, "Llama-3-70B", &m);
	err_t e = {0};
	mdl_compute_params_t p = mdl_compute_params_default;
	p.model = MDL_MODEL_LINEAR;
	mdl_compute_t c;
	assert_int_equal(mdl_compute_init(&c, &hw, &m, 4, &p, &e), 0);
	double P = (double)m.params_active, node_flops = 4 * hw.flops_bf16 * 0.5;
	/* prefill: 2 P tokens / (n flops mfu), whatever is cached before it */
	int64_t want = (int64_t)ceil(2 * P * 65536 / node_flops * 1e9);
	assert_int_equal(mdl_prefill_time_ns(&c, 65536, 0), want);
	assert_int_equal(mdl_prefill_time_ns(&c, 65536, 60000), want);
	/* decode of b sequences: (P bytes + kv_per_token * context) / (n hbm mbu) */
	double kv = 2.0 * 80 * 8 * 128 * 2, bw = 4 * hw.hbm_bw * 0.8;
	int64_t dec = (int64_t)ceil((P * 2 + kv * 3 * 1000) / bw * 1e9);
	assert_int_equal(mdl_decode_step_ns(&c, 3, 1000), dec);
	/* a mixed iteration pays both */
	uint32_t pn = 256, pc = 0, dc[2] = {1000, 3000};
	mdl_batch_t b = {1, &pn, &pc, 2, dc};
	int64_t mix = (int64_t)ceil((2 * P * 256 / node_flops + (P * 2 + kv * 4000) / bw) * 1e9);
	assert_true(llabs(mdl_iter_time_ns(&c, &b) - mix) <= 1);
}

/* ---- the scheduler, driven directly ---------------------------------------- */

static void toy_init(toy_t *t, int mode, int resident, int ttft_end, uint64_t resv)
{
	cluster_params_t p = toy_params(mode);
	p.resident_at_admission = resident;
	p.ttft_prefill_end = ttft_end;
	p.resv_tokens_cap = resv;
	toy_start(t, &p);
}

static const res_request_t *by_id(const sim_results_t *c, uint64_t id)
{
	return sf_request(c->req, c->n_req, id);
}

/* A and B share a 4-block prefix; C has its own; 16-token prompts, 2 output
 * tokens, all at t = 0; the reservation (40 tokens) holds two requests. */
static void submit_abc(toy_t *t)
{
	uint64_t ab[4] = {11, 12, 13, 14}, cc[4] = {21, 22, 23, 24};
	sim_req_t *r;
	assert_int_equal(cluster_enqueue(&t->cl, 0, 1, 16, 2, ab, 4, &r), 0);
	assert_int_equal(cluster_enqueue(&t->cl, 0, 2, 16, 2, ab, 4, &r), 0);
	assert_int_equal(cluster_enqueue(&t->cl, 0, 3, 16, 2, cc, 4, &r), 0);
	assert_int_equal(cluster_kick(&t->cl, 0), 0);
}

static void test_study_scheduler_serial_prefill_hol_and_reservation(void **st)
{
	(void)st;
	toy_t t;
	toy_init(&t, SCHED_BTB, 1, 1, 40);
	submit_abc(&t);
	/* admission does not wait for the instance: A and B are admitted (and
	 * their blocks cached) at once, C waits behind the reservation */
	assert_int_equal(ev_engine_run(t.eng, 1), 0);
	assert_int_equal(t.cl.inst[0].n_run, 2);
	assert_int_equal(t.cl.inst[0].n_wait, 1);
	assert_int_equal(kv_used_shared(t.cl.inst[0].kv), 4 + 1 + 1);
	assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
	/* A: whole prefill 16 x 1000 = 16000. B (A's prefix resident at A's
	 * admission): 1 new token, 17000. C does not fit the reservation (36 +
	 * 18 > 40): two decode steps of A and B (200 each) come first, A and B
	 * finish at 17400, then C's prefill ends at 33400, TTFT at its end. */
	assert_int_equal(by_id(&t.res, 1)->ttft_ns, 16000);
	assert_int_equal(by_id(&t.res, 2)->ttft_ns, 17000);
	assert_int_equal(by_id(&t.res, 1)->e2e_ns, 17400);
	assert_int_equal(by_id(&t.res, 3)->ttft_ns, 33400);
	assert_int_equal(by_id(&t.res, 3)->e2e_ns, 33400 + 2 * 100);
	assert_int_equal(by_id(&t.res, 2)->tok_local, 15);
	/* the cache kept every prompt block plus one synthetic output block
	 * each (ceil(18 / 4) = 5 blocks per request), holding none */
	assert_int_equal(kv_used_shared(t.cl.inst[0].kv), 4 + 4 + 3);
	assert_int_equal(kv_evictable(t.cl.inst[0].kv), 11);
	assert_int_equal(t.cl.inst[0].resv_tokens, 0);
	toy_free(&t);
}

static void test_vllm_scheduler_batches_the_same_requests(void **st)
{
	(void)st;
	toy_t t;
	toy_init(&t, SCHED_VLLM, 0, 0, 0);
	submit_abc(&t);
	assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
	/* one iteration prefills all three (B waits for A's blocks: wait rule) */
	assert_true(by_id(&t.res, 1)->ttft_ns == by_id(&t.res, 3)->ttft_ns);
	assert_true(by_id(&t.res, 2)->ttft_ns > by_id(&t.res, 1)->ttft_ns);
	toy_free(&t);
}

/* A fresh vLLM-mode toy cluster given request 1 at t = 0: a 16-token
 * prompt of the four blocks ONE and out_len output tokens. */
static const uint64_t ONE[4] = {11, 12, 13, 14};
static void toy_submit_one(toy_t *t, int resident, int ttft_end, uint32_t out_len)
{
	toy_init(t, SCHED_VLLM, resident, ttft_end, 0);
	assert_int_equal(cluster_submit(&t->cl, 0, 1, 16, out_len, ONE, 4), 0);
}

static void test_resident_at_admission_makes_blocks_matchable_before_compute(void **st)
{
	(void)st;
	for (int res = 0; res < 2; res++) {
		toy_t t;
		toy_submit_one(&t, res, 0, 2);
		assert_int_equal(ev_engine_run(t.eng, 1), 0); /* mid-prefill */
		assert_int_equal(kv_match(t.cl.inst[0].kv, ONE, 4), res ? 4 : 0);
		assert_int_equal(kv_lookup(t.cl.inst[0].kv, ONE[0]), res ? KV_READY : KV_COMPUTING);
		assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
		assert_int_equal(kv_match(t.cl.inst[0].kv, ONE, 4), 4);
		toy_free(&t);
	}
}

static void test_ttft_at_prefill_end_takes_every_token_from_decode(void **st)
{
	(void)st;
	for (int end = 0; end < 2; end++) {
		toy_t t;
		toy_submit_one(&t, 0, end, 3);
		assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
		const res_request_t *r = by_id(&t.res, 1);
		/* prefill 16000; then 3 decode steps (TTFT excludes the first) or 2
		 * (the prefill's own token is the first) of 100 each */
		assert_int_equal(r->ttft_ns, 16000);
		assert_int_equal(r->e2e_ns, 16000 + (end ? 3 : 2) * 100);
		toy_free(&t);
	}
}

/* A queued compute job runs before the next iteration and delays it. */
static int job_seen;
static int on_job(void *ctx, uint32_t inst, uint64_t job)
{
	(void)ctx;
	(void)inst;
	job_seen = (int)job;
	return 0;
}

static void test_compute_job_runs_before_the_next_iteration(void **st)
{
	(void)st;
	toy_t t;
	toy_init(&t, SCHED_VLLM, 0, 0, 0);
	t.cl.p.on_job_done = on_job;
	uint64_t ab[4] = {11, 12, 13, 14};
	assert_int_equal(cluster_job_add(&t.cl, 0, 7, 5000), 0);
	assert_int_equal(cluster_job_add(&t.cl, 0, 8, 100), 0);
	assert_int_equal(cluster_job_cancel(&t.cl, 0, 8, NULL), 0);
	assert_int_equal(cluster_submit(&t.cl, 0, 1, 16, 2, ab, 4), 0);
	assert_int_equal(ev_engine_run(t.eng, INT64_MAX), 0);
	assert_int_equal(job_seen, 7);
	assert_int_equal(by_id(&t.res, 1)->ttft_ns, 5000 + 16000);
	toy_free(&t);
}

/* ---- whole runs -------------------------------------------------------------- */

static sim_results_t run_src(const char **sets, int n, sim_source_t *src)
{
	return sf_run_source(NULL, sets, n, src);
}

static void test_default_deployment_recomputes_a_miss(void **st)
{
	(void)st;
	sim_results_t r = run_src(NULL, 0, NULL);
	assert_true(sim_results_get(&r, "tok_fetched_peer") == 0);
	assert_true(sim_results_get(&r, "bytes_fg") == 0);
	sim_results_free(&r);
}

/* One request of a 40-block prefix (16-token blocks) at t = 0 on instance 0,
 * then one more per 250 ms on the others (after the 100 ms retry tick): replication full copies the
 * prefix of each routed request to every other instance. */
#define THREE_NODES                                                                                \
	"model.name=Llama-3-8B", "cluster.nodes=3", "cluster.gpus_per_node=1", "cluster.tp=1",     \
	    "kvcache.block_tokens=16", "policy.routing.name=round_robin",                          \
	    "policy.replication.name=full"

static sim_results_t run_three(const char *extra1, const char *extra2, int max)
{
	const char *sets[] = {THREE_NODES, extra1, extra2};
	sf_prefix_t f = sf_prefix(max, 40, 5000, 80000, 4);
	f.gap_ns = 250000000;
	sim_source_t src = {sf_prefix_next, &f, "one"};
	return run_src(sets, 9, &src);
}

static const res_request_t *res_of(const sim_results_t *r, uint64_t id)
{
	return sf_request(r->req, r->n_req, id);
}

static const res_transfer_t *first_copy_to(const sim_results_t *r, int32_t dst)
{
	for (size_t i = 0; i < r->n_xfer; i++)
		if (r->xfer[i].dst_instance == dst && !r->xfer[i].cancelled)
			return &r->xfer[i];
	fail_msg("no copy to instance %d", dst);
	return NULL;
}

static void test_copy_from_uncomputed_starts_before_the_source_prefill_ends(void **st)
{
	(void)st;
	/* full asks for its copies on its first tick, 10 us in, while request
	 * 0's prefill still runs: refused (then deferred to the prefill's end)
	 * when copies read computed KV only, started at once otherwise */
	const char *tick = "policy.replication.full_tick_ms=0.01";
	sim_results_t a = run_three("kvcache.copy_from=computed", tick, 1);
	sim_results_t b = run_three("kvcache.copy_from=uncomputed", tick, 1);
	int64_t ttft = res_of(&a, 0)->ttft_ns;
	assert_int_equal(res_of(&b, 0)->ttft_ns, ttft);
	assert_true(first_copy_to(&a, 1)->start_ns >= ttft); /* causal */
	assert_int_equal(first_copy_to(&b, 1)->start_ns, 10000); /* the study's assumption */
	assert_true(ttft > 10000);
	sim_results_free(&a);
	sim_results_free(&b);
}

/* A copy's duration; alone on its path (NIC up, fabric, NIC down) 41 blocks
 * x 16 tokens x 131072 B per token (Llama-3-8B) at 50 GB/s, plus latency. */
static int64_t dur_ns(const res_transfer_t *x)
{
	return x->end_ns - x->start_ns;
}

static void test_no_contention_times_each_copy_alone(void **st)
{
	(void)st;
	/* two copies leave instance 0's NIC together: max-min halves each */
	sim_results_t a = run_three("network.contention=maxmin", "kvcache.transfer_engine=ideal", 1);
	sim_results_t b = run_three("network.contention=none", "kvcache.transfer_engine=ideal", 1);
	const res_transfer_t *a1 = first_copy_to(&a, 1), *b1 = first_copy_to(&b, 1);
	const res_transfer_t *b2 = first_copy_to(&b, 2);
	assert_int_equal(a1->bytes, 41ull * 16 * 131072);
	double bytes_time = (double)a1->bytes / 50e9 * 1e9;
	assert_true(dur_ns(b1) >= (int64_t)bytes_time);
	assert_true(dur_ns(b1) <= (int64_t)bytes_time + 100000); /* + latency */
	assert_int_equal(dur_ns(b1), dur_ns(b2));
	assert_true(dur_ns(a1) > dur_ns(b1) + (int64_t)(0.9 * bytes_time));
	/* bytes are counted; links carried none of them */
	assert_true(sim_results_get(&b, "bytes_bg") == 2.0 * (double)b1->bytes);
	assert_true(sim_results_get(&b, "link_bytes_bg.nic") == 0);
	sim_results_free(&a);
	sim_results_free(&b);
}

static void test_copy_charged_to_target_compute_delays_its_work(void **st)
{
	(void)st;
	/* request 1 reaches instance 1 at 250 ms; the copy from request 0 (it
	 * starts when request 0's prefill ends) runs on instance 1's compute */
	sim_results_t a = run_three("network.copy_charge=network", "kvcache.transfer_engine=ideal", 2);
	sim_results_t b =
	    run_three("network.copy_charge=target_compute", "kvcache.transfer_engine=ideal", 2);
	const res_transfer_t *b1 = first_copy_to(&b, 1);
	assert_true(b1->end_ns - b1->start_ns > 0);
	assert_true(sim_results_get(&b, "link_bytes_bg.nic") == 0);
	assert_true(sim_results_get(&a, "link_bytes_bg.nic") > 0);
	/* either way request 1 found the prefix there and computed one block */
	assert_int_equal(res_of(&a, 1)->tok_local, 40 * 16);
	assert_int_equal(res_of(&b, 1)->tok_local, 40 * 16);
	sim_results_free(&a);
	sim_results_free(&b);
}

static void test_transfer_engine_costs_slow_a_copy(void **st)
{
	(void)st;
	sim_results_t a = run_three("kvcache.transfer_engine=ideal", "experiment.seed=1", 1);
	sim_results_t b = run_three("kvcache.transfer_engine=mooncake", "experiment.seed=1", 1);
	sim_results_t c = run_three("kvcache.transfer_engine=lmcache", "experiment.seed=1", 1);
	const res_transfer_t *a1 = first_copy_to(&a, 1), *b1 = first_copy_to(&b, 1);
	const res_transfer_t *c1 = first_copy_to(&c, 1);
	/* mooncake: 50 us + 1 us per block more, and at most 0.87 of the line */
	assert_true(dur_ns(b1) >= dur_ns(a1) + 50000 + 40 * 1000);
	assert_true((double)b1->bytes / (double)(dur_ns(b1) - 90000) <= 0.87 * 50e9 / 1e9);
	assert_true(dur_ns(c1) > dur_ns(b1));
	sim_results_free(&a);
	sim_results_free(&b);
	sim_results_free(&c);
}

/* Every engine the key offers has a cost table (a name without one fails
 * the run instead of falling back to another engine's costs). */
static void test_every_transfer_engine_choice_has_costs(void **st)
{
	(void)st;
	cfg_schema_t *sc = cfg_schema_default();
	assert_non_null(sc);
	const cfg_key_t *k = cfg_schema_find(sc, "kvcache", "transfer_engine");
	assert_non_null(k);
	char list[256], set[300];
	snprintf(list, sizeof list, "%s", k->choices);
	int n = 0;
	for (char *save, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		snprintf(set, sizeof set, "kvcache.transfer_engine=%s", name);
		sim_results_t r = run_three(set, "experiment.seed=1", 1);
		assert_true(dur_ns(first_copy_to(&r, 1)) > 0);
		sim_results_free(&r);
		n++;
	}
	assert_int_equal(n, 4);
	cfg_schema_free(sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_linear_model_is_the_study_formula),
	    cmocka_unit_test(test_study_scheduler_serial_prefill_hol_and_reservation),
	    cmocka_unit_test(test_vllm_scheduler_batches_the_same_requests),
	    cmocka_unit_test(test_resident_at_admission_makes_blocks_matchable_before_compute),
	    cmocka_unit_test(test_ttft_at_prefill_end_takes_every_token_from_decode),
	    cmocka_unit_test(test_compute_job_runs_before_the_next_iteration),
	    cmocka_unit_test(test_default_deployment_recomputes_a_miss),
	    cmocka_unit_test(test_copy_from_uncomputed_starts_before_the_source_prefill_ends),
	    cmocka_unit_test(test_no_contention_times_each_copy_alone),
	    cmocka_unit_test(test_copy_charged_to_target_compute_delays_its_work),
	    cmocka_unit_test(test_transfer_engine_costs_slow_a_copy),
	    cmocka_unit_test(test_every_transfer_engine_choice_has_costs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
