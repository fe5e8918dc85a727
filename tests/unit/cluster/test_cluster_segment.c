/* Decode segments ([scheduler] decode = segment, sim/cluster/cluster.h
 * DECODE_SEGMENT) against step mode on whole runs under vllm and sglang:
 * the same request rows, with every time within 1 ns per iteration run so
 * far (mdl_decode_run_ns's closed form of a q-norm roofline is certified to
 * 1 ns a step, models/mdl_cost.c), field for field where the closed form is
 * exact (max() roofline, linear model), and the same summary within 1e-6
 * relative (all but the event count); a hand case where arrivals interrupt
 * a segment mid-way, with every time worked out from the toy's cost. Cases
 * on the shared Mooncake trace skip when ../shared is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/toy_cluster.h"

/* ---- whole runs --------------------------------------------------------- */

/* Every iteration costs at least [compute] iter_overhead_ns, 0.5 ms in all
 * the runs below (the default; mdl_cost.c), so by time t an instance has run
 * at most t / MIN_ITER_NS + 1 iterations: the drift a time may have. */
#define MIN_ITER_NS 500000

static int64_t drift_at(int64_t t)
{
	return t / MIN_ITER_NS + 1;
}

/* |a - b| <= tol, or a message naming the request and field. */
static int64_t close_or_fail(uint64_t id, const char *field, int64_t a, int64_t b, int64_t tol)
{
	int64_t d = llabs(a - b);
	if (d > tol)
		fail_msg("request %" PRIu64 " %s: step %" PRId64 ", segment %" PRId64
		         " (tolerance %" PRId64 ")",
		         id, field, a, b, tol);
	return d;
}

/* The same rows: counts, places and outcomes equal; each time within the
 * drift of the instant it ends at (tol_per_iter 1), or equal (0). A span of
 * two instants (TPOT, a gap) may move by the drift of both; TPOT divides it
 * by output - 1 and rounds. Returns the largest difference seen. */
static int64_t rows_equal(const sim_results_t *a, const sim_results_t *b, int64_t tol_per_iter)
{
	assert_int_equal(a->n_req, b->n_req);
	int64_t worst = 0;
	for (size_t i = 0; i < a->n_req; i++) {
		const res_request_t *x = &a->req[i], *y = &b->req[i];
		assert_int_equal(x->id, y->id);
		assert_int_equal(x->arrival_ns, y->arrival_ns);
		assert_int_equal(x->instance, y->instance);
		assert_int_equal(x->status, y->status);
		assert_int_equal(x->input_tokens, y->input_tokens);
		assert_int_equal(x->output_tokens, y->output_tokens);
		assert_int_equal(x->tok_local, y->tok_local);
		assert_int_equal(x->tok_peer, y->tok_peer);
		assert_int_equal(x->tok_host, y->tok_host);
		assert_int_equal(x->tok_recomputed, y->tok_recomputed);
		assert_int_equal(x->tok_spec_hit, y->tok_spec_hit);
		int64_t t0 = x->arrival_ns;
		int64_t end = tol_per_iter * drift_at(t0 + (x->e2e_ns > 0 ? x->e2e_ns : 0));
		int64_t first = tol_per_iter * drift_at(t0 + (x->ttft_ns > 0 ? x->ttft_ns : 0));
		int64_t queued = tol_per_iter * drift_at(t0 + (x->queue_ns > 0 ? x->queue_ns : 0));
		int64_t out = x->output_tokens > 1 ? x->output_tokens - 1 : 1;
		int64_t d[] = {
		    close_or_fail(x->id, "ttft_ns", x->ttft_ns, y->ttft_ns, first),
		    close_or_fail(x->id, "e2e_ns", x->e2e_ns, y->e2e_ns, end),
		    close_or_fail(x->id, "queue_ns", x->queue_ns, y->queue_ns, queued),
		    close_or_fail(x->id, "fetch_wait_ns", x->fetch_wait_ns, y->fetch_wait_ns, end),
		    close_or_fail(x->id, "tpot_ns", x->tpot_ns, y->tpot_ns,
		                  tol_per_iter * ((end + first) / out + 1)),
		    close_or_fail(x->id, "tbt_p90_ns", x->tbt_p90_ns, y->tbt_p90_ns, 2 * end),
		};
		for (size_t k = 0; k < sizeof d / sizeof d[0]; k++)
			worst = d[k] > worst ? d[k] : worst;
	}
	return worst;
}

