/* Tests of the incremental max-min solver in sim/net/net_solve.c against the full
 * re-solve it replaces (net_set_solver): random flow starts, cancels and
 * finishes on random topologies driven through both, every rate, remaining
 * size, finish estimate, link figure and finish time compared exactly; and
 * hand cases of what a change may touch. */
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
#include "sim/net/net_topo.h"

#define MAXF 512
#define MAXP 256

/* The same network twice: [0] full re-solve, [1] incremental. */
typedef struct twin {
	ev_engine_t *eng[2];
	net_t *net[2];
	net_topo_t *topo[2];
	uint64_t id[2][MAXF];
	int n;
	uint32_t path[MAXP][NET_PATH_MAX], len[MAXP];
	int n_paths;
} twin_t;

static void twin_init(twin_t *t)
{
	memset(t, 0, sizeof *t);
	for (int s = 0; s < 2; s++) {
		t->eng[s] = ev_engine_new(64);
		assert_non_null(t->eng[s]);
		t->net[s] = net_new(t->eng[s], NULL);
		assert_non_null(t->net[s]);
		assert_int_equal(net_set_solver(t->net[s], s ? NET_SOLVER_INCREMENTAL : NET_SOLVER_FULL,
						NULL),
				 0);
	}
}

static void twin_free(twin_t *t)
{
	for (int s = 0; s < 2; s++) {
		net_topo_free(t->topo[s]);
		net_free(t->net[s]);
		ev_engine_free(t->eng[s]);
	}
}

static uint32_t twin_link(twin_t *t, double Bps, int64_t lat)
{
	uint32_t id[2];
	for (int s = 0; s < 2; s++)
		assert_int_equal(net_link_add(t->net[s], Bps, lat, &id[s], NULL), 0);
	assert_int_equal(id[0], id[1]);
	return id[0];
}

static void twin_path(twin_t *t, int n, ...)
{
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		t->path[t->n_paths][i] = va_arg(ap, uint32_t);
	va_end(ap);
	t->len[t->n_paths++] = (uint32_t)n;
}

static int twin_start(twin_t *t, int path, uint64_t bytes, net_class_t cls, double cap)
{
	net_flow_spec_t sp = {.bytes = bytes, .path = t->path[path], .path_len = t->len[path],
			      .cls = cls, .rate_cap = cap};
	int k = t->n++;
	assert_true(k < MAXF);
	for (int s = 0; s < 2; s++)
		assert_int_equal(net_flow_start(t->net[s], &sp, &t->id[s][k], NULL), 0);
	assert_true(t->id[0][k] == t->id[1][k]);
	return k;
}

static void twin_run(twin_t *t, int64_t until)
{
	for (int s = 0; s < 2; s++)
		assert_int_equal(ev_engine_run(t->eng[s], until), 0);
	assert_true(ev_engine_now(t->eng[0]) == ev_engine_now(t->eng[1]));
}

/* Every flow and link agrees to the last bit. */
static void twin_check(twin_t *t)
{
	for (int k = 0; k < t->n; k++) {
		uint64_t a = t->id[0][k], b = t->id[1][k];
		assert_true(net_flow_rate(t->net[0], a) == net_flow_rate(t->net[1], b));
		assert_true(net_flow_remaining(t->net[0], a) == net_flow_remaining(t->net[1], b));
		assert_true(net_flow_eta(t->net[0], a) == net_flow_eta(t->net[1], b));
	}
	size_t nl = net_link_count(t->net[0]);
	for (uint32_t l = 0; l < nl; l++) {
		net_link_stats_t x, y;
		assert_int_equal(net_link_stats(t->net[0], l, &x), 0);
		assert_int_equal(net_link_stats(t->net[1], l, &y), 0);
		for (int c = 0; c < 2; c++) {
			assert_true(x.rate[c] == y.rate[c]);
			assert_true(x.bytes[c] == y.bytes[c]);
			assert_true(x.busy_ns[c] == y.busy_ns[c]);
		}
	}
}

static void twin_check_records(twin_t *t)
{
	size_t n0, n1;
	const net_flow_rec_t *r0 = net_records(t->net[0], &n0), *r1 = net_records(t->net[1], &n1);
	assert_int_equal(n0, n1);
	for (size_t i = 0; i < n0; i++) {
		assert_true(r0[i].id == r1[i].id);
		assert_int_equal(r0[i].join_ns, r1[i].join_ns);
		assert_int_equal(r0[i].end_ns, r1[i].end_ns);
		assert_true(r0[i].delivered == r1[i].delivered);
		assert_int_equal(r0[i].cancelled, r1[i].cancelled);
	}
}

/* ---- random topologies ------------------------------------------------------ */

