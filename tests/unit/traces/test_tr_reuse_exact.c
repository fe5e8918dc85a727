/* tr_reuse's exact curves (traces/tr_reuse.c) against a brute-force LRU
 * cache simulated separately at every capacity from 1 to past the largest
 * stack distance, on a small generated trace: the cluster curve (one cache)
 * and the per-instance curve (round-robin over 3 caches) give the same hit
 * counts at each capacity; and the unbounded point is the share of prompt
 * blocks whose id came in an earlier request (prompt or stored output). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fixtures/test_main.h"
#include "tests/fixtures/tr_reuse_fixture.h"

/* The trace in memory: every request's ids (prompt then output). */
typedef struct reqs {
	uint64_t *ids;
	size_t *start; /* n + 1 offsets into ids */
	uint32_t *n_prompt;
	size_t n;
} reqs_t;

static reqs_t load(const tr_opts_t *o)
{
	reqs_t q = {calloc(1u << 20, 8), calloc(1u << 14, sizeof(size_t)), calloc(1u << 14, 4), 0};
	tr_reader_t *r;
	err_t e = {0};
	assert_int_equal(tr_open(o, RF_BLOCK_TOKENS, 11, &r, &e), 0);
	tr_request_t x;
	size_t at = 0;
	while (tr_next(r, &x, &e) > 0) {
		uint32_t n = x.n_blocks + x.n_out_blocks;
		assert_true(q.n + 1 < (1u << 14) && at + n < (1u << 20));
		q.start[q.n] = at;
		q.n_prompt[q.n++] = x.n_blocks;
		memcpy(q.ids + at, x.blocks, n * 8);
		at += n;
	}
	q.start[q.n] = at;
	tr_close(r);
	return q;
}

/* A cache of cap blocks, each with its last use; the least recent goes. */
typedef struct lru {
	uint64_t *id, *used;
	size_t n, cap, clock;
} lru_t;

static long lru_find(const lru_t *c, uint64_t id)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->id[i] == id)
			return (long)i;
	return -1;
}

static void lru_put(lru_t *c, uint64_t id)
{
	long i = lru_find(c, id);
	if (i < 0 && c->n < c->cap) {
		i = (long)c->n++;
	} else if (i < 0) {
		i = 0;
		for (size_t j = 1; j < c->n; j++)
			if (c->used[j] < c->used[i])
				i = (long)j;
	}
	c->id[i] = id;
	c->used[i] = ++c->clock;
}

/* Prompt-block hits of requests i = k mod m (all when m = 1) on caches of
 * cap blocks, one per residue: hits looked up as a request finds its
 * cache, then its blocks stored deepest first (tr_reuse.h). */
static uint64_t brute_hits(const reqs_t *q, size_t cap, uint32_t m)
{
	uint64_t hits = 0;
	for (uint32_t k = 0; k < m; k++) {
		lru_t c = {calloc(cap, 8), calloc(cap, 8), 0, cap, 0};
		for (size_t i = k; i < q->n; i += m) {
			const uint64_t *ids = q->ids + q->start[i];
			size_t n = q->start[i + 1] - q->start[i];
			for (uint32_t b = 0; b < q->n_prompt[i]; b++)
				hits += lru_find(&c, ids[b]) >= 0;
			for (size_t b = n; b-- > 0;)
				lru_put(&c, ids[b]);
		}
		free(c.id);
		free(c.used);
	}
	return hits;
}

