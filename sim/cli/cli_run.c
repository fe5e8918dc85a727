/* cli_run — `kvsim run [CONFIG] [--set k=v]...`: one experiment, a summary
 * table on stdout, (with -o DIR) the run's HDF5 file, and (with
 * --trace-events FILE or output.trace_events) its timeline as trace-event
 * JSON. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "models/mdl_cfg.h"
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
	fprintf(f, "usage: kvsim run [CONFIG] [--set SECTION.KEY=VALUE]... [-o DIR [--force]]\n"
		   "                 [--trace-events FILE.json] [--plugin FILE.so]... [--strict]\n"
		   "                 [--progress] [--quiet] [--json] [--no-trace-cache]\n\n"
		   "Runs one experiment and prints its summary. Without CONFIG it runs the\n"
		   "built-in default experiment (see 'kvsim config show').\n\n"
		   "options:\n");
	cli_cfg_help(f);
	fprintf(f, "  -o, --out DIR             also write DIR/runs/<id>.h5 and a row in\n"
		   "                            DIR/catalog.sqlite (see 'kvsim runs'); a run\n"
		   "                            DIR already holds (same config, inputs and\n"
		   "                            seed: same results) is refused, not replaced\n"
		   "  --force                   with -o: run it again all the same, replacing\n"
		   "                            its file and catalog row\n"
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
		   "  --json                    print the summary as one JSON object instead:\n"
		   "                            name, seed, trace, id and results (with -o, else\n"
		   "                            null), workload, deployment, policies, every\n"
		   "                            metric and its unit (NaN as null, infinity as\n"
		   "                            \"inf\"), wall_s\n"
		   "  --no-trace-cache          parse the trace file, neither reading nor\n"
		   "                            writing its parsed-trace cache entry\n"
		   "  -h, --help                this help\n");
	cli_help_end(f);
}

/* How a summary row shows its value: a number (counts whole, others to 4
 * significant digits), a share as a percentage, bytes in MB, GB or TB. */
enum { F_NUM, F_PCT, F_BYTES };

