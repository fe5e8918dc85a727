/* pol_int — helpers shared by the built-in policies (not part of the
 * plugin ABI): a fair choice among equal candidates,
 * a bounded table of recently seen prefixes, a bounded table of prefix
 * groups, a map from ids, and the Hawkes/Holt maths exposed for unit tests.
 * Times in ns unless a name says _s.
 */
#ifndef KVSIM_POL_INT_H
#define KVSIM_POL_INT_H

#include <gsl/gsl_rng.h>

#include "policies/pol.h"

/* A parameter of family section fam owned by policy own, filling field at
 * (CFG_AT(kind, type, member) or CFG_AT_ENUM) of the policy's params struct. */
#define POL_KEY(fam, own, nm, ty, df, lo, hi, ch, un, dc, at)                                      \
	{                                                                                          \
		{"policy." fam, nm, ty, df, lo, hi, ch, un, dc, own}, at                           \
	}
/* The params fields of a pol_base_t: its key table and params struct type. */
#define POL_PARAMS(keys, type) keys, sizeof keys / sizeof keys[0], sizeof(type)
#define POL_NO_PARAMS NULL, 0, 0

/* Inits h with ops and the params already in h->params (registry). */
int pol_open_ops(const pol_base_t *ops, uint64_t seed, pol_handle_t *h, err_t *e);

/* A GSL stream for a policy: mt19937 seeded with seed (0 maps to 1). */
gsl_rng *pol_rng_new(uint64_t seed);
/* init and free hooks of a policy whose whole state is its stream (a
 * gsl_rng * from pol_rng_new): for ops tables of parameterless policies. */
int pol_rng_state_init(const void *params, uint64_t seed, void **state, err_t *e);
void pol_rng_state_free(void *st);
/* init of a policy whose whole state is a copy of its params struct (size
 * bytes; freed with free). 0 or KS_ENOMEM. */
int pol_copy_init(const void *params, size_t size, void **state, err_t *e);
/* The splitmix64 finaliser (Steele et al. 2014): hash of a block id. */
uint64_t pol_mix64(uint64_t x);

/* ---- fair choice among equals ----------------------------------------------
 * Routers keep the best candidate by (score, load), lower first, and break
 * the remaining ties uniformly at random from their own stream: the j-th
 * candidate equal to the kept one replaces it with probability 1/j
 * (reservoir sampling with a reservoir of one, Vitter 1985 algorithm R), so
 * no index is favoured and a draw is taken only on a tie. */
typedef struct pol_pick {
	gsl_rng *rng;
	uint32_t inst; /* UINT32_MAX until a candidate is offered */
	uint32_t ties; /* candidates equal to the kept one so far */
	double score;
	uint64_t load;
} pol_pick_t;

void pol_pick_start(pol_pick_t *p, gsl_rng *rng);
void pol_pick_offer(pol_pick_t *p, uint32_t inst, double score, uint64_t load);
/* The load routers break ties on: waiting + running requests. */
uint64_t pol_inst_load(const pol_inst_t *x);
/* Whether a carries more load than b: pol_inst_load, then (when tokens)
 * queued prefill tokens. */
int pol_inst_busier(const pol_inst_t *a, const pol_inst_t *b, int tokens);
/* Fills snap[0..n_inst) from the view and order[0..n_inst) with the
 * instances least busy first (pol_inst_busier), ties kept in index order:
 * O(n_inst log n_inst), a pass over every instance (see its callers). */
void pol_snapshot_by_load(const pol_view_t *v, pol_inst_t *snap, uint32_t *order, int tokens);
/* The instances to ask v->match (or v->match_computing) about for
 * blocks[0..n): v's candidates, ascending, or NULL with *count = n_inst
 * (then instance j is the j-th). Instances outside the candidates match
 * nothing, so a loop that skips matches of 0, or keeps the first of the
 * best in index order, gives the same answer over them in O(holders). */
const uint32_t *pol_view_scan(const pol_view_t *v, const uint64_t *blocks, uint32_t n,
                              uint32_t *count);

