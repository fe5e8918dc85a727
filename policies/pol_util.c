/* pol_util — fair choice, prefix table, prefix groups, forecast buffers, id map, Hawkes and
 * Holt
 * maths shared by the built-in policies (see pol_int.h). */
#include "sim/base/mem.h"
#include "sim/base/rng.h"
#include "policies/pol_int.h"
#include "sim/base/vec.h"

#include <gsl/gsl_multimin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

gsl_rng *pol_rng_new(uint64_t seed)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	if (r)
		gsl_rng_set(r, (unsigned long)(seed ? seed : 1));
	return r;
}

int pol_rng_state_init(const void *params, uint64_t seed, void **state, err_t *e)
{
	(void)params;
	gsl_rng *r = pol_rng_new(seed);
	if (!r)
		return err_set(e, KS_ENOMEM, "out of memory");
	*state = r;
	return 0;
}

void pol_rng_state_free(void *st)
{
	gsl_rng_free(st);
}

/* ---- fair choice --------------------------------------------------------- */

void pol_pick_start(pol_pick_t *p, gsl_rng *rng)
{
	*p = (pol_pick_t){rng, UINT32_MAX, 0, 0, 0};
}

void pol_pick_offer(pol_pick_t *p, uint32_t inst, double score, uint64_t load)
{
	if (p->inst != UINT32_MAX && (score > p->score || (score == p->score && load > p->load)))
		return;
	if (p->inst != UINT32_MAX && score == p->score && load == p->load) {
		if (gsl_rng_uniform_int(p->rng, ++p->ties) == 0)
			p->inst = inst;
		return;
	}
	*p = (pol_pick_t){p->rng, inst, 1, score, load};
}

uint64_t pol_inst_load(const pol_inst_t *x)
{
	return (uint64_t)x->waiting + x->running;
}

int pol_inst_busier(const pol_inst_t *a, const pol_inst_t *b, int tokens)
{
	uint64_t la = pol_inst_load(a), lb = pol_inst_load(b);
	if (la != lb)
		return la > lb;
	return tokens && a->prefill_tokens > b->prefill_tokens;
}

typedef struct by_load {
	const pol_inst_t *snap;
	int tokens;
} by_load_t;

/* pol_inst_busier as an order, ties by index: the insertion sort this
 * replaces was stable, so the same order comes out. */
static int cmp_by_load(const void *a, const void *b, void *ctx)
{
	const by_load_t *c = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	if (pol_inst_busier(&c->snap[i], &c->snap[j], c->tokens))
		return 1;
	if (pol_inst_busier(&c->snap[j], &c->snap[i], c->tokens))
		return -1;
	return (i > j) - (i < j);
}

void pol_snapshot_by_load(const pol_view_t *v, pol_inst_t *snap, uint32_t *order, int tokens)
{
	for (uint32_t i = 0; i < v->n_inst; i++) {
		v->inst(v->ctx, i, &snap[i]);
		order[i] = i;
	}
	by_load_t c = {snap, tokens};
	qsort_r(order, v->n_inst, sizeof *order, cmp_by_load, &c);
}

/* ---- prefix table -------------------------------------------------------- */

/* A slot holds its node's index + 1, so that an unused table is calloc's
 * untouched zero pages (most runs open a predictor nothing feeds). */
#define SLOT_EMPTY 0u

struct pol_ptab {
	uint64_t *id;
	int64_t *last;
	unsigned char *pay;
	size_t payload, n, cap; /* nodes */
	uint32_t *slot;         /* open addressing, linear probing, -> node + 1 */
	size_t nslot;           /* power of two >= 2 cap */
};

uint64_t pol_mix64(uint64_t x)
{
	return rng_fmix64(x);
}

static size_t find_slot(const pol_ptab_t *t, uint64_t id)
{
	size_t m = t->nslot - 1, s = pol_mix64(id) & m;
	while (t->slot[s] != SLOT_EMPTY && t->id[t->slot[s] - 1] != id)
		s = (s + 1) & m;
	return s;
}

