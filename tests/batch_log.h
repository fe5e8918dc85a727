/* A cost callback that logs every batch it is asked for and charges STEP_NS
 * (defined by the test) for each: "P<new>@<ctx>" per prefill chunk (tokens
 * computed, tokens already in KV), then "D<ctx>" per decoding sequence,
 * iterations joined by " | ". The cmocka headers come first. */
#ifndef KVSIM_TESTS_BATCH_LOG_H
#define KVSIM_TESTS_BATCH_LOG_H

#include <stdio.h>

#include "sim/cluster/cluster.h"

typedef struct rec {
	char log[4096];
	size_t n;
} rec_t;

static int64_t rec_cost(void *ctx, const sim_batch_t *b)
{
	rec_t *r = ctx;
	if (r->n)
		r->n += (size_t)snprintf(r->log + r->n, sizeof r->log - r->n, " |");
	for (uint32_t i = 0; i < b->n_pre; i++)
		r->n += (size_t)snprintf(r->log + r->n, sizeof r->log - r->n, " P%u@%u",
		                         b->pre_new[i], b->pre_ctx[i]);
	for (uint32_t i = 0; i < b->n_dec; i++)
		r->n +=
		    (size_t)snprintf(r->log + r->n, sizeof r->log - r->n, " D%u", b->dec_ctx[i]);
	assert_true(r->n < sizeof r->log);
	return STEP_NS;
}

#endif
