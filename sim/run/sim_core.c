/* sim_core — builds a run from a config (cluster, network, policies) and
 * streams requests through it (sim_core_run, under sim_run). Random streams derive from
 * the master seed by component so adding one never perturbs another. The
 * order in which the policy families are consulted is the one policies/pol.h
 * documents. This file: setup (its steps in order), the cluster's and the
 * engine's hooks, and the run's end; the run's other pieces share
 * sim_int.h: the policies' view (sim_view.c), arrivals (sim_arrival.c), the
 * periodic events (sim_sample.c), the trace observer (sim_observer.c), the
 * memory limit (sim_rss.c) and the copies (sim_copy.c and beside it). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/base/cli_voice.h"
#include "sim/base/mem.h"
#include "sim/run/bound.h"
#include "sim/run/metrics.h"
#include "sim/run/recorder.h"
#include "sim/run/sim_decisions.h"
#include "sim/run/sim_disagg.h"
#include "sim/run/sim_int.h"
#include "sim/run/sim_join.h"
#include "sim/run/sim_rview.h"
#include "sim/cluster/mdl_sim.h"

/* ---- the cluster's and the engine's hooks ------------------------------------ */

/* An iteration asked for at an instance by code that could not start it in
 * place (sim_copy_cancel.c kick_later). */
static int on_kick(void *ctx, ev_engine_t *eng, const ev_event_t *ev)
{
	(void)eng;
	sim_ctx_t *s = ctx;
	return cluster_kick(&s->cl, ev->target);
}

/* cluster_params_t.on_touch */
static void on_touch(void *ctx, uint32_t inst)
{
	sim_touch(ctx, (int32_t)inst);
}

/* cluster_params_t.on_too_long: the figure that made the iteration's cost
 * unrepresentable, named (mdl_cost_blame), stops the run as bad input. */
static int on_too_long(void *ctx, void *cost_ctx, uint32_t inst, const sim_batch_t *b,
		       int64_t now)
{
	sim_ctx_t *s = ctx;
	char why[160];
	double sec = mdl_sim_cost_blame(cost_ctx, b, (double)(INT64_MAX - now), why, sizeof why);
	return err_set(s->err, KS_EINPUT,
		       "%s makes an iteration of instance %u (%u prefill and %u decode sequences) "
		       "take %.3g s from t=%.3f s, past the largest simulated time (%.3g s): the "
		       "run cannot finish",
		       why, inst, b->n_pre, b->n_dec, sec, (double)now / 1e9,
		       (double)INT64_MAX / 1e9);
}

/* One read of status and statm costs ~20 microseconds; every 65,536 events
 * that is ~1e-4 of a run at ~200 K events/s. Each read is of the peak, so
 * what 65,536 events allocate and free between two reads still counts; a
 * run may pass the limit by what they allocate (a few MB) before it stops. */
#define RSS_EVERY 65536

/* After every event: the memory limit (from the first event on, then every
 * RSS_EVERY), and the invariant checker in KVSIM_CHECK builds. */
static int after_event(void *ctx, ev_engine_t *eng)
{
	sim_ctx_t *s = ctx;
	if (s->trace && sim_observer_flush(s))
		return s->trace_rc;
	if (s->events_seen++ % RSS_EVERY == 0 && s->rss_limit) {
		uint64_t rss = sim_rss_peak_bytes();
		if (rss > s->rss_limit) {
			uint64_t waiting = 0;
			for (uint32_t i = 0; i < s->cl.p.n_instances; i++)
				waiting += s->cl.inst[i].n_wait;
			return err_set(s->err, KS_ERUNTIME,
				       "[experiment] max_rss_gb: resident memory %.3g GB passed the "
				       "limit of %.3g GB%s at t=%.3f s simulated (%" PRIu64
				       " requests so far, %" PRIu64 " waiting); nothing was written. "
				       "Raise max_rss_gb, lower max_pending, or shorten the trace",
				       (double)rss / 1e9, (double)s->rss_limit / 1e9,
				       s->rss_auto ? " (half of the memory available)" : "",
				       (double)ev_engine_now(eng) / 1e9, (uint64_t)s->cl.n_done + s->cl.n_live,
				       waiting);
		}
	}
#ifdef KVSIM_CHECK
	int bad = cluster_check(&s->cl);
	if (bad)
		return err_set(s->err, KS_ERUNTIME, "invariant %d violated at t=%" PRId64 " ns", bad,
			       ev_engine_now(eng));
#endif
	return 0;
}

/* ---- building the run ------------------------------------------------------ */

