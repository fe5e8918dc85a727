/* pol — policy families, the read-only cluster view they decide on, the
 * actions they may ask for, and the registry (built-ins + dlopen plugins).
 *
 * A policy is a `const struct pol_<family>_ops` table that starts with a
 * pol_base_t (ABI version, family, name, doc, parameter schema, init/free)
 * followed by the family's hooks, plus an opaque state made by init.
 * Parameters are typed keys (cfg_tkey_t, sim/base/cfg.h) in section
 * "policy.<family>" with owner = policy name, each with the offset of its
 * field in the policy's own params struct (params_size bytes). init receives
 * that struct, filled from a config (pol_params_from_cfg) or from defaults +
 * "k=v,k=v" overrides (pol_params_init), and reads its fields: no lookups by
 * name.
 *
 * Units: time int64_t ns, sizes bytes, token counts uint64_t, block counts
 * uint32_t. Prefixes are arrays of chained block ids: blocks[i] names the
 * whole prefix up to and including block i, so blocks[0..n) is the prefix
 * of n blocks and blocks[n-1] alone identifies it.
 *
 * Ownership: the simulator owns the view, the request and every array it
 * passes; a policy copies what it keeps. Arrays a policy returns (forecast
 * entries) are owned by its state and valid until its next call.
 * Errors: hooks that can fail return 0 or a negative KS_E* code and fill
 * err_t; POL_REJECT / POL_COPY_REFUSED are positive, non-error outcomes.
 *
 * How the simulator drives the families (one pol_handle_t per family per
 * run, each with its own seed derived from the master seed):
 *   arrival r:  inst = repl.route_hint(r) when it returns 1, else
 *               routing.route(r) (POL_REJECT: rejected at once);
 *               admission.admit(r, inst) (POL_REJECT: rejected);
 *               repl.on_route(r, inst); pred.observe({r.arrival, r.blocks,
 *               inst}) (inst -1 for a rejected request: it is still demand).
 *   request life (predictor tables of version >= 4 with on_request, fed
 *               when observe is): pred.on_request(ROUTED) right after
 *               observe for a routed request (its id, session and output
 *               ids), STARTED when it is first admitted to its instance's
 *               running batch (it leaves the waiting queue: its prefill
 *               starts; an idle instance admits it inside the arrival, so
 *               STARTED may come before ROUTED), ENDED when its result row
 *               is written (completed, rejected after routing, or still in
 *               the system at the end); each once per request.
 *   Hooks documented "may be NULL" are skipped when NULL.
 *   peek:       when pred.peek_ahead_ns() > 0, every trace request is passed
 *               to pred.peek (inst -1) that many ns before it arrives (oracle);
 *               a closed-loop run (trace.gen = sessions) has no trace ahead
 *               and refuses such a predictor.
 *   tick:       every repl.timing().tick_ns > 0: fc = pred.forecast(now,
 *               timing.horizon_ns); repl.on_tick(fc). A replication policy
 *               whose timing has horizon_ns 0 ignores forecasts, so the
 *               simulator may pass NULL and skip the predictor entirely.
 *   copies:     repl hooks call pol_actions_t.copy; the simulator refuses
 *               blocks that do not exist or are not computed at the source
 *               (causality is the simulator's; policies retry later) unless
 *               it defers the copy until they are (view.match_computing set),
 *               and calls repl.on_copy_end(id, landed) for every accepted copy
 *               (landed 0: cancelled, also when a deferred copy's source is
 *               dropped before it was computed).
 *   eviction:   the KV store orders evictable blocks by pol_evict_cmp.
 *   transfer:   background copies follow xfer.mode(&mode, &param).
 *   accounting: the simulator fills a pol_spec_stats_t (replication policies
 *               add triggers through pol_actions_t.stats) and reports
 *               pol_spec_metrics in the summary.
 */
#ifndef KVSIM_POL_H
#define KVSIM_POL_H

#include <stddef.h>
#include <stdint.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"

/* Version 1: the tables below. A table whose base.version is greater than
 * the host's is refused; later versions only append hooks (SQLite iVersion
 * rule), so hooks of version N are read only when base.version >= N.
 * Version 2 appends pol_view_t.match_host and held_blocks; the tables are
 * unchanged, so version 1 tables load as before (the host passes the view
 * by pointer and a version 1 policy never reads past its old end).
 * Version 3 changes pol_base_t: params are typed keys (cfg_tkey_t), the
 * table says params_size, and init receives the filled params struct. The
 * layout of every table moved, so tables older than POL_ABI_MIN are refused
 * with a message to rebuild them.
 * Version 4 appends pol_predictor_ops.on_request, read only from tables of
 * version >= 4 (older ones load as before).
 * Version 5 appends pol_predictor_ops.min_blocks, read only from tables of
 * version >= 5 (older ones report prefixes of any length). */
#define POL_ABI_VERSION 5
#define POL_ABI_MIN 3