/* Every summary metric within 1e-6 relative, but the event count, which is
 * what segments change: segment mode must dispatch fewer. */
static void metrics_equal(const sim_results_t *step, const sim_results_t *seg)
{
	assert_int_equal(step->n_metric, seg->n_metric);
	for (size_t i = 0; i < step->n_metric; i++) {
		const res_metric_t *x = &step->metric[i], *y = &seg->metric[i];
		assert_string_equal(x->name, y->name);
		if (!strcmp(x->name, "sim_events")) {
			assert_true(y->value < x->value);
			continue;
		}
		if (isnan(x->value) && isnan(y->value))
			continue; /* not measured in either (forecast.* without a forecast) */
		if (x->value == y->value)
			continue; /* +inf in both: a TTFT quantile past a rejected request */
		double tol = 1e-6 * fmax(fabs(x->value), fabs(y->value));
		if (fabs(x->value - y->value) > tol)
			fprintf(stderr, "%s: step %.17g, segment %.17g\n", x->name, x->value,
			        y->value);
		assert_true(fabs(x->value - y->value) <= tol);
	}
	assert_true(seg->events < step->events);
}

typedef struct whole {
	const char *name, *config, *needs;
	const char *sets[4];
	int nsets;
	int preempts; /* some request must be preempted */
	int exact;    /* the closed form is exact: rows equal field for field */
} whole_t;

static const whole_t wholes[] = {
    {"default experiment", NULL, NULL, {NULL}, 0, 0, 0},
    {"fan-out bursts (fanout_65k, 2 bursts of 40)",
     "analysis/experiments/fanout_65k.ini",
     NULL,
     {"trace.fanout_bursts=2", "trace.fanout_size=40", "trace.duration_s=120"},
     3,
     0,
     0},
    /* 16-token blocks in a pool of 150: decodes preempt (vllm) and retract
     * (sglang) all the time, and every 16th token allocates */
    {"preemption-heavy (default, 150 blocks of 16 tokens)",
     NULL,
     NULL,
     {"cluster.kv_blocks=150", "kvcache.block_tokens=16", "trace.duration_s=20"},
     3,
     1,
     0},
    {"mooncake conversation",
     "analysis/experiments/mooncake_conversation.ini",
     "../shared/traces/mooncake/conversation_trace.jsonl",
     {NULL},
     0,
     0,
     0},
    /* routers that read decode_tokens mid-segment (cluster_sync) */
    {"mooncake conversation, least_load by tokens",
     "analysis/experiments/mooncake_conversation.ini",
     "../shared/traces/mooncake/conversation_trace.jsonl",
     {"policy.routing.load_metric=tokens"},
     1,
     0,
     0},
    {"default experiment, kv_cost routing", NULL, NULL, {"policy.routing.name=kv_cost"}, 1, 0, 0},
    /* copies landing, jobs on the instances' compute, peer fetches */
    {"default experiment, early_rdma, fetch = cost",
     NULL,
     NULL,
     {"policy.replication.name=early_rdma", "kvcache.fetch=cost"},
     2,
     0,
     0},
    {"default experiment, speculative + oracle",
     NULL,
     NULL,
     {"policy.replication.name=speculative", "policy.predictor.name=oracle"},
     2,
     0,
     0},
    /* the run ends mid-segment: unfinished requests keep the tokens so far */
    {"default experiment, until_s = 20", NULL, NULL, {"experiment.until_s=20"}, 1, 0, 0},
    {"default experiment, ttft = prefill_end", NULL, NULL, {"scheduler.ttft=prefill_end"}, 1, 0, 0},
    /* where the closed form is exact arithmetic: the linear model, and the
     * roofline as max() of its sides */
    {"mooncake conversation, linear model",
     "analysis/experiments/mooncake_conversation.ini",
     "../shared/traces/mooncake/conversation_trace.jsonl",
     {"compute.model=linear"},
     1,
     0,
     1},
    {"default experiment, linear model", NULL, NULL, {"compute.model=linear"}, 1, 0, 1},
    {"default experiment, roofline_q = 0", NULL, NULL, {"compute.roofline_q=0"}, 1, 0, 1},
};