/* Rows of the summary table: metric name, label (with its unit), format. */
static const struct {
	const char *name, *label;
	int fmt;
} rows[] = {
	{"requests", "requests", F_NUM},
	{"offered", "offered (all but failed in trace)", F_NUM},
	{"completed", "completed", F_NUM},
	{"rejected", "rejected", F_NUM},
	{"rejected_overload", "  rejected: queue full (max_pending)", F_NUM},
	{"unfinished", "unfinished", F_NUM},
	{"abandoned", "abandoned (client_timeout_s)", F_NUM},
	{"admitted_share", "admitted share of offered", F_PCT},
	{"completed_share", "completed share of offered", F_PCT},
	{"offered_rps", "offered load (req/s)", F_NUM},
	{"ttft_p50_ms", "TTFT p50 (ms)", F_NUM},
	{"ttft_p95_ms", "TTFT p95 (ms)", F_NUM},
	{"ttft_p99_ms", "TTFT p99 (ms)", F_NUM},
	{"ttft_completed_mean_ms", "TTFT mean (ms) (completed)", F_NUM},
	{"ttft_completed_p50_ms", "TTFT p50 (ms) (completed)", F_NUM},
	{"ttft_completed_p95_ms", "TTFT p95 (ms) (completed)", F_NUM},
	{"ttft_completed_p99_ms", "TTFT p99 (ms) (completed)", F_NUM},
	{"tpot_mean_ms", "TPOT mean (ms) (completed)", F_NUM},
	{"tpot_p99_ms", "TPOT p99 (ms) (completed)", F_NUM},
	/* one value: the p99 over requests of each request's own p90 */
	{"tbt_p90_p99_ms", "TBT p99 of per-request p90s (ms) (completed)", F_NUM},
	{"e2e_p50_ms", "end-to-end p50 (ms) (completed)", F_NUM},
	{"queue_mean_ms", "queueing delay mean (ms) (completed)", F_NUM},
	{"throughput_rps", "throughput (req/s)", F_NUM},
	{"output_tokens_per_s", "output tokens/s", F_NUM},
	{"slo_attainment", "SLO attainment (TTFT and TPOT)", F_PCT},
	{"slo_attainment_completed", "SLO attainment (completed)", F_PCT},
	{"goodput_rps", "goodput (req/s)", F_NUM},
	{"hit_rate_tokens", "cache hit rate, token-weighted", F_PCT},
	{"hit_rate_blocks", "cache hit rate, block-weighted", F_PCT},
	{"bound.belady_hit_rate_blocks", "  bound: Belady MIN, block-weighted", F_PCT},
	{"bound.belady_gap_blocks", "  bound: MIN minus the run", F_PCT},
	{"bound.place_hit_rate_blocks", "  bound: with copies (bound_bw_gbps)", F_PCT},
	{"bound.place_unlimited_hit_rate_blocks", "  bound: with unlimited copies", F_PCT},
	{"bound.network_cost_blocks", "  bound: cost of the copy budget", F_PCT},
	{"tok_fetched_peer", "prompt tokens fetched from peers", F_NUM},
	{"tok_fetched_host", "prompt tokens fetched from host", F_NUM},
	{"bytes_fg", "bytes copied, foreground", F_BYTES},
	{"bytes_bg", "bytes copied, background", F_BYTES},
	{"spec.triggers", "speculation triggers", F_NUM},
	{"spec.replicas_created", "speculative replicas created", F_NUM},
	{"spec.replicas_used", "speculative replicas used", F_NUM},
	{"spec.replicas_wasted", "speculative replicas wasted", F_NUM},
	{"spec.unused_vram_gb_s", "VRAM held by unused replicas (GB-s)", F_NUM},
	{"spec.warm_hits", "requests warm thanks to a replica", F_NUM},
	{"spec.hint_routed", "requests routed by replica hints", F_NUM},
	{"spec.copies_cancelled", "copies cancelled", F_NUM},
	{"spec.copies_refused", "copies refused (all reasons)", F_NUM},
	{"spec.refused_vram", "  refused: speculative VRAM budget", F_NUM},
	{"spec.refused_bw", "  refused: bandwidth budget", F_NUM},
	{"spec.refused_room", "  refused: no room at the target", F_NUM},
	{"spec.refused_source", "  refused: source KV not computed", F_NUM},
	{"spec.prefix_over_budget", "prefixes larger than the VRAM budget", F_NUM},
	{"spec.bytes_cancelled", "bytes moved by cancelled copies", F_BYTES},
	{"spec.copies_deferred", "copies deferred until source ready", F_NUM},
	{"spec.deferred_cancelled", "deferred copies cancelled", F_NUM},
	{"spec.deferral_mean_ms", "deferral mean (ms)", F_NUM},
	{"fg_slowdown_mean", "foreground copy slowdown (mean)", F_NUM},
	{"instances", "instances", F_NUM},
	{"join.instances", "instances joined cold", F_NUM},
	{"join.first_s", "first cold join (s)", F_NUM},
	{"join.last_s", "last cold join (s)", F_NUM},
	{"kv_blocks_per_instance", "KV blocks per instance", F_NUM},
	{"sim_time_s", "simulated time (s)", F_NUM},
	{"sim_events", "events", F_NUM},
};

/* The typed parameters the run is named by: its own (the seed, the
 * deployment, fetch) and [gpu] and [model]'s names. Strings are borrowed
 * from the config. */
typedef struct run_params {
	sim_params_t sp;
	mdl_cfg_t mc;
} run_params_t;

static int run_params_fill(const cfg_t *c, run_params_t *p, err_t *e)
{
	int rc = sim_params_fill(c, &p->sp, e);
	return rc ? rc : mdl_cfg_fill(c, &p->mc, e);
}

/* Before a run with -o: one DIR already holds, intact, is not replaced
 * unless forced (it is what this run would write); a damaged one is, with
 * a note. */