typedef enum pol_family {
	POL_PREDICTOR,
	POL_REPLICATION,
	POL_ROUTING,
	POL_EVICTION,
	POL_TRANSFER,
	POL_ADMISSION,
	POL_NFAMILY
} pol_family_t;

/* "predictor", "replication", ...; NULL when out of range. */
const char *pol_family_name(pol_family_t f);
/* The config section, "policy.<family>". */
const char *pol_family_section(pol_family_t f);
/* 0 and *f set, or KS_EINPUT. */
int pol_family_parse(const char *s, pol_family_t *f, err_t *e);

enum { POL_ACCEPT = 0, POL_REJECT = 1 };        /* route / admit */
enum { POL_COPY_OK = 0, POL_COPY_REFUSED = 1 }; /* pol_actions_t.copy */

/* ---- the read-only view -------------------------------------------------- */

/* One instance's state at view->now. */
typedef struct pol_inst {
	uint32_t node;
	uint32_t waiting, running; /* requests queued / in the running batch */
	uint64_t prefill_tokens;   /* prompt tokens queued, not yet computed */
	uint64_t decode_tokens;    /* context tokens of requests decoding */
	uint64_t kv_cap_blocks;    /* KV pool capacity */
	uint64_t kv_used_blocks;   /* resident (in use + cached + speculative) */
	uint64_t kv_spec_blocks;   /* speculative replicas not yet used */
	int64_t queue_delay_ns;    /* estimated wait before a new prefill starts */
} pol_inst_t;

/* Function pointers + ctx, so the simulator answers from its live state
 * without refreshing arrays. Every function up to xfer_ns is required.
 * Routing policies get the routers' view (policy.routing.view): "computed"
 * matches blocks whose KV exists or is arriving by a copy (a replica in
 * flight counts; a prefill still running does not); "routed" matches the
 * routers' own approximate prefix tree of what they sent where (pol_rview);
 * "events" matches a per-instance index fed by the instances' KV events,
 * delayed, batched, lossy or approximate (the simulator's sim_rview.h).
 * With router replicas the view is the deciding replica's own.
 * The other families match KV that exists (copies need it at the source). */
typedef struct pol_view {
	void *ctx;
	uint32_t n_inst;
	uint32_t block_tokens; /* tokens per KV block */
	uint64_t block_bytes;  /* bytes per KV block, whole instance (all TP shards) */
	int64_t (*now)(void *ctx);
	void (*inst)(void *ctx, uint32_t i, pol_inst_t *out);
	/* Longest prefix of blocks[0..n) resident and computed on instance i.
	 * Every match function of a view (match, match_host, match_computing)
	 * counts the leading blocks that each pass a test of that block alone,
	 * so match(ctx, i, blocks + k, 1) says whether blocks[k] passes
	 * (pol_view_holds relies on it). */
	uint32_t (*match)(void *ctx, uint32_t i, const uint64_t *blocks, uint32_t n);
	/* Prefill time on i for new_tokens given cached_tokens already present. */
	int64_t (*prefill_ns)(void *ctx, uint32_t i, uint64_t new_tokens, uint64_t cached_tokens);
	/* Copy time of n_blocks from src to dst at current link rates. */
	int64_t (*xfer_ns)(void *ctx, uint32_t src, uint32_t dst, uint32_t n_blocks);
	/* ABI 2, appended; NULL in views made by code built against ABI 1.
	 * match_host: longest leading run of blocks[0..n) each matched on
	 * instance i (as match does) or held in its node's host tier (fall back
	 * to match). held_blocks: the blocks match reads from on i, the size of
	 * the routers' tree in the routed view, resident KV blocks otherwise
	 * (fall back to pol_inst_t.kv_used_blocks). */
	uint32_t (*match_host)(void *ctx, uint32_t i, const uint64_t *blocks, uint32_t n);
	uint64_t (*held_blocks)(void *ctx, uint32_t i);
	/* Appended, may be NULL: longest prefix of blocks[0..n) on instance i
	 * that is computed or still being computed there. The simulator sets
	 * it only when it defers copies from such a source (kvcache.
	 * copy_deferred): a copy asked for from it is then accepted and starts
	 * when the source has computed it. */
	uint32_t (*match_computing)(void *ctx, uint32_t i, const uint64_t *blocks, uint32_t n);
	/* Appended, may be NULL (then scan every instance): the instances on
	 * which match (or match_computing) can find at least one block of
	 * blocks[0..n), ascending,
	 * *count of them; a superset (some may match nothing), valid until the
	 * policy returns. Its cost grows with those instances, not with n_inst:
	 * a policy that only cares where a prefix is held loops over these. */
	const uint32_t *(*candidates)(void *ctx, const uint64_t *blocks, uint32_t n,
	                              uint32_t *count);
	/* Appended, may be NULL (then read inst for every instance): the
	 * instances whose load (waiting + running, pol_inst_load) is the least,
	 * *count >= 1 of them in no particular order, valid until the policy
	 * returns; *min_load is their load and *max_load the largest over all
	 * instances. O(1): the simulator keeps the loads grouped on change, so
	 * a least-load choice costs nothing per instance. */
	const uint32_t *(*least_loaded)(void *ctx, uint32_t *count, uint64_t *min_load,
	                                uint64_t *max_load);
	/* Appended, 0 in views without one: the decode pool of a disaggregated
	 * cluster, instances n_inst .. n_inst + n_decode - 1. inst and match
	 * answer for them; a background copy (speculative pre-placement) may
	 * name one as dst, nothing else may name them. */
	uint32_t n_decode;
} pol_view_t;

