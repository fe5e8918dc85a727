/* /timeline sampling (sim/run/sim_sample.c, output.timeline): under
 * `changed` an instance gets a row only when its values differ from its last
 * row and a link only while it carries flows (one zero row when it stops),
 * and the rows read as step functions give back, at every tick, what the
 * per-tick rule (`every`) samples; requests are the same under both. The
 * network's active-link list (net_links_active) holds exactly the links that
 * carry a flow past its latency. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim/net/net.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

/* ---- the active-link list ------------------------------------------------- */

static int has(const uint32_t *ids, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

static void test_active_links_are_the_links_with_flows_past_latency(void **st)
{
	(void)st;
	ev_engine_t *eng = ev_engine_new(64);
	net_t *net = net_new(eng, NULL);
	assert_non_null(net);
	uint32_t l[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(net_link_add(net, 1e9, 1000, &l[i], NULL), 0);
	size_t n;
	net_links_active(net, &n);
	assert_int_equal(n, 0);
	/* 1e6 bytes at 1 GB/s: latency 2 us (two links), then 1 ms on links 0,1;
	 * the second, on link 1 alone, joins at 1 us and lasts 2 ms */
	uint32_t p01[] = {l[0], l[1]}, p1[] = {l[1]};
	net_flow_spec_t a = {.bytes = 1000000, .path = p01, .path_len = 2, .cls = NET_FG};
	net_flow_spec_t b = {.bytes = 2000000, .path = p1, .path_len = 1, .cls = NET_BG};
	assert_int_equal(net_flow_start(net, &a, NULL, NULL), 0);
	assert_int_equal(net_flow_start(net, &b, NULL, NULL), 0);
	net_links_active(net, &n);
	assert_int_equal(n, 0); /* both still pay latency: no link carries bytes */
	assert_int_equal(ev_engine_run(eng, 10000), 0);
	const uint32_t *ids = net_links_active(net, &n);
	assert_int_equal(n, 2);
	assert_true(has(ids, n, l[0]) && has(ids, n, l[1]) && !has(ids, n, l[2]));
	/* a has finished (it shared link 1 with b), b still runs on link 1 */
	assert_int_equal(ev_engine_run(eng, 2100000), 0);
	ids = net_links_active(net, &n);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], l[1]);
	assert_int_equal(ev_engine_run(eng, 100000000), 0);
	net_links_active(net, &n);
	assert_int_equal(n, 0);
	net_free(net);
	ev_engine_free(eng);
}

/* ---- whole runs ------------------------------------------------------------ */

static void row_vals(const res_sample_t *x, double v[6])
{
	double w[6] = {x->queue_len,     x->batch_size, x->kv_used_bytes,
		       x->spec_kv_bytes, x->util_fg,    x->util_bg};
	memcpy(v, w, sizeof w);
}

/* Largest instance and link index in rows, + 1. */
static void series_count(const sim_results_t *r, size_t n[2])
{
	for (size_t i = 0; i < r->n_tl; i++)
		if ((size_t)r->tl[i].index + 1 > n[r->tl[i].kind])
			n[r->tl[i].kind] = (size_t)r->tl[i].index + 1;
}

/* Reads `changed` as step functions (a series holds its last row's values;
 * a link without a row is at 0) at each tick of `every`: every row of
 * `every` equals the step value, and the links the steps hold above 0 are
 * exactly the link rows of that tick. Each row of `changed` differs from
 * its series' previous one. */