static int refuse_existing(const char *dir, const cfg_t *cfg, uint64_t seed,
			   const char *const *plugins, size_t n_plugins, err_t *e)
{
	char id[65];
	int v, rc = out_run_lookup(dir, cfg, seed, plugins, n_plugins, id, &v, e);
	if (rc)
		return rc;
	if (v == OUT_CHECK_DONE || v == OUT_CHECK_KEPT)
		return err_set(e, KS_EINPUT,
			       "%s already holds this run (id %.16s: the same config, inputs and "
			       "seed), made by this build: %s/runs/%.16s.h5; running it again gives "
			       "the same results (read them with 'kvsim runs %s'); pass --force to "
			       "run it again and replace them",
			       dir, id, dir, id, dir);
	if (v == OUT_CHECK_STALE || v == OUT_CHECK_UNVERIFIED)
		return err_set(e, KS_EINPUT,
			       "%s already holds this run (id %.16s: the same config, inputs and "
			       "seed) in %s/runs/%.16s.h5, %s; pass --force to run it again with "
			       "this build and replace it, or -o another directory to keep both",
			       dir, id, dir, id,
			       v == OUT_CHECK_STALE ? "made by another revision of kvsim"
						    : "with no recorded digest to check its file by");
	if (v == OUT_CHECK_MISSING || v == OUT_CHECK_TRUNCATED || v == OUT_CHECK_CORRUPT)
		fprintf(stderr, "kvsim %s: note: %s holds this run (id %.16s) with a %s file; "
				"running it again replaces it\n",
			cli_command(), dir, id, out_check_name(v));
	return 0;
}

/* Width of the label column. */
#define LABEL_W 44

/* v as a reader takes it in: a whole number as is, others to 4
 * significant digits (at most 4 decimals), no exponent below 1e15. */
static void num_text(double v, char *buf, size_t n)
{
	if (isinf(v)) /* a TTFT quantile over offered that reaches a request never served */
		snprintf(buf, n, "%s", v > 0 ? "inf" : "-inf");
	else if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, n, "%.0f", v);
	else if (fabs(v) >= 1e15)
		snprintf(buf, n, "%.4g", v);
	else {
		int d = 3 - (int)floor(log10(fabs(v)));
		snprintf(buf, n, "%.*f", d < 0 ? 0 : d > 4 ? 4 : d, v);
	}
}

/* Row i's label (with the unit its value is shown in) and value text. */
static void row_text(int i, double v, char *label, size_t ln, char *val, size_t vn)
{
	const char *unit = "";
	if (rows[i].fmt == F_PCT && isfinite(v)) {
		v *= 100;
		unit = " (%)";
	} else if (rows[i].fmt == F_BYTES) {
		static const struct {
			double scale;
			const char *unit;
		} u[] = {{1e12, " (TB)"}, {1e9, " (GB)"}, {1e6, " (MB)"}, {1, " (bytes)"}};
		size_t k = 0;
		while (k + 1 < sizeof u / sizeof u[0] && !(fabs(v) >= u[k].scale))
			k++;
		v /= u[k].scale;
		unit = u[k].unit;
	}
	snprintf(label, ln, "%s%s", rows[i].label, unit);
	num_text(v, val, vn);
}

/* The basename of a path ("gen:fanout" stays whole). */
static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* The run's header: what ran, as "key: value" lines (workload, deployment,
 * policies) into three buffers of n bytes. */
static void run_header(const cfg_t *c, const run_params_t *rp, const sim_results_t *r, char *wl,
		       char *dep, char *pol, size_t n)
{
	const sim_params_t *p = &rp->sp;
	char rps[32], span[32];
	num_text(sim_results_get(r, "offered_rps"), rps, sizeof rps);
	snprintf(wl, n, "%s: %zu requests, offered %s req/s", base_name(r->trace_path), sim_results_count(r, RES_T_REQ),
		 rps);
	double sp = sim_results_get(r, "span_s");
	if (isfinite(sp)) {
		num_text(sp, span, sizeof span);
		snprintf(wl + strlen(wl), n - strlen(wl), ", %s s first arrival to last completion",
			 span);
	}
	snprintf(dep, n, "%u nodes x %u %s, %s at TP %u (%.0f instances), preset %s%s", p->nodes,
		 p->gpus_per_node, rp->mc.gpu_name, rp->mc.model_name, p->tp,
		 sim_results_get(r, "instances"), pol_cfg_preset(c),
		 p->dg.on ? ", prefill and decode disaggregated" : "");
	snprintf(pol, n,
		 "routing %s, replication %s, predictor %s, eviction %s, transfer %s, admission %s, "
		 "fetch %s",
		 pol_cfg_name(c, POL_ROUTING), pol_cfg_name(c, POL_REPLICATION),
		 pol_cfg_name(c, POL_PREDICTOR), pol_cfg_name(c, POL_EVICTION),
		 pol_cfg_name(c, POL_TRANSFER), pol_cfg_name(c, POL_ADMISSION),
		 sim_fetch_name(p->fetch));
}

