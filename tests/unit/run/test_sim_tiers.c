/* KV tiers below host memory (sim/run/sim_tiers.c): a node's NVMe drive and
 * the pooled store. A hand scenario on one 4-GPU instance evicts a prefix
 * from HBM to NVMe and asks for it again: the fetch takes exactly the path
 * latency + bytes / min(nvme_read_bw / 4 shards, PCIe) by the network's time
 * rule, whichever of the drive and PCIe binds, and the fetch-or-recompute
 * choice flips at the NVMe latency computed by hand from the cost model.
 * Over a whole run with every tier on, each tier conserves its blocks
 * (offloaded = evicted + resident) and /transfers holds exactly the blocks
 * and bytes the summary counts per tier; with both tiers off, their keys
 * change nothing (tests/system/test_golden.c pins the results themselves). Places
 * (sim/run/sim_place.h) say what they were made as, and the one code they
 * still give the network's flow tags is the int32 encoding they replaced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "models/mdl.h"
#include "sim/run/recorder.h"
#include "sim/run/sim_params.h"
#include "sim/run/sim_place.h"
#include "sim/run/sim_tiers.h"
#include "tests/fixtures/sim_fixture.h"
#include "tests/fixtures/test_main.h"

#define S_NS 1000000000LL
#define TP 4
#define BT 16 /* tokens per block */

/* ---- the hand scenario -----------------------------------------------------
 * One instance of 4 GPUs with 9 blocks. Prefixes A, B, C (4 blocks each)
 * arrive a second apart: C's admission evicts A (least recent) to NVMe
 * (host_offload with no host tier). A arrives again at 3 s and misses in
 * HBM: its 4 blocks are on the drive. */
typedef struct hand {
	int n;
	uint64_t ids[4];
} hand_t;

static int hand_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	(void)e;
	hand_t *h = ctx;
	static const uint64_t base[] = {100, 200, 300, 100};
	if (h->n == 4)
		return 0;
	for (int i = 0; i < 4; i++)
		h->ids[i] = base[h->n] + (uint64_t)i;
	*a = (sim_arrival_t){.id = (uint64_t)h->n,
	                     .arrival_ns = h->n * S_NS,
	                     .in_len = 4 * BT,
	                     .out_len = 2,
	                     .n_blocks = 4,
	                     .blocks = h->ids};
	h->n++;
	return 1;
}

#define HAND_SETS                                                                                  \
	"cluster.nodes=1", "cluster.gpus_per_node=4", "cluster.tp=4", "cluster.kv_blocks=9",       \
	    "kvcache.block_tokens=16", "kvcache.host_offload=true", "kvcache.nvme_kv_gb=100",      \
	    "gpu.pcie_bw=64e9", "gpu.pcie_lat_ns=5000"

static sim_results_t hand_run(const char *const *extra, int n_extra)
{
	const char *sets[16] = {HAND_SETS};
	int n = 9;
	for (int i = 0; i < n_extra; i++)
		sets[n++] = extra[i];
	hand_t h = {0};
	sim_source_t src = {hand_next, &h, "hand"};
	return sf_run_source(NULL, sets, n, &src);
}

/* The net's time rule (sim/net/net.h) for r bytes at p bytes/s. */
static int64_t net_ns(uint64_t r, double p)
{
	double q = (double)r / (p / 1e9);
	return (int64_t)ceil(q - 1e-9 * q);
}

