/* net_topo — builds a cluster's links in a net_t and answers paths.
 *
 * Per GPU (global index i = node * gpus_per_node + gpu), six directed links:
 * NVLink up/down to the node's NVSwitch, PCIe up (GPU to host) / down (host
 * to GPU), NIC up/down to the fabric (rail-optimised: one NIC per GPU). The
 * fabric is one non-blocking switch, or leaf/spine: leaf = i / gpus_per_leaf,
 * each leaf's uplinks to all spines are one aggregated link per direction
 * (ECMP assumed perfectly balanced) of capacity sum(leaf NIC bw) / ratio.
 * Latencies are end-to-end for the simplest path of each kind and sit on the
 * first link (NVLink up, NIC up; PCIe each way); each extra switch hop of a
 * cross-leaf path adds switch_lat_ns (on leaf-up and spine-down). Capacities
 * are bytes/s per direction, latencies ns; numbers come from the caller (the
 * hardware spec), nothing here reads models/. The topo does not own the net.
 * Each link's kind is recorded where the link is made (net_topo_link_kind),
 * so callers never parse link names to tell NVLink from PCIe or NIC.
 * Deeper KV tiers (optional, after every other link): a node's NVMe drive is
 * two links on the host side of the PCIe path, read (drive to host memory,
 * capacity nvme_read_bw, latency nvme_lat_ns) and write (host memory to
 * drive, nvme_write_bw, nvme_lat_ns); a read bound for a GPU continues on
 * that GPU's PCIe down link, so NVMe fetches share it with host fetches, and
 * the node's tensor-parallel shards share the one drive. A pooled store
 * (Mooncake Store, LMCache remote) is two links of the whole cluster, out
 * (pool to fabric, pool_bw, pool_lat_ns) and in (fabric to pool), reached
 * through the GPUs' NIC links, so pool traffic shares them with peer copies
 * (under leaf/spine the pool hangs off the spine: no leaf links on its path,
 * an own simplification).
 * A zero bandwidth means the tier is absent (no links made).
 * Path functions fill links_out[NET_PATH_MAX] and return the link count, or
 * KS_EINPUT for an index out of range, a GPU to itself or an absent tier.
 */
#ifndef KVSIM_NET_TOPO_H
#define KVSIM_NET_TOPO_H

#include <stdint.h>

#include "sim/base/err.h"
#include "sim/net/net.h"

typedef enum { NET_FABRIC_SINGLE = 0, NET_FABRIC_LEAF_SPINE = 1 } net_fabric_t;

typedef struct net_topo_spec {
	uint32_t nodes, gpus_per_node;
	double nvlink_bw;
	int64_t nvlink_lat_ns;
	double pcie_bw;
	int64_t pcie_lat_ns;
	double nic_bw;
	int64_t nic_lat_ns;
	net_fabric_t fabric;
	double oversubscription; /* >= 1; leaf/spine only */
	uint32_t gpus_per_leaf;  /* leaf/spine only */
	int64_t switch_lat_ns;
	double nvme_read_bw, nvme_write_bw; /* per node; 0: no NVMe links */
	int64_t nvme_lat_ns;
	double pool_bw;                     /* per direction; 0: no pool links */
	int64_t pool_lat_ns;
} net_topo_spec_t;

typedef enum {
	NET_LK_NVLINK_UP, NET_LK_NVLINK_DOWN, NET_LK_PCIE_D2H, NET_LK_PCIE_H2D,
	NET_LK_NIC_UP, NET_LK_NIC_DOWN, NET_LK_LEAF_UP, NET_LK_SPINE_DOWN,
	NET_LK_NVME_READ, NET_LK_NVME_WRITE, NET_LK_POOL_OUT, NET_LK_POOL_IN
} net_link_kind_t;

/* What a link is made of, for per-medium accounting: leaf-up and spine-down
 * links are the fabric, and so is any link the topology did not make. */
typedef enum {
	NET_MEDIUM_NVLINK, NET_MEDIUM_PCIE, NET_MEDIUM_NIC, NET_MEDIUM_FABRIC,
	NET_MEDIUM_NVME, NET_MEDIUM_POOL
} net_medium_t;
#define NET_MEDIUM_N 6

typedef struct net_topo net_topo_t;

int net_topo_build(net_t *net, const net_topo_spec_t *spec, net_topo_t **out, err_t *e);
void net_topo_free(net_topo_t *t);
uint32_t net_topo_leaves(const net_topo_t *t);     /* 1 for a single switch */
uint32_t net_topo_leaf_of(const net_topo_t *t, uint32_t node, uint32_t gpu);
/* Link id of a GPU's link (kind < NET_LK_LEAF_UP), a leaf's (index = leaf),
 * a node's NVMe link (index ignored) or the pool's (node and index ignored). */
int net_topo_link(const net_topo_t *t, net_link_kind_t kind, uint32_t node, uint32_t gpu_or_leaf,
		  uint32_t *link);
/* The kind a link was made with into *kind; KS_EINPUT for a link this
 * topology did not make (added to the net before it or by someone else). */
int net_topo_link_kind(const net_topo_t *t, uint32_t link, net_link_kind_t *kind);
/* The medium of a link (NET_MEDIUM_FABRIC for one the topology did not make). */
net_medium_t net_topo_link_medium(const net_topo_t *t, uint32_t link);
/* "n3g2.nvlink_up", "leaf1.up", ... into buf; returns buf. */
const char *net_topo_link_name(const net_topo_t *t, uint32_t link, char *buf, size_t n);

int net_path_gpu_gpu(const net_topo_t *t, uint32_t node_a, uint32_t gpu_a, uint32_t node_b,
		     uint32_t gpu_b, uint32_t *links_out);
int net_path_gpu_host(const net_topo_t *t, uint32_t node, uint32_t gpu, uint32_t *links_out);
int net_path_host_gpu(const net_topo_t *t, uint32_t node, uint32_t gpu, uint32_t *links_out);
/* NVMe read into a GPU (through a host bounce buffer: NVMe read, PCIe down). */
int net_path_nvme_gpu(const net_topo_t *t, uint32_t node, uint32_t gpu, uint32_t *links_out);
/* Host memory to the node's NVMe drive (NVMe write). */
int net_path_host_nvme(const net_topo_t *t, uint32_t node, uint32_t *links_out);
/* Pool to a GPU (pool out, the GPU's NIC down). */
int net_path_pool_gpu(const net_topo_t *t, uint32_t node, uint32_t gpu, uint32_t *links_out);
/* A GPU, or host memory through GPU gpu's NIC (rail-optimised), to the pool
 * (NIC up, pool in); from_nvme prepends the node's NVMe read. */
int net_path_to_pool(const net_topo_t *t, uint32_t node, uint32_t gpu, int from_nvme,
		     uint32_t *links_out);

#endif
