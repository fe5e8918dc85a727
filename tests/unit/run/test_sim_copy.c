/* KV copies inside whole runs (sim/run/sim_copy.c): cancelling a copy (stale
 * forecast under a rate cap, a policy's cancel mid-flight, a deferred copy
 * whose source is dropped) crashes nothing, leaks nothing and keeps every
 * byte of /transfers in the summary; refusals are counted by reason; a copy
 * asked for while its source still computes is reserved and starts at the
 * very nanosecond the source blocks become ready. A scripted replication
 * policy (registered like a plugin) issues the copies of the hand-made
 * scenarios; every run ends with the end-of-run store check (consistent
 * stores, nothing held once no copy is live). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policies/pol.h"
#include "sim/run/cli_common.h"
#include "sim/run/sim.h"
#include "tests/fixtures/sim_fixture.h"

#define MS 1000000LL

/* ---- a scripted replication policy ---------------------------------------- */

enum { OP_COPY, OP_COPY_WHILE_COMPUTING, OP_CANCEL };

typedef struct step {
	int op;
	int64_t at_ns;        /* not before */
	uint32_t src, dst, n; /* copy of blocks[0..n) */
	const uint64_t *blocks;
	int of; /* OP_CANCEL: index of the step whose copy to cancel */
	/* filled by the run */
	int done, rc;
	uint64_t id;
	int64_t done_ns;
} step_t;

static step_t g_step[8];
static int g_n_step;
static int64_t g_tick_ns = MS;
static int g_ended, g_landed; /* on_copy_end calls, landed ones */

static pol_repl_timing_t sc_timing(const void *st)
{
	(void)st;
	return (pol_repl_timing_t){g_tick_ns, 0};
}

static int sc_on_tick(void *st, const pol_view_t *v, const pol_actions_t *a,
                      const pol_forecast_t *fc, err_t *e)
{
	(void)st;
	(void)fc;
	(void)e;
	int64_t now = v->now(v->ctx);
	for (int i = 0; i < g_n_step; i++) {
		step_t *p = &g_step[i];
		if (p->done || now < p->at_ns)
			continue;
		if (p->op == OP_COPY_WHILE_COMPUTING &&
		    (!v->match_computing || v->match_computing(v->ctx, p->src, p->blocks, p->n) <=
		                                v->match(v->ctx, p->src, p->blocks, p->n)))
			continue; /* not computing there (yet) */
		if (p->op == OP_CANCEL)
			p->rc = a->cancel(a->ctx, g_step[p->of].id);
		else
			p->rc = a->copy(a->ctx, p->blocks, p->n, p->src, p->dst, POL_BG, &p->id);
		p->done = 1;
		p->done_ns = now;
	}
	return 0;
}

static void sc_on_copy_end(void *st, uint64_t id, int landed)
{
	(void)st;
	(void)id;
	g_ended++;
	g_landed += landed != 0;
}

static const struct pol_replication_ops sc_ops = {
    .base = {POL_ABI_VERSION, POL_REPLICATION, "test_script",
             "Issues the copies and cancels a test lists, at their times.", NULL, 0, 0, NULL, NULL},
    .timing = sc_timing,
    .on_tick = sc_on_tick,
    .on_copy_end = sc_on_copy_end,
};

/* ---- a probing router --------------------------------------------------------- */

/* Routes request i to instance i % 2 (as round_robin would) and records,
 * at each call, how much of the scripted prefix the routers' view shows on
 * instance 1. */
typedef struct probe {
	int64_t t_ns;
	uint32_t shown;
} probe_t;
static probe_t g_probe[16];
static int g_n_probe;
static uint64_t PFX[256];

static int probe_route(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	(void)st;
	if (g_n_probe < (int)(sizeof g_probe / sizeof g_probe[0]))
		g_probe[g_n_probe++] = (probe_t){v->now(v->ctx), v->match(v->ctx, 1, PFX, 40)};
	*inst = (uint32_t)(r->id % 2);
	return POL_ACCEPT;
}

static const struct pol_routing_ops probe_ops = {
    .base = {POL_ABI_VERSION, POL_ROUTING, "test_probe",
             "Round robin, recording the routers' view of the scripted prefix on instance 1.",
             NULL, 0, 0, NULL, NULL},
    .route = probe_route,
};

/* ---- a scripted trace -------------------------------------------------------- */

typedef struct rq {
	int64_t t_ns;
	uint32_t n_prefix; /* blocks shared: base + j */
	uint64_t base;
	uint32_t in_len, out_len;
} rq_t;

typedef struct trace {
	const rq_t *r;
	int n, at;
	uint64_t ids[4096];
} trace_t;

