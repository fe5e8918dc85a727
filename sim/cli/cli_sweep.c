/* kvsim sweep — the command line over out_sweep.h (grid, seeds, workers). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cli/cli.h"
#include "sim/run/cli_common.h"
#include "sim/run/recorder.h"
#include "sim/out/out_sweep.h"
#include "sim/run/sim.h"
#include "sim/run/sim_params.h"
#include "traces/tr.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim sweep [CONFIG] [--set S.K=V]... --grid S.K=VALUES... [--zip S.K=VALUES]...\n"
		"                   [--seeds N] [-j WORKERS] [-o DIR] [--keep-stale] [--dry-run]\n"
		"                   [--strict] [--no-trace-cache]\n"
		"                   [--capacity S.K=LO:HI [--capacity-metric NAME]\n"
		"                    [--capacity-target X] [--capacity-tol REL] [--capacity-probes N]]\n\n"
		"Runs every point of a parameter grid, each into DIR/runs/ID.h5 and one row of\n"
		"DIR/catalog.sqlite. Rerunning the same command skips points already done, unless\n"
		"their file is missing, truncated or fails its SHA-256, or another revision of\n"
		"kvsim made them (see `kvsim --version`). A point's id covers the content of\n"
		"every file its config reads (trace, GPU and model specs, calibration,\n"
		"profiles, length distributions): editing one makes its points new ones.\n\n");
	cli_cfg_help(f);
	fprintf(f,
		"  --grid S.K=V1,V2,...      an axis of the Cartesian product (repeatable)\n"
		"  --grid S.K=START:STOP:STEP  the same, as a range with STOP included\n"
		"  --zip S.K=V1,V2,...       paired axes: every --zip advances together\n"
		"  --seeds N                 N seeds per point, derived from experiment.seed\n"
		"  -j, --jobs N              worker processes (default 1)\n"
		"  -o, --out DIR             results directory (default [output] dir)\n"
		"  --keep-stale              keep points another revision made (if their file is\n"
		"                            intact), marked stale = 1 in the catalog\n"
		"  --dry-run                 list the points and what the sweep would do with\n"
		"                            each: done, kept, todo, failed, stale, missing,\n"
		"                            truncated, corrupt, unverified (all but done and\n"
		"                            kept run)\n"
		"  --strict                  a point whose run has no request (trace window\n"
		"                            past its end) fails as bad input, not a warning\n"
		"  --progress, --no-progress progress line on stderr (default: when a terminal)\n"
		"  --no-trace-cache          parse each point's trace file, neither reading\n"
		"                            nor writing its parsed-trace cache entry\n"
		"  --capacity S.K=LO:HI      capacity search: for every point and seed, the\n"
		"                            highest S.K in [LO, HI] at which the metric still\n"
		"                            meets the target, by bisection in log space\n"
		"                            (e.g. trace.rate_scale=0.25:8). Assumes the metric\n"
		"                            only worsens as S.K grows; says when even LO fails\n"
		"                            (lo_fails) or HI passes (hi_passes). Every probe\n"
		"                            is an ordinary catalog row; the results print as a\n"
		"                            table and go to the catalog's table capacity\n"
		"  --capacity-metric NAME    summary metric to hold (default slo_attainment)\n"
		"  --capacity-target X       met when metric >= X (default 0.9)\n"
		"  --capacity-tol REL        stop when HI/LO of the bracket <= 1 + REL\n"
		"                            (default 0.05)\n"
		"  --capacity-probes N       most runs per search, LO and HI included\n"
		"                            (default 16; then verdict probe_limit)\n"
		"  -h, --help                this help\n\n"
		"Under mpirun (Open MPI), rank 0 hands points to the other ranks and writes the\n"
		"catalog: mpirun -n 8 kvsim sweep ... (not with --capacity, which runs its\n"
		"rounds of probes on -j local workers).\n\n"
		"A point that fails is recorded (kvsim runs DIR --columns id,error) and the\n"
		"sweep goes on; it then exits 1, or 2 when every failed point failed on bad\n"
		"input (config or trace). Ctrl-C (SIGINT) or SIGTERM stops the sweep: the\n"
		"points in flight are marked interrupted (status 'interrupted') and it exits 1;\n"
		"the same command resumes it. A sweep into a directory another sweep is\n"
		"writing waits for that one to finish, then runs what it left.\n");
	cli_help_end(f);
}

/* ctx: the --strict flag. A point whose run warns (no request passed the
 * trace window) says so on stderr, or under --strict fails as bad input. */