static void print_summary(const cfg_t *c, const run_params_t *rp, const sim_results_t *r)
{
	char wl[1400], dep[1400], pol[1400], label[96], val[64];
	run_header(c, rp, r, wl, dep, pol, sizeof dep);
	printf("  %-11s %s\n  %-11s %s\n  %-11s %s\n", "workload", wl, "deployment", dep,
	       "policies", pol);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		double v = sim_results_get(r, rows[i].name);
		if (isnan(v))
			continue;
		row_text((int)i, v, label, sizeof label, val, sizeof val);
		printf("  %-*s %15s\n", LABEL_W, label, val);
	}
	printf("  %-*s %15.3f\n", LABEL_W, "wall time (s)", r->wall_s);
	if (r->wall_s > 0)
		printf("  %-*s %15.0f\n", LABEL_W, "simulated requests per wall-second",
		       (double)sim_results_count(r, RES_T_REQ) / r->wall_s);
}

/* A metric value as JSON: a number (whole ones as integers), null for
 * NaN, "inf" / "-inf" (JSON has no infinity). */
static json_t *json_metric(double v)
{
	if (isnan(v))
		return json_null();
	if (isinf(v))
		return json_string(v > 0 ? "inf" : "-inf");
	if (v == floor(v) && fabs(v) < 9007199254740992.0) /* 2^53: exact as an integer */
		return json_integer((json_int_t)v);
	return json_real(v);
}

/* The summary as one JSON object on stdout (kvsim run --json). */
static int print_json(const cfg_t *c, const run_params_t *rp, const sim_results_t *r,
		      const char *id, const char *file)
{
	char wl[1400], dep[1400], pol[1400];
	run_header(c, rp, r, wl, dep, pol, sizeof dep);
	json_t *o = json_object(), *m = json_object(), *u = json_object();
	if (!o || !m || !u) {
		json_decref(o);
		json_decref(m);
		json_decref(u);
		return KS_ENOMEM;
	}
	json_object_set_new(o, "name", json_string(rp->sp.name));
	json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
	json_object_set_new(o, "trace", json_string(r->trace_path));
	json_object_set_new(o, "id", *id ? json_string(id) : json_null());
	json_object_set_new(o, "results", file ? json_string(file) : json_null());
	json_object_set_new(o, "workload", json_string(wl));
	json_object_set_new(o, "deployment", json_string(dep));
	json_object_set_new(o, "policies", json_string(pol));
	for (size_t i = 0; i < r->n_metric; i++) {
		json_object_set_new(m, r->metric[i].name, json_metric(r->metric[i].value));
		json_object_set_new(u, r->metric[i].name, json_string(r->metric[i].unit));
	}
	json_object_set_new(o, "metrics", m);
	json_object_set_new(o, "units", u);
	json_object_set_new(o, "wall_s", json_real(r->wall_s));
	int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	json_decref(o);
	putchar('\n');
	return rc ? KS_EIO : 0;
}

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

/* What `kvsim run` was asked: the config and its --set lines (a, pointing
 * into sets), the plugins (loaded into reg) and the options. */
typedef struct run_args {
	cli_cfg_args_t a;
	const char *sets[256], *plugins[256];
	size_t n_plugins; /* their files are inputs of a recorded run */
	int quiet, strict, progress, force, json;
	const char *out_dir, *trace_path;
	pol_registry_t *reg;
} run_args_t;

/* -1 to go on with the run, else the exit status (help printed, or the
 * error reported; the plugins unloaded). */