/* The scripted prefix: ids 7000 + j (script_reset), PFX above. */

static int tr_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	(void)e;
	trace_t *t = ctx;
	if (t->at == t->n)
		return 0;
	const rq_t *q = &t->r[t->at];
	uint32_t nb = q->in_len / 16;
	for (uint32_t j = 0; j < nb; j++)
		t->ids[j] = j < q->n_prefix ? q->base + j : 1000000u * (uint64_t)(t->at + 1) + j;
	*a = (sim_arrival_t){.id = (uint64_t)t->at,
			     .arrival_ns = q->t_ns,
			     .in_len = q->in_len,
			     .out_len = q->out_len,
			     .n_blocks = nb,
			     .blocks = t->ids};
	t->at++;
	return 1;
}

static void script_reset(void)
{
	memset(g_step, 0, sizeof g_step);
	g_n_step = 0;
	g_tick_ns = MS;
	g_ended = g_landed = 0;
	for (uint32_t j = 0; j < 256; j++)
		PFX[j] = 7000 + j;
}

/* A fresh script: policy ticks every tick_ns, the n steps in order. */
static void script_set(int64_t tick_ns, const step_t *steps, int n)
{
	script_reset();
	g_tick_ns = tick_ns;
	assert_true(n <= (int)(sizeof g_step / sizeof g_step[0]));
	memcpy(g_step, steps, (size_t)n * sizeof *steps);
	g_n_step = n;
}

/* Llama-3-8B, TP1, 16-token blocks, round-robin routing, no fetching, the
 * scripted policy; extra sets after. */
static sim_results_t run_script(const rq_t *r, int n, const char **extra, int n_extra)
{
	const char *base[] = {
	    SF_NO_FRONTEND, /* engine times, by hand */
	    "model.name=Llama-3-8B",           "cluster.tp=1",
	    "kvcache.block_tokens=16",         "kvcache.fetch=never",
	    "policy.routing.name=round_robin", "policy.replication.name=test_script"};
	const char *sets[32];
	int ns = 0;
	for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
		sets[ns++] = base[i];
	for (int i = 0; i < n_extra; i++)
		sets[ns++] = extra[i];
	err_t e = {0};
	pol_registry_t *reg = pol_registry_new();
	assert_non_null(reg);
	assert_int_equal(pol_registry_add(reg, &sc_ops.base, &e), 0);
	assert_int_equal(pol_registry_add(reg, &probe_ops.base, &e), 0);
	g_n_probe = 0;
	cfg_t *cfg = NULL;
	int rc = cli_load_config_ex(NULL, sets, ns, 0, reg, &cfg, &e);
	if (rc)
		fail_msg("%s", e.msg);
	trace_t t = {r, n, 0, {0}};
	sim_source_t src = {tr_next, &t, "script"};
	sim_results_t res;
	rc = sim_run(cfg, &(sim_run_opts_t){.reg = reg, .source = &src}, &res, &e);
	if (rc)
		fail_msg("%s", e.msg);
	cli_config_free(cfg);
	pol_registry_free(reg);
	return res;
}

/* run_script on one node of two GPUs (instances 0 and 1), extra sets after. */
static sim_results_t run_two_gpus(const rq_t *r, int n, const char **extra, int n_extra)
{
	const char *sets[8] = {"cluster.nodes=1", "cluster.gpus_per_node=2"};
	assert_true(n_extra <= 6);
	for (int i = 0; i < n_extra; i++)
		sets[2 + i] = extra[i];
	return run_script(r, n, sets, 2 + n_extra);
}

static const res_request_t *req_of(const sim_results_t *r, uint64_t id)
{
	return sf_request(r->req, r->n_req, id);
}

/* What every scripted run ends with: every byte a flow moved is in the
 * summary, by class, and cancelled ones are in spec.bytes_cancelled as
 * well; then r is freed. */
static void end_run(sim_results_t *r)
{
	double fg = 0, bg = 0, cancelled = 0;
	for (size_t i = 0; i < r->n_xfer; i++) {
		double b = (double)r->xfer[i].bytes;
		if (r->xfer[i].klass == XFER_BACKGROUND)
			bg += b;
		else
			fg += b;
		if (r->xfer[i].cancelled)
			cancelled += b;
		assert_true(r->xfer[i].requested_ns <= r->xfer[i].start_ns);
	}
	assert_true(fg == sim_results_get(r, "bytes_fg"));
	assert_true(bg == sim_results_get(r, "bytes_bg"));
	assert_true(fg == sim_results_get(r, "spec.bytes_fg"));
	assert_true(bg == sim_results_get(r, "spec.bytes_bg"));
	assert_true(cancelled == sim_results_get(r, "spec.bytes_cancelled"));
	assert_true(sim_results_get(r, "kv_block_allocs") == sim_results_get(r, "kv_block_frees"));
	sim_results_free(r);
}