/* A view's match function (pol_view_t.match and its kin). */
typedef uint32_t (*pol_match_fn)(void *ctx, uint32_t i, const uint64_t *blocks, uint32_t n);

/* Whether match finds all of blocks[0..n) on i (1 when n is 0): the last
 * block first, one lookup where it is missing, before the whole prefix. */
int pol_view_holds(const pol_view_t *v, pol_match_fn match, uint32_t i, const uint64_t *blocks,
                   uint32_t n);

/* Best match over all instances: blocks matched, *inst = lowest index among
 * the best (UINT32_MAX when no instance matches a block). The index is a
 * copy source for replication; routers should not let it decide between
 * instances (the built-in ones break ties by load, then at random). */
uint32_t pol_view_best_match(const pol_view_t *v, const uint64_t *blocks, uint32_t n,
                             uint32_t *inst);
/* The same over the candidates ck[0..nk) (pol_view_scan; NULL: instances
 * 0..nk-1) by match, against an incumbent: returns the longest match above
 * best, *inst the first candidate with it, or best and *inst unchanged
 * when none beats it. One lookup (block best) rules out most candidates. */
uint32_t pol_view_best_of(const pol_view_t *v, pol_match_fn match, const uint32_t *ck,
                          uint32_t nk, const uint64_t *blocks, uint32_t n, uint32_t best,
                          uint32_t *inst);
/* Instances holding at least min_blocks of blocks[0..n) (min_blocks >= 1):
 * writes up to cap indices to out, in index order, returns how many hold it. */
uint32_t pol_view_holders(const pol_view_t *v, const uint64_t *blocks, uint32_t n,
                          uint32_t min_blocks, uint32_t *out, uint32_t cap);

/* ---- requests and actions ------------------------------------------------ */

typedef struct pol_req {
	uint64_t id;
	int64_t arrival_ns;
	const uint64_t *blocks; /* chained ids of the prompt's full blocks */
	uint32_t n_blocks;
	uint32_t input_tokens, output_tokens;
	int64_t slo_ttft_ns; /* 0: none */
} pol_req_t;

/* r's matched blocks m[i] on every instance of v (m of v->n_inst) through
 * match (v->match, v->match_host, ...); returns the largest. With match ==
 * v->match only v's candidates are asked (the rest match nothing). */
uint32_t pol_view_match_all(const pol_view_t *v, const pol_req_t *r,
                            uint32_t (*match)(void *, uint32_t, const uint64_t *, uint32_t),
                            uint32_t *m);
/* The instances h of v with m[h] == rbest, ascending, into holders (room
 * for v->n_inst); their count (0 when rbest is 0). */
uint32_t pol_view_best_holders(const pol_view_t *v, const uint32_t *m, uint32_t rbest,
                               uint32_t *holders);
/* The TTFT that min_ttft minimises for r on instance i, ns (Mooncake,
 * Qin et al., FAST '25, Algorithm 1): queue_delay_ns + min(prefill with
 * i's own prefix m[i], transfer of the best prefix rbest from its nearest
 * holder + prefill with it). m: r's matched blocks on every instance of v;
 * rbest: their maximum; holders[0..n_holders): pol_view_best_holders's
 * (found once per request, so each instance costs O(holders), not O(n)).
 * The decision trace (output.decisions) reads it too. */
int64_t pol_view_ttft_ns(const pol_view_t *v, const pol_req_t *r, const uint32_t *m,
                         uint32_t rbest, const uint32_t *holders, uint32_t n_holders, uint32_t i,
                         int64_t queue_delay_ns);
/* pol_view_ttft_ns for r on every instance of v: m[i] = r's matched blocks
 * on i (v->match), est[i] = the estimate with i's queue delay, holders
 * scratch room (all three arrays of v->n_inst). Returns the instance of the
 * lowest estimate (the lowest index among equals; 0 when v has none). */
uint32_t pol_view_ttft_all(const pol_view_t *v, const pol_req_t *r, uint32_t *m, int64_t *est,
                           uint32_t *holders);
/* The estimate slo_reject compares with the SLO, ns: instance i's queue
 * delay + prefill of r after i's own matched prefix (*matched blocks, when
 * matched is not NULL). The decision trace's admission rows read it too. */
int64_t pol_view_local_ttft_ns(const pol_view_t *v, const pol_req_t *r, uint32_t i,
                               uint32_t *matched);

typedef enum pol_class { POL_FG = 0, POL_BG = 1 } pol_class_t;

typedef struct pol_spec_stats pol_spec_stats_t;

