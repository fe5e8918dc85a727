/* tr_prefix — prefix model for traces without block ids (BurstGPT, Azure)
 * and for generators: which leading tokens of a request are shared.
 *
 * Three mechanisms, checked in this order for each request:
 *  1. fan-out groups: with probability group_prob a request opens a group;
 *     the next group_size-1 requests arriving within group_window_s share
 *     its group_tokens-token prefix (labelling sweeps, agent sub-calls).
 *  2. sessions: a request of a session (trace session id, or with
 *     probability session_prob a continuation of one of session_active open
 *     synthetic sessions) is session content at every position, so turn t
 *     shares min(len_t, len_{t-1}) tokens with turn t-1 and its context
 *     grows by the previous output. In a trace session a turn shorter than
 *     the previous context (len_t < len_{t-1} + out_{t-1}: truncated
 *     history) starts a new epoch; a synthetic later turn shares
 *     min(len_t, context) tokens.
 *  3. shared prompts: with probability prefix_shared_prob a request (or a
 *     session's first turn, kept for the session) starts with system prompt
 *     g ~ Zipf(prefix_count, prefix_zipf_s) of length lognormal(mean
 *     prefix_tokens, sigma prefix_sigma) fixed per g.
 * Everything else is unique to the request. Trace session ids are tracked in
 * a direct-mapped table of 65536 slots (memory is constant; a session whose
 * slot was reused starts over).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/mem.h"
#include "traces/tr_int.h"

#define SESS_SLOTS 65536u
#define MAX_PROMPTS (1u << 22)

typedef struct sess {
	uint64_t sid;   /* 0: empty slot */
	uint64_t key;   /* content key of this epoch */
	uint32_t ctx;   /* input + output of the last turn */
	uint32_t p_len; /* shared prompt kept for the session */
	uint64_t p_key;
} sess_t;

struct tr_prefix {
	tr_opts_t o;
	uint64_t seed;
	gsl_rng *rng;
	double *cdf;   /* Zipf CDF over prompts */
	sess_t *table; /* trace sessions */
	sess_t *open;  /* synthetic sessions (ring) */
	uint64_t n_synth;
	uint64_t g_key; /* current fan-out group */
	uint32_t g_left;
	int64_t g_end;
	tr_seg_t segs[4];
};

int tr_prefix_new(const tr_opts_t *o, uint64_t seed, tr_prefix_t **out, err_t *e)
{
	*out = NULL;
	if (o->prefix_shared_prob > 0 && (o->prefix_count == 0 || o->prefix_count > MAX_PROMPTS))
		return err_set(e, KS_EINPUT, "[trace] prefix_count: must be in [1, %u]",
		               MAX_PROMPTS);
	tr_prefix_t *p = calloc(1, sizeof *p);
	if (!p)
		return err_set(e, KS_ENOMEM, "out of memory");
	p->o = *o;
	p->seed = seed;
	p->rng = tr_rng_new(seed, 3);
	if (!p->rng)
		goto nomem;
	if (o->prefix_shared_prob > 0) {
		p->cdf = malloc(o->prefix_count * sizeof *p->cdf);
		if (!p->cdf)
			goto nomem;
		double s = 0;
		for (uint32_t g = 0; g < o->prefix_count; g++)
			p->cdf[g] = s += pow(g + 1.0, -o->prefix_zipf_s);
		for (uint32_t g = 0; g < o->prefix_count; g++)
			p->cdf[g] /= s;
	}
	if (o->session_mode == TR_SESS_SYNTH) {
		if (o->session_active == 0) {
			tr_prefix_free(p);
			return err_set(e, KS_EINPUT, "[trace] session_active: must be >= 1");
		}
		if (!(p->open = calloc(o->session_active, sizeof *p->open)))
			goto nomem;
	}
	*out = p;
	return 0;
nomem:
	tr_prefix_free(p);
	return err_set(e, KS_ENOMEM, "out of memory");
}

void tr_prefix_free(tr_prefix_t *p)
{
	if (!p)
		return;
	gsl_rng_free(p->rng);
	FREE_ALL(p->cdf, p->table, p->open, p);
}

