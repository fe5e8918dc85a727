/* Instance roles (sim/cluster/cluster.h CL_ROLE_*): a prefill instance
 * hands a prefilled request to the on_handoff hook, keeping its full prompt
 * blocks as cache and nothing else; cluster_handoff_land queues it on a
 * decode instance, which admits it when its blocks fit and decodes it with
 * its own cost context. Each iteration costs 1 us; batches are logged per
 * instance as in tests/unit/cluster/test_sched_modes.c ("P<new>@<ctx>", "D<ctx>"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim/cluster/cluster.h"
#include "sim/run/recorder.h"

#define STEP_NS 1000
#define LAND_NS 5000 /* from a handoff to its landing */

#include "tests/fixtures/batch_log.h"

typedef struct duo {
	ev_engine_t *eng;
	cluster_t cl;
	sim_results_t res;
	rec_t log[2]; /* per instance: its own cost context */
	uint32_t ev_land;
	sim_req_t *moving[8];
	uint32_t n_moving, handoffs;
	uint32_t cached_at_handoff, private_at_handoff;
} duo_t;

static int on_land(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	duo_t *d = ctx;
	return cluster_handoff_land(&d->cl, 1, d->moving[ev->payload]);
}

static int on_handoff(void *ctx, uint32_t inst, sim_req_t *r)
{
	duo_t *d = ctx;
	assert_int_equal(inst, 0);
	d->handoffs++;
	/* what r left behind on the prefill instance */
	d->cached_at_handoff = kv_used(d->cl.inst[0].kv);
	d->private_at_handoff = kv_used_private(d->cl.inst[0].kv);
	d->moving[d->n_moving] = r;
	return ev_engine_after(d->eng, LAND_NS, d->ev_land, 0, d->n_moving++) == EV_NONE;
}