/* ---- whole-run tests ------------------------------------------------------------ */

/* The default experiment with sets (sim_fixture.h: engine times). */
static sim_results_t run_default(const char **sets, int n)
{
	return sf_run(NULL, sets, n);
}

/* The reported crash: stale-forecast cancels under a 5% rate cap removed
 * the flight entry twice (exit 139). */
static void test_stale_cancels_under_rate_cap_do_not_crash_and_keep_bytes(void **st)
{
	(void)st;
	const char *sets[] = {"policy.replication.name=speculative", "policy.predictor.name=oracle",
	                      "policy.transfer.name=rate_cap", "policy.transfer.rate_share=0.05"};
	sim_results_t r = run_default(sets, 4);
	double cancelled = sim_results_get(&r, "spec.copies_cancelled");
	double partial = sim_results_get(&r, "spec.bytes_cancelled");
	printf("rate cap 5%%: %.0f copies cancelled, %.3e bytes moved by them\n", cancelled,
	       partial);
	assert_true(cancelled > 0);
	assert_true(partial > 0);
	size_t rows = 0;
	for (size_t i = 0; i < r.n_xfer; i++)
		rows += r.xfer[i].cancelled != 0;
	assert_true(rows > 0);
	assert_true(sim_results_get(&r, "unfinished") == 0);
	end_run(&r);
}

static void test_transfer_bytes_equal_summary_bytes_in_every_mode(void **st)
{
	(void)st;
	const char *early[] = {"policy.replication.name=early_rdma",
	                       "policy.predictor.name=oracle"};
	const char *offload[] = {"cluster.kv_blocks=120", "kvcache.host_kv_gb=200",
	                         "kvcache.host_offload=true"};
	const char *spec[] = {"policy.replication.name=speculative", "policy.predictor.name=oracle",
	                      "policy.predictor.oracle_fp_rate=1",
	                      "policy.transfer.name=idle_window"};
	const char **sets[] = {early, offload, spec};
	int n[] = {2, 3, 4};
	for (int k = 0; k < 3; k++) {
		sim_results_t r = run_default(sets[k], n[k]);
		assert_true(r.n_xfer > 0);
		end_run(&r);
	}
}

/* ---- hand scenarios ---------------------------------------------------------------- */

/* One node, two instances. Request 0 computes a 40-block prefix on
 * instance 0 in one iteration; at 1 ms, while it computes, a copy of the
 * prefix to instance 1 is asked for. Request 1 reaches instance 1 at 2 ms. */
static const rq_t DEFER_TRACE[] = {
    {0, 40, 7000, 41 * 16, 4},
    {2 * MS, 40, 7000, 41 * 16, 4},
};

/* The copy of blocks[0..n) from instance 0 to 1 at 1 ms. */
static void defer_script_of(const uint64_t *blocks, uint32_t n)
{
	const step_t steps[] = {{.op = OP_COPY_WHILE_COMPUTING,
	                         .at_ns = MS,
	                         .src = 0,
	                         .dst = 1,
	                         .n = n,
	                         .blocks = blocks}};
	script_set(MS, steps, 1);
}

static void defer_script(void)
{
	defer_script_of(PFX, 40);
}

