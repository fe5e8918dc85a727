/* pol_repl_spec — forecast-driven speculative replication under a VRAM and
 * a bandwidth budget, with an explicit payback test.
 *
 * Every tick, for each forecast prefix p (expected E arrivals in the
 * horizon) and each target instance d (p's likely instances first, then the
 * least busy, spec_targets in all, skipping those already warm or being
 * filled), with m = blocks of p resident at d and c = blocks resident at the
 * best source s:
 *   cost    = xfer_ns(s, d, c - m)                      (link time it takes)
 *   saved   = prefill_ns(d, (c - m) B, m B)             (recompute avoided;
 *             with spec_saved_basis = min, also capped by the on-demand fetch)
 *   p_use   = 1 - exp(-E_d)                             (Poisson: at least one
 *             of the E_d arrivals expected at d lands there)
 *   accept  iff p_use x saved >= spec_payback x cost.
 * E_d comes from where p's recent requests were actually routed (the last
 * SP_HIST routings of requests whose prompt starts with p, seen in
 * on_route): of those R, h were placed by this policy's routing hint (they
 * go to the least busy warm holder, so a new holder d would take about
 * 1/(H+1) of them, H = current warm holders plus targets in flight) and u_d
 * were routed to d by the routing policy:
 *   E_d = E x (h / R / (H + 1) + u_d / R);
 * without history, E_d = E / targets (arrivals spread evenly over the
 * targets). When the simulator defers copies (view.match_computing), a
 * source still computing p counts as holding it: the copy is reserved now
 * and moves once the source has computed it.
 * Accepted candidates are issued best ratio first while (a) d's speculative
 * blocks (resident + in flight) stay within its VRAM budget and (b) a token
 * bucket of spec_bw_gbps (burst spec_bw_burst_s) has the bytes
 * (or is full: a copy larger than the bucket then leaves a debt); refusals
 * are counted by reason, and a prefix larger than the whole VRAM budget is
 * reported (pol_spec_over_budget). The VRAM budget of instance d, of KV
 * capacity K_d blocks: spec_vram_frac x K_d when spec_vram_frac is a
 * number; with spec_vram_frac = auto,
 *   min(spec_vram_cap_frac x K_d, max(W, L, SP_AUTO_FLOOR x K_d))
 * with W the blocks of this tick's forecast prefixes together and L the
 * longest prefix the forecast has offered so far (entries of at least
 * spec_min_expected arrivals): room for one replica of every prefix the
 * predictor reports, up to a share of the pool. Replicas are cache: an
 * unused speculative block is READY with no reference, evictable like any
 * cached block (first under eviction spec_first), so a demand allocation
 * under pressure evicts it (spec.replicas_wasted); the budget bounds what
 * the policy asks for, not what demand can reclaim.
 * In-flight copies of prefixes that left the forecast are cancelled when
 * spec_cancel_stale is set. Routing of a request of a prefix one of our
 * copies brought (while the prefix stays tracked: in the forecast within the
 * last horizon), spec_route_hint: override sends it to the least busy
 * instance holding it warm, ties drawn at random from the policy's own
 * stream, in place of the routing policy; score leaves the routing policy in
 * charge and lets it see the placement: the routers' view counts a replica
 * (landed, or in flight) as a holder of the prefix, so a prefix-aware router
 * weighs it against load as it weighs any cached prefix (a routed view,
 * which learns only its own decisions, is told of each copy through
 * pol_actions_t.announce); off: no hint, and the routers' view learns of
 * copies only as the view type does for any KV.
 * Decode pre-placement (spec_decode_targets > 0, in a disaggregated
 * cluster: view.n_decode): for each forecast prefix the policy also copies
 * the blocks of it the best prefill holder has computed to the
 * spec_decode_targets decode instances with the fewest decode tokens (ties
 * at random from the policy's stream) that lack them, so that a handoff of
 * its requests moves only the suffix (cluster.decode_prefix_cache, which
 * must be on for them to be used). Such a copy needs no payback test: it
 * moves the bytes a handoff would move, off the request's path; its score
 * is p_use = 1 - exp(-E / targets), below the prefill candidates' ratios
 * (>= spec_payback, 1 by default), and it takes the same VRAM (of the
 * decode instance's pool) and bandwidth budgets, counts in spec.* like any
 * replica and never triggers the routing hint (own design).
 * Cost: a tick reads every instance (the load snapshot, O(n log n), and
 * the budgets). Per forecast prefix, each instance that may hold it
 * (pol_view_scan) takes one lookup towards the longest match, and the
 * instances holding that match are checked block by block when a target
 * needs their count (p_use) and, as sources, only when their link would
 * win; the routing hint asks those of a replicated prefix per request. A prefix cached on most instances (a
 * popular system prompt under least_load) therefore costs a pass over
 * them: measured with the oracle predictor on
 * analysis/experiments/cluster_8192gpu_hour.ini (30 simulated s, 100 ms
 * ticks), about 40 us per instance per tick above least_load, the copies'
 * flows included: 36 us on 256 instances, 42 us on 2,048. */
#include "policies/pol_int.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct sp_flight {
	uint64_t id, key;
	uint32_t n, dst, blocks; /* prefix length, target, blocks moved */
} sp_flight_t;

typedef struct sp_key {
	uint64_t key; /* blocks[n-1] */
	uint32_t n;
} sp_key_t;

