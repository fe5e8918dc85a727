/* Tests of sim/net (net.c, net_solve.c): hand-computed max-min cases exact to the documented
 * rounding rule, class priority and background scheduling, and a property
 * test of the incremental solver against an independent from-scratch one. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "sim/net/net.h"

#define T_ACT 2
#define MAXF 64

typedef struct fx {
	ev_engine_t *eng;
	net_t *net;
	int64_t end[MAXF];
	uint64_t id[MAXF];
	int n;
} fx_t;

static int on_done(void *ctx, net_t *net, const net_flow_rec_t *r)
{
	(void)net;
	fx_t *f = ctx;
	f->end[r->tag] = r->end_ns;
	return 0;
}

static void fx_init(fx_t *f)
{
	memset(f, 0, sizeof *f);
	f->eng = ev_engine_new(64);
	assert_non_null(f->eng);
	f->net = net_new(f->eng, NULL);
	assert_non_null(f->net);
	for (int i = 0; i < MAXF; i++)
		f->end[i] = -1;
}

static void fx_free(fx_t *f)
{
	net_free(f->net);
	ev_engine_free(f->eng);
}

static uint32_t link(fx_t *f, double Bps, int64_t lat)
{
	uint32_t id;
	assert_int_equal(net_link_add(f->net, Bps, lat, &id, NULL), 0);
	return id;
}

/* Starts flow number f->n now; returns its index. */
static int flow(fx_t *f, uint64_t bytes, net_class_t cls, double cap, int n, ...)
{
	uint32_t path[NET_PATH_MAX];
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		path[i] = va_arg(ap, uint32_t);
	va_end(ap);
	net_flow_spec_t s = {.bytes = bytes, .path = path, .path_len = (uint32_t)n, .cls = cls,
			     .rate_cap = cap, .tag = (uint64_t)f->n, .done = on_done, .ctx = f};
	int k = f->n++;
	assert_int_equal(net_flow_start(f->net, &s, &f->id[k], NULL), 0);
	return k;
}

static void run_until(fx_t *f, int64_t t)
{
	assert_int_equal(ev_engine_run(f->eng, t), 0);
}

static void test_rounding_rule_ceil_ns(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t l = link(&f, 3e9, 0); /* 3 bytes/ns */
	flow(&f, 1000, NET_FG, 0, 1, l); /* 333.33 ns -> 334 */
	flow(&f, 3000, NET_FG, 0, 0 + 1, link(&f, 3e9, 7)); /* exactly 1000 ns + 7 */
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[0], 334);
	assert_int_equal(f.end[1], 1007);
	fx_free(&f);
}

static void test_maxmin_three_flows_share_dumbbell_bottleneck(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t a[3], d[3];
	for (int i = 0; i < 3; i++) {
		a[i] = link(&f, 10e9, 0);
		d[i] = link(&f, 10e9, 0);
	}
	uint32_t b = link(&f, 3e9, 100);
	flow(&f, 3000, NET_FG, 0, 3, a[0], b, d[0]);
	flow(&f, 6000, NET_FG, 0, 3, a[1], b, d[1]);
	flow(&f, 9000, NET_FG, 0, 3, a[2], b, d[2]);
	run_until(&f, 200);
	for (int i = 0; i < 3; i++)
		assert_float_equal(net_flow_rate(f.net, f.id[i]), 1e9, 1e-3);
	run_until(&f, INT64_MAX);
	/* 1 B/ns each until 3100; then 1.5 each; then 3 */
	assert_int_equal(f.end[0], 3100);
	assert_int_equal(f.end[1], 5100);
	assert_int_equal(f.end[2], 6100);
	net_stats_t s;
	net_get_stats(f.net, &s);
	assert_int_equal(s.fg_done, 3);
	/* alone: 100 + 1000, 100 + 2000, 100 + 3000 */
	assert_float_equal(s.fg_alone_ns, 6300, 1e-9);
	assert_float_equal(s.fg_actual_ns, 3100 + 5100 + 6100, 1e-9);
	fx_free(&f);
}

static void test_maxmin_parking_lot_chain(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t l1 = link(&f, 2e9, 0), l2 = link(&f, 4e9, 0), l3 = link(&f, 2e9, 0);
	int lng = flow(&f, 4000, NET_FG, 0, 3, l1, l2, l3);
	int s1 = flow(&f, 1000, NET_FG, 0, 1, l1);
	int s2 = flow(&f, 6000, NET_FG, 0, 1, l2);
	int s3 = flow(&f, 3000, NET_FG, 0, 1, l3);
	run_until(&f, 0);
	assert_float_equal(net_flow_rate(f.net, f.id[lng]), 1e9, 1e-3);
	assert_float_equal(net_flow_rate(f.net, f.id[s2]), 3e9, 1e-3);
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[s1], 1000);
	assert_int_equal(f.end[s2], 2000);
	assert_int_equal(f.end[s3], 3000);
	assert_int_equal(f.end[lng], 3500);
	fx_free(&f);
}

