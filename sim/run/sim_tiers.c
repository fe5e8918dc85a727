/* sim_tiers — see sim_tiers.h. */
#include "sim/run/sim_tiers.h"

#include <stdlib.h>

#include "sim/base/vec.h"
#include "sim/run/recorder.h"

/* What one tier below host memory counted (blocks). */
typedef struct tier_count {
	uint64_t offloaded, evicted, fetched;
} tier_count_t;

/* A request fetched from NVMe or the pool: its tok_host is that tier's. */
typedef struct tier_fetch {
	uint64_t req;
	uint8_t tier; /* sim_tier_t */
} tier_fetch_t;

struct sim_tiers {
	kv_store_t **nvme;     /* [nodes], NULL entries when off */
	kv_store_t *pool;      /* NULL when off */
	sim_tier_hook_t *hook; /* [2 nodes + 1]: host, NVMe per node, the pool */
	int offload;           /* kvcache.host_offload */
	tier_count_t n[2];     /* NVMe, pool */
	tier_fetch_t *fetch;
	size_t n_fetch, cap_fetch;
};

#define SIM_TIER_PTR(N, name, ops) &ops,
static const sim_tier_ops_t *const tiers[] = {SIM_TIER_LIST(SIM_TIER_PTR)};
#undef SIM_TIER_PTR
_Static_assert(sizeof tiers / sizeof tiers[0] == SIM_TIER_N, "one table per tier");

const sim_tier_ops_t *sim_tier_ops(sim_tier_t t)
{
	return tiers[t];
}

void sim_tiers_topo(const sim_params_t *p, net_topo_spec_t *ts)
{
	int nvme = p->nvme_kv_gb > 0, pool = p->pool_kv_gb > 0;
	ts->nvme_read_bw = nvme ? p->nvme_read_bw : 0;
	ts->nvme_write_bw = nvme ? p->nvme_write_bw : 0;
	ts->nvme_lat_ns = nvme ? (int64_t)(p->nvme_lat_us * 1e3 + 0.5) : 0;
	ts->pool_bw = pool ? p->pool_bw : 0;
	ts->pool_lat_ns = pool ? (int64_t)(p->pool_lat_us * 1e3 + 0.5) : 0;
}

static kv_store_t *store_gb(const sim_ctx_t *s, double gb)
{
	return kv_store_new((uint32_t)(gb * 1e9 / (double)s->cl.p.block_bytes));
}

int sim_tiers_init(sim_ctx_t *s, const sim_params_t *p, kv_evict_fn on_evict)
{
	if (!(p->nvme_kv_gb > 0) && !(p->pool_kv_gb > 0))
		return 0;
	struct sim_tiers *t = s->tiers = calloc(1, sizeof *t);
	if (!t || !(t->nvme = calloc(s->nodes, sizeof *t->nvme)) ||
	    !(t->hook = calloc(2 * (size_t)s->nodes + 1, sizeof *t->hook)))
		return KS_ENOMEM;
	t->offload = p->host_offload;
	for (uint32_t i = 0; p->nvme_kv_gb > 0 && i < s->nodes; i++)
		if (!(t->nvme[i] = store_gb(s, p->nvme_kv_gb)))
			return KS_ENOMEM;
	if (p->pool_kv_gb > 0 && !(t->pool = store_gb(s, p->pool_kv_gb)))
		return KS_ENOMEM;
	/* the tiers below HBM, each place in turn: t->hook's order */
	uint32_t i = 0;
	for (int k = SIM_TIER_HBM + 1; k < SIM_TIER_N; k++)
		for (uint32_t n = 0; n < (tiers[k]->per_node ? s->nodes : 1); n++, i++) {
			place_t where = {(uint8_t)k, n};
			kv_store_t *st = tiers[k]->store(s, where);
			t->hook[i] = (sim_tier_hook_t){s, where};
			if (st)
				kv_store_set_policy(st, NULL, on_evict, &t->hook[i]);
		}
	return 0;
}