pol_ptab_t *pol_ptab_new(size_t cap, size_t payload_bytes)
{
	pol_ptab_t *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	if (cap < 16)
		cap = 16;
	t->cap = cap;
	t->payload = payload_bytes;
	t->nslot = 1;
	while (t->nslot < 2 * cap)
		t->nslot <<= 1;
	t->id = malloc(cap * sizeof *t->id);
	t->last = malloc(cap * sizeof *t->last);
	t->pay = payload_bytes ? malloc(cap * payload_bytes) : NULL;
	t->slot = calloc(t->nslot, sizeof *t->slot);
	if (!t->id || !t->last || !t->slot || (payload_bytes && !t->pay)) {
		pol_ptab_free(t);
		return NULL;
	}
	return t;
}

void pol_ptab_free(pol_ptab_t *t)
{
	if (!t)
		return;
	FREE_ALL(t->id, t->last, t->pay, t->slot, t);
}

size_t pol_ptab_size(const pol_ptab_t *t)
{
	return t->n;
}

static long node_of(const pol_ptab_t *t, uint64_t id)
{
	uint32_t s = t->slot[find_slot(t, id)];
	return s == SLOT_EMPTY ? -1 : (long)s - 1;
}

uint32_t pol_ptab_match(const pol_ptab_t *t, const uint64_t *blocks, uint32_t n)
{
	uint32_t lo = 0, hi = n; /* answer in [lo, hi] */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if (node_of(t, blocks[mid - 1]) >= 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

int64_t pol_ptab_last(const pol_ptab_t *t, uint64_t id)
{
	long i = node_of(t, id);
	return i < 0 ? INT64_MIN : t->last[i];
}

void *pol_ptab_payload(pol_ptab_t *t, uint64_t id)
{
	long i = node_of(t, id);
	return i < 0 || !t->payload ? NULL : t->pay + (size_t)i * t->payload;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void ptab_rehash(pol_ptab_t *t)
{
	memset(t->slot, 0, t->nslot * sizeof *t->slot);
	for (size_t i = 0; i < t->n; i++)
		t->slot[find_slot(t, t->id[i])] = (uint32_t)i + 1;
}

/* Doubles the capacity (a single prompt longer than half the table). */
static int ptab_grow(pol_ptab_t *t)
{
	size_t cap = 2 * t->cap, nslot = 2 * t->nslot;
	if (VEC_RESIZE(t->id, cap) || VEC_RESIZE(t->last, cap) ||
	    (t->payload && VEC_RESIZE(t->pay, cap * t->payload)) || VEC_RESIZE(t->slot, nslot))
		return KS_ENOMEM;
	t->cap = cap;
	t->nslot = nslot;
	ptab_rehash(t);
	return 0;
}

/* Drops the older half (by last-seen time) and rebuilds the slots. Nodes
 * seen at the newest time are always kept, so the path being touched keeps
 * its ancestors; when everything is equally recent the table grows. */
static int ptab_gc(pol_ptab_t *t)
{
	int64_t *tmp = malloc(t->n * sizeof *tmp);
	if (!tmp)
		return KS_ENOMEM;
	memcpy(tmp, t->last, t->n * sizeof *tmp);
	qsort(tmp, t->n, sizeof *tmp, cmp_i64);
	int64_t cut = tmp[t->n / 2];
	free(tmp);
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++)
		k += t->last[i] >= cut;
	if (k == t->n)
		return ptab_grow(t);
	k = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (t->last[i] < cut)
			continue;
		t->id[k] = t->id[i];
		t->last[k] = t->last[i];
		if (t->payload)
			memmove(t->pay + k * t->payload, t->pay + i * t->payload, t->payload);
		k++;
	}
	t->n = k;
	ptab_rehash(t);
	return 0;
}

int pol_ptab_touch(pol_ptab_t *t, const uint64_t *blocks, uint32_t n, int64_t t_ns,
                   void (*visit)(void *payload, uint32_t depth, void *arg), void *arg)
{
	for (uint32_t d = 0; d < n; d++) {
		size_t s = find_slot(t, blocks[d]);
		uint32_t i = t->slot[s] - 1;
		if (t->slot[s] == SLOT_EMPTY) {
			if (t->n == t->cap) {
				if (ptab_gc(t))
					return KS_ENOMEM;
				/* ancestors of this path were refreshed at t_ns, so kept */
				s = find_slot(t, blocks[d]);
			}
			i = (uint32_t)t->n++;
			t->slot[s] = i + 1;
			t->id[i] = blocks[d];
			t->last[i] = t_ns;
			if (t->payload)
				memset(t->pay + (size_t)i * t->payload, 0, t->payload);
		} else if (t_ns > t->last[i]) {
			t->last[i] = t_ns;
		}
		if (visit)
			visit(t->payload ? t->pay + (size_t)i * t->payload : NULL, d + 1, arg);
	}
	return 0;
}

/* ---- prefix groups ------------------------------------------------------- */

int pol_groups_init(pol_groups_t *gs, size_t cap, size_t ext_bytes, void (*ext_free)(void *))
{
	memset(gs, 0, sizeof *gs);
	gs->cap = cap ? cap : 1;
	gs->ext_bytes = ext_bytes;
	gs->ext_free = ext_free;
	if (gs->cap > SIZE_MAX / sizeof *gs->g)
		return KS_ENOMEM; /* the array's size would overflow */
	gs->g = calloc(gs->cap, sizeof *gs->g);
	return gs->g ? 0 : KS_ENOMEM;
}

static void group_clear(pol_groups_t *gs, pol_group_t *g)
{
	if (g->ext && gs->ext_free)
		gs->ext_free(g->ext);
	free(g->ext);
	free(g->blocks);
	memset(g, 0, sizeof *g);
}

void pol_groups_free(pol_groups_t *gs)
{
	if (!gs->g)
		return;
	for (size_t i = 0; i < gs->n; i++)
		group_clear(gs, &gs->g[i]);
	free(gs->g);
	memset(gs, 0, sizeof *gs);
}

pol_group_t *pol_groups_find(pol_groups_t *gs, const uint64_t *blocks, uint32_t n)
{
	if (!n)
		return NULL;
	for (size_t i = 0; i < gs->n; i++)
		if (gs->g[i].n == n && gs->g[i].key == blocks[n - 1])
			return &gs->g[i];
	return NULL;
}

void pol_groups_remove(pol_groups_t *gs, size_t i)
{
	group_clear(gs, &gs->g[i]);
	gs->g[i] = gs->g[--gs->n];
	memset(&gs->g[gs->n], 0, sizeof gs->g[gs->n]);
}

pol_group_t *pol_groups_get(pol_groups_t *gs, const uint64_t *blocks, uint32_t n, int64_t t_ns,
                            int *evicted)
{
	if (evicted)
		*evicted = 0;
	pol_group_t *g = pol_groups_find(gs, blocks, n);
	if (g || !n)
		return g;
	double inherit = 0;
	if (gs->n == gs->cap) {
		size_t lo = 0;
		for (size_t i = 1; i < gs->n; i++)
			if (gs->g[i].score < gs->g[lo].score)
				lo = i;
		inherit = gs->g[lo].score;
		pol_groups_remove(gs, lo);
		if (evicted)
			*evicted = 1;
	}
	g = &gs->g[gs->n];
	g->blocks = malloc(n * sizeof *g->blocks);
	g->ext = gs->ext_bytes ? calloc(1, gs->ext_bytes) : NULL;
	if (!g->blocks || (gs->ext_bytes && !g->ext)) {
		free(g->blocks);
		free(g->ext);
		memset(g, 0, sizeof *g);
		return NULL;
	}
	memcpy(g->blocks, blocks, n * sizeof *blocks);
	g->n = n;
	g->key = blocks[n - 1];
	g->score = g->err = inherit;
	g->created_ns = g->last_ns = t_ns;
	gs->n++;
	return g;
}

void pol_group_note_inst(pol_group_t *g, int32_t inst, double w)
{
	if (inst < 0)
		return;
	for (uint32_t i = 0; i < g->n_inst; i++)
		if (g->inst[i] == (uint32_t)inst) {
			g->inst_w[i] += w;
			return;
		}
	if (g->n_inst < POL_LIKELY_MAX) {
		g->inst[g->n_inst] = (uint32_t)inst;
		g->inst_w[g->n_inst++] = w;
		return;
	}
	uint32_t lo = 0; /* space-saving: replace the lightest, inherit its weight */
	for (uint32_t i = 1; i < g->n_inst; i++)
		if (g->inst_w[i] < g->inst_w[lo])
			lo = i;
	g->inst[lo] = (uint32_t)inst;
	g->inst_w[lo] += w;
}

void pol_group_likely(const pol_group_t *g, pol_fc_t *out)
{
	uint32_t idx[POL_LIKELY_MAX];
	for (uint32_t i = 0; i < g->n_inst; i++)
		idx[i] = i;
	for (uint32_t i = 1; i < g->n_inst; i++) /* insertion sort, heaviest first */
		for (uint32_t j = i; j > 0 && g->inst_w[idx[j]] > g->inst_w[idx[j - 1]]; j--) {
			uint32_t x = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = x;
		}
	out->n_likely = g->n_inst;
	for (uint32_t i = 0; i < g->n_inst; i++)
		out->likely[i] = g->inst[idx[i]];
}

/* ---- forecast buffer ----------------------------------------------------- */

pol_fc_t *pol_fcbuf_push(pol_fcbuf_t *b)
{
	if (VEC_GROW(b->e, b->cap, b->n + 1, 16))
		return NULL;
	pol_fc_t *f = &b->e[b->n++];
	memset(f, 0, sizeof *f);
	return f;
}

pol_fc_t *pol_fcbuf_push_group(pol_fcbuf_t *b, const pol_group_t *g, double expected,
                               int64_t first_ns)
{
	pol_fc_t *f = pol_fcbuf_push(b);
	if (!f)
		return NULL;
	f->blocks = g->blocks;
	f->n_blocks = g->n;
	f->expected = expected;
	f->first_ns = first_ns;
	pol_group_likely(g, f);
	return f;
}

static int fc_cmp(const void *a, const void *b)
{
	const pol_fc_t *x = a, *y = b;
	if (x->expected != y->expected)
		return x->expected > y->expected ? -1 : 1;
	if (x->n_blocks != y->n_blocks)
		return x->n_blocks > y->n_blocks ? -1 : 1;
	return 0;
}

void pol_fcbuf_sort(pol_fcbuf_t *b)
{
	if (b->n > 1)
		qsort(b->e, b->n, sizeof *b->e, fc_cmp);
}

void pol_fcbuf_publish(pol_fcbuf_t *b, size_t most, pol_forecast_t *out)
{
	pol_fcbuf_sort(b);
	out->e = b->e;
	out->n = most && b->n > most ? most : b->n;
	out->inst_expected = NULL;
	out->n_inst = 0;
}

void pol_fcbuf_free(pol_fcbuf_t *b)
{
	free(b->e);
	memset(b, 0, sizeof *b);
}

int pol_copy_init(const void *params, size_t size, void **state, err_t *e)
{
	void *s = malloc(size);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	memcpy(s, params, size);
	*state = s;
	return 0;
}

/* ---- predictor base ---------------------------------------------------- */

void *pol_pred_new(size_t size, size_t tab_cap, size_t payload_bytes, size_t group_cap,
                   size_t ext_bytes, void (*ext_free)(void *), err_t *e)
{
	pol_pred_base_t *b = calloc(1, size);
	if (!b) {
		err_set(e, KS_ENOMEM, "out of memory");
		return NULL;
	}
	b->tab = pol_ptab_new(tab_cap, payload_bytes);
	if (!b->tab || pol_groups_init(&b->gs, group_cap, ext_bytes, ext_free)) {
		pol_ptab_free(b->tab);
		free(b);
		err_set(e, KS_ENOMEM, "out of memory");
		return NULL;
	}
	return b;
}

void pol_pred_free(void *st)
{
	pol_pred_base_t *b = st;
	pol_ptab_free(b->tab);
	pol_groups_free(&b->gs);
	pol_fcbuf_free(&b->out);
	free(b);
}

/* ---- Hawkes -------------------------------------------------------------- */

double pol_hawkes_loglik(const double *t, size_t n, double t0, double t1, double mu, double alpha,
                         double beta)
{
	/* A_i = sum_{j<i} e^{-beta (t_i - t_j)} = e^{-beta (t_i - t_{i-1})} (1 + A_{i-1});
	 * the compensator's sum_i e^{-beta (t1 - t_i)} is e^{-beta (t1 - t_n)} (1 + A_n),
	 * so one exp and one log per event. */
	double sum_log = 0, a = 0;
	for (size_t i = 0; i < n; i++) {
		if (i)
			a = exp(-beta * (t[i] - t[i - 1])) * (1 + a);
		double lam = mu + alpha * a;
		if (lam <= 0)
			return -INFINITY;
		sum_log += log(lam);
	}
	double tail = n ? exp(-beta * (t1 - t[n - 1])) * (1 + a) : 0;
	return sum_log - mu * (t1 - t0) - (alpha / beta) * ((double)n - tail);
}

typedef struct hk_data {
	const double *t;
	size_t n;
	double t0, t1;
} hk_data_t;

/* x = (log mu, logit(alpha / beta), log beta): the branching ratio stays in
 * (0, 1), so the fit cannot wander into non-stationary or degenerate
 * (beta -> 0 with alpha / beta > 1) corners. */
static void hk_params(const gsl_vector *x, double *mu, double *alpha, double *beta)
{
	double n = 1.0 / (1.0 + exp(-gsl_vector_get(x, 1)));
	*mu = exp(gsl_vector_get(x, 0));
	*beta = exp(gsl_vector_get(x, 2));
	*alpha = n * *beta;
}

static double hk_negll(const gsl_vector *x, void *p)
{
	const hk_data_t *d = p;
	double mu, alpha, beta;
	hk_params(x, &mu, &alpha, &beta);
	if (!isfinite(mu) || !isfinite(beta) || beta > 1e6 || beta < 1e-9 || mu < 1e-12)
		return 1e300;
	double ll = pol_hawkes_loglik(d->t, d->n, d->t0, d->t1, mu, alpha, beta);
	return isfinite(ll) ? -ll : 1e300;
}

int pol_hawkes_fit(const double *t, size_t n, double t0, double t1, double *mu, double *alpha,
                   double *beta)
{
	if (n < 2 || t1 <= t0)
		return KS_ERUNTIME;
	double rate = (double)n / (t1 - t0);
	int warm = *mu > 0 && *beta > 0 && *alpha > 0 && *alpha < 0.999 * *beta;
	double m0 = warm ? *mu : 0.5 * rate;
	double b0 = warm ? *beta : 2.0 * rate;
	double n0 = warm ? *alpha / *beta : 0.5;
	hk_data_t d = {t, n, t0, t1};
	gsl_multimin_function f = {hk_negll, 3, &d};
	gsl_vector *x = gsl_vector_alloc(3), *step = gsl_vector_alloc(3);
	gsl_multimin_fminimizer *s =
	    gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2, 3);
	int rc = KS_ERUNTIME;
	if (!x || !step || !s)
		goto out;
	gsl_vector_set(x, 0, log(m0));
	gsl_vector_set(x, 1, log(n0 / (1 - n0)));
	gsl_vector_set(x, 2, log(b0));
	gsl_vector_set_all(step, 0.5);
	gsl_multimin_fminimizer_set(s, &f, x, step);
	for (int it = 0; it < 200; it++) {
		if (gsl_multimin_fminimizer_iterate(s))
			break; /* no progress possible: keep the best point */
		if (gsl_multimin_test_size(gsl_multimin_fminimizer_size(s), 1e-2) == GSL_SUCCESS) {
			rc = 0;
			break;
		}
	}
	/* the iteration cap is a result too: in flat directions (no excitation
	 * at all) the simplex never shrinks but the best point is good enough */
	if (rc && gsl_multimin_fminimizer_minimum(s) < 1e299)
		rc = 0;
	if (!rc)
		hk_params(s->x, mu, alpha, beta);
out:
	gsl_multimin_fminimizer_free(s);
	gsl_vector_free(x);
	gsl_vector_free(step);
	return rc;
}