/* Bytes of the stores of gb GB each that sim_net_init and sim_tiers_init
 * make (the same block count as theirs). */
static uint64_t tier_bytes(double gb, uint64_t block_bytes, uint64_t stores)
{
	return gb > 0 ? stores * kv_store_bytes((uint32_t)(gb * 1e9 / (double)block_bytes)) : 0;
}

#define RSS_FIX_CLUSTER                                                                      \
	"lower cluster.nodes, cluster.gpus_per_node (more cluster.tp), cluster.kv_blocks or "  \
	"the host, NVMe and pool tiers (kvcache.host_kv_gb, nvme_kv_gb, pool_kv_gb)"

/* Splits VRAM into weights, reserve and KV pool; returns blocks per instance. */
static int kv_pool_blocks(const cfg_t *cfg, const sim_params_t *sp, const mdl_hw_t *hw,
			  const mdl_llm_t *llm, uint32_t tp, uint32_t B, uint32_t *out, err_t *e)
{
	if (!mdl_kv_paged_bytes_per_token_gpu(llm, tp))
		return cfg_err_keys(cfg, e, "model.name,model.file",
				    "%s has no attention layer whose KV is paged in blocks "
				    "(every layer a state layer): the cluster has nothing to cache",
				    llm->name);
	if (sp->kv_blocks > 0) {
		*out = sp->kv_blocks;
		return 0;
	}
	uint64_t tokens = mdl_kv_tokens_per_instance(hw, llm, tp, sp->reserve_fraction);
	if (tokens / B == 0)
		return cfg_err_keys(cfg, e,
				    "cluster.tp,model.name,model.file,gpu.name,gpu.file,"
				    "cluster.reserve_fraction",
				    "%s weights (%.1f GB per GPU at tp=%u) leave no room for KV "
				    "in %.1f GB of HBM (%s)",
				    llm->name, (double)mdl_weights_bytes_per_gpu(llm, tp) / 1e9, tp,
				    (double)hw->hbm_bytes / 1e9, hw->name);
	*out = (uint32_t)(tokens / B);
	return 0;
}

/* p->fixed_blocks_per_seq: the per-sequence KV (sliding windows, states)
 * in blocks of the paged size, ceil(fixed / block) per GPU. The whole window
 * is reserved from admission on, though a sequence shorter than the window
 * holds less: an upper bound of what vLLM's hybrid KV cache manager holds
 * ("sliding window layers: reserve slots only for the most recent
 * sliding_window_size tokens", docs.vllm.ai design/hybrid_kv_cache_manager),
 * own choice so that a running request's blocks grow only with its paged
 * context. A state is held whole from the first token (vLLM, SGLang). */
static int kv_fixed_blocks(const cfg_t *cfg, const mdl_llm_t *llm, uint32_t tp,
			   cluster_params_t *p, err_t *e)
{
	uint64_t fixed = mdl_kv_fixed_bytes_per_seq_gpu(llm, tp);
	uint64_t block = mdl_kv_paged_bytes_per_token_gpu(llm, tp) * p->block_tokens;
	uint64_t n = fixed ? (fixed + block - 1) / block : 0;
	char modes[128];
	if (n && !(cluster_sched_flags(p->sched_mode) & CL_SCHED_F_FIXED_KV))
		return cfg_err_keys(cfg, e, "scheduler.mode,model.name,model.file",
				    "mode = %s knows no per-sequence KV; %s holds %.3g MB per GPU "
				    "per sequence in sliding windows or states: use mode = %s",
				    cluster_sched_name(p->sched_mode), llm->name, (double)fixed / 1e6,
				    cluster_sched_names(CL_SCHED_F_FIXED_KV, modes, sizeof modes));
	if (n + 1 > p->kv_blocks)
		return cfg_err_keys(cfg, e,
				    "cluster.kv_blocks,kvcache.block_tokens,model.name,model.file,"
				    "cluster.tp,gpu.name,gpu.file,cluster.reserve_fraction",
				    "%s's per-sequence KV (sliding windows, states: %.3g MB per "
				    "GPU) takes %llu blocks of the %u-block pool, which then holds "
				    "no sequence",
				    llm->name, (double)fixed / 1e6, (unsigned long long)n,
				    p->kv_blocks);
	p->fixed_blocks_per_seq = (uint32_t)n;
	return 0;
}

/* The predictor's shortest reported prefix, by its min_blocks hook (every
 * built-in predictor has one), else 1. */
