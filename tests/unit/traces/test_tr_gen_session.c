/* Session content (traces/tr_gen_session.c): a document's blocks are the
 * same ids in every session that reads it, a turn repeats the previous
 * turn's prompt and answer, and a user's requests do not depend on the
 * order in which users are asked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/test_main.h"
#include "traces/tr_sess.h"

#define S_TOK 16
#define NREQ 6

typedef struct got {
	tr_sess_req_t q;
	uint64_t ids[4096];
	uint32_t n_ids;
} got_t;

/* Trace options of a 10 s sessions workload. */
static void sess_trace(tr_opts_t *o)
{
	tr_opts_default(o);
	o->kind = TR_KIND_GEN;
	o->gen = TR_GEN_SESSIONS;
	o->duration_s = 10;
}

static tr_sess_t *open_sess(uint32_t users, uint32_t docs)
{
	tr_opts_t o;
	sess_trace(&o);
	tr_sess_opts_t so;
	tr_sess_opts_default(&so);
	so.users = users;
	so.docs = docs;
	so.doc_zipf = 0;
	so.doc_min_tokens = 100;
	so.doc_max_tokens = 300;
	so.turns_min = 1;
	so.turns_max = 3;
	so.question_tokens = 40;
	tr_sess_t *s = NULL;
	err_t e = {0};
	int rc = tr_sess_new(&o, &so, S_TOK, 42, &s, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	return s;
}

static void next_into(tr_sess_t *s, uint32_t user, got_t *g)
{
	err_t e = {0};
	assert_int_equal(tr_sess_next(s, user, &g->q, &e), 1);
	g->n_ids = g->q.n_blocks + g->q.n_out_blocks;
	assert_true(g->n_ids <= 4096);
	memcpy(g->ids, g->q.blocks, g->n_ids * sizeof *g->ids);
	g->q.blocks = g->ids;
}

/* Sessions of different users over the same document share its full
 * blocks, and part at the block that holds its tail and their question. */
static void test_sess_doc_blocks_same_across_sessions(void **st)
{
	(void)st;
	enum { U = 12 };
	tr_sess_t *s = open_sess(U, 2);
	static got_t g[U][NREQ];
	for (uint32_t k = 0; k < NREQ; k++)
		for (uint32_t u = 0; u < U; u++)
			next_into(s, u, &g[u][k]);
	int pairs = 0;
	for (uint32_t a = 0; a < U * NREQ; a++)
		for (uint32_t b = a + 1; b < U * NREQ; b++) {
			const got_t *x = &g[a / NREQ][a % NREQ], *y = &g[b / NREQ][b % NREQ];
			if (x->q.session_id == y->q.session_id || x->q.doc != y->q.doc)
				continue;
			uint32_t full = x->q.doc_tokens / S_TOK;
			assert_int_equal(x->q.doc_tokens, y->q.doc_tokens);
			assert_true(x->q.n_blocks > full && y->q.n_blocks > full);
			assert_memory_equal(x->ids, y->ids, full * sizeof *x->ids);
			assert_true(x->ids[full] != y->ids[full]);
			pairs++;
		}
	assert_true(pairs > 100); /* 72 requests over 2 documents */
	tr_sess_free(s);
}

/* Turn k + 1's prompt starts with turn k's prompt and answer: its first
 * ids are turn k's prompt and output ids. */
static void test_sess_next_turn_repeats_prompt_and_answer(void **st)
{
	(void)st;
	tr_sess_t *s = open_sess(3, 5);
	static got_t g[NREQ * 4];
	int follows = 0;
	for (uint32_t k = 0; k < NREQ * 4; k++) {
		next_into(s, 1, &g[k]);
		if (g[k].q.turn == 1) {
			assert_true(k == 0 || g[k - 1].q.turn == g[k - 1].q.turns);
			assert_true(k == 0 || g[k].q.session_id != g[k - 1].q.session_id);
			continue;
		}
		const got_t *p = &g[k - 1];
		assert_int_equal(g[k].q.turn, p->q.turn + 1);
		assert_int_equal(g[k].q.session_id, p->q.session_id);
		assert_true(g[k].q.input_len > p->q.input_len + p->q.output_len);
		assert_true(g[k].q.n_blocks >= p->n_ids);
		assert_memory_equal(g[k].ids, p->ids, p->n_ids * sizeof *p->ids);
		follows++;
	}
	assert_true(follows > 5);
	tr_sess_free(s);
}

/* User 0's requests are the same whether it is asked first or after
 * others: they depend on (seed, user, k) alone. */
static void test_sess_user_content_independent_of_order(void **st)
{
	(void)st;
	tr_sess_t *a = open_sess(4, 8), *b = open_sess(4, 8);
	static got_t x[NREQ], y[NREQ], junk;
	for (uint32_t k = 0; k < NREQ; k++)
		next_into(a, 0, &x[k]);
	for (uint32_t k = 0; k < NREQ; k++) {
		next_into(b, 3, &junk);
		next_into(b, 2, &junk);
		next_into(b, 0, &y[k]);
	}
	for (uint32_t k = 0; k < NREQ; k++) {
		assert_int_equal(x[k].q.input_len, y[k].q.input_len);
		assert_int_equal(x[k].q.output_len, y[k].q.output_len);
		assert_int_equal(x[k].q.session_id, y[k].q.session_id);
		assert_int_equal(x[k].n_ids, y[k].n_ids);
		assert_memory_equal(x[k].ids, y[k].ids, x[k].n_ids * sizeof *x[k].ids);
	}
	tr_sess_free(a);
	tr_sess_free(b);
}

static void test_sess_option_errors(void **st)
{
	(void)st;
	tr_opts_t o;
	sess_trace(&o);
	tr_sess_opts_t so;
	tr_sess_opts_default(&so);
	tr_sess_t *s = NULL;
	err_t e = {0};
	so.turns_min = 0;
	assert_int_equal(tr_sess_new(&o, &so, S_TOK, 1, &s, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "[trace] turns_min"));
	assert_null(s);
	tr_sess_opts_default(&so);
	e = (err_t){0};
	o.duration_s = 0;
	assert_int_equal(tr_sess_new(&o, &so, S_TOK, 1, &s, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "[trace] duration_s: gen = sessions needs"));
	o.duration_s = 10;
	e = (err_t){0};
	assert_int_equal(tr_sess_new(&o, &so, S_TOK, 1, &s, &e), 0);
	tr_sess_req_t q;
	assert_int_equal(tr_sess_next(s, so.users, &q, &e), KS_EINPUT);
	assert_non_null(strstr(e.msg, "user 16 of 16"));
	tr_sess_free(s);
}

/* Reading the trace without a run (kvsim trace stats, reuse, validate,
 * empirical lengths) is refused: only a simulation makes a closed loop. */
static void test_sess_trace_readers_refused(void **st)
{
	(void)st;
	tr_opts_t o;
	sess_trace(&o);
	tr_reader_t *r = NULL;
	err_t e = {0};
	assert_int_equal(tr_open(&o, S_TOK, 1, &r, &e), KS_EINPUT);
	assert_null(r);
	assert_non_null(strstr(e.msg, "[trace] gen: sessions is a closed loop"));
	uint64_t rows;
	e = (err_t){0};
	assert_int_equal(tr_validate(&o, S_TOK, 1, &rows, &e), KS_EINPUT);
}

TEST_MAIN(cmocka_unit_test(test_sess_doc_blocks_same_across_sessions),
	  cmocka_unit_test(test_sess_next_turn_repeats_prompt_and_answer),
	  cmocka_unit_test(test_sess_user_content_independent_of_order),
	  cmocka_unit_test(test_sess_option_errors),
	  cmocka_unit_test(test_sess_trace_readers_refused))