void sim_tiers_free(sim_ctx_t *s)
{
	struct sim_tiers *t = s->tiers;
	if (!t)
		return;
	for (uint32_t i = 0; t->nvme && i < s->nodes; i++)
		kv_store_free(t->nvme[i]);
	kv_store_free(t->pool);
	free(t->nvme);
	free(t->hook);
	free(t->fetch);
	free(t);
	s->tiers = NULL;
}

int sim_tier_below(sim_ctx_t *s, place_t where, int evicted, place_t *to)
{
	struct sim_tiers *t = s->tiers;
	sim_tier_t tier = place_tier(where);
	if (evicted && t && tier >= SIM_TIER_NVME)
		t->n[tier - SIM_TIER_NVME].evicted++;
	uint32_t node = tier == SIM_TIER_HBM ? where.index * s->tp / s->gpus_per_node
	                                     : place_node(where);
	for (int k = tier + 1; k < SIM_TIER_N; k++)
		if (tiers[k]->takes && tiers[k]->takes(s, node, to))
			return 1;
	return 0;
}

/* ---- the tables ------------------------------------------------------------ */

/* The node and GPU (in the node) a shard of a copy with a tier end uses:
 * the instance end's (the destination's when both are), else the source's
 * node and GPU g. */
static void tier_end(const sim_ctx_t *s, place_t src, place_t dst, uint32_t g, uint32_t *node,
                     uint32_t *gpu)
{
	place_t at = place_is_inst(dst) ? dst : src;
	*node = place_is_inst(at) ? sim_inst_node(s, at.index) : place_node(at);
	*gpu = (place_is_inst(at) ? sim_inst_gpu0(s, at.index) : 0) + g;
}

int sim_gpu_path(sim_ctx_t *s, uint32_t src, uint32_t gs, uint32_t dst, uint32_t gd,
                 uint32_t *links, int *kind)
{
	uint32_t ns = sim_inst_node(s, src), nd = sim_inst_node(s, dst);
	*kind = ns == nd ? PATH_NVLINK : PATH_NET;
	return net_path_gpu_gpu(s->topo, ns, sim_inst_gpu0(s, src) + gs, nd,
	                        sim_inst_gpu0(s, dst) + gd, links);
}

static kv_store_t *hbm_store(sim_ctx_t *s, place_t at)
{
	return s->cl.inst[at.index].kv;
}

/* Between two instances' GPUs. */
static int hbm_path(sim_ctx_t *s, place_t src, place_t dst, uint32_t g, uint32_t *links,
                    int *kind)
{
	/* a decode instance of another TP (speculative pre-placement): shard g
	 * lands on its GPU g x tp_dst / tp, as sim_copy_handoff reshards */
	uint32_t gd = s->tp_decode && s->cl.inst[dst.index].role == CL_ROLE_DECODE
	                      ? g * s->tp_decode / s->tp
	                      : g;
	return sim_gpu_path(s, src.index, g, dst.index, gd, links, kind);
}

/* Nothing is above HBM: it takes no evicted block. */
const sim_tier_ops_t sim_tier_hbm = {.name = "hbm", .per_node = 0, .store = hbm_store,
                                     .path = hbm_path, .takes = NULL};

static kv_store_t *host_store(sim_ctx_t *s, place_t at)
{
	return s->host[place_node(at)];
}

/* PCIe between a GPU and its node's host memory, either way. */
static int host_path(sim_ctx_t *s, place_t src, place_t dst, uint32_t g, uint32_t *links,
                     int *kind)
{
	uint32_t node, gpu;
	tier_end(s, src, dst, g, &node, &gpu);
	if (place_is_inst(dst)) {
		*kind = PATH_PCIE_H2D;
		return net_path_host_gpu(s->topo, node, gpu, links);
	}
	if (place_is_inst(src)) {
		*kind = PATH_PCIE_D2H;
		return net_path_gpu_host(s->topo, node, gpu, links);
	}
	return KS_EINPUT;
}

/* What the host tier always did: it takes HBM's evictions when on. */
static int host_takes(sim_ctx_t *s, uint32_t node, place_t *to)
{
	if (!s->host_offload || !s->host[node])
		return 0;
	*to = place_host(node);
	return 1;
}

const sim_tier_ops_t sim_tier_host = {.name = "host", .per_node = 1, .store = host_store,
                                      .path = host_path, .takes = host_takes};