/* Uniform in (0,1) from a hash, so a prompt's length needs no stored state. */
static double hash_unit(uint64_t h)
{
	return ((h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static void pick_prompt(tr_prefix_t *p, uint64_t *key, uint32_t *len)
{
	*len = 0;
	*key = 0;
	if (!(p->o.prefix_shared_prob > 0) || gsl_rng_uniform(p->rng) >= p->o.prefix_shared_prob)
		return;
	double u = gsl_rng_uniform(p->rng);
	uint32_t lo = (uint32_t)tr_cdf_index(p->cdf, p->o.prefix_count, u);
	uint64_t h = tr_mix(tr_mix(TR_ROOT_ID, p->seed), 0x70726f6d7074ULL + lo);
	*key = h;
	double L = p->o.prefix_tokens;
	if (p->o.prefix_sigma > 0) {
		/* lognormal with the given mean: mu = ln(mean) - sigma^2/2 (Box-Muller) */
		double s = p->o.prefix_sigma;
		double z = sqrt(-2 * log(hash_unit(tr_mix(h, 1)))) *
		           cos(2 * M_PI * hash_unit(tr_mix(h, 2)));
		L = exp(log(L) - s * s / 2 + s * z);
	}
	*len = L >= 4294967295.0 ? UINT32_MAX : (uint32_t)llround(L);
}

static sess_t *session_for(tr_prefix_t *p, uint64_t *sid, uint32_t input_len)
{
	if (p->o.session_mode == TR_SESS_TRACE && *sid) {
		sess_t *s = &p->table[tr_mix(TR_ROOT_ID, *sid) & (SESS_SLOTS - 1)];
		if (s->sid != *sid) {
			memset(s, 0, sizeof *s);
			s->sid = *sid;
		}
		return s;
	}
	if (p->o.session_mode == TR_SESS_SYNTH) {
		uint32_t n = p->o.session_active;
		uint64_t open = p->n_synth < n ? p->n_synth : n;
		if (open && gsl_rng_uniform(p->rng) < p->o.session_prob) {
			sess_t *s = &p->open[gsl_rng_uniform_int(p->rng, open)];
			*sid = s->sid;
			return s;
		}
		/* A new session replaces a random one once all slots are open. */
		sess_t *s = &p->open[p->n_synth < n ? p->n_synth : gsl_rng_uniform_int(p->rng, n)];
		memset(s, 0, sizeof *s);
		s->sid = *sid = ++p->n_synth;
		return s;
	}
	(void)input_len;
	return NULL;
}

int tr_prefix_segments(tr_prefix_t *p, int64_t t_ns, uint32_t L, uint32_t out_len, uint64_t *sid,
                       const tr_seg_t **segs, uint32_t *n, err_t *e)
{
	uint32_t k = 0;
	*segs = p->segs;
	/* 1. fan-out groups */
	if (p->g_left && t_ns < p->g_end) {
		p->g_left--;
		p->segs[k++] = (tr_seg_t){p->g_key, p->o.group_tokens, 0};
		p->segs[k++] = (tr_seg_t){0, UINT32_MAX, 1};
		*n = k;
		return 0;
	}
	p->g_left = 0;
	if (p->o.group_prob > 0 && p->o.group_size > 1 &&
	    gsl_rng_uniform(p->rng) < p->o.group_prob) {
		p->g_key = tr_mix(tr_mix(TR_ROOT_ID, p->seed),
		                  gsl_rng_get(p->rng) ^ (uint64_t)gsl_rng_get(p->rng) << 32);
		p->g_left = p->o.group_size - 1;
		double w = p->o.group_window_s * 1e9;
		p->g_end = w < (double)(INT64_MAX - t_ns) ? t_ns + (int64_t)w : INT64_MAX;
		p->segs[k++] = (tr_seg_t){p->g_key, p->o.group_tokens, 0};
		p->segs[k++] = (tr_seg_t){0, UINT32_MAX, 1};
		*n = k;
		return 0;
	}
	/* 2. sessions; the table (2 MiB) is made when a trace first names one */
	if (p->o.session_mode == TR_SESS_TRACE && *sid && !p->table &&
	    !(p->table = calloc(SESS_SLOTS, sizeof *p->table)))
		return err_set(e, KS_ENOMEM, "out of memory");
	sess_t *s = session_for(p, sid, L);
	if (s) {
		/* Synthetic sessions draw lengths independently of the history, so
		 * a later turn shares min(len, context); only trace sessions treat
		 * a shorter turn as truncated history. */
		if (!s->key || (p->o.session_mode == TR_SESS_TRACE && L < s->ctx)) {
			/* first turn, or history was truncated: a new epoch */
			if (!s->key)
				pick_prompt(p, &s->p_key, &s->p_len);
			s->key = tr_mix(tr_mix(TR_ROOT_ID, p->seed),
			                gsl_rng_get(p->rng) ^ (uint64_t)gsl_rng_get(p->rng) << 32);
		}
		uint64_t c = (uint64_t)L + out_len;
		s->ctx = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
		if (s->p_len)
			p->segs[k++] = (tr_seg_t){s->p_key, s->p_len, 0};
		p->segs[k++] = (tr_seg_t){s->key, UINT32_MAX, 0};
		*n = k;
		return 0;
	}
	/* 3. shared prompts, then unique tokens */
	uint64_t key;
	uint32_t len;
	pick_prompt(p, &key, &len);
	if (len)
		p->segs[k++] = (tr_seg_t){key, len, 0};
	p->segs[k++] = (tr_seg_t){0, UINT32_MAX, 1};
	*n = k;
	return 0;
}
