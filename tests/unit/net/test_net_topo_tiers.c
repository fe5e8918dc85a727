/* Tests of sim/net/net_topo.c: the NVMe and pool links of the deeper KV
 * tiers. A node's drive sits on the host side of the PCIe path (an NVMe
 * read into a GPU crosses the drive's read link and then that GPU's PCIe
 * down link), the pool behind the GPUs' NICs; each link has its capacity,
 * latency, kind, medium and name; without them no link is made and their
 * paths are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim/net/net_topo.h"
#include "tests/fixtures/test_main.h"

static net_topo_spec_t spec(int tiers)
{
	net_topo_spec_t s = {.nodes = 2,
	                     .gpus_per_node = 2,
	                     .nvlink_bw = 450e9,
	                     .pcie_bw = 64e9,
	                     .pcie_lat_ns = 5000,
	                     .nic_bw = 50e9,
	                     .nic_lat_ns = 2000};
	if (tiers) {
		s.nvme_read_bw = 13e9;
		s.nvme_write_bw = 6.6e9;
		s.nvme_lat_ns = 80000;
		s.pool_bw = 100e9;
		s.pool_lat_ns = 50000;
	}
	return s;
}

static void expect(net_t *net, const net_topo_t *t, uint32_t link, net_link_kind_t kind,
                   net_medium_t medium, double bw, int64_t lat, const char *name)
{
	net_link_kind_t k;
	double c;
	int64_t l;
	char buf[32];
	assert_int_equal(net_topo_link_kind(t, link, &k), 0);
	assert_int_equal(k, kind);
	assert_int_equal(net_topo_link_medium(t, link), medium);
	assert_int_equal(net_link_info(net, link, &c, &l), 0);
	assert_true(c == bw);
	assert_int_equal(l, lat);
	assert_string_equal(net_topo_link_name(t, link, buf, sizeof buf), name);
}

static void test_tier_paths_cross_the_drive_then_pcie_and_the_nic_then_pool(void **st)
{
	(void)st;
	ev_engine_t *eng = ev_engine_new(16);
	net_t *net = net_new(eng, NULL);
	net_topo_t *t;
	net_topo_spec_t s = spec(1);
	assert_int_equal(net_topo_build(net, &s, &t, NULL), 0);
	uint32_t p[NET_PATH_MAX], pcie, nic;
	assert_int_equal(net_path_nvme_gpu(t, 1, 1, p), 2);
	expect(net, t, p[0], NET_LK_NVME_READ, NET_MEDIUM_NVME, 13e9, 80000, "n1.nvme_read");
	assert_int_equal(net_topo_link(t, NET_LK_PCIE_H2D, 1, 1, &pcie), 0);
	assert_int_equal(p[1], pcie);
	assert_int_equal(net_path_host_nvme(t, 1, p), 1);
	expect(net, t, p[0], NET_LK_NVME_WRITE, NET_MEDIUM_NVME, 6.6e9, 80000, "n1.nvme_write");
	assert_int_equal(net_path_pool_gpu(t, 0, 1, p), 2);
	expect(net, t, p[0], NET_LK_POOL_OUT, NET_MEDIUM_POOL, 100e9, 50000, "pool.out");
	assert_int_equal(net_topo_link(t, NET_LK_NIC_DOWN, 0, 1, &nic), 0);
	assert_int_equal(p[1], nic);
	assert_int_equal(net_path_to_pool(t, 0, 1, 1, p), 3);
	expect(net, t, p[0], NET_LK_NVME_READ, NET_MEDIUM_NVME, 13e9, 80000, "n0.nvme_read");
	assert_int_equal(net_topo_link(t, NET_LK_NIC_UP, 0, 1, &nic), 0);
	assert_int_equal(p[1], nic);
	expect(net, t, p[2], NET_LK_POOL_IN, NET_MEDIUM_POOL, 100e9, 50000, "pool.in");
	assert_int_equal(net_path_to_pool(t, 0, 1, 0, p), 2);
	assert_int_equal(p[0], nic);
	assert_int_equal(net_path_nvme_gpu(t, 2, 0, p), KS_EINPUT); /* no node 2 */
	net_topo_free(t);
	net_free(net);
	ev_engine_free(eng);
}

static void test_no_tier_links_without_tiers(void **st)
{
	(void)st;
	ev_engine_t *eng = ev_engine_new(16);
	net_t *net = net_new(eng, NULL);
	net_topo_t *t;
	net_topo_spec_t s = spec(0);
	assert_int_equal(net_topo_build(net, &s, &t, NULL), 0);
	assert_int_equal(net_link_count(net), 2 * 2 * 6); /* six per GPU, as before */
	uint32_t p[NET_PATH_MAX];
	assert_int_equal(net_path_nvme_gpu(t, 0, 0, p), KS_EINPUT);
	assert_int_equal(net_path_host_nvme(t, 0, p), KS_EINPUT);
	assert_int_equal(net_path_pool_gpu(t, 0, 0, p), KS_EINPUT);
	assert_int_equal(net_path_to_pool(t, 0, 0, 0, p), KS_EINPUT);
	net_topo_free(t);
	/* one NVMe bandwidth without the other is refused */
	s.nvme_read_bw = 1e9;
	assert_int_equal(net_topo_build(net, &s, &t, NULL), KS_EINPUT);
	net_free(net);
	ev_engine_free(eng);
}

TEST_MAIN(cmocka_unit_test(test_tier_paths_cross_the_drive_then_pcie_and_the_nic_then_pool),
          cmocka_unit_test(test_no_tier_links_without_tiers))