double pol_hawkes_expected(double mu, double alpha, double beta, double ex, double h)
{
	if (alpha >= 0.99 * beta)
		alpha = 0.99 * beta;
	double k = beta - alpha, zs = alpha * mu / k;
	return mu * h + zs * h + (ex - zs) * (1 - exp(-k * h)) / k;
}

/* ---- Holt ---------------------------------------------------------------- */

void pol_holt_update(pol_holt_t *h, double x, double alpha, double beta)
{
	if (h->n == 0) {
		h->level = x;
		h->trend = 0;
	} else if (h->n == 1) {
		/* second point fixes the first trend estimate (Hyndman et al. 2008, 7.2) */
		h->trend = x - h->level;
		h->level = x;
	} else {
		double prev = h->level;
		h->level = alpha * x + (1 - alpha) * (h->level + h->trend);
		h->trend = beta * (h->level - prev) + (1 - beta) * h->trend;
	}
	h->n++;
}

double pol_holt_sum(const pol_holt_t *h, double steps)
{
	double s = 0;
	for (int j = 1; j <= (int)ceil(steps); j++) {
		double w = j <= steps ? 1.0 : steps - (j - 1);
		double v = h->level + j * h->trend;
		s += w * (v > 0 ? v : 0);
	}
	return s;
}

