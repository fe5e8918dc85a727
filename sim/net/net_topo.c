/* net_topo — see net_topo.h. */
#include "sim/net/net_topo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define GPU_LINKS 6

struct net_topo {
	net_topo_spec_t spec;
	uint32_t n_gpus, n_leaves;
	uint32_t first;      /* id of GPU 0's first link; all ids are consecutive */
	uint32_t leaf_first; /* id of leaf 0's up link */
	uint32_t nvme_first; /* id of node 0's NVMe read link (2 per node), if any */
	uint32_t pool_first; /* id of the pool's out link (then in), if any */
	uint32_t n_links;    /* links made here: ids first .. first + n_links - 1 */
	uint8_t *kind;       /* [n_links] net_link_kind_t of each, set by add_link */
};

static int bad(err_t *e, const char *what)
{
	return err_set(e, KS_EINPUT, "network topology: %s", what);
}

/* Adds one link and records the kind it is made as, so that accounting never
 * has to guess a link's medium from its name. */
static int add_link(net_t *net, net_topo_t *t, double bw, int64_t lat_ns, net_link_kind_t k,
		    err_t *e)
{
	int rc = net_link_add(net, bw, lat_ns, NULL, e);
	if (!rc)
		t->kind[t->n_links++] = (uint8_t)k;
	return rc;
}

int net_topo_build(net_t *net, const net_topo_spec_t *s, net_topo_t **out, err_t *e)
{
	*out = NULL;
	if (s->nodes == 0 || s->gpus_per_node == 0)
		return bad(e, "nodes and gpus_per_node must be >= 1");
	if (!(s->nvlink_bw > 0 && s->pcie_bw > 0 && s->nic_bw > 0))
		return bad(e, "nvlink, pcie and nic bandwidths must be > 0 bytes/s");
	if (s->nvlink_lat_ns < 0 || s->pcie_lat_ns < 0 || s->nic_lat_ns < 0 || s->switch_lat_ns < 0)
		return bad(e, "latencies must be >= 0 ns");
	if (s->fabric != NET_FABRIC_SINGLE && s->fabric != NET_FABRIC_LEAF_SPINE)
		return bad(e, "fabric must be single or leaf_spine");
	int ls = s->fabric == NET_FABRIC_LEAF_SPINE;
	if (ls && !(s->oversubscription >= 1 && isfinite(s->oversubscription)))
		return bad(e, "oversubscription must be >= 1");
	if (ls && s->gpus_per_leaf == 0)
		return bad(e, "gpus_per_leaf must be >= 1");
	if (!(s->nvme_read_bw >= 0 && s->nvme_write_bw >= 0 && s->pool_bw >= 0) ||
	    (s->nvme_read_bw > 0) != (s->nvme_write_bw > 0) || s->nvme_lat_ns < 0 ||
	    s->pool_lat_ns < 0)
		return bad(e, "nvme bandwidths must both be > 0 or both 0, pool bandwidth >= 0, "
			      "latencies >= 0 ns");
	uint64_t n_gpus = (uint64_t)s->nodes * s->gpus_per_node;
	if (n_gpus > UINT32_MAX / (GPU_LINKS + 2))
		return bad(e, "too many GPUs");
	net_topo_t *t = calloc(1, sizeof *t);
	if (!t)
		return err_set(e, KS_ENOMEM, "network topology: out of memory");
	t->spec = *s;
	t->n_gpus = (uint32_t)n_gpus;
	t->n_leaves = ls ? (uint32_t)((n_gpus + s->gpus_per_leaf - 1) / s->gpus_per_leaf) : 1;
	t->first = (uint32_t)net_link_count(net);
	t->kind = malloc((size_t)t->n_gpus * GPU_LINKS + 2 * (size_t)t->n_leaves +
			 2 * (size_t)s->nodes + 2);
	if (!t->kind) {
		free(t);
		return err_set(e, KS_ENOMEM, "network topology: out of memory");
	}
	int rc = 0;
	for (uint32_t i = 0; i < t->n_gpus && !rc; i++) {
		rc = add_link(net, t, s->nvlink_bw, s->nvlink_lat_ns, NET_LK_NVLINK_UP, e) ||
		     add_link(net, t, s->nvlink_bw, 0, NET_LK_NVLINK_DOWN, e) ||
		     add_link(net, t, s->pcie_bw, s->pcie_lat_ns, NET_LK_PCIE_D2H, e) ||
		     add_link(net, t, s->pcie_bw, s->pcie_lat_ns, NET_LK_PCIE_H2D, e) ||
		     add_link(net, t, s->nic_bw, s->nic_lat_ns, NET_LK_NIC_UP, e) ||
		     add_link(net, t, s->nic_bw, 0, NET_LK_NIC_DOWN, e);
	}
	t->leaf_first = (uint32_t)net_link_count(net);
	for (uint32_t l = 0; ls && l < t->n_leaves && !rc; l++) {
		uint32_t lo = l * s->gpus_per_leaf, hi = lo + s->gpus_per_leaf;
		if (hi > t->n_gpus)
			hi = t->n_gpus;
		double up = (double)(hi - lo) * s->nic_bw / s->oversubscription;
		rc = add_link(net, t, up, s->switch_lat_ns, NET_LK_LEAF_UP, e) ||
		     add_link(net, t, up, s->switch_lat_ns, NET_LK_SPINE_DOWN, e);
	}
	t->nvme_first = (uint32_t)net_link_count(net);
	for (uint32_t n = 0; s->nvme_read_bw > 0 && n < s->nodes && !rc; n++)
		rc = add_link(net, t, s->nvme_read_bw, s->nvme_lat_ns, NET_LK_NVME_READ, e) ||
		     add_link(net, t, s->nvme_write_bw, s->nvme_lat_ns, NET_LK_NVME_WRITE, e);
	t->pool_first = (uint32_t)net_link_count(net);
	if (s->pool_bw > 0 && !rc)
		rc = add_link(net, t, s->pool_bw, s->pool_lat_ns, NET_LK_POOL_OUT, e) ||
		     add_link(net, t, s->pool_bw, s->pool_lat_ns, NET_LK_POOL_IN, e);
	if (rc) {
		net_topo_free(t);
		return e ? e->code : KS_ENOMEM;
	}
	*out = t;
	return 0;
}