static void assert_step_equals_every(const sim_results_t *ev, const sim_results_t *ch)
{
	size_t n[2] = {0, 0};
	series_count(ev, n);
	series_count(ch, n);
	double(*cur[2])[6] = {calloc(n[0] + 1, sizeof(double[6])),
			      calloc(n[1] + 1, sizeof(double[6]))};
	char *seen = calloc(n[0] + 1, 1);
	assert_true(cur[0] && cur[1] && seen);
	size_t i = 0, c = 0, ticks = 0;
	while (i < ev->n_tl) {
		int64_t t = ev->tl[i].t_ns;
		for (; c < ch->n_tl && ch->tl[c].t_ns <= t; c++) {
			const res_sample_t *x = &ch->tl[c];
			double v[6];
			row_vals(x, v);
			double *s = cur[x->kind][x->index];
			if (x->kind == TL_LINK || seen[x->index])
				assert_true(memcmp(s, v, sizeof v) != 0);
			if (x->kind == TL_INSTANCE)
				seen[x->index] = 1;
			memcpy(s, v, sizeof v);
		}
		size_t ev_links = 0;
		for (; i < ev->n_tl && ev->tl[i].t_ns == t; i++) {
			const res_sample_t *x = &ev->tl[i];
			double want[6];
			row_vals(x, want);
			assert_memory_equal(cur[x->kind][x->index], want, sizeof want);
			ev_links += x->kind == TL_LINK;
		}
		size_t on = 0;
		for (size_t l = 0; l < n[1]; l++)
			on += cur[1][l][4] != 0 || cur[1][l][5] != 0;
		assert_int_equal(on, ev_links);
		ticks++;
	}
	assert_true(ticks > 2);
	free(cur[0]);
	free(cur[1]);
	free(seen);
}

static void assert_same_requests(const sim_results_t *a, const sim_results_t *b)
{
	assert_int_equal(a->n_req, b->n_req);
	assert_memory_equal(a->req, b->req, a->n_req * sizeof *a->req);
}

/* The default experiment with speculative copies (links carry flows), a
 * 10 ms timeline, under both rules. */
static void test_changed_rows_read_as_steps_equal_every_tick_with_copies(void **st)
{
	(void)st;
	const char *ev_sets[] = {"policy.replication.name=speculative",
				 "policy.predictor.name=oracle", "experiment.until_s=60",
				 "output.timeline_interval_ms=10", "output.timeline=every"};
	const char *ch_sets[] = {"policy.replication.name=speculative",
				 "policy.predictor.name=oracle", "experiment.until_s=60",
				 "output.timeline_interval_ms=10"}; /* changed: the default */
	sim_results_t ev = sf_run(NULL, ev_sets, 5);
	sim_results_t ch = sf_run(NULL, ch_sets, 4);
	assert_true(ev.n_xfer > 0);
	assert_same_requests(&ev, &ch);
	size_t ev_links = 0, ch_links = 0;
	for (size_t i = 0; i < ev.n_tl; i++)
		ev_links += ev.tl[i].kind == TL_LINK;
	for (size_t i = 0; i < ch.n_tl; i++)
		ch_links += ch.tl[i].kind == TL_LINK;
	printf("timeline rows: every %zu (%zu links), changed %zu (%zu links)\n", ev.n_tl, ev_links,
	       ch.n_tl, ch_links);
	assert_true(ev_links > 0 && ch_links > 0);
	assert_true(ch.n_tl < ev.n_tl);
	assert_step_equals_every(&ev, &ch);
	sim_results_free(&ev);
	sim_results_free(&ch);
}

/* A link's last row is 0 once its flows have ended before the run's last
 * tick, and a link never carrying a flow has no row. */
