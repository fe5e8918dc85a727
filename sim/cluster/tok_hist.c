/* tok_hist — see tok_hist.h. */
#include "sim/cluster/tok_hist.h"

#include <string.h>

#include "sim/base/vec.h"

/* 10 mantissa bits below the leading one (tok_hist.h: relative width 2^-10). */
#define TOK_SUB_BITS 10

uint32_t tok_hist_bin(int64_t v)
{
	if (v < TOK_HIST_EXACT_BELOW)
		return v < 0 ? 0 : (uint32_t)v;
	uint32_t s = (uint32_t)(63 - __builtin_clzll((uint64_t)v)) - TOK_SUB_BITS;
	/* v >> s is in [2^10, 2^11): consecutive exponents tile the keys */
	return (s << TOK_SUB_BITS) + (uint32_t)((uint64_t)v >> s);
}

int tok_hist_reserve(tok_hist_t *h, uint32_t m)
{
	return VEC_GROW(h->run, h->cap_run, (size_t)h->n_run + m, 8);
}

/* Index of the run of bin b, or where it would go (its lower bound). */
static uint32_t find(const tok_hist_t *h, uint32_t b)
{
	if (h->last < h->n_run && h->run[h->last].bin == b)
		return h->last; /* a request's consecutive gaps mostly share a bin */
	uint32_t lo = 0, hi = h->n_run;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (h->run[mid].bin < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Adds count gaps in [min, max], all of bin b; room for one more run. */
static void put(tok_hist_t *h, uint32_t b, int64_t min, int64_t max, uint32_t count)
{
	uint32_t i = find(h, b);
	tok_run_t *r = &h->run[i];
	if (i < h->n_run && r->bin == b) {
		if (min < r->min)
			r->min = min;
		if (max > r->max)
			r->max = max;
		r->count += count;
	} else {
		memmove(r + 1, r, (size_t)(h->n_run - i) * sizeof *r);
		*r = (tok_run_t){.min = min, .max = max, .bin = b, .count = count};
		h->n_run++;
	}
	h->last = i;
	h->n += count;
}

/* tok_hist_add of count gaps of value v >= 0: the run added to last takes
 * them without a search or a reservation when v falls in its bin (a
 * request's consecutive gaps mostly do). */
static inline int add_one(tok_hist_t *h, int64_t v, uint32_t count)
{
	uint32_t b = tok_hist_bin(v);
	if (h->last < h->n_run && h->run[h->last].bin == b) {
		tok_run_t *r = &h->run[h->last];
		if (v < r->min)
			r->min = v;
		if (v > r->max)
			r->max = v;
		r->count += count;
		h->n += count;
		return 0;
	}
	if (tok_hist_reserve(h, 1))
		return KS_ENOMEM;
	put(h, b, v, v, count);
	return 0;
}

int tok_hist_add(tok_hist_t *h, int64_t v, uint32_t count)
{
	if (!count)
		return 0;
	return add_one(h, v < 0 ? 0 : v, count);
}

void tok_hist_bin_bounds(uint32_t b, int64_t *lo, int64_t *hi)
{
	if (b < TOK_HIST_EXACT_BELOW) {
		*lo = *hi = b;
		return;
	}
	/* b = (s << 10) + (v >> s) with v >> s in [2^10, 2^11) (tok_hist_bin) */
	uint32_t s = (b >> TOK_SUB_BITS) - 1;
	uint64_t m = b - ((uint64_t)s << TOK_SUB_BITS);
	*lo = (int64_t)(m << s);
	*hi = (int64_t)(((m + 1) << s) - 1);
}

int tok_hist_add_diffs(tok_hist_t *h, const int64_t *t, uint32_t n)
{
	uint32_t j = 1;
	while (j < n) {
		if (h->last < h->n_run) {
			/* the gaps that fall in the last run's bin, by its value range:
			 * no bin computed for them, one update of the run */
			tok_run_t *r = &h->run[h->last];
			int64_t lo, hi, mn = r->min, mx = r->max;
			tok_hist_bin_bounds(r->bin, &lo, &hi);
			uint32_t j0 = j;
			for (; j < n; j++) {
				int64_t v = t[j] - t[j - 1];
				v = v < 0 ? 0 : v;
				if (v < lo || v > hi)
					break;
				mn = v < mn ? v : mn;
				mx = v > mx ? v : mx;
			}
			r->min = mn;
			r->max = mx;
			r->count += j - j0;
			h->n += j - j0;
			if (j >= n)
				break;
		}
		int64_t v = t[j] - t[j - 1];
		if (add_one(h, v < 0 ? 0 : v, 1))
			return KS_ENOMEM;
		j++;
	}
	return 0;
}

int tok_hist_merge(tok_hist_t *dst, const tok_hist_t *src)
{
	if (tok_hist_reserve(dst, src->n_run))
		return KS_ENOMEM;
	for (uint32_t i = 0; i < src->n_run; i++) {
		const tok_run_t *r = &src->run[i];
		put(dst, r->bin, r->min, r->max, r->count);
	}
	return 0;
}

int64_t tok_hist_rank(const tok_hist_t *h, uint32_t k)
{
	if (k < 1 || k > h->n)
		return -1;
	uint32_t below = 0;
	for (uint32_t i = 0; i < h->n_run; i++) {
		const tok_run_t *r = &h->run[i];
		if (k <= below + r->count)
			return k == below + 1 ? r->min : r->max;
		below += r->count;
	}
	return -1; /* counts disagree with n: not reached */
}

void tok_hist_clear(tok_hist_t *h)
{
	h->n_run = h->n = h->last = 0;
}

void tok_hist_free(tok_hist_t *h)
{
	free(h->run);
	memset(h, 0, sizeof *h);
}