/* What the simulator does on a policy's behalf. */
typedef struct pol_actions {
	void *ctx;
	/* Copy blocks[0..n) from src to dst (blocks already at dst are not moved).
	 * POL_COPY_OK with *copy_id set, POL_COPY_REFUSED when a block is absent
	 * or not yet computed at src (retry later), or a negative KS_E*. */
	int (*copy)(void *ctx, const uint64_t *blocks, uint32_t n, uint32_t src, uint32_t dst,
	            pol_class_t cls, uint64_t *copy_id);
	/* Cancels an accepted copy that has not landed; 0 or negative. */
	int (*cancel)(void *ctx, uint64_t copy_id);
	/* Marks blocks[0..n) at inst (resident or in flight) as speculative
	 * replicas: evictable first by spec_first, counted in pol_spec_stats. */
	int (*mark_spec)(void *ctx, uint32_t inst, const uint64_t *blocks, uint32_t n);
	/* Policies add their triggers here; may be NULL. */
	pol_spec_stats_t *stats;
	/* Appended: tells the routers' view that inst holds or receives
	 * blocks[0..n) (a copy the policy made), as a routing decision to inst
	 * would: a routed view (which otherwise learns only where requests were
	 * sent) counts it from now on; the computed and events views already
	 * see copies (in flight, resp. once landed), so nothing changes there.
	 * 0 or KS_ENOMEM. May be NULL. */
	int (*announce)(void *ctx, uint32_t inst, const uint64_t *blocks, uint32_t n);
} pol_actions_t;

/* ---- parameters ---------------------------------------------------------- */

struct pol_base;

/* A policy's filled params struct and the keys that describe it. */
typedef struct pol_params {
	const cfg_tkey_t *keys; /* the policy's (not owned) */
	size_t n;
	void *data; /* its params struct, params_size bytes (owned); NULL: none */
} pol_params_t;

/* Defaults, then "name=value,name=value" overrides (NULL or ""), each
 * checked for type, range and choices (cfg_field_set's wording). KS_EINPUT
 * names the bad key. */
int pol_params_init(pol_params_t *p, const struct pol_base *ops, const char *overrides, err_t *e);
int pol_params_set(pol_params_t *p, const char *name, const char *value, err_t *e);
/* The values of the policy's keys in a finalized cfg_t (cfg_fill). */
int pol_params_from_cfg(pol_params_t *p, const struct pol_base *ops, const cfg_t *c, err_t *e);
void pol_params_free(pol_params_t *p);
/* A value by name, for inspection (tests, listings); policies read their
 * struct. A name not among the keys is a programming error (assert). */
double pol_param_num(const pol_params_t *p, const char *name);
const char *pol_param_str(const pol_params_t *p, const char *name);

/* ---- the tables ---------------------------------------------------------- */

typedef struct pol_base {
	int version; /* POL_ABI_VERSION the table was built against */
	pol_family_t family;
	const char *name;        /* [a-z0-9_]+, unique within the family */
	const char *doc;         /* one paragraph, with the source it follows */
	const cfg_tkey_t *params; /* section "policy.<family>", owner = name */
	size_t n_params;
	size_t params_size; /* sizeof the struct the params' fields are in (0: none) */
	/* May be NULL (stateless). params: the filled params struct (NULL when
	 * params_size is 0), owned by the handle and valid until pol_close;
	 * seed: this policy's own GSL stream seed. */
	int (*init)(const void *params, uint64_t seed, void **state, err_t *e);
	void (*free)(void *state);
} pol_base_t;

/* predictor ---------------------------------------------------------------- */

typedef struct pol_arrival {
	int64_t t_ns;
	const uint64_t *blocks;
	uint32_t n_blocks;
	int32_t inst; /* routed instance; -1 when unknown (peek) */
} pol_arrival_t;

/* A routed request's later life, for predictors that read the serving
 * system's own state (ABI 4). */
typedef enum pol_req_phase {
	POL_REQ_ROUTED,  /* arrived and was routed to inst (after observe) */
	POL_REQ_STARTED, /* first admitted to the running batch: left the queue */
	POL_REQ_ENDED    /* its result row is out: completed or not (completed) */
} pol_req_phase_t;

typedef struct pol_req_event {
	pol_req_phase_t phase;
	int64_t t_ns;
	uint64_t id;   /* the request's (pol_req_t.id) */
	int32_t inst;  /* the instance it was routed to */
	int completed; /* ENDED: 1 when it completed (its output exists) */
	/* ROUTED only (NULL and 0 otherwise): the prompt's chained ids
	 * blocks[0..n_blocks), then blocks[n_blocks .. n_blocks + n_out_blocks)
	 * those of the full blocks ending in its output (traces/tr.h: with a
	 * session they continue the session's history, else they are this
	 * request's own), and its trace session (0: none). */
	const uint64_t *blocks;
	uint32_t n_blocks, n_out_blocks;
	uint64_t session_id;
} pol_req_event_t;

#define POL_LIKELY_MAX 4