static kv_store_t *nvme_store(sim_ctx_t *s, place_t at)
{
	return s->tiers ? s->tiers->nvme[place_node(at)] : NULL;
}

/* Writes: GPU to a host bounce buffer (from HBM), then the drive; reads:
 * the drive to a GPU through the bounce buffer, pipelined. */
static int nvme_path(sim_ctx_t *s, place_t src, place_t dst, uint32_t g, uint32_t *links,
                     int *kind)
{
	uint32_t node, gpu;
	int n = 0;
	tier_end(s, src, dst, g, &node, &gpu);
	if (place_tier(dst) == SIM_TIER_NVME) {
		*kind = PATH_NVME_WRITE;
		if (place_is_inst(src) && (n = net_path_gpu_host(s->topo, node, gpu, links)) < 0)
			return n;
		int m = net_path_host_nvme(s->topo, node, links + n);
		return m < 0 ? m : n + m;
	}
	if (!place_is_inst(dst))
		return KS_EINPUT; /* no tier moves blocks up into host memory */
	*kind = PATH_NVME_READ;
	return net_path_nvme_gpu(s->topo, node, gpu, links);
}

static int nvme_takes(sim_ctx_t *s, uint32_t node, place_t *to)
{
	if (!s->tiers || !s->tiers->offload || !s->tiers->nvme[node])
		return 0;
	*to = place_nvme(node);
	return 1;
}

const sim_tier_ops_t sim_tier_nvme = {.name = "nvme", .per_node = 1, .store = nvme_store,
                                      .path = nvme_path, .takes = nvme_takes};

static kv_store_t *pool_store(sim_ctx_t *s, place_t at)
{
	(void)at;
	return s->tiers ? s->tiers->pool : NULL;
}

/* Puts: the node's NIC up and the pool's way in (from NVMe, through the
 * host); gets: the pool's way out and the GPU's NIC down. */
static int pool_path(sim_ctx_t *s, place_t src, place_t dst, uint32_t g, uint32_t *links,
                     int *kind)
{
	uint32_t node, gpu;
	tier_end(s, src, dst, g, &node, &gpu);
	if (place_tier(dst) == SIM_TIER_POOL) {
		*kind = PATH_POOL_PUT;
		return net_path_to_pool(s->topo, node, gpu, place_tier(src) == SIM_TIER_NVME, links);
	}
	if (!place_is_inst(dst))
		return KS_EINPUT; /* no tier moves blocks up into host memory */
	*kind = PATH_POOL_GET;
	return net_path_pool_gpu(s->topo, node, gpu, links);
}

static int pool_takes(sim_ctx_t *s, uint32_t node, place_t *to)
{
	(void)node;
	if (!s->tiers || !s->tiers->offload || !s->tiers->pool)
		return 0;
	*to = place_pool();
	return 1;
}

const sim_tier_ops_t sim_tier_pool = {.name = "pool", .per_node = 0, .store = pool_store,
                                      .path = pool_path, .takes = pool_takes};

double sim_tier_link_share(const sim_ctx_t *s, uint32_t link, double cap)
{
	net_medium_t m = net_topo_link_medium(s->topo, link);
	return m == NET_MEDIUM_NVME || m == NET_MEDIUM_POOL ? cap / s->tp : cap;
}

int sim_tiers_any(const sim_ctx_t *s, uint32_t node)
{
	const struct sim_tiers *t = s->tiers;
	return t && (t->nvme[node] || t->pool);
}

int sim_tiers_best(sim_ctx_t *s, const sim_req_t *r, uint32_t node, uint32_t *best, place_t *from)
{
	int found = 0;
	for (int k = SIM_TIER_HOST + 1; s->tiers && k < SIM_TIER_N; k++) {
		place_t at = {(uint8_t)k, tiers[k]->per_node ? node : 0};
		kv_store_t *st = tiers[k]->store(s, at);
		uint32_t m = st ? kv_match(st, r->blocks, r->n_blocks) : 0;
		if (m > *best) {
			*best = m;
			*from = at;
			found = 1;
		}
	}
	return found;
}

