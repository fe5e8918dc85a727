/* tr_reuse_fixture — generated traces for the reuse-analysis tests: Poisson
 * arrivals, Zipf-popular shared prompts and synthetic multi-turn sessions
 * (so reuse happens at short and long stack distances alike), read at
 * 16-token blocks. Header-only; include after cmocka.h. */
#ifndef KVSIM_TESTS_TR_REUSE_FIXTURE_H
#define KVSIM_TESTS_TR_REUSE_FIXTURE_H

#include "traces/tr_reuse.h"

#define RF_BLOCK_TOKENS 16u

/* requests requests; prompts of about mean_in tokens (lognormal). */
__attribute__((unused)) static void rf_opts(tr_opts_t *o, uint64_t requests, double mean_in)
{
	tr_opts_default(o);
	o->kind = TR_KIND_GEN;
	o->gen = TR_GEN_POISSON;
	o->rate = 10;
	o->requests = requests;
	o->duration_s = 0; /* until requests */
	o->in.kind = TR_DIST_LOGNORMAL;
	o->in.mean = mean_in;
	o->in.sigma = 0.5;
	o->in.min = 1;
	o->in.max = (uint32_t)(mean_in * 8);
	o->out.kind = TR_DIST_FIXED;
	o->out.mean = 40;
	o->out.min = 1;
	o->out.max = 40;
	o->prefix_shared_prob = 0.6;
	o->prefix_count = 50;
	o->prefix_tokens = mean_in / 2;
	o->session_mode = TR_SESS_SYNTH;
	o->session_prob = 0.5;
	o->session_active = 30;
}

/* tr_reuse_compute on the trace o describes; the test fails on error. */
__attribute__((unused)) static void rf_compute(const tr_opts_t *o, uint32_t instances, double rate,
                                               tr_reuse_t *u)
{
	tr_reader_t *r;
	err_t e = {0};
	if (tr_open(o, RF_BLOCK_TOKENS, 11, &r, &e))
		fail_msg("tr_open: %s", e.msg);
	tr_reuse_opts_t ro = {instances, rate};
	int rc = tr_reuse_compute(r, &ro, u, &e);
	if (rc)
		fail_msg("tr_reuse_compute: %s", e.msg);
	tr_close(r);
}

#endif