void net_topo_free(net_topo_t *t)
{
	if (t)
		free(t->kind);
	free(t);
}

uint32_t net_topo_leaves(const net_topo_t *t)
{
	return t->n_leaves;
}

static uint32_t gidx(const net_topo_t *t, uint32_t node, uint32_t gpu)
{
	return node * t->spec.gpus_per_node + gpu;
}

static int gpu_ok(const net_topo_t *t, uint32_t node, uint32_t gpu)
{
	return node < t->spec.nodes && gpu < t->spec.gpus_per_node;
}

uint32_t net_topo_leaf_of(const net_topo_t *t, uint32_t node, uint32_t gpu)
{
	if (t->spec.fabric != NET_FABRIC_LEAF_SPINE)
		return 0;
	return gidx(t, node, gpu) / t->spec.gpus_per_leaf;
}

static uint32_t glink(const net_topo_t *t, uint32_t node, uint32_t gpu, net_link_kind_t k)
{
	return t->first + gidx(t, node, gpu) * GPU_LINKS + (uint32_t)k;
}

int net_topo_link(const net_topo_t *t, net_link_kind_t kind, uint32_t node, uint32_t gpu_or_leaf,
		  uint32_t *link)
{
	if (kind == NET_LK_LEAF_UP || kind == NET_LK_SPINE_DOWN) {
		if (t->spec.fabric != NET_FABRIC_LEAF_SPINE || gpu_or_leaf >= t->n_leaves)
			return KS_EINPUT;
		*link = t->leaf_first + 2 * gpu_or_leaf + (kind == NET_LK_SPINE_DOWN);
		return 0;
	}
	if (kind == NET_LK_NVME_READ || kind == NET_LK_NVME_WRITE) {
		if (!(t->spec.nvme_read_bw > 0) || node >= t->spec.nodes)
			return KS_EINPUT;
		*link = t->nvme_first + 2 * node + (kind == NET_LK_NVME_WRITE);
		return 0;
	}
	if (kind == NET_LK_POOL_OUT || kind == NET_LK_POOL_IN) {
		if (!(t->spec.pool_bw > 0))
			return KS_EINPUT;
		*link = t->pool_first + (kind == NET_LK_POOL_IN);
		return 0;
	}
	if ((unsigned)kind > NET_LK_NIC_DOWN || !gpu_ok(t, node, gpu_or_leaf))
		return KS_EINPUT;
	*link = glink(t, node, gpu_or_leaf, kind);
	return 0;
}

int net_topo_link_kind(const net_topo_t *t, uint32_t link, net_link_kind_t *kind)
{
	if (link < t->first || link - t->first >= t->n_links)
		return KS_EINPUT;
	*kind = (net_link_kind_t)t->kind[link - t->first];
	return 0;
}

net_medium_t net_topo_link_medium(const net_topo_t *t, uint32_t link)
{
	net_link_kind_t k;
	if (net_topo_link_kind(t, link, &k))
		return NET_MEDIUM_FABRIC;
	switch (k) {
	case NET_LK_NVLINK_UP:
	case NET_LK_NVLINK_DOWN:
		return NET_MEDIUM_NVLINK;
	case NET_LK_PCIE_D2H:
	case NET_LK_PCIE_H2D:
		return NET_MEDIUM_PCIE;
	case NET_LK_NIC_UP:
	case NET_LK_NIC_DOWN:
		return NET_MEDIUM_NIC;
	case NET_LK_NVME_READ:
	case NET_LK_NVME_WRITE:
		return NET_MEDIUM_NVME;
	case NET_LK_POOL_OUT:
	case NET_LK_POOL_IN:
		return NET_MEDIUM_POOL;
	default:
		return NET_MEDIUM_FABRIC;
	}
}