/* ---- id map ---------------------------------------------------------------- */

#define IDMAP_EMPTY UINT32_MAX

static int idmap_alloc(pol_idmap_t *m, size_t nslot)
{
	m->key = malloc(nslot * sizeof *m->key);
	m->val = malloc(nslot * sizeof *m->val);
	if (!m->key || !m->val) {
		free(m->key);
		free(m->val);
		m->key = NULL;
		m->val = NULL;
		return KS_ENOMEM;
	}
	memset(m->val, 0xff, nslot * sizeof *m->val);
	m->nslot = nslot;
	m->n = 0;
	return 0;
}

int pol_idmap_init(pol_idmap_t *m, size_t cap)
{
	size_t nslot = 16;
	while (nslot < 2 * cap)
		nslot <<= 1;
	return idmap_alloc(m, nslot);
}

void pol_idmap_free(pol_idmap_t *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof *m);
}

/* The slot holding id, or the empty slot where it would go. */
static size_t idmap_slot(const pol_idmap_t *m, uint64_t id)
{
	size_t mask = m->nslot - 1, i = pol_mix64(id) & mask;
	while (m->val[i] != IDMAP_EMPTY && m->key[i] != id)
		i = (i + 1) & mask;
	return i;
}

int pol_idmap_get(const pol_idmap_t *m, uint64_t id, uint32_t *val)
{
	if (!m->nslot)
		return 0;
	size_t i = idmap_slot(m, id);
	if (m->val[i] == IDMAP_EMPTY)
		return 0;
	*val = m->val[i];
	return 1;
}