static void check_fetch_time(double read_bw, const char *read_set)
{
	const char *extra[] = {"kvcache.host_fetch=always", "kvcache.nvme_lat_us=80", read_set};
	sim_results_t r = hand_run(extra, 3);
	int64_t lat = 80000 + 5000; /* NVMe read + PCIe down */
	double rate = fmin(read_bw / TP, 64e9);
	size_t reads = 0;
	for (size_t i = 0; i < r.n_xfer; i++) {
		const res_transfer_t *x = &r.xfer[i];
		if (x->path_kind != PATH_NVME_READ)
			continue;
		reads++;
		assert_int_equal(x->blocks, 4);
		assert_false(x->cancelled);
		assert_int_equal(x->start_ns, 3 * S_NS);
		printf("NVMe read shard: %llu bytes in %lld ns (rate %.3g B/s)\n",
		       (unsigned long long)x->bytes, (long long)(x->end_ns - x->start_ns), rate);
		assert_int_equal(x->end_ns - x->start_ns, lat + net_ns(x->bytes, rate));
	}
	assert_int_equal(reads, TP);
	/* request 3 found its prefix through the fetch: 63 of 64 tokens (the
	 * last one is always computed) */
	const res_request_t *q = sf_request(r.req, r.n_req, 3);
	assert_int_equal(q->tok_host, 4 * BT - 1);
	assert_true(sim_results_get(&r, "tok_fetched_nvme") == 4 * BT - 1);
	assert_true(sim_results_get(&r, "nvme.blocks_fetched") == 4);
	sim_results_free(&r);
}

static void test_nvme_fetch_takes_latency_plus_bytes_over_drive_or_pcie(void **st)
{
	(void)st;
	check_fetch_time(13e9,
	                 "kvcache.nvme_read_bw=13e9"); /* the drive binds: 3.25 GB/s a shard */
	check_fetch_time(1e12, "kvcache.nvme_read_bw=1e12"); /* PCIe binds: 64 GB/s */
}

static void test_nvme_fetch_or_recompute_flips_at_hand_break_even(void **st)
{
	(void)st;
	/* by hand: recomputing A's 64 tokens takes R (the cost model's prefill
	 * of 64 new tokens); fetching them takes lat + 5 us PCIe + one shard's
	 * bytes at 13 GB/s / 4 (sim_copy_estimate of a drive shared by the
	 * copy's shards); the fetch wins while that is < R */
	const char *sets[] = {HAND_SETS};
	cfg_t *cfg = NULL;
	err_t e = {0};
	assert_int_equal(cli_load_config(NULL, sets, 9, &cfg, &e), 0);
	mdl_hw_t hw;
	mdl_llm_t llm;
	mdl_compute_params_t cp;
	mdl_compute_t c;
	assert_int_equal(mdl_load_cfg(cfg, &hw, &llm, &cp, &e), 0);
	static sim_params_t sp; /* large */
	assert_int_equal(sim_params_fill(cfg, &sp, &e), 0);
	sim_params_compute(&sp, &cp); /* the all-reduce the run's engine uses */
	assert_int_equal(mdl_compute_init(&c, &hw, &llm, TP, &cp, &e), 0);
	int64_t R = mdl_prefill_time_ns(&c, 4 * BT, 0);
	uint64_t bytes = mdl_kv_prefix_bytes_gpu(&llm, TP, 4 * BT, 1);
	int64_t xfer = (int64_t)ceil((double)bytes / (13e9 / TP) * 1e9);
	int64_t even = R - 5000 - xfer; /* NVMe latency where fetch == recompute */
	cli_config_free(cfg);
	printf("recompute %lld ns, transfer %lld ns: break-even NVMe latency %lld ns\n",
	       (long long)R, (long long)xfer, (long long)even);
	assert_true(even > 1000);
	for (int at = 0; at < 2; at++) {
		char lat[64];
		snprintf(lat, sizeof lat, "kvcache.nvme_lat_us=%.3f",
		         (double)(even - 1 + at) / 1e3);
		const char *extra[] = {"kvcache.host_fetch=cost", "kvcache.nvme_read_bw=13e9", lat};
		sim_results_t r = hand_run(extra, 3);
		double got = sim_results_get(&r, "tok_fetched_nvme");
		printf("%s: %.0f tokens fetched from NVMe\n", lat, got);
		assert_true(got == (at ? 0 : 4 * BT - 1));
		assert_int_equal(sf_request(r.req, r.n_req, 3)->tok_host, at ? 0 : 4 * BT - 1);
		sim_results_free(&r);
	}
}

/* ---- a whole run with every tier ------------------------------------------ */

/* Blocks and bytes of the uncancelled /transfers rows of a kind, per copy
 * (each copy is one row per shard). */