static void test_exact_curve_equals_brute_force_lru_at_every_capacity(void **st)
{
	(void)st;
	tr_opts_t o;
	rf_opts(&o, 160, 64);
	reqs_t q = load(&o);
	tr_reuse_t u;
	rf_compute(&o, 3, 1, &u);
	assert_int_equal(u.requests, q.n);
	uint64_t acc = u.cluster.accesses, top = tr_reuse_max_distance(&u.cluster, 1);
	assert_int_equal(acc, u.prompt_blocks);
	assert_int_equal(u.inst_all.accesses, acc);
	assert_true(top > 50); /* reuse at many distances, not only the next request */
	uint64_t last = 0;
	for (uint64_t c = 1; c <= top + 2; c++) {
		uint64_t h = brute_hits(&q, c, 1), hi = brute_hits(&q, c, 3);
		if (tr_reuse_hit_rate(&u.cluster, 1, c) != (double)h / (double)acc ||
		    tr_reuse_hit_rate(&u.inst_all, 1, c) != (double)hi / (double)acc)
			fail_msg(
			    "capacity %llu: cluster %.9f vs brute %.9f, instances %.9f vs %.9f",
			    (unsigned long long)c, tr_reuse_hit_rate(&u.cluster, 1, c),
			    (double)h / (double)acc, tr_reuse_hit_rate(&u.inst_all, 1, c),
			    (double)hi / (double)acc);
		last = h;
	}
	/* past the largest distance: every block seen before hits */
	assert_true(tr_reuse_hit_rate(&u.cluster, 1, UINT64_MAX) == (double)last / (double)acc);
	assert_true(last > acc / 4);
	tr_reuse_free(&u);
	free(q.ids);
	free(q.start);
	free(q.n_prompt);
}

/* (id, request, prompt?) for the sort below */
typedef struct use {
	uint64_t id;
	size_t req;
	int prompt;
} use_t;

static int use_cmp(const void *a, const void *b)
{
	const use_t *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->req > y->req) - (x->req < y->req);
}

static void test_unbounded_point_is_the_share_of_blocks_seen_before(void **st)
{
	(void)st;
	tr_opts_t o;
	rf_opts(&o, 2000, 256);
	reqs_t q = load(&o);
	tr_reuse_t u;
	rf_compute(&o, 4, 1, &u);
	/* a prompt block hits an unbounded cache when its id came in an earlier
	 * request, prompt or output: sort the uses by id, then request */
	size_t n = q.start[q.n], k = 0;
	use_t *v = calloc(n, sizeof *v);
	for (size_t i = 0; i < q.n; i++)
		for (size_t b = q.start[i]; b < q.start[i + 1]; b++)
			v[k++] = (use_t){q.ids[b], i, b - q.start[i] < q.n_prompt[i]};
	qsort(v, n, sizeof *v, use_cmp);
	uint64_t seen = 0;
	for (size_t i = 0, first = 0; i < n; i++) {
		if (!i || v[i].id != v[i - 1].id)
			first = v[i].req;
		seen += v[i].prompt && v[i].req > first;
	}
	assert_true(tr_reuse_hit_rate(&u.cluster, 1, UINT64_MAX) ==
	            (double)seen / (double)u.prompt_blocks);
	/* the sessions' next turns reuse what their previous output stored, which
	 * tr_stats (prompt ids only) does not count */
	tr_reader_t *r;
	err_t e = {0};
	tr_stats_t s;
	assert_int_equal(tr_open(&o, RF_BLOCK_TOKENS, 11, &r, &e), 0);
	assert_int_equal(tr_stats_compute(r, 1, &s, &e), 0);
	tr_close(r);
	assert_int_equal(u.prompt_blocks, s.blocks);
	assert_true(tr_reuse_hit_rate(&u.cluster, 1, UINT64_MAX) > s.reuse_block);
	/* four instances see less of each other's prompts than one cache */
	assert_true(tr_reuse_hit_rate(&u.inst_all, 1, UINT64_MAX) <
	            tr_reuse_hit_rate(&u.cluster, 1, UINT64_MAX));
	tr_reuse_free(&u);
	free(v);
	free(q.ids);
	free(q.start);
	free(q.n_prompt);
}

TEST_MAIN(cmocka_unit_test(test_exact_curve_equals_brute_force_lru_at_every_capacity),
          cmocka_unit_test(test_unbounded_point_is_the_share_of_blocks_seen_before))