/* ---- prefix table ---------------------------------------------------------
 * Every block id of every observed prompt, with the time it was last seen
 * and a fixed-size payload per node. A child is never seen more recently
 * than its parent, so dropping nodes older than a cutoff keeps every kept
 * node's ancestors, and "is blocks[i] present" stays monotone in i: the
 * longest known prefix is found by binary search. Bounded: at cap nodes the
 * older half is dropped. */
typedef struct pol_ptab pol_ptab_t;

pol_ptab_t *pol_ptab_new(size_t cap, size_t payload_bytes);
void pol_ptab_free(pol_ptab_t *t);
/* Longest prefix of blocks[0..n) present (in blocks). */
uint32_t pol_ptab_match(const pol_ptab_t *t, const uint64_t *blocks, uint32_t n);
/* Last-seen time of node id, or INT64_MIN when absent. */
int64_t pol_ptab_last(const pol_ptab_t *t, uint64_t id);
/* Inserts or refreshes every node of the path at time t_ns; visit (may be
 * NULL) sees each node's payload (zeroed when new) with its depth (1-based).
 * 0 or KS_ENOMEM. */
int pol_ptab_touch(pol_ptab_t *t, const uint64_t *blocks, uint32_t n, int64_t t_ns,
                   void (*visit)(void *payload, uint32_t depth, void *arg), void *arg);
void *pol_ptab_payload(pol_ptab_t *t, uint64_t id);
size_t pol_ptab_size(const pol_ptab_t *t);

/* ---- prefix groups --------------------------------------------------------
 * A bounded set of prefixes (a group = requests sharing blocks[0..n)), each
 * with a score the owner keeps current, the instances its requests reached
 * (space-saving over POL_LIKELY_MAX slots) and an owner payload. When full,
 * adding evicts the lowest score (space-saving: the newcomer inherits it). */
typedef struct pol_group {
	uint64_t key; /* blocks[n-1] */
	uint64_t *blocks;
	uint32_t n;
	double score, err; /* err: score inherited from the evicted group */
	int64_t created_ns, last_ns;
	uint32_t n_inst;
	uint32_t inst[POL_LIKELY_MAX];
	double inst_w[POL_LIKELY_MAX];
	void *ext; /* ext_bytes of owner payload, zeroed */
} pol_group_t;

typedef struct pol_groups {
	pol_group_t *g;
	size_t n, cap, ext_bytes;
	void (*ext_free)(void *ext); /* releases what the owner hung in ext */
} pol_groups_t;

int pol_groups_init(pol_groups_t *gs, size_t cap, size_t ext_bytes, void (*ext_free)(void *));
void pol_groups_free(pol_groups_t *gs);
pol_group_t *pol_groups_find(pol_groups_t *gs, const uint64_t *blocks, uint32_t n);
/* Finds or adds blocks[0..n); NULL on ENOMEM. *evicted (may be NULL) says
 * whether another group was dropped to make room. */
pol_group_t *pol_groups_get(pol_groups_t *gs, const uint64_t *blocks, uint32_t n, int64_t t_ns,
                            int *evicted);
void pol_groups_remove(pol_groups_t *gs, size_t i);
/* Credits instance inst (ignored when < 0) with weight w. */
void pol_group_note_inst(pol_group_t *g, int32_t inst, double w);
/* Fills out->likely from the group's instances, heaviest first. */
void pol_group_likely(const pol_group_t *g, pol_fc_t *out);

/* A growable forecast buffer owned by a predictor. */
typedef struct pol_fcbuf {
	pol_fc_t *e;
	size_t n, cap;
} pol_fcbuf_t;
pol_fc_t *pol_fcbuf_push(pol_fcbuf_t *b);
/* Pushes group g's forecast: its blocks (borrowed from g), expected
 * arrivals, first arrival and likely instances. NULL on ENOMEM. */
pol_fc_t *pol_fcbuf_push_group(pol_fcbuf_t *b, const pol_group_t *g, double expected,
                               int64_t first_ns);
void pol_fcbuf_sort(pol_fcbuf_t *b); /* expected descending, then n_blocks descending */
/* Sorts b and shows its first `most` entries (all when most is 0) in out,
 * without per-instance arrivals; out borrows b's array. */
