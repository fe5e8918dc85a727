/* tr_sess — the content of agent/RAG sessions (trace.gen = sessions): a pool
 * of long documents and per-user sessions of several turns over one of them.
 *
 * A session picks a document (Zipf popularity over the pool) and a turn
 * count; turn k's prompt is the document, then every earlier turn's
 * question and answer, then a new question; its output is the answer, which
 * the next turn's prompt repeats. Block ids chain over that content
 * (tr.h): the document's full blocks are the same ids in every session
 * that reads it, whoever the user, so a document's KV computed for one
 * session is a prefix hit for any later one; the block holding the
 * document's tail and the first question, and everything after it, is the
 * session's own.
 *
 * This module makes content only: when a request arrives is the closed-loop
 * clients' business (sim/run/sim_clients.h), since it depends on when the
 * user's previous request completed in the simulation. A user's k-th
 * request is a pure function of (seed, user, k), whatever the timing, so two
 * runs with the same seed and different policies offer every user the same
 * sessions (paired comparisons).
 *
 * Token counts uint32; requests longer than max_tokens are clamped there.
 * Errors: KS_EINPUT "[trace] key: reason", KS_ENOMEM. Nothing here exits.
 */
#ifndef KVSIM_TR_SESS_H
#define KVSIM_TR_SESS_H

#include <stdint.h>

#include "sim/base/cfg.h"
#include "sim/base/err.h"
#include "traces/tr.h"

/* The [trace] keys of gen = sessions (tr_gen_session.c's table, with each
 * default's reason). */
typedef struct tr_sess_opts {
	uint32_t users;       /* closed-loop clients, each with at most one request in flight */
	double think_s;       /* mean think time after a response (or a rejection) */
	int think_fixed;      /* 0: exponential think times, 1: always think_s */
	uint32_t docs;        /* documents in the pool */
	uint32_t doc_min_tokens, doc_max_tokens; /* document length, uniform */
	double doc_zipf;      /* Zipf exponent of document popularity (0: uniform) */
	uint32_t turns_min, turns_max; /* turns per session, uniform */
	double question_tokens, question_sigma; /* lognormal question length */
} tr_sess_opts_t;

extern const cfg_tkey_t tr_sess_cfg_keys[];
extern const size_t tr_sess_cfg_keys_n;

void tr_sess_opts_default(tr_sess_opts_t *so);
/* Reads the keys of the [trace] section that belong to gen = sessions. */
int tr_sess_opts_from_cfg(const cfg_t *cfg, tr_sess_opts_t *so, err_t *e);
/* 1 when o describes a closed-loop workload (kind = gen, gen = sessions). */
int tr_closed_loop(const tr_opts_t *o);
/* The rules between keys, and the [trace] keys that do not apply to a
 * closed loop (a window, rate_scale, a file): "[trace] key: reason". */
int tr_sess_check(const tr_opts_t *o, const tr_sess_opts_t *so, err_t *e);

typedef struct tr_sess tr_sess_t;

/* One request of a session. blocks (n_blocks prompt ids, then n_out_blocks
 * ids of full blocks ending in the answer) stays valid until the next
 * tr_sess_next. */
typedef struct tr_sess_req {
	uint32_t input_len, output_len;
	uint32_t n_blocks, n_out_blocks;
	const uint64_t *blocks;
	uint64_t session_id; /* unique in the run, nonzero */
	uint32_t turn;       /* 1 for a session's first request */
	uint32_t turns;      /* the session's turn count */
	uint32_t doc;        /* document index, 0 = the most popular */
	uint32_t doc_tokens;
} tr_sess_req_t;

/* o gives the output lengths (out_*), max_tokens; so the sessions; S the
 * simulated block size; seed the trace stream. */
int tr_sess_new(const tr_opts_t *o, const tr_sess_opts_t *so, uint32_t S, uint64_t seed,
		tr_sess_t **out, err_t *e);
/* User `user`'s next request (user < so->users). 1, or < 0 on error. */
int tr_sess_next(tr_sess_t *s, uint32_t user, tr_sess_req_t *out, err_t *e);
void tr_sess_free(tr_sess_t *s);

#endif
