/* pol_fake — a hand-built cluster view and action recorder for policy tests.
 * Each instance holds a few prefixes (arrays of chained block ids); match()
 * is the longest common prefix with any of them; match_host() also counts
 * prefixes held in the instance's host tier (a leading run of blocks each
 * in some HBM or host prefix at its position). prefill costs
 * ns_per_token per new token; a copy costs ns_per_block per block. copy()
 * refuses blocks the source does not hold, or everything while refuse_all
 * is set, and records what it accepted. */
#ifndef KVSIM_TEST_POL_FAKE_H
#define KVSIM_TEST_POL_FAKE_H

#include <string.h>

#include "policies/pol.h"

#define FK_INST 16
#define FK_HELD 16
#define FK_LOG 256

typedef struct fk_copy {
	uint64_t id;
	uint32_t n, src, dst;
	pol_class_t cls;
	uint64_t last; /* blocks[n-1] */
} fk_copy_t;

typedef struct fake {
	pol_inst_t inst[FK_INST];
	const uint64_t *held[FK_INST][FK_HELD];
	uint32_t held_n[FK_INST][FK_HELD], n_held[FK_INST];
	const uint64_t *host[FK_INST][FK_HELD];
	uint32_t host_n[FK_INST][FK_HELD], n_host[FK_INST];
	int64_t now, ns_per_token, ns_per_block;
	int refuse_all;
	fk_copy_t copies[FK_LOG];
	uint32_t n_copies, n_refused, n_spec, n_cancel;
	uint32_t n_announced, announced_inst; /* pol_actions_t.announce calls, the last one's */
	uint64_t next_id;
	pol_spec_stats_t stats;
	pol_view_t v;
	pol_actions_t a;
} fake_t;

static __attribute__((unused)) int64_t fk_now(void *c)
{
	return ((fake_t *)c)->now;
}

static __attribute__((unused)) void fk_inst(void *c, uint32_t i, pol_inst_t *out)
{
	*out = ((fake_t *)c)->inst[i];
}

static __attribute__((unused)) uint32_t fk_match(void *c, uint32_t i, const uint64_t *b, uint32_t n)
{
	fake_t *f = c;
	uint32_t best = 0;
	for (uint32_t h = 0; h < f->n_held[i]; h++) {
		uint32_t k = 0, hn = f->held_n[i][h];
		while (k < n && k < hn && f->held[i][h][k] == b[k])
			k++;
		if (k > best)
			best = k;
	}
	return best;
}

static __attribute__((unused)) int fk_in(const uint64_t *const *lists, const uint32_t *lens,
                                         uint32_t n_lists, uint32_t k, uint64_t id)
{
	for (uint32_t h = 0; h < n_lists; h++)
		if (lens[h] > k && lists[h][k] == id)
			return 1;
	return 0;
}

static __attribute__((unused)) uint32_t fk_match_host(void *c, uint32_t i, const uint64_t *b,
                                                      uint32_t n)
{
	fake_t *f = c;
	uint32_t k = 0;
	while (k < n && (fk_in(f->held[i], f->held_n[i], f->n_held[i], k, b[k]) ||
	                 fk_in(f->host[i], f->host_n[i], f->n_host[i], k, b[k])))
		k++;
	return k;
}

static __attribute__((unused)) uint64_t fk_held(void *c, uint32_t i)
{
	return ((fake_t *)c)->inst[i].kv_used_blocks;
}

static __attribute__((unused)) int64_t fk_prefill(void *c, uint32_t i, uint64_t nt, uint64_t ct)
{
	(void)i;
	(void)ct;
	return (int64_t)nt * ((fake_t *)c)->ns_per_token;
}

static __attribute__((unused)) int64_t fk_xfer(void *c, uint32_t s, uint32_t d, uint32_t n)
{
	(void)s;
	(void)d;
	return (int64_t)n * ((fake_t *)c)->ns_per_block;
}