static uint32_t pred_min_blocks(const struct pol_predictor_ops *po, const void *st)
{
	uint32_t m = po->base.version >= 5 && po->min_blocks ? po->min_blocks(st) : 1;
	return m ? m : 1;
}

/* The run's parameters (sim_params_fill), the memory limit, the GPU and the
 * model. */
static int setup_params(sim_ctx_t *s, const cfg_t *cfg, mdl_llm_t *llm, mdl_compute_params_t *cp,
			err_t *e)
{
	int rc;
	const sim_params_t *sp = &s->prm;
	if ((rc = sim_params_fill(cfg, &s->prm, e)))
		return rc;
	sim_rss_limit_set(s, sp->max_rss_gb);
	if ((rc = mdl_load_cfg(cfg, &s->hw, llm, cp, e)))
		return rc;
	sim_params_compute(sp, cp);
	s->frontend_ns = sim_params_frontend_ns(sp);
	s->tp = sp->tp;
	s->gpus_per_node = sp->gpus_per_node;
	s->nodes = sp->nodes;
	return sim_disagg_check(s, cfg, llm, e);
}

/* One instance's compute model, after the rules between tp and the model. */
static int setup_compute(sim_ctx_t *s, const cfg_t *cfg, const mdl_llm_t *llm,
			 const mdl_compute_params_t *cp, err_t *e)
{
	int rc;
	/* Rules between keys name the one set last (cfg_err_keys), so the
	 * message points at the line to change; mdl_compute_init checks the
	 * same head rules, without the config's places. */
	if (s->gpus_per_node % s->tp)
		return cfg_err_keys(cfg, e, "cluster.tp,cluster.gpus_per_node",
				    "tp = %u does not divide gpus_per_node = %u", s->tp,
				    s->gpus_per_node);
	if (llm->heads % s->tp)
		return cfg_err_keys(cfg, e, "cluster.tp,model.name,model.file,model.heads",
				    "tp = %u does not divide %s's %u attention heads", s->tp,
				    llm->name, llm->heads);
	if (llm->attention == MDL_ATTN_GQA && llm->kv_heads % s->tp && s->tp % llm->kv_heads)
		return cfg_err_keys(cfg, e, "cluster.tp,model.name,model.file,model.kv_heads",
				    "tp = %u and %s's %u KV heads: one must divide the other",
				    s->tp, llm->name, llm->kv_heads);
	if ((rc = mdl_compute_init(&s->comp, &s->hw, llm, s->tp, cp, e)) ||
	    (rc = mdl_compute_check_finite(&s->comp, e)))
		return rc;
	return 0;
}

/* The cluster's size, KV pool and scheduler. */
static int setup_cluster_params(sim_ctx_t *s, const cfg_t *cfg, const mdl_llm_t *llm,
				cluster_params_t *p, err_t *e)
{
	int rc;
	const sim_params_t *sp = &s->prm;
	p->n_instances = s->nodes * (s->gpus_per_node / s->tp);
	p->block_tokens = sp->block_tokens;
	if ((rc = kv_pool_blocks(cfg, sp, &s->hw, llm, s->tp, p->block_tokens, &p->kv_blocks, e)))
		return rc;
	/* bytes of one block over the whole group (MLA latents sit on every GPU):
	 * the paged layers only; a sliding window and a state are per sequence */
	p->block_bytes = mdl_kv_paged_bytes_per_token_gpu(llm, s->tp) * s->tp * p->block_tokens;
	p->sched_mode = sp->sched_mode;
	if ((rc = kv_fixed_blocks(cfg, llm, s->tp, p, e)))
		return rc;
	cluster_engine_defaults(p->sched_mode, s->hw.name, s->hw.hbm_bytes, &p->max_num_seqs,
				&p->max_batched_tokens);
	if (sp->max_num_seqs) /* 0: the engine's default */
		p->max_num_seqs = sp->max_num_seqs;
	if (sp->max_batched_tokens)
		p->max_batched_tokens = sp->max_batched_tokens;
	p->chunked_prefill = sp->chunked_prefill;
	p->conservativeness = sp->conservativeness;
	unsigned flags = cluster_sched_flags(p->sched_mode);
	const char *mode = cluster_sched_name(p->sched_mode);
	if ((flags & CL_SCHED_F_ALWAYS_CHUNKS) && !p->chunked_prefill)
		cfg_warn_once(cfg, "scheduler", "chunked_prefill",
			      "false under mode = %s matches no real engine: that engine always "
			      "chunks prefills; here a prompt longer than max_batched_tokens waits "
			      "for an iteration of its own",
			      mode);
	p->resident_at_admission = sp->resident_at_admission;
	char modes[128];
	if (p->resident_at_admission && !(flags & CL_SCHED_F_RESIDENT_AT_ADMIT))
		cfg_warn_once(cfg, "kvcache", "resident_at",
			      "admission under mode = %s matches no real engine: KV is matchable "
			      "once computed (the original study's assumption, for mode = %s)",
			      mode, cluster_sched_names(CL_SCHED_F_RESIDENT_AT_ADMIT, modes,
							sizeof modes));
	p->ttft_prefill_end = sp->ttft_prefill_end;
	p->decode_mode = sp->decode_mode;
	/* the study reserves tokens, not blocks, against the same pool */
	p->resv_tokens_cap = sp->kv_blocks > 0 ? (uint64_t)p->kv_blocks * p->block_tokens
					       : mdl_kv_tokens_per_instance(&s->hw, llm, s->tp,
									    sp->reserve_fraction);
	p->busy_rule = sp->busy_rule;
	return 0;
}