static void test_deferred_copy_starts_the_ns_its_source_is_ready(void **st)
{
	(void)st;
	defer_script();
	/* timings of the single-efficiency roofline (gemm_mfu = 0), which the
	 * scenario's margins were drawn for */
	const char *old_cost[] = {"compute.gemm_mfu=0"};
	sim_results_t r = run_two_gpus(DEFER_TRACE, 2, old_cost, 1);
	assert_int_equal(g_step[0].rc, POL_COPY_OK);
	assert_int_equal(g_step[0].done_ns, MS);
	const res_request_t *r0 = req_of(&r, 0), *r1 = req_of(&r, 1);
	assert_int_equal(r0->instance, 0);
	assert_int_equal(r1->instance, 1);
	/* request 0's prefill is one iteration: its blocks become READY with
	 * its first token, and the copy's flow starts at that very ns */
	int64_t ready = r0->arrival_ns + r0->ttft_ns;
	assert_true(ready > MS);
	assert_int_equal(r.n_xfer, 1);
	const res_transfer_t *x = &r.xfer[0];
	printf("requested %lld ns, source ready %lld ns, flow %lld..%lld ns\n",
	       (long long)x->requested_ns, (long long)ready, (long long)x->start_ns,
	       (long long)x->end_ns);
	assert_int_equal(x->requested_ns, MS);
	assert_int_equal(x->start_ns, ready);
	assert_int_equal(x->blocks, 40);
	assert_int_equal(x->cancelled, 0);
	assert_int_equal(g_landed, 1);
	assert_true(sim_results_get(&r, "spec.copies_deferred") == 1);
	assert_true(sim_results_get(&r, "spec.deferred_cancelled") == 0);
	assert_true(
	    fabs(sim_results_get(&r, "spec.deferral_mean_ms") - (double)(ready - MS) / 1e6) < 1e-9);
	/* request 1 found the reservation, waited (landing beats recomputing
	 * 640 tokens) and used the replica */
	assert_int_equal(r1->tok_spec_hit, 40 * 16);
	assert_true(r1->arrival_ns + r1->ttft_ns > x->end_ns);
	assert_true(sim_results_get(&r, "spec.replicas_used") == 1);
	end_run(&r);

	/* switched off: the same request is refused (source not computed) */
	defer_script();
	const char *off[] = {"kvcache.copy_deferred=false", "compute.gemm_mfu=0"};
	r = run_two_gpus(DEFER_TRACE, 2, off, 2);
	assert_int_equal(g_step[0].done, 0); /* the view offers no computing match */
	sim_results_free(&r);
}

/* A deferred copy whose blocks do not run at consecutive depths (blocks
 * 0-9 and 20-39 of the prefix): each source block still finds its place in
 * the copy as it becomes READY (the depth shortcut holds only for a run),
 * and the copy starts the ns the last of them is ready. */
static void test_deferred_copy_of_blocks_with_a_gap_starts_when_ready(void **st)
{
	(void)st;
	static uint64_t gap[30];
	defer_script_of(gap, 30);
	for (int j = 0; j < 30; j++) /* script_set fills PFX */
		gap[j] = PFX[j < 10 ? j : j + 10];
	const char *old_cost[] = {"compute.gemm_mfu=0"};
	sim_results_t r = run_two_gpus(DEFER_TRACE, 2, old_cost, 1);
	assert_int_equal(g_step[0].rc, POL_COPY_OK);
	const res_request_t *r0 = req_of(&r, 0);
	int64_t ready = r0->arrival_ns + r0->ttft_ns;
	assert_true(ready > MS);
	assert_int_equal(r.n_xfer, 1);
	assert_int_equal(r.xfer[0].start_ns, ready);
	assert_int_equal(r.xfer[0].blocks, 30);
	assert_int_equal(r.xfer[0].cancelled, 0);
	assert_int_equal(g_landed, 1);
	assert_true(sim_results_get(&r, "spec.copies_deferred") == 1);
	end_run(&r);
}

/* The routers' computed view shows a deferred copy's blocks at its target
 * only once its flows start (its source's KV exists), as it shows a
 * COMPUTING block only once its prefill ends: a request routed while the
 * copy waits sees nothing of the prefix on instance 1, one routed while
 * the copy flows sees all of it. */
static void test_routers_see_a_deferred_copy_only_once_it_starts(void **st)
{
	(void)st;
	defer_script();
	/* request 1 while the copy waits for its source, request 3 while the
	 * copy's flow runs (request 2 keeps round robin's parity) */
	const rq_t trace[] = {
	    {0, 40, 7000, 41 * 16, 4},           {(int64_t)(1.2 * MS), 0, 0, 2 * 16, 4},
	    {(int64_t)(1.3 * MS), 0, 0, 2 * 16, 4}, {0, 0, 0, 2 * 16, 4},
	};
	const char *sets[] = {"compute.gemm_mfu=0", "policy.routing.name=test_probe"};
	sim_results_t r = run_two_gpus(trace, 3, sets, 2);
	assert_int_equal(r.n_xfer, 1);
	int64_t start = r.xfer[0].start_ns, end = r.xfer[0].end_ns;
	assert_true(start > (int64_t)(1.3 * MS)); /* both probes fell before the flow */
	assert_int_equal(g_n_probe, 3);
	assert_int_equal(g_probe[1].t_ns, (int64_t)(1.2 * MS));
	assert_int_equal(g_probe[1].shown, 0); /* deferred: not shown */
	end_run(&r);

	/* a request arriving while the flow runs sees the whole prefix coming */
	defer_script();
	sim_results_t r0 = run_two_gpus(DEFER_TRACE, 1, sets, 2);
	start = r0.xfer[0].start_ns;
	end = r0.xfer[0].end_ns;
	end_run(&r0);
	const rq_t late[] = {{0, 40, 7000, 41 * 16, 4}, {(start + end) / 2, 0, 0, 2 * 16, 4}};
	defer_script();
	r = run_two_gpus(late, 2, sets, 2);
	assert_int_equal(r.xfer[0].start_ns, start);
	assert_int_equal(g_n_probe, 2);
	assert_int_equal(g_probe[1].shown, 40);
	end_run(&r);
}