/* One forecast prefix: requests whose prompt starts with blocks[0..n). */
typedef struct pol_fc {
	const uint64_t *blocks;
	uint32_t n_blocks;
	double expected;   /* expected arrivals in (now, now + horizon] */
	int64_t first_ns;  /* expected first arrival (now when unknown) */
	uint32_t n_likely; /* instances those requests will likely reach */
	uint32_t likely[POL_LIKELY_MAX];
} pol_fc_t;

typedef struct pol_forecast {
	const pol_fc_t *e; /* sorted by expected, largest first */
	size_t n;
	const double *inst_expected; /* per instance arrivals in the horizon; may be NULL */
	uint32_t n_inst;
} pol_forecast_t;

struct pol_predictor_ops {
	pol_base_t base; /* observe and forecast are required */
	int (*observe)(void *st, const pol_arrival_t *a, err_t *e);
	/* How far ahead the simulator must feed peek; NULL or <= 0: no peek
	 * (peek may then be NULL). */
	int64_t (*peek_ahead_ns)(const void *st);
	int (*peek)(void *st, const pol_arrival_t *future, err_t *e);
	int (*forecast)(void *st, int64_t now, int64_t horizon_ns, pol_forecast_t *out, err_t *e);
	/* ABI 4, appended, may be NULL: a routed request left the waiting
	 * queue or ended (see "request life" above). Read only when
	 * base.version >= 4. */
	int (*on_request)(void *st, const pol_req_event_t *ev, err_t *e);
	/* ABI 5, appended, may be NULL (1): the shortest prefix forecast
	 * reports, in blocks (its own *_min_blocks parameter), which the
	 * forecasts' scoring counts from. Read only when base.version >= 5. */
	uint32_t (*min_blocks)(const void *st);
};

/* replication -------------------------------------------------------------- */

typedef struct pol_repl_timing {
	int64_t tick_ns;    /* on_tick period; 0: never */
	int64_t horizon_ns; /* forecast horizon asked of the predictor */
} pol_repl_timing_t;

struct pol_replication_ops {
	pol_base_t base; /* timing is required; the other hooks may be NULL */
	pol_repl_timing_t (*timing)(const void *st);
	/* After routing: may issue copies (foreground for on-demand fetches). */
	int (*on_route)(void *st, const pol_view_t *v, const pol_actions_t *a, const pol_req_t *r,
	                uint32_t inst, err_t *e);
	int (*on_tick)(void *st, const pol_view_t *v, const pol_actions_t *a,
	               const pol_forecast_t *fc, err_t *e);
	void (*on_copy_end)(void *st, uint64_t copy_id, int landed);
	/* 1 and *inst when the policy wants this request on a warm copy it made;
	 * 0 to let the routing policy decide. Called once per arrival, before
	 * routing (it may update the policy's state); a hinted request still
	 * goes through admission, and the admitted ones are counted
	 * (spec.hint_routed). May be NULL. */
	int (*route_hint)(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst);
};

/* routing ------------------------------------------------------------------- */

struct pol_routing_ops {
	pol_base_t base;
	/* POL_ACCEPT with *inst set, POL_REJECT (early rejection), or < 0. */
	int (*route)(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t *inst);
};

/* eviction ------------------------------------------------------------------ */

typedef struct pol_block_meta {
	int64_t last_access_ns;
	uint32_t hits;          /* requests that reused the block */
	uint32_t spec_unused;   /* 1: speculative replica no request has used */
	int64_t recompute_ns;   /* cost to recompute the block's KV */
	double predicted_reuse; /* expected future uses; < 0 when unknown */
} pol_block_meta_t;

/* priority() depends only on the metadata (never on now), so a heap keyed
 * on it stays valid until the block's metadata changes. Lowest goes first;
 * ties are broken by older last_access_ns (pol_evict_cmp). */
struct pol_eviction_ops {
	pol_base_t base;
	double (*priority)(const void *st, const pol_block_meta_t *m);
};
/* < 0 when a should be evicted before b, > 0 after, 0 equal. */
int pol_evict_cmp(const struct pol_eviction_ops *ops, const void *st, const pol_block_meta_t *a,
                  const pol_block_meta_t *b);
/* Whether ops is the built-in lru policy, whose order (last access first)
 * the KV store keeps in O(1) without calling priority. */
int pol_eviction_is_lru(const struct pol_eviction_ops *ops);

/* transfer scheduling -------------------------------------------------------- */

typedef enum pol_xfer_mode {
	POL_XFER_IMMEDIATE,   /* background flows start at once, share max-min */
	POL_XFER_IDLE_WINDOW, /* param: run only while link fg utilisation < param;
	                       * 0: [network] idle_threshold (the built-in's) */
	POL_XFER_RATE_CAP     /* param: background capped at param x link rate */
} pol_xfer_mode_t;

struct pol_transfer_ops {
	pol_base_t base;
	void (*mode)(const void *st, pol_xfer_mode_t *mode, double *param);
};

/* admission ------------------------------------------------------------------ */

