/* Tests of sim/net/net_topo.c: link layout, paths, leaf/spine oversubscription. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim/net/net_topo.h"


static net_topo_spec_t spec(net_fabric_t fab, double ratio, uint32_t per_leaf)
{
	net_topo_spec_t s = {.nodes = 4, .gpus_per_node = 8, .nvlink_bw = 450e9,
			     .nvlink_lat_ns = 1000, .pcie_bw = 64e9, .pcie_lat_ns = 2000,
			     .nic_bw = 1e9, .nic_lat_ns = 3000, .fabric = fab,
			     .oversubscription = ratio, .gpus_per_leaf = per_leaf,
			     .switch_lat_ns = 100};
	return s;
}

typedef struct ctx {
	ev_engine_t *eng;
	net_t *net;
	net_topo_t *t;
	int64_t last_end;
	int done;
} ctx_t;

static int on_done(void *c, net_t *n, const net_flow_rec_t *r)
{
	(void)n;
	ctx_t *x = c;
	x->done++;
	if (r->end_ns > x->last_end)
		x->last_end = r->end_ns;
	return 0;
}

static void setup(ctx_t *x, net_topo_spec_t s)
{
	memset(x, 0, sizeof *x);
	x->eng = ev_engine_new(64);
	x->net = net_new(x->eng, NULL);
	assert_int_equal(net_topo_build(x->net, &s, &x->t, NULL), 0);
}

static void teardown(ctx_t *x)
{
	net_topo_free(x->t);
	net_free(x->net);
	ev_engine_free(x->eng);
}

static void start(ctx_t *x, const uint32_t *p, int n, uint64_t bytes)
{
	net_flow_spec_t f = {.bytes = bytes, .path = p, .path_len = (uint32_t)n, .done = on_done,
			     .ctx = x};
	assert_int_equal(net_flow_start(x->net, &f, NULL, NULL), 0);
}

static void test_single_switch_paths_use_nvlink_inside_node_and_nics_across(void **st)
{
	(void)st;
	ctx_t x;
	setup(&x, spec(NET_FABRIC_SINGLE, 1, 0));
	assert_int_equal(net_link_count(x.net), 4 * 8 * 6);
	assert_int_equal(net_topo_leaves(x.t), 1);
	uint32_t p[NET_PATH_MAX], up, down;
	assert_int_equal(net_path_gpu_gpu(x.t, 1, 2, 1, 5, p), 2);
	assert_int_equal(net_topo_link(x.t, NET_LK_NVLINK_UP, 1, 2, &up), 0);
	assert_int_equal(net_topo_link(x.t, NET_LK_NVLINK_DOWN, 1, 5, &down), 0);
	assert_int_equal(p[0], up);
	assert_int_equal(p[1], down);
	assert_int_equal(net_path_gpu_gpu(x.t, 0, 0, 3, 7, p), 2);
	assert_int_equal(net_topo_link(x.t, NET_LK_NIC_UP, 0, 0, &up), 0);
	assert_int_equal(net_topo_link(x.t, NET_LK_NIC_DOWN, 3, 7, &down), 0);
	assert_int_equal(p[0], up);
	assert_int_equal(p[1], down);
	char name[64];
	assert_string_equal(net_topo_link_name(x.t, down, name, sizeof name), "n3g7.nic_down");
	assert_int_equal(net_path_gpu_host(x.t, 2, 3, p), 1);
	assert_int_equal(net_topo_link(x.t, NET_LK_PCIE_D2H, 2, 3, &up), 0);
	assert_int_equal(p[0], up);
	assert_int_equal(net_path_host_gpu(x.t, 2, 3, p), 1);
	assert_int_equal(net_topo_link(x.t, NET_LK_PCIE_H2D, 2, 3, &down), 0);
	assert_int_equal(p[0], down);
	assert_int_equal(net_path_gpu_gpu(x.t, 1, 1, 1, 1, p), KS_EINPUT);
	assert_int_equal(net_path_gpu_gpu(x.t, 4, 0, 1, 1, p), KS_EINPUT);
	assert_int_equal(net_path_gpu_host(x.t, 0, 8, p), KS_EINPUT);
	teardown(&x);
}

static void test_leaf_spine_paths_cross_spine_only_between_leaves(void **st)
{
	(void)st;
	ctx_t x;
	setup(&x, spec(NET_FABRIC_LEAF_SPINE, 2, 16));
	assert_int_equal(net_topo_leaves(x.t), 2);
	assert_int_equal(net_topo_leaf_of(x.t, 1, 7), 0);
	assert_int_equal(net_topo_leaf_of(x.t, 2, 0), 1);
	uint32_t p[NET_PATH_MAX], l;
	/* same leaf, different nodes: NIC up, NIC down */
	assert_int_equal(net_path_gpu_gpu(x.t, 0, 3, 1, 3, p), 2);
	/* across leaves: NIC up, leaf 0 up, spine down to leaf 1, NIC down */
	assert_int_equal(net_path_gpu_gpu(x.t, 0, 3, 3, 3, p), 4);
	assert_int_equal(net_topo_link(x.t, NET_LK_LEAF_UP, 0, 0, &l), 0);
	assert_int_equal(p[1], l);
	assert_int_equal(net_topo_link(x.t, NET_LK_SPINE_DOWN, 0, 1, &l), 0);
	assert_int_equal(p[2], l);
	net_link_stats_t ls;
	assert_int_equal(net_link_stats(x.net, l, &ls), 0);
	assert_float_equal(ls.capacity, 16 * 1e9 / 2, 1);
	assert_int_equal(ls.latency_ns, 100);
	assert_int_equal(net_topo_link(x.t, NET_LK_LEAF_UP, 0, 2, &l), KS_EINPUT);
	teardown(&x);
}