static void test_maxmin_flow_bottlenecked_elsewhere_frees_capacity(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t A = link(&f, 4e9, 0), B = link(&f, 1e9, 0);
	int f1 = flow(&f, 3000, NET_FG, 0, 1, A);
	int f2 = flow(&f, 6000, NET_FG, 0, 1, A);
	int f3 = flow(&f, 1000, NET_FG, 0, 2, A, B);
	run_until(&f, 0);
	assert_float_equal(net_flow_rate(f.net, f.id[f1]), 1.5e9, 1e-3);
	assert_float_equal(net_flow_rate(f.net, f.id[f3]), 1e9, 1e-3);
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[f3], 1000);
	assert_int_equal(f.end[f1], 1750);
	assert_int_equal(f.end[f2], 2500);
	fx_free(&f);
}

static void test_maxmin_capped_flow_leaves_rest_to_others(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t l = link(&f, 3e9, 0);
	int c = flow(&f, 1000, NET_FG, 0.5e9, 1, l);
	int u = flow(&f, 10000, NET_FG, 0, 1, l);
	run_until(&f, 0);
	assert_float_equal(net_flow_rate(f.net, f.id[c]), 0.5e9, 1e-3);
	assert_float_equal(net_flow_rate(f.net, f.id[u]), 2.5e9, 1e-3);
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[c], 2000);
	assert_int_equal(f.end[u], 2000 + 1667); /* 5000 B at 3 B/ns: ceil(1666.7) */
	fx_free(&f);
}

static void test_identical_paths_aggregate_and_finish_in_order(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t l = link(&f, 1e9, 0);
	for (int i = 0; i < 4; i++)
		flow(&f, (uint64_t)(1000 * (i + 1)), NET_FG, 0, 1, l);
	run_until(&f, INT64_MAX);
	/* PS on 1 B/ns: 4000, 7000, 9000, 10000 */
	assert_int_equal(f.end[0], 4000);
	assert_int_equal(f.end[1], 7000);
	assert_int_equal(f.end[2], 9000);
	assert_int_equal(f.end[3], 10000);
	fx_free(&f);
}

/* Starts a flow at a given time through an action event. */
typedef struct late {
	fx_t *f;
	uint64_t bytes;
	net_class_t cls;
	double cap;
	uint32_t link;
} late_t;
static late_t lates[8];

static int on_act(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)ctx;
	(void)eng;
	late_t *L = &lates[ev->target];
	flow(L->f, L->bytes, L->cls, L->cap, 1, L->link);
	return 0;
}

static void late_flow(fx_t *f, int slot, int64_t t, uint64_t bytes, net_class_t cls, double cap,
		      uint32_t l)
{
	lates[slot] = (late_t){f, bytes, cls, cap, l};
	assert_int_equal(ev_engine_register(f->eng, T_ACT, on_act, NULL), 0);
	assert_true(ev_engine_at(f->eng, t, T_ACT, (uint32_t)slot, 0) != EV_NONE);
}

static void test_strict_priority_background_drops_to_residual_and_recovers(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t l = link(&f, 2e9, 0);
	int bg = flow(&f, 10000, NET_BG, 0, 1, l);
	late_flow(&f, 0, 1000, 1500, NET_FG, 1.5e9, l); /* becomes flow 1 */
	run_until(&f, 500);
	assert_float_equal(net_flow_rate(f.net, f.id[bg]), 2e9, 1e-3);
	run_until(&f, 1500);
	assert_float_equal(net_flow_rate(f.net, f.id[1]), 1.5e9, 1e-3);
	assert_float_equal(net_flow_rate(f.net, f.id[bg]), 0.5e9, 1e-3);
	run_until(&f, 2500);
	assert_int_equal(f.end[1], 2000);
	assert_float_equal(net_flow_rate(f.net, f.id[bg]), 2e9, 1e-3);
	run_until(&f, INT64_MAX);
	/* 2000 by 1000, 500 more by 2000, 7500 at 2 B/ns */
	assert_int_equal(f.end[bg], 5750);
	net_link_stats_t ls;
	assert_int_equal(net_link_stats(f.net, l, &ls), 0);
	assert_float_equal(ls.bytes[NET_FG], 1500, 1e-6);
	assert_float_equal(ls.bytes[NET_BG], 10000, 1e-6);
	assert_int_equal(ls.busy_ns[NET_FG], 1000);
	assert_int_equal(ls.busy_ns[NET_BG], 5750);
	fx_free(&f);
}

