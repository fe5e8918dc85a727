/* pol_core — family names, parameter values, view helpers, eviction order
 * and speculation accounting (see pol.h). */
#include "policies/pol.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const family_names[POL_NFAMILY] = {
    "predictor", "replication", "routing", "eviction", "transfer", "admission",
};
static const char *const family_sections[POL_NFAMILY] = {
    "policy.predictor", "policy.replication", "policy.routing",
    "policy.eviction",  "policy.transfer",    "policy.admission",
};

const char *pol_family_name(pol_family_t f)
{
	return (unsigned)f < POL_NFAMILY ? family_names[f] : NULL;
}

const char *pol_family_section(pol_family_t f)
{
	return (unsigned)f < POL_NFAMILY ? family_sections[f] : NULL;
}

int pol_family_parse(const char *s, pol_family_t *f, err_t *e)
{
	for (int i = 0; i < POL_NFAMILY; i++)
		if (s && !strcmp(s, family_names[i])) {
			*f = (pol_family_t)i;
			return 0;
		}
	return err_set(e, KS_EINPUT,
	               "unknown policy family '%s' (expected predictor, replication, routing, "
	               "eviction, transfer or admission)",
	               s ? s : "");
}

/* ---- parameters ---------------------------------------------------------- */

static const cfg_tkey_t *key_named(const pol_params_t *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->keys[i].key.name, name))
			return &p->keys[i];
	return NULL;
}

int pol_params_set(pol_params_t *p, const char *name, const char *value, err_t *e)
{
	const cfg_tkey_t *k = key_named(p, name);
	if (!k)
		return err_set(e, KS_EINPUT, "unknown policy parameter '%s'", name);
	return cfg_field_set(k, p->data, value, e);
}

int pol_params_init(pol_params_t *p, const pol_base_t *ops, const char *overrides, err_t *e)
{
	memset(p, 0, sizeof *p);
	p->keys = ops->params;
	p->n = ops->n_params;
	if (ops->params_size && !(p->data = calloc(1, ops->params_size)))
		return err_set(e, KS_ENOMEM, "out of memory");
	int rc = cfg_fill_defaults(p->keys, p->n, p->data, e);
	if (rc || !overrides || !*overrides) {
		if (rc)
			pol_params_free(p);
		return rc;
	}
	char *buf = strdup(overrides), *save = NULL;
	if (!buf) {
		pol_params_free(p);
		return err_set(e, KS_ENOMEM, "out of memory");
	}
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			rc = err_set(e, KS_EINPUT, "'%s': expected name=value", tok);
			break;
		}
		*eq = '\0';
		if ((rc = pol_params_set(p, tok, eq + 1, e)))
			break;
	}
	free(buf);
	if (rc)
		pol_params_free(p);
	return rc;
}

void pol_params_free(pol_params_t *p)
{
	if (!p)
		return;
	if (p->data)
		cfg_fill_free(p->keys, p->n, p->data);
	free(p->data);
	memset(p, 0, sizeof *p);
}

double pol_param_num(const pol_params_t *p, const char *name)
{
	const cfg_tkey_t *k = key_named(p, name);
	assert(k && "policy parameter not in schema");
	double x;
	return cfg_field_number(k, p->data, &x) ? x : NAN;
}

const char *pol_param_str(const pol_params_t *p, const char *name)
{
	const cfg_tkey_t *k = key_named(p, name);
	assert(k && "policy parameter not in schema");
	return cfg_field_text(k, p->data);
}

/* ---- view helpers -------------------------------------------------------- */

const uint32_t *pol_view_scan(const pol_view_t *v, const uint64_t *blocks, uint32_t n,
                              uint32_t *count)
{
	const uint32_t *c = v->candidates && n ? v->candidates(v->ctx, blocks, n, count) : NULL;
	if (!c && !(v->candidates && n))
		*count = v->n_inst;
	return c;
}

int pol_view_holds(const pol_view_t *v, pol_match_fn match, uint32_t i, const uint64_t *blocks,
                   uint32_t n)
{
	return !n || (match(v->ctx, i, blocks + n - 1, 1) && match(v->ctx, i, blocks, n) >= n);
}