static void rows_of(const sim_results_t *r, int kind, double *blocks, double *bytes)
{
	*blocks = *bytes = 0;
	for (size_t i = 0; i < r->n_xfer; i++)
		if (r->xfer[i].path_kind == kind && !r->xfer[i].cancelled) {
			*blocks += (double)r->xfer[i].blocks / TP;
			*bytes += (double)r->xfer[i].bytes;
		}
}

static void test_every_tier_conserves_blocks_and_transfers_match_summary(void **st)
{
	(void)st;
	/* a small HBM pool and host tier push blocks down to NVMe, a small
	 * drive pushes them on to the pool, and a small pool evicts */
	const char *sets[] = {"cluster.kv_blocks=120",     "kvcache.host_kv_gb=10",
	                      "kvcache.host_offload=true", "kvcache.nvme_kv_gb=20",
	                      "kvcache.pool_kv_gb=60",     "kvcache.host_fetch=always"};
	sim_results_t r = sf_run(NULL, sets, 6);
	static const char *const tier[] = {"nvme", "pool"};
	static const int put[] = {PATH_NVME_WRITE, PATH_POOL_PUT},
			 get[] = {PATH_NVME_READ, PATH_POOL_GET};
	for (int t = 0; t < 2; t++) {
		char k[64];
#define M(what) (snprintf(k, sizeof k, "%s.blocks_" what, tier[t]), sim_results_get(&r, k))
		double off = M("offloaded"), ev = M("evicted"), res = M("resident"),
		       f = M("fetched");
#undef M
		double pb, pB, gb, gB;
		rows_of(&r, put[t], &pb, &pB);
		rows_of(&r, get[t], &gb, &gB);
		snprintf(k, sizeof k, "tok_fetched_%s", tier[t]);
		double tok = sim_results_get(&r, k);
		printf("%s: offloaded %.0f = evicted %.0f + resident %.0f; fetched %.0f blocks "
		       "(%.0f tokens); rows: %.0f put, %.0f got\n",
		       tier[t], off, ev, res, f, tok, pb, gb);
		assert_true(off > 0 && ev > 0 && f > 0 && tok > 0);
		assert_true(off == ev + res);
		assert_true(pb == off && gb == f); /* every copy landed: the run drained */
		/* fetches are foreground and are the only foreground bytes there */
		snprintf(k, sizeof k, "link_bytes_fg.%s", tier[t]);
		/* (the links count rates x time: within the 1e-9 of a flow that
		 * counts as delivered, sim/net/net.h) */
		assert_true(fabs(sim_results_get(&r, k) - gB) <= 1e-6 * gB);
	}
	/* NVMe and the pool are host-side tiers: their tokens are of tok_host */
	assert_true(sim_results_get(&r, "tok_fetched_host") >=
	            sim_results_get(&r, "tok_fetched_nvme") +
	                sim_results_get(&r, "tok_fetched_pool"));
	sim_results_free(&r);
}

static void test_tier_keys_change_nothing_while_both_are_off(void **st)
{
	(void)st;
	const char *base[] = {"cluster.kv_blocks=120", "kvcache.host_kv_gb=200",
	                      "kvcache.host_offload=true"};
	const char *keys[] = {"cluster.kv_blocks=120",     "kvcache.host_kv_gb=200",
	                      "kvcache.host_offload=true", "kvcache.nvme_read_bw=1e9",
	                      "kvcache.nvme_lat_us=1",     "kvcache.pool_bw=1e9"};
	sim_results_t a = sf_run(NULL, base, 3), b = sf_run(NULL, keys, 6);
	assert_int_equal(a.n_req, b.n_req);
	assert_int_equal(a.n_xfer, b.n_xfer);
	assert_int_equal(a.n_metric, b.n_metric);
	assert_true(a.n_xfer > 0);
	assert_memory_equal(a.req, b.req, a.n_req * sizeof *a.req);
	assert_memory_equal(a.xfer, b.xfer, a.n_xfer * sizeof *a.xfer);
	for (size_t i = 0; i < a.n_metric; i++) {
		assert_string_equal(a.metric[i].name, b.metric[i].name);
		if (strcmp(a.metric[i].name, "sim_events"))
			assert_true(a.metric[i].value == b.metric[i].value ||
			            (isnan(a.metric[i].value) && isnan(b.metric[i].value)));
		assert_null(strstr(a.metric[i].name, "nvme"));
	}
	sim_results_free(&a);
	sim_results_free(&b);
}

