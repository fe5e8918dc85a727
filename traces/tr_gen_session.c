/* tr_gen_session — agent/RAG session content (tr_sess.h): a document pool,
 * sessions of several turns over one document, chained block ids. */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/mem.h"
#include "sim/base/vec.h"
#include "traces/tr_int.h"
#include "traces/tr_sess.h"

static const cfg_enum_t think_map[] = {{"exponential", 0}, {"fixed", 1}, {NULL, 0}};

/* Every key here acts only in a closed loop (cfg_when_t). */
static const cfg_when_t when_sessions = {"trace.kind = gen and trace.gen = sessions", NULL};

#define S "trace"
const cfg_tkey_t tr_sess_cfg_keys[] = {
    {{S, "users", CFG_INT, "16", 1, 1e7, NULL, "users",
      "gen = sessions: closed-loop users, each with at most one request in flight (own "
      "choice: a small team on one endpoint; the load axis of a closed loop)",
      NULL},
     CFG_AT_WHEN(U32, tr_sess_opts_t, users, &when_sessions)},
    {{S, "think_s", CFG_FLOAT, "5", 0, 1e6, NULL, "s",
      "gen = sessions: mean think time between a user's response (or rejection) and its "
      "next request, also before its first (own choice: reading an answer and asking on; "
      "an agent's tool call is shorter)",
      NULL},
     CFG_AT_WHEN(DOUBLE, tr_sess_opts_t, think_s, &when_sessions)},
    {{S, "think_dist", CFG_ENUM, "exponential", 0, 0, NULL, "",
      "gen = sessions: think times exponential with mean think_s (memoryless users, the "
      "classic closed queueing model), or fixed at think_s",
      NULL},
     CFG_AT_ENUM_WHEN(tr_sess_opts_t, think_fixed, think_map, &when_sessions)},
    {{S, "docs", CFG_INT, "64", 1, 4194304, NULL, "",
      "gen = sessions: documents in the pool sessions read (own choice)", NULL},
     CFG_AT_WHEN(U32, tr_sess_opts_t, docs, &when_sessions)},
    {{S, "doc_min_tokens", CFG_INT, "8192", 1, 16777216, NULL, "tokens",
      "gen = sessions: shortest document; lengths are uniform in [doc_min_tokens, "
      "doc_max_tokens] (own choice: long-document RAG, 8K-32K tokens)",
      NULL},
     CFG_AT_WHEN(U32, tr_sess_opts_t, doc_min_tokens, &when_sessions)},
    {{S, "doc_max_tokens", CFG_INT, "32768", 1, 16777216, NULL, "tokens",
      "gen = sessions: longest document", NULL},
     CFG_AT_WHEN(U32, tr_sess_opts_t, doc_max_tokens, &when_sessions)},
    {{S, "doc_zipf", CFG_FLOAT, "1", 0, 10, NULL, "",
      "gen = sessions: Zipf exponent of document popularity, 0 uniform (own choice: "
      "Zipf's law; web objects measure 0.64-0.83, Breslau et al. 1999)",
      NULL},
     CFG_AT_WHEN(DOUBLE, tr_sess_opts_t, doc_zipf, &when_sessions)},
    {{S, "turns_min", CFG_INT, "1", 1, 1e6, NULL, "",
      "gen = sessions: fewest turns of a session; counts are uniform in [turns_min, "
      "turns_max] (own choice: LMSYS-Chat-1M averages 2.0 turns, Zheng et al. 2023; "
      "agent sessions run longer)",
      NULL},
     CFG_AT_WHEN(U32, tr_sess_opts_t, turns_min, &when_sessions)},
    {{S, "turns_max", CFG_INT, "8", 1, 1e6, NULL, "", "gen = sessions: most turns of a session",
      NULL},
     CFG_AT_WHEN(U32, tr_sess_opts_t, turns_max, &when_sessions)},
    {{S, "question_tokens", CFG_FLOAT, "256", 1, 16777216, NULL, "tokens",
      "gen = sessions: mean length of each turn's new question, lognormal (own choice); "
      "answers come from out_dist",
      NULL},
     CFG_AT_WHEN(DOUBLE, tr_sess_opts_t, question_tokens, &when_sessions)},
    {{S, "question_sigma", CFG_FLOAT, "0.5", 0, 10, NULL, "",
      "gen = sessions: lognormal sigma of log(question length) (own choice)", NULL},
     CFG_AT_WHEN(DOUBLE, tr_sess_opts_t, question_sigma, &when_sessions)},
};
#undef S
const size_t tr_sess_cfg_keys_n = sizeof tr_sess_cfg_keys / sizeof tr_sess_cfg_keys[0];

void tr_sess_opts_default(tr_sess_opts_t *so)
{
	memset(so, 0, sizeof *so);
	(void)cfg_fill_defaults(tr_sess_cfg_keys, tr_sess_cfg_keys_n, so, NULL);
}

