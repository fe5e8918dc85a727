/* The engines' schedulers (sim/cluster/cluster_*.c, [scheduler] mode = vllm |
 * sglang) and the list that registers them (CLUSTER_SCHED_LIST), then step
 * by step: hand scenarios whose every batch is written out
 * below from the engines' rules, to the token. Each iteration costs 1 us, so
 * step k runs over [k-1, k) us. A batch is recorded as "P<new>@<ctx>" per
 * prefill chunk (tokens computed, tokens already in KV), then "D<ctx>" per
 * decoding sequence, steps joined by " | ". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim/base/cfg.h"
#include "sim/cluster/cluster.h"
#include "sim/cluster/cluster_int.h"
#include "sim/run/recorder.h"

#define STEP_NS 1000

#include "tests/fixtures/batch_log.h"

typedef struct toy {
	ev_engine_t *eng;
	cluster_t cl;
	sim_results_t res; /* the rows of finished requests */
	rec_t rec;
	uint32_t ev_arrive;
	/* one request submitted later by an event */
	uint64_t late_id;
	uint32_t late_in, late_out;
	uint64_t late_blocks[64];
} toy_t;

static void toy_init(toy_t *t, int mode, uint32_t block_tokens, uint32_t kv_blocks, uint32_t budget,
                     double conservativeness)
{
	memset(t, 0, sizeof *t);
	cluster_params_t p = {0};
	p.n_instances = 1;
	p.block_tokens = block_tokens;
	p.kv_blocks = kv_blocks;
	p.block_bytes = 4096;
	p.max_num_seqs = 8;
	p.max_batched_tokens = budget;
	p.chunked_prefill = 1;
	p.busy_rule = BUSY_WAIT;
	p.sched_mode = mode;
	p.conservativeness = conservativeness;
	p.cost = rec_cost;
	p.cost_ctx = &t->rec;
	p.on_result = rec_request;
	p.result_ctx = &t->res;
	t->eng = ev_engine_new(64);
	assert_non_null(t->eng);
	assert_int_equal(cluster_init(&t->cl, &p, t->eng), 0);
}

static void toy_free(toy_t *t)
{
	cluster_free(&t->cl);
	ev_engine_free(t->eng);
	sim_results_free(&t->res);
}

/* Queues a request at t = 0 whose full prompt blocks have ids base+1, ...;
 * with_out: the full blocks ending in its output too (cacheable). */
static void enqueue_ids(toy_t *t, uint64_t id, uint32_t in, uint32_t out, uint64_t base,
                        int with_out)
{
	uint64_t ids[64];
	uint32_t B = t->cl.p.block_tokens, n = in / B, all = (in + out) / B;
	assert_true(all <= 64);
	for (uint32_t i = 0; i < all; i++)
		ids[i] = base + i + 1;
	sim_req_t *r;
	assert_int_equal(cluster_enqueue(&t->cl, 0, id, in, out, ids, n, &r), 0);
	if (with_out)
		assert_int_equal(cluster_req_output_ids(&t->cl, r, ids + n, all - n), 0);
}

static int on_arrive(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	(void)ev;
	toy_t *t = ctx;
	return cluster_submit(&t->cl, 0, t->late_id, t->late_in, t->late_out, t->late_blocks,
	                      t->late_in / t->cl.p.block_tokens);
}

static void arrive_at(toy_t *t, int64_t at, uint64_t id, uint32_t in, uint32_t out, uint64_t base)
{
	t->late_id = id;
	t->late_in = in;
	t->late_out = out;
	for (uint32_t i = 0; i < in / t->cl.p.block_tokens && i < 64; i++)
		t->late_blocks[i] = base + i + 1;
	assert_int_equal(ev_engine_type_new(t->eng, on_arrive, t, &t->ev_arrive), 0);
	assert_true(ev_engine_at(t->eng, at, t->ev_arrive, 0, 0) != EV_NONE);
}

static const res_request_t *result(const toy_t *t, uint64_t id)
{
	for (size_t i = 0; i < t->res.n_req; i++)
		if (t->res.req[i].id == id)
			return &t->res.req[i];
	fail_msg("request %llu has no result", (unsigned long long)id);
	return NULL;
}

