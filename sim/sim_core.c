/* sim_core — builds a cluster from a config and streams requests through it
 * (sim_run_source). Random streams derive from the master seed by component
 * so adding one never perturbs another. */
#include <gsl/gsl_rng.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models/mdl.h"
#include "sim/cluster.h"
#include "sim/metrics.h"
#include "sim/sim.h"

enum { EV_ARRIVAL = 2 };
enum { ROUTE_RR = 0, ROUTE_RANDOM = 1, ROUTE_LEAST = 2 };
/* Random-stream ids: one per component (see sim_seed_for). */
enum { STREAM_ROUTING = 1 };

typedef struct sim_ctx {
	cluster_t cl;
	ev_engine_t *eng;
	mdl_compute_t comp;
	sim_source_t *src;
	sim_arrival_t next;
	int have_next;
	int64_t last_arrival;
	int route_kind;
	uint32_t rr;
	gsl_rng *route_rng;
	err_t *err;
} sim_ctx_t;

/* splitmix64 (Steele, Lea, Flood 2014): independent seeds per component. */
uint64_t sim_seed_for(uint64_t master, uint64_t stream)
{
	uint64_t x = master + 0x9e3779b97f4a7c15ULL * (stream + 1);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint32_t route(sim_ctx_t *s)
{
	uint32_t n = s->cl.p.n_instances;
	switch (s->route_kind) {
	case ROUTE_RANDOM:
		return (uint32_t)gsl_rng_uniform_int(s->route_rng, n);
	case ROUTE_LEAST: {
		uint32_t best = 0;
		for (uint32_t i = 1; i < n; i++)
			if (cluster_load(&s->cl, i) < cluster_load(&s->cl, best))
				best = i;
		return best;
	}
	default:
		return s->rr++ % n;
	}
}

/* Reads the next request and schedules its arrival. */
static int pull_next(sim_ctx_t *s)
{
	int rc = s->src->next(s->src->ctx, &s->next, s->err);
	if (rc < 0)
		return rc;
	s->have_next = rc == 1;
	if (!s->have_next)
		return 0;
	if (s->next.arrival_ns < s->last_arrival)
		return err_set(s->err, KS_EINPUT, "%s: request %" PRIu64 ": arrival goes back in time",
			       s->src->name, s->next.id);
	s->last_arrival = s->next.arrival_ns;
	if (ev_engine_at(s->eng, s->next.arrival_ns, EV_ARRIVAL, 0, 0) == EV_NONE)
		return KS_ENOMEM;
	return 0;
}

static int on_arrival(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)ev;
	sim_ctx_t *s = ctx;
	const sim_arrival_t *a = &s->next;
	int rc;
	if (a->status != 0)
		rc = cluster_record_unrouted(&s->cl, a->id, ev_engine_now(eng), a->in_len,
					     a->out_len, REQ_FAILED_IN_TRACE);
	else if (!cluster_fits(&s->cl, a->in_len, a->out_len))
		rc = cluster_record_unrouted(&s->cl, a->id, ev_engine_now(eng), a->in_len,
					     a->out_len, REQ_REJECTED_TOO_LONG);
	else
		rc = cluster_submit(&s->cl, route(s), a->id, a->in_len, a->out_len, a->blocks,
				    a->n_blocks);
	if (rc)
		return rc;
	return pull_next(s);
}

#ifdef KVSIM_CHECK
static int check_hook(void *ctx, ev_engine_t *eng)
{
	(void)eng;
	sim_ctx_t *s = ctx;
	if (cluster_check(&s->cl))
		return err_set(s->err, KS_ERUNTIME, "invariant violated at t=%" PRId64 " ns",
			       ev_engine_now(eng));
	return 0;
}
#endif

/* Splits VRAM into weights, reserve and KV pool; returns blocks per instance. */
static int kv_pool_blocks(const cfg_t *cfg, const mdl_hw_t *hw, const mdl_llm_t *llm,
			  uint32_t tp, uint32_t B, uint32_t *out, err_t *e)
{
	int64_t fixed = cfg_int(cfg, "cluster", "kv_blocks");
	if (fixed > 0) {
		*out = (uint32_t)fixed;
		return 0;
	}
	double reserve = cfg_float(cfg, "cluster", "reserve_fraction") * (double)hw->hbm_bytes;
	double weights = (double)mdl_weights_bytes_per_gpu(llm, tp);
	double kv = (double)hw->hbm_bytes - reserve - weights;
	double per_block = (double)mdl_kv_bytes_per_token_gpu(llm, tp) * B;
	if (kv < per_block)
		return err_set(e, KS_EINPUT,
			       "[cluster] tp: %s weights (%.1f GB per GPU at tp=%u) leave no room "
			       "for KV in %.1f GB of HBM (%s)",
			       llm->name, weights / 1e9, tp, (double)hw->hbm_bytes / 1e9, hw->name);
	*out = (uint32_t)(kv / per_block);
	return 0;
}