/* The cluster's costs, SLOs and client timeout, and the run's hooks into it. */
static void setup_cluster_hooks(sim_ctx_t *s, cluster_params_t *p)
{
	const sim_params_t *sp = &s->prm;
	p->cost = mdl_sim_cost;
	p->cost_run = mdl_sim_cost_run;
	p->cost_ctx = &s->comp;
	p->ttft_slo_ns = (int64_t)(sp->ttft_ms * 1e6);
	p->tpot_slo_ns = (int64_t)(sp->tpot_ms * 1e6);
	p->client_timeout_ns = (int64_t)llround(sp->client_timeout_s * 1e9);
	p->on_spec_hit = sim_on_spec_hit;
	p->on_job_done = sim_on_job_done;
	p->wait_inflight = sim_wait_inflight;
	p->hook_ctx = s;
	p->on_touch = on_touch;
	p->on_admit = sim_on_admit;
	p->on_too_long = on_too_long;
	p->on_busy = s->trace ? sim_observer_busy : NULL;
	p->on_result = sim_on_result;
	p->result_ctx = s;
}

/* The policies, and the engine the run's events go on. */
static int setup_policies(sim_ctx_t *s, const cfg_t *cfg, const pol_registry_t *reg, err_t *e)
{
	int rc;
	const sim_params_t *sp = &s->prm;
	if ((rc = pol_set_open_cfg(reg, cfg, sp->seed, &s->pol, e)))
		return rc;
	s->pol_open = 1;
	if (!(s->eng = ev_engine_new(1024)))
		return err_set(e, KS_ENOMEM, "out of memory");
	return 0;
}

/* The cluster within [experiment] max_rss_gb, and its stores' hooks. */
static int setup_cluster(sim_ctx_t *s, const cluster_params_t *p, err_t *e)
{
	int rc;
	const sim_params_t *sp = &s->prm;
	/* the KV stores dominate setup: instances x blocks, and the tiers' */
	uint64_t kv_need = cluster_bytes(p) + tier_bytes(sp->host_kv_gb, p->block_bytes, s->nodes) +
			   tier_bytes(sp->nvme_kv_gb, p->block_bytes, s->nodes) +
			   tier_bytes(sp->pool_kv_gb, p->block_bytes, 1);
	char what[160];
	snprintf(what, sizeof what, "building the cluster (%u instances of %u KV blocks, and its tiers)",
		 p->n_instances, p->kv_blocks);
	if ((rc = sim_rss_room(s, what, kv_need, RSS_FIX_CLUSTER)))
		return rc;
	if ((rc = cluster_init(&s->cl, p, s->eng)))
		return err_set(e, rc, "out of memory building the cluster");
	if ((rc = sim_rss_room(s, "building the cluster", 0, RSS_FIX_CLUSTER)))
		return rc;
	if (!(s->hooks = calloc(p->n_instances, sizeof *s->hooks)))
		return err_set(e, KS_ENOMEM, "out of memory");
	/* LRU eviction needs no priority call: the store keeps its order */
	kv_prio_fn prio = pol_eviction_is_lru(POL_SET_OPS(&s->pol, POL_EVICTION, pol_eviction_ops))
	                      ? NULL : sim_evict_prio;
	for (uint32_t i = 0; i < p->n_instances; i++) {
		s->hooks[i] = (hook_t){s, i};
		kv_store_set_policy(s->cl.inst[i].kv, prio, sim_on_evict, &s->hooks[i]);
		kv_store_set_watch(s->cl.inst[i].kv, sim_on_kv_watch, &s->hooks[i]);
	}
	return 0;
}

