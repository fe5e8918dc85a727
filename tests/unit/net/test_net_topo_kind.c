/* Tests of sim/net/net_topo.c: every link carries the kind it was made as. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim/net/net_topo.h"

typedef struct ctx {
	ev_engine_t *eng;
	net_t *net;
	net_topo_t *t;
	uint32_t foreign; /* a link added before the topology */
} ctx_t;

/* 2 nodes x 2 GPUs, one GPU per leaf, so a cross-node path crosses the spine. */
static int setup(void **state)
{
	static ctx_t ctx;
	ctx_t *x = &ctx;
	net_topo_spec_t s = {.nodes = 2, .gpus_per_node = 2, .nvlink_bw = 450e9,
			     .pcie_bw = 64e9, .nic_bw = 50e9, .fabric = NET_FABRIC_LEAF_SPINE,
			     .oversubscription = 1, .gpus_per_leaf = 1};
	*x = (ctx_t){0};
	x->eng = ev_engine_new(16);
	x->net = x->eng ? net_new(x->eng, NULL) : NULL;
	if (!x->eng || !x->net || net_link_add(x->net, 1e9, 0, &x->foreign, NULL) ||
	    net_topo_build(x->net, &s, &x->t, NULL))
		return -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	ctx_t *x = *state;
	net_topo_free(x->t);
	net_free(x->net);
	ev_engine_free(x->eng);
	return 0;
}

static void expect_kinds(const ctx_t *x, const uint32_t *path, int n, const net_link_kind_t *want,
			 const net_medium_t *medium)
{
	for (int i = 0; i < n; i++) {
		net_link_kind_t k;
		assert_int_equal(net_topo_link_kind(x->t, path[i], &k), 0);
		assert_int_equal(k, want[i]);
		assert_int_equal(net_topo_link_medium(x->t, path[i]), medium[i]);
	}
}

static void test_path_links_report_the_kind_they_were_made_as(void **st)
{
	const ctx_t *x = *st;
	uint32_t p[NET_PATH_MAX];
	int n = net_path_gpu_gpu(x->t, 0, 0, 0, 1, p);
	assert_int_equal(n, 2);
	expect_kinds(x, p, n, (net_link_kind_t[]){NET_LK_NVLINK_UP, NET_LK_NVLINK_DOWN},
		     (net_medium_t[]){NET_MEDIUM_NVLINK, NET_MEDIUM_NVLINK});
	n = net_path_gpu_gpu(x->t, 0, 1, 1, 0, p);
	assert_int_equal(n, 4);
	expect_kinds(x, p, n,
		     (net_link_kind_t[]){NET_LK_NIC_UP, NET_LK_LEAF_UP, NET_LK_SPINE_DOWN,
					 NET_LK_NIC_DOWN},
		     (net_medium_t[]){NET_MEDIUM_NIC, NET_MEDIUM_FABRIC, NET_MEDIUM_FABRIC,
				      NET_MEDIUM_NIC});
	assert_int_equal(net_path_gpu_host(x->t, 1, 1, p), 1);
	expect_kinds(x, p, 1, (net_link_kind_t[]){NET_LK_PCIE_D2H},
		     (net_medium_t[]){NET_MEDIUM_PCIE});
	assert_int_equal(net_path_host_gpu(x->t, 1, 1, p), 1);
	expect_kinds(x, p, 1, (net_link_kind_t[]){NET_LK_PCIE_H2D},
		     (net_medium_t[]){NET_MEDIUM_PCIE});
}

static void test_every_made_link_has_a_kind_matching_its_lookup(void **st)
{
	const ctx_t *x = *st;
	for (uint32_t node = 0; node < 2; node++)
		for (uint32_t g = 0; g < 2; g++)
			for (int k = NET_LK_NVLINK_UP; k <= NET_LK_NIC_DOWN; k++) {
				uint32_t l;
				net_link_kind_t got;
				assert_int_equal(net_topo_link(x->t, k, node, g, &l), 0);
				assert_int_equal(net_topo_link_kind(x->t, l, &got), 0);
				assert_int_equal(got, k);
			}
}

static void test_links_the_topology_did_not_make_have_no_kind(void **st)
{
	const ctx_t *x = *st;
	net_link_kind_t k;
	assert_int_equal(net_topo_link_kind(x->t, x->foreign, &k), KS_EINPUT);
	assert_int_equal(net_topo_link_medium(x->t, x->foreign), NET_MEDIUM_FABRIC);
	uint32_t after = (uint32_t)net_link_count(x->net);
	assert_int_equal(net_topo_link_kind(x->t, after, &k), KS_EINPUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_path_links_report_the_kind_they_were_made_as,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_made_link_has_a_kind_matching_its_lookup,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_links_the_topology_did_not_make_have_no_kind,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
