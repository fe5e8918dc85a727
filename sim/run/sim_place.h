/* sim_place — where KV lives: an instance's HBM, the host tier of a node,
 * the NVMe tier of a node, or the cluster's one pool (the tiers below HBM
 * are sim_tiers.h's). A place is a small value, a kind (sim_tier_t) and an
 * index (the instance, the node, 0 for the pool), made and read through the
 * constructors and accessors here; a copy's ends (kcopy_t.src, dst) and the
 * tiers' hooks are places. Header-only; nothing allocates.
 */
#ifndef KVSIM_SIM_PLACE_H
#define KVSIM_SIM_PLACE_H

#include <stdint.h>

typedef enum { SIM_TIER_HBM, SIM_TIER_HOST, SIM_TIER_NVME, SIM_TIER_POOL } sim_tier_t;

typedef struct place {
	uint8_t kind;   /* sim_tier_t: SIM_TIER_HBM is an instance */
	uint32_t index; /* the instance (HBM), the node (host, NVMe), 0 (pool) */
} place_t;

static inline place_t place_inst(uint32_t inst)
{
	return (place_t){SIM_TIER_HBM, inst};
}

static inline place_t place_host(uint32_t node)
{
	return (place_t){SIM_TIER_HOST, node};
}

static inline place_t place_nvme(uint32_t node)
{
	return (place_t){SIM_TIER_NVME, node};
}

static inline place_t place_pool(void)
{
	return (place_t){SIM_TIER_POOL, 0};
}

static inline sim_tier_t place_tier(place_t p)
{
	return (sim_tier_t)p.kind;
}

static inline int place_is_inst(place_t p)
{
	return p.kind == SIM_TIER_HBM;
}

static inline int place_eq(place_t a, place_t b)
{
	return a.kind == b.kind && a.index == b.index;
}

/* The node of a tier place (host, NVMe; 0 for the pool). */
static inline uint32_t place_node(place_t p)
{
	return p.kind == SIM_TIER_POOL ? 0 : p.index;
}

/* The int32 code a place had before places were values, which the flows of
 * a copy still carry as their caller tags (net_flow_spec_t.src, dst): an
 * instance is itself, the host tier of node n -1 - n, its NVMe tier
 * -1 - nodes - n, the pool -1 - 2 nodes. The one conversion; nothing reads
 * a place back from it. */
static inline int32_t place_code(place_t p, uint32_t nodes)
{
	switch (place_tier(p)) {
	case SIM_TIER_HBM:
		return (int32_t)p.index;
	case SIM_TIER_HOST:
		return -1 - (int32_t)p.index;
	case SIM_TIER_NVME:
		return -1 - (int32_t)(nodes + p.index);
	default:
		return -1 - 2 * (int32_t)nodes;
	}
}

#endif