/* The network, the copy rules and the KV tiers, and the indexes the views
 * read (holders, load). */
static int setup_network(sim_ctx_t *s, const cluster_params_t *p, err_t *e)
{
	int rc;
	if ((rc = sim_net_init(s, &s->prm, e)) ||
	    (rc = sim_rss_room(s, "building the network and the KV tiers", 0, RSS_FIX_CLUSTER)))
		return rc;
	if (!(s->holders = sim_holders_new()) || !(s->load = sim_load_new(p->n_instances)))
		return err_set(e, KS_ENOMEM, "out of memory");
	return 0;
}

/* The policies' view and the routers' (sim_view.c; their replicas'
 * indexes, sim_rview.h), within max_rss_gb. */
static int setup_views(sim_ctx_t *s, const cfg_t *cfg, const cluster_params_t *p, err_t *e)
{
	int rc;
	if (!(s->vw = sim_views_new(s, p)))
		return err_set(e, KS_ENOMEM, "out of memory");
	if ((rc = sim_rss_room(s, "building the routing view's indexes",
				 sim_rv_index_bytes(s, cfg, sim_views_route(s->vw)),
				 "lower policy.routing.replicas or index_capacity, or pick another "
				 "policy.routing.index")) ||
	    (rc = sim_rv_setup(s, cfg, sim_views_route(s->vw), e)))
		return rc;
	if ((rc = sim_views_routed(s, cfg, p, e)))
		return rc;
	return sim_rss_room(s, "building the routing view", 0,
			    "lower policy.routing.replicas, index_capacity or view_blocks");
}

/* The policies' actions, the replication policy's timing, the predictor's
 * read-ahead and the forecasts' scoring. */
static int setup_replication(sim_ctx_t *s, const cfg_t *cfg, err_t *e)
{
	sim_view_actions(s);
	const struct pol_replication_ops *ro =
		POL_SET_OPS(&s->pol, POL_REPLICATION, pol_replication_ops);
	pol_repl_timing_t tm = ro->timing(s->pol.h[POL_REPLICATION].state);
	s->tick_ns = tm.tick_ns;
	s->horizon_ns = tm.horizon_ns;
	const struct pol_predictor_ops *po = POL_SET_OPS(&s->pol, POL_PREDICTOR, pol_predictor_ops);
	/* the predictor reads ahead only if a replication policy asks it */
	int rc;
	if (s->horizon_ns > 0 && po->peek_ahead_ns && po->peek &&
	    (rc = sim_arrivals_peek_ahead(s->arr, po->peek_ahead_ns(s->pol.h[POL_PREDICTOR].state),
					  po->base.name, cfg, e)))
		return rc;
	if (s->horizon_ns > 0 && !(s->fc = fcast_new(s->horizon_ns,
						     pred_min_blocks(po, s->pol.h[POL_PREDICTOR].state))))
		return err_set(e, KS_ENOMEM, "out of memory");
	return 0;
}

/* What [output] asks beyond the rows: the oracle bound's streams, the
 * decision trace, the timeline's state. */
static int setup_outputs(sim_ctx_t *s, err_t *e)
{
	const sim_params_t *sp = &s->prm;
	if (sp->out.oracle_bound && !(s->bound = bound_new(s->cl.p.n_instances)))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (sp->out.decisions && !(s->dec = sim_dec_new(s->res)))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (!(s->tl = sim_timeline_new((int64_t)(sp->out.timeline_interval_ms * 1e6),
				       sp->out.timeline == SIM_TL_EVERY, s->cl.p.n_instances,
				       net_link_count(s->net))))
		return err_set(e, KS_ENOMEM, "out of memory");
	return 0;
}

/* The run's event types (in this order), the after-event check and the
 * trace observer's start. */
static int setup_events(sim_ctx_t *s, err_t *e)
{
	int rc;
	const sim_params_t *sp = &s->prm;
	sim_ev_types_t *t = &s->ev;
	if (ev_engine_type_new(s->eng, sim_on_arrival, s, &t->arrival) ||
	    ev_engine_type_new(s->eng, sim_on_peek, s, &t->peek) ||
	    ev_engine_type_new(s->eng, sim_on_src_retry, s, &t->src_retry) ||
	    ev_engine_type_new(s->eng, sim_on_tick, s, &t->tick) ||
	    ev_engine_type_new(s->eng, sim_on_sample, s, &t->sample) ||
	    ev_engine_type_new(s->eng, on_kick, s, &t->kick) ||
	    ev_engine_type_new(s->eng, sim_copy_deferred_start, s, &t->defer))
		return err_set(e, KS_ERUNTIME, "no event type left (EV_MAX_TYPES)");
	s->max_pending = sp->max_pending;
	ev_engine_set_check(s->eng, after_event, s);
	if (s->trace && (rc = sim_observer_begin(s)))
		return err_set(e, rc, "trace events: %s",
			       rc == KS_ENOMEM ? "out of memory" : "could not start");
	return 0;
}