static void run_all(toy_t *t)
{
	assert_int_equal(cluster_kick(&t->cl, 0), 0);
	assert_int_equal(ev_engine_run(t->eng, INT64_MAX), 0);
	assert_int_equal(t->cl.n_live, 0);
	assert_int_equal(cluster_check(&t->cl), 0);
}

/* A request of a scenario: prompt blocks base+1, ... (enqueue_ids). */
typedef struct req {
	uint64_t id;
	uint32_t in, out;
	uint64_t base;
} req_t;

/* A result a scenario checks: request id's e2e_ns or queue_ns (ns), or its
 * tok_recomputed; what 0 ends the list. */
enum { CK_E2E = 1, CK_QUEUE, CK_RECOMPUTED };
static const char *const ck_name[] = {"", "e2e_ns", "queue_ns", "tok_recomputed"};
typedef struct check {
	uint64_t id;
	int what;
	int64_t want;
} check_t;

/* One hand scenario, a cmocka test of its own (test_scenario): the toy's
 * parameters (toy_init, then the busy rule), the requests waiting at t = 0
 * in queue order (id 0 ends them), one arriving later (late.id 0: none),
 * the batches it runs (rec_t's log), the results it ends with, and
 * instance 0's new_token_ratio at the end (ratio < 0: not checked). */
typedef struct scen {
	const char *name;
	int mode;
	uint32_t block_tokens, kv_blocks, budget;
	double conservativeness;
	int busy_rule;
	int with_out; /* the first request's output blocks are cacheable */
	req_t q[3];
	int64_t late_at; /* ns */
	req_t late;
	const char *log;
	check_t check[4];
	double ratio, ratio_tol;
} scen_t;