static void run_both(const whole_t *w, const char *mode)
{
	const char *sets[8];
	char m[64];
	snprintf(m, sizeof m, "scheduler.mode=%s", mode);
	int n = 0;
	for (int i = 0; i < w->nsets; i++)
		sets[n++] = w->sets[i];
	sets[n++] = m;
	sets[n] = "scheduler.decode=step";
	sim_results_t step = sf_run(w->config, sets, n + 1);
	sets[n] = "scheduler.decode=segment";
	sim_results_t seg = sf_run(w->config, sets, n + 1);
	int64_t worst = rows_equal(&step, &seg, !w->exact);
	printf("%s, %s: %zu requests, events step %" PRIu64 ", segment %" PRIu64
	       ", largest time difference %" PRId64 " ns\n",
	       w->name, mode, step.n_req, step.events, seg.events, worst);
	metrics_equal(&step, &seg);
	if (w->preempts) { /* a readmitted request recomputes more than its prompt */
		size_t k = 0;
		while (k < seg.n_req && seg.req[k].tok_recomputed <= seg.req[k].input_tokens)
			k++;
		assert_true(k < seg.n_req);
	}
	sim_results_free(&step);
	sim_results_free(&seg);
}

static void whole_runs(const char *mode)
{
	int ran = 0;
	for (size_t k = 0; k < sizeof wholes / sizeof wholes[0]; k++) {
		const whole_t *w = &wholes[k];
		if (w->needs && access(w->needs, R_OK)) {
			printf("%s: skipped (%s absent)\n", w->name, w->needs);
			continue;
		}
		run_both(w, mode);
		ran++;
	}
	assert_true(ran > 0);
}

static void test_segment_runs_equal_step_runs_under_vllm(void **st)
{
	(void)st;
	whole_runs("vllm");
}

static void test_segment_runs_equal_step_runs_under_sglang(void **st)
{
	(void)st;
	whole_runs("sglang");
}

/* ---- a hand case ---------------------------------------------------------- */

/* The toy (tests/fixtures/toy_cluster.h: 1000 ns per prefill token, 100 ns per
 * decoding sequence) with 64-token blocks, so no block boundary ends a
 * segment: A (8 in, 20 out) arrives at 0; at late_t, B (4 in, 2 out)
 * arrives, or a 500 ns job is queued on the instance (payload 0). */
typedef struct hand {
	toy_t t;
	uint32_t ev_late;
} hand_t;

enum { LATE_JOB = 0, LATE_B = 2 };

static int hand_late(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	hand_t *h = ctx;
	if (ev->payload == LATE_JOB)
		return cluster_job_add(&h->t.cl, 0, 7, 500);
	return cluster_submit(&h->t.cl, 0, ev->payload, 4, 2, NULL, 0);
}