static void test_weighted_share_gives_background_its_weight(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	assert_int_equal(net_set_share(f.net, NET_SHARE_WEIGHTED, 0.25, NULL), 0);
	uint32_t l = link(&f, 2e9, 0);
	int bg = flow(&f, 100000, NET_BG, 0, 1, l);
	int fg = flow(&f, 100000, NET_FG, 0, 1, l);
	run_until(&f, 0);
	assert_float_equal(net_flow_rate(f.net, f.id[fg]), 1.6e9, 1e-3);
	assert_float_equal(net_flow_rate(f.net, f.id[bg]), 0.4e9, 1e-3);
	fx_free(&f);
}

static void test_rate_cap_mode_limits_background_share_of_link(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	assert_int_equal(net_set_bg_mode(f.net, NET_BG_RATE_CAP, 0.25, NULL), 0);
	uint32_t l = link(&f, 2e9, 0);
	int b1 = flow(&f, 1000, NET_BG, 0, 1, l);
	int b2 = flow(&f, 1000, NET_BG, 0, 1, l);
	run_until(&f, 0);
	assert_float_equal(net_flow_rate(f.net, f.id[b1]), 0.25e9, 1e-3);
	assert_float_equal(net_flow_rate(f.net, f.id[b2]), 0.25e9, 1e-3);
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[b1], 4000);
	fx_free(&f);
}

static void test_idle_window_pauses_background_while_foreground_busy(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	assert_int_equal(net_set_bg_mode(f.net, NET_BG_IDLE_WINDOW, 0.5, NULL), 0);
	uint32_t l = link(&f, 2e9, 0);
	int bg = flow(&f, 10000, NET_BG, 0, 1, l);
	late_flow(&f, 0, 1000, 1500, NET_FG, 1.5e9, l); /* util 0.75 >= 0.5 */
	run_until(&f, 1500);
	assert_float_equal(net_flow_rate(f.net, f.id[bg]), 0, 1e-9);
	assert_int_equal(net_flow_eta(f.net, f.id[bg]), INT64_MAX);
	run_until(&f, 2000);
	assert_float_equal(net_flow_rate(f.net, f.id[bg]), 2e9, 1e-3);
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[bg], 6000);
	fx_free(&f);
}

static void test_idle_window_lets_background_run_under_threshold(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	assert_int_equal(net_set_bg_mode(f.net, NET_BG_IDLE_WINDOW, 0.5, NULL), 0);
	uint32_t l = link(&f, 2e9, 0);
	int bg = flow(&f, 10000, NET_BG, 0, 1, l);
	int fg = flow(&f, 500, NET_FG, 0.5e9, 1, l); /* util 0.25 */
	run_until(&f, 0);
	assert_float_equal(net_flow_rate(f.net, f.id[bg]), 1.5e9, 1e-3);
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[fg], 1000);
	/* 1500 by 1000, then 8500 at 2 */
	assert_int_equal(f.end[bg], 5250);
	fx_free(&f);
}

/* Weighted share with an idle window (the rule in net.h): the test reads the
 * foreground-only fill. L = 0.9 B/ns, X = 0.2 B/ns; fg a crosses X and L,
 * fg b crosses L, bg c crosses L, threshold 1. Foreground alone: a = 0.2 (X),
 * b = 0.7, so foreground fills L (0.2 + 0.7 = 0.9, which in doubles sums to
 * just under 0.9) and c is paused: a ends at 200000 / 0.2 = 1,000,000,
 * b at 700000 / 0.7 = 1,000,000, then c alone at 0.9: 90000 / 0.9 = 100,000
 * more, 1,100,000. (Read without the 1e-9 tolerance, c took 1/3 of the
 * 0.7 left on L, b ended at 1,100,001 and c at 385,715.) */