/* One forecast prefix followed over time: where its requests went, and
 * whether one of our copies of it landed (the routing hint's trigger). */
#define SP_HIST 32 /* recent routings kept per prefix (own choice) */
/* Pseudo-requests spread evenly over the targets added to the history
 * (additive smoothing, Laplace's rule): one or two routings must not decide
 * alone that a prefix never reaches d (own choice). */
#define SP_PRIOR 4.0
/* spec_vram_frac = auto never budgets less than the former fixed default
 * (0.1 of the pool), so auto never refuses a copy that default accepted. */
#define SP_AUTO_FLOOR 0.1
enum { SP_HINT_OFF, SP_HINT_OVERRIDE, SP_HINT_SCORE };
typedef struct sp_track {
	uint64_t key; /* blocks[n-1] */
	uint32_t n;
	int replicated;
	int64_t seen_ns;          /* last tick it was in the forecast */
	uint32_t hist_n, hist_at; /* routings kept, next slot */
	uint32_t hist[SP_HIST];   /* instance << 1 | placed by our hint */
} sp_track_t;

typedef struct sp_cand {
	const pol_fc_t *f;
	uint32_t src, dst, copy_n, miss;
	double score; /* benefit / cost */
} sp_cand_t;

typedef struct sp_params {
	double spec_tick_ms;
	double spec_horizon_s;
	char *spec_vram_frac; /* "auto" or a number in [0, 1] (sp_init parses it) */
	double spec_vram_cap_frac;
	double spec_bw_gbps;
	double spec_bw_burst_s;
	uint32_t spec_targets;
	double spec_payback;
	int spec_saved_basis; /* 1: min */
	double spec_min_expected;
	int spec_cancel_stale;
	int spec_route_hint; /* SP_HINT_* */
	uint32_t spec_decode_targets;
} sp_params_t;

typedef struct sp_state {
	sp_params_t p;
	int64_t tick_ns, horizon_ns;
	int vram_auto;     /* spec_vram_frac = auto */
	double vram_frac;  /* its number otherwise */
	uint32_t longest;  /* auto: the longest prefix forecast so far, blocks */
	uint64_t want;     /* auto: this tick's forecast prefixes together, blocks */
	double bw_Bps;
	double tokens; /* bytes available in the bucket */
	int64_t last_ns;
	sp_flight_t *fl;
	size_t n_fl, cap_fl;
	sp_cand_t *c;
	size_t cap_c;
	pol_inst_t *snap;
	uint32_t *order;
	uint32_t *mk; /* per candidate of a forecast prefix: SP_ASKED_* | SP_HAS_* */
	uint32_t cap_mk;
	uint64_t *spec_plan; /* speculative blocks per instance incl. our in-flight */
	unsigned char *hit;
	size_t cap_hit;
	uint32_t n_inst; /* the prefill pool (view.n_inst) */
	uint32_t n_all;  /* and the decode pool after it (view.n_decode) */
	sp_key_t *over; /* prefixes reported over budget, sorted */
	size_t n_over, cap_over;
	sp_track_t *tr;
	size_t n_tr, cap_tr;
	uint32_t *ix; /* open addressing on key: track index + 1, 0 empty */
	size_t ix_cap;
	gsl_rng *rng;      /* ties of the routing hint */
	uint64_t hint_req; /* the request the last hint placed, and where */
	uint32_t hint_inst;
	int hint_set;
} sp_state_t;

static const cfg_enum_t sp_basis_map[] = {{"recompute", 0}, {"min", 1}, {NULL, 0}};
static const cfg_enum_t sp_hint_map[] = {
    {"off", SP_HINT_OFF}, {"override", SP_HINT_OVERRIDE}, {"score", SP_HINT_SCORE}, {NULL, 0}};