static int sweep_sim_run(const cfg_t *c, sim_results_t *r, err_t *e, void *ctx)
{
	const sim_run_opts_t o = {.stream_rows = SIM_STREAM_ROWS};
	int rc = sim_run(c, &o, r, e);
	if (rc || !r->warning[0])
		return rc;
	if (*(const int *)ctx) {
		rc = err_set(e, KS_EINPUT, "%s (--strict)", r->warning);
		sim_results_free(r);
		return rc;
	}
	cli_warn("%s", r->warning); /* the sweep names the point */
	return 0;
}

static int bad_usage(const char *msg, const char *arg)
{
	return cli_usage_error("%s%s%s%s", msg, arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
}

static int parse_uint(const char *s, unsigned max, unsigned *v)
{
	char *end;
	unsigned long x = strtoul(s, &end, 10);
	if (!*s || *end || x < 1 || x > max)
		return -1;
	*v = (unsigned)x;
	return 0;
}

/* Lists the points with the verdict a sweep would reach; every point is
 * built before the first line, so a bad grid prints nothing. */
static int dry_run(const out_grid_t *g, const cfg_t *base, const char *dir, int keep_stale,
		   err_t *e)
{
	out_catalog_t *cat = NULL;
	char p[4096];
	size_t n = out_grid_points(g), made = 0;
	out_point_t *pts = calloc(n ? n : 1, sizeof *pts);
	int *verdict = calloc(n ? n : 1, sizeof *verdict), rc = 0;
	if (!pts || !verdict)
		rc = err_set(e, KS_ENOMEM, "out of memory");
	for (; !rc && made < n; made++)
		if ((rc = out_point_make(g, base, "experiment.seed", made, &pts[made], e)))
			break;
	snprintf(p, sizeof p, "%s/%s", dir, OUT_CATALOG_FILE);
	if (!rc && access(p, F_OK) == 0)
		rc = out_catalog_open(dir, 1, &cat, e);
	for (size_t i = 0; !rc && cat && i < n; i++)
		rc = out_catalog_check(cat, pts[i].id, out_build_rev(), keep_stale, &verdict[i], e);
	for (size_t i = 0; !rc && i < n; i++) {
		const out_point_t *pt = &pts[i];
		printf("%4zu  %.16s  %-9s seed=%llu", i, pt->id, out_check_name(verdict[i]),
		       (unsigned long long)pt->seed);
		for (size_t k = 0; k < pt->n_params; k++)
			printf("  %s=%s", pt->params[k].key, pt->params[k].value);
		putchar('\n');
	}
	for (size_t i = 0; i < made; i++)
		out_point_free(&pts[i]);
	free(pts);
	free(verdict);
	out_catalog_close(cat);
	return rc;
}

/* Why points that were done ran again, or were kept; nothing when none. */
static void print_ledger_note(const out_sweep_stats_t *st)
{
	const size_t n[] = {st->rerun_stale, st->rerun_missing, st->rerun_damaged,
			    st->rerun_unverified, st->kept_stale};
	const char *const what[] = {"made by another revision ran again",
				    "with a missing file ran again",
				    "with a truncated or corrupt file ran again",
				    "with no recorded file digest ran again",
				    "made by another revision kept (--keep-stale)"};
	const char *sep = "sweep: ";
	for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) {
		if (!n[i])
			continue;
		printf("%s%zu %s", sep, n[i], what[i]);
		sep = "; ";
	}
	if (*sep == ';')
		printf(" (this build: %s)\n", out_build_rev());
}

/* "S.K=LO:HI" into co (key points into spec's copy in keybuf). */
static int parse_capacity(const char *spec, char *keybuf, size_t n, out_capacity_opts_t *co)
{
	const char *eq = strchr(spec, '=');
	char *end;
	if (!eq || eq == spec || (size_t)(eq - spec) >= n || !memchr(spec, '.', (size_t)(eq - spec)))
		return -1;
	snprintf(keybuf, n, "%.*s", (int)(eq - spec), spec);
	co->key = keybuf;
	co->lo = strtod(eq + 1, &end);
	if (end == eq + 1 || *end != ':')
		return -1;
	const char *h = end + 1;
	co->hi = strtod(h, &end);
	return end == h || *end || !(co->lo > 0 && co->hi > co->lo && isfinite(co->hi)) ? -1 : 0;
}

static int parse_real(const char *s, double *v)
{
	char *end;
	*v = s ? strtod(s, &end) : NAN;
	return s && *s && !*end && isfinite(*v) ? 0 : -1;
}

static int metric_known(const char *name)
{
	for (int id = 0; rec_metric_def(id); id++)
		if (!strcmp(rec_metric_def(id)->name, name))
			return 1;
	return 0;
}