static void test_link_rows_end_at_zero_and_idle_links_have_none(void **st)
{
	(void)st;
	const char *sets[] = {"policy.replication.name=speculative", "policy.predictor.name=oracle",
			      "experiment.until_s=60", "output.timeline_interval_ms=10"};
	const char *ev_sets[] = {"policy.replication.name=speculative",
				 "policy.predictor.name=oracle", "experiment.until_s=60",
				 "output.timeline_interval_ms=10", "output.timeline=every"};
	sim_results_t ch = sf_run(NULL, sets, 4);
	sim_results_t ev = sf_run(NULL, ev_sets, 5);
	int64_t last_tick = ev.tl[ev.n_tl - 1].t_ns;
	size_t n[2] = {0, 0};
	series_count(&ev, n);
	series_count(&ch, n);
	int64_t *busy_until = malloc((n[1] + 1) * sizeof *busy_until);
	const res_sample_t **lastrow = calloc(n[1] + 1, sizeof *lastrow);
	assert_true(busy_until && lastrow);
	for (size_t l = 0; l < n[1]; l++)
		busy_until[l] = -1;
	for (size_t k = 0; k < ev.n_tl; k++)
		if (ev.tl[k].kind == TL_LINK)
			busy_until[ev.tl[k].index] = ev.tl[k].t_ns;
	for (size_t k = 0; k < ch.n_tl; k++)
		if (ch.tl[k].kind == TL_LINK)
			lastrow[ch.tl[k].index] = &ch.tl[k];
	size_t ended = 0, links = 0;
	for (size_t l = 0; l < n[1]; l++) {
		/* rows only for links that carried flows */
		assert_true(!lastrow[l] || busy_until[l] >= 0);
		assert_true(lastrow[l] || busy_until[l] < 0);
		if (!lastrow[l])
			continue;
		links++;
		if (busy_until[l] < last_tick) {
			assert_true(lastrow[l]->t_ns > busy_until[l]);
			assert_true(lastrow[l]->util_fg == 0 && lastrow[l]->util_bg == 0);
			ended++;
		}
	}
	assert_true(ended > 0);
	free(busy_until);
	free(lastrow);
	printf("%zu of %zu links with rows went idle before the last tick\n", ended, links);
	sim_results_free(&ch);
	sim_results_free(&ev);
}

/* Two instances, round robin, one request: instance 1 never works. */
static void test_idle_instance_gets_one_row_then_none(void **st)
{
	(void)st;
	const char *sets[] = {"cluster.nodes=1", "cluster.gpus_per_node=8", "cluster.tp=4",
			      "policy.routing.name=round_robin", "output.timeline_interval_ms=1"};
	sf_prefix_t p = sf_prefix(1, 4, 100, 1000, 200);
	sim_source_t src = {sf_prefix_next, &p, "test:prefix"};
	sim_results_t r = sf_run_source(NULL, sets, 5, &src);
	p = sf_prefix(1, 4, 100, 1000, 200);
	const char *ev_sets[] = {"cluster.nodes=1", "cluster.gpus_per_node=8", "cluster.tp=4",
				 "policy.routing.name=round_robin", "output.timeline_interval_ms=1",
				 "output.timeline=every"};
	sim_results_t ev = sf_run_source(NULL, ev_sets, 6, &src);
	size_t rows[2] = {0, 0}, ev_rows[2] = {0, 0};
	for (size_t i = 0; i < r.n_tl; i++) {
		assert_int_equal(r.tl[i].kind, TL_INSTANCE);
		rows[r.tl[i].index]++;
		if (r.tl[i].index == 1) {
			assert_int_equal(r.tl[i].t_ns, 0); /* the first tick only */
			assert_true(r.tl[i].queue_len == 0 && r.tl[i].batch_size == 0 &&
				    r.tl[i].kv_used_bytes == 0);
		}
	}
	for (size_t i = 0; i < ev.n_tl; i++)
		ev_rows[ev.tl[i].index]++;
	printf("rows: instance 0 %zu of %zu ticks, instance 1 %zu\n", rows[0], ev_rows[0], rows[1]);
	assert_int_equal(rows[1], 1);
	assert_true(ev_rows[1] > 3);
	assert_true(rows[0] > 1 && rows[0] < ev_rows[0]);
	assert_step_equals_every(&ev, &r);
	sim_results_free(&r);
	sim_results_free(&ev);
}

/* Two instances, round robin, 8 requests 300 ms apart: each instance's
 * rows are its changes (assert_step_equals_every checks that consecutive
 * rows differ and that the steps give every tick back), far fewer than its
 * ticks. */