/* Prefill instance 0 and decode instance 1 (decode_kv blocks). */
static void duo_init(duo_t *d, uint32_t decode_kv, int with_hook)
{
	memset(d, 0, sizeof *d);
	static void *ctx[2];
	static uint32_t kv[2];
	static const uint8_t role[2] = {CL_ROLE_PREFILL, CL_ROLE_DECODE};
	ctx[0] = &d->log[0];
	ctx[1] = &d->log[1];
	kv[0] = 64;
	kv[1] = decode_kv;
	cluster_params_t p = {0};
	p.n_instances = 2;
	p.block_tokens = 16;
	p.kv_blocks = 64;
	p.block_bytes = 4096;
	p.max_num_seqs = 8;
	p.max_batched_tokens = 256;
	p.chunked_prefill = 1;
	p.busy_rule = BUSY_WAIT;
	p.sched_mode = SCHED_VLLM;
	p.cost = rec_cost;
	p.inst_cost_ctx = ctx;
	p.inst_kv_blocks = kv;
	p.inst_role = role;
	p.on_handoff = with_hook ? on_handoff : NULL;
	p.hook_ctx = d;
	p.on_result = rec_request;
	p.result_ctx = &d->res;
	d->eng = ev_engine_new(64);
	assert_non_null(d->eng);
	int rc = cluster_init(&d->cl, &p, d->eng);
	if (!with_hook) {
		assert_int_equal(rc, KS_EINPUT);
		return;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(ev_engine_type_new(d->eng, on_land, d, &d->ev_land), 0);
}

static void duo_free(duo_t *d)
{
	cluster_free(&d->cl);
	ev_engine_free(d->eng);
	sim_results_free(&d->res);
}

static void submit(duo_t *d, uint64_t id, uint32_t in, uint32_t out, uint64_t base)
{
	uint64_t ids[16];
	for (uint32_t i = 0; i < in / 16; i++)
		ids[i] = base + i;
	assert_int_equal(cluster_submit(&d->cl, 0, id, in, out, ids, in / 16), 0);
}

static void run_all(duo_t *d)
{
	assert_int_equal(ev_engine_run(d->eng, INT64_MAX), 0);
	assert_int_equal(d->cl.n_live, 0);
	assert_int_equal(cluster_check(&d->cl), 0);
}

/* 40 prompt tokens (2 full blocks + 8), 3 output tokens: prefilled on 0
 * in [0, 1) us with the first token, landed on 1 at 6 us, two decode steps
 * there, in 1's cost context. */
static void test_prefill_hands_off_and_decode_instance_finishes(void **st)
{
	(void)st;
	duo_t d;
	duo_init(&d, 64, 1);
	submit(&d, 7, 40, 3, 100);
	run_all(&d);
	assert_string_equal(d.log[0].log, " P40@0");
	assert_string_equal(d.log[1].log, " D41 | D42");
	assert_int_equal(d.handoffs, 1);
	assert_int_equal(d.cached_at_handoff, 2); /* the full prompt blocks, as cache */
	assert_int_equal(d.private_at_handoff, 0);
	uint64_t ids[2] = {100, 101};
	assert_int_equal(kv_match(d.cl.inst[0].kv, ids, 2), 2);
	assert_int_equal(kv_used(d.cl.inst[1].kv), 0); /* decode keeps no prefix cache */
	assert_int_equal(d.res.n_req, 1);
	const res_request_t *q = &d.res.req[0];
	assert_int_equal(q->status, REQ_COMPLETED);
	assert_int_equal(q->instance, 0);
	assert_int_equal(q->decode_instance, 1);
	assert_int_equal(q->ttft_ns, STEP_NS);
	assert_int_equal(q->handoff_wait_ns, LAND_NS);
	assert_int_equal(q->e2e_ns, STEP_NS + LAND_NS + 2 * STEP_NS);
	duo_free(&d);
}

/* One output token: the prefill's token ends it on the prefill instance. */
static void test_single_token_request_completes_on_the_prefill_instance(void **st)
{
	(void)st;
	duo_t d;
	duo_init(&d, 64, 1);
	submit(&d, 1, 40, 1, 100);
	run_all(&d);
	assert_int_equal(d.handoffs, 0);
	assert_int_equal(d.res.req[0].decode_instance, -1);
	assert_int_equal(d.res.req[0].handoff_wait_ns, -1);
	assert_string_equal(d.log[1].log, "");
	duo_free(&d);
}

/* A decode pool of 3 blocks holds one 41-token context: the second
 * request, landed while the first decodes, waits until it completes. */
static void test_landed_request_waits_for_room_on_the_decode_instance(void **st)
{
	(void)st;
	duo_t d;
	duo_init(&d, 3, 1);
	submit(&d, 1, 40, 3, 100);
	submit(&d, 2, 40, 3, 200);
	run_all(&d);
	assert_string_equal(d.log[0].log, " P40@0 | P40@0");
	assert_string_equal(d.log[1].log, " D41 | D42 | D41 | D42");
	assert_int_equal(d.res.n_req, 2);
	/* prefilled by 2 us, landed at 7 us, admitted at 8 us when the first
	 * completes, two decode steps */
	const res_request_t *q = d.res.req[0].id == 2 ? &d.res.req[0] : &d.res.req[1];
	assert_int_equal(q->ttft_ns, 2 * STEP_NS);
	assert_int_equal(q->handoff_wait_ns, LAND_NS);
	assert_int_equal(q->e2e_ns, 10 * STEP_NS);
	duo_free(&d);
}

static void test_prefill_role_needs_a_handoff_hook(void **st)
{
	(void)st;
	duo_t d;
	duo_init(&d, 64, 0);
	cluster_free(&d.cl);
	ev_engine_free(d.eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefill_hands_off_and_decode_instance_finishes),
		cmocka_unit_test(test_single_token_request_completes_on_the_prefill_instance),
		cmocka_unit_test(test_landed_request_waits_for_room_on_the_decode_instance),
		cmocka_unit_test(test_prefill_role_needs_a_handoff_hook),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
