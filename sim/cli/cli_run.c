/* cli_run — `kvsim run [CONFIG] [--set k=v]...`: one experiment, a summary
 * table on stdout, (with -o DIR) the run's HDF5 file, and (with
 * --trace-events FILE or output.trace_events) its timeline as trace-event
 * JSON. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sim/base/cfg.h"
#include "sim/base/file.h"
#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "policies/pol.h"
#include "sim/out/out_hdf5.h"
#include "sim/out/out_sweep.h"
#include "sim/out/out_trace_events.h"
#include "sim/run/sim.h"
#include "sim/run/sim_params.h"
#include "traces/tr.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: kvsim run [CONFIG] [--set SECTION.KEY=VALUE]... [-o DIR]\n"
		   "                 [--trace-events FILE.json] [--plugin FILE.so]... [--strict]\n"
		   "                 [--progress] [--quiet] [--no-trace-cache]\n\n"
		   "Runs one experiment and prints its summary. Without CONFIG it runs the\n"
		   "built-in default experiment (see 'kvsim config show').\n\n"
		   "options:\n");
	cli_cfg_help(f);
	fprintf(f, "  -o, --out DIR             also write DIR/runs/<id>.h5 and a row in\n"
		   "                            DIR/catalog.sqlite (see 'kvsim runs')\n"
		   "  --trace-events FILE.json  also write the run's timeline as Chrome/Perfetto\n"
		   "                            trace-event JSON (output.trace_events); open it\n"
		   "                            in ui.perfetto.dev or chrome://tracing\n"
		   "  --plugin FILE.so          load policies from a shared object (repeatable)\n"
		   "  --strict                  a run that is likely not what was meant (no\n"
		   "                            request passed the trace window) is an input\n"
		   "                            error, not a warning, and writes nothing\n"
		   "  --progress, --no-progress a line on stderr with the simulated time,\n"
		   "                            requests done and an ETA, redrawn twice a second\n"
		   "                            (default: when stderr is a terminal, not with -q)\n"
		   "  -q, --quiet               print nothing but errors and warnings\n"
		   "  --no-trace-cache          parse the trace file, neither reading nor\n"
		   "                            writing its parsed-trace cache entry\n"
		   "  -h, --help                this help\n");
	cli_help_end(f);
}

/* Rows of the summary table: metric name, label, format scale. */
static const struct {
	const char *name, *label;
} rows[] = {
	{"requests", "requests"},
	{"offered", "offered (all but failed in trace)"},
	{"completed", "completed"},
	{"rejected", "rejected"},
	{"rejected_overload", "  rejected: queue full (max_pending)"},
	{"unfinished", "unfinished"},
	{"abandoned", "abandoned (client_timeout_s)"},
	{"admitted_share", "admitted share of offered"},
	{"completed_share", "completed share of offered"},
	{"offered_rps", "offered load (req/s)"},
	{"ttft_p50_ms", "TTFT p50 (ms)"},
	{"ttft_p95_ms", "TTFT p95 (ms)"},
	{"ttft_p99_ms", "TTFT p99 (ms)"},
	{"ttft_completed_mean_ms", "TTFT mean (ms) (completed)"},
	{"ttft_completed_p50_ms", "TTFT p50 (ms) (completed)"},
	{"ttft_completed_p95_ms", "TTFT p95 (ms) (completed)"},
	{"ttft_completed_p99_ms", "TTFT p99 (ms) (completed)"},
	{"tpot_mean_ms", "TPOT mean (ms) (completed)"},
	{"tpot_p99_ms", "TPOT p99 (ms) (completed)"},
	{"tbt_p90_p99_ms", "TBT p90, p99 (ms) (completed)"},
	{"e2e_p50_ms", "end-to-end p50 (ms) (completed)"},
	{"queue_mean_ms", "queueing delay mean (ms) (completed)"},
	{"throughput_rps", "throughput (req/s)"},
	{"output_tokens_per_s", "output tokens/s"},
	{"slo_attainment", "SLO attainment (TTFT and TPOT)"},
	{"slo_attainment_completed", "SLO attainment (completed)"},
	{"goodput_rps", "goodput (req/s)"},
	{"hit_rate_tokens", "cache hit rate, token-weighted"},
	{"hit_rate_blocks", "cache hit rate, block-weighted"},
	{"bound.belady_hit_rate_blocks", "  bound: Belady MIN, block-weighted"},
	{"bound.belady_gap_blocks", "  bound: MIN minus the run"},
	{"bound.place_hit_rate_blocks", "  bound: with copies (bound_bw_gbps)"},
	{"bound.place_unlimited_hit_rate_blocks", "  bound: with unlimited copies"},
	{"bound.network_cost_blocks", "  bound: cost of the copy budget"},
	{"tok_fetched_peer", "prompt tokens fetched from peers"},
	{"tok_fetched_host", "prompt tokens fetched from host"},
	{"bytes_fg", "bytes copied, foreground"},
	{"bytes_bg", "bytes copied, background"},
	{"spec.triggers", "speculation triggers"},
	{"spec.replicas_created", "speculative replicas created"},
	{"spec.replicas_used", "speculative replicas used"},
	{"spec.replicas_wasted", "speculative replicas wasted"},
	{"spec.unused_vram_gb_s", "VRAM held by unused replicas (GB-s)"},
	{"spec.warm_hits", "requests warm thanks to a replica"},
	{"spec.hint_routed", "requests routed by replica hints"},
	{"spec.copies_cancelled", "copies cancelled"},
	{"spec.copies_refused", "copies refused (all reasons)"},
	{"spec.refused_vram", "  refused: speculative VRAM budget"},
	{"spec.refused_bw", "  refused: bandwidth budget"},
	{"spec.refused_room", "  refused: no room at the target"},
	{"spec.refused_source", "  refused: source KV not computed"},
	{"spec.prefix_over_budget", "prefixes larger than the VRAM budget"},
	{"spec.bytes_cancelled", "bytes moved by cancelled copies"},
	{"spec.copies_deferred", "copies deferred until source ready"},
	{"spec.deferred_cancelled", "deferred copies cancelled"},
	{"spec.deferral_mean_ms", "deferral mean (ms)"},
	{"spec.hint_routed", "requests placed by the routing hint"},
	{"fg_slowdown_mean", "foreground copy slowdown (mean)"},
	{"instances", "instances"},
	{"join.instances", "instances joined cold"},
	{"join.first_s", "first cold join (s)"},
	{"join.last_s", "last cold join (s)"},
	{"kv_blocks_per_instance", "KV blocks per instance"},
	{"sim_time_s", "simulated time (s)"},
	{"sim_events", "events"},
};

