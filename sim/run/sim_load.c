/* sim_load — load groups in one permutation (sim_load.h). */
#include "sim/run/sim_load.h"

#include <stdlib.h>

#include "sim/base/err.h"
#include "sim/base/mem.h"
#include "sim/base/vec.h"

struct sim_load {
	uint32_t n;
	uint32_t *perm;  /* instances by load, ascending */
	uint32_t *pos;   /* pos[i]: where i is in perm */
	uint32_t *load;  /* per instance */
	/* start[l], 0 <= l <= max + 1: the first position whose load is >= l
	 * (start[0] = 0, start[max + 1] = n); group l is [start[l], start[l + 1]) */
	uint32_t *start;
	size_t cap_start;
	uint32_t max;
};

sim_load_t *sim_load_new(uint32_t n)
{
	sim_load_t *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->n = n;
	l->perm = malloc((n ? n : 1) * sizeof *l->perm);
	l->pos = malloc((n ? n : 1) * sizeof *l->pos);
	l->load = calloc(n ? n : 1, sizeof *l->load);
	if (!l->perm || !l->pos || !l->load || VEC_GROW(l->start, l->cap_start, 16, 16)) {
		sim_load_free(l);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++)
		l->perm[i] = l->pos[i] = i;
	l->start[0] = 0;
	l->start[1] = n;
	return l;
}

void sim_load_free(sim_load_t *l)
{
	if (l)
		FREE_ALL(l->perm, l->pos, l->load, l->start, l);
}

/* Swaps the instances at positions a and b of the permutation. */
static void swap_at(sim_load_t *l, uint32_t a, uint32_t b)
{
	uint32_t x = l->perm[a], y = l->perm[b];
	l->perm[a] = y;
	l->perm[b] = x;
	l->pos[y] = a;
	l->pos[x] = b;
}

int sim_load_inc(sim_load_t *l, uint32_t inst)
{
	uint32_t v = l->load[inst];
	if (v == l->max) { /* a new largest load: its group starts at the end */
		if (VEC_GROW(l->start, l->cap_start, (size_t)v + 3, 16))
			return KS_ENOMEM;
		l->start[v + 2] = l->n;
	}
	uint32_t last = l->start[v + 1] - 1; /* the last of group v */
	swap_at(l, l->pos[inst], last);
	l->start[v + 1] = last;
	l->load[inst] = v + 1;
	if (v + 1 > l->max)
		l->max = v + 1;
	return 0;
}

void sim_load_dec(sim_load_t *l, uint32_t inst)
{
	uint32_t v = l->load[inst];
	if (!v)
		return;
	uint32_t first = l->start[v]; /* the first of group v */
	swap_at(l, l->pos[inst], first);
	l->start[v] = first + 1;
	l->load[inst] = v - 1;
	if (v == l->max && l->start[v] == l->n)
		l->max = v - 1;
}

uint32_t sim_load_of(const sim_load_t *l, uint32_t inst)
{
	return l->load[inst];
}

const uint32_t *sim_load_least(const sim_load_t *l, uint32_t *count, uint64_t *min, uint64_t *max)
{
	uint32_t m = l->n ? l->load[l->perm[0]] : 0;
	*count = l->n ? l->start[m + 1] : 0;
	*min = m;
	*max = l->max;
	return l->perm;
}

int sim_load_check(const sim_load_t *l)
{
	for (uint32_t k = 0; k < l->n; k++) {
		uint32_t i = l->perm[k];
		if (i >= l->n || l->pos[i] != k)
			return 1;
		if (k && l->load[l->perm[k - 1]] > l->load[i])
			return 2;
	}
	if (l->n && l->load[l->perm[l->n - 1]] != l->max)
		return 3;
	if (l->start[0] != 0 || l->start[l->max + 1] != l->n)
		return 4;
	for (uint32_t v = 1; v <= l->max; v++) {
		uint32_t s = l->start[v];
		if (s > l->n || (s < l->n && l->load[l->perm[s]] < v) ||
		    (s > 0 && l->load[l->perm[s - 1]] >= v))
			return 5;
	}
	return 0;
}