static void hand_run(hand_t *h, int decode, int64_t late_t, uint64_t late)
{
	cluster_params_t p = toy_params(SCHED_VLLM);
	p.block_tokens = 64;
	p.decode_mode = decode;
	toy_start(&h->t, &p);
	assert_int_equal(ev_engine_type_new(h->t.eng, hand_late, h, &h->ev_late), 0);
	/* the late event is scheduled at 0, before any decode step starts: step
	 * mode dispatches it before an iteration ending at the same instant */
	assert_true(ev_engine_at(h->t.eng, late_t, h->ev_late, 0, late) != EV_NONE);
	assert_int_equal(cluster_submit(&h->t.cl, 0, 1, 8, 20, NULL, 0), 0);
	assert_int_equal(ev_engine_run(h->t.eng, INT64_MAX), 0);
	assert_int_equal(h->t.res.n_req, late == LATE_B ? 2 : 1);
}

/* Both modes with the late event at late_t: the same rows, the segment in
 * fewer events. */
static void hand_both(hand_t *step, hand_t *seg, int64_t late_t, uint64_t late)
{
	hand_run(step, DECODE_STEP, late_t, late);
	hand_run(seg, DECODE_SEGMENT, late_t, late);
	rows_equal(&step->t.res, &seg->t.res, 0); /* the toy has no closed form */
	assert_true(ev_engine_events(seg->t.eng) < ev_engine_events(step->t.eng));
	assert_true(seg->t.cl.seg_silent > 0);
}

static void hand_free(hand_t *step, hand_t *seg)
{
	toy_free(&step->t);
	toy_free(&seg->t);
}

/* Step mode by hand, B arriving at 8350: A's prefill ends at 8000 (its
 * first token), then A decodes alone at 100 ns a step: 8100, 8200, 8300,
 * 8400. B joins the batch built at 8400 (A's decode + B's 4-token prefill:
 * 4100 ns, to 12500, B's first token); both decode to 12700 (B's second and
 * last); A's 13 remaining tokens take 100 ns each, to 14000. A's 19 gaps are
 * 17 of 100, one of 200 and one of 4100: p90 (nearest rank 18) is 200. */
static void test_segment_cut_by_an_arrival_mid_way(void **st)
{
	(void)st;
	hand_t step, seg;
	hand_both(&step, &seg, 8350, LATE_B);
	const res_request_t *a = sf_request(seg.t.res.req, seg.t.res.n_req, 1);
	const res_request_t *b = sf_request(seg.t.res.req, seg.t.res.n_req, 2);
	assert_int_equal(a->ttft_ns, 8000);
	assert_int_equal(a->e2e_ns, 14000);
	assert_int_equal(a->tpot_ns, 6000 / 19);
	assert_int_equal(a->tbt_p90_ns, 200);
	assert_int_equal(b->queue_ns, 8400 - 8350);
	assert_int_equal(b->ttft_ns, 12500 - 8350);
	assert_int_equal(b->e2e_ns, 12700 - 8350);
	/* the same iterations and busy time, in fewer events */
	assert_int_equal(seg.t.cl.inst[0].iterations, step.t.cl.inst[0].iterations);
	assert_int_equal(seg.t.cl.inst[0].busy_ns, step.t.cl.inst[0].busy_ns);
	assert_int_equal(seg.t.cl.inst[0].busy_ns, 14000);
	hand_free(&step, &seg);
}

/* B arriving exactly at 8300, when A's third decode step ends: its event
 * was scheduled first, so step mode queues B before that iteration's end is
 * dispatched and admits it there, at 8300 (4-token prefill beside A's
 * decode to 12400); had the iteration come first, B would wait for the next
 * one, to 8400. The segment counts that step as not yet completed at 8300
 * and does the same. */
static void test_segment_arrival_at_a_step_end_is_dispatched_first(void **st)
{
	(void)st;
	hand_t step, seg;
	hand_both(&step, &seg, 8300, LATE_B);
	const res_request_t *b = sf_request(seg.t.res.req, seg.t.res.n_req, 2);
	assert_int_equal(b->queue_ns, 0);
	assert_int_equal(b->ttft_ns, 12400 - 8300);
	hand_free(&step, &seg);
}

/* A job queued at 8350 runs after the iteration in flight, 8400 to 8900;
 * A's sixth token ends the next step at 9000 (a 600 ns gap) and its last
 * 14 follow at 100 ns, to 10400. */