/* Across nodes the 640-token copy takes ~1.7 ms over the NICs, more than
 * the source's 0.5 ms head start: request 1, arriving at 0.5 ms, computes
 * the prompt itself rather than wait (with copy_deferred off it waits). */
static void test_request_recomputes_when_waiting_is_slower(void **st)
{
	(void)st;
	static const rq_t trace[] = {
	    {0, 40, 7000, 41 * 16, 4},
	    {MS / 2, 40, 7000, 41 * 16, 4},
	};
	/* timings of the single-efficiency roofline (gemm_mfu = 0) */
	const char *two[] = {"cluster.nodes=2", "cluster.gpus_per_node=1", "compute.gemm_mfu=0"};
	const char *two_off[] = {"cluster.nodes=2", "cluster.gpus_per_node=1",
	                         "kvcache.copy_deferred=false", "compute.gemm_mfu=0"};
	for (int off = 0; off < 2; off++) {
		/* off: the same copy once the source is READY, before request 1 */
		const step_t steps[] = {{.op = off ? OP_COPY : OP_COPY_WHILE_COMPUTING,
		                         .at_ns = off ? 19 * MS + MS / 4 : MS / 4,
		                         .src = 0,
		                         .dst = 1,
		                         .n = 40,
		                         .blocks = PFX}};
		script_set(MS / 4, steps, 1);
		static const rq_t late[] = {
		    {0, 40, 7000, 41 * 16, 4},
		    {19 * MS + MS / 2, 40, 7000, 41 * 16, 4},
		};
		sim_results_t r =
		    run_script(off ? late : trace, 2, off ? two_off : two, off ? 4 : 3);
		assert_int_equal(g_step[0].rc, POL_COPY_OK);
		assert_int_equal(r.n_xfer, 1);
		const res_request_t *r1 = req_of(&r, 1);
		int64_t first = r1->arrival_ns + r1->ttft_ns;
		printf(
		    "copy_deferred=%s: copy lands at %lld ns, request 1's first token at %lld ns\n",
		    off ? "false" : "true", (long long)r.xfer[0].end_ns, (long long)first);
		assert_int_equal(r1->instance, 1);
		if (!off) {
			assert_int_equal(r1->tok_spec_hit, 0);
			assert_true(first < r.xfer[0].end_ns);
		} else {
			assert_int_equal(r1->tok_spec_hit, 40 * 16); /* waited for it */
			assert_true(first > r.xfer[0].end_ns);
		}
		sim_results_free(&r);
	}
}

/* Runs trace on two GPUs with steps as the script (ticks of 1 ms) and set
 * after: every copy is refused and none runs, room of them for want of room
 * at the target, source for want of the source's KV. */
static void expect_all_refused(const rq_t *trace, int n, const step_t *steps, int n_steps,
                               const char *set, double room, double source)
{
	script_set(MS, steps, n_steps);
	sim_results_t r = run_two_gpus(trace, n, &set, 1);
	for (int k = 0; k < g_n_step; k++)
		assert_int_equal(g_step[k].rc, POL_COPY_REFUSED);
	assert_true(sim_results_get(&r, "spec.refused_room") == room);
	assert_true(sim_results_get(&r, "spec.refused_source") == source);
	assert_true(sim_results_get(&r, "spec.copies_refused") == room + source);
	assert_int_equal(r.n_xfer, 0);
	sim_results_free(&r);
}

/* Without the view's computing match (copy_deferred off) a policy asking
 * anyway is refused for the source. */
static void test_copy_from_computing_source_refused_when_not_deferred(void **st)
{
	(void)st;
	const step_t steps[] = {
	    {.op = OP_COPY, .at_ns = MS, .src = 0, .dst = 1, .n = 40, .blocks = PFX}};
	expect_all_refused(DEFER_TRACE, 2, steps, 1, "kvcache.copy_deferred=false", 0, 1);
}

/* Instance 0 runs D (decoding, its context growing) then S (a 30-block
 * prompt prefilled 7 tokens per iteration); a 33-block pool fills while S
 * still computes, so D's next block preempts S and drops S's computing
 * blocks. The deferred copy of S's prefix to instance 1 is cancelled. */
