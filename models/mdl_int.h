/* mdl_int — what the files of models/ share beyond mdl.h: the aggregates
 * of one iteration and the cost steps a run of decode steps reuses
 * (mdl_cost.c, used by mdl_decode_run.c), and the layer-kind check the spec
 * parser names a line for (mdl_spec_check.c, used by mdl_spec.c). Internal
 * to models; not an API. Times in ns, as in mdl.h; nothing here allocates.
 */
#ifndef KVSIM_MDL_INT_H
#define KVSIM_MDL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "models/mdl.h"

/* ---- one iteration's cost (mdl_cost.c) --------------------------------- */

/* Aggregates an iteration's cost depends on (all linear). */
typedef struct {
	double tokens;    /* T: tokens computed */
	double seqs;      /* S: sequences in the batch */
	double pairs_pf;  /* attention (query, key) pairs of prefill chunks */
	double pairs_dec; /* ... of decode steps */
	double cached_pf; /* cached tokens before prefill chunks */
	double kv_read;   /* tokens of KV read (cached_pf + decode contexts) */
	double pf_tokens; /* tokens of prefill chunks */
	double dec_seqs;  /* decode steps */
	double dec_ctx;   /* context tokens of decode steps */
	/* sliding layers (see the header; 0 without them) */
	double pairs_sw;   /* (query, key) pairs of one sliding layer, all sequences */
	double kv_read_sw; /* tokens one sliding layer reads */
	double dec_ctx_sw; /* ... of them by decode steps */
} mdl_sums_t;

/* An iteration's cost from its sums: mdl_iter_cost's value (r filled when
 * out is given). */
int64_t mdl_cost_from_sums(const mdl_compute_t *c, const mdl_sums_t *s, mdl_iter_cost_t *out);
/* The terms fixed by the token and sequence counts, through c's size cache. */
void mdl_cost_size_terms(const mdl_compute_t *c, double tokens, double seqs, mdl_iter_cost_t *r,
                         double *f, double *wb);
/* The terms that depend on the contexts, on r from mdl_cost_size_terms. */
void mdl_cost_terms_sides(const mdl_compute_t *c, const mdl_sums_t *s, mdl_iter_cost_t *r, double f,
                          double wb);
/* mdl_cost_terms_sides, the roofline and the total: r->total_ns. */
int64_t mdl_cost_terms_finish(const mdl_compute_t *c, const mdl_sums_t *s, mdl_iter_cost_t *r,
                              double f, double wb);

/* Inline, as the closed form of a decode run calls them once per step. The
 * iteration's time before rounding up, given its roofline term. */
static inline double mdl_cost_terms_time(const mdl_iter_cost_t *r, double roofline)
{
	return roofline + r->t_fixed_ns + r->t_comm_ns + r->t_overhead_ns;
}

/* An iteration's time in whole ns, rounded up, at least 1. */
static inline int64_t mdl_cost_total_ns(double t)
{
	/* absurd inputs (billions of tokens at once) saturate rather than wrap;
	 * below that, ceil(t) as truncation plus one when a fraction was cut
	 * (the same integer, without a libm call per iteration) */
	int64_t n = INT64_MAX;
	if (t < 9.2e18) {
		n = (int64_t)t;
		n += (double)n < t;
	}
	return n < 1 ? 1 : n; /* an iteration always advances time */
}

/* ---- spec checks (mdl_spec_check.c) ------------------------------------ */

/* -1 with the layer-kind key at fault and why (len bytes), else 0. */
int mdl_layers_fault(const mdl_llm_t *m, const char **key, char *why, size_t len);

#endif