/* Leaf/spine at a random oversubscription; paths between random GPUs (on
 * their rail or not) and to or from host memory. */
static void topo_leaf_spine(twin_t *t, gsl_rng *r)
{
	uint32_t nodes = 4 + (uint32_t)gsl_rng_uniform_int(r, 5), gpn = 4;
	net_topo_spec_t ts = {.nodes = nodes, .gpus_per_node = gpn, .nvlink_bw = 450e9,
			      .nvlink_lat_ns = 2000, .pcie_bw = 64e9, .pcie_lat_ns = 2000,
			      .nic_bw = 50e9, .nic_lat_ns = 5000, .fabric = NET_FABRIC_LEAF_SPINE,
			      .oversubscription = 1 + (double)gsl_rng_uniform_int(r, 4),
			      .gpus_per_leaf = 8, .switch_lat_ns = 300};
	for (int s = 0; s < 2; s++)
		assert_int_equal(net_topo_build(t->net[s], &ts, &t->topo[s], NULL), 0);
	while (t->n_paths < 64) {
		uint32_t sn = (uint32_t)gsl_rng_uniform_int(r, nodes);
		uint32_t dn = (uint32_t)gsl_rng_uniform_int(r, nodes);
		uint32_t sg = (uint32_t)gsl_rng_uniform_int(r, gpn);
		uint32_t dg = gsl_rng_uniform(r) < 0.5 ? sg : (uint32_t)gsl_rng_uniform_int(r, gpn);
		uint32_t *p = t->path[t->n_paths];
		int n = gsl_rng_uniform(r) < 0.15 ? net_path_gpu_host(t->topo[0], sn, sg, p)
						  : net_path_gpu_gpu(t->topo[0], sn, sg, dn, dg, p);
		if (n > 0)
			t->len[t->n_paths++] = (uint32_t)n;
	}
}

/* Random links with a few capacities (so levels tie) and random paths of
 * one to four of them: shared bottlenecks in every arrangement. */
static void topo_random(twin_t *t, gsl_rng *r)
{
	static const double caps[] = {10e9, 25e9, 40e9, 100e9};
	uint32_t nl = 4 + (uint32_t)gsl_rng_uniform_int(r, 24);
	for (uint32_t i = 0; i < nl; i++)
		twin_link(t, caps[gsl_rng_uniform_int(r, 4)], (int64_t)gsl_rng_uniform_int(r, 3) * 500);
	while (t->n_paths < 80) {
		uint32_t len = 1 + (uint32_t)gsl_rng_uniform_int(r, 4), *p = t->path[t->n_paths];
		if (len > nl)
			len = nl;
		for (uint32_t k = 0; k < len; k++) {
			int again;
			do {
				p[k] = (uint32_t)gsl_rng_uniform_int(r, nl);
				again = 0;
				for (uint32_t j = 0; j < k; j++)
					again |= p[j] == p[k];
			} while (again);
		}
		t->len[t->n_paths++] = len;
	}
}

/* A private access link per path, a leaf uplink shared by a few paths
 * (some oversubscribed, some not) and one core link: many distinct paths in
 * one component, most of it decoupled by links with headroom. */
static void topo_distinct(twin_t *t, gsl_rng *r)
{
	uint32_t leaves = 2 + (uint32_t)gsl_rng_uniform_int(r, 6);
	uint32_t core = twin_link(t, (gsl_rng_uniform(r) < 0.5 ? 1000e9 : 150e9), 300);
	uint32_t leaf[8];
	for (uint32_t i = 0; i < leaves; i++)
		leaf[i] = twin_link(t, (10 + 20 * (double)gsl_rng_uniform_int(r, 4)) * 1e9, 300);
	while (t->n_paths < 200) {
		uint32_t acc = twin_link(t, (5 + 5 * (double)gsl_rng_uniform_int(r, 3)) * 1e9, 1000);
		if (gsl_rng_uniform(r) < 0.2)
			twin_path(t, 2, acc, core);
		else
			twin_path(t, 3, acc, leaf[t->n_paths % leaves], core);
	}
}

/* Returns the background mode drawn. */
static net_bg_mode_t set_modes(twin_t *t, gsl_rng *r)
{
	static const double weights[] = {0.25, 1.0 / 3, 0.5, 1};
	static const double params[] = {0.5, 0.7, 1};
	net_share_t share = (net_share_t)gsl_rng_uniform_int(r, 2);
	double w = weights[gsl_rng_uniform_int(r, 4)];
	net_bg_mode_t bg = (net_bg_mode_t)gsl_rng_uniform_int(r, 3);
	double p = params[gsl_rng_uniform_int(r, 3)];
	for (int s = 0; s < 2; s++) {
		assert_int_equal(net_set_share(t->net[s], share, w, NULL), 0);
		assert_int_equal(net_set_bg_mode(t->net[s], bg, p, NULL), 0);
	}
	return bg;
}