int pol_idmap_put(pol_idmap_t *m, uint64_t id, uint32_t val)
{
	if (m->nslot) {
		size_t i = idmap_slot(m, id);
		if (m->val[i] != IDMAP_EMPTY) {
			m->val[i] = val;
			return 0;
		}
	}
	if (2 * (m->n + 1) > m->nslot) {
		pol_idmap_t g;
		if (idmap_alloc(&g, m->nslot ? 2 * m->nslot : 16))
			return KS_ENOMEM;
		for (size_t i = 0; i < m->nslot; i++)
			if (m->val[i] != IDMAP_EMPTY) {
				size_t j = idmap_slot(&g, m->key[i]);
				g.key[j] = m->key[i];
				g.val[j] = m->val[i];
			}
		g.n = m->n;
		pol_idmap_free(m);
		*m = g;
	}
	size_t i = idmap_slot(m, id);
	m->key[i] = id;
	m->val[i] = val;
	m->n++;
	return 0;
}

int pol_idmap_del(pol_idmap_t *m, uint64_t id)
{
	if (!m->nslot)
		return 0;
	size_t mask = m->nslot - 1, i = idmap_slot(m, id);
	if (m->val[i] == IDMAP_EMPTY)
		return 0;
	/* backward shift: pull later entries of the probe run into the hole
	 * unless their home slot lies cyclically in (hole, j] */
	for (size_t j = i;;) {
		m->val[i] = IDMAP_EMPTY;
		for (;;) {
			j = (j + 1) & mask;
			if (m->val[j] == IDMAP_EMPTY) {
				m->n--;
				return 1;
			}
			size_t home = pol_mix64(m->key[j]) & mask;
			if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
				continue;
			break;
		}
		m->key[i] = m->key[j];
		m->val[i] = m->val[j];
		i = j;
	}
}
