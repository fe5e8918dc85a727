/* sim_tiers — KV tiers below a node's host memory: a per-node NVMe drive
 * and one pooled store of the whole cluster reached over the NICs
 * ([kvcache] nvme_kv_gb, pool_kv_gb; both off by default, and then nothing
 * here changes a run: no links, no stores, no metrics).
 *
 * Places (sim_place.h): a KV location is a place_t (kcopy_t.src/dst): an
 * instance, the host tier of a node, the NVMe tier of a node or the pool.
 * Each tier is a line of SIM_TIER_LIST and a table (sim_tier_ops_t below:
 * its store, its paths, whether it takes the evictions of the tiers above);
 * all four are in sim_tiers.c.
 * Each tier is a kv_store_t sized in blocks of a whole instance, LRU as the
 * host tier, inclusive (a fetch copies a block up and leaves it in place).
 *
 * Data flow, with kvcache.host_offload on: a block evicted from a tier moves
 * to the next tier that is on, HBM -> host -> NVMe -> pool (the pool drops
 * what it evicts), as a background copy; a routed request's missing prefix
 * may come from the node's NVMe or the pool under host_fetch's rule (the
 * same fetch-or-recompute cost test as the host tier, sim_fetch_decide).
 * Links (sim/net/net_topo.h): an NVMe read reaches a GPU through a host
 * bounce buffer, one pipelined flow per shard over NVMe read + the GPU's
 * PCIe down link, so a shard's rate alone is min(nvme_read_bw / shards on
 * the drive, PCIe); host -> NVMe is the drive's write link; the pool is
 * pool out + the GPU's NIC down, and NIC up + pool in, sharing the NICs
 * with peer copies. No GPUDirect Storage: LMCache's local disk backend and
 * vLLM's CPU offload connector both stage through host memory.
 *
 * Metrics (recorder.h REC_TIER_*, only when a tier is on): tokens fetched
 * from each tier (of tok_fetched_host: the cluster's per-request tok_host
 * counts every fetch from below HBM), blocks offloaded, evicted, resident
 * at the end and fetched per tier, link bytes and busy time of the tiers'
 * links. Errors: KS_ENOMEM. Everything here belongs to the sim_ctx_t.
 */
#ifndef KVSIM_SIM_TIERS_H
#define KVSIM_SIM_TIERS_H

#include "sim/run/sim_int.h"

/* One tier (a SIM_TIER_LIST line): its hooks, called only through
 * sim_store_of, sim_shard_path and sim_tier_below, so that no code outside
 * the tables asks which tier a place is. */
typedef struct sim_tier_ops {
	const char *name;
	int per_node; /* 1: a place per node (index = node); 0: one (index 0) */
	/* The store at place `at` of this tier; NULL when the tier is off
	 * there. */
	kv_store_t *(*store)(sim_ctx_t *s, place_t at);
	/* Path of shard g of a copy between src and dst when this tier is the
	 * lower of the two ends' (either end; both for HBM to HBM): fills
	 * links, *kind (PATH_*), returns the length, or < 0 (KS_EINPUT for a
	 * move the tier does not make). */
	int (*path)(sim_ctx_t *s, place_t src, place_t dst, uint32_t g, uint32_t *links,
		    int *kind);
	/* Whether this tier takes, at node, the blocks a tier above evicts
	 * (its place to *to); NULL: never. */
	int (*takes)(sim_ctx_t *s, uint32_t node, place_t *to);
} sim_tier_ops_t;

#define SIM_TIER_EXTERN(N, name, ops) extern const sim_tier_ops_t ops;
SIM_TIER_LIST(SIM_TIER_EXTERN)
#undef SIM_TIER_EXTERN

/* The table of a tier (t < SIM_TIER_N). */
const sim_tier_ops_t *sim_tier_ops(sim_tier_t t);
/* Path from GPU gs of instance src to GPU gd of instance dst (NVLink in a
 * node, else the NICs and fabric): fills links, *kind; the length or < 0. */
int sim_gpu_path(sim_ctx_t *s, uint32_t src, uint32_t gs, uint32_t dst, uint32_t gd,
                 uint32_t *links, int *kind);

/* The NVMe and pool links' figures from p into ts (zero bandwidth when off). */
void sim_tiers_topo(const sim_params_t *p, net_topo_spec_t *ts);
/* Makes the NVMe and pool stores (s->host exists); their stores' and, when
 * a tier below exists, the host stores' evictions call on_evict with a
 * sim_tier_hook_t. */
typedef struct sim_tier_hook {
	sim_ctx_t *s;
	place_t where;
} sim_tier_hook_t;
int sim_tiers_init(sim_ctx_t *s, const sim_params_t *p, kv_evict_fn on_evict);
void sim_tiers_free(sim_ctx_t *s);

/* Where a block evicted at `where` goes: the first tier below it that
 * takes it (1 and *to), or 0 for nowhere; counts the eviction of a tier
 * below host memory. */
int sim_tier_below(sim_ctx_t *s, place_t where, int evicted, place_t *to);
/* A copy's share of a link's capacity cap (bytes/s) when its shards are
 * alone: all of them cross a node's one NVMe drive and the one pool, so
 * cap / shards there, cap elsewhere. */
double sim_tier_link_share(const sim_ctx_t *s, uint32_t link, double cap);
/* Whether node has an NVMe tier or the pool is on. */
int sim_tiers_any(const sim_ctx_t *s, uint32_t node);
/* The longest match of r's prefix at node's NVMe and the pool beating
 * *best (ties keep the higher tier); sets *best, *from and returns 1. */
int sim_tiers_best(sim_ctx_t *s, const sim_req_t *r, uint32_t node, uint32_t *best, place_t *from);
/* Accounting: k blocks started towards a tier place, or fetched from one
 * for request r (0 or KS_ENOMEM). */
void sim_tiers_offloaded(sim_ctx_t *s, place_t to, uint32_t k);
int sim_tiers_fetched(sim_ctx_t *s, const sim_req_t *r, place_t from, uint32_t k);
/* End of run: the tiers' metrics, with the per-medium link bytes and busy
 * seconds by class (kb, kt; NET_MEDIUM_* rows). Nothing when both are off. */
int sim_tiers_finish(sim_ctx_t *s, sim_results_t *res, double kb[][2], double kt[][2]);

#endif