void sim_tiers_offloaded(sim_ctx_t *s, place_t to, uint32_t k)
{
	sim_tier_t tier = place_tier(to);
	if (s->tiers && tier >= SIM_TIER_NVME)
		s->tiers->n[tier - SIM_TIER_NVME].offloaded += k;
}

int sim_tiers_fetched(sim_ctx_t *s, const sim_req_t *r, place_t from, uint32_t k)
{
	struct sim_tiers *t = s->tiers;
	sim_tier_t tier = place_tier(from);
	if (!t || tier < SIM_TIER_NVME)
		return 0;
	t->n[tier - SIM_TIER_NVME].fetched += k;
	if (VEC_GROW(t->fetch, t->cap_fetch, t->n_fetch + 1, 64))
		return KS_ENOMEM;
	t->fetch[t->n_fetch++] = (tier_fetch_t){r->id, (uint8_t)tier};
	return 0;
}

static int fetch_cmp(const void *a, const void *b)
{
	uint64_t x = ((const tier_fetch_t *)a)->req, y = ((const tier_fetch_t *)b)->req;
	return (x > y) - (x < y);
}

/* Blocks resident (READY or landing) in a store, 0 for none. */
static double resident(const kv_store_t *st)
{
	return st ? (double)kv_used(st) : 0;
}

/* res_rows_fn: each fetching request's tok_host, by the tier it fetched
 * from (t->fetch sorted by request). */
typedef struct tier_tok {
	const struct sim_tiers *t;
	double tok[2];
} tier_tok_t;
static int sum_tier_tok(void *ctx, const void *rows, size_t n)
{
	tier_tok_t *tt = ctx;
	for (const res_request_t *r = rows, *end = r + n; r < end; r++) {
		tier_fetch_t key = {r->id, 0};
		const tier_fetch_t *f =
		    bsearch(&key, tt->t->fetch, tt->t->n_fetch, sizeof key, fetch_cmp);
		if (f)
			tt->tok[f->tier - SIM_TIER_NVME] += r->tok_host;
	}
	return 0;
}

int sim_tiers_finish(sim_ctx_t *s, sim_results_t *res, double kb[][2], double kt[][2])
{
	struct sim_tiers *t = s->tiers;
	if (!t)
		return 0;
	/* a request fetches at most once (at its routing): its tok_host is
	 * from the tier recorded for it, if any */
	if (t->n_fetch) /* qsort's array may not be NULL, even when empty */
		qsort(t->fetch, t->n_fetch, sizeof *t->fetch, fetch_cmp);
	tier_tok_t tt = {t, {0, 0}};
	int rc = t->n_fetch ? sim_results_rows(res, RES_T_REQ, sum_tier_tok, &tt) : 0;
	if (rc)
		return rc;
	const double *tok = tt.tok;
	double nvme_res = 0;
	for (uint32_t i = 0; i < s->nodes; i++)
		nvme_res += resident(t->nvme[i]);
	const double m[] = {
	    tok[0],
	    tok[1],
	    (double)t->n[0].offloaded,
	    (double)t->n[0].evicted,
	    nvme_res,
	    (double)t->n[0].fetched,
	    (double)t->n[1].offloaded,
	    (double)t->n[1].evicted,
	    resident(t->pool),
	    (double)t->n[1].fetched,
	};
	_Static_assert(sizeof m / sizeof m[0] == REC_POOL_BLOCKS_FETCHED - REC_TOK_FETCHED_NVME + 1,
	               "one value per metric");
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		if (rec_metric(res, REC_TOK_FETCHED_NVME + (int)i, m[i]))
			return KS_ENOMEM;
	/* the tiers' links, as the four media's rows (REC_LINK order) */
	for (int k = 0; k < 2; k++)
		for (int c = 0; c < 2; c++) {
			int id = REC_LINK_BYTES_FG_NVME + 4 * k + 2 * c;
			if (rec_metric(res, id, kb[NET_MEDIUM_NVME + k][c]) ||
			    rec_metric(res, id + 1, kt[NET_MEDIUM_NVME + k][c]))
				return KS_ENOMEM;
		}
	return 0;
}