static void test_idle_window_weighted_reads_foreground_only_fill(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	assert_int_equal(net_set_share(f.net, NET_SHARE_WEIGHTED, 0.5, NULL), 0);
	assert_int_equal(net_set_bg_mode(f.net, NET_BG_IDLE_WINDOW, 1, NULL), 0);
	uint32_t L = link(&f, 9e8, 0), X = link(&f, 2e8, 0);
	int a = flow(&f, 200000, NET_FG, 0, 2, X, L);
	int b = flow(&f, 700000, NET_FG, 0, 1, L);
	int c = flow(&f, 90000, NET_BG, 0, 1, L);
	run_until(&f, 0);
	assert_float_equal(net_flow_rate(f.net, f.id[c]), 0, 1e-9);
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[a], 1000000);
	assert_int_equal(f.end[b], 1000000);
	assert_int_equal(f.end[c], 1100000);
	fx_free(&f);

	/* Not the weighted allocation: with c running, fg would get 1.6 of 2 B/ns
	 * (0.8 < 0.9), but alone it fills the link, so c waits: fg ends at
	 * 2000 / 2 = 1000, c at 1000 + 1000 / 2 = 1500 (weighted: 1250, 2000). */
	fx_init(&f);
	assert_int_equal(net_set_share(f.net, NET_SHARE_WEIGHTED, 0.25, NULL), 0);
	assert_int_equal(net_set_bg_mode(f.net, NET_BG_IDLE_WINDOW, 0.9, NULL), 0);
	uint32_t l = link(&f, 2e9, 0);
	int fg = flow(&f, 2000, NET_FG, 0, 1, l);
	int bg = flow(&f, 1000, NET_BG, 0, 1, l);
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[fg], 1000);
	assert_int_equal(f.end[bg], 1500);
	fx_free(&f);
}

/* A new flow's estimate counts the flows of its class or above on each
 * link (net.h), kept as flows join, finish and are cancelled: on link A
 * (1 B/ns) with one foreground flow and two background flows, and link B
 * (1 B/ns) with one foreground flow and the same two background flows,
 * 1,000 bytes take 2,000 ns in the foreground on A and 4,000 ns in the
 * background; a cancelled background flow and a finished foreground one
 * leave the counts at once. */
static void test_estimate_counts_flows_as_they_join_and_leave(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	assert_int_equal(net_set_share(f.net, NET_SHARE_WEIGHTED, 1, NULL), 0);
	uint32_t a = link(&f, 1e9, 0), b = link(&f, 1e9, 0), ab[2] = {a, b};
	int fa = flow(&f, 1000000, NET_FG, 0, 1, a);
	int b1 = flow(&f, 100000000, NET_BG, 0, 2, a, b);
	(void)flow(&f, 100000000, NET_BG, 0, 2, a, b);
	(void)flow(&f, 100000000, NET_FG, 0, 1, b);
	run_until(&f, 0);
	int64_t now = ev_engine_now(f.eng);
	assert_int_equal(net_path_estimate(f.net, &a, 1, NET_FG, 1000) - now, 2000);
	assert_int_equal(net_path_estimate(f.net, &a, 1, NET_BG, 1000) - now, 4000);
	assert_int_equal(net_path_estimate(f.net, ab, 2, NET_BG, 1000) - now, 4000);
	assert_int_equal(net_path_estimate(f.net, &b, 1, NET_FG, 1000) - now, 2000);
	assert_int_equal(net_flow_cancel(f.net, f.id[b1], NULL, NULL), 0);
	assert_int_equal(net_path_estimate(f.net, &a, 1, NET_BG, 1000) - now, 3000);
	assert_int_equal(net_path_estimate(f.net, &b, 1, NET_BG, 1000) - now, 3000);
	assert_int_equal(net_path_estimate(f.net, &a, 1, NET_FG, 1000) - now, 2000);
	run_until(&f, 10000000); /* the foreground flow on A has finished */
	assert_true(f.end[fa] > 0);
	now = ev_engine_now(f.eng);
	assert_int_equal(net_path_estimate(f.net, &a, 1, NET_FG, 1000) - now, 1000);
	assert_int_equal(net_path_estimate(f.net, &a, 1, NET_BG, 1000) - now, 2000);
	assert_int_equal(net_path_estimate(f.net, ab, 2, NET_BG, 1000) - now, 3000);
	fx_free(&f);
}

/* Times past INT64_MAX ns saturate to never (net.h): 100 bytes at 1e-8 B/s
 * take 1e19 ns, so the flow gets no completion event (the run ends with it
 * active, where the engine used to overflow), and a flow whose latency would
 * pass INT64_MAX is refused. */
static void test_finish_past_int64_saturates_to_never(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t l = link(&f, 1e-8, 0);
	int a = flow(&f, 100, NET_FG, 0, 1, l);
	run_until(&f, 0);
	assert_true(net_flow_eta(f.net, f.id[a]) == INT64_MAX);
	assert_true(net_path_estimate(f.net, &l, 1, NET_FG, 100) == INT64_MAX);
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[a], -1);
	assert_float_equal(net_flow_rate(f.net, f.id[a]), 1e-8, 1e-12);
	net_stats_t ns;
	net_get_stats(f.net, &ns);
	assert_int_equal(ns.active, 1);
	fx_free(&f);

	fx_init(&f);
	uint32_t p[2] = {link(&f, 1e9, INT64_MAX / 2 + 1), link(&f, 1e9, INT64_MAX / 2 + 1)};
	net_flow_spec_t s = {.bytes = 1, .path = p, .path_len = 2, .cls = NET_FG};
	err_t e = {0};
	assert_int_equal(net_flow_start(f.net, &s, NULL, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "passes INT64_MAX"));
	net_flow_spec_t o = {.bytes = 1, .path = p, .path_len = 1, .cls = NET_FG,
			     .n_copies = 4000000000u, .copy_overhead_ns = 4000000000};
	assert_int_equal(net_flow_start(f.net, &o, NULL, &e), KS_EINPUT);
	fx_free(&f);
}