/* Decode pre-placement needs a decode pool (cfg_when_t). */
static const cfg_when_t when_disagg = {"cluster.disagg = true", NULL};
static const cfg_tkey_t sp_params[] = {
    POL_KEY("replication", "speculative", "spec_tick_ms", CFG_FLOAT, "100", 0.001, 1e6, NULL, "ms",
            "planning period (own choice)",
            CFG_AT(DOUBLE, sp_params_t, spec_tick_ms)),
    POL_KEY("replication", "speculative", "spec_horizon_s", CFG_FLOAT, "10", 0.001, 1e6, NULL, "s",
            "forecast horizon asked of the predictor (own choice)",
            CFG_AT(DOUBLE, sp_params_t, spec_horizon_s)),
    POL_KEY("replication", "speculative", "spec_vram_frac", CFG_STR, "auto", 0, 0, NULL, "",
            "VRAM budget per instance for speculative replicas (resident + in flight): a "
            "number in [0, 1] is that fixed share of the instance's KV pool; auto (default, "
            "own choice) is room for one replica of every prefix the forecast reports now "
            "(their blocks together) and of the longest it has reported so far, at least 0.1 "
            "of the pool (the former fixed default, so auto refuses nothing it accepted) and "
            "at most spec_vram_cap_frac of it",
            CFG_AT(STRDUP, sp_params_t, spec_vram_frac)),
    POL_KEY("replication", "speculative", "spec_vram_cap_frac", CFG_FLOAT, "0.5", 0, 1, NULL,
            "",
            "spec_vram_frac = auto: the largest share of each KV pool the budget may grow to. "
            "0.5 (own choice): replicas are evictable cache (an unused replica is dropped "
            "like any cached block when demand needs the room), so the cap only bounds what "
            "the policy asks for; half the pool leaves at least as much to demand-computed KV",
            CFG_AT(DOUBLE, sp_params_t, spec_vram_cap_frac)),
    POL_KEY("replication", "speculative", "spec_bw_gbps", CFG_FLOAT, "0", 0, 1e6, NULL, "GB/s",
            "bandwidth budget for speculative copies, 1e9 bytes/s; 0 = unlimited",
            CFG_AT(DOUBLE, sp_params_t, spec_bw_gbps)),
    POL_KEY("replication", "speculative", "spec_bw_burst_s", CFG_FLOAT, "1", 0.001, 1e6, NULL, "s",
            "token-bucket depth of the bandwidth budget",
            CFG_AT(DOUBLE, sp_params_t, spec_bw_burst_s)),
    POL_KEY("replication", "speculative", "spec_targets", CFG_INT, "2", 1, 1024, NULL, "",
            "target instances per forecast prefix (own choice)",
            CFG_AT(U32, sp_params_t, spec_targets)),
    POL_KEY("replication", "speculative", "spec_payback", CFG_FLOAT, "1", 0, 1e9, NULL, "",
            "copy iff p_use x saved >= spec_payback x copy time; 0 accepts all",
            CFG_AT(DOUBLE, sp_params_t, spec_payback)),
    POL_KEY("replication", "speculative", "spec_saved_basis", CFG_ENUM, "recompute", 0, 0,
            NULL, "",
            "time saved per use: recompute time, or min(recompute, on-demand fetch)",
            CFG_AT_ENUM(sp_params_t, spec_saved_basis, sp_basis_map)),
    POL_KEY("replication", "speculative", "spec_min_expected", CFG_FLOAT, "0.5", 0, 1e9, NULL, "",
            "forecast entries expecting fewer arrivals are ignored",
            CFG_AT(DOUBLE, sp_params_t, spec_min_expected)),
    POL_KEY("replication", "speculative", "spec_cancel_stale", CFG_BOOL, "true", 0, 0, NULL, "",
            "cancel in-flight copies of prefixes that left the forecast",
            CFG_AT(BOOL, sp_params_t, spec_cancel_stale)),
    POL_KEY("replication", "speculative", "spec_route_hint", CFG_ENUM, "override", 0, 0, NULL,
            "",
            "requests of a prefix we replicated: override = to its least busy warm instance, "
            "in place of the routing policy (as early_rdma's early_route_warm, the original "
            "proposal's routing rule; spec.hint_routed counts them); score = the routing "
            "policy decides, its view counting each replica (landed or in flight) as a holder "
            "of the prefix (spec.hint_routed counts the requests of such a prefix it sent to "
            "an instance holding the prefix warm; the routers' computed view, the default "
            "of every router but cache_aware, already shows a copy once it starts, so there "
            "score routes exactly as off and differs only under policy.routing.view = routed "
            "or events); off = no hint (spec.hint_routed 0). "
            "Default override: the former behaviour (own choice; which mode pays depends on "
            "the deployment's router). Replaces spec_route_warm (true = override, false = off)",
            CFG_AT_ENUM(sp_params_t, spec_route_hint, sp_hint_map)),
    POL_KEY("replication", "speculative", "spec_decode_targets", CFG_INT, "0", 0, 1024, NULL, "",
            "decode instances per forecast prefix to pre-place its computed KV on, in a "
            "disaggregated cluster (used with cluster.decode_prefix_cache); 0 (default, own "
            "choice): the decode pool gets no replicas",
            CFG_AT_WHEN(U32, sp_params_t, spec_decode_targets, &when_disagg)),
};

static int sp_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	const sp_params_t *p = params;
	const char *vf = p->spec_vram_frac ? p->spec_vram_frac : "";
	char *end;
	double frac = strtod(vf, &end);
	int vauto = !strcmp(vf, "auto");
	if (!vauto && (!*vf || *end || !(frac >= 0 && frac <= 1)))
		return err_set(e, KS_EINPUT,
		               "[policy.replication] spec_vram_frac: expected auto or a number in "
		               "[0, 1], got '%s'",
		               vf);
	sp_state_t *s = calloc(1, sizeof *s);
	if (!s || !(s->rng = pol_rng_new(seed))) {
		free(s);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	s->p = *p;
	s->p.spec_vram_frac = NULL; /* the handle's: parsed here, not kept */
	s->vram_auto = vauto;
	s->vram_frac = vauto ? 0 : frac;
	s->tick_ns = (int64_t)(p->spec_tick_ms * 1e6);
	s->horizon_ns = (int64_t)(p->spec_horizon_s * 1e9);
	s->bw_Bps = p->spec_bw_gbps * 1e9;
	s->tokens = s->bw_Bps * s->p.spec_bw_burst_s;
	s->last_ns = INT64_MIN;
	*state = s;
	return 0;
}

static void sp_free(void *st)
{
	sp_state_t *s = st;
	gsl_rng_free(s->rng);
	FREE_ALL(s->fl, s->c, s->snap, s->order, s->mk, s->spec_plan, s->hit, s->over, s->tr, s->ix, s);
}

static pol_repl_timing_t sp_timing(const void *st)
{
	const sp_state_t *s = st;
	return (pol_repl_timing_t){s->tick_ns, s->horizon_ns};
}

