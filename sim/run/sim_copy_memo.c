/* sim_copy_memo — why a copy was refused, and a refused copy's retry
 * answered from one block instead of a scan (the `full` policy retries up
 * to 65,536 refused copies every 100 ms; each scan walks the blocks the
 * destination already holds before it reaches one it lacks).
 *
 * A block "bars" a copy of blocks[0..n) from src to instance dst when dst
 * lacks it and src cannot give it: absent or INFLIGHT there, or COMPUTING
 * where neither kvcache.copy_from = uncomputed nor a deferred copy
 * (sim_copy_start's rule) accepts a computing source. While one block bars
 * it, sim_copy_begin and sim_copy_defer both refuse it in their scans,
 * before changing anything, and the reason is POL_REFUSED_SOURCE. So a
 * barring block, checked with two lookups, answers a retry exactly, as the
 * full attempt would; the memo only remembers which block barred the copy
 * last time, by a hash of (src, dst, n, first and last id). A wrong guess
 * (a collision, or the block has since moved) costs the full attempt. The
 * bar test restates begin's and defer's acceptance rules: test_copy_memo
 * runs KVSIM_COPY_MEMO=check, which makes every answered retry also
 * attempt the copy, fails the run where the two differ, and says at the
 * end how many it verified; KVSIM_COPY_MEMO=off turns the memo off.
 *
 * Direct-mapped, MEMO_SLOTS entries of 4 bytes, made at the first refusal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/rng.h"
#include "sim/run/sim_copies.h"

#define MEMO_BITS 16
#define MEMO_SLOTS (1u << MEMO_BITS)
#define NO_BAR UINT32_MAX

struct sim_copy_memo {
	uint32_t bar[MEMO_SLOTS]; /* index of the block that barred the copy, or NO_BAR */
	int check;                /* KVSIM_COPY_MEMO=check */
	uint64_t answered;        /* retries answered (check: verified) */
};

static uint32_t memo_slot(place_t src, uint32_t dst, const uint64_t *blocks, uint32_t n)
{
	uint64_t h = rng_fmix64(((uint64_t)src.kind << 56) ^ ((uint64_t)src.index << 32) ^ dst);
	h = rng_fmix64(h ^ n ^ blocks[0]);
	return (uint32_t)rng_fmix64(h ^ blocks[n - 1]) & (MEMO_SLOTS - 1);
}

/* Whether blocks[j] bars the copy now (see the file's comment). */
static int bars(sim_ctx_t *s, kv_store_t *from, kv_store_t *to, int defer_applies, uint64_t b)
{
	if (kv_lookup(to, b))
		return 0;
	int st = kv_lookup(from, b);
	if (st == KV_READY)
		return 0;
	return st != KV_COMPUTING || !(s->cp->copy_uncomputed || defer_applies);
}

int sim_copy_memo_refused(sim_ctx_t *s, place_t src, uint32_t dst, const uint64_t *blocks,
			  uint32_t n, int from_policy)
{
	struct sim_copy_memo *m = s->cp->memo;
	if (!m || !n)
		return 0;
	uint32_t j = m->bar[memo_slot(src, dst, blocks, n)];
	if (j >= n || !bars(s, sim_store_of(s, src), sim_store_of(s, place_inst(dst)),
			    sim_copy_defer_applies(s, src, from_policy), blocks[j]))
		return 0;
	m->answered++;
	return m->check ? 2 : 1;
}

int sim_copy_memo_note(sim_ctx_t *s, place_t src, uint32_t dst, const uint64_t *blocks,
		       uint32_t n, int from_policy, pol_refusal_t *why)
{
	kv_store_t *from = sim_store_of(s, src), *to = sim_store_of(s, place_inst(dst));
	int da = sim_copy_defer_applies(s, src, from_policy);
	uint32_t bar = NO_BAR;
	*why = POL_REFUSED_ROOM; /* unless a block to move is not READY at the source */
	for (uint32_t j = 0; j < n && bar == NO_BAR; j++) {
		if (kv_lookup(to, blocks[j]) || kv_lookup(from, blocks[j]) == KV_READY)
			continue;
		*why = POL_REFUSED_SOURCE;
		if (bars(s, from, to, da, blocks[j]))
			bar = j;
	}
	if (!n || !s->cp->memo_on)
		return 0;
	if (!s->cp->memo) {
		if (!(s->cp->memo = malloc(sizeof *s->cp->memo)))
			return KS_ENOMEM;
		memset(s->cp->memo->bar, 0xff, sizeof s->cp->memo->bar);
		s->cp->memo->check = s->cp->memo_on == 2;
	}
	s->cp->memo->bar[memo_slot(src, dst, blocks, n)] = bar;
	return 0;
}

int sim_copy_memo_mode(void)
{
	const char *v = getenv("KVSIM_COPY_MEMO");
	if (v && !strcmp(v, "off"))
		return 0;
	return v && !strcmp(v, "check") ? 2 : 1;
}

int sim_copy_memo_wrong(const char *what)
{
	fprintf(stderr, "kvsim: copy memo check: a retry the memo refused was %s (sim_copy_memo.c)\n",
		what);
	return KS_ERUNTIME;
}

void sim_copy_memo_free(struct sim_copy_memo *m)
{
	if (m && m->check)
		fprintf(stderr, "kvsim: copy memo check: %llu retries answered, each verified\n",
			(unsigned long long)m->answered);
	free(m);
}