/* One scenario a row, its derivation above it. */
/* clang-format off */
static const scen_t scen[] = {
    /* vLLM v1, 4-token blocks, a pool of 8 blocks, 10 tokens a step.
     * A (12 in, 6 out), B (8 in, 6 out), C (4 in, 3 out) wait at t = 0.
     *  1: A admitted (3 blocks), chunk min(12, 10)                   P10@0
     *  2: A's last 2 tokens; B admitted (2 blocks), chunk 8          P2@10 P8@0
     *  3: A, B decode (a 4th and a 3rd block); C admitted (the last
     *     free block), its 4 tokens                                  P4@0 D13 D9
     *  4: C (context 5) needs a 2nd block, none is free: the last
     *     running request, C itself, is preempted; the step admits
     *     nobody, though C's cached block would let it back         D14 D10
     *  5, 6: C's readmission needs a private block the pool lacks    D15 D11 | D16 D12
     *  7: A takes its 5th block (evicting C's cached one); B needs
     *     a 4th, none left: B, the last, is preempted                D17
     *  8: A is done. B back at the queue's head: its 2 cached blocks
     *     hit, context 13 = 8 + 5 generated, recompute 5; C (its block
     *     evicted) recomputes its 5                                  P5@8 P5@0
     *     B's recompute emits its 6th token: done
     *  9: C decodes its last token                                   D6 */
    {"test_vllm_batches_follow_v1_rules_to_the_token", SCHED_VLLM, 4, 8, 10, 1, BUSY_WAIT, 0,
     {{1, 12, 6, 100}, {2, 8, 6, 200}, {3, 4, 3, 300}}, 0, {0},
     " P10@0 | P2@10 P8@0 | P4@0 D13 D9 | D14 D10 | D15 D11 | D16 D12 | D17 | P5@8 P5@0 | D6",
     {{1, CK_E2E, 7 * STEP_NS}, {2, CK_E2E, 8 * STEP_NS}, {3, CK_E2E, 9 * STEP_NS},
      {2, CK_RECOMPUTED, 8 + 5}},
     -1, 0},
    /* vLLM v1 admits nobody in a step that preempted. 4-token blocks, a pool of
     * 5, a needed block still being computed is recomputed privately
     * (busy_rule recompute). A and B (8 in, 8 out) share both prompt blocks.
     *  1: A computes the shared blocks; B, finding them in the making,
     *     computes its copy privately (2 blocks): 1 block left       P8@0 P8@0
     *  2: A takes the last block for context 9; B needs a 3rd: B, the
     *     last running request, is preempted. Its readmission would
     *     fit (the shared blocks are ready now: 1 new block of the 2
     *     it freed), but not in this step                            D9
     *  3: B back: 8 tokens hit, 1 recomputed                         P1@8 D10
     *  4-6                                                           D11 D10 | D12 D11 | D13 D12
     *  7: A's 4th block was the last: B (context 13) is preempted    D14
     *  8: B needs 2 new blocks, 1 is free; A is done                 D15
     *  9: B recomputes 13 - 8 cached                                 P5@8
     * 10, 11                                                         D14 | D15 */
    {"test_vllm_admits_nobody_in_a_step_that_preempted", SCHED_VLLM, 4, 5, 32, 1, BUSY_RECOMPUTE, 0,
     {{1, 8, 8, 100}, {2, 8, 8, 100}}, 0, {0},
     " P8@0 P8@0 | D9 | P1@8 D10 | D11 D10 | D12 D11 | D13 D12 | D14 | D15 | P5@8 | D14 | D15",
     {{2, CK_E2E, 11 * STEP_NS}}, -1, 0},
    /* SGLang, page size 1, a pool of 30 tokens, chunked_prefill_size 8,
     * schedule_conservativeness 1 (new_token_ratio 0.7, floor 0.098, decay
     * 0.602 / 600 per decode step). A (10 in, 4 out), B (5 in, 6 out), C (3 in,
     * 3 out) wait at t = 0.
     *  1: A admitted: 10 + 4 reserved < 30; chunk 8                 P8@0
     *  2: A's last 2 (its prefill ends here: 4 reserved in full);
     *     B: 5 + 6 < 20 free - 4, admitted whole (6 reserved);
     *     C: 3 + 3 >= 15 - 10: no room, the batch is full            P2@8 P5@0
     *  3-5: decode only: a full batch takes no prefill until it
     *     shrinks (C would fit now: 6 < 15 - 0.7 x (3 + 5))          D11 D6 | D12 D7 | D13 D8
     *     A is done after step 5
     *  6: C admitted (3 + 3 < 22 - 2 x ratio); a prefill batch
     *     never carries decodes: B waits                             P3@0
     *  7, 8: B and C decode to their ends                            D9 D4 | D10 D5 */
    {"test_sglang_batches_prefill_first_with_output_reserve",
     SCHED_SGLANG, 1, 30, 8, 1, BUSY_WAIT, 0,
     {{1, 10, 4, 100}, {2, 5, 6, 200}, {3, 3, 3, 300}}, 0, {0},
     " P8@0 | P2@8 P5@0 | D11 D6 | D12 D7 | D13 D8 | P3@0 | D9 D4 | D10 D5",
     {{3, CK_QUEUE, 5 * STEP_NS}},
     /* five decode steps, none out of memory: five decays */
     0.7 - 5 * (0.7 - 0.7 * 0.14) / 600, 1e-12},
    /* SGLang retraction, page size 1, a pool of 16 tokens, conservativeness 0
     * (no reserve for running requests' output: the pool is overcommitted).
     * A (4 in, 8 out) waits at t = 0, B (3 in, 6 out) arrives at 0.5 us.
     *  1: A                                                          P4@0
     *  2: B admitted: 3 + 6 < 12 free (A reserves 0 x 7)             P3@0
     *  3-6: decode; 1 token left after step 6                        D5 D4 | D6 D5 | D7 D6 | D8 D7
     *  7: two tokens needed, one free: retract_decode takes the
     *     fewest output tokens (5 each), then the longest prompt: A,
     *     not B, the one vLLM would take; new_token_ratio =
     *     min(1, (5 + 20 x 1) / 6) = 1                               D8
     *  8: A back: its 4 cached prompt tokens hit, 5 recomputed       P5@4
     *  9, 10                                                         D10 | D11 */
    {"test_sglang_retracts_fewest_outputs_and_resets_ratio",
     SCHED_SGLANG, 1, 16, 16, 0, BUSY_WAIT, 0, {{1, 4, 8, 100}}, STEP_NS / 2, {2, 3, 6, 200},
     " P4@0 | P3@0 | D5 D4 | D6 D5 | D7 D6 | D8 D7 | D8 | P5@4 | D10 | D11",
     {{1, CK_E2E, 10 * STEP_NS}, {2, CK_E2E, 7 * STEP_NS - STEP_NS / 2},
      {1, CK_RECOMPUTED, 4 + 5}},
     1.0, 0},
    /* The retraction above with A's output blocks cacheable: when A is
     * retracted, the KV of its 8 context tokens (4 prompt, 4 output) is cached,
     * so its recompute finds all 8 and computes 1 token, not 5.             P1@8 */
    {"test_retracted_request_rematches_its_cached_output", SCHED_SGLANG, 1, 16, 16, 0, BUSY_WAIT, 1,
     {{1, 4, 8, 100}}, STEP_NS / 2, {2, 3, 6, 200},
     " P4@0 | P3@0 | D5 D4 | D6 D5 | D7 D6 | D8 D7 | D8 | P1@8 | D10 | D11",
     {{1, CK_RECOMPUTED, 4 + 1}}, -1, 0},
};
/* clang-format on */