struct pol_admission_ops {
	pol_base_t base;
	/* POL_ACCEPT or POL_REJECT for r routed to inst. */
	int (*admit)(void *st, const pol_view_t *v, const pol_req_t *r, uint32_t inst);
};

/* ---- registry and plugins ---------------------------------------------------- */

typedef struct pol_reg_entry {
	pol_family_t family;
	const char *name;
	const pol_base_t *ops;
} pol_reg_entry_t;

/* The built-in table, terminated by {POL_NFAMILY, NULL, NULL}. */
extern const pol_reg_entry_t pol_builtins[];

typedef struct pol_registry pol_registry_t;

pol_registry_t *pol_registry_new(void); /* built-ins; NULL on ENOMEM */
/* dlcloses plugins: free it after every cfg_schema and handle using them. */
void pol_registry_free(pol_registry_t *r);
/* Validates (version, family, name, params section/owner/unique names,
 * fields inside params_size) and adds a table; KS_EINPUT on a bad or
 * duplicate table. */
int pol_registry_add(pol_registry_t *r, const pol_base_t *ops, err_t *e);
/* dlopen(path) and call its POL_PLUGIN_SYMBOL. */
int pol_registry_load(pol_registry_t *r, const char *path, err_t *e);
/* r == NULL searches the built-ins only. NULL when absent. */
const pol_base_t *pol_find(const pol_registry_t *r, pol_family_t f, const char *name);
size_t pol_count(const pol_registry_t *r, pol_family_t f);
const pol_base_t *pol_at(const pol_registry_t *r, pol_family_t f, size_t i);
/* "a,b,c" of a family's names (malloc'd; caller frees). */
char *pol_names(const pol_registry_t *r, pol_family_t f);

/* What a plugin's registration function receives. */
typedef struct pol_host_api {
	int version; /* host POL_ABI_VERSION; a plugin needing more returns < 0 */
	pol_registry_t *reg;
	int (*add)(pol_registry_t *reg, const pol_base_t *ops, err_t *e);
	err_t *err; /* where add and the plugin report */
} pol_host_api_t;

#define POL_PLUGIN_SYMBOL "kvsim_plugin_register"
/* int kvsim_plugin_register(const pol_host_api_t *api): 0 or < 0. */
typedef int (*pol_plugin_register_fn)(const pol_host_api_t *api);

/* ---- an opened policy --------------------------------------------------------- */

typedef struct pol_handle {
	const pol_base_t *ops; /* cast to the family's struct */
	void *state;
	pol_params_t params;
} pol_handle_t;

/* Finds name in family, resolves parameters (defaults + overrides) and inits. */
int pol_open(const pol_registry_t *r, pol_family_t f, const char *name, const char *overrides,
             uint64_t seed, pol_handle_t *h, err_t *e);
/* The same with name and parameters from cfg section "policy.<family>". */
int pol_open_cfg(const pol_registry_t *r, pol_family_t f, const cfg_t *c, uint64_t seed,
                 pol_handle_t *h, err_t *e);
void pol_close(pol_handle_t *h);
/* What a hook of ops answered, checked (the simulator's every call of an
 * int hook, and init's): rc when it is one of the hook's answers (0 to
 * max_ok) or a KS_E* code, e filled with "<family> policy '<name>': <hook>
 * failed (<code name>) and gave no reason" when the hook left e empty (clear
 * it with err_clear before the call); any other value is KS_ERUNTIME naming
 * the policy, the hook and the value. */
int pol_hook_rc(const pol_base_t *ops, const char *hook, int rc, int max_ok, err_t *e);

/* One opened policy per family, as a run uses them. */
typedef struct pol_set {
	pol_handle_t h[POL_NFAMILY];
} pol_set_t;

/* The seed of family f's own GSL stream, derived from the master seed
 * (splitmix64), so adding or changing one policy never shifts another's. */
uint64_t pol_seed(uint64_t master, pol_family_t f);
/* Opens all six families from cfg sections policy.<family>; on error
 * nothing stays open. */
int pol_set_open_cfg(const pol_registry_t *r, const cfg_t *c, uint64_t master_seed, pol_set_t *s,
                     err_t *e);
void pol_set_close(pol_set_t *s);
#define POL_SET_OPS(s, fam, type) ((const struct type *)(const void *)(s)->h[fam].ops)

/* ---- the routers' approximate view (policy.routing.view = routed) ---------------
 * sgl-router's cache_aware policy (sgl-router/src/policies/cache_aware.rs)
 * keeps one radix tree per worker, inserts a request's text when it routes
 * it, matches new requests against those trees instead of the workers'
 * caches, and evicts least recently used leaves past max_tree_size every
 * eviction_interval_secs (here at once, on insert). Over chained block ids
 * a tree is a set of ids: one set per instance, at most cap_blocks ids,
 * least recently routed out first. An insert refreshes the ids it holds,
 * then touches the path deepest block first, so a block is always more
 * recent than its descendants and eviction takes leaves (each set stays
 * prefix-closed, like the radix tree). The simulator owns one, inserts every
 * request it routes and answers the routers' match from it. Memory grows
 * with use up to n_inst x cap_blocks ids. */