static uint64_t cancel_got;
static int on_cancel(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	fx_t *f = ctx;
	assert_int_equal(net_flow_cancel(f->net, f->id[ev->target], &cancel_got, NULL), 0);
	return 0;
}

static void test_cancel_returns_delivered_bytes_and_frees_capacity(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t l = link(&f, 2e9, 0);
	int a = flow(&f, 10000, NET_FG, 0, 1, l);
	int b = flow(&f, 10000, NET_FG, 0, 1, l);
	assert_int_equal(ev_engine_register(f.eng, T_ACT, on_cancel, &f), 0);
	assert_true(ev_engine_at(f.eng, 1000, T_ACT, (uint32_t)a, 0) != EV_NONE);
	run_until(&f, 1000);
	uint64_t got = cancel_got;
	assert_int_equal(got, 1000);
	assert_int_not_equal(net_flow_cancel(f.net, f.id[a], &got, NULL), 0);
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[a], -1);
	assert_int_equal(f.end[b], 1000 + 4500);
	size_t n;
	const net_flow_rec_t *r = net_records(f.net, &n);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].cancelled, 1);
	assert_int_equal(r[0].delivered, 1000);
	assert_int_equal(r[1].delivered, 10000);
	fx_free(&f);
}

static void test_block_copies_pay_per_copy_overhead_as_startup(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t l = link(&f, 1e9, 50);
	uint32_t p[1] = {l};
	net_flow_spec_t s = {.bytes = 1000, .path = p, .path_len = 1, .n_copies = 8,
			     .copy_overhead_ns = 100, .tag = 0, .done = on_done, .ctx = &f};
	assert_int_equal(net_flow_start(f.net, &s, &f.id[0], NULL), 0);
	s.n_copies = 1;
	s.tag = 1;
	assert_int_equal(net_flow_start(f.net, &s, &f.id[1], NULL), 0);
	run_until(&f, INT64_MAX);
	/* contiguous joins at 150, granular at 850 (50 + 8 * 100); they share
	 * from 850: 300 B left at 0.5 B/ns -> 1450; then 700 B at 1 B/ns */
	assert_int_equal(f.end[1], 1450);
	assert_int_equal(f.end[0], 2150);
	fx_free(&f);
}

static void test_bad_flow_specs_are_rejected(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	uint32_t l = link(&f, 1e9, 0);
	uint32_t p[2] = {l, l}, q[1] = {99};
	err_t e;
	net_flow_spec_t s = {.bytes = 1, .path = p, .path_len = 2};
	assert_int_equal(net_flow_start(f.net, &s, NULL, &e), KS_EINPUT);
	s.path = q;
	s.path_len = 1;
	assert_int_equal(net_flow_start(f.net, &s, NULL, &e), KS_EINPUT);
	s.path_len = 0;
	assert_int_equal(net_flow_start(f.net, &s, NULL, &e), KS_EINPUT);
	assert_int_equal(net_link_add(f.net, 0, 0, NULL, &e), KS_EINPUT);
	assert_int_equal(net_set_share(f.net, NET_SHARE_WEIGHTED, 1.5, &e), KS_EINPUT);
	/* below the floor capacity / weight overflows in the solver */
	assert_int_equal(net_set_share(f.net, NET_SHARE_WEIGHTED, 1e-300, &e), KS_EINPUT);
	assert_int_equal(net_set_share(f.net, NET_SHARE_WEIGHTED, NET_BG_WEIGHT_MIN, &e), 0);
	assert_int_equal(net_set_bg_mode(f.net, NET_BG_IDLE_WINDOW, 0, &e), KS_EINPUT);
	fx_free(&f);
}

/* ---- property test: incremental vs an independent from-scratch solver ------ */

#define PL 12 /* links */
#define PF 24 /* flows per sequence */