static void print_capacity(const out_capacity_opts_t *co, const out_capacity_result_t *r,
			   size_t n)
{
	printf("capacity: highest %s in [%g, %g] with %s >= %g (log-space bisection to a "
	       "bracket of %g; assumes %s only worsens as %s grows)\n",
	       co->key, co->lo, co->hi, co->metric, co->target, 1 + co->tol, co->metric, co->key);
	printf("%5s  %10s  %-12s  %-25s  %6s  %-11s  %s\n", "point", "seed", "value", "bracket",
	       "probes", "verdict", "params");
	for (size_t i = 0; i < n; i++) {
		char v[32], b[64];
		snprintf(v, sizeof v, isnan(r[i].value) ? "-" : "%.6g", r[i].value);
		snprintf(b, sizeof b, "[%.6g, %.6g)", r[i].lo, r[i].hi);
		printf("%5zu  %10llu  %-12s  %-25s  %6u  %-11s  %s\n", r[i].point,
		       (unsigned long long)r[i].seed, v, b, r[i].probes, r[i].verdict,
		       r[i].params[0] ? r[i].params : "-");
	}
	size_t lo = 0, hi = 0;
	for (size_t i = 0; i < n; i++) {
		lo += !strcmp(r[i].verdict, "lo_fails");
		hi += !strcmp(r[i].verdict, "hi_passes");
	}
	if (lo)
		printf("capacity: %zu search(es) miss the target even at %s = %g: lower LO\n", lo,
		       co->key, co->lo);
	if (hi)
		printf("capacity: %zu search(es) still meet it at %s = %g: raise HI\n", hi, co->key,
		       co->hi);
}

/* What `kvsim sweep` was asked: the config and its --set lines (a), the
 * grid, the options, and a capacity search's (co, its key in cap_key). */
typedef struct sweep_args {
	cli_cfg_args_t a;
	out_grid_t *g;
	int dry, progress, keep_stale, strict, capacity;
	unsigned jobs, seeds;
	const char *dir;
	char cap_key[256];
	out_capacity_opts_t co;
} sweep_args_t;

/* -1 to go on, else the exit status (help printed, or the error reported). */
static int sweep_parse(int argc, char **argv, sweep_args_t *s, err_t *e)
{
	for (int i = 1; i < argc;) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (cli_is_help(o)) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(o, "--grid") || !strcmp(o, "--zip")) {
			if (!v)
				return bad_usage("missing value after", o);
			if (out_grid_add(s->g, v, o[2] == 'z', e))
				return cli_fail(e);
			i += 2;
		} else if (!strcmp(o, "--seeds") || !strcmp(o, "-j") || !strcmp(o, "--jobs")) {
			unsigned *dst = o[2] == 's' ? &s->seeds : &s->jobs;
			if (!v || parse_uint(v, 100000, dst))
				return bad_usage("expected a positive integer after", o);
			i += 2;
		} else if (!strcmp(o, "-o") || !strcmp(o, "--out")) {
			if (!v)
				return bad_usage("missing directory after", o);
			s->dir = v;
			i += 2;
		} else if (!strcmp(o, "--capacity")) {
			if (!v || parse_capacity(v, s->cap_key, sizeof s->cap_key, &s->co))
				return bad_usage("expected S.K=LO:HI with 0 < LO < HI after --capacity, "
						 "got", v);
			s->capacity = 1;
			i += 2;
		} else if (!strcmp(o, "--capacity-metric")) {
			if (!v || !metric_known(v))
				return bad_usage("--capacity-metric: not a summary metric (see kvsim "
						 "metrics):", v);
			s->co.metric = v;
			i += 2;
		} else if (!strcmp(o, "--capacity-target") || !strcmp(o, "--capacity-tol")) {
			double *dst = o[11] == 't' && o[12] == 'a' ? &s->co.target : &s->co.tol;
			if (parse_real(v, dst) || (dst == &s->co.tol && !(*dst > 0)))
				return bad_usage("expected a number (tolerance > 0) after", o);
			i += 2;
		} else if (!strcmp(o, "--capacity-probes")) {
			if (!v || parse_uint(v, 1000, &s->co.max_probes) || s->co.max_probes < 2)
				return bad_usage("expected an integer in [2, 1000] after", o);
			i += 2;
		} else if (!strcmp(o, "--dry-run")) {
			s->dry = 1;
			i++;
		} else if (!strcmp(o, "--keep-stale")) {
			s->keep_stale = 1;
			i++;
		} else if (!strcmp(o, "--strict")) {
			s->strict = 1;
			i++;
		} else if (!strcmp(o, "--no-trace-cache")) {
			tr_cache_set_enabled(0); /* the forked points inherit it */
			i++;
		} else if (!strcmp(o, "--progress") || !strcmp(o, "--no-progress")) {
			s->progress = o[2] == 'p';
			i++;
		} else {
			int r = cli_cfg_arg(&s->a, argc, argv, &i, e);
			if (r < 0)
				return cli_fail(e);
			if (r == 0)
				return cli_unknown_option(o, usage);
		}
	}
	return -1;
}

