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
 * Path functions fill links_out[NET_PATH_MAX] and return the link count, or
 * KS_EINPUT for an index out of range or a GPU to itself.
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
} net_topo_spec_t;

typedef enum {
	NET_LK_NVLINK_UP, NET_LK_NVLINK_DOWN, NET_LK_PCIE_D2H, NET_LK_PCIE_H2D,
	NET_LK_NIC_UP, NET_LK_NIC_DOWN, NET_LK_LEAF_UP, NET_LK_SPINE_DOWN
} net_link_kind_t;

/* What a link is made of, for per-medium accounting: leaf-up and spine-down
 * links are the fabric, and so is any link the topology did not make. */
typedef enum { NET_MEDIUM_NVLINK, NET_MEDIUM_PCIE, NET_MEDIUM_NIC, NET_MEDIUM_FABRIC } net_medium_t;
#define NET_MEDIUM_N 4

typedef struct net_topo net_topo_t;

int net_topo_build(net_t *net, const net_topo_spec_t *spec, net_topo_t **out, err_t *e);
void net_topo_free(net_topo_t *t);
uint32_t net_topo_leaves(const net_topo_t *t);     /* 1 for a single switch */
uint32_t net_topo_leaf_of(const net_topo_t *t, uint32_t node, uint32_t gpu);
/* Link id of a GPU's link (kind < NET_LK_LEAF_UP) or a leaf's (index = leaf). */
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

#endif