/* Instance d's VRAM budget for speculative blocks (see the header). */
static double sp_budget(const sp_state_t *s, uint32_t d)
{
	double k = (double)s->snap[d].kv_cap_blocks;
	if (!s->vram_auto)
		return s->vram_frac * k;
	double b = (double)s->longest > SP_AUTO_FLOOR * k ? (double)s->longest : SP_AUTO_FLOOR * k;
	if ((double)s->want > b)
		b = (double)s->want;
	return b < s->p.spec_vram_cap_frac * k ? b : s->p.spec_vram_cap_frac * k;
}

/* The largest budget any instance may reach: a prefix above it fits nowhere. */
static double sp_budget_ceiling(const sp_state_t *s, uint32_t d)
{
	double k = (double)s->snap[d].kv_cap_blocks;
	if (!s->vram_auto)
		return s->vram_frac * k;
	return s->p.spec_vram_cap_frac * k; /* the cap wins over the floor */
}

/* ---- tracked prefixes ------------------------------------------------------ */

static size_t sp_slot(const sp_state_t *s, uint64_t key)
{
	/* Fibonacci hashing (Knuth, TAOCP 3, 6.4): ids may be sequential */
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (s->ix_cap - 1);
}

static sp_track_t *sp_track_find(const sp_state_t *s, uint64_t key, uint32_t n)
{
	if (!s->n_tr)
		return NULL;
	for (size_t i = sp_slot(s, key);; i = (i + 1) & (s->ix_cap - 1)) {
		uint32_t v = s->ix[i];
		if (!v)
			return NULL;
		if (s->tr[v - 1].key == key)
			return s->tr[v - 1].n == n ? &s->tr[v - 1] : NULL;
	}
}

static void sp_ix_put(sp_state_t *s, size_t idx)
{
	size_t i = sp_slot(s, s->tr[idx].key);
	while (s->ix[i])
		i = (i + 1) & (s->ix_cap - 1);
	s->ix[i] = (uint32_t)idx + 1;
}

/* Rebuilds the index for n_tr tracks at load <= 1/2. */
static int sp_ix_build(sp_state_t *s)
{
	size_t cap = 64;
	while (cap < 2 * s->n_tr + 2)
		cap *= 2;
	if (cap != s->ix_cap) { /* exactly cap: the slot mask is ix_cap - 1 */
		if (VEC_RESIZE(s->ix, cap))
			return KS_ENOMEM;
		s->ix_cap = cap;
	}
	memset(s->ix, 0, s->ix_cap * sizeof *s->ix);
	for (size_t i = 0; i < s->n_tr; i++)
		sp_ix_put(s, i);
	return 0;
}

/* Finds or starts tracking f's prefix; NULL only on ENOMEM. */
static sp_track_t *sp_track_get(sp_state_t *s, const uint64_t *blocks, uint32_t n, int64_t now)
{
	sp_track_t *t = sp_track_find(s, blocks[n - 1], n);
	if (t)
		return t;
	if (VEC_GROW(s->tr, s->cap_tr, s->n_tr + 1, 64))
		return NULL;
	t = &s->tr[s->n_tr++];
	memset(t, 0, sizeof *t);
	t->key = blocks[n - 1];
	t->n = n;
	t->seen_ns = now;
	if (2 * s->n_tr + 2 > s->ix_cap) {
		if (sp_ix_build(s))
			return NULL;
	} else {
		sp_ix_put(s, s->n_tr - 1);
	}
	return t;
}

/* Forgets prefixes absent from the forecast for longer than the horizon. */
static int sp_track_prune(sp_state_t *s, int64_t now)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n_tr; i++)
		if (now - s->tr[i].seen_ns <= s->horizon_ns)
			s->tr[k++] = s->tr[i];
	if (k == s->n_tr)
		return 0;
	s->n_tr = k;
	return sp_ix_build(s);
}

/* E_d, the arrivals of the horizon expected at d (see the header). */
static double sp_expected_at(const sp_track_t *t, const pol_fc_t *f, uint32_t d, uint32_t holders,
                             uint32_t nt)
{
	if (!t || !t->hist_n)
		return f->expected / (double)nt;
	uint32_t hinted = 0, to_d = 0;
	for (uint32_t i = 0; i < t->hist_n; i++) {
		if (t->hist[i] & 1)
			hinted++;
		else if (t->hist[i] >> 1 == d)
			to_d++;
	}
	double r = (double)t->hist_n + SP_PRIOR;
	return f->expected *
	       ((double)hinted / (holders + 1) + (double)to_d + SP_PRIOR / (double)nt) / r;
}

static int sp_flying(const sp_state_t *s, const pol_fc_t *f, uint32_t dst)
{
	for (size_t i = 0; i < s->n_fl; i++)
		if (s->fl[i].dst == dst && s->fl[i].n == f->n_blocks &&
		    s->fl[i].key == f->blocks[f->n_blocks - 1])
			return 1;
	return 0;
}