static void test_deferred_copy_cancelled_when_source_is_dropped(void **st)
{
	(void)st;
	static const rq_t trace[] = {
	    {0, 0, 0, 16, 200},             /* D on instance 0 */
	    {100000, 0, 0, 16, 2},          /* a bystander on instance 1 */
	    {200000, 30, 7000, 30 * 16, 2}, /* S on instance 0 */
	};
	const step_t steps[] = {{.op = OP_COPY_WHILE_COMPUTING,
	                         .at_ns = 0,
	                         .src = 0,
	                         .dst = 1,
	                         .n = 30,
	                         .blocks = PFX}};
	script_set(MS / 10, steps, 1);
	const char *extra[] = {"cluster.kv_blocks=33", "scheduler.max_batched_tokens=8"};
	sim_results_t r = run_two_gpus(trace, 3, extra, 2);
	assert_int_equal(g_step[0].rc, POL_COPY_OK);
	assert_true(sim_results_get(&r, "spec.copies_deferred") == 1);
	assert_true(sim_results_get(&r, "spec.deferred_cancelled") == 1);
	assert_true(sim_results_get(&r, "spec.copies_cancelled") == 1);
	assert_int_equal(g_ended, 1);
	assert_int_equal(g_landed, 0);
	assert_int_equal(r.n_xfer, 0); /* no flow ever started */
	for (uint64_t i = 0; i < 3; i++)
		assert_int_equal(req_of(&r, i)->status, REQ_COMPLETED);
	end_run(&r);
}

/* kvcache.copy_from = uncomputed: a copy of request 0's prefix leaves
 * while its source blocks still compute (pinned COMPUTING) and is
 * cancelled at that same instant; the blocks become READY later. The
 * cancel releases the pins it recorded: inferred from the state at the
 * cancel (READY only), the computing ones stayed pinned, and the run's
 * end check found them held. */
static void test_cancel_releases_pins_taken_on_computing_sources(void **st)
{
	(void)st;
	const step_t steps[] = {{.op = OP_COPY_WHILE_COMPUTING,
	                         .at_ns = 0,
	                         .src = 0,
	                         .dst = 1,
	                         .n = 40,
	                         .blocks = PFX},
	                        {.op = OP_CANCEL, .at_ns = 0, .of = 0}};
	script_set(MS / 10, steps, 2);
	const char *sets[] = {"kvcache.copy_from=uncomputed"};
	sim_results_t r = run_two_gpus(DEFER_TRACE, 2, sets, 1);
	assert_int_equal(g_step[0].rc, POL_COPY_OK);
	assert_int_equal(g_step[1].rc, 0);
	const res_request_t *r0 = req_of(&r, 0);
	/* cancelled while request 0 still computed the blocks */
	assert_true(g_step[1].done_ns < r0->arrival_ns + r0->ttft_ns);
	assert_true(sim_results_get(&r, "spec.copies_deferred") == 0);
	assert_true(sim_results_get(&r, "spec.copies_cancelled") == 1);
	assert_int_equal(g_landed, 0);
	for (uint64_t i = 0; i < 2; i++)
		assert_int_equal(req_of(&r, i)->status, REQ_COMPLETED);
	end_run(&r);
}

/* Two nodes of one GPU (bounded at 5 s): the 200-block prefix copied from
 * instance 0 to 1 at 199 ms, cancelled at cancel_ns (0: never); set, when
 * not NULL, after. */
static sim_results_t cancel_run(const rq_t *trace, int n, int64_t cancel_ns, const char *set)
{
	const step_t steps[] = {
	    {.op = OP_COPY, .at_ns = 199 * MS, .src = 0, .dst = 1, .n = 200, .blocks = PFX},
	    {.op = OP_CANCEL, .at_ns = cancel_ns, .of = 0}};
	script_set(MS, steps, cancel_ns ? 2 : 1);
	const char *extra[] = {"cluster.nodes=2", "cluster.gpus_per_node=1",
	                       "experiment.until_s=5", set};
	return run_script(trace, n, extra, set ? 4 : 3);
}

static const rq_t CANCEL_TRACE[] = {
    {0, 200, 7000, 201 * 16, 2},
    {12 * MS, 0, 0, 16, 2}, /* keeps round-robin on 0, 1, 0, 1 */
    {13 * MS, 0, 0, 16, 2},
    {200 * MS, 200, 7000, 201 * 16, 2}, /* waits at instance 1 for the copy */
};

/* The copy crosses the NICs (~8 ms). It is cancelled after 3 ms, while
 * request 3 waits at the target for it: the partial bytes reach the
 * summary and request 3 computes its prompt. */