int sim_run_source(const cfg_t *cfg, sim_source_t *src, sim_results_t *res, err_t *e)
{
	struct timespec w0, w1;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	memset(res, 0, sizeof *res);
	res->start_unix = (int64_t)time(NULL);
	sim_ctx_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->src = src;
	s->err = e;
	s->last_arrival = 0;
	int rc;
	mdl_hw_t hw;
	mdl_llm_t llm;
	mdl_compute_params_t cp;
	if ((rc = mdl_load_cfg(cfg, &hw, &llm, &cp, e)))
		goto out;
	uint32_t tp = (uint32_t)cfg_int(cfg, "cluster", "tp");
	uint32_t gpn = (uint32_t)cfg_int(cfg, "cluster", "gpus_per_node");
	uint32_t nodes = (uint32_t)cfg_int(cfg, "cluster", "nodes");
	if (gpn % tp) {
		rc = err_set(e, KS_EINPUT, "[cluster] tp: %u does not divide gpus_per_node %u", tp, gpn);
		goto out;
	}
	if ((rc = mdl_compute_init(&s->comp, &hw, &llm, tp, &cp, e)))
		goto out;
	cluster_params_t p = {0};
	p.n_instances = nodes * (gpn / tp);
	p.block_tokens = (uint32_t)cfg_int(cfg, "kvcache", "block_tokens");
	if ((rc = kv_pool_blocks(cfg, &hw, &llm, tp, p.block_tokens, &p.kv_blocks, e)))
		goto out;
	p.block_bytes = mdl_kv_bytes_per_token(&llm) * p.block_tokens;
	p.max_num_seqs = (uint32_t)cfg_int(cfg, "scheduler", "max_num_seqs");
	p.max_batched_tokens = (uint32_t)cfg_int(cfg, "scheduler", "max_batched_tokens");
	p.chunked_prefill = cfg_bool(cfg, "scheduler", "chunked_prefill");
	p.busy_rule = strcmp(cfg_str(cfg, "kvcache", "busy_rule"), "recompute") ? BUSY_WAIT
										 : BUSY_RECOMPUTE;
	p.cost = mdl_sim_cost;
	p.cost_ctx = &s->comp;
	p.ttft_slo_ns = (int64_t)(cfg_float(cfg, "slo", "ttft_ms") * 1e6);
	p.tpot_slo_ns = (int64_t)(cfg_float(cfg, "slo", "tpot_ms") * 1e6);
	const char *rk = cfg_str(cfg, "cluster", "router");
	s->route_kind = !strcmp(rk, "random") ? ROUTE_RANDOM
			: !strcmp(rk, "least_load") ? ROUTE_LEAST : ROUTE_RR;
	uint64_t seed = (uint64_t)cfg_int(cfg, "experiment", "seed");
	s->route_rng = gsl_rng_alloc(gsl_rng_mt19937);
	s->eng = ev_engine_new(1024);
	if (!s->route_rng || !s->eng) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto out;
	}
	gsl_rng_set(s->route_rng, (unsigned long)sim_seed_for(seed, STREAM_ROUTING));
	if ((rc = cluster_init(&s->cl, &p, s->eng))) {
		err_set(e, rc, "out of memory building the cluster");
		goto out;
	}
	ev_engine_register(s->eng, EV_ARRIVAL, on_arrival, s);
#ifdef KVSIM_CHECK
	ev_engine_set_check(s->eng, check_hook, s);
#endif
	if ((rc = pull_next(s)))
		goto out;
	double until_s = cfg_float(cfg, "experiment", "until_s");
	int64_t until = until_s > 0 ? (int64_t)(until_s * 1e9) : INT64_MAX;
	rc = ev_engine_run(s->eng, until);
	if (rc) {
		if (!e || !e->msg[0] || e->code != rc)
			err_set(e, rc, "simulation failed at t=%" PRId64 " ns", ev_engine_now(s->eng));
		goto out;
	}
	if ((rc = cluster_finish(&s->cl)))
		goto out;
	/* hand over the request table */
	res->req = s->cl.res;
	res->n_req = s->cl.n_res;
	s->cl.res = NULL;
	res->seed = seed;
	snprintf(res->trace_path, sizeof res->trace_path, "%s", src->name ? src->name : "");
	res->events = ev_engine_events(s->eng);
	res->config_text = cfg_text(cfg);
	metrics_opts_t mo = {p.ttft_slo_ns, p.tpot_slo_ns, s->cl.blocks_total, s->cl.blocks_hit};
	if ((rc = metrics_summarize(res, &mo)))
		goto out;
	sim_results_metric(res, "instances", "", p.n_instances);
	sim_results_metric(res, "kv_blocks_per_instance", "blocks", p.kv_blocks);
	sim_results_metric(res, "kv_block_allocs", "blocks", (double)s->cl.kv_block_allocs);
	sim_results_metric(res, "kv_block_frees", "blocks", (double)s->cl.kv_block_frees);
	sim_results_metric(res, "sim_events", "", (double)res->events);
	double area = 0, end_s = (double)ev_engine_now(s->eng) / 1e9;
	for (uint32_t i = 0; i < p.n_instances; i++)
		area += s->cl.inst[i].wait_area / 1e9;
	sim_results_metric(res, "sim_time_s", "s", end_s);
	sim_results_metric(res, "queue_len_mean", "", end_s > 0 ? area / end_s : 0);
out:
	clock_gettime(CLOCK_MONOTONIC, &w1);
	res->wall_s = (double)(w1.tv_sec - w0.tv_sec) + (w1.tv_nsec - w0.tv_nsec) / 1e9;
	if (rc)
		sim_results_free(res);
	cluster_free(&s->cl);
	ev_engine_free(s->eng);
	gsl_rng_free(s->route_rng);
	free(s);
	return rc;
}