/* One random run: starts (some at the same instant), cancels, finishes,
 * now and then a mode change. Returns whether idle-window mode was drawn. */
static int drive(twin_t *t, gsl_rng *r, int steps)
{
	int idle = 0;
	static const double caps[] = {1e9, 5e9, 20e9};
	int64_t now = 0;
	for (int i = 0; i < steps; i++) {
		now += gsl_rng_uniform(r) < 0.3 ? 0 : (int64_t)gsl_rng_uniform_int(r, 2000000);
		twin_run(t, now);
		double u = gsl_rng_uniform(r);
		if (u < 0.65 && t->n < MAXF) {
			int p = (int)gsl_rng_uniform_int(r, (unsigned long)t->n_paths);
			uint64_t bytes = 100000 + gsl_rng_uniform_int(r, 200000000);
			net_class_t cls = gsl_rng_uniform(r) < 0.3 ? NET_BG : NET_FG;
			double cap = gsl_rng_uniform(r) < 0.2 ? caps[gsl_rng_uniform_int(r, 3)] : 0;
			twin_start(t, p, bytes, cls, cap);
		} else if (u < 0.9 && t->n > 0) {
			int k = (int)gsl_rng_uniform_int(r, (unsigned long)t->n);
			uint64_t d0 = 0, d1 = 0;
			int a = net_flow_cancel(t->net[0], t->id[0][k], &d0, NULL);
			int b = net_flow_cancel(t->net[1], t->id[1][k], &d1, NULL);
			assert_int_equal(a, b);
			assert_true(d0 == d1);
		}
		if (gsl_rng_uniform(r) < 0.01)
			idle |= set_modes(t, r) == NET_BG_IDLE_WINDOW; /* next solve is full */
		if (gsl_rng_uniform(r) < 0.5)
			twin_check(t);
	}
	twin_check(t);
	twin_run(t, INT64_MAX);
	twin_check_records(t);
	return idle;
}

/* solved: aggregates filled by each solver, over the runs that are not in
 * idle-window mode (which always solves in full). */
static void property(void (*topo)(twin_t *, gsl_rng *), int runs, uint64_t *solved)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	assert_non_null(r);
	for (int run = 0; run < runs; run++) {
		gsl_rng_set(r, 1000 + (unsigned long)run);
		twin_t t;
		twin_init(&t);
		topo(&t, r);
		int64_t q = gsl_rng_uniform(r) < 0.2 ? 100000 : 0; /* ns: solves at ticks */
		for (int s = 0; s < 2; s++)
			assert_int_equal(net_set_quantum(t.net[s], q, NULL), 0);
		int idle = set_modes(&t, r) == NET_BG_IDLE_WINDOW;
		idle |= drive(&t, r, 400);
		for (int s = 0; s < 2 && !idle; s++) {
			net_stats_t st;
			net_get_stats(t.net[s], &st);
			solved[s] += st.solved_aggs;
		}
		twin_free(&t);
	}
	gsl_rng_free(r);
}

static void test_incremental_matches_full_on_leaf_spine(void **state)
{
	(void)state;
	uint64_t solved[2] = {0, 0};
	property(topo_leaf_spine, 24, solved);
	assert_true(solved[1] <= solved[0]);
}

static void test_incremental_matches_full_on_random_links(void **state)
{
	(void)state;
	uint64_t solved[2] = {0, 0};
	property(topo_random, 40, solved);
	assert_true(solved[1] <= solved[0]);
}

/* Here most of the component is decoupled: the incremental solver must
 * fill far fewer aggregates, and still agree. */
static void test_incremental_matches_full_on_distinct_paths(void **state)
{
	(void)state;
	uint64_t solved[2] = {0, 0};
	property(topo_distinct, 24, solved);
	assert_true(solved[1] * 3 < solved[0]);
}

/* ---- hand cases ---------------------------------------------------------------- */

static uint64_t solved_aggs(net_t *net)
{
	net_stats_t st;
	net_get_stats(net, &st);
	return st.solved_aggs;
}

/* Four flows, each held by its own 10 GB/s access link, share a 100 GB/s
 * core with room to spare: a fifth on the core changes nothing elsewhere
 * and re-solves only itself. */
