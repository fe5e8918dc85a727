/* /timeline under output.timeline = changed visits only the instances
 * touched since the last tick (sim_touch: enqueues and scheduler steps in
 * the cluster, copies starting, landing or cancelled). On runs where state
 * moves outside the instances' own iterations (speculative copies landing
 * and evicting, preemptions, a fan-out burst), each instance's rows read as
 * a step function still equal the full scan (`every`) at every tick, so no
 * change is missed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

/* Largest instance index in r's rows, + 1. */
static size_t inst_count(const sim_results_t *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_tl; i++)
		if (r->tl[i].kind == TL_INSTANCE && (size_t)r->tl[i].index + 1 > n)
			n = (size_t)r->tl[i].index + 1;
	return n;
}

/* Every instance row of `every` equals the last `changed` row of its
 * instance at or before its tick; returns the ticks compared. */
static size_t assert_instances_step_equal(const sim_results_t *ev, const sim_results_t *ch)
{
	size_t n = inst_count(ev);
	assert_int_equal(inst_count(ch), n);
	const res_sample_t **last = calloc(n, sizeof *last);
	assert_non_null(last);
	size_t c = 0, ticks = 0;
	int64_t t_prev = -1;
	for (size_t i = 0; i < ev->n_tl; i++) {
		const res_sample_t *x = &ev->tl[i];
		if (x->kind != TL_INSTANCE)
			continue;
		for (; c < ch->n_tl && ch->tl[c].t_ns <= x->t_ns; c++)
			if (ch->tl[c].kind == TL_INSTANCE)
				last[ch->tl[c].index] = &ch->tl[c];
		const res_sample_t *y = last[x->index];
		assert_non_null(y);
		if (y->queue_len != x->queue_len || y->batch_size != x->batch_size ||
		    y->kv_used_bytes != x->kv_used_bytes || y->spec_kv_bytes != x->spec_kv_bytes)
			fail_msg("instance %d at t=%lld ns: changed reads %g %g %g %g, every %g %g %g %g",
			         x->index, (long long)x->t_ns, y->queue_len, y->batch_size,
			         y->kv_used_bytes, y->spec_kv_bytes, x->queue_len, x->batch_size,
			         x->kv_used_bytes, x->spec_kv_bytes);
		ticks += x->t_ns != t_prev;
		t_prev = x->t_ns;
	}
	free(last);
	return ticks;
}

/* Runs config with sets under both rules; the rows must agree and
 * the run must move speculative KV (spec_kv_bytes > 0 in some row). */
static void run_both(const char *config, const char *name, const char **sets, int n)
{
	const char *s[12];
	for (int i = 0; i < n; i++)
		s[i] = sets[i];
	s[n] = "output.timeline=every";
	sim_results_t ev = sf_run(config, s, n + 1);
	s[n] = "output.timeline=changed";
	sim_results_t ch = sf_run(config, s, n + 1);
	assert_int_equal(ev.n_req, ch.n_req);
	assert_memory_equal(ev.req, ch.req, ev.n_req * sizeof *ev.req);
	size_t spec = 0, ch_inst = 0, ev_inst = 0;
	for (size_t i = 0; i < ev.n_tl; i++) {
		spec += ev.tl[i].kind == TL_INSTANCE && ev.tl[i].spec_kv_bytes > 0;
		ev_inst += ev.tl[i].kind == TL_INSTANCE;
	}
	for (size_t i = 0; i < ch.n_tl; i++)
		ch_inst += ch.tl[i].kind == TL_INSTANCE;
	size_t ticks = assert_instances_step_equal(&ev, &ch);
	printf("%s: %zu ticks, instance rows every %zu, changed %zu, %zu with speculative KV, "
	       "%zu copies\n",
	       name, ticks, ev_inst, ch_inst, spec, ev.n_xfer);
	assert_true(ticks > 100);
	assert_true(spec > 0);
	assert_true(ch_inst < ev_inst);
	sim_results_free(&ev);
	sim_results_free(&ch);
}

/* Speculative replication with the oracle on a small pool of 16-token
 * blocks: copies land, evict and are used while decodes preempt. */
static void test_dirty_timeline_equals_full_scan_with_copies_and_preemption(void **st)
{
	(void)st;
	const char *sets[] = {"policy.replication.name=speculative", "policy.predictor.name=oracle",
	                      "cluster.kv_blocks=400",              "kvcache.block_tokens=16",
	                      "trace.duration_s=30",               "output.timeline_interval_ms=10"};
	run_both(NULL, "speculative, 400 blocks of 16 tokens", sets, 6);
}

/* Fan-out bursts (40 requests on one prefix at once) with speculative
 * replication of the burst's prefix. */
static void test_dirty_timeline_equals_full_scan_on_a_fanout_burst(void **st)
{
	(void)st;
	const char *sets[] = {"trace.fanout_bursts=2",
	                      "trace.fanout_size=40",
	                      "trace.duration_s=60",
	                      "policy.replication.name=speculative",
	                      "policy.predictor.name=oracle",
	                      "output.timeline_interval_ms=10"};
	run_both("analysis/experiments/fanout_65k.ini", "fan-out bursts", sets, 6);
}

TEST_MAIN(cmocka_unit_test(test_dirty_timeline_equals_full_scan_with_copies_and_preemption),
          cmocka_unit_test(test_dirty_timeline_equals_full_scan_on_a_fanout_burst))