static int sp_snapshot(sp_state_t *s, const pol_view_t *v)
{
	/* the decode pool only when pre-placing: other views stay as before */
	uint32_t n_all = v->n_inst + (s->p.spec_decode_targets ? v->n_decode : 0);
	if (s->n_inst != v->n_inst || s->n_all != n_all) {
		if (VEC_RESIZE(s->snap, n_all) || VEC_RESIZE(s->order, n_all) ||
		    VEC_RESIZE(s->spec_plan, n_all))
			return KS_ENOMEM;
		s->n_inst = v->n_inst;
		s->n_all = n_all;
	}
	pol_snapshot_by_load(v, s->snap, s->order, 1);
	for (uint32_t i = v->n_inst; i < n_all; i++)
		v->inst(v->ctx, i, &s->snap[i]);
	for (uint32_t i = 0; i < n_all; i++)
		s->spec_plan[i] = s->snap[i].kv_spec_blocks;
	for (size_t i = 0; i < s->n_fl; i++)
		if (s->fl[i].dst < n_all)
			s->spec_plan[s->fl[i].dst] += s->fl[i].blocks;
	return 0;
}

static int cand_cmp(const void *a, const void *b)
{
	const sp_cand_t *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	return 0;
}

static int sp_push_cand(sp_state_t *s, size_t *n, const sp_cand_t *c)
{
	if (VEC_GROW(s->c, s->cap_c, *n + 1, 64))
		return KS_ENOMEM;
	s->c[(*n)++] = *c;
	return 0;
}

/* What sp_consider knows of candidate j of a forecast prefix: whether it
 * holds the first c_ready or c blocks (SP_HAS_*), once asked (SP_ASKED_*). */
enum { SP_ASKED_C = 1, SP_HAS_C = 2, SP_ASKED_R = 4, SP_HAS_R = 8 };

/* Whether candidate j (instance k) holds f's first x >= 1 blocks by match
 * (m), kept in s->mk[j] under the bits (asked, has) for the next ask. Each
 * block is tested alone (pol.h), so one lookup of block x - 1 rules out an
 * instance that holds a shorter run: only full holders pay x lookups. */
static int sp_has(sp_state_t *s, const pol_view_t *v, pol_match_fn m, uint32_t j, uint32_t k,
                  const pol_fc_t *f, uint32_t x, uint32_t asked, uint32_t has)
{
	if (!(s->mk[j] & asked))
		s->mk[j] |= asked | (pol_view_holds(v, m, k, f->blocks, x) ? has : 0);
	return (s->mk[j] & has) != 0;
}

/* Instances that hold c blocks of f (computed, or being computed when the
 * view says so) plus our copies of f in flight; c >= 1, so only the
 * candidates count. */
static uint32_t sp_holders(sp_state_t *s, const pol_view_t *v, const pol_fc_t *f, uint32_t c,
                           const uint32_t *ck, uint32_t nk)
{
	uint32_t h = 0;
	pol_match_fn m = v->match_computing ? v->match_computing : v->match;
	for (uint32_t j = 0; j < nk; j++)
		h += v->match_computing ? pol_view_holds(v, m, ck ? ck[j] : j, f->blocks, c)
		                        : sp_has(s, v, m, j, ck ? ck[j] : j, f, c, SP_ASKED_C, SP_HAS_C);
	for (size_t i = 0; i < s->n_fl; i++)
		h += s->fl[i].dst < v->n_inst && s->fl[i].n == f->n_blocks &&
		     s->fl[i].key == f->blocks[f->n_blocks - 1];
	return h;
}

/* Candidates (p, d) of one forecast entry that pass the payback test. Only
 * the instances that may hold f's first block can match it (pol_view_scan),
 * and a match is a leading run of blocks each tested alone (pol.h): one
 * lookup of the block past the best match so far rules most of them out,
 * and a holder's whole run is verified only where its count or its link
 * matters (sp_has), so the entry costs O(candidates + full holders x
 * blocks), not O(instances). A popular prefix may still be held whole on
 * most instances: then each of them is verified once (the policy's header
 * gives the cost). */
