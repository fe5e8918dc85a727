/* A one-instance cluster driven directly, for scheduler tests: 4-token
 * blocks, 100 blocks of 4096 bytes, 8 sequences, a 4096-token budget, and a
 * cost of 1000 ns per prefill token plus 100 ns per decode sequence, so every
 * time in a test can be worked out by hand. The cmocka headers come first. */
#ifndef KVSIM_TESTS_TOY_CLUSTER_H
#define KVSIM_TESTS_TOY_CLUSTER_H

#include <string.h>

#include "sim/cluster/cluster.h"
#include "sim/engine/ev_engine.h"
#include "sim/run/recorder.h"

/* Sends p's result rows to res (the run's recorder does the same). */
static inline void toy_record_into(cluster_params_t *p, sim_results_t *res)
{
	p->on_result = rec_request;
	p->result_ctx = res;
}

static inline int64_t toy_cost(void *ctx, const sim_batch_t *b)
{
	(void)ctx;
	int64_t t = 0;
	for (uint32_t i = 0; i < b->n_pre; i++)
		t += 1000 * (int64_t)b->pre_new[i];
	return t + 100 * (int64_t)b->n_dec;
}

typedef struct toy {
	ev_engine_t *eng;
	cluster_t cl;
	sim_results_t res; /* every finished request's row */
} toy_t;

/* The toy's parameters under scheduler mode (SCHED_*), for a test to change
 * before toy_start. */
static inline cluster_params_t toy_params(int mode)
{
	return (cluster_params_t){.n_instances = 1, .block_tokens = 4, .kv_blocks = 100,
				  .block_bytes = 4096, .max_num_seqs = 8, .max_batched_tokens = 4096,
				  .chunked_prefill = mode == SCHED_VLLM, .busy_rule = BUSY_WAIT,
				  .sched_mode = mode, .cost = toy_cost};
}

static inline void toy_start(toy_t *t, const cluster_params_t *p)
{
	cluster_params_t q = *p;
	memset(&t->res, 0, sizeof t->res);
	toy_record_into(&q, &t->res);
	t->eng = ev_engine_new(64);
	assert_non_null(t->eng);
	assert_int_equal(cluster_init(&t->cl, &q, t->eng), 0);
}

static inline void toy_free(toy_t *t)
{
	cluster_free(&t->cl);
	ev_engine_free(t->eng);
	sim_results_free(&t->res);
}

#endif