const char *net_topo_link_name(const net_topo_t *t, uint32_t link, char *buf, size_t n)
{
	static const char *const kn[] = {"nvlink_up", "nvlink_down", "pcie_d2h",
					 "pcie_h2d",  "nic_up",      "nic_down"};
	if (link >= t->first && link < t->leaf_first) {
		uint32_t i = (link - t->first) / GPU_LINKS, k = (link - t->first) % GPU_LINKS;
		snprintf(buf, n, "n%ug%u.%s", i / t->spec.gpus_per_node, i % t->spec.gpus_per_node,
			 kn[k]);
	} else if (link >= t->leaf_first && link < t->leaf_first + 2 * t->n_leaves &&
		   t->spec.fabric == NET_FABRIC_LEAF_SPINE) {
		uint32_t l = (link - t->leaf_first) / 2;
		snprintf(buf, n, "leaf%u.%s", l, (link - t->leaf_first) % 2 ? "spine_down" : "up");
	} else if (link >= t->nvme_first && link < t->pool_first) {
		snprintf(buf, n, "n%u.nvme_%s", (link - t->nvme_first) / 2,
			 (link - t->nvme_first) % 2 ? "write" : "read");
	} else if (link >= t->pool_first && link < t->first + t->n_links) {
		snprintf(buf, n, "pool.%s", link - t->pool_first ? "in" : "out");
	} else {
		snprintf(buf, n, "link%u", link);
	}
	return buf;
}

int net_path_gpu_gpu(const net_topo_t *t, uint32_t node_a, uint32_t gpu_a, uint32_t node_b,
		     uint32_t gpu_b, uint32_t *out)
{
	if (!gpu_ok(t, node_a, gpu_a) || !gpu_ok(t, node_b, gpu_b))
		return KS_EINPUT;
	if (node_a == node_b) {
		if (gpu_a == gpu_b)
			return KS_EINPUT;
		out[0] = glink(t, node_a, gpu_a, NET_LK_NVLINK_UP);
		out[1] = glink(t, node_b, gpu_b, NET_LK_NVLINK_DOWN);
		return 2;
	}
	int n = 0;
	out[n++] = glink(t, node_a, gpu_a, NET_LK_NIC_UP);
	uint32_t la = net_topo_leaf_of(t, node_a, gpu_a), lb = net_topo_leaf_of(t, node_b, gpu_b);
	if (la != lb) {
		out[n++] = t->leaf_first + 2 * la;
		out[n++] = t->leaf_first + 2 * lb + 1;
	}
	out[n++] = glink(t, node_b, gpu_b, NET_LK_NIC_DOWN);
	return n;
}

int net_path_gpu_host(const net_topo_t *t, uint32_t node, uint32_t gpu, uint32_t *out)
{
	if (!gpu_ok(t, node, gpu))
		return KS_EINPUT;
	out[0] = glink(t, node, gpu, NET_LK_PCIE_D2H);
	return 1;
}

int net_path_host_gpu(const net_topo_t *t, uint32_t node, uint32_t gpu, uint32_t *out)
{
	if (!gpu_ok(t, node, gpu))
		return KS_EINPUT;
	out[0] = glink(t, node, gpu, NET_LK_PCIE_H2D);
	return 1;
}

int net_path_nvme_gpu(const net_topo_t *t, uint32_t node, uint32_t gpu, uint32_t *out)
{
	if (!gpu_ok(t, node, gpu) || net_topo_link(t, NET_LK_NVME_READ, node, 0, &out[0]))
		return KS_EINPUT;
	out[1] = glink(t, node, gpu, NET_LK_PCIE_H2D);
	return 2;
}

int net_path_host_nvme(const net_topo_t *t, uint32_t node, uint32_t *out)
{
	return net_topo_link(t, NET_LK_NVME_WRITE, node, 0, &out[0]) ? KS_EINPUT : 1;
}

int net_path_pool_gpu(const net_topo_t *t, uint32_t node, uint32_t gpu, uint32_t *out)
{
	if (!gpu_ok(t, node, gpu) || net_topo_link(t, NET_LK_POOL_OUT, 0, 0, &out[0]))
		return KS_EINPUT;
	out[1] = glink(t, node, gpu, NET_LK_NIC_DOWN);
	return 2;
}

int net_path_to_pool(const net_topo_t *t, uint32_t node, uint32_t gpu, int from_nvme, uint32_t *out)
{
	int n = 0;
	if (!gpu_ok(t, node, gpu) ||
	    (from_nvme && net_topo_link(t, NET_LK_NVME_READ, node, 0, &out[n++])))
		return KS_EINPUT;
	out[n++] = glink(t, node, gpu, NET_LK_NIC_UP);
	return net_topo_link(t, NET_LK_POOL_IN, 0, 0, &out[n++]) ? KS_EINPUT : n;
}