static int sp_consider(sp_state_t *s, const pol_view_t *v, const pol_fc_t *f, const sp_track_t *t,
                       size_t *n)
{
	uint32_t nk, src = UINT32_MAX, c = 0, nb = f->n_blocks;
	const uint32_t *ck = pol_view_scan(v, f->blocks, nb, &nk);
	if (VEC_GROW(s->mk, s->cap_mk, nk, 64))
		return KS_ENOMEM;
	if (nk) /* s->mk may be NULL: no candidate yet asked for room */
		memset(s->mk, 0, nk * sizeof *s->mk);
	/* the longest match (the first candidate with it on ties), then a
	 * longer one still being computed, which the copy waits for */
	c = pol_view_best_of(v, v->match, ck, nk, f->blocks, nb, 0, &src);
	uint32_t src_ready = src, c_ready = c;
	int pending = 0;
	if (v->match_computing) {
		uint32_t cp = pol_view_best_of(v, v->match_computing, ck, nk, f->blocks, nb, c, &src);
		pending = cp > c;
		c = cp;
	}
	if (!c)
		return 0; /* nobody holds it yet: nothing to copy */
	uint32_t tgt[1024], nt = 0;
	for (uint32_t i = 0; i < f->n_likely && nt < s->p.spec_targets; i++)
		if (f->likely[i] < v->n_inst && f->likely[i] != src)
			tgt[nt++] = f->likely[i];
	for (uint32_t j = 0; j < v->n_inst && nt < s->p.spec_targets; j++) {
		uint32_t d = s->order[j], dup = (d == src);
		for (uint32_t i = 0; i < nt && !dup; i++)
			dup = tgt[i] == d;
		if (!dup)
			tgt[nt++] = d;
	}
	uint64_t B = v->block_tokens;
	uint32_t holders = UINT32_MAX; /* counted once a target needs it */
	for (uint32_t i = 0; i < nt; i++) {
		uint32_t d = tgt[i], m = v->match(v->ctx, d, f->blocks, c), cc = c, sc = src;
		if (m >= c || sp_flying(s, f, d))
			continue;
		if (pending && v->match_computing(v->ctx, d, f->blocks, c) > m)
			continue; /* d computes it itself */
		if (pending && (double)(c - m) > sp_budget(s, d) && c_ready > m) {
			cc = c_ready; /* the whole prefix never fits d's budget: what is computed */
			sc = src_ready;
		}
		/* the best source for this target: a full holder with the fastest
		 * link, the first on ties. One lookup (or what the entry already
		 * knows) rules out most others; a holder's whole run is checked
		 * only when its link would win, so the full holders of a popular
		 * prefix cost a link estimate each, not a match of the prefix */
		uint32_t sbest = sc, asked = cc == c ? SP_ASKED_C : SP_ASKED_R;
		uint32_t has = cc == c ? SP_HAS_C : SP_HAS_R;
		int64_t cost = v->xfer_ns(v->ctx, sc, d, cc - m);
		for (uint32_t j = 0; j < nk; j++) { /* cc >= 1: the others hold none */
			uint32_t k = ck ? ck[j] : j;
			if (k == d || k == sc ||
			    ((s->mk[j] & asked) ? !(s->mk[j] & has)
			                        : !v->match(v->ctx, k, f->blocks + cc - 1, 1)))
				continue;
			int64_t tk = v->xfer_ns(v->ctx, k, d, cc - m);
			if (tk < cost && sp_has(s, v, v->match, j, k, f, cc, asked, has)) {
				cost = tk;
				sbest = k;
			}
		}
		double saved =
		    (double)v->prefill_ns(v->ctx, d, (uint64_t)(cc - m) * B, (uint64_t)m * B);
		if (s->p.spec_saved_basis && (double)cost < saved)
			saved = (double)cost;
		if (holders == UINT32_MAX)
			holders = sp_holders(s, v, f, c, ck, nk);
		double p_use = 1 - exp(-sp_expected_at(t, f, d, holders, nt));
		double benefit = p_use * saved, price = s->p.spec_payback * (double)cost;
		if (benefit < price)
			continue;
		sp_cand_t cd = {f, sbest, d, cc, cc - m, cost > 0 ? benefit / (double)cost : 1e300};
		if (sp_push_cand(s, n, &cd))
			return KS_ENOMEM;
	}
	return 0;
}

/* Decode pre-placement candidates of one forecast entry (see the header):
 * the computed prefix of its best prefill holder, to the least loaded
 * decode instances lacking it, until spec_decode_targets of them hold it
 * or have it on its way. */
static int sp_consider_decode(sp_state_t *s, const pol_view_t *v, const pol_fc_t *f, size_t *n)
{
	uint32_t src, c = pol_view_best_match(v, f->blocks, f->n_blocks, &src);
	uint32_t nd = s->n_all - s->n_inst;
	uint32_t nt = s->p.spec_decode_targets < nd ? s->p.spec_decode_targets : nd, have = 0;
	if (!c || !nt)
		return 0;
	double p_use = 1 - exp(-f->expected / (double)nt);
	for (uint32_t d = s->n_inst; d < s->n_all; d++)
		have += v->match(v->ctx, d, f->blocks, c) >= c || sp_flying(s, f, d);
	size_t start = *n;
	for (; have < nt; have++) {
		uint32_t best = UINT32_MAX, ties = 0;
		for (uint32_t d = s->n_inst; d < s->n_all; d++) {
			int skip = v->match(v->ctx, d, f->blocks, c) >= c || sp_flying(s, f, d);
			for (size_t i = start; i < *n && !skip; i++)
				skip = s->c[i].dst == d;
			if (skip)
				continue;
			uint64_t ld = s->snap[d].decode_tokens;
			if (!ties || ld < s->snap[best].decode_tokens) {
				best = d;
				ties = 1;
			} else if (ld == s->snap[best].decode_tokens &&
			           gsl_rng_uniform_int(s->rng, ++ties) == 0) {
				best = d;
			}
		}
		if (!ties)
			break;
		uint32_t m = v->match(v->ctx, best, f->blocks, c);
		sp_cand_t cd = {f, src, best, c, c - m, p_use};
		if (sp_push_cand(s, n, &cd))
			return KS_ENOMEM;
	}
	return 0;
}

static int sp_in_forecast(const sp_flight_t *fl, const pol_forecast_t *fc)
{
	for (size_t k = 0; fc && k < fc->n; k++)
		if (fc->e[k].n_blocks == fl->n && fc->e[k].blocks[fl->n - 1] == fl->key)
			return 1;
	return 0;
}

static int sp_key_cmp(const void *a, const void *b)
{
	const sp_key_t *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->n > y->n) - (x->n < y->n);
}

/* A forecast prefix larger than every instance's whole VRAM budget can
 * never be replicated whole; each such prefix is reported once. */
