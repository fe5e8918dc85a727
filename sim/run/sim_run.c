/* sim_run — runs the experiment a config describes, reading its [trace]. */
#include <string.h>

#include "sim/run/sim.h"
#include "sim/run/sim_clients.h"
#include "sim/run/sim_int.h"
#include "sim/run/sim_params.h"
#include "traces/tr.h"

/* The built-in experiment `kvsim run` runs without a config: 4 nodes x 8
 * H100 serving Llama-3-70B at TP4 (8 instances), one simulated minute of
 * bursty traffic: background requests with Zipf-popular system prompts plus
 * fan-out bursts of requests sharing a long document prefix. */
const char sim_default_experiment[] =
	"[experiment]\n"
	"name = default\n"
	"seed = 1\n"
	"[gpu]\n"
	"name = H100-SXM\n"
	"[model]\n"
	"name = Llama-3-70B\n"
	"[cluster]\n"
	"nodes = 4\n"
	"gpus_per_node = 8\n"
	"tp = 4\n"
	"[trace]\n"
	"kind = gen\n"
	"gen = fanout\n"
	"duration_s = 60\n"
	"fanout_bursts = 6\n"
	"fanout_size = 48\n"
	"fanout_prefix_tokens = 16384\n"
	"fanout_window_s = 5\n"
	"fanout_bg_rate = 4\n"
	"in_mean = 2048\n"
	"out_mean = 256\n"
	"prefix_shared_prob = 0.5\n"
	"prefix_count = 50\n"
	"prefix_tokens = 2048\n";


typedef struct trace_src {
	tr_reader_t *r;
} trace_src_t;

static int trace_next(void *ctx, sim_arrival_t *a, err_t *e)
{
	trace_src_t *t = ctx;
	tr_request_t q;
	int rc = tr_next(t->r, &q, e);
	if (rc != 1)
		return rc;
	a->id = q.id;
	a->arrival_ns = q.arrival_ns;
	a->in_len = q.input_len;
	a->out_len = q.output_len;
	a->n_blocks = q.n_blocks;
	a->n_out_blocks = q.n_out_blocks;
	a->blocks = q.blocks;
	a->status = q.status;
	a->session_id = q.session_id;
	return 1;
}


static double trace_fraction(void *ctx)
{
	return tr_progress(((trace_src_t *)ctx)->r);
}


/* A closed loop (trace.gen = sessions) or a spec's drained stages
 * (trace.kind = spec): the clients are the source, fed back by the run; a
 * spec's stages are the run's windows (windows NULL: none). */
static int clients_run(const cfg_t *cfg, const sim_run_opts_t *o, sim_clients_t *c,
		       size_t (*windows)(void *, int64_t *, size_t), void *wctx, sim_results_t *res,
		       err_t *e)
{
	sim_run_opts_t ro = {0};
	if (o)
		ro = *o;
	ro.fraction = sim_clients_fraction;
	ro.fraction_ctx = c;
	ro.feedback = sim_clients_feedback(c);
	ro.windows = windows;
	ro.windows_ctx = wctx;
	int rc = sim_core_run(cfg, sim_clients_source(c), &ro, res, e);
	if (rc)
		cfg_err_locate(cfg, e);
	return rc;
}

int sim_run(const cfg_t *cfg, const sim_run_opts_t *o, sim_results_t *res, err_t *e)
{
	memset(res, 0, sizeof *res); /* empty on every failure, however early */
	if (o && o->source)
		return sim_core_run(cfg, o->source, o, res, e);
	sim_params_t sp;
	trace_src_t t = {0};
	sim_sessions_t *ss = NULL;
	sim_spec_t *spec = NULL;
	int rc = sim_params_fill(cfg, &sp, e);
	if (rc)
		return rc;
	uint64_t seed = sim_seed_for(sp.seed, SIM_STREAM_TRACE);
	sim_rss_peak_reset(); /* the trace's opening counts toward this run's peak */
	if ((rc = sim_spec_open(cfg, sp.block_tokens, seed, &spec, e))) {
		cfg_err_locate(cfg, e);
		return rc;
	}
	if (spec) {
		rc = clients_run(cfg, o, sim_spec_clients(spec), sim_spec_windows, spec, res, e);
		sim_spec_free(spec);
		return rc;
	}
	if ((rc = sim_sessions_open(cfg, sp.block_tokens, seed, &ss, e))) {
		cfg_err_locate(cfg, e); /* a sessions key's check names its place */
		return rc;
	}
	if (ss) { /* a closed loop, made as it runs */
		rc = clients_run(cfg, o, sim_sessions_clients(ss), NULL, NULL, res, e);
		sim_sessions_free(ss);
		return rc;
	}
	if ((rc = tr_open_cfg(cfg, sp.block_tokens, seed, &t.r, e)))
		return rc;
	/* a generator's plan (fanout, crowd) is made before the run is built */
	if ((rc = sim_rss_check(sp.max_rss_gb, "opening the trace",
				"shorten the trace or a generator's plan (trace.limit, "
				"trace.duration_s, trace.fanout_bursts, trace.crowd_count)", e))) {
		tr_close(t.r);
		return rc;
	}
	sim_source_t src = {trace_next, &t, tr_source(t.r)};
	sim_run_opts_t ro = {0};
	if (o) {
		ro = *o;
		ro.fraction = trace_fraction;
		ro.fraction_ctx = &t;
	}
	rc = sim_core_run(cfg, &src, o ? &ro : NULL, res, e);
	if (!rc) {
		const char *path = tr_source(t.r);
		if (strncmp(path, "gen:", 4))
			rc = tr_file_sha256_cached(path, res->trace_sha256, e);
	}
	err_t w = {0};
	if (!rc && tr_check_nonempty(t.r, &w)) {
		cfg_err_locate(cfg, &w);
		snprintf(res->warning, sizeof res->warning, "%s", w.msg);
	}
	tr_close(t.r);
	if (rc) {
		sim_results_free(res);
		cfg_err_locate(cfg, e); /* a check on one key names its place */
	}
	return rc;
}