/* Builds the run from cfg, step by step in this order. */
static int setup(sim_ctx_t *s, const cfg_t *cfg, const pol_registry_t *reg, err_t *e)
{
	int rc;
	mdl_llm_t llm;
	mdl_compute_params_t cp;
	cluster_params_t p = {0};
	if ((rc = setup_params(s, cfg, &llm, &cp, e)) ||
	    (rc = setup_compute(s, cfg, &llm, &cp, e)) ||
	    (rc = setup_cluster_params(s, cfg, &llm, &p, e)))
		return rc;
	setup_cluster_hooks(s, &p);
	if ((rc = sim_disagg_setup(s, cfg, &llm, &cp, &p, e)) ||
	    (rc = setup_policies(s, cfg, reg, e)) ||
	    (rc = setup_cluster(s, &p, e)) ||
	    (rc = setup_network(s, &p, e)) ||
	    (rc = setup_views(s, cfg, &p, e)) ||
	    (rc = sim_join_setup(s, e)) ||
	    (rc = setup_replication(s, cfg, e)) ||
	    (rc = setup_outputs(s, e)) ||
	    (rc = setup_events(s, e)))
		return rc;
	return sim_rss_room(s, "setting up the run", 0, RSS_FIX_CLUSTER);
}

/* ---- the end of the run ------------------------------------------------------- */

/* Says once per run, at its end, how many forecast prefixes the replication
 * policy's VRAM budget could never hold (spec.prefix_over_budget) and the
 * budget's refusals, with the first such prefix as an example. */
static void warn_over_budget(sim_ctx_t *s)
{
	const pol_spec_stats_t *st = &s->spec;
	if (!st->prefix_over_budget || s->warned_over_budget)
		return;
	s->warned_over_budget = 1;
	cli_warn("[policy.replication] %s: %" PRIu64 " forecast prefixes never fit "
		"the speculative VRAM budget (the first needs %u blocks, the budget is %u blocks per "
		"instance), so they were never replicated whole; %" PRIu64 " copies refused by it "
		"(spec.prefix_over_budget, spec.refused_vram)",
		st->over_budget_key ? st->over_budget_key : "budget", st->prefix_over_budget,
		st->over_budget_blocks, st->over_budget_cap, st->refused_vram);
}

static int count_held(void *ctx, const kv_block_info_t *b)
{
	*(uint32_t *)ctx += b->state != KV_READY || b->ref;
	return 0;
}

/* Every run ends with consistent stores (one O(blocks) pass), and, once no
 * copy is live, with no block held, computing or in flight: nothing leaked. */
static int stores_check_end(sim_ctx_t *s)
{
	for (uint32_t i = 0; i < s->cl.p.n_instances; i++) {
		kv_store_t *kv = s->cl.inst[i].kv;
		uint32_t held = 0;
		if (kv_check(kv) || kv_used_private(kv))
			return err_set(s->err, KS_ERUNTIME, "instance %u: KV store inconsistent at the end",
				       i);
		if (sim_copies_live(s->cp) == 0 && (kv_foreach(kv, count_held, &held), held))
			return err_set(s->err, KS_ERUNTIME,
				       "instance %u: %u KV blocks still held at the end", i, held);
	}
	return 0;
}

/* output.oracle_bound: MIN on each instance's stream with its own pool and
 * the placement bound (sim/run/bound.h), beside the run's hit_rate_blocks. */