static void test_cancelled_copy_bytes_and_waiting_request(void **st)
{
	(void)st;
	/* bounded: without the kick a cancel gives, request 3 would wait forever */
	sim_results_t r = cancel_run(CANCEL_TRACE, 4, 202 * MS, NULL);
	assert_int_equal(g_step[0].rc, POL_COPY_OK);
	assert_int_equal(g_step[1].rc, 0);
	assert_int_equal(r.n_xfer, 1);
	const res_transfer_t *x = &r.xfer[0];
	uint64_t full = 200ull * 16 * 131072;
	printf("cancelled after %lld ns: %llu of %llu bytes\n",
	       (long long)(x->end_ns - x->start_ns), (unsigned long long)x->bytes,
	       (unsigned long long)full);
	assert_int_equal(x->cancelled, 1);
	assert_true(x->bytes > 0 && x->bytes < full);
	assert_true(sim_results_get(&r, "spec.bytes_cancelled") == (double)x->bytes);
	assert_true(sim_results_get(&r, "spec.copies_cancelled") == 1);
	assert_int_equal(g_landed, 0);
	const res_request_t *w = req_of(&r, 3);
	assert_int_equal(w->instance, 1);
	assert_int_equal(w->status, REQ_COMPLETED);
	assert_int_equal(w->tok_spec_hit, 0);
	assert_true(w->arrival_ns + w->ttft_ns > 202 * MS);
	end_run(&r);
}

/* The cancelled copy above under the lone timing modes, each shard timed
 * alone for A ns (A: the same copy's duration when it lands). A cancelled
 * timer copy (network.contention = none) delivered its bytes pro rata of the
 * time since it started; so did a cancelled job (network.copy_charge =
 * target_compute) that the idle target's compute began at once. (A job
 * cancelled was once recorded as having run A ns up to the cancel with all
 * its bytes: a row that started before the copy was asked for.) */
static sim_results_t lone_run(const char *mode, int cancel)
{
	return cancel_run(CANCEL_TRACE, 4, cancel ? 202 * MS : 0, mode);
}

static void test_cancelled_lone_copies_record_their_shards(void **st)
{
	(void)st;
	const char *modes[] = {"network.contention=none", "network.copy_charge=target_compute"};
	const uint64_t full = 200ull * 16 * 131072;
	for (int m = 0; m < 2; m++) {
		sim_results_t r = lone_run(modes[m], 0);
		assert_int_equal(r.n_xfer, 1);
		assert_int_equal(r.xfer[0].cancelled, 0);
		assert_int_equal(r.xfer[0].bytes, full);
		int64_t alone = r.xfer[0].end_ns - r.xfer[0].start_ns;
		end_run(&r);
		r = lone_run(modes[m], 1);
		assert_int_equal(g_step[0].rc, POL_COPY_OK);
		assert_int_equal(g_step[1].rc, 0);
		assert_int_equal(r.n_xfer, 1);
		const res_transfer_t *x = &r.xfer[0];
		printf("%s: alone %lld ns; cancelled row %lld..%lld ns, %llu bytes\n", modes[m],
		       (long long)alone, (long long)x->start_ns, (long long)x->end_ns,
		       (unsigned long long)x->bytes);
		assert_true(alone > 3 * MS);
		assert_int_equal(x->cancelled, 1);
		assert_int_equal(x->end_ns, g_step[1].done_ns);
		assert_int_equal(x->start_ns, g_step[0].done_ns);
		double f = (double)(x->end_ns - x->start_ns) / (double)alone;
		assert_int_equal(x->bytes, (uint64_t)(f * (double)full));
		assert_true(sim_results_get(&r, "spec.bytes_cancelled") == (double)x->bytes);
		assert_true(sim_results_get(&r, "spec.copies_cancelled") == 1);
		assert_int_equal(g_landed, 0);
		assert_int_equal(req_of(&r, 3)->status, REQ_COMPLETED);
		end_run(&r);
	}
}

/* A job-mode copy queued behind the target's prefill (request 1's 4096
 * tokens, computing from 198.9 ms) and cancelled at 200 ms, before the
 * compute reached it: it moved nothing, and its row says so (starts and
 * ends at the cancel, 0 bytes). */
