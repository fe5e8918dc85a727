/* sim_view — the views component (struct sim_views): the policies' view of
 * the cluster (pol_view_t) and the routers' (what exists or is on its way,
 * or their own tree when policy.routing.view = routed), with the memos
 * behind them; and the actions the policies take on them (pol_actions_t):
 * answered from the cluster, its stores and the copies. */
#include "sim/run/sim_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/run/sim_decisions.h"
#include "sim/run/sim_disagg.h"
#include "sim/run/sim_rview.h"

/* The last queue-delay estimate of an instance (v_inst). */
typedef struct qdelay {
	uint64_t tokens; /* queued prompt tokens it was computed for */
	int64_t ns;
} qdelay_t;

/* Remembered answers of the policies' matches (v_match, v_match_computing):
 * direct-mapped on (instance, query), a query named by its length, last
 * and first ids and a hash of all of them. An answer m says that the
 * query's first m blocks were READY (or COMPUTING) when the instance had
 * erased `removed` ids (kv_removed); they still are but for those the
 * store has erased since, which its erase log names (kv_kept), so the next
 * ask looks up only the blocks past the first one erased, or past m. The
 * same answers as kv_match, without a lookup per block of a long prefix
 * asked again every tick (a session's context, sglang's block per token)
 * while the instance evicts other blocks. */
#define MATCH_MEMO 4096  /* entries (own choice) */
#define MATCH_MEMO_MIN 8 /* shorter queries are asked directly */
typedef struct mmemo {
	uint64_t sum, last, first, removed;
	uint32_t inst, n, m, mode; /* mode: 1 READY, 2 READY or COMPUTING; 0 empty */
} mmemo_t;

struct sim_views {
	pol_view_t view;       /* KV that exists (replication, admission) */
	pol_view_t route_view; /* what routers match (policy.routing.view) */
	pol_rview_t *rview;    /* the routers' own tree when view = routed */
	qdelay_t *qdelay;      /* one per instance */
	struct {               /* the last prefill estimates (v_prefill) */
		uint64_t n, cached;
		int64_t ns;
		int valid;
	} prefill_memo[2];
	unsigned prefill_next; /* the entry a miss replaces */
	mmemo_t *mmemo;        /* MATCH_MEMO entries */
};

static int64_t v_now(void *ctx)
{
	return ev_engine_now(((sim_ctx_t *)ctx)->eng);
}

/* Queued prompt tokens of inst at its prefill rate. The cost model is a
 * pure function of the token count, so the last answer per instance is kept
 * and reused while the count is unchanged: a router reading every instance
 * then pays the roofline only where the queue changed since its last read. */
static int64_t queue_delay_ns(sim_ctx_t *s, uint32_t i, uint64_t tokens)
{
	if (!tokens)
		return 0;
	qdelay_t *q = &s->vw->qdelay[i];
	if (q->tokens != tokens) {
		q->tokens = tokens;
		q->ns = mdl_prefill_time_ns(&s->comp, (uint32_t)(tokens < UINT32_MAX ? tokens
										       : UINT32_MAX),
					    0);
	}
	return q->ns;
}

/* O(1): every field is a counter the cluster and the store keep on change. */
static void v_inst(void *ctx, uint32_t i, pol_inst_t *o)
{
	sim_ctx_t *s = ctx;
	cluster_sync(&s->cl, i); /* decode_tokens as step mode has it now */
	const sim_inst_t *in = &s->cl.inst[i];
	memset(o, 0, sizeof *o);
	o->node = sim_inst_node(s, i);
	o->waiting = in->n_wait;
	o->running = in->n_run;
	o->prefill_tokens = in->prefill_tokens_queued;
	o->decode_tokens = in->decode_tokens;
	o->kv_cap_blocks = kv_capacity(in->kv);
	o->kv_used_blocks = kv_used(in->kv);
	o->kv_spec_blocks = kv_spec_blocks(in->kv);
	o->queue_delay_ns = queue_delay_ns(s, i, in->prefill_tokens_queued);
}

/* Leading blocks of b READY (mode 1) or READY or COMPUTING (mode 2). */
static uint32_t match_from(const kv_store_t *kv, int mode, const uint64_t *b, uint32_t n)
{
	if (mode == 1)
		return kv_match(kv, b, n);
	uint32_t k = 0;
	for (int st; k < n && ((st = kv_lookup(kv, b[k])) == KV_READY || st == KV_COMPUTING);)
		k++;
	return k;
}