typedef struct pf {
	int len;
	uint32_t path[4];
	net_class_t cls;
	double cap; /* bytes/ns or 0 */
	uint64_t bytes;
	uint64_t id;
	int state; /* 0 not started, 1 started, 2 done */
	int64_t t_join;
	double served, rate;
	int64_t t_last;
} pf_t;

typedef struct prop {
	ev_engine_t *eng;
	net_t *net;
	double cap[PL];
	int64_t lat[PL];
	pf_t fl[PF];
	net_share_t share;
	double w;
	net_bg_mode_t mode;
	double param;
	int64_t quantum;
	int checks, ref_checks;
} prop_t;

/* Naive weighted progressive filling over explicit constraint rows. */
static void ref_fill(int n, const int *in, const double *wt, const double *cap, int nrows,
		     const double *rcap, int m[][PF], double *rate)
{
	int frozen[PF] = {0};
	for (;;) {
		double best = INFINITY;
		int brow = -1, bflow = -1;
		for (int i = 0; i < n; i++)
			if (in[i] && !frozen[i] && cap[i] > 0 && cap[i] / wt[i] < best) {
				best = cap[i] / wt[i];
				bflow = i;
			}
		for (int r = 0; r < nrows; r++) {
			double used = 0, w = 0;
			for (int i = 0; i < n; i++) {
				if (!in[i] || !m[r][i])
					continue;
				if (frozen[i])
					used += rate[i];
				else
					w += wt[i];
			}
			if (w == 0)
				continue;
			double lv = fmax(0, rcap[r] - used) / w;
			if (lv < best) {
				best = lv;
				brow = r;
				bflow = -1;
			}
		}
		if (bflow < 0 && brow < 0)
			return;
		if (bflow >= 0) {
			rate[bflow] = cap[bflow];
			frozen[bflow] = 1;
			continue;
		}
		for (int i = 0; i < n; i++)
			if (in[i] && !frozen[i] && m[brow][i]) {
				rate[i] = best * wt[i];
				frozen[i] = 1;
			}
	}
}

static void ref_solve(const prop_t *p, const int *active, double *rate)
{
	static int m[2 * PL][PF];
	double wt[PF], cap[PF], rcap[2 * PL];
	int in[PF];
	memset(m, 0, sizeof m);
	for (int i = 0; i < PF; i++) {
		rate[i] = 0;
		cap[i] = p->fl[i].cap;
		for (int k = 0; k < p->fl[i].len; k++) {
			m[p->fl[i].path[k]][i] = 1;
			if (p->fl[i].cls == NET_BG && p->mode == NET_BG_RATE_CAP)
				m[PL + p->fl[i].path[k]][i] = 1;
		}
	}
	double fg[PL] = {0};
	int paused[PF] = {0};
	int strict = p->share == NET_SHARE_STRICT;
	if (strict || p->mode == NET_BG_IDLE_WINDOW) {
		for (int i = 0; i < PF; i++) {
			in[i] = active[i] && p->fl[i].cls == NET_FG;
			wt[i] = 1;
		}
		for (int l = 0; l < PL; l++) {
			rcap[l] = p->cap[l];
			rcap[PL + l] = INFINITY;
		}
		ref_fill(PF, in, wt, cap, 2 * PL, rcap, m, rate);
		for (int i = 0; i < PF; i++)
			if (in[i])
				for (int k = 0; k < p->fl[i].len; k++)
					fg[p->fl[i].path[k]] += rate[i];
		if (p->mode == NET_BG_IDLE_WINDOW)
			for (int i = 0; i < PF; i++)
				for (int k = 0; k < p->fl[i].len; k++)
					if (p->fl[i].cls == NET_BG &&
					    fg[p->fl[i].path[k]] >= p->param * p->cap[p->fl[i].path[k]])
						paused[i] = 1;
	}
	for (int l = 0; l < PL; l++) {
		rcap[l] = strict ? fmax(0, p->cap[l] - fg[l]) : p->cap[l];
		rcap[PL + l] = p->mode == NET_BG_RATE_CAP ? p->param * p->cap[l] : INFINITY;
	}
	for (int i = 0; i < PF; i++) {
		int bg = p->fl[i].cls == NET_BG;
		in[i] = active[i] && !paused[i] && (bg || !strict);
		wt[i] = bg && !strict ? p->w : 1;
		if (in[i])
			rate[i] = 0;
	}
	ref_fill(PF, in, wt, cap, 2 * PL, rcap, m, rate);
}

static int prop_done(void *ctx, net_t *net, const net_flow_rec_t *r)
{
	(void)net;
	prop_t *p = ctx;
	pf_t *f = &p->fl[r->tag];
	f->served += f->rate * (double)(r->end_ns - f->t_last);
	f->t_last = r->end_ns;
	f->state = 2;
	/* conservation: rate integral equals size within the 1 ns rounding */
	assert_true(f->served >= (double)f->bytes * (1 - 1e-9) - 1e-6);
	assert_true(f->served <= (double)f->bytes + f->rate * 1.0 + 1e-6 * (double)f->bytes);
	return 0;
}