static int bound_report(sim_ctx_t *s, sim_results_t *res)
{
	uint32_t n = s->cl.p.n_instances, *cap = malloc((n ? n : 1) * sizeof *cap);
	if (!cap)
		return KS_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		cap[i] = s->cl.p.inst_kv_blocks ? s->cl.p.inst_kv_blocks[i] : s->cl.p.kv_blocks;
	double bw = s->prm.out.bound_bw_gbps * 1e9, end_s = (double)ev_engine_now(s->eng) / 1e9;
	double copy_blocks = bw > 0 ? bw * end_s / (double)s->cl.p.block_bytes : -1;
	bound_out_t o;
	bound_ids_t adm = {0};
	int rc = sim_results_rows(res, RES_T_REQ, bound_admitted_ids, &adm);
	if (!rc)
		rc = bound_compute_ids(s->bound, &adm, cap, copy_blocks, &o);
	FREE_ALL(cap, adm.id);
	double run = s->cl.blocks_total ? (double)s->cl.blocks_hit / s->cl.blocks_total : NAN;
	double L = o.lookups ? (double)o.lookups : NAN;
	double place = (double)o.place_hits / L, unl = (double)o.reusable / L;
	/* REC_BOUND_LOOKUPS_BLOCKS .. REC_BOUND_NETWORK_COST_BLOCKS, in the recorder's order */
	const double m[] = {(double)o.lookups, (double)o.min_hits / L, (double)o.min_hits / L - run,
			    place, unl, place - run, unl - place};
	_Static_assert(sizeof m / sizeof m[0] ==
			   REC_BOUND_NETWORK_COST_BLOCKS - REC_BOUND_LOOKUPS_BLOCKS + 1,
		       "one value per metric");
	for (size_t i = 0; i < sizeof m / sizeof m[0] && !rc; i++)
		rc = rec_metric(res, REC_BOUND_LOOKUPS_BLOCKS + (int)i, m[i]);
	return rc;
}

/* Per-window summaries: [output] windows, else the source's (a spec's
 * stages), else none. */
static int collect_windows(sim_ctx_t *s, sim_results_t *res, const metrics_opts_t *mo)
{
	if (s->n_win_edges)
		return metrics_windows(res, mo, s->win_edges, s->n_win_edges, RES_WIN_OUTPUT);
	if (!s->win_fn)
		return 0;
	int64_t edges[257];
	size_t n = s->win_fn(s->win_ctx, edges, sizeof edges / sizeof edges[0]);
	return n > 1 ? metrics_windows(res, mo, edges, n, RES_WIN_STAGE) : 0;
}

/* res_rows_fn: prompt tokens fetched from peers and from host, into ctx's
 * two counters. */
static int sum_fetched(void *ctx, const void *rows, size_t n)
{
	uint64_t *tok = ctx;
	for (const res_request_t *r = rows, *end = r + n; r < end; r++) {
		tok[0] += r->tok_peer;
		tok[1] += r->tok_host;
	}
	return 0;
}

static int collect(sim_ctx_t *s, const cfg_t *cfg, sim_results_t *res)
{
	int rc;
	sim_arrivals_stop(s->arr); /* rows of unfinished requests ask no closed-loop user for more */
	if ((rc = sim_disagg_finish(s)) || (rc = cluster_finish(&s->cl)))
		return rc;
	if ((rc = stores_check_end(s)))
		return rc;
	res->seed = s->prm.seed;
	snprintf(res->trace_path, sizeof res->trace_path, "%s",
		 sim_arrivals_source_name(s->arr) ? sim_arrivals_source_name(s->arr) : "");
	res->events = ev_engine_events(s->eng);
	if (!(res->config_text = cfg_text(cfg)))
		return KS_ENOMEM;
	metrics_opts_t mo = {s->cl.p.ttft_slo_ns, s->cl.p.tpot_slo_ns, s->cl.blocks_total,
			     s->cl.blocks_hit};
	if ((rc = metrics_summarize(res, &mo)) || (rc = collect_windows(s, res, &mo)))
		return rc;
	uint64_t tok[2] = {0, 0}; /* fetched from a peer, from host memory */
	if ((rc = sim_results_rows(res, RES_T_REQ, sum_fetched, tok)))
		return rc;
	uint64_t peer = tok[0], host = tok[1];
	double area = 0, end_s = (double)ev_engine_now(s->eng) / 1e9;
	for (uint32_t i = 0; i < s->cl.p.n_instances; i++)
		area += s->cl.inst[i].wait_area / 1e9;
	/* REC_TOK_FETCHED_PEER .. REC_QUEUE_LEN_MEAN, in the recorder's order */
	const double m[] = {
	    (double)peer, (double)host, s->cl.p.n_instances, s->cl.p.kv_blocks,
	    (double)s->cl.kv_block_allocs, (double)s->cl.kv_block_frees, (double)res->events, end_s,
	    end_s > 0 ? area / end_s : 0,
	};
	_Static_assert(sizeof m / sizeof m[0] == REC_QUEUE_LEN_MEAN - REC_TOK_FETCHED_PEER + 1,
		       "one value per metric");
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		if (rec_metric(res, REC_TOK_FETCHED_PEER + (int)i, m[i]))
			return KS_ENOMEM;
	warn_over_budget(s);
	if ((rc = sim_copy_finish(s, res)) || (rc = fcast_report(s->fc, res)))
		return rc;
	if ((rc = sim_disagg_report(s, res)) || (s->bound && (rc = bound_report(s, res))))
		return rc;
	if (s->rvw && (rc = sim_rv_report(s->rvw, res)))
		return rc;
	return sim_join_report(s, res);
}