static void test_busy_instance_rows_only_on_change(void **st)
{
	(void)st;
	const char *sets[] = {"cluster.nodes=1", "cluster.gpus_per_node=8", "cluster.tp=4",
			      "policy.routing.name=round_robin", "output.timeline_interval_ms=1",
			      "output.timeline=every"};
	sf_prefix_t p = sf_prefix(8, 4, 100, 1000, 200);
	p.gap_ns = 300 * 1000000LL;
	sim_source_t src = {sf_prefix_next, &p, "test:prefix"};
	sim_results_t r = sf_run_source(NULL, sets, 5, &src);
	p = sf_prefix(8, 4, 100, 1000, 200);
	p.gap_ns = 300 * 1000000LL;
	sim_results_t ev = sf_run_source(NULL, sets, 6, &src);
	size_t rows[2] = {0, 0}, ev_rows[2] = {0, 0};
	for (size_t i = 0; i < r.n_tl; i++)
		rows[r.tl[i].index]++;
	for (size_t i = 0; i < ev.n_tl; i++)
		ev_rows[ev.tl[i].index]++;
	printf("rows: instance 0 %zu of %zu ticks, instance 1 %zu of %zu\n", rows[0], ev_rows[0],
	       rows[1], ev_rows[1]);
	for (int k = 0; k < 2; k++)
		assert_true(rows[k] > 4 && rows[k] * 10 < ev_rows[k]);
	assert_step_equals_every(&ev, &r);
	sim_results_free(&r);
	sim_results_free(&ev);
}

/* A run whose simulated time stretches to years (gpu.flops_bf16 = 1e7: one
 * prefill lasts days) dispatched every idle 100 ms tick (hours of wall
 * time): idle ticks are skipped, so its events are about those of its
 * requests. Where `every` is affordable (1e11 FLOP/s, ~1e5 ticks), the
 * rows of `changed` still read as its ticks and the requests are the same.
 * alarm() catches a hang only. */
static void test_idle_ticks_are_skipped_and_rows_unchanged(void **st)
{
	(void)st;
	alarm(600);
	const char *slow[] = {"model.name=Llama-3-8B", "cluster.tp=1", "gpu.flops_bf16=1e7"};
	sf_prefix_t p = sf_prefix(20, 4, 100, 9000, 8);
	p.gap_ns = 1000000000;
	sim_source_t src = {sf_prefix_next, &p, "seq"};
	sim_results_t r = sf_run_source(NULL, slow, 3, &src);
	double t = sim_results_get(&r, "sim_time_s"), evs = sim_results_get(&r, "sim_events");
	printf("flops 1e7: %.3g s simulated in %.0f events\n", t, evs);
	assert_int_equal(r.n_req, 20);
	assert_true(t > 1e6); /* > 1e7 ticks of 100 ms */
	assert_true(evs < 1e5); /* not one per tick */
	sim_results_free(&r);
	const char *ev_sets[] = {"model.name=Llama-3-8B", "cluster.tp=1", "gpu.flops_bf16=1e11",
				 "output.timeline=every"};
	sf_prefix_t p1 = sf_prefix(20, 4, 100, 9000, 8), p2 = p1;
	p1.gap_ns = p2.gap_ns = 1000000000;
	sim_source_t s1 = {sf_prefix_next, &p1, "seq"}, s2 = {sf_prefix_next, &p2, "seq"};
	sim_results_t ev = sf_run_source(NULL, ev_sets, 4, &s1);
	sim_results_t ch = sf_run_source(NULL, ev_sets, 3, &s2);
	assert_same_requests(&ev, &ch);
	assert_step_equals_every(&ev, &ch);
	assert_true(sim_results_get(&ch, "sim_events") * 10 < sim_results_get(&ev, "sim_events"));
	sim_results_free(&ev);
	sim_results_free(&ch);
	alarm(0);
}

TEST_MAIN(cmocka_unit_test(test_active_links_are_the_links_with_flows_past_latency),
	  cmocka_unit_test(test_changed_rows_read_as_steps_equal_every_tick_with_copies),
	  cmocka_unit_test(test_link_rows_end_at_zero_and_idle_links_have_none),
	  cmocka_unit_test(test_idle_instance_gets_one_row_then_none),
	  cmocka_unit_test(test_busy_instance_rows_only_on_change),
	  cmocka_unit_test(test_idle_ticks_are_skipped_and_rows_unchanged))