uint32_t pol_view_best_of(const pol_view_t *v, pol_match_fn match, const uint32_t *ck,
                          uint32_t nk, const uint64_t *blocks, uint32_t n, uint32_t best,
                          uint32_t *inst)
{
	for (uint32_t j = 0; j < nk && best < n; j++) {
		uint32_t i = ck ? ck[j] : j, m;
		/* beating best needs blocks[best]: one lookup rules most out */
		if (!match(v->ctx, i, blocks + best, 1))
			continue;
		m = match(v->ctx, i, blocks, n);
		if (m > best) {
			best = m;
			*inst = i;
		}
	}
	return best;
}

uint32_t pol_view_best_match(const pol_view_t *v, const uint64_t *blocks, uint32_t n,
                             uint32_t *inst)
{
	uint32_t where = UINT32_MAX, nc;
	const uint32_t *c = pol_view_scan(v, blocks, n, &nc);
	uint32_t best = pol_view_best_of(v, v->match, c, nc, blocks, n, 0, &where);
	if (inst)
		*inst = where;
	return best;
}

uint32_t pol_view_holders(const pol_view_t *v, const uint64_t *blocks, uint32_t n,
                          uint32_t min_blocks, uint32_t *out, uint32_t cap)
{
	uint32_t k = 0, nc;
	if (min_blocks < 1)
		min_blocks = 1;
	const uint32_t *c = pol_view_scan(v, blocks, n, &nc);
	for (uint32_t j = 0; j < nc; j++) {
		uint32_t i = c ? c[j] : j;
		if (v->match(v->ctx, i, blocks, n) >= min_blocks) {
			if (k < cap && out)
				out[k] = i;
			k++;
		}
	}
	return k;
}

uint32_t pol_view_match_all(const pol_view_t *v, const pol_req_t *r,
                            uint32_t (*match)(void *, uint32_t, const uint64_t *, uint32_t),
                            uint32_t *m)
{
	uint32_t best = 0, nc = v->n_inst;
	/* through the view's candidates when they answer for this match: the
	 * rest match nothing, so only the holders of the prefix are asked */
	const uint32_t *c = match == v->match ? pol_view_scan(v, r->blocks, r->n_blocks, &nc) : NULL;
	if (c || nc != v->n_inst)
		memset(m, 0, v->n_inst * sizeof *m);
	for (uint32_t j = 0; j < nc; j++) {
		uint32_t i = c ? c[j] : j;
		m[i] = match(v->ctx, i, r->blocks, r->n_blocks);
		best = m[i] > best ? m[i] : best;
	}
	return best;
}

uint32_t pol_view_best_holders(const pol_view_t *v, const uint32_t *m, uint32_t rbest,
                               uint32_t *holders)
{
	uint32_t k = 0;
	for (uint32_t h = 0; rbest && h < v->n_inst; h++)
		if (m[h] == rbest)
			holders[k++] = h;
	return k;
}

int64_t pol_view_ttft_ns(const pol_view_t *v, const pol_req_t *r, const uint32_t *m,
                         uint32_t rbest, const uint32_t *holders, uint32_t n_holders, uint32_t i,
                         int64_t queue_delay_ns)
{
	uint32_t B = v->block_tokens;
	uint64_t c = (uint64_t)m[i] * B, cb = (uint64_t)rbest * B;
	int64_t t = v->prefill_ns(v->ctx, i, r->input_tokens > c ? r->input_tokens - c : 0, c);
	if (rbest > m[i]) {
		/* the best remote prefix from its nearest holder, so no
		 * holder's index decides which instances look close */
		int64_t tx = INT64_MAX;
		for (uint32_t j = 0; j < n_holders; j++) {
			int64_t th = v->xfer_ns(v->ctx, holders[j], i, rbest - m[i]);
			tx = th < tx ? th : tx;
		}
		int64_t tf = tx + v->prefill_ns(v->ctx, i,
		                                r->input_tokens > cb ? r->input_tokens - cb : 0, cb);
		if (tf < t)
			t = tf;
	}
	return t + queue_delay_ns;
}

/* ---- eviction order ------------------------------------------------------ */

