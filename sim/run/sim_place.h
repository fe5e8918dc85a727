/* sim_place — where KV lives: an instance's HBM, the host tier of a node,
 * the NVMe tier of a node, or the cluster's one pool. A place is a small
 * value, a kind (sim_tier_t) and an index (the instance, the node, 0 for
 * the pool), made and read through the constructors and accessors here; a
 * copy's ends (kcopy_t.src, dst) and the tiers' hooks are places. What a
 * tier does (its store, its paths, whether it takes what the tier above
 * evicts) is its ops table (sim_tiers.h); nothing outside the tables asks
 * which tier a place is. Header-only; nothing allocates.
 */
#ifndef KVSIM_SIM_PLACE_H
#define KVSIM_SIM_PLACE_H

#include <stdint.h>

/* The tiers, highest first: a block evicted from one moves to the first
 * tier below it that takes it (sim_tier_below). X(NAME, "name", table):
 * SIM_TIER_<NAME>, its name and its sim_tier_ops_t (sim_tiers.h) come from
 * the line. Keep the order: it is the hierarchy, and the places' codes
 * (place_code) and the decision trace's tier numbers follow it. */
#define SIM_TIER_LIST(X)                                                                           \
	X(HBM, "hbm", sim_tier_hbm)                                                                \
	X(HOST, "host", sim_tier_host)                                                             \
	X(NVME, "nvme", sim_tier_nvme)                                                             \
	X(POOL, "pool", sim_tier_pool)

#define SIM_TIER_ENUM(N, name, ops) SIM_TIER_##N,
typedef enum { SIM_TIER_LIST(SIM_TIER_ENUM) SIM_TIER_N } sim_tier_t;
#undef SIM_TIER_ENUM

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

/* The node of a tier place (host, NVMe; 0 for the pool, whose index is 0). */
static inline uint32_t place_node(place_t p)
{
	return p.index;
}

/* The int32 code a place had before places were values, which the flows of
 * a copy still carry as their caller tags (net_flow_spec_t.src, dst): an
 * instance is itself, the place at index n of the k-th tier below HBM
 * -1 - (k - 1) nodes - n (host -1 - n, NVMe -1 - nodes - n, the pool
 * -1 - 2 nodes). The one conversion; nothing reads a place back from it. */
static inline int32_t place_code(place_t p, uint32_t nodes)
{
	if (place_is_inst(p))
		return (int32_t)p.index;
	return -1 - (int32_t)((p.kind - 1u) * nodes + p.index);
}

#endif