/* Each constructor's place reads back as its kind and index; places of
 * different kinds with one index differ; and place_code is the encoding
 * places replaced: an instance itself, the host tier of node n -1 - n, its
 * NVMe tier -1 - nodes - n, the pool -1 - 2 nodes, distinct for all. */
static void test_places_read_back_and_keep_their_old_codes(void **st)
{
	(void)st;
	const uint32_t nodes = 3, insts = 6;
	int32_t seen[6 + 2 * 3 + 1];
	int n = 0;
	for (uint32_t i = 0; i < insts; i++) {
		place_t p = place_inst(i);
		assert_true(place_is_inst(p));
		assert_int_equal(place_tier(p), SIM_TIER_HBM);
		assert_int_equal(p.index, i);
		assert_int_equal(place_code(p, nodes), (int32_t)i);
		seen[n++] = place_code(p, nodes);
	}
	for (uint32_t k = 0; k < nodes; k++) {
		place_t h = place_host(k), v = place_nvme(k);
		assert_false(place_is_inst(h) || place_is_inst(v));
		assert_int_equal(place_tier(h), SIM_TIER_HOST);
		assert_int_equal(place_tier(v), SIM_TIER_NVME);
		assert_int_equal(place_node(h), k);
		assert_int_equal(place_node(v), k);
		assert_false(place_eq(h, v) || place_eq(h, place_inst(k)) || place_eq(v, place_inst(k)));
		assert_true(place_eq(h, place_host(k)));
		assert_int_equal(place_code(h, nodes), -1 - (int32_t)k);
		assert_int_equal(place_code(v, nodes), -1 - (int32_t)(nodes + k));
		seen[n++] = place_code(h, nodes);
		seen[n++] = place_code(v, nodes);
	}
	place_t pool = place_pool();
	assert_int_equal(place_tier(pool), SIM_TIER_POOL);
	assert_int_equal(place_node(pool), 0);
	assert_int_equal(place_code(pool, nodes), -1 - 2 * (int32_t)nodes);
	seen[n++] = place_code(pool, nodes);
	for (int a = 0; a < n; a++)
		for (int b = 0; b < a; b++)
			assert_int_not_equal(seen[a], seen[b]);
}

/* SIM_TIER_LIST is the one list of tiers: each line gives its SIM_TIER_*
 * constant (in hierarchy order), its name and its table; every table has a
 * store and a path, and takes evicted blocks unless it is the top one; the
 * places of a tier are per node or one (the pool). */
static void test_tier_list_drives_enum_names_and_tables(void **st)
{
	(void)st;
	int seen = 0;
#define CHECK_LINE(N, nm, ops)                                                                     \
	assert_int_equal(SIM_TIER_##N, seen);                                                      \
	assert_ptr_equal(sim_tier_ops(SIM_TIER_##N), &ops);                                        \
	assert_string_equal(ops.name, nm);                                                         \
	assert_non_null(ops.store);                                                                \
	assert_non_null(ops.path);                                                                 \
	assert_true(seen == 0 ? ops.takes == NULL : ops.takes != NULL);                            \
	seen++;
	SIM_TIER_LIST(CHECK_LINE)
#undef CHECK_LINE
	assert_int_equal(seen, SIM_TIER_N);
	assert_int_equal(sim_tier_host.per_node, 1);
	assert_int_equal(sim_tier_nvme.per_node, 1);
	assert_int_equal(sim_tier_pool.per_node, 0);
}

TEST_MAIN(cmocka_unit_test(test_places_read_back_and_keep_their_old_codes),
          cmocka_unit_test(test_tier_list_drives_enum_names_and_tables),
          cmocka_unit_test(test_nvme_fetch_takes_latency_plus_bytes_over_drive_or_pcie),
          cmocka_unit_test(test_nvme_fetch_or_recompute_flips_at_hand_break_even),
          cmocka_unit_test(test_every_tier_conserves_blocks_and_transfers_match_summary),
          cmocka_unit_test(test_tier_keys_change_nothing_while_both_are_off))