static int prop_act(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	prop_t *p = ctx;
	pf_t *f = &p->fl[ev->target];
	if (ev->payload == 0) { /* start */
		net_flow_spec_t s = {.bytes = f->bytes, .path = f->path, .path_len = (uint32_t)f->len,
				     .cls = f->cls, .rate_cap = f->cap * 1e9, .tag = ev->target,
				     .done = prop_done, .ctx = p};
		assert_int_equal(net_flow_start(p->net, &s, &f->id, NULL), 0);
		f->state = 1;
		f->t_last = ev_engine_now(eng);
		int64_t lat = 0;
		for (int k = 0; k < f->len; k++)
			lat += p->lat[f->path[k]];
		f->t_join = ev_engine_now(eng) + lat;
		if (p->quantum && f->t_join % p->quantum)
			f->t_join = (f->t_join / p->quantum + 1) * p->quantum;
	} else if (f->state == 1) { /* cancel */
		uint64_t got;
		f->served += f->rate * (double)(ev_engine_now(eng) - f->t_last);
		assert_int_equal(net_flow_cancel(p->net, f->id, &got, NULL), 0);
		assert_true(fabs((double)got - f->served) <= 1.0 + 1e-6 * f->served);
		f->state = 2;
	}
	return 0;
}

static int prop_check(void *ctx, ev_engine_t *eng)
{
	prop_t *p = ctx;
	int64_t now = ev_engine_now(eng);
	if (ev_peek_time(ev_engine_queue(eng)) == now)
		return 0; /* instant not complete yet */
	int active[PF];
	double ref[PF];
	for (int i = 0; i < PF; i++)
		active[i] = p->fl[i].state == 1 && p->fl[i].t_join <= now;
	ref_solve(p, active, ref);
	double load[PL] = {0};
	for (int i = 0; i < PF; i++) {
		pf_t *f = &p->fl[i];
		if (f->state != 1)
			continue;
		double r = net_flow_rate(p->net, f->id) / 1e9;
		/* with a quantum, rates match a fresh solve only at ticks */
		if (!p->quantum || now % p->quantum == 0)
			assert_true(fabs(r - ref[i]) <= 1e-9 * fmax(1.0, ref[i]));
		f->served += f->rate * (double)(now - f->t_last);
		f->t_last = now;
		f->rate = r;
		for (int k = 0; k < f->len; k++)
			load[f->path[k]] += r;
	}
	for (int l = 0; l < PL; l++)
		assert_true(load[l] <= p->cap[l] * (1 + 1e-9));
	p->checks++;
	p->ref_checks += !p->quantum || now % p->quantum == 0;
	return 0;
}