static void ctx_free(sim_ctx_t *s)
{
	free(s->win_edges);
	sim_net_free(s);
	cluster_free(&s->cl);
	sim_disagg_free(s);
	sim_join_free(s);
	ev_engine_free(s->eng);
	if (s->pol_open)
		pol_set_close(&s->pol);
	sim_views_free(s->vw);
	sim_rv_free(s->rvw);
	sim_holders_free(s->holders);
	sim_load_free(s->load);
	fcast_free(s->fc);
	bound_free(s->bound);
	sim_dec_free(s->dec);
	sim_arrivals_free(s->arr);
	sim_timeline_free(s->tl);
	FREE_ALL(s->hooks, s->tr_dirty, s->tr_dirty_list, s);
}

/* The engine's tick: a progress report, nothing the run can see. */
static int progress_tick(void *ctx, ev_engine_t *eng)
{
	sim_ctx_t *s = ctx;
	const sim_run_opts_t *o = s->opts;
	sim_progress_t p = {ev_engine_now(eng), sim_arrivals_arrived(s->arr), s->cl.n_done,
			    o->fraction ? o->fraction(o->fraction_ctx) : -1};
	return s->opts->progress(s->opts->progress_ctx, &p);
}

int sim_core_run(const cfg_t *cfg, sim_source_t *src, const sim_run_opts_t *o,
		 sim_results_t *res, err_t *e)
{
	const pol_registry_t *reg = o ? o->reg : NULL;
	struct timespec w0, w1;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	memset(res, 0, sizeof *res);
	if (o && o->stream_rows)
		sim_results_stream(res, o->stream_rows);
	int64_t start_unix = (int64_t)time(NULL);
	sim_rss_peak_reset(); /* max_rss_gb holds this run's peak, not an earlier one's */
	sim_ctx_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->err = e;
	s->cfg = cfg;
	s->res = res;
	s->opts = o && o->progress ? o : NULL;
	s->trace = o ? o->trace : NULL;
	s->win_fn = o ? o->windows : NULL;
	s->win_ctx = o ? o->windows_ctx : NULL;
	s->arr = sim_arrivals_new(src, o ? o->feedback : NULL);
	int rc = s->arr ? setup(s, cfg, reg, e) : err_set(e, KS_ENOMEM, "out of memory");
	if (!rc && (rc = metrics_windows_parse(s->prm.out.windows, &s->win_edges, &s->n_win_edges, e)))
		cfg_err_locate(cfg, e);
	if (!rc && s->opts)
		ev_engine_set_tick(s->eng, 8192, progress_tick, s);
	if (!rc)
		rc = sim_arrival_read(s);
	if (!rc && s->tick_ns > 0 && ev_engine_at(s->eng, s->tick_ns, s->ev.tick, 0, 0) == EV_NONE)
		rc = KS_ENOMEM;
	if (!rc && sim_timeline_interval(s->tl) > 0 && ev_engine_at(s->eng, 0, s->ev.sample, 0, 0) == EV_NONE)
		rc = KS_ENOMEM;
	if (!rc) {
		double until_s = s->prm.until_s;
		rc = ev_engine_run(s->eng, until_s > 0 ? (int64_t)(until_s * 1e9) : INT64_MAX);
		if (rc && (!e || e->code != rc || !e->msg[0]))
			err_set(e, rc, "simulation failed at t=%" PRId64 " ns", ev_engine_now(s->eng));
	}
	if (!rc && !(rc = collect(s, cfg, res)))
		rc = sim_rss_room(s, "collecting the results", 0,
			      "shorten the trace (experiment.until_s, trace.limit)");
	if (!rc && s->trace && (rc = sim_observer_end(s)) && e && !e->msg[0])
		err_set(e, rc, "trace events: writing failed");
	if (rc == KS_ENOMEM && e && !e->msg[0])
		err_set(e, rc, "out of memory");
	clock_gettime(CLOCK_MONOTONIC, &w1);
	res->start_unix = start_unix;
	res->wall_s = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9;
	if (rc)
		sim_results_free(res);
	ctx_free(s);
	return rc;
}