static int run_parse(int argc, char **argv, run_args_t *ra, err_t *e)
{
	*ra = (run_args_t){.progress = -1};
	ra->a = (cli_cfg_args_t){NULL, ra->sets, 0};
	int rc;
	for (int i = 1; i < argc;) {
		if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out") ||
		     !strcmp(argv[i], "--plugin") || !strcmp(argv[i], "--trace-events")) &&
		    i + 1 >= argc) {
			pol_registry_free(ra->reg);
			return cli_usage_error("%s needs a value", argv[i]);
		}
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) {
			ra->out_dir = argv[i + 1];
			i += 2;
			continue;
		}
		if (!strcmp(argv[i], "--trace-events")) {
			ra->trace_path = argv[i + 1];
			i += 2;
			continue;
		}
		if (!strcmp(argv[i], "--plugin")) {
			if (ra->n_plugins == sizeof ra->plugins / sizeof ra->plugins[0]) {
				pol_registry_free(ra->reg);
				return cli_usage_error("too many --plugin options (at most %zu)",
						       sizeof ra->plugins / sizeof ra->plugins[0]);
			}
			ra->plugins[ra->n_plugins++] = argv[i + 1];
			if (!ra->reg && !(ra->reg = pol_registry_new()))
				return cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
			if (pol_registry_load(ra->reg, argv[i + 1], e)) {
				pol_registry_free(ra->reg);
				return cli_fail(e);
			}
			i += 2;
			continue;
		}
		if (cli_is_help(argv[i])) {
			pol_registry_free(ra->reg);
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
			ra->quiet = 1;
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--json")) {
			ra->json = 1;
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--strict")) {
			ra->strict = 1;
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--force")) {
			ra->force = 1;
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--no-trace-cache")) {
			tr_cache_set_enabled(0);
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--progress") || !strcmp(argv[i], "--no-progress")) {
			ra->progress = argv[i][2] == 'p';
			i++;
			continue;
		}
		if (ra->a.nsets >= 250) {
			pol_registry_free(ra->reg);
			return cli_usage_error("too many --set options (at most 250)");
		}
		rc = cli_cfg_arg(&ra->a, argc, argv, &i, e);
		if (rc <= 0) {
			pol_registry_free(ra->reg);
			if (rc < 0)
				return cli_fail(e);
			return cli_unknown_option(argv[i], usage);
		}
	}
	return -1;
}

/* The config into *cfg (the caller frees it) and its typed parameters
 * into *rp, once -o can take the run: 0, else the exit status (error
 * reported; config and plugins released). */
static int run_config(run_args_t *ra, cfg_t **cfg, run_params_t *rp, err_t *e)
{
	/* before the run is spent: -o's catalog must be openable */
	if ((ra->out_dir && out_dir_check(ra->out_dir, e)) ||
	    cli_load_config_ex(ra->a.path, ra->a.sets, ra->a.nsets, CLI_DEFAULT_EXPERIMENT, ra->reg,
			       cfg, e)) {
		pol_registry_free(ra->reg);
		return cli_fail(e);
	}
	if (run_params_fill(*cfg, rp, e)) {
		cli_config_free(*cfg);
		pol_registry_free(ra->reg);
		return cli_fail(e);
	}
	if (ra->force && !ra->out_dir) {
		cli_config_free(*cfg);
		pol_registry_free(ra->reg);
		return cli_usage_error("--force needs -o DIR (it lets a run replace one DIR holds)");
	}
	if (ra->out_dir && !ra->force &&
	    refuse_existing(ra->out_dir, *cfg, rp->sp.seed, ra->plugins, ra->n_plugins, e)) {
		cli_config_free(*cfg);
		pol_registry_free(ra->reg);
		return cli_fail(e);
	}
	return 0;
}

/* The trace-event file (--trace-events, else output.trace_events) opened
 * into *tw; *tw stays NULL when there is none. */
static int trace_open(const run_args_t *ra, const cfg_t *cfg, out_trace_t **tw, err_t *e)
{
	const char *trace_path = ra->trace_path;
	sim_out_params_t op;
	err_t oe = {0}; /* a config that does not fill fails in the run itself */
	if (!trace_path && !sim_out_params_fill(cfg, &op, &oe) && op.trace_events[0])
		trace_path = op.trace_events;
	if (!trace_path || !trace_path[0])
		return 0;
	tr_opts_t to;
	tr_paths_t in; /* the trace file read, resolved as the run resolves it */
	if (tr_opts_from_cfg(cfg, &to, &oe) || tr_opts_paths(cfg, &to, &in, &oe))
		in.path[0] = '\0';
	/* an output that is one of the inputs would destroy what is read */
	int rc = file_out_not_input(trace_path, ra->a.path, e);
	if (!rc)
		rc = file_out_not_input(trace_path, in.path, e);
	if (!rc)
		rc = out_trace_open(trace_path, tw, e);
	return rc;
}

/* Names the run in its warnings: the run id it is recorded under (with -o,
 * written to id), and the seed. */