typedef struct pol_rview pol_rview_t;

pol_rview_t *pol_rview_new(uint32_t n_inst, uint32_t cap_blocks); /* NULL on ENOMEM */
void pol_rview_free(pol_rview_t *rv);
/* Inserts or refreshes blocks[0..n) on inst; 0 or KS_ENOMEM. */
int pol_rview_insert(pol_rview_t *rv, uint32_t inst, const uint64_t *blocks, uint32_t n);
/* Leading blocks of blocks[0..n) in inst's set (no refresh). */
uint32_t pol_rview_match(const pol_rview_t *rv, uint32_t inst, const uint64_t *blocks, uint32_t n);
int pol_rview_has(const pol_rview_t *rv, uint32_t inst, uint64_t id);
uint32_t pol_rview_size(const pol_rview_t *rv, uint32_t inst); /* ids held */

/* ---- config ------------------------------------------------------------------- */

/* Adds the six policy.<family> sections (key "name", the family-wide keys
 * such as [policy.routing] view, and every built-in's params). */
int pol_cfg_register(cfg_schema_t *s);
/* The policy c selects in family f ([policy.<family>] name) and the preset
 * it names ([policy] preset, "none" for none), through the keys this file
 * registers: callers name a family, not a section and key. Borrowed from c
 * (valid while it lives unchanged). */
const char *pol_cfg_name(const cfg_t *c, pol_family_t f);
const char *pol_cfg_preset(const cfg_t *c);
/* Whether the routers read the routed view ([policy.routing] view, with
 * auto = routed for cache_aware and computed for the others), and its
 * per-instance size in blocks (view_blocks; 0 = pool_blocks). */
int pol_routing_view_routed(const cfg_t *c);
uint32_t pol_routing_view_blocks(const cfg_t *c, uint32_t pool_blocks);
/* Whether the routers read the events view (view = events), and the keys of
 * that view and of router replicas ([policy.routing] event_*, index*,
 * replicas, replica_assign; their docs give the rules). */
int pol_routing_view_events(const cfg_t *c);
enum { POL_DELAY_FIXED, POL_DELAY_EXPONENTIAL, POL_DELAY_LOGNORMAL };
enum { POL_INDEX_EXACT, POL_INDEX_BLOOM, POL_INDEX_CUCKOO, POL_INDEX_TTL };
enum { POL_ASSIGN_ROUND_ROBIN, POL_ASSIGN_RANDOM };
typedef struct pol_view_params {
	double delay_ms;         /* mean delay of a message */
	int delay_dist;          /* POL_DELAY_* */
	double delay_cv;         /* lognormal: sd / mean */
	double batch_ms;         /* 0: a message per event */
	double loss;             /* per event per replica */
	int index;               /* POL_INDEX_* */
	double index_fpr;        /* bloom, cuckoo */
	double index_ttl_s;      /* ttl */
	uint64_t index_capacity; /* 0: the instance's pool */
	uint32_t replicas;       /* >= 1 */
	int assign;              /* POL_ASSIGN_* */
} pol_view_params_t;
pol_view_params_t pol_routing_view_params(const cfg_t *c);
/* After plugins load: adds their params and widens the "name" choices. Keys
 * are added by pointer, so the registry must outlive the schema. */
int pol_cfg_register_plugins(cfg_schema_t *s, const pol_registry_t *r, err_t *e);

/* Serving-framework presets ("vllm", "sglang", "trtllm", "tgi", "dynamo",
 * "llm-d", "mooncake", their -disagg variants, "btb"), chosen by key
 * `[policy] preset` (default "none"): cfg_finalize gives every key of the
 * selected preset that the user did not set the preset's value (cfg.h).
 * Each entry is {key, value, source, where}. They are data files,
 * policies/presets/NAME.ini (format: policies/README.md, "Preset files"),
 * embedded at build time. */
typedef cfg_preset_kv_t pol_preset_kv_t;
typedef cfg_preset_t pol_preset_t;
/* The built-in presets, in policies/presets/list's order, parsed on the
 * first call (any thread) and kept until exit. NULL with *n = 0 when the
 * embedded files do not parse: a programming error, told on stderr once. */
const pol_preset_t *pol_presets(size_t *n);
/* Makes [policy] preset select the built-in presets (call once every
 * module's keys are in s; cfg_schema_set_presets checks each entry against
 * the schema and names its FILE:LINE). KS_EINPUT when they do not parse. */
int pol_preset_register(cfg_schema_t *s);

/* Preset files as the build embeds them: path "policies/presets/NAME.ini"
 * (a preset), "policies/presets/shared/NAME.ini" (a part several include)
 * or "policies/presets/list" (the presets, in order), and the text. An
 * array of them ends with path NULL. */
