/* tok_hist — an exact-count histogram of one request's inter-token gaps.
 *
 * Replaces storing every gap and sorting them for TBT p90: a request keeps
 * only the distinct bins its gaps fall in. Bins are log-linear, as in
 * HDR Histogram (Tene, HdrHistogram, "sub-bucket" layout): a gap v < 2048 ns
 * has a bin of its own; above, the bin is v's binary exponent and its top
 * 11 significant bits (the leading one and 10 mantissa bits), so a bin spans
 * 2^(e-10) ns of values >= 2^e and its relative width is <= 2^-10 (~0.1%).
 * Resolution (own choice): 10 mantissa bits keep the p90 within 0.1% of the
 * exact value, below any cost model's accuracy, while the gaps of one request
 * (iteration times that drift slowly with context) fall in few bins.
 *
 * The histogram is a sorted array of runs {bin, count, exact min, exact
 * max}; counts are exact, so n is the number of gaps added. tok_hist_rank(k)
 * is the exact max of the bin holding the k-th smallest gap, or its exact
 * min when the k-th is the bin's first: exact whenever that bin holds one
 * distinct value (or k falls on its first or last gap), otherwise above the
 * exact value by less than one bin width (< 2^-10 relative), never below.
 *
 * Times are int64 ns, gaps >= 0. The caller owns the tok_hist_t (zeroed to
 * start) and frees it with tok_hist_free; tok_hist_clear keeps the buffer
 * for reuse. Errors: KS_ENOMEM from the calls that may grow the array (the
 * histogram is then unchanged); after tok_hist_reserve(h, m), calls that add
 * at most m bins in all (one per tok_hist_add, src's n_run per
 * tok_hist_merge) cannot fail.
 */
#ifndef KVSIM_TOK_HIST_H
#define KVSIM_TOK_HIST_H

#include <stdint.h>

/* Gaps below this have a bin each; bin width doubles at each power of 2 above. */
#define TOK_HIST_EXACT_BELOW 2048

typedef struct tok_run {
	int64_t min, max; /* exact extremes of the gaps in this bin, ns */
	uint32_t bin;     /* tok_hist_bin of them */
	uint32_t count;
} tok_run_t;

typedef struct tok_hist {
	tok_run_t *run; /* by increasing bin */
	uint32_t n_run, cap_run;
	uint32_t n;    /* gaps added */
	uint32_t last; /* index of the last run added to (a hint) */
} tok_hist_t;

/* The bin of gap v (v >= 0; negative counts as 0); monotone in v. */
uint32_t tok_hist_bin(int64_t v);
/* The gaps v with tok_hist_bin(v) == b (b a bin of some v >= 0): [*lo, *hi]. */
void tok_hist_bin_bounds(uint32_t b, int64_t *lo, int64_t *hi);
/* Room for m more bins than there are now. 0 or KS_ENOMEM. */
int tok_hist_reserve(tok_hist_t *h, uint32_t m);
/* Adds count gaps of value v. 0 or KS_ENOMEM. */
int tok_hist_add(tok_hist_t *h, int64_t v, uint32_t count);
/* Adds the n - 1 gaps t[j] - t[j - 1], j = 1..n - 1, in that order: the
 * same histogram as tok_hist_add of each (on KS_ENOMEM, those before the
 * failing one are in). 0 or KS_ENOMEM. */
int tok_hist_add_diffs(tok_hist_t *h, const int64_t *t, uint32_t n);
/* Adds every gap of src to dst: the same histogram as tok_hist_add of
 * each of them. 0 or KS_ENOMEM. */
int tok_hist_merge(tok_hist_t *dst, const tok_hist_t *src);
/* The k-th smallest gap (1 <= k <= n) as the header states; -1 when k is
 * out of range. */
int64_t tok_hist_rank(const tok_hist_t *h, uint32_t k);
/* Empties h, keeping its buffer. */
void tok_hist_clear(tok_hist_t *h);
void tok_hist_free(tok_hist_t *h);

#endif