static void run_where(const run_args_t *ra, const cfg_t *cfg, uint64_t seed, char id[65])
{
	char where[128];
	err_t oe = {0};
	if (ra->out_dir && !out_run_id(cfg, seed, ra->plugins, ra->n_plugins, id, &oe))
		snprintf(where, sizeof where, "run %.16s (seed %llu)", id, (unsigned long long)seed);
	else
		snprintf(where, sizeof where, "seed %llu", (unsigned long long)seed);
	cli_warn_where(where);
}

/* After the run (rc its status): --strict's refusal, the trace-event file
 * closed, the run recorded with -o. Returns the outcome; r is freed when it
 * is not 0. */
static int run_settle(const run_args_t *ra, const cfg_t *cfg, out_trace_t *tw, char id[65], int rc,
		      sim_results_t *r, err_t *e)
{
	if (!rc && r->warning[0]) {
		if (ra->strict) {
			rc = err_set(e, KS_EINPUT, "%s (--strict)", r->warning);
			sim_results_free(r);
		} else {
			cli_warn("%s", r->warning);
		}
	}
	/* after --strict, which writes nothing when it refuses the run; a
	 * refused write is the cause of a failed run, named with its file */
	err_t te = {0};
	if (tw && out_trace_close(tw, !rc, &te)) {
		if (!rc)
			sim_results_free(r);
		rc = te.code;
		*e = te;
	}
	if (!rc && ra->out_dir) {
		out_hdf5_opts_t h5;
		out_hdf5_opts_from_cfg(cfg, &h5);
		rc = out_run_record_plugins(ra->out_dir, cfg, r, ra->plugins, ra->n_plugins, &h5, id,
					    e);
		if (rc)
			sim_results_free(r);
	}
	return rc;
}

/* The summary on stdout: JSON with --json, else the table unless --quiet. */
static int run_print(const run_args_t *ra, const cfg_t *cfg, const run_params_t *rp,
		     const sim_results_t *r, const char *id, err_t *e)
{
	char file[4200];
	int rc = 0;
	snprintf(file, sizeof file, "%s/runs/%.16s.h5", ra->out_dir ? ra->out_dir : "", id);
	if (ra->json) {
		rc = print_json(cfg, rp, r, id, ra->out_dir ? file : NULL);
		if (rc)
			err_set(e, rc, "writing the summary as JSON failed");
	} else if (!ra->quiet) {
		printf("kvsim run: %s (seed %llu, trace %s)\n", rp->sp.name,
		       (unsigned long long)r->seed, r->trace_path);
		print_summary(cfg, rp, r);
		if (ra->out_dir)
			printf("  %-*s %s\n", LABEL_W, "results", file);
	}
	return rc;
}

int cli_run_main(int argc, char **argv)
{
	run_args_t ra;
	err_t e = {0};
	int rc = run_parse(argc, argv, &ra, &e);
	if (rc >= 0)
		return rc;
	cfg_t *cfg = NULL;
	static run_params_t rp; /* large */
	if ((rc = run_config(&ra, &cfg, &rp, &e)))
		return rc;
	sim_results_t r;
	progress_t pg = {now_s(), now_s(), 0};
	sim_run_opts_t ro = {0};
	if (cli_progress_wanted(ra.progress, ra.quiet)) {
		ro.progress = on_progress;
		ro.progress_ctx = &pg;
	}
	out_trace_t *tw = NULL;
	if (trace_open(&ra, cfg, &tw, &e)) {
		cli_config_free(cfg);
		pol_registry_free(ra.reg);
		return cli_fail(&e);
	}
	if (tw)
		ro.trace = out_trace_sink(tw);
	char id[65] = "";
	run_where(&ra, cfg, rp.sp.seed, id);
	ro.reg = ra.reg;
	ro.stream_rows = SIM_STREAM_ROWS;
	rc = sim_run(cfg, &ro, &r, &e);
	if (pg.shown)
		fputs("\r\033[K", stderr);
	rc = run_settle(&ra, cfg, tw, id, rc, &r, &e);
	if (rc) {
		cli_config_free(cfg);
		pol_registry_free(ra.reg);
		return cli_fail(&e);
	}
	rc = run_print(&ra, cfg, &rp, &r, id, &e);
	sim_results_free(&r);
	cli_config_free(cfg);
	pol_registry_free(ra.reg);
	return rc ? cli_fail(&e) : 0;
}
