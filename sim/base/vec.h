/* vec — growable arrays: the one doubling rule every module uses.
 *
 * An array is a plain `T *p` with a count and a capacity the caller keeps
 * (size_t or uint32_t). VEC_GROW(p, cap, need, first) makes room for at
 * least `need` items: the capacity starts at `first` (or the current one)
 * and doubles until it fits, so n appends cost O(n) copies in all.
 * VEC_RESIZE(p, n) reallocates to exactly n items (for arrays kept in
 * step with another one's capacity, see vec_next_cap).
 * Ownership: the caller owns p and frees it with free(). Errors: 0, or
 * KS_ENOMEM (allocation failed or the size overflows) with p and cap
 * unchanged, so the caller's old array stays valid. Header-only.
 */
#ifndef KVSIM_VEC_H
#define KVSIM_VEC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/err.h"

/* The capacity that doubling from cap (from first when cap is 0) reaches
 * to hold need items; cap itself when it already does. 0 on overflow. */
static inline size_t vec_next_cap(size_t cap, size_t need, size_t first)
{
	if (need <= cap)
		return cap;
	size_t nc = cap ? cap : (first ? first : 1);
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return 0;
		nc *= 2;
	}
	return nc;
}

/* Reallocates the array whose pointer is stored at pp (a T ** passed as
 * void *) to n items of elem bytes. The pointer is read and written with
 * memcpy, so any object pointer type works without aliasing it as void *. */
static inline int vec_realloc_(void *pp, size_t n, size_t elem)
{
	if (elem && n > SIZE_MAX / elem)
		return KS_ENOMEM;
	void *p;
	memcpy(&p, pp, sizeof p);
	size_t bytes = n * elem;
	void *q = realloc(p, bytes ? bytes : 1);
	if (!q)
		return KS_ENOMEM;
	memcpy(pp, &q, sizeof q);
	return 0;
}

static inline int vec_grow_z_(void *pp, size_t *cap, size_t need, size_t elem, size_t first)
{
	if (need <= *cap)
		return 0;
	size_t nc = vec_next_cap(*cap, need, first);
	if (!nc || vec_realloc_(pp, nc, elem))
		return KS_ENOMEM;
	*cap = nc;
	return 0;
}

static inline int vec_grow_u32_(void *pp, uint32_t *cap, size_t need, size_t elem, size_t first)
{
	if (need <= *cap)
		return 0;
	size_t nc = vec_next_cap(*cap, need, first);
	if (!nc || nc > UINT32_MAX || vec_realloc_(pp, nc, elem))
		return KS_ENOMEM;
	*cap = (uint32_t)nc;
	return 0;
}

/* p: an lvalue of pointer type; cap: an lvalue of type size_t or uint32_t. */
#define VEC_GROW(p, cap, need, first)                                                              \
	_Generic(&(cap), size_t *: vec_grow_z_, uint32_t *: vec_grow_u32_)(                        \
	    &(p), &(cap), (size_t)(need), sizeof *(p), (size_t)(first))
#define VEC_RESIZE(p, n) vec_realloc_(&(p), (size_t)(n), sizeof *(p))

#endif
