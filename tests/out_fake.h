/* out_fake — test fixture for the output tests: deterministic, plausible
 * run results made from a seed and a rate (no simulator involved). */
#ifndef KVSIM_TESTS_OUT_FAKE_H
#define KVSIM_TESTS_OUT_FAKE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/results.h"

static uint64_t fake_mix(uint64_t x)
{
	/* splitmix64 finaliser (Steele et al., OOPSLA 2014) */
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Fills r with n_req requests, n_req/2 transfers, 3 samples per instance
 * and a handful of metrics; every value depends on (seed, rate) only. */
static int fake_fill(sim_results_t *r, uint64_t seed, double rate, size_t n_req)
{
	memset(r, 0, sizeof *r);
	size_t n_x = n_req / 2, n_tl = 6;
	r->req = n_req ? calloc(n_req, sizeof *r->req) : NULL;
	r->xfer = n_x ? calloc(n_x, sizeof *r->xfer) : NULL;
	r->tl = calloc(n_tl, sizeof *r->tl);
	if ((n_req && !r->req) || (n_x && !r->xfer) || !r->tl)
		return -1;
	r->n_req = n_req;
	r->n_xfer = n_x;
	r->n_tl = n_tl;
	double ttft_sum = 0;
	for (size_t i = 0; i < n_req; i++) {
		uint64_t h = fake_mix(seed * 1000003u + i);
		res_request_t *q = &r->req[i];
		q->id = i + 1;
		q->arrival_ns = (int64_t)(i * 1e9 / rate);
		q->instance = (int32_t)(h % 4);
		q->status = (h >> 8) % 10 == 0 ? REQ_REJECTED_SLO : REQ_COMPLETED;
		q->ttft_ns = 1000000 + (int64_t)((h >> 16) % 50000000) + (int64_t)(rate * 1e6);
		q->tpot_ns = 20000000 + (int64_t)(h % 1000);
		q->tbt_p90_ns = q->tpot_ns + 5000;
		q->queue_ns = (int64_t)((h >> 24) % 1000000);
		q->fetch_wait_ns = -1;
		q->input_tokens = 512 + (uint32_t)(h % 4096);
		q->output_tokens = 1 + (uint32_t)((h >> 4) % 300);
		q->e2e_ns = q->ttft_ns + q->tpot_ns * q->output_tokens;
		q->tok_local = q->input_tokens / 2;
		q->tok_peer = q->input_tokens / 8;
		q->tok_host = q->input_tokens / 16;
		q->tok_recomputed = q->input_tokens - q->tok_local - q->tok_peer - q->tok_host;
		q->tok_spec_hit = q->tok_local / 3;
		ttft_sum += (double)q->ttft_ns;
	}
	for (size_t i = 0; i < n_x; i++) {
		uint64_t h = fake_mix(seed ^ (0xabcdefULL + i));
		res_transfer_t *x = &r->xfer[i];
		x->id = i + 100;
		x->src_instance = (int32_t)(h % 4);
		x->src_gpu = (int32_t)(h % 8);
		x->dst_instance = i % 3 == 0 ? -1 : (int32_t)((h >> 3) % 4);
		x->dst_gpu = x->dst_instance < 0 ? -1 : (int32_t)((h >> 5) % 8);
		x->blocks = 1 + (uint32_t)(h % 64);
		x->bytes = (uint64_t)x->blocks * 327680u;
		x->klass = (int32_t)(i & 1);
		x->path_kind = (int32_t)(i % 4);
		x->granular = (int32_t)((h >> 9) & 1);
		x->start_ns = (int64_t)(i * 1000);
		x->end_ns = x->start_ns + 5000 + (int64_t)(h % 777);
		x->cancelled = i % 7 == 3;
	}
	for (size_t i = 0; i < n_tl; i++) {
		res_sample_t *s = &r->tl[i];
		s->t_ns = (int64_t)(i / 2) * 100000000;
		s->kind = (int32_t)(i & 1);
		s->index = (int32_t)(i & 1);
		s->queue_len = (double)(fake_mix(seed + i) % 17);
		s->batch_size = 8.5;
		s->kv_used_bytes = 1e9 + (double)i;
		s->spec_kv_bytes = 2.5e8;
		s->util_fg = 0.25 + 0.01 * (double)i;
		s->util_bg = 0.125;
	}
	if (sim_results_metric(r, "ttft_mean_ns", "ns", n_req ? ttft_sum / (double)n_req : 0) ||
	    sim_results_metric(r, "ttft_p99_ns", "ns",
			       (double)(fake_mix(seed) % 100000000) + rate * 1e6) ||
	    sim_results_metric(r, "throughput_rps", "req/s", rate * 0.97) ||
	    sim_results_metric(r, "requests", "", (double)n_req) ||
	    sim_results_metric(r, "spec_waste_bytes", "bytes", (double)(seed % 1000) * 4096))
		return -1;
	r->seed = seed;
	r->config_text = strdup("[fake]\nrate = 1\n");
	strcpy(r->trace_path, "synthetic:poisson");
	memset(r->trace_sha256, 'a', 64);
	r->start_unix = 1700000000;
	r->wall_s = 0.125;
	r->events = 12345 + seed;
	return r->config_text ? 0 : -1;
}

#ifdef KVSIM_CFG_H
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

/* A schema of its own for the fake experiment: [experiment] seed and
 * [fake] knobs that select a behaviour per point. */
static const cfg_key_t fake_keys[] = {
	{"experiment", "seed", CFG_INT, "1", 0, 9.2e18, NULL, "", "master seed", NULL},
	{"fake", "rate", CFG_FLOAT, "1", 0.001, 1e6, NULL, "req/s", "arrival rate", NULL},
	{"fake", "policy", CFG_ENUM, "a", 0, 0, "a,b,c", "", "policy", NULL},
	{"fake", "n", CFG_INT, "50", 0, 1e7, NULL, "", "requests", NULL},
	/* ok | error: return an error | crash: SIGKILL itself | crash_once: crash
	 * unless marker/<seed>-<rate> exists (then create it... the first time) */
	{"fake", "mode", CFG_ENUM, "ok", 0, 0, "ok,error,crash,crash_once", "", "behaviour",
	 NULL},
	{"fake", "marker", CFG_STR, "", 0, 0, NULL, "", "directory for crash_once markers", NULL},
	/* points of policy a with rate == gate_rate wait until the file gate exists */
	{"fake", "gate", CFG_STR, "", 0, 0, NULL, "", "gate file", NULL},
	{"fake", "gate_rate", CFG_FLOAT, "0", 0, 1e6, NULL, "", "rate that waits", NULL},
	{"fake", "sleep_ms", CFG_INT, "0", 0, 100000, NULL, "ms", "extra run time", NULL},
	/* an input file: its first number is added to policy_score */
	{"fake", "input", CFG_STR, "", 0, 0, NULL, "path", "input file", NULL},
};

__attribute__((unused)) static cfg_schema_t *fake_schema(void)
{
	cfg_schema_t *s = cfg_schema_new();
	if (s && cfg_schema_add(s, fake_keys, sizeof fake_keys / sizeof fake_keys[0])) {
		cfg_schema_free(s);
		return NULL;
	}
	return s;
}

__attribute__((unused)) static int fake_run(const cfg_t *c, sim_results_t *r, err_t *e, void *ctx)
{
	(void)ctx;
	uint64_t seed = (uint64_t)cfg_int(c, "experiment", "seed");
	double rate = cfg_float(c, "fake", "rate");
	const char *mode = cfg_str(c, "fake", "mode"), *gate = cfg_str(c, "fake", "gate");
	if (!strcmp(mode, "error"))
		return err_set(e, KS_EINPUT, "fake: configured to fail at rate %g", rate);
	if (!strcmp(mode, "crash"))
		raise(SIGKILL);
	if (!strcmp(mode, "crash_once")) {
		char p[1024];
		snprintf(p, sizeof p, "%s/%llu-%g", cfg_str(c, "fake", "marker"),
			 (unsigned long long)seed, rate);
		if (access(p, F_OK) != 0) {
			FILE *f = fopen(p, "w");
			if (f)
				fclose(f);
			raise(SIGKILL);
		}
	}
	const char *pol = cfg_str(c, "fake", "policy");
	if (*gate && rate == cfg_float(c, "fake", "gate_rate") && pol[0] == 'a')
		for (int i = 0; i < 60000 && access(gate, F_OK) != 0; i++)
			usleep(1000);
	if (cfg_int(c, "fake", "sleep_ms"))
		usleep((useconds_t)cfg_int(c, "fake", "sleep_ms") * 1000);
	if (fake_fill(r, seed, rate, (size_t)cfg_int(c, "fake", "n")))
		return err_set(e, KS_ENOMEM, "fake: out of memory");
	free(r->config_text);
	r->config_text = cfg_text(c);
	double in = 0;
	const char *input = cfg_str(c, "fake", "input");
	if (*input) {
		FILE *f = fopen(input, "r");
		int got = f && fscanf(f, "%lf", &in) == 1;
		if (f)
			fclose(f);
		if (!got) {
			sim_results_free(r);
			return err_set(e, KS_EINPUT, "%s: fake.input: cannot read a number", input);
		}
	}
	return sim_results_metric(r, "policy_score", "", 1000.0 * (pol[0] - 'a') + rate + in);
}
#endif

#endif