/* match_from through the memo (MATCH_MEMO above). */
static uint32_t match_memo(sim_ctx_t *s, int mode, uint32_t i, const uint64_t *b, uint32_t n)
{
	const kv_store_t *kv = s->cl.inst[i].kv;
	if (n < MATCH_MEMO_MIN)
		return match_from(kv, mode, b, n);
	uint64_t sum = n;
	for (uint32_t k = 0; k < n; k++) /* sequential reads: far cheaper than n lookups */
		sum = (sum ^ b[k]) * 0x9E3779B97F4A7C15ull;
	uint64_t rem = kv_removed(kv);
	mmemo_t *e = &s->vw->mmemo[rng_fmix64(sum ^ ((uint64_t)i << 1 | (uint64_t)(mode - 1))) &
				   (MATCH_MEMO - 1)];
	uint32_t from = 0;
	if (e->mode == (uint32_t)mode && e->inst == i && e->n == n && e->sum == sum &&
	    e->last == b[n - 1] && e->first == b[0])
		from = kv_kept(kv, b, e->m, e->removed); /* those erased since excepted */
	uint32_t m = from == n ? n : from + match_from(kv, mode, b + from, n - from);
	*e = (mmemo_t){sum, b[n - 1], b[0], rem, i, n, m, (uint32_t)mode};
	return m;
}

static uint32_t v_match(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return match_memo(ctx, 1, i, b, n);
}

/* What a view counts as held: KV that exists (the policies' view), KV that
 * exists or is arriving by a copy (the routers' computed view), or the
 * routers' own tree (routed). */
enum { HELD_READY, HELD_VISIBLE, HELD_ROUTED };

static int held(const sim_ctx_t *s, int mode, uint32_t i, uint64_t id)
{
	const kv_store_t *kv = s->cl.inst[i].kv;
	switch (mode) {
	case HELD_READY:
		return kv_lookup(kv, id) == KV_READY;
	case HELD_VISIBLE:
		return kv_visible(kv, id);
	default:
		return pol_rview_has(s->vw->rview, i, id);
	}
}

/* Leading blocks each held on instance i or in its node's host tier (the
 * host tier as the policies' view counts it, or as visible to routers). */
static uint32_t match_host(const sim_ctx_t *s, int mode, uint32_t i, const uint64_t *b, uint32_t n)
{
	const kv_store_t *h = s->host ? s->host[sim_inst_node(s, i)] : NULL;
	uint32_t k = 0;
	while (k < n && (held(s, mode, i, b[k]) ||
			 (h && (mode == HELD_READY ? kv_lookup(h, b[k]) == KV_READY
						   : kv_visible(h, b[k])))))
		k++;
	return k;
}

static uint32_t v_match_computing(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return match_memo(ctx, 2, i, b, n);
}

static uint32_t v_match_host(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return match_host(ctx, HELD_READY, i, b, n);
}

/* The routers' computed view shows KV that exists or is on its way: READY,
 * or INFLIGHT for a copy whose flows run. A deferred copy's blocks are
 * reserved INFLIGHT at its target while its source still computes them;
 * they are shown only once the copy starts, as a COMPUTING block is only
 * once its prefill ends (else a router piles requests on a target that
 * will hold the prefix seconds later than the source). */
static uint32_t rv_match_computed(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	const sim_ctx_t *s = ctx;
	const kv_store_t *kv = s->cl.inst[i].kv;
	if (!sim_copies_any_deferred(s->cp))
		return kv_match_visible(kv, b, n);
	uint32_t k = 0;
	for (const kv_block_info_t *x; k < n; k++)
		if (!(x = kv_info(kv, b[k])) || x->state == KV_COMPUTING ||
		    sim_copy_block_deferred(s, x))
			break;
	return k;
}

static uint32_t rv_match_host_computed(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return match_host(ctx, HELD_VISIBLE, i, b, n);
}

/* The instances that may hold blocks[0] (the holders index): what both the
 * policies' view and the routers' computed view can match at all. In
 * KVSIM_CHECK builds every other instance is asked, and must match
 * nothing (the index must agree with kv_match on every instance). */
