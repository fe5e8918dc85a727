/* tr_gen_int — the common generator source's state (tr_gen.c), shared by
 * the generators it drives (tr_gen_servegen.c, tr_gen_fanout.c). Internal
 * to traces/; not an API. */
#ifndef KVSIM_TR_GEN_INT_H
#define KVSIM_TR_GEN_INT_H

#include "traces/tr_int.h"

typedef struct win {
	double start, end, rate;
	unsigned long long line; /* of the windows file */
	int pattern; /* 0 exponential, 1 gamma, 2 weibull */
	double shape, scale, factor;
} win_t;

typedef struct fan_ev {
	double t;
	uint64_t key;
	uint32_t prefix;
} fan_ev_t;

typedef struct gen_src {
	tr_src_t base;
	tr_opts_t o;
	uint64_t seed;
	gsl_rng *arr, *len;
	tr_dist_t *din, *dout;
	double t;
	uint64_t count;
	double weib_k, weib_scale;
	int mm_state;
	double mm_left;
	/* servegen */
	tr_lines_t l;
	win_t w, next_w;
	double expect; /* requests the windows entered so far make, on average */
	int have_next, lines_open;
	/* fanout */
	fan_ev_t *ev;
	size_t n_ev, i_ev;
	double bg_next;
	tr_seg_t segs[2];
} gen_src_t;

#endif