static void test_cancelled_queued_job_copy_moved_nothing(void **st)
{
	(void)st;
	static const rq_t trace[] = {
	    {0, 200, 7000, 201 * 16, 2},
	    {198900000, 0, 0, 4096, 2},
	};
	sim_results_t r = cancel_run(trace, 2, 200 * MS, "network.copy_charge=target_compute");
	assert_int_equal(g_step[0].rc, POL_COPY_OK);
	assert_int_equal(g_step[1].rc, 0);
	const res_request_t *r1 = req_of(&r, 1);
	assert_int_equal(r1->instance, 1);
	assert_true(r1->arrival_ns + r1->ttft_ns > g_step[1].done_ns); /* still computing */
	assert_int_equal(r.n_xfer, 1);
	const res_transfer_t *x = &r.xfer[0];
	printf("queued job cancelled: row %lld..%lld ns, %llu bytes\n", (long long)x->start_ns,
	       (long long)x->end_ns, (unsigned long long)x->bytes);
	assert_int_equal(x->cancelled, 1);
	assert_int_equal(x->start_ns, g_step[1].done_ns);
	assert_int_equal(x->end_ns, g_step[1].done_ns);
	assert_int_equal(x->bytes, 0);
	assert_true(sim_results_get(&r, "spec.bytes_cancelled") == 0);
	assert_true(sim_results_get(&r, "spec.copies_cancelled") == 1);
	assert_int_equal(g_landed, 0);
	end_run(&r);
}

/* A copy to an instance whose pool a running request holds is refused for
 * room; one naming blocks the source lacks, for the source. */
static void test_refusals_are_counted_by_reason(void **st)
{
	(void)st;
	static const rq_t trace[] = {
	    {0, 40, 7000, 41 * 16, 2},
	    {0, 0, 0, 40 * 16, 150}, /* instance 1: 41+ of 50 blocks held while it decodes */
	};
	static uint64_t absent[4] = {424242, 424243, 424244, 424245};
	const step_t steps[] = {
	    {.op = OP_COPY, .at_ns = 100 * MS, .src = 0, .dst = 1, .n = 40, .blocks = PFX},
	    {.op = OP_COPY, .at_ns = 100 * MS, .src = 0, .dst = 1, .n = 4, .blocks = absent}};
	expect_all_refused(trace, 2, steps, 2, "cluster.kv_blocks=50", 1, 1);
}

/* A replica that lands and is evicted at its target before any request
 * uses it ends wasted, and the stores end consistent. */
static void test_replica_evicted_at_target_is_wasted(void **st)
{
	(void)st;
	static const rq_t trace[] = {
	    {0, 40, 7000, 41 * 16, 2},
	    {0, 0, 0, 16, 2},
	    {0, 0, 0, 16, 2},
	    {100 * MS, 0, 0, 45 * 16, 2}, /* instance 1: needs the replica's room */
	};
	const step_t steps[] = {
	    {.op = OP_COPY, .at_ns = 50 * MS, .src = 0, .dst = 1, .n = 40, .blocks = PFX}};
	script_set(MS, steps, 1);
	const char *small[] = {"cluster.kv_blocks=50"};
	sim_results_t r = run_two_gpus(trace, 4, small, 1);
	assert_int_equal(g_step[0].rc, POL_COPY_OK);
	assert_int_equal(g_landed, 1);
	assert_int_equal(req_of(&r, 3)->instance, 1);
	assert_true(sim_results_get(&r, "spec.replicas_created") == 1);
	assert_true(sim_results_get(&r, "spec.replicas_wasted") == 1);
	assert_true(sim_results_get(&r, "spec.replicas_used") == 0);
	assert_true(sim_results_get(&r, "spec.unused_vram_gb_s") > 0);
	end_run(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stale_cancels_under_rate_cap_do_not_crash_and_keep_bytes),
	    cmocka_unit_test(test_transfer_bytes_equal_summary_bytes_in_every_mode),
	    cmocka_unit_test(test_deferred_copy_starts_the_ns_its_source_is_ready),
    cmocka_unit_test(test_deferred_copy_of_blocks_with_a_gap_starts_when_ready),
    cmocka_unit_test(test_routers_see_a_deferred_copy_only_once_it_starts),
	    cmocka_unit_test(test_request_recomputes_when_waiting_is_slower),
	    cmocka_unit_test(test_copy_from_computing_source_refused_when_not_deferred),
	    cmocka_unit_test(test_deferred_copy_cancelled_when_source_is_dropped),
	    cmocka_unit_test(test_cancel_releases_pins_taken_on_computing_sources),
	    cmocka_unit_test(test_cancelled_copy_bytes_and_waiting_request),
	    cmocka_unit_test(test_cancelled_lone_copies_record_their_shards),
	    cmocka_unit_test(test_cancelled_queued_job_copy_moved_nothing),
	    cmocka_unit_test(test_refusals_are_counted_by_reason),
	    cmocka_unit_test(test_replica_evicted_at_target_is_wasted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