int pol_evict_cmp(const struct pol_eviction_ops *ops, const void *st, const pol_block_meta_t *a,
                  const pol_block_meta_t *b)
{
	double pa = ops->priority(st, a), pb = ops->priority(st, b);
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (a->last_access_ns != b->last_access_ns)
		return a->last_access_ns < b->last_access_ns ? -1 : 1;
	return 0;
}

/* ---- speculation accounting ---------------------------------------------- */

void pol_spec_block_gone(pol_spec_stats_t *s, uint64_t bytes, int64_t landed_ns, int64_t now_ns,
                         int replica_wasted)
{
	if (now_ns > landed_ns)
		s->unused_vram_byte_s += (double)bytes * (double)(now_ns - landed_ns) * 1e-9;
	if (replica_wasted)
		s->replicas_wasted++;
}

void pol_spec_refused(pol_spec_stats_t *s, pol_refusal_t why)
{
	uint64_t *by[] = {&s->refused_vram, &s->refused_bw, &s->refused_room, &s->refused_source};
	(*by[why])++;
	s->copies_refused++;
}

void pol_spec_over_budget(pol_spec_stats_t *s, uint32_t blocks, uint32_t cap, const char *key)
{
	if (!s->prefix_over_budget++) {
		s->over_budget_blocks = blocks;
		s->over_budget_cap = cap;
		s->over_budget_key = key;
	}
}

void pol_spec_metrics(const pol_spec_stats_t *s, double out[POL_SPEC_N_METRICS])
{
	uint64_t ended = s->replicas_used + s->replicas_wasted;
	out[0] = (double)s->triggers;
	out[1] = (double)s->replicas_created;
	out[2] = (double)s->replicas_used;
	out[3] = (double)s->replicas_wasted;
	out[4] = ended ? (double)s->replicas_wasted / (double)ended : 0.0;
	out[5] = s->unused_vram_byte_s / 1e9;
	out[6] = (double)s->bytes_fg;
	out[7] = (double)s->bytes_bg;
	out[8] = (double)s->copies_cancelled;
	out[9] = (double)s->copies_refused;
	out[10] = (double)s->warm_hits;
	out[11] = (double)s->fg_flows;
	out[12] = s->fg_flows ? s->fg_slowdown_s / (double)s->fg_flows : 0.0;
	out[13] = (double)s->bytes_cancelled;
	out[14] = (double)s->refused_vram;
	out[15] = (double)s->refused_bw;
	out[16] = (double)s->refused_room;
	out[17] = (double)s->refused_source;
	out[18] = (double)s->prefix_over_budget;
	out[19] = (double)s->hint_routed;
	out[20] = (double)s->copies_deferred;
	out[21] = (double)s->deferred_cancelled;
	out[22] = s->deferred_started ? s->deferral_s * 1e3 / (double)s->deferred_started : 0.0;
}

uint32_t pol_view_ttft_all(const pol_view_t *v, const pol_req_t *r, uint32_t *m, int64_t *est,
                           uint32_t *holders)
{
	uint32_t rbest = pol_view_match_all(v, r, v->match, m), best = 0;
	uint32_t nh = pol_view_best_holders(v, m, rbest, holders);
	for (uint32_t i = 0; i < v->n_inst; i++) {
		pol_inst_t x;
		v->inst(v->ctx, i, &x);
		est[i] = pol_view_ttft_ns(v, r, m, rbest, holders, nh, i, x.queue_delay_ns);
		best = est[i] < est[best] ? i : best;
	}
	return best;
}

int64_t pol_view_local_ttft_ns(const pol_view_t *v, const pol_req_t *r, uint32_t i,
                               uint32_t *matched)
{
	pol_inst_t x;
	v->inst(v->ctx, i, &x);
	uint32_t m = v->match(v->ctx, i, r->blocks, r->n_blocks);
	uint64_t cached = (uint64_t)m * v->block_tokens;
	if (cached > r->input_tokens)
		cached = r->input_tokens;
	if (matched)
		*matched = m;
	return x.queue_delay_ns + v->prefill_ns(v->ctx, i, r->input_tokens - cached, cached);
}