static void test_new_flow_on_uncongested_link_changes_nothing_else(void **state)
{
	(void)state;
	twin_t t;
	twin_init(&t);
	uint32_t core = twin_link(&t, 100e9, 0);
	for (int i = 0; i < 5; i++)
		twin_path(&t, 2, twin_link(&t, 10e9, 0), core);
	for (int i = 0; i < 4; i++)
		twin_start(&t, i, 1000000000, NET_FG, 0);
	twin_run(&t, 1000);
	twin_check(&t);
	uint64_t before[2] = {solved_aggs(t.net[0]), solved_aggs(t.net[1])};
	twin_start(&t, 4, 1000000000, NET_FG, 0);
	twin_run(&t, 2000);
	for (int k = 0; k < 5; k++)
		assert_true(net_flow_rate(t.net[1], t.id[1][k]) == 10e9);
	assert_int_equal(solved_aggs(t.net[0]) - before[0], 5);
	assert_int_equal(solved_aggs(t.net[1]) - before[1], 1);
	twin_check(&t);
	twin_free(&t);
}

/* Three flows share a 30 GB/s bottleneck B at 10 GB/s, two others sit on
 * their own access links; all cross a roomy core. Cancelling one of B's
 * raises exactly its two peers (to 15 GB/s), touching nothing else. */
static void test_flow_leaving_bottleneck_raises_exactly_its_peers(void **state)
{
	(void)state;
	twin_t t;
	twin_init(&t);
	uint32_t core = twin_link(&t, 1000e9, 0), b = twin_link(&t, 30e9, 0);
	for (int i = 0; i < 3; i++)
		twin_path(&t, 3, twin_link(&t, 100e9, 0), b, core);
	for (int i = 0; i < 2; i++)
		twin_path(&t, 2, twin_link(&t, 20e9, 0), core);
	for (int i = 0; i < 5; i++)
		twin_start(&t, i, 1000000000, NET_FG, 0);
	twin_run(&t, 1000);
	for (int k = 0; k < 3; k++)
		assert_true(net_flow_rate(t.net[1], t.id[1][k]) == 10e9);
	uint64_t before[2] = {solved_aggs(t.net[0]), solved_aggs(t.net[1])};
	for (int s = 0; s < 2; s++)
		assert_int_equal(net_flow_cancel(t.net[s], t.id[s][0], NULL, NULL), 0);
	twin_run(&t, 2000);
	for (int k = 1; k < 3; k++)
		assert_true(net_flow_rate(t.net[1], t.id[1][k]) == 15e9);
	for (int k = 3; k < 5; k++)
		assert_true(net_flow_rate(t.net[1], t.id[1][k]) == 20e9);
	assert_int_equal(solved_aggs(t.net[0]) - before[0], 4);
	assert_int_equal(solved_aggs(t.net[1]) - before[1], 2);
	twin_check(&t);
	twin_free(&t);
}

/* Two 10 GB/s flows leave a 25 GB/s link U with headroom; a third would
 * overload it, so U becomes a row and all three share it (25/3 GB/s each),
 * as the full solver finds. */
static void test_boundary_link_filled_by_a_join_couples_its_flows(void **state)
{
	(void)state;
	twin_t t;
	twin_init(&t);
	uint32_t u = twin_link(&t, 25e9, 0);
	for (int i = 0; i < 3; i++)
		twin_path(&t, 2, twin_link(&t, 10e9, 0), u);
	for (int i = 0; i < 2; i++)
		twin_start(&t, i, 1000000000, NET_FG, 0);
	twin_run(&t, 1000);
	twin_check(&t);
	twin_start(&t, 2, 1000000000, NET_FG, 0);
	twin_run(&t, 2000);
	twin_check(&t);
	for (int k = 0; k < 3; k++)
		assert_true(fabs(net_flow_rate(t.net[1], t.id[1][k]) - 25e9 / 3) < 1);
	twin_run(&t, INT64_MAX);
	twin_check_records(&t);
	twin_free(&t);
}

static void test_set_solver_rejects_unknown_value(void **state)
{
	(void)state;
	ev_engine_t *eng = ev_engine_new(16);
	net_t *net = net_new(eng, NULL);
	err_t e;
	assert_int_equal(net_set_solver(net, (net_solver_t)7, &e), KS_EINPUT);
	assert_int_equal(net_set_solver(net, NET_SOLVER_FULL, &e), 0);
	net_free(net);
	ev_engine_free(eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_incremental_matches_full_on_leaf_spine),
		cmocka_unit_test(test_incremental_matches_full_on_random_links),
		cmocka_unit_test(test_incremental_matches_full_on_distinct_paths),
		cmocka_unit_test(test_new_flow_on_uncongested_link_changes_nothing_else),
		cmocka_unit_test(test_flow_leaving_bottleneck_raises_exactly_its_peers),
		cmocka_unit_test(test_boundary_link_filled_by_a_join_couples_its_flows),
		cmocka_unit_test(test_set_solver_rejects_unknown_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