/* The base config into *base (the caller frees it), the seeds on the grid,
 * the results directory: -1 to go on, else the exit status. */
static int sweep_config(sweep_args_t *s, cfg_t **base, err_t *e)
{
	/* Under mpirun every rank loads the config: only rank 0 warns. */
	const char *rank = getenv("OMPI_COMM_WORLD_RANK");
	int flags = CLI_DEFAULT_EXPERIMENT | (rank && atoi(rank) > 0 ? CLI_NO_WARNINGS : 0);
	if (out_grid_set_seeds(s->g, s->seeds, e) ||
	    cli_load_config_ex(s->a.path, s->a.sets, s->a.nsets, flags, NULL, base, e))
		return cli_fail(e);
	/* an axis that some points ignore: said once here, not per point */
	if (out_grid_note_inert(s->g, *base, cfg_schema_warnings(cfg_schema(*base))))
		return cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
	sim_out_params_t op;
	if (!s->dir && sim_out_params_fill(*base, &op, e))
		return cli_fail(e);
	if (!s->dir)
		s->dir = op.dir;
	if (s->dry && s->capacity)
		return bad_usage("--dry-run cannot list a capacity search's probes (each "
				 "depends on the last):", "--capacity");
	return -1;
}

/* --capacity: a search per point and seed, its table, the exit status. */
static int sweep_capacity(sweep_args_t *s, const cfg_t *base, out_sweep_opts_t *so, err_t *e)
{
	out_capacity_result_t *r;
	size_t n;
	so->mpi = 0;
	if (out_capacity_run(s->g, base, so, &s->co, &r, &n, e))
		return cli_fail(e);
	print_capacity(&s->co, r, n);
	size_t failed = 0;
	for (size_t i = 0; i < n; i++)
		failed += !strcmp(r[i].verdict, "failed");
	free(r);
	if (failed) {
		fprintf(stderr, "kvsim sweep: %zu capacity search(es) ended on a failed probe; "
				"see: kvsim runs %s --where \"status = 'failed'\" --columns "
				"id,error\n",
			failed, s->dir);
		return 1;
	}
	return 0;
}

/* Every point of the grid, the tally, the exit status. */
static int sweep_grid(const sweep_args_t *s, const cfg_t *base, out_sweep_opts_t *so, err_t *e)
{
	out_sweep_stats_t st;
	int rc = out_sweep_run(s->g, base, so, &st, e);
	if (st.rank != 0)
		return 0; /* MPI workers stay quiet; rank 0 reports */
	if (rc)
		return cli_fail(e);
	printf("sweep: %zu points: %zu run, %zu already done, %zu failed, %zu retried after a "
	       "crash%s; catalog %s/%s\n",
	       st.total, st.done, st.skipped, st.failed, st.retried,
	       st.ranks > 1 ? " (MPI)" : "", s->dir, OUT_CATALOG_FILE);
	print_ledger_note(&st);
	if (st.failed) {
		fprintf(stderr, "kvsim sweep: %zu point(s) failed; see: kvsim runs %s --where "
				"\"status = 'failed'\" --columns id,error\n",
			st.failed, s->dir);
		/* bad input everywhere it failed is the user's to fix: exit 2 */
		return st.failed_input == st.failed ? 2 : 1;
	}
	return 0;
}

int out_sweep_main(int argc, char **argv)
{
	sweep_args_t s = {.progress = -1, .jobs = 1, .seeds = 1,
			  .co = {.metric = "slo_attainment", .target = 0.9, .tol = 0.05,
				 .max_probes = 16}};
	const char **sets = calloc((size_t)argc + 1, sizeof *sets);
	cfg_t *base = NULL;
	err_t e = {0};
	int status;
	s.a.sets = sets;
	s.g = out_grid_new();
	if (!sets || !s.g) {
		status = cli_fail(&(err_t){KS_ENOMEM, "out of memory"});
		goto out;
	}
	if ((status = sweep_parse(argc, argv, &s, &e)) >= 0 ||
	    (status = sweep_config(&s, &base, &e)) >= 0)
		goto out;
	if (s.dry) {
		status = dry_run(s.g, base, s.dir, s.keep_stale, &e) ? cli_fail(&e) : 0;
		goto out;
	}
	out_sweep_opts_t so = {.dir = s.dir, .jobs = s.jobs, .progress = s.progress,
			       .seed_key = "experiment.seed", .run = sweep_sim_run,
			       .run_ctx = &s.strict, .mpi = -1, .keep_stale = s.keep_stale};
	out_hdf5_opts_from_cfg(base, &so.h5);
	status = s.capacity ? sweep_capacity(&s, base, &so, &e) : sweep_grid(&s, base, &so, &e);
out:
	if (base)
		cli_config_free(base);
	out_grid_free(s.g);
	free(sets);
	return status;
}