static int sp_over_budget(sp_state_t *s, const pol_actions_t *a, const pol_fc_t *f, double cap)
{
	sp_key_t k = {f->blocks[f->n_blocks - 1], f->n_blocks};
	size_t lo = 0, hi = s->n_over;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = sp_key_cmp(&s->over[mid], &k);
		if (!r)
			return 0;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (VEC_GROW(s->over, s->cap_over, s->n_over + 1, 16))
		return KS_ENOMEM;
	memmove(&s->over[lo + 1], &s->over[lo], (s->n_over - lo) * sizeof *s->over);
	s->over[lo] = k;
	s->n_over++;
	if (a->stats)
		pol_spec_over_budget(a->stats, f->n_blocks, (uint32_t)cap,
		                     s->vram_auto ? "spec_vram_cap_frac" : "spec_vram_frac");
	return 0;
}

static int sp_on_tick(void *st, const pol_view_t *v, const pol_actions_t *a,
                      const pol_forecast_t *fc, err_t *e)
{
	sp_state_t *s = st;
	int64_t now = v->now(v->ctx);
	if (s->bw_Bps > 0) {
		if (s->last_ns != INT64_MIN && now > s->last_ns)
			s->tokens += s->bw_Bps * (double)(now - s->last_ns) * 1e-9;
		if (s->tokens > s->bw_Bps * s->p.spec_bw_burst_s)
			s->tokens = s->bw_Bps * s->p.spec_bw_burst_s;
	}
	s->last_ns = now;
	if (s->p.spec_cancel_stale)
		for (size_t i = 0; i < s->n_fl;) {
			if (sp_in_forecast(&s->fl[i], fc)) {
				i++;
				continue;
			}
			/* forget the entry before cancelling: the cancel calls
			 * sp_on_copy_end, which would remove it a second time */
			uint64_t id = s->fl[i].id;
			s->fl[i] = s->fl[--s->n_fl];
			if (a->cancel)
				a->cancel(a->ctx, id);
		}
	if (sp_snapshot(s, v) || sp_track_prune(s, now))
		return err_set(e, KS_ENOMEM, "out of memory");
	size_t nc = 0;
	double max_cap = 0; /* the largest budget: a prefix above it fits nowhere */
	for (uint32_t i = 0; i < s->n_inst; i++)
		if (sp_budget_ceiling(s, i) > max_cap)
			max_cap = sp_budget_ceiling(s, i);
	s->want = 0;
	for (size_t k = 0; s->vram_auto && fc && k < fc->n; k++) /* auto: grow first */
		if (fc->e[k].expected >= s->p.spec_min_expected) {
			s->want += fc->e[k].n_blocks;
			if (fc->e[k].n_blocks > s->longest)
				s->longest = fc->e[k].n_blocks;
		}
	for (size_t k = 0; fc && k < fc->n; k++) {
		const pol_fc_t *f = &fc->e[k];
		if (!f->n_blocks || f->expected < s->p.spec_min_expected)
			continue;
		sp_track_t *t = sp_track_get(s, f->blocks, f->n_blocks, now);
		if (!t || ((double)f->n_blocks > max_cap && sp_over_budget(s, a, f, max_cap)))
			return err_set(e, KS_ENOMEM, "out of memory");
		t->seen_ns = now;
		if (sp_consider(s, v, f, t, &nc) ||
		    (s->p.spec_decode_targets && sp_consider_decode(s, v, f, &nc)))
			return err_set(e, KS_ENOMEM, "out of memory");
	}
	if (nc > 1)
		qsort(s->c, nc, sizeof *s->c, cand_cmp);
	/* triggers: forecast entries that got at least one copy this tick */
	if (fc && VEC_GROW(s->hit, s->cap_hit, fc->n, fc->n))
		return err_set(e, KS_ENOMEM, "out of memory");
	if (fc && fc->n)
		memset(s->hit, 0, fc->n);
	for (size_t i = 0; i < nc; i++) {
		const sp_cand_t *c = &s->c[i];
		if ((double)(s->spec_plan[c->dst] + c->miss) > sp_budget(s, c->dst)) {
			if (a->stats)
				pol_spec_refused(a->stats, POL_REFUSED_VRAM);
			continue;
		}
		double bytes = (double)c->miss * (double)v->block_bytes;
		/* a copy larger than the bucket goes when the bucket is full and
		 * leaves a debt, so big prefixes are rate-limited, not starved */
		if (s->bw_Bps > 0 && bytes > s->tokens &&
		    s->tokens < s->bw_Bps * s->p.spec_bw_burst_s) {
			if (a->stats)
				pol_spec_refused(a->stats, POL_REFUSED_BW);
			continue;
		}
		uint64_t id;
		int rc = a->copy(a->ctx, c->f->blocks, c->copy_n, c->src, c->dst, POL_BG, &id);
		if (rc < 0)
			return err_set(e, rc, "copy request failed");
		if (rc == POL_COPY_REFUSED)
			continue; /* retried next tick while still forecast */
		if (a->mark_spec)
			a->mark_spec(a->ctx, c->dst, c->f->blocks, c->copy_n);
		/* score: the routers weigh the copy as a holder from now on */
		if (s->p.spec_route_hint == SP_HINT_SCORE && a->announce &&
		    a->announce(a->ctx, c->dst, c->f->blocks, c->copy_n))
			return err_set(e, KS_ENOMEM, "out of memory");
		if (s->bw_Bps > 0)
			s->tokens -= bytes;
		s->spec_plan[c->dst] += c->miss;
		size_t k = (size_t)(c->f - fc->e);
		if (a->stats && !s->hit[k])
			a->stats->triggers++;
		s->hit[k] = 1;
		if (VEC_GROW(s->fl, s->cap_fl, s->n_fl + 1, 64))
			return err_set(e, KS_ENOMEM, "out of memory");
		s->fl[s->n_fl++] = (sp_flight_t){id, c->f->blocks[c->f->n_blocks - 1],
		                                 c->f->n_blocks, c->dst, c->miss};
	}
	return 0;
}