int tr_sess_opts_from_cfg(const cfg_t *cfg, tr_sess_opts_t *so, err_t *e)
{
	tr_sess_opts_default(so);
	return cfg_fill(cfg, tr_sess_cfg_keys, tr_sess_cfg_keys_n, so, e);
}

/* Never read as a trace: tr_open refuses a closed loop before a source. */
static int sessions_open(const tr_opts_t *o, uint64_t seed, tr_src_t **out, err_t *e)
{
	(void)o, (void)seed;
	*out = NULL;
	return err_set(e, KS_EINPUT, "[trace] gen: sessions is a closed loop, made in a run");
}

const tr_gen_ops_t tr_gen_sessions = {
    .name = "sessions", .flags = TR_GEN_F_CLOSED, .open = sessions_open};

int tr_sess_check(const tr_opts_t *o, const tr_sess_opts_t *so, err_t *e)
{
	int rc = tr_opts_check(o, e);
	if (!rc)
		rc = cfg_fields_check(tr_sess_cfg_keys, tr_sess_cfg_keys_n, so, e);
	if (rc)
		return rc;
	if (so->doc_min_tokens > so->doc_max_tokens)
		return err_set(e, KS_EINPUT, "[trace] doc_min_tokens: %u is above doc_max_tokens = %u",
			       so->doc_min_tokens, so->doc_max_tokens);
	if (so->turns_min > so->turns_max)
		return err_set(e, KS_EINPUT, "[trace] turns_min: %u is above turns_max = %u",
			       so->turns_min, so->turns_max);
	if (!(o->duration_s > 0) && !o->requests && !o->limit)
		return err_set(e, KS_EINPUT,
			       "[trace] duration_s: gen = sessions needs duration_s > 0 or requests > 0 "
			       "(closed-loop users never stop by themselves)");
	/* what a closed loop cannot honour is an error, not ignored */
	if (o->rate_scale != 1)
		return err_set(e, KS_EINPUT,
			       "[trace] rate_scale: does not apply to gen = sessions: a closed loop's "
			       "load is users and think_s");
	if (o->start_s != 0 || o->end_s != 0)
		return err_set(e, KS_EINPUT,
			       "[trace] %s: does not apply to gen = sessions: there is no trace to "
			       "window (duration_s ends it)",
			       o->start_s != 0 ? "start_s" : "end_s");
	if (o->path && *o->path)
		return err_set(e, KS_EINPUT,
			       "[trace] path: '%s' is not read: gen = sessions makes its own requests",
			       o->path);
	return 0;
}

typedef struct sess_user {
	uint64_t serial, sessions; /* requests made, sessions started */
	uint32_t doc, turn, turns;
	uint32_t *qa; /* q1, a1, q2, a2, ... of the current session */
	uint32_t qa_cap;
} sess_user_t;

struct tr_sess {
	tr_opts_t o;
	tr_sess_opts_t so;
	uint32_t S;
	uint64_t base; /* the run's key for content and per-request streams */
	gsl_rng *rng;  /* reseeded per request: (user, serial) alone decide it */
	tr_dist_t *dq, *dout;
	uint32_t *doc_len;
	double *doc_cdf;
	sess_user_t *u;
	tr_seg_t *segs;
	size_t seg_cap;
	uint64_t *blocks;
	size_t blk_cap;
};

void tr_sess_free(tr_sess_t *s)
{
	if (!s)
		return;
	gsl_rng_free(s->rng);
	tr_dist_free(s->dq);
	tr_dist_free(s->dout);
	for (uint32_t i = 0; s->u && i < s->so.users; i++)
		free(s->u[i].qa);
	FREE_ALL(s->doc_len, s->doc_cdf, s->u, s->segs, s->blocks, s);
}

int tr_sess_new(const tr_opts_t *o, const tr_sess_opts_t *so, uint32_t S, uint64_t seed,
		tr_sess_t **out, err_t *e)
{
	*out = NULL;
	if (S == 0)
		return err_set(e, KS_EINPUT, "trace: simulated block size must be > 0");
	int rc = tr_sess_check(o, so, e);
	if (rc)
		return rc;
	tr_sess_t *s = calloc(1, sizeof *s);
	if (!s)
		return err_set(e, KS_ENOMEM, "out of memory");
	s->o = *o;
	s->so = *so;
	s->S = S;
	s->base = tr_mix(tr_mix(TR_ROOT_ID, seed), 0x73657373696f6eULL);
	tr_dist_opts_t q = {.kind = TR_DIST_LOGNORMAL, .mean = so->question_tokens,
			    .sigma = so->question_sigma, .min = 1, .max = 0};
	s->rng = tr_rng_new(seed, 3);
	s->doc_len = malloc(so->docs * sizeof *s->doc_len);
	s->doc_cdf = malloc(so->docs * sizeof *s->doc_cdf);
	s->u = calloc(so->users, sizeof *s->u);
	if (!s->rng || !s->doc_len || !s->doc_cdf || !s->u) {
		rc = err_set(e, KS_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = tr_dist_new(&q, "question", 0, o->max_tokens, &s->dq, e)) ||
	    (rc = tr_dist_new(&o->out, "out", 1, o->max_tokens, &s->dout, e)))
		goto fail;
	/* documents: lengths from the stream as seeded, popularity by index */
	double sum = 0;
	for (uint32_t d = 0; d < so->docs; d++) {
		s->doc_len[d] = so->doc_min_tokens +
				(uint32_t)gsl_rng_uniform_int(s->rng, so->doc_max_tokens -
									  so->doc_min_tokens + 1ul);
		s->doc_cdf[d] = sum += pow(d + 1.0, -so->doc_zipf);
	}
	for (uint32_t d = 0; d < so->docs; d++)
		s->doc_cdf[d] /= sum;
	*out = s;
	return 0;
fail:
	tr_sess_free(s);
	return rc;
}