/* The progress line: at most twice a second, the first after half a
 * second (a short run shows none), erased when the run ends. */
typedef struct progress {
	double t0, last;
	int shown;
} progress_t;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int on_progress(void *ctx, const sim_progress_t *p)
{
	progress_t *g = ctx;
	double t = now_s();
	if (t - g->last < 0.5)
		return 0;
	g->last = t;
	char line[256];
	cli_progress_line(line, sizeof line, p, t - g->t0);
	fprintf(stderr, "\r%s\033[K", line); /* ECMA-48 EL: erase to the end of the line */
	fflush(stderr);
	g->shown = 1;
	return 0;
}

static void print_summary(const sim_results_t *r)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		double v = sim_results_get(r, rows[i].name);
		if (isnan(v))
			continue;
		if (isinf(v)) /* a TTFT quantile over offered that reaches a request never served */
			printf("  %-36s %15s\n", rows[i].label, v > 0 ? "inf" : "-inf");
		else if (v == floor(v) && fabs(v) < 1e15)
			printf("  %-36s %15.0f\n", rows[i].label, v);
		else
			printf("  %-36s %15.4f\n", rows[i].label, v);
	}
	printf("  %-36s %15.3f\n", "wall time (s)", r->wall_s);
	if (r->wall_s > 0)
		printf("  %-36s %15.0f\n", "simulated requests per wall-second",
		       (double)r->n_req / r->wall_s);
}