static void test_scenario(void **st)
{
	const scen_t *s = *st;
	toy_t t;
	toy_init(&t, s->mode, s->block_tokens, s->kv_blocks, s->budget, s->conservativeness);
	t.cl.p.busy_rule = s->busy_rule;
	for (size_t i = 0; i < sizeof s->q / sizeof s->q[0] && s->q[i].id; i++)
		enqueue_ids(&t, s->q[i].id, s->q[i].in, s->q[i].out, s->q[i].base,
		            i == 0 && s->with_out);
	if (s->late.id)
		arrive_at(&t, s->late_at, s->late.id, s->late.in, s->late.out, s->late.base);
	run_all(&t);
	assert_string_equal(t.rec.log, s->log);
	for (const check_t *c = s->check; c < s->check + 4 && c->what; c++) {
		const res_request_t *r = result(&t, c->id);
		int64_t got = c->what == CK_E2E     ? r->e2e_ns
		              : c->what == CK_QUEUE ? r->queue_ns
		                                    : (int64_t)r->tok_recomputed;
		if (got != c->want)
			fail_msg("request %llu: %s %lld, not %lld", (unsigned long long)c->id,
			         ck_name[c->what], (long long)got, (long long)c->want);
	}
	if (s->ratio >= 0)
		assert_float_equal(t.cl.inst[0].new_token_ratio, s->ratio, s->ratio_tol);
	toy_free(&t);
}

/* The batch limits a key left at 0 takes, per engine and GPU. */
static void test_engine_defaults_follow_gpu_memory_and_name(void **st)
{
	(void)st;
	uint32_t s, b;
	cluster_engine_defaults(SCHED_VLLM, "H100-SXM", (uint64_t)80e9, &s, &b);
	assert_int_equal(s, 1024);
	assert_int_equal(b, 8192);
	cluster_engine_defaults(SCHED_VLLM, "A100-80GB", (uint64_t)80e9, &s, &b);
	assert_int_equal(s, 256); /* vLLM excludes A100 by name (its PR #17885) */
	assert_int_equal(b, 2048);
	cluster_engine_defaults(SCHED_VLLM, "L40S", (uint64_t)48e9, &s, &b);
	assert_int_equal(s, 256);
	cluster_engine_defaults(SCHED_SGLANG, "H200", (uint64_t)141e9, &s, &b);
	assert_int_equal(b, 8192);
	cluster_engine_defaults(SCHED_SGLANG, "B200", (uint64_t)180e9, &s, &b);
	assert_int_equal(b, 16384);
}

extern const cfg_tkey_t sim_cfg_keys[];
extern const size_t sim_cfg_keys_n;

/* CLUSTER_SCHED_LIST is the one list: each SCHED_* value is its position,
 * has its table with the hooks the shared code calls unchecked (step,
 * defaults) and flags that fit together, and scheduler.mode offers exactly
 * the list, in its order, each name mapping back to its value and
 * documented; a value off the list has no table, name or cluster. */