/* Every GPU of leaf 0 sends 1e6 bytes to its peer in leaf 1 at once. */
static int64_t cross_leaf_all_to_all(double ratio)
{
	ctx_t x;
	setup(&x, spec(NET_FABRIC_LEAF_SPINE, ratio, 16));
	for (uint32_t i = 0; i < 16; i++) {
		uint32_t p[NET_PATH_MAX];
		int n = net_path_gpu_gpu(x.t, i / 8, i % 8, 2 + i / 8, i % 8, p);
		assert_int_equal(n, 4);
		start(&x, p, n, 1000000);
	}
	assert_int_equal(ev_engine_run(x.eng, INT64_MAX), 0);
	assert_int_equal(x.done, 16);
	int64_t t = x.last_end;
	teardown(&x);
	return t;
}

static void test_oversubscription_slows_cross_leaf_traffic_by_its_ratio(void **st)
{
	(void)st;
	/* latency nic 3000 + 2 switch hops 200; 1e6 B at 1 B/ns, or 0.5 at 2:1 */
	assert_int_equal(cross_leaf_all_to_all(1), 3200 + 1000000);
	assert_int_equal(cross_leaf_all_to_all(2), 3200 + 2000000);
	assert_int_equal(cross_leaf_all_to_all(4), 3200 + 4000000);
}

static void test_incast_shares_destination_nic(void **st)
{
	(void)st;
	ctx_t x;
	setup(&x, spec(NET_FABRIC_SINGLE, 1, 0));
	for (uint32_t s = 1; s < 4; s++) {
		uint32_t p[NET_PATH_MAX];
		int n = net_path_gpu_gpu(x.t, s, 0, 0, 0, p);
		start(&x, p, n, 1000000);
	}
	assert_int_equal(ev_engine_run(x.eng, INT64_MAX), 0);
	assert_int_equal(x.last_end, 3000 + 3000000);
	teardown(&x);
}

static void test_bad_topology_specs_are_rejected(void **st)
{
	(void)st;
	ev_engine_t *eng = ev_engine_new(16);
	net_t *net = net_new(eng, NULL);
	net_topo_t *t;
	err_t e;
	net_topo_spec_t s = spec(NET_FABRIC_LEAF_SPINE, 0.5, 16);
	assert_int_equal(net_topo_build(net, &s, &t, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "oversubscription"));
	s = spec(NET_FABRIC_LEAF_SPINE, 2, 0);
	assert_int_equal(net_topo_build(net, &s, &t, &e), KS_EINPUT);
	s = spec(NET_FABRIC_SINGLE, 1, 0);
	s.nic_bw = 0;
	assert_int_equal(net_topo_build(net, &s, &t, &e), KS_EINPUT);
	s = spec(NET_FABRIC_SINGLE, 1, 0);
	s.nodes = 0;
	assert_int_equal(net_topo_build(net, &s, &t, &e), KS_EINPUT);
	net_free(net);
	ev_engine_free(eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_switch_paths_use_nvlink_inside_node_and_nics_across),
		cmocka_unit_test(test_leaf_spine_paths_cross_spine_only_between_leaves),
		cmocka_unit_test(test_oversubscription_slows_cross_leaf_traffic_by_its_ratio),
		cmocka_unit_test(test_incast_shares_destination_nic),
		cmocka_unit_test(test_bad_topology_specs_are_rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