int cli_run_main(int argc, char **argv)
{
	cli_cfg_args_t a = {NULL, (const char **)(argv + argc), 0};
	const char *sets[256], *plugins[256];
	size_t n_plugins = 0; /* their files are inputs of a recorded run */
	a.sets = sets;
	int quiet = 0, strict = 0, progress = -1;
	const char *out_dir = NULL, *trace_path = NULL;
	err_t e = {0};
	pol_registry_t *reg = NULL;
	int rc;
	for (int i = 1; i < argc;) {
		if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out") ||
		     !strcmp(argv[i], "--plugin") || !strcmp(argv[i], "--trace-events")) &&
		    i + 1 >= argc) {
			pol_registry_free(reg);
			return cli_usage_error("%s needs a value", argv[i]);
		}
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) {
			out_dir = argv[i + 1];
			i += 2;
			continue;
		}
		if (!strcmp(argv[i], "--trace-events")) {
			trace_path = argv[i + 1];
			i += 2;
			continue;
		}
		if (!strcmp(argv[i], "--plugin")) {
			if (n_plugins == sizeof plugins / sizeof plugins[0]) {
				pol_registry_free(reg);
				return cli_usage_error("too many --plugin options (at most %zu)",
						       sizeof plugins / sizeof plugins[0]);
			}
			plugins[n_plugins++] = argv[i + 1];
			if (!reg && !(reg = pol_registry_new()))
				return cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
			if (pol_registry_load(reg, argv[i + 1], &e)) {
				pol_registry_free(reg);
				return cli_fail(&e);
			}
			i += 2;
			continue;
		}
		if (cli_is_help(argv[i])) {
			pol_registry_free(reg);
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
			quiet = 1;
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--strict")) {
			strict = 1;
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--no-trace-cache")) {
			tr_cache_set_enabled(0);
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--progress") || !strcmp(argv[i], "--no-progress")) {
			progress = argv[i][2] == 'p';
			i++;
			continue;
		}
		if (a.nsets >= 250) {
			pol_registry_free(reg);
			return cli_usage_error("too many --set options (at most 250)");
		}
		rc = cli_cfg_arg(&a, argc, argv, &i, &e);
		if (rc <= 0) {
			pol_registry_free(reg);
			if (rc < 0)
				return cli_fail(&e);
			return cli_usage_error("unknown option '%s'", argv[i]);
		}
	}
	cfg_t *cfg = NULL;
	/* before the run is spent: -o's catalog must be openable */
	if ((out_dir && out_dir_check(out_dir, &e)) ||
	    cli_load_config_ex(a.path, a.sets, a.nsets, CLI_DEFAULT_EXPERIMENT, reg, &cfg, &e)) {
		pol_registry_free(reg);
		return cli_fail(&e);
	}
	sim_results_t r;
	progress_t pg = {now_s(), now_s(), 0};
	sim_run_opts_t ro = {0};
	if (cli_progress_wanted(progress, quiet)) {
		ro.progress = on_progress;
		ro.progress_ctx = &pg;
	}
	sim_out_params_t op;
	out_trace_t *tw = NULL;
	err_t oe = {0}; /* a config that does not fill fails in the run itself */
	if (!trace_path && !sim_out_params_fill(cfg, &op, &oe) && op.trace_events[0])
		trace_path = op.trace_events;
	char in_trace[4096] = "";
	if (trace_path && trace_path[0] &&
	    cfg_path(cfg, "trace", "path", in_trace, sizeof in_trace, &oe))
		in_trace[0] = '\0';
	if (trace_path && trace_path[0]) {
		/* an output that is one of the inputs would destroy what is read */
		if (file_out_not_input(trace_path, a.path, &e) ||
		    file_out_not_input(trace_path, in_trace, &e) ||
		    out_trace_open(trace_path, &tw, &e)) {
			cli_config_free(cfg);
			pol_registry_free(reg);
			return cli_fail(&e);
		}
		ro.trace = out_trace_sink(tw);
	}
	/* its warnings name it: the run id it is recorded under, and the seed */
	char id[65] = "", where[128];
	unsigned long long seed = (unsigned long long)cfg_int(cfg, "experiment", "seed");
	if (out_dir && !out_run_id(cfg, seed, plugins, n_plugins, id, &oe))
		snprintf(where, sizeof where, "run %.16s (seed %llu)", id, seed);
	else
		snprintf(where, sizeof where, "seed %llu", seed);
	cli_warn_where(where);
	rc = sim_run_opts(cfg, reg, &ro, &r, &e);
	if (pg.shown)
		fputs("\r\033[K", stderr);
	if (!rc && r.warning[0]) {
		if (strict) {
			rc = err_set(&e, KS_EINPUT, "%s (--strict)", r.warning);
			sim_results_free(&r);
		} else {
			cli_warn("%s", r.warning);
		}
	}
	/* after --strict, which writes nothing when it refuses the run; a
	 * refused write is the cause of a failed run, named with its file */
	err_t te = {0};
	if (tw && out_trace_close(tw, !rc, &te)) {
		if (!rc)
			sim_results_free(&r);
		rc = te.code;
		e = te;
	}
	if (!rc && out_dir) {
		out_hdf5_opts_t h5;
		out_hdf5_opts_from_cfg(cfg, &h5);
		rc = out_run_record_plugins(out_dir, cfg, &r, plugins, n_plugins, &h5, id, &e);
		if (rc)
			sim_results_free(&r);
	}
	if (rc) {
		cli_config_free(cfg);
		pol_registry_free(reg);
		return cli_fail(&e);
	}
	sim_params_t sp; /* it ran, so the config fills */
	if (!quiet && !sim_params_fill(cfg, &sp, &e)) {
		printf("kvsim run: %s (seed %llu, trace %s)\n", sp.name, (unsigned long long)r.seed,
		       r.trace_path);
		print_summary(&r);
	}
	if (!quiet && out_dir)
		printf("  %-36s %s/runs/%.16s.h5\n", "results", out_dir, id);
	sim_results_free(&r);
	cli_config_free(cfg);
	pol_registry_free(reg);
	return 0;
}