typedef struct {
	const char *path;
	const char *text;
} pol_preset_file_t;
/* Presets parsed from such files; owns their text. */
typedef struct pol_preset_set pol_preset_set_t;
/* 0 with *out set (free with pol_preset_set_free), or KS_EINPUT with
 * "FILE:LINE: KEY: reason" in e (a key without a source, an include or a
 * shared source that is not there, an include cycle, a file the list does
 * not name, a line that is not INI) or KS_ENOMEM; *out NULL then. The
 * files must outlive the set (their paths are kept). Keys and values are
 * checked against a schema by pol_preset_set_register, not here. */
int pol_preset_set_parse(const pol_preset_file_t *files, pol_preset_set_t **out, err_t *e);
/* The presets of set (NULL: none), in the list's order. */
const pol_preset_t *pol_preset_set_list(const pol_preset_set_t *set, size_t *n);
/* cfg_schema_set_presets for [policy] preset with set's presets (kept by
 * pointer: set must outlive s). */
int pol_preset_set_register(cfg_schema_t *s, const pol_preset_set_t *set);
void pol_preset_set_free(pol_preset_set_t *set);

/* ---- speculation accounting ----------------------------------------------------- */

/* Filled by the simulator, except triggers, which replication policies add
 * through pol_actions_t.stats (the simulator sees every copy, refusal and
 * cancel through pol_actions_t, so it counts those). A replica
 * is one speculative copy of one prefix to one instance. */
struct pol_spec_stats {
	uint64_t triggers;           /* forecast entries a replication policy acted on */
	uint64_t replicas_created;   /* speculative copies that landed */
	uint64_t replicas_used;      /* ... that a request used before eviction */
	uint64_t replicas_wasted;    /* ... evicted (or left at the end) never used */
	double unused_vram_byte_s;   /* bytes x seconds held by never-used replicas */
	uint64_t bytes_fg, bytes_bg; /* copied bytes by class */
	uint64_t copies_cancelled;
	uint64_t copies_refused; /* refusals (source KV absent or not computed) */
	uint64_t warm_hits;      /* requests whose prefix was warm thanks to a replica */
	uint64_t fg_flows;       /* foreground flows that completed */
	double fg_slowdown_s;    /* sum over them of (actual - alone-on-path) completion */
	/* Appended fields (readers go by metric name, never by position). */
	uint64_t bytes_cancelled; /* of bytes_fg + bytes_bg: moved by copies later cancelled */
	/* copies_refused by reason (they sum to it): the policy's own VRAM and
	 * bandwidth budgets (counted by the policy through pol_spec_refused),
	 * no room at the target and source KV absent or not computed (counted
	 * by the simulator). A copy retried every tick counts every time. */
	uint64_t refused_vram, refused_bw, refused_room, refused_source;
	/* Distinct forecast prefixes larger than the policy's whole VRAM budget
	 * (never replicable), with the first one's size, that budget and the
	 * parameter that sets it (pol_spec_over_budget). */
	uint64_t prefix_over_budget;
	uint32_t over_budget_blocks, over_budget_cap;
	const char *over_budget_key;
	uint64_t hint_routed;        /* requests placed by repl.route_hint */
	uint64_t copies_deferred;    /* accepted while source blocks were still computing */
	uint64_t deferred_started;   /* ... whose flows started once the source was ready */
	uint64_t deferred_cancelled; /* ... cancelled before they started */
	double deferral_s;           /* sum over started ones of (flow start - request) */
};

typedef enum pol_refusal {
	POL_REFUSED_VRAM,
	POL_REFUSED_BW,
	POL_REFUSED_ROOM,
	POL_REFUSED_SOURCE
} pol_refusal_t;

/* Counts one refused copy under its reason and in copies_refused. */
void pol_spec_refused(pol_spec_stats_t *s, pol_refusal_t why);
/* Counts one more distinct prefix over budget; the first call also keeps
 * its size, the budget (blocks) and the parameter's name (static string). */
void pol_spec_over_budget(pol_spec_stats_t *s, uint32_t blocks, uint32_t cap, const char *key);

/* One block of a speculative copy (bytes, landed at landed_ns) leaves the
 * store unused (evicted, or still there at the end of the run) at now_ns:
 * its VRAM-time counts as wasted. replica_wasted: it was the last block of
 * a replica none of whose blocks any request used, so the replica counts as
 * wasted too. The one place replica waste is accounted (the run calls it
 * from its eviction hook and at the end). */
void pol_spec_block_gone(pol_spec_stats_t *s, uint64_t bytes, int64_t landed_ns, int64_t now_ns,
                         int replica_wasted);

#define POL_SPEC_N_METRICS 23
/* The summary values in a fixed order: triggers, replicas created, used,
 * wasted, waste ratio, unused VRAM (GB-s), bytes fg, bytes bg, copies
 * cancelled, refused, warm hits, fg flows, fg slowdown (s), bytes cancelled,
 * refusals by reason (vram, bw, room, source), prefixes over budget, hint
 * routed, copies deferred, deferred cancelled, mean deferral (ms). Their
 * names and units are the run's recorder's (sim/run/recorder.h, the
 * "spec." metrics in the same order). */
void pol_spec_metrics(const pol_spec_stats_t *s, double out[POL_SPEC_N_METRICS]);

#endif