static void sp_on_copy_end(void *st, uint64_t id, int landed)
{
	sp_state_t *s = st;
	for (size_t i = 0; i < s->n_fl; i++)
		if (s->fl[i].id == id) {
			/* a decode replica is no routing target (the hint's trigger) */
			sp_track_t *t = landed && s->fl[i].dst < s->n_inst
			                    ? sp_track_find(s, s->fl[i].key, s->fl[i].n)
			                    : NULL;
			if (t)
				t->replicated = 1;
			s->fl[i] = s->fl[--s->n_fl];
			return;
		}
}

/* The longest prefix of r that one of our copies brought and that is
 * still tracked; 0 if none. */
static uint32_t sp_replicated_len(const sp_state_t *s, const pol_req_t *r)
{
	for (uint32_t j = r->n_blocks; s->n_tr && j > 0; j--) {
		const sp_track_t *t = sp_track_find(s, r->blocks[j - 1], j);
		if (t && t->replicated)
			return j;
	}
	return 0;
}

/* Where each request of a tracked prefix went, and whether our hint sent it. */
static int sp_on_route(void *st, const pol_view_t *v, const pol_actions_t *a, const pol_req_t *r,
                       uint32_t inst, err_t *e)
{
	(void)e;
	sp_state_t *s = st;
	uint32_t hinted = s->hint_set && s->hint_req == r->id && s->hint_inst == inst;
	s->hint_set = 0;
	if (s->p.spec_route_hint == SP_HINT_SCORE && a->stats) {
		/* score: the router's own choice of a warm holder of a replicated
		 * prefix is what spec.hint_routed counts in this mode */
		uint32_t len = sp_replicated_len(s, r);
		if (len && inst < v->n_inst && v->match(v->ctx, inst, r->blocks, len) >= len)
			a->stats->hint_routed++;
	}
	for (uint32_t j = 0; s->n_tr && j < r->n_blocks; j++) {
		sp_track_t *t = sp_track_find(s, r->blocks[j], j + 1);
		if (!t)
			continue;
		t->hist[t->hist_at] = inst << 1 | hinted;
		t->hist_at = (t->hist_at + 1) % SP_HIST;
		if (t->hist_n < SP_HIST)
			t->hist_n++;
	}
	return 0;
}

static int sp_route_hint(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst)
{
	sp_state_t *s = st;
	if (s->p.spec_route_hint != SP_HINT_OVERRIDE)
		return 0;
	uint32_t len = sp_replicated_len(s, r);
	if (!len)
		return 0;
	uint32_t ties = 0, nk;
	pol_inst_t best, cur;
	/* len >= 1: only the candidates can hold it, in the same index order */
	const uint32_t *ck = pol_view_scan(v, r->blocks, len, &nk);
	for (uint32_t j = 0; j < nk; j++) {
		uint32_t i = ck ? ck[j] : j;
		if (v->match(v->ctx, i, r->blocks, len) < len)
			continue;
		v->inst(v->ctx, i, &cur);
		/* -1: cur less busy than best (load, then queued prefill); 0: as busy */
		int c = !ties || pol_inst_busier(&best, &cur, 1) ? -1 : pol_inst_busier(&cur, &best, 1);
		/* equal load: each of the k tied instances kept with probability 1/k */
		if (c < 0 || (c == 0 && gsl_rng_uniform_int(s->rng, ties + 1) == 0)) {
			best = cur;
			*inst = i;
		}
		ties = c < 0 ? 1 : ties + (c == 0);
	}
	if (!ties)
		return 0; /* no warm copy left */
	s->hint_req = r->id;
	s->hint_inst = *inst;
	s->hint_set = 1;
	return 1;
}

const struct pol_replication_ops pol_repl_speculative = {
    .base = {POL_ABI_VERSION, POL_REPLICATION, "speculative",
             "Forecast-driven speculative replication: top forecast prefixes x target "
             "instances, each accepted only if p_use x time saved >= spec_payback x copy "
             "time, issued best ratio first within a VRAM budget (spec_vram_frac: a share of "
             "each KV pool, or auto: room for the forecast's prefixes within "
             "spec_vram_cap_frac) and a bandwidth budget (token bucket of spec_bw_gbps); "
             "p_use comes from "
             "where the prefix's recent requests were routed; stale in-flight copies are "
             "cancelled; requests of a replicated prefix go to its least busy warm instance "
             "(spec_route_hint = override) or to the routing policy's choice with the replicas "
             "counted as holders in its view (score).",
             POL_PARAMS(sp_params, sp_params_t), sp_init, sp_free},
    .timing = sp_timing,
    .on_route = sp_on_route,
    .on_tick = sp_on_tick,
    .on_copy_end = sp_on_copy_end,
    .route_hint = sp_route_hint,
};