void pol_fcbuf_publish(pol_fcbuf_t *b, size_t most, pol_forecast_t *out);
void pol_fcbuf_free(pol_fcbuf_t *b);

/* ---- predictor base ---------------------------------------------------------
 * What every prefix-group predictor owns: a prefix table, its groups and
 * the forecast buffer it publishes. A predictor's state starts with one
 * (first member), so pol_pred_new allocates the whole state and
 * pol_pred_free releases it. */
typedef struct pol_pred_base {
	pol_ptab_t *tab;
	pol_groups_t gs;
	pol_fcbuf_t out;
} pol_pred_base_t;

/* A zeroed state of size bytes (>= sizeof(pol_pred_base_t)) whose leading
 * pol_pred_base_t holds a prefix table of tab_cap nodes with payload_bytes
 * each and room for group_cap groups with ext_bytes of payload (ext_free as
 * in pol_groups_init). NULL with e set to KS_ENOMEM; nothing is left
 * allocated then. */
void *pol_pred_new(size_t size, size_t tab_cap, size_t payload_bytes, size_t group_cap,
                   size_t ext_bytes, void (*ext_free)(void *), err_t *e);
/* Frees the base's members and the state itself (st from pol_pred_new; a
 * predictor's free hook when it owns nothing else). */
void pol_pred_free(void *st);

/* ---- id map -----------------------------------------------------------------
 * uint64 id -> uint32 value (any value but UINT32_MAX), open addressing with
 * linear probing and backward-shift deletion (Knuth, TAOCP vol. 3, 6.4,
 * Algorithm R), doubled at half load: O(1) expected per call. */
typedef struct pol_idmap {
	uint64_t *key;
	uint32_t *val; /* UINT32_MAX: empty slot */
	size_t n, nslot;
} pol_idmap_t;

/* 0 or KS_ENOMEM; room for cap ids before the first growth. */
int pol_idmap_init(pol_idmap_t *m, size_t cap);
void pol_idmap_free(pol_idmap_t *m);
/* 1 and *val when id is present, else 0. */
int pol_idmap_get(const pol_idmap_t *m, uint64_t id, uint32_t *val);
/* Inserts or overwrites; 0 or KS_ENOMEM (the map is then unchanged). */
int pol_idmap_put(pol_idmap_t *m, uint64_t id, uint32_t val);
/* 1 when id was removed, 0 when absent. */
int pol_idmap_del(pol_idmap_t *m, uint64_t id);

/* ---- maths ------------------------------------------------------------------ */

/* Exponential-kernel Hawkes process, intensity mu + sum alpha e^{-beta(t-ti)}
 * (Hawkes 1971), times in seconds. Log-likelihood over [t0, t1] of sorted
 * events t[0..n) by Ozaki's (1979) recursion. */
double pol_hawkes_loglik(const double *t, size_t n, double t0, double t1, double mu, double alpha,
                         double beta);
/* Maximum-likelihood fit with GSL Nelder-Mead (nmsimplex2) over log
 * parameters, started from *mu, *alpha, *beta when positive. 0, or
 * KS_ERUNTIME when it does not converge or n < 2. */
int pol_hawkes_fit(const double *t, size_t n, double t0, double t1, double *mu, double *alpha,
                   double *beta);
/* Expected events in (now, now+h] given intensity excess ex = lambda(now) -
 * mu: mu h + z* h + (ex - z*)(1 - e^{-k h})/k with k = beta - alpha,
 * z* = alpha mu / k (mean of the linear ODE for E[lambda]). alpha >= beta
 * is clamped to a branching ratio of 0.99. */
double pol_hawkes_expected(double mu, double alpha, double beta, double ex, double h);

/* Holt's linear trend (Holt 1957): level/trend after observing x. */
typedef struct pol_holt {
	double level, trend;
	int n; /* observations so far */
} pol_holt_t;
void pol_holt_update(pol_holt_t *h, double x, double alpha, double beta);
/* Sum of max(0, level + j trend) over j = 1..steps (steps may be fractional:
 * the last step is weighted by its fraction). */
double pol_holt_sum(const pol_holt_t *h, double steps);

#endif