static uint32_t add_sat(uint64_t a, uint64_t b, uint32_t max)
{
	return a + b > max ? max : (uint32_t)(a + b);
}

/* Ids of the first n full S-token blocks of the content sg[0..ns): each
 * block mixes every piece (key, offset in its segment, length) it covers
 * into the chain, as tr_read.c does for generated content, so equal
 * content at equal positions gives equal ids. */
static void chain(tr_sess_t *s, const tr_seg_t *sg, uint32_t ns, uint32_t n)
{
	uint64_t h = TR_ROOT_ID;
	uint32_t k = 0, off = 0;
	for (uint32_t j = 0; j < n; j++) {
		for (uint32_t left = s->S; left && k < ns;) {
			if (off >= sg[k].tokens) {
				k++;
				off = 0;
				continue;
			}
			uint32_t take = sg[k].tokens - off < left ? sg[k].tokens - off : left;
			h = tr_mix(tr_mix(h, sg[k].key), (uint64_t)off << 32 | take);
			off += take;
			left -= take;
		}
		s->blocks[j] = h;
	}
}

int tr_sess_next(tr_sess_t *s, uint32_t user, tr_sess_req_t *out, err_t *e)
{
	const tr_sess_opts_t *so = &s->so;
	if (user >= so->users)
		return err_set(e, KS_EINPUT, "sessions: user %u of %u", user, so->users);
	sess_user_t *u = &s->u[user];
	gsl_rng_set(s->rng, (unsigned long)tr_mix(tr_mix(s->base, user), u->serial++));
	if (u->turn >= u->turns) { /* a new session */
		u->sessions++;
		u->doc = (uint32_t)tr_cdf_index(s->doc_cdf, so->docs, gsl_rng_uniform(s->rng));
		u->turns = so->turns_min +
			   (uint32_t)gsl_rng_uniform_int(s->rng, so->turns_max - so->turns_min + 1ul);
		u->turn = 0;
	}
	if (VEC_GROW(u->qa, u->qa_cap, 2 * (u->turn + 1), 8) ||
	    VEC_GROW(s->segs, s->seg_cap, 2 * (u->turn + 1) + 1, 16))
		return err_set(e, KS_ENOMEM, "out of memory");
	u->qa[2 * u->turn] = tr_dist_draw(s->dq, s->rng);
	u->qa[2 * u->turn + 1] = tr_dist_draw(s->dout, s->rng);
	u->turn++;
	uint64_t sid = (uint64_t)(user + 1) << 32 | (u->sessions & 0xffffffffu);
	uint64_t skey = tr_mix(s->base, sid);
	/* the document, then each turn's question and answer */
	uint32_t ns = 0, max = s->o.max_tokens;
	s->segs[ns++] = (tr_seg_t){tr_mix(tr_mix(s->base, 0x646f63ULL), u->doc),
				   s->doc_len[u->doc], 0};
	uint32_t in = s->doc_len[u->doc];
	for (uint32_t k = 0; k < u->turn; k++) {
		s->segs[ns++] = (tr_seg_t){tr_mix(skey, 2 * k), u->qa[2 * k], 0};
		if (k + 1 < u->turn) {
			in = add_sat(in, (uint64_t)u->qa[2 * k] + u->qa[2 * k + 1], max);
			s->segs[ns++] = (tr_seg_t){tr_mix(skey, 2 * k + 1), u->qa[2 * k + 1], 0};
		}
	}
	uint32_t q = u->qa[2 * (u->turn - 1)], a = u->qa[2 * u->turn - 1];
	in = add_sat(in, q, max);
	s->segs[ns++] = (tr_seg_t){tr_mix(skey, 2 * u->turn - 1), a, 0}; /* the answer */
	uint32_t n = in / s->S, na = (uint32_t)(((uint64_t)in + a) / s->S);
	if (VEC_GROW(s->blocks, s->blk_cap, na ? na : 1, 64))
		return err_set(e, KS_ENOMEM, "out of memory");
	chain(s, s->segs, ns, na);
	*out = (tr_sess_req_t){in, a, n, na - n, s->blocks, sid, u->turn, u->turns, u->doc,
			       s->doc_len[u->doc]};
	return 1;
}