static const uint32_t *v_candidates(void *ctx, const uint64_t *b, uint32_t n, uint32_t *count)
{
	sim_ctx_t *s = ctx;
	const uint32_t *c = sim_holders_of(s->holders, b[0], count);
#ifdef KVSIM_CHECK
	for (uint32_t i = 0, j = 0; i < s->cl.p.n_instances; i++) {
		if (j < *count && c[j] == i) {
			j++;
			continue;
		}
		/* decode instances are outside the index (sim_copy_holders_note) */
		/* an internal invariant: the index is kept with every store change */
		assert(!(s->cl.inst[i].role != CL_ROLE_DECODE &&
			 (kv_match_visible(s->cl.inst[i].kv, b, n) ||
			  v_match_computing(ctx, i, b, n))) &&
		       "holders index: an instance holds the block but is not among its holders");
	}
#else
	(void)n;
#endif
	return c;
}

/* The least-loaded instances from the load index (sim_load.h). In
 * KVSIM_CHECK builds the index is compared with every instance's
 * cluster_load at each query. */
static const uint32_t *v_least_loaded(void *ctx, uint32_t *count, uint64_t *min_load,
				      uint64_t *max_load)
{
	sim_ctx_t *s = ctx;
	const uint32_t *c = sim_load_least(s->load, count, min_load, max_load);
#ifdef KVSIM_CHECK
	int bad = sim_load_check(s->load);
	for (uint32_t i = 0; !bad && i < s->cl.p.n_instances; i++)
		if (sim_load_of(s->load, i) != cluster_load(&s->cl, i))
			bad = 10;
	assert(!bad && "load index: inconsistent with the instances");
#endif
	return c;
}

static uint64_t v_held(void *ctx, uint32_t i)
{
	return kv_used(((sim_ctx_t *)ctx)->cl.inst[i].kv);
}

static uint64_t rv_held_routed(void *ctx, uint32_t i)
{
	return pol_rview_size(((sim_ctx_t *)ctx)->vw->rview, i);
}

static uint32_t rv_match_routed(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return pol_rview_match(((sim_ctx_t *)ctx)->vw->rview, i, b, n);
}

static uint32_t rv_match_host_routed(void *ctx, uint32_t i, const uint64_t *b, uint32_t n)
{
	return match_host(ctx, HELD_ROUTED, i, b, n);
}

/* The same model on every instance, fixed for the run: a pure function of
 * (n, cached), asked for the same pairs on every instance a request matches
 * alike (pol_view_ttft_ns asks each instance for its own prefix and for the
 * best one), so the last two answers are kept. */
static int64_t v_prefill(void *ctx, uint32_t i, uint64_t n, uint64_t cached)
{
	(void)i;
	sim_ctx_t *s = ctx;
	struct sim_views *v = s->vw;
	for (unsigned k = 0; k < 2; k++)
		if (v->prefill_memo[k].valid && v->prefill_memo[k].n == n &&
		    v->prefill_memo[k].cached == cached)
			return v->prefill_memo[k].ns;
	unsigned k = v->prefill_next++ & 1;
	v->prefill_memo[k].ns = mdl_prefill_time_ns(&s->comp, (uint32_t)n, (uint32_t)cached);
	v->prefill_memo[k].n = n;
	v->prefill_memo[k].cached = cached;
	v->prefill_memo[k].valid = 1;
	return v->prefill_memo[k].ns;
}

static int64_t v_xfer(void *ctx, uint32_t src, uint32_t dst, uint32_t n)
{
	return sim_copy_estimate(ctx, place_inst(src), dst, n, NET_BG);
}

static int a_copy(void *ctx, const uint64_t *b, uint32_t n, uint32_t src, uint32_t dst,
		  pol_class_t cls, uint64_t *id)
{
	sim_ctx_t *s = ctx;
	/* the decode pool takes speculative pre-placement only (pol.h n_decode) */
	const pol_view_t *v = &s->vw->view;
	uint32_t n_dst = v->n_inst + (cls == POL_BG ? v->n_decode : 0);
	if (src >= v->n_inst || dst >= n_dst)
		return POL_COPY_REFUSED;
	/* background copies are speculative replicas; foreground ones are
	 * fetches a policy makes for a request (kept, not speculative) */
	int rc = sim_copy_start(s, place_inst(src), dst, b, n, cls == POL_BG ? NET_BG : NET_FG,
				cls == POL_BG, 1, NULL, id);
	if (rc >= 0 && s->dec &&
	    sim_dec_copy(s->dec, b, n, src, dst, cls == POL_BG, rc, rc == POL_COPY_OK ? *id : 0,
			 ev_engine_now(s->eng)))
		return err_set(s->err, KS_ENOMEM, "out of memory");
	return rc;
}

