/* tr_util — the helpers every trace module shares, defined once below all
 * of them: the block-id mix, generator names, a generator count scaled by
 * trace.rate_scale, array growth and
 * seeded streams. */
#include <stdlib.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sim/base/rng.h"
#include "traces/tr_int.h"

/* Bijective in x for a fixed h and in h for a fixed x, so two different
 * pieces after the same prefix never share an id, and order matters. */
uint64_t tr_mix(uint64_t h, uint64_t x)
{
	return tr_mix_pre(h, tr_mix_key(x));
}

int tr_cmp_time(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

size_t tr_cdf_index(const double *cdf, size_t n, double u)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int tr_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	return vec_grow_z_(p, cap, need, elem, 16);
}

gsl_rng *tr_rng_new(uint64_t seed, uint64_t stream)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	if (r)
		gsl_rng_set(r, (unsigned long)(tr_mix(tr_mix(TR_ROOT_ID, seed), stream) >> 32));
	return r;
}

uint32_t tr_gen_scaled_count(uint32_t n, double s)
{
	double x = floor((double)n * s + 0.5);
	return x >= 4294967295.0 ? UINT32_MAX : (uint32_t)x;
}