static void test_segment_cut_by_a_job_mid_way(void **st)
{
	(void)st;
	hand_t step, seg;
	hand_both(&step, &seg, 8350, LATE_JOB);
	const res_request_t *a = sf_request(seg.t.res.req, seg.t.res.n_req, 1);
	assert_int_equal(a->e2e_ns, 10400);
	assert_int_equal(a->tbt_p90_ns, 100);
	assert_int_equal(seg.t.cl.inst[0].busy_ns, 10400);
	hand_free(&step, &seg);
}

/* What ends a segment follows from the scheduler's table (cluster.h
 * CL_SCHED_F_*): the toy's requests carry no block ids, so only a block
 * allocation for the next token can end one before a completion (PAGED).
 * A and B (8 in, 12 out, 4-token blocks) share 8 blocks: past 16 tokens
 * each needs a fifth, so one is preempted (vllm) or retracted (sglang) and
 * recomputes. Under every scheduler with segments, step mode's rows, with
 * iterations run silently. */
static void test_segment_ends_where_a_block_is_allocated(void **st)
{
	(void)st;
	int ran = 0;
	for (int mode = 0; mode < SCHED_N; mode++) {
		if (!(cluster_sched_flags(mode) & CL_SCHED_F_SEGMENTS))
			continue;
		toy_t t[2];
		for (int seg = 0; seg < 2; seg++) {
			cluster_params_t p = toy_params(mode);
			p.kv_blocks = 8;
			p.decode_mode = seg ? DECODE_SEGMENT : DECODE_STEP;
			toy_start(&t[seg], &p);
			assert_int_equal(cluster_submit(&t[seg].cl, 0, 1, 8, 12, NULL, 0), 0);
			assert_int_equal(cluster_submit(&t[seg].cl, 0, 2, 8, 12, NULL, 0), 0);
			assert_int_equal(ev_engine_run(t[seg].eng, INT64_MAX), 0);
		}
		rows_equal(&t[0].res, &t[1].res, 0); /* the toy has no closed form */
		assert_int_equal(t[1].res.n_req, 2);
		assert_true(t[1].res.req[0].tok_recomputed > t[1].res.req[0].input_tokens ||
		            t[1].res.req[1].tok_recomputed > t[1].res.req[1].input_tokens);
		assert_int_equal(t[1].cl.inst[0].iterations, t[0].cl.inst[0].iterations);
		assert_true(t[1].cl.seg_silent > 0);
		toy_free(&t[0]);
		toy_free(&t[1]);
		ran++;
	}
	assert_true(ran >= 2); /* vllm and sglang */
}

/* A cache conversion the store bars does not end a segment (cluster_seg.c
 * seg_barred). Under vllm with 64-token blocks: A (64 in, 160 out, prompt
 * block 100, its first output block to be 101) and B (128 in, 10 out,
 * blocks 100 and 101, as a later turn of A's session would have) arrive
 * together; B waits for A's block 100, then computes 101 itself. When A's
 * context covers its own 101, the store already holds B's, so A's
 * conversion is barred (vllm keeps its own copy), and stays barred while
 * B's copy is cached: A decodes in segments where each of its iterations
 * used to be an event. At evict_t every evictable block is evicted (B's,
 * once B is done): the store's change cuts A's segment, and the iteration
 * in flight converts A's block at its end, as step mode does; a segment
 * that ran on would convert it later (the hand case's toy, its late event
 * the eviction). */
static int barred_evict(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)ev;
	hand_t *b = ctx;
	kv_store_t *kv = b->t.cl.inst[0].kv;
	int rc = 0;
	while (!rc && kv_evictable(kv))
		rc = kv_evict_one(kv, ev_engine_now(eng));
	return rc;
}