static void prop_run(gsl_rng *rng, int64_t quantum, int *checks)
{
	prop_t p;
	memset(&p, 0, sizeof p);
	p.quantum = quantum;
	p.eng = ev_engine_new(64);
	p.net = net_new(p.eng, NULL);
	assert_int_equal(ev_engine_register(p.eng, T_ACT, prop_act, &p), 0);
	ev_engine_set_check(p.eng, prop_check, &p);
	int nl = 2 + (int)gsl_rng_uniform_int(rng, PL - 1);
	for (int l = 0; l < PL; l++) {
		p.cap[l] = (double)(1 + gsl_rng_uniform_int(rng, 8));
		p.lat[l] = (int64_t)gsl_rng_uniform_int(rng, 3) * 10;
		assert_int_equal(net_link_add(p.net, p.cap[l] * 1e9, p.lat[l], NULL, NULL), 0);
	}
	p.share = gsl_rng_uniform_int(rng, 2) ? NET_SHARE_WEIGHTED : NET_SHARE_STRICT;
	p.w = 0.1 + 0.9 * gsl_rng_uniform(rng);
	p.mode = (net_bg_mode_t)gsl_rng_uniform_int(rng, 3);
	p.param = 0.2 + 0.8 * gsl_rng_uniform(rng);
	assert_int_equal(net_set_share(p.net, p.share, p.w, NULL), 0);
	assert_int_equal(net_set_bg_mode(p.net, p.mode, p.param, NULL), 0);
	assert_int_equal(net_set_quantum(p.net, quantum, NULL), 0);
	for (int i = 0; i < PF; i++) {
		pf_t *f = &p.fl[i];
		f->len = 1 + (int)gsl_rng_uniform_int(rng, (unsigned long)(nl < 4 ? nl : 4));
		int k = 0;
		while (k < f->len) {
			uint32_t l = (uint32_t)gsl_rng_uniform_int(rng, (unsigned long)nl);
			int dup = 0;
			for (int j = 0; j < k; j++)
				dup |= f->path[j] == l;
			if (!dup)
				f->path[k++] = l;
		}
		/* identical paths are common so that aggregates form */
		if (i > 0 && gsl_rng_uniform(rng) < 0.3) {
			f->len = p.fl[i - 1].len;
			memcpy(f->path, p.fl[i - 1].path, sizeof f->path);
		}
		f->cls = gsl_rng_uniform(rng) < 0.6 ? NET_FG : NET_BG;
		f->cap = gsl_rng_uniform(rng) < 0.25 ? 0.25 * (double)(1 + gsl_rng_uniform_int(rng, 8)) : 0;
		f->bytes = 1 + gsl_rng_uniform_int(rng, 5000);
		int64_t t0 = (int64_t)gsl_rng_uniform_int(rng, 2000);
		ev_engine_at(p.eng, t0, T_ACT, (uint32_t)i, 0);
		if (gsl_rng_uniform(rng) < 0.15)
			ev_engine_at(p.eng, t0 + (int64_t)gsl_rng_uniform_int(rng, 2000), T_ACT,
				     (uint32_t)i, 1);
	}
	assert_int_equal(ev_engine_run(p.eng, INT64_MAX), 0);
	for (int i = 0; i < PF; i++)
		assert_int_equal(p.fl[i].state, 2);
	net_stats_t s;
	net_get_stats(p.net, &s);
	assert_int_equal(s.active, 0);
	*checks += p.ref_checks;
	net_free(p.net);
	ev_engine_free(p.eng);
}

static void test_incremental_solve_matches_scratch_on_random_sequences(void **st)
{
	(void)st;
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(rng, 42);
	int checks = 0;
	for (int it = 0; it < 2000; it++)
		prop_run(rng, 0, &checks);
	assert_true(checks > 20000);
	gsl_rng_free(rng);
}

/* With a quantum: capacity and per-flow conservation at every instant, and
 * the rates equal a from-scratch solve at every tick. */
static void test_quantum_batches_solves_without_overload(void **st)
{
	(void)st;
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(rng, 43);
	int checks = 0;
	for (int it = 0; it < 500; it++)
		prop_run(rng, 40, &checks);
	assert_true(checks > 2000);
	gsl_rng_free(rng);
}

static void test_quantum_delays_join_to_next_tick(void **st)
{
	(void)st;
	fx_t f;
	fx_init(&f);
	assert_int_equal(net_set_quantum(f.net, 100, NULL), 0);
	uint32_t l = link(&f, 1e9, 30);
	int a = flow(&f, 1000, NET_FG, 0, 1, l); /* latency 30 -> joins at 100 */
	run_until(&f, INT64_MAX);
	assert_int_equal(f.end[a], 1100);
	fx_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rounding_rule_ceil_ns),
		cmocka_unit_test(test_maxmin_three_flows_share_dumbbell_bottleneck),
		cmocka_unit_test(test_maxmin_parking_lot_chain),
		cmocka_unit_test(test_maxmin_flow_bottlenecked_elsewhere_frees_capacity),
		cmocka_unit_test(test_maxmin_capped_flow_leaves_rest_to_others),
		cmocka_unit_test(test_identical_paths_aggregate_and_finish_in_order),
		cmocka_unit_test(test_strict_priority_background_drops_to_residual_and_recovers),
		cmocka_unit_test(test_weighted_share_gives_background_its_weight),
		cmocka_unit_test(test_rate_cap_mode_limits_background_share_of_link),
		cmocka_unit_test(test_idle_window_pauses_background_while_foreground_busy),
		cmocka_unit_test(test_idle_window_lets_background_run_under_threshold),
		cmocka_unit_test(test_idle_window_weighted_reads_foreground_only_fill),
		cmocka_unit_test(test_estimate_counts_flows_as_they_join_and_leave),
		cmocka_unit_test(test_finish_past_int64_saturates_to_never),
		cmocka_unit_test(test_cancel_returns_delivered_bytes_and_frees_capacity),
		cmocka_unit_test(test_block_copies_pay_per_copy_overhead_as_startup),
		cmocka_unit_test(test_bad_flow_specs_are_rejected),
		cmocka_unit_test(test_incremental_solve_matches_scratch_on_random_sequences),
		cmocka_unit_test(test_quantum_batches_solves_without_overload),
		cmocka_unit_test(test_quantum_delays_join_to_next_tick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