static void test_scheduler_list_drives_enum_choices_names_and_tables(void **st)
{
	(void)st;
	const cfg_tkey_t *mode = NULL;
	for (size_t i = 0; i < sim_cfg_keys_n; i++)
		if (!strcmp(sim_cfg_keys[i].key.section, "scheduler") &&
		    !strcmp(sim_cfg_keys[i].key.name, "mode"))
			mode = &sim_cfg_keys[i];
	assert_non_null(mode);
	const cfg_enum_t *map = mode->at.map;
	assert_non_null(map);
	char want[256] = "", got[256], doc[64];
	int m = 0;
#define SCHED_CHECK(M, name, ops)                                                            \
	assert_int_equal(SCHED_##M, m);                                                            \
	assert_ptr_equal(cl_sched(m), &ops);                                                       \
	assert_string_equal(cluster_sched_name(m), name);                                          \
	m++;
	CLUSTER_SCHED_LIST(SCHED_CHECK)
#undef SCHED_CHECK
	assert_int_equal(m, SCHED_N);
	for (m = 0; m < SCHED_N; m++) {
		const cl_sched_ops_t *ops = cl_sched(m);
		assert_non_null(ops->step);
		assert_non_null(ops->defaults);
		assert_int_equal(cluster_sched_flags(m), ops->flags);
		/* a request joining while an iteration runs would join a segment */
		assert_false(ops->admit_busy && (ops->flags & CL_SCHED_F_SEGMENTS));
		assert_false((ops->flags & CL_SCHED_F_SHARE_DUP) && !(ops->flags & CL_SCHED_F_CACHE_FULL));
		assert_non_null(map[m].name);
		assert_string_equal(map[m].name, cluster_sched_name(m));
		assert_int_equal(map[m].value, m);
		snprintf(doc, sizeof doc, "%s: ", map[m].name);
		assert_non_null(strstr(mode->key.doc, doc));
		snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", m ? "," : "",
		         map[m].name);
	}
	assert_null(map[SCHED_N].name);
	assert_string_equal(cfg_tkey_choices(mode, got, sizeof got), want);
	assert_null(cl_sched(SCHED_N));
	assert_null(cl_sched(-1));
	assert_string_equal(cluster_sched_name(SCHED_N), "?");
	assert_int_equal(cluster_sched_flags(SCHED_N), 0);
	toy_t t;
	memset(&t, 0, sizeof t);
	cluster_params_t p = {.n_instances = 1, .block_tokens = 16, .kv_blocks = 8,
	                      .max_num_seqs = 4, .max_batched_tokens = 64, .sched_mode = SCHED_N,
	                      .cost = rec_cost, .cost_ctx = &t.rec, .on_result = rec_request,
	                      .result_ctx = &t.res};
	ev_engine_t *eng = ev_engine_new(8);
	assert_non_null(eng);
	assert_int_equal(cluster_init(&t.cl, &p, eng), KS_EINPUT);
	cluster_free(&t.cl);
	ev_engine_free(eng);
}

/* Messages name the schedulers that have a flag, from the tables. */
static void test_scheduler_names_by_flag_follow_the_tables(void **st)
{
	(void)st;
	char buf[64];
	assert_string_equal(cluster_sched_names(CL_SCHED_F_FIXED_KV, buf, sizeof buf),
	                    "vllm or sglang");
	assert_string_equal(cluster_sched_names(CL_SCHED_F_DISAGG, buf, sizeof buf), "vllm");
	assert_string_equal(cluster_sched_names(CL_SCHED_F_RESIDENT_AT_ADMIT, buf, sizeof buf),
	                    "btb");
	assert_string_equal(cluster_sched_names(0, buf, sizeof buf), "vllm or btb or sglang");
	assert_string_equal(cluster_sched_names(0, buf, 8), "vllm or");
}

/* scen[k] as a cmocka test under its own name */
/* clang-format off */
#define SCENARIO(k) {scen[k].name, test_scenario, NULL, NULL, (void *)&scen[k]}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    SCENARIO(0),
	    SCENARIO(1),
	    SCENARIO(2),
	    SCENARIO(3),
	    SCENARIO(4),
	    cmocka_unit_test(test_engine_defaults_follow_gpu_memory_and_name),
	    cmocka_unit_test(test_scheduler_list_drives_enum_choices_names_and_tables),
	    cmocka_unit_test(test_scheduler_names_by_flag_follow_the_tables),
	};
	/* clang-format on */
	_Static_assert(sizeof scen / sizeof scen[0] == 5, "every scenario is registered");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