static void barred_run(hand_t *b, int decode, int64_t evict_t)
{
	static const uint64_t ids[2] = {100, 101};
	cluster_params_t p = toy_params(SCHED_VLLM);
	p.decode_mode = decode;
	p.block_tokens = 64;
	toy_start(&b->t, &p);
	assert_int_equal(ev_engine_type_new(b->t.eng, barred_evict, b, &b->ev_late), 0);
	if (evict_t >= 0)
		assert_true(ev_engine_at(b->t.eng, evict_t, b->ev_late, 0, 0) != EV_NONE);
	sim_req_t *a;
	assert_int_equal(cluster_enqueue(&b->t.cl, 0, 1, 64, 160, ids, 1, &a), 0);
	assert_int_equal(cluster_req_output_ids(&b->t.cl, a, ids + 1, 1), 0);
	assert_int_equal(cluster_kick(&b->t.cl, 0), 0);
	assert_int_equal(cluster_submit(&b->t.cl, 0, 2, 128, 10, ids, 2), 0);
	assert_int_equal(ev_engine_run(b->t.eng, INT64_MAX), 0);
	assert_int_equal(b->t.res.n_req, 2);
}

static void test_segment_runs_past_a_barred_conversion_until_the_store_changes(void **st)
{
	(void)st;
	hand_t step, seg;
	/* no eviction: A's block is never converted; B's stays */
	barred_run(&step, DECODE_STEP, -1);
	barred_run(&seg, DECODE_SEGMENT, -1);
	rows_equal(&step.t.res, &seg.t.res, 0);
	const res_request_t *a = sf_request(step.t.res.req, step.t.res.n_req, 1);
	const res_request_t *b = sf_request(step.t.res.req, step.t.res.n_req, 2);
	int64_t made = kv_info(step.t.cl.inst[0].kv, 101)->created;
	assert_true(made <= b->arrival_ns + b->ttft_ns); /* B's */
	assert_int_equal(kv_info(seg.t.cl.inst[0].kv, 101)->created, made);
	/* A's last 96 decode steps, after B's end, were 96 events; now a few */
	printf("barred: events step %" PRIu64 ", segment %" PRIu64 "\n",
	       ev_engine_events(step.t.eng), ev_engine_events(seg.t.eng));
	assert_true(4 * ev_engine_events(seg.t.eng) < ev_engine_events(step.t.eng));
	/* evicted between two of A's step ends (100 ns each, alone), once B is
	 * done: its block is converted at the next one */
	int64_t b_end = b->arrival_ns + b->e2e_ns, a_end = a->arrival_ns + a->e2e_ns;
	int64_t evict_t = a_end - 50 * 100 - 50;
	assert_true(evict_t > b_end);
	toy_free(&step.t);
	toy_free(&seg.t);
	barred_run(&step, DECODE_STEP, evict_t);
	barred_run(&seg, DECODE_SEGMENT, evict_t);
	rows_equal(&step.t.res, &seg.t.res, 0);
	const kv_block_info_t *x = kv_info(step.t.cl.inst[0].kv, 101);
	const kv_block_info_t *y = kv_info(seg.t.cl.inst[0].kv, 101);
	assert_non_null(x);
	assert_non_null(y);
	assert_int_equal(x->created, evict_t + 50); /* A's, at once */
	assert_int_equal(y->created, x->created);
	assert_true(seg.t.cl.seg_silent > 0);
	toy_free(&step.t);
	toy_free(&seg.t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_segment_cut_by_an_arrival_mid_way),
	    cmocka_unit_test(test_segment_arrival_at_a_step_end_is_dispatched_first),
	    cmocka_unit_test(test_segment_cut_by_a_job_mid_way),
	    cmocka_unit_test(test_segment_ends_where_a_block_is_allocated),
	    cmocka_unit_test(test_segment_runs_past_a_barred_conversion_until_the_store_changes),
	    cmocka_unit_test(test_segment_runs_equal_step_runs_under_vllm),
	    cmocka_unit_test(test_segment_runs_equal_step_runs_under_sglang),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