static int a_cancel(void *ctx, uint64_t id)
{
	return sim_copy_cancel(ctx, id);
}

static int a_mark_spec(void *ctx, uint32_t inst, const uint64_t *b, uint32_t n)
{
	(void)ctx;
	(void)inst;
	(void)b;
	(void)n;
	return 0; /* every background copy already lands as a speculative replica */
}

static int a_announce(void *ctx, uint32_t inst, const uint64_t *b, uint32_t n)
{
	sim_ctx_t *s = ctx;
	if (inst >= s->vw->view.n_inst)
		return 0; /* routers see the prefill pool only */
	int rc = sim_views_routed_insert(s->vw, inst, b, n);
	return rc ? rc : s->rvw ? sim_rv_announce(s->rvw, inst, b, n) : 0;
}

struct sim_views *sim_views_new(sim_ctx_t *s, const cluster_params_t *p)
{
	struct sim_views *v = calloc(1, sizeof *v);
	if (!v || !(v->qdelay = calloc(p->n_instances ? p->n_instances : 1, sizeof *v->qdelay)) ||
	    !(v->mmemo = calloc(MATCH_MEMO, sizeof *v->mmemo))) {
		if (v)
			free(v->qdelay);
		free(v);
		return NULL;
	}
	v->view = (pol_view_t){s, p->n_instances, p->block_tokens, p->block_bytes,
			       v_now, v_inst, v_match, v_prefill, v_xfer, v_match_host, v_held,
			       sim_copies_defer_on(s->cp) ? v_match_computing : NULL, v_candidates,
			       v_least_loaded, 0};
	v->view.n_inst = sim_disagg_route_instances(s); /* routers see the prefill pool */
	v->view.n_decode = p->n_instances - v->view.n_inst;
	/* the load index counts a request until its row; a prefill instance
	 * hands it off before that, so disaggregated routers scan instead */
	if (v->view.n_inst != p->n_instances)
		v->view.least_loaded = NULL;
	v->route_view = v->view;
	v->route_view.match = rv_match_computed;
	v->route_view.match_host = rv_match_host_computed;
	if (!s->host[0]) { /* no host tier (every node's or none): the same matches */
		v->view.match_host = v->view.match;
		v->route_view.match_host = v->route_view.match;
	}
	return v;
}

void sim_views_free(struct sim_views *v)
{
	if (!v)
		return;
	pol_rview_free(v->rview);
	free(v->qdelay);
	free(v->mmemo);
	free(v);
}

int sim_views_routed(sim_ctx_t *s, const cfg_t *cfg, const cluster_params_t *p, err_t *e)
{
	struct sim_views *v = s->vw;
	sim_rv_view(s->rvw, &v->route_view); /* events, router replicas */
	if (pol_routing_view_routed(cfg) && !sim_rv_owns_view(s->rvw)) {
		if (!(v->rview = pol_rview_new(p->n_instances,
					       pol_routing_view_blocks(cfg, p->kv_blocks))))
			return err_set(e, KS_ENOMEM, "out of memory");
		v->route_view.match = rv_match_routed;
		v->route_view.match_host = rv_match_host_routed;
		v->route_view.held_blocks = rv_held_routed;
		v->route_view.candidates = NULL; /* the tree is not the stores */
	}
	return 0;
}

const pol_view_t *sim_views_policy(const struct sim_views *v)
{
	return &v->view;
}

const pol_view_t *sim_views_route(const struct sim_views *v)
{
	return &v->route_view;
}

void sim_views_set_present(struct sim_views *v, uint32_t n)
{
	v->view.n_inst = n;
	v->route_view.n_inst = n;
}

void sim_views_scan_loads(struct sim_views *v)
{
	v->view.least_loaded = NULL;
	v->route_view.least_loaded = NULL;
}

int sim_views_use_load(const struct sim_views *v)
{
	return v->view.least_loaded != NULL;
}

int sim_views_routed_insert(struct sim_views *v, uint32_t inst, const uint64_t *b, uint32_t n)
{
	return v->rview ? pol_rview_insert(v->rview, inst, b, n) : 0;
}

void sim_view_actions(sim_ctx_t *s)
{
	s->act = (pol_actions_t){s, a_copy, a_cancel, a_mark_spec, &s->spec, a_announce};
}