static __attribute__((unused)) int fk_copy(void *c, const uint64_t *b, uint32_t n, uint32_t src,
                                           uint32_t dst, pol_class_t cls, uint64_t *id)
{
	fake_t *f = c;
	if (f->refuse_all || fk_match(f, src, b, n) < n) {
		f->n_refused++;
		return POL_COPY_REFUSED;
	}
	*id = ++f->next_id;
	if (f->n_copies < FK_LOG)
		f->copies[f->n_copies++] = (fk_copy_t){*id, n, src, dst, cls, b[n - 1]};
	return POL_COPY_OK;
}

static __attribute__((unused)) int fk_cancel(void *c, uint64_t id)
{
	(void)id;
	((fake_t *)c)->n_cancel++;
	return 0;
}

static __attribute__((unused)) int fk_mark(void *c, uint32_t i, const uint64_t *b, uint32_t n)
{
	(void)i;
	(void)b;
	(void)n;
	((fake_t *)c)->n_spec++;
	return 0;
}

static __attribute__((unused)) int fk_announce(void *c, uint32_t i, const uint64_t *b,
                                               uint32_t n)
{
	(void)b;
	(void)n;
	((fake_t *)c)->n_announced++;
	((fake_t *)c)->announced_inst = i;
	return 0;
}

/* n instances, block size B tokens, block_bytes bytes, 100 ns per token
 * prefill and 1000 ns per block copy unless changed. */
static __attribute__((unused)) void fk_init(fake_t *f, uint32_t n, uint32_t B, uint64_t block_bytes)
{
	memset(f, 0, sizeof *f);
	f->ns_per_token = 100;
	f->ns_per_block = 1000;
	f->v = (pol_view_t){f,        n,          B,       block_bytes,   fk_now, fk_inst,
	                    fk_match, fk_prefill, fk_xfer, fk_match_host, fk_held,
	                    NULL,     NULL,       NULL,          0};
	f->a = (pol_actions_t){f, fk_copy, fk_cancel, fk_mark, &f->stats, fk_announce};
	for (uint32_t i = 0; i < n; i++)
		f->inst[i].kv_cap_blocks = 1000;
}

static __attribute__((unused)) void fk_hold(fake_t *f, uint32_t i, const uint64_t *b, uint32_t n)
{
	f->held[i][f->n_held[i]] = b;
	f->held_n[i][f->n_held[i]++] = n;
}

static __attribute__((unused)) void fk_hold_host(fake_t *f, uint32_t i, const uint64_t *b,
                                                 uint32_t n)
{
	f->host[i][f->n_host[i]] = b;
	f->host_n[i][f->n_host[i]++] = n;
}

/* blocks[i] = base + i: a chained prefix family; two arrays share the
 * prefix up to where their ids diverge. */
static __attribute__((unused)) void fk_chain(uint64_t *b, uint32_t n, uint64_t base)
{
	for (uint32_t i = 0; i < n; i++)
		b[i] = base + i;
}

/* Opens a built-in policy with its parameter overrides (NULL: defaults),
 * failing the test with the message when it does not open. */
static __attribute__((unused)) pol_handle_t fk_open(pol_family_t fam, const char *name,
                                                    const char *over, uint64_t seed)
{
	pol_handle_t h;
	err_t e = {0};
	if (pol_open(NULL, fam, name, over, seed, &h, &e))
		fail_msg("%s", e.msg);
	return h;
}

static __attribute__((unused)) const struct pol_replication_ops *fk_repl(const pol_handle_t *h)
{
	return (const void *)h->ops;
}

/* One replication tick on the fake cluster; it must succeed. */
static __attribute__((unused)) void fk_tick(pol_handle_t *h, fake_t *f, const pol_forecast_t *fc)
{
	err_t e;
	assert_int_equal(fk_repl(h)->on_tick(h->state, &f->v, &f->a, fc, &e), 0);
}

/* The same, after which the policy has asked for n copies in all. */
static __attribute__((unused)) void fk_tick_copies(pol_handle_t *h, fake_t *f,
                                                   const pol_forecast_t *fc, uint32_t n)
{
	fk_tick(h, f, fc);
	if (f->n_copies != n)
		fail_msg("after the tick: %u copies asked for, want %u", (unsigned)f->n_copies,
		         (unsigned)n);
}

#endif
